"""Python stand-ins for the library functions that only rearrange or combine what they are
given: `functools.reduce` and the iterator builders of `itertools`.

Each is written as a user would write it, and compiled from this source in its place
(`sugar.folding`), so its derivative is that of the calls it makes: `reduce(np.multiply,
xs)` is a loop of products. The lazy ones are generator functions: tapeflow reads a
generator as the list it yields, and refuses where the code reading it would see it half
way (`sugar.generators`), as for the user's own. `product`, `combinations` and
`permutations` take their pools whole when called, as itertools does.
"""
from __future__ import annotations

import functools
import itertools

__all__ = ['standin']

_NOTHING = object()


def reduce(function, iterable, initial=_NOTHING):
    items = list(iterable)
    if initial is _NOTHING:
        if not items:
            raise TypeError('reduce() of empty iterable with no initial value')
        value, rest = items[0], items[1:]
    else:
        value, rest = initial, items
    for item in rest:
        value = function(value, item)
    return value


def accumulate(iterable, func=None, *, initial=None):
    total = initial
    started = initial is not None
    if started:
        yield total
    for item in iterable:
        if not started:
            total, started = item, True
        elif func is None:
            total = total + item
        else:
            total = func(total, item)
        yield total


def chain(*iterables):
    for iterable in iterables:
        yield from iterable


def chain_from_iterable(iterables):
    for iterable in iterables:
        yield from iterable


def product(*iterables, repeat=1):
    pools = [tuple(pool) for _ in range(repeat) for pool in iterables]
    for chosen in _index_product([len(pool) for pool in pools]):
        yield tuple(pools[j][i] for j, i in enumerate(chosen))


def _index_product(lengths):
    return list(itertools.product(*[range(n) for n in lengths]))


def combinations(iterable, r):
    pool = tuple(iterable)
    for chosen in _index_tuples(len(pool), r, False, False):
        yield tuple(pool[i] for i in chosen)


def combinations_with_replacement(iterable, r):
    pool = tuple(iterable)
    for chosen in _index_tuples(len(pool), r, False, True):
        yield tuple(pool[i] for i in chosen)


def permutations(iterable, r=None):
    pool = tuple(iterable)
    for chosen in _index_tuples(len(pool), len(pool) if r is None else r, True, False):
        yield tuple(pool[i] for i in chosen)


def _index_tuples(n, r, ordered, repeated):
    """The positions itertools picks, in its order (integers only: no derivative; this
    module's calls of itertools are its own, never stood in for)."""
    if ordered:
        return list(itertools.permutations(range(n), r))
    if repeated:
        return list(itertools.combinations_with_replacement(range(n), r))
    return list(itertools.combinations(range(n), r))


def islice(iterable, *bounds):
    window = slice(*bounds)
    start, step = window.start or 0, window.step or 1
    for k, item in enumerate(iterable):
        if window.stop is not None and k >= window.stop:
            break
        if k >= start and (k - start) % step == 0:
            yield item


def pairwise(iterable):
    items = list(iterable)
    for k in range(len(items) - 1):
        yield items[k], items[k + 1]


def zip_longest(*iterables, fillvalue=None):
    lists = [list(iterable) for iterable in iterables]
    longest = max((len(items) for items in lists), default=0)
    for k in range(longest):
        yield tuple(items[k] if k < len(items) else fillvalue for items in lists)


def starmap(function, iterable):
    for args in iterable:
        yield function(*args)


def repeat(value, times):
    for _ in range(times):
        yield value


def compress(data, selectors):
    for item, keep in zip(data, selectors):
        if keep:
            yield item


def first(iterable, default=_NOTHING):
    """`next(iter(iterable))`, `next(iter(iterable), default)`."""
    for item in iterable:
        return item
    if default is _NOTHING:
        raise StopIteration
    return default


_STANDINS = {functools.reduce: reduce, itertools.accumulate: accumulate,
             itertools.chain: chain, itertools.chain.from_iterable: chain_from_iterable,
             itertools.product: product, itertools.combinations: combinations,
             itertools.combinations_with_replacement: combinations_with_replacement,
             itertools.permutations: permutations, itertools.islice: islice,
             itertools.zip_longest: zip_longest, itertools.starmap: starmap,
             itertools.repeat: repeat, itertools.compress: compress}
if hasattr(itertools, 'pairwise'):
    _STANDINS[itertools.pairwise] = pairwise
for _original, _made in _STANDINS.items():
    _made.__tapeflow_standin__ = True
    _made.__tapeflow_shown__ = f'{_original.__module__ or "itertools"}.{_original.__qualname__}'
first.__tapeflow_standin__ = True
first.__tapeflow_shown__ = 'next(iter(...))'


def standin(fn):
    """The Python stand-in compiled in place of `fn`, or None."""
    try:
        return _STANDINS.get(fn)
    except TypeError:           # an unhashable callable
        return None
