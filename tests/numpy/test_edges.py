"""numpy functions at their edges: each case here once gave a silently wrong result or a
spurious error (an audit's findings), and is held against numpy's values, finite differences
and the other mode (``check_first_order``/``check_second_order`` of numpy_checks)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as ad
from numpy_checks import check_first_order, check_second_order


def fd_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# -- ufunc methods: out= and dtype= -------------------------------------------------------


def test_reduce_out_raises_and_dtype_casts():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    made_before = {"reduce": np.zeros(2), "accumulate": np.zeros((2, 2))}  # numpy's arrays
    for name, method in (("reduce", lambda u, x, **k: u.reduce(x, axis=0, **k)),
                         ("accumulate", lambda u, x, **k: u.accumulate(x, axis=0, **k))):
        with pytest.raises(TypeError, match="out="):
            ad.grad(lambda x: np.sum(method(np.add, x, out=made_before[name])))(x)
        with pytest.raises(TypeError, match="drop the derivative"):
            ad.grad(lambda x: np.sum(method(np.add, x * 0.6, dtype=int)))(x)
    out, pb = ad.vjp(lambda x: np.add.reduce(x, axis=0, dtype=np.float32), x)
    assert out.dtype == np.float32 and np.array_equal(out, np.add.reduce(x, axis=0, dtype=np.float32))
    assert np.array_equal(pb(np.ones(2, np.float32))[0], np.ones((2, 2)))


# -- at[].set with repeated indices --------------------------------------------------------


@given(st.lists(st.integers(0, 4), min_size=1, max_size=6),
       st.lists(st.floats(-2, 2), min_size=6, max_size=6),
       st.lists(st.floats(-2, 2), min_size=5, max_size=5))
def test_at_set_repeated_indices(idx, vs, xs):
    """numpy keeps one write per repeated index: only that element of v reaches the output.
    Reverse, forward and finite differences agree, for v and for x."""
    idx = np.array(idx)
    v = np.array(vs[:len(idx)])
    x = np.array(xs)
    w = np.arange(1.0, 6.0)

    def f(x, v):
        return np.sum(w * ad.at(x)[idx].set(v))

    def plain(x, v):
        y = x.copy()
        y[idx] = v
        return np.sum(w * y)

    gx, gv = ad.grad(f, argnums=(0, 1))(x, v)
    assert np.allclose(gv, fd_grad(lambda v: plain(x, v), v), atol=1e-6)
    assert np.allclose(gx, fd_grad(lambda x: plain(x, v), x), atol=1e-6)
    jv = ad.jacfwd(f, argnums=1)(x, v)
    assert np.allclose(jv, gv)
    check_first_order(lambda x, v: ad.at(x)[idx].set(v * x[0]), (x, v))


# -- powers with a zero exponent at a zero base --------------------------------------------


def test_zero_exponent_at_zero_base():
    c = np.array([1.0, 2.0, 3.0, 4.0])
    f = lambda x: np.sum(c * x ** np.arange(4.0))  # noqa: E731  1 + 2x + 3x^2 + 4x^3
    assert ad.grad(f)(np.array(0.0)) == 2.0
    assert ad.jvp(f, (np.array(0.0),), (np.array(1.0),))[1] == 2.0
    assert ad.hessian(f)(np.array(0.0)) == 6.0
    assert np.array_equal(ad.grad(lambda x: np.sum(x ** 0))(np.zeros(2)), np.zeros(2))
    assert np.array_equal(ad.grad(lambda x: np.sum(x ** 0.0))(np.zeros(2)), np.zeros(2))
    check_second_order(lambda x: x ** np.array([0.0, 2.0, 3.0]), (np.array([0.0, 0.0, 0.0]),))


# -- pad, histogram_bin_edges, // ----------------------------------------------------------


def test_pad_odd_reflection_is_refused_even_matches_numpy():
    x = np.arange(1.0, 6.0)
    with pytest.raises(NotImplementedError, match="reflect_type='odd'"):
        ad.vjp(lambda x: np.pad(x, (1, 0), mode="reflect", reflect_type="odd"), x)
    for mode in ("reflect", "symmetric"):
        f = lambda x: np.pad(x, (2, 3), mode=mode, reflect_type="even")  # noqa: E731
        assert np.array_equal(ad.vjp(f, x)[0], f(x))
        check_first_order(f, (x,))


def test_histogram_bin_edges_is_not_derivative_free():
    """Its edges move with the data: numpy's own code, run on the duals, says how (the edges
    are linspace(min, max)), never a derivative-free constant."""
    x = np.array([0.0, 1.0, 3.0])
    f = lambda x: np.sum(np.histogram_bin_edges(x, bins=2))  # noqa: E731
    assert list(ad.grad(f)(x)) == [1.5, 0.0, 1.5]


def test_floor_divide_operator():
    x = np.array([1.0, 2.0, 3.0])
    f = lambda x: np.sum(x * (x // 0.7)) + np.sum(3.0 // x)  # noqa: E731
    assert ad.vjp(f, x)[0] == f(x)
    assert np.array_equal(ad.grad(f)(x), x // 0.7)  # // itself has derivative 0


# -- det at a singular matrix --------------------------------------------------------------


@given(st.integers(1, 4), st.integers(0, 3), st.integers(0, 2 ** 31 - 1))
def test_det_gradient_at_singular_matrices(n, rank, seed):
    """d det / dA is the cofactor matrix, also where A is singular (JAX's answer too)."""
    rank = min(rank, n)
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, rank)) @ rng.normal(size=(rank, n)) if rank else np.zeros((n, n))
    g = ad.grad(np.linalg.det)(a)
    assert np.allclose(g, fd_grad(np.linalg.det, a), atol=1e-5)
    t = rng.normal(size=(n, n))
    assert np.isclose(ad.jvp(np.linalg.det, (a,), (t,))[1], np.sum(g * t), atol=1e-6)
    batch = np.stack([a, np.eye(n)])
    gb = ad.grad(lambda b: np.sum(np.linalg.det(b)))(batch)
    assert np.allclose(gb[0], g) and np.allclose(gb[1], np.eye(n))


