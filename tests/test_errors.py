"""Error paths (each with its message checked), escaped duals, cleanup after exceptions,
threads, comparisons and the branch-taken semantics, backend selection, tape lifetime."""

import gc
import json
import math
import os
import subprocess
import sys
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad

grad = deltaad.grad
Dual = deltaad.Dual


# --------------------------------------------------------------------------------------------
# Conversions that would drop the derivative


@pytest.mark.parametrize("conv,start", [
    (float, "float(x) on a deltaad Dual"),
    (complex, "complex(x) on a deltaad Dual"), (math.sin, "conv(x) calls math.sin itself"),
    (math.exp, "conv(x) calls math.exp itself"),
    (math.sqrt, "conv(x) calls math.sqrt itself"), (math.log, "conv(x) calls math.log itself"),
])
def test_conversions_raise_type_error(conv, start):
    def f(x):
        conv(x)
        return x

    with pytest.raises(TypeError, match=r"deltaad\.(value|math)") as ei:
        grad(f)(1.5)
    # the message names the call as written: ``conv(x)`` here (a math function bound to a
    # name: ``math.sin(x)`` itself takes duals while deltaad differentiates)
    assert str(ei.value).startswith(start.replace(start.partition("(")[0], "conv"))
    with pytest.raises(TypeError, match=r"deltaad\.(value|math)"):
        deltaad.jvp(f, (1.5,), (1.0,))
    assert deltaad.open_traces() == []


@settings(max_examples=40)
@given(x=st.floats(-1e6, 1e6, allow_nan=False).filter(lambda v: v != int(v)))
def test_piecewise_constant_conversions_give_plain_values(x):
    """``int(x)`` and integer or bool casts of an array dual are piecewise constant, like
    ``math.floor``: the plain value, derivative 0 (what JAX and PyTorch give), in both modes."""
    n = int(x)
    f = lambda v: v * int(v)  # noqa: E731
    assert f(x) == x * n
    assert grad(f)(x) == n and deltaad.jvp(f, (x,), (1.0,)) == (x * n, float(n))
    eps = 1e-7 * max(1.0, abs(x))
    if int(x - eps) == n == int(x + eps):
        assert abs((f(x + eps) - f(x - eps)) / (2 * eps) - n) <= 1e-6 * max(1.0, abs(n))
    a = np.array([x, -x, 0.25])
    want = a.astype(np.int64)
    for cast in (np.int64, lambda w: np.asarray(w, dtype=int), lambda w: w.astype(np.int64)):
        g = grad(lambda w: np.sum(w * cast(w)))(a)
        np.testing.assert_array_equal(g, want)
    assert grad(lambda w: np.sum(w * np.asarray(w, dtype=bool)))(a).tolist() == [1.0, 1.0, 1.0]
    assert int(deltaad.jvp(lambda w: w * int(w[0]), (np.array([x]),), (np.ones(1),))[1][0]) == n


def test_percent_formatting_gives_the_value():
    """``'%.3f' % x`` (and ``logging``, which formats with ``%``) converts the dual only to
    build a string, which carries no derivative: it gives the value, as ``format`` and
    f-strings do, at every nesting level and in both modes; ``float(x)`` still raises."""
    import io
    import logging

    out = []
    log = logging.getLogger("deltaad-test-format")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        def f(x):
            y = x * x
            out.append("%.4f %d %s" % (y, y, format(y, ".1f")))
            log.info("y=%.2f", y)
            return y * x

        assert grad(f)(1.5) == 6.75
        assert deltaad.jacfwd(f)(1.5) == 6.75
        assert deltaad.hessian(f)(1.5) == 9.0
    finally:
        log.removeHandler(handler)
    assert out == ["2.2500 2 2.2"] * 3
    assert stream.getvalue().splitlines() == ["y=2.25"] * 3
    with pytest.raises(TypeError, match="float"):
        grad(lambda x: float(x) * x)(1.5)
    assert deltaad.open_traces() == []


