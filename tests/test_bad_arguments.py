"""Every public entry point fed bad arguments: a clear TypeError or ValueError naming the
function and the argument (located at the user's `return` where the error is about what
the user's function returned), never an internal traceback or a number (issue 30).

Before: `tf.grad(f)('hello', 1.0)` was 0.0, `argnums='x'` an internal comparison error,
`jacrev(f, argnums=-1)` a wrong 0.0, `tf.grad` of a complex-valued function the gradient
of its real part, the non-scalar-output TypeError not located, `jvp` of an integer primal
with a nonzero tangent a silent 0.0, `tf.function('x')` an AttributeError.
"""
import inspect
import re

import numpy as np
import pytest

import tapeflow as tf

HERE = re.escape(__file__)


def scale(x, y):
    return x * y * 2.0


def square_sum(x):
    return np.sum(x ** 2)


def doubled(x):
    return x * 2.0


def squared(z):
    return z * z


def holomorphic(z):
    return np.sin(z) * z ** 3 + np.exp(z)


def modulus_squared(z):
    return np.abs(z) ** 2


def returns_pair(x):
    return x, x


def _return_line(fn):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if line.strip().startswith('return'))


def located_at_return(fn):
    """The `file:line:col: ` prefix of an error located at `fn`'s return."""
    return rf'^{HERE}:{_return_line(fn)}:5: '


X = np.array([1.0, 2.0])
Z = 1.0 + 2.0j
NOT_FUNCTIONS = ['hello', None, 3, np.array([1.0])]


# ------------------------------------------------------------------ differentiated arguments


@pytest.mark.parametrize('bad, what', [('hello', 'a str'), (b'x', 'a bytes'), (None, 'None')])
@pytest.mark.parametrize('transform', [tf.grad, tf.value_and_grad, tf.jacfwd, tf.jacrev,
                                       tf.hessian], ids=lambda t: t.__name__)
def test_a_string_or_none_argument_is_a_type_error_naming_it(transform, bad, what):
    message = (rf"cannot differentiate scale\(\) with respect to argument 0 \('x'\): it is "
               rf"{what}, not a float")
    with pytest.raises(TypeError, match=message):
        transform(scale)(bad, 1.0)


def test_the_issue_case_is_no_longer_zero():
    with pytest.raises(TypeError, match=r"argument 0 \('x'\): it is a str"):
        tf.grad(scale)('hello', 1.0)


def test_an_integer_argument_says_pass_a_float():
    with pytest.raises(TypeError, match=r"got int64 for argument 0 \('x'\) of square_sum\(\)\. "
                                        r"If you want to differentiate with respect to it, pass "
                                        r"a float"):
        tf.grad(square_sum)(np.array([1, 2]))


# ------------------------------------------------------------------ argnums


ARGNUMS_TRANSFORMS = [tf.grad, tf.value_and_grad, tf.jacfwd, tf.jacrev, tf.jacobian, tf.hessian]


@pytest.mark.parametrize('argnums', ['x', 1.0, True, None, (0, 'y'), {0: 1}],
                         ids=['str', 'float', 'bool', 'None', 'tuple-with-str', 'dict'])
@pytest.mark.parametrize('transform', ARGNUMS_TRANSFORMS, ids=lambda t: t.__name__)
def test_argnums_takes_ints(transform, argnums):
    kind = 'jacrev' if transform is tf.jacobian else transform.__name__
    with pytest.raises(TypeError, match=rf'^{kind}\(scale, argnums=.*\): argnums takes an int '
                                        rf'or a tuple of ints \(the positions of the arguments '
                                        rf'to differentiate\), not {type(argnums).__name__}'):
        transform(scale, argnums=argnums)


@pytest.mark.parametrize('transform', [tf.grad, tf.jacfwd, tf.jacrev, tf.jacobian],
                         ids=lambda t: t.__name__)
def test_a_negative_argnums_counts_from_the_last_parameter(transform):
    # d(2xy)/dy = 2x: jacrev and jacobian gave 0.0 for argnums=-1 before
    assert float(transform(scale, argnums=-1)(1.5, 2.5)) == 3.0
    assert [float(g) for g in transform(scale, argnums=(0, -1))(1.5, 2.5)] == [5.0, 3.0]


@pytest.mark.parametrize('transform', ARGNUMS_TRANSFORMS, ids=lambda t: t.__name__)
def test_a_negative_argnums_past_the_first_parameter(transform):
    with pytest.raises(TypeError, match=r'argnums=-3\): scale\(\) has 2 positional parameters'):
        transform(scale, argnums=-3)


