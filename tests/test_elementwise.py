"""Every elementary function's derivative is one expression, evaluated the same way on every
path: ``deltaad.f`` on a float dual, numpy's ufunc on a scalar dual, on a 0-d array and on an
n-d array; reverse and forward; first and second derivatives; at +-0, +-1, +-inf, nan, the
edges of the domain and a hypothesis sample.

The paths must agree to the last bit wherever numpy's and ``math``'s values of the function
agree (they need not: numpy's SIMD ``tanh`` is not libm's); where they do not, each path's
derivative is the table's expression at its own value. On a machine where numpy's elementary
functions are not libm's at all (AVX-512 kernels), ``deltaad.f`` (whose derivative is computed
with ``math``) is held to numpy's paths within ``CROSS_REL`` where their values agree, and
numpy's paths to each other to the bit. A ``ValueError`` from ``math`` (a
domain error on a scalar ``deltaad.f``) against numpy's nan is the documented convention, not
a mismatch. The table of functions is deltaad's own table, so
a new entry is checked here without a line of test code.

Also held here: the compiled core's C fast path (a hand-written copy of the float formulas)
against the table's expressions, bit for bit.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad
from deltaad import elementwise as table
from deltaad.numpy import registry
from deltaad.numpy.elementwise import SCALAR_NS
from helpers import Bound, bits, function, scaled, scipy_hangs, unary_entries

UNARY = unary_entries(table.TABLE)
BINARY = [e for e in table.TABLE if e.arity == 2]

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-300, -1e-300, 1e300, -1e300, 30.0,
           -30.0, math.inf, -math.inf, math.nan]


def edges(e):
    """The ends of ``e``'s domain and the floats next to them."""
    pts = []
    for v in (e.domain.lo, e.domain.hi):
        if math.isfinite(v):
            pts += [v, math.nextafter(v, math.inf), math.nextafter(v, -math.inf)]
    return pts


def _numpy_is_libm():
    """Whether numpy's elementary functions give libm's bits on this machine. Where numpy
    dispatches to SIMD kernels of its own (AVX-512: exp, log, sinh, tanh... are not libm's),
    a derivative's expression evaluated through numpy differs from the same expression through
    ``math`` in the last bit, even where the function's own values agree."""
    xs = np.random.default_rng(0).uniform(0.05, 3.0, 256)
    names = {"exp": "exp", "log": "log", "log10": "log10", "log2": "log2", "sinh": "sinh",
             "cosh": "cosh", "tanh": "tanh", "expm1": "expm1", "log1p": "log1p",
             "sin": "sin", "cos": "cos", "tan": "tan", "arctan": "atan", "arcsinh": "asinh",
             "cbrt": "cbrt"}
    for u, m in names.items():
        if hasattr(math, m) and any(float(a) != getattr(math, m)(x)
                                    for a, x in zip(getattr(np, u)(xs), xs)):
            return False
    return all(float(a) == float(x) ** 1.7 for a, x in zip(np.power(xs, 1.7), xs))


NUMPY_IS_LIBM = _numpy_is_libm()
# between deltaad.f (math) and numpy's paths where numpy is not libm: the derivative's
# expression rounds differently in each library, and amplifies it (boxcox1p's first
# derivative 26 ulp apart at (19.2, 6.0), stdtr's 6 ulp, nbdtri's second 21 ulp, were seen)
CROSS_REL = 1e-12


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def family(path):
    """The library a path's derivative is computed with: ``deltaad.f`` uses ``math``'s (libm),
    numpy's paths numpy's; one family where the two agree on this machine."""
    return "libm" if path.startswith("deltaad.") and not NUMPY_IS_LIBM else "numpy"


def ulps(a, b):
    """Distance in units of the last place: 0 for equal values (+0.0 and -0.0 are equal: a
    reverse sweep adds into adjoints that start at +0.0), both nan, or equal infinities."""
    if bits(a) == bits(b) or a == b:
        return 0
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return math.inf
    return abs(a - b) / math.ulp(max(abs(a), abs(b)))


