"""Recorded arrays: how ``deltaad.compile`` records numpy work and replays it by calling numpy.

A :class:`RecordedArray` stands in for a float ndarray input of a compiled function (and for
every array or numpy scalar computed from one). It holds the real value of this call; every
numpy call on it -- a ufunc or a numpy function through numpy's override protocols
(``__array_ufunc__``, ``__array_function__``), an operator, indexing, an ndarray method --
computes on the real values as numpy would and appends one *step* to the
:class:`ArrayRecording`: the numpy callable, its arguments with slot references in place of
the recorded operands (arrays, and the scalar recording's numbers), the constants, and the
type/shape/dtype of what it gave. The transformations inside the function run on top, their
derivative rules being numpy calls on the same values: they are recorded alike.

A replay calls the same numpy functions in the same order on the new values (same bits), the
scalar instructions of the same call interleaved where they were recorded (in Python: the
compiled replayer takes floats only). With the compiled core the steps run in a C loop
(``deltaad._array_replay``), elementwise ufunc steps on plain float64 arrays by numpy's own
float64 loops; the Python loop of :meth:`ArrayProgram.run` is its twin and runs the steps the
C loop hands back. Where a value leaves the recorded world as a Python
value -- ``bool`` of an array comparison, ``float()``, ``int()``, ``.item()``, an index, a
result that is no array -- the outcome is a *guard*; a step whose result has another type,
shape or dtype fails too, and the caller records afresh. What cannot be replayed soundly --
``np.asarray`` of a recorded array (a plain copy the recording would lose), in-place writes
(``a[i] = v``, ``out=``, ``ufunc.at``, ``+=``), a numpy call that a recorded float reaches
first -- makes the recording fail with the reason (``Unrecordable``): ``compile`` then runs
the function uncompiled, with one warning.
"""

from deltaad._plainmath import math
import operator
import os as _os
import struct
import threading

from deltaad._plainnumpy import np

from . import _replay_pure as _P
from . import trace as _trace
from ._backend import name as _backend_name
from .pytrees import tree_unflatten
from .trace import is_dual, register_recorded_array_type

_BITS = struct.Struct("<d")

try:  # numpy's error-handling state: a context variable whose value changes with np.errstate
    from numpy._core._multiarray_umath import _extobj_contextvar as _ERR
except ImportError:  # (another numpy: ask np.geterr each time)
    _ERR = None


def _err_token():
    return _ERR.get() if _ERR is not None else None
_new = object.__new__

# The steps' loop in C with the compiled core (deltaad._array_replay, built with it); the pure
# backend replays in Python (same numpy calls, same bits).
_creplay = None
if _backend_name == "c":
    try:
        from . import _array_replay as _creplay
    except ImportError:
        if _os.environ.get("DELTAAD_BACKEND", "").strip().lower() in ("c", "core"):
            raise

# How ``compile`` runs an input structure with arrays once it is recorded. Replaying numpy
# steps costs numpy's calls without the function's Python, but the uncompiled call of a program
# of few large numpy calls costs about as much, and on some platform or numpy a replay could be
# slower: "race" times the first RACE_CALLS replays against as many uncompiled calls
# (alternating) and keeps the faster by least time; "replay" always replays; "uncompiled" runs
# the function uncompiled after its recording call. Tests and benchmarks set these (or the
# environment variable DELTAAD_COMPILE_ARRAYS, read at import).
CHOOSE = _os.environ.get("DELTAAD_COMPILE_ARRAYS", "").strip().lower() or "race"
if CHOOSE not in ("race", "replay", "uncompiled"):
    raise ValueError("DELTAAD_COMPILE_ARRAYS must be race, replay or uncompiled, not %r"
                     % CHOOSE)
RACE_CALLS = 5

# Elementwise ufuncs whose recorded calls on C-contiguous float64 arrays of one shape (and Python
# scalars) the C replayer runs by numpy's own float64 loop: the array duals' fast path's set,
# whose loops are checked against the ufuncs bit for bit.
_LOOP_UFUNCS = frozenset((np.add, np.subtract, np.multiply, np.true_divide, np.power,
                          np.negative, np.sin, np.cos, np.tan, np.tanh, np.exp, np.log, np.sqrt,
                          np.square, np.absolute, np.arctan, np.sinh, np.cosh, np.expm1,
                          np.log1p, np.reciprocal, np.sign))
_F8 = np.dtype(np.float64)


