"""The per-input, per-output and per-comparison fast paths say exactly what the general ones say.

Comparisons of float duals, ``bool()``, making input duals in bulk, reading outputs and
tangents in bulk, seeds given as two sequences (``Seeds``), reused dual objects, and the
Python layer's list-valued outputs: each has a shortcut for the common case, and each is held
here against an answer computed another way (Python's own float comparison, one output at a
time, the pairs form of the seeds), on both backends.
"""

import fractions
import gc
import math
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad
from deltaad import _pure
from helpers import bits

_core = pytest.importorskip("deltaad._core")

BACKENDS = (_pure, _core)
each_backend = pytest.mark.parametrize("B", BACKENDS, ids=lambda B: B.__name__)

OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
       "!=": lambda a, b: a != b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}

special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, math.inf, -math.inf,
                           math.nan, 2.0 ** 53, 2.0 ** 53 + 2.0, -(2.0 ** 53), 9.2e18])
value = st.floats(allow_nan=True, allow_infinity=True) | special
other = (value
         | st.integers(-2 ** 70, 2 ** 70)
         | st.sampled_from([0, 1, -1, True, False, 2 ** 53, 2 ** 53 + 1, -(2 ** 53) - 1,
                            2 ** 63, -(2 ** 63), 2 ** 64 + 1, 10 ** 30]))


def _duals(B, v):
    """Float duals of value ``v`` on every kind of trace: a tape, a forward level, a closed
    tape (comparisons still work there), and a tape over an outer forward level (nested)."""
    T = B.Tape(1)
    L = B.ForwardLevel(2)
    C = B.Tape(3)
    c = C.input(v)
    C.close()
    L0 = B.ForwardLevel(4)
    T5 = B.Tape(5)
    nested = T5.input(L0.input(v, 1.0))
    return [T.input(v), L.input(v, 0.0), c, nested]


@given(value, other)
def test_comparisons_are_python_comparisons_of_the_values(v, x):
    """Every comparison of a dual with a float, an int (exact even past 2**53, as Python
    compares a float with an int), a bool or a dual gives the bool Python gives for the
    values, from either side, on both backends."""
    for B in BACKENDS:
        duals = _duals(B, v)
        others = [x] + [d for d in _duals(B, float(x))] if type(x) is float else [x]
        for d in duals:
            for o in others:
                ov = o.value if type(o) is B.Dual else o
                while type(ov) is B.Dual:
                    ov = ov.value
                for name, op in OPS.items():
                    got = op(d, o)
                    assert type(got) is bool and got == op(v, ov), (B.__name__, name, v, ov)
                    got = op(o, d)
                    assert type(got) is bool and got == op(ov, v), (B.__name__, name, ov, v)


@given(value)
def test_bool_is_the_truth_of_the_value(v):
    for B in BACKENDS:
        for d in _duals(B, v):
            assert bool(d) is bool(v)
            assert (1 if d else 0) == (1 if v else 0)


@each_backend
def test_comparisons_with_other_number_types(B):
    """numpy scalars and fractions compare by value (numpy's answer may be np.bool_); strings
    and None compare unequal, and order comparisons with them raise as for floats."""
    d = B.Tape(1).input(1.5)
    assert (d < np.float64(2.0)) and (d > np.float32(1.0)) and (d == np.int64(1) + 0.5)
    assert d == fractions.Fraction(3, 2) and d < fractions.Fraction(7, 4)
    assert (d == "1.5") is False and (d != None) is True  # noqa: E711
    with pytest.raises(TypeError):
        d < "x"  # noqa: B015
    with pytest.raises(TypeError):
        None >= d  # noqa: B015


# -- reused dual objects (core) ---------------------------------------------------------------


def test_core_reuses_freed_duals_and_tracemalloc_still_sees_them():
    """Freed duals are kept and handed out again, but while tracemalloc traces every dual is a
    fresh allocation, so memory measurements count them (about 64 bytes each)."""
    T = _core.Tape(1)
    ds = T.inputs([0.5] * 1000)
    addrs = {id(d) for d in ds}
    del ds
    again = _core.Tape(1).inputs([0.25] * 1000)
    assert len(addrs & {id(d) for d in again}) > 900  # the same objects, reused
    assert all(d.value == 0.25 and d.trace.level == 1 for d in again)
    del again
    n = 20000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        T = _core.Tape(1)  # a trace made while tracing: no reuse
        ds = T.inputs([0.5] * n)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown >= 48 * n, grown
    del ds
    _core.release_memory()
    assert deltaad.grad(lambda xs: xs[0] * xs[1])([2.0, 3.0]) == [3.0, 2.0]


@each_backend
def test_freeing_a_dual_frees_what_only_it_held(B):
    """A freed dual is kept for reuse in one step only while its trace's handle stays alive
    and its value is a float: the last dual of a finished trace frees the handle (a weak
    reference to it calls back when that dual goes, not before), a dual whose value is a
    dual of a lower trace lets go of that value, and the duals made next are right."""
    called = []
    T = B.Tape(1)
    d = T.input(2.0)
    e = d * 3.0
    del T  # finished: its duals hold what they name of it, nothing holds them
    w = weakref.ref(e.trace, lambda _: called.append(1))
    del d
    assert not called and w() is not None
    del e
    assert called == [1]
    T1 = B.Tape(1)
    x = T1.input(2.0)
    held = sys.getrefcount(x)
    T2 = B.Tape(2)
    y = T2.input(x)
    assert sys.getrefcount(x) > held
    del y
    assert sys.getrefcount(x) == held
    assert deltaad.grad(lambda xs: xs[0] * xs[1] + xs[2])([2.0, 3.0, 5.0]) == [3.0, 2.0, 1.0]


