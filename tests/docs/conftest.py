import pytest

from tapeflow.rules import registry


@pytest.fixture(autouse=True)
def restore_rule_table():
    """Rules the code under test registers (user primitives) do not outlive the test."""
    before = dict(registry.RULES)
    yield
    for fn in [fn for fn in registry.RULES if fn not in before]:
        del registry.RULES[fn]
