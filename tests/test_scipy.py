"""deltaad's derivatives as scipy's callbacks: ``jac``, ``hess``, ``hessp`` of every
``scipy.optimize.minimize`` method that takes them, constraint Jacobians, ``least_squares``,
``root``, ``curve_fit`` and ``solve_ivp``. What deltaad hands scipy must be exactly what scipy
expects -- float64 ndarrays of the right shape, a real number for a value -- never a 0-d dual
or an object array; the results are checked against scipy's own derivatives (``rosen_der``,
``rosen_hess``, ``rosen_hess_prod``) and against runs with them."""

import numpy as np
import pytest

import deltaad

so = pytest.importorskip("scipy.optimize")
integrate = pytest.importorskip("scipy.integrate")

X0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])


def rosen_numpy(x):
    """Rosenbrock's function as a user writes it with numpy."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def plain(shape):
    """A callback checker: the result is a float64 ndarray of ``shape`` (not a dual, not an
    object array, not a 0-d array)."""

    def check(r):
        assert type(r) is np.ndarray, type(r)
        assert r.dtype == np.float64 and r.shape == shape, (r.dtype, r.shape)
        return r

    return check


def real(v):
    assert type(v) in (float, np.float64), type(v)
    return v


def watched(fn, check):
    def w(*args):
        return check(fn(*args))

    return w


def watched_pair(fn, shape):
    def w(*args):
        v, g = fn(*args)
        return real(v), plain(shape)(g)

    return w


@pytest.mark.parametrize("f", [so.rosen, rosen_numpy], ids=["scipy.rosen", "numpy"])
def test_derivatives_are_scipys(f):
    n = X0.size
    rng = np.random.default_rng(0)
    for x in (X0, rng.normal(size=n), rng.normal(size=n) * 3):
        g = plain((n,))(deltaad.grad(f)(x))
        np.testing.assert_allclose(g, so.rosen_der(x), rtol=1e-13, atol=1e-12)
        H = plain((n, n))(deltaad.hessian(f)(x))
        np.testing.assert_allclose(H, so.rosen_hess(x), rtol=1e-13, atol=1e-11)
        p = rng.normal(size=n)
        hp = plain((n,))(deltaad.hvp(f, (x,), (p,)))
        np.testing.assert_allclose(hp, so.rosen_hess_prod(x, p), rtol=1e-12, atol=1e-10)
        v, g2 = deltaad.value_and_grad(f)(x)
        assert real(v) == so.rosen(x) or v == pytest.approx(so.rosen(x), rel=1e-14)
        np.testing.assert_array_equal(g2, g)
        # the Jacobian of scipy's own rosen_der is rosen_hess (its code through object arrays)
        np.testing.assert_allclose(plain((n, n))(deltaad.jacrev(so.rosen_der)(x)),
                                   so.rosen_hess(x), rtol=1e-13, atol=1e-11)


GRAD_ONLY = ["BFGS", "L-BFGS-B", "CG", "SLSQP", "TNC"]
WITH_HESS = ["Newton-CG", "trust-ncg", "trust-krylov", "trust-exact", "trust-constr", "dogleg"]
WITH_HESSP = ["Newton-CG", "trust-ncg", "trust-krylov", "trust-constr"]


def _same_run(method, mine, theirs):
    """deltaad's derivatives give scipy's run with its own closed-form derivatives: the same
    minimum, as far as the method's stopping rule pins it down (their last bits differ, and a
    loose stopping rule can turn that into a different last step)."""
    err = np.abs(theirs.x - 1.0).max()
    np.testing.assert_allclose(mine.x, theirs.x, rtol=0, atol=max(1e-9, 10 * err))
    assert mine.success == theirs.success


@pytest.mark.parametrize("f", [so.rosen, rosen_numpy], ids=["scipy.rosen", "numpy"])
@pytest.mark.parametrize("method", GRAD_ONLY + WITH_HESS)
def test_minimize_jac_and_hess(method, f):
    n = X0.size
    x0 = X0 if method != "dogleg" else np.array([1.1, 1.05, 0.95, 1.02, 0.98])  # needs H > 0
    kw_mine = {"jac": watched(deltaad.grad(f), plain((n,)))}
    kw_theirs = {"jac": so.rosen_der}
    if method in WITH_HESS:
        kw_mine["hess"] = watched(deltaad.hessian(f), plain((n, n)))
        kw_theirs["hess"] = so.rosen_hess
    mine = so.minimize(f, x0, method=method, **kw_mine)
    theirs = so.minimize(so.rosen, x0, method=method, **kw_theirs)
    _same_run(method, mine, theirs)
    # value_and_grad as jac=True
    both = so.minimize(watched_pair(deltaad.value_and_grad(f), (n,)), x0, jac=True,
                       method=method, **({"hess": kw_mine["hess"]} if method in WITH_HESS else {}))
    _same_run(method, both, theirs)


@pytest.mark.parametrize("method", WITH_HESSP)
def test_minimize_hessp(method):
    n = X0.size
    hessp = watched(lambda x, p: deltaad.hvp(rosen_numpy, (x,), (p,)), plain((n,)))
    mine = so.minimize(rosen_numpy, X0, jac=deltaad.grad(rosen_numpy), hessp=hessp, method=method)
    theirs = so.minimize(so.rosen, X0, jac=so.rosen_der, hessp=so.rosen_hess_prod, method=method)
    _same_run(method, mine, theirs)


def test_slsqp_and_trust_constr_with_constraint_jacobians():
    def f(x):
        return (x[0] - 1.0) ** 2 + (x[1] - 2.5) ** 2

    def cons(x):  # three inequality constraints, >= 0
        return np.array([x[0] - 2.0 * x[1] + 2.0, -x[0] - 2.0 * x[1] + 6.0, -x[0] + 2.0 * x[1] + 2.0])

    def circle(x):  # one equality constraint
        return x[0] ** 2 + x[1] ** 2 - 3.0

    jac_cons = watched(deltaad.jacrev(cons), plain((3, 2)))
    jac_circle = watched(deltaad.jacrev(circle), plain((2,)))
    x0 = np.array([2.0, 0.0])
    mine = so.minimize(f, x0, jac=watched(deltaad.grad(f), plain((2,))), method="SLSQP",
                       constraints=[{"type": "ineq", "fun": cons, "jac": jac_cons},
                                    {"type": "eq", "fun": circle, "jac": jac_circle}])
    theirs = so.minimize(f, x0, jac=lambda x: np.array([2 * (x[0] - 1), 2 * (x[1] - 2.5)]),
                         method="SLSQP",
                         constraints=[{"type": "ineq", "fun": cons,
                                       "jac": lambda x: np.array([[1.0, -2.0], [-1.0, -2.0], [-1.0, 2.0]])},
                                      {"type": "eq", "fun": circle, "jac": lambda x: 2 * x}])
    assert mine.success and theirs.success
    np.testing.assert_allclose(mine.x, theirs.x, rtol=1e-8)
    nl = so.NonlinearConstraint(circle, 0.0, 0.0, jac=jac_circle,
                                hess=lambda x, v: v[0] * deltaad.hessian(circle)(x))
    tc = so.minimize(f, x0, jac=deltaad.grad(f), hess=watched(deltaad.hessian(f), plain((2, 2))),
                     method="trust-constr", constraints=[nl])
    assert tc.success
    np.testing.assert_allclose(circle(tc.x), 0.0, atol=1e-8)


def test_least_squares_root_curve_fit():
    t = np.linspace(0.0, 3.0, 20)
    y = 2.5 * np.exp(-1.3 * t) + 0.5

    def resid(p):
        return p[0] * np.exp(-p[1] * t) + p[2] - y

    jac = watched(deltaad.jacrev(resid), plain((20, 3)))
    r = so.least_squares(resid, np.array([1.0, 1.0, 0.0]), jac=jac)
    np.testing.assert_allclose(r.x, [2.5, 1.3, 0.5], rtol=1e-8)
    r2 = so.least_squares(resid, np.array([1.0, 1.0, 0.0]), jac=watched(deltaad.jacfwd(resid), plain((20, 3))))
    np.testing.assert_allclose(r2.x, r.x, rtol=1e-12)

    def F(x):
        return np.array([x[0] + 0.5 * (x[0] - x[1]) ** 3 - 1.0, 0.5 * (x[1] - x[0]) ** 3 + x[1]])

    def F_jac(x):
        d = 1.5 * (x[0] - x[1]) ** 2
        return np.array([[1.0 + d, -d], [-d, 1.0 + d]])

    for method in ("hybr", "lm"):
        sol = so.root(F, np.array([0.0, 0.0]), jac=watched(deltaad.jacobian(F), plain((2, 2))),
                      method=method)
        ref = so.root(F, np.array([0.0, 0.0]), jac=F_jac, method=method)
        assert sol.success
        np.testing.assert_allclose(sol.x, ref.x, rtol=1e-10, atol=1e-12)

    def model(x, a, b, c):
        return a * np.exp(-b * x) + c

    def model_jac(x, *p):
        return deltaad.jacrev(lambda q: model(x, *q))(np.array(p))

    popt, _ = so.curve_fit(model, t, y, p0=[1.0, 1.0, 0.0], jac=watched(model_jac, plain((20, 3))))
    np.testing.assert_allclose(popt, [2.5, 1.3, 0.5], rtol=1e-8)


@pytest.mark.parametrize("method", ["Radau", "BDF", "LSODA"])
def test_solve_ivp_jac(method):
    mu = 5.0

    def vdp(t, y):  # van der Pol, stiff
        return np.array([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])

    def vdp_jac(t, y):
        return np.array([[0.0, 1.0], [-2.0 * mu * y[0] * y[1] - 1.0, mu * (1.0 - y[0] ** 2)]])

    jac = watched(deltaad.jacrev(vdp, argnums=1), plain((2, 2)))
    y0 = np.array([2.0, 0.0])
    for t, y in [(0.0, y0), (1.3, np.array([-1.2, 0.7]))]:
        np.testing.assert_allclose(jac(t, y), vdp_jac(t, y), rtol=1e-15, atol=1e-15)
    mine = integrate.solve_ivp(vdp, (0.0, 10.0), y0, method=method, jac=jac, rtol=1e-8, atol=1e-10)
    theirs = integrate.solve_ivp(vdp, (0.0, 10.0), y0, method=method, jac=vdp_jac, rtol=1e-8, atol=1e-10)
    assert mine.success
    np.testing.assert_allclose(mine.y[:, -1], theirs.y[:, -1], rtol=1e-9, atol=1e-9)
