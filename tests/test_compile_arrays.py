"""deltaad.compile on array inputs: numpy steps replayed give the uncompiled call's bits;
guards on array values re-record; what cannot be recorded warns once and runs uncompiled."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import deltaad as d
from deltaad import compile_arrays
from deltaad.compile import CompileWarning


@pytest.fixture(autouse=True)
def always_replay(monkeypatch):
    """These tests are about replays: no call is handed to the uncompiled function because
    it was timed faster (the choice is tested by itself, in test_compile_tree.py)."""
    monkeypatch.setattr(compile_arrays, "CHOOSE", "replay")


def tree_bits(x):
    leaves, tdef = d.tree_flatten(x)
    return repr(tdef), [(type(v).__name__, np.shape(v), np.asarray(v).tobytes()) for v in leaves]


A = np.random.default_rng(7).normal(size=(4, 4)) + 4 * np.eye(4)


def arith(x):
    return np.sum(np.exp(x) * x / (1.0 + x * x) - np.tanh(x))


def reductions(x):
    return np.mean(x) * np.max(x) + np.prod(x) + np.std(x) + np.linalg.norm(x)


def matmul(x):
    return np.sum((A @ x) ** 2) + x @ A @ x


def indexing(x):
    return x[0] * x[2] + np.sum(x[1:] * x[:-1]) + np.sum(x[np.array([0, 0, 3])])


def where(x):
    return np.sum(np.where(x > 0, x ** 2, -x))


def linalg(x):
    m = A + np.outer(x, x)
    return np.sum(np.linalg.solve(m, x)) + np.sum(np.linalg.inv(m))


def branch(x):
    if np.sum(x) > 0:
        return np.sum(x ** 3)
    return np.sum(np.sin(x))


def norm_loop(x):
    while np.linalg.norm(x) > 0.1:
        x = x * 0.5
    return np.sum(x * x)


PROGRAMS = [arith, reductions, matmul, indexing, where, linalg, branch, norm_loop]
TRANSFORMS = {
    "plain": lambda f: f,
    "grad": d.grad,
    "value_and_grad": d.value_and_grad,
    "jacrev": d.jacrev,
    "hessian": d.hessian,
    "jvp": lambda f: (lambda x: d.jvp(f, (x,), (np.linspace(0.5, 1.0, x.size).reshape(x.shape),))),
}


def run_both(g, points):
    """``compile(g)`` against ``g`` on every point, no CompileWarning allowed."""
    cg = d.compile(g)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for x in points:
            want = g(*x)
            got = cg(*x)
            assert tree_bits(got) == tree_bits(want), (x, got, want)
    return cg


POINTS = [np.array([0.3, -1.2, 0.7, 2.0]), np.array([-0.5, 0.25, 1.5, -2.0]),
          np.array([1.0, 2.0, 3.0, 4.0]), np.array([-1.0, -2.0, -0.5, -4.0])]


@pytest.mark.parametrize("tname", sorted(TRANSFORMS))
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_replay_same_bits(f, tname):
    g = TRANSFORMS[tname](f)
    if (f.__name__, tname) in KNOWN_FALLBACKS:  # not recorded yet: falls back, still right
        cg = d.compile(g)
        with pytest.warns(CompileWarning, match=KNOWN_FALLBACKS[f.__name__, tname]):
            for p in POINTS:
                assert tree_bits(cg(p)) == tree_bits(g(p))
        return
    cg = run_both(g, [(p,) for p in POINTS + POINTS[:1]])
    assert cg.nrecordings >= 1


KNOWN_FALLBACKS = {}  # (program, transform) -> the warning's cause, for what falls back


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.floats(-3, 3, allow_nan=False), min_size=4, max_size=4),
                min_size=2, max_size=4),
       st.sampled_from(PROGRAMS), st.sampled_from(sorted(TRANSFORMS)))
def test_random_points_same_bits(pts, f, tname):
    if (f.__name__, tname) in KNOWN_FALLBACKS:
        tname = "grad"
    run_both(TRANSFORMS[tname](f), [(np.array(p),) for p in pts])


def test_branch_guard_re_records():
    cg = run_both(d.grad(branch), [(POINTS[0],), (POINTS[3],)])
    assert cg.recordings_made == 2  # the other side of the branch: a guard failed
    run_both_again = [(POINTS[2],), (POINTS[1],), (POINTS[3],)]
    for (x,) in run_both_again:
        assert tree_bits(cg(x)) == tree_bits(d.grad(branch)(x))
    assert cg.recordings_made == 2  # both recordings kept, each replayed


def test_while_loop_trip_count_is_guarded():
    g = d.value_and_grad(norm_loop)
    cg = d.compile(g)
    x = np.array([0.01, 0.02, 0.0, 0.01])
    for scale in (1.0, 1.5, 100.0, 1.2, 150.0):
        assert tree_bits(cg(x * scale)) == tree_bits(g(x * scale))
    assert cg.recordings_made == 3  # 0 halvings (x1, x1.2, x1.5), 5 (x100), 6 (x150)


def test_mixed_array_and_float_inputs():
    def f(x, s, k):
        return np.sum(x * s) + s * s + np.sum(x ** 2) * k

    pts = [(POINTS[0], 1.5, 2.0), (POINTS[1], -0.5, 3.0), (POINTS[2], 0.0, 1.0)]
    for g in (f, d.grad(f, argnums=(0, 1)), d.value_and_grad(f, argnums=(0, 1)),
              d.jacrev(f, argnums=(0, 1))):
        cg = run_both(g, pts)
        assert cg.recordings_made == 1
    # not recorded yet: a numpy call the recorded float reaches first (in the hessian's
    # inner rules); it warns and runs uncompiled, with the uncompiled bits
    g = d.hessian(f, argnums=(0, 1))
    cg = d.compile(g)
    with pytest.warns(CompileWarning, match="recorded number"):
        for p in pts:
            assert tree_bits(cg(*p)) == tree_bits(g(*p))


def test_new_shape_new_recording():
    cg = run_both(d.grad(arith), [(np.ones(3),), (np.ones(5),), (np.ones(3) * 2,),
                                  (np.ones((2, 2)),)])
    assert cg.recordings_made == 3
    assert cg.nrecordings == 3


def test_scalar_out_of_array_stays_recorded():
    def f(x):
        s = x[1] * 2.0 + x[0]  # numpy scalars of recorded data: recorded, not guarded
        return np.sum(x * s)

    cg = run_both(d.grad(f), [(p,) for p in POINTS])
    assert cg.recordings_made == 1


def test_replay_error_is_the_uncompiled_error():
    def f(x):
        return np.sum(np.linalg.solve(np.outer(x, x) + np.diag(x), x))

    cg = d.compile(d.grad(f))
    x = np.array([1.0, 2.0, 3.0])
    assert tree_bits(cg(x)) == tree_bits(d.grad(f)(x))
    with pytest.raises(np.linalg.LinAlgError):
        cg(np.zeros(3))  # singular: the replay stops, the re-recording raises as numpy does


def _asarray(x):
    return np.sum(np.asarray(x) * 2.0)


def _setitem(x):
    y = x * 1.0
    y[0] = 5.0
    return np.sum(y)


def _out(x):
    y = np.zeros(4)
    np.multiply(x, 2.0, out=y)
    return np.sum(y)


def _ufunc_at(x):
    y = x * 1.0
    np.add.at(y, [0, 0], 1.0)
    return np.sum(y)


def _iadd(x):
    y = x * 1.0
    y += 1.0
    return np.sum(y)


def _const_written(x):
    c = np.ones(4)
    y = x * c
    c[0] = 3.0
    return np.sum(y * c)


@pytest.mark.parametrize("f, why", [(_asarray, "plain ndarray"), (_setitem, "in place"),
                                    (_out, "out="), (_ufunc_at, "at writes"),
                                    (_iadd, "in-place operator"),
                                    (_const_written, "written to in place")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_unrecordable_warns_once_and_runs_uncompiled(f, why):
    cg = d.compile(f)
    with pytest.warns(CompileWarning, match=why):
        assert tree_bits(cg(POINTS[0])) == tree_bits(f(POINTS[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tree_bits(cg(POINTS[1])) == tree_bits(f(POINTS[1]))  # no second warning
    assert cg.recordings_made == 0


def test_python_values_from_arrays_are_guards():
    def f(x):
        n = int(np.argmax(x))  # an index from values
        return x[n] * float(np.sum(x > 0)) + x.sum()

    cg = run_both(f, [(POINTS[0],), (POINTS[0] + 0.5,), (POINTS[1],)])
    assert cg.recordings_made == 2  # argmax moved from 3 to 2


def test_constant_results_are_fresh_arrays():
    def f(x):
        return np.sum(x), np.zeros(2)

    cg = d.compile(f)
    a = cg(POINTS[0])[1]
    a[0] = 7.0
    assert cg(POINTS[1])[1].tolist() == [0.0, 0.0]


def test_escaped_recorded_array_errors():
    box = []

    def f(x):
        box.append(x * 2.0)
        return np.sum(x)

    d.compile(f)(POINTS[0])
    with pytest.raises(d.EscapedDualError):
        box[0] + 1.0


def test_errstate_is_replayed():
    def f(x):
        with np.errstate(divide="raise"):
            y = 1.0 / x
        return np.sum(y * x)

    g = d.value_and_grad(f)
    cg = d.compile(g)
    x = np.array([1.0, 2.0, 4.0])
    assert tree_bits(cg(x)) == tree_bits(g(x))
    assert tree_bits(cg(x * 3.0)) == tree_bits(g(x * 3.0))
    assert cg.recordings_made == 1
    with pytest.raises(FloatingPointError):  # the replayed division raises as numpy's would
        cg(np.array([1.0, 0.0, 2.0]))
    with np.errstate(all="ignore"):  # other error handling: recorded afresh under it
        assert tree_bits(cg(x)) == tree_bits(g(x))
    assert cg.recordings_made == 2  # (the call that raised kept no recording)


# -- random array programs: sharing, branches on array values, scalars out of arrays ----------

_M = np.array([[0.5, -0.25, 0.0], [0.125, 1.0, -0.5], [0.0, 0.75, 0.25]])

_UNARY = [np.sin, np.tanh, lambda v: v * v, lambda v: -v, lambda v: np.cumsum(v),
          lambda v: _M @ v, lambda v: v[::-1], lambda v: np.concatenate([v[1:], v[:1]]),
          lambda v: v - np.mean(v), lambda v: v * np.sum(v * v),
          lambda v: np.where(v > 0.1, v, 0.5 * v), lambda v: np.maximum(v, 0.0),
          lambda v: v / (1.0 + np.abs(v)), lambda v: np.sort(v),
          lambda v: np.linalg.solve(_M + 2.0 * np.eye(3), v), lambda v: v[np.argmax(v)] * v,
          lambda v: np.clip(v, -0.5, 0.5), lambda v: np.prod(v) + v, lambda v: np.max(v) * v,
          lambda v: np.linalg.norm(v) * v, lambda v: np.exp(-v * v),
          lambda v: np.outer(v, v).sum(axis=1), lambda v: np.dot(v, _M),
          lambda v: np.sqrt(v * v + 1.0), lambda v: _halve(v), lambda v: v.T @ _M.T,
          lambda v: np.linalg.inv(_M + np.diag(v * v + 2.0)) @ v,
          lambda v: np.sum(v[v > 0.0]) * v,  # a shape from values: checked per step
          lambda v: np.mean(np.outer(v, v) + _M, axis=0), lambda v: np.max(np.outer(v, _M[0]), axis=1),
          lambda v: np.linalg.det(_M + 3.0 * np.eye(3) + np.outer(v, v)) * v,
          lambda v: np.linalg.cholesky(np.outer(v, v) + np.eye(3)) @ v,
          lambda v: np.linalg.eigh(np.outer(v, v) + _M + _M.T)[0],
          lambda v: np.var(v) + np.cumprod(v), lambda v: np.concatenate([np.diff(v), v[:1]]),
          lambda v: np.roll(v, 1), lambda v: np.einsum("i,ij->j", v, _M),
          lambda v: np.log1p(np.abs(v)), lambda v: np.arctan2(v, 1.0), lambda v: np.hypot(v, 0.5),
          lambda v: np.power(np.abs(v) + 1.0, 1.5), lambda v: np.take(v, [2, 0, 1]),
          lambda v: np.trace(np.outer(v, v)) * v, lambda v: np.flip(v) * np.linalg.norm(v, 1)]


def _halve(v):
    while np.max(np.abs(v)) > 1.0:  # a trip count from values: guards
        v = v * 0.5
    return v
_BINARY = [np.add, np.subtract, np.multiply, lambda a, b: a * b[0] + b * a[2],
           lambda a, b: np.stack([a, b]).sum(axis=0), lambda a, b: np.outer(a, b) @ a,
           lambda a, b: a if np.sum(a) > np.sum(b) else b * 2.0]

_op = st.one_of(st.tuples(st.just(1), st.integers(0, len(_UNARY) - 1), st.integers(0, 30)),
                st.tuples(st.just(2), st.integers(0, len(_BINARY) - 1), st.integers(0, 30),
                          st.integers(0, 30)))


def _program(ops):
    def f(x):
        pool = [x, x * 0.5 + 0.25]
        for op in ops:
            if op[0] == 1:
                pool.append(_UNARY[op[1]](pool[op[2] % len(pool)]))
            else:
                pool.append(_BINARY[op[1]](pool[op[2] % len(pool)], pool[op[3] % len(pool)]))
        return np.sum(pool[-1] * pool[-2]) + np.sum(pool[-1])
    return f


@settings(max_examples=60, deadline=None)
@given(st.lists(_op, min_size=1, max_size=8),
       st.lists(st.lists(st.floats(-2, 2, allow_nan=False, width=32), min_size=3, max_size=3),
                min_size=2, max_size=4),
       st.sampled_from(["plain", "grad", "value_and_grad", "jvp", "hessian"]))
def test_random_array_programs_same_bits(ops, pts, tname):
    f = _program(ops)
    g = TRANSFORMS[tname](f)
    points = [(np.array(p, dtype=float),) for p in pts]
    cg = d.compile(g)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for x in points + points[:1]:
            try:
                want = g(*x)
            except Exception as e:  # noqa: BLE001 - the compiled call must raise the same
                with pytest.raises(type(e)):
                    cg(*x)
                continue
            assert tree_bits(cg(*x)) == tree_bits(want)


def test_threads_get_the_serial_results():
    import threading

    g = d.value_and_grad(matmul)
    cg = d.compile(g)
    xs = [np.array([0.1 * k, -0.2, 0.3 + k, 1.0]) for k in range(8)]
    want = [tree_bits(g(x)) for x in xs]
    got = [None] * 8

    def work(k):
        for _ in range(5):
            got[k] = tree_bits(cg(xs[k]))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == want


def test_check_mode_compares_arrays():
    cg = d.compile(d.grad(linalg), check=True)
    for p in POINTS:
        assert tree_bits(cg(p)) == tree_bits(d.grad(linalg)(p))


def test_recording_that_raises_where_numpy_does_not_falls_back():
    def f(x):
        m = memoryview(x)  # a recorded array has no buffer: the recording raises TypeError
        return np.sum(x) + m.nbytes

    cg = d.compile(f)
    with pytest.warns(CompileWarning, match="recording raised TypeError"):
        assert tree_bits(cg(POINTS[0])) == tree_bits(f(POINTS[0]))
    assert tree_bits(cg(POINTS[1])) == tree_bits(f(POINTS[1]))


def test_float_exponent_branches_of_the_power_rule_are_guarded():
    def f(x, s):
        return np.sum(x ** s)  # the rule special-cases s == 0, 1, 2: guards on s

    g = d.grad(f)
    x = np.array([0.0, 1.5, 2.0])
    cg = run_both(g, [(x, 2.0), (x, 3.0), (x, 0.0), (x, 1.0), (x, 2.5), (x, 0.0)])
    assert cg.recordings_made >= 4


def test_mixed_float_power_and_where():
    def f(x, s):
        y = np.where(x > s, x * s, x ** 2)
        return np.sum(y) * s

    for g in (d.grad(f, argnums=(0, 1)), d.value_and_grad(f), d.jacrev(f, argnums=1)):
        run_both(g, [(POINTS[0], 0.5), (POINTS[1], -0.25), (POINTS[2], 2.5)])


# --------------------------------------------------------------------------------------------
# The C replayer (deltaad._array_replay): elementwise steps by numpy's own loops, buffers


def _program_of(cg):
    """The (only) array recording of compiled function ``cg``."""
    (entries,) = cg._cache.values()
    (tree,) = [e[1] for e in entries]
    (rep,) = tree.order
    return rep.prog


_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 1e-310, -1e-310, 1e300, -1e300, 710.0,
            -745.5, float("inf"), float("-inf"), float("nan"), np.pi / 2, 1e-8, -7.25]
_LOOP_UFUNCS = sorted(compile_arrays._LOOP_UFUNCS, key=lambda u: u.__name__)


@pytest.mark.parametrize("ufunc", _LOOP_UFUNCS, ids=lambda u: u.__name__)
@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(_SPECIAL) | st.floats(allow_nan=True, allow_infinity=True),
                min_size=2, max_size=12),
       st.floats(-4.0, 4.0) | st.sampled_from([0.0, 2.0, -1.0, 0.5, 3]))
def test_loop_steps_are_the_ufuncs_bits(ufunc, vals, scalar):
    """Every elementwise ufunc the replayer runs by numpy's loop, on arrays and scalars of
    special values: the bits and the warnings of calling the ufunc."""
    x = np.array(vals)
    y = np.array(vals[::-1])
    if ufunc.nin == 1:
        fs = [lambda a, b: ufunc(a) + 0.0 * b]
    else:
        fs = [lambda a, b: ufunc(a, b), lambda a, b: ufunc(a, scalar),
              lambda a, b: ufunc(scalar, b)]
    for f in fs:
        cg = d.compile(f)
        for args in ((x, y), (y, x), (x, x)):
            with warnings.catch_warnings(record=True) as want_w:
                warnings.simplefilter("always")
                want = f(*args)
            with warnings.catch_warnings(record=True) as got_w:
                warnings.simplefilter("always")
                got = cg(*args)
            assert tree_bits(got) == tree_bits(want)
            assert [str(w.message) for w in got_w] == [str(w.message) for w in want_w]
        assert cg.recordings_made == 1
        if d.backend == "c":
            assert _program_of(cg).nloops >= 1  # the loop was taken, not the ufunc call


def test_loops_on_a_long_chain(backend):
    """The programs the loops are for: long chains of elementwise operations on small arrays,
    forward and backward."""
    def f(x):
        y = x
        for k in range(30):
            y = np.sin(y) * 0.5 + x / (1.0 + y * y) - np.tanh(y) ** 2
        return np.sum(y)

    g = d.value_and_grad(f)
    cg = run_both(g, [(p,) for p in POINTS + POINTS[:2]])
    assert cg.recordings_made == 1
    if backend == "c":
        prog = _program_of(cg)
        assert prog.nloops > prog.nsteps // 2


def test_results_are_not_overwritten_by_the_next_call():
    """Arrays handed to the caller (or views of them, or arrays the caller keeps alive) are
    never the buffers the next replay writes into."""
    def f(x):
        y = np.sin(x) * 2.0
        z = np.exp(y) + x
        return y, z[1:], (z * z).reshape(2, 2), np.sum(z)

    cg = d.compile(f)
    first = cg(POINTS[0])
    bits = tree_bits(first)
    for p in POINTS[1:] + POINTS:
        got = cg(p)
        assert tree_bits(got) == tree_bits(f(p))
        assert tree_bits(first) == bits  # the first call's arrays kept their values
    kept = [cg(p) for p in POINTS]
    assert [tree_bits(k) for k in kept] == [tree_bits(f(p)) for p in POINTS]
    g = d.compile(d.grad(lambda x: np.sum(np.sin(x) * x)))
    grads = [g(p) for p in POINTS]
    assert [tree_bits(v) for v in grads] == [tree_bits(d.grad(lambda x: np.sum(np.sin(x) * x))(p))
                                             for p in POINTS]
    assert len(set(id(v) for v in grads)) == len(grads)


def test_a_constant_written_between_calls_records_afresh():
    """A constant array read by reference and changed in place between calls: the gradient
    rule folded it with the seed into an unrecorded array while recording, so a replay would
    return the old gradient; the constants' bits are checked and the call records afresh."""
    c = np.array([1.0, 2.0, 3.0, 4.0])

    def f(x):
        return np.sum(np.sin(x) * c + c)

    g = d.value_and_grad(f)
    cg = d.compile(g)
    assert tree_bits(cg(POINTS[0])) == tree_bits(g(POINTS[0]))
    for k, p in enumerate(POINTS):
        c[:] = c * 1.5 + k
        for q in (p, POINTS[0]):
            assert tree_bits(cg(q)) == tree_bits(g(q))
    assert cg.recordings_made == 1 + len(POINTS)
    c[:] = [1.0, 2.0, 3.0, 4.0]  # the first recording's constant again (if still kept)
    assert tree_bits(cg(POINTS[1])) == tree_bits(g(POINTS[1]))


