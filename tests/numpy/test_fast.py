"""The compiled fast path of array duals (``deltaad._arrays``, installed by
``deltaad.numpy.fast`` on the compiled backend) gives the Python path's results to the bit.

Random programs over its operations (tests/fast_programs.py), with the inputs the fast path
takes (float64 arrays of shapes (1,), (3,), (16,), 0-d) and those it leaves to the Python path
(float32, (1,) against (n,) broadcasting, scalar duals, constants): values, reverse and forward
derivatives with the fast path on and off, against the pure backend in another process,
against finite differences, and nested (Hessian-vector products).
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from deltaad.numpy import fast
from fast_programs import draw_program, results, run
from numpy_checks import check_first_order, check_second_order

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
compiled = pytest.mark.skipif(d.backend != "c", reason="the fast path is the compiled backend's")

# input shapes of a case: arrays of one shape (the fast path), (1,) against (n,) (broadcasting:
# the Python path), 0-d arrays, and a Python float among arrays (a scalar dual)
LAYOUTS = [[(3,), (3,)], [(1,), (1,)], [(16,), (16,)], [(), ()], [(1,), (4,)], [(3,), None],
           [(2, 3), (2, 3)]]


def case(seed, layout, dtype="float64", length=6):
    rng = np.random.default_rng(seed)
    shapes = LAYOUTS[layout]
    xs = [rng.uniform(-1.5, 1.5, 1 if s is None else int(np.prod(s))).tolist() for s in shapes]
    big = max((s for s in shapes if s is not None), key=len)
    cshapes = [big, big[-1:] if big else ()]
    consts = [rng.uniform(-1.5, 1.5, int(np.prod(s))).tolist() for s in cshapes]
    return {"program": draw_program(rng, len(shapes), length), "xs": xs, "shapes": shapes,
            "consts": consts, "cshapes": cshapes, "dtype": dtype, "seed": seed}


def _switched(flag, fn, *args):
    old = fast.set_enabled(flag)
    try:
        return fn(*args)
    finally:
        fast.set_enabled(old)


cases = st.builds(case, st.integers(0, 2**31 - 1), st.integers(0, len(LAYOUTS) - 1),
                  st.sampled_from(["float64", "float64", "float32"]), st.integers(1, 9))


@compiled
def test_installed():
    """On the compiled backend the fast path is there, and it is what records ``np.sin``."""
    assert fast.enabled(), fast.why
    x = np.array([0.5, -1.0, 2.0])
    seen = []

    def f(x):
        y = np.sin(x) * x + 2.0
        tape = y.trace
        seen.append(type(tape.binding(y.id)[1]).__name__)
        return np.sum(y)

    d.grad(f)(x)
    _switched(False, d.grad(f), x)
    assert seen[0] == "ArrayRule" and seen[1] != "ArrayRule", seen


@compiled
@given(cases)
def test_same_bits_as_python_path(c):
    """Values, gradients and tangents with the fast path on and off agree to the bit."""
    on = _switched(True, results, d, c)
    off = _switched(False, results, d, c)
    assert on == off


@compiled
def test_same_bits_as_pure_backend():
    """The same random programs under the pure backend, in another process: the same bits."""
    cs = [case(seed, seed % len(LAYOUTS), "float64" if seed % 5 else "float32", 4 + seed % 7)
          for seed in range(60)]
    env = dict(os.environ, DELTAAD_BACKEND="python", PYTHONPATH=TESTS)
    out = subprocess.run([sys.executable, os.path.join(TESTS, "fast_programs.py")],
                         input=json.dumps(cs), capture_output=True, text=True, env=env,
                         check=True).stdout
    pure = json.loads(out)
    for c, p in zip(cs, pure):
        assert json.loads(json.dumps(results(d, c))) == p, c


@given(cases)
def test_value_is_numpys(c):
    """Differentiating never changes the value: the plain program's bits."""
    xs, consts, f = _program(c)
    plain = run(c["program"], consts, *xs)
    out = d.vjp(f, *xs)[0]
    # a numpy function of a Python float is an np.float64 in the plain run, which widens a
    # float32 array; its dual promotes as a float (documented in the sharp bits)
    mixed = c["dtype"] == "float32" and None in c["shapes"]
    for a, b in zip(out, plain):
        if mixed:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4)
            continue
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _program(c):
    xs = [float(x[0]) if s is None else np.asarray(x, dtype=c["dtype"]).reshape(s)
          for x, s in zip(c["xs"], c["shapes"])]
    consts = [np.asarray(k, dtype=c["dtype"]).reshape(s) for k, s in zip(c["consts"], c["cshapes"])]
    return xs, consts, lambda *a: run(c["program"], consts, *a)


