"""Edge cases of user-defined derivative rules: what a rule returns is checked the same way in
every mode, and a rule cannot give a silently wrong derivative.

- custom_jvp in reverse mode checks its tangent output (structure, shape, dtype) as forward mode
  does, and that it is linear in the tangents (zero for zero tangents), since it is transposed.
- Complex or integer (co)tangents are a TypeError (deltaad differentiates real functions; JAX
  too rejects a cotangent whose dtype is not the input's); a float one of another precision is
  cast to the input's dtype.
- A cotangent must have exactly its input's shape: one that merely broadcasts is a ValueError.
- Arguments resolve against the signature with defaults applied (JAX's ``resolve_kwargs``), so
  ``fwd``, ``bwd`` and the jvp rule see the same arguments however the call spells them.
- fwd outputs, residuals and rule outputs may not hold duals captured from an enclosing scope.
- ``primitive`` of several outputs applied to arrays returns a tuple of arrays; complex partials
  and partials of the wrong arity are errors.

Rules are either the true derivative (compared with finite differences) or deliberately scaled
(so that a passing test proves the rule was used); reverse is compared with forward mode.
"""

import functools
import inspect
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import deltaad as d
from helpers import bits, fd
from numpy_checks import check_first_order, check_second_order

X3 = np.array([0.1, 0.2, 0.3])
finite = st.floats(-2.0, 2.0, allow_nan=False)


def _modes(f, x):
    """Every way to differentiate ``f`` at ``x`` (reverse and forward), as thunks."""
    t = np.ones_like(x) if isinstance(x, np.ndarray) else 1.0
    return [
        lambda: d.grad(lambda x: np.sum(f(x)))(x),
        lambda: d.jacrev(f)(x),
        lambda: _pull(f, x),
        lambda: d.jvp(f, (x,), (t,)),
        lambda: d.jacfwd(f)(x),
    ]


def _pull(f, x):
    out, pb = d.vjp(f, x)
    return pb(np.ones_like(out) if isinstance(out, np.ndarray) else 1.0)


def _reverse_modes(f, x):
    return _modes(f, x)[:3]


def _jvp_fn(tangent_out, fun=np.sin):
    @d.custom_jvp
    def f(x):
        return fun(x)

    @f.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return fun(x), tangent_out(x, t)

    return f


def _vjp_fn(bwd_out, fun=np.sin):
    f = d.custom_vjp(lambda x: fun(x))
    f.defvjp(lambda x: (fun(x), x), lambda x, g: (bwd_out(x, g),))
    return f


# --------------------------------------------------------------------------------------------
# 1. custom_jvp: the tangent output is checked in reverse mode as in forward mode


BAD_TANGENT_SHAPES = [
    (lambda x, t: np.sum(t), r"shape \(\) for an array of shape \(3,\)"),  # a scalar
    (lambda x, t: t[:1], r"shape \(1,\) for an array of shape \(3,\)"),  # broadcasts to (3,)
    (lambda x, t: np.concatenate([t, t]), r"shape \(6,\) for an array of shape \(3,\)"),
    (lambda x, t: np.reshape(t, (3, 1)), r"shape \(3, 1\) for an array of shape \(3,\)"),
]


@pytest.mark.parametrize("tout,msg", BAD_TANGENT_SHAPES)
def test_custom_jvp_tangent_shape_is_checked_in_every_mode(tout, msg):
    f = _jvp_fn(tout)
    for run in _modes(f, X3):
        with pytest.raises(ValueError, match=msg + r".*exactly the primal output's shape"):
            run()


def test_custom_jvp_tangent_for_a_scalar_output():
    f = _jvp_fn(lambda x, t: np.ones(3) * t)
    for run in _modes(f, 0.5):
        with pytest.raises(ValueError, match=r"tangent of shape \(3,\) for a scalar"):
            run()
    # A 0-d array tangent for a float output, and a scalar tangent for a 0-d array output.
    f = _jvp_fn(lambda x, t: d.asarray(t) * 3.0 * np.cos(x))
    assert d.grad(f)(0.4) == pytest.approx(3 * math.cos(0.4))
    assert d.jvp(f, (0.4,), (1.0,))[1] == pytest.approx(3 * math.cos(0.4))
    g = _jvp_fn(lambda x, t: t[()] * 3.0 * np.cos(x[()]))
    x0 = np.array(0.4)
    np.testing.assert_allclose(d.grad(g)(x0), 3 * math.cos(0.4))
    np.testing.assert_allclose(d.jvp(g, (x0,), (np.array(1.0),))[1], 3 * math.cos(0.4))


