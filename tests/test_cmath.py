"""deltaad.cmath: every name of Python's cmath; exact cmath results on plain numbers, the same
values and derivatives (against finite differences, both modes, second order) on duals."""

import cmath
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import deltaad as d
import deltaad.cmath as dcmath
from complex_checks import check, crandom
from helpers import scaled

FUNCS = ["exp", "log", "log10", "sqrt", "acos", "asin", "atan", "cos", "sin", "tan", "acosh",
         "asinh", "atanh", "cosh", "sinh", "tanh"]


def test_every_name_of_cmath_is_there():
    names = [n for n in dir(cmath) if not n.startswith("_")]
    assert sorted(n for n in names if not hasattr(dcmath, n)) == []
    for c in ("pi", "e", "tau", "inf", "infj", "nan", "nanj"):
        v, w = getattr(dcmath, c), getattr(cmath, c)
        assert v == w or (v != v and w != w)


_POINTS = [0.3 + 0.4j, -1.5 + 0.2j, 2.0, -0.5, 1j, 0j, -0.0 - 2j, complex(math.inf, 1.0),
           complex(1.0, math.nan), 1e300 + 1e300j, 3, -2, np.complex128(0.7 - 0.1j)]


@pytest.mark.parametrize("name", FUNCS + ["phase", "polar"])
def test_plain_numbers_give_cmaths_results_and_errors(name):
    f, g = getattr(dcmath, name), getattr(cmath, name)
    for z in _POINTS:
        try:
            want = g(z)
        except (ValueError, OverflowError) as exc:
            with pytest.raises(type(exc)):
                f(z)
            continue
        got = f(z)
        assert type(got) is type(want)
        assert repr(got) == repr(want)


def _domain(name, rng, shape):
    z = crandom(rng, shape)
    if name in ("acos", "asin", "atanh", "acosh", "asinh", "atan"):
        z = z * 0.5 + (0.2 + 0.3j)
    if name in ("tan", "tanh"):
        z = z * 0.5
    return z


_CUTS = ("acos", "asin", "atanh", "acosh", "asinh", "atan", "log", "log10", "sqrt")


@pytest.mark.parametrize("name", FUNCS)
@given(seed=st.integers(0, 2**31 - 1))
@scaled(0.2)
def test_derivatives_on_complex_duals(name, seed):
    rng = np.random.default_rng(seed)
    f = getattr(dcmath, name)
    z = complex(_domain(name, rng, ()))
    # the branch cuts lie on the axes: finite differences across one are no derivative
    assume(name not in _CUTS or (abs(z.real) > 0.05 and abs(z.imag) > 0.05))
    check(f, [z], seed)
    v, _ = d.vjp(f, z)
    want = getattr(cmath, name)(z)
    assert type(v) is complex and repr(v) == repr(want)


@pytest.mark.parametrize("name", FUNCS)
def test_real_duals_give_complex_results(name):
    x = 0.35
    f = getattr(dcmath, name)
    v, pb = d.vjp(f, x)
    assert repr(v) == repr(getattr(cmath, name)(x))
    check(f, [x], 0, second=False)


def test_log_with_a_base():
    check(lambda z, b: dcmath.log(z, b), [0.3 + 0.4j, 2.5 + 0j], 0)
    check(lambda z: dcmath.log(z, 10.0), [0.3 + 0.4j], 0)
    v, _ = d.vjp(lambda z: dcmath.log(z, 3.0), 0.3 + 0.4j)
    assert repr(v) == repr(cmath.log(0.3 + 0.4j, 3.0))


def test_phase_polar_rect():
    z = 0.3 - 0.4j
    check(dcmath.phase, [z], 0)
    check(lambda z: dcmath.polar(z), [z], 0)
    check(dcmath.rect, [1.5, 0.7], 0)
    v, _ = d.vjp(dcmath.polar, z)
    assert v == cmath.polar(z)
    v, _ = d.vjp(dcmath.rect, 1.5, 0.7)
    assert repr(v) == repr(cmath.rect(1.5, 0.7))
    # rect(r, phi) = r e^{i phi}: d/dphi of Im at phi = 0 is r
    assert d.grad(lambda p: dcmath.rect(2.0, p).imag)(0.0) == 2.0


def test_predicates_answer_on_values():
    def f(z):
        assert dcmath.isfinite(z) and not dcmath.isinf(z) and not dcmath.isnan(z)
        assert dcmath.isclose(z, z + 1e-12)
        return abs(z)

    d.grad(f)(1 + 1j)


def test_a_cmath_program_becomes_differentiable():
    def mandelbrot_escape(c, cm):
        z = 0j
        for _ in range(5):
            z = z * z + c
        return cm.log(z + 3).real + cm.phase(z + 3)

    c = 0.2 + 0.3j
    assert d.value_and_grad(lambda c: mandelbrot_escape(c, dcmath))(c)[0] == mandelbrot_escape(c, cmath)
    check(lambda c: mandelbrot_escape(c, dcmath), [c], 0)


def test_math_module_refuses_duals_when_switched_off():
    """``cmath.exp`` takes duals while deltaad differentiates (``deltaad.stdmath``); switched
    off, or bound by name beforehand, it refuses them, naming the fix."""
    assert abs(d.grad(lambda x: abs(cmath.exp(1j * x) * 2.0))(0.3)) < 1e-15  # |2 e^(ix)| = 2
    d.stdmath.enable(False)
    try:
        with pytest.raises(TypeError, match="drop the derivative") as ei:
            d.grad(lambda x: abs(cmath.exp(1j * x)))(0.3)
    finally:
        d.stdmath.enable(True)
    assert "deltaad.cmath.exp(z)" in str(ei.value) and "from deltaad import cmath" in str(ei.value)
    exp = vars(cmath)["exp"]
    with pytest.raises(TypeError, match="from deltaad.cmath import exp"):
        d.grad(lambda x: abs(exp(1j * x)))(0.3)
    with pytest.raises(TypeError, match=r"x \+ 1j \* y"):
        d.grad(lambda x: abs(complex(x)))(0.3)
