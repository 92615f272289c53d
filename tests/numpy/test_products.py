"""The products (deltaad.numpy.products): matmul, dot, tensordot, einsum and friends.

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numpy_checks import Family, seeds, shapes, uniform

family = Family()
op = family.op


# --------------------------------------------------------------------------------------------
# matmul and friends


@op("matmul")
@st.composite
def _matmul(draw):
    rng = np.random.default_rng(draw(seeds))
    m, k, n = draw(st.integers(1, 3)), draw(st.integers(0, 3)), draw(st.integers(1, 3))
    ba, bb = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=2)).input_shapes
    a_vec = draw(st.booleans())
    b_vec = draw(st.booleans())
    sa = (k,) if a_vec else ba + (m, k)
    sb = (k,) if b_vec else bb + (k, n)
    f = draw(st.sampled_from([np.matmul, lambda a, b: a @ b]))
    return f, [uniform(rng, sa), uniform(rng, sb)]


@op("dot")
@st.composite
def _dot(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(1, 3))
    sa = draw(st.sampled_from([(), (k,), (2, k), (2, 3, k)]))
    sb = draw(st.sampled_from([(), (k,), (k, 2), (2, k, 3)]))
    f = draw(st.sampled_from([np.dot, lambda a, b: a.dot(b) if hasattr(a, "dot") else np.dot(a, b)]))
    return f, [uniform(rng, sa), uniform(rng, sb)]


@op("inner/outer/vdot")
@st.composite
def _inner(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(0, 3))
    which = draw(st.sampled_from(["inner", "outer", "vdot"]))
    if which == "inner":
        sa = draw(st.sampled_from([(), (k,), (2, k)]))
        sb = draw(st.sampled_from([(k,), (3, k)])) if sa else (2,)
        return np.inner, [uniform(rng, sa), uniform(rng, sb)]
    if which == "outer":
        return np.outer, [uniform(rng, draw(shapes(max_dims=2))), uniform(rng, draw(shapes(max_dims=2)))]
    s = draw(shapes(max_dims=2))
    return np.vdot, [uniform(rng, s), uniform(rng, s)]


@op("tensordot")
@st.composite
def _tensordot(draw):
    rng = np.random.default_rng(draw(seeds))
    case = draw(st.sampled_from([
        ((2, 3, 4), (3, 4, 2), 2), ((2, 3), (3, 2), 1), ((2, 3), (4,), 0), ((2, 3, 4), (4, 3), ([1, 2], [1, 0])),
        ((3, 2), (3, 2), ([0, 1], [0, 1])), ((2, 0), (0, 3), 1), ((2, 3), (2, 3), ([0], [0])),
    ]))
    sa, sb, axes = case
    return (lambda a, b: np.tensordot(a, b, axes=axes)), [uniform(rng, sa), uniform(rng, sb)]


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 2)]), ("i,i->", [(3,), (3,)]),
    ("i,i", [(4,), (4,)]), ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]),
    ("...ij->...ji", [(2, 2, 3)]), ("...i,i->...", [(2, 3, 4), (4,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ij,ij->i", [(3, 2), (3, 2)]), ("i,j->ij", [(2,), (3,)]), ("ijk->", [(2, 3, 2)]),
    ("ij->", [(2, 0)]), ("ij,k->ijk", [(2, 1), (2,)]), ("...i,...i->...", [(3, 1, 2), (2, 2)]),
    ("iij->j", [(2, 2, 3)]), ("ab,bc,cd->ad", [(2, 3), (3, 2), (2, 2)]),
]


@op("einsum")
@st.composite
def _einsum(draw):
    rng = np.random.default_rng(draw(seeds))
    spec, sh = draw(st.sampled_from(EINSUM))
    opt = draw(st.sampled_from([False, "greedy"]))
    return (lambda *xs: np.einsum(spec, *xs, optimize=opt)), [uniform(rng, s) for s in sh]


@op("einsum (interleaved)")
@st.composite
def _einsum2(draw):
    rng = np.random.default_rng(draw(seeds))
    return (lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2])), [uniform(rng, (2, 3)), uniform(rng, (3, 2))]


@op("trace")
@st.composite
def _trace(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=2, max_dims=3))
    off = draw(st.integers(-2, 2))
    nd = len(s)
    a1 = draw(st.integers(0, nd - 1))
    a2 = draw(st.integers(0, nd - 1).filter(lambda a: a != a1))
    return (lambda x: np.trace(x, off, a1, a2)), [uniform(rng, s)]


test_first_order, test_second_order = family.tests()