def test_det_second_order_at_singular_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="singular"):
        ad.hessian(np.linalg.det)(np.array([[1.0, 2.0], [2.0, 4.0]]))
    check_second_order(np.linalg.det, (np.array([[1.0, 2.0], [3.0, 4.0]]),))


# -- einsum with an explicit path ----------------------------------------------------------


def test_einsum_with_an_explicit_path():
    rng = np.random.default_rng(1)
    a, b, c = rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2))
    path = np.einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")[0]
    f = lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c, optimize=path)  # noqa: E731
    g = lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c)  # noqa: E731
    u = rng.random((3, 2))
    for k in range(3):
        gf = ad.grad(lambda *xs: np.sum(u * f(*xs)), argnums=k)(a, b, c)
        gg = ad.grad(lambda *xs: np.sum(u * g(*xs)), argnums=k)(a, b, c)
        assert np.allclose(gf, gg)
    check_first_order(f, (a, b, c))


# -- dtype= is applied, not ignored --------------------------------------------------------

DTYPE_FUNCS = [
    ("var", lambda x, d: np.var(x, dtype=d)),
    ("std", lambda x, d: np.std(x, axis=0, dtype=d)),
    ("cumsum", lambda x, d: np.cumsum(x, dtype=d)),
    ("cumprod", lambda x, d: np.cumprod(x, axis=1, dtype=d)),
    ("prod", lambda x, d: np.prod(x, dtype=d)),
    ("concatenate", lambda x, d: np.concatenate([x, x], dtype=d)),
    ("stack", lambda x, d: np.stack([x, x], dtype=d)),
    ("trace", lambda x, d: np.trace(x, dtype=d)),
    ("einsum", lambda x, d: np.einsum("ij,kj->ik", x, x, dtype=d, casting="same_kind")),
]


@pytest.mark.parametrize("name,f", DTYPE_FUNCS, ids=[n for n, _ in DTYPE_FUNCS])
def test_dtype_keyword_is_applied(name, f):
    x = np.arange(1.0, 7.0).reshape(2, 3)
    out, pb = ad.vjp(lambda x: f(x, np.float32), x)
    ref = f(x, np.float32)
    assert out.dtype == np.float32 and np.allclose(out, ref, rtol=1e-6)
    assert pb(np.ones_like(ref))[0].dtype == np.float64  # the input's dtype
    with pytest.raises(TypeError, match="drop the derivative"):
        ad.grad(lambda x: np.sum(f(x, int)))(x)


