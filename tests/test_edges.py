"""Derivatives at the edges of domains: the modes agree, nesting does not change a value.

The conventions (README, "What happens at the edges"): a zero tangent or a zero adjoint
contributes exactly zero, even through an infinite or nan partial derivative (a zero vector
maps to zero: ForwardDiff.jl's NaN-safe mode does the same), so forward and reverse mode give
the same numbers where a partial is infinite; an infinite derivative is inf, never an
exception; sqrt's derivative at either zero is +inf, as for ``x ** 0.5``. A zero *partial*
meeting an infinite one is an indeterminate product of partials (``cbrt(x) ** 2`` at 0 has
derivative 2 * 0 * inf, really inf): IEEE's nan, not 0.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as ad

inf = math.inf


def same(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


EDGE_PROGRAMS = [
    # (function of a list, a point where some partial is infinite or undefined)
    (lambda v: ad.sqrt(v[0]) + v[1], [0.0, 1.0]),
    (lambda v: ad.sqrt(v[0]) * v[1] + v[1] ** 2 * v[0], [0.0, 1.0]),
    (lambda v: v[0] ** v[1] + v[1], [0.0, 0.5]),
    (lambda v: v[0] ** v[1] + v[0], [-2.0, 2.0]),
    (lambda v: ad.log(v[0]) * 0.0 + v[1] * v[0], [0.5, 3.0]),
    (lambda v: ad.arcsin(v[0]) + ad.cbrt(v[1]), [1.0, 0.0]),
]


@pytest.mark.parametrize("f,x", EDGE_PROGRAMS)
def test_jacfwd_equals_jacrev_at_edges(f, x):
    fwd = ad.jacfwd(f)(x)
    rev = ad.jacrev(f)(x)
    assert same(fwd, rev), (fwd, rev)


@pytest.mark.parametrize("f,x", EDGE_PROGRAMS)
def test_hessian_equals_reverse_over_reverse_at_edges(f, x):
    h = ad.hessian(f)(x)
    rr = ad.jacrev(ad.jacrev(f))(x)
    assert same(h, rr), (h, rr)


def test_known_values_at_edges():
    # the example of the audit: H[0][1] = d/dv1 (d/dv0 (sqrt(v0) + v1**2 v0)) = 2 v1 = 2
    h = ad.hessian(lambda v: ad.sqrt(v[0]) + v[1] ** 2 * v[0])([0.0, 1.0])
    assert h[0][1] == 2.0 and h[1][0] == 2.0 and h[0][0] == -inf
    # README: d/db a**b is 0 at a == 0, in forward mode too
    assert ad.jvp(lambda a, b: a ** b, (0.0, 0.5), (0.0, 1.0)) == (0.0, 0.0)
    # a nan partial (d/db at a < 0) does not leak through a zero tangent
    assert ad.jvp(lambda a, b: a ** b, (-2.0, 2.0), (1.0, 0.0)) == (4.0, -4.0)
    assert ad.grad(lambda a, b: a ** b)(-2.0, 2.0) == -4.0


def test_zero_partials_are_not_strong():
    """0 * inf between partials is indeterminate (the true derivative of cbrt(x)**2 at 0 is
    inf): forward mode gives nan, never a confident 0. Reverse mode meets the zero partial
    first, so the adjoint of cbrt(x) is an exact zero and is skipped: 0 (README documents that
    such products depend on the order the factors are met)."""
    for f in (lambda x: ad.cbrt(x) * ad.cbrt(x), lambda x: ad.cbrt(x) ** 2):
        assert math.isnan(ad.jvp(f, (0.0,), (1.0,))[1])
        assert ad.grad(f)(0.0) == 0.0


def test_nesting_does_not_change_a_value():
    o, pb = ad.vjp(lambda v: 0.0 * ad.sqrt(v[0]) + v[1], [0.0, 2.0])
    plain = pb(1.0)
    nested = ad.jvp(lambda s: pb(s)[0], (1.0,), (1.0,))
    assert plain == ([0.0, 1.0],)
    assert nested[0] == [0.0, 1.0]
    assert ad.grad(lambda a: a ** 0.0)(0.0) == 0.0
    p, t = ad.jvp(lambda b: ad.grad(lambda a: a ** b)(0.0), (0.0,), (1.0,))
    assert p == 0.0


@given(st.floats(1e-300, 1e-100), st.sampled_from([-1.0, -2.0, -3.0, -1.5]))
def test_infinite_derivative_is_inf_not_an_exception(x, p):
    """x ** p is finite but its derivative p * x ** (p - 1) overflows: -inf, in both modes."""
    try:
        v = x ** p
    except OverflowError:
        return  # the value itself overflows: Python's error, as documented
    if not math.isfinite(v):
        return
    d_exact = p * math.pow(x, p - 1) if (p - 1) * math.log10(x) < 308 else -inf
    g = ad.grad(lambda x: x ** p)(x)
    t = ad.jvp(lambda x: x ** p, (x,), (1.0,))[1]
    assert g == t
    if math.isinf(d_exact):
        assert g == -inf
    else:
        assert g == pytest.approx(d_exact, rel=1e-12)
    neg = ad.grad(lambda x: x ** -1.0)(-1e-200)
    assert neg == -inf  # d/dx x**-1 = -x**-2: -inf on both sides


def test_sqrt_at_signed_zeros():
    assert ad.grad(ad.sqrt)(0.0) == inf
    assert ad.grad(ad.sqrt)(-0.0) == inf
    assert ad.grad(lambda x: ad.sqrt(-x))(0.0) == -inf
    assert ad.grad(lambda x: (-x) ** 0.5)(0.0) == -inf
    assert ad.jvp(ad.sqrt, (-0.0,), (1.0,))[1] == inf


def test_abs_at_nan_is_nan():
    assert math.isnan(ad.grad(abs)(math.nan))
    assert math.isnan(ad.grad(ad.abs)(math.nan))
    assert ad.grad(abs)(0.0) == 0.0 and ad.grad(abs)(-2.0) == -1.0


@given(st.floats(-5, 5), st.floats(0.2, 5) | st.floats(-5, -0.2))
def test_divmod_derivatives(a, b):
    q, r = divmod(a, b)
    gq = ad.grad(lambda a, b: divmod(a, b)[0] * 1.0, argnums=(0, 1))(a, b)
    gr = ad.grad(lambda a, b: divmod(a, b)[1], argnums=(0, 1))(a, b)
    assert gq == (0.0, 0.0)
    assert gr == (1.0, -math.floor(a / b)) or gr == (1.0, -(a // b))
    assert ad.jvp(lambda a: divmod(a, b)[1], (a,), (1.0,)) == (r, 1.0)