def numpy_fn(e):
    """What numpy code calls for ``e``: its numpy ufunc, its scipy.special function (when scipy
    is installed), or deltaad's array function."""
    for u in e.ufuncs:
        if isinstance(u, np.ufunc):
            return u
    for u in e.ufuncs:
        if callable(u):  # a numpy function that is not a ufunc (np.sinc)
            return u
        if isinstance(u, str) and u.startswith("scipy.special."):
            special = pytest.importorskip("scipy.special")
            f = getattr(special, u.rpartition(".")[2])
            return (lambda x: f(*e.orders_, x)) if isinstance(e, Bound) else f
    return registry.ELEMENTARY[e.name]


def guarded(f):
    """``f()``, or the string ``"domain"`` for math's domain/range error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return f()
        except (ValueError, OverflowError, ZeroDivisionError):
            return "domain"


def unary_paths(e, x):
    """name -> (value, first derivative, second derivative) on every path at the float ``x``."""
    f = function(e, deltaad)
    g = numpy_fn(e)
    arr0 = lambda v: g(v)  # noqa: E731 - applied to 0-d arrays below
    out = {}

    def scalar(fn):
        def run():
            v = fn(x)
            d1 = deltaad.grad(fn)(x)
            d1f = deltaad.jvp(fn, (x,), (1.0,))[1]
            assert ulps(d1, d1f) == 0, "reverse %r vs forward %r" % (d1, d1f)
            d2 = deltaad.hessian(fn)(x)  # forward over reverse, as on the array paths
            return float(v), d1, d2
        return run

    out["deltaad." + e.name] = guarded(scalar(f))
    out["numpy on a scalar dual"] = guarded(scalar(lambda t: g(t)))

    def zero_d():
        a = np.array(x)
        v = arr0(a)
        h = lambda t: arr0(t).sum()  # noqa: E731
        d1 = deltaad.grad(h)(a)
        d1f = deltaad.jvp(h, (a,), (np.array(1.0),))[1]
        assert ulps(float(d1), float(d1f)) == 0, "0-d reverse %r vs forward %r" % (d1, d1f)
        d2 = deltaad.hessian(h)(a)
        return float(v), float(d1), float(d2)

    out["0-d array"] = guarded(zero_d)

    def n_d():  # x among other points: elementwise, so the neighbours must not matter
        a = np.array([0.25, x, -3.0])
        h = lambda t: arr0(t).sum()  # noqa: E731
        v = arr0(a)
        d1 = deltaad.grad(h)(a)
        d2 = deltaad.hessian(h)(a)
        return float(v[1]), float(d1[1]), float(d2[1, 1])

    out["n-d array"] = guarded(n_d)
    return out


def agree(e, x, paths):
    """Paths that compute the same value agree: the first derivative to the bit, the second
    within 2 ulp. Where implementations give different values (numpy's tanh, scipy's erfc are
    not libm's) the derivatives differ only through that value: each path's first derivative
    is the table's expression at its own value, within 2 ulp. A scalar domain error is no
    mismatch; outside the domain (numpy's value is nan) only values are compared: derivatives
    of nan are not defined there."""
    got = {k: v for k, v in paths.items() if v != "domain"}
    outside = any(math.isnan(v[0]) for v in got.values())
    groups = {}
    for k, v in got.items():
        groups.setdefault(bits(v[0]), []).append(k)
    if outside:
        assert all(math.isnan(v[0]) for v in got.values()), (e.name, x, got)
    else:
        for names in groups.values():
            for a in names:
                for b in names:
                    # the same library: to the bit; math's against numpy's SIMD kernels: to
                    # CROSS_REL
                    cross = family(a) != family(b)
                    assert ulps(got[a][1], got[b][1]) == 0 or cross and close(
                        got[a][1], got[b][1], CROSS_REL), "%s at %r: d1 %s %r != %s %r" % (
                        e.name, x, a, got[a][1], b, got[b][1])
                    # (a second derivative computed as a difference of terms larger than
                    # itself, i1e's, say, or as a sum of terms of its own size, kolmogorov's,
                    # rounds differently on paths that sum in different orders: then 4 ulp of
                    # the terms' scale, 1 at the least; kolmogorov at 0.4 is 3 ulp apart)
                    scale = 4 * math.ulp(max(1.0, abs(got[a][0]), abs(got[a][1]),
                                             abs(got[a][2]) if math.isfinite(got[a][2])
                                             else 0.0))
                    if math.isinf(got[a][1]):
                        # the first derivative overflowed (expi's e^x / x at a subnormal x):
                        # the second is a difference of infinities, nan or inf by the path
                        continue
                    if math.isinf(got[a][2]) != math.isinf(got[b][2]) and \
                            min(abs(got[a][2]), abs(got[b][2])) > 1e200:
                        # near overflow: an intermediate term of the second derivative reached
                        # inf on one path only (stdtrit's at p ~ 1e-85, where it is ~1e252)
                        continue
                    assert ulps(got[a][2], got[b][2]) <= 2 or \
                        cross and close(got[a][2], got[b][2], 100 * CROSS_REL) or \
                        abs(got[a][2] - got[b][2]) <= scale, "%s at %r: d2 %s %r vs %s %r" % (
                        e.name, x, a, got[a][2], b, got[b][2])
        if len(groups) > 1:
            xs = x if isinstance(x, tuple) else (x,)
            for k, v in got.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    want = e.derivative(SCALAR_NS, *xs, v[0])
                if e.arity == 1:
                    assert ulps(v[1], float(want)) <= 2, "%s at %r: %s d1 %r vs the table's %r" % (
                        e.name, x, k, v[1], want)
    # numpy's paths (everything but deltaad.f) never raise: they give nan, like numpy
    for k, v in paths.items():
        if k != "deltaad." + e.name:
            assert v != "domain", "%s at %r: %s raised" % (e.name, x, k)


@pytest.mark.parametrize("e", UNARY, ids=[e.name for e in UNARY])
def test_unary_paths_agree_at_special_points(e):
    for x in SPECIAL + edges(e):
        if not scipy_hangs(e.name, x):
            agree(e, x, unary_paths(e, x))


@pytest.mark.parametrize("e", UNARY, ids=[e.name for e in UNARY])
def test_unary_paths_agree_on_a_sample(e):
    @scaled(0.2)
    @given(st.floats(-40, 40, allow_nan=False))
    def prop(x):
        agree(e, x, unary_paths(e, x))

    prop()


def test_paths_agree_where_a_second_derivative_sums_terms_of_its_size():
    """kolmogorov's second derivative at 0.4 (-2.855) is a sum of terms of its own size: the
    scalar and array paths sum them in different orders and land 3 ulp apart, within 4 ulp
    of the terms' scale (a draw of the sample test above found it)."""
    e = next(u for u in UNARY if u.name == "kolmogorov")
    paths = unary_paths(e, 0.4)
    agree(e, 0.4, paths)
    assert len({bits(v[0]) for v in paths.values() if v != "domain"}) == 1


def test_paths_agree_where_a_second_derivative_nears_overflow():
    """stdtrit(1, p) near p = 0 is -1/(pi p): at p = 5.56e-85 its second derivative is about
    -3.7e252, and one path's intermediate term overflows to -inf (hypothesis found it)."""
    e = next((u for u in UNARY if str(u) == "<stdtrit[1.0]>"), None)
    if e is None:
        pytest.skip("no scipy")
    agree(e, 5.56e-85, unary_paths(e, 5.56e-85))


def binary_paths(e, a, b):
    f = getattr(deltaad, e.name)
    g = numpy_fn(e)
    out = {}

    def scalar(fn):
        def run():
            v = fn(a, b)
            da, db = deltaad.grad(fn, argnums=(0, 1))(a, b)
            ta = deltaad.jvp(fn, (a, b), (1.0, 0.0))[1]
            tb = deltaad.jvp(fn, (a, b), (0.0, 1.0))[1]
            assert ulps(da, ta) == 0 and ulps(db, tb) == 0, (da, db, ta, tb)
            return float(v), da, db
        return run

    out["deltaad." + e.name] = guarded(scalar(f))
    out["numpy on scalar duals"] = guarded(scalar(lambda s, t: g(s, t)))

    def arrays():
        x = np.array([a, 0.5])
        y = np.array([b, -1.5])
        h = lambda s, t: g(s, t).sum()  # noqa: E731
        v = g(x, y)
        dx, dy = deltaad.grad(h, argnums=(0, 1))(x, y)
        return float(v[0]), float(dx[0]), float(dy[0])

    out["arrays"] = guarded(arrays)
    return out


@pytest.mark.parametrize("e", BINARY, ids=[e.name for e in BINARY])
def test_binary_paths_agree(e):
    pts = [0.0, -0.0, 1.0, -1.0, 2.5, math.inf, -math.inf, math.nan]

    @scaled(0.3)
    @given(st.floats(-20, 20, allow_nan=False) | st.sampled_from(pts),
           st.floats(-20, 20, allow_nan=False) | st.sampled_from(pts))
    def prop(a, b):
        paths = binary_paths(e, a, b)
        agree(e, (a, b), paths)

    prop()
    for a in pts:
        for b in pts:
            agree(e, (a, b), binary_paths(e, a, b))


@pytest.mark.skipif(deltaad.backend != "c", reason="the C fast path is the compiled core's")
@pytest.mark.parametrize("name", [n for n in getattr(deltaad._B, "_UNARY_NAMES", ())])
def test_c_fast_path_is_the_table(name):
    """The core's hand-written C formulas give the bits of the table's expression (the core's
    general path, which evaluates the table's derivative over the core's own functions)."""
    from deltaad import _core

    e = table.BY_NAME[name]
    generic = _core.lift1(e.name, e.float, e.derivative)
    fast = getattr(_core, name)

    def run(fn, x):
        try:
            T = _core.Tape(10 ** 9)
            d = T.input(x)
            y = fn(d)
            T.close()
            return bits(y.value), bits(T.eval([(y.id, 1.0)], [d.id])[0])
        except (ValueError, OverflowError) as exc:
            return type(exc).__name__

    @scaled(0.5)
    @given(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL + edges(e)))
    def prop(x):
        assert run(fast, x) == run(generic, x), (name, x)

    prop()
    for x in SPECIAL + edges(e):
        assert run(fast, x) == run(generic, x), (name, x)


def test_every_table_function_is_public_and_answers_numpy():
    for e in table.TABLE:
        assert getattr(deltaad, e.name) is getattr(deltaad._B, e.name)
        assert e.name in deltaad.__all__
        for u in e.ufuncs:
            if isinstance(u, np.ufunc):
                # the rule's values are the ufunc's own (np.fabs's for np.fabs)
                rule = registry.UFUNCS[u]
                assert rule is registry.ELEMENTARY[e.name] if u is e.array else \
                    rule.primitive.impl is u
                # numpy object arrays of duals call the method named after the ufunc
                assert callable(getattr(deltaad.Dual, u.__name__))


def test_zero_cotangent_through_an_infinite_partial_is_zero_on_arrays():
    """The zero-adjoint convention holds on arrays as on scalars (sqrt at 0 has partial inf)."""
    f = lambda v: np.sqrt(v)[1]  # noqa: E731 - the cotangent of element 0 is an exact zero
    assert list(deltaad.grad(f)(np.array([0.0, 4.0]))) == [0.0, 0.25]
    t = deltaad.jvp(np.sqrt, (np.array([0.0, 4.0]),), (np.array([0.0, 1.0]),))[1]
    assert list(t) == [0.0, 0.25]
    assert deltaad.jvp(lambda v: np.sqrt(v).sum(), (np.array([0.0]),), (np.array([0.0]),))[1] == 0.0


def test_sqrt_at_minus_zero_on_every_path():
    """+inf, the derivative of x ** 0.5 from above, on scalars and arrays alike."""
    assert deltaad.grad(deltaad.sqrt)(-0.0) == math.inf
    assert deltaad.grad(np.sqrt)(-0.0) == math.inf
    assert list(deltaad.grad(lambda x: np.sqrt(x).sum())(np.array([-0.0]))) == [math.inf]
