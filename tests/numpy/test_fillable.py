"""Arrays made with numpy's float constructors and filled by assignment differentiate
unchanged (``y = np.zeros(n); y[i] = x * k``): the fillable array of deltaad.numpy.fillable.
Each program is checked against finite differences, reverse against forward, the value
against the plain call to the bit, on both backends; and where it must not apply (outside
differentiation, library code, another thread, other dtypes) numpy's arrays are numpy's."""

import os
import sysconfig
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from deltaad.numpy.fillable import Fillable


def fd_grad(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros(x.shape)
    for i in range(x.size):
        e = np.zeros(x.shape)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def check(f, x, rtol=1e-5, atol=1e-7):
    """grad against finite differences and against jvp along each axis; the value to the bit."""
    x = np.asarray(x, dtype=float)
    v, g = d.value_and_grad(f)(x)
    assert np.asarray(v).tobytes() == np.asarray(f(x)).tobytes()
    np.testing.assert_allclose(g, fd_grad(f, x), rtol=rtol, atol=atol)
    for i in range(x.size):
        e = np.zeros(x.shape)
        e.flat[i] = 1.0
        t = d.jvp(f, (x,), (e,))[1]
        np.testing.assert_allclose(t, g.flat[i], rtol=1e-12, atol=1e-14)
    return g


def euler_decay(p):
    """A simulation stored step by step: the idiom this module exists for."""
    k, x0 = p[0], p[1]
    n = 20
    x = np.zeros(n)
    x[0] = x0
    for i in range(1, n):
        x[i] = x[i - 1] - 0.1 * k * x[i - 1] ** 2
    return x.sum() + x[-1] * x[3]


def test_a_simulation_filled_step_by_step():
    check(euler_decay, [0.7, 1.3])


def test_the_array_holds_duals_while_differentiating_and_is_numpy_s_outside():
    seen = []

    def f(x):
        y = np.zeros(3)
        seen.append((type(y), y.dtype, [type(e) for e in y]))
        y[1] = x * 2.0
        seen.append([type(e).__name__ for e in y])
        return y[1] + y[0]

    assert d.grad(f)(1.5) == 2.0
    assert seen[0] == (Fillable, np.dtype(object), [float, float, float])
    assert seen[1] == ["float", "Dual", "float"]
    z = np.zeros(3)
    assert type(z) is np.ndarray and z.dtype == np.float64


def rhs(y):
    """An ODE right-hand side as scipy users write it."""
    dy = np.zeros_like(y)
    dy[0] = y[1]
    dy[1] = -np.sin(y[0]) - 0.1 * y[1]
    dy[2] = y[0] * y[1]
    return dy


@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3))
def test_a_right_hand_side_filled_entry_by_entry(y):
    y = np.array(y)
    jr = d.jacrev(rhs)(y)
    jf = d.jacfwd(rhs)(y)
    assert type(jr) is np.ndarray and jr.shape == (3, 3)
    np.testing.assert_allclose(jr, jf, rtol=1e-13, atol=1e-15)
    fd = np.stack([(rhs(y + h) - rhs(y - h)) / 2e-6 for h in np.eye(3) * 1e-6], axis=1)
    np.testing.assert_allclose(jr, fd, rtol=1e-5, atol=1e-7)
    out, _ = d.vjp(rhs, y)
    assert out.tobytes() == rhs(y).tobytes()


def stencil(u):
    """Slices assigned from array duals, read back with numpy operations."""
    out = np.zeros_like(u)
    out[1:-1] = u[2:] - 2.0 * u[1:-1] + u[:-2]
    out[0] = u[0]
    out[-1] += u[-1] * u[0]
    return np.sum(out ** 2) + out.max() + out @ u


def test_slices_of_array_duals():
    rng = np.random.default_rng(0)
    check(stencil, rng.uniform(-1, 1, 7))


def in_place(p):
    a, b = p[0], p[1]
    y = np.ones(4)
    y *= a  # np.multiply(y, a, out=y)
    y[2] += b
    np.add.at(y, [0, 0, 3], b * a)
    z = np.empty(4)
    np.copyto(z, y[::-1])
    w = np.full(3, a)  # a dual fill value
    w.fill(b)
    m = np.zeros((3, 3))
    np.fill_diagonal(m, a)
    m[0, 2] = b
    return np.sum(z * y) + w.sum() * a + np.linalg.det(m + np.eye(3)) + m.dot(w)[0]