def test_conversion_message_names_the_alternatives():
    """``math.sin(x)`` takes duals while deltaad differentiates (``deltaad.stdmath``); with
    that switched off, or with the function bound by ``from math import sin``, the message
    names the fix for the form written."""
    deltaad.stdmath.enable(False)
    try:
        with pytest.raises(TypeError) as ei:
            grad(lambda x: math.sin(x))(1.0)
    finally:
        deltaad.stdmath.enable(True)
    msg = str(ei.value)
    assert msg.startswith("math.sin(x) converts its argument to a plain float")
    assert "deltaad.math.sin(x)" in msg and "from deltaad import math" in msg
    sin = math.sin
    with pytest.raises(TypeError) as ei:
        grad(lambda x: sin(x))(1.0)
    msg = str(ei.value)
    assert msg.startswith("sin(x) calls math.sin itself, bound to a name before deltaad")
    assert "from deltaad.math import sin" in msg
    assert grad(lambda x: math.sin(x))(1.0) == math.cos(1.0)


def test_value_gives_the_number():
    seen = []

    def f(x):
        seen.append(deltaad.value(x))
        y = x * 3.0
        seen.append(deltaad.value(y))
        seen.append(math.sin(deltaad.value(y)))  # explicitly dropping the derivative is fine
        return y

    assert grad(f)(2.0) == 3.0
    assert seen == [2.0, 6.0, math.sin(6.0)]
    assert deltaad.value(4.0) == 4.0 and deltaad.value("s") == "s"
    # nested: the plain number under every level
    grad(lambda x: grad(lambda y: seen.append(deltaad.value(x * y)) or y)(5.0))(2.0)
    assert seen[-1] == 10.0 and type(seen[-1]) is float


# --------------------------------------------------------------------------------------------
# Escaped duals


def _escape():
    box = {}

    def f(x):
        box["x"] = x
        box["y"] = x * 2.0
        return x * x

    assert grad(f)(1.5) == 3.0
    return box


@pytest.mark.parametrize("use", [
    lambda d: d * 2.0, lambda d: 2.0 * d, lambda d: d + d, lambda d: d - 1, lambda d: 1 / d,
    lambda d: d ** 2, lambda d: 2.0 ** d, lambda d: -d, lambda d: +d, lambda d: abs(d),
    lambda d: d % 1.0, lambda d: deltaad.sin(d), lambda d: deltaad.exp(d),
    lambda d: deltaad.hypot(d, 1.0), lambda d: deltaad.arctan2(1.0, d),
    lambda d: deltaad.power(d, 2.0), lambda d: d.sin(), lambda d: deltaad.floor(d),
    lambda d: deltaad.sign(d), lambda d: d // 1.0,
], ids=["mul", "rmul", "add", "sub_int", "rdiv", "pow", "rpow", "neg", "pos", "abs", "mod",
        "sin", "exp", "hypot", "arctan2", "power", "method", "floor", "sign", "floordiv"])
def test_escaped_dual_in_arithmetic_raises(use):
    box = _escape()
    for d in (box["x"], box["y"]):
        with pytest.raises(deltaad.EscapedDualError, match="escaped") as ei:
            use(d)
        assert "deltaad.value(x)" in str(ei.value) and "finished" in str(ei.value)


def test_escaped_dual_inside_a_new_differentiation_raises():
    box = _escape()
    with pytest.raises(deltaad.EscapedDualError, match="escaped"):
        grad(lambda y: y * box["x"])(1.0)
    with pytest.raises(deltaad.EscapedDualError, match="escaped"):
        deltaad.jvp(lambda y: box["y"] + y, (1.0,), (1.0,))
    with pytest.raises(deltaad.EscapedDualError):
        grad(lambda y: deltaad.sin(box["x"]) * y)(1.0)
    assert deltaad.open_traces() == []


def test_escaped_dual_returned_from_an_inner_grad_raises():
    """An inner trace's dual smuggled out to the outer function is escaped, not a constant."""
    box = {}

    def outer(x):
        def inner(y):
            box["y"] = y * x
            return y * 1.0

        grad(inner)(2.0)
        return x * box["y"]

    with pytest.raises(deltaad.EscapedDualError):
        grad(outer)(3.0)


