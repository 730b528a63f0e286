"""The `tapeflow` command: show, export and check the generated gradient of a function.

    tapeflow show FILE.py:FUNC [--wrt NAME ...] [--mode reverse|forward]
                               [--no-optimize] [--passes] [--lines]
    tapeflow export FILE.py:FUNC [-o OUT.py] [--wrt NAME ...]
    tapeflow check FILE.py:FUNC --args '2.0, 6' [--wrt NAME ...]

Exit status: 0 success, 1 a check that fails (or a gradient that raises),
2 bad input: a missing file or function, a syntax error, a construct tapeflow
does not differentiate (reported as `file:line:col: reason`), a `--wrt` name
that is not a parameter. Bad input is one line on stderr, never a traceback.

FILE.py is executed as a module (not as `__main__`, so its main guard does
not run) with its directory first on `sys.path`.
"""
from __future__ import annotations

import argparse
import inspect
import itertools
import math
import os
import re
import sys
import traceback
import types

import numpy as np

from tapeflow.check_numbers import (CheckFailed, check_structure, checkable, finite_differences,
                                    kind_of, located, relative_error, short, show_value)

__all__ = ['main']

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input: printed as one line, exit status 2."""


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, 'run', None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from tapeflow.rules.registry import MissingRule
    from tapeflow.syntax.errors import TapeflowError
    try:
        return args.run(args)
    except UsageError as e:
        return _fail(str(e))
    except (TapeflowError, MissingRule) as e:   # unsupported construct, missing rule, export
        return _fail(str(e))
    except CheckFailed as e:
        print(f'tapeflow: error: {e}', file=sys.stderr)
        return EXIT_FAILED


def _fail(message):
    print(f'tapeflow: error: {message}', file=sys.stderr)
    return EXIT_USAGE


# ------------------------------------------------------------------ arguments

def _parser():
    parser = argparse.ArgumentParser(
        prog='tapeflow',
        description='Show, export and check the gradient code tapeflow generates for a '
                    'Python function.',
        epilog='Exit status: 0 success, 1 check failed, 2 bad input.')
    sub = parser.add_subparsers(title='commands', metavar='COMMAND')

    def target_arguments(p):
        p.add_argument('target', metavar='FILE.py:FUNC', help='the function, in its file')
        p.add_argument('--wrt', metavar='NAME', nargs='+', action='extend', default=None,
                       help='parameters to differentiate with respect to (default: the first)')

    show = sub.add_parser('show', help='print the generated gradient code',
                          description='Print the generated code of the gradient of FUNC: the '
                                      'combined value-and-gradient function, then the forward '
                                      'and backward functions of every user function it calls.')
    target_arguments(show)
    show.add_argument('--mode', choices=('reverse', 'forward'), default='reverse',
                      help='reverse (gradient) or forward (tangent) mode; default reverse')
    show.add_argument('--no-optimize', dest='optimize', action='store_false',
                      help='skip the optimizer (dead adjoints, unneeded push/pop pairs stay)')
    show.add_argument('--passes', action='store_true',
                      help='print the function after each pass of the pipeline')
    show.add_argument('--lines', action='store_true',
                      help="end each generated statement with a comment naming the user's line")
    show.add_argument('--compile', choices=('python', 'numba'), default='python',
                      help='numba: the combined function as Numba compiles it (docs/native.md)')
    show.add_argument('--color', choices=('auto', 'always', 'never'), default='auto',
                      help='highlight with Pygments (auto: when stdout is a terminal)')
    show.set_defaults(run=_show)

    export = sub.add_parser('export', help='write a standalone gradient module',
                            description='Write a module computing the value and gradient of '
                                        'FUNC with NumPy alone (it does not import tapeflow).')
    target_arguments(export)
    export.add_argument('-o', '--output', metavar='OUT.py',
                        help="the module to write (default grad_FUNC.py; '-' for stdout)")
    export.add_argument('--no-optimize', dest='optimize', action='store_false',
                        help='skip the optimizer')
    export.set_defaults(run=_export)

    check = sub.add_parser('check', help='compare the gradient with finite differences',
                           description='Evaluate the gradient of FUNC at the given arguments '
                                       'and compare it with central finite differences.')
    target_arguments(check)
    check.add_argument('--args', required=True, metavar='EXPR',
                       help="the arguments, as Python: '2.0, 6' or 'np.ones(3), 0.5' (evaluated "
                            'with np, math and the globals of FILE.py)')
    check.add_argument('--eps', type=float, default=1e-6,
                       help='relative step of the finite differences (default 1e-6)')
    check.add_argument('--rtol', type=float, default=1e-5,
                       help='largest relative error that passes (default 1e-5)')
    check.set_defaults(run=_check)
    return parser


# ------------------------------------------------------------------ the commands

def _show(args):
    import tapeflow
    from tapeflow import export
    fn, argnums = _target(args)
    if args.mode == 'forward':
        try:
            tapeflow.source(fn, argnums, mode='forward', optimize=args.optimize)
        except NotImplementedError:
            raise UsageError('forward mode is not available yet: '
                             "tapeflow.source(f, mode='forward') is not implemented") from None
    if args.passes:
        wrt = (argnums,) if isinstance(argnums, int) else argnums
        unit = export.generate(fn, wrt, args.optimize, record_passes=True, mode=args.mode)
        text = '\n'.join(f'# ---- {i}. {name} '.ljust(79, '-') + '\n' + code
                         for i, (name, code) in enumerate(unit.compiled.passes, 1))
    elif args.lines:
        text = export.annotated_source(fn, argnums, args.optimize, mode=args.mode)
    else:
        text = tapeflow.source(fn, argnums, mode=args.mode, optimize=args.optimize,
                               compile=args.compile)
    _print_code(text, args.color)
    return EXIT_OK


def _export(args):
    from tapeflow import export
    from tapeflow.callables import python_function_of
    fn, argnums = _target(args)
    text = export.export_source(fn, argnums, args.optimize)
    name = python_function_of(fn).__name__      # what the module names (grad(f): grad_f)
    output = args.output or f'grad_{name}.py'
    if output == '-':
        sys.stdout.write(text)
        return EXIT_OK
    try:
        with open(output, 'w', encoding='utf-8') as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f'cannot write {output}: {e.strerror}') from None
    print(f'wrote {output}: d{name}(...) returns (value, gradient), '
          f'grad_{name}(...) the gradient')
    return EXIT_OK


def _check(args):
    import tapeflow
    fn, argnums = _target(args)
    values = _evaluate_args(args.args, fn)
    positions = (argnums,) if isinstance(argnums, int) else argnums
    params = _parameters(fn)
    # a parameter --args leaves out takes its default, --wrt naming it or not
    given = list(_signature(fn).parameters.values())[len(values):len(params)]
    values += [p.default for p in given]
    for i in positions:
        if not checkable(values[i]):
            raise UsageError(f'--args: {params[i]} is {kind_of(values[i])}; check differentiates '
                             f'with respect to floats and float arrays, and lists, tuples and '
                             f'dicts of them (write 2.0, not 2)')
    try:
        value, grads = tapeflow.value_and_grad(fn, argnums)(*values)
    except Exception as e:                           # noqa: BLE001  (the user's code raised)
        from tapeflow.syntax.sourcemap import UserCodeError
        if isinstance(e, UserCodeError) and e.__cause__ is not None:
            e = e.__cause__                          # told at the user's line: as raised
        elif isinstance(e, (tapeflow.TapeflowError, UsageError, tapeflow.MissingRule)):
            raise
        raise CheckFailed(located(e, fn, positions)) from None
    if isinstance(argnums, int):
        grads = (grads,)
    shown_args = ', '.join(short(v) for v in values)
    print(f'{fn.__name__}({shown_args}) = {short(value)}')
    worst = 0.0
    for i, g in zip(positions, grads):
        check_structure(values[i], g, f'd{fn.__name__}/d{params[i]}')
        numeric = finite_differences(fn, values, i, args.eps)
        error = relative_error(g, numeric, values[i])
        worst = max(worst, error)
        label = f'd{fn.__name__}/d{params[i]}'
        pad = ' ' * len(label)
        print(f'{label}  tapeflow: {show_value(g, len(label) + 12)}')
        print(f'{pad}  numeric:  {show_value(numeric, len(label) + 12)}')
        print(f'{pad}  relative error: {error:.1e}')
    if worst <= args.rtol:
        print(f'ok: relative error {worst:.1e} <= {args.rtol:g}')
        return EXIT_OK
    print(f'FAILED: relative error {worst:.1e} > {args.rtol:g}')
    return EXIT_FAILED


# ------------------------------------------------------------------ loading FILE.py:FUNC

def _target(args):
    """The function named by `args.target`, and the argnums `--wrt` names."""
    fn = _load_function(args.target)
    params = _parameters(fn)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in _signature(fn).parameters.values()):
        _fence(fn)                  # `def wrapper(*args, **kwargs)`: the located rejection
    if not params:
        raise UsageError(f'{fn.__name__}() takes no parameters: there is nothing to differentiate')
    if not args.wrt:
        return fn, 0
    positions = []
    for name in args.wrt:
        if name not in params:
            raise UsageError(f'--wrt {name}: {fn.__name__}() has no parameter {name!r} '
                             f'(its parameters: {", ".join(params)})')
        if params.index(name) in positions:
            raise UsageError(f'--wrt {name}: named twice')
        positions.append(params.index(name))
    return fn, positions[0] if len(positions) == 1 else tuple(positions)


def _fence(fn):
    """Raise the compiler's located error if the function compiled for `fn` is outside the subset."""
    from tapeflow.callables import python_function_of
    from tapeflow.syntax import fence, parse
    fence.check(parse.parse_function(python_function_of(fn)))


