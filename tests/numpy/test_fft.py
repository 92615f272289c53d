"""numpy.fft (deltaad.numpy.fft): every transform with every n/s, axis/axes and norm, on real
and complex inputs, against finite differences in the real and imaginary directions, forward
and reverse, to second order; values are numpy's to the bit."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import deltaad as d
from complex_checks import check, crandom
from helpers import scaled

seeds = st.integers(0, 2**31 - 1)
norms = st.sampled_from([None, "backward", "ortho", "forward"])

ONE_D = [np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.hfft, np.fft.ihfft]
N_D = [np.fft.fftn, np.fft.ifftn, np.fft.rfftn, np.fft.irfftn]
TWO_D = [np.fft.fft2, np.fft.ifft2, np.fft.rfft2, np.fft.irfft2]
REAL_INPUT = {np.fft.rfft, np.fft.ihfft, np.fft.rfftn, np.fft.rfft2}


def _input(f, rng, shape):
    if f in REAL_INPUT:
        return rng.standard_normal(shape)
    return np.asarray(crandom(rng, shape, 0.2, 1.5))


@pytest.mark.parametrize("f", ONE_D, ids=lambda f: f.__name__)
@given(seed=seeds, shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
       data=st.data(), norm=norms)
@scaled(0.3)
def test_one_dimensional(f, seed, shape, data, norm):
    rng = np.random.default_rng(seed)
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    n = data.draw(st.one_of(st.none(), st.integers(1, 7)))
    if f in (np.fft.irfft, np.fft.hfft) and n is None and shape[axis] == 1:
        n = 2  # numpy's default 2 (m - 1) points would be 0
    x = _input(f, rng, shape)
    check(lambda x: f(x, n=n, axis=axis, norm=norm), [x], seed, second=seed % 4 == 0)


@pytest.mark.parametrize("f", N_D + TWO_D, ids=lambda f: f.__name__)
@given(seed=seeds, shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4),
       data=st.data(), norm=norms)
@scaled(0.3)
def test_multi_dimensional(f, seed, shape, data, norm):
    rng = np.random.default_rng(seed)
    nd = len(shape)
    if f in TWO_D:
        axes = data.draw(st.sampled_from([(-2, -1), (0, 1), (1, 0)]))
    else:
        axes = data.draw(st.one_of(st.none(), st.lists(st.integers(0, nd - 1), min_size=1,
                                                       max_size=nd, unique=True).map(tuple)))
    k = 2 if f in TWO_D else (nd if axes is None else len(axes))
    s = data.draw(st.one_of(st.none(), st.lists(st.integers(1, 5), min_size=k, max_size=k)))
    if s is not None and axes is None and f not in TWO_D:
        axes = tuple(range(nd - k, nd))
    if f in (np.fft.irfftn, np.fft.irfft2) and s is None:
        last = (axes if axes is not None else tuple(range(nd)))[-1]
        if shape[last] == 1:
            s = [2] * k  # numpy's default would be 0 points
            if axes is None:
                axes = tuple(range(nd - k, nd))
    x = _input(f, rng, shape)
    kw = {"norm": norm}
    if axes is not None:
        kw["axes"] = axes
    if s is not None:
        kw["s"] = s
    check(lambda x: f(x, **kw), [x], seed, second=seed % 6 == 0)


@given(seed=seeds, shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
       data=st.data())
@scaled(0.3)
def test_shifts(seed, shape, data):
    rng = np.random.default_rng(seed)
    nd = len(shape)
    axes = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                               st.lists(st.integers(0, nd - 1), unique=True).map(tuple)))
    z = np.asarray(crandom(rng, shape))
    x = rng.standard_normal(shape)
    for f in (np.fft.fftshift, np.fft.ifftshift):
        check(lambda z: f(z, axes), [z], seed, second=False)
        check(lambda x: f(x, axes), [x], seed, second=False)


def test_power_spectrum_gradient_is_hand_derived():
    # |F x|^2 summed is n |x|^2 (Parseval): its gradient is 2 n x
    x = np.random.default_rng(0).standard_normal(8)
    f = lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2)  # noqa: E731
    v, g = d.value_and_grad(f)(x)
    assert v == f(x)
    np.testing.assert_allclose(g, 16 * x, rtol=1e-12, atol=1e-12)
    # the same with the orthonormal transform: gradient 2 x
    np.testing.assert_allclose(d.grad(lambda x: np.sum(np.abs(np.fft.rfft(x, norm="ortho")[1:4]) ** 2))(x),
                               d.grad(lambda x: np.sum(np.abs(np.fft.fft(x, norm="ortho")[1:4]) ** 2))(x),
                               rtol=1e-12, atol=1e-12)


def test_convolution_by_fft_matches_direct_convolution():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(6), rng.standard_normal(6)

    def conv_fft(a, b):
        n = 11
        return np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)

    def conv_direct(a, b):
        return np.array([sum(a[i] * b[k - i] for i in range(6) if 0 <= k - i < 6) for k in range(11)])

    ga, gb = d.grad(lambda a, b: np.sum(np.sin(conv_fft(a, b))), argnums=(0, 1))(a, b)
    c = conv_direct(a, b)
    w = np.cos(c)
    np.testing.assert_allclose(ga, [sum(w[i + j] * b[j] for j in range(6)) for i in range(6)], atol=1e-12)
    np.testing.assert_allclose(gb, [sum(w[i + j] * a[j] for j in range(6)) for i in range(6)], atol=1e-12)


def test_values_are_numpys_to_the_bit():
    rng = np.random.default_rng(2)
    z = crandom(rng, (4, 6))
    x = rng.standard_normal((4, 6))
    for f, a in [(np.fft.fft2, z), (np.fft.rfftn, x), (np.fft.irfftn, z), (np.fft.hfft, z),
                 (np.fft.ihfft, x), (np.fft.ifftn, z)]:
        out, _ = d.vjp(f, a)
        assert out.dtype == f(a).dtype
        assert out.tobytes() == f(a).tobytes()
        out, _ = d.jvp(f, (a,), (a,))
        assert out.tobytes() == f(a).tobytes()


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="norm"):
        d.grad(lambda x: np.sum(np.abs(np.fft.fft(x, norm="bogus"))))(np.ones(4))
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        d.grad(lambda x: np.sum(np.abs(np.fft.fft(x, n=0))))(np.ones(4))
    with pytest.raises(TypeError, match="out="):
        d.grad(lambda x: np.sum(np.abs(np.fft.fft(x, out=np.empty(4, complex)))))(np.ones(4))
