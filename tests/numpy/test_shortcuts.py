"""The short paths of the array mechanism (``deltaad.numpy.array.SHORTCUTS``: apply's one, two
and n operand cases on the reverse trace, basic indexing, ``x.reshape``/``x.ravel``/``x.T``,
``np.concatenate``, ``np.maximum`` with a float bound) record what the general path records:
the same values and gradients to the bit with them on and off, on both backends; derivatives
against finite differences and forward against reverse; and the inputs they leave to the
general path (float32, 0-d, empty, negative strides, non-contiguous views, broadcasting,
nested differentiation) keep working."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from deltaad.numpy import array, fast
from numpy_checks import check_first_order, check_second_order


def _with(flag, fn, *args):
    """``fn(*args)`` with the short paths, the compiled fast path's among them, on or off."""
    old = array.set_shortcuts(flag)
    old_fast = fast.set_enabled(flag)
    try:
        return fn(*args)
    finally:
        array.set_shortcuts(old)
        fast.set_enabled(old_fast)


def same_bits(a, b):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        x = np.asarray(x)
        y = np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        assert np.array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8)), (x, y)


def both_paths(f, *args):
    """Value and gradient (every argument) with the short paths on and off: the same bits."""
    nums = tuple(range(len(args)))
    on = _with(True, d.value_and_grad(f, argnums=nums), *args)
    off = _with(False, d.value_and_grad(f, argnums=nums), *args)
    same_bits(on[0], off[0])
    same_bits(on[1], off[1])
    ref = np.asarray(f(*args))
    if ref.dtype == np.float32 and type(on[0]) is float:
        # a float32 entry read as a scalar dual holds a float, which widens later arithmetic
        # (the sharp bits' promotion): numpy's float32 value to its precision only
        np.testing.assert_allclose(on[0], ref, rtol=1e-5)
        return on
    assert np.array_equal(np.asarray(on[0], dtype=ref.dtype), ref, equal_nan=True)  # numpy's value
    return on


# -- random basic indices ------------------------------------------------------------------


def _slices(draw, n):
    start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
    stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
    step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))
    return slice(start, stop, step)


@st.composite
def basic_case(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(nd))
    idx = []
    for n in shape[:draw(st.integers(0, nd))]:
        if draw(st.integers(0, 3)) == 0:
            idx.append(None)  # a new axis (takes none of x's)
        if draw(st.booleans()):
            idx.append(draw(st.integers(-n, n - 1)))
        else:
            idx.append(_slices(draw, n))
    if draw(st.booleans()) and idx:
        idx.append(Ellipsis)  # (after the indices of the leading axes, which they refer to)
    single = len(idx) == 1 and draw(st.booleans())
    dtype = draw(st.sampled_from(["float64", "float64", "float32"]))
    seed = draw(st.integers(0, 2**31 - 1))
    return shape, (idx[0] if single else tuple(idx)), dtype, seed


@given(basic_case())
def test_basic_indexing_same_bits(c):
    shape, idx, dtype, seed = c
    x = np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)
    w = np.random.default_rng(seed + 1).uniform(-2, 2, np.empty(shape)[idx].shape).astype(dtype)

    def f(x):
        y = x[idx]
        return np.sum(y * w) + np.sum(x[idx] * y)  # the same index twice: adjoints add

    both_paths(f, x)
    if dtype == "float64":
        check_first_order(f, (x,), seed=seed % 1000)


@given(basic_case())
def test_basic_indexing_of_views(c):
    """Negative strides and non-contiguous values (slices of slices, a transposed matrix)."""
    shape, idx, dtype, seed = c
    x = np.random.default_rng(seed).uniform(-2, 2, shape)

    def f(x):
        v = np.transpose(x)[::-1]
        v = np.transpose(v)
        return np.sum(np.sin(v[idx])) + np.sum(x[::-1][idx] ** 2)

    both_paths(f, x)
    check_first_order(f, (x,), seed=seed % 1000)


def test_scalar_index_and_empty():
    x = np.array([1.5, -2.0, 3.0, 0.5])

    def f(x):
        return x[2] * x[-1] + x[1] ** 2 + np.sum(x[3:1]) + np.sum(x[..., None][1:3, 0])

    v, g = both_paths(f, x)
    assert d.grad(lambda x: x[2] * x[-1])(x).tolist() == [0.0, 0.0, 0.5, 3.0]
    np.testing.assert_array_equal(g[0], [0.0, -3.0, 1.5, 3.0])
    check_first_order(f, (x,))
    check_second_order(f, (x,))


