"""The located errors of `tapeflow.errors`, where the syntax layer raises them."""
from tapeflow.errors import SourceUnavailableError, TapeflowError, UnsupportedError

__all__ = ['SourceUnavailableError', 'TapeflowError', 'UnsupportedError']
