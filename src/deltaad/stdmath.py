"""``import math`` (and ``statistics``) code differentiates unchanged, and so does
``np.linalg`` of a matrix built from numbers with ``np.array``.

Physics and statistics code calls ``math.exp``, ``math.sqrt``, ``math.atan2``... on its
numbers; on a dual, ``math``'s C functions would convert to a plain float and drop the
derivative. While a differentiation is open (in any thread), the interpreter's ``math`` and
``cmath`` modules therefore answer each look-up of a function with :mod:`deltaad.math`'s
(:mod:`deltaad.cmath`'s) of the same name. Those give ``math``'s own result, to the bit, and
its errors on plain numbers, so other code running meanwhile sees no difference but a look-up
costing about 20 ns more. Likewise ``np.linalg``'s functions pack an object array of duals
(``np.array([[x, 1.0], [0.5, x]])``) into an array dual before numpy sees it (numpy's
``linalg`` refuses object arrays), and numpy's constructors given duals and a float dtype
(``np.asarray(x, dtype=float)``, library code's usual first line) give the array dual instead
of dropping the derivative; its float constructors called from the user's code (``np.zeros``,
``np.empty_like``...) give arrays duals can be stored in (``y[i] = x * k``: see
:mod:`deltaad.numpy.fillable`). Outside differentiation nothing is changed: the modules' class is
switched back when the last trace closes.

A name bound before, ``from math import sin``, is ``math``'s own function and still raises on
a dual (with the fix in its message); ``deltaad.stdmath.enable(False)`` turns the switch off.
deltaad itself computes with untouched copies of the math modules (``deltaad._plainmath``).
"""

import cmath as _cmath_module
import math as _math_module
import sys as _sys
import types
from threading import get_ident as _ident

import numpy as _np

from . import trace as _trace
from ._backend import B
from ._errors import NUMPY_CONSTRUCTORS, NUMPY_CONVERTERS

_plain = types.ModuleType.__getattribute__
_plain_setattr = types.ModuleType.__setattr__


def _switched(module, replacement):
    """``[cls]``: the class of ``module`` while switched, whose functions looked up are
    ``replacement``'s (deltaad's module) of the same name. The table is made at the first
    look-up (``deltaad.cmath`` loads numpy's complex rules, which ``import deltaad`` leaves for
    later); from then on the class is one whose functions are properties on the class, which
    the interpreter's own attribute look-up finds with no Python call in between (about 40 ns a
    ``math.exp`` less than a Python ``__getattribute__``), and the list holds that class."""
    functions = {}
    holder = []

    def fill():
        from importlib import import_module
        new = import_module(replacement)
        for name, f in _plain(module, "__dict__").items():
            g = getattr(new, name, None)
            if callable(f) and not name.startswith("_") and callable(g):
                functions[name] = g
        attrs = {name: property({module: g}.get, _setter(name), _deleter(name),
                                "%s.%s while differentiating" % (replacement, name))
                 for name, g in functions.items()}
        attrs.update(__slots__=(), __doc__=Differentiable.__doc__)
        holder[0] = type("Differentiable", (types.ModuleType,), attrs)

    class Differentiable(types.ModuleType):
        """A standard module while a differentiation is open: its functions are deltaad's."""

        __slots__ = ()

        def __getattribute__(self, name):
            if holder[0] is Differentiable:
                fill()
            if type(self) is Differentiable:  # (still switched: not switched back meanwhile)
                _plain_setattr(self, "__class__", holder[0])
            return getattr(self, name)

    holder.append(Differentiable)
    return holder


def _setter(name):
    def set_(module, value):  # (the property would refuse): the module's own name, as unswitched
        _plain(module, "__dict__")[name] = value
    return set_


def _deleter(name):
    def delete(module):
        del _plain(module, "__dict__")[name]
    return delete


