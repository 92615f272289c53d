"""Every math function and operator of deltaad: values, first and second derivatives.

References are never computed with deltaad: values come from ``math`` (or a plain-float
formula), first derivatives from fourth-order central finite differences, second derivatives
from finite differences of the (separately checked) gradient, and reverse mode is held against
forward mode exactly. Hypothesis draws points a safe margin inside each domain and away from
kinks; the documented values at non-differentiable points and the domain behaviour are checked
one by one.
"""

import math
import operator

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import deltaad
from deltaad.elementwise import TABLE
from helpers import (
    assert_close, bits, fd, fd_partial, function, ref_logaddexp, ref_sigmoid, ref_softplus,
    scaled, step_for, unary_entries,
)

Dual = deltaad.Dual


def floats(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def away_from_zero(lo, hi):
    return floats(lo, hi) | floats(-hi, -lo)


def D(f):
    """Reverse derivative of a scalar function."""
    return deltaad.grad(f)


def Dfwd(f, x):
    """Forward derivative: the tangent output of jvp with tangent 1."""
    return deltaad.jvp(f, (x,), (1.0,))[1]


def fd_atol(f_at_x, h):
    """Absolute slack for rounding error in a finite difference of step ``h``."""
    return 1e-12 * (1.0 + abs(f_at_x)) / h


def check_fd(g, f, x, rtol=1e-5, what=""):
    """``g`` (the claimed derivative of plain-float ``f`` at ``x``) against finite differences."""
    h = step_for(x)
    assert_close(g, fd(f, x, h), rtol=rtol, atol=fd_atol(f(x), h), what=what)


# --------------------------------------------------------------------------------------------
# Unary functions: every entry of deltaad's elementwise table, so a new entry is tested here
# without a line of test code. A reference is ``math``'s function of the entry's ``math``
# name, or an independent formula below; an entry with neither fails ``test_every_entry_has_a
# _reference``. Points are drawn a safe margin inside the domain, away from poles and kinks.

REFS = {"sigmoid": ref_sigmoid, "softplus": ref_softplus, "square": lambda x: x * x,
        "reciprocal": lambda x: 1.0 / x,
        "sinc": lambda x: math.sin(math.pi * x) / (math.pi * x) if x else 1.0}
SAMPLES = {"tan": floats(-1.4, 1.4), "absolute": away_from_zero(0.05, 100),
           "cbrt": away_from_zero(0.05, 100), "reciprocal": away_from_zero(0.05, 100)}

# scipy.special's functions: the reference value is scipy's own (deltaad's value is scipy's by
# definition: bit for bit where the entry ``needs`` scipy, to rounding where deltaad has a
# formula of its own); derivatives are held to finite differences of scipy's function.
try:
    from scipy import special as _special
except ImportError:  # scipy is optional: its functions are then not tested here
    _special = None


def _scipy_ref(name, n=None):
    f = getattr(_special, name)
    if n is None:
        return lambda *a: float(f(*a))
    return lambda x: float(f(*(n if isinstance(n, tuple) else (n,)), x))


SCIPY_EXACT = set()
if _special is not None:
    for _e in unary_entries(TABLE):
        _base = getattr(_e, "entry", _e)
        if _base.ufuncs and any(u == "scipy.special." + _base.name for u in _base.ufuncs) \
                and not _base.math and _e.name not in REFS:
            REFS[_e.name] = _scipy_ref(_base.name, getattr(_e, "n", None))
            if _base.needs == "scipy":
                SCIPY_EXACT.add(_e.name)
_GAMMA = floats(0.1, 10) | floats(-2.9, -2.1) | floats(-0.9, -0.1)
SAMPLES.update({"gammaln": _GAMMA, "gamma": _GAMMA, "digamma": _GAMMA,
                "i0e": away_from_zero(0.05, 10), "i1e": away_from_zero(0.05, 10)})
SAMPLES.update({"polygamma[%d]" % n: _GAMMA for n in range(4)})
SAMPLES.update({"rgamma": _GAMMA, "expi": away_from_zero(0.05, 10)})  # poles: rgamma's digamma
SAMPLES["cotdg"] = away_from_zero(1, 170)  # the pole at 0 degrees
# Gegenbauer's and Jacobi's functions of a real degree are real on [-1, 1] only
SAMPLES.update({e.name: floats(-0.95, 0.95) for e in unary_entries(TABLE)
                if e.name.startswith(("eval_gegenbauer[", "eval_jacobi["))})


def _reference(e):
    if e.name in REFS:
        return REFS[e.name], e.name in SCIPY_EXACT
    return getattr(math, e.math[0]), True


def _sample(e):
    if e.name in SAMPLES:
        return SAMPLES[e.name]
    lo = max(e.domain.lo + 0.05, -10.0)
    hi = min(e.domain.hi - 0.05, 10.0)
    return floats(lo, hi)


ENTRIES = {e.name: e for e in unary_entries(TABLE)}
UNARY = [(e.name,) + _reference(e)[:1] + (_sample(e), _reference(e)[1])
         for e in ENTRIES.values() if e.math or e.name in REFS]
UNARY.append(("abs", abs, away_from_zero(0.05, 100), True))
UNARY_IDS = [u[0] for u in UNARY]


def fn_of(name):
    """deltaad's function ``name`` (``polygamma[2]`` is ``polygamma(2, .)``)."""
    return function(ENTRIES[name], deltaad) if name in ENTRIES else getattr(deltaad, name)


def check_value(got, want, exact, what):
    assert type(got) is float, "%s returned %r" % (what, type(got))
    if exact:
        assert got == want, "%s: %r != math's %r" % (what, got, want)
    else:
        assert_close(got, want, rtol=1e-13, atol=1e-300, what=what)


@pytest.mark.parametrize("name,ref,dom,exact", UNARY, ids=UNARY_IDS)
def test_unary_value(name, ref, dom, exact):
    f = fn_of(name)

    @scaled(0.6)
    @given(dom)
    def prop(x):
        want = ref(x)
        check_value(f(x), want, exact, name + " on a float")
        check_value(f(np.float64(x)), want, exact, name + " on np.float64")
        v, _ = deltaad.value_and_grad(f)(x)
        check_value(v, want, exact, name + " on a reverse dual")
        p, _ = deltaad.jvp(f, (x,), (1.0,))
        check_value(p, want, exact, name + " on a forward dual")

    prop()


@pytest.mark.parametrize("name,ref,dom,exact", UNARY, ids=UNARY_IDS)
def test_unary_derivative_vs_fd_and_forward(name, ref, dom, exact):
    f = fn_of(name)

    @scaled(0.6)
    @given(dom)
    def prop(x):
        g = D(f)(x)
        assert type(g) is float
        check_fd(g, ref, x, what="d%s(%r)" % (name, x))
        # reverse and forward compute the same coefficient: exactly equal
        assert Dfwd(f, x) == g
        # inside a small program that uses it twice
        def h(t):
            y = f(t)
            return y * (t + 1.0) - 0.5 * y * y

        gh = D(h)(x)
        # (the modes sum the chain's terms in different orders: where they cancel, the
        # difference is absolute, at the scale of the terms)
        y = f(x)
        slack = 1e-14 * (abs(g) * (abs(x) + 1.0) + abs(y) * (1.0 + abs(g)))
        assert_close(gh, Dfwd(h, x), rtol=1e-12, atol=max(slack, 1e-300), what="chain rev vs fwd")

    prop()


@pytest.mark.parametrize("name,ref,dom,exact", UNARY, ids=UNARY_IDS)
def test_unary_second_derivative(name, ref, dom, exact):
    f = fn_of(name)
    df = D(f)

    @scaled(0.6)
    @given(dom)
    def prop(x):
        d2 = D(df)(x)
        h = step_for(x)
        assert_close(d2, fd(df, x, h), rtol=1e-5, atol=fd_atol(df(x), h),
                     what="d2 %s(%r)" % (name, x))
        # forward-over-reverse, reverse-over-forward and forward-over-forward agree with it
        fwd_rev = Dfwd(df, x)
        rev_fwd = D(lambda t: Dfwd(f, t))(x)
        fwd_fwd = Dfwd(lambda t: Dfwd(f, t), x)
        # (the modes round differently; cancellation, e.g. sigmoid'' = (1 - 2 y) y' near 0,
        # makes the difference absolute at the scale of the first derivative)
        slack = 1e-14 * (1.0 + abs(df(x)))
        for other, label in ((fwd_rev, "fwd-rev"), (rev_fwd, "rev-fwd"), (fwd_fwd, "fwd-fwd")):
            assert_close(other, d2, rtol=1e-12, atol=slack, what=label)

    prop()


def test_every_entry_has_a_reference():
    missing = [e.name for e in ENTRIES.values() if not e.math and e.name not in REFS
               and not (e.needs == "scipy" and _special is None)]
    assert not missing, "add an independent reference to REFS for %s" % missing


METHODS = [(u.__name__, e.name) for e in TABLE if e.arity == 1 for u in e.ufuncs
           if isinstance(u, np.ufunc)]


@pytest.mark.parametrize("method,name", METHODS, ids=[m for m, _ in METHODS])
def test_dual_methods(method, name):
    """``x.sin()`` and friends (what numpy object arrays of duals call) match the functions."""
    e = [e for e in TABLE if e.name == name][0]
    x = 0.3 if 0.3 in e.domain else 1.7
    f = getattr(deltaad, name)
    assert D(lambda t: getattr(t, method)())(x) == D(f)(x)
    assert Dfwd(lambda t: getattr(t, method)(), x) == D(f)(x)


def test_dual_conjugate():
    assert D(lambda t: t.conjugate() * 2.0)(0.3) == 2.0


@pytest.mark.parametrize("name", ["log", "log2", "log10", "sqrt", "arccosh"])
def test_dual_methods_positive_domain(name):
    x = 1.7
    f = getattr(deltaad, name)
    assert D(lambda t: getattr(t, name)())(x) == D(f)(x)


def test_dual_binary_methods():
    assert D(lambda t: t.arctan2(2.0))(0.5) == D(lambda t: deltaad.arctan2(t, 2.0))(0.5)
    assert D(lambda t: t.hypot(2.0))(0.5) == D(lambda t: deltaad.hypot(t, 2.0))(0.5)


def test_ints_accepted_by_math_functions():
    assert deltaad.sin(2) == math.sin(2.0)
    assert deltaad.exp(True) == math.e
    assert deltaad.hypot(3, 4) == 5.0
    assert deltaad.arctan2(1, 1) == math.atan2(1.0, 1.0)
    assert deltaad.power(2, 10) == 1024.0
    assert deltaad.pi == math.pi and deltaad.e == math.e


# --------------------------------------------------------------------------------------------
# Piecewise-constant functions: sign, floor, ceil, round, math.floor/ceil/trunc


def check_forward_zero(f, x):
    """Forward mode through a piecewise-constant function: tangent 0.0 for a float result; an
    int result (round, math.floor, ...) is a static leaf, whose tangent slot is None."""
    p, t = deltaad.jvp(f, (x,), (1.0,))
    if type(p) is int:
        assert t is None
    else:
        assert t == 0.0


@given(floats(-50, 50))
def test_piecewise_constant(x):
    frac = x - math.floor(x)
    assume(0.01 < frac < 0.99)
    assert deltaad.floor(x) == float(math.floor(x)) and type(deltaad.floor(x)) is float
    assert deltaad.ceil(x) == float(math.ceil(x))
    assert deltaad.sign(x) == (1.0 if x > 0 else -1.0 if x < 0 else 0.0)
    for f in (deltaad.floor, deltaad.ceil, deltaad.sign, round, math.floor, math.ceil,
              math.trunc, lambda t: t // 1.0, lambda t: round(t, 1)):
        assert D(f)(x) == 0.0
        check_forward_zero(f, x)

    def mixed(t):
        return t * deltaad.floor(t) + t * math.ceil(t) + deltaad.sign(t) * t * t

    want = math.floor(x) + math.ceil(x) + (1.0 if x > 0 else -1.0) * 2 * x
    assert_close(D(mixed)(x), want, rtol=1e-14, atol=1e-14)


def test_piecewise_constant_values_on_duals():
    seen = {}

    def f(t):
        seen["floor"] = deltaad.floor(t)
        seen["ceil"] = deltaad.ceil(t)
        seen["sign"] = deltaad.sign(t)
        seen["round"] = round(t)
        seen["round1"] = round(t, 1)
        seen["mfloor"] = math.floor(t)
        seen["mceil"] = math.ceil(t)
        seen["trunc"] = math.trunc(t)
        return t * 1.0

    deltaad.grad(f)(-2.36)
    assert seen == {"floor": -3.0, "ceil": -2.0, "sign": -1.0, "round": -2, "round1": -2.4,
                    "mfloor": -3, "mceil": -2, "trunc": -2}
    assert type(seen["round"]) is int and type(seen["mfloor"]) is int
    assert type(seen["floor"]) is float and type(seen["sign"]) is float


@pytest.mark.parametrize("f", [deltaad.floor, deltaad.ceil, deltaad.sign, round, math.floor,
                               lambda t: t // 1.0], ids=["floor", "ceil", "sign", "round",
                                                         "math.floor", "floordiv"])
@pytest.mark.parametrize("x", [-2.0, -0.5, 0.0, 1.0, 3.0])
def test_piecewise_constant_derivative_zero_at_jumps(f, x):
    """Documented: derivative 0 everywhere, also at the jumps."""
    assert D(f)(x) == 0.0
    check_forward_zero(f, x)


def test_sign_values():
    assert deltaad.sign(0.0) == 0.0
    assert deltaad.sign(-0.0) == 0.0
    assert deltaad.sign(-3.0) == -1.0
    assert math.isnan(deltaad.sign(math.nan))
    assert D(lambda t: deltaad.sign(t) * t)(0.0) == 0.0


# --------------------------------------------------------------------------------------------
# Documented values at non-differentiable points and at the edges of domains


def test_abs_at_zero():
    assert D(deltaad.abs)(0.0) == 0.0
    assert D(abs)(0.0) == 0.0
    assert Dfwd(abs, 0.0) == 0.0
    assert D(abs)(-0.0) == 0.0
    assert D(abs)(-2.5) == -1.0 and D(abs)(2.5) == 1.0


def test_hypot_at_origin():
    g = deltaad.grad(deltaad.hypot, argnums=(0, 1))(0.0, 0.0)
    assert g == (0.0, 0.0)
    assert D(lambda t: deltaad.hypot(t, 0.0))(0.0) == 0.0


@pytest.mark.parametrize("fn", [deltaad.fmax, deltaad.fmin])
def test_fmax_fmin_ties(fn):
    assert deltaad.grad(fn, argnums=(0, 1))(1.5, 1.5) == (0.5, 0.5)
    assert D(lambda t: fn(t, t))(1.5) == 1.0
    assert D(lambda t: fn(t, 1.5))(1.5) == 0.5
    assert D(lambda t: fn(1.5, t))(1.5) == 0.5


@pytest.mark.parametrize("fn,ref", [(deltaad.fmax, max), (deltaad.fmin, min)])
def test_fmax_fmin_ignore_nan(fn, ref):
    assert fn(math.nan, 2.0) == 2.0 and fn(2.0, math.nan) == 2.0
    assert D(lambda t: fn(math.nan, t))(2.0) == 1.0
    assert D(lambda t: fn(t, math.nan))(2.0) == 1.0
    assert D(lambda t: fn(t, 5.0))(2.0) == (1.0 if ref is min else 0.0)


def test_clip_boundaries_documented():
    gx = deltaad.grad(deltaad.clip, argnums=(0, 1, 2))
    assert gx(0.0, 0.0, 1.0) == (1.0, 0.0, 0.0)   # at lo: gradient to x
    assert gx(1.0, 0.0, 1.0) == (1.0, 0.0, 0.0)   # at hi: gradient to x
    assert gx(-1.0, 0.0, 1.0) == (0.0, 1.0, 0.0)  # below: to lo
    assert gx(2.0, 0.0, 1.0) == (0.0, 0.0, 1.0)   # above: to hi
    assert gx(0.5, 0.0, 1.0) == (1.0, 0.0, 0.0)


@pytest.mark.parametrize("name,x,want", [
    ("sqrt", 0.0, math.inf),
    ("cbrt", 0.0, math.inf),
    ("arcsin", 1.0, math.inf),
    ("arcsin", -1.0, math.inf),
    ("arccos", 1.0, -math.inf),
    ("arccos", -1.0, -math.inf),
    ("arccosh", 1.0, math.inf),
])
def test_infinite_derivative_at_domain_edge(name, x, want):
    """IEEE infinities, not exceptions, at the edge of a domain (reverse and forward)."""
    f = getattr(deltaad, name)
    v, g = deltaad.value_and_grad(f)(x)
    assert v == getattr(math, {"arcsin": "asin", "arccos": "acos", "arccosh": "acosh"}.get(name, name))(x)
    assert g == want
    assert Dfwd(f, x) == want


@pytest.mark.parametrize("name,want", [("sqrt", -math.inf), ("cbrt", None)])
def test_second_derivative_at_domain_edge(name, want):
    """Nested differentiation at the edge of a domain stays IEEE too (no ZeroDivisionError):
    sqrt'' = -x**-1.5 / 4 -> -inf at 0+; cbrt'' at 0 is infinite or nan (the two-sided limit
    does not exist), but it must not raise."""
    f = getattr(deltaad, name)
    for d2 in (D(D(f))(0.0), Dfwd(D(f), 0.0), D(lambda t: Dfwd(f, t))(0.0)):
        if want is None:
            assert math.isinf(d2) or math.isnan(d2)
        else:
            assert d2 == want


def test_sqrt_power_half_at_zero():
    assert D(lambda t: t ** 0.5)(0.0) == math.inf
    assert D(D(lambda t: t ** 0.5))(0.0) == -math.inf


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_integer_powers_at_zero(k):
    """d^n/dx^n x**k at 0 is k! when n == k and 0 otherwise -- no nan from 0 * inf."""
    f = lambda t: t ** k  # noqa: E731
    d = f
    for n in range(1, 5):
        d = D(d)
        want = float(math.factorial(k)) if n == k else 0.0
        assert d(0.0) == want, (k, n, d(0.0))
    assert D(lambda t: t ** float(k))(0.0) == (1.0 if k == 1 else 0.0)
    assert Dfwd(lambda t: t ** k, 0.0) == (1.0 if k == 1 else 0.0)


def test_power_exponent_derivative_documented():
    """d/db a**b at a == 0 is 0; with a < 0 (integer b) it is nan."""
    assert D(lambda b: 0.0 ** b)(2.0) == 0.0
    assert D(lambda b: deltaad.power(0.0, b))(2.0) == 0.0
    v, g = deltaad.value_and_grad(lambda b: (-2.0) ** b)(3.0)
    assert v == -8.0 and math.isnan(g)
    # a < 0 with an integer exponent is fine with respect to a
    assert D(lambda a: a ** 3.0)(-2.0) == 12.0
    assert D(lambda a: a ** 3)(-2.0) == 12.0


# --------------------------------------------------------------------------------------------
# Domain errors: as math does for floats


DOMAIN = [
    ("log", math.log, -1.0),
    ("log", math.log, 0.0),
    ("log2", math.log2, -1.0),
    ("log10", math.log10, -1.0),
    ("log1p", math.log1p, -2.0),
    ("sqrt", math.sqrt, -1.0),
    ("arcsin", math.asin, 1.5),
    ("arccos", math.acos, -1.5),
    ("arccosh", math.acosh, 0.5),
    ("arctanh", math.atanh, 1.0),
    ("arctanh", math.atanh, -2.0),
    ("exp", math.exp, 1000.0),  # a range error (OverflowError), like math.exp
    ("cosh", math.cosh, 1000.0),
]


@pytest.mark.parametrize("name,ref,x", DOMAIN, ids=["%s(%r)" % (d[0], d[2]) for d in DOMAIN])
def test_domain_errors_like_math(name, ref, x):
    with pytest.raises((ValueError, OverflowError)) as want:
        ref(x)
    f = getattr(deltaad, name)
    with pytest.raises(want.type, match="^%s$" % str(want.value)):
        f(x)
    with pytest.raises(want.type, match="^%s$" % str(want.value)):
        D(f)(x)
    with pytest.raises(want.type, match="^%s$" % str(want.value)):
        Dfwd(f, x)
    assert deltaad.open_traces() == []


def test_log_of_negative_dual_raises_value_error():
    with pytest.raises(ValueError, match="math domain error"):
        deltaad.grad(deltaad.log)(-1.0)


def test_negative_to_non_integer_power_raises():
    with pytest.raises(ValueError, match="negative number raised to a non-integer power"):
        D(lambda t: t ** 0.5)(-1.0)
    with pytest.raises(ValueError, match="non-integer power"):
        D(lambda t: (-1.0) ** t)(0.5)
    with pytest.raises(ValueError, match="non-integer power"):
        Dfwd(lambda t: t ** 1.5, -4.0)
    with pytest.raises(ValueError, match="non-integer power"):
        deltaad.power(-8.0, 1.0 / 3.0)
    with pytest.raises(ValueError, match="non-integer power"):
        D(lambda t: deltaad.power(t, 0.25))(-1.0)


def test_division_by_zero_like_floats():
    with pytest.raises(ZeroDivisionError):
        D(lambda t: t / 0.0)(1.0)
    with pytest.raises(ZeroDivisionError):
        D(lambda t: 1.0 / t)(0.0)
    with pytest.raises(ZeroDivisionError):
        D(lambda t: t % 0.0)(1.0)
    with pytest.raises(ZeroDivisionError):
        D(lambda t: t // 0)(1.0)
    with pytest.raises(ZeroDivisionError):
        D(lambda t: t ** -1)(0.0)


# --------------------------------------------------------------------------------------------
# Binary functions


def _apart(lo, hi, gap):
    return st.tuples(floats(lo, hi), floats(lo, hi)).filter(lambda p: abs(p[0] - p[1]) > gap)


def _atan2_ok(p):
    y, x = p
    return math.hypot(x, y) > 0.1 and not (x < 0 and abs(y) < 0.05)


BINARY = [
    ("arctan2", math.atan2, st.tuples(floats(-5, 5), floats(-5, 5)).filter(_atan2_ok), True),
    ("hypot", math.hypot, st.tuples(floats(-5, 5), floats(-5, 5)).filter(
        lambda p: math.hypot(*p) > 0.1), True),
    ("logaddexp", ref_logaddexp, st.tuples(floats(-20, 20), floats(-20, 20)), False),
    ("logaddexp2", lambda a, b: float(np.logaddexp2(a, b)),
     st.tuples(floats(-20, 20), floats(-20, 20)), False),
    ("power", lambda a, b: a ** b, st.tuples(floats(0.1, 10), floats(-3, 3)), True),
    ("fmax", max, _apart(-5, 5, 0.01), True),
    ("fmin", min, _apart(-5, 5, 0.01), True),
    ("copysign", math.copysign, st.tuples(away_from_zero(0.05, 5), away_from_zero(0.05, 5)), True),
    # (away from the jump; the derivative in h0 where x = 0 is tested apart)
    ("heaviside", lambda x, h: 0.0 if x < 0 else 1.0,
     st.tuples(away_from_zero(0.05, 5), floats(-5, 5)), True),
]
if _special is not None:
    _pos = st.tuples(floats(0.1, 5), floats(0.1, 5))
    BINARY += [
        ("beta", _scipy_ref("beta"), _pos, True), ("betaln", _scipy_ref("betaln"), _pos, True),
        ("xlogy", _scipy_ref("xlogy"), st.tuples(floats(-5, 5), floats(0.1, 5)), False),
        ("xlog1py", _scipy_ref("xlog1py"), st.tuples(floats(-5, 5), floats(-0.9, 5)), False),
        ("powm1", _scipy_ref("powm1"), st.tuples(floats(0.1, 5), floats(-3, 3)), True),
        ("poch", _scipy_ref("poch"), st.tuples(floats(0.5, 5), floats(-0.4, 3)), True),
        ("kl_div", _scipy_ref("kl_div"), _pos, True),
        ("rel_entr", _scipy_ref("rel_entr"), _pos, True),
        # (away from the kink |r| = delta of the second derivative)
        ("huber", _scipy_ref("huber"), st.tuples(floats(0.1, 5), floats(-5, 5)).filter(
            lambda p: abs(abs(p[1]) - p[0]) > 0.05), True),
        ("pseudo_huber", _scipy_ref("pseudo_huber"), st.tuples(floats(0.1, 5), floats(-5, 5)),
         True),
        ("boxcox", _scipy_ref("boxcox"), st.tuples(floats(0.1, 5), floats(-2, 2)), True),
        ("boxcox1p", _scipy_ref("boxcox1p"), st.tuples(floats(-0.9, 5), floats(-2, 2)), True),
        # (scipy's inv_boxcox is 1.0 where 0 < |lmbda| is so small that lmbda * y underflows,
        # not exp(y): a flat function its finite differences see, found at lmbda = 5e-324)
        ("inv_boxcox", _scipy_ref("inv_boxcox"), st.tuples(floats(-2, 2), floats(-1, 1)).filter(
            lambda p: 1.0 + p[0] * p[1] > 0.1 and (p[1] == 0.0 or abs(p[1]) >= 1e-150)), True),
        # (scipy's inv_boxcox1p is y itself where 0 < |lmbda y| < 1e-154, not expm1(y))
        ("inv_boxcox1p", _scipy_ref("inv_boxcox1p"), st.tuples(floats(-2, 2), floats(-1, 1))
         .filter(lambda p: 1.0 + p[0] * p[1] > 0.1 and (p[0] * p[1] == 0.0 and 0.0 in p or
                                                        abs(p[0] * p[1]) >= 1e-150)), True),
        ("agm", _scipy_ref("agm"), _pos, True),
        ("owens_t", _scipy_ref("owens_t"), st.tuples(floats(-4, 4), floats(-4, 4)), True),
        ("binom", _scipy_ref("binom"), st.tuples(floats(1, 10), floats(0.1, 5)).filter(
            lambda p: p[0] - p[1] > -0.5), True),
        # (m away from 0, where the m-partial's closed form cancels)
        ("ellipkinc", _scipy_ref("ellipkinc"), st.tuples(floats(-1.5, 1.5), floats(-2, 0.8))
         .filter(lambda p: abs(p[1]) > 0.02 and abs(p[0]) > 0.05), True),
        ("ellipeinc", _scipy_ref("ellipeinc"), st.tuples(floats(-1.5, 1.5), floats(-2, 0.8))
         .filter(lambda p: abs(p[1]) > 0.02 and abs(p[0]) > 0.05), True),
    ]
BINARY_IDS = [b[0] for b in BINARY]


def test_every_binary_entry_is_tested():
    missing = [e.name for e in TABLE if e.arity == 2 and e.name not in BINARY_IDS
               and not ((e.needs == "scipy" or e.name in ("xlogy", "xlog1py"))
                        and _special is None)]
    assert not missing, "add %s with an independent reference to BINARY" % missing


@pytest.mark.parametrize("name,ref,dom,exact", BINARY, ids=BINARY_IDS)
def test_binary_function(name, ref, dom, exact):
    f = getattr(deltaad, name)

    @scaled(0.6)
    @given(dom)
    def prop(ab):
        a, b = ab
        want = ref(a, b)
        check_value(f(a, b), want, exact, name)
        v, (ga, gb) = deltaad.value_and_grad(f, argnums=(0, 1))(a, b)
        check_value(v, want, exact, name + " on duals")
        for k, g in ((0, ga), (1, gb)):
            h = step_for(ab[k])
            assert_close(g, fd_partial(ref, ab, k, h), rtol=1e-5, atol=fd_atol(want, h),
                         what="d%s/d%d%r" % (name, k, ab))
        # forward mode, exactly
        assert deltaad.jvp(f, (a, b), (1.0, 0.0))[1] == ga
        assert deltaad.jvp(f, (a, b), (0.0, 1.0))[1] == gb
        # one operand a constant (float, int, numpy scalar): the same partial, exactly
        for c in (b, np.float64(b)):
            assert D(lambda t: f(t, c))(a) == ga
            assert Dfwd(lambda t: f(t, c), a) == ga
        for c in (a, np.float64(a)):
            assert D(lambda t: f(c, t))(b) == gb
        # second derivatives: the Hessian against finite differences of the gradient
        H = deltaad.hessian(lambda p: f(p[0], p[1]))([a, b])
        g2 = deltaad.grad(lambda p: f(p[0], p[1]))
        for k in range(2):
            h = step_for(ab[k])
            for i in range(2):
                col = fd_partial(lambda s, t: g2([s, t])[i], ab, k, h)
                assert_close(H[i][k], col, rtol=1e-5, atol=fd_atol(max(map(abs, g2([a, b]))), h),
                             what="H%s[%d][%d]" % (name, i, k))
        assert_close(H[0][1], H[1][0], rtol=1e-12, atol=1e-13 * (1 + abs(H[0][0]) + abs(H[1][1])),
                     what="symmetry")

    prop()


def test_heaviside_at_the_jump():
    """heaviside(0, h0) is h0: derivative 1 in h0 there (0 elsewhere), 0 in x."""
    assert deltaad.grad(deltaad.heaviside, argnums=(0, 1))(0.0, 0.3) == (0.0, 1.0)
    assert deltaad.grad(deltaad.heaviside, argnums=(0, 1))(2.0, 0.3) == (0.0, 0.0)
    assert deltaad.grad(lambda h: np.heaviside(0.0, h))(0.7) == 1.0


def test_sinc_at_zero():
    """sinc'(0) = 0 and sinc''(0) = -pi^2 / 3, from the power series near 0."""
    assert deltaad.grad(deltaad.sinc)(0.0) == 0.0
    assert_close(deltaad.grad(deltaad.grad(deltaad.sinc))(0.0), -math.pi ** 2 / 3, rtol=1e-14,
                 atol=0)
    assert_close(deltaad.hessian(lambda x: np.sinc(x).sum())(np.array([0.0]))[0, 0],
                 -math.pi ** 2 / 3, rtol=1e-14, atol=0)


def test_binary_functions_with_int_constants():
    assert D(lambda t: deltaad.hypot(t, 4))(3.0) == 0.6
    assert D(lambda t: deltaad.hypot(4, t))(3.0) == 0.6
    assert D(lambda t: deltaad.power(t, 3))(2.0) == 12.0
    assert D(lambda t: deltaad.power(2, t))(3.0) == 8.0 * math.log(2.0)
    assert D(lambda t: deltaad.arctan2(t, 1))(0.0) == 1.0
    assert D(lambda t: deltaad.fmax(t, 1))(2.0) == 1.0
    assert D(lambda t: deltaad.fmin(np.float64(1.0), t))(2.0) == 0.0


@given(st.tuples(floats(-5, 5), floats(-5, 5), floats(-5, 5)).map(sorted).filter(
    lambda t: t[2] - t[0] > 0.1), st.integers(0, 2))
def test_clip(bounds, where):
    lo, mid, hi = bounds
    # x below, inside or above [lo, hi], a margin away from both
    x = {0: lo - 0.5 - abs(mid), 1: (lo + hi) / 2.0, 2: hi + 0.5 + abs(mid)}[where]
    want = min(max(x, lo), hi)
    assert deltaad.clip(x, lo, hi) == want
    v, g = deltaad.value_and_grad(deltaad.clip, argnums=(0, 1, 2))(x, lo, hi)
    assert v == want
    ref = lambda a, b, c: min(max(a, b), c)  # noqa: E731
    args = (x, lo, hi)
    for k in range(3):
        assert_close(g[k], fd_partial(ref, args, k, 1e-4), rtol=1e-6, atol=1e-9)
    assert deltaad.jvp(deltaad.clip, args, (1.0, 0.0, 0.0))[1] == g[0]
    assert deltaad.jvp(deltaad.clip, args, (0.0, 1.0, 1.0))[1] == g[1] + g[2]


# --------------------------------------------------------------------------------------------
# Operators, both operand orders, with float, int and numpy scalar constants

CONSTS = [2.5, 3, np.float64(1.75), np.float32(0.75), np.int64(2), -2, -1.5]
CONST_IDS = ["2.5", "int3", "f64_1.75", "f32_0.75", "i64_2", "int-2", "-1.5"]

OPERATORS = [
    ("+", operator.add), ("-", operator.sub), ("*", operator.mul), ("/", operator.truediv),
    ("//", operator.floordiv), ("%", operator.mod), ("**", operator.pow),
]


def _op_domain_ok(sym, a, b):
    """Points where ``a sym b`` (floats) is defined and smooth in both arguments."""
    if sym in ("/", "//", "%") and abs(b) < 0.1:
        return False
    if sym in ("//", "%"):
        # stay away from the jumps of floor(a / b) by more than a finite-difference stencil
        # (2 steps in either argument) can move a / b
        q = a / b
        frac = q - math.floor(q)
        reach = 2 * step_for(a) / abs(b) + 2 * abs(a) * step_for(b) / (b * b)
        margin = 0.01 + 3 * reach
        if not margin < frac < 1 - margin:
            return False
    if sym == "**":
        if a < 0.05:
            return False  # a negative base is tested separately (integer exponents)
        if abs(b * math.log(a)) > 50:
            return False
    return True


@pytest.mark.parametrize("c", CONSTS, ids=CONST_IDS)
@pytest.mark.parametrize("sym,op", OPERATORS, ids=[o[0] for o in OPERATORS])
@pytest.mark.parametrize("order", ["dual_op_c", "c_op_dual"])
def test_operator_with_constant(order, sym, op, c):
    cf = float(c)
    if order == "dual_op_c":
        f = lambda t: op(t, c)  # noqa: E731
        ref = lambda t: op(t, cf)  # noqa: E731
        ok = lambda t: _op_domain_ok(sym, t, cf)  # noqa: E731
    else:
        f = lambda t: op(c, t)  # noqa: E731
        ref = lambda t: op(cf, t)  # noqa: E731
        ok = lambda t: _op_domain_ok(sym, cf, t)  # noqa: E731
    if sym == "**" and order == "c_op_dual" and cf <= 0:
        pytest.skip("negative base with a dual exponent: see test_negative_base_power")

    @scaled(0.25)
    @given(floats(-6, 6))
    def prop(x):
        assume(ok(x))
        want = ref(x)
        seen = []

        def g(t):
            r = f(t)
            seen.append(type(r))
            return r

        v, d = deltaad.value_and_grad(g)(x)
        # the value is the plain program's, in its type: with a numpy scalar constant numpy
        # computes it (np.float32 stays float32), with an int or a float Python does
        plain = f(x)
        assert type(v) is type(plain) and bits(v) == bits(plain)
        if not isinstance(c, np.generic):  # a numpy constant: numpy's value, checked above
            assert v == want  # (x ** np.int64(2) is numpy's x * x, not Python's pow)
        if sym == "//":
            assert d == 0.0
        else:
            assert seen[-1] is Dual, "%r %s %r gave %r, not a Dual" % (
                *(("x", sym, c) if order == "dual_op_c" else (c, sym, "x")), seen[-1])
            check_fd(d, ref, x, what="%s %s" % (order, sym))
        assert Dfwd(f, x) == d
        # second derivative against finite differences of the first
        df = D(f)
        h = step_for(x)
        assert_close(D(df)(x), fd(df, x, h), rtol=1e-5, atol=fd_atol(d, h))

    prop()


@pytest.mark.parametrize("sym,op", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_operator_dual_dual(sym, op):
    @scaled(0.6)
    @given(floats(-6, 6), floats(-6, 6))
    def prop(a, b):
        assume(_op_domain_ok(sym, a, b))
        want = op(a, b)
        v, (ga, gb) = deltaad.value_and_grad(op, argnums=(0, 1))(a, b)
        assert v == want
        for k, g in ((0, ga), (1, gb)):
            h = step_for((a, b)[k])
            assert_close(g, fd_partial(op, (a, b), k, h), rtol=1e-5, atol=fd_atol(want, h),
                         what="d(a %s b)/d%d" % (sym, k))
        assert deltaad.jvp(op, (a, b), (1.0, 0.0))[1] == ga
        assert deltaad.jvp(op, (a, b), (0.0, 1.0))[1] == gb
        # the same dual on both sides (a // a and a % a sit on a jump: not here)
        if sym in ("//", "%") or not _op_domain_ok(sym, a, a):
            return
        gs = D(lambda t: op(t, t))(a)
        assert_close(gs, fd(lambda t: op(t, t), a), rtol=1e-5, atol=fd_atol(op(a, a), step_for(a)))

    prop()


@given(floats(-6, 6))
def test_unary_operators(x):
    assume(abs(x) > 0.01)
    s = 1.0 if x > 0 else -1.0
    assert deltaad.value_and_grad(lambda t: -t)(x) == (-x, -1.0)
    assert deltaad.value_and_grad(lambda t: +t)(x) == (x, 1.0)
    assert deltaad.value_and_grad(abs)(x) == (abs(x), s)
    assert deltaad.value_and_grad(lambda t: abs(-t) * t)(x) == (abs(x) * x, 2 * abs(x))
    assert Dfwd(lambda t: -t, x) == -1.0
    assert Dfwd(abs, x) == s
    assert D(D(lambda t: -(t * t)))(x) == -2.0


@pytest.mark.parametrize("k", [2, 3, -1, -2, 5])
@given(x=away_from_zero(0.1, 4))
def test_negative_base_integer_power(k, x):
    """Integer exponents (int or integral float) are fine with a negative base; the value is
    the plain program's (with an np.int64 exponent numpy computes it, in the last bit its own)."""
    for e in (k, float(k), np.int64(k)):
        v, g = deltaad.value_and_grad(lambda t: t ** e)(x)
        assert v == x ** e and type(v) is type(x ** e)
        assert_close(g, k * x ** (k - 1), rtol=1e-14, atol=1e-300)
        assert Dfwd(lambda t: t ** e, x) == g
        assert_close(D(D(lambda t: t ** e))(x), k * (k - 1) * x ** (k - 2), rtol=1e-13, atol=1e-300)


def test_negative_base_power():
    """A negative constant base: integral dual exponents have a value, and d/db is nan."""
    v, g = deltaad.value_and_grad(lambda t: (-2) ** t)(2.0)
    assert v == 4.0 and math.isnan(g)
    with pytest.raises(ValueError):
        D(lambda t: (-1.5) ** t)(0.5)


def test_numpy_scalar_operands_give_duals():
    """``np.float64(2.0) * x`` (numpy on the left) is a Dual, as are the other orders/types."""
    kinds = []

    def f(t):
        terms = [np.float64(2.0) * t, t * np.float64(2.0), np.float32(2.0) + t,
                 np.float64(3.0) - t, np.float64(1.0) / t, np.int64(2) * t,
                 np.float64(2.0) ** t, t ** np.float64(2.0), np.float32(5.0) % t]
        kinds.extend(type(r) for r in terms)
        s = 0.0
        for r in terms:
            s = s + r
        return s

    x = 1.5
    g = D(f)(x)
    assert all(k is Dual for k in kinds), kinds
    want = 2 + 2 + 1 - 1 - 1 / x ** 2 + 2 + math.log(2.0) * 2.0 ** x + 2 * x - math.floor(5.0 / x)
    assert_close(g, want, rtol=1e-14, atol=0)


def test_mod_derivatives():
    # a % b == a - b * floor(a / b)
    assert deltaad.grad(operator.mod, argnums=(0, 1))(7.5, 2.0) == (1.0, -3.0)
    assert deltaad.grad(operator.mod, argnums=(0, 1))(-7.5, 2.0) == (1.0, 4.0)
    assert deltaad.grad(operator.mod, argnums=(0, 1))(7.5, -2.0) == (1.0, 4.0)
    assert deltaad.value_and_grad(lambda t: t % 2.0)(-7.5) == (-7.5 % 2.0, 1.0)
