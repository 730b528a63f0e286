"""Streams of choices the program generator draws from.

The generator asks only for integers in a closed range (`integer(lo, hi)`);
everything else (a pick from a list, a weighted pick, a coin) is built on it,
and in every case the choice 0 is the simplest one: the first entry of a
table, "no" for a coin, the fewest statements. So a stream of zeros is the
smallest program, and shrinking a stream towards zeros (Hypothesis does it
for the pytest run, `shrink` here for the command line) shrinks the program.
"""
from __future__ import annotations

import random


class Choices:
    """Derived choices on top of `integer`; subclasses say where integers come from.

    Streams that keep a record also note the span of choices each statement
    used (`spans`), so a shrinker can delete one statement whole.
    """

    spans: list = []

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def position(self):
        """How many choices were made so far (None where no record is kept)."""
        return None

    def note_span(self, start):
        """The choices from `start` to here made one statement."""

    def chance(self, p: float) -> bool:
        """True with probability `p` (to 5%); the choice 0 is False.

        (Twenty outcomes, not a thousand: Hypothesis draws from wide ranges with
        a strong bias to small values, which would make every coin False.)
        """
        return self.integer(0, 19) >= round(20 * (1.0 - p))

    def pick(self, items):
        return items[self.integer(0, len(items) - 1)]

    def weighted(self, table):
        """An item of `table` ((item, weight) pairs, simplest first), by weight."""
        table = [(item, weight) for item, weight in table if weight > 0]
        n = self.integer(0, sum(weight for _, weight in table) - 1)
        for item, weight in table:
            n -= weight
            if n < 0:
                return item
        raise AssertionError('unreachable')

    def sample(self, items, k: int):
        """`k` distinct items of `items`, in their order in `items`."""
        pool = list(items)
        chosen = [pool.pop(self.integer(0, len(pool) - 1)) for _ in range(min(k, len(pool)))]
        return [item for item in items if item in chosen]


class Recording(Choices):
    """A stream that keeps the record of its choices (offsets from each range's low end)."""

    def __init__(self):
        self.record: list[int] = []
        self.spans: list[tuple] = []

    def position(self):
        return len(self.record)

    def note_span(self, start):
        self.spans.append((start, len(self.record)))


class RandomChoices(Recording):
    """Integers from a seeded `random.Random`."""

    def __init__(self, seed):
        super().__init__()
        self.rng = random.Random(seed)

    def integer(self, lo, hi):
        value = self.rng.randint(lo, hi)
        self.record.append(value - lo)
        return value


class ReplayChoices(Recording):
    """Integers replayed from a record of offsets, clamped to each range; 0 past its end."""

    def __init__(self, record):
        super().__init__()
        self.source = list(record)

    def integer(self, lo, hi):
        position = len(self.record)
        offset = self.source[position] if position < len(self.source) else 0
        offset = min(max(offset, 0), hi - lo)
        self.record.append(offset)
        return lo + offset


class HypothesisChoices(Choices):
    """Integers drawn by Hypothesis, which can then shrink the program they make."""

    def __init__(self, draw):
        from hypothesis import strategies as st
        self.draw, self.integers = draw, st.integers

    def integer(self, lo, hi):
        return self.draw(self.integers(lo, hi))
