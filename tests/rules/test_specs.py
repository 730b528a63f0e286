"""Every spec of the tables, through the numerical rule checker."""
import warnings

import pytest

from rulecheck import check
from specs_array_api import SPECS as ARRAY_API
from specs_arrays import SPECS as ARRAYS
from specs_elementwise import SPECS as ELEMENTWISE
from specs_linalg import SPECS as LINALG
from specs_scipy_stats import SPECS as SCIPY_STATS

ALL = ELEMENTWISE + ARRAYS + LINALG + ARRAY_API + SCIPY_STATS


def _ids(specs):
    seen = {}
    out = []
    for spec in specs:
        n = seen.get(spec.id, 0)
        seen[spec.id] = n + 1
        out.append(spec.id if n == 0 else f'{spec.id}#{n}')
    return out


@pytest.mark.parametrize('spec', ALL, ids=_ids(ALL))
def test_rule(spec):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        check(spec)