@pytest.mark.parametrize("how", ["grad", "vjp", "jvp"])
def test_result_floats_are_reused_only_when_nothing_else_holds_them(how):
    """Result lists (gradients, output values, tangents) reuse the floats of results the
    caller dropped; any float the caller still holds (the list, one item of it, an item kept
    after its list went) keeps its value, and every result is the one plain floats give."""
    def f(xs):
        return [deltaad.sin(x) * x for x in xs]

    def run(xs):
        if how == "grad":
            return deltaad.grad(lambda v: sum(f(v)))(xs)
        if how == "vjp":
            out, pb = deltaad.vjp(f, xs)
            return out + pb([1.0] * len(out))[0]
        out, t = deltaad.jvp(f, (xs,), (xs,))
        return out + t

    kept_lists, kept_items, expect_lists, expect_items = [], [], [], []
    for k in range(12):
        xs = [0.01 * (k + 1) * j - 0.3 for j in range(300)]
        r = run(xs)
        assert _bits(r) == _bits(_expected(how, xs))
        if k % 3 == 0:
            kept_lists.append(r)
            expect_lists.append(list(r))
        if k % 3 == 1:
            kept_items.append(r[7])
            expect_items.append(float(repr(r[7])))
        del r
    assert [_bits(r) for r in kept_lists] == [_bits(r) for r in expect_lists]
    assert _bits(kept_items) == _bits(expect_items)
    _core.release_memory()
    assert _bits(kept_items) == _bits(expect_items)


def _bits(xs):
    return [bits(x) for x in xs]


def test_result_floats_are_fresh_while_tracemalloc_traces():
    """While tracemalloc traces, a gradient's floats are new allocations (as its duals are),
    so a memory measurement counts them: about 24 bytes each plus the list's 8."""
    xs = [0.5 + k for k in range(5000)]
    g = deltaad.grad(lambda v: sum(v))
    g(xs)  # a first gradient: its floats would be reused, were nothing tracing
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        r = g(xs)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert r == [1.0] * len(xs)
    assert grown >= 32 * len(xs), grown


def _expected(how, xs):
    """``run``'s result in plain floats, the core's operations in its order: the value
    ``sin(x) * x``, its derivative ``sin(x) + cos(x) * x`` (the sweep adds the product's
    term first), and the tangent along ``x``, ``x * (cos(x) * x) + sin(x) * x``."""
    vals = [math.sin(x) * x for x in xs]
    grads = [math.sin(x) + math.cos(x) * x for x in xs]
    if how == "grad":
        return grads
    if how == "vjp":
        return vals + grads
    return vals + [x * (math.cos(x) * x) + math.sin(x) * x for x in xs]


def _bits(xs):
    return [bits(x) for x in xs]


def _pure_run(how, f, xs):
    """``run``'s result computed on the pure backend's types (no kept floats there)."""
    n = len(xs)
    if how == "jvp":
        L = _pure.ForwardLevel(1)
        out = f(L.inputs(xs, xs))
        L.close()
        return [o.value for o in out] + [o.tangent for o in out]
    T = _pure.Tape(1)
    out = f(T.inputs(xs))
    T.close()
    if how == "grad":
        s = 0
        T2 = _pure.Tape(1)
        ins = T2.inputs(xs)
        y = f(ins)
        for o in y:
            s = s + o
        T2.close()
        return T2.eval([(s.id, 1.0)], range(0, n))
    adj = T.eval([(o.id, 1.0) for o in out], range(0, n))
    return [o.value for o in out] + adj


def test_core_reused_duals_across_threads():
    """Threads making and freeing many duals at once (so reusing each other's) all get their
    own exact gradients."""
    errors = []

    def work(k):
        try:
            xs = [float(k + j) for j in range(3000)]
            for _ in range(5):
                g = deltaad.grad(lambda v: sum(x * x for x in v))(xs)
                if g != [2.0 * x for x in xs]:
                    errors.append(k)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- bulk reads: all_scalars, read_outputs, read_tangents ---------------------------------------


@given(st.lists(st.sampled_from(["f", "d", "fd", "other", "int", "closed", "nested"]),
                max_size=8))
def test_bulk_reads_agree(kinds):
    """``all_scalars``, ``read_outputs`` and ``read_tangents`` give the same answers on both
    backends, and answer None unless every leaf is a float dual of the trace asked about."""
    res = []
    for B in BACKENDS:
        O = B.ForwardLevel(1)
        T = B.Tape(2)
        L = B.ForwardLevel(3)
        C = B.Tape(4)
        c = C.input(4.0)
        C.close()
        T5 = B.Tape(5)
        items_t, items_l = [], []
        for k, kind in enumerate(kinds):
            x = 0.5 * k
            items_t.append({"f": x, "d": T.input(x) * 2.0, "fd": T.input(x), "other": "s",
                            "int": 3, "closed": c, "nested": T5.input(O.input(x, 1.0))}[kind])
            items_l.append({"f": x, "d": L.input(x, 1.5) * 2.0, "fd": L.input(x, -0.0),
                            "other": None, "int": 3, "closed": c,
                            "nested": L.input(O.input(x, 1.0), 1.0)}[kind])
        ro = B.read_outputs(items_t, T)
        rt = B.read_tangents(items_l, L)
        res.append((B.all_scalars(items_t), B.all_scalars(tuple(items_l)),
                    None if ro is None else (type(ro[0]).__name__, list(ro[0]), ro[1]),
                    None if rt is None else ([bits(v) for v in rt[0]], [bits(v) for v in rt[1]])))
        floats_t = all(type(x) is B.Dual and x.trace is T and type(x.value) is float
                       for x in items_t)
        assert (ro is not None) is floats_t
        if ro is not None:
            assert list(ro[0]) == [x.id for x in items_t]
            assert ro[1] == [x.value for x in items_t]
    assert res[0] == res[1]


