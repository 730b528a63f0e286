"""Values the reverse sweep restores and never reads are not pushed (`witness.unread`):
a later pass made their reads go (`factor` reads `_mul2 = -0.5 * x` as `x`)."""
import pytest

from tapeflow.syntax import nodes
from tapeflow.syntax.unparse import unparse
from tapeflow.transforms import witness


def _blocks(forward, reverse):
    parse = lambda text: nodes.parse_gast(text).body
    out = witness.unread(parse(forward), parse(reverse), '_push', '_pop')
    return None if out is None else tuple(
        '\n'.join(unparse(s).strip() for s in block) for block in out)


def test_a_name_restored_and_never_read_leaves_its_tuples():
    out = _blocks('m = -0.5 * x\n_push((a, m, x))\n', '(a, m, x) = _pop()\nbx = a * x\n')
    assert out == ('m = -0.5 * x\n_push((a, x))', 'a, x = _pop()\nbx = a * x')


@pytest.mark.parametrize('forward, reverse', [
    ('_push((a, m))\n', '(a, m) = _pop()\nbx = a * m\n'),             # read
    ('_push((a, m))\n_push(m)\n', 'm = _pop()\n(a, m) = _pop()\nbx = a\n'),   # pushed alone too
    ('_push((a, m))\n_push((a, m))\n', '(a, m) = _pop()\nbx = a\n'),  # restored less often
    ('_push((m,))\n', '(m,) = _pop()\nbx = 1.0\n'),                   # a tuple keeps a name
    ('_push((a, m))\n', 'a = _pop()[0]\nbx = a\n'),                   # not restored as a tuple
])
def test_what_is_read_or_not_paired_stays(forward, reverse):
    assert _blocks(forward, reverse) is None


# The split pair of the Gaussian (no push of `_mul2`, fused into `np.exp(-0.5 * x * x)`):
# test_factor.test_the_split_pair_is_factored_as_the_combined_function.