def test_zero_dimensional():
    x = np.array(2.0)
    both_paths(lambda x: x[()] * x[...] * x.reshape(1)[0], x)
    check_first_order(lambda x: x[()] * x[...], (x,))


# -- scalar duals times arrays, maximum with a bound, where, clip ----------------------------


shapes = st.sampled_from([(1,), (3,), (8,), (2, 3), (0,), ()])


@given(shapes, st.integers(0, 2**31 - 1), st.sampled_from(["float64", "float32"]))
def test_scalar_dual_with_array_same_bits(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, shape).astype(dtype)
    k = float(rng.uniform(0.5, 2))

    def f(x, k):
        y = k * x + x * k - x / k + (k - x) + (x + k)
        return np.sum(y * y) + k * np.sum(k / (x + 3.0))

    both_paths(f, x, k)
    if dtype == "float64":
        check_first_order(f, (x, k), seed=seed % 1000)


@given(shapes, st.integers(0, 2**31 - 1), st.sampled_from(["float64", "float32"]),
       st.sampled_from([0.0, 0.5, -0.25]))
def test_maximum_minimum_bound_same_bits(shape, seed, dtype, bound):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    if x.size:
        x.reshape(-1)[0] = bound  # a tie: 1/2 to each argument
    if x.size > 2 and seed % 3 == 0:
        x.reshape(-1)[1] = np.nan

    def f(x):
        return np.sum(np.maximum(x, bound) * x) + np.sum(np.minimum(x, bound) ** 2) \
            + np.sum(np.maximum(bound, x)) + np.sum(np.clip(x, -0.5, 0.5) * x)

    both_paths(f, x)

    def general(x):  # the bound as a 0-d array: the general weights
        return np.sum(np.maximum(x, np.asarray(bound, dtype=dtype)) * x) \
            + np.sum(np.minimum(x, np.asarray(bound, dtype=dtype)) ** 2) \
            + np.sum(np.maximum(bound, x)) + np.sum(np.clip(x, -0.5, 0.5) * x)

    same_bits(d.grad(f)(x), d.grad(general)(x))


def test_maximum_tie_and_nan_weights():
    x = np.array([0.0, 1.0, -1.0, np.nan])
    g = d.grad(lambda x: np.nansum(np.maximum(x, 0.0) * np.array([1.0, 2.0, 3.0, 4.0])))(x)
    np.testing.assert_array_equal(g, [0.5, 2.0, 0.0, 0.0])
    g = d.grad(lambda x: np.sum(np.maximum(x, 0.0)))(x)
    np.testing.assert_array_equal(g, [0.5, 1.0, 0.0, 1.0])  # nan propagates from x: weight 1


def test_where_and_broadcasting():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (3, 4))
    r = rng.uniform(-1, 1, (4,))

    def f(x, r):
        y = np.where(x > 0, x, 0.0) + np.where(x > 0.2, r, x) + x * r + r[None, :] * x[1:2]
        return np.sum(y * y)

    both_paths(f, x, r)
    check_first_order(f, (x, r))
    check_second_order(f, (x, r))


# -- reshape, ravel, transpose, concatenate, stack, roll -------------------------------------


@given(st.sampled_from([(6,), (2, 3), (3, 2), (1, 6), (0,), ()]), st.integers(0, 2**31 - 1),
       st.sampled_from(["float64", "float32"]))
