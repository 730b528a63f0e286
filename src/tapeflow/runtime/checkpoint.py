"""Checkpointed loops: the schedule generated code follows to bound the tape.

A loop differentiated with checkpointing (`tapeflow.grad(f, checkpoint=...)`)
runs in its forward sweep without a tape and keeps snapshots of the loop's
variables at some trips. Its reverse sweep asks `Checkpoints.backward()` for
actions, each on a range of trips `[a, b)`:

    LOAD a     set the loop's variables to the snapshot taken before trip a
    ADVANCE    run trips a..b again without a tape (the state is then that of b)
    SAVE a     snapshot the variables (before trip a)
    TAPE       run trips a..b with the tape, then their adjoints backwards

so at most one segment's tape exists at a time. Snapshots hold references:
the compiler checkpoints only loops that write no memory in place.

Random numbers: a loop that draws them (`np.random.rand()`, a Generator's
`normal()`, a function it calls that does) is given its `Sources`
(`runtime.randomness`): each snapshot keeps their state too, each LOAD sets
it back, so that a rerun draws what the forward sweep drew; when the reverse
sweep is done, the state is put back as the forward sweep left it (as the
plain call leaves it).

Schedules. Trips are grouped in chunks of about sqrt(n) (the tape of one
chunk is the memory a reverse step needs). With `slots` snapshots at most
(an int), chunks are reversed by binomial checkpointing (Griewank's revolve):
with s snapshots and r recomputations of each chunk, C(s + r, s) chunks can
be reversed, so memory grows like s and time like r. `checkpoint=True` keeps
one snapshot per chunk: each trip runs once more than without checkpointing,
and memory is about 2 sqrt(n) values instead of n. A `while` loop, whose trip
count is unknown until it ends, snapshots every K trips and doubles K (keeping
every other snapshot) whenever it holds more than 2K snapshots (or more than
`slots`), so K ends near sqrt(n).
"""
from __future__ import annotations

import math

LOAD, ADVANCE, SAVE, TAPE = 0, 1, 2, 3


def _beta(s, r):
    """How many chunks s snapshots reverse with each chunk recomputed at most r times."""
    return math.comb(s + r, s)


