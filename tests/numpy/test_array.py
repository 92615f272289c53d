"""Array duals as numpy users see them: attributes, operators, indexing, immutability, mixing
with scalar duals and object arrays, errors, dtypes, memory, Jacobian layouts and nesting."""

import gc
import math
import re
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import seeds, shapes

from numpy import asarray as bound_asarray  # bound before any differentiation: numpy's own

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def inside(f, *args):
    """Run ``f`` on array duals of ``args`` (inside a vjp) and return what it returns."""
    box = []
    d.vjp(lambda *xs: box.append(f(*xs)) or 0.0, *args)
    return box[0]


# --------------------------------------------------------------------------------------------
# Attributes and protocols


def test_attributes_and_len_and_iteration():
    def f(x):
        assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float64
        assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6
        assert x.T.shape == (3, 2) and len(x) == 2
        rows = list(x)
        assert len(rows) == 2 and isinstance(rows[0], d.ArrayDual) and rows[0].shape == (3,)
        assert all(type(e) is d.Dual for e in rows[1])
        assert "ArrayDual" in repr(x)
        return np.sum(rows[0] * 2.0) + rows[1][2]

    g = d.grad(f)(X)
    np.testing.assert_array_equal(g, [[2, 2, 2], [0, 0, 1]])


@settings(max_examples=25, deadline=None)
@given(shape=shapes(min_dims=1, max_side=3), seed=seeds)
def test_flat_nbytes_itemsize_as_numpy(shape, seed):
    """``x.flat`` (iterated, indexed, ``len``), ``x.nbytes`` and ``x.itemsize`` answer as on
    the plain array; ``sum(x.flat)`` differentiates to ones, against forward mode."""
    a = np.random.default_rng(seed).uniform(-2, 2, shape)

    def f(x):
        assert x.nbytes == a.nbytes and x.itemsize == a.itemsize and len(x.flat) == a.size
        elems = list(x.flat)
        assert [d.value(e) for e in elems] == list(a.flat)
        if a.size:
            assert d.value(x.flat[a.size - 1]) == a.flat[a.size - 1]
        return sum(elems, 0.0) * 1.5

    g = d.grad(f)(a)
    np.testing.assert_array_equal(g, np.full(shape, 1.5))
    t = np.random.default_rng(seed + 1).uniform(-1, 1, shape)
    assert d.jvp(f, (a,), (t,))[1] == pytest.approx(1.5 * t.sum(), rel=1e-12, abs=1e-12)


def test_comparisons_return_plain_bool_arrays():
    def f(x):
        for r in (x > 2.0, x <= 3.0, x == x, x != 1.0, np.greater(x, 2.0), np.isnan(x), np.isfinite(x), 2.0 < x):
            assert isinstance(r, np.ndarray) and r.dtype == bool, r
        assert np.all(x > 0.0) and not np.any(x > 10.0)
        assert isinstance(np.argmax(x), (int, np.integer))
        assert np.floor(x).dtype == np.float64 and not isinstance(np.floor(x), d.ArrayDual)
        return np.sum(np.where(x > 2.0, x, 0.0))

    np.testing.assert_array_equal(d.grad(f)(X), X > 2.0)


def test_getitem_int_is_scalar_dual_on_same_tape():
    def f(x):
        s = x[1, 2]
        assert type(s) is d.Dual and s.trace is x.trace
        t = x[0][1]
        assert type(t) is d.Dual
        return s * t + np.sin(s)

    g = d.grad(f)(X)
    expected = np.zeros_like(X)
    expected[1, 2] = 2.0 + math.cos(6.0)
    expected[0, 1] = 6.0
    np.testing.assert_allclose(g, expected)


def test_setitem_raises_pointing_to_at():
    def f(x):
        x[0] = 1.0

    with pytest.raises(TypeError, match=r"x\.at\[i\]\.set\(v\)"):
        d.grad(f)(X)


@pytest.mark.parametrize("how", ["slice", "int row", "ellipsis", "loop row"])
@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**="])
def test_in_place_operator_on_a_slice_raises(how, op):
    """``v = a[1:]; v += 1`` writes into ``a`` in numpy; deltaad's immutable ``a`` would keep
    its old values, so the program's value and derivative would silently differ: an error
    naming the operator and the fix, in both modes."""

    def f(x):
        a = x * 2.0
        if how == "loop row":
            for v in a:
                exec("v %s 1.5" % op)
        else:
            v = {"slice": lambda: a[1:], "int row": lambda: a[0],
                 "ellipsis": lambda: a[..., :2]}[how]()
            exec("v %s 1.5" % op)
        return np.sum(a)

    for mode in (d.grad, d.jacfwd):
        with pytest.raises(TypeError, match=r"v %s= \.\.\. on a slice.*a = a\.at\[index\]"
                           % re.escape(op[:-1])):
            mode(f)(X)
    assert d.open_traces() == []


