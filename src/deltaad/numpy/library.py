"""numpy's library functions built on the other rules: polynomials (``vander``, ``polyfit``,
``poly``, ``polyder``, ``polyint``, ``polymul``, ``polyadd``, ``polysub``, ``roots``), spaces
(``geomspace``, ``logspace``), statistics (``cov``, ``corrcoef``, ``histogram``), ``i0``,
``linalg.tensorinv``/``tensorsolve``, ``unwrap`` and the ufuncs ``matvec``/``vecmat``.

Each rule repeats numpy's own sequence of operations with deltaad's rules (or, where numpy's
code stays in its object arithmetic, runs that code on the duals), and its result carries
numpy's value on the plain arguments, bit for bit (``numpy_value``).

Choices:

- ``histogram``: the counts are piecewise constant in the data (derivative 0 where it exists);
  with ``weights`` the result is the sum of the weights in each bin, linear in them, and
  differentiated in them (also with ``density``). The bin edges move with the data where numpy
  computes them from it (``bins`` a number, no ``range``: ``linspace(min, max)``, as JAX);
  given edges, a ``range`` or a string rule give constant edges;
- ``roots``: the eigenvalues of the companion matrix (numpy's algorithm), through ``eigvals``'
  complex rule: infinite derivatives at a repeated root;
- ``i0``: derivative ``I1(x)``, from the series numpy's Chebyshev code approximates (numpy has
  no ``i1``): ``I1(x) = (x/2) sum (x^2/4)^k / (k! (k+1)!)``, summed until it no longer changes;
- ``polyfit``: the least-squares formula at constant rank (``lstsq``'s rule), in ``y``, ``x``
  and ``w``; ``cov=True`` is not supported.
"""

from deltaad._plainmath import math

from deltaad._plainnumpy import np

from ..trace import is_dual
from ..trace import value as strip
from . import registry
from .args import as_array, np_fn
from .array import ArrayDual, Dual, apply, asarray, object_fallback
from .complex_array import FUNCTIONS as COMPLEX_FUNCTIONS
from .complex_array import NOTES as COMPLEX_NOTES
from .complex_array import ComplexDual, pack
from .complex_array import object_fallback as complex_object_fallback
from .complex_array import asarray as complex_asarray
from .define import _revalued
from .elementwise import elementwise_primitive


def _has_dual(x):
    if type(x) in (list, tuple):
        return any(_has_dual(e) for e in x)
    if isinstance(x, np.ndarray) and x.dtype.kind == "O":
        return any(_has_dual(e) for e in x.ravel().tolist())
    return is_dual(x)


def _plain(x):
    if type(x) in (list, tuple):
        return type(x)(_plain(e) for e in x)
    if isinstance(x, np.ndarray) and x.dtype.kind == "O":
        return np.array([_plain(e) for e in x.ravel().tolist()]).reshape(x.shape)
    return strip(x)


def _revalue(out, ref, func):
    """``out`` (real or complex duals, in tuples) with numpy's plain value ``ref`` under every
    level."""
    t = type(out)
    if t is ComplexDual:
        if not np.iscomplexobj(ref):  # (linspace's step of one sample: a real nan)
            return _revalued(out.real, ref, func)
        flavour = None if isinstance(ref, np.ndarray) else type(ref)
        return ComplexDual(_revalued(out.packed, pack(np.asarray(ref)), func), flavour)
    if t is tuple or t is list:
        return t(_revalue(o, r, func) for o, r in zip(out, ref))
    if t is not ArrayDual and t is not Dual:
        return ref  # no derivative here (linspace's nan step): numpy's value as it is
    return _revalued(out, ref, func)


def numpy_valued(func, impl):
    """``impl`` with ``func``'s own value on the plain arguments under every level (real and
    complex duals, in tuples)."""

    def rule(*args, **kwargs):
        out = impl(*args, **kwargs)
        ref = func(*[_plain(a) for a in args], **{k: _plain(v) for k, v in kwargs.items()})
        return _revalue(out, ref, func)

    rule.__name__ = getattr(impl, "__name__", "rule")
    return rule