def _loop_operands(fn, templates, values, r):
    """The operands of a call of ufunc ``fn`` that the C replayer may run by numpy's float64
    loop -- per operand ``True`` (an array, read from its slot) or the float a constant
    scalar is -- or None: a float64 array result, every operand an ndarray of its shape
    (recorded or constant) or a constant Python float (or an int exact as a float: numpy's
    weak scalars become float64). (Each replay checks again that the arrays are C-contiguous
    native float64 ones -- numpy's result is then C-contiguous too -- else calls ``fn``.)"""
    shape = r.shape
    if not shape or r.dtype != _F8 or len(values) != fn.nin or 0 in shape:
        return None
    ops = []
    for t, v in zip(templates, values):
        tv = type(v)
        if tv is np.ndarray:
            if type(t) is _S or type(t) is _N or v.shape != shape:
                return None
            ops.append(True)
        elif type(t) is _A or type(t) is _S or type(t) is _N:
            return None  # (a recorded float, lifted or not: its value changes per call)
        elif tv is float:
            ops.append(v)
        elif tv is int and -2 ** 53 <= v <= 2 ** 53:
            ops.append(float(v))
        else:
            return None
    return tuple(ops)


class _A:
    """An argument that is array slot ``i`` (a recorded array of the same recording)."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _S:
    """An argument that is slot ``i`` of the scalar recording (a recorded float)."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _N:
    """A list, tuple, dict or slice argument holding recorded operands: rebuilt per replay."""
    __slots__ = ("kind", "items")

    def __init__(self, kind, items):
        self.kind = kind
        self.items = items


def _fill(t, vals, svals):
    tt = type(t)
    if tt is _A:
        return vals[t.i]
    if tt is _S:
        return svals[t.i]
    if tt is _N:
        k = t.kind
        if k is dict:
            return {key: _fill(e, vals, svals) for key, e in t.items}
        items = [_fill(e, vals, svals) for e in t.items]
        if k is list:
            return items
        if k is slice:
            return slice(*items)
        return k(items) if k is tuple else k(*items)
    return t


def _same_value(a, b):
    """A guard's outcome: same type, and the same value (floats bit for bit)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return _BITS.pack(a) == _BITS.pack(b)
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - no comparable outcome: never the same
        return False


def _info(r):
    """What a step's result must look like on replay for the recording to hold."""
    if type(r) is np.ndarray:
        return (np.ndarray, r.shape, r.dtype)
    return (type(r),)


_IN_PLACE_METHODS = frozenset(("fill", "sort", "partition", "resize", "put", "itemset",
                               "setfield", "setflags", "byteswap", "dump", "tofile"))
_ATTRS = frozenset(("T", "mT", "real", "imag"))  # data attributes: recorded steps
# what numpy decides from shapes, dtypes and layouts alone (the key holds the inputs' layouts)
_INFO_ATTRS = frozenset(("shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides",
                         "flags"))
_METHODS = {}


def _method(name):
    """``obj.name(*args, **kwargs)`` as a function (a step's callable for ndarray methods)."""
    f = _METHODS.get(name)
    if f is None:
        def f(obj, *args, **kwargs):
            return getattr(obj, name)(*args, **kwargs)
        f.__name__ = "ndarray.%s" % name
        f = _METHODS.setdefault(name, f)
    return f


def _attr(name):
    f = _METHODS.get("." + name)
    if f is None:
        f = _METHODS.setdefault("." + name, operator.attrgetter(name))
    return f


def _errstate(fn, err):
    """``fn`` called under numpy's error handling ``err``."""
    def f(*args, **kwargs):
        with np.errstate(**err):
            return fn(*args, **kwargs)
    f.__name__ = getattr(fn, "__name__", "step")
    return f


def _impl(fn):
    """numpy's implementation behind an ``__array_function__`` dispatcher: what a call with
    plain arrays runs anyway (the replay skips the dispatch)."""
    return getattr(fn, "_implementation", fn)


# a step: (pos, fn, args, kwargs, out, info)
#   pos: the scalar recording's length when the step was recorded (replay order)
#   out: the array slot it fills (-1: none); info: what its result must look like (None: a
#   guard, whose expected outcome is ``info``... see GUARD)
STEP, GUARD, LINK, LIFT = 0, 1, 2, 3