class Checkpoints:
    """The snapshots of one run of one checkpointed loop, and its schedule."""
    __slots__ = ('trips', 'slots', 'chunk', 'snapshots', 'lengths', 'spacing', 'counted',
                 'draws', 'randoms', 'replaying')

    def __init__(self, trips, policy, draws=None):
        slots = None if policy is True else policy      # (checked by the API: True or k >= 1)
        self.trips = trips                    # None for a while loop, until `finish`
        self.counted = trips is None          # trips counted as they run (a while loop)
        self.slots = slots
        self.snapshots = {}                   # trip -> the loop's variables before it
        self.lengths = {}                     # trip -> the lengths of the lists it appends to
        self.spacing = 1                      # while loops: trips between snapshots
        self.chunk = math.isqrt(trips - 1) + 1 if trips else 1
        self.draws = draws                    # the random sources the loop draws from, or None
        self.randoms = {}                     # trip -> their states before it
        self.replaying = False                # in the reverse sweep: LOAD sets them back

    # ---------------------------------------------------------------- the forward sweep

    def forward(self):
        """[(a, b)]: the segments of the forward sweep; it saves the state before each."""
        n = self.trips
        chunks = -(-n // self.chunk)
        if self._periodic(chunks):
            cuts = list(range(chunks))
        else:                                  # revolve's first sweep: along the right spine
            cuts, lo, s = [0], 0, self.slots
            while chunks - lo > 1 and s > 0:
                lo = self._split(lo, chunks, s)
                cuts.append(lo)
                s -= 1
        bounds = [self._trip(c) for c in cuts] + [n]
        return list(zip(bounds, bounds[1:])) if n else [(0, 0)]

    def save(self, trip, state, lists=()):
        """Keep `state`, the loop's variables before `trip` (and the lengths of the `lists`
        it appends to). A while loop calls it every `spacing` trips and is told the next
        trip to call it at."""
        self.snapshots[trip] = state
        if self.draws is not None:
            self.randoms[trip] = self.draws.capture(state)
        if lists:
            self.lengths[trip] = [len(v) if v.__class__ is list else None for v in lists]
        if not self.counted:
            return None
        bound = 2 * self.spacing if self.slots is None else self.slots
        if len(self.snapshots) > bound:
            self.spacing *= 2
            self.snapshots = {t: v for t, v in self.snapshots.items() if t % self.spacing == 0}
            if self.draws is not None:
                self.randoms = {t: v for t, v in self.randoms.items() if t % self.spacing == 0}
        return trip - trip % self.spacing + self.spacing

    def load(self, trip):
        if self.replaying:
            self.draws.replay(self.randoms[trip])
        return self.snapshots[trip]

    def trim(self, trip, lists):
        """Cut the lists back to their lengths before `trip` (a loop appended to them)."""
        for values, length in zip(lists, self.lengths[trip]):
            if length is not None:
                del values[length:]

    def finish(self, trips):
        """A while loop ended after `trips` trips."""
        self.trips = trips

    # ---------------------------------------------------------------- the reverse sweep

    def backward(self):
        """The actions (kind, a, b) that reverse every trip, the last trip first; the random
        sources replay each segment's draws, and are left as the forward sweep left them."""
        if self.draws is None:
            yield from self._backward()
            return
        end = self.draws.capture()
        self.replaying = True
        yield from self._backward()
        self.replaying = False
        self.draws.replay(end)

    def _backward(self):
        n = self.trips
        if not n:
            return
        chunks = -(-n // self.chunk)
        if self.counted or self._periodic(chunks):        # tape between the snapshots
            marks = sorted(self.snapshots) + [n]
            for a, b in reversed(list(zip(marks, marks[1:]))):
                yield LOAD, a, a
                yield TAPE, a, b
            return
        yield from self._reverse(0, chunks, self.slots)

    def _periodic(self, chunks):
        return self.slots is None or self.slots >= chunks

    def _trip(self, chunk):
        return min(chunk * self.chunk, self.trips)

    def _split(self, lo, hi, s):
        """Where revolve puts the next snapshot in chunks [lo, hi) with s snapshots free."""
        n, r = hi - lo, 1
        while _beta(s, r) < n:
            r += 1
        return lo + max(1, n - _beta(s - 1, r))

    def _reverse(self, lo, hi, s):
        """Reverse chunks [lo, hi); a snapshot of chunk lo exists; s more may be taken."""
        trip = self._trip
        if hi - lo == 1:
            yield LOAD, trip(lo), trip(lo)
            yield TAPE, trip(lo), trip(hi)
            return
        if s == 0:                             # no snapshot left: run up to each chunk again
            for k in range(hi - 1, lo - 1, -1):
                yield LOAD, trip(lo), trip(lo)
                if k > lo:
                    yield ADVANCE, trip(lo), trip(k)
                yield TAPE, trip(k), trip(k + 1)
            return
        mid = self._split(lo, hi, s)
        if trip(mid) not in self.snapshots:
            yield LOAD, trip(lo), trip(lo)
            yield ADVANCE, trip(lo), trip(mid)
            yield SAVE, trip(mid), trip(mid)
        yield from self._reverse(mid, hi, s - 1)
        self.snapshots.pop(trip(mid), None)
        self.randoms.pop(trip(mid), None)
        yield from self._reverse(lo, mid, s)


def checkpoints(trips, policy, draws=None):
    """The snapshots and schedule of one run of a checkpointed loop (`trips`: its trip
    count, None for a `while` loop; `draws`: the random sources it draws from, or None)."""
    return Checkpoints(trips, policy, draws)