def _library(func, note="", impl=None):
    """Register ``impl`` for ``func`` with numpy's value, for real and complex values; without
    ``impl``, numpy's own code on the real duals, whose arithmetic stays in numpy's object
    loops, and the complex family's fallback (the same code on scalar complex duals) for
    complex ones: numpy's value either way (its SIMD complex products are not Python's to the
    bit)."""
    if func is None:
        return
    if impl is None:
        registry.register(func, note=note)(numpy_valued(
            func, lambda *args, **kwargs: object_fallback(func, args, kwargs)))
        COMPLEX_FUNCTIONS[func] = numpy_valued(
            func, lambda *args, **kwargs: complex_object_fallback(func, args, kwargs))
        if note:
            COMPLEX_NOTES[func] = note
        return
    registry.register(func, note=note)(numpy_valued(func, impl))
    COMPLEX_FUNCTIONS[func] = numpy_valued(func, impl)
    if note:
        COMPLEX_NOTES[func] = note


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """``p`` plus numpy's corrections, whole multiples of ``period`` chosen from the values:
    piecewise constant, so the derivative is the identity (the jumps ignored)."""
    x = as_array(p)
    v = np.asarray(_plain(x))
    return x + (np.unwrap(v, discont, axis, period=period) - v)


# (real values only: numpy's unwrap takes no complex phases, and the complex family names it)
registry.register(np.unwrap, note="derivative 1 (the corrections are constants; their jumps "
                                  "ignored)")(numpy_valued(np.unwrap, unwrap))


# numpy's code runs on the object arrays of the scalar duals (products and sums)
for _f, _note in ((np.vander, ""), (np.polyder, ""), (np.polyint, "linear in p and k"),
                  (np.polymul, ""), (np.polyadd, ""), (np.polysub, "")):
    _library(_f, _note)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop)``, as numpy."""
    y = np.linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    if np.ndim(_plain(base)) > 0:
        base = np.expand_dims(base, axis)
    r = np.power(base, y)
    return r if dtype is None else np.astype(r, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """numpy's: ``sign * logspace(log10(|start|), log10(|stop|))`` (numpy then puts the
    endpoints in exactly: the same values, the same derivatives)."""
    s0, s1 = np.asarray(_plain(start)), np.asarray(_plain(stop))
    if np.any(s0 == 0) or np.any(s1 == 0):
        raise ValueError("Geometric sequence cannot include zero")
    if np.iscomplexobj(s0) or np.iscomplexobj(s1):
        raise NotImplementedError("deltaad: numpy.geomspace of complex values on dual numbers "
                                  "is not supported")
    sign = np.sign(s0)
    r = logspace(np.log10(start / sign), np.log10(stop / sign), num, endpoint, 10.0)
    r = sign * r
    if axis != 0:
        r = np.moveaxis(r, 0, axis)
    return r if dtype is None else np.astype(r, dtype)


# -- polyfit, poly, roots -----------------------------------------------------------------------


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """numpy's algorithm: least squares on the column-scaled Vandermonde matrix."""
    if cov:
        raise NotImplementedError("deltaad: numpy.polyfit(..., cov=True) on dual numbers is not "
                                  "supported (use full=False, cov=False)")
    order = int(deg) + 1
    xv = np.asarray(_plain(x)) + 0.0
    if rcond is None:
        rcond = len(xv) * np.finfo(xv.dtype).eps
    lhs = np.vander(x, order)
    rhs = y
    if w is not None:
        w = asarray(w) if type(w) in (list, tuple) else w
        lhs = lhs * w[:, np.newaxis]
        rhs = rhs * (w[:, np.newaxis] if len(np.shape(_plain(y))) == 2 else w)
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
    c = np.transpose(np.transpose(c) / scale)
    if full:
        return c, resids, rank, s, rcond
    return c


def poly(seq_of_zeros):
    """numpy's: the eigenvalues of a square matrix, then ``convolve`` by ``[1, -z]`` root by
    root; real where numpy's is."""
    sv = np.asarray(_plain(seq_of_zeros))
    sh = sv.shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        seq_of_zeros = np.linalg.eigvals(seq_of_zeros)
    elif len(sh) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    n = np.shape(_plain(seq_of_zeros))[0]
    if n == 0:
        return 1.0
    a = np.ones((1,))
    for k in range(n):
        z = seq_of_zeros[k]
        a = np.convolve(a, _vector([1.0, -z]), mode="full")
    ref = np.poly(sv)
    if not np.iscomplexobj(ref) and np.iscomplexobj(strip(a)):
        a = np.real(a)
    return a