@pytest.mark.skipif(compile_arrays._creplay is None, reason="the C replayer is not in use")
def test_c_plan_calls_the_ufunc_where_an_operand_is_not_a_plain_array():
    """A loop step whose operand is, on this call, not a C-contiguous native float64 array of
    the step's shape calls numpy's ufunc (whose bits and checks then hold)."""
    plan = compile_arrays._creplay.Plan(
        [(compile_arrays._C_FAST, compile_arrays._C_ARRAY, np.sin, (0,), None, 1, None, (3,),
          np.dtype(np.float64), (), (np.sin, (0,)))], 2, compile_arrays._same_value)
    assert plan.nfast == 1
    for x in (np.arange(3.0), np.arange(6.0)[::2], np.arange(3.0).astype(">f8"),
              np.arange(9.0).reshape(3, 3)[:, 0]):
        vals = [x, None]
        fail = []
        assert plan.run(vals, 0, fail) == 1 and fail == []
        assert tree_bits(vals[1]) == tree_bits(np.sin(x))
    for bad in (np.arange(3, dtype=np.float32), np.arange(4.0), np.float64(1.0)):
        vals = [bad, None]
        fail = []
        assert plan.run(vals, 0, fail) == -1  # numpy's result is not the recorded one
        assert fail and fail[0][0] == 0
    with pytest.raises(ValueError):
        plan.run([np.arange(3.0)], 0, [])  # values for another number of slots


