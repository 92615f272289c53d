"""``import math`` code differentiates unchanged (``deltaad.stdmath``): while a differentiation
is open, ``math.f`` is ``deltaad.math.f``; outside it the module is untouched."""

import cmath
import math
import threading
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad
from deltaad import math as dmath

UNARY = ["sin", "cos", "tan", "exp", "expm1", "log1p", "atan", "asinh", "sinh", "cosh", "tanh",
         "erf", "erfc", "sqrt", "log", "log2", "log10", "fabs", "lgamma", "cbrt"]
UNARY = [n for n in UNARY if hasattr(math, n)]
BINARY = ["atan2", "hypot", "pow", "copysign", "fmod"]


def _plain_module():
    return type(math) is types.ModuleType and type(cmath) is types.ModuleType


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(UNARY), x=st.floats(0.1, 3.0))
def test_unary_functions_differentiate_as_deltaad_math(name, x):
    """``math.name`` inside ``grad``/``jvp`` is ``deltaad.math.name`` to the bit, and its
    derivative agrees with finite differences."""
    f = lambda v: getattr(math, name)(v) * v  # noqa: E731 -- math looked up at call time
    g = lambda v: getattr(dmath, name)(v) * v  # noqa: E731
    assert deltaad.grad(f)(x) == deltaad.grad(g)(x)
    assert deltaad.jvp(f, (x,), (1.0,)) == deltaad.jvp(g, (x,), (1.0,))
    h = 1e-6
    fd = (f(x + h) - f(x - h)) / (2 * h)
    assert abs(deltaad.grad(f)(x) - fd) <= 1e-5 * max(1.0, abs(fd))
    assert _plain_module()


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(BINARY), x=st.floats(0.5, 2.0), y=st.floats(0.5, 2.0))
def test_binary_functions_and_second_derivatives(name, x, y):
    f = lambda a, b: getattr(math, name)(a, b)  # noqa: E731
    g = lambda a, b: getattr(dmath, name)(a, b)  # noqa: E731
    assert deltaad.grad(f, argnums=(0, 1))(x, y) == deltaad.grad(g, argnums=(0, 1))(x, y)
    assert deltaad.hessian(f)(x, y) == deltaad.hessian(g)(x, y)


def test_physics_code_written_against_math():
    """A pendulum integrated with ``math.sin`` in a ``while`` loop: the gradient of the final
    angle with respect to the initial one, against finite differences and forward mode."""
    def pendulum(theta0):
        th, om, t = theta0, 0.0, 0.0
        while t < 1.0:
            om -= 9.81 * math.sin(th) * 0.01
            th += om * 0.01
            t += 0.01
        return math.atan2(math.sin(th), math.cos(th)) + math.fsum([th, om]) + math.hypot(th, om)

    g = deltaad.grad(pendulum)(0.3)
    h = 1e-6
    assert abs(g - (pendulum(0.3 + h) - pendulum(0.3 - h)) / (2 * h)) < 1e-6
    assert deltaad.jvp(pendulum, (0.3,), (1.0,))[1] == pytest.approx(g, rel=1e-12)
    assert _plain_module()


def test_plain_numbers_keep_math_results_and_errors_during_a_trace():
    seen = []

    def f(x):
        assert type(math) is not types.ModuleType  # switched while the trace is open
        seen.append((math.sin(0.5), math.sqrt(2.0), math.floor(2.5), math.pi))
        with pytest.raises(ValueError):
            math.sqrt(-1.0)
        with pytest.raises(ValueError):
            math.log(0.0)
        with pytest.raises(TypeError):
            math.sin("a")
        return x * 2.0

    assert deltaad.grad(f)(1.0) == 2.0
    sin = math.sin  # the module's own functions again
    assert seen == [(sin(0.5), math.sqrt(2.0), 2, math.pi)]
    assert type(seen[0][2]) is int and _plain_module()
    assert math.sin is vars(math)["sin"]


def test_switched_back_however_the_differentiation_ends():
    def boom(x):
        math.sin(x)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        deltaad.grad(boom)(1.0)
    assert _plain_module()

    def interrupted(x):
        math.exp(x)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        deltaad.grad(interrupted)(1.0)
    assert _plain_module() and deltaad.open_traces() == []


def test_setting_or_deleting_a_math_name_while_switched_changes_the_module_itself():
    """The switched class's functions are properties: a monkeypatch made inside the
    differentiated function lands in ``math``'s own namespace (seen once switched back), and
    the look-up keeps giving deltaad's function meanwhile."""
    orig = math.hypot

    def patch(x):
        math.hypot = lambda *a: 0.0
        assert math.hypot is dmath.hypot and type(math) is not types.ModuleType
        del math.hypot
        math.hypot = orig
        return math.sin(x) * x

    g = deltaad.grad(patch)(0.7)
    assert g == math.cos(0.7) * 0.7 + math.sin(0.7)
    assert _plain_module() and math.hypot is orig and "hypot" in vars(math)

    def patch_only(x):
        math.hypot = len
        return x * 1.0

    try:
        deltaad.grad(patch_only)(0.7)
        assert math.hypot is len
    finally:
        math.hypot = orig


