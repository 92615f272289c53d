"""User-defined derivative rules: custom_vjp, custom_jvp (JAX's API) and primitive (Fig. 14).

Each rule below is deliberately different from the true derivative (a factor, or another
function), so a test passing proves the rule was called; nested uses check that rules written
with deltaad-aware operations are differentiated again."""

import math
from collections import namedtuple

import numpy as np
import pytest

import deltaad as d
from numpy_checks import check_first_order


# --------------------------------------------------------------------------------------------
# custom_vjp


@d.custom_vjp
def twice_sin(x):
    """sin, with the (wrong on purpose) derivative 2*cos."""
    return np.sin(x)


def _ts_fwd(x):
    return twice_sin(x), x


def _ts_bwd(x, g):
    return (2.0 * np.cos(x) * g,)


twice_sin.defvjp(_ts_fwd, _ts_bwd)


def test_custom_vjp_rule_is_used_scalar_and_array():
    assert twice_sin(0.5) == math.sin(0.5)
    assert d.grad(twice_sin)(0.5) == pytest.approx(2 * math.cos(0.5))
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(d.grad(lambda x: np.sum(twice_sin(x)))(x), 2 * np.cos(x))
    np.testing.assert_allclose(d.jacrev(twice_sin)(x), np.diag(2 * np.cos(x)))


def test_custom_vjp_forward_mode_uses_the_rule_too():
    x = np.array([0.1, 0.2])
    out, t = d.jvp(twice_sin, (x,), (np.array([1.0, 3.0]),))
    np.testing.assert_allclose(out, np.sin(x))
    np.testing.assert_allclose(t, 2 * np.cos(x) * [1.0, 3.0])
    np.testing.assert_allclose(d.jacfwd(twice_sin)(x), np.diag(2 * np.cos(x)))
    assert d.jvp(twice_sin, (0.5,), (1.0,))[1] == pytest.approx(2 * math.cos(0.5))


def test_custom_vjp_nested_hessian_in_every_nesting():
    f = lambda x: np.sum(twice_sin(x) ** 2)
    x = np.array([0.3, 0.5])
    expected = np.diag(8 * np.cos(x) ** 2 - 4 * np.sin(x) ** 2)
    for h in (d.hessian(f), d.jacrev(d.jacrev(f)), d.jacfwd(d.jacfwd(f)), d.jacrev(d.jacfwd(f))):
        np.testing.assert_allclose(h(x), expected, rtol=1e-12)
    assert d.grad(d.grad(twice_sin))(0.4) == pytest.approx(-2 * math.sin(0.4))


def test_custom_vjp_several_args_pytrees_residuals_and_kwargs():
    @d.custom_vjp
    def f(p, y, scale=1.0):
        return p["a"] * y + np.sum(p["b"]) * scale

    def f_fwd(p, y, scale=1.0):
        return f(p, y, scale), (p, y, scale)

    def f_bwd(res, g):
        p, y, scale = res
        return ({"a": g * y * 10.0, "b": np.full(np.shape(p["b"]), g * scale)}, g * p["a"], None)

    f.defvjp(f_fwd, f_bwd)
    p = {"a": 2.0, "b": np.array([1.0, 2.0])}
    gp, gy = d.grad(lambda p, y: f(p, y, scale=3.0), argnums=(0, 1))(p, 5.0)
    assert gp["a"] == pytest.approx(50.0)  # the rule's 10x, not the true 5
    np.testing.assert_allclose(gp["b"], [3.0, 3.0])
    assert gy == pytest.approx(2.0)


def test_custom_vjp_nondiff_argnums():
    def g(fn, x):
        return fn(x)

    g = d.custom_vjp(g, nondiff_argnums=(0,))
    g.defvjp(lambda fn, x: (fn(x), x), lambda fn, x, ct: (ct * 7.0,))
    assert d.grad(lambda x: g(np.sin, x))(1.0) == pytest.approx(7.0)
    with pytest.raises(TypeError, match="nondiff_argnums"):
        d.grad(lambda x: g(x, x))(1.0)


def test_custom_vjp_multiple_outputs():
    @d.custom_vjp
    def two(x):
        return np.sin(x), x * 3.0

    two.defvjp(lambda x: (two(x), x), lambda x, g: (10.0 * g[0] + 100.0 * g[1],))
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(d.grad(lambda x: np.sum(two(x)[0]))(x), [10.0, 10.0])
    np.testing.assert_allclose(d.grad(lambda x: np.sum(two(x)[1]))(x), [100.0, 100.0])
    np.testing.assert_allclose(d.grad(lambda x: np.sum(two(x)[0] + 2 * two(x)[1]))(x), [210.0, 210.0])
    out, t = d.jvp(two, (x,), (np.ones(2),))
    np.testing.assert_allclose(t[0], [10.0, 10.0])
    np.testing.assert_allclose(t[1], [100.0, 100.0])