def test_escaped_dual_still_inspectable():
    box = _escape()
    d = box["y"]
    assert deltaad.value(d) == 3.0
    assert repr(d).startswith("Dual(3.0")
    assert format(d, ".2f") == "3.00" and f"{d:>5}" == "  3.0"
    assert str(d) == repr(d)
    # comparisons look at values and still work
    assert d > 2.0 and d == 3.0 and not d < 1.0
    assert type(d) is Dual and d.value == 3.0


def test_escaped_forward_dual():
    box = {}

    def f(x):
        box["x"] = x
        return x

    deltaad.jvp(f, (1.0,), (1.0,))
    with pytest.raises(deltaad.EscapedDualError):
        box["x"] * 2.0
    assert deltaad.value(box["x"]) == 1.0


def test_escaped_error_is_a_runtime_error():
    assert issubclass(deltaad.EscapedDualError, RuntimeError)


# --------------------------------------------------------------------------------------------
# Exceptions inside fun leave nothing open


class Boom(Exception):
    pass


def test_exception_inside_fun_closes_traces():
    def bad(x):
        y = x * 2.0
        raise Boom("inside")

    for transform in (lambda: grad(bad)(1.0), lambda: deltaad.jvp(bad, (1.0,), (1.0,)),
                      lambda: deltaad.vjp(bad, 1.0), lambda: deltaad.hessian(bad)(1.0),
                      lambda: deltaad.jacfwd(bad)(1.0), lambda: deltaad.make_delta(bad, 1.0),
                      lambda: grad(lambda x: grad(bad)(x))(1.0)):
        with pytest.raises(Boom, match="inside"):
            transform()
        assert deltaad.open_traces() == []
    assert grad(lambda x: x * x)(3.0) == 6.0


def test_exception_caught_inside_outer_differentiation():
    def outer(x):
        try:
            grad(lambda y: (y * x, 1 / 0))(1.0)
        except ZeroDivisionError:
            pass
        assert len(deltaad.open_traces()) == 1
        return x * x

    assert grad(outer)(3.0) == 6.0


def test_open_traces_inside():
    seen = []

    def f(x):
        seen.append(len(deltaad.open_traces()))
        return grad(lambda y: seen.append(len(deltaad.open_traces())) or y * x)(1.0)

    grad(f)(1.0)
    assert seen == [1, 2]
    assert deltaad.open_traces() == []


# --------------------------------------------------------------------------------------------
# Misuse of the transformations


def test_grad_of_non_scalar_output():
    for out in (lambda x: (x, x), lambda x: [x], lambda x: {"a": x}, lambda x: "s"):
        with pytest.raises(TypeError, match="jacrev") as ei:
            grad(out)(1.0)
        assert "vjp" in str(ei.value) and "has_aux" in str(ei.value)
    with pytest.raises(TypeError, match="a tuple of 2 item"):
        grad(lambda x: (x, x))(1.0)
    assert deltaad.open_traces() == []


def test_grad_of_argument_without_float_leaf():
    with pytest.raises(TypeError, match=r"3\.0") as ei:
        grad(lambda x: x * 2)(3)
    assert "no float leaf" in str(ei.value)
    for arg in ((1, 2), [True], {"a": "s"}, None):
        with pytest.raises(TypeError, match="no float leaf"):
            grad(lambda x: 1.0)(arg)
    with pytest.raises(TypeError, match="no float leaf"):
        deltaad.jvp(lambda x: x, (3,), (1,))
    with pytest.raises(TypeError, match="no float leaf"):
        deltaad.vjp(lambda x: x, 3)
    with pytest.raises(TypeError, match="no float leaf"):
        deltaad.jacfwd(lambda x: x)(3)
    assert deltaad.open_traces() == []


@pytest.mark.parametrize("argnums", [1, -2, (0, 1), (5,), ()])
def test_bad_argnums(argnums):
    with pytest.raises(ValueError, match="argnums") as ei:
        grad(lambda x: x, argnums=argnums)(1.0)
    if argnums != ():
        assert "1 positional argument" in str(ei.value)