@given(st.lists(st.sampled_from([0.5, -0.0, math.nan, 1, True, "s", None, np.float64(2.0)]),
                max_size=6), st.sampled_from([list, tuple, iter]))
def test_float_copy_is_a_fresh_list_of_exact_floats(items, kind):
    """``float_copy`` gives a new list equal to its list or tuple argument exactly when every
    item is a float (not an int, a bool or a numpy float), else None, on both backends."""
    for B in BACKENDS:
        xs = kind(items)
        got = B.float_copy(xs)
        if kind is iter or not all(type(x) is float for x in items):
            assert got is None
        else:
            assert type(got) is list and got is not xs
            assert [bits(x) for x in got] == [bits(x) for x in items]
            assert all(a is b for a, b in zip(got, items))


@each_backend
def test_read_outputs_gives_a_range_for_evenly_spaced_ids(B):
    T = B.Tape(1)
    xs = T.inputs([1.0, 2.0, 3.0, 4.0])
    ys = [B.sin(x) * x for x in xs]  # ids 5, 7, 9, 11
    ids, vals = B.read_outputs(ys, T)
    assert type(ids) is range and list(ids) == [5, 7, 9, 11]
    ids, _ = B.read_outputs([ys[0], ys[2], ys[1]], T)
    assert type(ids) is list and ids == [5, 9, 7]
    ids, _ = B.read_outputs([ys[1], ys[1]], T)  # the same output twice
    assert type(ids) is list and ids == [7, 7]


# -- Seeds: the seeds of Tape.eval as two sequences ------------------------------------------


def _program(B):
    T = B.Tape(1)
    xs = T.inputs([0.7, -1.3, 2.1])
    ys = [B.sin(x) * x for x in xs] + [xs[0] * xs[1], B.exp(xs[2]) + xs[0]]
    T.close()
    return T, xs, ys


@given(st.lists(st.tuples(st.integers(0, 4), st.floats(-3, 3)), max_size=6))
def test_seeds_equal_pairs(pairs):
    res = []
    for B in BACKENDS:
        T, xs, ys = _program(B)
        ids = [ys[k].id for k, _ in pairs]
        cts = [ct for _, ct in pairs]
        wanted = range(0, 3)
        want = T.eval([(i, c) for i, c in zip(ids, cts)], wanted)
        got = T.eval(B.Seeds(ids, cts), wanted)
        assert [bits(v) for v in got] == [bits(v) for v in want]
        assert list(B.Seeds(ids, cts)) == list(zip(ids, cts))
        res.append([bits(v) for v in got])
    assert res[0] == res[1]


@each_backend
def test_seeds_ranges_and_checks(B):
    T, xs, ys = _program(B)
    r = range(ys[0].id, ys[2].id + 1, 2)  # the three sin(x)*x outputs
    assert list(r) == [y.id for y in ys[:3]]
    want = T.eval([(i, 1.0) for i in r], range(3))
    assert T.eval(B.Seeds(r, [1.0, 1.0, 1.0]), range(3)) == want
    assert T.eval(B.Seeds(r[::-1], [1.0, 1.0, 1.0]), range(3)) == want
    # other id and cotangent types take the general path and agree
    assert T.eval(B.Seeds(tuple(r), (1.0, 1.0, 1.0)), range(3)) == want
    assert T.eval(B.Seeds(list(r), [1, 1, 1]), range(3)) == want
    with pytest.raises(ValueError, match="Seeds"):
        B.Seeds([1, 2], [1.0])
    n = T.nbindings
    for bad in (range(0, n + 1), range(-1, 2), [0, n], [-1]):
        with pytest.raises(IndexError, match="seed id"):
            T.eval(B.Seeds(bad, [1.0] * len(bad)), range(3))


# -- the Python layer: list inputs and list outputs --------------------------------------------


def _elementwise(xs):
    return [deltaad.sin(x) * x for x in xs]


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=12),
       st.lists(st.floats(-2, 2), min_size=12, max_size=12))
def test_list_output_pullback_equals_one_output_at_a_time(xs, cts):
    """``vjp`` of a list-valued function with a list of float cotangents (one sweep, seeds in
    bulk) equals the sum of the pullbacks of one output at a time, and the analytic answer."""
    cts = cts[:len(xs)]
    out, pb = deltaad.vjp(_elementwise, xs)
    assert out == [math.sin(x) * x for x in xs]
    (g,) = pb(cts)
    assert type(g) is list and len(g) == len(xs)
    for k, (x, ct) in enumerate(zip(xs, cts)):
        one = [0.0] * len(xs)
        one[k] = ct
        assert bits(pb(one)[0][k]) == bits(g[k])
        assert g[k] == pytest.approx(ct * (math.cos(x) * x + math.sin(x)), rel=1e-12, abs=1e-300)


def test_list_outputs_of_every_kind():
    """Outputs mixing float duals, constants, a repeated dual, a static leaf and ``None``
    cotangents give what one output at a time gives; forward mode likewise."""
    def f(xs):
        y = xs[0] * xs[1]
        return [y, 2.5, y, xs[2], "tag", deltaad.sin(xs[0])]

    xs = [0.3, -1.2, 2.0]
    out, pb = deltaad.vjp(f, xs)
    assert out[1] == 2.5 and out[4] == "tag"
    (g,) = pb([1.0, 7.0, 0.5, -2.0, None, 3.0])
    assert g == pytest.approx([1.5 * -1.2 + 3.0 * math.cos(0.3), 1.5 * 0.3, -2.0])
    (g2,) = pb([1.0, 0.0, 0.5, -2.0, None, 3.0])
    assert g2 == g
    p, t = deltaad.jvp(f, (xs,), ([1.0, 0.0, 1.0],))
    assert p == out
    assert t == [-1.2, 0.0, -1.2, 1.0, None, math.cos(0.3)]
    assert deltaad.jvp(_elementwise, (xs,), ([1.0, 2.0, 0.0],))[1] == [
        math.cos(x) * x * d + math.sin(x) * d for x, d in zip(xs, [1.0, 2.0, 0.0])]


