"""`flatten(value) -> (vector, unflatten)` for nests of lists, tuples and dicts of arrays,
dicts in sorted key order, as autograd's; `unflatten` is plain NumPy slicing, which
tapeflow differentiates where a differentiated function calls it."""
import numpy as np


def _leaves(value):
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _leaves(value[key])]
    return [np.ravel(value)]


def _rebuild(template, vector, start):
    if isinstance(template, (list, tuple)):
        items = []
        for item in template:
            value, start = _rebuild(item, vector, start)
            items.append(value)
        return type(template)(items), start
    if isinstance(template, dict):
        built = {}
        for key in sorted(template):
            built[key], start = _rebuild(template[key], vector, start)
        return built, start
    shape = np.shape(template)
    size = int(np.prod(shape))
    piece = vector[start:start + size]
    return (np.reshape(piece, shape) if shape else piece[0]), start + size


def flatten(value):
    leaves = _leaves(value)
    vector = np.concatenate(leaves) if leaves else np.array([])

    def unflatten(vector):
        return _rebuild(value, vector, 0)[0]
    return vector, unflatten


def flatten_func(func, example):
    start, unflatten = flatten(example)

    def flat_func(vector, *args):
        return flatten(func(unflatten(vector), *args))[0]
    return flat_func, unflatten, start
