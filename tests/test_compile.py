"""deltaad.compile: replay gives the uncompiled call's bits; guards re-record; fallbacks warn."""

import math
import random
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import deltaad as d
from deltaad import _replay_pure as P
from deltaad import compile as _compile
from deltaad.compile import CompileWarning, Recorder, Recording, ReplayMismatch
from helpers import agree_on, bits, finite_inputs, programs, scalar_of

try:
    from deltaad import _replay as C
except ImportError:  # no compiled replayer: the C-vs-pure tests are skipped, and say so
    C = None


def tree_bits(x):
    """A pytree with every float replaced by its bit pattern (nan payloads included)."""
    leaves, tdef = d.tree_flatten(x)
    return repr(tdef), [(type(v).__name__, P._BITS.pack(v) if type(v) is float else v)
                        for v in leaves]


def same(a, b):
    return tree_bits(a) == tree_bits(b)


TRANSFORMS = {
    "grad": lambda f, n: d.grad(f, argnums=tuple(range(n))),
    "value_and_grad": lambda f, n: d.value_and_grad(f, argnums=tuple(range(n))),
    "jacrev": lambda f, n: d.jacrev(f, argnums=tuple(range(n))),
    "jacfwd": lambda f, n: d.jacfwd(f, argnums=tuple(range(n))),
    "hessian": lambda f, n: d.hessian(f, argnums=tuple(range(n))),
    "jvp": lambda f, n: (lambda *xs: d.jvp(f, xs, tuple(0.5 + 0.25 * k for k in range(n)))),
    "plain": lambda f, n: f,
}


def run_both(g, points):
    """``compile(g)`` and ``g`` on every point, in order: same bits or the same exception."""
    return agree_on(d.compile(g), g, points, same)


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
@given(prog=programs(max_in=3, max_ops=10),
       pts=st.lists(st.lists(finite_inputs, min_size=3, max_size=3), min_size=3, max_size=5))
def test_random_programs_replay_same_bits(name, prog, pts):
    f = scalar_of(prog)
    g = TRANSFORMS[name](f, prog.n_in)
    run_both(g, [tuple(p[:prog.n_in]) for p in pts] + [tuple(pts[0][:prog.n_in])])


def test_replay_does_not_rerun_python():
    calls = []

    def f(x, y):
        calls.append(1)
        return x * d.sin(y) + y

    cg = d.compile(d.value_and_grad(f, argnums=(0, 1)))
    for k in range(5):
        x, y = 0.3 + k, 1.1 - 0.2 * k
        assert same(cg(x, y), d.value_and_grad(f, argnums=(0, 1))(x, y))
    assert cg.recordings_made == 1
    # one gradient recording (the function on recorded numbers, then the uncompiled call it
    # is checked against), plus the five uncompiled reference calls
    assert len(calls) == 2 + 5


def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def test_value_dependent_while_loop():
    g = d.value_and_grad(newton_sqrt)
    cg = run_both(g, [(2.0,), (2.0 + 1e-9,), (9.0,), (2.0,), (1e6,), (9.0,)])
    # each distinct number of iterations is a recording; 2 and 2 + 1e-9 share one
    assert cg.recordings_made == cg.nrecordings <= 4


def test_recursion_and_sharing():
    def power_tower(x, n):
        if n == 0:
            return x
        y = power_tower(x, n - 1)
        return y * y * 0.5 + d.sin(y)

    g = d.grad(lambda x: power_tower(x, 6))
    run_both(g, [(0.3,), (0.7,), (-1.2,)])
    cg = d.compile(g)
    cg(0.3)
    cg(0.5)
    assert cg.recordings_made == 1


