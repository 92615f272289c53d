"""The reductions (deltaad.numpy.reductions): sums, means, extrema, variances, products.

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, away, axis_args, distinct, seeds, shapes, uniform

family = Family()
op = family.op


# --------------------------------------------------------------------------------------------
# Reductions


def _reduction(fn, values=uniform, min_side=0, keepdims=True, tuples=True):
    @st.composite
    def strat(draw):
        rng = np.random.default_rng(draw(seeds))
        s = draw(shapes(min_side=min_side))
        axis = draw(axis_args(len(s), tuples=tuples))
        kd = draw(st.booleans()) if keepdims else False
        kw = {"keepdims": True} if kd else {}
        return (lambda x: fn(x, axis=axis, **kw)), [values(rng, s)]

    return strat


op("sum")(_reduction(np.sum))
op("x.sum")(_reduction(lambda x, **kw: x.sum(**kw)))
op("mean")(_reduction(np.mean, min_side=1))
op("prod")(_reduction(np.prod, values=lambda rng, s: away(rng, s, 0.5, 1.5)))
op("max")(_reduction(np.max, values=distinct, min_side=1))
op("min")(_reduction(np.min, values=distinct, min_side=1))
op("amax/x.min")(_reduction(lambda x, **kw: np.amax(x, **kw) + x.min(**kw), values=distinct, min_side=1))
op("ptp")(_reduction(np.ptp, values=distinct, min_side=1, tuples=False))
op("deltaad.logsumexp")(_reduction(d.logsumexp, min_side=1))


@op("sum/mean/prod/max/min with where=, initial=")
@st.composite
def _masked(draw):
    """numpy's keywords ``where=`` (a mask broadcast against the input) and ``initial=``: the
    values are numpy's own; entries left out get derivative 0."""
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    axis = draw(axis_args(len(s)))
    kd = draw(st.booleans())
    mshape = s[draw(st.integers(0, len(s))):]  # a trailing part of the shape: broadcast
    where = rng.uniform(size=mshape) < 0.7
    name = draw(st.sampled_from(["sum", "mean", "prod", "max", "min", "sum-initial"]))
    if name == "sum-initial":
        return (lambda x: np.sum(x, axis=axis, keepdims=kd, initial=1.5)), [uniform(rng, s)]
    if name == "mean":  # a slice left empty has mean nan: such a slice is kept whole
        where = np.broadcast_to(where, s)
        where = where | (np.sum(where, axis=axis, keepdims=True) == 0)
    kw = {"where": where}
    if name in ("max", "min", "prod"):
        kw["initial"] = {"max": -2.0, "min": 2.0, "prod": 0.75}[name]
    values = distinct if name in ("max", "min") else (
        (lambda rng, s: away(rng, s, 0.5, 1.5)) if name == "prod" else uniform)
    f = getattr(np, name)
    return (lambda x: f(x, axis=axis, keepdims=kd, **kw)), [values(rng, s)]


@op("logaddexp.reduce")
@st.composite
def _lae_reduce(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    return (lambda x: np.logaddexp.reduce(x, axis=0)), [uniform(rng, s)]


@op("var/std")
@st.composite
def _var(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=2))
    axis = draw(axis_args(len(s)))
    ddof = draw(st.integers(0, 1))
    axes = range(len(s)) if axis is None else ([axis] if isinstance(axis, int) else axis)
    if int(np.prod([s[a] for a in axes])) <= ddof:
        ddof = 0
    kd = draw(st.booleans())
    f = draw(st.sampled_from([np.var, np.std, lambda x, **kw: x.var(**kw), lambda x, **kw: x.std(**kw)]))
    if int(np.prod([s[a] for a in axes])) <= 1:
        f = np.var  # std of one value is sqrt(0): not differentiable
    return (lambda x: f(x, axis=axis, ddof=ddof, keepdims=kd)), [distinct(rng, s)]  # std > 0.1


