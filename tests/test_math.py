"""``deltaad.math``: every name of ``math``; ``math`` itself on plain numbers (same bits, same
errors); derivatives on duals against finite differences and across modes; programs written
with ``math`` that differentiate with ``from deltaad import math`` as the only change."""

import math as pymath
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad
from deltaad import math as dmath

NAMES = [n for n in dir(pymath) if not n.startswith("_")]


def test_every_name_of_math_is_there():
    missing = [n for n in NAMES if not hasattr(dmath, n)]
    assert not missing
    assert set(dmath.__all__) == set(NAMES)
    for c in ("pi", "e", "tau", "inf"):
        assert getattr(dmath, c) == getattr(pymath, c)
    assert pymath.isnan(dmath.nan)


# Each real function of math: (arguments as a tuple of floats drawn from where it is smooth)
ONE = st.floats(-3.0, 3.0)
POS = st.floats(0.05, 5.0)
UNIT = st.floats(-0.95, 0.95)
BIG = st.floats(1.05, 5.0)
NOTINT = st.floats(-4.9, 4.9).filter(lambda v: abs(v - round(v)) > 0.05)

SMOOTH = {
    "sin": (ONE,), "cos": (ONE,), "tan": (UNIT,), "asin": (UNIT,), "acos": (UNIT,),
    "atan": (ONE,), "sinh": (ONE,), "cosh": (ONE,), "tanh": (ONE,), "asinh": (ONE,),
    "acosh": (BIG,), "atanh": (UNIT,), "exp": (ONE,), "expm1": (ONE,), "exp2": (ONE,),
    "log": (POS,), "log1p": (POS,), "log2": (POS,), "log10": (POS,), "sqrt": (POS,),
    "cbrt": (POS,), "fabs": (POS,), "degrees": (ONE,), "radians": (ONE,), "erf": (ONE,),
    "erfc": (ONE,), "gamma": (NOTINT,), "lgamma": (NOTINT,), "atan2": (POS, ONE),
    "hypot": (ONE, POS, ONE), "copysign": (POS, ONE), "fmod": (NOTINT, BIG),
    "remainder": (NOTINT, BIG), "pow": (POS, ONE),
}
if hasattr(pymath, "fma"):
    SMOOTH["fma"] = (ONE, ONE, ONE)


def _fd(f, xs, k, h=1e-6):
    up = list(xs)
    dn = list(xs)
    up[k] += h
    dn[k] -= h
    return (f(*up) - f(*dn)) / (2 * h)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_derivatives_against_finite_differences_and_modes(name):
    f = getattr(dmath, name)
    ref = getattr(pymath, name)

    @given(st.tuples(*SMOOTH[name]))
    def prop(xs):
        if name in ("fmod", "remainder"):
            q = xs[0] / xs[1]
            if abs(q - round(q)) < 0.02 or abs(q - round(q) - 0.5) < 0.02 or abs(q - round(q) + 0.5) < 0.02:
                return  # near a jump
        if name == "copysign" and abs(xs[1]) < 1e-3:
            return
        n = len(xs)
        out, g = deltaad.value_and_grad(f, argnums=tuple(range(n)))(*xs)
        assert out == ref(*xs) or (pymath.isnan(out) and pymath.isnan(ref(*xs)))
        for k in range(n):
            fd = _fd(ref, xs, k)
            assert g[k] == pytest.approx(fd, rel=1e-5, abs=1e-6), (name, xs, k)
            t = [0.0] * n
            t[k] = 1.0
            assert deltaad.jvp(f, xs, tuple(t))[1] == pytest.approx(g[k], rel=1e-12, abs=1e-15)

    prop()


@pytest.mark.parametrize("name", ["sin", "exp", "log", "sqrt", "atan2", "hypot", "gamma",
                                  "lgamma", "pow", "erf", "tanh"])