def test_custom_jvp_tangent_structure_is_checked_in_every_mode():
    @d.custom_jvp
    def two(x):
        return np.sin(x), np.cos(x)

    two.defjvp(lambda p, t: (two(p[0]), t[0]))  # one tangent for two outputs
    for run in _modes(lambda x: two(x)[0], X3):
        with pytest.raises(TypeError, match=r"\(tangent output\) has the wrong structure"):
            run()


def test_custom_jvp_rule_not_linear_in_the_tangents_is_an_error_in_reverse_mode():
    for tout in (lambda x, t: t + 1.0, lambda x, t: np.ones(3), lambda x, t: np.cos(x)):
        f = _jvp_fn(tout)
        for run in _reverse_modes(f, X3):
            with pytest.raises(ValueError, match="not linear in the tangents"):
                run()
    # sqrt at 0: the tangent is t / 0, nan for a zero tangent; JAX gives an infinite gradient.
    f = _jvp_fn(lambda x, t: t / (2.0 * np.sqrt(x)), fun=np.sqrt)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = d.grad(lambda x: np.sum(f(x)))(np.array([0.0, 4.0]))
    assert g[0] == np.inf and g[1] == pytest.approx(0.25)


SPELLINGS = st.sampled_from(["default", "positional", "keyword"])


def _spelled(f, c, how):
    """``f(x)``, ``f(x, c)`` or ``f(x, c=c)`` and the ``c`` the call means."""
    return {"default": (lambda x: f(x), 2.0), "positional": (lambda x: f(x, c), c),
            "keyword": (lambda x: f(x, c=c), c)}[how]


@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), elements=finite),
       c=st.floats(0.5, 3.0), how=SPELLINGS)
def test_custom_jvp_reverse_equals_forward_and_finite_differences(x, c, how):
    @d.custom_jvp
    def f(x, c=2.0):
        return np.sin(x) * c

    @f.defjvp
    def _(primals, tangents):
        (x, c), (tx, tc) = primals, tangents  # always both, however f was called
        return f(x, c), c * np.cos(x) * tx + np.sin(x) * tc  # the true derivative

    call, c_used = _spelled(f, c, how)
    np.testing.assert_allclose(call(x), np.sin(x) * c_used)
    check_first_order(call, [x])
    check_second_order(lambda x: call(x) ** 2, [x], modes=("fr", "rr"))
    h = _jvp_fn(lambda x, t: c * np.cos(x) * t)  # scaled on purpose
    grad = d.grad(lambda x: np.sum(h(x)))(x)
    np.testing.assert_allclose(grad, c * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(d.jvp(h, (x,), (np.ones_like(x),))[1], grad, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# 2. complex (co)tangents are an error, never dropped


@pytest.mark.parametrize("x", [X3, 0.5])
def test_custom_vjp_complex_cotangent_is_an_error_in_every_mode(x):
    for factor in (1j, np.complex64(1j), 1.0 + 0j):
        f = _vjp_fn(lambda x, g, factor=factor: g * factor)
        for k, run in enumerate(_modes(f, x)):
            # (forward mode on a scalar: the backend's Dual refuses the complex operand)
            with pytest.raises(TypeError, match="real functions" if k < 3 else "real functions|complex"):
                run()


@pytest.mark.parametrize("x", [X3, 0.5])
def test_custom_jvp_complex_tangent_is_an_error_in_every_mode(x):
    f = _jvp_fn(lambda x, t: np.cos(x) * t * 1j)
    for run in _modes(f, x):
        # (on a scalar reverse-mode tangent, the backend's Dual refuses the complex operand)
        with pytest.raises(TypeError, match="real functions|complex"):
            run()
    g = _jvp_fn(lambda x, t: np.cos(x) * t + 0j * np.cos(x))
    with pytest.raises(TypeError, match="real functions"):
        d.jvp(g, (x,), (np.ones_like(x) if isinstance(x, np.ndarray) else 1.0,))


# --------------------------------------------------------------------------------------------
# 4a. cotangent dtype and shape


@pytest.mark.parametrize("bad,msg", [
    (lambda x, g: np.ones(3, dtype=int), "integer"),
    (lambda x, g: np.ones(3, dtype=bool), "bool"),
    (lambda x, g: np.zeros(3, dtype=np.int8), "integer"),
])
def test_custom_vjp_integer_cotangent_is_an_error(bad, msg):
    f = _vjp_fn(bad)
    for run in _modes(f, X3):
        with pytest.raises(TypeError, match=msg + ".*float"):
            run()


def test_custom_vjp_integer_cotangent_for_a_scalar_is_an_error():
    for bad in (lambda x, g: 1, lambda x, g: True, lambda x, g: np.int64(2)):
        with pytest.raises(TypeError, match="(int|bool) type for a float input.*None for a zero"):
            d.grad(_vjp_fn(bad))(0.5)


def test_custom_jvp_integer_tangent_is_an_error():
    f = _jvp_fn(lambda x, t: np.zeros(3, dtype=int))
    with pytest.raises(TypeError, match="integer type for a float output"):
        d.jvp(f, (X3,), (np.ones(3),))


def test_custom_vjp_cotangent_dtype_float_is_cast_integer_is_an_error():
    with pytest.raises(TypeError, match="integer type for a float input"):
        d.grad(lambda x: np.sum(_vjp_fn(lambda x, g: np.round(g).astype(np.int64))(x)))(X3)
    f = _vjp_fn(lambda x, g: (2.0 * np.cos(x) * g).astype(np.float32))
    g = d.grad(lambda x: np.sum(f(x)))(X3)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * np.cos(X3), rtol=1e-6)
    x32 = X3.astype(np.float32)
    h = _vjp_fn(lambda x, g: 2.0 * np.cos(x).astype(np.float64) * g)
    g32 = d.grad(lambda x: np.sum(h(x)))(x32)
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, 2 * np.cos(x32), rtol=1e-6)


