"""Errors raised while generated code runs, told at the user's `file:line:col`.

`pipeline` registers, for each generated module (its `<tapeflow ...>` file
name), the user's location behind each generated line (`register`). When a
call of generated code fails, `located` makes the error speak of the user's
line: the innermost generated frame of the traceback that has a location
names it. The error keeps its kind (a `ValueError` stays one, so `except
ValueError` still catches it) and is also a `TapeflowError`; its message
starts with `file:line:col:`. Errors tapeflow raised itself are located
already and pass unchanged.

This module imports no gast: the runtime and the API may use it.
"""
from __future__ import annotations

import threading
import traceback

from tapeflow.errors import TapeflowError, UnsupportedError

# generated file name -> (user file name, {generated line: (user line, user column)})
_MAPS: dict = {}
_CLASSES: dict = {}
_LOCK = threading.Lock()

__all__ = ['register', 'forget', 'lines_of', 'user_location', 'located', 'reraise', 'UserCodeError']


class UserCodeError(TapeflowError):
    """Base of the errors `located` makes: the user's code raised (its `__cause__`),
    not tapeflow; each is also of the original error's kind."""
    users = True


def register(generated_filename: str, user_filename: str, lines: dict) -> None:
    """The user's (line, column) of each line of the generated module, 1-based lines.
    Where the module differentiates generated code again (second order), its lines
    are told through that code's map, at the user's lines behind it."""
    if not lines:
        return
    outer = _MAPS.get(user_filename)
    if outer is not None:
        lines = {n: outer[1][line] for n, (line, _) in lines.items() if line in outer[1]}
        user_filename = outer[0]
    _MAPS[generated_filename] = (user_filename, dict(lines))


def forget(generated_filename: str) -> None:
    """Drop the map of a generated module whose code is gone (`unparse.load_module`)."""
    _MAPS.pop(generated_filename, None)


def user_location(filename: str, line: int, col: int):
    """(file, line, column) of the user's code behind `line` of generated code `filename`
    (the nearest mapped line above it), or as given where `filename` is not generated."""
    entry = _MAPS.get(filename)
    if entry is None:
        return filename, line, col
    mapped = max((n for n in entry[1] if n <= line), default=None)
    if mapped is None:
        return filename, line, col
    return (entry[0],) + tuple(entry[1][mapped])


def lines_of(generated_filename: str):
    """(user file name, {generated line: (user line, user column)}) registered for a
    generated module, or None."""
    return _MAPS.get(generated_filename)


def location_of(tb, nearest=False):
    """(file, line, column) of the user's code behind the innermost mapped generated frame
    (with `nearest`, a generated line without a map takes the nearest mapped line above it)."""
    where = None
    for frame, lineno in traceback.walk_tb(tb):
        entry = _MAPS.get(frame.f_code.co_filename)
        if entry is None:
            continue
        if lineno not in entry[1] and nearest:
            lineno = max((n for n in entry[1] if n < lineno), default=lineno)
        if lineno in entry[1]:
            line, col = entry[1][lineno]
            where = (entry[0], line, col)
    return where


def located(error: BaseException):
    """`error` told at the user's location (an exception of its kind that is also a
    TapeflowError), or None when it is tapeflow's own or no generated line maps."""
    if isinstance(error, UnsupportedError) and error.filename == '<unknown>':
        where = location_of(error.__traceback__, nearest=True)   # a helper's refusal, at run time
        if where is None:
            return None
        return UnsupportedError(error.reason, where[0], where[1], where[2])
    if isinstance(error, TapeflowError) or not isinstance(error, Exception):
        return None
    where = location_of(error.__traceback__)
    if where is None:
        return None
    filename, line, col = where
    message = f'{filename}:{line}:{col + 1}: {error}'
    cls = _located_class(type(error))
    new = None
    if cls is not None:
        try:
            new = cls(message)
        except Exception:
            new = None
    if new is None:
        new = UserCodeError(message)
    new.message, new.filename, new.lineno, new.col = message, filename, line, col + 1
    return new


def reraise(error: BaseException):
    """Raise `error` told at the user's location (see `located`), or as it is."""
    new = located(error)
    if new is None:
        raise error
    raise new.with_traceback(error.__traceback__) from error


def _located_class(cls):
    with _LOCK:
        if cls not in _CLASSES:
            try:
                _CLASSES[cls] = type(cls.__name__, (cls, UserCodeError),
                                     {'__str__': lambda self: self.message,
                                      '__module__': 'tapeflow.errors',
                                      '__qualname__': cls.__qualname__})
            except TypeError:          # a layout that cannot be combined
                _CLASSES[cls] = None
        return _CLASSES[cls]