def test_floating_point_errors_warn_and_raise_as_numpy_does():
    def f(x):
        return np.sum(np.log(x) * x)

    cg = d.compile(f)
    ok = np.array([1.0, 2.0, 3.0])
    zero = np.array([1.0, 0.0, 3.0])
    assert tree_bits(cg(ok)) == tree_bits(f(ok))
    with warnings.catch_warnings(record=True) as want_w:
        warnings.simplefilter("always")
        want = f(zero)
    with warnings.catch_warnings(record=True) as got_w:
        warnings.simplefilter("always")
        assert tree_bits(cg(zero)) == tree_bits(want)
    assert [str(w.message) for w in got_w] == [str(w.message) for w in want_w]
    assert "divide by zero encountered in log" in [str(w.message) for w in got_w]
    assert cg.recordings_made == 1
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            cg(zero)
        assert tree_bits(cg(ok)) == tree_bits(f(ok))


def test_numpy_valued_rule_replays_numpys_value():
    """A rule declared with numpy's value (``np.linalg.norm``: its rule's ``sqrt(sum(x * x))``
    rounds unlike numpy's own) gives numpy's value under compile too, recorded and replayed:
    the recording holds numpy's call, not the composition's value."""
    # a point that tells them apart, found on this machine's numpy (which point does depends
    # on numpy's summation: numpy 2.4 rounds a 4-vector's norm as the composition does)
    rng = np.random.default_rng(0)
    for _ in range(1000):
        x = rng.normal(size=8) * 2
        if np.sqrt(np.sum(x * x)) != np.linalg.norm(x):
            break
    else:
        pytest.skip("numpy's norm rounds as sqrt(sum(x * x)) at every point tried")
    t = np.linspace(0.5, 1.0, 8)
    for g in (d.value_and_grad(np.linalg.norm), lambda x: d.jvp(np.linalg.norm, (x,), (t,)),
              lambda x: np.linalg.norm(x * 1.5)):
        run_both(g, [(x,), (x[::-1].copy(),)])
