"""scipy.stats's multivariate_normal and dirichlet, and scipy.special.multigammaln, on duals
(deltaad.numpy.scipy_multivariate, deltaad.numpy.special).

Hypothesis over dimensions, numbers of points and the forms scipy accepts (a covariance matrix,
its diagonal, a scalar; frozen or not; Dirichlet points with all or all but the last
coordinate): reverse, forward and finite differences agree in every argument, to second order;
values are scipy's, bit for bit; the covariance's gradient lives in the lower triangle scipy
reads.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, seeds, uniform

stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")

family = Family()
op = family.op


def _spd(rng, n):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * (1.0 + 0.6 * np.arange(n) + rng.uniform(0, 0.1, n))) @ q.T


@op("multivariate_normal.logpdf/pdf")
@st.composite
def _mvn(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(1, 4))
    xshape = draw(st.sampled_from([(k,), (3, k), (2, 2, k)]))
    if k == 1:
        xshape = draw(st.sampled_from([(), (3,), (3, 1)]))
    form = draw(st.sampled_from(["matrix", "diagonal", "scalar"]))
    method = draw(st.sampled_from(["logpdf", "pdf"]))
    frozen = draw(st.booleans())
    x = uniform(rng, xshape, -1.5, 1.5)
    mean = uniform(rng, (k,), -1, 1)
    if form == "matrix":
        cov = _spd(rng, k) + np.triu(rng.standard_normal((k, k)), 1)  # scipy reads the lower
    elif form == "diagonal":
        cov = rng.uniform(0.5, 2.0, k)
    else:
        cov = np.asarray(rng.uniform(0.5, 2.0))

    def f(x, mean, cov):
        if frozen:
            return getattr(stats.multivariate_normal(mean, cov), method)(x)
        return getattr(stats.multivariate_normal, method)(x, mean, cov)

    return f, [x, mean, cov]


@op("multivariate_normal.entropy")
@st.composite
def _mvn_entropy(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(1, 4))
    cov = _spd(rng, k) + np.triu(rng.standard_normal((k, k)), 1)
    if draw(st.booleans()):
        return (lambda c: stats.multivariate_normal(np.zeros(k), c).entropy()), [cov]
    return (lambda c: stats.multivariate_normal.entropy(None, c)), [cov]


@op("dirichlet.logpdf/pdf")
@st.composite
def _dirichlet(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(2, 5))
    npts = draw(st.sampled_from([None, 1, 3]))
    alpha = rng.uniform(0.5, 3.0, k)
    pts = rng.dirichlet(np.full(k, 4.0), npts if npts else 1).T  # well inside the simplex
    # and away from its faces, where x^(alpha - 1) with alpha < 1 is too steep for finite
    # differences (a random run missed a second derivative by 0.2% at a coordinate near 0)
    assume(pts.min() > 0.05)
    x = pts[:-1] if npts else pts[:-1, 0]  # all but the last coordinate: scipy completes it
    method = draw(st.sampled_from(["logpdf", "pdf"]))
    frozen = draw(st.booleans())

    def f(x, alpha):
        if frozen:
            return getattr(stats.dirichlet(alpha), method)(x)
        return getattr(stats.dirichlet, method)(x, alpha)

    return f, [x, alpha]


@op("multigammaln")
@st.composite
def _multigammaln(draw):
    rng = np.random.default_rng(draw(seeds))
    dim = draw(st.integers(1, 5))
    shape = draw(st.sampled_from([(), (3,), (2, 2)]))
    a = np.asarray(uniform(rng, shape, 0.5 * dim + 0.2, 0.5 * dim + 4))
    return (lambda a: special.multigammaln(a, dim)), [a]


test_first_order, test_second_order = family.tests()


@given(seeds, st.integers(1, 4), st.booleans())
@settings(deadline=None)
def test_mvn_values_are_scipys_and_closed_form_gradients(seed, k, frozen):
    rng = np.random.default_rng(seed)
    x, mean, cov = uniform(rng, (5, k)), uniform(rng, (k,)), _spd(rng, k)

    def f(x, mean, cov):
        if frozen:
            return stats.multivariate_normal(mean, cov).logpdf(x)
        return stats.multivariate_normal.logpdf(x, mean, cov)

    out = d.vjp(f, x, mean, cov)[0]
    assert np.array_equal(out, f(x, mean, cov))
    gx, gm, gc = d.grad(lambda *a: np.sum(f(*a)), argnums=(0, 1, 2))(x, mean, cov)
    p = np.linalg.inv(cov)
    dev = x - mean
    np.testing.assert_allclose(gx, -dev @ p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gm, np.sum(dev @ p, axis=0), rtol=1e-10, atol=1e-12)
    # the symmetric gradient -1/2 sum(P - P d d^T P), folded onto the lower triangle
    sym = -0.5 * (len(x) * p - p @ dev.T @ dev @ p)
    low = np.tril(sym + sym.T) - np.diag(np.diag(sym))
    np.testing.assert_allclose(gc, low, rtol=1e-9, atol=1e-11)


def test_frozen_with_dual_parameters_refuses_what_would_drop_them():
    mean, cov = np.zeros(2), np.eye(2)

    def mean_and_cov(m, c):
        fr = stats.multivariate_normal(m, c)
        return np.sum(fr.mean) + np.sum(fr.cov)

    np.testing.assert_array_equal(d.grad(mean_and_cov, argnums=(0, 1))(mean, cov)[0], np.ones(2))
    for method in ("cdf", "logcdf"):
        with pytest.raises(NotImplementedError, match=r"multivariate_normal\(mean, cov\)\.%s" % method):
            d.grad(lambda m: getattr(stats.multivariate_normal(m, cov), method)(np.ones(2)))(mean)
    with pytest.raises(NotImplementedError, match="rvs"):
        d.grad(lambda m: np.sum(stats.multivariate_normal(m, cov).rvs()))(mean)
    with pytest.raises(NotImplementedError, match=r"multivariate_normal.logpdf.*singular"):
        d.grad(lambda m: stats.multivariate_normal.logpdf(np.ones(2), m, np.ones((2, 2)),
                                                          allow_singular=True))(mean)
    # plain calls are scipy's own
    fr = stats.multivariate_normal(mean, cov)
    assert fr.logpdf(np.ones(2)) == stats.multivariate_normal.logpdf(np.ones(2), mean, cov)
    assert type(fr).logpdf.deltaad_original is not None


def test_dirichlet_and_multigammaln_values_and_errors():
    alpha = np.array([1.5, 2.0, 3.0])
    x = np.array([0.2, 0.3, 0.5])
    v, g = d.value_and_grad(lambda a: stats.dirichlet.logpdf(x, a))(alpha)
    assert v == stats.dirichlet.logpdf(x, alpha)
    psi = special.digamma
    np.testing.assert_allclose(g, psi(alpha.sum()) - psi(alpha) + np.log(x), rtol=1e-12)
    with pytest.raises(ValueError, match="simplex"):  # scipy's own check, on the plain values
        d.grad(lambda a: stats.dirichlet.logpdf(x * 1.1, a))(alpha)
    v, g = d.value_and_grad(lambda a: special.multigammaln(a, 3))(4.5)
    assert v == special.multigammaln(4.5, 3)
    assert abs(g - sum(psi(4.5 - j / 2) for j in range(3))) < 1e-13
    with pytest.raises(ValueError, match="condition a"):
        d.grad(lambda a: special.multigammaln(a, 3))(0.7)