def test_shapes_same_bits(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    n = x.size

    def f(x):
        m = x.reshape(n, 1)
        t = x.reshape(-1).reshape((1, n)).T
        y = np.concatenate([np.zeros((1, 1), dtype=dtype), m * t, np.ones((2, 1))], axis=0)
        z = np.concatenate([x.ravel(), x.ravel()[::-1], np.zeros(1)])
        s = np.stack([x.ravel(), x.ravel() ** 2])
        return np.sum(y * y) + np.sum(z * np.arange(z.size)) + np.sum(np.roll(s, 1) * s) \
            + np.sum(np.concatenate([s, s], axis=-1).T * 2.0)

    both_paths(f, x)
    if dtype == "float64":
        check_first_order(f, (x,), seed=seed % 1000)


def test_concatenate_axis_forms():
    x = np.arange(6.0).reshape(2, 3)

    def f(x):
        a = np.concatenate([x, x * 2.0], axis=np.int64(1))  # a numpy integer: the general path
        b = np.concatenate([x, x * 2.0], axis=1)
        c = np.concatenate((x, x), axis=-2)
        e = np.concatenate([x, x], axis=None)
        return np.sum(a * b) + np.sum(c) + np.sum(e)

    both_paths(f, x)
    check_first_order(f, (x,))
    with pytest.raises(Exception):
        d.grad(lambda x: np.sum(np.concatenate([x, x], axis=2)))(x)
    with pytest.raises(ValueError):
        d.grad(lambda x: np.sum(np.concatenate([x, x[0]])))(x)


def test_reshape_errors_and_orders():
    x = np.arange(6.0)
    with pytest.raises(ValueError):
        d.grad(lambda x: np.sum(x.reshape(4, 2)))(x)
    g = d.grad(lambda x: np.sum(x.reshape((2, 3), order="F") * np.arange(6.0).reshape(2, 3)))(x)
    np.testing.assert_array_equal(g, np.arange(6.0).reshape(2, 3).ravel(order="F"))
    both_paths(lambda x: np.sum(x.reshape(3, 2).ravel(order="F") * x), x)


# -- the heat-equation stencil (the bench's stencil program) ---------------------------------


@given(st.integers(0, 2**31 - 1), st.integers(1, 6))
def test_stencil_program(seed, steps):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.2, 1, 16)  # (away from maximum's kink, where differences would cross it)
    s = rng.uniform(-0.01, 0.01, 16)
    z = np.zeros(1)

    def f(u, s, c):
        for _ in range(steps):
            lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
            u = np.maximum(u + c * np.concatenate([z, lap, z]) + s, 0.0)
        return np.sum(u * u)

    both_paths(f, u, s, 0.2)
    check_first_order(f, (u, s, 0.2), seed=seed % 1000)


def test_stencil_second_order():
    rng = np.random.default_rng(7)
    u = rng.uniform(0.5, 1, 8)

    def f(u, c):
        for _ in range(3):
            u = u + c * np.concatenate([[0.0], u[2:] - 2 * u[1:-1] + u[:-2], [0.0]])
        return np.sum(u * u * u)

    check_second_order(f, (u, 0.2))


def test_closed_trace_raises():
    kept = []

    def f(x):
        kept.append(x)
        return np.sum(x)

    d.grad(f)(np.ones(3))
    for op in (lambda x: x[1:], lambda x: x[0], lambda x: x.reshape(3, 1), lambda x: x * 2.0,
               lambda x: np.concatenate([x, x]), lambda x: np.maximum(x, 0.0)):
        with pytest.raises(d.EscapedDualError if hasattr(d, "EscapedDualError") else Exception):
            op(kept[0])


# -- reductions: np.sum / np.mean / np.max / np.min and their methods ------------------------


_AXES = [None, 0, -1, (0,), (-1, 0), ()]


@given(st.sampled_from([(3,), (2, 3), (2, 1, 4), (1,), ()]), st.integers(0, 2**31 - 1),
       st.sampled_from(["float64", "float32"]), st.sampled_from(_AXES), st.booleans(),
       st.booleans())
def test_reductions_same_bits(shape, seed, dtype, axis, keepdims, method):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    if axis is not None and (len(shape) == 0 and axis != () or len(shape) == 1 and axis == (-1, 0)):
        axis = None
    w = rng.uniform(-1, 1, np.sum(x, axis=axis, keepdims=keepdims).shape)
    if len(shape) == 3:
        x[1, 0, 2] = x[0, 0, 1] = x.max()  # tied extrema: the cotangent's split

    def f(x):
        kw = {"keepdims": True} if keepdims else {}
        if method:
            parts = [x.sum(axis, **kw), x.mean(axis=axis, **kw), x.max(axis, **kw), x.min(axis, **kw)]
        else:
            parts = [np.sum(x, axis, **kw), np.mean(x, axis=axis, **kw), np.max(x, axis=axis, **kw),
                     np.amin(x, axis, **kw), np.amax(x, axis, **kw), np.min(x, axis=axis, **kw)]
        return sum(np.sum(p * w * (k + 1.0)) for k, p in enumerate(parts))

    both_paths(f, x)