@op("cumsum/cumprod")
@st.composite
def _cum(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes())
    axis = draw(st.none() | st.integers(-max(len(s), 1), max(len(s), 1) - 1)) if s else None
    f = draw(st.sampled_from([np.cumsum, np.cumprod, lambda x, axis: x.cumsum(axis), lambda x, axis: x.cumprod(axis)]))
    return (lambda x: f(x, axis=axis)), [away(rng, s, 0.5, 1.5)]


@op("ufunc.reduce/accumulate")
@st.composite
def _ufunc_methods(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    f = draw(st.sampled_from([
        lambda x: np.add.reduce(x), lambda x: np.multiply.reduce(x, axis=-1), lambda x: np.maximum.reduce(x),
        lambda x: np.add.accumulate(x), lambda x: np.multiply.accumulate(x), lambda x: np.multiply.outer(x, x[..., :2]),
    ]))
    return f, [distinct(rng, s) * 0.3 + 1.0]


@op("logsumexp composition")
@st.composite
def _lse(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))

    def f(x):
        m = np.max(x, axis=-1, keepdims=True)
        return m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))

    def softmax_xent(x):
        z = x - np.max(x, axis=-1, keepdims=True)
        return -np.sum(z[..., :1] - np.log(np.sum(np.exp(z), axis=-1, keepdims=True)))

    return draw(st.sampled_from([f, softmax_xent])), [distinct(rng, s)]


# --------------------------------------------------------------------------------------------
# nan-ignoring reductions, average, quantiles


def _with_nans(rng, s):
    """Distinct values with a nan at the first and the last position: every slice of a side of
    4 keeps two numbers (nanvar with ddof=1 needs two)."""
    x = distinct(rng, s)
    if x.size:
        x[(0,) * len(s)] = np.nan
        x[(-1,) * len(s)] = np.nan
    return x


def _nan_reduction(fn, **kw):
    @st.composite
    def strat(draw):
        rng = np.random.default_rng(draw(seeds))
        s = draw(shapes(min_dims=1, max_dims=2, min_side=4))
        axis = draw(axis_args(len(s)).filter(lambda a: a != ()))  # (a nan alone is nan)
        kd = {"keepdims": True} if draw(st.booleans()) else {}
        return (lambda x: fn(x, axis=axis, **kd, **kw)), [_with_nans(rng, s)]

    return strat


op("nansum")(_nan_reduction(np.nansum))
op("nanmean")(_nan_reduction(np.nanmean))
op("nanmax")(_nan_reduction(np.nanmax))
op("nanmin")(_nan_reduction(np.nanmin))
op("nanprod")(_nan_reduction(lambda x, **kw: np.nanprod(x * 0.3, **kw)))
op("nanvar")(_nan_reduction(np.nanvar, ddof=1))
op("nanstd")(_nan_reduction(np.nanstd))
op("nanmedian")(_nan_reduction(np.nanmedian))
op("nanquantile")(_nan_reduction(lambda x, **kw: np.nanquantile(x, [0.2, 0.65], **kw)))
op("nanpercentile")(_nan_reduction(lambda x, **kw: np.nanpercentile(x, 40.0, **kw)))


@op("nancumsum/nancumprod")
@st.composite
def _nancum(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, max_dims=2, min_side=1))
    x = rng.uniform(0.5, 1.5, s)
    x[(0,) * len(s)] = np.nan
    axis = draw(st.sampled_from([None] + list(range(len(s)))))
    f = draw(st.sampled_from([np.nancumsum, np.nancumprod]))
    return (lambda t: f(t, axis=axis)), [x]