@pytest.mark.parametrize('transform', ARGNUMS_TRANSFORMS, ids=lambda t: t.__name__)
def test_argnums_out_of_range_says_how_many_arguments_came(transform):
    with pytest.raises(TypeError, match=r'^differentiating with respect to argnums=2 requires '
                                        r'at least 3 positional arguments, but scale\(\) got 2'):
        transform(scale, argnums=2)(1.0, 2.0)


# ------------------------------------------------------------------ what the function returns


def test_a_complex_output_is_refused_at_the_return():
    with pytest.raises(TypeError, match=located_at_return(squared) + r'grad requires real-valued '
                       r'outputs .* but squared\(\) returned complex128\. For holomorphic '
                       r'differentiation, pass holomorphic=True'):
        tf.grad(squared)(Z)
    with pytest.raises(TypeError, match=located_at_return(squared) + 'value_and_grad requires'):
        tf.value_and_grad(squared)(Z)


def test_a_real_function_of_a_complex_argument_is_differentiated():
    # JAX's convention: df/dRe - 1j df/dIm; |z|^2 -> 2 conj(z)
    assert tf.grad(modulus_squared)(Z) == pytest.approx(2 * np.conj(Z))


@pytest.mark.parametrize('f, derivative', [
    (squared, lambda z: 2 * z),
    (holomorphic, lambda z: np.cos(z) * z ** 3 + 3 * np.sin(z) * z ** 2 + np.exp(z)),
])
def test_holomorphic_gives_the_complex_derivative(f, derivative):
    assert tf.grad(f, holomorphic=True)(Z) == pytest.approx(derivative(Z), rel=1e-12)
    value, g = tf.value_and_grad(f, holomorphic=True)(Z)
    assert value == pytest.approx(f(Z)) and g == pytest.approx(derivative(Z), rel=1e-12)
    h = 1e-6                                    # the derivative along the real and imaginary axes
    assert (f(Z + h) - f(Z - h)) / (2 * h) == pytest.approx(derivative(Z), rel=1e-7)
    assert (f(Z + 1j * h) - f(Z - 1j * h)) / (2j * h) == pytest.approx(derivative(Z), rel=1e-7)


def test_holomorphic_on_arrays():
    def cube_sum(z):
        return np.sum(z ** 3)

    z = np.array([1 + 2j, 0.5 - 1j])
    np.testing.assert_allclose(tf.grad(cube_sum, holomorphic=True)(z), 3 * z ** 2)
    np.testing.assert_allclose(tf.jacfwd(lambda z: z ** 3, holomorphic=True)(z),
                               np.diag(3 * z ** 2))
    np.testing.assert_allclose(tf.jacrev(lambda z: z ** 3, holomorphic=True)(z),
                               np.diag(3 * z ** 2))
    np.testing.assert_allclose(tf.hessian(cube_sum, holomorphic=True)(z), np.diag(6 * z))


def test_holomorphic_requires_complex_inputs_and_outputs():
    with pytest.raises(TypeError, match=r"grad with holomorphic=True requires inputs with "
                                        r"complex dtype, but got float for argument 0 \('z'\)"):
        tf.grad(squared, holomorphic=True)(2.0)
    with pytest.raises(TypeError, match=located_at_return(modulus_squared) + r'grad with '
                       r'holomorphic=True requires outputs with complex dtype'):
        tf.grad(modulus_squared, holomorphic=True)(Z)


def test_jacobians_refuse_complex_values_as_jax_does():
    with pytest.raises(TypeError, match=r'jacfwd requires real-valued inputs .* For holomorphic '
                                        r'differentiation, pass holomorphic=True'):
        tf.jacfwd(np.conj)(np.array([Z]))
    with pytest.raises(TypeError, match=r'jacrev requires real-valued outputs .* returned '
                                        r'complex'):
        tf.jacrev(squared)(Z)
    with pytest.raises(TypeError, match=r'jacfwd requires real-valued inputs'):
        tf.hessian(modulus_squared)(Z)
    # real inputs, complex outputs: jacfwd is defined (JAX's too)
    np.testing.assert_allclose(tf.jacfwd(lambda x: np.exp(1j * x))(np.array([0.3])),
                               [[1j * np.exp(0.3j)]])


