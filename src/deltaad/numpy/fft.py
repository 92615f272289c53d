"""``numpy.fft``: the discrete Fourier transforms, every ``n``/``s``, ``axis``/``axes`` and
``norm`` argument, on real and complex duals.

A transform is linear, so its derivative is a transform too. Four one-dimensional primitives
carry the rules -- ``fft``, ``ifft``, ``rfft``, ``irfft`` -- each with numpy's value; the others
are numpy's own compositions of them, in numpy's order (so their values are numpy's, bit for
bit): ``fftn``/``fft2`` apply ``fft`` axis by axis, ``rfftn`` an ``rfft`` then ``fft``s, ``hfft``
is ``irfft`` of the conjugate, and so on.

With ``F`` the unnormalised transform, ``fft(norm)`` is ``F`` scaled by 1, ``1/sqrt(n)`` or ``1/n``
and ``ifft(norm)`` is ``F^H`` scaled by ``1/n``, ``1/sqrt(n)`` or 1: the adjoint of each is the other
with the opposite ``norm`` ("backward" and "forward" exchanged), and cropping or zero-padding to
``n`` points transposes to padding or cropping back. ``rfft`` is ``fft`` of a real input keeping
``n//2 + 1`` outputs (adjoint: pad with zeros, ``ifft``, real part). ``irfft`` reads each interior
frequency twice (with its mirror image) and only the real part of the first and the Nyquist
one: its adjoint is ``rfft`` with the interior frequencies doubled.
"""

from deltaad._plainnumpy import np

from ..trace import value as strip
from . import registry
from .args import normalize_axis_index
from .array import shape_of
from .complex_array import FUNCTIONS, NOTES, capply, cprimitive

_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _check_norm(norm):
    if norm not in _SWAP:
        raise ValueError('Invalid norm value %r; should be "backward", "ortho" or "forward".'
                         % (norm,))


def _fit(g, axis, m):
    """``g`` cropped or zero-padded to length ``m`` along ``axis`` (the transpose of numpy's
    resizing of the input to ``n`` points)."""
    L = shape_of(g)[axis]
    if L == m:
        return g
    if L > m:
        return g[(slice(None),) * axis + (slice(0, m),)]
    widths = [(0, 0)] * len(shape_of(g))
    widths[axis] = (0, m - L)
    return np.pad(g, widths)


def _fft_vjp(out, vals, on, n, axis, norm):
    m = shape_of(vals[0])[axis]
    return lambda c: (_fit(np.fft.ifft(c, n, axis, _SWAP[norm]), axis, m),)


def _ifft_vjp(out, vals, on, n, axis, norm):
    m = shape_of(vals[0])[axis]
    return lambda c: (_fit(np.fft.fft(c, n, axis, _SWAP[norm]), axis, m),)


def _rfft_vjp(out, vals, on, n, axis, norm):
    m = shape_of(vals[0])[axis]
    # the adjoint of keeping n//2 + 1 outputs is padding them with zeros: ifft's n does that
    return lambda c: (_fit(np.real(np.fft.ifft(c, n, axis, _SWAP[norm])), axis, m),)


def _irfft_weights(n, axis, nd):
    """1 for the zero frequency (and the Nyquist one, n even), 2 for the others: how often
    irfft reads each of its n//2 + 1 inputs."""
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.reshape((-1,) + (1,) * (nd - axis - 1))


def _irfft_vjp(out, vals, on, n, axis, norm):
    m = shape_of(vals[0])[axis]
    w = _irfft_weights(n, axis, len(shape_of(vals[0])))
    return lambda g: (_fit(np.fft.rfft(g, n, axis, _SWAP[norm]) * w, axis, m),)


def _primitive(name, f, vjp, real_out=False):
    return cprimitive(name, lambda a, n, axis, norm: f(a, n, axis, norm), vjp,
                      lambda out, vals, tans, n, axis, norm: f(tans[0], n, axis, norm),
                      real_out=real_out)


FFT = _primitive("fft.fft", np.fft.fft, _fft_vjp)
IFFT = _primitive("fft.ifft", np.fft.ifft, _ifft_vjp)
RFFT = _primitive("fft.rfft", np.fft.rfft, _rfft_vjp)
IRFFT = _primitive("fft.irfft", np.fft.irfft, _irfft_vjp, real_out=True)


def _no_out(name, out):
    if out is not None:
        raise TypeError("numpy.fft.%s(..., out=...) would write duals into an array in place; "
                        "use the returned value" % name)