@op("trapezoid")
@st.composite
def _trapezoid(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    ax = draw(st.integers(-len(s), len(s) - 1))
    kind = draw(st.sampled_from(["dx", "x1d", "xnd"]))
    y = uniform(rng, s)
    if kind == "dx":
        return (lambda t, h: np.trapezoid(t, dx=h, axis=ax)), [y, 0.7]
    xs = (s[ax],) if kind == "x1d" else s
    return (lambda t, x: np.trapezoid(t, x, axis=ax)), [y, uniform(rng, xs)]


@op("average")
@st.composite
def _average(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    axis = draw(axis_args(len(s), none=True))
    ax = None if axis is None else tuple(np.atleast_1d(axis))
    kd = draw(st.booleans())
    kind = draw(st.sampled_from(["none", "full", "axis"] if ax else ["none", "full"]))
    if kind == "none":
        return (lambda x: np.average(x, axis=axis, keepdims=kd)), [uniform(rng, s)]
    wshape = s if kind == "full" else tuple(s[i] for i in ax)
    ret = draw(st.booleans())
    return ((lambda x, w: np.average(x, axis=axis, weights=w, returned=ret, keepdims=kd)),
            [uniform(rng, s), uniform(rng, wshape, 0.5, 1.5)])


@op("median/quantile/percentile")
@st.composite
def _quantiles(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    axis = draw(axis_args(len(s)))
    kd = draw(st.booleans())
    method = draw(st.sampled_from(["linear", "lower", "higher", "nearest", "midpoint"]))
    q = draw(st.sampled_from([0.5, 0.0, 1.0, 0.37, [0.1, 0.9], [[0.25], [0.75]]]))
    f = draw(st.sampled_from([
        lambda x: np.median(x, axis=axis, keepdims=kd),
        lambda x: np.quantile(x, q, axis=axis, keepdims=kd, method=method),
        lambda x: np.percentile(x, np.multiply(q, 100.0), axis=axis, keepdims=kd, method=method),
    ]))
    return f, [distinct(rng, s)]


try:
    from scipy import special as _special
except ImportError:  # scipy is optional: its functions are tested when it is installed
    _special = None

if _special is not None:
    @op("scipy.special.logsumexp/softmax/log_softmax")
    @st.composite
    def _scipy_lse(draw):
        rng = np.random.default_rng(draw(seeds))
        s = draw(shapes(min_dims=1, min_side=1))
        axis = draw(axis_args(len(s)))
        kd = draw(st.booleans())
        f = draw(st.sampled_from([
            lambda x: _special.logsumexp(x, axis=axis, keepdims=kd),
            lambda x: _special.softmax(x, axis=axis),
            lambda x: _special.log_softmax(x, axis=axis),
            lambda x: _special.logsumexp(x, axis=axis, b=0.5 + x * x, keepdims=kd),
            # (a negative sum, away from 0: log|sum| is well conditioned)
            lambda x: _special.logsumexp(x, axis=axis, b=-0.5 - x * x, return_sign=True)[0],
        ]))
        return f, [uniform(rng, s)]


test_first_order, test_second_order = family.tests()


def _bits_equal(f, *args):
    out, _ = d.vjp(f, *args)
    want = f(*args)
    for a, b in zip(d.tree_flatten(out)[0], d.tree_flatten(want)[0]):
        assert np.array_equal(np.asarray(d.value(a)), np.asarray(b), equal_nan=True), (a, b)


@given(seeds)
def test_values_are_numpys(seed):
    rng = np.random.default_rng(seed)
    x = _with_nans(rng, (3, 4))
    for f in (np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod, np.nanvar, np.nanstd,
              np.nanmedian, lambda v: np.nanquantile(v, 0.3, axis=0),
              lambda v: np.nanpercentile(v, [10, 60], axis=1)):
        _bits_equal(f, x)
    y = rng.standard_normal((3, 5))
    w = rng.uniform(0.5, 2, (3, 5))
    for f in (np.median, lambda v: np.quantile(v, [0.1, 0.5], axis=1),
              lambda v: np.percentile(v, 33, axis=0, method="nearest"),
              lambda v: np.average(v, axis=1), lambda v: np.average(v, weights=w)):
        _bits_equal(f, y)
    _bits_equal(lambda v, u: np.average(v, axis=1, weights=u[0], returned=True), y, w)


def test_all_nan_slice_has_gradient_zero():
    x = np.array([[np.nan, np.nan], [1.0, 2.0]])
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            g = d.grad(lambda v: np.nansum(np.nanmean(v, axis=1)))(x)
    assert np.array_equal(g, np.array([[0.0, 0.0], [0.5, 0.5]]))


def test_quantile_in_q_is_refused():
    with pytest.raises(TypeError, match="quantile q is a dual"):
        d.grad(lambda q: np.quantile(np.arange(3.0), q))(0.5)


@pytest.mark.skipif(_special is None, reason="scipy is optional")
def test_scipy_functions_called_unchanged():
    """scipy.special's Python functions differentiate when called as the user wrote them, with
    scipy's values; plain calls are scipy's own."""
    from scipy.special import logsumexp, softmax

    x = np.array([[0.3, -1.2, 2.0], [0.1, 0.4, -0.7]])
    v, g = d.value_and_grad(lambda t: logsumexp(t))(x)
    assert v == logsumexp(x)
    assert np.allclose(g, softmax(x))
    assert logsumexp.__wrapped__ is not logsumexp and logsumexp(x) == logsumexp.__wrapped__(x)
    with pytest.raises(NotImplementedError, match=r"scipy\.special\.zetac\b"):
        d.grad(lambda t: _special.zetac(t).sum())(x)


def test_std_at_zero_spread_has_gradient_zero():
    """The documented choice (as a norm at the zero vector), in every mode, instead of 0 * inf."""
    assert d.grad(np.std)(3.5) == 0.0
    assert d.jvp(np.std, (3.5,), (1.0,)) == (0.0, 0.0)
    assert list(d.grad(lambda x: np.std(x))(np.array([2.0, 2.0, 2.0]))) == [0.0, 0.0, 0.0]
    g = d.grad(lambda x: np.std(x, axis=1).sum())(np.array([[1.0, 1.0], [1.0, 3.0]]))
    assert g.tolist() == [[0.0, 0.0], [-0.5, 0.5]]


@given(shapes(min_dims=1, max_dims=3, min_side=1), seeds, st.integers(0, 1), st.data())
def test_var_and_std_values_are_numpys(shape, seed, ddof, data):
    """Differentiating does not change the value: numpy's own var and std, to the bit."""
    x = uniform(np.random.default_rng(seed), shape)
    axis = data.draw(axis_args(len(shape)))
    for f in (np.var, np.std):
        if ddof and x.size <= 1:
            continue
        v, _ = d.value_and_grad(lambda t: f(t, axis=axis, ddof=ddof).sum())(x)
        np.testing.assert_array_equal(v, np.sum(f(x, axis=axis, ddof=ddof)))


@pytest.mark.skipif(_special is None, reason="scipy is optional")
def test_scipy_is_never_imported_and_later_imports_get_the_rules():
    """deltaad does not import scipy; a scipy.special imported after deltaad (the usual
    ``from scipy.special import logsumexp``) gets the dispatching versions."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, deltaad as d\n"
        "assert not any(m.startswith('scipy') for m in sys.modules)\n"
        "from scipy.special import logsumexp, polygamma, zeta\n"
        "assert logsumexp.deltaad_original is not None\n"
        "assert d.grad(lambda x: logsumexp(x))(np.zeros(2)).tolist() == [0.5, 0.5]\n"
        "assert d.grad(lambda x: polygamma(0, x))(1.0) == polygamma(1, 1.0)\n"
        "try:\n"
        "    d.grad(lambda x: zeta(x, 1.0))(2.0)\n"
        "except NotImplementedError as e:\n"
        "    assert 'scipy.special._ufuncs._zeta' in str(e), e\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

@pytest.mark.parametrize("fn", [np.max, np.min])
def test_extremum_ties_split_its_cotangent_nans_included(fn):
    # a row whose extremum is nan (its nans tie), a row with two tied extrema, a plain row
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, 2.0], [0.5, 1.5, -1.0, 0.25]])
    g = d.grad(lambda a: np.sum(fn(a, axis=1) * np.array([1.0, 2.0, 3.0])))(x)
    want = np.zeros_like(x)
    want[0, [1, 3]] = 0.5
    want[1, [1, 2] if fn is np.max else [0, 3]] = 1.0
    want[2, np.argmax(x[2]) if fn is np.max else np.argmin(x[2])] = 3.0
    assert np.array_equal(g, want)
