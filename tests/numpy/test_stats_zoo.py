"""A zoo of scipy.stats's distributions on duals, each method in each argument: x (or q), loc,
scale and the shape parameters of the continuous ones, the real parameters of the discrete ones.
Each derivative matches central finite differences and forward mode (jvp) agrees with reverse
(grad); the value is scipy's own, to the bit. What deltaad does not differentiate raises an error
naming the function -- listed here, so that a new silent failure or a new success shows up."""

import math
import re
import warnings

import numpy as np
import pytest

import deltaad as ad

stats = pytest.importorskip("scipy.stats")

CONTINUOUS = {
    "norm": (), "t": (4.5,), "chi2": (3.5,), "gamma": (2.5,), "beta": (2.5, 3.5), "expon": (),
    "lognorm": (0.7,), "uniform": (), "laplace": (), "logistic": (), "cauchy": (),
    "weibull_min": (1.7,), "pareto": (2.5,), "f": (4.5, 6.5), "invgauss": (0.8,),
    "skewnorm": (1.5,), "gumbel_r": (), "exponnorm": (1.5,), "truncnorm": (-1.0, 2.0),
    "vonmises": (1.5,), "rayleigh": (), "invgamma": (2.5,), "halfnorm": (),
    "genextreme": (0.2,), "loggamma": (1.5,), "nakagami": (1.5,), "gompertz": (1.5,),
    "burr": (3.0, 2.0), "kappa3": (1.0,), "powerlaw": (1.5,), "triang": (0.3,),
}
DISCRETE = {"poisson": (3.5,), "binom": (10, 0.3), "nbinom": (5, 0.4), "geom": (0.3,),
            "bernoulli": (0.3,)}
DENSITY = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]
CUMULATIVE = ["cdf", "logcdf", "sf", "logsf"]

# What raises, and the function its error must name: scipy's C code (von Mises' cdf, the root
# finder of numerical quantiles) works on floats; some private methods write into arrays in place
# or run numpy's object loops. (The shape parameters of the incomplete gamma and beta functions --
# t, chi2, gamma, beta, f, invgamma, loggamma, nakagami in df, a, b -- differentiate: first order.)
PPFVEC = r"self\._ppfvec\(\.\.\.\) converts a deltaad Dual"


def expected_error(name, method, arg):
    """The pattern of the error ``name.method`` in ``arg`` raises, or None if it differentiates."""
    quantile_q = method in ("ppf", "isf") and arg == "q"  # (loc is added to a plain quantile)
    if name == "vonmises" and (method in CUMULATIVE or quantile_q):
        # (its quantile is brentq on the cdf: the root differentiates, the compiled cdf not)
        return r"_stats\.von_mises_cdf\(\.\.\.\) converts a deltaad Dual"
    if name == "exponnorm" and method in ("logcdf", "logsf") and arg == "shape0":
        return PPFVEC  # scipy computes the median with its vectorized numerical _ppf there
    if name == "truncnorm" and (method in ("cdf", "logcdf") or method == "isf" and quantile_q):
        return r"scipy\.stats\.truncnorm\.%s on dual numbers" % method
    if name == "truncnorm" and (method in ("sf", "logsf") or method == "ppf" and quantile_q):
        return r"storing a deltaad array dual into a float array \(out\[case_\w+\] = \.\.\.\)"
    if name == "invgauss" and quantile_q:
        return r"scipy\.stats\.invgauss\.%s on dual numbers" % method
    if name == "nbinom" and method == "logcdf":
        return r"array duals are immutable"
    return None


def _cases(name):
    """(method, argument, f, x0) of the distribution ``name``."""
    warnings.simplefilter("ignore")
    out = []
    if name in CONTINUOUS:
        sh = CONTINUOUS[name]
        dist = getattr(stats, name)
        x = float(dist.ppf(0.4, *sh, loc=0.3, scale=1.3))
        for m in DENSITY:
            f = getattr(dist, m)
            out.append((m, "x", lambda v, f=f: f(v, *sh, loc=0.3, scale=1.3), x))
            out.append((m, "loc", lambda v, f=f: f(x, *sh, loc=v, scale=1.3), 0.3))
            out.append((m, "scale", lambda v, f=f: f(x, *sh, loc=0.3, scale=v), 1.3))
            for i in range(len(sh)):
                if name == "truncnorm":  # its shapes are the truncation points
                    continue
                out.append((m, "shape%d" % i, lambda v, f=f, i=i: f(
                    x, *[v if j == i else s for j, s in enumerate(sh)], loc=0.3, scale=1.3),
                    float(sh[i])))
        for m in ("ppf", "isf"):
            f = getattr(dist, m)
            out.append((m, "q", lambda v, f=f: f(v, *sh, loc=0.3, scale=1.3), 0.4))
            out.append((m, "loc", lambda v, f=f: f(0.4, *sh, loc=v, scale=1.3), 0.3))
    else:
        sh = DISCRETE[name]
        dist = getattr(stats, name)
        k = float(dist.ppf(0.5, *sh))
        for m in ("pmf", "logpmf", "cdf", "sf", "logcdf", "logsf"):
            f = getattr(dist, m)
            for i in range(len(sh)):
                if isinstance(sh[i], int):  # a count: not differentiable
                    continue
                out.append((m, "shape%d" % i, lambda v, f=f, i=i: f(
                    k, *[v if j == i else s for j, s in enumerate(sh)]), float(sh[i])))
    return out


