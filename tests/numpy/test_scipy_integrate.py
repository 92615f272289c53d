"""scipy.integrate's ``quad``, ``solve_ivp`` and ``odeint`` on duals (deltaad.numpy.scipy_integrate).

Hypothesis over parameters: derivatives against the closed forms of integrals and ODE
solutions (to scipy's tolerance: the derivative is the discretisation's), reverse against
forward (the same discrete method, so to rounding), second order; values are scipy's own, bit
for bit; moving limits give the Leibniz terms; refused cases name the call; plain calls and
calls outside differentiation reach scipy unchanged.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d

integrate = pytest.importorskip("scipy.integrate")
from scipy.integrate import dblquad, odeint, quad, solve_ivp  # noqa: E402 (after the skip)

ks = st.floats(0.2, 3.0)
TIGHT = dict(rtol=1e-11, atol=1e-13)


def _near(a, b, rel):
    assert abs(a - b) <= rel * max(1.0, abs(b)), (a, b)


@settings(max_examples=15, deadline=None)
@given(ks)
def test_quad_in_a_closure(k):
    g = lambda k: quad(lambda x: np.exp(-k * x * x), 0.0, 1.0)[0]  # noqa: E731
    val, grad = d.value_and_grad(g)(k)
    assert val == quad(lambda x: np.exp(-k * x * x), 0.0, 1.0)[0]  # scipy's value, bit for bit
    ref = -quad(lambda x: x * x * np.exp(-k * x * x), 0.0, 1.0, epsabs=1e-13)[0]
    _near(grad, ref, 1e-9)
    _near(d.grad(lambda k: quad(lambda x: d.math.exp(-k * x * x), 0.0, 1.0)[0])(k), ref, 1e-9)
    _near(d.jvp(g, (k,), (1.0,))[1], grad, 1e-13)
    _near(d.hessian(g)(k), quad(lambda x: x ** 4 * np.exp(-k * x * x), 0.0, 1.0)[0], 1e-8)


@settings(max_examples=15, deadline=None)
@given(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0))
def test_quad_moving_limits_give_the_leibniz_terms(a, b):
    ga, gb = d.grad(lambda a, b: quad(np.sin, a, b)[0], argnums=(0, 1))(a, b)
    _near(ga, -math.sin(a), 1e-12)
    _near(gb, math.sin(b), 1e-12)


@settings(max_examples=10, deadline=None)
@given(ks)
def test_quad_infinite_ranges(k):
    _near(d.grad(lambda k: quad(lambda x: np.exp(-k * x), 0.0, np.inf)[0])(k), -1 / k ** 2,
          1e-8)
    _near(d.grad(lambda k: quad(lambda x: np.exp(-k * x), np.inf, 1.0)[0])(k),
          math.exp(-k) / k + math.exp(-k) / k ** 2, 1e-8)
    _near(d.grad(lambda b: quad(lambda x: np.exp(k * x), -np.inf, b)[0])(0.5),
          math.exp(0.5 * k), 1e-8)
    _near(d.grad(lambda k: quad(lambda x: np.exp(-k * x * x), -np.inf, np.inf)[0])(k),
          -0.5 * math.sqrt(math.pi) * k ** -1.5, 1e-8)


def test_quad_args_points_full_output_and_nesting():
    k = 0.7
    _near(d.grad(lambda k: quad(lambda x, c: np.exp(-c * x), 0, 2, args=(k,))[0])(k),
          -quad(lambda x: x * np.exp(-k * x), 0, 2)[0], 1e-12)
    _near(d.grad(lambda k: quad(lambda x: abs(x - 0.5) * k ** 2, 0, 1, points=[0.5])[0])(k),
          2 * k * 0.25, 1e-12)
    seen = []
    _near(d.grad(lambda k: seen.append(quad(lambda x: np.exp(-k * x), 0, 1, full_output=1))
                 or seen[-1][0])(1.0), -quad(lambda x: x * np.exp(-x), 0, 1)[0], 1e-12)
    assert len(seen[0]) == 3 and "alist" in seen[0][2]
    _near(d.grad(lambda k: dblquad(lambda y, x: np.exp(-k * x * y), 0, 1, 0, 1)[0])(k),
          -dblquad(lambda y, x: x * y * np.exp(-k * x * y), 0, 1, 0, 1)[0], 1e-9)
    # nothing dual reaches quad: scipy's result, unchanged
    assert d.grad(lambda k: k + quad(np.exp, 0, 1)[0])(k) == 1.0


def test_quad_weight_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="scipy.integrate.quad with weight='cos'"):
        d.grad(lambda k: quad(lambda x: k * x, 0, 1, weight="cos", wvar=2.0)[0])(1.0)


def _decay(method, **kw):
    return lambda k: solve_ivp(lambda t, y: -k * y, (0.0, 2.0), [1.0], method=method,
                               **TIGHT, **kw).y[0, -1]


@settings(max_examples=8, deadline=None)
@given(ks, st.sampled_from(["RK23", "RK45", "DOP853"]))
def test_solve_ivp_decay(k, method):
    f = _decay(method)
    val, grad = d.value_and_grad(f)(k)
    assert val == solve_ivp(lambda t, y: -k * y, (0.0, 2.0), [1.0], method=method,
                            **TIGHT).y[0, -1]
    _near(grad, -2.0 * math.exp(-2.0 * k), 1e-8 if method != "RK23" else 1e-6)
    _near(d.jvp(f, (k,), (1.0,))[1], grad, 1e-12)
    if method == "RK45":
        _near(d.hessian(f)(k), 4.0 * math.exp(-2.0 * k), 1e-7)


def _lotka(p, **kw):
    a, b = p[0], p[1]
    s = solve_ivp(lambda t, y: [a * y[0] - b * y[0] * y[1], -y[1] + 0.5 * y[0] * y[1]],
                  (0.0, 5.0), [1.0, 1.0], rtol=1e-9, atol=1e-12, **kw)
    return s.y[0, -1] + s.y[1, -1]


@settings(max_examples=5, deadline=None)
@given(st.floats(0.8, 1.2), st.floats(0.4, 0.8))
def test_solve_ivp_reverse_forward_and_finite_differences(a, b):
    p = np.array([a, b])
    g = d.grad(_lotka)(p)
    for i, e in enumerate(np.eye(2)):
        _near(d.jvp(_lotka, (p,), (e,))[1], g[i], 1e-10)
        h = 1e-5
        _near((_lotka(p + h * e) - _lotka(p - h * e)) / (2 * h), g[i], 1e-5)


def test_solve_ivp_t_eval_dense_output_args_ends_and_y0():
    k = 0.7
    ts = np.linspace(0.0, 2.0, 7)
    f = lambda k: solve_ivp(lambda t, y: -k * y, (0, 2), [1.0], t_eval=ts, **TIGHT)  # noqa: E731
    assert np.array_equal(d.value(d.jvp(lambda k: f(k).y[0], (k,), (1.0,))[0]), f(k).y[0])
    _near(d.grad(lambda k: f(k).y[0].sum())(k), sum(-t * math.exp(-k * t) for t in ts), 1e-8)
    _near(d.grad(lambda k: solve_ivp(lambda t, y: -k * y, (0, 2), [1.0], dense_output=True,
                                     **TIGHT).sol(1.3)[0])(k), -1.3 * math.exp(-1.3 * k), 1e-8)
    _near(d.grad(lambda k: solve_ivp(lambda t, y, c: -c * y, (0, 2), [1.0], args=(k,),
                                     **TIGHT).y[0, -1])(k), -2 * math.exp(-2 * k), 1e-8)
    _near(d.grad(lambda k: solve_ivp(lambda t, y: -k * y, (0, 2), [1.0], vectorized=True,
                                     **TIGHT).y[0, -1])(k), -2 * math.exp(-2 * k), 1e-8)
    _near(d.grad(lambda T: solve_ivp(lambda t, y: -k * y, (0, T), [1.0], **TIGHT).y[0, -1])(2.0),
          -k * math.exp(-2 * k), 1e-8)
    _near(d.grad(lambda y0: solve_ivp(lambda t, y: -k * y, (0, 2), [y0], **TIGHT).y[0, -1])(2.0),
          math.exp(-2 * k), 1e-8)


@pytest.mark.parametrize("bad, what", [
    (dict(method="Radau"), "method='Radau'"),
    (dict(method="LSODA"), "method='LSODA'"),
    (dict(events=lambda t, y: y[0] - 0.5), "events="),
    (dict(method="DOP853", t_eval=[1.0]), "method='DOP853' and t_eval="),
])
def test_solve_ivp_refusals_name_the_call(bad, what):
    with pytest.raises(NotImplementedError, match="scipy.integrate.solve_ivp with " +
                       what.replace("(", r"\(")):
        d.grad(lambda k: solve_ivp(lambda t, y: -k * y, (0, 2), [1.0], **bad).y[0, -1])(0.5)


@settings(max_examples=8, deadline=None)
@given(ks, st.floats(0.5, 2.0))
def test_odeint_value_is_lsodas_and_derivative_the_solutions(k, y0):
    """odeint on duals: LSODA's value bit for bit; the derivative (an explicit Runge-Kutta
    solve's, as LSODA's steps are internal) against the closed form of y0 exp(-k t), to the
    tolerance asked, at each output time and to second order; forward against reverse."""
    ts = [0.0, 0.3, 1.0, 2.0]

    def f(k, y0):
        return odeint(lambda y, t: -k * y, y0, ts, **TIGHT)

    val = d.value_and_grad(lambda k, y0: f(k, y0)[-1, 0], argnums=(0, 1))(k, y0)
    assert val[0] == f(k, y0)[-1, 0]  # LSODA's own value, bit for bit
    _near(val[1][0], -2.0 * y0 * math.exp(-2.0 * k), 1e-8)
    _near(val[1][1], math.exp(-2.0 * k), 1e-8)
    jac = d.jacrev(lambda k: f(k, y0)[:, 0])(k)
    for i, t in enumerate(ts):
        _near(jac[i], -t * y0 * math.exp(-k * t), 1e-8)
    np.testing.assert_allclose(d.jacfwd(lambda k: f(k, y0)[:, 0])(k), jac, rtol=1e-12, atol=1e-14)
    _near(d.hessian(lambda k: f(k, y0)[-1, 0])(k), 4.0 * y0 * math.exp(-2.0 * k), 1e-6)


@settings(max_examples=5, deadline=None)
@given(st.floats(0.8, 1.4), st.floats(0.2, 0.6), st.booleans())
def test_odeint_lotka_volterra_args_tfirst_full_output(a, b, tfirst):
    """A 2-state model through ``args=`` and a closure, ``tfirst=`` and ``full_output=``:
    reverse and forward agree, and both agree with finite differences of odeint solved tightly
    and with solve_ivp's derivative of the same problem."""
    ts = np.linspace(0.0, 4.0, 9)

    def rhs(y, t, c):
        return [a_ * y[0] - b_ * y[0] * y[1], c * y[0] * y[1] - y[1]]

    def f(p, full=False):
        global a_, b_
        a_, b_ = p[0], p[1]
        fn = (lambda t, y, c: rhs(y, t, c)) if tfirst else rhs
        out = odeint(fn, [1.0, 0.5], ts, args=(0.3,), tfirst=tfirst, full_output=full, **TIGHT)
        if full:
            assert out[1]["message"] == "Integration successful."
            out = out[0]
        return np.sum(out[:, 0] ** 2) + np.sum(out[:, 1])

    p = np.array([a, b])
    g = d.grad(f)(p, True)
    np.testing.assert_allclose(d.jacfwd(f)(p), g, rtol=1e-11)
    h = 1e-4
    fd = [(f(p + h * e) - f(p - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-5)

    def via_ivp(p):
        sol = solve_ivp(lambda t, y: rhs(y, t, 0.3), (0.0, 4.0), [1.0, 0.5], t_eval=ts,
                        **TIGHT)
        return np.sum(sol.y[0] ** 2) + np.sum(sol.y[1])

    global a_, b_
    np.testing.assert_allclose(g, d.grad(lambda p: (globals().update(a_=p[0], b_=p[1]),
                                                    via_ivp(p))[1])(p), rtol=1e-7)


def test_odeint_refusals_and_plain_calls_are_scipys():
    with pytest.raises(NotImplementedError, match=r"scipy\.integrate\.odeint with t holding duals"):
        d.grad(lambda t1: odeint(lambda y, t: -y, 1.0, [0.0, t1])[-1, 0])(1.0)
    with pytest.raises(ValueError, match="monotonically"):  # scipy's own check, first
        d.grad(lambda k: odeint(lambda y, t: -k * y, 1.0, [0.0, 1.0, 0.5])[-1, 0])(0.5)
    assert d.grad(lambda y0: odeint(lambda y, t: -y, y0, [0.0])[-1, 0])(2.0) == 1.0
    assert d.grad(lambda y0: odeint(lambda y, t: -y, y0, [1.0, 1.0])[-1, 0])(2.0) == 1.0
    # repeated output times, as scipy allows
    jac = d.jacrev(lambda k: odeint(lambda y, t: -k * y, 1.0, [0.0, 1.0, 1.0, 2.0], **TIGHT)[:, 0])(0.5)
    np.testing.assert_allclose(jac, [-t * math.exp(-0.5 * t) for t in (0.0, 1.0, 1.0, 2.0)],
                               rtol=1e-8, atol=1e-12)
    for f in (quad, solve_ivp, odeint):
        assert f.deltaad_original.__name__ == f.__name__
    assert quad(np.exp, 0, 1) == quad.deltaad_original(np.exp, 0, 1)
    ref = odeint.deltaad_original(lambda y, t: -0.5 * y, 1.0, [0.0, 1.0])
    assert np.array_equal(odeint(lambda y, t: -0.5 * y, 1.0, [0.0, 1.0]), ref)
    # a differentiation that does not reach the ODE: scipy's own result
    assert d.grad(lambda x: x + odeint(lambda y, t: -0.5 * y, 1.0, [0.0, 1.0])[-1, 0])(1.0) == 1.0


def test_an_error_in_the_integrand_propagates_and_closes_the_trace():
    def bad(x):
        raise ValueError("no integrand here")

    for call in (lambda k: quad(lambda x: k * bad(x), 0, 1)[0],
                 lambda k: solve_ivp(lambda t, y: k * bad(t), (0, 1), [1.0]).y[0, -1],
                 lambda k: odeint(lambda y, t: k * bad(t), 1.0, [0.0, 1.0])[-1, 0]):
        with pytest.raises(ValueError, match="no integrand here"):
            d.grad(call)(0.5)
