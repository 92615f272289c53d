"""scipy.optimize's solvers inside a differentiated function (deltaad.implicit).

Against closed forms of the implicit function's derivatives (a cubic's root, a separable
objective's minimiser, a linear least-squares fit), reverse against forward, and second order
(the Newton steps deltaad adds for it); values are scipy's own solution; constraints, active
bounds and failures raise an error naming the solver; scipy's functions are untouched outside
differentiation.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d

so = pytest.importorskip("scipy.optimize")


def _cubic_root(p):
    a, b = p[0], p[1]
    return so.fsolve(lambda x: x ** 3 + a * x - b, 1.0, xtol=1e-13)[0]


@settings(max_examples=15, deadline=None)
@given(st.floats(0.5, 3.0), st.floats(-3.0, 3.0))
def test_fsolve_first_and_second_order(a, b):
    p = np.array([a, b])
    x = _cubic_root(p)
    val, g = d.value_and_grad(_cubic_root)(p)
    assert val == x
    G = 3 * x * x + a
    xa, xb = -x / G, 1.0 / G
    assert g == pytest.approx([xa, xb], rel=1e-9, abs=1e-12)
    assert d.jvp(_cubic_root, (p,), (np.array([1.0, 2.0]),))[1] == pytest.approx(xa + 2 * xb,
                                                                                 rel=1e-9)
    Ga, Gb = 6 * x * xa + 1.0, 6 * x * xb
    xaa = -(xa * G - x * Ga) / G ** 2
    xbb = -Gb / G ** 2
    h = d.hessian(_cubic_root)(p)
    assert h[0, 0] == pytest.approx(xaa, rel=1e-7, abs=1e-10)
    assert h[1, 1] == pytest.approx(xbb, rel=1e-7, abs=1e-10)


def _separable(t, method):
    res = so.minimize(lambda x: np.sum((x - t) ** 2) + np.sum(x ** 4), np.zeros(2),
                      method=method, jac=d.grad(lambda x: np.sum((x - t) ** 2) + np.sum(x ** 4)),
                      tol=1e-12)
    return res


@settings(max_examples=10, deadline=None)
@given(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0), st.sampled_from(["BFGS", "L-BFGS-B", "CG"]))
def test_minimize_argmin_and_optimal_value(t0, t1, method):
    t = np.array([t0, t1])
    res = _separable(t, method)
    if not res.success:  # scipy's own run stops short (CG's precision loss at t = (0, 1.25)):
        return           # no minimum to hold the closed forms against
    x = res.x
    g = d.grad(lambda t: _separable(t, method).fun + _separable(t, method).x[0])(t)
    dx0 = 2.0 / (2.0 + 12.0 * x[0] ** 2)
    # the closed forms hold at the exact minimum; scipy's x misses it by its residual, which
    # L-BFGS-B leaves near 1e-8 whatever tol says (a random draw missed abs=1e-8 by 2e-8)
    tol = 1e-7 if method == "L-BFGS-B" else 1e-8
    assert g[0] == pytest.approx(-2 * (x[0] - t0) + dx0, rel=1e-6, abs=tol)
    assert g[1] == pytest.approx(-2 * (x[1] - t1), rel=1e-6, abs=tol)  # the envelope theorem
    j = d.jacfwd(lambda t: _separable(t, method).x)(t)
    assert np.allclose(j, np.diag(2.0 / (2.0 + 12.0 * x ** 2)), rtol=1e-6, atol=1e-9)


def test_minimize_scalar_root_and_least_squares():
    ms = lambda t: so.minimize_scalar(lambda x: (x - t) ** 2 + x ** 4,  # noqa: E731
                                      options=dict(xtol=1e-12)).x
    x = ms(0.5)
    assert d.grad(ms)(0.5) == pytest.approx(2.0 / (2.0 + 12.0 * x * x), rel=1e-6)

    def two(p):
        return so.root(lambda x: [x[0] + p[0] * x[1] - 1.0, x[0] * x[1] - p[1]], [0.5, 0.5],
                       tol=1e-13).x

    p = np.array([0.3, 0.1])
    x = two(p)
    J = np.array([[1.0, p[0]], [x[1], x[0]]])  # d(equations)/dx
    Fp = np.array([[x[1], 0.0], [0.0, -1.0]])  # d(equations)/dp
    assert np.allclose(d.jacrev(two)(p), -np.linalg.solve(J, Fp), rtol=1e-9, atol=1e-12)
    assert np.allclose(d.jacfwd(two)(p), d.jacrev(two)(p), rtol=1e-12, atol=1e-14)

    A = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    fit = lambda y: so.least_squares(lambda c: A @ c - y, np.zeros(2)).x  # noqa: E731
    assert np.allclose(d.jacrev(fit)(np.array([1.0, 2.0, 2.5])), np.linalg.pinv(A), atol=1e-9)


def test_what_has_no_derivative_raises_by_name():
    with pytest.raises(NotImplementedError, match="minimize .*on a bound"):
        d.grad(lambda t: so.minimize(lambda x: (x[0] - t) ** 2, [1.5],
                                     bounds=[(1.0, 2.0)]).x[0])(0.5)
    with pytest.raises(NotImplementedError, match="minimize .*constraints"):
        d.grad(lambda t: so.minimize(lambda x: (x[0] - t) ** 2, [0.0], constraints={
            "type": "eq", "fun": lambda x: x[0] - 1.0}).x[0])(0.5)
    with pytest.raises(NotImplementedError, match="fsolve .*did not converge"):
        d.grad(lambda t: so.fsolve(lambda x: x * x + t, 1.0)[0])(1.0)


def test_plain_calls_are_scipys():
    for f in (so.fsolve, so.root, so.minimize, so.minimize_scalar, so.least_squares):
        assert f.deltaad_original.__name__ == f.__name__
    r = so.minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(2))
    assert np.array_equal(r.x, so.minimize.deltaad_original(lambda x: np.sum((x - 1.0) ** 2),
                                                             np.zeros(2)).x)
    # nothing dual reaches the solver inside a differentiation: scipy's result unchanged
    assert d.grad(lambda k: k * so.minimize(lambda x: np.sum((x - 1.0) ** 2),
                                            np.zeros(2)).x[0])(2.0) == r.x[0]
