"""Numpy scalars keep numpy's semantics under differentiation: a program whose inputs or
constants are numpy scalars computes, under ``grad``/``jvp``/``hessian``, the value the plain
program computes -- same type, same bits, numpy's ``inf``/``nan`` (with numpy's warning) where
a float would raise -- and its derivative is the float program's.

Random programs mix operators, numpy's ufuncs and constants of every kind (int, float,
np.float64, np.float32, np.int64), with divisions that can meet zero, powers of negative
bases and overflowing exponentials. The compiled core and the pure twin are also driven
directly on the operators and compared bit for bit.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad
from deltaad import _pure
from helpers import bits, scaled

_core = pytest.importorskip("deltaad._core")

CONSTS = [2, 0, 0.5, -1.25, np.float64(1.5), np.float64(0.0), np.float32(0.25), np.int64(3)]

def _reflected(name, op):
    """``op(c, a)`` for a constant ``c``; asking a dual ``a`` directly (numpy's scalar on the
    left hands the operator to deltaad's numpy dispatch, which knows the selected backend's
    duals only: the direct comparison of the backends below needs the dual's own method)."""

    def f(a, b, c):
        if type(a).__name__ == "Dual":
            return getattr(a, name)(c)
        return op(c, a)

    return f


# operators only (both backends run these through their own Dual type)
OPERATORS = {
    "add": lambda a, b, c: a + b,
    "sub": lambda a, b, c: a - b,
    "mul": lambda a, b, c: a * b,
    "div": lambda a, b, c: a / b,
    "div0": lambda a, b, c: a / (b - b),  # 1/0, 0/0: numpy's inf, nan
    "mod": lambda a, b, c: a % b,
    "pow": lambda a, b, c: a ** b,  # a negative base: numpy's nan
    "pow_c": lambda a, b, c: a ** c,
    "rpow_c": _reflected("__rpow__", lambda c, a: c ** a),
    "add_c": lambda a, b, c: a + c,
    "rsub_c": _reflected("__rsub__", lambda c, a: c - a),
    "mul_c": lambda a, b, c: a * c,
    "div_c": lambda a, b, c: a / c,
    "rdiv_c": _reflected("__rtruediv__", lambda c, a: c / a),
    "rmul_c": _reflected("__rmul__", lambda c, a: c * a),
    "abs": lambda a, b, c: abs(a),
    "neg": lambda a, b, c: -a,
    "branch": lambda a, b, c: a * b if a > b else a - c,
}
# numpy's functions on scalars (dispatched by deltaad on duals)
UFUNCS = {
    "tanh": lambda a, b, c: np.tanh(a),
    "exp": lambda a, b, c: np.exp(a * 300.0),  # overflows: numpy's inf
    "log": lambda a, b, c: np.log(a),  # a negative argument: numpy's nan
    "sqrt": lambda a, b, c: np.sqrt(a),
    "sin": lambda a, b, c: np.sin(a),
    "arctan2": lambda a, b, c: np.arctan2(a, b),
    "hypot": lambda a, b, c: np.hypot(a, c),
    "np_divide": lambda a, b, c: np.divide(c, a),
    "np_power": lambda a, b, c: np.power(a, b),
}
ALL = dict(OPERATORS, **UFUNCS)


@st.composite
def programs(draw, ops):
    n_in = draw(st.integers(1, 3))
    steps = []
    for k in range(draw(st.integers(1, 8))):
        n = n_in + k
        steps.append((draw(st.sampled_from(sorted(ops))), draw(st.integers(0, n - 1)),
                      draw(st.integers(0, n - 1)), draw(st.sampled_from(range(len(CONSTS))))))
    return n_in, steps


def run(ops, prog, xs):
    n_in, steps = prog
    vals = list(xs)
    for op, i, j, c in steps:
        vals.append(ops[op](vals[i], vals[j], CONSTS[c]))
    return vals[-1]


scalar_types = st.sampled_from([np.float64, np.float32])
values = st.floats(-3.0, 3.0, allow_nan=False) | st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0])


def _desc(x):
    """Type and bits: what the plain program gave, or the exception it raised."""
    return type(x).__name__, bits(x)


def _plain_or_raise(f, *xs):
    try:
        return f(*xs), None
    except (ArithmeticError, ValueError) as exc:
        return None, type(exc)


