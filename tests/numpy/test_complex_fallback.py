"""numpy functions without a complex rule run numpy's own Python code on the object arrays of
scalar complex duals (deltaad.numpy.complex_array.object_fallback): checked against finite
differences in the real and imaginary directions, forward and reverse, to second order; where
numpy's code cannot run on objects the error names the function."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from complex_checks import check, crandom

seeds = st.integers(0, 2**31 - 1)

# (name, function, argument shapes): complex arguments, some mixed with a real one
CASES = [
    ("polyval", lambda p, x: np.polyval(p, x), [(3,), ()]),
    ("kron", lambda a, b: np.kron(a, b), [(2,), (3,)]),
    ("cross", lambda a, b: np.cross(a, b), [(3,), (3,)]),
    ("convolve", lambda a, b: np.convolve(a, b), [(3,), (2,)]),
    ("prod", lambda a: np.prod(a), [(4,)]),
    ("prod axis", lambda a: np.prod(a, axis=0), [(2, 3)]),
    ("average", lambda a: np.average(a, weights=[1.0, 2.0, 3.0]), [(3,)]),
    ("nansum", lambda a: np.nansum(a), [(3,)]),
    ("matrix_power", lambda a: np.linalg.matrix_power(a, 3), [(2, 2)]),
    ("sort", lambda a: np.sort(a), [(4,)]),
    ("cumprod", lambda a: np.cumprod(a), [(3,)]),
    ("multiply.reduce", lambda a: np.multiply.reduce(a, axis=1), [(2, 3)]),
    ("multiply.accumulate", lambda a: np.multiply.accumulate(a), [(3,)]),
    ("add.reduceat", lambda a: np.add.reduceat(a, [0, 2]), [(4,)]),
    ("subtract.outer mixed", lambda a, x: np.subtract.outer(a, x), [(2,), None]),
]


@pytest.mark.parametrize("name,f,shapes", CASES, ids=[c[0] for c in CASES])
@settings(max_examples=3, deadline=None)
@given(seed=seeds)
def test_fallback_matches_finite_differences(name, f, shapes, seed):
    rng = np.random.default_rng(seed)
    args = [crandom(rng, s) if s is not None else rng.uniform(0.5, 1.5, 3) for s in shapes]
    check(f, args, seed, second=True, exact=False)


@settings(max_examples=5, deadline=None)
@given(seed=seeds)
def test_real_input_through_a_complex_fallback(seed):
    # a real dual meets a plain complex array in numpy's own code
    rng = np.random.default_rng(seed)
    z = crandom(rng, (3,))
    x = rng.uniform(0.5, 1.5, 2)
    check(lambda x: np.abs(np.kron(z, x)) ** 2, [x], seed, exact=False)


def test_fallback_values_are_numpys_to_rounding():
    rng = np.random.default_rng(1)
    p, b = crandom(rng, (3,)), crandom(rng, (3,))
    for f in [lambda p: np.polyval(p, 0.5), lambda p: np.kron(p, b), lambda p: np.prod(p),
              lambda p: np.cross(p, b)]:
        out = d.vjp(f, p)[0]
        np.testing.assert_allclose(out, f(p), rtol=1e-14, atol=0)


def test_asarray_of_a_complex_dual_is_the_object_array_of_its_elements():
    def f(x):
        z = x * (1 + 2j)
        a = np.asarray(z)
        assert a.dtype == object and a.shape == (2,)
        assert all(type(e) is d.ComplexDual and e.shape == () for e in a)
        assert type(np.asarray(z, dtype=complex)) is d.ComplexDual
        with pytest.raises(TypeError, match="drop its derivative"):
            np.asarray(z, dtype=float)
        return np.abs(a[0] * a[1])

    g = d.grad(f)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [5 * 2.0, 5 * 1.0])


@pytest.mark.parametrize("f,name", [
    (lambda z: np.linalg.cholesky(z @ np.conj(z.T)), "numpy.linalg.cholesky"),
    (lambda z: np.polydiv(z[0], z[1])[0], "numpy.polydiv"),
    (lambda z: np.unwrap(z), "numpy.unwrap"),
])
def test_functions_numpy_cannot_run_on_objects_raise_naming_them(f, name):
    Z = np.array([[2.0, 1.0], [0.5, 3.0]])
    with pytest.raises(NotImplementedError, match=name.replace(".", r"\.") + " on complex"):
        d.grad(lambda x: np.sum(np.abs(f(x * (1 + 1j)))))(Z)
