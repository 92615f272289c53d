"""The compiled core and the pure-Python backend agree to the last bit on the same program.

Both backends are imported directly (whatever ``DELTAAD_BACKEND`` says) and driven through
their own interface: ``Tape(level).input(x)`` gives a dual, the program computes with that
backend's own functions, ``tape.eval(seeds, wanted)`` sweeps it; ``ForwardLevel`` likewise.
Every float that comes out is compared by its bit pattern (all nans count as one), every
exception by type and message.
"""

import math
import os
import struct
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltaad import _pure
from deltaad.elementwise import TABLE
from helpers import OP_NAMES, bits, function, programs, scaled, scipy_hangs, unary_entries

_core = pytest.importorskip("deltaad._core")

BACKENDS = (_pure, _core)

UNARY_ENTRIES = {e.name: e for e in unary_entries(TABLE)}  # every function of the table
UNARY = list(UNARY_ENTRIES)
BINARY = [e.name for e in TABLE if e.arity == 2] + ["power"]

# anything, including points outside domains, at poles and at kinks
any_float = (st.floats(-30, 30, allow_nan=False)
             | st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-300, 1e300, -1e300, 710.0,
                                math.inf, -math.inf, math.nan]))


def _bits_of(x, B):
    """A comparable description of a result: bits of a float, (value, tangent) of a dual."""
    if type(x) is B.Dual:
        t = x.trace
        inner = _bits_of(x.value, B)
        return ("dual", inner, _bits_of(x.tangent, B) if t.is_forward else x.id)
    if x is None:
        return None
    if isinstance(x, float):
        return bits(x)
    if isinstance(x, int):
        return ("int", x)
    return ("other", repr(x))


