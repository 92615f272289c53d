"""Traces: their levels, the stack of open ones, and what every layer asks of a value.

A differentiation opens a *trace* -- a tape for reverse mode, a forward level for forward mode
-- at a level above every trace already open in its thread, and closes it when it is done, also
on exceptions. An operation is recorded on the trace of highest level among its operands;
operands of lower levels are constants there. That is what keeps nested derivatives apart
(no perturbation confusion) and gives every nesting of the modes without special cases.

This module is low in the house: the differential operators, custom rules, checkpointing and
the numpy support all ask it the same questions -- is this a dual, which kind of leaf is it,
what is its plain value, which trace is the innermost -- and get one answer.
"""

import itertools
import numbers
import threading
import weakref

from deltaad._plainnumpy import np

from ._backend import B
from ._errors import escaped_error

Dual = B.Dual

_levels = itertools.count(1)  # next() is atomic under the GIL: levels never repeat
_local = threading.local()

# The types of dual numbers: the backend's scalar Dual, and the array dual, which registers
# itself here when deltaad's numpy support is imported (it lives higher in the house).
dual_types = {Dual}

# A scalar dual is a real number to code that asks (``isinstance(x, numbers.Real)``, numpy's
# ``np.isscalar``): it does a real number's arithmetic and comparisons; only ``float(x)``
# refuses, naming the fix. It is not a ``float`` (no dual is: a float's C value has no room for
# the derivative), as a JAX tracer or a PyTorch tensor is not one.
numbers.Real.register(Dual)


_complex_types = set()


# Array types that stand for a float array or an array dual (deltaad.numpy.fillable's object
# arrays of floats and duals): type -> the function giving what they stand for
settled_types = {}


def register_dual_type(cls, complex_valued=False):
    """Declare ``cls`` a dual number type (its instances have ``value``, ``trace``, ``id``,
    ``tangent``); ``complex_valued``: its values are complex."""
    dual_types.add(cls)
    if complex_valued:
        _complex_types.add(cls)
    return cls


# Recording number types (``deltaad.compile``'s): below every dual, scalar leaves to a
# differentiation, and the elementary functions dispatch to ``recorders[type](name, *args)``.
recorders = {}


def register_recorder_type(cls, dispatch):
    """Declare ``cls`` a recording number type; ``dispatch(name, *args)`` applies the table's
    function ``name`` to arguments of which one is a ``cls``."""
    recorders[cls] = dispatch
    return cls


# Recorded array types (``deltaad.compile``'s arrays): below every dual, array leaves to a
# differentiation; ``recorded_arrays[type](x)`` is a recorded number with size-1 ``x``'s value
# (where the array mechanism makes a float of an array).
recorded_arrays = {}
recorded_call = None  # recorded_call(x, f, args): f(*args) as one recorded step of x's recording
recorded_lift = None  # recorded_lift(x): recorded float x as a recorded array holding it
lifting = False  # while a recording with arrays is open (in any thread): the array mechanism
# then looks for recorded floats meeting arrays (``deltaad.numpy.array._lift``)


def register_recorded_array_type(cls, to_scalar):
    """Declare ``cls`` a recorded array type; ``to_scalar(x)`` gives a recorded number with
    the value of ``x`` (of size 1)."""
    recorded_arrays[cls] = to_scalar
    return cls


# Called when a thread's first trace opens and when its last one closes (``deltaad.stdmath``
# switches the ``math`` module there). They count and must not fail.
outermost_hooks = []


def _outermost(entering):
    for enter, leave in outermost_hooks:
        (enter if entering else leave)()


def _stack():
    try:
        return _local.stack
    except AttributeError:  # the thread's first trace
        stack = _local.stack = []
        return stack


def _settle(stack):
    """Drop the closed traces at the top of ``stack``.

    The stack heals itself: what counts is each trace's ``closed`` flag, which the backend
    sets in one step nothing can interrupt (``Trace.run``). Pushing and popping are Python and
    an asynchronous exception (``KeyboardInterrupt``) can skip a pop; the trace it leaves
    behind is closed, is never reported as open, and goes at the next push or pop."""
    while stack and stack[-1].closed:
        stack.pop()


def open_traces():
    """The traces open in this thread, outermost first (empty outside any differentiation)."""
    stack = _stack()
    _settle(stack)
    return [t for t in stack if not t.closed]


def traced(kind, body, *args):
    """``trace, out = traced(kind, body, *args)``: run ``body(trace, *args)`` with a fresh
    trace of ``kind`` (``B.Tape`` or ``B.ForwardLevel``) open above all others in this thread.

    The trace is open exactly while ``body`` runs: the backend opens it, calls ``body`` and
    closes it however the call ends, without running Python code in between (``Trace.run``),
    so an exception that arrives anywhere -- ``KeyboardInterrupt`` at any bytecode, an
    exception a tracer raises at any line -- never leaves it open. Its duals then raise
    ``EscapedDualError`` as those of any finished differentiation do."""
    trace = kind(next(_levels))
    trace.close()  # until run opens it: an interrupt before then leaves nothing open
    stack = _stack()
    _settle(stack)
    outer = not stack
    try:
        if outer:
            _outermost(True)
        stack.append(trace)
        return trace, trace.run(body, trace, *args)
    finally:
        if stack and stack[-1] is trace:
            stack.pop()
        _settle(stack)
        if outer:
            _outermost(False)