def test_nested_and_later_sweeps():
    assert deltaad.grad(deltaad.grad(lambda x: math.sin(x)))(0.7) == -math.sin(0.7)
    # a checkpoint's re-run happens when the vjp function is called, after vjp returned
    out, f_vjp = deltaad.vjp(lambda x: deltaad.checkpoint(lambda y: math.sin(y) * y)(x), 1.0)
    assert _plain_module()
    assert f_vjp(1.0) == (math.cos(1.0) * 1.0 + math.sin(1.0),)
    assert _plain_module()


def test_cmath_too():
    g = deltaad.grad(lambda x: cmath.exp(1j * x).real)(0.4)
    assert g == pytest.approx(-math.sin(0.4), rel=1e-15)
    assert _plain_module()


def test_from_math_import_still_raises_and_names_the_fix():
    sin = math.sin
    with pytest.raises(TypeError, match="from deltaad.math import sin"):
        deltaad.grad(lambda x: sin(x))(1.0)
    assert _plain_module()


def test_enable_false_leaves_the_module_alone():
    deltaad.stdmath.enable(False)
    try:
        def f(x):
            assert type(math) is types.ModuleType
            return math.sin(x)

        with pytest.raises(TypeError, match="from deltaad import math"):
            deltaad.grad(f)(1.0)
    finally:
        deltaad.stdmath.enable(True)
    assert deltaad.grad(lambda x: math.sin(x))(1.0) == math.cos(1.0)


def test_threads():
    """Eight threads differentiate ``math`` code at once while a ninth uses ``math`` on plain
    floats: every result is the serial one, and the module is plain once all are done."""
    xs = [0.1 * k for k in range(1, 9)]
    f = lambda x: math.exp(math.sin(x)) * math.atan2(x, 1.0)  # noqa: E731
    want = [deltaad.grad(f)(x) for x in xs]
    got = [None] * len(xs)
    plain = []
    barrier = threading.Barrier(len(xs) + 1)

    def work(k):
        barrier.wait()
        for _ in range(30):
            got[k] = deltaad.grad(f)(xs[k])

    def floats():
        barrier.wait()
        for _ in range(300):
            plain.append(math.sin(0.3) == vars(math)["sin"](0.3))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(xs))]
    threads.append(threading.Thread(target=floats))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want and all(plain)
    assert _plain_module()


def test_compile_records_math_calls():
    """Under ``deltaad.compile`` ``math.sin`` is a recorded instruction, not a guard on the
    value: new inputs replay the one recording, bit for bit."""
    def f(x):
        y = math.sin(x) * math.log(x) + math.atan2(x, 2.0)
        return y if not math.isnan(y) and math.isfinite(y) else 0.0

    cf = deltaad.compile(f)
    for x in (1.0, 2.0, 1.5, 0.25):
        assert cf(x) == f(x)
    assert cf.nrecordings == 1
    cg = deltaad.compile(deltaad.value_and_grad(f))
    for x in (2.0, 1.5, 0.25):  # (not 1.0: log(1.0) == 0 steers the sweep's zero test)
        assert cg(x) == deltaad.value_and_grad(f)(x)
    assert cg.nrecordings == 1
    assert _plain_module()


def test_an_entry_left_by_an_interrupt_is_cleared_by_the_next_differentiation():
    """An interrupt between two steps of the switch can leave this thread marked as
    differentiating (the modules stay switched: no result changes); its next differentiation
    clears the mark."""
    deltaad.stdmath._enter()  # what an interrupt at the wrong bytecode leaves behind
    assert not _plain_module()
    assert deltaad.grad(lambda x: math.sin(x))(0.5) == math.cos(0.5)
    assert _plain_module()


def test_a_differentiation_inside_a_recording_keeps_the_switch():
    """``deltaad.compile`` records with the modules switched; a ``grad`` inside the recorded
    function closes its trace before the function goes on calling ``math``."""
    def f(x):
        g = deltaad.grad(lambda y: math.sin(y) * y)(x)
        return math.exp(g) + math.cos(x)

    cf = deltaad.compile(f)
    for x in (0.5, 0.75, 1.25):
        assert cf(x) == f(x)
    assert cf.nrecordings == 1 and _plain_module()