NAMES = list(CONTINUOUS) + list(DISCRETE)


@pytest.mark.parametrize("name", NAMES)
def test_distribution_derivatives(name):
    with warnings.catch_warnings():
        for method, arg, f, x0 in _cases(name):
            label = "%s.%s/%s" % (name, method, arg)
            want = expected_error(name, method, arg)
            if want is not None:
                with pytest.raises((TypeError, NotImplementedError), match="") as info:
                    ad.grad(f)(x0)
                assert re.search(want, str(info.value)), (label, str(info.value))
                continue
            v, g = ad.value_and_grad(f)(x0)
            plain = f(x0)
            assert v == plain, (label, v, plain)  # scipy's own value
            h = 1e-6
            fd = (f(x0 + h) - f(x0 - h)) / (2 * h)
            assert math.isfinite(g), label
            assert abs(g - fd) <= 1e-4 * max(1.0, abs(fd)), (label, g, fd)
            _, t = ad.jvp(f, (x0,), (1.0,))
            assert abs(float(t) - g) <= 1e-12 * max(1.0, abs(g)), (label, t, g)


def test_arrays_of_points():
    """Array arguments: the gradient of a sum is the elementwise derivative (rules are
    elementwise primitives, and the private ufuncs broadcast)."""
    x = np.array([0.2, 0.5, 0.9])
    for f in (lambda v: stats.beta.pdf(x, v, 3.5), lambda v: stats.skewnorm.cdf(x, v),
              lambda v: stats.f.cdf(x * 3, 4.5, 6.5, scale=v),
              lambda v: stats.binom.cdf(np.array([1.0, 3.0, 7.0]), 10, v),
              lambda v: stats.nbinom.pmf(np.array([0.0, 3.0]), v, 0.4)):
        g = ad.grad(lambda v: np.sum(f(v)))(0.7)
        fd = (np.sum(f(0.7 + 1e-6)) - np.sum(f(0.7 - 1e-6))) / 2e-6
        assert abs(g - fd) <= 1e-4 * max(1.0, abs(fd))


def test_private_ufuncs_refuse_counts():
    """The count k of the binomial ufuncs is not differentiable: an error naming the ufunc."""
    from scipy.special import _ufuncs as u
    with pytest.raises(NotImplementedError, match=r"_ufuncs\._binom_pmf has no derivative in "
                                                  r"the count k"):
        ad.grad(lambda k: u._binom_pmf(k, 10.0, 0.3))(3.0)
    with pytest.raises(NotImplementedError, match=r"_ufuncs\._nbinom_cdf has no derivative in "
                                                  r"the count k"):
        ad.grad(lambda k: u._nbinom_cdf(k, 5.0, 0.3))(3.0)


@pytest.mark.parametrize("case", ["_beta_ppf a", "_beta_ppf b", "_nbinom_cdf n", "_nbinom_sf n"])
def test_private_ufuncs_in_incomplete_beta_parameters(case):
    """The quantile of beta in a, b and nbinom's cumulative functions in n need the incomplete
    beta function's derivatives in its parameters (numerical, first order): against central
    differences and forward mode; a second derivative is an error naming the ufunc."""
    from scipy.special import _ufuncs as u
    f, x0 = {
        "_beta_ppf a": (lambda v: u._beta_ppf(0.4, v, 3.5), 2.5),
        "_beta_ppf b": (lambda v: u._beta_ppf(0.4, 2.5, v), 3.5),
        "_nbinom_cdf n": (lambda v: u._nbinom_cdf(3.0, v, 0.4), 5.0),
        "_nbinom_sf n": (lambda v: u._nbinom_sf(3.0, v, 0.4), 5.0),
    }[case]
    v, g = ad.value_and_grad(f)(x0)
    assert v == f(x0)
    fd = (f(x0 + 1e-6) - f(x0 - 1e-6)) / 2e-6
    assert abs(g - fd) <= 1e-6 * max(1.0, abs(fd)), (g, fd)
    _, t = ad.jvp(f, (x0,), (1.0,))
    assert float(t) == g
    name = case.split()[0]
    with pytest.raises(NotImplementedError, match=r"%s differentiates in \w to first order "
                                                  r"only" % name):
        ad.hessian(f)(x0)