def test_a_non_scalar_output_is_refused_at_the_return():
    with pytest.raises(TypeError, match=located_at_return(doubled) + r'Gradient only defined for '
                       r'scalar-output functions\. Output of doubled\(\) had shape: \(2,\)'):
        tf.grad(doubled)(X)


def test_a_tuple_output_is_refused_at_the_return():
    with pytest.raises(TypeError, match=located_at_return(returns_pair) + r'grad requires a '
                       r'scalar output, but returns_pair\(\) returned a tuple; to return more, '
                       r'use has_aux=True'):
        tf.grad(returns_pair)(1.0)


def test_a_missing_return_is_said():
    def forgets(x):
        y = x * 2.0         # noqa: F841

    with pytest.raises(TypeError, match=r'forgets\(\) returned NoneType \(None: does it lack a '
                                        r'return\?\)'):
        tf.grad(forgets)(1.0)


# ------------------------------------------------------------------ functions


@pytest.mark.parametrize('bad', NOT_FUNCTIONS, ids=repr)
@pytest.mark.parametrize('transform', ARGNUMS_TRANSFORMS, ids=lambda t: t.__name__)
def test_transforms_of_what_is_not_a_function(transform, bad):
    kind = 'jacrev' if transform is tf.jacobian else transform.__name__
    with pytest.raises(TypeError, match=rf'^{kind}\(f\) takes a function to differentiate, '
                                        rf'not {type(bad).__name__}'):
        transform(bad)


@pytest.mark.parametrize('bad', NOT_FUNCTIONS, ids=repr)
def test_products_of_what_is_not_a_function(bad):
    name = type(bad).__name__
    with pytest.raises(TypeError, match=rf'^vjp\(f, \.\.\.\) takes the function .* not {name}'):
        tf.vjp(bad, 1.0)
    with pytest.raises(TypeError, match=rf'^jvp\(f, \.\.\.\) takes the function .* not {name}'):
        tf.jvp(bad, (1.0,), (1.0,))
    with pytest.raises(TypeError, match=rf'takes the function .* not {name}'):
        tf.linearize(bad, 1.0)
    with pytest.raises(TypeError, match=rf'^grad\(f\) takes a function .* not {name}'):
        tf.hvp(bad, (1.0,), (1.0,))
    with pytest.raises(TypeError, match=rf'^check_grads\(f, args\) takes the function to check '
                                        rf'as f, not {name}'):
        tf.check_grads(bad, (1.0,))
    with pytest.raises(TypeError, match=r'^vmap: expected a function'):
        tf.vmap(bad)


@pytest.mark.parametrize('bad', ['hello', 3, np.array([1.0])], ids=repr)
def test_function_decorates_python_functions(bad):
    with pytest.raises(TypeError, match=rf'^tf\.function decorates a Python function \(def \.\.\.'
                                        rf'\), not {type(bad).__name__}'):
        tf.function(bad)


# ------------------------------------------------------------------ vjp, jvp, linearize, hvp


def test_a_string_primal_is_a_setting_and_hvp_fails_at_the_users_line():
    def mode_sum(x, mode):
        return np.sum(x * x) if mode == 'sum' else np.mean(x)

    out, pullback = tf.vjp(mode_sum, X, 'sum')
    assert out == 5.0 and pullback(1.0)[1] is None
    np.testing.assert_array_equal(pullback(1.0)[0], 2 * X)
    assert tf.jvp(mode_sum, (X, 'sum'), (np.ones(2), 'sum'))[1] == 6.0
    # (hvp differentiates what square_sum computes with: its own line says why it cannot)
    with pytest.raises(TypeError, match=located_at_return(square_sum)[:-3] + r'\d+: unsupported '
                                        r"operand type\(s\) for \*\* or pow\(\): 'str'"):
        tf.hvp(square_sum, ('hello',), (X,))


def test_an_integer_primal_with_a_nonzero_tangent_is_refused():
    # before: (6.0, 0.0), the tangent of 2x along 1.0 silently 0
    with pytest.raises(TypeError, match=r'^jvp: argument 0 of doubled\(\) holds int64 values, '
                                        r'which carry no derivative, but its tangent is not zero'):
        tf.jvp(doubled, (3,), (1.0,))
    assert tf.jvp(doubled, (3,), (0.0,)) == (6.0, 0.0)
    _, f_jvp = tf.linearize(doubled, 3)
    with pytest.raises(TypeError, match=r'holds int64 values'):
        f_jvp(1.0)


def test_jvp_takes_tuples():
    with pytest.raises(TypeError, match=r'^primal and tangent arguments to jvp must be tuples '
                                        r'or lists; found float and float'):
        tf.jvp(doubled, 1.0, 1.0)


