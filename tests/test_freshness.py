"""Freshness (issue 30): compiled code is used only while it is the code that runs.

With real files in a temporary folder and `importlib`: a helper module edited and
reloaded, a function's `__code__` replaced (IPython's autoreload), and a source file
edited but not re-imported (the text read must compile to the code that runs, else a
located error saying the file changed). Values against the plain call and central
differences; errors by message and place.
"""
import importlib
import os
import sys
import textwrap
import uuid

import numpy as np
import pytest

import tapeflow as tf


class Folder:
    """Modules written into a folder on `sys.path`; each write gets a later mtime, so that
    `linecache` and the import system see the edit even within one second."""

    def __init__(self, path):
        self.path, self.clock = path, 1_000_000_000
        self.names = {}

    def write(self, name, text):
        module = self.names.setdefault(name, f'{name}_{uuid.uuid4().hex[:8]}')
        file = self.path / f'{module}.py'
        file.write_text(textwrap.dedent(text).replace('{helpers}', self.names.get('helpers', '')))
        self.clock += 10
        os.utime(file, (self.clock, self.clock))
        importlib.invalidate_caches()
        return module, str(file)

    def load(self, name):
        return importlib.import_module(self.names[name])


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, 'dont_write_bytecode', True)
    sys.path.insert(0, str(tmp_path))
    made = Folder(tmp_path)
    yield made
    sys.path.remove(str(tmp_path))
    for module in made.names.values():
        sys.modules.pop(module, None)


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


USER = '''
import numpy as np
import {helpers} as helpers


def f(x):
    return helpers.step(x) + np.sin(x)
'''


def test_a_helper_module_edited_and_reloaded(folder):
    folder.write('helpers', '''
        def step(x):
            return x * x
        ''')
    folder.write('user', USER)
    helpers, user = folder.load('helpers'), folder.load('user')
    g = tf.grad(user.f)
    f = tf.function(user.f)
    assert np.isclose(g(3.0), 6.0 + np.cos(3.0))
    folder.write('helpers', '''
        def step(x):
            return x * x * x
        ''')
    importlib.reload(helpers)
    expected = 27.0 + np.cos(3.0)
    assert np.isclose(g(3.0), expected) and np.isclose(central(user.f, 3.0), expected)
    assert np.isclose(tf.grad(user.f)(3.0), expected)
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = f(v)
    assert np.isclose(tape.gradient(y, v).numpy(), expected)


def fresh_code(path, name):
    """What IPython's autoreload puts in place: the code of `name` compiled from the file now."""
    namespace = {}
    exec(compile(open(path).read(), path, 'exec'), namespace)
    return namespace[name].__code__


def test_code_objects_replaced_as_autoreload_does(folder):
    _, helpers_path = folder.write('helpers', '''
        def step(x):
            return x * x
        ''')
    _, user_path = folder.write('user', USER)
    helpers, user = folder.load('helpers'), folder.load('user')
    g = tf.grad(user.f)
    assert np.isclose(g(2.0), 4.0 + np.cos(2.0))
    folder.write('helpers', '''
        def step(x):
            return 5.0 * x
        ''')
    helpers.step.__code__ = fresh_code(helpers_path, 'step')     # the helper, in place
    assert np.isclose(g(2.0), 5.0 + np.cos(2.0))
    folder.write('user', USER.replace('+ np.sin(x)', '* 2.0'))
    user.f.__code__ = fresh_code(user_path, 'f')        # the function differentiated itself
    assert g(2.0) == 10.0 and central(user.f, 2.0) == pytest.approx(10.0)


def test_a_source_file_edited_but_not_imported_again_is_refused_at_its_def(folder):
    module, path = folder.write('user', '''
        import numpy as np


        def f(x):
            return np.sin(x) * x
        ''')
    user = folder.load('user')
    folder.write('user', '''
        import numpy as np


        def f(x):
            return np.cos(x) * x * 100.0
        ''')
    with pytest.raises(tf.UnsupportedError) as error:
        tf.grad(user.f)(1.0)
    message = str(error.value)
    assert message.startswith(f'{path}:5:1: f: the file changed since it was imported')
    assert 're-import the module' in message
    importlib.reload(user)
    assert np.isclose(tf.grad(user.f)(1.0), 100.0 * (np.cos(1.0) - np.sin(1.0)))


def test_lines_moved_above_or_inside_a_function_hold_the_same_code(folder):
    _, path = folder.write('user', '''
        def f(x):
            y = x * x
            return y * x
        ''')
    user = folder.load('user')
    folder.write('user', '''
        SCALE = 2.0


        def f(x):
            y = x * x
            # a comment: the same instructions, on other lines
            return y * x
        ''')
    assert tf.grad(user.f)(2.0) == 12.0             # the code that runs, as the text says
    folder.write('user', '''
        SCALE = 2.0


        def f(x):
            y = x * x
            return y * x * SCALE
        ''')
    assert tf.grad(user.f)(3.0) == 27.0             # compiled before the edit: still the code
    with pytest.raises(tf.UnsupportedError) as error:
        tf.grad(user.f)(np.array([3.0]))            # compiled now: the text is read, refused
    assert str(error.value).startswith(f'{path}:5:1: f: the file changed since it was imported')


def test_functions_that_compile_in_context_are_not_refused(folder):
    folder.write('user', '''
        from __future__ import annotations

        import functools
        import numpy as np
        import numpy.linalg


        def make(scale):
            def inner(x: float) -> float:
                return scale * np.sin(x) + sum(x * k for k in (1.0, 2.0))
            return inner


        class Base:
            def energy(self, x):
                return x * x


        class Child(Base):
            def energy(self, x):
                return Base.energy(self, x) * 3.0 + np.tanh(x)

            def outer(self):
                return super().energy


        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args):
                return fn(*args)
            return wrapper


        @logged
        def decorated(x):
            return np.exp(x) * numpy.linalg.norm([x, 1.0])


        def f(x):
            return make(2.0)(x) + Child().energy(x) + decorated(x)
        ''')
    user = folder.load('user')
    x = 0.4
    assert np.isclose(tf.grad(user.f)(x), central(user.f, x), rtol=1e-7)
    assert np.isclose(tf.grad(user.make(3.0))(x), central(user.make(3.0), x), rtol=1e-7)


def test_a_lambda_edited_in_place_is_refused(folder):
    _, path = folder.write('user', '''
        import numpy as np
        SCALE = 3.0
        f = lambda x: np.sin(x) * SCALE
        g = lambda x: (lambda y: y * x)(x) + SCALE
        ''')
    user = folder.load('user')
    assert np.isclose(tf.grad(user.g)(2.0), 4.0)
    folder.write('user', '''
        import numpy as np
        SCALE = 3.0
        f = lambda x: np.cos(x) * SCALE
        g = lambda x: (lambda y: y * x)(x) + SCALE
        ''')
    with pytest.raises(tf.UnsupportedError) as error:
        tf.grad(user.f)(1.0)
    assert str(error.value).startswith(f'{path}:4:1: <lambda>: the file changed')