def test_in_place_operator_on_a_whole_array_or_a_copy_rebinds():
    """On a whole array dual (or a copy made by advanced indexing) ``y += 1`` binds ``y`` to a
    new array dual, as in JAX: numpy changes no other array there."""

    def f(x):
        y = x * 2.0
        y += 1.0
        y *= x
        w = x[[0, 1]]
        w -= 3.0
        return np.sum(y) + np.sum(w * w)

    xv = X.copy()
    expected = 4.0 * xv + 1.0
    expected[[0, 1]] += 2.0 * (xv[[0, 1]] - 3.0)
    np.testing.assert_allclose(d.grad(f)(xv), expected)
    np.testing.assert_allclose(d.jacfwd(f)(xv), expected)


def test_at_set_and_add_differentiable_in_both_arguments():
    def f(x, v):
        y = x.at[0, 1:].set(v * 3.0)
        z = y.at[1].add(v[0])
        assert isinstance(z, d.ArrayDual)
        return np.sum(z * z)

    gx, gv = d.grad(f, argnums=(0, 1))(X, np.array([7.0, 8.0]))
    y = X.copy()
    y[0, 1:] = [21.0, 24.0]
    y[1] += 7.0
    ex = 2 * y
    ex[0, 1:] = 0.0
    np.testing.assert_allclose(gx, ex)
    np.testing.assert_allclose(gv, [3 * 2 * 21 + 2 * np.sum(y[1]), 3 * 2 * 24])
    assert np.array_equal(d.at(X)[0].get(), X[0])


def test_object_arrays_of_scalar_duals():
    w = np.array([[1.0, -1.0], [2.0, 0.5]])

    def f(a, b, c):
        v = np.array([a, b, c], dtype=object)
        assert v.dtype == object
        e = np.sin(v) * v + np.exp(v) - np.tanh(v) / (1.0 + np.sqrt(np.abs(v)))
        m = np.max(v) + np.mean(v) + np.prod(v) + np.sum(e) + np.dot(v[:2], w).sum()
        return m + np.sum(v ** 2.0) + np.sum(np.cumsum(v))

    args = (0.3, 1.2, 0.7)
    g = d.grad(f, argnums=(0, 1, 2))(*args)

    def fp(x):
        a, b, c = x
        v = np.array([a, b, c])
        e = np.sin(v) * v + np.exp(v) - np.tanh(v) / (1.0 + np.sqrt(np.abs(v)))
        return np.max(v) + np.mean(v) + np.prod(v) + np.sum(e) + np.dot(v[:2], w).sum() + np.sum(v ** 2.0) + np.sum(np.cumsum(v))

    ga = d.grad(fp)(np.array(args))
    np.testing.assert_allclose(g, ga, rtol=1e-12)


def test_object_array_meets_array_dual_and_scalar_dual():
    def f(x):
        v = np.array([x[0], x[1] * 2.0], dtype=object)
        a = v * x  # object array * array dual -> packed into an array dual
        assert isinstance(a, d.ArrayDual)
        b = v * x[0]  # object array * scalar dual: numpy's object semantics
        assert isinstance(b, np.ndarray) and b.dtype == object
        return np.sum(a) + np.sum(b) + np.sum(d.asarray(v) ** 2)

    x = np.array([1.5, -0.5])
    g = d.grad(f)(x)
    fp = lambda x: x[0] * x[0] + 2 * x[1] * x[1] + x[0] * x[0] + 2 * x[1] * x[0] + x[0] ** 2 + 4 * x[1] ** 2
    np.testing.assert_allclose(g, d.grad(fp)(x))


def test_deltaad_stack_and_asarray_of_scalar_duals():
    def f(a, b):
        v = d.stack([a, b * b, 2.0])
        assert isinstance(v, d.ArrayDual) and v.shape == (3,)
        m = d.asarray([[a, 1.0], [b, a * b]])
        assert isinstance(m, d.ArrayDual) and m.shape == (2, 2)
        return np.sum(v * v) + np.linalg.det(m)

    ga, gb = d.grad(f, argnums=(0, 1))(1.5, 2.0)
    # f = a^2 + b^4 + 4 + (a*a*b - b)
    assert ga == pytest.approx(2 * 1.5 + 2 * 1.5 * 2.0)
    assert gb == pytest.approx(4 * 8.0 + 1.5 ** 2 - 1.0)


