"""scipy.spatial.distance's ``cdist``, ``pdist`` and ``squareform`` on duals
(deltaad.numpy.scipy_spatial).

Hypothesis over point sets, metrics and weights: reverse, forward and finite differences agree,
second order too (the family's checks); the values are scipy's own, bit for bit; coincident
points give derivative 0 for the norms; the metrics without a rule and ``out=`` raise, naming
the call.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, seeds

dist = pytest.importorskip("scipy.spatial.distance")

family = Family()
op = family.op
SMOOTH = ["euclidean", "sqeuclidean", "minkowski", "cosine", "correlation", "seuclidean"]
KINKED = ["cityblock", "chebyshev"]  # |d|, max: first order only, away from their kinks


def _points(rng, m, n):
    return rng.uniform(-2.0, 2.0, (m, n))


def _away_from_kinks(x, gap=0.05):
    """Every coordinate difference of every pair of points away from 0, and the largest one
    of each pair ahead of the next by ``gap``: |d| and max |d| smooth near the points."""
    d = np.sort(np.abs(x[:, None, :] - x[None, :, :]), axis=-1)
    i, j = np.triu_indices(len(x), 1)
    d = d[i, j]
    return bool(np.all(d[:, 0] > gap) and (d.shape[1] < 2 or np.all(d[:, -1] - d[:, -2] > gap)))


def _far_from_degenerate(x, metric, least=0.5):
    """Every row (centred, for ``correlation``) of norm at least ``least``: the angle between
    rows is ill-conditioned near a zero vector, beyond what finite differences resolve."""
    if metric == "correlation":
        x = x - x.mean(axis=1, keepdims=True)
    return bool(np.all(np.linalg.norm(x, axis=1) >= least))


def _kwargs(draw, metric, n):
    kw = {}
    if metric == "minkowski":
        kw["p"] = draw(st.sampled_from([2.5, 3.0, 4.0]))  # |d|^p smooth to second order
    if metric in ("euclidean", "sqeuclidean", "minkowski") and draw(st.booleans()):
        kw["w"] = np.random.default_rng(draw(seeds)).uniform(0.5, 2.0, n)
    return kw


def _distances(second):
    @st.composite
    def strategy(draw):
        rng = np.random.default_rng(draw(seeds))
        metric = draw(st.sampled_from(SMOOTH if second else SMOOTH + KINKED))
        n = draw(st.integers(2, 4))
        ma, mb = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        a, b = _points(rng, ma, n), _points(rng, mb, n)
        while (metric in KINKED + ["minkowski"] and not _away_from_kinks(np.concatenate([a, b]))
               or metric in ("cosine", "correlation")
               and not _far_from_degenerate(np.concatenate([a, b]), metric)):
            a, b = _points(rng, ma, n), _points(rng, mb, n)  # finite differences step 2e-3
        kw = _kwargs(draw, metric, n)
        which = draw(st.sampled_from(["cdist", "pdist", "squareform"]))
        if which == "cdist":
            return (lambda x, y: dist.cdist(x, y, metric, **kw)), [a, b]
        if which == "pdist":
            return (lambda x: dist.pdist(x, metric, **kw)), [np.concatenate([a, b])]
        return (lambda x: dist.squareform(dist.pdist(x, metric, **kw))), [np.concatenate([a, b])]

    return strategy


op("cdist/pdist/squareform")(_distances(True))
op("cdist/pdist of |d| and max |d|", second=False)(_distances(False))


@op("callable metric")
@st.composite
def _callable(draw):
    rng = np.random.default_rng(draw(seeds))
    a = _points(rng, draw(st.integers(1, 3)), 3)
    metric = lambda u, v: np.sqrt(np.sum((u - v) ** 2) + 1.0)  # noqa: E731
    if draw(st.booleans()):
        return (lambda x: dist.pdist(x, metric)), [a]
    return (lambda x, y: dist.cdist(x, y, metric)), [a, _points(rng, 2, 3)]


test_first_order, test_second_order = family.tests()


@settings(max_examples=30)
@given(seeds, st.sampled_from(SMOOTH + KINKED))
def test_values_are_scipys_bits(seed, metric):
    rng = np.random.default_rng(seed)
    a, b = _points(rng, 3, 2), _points(rng, 4, 2)
    seen = {}

    def f(x):
        c, p = dist.cdist(x, b, metric), dist.pdist(x, metric)
        seen["c"], seen["p"] = d.value(c), d.value(p)
        s = dist.squareform(p)
        seen["s"] = d.value(s)
        return np.sum(c) + np.sum(s * s)

    d.grad(f)(a)
    assert seen["c"].tobytes() == dist.cdist(a, b, metric).tobytes()
    assert seen["p"].tobytes() == dist.pdist(a, metric).tobytes()
    assert seen["s"].tobytes() == dist.squareform(dist.pdist(a, metric)).tobytes()


def test_coincident_points_have_derivative_zero():
    x = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 3.0]])
    for metric in ("euclidean", "minkowski"):
        g = d.grad(lambda x: np.sum(dist.cdist(x, x, metric)))(x)
        assert np.all(np.isfinite(g))
        h = 1e-7  # away from the coincidence the derivative is the unit direction
        far = d.grad(lambda x: dist.cdist(x[:1], x[2:], metric)[0, 0])(x)
        fd = (dist.cdist(x[:1] + [[h, 0]], x[2:], metric)[0, 0]
              - dist.cdist(x[:1] - [[h, 0]], x[2:], metric)[0, 0]) / (2 * h)
        assert abs(far[0, 0] - fd) < 1e-6
        assert d.grad(lambda x: dist.pdist(x, metric)[0])(x).tolist() == [[0.0, 0.0]] * 3


def test_unsupported_metrics_and_out_raise_naming_the_call():
    x = np.ones((2, 2))
    with pytest.raises(NotImplementedError, match=r"scipy\.spatial\.distance\.cdist.*hamming"):
        d.grad(lambda x: np.sum(dist.cdist(x, x, "hamming")))(x)
    with pytest.raises(NotImplementedError, match=r"scipy\.spatial\.distance\.pdist.*out="):
        d.grad(lambda x: np.sum(dist.pdist(x, out=np.zeros(1))))(x)
    assert dist.cdist(x, x).tolist() == [[0.0, 0.0], [0.0, 0.0]]  # plain calls: scipy's