def test_numpy_and_scipy_functions_of_scalars_replay_their_own_values():
    """numpy's ufuncs on a scalar dual compute with numpy's functions (np.tanh is not libm's
    tanh in the last bit) and scipy's functions of an order (jv(v, x)) with that order: a
    recording calls the same functions, so the replay is the uncompiled call's bits (it
    recorded libm's tanh, and failed on jv, before)."""
    special = pytest.importorskip("scipy.special")

    def f(x):
        return (np.tanh(x) * np.sinh(x) + np.arctan2(x, 0.3) + special.jv(1.5, x)
                + special.polygamma(1, x) + special.betainc(2.0, 3.0, x / 4.0) + d.jv(0.5, x))

    g = d.grad(f)
    run_both(g, [(1.3,), (1.4,), (0.7,), (2.9,)])
    cg = d.compile(g)
    for x in (1.3, 1.4, 0.7):
        assert bits(cg(x)) == bits(g(x))
    assert cg.recordings_made == 1


def test_piecewise_records_each_side_once():
    def f(x):
        return x * x if x > 1.0 else 3.0 * x - 2.0

    g = d.grad(f)
    cg = run_both(g, [(2.0,), (0.0,), (3.0,), (-5.0,), (1.0,), (1.5,)])
    assert cg.recordings_made == 2  # x > 1 and not: x = 1 is on the second side


def test_abs_at_zero():
    g = d.value_and_grad(lambda x: d.absolute(x) + abs(x) * 2.0)
    cg = run_both(g, [(0.5,), (0.0,), (-0.0,), (-0.5,), (0.0,), (2.0,)])
    # a gradient recording replays abs's derivative (its sign) without guards; the general
    # recording's three (positive, zero, negative) are counted in test_compile_grad.py
    assert cg.recordings_made == 1


def test_floor_index_guards_the_integer():
    table = [1.0, 2.0, 4.0, 8.0]

    def f(x):
        i = math.floor(x)
        return table[i] * x * x

    g = d.value_and_grad(f)
    cg = run_both(g, [(0.5,), (0.9,), (1.5,), (1.1,), (2.2,), (0.1,)])
    assert cg.recordings_made == 3  # floor 0, 1 and 2