@pytest.mark.parametrize("argnums", [1.0, "0", None, (0, None), [0.5]])
def test_bad_argnums_type(argnums):
    """Not an integer: a TypeError saying what argnums must be (not "out of range")."""
    for transform in (grad, deltaad.jacrev, deltaad.jacfwd, deltaad.hessian, deltaad.value_and_grad):
        with pytest.raises(TypeError, match="argnums must be an int or a tuple of ints") as ei:
            transform(lambda x, y=0: x, argnums=argnums)(1.0)
        assert "positional argument" not in str(ei.value) and repr(argnums) in str(ei.value)


def test_bad_argnums_value():
    with pytest.raises(ValueError, match="argnums"):
        deltaad.jacrev(lambda x: x, argnums=3)(1.0)
    with pytest.raises(ValueError, match="argnums"):
        deltaad.jacfwd(lambda x: x, argnums=(0, 2))(1.0, 2.0)


def test_wrong_cotangent_structure():
    out, pb = deltaad.vjp(lambda x: (x, x * 2.0), 1.0)
    for ct in (1.0, (1.0,), [1.0, 1.0], (1.0, (1.0, 1.0)), {"a": 1.0}):
        with pytest.raises(TypeError, match="cotangent must have the structure") as ei:
            pb(ct)
        assert "tuple(*, *)" in str(ei.value)
    assert pb((1.0, 1.0)) == (3.0,)


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True.*pair"):
        grad(lambda x: x, has_aux=True)(1.0)
    with pytest.raises(TypeError, match="pair"):
        grad(lambda x: (x, 1, 2), has_aux=True)(1.0)
    assert deltaad.open_traces() == []


def test_jvp_tangent_structure_mismatch():
    with pytest.raises(TypeError, match="tangents must have the structure of primals"):
        deltaad.jvp(lambda a, b: a * b, (1.0, 2.0), (1.0,))
    with pytest.raises(TypeError, match="tuples"):
        deltaad.jvp(lambda a: a, 1.0, 1.0)


def test_complex_input_rejected():
    with pytest.raises(TypeError, match="real"):
        grad(lambda z: z * 2.0)(1.0 + 2.0j)


def test_unsupported_operand_types():
    def f(x):
        return x + "s"

    with pytest.raises(TypeError):
        grad(f)(1.0)
    with pytest.raises(TypeError):
        grad(lambda x: x * [1])(1.0)
    assert deltaad.open_traces() == []


def test_duals_are_not_hashable():
    with pytest.raises(TypeError):
        grad(lambda x: {x: 1} and x)(1.0)


# --------------------------------------------------------------------------------------------
# Comparisons and the branch-taken semantics (Abadi and Plotkin)


def test_comparisons_return_bool():
    seen = []

    def f(x):
        y = x * 2.0
        for r in (x < y, x <= 1.0, x > 0, x >= y, x == 1.0, x != y, 1.0 < x, 2 == x,
                  x == x, y > x):
            seen.append(r)
        # with a numpy scalar on either side the comparison is numpy's: np.bool_ is accepted
        seen.append(x < np.float64(1.5))
        seen.append(np.float64(1.0) < x)
        return y

    grad(f)(1.0)
    assert all(type(r) is bool for r in seen[:-2]), [type(r) for r in seen]
    assert all(isinstance(r, (bool, np.bool_)) for r in seen[-2:])
    assert seen == [True, True, True, False, True, True, False, False, True, True, True, False]


def test_comparisons_between_levels():
    def outer(x):
        return grad(lambda y: y * (1.0 if y > x else -1.0))(2.0) * x

    assert grad(outer)(1.0) == 1.0
    assert grad(outer)(3.0) == -1.0


def test_branch_follows_the_value():
    def f(x):
        if x > 0:
            return x * x
        return -3.0 * x

    assert grad(f)(2.0) == 4.0
    assert grad(f)(-2.0) == -3.0
    assert deltaad.jvp(f, (-2.0,), (1.0,))[1] == -3.0
    assert grad(lambda x: x if x else 5.0)(0.0) == 0.0  # bool(x) is the value's truth