def _vector(items):
    """A 1-d array (dual) of the scalars ``items`` (real or complex)."""
    if any(np.iscomplexobj(strip(e)) for e in items):
        return complex_asarray(list(items))
    return asarray(list(items))


def roots(p):
    """numpy's: the eigenvalues of the companion matrix of ``p`` (leading and trailing zeros
    stripped, as numpy does)."""
    pv = np.atleast_1d(np.asarray(_plain(p)))
    if pv.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    nz = np.nonzero(pv)[0]
    if len(nz) == 0:
        return np.array([])
    trailing = len(pv) - nz[-1] - 1
    p = asarray(p) if type(p) in (list, tuple) else p
    p = p[int(nz[0]):int(nz[-1]) + 1]
    n = len(pv[int(nz[0]):int(nz[-1]) + 1])
    if n > 1:
        first = -p[1:] / p[0]
        a = np.concatenate([first[np.newaxis, :], np.eye(n - 2, n - 1)], axis=0)
        r = np.linalg.eigvals(a)
    else:
        r = np.array([])
    if trailing:
        r = np.concatenate([r, np.zeros(trailing, np.asarray(strip(r)).dtype)])
    return r


# -- cov, corrcoef ----------------------------------------------------------------------------


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """numpy's algorithm, with deltaad's rules (weights may be duals too)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    x = np.atleast_2d(m) if len(np.shape(_plain(m))) < 2 else m
    if len(np.shape(_plain(x))) > 2:
        raise ValueError("m has more than 2 dimensions")
    if not rowvar and np.shape(_plain(x))[0] != 1:
        x = np.transpose(x)
    if y is not None:
        yy = np.atleast_2d(y)
        if not rowvar and np.shape(_plain(yy))[0] != 1:
            yy = np.transpose(yy)
        x = np.concatenate([x, yy], axis=0)
    if dtype is not None:
        x = np.astype(x, dtype)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    n = np.shape(_plain(x))[1]
    if w is None:
        avg, w_sum = np.mean(x, axis=1), n
    else:
        avg, w_sum = np.average(x, axis=1, weights=w, returned=True)
    if w is None:
        fact = n - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * np.sum(w * aweights) / w_sum
    x = x - avg[:, None]
    x_t = np.transpose(x) if w is None else np.transpose(x * w)
    c = np.dot(x, np.conj(x_t))
    c = c * (1.0 / fact)
    return np.squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if np.ndim(_plain(c)) == 0:
        return c / c
    d = np.diagonal(c)
    stddev = np.sqrt(np.real(d))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    if np.iscomplexobj(strip(c)):
        return c  # numpy clips the parts to [-1, 1]: the value is numpy's (see numpy_valued)
    return np.clip(c, -1, 1)


# -- histogram --------------------------------------------------------------------------------


def histogram(a, bins=10, range=None, density=None, weights=None):
    av = np.asarray(_plain(a))
    hist_plain, edges_plain = np.histogram(av, bins, range, density, _plain(weights))
    if weights is not None and _has_dual(weights):
        hist = object_fallback(np.histogram, (av, bins, range, density, weights), {})[0]
    else:
        hist = hist_plain
    edges = edges_plain
    if is_dual(a) and isinstance(bins, (int, np.integer)) and range is None and av.size:
        lo, hi = np.min(a), np.max(a)
        if strip(lo) == strip(hi):
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, int(bins) + 1)
        if density and weights is None:  # counts / (n * width): the widths move with a
            counts = np.histogram(av, bins)[0]
            hist = counts / (av.size * np.diff(edges))
    return hist, edges


def _i1(x):
    """I1 by its power series, on the plain values (the derivative of i0)."""
    x = np.asarray(x, dtype=float)
    q = x * x / 4
    term = x / 2
    total = term
    for k in range(1, 5000):  # (terms grow until k ~ |x|/2: enough to |x| ~ 700, where I1 overflows)
        term = term * q / (k * (k + 1))
        new = total + term
        if np.all(new == total):
            break
        total = new
    return total


# -- i0 -----------------------------------------------------------------------------------------


def _i1_any(x):
    if is_dual(x):
        return apply(_I1, (x,))
    return _i1(x)


def _i1_prime(x):
    """I1'(x) = I0(x) - I1(x)/x, 1/2 at 0."""
    zero = np.asarray(strip(x)) == 0
    return np.where(zero, 0.5, np.i0(x) - _i1_any(x) / np.where(zero, 1.0, x))


