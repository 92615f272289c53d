"""scipy.signal's filters on duals: ``lfilter``, ``sosfilt`` (and through them scipy's own
``filtfilt``, ``sosfiltfilt``), ``savgol_filter``, ``detrend``, ``medfilt``, ``convolve2d``,
``correlate2d``.

scipy runs them in C on float64 (an object array gets "input type 'object' not supported").
They are late rules (:mod:`.scipy_late`): when an argument holds a dual, scipy's function runs
on the plain values (its checks, its errors, its value, bit for bit) and the same mathematics
runs on the duals for the derivative, to every order:

- ``lfilter``: the direct-form II transposed recurrence scipy uses, sample by sample on scalar
  duals (in the signal, the coefficients ``b``, ``a`` and the initial state ``zi``);
  ``sosfilt``: its cascade of second-order sections. scipy's ``filtfilt`` and ``sosfiltfilt``
  are Python over these and differentiate unchanged.
- ``savgol_filter`` and ``detrend``: linear in the signal, so their matrix (scipy's function of
  the identity, one call) times the signal; up to ``MAX_LINEAR`` samples along the axis.
- ``medfilt``: the median of each zero-padded window, a selection (the median's derivative).
- ``convolve2d``/``correlate2d`` with ``boundary='fill'``: sums of shifted copies, one per
  element of the smaller input.

The others that convert with ``np.asarray`` into C raise an error naming them.
"""

import sys

from deltaad._plainnumpy import np

from .. import trace
from ..trace import value as strip
from . import registry
from .array import asarray
from .scipy_late import install, late, operand, refuse, refused

MAX_LINEAR = 2048  # samples along the axis for the matrix of a linear filter (32 MB)


def _rows(x, axis):
    """``x`` with ``axis`` last, as a list of 1-d rows (lists of scalars) and the shape."""
    moved = np.moveaxis(x, axis, -1)
    shape = np.shape(moved)
    flat = np.reshape(moved, (-1, shape[-1])) if len(shape) > 1 else np.reshape(moved, (1, -1))
    return [list(row) for row in _tolist(flat)], shape


def _tolist(a):
    return a.tolist() if hasattr(a, "tolist") else list(a)


def _from_rows(rows, shape, axis):
    """The inverse of :func:`_rows`."""
    packed = asarray(rows) if any(trace.is_dual(v) for r in rows for v in r) else \
        np.asarray(rows, dtype=float)
    return np.moveaxis(np.reshape(packed, shape), -1, axis)


def _coefficients(v):
    return [e for e in _tolist(np.reshape(operand(v), (-1,)))]


def _recurrence(b, a, x, axis, zi):
    """``lfilter``'s direct-form II transposed recurrence on duals: ``(y, zf)``."""
    b, a = _coefficients(b), _coefficients(a)
    a0 = a[0]  # (scipy has refused a[0] == 0 on the plain values)
    b = [c / a0 for c in b]
    a = [c / a0 for c in a]
    k = max(len(a), len(b)) - 1
    b += [0.0] * (k + 1 - len(b))
    a += [0.0] * (k + 1 - len(a))
    rows, shape = _rows(x, axis)
    if zi is not None:  # x's shape with k along the axis (scipy has checked it)
        zrows = _rows(operand(zi), axis)[0]
    else:
        zrows = [[0.0] * k for _ in rows]
    out, final = [], []
    for row, z in zip(rows, zrows):
        z = list(z)
        ys = []
        for v in row:
            y = b[0] * v + z[0] if k else b[0] * v
            for i in range(k - 1):
                z[i] = b[i + 1] * v + z[i + 1] - a[i + 1] * y
            if k:
                z[k - 1] = b[k] * v - a[k] * y
            ys.append(y)
        out.append(ys)
        final.append(z)
    y = _from_rows(out, shape, axis)
    zf = _from_rows(final, shape[:-1] + (k,), axis) if k else None
    return y, zf