@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=3), data=st.data())
def test_custom_vjp_cotangent_that_only_broadcasts_is_a_value_error(shape, data):
    bad = data.draw(hnp.broadcastable_shapes(shape, min_dims=0, max_dims=4, max_side=3)
                    .filter(lambda s: s != shape), label="bad")
    f = _vjp_fn(lambda x, g: np.ones(bad))
    x = np.full(shape, 0.3)
    for run in _modes(f, x):
        with pytest.raises(ValueError, match=r"cotangent of shape %s.*not broadcast" % (
                "\\(" + ", ".join(map(str, bad)) + (",\\)" if len(bad) == 1 else "\\)"))):
            run()


def test_custom_vjp_cotangent_for_a_scalar_must_be_a_scalar():
    f = _vjp_fn(lambda x, g: np.array([g]))
    for run in _modes(f, 0.5):
        with pytest.raises(ValueError, match=r"shape \(1,\) for a scalar.*not broadcast"):
            run()


def test_custom_vjp_cotangent_of_an_argument_not_differentiated_is_checked_too():
    f = d.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], np.ones(7)))
    with pytest.raises(ValueError, match=r"shape \(7,\) for an array of shape \(3,\)"):
        d.grad(lambda x: np.sum(f(x, X3)))(X3)


def test_custom_vjp_bwd_not_linear_is_an_error_in_forward_mode():
    f = _vjp_fn(lambda x, g: g + 1.0)
    for x in (X3, 0.5):
        with pytest.raises(ValueError, match="not linear in the output cotangent"):
            d.jvp(f, (x,), (np.ones_like(x) if isinstance(x, np.ndarray) else 1.0,))