def test_np_stack_of_scalar_duals_gives_array_dual():
    def f(a, b):
        v = np.stack([a, b])
        assert isinstance(v, d.ArrayDual)
        return np.sum(v ** 2)

    assert d.grad(f, argnums=(0, 1))(1.0, 3.0) == (2.0, 6.0)


def test_np_stack_of_scalar_duals_differentiates_on_every_backend():
    f = lambda a, b: np.sum(np.stack([a, b * a]) ** 2)
    assert d.grad(f, argnums=(0, 1))(1.0, 3.0) == pytest.approx((2.0 + 2 * 9.0, 2 * 3.0))


def test_scalar_dual_times_array_dual_both_orders():
    def f(x, s):
        return np.sum(s * x + x * s + x / s + s / x + x ** s)

    x = np.array([1.0, 2.0])
    gx, gs = d.grad(f, argnums=(0, 1))(x, 1.5)
    gx2, gs2 = d.grad(lambda x, s: np.sum(s[0] * x + x * s[0] + x / s[0] + s[0] / x + x ** s[0]), argnums=(0, 1))(x, np.array([1.5]))
    np.testing.assert_allclose(gx, gx2)
    assert gs == pytest.approx(gs2[0])
    assert type(gs) is float


def test_numpy_scalars_and_0d_arrays_with_array_duals():
    f = lambda x: np.sum(np.float64(2.0) * x + np.float32(1.0) * x + np.array(3.0) * x)
    np.testing.assert_allclose(d.grad(f)(X), np.full(X.shape, 6.0))


def test_deltaad_functions_on_arrays_and_lists():
    x = np.array([0.1, 0.2])
    np.testing.assert_allclose(d.sin(x), np.sin(x))
    np.testing.assert_allclose(d.erf(x), [math.erf(0.1), math.erf(0.2)])
    np.testing.assert_allclose(d.sigmoid(np.array([-800.0, 0.0, 800.0])), [0.0, 0.5, 1.0])
    g = d.grad(lambda x: np.sum(d.erf(x) + d.softplus(x) + d.sigmoid(x) + d.sqrt(x)))(x)
    e = lambda t: 2 / math.sqrt(math.pi) * math.exp(-t * t) + 1 / (1 + math.exp(-t)) + math.exp(-t) / (1 + math.exp(-t)) ** 2 + 0.5 / math.sqrt(t)
    np.testing.assert_allclose(g, [e(0.1), e(0.2)])


# --------------------------------------------------------------------------------------------
# Errors


def test_unsupported_numpy_function_raises_naming_it():
    for fn, name in [
        (lambda x: np.bincount([0, 1], weights=x[0]), "numpy.bincount"),
        (lambda x: np.nextafter(x, 1.0), "numpy.nextafter"),
        (lambda x: np.add.at(x, [0, 1], 1.0), "numpy.add.at"),
        (lambda x: np.polydiv(x[0], x[1]), "numpy.polydiv"),
    ]:
        with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
            d.grad(lambda x: np.sum(fn(x)))(np.eye(2) + 1.0)


def test_conversions_that_would_drop_the_derivative_raise():
    # arrays made before the differentiation are numpy's float arrays (one made inside by the
    # function's own np.zeros takes duals: tests/numpy/test_fillable.py)
    a, b = np.zeros(3), np.zeros(2)

    def f(x):
        with pytest.raises(TypeError, match="drop"):
            bound_asarray(x, dtype=float)
        with pytest.raises(TypeError, match="drop"):
            float(x[0:1])
        with pytest.raises(TypeError):
            a[:2] = x[0]
        with pytest.raises(TypeError, match="immutable"):
            np.add(x, 1.0, out=b)
        with pytest.raises(TypeError, match="index"):
            x[x[0]]
        return np.sum(x)

    d.grad(f)(np.array([1.0, 2.0]))


def test_grad_of_a_complex_output_is_a_type_error():
    # (complex values inside and at the inputs are supported: tests/test_complex.py)
    with pytest.raises(TypeError, match="complex"):
        d.grad(lambda x: np.sum(x))(np.array([1.0 + 1j]))
    with pytest.raises(TypeError, match="holomorphic=True"):
        d.grad(lambda x: np.sum(x.astype(complex)))(np.array([1.0]))


