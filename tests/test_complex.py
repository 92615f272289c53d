"""Complex inputs and outputs of the transformations, with JAX's conventions.

For ``z = x + iy`` and a real ``f``: ``grad(f)(z) = df/dx - i df/dy``; ``jvp`` pushes a complex
tangent ``c + id`` as the real pair ``(c, d)``; ``vjp``'s cotangent ``w`` seeds ``conj(w)``'s
pair, and its result for a complex input is ``conj(x̄ + iȳ)``. So for a holomorphic ``f`` the
vjp is ``w f'(z)`` and, with ``holomorphic=True``, ``grad``/``jacfwd``/``jacrev`` give
``f'(z)``. The expected values here are derived by hand or read off JAX's documentation and
issue threads (cited by what they say, not run)."""

import cmath

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from complex_checks import check, crandom
from helpers import scaled


# --------------------------------------------------------------------------------------------
# grad of a real function of complex inputs


def test_grad_of_squared_modulus_is_twice_the_conjugate():
    # f = x^2 + y^2: df/dx = 2x = 6, df/dy = 2y = 8, so JAX's grad is 6 - 8j (the cookbook's
    # example, and the value users report as "the conjugate of the gradient")
    f = lambda z: z.real ** 2 + z.imag ** 2  # noqa: E731
    assert d.grad(f)(3 + 4j) == 6 - 8j
    assert d.grad(lambda z: abs(z) ** 2)(3 + 4j) == pytest.approx(6 - 8j, rel=1e-15)
    assert d.grad(lambda z: np.real(z * np.conj(z)))(3 + 4j) == 6 - 8j


def test_grad_of_real_and_imaginary_parts():
    assert d.grad(lambda z: z.real)(2j) == 1
    assert d.grad(lambda z: z.imag)(2j) == -1j
    # the JAX thread where this is reported as a sign bug: grad(imag(x)**2) at 2j is -4j
    assert d.grad(lambda z: z.imag ** 2)(2j) == -4j


def test_steepest_descent_steps_along_the_conjugate_of_grad():
    f = lambda z: abs(z - (1 - 2j)) ** 2  # noqa: E731
    z = 3 + 4j
    for _ in range(50):
        z = z - 0.1 * np.conj(d.grad(f)(z))
    assert abs(z - (1 - 2j)) < 1e-4


def test_gradient_types_follow_the_inputs():
    assert type(d.grad(lambda z: abs(z))(1 + 1j)) is complex
    assert type(d.grad(lambda z: abs(z))(np.complex128(1 + 1j))) is np.complex128
    assert type(d.grad(lambda z: abs(z))(np.complex64(1 + 1j))) is np.complex64
    g = d.grad(lambda z: np.sum(np.abs(z)))(np.ones(3, np.complex64))
    assert g.dtype == np.complex64 and g.shape == (3,)
    gz, gx = d.grad(lambda z, x: abs(z) * x, argnums=(0, 1))(1j, 2.0)
    assert type(gz) is complex and type(gx) is float
    g = d.grad(lambda t: abs(t[0]) + t[1] + abs(t[2]["c"]))((1j, 1.0, {"c": 3 + 4j}))
    assert g[0] == -1j and g[1] == 1.0 and g[2]["c"] == pytest.approx(0.6 - 0.8j)


# --------------------------------------------------------------------------------------------
# Holomorphic functions


def test_holomorphic_grad_is_the_complex_derivative():
    z = 3 + 4j
    assert d.grad(np.sin, holomorphic=True)(z) == np.cos(z)
    assert d.grad(lambda z: z * z, holomorphic=True)(z) == 2 * z
    # a non-holomorphic function "promised" holomorphic: the Jacobian of its real part, as JAX
    # documents (conj gives 1)
    assert d.grad(np.conj, holomorphic=True)(z) == 1


def test_holomorphic_jacobians():
    z = np.array([1 + 2j, -0.5 + 3j, 2 - 1j])
    f = lambda z: z ** 3 + np.exp(z)  # noqa: E731
    fp = 3 * z ** 2 + np.exp(z)
    for jac in (d.jacfwd, d.jacrev):
        J = jac(f, holomorphic=True)(z)
        assert J.dtype == np.complex128 and J.shape == (3, 3)
        np.testing.assert_allclose(J, np.diag(fp), rtol=1e-13, atol=1e-13)
    J = d.jacfwd(lambda z: np.cumsum(z * z), holomorphic=True)(z)
    np.testing.assert_allclose(J, np.tril(np.ones((3, 3))) * 2 * z, rtol=1e-13)
    H = d.hessian(lambda z: np.sum(z ** 3), holomorphic=True)(z)
    np.testing.assert_allclose(H, np.diag(6 * z), rtol=1e-13)
    assert d.hessian(lambda z: z ** 4, holomorphic=True)(1 + 1j) == pytest.approx(12 * (1 + 1j) ** 2)


