"""Arrays filled by assignment: ``y = np.zeros(n); y[i] = x * k`` while differentiating.

Simulation and residual code makes an array with numpy's constructor and fills it an entry or
a slice at a time (``dydt = np.zeros_like(y); dydt[0] = y[1]``). A numpy float array holds
plain numbers, so storing a dual in it would convert it to a float and drop its derivative.
While a differentiation is open, numpy's float constructors called from the user's code
(``zeros``, ``ones``, ``empty``, ``full`` and their ``_like`` forms) therefore give a
:class:`Fillable`: an object array of the same shape whose entries are Python floats until
duals are stored in it. Reading it back (``y[i]``), slicing, reshaping and in-place updates
(``y[i] += v``, ``np.add.at``, ``np.copyto``) behave as on the float array; every numpy
operation on it first packs it into an array dual (or a float array, when it holds no dual),
so the rules and their speed are the array dual's. Library code (numpy, scipy, deltaad
itself, anything installed) keeps numpy's float arrays: its work arrays go to compiled code.

The cost: each numpy operation on a fillable reads all its entries (a pass at Python speed
where it holds duals). Code that must stay fast builds its arrays functionally
(``y = y.at[i].set(v)``, ``np.stack``) as before.
"""

import dis
import os
import sys
import sysconfig

from deltaad._plainnumpy import np

from .. import trace as _trace
from .._backend import B
from .array import ArrayDual, asarray, object_array

Dual = B.Dual


def _to_object(v):
    """``v`` as what an object array stores for it: duals as they are, numbers as Python
    floats (what the float array would have held), array duals and lists as their entries."""
    t = type(v)
    if t is Dual or t is float:
        return v
    if t is ArrayDual:
        return object_array(v)
    if isinstance(v, Fillable):
        return v.view(np.ndarray)
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "O":
            return v
        if v.dtype.kind == "c":
            raise TypeError("deltaad: storing complex values in a real array drops their "
                            "imaginary parts: make the array complex (dtype=complex)")
        return v.astype(np.float64).astype(object)
    if t is list or t is tuple:
        return _to_object(asarray(v))
    if isinstance(v, complex) or type(v).__name__ == "ComplexDual":
        raise TypeError("deltaad: storing a complex value in a real array drops its imaginary "
                        "part: make the array complex (dtype=complex)")
    return float(v)  # numpy's conversion (and its error for None, strings, ...)


def _objects(v):
    """``v`` as an object array, so that numpy's own loops (``np.add.at``, ``np.put``) see no
    dual to dispatch on and store or combine the entries as they are."""
    o = _to_object(settle(v))
    if isinstance(o, np.ndarray):
        return o
    a = np.empty((), dtype=object)
    a[()] = o
    return a


def _root(x):
    """The fillable that owns ``x``'s entries (numpy makes the owner every view's base)."""
    b = x.base
    return b if isinstance(b, Fillable) else x


def settle(x):
    """A fillable as what numpy's rules take: an array dual when it holds a dual, else a float
    array. Anything else as it is. Where no dual was stored (the owner's hint), a C pass
    converts it (a dual in it raises: its float() would drop the derivative); else the Python
    pass that packs the duals, without the ~30 µs of that raise."""
    if not isinstance(x, Fillable):
        return x
    raw = x.view(np.ndarray)
    root = _root(x)
    if not root.__dict__.get("_may_hold_duals"):
        try:
            return raw.astype(np.float64)
        except TypeError:
            root._may_hold_duals = True
    return asarray(raw)


def _settle_all(x):
    if isinstance(x, Fillable):
        return settle(x)
    t = type(x)
    if (t is list or t is tuple) and any(isinstance(e, Fillable) or type(e) in (list, tuple)
                                         for e in x):
        return t(_settle_all(e) for e in x)
    return x


def _raw(a):
    """The object array of a fillable about to be written (its owner told that duals may be
    stored), or ``a`` itself."""
    if not isinstance(a, Fillable):
        return a
    _root(a)._may_hold_duals = True
    return a.view(np.ndarray)


def _copyto(dst, src, casting="same_kind", where=True):
    if not isinstance(dst, Fillable):
        return np.copyto(dst, settle(src), casting=casting, where=where)
    if where is True:
        dst[...] = src
        return None
    np.copyto(_raw(dst), _objects(src), casting="unsafe", where=where)
    return None