def test_list_output_holding_an_escaped_dual_is_an_error():
    saved = []
    deltaad.grad(lambda x: saved.append(x) or x * 2.0)(1.0)
    with pytest.raises(deltaad.EscapedDualError):
        deltaad.vjp(lambda xs: [xs[0] * 2.0, saved[0]], [1.0])
    with pytest.raises(deltaad.EscapedDualError):
        deltaad.jvp(lambda xs: [xs[0] * 2.0, saved[0]], ([1.0],), ([1.0],))


def test_the_function_may_change_its_argument_list():
    """The list of input duals is handed to the function itself (no copy): changing it there
    changes nothing about which inputs the gradient is for."""
    def f(xs):
        y = xs[0] * xs[1] + xs[2]
        xs[0] = 10.0
        xs.append(xs[1])
        del xs[1:3]
        return y * xs[-1]

    xs = [2.0, 3.0, 5.0]
    g = deltaad.grad(f)(xs)
    assert xs == [2.0, 3.0, 5.0]
    assert g == [3.0 * 3.0, 2.0 * 3.0 + (2.0 * 3.0 + 5.0), 3.0]
    _, t = deltaad.jvp(f, (xs,), ([0.0, 1.0, 0.0],))
    assert t == g[1]


def test_list_output_jacobian_is_diagonal():
    """``jacrev`` and ``jacfwd`` of an elementwise map: its Jacobian is diagonal, one row per
    input, and agrees with the pullback of ones."""
    xs = [0.4, -1.1, 2.3, 0.0]
    J = deltaad.jacrev(_elementwise)(xs)
    Jf = deltaad.jacfwd(_elementwise)(xs)
    d = [math.cos(x) * x + math.sin(x) for x in xs]
    assert np.array_equal(J, np.diag(d)) and np.array_equal(Jf, J)
    assert deltaad.vjp(_elementwise, xs)[1]([1.0] * 4)[0] == d


def _mixing(xs):
    """A vector map whose Jacobian is dense in places: each output reads its input, the first
    and the last one (an output may also repeat, or be an input itself)."""
    s = xs[0] * xs[-1]
    return [deltaad.sin(v) * v + s for v in xs] + [s * 2.0, xs[0]]


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=9))
def test_jacrev_rows_equal_one_sweep_per_output(xs):
    """``jacrev`` of a vector of float outputs reads its rows from the backend's ``rows``
    (one buffer of doubles): bit for bit the Jacobian of one sweep per output."""
    from deltaad import transforms

    J = deltaad.jacrev(_mixing)(xs)
    fast = transforms._float_rows
    transforms._float_rows = lambda *a: None  # the general path: one pullback per row
    try:
        J0 = deltaad.jacrev(_mixing)(xs)
    finally:
        transforms._float_rows = fast
    assert J.shape == (len(xs) + 2, len(xs)) and J.dtype == np.float64 and J.flags.writeable
    assert [bits(v) for v in J.flat] == [bits(v) for v in J0.flat]


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=9), st.floats(-3, 3))
def test_rows_equal_eval_on_both_backends(xs, c):
    """``Tape.rows`` is ``eval`` once per seed (cotangent 1.0), as doubles, bit for bit, and
    the two backends write the same bits."""
    got = []
    for B in BACKENDS:
        T = B.Tape(1)
        d = T.inputs(xs)
        s = d[0] * d[-1] - c
        outs = [v * v * c + s / (1.5 + v * v) for v in d] + [s, d[0]]
        ids = [o.id for o in outs]
        rows = list(np.frombuffer(T.rows(ids, range(len(xs))), dtype=np.float64))
        want = [a for i in ids for a in T.eval([(i, 1.0)], range(len(xs)))]
        assert [bits(v) for v in rows] == [bits(v) for v in want]
        got.append(rows)
        T.close()
    assert [bits(v) for v in got[0]] == [bits(v) for v in got[1]]


@each_backend
def test_rows_checks_ids_and_declines_other_tapes(B):
    """``rows`` checks every id against the tape and returns None for a tape whose bindings
    are not all float ones (the caller then sweeps row by row)."""
    T = B.Tape(1)
    x = T.inputs([0.5, 2.0])
    y = x[0] * x[1]
    assert list(np.frombuffer(T.rows([y.id, x[0].id], range(2)), dtype=np.float64)) == [
        2.0, 0.5, 1.0, 0.0]
    for seeds, wanted in (([5], [0]), ([0], [-1]), ([-1], [0]), ([0], [3]), ([], [3])):
        with pytest.raises(IndexError):
            T.rows(seeds, wanted)
    assert len(T.rows([], [0, 1])) == 0
    T.push_linear([x[0].id, x[1].id], [1.0, 1.0])
    assert T.rows([0], [0]) is None


ITEMS = st.sampled_from([0.5, -0.0, math.nan, -2.25, 1e300, 1, True, "s", None, np.float64(2.0)])