def test_escaped_array_dual_raises():
    box = []
    d.grad(lambda x: box.append(x) or np.sum(x))(np.ones(2))
    with pytest.raises(d.EscapedDualError):
        box[0] * 2.0
    with pytest.raises(d.EscapedDualError):
        np.sin(box[0])
    assert "ArrayDual" in repr(box[0])
    np.testing.assert_array_equal(d.value(box[0]), np.ones(2))


def test_grad_of_non_scalar_array_is_an_error():
    with pytest.raises(TypeError, match="one real number"):
        d.grad(lambda x: x * 2.0)(np.ones(2))


# --------------------------------------------------------------------------------------------
# dtypes, shapes, memory


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_gradient_keeps_dtype_and_shape(dtype):
    for shape in [(), (3,), (2, 0), (2, 3)]:
        x = np.ones(shape, dtype=dtype)
        g = d.grad(lambda x: np.sum(np.sin(x) * 2.0))(x)
        assert isinstance(g, np.ndarray) and g.dtype == dtype and g.shape == shape
        g2 = d.grad(lambda x: 3.0)(x)  # output independent of x: zeros
        assert g2.dtype == dtype and g2.shape == shape and not g2.any()


def test_gradient_arrays_are_writeable_and_not_aliased():
    x = np.ones(3)
    g = d.grad(lambda x: np.sum(x))(x)
    g += 1.0
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(x, [1.0, 1.0, 1.0])


def test_nothing_of_the_tape_remains_after_grad():
    refs = []

    def f(x, w):
        refs.append(weakref.ref(x.trace))
        h = np.tanh(x @ w)
        return np.sum(h * h) + np.linalg.det(w[:2, :2])

    x = np.ones((4, 3))
    w = np.full((3, 3), 0.1) + np.eye(3)
    g = d.grad(f, argnums=(0, 1))(x, w)
    gc.collect()  # (pytrees' flatten/unflatten closures make short-lived reference cycles)
    assert refs[0]() is None
    vjp_out, pb = d.vjp(f, x, w)
    gc.collect()
    assert refs[1]() is not None  # the pullback keeps its tape ...
    del pb
    gc.collect()
    assert refs[1]() is None  # ... and only the pullback
    assert g[0].shape == x.shape


def test_repeated_gradients_do_not_accumulate_memory():
    import tracemalloc

    x = np.ones(200_000)  # 1.6 MB: every binding of f keeps an array of this size
    f = lambda x: np.sum(np.sin(x) * np.exp(x) + np.tanh(x) ** 2)
    d.grad(f)(x)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(5):
            d.grad(f)(x)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 2_000_000, grown  # less than one array: the tapes are gone


def test_hessian_tapes_are_freed():
    refs = []

    def f(x):
        refs.append(weakref.ref(x.trace))
        return np.sum(np.exp(x) * x[0])

    h = d.hessian(f)(np.array([0.5, 1.0]))
    assert h.shape == (2, 2)
    gc.collect()
    assert all(r() is None for r in refs)


def test_zero_size_and_0d_inputs():
    assert d.grad(lambda x: np.sum(x ** 2))(np.zeros((0, 3))).shape == (0, 3)
    g = d.grad(lambda x: x * x)(np.array(3.0))
    assert isinstance(g, np.ndarray) and g.shape == () and g == 6.0
    out, t = d.jvp(lambda x: np.sin(x), (np.array(0.0),), (np.array(1.0),))
    assert t.shape == () and t == 1.0


# --------------------------------------------------------------------------------------------
# Transformations: layouts, nesting, aux, cotangents


def test_jacobian_layouts_follow_jax():
    f = lambda x: np.concatenate([np.sum(x, axis=0), np.ravel(x[0] * x[1])])
    x = np.arange(6.0).reshape(2, 3) + 1.0
    jr = d.jacrev(f)(x)
    jf = d.jacfwd(f)(x)
    assert jr.shape == (6, 2, 3) and jf.shape == (6, 2, 3)
    np.testing.assert_allclose(jr, jf)
    np.testing.assert_allclose(jr[3], [[x[1, 0], 0, 0], [x[0, 0], 0, 0]])
    jt = d.jacrev(lambda x, y: (x * y, np.sum(x)), argnums=(0, 1))(np.ones(2), np.full(2, 3.0))
    assert jt[0][0].shape == (2, 2) and jt[1][1].shape == (2,)