def _parameters(fn):
    return [p.name for p in _signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _signature(fn):
    """The signature of the function compiled for `fn` (a wrapper's own, not the wrapped one's)."""
    from tapeflow.callables import python_function_of
    try:
        fn = python_function_of(fn)
    except TypeError as e:                           # not a Python function
        raise UsageError(str(e)) from None
    try:
        return inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        raise UsageError(f'{fn!r} has no signature tapeflow can read') from None


def _load_function(target):
    path, sep, name = target.rpartition(':')
    if not sep or not path or not name:
        raise UsageError(f'expected FILE.py:FUNC, got {target!r}')
    module = _load_module(path)
    obj = module
    for part in name.split('.'):
        obj = getattr(obj, part, None)
        if obj is None:
            defined = sorted(n for n, v in vars(module).items()
                             if isinstance(v, types.FunctionType) and v.__module__ == module.__name__)
            hint = f' (it defines: {", ".join(defined)})' if defined else ''
            raise UsageError(f'{path} has no function {name!r}{hint}')
    if not callable(obj) or isinstance(obj, type):
        raise UsageError(f'{name} in {path} is not a function')
    return obj


_counter = itertools.count()


def _load_module(path):
    if not os.path.exists(path):
        raise UsageError(f'{path}: no such file')
    if os.path.isdir(path):
        raise UsageError(f'{path} is a directory, not a Python file')
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f'cannot read {path}: {e}') from None
    try:
        code = compile(text, path, 'exec')
    except SyntaxError as e:
        raise UsageError(f'{path}:{e.lineno}:{e.offset or 0}: syntax error: {e.msg}') from None
    stem = re.sub(r'\W', '_', os.path.splitext(os.path.basename(path))[0])
    module = types.ModuleType(f'_tapeflow_cli_{stem}_{next(_counter)}')
    module.__file__ = path
    sys.modules[module.__name__] = module
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    try:
        exec(code, module.__dict__)
    except Exception as e:                          # noqa: BLE001  (the user's module failed)
        line = _innermost_line(e.__traceback__, path)
        where = f'{path}:{line}' if line else path
        raise UsageError(f'{where}: running the file raised {type(e).__name__}: {e}') from None
    return module