def test_reduction_short_paths_taken_and_refused():
    """Which calls the short paths take (an ArrayDual recorded) and which they hand to the
    rules (None): anything but an array dual of the open reverse trace holding an ndarray, with
    ``axis`` (None, an int, a tuple of ints) and a bool ``keepdims``."""
    seen = []

    def f(x):
        for fn in (np.sum, np.mean, np.max, np.min, np.amax, np.amin):
            for args, kw in (((x,), {}), ((x, 0), {}), ((x,), {"axis": -1, "keepdims": True}),
                             ((x,), {"axis": (0, 1)})):
                seen.append(type(array.short_path(fn, args, kw)) is array.ArrayDual)
            for args, kw in (((x,), {"out": None}), ((x,), {"where": True}), ((x,), {"keepdims": 1}),
                             ((x, np.int64(0)), {}), ((x, 1.0), {}), ((x, [0]), {}), ((x, 0, None), {}),
                             ((), {"a": x}), ((x.value,), {})):
                seen.append(array.short_path(fn, args, kw) is None)
        return np.sum(x)

    d.grad(f)(np.ones((2, 3)))
    assert seen and all(seen)
    t = []
    d.jvp(lambda x: t.append(array.short_path(np.sum, (x,), {})) or np.sum(x), (np.ones(2),), (np.ones(2),))
    assert t == [None]  # forward mode: the rule
    old = array.set_shortcuts(False)
    try:
        d.grad(lambda x: t.append(array.short_path(np.sum, (x,), {})) or np.sum(x))(np.ones(2))
    finally:
        array.set_shortcuts(old)
    assert t == [None, None]


def test_reductions_refused_calls_still_right():
    x = np.array([[1.0, 5.0, 5.0], [2.0, -1.0, np.nan]])
    y = np.array([[1.0, 5.0, 5.0], [2.0, -1.0, 0.5]])
    m = np.array([[True, False, True], [True, True, False]])
    fs = [
        lambda x: np.sum(x, axis=1, where=m) @ np.array([1.0, 2.0]),
        lambda x: np.sum(np.max(x, axis=1, initial=4.0) * np.array([1.0, 3.0])),
        lambda x: np.sum(np.min(x, axis=0, where=m, initial=9.0)),
        lambda x: np.sum(x, axis=np.int64(1), dtype=np.float64) @ np.array([1.0, 2.0]),
        lambda x: np.sum(np.mean(x, keepdims=1)) * 3.0,
        lambda x: np.sum(np.max(x, axis=-1)),  # a nan extremum: its nans tie
        lambda x: np.sum(np.max(np.zeros((0, 2)) + x[:, :2].sum(), axis=1)) + x[0, 0],  # no slices
    ]
    for f in fs:
        for v in (x, y):
            both_paths(f, v)
    with pytest.raises(Exception):
        d.grad(lambda x: np.sum(x, axis=2))(y)
    with pytest.raises(ValueError):
        d.grad(lambda x: np.max(np.zeros(0) + x[0, 0]))(y)
    def fill(x):  # a fillable array (the reductions' short paths leave it to its own way)
        z = np.zeros(3)
        z[0] = x[0, 0]
        z[1] = x[1, 1] * 2.0
        return np.sum(z) + z.max() + np.mean(z, axis=0)

    g = both_paths(fill, y)[1][0]
    np.testing.assert_allclose(g, [[7 / 3, 0, 0], [0, 8 / 3, 0]], rtol=1e-15)
    g = d.grad(lambda x: np.max(x))(np.array([3.0, 1.0, 3.0, 3.0]))
    assert g.tolist() == [1 / 3, 0.0, 1 / 3, 1 / 3]
    g = d.grad(lambda x: np.sum(np.max(x, axis=1)))(x)
    assert g.tolist() == [[0.0, 0.5, 0.5], [0.0, 0.0, 1.0]]


def test_reductions_nested_forward_and_compiled(monkeypatch):
    from deltaad import compile_arrays
    monkeypatch.setattr(compile_arrays, "CHOOSE", "replay")  # (not the uncompiled call)
    x = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.2]])

    def f(x):
        return np.sum(np.sum(x * x, axis=1) * np.max(x, axis=0, keepdims=True)[0, :2]) \
            + x.mean() * np.min(x)

    check_second_order(f, (x,))
    check_first_order(f, (x,))
    cf = d.compile(d.grad(f))
    for k in range(3):  # recorded, then replayed
        same_bits(cf(x + k), d.grad(f)(x + k))