def test_hessian_of_array_code():
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]])

    def f(x):
        return 0.5 * x @ a @ x + np.sum(np.sin(x)) + np.prod(x)

    x = np.array([0.3, -0.7, 1.1])
    h = d.hessian(f)(x)
    p = np.prod(x)
    expected = a - np.diag(np.sin(x)) + np.array([[0 if i == j else p / (x[i] * x[j]) for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(h, expected, rtol=1e-12)
    h2 = d.jacrev(d.jacrev(f))(x)
    h3 = d.jacfwd(d.jacfwd(f))(x)
    h4 = d.jacrev(d.jacfwd(f))(x)
    for hh in (h2, h3, h4):
        np.testing.assert_allclose(hh, expected, rtol=1e-12)


def test_third_derivative_through_arrays():
    f = lambda x: np.sum(np.exp(2.0 * x) * x)
    x = np.array([0.1, 0.4])
    t3 = d.jacfwd(d.hessian(f))(x)
    expected = np.zeros((2, 2, 2))
    for i in range(2):
        xi = x[i]
        expected[i, i, i] = np.exp(2 * xi) * (8 * xi + 12)
    np.testing.assert_allclose(t3, expected, rtol=1e-12)


def test_perturbation_confusion_with_arrays():
    # d/dx (x * d/dy (x + y)) = 1, with arrays
    def outer(x):
        inner = d.grad(lambda y: np.sum(x + y))(np.ones(2))
        return np.sum(x * inner)

    np.testing.assert_array_equal(d.grad(outer)(np.array([3.0, 4.0])), [1.0, 1.0])


def test_grad_has_aux_and_vjp_with_array_cotangent():
    g, aux = d.grad(lambda x: (np.sum(x ** 2), x * 2.0), has_aux=True)(np.ones(2))
    np.testing.assert_array_equal(g, [2.0, 2.0])
    assert isinstance(aux, np.ndarray) and not isinstance(aux, d.ArrayDual)
    out, pb = d.vjp(lambda x: (x * 2.0, np.sum(x)), np.ones(3))
    (gx,) = pb((np.array([1.0, 2.0, 3.0]), 1.0))
    np.testing.assert_array_equal(gx, [3.0, 5.0, 7.0])
    (gx,) = pb((np.array([1.0, 2.0, 3.0]), np.float64(0.0)))
    np.testing.assert_array_equal(gx, [2.0, 4.0, 6.0])


def test_jvp_tangent_shape_must_match():
    with pytest.raises(ValueError, match="shape"):
        d.jvp(lambda x: x, (np.ones(3),), (np.ones(2),))


def test_prod_and_cumprod_exact_at_zeros():
    x = np.array([2.0, 0.0, 3.0, 0.5])
    np.testing.assert_allclose(d.grad(lambda x: np.prod(x))(x), [0.0, 3.0, 0.0, 0.0])
    x1 = np.array([2.0, 0.0, 3.0])
    np.testing.assert_allclose(d.jacrev(np.cumprod)(x1), d.jacfwd(np.cumprod)(x1))
    np.testing.assert_allclose(d.jacrev(np.cumprod)(x1), [[1, 0, 0], [0, 2, 0], [0, 6, 0]])
    h = d.hessian(lambda x: np.prod(x))(np.array([0.0, 0.0, 2.0]))
    np.testing.assert_allclose(h, [[0, 2, 0], [2, 0, 0], [0, 0, 0]])


def test_max_ties_split_evenly_and_sort_follows_permutation():
    np.testing.assert_allclose(d.grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0])), [0.0, 0.5, 0.5])
    np.testing.assert_allclose(d.grad(lambda x: np.maximum(x[0], x[1]))(np.array([2.0, 2.0])), [0.5, 0.5])
    x = np.array([3.0, 1.0, 2.0])
    np.testing.assert_allclose(d.jacrev(np.sort)(x), [[0, 1, 0], [0, 0, 1], [1, 0, 0]])


def test_stable_logsumexp_at_extreme_values():
    x = np.array([1000.0, 1000.0, -1000.0])
    assert d.logsumexp(x) == pytest.approx(1000.0 + math.log(2.0))
    np.testing.assert_allclose(d.grad(d.logsumexp)(x), [0.5, 0.5, 0.0])

    def lse(x):
        m = np.max(x)
        return m + np.log(np.sum(np.exp(x - m)))

    np.testing.assert_allclose(d.grad(lse)(x), [0.5, 0.5, 0.0])
    h = d.hessian(d.logsumexp)(np.array([0.0, 0.0]))
    np.testing.assert_allclose(h, [[0.25, -0.25], [-0.25, 0.25]])