@given(st.lists(ITEMS, max_size=6), st.sampled_from([list, tuple, iter]), st.integers(0, 3))
def test_float_inputs_are_inputs_of_exact_floats(items, kind, before):
    """``Tape.float_inputs`` makes the duals ``inputs`` makes (values bit for bit, consecutive
    ids after what the tape holds) exactly when its argument is a non-empty list or tuple of
    floats (not ints, bools or numpy floats); otherwise it answers None and records nothing,
    on both backends."""
    for B in BACKENDS:
        T = B.Tape(1)
        T.inputs([1.0] * before)
        got = T.float_inputs(kind(items))
        if kind is iter or not items or not all(type(x) is float for x in items):
            assert got is None
            assert T.nbindings == before
            continue
        assert type(got) is list and len(got) == len(items)
        assert all(type(d) is B.Dual and d.trace is T for d in got)
        assert [d.id for d in got] == list(range(before, before + len(items)))
        assert [bits(d.value) for d in got] == [bits(x) for x in items]
        assert T.nbindings == before + len(items)
        out = got[0] * 2.0
        adj = T.eval([(out.id, 1.0)], range(before + len(items)))
        assert [bits(a) for a in adj] == [bits(x) for x in [0.0] * before + [2.0] + [0.0] * (len(items) - 1)]


CHAIN_VALUES = st.sampled_from([0.5, -1.5, 0.0, -0.0, 2.0, 1e308, -1e-310, math.inf, math.nan])


@given(st.lists(CHAIN_VALUES, min_size=1, max_size=3),
       st.lists(st.tuples(st.sampled_from(["+", "-", "*", "+c", "*c", "in"]),
                          st.integers(0, 5), st.integers(0, 5), CHAIN_VALUES),
                min_size=1, max_size=12),
       CHAIN_VALUES)
def test_float_sweep_of_chains_is_the_general_one_to_the_bit(xs, ops, ct):
    """The float sweep keeps a term for the binding just below in a register (a chain's
    running value); every adjoint -- inputs, inputs made between steps, and the steps
    themselves -- is the pure twin's to the bit: parents that are the binding just below as
    the first, the second or both operands, zero and non-finite terms and cotangents."""
    got = []
    for B in BACKENDS:
        T = B.Tape(1)
        vals = [T.input(x) for x in xs]
        for op, a, b, c in ops:
            x = vals[-1 - a % len(vals)]  # a = 0: the step just below
            y = vals[-1 - b % len(vals)]
            vals.append({"+": lambda: x + y, "-": lambda: y - x, "*": lambda: x * y,
                         "+c": lambda: x + c, "*c": lambda: c * x,
                         "in": lambda: T.input(c)}[op]())
        n = T.nbindings
        got.append([bits(g) for g in T.eval([(vals[-1].id, ct)], range(n))])
    assert got[0] == got[1]


@given(st.lists(st.tuples(st.integers(1, 6), st.lists(st.integers(0, 30), min_size=1,
                                                    max_size=12),
                          st.lists(st.tuples(st.integers(0, 40), CHAIN_VALUES), max_size=3),
                          st.sampled_from(["inputs", "below", "some", "all", "list"])),
                min_size=1, max_size=6))
def test_sweeps_in_turn_leave_nothing_for_the_next(evals):
    """The core keeps its adjoint array between sweeps, cleared by the sweep that used it
    when its wanted ids all lie below the sweep's bottom (a gradient's inputs), else by a
    memset before the next. Sweeps one after another on tapes of every size, with seeds
    anywhere (among the inputs too) and wanted ids the inputs, some of them, ids above them
    or a list: every adjoint is the pure twin's, to the bit (a term left over from an
    earlier sweep would show)."""
    for m, ops, seeds, which in evals:
        got = []
        for B in BACKENDS:
            T = B.Tape(1)
            vals = T.float_inputs([0.5 + k for k in range(m)])
            for k, o in enumerate(ops):
                x = vals[-1 - o % len(vals)]
                y = vals[o % len(vals)]
                vals.append(x * y if k % 3 == 0 else x + y if k % 3 == 1 else x * 1.5)
            n = T.nbindings
            sd = [(vals[-1].id, 1.0)] + [(i % n, c) for i, c in seeds]
            wanted = {"inputs": range(m), "below": range(m - 1, -1, -1),
                      "some": range(0, m, 2), "all": range(n),
                      "list": [i % m for i, _ in seeds] or [0]}[which]
            got.append([bits(a) for a in T.eval(sd, wanted)])
        assert got[0] == got[1]


@pytest.mark.parametrize("forward", [False, True])
@pytest.mark.parametrize("kept", [0, 3, 8])
@pytest.mark.parametrize("bad", [None, 0, 2, 3, 5, 7])
def test_float_inputs_take_kept_duals_then_make_the_rest(forward, kept, bad):
    """``float_inputs`` takes the kept duals first and makes the rest afresh; a non-float
    anywhere (among the kept ones, where they run out, among the fresh ones) gives None and
    records nothing, and either way every reference to the trace is counted: once the trace
    and its duals go, nothing holds what they named of it."""
    _core.release_memory()
    T = _core.ForwardLevel(1) if forward else _core.Tape(1)
    make = (lambda xs: T.float_inputs(xs, [2.0] * len(xs))) if forward else T.float_inputs
    scratch = make([0.0] * kept) if kept else []
    del scratch  # now exactly ``kept`` duals are kept for reuse
    items = [0.5 * k for k in range(8)]
    if bad is not None:
        items[bad] = 1
    got = make(items)
    if bad is not None:
        assert got is None
    else:
        assert [d.value for d in got] == items
        assert all(d.trace is T for d in got)
        if forward:
            assert [d.tangent for d in got] == [2.0] * 8
        else:
            assert [d.id for d in got] == list(range(kept, kept + 8))
    again = make([1.5] * 9)
    assert [d.value for d in again] == [1.5] * 9
    d = again[0]
    del T, make
    handle = weakref.ref(d.trace)
    assert type(handle()) is not _core.Tape and type(handle()) is not _core.ForwardLevel
    del d, again, got
    assert handle() is None
    _core.release_memory()


@given(st.lists(ITEMS, max_size=6), st.lists(ITEMS, max_size=6),
       st.sampled_from([list, tuple, iter]))
