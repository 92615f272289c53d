"""Cotangents that are broadcast views (a reduction's rule spreads its cotangent by
``np.broadcast_to``), taken by the compiled fast path's rules where they lie, row by row, and
unbroadcast's sum over one axis by ``deltaad._arrays.sum_axis`` instead of ``np.einsum``: the
same bits as the Python path (fast path off), on shapes whose broadcast axes are anywhere,
of one entry or many, with rows short (gathered in blocks) and long (read in place)."""

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from deltaad.numpy import fast

compiled = pytest.mark.skipif(d.backend != "c", reason="the fast path is the compiled backend's")


def _bits(x):
    """Every entry's bit pattern; every nan one token (numpy does not fix nan payloads)."""
    a = np.asarray(x, dtype=float)
    return [("nan" if math.isnan(v) else struct.pack("<d", v).hex()) for v in a.ravel()]


def _switched(flag, fn, *args):
    old = fast.set_enabled(flag)
    try:
        return fn(*args)
    finally:
        fast.set_enabled(old)


# the fast path's rules, each met by a spread cotangent (x, w: array duals of one shape)
OPS = [
    lambda x, w: x * x,
    lambda x, w: x * w,
    lambda x, w: x / (2.0 + w * w),
    lambda x, w: 2.5 * x,
    lambda x, w: x / 3.0,
    lambda x, w: -x,
    lambda x, w: x - w,
    lambda x, w: w + x,
    lambda x, w: np.sin(x),
    lambda x, w: np.cos(w),
    lambda x, w: np.exp(0.5 * x),
    lambda x, w: np.tanh(x),
    lambda x, w: np.log(1.0 + x * x),
    lambda x, w: x ** 3,
]


def _shape(rng):
    nd = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 6)) for _ in range(nd)]
    if rng.random() < 0.3:  # a long axis: many rows per block, several blocks, long rows
        shape[int(rng.integers(0, nd))] = int(rng.choice([40, 257, 700]))
    return tuple(shape)


def _program(rng):
    op = OPS[int(rng.integers(0, len(OPS)))]
    shape = _shape(rng)
    nd = len(shape)
    axes = tuple(int(a) for a in np.flatnonzero(rng.random(nd) < 0.5)) or (int(rng.integers(0, nd)),)
    keep = bool(rng.random() < 0.6)
    red = np.max if rng.random() < 0.2 else np.sum
    c = rng.normal(size=shape)

    def f(x, w):
        y = op(x, w) * c  # c: the spread cotangent first meets op's output through a * rule
        s = red(op(x, w), axis=axes, keepdims=keep)  # op's output gets the spread one
        return np.sum(s * s) + np.sum(y)

    xs = (rng.normal(size=shape), rng.normal(size=shape))
    return f, xs


@compiled
@settings(max_examples=200)
@given(st.integers(0, 2**32 - 1))
def test_spread_cotangents_same_bits_as_python_path(seed):
    rng = np.random.default_rng(seed)
    f, xs = _program(rng)
    got = _switched(True, d.grad(f, (0, 1)), *xs)
    want = _switched(False, d.grad(f, (0, 1)), *xs)
    assert _bits(got[0]) == _bits(want[0]) and _bits(got[1]) == _bits(want[1])


@compiled
@pytest.mark.parametrize("shape,axis", [((25, 300, 10), 2), ((3, 300, 10), 0), ((4, 1, 300), 2),
                                        ((2, 3, 5, 7), 1), ((600, 4), 1), ((4, 600), 0),
                                        ((2, 1000), 1)])
def test_spread_rows_short_and_long_same_bits(shape, axis):
    """A (k, n, d) spread along its short last axis (gathered a block at a time, several
    blocks), along its first (long rows read in place), along a middle axis (rows stepped
    through in C order), and a cotangent broadcast from a 0-d one."""
    rng = np.random.default_rng(sum(shape) + axis)
    x = rng.normal(size=shape)
    w = rng.normal(size=shape)

    def f(x, w):
        s = np.sum(x * x, axis=axis, keepdims=True) + np.sum(np.exp(0.1 * w) * x, axis=axis)[..., None] \
            if axis == len(shape) - 1 else np.sum(x * x, axis=axis, keepdims=True)
        return np.sum(s * s) + np.sum(np.sin(x) * w) + np.sum(x / (1.5 + w * w))

    got = _switched(True, d.grad(f, (0, 1)), x, w)
    want = _switched(False, d.grad(f, (0, 1)), x, w)
    assert _bits(got[0]) == _bits(want[0]) and _bits(got[1]) == _bits(want[1])