def _checked(name, out, ref):
    """``out`` (duals), after checking that its value is scipy's ``ref`` to rounding: the
    derivative comes from this computation and the value from scipy's, so a mismatch must
    raise rather than pair scipy's value with another function's derivative."""
    got = [np.asarray(strip(o), dtype=float) for o in (out if isinstance(out, tuple) else (out,))]
    want = [np.asarray(r, dtype=float) for r in (ref if isinstance(ref, tuple) else (ref,))]
    for g, w in zip(got, want):
        scale = np.max(np.abs(w), initial=1.0)
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-7, atol=1e-9 * scale,
                                                 equal_nan=True):
            raise NotImplementedError(
                "deltaad: scipy.signal.%s on dual numbers: deltaad's computation does not "
                "reproduce scipy's value for these arguments, so it gives no derivative; "
                "please report it" % name)
    return out


def _lfilter(original):
    def lfilter(ref, b, a, x, axis=-1, zi=None):
        if np.ndim(strip(operand(a))) != 1 or np.ndim(strip(operand(b))) != 1:
            refuse("scipy.signal.lfilter", "b or a not 1-d")
        y, zf = _recurrence(b, a, operand(x), axis, zi)
        return y if zi is None else (y, zf)

    return lfilter


def _sosfilt(original):
    def sosfilt(ref, sos, x, axis=-1, zi=None):
        sos = operand(sos)
        y = operand(x)
        finals = []
        for s in range(np.shape(strip(sos))[0]):
            z = None if zi is None else operand(zi)[s]
            y, zf = _recurrence(sos[s, :3], sos[s, 3:], y, axis, z)
            finals.append(zf)
        return y if zi is None else (y, np.stack([operand(f) for f in finals]))

    return sosfilt


def _linear(name):
    """A filter linear in its first argument: its matrix along ``axis`` (scipy's function of the
    identity) times the signal, plus scipy's response to zeros (``mode='constant'``'s cval)."""

    def rule(original):
        def impl(ref, x, *args, axis=-1, **kwargs):
            x = operand(x)
            n = np.shape(strip(x))[axis]
            if n > MAX_LINEAR:
                refuse("scipy.signal." + name, "%d samples along the axis" % n,
                       "deltaad differentiates it through its %d x %d matrix; at most %d"
                       % (n, n, MAX_LINEAR))
            matrix = original(np.eye(n), *args, axis=0, **kwargs)
            offset = original(np.zeros(n), *args, axis=0, **kwargs)
            moved = np.moveaxis(x, axis, 0)
            y = np.tensordot(matrix - offset[:, None], moved, axes=1)
            extra = (slice(None),) + (None,) * (np.ndim(strip(moved)) - 1)
            return np.moveaxis(y + offset[extra], 0, axis)

        return impl

    return rule


def _savgol(original):
    linear = _linear("savgol_filter")(original)

    def savgol_filter(ref, x, window_length, polyorder, deriv=0, delta=1.0, axis=-1,
                      mode="interp", cval=0.0):
        if trace.is_dual(delta) or registry.holds_dual([window_length, polyorder, cval]):
            refuse("scipy.signal.savgol_filter", "a dual delta, cval or window",
                   "only the signal is differentiated")
        return linear(ref, x, window_length, polyorder, deriv=deriv, delta=delta, axis=axis,
                      mode=mode, cval=cval)

    return savgol_filter


def _detrend(original):
    linear = _linear("detrend")(original)

    def detrend(ref, data, axis=-1, type="linear", bp=0, overwrite_data=False):
        return linear(ref, data, axis=axis, type=type, bp=bp)

    return detrend


