"""Declaring rules (deltaad.numpy.define): defvjp, defjvp, defconst, as a user would.

Each test registers rules for a numpy function deltaad does not differentiate by itself and
restores the registry afterwards. Derivatives are checked against finite differences and the
other mode, to second order (rules written with numpy functions differentiate again); a side
that is not declared comes from transposing the other.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import check_first_order, check_second_order, seeds


pytestmark = pytest.mark.usefixtures("restore_registry")  # (tests/conftest.py)


def dsinc(x):
    """d/dx sinc(x) = (cos(pi x) - sinc(x)) / x, and 0 at 0; with numpy functions."""
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 0.0, (np.cos(np.pi * x) - np.sinc(x)) / safe)


def fd(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_a_function_is_not_differentiable_until_declared():
    with pytest.raises(NotImplementedError, match="numpy.nextafter"):
        d.grad(lambda x: np.nextafter(x, 2.0).sum())(np.array([0.3]))


def test_a_declared_rule_replaces_deltaads_own():
    """(np.sinc has a rule of deltaad's; a declared one replaces it, on arrays and scalars)"""
    d.defvjp(np.sinc, lambda ans, x: lambda g: g * 2.0)
    assert list(d.grad(lambda x: np.sinc(x).sum())(np.array([0.3]))) == [2.0]
    d.defvjp(np.copysign, lambda ans, a, b: lambda g: g * 3.0, None)
    assert d.grad(lambda x: np.copysign(x, 1.0))(0.5) == 3.0


@pytest.mark.parametrize("sides", ["both", "vjp only", "jvp only"])
def test_declared_rules_first_and_second_order(sides):
    if sides != "jvp only":
        d.defvjp(np.sinc, lambda ans, x: lambda g: g * dsinc(x))
    if sides != "vjp only":
        d.defjvp(np.sinc, lambda g, ans, x: g * dsinc(x))
    f = lambda x: np.sinc(x)  # noqa: E731

    # (away from 0, where this rule's second derivative takes the constant branch of where)
    away = st.floats(0.1, 3) | st.floats(-3, -0.1)

    @given(st.lists(away, min_size=1, max_size=4), seeds)
    def prop(xs, seed):
        x = np.array(xs)
        check_first_order(f, [x], seed)
        check_second_order(f, [x], seed)

    prop()
    # and on scalars, against finite differences of numpy's sinc
    for x in (0.0, 0.37, -2.2):
        g = d.grad(lambda t: np.sinc(t))(x)
        assert abs(g - fd(np.sinc, x)) < 1e-8
        assert d.jvp(lambda t: np.sinc(t), (x,), (1.0,))[1] == pytest.approx(g, abs=1e-15)


def test_broadcast_cotangent_is_summed_back():
    """A rule may return a cotangent of the output's shape for a broadcast argument."""
    d.defvjp(np.copysign, lambda ans, a, b: lambda g: g * np.sign(a) * np.sign(b), None)
    a = np.array([[1.5], [-2.0]])
    b = np.array([1.0, -1.0, 2.0])
    ga = d.grad(lambda a: np.copysign(a, b).sum())(a)
    assert ga.shape == (2, 1)
    assert list(ga[:, 0]) == [1.0 - 1.0 + 1.0, -1.0 + 1.0 - 1.0]


def test_argument_without_a_rule_is_an_error():
    d.defvjp(np.copysign, lambda ans, a, b: lambda g: g * np.sign(a) * np.sign(b))
    with pytest.raises(TypeError, match=r"numpy\.copysign: argument 1 is a dual"):
        d.grad(lambda s: np.copysign(2.0, s))(1.0)


def test_defconst():
    d.defconst(np.sinc)
    x = np.array([0.25, 1.5])
    g = d.grad(lambda t: (np.sinc(t) * t).sum())(x)
    assert list(g) == list(np.sinc(x))  # sinc(t) is a constant: d/dt (c * t) = c


def test_a_function_that_does_not_dispatch_gets_a_differentiable_version():
    """A plain Python function converting its input never reaches deltaad; defvjp returns a
    version of it that does."""

    def softsign(x):
        x = np.asarray(x, dtype=float)
        return x / (1.0 + np.abs(x))

    dsoftsign = d.defvjp(softsign, lambda ans, x: lambda g: g / (1.0 + np.abs(x)) ** 2)
    assert dsoftsign is not softsign
    x = 0.7
    assert d.grad(lambda t: dsoftsign(t))(x) == pytest.approx(1.0 / (1.0 + x) ** 2, rel=1e-15)
    assert d.jvp(dsoftsign, (x,), (2.0,))[1] == pytest.approx(2.0 / (1.0 + x) ** 2, rel=1e-15)
    assert float(dsoftsign(x)) == softsign(x)


def test_scipy_ufunc_rules_name_scipy():
    special = pytest.importorskip("scipy.special")
    with pytest.raises(NotImplementedError, match=r"scipy\.special\.wrightomega\b"):
        d.grad(lambda x: special.wrightomega(x))(0.3)
    # the derivative of Wright's omega function, w + log(w) = x: w / (1 + w)
    d.defvjp(special.wrightomega, lambda ans, x: lambda g: g * ans / (1.0 + ans))
    p = 0.3
    g = d.grad(lambda t: special.wrightomega(t))(p)
    assert g == pytest.approx(fd(special.wrightomega, p), rel=1e-7)
    assert d.jvp(lambda t: special.wrightomega(t), (p,), (1.0,))[1] == pytest.approx(g, rel=1e-12)
    assert math.isfinite(g)
