"""``scipy.fft`` on duals, and through it ``scipy.signal.fftconvolve`` and ``oaconvolve``.

scipy's transforms are uarray multimethods that hand their input to pocketfft as a float or
complex array. They are late rules here (:mod:`.scipy_late`): once the user imports
``scipy.fft``, each transform in its namespace is replaced by a version that, when the input
holds a dual, computes the transform with deltaad's ``numpy.fft`` rules (a transform is
linear: its derivative is a transform too, every order) and gives the result scipy's own value,
bit for bit. scipy's code that calls ``scipy.fft``'s transforms through the module
(``scipy.signal.fftconvolve`` and ``oaconvolve`` do: they convert their inputs with
``np.asarray``, the object arrays of scalar duals that deltaad packs back into array duals
here) then differentiates unchanged; ``fftconvolve`` and ``oaconvolve`` are also scipy-valued
rules themselves, so their values are scipy's whatever the arithmetic around the transforms
(``oaconvolve``'s derivative is ``fftconvolve``'s: its overlap-add writes into views in place).

Why not a uarray backend (``scipy.fft.set_backend``)? A global backend would replace the one
the user chose (pyFFTW, mkl_fft) for every call, and a registered one is tried only after
scipy's own, which raises on an object array rather than declining it; the late rules leave
plain calls -- and the user's backend -- exactly as they were. ``plan=`` (a backend's plan),
``dct``/``dst`` and the Hermitian n-d transforms (``hfftn``...; numpy has no rule to reuse) are
not supported on duals; ``workers=`` and ``overwrite_x=`` are accepted and ignored.
"""

import sys

from deltaad._plainnumpy import np

from .scipy_late import install, late, operand, refuse, refused

ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2")


def _transform(name, nd):
    full = "scipy.fft." + name

    def rule(original):
        def transform(ref, x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *,
                      plan=None):
            if plan is not None:
                refuse(full, "plan=", "deltaad computes the transform with numpy.fft's rules")
            return getattr(np.fft, name)(operand(x), n, axis, norm)

        def transform_nd(ref, x, s=None, axes=None, norm=None, overwrite_x=False,
                         workers=None, *, plan=None):
            if plan is not None:
                refuse(full, "plan=", "deltaad computes the transform with numpy.fft's rules")
            if axes is None and name.endswith("2"):
                axes = (-2, -1)
            return getattr(np.fft, name)(operand(x), s, axes, norm)

        return transform_nd if nd else transform

    return rule


def _shift(name):
    def rule(original):
        def shift(ref, x, axes=None):
            return getattr(np.fft, name)(operand(x), axes)

        return shift

    return rule


def _convolve(original):
    """scipy's own ``fftconvolve`` on the duals (its transforms are the rules above); for
    ``oaconvolve`` too, the same mathematics: scipy's overlap-add adds the blocks' overlaps in
    place into a view (``ret_part += overlap``), which on immutable duals would lose them."""

    def convolve(ref, in1, in2, mode="full", axes=None):
        fftconvolve = sys.modules["scipy.signal"].fftconvolve
        fftconvolve = getattr(fftconvolve, "deltaad_original", fftconvolve)
        return fftconvolve(operand(in1), operand(in2), mode, axes)

    return convolve


_LINEAR = "linear: the derivative is a transform too (numpy.fft's rules), every order"
for _name in ONE_D:
    late("scipy.fft." + _name, _transform(_name, False), _LINEAR)
for _name in N_D:
    late("scipy.fft." + _name, _transform(_name, True), _LINEAR)
for _name in ("fftshift", "ifftshift"):
    late("scipy.fft." + _name, _shift(_name), "a permutation")
for _name in ("fftconvolve", "oaconvolve"):
    late("scipy.signal." + _name, _convolve, "bilinear, through scipy.fft's rules: every order")
for _name in ("dct idct dst idst dctn idctn dstn idstn hfftn ihfftn hfft2 ihfft2".split()):
    refused("scipy.fft." + _name)
install("scipy.fft")
install("scipy.signal")