@settings(max_examples=max(5, settings().max_examples // 3))
@given(st.integers(0, 2**31 - 1), st.integers(0, len(LAYOUTS) - 1))
def test_derivatives_against_finite_differences(seed, layout):
    """Reverse and forward mode against finite differences (float64 programs)."""
    c = case(seed, layout)
    xs, _consts, f = _program(c)
    check_first_order(f, xs, seed=seed, rtol=2e-4, atol=2e-5)  # random compositions: curvy


@settings(max_examples=max(3, settings().max_examples // 10))
@given(st.integers(0, 2**31 - 1), st.sampled_from([0, 1, 3, 4]))
def test_hessian_vector_products(seed, layout):
    """Nested: Hessian-vector products by the four nestings against finite differences of the
    gradient (the inner sweep runs the fast path's rules on duals of the outer level)."""
    c = case(seed, layout, length=4)
    xs, _consts, f = _program(c)
    check_second_order(f, xs, seed=seed, rtol=1e-4, atol=1e-5)


@given(st.integers(0, 2**31 - 1))
def test_float32_stays_float32(seed):
    c = case(seed, 0, "float32")
    xs, _consts, f = _program(c)
    out, pb = d.vjp(f, *xs)
    assert [np.asarray(o).dtype for o in out] == [np.dtype(np.float32)] * len(out)
    g = pb([np.ones_like(np.asarray(o)) for o in out])
    assert all(gi.dtype == np.float32 for gi in g)


def rk4_energy(x0, steps=40, h=0.05):
    """Lotka-Volterra by RK4 on a 2-element state kept as a numpy array, as a user writes it."""
    a = np.array([1.1, -0.4])
    b = np.array([-0.4, 0.1])

    def rhs(s):
        return s * (a + b * s[::-1])

    s = x0
    for _ in range(steps):
        k1 = rhs(s)
        k2 = rhs(s + 0.5 * h * k1)
        k3 = rhs(s + 0.5 * h * k2)
        k4 = rhs(s + h * k3)
        s = s + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return np.sum(s * s)


def test_rk4_of_a_small_state():
    """The RK4 of a 2-element state written with plain numpy arrays: gradient against finite
    differences, and the same bits as with the Python path."""
    x0 = np.array([1.0, 0.5])
    g = d.grad(rk4_energy)(x0)
    h = 1e-6
    fd = [(rk4_energy(x0 + h * e) - rk4_energy(x0 - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    if d.backend == "c":
        g_off = _switched(False, d.grad(rk4_energy), x0)
        assert g.tobytes() == g_off.tobytes()


@compiled
def test_cotangent_that_is_a_dual():
    """A pullback called with a cotangent that is a dual (inside another differentiation): the
    fast path's rule hands it to the Python rule."""
    x = np.array([0.3, -0.7, 1.1])

    def f(x):
        return np.tanh(x) * x - x / 3.0

    _, pb = d.vjp(f, x)

    def g(ct):
        return np.sum(pb(ct)[0] ** 2)

    ct = np.array([1.0, 2.0, -1.0])
    gr = d.grad(g)(ct)
    gr_off = _switched(False, d.grad(g), ct)
    assert gr.tobytes() == gr_off.tobytes()


@compiled
def test_floating_point_warnings_as_numpy():
    """A loop that raises a floating-point exception sends the operation the Python way: numpy
    warns (or raises, by np.errstate) exactly as without differentiation."""
    x = np.array([0.0, 1.0])
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        d.grad(lambda x: np.sum(np.log(x) + x))(x)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            d.grad(lambda x: np.sum(1.0 / x))(x)


@compiled
def test_exception_flags_left_set_before_are_not_the_loops():
    """Python's float arithmetic sets the processor's exception flags and leaves them set
    (``1e308 * 10.0`` leaves overflow); the fast path clears them before its loops only when
    set, and a flag left from before is never taken for one its loop raised: the operation
    stays on the fast path, with no warning and no error under ``np.errstate(all="raise")``."""
    x = np.array([0.5, -1.0, 2.0])
    kinds = []

    def f(x):
        big = 1e308
        inf = big * 10.0    # the overflow flag set (Python ignores it)
        inf - inf           # and the invalid flag
        y = np.sin(x) * x + 2.0
        kinds.append(type(y.trace.binding(y.id)[1]).__name__)
        return np.sum(y)

    with np.errstate(all="raise"):
        g = d.grad(f)(x)
    assert kinds == ["ArrayRule"]
    assert g.tobytes() == _switched(False, d.grad(f), x).tobytes()


def _chain(x):
    """sin, cos and arithmetic in a loop: the sweep sums adjoints into ``x`` many times."""
    y = x
    for k in range(4):
        y = np.sin(y) + x if k % 2 else np.cos(y) * x - y
    return np.sum(y * y)


@compiled
@pytest.mark.parametrize("n", [1, 3, 16, 64, 65, 200])
def test_partials_made_by_the_sweep_same_bits(n):
    """sin's and cos's partials made by the sweep (a scratch buffer up to 64 elements, an
    allocated one past it) and the sweep's adjoint sums done in place (up to 64): the Python
    path's bits, for vjp and for a pullback called twice."""
    x = np.linspace(-2.0, 3.0, n)
    g = d.grad(_chain)(x)
    g_off = _switched(False, d.grad(_chain), x)
    assert g.tobytes() == g_off.tobytes()
    ct = np.float64(1.5)
    _, pb = d.vjp(_chain, x)
    first = pb(ct)[0]
    again = pb(ct)[0]
    assert first.tobytes() == again.tobytes()


@compiled
def test_adjoint_sums_in_place_touch_no_user_array():
    """Summing adjoints in place never writes into an array the caller can see: a cotangent
    passed to the pullback, or one a custom rule returns, keeps its values."""
    x = np.array([0.3, -0.7, 1.1])

    def f(x):
        return [np.sin(x) + x, x * 2.0]

    _, pb = d.vjp(f, x)
    ct = [np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, -1.0])]
    keep = [c.copy() for c in ct]
    (g,) = pb(ct)
    for c, k in zip(ct, keep):
        assert c.tobytes() == k.tobytes()
    (g2,) = pb(ct)
    assert g.tobytes() == g2.tobytes()
    np.testing.assert_allclose(g, keep[0] * (np.cos(x) + 1.0) + 2.0 * keep[1], rtol=1e-15)
    assert g.tobytes() == _switched(False, lambda: d.vjp(f, x)[1](ct)[0]).tobytes()


@compiled
def test_cos_of_subnormals_as_numpy():
    """cos's partial, -(sin(a)), signals an underflow for subnormal entries where cos does
    not: such an operation keeps its partial from the start, and raises by np.errstate
    exactly as the Python path does."""
    x = np.array([5e-324, 0.5, -1e-310])

    def f(x):
        return np.sum(np.cos(x) * x)

    with np.errstate(under="raise"):
        with pytest.raises(FloatingPointError):
            d.grad(f)(x)
        with pytest.raises(FloatingPointError):
            _switched(False, d.grad(f), x)
    g = d.grad(f)(x)
    assert g.tobytes() == _switched(False, d.grad(f), x).tobytes()


@compiled
def test_escaped_array_dual_through_the_fast_path():
    """An escaped array dual in a fast operation raises EscapedDualError, as on the Python
    path."""
    kept = []

    def f(x):
        kept.append(x)
        return np.sum(x * x)

    d.grad(f)(np.array([1.0, 2.0]))
    for op in (lambda y: np.sin(y), lambda y: y + 1.0, lambda y: y * y):
        with pytest.raises(d.EscapedDualError):
            op(kept[0])
        with pytest.raises(d.EscapedDualError):
            _switched(False, op, kept[0])


def _matvec_program(M, N):
    def f(x):
        y = np.sin(x @ M)         # (k,) @ (k, m)
        z = M @ np.cos(y)         # (k, m) @ (m,)
        w = np.matmul(z, N) + z * 2.0
        return np.sum(w * w) + np.sum(N.T @ w)
    return f


@compiled
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**31 - 1),
       st.sampled_from(["C", "F", "T"]))
def test_matmul_by_a_constant_matrix_same_bits(k, m, seed, layout):
    """A 1-D array dual times a constant float64 matrix, on either side and in any layout
    (C order, Fortran order, a transposed view): recorded by the fast path, with the Python
    path's bits, value and gradient."""
    rng = np.random.default_rng(seed)
    M = rng.uniform(-1.0, 1.0, (k, m))
    M = np.asfortranarray(M) if layout == "F" else rng.uniform(-1.0, 1.0, (m, k)).T if layout == "T" else M
    N = rng.uniform(-1.0, 1.0, (k, k))
    x = rng.uniform(-1.0, 1.0, k)
    f = _matvec_program(M, N)
    seen = []

    def probe(x):
        seen.append(type(x.trace.binding((x @ M).id)[1]).__name__)
        return f(x)

    v, g = d.value_and_grad(probe)(x)
    v_off, g_off = _switched(False, d.value_and_grad(f), x)
    assert seen == ["ArrayRule"]
    assert np.float64(v).tobytes() == np.float64(v_off).tobytes()
    assert g.tobytes() == g_off.tobytes()
    check_first_order(f, [x], seed=seed, rtol=1e-5, atol=1e-7)


@compiled
def test_matmul_cases_left_to_the_python_path():
    """Mismatched shapes give numpy's error; a float32 matrix, a 2-D dual, two duals and a
    strided cotangent take the Python path, with its results."""
    x = np.array([0.5, -1.0])
    with pytest.raises(ValueError, match="matmul"):
        d.grad(lambda x: np.sum(x @ np.ones((3, 2))))(x)
    cases = [lambda x: np.sum(x @ np.ones((2, 2), np.float32)),
             lambda x: np.sum(np.reshape(x, (1, 2)) @ np.eye(2)),
             lambda x: np.sum(x @ np.outer(x, x)),
             lambda x: np.sum(x @ np.eye(2))]  # sum's cotangent is a broadcast view
    for f in cases:
        g = d.grad(f)(x)
        assert g.tobytes() == _switched(False, d.grad(f), x).tobytes()


def test_strided_cotangent_passed_on_keeps_its_layout():
    """``a + b`` and ``a - b`` hand their cotangent on unchanged; one that is strided (``det``'s
    rule gives a transposed inverse) must reach the next rule as the Python path hands it on,
    not as a C-ordered copy: a later ``matmul`` (here ``outer``'s rule) may add in another
    order on another layout."""
    if not fast.enabled():
        pytest.skip("no compiled fast path")
    m = np.array([[0.5, -0.25, 0.0], [0.125, 1.0, -0.5], [0.0, 0.75, 0.25]])

    def f(v):
        return np.linalg.det(m + 3.0 * np.eye(3) + np.outer(v, v))

    for x in (np.array([1.0, 1.0, 2.0]), np.array([0.3, -1.2, 0.7]), np.array([2.0, 0.5, 1.0])):
        got = _switched(True, d.grad(f), x)
        want = _switched(False, d.grad(f), x)
        assert got.tobytes() == want.tobytes()


@compiled
def test_fast_bindings_read_back_with_their_parents():
    """The core keeps a fast binding's parents and rule in the binding itself (no tuple, no
    entry of the tape's dict); it reads back as ``(parents, rule)``, one parent or two, in the
    operands' order."""
    x = np.array([0.5, -1.0, 2.0])
    y = np.array([1.5, 0.25, -3.0])
    got = []

    def f(x, y):
        a = np.sin(x)
        b = y * a
        c = 2.0 - b
        t = x.trace
        for v, parents in ((a, (x.id,)), (b, (y.id, a.id)), (c, (b.id,))):
            ps, rule = t.binding(v.id)
            got.append((ps == parents, type(rule).__name__))
        return np.sum(c)

    d.grad(f, argnums=(0, 1))(x, y)
    assert got == [(True, "ArrayRule")] * 3, got


@pytest.mark.parametrize("checkpointed", [False, True])
def test_fast_rules_freed_with_their_bindings(checkpointed):
    """The rules of fast bindings are freed with the tape, and with the bindings a checkpoint
    drops (its first run and its re-run by the sweep): nothing they hold outlives the
    gradient."""
    import gc
    import weakref

    refs = []

    def f(x):
        y = np.sin(x) * x
        refs.append(weakref.ref(getattr(y, "value", y)))  # held by the rule of cos(y)
        return np.sum(np.cos(y) + x)

    g = d.grad(d.checkpoint(f) if checkpointed else f)
    x = np.linspace(-1.0, 1.0, 100)  # past the arrays the fast path keeps for reuse (<= 64)
    for _ in range(3):
        g(x)
    gc.collect()
    assert refs and all(r() is None for r in refs), [r() for r in refs]


@settings(max_examples=max(5, settings().max_examples // 3))
@given(st.integers(0, 2**31 - 1), st.sampled_from([0, 1, 2, 3, 5]))
def test_checkpointed_programs_same_bits(seed, layout):
    """Random programs under ``checkpoint`` (their fast bindings dropped after the first run,
    recorded again and swept by the sweep): the cotangents of the program without it, to the
    bit."""
    c = case(seed, layout)
    xs, _consts, f = _program(c)
    rng = np.random.default_rng(seed)
    out, pb = d.vjp(f, *xs)
    cts = [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in out]
    want = pb(cts)
    out2, pb2 = d.vjp(d.checkpoint(f), *xs)
    got = pb2(cts)
    assert [np.asarray(v).tobytes() for v in out2] == [np.asarray(v).tobytes() for v in out]
    assert [np.asarray(v).tobytes() for v in got] == [np.asarray(v).tobytes() for v in want]


def test_arrays_kept_for_reuse_are_never_ones_held():
    """The fast path reuses the small arrays of earlier gradients that nothing holds any more;
    a result the caller keeps, a view's base, an array made read-only or reshaped in place
    keep their values through many later gradients (on both backends: the same results)."""
    def f(x):
        return np.sum(np.sin(x) * x + x * x)

    def exact(x):
        return np.sin(x) + x * np.cos(x) + 2.0 * x

    xs = [np.linspace(-1.0, 1.0, 16) * k for k in range(1, 5)]
    kept = [d.grad(f)(x) for x in xs]
    saved = [g.copy() for g in kept]
    view = d.grad(f)(xs[0])[3:7]
    view_saved = view.copy()
    ro = d.grad(f)(xs[1])
    ro.flags.writeable = False
    shaped = d.grad(f)(xs[2])
    shaped.shape = (4, 4)
    del ro, shaped
    for k in range(5):
        for x in xs:
            np.testing.assert_allclose(d.grad(f)(x * (0.5 + k)), exact(x * (0.5 + k)), rtol=1e-14)
    for g, s, x in zip(kept, saved, xs):
        assert g.tobytes() == s.tobytes()
        np.testing.assert_allclose(g, exact(x), rtol=1e-14)
    assert view.tobytes() == view_saved.tobytes()


@compiled
@pytest.mark.parametrize("steps", [3, 400, 3000])
def test_long_programs_lap_the_rings_of_kept_arrays(steps):
    """Programs that make more small arrays than a ring of kept arrays holds (it laps within
    a gradient; the values rules keep are parked until the tape lets go), of several sizes and
    shapes at once, with values the caller keeps along the way and a second program of other
    shapes after the first: gradients bit for bit with the fast path on and off, repeated, and
    every value the caller kept unchanged."""
    rng = np.random.default_rng(steps)
    K = rng.standard_normal((3, 3)) / 3.0

    def f(x, y, z, kept):
        for i in range(steps):
            x = np.sin(x) * 0.9 + y[:3] @ K   # (3,), matrices and slices of (5,)
            y = np.concatenate([x, y[3:] * 0.5]) + np.cos(y)   # (5,)
            z = np.tanh(z * x[0] + 0.1)        # (4, 2), a scalar dual's broadcast
            if i % 97 == 0 and kept is not None:
                kept.append((x.value.copy(), x.value, y.value))
        return np.sum(x * x) + np.sum(y) + np.sum(z)

    def g(w):
        u = w
        for _ in range(steps // 2 + 1):
            u = np.maximum(np.sin(u) * 2.0, 0.25) - u[::-1]
        return np.sum(u * u)

    args = (rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 5), rng.uniform(-1, 1, (4, 2)))
    w = rng.uniform(-1, 1, 7)

    def run(kept=None):
        out = []
        for _ in range(2):
            out += [a.tobytes() for a in d.grad(lambda *a: f(*a, kept), argnums=(0, 1, 2))(*args)]
            out.append(d.grad(g)(w).tobytes())
        return out

    kept = []
    on = run(kept)
    assert on == _switched(False, run)
    assert run() == on
    for copy, value, y in kept:
        assert copy.tobytes() == value.tobytes() and y.shape == (5,)


# --------------------------------------------------------------------------------------------
# The general lane: operations the loops do not take, by the Python path's steps from C


def _lane_program(W, q, k):
    """Broadcasting, matrices, stacks, float32 and int constants, unary ufuncs on views, a
    scalar dual meeting array duals: what the loops decline and the general lane takes."""
    def f(x, s, t):
        y = (x * q + 1) * (np.arange(4) + 1) / 4   # (3, 4) * (3, 1), an int, an int array
        y = y @ W - np.tanh(y[:, :2]).sum()  # a product of matrices; a view through tanh
        y = (y * t + t) / (1.5 + t) - t / (2.0 + y * y) + np.multiply(t, y)  # a scalar dual
        z = np.exp(-(y.T * 0.5))          # negation and exp of a transposed view
        u = (s[None, :, :] - z[:, :, None] * k) @ s   # a stack times a stack, broadcast
        v = np.multiply(u, np.float32(2.0)) / (1.0 + u * u)
        return np.sum(v * v) + np.sum(np.sin(u)) * t
    return f


@compiled
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_general_lane_same_bits_as_python_path(dtype):
    """Values, gradients, pullbacks and jvps with the general lane (the fast path on) and the
    Python path (off) agree to the bit, and the gradient agrees with finite differences."""
    rng = np.random.default_rng(5)
    W = rng.standard_normal((4, 4)).astype(dtype)
    q = rng.standard_normal((3, 1)).astype(dtype)
    k = rng.standard_normal((1, 3, 1)).astype(dtype)
    f = _lane_program(W, q, k)
    xs = tuple((0.5 * rng.standard_normal(s)).astype(dtype) for s in ((3, 4), (4, 3, 3)))
    xs = xs + (0.7,)

    def run(f, *xs):
        out, pb = d.vjp(f, *xs)
        g = pb(np.ones((), out.dtype))
        _, t = d.jvp(f, xs, tuple(np.ones_like(x) for x in xs[:2]) + (1.0,))
        h = d.grad(lambda x, s, t: d.grad(f, argnums=(0, 2))(x, s, t)[0].sum(),
                   argnums=(0, 2))(*xs)  # the lane's rules under nesting
        return [np.asarray(a).tobytes() for a in (out, *g, t, *h)]

    assert run(f, *xs) == _switched(False, run, f, *xs)
    if dtype == "float64":
        check_first_order(f, list(xs), seed=5, rtol=2e-4, atol=2e-5)


@compiled
def test_general_lane_skips_the_python_frames():
    """A broadcast product, a product of matrices, a ufunc of a transposed view and an array
    dual times a scalar dual record without ``array.apply`` (the Python path's frames); a list
    operand still takes it."""
    import sys

    from deltaad.numpy import array

    q = np.array([[1.0], [2.0]])
    W = np.ones((3, 3))

    def frames(op, *args):
        seen = []
        sys.setprofile(lambda frame, event, arg: seen.append(frame.f_code)
                       if event == "call" else None)
        try:
            op(*args)
        finally:
            sys.setprofile(None)
        return array.apply.__code__ in seen

    took = []

    def f(x, t):
        xt = x.T
        took.extend([frames(lambda: x * q), frames(lambda: x @ W), frames(np.sin, xt),
                      frames(lambda: x * t), frames(lambda: t - x), frames(lambda: x * [1, 2, 3])])
        return np.sum(x)

    d.grad(f, argnums=(0, 1))(np.ones((2, 3)), 2.0)
    assert took == [False, False, False, False, False, True]


@compiled
def test_general_lane_errors_as_the_python_path():
    """What the lane declines raises as the Python path raises: mismatched shapes (numpy's
    error), a 0-d operand of matmul, an escaped dual, a complex constant."""
    kept = []

    def f(x):
        kept.append(x)
        return np.sum(x * x)

    d.grad(f)(np.ones((2, 3)))
    cases = [(lambda x: x * np.ones((4, 1)), ValueError),
             (lambda x: x @ np.ones((2, 2)), ValueError),
             (lambda x: np.matmul(x, np.float64(2.0)), ValueError),
             (lambda x: x * np.ones((1, 3), dtype=complex), TypeError)]
    for op, err in cases:
        with pytest.raises(err) as on:
            d.grad(lambda x: np.sum(op(x)))(np.ones((2, 3)))
        with pytest.raises(err) as off:
            _switched(False, d.grad(lambda x: np.sum(op(x))), np.ones((2, 3)))
        assert str(on.value) == str(off.value)
    with pytest.raises(d.EscapedDualError):
        kept[0] * np.ones((1, 3))
    with pytest.raises(d.EscapedDualError):
        kept[0] @ np.ones((3, 3))


def _operand(draw, shape):
    """An operand broadcasting against ``shape``: leading axes dropped, axes of length 1,
    a C-ordered array, a strided or transposed view, a broadcast view, or float32."""
    s = list(shape)[draw(st.integers(0, len(shape))):]
    s = [1 if draw(st.booleans()) and draw(st.booleans()) else v for v in s]
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    kind = draw(st.sampled_from(["c", "c", "strided", "transposed", "broadcast", "f4", "neg"]))
    if kind == "strided" and s:
        return rng.standard_normal([2 * v for v in s])[tuple(slice(None, None, 2) for _ in s)]
    if kind == "transposed" and len(s) >= 2:
        return rng.standard_normal(s[::-1]).T
    if kind == "broadcast":
        return np.broadcast_to(rng.standard_normal([1] * len(s)), s)
    if kind == "neg" and s:
        return rng.standard_normal(s)[..., ::-1]
    a = rng.standard_normal(s)
    return a.astype(np.float32) if kind == "f4" else a


@st.composite
def _broadcast_pairs(draw):
    shape = draw(st.lists(st.integers(1, 5), min_size=0, max_size=4))
    return draw(st.integers(0, 3)), _operand(draw, shape), _operand(draw, shape)


@compiled
@settings(max_examples=300)
@given(_broadcast_pairs())
def test_broadcast_loop_is_numpys(pair):
    """``_arrays.binary`` (the broadcast loop of ``+ - * /``), where it takes the operands,
    gives numpy's array: the same bits, shape and strides (numpy's result is C-ordered for
    the layouts it takes)."""
    from deltaad import _arrays

    code, a, b = pair
    r = _arrays.binary(code, a, b)
    with np.errstate(all="ignore"):
        e = (np.add, np.subtract, np.multiply, np.true_divide)[code](a, b)
    if r is not None:
        assert (r.shape, r.dtype, r.strides) == (e.shape, e.dtype, e.strides)
        assert r.tobytes() == e.tobytes()


@compiled
def test_broadcast_loop_takes_short_rows_and_declines_the_rest():
    """It takes the broadcasts along short rows it is for (so the test above is not empty),
    and declines what numpy must do: shapes that do not broadcast, an exception numpy warns
    of, another dtype, a result numpy would lay out otherwise, one row, long rows of /."""
    from deltaad import _arrays

    ct = np.arange(1.0, 61.0).reshape(5, 4, 3)
    q = np.arange(1.0, 16.0).reshape(5, 1, 3)
    for code, op in enumerate((np.add, np.subtract, np.multiply, np.true_divide)):
        for x, y in ((ct, q), (q, ct), (ct[:, :, :1], ct), (ct, ct[0]), (ct[:, ::2], q)):
            r = _arrays.binary(code, x, y)
            assert r is not None and r.tobytes() == op(x, y).tobytes()
    zero = np.zeros((5, 1, 3))
    assert _arrays.binary(3, ct, zero) is None                     # division by zero
    assert _arrays.binary(2, ct * 1e300, q * 1e300) is None        # overflow
    assert _arrays.binary(2, ct, np.ones((5, 2, 3))) is None       # no broadcast: numpy's error
    assert _arrays.binary(2, ct, q.astype(np.float32)) is None
    assert _arrays.binary(2, np.ones((3, 4)).T, np.ones(3)) is None  # F-ordered: numpy's order
    assert _arrays.binary(2, ct.ravel(), ct.ravel()) is None       # one row
    assert _arrays.binary(3, np.ones((2, 40)), np.ones(40)) is None  # a long row divided
    assert _arrays.binary(2, np.ones((2, 40)), np.ones(40)) is not None


@st.composite
def _row_arrays(draw):
    shape = draw(st.lists(st.integers(1, 6), min_size=1, max_size=3))
    shape.append(draw(st.one_of(st.integers(1, 20), st.integers(1, 300))))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-20, 20, shape)
    special = draw(st.sampled_from([None, -0.0, np.nan, np.inf, 1e308]))
    if special is not None:
        x[(0,) * (len(shape) - 1)] = special  # a row of it (an overflow for 1e308)
    return x


@compiled
@settings(max_examples=200)
@given(_row_arrays(), st.booleans())
def test_sum_rows_is_numpys(x, keepdims):
    """``_arrays.sum_rows`` (np.sum over the last axis in one loop) gives numpy's sums to the
    bit (its pairwise order), keepdims or not; it declines an overflow (numpy warns), and
    what is not a C-ordered float64 array summed over its last axis alone."""
    from deltaad import _arrays

    ax = (x.ndim - 1,)
    with np.errstate(all="ignore"):
        e = np.add.reduce(x, ax, None, None, keepdims)
    r = _arrays.sum_rows(x, ax, keepdims)
    if np.isinf(e).any() and np.isfinite(x).all():
        assert r is None
    else:
        assert r is not None and r.shape == e.shape and r.tobytes() == e.tobytes()
    if x.shape[-1] > 2:
        assert _arrays.sum_rows(x[..., ::2], ax, keepdims) is None  # (a strided view)
    assert _arrays.sum_rows(x.astype(np.float32), ax, keepdims) is None
    assert _arrays.sum_rows(x, (0,), keepdims) is None
    assert _arrays.sum_rows(x.ravel(), (0,), keepdims) is None


@compiled
def test_sum_rows_installed_only_where_numpy_sums_alike(monkeypatch):
    """The fast path checks at install that its row sums add as this numpy does; a loop
    that adds in another order (here: the row reversed) would not be installed."""
    assert fast._sums_as_numpy()

    class Reversed:
        @staticmethod
        def sum_rows(x, axes, keepdims):
            return np.add.reduce(x[..., ::-1], axes)

    monkeypatch.setattr(fast, "_arrays", Reversed)
    assert not fast._sums_as_numpy()


@st.composite
def _reduced(draw):
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    first = draw(st.integers(0, len(shape) - 1))
    last = draw(st.integers(first, len(shape) - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    kind = draw(st.sampled_from(["distinct", "distinct", "ties", "nan", "zeros"]))
    if kind == "distinct":
        x = rng.standard_normal(shape)
    elif kind == "ties":
        x = rng.integers(0, 3, shape).astype(float)
    elif kind == "nan":
        x = rng.standard_normal(shape)
        x.flat[draw(st.integers(0, x.size - 1))] = np.nan
    else:
        x = np.where(rng.random(shape) < 0.5, 0.0, -0.0)
    return x, tuple(range(first, last + 1)), draw(st.booleans()), draw(st.booleans())


@compiled
@settings(max_examples=300)
@given(_reduced())
def test_extremum_weights_are_the_python_rules(c):
    """``_arrays.extremum_weights``: where every slice has exactly one extremum (and none is
    nan), ``(x == m)`` as float64, the Python rule's weights to the bit; None where a slice
    has ties (also 0.0 against -0.0) or a nan extremum, where the axes are not consecutive,
    and for float32."""
    from deltaad import _arrays

    x, axes, keepdims, is_max = c
    m = (np.max if is_max else np.min)(x, axis=axes, keepdims=keepdims)
    mk = np.asarray(m).reshape([1 if k in axes else n for k, n in enumerate(x.shape)])
    mask = x == mk
    one = np.all(np.sum(mask, axis=axes) == 1)
    w = _arrays.extremum_weights(x, np.asarray(m), axes)
    if one:
        assert w is not None and w.tobytes() == mask.astype(float).tobytes()
    else:
        assert w is None
    assert _arrays.extremum_weights(x.astype(np.float32), np.asarray(m, np.float32), axes) is None
    if x.ndim >= 3:
        assert _arrays.extremum_weights(x, np.max(x, axis=(0, 2)), (0, 2)) is None


def _max_program(x):
    """max/min over one axis, two and all of them."""
    y = x - np.max(x, axis=1, keepdims=True) + np.min(x, axis=0) + np.max(x)
    z = np.max(x * x, axis=1) + np.min(x[:, :, None] * x[:, None, :], axis=(1, 2))
    return np.sum(np.exp(y) * 1.5) + np.sum(z * z)


@compiled
def test_extremum_weights_in_a_gradient():
    """A program of max/min: gradients and jvps bit for bit with the fast path on and off,
    with ties (a repeated column and row: the cotangent split among them) and without, and
    against finite differences without ties."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((6, 5))
    tied = x.copy()
    tied[:, 3] = tied[:, 1]
    tied[5] = tied[2]

    def run(x):
        out, pb = d.vjp(_max_program, x)
        _, t = d.jvp(_max_program, (x,), (np.ones_like(x),))
        return [np.asarray(a).tobytes() for a in (out, *pb(np.ones(())), t)]

    for v in (x, tied):
        assert run(v) == _switched(False, run, v)
    check_first_order(_max_program, [x], seed=12, rtol=2e-4, atol=2e-5)


_MATRIX = np.random.default_rng(17).standard_normal((100, 100)) / 10.0
_SHAPE_ONLY = {  # operations whose rules keep no output and no operand they do not read
    "add": lambda x, y, c: x + y, "sub": lambda x, y, c: x - y, "neg": lambda x, y, c: -x,
    "scale": lambda x, y, c: x * 2.0, "rscale": lambda x, y, c: 3.0 * x,
    "const": lambda x, y, c: x * c, "rconst": lambda x, y, c: c * x,
    "mul": lambda x, y, c: x * y, "square": lambda x, y, c: x * x,
    "sin": lambda x, y, c: np.sin(x), "cos": lambda x, y, c: np.cos(x),
    "matvec": lambda x, y, c: x @ _MATRIX, "rmatvec": lambda x, y, c: _MATRIX @ x,
    "slice": lambda x, y, c: x[::-1], "concat": lambda x, y, c: np.concatenate([x[:40], y[40:]]),
    "maximum": lambda x, y, c: np.maximum(x, 0.0), "minimum": lambda x, y, c: np.minimum(0.5, y),
    "sum": lambda x, y, c: np.sum((x * y).reshape(1, 100), axis=0),
    "reshape": lambda x, y, c: x.reshape(4, 25), "ravel": lambda x, y, c: y.reshape(4, 25).ravel(),
    "transpose": lambda x, y, c: x.reshape(4, 25).T,
}


@compiled
@pytest.mark.parametrize("op", sorted(_SHAPE_ONLY))
def test_rules_that_read_shapes_only_keep_no_output(op):
    """The rules of + - * negation sin cos, of a product by a constant matrix, of a slice, a
    concatenation and a maximum with a bound keep neither their output nor an operand they do
    not read (a shared array of the shape stands in): the output goes when the program drops
    it. Their Python rules (nested differentiation) still give the Python path's bits."""
    import weakref

    rng = np.random.default_rng(13)
    c = rng.standard_normal(100)
    f = _SHAPE_ONLY[op]
    gone = []

    def g(x, y):
        r = f(x, y, c)
        ref = weakref.ref(r.value)  # (100 entries: not a pooled small array)
        out = np.sum(r + 1.0)  # (+ keeps neither: the sum's rule keeps a shape)
        del r
        gone.append(ref() is None)
        return out

    x, y = rng.standard_normal(100), rng.standard_normal(100)
    d.grad(g, argnums=(0, 1))(x, y)
    assert gone == [True]

    def h(x, y):
        v = f(x, y, c)
        return np.sum(np.sin(v if v.shape == x.shape else v.reshape(x.shape)) * x)

    def run(x, y):
        hv = d.grad(lambda x, y: np.sum(d.grad(h, argnums=(0, 1))(x, y)[0] * c), argnums=(0, 1))
        return [a.tobytes() for a in (*d.grad(h, argnums=(0, 1))(x, y), *hv(x, y))]

    assert run(x, y) == _switched(False, run, x, y)


def _short_rows_program(x, means, q):
    """GMM's shape: (k, n, d) arrays from (n, d) points and (k, d) parameters along rows of d."""
    xc = x[None, :, :] - means[:, None, :]
    y = np.exp(q)[:, None, :] * xc + xc / (2.0 + q * q)[:, None, :]
    z = y / np.sum(y * y, axis=2, keepdims=True) ** 0.5 - xc * y[:, :1, :]
    return np.sum(z * z) + np.sum(xc * means[:, None, :])


@compiled
def test_broadcast_loop_in_a_gradient():
    """A program of broadcasts along short rows (forward through the general lane, backward
    through the rules' products and quotients): values, gradients and jvps bit for bit with
    the fast path on and off, and the gradient against finite differences; an overflow in a
    broadcast product or a sum over the last axis warns as numpy does."""
    rng = np.random.default_rng(11)
    xs = (rng.standard_normal((7, 3)), rng.standard_normal((4, 3)),
          0.3 * rng.standard_normal((4, 3)))

    def run(*xs):
        out, pb = d.vjp(_short_rows_program, *xs)
        g = pb(np.ones(()))
        _, t = d.jvp(_short_rows_program, xs, tuple(np.ones_like(x) for x in xs))
        return [np.asarray(a).tobytes() for a in (out, *g, t)]

    assert run(*xs) == _switched(False, run, *xs)
    check_first_order(_short_rows_program, list(xs), seed=11, rtol=2e-4, atol=2e-5)

    def big(x):
        return np.sum(x[:, None, :] * np.full((1, 2, 3), 1e300))

    for flag in (True, False):
        with pytest.warns(RuntimeWarning, match="overflow"):
            g = _switched(flag, d.grad(big), np.full((2, 3), 1e300))
        assert np.all(g == 2e300)
        with pytest.warns(RuntimeWarning, match="overflow"):
            v = _switched(flag, d.grad(lambda x: np.sum(np.sum(x, axis=1))), np.full((2, 3), 1e308))
        assert np.all(v == 1.0)


@compiled
@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3), (70,)])
def test_scalar_dual_meets_array_dual_in_the_loops(shape):
    """``x + t``, ``t - x``, ``x * t``, ``t / x``... with ``t`` a scalar dual are recorded by
    the loops, ``t``'s cotangent the float the Python path makes (numpy's sum over every axis;
    for ``x - t`` the negated sum, whose zero keeps its sign): values, gradients, jvps and
    hessians bit for bit against the Python path, and against finite differences."""
    rng = np.random.default_rng(len(shape) + 7)
    x = rng.uniform(0.5, 1.5, shape)

    def f(x, t):
        y = x + t
        y = (t - y) * t + x / t
        y = t / (y * y + 1.0) - y * t
        return np.sum(np.sin(y) * x) + np.sum(x - t)  # (x - t: a cotangent summing to 0)

    kinds = []

    def probe(x, t):
        y = x * t
        kinds.append(type(y.trace.binding(y.id)[1]).__name__)
        return np.sum(y)

    d.grad(probe, argnums=(0, 1))(x, 0.8)
    assert kinds == ["ArrayRule"]

    def run(f, x, t):
        out, pb = d.vjp(f, x, t)
        g = pb(1.0)
        _, tan = d.jvp(f, (x, t), (np.ones_like(x), 0.5))
        h = d.hessian(lambda t: f(x, t))(t)
        return [np.asarray(a).tobytes() for a in (out, *g, tan, h)]

    assert run(f, x, 0.8) == _switched(False, run, f, x, 0.8)
    check_first_order(f, [x, 0.8], seed=3, rtol=1e-5, atol=1e-7)
    assert d.grad(lambda x, t: np.sum(x - t), argnums=(0, 1))(x, 0.8)[1] == -float(x.size)
    if len(shape) == 1 and shape[0] > 1:  # ct = (1, -1, 0...): its sum 0.0, negated -0.0
        w = np.zeros(shape)
        w[:2] = (1.0, -1.0)
        g = d.grad(lambda x, t: np.sum((x - t) * w), argnums=(0, 1))(x, 0.8)[1]
        assert g == 0.0 and math.copysign(1.0, g) == -1.0


@compiled
def test_scalar_dual_loops_leave_overflow_to_the_python_path():
    """A backward loop that overflows sends the scalar-dual binding to the Python rule, which
    warns as numpy does (the float cotangent then comes from the same sum)."""
    x = np.array([1e300, 2e300])

    def f(x, t):
        return np.sum(x * t) * 1e10

    with pytest.warns(RuntimeWarning, match="overflow"):
        g = d.grad(f, argnums=(0, 1))(x, 2.0)
    with pytest.warns(RuntimeWarning, match="overflow"):
        want = _switched(False, d.grad(f, argnums=(0, 1)), x, 2.0)
    assert [np.asarray(a).tobytes() for a in g] == [np.asarray(a).tobytes() for a in want]


@compiled
@given(st.lists(st.integers(1, 3), min_size=0, max_size=3), st.lists(st.integers(1, 3), max_size=2),
       st.data())
def test_broadcast_view_is_the_python_constructors(gshape, extra, data):
    """The compiled ``broadcast_view`` makes the view ``array.broadcast_to`` makes in Python:
    shape, strides, every flag, entries, and a base holding ``g``'s memory."""
    from deltaad.numpy import array

    g = np.arange(1.0, 1.0 + int(np.prod(gshape))).reshape(gshape)
    shape = tuple(extra) + tuple(data.draw(st.sampled_from([n, n + 1])) if n == 1 else n
                                 for n in gshape)
    strides = array._broadcast_strides(g.shape, g.strides, shape)
    fast_view = array.BROADCAST_VIEW(g, shape, strides)
    py = np.ndarray(shape, g.dtype, g, 0, strides)
    py.flags.writeable = False
    assert fast_view.shape == py.shape and fast_view.strides == py.strides
    assert fast_view.flags == py.flags
    assert fast_view.base is g or fast_view.base is g.base  # (numpy's C API: the owner)
    assert np.array_equal(fast_view, py) and np.array_equal(fast_view, np.broadcast_to(g, shape))


@compiled
@pytest.mark.parametrize("shape", [(1,), (3,), (2, 3), (70,)])
def test_zero_d_array_dual_meets_array_dual_in_the_loops(shape):
    """``x - x.max()``, ``x / x.sum()``, ``m * x``...: a 0-d array dual beside an array dual
    of more dimensions is the loops' scalar operand, its cotangent numpy's sum (numpy's scalar,
    as the Python rule's ``unbroadcast`` gives it; for ``x - m`` negated after the sum): values,
    gradients, jvps and hessian-vector products bit for bit against the Python path."""
    rng = np.random.default_rng(len(shape) + 11)
    x = rng.uniform(0.5, 1.5, shape)

    def f(x):
        m = np.max(x)
        y = x - m
        y = y / np.sum(x) + np.mean(y) * y
        y = np.sum(x * x) / (1.0 + y * y) - (m - y)
        return np.sum(np.sin(y) * x)

    kinds = []

    def probe(x):
        y = x - np.sum(x)
        kinds.append(type(y.trace.binding(y.id)[1]).__name__)
        return np.sum(y * y)

    d.grad(probe)(x)
    assert kinds == ["ArrayRule"]

    def run(f, x):
        out, pb = d.vjp(f, x)
        g = pb(np.ones(()))
        _, t = d.jvp(f, (x,), (np.ones_like(x),))
        hv = d.jvp(d.grad(f), (x,), (np.ones_like(x),))[1]
        return [np.asarray(a).tobytes() for a in (out, *g, t, hv)]

    assert run(f, x) == _switched(False, run, f, x)
    if x.size <= 6:  # (70 entries make sum(x * x) large and sin(y) too curvy for the check)
        check_first_order(f, [x], seed=4, rtol=1e-5, atol=1e-7)
    if len(shape) == 1 and shape[0] > 1:  # x - m with a cotangent (1, -1, 0...): -(0.0)
        w = np.zeros(shape)
        w[:2] = (1.0, -1.0)
        m0 = np.array(0.25)
        g = d.grad(lambda x, m: np.sum((x - m) * w), argnums=(0, 1))(x, m0)[1]
        assert g.shape == () and g == 0.0 and math.copysign(1.0, g) == -1.0


@compiled
def test_matrix_changed_in_place_between_products():
    """``x @ K`` after ``K``'s shape changed in place swaps the matrix as it now is (the
    swapped view kept from the last product is checked against the matrix)."""
    K = np.arange(1.0, 7.0).reshape(2, 3) / 7.0

    def f(x):
        return np.sum(np.sin(x @ K) * x[0])

    def run(x):
        v, g = d.value_and_grad(f)(x)
        return [np.asarray(a).tobytes() for a in (v, g)]

    for shape, x in (((2, 3), np.array([0.4, -1.2])), ((3, 2), np.array([0.4, -1.2, 0.7])),
                     ((2, 3), np.array([-0.3, 0.9]))):
        K.shape = shape
        assert run(x) == _switched(False, run, x)
        check_first_order(f, [x], seed=3)


@compiled
def test_swapped_matrix_let_go_on_release_memory():
    """The swapped view of the matrix last multiplied (one for every product by it) keeps a
    small matrix alive until ``release_memory``."""
    import gc
    import weakref

    from deltaad import _core

    K = np.array([[1.0, 2.0], [3.0, 4.0]])
    ref = weakref.ref(K)
    g = d.grad(lambda x: np.sum(x @ K))(np.ones(2))
    assert np.array_equal(g, [3.0, 7.0])
    del K
    _core.release_memory()
    gc.collect()
    assert ref() is None


_REDUCERS = {"sum": np.sum, "max": np.max, "min": np.min, "amax": np.amax, "amin": np.amin,
             "mean": np.mean, "x.mean": lambda x, *a, **kw: x.mean(*a, **kw),
             "x.sum": lambda x, *a, **kw: x.sum(*a, **kw),
             "x.max": lambda x, *a, **kw: x.max(*a, **kw),
             "x.min": lambda x, *a, **kw: x.min(*a, **kw)}


@st.composite
def _reduction_calls(draw):
    """A reduction the fast path takes or leaves to the Python path: np.sum / mean / max / min /
    amax / amin and the methods x.sum / mean / max / min, the axis by keyword or by position;
    of 0-d to 4-d operands (empty ones too; C-ordered, transposed, sliced); the axis absent,
    None, an int (negative, out of range), a tuple (empty, repeated, consecutive or not);
    keepdims absent, False or True; values distinct, tied, with a nan, signed zeros or an
    infinity."""
    shape = tuple(draw(st.lists(st.integers(0 if draw(st.booleans()) else 1, 4), max_size=4)))
    nd = len(shape)
    axis = draw(st.one_of(
        st.just("absent"), st.none(), st.integers(-nd - 1, nd),
        st.lists(st.integers(-nd, max(nd - 1, 0)), max_size=3).map(tuple)))
    keepdims = draw(st.sampled_from(["absent", False, True]))
    name = draw(st.sampled_from(sorted(_REDUCERS)))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    kind = draw(st.sampled_from(["distinct", "distinct", "ties", "nan", "zeros", "inf"]))
    x = rng.standard_normal(shape)
    if kind == "ties":
        x = rng.integers(0, 2, shape).astype(float)
    elif kind == "zeros":
        x = np.where(rng.random(shape) < 0.5, 0.0, -0.0)
    elif kind in ("nan", "inf") and x.size:
        x[np.unravel_index(int(rng.integers(x.size)), shape)] = np.nan if kind == "nan" else np.inf
    layout = draw(st.sampled_from(["c", "c", "transposed", "sliced"]))
    if layout == "transposed":
        x = np.asarray(x.T)
    elif layout == "sliced" and nd:
        x = np.concatenate([x, x], axis=-1)[..., ::2]
    ct_kind = draw(st.sampled_from(["plain", "plain", "broadcast", "transposed", "inf"]))
    return name, x, axis, keepdims, draw(st.booleans()), ct_kind, int(rng.integers(2**31 - 1))


def _reduce(name, x, axis, keepdims, positional):
    kw = {}
    if keepdims != "absent":
        kw["keepdims"] = keepdims
    if axis == "absent":
        return _REDUCERS[name](x, **kw)
    if positional:
        return _REDUCERS[name](x, axis, **kw)
    return _REDUCERS[name](x, axis=axis, **kw)


def _reduction_results(c):
    """Bits of the value, the rule's kind, and the gradient of a reduction of ``x`` and of
    ``1.5 * x`` (C-ordered), and numpy's error where it raises."""
    import warnings

    name, x, axis, keepdims, positional, ct_kind, seed = c
    rules = []

    def f(x):
        a = _reduce(name, x, axis, keepdims, positional)
        b = _reduce(name, 1.5 * x, axis, keepdims, positional)
        rules.append(type(b.trace.binding(b.id)[1]).__name__)
        return a, b

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out, pb = d.vjp(f, x)
        except Exception as e:  # noqa: BLE001 (the same error either way)
            return [type(e).__name__, str(e)]
        rng = np.random.default_rng(seed)
        cts = []
        for o in out:
            s = np.shape(o)
            ct = rng.standard_normal(s)
            if ct_kind == "broadcast":
                ct = np.broadcast_to(np.float64(rng.standard_normal()), s)
            elif ct_kind == "transposed":
                ct = np.asarray(rng.standard_normal(s[::-1]).T)
            elif ct_kind == "inf" and ct.size:
                ct.flat[0] = np.inf
            cts.append(ct)
        g = pb(tuple(cts))[0]
    return [[np.asarray(o).tobytes() for o in out], g.tobytes(), rules,
            sorted(str(w.message) for w in seen)]


@compiled
@settings(max_examples=400)
@given(_reduction_calls())
def test_reductions_same_bits_as_python_path(c):
    """np.sum, np.mean, np.max, np.min (amax, amin, the methods) of an array dual, by the
    fast path and by the Python path: the same values, gradients, warnings and errors, to the bit, whatever the
    axes, keepdims, layout, ties, nans and cotangents (a broadcast one, a transposed one, one
    whose inf meets a 0.0 weight)."""
    on = _reduction_results(c)
    off = _switched(False, _reduction_results, c)
    if len(on) == 2 or len(off) == 2:  # numpy's error (an axis out of range, an empty max)
        assert on == off, c
    else:  # (the rules recorded differ: see the next test)
        assert on[:2] == off[:2] and on[3] == off[3], c


@compiled
def test_reductions_recorded_by_the_fast_path():
    """The reductions the fast path takes are recorded as its rules (the test above compares
    something): a sum over any axes of any layout, an extremum over consecutive axes of a
    C-ordered operand; an extremum over axes apart and one of a transposed operand are the
    Python path's."""
    x = np.random.default_rng(5).standard_normal((3, 4, 5))
    kinds = {}

    def f(x):
        for label, y in (("sum", np.sum(x)), ("sum axis", np.sum(x, axis=1)),
                         ("sum tuple", np.sum(x, axis=(0, 2), keepdims=True)),
                         ("sum transposed", np.sum(x.T, 0)), ("max", np.max(x, axis=-1)),
                         ("amin axes", np.amin(x, axis=(0, 1))), ("max apart", np.max(x, (0, 2))),
                         ("max transposed", np.max(x.T, 0)), ("x.sum", x.sum(0)),
                         ("x.max", x.max(axis=2, keepdims=True)), ("x.min", x.min())):
            kinds[label] = type(y.trace.binding(y.id)[1]).__name__
        for label, y in (("mean", np.mean(x, axis=(1, 2))), ("x.mean", x.mean(0))):
            (s,), _ = y.trace.binding(y.id)  # (the sum divided by the count)
            kinds[label] = type(y.trace.binding(s)[1]).__name__
        return np.sum(x)

    d.grad(f)(x)
    assert kinds == {"sum": "ArrayRule", "sum axis": "ArrayRule", "sum tuple": "ArrayRule",
                     "sum transposed": "ArrayRule", "max": "ArrayRule",
                     "amin axes": "ArrayRule", "max apart": "function",
                     "max transposed": "function", "x.sum": "ArrayRule", "x.max": "ArrayRule",
                     "x.min": "ArrayRule", "mean": "ArrayRule", "x.mean": "ArrayRule"}, kinds


@st.composite
def _view_calls(draw):
    """``x.reshape`` (a shape as ints, one int, a tuple, -1 inferred, a wrong size), ``x.ravel()``,
    ``np.reshape(x, shape)`` and ``x.T`` of 0-d to 4-d operands, C-ordered, transposed or
    sliced."""
    shape = tuple(draw(st.lists(st.integers(1, 4), max_size=4)))
    size = int(np.prod(shape))
    x = np.random.default_rng(draw(st.integers(0, 2**31 - 1))).standard_normal(shape)
    layout = draw(st.sampled_from(["c", "c", "transposed", "sliced"]))
    if layout == "transposed":
        x = np.asarray(x.T)
    elif layout == "sliced" and shape:
        x = np.concatenate([x, x], axis=-1)[..., ::2]
    new = list(draw(st.permutations([n for n in shape if n > 1] + [1] * draw(st.integers(0, 2)))))
    if new and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    if draw(st.integers(0, 9)) == 0:
        new.append(size + 1)  # numpy's error
    how = draw(st.sampled_from(["args", "tuple", "np.reshape", "ravel", "T"]))
    return x, tuple(new), how


def _view_results(c):
    x, new, how = c

    def f(x):
        y = 1.5 * x
        if how == "args":
            v = y.reshape(*new) if new else y.reshape(())
        elif how == "tuple":
            v = y.reshape(new)
        elif how == "np.reshape":
            v = np.reshape(y, new)
        elif how == "ravel":
            v = y.ravel()
        else:
            v = y.T
        return np.sin(v) * v, x.reshape(new) if how != "T" else x.T

    try:
        out, pb = d.vjp(f, x)
    except Exception as e:  # noqa: BLE001 (the same error either way)
        return [type(e).__name__, str(e)]
    rng = np.random.default_rng(1)
    cts = tuple(rng.standard_normal(np.shape(o)) for o in out)
    return [[np.asarray(o).tobytes() for o in out], [np.shape(o) for o in out],
            pb(cts)[0].tobytes()]


@compiled
@settings(max_examples=300)
@given(_view_calls())
def test_views_same_bits_as_python_path(c):
    """``reshape``, ``ravel``, ``np.reshape`` and ``.T`` of an array dual by the fast path and
    by the Python path: the same values, shapes, gradients and errors."""
    assert _view_results(c) == _switched(False, _view_results, c)


@compiled
def test_views_recorded_by_the_fast_path():
    """The views the fast path takes are its rules; a reshape by a list and a transpose of a
    vector are the Python path's (the latter records nothing: the vector itself)."""
    x = np.arange(1.0, 7.0)
    kinds = {}

    def f(x):
        m = x.reshape(2, 3)
        for label, y in (("reshape", m), ("tuple", x.reshape((3, 2))),
                         ("np", np.reshape(x, (6, 1))), ("ravel", m.ravel()), ("T", m.T),
                         ("list", x.reshape([2, 3]))):
            kinds[label] = type(y.trace.binding(y.id)[1]).__name__
        assert x.T is x
        return np.sum(m.T)

    g = d.grad(f)(x)
    assert g.tobytes() == np.ones(6).tobytes()
    assert kinds == {"reshape": "ArrayRule", "tuple": "ArrayRule", "np": "ArrayRule",
                     "ravel": "ArrayRule", "T": "ArrayRule", "list": "function"}, kinds