def test_int_round_and_mod():
    def f(x):
        n = int(x * 3.0)
        r = round(x)
        return (x % 0.75) * n + r + (x // 0.5) + divmod(x, 0.3)[1]

    g = d.value_and_grad(f)
    run_both(g, [(1.3,), (1.31,), (2.5,), (3.5,), (-1.2,), (1.3,)])


def test_while_of_varying_length_counts():
    def f(x):
        s = x
        k = 0
        while s < 10.0:
            s = s * 1.5 + 0.1
            k += 1
        return s * k

    g = d.grad(f)
    cg = run_both(g, [(1.0,), (1.01,), (5.0,), (9.0,), (1.02,)])
    assert cg.recordings_made == 3  # 7, 2 and 1 iterations


def test_max_recordings_drops_least_recent():
    cg = d.compile(lambda x: x * 2.0 if x > 0.0 else x * 3.0, max_recordings=1)
    assert cg(1.0) == 2.0
    assert cg(-1.0) == -3.0
    assert cg(2.0) == 4.0
    assert cg.recordings_made == 3 and cg.nrecordings == 1


def test_structure_key_and_static_leaves():
    def f(xs, n, scale=1.0):
        s = 0.0
        for x in xs[:n]:
            s = s + x * scale
        return s

    cg = d.compile(f)
    assert cg([1.0, 2.0, 3.0], 2) == 3.0
    assert cg([1.0, 2.0, 3.0], 3) == 6.0
    assert cg([1.0, 2.0], 2) == 3.0
    assert cg([1.0, 2.0, 3.0], 2, scale=2.0) == 6.0
    assert cg.recordings_made == 4
    ca = d.compile(lambda s, x: x * len(s), static_argnums=0)
    assert ca("ab", 1.5) == 3.0 and ca("abc", 1.5) == 4.5 and ca("ab", 2.0) == 4.0
    assert ca.recordings_made == 2


def test_nan_inf_and_division_by_zero_as_uncompiled():
    g = d.value_and_grad(lambda x, y: x / y + d.sqrt(x))
    cg = run_both(lambda x, y: g(x, y), [(1.0, 2.0), (1.0, 0.0), (math.nan, 1.0),
                                         (math.inf, 1.0), (4.0, 2.0), (-1.0, 1.0)])
    with pytest.raises(ZeroDivisionError):
        cg(1.0, 0.0)
    with pytest.raises(ValueError):
        d.compile(lambda x: math.log(x))(-1.0)


def test_bad_input_same_error_as_uncompiled():
    g = d.grad(lambda x: x * x)
    cg = d.compile(g)
    assert cg(2.0) == 4.0
    for args in [(2,), (), (2.0, 3.0), ("a",), (None,), ([2.0],), ((2.0, 1.0),), (True,)]:
        try:
            want = g(*args)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                cg(*args)
        else:
            assert same(cg(*args), want)


def test_threads_give_serial_results():
    def f(x, y):
        s = x
        for _ in range(20):
            s = d.sin(s) * y + (s if s > 0.0 else -s)
        return s

    g = d.value_and_grad(f, argnums=(0, 1))
    cg = d.compile(g)
    rng = random.Random(5)
    pts = [(rng.uniform(-2, 2), rng.uniform(-2, 2)) for _ in range(40)]
    want = [g(*p) for p in pts]
    errors = []

    def work(k):
        try:
            for j in range(len(pts)):
                p = pts[(j + k) % len(pts)]
                if not same(cg(*p), want[(j + k) % len(pts)]):
                    errors.append(p)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_side_effects_happen_when_recording_and_check_mode():
    log = []

    def f(x):
        log.append(x)
        return x * 2.0

    cg = d.compile(f)
    cg(1.0)
    cg(2.0)
    assert len(log) == 1
    counter = [1.0]

    def impure(x):
        return x * counter[0]

    cc = d.compile(impure, check=True)
    assert cc(3.0) == 3.0
    counter[0] = 2.0
    with pytest.raises(ReplayMismatch):
        cc(3.0)


def test_unrecordable_falls_back_with_one_warning():
    def f(x):
        return float(np.sin(x)) * x

    cg = d.compile(f)
    with pytest.warns(CompileWarning, match="numpy"):
        assert cg(0.5) == f(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cg(0.7) == f(0.7)  # no second warning
    with pytest.warns(CompileWarning, match="ndarray"):  # (float arrays are recorded)
        assert d.compile(lambda a: a * 2.0)(np.ones(2, complex)).tolist() == [2.0, 2.0]


def test_escaped_recorder_errors():
    box = []

    def f(x):
        box.append(x)
        return x + 1.0

    cg = d.compile(f)
    cg(1.0)
    with pytest.raises(d.EscapedDualError):
        box[0] * 2.0


def test_grad_of_compiled_runs_uncompiled():
    cf = d.compile(lambda x: x * d.sin(x))
    cf(0.3)
    assert same(d.grad(cf)(0.7), d.grad(lambda x: x * d.sin(x))(0.7))
    assert same(d.hessian(cf)(0.7), d.hessian(lambda x: x * d.sin(x))(0.7))


def test_hvp_and_pytrees():
    def f(p):
        return p["a"] * p["b"] ** 2 + d.tanh(p["c"][0] * p["c"][1])

    p = {"a": 0.3, "b": 1.7, "c": (0.2, -0.4)}
    hv = lambda p, v: d.hvp(f, (p,), (v,))  # noqa: E731
    run_both(hv, [(p, {"a": 1.0, "b": 0.0, "c": (0.5, 0.5)}), (dict(p, a=2.0), p)])
    run_both(d.grad(f), [(p,), (dict(p, b=-1.0),)])


_plain_sin = math.sin  # bound at import: math's own function, which takes plain floats only


def test_value_guard_for_values_leaving():
    def f(x):
        k = _plain_sin(d.value(x))  # a plain float leaves the recording: its exact value is guarded
        return x * k + d.value(x) * x  # (deltaad.value alone stays recorded: no guard)

    cg = run_both(d.grad(f), [(2.0,), (2.0,), (3.0,)])
    assert cg.recordings_made == 2

    def g(x):
        k = math.sin(d.value(x))  # math.sin looked up while recording: deltaad's, recorded
        return x * k + d.value(x) * x

    cg = run_both(d.grad(g), [(2.0,), (2.0,), (3.0,)])
    assert cg.recordings_made == 1


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
@given(prog=programs(max_in=3, max_ops=12),
       pts=st.lists(st.lists(finite_inputs, min_size=3, max_size=3), min_size=1, max_size=4))
def test_compiled_replayer_equals_pure(prog, pts):
    g = d.value_and_grad(scalar_of(prog), argnums=tuple(range(prog.n_in)))
    r = record(g, pts[0][:prog.n_in])
    if r is None:  # a program raising on its first point: nothing to replay
        return
    cp = C.Program(*r)
    pp = P.Program(*r)
    for p in pts:
        a = cp.run([float(v) for v in p[:prog.n_in]])
        b = pp.run([float(v) for v in p[:prog.n_in]])
        assert (a is None) == (b is None)
        if a is not None:
            assert [bits(v) for v in a] == [bits(v) for v in b]


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
def test_libm_instructions_match_python_functions():
    rng = random.Random(3)
    edge = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, -1e-300, 1e300, 710.0, -745.5, math.inf,
            -math.inf, math.nan, 2.0 ** -1074, 1.0000000000000002, 0.9999999999999999]
    xs = edge + [rng.uniform(-5, 5) for _ in range(300)] + [rng.uniform(-800, 800) for _ in range(100)]
    for k, fn in enumerate(P.LIBM):
        code = [(P.INPUT, 0, 0, 0, 0.0), (P.FIRST_LIBM + k, 0, 0, 0, 0.0)]
        prog = C.Program(code, [fn], 1, [1])
        for x in xs:
            try:
                want = fn(x)
            except (ValueError, OverflowError):
                want = None
            got = prog.run([x])
            if want is None:
                assert got is None, (fn, x)
            else:
                assert P._BITS.pack(got[0]) == P._BITS.pack(want), (fn, x, got, want)


def test_malformed_program_is_refused():
    Prog = C.Program if C is not None else P.Program
    if C is None:
        pytest.skip("only the compiled replayer checks operands (the pure one indexes lists)")
    with pytest.raises(ValueError):
        Prog([(P.ADD, 0, 5, 0, 0.0)], [], 0, [0])
    with pytest.raises(ValueError):
        Prog([(P.INPUT, 3, 0, 0, 0.0)], [], 1, [0])
    with pytest.raises(ValueError):
        Prog([(P.CONST, 0, 0, 0, 1.0)], [], 0, [4])


def test_sweep_sign_of_zero_as_float_sweep():
    # found by the random programs: a float adjoint of -0.0 from the general sweep must end
    # +0.0, as the float sweep's sums starting at 0.0 do
    g = d.value_and_grad(lambda x, y: d.absolute(d.arctan2(x, x) * x - 0.3), argnums=(0, 1))
    run_both(g, [(0.0, 0.0), (0.0, 0.0), (-0.0, 0.0)])


def test_unrecordable_caught_by_the_function_still_falls_back():
    def f(x):
        try:
            y = np.exp(x)  # not recordable; the error is swallowed here
        except Exception:  # noqa: BLE001
            y = None
        return x * float(y)

    cg = d.compile(f)
    with pytest.warns(CompileWarning):
        assert cg(0.5) == f(0.5)
    assert cg.recordings_made == 0


def test_pure_and_compiled_recorders_agree_with_nested_compile():
    inner = d.compile(lambda x: x * d.sin(x))
    outer = d.compile(d.grad(lambda x: inner(x) * 2.0))
    assert same(outer(0.7), d.grad(lambda x: x * d.sin(x) * 2.0)(0.7))
    assert same(outer(0.9), d.grad(lambda x: x * d.sin(x) * 2.0)(0.9))
    assert outer.recordings_made == 1


def test_custom_vjp_inside_is_recorded_and_forward_falls_back():
    @d.custom_vjp
    def f(x, y):
        return x * y + d.sin(x)

    def f_fwd(x, y):
        return f(x, y), (x, y)

    def f_bwd(res, g):
        x, y = res
        return (g * (y + d.cos(x)), g * x)

    f.defvjp(f_fwd, f_bwd)

    def h(x, y):
        return f(x, y) * d.exp(y) + d.hypot(x, y) + d.logaddexp(x, y)

    pts = [(0.3, 0.7), (1.2, -0.4), (0.35, 0.6)]
    cg = run_both(d.value_and_grad(h, argnums=(0, 1)), pts)
    assert cg.recordings_made == 1  # custom_vjp's output stays recorded: no value guard
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # custom_vjp under jvp goes through numpy
        run_both(d.jacfwd(h, argnums=(0, 1)), pts)


def test_tangents_and_cotangents_as_inputs():
    def f(x, y):
        return d.sin(x * y) + x / (1.5 + d.cos(y))

    fj = lambda x, y, u, v: d.jvp(f, (x, y), (u, v))  # noqa: E731
    fv = lambda x, y, ct: d.vjp(f, x, y)[1](ct)  # noqa: E731
    run_both(fj, [(0.3, 0.5, 1.0, 0.0), (0.3, 0.5, 0.0, 1.0), (1.1, -0.2, 0.5, -2.0),
                  (0.3, 0.5, 0.0, 0.0)])
    run_both(fv, [(0.3, 0.5, 1.0), (1.1, -0.2, -2.5), (0.3, 0.5, 0.0)])


# -- the compiled replayer's optimiser: same bits (nan payloads included), same failures ------

special_inputs = st.one_of(finite_inputs, st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, 0.5]))