@settings(max_examples=30, deadline=None)
@given(a=st.floats(1.5, 3.0), b=st.floats(-0.5, 0.5))
def test_numpy_linalg_takes_object_arrays_of_duals(a, b):
    """A matrix built from scalar duals with ``np.array`` (an object array) goes into
    ``np.linalg`` as the array of those duals: the value of ``deltaad.asarray`` of it to the
    bit, its derivatives up to the order of summation (each call packs the array afresh), and
    agreeing with finite differences and forward mode."""
    import numpy as np

    def f(x, y, pack):
        m = np.array([[x, y], [y, x * x]])
        m = deltaad.asarray(m) if pack else m
        s = np.linalg.det(m) + np.linalg.solve(m, np.array([1.0, 2.0])).sum()
        s = s + np.linalg.inv(m)[0, 1] + np.linalg.eigvalsh(m)[1] + np.linalg.norm(m)
        return s + np.linalg.cholesky(m)[1, 1] + np.linalg.slogdet(m)[1]

    g = deltaad.grad(f, argnums=(0, 1))(a, b, False)
    assert g == pytest.approx(deltaad.grad(f, argnums=(0, 1))(a, b, True), rel=1e-13)
    assert deltaad.value_and_grad(f)(a, b, False)[0] == f(a, b, True) == f(a, b, False)
    h = 1e-6
    fd = (f(a + h, b, False) - f(a - h, b, False)) / (2 * h)
    assert abs(g[0] - fd) <= 1e-5 * max(1.0, abs(fd))
    assert deltaad.jvp(lambda x: f(x, b, False), (a,), (1.0,))[1] == pytest.approx(g[0], rel=1e-10)
    assert _plain_module() and type(np.linalg) is types.ModuleType


def test_numpy_linalg_outside_differentiation_is_numpy():
    import numpy as np
    with pytest.raises(TypeError):  # numpy's own refusal of an object array, unchanged
        np.linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]], dtype=object))
    assert np.linalg.det is vars(np.linalg)["det"]


_CONVERTERS = ["array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"]


@settings(max_examples=60, deadline=None)
@given(conv=st.sampled_from(_CONVERTERS),
       dtype=st.sampled_from([float, "float64", "f8", "double", complex]),
       form=st.sampled_from(["array dual", "list", "nested list", "object array", "tuple"]),
       seed=st.integers(0, 2**16))
def test_numpy_constructors_take_duals_with_a_float_dtype(conv, dtype, form, seed):
    """Library code's first line, ``x = np.asarray(x, dtype=float)``, keeps the derivative
    while deltaad differentiates: the array dual ``deltaad.asarray`` would give, so values and
    gradients are those of the same code without the dtype to the bit, and agree with finite
    differences and forward mode. numpy's own converter raised, to not drop the derivative."""
    import numpy as np
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-2.0, 2.0, 6)
    w = rng.uniform(-1.0, 1.0, 6)

    def shaped(x):
        if form == "array dual":
            return x
        items = [x[i] for i in range(6)]
        if form == "nested list":
            return [items[:3], items[3:]]
        if form == "object array":
            return np.array(items, dtype=object)
        return tuple(items) if form == "tuple" else items

    def f(x, convert):
        a = getattr(np, conv)(shaped(x), dtype=dtype) if convert else deltaad.asarray(shaped(x))
        return np.sum(np.real(np.sin(a)).ravel() * w)

    g = deltaad.grad(f)(x0, True)
    assert np.array_equal(g, deltaad.grad(f)(x0, False))
    assert deltaad.value_and_grad(f)(x0, True)[0] == f(x0, False)
    t = rng.uniform(-1.0, 1.0, 6)
    assert deltaad.jvp(lambda x: f(x, True), (x0,), (t,))[1] == pytest.approx(g @ t, rel=1e-12, abs=1e-12)
    h = 1e-6
    fd = [(f(x0 + h * e, False) - f(x0 - h * e, False)) / (2 * h) for e in np.eye(6)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    assert _plain_module() and type(np) is types.ModuleType


def test_numpy_constructors_keep_numpy_behaviour_otherwise():
    """Plain arguments, ``ndmin``, other dtypes and errors are numpy's inside a
    differentiation; a name bound beforehand and numpy outside differentiation are untouched;
    complex to float still refuses to drop the imaginary part."""
    import numpy as np
    bound = vars(np)["asarray"]
    seen = {}

    def f(x):
        seen["inside"] = np.asarray
        plain = np.asarray([1, 2], dtype=float)
        assert type(plain) is np.ndarray and plain.tolist() == [1.0, 2.0]
        with pytest.raises(ValueError, match="could not convert"):
            np.asarray(["a"], dtype=float)
        with pytest.raises(TypeError, match="drop"):
            bound(x, dtype=float)  # numpy's own, bound before
        assert np.array([x[0], x[1]], dtype=float, ndmin=3).shape == (1, 1, 2)
        assert np.asarray(x, dtype=np.float32).dtype == np.float32
        assert np.asarray(x, dtype=int).tolist() == [1, -2]  # piecewise constant: plain
        return np.sum(np.array([x[0], 2.0 * x[1]], dtype=float) ** 2)

    assert deltaad.grad(f)(np.array([1.5, -2.5])).tolist() == [3.0, -20.0]
    assert seen["inside"] is not bound and seen["inside"].__wrapped__ is bound
    assert np.asarray is bound and type(np) is types.ModuleType
    with pytest.raises(TypeError):
        deltaad.grad(lambda z: np.sum(np.abs(np.array(z, dtype=float))))(1j + 1.0)
    assert deltaad.grad(lambda z: np.sum(np.abs(np.asarray(z, dtype=complex))))(3.0 + 4.0j) == pytest.approx(0.6 - 0.8j)