def _put(a, ind, v, mode="raise"):
    np.put(_raw(a), ind, _objects(v), mode=mode)


def _place(arr, mask, vals):
    np.place(_raw(arr), mask, _objects(vals))


def _putmask(a, mask, values):
    np.putmask(_raw(a), mask, _objects(values))


def _fill_diagonal(a, val, wrap=False):
    np.fill_diagonal(_raw(a), _objects(val), wrap)


def _put_along_axis(arr, indices, values, axis):
    np.put_along_axis(_raw(arr), indices, _objects(values), axis)


def _copy(a, order="K", subok=False):
    return a.copy(order) if isinstance(a, Fillable) else np.copy(a, order, subok)


# numpy functions that write into their first argument (run on the object array itself) and
# np.copy (a fillable's copy is one)
_OWN = {np.copyto: _copyto, np.put: _put, np.place: _place, np.putmask: _putmask,
             np.fill_diagonal: _fill_diagonal, np.put_along_axis: _put_along_axis,
             np.copy: _copy}


class Fillable(np.ndarray):
    """An array numpy's float constructor made in the user's code while differentiating: an
    object array whose entries are floats or duals, filled by assignment as the float array
    would be (see the module's docstring)."""

    def __setitem__(self, key, value):
        t = type(value)
        if not (t is float or t is int or isinstance(value, np.ndarray) and
                value.dtype.kind in "fiub"):
            _root(self)._may_hold_duals = True  # (a hint for settle)
        np.ndarray.__setitem__(self, key, _to_object(value))

    def fill(self, value):
        self[...] = value

    def put(self, ind, v, mode="raise"):
        _put(self, ind, v, mode)

    def astype(self, dtype, *args, **kwargs):
        if np.dtype(dtype).kind == "O":
            return np.ndarray.astype(self, dtype, *args, **kwargs)
        s = settle(self)
        return s.astype(dtype, *args, **kwargs) if type(s) is np.ndarray else s.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "at":  # in place on the first operand: numpy's object loop on the entries
            a, idx = inputs[0], inputs[1]
            rest = tuple(_objects(v) for v in inputs[2:])
            return getattr(ufunc, method)(_raw(a), idx, *rest, **kwargs)
        out = kwargs.pop("out", None)
        inputs = tuple(settle(x) for x in inputs)
        if out is not None and not any(isinstance(o, Fillable) for o in out):
            kwargs["out"] = tuple(settle(o) for o in out)
            out = None
        r = getattr(ufunc, method)(*inputs, **kwargs)
        if out is None:
            return r
        rs = r if type(r) is tuple else (r,)
        for o, ri in zip(out, rs):
            if o is not None:
                o[...] = ri
        return out[0] if len(out) == 1 else out

    def __array_function__(self, func, types, args, kwargs):
        impl = _OWN.get(func)
        if impl is not None:
            return impl(*args, **kwargs)
        return func(*_settle_all(args), **{k: _settle_all(v) for k, v in kwargs.items()})

    def __reduce__(self):
        return settle(self).__reduce__()


_trace.settled_types[Fillable] = settle  # as a differentiated function's input or tangent


def _numpy_method(func):
    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)  # to __array_function__: on the packed array

    method.__name__ = func.__name__
    method.__doc__ = "``numpy.%s`` of the array (packed first)." % func.__name__
    return method


# the methods whose numpy implementation is Python code expecting float results (mean's
# division by the count, std's): numpy's function instead, which packs the array first. View
# methods (reshape, swapaxes, T) stay ndarray's: a view of a fillable is one.
for _name in ("sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod", "dot",
              "clip", "argmax", "argmin", "argsort", "nonzero", "all", "any", "round", "ptp"):
    setattr(Fillable, _name, _numpy_method(getattr(np, _name)))
del _name


# -- numpy's constructors, while a differentiation is open --------------------------------------

_LIBRARY_ROOTS = tuple(sorted({os.path.realpath(p) + os.sep for p in (
    [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    + [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))])}))
_library_files = {}
_sites = {}