def test_custom_vjp_bwd_wrong_structure_is_an_error():
    cases = [
        (lambda x, g: g, "tuple"),  # not a tuple
        (lambda x, g: (g, g), "one cotangent per"),  # wrong length
        (lambda x, g: ([g],), "structure"),  # a list for an array argument
    ]
    for bwd, msg in cases:
        f = d.custom_vjp(lambda x: x * 2.0)
        f.defvjp(lambda x: (x * 2.0, None), bwd)
        with pytest.raises(TypeError, match=msg):
            d.grad(lambda x: np.sum(f(x)))(np.ones(3))
    f = d.custom_vjp(lambda x: x * 2.0)
    f.defvjp(lambda x: (x * 2.0, None), lambda x, g: (np.ones(4),))
    with pytest.raises(ValueError, match="shape"):
        d.grad(lambda x: np.sum(f(x)))(np.ones(3))
    p = d.custom_vjp(lambda a: a["u"] * a["v"])
    p.defvjp(lambda a: (a["u"] * a["v"], a), lambda a, g: ({"u": g},))
    with pytest.raises(TypeError, match="structure"):
        d.grad(p)({"u": 1.0, "v": 2.0})


def test_custom_vjp_none_cotangent_means_zero():
    f = d.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x * y, None), lambda r, g: (None, g * 4.0))
    assert d.grad(f, argnums=(0, 1))(2.0, 3.0) == (0.0, 4.0)


def test_custom_vjp_fwd_must_return_pair_and_defvjp_required():
    f = d.custom_vjp(lambda x: x)
    with pytest.raises(AttributeError, match="defvjp"):
        f(1.0)
    f.defvjp(lambda x: x, lambda r, g: (g,))
    with pytest.raises(TypeError, match="pair"):
        d.grad(f)(1.0)


def test_custom_vjp_plain_call_and_as_method():
    class M:
        @d.custom_vjp
        def f(self, x):
            return x * 2.0

    M.f.defvjp(lambda self, x: (x * 2.0, None), lambda self, r, g: (g * 5.0,))
    assert M().f(1.5) == 3.0


def test_custom_vjp_inside_array_program_matches_finite_differences_of_the_rule():
    @d.custom_vjp
    def softplus(x):
        return np.logaddexp(x, 0.0)

    softplus.defvjp(lambda x: (softplus(x), x), lambda x, g: (g * d.sigmoid(x),))
    check_first_order(lambda x, w: softplus(x @ w), [np.ones((2, 3)) * 0.3, np.arange(6.0).reshape(3, 2) / 6])


# --------------------------------------------------------------------------------------------
# custom_jvp


@d.custom_jvp
def three_sin(x):
    """sin, with the (wrong on purpose) derivative 3*cos."""
    return np.sin(x)


@three_sin.defjvp
def _three_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return three_sin(x), 3.0 * np.cos(x) * t


def test_custom_jvp_forward_and_reverse_use_the_rule():
    x = np.array([0.2, 0.4])
    out, t = d.jvp(three_sin, (x,), (np.ones(2),))
    np.testing.assert_allclose(t, 3 * np.cos(x))
    np.testing.assert_allclose(d.grad(lambda x: np.sum(three_sin(x)))(x), 3 * np.cos(x))
    assert d.grad(three_sin)(0.3) == pytest.approx(3 * math.cos(0.3))
    assert d.jvp(three_sin, (0.3,), (2.0,))[1] == pytest.approx(6 * math.cos(0.3))


def test_custom_jvp_nested():
    x = np.array([0.2, 0.4])
    f = lambda x: np.sum(three_sin(x))
    expected = np.diag(-3 * np.sin(x))
    for h in (d.hessian(f), d.jacrev(d.jacrev(f)), d.jacfwd(d.jacfwd(f)), d.jacrev(d.jacfwd(f))):
        np.testing.assert_allclose(h(x), expected, rtol=1e-12)
    # d/dx of the rule's 3 cos(x) * t, where the rule calls three_sin again
    g = lambda x: np.sum(three_sin(x) ** 2)
    np.testing.assert_allclose(d.hessian(g)(x), np.diag(2 * (3 * np.cos(x)) ** 2 + 2 * np.sin(x) * (-3 * np.sin(x))), rtol=1e-12)


def test_custom_jvp_several_args_multiple_outputs_and_defjvps():
    @d.custom_jvp
    def f(x, y):
        return x * y, x + y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), (10.0 * tx * y + x * ty, tx + 20.0 * ty)

    gx, gy = d.grad(lambda x, y: f(x, y)[0] + f(x, y)[1], argnums=(0, 1))(2.0, 3.0)
    assert (gx, gy) == pytest.approx((10 * 3.0 + 1.0, 2.0 + 20.0))

    g = d.custom_jvp(lambda x, y: x * np.sin(y))
    g.defjvps(lambda tx, out, x, y: tx * 5.0, lambda ty, out, x, y: ty * 7.0)
    assert d.grad(g, argnums=(0, 1))(1.0, 2.0) == pytest.approx((5.0, 7.0))
    np.testing.assert_allclose(d.grad(lambda x: np.sum(g(x, 1.0)))(np.ones(3)), [5.0] * 3)


