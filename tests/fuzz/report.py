"""Tallies of a fuzz run, and failing programs written out as runnable reproducers."""
from __future__ import annotations

import collections
import os

from . import dynamic, objects, statements
from .generator import literal
from .grammar import ISSUE_29, NAMES
from .oracle import CLASSES, MODES


class Tally:
    """Counts per class, refusals by reason and construct, outcomes per construct used."""

    def __init__(self):
        self.classes = collections.Counter()
        self.refusals = collections.Counter()
        self.refused_at = collections.Counter()
        self.refused_29 = collections.Counter()      # reasons, at issue 29's constructs
        self.crashes = collections.Counter()
        self.discards = collections.Counter()
        self.by_construct = collections.defaultdict(collections.Counter)
        self.arguments = collections.Counter()
        self.modes = {mode: collections.Counter() for mode in MODES}
        self.mode_refusals = collections.Counter()

    def add(self, program, outcome):
        for mode, (kind, reason) in outcome.modes.items():
            self.modes[mode][kind] += 1
            if kind == 'refused':
                self.mode_refusals[f'{mode}: {reason}'] += 1
        self.classes[outcome.kind] += 1
        if outcome.kind == 'refused':
            self.refusals[outcome.reason] += 1
            self.refused_at[outcome.construct] += 1
            if issue_29(outcome.construct):
                self.refused_29[f'{outcome.construct}: {outcome.reason}'[:160]] += 1
        elif outcome.kind == 'crash':
            self.crashes[outcome.reason.split(' (at ')[0][:100]] += 1
        elif outcome.kind == 'discarded':
            self.discards[outcome.reason.split(':')[0][:60]] += 1
        if outcome.kind in ('ok', 'wrong'):
            self.arguments[(outcome.mutated_args, outcome.plain_mutates, outcome.like_plain)] += 1
        for name in program.used:
            self.by_construct[name][outcome.kind] += 1

    def arguments_line(self) -> str:
        """How tapeflow left its copies of the arguments, next to the plain call's."""
        changed = sum(n for (ours, _, _), n in self.arguments.items() if ours)
        like = sum(n for (ours, _, same), n in self.arguments.items() if ours and same)
        kept = sum(n for (ours, plain, _), n in self.arguments.items() if plain and not ours)
        return (f'mutated args: tapeflow changed its arguments in {changed} programs ({like} as the plain '
                f'call changes its own, {changed - like} otherwise); left unchanged in {kept} where '
                f'the plain call changes them')

    @property
    def failures(self):
        return self.classes['wrong'] + self.classes['crash']

    def summary(self, top=8) -> str:
        total = sum(self.classes.values())
        run = total - self.classes['discarded']
        lines = [f'{kind:10} {self.classes[kind]:7}  {percent(self.classes[kind], total)}' for kind in CLASSES]
        lines.append(f'refusal rate: {percent(self.classes["refused"], run)} of the {run} programs not discarded')
        new = sum(n for construct, n in self.refused_at.items() if issue_29(construct))
        lines.append(f'refused at a line of the issue-29 constructs: {new} ({percent(new, run)} of '
                     f'those programs)')
        lines.append(self.arguments_line())
        for mode, counts in self.modes.items():
            checked = sum(counts.values())
            lines.append(f'{mode + " checked":16} {checked:6}: ' + ', '.join(
                f'{kind} {counts[kind]}' for kind in CLASSES if counts[kind]) if checked else
                f'{mode + " checked":16}      0')
        for title, counter in (('refusals', self.refusals), ('refused at construct', self.refused_at),
                               ("refused at issue 29's constructs", self.refused_29),
                               ('crashes', self.crashes), ('discards', self.discards),
                               ('refusals in forward mode and second order', self.mode_refusals)):
            if counter:
                lines.append(f'{title}:')
                lines += [f'  {n:6}  {what}' for what, n in counter.most_common(top)]
        lines.append(f'per construct (programs using it: {" / ".join(CLASSES[:4])}):')
        for name in NAMES:
            counts = self.by_construct.get(name)
            if counts:
                used = sum(counts.values())
                lines.append(f'  {name:22} {used:6}: ' + ' / '.join(percent(counts[k], used) for k in CLASSES[:4]))
        return '\n'.join(lines)


def issue_29(construct) -> bool:
    """Whether a line's construct is one of issue 29's, or a module-level definition of theirs."""
    defined = construct[4:] if construct.startswith('def ') else None
    return (construct in ISSUE_29 or defined == 'KEYS'
            or any(defined in module.DEFINITIONS for module in (dynamic, statements, objects)))


def percent(part, whole) -> str:
    return f'{100.0 * part / whole:5.1f}%' if whole else '    -'


def write_reproducer(directory, stem, program, outcome) -> str:
    """`DIR/stem.py`: the program, its report as comments, and a main that reruns it."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, stem + '.py')
    with open(path, 'w') as handle:
        handle.write(program.source)
        handle.write('\n\n# ---- tapeflow mutation fuzz ----\n')
        handle.write(''.join(f'# {line}\n' for line in outcome.details()))
        handle.write(f'ARGS = {literal(program.args())}\nARGNUMS = {program.wrt!r}\n'
                     f'CHECKS = {getattr(program, "checks", "reverse")!r}\n')
        handle.write(MAIN)
    return path


MAIN = '''

def _ones(value, moving=True):
    if isinstance(value, list):
        return [_ones(v, moving) for v in value]
    if isinstance(value, float):
        return 1.0 if moving else 0.0
    return np.ones(np.shape(value)) if moving else np.zeros(np.shape(value))


if __name__ == '__main__':
    import copy

    import tapeflow as tf

    print('plain value:', f(*copy.deepcopy(ARGS)))
    print('tapeflow (value, gradients):', tf.value_and_grad(f, argnums=ARGNUMS)(*copy.deepcopy(ARGS)))
    if CHECKS != 'reverse':      # forward mode and second order along all ones at ARGNUMS
        tangents = tuple(_ones(a, i in ARGNUMS) for i, a in enumerate(ARGS))
        print('tapeflow jvp along ones:', tf.jvp(f, copy.deepcopy(tuple(ARGS)), tangents))
    if CHECKS == 'second':
        print('tapeflow Hessian along ones:', tf.jvp(tf.grad(f, argnums=ARGNUMS),
                                                     copy.deepcopy(tuple(ARGS)), tangents)[1])
'''
