"""numpy's unary ufuncs of a float dual (``np.exp(x)`` in scalar code): the compiled core's C
path (``deltaad._arrays``' ``_scalar_unary``: numpy's loop on the value, the table's derivative
over floats) gives the Python rule's value, derivative, tangent and warnings to the bit, and
steps aside where it must (an edge of a domain, numpy's error state, a rule put in the table's
place, a dual of an outer differentiation)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from deltaad.numpy import fast, registry

compiled = pytest.mark.skipif(d.backend != "c", reason="the C path is the compiled backend's")

# the ufuncs of the C path, each with a range its value and derivative are finite on
DOMAINS = {
    np.sin: (-50.0, 50.0), np.cos: (-50.0, 50.0), np.tan: (-1.5, 1.5),
    np.tanh: (-20.0, 20.0), np.exp: (-700.0, 700.0), np.log: (1e-300, 1e300),
    np.sqrt: (1e-300, 1e300), np.square: (-1e150, 1e150), np.absolute: (-1e300, 1e300),
    np.arctan: (-1e150, 1e150), np.sinh: (-700.0, 700.0), np.cosh: (-700.0, 700.0),
    np.expm1: (-700.0, 700.0), np.log1p: (-0.999, 1e300), np.reciprocal: (1e-150, 1e150),
}


def _bits(v):
    return float(v).hex()


def _switched(flag, fn, *args):
    old = fast.set_enabled(flag)
    try:
        return fn(*args)
    finally:
        fast.set_enabled(old)


def _run(u, x):
    """Value, gradient and tangent of ``u(x) * x`` (the value's bits, a dual meeting it)."""
    def f(x):
        return u(x) * x

    val, grad = d.value_and_grad(f)(x)
    _, tan = d.jvp(f, (x,), (1.0,))
    return _bits(val), _bits(grad), _bits(tan)


points = st.sampled_from(sorted(DOMAINS, key=lambda u: u.__name__)).flatmap(
    lambda u: st.tuples(st.just(u), st.floats(*DOMAINS[u], allow_nan=False)))


@settings(max_examples=300)
@given(points)
def test_as_the_python_rule(case):
    """Value, gradient and tangent with the C path on and off agree to the bit, and the value
    is numpy's own on the float."""
    u, x = case
    on = _switched(True, _run, u, x)
    off = _switched(False, _run, u, x)
    assert on == off
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = float(u(x))
    got = []
    d.grad(lambda x: got.append(d.value(u(x))) or x)(x)
    assert _bits(got[0]) == _bits(plain)


# moderate points: no result or derivative so small that it underflows (the C path declines
# those too, since numpy's error state may not ignore an underflow)
moderate = st.sampled_from(sorted(DOMAINS, key=lambda u: u.__name__)).flatmap(
    lambda u: st.tuples(st.just(u), st.floats(max(DOMAINS[u][0], -30.0),
                                              min(DOMAINS[u][1], 30.0)).filter(
        lambda x: x == 0.0 or abs(x) >= 1e-8)))


@compiled
@settings(max_examples=300)
@given(moderate)
def test_c_path_taken(case):
    """At moderate points the C function answers, with numpy's value and the table's
    derivative (the Python rule's binding, evaluated on floats)."""
    from deltaad import _arrays

    u, x = case
    code = fast.UFUNCS.index(u)
    got = _arrays.scalar_unary(code, x)
    assert got is not None
    seen = []

    def rule(x):  # the Python rule (the C path off), its binding's coefficient
        y = u(x)
        seen.append((d.value(y), y.trace.binding(y.id)))
        return y

    _switched(False, d.grad(rule), x)
    value, binding = seen[0]
    parents, coefficients = binding
    assert _bits(got[0]) == _bits(value)
    assert parents == (0,) and _bits(got[1]) == _bits(coefficients[0])


def test_against_finite_differences():
    for u, (lo, hi) in DOMAINS.items():
        x = min(max(0.37, lo), hi) if u is not np.reciprocal else 0.8
        g = d.grad(lambda x: u(x))(x)
        h = 1e-6 * max(1.0, abs(x))
        fd = (float(u(x + h)) - float(u(x - h))) / (2 * h)
        assert math.isclose(g, fd, rel_tol=1e-6, abs_tol=1e-8), (u.__name__, g, fd)


@pytest.mark.parametrize("u, x", [(np.log, 0.0), (np.log, -1.0), (np.sqrt, 0.0),
                                  (np.sqrt, -0.0), (np.exp, 800.0), (np.exp, -745.5),
                                  (np.reciprocal, 0.0), (np.log1p, -1.0), (np.tan, math.inf),
                                  (np.sin, math.nan), (np.absolute, 0.0), (np.cosh, 711.0)])
def test_edges_as_numpy(u, x):
    """At a domain's edge, an overflow or a nan the result, its warnings and the derivative are
    the Python rule's (the C path declines: numpy's own call is made)."""
    def run():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = _run(u, x)
        return out, [(c.category, str(c.message)) for c in w]

    assert _switched(True, run) == _switched(False, run)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        np.float64(u(x))
    if w:  # numpy warns of the float: so does the dual's call
        assert _switched(True, run)[1]


def test_error_state_raises():
    """numpy's error state reaches the dual's call: an overflow raises under 'raise'."""
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            d.grad(lambda x: np.exp(x))(800.0)
        assert d.grad(lambda x: np.exp(x))(1.0) == math.e


def test_rule_put_in_place_is_called():
    """A scalar rule registered for ``np.exp`` answers instead of the table's."""
    calls = []
    old_rule, old_scalar = registry.UFUNCS[np.exp], registry.SCALAR_UFUNCS[np.exp]

    def mine(x):
        calls.append(x)
        return old_scalar(x)

    registry.register_ufunc(np.exp, old_rule, mine)
    try:
        assert d.grad(lambda x: np.exp(x))(0.5) == np.exp(0.5)
    finally:
        registry.register_ufunc(np.exp, old_rule, old_scalar)
    assert len(calls) == 1
    d.grad(lambda x: np.exp(x))(0.5)
    assert len(calls) == 1


def test_nested_and_escaped():
    """A dual of an outer differentiation takes the general path (second derivatives right);
    an escaped dual raises as before."""
    assert d.grad(d.grad(lambda x: np.sin(x)))(0.7) == -np.sin(0.7)
    assert d.grad(d.grad(lambda x: np.exp(2.0 * x)))(0.3) == pytest.approx(4 * np.exp(0.6))
    kept = []
    d.grad(lambda x: kept.append(x) or x)(0.5)
    with pytest.raises(d.EscapedDualError if hasattr(d, "EscapedDualError") else Exception,
                       match="already finished"):
        np.exp(kept[0])