def test_jvp_tangent_of_another_shape():
    with pytest.raises(ValueError, match=r'^jvp: the tangent of argument 0 has shape \(3,\), '
                                         r'its primal \(2,\)'):
        tf.jvp(doubled, (X,), (np.ones(3),))


def test_vjp_cotangent_of_another_shape_or_none():
    _, pullback = tf.vjp(doubled, X)
    with pytest.raises(ValueError, match=r'^Shape of cotangent input to vjp pullback function '
                                         r'\(3,\) must be the same as the shape of the output of '
                                         r'doubled\(\) \(2,\)'):
        pullback(np.ones(3))
    with pytest.raises(TypeError, match=r'^vjp of doubled\(\): the cotangent given to the '
                                        r'pullback is None'):
        pullback(None)
    np.testing.assert_array_equal(pullback(np.ones(2))[0], [2.0, 2.0])


def test_vjp_of_a_complex_function_is_the_transpose():
    # vjp is defined for complex outputs (JAX's): the cotangent 1 gives f'(z) here
    assert tf.vjp(squared, Z)[1](1.0)[0] == pytest.approx(2 * Z)


# ------------------------------------------------------------------ vmap, check_grads


def test_vmap_in_axes():
    with pytest.raises(TypeError, match=r'^vmap: an axis is an int or None, not'):
        tf.vmap(doubled, in_axes='a')(X)
    with pytest.raises(ValueError, match=r'^vmap: cannot map over axis 3 of argument 0, which '
                                         r'has 1 dimensions'):
        tf.vmap(doubled, in_axes=3)(X)
    with pytest.raises(ValueError, match=r'^vmap: cannot map over axis 0 of argument 0, which '
                                         r'has 0 dimensions'):
        tf.vmap(doubled)('hello')


def test_check_grads_arguments():
    with pytest.raises(TypeError, match=r'^check_grads\(f, args\): args is the tuple \(or list\) '
                                        r'of the arguments of square_sum\(\), not ndarray: write '
                                        r'check_grads\(f, \(x,\)\)'):
        tf.check_grads(square_sum, X)
    with pytest.raises(ValueError, match=r'^check_grads checks order 1 or 2, not 0'):
        tf.check_grads(square_sum, (X,), order=0)
    with pytest.raises(ValueError, match=r"^check_grads: modes are 'fwd' and 'rev'"):
        tf.check_grads(square_sum, (X,), modes=('bogus',))
    with pytest.raises(TypeError, match=r'^check_grads: no argument of square_sum\(\) holds a '
                                        r'float to differentiate'):
        tf.check_grads(square_sum, ('hello',))


# ------------------------------------------------------------------ GradientTape.gradient


@pytest.fixture
def taped():
    v = tf.Variable(1.0)
    with tf.GradientTape(persistent=True) as tape:
        y = v * 2.0
    return tape, v, y


@pytest.mark.parametrize('target, got', [('hello', "str 'hello'"), (None, 'None')])
def test_gradient_target_must_be_tensors(taped, target, got):
    tape, v, _ = taped
    with pytest.raises(TypeError, match=rf'^Argument `target` should be a list or nested '
                                        rf'structure of Tensors or Variables to be '
                                        rf'differentiated, but received {got}'):
        tape.gradient(target, v)


@pytest.mark.parametrize('source', ['hello', None, np.ones(2)], ids=repr)
def test_gradient_sources_must_be_tensors(taped, source):
    tape, _, y = taped
    with pytest.raises(ValueError, match=rf'^sources must be Tensors or Variables \(or nested '
                                         rf'structures of them\); got {type(source).__name__}'):
        tape.gradient(y, source)


def test_gradient_output_gradients_and_unconnected(taped):
    tape, v, y = taped
    with pytest.raises(TypeError, match=r"^output_gradients holds a str 'x': give one Tensor, "
                                        r"array or number per target"):
        tape.gradient(y, v, output_gradients='x')
    with pytest.raises(ValueError, match=r'^Mismatch between output_gradients shape \(3,\) and '
                                         r'target shape \(\)'):
        tape.gradient(y, v, output_gradients=np.ones(3))
    with pytest.raises(ValueError, match=r"^Unknown value for unconnected_gradients: 'bogus'"):
        tape.gradient(y, v, unconnected_gradients='bogus')
    assert float(tape.gradient(y, v, output_gradients=3.0)) == 6.0