class opened:
    """``with opened(kind) as trace``: open a trace of ``kind`` above all others in this thread;
    it is closed on the way out.

    Prefer :func:`traced`: a ``with`` block's exit is Python code, which a ``KeyboardInterrupt``
    arriving at the wrong bytecode (or a tracer's exception at the ``with`` line) skips,
    leaving the trace open. Kept for code that must stay open across a ``yield``."""

    __slots__ = ("trace", "outer")

    def __init__(self, kind):
        self.trace = kind(next(_levels))
        self.outer = False

    def __enter__(self):
        stack = _stack()
        _settle(stack)
        if not stack:
            self.outer = True
            _outermost(True)
        stack.append(self.trace)
        return self.trace

    def __exit__(self, *exc):
        self.trace.close()
        if self.outer:
            self.outer = False
            _outermost(False)
        stack = _stack()
        if stack and stack[-1] is self.trace:
            stack.pop()
        else:  # closed out of order (a generator kept alive); still never leak it
            try:
                stack.remove(self.trace)
            except ValueError:
                pass
        _settle(stack)
        return False


class reopened:
    """``with reopened(trace)``: make an existing ``trace`` the innermost of this thread and
    open again (a checkpoint re-records on the tape it was dropped from, possibly after that
    tape's function returned); its open/closed state and the stack are restored on the way
    out."""

    __slots__ = ("trace", "was", "outer")

    def __init__(self, trace):
        self.trace = trace
        self.outer = False

    def __enter__(self):
        t = self.trace
        c = t.closed
        if type(c) is list:  # the pure twin's flag: a list, [True] once closed (see its run)
            self.was = list(c)
            c.clear()
        else:
            self.was = c
            t.closed = False
        stack = _stack()
        _settle(stack)
        if not stack:
            self.outer = True
            _outermost(True)
        stack.append(t)
        return t

    def __exit__(self, *exc):
        t = self.trace
        if type(t.closed) is list:
            t.closed[:] = self.was
        else:
            t.closed = self.was
        stack = _local.stack
        for k in range(len(stack) - 1, -1, -1):
            if stack[k] is t:
                del stack[k]
                break
        if self.outer:
            self.outer = False
            _outermost(False)
        return False


# A checkpoint's function, or a checkpointed loop's steps, are run again at sweep time: their
# node records at the end of its tape and sweeps that segment while the sweep stands at the
# node, so what the tape holds between the node and the segment is swept already and must
# not be read there (only what lies below the node: what the first run could read). Values
# cached for reuse across operations (an array's unpacked elements) ask ``rerun_floor``.


def _reruns():
    try:
        return _local.reruns
    except AttributeError:
        reruns = _local.reruns = []
        return reruns


# How many re-runs have started or ended (in any thread): a cache checked against
# ``rerun_floor`` stays checked while this count is what it was.
rerun_count = [0]


def rerun(tape, i, fn, *args):
    """``fn(*args)`` as the re-run of the node ``i`` of ``tape`` (see above)."""
    reruns = _reruns()
    entry = (weakref.ref(tape), i)
    reruns.append(entry)
    rerun_count[0] += 1
    try:
        return fn(*args)
    finally:
        rerun_count[0] += 1
        for k in range(len(reruns) - 1, -1, -1):
            if reruns[k] is entry:
                del reruns[k]
                break


def rerun_floor(tape):
    """The lowest node of ``tape`` re-running in this thread (nothing at or above it may be
    read), or None."""
    floor = None
    for ref, i in _reruns():
        if ref() is tape and (floor is None or i < floor):
            floor = i
    return floor


def innermost():
    """The trace opened last in this thread and still open, or None."""
    traces = open_traces()
    return traces[-1] if traces else None


# --------------------------------------------------------------------------------------------
# Questions about values


def is_dual(x):
    """True for any deltaad dual number, scalar or array."""
    return type(x) in dual_types


def value(x):
    """The primal value of ``x``: the plain number (or array) under every dual level.

    Identity on anything that is not a dual. Works on duals whose differentiation has finished.
    """
    while type(x) in dual_types:
        x = x.value
    return x


def dtype_of(x):
    """The numpy dtype of ``x``'s plain value (float64 for a Python float, complex128 for a
    Python complex)."""
    v = value(x)
    try:
        return v.dtype
    except AttributeError:
        return np.dtype(complex) if type(v) is complex else np.dtype(float)


def leaf_kind(x):
    """What a pytree leaf is to a differentiation: ``"scalar"`` (a float, a numpy float scalar
    or a scalar dual), ``"array"`` (a float array or an array dual), ``"complex"`` (a complex
    number or array, or a complex dual: a real dual of its (re, im) pairs, see
    ``deltaad.numpy.complex_array``) or None (a constant: passed through, ``None`` in its
    gradient slot)."""
    tx = type(x)
    if tx is float or tx is Dual:
        return "scalar"
    if tx is int or tx is bool or tx is str or x is None:
        return None
    if isinstance(x, np.ndarray):
        if x.dtype.kind == "f" or tx in settled_types:
            return "array"
        if x.dtype.kind == "c":
            return "complex"
        return None
    if isinstance(x, (np.floating, float)):
        return "scalar"
    if isinstance(x, (complex, np.complexfloating)):
        return "complex"
    if tx in dual_types:
        return "complex" if tx in _complex_types else "array"
    if tx in recorders:
        return "scalar"
    return None


def top_trace(xs):
    """The trace of highest level among the duals in ``xs`` (None if there is none)."""
    top = None
    for x in xs:
        if type(x) in dual_types:
            t = x.trace
            if top is None or t.level > top.level:
                top = t
    return top


def on_trace(x, trace):
    """``x`` if it is a dual of ``trace``; None if it is a constant there.

    Duals of outer traces that are still open are constants (nesting); a dual of any other
    trace -- an inner one, or one that has finished (it escaped, e.g. in a global from an
    earlier grad) -- would silently become a constant, so it is an EscapedDualError."""
    if type(x) in dual_types:
        t = x.trace
        if t is trace:
            return x
        if t.closed or t.level > trace.level:
            raise escaped_error(t.level)
    return None
