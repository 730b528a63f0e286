"""Errors that point at the user's code: file, line, column and one reason.

A leaf module (it imports nothing of tapeflow): every layer may raise these,
from the compiler's passes to the helpers generated code calls at run time.
"""
from __future__ import annotations


class TapeflowError(Exception):
    """Base class of tapeflow's own errors."""
    users = False           # an error of the user's code, told at its line (`sourcemap`)


def is_tapeflows(error) -> bool:
    """Whether `error` is tapeflow's own (a refusal, an internal error), which no handler
    of the user's code may catch: a `try` around a refused statement is still refused."""
    return isinstance(error, TapeflowError) and not error.users


class UnsupportedError(TapeflowError, SyntaxError):
    """A construct tapeflow does not differentiate, located in the user's file.

    Subclasses SyntaxError so tools that print `file:line:col` understand it.
    """

    def __init__(self, reason: str, filename: str = '<unknown>', lineno: int = 0,
                 col: int = 0, line_text: str | None = None):
        self.reason = reason
        where = f'{filename}:{lineno}:{col + 1}'
        super().__init__(f'{where}: {reason}')
        self.filename, self.lineno, self.offset = filename, lineno, col + 1
        self.text = line_text
        self.msg = f'{where}: {reason}'

    def __str__(self):
        return self.msg


class SourceUnavailableError(TapeflowError):
    """The function's source cannot be read (built in, defined in a REPL...)."""


class NativeFallbackWarning(UserWarning):
    """`compile='auto'`: Numba cannot compile a function; the NumPy path runs it (the
    message names the line)."""
