"""scipy.stats's distributions on duals: scipy's values to the bit, derivatives against finite
differences and across modes, and for every distribution scipy ships either the right derivative
or an error -- never a silent wrong one."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_

import deltaad as ad

stats = pytest.importorskip("scipy.stats")
from scipy.stats._distr_params import distcont, distdiscrete  # noqa: E402

H = 1e-6


def central(f, x):
    return (f(x + H) - f(x - H)) / (2 * H)


def close(a, b, tol=2e-5):
    return abs(a - b) <= tol * (1 + abs(b))


# (distribution, shape parameters) that must differentiate in every parameter
COMMON = [
    ("norm", ()), ("expon", ()), ("gamma", (2.5,)), ("beta", (2.0, 3.0)), ("logistic", ()),
    ("laplace", ()), ("cauchy", ()), ("weibull_min", (1.7,)), ("chi2", (4.5,)),
    ("gumbel_r", ()), ("invgamma", (3.0,)), ("rayleigh", ()),
]
METHODS = ["logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"]
@pytest.mark.parametrize("name,shapes", COMMON, ids=[c[0] for c in COMMON])
@pytest.mark.parametrize("method", METHODS)
def test_common_distributions(name, shapes, method):
    d = getattr(stats, name)
    f = getattr(d, method)
    x, loc, scale = float(d.ppf(0.35, *shapes, loc=0.2, scale=1.7)), 0.2, 1.7
    params = (x, *shapes, loc, scale)

    def call(*p):
        return f(p[0], *p[1:-2], loc=p[-2], scale=p[-1])

    v, g = ad.value_and_grad(call, argnums=tuple(range(len(params))))(*params)
    assert v == call(*params)  # scipy's own value, to the bit
    for i in range(len(params)):
        def one(t, i=i):
            p = list(params)
            p[i] = t
            return call(*p)

        assert close(g[i], central(one, params[i])), (i, g[i])
        # forward mode gives the same derivative
        assert close(ad.jvp(one, (params[i],), (1.0,))[1], g[i], 1e-12)


@given(st_.floats(-3, 3), st_.floats(-2, 2), st_.floats(0.2, 4))
@settings(max_examples=40, deadline=None)
def test_norm_logpdf_closed_form(x, mu, sigma):
    g = ad.grad(lambda m, s: stats.norm.logpdf(x, m, s), argnums=(0, 1))(mu, sigma)
    z = (x - mu) / sigma
    assert close(g[0], z / sigma, 1e-12)
    assert close(g[1], (z * z - 1) / sigma, 1e-12)


def test_arrays_frozen_and_second_order():
    data = np.array([0.3, 1.0, 2.0, -0.5])

    def nll(mu, s):
        return -stats.norm(mu, s).logpdf(data).sum()

    g = ad.grad(nll, argnums=(0, 1))(0.5, 1.5)
    assert close(g[0], -np.sum(data - 0.5) / 1.5 ** 2, 1e-12)
    h = ad.hessian(lambda mu: nll(mu, 1.5))(0.5)
    assert close(h, len(data) / 1.5 ** 2, 1e-12)
    gx = ad.grad(lambda x: stats.norm.logpdf(x, 0.1, 2.0).sum())(data)
    assert np.allclose(gx, -(data - 0.1) / 4.0, rtol=1e-14, atol=0)


def test_outside_support_and_bad_parameters_follow_scipy():
    v, g = ad.value_and_grad(lambda s: stats.expon.logpdf(-1.0, 0.0, s))(3.0)
    assert v == -math.inf and g == 0.0
    v, g = ad.value_and_grad(lambda s: stats.norm.logpdf(1.0, 0.0, s))(-3.0)
    assert math.isnan(v) and math.isnan(stats.norm.logpdf(1.0, 0.0, -3.0))
    v, g = ad.value_and_grad(lambda m: stats.norm.cdf(np.array([-np.inf, 0.0, np.inf]), m).sum())(0.0)
    assert v == 1.5 and close(g, -stats.norm.pdf(0.0), 1e-15)


def test_quantiles_and_discrete():
    g = ad.grad(lambda s: stats.norm.ppf(0.3, 1.0, s))(2.0)
    assert g == stats.norm.ppf(0.3)
    g = ad.grad(lambda s: stats.norm.isf(0.3, 1.0, s))(2.0)
    assert close(g, stats.norm.isf(0.3), 1e-15)
    assert ad.grad(lambda s: stats.expon.ppf(0.0, 1.0, s))(2.0) == 0.0  # the support's bound
    g = ad.grad(lambda m: stats.poisson.logpmf(np.array([0, 3, 7]), m).sum())(2.5)
    assert close(g, 10 / 2.5 - 3, 1e-14)
    g = ad.grad(lambda p: stats.binom.logpmf(3, 10, p))(0.2)
    assert close(g, 3 / 0.2 - 7 / 0.8, 1e-14)
    with pytest.raises(TypeError, match="poisson.logpmf"):
        ad.grad(lambda k: stats.poisson.logpmf(k, 2.0))(3.0)


def test_plain_calls_are_scipys():
    from scipy.stats._distn_infrastructure import rv_continuous

    assert hasattr(rv_continuous.logpdf, "deltaad_original")
    x = np.linspace(-2, 2, 7)
    assert np.array_equal(stats.norm.logpdf(x, 0.3, 1.2),
                          rv_continuous.logpdf.deltaad_original(stats.norm, x, 0.3, 1.2))


def _sweep_cases():
    for name, shapes in distcont:
        for method in ["logpdf", "cdf", "sf", "ppf"]:
            yield "c", name, tuple(shapes), method
    for name, shapes in distdiscrete:
        if isinstance(name, str):
            for method in ["logpmf", "pmf"]:
                yield "d", name, tuple(shapes), method


def test_every_distribution_is_right_or_raises():
    """For each of scipy's distributions: a derivative in loc (or the first shape parameter
    of a discrete one) that matches finite differences with scipy's value to the bit, or an
    error -- never a silent wrong derivative."""
    right = raised = 0
    for kind, name, shapes, method in _sweep_cases():
        d = getattr(stats, name, None)
        if d is None:
            continue
        f = getattr(d, method)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "c":
                x = 0.3 if method == "ppf" else float(d.ppf(0.4, *shapes, loc=0.1, scale=1.3))

                def call(t):
                    return f(x, *shapes, loc=t, scale=1.3)
                t0 = 0.1
            else:
                if not shapes or not isinstance(shapes[-1], float):
                    continue
                k = float(d.ppf(0.5, *shapes))

                def call(t):
                    return f(k, *shapes[:-1], t)
                t0 = shapes[-1]
            try:
                v, g = ad.value_and_grad(call)(t0)
            except (TypeError, NotImplementedError, ValueError):
                raised += 1
                continue
            plain = call(t0)
            assert v == plain or (math.isnan(v) and math.isnan(plain)), (name, method)
            fd = central(call, t0)
            if math.isfinite(fd):
                assert close(g, fd, 1e-3), (name, method, g, fd)
            right += 1
    assert right > 330, right  # most of scipy's distributions differentiate


def test_nothing_computed_outside_the_support_reaches_the_derivative():
    # fatiguelife's formula is nan below its support; scipy places 0 there, and the
    # derivative there is 0, not nan (the formula runs only where the support holds)
    f = lambda loc: stats.fatiguelife.pdf(np.array([0.0179, 5.0]), 29.0, loc=loc, scale=1.3).sum()
    v, g = ad.value_and_grad(f)(0.1)
    assert v == f(0.1) and math.isfinite(g)
    assert close(g, central(f, 0.1))


def test_apply_where_on_duals():
    # cauchy.logpdf and gumbel_r.logsf are written with scipy's apply_where
    for f in (lambda m: stats.cauchy.logpdf(np.array([-1.0, 0.5, 3.0]), m).sum(),
              lambda m: stats.gumbel_r.logsf(np.array([-40.0, 0.5, 3.0]), m).sum()):
        v, g = ad.value_and_grad(f)(0.2)
        assert v == f(0.2)
        assert close(g, central(f, 0.2))