def _packing(module):
    """The class of numpy's ``linalg`` while switched: each function packs the object arrays of
    duals it is given (``np.array([[x, 1.0], [0.5, x]])``) into array duals first, so the call
    reaches deltaad's rule; numpy's own would refuse an object array."""
    functions = {}

    def packs(name, fn):
        def call(*args, **kwargs):
            for a in args:
                if isinstance(a, _np.ndarray) and a.dtype.kind == "O":  # (a fillable array too)
                    args = [_pack(b) for b in args]
                    break
            return fn(*args, **kwargs)

        call.__name__ = call.__qualname__ = name
        call.__doc__ = fn.__doc__
        call.__wrapped__ = fn
        return call

    class Packing(types.ModuleType):
        """numpy's linalg while a differentiation is open: object arrays of duals are arrays."""

        __slots__ = ()

        def __getattribute__(self, name, _get=functions.get, _plain=_plain):
            f = _get(name)
            if f is None:
                f = _plain(self, name)
                if not callable(f) or isinstance(f, type) or name.startswith("_"):
                    return f
                f = functions.setdefault(name, packs(name, f))
            # deltaad's own rules look numpy's functions up by identity: theirs, not the wrapper
            if _sys._getframe(1).f_globals.get("__name__", "").startswith("deltaad."):
                return f.__wrapped__
            return f

    return Packing


def _converting(module):
    """numpy's class while switched: its array constructors, given duals and a float dtype
    (``np.asarray(x, dtype=float)``, library code's usual first line), give the array dual
    deltaad's rules take. numpy's own would convert each dual to a float, dropping its
    derivative, so it raises; only then is the conversion tried again, and plain arguments
    cost one call more. Every other name is looked up as before, at the same cost."""

    def converts(name, fn):
        def call(a, *args, **kwargs):
            settle = _trace.settled_types.get(type(a))
            if settle is not None:  # a fillable: numpy's object view would hide its duals
                a = settle(a)
            try:
                return fn(a, *args, **kwargs)
            except TypeError:
                out = _as_dual(a, args[0] if args else kwargs.get("dtype"), kwargs.get("ndmin", 0))
                if out is None:
                    raise
                return out

        call.__name__ = call.__qualname__ = name
        call.__doc__ = fn.__doc__
        call.__wrapped__ = fn
        return property(lambda self: call, doc="numpy's %s, taking duals with a float dtype" % name)

    made = {}
    originals = {name: getattr(module, name) for name in NUMPY_CONSTRUCTORS}

    def constructs(name):
        plain = originals[name]

        def get(self, _frame=_sys._getframe, _ident=_ident, _open=_open, _held=_held):
            # numpy's own where no fillable can be asked for: another thread, or library code
            # looking the name up (deltaad's rules, scipy: the commonest look-ups, kept cheap)
            me = _ident()
            if me not in _open or me in _held:
                return plain
            file = _frame(1).f_code.co_filename
            lib = _libraries.get(file)
            if lib is None:
                from .numpy.fillable import _in_library
                lib = _libraries[file] = _in_library(file)
            if lib:
                return plain
            fn = made.get(name)
            if fn is None:
                from .numpy.fillable import constructor
                fn = made[name] = constructor(plain, _filling)
            return fn

        return property(get, doc="numpy's %s, giving an array duals can be stored in" % name)

    table = {name: converts(name, getattr(module, name)) for name in NUMPY_CONVERTERS}
    table.update((name, constructs(name)) for name in NUMPY_CONSTRUCTORS)
    return type("Converting", (types.ModuleType,), dict(table, __slots__=(), __doc__=(
        "numpy while a differentiation is open: its constructors take duals with a float "
        "dtype")))


_libraries = {}  # filename -> whether it is a library's (deltaad.numpy.fillable decides)


def _filling():
    """Whether numpy's float constructors give fillable arrays in this thread: a
    differentiation is open here (not only a recording of ``deltaad.compile``)."""
    me = _ident()
    return me in _open and me not in _held


