"""scipy.fft's transforms and scipy.signal's FFT convolutions on duals
(deltaad.numpy.scipy_fft).

Hypothesis over shapes, lengths (``n``/``s``), axes and ``norm``: reverse, forward and finite
differences agree (complex outputs through their real and imaginary parts; complex inputs
built from two real ones), second order through programs that are not linear, and the values
are scipy's own, bit for bit.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, seeds, uniform

sf = pytest.importorskip("scipy.fft")
ss = pytest.importorskip("scipy.signal")

family = Family()
op = family.op
NORMS = [None, "backward", "ortho", "forward"]


def _parts(z):
    return np.real(z), np.imag(z)


@op("fft/ifft/rfft/irfft/hfft/ihfft", second=False)
@st.composite
def _one_d(draw):
    rng = np.random.default_rng(draw(seeds))
    name = draw(st.sampled_from(["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]))
    shape = draw(st.sampled_from([(5,), (4,), (3, 4), (2, 3, 2)]))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = draw(st.sampled_from([None, 2, 3, 6]))
    norm = draw(st.sampled_from(NORMS))
    f = getattr(sf, name)
    complex_in = name in ("fft", "ifft", "irfft", "hfft") and draw(st.booleans())
    if complex_in:
        return (lambda x, y: _parts(f(x + 1j * y, n, axis, norm))), [uniform(rng, shape), uniform(rng, shape)]
    return (lambda x: _parts(f(x, n, axis, norm))), [uniform(rng, shape)]


@op("fftn/ifftn/rfftn/irfftn/fft2/ifft2/rfft2/irfft2", second=False)
@st.composite
def _n_d(draw):
    rng = np.random.default_rng(draw(seeds))
    name = draw(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2",
                                 "irfft2"]))
    shape = draw(st.sampled_from([(3, 4), (2, 3, 4), (4, 2)]))
    norm = draw(st.sampled_from(NORMS))
    f = getattr(sf, name)
    if name.endswith("2"):
        axes = draw(st.sampled_from([(-2, -1), (0, 1), (1, 0)]))
    else:
        axes = draw(st.sampled_from([None, (0,), (-1, 0), (1,)]))
    s = None
    if axes is not None and draw(st.booleans()):
        s = [draw(st.sampled_from([2, 3, 5])) for _ in axes]
    return (lambda x: _parts(f(x, s, axes, norm))), [uniform(rng, shape)]


@op("fftshift/ifftshift", second=False)
@st.composite
def _shift(draw):
    rng = np.random.default_rng(draw(seeds))
    f = draw(st.sampled_from([sf.fftshift, sf.ifftshift]))
    axes = draw(st.sampled_from([None, 0, (1,), (0, 1)]))
    return (lambda x: f(x, axes)), [uniform(rng, (3, 4))]


@op("power spectrum |rfft(x)|^2, irfft(rfft(x)^2)")
@st.composite
def _nonlinear(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(2, 7))
    norm = draw(st.sampled_from(NORMS))
    if draw(st.booleans()):
        return (lambda x: np.abs(sf.rfft(x, norm=norm)) ** 2), [uniform(rng, (n,))]
    return (lambda x: sf.irfft(sf.rfft(x) ** 2, n, norm=norm)), [uniform(rng, (n,))]


@op("fftconvolve/oaconvolve")
@st.composite
def _convolve(draw):
    rng = np.random.default_rng(draw(seeds))
    f = draw(st.sampled_from([ss.fftconvolve, ss.oaconvolve]))
    mode = draw(st.sampled_from(["full", "same", "valid"]))
    nd = draw(st.sampled_from([1, 2]))
    s1 = tuple(draw(st.integers(1, 6)) for _ in range(nd))
    s2 = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    axes = None
    if nd == 2 and draw(st.booleans()):
        axes = draw(st.sampled_from([0, 1, [1], [0, 1]]))
        ax = [axes] if isinstance(axes, int) else axes
        # the axes not convolved must match (or be 1)
        s2 = tuple(s2[i] if i in ax else s1[i] for i in range(nd))
    if mode == "valid":  # one input at least as large as the other in every axis
        s2 = tuple(min(a, b) for a, b in zip(s1, s2))
    return (lambda a, b: f(a, b, mode, axes)), [uniform(rng, s1), uniform(rng, s2)]


test_first_order, test_second_order = family.tests()


@given(seeds, st.integers(1, 40), st.integers(1, 9), st.sampled_from(["full", "same", "valid"]))
@settings(deadline=None)
def test_convolutions_are_scipys_values_and_numpys_derivatives(seed, n, m, mode):
    """The value is scipy's own to the bit; the gradient is that of np.convolve's (the same
    mathematics by another algorithm)."""
    rng = np.random.default_rng(seed)
    if mode == "same":  # numpy's 'same' has the longer input's length, scipy's in1's
        n = max(n, m)
    a, b = uniform(rng, (n,)), uniform(rng, (m,))
    w = uniform(rng, ss.fftconvolve(a, b, mode).shape)
    for f in (ss.fftconvolve, ss.oaconvolve):
        v = d.vjp(lambda x, y: f(x, y, mode), a, b)[0]
        assert np.array_equal(v, f(a, b, mode))
        g = d.grad(lambda x, y: np.sum(f(x, y, mode) * w), argnums=(0, 1))(a, b)
        expect = d.grad(lambda x, y: np.sum(np.convolve(x, y, mode) * w), argnums=(0, 1))(a, b)
        for gi, ei in zip(g, expect):
            np.testing.assert_allclose(gi, ei, rtol=1e-10, atol=1e-10)


def test_plain_calls_are_scipys_and_unsupported_name_the_function():
    x = np.arange(5.0)
    assert sf.rfft.deltaad_original is not None and np.array_equal(sf.rfft(x), sf.rfft.deltaad_original(x))
    assert ss.fftconvolve.deltaad_original is not None
    with pytest.raises(NotImplementedError, match=r"plan"):  # scipy's own refusal, first
        d.grad(lambda v: np.abs(sf.fft(v, plan=object())).sum())(x)
    with pytest.raises((NotImplementedError, TypeError), match=r"dct"):
        d.grad(lambda v: sf.dct(v).sum())(x)