@given(x=hnp.arrays(np.float64, st.integers(1, 4), elements=finite), c=st.floats(0.5, 3.0), how=SPELLINGS)
def test_custom_vjp_reverse_equals_forward_and_finite_differences(x, c, how):
    def f(x, c=2.0):
        return np.sin(x) * c

    f = d.custom_vjp(f)
    f.defvjp(lambda x, c: (np.sin(x) * c, (x, c)),  # fwd and bwd always see both
             lambda r, g: (r[1] * np.cos(r[0]) * g, np.sum(np.sin(r[0]) * g)))  # the true derivative
    call, c_used = _spelled(f, c, how)
    np.testing.assert_allclose(call(x), np.sin(x) * c_used)
    check_first_order(call, [x])
    check_second_order(lambda x: call(x) ** 2, [x], modes=("fr", "rr"))
    h = _vjp_fn(lambda x, g: c * np.cos(x) * g)  # scaled on purpose
    grad = d.grad(lambda x: np.sum(h(x)))(x)
    np.testing.assert_allclose(grad, c * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(d.jvp(h, (x,), (np.ones_like(x),))[1], grad, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# 3. arguments resolve to the signature, defaults applied


def _scaled_vjp(nondiff_argnums=()):
    """``x * scale``, the rule 10x in x; ``fwd`` has no defaults: it always gets both."""

    def f(x, scale=2.0):
        return x * scale

    f = d.custom_vjp(f, nondiff_argnums=nondiff_argnums)

    def fwd(x, scale):
        return x * scale, (x, scale)

    if nondiff_argnums:
        def bwd(scale, res, g):
            return (g * res[1] * 10.0,)
    else:
        def bwd(res, g):
            return (g * res[1] * 10.0, np.sum(g * res[0]))

    f.defvjp(fwd, bwd)
    return f


def test_custom_vjp_defaults_are_applied_whatever_the_call():
    f = _scaled_vjp()
    assert f(1.5) == 3.0
    assert d.grad(f)(1.5) == pytest.approx(20.0)  # bwd returns 2 cotangents: no TypeError
    assert d.grad(lambda x: f(x, 3.0))(1.5) == pytest.approx(30.0)
    assert d.grad(lambda x: f(x, scale=3.0))(1.5) == pytest.approx(30.0)
    assert d.grad(lambda x: f(x=x))(1.5) == pytest.approx(20.0)
    assert d.grad(f, argnums=(0, 1))(1.5, 4.0) == pytest.approx((40.0, 1.5))
    assert d.jvp(f, (1.5,), (1.0,))[1] == pytest.approx(20.0)
    np.testing.assert_allclose(d.grad(lambda x: np.sum(f(x)))(X3), [20.0] * 3)


@pytest.mark.parametrize("nd", [(1,), (-1,)])
def test_custom_vjp_nondiff_argnums_index_the_resolved_arguments(nd):
    f = _scaled_vjp(nondiff_argnums=nd)
    assert d.grad(f)(1.5) == pytest.approx(20.0)
    assert d.grad(lambda x: f(x, 3.0))(1.5) == pytest.approx(30.0)
    assert d.grad(lambda x: f(x, scale=3.0))(1.5) == pytest.approx(30.0)
    assert d.jvp(f, (1.5,), (1.0,))[1] == pytest.approx(20.0)


def test_custom_jvp_defaults_are_applied_whatever_the_call():
    @d.custom_jvp
    def f(x, scale=2.0):
        return np.sin(x) * scale

    @f.defjvp
    def _(primals, tangents):
        (x, scale), (tx, ts) = primals, tangents  # always two
        return f(x, scale), 10.0 * np.cos(x) * scale * tx + np.sin(x) * ts

    for call, scale in ((lambda x: f(x), 2.0), (lambda x: f(x, 3.0), 3.0), (lambda x: f(x, scale=3.0), 3.0)):
        assert d.grad(call)(0.5) == pytest.approx(10 * math.cos(0.5) * scale)
        assert d.jvp(call, (0.5,), (1.0,))[1] == pytest.approx(10 * math.cos(0.5) * scale)


@given(npass=st.integers(0, 2), as_kw=st.lists(st.booleans(), min_size=2, max_size=2), x=finite)
def test_custom_vjp_every_spelling_of_a_call_resolves_alike(npass, as_kw, x):
    seen = []

    @d.custom_vjp
    def f(x, a=2.0, b=3.0):
        return x * a * b

    def bwd(res, g):
        seen.append(len(res))
        x, a, b = res
        return (g * a * b, g * x * b, g * x * a)

    f.defvjp(lambda *args: (f(*args), args), bwd)
    pos, kw = [], {}
    for name, value, k in zip("ab", (5.0, 7.0), as_kw[:npass]):
        if k or kw:  # once a keyword is used, the rest are keywords
            kw[name] = value
        else:
            pos.append(value)
    a, b = (5.0 if npass > 0 else 2.0), (7.0 if npass > 1 else 3.0)
    g = d.grad(lambda x: f(x, *pos, **kw))(x)
    assert g == pytest.approx(a * b)
    assert seen == [3]
    assert g == pytest.approx(fd(lambda x: f(x, *pos, **kw), x), rel=1e-6, abs=1e-9)


def test_signature_is_read_once_per_function(monkeypatch):
    calls = []
    real = inspect.signature

    def counting(fun, *a, **k):
        calls.append(fun)
        return real(fun, *a, **k)

    monkeypatch.setattr(inspect, "signature", counting)
    f = _scaled_vjp()
    for _ in range(5):
        d.grad(lambda x: f(x, scale=3.0))(1.5)
        d.grad(f)(1.5)
    assert len(calls) == 1


def test_keyword_only_and_unresolvable_arguments():
    @d.custom_vjp
    def f(x, *, scale=2.0):
        return x * scale

    f.defvjp(lambda x: (f(x), None), lambda r, g: (g * 5.0,))
    assert d.grad(f)(1.0) == pytest.approx(5.0)  # scale keeps its default (as in JAX)
    with pytest.raises(TypeError, match=r"\['scale'\].*could not be resolved to positions"):
        d.grad(lambda x: f(x, scale=3.0))(1.0)
    g = _scaled_vjp()
    with pytest.raises(TypeError, match=r"f\(x, scale=2.0\).*too many"):
        d.grad(lambda x: g(x, 1.0, 2.0))(1.0)
    with pytest.raises(TypeError, match=r"f\(x, scale=2.0\).*unexpected keyword"):
        d.grad(lambda x: g(x, sclae=1.0))(1.0)


def test_partial_and_method_use_their_real_signature():
    def base(k, x, scale=2.0):
        return k * x * scale

    f = d.custom_vjp(functools.partial(base, 1.0))
    f.defvjp(lambda x, scale: (x * scale, (x, scale)), lambda r, g: (g * r[1] * 10.0, g * r[0]))
    assert d.grad(f)(1.5) == pytest.approx(20.0)
    assert d.grad(lambda x: f(x, scale=3.0))(1.5) == pytest.approx(30.0)

    class M:
        @functools.partial(d.custom_vjp, nondiff_argnums=(0,))
        def f(self, x, scale=2.0):
            return x * scale

    M.f.defvjp(lambda self, x, scale: (x * scale, scale), lambda self, s, g: (g * s * 10.0, None))
    assert d.grad(M().f)(1.5) == pytest.approx(20.0)


# --------------------------------------------------------------------------------------------
# 4b. duals captured from an enclosing scope


def test_custom_vjp_fwd_residuals_holding_a_captured_dual_are_an_error():
    def loss(w):
        f = d.custom_vjp(lambda x: x * 1.0)
        f.defvjp(lambda x: (x * 1.0, w), lambda r, g: (g * r,))
        return f(w)

    with pytest.raises(TypeError, match="residuals holding a value being differentiated.*argument"):
        d.grad(loss)(3.0)
    with pytest.raises(TypeError, match="residuals holding a value being differentiated"):
        d.jvp(loss, (3.0,), (1.0,))


def test_custom_vjp_fwd_output_from_an_inner_differentiation_is_an_error():
    def outer(x):
        def inner(y):
            f = d.custom_vjp(lambda x: x * 2.0)
            f.defvjp(lambda x: (x * y, None), lambda r, g: (g * 2.0,))  # captures y
            return f(x) * y
        return d.grad(inner)(1.0)

    with pytest.raises(TypeError, match="an output holding a value being differentiated"):
        d.grad(outer)(3.0)


def test_custom_jvp_rule_output_holding_a_captured_dual_is_an_error():
    def loss(w):
        f = d.custom_jvp(lambda x: x * 2.0)
        f.defjvp(lambda p, t: (p[0] * 2.0, t[0] * w))  # captures w
        return f(w)

    for run in (lambda: d.grad(loss)(3.0), lambda: d.jvp(loss, (3.0,), (1.0,))):
        with pytest.raises(TypeError, match="tangent output holding a value being differentiated"):
            run()

    def loss2(w):
        f = d.custom_jvp(lambda x: x * w)
        f.defjvp(lambda p, t: (p[0] * w, t[0] * 2.0))  # primal output captures w
        return f(w)

    for run in (lambda: d.grad(loss2)(3.0), lambda: d.jvp(loss2, (3.0,), (1.0,))):
        with pytest.raises(TypeError, match="primal output holding a value being differentiated"):
            run()


# --------------------------------------------------------------------------------------------
# defjvps: leaf-wise sums, and the primal output through the function itself (as JAX)


def test_defjvps_with_several_outputs_and_nested_use_of_the_rule():
    f = d.custom_jvp(lambda x, y: (x * y, x + y))
    f.defjvps(lambda tx, out, x, y: (tx * y * 10.0, tx), lambda ty, out, x, y: (ty * x, ty * 20.0))
    expected = [[30.0, 2.0], [1.0, 20.0]]
    np.testing.assert_allclose(d.jacrev(lambda p: list(f(p[0], p[1])))([2.0, 3.0]), expected)
    np.testing.assert_allclose(d.jacfwd(lambda p: list(f(p[0], p[1])))([2.0, 3.0]), expected)

    g = d.custom_jvp(np.sin)
    g.defjvps(lambda t, out, x: 3.0 * np.cos(x) * t)
    # The value from value_and_grad, differentiated again: the rule (3 cos), not cos.
    assert d.grad(lambda x: d.value_and_grad(g)(x)[0])(0.5) == pytest.approx(3 * math.cos(0.5))
    assert d.jacfwd(lambda x: d.value_and_grad(g)(x)[0])(0.5) == pytest.approx(3 * math.cos(0.5))


# --------------------------------------------------------------------------------------------
# primitive


def _polar():
    return d.primitive(
        lambda r, t: (r * np.cos(t), r * np.sin(t)),
        lambda r, t: (np.cos(t), np.sin(t)),
        lambda r, t: (-r * np.sin(t), r * np.cos(t)),
    )


def test_primitive_with_several_outputs_on_arrays_returns_a_tuple_of_arrays():
    polar = _polar()
    r, t = np.array([1.0, 2.0, 0.5]), np.array([[0.3], [1.1]])  # broadcast to (2, 3)
    out = polar(r, t)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(out[0], r * np.cos(t))
    np.testing.assert_allclose(out[1], r * np.sin(t))
    check_first_order(polar, [r, t])
    check_second_order(polar, [r, t])
    gr, gt = d.grad(lambda r, t: np.sum(polar(r, t)[1]), argnums=(0, 1))(r, t)
    np.testing.assert_allclose(gr, np.sum(np.sin(t) * np.ones((2, 3)), axis=0))
    np.testing.assert_allclose(gt, np.sum(r * np.cos(t), axis=1, keepdims=True))


@given(r=hnp.arrays(np.float64, 3, elements=st.floats(0.1, 2.0)), t=hnp.arrays(np.float64, 3, elements=finite))
def test_primitive_with_several_outputs_matches_finite_differences(r, t):
    polar = _polar()
    xy = polar(r, t)
    assert type(xy) is tuple and [np.shape(v) for v in xy] == [(3,), (3,)]
    check_first_order(polar, [r, t])
    check_first_order(lambda r, t: polar(r, t)[0] * polar(r, t)[1], [r, t])
    check_second_order(lambda r, t: polar(r, t)[0] * polar(r, t)[1], [r, t], modes=("fr", "rr"))


def test_primitive_complex_partial_is_an_error():
    p = d.primitive(lambda x: x * 2.0, lambda x: 2j)
    for run in _modes(p, X3) + _modes(p, 0.5):
        with pytest.raises(TypeError, match="real functions.*partial derivative 0"):
            run()


def test_primitive_partials_must_have_one_entry_per_output():
    q = d.primitive(lambda x, y: (x * y, x + y), lambda x, y: (y,), lambda x, y: (x, 1.0))
    for run in (lambda: d.grad(lambda x: q(x, 2.0)[1])(1.0),
                lambda: d.grad(lambda x: np.sum(q(x, 2.0)[1]))(X3),
                lambda: d.jvp(lambda x: q(x, 2.0)[0], (X3,), (np.ones(3),))):
        with pytest.raises(TypeError, match="partial derivative 0 must return a tuple of 2"):
            run()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_bwd_that_gives_a_nonfinite_constant_gives_it_in_forward_mode_too(bad):
    """Forward mode transposes bwd; a nan or inf cotangent that does not depend on the output
    cotangent would vanish in the transpose: it is kept, so jacfwd says what grad says (and
    only for the argument it concerns)."""

    @d.custom_vjp
    def f(x, y):
        return x * 2.0 + y

    f.defvjp(lambda x, y: (f(x, y), None), lambda r, g: (bad, g * 3.0))
    rev = d.jacrev(f, (0, 1))(1.0, 2.0)
    fwd = d.jacfwd(f, (0, 1))(1.0, 2.0)
    assert bits(rev[0]) == bits(fwd[0]) == bits(bad)
    assert rev[1] == fwd[1] == 3.0
    assert bits(d.jvp(f, (1.0, 2.0), (1.0, 0.0))[1]) == bits(bad)
    assert d.jvp(f, (1.0, 2.0), (0.0, 1.0))[1] == 3.0
