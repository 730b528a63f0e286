"""The numbers of `tapeflow check`: central differences, relative errors, and how values print.

`finite_differences` differentiates the user's function numerically (float64,
along each element of each float leaf of one argument); `relative_error`
compares it with tapeflow's gradient; `short` and `show_value` print values as
Python writes them; `located` names the user's line behind an error raised
inside generated code (`export.user_line_of`).
"""
from __future__ import annotations

import linecache

import numpy as np

__all__ = ['CheckFailed', 'checkable', 'kind_of', 'check_structure', 'finite_differences',
           'relative_error', 'short', 'show_value', 'located']


class CheckFailed(Exception):
    """The gradient could not be evaluated: printed, exit status 1."""


def checkable(value):
    """Whether `value` holds a real float leaf (ints, strings... inside it are left alone)."""
    from tapeflow.checking import has_float_leaf
    try:
        return has_float_leaf(value)
    except TypeError:                                # a complex leaf
        return False


def kind_of(value):
    if isinstance(value, (np.ndarray, np.generic)):
        return f'an array of {value.dtype}'
    return f'{type(value).__name__} {value!r}'


def check_structure(arg, gradient, label):
    from tapeflow.checking import mismatch_message
    message = mismatch_message(arg, gradient, f'{label}: the gradient')
    if message is not None:
        raise CheckFailed(message)


def finite_differences(fn, values, i, eps):
    """Central differences of `fn` along each element of each float leaf of argument `i`
    (float64), in the argument's structure; None at the leaves left alone."""
    from tapeflow.checking import float_leaves, replace_leaf
    x = values[i]
    leaves = float_leaves(x)
    numeric = _none_leaves(x)
    for path, leaf in leaves:
        numeric = replace_leaf(numeric, path, _leaf_differences(fn, values, i, path, leaf, eps))
    return numeric


def _none_leaves(tree):
    if isinstance(tree, dict):
        return {k: _none_leaves(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        parts = [_none_leaves(v) for v in tree]
        return type(tree)(*parts) if hasattr(tree, '_fields') else type(tree)(parts)
    return None


def _leaf_differences(fn, values, i, path, x, eps):
    from tapeflow.checking import replace_leaf

    def at(point):
        args = list(values)
        args[i] = replace_leaf(values[i], path, point)
        return float(np.asarray(fn(*args), dtype=np.float64))

    if isinstance(x, float):
        h = eps * max(1.0, abs(x))
        return (at(x + h) - at(x - h)) / (2 * h)
    base = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        h = eps * max(1.0, abs(base[index]))
        plus, minus = base.copy(), base.copy()
        plus[index] += h
        minus[index] -= h
        cast = (lambda a: a.astype(x.dtype)) if isinstance(x, np.ndarray) else \
            (lambda a: x.dtype.type(a))
        out[index] = (at(cast(plus)) - at(cast(minus))) / (2 * h)
    return out if isinstance(x, np.ndarray) else float(out)


def relative_error(analytic, numeric, arg):
    """|analytic - numeric| / max(|analytic|, |numeric|), norms over the float leaves of `arg`."""
    from tapeflow.checking import float_leaves, leaf_at
    paths = [path for path, _ in float_leaves(arg)]
    a = np.concatenate([np.ravel(np.asarray(leaf_at(analytic, p), dtype=np.float64)) for p in paths])
    n = np.concatenate([np.ravel(np.asarray(leaf_at(numeric, p), dtype=np.float64)) for p in paths])
    scale = max(np.linalg.norm(a), np.linalg.norm(n))
    if scale == 0.0:
        return 0.0
    return float(np.linalg.norm(a - n) / max(scale, 1e-300))


def short(value):
    if isinstance(value, np.ndarray):
        if value.size > 6:
            return f'array(shape={value.shape}, dtype={value.dtype})'
        return np.array2string(value, separator=', ', precision=6)
    if isinstance(value, (float, np.floating)):
        return _number(value, 10)
    if isinstance(value, (list, tuple, dict)):
        return _structure(value, short)
    return repr(value)


def show_value(value, indent):
    if isinstance(value, np.ndarray):
        text = np.array2string(value, separator=', ', precision=8, max_line_width=79 - indent)
        return text.replace('\n', '\n' + ' ' * indent)
    if isinstance(value, (list, tuple, dict)):
        return _structure(value, lambda v: show_value(v, indent))
    return _number(value, 12) if isinstance(value, (float, np.floating)) else repr(value)


def _structure(value, show):
    """A list, tuple or dict as Python writes it, its items written by `show`
    (an array inside as `array([...])`, not to be read as a list)."""
    def item(v):
        return f'array({show(v)})' if isinstance(v, np.ndarray) else show(v)

    if isinstance(value, dict):
        return '{' + ', '.join(f'{k!r}: {item(v)}' for k, v in value.items()) + '}'
    items = ', '.join(item(v) for v in value)
    if isinstance(value, list):
        return f'[{items}]'
    if hasattr(value, '_fields'):
        return f'{type(value).__name__}({items})'
    return f'({items},)' if len(value) == 1 else f'({items})'


def _number(value, digits):
    """A float as Python prints it, rounded to `digits` significant digits: 2.0, 11.9999999."""
    text = f'{float(value):.{digits}g}'
    return text if any(c in text for c in '.eni') else text + '.0'


def located(error, fn, positions):
    """`error` raised inside generated code, with the user's line it comes from."""
    message = f'{type(error).__name__}: {error}'
    try:
        from tapeflow import export
        where = export.user_line_of(error.__traceback__, fn, positions)
    except Exception:                                # noqa: BLE001  (best effort)
        where = None
    if where:
        filename, line = where
        text = linecache.getline(filename, line).strip()
        return f'{message}\n  at {filename}:{line}: {text}'
    return message
