"""scipy.interpolate's interpolants at dual points (deltaad.numpy.scipy_interpolate).

Hypothesis over data tables, kinds and points: the value is scipy's own, bit for bit; reverse
against forward to the bit and against finite differences; every higher order against scipy's
own derivative ``f(x, nu)``; y with several columns and ``axis``; ``interp1d``'s fill values and
extrapolation; an interpolant built from duals raises, naming it.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import seeds

interpolate = pytest.importorskip("scipy.interpolate")

KINDS = ["cubic", "pchip", "akima", "bspline", "splrep", "bpoly", "interp1d-linear",
         "interp1d-cubic"]


def _table(rng, n=8):
    xs = np.sort(rng.uniform(0.0, 4.0, n))
    xs = xs + np.arange(n) * 0.05  # distinct breakpoints
    return xs, np.sin(xs) + rng.normal(0.0, 0.1, n)


def _make(kind, xs, ys):
    ip = interpolate
    if kind == "cubic":
        return ip.CubicSpline(xs, ys)
    if kind == "pchip":
        return ip.PchipInterpolator(xs, ys)
    if kind == "akima":
        return ip.Akima1DInterpolator(xs, ys)
    if kind == "bspline":
        return ip.make_interp_spline(xs, ys, k=3)
    if kind == "splrep":
        return ip.BSpline(*ip.splrep(xs, ys))
    if kind == "bpoly":
        return ip.BPoly.from_derivatives(xs, np.stack([ys, np.cos(xs)], axis=1))
    return ip.interp1d(xs, ys, kind=kind.split("-")[1])


def _away_from_breaks(x, xs, gap=1e-3):
    return bool(np.all(np.min(np.abs(x[:, None] - xs[None, :]), axis=1) > gap))


@settings(max_examples=40, deadline=None)
@given(seeds, st.sampled_from(KINDS))
def test_first_order(seed, kind):
    rng = np.random.default_rng(seed)
    xs, ys = _table(rng)
    f = _make(kind, xs, ys)
    x = rng.uniform(xs[0], xs[-1], 5)
    if not _away_from_breaks(x, xs):
        return
    val, g = d.value_and_grad(lambda x: np.sum(f(x)))(x)
    assert val == np.sum(f(x))
    out, t = d.jvp(f, (x,), (np.ones_like(x),))
    assert np.array_equal(d.value(out), f(x))
    assert np.array_equal(t, g)  # elementwise: the jvp of ones is the gradient of the sum
    h = 1e-6
    assert np.allclose(g, (f(x + h) - f(x - h)) / (2 * h), rtol=1e-5, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(seeds, st.sampled_from(["cubic", "pchip", "bspline", "splrep", "bpoly"]))
def test_every_order_is_scipys_derivative(seed, kind):
    rng = np.random.default_rng(seed)
    xs, ys = _table(rng)
    f = _make(kind, xs, ys)
    x = float(rng.uniform(xs[0], xs[-1]))
    g = lambda x: f(x)  # noqa: E731
    for nu in range(1, 5):
        g = d.grad(g)
        assert g(x) == pytest.approx(float(f(x, nu)), rel=1e-12, abs=1e-12)
    assert d.hessian(lambda x: f(x))(x) == pytest.approx(float(f(x, 2)), rel=1e-12, abs=1e-12)


def test_columns_axis_periodic_and_extrapolation():
    xs = np.linspace(0.0, 3.0, 7)
    y2 = np.stack([np.sin(xs), np.cos(xs)], axis=1)
    cs = interpolate.CubicSpline(xs, y2)
    assert np.array_equal(d.jacrev(cs)(1.3), cs(1.3, 1))
    cs_t = interpolate.CubicSpline(xs, y2.T, axis=1)
    x = np.array([0.3, 1.3])
    assert np.array_equal(d.value(d.jvp(cs_t, (x,), (np.ones(2),))[0]), cs_t(x))
    assert np.array_equal(d.jvp(cs_t, (x,), (np.ones(2),))[1], cs_t(x, 1))
    per = interpolate.CubicSpline(xs, np.r_[np.sin(xs[:-1]), np.sin(xs[0])], bc_type="periodic")
    assert d.grad(lambda x: per(x, extrapolate="periodic"))(4.0) == \
        float(per(4.0, 1, extrapolate="periodic"))
    assert d.grad(lambda x: cs(x)[0])(3.5) == float(cs(3.5, 1)[0])  # the end piece, extended


def test_interp1d_fill_values_and_constant_kinds():
    xs = np.linspace(0.0, 3.0, 7)
    ys = np.sin(xs)
    li = interpolate.interp1d(xs, ys, bounds_error=False, fill_value=0.0)
    x = np.array([-1.0, 1.3, 5.0])
    g = d.grad(lambda x: np.sum(li(x)))(x)
    k = np.searchsorted(xs, 1.3)
    assert g[0] == 0.0 and g[2] == 0.0
    assert g[1] == pytest.approx((ys[k] - ys[k - 1]) / (xs[k] - xs[k - 1]), rel=1e-14)
    ex = interpolate.interp1d(xs, ys, fill_value="extrapolate")
    assert d.grad(lambda x: ex(x))(5.0) == pytest.approx((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]))
    assert d.grad(lambda x: interpolate.interp1d(xs, ys, kind="nearest")(x))(1.3) == 0.0
    with pytest.raises(ValueError, match="above the interpolation range"):
        d.grad(lambda x: interpolate.interp1d(xs, ys)(x))(5.0)


def test_plain_calls_are_scipys_and_dual_data_is_refused():
    xs = np.linspace(0.0, 3.0, 7)
    cs = interpolate.CubicSpline(xs, np.sin(xs))
    assert interpolate.PPoly.__call__.deltaad_original(cs, 1.3) == cs(1.3)
    for build in (interpolate.CubicSpline, interpolate.interp1d, interpolate.make_interp_spline):
        with pytest.raises(NotImplementedError, match="scipy.interpolate.%s built from dual"
                           % build.__name__):
            d.grad(lambda y: build(xs, y)(1.3))(np.sin(xs))
    # plain data builds as before, inside a differentiation too
    assert d.grad(lambda x: interpolate.CubicSpline(xs, np.sin(xs))(x))(1.3) == float(cs(1.3, 1))


@settings(max_examples=30, deadline=None)
@given(seeds, st.sampled_from([1, 2, 3]), st.booleans())
def test_regular_grid_linear(seed, ndim, columns):
    rng = np.random.default_rng(seed)
    grid = tuple(np.sort(rng.uniform(0.0, 2.0, 4)) + np.arange(4) * 0.1 for _ in range(ndim))
    shape = tuple(len(g) for g in grid) + ((2,) if columns else ())
    r = interpolate.RegularGridInterpolator(grid, rng.normal(size=shape))
    p = np.stack([rng.uniform(g[0], g[-1], 3) for g in grid], axis=-1)
    if not all(_away_from_breaks(p[:, i], g) for i, g in enumerate(grid)):
        return
    val, g = d.value_and_grad(lambda p: np.sum(r(p)))(p)
    assert val == np.sum(r(p))
    h = 1e-6
    fd = np.zeros_like(p)
    for idx in np.ndindex(*p.shape):
        e = np.zeros_like(p)
        e[idx] = h
        fd[idx] = (np.sum(r(p + e)) - np.sum(r(p - e))) / (2 * h)
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)
    t = rng.normal(size=p.shape)
    assert np.sum(g * t) == pytest.approx(np.sum(d.jvp(lambda p: r(p), (p,), (t,))[1]),
                                          rel=1e-12, abs=1e-12)


def test_regular_grid_fill_nearest_and_refused_methods():
    grid = (np.linspace(0, 1, 5), np.linspace(0, 2, 6))
    v = np.sin(grid[0][:, None]) * np.cos(grid[1][None, :])
    outside = interpolate.RegularGridInterpolator(grid, v, bounds_error=False, fill_value=3.0)
    assert np.array_equal(d.grad(lambda p: np.sum(outside(p)))(np.array([1.2, 1.0])), [0.0, 0.0])
    near = interpolate.RegularGridInterpolator(grid, v, method="nearest")
    assert np.array_equal(d.grad(lambda p: np.sum(near(p)))(np.array([0.3, 1.0])), [0.0, 0.0])
    with pytest.raises(NotImplementedError, match=r"RegularGridInterpolator\(method='cubic'\)"):
        d.grad(lambda p: np.sum(near(p, method="cubic")))(np.array([0.3, 1.1]))