def nan_or_bits(x):
    return "nan" if x != x else raw_bits(x)


def raw_bits(x):
    return P._BITS.pack(x)


def record(g, xs):
    """The recording of ``g`` on ``xs`` as (code, funcs, ninputs, output slots), or None when
    ``g`` raises there."""
    rec = Recording()  # the backend's recorder (the compiled one with the compiled core)
    ins = [rec.input(float(v)) for v in xs]
    try:
        out = g(*ins)
    except Exception:  # noqa: BLE001
        return None
    finally:
        rec.closed = True
    leaves, _ = d.tree_flatten(out)
    return rec.code, rec.funcs, rec.ninputs, [x.slot for x in leaves if type(x) is Recorder]


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
@pytest.mark.parametrize("name", ["value_and_grad", "hessian", "jvp"])
@given(prog=programs(max_in=3, max_ops=12),
       pts=st.lists(st.lists(special_inputs, min_size=3, max_size=3), min_size=1, max_size=5))
def test_optimised_program_same_bits_and_failures(name, prog, pts):
    g = TRANSFORMS[name](scalar_of(prog), prog.n_in)
    r = record(g, [float(v) for v in pts[0][:prog.n_in]])
    if r is None:
        return
    opt = C.Program(*r)
    raw = C.Program(*r, optimize=False)
    pure = P.Program(*r)
    assert opt.n <= raw.n == opt.nrecorded
    for p in pts:
        xs = [float(v) for v in p[:prog.n_in]]
        fa, fb, fc = [], [], []
        a, b, c = opt.run(xs, fa), raw.run(xs, fb), pure.run(xs, fc)
        assert (a is None) == (b is None) == (c is None), (xs, a, b, c)
        if a is not None:
            assert [raw_bits(v) for v in a] == [raw_bits(v) for v in b]
            # (which of two NaN operands a product keeps is the C compiler's choice: the
            # backends' NaN payloads are not compared)
            assert [nan_or_bits(v) for v in b] == [nan_or_bits(v) for v in c]
            assert fa == fb == fc == []
        else:  # the first recorded check that failed, and its outcome: the same in both
            # replayers of the recording; the optimised one checks a fused guard where its
            # value is computed, maybe before another that fails too: it names a later one
            def key(f):
                return [(k, raw_bits(o) if type(o) is float else o) for k, o in f]
            assert len(fa) == len(fb) == len(fc) == 1 and key(fb) == key(fc)
            assert fa[0][0] > fb[0][0] or key(fa) == key(fb)


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
def test_optimiser_fuses_zero_tests_and_keeps_signalling_nans():
    g = d.value_and_grad(lambda x: x * x * 3.0 + d.sin(x) * x)
    code, funcs, nin, outs = record(g, [0.7])
    opt = C.Program(code, funcs, nin, outs)
    assert any(op == P.G_EQ for op, *_ in code)
    assert not any(op == P.G_EQ for op, *_ in opt.code)  # fused into the instructions
    assert opt.n < len(code)
    for x in (0.7, -1.3, 0.0):  # at 0 an adjoint is 0: a fused check fails, as the guard
        assert (opt.run([x]) is None) == (P.Program(code, funcs, nin, outs).run([x]) is None)
    # x * 1.0 quiets a signalling nan: kept where x may be one (an input), dropped elsewhere
    snan = P._BITS.unpack(b"\x01\x00\x00\x00\x00\x00\xf0\x7f")[0]
    one = [(P.INPUT, 0, 0, 0, 0.0), (P.CONST, 0, 0, 0, 1.0), (P.MUL, 0, 1, 0, 0.0),
           (P.ADD, 0, 0, 0, 0.0), (P.MUL, 3, 1, 0, 0.0)]
    prog = C.Program(one, [], 1, [2, 4])
    by_one = [(op, a, b) for op, a, b, *_ in prog.code
              if op == P.MUL and prog.code[b][0] == P.CONST and prog.code[b][4] == 1.0]
    assert len(by_one) == 1  # (x + x is x * 2.0: a product too)
    want = P.Program(one, [], 1, [2, 4]).run([snan])
    assert [raw_bits(v) for v in prog.run([snan])] == [raw_bits(v) for v in want]
    assert raw_bits(want[0]) != raw_bits(snan)  # the multiplication did quiet it


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
def test_optimiser_refuses_reading_a_guard_slot():
    code = [(P.INPUT, 0, 0, 0, 0.0), (P.G_BITS, 0, 0, 0, 1.0), (P.NEG, 1, 0, 0, 0.0)]
    with pytest.raises(ValueError):
        C.Program(code, [], 1, [2])
    with pytest.raises(ValueError):
        C.Program(code[:2], [], 1, [1])