@pytest.mark.parametrize("solver", ["brentq", "brenth", "ridder", "bisect", "root_scalar"])
def test_root_finders_differentiate_by_the_implicit_function_theorem(solver):
    """The root r(q) of x^3 + q x - 2 = 0: scipy's own root (to the bit), dr/dq = -r / (3 r^2 +
    q), in reverse and forward mode, for duals in args= and for duals f closes over; the second
    derivative too (d2r/dq2 = -(r' G - r G') / G^2, G = 3 r^2 + q, G' = 6 r r' + 1)."""
    optimize = pytest.importorskip("scipy.optimize")

    def solve(f, args=()):
        if solver == "root_scalar":
            return optimize.root_scalar(f, args=args, bracket=[-5.0, 5.0], method="brentq").root
        return getattr(optimize, solver)(f, -5.0, 5.0, args=args)

    def with_args(q):
        return solve(lambda x, q: x ** 3 + q * x - 2.0, (q,))

    def closure(q):
        return solve(lambda x: x ** 3 + q * x - 2.0)

    for f in (with_args, closure):
        for q in (0.4, 2.5, -1.0):
            r = f(q)
            v, g = ad.value_and_grad(f)(q)
            assert v == r  # scipy's root, to the bit
            want = -r / (3 * r * r + q)
            assert abs(g - want) <= 1e-10 * abs(want), (f, q, g, want)
            assert float(ad.jvp(f, (q,), (1.0,))[1]) == pytest.approx(g, rel=1e-13)
    for f in (with_args, closure):
        q = 0.4
        r = f(q)
        G = 3 * r * r + q
        dr = -r / G
        d2r = -(dr * G - r * (6 * r * dr + 1.0)) / G ** 2
        assert ad.hessian(f)(q) == pytest.approx(d2r, rel=1e-8)
        assert ad.grad(ad.grad(f))(q) == pytest.approx(d2r, rel=1e-8)
    assert abs(solve(lambda x: x - 0.4) - 0.4) < 1e-9  # plain calls: scipy's own


def test_a_root_in_an_array_program_and_a_numerical_quantile():
    """Duals of an array program in args=; scipy.stats's numerical ppf (brentq on the cdf)."""
    optimize = pytest.importorskip("scipy.optimize")

    def f(w):
        roots = [optimize.brentq(lambda x, c: np.tanh(x) - c, -10.0, 10.0, args=(c,))
                 for c in np.tanh(w) * 0.5]
        return sum(roots)

    w = np.array([0.3, -0.8])
    g = ad.grad(f)(w)
    fd = np.array([(f(w + e) - f(w - e)) / 2e-6 for e in np.eye(2) * 1e-6])
    assert np.allclose(g, fd, rtol=1e-7)
    ppf = lambda q: stats.exponnorm.ppf(q, 1.5, loc=0.3, scale=1.3)  # noqa: E731
    d = 1.0 / stats.exponnorm.pdf(ppf(0.4), 1.5, loc=0.3, scale=1.3)  # 1 / density
    assert abs(ad.grad(ppf)(0.4) - d) <= 1e-9 * d


def test_putmask_and_place_with_an_empty_mask_are_no_ops():
    def f(v):
        a = np.array([1.0, 2.0]) * v
        np.putmask(a, np.array([False, False]), 0.0)
        np.place(a, np.array([False, False]), [0.0])
        return np.sum(a)

    assert ad.grad(f)(2.0) == 3.0
    with pytest.raises(TypeError, match=r"numpy\.putmask\(a, mask, values\) writes into a"):
        ad.grad(lambda v: np.putmask(np.array([1.0, 2.0]) * v, np.array([True, False]), 0.0))(1.0)


