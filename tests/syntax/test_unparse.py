"""Printing several trees that share statements, and the fast walks of `nodes`."""
import ast

import gast
import numpy as np
import pytest

from tapeflow.syntax import nodes
from tapeflow.syntax.unparse import unparse, unparse_together


def _statements(src):
    return nodes.parse_gast(src).body


def test_shared_statements_print_as_alone():
    first, second, third = _statements('y = x * 2\nz = f(y, 3)\nreturn z')
    trees = [nodes.function_def('f', ['x'], [first, second]),
             nodes.function_def('g', ['x'], [second, third]),
             nodes.function_def('h', ['x'], [first, second, third])]
    assert unparse_together(trees) == [unparse(t) for t in trees]


def test_a_statement_that_reads_another_precedence_is_printed_again():
    # `a + b` shared by two statements: as the base of `**` it gets parentheses, and
    # a printer that saw that first reads its precedence again in the call's argument.
    total = nodes.binop('a', gast.Add(), 'b')
    power = nodes.assign('y', nodes.binop(total, gast.Pow(), 2))
    call = nodes.assign('z', nodes.call('f', total))
    alone = nodes.function_def('f', [], [nodes.pass_(), call])
    after = nodes.function_def('g', [], [nodes.pass_(), power, call])
    texts = unparse_together([alone, after])
    assert texts == [unparse(alone), unparse(after)]
    assert 'f(a + b)' in texts[0] and 'f((a + b))' in texts[1]


def test_walk_is_ast_walk():
    tree = nodes.parse_gast('def f(x, *a, k=None):\n    y = {1: x, **a}\n'
                            '    return [v for v in y if v] or x[1:2, ::3]')
    assert [type(n) for n in nodes.walk(tree)] == [type(n) for n in ast.walk(tree)]
    assert all(a is b for a, b in zip(nodes.walk(tree), ast.walk(tree)))


def test_load_names_skips_stores_and_nameless_fields():
    stmt = nodes.parse_statement('y[i] = -a + b * f(c, k=d) if e < g else {h: None, **m}')
    assert nodes.load_names(stmt) == {'y', 'i', 'a', 'b', 'f', 'c', 'd', 'e', 'g', 'h', 'm'}


def test_printer_writes_what_gast_writes():
    # tapeflow's own modules: every construct of the language the printer overrides touch
    import pathlib
    import tapeflow
    root = pathlib.Path(tapeflow.__file__).parent
    for path in sorted(root.rglob('*.py')):
        tree = nodes.parse_gast(path.read_text())
        assert unparse(tree) == gast.unparse(tree).strip() + '\n', path


def test_clone_copies_fields_locations_and_annotations():
    from tapeflow.syntax.anno import Key, getanno, setanno
    tree = nodes.parse_gast('def f(x, *a, k=None):\n    y = x[1:2] + g(x, k=k)\n    return y')
    names = [n for n in nodes.walk(tree) if isinstance(n, gast.Name)]
    setanno(names[0], Key.ORIGIN, (3, 4))
    names[1].ctx.marked = True                   # a context that carries something: copied too
    copy = nodes.clone(tree)
    assert gast.dump(copy, include_attributes=True) == gast.dump(tree, include_attributes=True)
    pairs = list(zip(nodes.walk(tree), nodes.walk(copy)))
    assert all(a is not b for a, b in pairs if isinstance(a, gast.AST))
    assert getanno(nodes.walk(copy).__next__(), Key.ORIGIN) is None
    copied = [n for n in nodes.walk(copy) if isinstance(n, gast.Name)]
    assert getanno(copied[0], Key.ORIGIN) == (3, 4)
    assert copied[0].__dict__['_tapeflow_anno'] is not names[0].__dict__['_tapeflow_anno']
    assert getattr(copied[1].ctx, 'marked', None) is None    # as before: fields and locations only


def test_a_negative_number_prints_as_it_binds():
    """A WRONG VALUE before: ANF and the constant folder make negative constants, and
    `-1.0 ** 2` (as gast printed the base of a power) is -1.0, not 1.0."""
    tree = nodes.parse_gast('y = a ** 2 + b.real + x * c')
    value = tree.body[0].value
    value.left.left.left = nodes.const(-1.0)         # the base of a power
    value.left.right.value = nodes.const(-3)         # an attribute's object
    value.right.right = nodes.const(-0.5)            # an operand that needs nothing
    text = unparse(tree)
    assert text == 'y = (-1.0) ** 2 + (-3) .real + x * -0.5\n'
    assert eval(text.split('= ')[1], {'x': 2.0}) == 1.0 + -3 + -1.0


def squares_a_negative_literal(x):
    return (-1.0) ** 2 * x


def divides_by_folded_constants(x):
    x /= (1.0 + (2.0 - 3.0) ** 2)
    return np.sum(x * x)


def test_negative_literals_keep_their_values_in_generated_code():
    import tapeflow as tf
    assert tf.value_and_grad(squares_a_negative_literal)(2.0) == (2.0, 1.0)
    x = np.array([1.0, 2.0])
    value, grad = tf.value_and_grad(divides_by_folded_constants)(x.copy())
    np.testing.assert_allclose(value, np.sum((x / 2.0) ** 2), rtol=1e-15)
    np.testing.assert_allclose(grad, x / 2.0, rtol=1e-15)


def with_a_nested_def(x, d):
    def scaled(v):
        return v * 2.0
    y = scaled(x)
    return y / d


def test_a_nested_def_printed_after_a_blank_line_keeps_the_line_map():
    """The printer puts a blank line before a nested def: the statements after it are still
    told at their lines (an error in generated code names the user's line)."""
    import tapeflow as tf
    from tapeflow.syntax.unparse import line_origins
    with pytest.raises(ZeroDivisionError) as caught:
        tf.grad(with_a_nested_def)(1.0, 0.0)
    line = with_a_nested_def.__code__.co_firstlineno + 4          # `return y / d`
    assert f'{__file__}:{line}:' in str(caught.value)
    text = 'def f(x):\n    y = x\n\n    def g(v):\n        return v\n    return y\n'
    assert line_origins(text, None, 1, [(1, 0), (2, 4), (4, 4), (5, 8), (6, 4)]) == {
        1: (1, 0), 2: (2, 4), 4: (4, 4), 5: (5, 8), 6: (6, 4)}