@compiled
@pytest.mark.parametrize("name", ["square", "mul", "div", "scale", "neg", "sub", "add", "sin"])
def test_rule_reads_a_spread_cotangent_in_place(name):
    """A fast rule called with a broadcast view gives what it gives on the view's C-ordered
    copy, to the bit, in new C-ordered arrays that share no memory with the view's base
    (left unchanged: the sweep or the user may hold it); + and - hand the view itself on."""
    ops = {"square": lambda x, w: x * x, "mul": lambda x, w: x * w,
           "div": lambda x, w: x / w, "scale": lambda x, w: 0.75 * x, "neg": lambda x, w: -x,
           "sub": lambda x, w: x - w, "add": lambda x, w: x + w, "sin": lambda x, w: np.sin(x)}
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 5, 4))
    w = rng.normal(size=(3, 5, 4)) + 3.0
    base = rng.normal(size=(3, 1, 4))
    keep = base.copy()
    out = []

    def f(x, w):
        y = ops[name](x, w)
        rule = y.trace.binding(y.id)[1]
        assert type(rule).__name__ == "ArrayRule"
        ct = np.broadcast_to(base, (3, 5, 4))
        out.append((rule(ct), rule(np.ascontiguousarray(ct)), ct))
        return np.sum(y)

    d.grad(f, (0, 1))(x, w)
    (got, want, ct), = out
    assert len(got) == len(want)
    for g, h in zip(got, want):
        if name in ("add", "sub") and g is ct:
            continue
        assert type(g) is np.ndarray and g.flags.c_contiguous and g.flags.owndata
        assert not np.shares_memory(g, base)
        assert _bits(g) == _bits(h)
    if name in ("add", "sub"):
        assert got[0] is ct
    assert keep.tobytes() == base.tobytes()


def _einsum_sum(g, axis):
    idx = "abcdefgh"[:g.ndim]
    return np.einsum(idx + "->" + idx.replace(idx[axis], ""), g)


@compiled
@settings(max_examples=300)
@given(st.integers(0, 2**32 - 1))
def test_sum_axis_is_einsums_sum(seed):
    """``_arrays.sum_axis`` gives einsum's bits (signed zeros, infinities, overflow,
    subnormals), and declines the cases where einsum adds in another order."""
    from deltaad import _arrays

    rng = np.random.default_rng(seed)
    nd = int(rng.integers(2, 6))
    shape = [int(rng.integers(1, 7)) for _ in range(nd)]
    if rng.random() < 0.2:
        shape[int(rng.integers(0, nd))] = int(rng.choice([100, 1000]))
    shape = tuple(shape)
    g = rng.normal(size=shape) * 10.0 ** rng.integers(-300, 300, shape).astype(float)
    m = rng.random(shape)
    g[m < 0.1] = -0.0
    g[(m > 0.1) & (m < 0.12)] = np.inf
    g[(m > 0.12) & (m < 0.14)] = -np.inf
    g[(m > 0.14) & (m < 0.15)] = np.nan
    g[(m > 0.15) & (m < 0.2)] = 1.7e308
    g[(m > 0.2) & (m < 0.25)] = 5e-324
    for axis in range(nd - 1):
        got = _arrays.sum_axis(g, axis)
        if int(np.prod(shape[axis + 1:])) < 2:
            assert got is None
            continue
        want = _einsum_sum(g, axis)
        assert got.shape == want.shape and got.flags.c_contiguous
        assert _bits(got) == _bits(want)
    assert _arrays.sum_axis(g, nd - 1) is None  # the last axis: np.sum's pairwise sum
    t = np.asfortranarray(g)
    if not t.flags.c_contiguous:  # a strided one: einsum's
        assert _arrays.sum_axis(t, 0) is None
    assert _arrays.sum_axis(np.zeros(shape, np.float32), 0) is None


_RULE_OPS = {"square": lambda x, w: x * x, "mul": lambda x, w: x * w,
             "div": lambda x, w: x / w, "exp": lambda x, w: np.exp(x), "cos": lambda x, w: np.cos(x),
             "neg": lambda x, w: -x, "sub": lambda x, w: w - x, "scale": lambda x, w: x * 1.5}


@compiled
@settings(max_examples=150)
@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(_RULE_OPS)))
def test_rule_on_any_broadcast_view_same_bits(seed, name):
    """A fast rule given a broadcast view of any base -- transposed, reversed, stepped, its
    broadcast axes anywhere, rows short or long -- gives the bits it gives on the view's
    C-ordered copy (each row read where it lies, in C order)."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 5)) for _ in range(nd)]
    if rng.random() < 0.4:
        shape[int(rng.integers(0, nd))] = int(rng.choice([70, 300]))
    shape = tuple(shape)
    bshape = tuple(1 if rng.random() < 0.5 else s for s in shape)
    big = rng.normal(size=tuple(2 * s + 1 for s in bshape))
    base = big[tuple(slice(None, 2 * s, 2) for s in bshape)]  # stepped
    if rng.random() < 0.5:
        base = base[tuple(slice(None, None, -1) for _ in bshape)]  # reversed
    if nd > 1 and rng.random() < 0.5:  # a transposed base, broadcast to the transposed shape
        perm = tuple(int(p) for p in rng.permutation(nd))
        inv = tuple(int(i) for i in np.argsort(perm))
        base = np.ascontiguousarray(np.transpose(base, inv)).transpose(perm)
    ct = np.broadcast_to(base, shape)
    x = rng.normal(size=shape)
    w = rng.normal(size=shape) + 4.0
    out = []

    def f(x, w):
        y = _RULE_OPS[name](x, w)
        rule = y.trace.binding(y.id)[1]
        if type(rule).__name__ == "ArrayRule":
            out.append((rule(ct), rule(np.ascontiguousarray(ct))))
        return np.sum(y)

    d.grad(f, (0, 1))(x, w)
    for got, want in out:
        for g, h in zip(got, want):
            assert _bits(g) == _bits(h)