def test_forward_float_inputs_are_inputs_of_exact_floats(items, tans, kind):
    """``ForwardLevel.float_inputs`` likewise: the duals ``inputs`` makes when values and
    tangents are non-empty lists or tuples of floats of one length, else None."""
    for B in BACKENDS:
        L = B.ForwardLevel(1)
        got = L.float_inputs(kind(items), kind(tans))
        if (kind is iter or not items or len(items) != len(tans)
                or not all(type(x) is float for x in items + tans)):
            assert got is None
            continue
        assert [bits(d.value) for d in got] == [bits(x) for x in items]
        assert [bits(d.tangent) for d in got] == [bits(x) for x in tans]
        assert all(type(d) is B.Dual and d.trace is L and d.id == -1 for d in got)


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=6), st.floats(-3, 3))
def test_eval_floats_only_is_the_float_sweep_or_none(xs, c):
    """``eval(..., floats_only=True)`` gives ``eval``'s floats (bit for bit) where the float
    sweep applies and None, without sweeping, where it does not: a seed that is not a float,
    a linear binding on the tape, a coefficient that is an outer dual."""
    res = []
    for B in BACKENDS:
        T = B.Tape(2)
        d = T.inputs(xs)
        y = d[0] * c
        for v in d[1:]:
            y = y * v + c
        ids = range(len(xs))
        got = T.eval([(y.id, 1.0)], ids, True)
        assert type(got) is list and all(type(g) is float for g in got)
        assert [bits(g) for g in got] == [bits(g) for g in T.eval([(y.id, 1.0)], ids)]
        res.append([bits(g) for g in got])
        assert T.eval(B.Seeds([y.id], [1.0]), ids, True) == got
        O = B.Tape(1)
        assert T.eval([(y.id, O.input(1.0))], ids, True) is None
        assert T.eval([(y.id, np.float64(1.0))], ids, True) is None
        T.push_linear([d[0].id], [1.0])
        assert T.eval([(y.id, 1.0)], ids, True) is None
        assert [bits(g) for g in T.eval([(y.id, 1.0)], ids)] == res[-1]
        O2 = B.Tape(3)
        T3 = B.Tape(4)
        z = T3.input(O2.input(2.0))
        w = z * z  # an outer dual's coefficient
        assert T3.eval([(w.id, 1.0)], [z.id], True) is None
    assert res[0] == res[1]


@pytest.mark.parametrize("items", [[1.0, 2, 3.0], [1.0, True], [np.float64(1.5), 2.0],
                                   (1.0, 2, 3.0), [1.0, None, 2.0], [1.0, "s"]])
@each_backend
def test_a_list_with_other_leaves_takes_the_general_path(B, items):
    """A list whose items are not all floats is differentiated as any pytree (ints, bools,
    strings and None are static, numpy floats keep their type), by grad, jvp and jacrev."""
    from deltaad import _backend

    if _backend.B is not B:
        pytest.skip("runs on the backend in use")

    def f(xs):
        s = 0.0
        for x in xs:
            if isinstance(x, (float, deltaad.Dual)):
                s = s + x * x
        return s

    g = deltaad.grad(f)(items)
    assert type(g) is type(items) and len(g) == len(items)
    for x, gx in zip(items, g):
        if type(x) is float:
            assert gx == 2.0 * x
        elif type(x) is np.float64:
            assert type(gx) is np.float64 and gx == 2.0 * x
        else:
            assert gx is None
    real = (float, np.float64)
    tans = type(items)([1.0 if type(x) in real else x for x in items])
    val, t = deltaad.jvp(f, (items,), (tans,))
    assert t == sum(2.0 * x for x in items if type(x) in real)