@scaled(1.0)
@given(programs(ALL), scalar_types, st.lists(values, min_size=3, max_size=3))
def test_value_is_the_plain_programs(prog, kind, raw):
    """value_and_grad, jvp and hessian leave the plain program's value and type alone."""
    xs = [kind(v) for v in raw[:prog[0]]]

    def f(*x):
        return run(ALL, prog, x)

    argnums = tuple(range(len(xs)))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        plain, err = _plain_or_raise(f, *xs)
        if err is not None:
            with pytest.raises(err):
                deltaad.value_and_grad(f, argnums)(*xs)
            return
        if not isinstance(plain, np.generic):
            return  # a branch returned a constant: nothing is differentiated
        v, g = deltaad.value_and_grad(f, argnums)(*xs)
        assert _desc(v) == _desc(plain)
        pv, t = deltaad.jvp(f, tuple(xs), tuple(kind(1.0) for _ in xs))
        assert _desc(pv) == _desc(plain)
        hv = deltaad.jvp(lambda *x: deltaad.value_and_grad(f)(*x)[0], tuple(xs),
                         tuple(kind(0.5) for _ in xs))[0]
        assert _desc(hv) == _desc(plain)
        # forward and reverse agree (the sum of the partials, to rounding; a gradient of an
        # np.float32 input is an np.float32)
        s = sum(float(gi) for gi in g)
        tol = 1e-9 if kind is np.float64 else 1e-6
        if math.isfinite(s) and math.isfinite(float(t)):
            assert abs(s - float(t)) <= tol * (1.0 + abs(s)) * len(prog[1])


@scaled(1.0)
@given(programs(ALL), st.lists(st.floats(-3.0, 3.0, allow_nan=False), min_size=3, max_size=3))
def test_derivative_is_the_float_programs(prog, raw):
    """Where the float program runs (no ZeroDivisionError or ValueError), the np.float64
    program's gradient is its gradient, bit for bit."""
    xs = raw[:prog[0]]
    argnums = tuple(range(len(xs)))

    def f(*x):
        return run(ALL, prog, x)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            vf, gf = deltaad.value_and_grad(f, argnums)(*xs)
        except (ArithmeticError, ValueError):
            return
        except TypeError:  # a branch made the output a constant
            return
        vn, gn = deltaad.value_and_grad(f, argnums)(*[np.float64(x) for x in xs])
    if any(type(CONSTS[c]) is np.float32 for _op, _i, _j, c in prog[1]):
        return  # float32 constants round differently from the float program's
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if bits(f(*xs)) != bits(f(*[np.float64(x) for x in xs])):
            # numpy's own two programs differ (np.int64(3) ** x takes numpy's array power
            # for a float x, its scalar power for an np.float64: 1 ulp apart at some x)
            return
    assert bits(vn) == bits(vf)
    assert [bits(g) for g in gn] == [bits(g) for g in gf]


def test_the_issue_examples():
    """Division by zero in np.float64 arithmetic: numpy's inf and warning, not an exception;
    an np.float32 input keeps numpy's float32 arithmetic."""
    def f(x):
        return x / (x - np.float64(1.0))

    with pytest.warns(RuntimeWarning):
        v, g = deltaad.value_and_grad(f)(np.float64(1.0))
    assert type(v) is np.float64 and v == math.inf and math.isnan(g)
    v32 = deltaad.value_and_grad(lambda x: x * x + np.tanh(x))(np.float32(0.3))[0]
    assert type(v32) is np.float32 and v32 == np.float32(0.3) * np.float32(0.3) + np.tanh(np.float32(0.3))
    # floats stay floats: the float program raises where Python does
    with pytest.raises(ZeroDivisionError):
        deltaad.grad(lambda x: x / (x - 1.0))(1.0)


# --------------------------------------------------------------------------------------------
# The two backends, driven directly, bit for bit


def _describe(x, B):
    if type(x) is B.Dual:
        t = x.trace
        return ("dual", _describe(x.value, B), _describe(x.tangent, B) if t.is_forward else x.id)
    return type(x).__name__, bits(x)


