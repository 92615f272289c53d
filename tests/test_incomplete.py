"""The incomplete gamma and beta functions' derivatives in their parameters
(:mod:`deltaad.incomplete`) against high-precision references: mpmath's functions at 50 digits,
differentiated numerically at that precision, each on the smaller tail (``P`` or ``Q``, ``I``
or ``1 - I``: a derivative of a value near 1 would need far more digits). Relative 1e-8 on
hypothesis's grid: small and large shapes, ``x`` near 0, near the shape and large."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltaad import incomplete

mpmath = pytest.importorskip("mpmath")
pytest.importorskip("scipy")

TINY = 1e-280  # below, relative accuracy is the subnormal range's, not the algorithm's


def ref_gammainc_da(a, x):
    with mpmath.workdps(50):
        a, x = mpmath.mpf(a), mpmath.mpf(x)
        if mpmath.gammainc(a, 0, x, regularized=True) < 0.5:
            return float(mpmath.diff(lambda t: mpmath.gammainc(t, 0, x, regularized=True), a))
        return -float(mpmath.diff(lambda t: mpmath.gammainc(t, x, mpmath.inf, regularized=True),
                                  a))


def ref_betainc_dab(a, b, x):
    with mpmath.workdps(50):
        a, b, x = mpmath.mpf(a), mpmath.mpf(b), mpmath.mpf(x)
        if mpmath.betainc(a, b, 0, x, regularized=True) < 0.5:
            da = mpmath.diff(lambda s: mpmath.betainc(s, b, 0, x, regularized=True), a)
            db = mpmath.diff(lambda s: mpmath.betainc(a, s, 0, x, regularized=True), b)
            return float(da), float(db)
        # 1 - I_x(a, b) = I_{1-x}(b, a), from 0 (mpmath's integral to 1 subtracts)
        y = 1 - x
        da = mpmath.diff(lambda s: mpmath.betainc(b, s, 0, y, regularized=True), a)
        db = mpmath.diff(lambda s: mpmath.betainc(s, a, 0, y, regularized=True), b)
        return -float(da), -float(db)


def close(got, want, rel=1e-8):
    if abs(want) < TINY:
        return abs(got) < 1e3 * TINY
    return abs(got - want) <= rel * abs(want)


shapes = st.floats(-3.0, 3.0).map(lambda e: 10.0 ** e)  # 1e-3 .. 1e3, log-uniform


@st.composite
def gamma_points(draw):
    a = draw(shapes)
    kind = draw(st.sampled_from(["anywhere", "near a", "small", "large"]))
    if kind == "near a":
        x = a * draw(st.floats(0.7, 1.4))
    elif kind == "small":
        x = 10.0 ** draw(st.floats(-10.0, -2.0))
    elif kind == "large":
        x = 10.0 ** draw(st.floats(1.0, 4.0))
    else:
        x = 10.0 ** draw(st.floats(-10.0, 4.0))
    return a, x


@given(gamma_points())
def test_gammainc_da_against_mpmath(p):
    a, x = p
    got, want = incomplete.gammainc_da(a, x), ref_gammainc_da(a, x)
    assert close(got, want), (a, x, got, want)


@st.composite
def beta_points(draw):
    a, b = draw(shapes), draw(shapes)
    kind = draw(st.sampled_from(["anywhere", "near 0", "near 1", "near the mean"]))
    if kind == "near 0":
        x = 10.0 ** draw(st.floats(-10.0, -1.0))
    elif kind == "near 1":
        x = 1.0 - 10.0 ** draw(st.floats(-10.0, -1.0))
    elif kind == "near the mean":
        x = min(max(a / (a + b) * draw(st.floats(0.8, 1.2)), 1e-300), 1.0 - 1e-16)
    else:
        x = draw(st.floats(1e-6, 1.0 - 1e-6))
    return a, b, x


@given(beta_points())
def test_betainc_dab_against_mpmath(p):
    a, b, x = p
    got, want = incomplete.betainc_dab(a, b, x), ref_betainc_dab(a, b, x)
    for g, w in zip(got, want):
        assert close(g, w), (a, b, x, got, want)


def test_edges():
    """0 where the function is constant in its parameters (x = 0, inf; 0, 1), nan outside the
    domain -- never an exception."""
    assert incomplete.gammainc_da(2.0, 0.0) == 0.0
    assert incomplete.gammainc_da(2.0, math.inf) == 0.0
    assert math.isnan(incomplete.gammainc_da(-1.0, 2.0))
    assert math.isnan(incomplete.gammainc_da(2.0, math.nan))
    assert incomplete.betainc_dab(2.0, 3.0, 0.0) == (0.0, 0.0)
    assert incomplete.betainc_dab(2.0, 3.0, 1.0) == (0.0, 0.0)
    assert all(math.isnan(d) for d in incomplete.betainc_dab(2.0, 0.0, 0.5))
    assert all(math.isnan(d) for d in incomplete.betainc_dab(2.0, 3.0, 1.5))


def test_arrays_are_the_floats_elementwise():
    import numpy as np
    a = np.array([0.5, 2.5, 40.0])
    x = np.array([[0.1], [3.0]])
    got = incomplete.gammainc_da_of(a, x)
    assert got.shape == (2, 3)
    assert all(got[i, j] == incomplete.gammainc_da(a[j], x[i, 0])
               for i in range(2) for j in range(3))
    da, db = incomplete.betainc_dab_of(a, 2.0, np.array([0.2, 0.5, 0.9]))
    assert list(zip(da, db)) == [incomplete.betainc_dab(u, 2.0, v)
                                 for u, v in zip(a, [0.2, 0.5, 0.9])]