_I1 = elementwise_primitive("i1 (series)", _i1, (_i1_prime,))
_I0 = elementwise_primitive("i0", np.i0, (_i1_any,))


def i0(x):
    return apply(_I0, (as_array(x),))


for _f, _impl, _note in (
        (np.polyfit, polyfit, "least squares at constant rank; cov=True raises"),
        (np.poly, poly, "real where numpy's is"),
        (np.roots, roots, "companion-matrix eigenvalues: infinite derivatives at repeated roots"),
        (np.cov, cov, ""), (np.corrcoef, corrcoef, "clipped to [-1, 1] as numpy (the diagonal)"),
        (np.histogram, histogram, "counts constant in the data; weights differentiable; edges "
                                  "from min/max of the data when bins is a number"),
        (np.i0, i0, "derivative I1(x) (a power series)"),
        (np.geomspace, geomspace, "in start and stop"),
        (np.logspace, logspace, "in start, stop and base")):
    _library(_f, _note, _impl)


# -- linalg.tensorinv, tensorsolve; matvec, vecmat ----------------------------------------------


def tensorinv(a, ind=2):
    shape = np.shape(_plain(a))
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    invshape = shape[ind:] + shape[:ind]
    prod = math.prod(shape[ind:])
    ia = np.linalg.inv(np.reshape(a, (prod, -1)))
    return np.reshape(ia, invshape)


def tensorsolve(a, b, axes=None):
    an = len(np.shape(_plain(a)))
    if axes is not None:
        allaxes = list(range(0, an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = np.transpose(a, allaxes)
    bshape = np.shape(_plain(b))
    oldshape = np.shape(_plain(a))[-(an - len(bshape)):]
    prod = math.prod(oldshape)
    if math.prod(np.shape(_plain(a))) != prod ** 2:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    res = np.linalg.solve(np.reshape(a, (prod, prod)), np.ravel(b))
    return np.reshape(res, oldshape)


_library(np.linalg.tensorinv, "", tensorinv)
_library(np.linalg.tensorsolve, "", tensorsolve)


def _matvec(x1, x2):
    return np.matmul(x1, x2[..., None])[..., 0]


def _vecmat(x1, x2):
    return np.matmul(np.conj(x1)[..., None, :], x2)[..., 0, :]


for _name, _impl in (("matvec", _matvec), ("vecmat", _vecmat)):
    _uf = np_fn(_name)
    if _uf is not None:
        registry.register_ufunc(_uf, numpy_valued(_uf, _impl))


# --------------------------------------------------------------------------------------------
# numpy.putmask and numpy.place write into their first argument in place: an array dual is
# immutable and a float array cannot hold a derivative. Where the mask selects nothing (scipy
# guards rare corrections so) nothing is written and the call is a no-op; otherwise an error
# naming the function and the functional spelling.


def _in_place(name, fix):
    def impl(a, mask, values):
        m = np.asarray(strip(mask), dtype=bool)
        if not np.broadcast_to(m, np.shape(strip(a))).any() if m.ndim else not m:
            return None
        raise TypeError("numpy.%s(a, mask, values) writes into a in place, which would drop "
                        "the derivative of a dual (or change an immutable array dual); write "
                        "%s instead" % (name, fix))

    impl.__name__ = name
    return impl


registry.register(np.putmask, note="a no-op where the mask selects nothing; else an error")(
    _in_place("putmask", "a = np.where(mask, values, a)"))
registry.register(np.place, note="a no-op where the mask selects nothing; else an error")(
    _in_place("place", "a = deltaad.at(a)[mask].set(values)"))
