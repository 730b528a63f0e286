"""The `run` fixture (the tapeflow command, in process), and a clean rule table per test."""
import pytest

from tapeflow import cli
from tapeflow.rules import registry


@pytest.fixture(autouse=True)
def restore_rule_table():
    """Rules the files under test register (user primitives) do not outlive the test."""
    before = dict(registry.RULES)
    yield
    for fn in [fn for fn in registry.RULES if fn not in before]:
        del registry.RULES[fn]


@pytest.fixture
def run(capsys):
    """run(*argv) -> (exit status, stdout, stderr) of the `tapeflow` command, in process."""
    def run(*argv):
        status = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return status, out, err
    return run