def test_second_derivatives(name):
    f = getattr(dmath, name)
    args = {"atan2": (0.7, 1.3), "hypot": (0.7, 1.3, 0.4), "pow": (1.3, 0.7)}.get(name, (1.3,))
    n = len(args)
    for k in range(n):
        g = deltaad.grad(f, argnums=k)
        h = deltaad.grad(g, argnums=k)(*args)
        assert h == pytest.approx(_fd(g, args, k, 1e-5), rel=1e-6, abs=1e-7)
        assert deltaad.jvp(g, args, tuple(1.0 if i == k else 0.0 for i in range(n)))[1] == \
            pytest.approx(h, rel=1e-12)


FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (a == b and pymath.copysign(1, a) == pymath.copysign(1, b)) or (a != a and b != b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


def _call(f, args):
    try:
        return ("ok", f(*args))
    except Exception as exc:  # noqa: BLE001 -- the same error as math, whatever it is
        return (type(exc), str(exc))


ARITY = {"atan2": 2, "copysign": 2, "fmod": 2, "remainder": 2, "pow": 2, "ldexp": None,
         "hypot": 3, "nextafter": 2, "isclose": 2, "fma": 3, "dist": None, "fsum": None,
         "prod": None, "sumprod": None, "comb": None, "perm": None, "gcd": None, "lcm": None,
         "factorial": None, "isqrt": None}


@pytest.mark.parametrize("name", [n for n in NAMES if callable(getattr(pymath, n))])
def test_math_itself_on_plain_numbers(name):
    """Same value to the bit, same type, same error as ``math`` on plain floats."""
    f = getattr(dmath, name)
    ref = getattr(pymath, name)
    arity = ARITY.get(name, 1)

    if arity is None:  # sequences and integer functions: a few cases by hand
        cases = {
            "ldexp": [(0.75, 3), (1.5, -1080), (2.0, 5000), (pymath.nan, 2)],
            "dist": [((1.0, 2.0), (4.0, 6.0)), ((1.0,), (1.0, 2.0))],
            "fsum": [([0.1] * 10,), ([1e100, 1.0, -1e100],), ([pymath.inf, -pymath.inf],)],
            "prod": [([0.1, 3.0, 7.0],), ([2, 3],), ([],)],
            "sumprod": [((0.1, 0.2), (3.0, 7.0)), ((1.0,), (1.0, 2.0))],
            "comb": [(5, 2), (5.0, 2)], "perm": [(5, 2), (-1, 2)], "gcd": [(12, 18)],
            "lcm": [(4, 6)], "factorial": [(5,), (5.0,), (-1,)], "isqrt": [(17,), (-1,)],
        }[name]
        for args in cases:
            assert _call(f, args) == _call(ref, args) or _same(_call(f, args)[1], _call(ref, args)[1])
        return

    @given(st.lists(FLOATS, min_size=arity, max_size=arity))
    def prop(args):
        mine, theirs = _call(f, args), _call(ref, args)
        assert mine[0] == theirs[0]
        if mine[0] == "ok":
            assert _same(mine[1], theirs[1]), (name, args, mine, theirs)
        else:
            assert mine == theirs

    prop()
    # ints, bools, numpy scalars and strings, as math takes or refuses them
    for args in ([1] * arity, [np.float64(0.5)] * arity, [np.float32(0.25)] * arity, ["a"] * arity):
        mine, theirs = _call(f, args), _call(ref, args)
        assert mine[0] == theirs[0] and (mine[0] != "ok" or _same(mine[1], theirs[1]))


def test_value_functions_on_duals_work_on_the_value():
    def f(x):
        assert not dmath.isnan(x) and dmath.isfinite(x) and not dmath.isinf(x)
        assert dmath.floor(x) == 2 and type(dmath.floor(x)) is int
        assert dmath.ceil(x) == 3 and dmath.trunc(x) == 2
        assert dmath.isclose(x, 2.5) and dmath.ulp(x) == pymath.ulp(2.5)
        return x * dmath.floor(x)

    assert deltaad.grad(f)(2.5) == 2.0
    with pytest.raises(TypeError, match="integer"):
        deltaad.grad(lambda x: dmath.factorial(x))(3.0)


def test_n_ary_functions_on_duals():
    g = deltaad.grad(lambda x, y, z: dmath.hypot(x, y, z), argnums=(0, 1, 2))(1.0, 2.0, 2.0)
    assert g == pytest.approx((1 / 3, 2 / 3, 2 / 3), rel=1e-15)
    assert deltaad.grad(lambda x: dmath.hypot(x, 0.0, 0.0))(0.0) == 0.0  # the chosen value
    assert deltaad.grad(lambda x: dmath.hypot(x))(-2.0) == -1.0
    assert dmath.hypot() == 0.0
    g = deltaad.grad(lambda x, y: dmath.dist((x, 1.0), (y, 3.0)), argnums=(0, 1))(0.0, 3.0)
    assert g == pytest.approx((-3 / 13 ** 0.5, 3 / 13 ** 0.5), rel=1e-15)
    assert deltaad.grad(lambda x: dmath.fsum([x, x * x, 1e100, -1e100]))(3.0) == 7.0
    assert deltaad.value_and_grad(lambda x: dmath.fsum([0.1] * 9 + [x]))(0.1) == (1.0, 1.0)
    assert deltaad.grad(lambda x: dmath.prod([x, x, 2.0]))(3.0) == 12.0
    assert deltaad.grad(lambda x: dmath.prod([x], start=x))(3.0) == 6.0
    assert deltaad.grad(lambda x: dmath.log(x, 2.0))(8.0) == pytest.approx(1 / (8 * pymath.log(2)))
    m, ex = deltaad.vjp(lambda x: dmath.frexp(x)[0], 5.0)[0], pymath.frexp(5.0)[1]
    assert m == 0.625 and deltaad.grad(lambda x: dmath.frexp(x)[0])(5.0) == 2.0 ** -ex
    assert deltaad.grad(lambda x: dmath.modf(x)[0] + dmath.modf(x)[1])(5.5) == 1.0
    assert deltaad.grad(lambda x: dmath.ldexp(x, 3))(1.0) == 8.0
    assert deltaad.grad(lambda x: dmath.nextafter(x, 10.0))(1.0) == 1.0
    if hasattr(pymath, "sumprod"):
        g = deltaad.grad(lambda a, b: dmath.sumprod([a, 2.0], [b, a]), argnums=(0, 1))(3.0, 5.0)
        assert g == (7.0, 3.0)
    with pytest.raises(TypeError, match="exponent i must be an int"):
        deltaad.grad(lambda x: dmath.ldexp(1.0, x))(3.0)


def test_math_errors_on_duals_are_maths():
    for f, x in [(dmath.sqrt, -1.0), (dmath.log, 0.0), (dmath.acos, 2.0), (dmath.gamma, -1.0)]:
        with pytest.raises(ValueError, match="math domain error"):
            deltaad.grad(f)(x)
    with pytest.raises(ValueError):
        deltaad.grad(dmath.pow)(0.0, -1.0)
    with pytest.raises(ValueError):
        deltaad.grad(lambda x: dmath.fmod(x, 0.0))(1.0)
    with pytest.raises(ValueError, match="dimensions"):
        deltaad.grad(lambda x: dmath.dist((x,), (1.0, 2.0)))(1.0)


def test_array_duals_only_of_shape_zero():
    def f(x):
        s = dmath.sin(np.sum(x))  # a 0-d array dual is a real number
        with pytest.raises(TypeError, match="np.sin"):
            dmath.sin(x)
        return s

    g = deltaad.grad(f)(np.array([0.1, 0.2]))
    np.testing.assert_allclose(g, [pymath.cos(0.3)] * 2)


def test_escaped_dual_raises():
    box = []
    deltaad.grad(lambda x: box.append(x) or x)(1.0)
    with pytest.raises(deltaad.EscapedDualError):
        dmath.isnan(box[0])
    with pytest.raises(deltaad.EscapedDualError):
        dmath.sin(box[0])
    with pytest.raises(deltaad.EscapedDualError):
        dmath.hypot(box[0], 1.0, 2.0)


def test_nested_levels():
    # d/dx (x * d/dy hypot(x, y, 1)) and a forward-over-reverse Hessian of lgamma
    f = lambda x: x * deltaad.grad(lambda y: dmath.hypot(x, y, 1.0))(2.0)  # noqa: E731
    h = 1e-6
    assert deltaad.grad(f)(1.5) == pytest.approx((f(1.5 + h) - f(1.5 - h)) / (2 * h), rel=1e-6)
    assert deltaad.hessian(dmath.lgamma)(2.5) == pytest.approx(0.4903577561002349, rel=1e-13)
    assert deltaad.hessian(dmath.gamma)(2.5) == pytest.approx(
        pymath.gamma(2.5) * (dmath._polygamma(0, 2.5) ** 2 + 0.4903577561002349), rel=1e-12)


def test_polygamma_against_scipy():
    special = pytest.importorskip("scipy.special")
    for n in range(4):
        for x in [0.05, 0.6, 1.3, 7.0, 30.0, -0.4, -3.7, 1e4]:
            assert dmath._polygamma(n, x) == pytest.approx(special.polygamma(n, x), rel=1e-12)


def test_a_physics_program_with_only_the_import_changed():
    """A projectile with drag written against ``math``; ``from deltaad import math`` is the
    only change. Its derivative against finite differences of the same code on ``math``."""

    def make(m):
        def range_of(angle, v0):
            vx, vy = v0 * m.cos(angle), v0 * m.sin(angle)
            x = y = 0.0
            dt, k = 1e-3, 0.1
            while y >= 0.0:
                v = m.hypot(vx, vy)
                vx, vy = vx - k * v * vx * dt, vy - (9.81 + k * v * vy) * dt
                x, y = x + vx * dt, y + vy * dt
            return m.fsum([x, -0.0]) + 0.0 * m.atan2(vy, vx) + m.copysign(0.0, x)

        return range_of

    f, ref = make(dmath), make(pymath)
    g = deltaad.grad(f, argnums=(0, 1))(0.6, 20.0)
    assert f(0.6, 20.0) == ref(0.6, 20.0)
    for k in range(2):
        # the step count is piecewise constant: a small h stays on one piece
        assert g[k] == pytest.approx(_fd(ref, (0.6, 20.0), k, 1e-8), rel=2e-3)


_BUILTINS = sorted(n for n in dir(dmath) if type(getattr(dmath, n)) is type(len)
                   and hasattr(getattr(dmath, n), "__self__")
                   and hasattr(getattr(dmath, n).__self__, "slow"))


@pytest.mark.skipif(not _BUILTINS, reason="the pure backend's deltaad.math has Python functions only")
@settings(max_examples=200, deadline=None)
@given(x=st.floats(-3.0, 3.0, allow_nan=False), data=st.data())
def test_math_builtins_equal_their_python_functions(x, data):
    """The core's builtins for ``deltaad.math``'s functions (a C fast path for float duals) give
    what deltaad.math's Python functions give, to the bit: values, errors, gradients, jvps,
    second derivatives, and on ints, numpy scalars and 0-d array duals."""
    import numpy as np
    name = data.draw(st.sampled_from(_BUILTINS))
    fast = getattr(dmath, name)
    slow = fast.__self__.slow

    def outcome(f, *args):
        try:
            return ("ok", f(*args))
        except Exception as exc:  # the same error, or the same value
            return (type(exc), str(exc))

    def same(a, b):
        assert a[0] == b[0]
        if a[0] == "ok":
            assert type(a[1]) is type(b[1])
            av, bv = np.asarray(a[1], dtype=float), np.asarray(b[1], dtype=float)
            assert np.array_equal(av, bv, equal_nan=True)
        else:
            assert a == b

    for v in (x, int(round(x)), np.float64(x)):
        same(outcome(fast, v), outcome(slow, v))
    same(outcome(deltaad.grad(fast), x), outcome(deltaad.grad(slow), x))
    same(outcome(deltaad.grad(deltaad.grad(fast)), x), outcome(deltaad.grad(deltaad.grad(slow)), x))
    same(outcome(lambda t: deltaad.jvp(fast, (t,), (1.0,)), x),
         outcome(lambda t: deltaad.jvp(slow, (t,), (1.0,)), x))
    same(outcome(deltaad.grad(lambda a: fast(np.sum(a))), np.array([x, 0.25])),
         outcome(deltaad.grad(lambda a: slow(np.sum(a))), np.array([x, 0.25])))


@pytest.mark.skipif(not _BUILTINS, reason="the pure backend's deltaad.math has Python functions only")
@settings(max_examples=200, deadline=None)
@given(x=st.floats(-3.0, 3.0, allow_nan=False), y=st.sampled_from([0.0, -0.5, 1.25, 2.0]),
       name=st.sampled_from(["atan2", "hypot"]), zero=st.booleans())
def test_binary_math_builtins_equal_their_python_functions(x, y, name, zero):
    """atan2 and hypot of two float duals, or of a dual and a float, are recorded in C: the
    same bits as deltaad.math's Python functions (the table's rule), the origin included,
    and nested and forward derivatives and other argument counts go the Python way."""
    import numpy as np
    fast = getattr(dmath, name)
    slow = fast.__self__.slow
    if zero:
        x = 0.0 * x
        y = 0.0

    def same(a, b):
        np.testing.assert_array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))

    for argnums in (0, 1, (0, 1)):
        same(deltaad.grad(fast, argnums=argnums)(x, y), deltaad.grad(slow, argnums=argnums)(x, y))
        same(deltaad.hessian(fast, argnums=argnums)(x, y), deltaad.hessian(slow, argnums=argnums)(x, y))
    same(deltaad.jvp(fast, (x, y), (1.0, -0.5))[1], deltaad.jvp(slow, (x, y), (1.0, -0.5))[1])
    assert fast(x, y) == slow(x, y) == getattr(pymath, name)(x, y)
    # one dual and a float in either place, with the inner function closing over it
    same(deltaad.grad(lambda t: fast(t, y) * fast(y, t))(x),
         deltaad.grad(lambda t: slow(t, y) * slow(y, t))(x))
    if name == "hypot":  # three coordinates: the n-ary primitive
        same(deltaad.grad(lambda t: fast(t, y, 2.0))(x), deltaad.grad(lambda t: slow(t, y, 2.0))(x))