def test_branch_taken_consequence_at_a_tie():
    """d/dx (0 if x == 0 else x) at 0 is 0, although the function is the identity: the
    derivative is that of the branch the value takes (Abadi and Plotkin)."""
    f = lambda x: 0.0 if x == 0 else x  # noqa: E731
    assert grad(f)(0.0) == 0.0
    assert deltaad.jvp(f, (0.0,), (1.0,))[1] == 0.0
    assert grad(f)(1.0) == 1.0 and grad(f)(-1e-300) == 1.0


# --------------------------------------------------------------------------------------------
# Threads


def test_threads_independent_results():
    n_threads = 4
    iters = 150 if deltaad.backend == "python" else 600
    barrier = threading.Barrier(n_threads)
    errors = []

    def work(k):
        try:
            barrier.wait()
            for i in range(iters):
                x = 0.5 + 0.01 * i
                # thread k differentiates x**(k+2) * sin(x), and a nested one every few steps
                g = grad(lambda t: t ** (k + 2) * deltaad.sin(t))(x)
                want = (k + 2) * x ** (k + 1) * math.sin(x) + x ** (k + 2) * math.cos(x)
                if abs(g - want) > 1e-12 * (1 + abs(want)):
                    errors.append((k, i, g, want))
                if i % 10 == 0:
                    h = grad(grad(lambda t: t ** (k + 3)))(x)
                    wh = (k + 3) * (k + 2) * x ** (k + 1)
                    if abs(h - wh) > 1e-12 * (1 + abs(wh)):
                        errors.append((k, i, "nested", h, wh))
                    _, t = deltaad.jvp(lambda t: t * k, (x,), (1.0,))
                    if t != k:
                        errors.append((k, i, "jvp", t))
                if deltaad.open_traces():
                    errors.append((k, i, "open", deltaad.open_traces()))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append((k, repr(exc)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_threads_do_not_see_each_others_traces():
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def holder():
        def f(x):
            inside.set()
            release.wait(10)
            return x * x

        seen["g"] = grad(f)(3.0)

    t = threading.Thread(target=holder)
    t.start()
    assert inside.wait(10)
    try:
        # the other thread has a trace open; this one has none, and can differentiate
        assert deltaad.open_traces() == []
        assert grad(lambda x: x * 5.0)(1.0) == 5.0
    finally:
        release.set()
        t.join()
    assert seen["g"] == 6.0


# --------------------------------------------------------------------------------------------
# Backend selection


def _src_dir():
    return os.path.dirname(os.path.dirname(os.path.abspath(deltaad.__file__)))


def _run_import(value):
    env = dict(os.environ)
    env["DELTAAD_BACKEND"] = value
    env["PYTHONPATH"] = _src_dir() + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", "import deltaad; print(deltaad.backend)"],
                          env=env, capture_output=True, text=True, timeout=120)


def test_bogus_backend_is_import_error():
    r = _run_import("bogus")
    assert r.returncode != 0
    assert "ImportError" in r.stderr
    assert "'bogus'" in r.stderr and "DELTAAD_BACKEND=c" in r.stderr
    assert "DELTAAD_BACKEND=python" in r.stderr


def test_python_backend_can_be_forced():
    r = _run_import("python")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "python"


def test_backend_name():
    assert deltaad.backend in ("c", "python")
    if os.environ.get("DELTAAD_BACKEND") in ("c", "python"):
        assert deltaad.backend == os.environ["DELTAAD_BACKEND"]


# --------------------------------------------------------------------------------------------
# Tape lifetime


def test_tape_freed_with_vjp_fn():
    out, pb = deltaad.vjp(lambda x: x * x + 1.0, 2.0)
    r = weakref.ref(pb.tape)
    assert pb(1.0) == (4.0,)
    del pb
    gc.collect()
    assert r() is None


def test_tape_freed_after_grad():
    refs = []

    def f(x):
        refs.append(weakref.ref(deltaad.open_traces()[-1]))
        return x * x

    assert grad(f)(2.0) == 4.0
    gc.collect()
    assert refs[0]() is None
    assert deltaad.jvp(f, (2.0,), (1.0,)) == (4.0, 4.0)
    gc.collect()
    assert refs[1]() is None


# --------------------------------------------------------------------------------------------
# Both backends say the same thing


def _error_texts(backend):
    env = dict(os.environ, DELTAAD_BACKEND=backend)
    env["PYTHONPATH"] = _src_dir() + os.pathsep + env.get("PYTHONPATH", "")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "error_paths.py")
    r = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_error_texts_identical_across_backends():
    """Every error path of tests/error_paths.py (the dual's arithmetic and Python's own
    messages about it, escaped duals, duals made by hand, domains, the transformations,
    custom rules, numpy) raises the same exception with the same text on both backends."""
    pytest.importorskip("deltaad._core")
    if deltaad.backend != "c":
        pytest.skip("both backends are compared once, in the compiled core's run")
    c = _error_texts("c")
    p = _error_texts("python")
    assert c.keys() == p.keys()
    differ = {k: (c[k], p[k]) for k in c if c[k] != p[k]}
    assert not differ, differ
    assert sum(v.startswith("returned") for v in c.values()) <= 1  # each case raises
    assert not any("_core" in v or "_pure" in v for v in c.values())