def _in_library(filename):
    """Whether code of ``filename`` is a library's (the standard library, an installed package,
    deltaad): its arrays stay numpy's."""
    lib = _library_files.get(filename)
    if lib is None:
        path = os.path.realpath(filename) if not filename.startswith("<") else filename
        lib = path.startswith(_LIBRARY_ROOTS) or "site-packages" + os.sep in path or \
            "dist-packages" + os.sep in path
        _library_files[filename] = lib
    return lib


def _callee(code, offset):
    """The name the call at ``offset`` of ``code`` calls (``zeros`` in ``np.zeros(n)``), from
    the instructions' source positions: the callee is the load starting where the call starts
    and ending last before it. None where positions are missing."""
    ins = list(dis.get_instructions(code))
    # the executing instruction: the last one at or before ``offset`` (which may point into
    # the call's inline cache)
    call = next((i for i in reversed(ins) if i.offset <= offset), None)
    if call is None or call.positions is None or call.positions.col_offset is None:
        return None
    p = call.positions
    best = None
    for i in ins:
        q = i.positions
        if i.offset >= call.offset or q is None or q.col_offset is None:
            continue
        if (q.lineno, q.col_offset) == (p.lineno, p.col_offset) and \
                i.opname.startswith("LOAD_") and (q.end_lineno, q.end_col_offset) < (
                    p.end_lineno, p.end_col_offset):
            if best is None or (q.end_lineno, q.end_col_offset) >= best[0]:
                best = ((q.end_lineno, q.end_col_offset), i.argval)
    return best[1] if best is not None else None


def _user_call(frame, name):
    """Whether ``frame`` (the nearest Python frame) called numpy's constructor ``name`` itself:
    its code is not a library's and the call it is executing is ``...name(...)``. Compiled
    code (numpy.random's Cython, say) calling ``np.empty`` leaves no frame of its own: the
    Python frame below it is executing another call, and its array stays numpy's (it writes
    floats into it)."""
    code = frame.f_code
    key = (code, frame.f_lasti)
    r = _sites.get(key)
    if r is None:
        r = _sites[key] = not _in_library(code.co_filename) and \
            _callee(code, frame.f_lasti) == name
    return r


def _holds_dual(v):
    t = type(v)
    if t is Dual or t is ArrayDual:
        return True
    if t is list or t is tuple:
        return any(_holds_dual(e) for e in v)
    return isinstance(v, Fillable)


def constructor(fn, wanted):
    """numpy's constructor ``fn`` giving a fillable where ``wanted()`` (a differentiation is
    open in this thread) and the user's code (the caller's frame is not a library's) asks
    for float64 entries; ``np.full``'s fill value may be a dual."""
    name = fn.__name__
    full = name in ("full", "full_like")

    def call(*args, **kwargs):
        fill = None
        given = args, kwargs
        if full:
            fill = kwargs["fill_value"] if "fill_value" in kwargs else \
                args[1] if len(args) > 1 else None
            if _holds_dual(fill) and wanted():  # made of zeros, then filled below
                args, kwargs = list(args), dict(kwargs)
                if "fill_value" in kwargs:
                    kwargs["fill_value"] = 0.0
                else:
                    args[1] = 0.0
            else:
                fill = None
        r = fn(*args, **kwargs)
        if type(r) is not np.ndarray or r.dtype != np.float64 or not wanted() or \
                not _user_call(sys._getframe(1), name):
            if fill is not None:  # (a library's call, or another dtype: numpy's own error)
                return fn(*given[0], **given[1])
            return r
        # every entry the same float: one object shared (~2 ns an entry, where converting each
        # float to its own object costs ~30); np.empty's entries are numpy's garbage, zeros here
        if name.startswith("empty") or r.size == 0:
            first = 0.0
        else:
            bits = r.view(np.int64)
            first = float(r.flat[0]) if (bits == bits.flat[0]).all() else None
        # the fillable owns its entries: every view's base is then this array (see _root)
        out = np.ndarray.__new__(Fillable, r.shape, dtype=object, order="F" if
                                 r.flags.f_contiguous and not r.flags.c_contiguous else "C")
        if first is None:  # np.full of an array of values
            np.copyto(out.view(np.ndarray), r, casting="unsafe")
        else:
            np.ndarray.fill(out, first)
        if fill is not None:
            out[...] = fill
        return out

    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn
    return call

