"""The complex dual (deltaad.numpy.complex_array): packing is exact, scalars keep their type,
real and complex duals and constants meet in every combination, escaped duals raise, and the
compiled core and the pure backend agree to the last bit on complex programs."""

import cmath
import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import deltaad as d
from deltaad.numpy import complex_array as C
from complex_checks import check, crandom

finite_or_not = st.floats(allow_nan=True, allow_infinity=True)


@given(z=hnp.arrays(np.complex128, hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
                    elements=st.complex_numbers(allow_nan=True, allow_infinity=True)))
def test_packing_is_exact(z):
    p = C.pack(z)
    with np.errstate(over="ignore"):
        z64 = z.astype(np.complex64)
    assert p.shape == z.shape + (2,) and p.dtype == np.float64
    back = C.unpack(p)
    assert back.shape == z.shape and back.tobytes() == z.tobytes()
    assert C.unpack(C.pack(z64)).tobytes() == z64.tobytes()


@given(re=finite_or_not, im=finite_or_not)
def test_scalars_keep_their_type_and_bits(re, im):
    for flavour in (complex, np.complex128, np.complex64):
        with np.errstate(over="ignore"):
            z = flavour(complex(re, im))
        back = C.unpack(C.pack(z), flavour)
        assert type(back) is flavour
        assert np.asarray(back).tobytes() == np.asarray(z).tobytes()


def test_signed_zeros_survive_a_round_trip_through_a_differentiation():
    for z in (complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0)):
        out, _ = d.vjp(lambda z: z, z)
        assert repr(out) == repr(z)
        out, _ = d.jvp(lambda z: z * 1.0, (z,), (1.0,))
        assert repr(out) == repr(z * 1.0)


def test_real_and_complex_meet_in_every_combination():
    rng = np.random.default_rng(0)
    z = crandom(rng, (3,))
    c = crandom(rng, (3,))
    x = rng.standard_normal(3)

    def f(z, x, s):
        terms = [
            z * x, x * z, x * 1j, 1j * x, s * 1j, 1j * s, s * np.complex128(2j), np.complex64(2j) * s,
            x + c, c - x, np.multiply(x, c), np.add(c, s), x * z[0], z[1] * s, z / (x + 2),
            np.concatenate([x, z]), np.stack([x, c]), np.where(x > 0, z, x), x.astype(complex),
            d.asarray([s, s * 1j, 2.0]), d.asarray([z[0], s]), np.array([1.0, 2.0]) * z[2],
            np.multiply(x, [1j, 2, 3]), np.stack([s * 1j, s]),
        ]
        return [t for t in terms]

    check(f, [z, x, 0.7], 0, second=False)


def test_a_scalar_dual_times_a_python_complex_is_a_python_complex():
    v, _ = d.vjp(lambda x: x * (1 + 2j), 0.5)
    assert type(v) is complex and v == 0.5 * (1 + 2j)
    v, _ = d.vjp(lambda x: np.complex128(1 + 2j) * x, 0.5)
    assert type(v) is np.complex128


def test_escaped_complex_dual_raises():
    box = []
    d.grad(lambda x: box.append(x * 1j) or x)(1.0)
    with pytest.raises(d.EscapedDualError):
        box[0] * 2.0
    with pytest.raises(d.EscapedDualError):
        np.exp(box[0])
    assert d.value(box[0]) == 1j
    assert "ComplexDual" in repr(box[0])


def test_complex_duals_of_outer_differentiations_are_constants_inside():
    def outer(x):
        z = x * (1 + 1j)  # a complex dual of the outer tape

        def inner(y):
            return abs(z * y) ** 2  # z is a constant here: d/dy = 2 y |z|^2

        return d.grad(inner)(0.5)

    # d/dx (2 * 0.5 * |x (1+i)|^2) = d/dx (2 x^2) = 4x
    assert d.grad(outer)(1.5) == pytest.approx(6.0, rel=1e-15)


def test_jacobians_of_complex_duals_inside_differentiations():
    # the inner jacfwd's entries are complex duals of the outer tape: assembled without a
    # plain numpy array in between
    f = lambda x: np.sum(np.abs(d.jacfwd(lambda y: np.exp(1j * y * x))(np.array([0.3, 0.5]))) ** 2)  # noqa: E731
    check(f, [0.7], 0, second=False)


# --------------------------------------------------------------------------------------------
# The two backends agree to the last bit on complex programs


PROGRAMS = r'''
import cmath, pickle, sys
import numpy as np
import deltaad as ad
import deltaad.cmath as acm

rng = np.random.default_rng(3)
z = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
x = rng.normal(size=4)
a = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3)) + 3 * np.eye(3)

def scalar(s):
    w = s * 1j + 0.5
    for _ in range(4):
        w = w * w / (w.conjugate() + 2.0) + acm.exp(w * 0.1)
    return abs(w) + acm.phase(w) + w.real * w.imag

def arrays(z, x):
    w = np.fft.fft2(z * x) + np.exp(z) / (z + 3.0)
    return np.sum(np.abs(np.fft.irfft(w, 6)) ** 2) + np.real(np.vdot(w, z * x)) + np.sum(np.abs(z @ x))

def spectra(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.abs(w) ** 2) + np.sum(np.abs(v) ** 2 * np.arange(3))

out = {
    "scalar": ad.value_and_grad(scalar)(0.3),
    "arrays": ad.value_and_grad(arrays, argnums=(0, 1))(z, x),
    "spectra": ad.value_and_grad(spectra)(a),
    "jvp": ad.jvp(arrays, (z, x), (z * 1j, x)),
    "hessian": ad.hessian(lambda x: arrays(z, x))(x),
    "holomorphic": ad.jacfwd(lambda z: np.sin(z) * z, holomorphic=True)(z[0]),
    "rev over fwd": ad.grad(lambda s: ad.jvp(scalar, (s,), (1.0,))[1])(0.3),
}
sys.stdout.buffer.write(pickle.dumps(out))
'''


def _run(backend):
    env = dict(os.environ, DELTAAD_BACKEND=backend)
    r = subprocess.run([sys.executable, "-c", PROGRAMS], env=env, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    return pickle.loads(r.stdout)


def _bits(x):
    if isinstance(x, (tuple, list)):
        return [_bits(e) for e in x]
    if isinstance(x, (np.ndarray, np.generic)):
        return (np.asarray(x).dtype.str, np.shape(x), np.asarray(x).tobytes())
    if isinstance(x, (float, complex)):
        return (type(x).__name__, np.asarray(x).tobytes())
    return repr(x)


def test_complex_programs_bit_for_bit():
    pytest.importorskip("deltaad._core")
    c = _run("c")
    p = _run("python")
    assert c.keys() == p.keys()
    for k in c:
        assert _bits(c[k]) == _bits(p[k]), k