def _medfilt(original):
    def medfilt(ref, volume, kernel_size=None):
        x = operand(volume)
        shape = np.shape(strip(x))
        ks = np.broadcast_to(3 if kernel_size is None else np.asarray(kernel_size),
                             (len(shape),)).astype(int)
        padded = np.pad(x, [(k // 2, k // 2) for k in ks])
        index = np.arange(int(np.prod(np.shape(strip(padded))))).reshape(np.shape(strip(padded)))
        windows = np.lib.stride_tricks.sliding_window_view(index, tuple(ks))
        gathered = np.reshape(padded, (-1,))[windows.reshape(shape + (-1,))]
        return np.median(gathered, axis=-1)

    return medfilt


def _shifted_sum(big, small, flip):
    """The full 2-d convolution (``flip``) or correlation of ``big`` with ``small``: one
    shifted, scaled copy of ``big`` per element of ``small``."""
    (m1, n1), (m2, n2) = np.shape(strip(big)), np.shape(strip(small))
    total = None
    for p in range(m2):
        for q in range(n2):
            i, j = (p, q) if flip else (m2 - 1 - p, n2 - 1 - q)
            term = np.pad(small[p, q] * big, [(i, m2 - 1 - i), (j, n2 - 1 - j)])
            total = term if total is None else total + term
    return total


def _two_d(name, flip):
    def rule(original):
        def impl(ref, in1, in2, mode="full", boundary="fill", fillvalue=0):
            if boundary != "fill" or fillvalue != 0 or trace.is_dual(fillvalue):
                refuse("scipy.signal." + name, "boundary=%r, fillvalue=%r" % (boundary,
                       strip(fillvalue)), "deltaad differentiates boundary='fill' with 0")
            a, b = operand(in1), operand(in2)
            sa, sb = np.shape(strip(a)), np.shape(strip(b))
            if not flip:  # correlation: in1 against in2 (the sum is over in2's elements)
                full = _shifted_sum(a, b, False)
            elif np.prod(sb) <= np.prod(sa):
                full = _shifted_sum(a, b, True)
            else:
                full = _shifted_sum(b, a, True)
            if mode == "full":
                return full
            if mode == "valid":
                big, small = (sa, sb) if sa[0] >= sb[0] else (sb, sa)
                out = (big[0] - small[0] + 1, big[1] - small[1] + 1)
                start = (small[0] - 1, small[1] - 1)
            else:  # same: in1's shape, centred as scipy centres it
                out = sa
                start = tuple((s - 1) // 2 if flip else s - 1 - (s - 1) // 2 for s in sb)
            return full[start[0]:start[0] + out[0], start[1]:start[1] + out[1]]

        return impl

    return rule


RULES = {
    "lfilter": (_lfilter, "the direct-form II transposed recurrence on the duals: signal, "
                          "coefficients and initial state, every order"),
    "sosfilt": (_sosfilt, "the cascade of lfilter's recurrence"),
    "savgol_filter": (_savgol, "linear: its matrix times the signal"),
    "detrend": (_detrend, "linear: its matrix times the signal"),
    "medfilt": (_medfilt, "the median of each window: a selection"),
    "convolve2d": (_two_d("convolve2d", True), "boundary='fill' with 0: shifted sums"),
    "correlate2d": (_two_d("correlate2d", False), "boundary='fill' with 0: shifted sums"),
}
REFUSED = """hilbert hilbert2 resample resample_poly welch periodogram csd coherence spectrogram
stft istft find_peaks argrelmax argrelmin argrelextrema decimate upfirdn sepfir2d cspline1d
qspline1d wiener order_filter medfilt2d lfiltic""".split()

def _verified(name, rule):
    def factory(original):
        impl = rule(original)

        def verified(ref, *args, **kwargs):
            return _checked(name, impl(ref, *args, **kwargs), ref)

        return verified

    return factory


for _name, (_impl, _note) in RULES.items():
    late("scipy.signal." + _name, _verified(_name, _impl), _note)
for _name in REFUSED:
    refused("scipy.signal." + _name)
install("scipy.signal")


def _alias(module):
    """scipy's own ``filtfilt``/``sosfiltfilt`` call ``lfilter``/``sosfilt`` from their
    module: give that module the dispatching versions too."""
    tools = sys.modules.get("scipy.signal._signaltools")
    if tools is None:
        return
    for name in ("lfilter", "sosfilt"):
        f = getattr(module, name, None)
        if f is not None and hasattr(f, "deltaad_original"):
            setattr(tools, name, f)


registry.watch("scipy.signal", _alias)
