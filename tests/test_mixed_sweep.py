"""Tapes that mix scalar bindings with linear bindings whose adjoints are arrays or other
objects: the compiled core's mixed sweep (float adjoints in C beside object adjoints) and the
pure backend's object sweep give the same results, bit for bit and type for type.

Random tapes are built through each backend's own interface (``Tape.input``, the duals'
arithmetic, ``push_linear``) from one description, and swept with random seeds; every wanted
adjoint is compared by type and bits (arrays by dtype, shape and bytes), None included. The
kinds of binding cover the ways a sweep leaves floats: a rule giving an array cotangent (a sum
of an array), a coefficient that is not a float (an element of an array: a general tape), a
rule giving ``np.float64`` or None, zero and negative-zero coefficients and seeds (where "a sum
of -0.0 terms" and an untouched adjoint differ), and seeds that are not floats.
"""

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltaad import _pure
from helpers import programs

_core = pytest.importorskip("deltaad._core")

N = 3  # the length of every array value

coef = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0])
idx = st.integers(0, 6) | st.integers(0, 1 << 16)  # mostly recent values: long chains
ops = st.one_of(
    st.tuples(st.just("bin"), st.sampled_from("+-*"), idx, idx),
    st.tuples(st.just("scale"), idx, coef),
    st.tuples(st.just("pack"), idx, idx, idx, st.integers(0, 3)),
    st.tuples(st.just("sum"), idx, st.integers(0, 2)),
    st.tuples(st.just("elem"), idx, st.integers(0, N - 1)),
    st.tuples(st.just("amap"), idx, coef),
    st.tuples(st.just("f64"), idx, coef),
    st.tuples(st.just("lin"), idx, idx, coef, coef),
)
values = st.sampled_from([0.0, -0.0, 1.0, -1.5, 0.25, 2.0, -3.0])
seed_ct = st.one_of(values, values.map(np.float64), st.just(None))


def _pack_rule(n, mode):
    def rule(ct):
        c = np.broadcast_to(np.asarray(ct, dtype=float), (n,))
        if mode == 0:
            return tuple(c.tolist())  # floats
        if mode == 1:
            return tuple(c[k] for k in range(n))  # np.float64
        if mode == 2:
            return (None,) + tuple(c[1:].tolist())  # no cotangent for the first
        return tuple((-c).tolist())
    return rule


def _sum_rule(mode):
    def rule(ct):
        if mode == 0:
            return (np.full(N, ct, dtype=float),)
        if mode == 1:
            return (np.full(N, ct, dtype=float) * 0.0,)  # zeros of either sign
        return (float(np.asarray(ct).sum()) if mode == 2 and np.ndim(ct) == 0 else
                np.full(N, ct, dtype=float),)
    return rule


def _amap_rule(c):
    return lambda ct: (c * np.asarray(ct, dtype=float),)


def _f64_rule(c):
    return lambda ct: (np.float64(c) * ct,)


def build(B, xs, prog):
    """Record ``prog`` on a new tape of backend ``B``; returns the tape and the values, each
    ``("s", dual)`` or ``("a", id, value)``."""
    T = B.Tape(1)
    vals = [("s", T.input(x)) for x in xs]
    vals.append(("a", T.push_linear((vals[0][1].id, vals[1][1].id, vals[2][1].id), _pack_rule(3, 0)),
                 np.array(xs[:3], dtype=float)))

    def scalar(k):
        s = [v for v in vals if v[0] == "s"]
        return s[-1 - k % len(s)][1]

    def array(k):
        a = [v for v in vals if v[0] == "a"]
        return a[-1 - k % len(a)]

    def new_scalar(value, i):
        vals.append(("s", B.Dual(value, T, i, None)))

    for op in prog:
        kind = op[0]
        if kind == "bin":
            a, b = scalar(op[2]), scalar(op[3])
            vals.append(("s", a + b if op[1] == "+" else a - b if op[1] == "-" else a * b))
        elif kind == "scale":
            vals.append(("s", op[2] * scalar(op[1])))
        elif kind == "pack":
            ps = [scalar(op[k]) for k in (1, 2, 3)]
            i = T.push_linear(tuple(p.id for p in ps), _pack_rule(3, op[4]))
            vals.append(("a", i, np.array([p.value for p in ps])))
        elif kind == "sum":
            _, j, v = array(op[1])
            new_scalar(float(v.sum()), T.push_linear((j,), _sum_rule(op[2])))
        elif kind == "elem":
            _, j, v = array(op[1])
            onehot = np.zeros(N)
            onehot[op[2]] = 1.0
            new_scalar(float(v[op[2]]), T.push_linear((j,), (onehot,)))
        elif kind == "amap":
            _, j, v = array(op[1])
            vals.append(("a", T.push_linear((j,), _amap_rule(op[2])), op[2] * v))
        elif kind == "f64":
            a = scalar(op[1])
            new_scalar(op[2] * a.value, T.push_linear((a.id,), _f64_rule(op[2])))
        else:
            a, b = scalar(op[1]), scalar(op[2])
            new_scalar(op[3] * a.value + op[4] * b.value, T.push_linear((a.id, b.id), (op[3], op[4])))
    return T, vals


def describe(x):
    """Type and bits: two results compare equal only when they are the same to the bit."""
    if x is None:
        return None
    if type(x) is float or type(x) is np.float64:
        return type(x).__name__, struct.pack("<d", x)
    if type(x) is np.ndarray:
        return "array", str(x.dtype), x.shape, x.tobytes()
    return "other", type(x).__name__, repr(x)