class ArrayRecording:
    """The array steps of one recording, beside its scalar :class:`Recording`."""

    __slots__ = ("rec", "steps", "nslots", "inputs", "links", "_rtype", "consts", "err0",
                 "_tok0", "loops")

    def __init__(self, rec, recorder_type):
        self.rec = rec          # the scalar recording (its ``closed``/``failed`` are the call's)
        self.steps = []         # (kind, pos, fn, args, kwargs, out, info)
        self.nslots = 0
        self.inputs = []        # (leaf position, slot)
        self.links = 0          # scalar inputs fed from arrays
        self._rtype = recorder_type
        self.consts = []        # (constant array, its bytes when first used)
        self.err0 = np.geterr()  # numpy's floating-point error handling: part of the key
        self._tok0 = _err_token()
        self.loops = {}         # step index -> its operands for numpy's loop (_loop_operands)
        with _OPEN_LOCK:
            _BY_REC[id(rec)] = self
            _trace.lifting = True

    def close(self):
        """The call ended (the scalar recording is closed too)."""
        with _OPEN_LOCK:
            if _BY_REC.pop(id(self.rec), None) is not None:
                _trace.lifting = bool(_BY_REC)

    # -- recording --
    def _pos(self):
        rec = self.rec
        return len(rec) if type(rec) is not _P.Recording else len(rec.code)

    def fail(self, why):
        self.rec.fail(why)

    def _wrap(self, v):
        r = _new(RecordedArray)
        r._rec = self
        r.slot = self.nslots
        r.ref = _A(r.slot)
        r.v = v
        self.nslots += 1
        return r

    def input(self, v, pos):
        r = self._wrap(v)
        self.inputs.append((pos, r.slot))
        return r

    def _template(self, x):
        """``(template, value)`` of argument ``x``."""
        tx = type(x)
        if tx is RecordedArray:
            if x._rec is not self:
                raise _P._escaped()
            return _A(x.slot), x.v
        if tx is self._rtype:
            if x._rec is not self.rec:
                raise _P._escaped()
            return _S(x.slot), x.v
        if tx is tuple or tx is list or (isinstance(x, tuple) and hasattr(x, "_fields")):
            ts = []
            vs = []
            nested = False
            for e in x:
                t, v = self._template(e)
                nested = nested or type(t) is _A or type(t) is _S or type(t) is _N
                ts.append(t)
                vs.append(v)
            if not nested:
                return x, x
            if tx is tuple or tx is list:
                return _N(tx, ts), tx(vs)
            return _N(tx, ts), tx(*vs)
        if tx is dict:
            ts = []
            vs = {}
            nested = False
            for k, e in x.items():
                t, v = self._template(e)
                nested = nested or type(t) in (_A, _S, _N)
                ts.append((k, t))
                vs[k] = v
            return (_N(dict, ts), vs) if nested else (x, x)
        if tx is slice:
            t, v = self._template((x.start, x.stop, x.step))
            return (_N(slice, t.items), slice(*v)) if type(t) is _N else (x, x)
        if isinstance(x, np.ndarray):
            if x.dtype.kind == "O":
                self.fail("an object array met a recorded array")
            # a constant, by reference: a copy could have another memory layout, and numpy's
            # (BLAS's) results can depend on it. A write to it before the call ends is caught
            # at the end (``finish``); one between calls fails the replay (a derivative rule may
            # have folded the constant into an unrecorded array: see ArrayProgram.run).
            self.consts.append((x, x.copy(order="K")))
            return x, x
        if is_dual(x):
            self.fail("a dual met a recorded array inside a numpy call")
        return x, x

    def call(self, fn, args, kwargs, name=None, replay_fn=None):
        """Record ``fn(*args, **kwargs)`` and return its result (recorded arrays for arrays)."""
        if self.rec.closed:
            raise _P._escaped()
        ta = []
        va = []
        for x in args:  # (the commonest arguments inline; containers by _template)
            tx = type(x)
            if tx is RecordedArray and x._rec is self:
                ta.append(x.ref)
                va.append(x.v)
            elif tx is float or tx is int or tx is bool or x is None or tx is str:
                ta.append(x)
                va.append(x)
            else:
                t, v = self._template(x)
                ta.append(t)
                va.append(v)
        ta = tuple(ta)
        tk, vk = self._template(kwargs) if kwargs else ({}, {})
        r = fn(*va, **vk)
        if _ERR is None or _ERR.get() is not self._tok0:
            err = np.geterr()
            if err != self.err0:  # inside np.errstate (a rule's): the replay sets it alike
                replay_fn = _errstate(replay_fn or fn, err)
        if type(tk) is _N:
            tk = _N(dict, tk.items)
        out = self._result(replay_fn or fn, ta, tk, r, name or getattr(fn, "__name__", fn))
        if replay_fn is None and not kwargs and type(fn) is np.ufunc and type(r) is np.ndarray \
                and fn in _LOOP_UFUNCS:
            ops = _loop_operands(fn, ta, va, r)
            if ops is not None:
                self.loops[len(self.steps) - 1] = ops
        return out

    def _result(self, fn, ta, tk, r, name):
        tr = type(r)
        if tr is np.ndarray or isinstance(r, np.generic):
            if tr is np.ndarray and r.dtype.kind == "O":
                self.fail("numpy's %s gave an object array" % name)
            out = self._wrap(r)
            self.steps.append((STEP, self._pos(), fn, ta, tk, out.slot, _info(r)))
            return out
        if r is NotImplemented:
            return r
        if (tr is tuple or tr is list or isinstance(r, tuple)) and all(
                type(e) is np.ndarray or isinstance(e, np.generic) for e in r) and r:
            whole = self.nslots
            self.nslots += 1
            self.steps.append((STEP, self._pos(), fn, ta, tk, whole, (tr, len(r))))
            parts = []
            for k, e in enumerate(r):
                out = self._wrap(e)
                self.steps.append((STEP, self._pos(), operator.getitem, (_A(whole), k), {},
                                   out.slot, _info(e)))
                parts.append(out)
            if tr is tuple or tr is list:
                return tr(parts)
            return tr(*parts)
        if tr is float or tr is int or tr is bool or r is None or tr is str or tr is tuple \
                or tr is np.dtype:
            # a Python value out of recorded data: the outcome is a guard
            self.steps.append((GUARD, self._pos(), fn, ta, tk, -1, r))
            return r
        self.fail("numpy's %s gave a %s" % (name, tr.__name__))

    def guard(self, fn, x, *args):
        """``fn(x.v, *args)``: a Python value made from recorded array ``x``, guarded."""
        if self.rec.closed:
            raise _P._escaped()
        r = fn(x.v, *args)
        if _ERR is None or _ERR.get() is not self._tok0:
            err = np.geterr()
            if err != self.err0:
                fn = _errstate(fn, err)
        self.steps.append((GUARD, self._pos(), fn, (_A(x.slot),) + args, {}, -1, r))
        return r

    def lift(self, x):
        """A recorded array holding recorded float ``x`` (the Python float itself)."""
        if x._rec is not self.rec:
            raise _P._escaped()
        out = self._wrap(x.v)
        self.steps.append((LIFT, self._pos(), None, (_S(x.slot),), {}, out.slot, None))
        return out

    def to_recorder(self, x):
        """A recorded float (of the scalar recording) with the value of size-1 array ``x``:
        the array's value stays recorded where the array mechanism makes a Python float."""
        if self.rec.closed:
            raise _P._escaped()
        fv = float(x.v)
        self.steps.append((LINK, self._pos(), float, (_A(x.slot),), {}, -1, None))
        self.links += 1
        return self.rec.input(fv)

    # -- finishing --
    def program(self, outs, scalar_code, scalar_funcs, nfloat):
        return ArrayProgram(self, outs, scalar_code, scalar_funcs, nfloat)