def test_holomorphic_argnums_and_pytrees():
    f = lambda a, b: a * b + a ** 2  # noqa: E731
    ga, gb = d.grad(f, argnums=(0, 1), holomorphic=True)(1 + 2j, 3 - 1j)
    assert ga == (3 - 1j) + 2 * (1 + 2j) and gb == 1 + 2j
    J = d.jacrev(lambda p: {"s": p["a"] * p["b"]}, holomorphic=True)({"a": 1j, "b": 2 + 0j})
    assert J["s"]["a"] == 2 and J["s"]["b"] == 1j


# --------------------------------------------------------------------------------------------
# jvp and vjp


def _linear(a, b, c, e):
    def f(z):
        x, y = np.real(z), np.imag(z)
        return (a * x + b * y) + (c * x + e * y) * 1j

    return f


@given(seed=st.integers(0, 2**31 - 1))
@scaled(0.5)
def test_jvp_and_vjp_of_a_general_linear_map_follow_jax(seed):
    # f(x + iy) = u + iv with u = a x + b y, v = c x + e y: JAX's cookbook defines
    # jvp(c1 + i d1) = (a c1 + b d1) + i (c c1 + e d1) and
    # vjp(c1 + i d1) = a c1 - c d1 - i (b c1 - e d1)
    rng = np.random.default_rng(seed)
    a, b, c, e, c1, d1 = rng.uniform(-2, 2, 6)
    f = _linear(a, b, c, e)
    z = complex(*rng.uniform(-2, 2, 2))
    _, t = d.jvp(f, (z,), (c1 + 1j * d1,))
    assert t == pytest.approx((a * c1 + b * d1) + 1j * (c * c1 + e * d1), rel=1e-14, abs=1e-14)
    _, pb = d.vjp(f, z)
    (g,) = pb(c1 + 1j * d1)
    assert g == pytest.approx(a * c1 - c * d1 - 1j * (b * c1 - e * d1), rel=1e-14, abs=1e-14)


def test_vjp_of_a_holomorphic_function_is_w_times_the_derivative():
    z, w = 0.3 - 1.2j, 2 + 0.5j
    _, pb = d.vjp(np.exp, z)
    assert pb(w)[0] == pytest.approx(w * np.exp(z), rel=1e-15)
    _, t = d.jvp(np.exp, (z,), (w,))
    assert t == pytest.approx(w * np.exp(z), rel=1e-15)


def test_real_input_complex_output():
    # R -> C: the real input's cotangent is Re(conj-weighted); jacfwd gives a complex column
    f = lambda x: np.exp(1j * x)  # noqa: E731
    _, pb = d.vjp(f, 0.5)
    assert pb(1.0)[0] == pytest.approx(-np.sin(0.5))   # d/dx Re e^{ix}
    assert pb(1j)[0] == pytest.approx(-np.cos(0.5))   # w = i seeds conj(w) = -i: -d/dx Im
    assert d.jacfwd(f)(0.5) == pytest.approx(1j * np.exp(0.5j))
    J = d.jacfwd(lambda x: np.fft.fft(x))(np.ones(4))
    np.testing.assert_allclose(J, np.fft.fft(np.eye(4)).T, atol=1e-15)
    assert d.jvp(f, (0.5,), (2.0,))[1] == pytest.approx(2j * np.exp(0.5j))


def test_jacrev_of_a_real_function_of_complex_inputs_has_jax_rows():
    z = np.array([1 + 2j, 3 - 1j])
    J = d.jacrev(lambda z: np.abs(z) ** 2)(z)
    np.testing.assert_allclose(J, np.diag(2 * np.conj(z)), rtol=1e-14)


def test_real_tangents_and_cotangents_are_accepted_for_complex_values():
    _, t = d.jvp(lambda z: z * z, (1 + 1j,), (1.0,))
    assert t == 2 + 2j
    _, pb = d.vjp(lambda z: z * z, 1 + 1j)
    assert pb(1.0)[0] == 2 + 2j
    assert pb(np.float32(1.0))[0] == 2 + 2j


# --------------------------------------------------------------------------------------------
# Errors: JAX's checks, with deltaad's words


def test_errors():
    with pytest.raises(TypeError, match="holomorphic=True"):
        d.grad(lambda z: z * z)(1j)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex"):
        d.grad(lambda x: x * 1j, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="complex number"):
        d.grad(lambda z: abs(z), holomorphic=True)(1j)
    with pytest.raises(TypeError, match="holomorphic=True"):
        d.jacfwd(lambda z: z * z)(np.ones(2, complex))
    with pytest.raises(TypeError, match="holomorphic=True"):
        d.jacrev(lambda z: z * z)(np.ones(2, complex))
    with pytest.raises(TypeError, match="outputs with complex"):
        d.jacfwd(lambda z: np.abs(z), holomorphic=True)(np.ones(2, complex))
    with pytest.raises(TypeError, match="real output"):
        d.vjp(lambda x: x * 2.0, 1.0)[1](1j)
    with pytest.raises(TypeError, match="real primal"):
        d.jvp(lambda x: x * 2.0, (1.0,), (1j,))
    with pytest.raises(ValueError, match="shape"):
        d.vjp(lambda z: z * 2.0, np.ones(2, complex))[1](np.ones(3, complex))
    with pytest.raises(ValueError, match="shape"):
        d.jvp(lambda z: z * 2.0, (np.ones(2, complex),), (np.ones(3, complex),))


