"""The `run` fixture: the tapeflow command in process."""
import pytest

from tapeflow import cli


@pytest.fixture
def run(capsys):
    """run(*argv) -> (exit status, stdout, stderr) of the `tapeflow` command, in process."""
    def run(*argv):
        status = cli.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return status, out, err
    return run
