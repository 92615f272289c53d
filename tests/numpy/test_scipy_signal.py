"""scipy.signal's filters on duals (deltaad.numpy.scipy_signal).

Hypothesis over signals, filters and modes: the outputs are scipy's own, bit for bit; the
gradient agrees with finite differences and with forward mode, in the signal and (for
``lfilter``) in the coefficients and the initial state; scipy's ``filtfilt`` and
``sosfiltfilt`` differentiate through them unchanged; the functions deltaad does not cover
raise an error naming them.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import seeds

sg = pytest.importorskip("scipy.signal")


def _check(f, x, rng, rtol=1e-5):
    """f's outputs are scipy's bits; reverse against finite differences and forward."""
    out = d.jvp(f, (x,), (np.zeros_like(x),))[0]
    ref = f(x)
    for o, r in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple)
                    else (ref,)):
        assert np.array_equal(d.value(o), r, equal_nan=True)
    w = [rng.normal(size=np.shape(r)) for r in (ref if isinstance(ref, tuple) else (ref,))]

    def loss(x):
        y = f(x)
        return sum(np.sum(wi * yi) for wi, yi in zip(w, y if isinstance(y, tuple) else (y,)))

    g = d.grad(loss)(x)
    t = rng.normal(size=np.shape(x))
    assert np.sum(g * t) == pytest.approx(d.jvp(loss, (x,), (t,))[1], rel=1e-10, abs=1e-10)
    h = 1e-6
    fd = (loss(x + h * t) - loss(x - h * t)) / (2 * h)
    assert np.sum(g * t) == pytest.approx(fd, rel=rtol, abs=1e-6)


def _filter(rng, order):
    return sg.butter(order, rng.uniform(0.1, 0.6))


@settings(max_examples=20, deadline=None)
@given(seeds, st.integers(1, 4), st.sampled_from(["x", "b", "a", "zi"]))
def test_lfilter_in_every_argument(seed, order, wrt):
    rng = np.random.default_rng(seed)
    b, a = _filter(rng, order)
    x = rng.normal(size=15)
    zi = sg.lfilter_zi(b, a) * rng.normal()
    if wrt == "x":
        _check(lambda x: sg.lfilter(b, a, x), x, rng)
    elif wrt == "b":
        _check(lambda b: sg.lfilter(b, a, x), b, rng)
    elif wrt == "a":
        _check(lambda a: sg.lfilter(b, a, x), a, rng)
    else:
        _check(lambda z: sg.lfilter(b, a, x, zi=z), zi, rng)


@settings(max_examples=10, deadline=None)
@given(seeds, st.integers(0, 1))
def test_lfilter_along_an_axis_and_sections(seed, axis):
    rng = np.random.default_rng(seed)
    b, a = _filter(rng, 2)
    x = rng.normal(size=(3, 12) if axis else (12, 3))
    _check(lambda x: sg.lfilter(b, a, x, axis=axis), x, rng)
    sos = sg.butter(4, 0.3, output="sos")
    _check(lambda x: sg.sosfilt(sos, x, axis=axis), x, rng)
    zi = np.stack([sg.lfilter_zi(s[:3], s[3:]) for s in sos])
    _check(lambda x: sg.sosfilt(sos, x[:, 0] if axis == 0 else x[0], zi=zi), x, rng)


@settings(max_examples=10, deadline=None)
@given(seeds)
def test_filtfilt_and_sosfiltfilt_through_scipys_own_code(seed):
    rng = np.random.default_rng(seed)
    b, a = _filter(rng, 3)
    x = rng.normal(size=30)
    _check(lambda x: sg.filtfilt(b, a, x), x, rng)
    _check(lambda x: sg.sosfiltfilt(sg.butter(4, 0.25, output="sos"), x), x, rng)


@settings(max_examples=15, deadline=None)
@given(seeds, st.sampled_from(["interp", "mirror", "nearest", "constant", "wrap"]),
       st.integers(0, 2))
def test_savgol_and_detrend(seed, mode, deriv):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 17))
    _check(lambda x: sg.savgol_filter(x, 7, 3, deriv=deriv, mode=mode, cval=0.5), x, rng)
    _check(lambda x: sg.detrend(x, type="linear", bp=[5]), x, rng)
    _check(lambda x: sg.detrend(x, axis=0, type="constant"), x, rng)


@settings(max_examples=15, deadline=None)
@given(seeds, st.sampled_from(["full", "same", "valid"]), st.sampled_from([(2, 3), (3, 3), (1, 4)]),
       st.booleans())
def test_medfilt_and_2d_convolutions(seed, mode, kshape, kernel_is_variable):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(5, 6))
    k = rng.normal(size=kshape)
    _check(lambda x: sg.medfilt(x, [3, 5]), x, rng)
    for f in (sg.convolve2d, sg.correlate2d):
        if kernel_is_variable:
            _check(lambda k: f(x, k, mode), k, rng)
        else:
            _check(lambda x: f(x, k, mode), x, rng)


def test_what_is_not_covered_raises_by_name():
    x = np.linspace(0.0, 1.0, 16)
    with pytest.raises(NotImplementedError, match="scipy.signal.hilbert"):
        d.grad(lambda x: np.sum(np.abs(sg.hilbert(x))))(x)
    with pytest.raises(NotImplementedError, match="boundary='wrap'"):
        d.grad(lambda x: np.sum(sg.convolve2d(x.reshape(4, 4), np.ones((2, 2)),
                                              boundary="wrap")))(x)
    with pytest.raises(NotImplementedError, match="at most 2048"):
        d.grad(lambda x: np.sum(sg.detrend(x)))(np.ones(3000))