_BY_REC = {}  # id(scalar recording) -> its ArrayRecording, while the call runs
_OPEN_LOCK = threading.Lock()  # (``trace.lifting``: while any recording with arrays is open)


def _recorded_call(x, f, args):
    """``f(*args)`` as one step of the recording of ``x`` (a recorded array or float): for
    the array mechanism's helpers that write into arrays of their own (same bits on replay,
    which calls ``f`` again)."""
    if type(x) is RecordedArray:
        arec = x._rec
    else:
        arec = _BY_REC.get(id(x._rec))
        if arec is None or arec.rec is not x._rec:
            x._rec.fail("a recorded float met numpy outside a recording with arrays")
    return arec.call(f, args, None)


def _recorded_lift(x):
    """Recorded float ``x`` as a recorded array holding it (where it meets arrays)."""
    arec = _BY_REC.get(id(x._rec))
    if arec is None or arec.rec is not x._rec:
        x._rec.fail("a recorded float met numpy outside a recording with arrays")
    return arec.lift(x)


_trace.recorded_call = _recorded_call
_trace.recorded_lift = _recorded_lift


class RecordedArray:
    """An ndarray (or numpy scalar) being recorded: its slot and its value in this call. It
    behaves as its value does under numpy; every computation on it is recorded."""

    __slots__ = ("_rec", "slot", "v", "ref", "__weakref__")
    __hash__ = None

    # -- numpy protocols --
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        rec = self._rec
        for x in inputs:
            if is_dual(x):
                return NotImplemented  # duals are above recorded values: theirs to handle
        if kwargs.get("out") is not None:
            rec.fail("numpy.%s(..., out=...) writes into an array in place" % ufunc.__name__)
        if method == "at":
            rec.fail("numpy.%s.at writes into an array in place" % ufunc.__name__)
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        return rec.call(fn, inputs, kwargs, name="%s.%s" % (ufunc.__name__, method)
                        if method != "__call__" else ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        for t in types:
            if t is not RecordedArray and t is not np.ndarray and not issubclass(t, np.ndarray):
                if t is not self._rec._rtype:
                    return NotImplemented  # a dual (or another array type) among the arguments
        if "out" in kwargs and kwargs["out"] is not None:
            self._rec.fail("numpy.%s(..., out=...) writes into an array in place" % func.__name__)
        return self._rec.call(func, args, kwargs, replay_fn=_impl(func))

    def lift(self, x):
        """Recorded float ``x`` (of the same call) as a recorded array holding it."""
        return self._rec.lift(x)

    def as_ndarray(self, dtype=None):
        """``np.asarray(self, dtype)``, recorded (for the array mechanism)."""
        if dtype is None:
            if type(self.v) is np.ndarray:
                return self
            return self._rec.call(np.asarray, (self,), None)
        return self._rec.call(np.asarray, (self,), {"dtype": dtype})

    def __array__(self, dtype=None, copy=None):
        self._rec.fail("a recorded array was converted to a plain ndarray (np.asarray, "
                       "np.array or code outside numpy's override protocols)")

    # -- data-free attributes --
    @property
    def __class__(self):
        """The value's class, so that ``isinstance(x, np.ndarray)`` (``np.floating`` for a
        numpy scalar) holds as for the value: code that tests for arrays treats a recorded one
        as the array it stands for. numpy itself looks at the real type: the data it reads
        goes through the override protocols above."""
        return type(object.__getattribute__(self, "v"))

    @property
    def shape(self):
        return np.shape(self.v)

    @property
    def ndim(self):
        return np.ndim(self.v)

    @property
    def size(self):
        return np.size(self.v)

    @property
    def dtype(self):
        return self.v.dtype

    def __len__(self):
        return len(self.v)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        v = object.__getattribute__(self, "v")
        if name in _INFO_ATTRS:
            return getattr(v, name)
        if name in _ATTRS:
            return self._rec.call(_attr(name), (self,), None, name="." + name)
        if name in _IN_PLACE_METHODS:
            self._rec.fail("ndarray.%s writes into a recorded array in place" % name)
        a = getattr(v, name)  # AttributeError as the value's
        if not callable(a):
            self._rec.fail("the attribute %s of a recorded array" % name)
        m = _method(name)
        rec = self._rec
        me = self

        def bound(*args, **kwargs):
            if name in ("item", "tolist", "tobytes", "__index__"):
                return rec.guard(lambda v, *a, **k: m(v, *a, **k), me, *args)
            return rec.call(m, (me,) + args, kwargs, name="ndarray." + name)
        return bound

    # -- indexing --
    def __getitem__(self, idx):
        return self._rec.call(operator.getitem, (self, idx), None, name="[]")

    def __setitem__(self, idx, v):
        self._rec.fail("a[...] = ... writes into a recorded array in place")

    def __iter__(self):
        for i in range(len(self.v)):
            yield self[i]

    # -- Python values out of recorded data: guards --
    def __bool__(self):
        return self._rec.guard(bool, self)

    def __float__(self):
        return self._rec.guard(float, self)

    def __int__(self):
        return self._rec.guard(int, self)

    def __index__(self):
        return self._rec.guard(operator.index, self)

    def __complex__(self):
        return self._rec.guard(complex, self)

    def __contains__(self, x):
        return self._rec.call(operator.contains, (self, x), None, name="in")

    def __repr__(self):
        return self._rec.guard(repr, self)

    def __str__(self):
        return self._rec.guard(str, self)

    def __format__(self, spec):
        return self._rec.guard(format, self, spec)

    def __reduce__(self):
        self._rec.fail("a recorded array was pickled")

    def __copy__(self):
        return self._rec.call(_method("copy"), (self,), None, name="copy")

    def __deepcopy__(self, memo):
        return self.__copy__()

    # -- in place: a write the recording cannot keep apart from aliases --
    def _inplace(self, other):
        self._rec.fail("an in-place operator (+=, *=, ...) on a recorded array")

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __ifloordiv__ = __imod__ = __ipow__ = \
        __imatmul__ = __iand__ = __ior__ = __ixor__ = __ilshift__ = __irshift__ = _inplace


def _binary(ufunc):
    # as ndarray's operators: through the ufunc, where a dual operand takes over (numpy asks
    # its __array_ufunc__ once ours declines)
    def f(self, other):
        if is_dual(other):
            return ufunc(self, other)
        return self._rec.call(ufunc, (self, other), None, name=ufunc.__name__)

    def r(self, other):
        if is_dual(other):
            return ufunc(other, self)
        return self._rec.call(ufunc, (other, self), None, name=ufunc.__name__)
    return f, r


def _unary(ufunc):
    def f(self):
        return self._rec.call(ufunc, (self,), None, name=ufunc.__name__)
    return f


for _n, _u in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
               ("truediv", np.true_divide), ("floordiv", np.floor_divide),
               ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
               ("divmod", np.divmod), ("and", np.bitwise_and), ("or", np.bitwise_or),
               ("xor", np.bitwise_xor), ("lshift", np.left_shift), ("rshift", np.right_shift)):
    _f, _r = _binary(_u)
    setattr(RecordedArray, "__%s__" % _n, _f)
    setattr(RecordedArray, "__r%s__" % _n, _r)