def sweep(B, xs, prog, outs, wanted_extra):
    try:
        T, vals = build(B, xs, prog)
        T.close()
        seeds = []
        for k, ct in outs:
            v = vals[-1 - k % len(vals)]
            if v[0] == "s":
                if ct is not None and type(v[1]) is B.Dual:
                    seeds.append((v[1].id, ct))
            else:
                seeds.append((v[1], np.full(N, 1.0 if ct is None else float(ct))))
        n = T.nbindings
        wanted = list(range(len(xs))) + [w % n for w in wanted_extra]
        return [describe(a) for a in T.eval(seeds, wanted)], n
    except Exception as exc:  # noqa: BLE001 - compared between backends
        return "raised", type(exc).__name__, str(exc)


@given(st.lists(values, min_size=3, max_size=4), st.lists(ops, max_size=25),
       st.lists(st.tuples(idx, seed_ct), min_size=1, max_size=4), st.lists(idx, max_size=4))
def test_mixed_tapes_bit_for_bit(xs, prog, outs, wanted_extra):
    rp = sweep(_pure, xs, prog, outs, wanted_extra)
    rc = sweep(_core, xs, prog, outs, wanted_extra)
    assert rp == rc
    assert rp[0] != "raised", rp


def _sum_of_negative_zeros(B):
    """``y = x * c`` for c = -0.0 and 1.0, packed, summed: after the array's cotangent x's
    adjoint gets only -0.0 (the object sweep's sum, -0.0) and z's nothing (untouched)."""
    T = B.Tape(1)
    x, z = T.input(2.0), T.input(3.0)
    y1 = -0.0 * x
    y2 = x * -0.0
    w = T.push_linear((y1.id, y2.id), _pack_rule(2, 0))
    s = B.Dual(0.0, T, T.push_linear((w,), lambda ct: (np.full(2, ct),)), None)
    out = s * 1.0
    T.close()
    return [describe(a) for a in T.eval([(out.id, 1.0)], [x.id, z.id, w])]


def test_negative_zero_sum_and_untouched_after_an_array():
    rp, rc = _sum_of_negative_zeros(_pure), _sum_of_negative_zeros(_core)
    assert rp == rc
    assert rp[0] == ("float", struct.pack("<d", -0.0))  # object sweep: no 0.0 to start from
    assert rp[1] is None


def _mark_seed(B, bits):
    """A seed that is a float with the bits of one of the core's marks (a signalling nan)."""
    ct = struct.unpack("<d", struct.pack("<Q", bits))[0]
    T = B.Tape(1)
    x, z = T.input(1.0), T.input(2.0)
    i = T.push_linear((x.id,), (np.ones(1),))  # a general tape: the mixed sweep from the start
    T.close()
    (a, b) = T.eval([(z.id, ct), (i, np.ones(1))], [z.id, x.id])
    return struct.pack("<d", a), describe(b)


@pytest.mark.parametrize("bits", [0x7FF4000000000001, 0x7FF4000000000002, 0x7FF8000000000000])
def test_a_seed_with_a_marks_bits_is_kept(bits):
    rp, rc = _mark_seed(_pure, bits), _mark_seed(_core, bits)
    assert rp == rc
    assert rp[0] == struct.pack("<Q", bits)


def _long_recurrence(B, n):
    """A scalar recurrence over an array's elements ending in a sum of an array: thousands of
    float bindings swept between object ones (the core's C runs, with and without the GIL)."""
    T = B.Tape(1)
    xs = [T.input(0.001 * k - 0.3) for k in range(n)]
    y = xs[0] * 0.0
    ys = []
    for v in xs:
        y = 0.5 * y + v * v
        ys.append(y)
    ids = tuple(q.id for q in ys)
    w = T.push_linear(ids, lambda ct: tuple(np.asarray(ct).tolist()))
    s = B.Dual(0.0, T, T.push_linear((w,), lambda ct: (np.full(len(ids), ct),)), None)
    T.close()
    return [describe(a) for a in T.eval([(s.id, 1.0)], [q.id for q in xs] + [w, s.id])]


@pytest.mark.parametrize("n", [10, 5000])
def test_long_recurrence_after_an_array(n):
    assert _long_recurrence(_pure, n) == _long_recurrence(_core, n)


def _program_then_sum(B, prog, xs, cts, general):
    """A random scalar program whose outputs are packed into an array and summed: the array's
    cotangent turns the sweep at the top, and the whole program is swept after it. With
    ``general`` an element of an array input also feeds the program (a coefficient that is
    not a float: the mixed sweep from the start)."""
    T = B.Tape(1)
    ds = [T.input(x) for x in xs]
    if general:
        a = T.push_linear((ds[0].id,), _pack_rule(1, 0))
        onehot = np.ones(1)
        ds[0] = B.Dual(xs[0], T, T.push_linear((a,), (onehot,)), None)
    outs = [y for y in prog.run(B, ds) if type(y) is B.Dual]
    if not outs:
        T.close()
        return None
    w = T.push_linear(tuple(y.id for y in outs), _pack_rule(len(outs), 0))
    s = B.Dual(0.0, T, T.push_linear((w,), lambda ct: (np.asarray(cts[:len(outs)]) * ct,)), None)
    T.close()
    return [describe(a) for a in T.eval([(s.id, 1.0)], list(range(len(xs))))]


@given(programs(max_ops=20, max_out=3),
       st.lists(st.sampled_from([0.0, -0.0, 1.0, -1.0]) | st.floats(-3, 3), min_size=4, max_size=4),
       st.lists(st.sampled_from([0.0, -0.0, 1.0]) | st.floats(-2, 2), min_size=3, max_size=3),
       st.booleans())
def test_programs_then_sum_bit_for_bit(prog, xs, cts, general):
    xs = xs[:prog.n_in]
    assert _program_then_sum(_pure, prog, xs, cts, general) == \
        _program_then_sum(_core, prog, xs, cts, general)