def _innermost_line(tb, path):
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == path:
            line = lineno
    return line


# ------------------------------------------------------------------ check: arguments and numbers

def _evaluate_args(text, fn):
    namespace = dict(getattr(inspect.getmodule(fn), '__dict__', {}) or fn.__globals__)
    namespace.update(np=np, numpy=np, math=math)
    try:
        values = eval(f'({text},)', namespace)      # noqa: S307  (the user's own expression)
    except SyntaxError as e:
        raise UsageError(f'--args {text!r}: syntax error: {e.msg}') from None
    except Exception as e:                           # noqa: BLE001
        raise UsageError(f'--args {text!r}: {type(e).__name__}: {e}') from None
    params = _parameters(fn)
    required = [p for p in _signature(fn).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not len(required) <= len(values) <= len(params):
        expected = str(len(params)) if len(required) == len(params) else \
            f'{len(required)} to {len(params)}'
        raise UsageError(f'--args: {fn.__name__}({", ".join(params)}) takes {expected} '
                         f'arguments, got {len(values)}')
    return list(values)


# ------------------------------------------------------------------ output

def _print_code(text, color):
    if color == 'always' or (color == 'auto' and sys.stdout.isatty()):
        try:
            from pygments import highlight
            from pygments.formatters import TerminalFormatter
            from pygments.lexers import PythonLexer
        except ImportError:
            pass
        else:
            text = highlight(text, PythonLexer(), TerminalFormatter())
    sys.stdout.write(text if text.endswith('\n') else text + '\n')


if __name__ == '__main__':
    sys.exit(main())