@each_backend
def test_the_caller_may_change_the_argument_list_during_the_call(B):
    """The float argument is read once, into the input duals, when the call starts: the
    function changing the caller's list (through a closure) changes neither the gradient nor
    which inputs it is for, in grad, jacrev and jvp."""
    from deltaad import _backend

    if _backend.B is not B:
        pytest.skip("runs on the backend in use")
    xs = [2.0, 3.0, 5.0]

    def f(l):
        y = l[0] * l[1] + l[2]
        xs[0] = 10.0
        xs.append(7.0)
        return y

    assert deltaad.grad(f)(xs) == [3.0, 2.0, 1.0]
    assert xs == [10.0, 3.0, 5.0, 7.0]
    xs[:] = [2.0, 3.0, 5.0]

    def fl(l):
        out = [l[0] * l[1], l[2] * 1.0]
        xs[0] = 10.0
        xs[2] = 1
        return out

    J = deltaad.jacrev(fl)(xs)
    assert np.array_equal(np.asarray(J), [[3.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    xs[:] = [2.0, 3.0, 5.0]
    assert deltaad.jvp(f, (xs,), ([0.0, 1.0, 0.0],))[1] == 2.0


@each_backend
def test_free_inputs_drops_the_list_and_spares_what_is_held(B):
    """``free_inputs`` drops the input list from its holder; the core frees the duals only the
    list holds and leaves alone a list the caller kept, a dual held elsewhere and a dual of
    another trace (each still reads as before)."""
    T = B.Tape(1)
    ds = T.float_inputs([0.5, 1.5, 2.5, 3.5])
    held = ds[1]
    other = B.Tape(2).input(7.0)
    ds[3] = other
    box = [1, ds]
    ds = None
    B.free_inputs(box, 1, T)
    assert box == [1, None]
    assert held.value == 1.5 and held.id == 1 and held.trace is T
    assert other.value == 7.0 and other.id == 0
    kept = T.float_inputs([4.0, 5.0])
    box = [kept]
    B.free_inputs(box, 0, T)  # the caller still holds the list: it stays as it is
    assert box == [None]
    assert [d.value for d in kept] == [4.0, 5.0] and [d.id for d in kept] == [4, 5]
    assert all(d.trace is T for d in kept)
    L = B.ForwardLevel(3)
    fs = L.float_inputs([1.0, 2.0], [3.0, 4.0])
    held = fs[0]
    box = [fs]
    fs = None
    B.free_inputs(box, 0, L)
    assert box == [None] and held.value == 1.0 and held.tangent == 3.0


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_inputs_the_function_keeps_survive_the_call(mode):
    """The input list and input duals a function keeps (in a closure) are the ones it was
    given after the gradient or jvp returns: freeing the input duals in bulk after the call
    spares everything the function holds."""
    kept = []

    def f(l):
        kept.append(l)
        kept.append(l[2])
        return l[0] * l[1] + l[2]

    xs = [2.0, 3.0, 5.0, 7.0]
    if mode == "grad":
        assert deltaad.grad(f)(xs) == [3.0, 2.0, 1.0, 0.0]
    else:
        assert deltaad.jvp(f, (xs,), ([1.0, 0.0, 0.0, 0.0],)) == (11.0, 3.0)
    lst, d = kept
    assert type(lst) is list and [v.value for v in lst] == xs and lst[2] is d
    assert all(type(v) is deltaad.Dual and v.trace.closed for v in lst)
    # the duals the transformation made since are others: the kept ones are not reused
    deltaad.grad(lambda l: l[0] * l[1])([1.0] * 100)
    assert [v.value for v in lst] == xs and d.value == 5.0


CHANGES = st.sampled_from([None, "float", "str", "same trace", "append", "pop", "reverse",
                           "keep list", "nested"])


@given(st.lists(st.tuples(st.sampled_from(["grad", "jvp"]), st.integers(1, 9),
                          st.sets(st.integers(0, 8), max_size=3), CHANGES),
                min_size=1, max_size=8))
def test_gradients_of_lists_in_turn_keep_what_each_function_kept(steps):
    """A gradient's input list is kept whole for the next gradient of a list to take its
    duals in place (the core; see ``free_inputs``). For gradients and jvps of lists of
    floats one after another, of lengths equal and not, where the function keeps inputs or
    its list, puts a float, a string or another dual of its trace in the list, grows,
    shrinks or reverses it, or takes a gradient of a list of its own inside: every gradient
    and tangent is right, and everything a function kept reads as it did when it ran."""
    kept = []  # (dual, its value, its id) as the function saw them
    lists = []  # (list, its items) as the function left them
    names = []  # each finished trace's handle (weakly)
    for step, (mode, n, keep, change) in enumerate(steps):
        xs = [0.25 * step + k for k in range(n)]
        first = []

        def f(lst):
            first.append(lst[0])
            for k in sorted(keep):
                if k < n:
                    kept.append((lst[k], deltaad.value(lst[k]), lst[k].id))
            s = lst[0] * lst[0]
            for k in range(1, n):
                s = s + lst[k] * lst[k]
            if change == "float":
                lst[0] = 3.0
            elif change == "str":
                lst[-1] = "s"
            elif change == "same trace":
                lst[0] = lst[-1] * 2.0
            elif change == "append":
                lst.append(lst[0] * 2.0)
            elif change == "pop":
                lst.pop()
            elif change == "reverse":
                lst.reverse()
            elif change == "nested":
                inner = deltaad.grad(lambda m: m[0] * m[1])([1.5, 4.0])
                assert inner == [4.0, 1.5]
            if change == "keep list":
                lists.append((lst, list(lst)))
            return s

        if mode == "grad":
            assert deltaad.grad(f)(xs) == [2.0 * x for x in xs]
        else:
            out, t = deltaad.jvp(f, (xs,), ([1.0] * n,))
            assert out == sum(x * x for x in xs) and t == sum(2.0 * x for x in xs)
        names.append(weakref.ref(first.pop().trace))
    for d, v, i in kept:
        assert type(d) is deltaad.Dual and d.trace.closed
        assert bits(deltaad.value(d)) == bits(v) and d.id == i
    for lst, items in lists:
        assert len(lst) == len(items) and all(a is b for a, b in zip(lst, items))
    # every reference to a trace was counted: once what named them goes, they go
    d = lst = items = None
    del kept[:], lists[:]
    _core.release_memory()
    gc.collect()
    assert all(name() is None for name in names)


def test_the_input_list_a_function_gets_is_tracked_by_the_gc():
    """The input list kept between gradients is hidden from the garbage collector (a
    collection would visit each of its duals); given to the next function, in place, it is
    tracked again: a cycle through it is collected."""
    seen = []

    class Cycle:
        pass

    def f(lst):
        seen.append(gc.is_tracked(lst))
        c = Cycle()
        c.lst = lst
        lst[1] = c
        seen.append(weakref.ref(c))
        return lst[0] * 2.0

    for _ in range(3):
        assert deltaad.grad(lambda lst: lst[0] * lst[1])([1.0, 2.0]) == [2.0, 1.0]
        assert deltaad.grad(f)([1.0, 2.0]) == [2.0, 0.0]
    gc.collect()
    assert seen[0::2] == [True] * 3
    assert all(r() is None for r in seen[1::2])


def test_release_memory_lets_the_kept_input_list_go():
    """The kept input list's duals name their finished trace: ``release_memory`` lets them
    go, and so does tracemalloc starting to trace (nothing is kept while it does)."""
    for how in ("release", "tracemalloc"):
        box = []

        def f(lst):
            box.append(lst[2])
            return lst[0] * lst[1]

        deltaad.grad(f)([1.0, 2.0, 3.0])
        d = box.pop()
        name = weakref.ref(d.trace)  # the finished trace's handle
        del d
        gc.collect()
        if deltaad.backend == "c":
            assert name() is not None  # the kept list's duals name it
        if how == "release":
            _core.release_memory()
        else:
            tracemalloc.start()
            try:
                deltaad.grad(lambda a: a * a)(1.0)
            finally:
                tracemalloc.stop()
        assert name() is None


def test_core_dual_is_48_bytes():
    """The core's dual fits CPython's 48-byte size class (a forward dual's tangent shares the
    id's slot): every input's dual is made, read and freed once per gradient."""
    import sys

    T = _core.Tape(1)
    L = _core.ForwardLevel(2)
    assert _core.Dual.__basicsize__ == 48
    assert sys.getsizeof(T.input(1.0)) == 48 == sys.getsizeof(L.input(1.0, 2.0))


TANGENTS = st.sampled_from(["float", "array", "outer", "-0.0", "nan"])
VALUES = st.sampled_from(["float", "np.float64"])


def _norm(x):
    """Bits of a float, an array's floats, or a dual's value and tangent (nested)."""
    if isinstance(x, np.ndarray):
        return ("array", tuple(bits(v) for v in x.ravel()))
    if type(x).__name__ == "Dual":
        return ("dual", _norm(x.value), _norm(x.tangent))
    if x is None:
        return None
    return bits(x)  # (a numpy float tangent: the core keeps its value as a float)


@given(VALUES, TANGENTS, TANGENTS, st.floats(-3, 3))
def test_forward_duals_with_any_tangent_agree(vkind, tkind, ukind, c):
    """Forward duals whose tangent is not a float (an array, a dual of an outer level) keep
    it, read back as given (``id`` -1), and compute what the pure backend computes, bit for
    bit; so does a sweep whose adjoint is such a dual (its zero test)."""
    res = []
    for B in BACKENDS:
        O = B.ForwardLevel(1)
        L = B.ForwardLevel(2)

        def make(kind, x):
            return {"float": x, "np.float64": np.float64(x), "array": np.array([x, 2.0 * x]),
                    "outer": O.input(x, 0.5), "-0.0": -0.0, "nan": math.nan}[kind]
        v = make(vkind, 1.5)
        t = make(tkind, 0.25)
        u = make(ukind, -2.0)
        a = L.input(v, t)
        b = B.Dual(make(vkind, -0.5), L, -1, u)
        assert a.id == -1 and b.id == -1 and a.trace is L
        assert _norm(a.value) == _norm(v)
        assert a.tangent is t or _norm(a.tangent) == _norm(float(t))
        out = []
        for fn in (lambda: a * c, lambda: a + b, lambda: a * b, lambda: -a, lambda: abs(a),
                   lambda: a - 1.0, lambda: 2.0 / (b * b + 3.0)):
            try:
                out.append(_norm(fn()))
            except Exception as e:  # noqa: BLE001 - the same error on both backends
                out.append(type(e).__name__)
        T = B.Tape(3)
        x = T.input(1.0)
        z = x * a  # a forward dual as a coefficient: the sweep's adjoint is one
        try:
            out.append(_norm(T.eval([(z.id, b)], [x.id])[0]))
        except Exception as e:  # noqa: BLE001
            out.append(type(e).__name__)
        res.append(out)
    assert res[0] == res[1]


@given(st.lists(st.sampled_from(["input", "inputs", "float_inputs", "op", "truncate"]),
                min_size=1, max_size=10), st.floats(-2, 2))
def test_inputs_after_operations_are_swept_alike(steps, c):
    """Inputs made before, between and after operations (the core's float sweep stops above
    the inputs made first), with truncations, give the pure backend's adjoints bit for bit."""
    res = []
    for B in BACKENDS:
        T = B.Tape(1)
        live = []
        for k, s in enumerate(steps):
            if s == "input":
                live.append(T.input(0.5 + k))
            elif s == "inputs":
                live.extend(T.inputs([0.25 * k, c]))
            elif s == "float_inputs":
                live.extend(T.float_inputs([c, 1.0 + k]))
            elif s == "op" and live:
                live.append(live[-1] * c + live[0] * live[-1])
            elif s == "truncate" and T.nbindings > 1:
                m = T.nbindings // 2
                T.truncate(m)
                live = [d for d in live if d.id < m]
        if not live:
            continue
        n = T.nbindings
        adj = T.eval([(live[-1].id, 1.0)] + [(d.id, 0.5) for d in live[::3]], range(n))
        res.append([bits(a) for a in adj])
    assert len(res) in (0, 2) and (not res or res[0] == res[1])


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": lambda a, b: a / b}


@given(v=st.floats(-1e6, 1e6), k=other, op=st.sampled_from(sorted(_ARITH)),
       left=st.booleans(), forward=st.booleans())
def test_int_operands_are_their_floats(v, k, op, left, forward):
    """``2 * x``, ``1 - p``, ``x / 2``: an int operand (recorded in C when a float holds it
    exactly) gives the bits ``float(k)`` gives, in value, gradient and tangent, on both
    backends; an int no float holds, a bool or a zero divisor keeps the general path and its
    result or error."""
    f = _ARITH[op]
    if isinstance(k, float):
        return

    def with_(c):
        return (lambda x: f(c, x)) if left else (lambda x: f(x, c))

    def outcome(fn):
        try:
            if forward:
                return deltaad.jvp(fn, (v,), (1.0,))
            return deltaad.value_and_grad(fn)(v)
        except (ZeroDivisionError, OverflowError) as exc:
            return type(exc)

    try:
        kf = float(k)
    except OverflowError:
        kf = None
    got = outcome(with_(k))
    if kf is None:
        assert got is OverflowError or isinstance(got, tuple)
        return
    want = outcome(with_(kf))
    if isinstance(want, type):
        assert got is want
    else:
        assert [bits(z) for z in got] == [bits(z) for z in want]