# --------------------------------------------------------------------------------------------
# Nesting and random programs


def test_nested_derivatives_of_complex_programs():
    # d/dx of x * d/dy |x + iy|^2 = d/dx (x * 2y) = 2y (perturbation confusion cannot happen)
    def inner(x, y):
        return d.grad(lambda y: abs(x + 1j * y) ** 2)(y)

    assert d.grad(lambda x: x * inner(x, 0.7))(0.3) == pytest.approx(1.4, rel=1e-14)
    # grad of grad with complex inputs: f = |z|^4, grad = 4|z|^2 conj(z)
    g = lambda z: d.grad(lambda z: abs(z) ** 4)(z)  # noqa: E731
    z = 1 + 2j
    assert g(z) == pytest.approx(4 * abs(z) ** 2 * np.conj(z))
    h = d.grad(lambda z: np.real(g(z) * (0.5 - 1j)))(z)
    # <(0.5-1j), 4|z|^2 conj z> real part, differentiated by hand: x^2 + y^2 = r
    x, y = z.real, z.imag
    dfdx = 4 * ((2 * x) * (0.5 * x - 1 * y) + (x * x + y * y) * 0.5)
    dfdy = 4 * ((2 * y) * (0.5 * x - 1 * y) + (x * x + y * y) * -1)
    assert h == pytest.approx(dfdx - 1j * dfdy)


@given(seed=st.integers(0, 2**31 - 1))
@scaled(0.4)
def test_random_complex_programs(seed):
    rng = np.random.default_rng(seed)
    z = crandom(rng, (3,))
    w = complex(crandom(rng, ()))
    x = rng.uniform(0.5, 1.5, (3,))
    ops = rng.integers(0, 6, 6)

    def f(z, w, x):
        a = z
        for k in ops:
            if k == 0:
                a = a * w + x
            elif k == 1:
                a = np.exp(a * 0.3) - a.conj() * 0.5
            elif k == 2:
                a = a / (np.abs(a) + 1.0)
            elif k == 3:
                a = np.sqrt(a * a + 4.0)
            elif k == 4:
                a = np.roll(a, 1) * 1j + np.real(a)
            else:
                a = np.cumsum(a) * x
        return a

    check(f, [z, w, x], seed)


def test_real_duals_have_the_complex_parts_floats_have():
    assert d.grad(lambda x: (x * x).real + (x * x).imag + x.conjugate())(3.0) == 7.0
    assert d.jvp(lambda x: x.real * x.imag, (2.0,), (1.0,)) == (0.0, 0.0)
    with pytest.raises(TypeError, match="real primal"):
        d.jvp(lambda x: x, (np.ones(2),), (np.ones(2) * 1j,))


def test_angle_of_real_duals_is_constant():
    # np.angle of a real dual is 0 or pi, piecewise constant: derivative 0 (it used to fail
    # in numpy's own code on the object array); a complex argument keeps its rule
    x = np.array([0.3, -1.2, 0.0])
    v, g = d.value_and_grad(lambda a: np.angle(a).sum())(x)
    assert v == np.angle(x).sum() and np.array_equal(g, np.zeros(3))
    assert d.grad(lambda a: np.angle(a))(-0.3) == 0.0
    g = d.grad(lambda a: np.angle(a + 1j * a * a).sum())(x[:2])
    assert np.allclose(g, 1.0 / (1.0 + x[:2] ** 2), rtol=1e-14)  # d/da atan(a) on both sides


def test_complex_rule_tables_load_on_first_use():
    """``import deltaad`` does not import the complex rule families; the first complex value a
    program differentiates (or deltaad.cmath) loads them."""
    import subprocess
    import sys
    code = (
        "import sys, numpy as np, deltaad as d\n"
        "assert 'deltaad.numpy.complex_rules' not in sys.modules\n"
        "assert 'deltaad.cmath' not in sys.modules\n"
        "d.grad(lambda x: np.sum(np.sin(x) ** 2))(np.arange(3.0))\n"
        "assert 'deltaad.numpy.complex_rules' not in sys.modules\n"
        "assert abs(d.grad(lambda x: abs(np.exp(1j * x)))(0.3)) < 1e-15\n"
        "assert 'deltaad.numpy.complex_rules' in sys.modules\n"
        "from deltaad import cmath\n"
        "assert cmath.exp(0j) == 1\n")
    subprocess.run([sys.executable, "-c", code], check=True)