def _guard(fn):
    """Run ``fn``; an exception becomes a comparable ``(type name, message)``."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - compared between backends
        return ("raised", type(exc).__name__, str(exc))


def _results_unary(B, name, x):
    f = function(UNARY_ENTRIES[name], B)
    out = {"float": _guard(lambda: bits(f(x)))}

    def rev():
        T = B.Tape(1)
        d = T.input(x)
        y = f(d)
        T.close()
        (g,) = T.eval([(y.id, 1.0)], [d.id])
        return _bits_of(y.value, B), bits(g), T.nbindings

    def fwd():
        L = B.ForwardLevel(1)
        y = f(L.input(x, 1.0))
        L.close()
        return _bits_of(y.value, B), _bits_of(y.tangent, B)

    def fwd_over_rev():
        L = B.ForwardLevel(1)
        xo = L.input(x, 1.0)
        T = B.Tape(2)
        xi = T.input(xo)
        y = f(xi)
        (g,) = T.eval([(y.id, 1.0)], [xi.id])
        T.close()
        L.close()
        return _bits_of(g, B), T.nbindings

    def rev_over_rev():
        T1 = B.Tape(1)
        xo = T1.input(x)
        T2 = B.Tape(2)
        xi = T2.input(xo)
        y = f(xi)
        (g,) = T2.eval([(y.id, 1.0)], [xi.id])
        T2.close()
        if type(g) is not B.Dual:
            return _bits_of(g, B), None
        (h,) = T1.eval([(g.id, 1.0)], [xo.id])
        T1.close()
        return _bits_of(g.value, B), _bits_of(h, B), T1.nbindings, T2.nbindings

    out["rev"] = _guard(rev)
    out["fwd"] = _guard(fwd)
    out["fwd_over_rev"] = _guard(fwd_over_rev)
    out["rev_over_rev"] = _guard(rev_over_rev)
    return out


@pytest.mark.parametrize("name", UNARY)
def test_unary_bit_for_bit(name):
    @scaled(0.6)
    @given(any_float.filter(lambda x: not scipy_hangs(name, x)))
    def prop(x):
        rp = _results_unary(_pure, name, x)
        rc = _results_unary(_core, name, x)
        assert rp == rc, (name, x)

    prop()


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("x", [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -3.0, 1e-300, 40.0, 800.0,
                               math.inf, -math.inf, math.nan], ids=repr)
def test_unary_bit_for_bit_special_points(name, x):
    if scipy_hangs(name, x):
        pytest.skip("scipy's %s does not return at %r" % (name, x))
    assert _results_unary(_pure, name, x) == _results_unary(_core, name, x)


def _results_binary(B, f, a, b):
    out = {"float": _guard(lambda: _bits_of(f(a, b), B))}

    def rev(which):
        T = B.Tape(1)
        da = T.input(a) if "a" in which else a
        db = T.input(b) if "b" in which else b
        y = f(da, db)
        T.close()
        if type(y) is not B.Dual:
            return _bits_of(y, B)
        ids = [d.id for d in (da, db) if type(d) is B.Dual]
        gs = T.eval([(y.id, 1.0)], ids)
        return _bits_of(y.value, B), [bits(g) for g in gs], T.nbindings

    def fwd(ta, tb):
        L = B.ForwardLevel(1)
        y = f(L.input(a, ta), L.input(b, tb))
        L.close()
        return _bits_of(y, B)

    def nested():
        # d/da of (d/db f) by forward over reverse
        L = B.ForwardLevel(1)
        ao = L.input(a, 1.0)
        T = B.Tape(2)
        bi = T.input(b)
        y = f(ao, bi)
        (g,) = T.eval([(y.id, 1.0)], [bi.id])
        T.close()
        L.close()
        return _bits_of(g, B)

    for which in ("a", "b", "ab"):
        out["rev_" + which] = _guard(lambda: rev(which))
    out["fwd_a"] = _guard(lambda: fwd(1.0, 0.0))
    out["fwd_b"] = _guard(lambda: fwd(0.0, 1.0))
    out["nested"] = _guard(nested)
    return out


OPERATORS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b,
}


@pytest.mark.parametrize("name", BINARY + sorted(OPERATORS))
def test_binary_bit_for_bit(name):
    def fn(B):
        return getattr(B, name) if name in BINARY else OPERATORS[name]

    @scaled(0.6)
    @given(any_float, any_float)
    def prop(a, b):
        assert _results_binary(_pure, fn(_pure), a, b) == _results_binary(_core, fn(_core), a, b)

    prop()


CONSTS = [2.5, 3, -2, 0, True, 0.0, -0.0, 1e308]


@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("c", CONSTS, ids=repr)
def test_operator_with_constants_bit_for_bit(name, c):
    op = OPERATORS[name]
    for x in (1.75, -0.5, 0.0, 3.0, -4.0, 1e-310):
        res = []
        for B in BACKENDS:
            r = {}
            for order in ("xc", "cx"):
                def run(order=order):
                    T = B.Tape(1)
                    d = T.input(x)
                    y = op(d, c) if order == "xc" else op(c, d)
                    T.close()
                    if type(y) is not B.Dual:
                        return _bits_of(y, B), T.nbindings
                    return _bits_of(y.value, B), bits(T.eval([(y.id, 1.0)], [d.id])[0]), T.nbindings

                def runf(order=order):
                    L = B.ForwardLevel(1)
                    d = L.input(x, 1.0)
                    y = op(d, c) if order == "xc" else op(c, d)
                    return _bits_of(y, B)

                r[order] = _guard(run)
                r["f" + order] = _guard(runf)
            res.append(r)
        assert res[0] == res[1], (name, c, x)


def _results_program(B, prog, xs, cts):
    def rev():
        T = B.Tape(1)
        ds = [T.input(x) for x in xs]
        outs = prog.run(B, ds)
        T.close()
        seeds = [(y.id, ct) for y, ct in zip(outs, cts) if type(y) is B.Dual]
        vals = [_bits_of(y.value if type(y) is B.Dual else y, B) for y in outs]
        adj = T.eval(seeds, [d.id for d in ds])
        return vals, [bits(a) for a in adj], T.nbindings

    def fwd():
        L = B.ForwardLevel(1)
        ds = [L.input(x, 0.25 * (k + 1)) for k, x in enumerate(xs)]
        outs = prog.run(B, ds)
        L.close()
        return [_bits_of(y, B) for y in outs]

    def nested():
        # forward over reverse: the directional derivative of the gradient
        L = B.ForwardLevel(1)
        xo = [L.input(x, 1.0 if k == 0 else 0.0) for k, x in enumerate(xs)]
        T = B.Tape(2)
        ds = [T.input(x) for x in xo]
        outs = prog.run(B, ds)
        seeds = [(y.id, ct) for y, ct in zip(outs, cts) if type(y) is B.Dual and y.trace is T]
        adj = T.eval(seeds, [d.id for d in ds])
        T.close()
        L.close()
        return [_bits_of(a, B) for a in adj], T.nbindings

    return {"rev": _guard(rev), "fwd": _guard(fwd), "nested": _guard(nested)}


@given(programs(max_ops=20, max_out=3),
       st.lists(st.floats(-3, 3, allow_nan=False), min_size=4, max_size=4),
       st.lists(st.floats(-2, 2, allow_nan=False), min_size=3, max_size=3))
def test_random_programs_bit_for_bit(prog, xs, cts):
    xs = xs[:prog.n_in]
    cts = cts[:len(prog.outs)]
    rp = _results_program(_pure, prog, xs, cts)
    rc = _results_program(_core, prog, xs, cts)
    assert rp == rc, prog


def _results_program_second_order(B, prog, xs, cts):
    """Random programs under the other nestings: the inner trace's values (and, forward, its
    tangents) are outer duals, so every operator's fast path also runs with non-float operands,
    and the order of the bindings it makes on the outer tape (their ids) is compared too."""

    def rev_over_rev():
        T1 = B.Tape(1)
        xo = [T1.input(x) for x in xs]
        T2 = B.Tape(2)
        ds = [T2.input(x) for x in xo]
        outs = prog.run(B, ds)
        seeds = [(y.id, ct) for y, ct in zip(outs, cts) if type(y) is B.Dual and y.trace is T2]
        adj = T2.eval(seeds, [d.id for d in ds])
        T2.close()
        seeds1 = [(a.id, 1.0) for a in adj if type(a) is B.Dual and a.trace is T1]
        adj1 = T1.eval(seeds1, [d.id for d in xo])
        T1.close()
        return ([_bits_of(a, B) for a in adj], [_bits_of(a, B) for a in adj1], T1.nbindings,
                T2.nbindings)

    def rev_over_fwd():
        T = B.Tape(1)
        xo = [T.input(x) for x in xs]
        # tangents: outer duals (tangent products are recorded on T) and floats
        to = [T.input(0.25 * (k + 1)) if k % 2 == 0 else 0.25 * (k + 1) for k in range(len(xs))]
        L = B.ForwardLevel(2)
        ds = [L.input(x, t) for x, t in zip(xo, to)]
        outs = prog.run(B, ds)
        L.close()
        tans = [y.tangent for y in outs if type(y) is B.Dual and y.trace is L]
        seeds = [(t.id, ct) for t, ct in zip(tans, cts) if type(t) is B.Dual and t.trace is T]
        wanted = [d.id for d in xo] + [t.id for t in to if type(t) is B.Dual]
        adj = T.eval(seeds, wanted)
        T.close()
        return [_bits_of(y, B) for y in outs], [_bits_of(a, B) for a in adj], T.nbindings

    def fwd_over_fwd():
        L1 = B.ForwardLevel(1)
        xo = [L1.input(x, 1.0 if k == 0 else -0.5) for k, x in enumerate(xs)]
        L2 = B.ForwardLevel(2)
        ds = [L2.input(x, L1.input(0.25 * (k + 1), 0.5) if k % 2 == 0 else 0.25 * (k + 1))
              for k, x in enumerate(xo)]
        outs = prog.run(B, ds)
        L2.close()
        L1.close()
        return [_bits_of(y, B) for y in outs]

    return {"rev_over_rev": _guard(rev_over_rev), "rev_over_fwd": _guard(rev_over_fwd),
            "fwd_over_fwd": _guard(fwd_over_fwd)}


@given(programs(max_ops=12, max_out=2),
       st.lists(st.floats(-3, 3, allow_nan=False), min_size=4, max_size=4),
       st.lists(st.floats(-2, 2, allow_nan=False), min_size=2, max_size=2))
def test_random_programs_second_order_bit_for_bit(prog, xs, cts):
    xs = xs[:prog.n_in]
    cts = cts[:len(prog.outs)]
    rp = _results_program_second_order(_pure, prog, xs, cts)
    rc = _results_program_second_order(_core, prog, xs, cts)
    assert rp == rc, prog


ARITH = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}


def _operator_paths(B, make, x0, y0):
    """Each arithmetic operator as dual-dual, dual-float and float-dual (the fast paths) and
    with an int (the general path), plus negation, on two duals of one trace from ``make``;
    on a tape, also the adjoints of both inputs and the size of the outer tape, if any."""

    def result(tr, x, y, r):
        if tr.is_forward or type(r) is not B.Dual or r.trace is not tr:
            return _bits_of(r, B)
        adj = tr.eval([(r.id, 1.0)], [x.id, y.id])
        outer = x.value.trace if type(x.value) is B.Dual else None
        n_outer = outer.nbindings if outer is not None and not outer.is_forward else None
        return _bits_of(r, B), [_bits_of(a, B) for a in adj], tr.nbindings, n_outer

    out = {}
    for name, op in ARITH.items():
        for order, fl in (("dd", None), ("df", "b"), ("fd", "a"), ("di", "int")):
            def run(op=op, fl=fl):
                tr, x, y = make(B, x0, y0)
                if fl == "b":
                    r = op(x, y0)
                elif fl == "a":
                    r = op(x0, y)
                elif fl == "int":
                    r = op(x, 2)
                else:
                    r = op(x, y)
                return result(tr, x, y, r)
            out[name + "_" + order] = _guard(run)

    def neg():
        tr, x, y = make(B, x0, y0)
        return result(tr, x, y, -x)
    out["neg"] = _guard(neg)
    return out


def _tape_pair(B, a, b):
    T = B.Tape(1)
    return T, T.input(a), T.input(b)


def _forward_pair(B, a, b):
    L = B.ForwardLevel(1)
    return L, L.input(a, 0.5), L.input(b, -1.5)


# The outer traces of the nested pairs, kept open: a trace is kept by whoever opened it, not
# by its duals (in the core a trace nothing holds is finished and its duals escaped).
_OUTER = []


def _nested_pair(B, a, b):
    """Two duals of a tape whose values are duals of an outer forward level."""
    L = B.ForwardLevel(1)
    _OUTER.append(L)
    T = B.Tape(2)
    return T, T.input(L.input(a, 1.0)), T.input(L.input(b, 0.0))


def _nested_tapes(B, a, b):
    """Two duals of a tape whose values are duals of an outer tape."""
    T1 = B.Tape(1)
    _OUTER.append(T1)
    T2 = B.Tape(2)
    return T2, T2.input(T1.input(a)), T2.input(T1.input(b))


def _closed(make):
    def closed(B, a, b):
        tr, x, y = make(B, a, b)
        tr.close()
        return tr, x, y
    return closed


@pytest.mark.parametrize("make", [_tape_pair, _forward_pair, _nested_pair, _nested_tapes,
                                  _closed(_tape_pair), _closed(_forward_pair)],
                         ids=["tape", "forward", "nested", "nested_tapes", "closed_tape",
                              "closed_forward"])
@pytest.mark.parametrize("x0,y0", [(1.75, -0.5), (0.0, 0.0), (-0.0, 3.0), (2.0, -0.0),
                                   (math.inf, 0.0), (1e308, 1e-308)], ids=repr)
def test_operator_paths_bit_for_bit(make, x0, y0):
    """Every operand order and kind of every operator's fast path agrees with the core,
    including division by zero (a float or a dual zero) and a closed trace."""
    rp = _operator_paths(_pure, make, x0, y0)
    rc = _operator_paths(_core, make, x0, y0)
    _OUTER.clear()
    assert rp == rc


def test_operator_paths_raise_on_closed_and_zero():
    """The cases ``test_operator_paths_bit_for_bit`` relies on do occur: an escaped dual raises
    on every path, and a zero divisor raises ZeroDivisionError on every path."""
    closed = _operator_paths(_pure, _closed(_tape_pair), 1.0, 2.0)
    assert all(v[0] == "raised" and v[1] == "EscapedDualError" for v in closed.values()), closed
    zero = _operator_paths(_pure, _tape_pair, 0.0, 0.0)
    for k in ("div_dd", "div_df", "div_fd"):
        assert zero[k][:2] == ("raised", "ZeroDivisionError"), zero
    zero = _operator_paths(_pure, _nested_pair, 1.0, 0.0)
    assert zero["div_dd"][:2] == ("raised", "ZeroDivisionError"), zero


def test_program_pool_covers_every_op():
    assert len(OP_NAMES) >= 30


def test_eval_seeds_and_wanted_bit_for_bit():
    """Several seeds (one id seeded twice), wanted ids in any order and repeated, interior ids."""
    res = []
    for B in BACKENDS:
        T = B.Tape(1)
        a = T.input(0.7)
        b = T.input(-1.3)
        c = B.sin(a * b) + b
        d = B.exp(c) * a
        e = d / (c + 3.0)
        T.close()
        seeds = [(e.id, 0.5), (d.id, -2.0), (e.id, 1.25)]
        wanted = [b.id, a.id, c.id, a.id, e.id]
        res.append(([bits(v) for v in T.eval(seeds, wanted)], T.nbindings,
                    [bits(v) for v in T.eval([], [a.id])]))
    assert res[0] == res[1]
    assert res[0][1] == 2 + 7  # 2 inputs; mul, sin, add, exp, mul, add, div


def test_constants_record_nothing():
    for B in BACKENDS:
        T = B.Tape(1)
        x = T.input(1.5)
        y = 2.0 * 3.0 + x  # one binding: the constant is folded by Python
        n = T.nbindings
        z = x // 2.0  # piecewise constant: a plain number, no binding
        assert T.nbindings == n == 2
        assert type(z) is float
        T.close()


def test_core_memory_per_binary_op():
    n = 100000
    T = _core.Tape(1)
    x = T.input(0.5)
    y = T.input(1.5)
    for _ in range(n // 2):
        x = x * y
        x = x + y
    T.close()
    assert T.nbindings == n + 2
    assert T.nbytes <= 40 * T.nbindings
    T2 = _pure.Tape(1)
    x = T2.input(0.5)
    y = T2.input(1.5)
    for _ in range(n // 2):
        x = x * y
        x = x + y
    T2.close()
    assert T2.nbindings == T.nbindings


def test_same_interface():
    """The names the Python layer uses exist in both backends."""
    names = (["Tape", "ForwardLevel", "Dual", "strip", "check_open", "lift", "set_hooks", "power"]
             + [e.name for e in TABLE])
    for name in names:
        assert hasattr(_pure, name) and hasattr(_core, name), name
    for attr in ("input", "eval", "close", "nbindings", "nbytes", "binding", "push_linear",
                 "level", "closed"):
        assert hasattr(_core.Tape(1), attr) and hasattr(_pure.Tape(1), attr), attr
    for B in BACKENDS:
        assert B.Tape.is_forward is False or B.Tape(1).is_forward is False
        assert B.ForwardLevel(1).is_forward is True


@pytest.mark.parametrize("B", BACKENDS, ids=["pure", "core"])
def test_scalar_dual_answers_like_a_numpy_scalar(B):
    """``shape``, ``ndim``, ``size`` and ``dtype`` of a scalar dual are a float64 scalar's, on
    a tape, on a forward level and nested, and they do not record anything."""
    ref = np.float64(1.5)
    T = B.Tape(1)
    F = B.ForwardLevel(2)
    x = T.input(1.5)
    y = F.input(x, 1.0)
    n = T.nbindings
    for d in (x, y, x * 2.0):
        assert (d.shape, d.ndim, d.size, d.dtype) == (ref.shape, ref.ndim, ref.size, ref.dtype)
        assert type(d.shape) is tuple and type(d.ndim) is int and type(d.size) is int
    assert T.nbindings == n + 1  # only x * 2.0
    with pytest.raises(AttributeError):
        x.shape = (1,)


def test_escaped_error_same_message():
    res = []
    for B in BACKENDS:
        T = B.Tape(7)
        x = T.input(1.0)
        T.close()
        res.append((_guard(lambda: x * 2.0), _guard(lambda: B.sin(x)), _guard(lambda: -x),
                    _guard(lambda: 2.0 ** x), _guard(lambda: B.hypot(x, 1.0)),
                    _guard(lambda: float(x)), _guard(lambda: int(x)), repr(x), format(x, ".1f")))
    assert res[0] == res[1]
    assert res[0][0][1] == "EscapedDualError"


def test_binding_inspection_same():
    res = []
    for B in BACKENDS:
        T = B.Tape(1)
        a = T.input(0.7)
        b = T.input(2.0)
        c = a * b
        d = B.sin(c)
        T.close()
        res.append([T.binding(i) for i in range(T.nbindings)])
    assert res[0] == res[1]
    assert res[0][2] == ((0, 1), (2.0, 0.7))


# -- the bulk paths for many inputs (Tape.inputs, ForwardLevel.inputs, eval over a range) --


@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=0, max_size=40),
       st.integers(0, 5),
       st.lists(st.floats(-2, 2, allow_nan=False), min_size=1, max_size=3))
def test_inputs_and_range_wanted_bit_for_bit(xs, before, cts):
    """``Tape.inputs`` after other bindings gives consecutive ids; ``eval`` over a ``range`` of
    wanted ids (forwards, backwards, strided) equals ``eval`` over the same ids as a list."""
    res = []
    for B in BACKENDS:
        T = B.Tape(1)
        pre = [T.input(0.5 + k) for k in range(before)]
        ins = T.inputs(xs)
        assert [d.id for d in ins] == list(range(before, before + len(xs)))
        acc = pre[0] if pre else 0.0
        for k, d in enumerate(ins):
            acc = acc * 0.5 + B.sin(d) * d if k % 2 else acc + d * d
        T.close()
        seeds = [(acc.id, ct) for ct in cts] if type(acc) is B.Dual else []
        out = []
        n = T.nbindings
        for r in (range(before, before + len(xs)), range(n - 1, -1, -1), range(0, n, 3),
                  range(before, before)):
            got = T.eval(seeds, r)
            assert [bits(v) for v in got] == [bits(v) for v in T.eval(seeds, list(r))]
            out.append([bits(v) for v in got])
        res.append(out)
    assert res[0] == res[1]


@pytest.mark.parametrize("B", BACKENDS, ids=lambda B: B.__name__)
def test_range_wanted_out_of_bounds(B):
    T = B.Tape(1)
    x = T.inputs([1.0, 2.0])
    T.close()
    for r in (range(0, 3), range(-1, 1), range(1, -2, -1)):
        with pytest.raises(IndexError, match="wanted id"):
            T.eval([(x[1].id, 1.0)], r)


@given(st.lists(st.floats(-3, 3, allow_nan=False), max_size=20),
       st.lists(st.floats(-3, 3, allow_nan=False), max_size=20))
def test_forward_inputs_bit_for_bit(xs, ts):
    res = []
    for B in BACKENDS:
        L = B.ForwardLevel(1)
        ds = L.inputs(xs, ts)
        assert len(ds) == min(len(xs), len(ts))
        res.append([(bits(d.value), bits(d.tangent)) for d in ds])
        L.close()
    assert res[0] == res[1]


@given(st.lists(st.one_of(st.floats(allow_nan=True), st.integers(), st.booleans(), st.none(),
                          st.just(_core.Tape(1).input(1.0))), max_size=8))
def test_all_floats_agrees(items):
    """``all_floats`` is exact about type: floats only (not ints, bools, subclasses or duals),
    for lists, tuples and other iterables, in both backends."""
    class F(float):
        pass
    items = items + [F(1.0)] if len(items) % 3 == 1 else items
    expect = all(type(x) is float for x in items)
    for B in BACKENDS:
        assert B.all_floats(items) is expect
        assert B.all_floats(tuple(items)) is expect
    assert _core.all_floats(iter(items)) is expect


@pytest.mark.parametrize("B", BACKENDS, ids=lambda B: B.__name__)
def test_dual_value_none_is_an_error(B):
    T = B.Tape(1)
    T.input(1.0)
    with pytest.raises(TypeError, match="not None"):
        B.Dual(None, T, 0, None)
    with pytest.raises(TypeError, match="tangent"):
        B.ForwardLevel(1).input(1.0, None)


def _hand_made(B):
    """Duals and bindings made by hand with ids the tape does not hold: each a clear error,
    never a write outside the adjoint array (the core's sweep trusts ids)."""
    T = B.Tape(1)
    x = T.input(2.0)
    L = B.ForwardLevel(2)
    return {
        "past_end": _guard(lambda: B.Dual(1.0, T, 1, None)),
        "huge": _guard(lambda: B.Dual(1.0, T, 10 ** 8, None)),
        "negative": _guard(lambda: B.Dual(1.0, T, -1, None)),
        "not_int": _guard(lambda: B.Dual(1.0, T, 0.5, None)),
        "forward_id": _guard(lambda: B.Dual(1.0, L, 3, 1.0)),
        "not_trace": _guard(lambda: B.Dual(1.0, "tape", 0, None)),
        "ok": _guard(lambda: _bits_of(B.Dual(3.0, T, x.id, None) * x, B)),
        "parent_ahead": _guard(lambda: T.push_linear([T.nbindings], (1.0,))),
        "parent_huge": _guard(lambda: T.push_linear([10 ** 7], (1.0,))),
        "parent_negative": _guard(lambda: T.push_linear([0, -1], (1.0, 1.0))),
        "parent_float": _guard(lambda: T.push_linear([0.0], (1.0,))),
        "parent_ok": _guard(lambda: [bits(a) for a in
                                     T.eval([(T.push_linear([0], (3.0,)), 1.0)], [0])]),
    }


def test_hand_made_ids_are_checked():
    rp = _hand_made(_pure)
    rc = _hand_made(_core)
    assert rp == rc
    for k, v in rp.items():
        if k == "ok":
            assert v == ("dual", bits(6.0), 1), v
        elif k == "parent_ok":
            assert v == [bits(3.0)], v
        elif k in ("not_int", "not_trace", "parent_float"):
            assert v[:2] == ("raised", "TypeError"), (k, v)
        else:
            assert v[:2] == ("raised", "ValueError"), (k, v)
            assert "binding" in v[2] or "id -1" in v[2], (k, v)


# --------------------------------------------------------------------------------------------
# Module classes: deltaad.stdmath's switch of math, numpy, statistics


class _Switched(types.ModuleType):
    __slots__ = ()


class _Switched2(types.ModuleType):
    __slots__ = ()


class _WithSlot(types.ModuleType):  # adds to the layout: CPython refuses the swap
    __slots__ = ("x",)


class _SubSwitched(_Switched):  # not a direct subclass: the core leaves it to CPython
    __slots__ = ()


_CLASSES = [types.ModuleType, _Switched, _Switched2, _WithSlot, _SubSwitched, int, "module"]


def _assigned(obj, cls):
    """What CPython's own ``obj.__class__ = cls`` leaves (the class) or raises."""
    try:
        obj.__class__ = cls
    except Exception as e:  # noqa: BLE001 -- the error is what is compared
        return ("raised", type(e).__name__)
    return type(obj)


@pytest.mark.parametrize("B", BACKENDS, ids=["pure", "core"])
@given(picks=st.lists(st.lists(st.integers(0, len(_CLASSES) - 1), min_size=1, max_size=3),
                      max_size=12))
def test_module_classes_are_set_as_the_attribute_sets_them(B, picks):
    """``set_module_classes`` (which the core swaps directly where both classes have a
    module's layout) leaves each module the class CPython's own ``__class__`` assignment
    leaves a twin module, or raises its error; and once every module is plain again, no
    reference to a class is left or lost."""
    import sys

    before = {c: sys.getrefcount(c) for c in _CLASSES[1:5]}  # the heap classes
    mods = [types.ModuleType("m%d" % k) for k in range(3)]
    twins = [types.ModuleType("t%d" % k) for k in range(3)]
    for pick in picks:
        ms = tuple(mods[:len(pick)])
        cs = tuple(_CLASSES[k] for k in pick)
        want = [_assigned(t, c) for t, c in zip(twins, cs)]
        got = None
        try:
            B.set_module_classes(ms, cs)
        except Exception as e:  # noqa: BLE001
            got = ("raised", type(e).__name__)
        if got is not None:  # the first refusal stops the loop, as it does the attribute's
            k = next(k for k, w in enumerate(want) if type(w) is tuple)
            assert got == want[k]
            for t, m in zip(twins[k + 1:], mods[k + 1:]):
                t.__class__ = type(m)  # the twins that went on are put back
            want = want[:k]
        assert [type(m) for m in mods[:len(want)]] == want
    ms = cs = want = None
    B.set_module_classes(tuple(mods), (types.ModuleType,) * 3)
    for t in twins:
        t.__class__ = types.ModuleType
    assert {c: sys.getrefcount(c) for c in before} == before


@pytest.mark.parametrize("backend", ["python", "c"])
def test_module_classes_set_raise_the_audit_event_of_the_attribute(backend):
    """An audit hook sees ``set_module_classes`` as it sees ``module.__class__ = cls``; a hook
    that changes the class meanwhile is overruled, as it is there."""
    import subprocess
    import sys

    code = (
        "import sys, types\n"
        "from deltaad._backend import B\n"
        "class S(types.ModuleType):\n    __slots__ = ()\n"
        "seen = []\n"
        "sys.addaudithook(lambda e, a: seen.append((a[1], a[2].__name__))\n"
        "                 if e == 'object.__setattr__' else None)\n"
        "m = types.ModuleType('m')\n"
        "B.set_module_classes((m,), (S,))\n"
        "B.set_module_classes((m,), (S,))\n"  # already so: nothing set, no event
        "B.set_module_classes((m,), (types.ModuleType,))\n"
        "m.__class__ = S\n"
        "print(seen)\n"
        # a hook that changes the class while the event is raised: the class set last stands,
        # and every class reference is counted
        "class S2(types.ModuleType):\n    __slots__ = ()\n"
        "m2 = types.ModuleType('m2')\n"
        "busy = []\n"
        "def meddle(e, a):\n"
        "    if e == 'object.__setattr__' and a[0] is m2 and not busy:\n"
        "        busy.append(1)\n"
        "        m2.__class__ = S2\n"
        "sys.addaudithook(meddle)\n"
        "r = sys.getrefcount(S), sys.getrefcount(S2)\n"
        "B.set_module_classes((m2,), (S,))\n"
        "assert type(m2) is S, type(m2)\n"
        "B.set_module_classes((m2,), (types.ModuleType,))\n"
        "print((sys.getrefcount(S), sys.getrefcount(S2)) == r)\n")
    env = dict(os.environ, DELTAAD_BACKEND=backend)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    seen, refs_kept = r.stdout.split("\n")[:2]
    assert seen == repr([("__class__", "S"), ("__class__", "module"), ("__class__", "S")])
    # the core reads the old class after the hooks ran and counts every reference (CPython's
    # own assignment, the pure backend's, reads it before them: the class a hook set keeps a
    # reference for good there)
    if backend == "c":
        assert refs_kept == "True"


# --------------------------------------------------------------------------------------------
# call_on_inputs: the body of a differentiation of one list or tuple of floats


def _on_inputs(B, xs, kind, n, nargs, has_aux, out_kind, forward):
    """What ``call_on_inputs`` gives and calls for one draw, in plain terms."""
    seen = []
    T = B.ForwardLevel(1) if forward else B.Tape(1)
    xs = kind(xs)
    ts = kind([0.5 * x for x in xs]) if forward else None
    args = tuple(range(nargs))

    def fn(*a, k=None):
        l = a[n]
        seen.append((type(l).__name__, [d.value for d in l], k,
                     [a[j] for j in range(nargs) if j != n]))
        y = l[0] * 2.0
        for d in l[1:]:
            y = y + d * d
        out = {"dual": y, "float": 1.5, "list": [y, 3.0]}[out_kind]
        return (out, "aux") if has_aux else out

    def finish(trace, r):
        seen.append(("finish", trace is T, type(r).__name__))
        return ("packed", r)

    def body(trace):
        return trace.call_on_inputs(fn, args, {"k": 7}, n, xs, ts, has_aux, finish)

    try:
        r = T.run(body, T)
    except Exception as e:  # noqa: BLE001 -- the error is what is compared
        return ("raised", type(e).__name__, str(e)), seen
    if r is None:
        return None, seen
    ids, out, aux = r
    desc = [None if ids is None else (ids.start, len(ids), ids.step)]
    if type(out) is B.Dual:
        desc.append(("dual", bits(out.value)))
        if forward:
            desc.append(bits(out.tangent))
        else:
            desc.append([bits(a) for a in T.eval([(out.id, 1.0)], ids)])
    else:
        desc.append(repr(out) if not isinstance(out, tuple) else ("packed", type(out[1]).__name__))
    desc.append(aux if not isinstance(aux, tuple) else ("packed", type(aux[1]).__name__))
    return desc, seen


@given(xs=st.lists(st.floats(-10, 10), max_size=6), kind=st.sampled_from([list, tuple]),
       nargs=st.integers(1, 3), n=st.integers(-1, 3), has_aux=st.booleans(),
       out_kind=st.sampled_from(["dual", "float", "list"]), forward=st.booleans(),
       spoil=st.booleans())
def test_call_on_inputs_agrees_between_backends(xs, kind, nargs, n, has_aux, out_kind, forward,
                                                spoil):
    """``Trace.call_on_inputs`` passes the function its argument ``n`` as input duals of the
    floats (a list or a tuple, as given) and the other arguments and keywords as they are;
    its output is swept to the right adjoints (or carries the right tangent); ``finish`` is
    called on an output that is not a dual, and on every one with an aux; a list that is not
    all floats (or empty), gives None with nothing called; an argument position out of range
    raises. The two backends agree on all of it, to the bit."""
    if spoil and xs:
        xs = xs[:-1] + [1]  # an int: not a list of floats
    rp = _on_inputs(_pure, xs, kind, n, nargs, has_aux, out_kind, forward)
    rc = _on_inputs(_core, xs, kind, n, nargs, has_aux, out_kind, forward)
    assert rp == rc
    r, seen = rp
    if not 0 <= n < nargs:
        assert r[0] == "raised" and r[1] == "IndexError" and not seen
        return
    if not xs or spoil:
        assert r is None and not seen
        return
    name, values, k, others = seen[0]
    assert (name, values, k, others) == (kind.__name__, list(xs), 7,
                                        [j for j in range(nargs) if j != n])
    called = has_aux or out_kind != "dual"
    assert len(seen) == 1 + called
    if out_kind == "dual" and not has_aux:
        ids, (tag, v), derivative = r[0], r[1], r[2]
        y = xs[0] * 2.0
        for x in xs[1:]:
            y = y + x * x
        assert v == bits(y)
        if forward:
            assert ids is None
            t = 0.5 * xs[0] * 2.0
            for x in xs[1:]:
                t = t + 2 * x * (0.5 * x)
            assert math.isclose(struct.unpack("<d", derivative)[0], t, rel_tol=1e-12,
                                abs_tol=1e-12)
        else:
            assert ids[1] == len(xs) and ids[2] == 1
            assert derivative == [bits(2.0)] + [bits(x + x) for x in xs[1:]]