def test_broadcast_to_is_numpys_view():
    rng = np.random.default_rng(3)
    cases = [((), (3,)), ((1,), (3,)), ((3, 1), (3, 4)), ((1, 1), (3, 4)), ((1, 4), (3, 4)),
             ((1, 1), (1, 4)), ((2, 1, 3), (5, 2, 4, 3)), ((1,), (1,)), ((3,), (2, 3)),
             ((2, 3), (2, 3)), ((1,), (0,)), ((0,), (0,)), ((0, 1), (0, 5))]
    for gs, s in cases:
        for g in (rng.uniform(size=gs), rng.uniform(size=gs).astype(np.float32),
                  np.arange(int(np.prod(gs))).reshape(gs),
                  np.asfortranarray(rng.uniform(size=gs + (2,)))[..., 0]):  # (not contiguous)
            mine = array.broadcast_to(g, s)
            ref = np.broadcast_to(g, s)
            assert mine.shape == ref.shape and mine.dtype == ref.dtype
            assert mine.strides == ref.strides, (gs, s, mine.strides, ref.strides)
            for flag in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED",
                         "WRITEBACKIFCOPY"):
                assert mine.flags[flag] == ref.flags[flag], (gs, s, flag)
            same_bits(mine.copy(), ref.copy())
    with pytest.raises(ValueError):
        array.broadcast_to(np.ones((2, 3)), (3, 3))
    with pytest.raises(ValueError):
        array.broadcast_to(np.ones((2, 3)), (3,))


# -- broadcasting binary operations, their unbroadcast, constants as ndarrays ----------------


@given(st.sampled_from([((3, 1, 2), (4, 2)), ((2, 3), (3,)), ((1, 3), (2, 1)), ((), (2, 2)),
                        ((2, 2), (1,)), ((3,), (3,))]),
       st.integers(0, 2**31 - 1), st.sampled_from(["float64", "float32", "int64"]),
       st.sampled_from([np.subtract, np.multiply, np.add, np.true_divide, np.matmul]))
def test_ndarray_constants_same_bits(shapes, seed, dtype, ufunc):
    """A constant float ndarray meeting an array dual in a ufunc goes straight to the rule
    (ArrayDual.__array_ufunc__): the bits ufunc_dispatch gives (a list constant takes it)."""
    sx, sc = shapes
    if ufunc is np.matmul:
        sx, sc = (2, 3), (3, 2)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, sx)
    c = (rng.uniform(0.5, 1.5, sc) * (3 if dtype == "int64" else 1)).astype(dtype)  # (no 0)

    def f(x, c):
        return np.sum(ufunc(c, x) * 1.5) + np.sum(ufunc(x, c) ** 2)

    g = d.grad(f)(x, c)
    same_bits(g, d.grad(f)(x, c.tolist() if c.ndim else c.item()))
    same_bits(g, both_paths(lambda x: f(x, c), x)[1])
    check_first_order(lambda x: f(x, c), (x,), seed=seed % 1000)


def test_sum_axes_is_numpys_sum():
    rng = np.random.default_rng(5)
    for shape, axes in (((3, 4, 2), (1,)), ((3, 4, 2), (0, 1)), ((3, 40), (1,)), ((2, 3, 4), (0, 2)),
                        ((5,), (0,)), ((2, 50, 3), (1,))):
        for g in (rng.uniform(-1, 1, shape), rng.uniform(-1, 1, shape).astype(np.float32),
                  np.broadcast_to(rng.uniform(-1, 1, shape[:-1] + (1,)), shape)):
            if len(shape) - 1 in axes or shape[-1] > 32:  # numpy's sum
                same_bits(array._sum_axes(g, axes), np.sum(g, axis=axes))
            else:  # einsum's order (or the compiled twin's, the same bits)
                idx = "abc"[:len(shape)]
                spec = idx + "->" + "".join(c for i, c in enumerate(idx) if i not in axes)
                same_bits(array._sum_axes(g, axes), np.einsum(spec, g))
    for gs, s in (((3, 4, 2), (3, 1, 2)), ((3, 4, 2), (4, 1)), ((3, 4, 2), (3, 4, 2)), ((4, 2), (2,)),
                  ((4, 2), (3, 4, 2)), ((4, 1), [4, 1])):
        for _ in range(2):  # (the second time from the cache)
            g = rng.uniform(-1, 1, gs)
            r = array.unbroadcast(g, s)
            assert r.shape == tuple(s)
            if len(gs) >= len(s):
                nd = len(gs) - len(s)
                ref = np.sum(g, axis=tuple(range(nd)) + tuple(
                    nd + i for i, n in enumerate(s) if n == 1 and gs[nd + i] != 1), keepdims=False)
                np.testing.assert_allclose(r, np.reshape(ref, s), rtol=1e-15)