def test_in_place_updates():
    check(in_place, [0.8, -1.1])


def reads(p):
    a, b = p[0], p[1]
    y = np.zeros((2, 3))
    y[0] = [a, b, a * b]
    y[1, :] = np.array([1.0, 2.0, 3.0]) * b
    t = y.T.copy()
    r = y.reshape(-1)
    return (np.linalg.norm(y) + t[2, 1] + r[4] + y.mean() + y.astype(float).std()
            + float(np.sum(y.astype(float) > 0)) + np.max(y) * y.min())


def test_reads_views_and_copies():
    check(reads, [0.4, 1.7])


def test_nested_derivatives():
    def f(x):
        y = np.zeros(3)
        for i in range(3):
            y[i] = x ** (i + 1)
        return y @ np.array([1.0, 2.0, 3.0])

    # f = x + 2x^2 + 3x^3: f'' = 4 + 18x
    assert d.hessian(f)(0.5) == pytest.approx(4 + 9.0)
    assert d.grad(d.grad(f))(0.5) == pytest.approx(4 + 9.0)


@given(st.lists(st.sampled_from(["set", "add", "mul", "slice", "neg", "copy"]), min_size=1,
                max_size=8), st.integers(0, 2**31 - 1))
def test_random_fill_programs(ops, seed):
    """Random sequences of stores into a fillable; the gradient against finite differences
    and forward mode, the value against the plain run."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, 4, len(ops)).tolist()
    coef = rng.uniform(-1.5, 1.5, len(ops)).tolist()

    def prog(p):
        y = np.zeros(4)
        for op, i, c in zip(ops, idx, coef):
            if op == "set":
                y[i] = p[i % 2] * c + y[(i + 1) % 4]
            elif op == "add":
                y[i] += p[0] * p[1] * c
            elif op == "mul":
                y *= 1.0 + 0.1 * c * p[1]
            elif op == "slice":
                y[1:3] = y[0:2] * p[0] + c
            elif op == "neg":
                np.negative(y, out=y)
            else:
                y = y.copy()
                y[i] = y[i] * y[(i + 2) % 4] + c
        return np.sum(y * y) + y[1]

    check(prog, rng.uniform(-1, 1, 2), rtol=1e-4, atol=1e-6)


def test_library_code_keeps_numpy_arrays():
    """A function whose code lies in an installed package (scipy's, say) makes numpy's float
    arrays while the user's code differentiates: they go to compiled code."""
    lib = os.path.join(sysconfig.get_paths()["purelib"], "some_package", "work.py")
    ns = {"np": np}
    exec(compile("def make(n):\n    return np.zeros(n), np.empty_like(np.ones(n))\n", lib,
                 "exec"), ns)
    seen = []

    def f(x):
        a, b = ns["make"](3)
        seen.append((type(a), type(b), type(np.zeros(3))))
        return x * 2.0

    d.grad(f)(1.0)
    assert seen == [(np.ndarray, np.ndarray, Fillable)]


def test_another_thread_keeps_numpy_arrays():
    got = []
    go, done = threading.Event(), threading.Event()

    def other():
        go.wait(5)
        got.append(type(np.zeros(2)))
        done.set()

    th = threading.Thread(target=other)
    th.start()

    def f(x):
        go.set()
        done.wait(5)
        return x * 1.0

    d.grad(f)(1.0)
    th.join()
    assert got == [np.ndarray]


def test_other_dtypes_stay_numpy_s_and_refuse_duals():
    def f(x):
        a = np.zeros(2, dtype=int)
        b = np.zeros(2, dtype=np.float32)
        assert type(a) is np.ndarray and type(b) is np.ndarray
        with pytest.raises(TypeError, match="derivative"):
            b[0] = x
        return x * 1.0

    d.grad(f)(1.0)


def test_complex_values_into_a_real_fillable_raise():
    def f(x):
        y = np.zeros(2)
        with pytest.raises(TypeError, match="complex"):
            y[0] = 1j
        with pytest.raises(TypeError, match="complex"):
            y[:] = np.array([1j, 2.0])
        return x * 1.0

    d.grad(f)(1.0)


def test_an_escaped_fillable_raises_when_read():
    kept = []

    def f(x):
        y = np.zeros(2)
        y[0] = x * 3.0
        kept.append(y)
        return y[0]

    assert d.grad(f)(1.0) == 3.0
    with pytest.raises(d.EscapedDualError):
        np.sum(kept[0]) * 2.0


def test_compiled_code_asking_numpy_for_an_array_gets_floats():
    """numpy.random's Cython asks the numpy module for ``np.empty`` and writes doubles into
    it: no Python frame of its own, so the call site decides (it is ``rng.random``, not a
    constructor). A fillable there crashed the interpreter."""
    def f(x):
        r = np.random.default_rng(0).random((3, 2))
        n = np.random.default_rng(0).normal(0.0, 1.0, 4)
        assert type(r) is np.ndarray and r.dtype == np.float64
        assert type(n) is np.ndarray and n.dtype == np.float64
        return x * r.sum() + n.sum()

    r = np.random.default_rng(0).random((3, 2))
    assert d.grad(f)(1.0) == r.sum()


def test_a_dual_asked_first_defers_to_the_fillable():
    """numpy asks the left operand's override first: a scalar dual or array dual meeting a
    fillable (also as ``out=``) hands the call to it."""
    def f(p):
        a, b = p[0], p[1]
        y = np.ones(3)
        np.multiply(a, y, out=y)  # the dual first, the fillable as out
        z = a * np.ones(2)  # Dual.__mul__ gives way to numpy
        w = p * np.zeros(2) + np.full(2, b)  # an array dual first
        return np.sum(y) * z[1] + w @ z + np.dot(p, np.ones(2))

    check(f, [0.6, -0.9])


def test_library_code_converting_with_asarray_gets_the_array_dual():
    """Library code's ``np.asarray(x, dtype=float)`` (scipy's first line) of a fillable gives
    the array dual of its entries (numpy's own would give the object array)."""
    def f(p):
        y = np.zeros(2)
        y[0] = p[0] * p[1]
        y[1] = 2.0
        a = np.asarray(y, dtype=float)
        assert type(a) is d.ArrayDual or not d.open_traces()  # (f also runs plain)
        return np.sum(a * a)

    check(f, [0.5, 1.5])


def test_inner_differentiation_at_a_fillable():
    """A fillable passed to an inner grad (``d.grad(g)(np.ones(2))`` inside a differentiated
    function) is the float array (or array dual) it holds."""
    def outer(x):
        inner = d.grad(lambda y: np.sum(x + y * y))(np.ones(2))
        y = np.zeros(2)
        y[0] = x[0]
        g = d.grad(lambda t: np.sum(t * t))(y)
        return np.sum(x * inner) + g[0]

    np.testing.assert_array_equal(d.grad(outer)(np.array([3.0, 4.0])), [4.0, 2.0])


def test_compile_records_a_filling_function_or_says_why():
    """deltaad.compile of a function that fills an array: replay agrees with the plain call
    (or compile refuses by name); never a silently wrong gradient."""
    f = d.compile(d.value_and_grad(euler_decay))
    x = np.array([0.7, 1.3])
    want = d.value_and_grad(euler_decay)(x)
    for _ in range(3):
        got = f(x)
        assert got[0] == want[0]
        np.testing.assert_array_equal(got[1], want[1])


def test_a_filled_right_hand_side_in_solve_ivp():
    """scipy's solver runs on the plain values of what the right-hand side returns: a fillable
    holding duals (the parameter through the closure) gives its entries' values, and the
    derivative is the Runge-Kutta solve's on duals."""
    integrate = pytest.importorskip("scipy.integrate")

    def end(p):
        k = p[0]

        def rhs(t, y):
            dy = np.zeros_like(y)
            dy[0] = y[1]
            dy[1] = -k * np.sin(y[0])
            return dy

        sol = integrate.solve_ivp(rhs, (0.0, 2.0), [1.0, 0.0], rtol=1e-10, atol=1e-12)
        return sol.y[0, -1]

    def functional(p):
        k = p[0]
        sol = integrate.solve_ivp(lambda t, y: np.array([y[1], -k * np.sin(y[0])]), (0.0, 2.0),
                                  [1.0, 0.0], rtol=1e-10, atol=1e-12)
        return sol.y[0, -1]

    g = check(end, [1.3], rtol=1e-4)
    assert g.tobytes() == d.grad(functional)(np.array([1.3])).tobytes()


def test_constructors_give_numpy_s_values_and_layout():
    """Each constructor's fillable holds numpy's values (its -0.0 too) in numpy's shape and
    memory order; np.full of an array of values is broadcast as numpy's."""
    calls = [lambda: np.zeros((2, 3)), lambda: np.ones(4), lambda: np.full((2, 2), -0.0),
             lambda: np.full((2, 3), [1.0, -0.0, 2.5]), lambda: np.zeros((3, 2), order="F"),
             lambda: np.ones_like(np.eye(3)), lambda: np.full_like(np.ones((2, 2)), 7.5),
             lambda: np.zeros_like(np.ones((2, 3), order="F"))]
    seen = []

    def f(x):
        for c in calls:
            y = c()
            seen.append((type(y), y.shape, y.flags.f_contiguous and not y.flags.c_contiguous,
                         np.array(y.tolist()).tobytes()))
        return x * 1.0

    d.grad(f)(1.0)
    for c, (t, shape, fortran, data) in zip(calls, seen):
        want = c()
        assert t is Fillable and shape == want.shape
        assert fortran == (want.flags.f_contiguous and not want.flags.c_contiguous)
        assert data == np.array(want.tolist()).tobytes()


def test_fillables_handed_to_scipy():
    """scipy validates its arrays with np.asarray_chkfinite, which numpy does not dispatch:
    a fillable given to scipy (with or without duals) reaches it as floats or array duals, not
    as the object array numpy's own conversion would give (scipy refuses those)."""
    linalg = pytest.importorskip("scipy.linalg")

    def f(p):
        b = np.ones(2)  # a fillable of plain numbers
        A = np.array([[2.0, 0.3], [0.3, 1.5]])
        z = linalg.solve(A, b)
        y = np.zeros(2)
        y[0] = p[0]
        y[1] = p[1] * p[0]
        s = linalg.solve(A, y)  # a fillable holding duals
        assert np.asarray_chkfinite(b).dtype == np.float64
        return s.sum() * z.sum() + linalg.norm(y)

    check(f, [0.4, 1.2])


def _filled_step(s, k):
    y = np.zeros(2)
    y[0] = s[0] + 0.1 * s[1]
    y[1] = s[1] - 0.1 * k * s[0] * s[0]
    return y


@pytest.mark.parametrize("how", ["checkpoint", "fori_loop", "while_loop", "plain"])
def test_checkpointed_steps_that_fill_an_array(how):
    """A checkpointed function or loop body returning a filled array: its duals are the
    state's (packed on the first run and on every re-run), so the gradient is the plain
    loop's; before, checkpoint refused the object array and the loops took it for a constant."""
    def sim(p):
        k = p[0]
        s0 = np.array([1.0, 0.0])
        if how == "checkpoint":
            f = d.checkpoint(lambda s: _filled_step(s, k))
            s = s0
            for _ in range(12):
                s = f(s)
            return s[0] + s[1]
        if how == "fori_loop":
            s = d.fori_loop(0, 12, lambda i, s: _filled_step(s, k), s0, checkpoints=3)
            return s[0] + s[1]
        if how == "while_loop":
            s = d.while_loop(lambda s: s[0] > 0.6, lambda s: _filled_step(s, k), s0,
                             checkpoints=2)
            return s[0] + s[1]
        s = s0
        for _ in range(12):
            s = _filled_step(s, k)
        return s[0] + s[1]

    g = check(sim, [0.7])
    if how in ("checkpoint", "fori_loop"):
        plain = np.array([0.7])

        def unrolled(p):
            s = np.array([1.0, 0.0])
            for _ in range(12):
                s = _filled_step(s, p[0])
            return s[0] + s[1]

        np.testing.assert_allclose(g, d.grad(unrolled)(plain), rtol=1e-13)