def _as_dual(a, dtype, ndmin):
    """The array dual of ``a`` (which holds duals) as ``dtype`` (inexact), or None."""
    if dtype is None or _np.dtype(dtype).kind not in "fc":
        return None
    from .numpy.array import asarray
    from .numpy.complex_array import ComplexDual
    out = a.reshape(a.shape) if type(a) is ComplexDual else asarray(a)
    if type(out) is _np.ndarray:  # no dual inside: the error was another
        return None
    if out.dtype.kind == "c" and _np.dtype(dtype).kind == "f":
        return None  # complex to real drops the imaginary part: numpy's own error stands
    if out.dtype != _np.dtype(dtype):
        out = out.astype(dtype)
    if out.ndim < ndmin:
        out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
    return out


def _pack(a):
    """An object array holding duals as an array dual; anything else as it is."""
    if isinstance(a, _np.ndarray) and a.dtype.kind == "O":  # (a fillable array too)
        from .numpy.array import asarray, has_dual
        if has_dual(a.ravel().tolist()):
            return asarray(a)
    return a


_MATH = _switched(_math_module, "deltaad.math")
_CMATH = _switched(_cmath_module, "deltaad.cmath")
_LINALG = _packing(_np.linalg)
_PLAIN = types.ModuleType

# The threads with a trace open (True), and the depth of ``switched`` blocks per thread. No
# lock: an interrupt arriving inside a Python-level lock's block could leave it held, and every
# differentiation after would hang. Each step below is one operation the GIL makes atomic, and
# a thread that switches the modules off looks again afterwards, so one entering meanwhile is
# never left unswitched. An interrupt between two steps can leave a thread's entry behind (the
# modules stay switched, which changes no result); the thread's next differentiation clears it.
_open = {}
_held = {}
_NUMPY = _converting(_np)  # (its look-ups read _open and _held)
_enabled = True


_STATISTICS = []  # statistics' class while switched, made when the module is first imported
_set_classes = B.set_module_classes

# The modules switched, their classes while switched and their plain ones; statistics joins
# them once some code has imported it (``_switching``), as ``(statistics, the three)``.
_MODULES = ((_math_module, _cmath_module, _np.linalg, _np),
            (_MATH[0], _CMATH[0], _LINALG, _NUMPY), (_PLAIN,) * 4)
_with_statistics = (None, _MODULES)


def _switching():
    """``(modules, classes while switched, plain classes)``."""
    global _with_statistics
    stats = _sys.modules.get("statistics")
    if stats is None:
        return _MODULES
    if _with_statistics[0] is not stats:
        if not _STATISTICS:
            _STATISTICS.append(_switched(stats, "deltaad.statistics"))
        mods, on, off = _MODULES
        _with_statistics = (stats, (mods + (stats,), on + (_STATISTICS[0][0],), off + (_PLAIN,)))
    return _with_statistics[1]


def _on():
    mods, on, _ = _switching()
    _set_classes(mods, on)


def _off():
    mods, _, off = _switching()
    _set_classes(mods, off)


def _settle():
    if not (_open or _held):
        _off()
        if (_open or _held) and _enabled:  # a thread entered meanwhile, maybe switched before
            _on()


def _enter():
    _open[_ident()] = True
    if _enabled:
        _on()


def _leave():
    _open.pop(_ident(), None)
    _settle()


def enable(on=True):
    """Whether ``math`` and ``cmath`` take duals while a differentiation is open (default
    True). ``enable(False)`` leaves the modules untouched: ``math.sin`` of a dual then raises,
    naming ``from deltaad import math`` as the fix."""
    global _enabled
    _enabled = bool(on)
    if _enabled and (_open or _held):
        _on()
    else:
        _off()


class switched:
    """``with switched()``: the modules take duals inside, as while a trace is open (a
    recording of ``deltaad.compile`` runs the function on its recording numbers so)."""

    def __enter__(self):
        me = _ident()
        _held[me] = _held.get(me, 0) + 1
        if _enabled:
            _on()
        return self

    def __exit__(self, *exc):
        me = _ident()
        n = _held.pop(me, 0) - 1
        if n > 0:
            _held[me] = n
        _settle()
        return False


def active():
    """True while the ``math`` module's functions are deltaad's (a differentiation is open)."""
    return type(_math_module) is not types.ModuleType


_trace.outermost_hooks.append((_enter, _leave))