def test_clip_and_abs_conventions_match_scalar_functions():
    g = d.grad(lambda x: np.sum(np.clip(x, -1.0, 1.0)))(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0])
    g = d.grad(lambda x: np.sum(np.abs(x)))(np.array([-2.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g, [-1, 0, 1])
    g = d.grad(lambda x: np.linalg.norm(x))(np.zeros(3))
    np.testing.assert_array_equal(g, [0, 0, 0])


def test_float32_program_stays_float32():
    x = np.ones(4, dtype=np.float32)
    w = np.ones((4, 2), dtype=np.float32)

    def f(x, w):
        h = np.tanh(x @ w)
        assert h.dtype == np.float32
        return np.sum(h)

    gx, gw = d.grad(f, argnums=(0, 1))(x, w)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    out, t = d.jvp(lambda x: np.sin(x) * 2.0, (x,), (np.ones(4, dtype=np.float32),))
    assert out.dtype == np.float32 and t.dtype == np.float32


def test_mlp_softmax_cross_entropy_gradient():
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((8, 5))
    yb = rng.integers(0, 3, 8)
    params = {"w1": rng.standard_normal((5, 4)) * 0.5, "b1": np.zeros(4), "w2": rng.standard_normal((4, 3)) * 0.5, "b2": np.zeros(3)}

    def loss(p):
        h = np.tanh(xb @ p["w1"] + p["b1"])
        z = h @ p["w2"] + p["b2"]
        z = z - np.max(z, axis=1, keepdims=True)
        logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return -np.mean(logp[np.arange(8), yb])

    g = d.grad(loss)(params)
    assert set(g) == set(params)
    eps = 1e-6
    for k in params:
        v = rng.standard_normal(params[k].shape)
        pp = dict(params, **{k: params[k] + eps * v})
        pm = dict(params, **{k: params[k] - eps * v})
        fd = (loss(pp) - loss(pm)) / (2 * eps)
        assert np.sum(g[k] * v) == pytest.approx(fd, rel=1e-6, abs=1e-9)


@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(shapes(min_dims=1, max_dims=4, max_side=5), st.data())
def test_unbroadcast_sums_like_numpy(shape, data):
    """The cotangent sum over broadcast axes (einsum on the fast path) equals np.sum."""
    from deltaad.numpy.array import _sum_axes
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    dtype = data.draw(st.sampled_from([np.float64, np.float32]))
    g = np.random.default_rng(data.draw(seeds)).uniform(-2, 2, shape).astype(dtype)
    got, want = _sum_axes(g, axes), np.sum(g, axis=axes)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
    tol = 1e-5 if dtype is np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_ufunc_methods_without_rules_run_numpys_object_loop():
    """``reduceat`` has no rule; numpy's object loop for ``add`` sums the scalar duals."""
    x = np.array([[0.5, 2.0], [1.5, -1.0]])
    g = d.grad(lambda x: np.sum(np.add.reduceat(x * x, [0, 1], axis=1) * [[1.0, 3.0]]))(x)
    np.testing.assert_array_equal(g, 2 * x * [[1.0, 3.0]])


def test_array_trace_method_names_np_trace():
    """``A.trace()`` (numpy's method) on an array dual: ``A.trace`` is the dual's trace, so
    the call raises naming ``np.trace(A)``, which works, in reverse and forward mode."""
    A = np.array([[1.0, 2.0], [3.0, 4.0]])

    def f(x):
        with pytest.raises(TypeError, match=r"np\.trace\(A\)"):
            x.trace()
        return np.trace(x) * 2.0

    np.testing.assert_array_equal(d.grad(f)(A), 2.0 * np.eye(2))
    assert d.jvp(f, (A,), (np.ones((2, 2)),))[1] == 4.0


def test_grad_of_a_0d_array_output_matches_the_vjp_path():
    """grad's short path for one 0-d float64 output (np.sum of an array dual) gives what the
    general path (vjp with a 0-d cotangent) gives: the value as numpy's scalar, the gradient,
    aux, a constant output's zero gradient; a float32 output keeps the general path."""
    x = np.array([0.3, -1.2, 2.5])

    def f(a):
        return np.sum(np.sin(a) * a)

    v, g = d.value_and_grad(f)(x)
    out, pb = d.vjp(f, x)
    (g_ref,) = pb(np.ones(()))
    assert type(v) is np.float64 and v == f(x)
    assert type(g) is np.ndarray and g.dtype == np.float64 and g.flags.writeable
    np.testing.assert_array_equal(g, g_ref)
    np.testing.assert_array_equal(g, np.sin(x) + x * np.cos(x))
    g2, aux = d.grad(lambda a: (np.sum(a * a), "aux"), has_aux=True)(x)
    assert aux == "aux"
    np.testing.assert_array_equal(g2, 2 * x)
    # an output that does not depend on the input: a zero gradient, numpy's scalar value
    v0, g0 = d.value_and_grad(lambda a: np.sum(np.ones(3)))(x)
    assert v0 == 3.0
    np.testing.assert_array_equal(g0, np.zeros(3))
    # two arguments, argnums a tuple
    ga, gb = d.grad(lambda a, b: np.sum(a * b), argnums=(0, 1))(x, 2 * x)
    np.testing.assert_array_equal(ga, 2 * x)
    np.testing.assert_array_equal(gb, x)
    # float32: the general path's dtype handling
    x32 = x.astype(np.float32)
    g32 = d.grad(lambda a: np.sum(a * a))(x32)
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, 2 * x32)


@pytest.mark.parametrize("n", [3, 700, 1500])
def test_reading_an_input_vector_element_by_element(n, monkeypatch):
    """``x[i]`` in a Python loop over a 1-d array dual: past a number of reads the scalars are
    unpacked once (a gather, linear in n) instead of a dense one-hot cotangent per read
    (quadratic). The gradient equals the dense reads' (held to them with unpacking switched
    off) and the closed form; repeated, negative and mixed reads, a hessian and numpy's
    IndexError are unchanged."""
    from deltaad.numpy import array as A

    x = np.linspace(-1.0, 2.0, n)

    def f(a):
        s = 0.0
        for i in range(len(a)):
            s += a[i] ** 2 * a[-1 - i] + a[i] * 3
        return s + a[0] * a[n // 2]

    g = d.grad(f)(x)
    monkeypatch.setattr(A, "_unpack_at", lambda n: 10 ** 9)
    g_dense = d.grad(f)(x)
    monkeypatch.undo()
    np.testing.assert_array_equal(g, g_dense)
    want = 2 * x * x[::-1] + x[::-1] ** 2 + 3.0
    want[0] += x[n // 2]
    want[n // 2] += x[0]
    np.testing.assert_allclose(g, want, rtol=1e-12)
    h = d.hessian(lambda a: sum(a[i] ** 3 for i in range(len(a))))(x[:5])
    np.testing.assert_allclose(h, np.diag(6 * x[:5]), rtol=1e-12)
    with pytest.raises(IndexError, match="out of bounds"):
        d.grad(lambda a: sum(a[i] for i in range(len(a) + 1)))(x)


def _element_program(kind, n):
    """A function of a vector that reads its elements (and those of an intermediate array)
    one by one, mixed with array operations on the same arrays: ``kind`` picks the mix."""

    def f(a):
        y = np.sin(a) * 2.0 + a
        s = np.sum(a * a) * 0.25 if kind % 2 else 0.0
        for i in range(n):
            s = s + a[i] * y[(i * 3) % n] - a[-1 - i] ** 2 * 0.5
            if kind >= 2 and a[i] > 0.0:  # a branch on an element
                s = s + y[i] * a[0]
        return s + (np.sum(y[1:]) if kind % 2 else a[n - 1] * a[0])

    return f


@settings(deadline=None, max_examples=20)
@given(st.integers(1, 80), st.integers(0, 3), st.integers(0, 2 ** 16))
def test_unpacked_vectors_give_the_dense_reads_gradient(n, kind, seed):
    """Element reads of an input and of an intermediate vector, past the read that unpacks
    them: the gradient is the dense reads' (unpacking switched off: each read its own one-hot
    cotangent) to rounding, the other mode's (jvp along each basis vector, the forward level's
    element duals) and the central differences'; a vjp's pullback called twice (two sweeps of
    one tape, each gathering again) gives the same twice."""
    from deltaad.numpy import array as A

    x = np.random.default_rng(seed).uniform(-1.5, 1.5, n)
    f = _element_program(kind, n)
    g = d.grad(f)(x)
    out, pb = d.vjp(f, x)
    (g1,), (g2,) = pb(1.0), pb(1.0)
    np.testing.assert_array_equal(g1, g)
    np.testing.assert_array_equal(g2, g)
    fwd = np.array([d.jvp(f, (x,), (e,))[1] for e in np.eye(n)])
    np.testing.assert_allclose(g, fwd, rtol=1e-12, atol=1e-12)
    saved = A._unpack_at
    A._unpack_at = lambda m: 10 ** 9
    try:
        g_dense = d.grad(f)(x)
    finally:
        A._unpack_at = saved
    np.testing.assert_allclose(g, g_dense, rtol=1e-13, atol=1e-13)
    h = 1e-6
    for k in range(min(n, 4)):
        e = np.zeros(n)
        e[k] = h
        if kind >= 2 and np.any(np.abs(x) < 2 * h):
            continue  # a branch at the step's reach
        np.testing.assert_allclose(g[k], (f(x + e) - f(x - e)) / (2 * h), rtol=1e-5, atol=1e-6)


def test_unpacked_vectors_nested_and_checkpointed():
    """Second derivatives through element reads (forward over reverse, reverse over reverse),
    jacrev's several sweeps of one tape, a checkpoint reading elements, float32 vectors and
    elements no adjoint reaches."""
    x = np.array([0.3, -1.2, 0.8, 2.0, -0.4])
    cube = lambda a: sum(a[i] ** 3 for i in range(len(a)))  # noqa: E731
    np.testing.assert_allclose(d.hessian(cube)(x), np.diag(6 * x), rtol=1e-12)
    np.testing.assert_allclose(d.jacrev(d.grad(cube))(x), np.diag(6 * x), rtol=1e-12)
    np.testing.assert_allclose(d.jacfwd(d.grad(cube))(x), np.diag(6 * x), rtol=1e-12)
    jac = d.jacrev(lambda a: np.stack([a[0] * a[1], a[1] * a[2], a[2] + a[0], a[1] * a[1]]))(x)
    want = np.zeros((4, 5))
    want[0, :2] = x[1], x[0]
    want[1, 1:3] = x[2], x[1]
    want[2, [0, 2]] = 1.0
    want[3, 1] = 2 * x[1]
    np.testing.assert_array_equal(jac, want)
    ck = d.checkpoint(lambda a: a[0] * a[1] + a[2] * a[0] * a[1])
    np.testing.assert_allclose(d.grad(lambda a: ck(a) * a[3])(x),
                               d.grad(lambda a: (a[0] * a[1] + a[2] * a[0] * a[1]) * a[3])(x),
                               rtol=1e-15)
    for c in (None, 3, "auto"):  # a checkpointed loop's steps read a captured vector
        def loop(a, c=c):
            s = d.fori_loop(0, 12, lambda i, s: s + a[i % 5] * s * 0.1 + a[(i + 2) % 5], 1.0,
                            checkpoints=c)
            return s * a[4] + a[0]
        if c is None:
            g_loop = d.grad(loop)(x)
        else:
            np.testing.assert_allclose(d.grad(loop)(x), g_loop, rtol=1e-14)
    g32 = d.grad(lambda a: a[0] * a[1] * a[2])(x.astype(np.float32))
    assert g32.dtype == np.float32
    g0 = d.grad(lambda a: a[0] * a[0] * a[0] + 0.0 * np.sum(a))(x)
    np.testing.assert_array_equal(g0, [3 * x[0] ** 2, 0, 0, 0, 0])


def test_element_reads_of_an_unpacked_vector():
    """Once unpacked, ``x[i]`` is the element's dual itself (the compiled fast path reads the
    cache in C, the Python path in ``__getitem__``: the same dual), negative indices count
    from the end, an index out of range is numpy's IndexError, and a read after the
    differentiation has finished raises as any escaped dual does."""
    kept = []

    def f(a):
        s = a[0] * a[1] + a[2]
        assert a[1] is a[1] and a[-1] is a[2] and a[-3] is a[0]
        with pytest.raises(IndexError):
            a[3]
        with pytest.raises(IndexError):
            a[-4]
        kept.append(a)
        return s

    np.testing.assert_array_equal(d.grad(f)(np.array([1.0, 2.0, 3.0])), [2.0, 1.0, 1.0])
    with pytest.raises(d.EscapedDualError):
        kept[0][1]


def test_an_unpacked_vector_leaves_no_cycle():
    """The tape of a gradient that unpacked a vector is freed when the gradient returns, with
    the collector off: the gather node holds its tape weakly (a node holding it would make a
    cycle tape -> rule -> node -> tape only the collector frees)."""
    refs = []

    def f(a):
        refs.append(weakref.ref(d.open_traces()[-1]))
        return a[0] * a[1] + a[1] * a[2] + a[2] * a[0]

    gc.collect()
    gc.disable()
    try:
        g = d.grad(f)(np.array([1.0, 2.0, 3.0]))
        out, pb = d.vjp(f, np.array([1.0, 2.0, 3.0]))
        (g2,) = pb(1.0)
        del pb
        assert [r() for r in refs] == [None, None]
    finally:
        gc.enable()
    np.testing.assert_array_equal(g, [5.0, 4.0, 3.0])
    np.testing.assert_array_equal(g2, g)