@pytest.mark.skipif(Recorder is P.Recorder, reason="the pure backend records with the pure twin")
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
@given(prog=programs(max_in=3, max_ops=12),
       pts=st.lists(finite_inputs, min_size=3, max_size=3))
def test_compiled_recorder_records_the_pure_twins_program(name, prog, pts):
    g = TRANSFORMS[name](scalar_of(prog), prog.n_in)
    xs = pts[:prog.n_in]
    got = record(g, xs)
    from deltaad._backend import B
    from deltaad import trace
    B.set_recorder_type(P.Recorder)  # the compiled core meets the pure twin's numbers
    trace.register_recorder_type(P.Recorder, P.dispatch)
    try:
        rec = P.Recording()
        ins = [rec.input(float(v)) for v in xs]
        try:
            out = g(*ins)
            leaves, _ = d.tree_flatten(out)
            want = (rec.code, rec.funcs, rec.ninputs,
                    [x.slot for x in leaves if type(x) is P.Recorder])
        except Exception:  # noqa: BLE001
            want = None
        finally:
            rec.closed = True
    finally:
        B.set_recorder_type(Recorder)
        del trace.recorders[P.Recorder]
    if want is None or got is None:
        assert want is got
        return
    assert got[1:] == want[1:]
    assert [(op, a, b, k, raw_bits(c)) for op, a, b, k, c in got[0]] == \
        [(op, a, b, k, raw_bits(c)) for op, a, b, k, c in want[0]]


def test_compiled_recorder_errors_as_the_pure_twin():
    rec = Recording()
    x = rec.input(2.0)
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        x / 0.0
    with pytest.raises(ZeroDivisionError):
        1.0 / (x - 2.0)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(OverflowError):
        x + 10 ** 400
    assert (x < 10 ** 400) is True and (x == 2) is True and x.hex() == (2.0).hex()
    assert math.floor(x * 1.5) == 3 and round(x * 1.25) == 2 and int(x) == 2
    assert repr(x) == "2.0" and hash(x) == hash(2.0) and bool(x) and abs(-x).v == 2.0
    assert (2 ** x).v == 4.0 and (x ** 2).v == 4.0 and (7.0 // x).v == 3.0 and (x % 1.5).v == 0.5
    rec.closed = True
    with pytest.raises(d.EscapedDualError):
        x * 2.0