for _n, _u in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
               ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    setattr(RecordedArray, "__%s__" % _n, _binary(_u)[0])
for _n, _u in (("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
               ("invert", np.invert)):
    setattr(RecordedArray, "__%s__" % _n, _unary(_u))
del _n, _u, _f, _r

register_recorded_array_type(RecordedArray, lambda x: x._rec.to_recorder(x))


def is_input(x):
    """Whether a leaf of a compiled function's input is recorded as an array."""
    return type(x) is np.ndarray and x.dtype.kind == "f"


def key_of(x):
    """The input structure's mark for an array leaf: its shape, dtype and layout (numpy's
    results' layouts, which code may ask for, follow from them)."""
    return ("array", x.shape, x.dtype.str, x.strides, x.flags.writeable)


# --------------------------------------------------------------------------------------------
# Replay


class ArrayProgram:
    """A finished recording with array steps: ``run(inputs)`` (floats and arrays, in leaf
    order) gives the output values, or None where a guard or a step's result differs."""

    __slots__ = ("steps", "plan", "init", "nslots", "inputs", "outs", "code", "funcs", "nfloat",
                 "n", "err0", "loops", "cplan", "consts", "cconsts")

    def __init__(self, arec, outs, code, funcs, nfloat):
        self.steps = list(arec.steps)
        self.nslots = arec.nslots
        self.inputs = list(arec.inputs)
        self.outs = outs        # ("a", slot) / ("s", slot)
        self.code = list(code)  # the scalar instructions (pure twin's tuples)
        self.funcs = tuple(funcs)
        self.nfloat = nfloat
        self.n = len(self.code)
        self.err0 = arec.err0
        self.loops = dict(arec.loops)
        seen = set()
        self.consts = []  # the constant arrays read, with their bits when recorded (once each)
        for c, was in arec.consts:
            if id(c) not in seen:
                seen.add(id(c))
                self.consts.append((c, was))
        self._plan()
        self.cplan = _LATER if _creplay is not None else None  # made by the first replay
        # the constants the C check takes in one call (C-contiguous with C-contiguous copies)
        self.cconsts = None
        if _creplay is not None:
            cc = [(c, was) for c, was in self.consts if type(c) is np.ndarray and
                  type(was) is np.ndarray and c.flags.c_contiguous and was.flags.c_contiguous]
            if len(cc) == len(self.consts):
                self.cconsts = ([c for c, _ in cc], [w for _, w in cc])

    def _plan(self):
        """Each step as what its replay does: arguments that are array slots or constants
        (the commonest) read from one list of values, the constants in slots of their own."""
        init = [None] * self.nslots
        plan = []
        for kind, pos, fn, ta, tk, out, info in self.steps:
            if kind == STEP and type(ta) is tuple and (not tk or type(tk) is dict) and all(
                    type(t) is not _S and type(t) is not _N for t in ta):
                idx = []
                for t in ta:
                    if type(t) is _A:
                        idx.append(t.i)
                    else:
                        idx.append(len(init))
                        init.append(t)
                if tk:
                    op, a, b = _PK, tuple(idx), tk
                elif len(idx) == 1:
                    op, a, b = _P1, idx[0], None
                elif len(idx) == 2:
                    op, a, b = _P2, idx[0], idx[1]
                else:
                    op, a, b = _PN, tuple(idx), None
            else:
                op, a, b = kind + _GENERAL, ta, tk
            if kind == STEP and len(info) == 3:
                check = (_CA, info[0], info[1], info[2])
            elif kind == STEP and len(info) == 2:
                check = (_CT, info[0], info[1], None)
            elif kind == STEP:
                check = (_CG, info[0], None, None)
            else:
                check = (None, None, None, info)
            plan.append([op, pos, fn, a, b, out] + list(check))
        # liveness: a value no later step reads is dropped after its last reader, so numpy
        # reuses its memory (holding every intermediate array alive costs about as much as
        # the numpy calls themselves on small arrays)
        last = {}
        for k, (kind, pos, fn, ta, tk, out, info) in enumerate(self.steps):
            if out >= 0:
                last.setdefault(out, k)
            for t in ta:
                tt = type(t)
                if tt is _A:
                    last[t.i] = k
                elif tt is _N or tt is tuple or tt is list or tt is dict:
                    for j in _slots_of(t):
                        last[j] = k
            if tk:
                for j in _slots_of(tk):
                    last[j] = k
        keep = set(j for kind, j in self.outs if kind == "a")
        dead = [[] for _ in plan]
        for j, k in last.items():
            if j not in keep:
                dead[k].append(j)
        self.plan = [tuple(p + [tuple(dj)]) for p, dj in zip(plan, dead)]
        self.init = init

    def _cplan(self):
        """The plan as the C replayer's steps: those with slot-and-constant arguments (and
        the elementwise ones by numpy's loop); the others, and each step before which scalar
        instructions run, handed back to :meth:`run`'s Python loop."""
        rows = []
        prev = 0
        for k, (op, pos, fn, a, b, out, ck, ctype, cshape, cdtype, dead) in enumerate(self.plan):
            sync = pos > prev
            prev = max(prev, pos)
            if sync or op >= _GENERAL:
                rows.append((_C_PY, 0, None, (), None, out, None, None, None, (), None))
                continue
            args = (a,) if op == _P1 else (a, b) if op == _P2 else a
            check = _C_CHECK[ck]
            loop = self.loops.get(k)
            fast = None
            if loop is not None and op != _PK and len(loop) == len(args):
                fast = (fn, tuple(a if v is True else v for v, a in zip(loop, args)))
            rows.append((_C_FAST if fast is not None else _C_CALL, check, fn, args,
                         b if op == _PK else None, out, ctype, cshape, cdtype, dead, fast))
        return _creplay.Plan(rows, len(self.init), _same_value)

    @property
    def nsteps(self):
        return len(self.steps)

    @property
    def nloops(self):
        """How many steps the C replayer runs by numpy's loops (0 without it)."""
        if self.cplan is _LATER:
            self.cplan = self._cplan()
        return self.cplan.nfast if self.cplan is not None else 0

    def run(self, inputs, fail=None):
        """The output values, or None (``(step, what it gave)`` then appended to ``fail``
        where a step's check or guard failed)."""
        if np.geterr() != self.err0:  # other error handling: numpy may raise or warn otherwise
            return None
        if fail is None:
            fail = []
        # a constant array the caller wrote to since the recording: what numpy computed from
        # it while recording without a recorded operand (a rule's product of the seed and the
        # constant, say) is in the recording as a constant of its own: record afresh
        if self.cconsts is not None:
            if _creplay.first_changed(*self.cconsts) >= 0:
                fail.append((-1, None))
                return None
        else:
            for c, was in self.consts:
                if not _unchanged(c, was):
                    fail.append((-1, None))
                    return None
        vals = list(self.init)
        floats = []
        if len(self.inputs) == len(inputs):
            for k, s in self.inputs:
                vals[s] = inputs[k]
        else:
            apos = dict(self.inputs)
            for k, x in enumerate(inputs):
                s = apos.get(k)
                if s is None:
                    floats.append(x)
                else:
                    vals[s] = x
        svals = [0.0] * self.n
        i = 0
        code = self.code
        ndarray = np.ndarray
        plan = self.plan
        cplan = self.cplan
        if cplan is _LATER:  # (a recording never replayed never pays for it)
            cplan = self.cplan = self._cplan()
        m = len(plan)
        k = 0
        while k < m:
            if cplan is not None:  # the C loop, up to the next step that needs Python
                k = cplan.run(vals, k, fail)
                if k < 0:
                    return None
                if k >= m:
                    break
            op, pos, fn, a, b, out, ck, ctype, cshape, cdtype, dead = plan[k]
            if i < pos:
                if not _scalar_run(code, self.funcs, svals, floats, i, pos):
                    fail.append((k, None))
                    return None
                i = pos
            try:
                if op == _P2:
                    r = fn(vals[a], vals[b])
                elif op == _P1:
                    r = fn(vals[a])
                elif op == _PN:
                    r = fn(*[vals[j] for j in a])
                elif op == _PK:
                    r = fn(*[vals[j] for j in a], **b)
                elif op == _GENERAL + LIFT:
                    vals[out] = svals[a[0].i]
                    for j in dead:
                        vals[j] = None
                    k += 1
                    continue
                else:
                    args = [_fill(t, vals, svals) for t in a]
                    if b:
                        r = fn(*args, **(_fill(b, vals, svals) if type(b) is _N else b))
                    else:
                        r = fn(*args)
            except Exception:  # noqa: BLE001 - the uncompiled call raises here: record it
                fail.append((k, None))
                return None
            if ck == _CA:  # an array: of the recorded shape and dtype
                if type(r) is not ndarray or r.shape != cshape or (
                        r.dtype is not cdtype and r.dtype != cdtype):
                    fail.append((k, r))
                    return None
                vals[out] = r
            elif ck == _CG:
                if type(r) is not ctype:
                    fail.append((k, r))
                    return None
                vals[out] = r
            elif ck == _CT:
                if type(r) is not ctype or len(r) != cshape:
                    fail.append((k, r))
                    return None
                vals[out] = r
            elif op == _GENERAL + GUARD:
                if not _same_value(r, cdtype):
                    fail.append((k, r))
                    return None
            else:  # LINK: the array's value as the scalar recording's next input
                floats.append(r)
            if dead:
                for j in dead:
                    vals[j] = None
            k += 1
        if i < self.n and not _scalar_run(code, self.funcs, svals, floats, i, self.n):
            fail.append((m, None))
            return None
        return [vals[s] if k == "a" else svals[s] for k, s in self.outs]


_P1, _P2, _PN, _PK = 10, 11, 12, 13  # plan: fn(v), fn(v, w), fn(*vs), fn(*vs, **constants)
_GENERAL = 20                        # plan: _GENERAL + the step's kind
_CA, _CT, _CG = 1, 2, 3              # checks: an array, a tuple of arrays, a numpy scalar
# the C replayer's step kinds and checks (cext/_array_replay.pyx)
_C_PY, _C_CALL, _C_FAST = 0, 1, 2
_C_ARRAY, _C_TUPLE, _C_TYPE = 1, 2, 3
_C_CHECK = {_CA: _C_ARRAY, _CT: _C_TUPLE, _CG: _C_TYPE}
_LATER = object()  # ArrayProgram.cplan before its first replay


def _slots_of(t):
    """The array slots a step's argument template reads."""
    tt = type(t)
    if tt is _A:
        return [t.i]
    if tt is _N:
        return _slots_of(t.items)
    if tt is tuple or tt is list:
        out = []
        for e in t:
            out += _slots_of(e)
        return out
    if tt is dict:
        return _slots_of(list(t.values()))
    return []


def _scalar_run(code, funcs, vals, inputs, start, stop):
    """The scalar instructions ``code[start:stop]`` (the pure replayer's semantics: the same
    bits as the compiled one); False where a guard fails."""
    for i in range(start, stop):
        op, a, b, k, c = code[i]
        if op == _P.ADD:
            vals[i] = vals[a] + vals[b]
        elif op == _P.MUL:
            vals[i] = vals[a] * vals[b]
        elif op == _P.SUB:
            vals[i] = vals[a] - vals[b]
        elif op == _P.DIV:
            d = vals[b]
            if d == 0.0:
                return False
            vals[i] = vals[a] / d
        elif op == _P.NEG:
            vals[i] = -vals[a]
        elif op == _P.INPUT:
            vals[i] = inputs[a]
        elif op == _P.CONST:
            vals[i] = c
        elif op == _P.CALL2:
            try:
                r = funcs[k](vals[a], vals[b])
            except Exception:  # noqa: BLE001
                return False
            if type(r) is not float:
                return False
            vals[i] = r
        elif op < _P.G_LT:
            try:
                r = funcs[k](vals[a])
            except Exception:  # noqa: BLE001
                return False
            if type(r) is not float:
                return False
            vals[i] = r
        elif op <= _P.G_NE:
            if (1 if _P._CMP[op](vals[a], vals[b]) else 0) != k:
                return False
        else:
            x = vals[a]
            if op == _P.G_BITS:
                if _BITS.pack(x) != _BITS.pack(c):
                    return False
            elif not math.isfinite(x):
                return False
            elif op == _P.G_FLOOR:
                if math.floor(x) != c:
                    return False
            elif op == _P.G_CEIL:
                if math.ceil(x) != c:
                    return False
            elif op == _P.G_TRUNC:
                if math.trunc(x) != c:
                    return False
            elif round(x) != c:
                return False
    return True


def finish(rec, arec, leaves, out_def, replay):
    """``(program, result)`` of a finished recording with arrays whose function returned the
    pytree ``leaves``/``out_def``; ``replay(prog, out_def, spec, leaves)`` wraps the program
    (``compile``'s ``_Replay``)."""
    outs = []
    spec = []
    result = []
    for x in leaves:
        tx = type(x)
        if tx is not RecordedArray and (tx is np.ndarray or isinstance(x, np.generic)):
            # a constant array: a fresh copy per replay, as each uncompiled call makes its own
            result.append(x)
            x = arec.call(np.copy, (np.copy(x),), None)  # (the caller may write to x)
            spec.append(len(outs))
            outs.append(("a", x.slot))
            continue
        if tx is RecordedArray:
            if x._rec is not arec:
                rec.fail("the result holds an array recorded by another call")
            spec.append(len(outs))
            outs.append(("a", x.slot))
            result.append(x.v)
        elif tx is arec._rtype:
            if x._rec is not rec:
                rec.fail("the result holds a number recorded by another call")
            spec.append(len(outs))
            outs.append(("s", x.slot))
            result.append(x.v)
        elif tx is float or tx is int or tx is bool or tx is str or x is None:
            spec.append(-1)
            result.append(x)
        else:
            rec.fail("the result has a leaf of type %s" % tx.__name__)
    for c, was in arec.consts:
        if not same_bits(c, was):
            rec.fail("a constant array used by a recorded numpy call was written to in place "
                     "later in the call")
    nfloat = rec.ninputs - arec.links
    prog = ArrayProgram(arec, outs, rec.code, rec.funcs, nfloat)
    return replay(prog, out_def, spec, leaves), tree_unflatten(out_def, result)


def _unchanged(c, was):
    """Constant array ``c`` has the bits (and shape and dtype) of its copy ``was``."""
    if c.shape != was.shape or c.dtype != was.dtype:
        return False
    if _creplay is not None:
        same = _creplay.same_bits(c, was)  # a memcmp (None: not two C-contiguous ndarrays)
        if same is not None:
            return same
    return c.tobytes() == was.tobytes()


def same_bits(x, y):
    """Arrays or numpy scalars equal in type, shape, dtype and every bit."""
    if type(x) is not type(y):
        return False
    x = np.asarray(x)
    y = np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