def _private_cases():
    from scipy.special import _ufuncs as u
    return {
        "_beta_pdf x": (lambda v: u._beta_pdf(v, 2.5, 3.5), 0.3),
        "_beta_pdf a": (lambda v: u._beta_pdf(0.3, v, 3.5), 2.5),
        "_beta_pdf b": (lambda v: u._beta_pdf(0.3, 2.5, v), 3.5),
        "_beta_ppf p": (lambda v: u._beta_ppf(v, 2.5, 3.5), 0.4),
        "_binom_pmf p": (lambda v: u._binom_pmf(2.0, 10.0, v), 0.3),
        "_binom_cdf p": (lambda v: u._binom_cdf(3.0, 10.0, v), 0.3),
        "_binom_sf p": (lambda v: u._binom_sf(3.0, 10.0, v), 0.3),
        "_nbinom_pmf n": (lambda v: u._nbinom_pmf(3.0, v, 0.4), 5.0),
        "_nbinom_pmf p": (lambda v: u._nbinom_pmf(3.0, 5.0, v), 0.4),
        "_nbinom_cdf p": (lambda v: u._nbinom_cdf(3.0, 5.0, v), 0.4),
        "_nbinom_sf p": (lambda v: u._nbinom_sf(3.0, 5.0, v), 0.4),
        "_skewnorm_cdf x": (lambda v: u._skewnorm_cdf(v, 0.2, 1.3, 1.5), 0.3),
        "_skewnorm_cdf loc": (lambda v: u._skewnorm_cdf(0.3, v, 1.3, 1.5), 0.2),
        "_skewnorm_cdf scale": (lambda v: u._skewnorm_cdf(0.3, 0.2, v, 1.5), 1.3),
        "_skewnorm_cdf a": (lambda v: u._skewnorm_cdf(0.3, 0.2, 1.3, v), 1.5),
        "_skewnorm_ppf q": (lambda v: u._skewnorm_ppf(v, 0.2, 1.3, 1.5), 0.4),
        "_skewnorm_ppf scale": (lambda v: u._skewnorm_ppf(0.4, 0.2, v, 1.5), 1.3),
        "_skewnorm_ppf a": (lambda v: u._skewnorm_ppf(0.4, 0.2, 1.3, v), 1.5),
        "_skewnorm_isf q": (lambda v: u._skewnorm_isf(v, 0.2, 1.3, 1.5), 0.4),
        "_skewnorm_isf a": (lambda v: u._skewnorm_isf(0.4, 0.2, 1.3, v), 1.5),
        "_cauchy_ppf q": (lambda v: u._cauchy_ppf(v, 0.2, 1.3), 0.4),
        "_cauchy_isf scale": (lambda v: u._cauchy_isf(0.3, 0.2, v), 1.3),
        "_invgauss_ppf q": (lambda v: u._invgauss_ppf(v, 0.8, 1.3), 0.4),
        "_invgauss_ppf mu": (lambda v: u._invgauss_ppf(0.4, v, 1.3), 0.8),
        "_invgauss_ppf s": (lambda v: u._invgauss_ppf(0.4, 0.8, v), 1.3),
        "_invgauss_isf q": (lambda v: u._invgauss_isf(v, 0.8, 1.3), 0.4),
        "_invgauss_isf mu": (lambda v: u._invgauss_isf(0.4, v, 1.3), 0.8),
    }


PRIVATE = ["_beta_pdf x", "_beta_pdf a", "_beta_pdf b", "_beta_ppf p", "_binom_pmf p",
           "_binom_cdf p", "_binom_sf p", "_nbinom_pmf n", "_nbinom_pmf p", "_nbinom_cdf p",
           "_nbinom_sf p", "_skewnorm_cdf x", "_skewnorm_cdf loc", "_skewnorm_cdf scale",
           "_skewnorm_cdf a", "_skewnorm_ppf q", "_skewnorm_ppf scale", "_skewnorm_ppf a",
           "_skewnorm_isf q", "_skewnorm_isf a", "_cauchy_ppf q", "_cauchy_isf scale",
           "_invgauss_ppf q", "_invgauss_ppf mu", "_invgauss_ppf s", "_invgauss_isf q",
           "_invgauss_isf mu"]


@pytest.mark.parametrize("case", PRIVATE)
def test_private_ufunc_rules_to_second_order(case):
    """Each argument of each private ufunc rule: scipy's value to the bit, the first derivative
    against central differences and forward mode, the second (the partials differentiate
    again) against second differences."""
    f, x0 = _private_cases()[case]
    v, g = ad.value_and_grad(f)(x0)
    assert v == f(x0)
    fd = (f(x0 + 1e-6) - f(x0 - 1e-6)) / 2e-6
    assert abs(g - fd) <= 1e-5 * max(1.0, abs(fd)), (g, fd)
    _, t = ad.jvp(f, (x0,), (1.0,))
    assert abs(float(t) - g) <= 1e-12 * max(1.0, abs(g))
    h = 1e-4
    fd2 = (f(x0 + h) - 2 * f(x0) + f(x0 - h)) / h ** 2
    assert abs(float(ad.hessian(f)(x0)) - fd2) <= 1e-3 * max(1.0, abs(fd2)), fd2


def test_an_assignment_selecting_nothing_is_a_no_op():
    """scipy guards rare corrections with ``y[mask] = ...`` (skewnorm's left tail): into an
    array dual, a mask selecting nothing stores nothing and is allowed; any other assignment
    still raises."""
    def f(v):
        y = np.array([1.0, 2.0]) * v
        y[np.array([False, False])] = 7.0
        y[np.array([], dtype=int)] = v
        return np.sum(y)

    assert ad.grad(f)(2.0) == 3.0

    def g(v):
        y = np.array([1.0, 2.0]) * v
        y[np.array([True, False])] = 7.0
        return np.sum(y)

    with pytest.raises(TypeError, match="immutable"):
        ad.grad(g)(2.0)