def _one(prim, a, n, axis, norm, default_n):
    _check_norm(norm)
    s = shape_of(a)
    axis = normalize_axis_index(axis, len(s))
    if n is None:
        n = default_n(s[axis])
    n = int(n)
    if n < 1:
        raise ValueError("Invalid number of FFT data points (%d) specified." % n)
    if prim is RFFT and np.iscomplexobj(strip(a)):
        raise TypeError("numpy.fft.rfft: the input must be real (got a complex array)")
    return capply(prim, (a,), {"n": n, "axis": axis, "norm": norm})


def _same(m):
    return m


def _halfplus(m):
    return 2 * (m - 1)


def register(*funcs):
    """``impl`` answers ``funcs`` on real and on complex duals."""

    def deco(impl):
        for f in funcs:
            registry.FUNCTIONS[f] = impl
            FUNCTIONS[f] = impl
        return impl

    return deco


@register(np.fft.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("fft", out)
    return _one(FFT, a, n, axis, norm, _same)


@register(np.fft.ifft)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("ifft", out)
    return _one(IFFT, a, n, axis, norm, _same)


@register(np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("rfft", out)
    return _one(RFFT, a, n, axis, norm, _same)


@register(np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("irfft", out)
    return _one(IRFFT, a, n, axis, norm, _halfplus)


@register(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("hfft", out)
    _check_norm(norm)
    if n is None:
        n = (shape_of(a)[axis] - 1) * 2
    return irfft(np.conjugate(a), n, axis, norm=_SWAP[norm])


@register(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out("ihfft", out)
    _check_norm(norm)
    if n is None:
        n = shape_of(a)[axis]
    return np.conjugate(rfft(a, n, axis, norm=_SWAP[norm]))


def _cook(a, s, axes, invreal=False):
    """numpy's reading of ``s`` and ``axes`` (the transform lengths and their axes)."""
    shape = shape_of(a)
    if s is None:
        shapeless = True
        s = list(shape) if axes is None else [shape[ax] for ax in axes]
    else:
        shapeless = False
    s = list(s)
    if axes is None:
        axes = list(range(-len(s), 0))
    axes = list(axes)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless:
        s[-1] = (shape[axes[-1]] - 1) * 2
    s = [shape[ax] if n == -1 or n is None else n for n, ax in zip(s, axes)]
    return s, axes


def _nd(function, a, s, axes, norm):
    s, axes = _cook(a, s, axes)
    for ii in reversed(range(len(axes))):
        a = function(a, n=s[ii], axis=axes[ii], norm=norm)
    return a


@register(np.fft.fftn)
def fftn(a, s=None, axes=None, norm=None, out=None):
    _no_out("fftn", out)
    return _nd(fft, a, s, axes, norm)


@register(np.fft.ifftn)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    _no_out("ifftn", out)
    return _nd(ifft, a, s, axes, norm)


@register(np.fft.fft2)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    _no_out("fft2", out)
    return _nd(fft, a, s, axes, norm)


@register(np.fft.ifft2)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    _no_out("ifft2", out)
    return _nd(ifft, a, s, axes, norm)


@register(np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    _no_out("rfftn", out)
    s, axes = _cook(a, s, axes)
    a = rfft(a, s[-1], axes[-1], norm)
    for ii in range(len(axes) - 2, -1, -1):
        a = fft(a, s[ii], axes[ii], norm)
    return a


@register(np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return rfftn(a, s, axes, norm, out)


@register(np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    _no_out("irfftn", out)
    s, axes = _cook(a, s, axes, invreal=True)
    for ii in range(len(axes) - 1):
        a = ifft(a, s[ii], axes[ii], norm)
    return irfft(a, s[-1], axes[-1], norm)


@register(np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    return irfftn(a, s, axes, norm, out)


def _shift(x, axes, sign):
    shape = shape_of(x)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift = [sign * (n // 2) for n in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = sign * (shape[axes] // 2)
    else:
        shift = [sign * (shape[ax] // 2) for ax in axes]
    return np.roll(x, shift, axes)


@register(np.fft.fftshift)
def fftshift(x, axes=None):
    return _shift(x, axes, 1)


@register(np.fft.ifftshift)
def ifftshift(x, axes=None):
    return _shift(x, axes, -1)


_NOTE = "linear: the derivative is a transform too, exact for every n/s, axis/axes and norm"
for _f in (np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.hfft, np.fft.ihfft,
           np.fft.fftn, np.fft.ifftn, np.fft.fft2, np.fft.ifft2, np.fft.rfftn, np.fft.irfftn,
           np.fft.rfft2, np.fft.irfft2):
    NOTES[_f] = registry.NOTES[_f] = _NOTE
