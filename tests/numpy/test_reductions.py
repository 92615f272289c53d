"""The reductions (deltaad.numpy.reductions): sums, means, extrema, variances, products.

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
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


test_first_order, test_second_order = family.tests()


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