def _results(B, prog, xs):
    out = {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            T = B.Tape(1)
            ds = [T.input(x) for x in xs]
            y = run(OPERATORS, prog, ds)
            T.close()
            if type(y) is B.Dual:
                out["rev"] = _describe(y.value, B), [bits(g) for g in T.eval([(y.id, 1.0)], [d.id for d in ds])]
            else:
                out["rev"] = _describe(y, B)
        except Exception as exc:  # noqa: BLE001 - compared between backends
            out["rev"] = type(exc).__name__, str(exc)
        try:
            L = B.ForwardLevel(1)
            y = run(OPERATORS, prog, [L.input(x, 1.0) for x in xs])
            L.close()
            out["fwd"] = _describe(y, B)
        except Exception as exc:  # noqa: BLE001
            out["fwd"] = type(exc).__name__, str(exc)
    return out


@scaled(1.0)
@given(programs(OPERATORS), scalar_types, st.lists(values, min_size=3, max_size=3))
def test_backends_bit_for_bit(prog, kind, raw):
    xs = [kind(v) for v in raw[:prog[0]]]
    assert _results(_pure, prog, xs) == _results(_core, prog, xs)


_EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1e-300, 1e300, -1e300, 700.0,
         -700.0, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("b", _EDGE)
def test_numpy_power_partials_at_the_edges_bit_for_bit(b):
    """``a ** b`` of np.float64 values: the core computes numpy_partials' branches in C (zero
    bases to negative powers, negative bases, overflow, inf and nan); both backends give the
    same value, adjoints and tangents, bit for bit, on a grid of special values."""
    for a in _EDGE:
        for constant_exponent in (False, True):
            def prog(B, a=a, constant_exponent=constant_exponent):
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    T = B.Tape(1)
                    x = T.input(np.float64(a))
                    y = T.input(np.float64(b))
                    z = x ** np.float64(b) if constant_exponent else x ** y
                    T.close()
                    adj = T.eval([(z.id, 1.0)], [x.id, y.id])
                    L = B.ForwardLevel(1)
                    w = L.input(np.float64(a), 1.0) ** L.input(np.float64(b), -0.5)
                    L.close()
                    return (_describe(z.value, B), [None if g is None else bits(g) for g in adj],
                            _describe(w, B))
            assert prog(_pure) == prog(_core), (a, b, constant_exponent)


@pytest.mark.parametrize("kind", [float, np.float64, np.float32])
def test_np_power_of_duals_is_numpys_value(kind):
    """np.power on scalar duals gives the value numpy's np.power gives, at every nesting. On
    AVX-512 machines numpy's power loop differs from the scalar ``**`` in the last bit for
    about one pair in sixteen (one in five for float32); deltaad computed ``**`` before."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        a, b = kind(rng.uniform(0.1, 3.0)), kind(rng.uniform(-3.0, 3.0))
        want = np.power(a, b)
        want = float(want) if kind is float else want

        def f(x):
            return np.power(x, b)

        v = deltaad.value_and_grad(f)(a)[0]
        fv = deltaad.jvp(f, (a,), (kind(1.0),))[0]
        hv = deltaad.jvp(lambda x: deltaad.grad(f)(x) * 0.0 + f(x), (a,), (kind(1.0),))[0]
        for got in (v, fv, hv):
            assert type(got) is type(want) and bits(got) == bits(want), (a, b, got, want)


# --------------------------------------------------------------------------------------------
# A numpy scalar on the left of a dual: the operator as numpy's ufunc path gives it

import operator  # noqa: E402

REAL_SCALARS = [np.float16, np.float32, np.float64, np.longdouble, np.int8, np.int16, np.int32,
                np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
# each operator and the ufunc numpy's scalar hands it to when it meets an object it does not
# know (the path ``t - x`` took before the compiled core let numpy's scalars defer to a dual)
LEFT_OPERATORS = [
    (operator.add, np.add), (operator.sub, np.subtract), (operator.mul, np.multiply),
    (operator.truediv, np.true_divide), (operator.pow, np.power), (operator.lt, np.less),
    (operator.le, np.less_equal), (operator.eq, np.equal), (operator.ne, np.not_equal),
    (operator.gt, np.greater), (operator.ge, np.greater_equal),
]


def _constant(kind, raw):
    if issubclass(kind, np.integer):
        info = np.iinfo(kind)
        raw = raw * 7 if math.isfinite(raw) else 3.0
        return kind(int(min(max(raw, info.min), info.max)))
    with np.errstate(all="ignore"):
        if kind is np.longdouble:  # a value no double holds (numpy compares it as it is)
            return kind(raw) / kind(3)
        return kind(raw)


def _seen(r):
    """A result as the plain program would see it: its value's type and bits, or the bool."""
    if type(r) is np.bool_ or type(r) is bool:
        return type(r), bool(r)
    v = deltaad.value(r)
    return type(v), bits(v) if not isinstance(v, np.longdouble) else repr(v)


@scaled(4.0)
@given(st.sampled_from(REAL_SCALARS), st.floats(-4.0, 4.0) | st.sampled_from(
           [0.0, -0.0, 1.0, float("inf"), float("nan")]),
       st.floats(-3.0, 3.0) | st.sampled_from([0.0, -0.0, 1.0, 2.0]),
       st.sampled_from(LEFT_OPERATORS))
def test_numpy_scalar_on_the_left_is_numpys_ufunc_path(kind, raw, x, ops):
    """``t op x`` for a numpy real scalar ``t`` and a dual ``x``, in reverse, forward and
    nested mode: the value (type and bits), comparison (numpy's bool), derivative and warnings
    of ``ufunc(t, x)``, the call numpy's own operator makes."""
    op, ufunc = ops
    t = _constant(kind, raw)

    def run(how):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            seen = []

            def f(a):
                r = how(t, a)
                seen.append(_seen(r))
                return r if type(r) is deltaad.Dual else a * 0.0

            g = deltaad.grad(f)(x)
            _, tan = deltaad.jvp(f, (x,), (1.0,))
            h = deltaad.grad(deltaad.grad(f))(x)
        return seen, [bits(v) for v in (g, tan, h)], sorted({str(m.message) for m in w})

    assert run(op) == run(ufunc)


def test_numpy_scalars_on_the_left_skip_numpys_dispatch(restore_registry, backend):
    """On the compiled core, ``t - x`` (an np.float64 ``t``) asks the dual at once: numpy's
    ufunc dispatch, whose scalar function is counted here, is not entered (~600 ns it took per
    operation); an explicit ``np.subtract(t, x)`` still is. The pure twin keeps numpy's path."""
    from deltaad.numpy import registry

    calls = []
    plain = registry.SCALAR_UFUNCS[np.subtract]

    def counted(a, b):
        calls.append(1)
        return plain(a, b)

    registry.SCALAR_UFUNCS[np.subtract] = counted
    t = np.float64(0.25)

    def f(a):
        return (t - a) * np.subtract(t, a)

    assert deltaad.grad(f)(0.5) == -2 * (0.25 - 0.5)
    assert len(calls) == (1 if backend == "c" else 2)
    deferring = deltaad.numpy.DEFERRING
    assert (set(REAL_SCALARS) <= set(deferring)) == (backend == "c")


def test_numpy_bool_and_complex_scalars_keep_numpys_path():
    """``np.True_ + x`` and ``np.complex128(1j) * x``: the dual has no reflected operator of
    its own for these (numpy's path through ``__array_ufunc__`` gives the result), so their
    types are not wrapped."""
    assert np.bool_ not in deltaad.numpy.DEFERRING
    assert np.complex128 not in deltaad.numpy.DEFERRING
    assert deltaad.grad(lambda a: np.True_ + a)(0.5) == 1.0
    assert deltaad.grad(lambda a: (np.complex128(2j) * a).imag)(0.5) == 2.0


@scaled(1.0)
@given(st.floats(allow_nan=True), st.floats(allow_nan=True),
       st.sampled_from([operator.lt, operator.le, operator.eq, operator.ne, operator.gt,
                        operator.ge]))
def test_a_dual_compared_with_np_float64_is_the_float_comparison(x, c, op):
    """A float dual against an np.float64 (a float's layout; the core compares the two doubles):
    Python's bool of ``op(x, float(c))``, nan and -0.0 included, either side."""
    seen = []

    def f(a):
        seen.append((op(a, np.float64(c)), op(np.float64(c), a)))
        return a

    deltaad.grad(f)(x)
    (left, right), = seen
    assert type(left) is bool and left == op(x, c)
    assert type(right) is np.bool_ and right == op(c, x)
