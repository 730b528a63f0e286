"""Desugar, named ops: `tf.reduce_sum(x, axis=0)` is `np.sum(x, axis=0)`,
`np.r_[a, b]` and `np.c_[a, b]` are the concatenations they amount to.

`LowerNamedOps(source).visit(node)`; an argument the NumPy function has no
place for is a located error. Runs after `syntax.resolve`.
"""
from __future__ import annotations

import numpy as np

from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno


class LowerNamedOps(nodes.Transformer):
    """`tf.reduce_sum(x, axis=0)` is `np.sum(x, axis=0)` in compiled code.

    An op that says which NumPy function it means (`__tapeflow_numpy__`) is
    called as that function, with its parameters mapped; an argument the
    NumPy function has no place for is a located error.
    """

    def __init__(self, source):
        self.source = source

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = getanno(node.func, Key.RESOLVED)
        spec = getattr(fn, '__tapeflow_numpy__', None)
        if spec is None:
            return node
        numpy_fn, positional, renames, fixed = spec
        if len(node.args) > len(positional):
            raise self.source.error(node, f'{fn.__name__}() takes {len(positional)} positional '
                                          f'arguments in compiled code')
        keywords = []
        for kw in node.keywords:
            if kw.arg == 'name':
                continue
            if kw.arg in positional:
                if positional.index(kw.arg) != len(node.args):
                    raise self.source.error(node, f'pass {kw.arg} of {fn.__name__}() by position')
                node.args.append(kw.value)
                continue
            if kw.arg in fixed or kw.arg not in renames:
                raise self.source.error(kw.value, f'{fn.__name__}(..., {kw.arg}=...) is not '
                                                  f'supported in compiled code')
            keywords.append(nodes.keyword(renames[kw.arg], kw.value))
        return nodes.copy_location(nodes.call(_numpy(numpy_fn), *node.args, keywords=keywords),
                                   node)

    def visit_Subscript(self, node):
        """`np.r_[a, b]` and `np.c_[a, b]` are concatenations: written as the calls
        they amount to, they are differentiated like any call (read as an index,
        they were constants: a zero gradient)."""
        self.generic_visit(node)
        maker = getanno(node.value, Key.RESOLVED)
        if maker is not np.r_ and maker is not np.c_:
            return node
        which = 'np.r_' if maker is np.r_ else 'np.c_'
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                raise self.source.error(item, f'{which}[...] with a string directive is not '
                                              f'supported; write np.concatenate or np.stack')
            if isinstance(item, ast.Starred):
                raise self.source.error(item, f'{which}[*...] is not supported; write '
                                              f'np.concatenate')
        items = [self._range_of(item, which) if isinstance(item, ast.Slice) else item
                 for item in items]
        if maker is np.r_:
            # r_: every item at least 1-d, joined along the first axis
            parts = [nodes.call(_numpy(np.atleast_1d), item) for item in items]
            axis = 0
        else:
            # c_: a 1-d item is a column, a scalar a 1x1 array, other items stay;
            # transpose(atleast_2d(transpose(a))) is exactly that; joined along the last axis
            parts = [nodes.call(_numpy(np.transpose),
                                nodes.call(_numpy(np.atleast_2d),
                                           nodes.call(_numpy(np.transpose), item)))
                     for item in items]
            axis = -1
        joined = nodes.call(_numpy(np.concatenate), nodes.list_(*parts),
                            keywords=[('axis', nodes.const(axis))])
        return nodes.copy_location(joined, node)

    def _range_of(self, item, which):
        """`start:stop:step` in np.r_/np.c_: np.arange(start, stop, step), or with an
        imaginary step `nj`, np.linspace(start, stop, n) (NumPy's reading of it)."""
        start = item.lower if item.lower is not None else nodes.const(0)
        stop = item.upper
        if stop is None:
            raise self.source.error(item, f'{which}[start:stop] needs its stop')
        step = item.step
        if step is None:
            return nodes.call(_numpy(np.arange), start, stop)
        number = _constant_number(step)
        if number is None:
            raise self.source.error(step, f'the step of a slice in {which}[...] must be a '
                                          f'number written out (1, 0.5, 5j); write np.arange '
                                          f'or np.linspace')
        if isinstance(number, complex):
            return nodes.call(_numpy(np.linspace), start, stop, nodes.const(int(abs(number))))
        return nodes.call(_numpy(np.arange), start, stop, step)


def _constant_number(node):
    """The number a constant expression writes (`5j`, `-0.5`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _constant_number(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)) \
            and not isinstance(node.value, bool):
        return node.value
    return None


def _numpy(fn):
    """`np.<fn>`, resolved."""
    np_ref = nodes.name('np')
    setanno(np_ref, Key.RESOLVED, np)
    func = nodes.attribute(np_ref, fn.__name__)
    setanno(func, Key.RESOLVED, fn)
    return func
