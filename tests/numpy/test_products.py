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

import deltaad as d
from numpy_checks import Family, bshapes, seeds, shapes, uniform

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


@op("convolve/correlate")
@st.composite
def _convolve(draw):
    rng = np.random.default_rng(draw(seeds))
    n, m = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    mode = draw(st.sampled_from(["full", "same", "valid"]))
    f = draw(st.sampled_from([np.convolve, np.correlate]))
    return (lambda a, v: f(a, v, mode)), [uniform(rng, (n,)), uniform(rng, (m,))]


@op("polyval/kron/cross")
@st.composite
def _polyval(draw):
    rng = np.random.default_rng(draw(seeds))
    which = draw(st.sampled_from(["polyval", "kron", "cross"]))
    if which == "polyval":
        return np.polyval, [uniform(rng, (draw(st.integers(1, 4)),)), uniform(rng, draw(shapes()))]
    if which == "kron":
        return np.kron, [uniform(rng, draw(shapes(max_dims=2))), uniform(rng, draw(shapes(max_dims=3)))]
    da, db = draw(st.sampled_from([(3, 3), (2, 3), (3, 2), (2, 2)]))
    sa, sb = bshapes(draw)
    if da == db == 3 and draw(st.booleans()):
        return np.linalg.cross, [uniform(rng, sa + (3,)), uniform(rng, sb + (3,))]
    return ((lambda a, b: np.cross(a, b)), [uniform(rng, sa + (da,)), uniform(rng, sb + (db,))])


test_first_order, test_second_order = family.tests()


def test_values_are_numpys():
    rng = np.random.default_rng(3)
    a, v = rng.standard_normal(7), rng.standard_normal(4)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((4, 3))
    for f, args in [(lambda s, t: np.convolve(s, t, "same"), (a, v)),
                    (lambda s, t: np.correlate(t, s, "same"), (a, v)),
                    (np.polyval, (v, a)), (np.kron, (x, y)), (np.cross, (x, y[:2]))]:
        out, _ = d.vjp(f, *args)
        assert np.array_equal(d.value(out), f(*args))
