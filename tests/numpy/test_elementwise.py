"""The elementwise rules (deltaad.numpy.elementwise) on array duals: the table's functions,
arithmetic with broadcasting, choices.

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
import pytest
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, away, bshapes, seeds, shapes, uniform

family = Family()
op = family.op


# --------------------------------------------------------------------------------------------
# Elementwise functions of one argument


UNARY = {
    "sin": (np.sin, -3, 3), "cos": (np.cos, -3, 3), "tan": (np.tan, -1.2, 1.2),
    "arcsin": (np.arcsin, -0.9, 0.9), "arccos": (np.arccos, -0.9, 0.9), "arctan": (np.arctan, -3, 3),
    "sinh": (np.sinh, -2, 2), "cosh": (np.cosh, -2, 2), "tanh": (np.tanh, -2, 2),
    "arcsinh": (np.arcsinh, -3, 3), "arccosh": (np.arccosh, 1.2, 3), "arctanh": (np.arctanh, -0.8, 0.8),
    "exp": (np.exp, -2, 2), "expm1": (np.expm1, -2, 2), "exp2": (np.exp2, -2, 2),
    "log": (np.log, 0.3, 3), "log1p": (np.log1p, -0.6, 3), "log2": (np.log2, 0.3, 3),
    "log10": (np.log10, 0.3, 3), "sqrt": (np.sqrt, 0.3, 3), "cbrt": (np.cbrt, 0.3, 3),
    "square": (np.square, -2, 2), "negative": (np.negative, -2, 2), "positive": (np.positive, -2, 2),
    "deg2rad": (np.deg2rad, -2, 2), "rad2deg": (np.rad2deg, -2, 2), "conjugate": (np.conjugate, -2, 2),
    "deltaad.erf": (d.erf, -2, 2), "deltaad.erfc": (d.erfc, -2, 2), "deltaad.sigmoid": (d.sigmoid, -4, 4),
    "deltaad.softplus": (d.softplus, -4, 4), "deltaad.sin": (d.sin, -3, 3),
    "operator -x": (lambda x: -x, -2, 2), "x ** 3": (lambda x: x ** 3, -2, 2),
    "x ** 0.5": (lambda x: x ** 0.5, 0.3, 3), "2.0 ** x": (lambda x: 2.0 ** x, -2, 2),
    "1 / x**2": (lambda x: 1 / x ** 2, 0.5, 2),
}


def _unary(fn, lo, hi):
    @st.composite
    def strat(draw):
        rng = np.random.default_rng(draw(seeds))
        return fn, [uniform(rng, draw(shapes()), lo, hi)]

    return strat


for _n, (_f, _lo, _hi) in UNARY.items():
    op(_n)(_unary(_f, _lo, _hi))


@op("absolute")
@st.composite
def _abs(draw):
    rng = np.random.default_rng(draw(seeds))
    f = draw(st.sampled_from([np.abs, np.fabs, abs, d.abs]))
    return f, [away(rng, draw(shapes()))]


@op("reciprocal")
@st.composite
def _reciprocal(draw):
    rng = np.random.default_rng(draw(seeds))
    return np.reciprocal, [away(rng, draw(shapes()), 0.3, 2)]

# --------------------------------------------------------------------------------------------
# Elementwise functions of two arguments, with broadcasting


BINARY = {
    "add": (np.add, (-2, 2), (-2, 2)), "subtract": (np.subtract, (-2, 2), (-2, 2)),
    "multiply": (np.multiply, (-2, 2), (-2, 2)), "x + y": (lambda x, y: x + y, (-2, 2), (-2, 2)),
    "x - y": (lambda x, y: x - y, (-2, 2), (-2, 2)), "x * y": (lambda x, y: x * y, (-2, 2), (-2, 2)),
    "power": (np.power, (0.3, 2), (-2, 2)), "x ** y": (lambda x, y: x ** y, (0.3, 2), (-2, 2)),
    "float_power": (np.float_power, (0.3, 2), (-2, 2)), "arctan2": (np.arctan2, (-2, 2), (0.3, 2)),
    "hypot": (np.hypot, (0.3, 2), (-2, 2)), "logaddexp": (np.logaddexp, (-2, 2), (-2, 2)),
    "logaddexp2": (np.logaddexp2, (-2, 2), (-2, 2)),
    "remainder": (np.remainder, (0.1, 0.9), (1.1, 2)), "fmod": (np.fmod, (0.1, 0.9), (1.1, 2)),
    # (the quotient is a plain array: the check sees the remainder, scaled by it)
    "divmod": (lambda x, y: np.divmod(x, y)[1] * (1.0 + np.divmod(x, y)[0]), (2.3, 2.6), (1.35, 2)),
    "divmod(x, y)": (lambda x, y: divmod(x, y)[1], (0.1, 0.9), (1.1, 2)),
    "deltaad.hypot": (d.hypot, (0.3, 2), (-2, 2)), "deltaad.logaddexp": (d.logaddexp, (-2, 2), (-2, 2)),
}


def _binary(fn, ra, rb):
    @st.composite
    def strat(draw):
        rng = np.random.default_rng(draw(seeds))
        sa, sb = bshapes(draw)
        return fn, [uniform(rng, sa, *ra), uniform(rng, sb, *rb)]

    return strat


for _n, (_f, _ra, _rb) in BINARY.items():
    op(_n)(_binary(_f, _ra, _rb))


@op("divide")
@st.composite
def _divide(draw):
    rng = np.random.default_rng(draw(seeds))
    sa, sb = bshapes(draw)
    f = draw(st.sampled_from([np.divide, lambda x, y: x / y, np.true_divide]))
    return f, [uniform(rng, sa), away(rng, sb, 0.3, 2)]


@op("x * x (one operand twice)")
@st.composite
def _square_same(draw):
    """Both factors the same dual: the vjp computes the shared product once (array_rules)."""
    rng = np.random.default_rng(draw(seeds))
    shape = draw(shapes())
    f = draw(st.sampled_from([
        lambda x: x * x,
        lambda x: np.multiply(np.sin(x), np.sin(x)),
        lambda x: (x * x) * (x * x),
        lambda x: np.sum(x * x, axis=-1) if np.ndim(x) else x * x,
    ]))
    return f, [uniform(rng, shape)]


@op("maximum/minimum/fmax/fmin")
@st.composite
def _choose2(draw):
    rng = np.random.default_rng(draw(seeds))
    sa, sb = bshapes(draw)
    f = draw(st.sampled_from([np.maximum, np.minimum, np.fmax, np.fmin, d.fmax, d.fmin]))
    # on two interleaved grids: |a - b| >= 0.08 everywhere, so no ties and no kinks nearby
    a = rng.integers(-6, 6, sa) * 0.25 + rng.uniform(0, 0.02, sa)
    b = rng.integers(-6, 6, sb) * 0.25 + 0.125 + rng.uniform(0, 0.02, sb)
    return f, [a, b]


@op("scalar dual with array")
@st.composite
def _scalar_mix(draw):
    rng = np.random.default_rng(draw(seeds))
    shape = draw(shapes(min_dims=1, min_side=1))
    f = draw(st.sampled_from([
        lambda x: x.ravel()[0] * x,
        lambda x: x / (1.0 + x.ravel()[-1] ** 2),
        lambda x: np.sin(x.ravel()[0]) + x,
        lambda x: x ** 2 - np.sum(x).item(),
        lambda x: d.stack([x.ravel()[0], x.ravel()[-1] * 2.0]) * np.sum(x),
        lambda x: np.float64(3.0) * x + np.array(2.0) * x,
    ]))
    return f, [uniform(rng, shape)]


# --------------------------------------------------------------------------------------------
# sinc, copysign, heaviside, modf, ldexp, frexp, interp, nan_to_num, piecewise


op("sinc")(_unary(np.sinc, -3, 3))
op("modf")(_unary(lambda x: np.modf(x)[0] + 0.5 * np.modf(x)[1], 0.1, 0.9))
op("frexp")(_unary(lambda x: np.frexp(x)[0] * np.frexp(x)[1], 0.6, 0.9))


@op("copysign/heaviside")
@st.composite
def _copysign(draw):
    rng = np.random.default_rng(draw(seeds))
    sa, sb = bshapes(draw)
    f = draw(st.sampled_from([
        np.copysign, lambda a, b: np.heaviside(np.round(a), b) * b,
    ]))
    return f, [away(rng, sa, 0.6, 2.4) + 0.0, away(rng, sb)]


@op("ldexp")
@st.composite
def _ldexp(draw):
    rng = np.random.default_rng(draw(seeds))
    s, sn = bshapes(draw)
    n = rng.integers(-3, 4, sn)
    return (lambda x: np.ldexp(x, n)), [uniform(rng, s)]


@op("interp")
@st.composite
def _interp(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(1, 5))
    xp = np.sort(rng.permutation(10)[:k] * 0.5)
    fp = uniform(rng, (k,))
    s = draw(shapes())
    # x away from the knots (where the slope jumps), inside and outside [xp[0], xp[-1]]
    x = np.floor(rng.uniform(-2, 6, s)) * 0.5 + 0.25
    lr = draw(st.sampled_from([{}, {"left": -3.0}, {"right": 2.0}, {"left": 1.0, "right": 0.5}]))
    which = draw(st.sampled_from(["x", "fp", "both"]))
    if which == "x":
        return (lambda t: np.interp(t, xp, fp, **lr)), [x]
    if which == "fp":
        return (lambda f: np.interp(x, xp, f, **lr)), [fp]
    return (lambda t, f: np.interp(t, xp, f, **lr)), [x, fp]


@op("nan_to_num")
@st.composite
def _nan_to_num(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes())
    special = rng.choice([np.nan, np.inf, -np.inf, 0.0], size=s, p=[0.2, 0.2, 0.2, 0.4])
    # (finite replacements: numpy's default, the largest float, would overflow a finite difference)
    kw = draw(st.sampled_from([{"posinf": 5.0, "neginf": -5.0}, {"nan": 1.5, "posinf": 9.0, "neginf": -9.0}]))
    return (lambda x: np.nan_to_num(x + special, **kw)), [uniform(rng, s)]


@op("piecewise")
@st.composite
def _piecewise(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_side=1))
    # at least 0.15 from the conditions' thresholds 0, 0.5 and 1 (piecewise jumps there)
    x = rng.integers(-4, 4, s) * 0.5 + 0.25 + rng.uniform(-0.1, 0.1, s)
    f = draw(st.sampled_from([
        lambda x: np.piecewise(x, [x < 0, x > 1], [lambda v: v ** 2, np.sin, 2.5]),
        lambda x: np.piecewise(x, [x < 0], [lambda v: -v, lambda v: v * 3.0]),
        lambda x: np.piecewise(x, [x > 0.5], [np.exp]),
    ]))
    return f, [x]


try:
    from scipy import special as _special
except ImportError:  # scipy is optional: its functions are tested when it is installed
    _special = None

if _special is not None:
    SCIPY_UNARY = {
        "gammaln": (0.3, 4), "gamma": (0.3, 3), "digamma": (0.3, 4), "psi": (0.3, 4),
        "erf": (-2, 2), "erfc": (-2, 2), "erfinv": (-0.9, 0.9), "erfcinv": (0.1, 1.9),
        "expit": (-4, 4), "logit": (0.1, 0.9), "log_expit": (-4, 4), "entr": (0.1, 3),
        "ndtr": (-3, 3), "log_ndtr": (-5, 3), "ndtri": (0.1, 0.9), "i0": (-3, 3),
        "i0e": (0.1, 3), "i1": (-3, 3), "i1e": (0.1, 3), "j0": (-5, 5), "j1": (-5, 5),
        "y0": (0.3, 5), "y1": (0.3, 5), "log1p": (-0.6, 3), "expm1": (-2, 2),
        "exp2": (-2, 2), "exp10": (-1, 1), "cbrt": (0.3, 3),
    }
    for _n, (_lo, _hi) in SCIPY_UNARY.items():
        op("scipy.special." + _n)(_unary(getattr(_special, _n), _lo, _hi))
    for _k in range(4):
        op("scipy.special.polygamma(%d, x)" % _k)(
            _unary(lambda x, k=_k: _special.polygamma(k, x), 0.5, 3))
    # functions of static orders or parameters (not differentiated), also arrays of them
    # broadcast against x: (name, orders as scalars or arrays, x's range)
    _ORDERS = np.array([0.5, 1.0, 2.5])
    SCIPY_ORDERED = {
        "jv": ((1.5,), (0.5, 4)), "yv": ((0.5,), (0.5, 4)), "yn": ((2,), (0.5, 4)),
        "iv": ((_ORDERS,), (0.2, 3)), "ive": ((1.5,), (0.1, 3)), "kv": ((_ORDERS,), (0.3, 3)),
        "kve": ((1.5,), (0.3, 3)), "gammainc": ((_ORDERS,), (0.1, 4)),
        "gammaincc": ((2.5,), (0.1, 4)), "gammaincinv": ((_ORDERS,), (0.1, 0.9)),
        "gammainccinv": ((1.5,), (0.1, 0.9)), "expn": ((np.array([0, 1, 3]),), (0.2, 3)),
        "betainc": ((_ORDERS, 1.5), (0.1, 0.9)), "betaincinv": ((2.0, _ORDERS), (0.1, 0.9)),
        "chdtr": ((_ORDERS,), (0.1, 4)), "chdtrc": ((2.5,), (0.1, 4)),
        "chdtri": ((_ORDERS,), (0.1, 0.9)), "fdtr": ((_ORDERS, 3.5), (0.1, 4)),
        "fdtrc": ((2.5, _ORDERS), (0.1, 4)), "fdtri": ((4.5, 6.5), (0.1, 0.9)),
        "stdtr": ((_ORDERS,), (-3, 3)), "stdtrit": ((4.5,), (0.1, 0.9)),
        "pdtr": ((np.array([0.0, 1.0, 3.5]),), (0.2, 4)), "pdtrc": ((2.0,), (0.2, 4)),
        "betaincc": ((_ORDERS, 1.5), (0.1, 0.9)), "betainccinv": ((2.0, _ORDERS), (0.1, 0.9)),
    }
    def _orders_like(k, x):  # an array of orders takes x's shape
        return [np.resize(o, np.shape(x)) if isinstance(o, np.ndarray) else o for o in k]

    for _n, (_k, (_lo, _hi)) in SCIPY_ORDERED.items():
        op("scipy.special.%s(orders, x)" % _n)(
            _unary(lambda x, f=getattr(_special, _n), k=_k: f(*_orders_like(k, x), x), _lo, _hi))
    for _n, (_lo, _hi) in (("exp1", (0.2, 3)), ("expi", (0.2, 3)), ("erfcx", (-2, 3)),
                           ("dawsn", (-3, 3)), ("spence", (0.1, 3)), ("rgamma", (0.2, 3)),
                           ("cosm1", (-3, 3)), ("ndtri_exp", (-3, -0.1))):
        op("scipy.special." + _n)(_unary(getattr(_special, _n), _lo, _hi))
    for _n, _ra, _rb in (("beta", (0.3, 2), (0.3, 2)), ("betaln", (0.3, 2), (0.3, 2)),
                         ("xlogy", (-2, 2), (0.2, 2)), ("xlog1py", (-2, 2), (-0.6, 2)),
                         ("powm1", (0.3, 2), (-2, 2)), ("poch", (0.5, 3), (-0.4, 2))):
        op("scipy.special." + _n)(_binary(getattr(_special, _n), _ra, _rb))

    # more of scipy.special: functions of x (then of static orders, some given as arrays
    # broadcast against x), and of two differentiable arguments
    for _n, (_lo, _hi) in (("k0", (0.3, 3)), ("k1", (0.3, 3)), ("k0e", (0.3, 3)),
                           ("k1e", (0.3, 3)), ("exprel", (-2, 2)), ("erfi", (-2, 2)),
                           ("loggamma", (0.3, 4)), ("sindg", (-90, 90)), ("cosdg", (-90, 90)),
                           ("tandg", (-60, 60)), ("cotdg", (20, 160)), ("ellipk", (-2, 0.9)),
                           ("ellipe", (-2, 0.9)), ("ellipkm1", (0.05, 2)),
                           ("kolmogorov", (0.2, 2)), ("kolmogi", (0.1, 0.9))):
        op("scipy.special." + _n)(_unary(getattr(_special, _n), _lo, _hi))
    _DEGREES = np.array([0, 1, 3])
    for _n, (_k, (_lo, _hi)) in {
        "kn": ((_DEGREES,), (0.3, 3)), "jve": ((1.5,), (0.5, 4)), "yve": ((_ORDERS,), (0.5, 4)),
        "hyp2f1": ((_ORDERS, 1.5, 2.5), (-2, 0.8)), "hyp1f1": ((0.5, _ORDERS), (-2, 2)),
        "hyp0f1": ((_ORDERS,), (-2, 2)), "eval_legendre": ((_DEGREES,), (-2, 2)),
        "eval_chebyt": ((_DEGREES,), (-2, 2)), "eval_chebyu": ((_DEGREES,), (-2, 2)),
        "eval_hermite": ((_DEGREES,), (-2, 2)), "eval_hermitenorm": ((_DEGREES,), (-2, 2)),
        "eval_laguerre": ((_DEGREES,), (-2, 2)), "eval_genlaguerre": ((_ORDERS, 1.5), (-2, 2)),
        "eval_chebyc": ((_DEGREES,), (-2, 2)), "eval_chebys": ((_DEGREES,), (-2, 2)),
        "eval_sh_legendre": ((_DEGREES,), (-2, 2)), "eval_sh_chebyt": ((_DEGREES,), (-2, 2)),
        "eval_sh_chebyu": ((_DEGREES,), (-2, 2)),
        "eval_gegenbauer": ((_ORDERS, 0.7), (-0.9, 0.9)),
        "eval_jacobi": ((3.0, _ORDERS, 1.5), (-0.9, 0.9)), "lpmv": ((1, _ORDERS), (-0.9, 0.9)),
        "gdtr": ((_ORDERS, 1.5), (0.1, 4)), "gdtrc": ((2.0, _ORDERS), (0.1, 4)),
        "gdtrix": ((2.0, _ORDERS), (0.1, 0.9)), "bdtr": ((_DEGREES, 4), (0.1, 0.9)),
        "bdtrc": ((_DEGREES, 4), (0.1, 0.9)), "bdtri": ((_DEGREES, 4), (0.1, 0.9)),
        "nbdtr": ((_DEGREES, 3), (0.1, 0.9)), "nbdtrc": ((2, _DEGREES + 1), (0.1, 0.9)),
        "nbdtri": ((_DEGREES, 3), (0.1, 0.9)),
    }.items():
        op("scipy.special.%s(orders, x)" % _n)(
            _unary(lambda x, f=getattr(_special, _n), k=_k: f(*_orders_like(k, x), x), _lo, _hi))
    for _n, _ra, _rb in (("kl_div", (0.2, 2), (0.2, 2)), ("rel_entr", (0.2, 2), (0.2, 2)),
                         ("pseudo_huber", (0.2, 2), (-2, 2)), ("boxcox", (0.2, 2), (-2, 2)),
                         ("boxcox1p", (-0.6, 2), (-2, 2)), ("inv_boxcox", (-1, 1), (-0.4, 0.4)),
                         ("inv_boxcox1p", (-1, 1), (-0.4, 0.4)), ("agm", (0.2, 2), (0.2, 2)),
                         ("owens_t", (-2, 2), (-2, 2)), ("binom", (3, 6), (0.2, 2)),
                         ("ellipkinc", (-1.2, 1.2), (-2, 0.5)),
                         ("ellipeinc", (-1.2, 1.2), (-2, 0.5))):
        op("scipy.special." + _n)(_binary(getattr(_special, _n), _ra, _rb))


test_first_order, test_second_order = family.tests()


def test_values_are_numpys_and_scipys():
    """On array duals and scalar duals, each function gives numpy's (scipy's) own value."""
    x = np.linspace(0.05, 0.95, 7)
    fs = [np.sinc, lambda v: np.copysign(v, -1.0), lambda v: np.heaviside(v - 0.5, 0.3),
          lambda v: np.modf(v * 3)[0], lambda v: np.ldexp(v, 3), lambda v: np.frexp(v)[0],
          lambda v: np.interp(v, [0.0, 0.4, 1.0], [1.0, -1.0, 2.0])]
    if _special is not None:
        fs += [getattr(_special, n) for n in SCIPY_UNARY] + [
            lambda v: _special.polygamma(2, v), lambda v: _special.xlogy(v, v + 1),
            lambda v: _special.beta(v, 2 * v)]
    for f in fs:
        for t in (x, x[2], float(x[3])):
            v, _ = d.vjp(f, t)
            assert np.array_equal(np.asarray(d.value(v)), np.asarray(f(t))), f
            assert np.shape(d.value(v)) == np.shape(f(t))


@pytest.mark.skipif(_special is None, reason="scipy is not installed")
@pytest.mark.parametrize("call", [
    lambda a: _special.pdtr(a, 1.5), lambda a: _special.jv(a, 1.5),
    lambda a: _special.kv(a * np.ones(2), np.ones(2)), lambda a: _special.expn(a, 1.5),
    lambda a: _special.pdtrc(a * np.ones(2), np.ones(2)),
], ids=["pdtr", "jv", "kv-array", "expn", "pdtrc-array"])
def test_a_dual_order_is_an_error_naming_scipys_function(call):
    """The orders and parameters without a derivative (Bessel orders, counts) are static: a
    dual there raises, naming scipy's function and the parameter (never a silent zero
    derivative). The incomplete gamma and beta functions' parameters differentiate
    (tests/numpy/test_incomplete_shapes.py)."""
    with pytest.raises(TypeError, match=r"scipy\.special\.\w+: the (order|parameter)"):
        d.grad(lambda a: np.sum(call(a)))(1.0)


@pytest.mark.skipif(_special is None, reason="scipy is not installed")
def test_scipys_piecewise_constant_ufuncs_have_derivative_zero():
    """scipy.special.gammasgn and round on duals: scipy's values, derivative 0 (they raised)."""
    x = np.array([0.7, -1.3, 2.6])

    def f(z):
        return np.sum(_special.gammasgn(z) * z + _special.round(z) * z)

    want = _special.gammasgn(x) + _special.round(x)
    np.testing.assert_array_equal(d.grad(f)(x), want)
    np.testing.assert_array_equal(d.jacfwd(f)(x), want)
    assert d.grad(lambda t: _special.gammasgn(t) * t)(-1.3) == _special.gammasgn(-1.3)
    v = d.vjp(_special.gammasgn, x)[0]
    assert type(v) is np.ndarray and np.array_equal(v, _special.gammasgn(x))