# -- norms at zero, ravel/reshape orders, forward-mode dtypes ------------------------------


@pytest.mark.parametrize("p", [3, 1.5, 4, 2.5])
def test_p_norm_at_zero_is_zero_with_zero_gradient(p):
    assert np.array_equal(ad.grad(lambda x: np.linalg.norm(x, p))(np.zeros(3)), np.zeros(3))
    assert ad.jvp(lambda x: np.linalg.norm(x, p), (np.zeros(3),), (np.ones(3),))[1] == 0.0
    x = np.array([[0.0, 0.0], [1.0, -2.0]])
    g = ad.grad(lambda x: np.sum(np.linalg.norm(x, p, axis=1)))(x)
    assert np.array_equal(g[0], [0.0, 0.0])
    assert np.allclose(g[1], fd_grad(lambda r: np.linalg.norm(r, p), x[1]))
    check_first_order(lambda x: np.linalg.norm(x, p), (np.array([0.5, -1.0, 2.0]),))


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_ravel_and_reshape_follow_numpy_orders(order):
    base = np.arange(6.0).reshape(2, 3)
    for x in (base, np.asfortranarray(base), base.T):
        out, pb = ad.vjp(lambda x: np.ravel(x, order=order), x)
        assert np.array_equal(out, np.ravel(x, order=order))
        w = np.arange(1.0, 7.0)
        ref = np.zeros(x.size)
        # the gradient puts w back where ravel took each element from
        ids = np.empty_like(x, dtype=np.intp)  # x's memory layout, C-order flat indices
        ids[...] = np.arange(x.size).reshape(x.shape)
        idx = np.ravel(ids, order=order)
        ref[idx] = w
        assert np.array_equal(pb(w)[0].reshape(-1), ref)
        if order != "K":
            r = ad.vjp(lambda x: x.reshape((3, 2), order=order), x)[0]
            assert np.array_equal(r, x.reshape((3, 2), order=order))
    odd = np.arange(24.0).reshape(2, 3, 4).transpose(1, 0, 2)
    if order == "K":
        with pytest.raises(NotImplementedError, match="order='K'"):
            ad.vjp(lambda x: np.ravel(x, order="K"), odd)


@pytest.mark.parametrize("f", [np.prod, np.sin, lambda x: np.cumprod(x), np.linalg.cholesky],
                         ids=["prod", "sin", "cumprod", "cholesky"])
def test_forward_tangents_keep_float32(f):
    x = np.array([[2.0, 1.0], [1.0, 3.0]], dtype=np.float32)
    out, t = ad.jvp(f, (x,), (np.ones((2, 2), np.float32),))
    assert t.dtype == np.asarray(out).dtype == np.float32


# -- scalars: numpy bools, maximum with nan, object arrays ---------------------------------


def test_numpy_bools_and_nan_propagation_with_scalar_duals():
    assert ad.grad(lambda x: x * np.isnan(x) + np.True_ * x)(2.0) == 1.0
    v, t = ad.jvp(lambda x: np.maximum(x, math.nan), (1.0,), (1.0,))
    assert math.isnan(v)
    assert ad.jvp(lambda x: np.fmax(x, math.nan), (1.0,), (1.0,)) == (1.0, 1.0)
    assert ad.jvp(lambda x: np.minimum(x, 0.5), (1.0,), (1.0,)) == (0.5, 0.0)


def test_object_arrays_of_duals_with_method_ufuncs():
    def f(x):
        a = np.array([x, 2.0 * x], dtype=object)
        b = np.array([0.7, 0.9], dtype=object)
        return np.sum(np.fabs(a) + np.deg2rad(a) + np.rad2deg(a) + np.fmod(a, b) + np.rint(a))

    def plain(x):
        a = np.array([x, 2.0 * x])
        return np.sum(np.fabs(a) + np.deg2rad(a) + np.rad2deg(a) + np.fmod(a, [0.7, 0.9])
                      + np.rint(a))

    for x in (1.3, -0.4):
        assert ad.vjp(f, x)[0] == pytest.approx(plain(x))
        g = ad.grad(f)(x)
        assert g == pytest.approx((plain(x + 1e-6) - plain(x - 1e-6)) / 2e-6, rel=1e-6)
        assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(g)