def test_custom_jvp_rule_errors():
    f = d.custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="defjvp"):
        f(1.0)
    f.defjvp(lambda p, t: p[0])
    with pytest.raises(TypeError, match="pair"):
        d.jvp(f, (1.0,), (1.0,))
    g = d.custom_jvp(lambda x: (x, x))
    g.defjvp(lambda p, t: ((p[0], p[0]), (t[0],)))
    with pytest.raises(TypeError, match="structure"):
        d.jvp(g, (1.0,), (1.0,))


def test_custom_jvp_pytree_args_and_numpy_stable_softplus():
    @d.custom_jvp
    def softplus(x):
        return np.logaddexp(x, 0.0)

    @softplus.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), d.sigmoid(x) * t

    x = np.array([-50.0, 0.0, 50.0])
    np.testing.assert_allclose(d.grad(lambda x: np.sum(softplus(x)))(x), d.sigmoid(x))
    check_first_order(lambda x: softplus(x * 2.0), [np.linspace(-2, 2, 5)])

    Point = namedtuple("Point", "x y")
    h = d.custom_jvp(lambda p: p.x * p.y)
    h.defjvp(lambda p, t: (h(p[0]), 2.0 * (t[0].x * p[0].y + p[0].x * t[0].y)))
    g = d.grad(h)(Point(2.0, 3.0))
    assert isinstance(g, Point) and g == pytest.approx(Point(6.0, 4.0))


# --------------------------------------------------------------------------------------------
# primitive (Fig. 14)


wrong_sin = d.primitive(math.sin, lambda x: 5.0 * d.cos(x))


def test_primitive_scalar_reverse_forward_nested():
    assert wrong_sin(0.3) == math.sin(0.3)
    assert d.grad(wrong_sin)(0.3) == pytest.approx(5 * math.cos(0.3))
    assert d.jvp(wrong_sin, (0.3,), (2.0,))[1] == pytest.approx(10 * math.cos(0.3))
    assert d.grad(d.grad(wrong_sin))(0.3) == pytest.approx(-5 * math.sin(0.3))
    assert d.hessian(lambda x: wrong_sin(x) * x)(0.3) == pytest.approx(2 * 5 * math.cos(0.3) - 5 * math.sin(0.3) * 0.3)


def test_primitive_of_several_arguments_and_outputs():
    f = d.primitive(lambda x, y: x * y, lambda x, y: y, lambda x, y: 2.0 * x)
    assert d.grad(f, argnums=(0, 1))(3.0, 4.0) == pytest.approx((4.0, 6.0))
    assert d.grad(lambda x: f(x, x * x))(2.0) == pytest.approx(4.0 + 2.0 * 2.0 * 2.0 * 2.0)
    polar = d.primitive(
        lambda r, t: (r * math.cos(t), r * math.sin(t)),
        lambda r, t: (d.cos(t), d.sin(t)),
        lambda r, t: (-r * d.sin(t), r * d.cos(t)),
    )
    x, y = polar(2.0, 0.5)
    assert (x, y) == pytest.approx((2 * math.cos(0.5), 2 * math.sin(0.5)))
    j = d.jacrev(lambda p: list(polar(p[0], p[1])))([2.0, 0.5])
    jf = d.jacfwd(lambda p: list(polar(p[0], p[1])))([2.0, 0.5])
    np.testing.assert_allclose(j, [[math.cos(0.5), -2 * math.sin(0.5)], [math.sin(0.5), 2 * math.cos(0.5)]])
    np.testing.assert_allclose(jf, j)
    h = d.hessian(lambda p: polar(p[0], p[1])[0])([2.0, 0.5])
    np.testing.assert_allclose(h, [[0.0, -math.sin(0.5)], [-math.sin(0.5), -2 * math.cos(0.5)]])


def test_primitive_on_arrays_is_elementwise_with_broadcasting():
    mul = d.primitive(lambda x, y: x * y, lambda x, y: 3.0 * y, lambda x, y: x)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    y = np.array([10.0, 20.0])
    gx, gy = d.grad(lambda x, y: np.sum(mul(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 3 * np.broadcast_to(y, x.shape))
    np.testing.assert_allclose(gy, x.sum(axis=0))
    _, t = d.jvp(lambda x: mul(x, y), (x,), (np.ones_like(x),))
    np.testing.assert_allclose(t, 3 * np.broadcast_to(y, x.shape))
    sq = d.primitive(np.square, lambda x: 2.0 * x)
    np.testing.assert_allclose(d.hessian(lambda x: np.sum(sq(x) * x))(np.array([1.0, 2.0])), np.diag([6.0, 12.0]))


def test_primitive_argument_count_is_checked():
    with pytest.raises(TypeError, match="argument"):
        wrong_sin(1.0, 2.0)
    with pytest.raises(TypeError):
        d.primitive(math.sin)