def test_custom_vjp_wrong_fwd_output_blames_fwd():
    @deltaad.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (np.zeros(2) + np.sum(x), None), lambda r, g: (g * 2.0,))
    for run in (lambda: grad(lambda x: np.sum(f(x)))(np.ones(3)),
                lambda: deltaad.jacfwd(f)(np.ones(3))):
        with pytest.raises(ValueError, match=r"fwd of f returned an output of shape \(2,\), "
                                             r"but f returns shape \(3,\)"):
            run()

    @deltaad.custom_vjp
    def g(x):
        return x * 2.0

    g.defvjp(lambda x: ((g(x), x), None), lambda r, ct: (ct,))
    with pytest.raises(TypeError, match="fwd of g returned an output with the structure"):
        grad(lambda x: g(x)[0])(1.0)

    @deltaad.custom_vjp
    def h(x):
        return x * 2.0

    h.defvjp(lambda x: (h(x), None), lambda r, ct: (np.ones(2) * ct,))  # bwd's own mistake
    with pytest.raises(ValueError, match="bwd of h returned a cotangent of shape"):
        grad(h)(1.0)


@pytest.mark.parametrize("name", ["mean", "stdev", "variance", "pvariance"])
def test_statistics_exact_fractions_name_the_function(name):
    """``statistics.mean`` and friends sum exact fractions (``as_integer_ratio``), which carry
    no derivative: the error names the statistics function and the fix, on both backends
    (Python's own message said "can't convert type 'Dual' to numerator/denominator")."""
    import statistics

    from deltaad import statistics as dstats

    fn = getattr(statistics, name)  # bound before differentiating: statistics' own
    with pytest.raises(TypeError, match=r"statistics\.%s converts a deltaad Dual to an exact "
                                        r"fraction.*deltaad\.statistics\.%s takes duals" % (
                                            name, name)):
        grad(lambda x: fn([x, 2.0 * x, 3.0]))(1.0)
    # looked up while differentiating: deltaad.statistics' (tests/test_statistics.py)
    assert grad(lambda x: getattr(statistics, name)([x, 2.0 * x, 3.0]))(1.0) == \
        pytest.approx(grad(lambda x: getattr(dstats, name)([x, 2.0 * x, 3.0]))(1.0))
    assert not deltaad.open_traces()
    assert grad(lambda x: statistics.median([x, 2.0 * x, 3.0]))(1.0) == 2.0  # a selection


@settings(max_examples=40)
@given(x=st.one_of(st.integers(-10**6, 10**6).map(float),
                   st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)))
def test_is_integer_is_a_truth_about_the_value(x):
    """``x.is_integer()``, float's method, on a dual of any nesting level and in both modes
    answers for the value, as a comparison does: the branch taken is the float's."""
    def f(v):
        return v * v if v.is_integer() else 3.0 * v

    want = 2.0 * x if x.is_integer() else 3.0
    assert grad(f)(x) == want
    assert deltaad.jvp(f, (x,), (1.0,))[1] == want
    assert deltaad.hessian(f)(x) == (2.0 if x.is_integer() else 0.0)
    assert deltaad.compile(grad(f))(x) == want
    assert deltaad.open_traces() == []
