"""Linear algebra (deltaad.numpy.linalg).

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
from hypothesis import strategies as st

from numpy_checks import Family, distinct, seeds, uniform

family = Family()
op = family.op


# --------------------------------------------------------------------------------------------
# Linear algebra


def _spd(rng, n, batch=()):
    b = rng.standard_normal(batch + (n, n))
    return b @ np.swapaxes(b, -1, -2) + n * np.eye(n)


def _wellcond(rng, n, batch=()):
    """Diagonally dominant: |a_ii| >= n + 1 > sum of the rest, so the condition number is small."""
    return rng.uniform(-0.5, 0.5, batch + (n, n)) + (n + 1) * np.eye(n)


@op("linalg.solve")
@st.composite
def _solve(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    bshape = draw(st.sampled_from([(n,), (n, 2), batch + (n, 1)]))
    return np.linalg.solve, [_wellcond(rng, n, batch), uniform(rng, bshape)]


@op("linalg.inv/det/slogdet")
@st.composite
def _inv(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    a = _wellcond(rng, n, batch) * draw(st.sampled_from([1.0, -1.0]))
    f = draw(st.sampled_from([np.linalg.inv, np.linalg.det, np.linalg.slogdet, lambda a: np.linalg.slogdet(a)[1]]))
    return f, [a]


@op("linalg.cholesky")
@st.composite
def _chol(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    upper = draw(st.booleans())
    return (lambda a: np.linalg.cholesky(0.5 * (a + np.swapaxes(a, -1, -2)), upper=upper)), [_spd(rng, n, batch)]


@op("linalg.norm")
@st.composite
def _norm(draw):
    rng = np.random.default_rng(draw(seeds))
    case = draw(st.sampled_from([
        ((4,), None, None), ((4,), 2, None), ((4,), 1, None), ((4,), np.inf, None), ((4,), -np.inf, None),
        ((4,), 3, None), ((3, 2), None, None), ((3, 2), "fro", None), ((3, 2), 1, None), ((3, 2), np.inf, None),
        ((3, 2), -1, None), ((2, 3, 2), None, (0, 2)), ((2, 3), 2, 1), ((2, 3), None, -1), ((2, 3, 4), None, None),
    ]))
    s, ord_, axis = case
    kd = draw(st.booleans())
    return (lambda x: np.linalg.norm(x, ord=ord_, axis=axis, keepdims=kd)), [distinct(rng, s) + 0.07]


@op("linalg.vector_norm/matrix_norm/multi_dot")
@st.composite
def _norm2(draw):
    rng = np.random.default_rng(draw(seeds))
    f = draw(st.sampled_from([
        lambda x: np.linalg.vector_norm(x), lambda x: np.linalg.matrix_norm(x),
        lambda x: np.linalg.vector_norm(x, axis=(0, 1), keepdims=True),
        lambda x: np.linalg.multi_dot([x, x.T, x]),
    ]))
    return f, [distinct(rng, (3, 3)) + 0.07]


test_first_order, test_second_order = family.tests()