@pytest.mark.skipif(not _BUILTINS, reason="the pure backend's deltaad.math has Python functions only")
@settings(max_examples=200, deadline=None)
@given(x=st.floats(-3.0, 3.0, allow_nan=False) | st.sampled_from([0.0, -0.0, 1.0, -1.0]),
       y=st.sampled_from([0, 1, 2, 3, -1, 0.0, 0.5, -0.5, 1.25, 2.0, -2.0, 3.0]))
def test_math_pow_builtin_equals_its_python_function(x, y):
    """math.pow of float duals, floats and ints takes the core's short path: the same values,
    errors (math's ValueError for 0 ** negative and a negative base to a fractional power),
    gradients, hessians and jvps as deltaad.math.pow's Python function, bit for bit."""
    import numpy as np
    fast = dmath.pow
    slow = fast.__self__.slow

    def outcome(fn):
        try:
            got = np.ravel(np.asarray(fn(), dtype=float)).tolist()
        except Exception as exc:  # the same error, or the same numbers
            return (type(exc).__name__, str(exc))
        return ("ok", ["nan" if v != v else struct.pack("<d", v) for v in got])

    for argnums in (0, 1, (0, 1)):
        yf = float(y)
        assert outcome(lambda: deltaad.grad(fast, argnums=argnums)(x, yf)) == \
            outcome(lambda: deltaad.grad(slow, argnums=argnums)(x, yf))
        assert outcome(lambda: deltaad.hessian(fast, argnums=argnums)(x, yf)) == \
            outcome(lambda: deltaad.hessian(slow, argnums=argnums)(x, yf))
    assert outcome(lambda: deltaad.grad(lambda t: fast(t, y))(x)) == \
        outcome(lambda: deltaad.grad(lambda t: slow(t, y))(x))
    assert outcome(lambda: deltaad.grad(lambda t: fast(y, t))(x)) == \
        outcome(lambda: deltaad.grad(lambda t: slow(y, t))(x))
    assert outcome(lambda: deltaad.jvp(lambda t: fast(t, y), (x,), (1.0,))) == \
        outcome(lambda: deltaad.jvp(lambda t: slow(t, y), (x,), (1.0,)))
    assert outcome(lambda: fast(x, y)) == outcome(lambda: pymath.pow(x, y))
