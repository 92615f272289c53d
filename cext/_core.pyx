# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""deltaad's compiled core: the tape, the forward level and the dual number in C.

The twin of ``deltaad/_pure.py`` (read that file for the ideas; it says what this one does).
Bindings live in a growable C array of 24-byte records, never in Python objects; the common
case (operands on the same trace, values and coefficients C doubles) runs without touching a
dictionary or a thread-local. Everything else (nesting, where values and coefficients are
duals of an outer trace; array bindings with a vjp; n-ary primitives) takes the general path,
which computes with Python objects in exactly the order ``_pure`` does.
"""

cimport cython
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.float cimport PyFloat_AS_DOUBLE
from libc cimport math as cm
from libc.stdint cimport int32_t
from libc.string cimport memset
from cpython.object cimport PyTypeObject

cdef extern from "Python.h":
    void PyType_Modified(PyTypeObject* t)

import math as _math
import numbers as _numbers
from operator import index as _index

from deltaad import _rules
from deltaad import elementwise as _table
from deltaad._errors import DUAL_NEW, escaped_error, no_float_error

cdef double INF = _math.inf
cdef double NAN = _math.nan
cdef double LN2 = _table.LN2
cdef double LN10 = _table.LN10
cdef double TWO_OVER_SQRT_PI = _table.TWO_OVER_SQRT_PI

_hooks = {"fallback": None, "array_ufunc": None, "array_function": None}


def set_hooks(fallback, array_ufunc, array_function=None):
    """Install the numpy glue: ``fallback(name, *args)``, ``array_ufunc(ufunc, method, inputs,
    kwargs)`` and ``array_function(dual, func, types, args, kwargs)``."""
    _hooks["fallback"] = fallback
    _hooks["array_ufunc"] = array_ufunc
    _hooks["array_function"] = array_function


def all_floats(xs):
    """True when every item of the list or tuple ``xs`` is exactly a float (one C loop)."""
    cdef list l
    cdef tuple t
    cdef Py_ssize_t k
    if type(xs) is list:
        l = <list>xs
        for k in range(len(l)):
            if type(l[k]) is not float:
                return False
        return True
    if type(xs) is tuple:
        t = <tuple>xs
        for k in range(len(t)):
            if type(t[k]) is not float:
                return False
        return True
    for x in xs:
        if type(x) is not float:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Traces

@cython.auto_pickle(False)
cdef class Trace:
    """One differentiation in progress; ``level`` orders nested traces (higher = inner)."""

    cdef public Py_ssize_t level
    cdef public bint closed
    cdef readonly bint is_forward
    cdef object __weakref__

    def __init__(self, level):
        self.level = level
        self.closed = False

    def close(self):
        """End recording: duals of this trace may no longer enter arithmetic."""
        self.closed = True

    def run(self, fn, *args):
        """``fn(*args)`` with this trace open; it is closed when ``fn`` returns or raises.

        Opening, the call and closing are one C function: no bytecode runs between them, so
        an asynchronous exception (``KeyboardInterrupt``, a tracer's) cannot skip the close."""
        self.closed = False
        try:
            return fn(*args)
        finally:
            self.closed = True


ctypedef struct Binding:
    double c1
    double c2
    int32_t p1      # first parent id; -1 none (an input); -2 a linear binding (see Tape.linear)
    int32_t p2      # second parent id or -1

# Ids are int32: a tape holds at most 2**31 - 1 bindings (48 GiB of them, twice this machine's
# memory), and a binding is 24 bytes.
cdef Py_ssize_t MAX_BINDINGS = 2147483647


# One spare binding buffer, kept from the last tape that died, so the next tape writes into
# memory that is already mapped: a fresh 48 MB tape otherwise pays ~12000 page faults, a
# fifth of its recording time in a gradient loop. Capped: a larger buffer goes back to the OS.
cdef Binding* _spare = NULL
cdef Py_ssize_t _spare_cap = 0
cdef Py_ssize_t SPARE_MAX_BYTES = 256 * 1024 * 1024
# While tracemalloc traces, keep no spare: a reused buffer allocated before tracing began
# would be invisible to it, and a kept one would look like a leak. Memory measurements then
# see exactly what each tape allocates.
import _tracemalloc
cdef object _tm_is_tracing = _tracemalloc.is_tracing  # read once: no module global to patch


cdef bint _tracing() noexcept:
    """tracemalloc.is_tracing(), safe in __dealloc__ (True, i.e. keep no spare, on error)."""
    try:
        return bool(_tm_is_tracing())
    except BaseException:
        return True


cdef double* _spare_adj = NULL    # likewise for the adjoint array of the float sweep
cdef Py_ssize_t _spare_adj_n = 0


def release_memory():
    """Give the spare tape and adjoint buffers back to the allocator."""
    global _spare, _spare_cap, _spare_adj, _spare_adj_n
    if _spare != NULL:
        PyMem_Free(_spare)
        _spare = NULL
        _spare_cap = 0
    if _spare_adj != NULL:
        PyMem_Free(_spare_adj)
        _spare_adj = NULL
        _spare_adj_n = 0


@cython.auto_pickle(False)
@cython.no_gc_clear  # a cleared tape (ocoef/linear None) must never be reachable
cdef class Tape(Trace):
    """A reverse trace: a growable C array of 24-byte bindings ``id := c1*Var(p1) + c2*Var(p2)``.

    Coefficients that are not C doubles (outer duals, when nesting) are kept beside the array
    in ``ocoef``; bindings with other than two scalar parents in ``linear``.
    """

    cdef Binding* b
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef dict ocoef
    cdef dict linear
    cdef bint general
    cdef int sweeping   # float sweeps in progress (without the GIL) over ``b``: do not move it

    def __cinit__(self, *args):
        self.b = NULL
        self.n = 0
        self.cap = 0
        self.sweeping = 0
        self.ocoef = {}
        self.linear = {}
        self.general = False
        self.is_forward = False

    def __dealloc__(self):
        global _spare, _spare_cap
        if self.b != NULL:
            if (self.cap > _spare_cap and self.cap * <Py_ssize_t>sizeof(Binding) <= SPARE_MAX_BYTES
                    and not _tracing()):
                if _spare != NULL:
                    PyMem_Free(_spare)
                _spare = self.b
                _spare_cap = self.cap
            else:
                PyMem_Free(self.b)
            self.b = NULL

    cdef Py_ssize_t _grow(self) except -1:
        global _spare, _spare_cap
        cdef Py_ssize_t newcap = self.cap * 2 if self.cap else 1024
        cdef Binding* nb
        if self.b == NULL and _spare != NULL and not _tracing():  # start in the spare (see _spare)
            self.b = _spare
            self.cap = _spare_cap
            _spare = NULL
            _spare_cap = 0
            return 0
        if self.sweeping:
            raise RuntimeError("deltaad tape: cannot record on a tape while another thread runs "
                               "its backward sweep; give each thread its own differentiation")
        if self.cap >= MAX_BINDINGS:
            raise MemoryError("deltaad tape: more than %d bindings on one tape" % MAX_BINDINGS)
        if newcap > MAX_BINDINGS:
            newcap = MAX_BINDINGS
        nb = <Binding*>PyMem_Realloc(self.b, newcap * sizeof(Binding))
        if nb == NULL:
            raise MemoryError("deltaad tape: out of memory growing to %d bindings" % newcap)
        self.b = nb
        self.cap = newcap
        return 0

    cdef inline Py_ssize_t _push(self, Py_ssize_t p1, double c1, Py_ssize_t p2, double c2) except -1:
        cdef Py_ssize_t i = self.n
        if i == self.cap:
            self._grow()
        self.b[i].p1 = <int32_t>p1
        self.b[i].c1 = c1
        self.b[i].p2 = <int32_t>p2
        self.b[i].c2 = c2
        self.n = i + 1
        return i

    def input(self, value):
        """A fresh input variable ``(value, Var id)``."""
        _check_lower(self, value)
        cdef Py_ssize_t i = self._push(-1, 0.0, -1, 0.0)
        return _new_dual(value, self, i)

    def inputs(self, values):
        """A fresh input variable for each of ``values``, with consecutive ids."""
        cdef list vals = values if type(values) is list else list(values)
        cdef Py_ssize_t m = len(vals)
        cdef Py_ssize_t start = self.n
        cdef Py_ssize_t k
        if m > MAX_BINDINGS - start:
            raise MemoryError("deltaad tape: more than %d bindings on one tape" % MAX_BINDINGS)
        while self.cap < start + m:
            self._grow()
        cdef list out = [None] * m
        for k in range(m):  # ids start .. start + m - 1, all below cap (grown above)
            self.b[start + k].p1 = -1
            self.b[start + k].c1 = 0.0
            self.b[start + k].p2 = -1
            self.b[start + k].c2 = 0.0
            _check_lower(self, vals[k])  # inline: a type check for a float
            out[k] = _new_dual(vals[k], self, start + k)
            self.n = start + k + 1
        return out

    def push_linear(self, parents, rule):
        """Record a binding with any number of parents; return its id (see ``_pure``)."""
        if self.closed:
            raise escaped_error(self.level)
        parents = _check_parents(parents, self.n)
        cdef Py_ssize_t i = self._push(-2, 0.0, -1, 0.0)
        self.linear[i] = (parents, rule)
        return i

    @property
    def nbindings(self):
        return self.n

    @property
    def nbytes(self):
        """Bytes of binding storage: 24 per binding (two int32 parents, two doubles)."""
        return self.n * <Py_ssize_t>sizeof(Binding)

    def binding(self, Py_ssize_t i):
        """Binding ``i`` as ``(parents, rule)``; an input is ``((), ())``."""
        if i < 0 or i >= self.n:
            raise IndexError("binding %d not on this tape of %d" % (i, self.n))
        cdef Binding bb = self.b[i]
        if bb.p1 == -2:
            return self.linear[i]
        if bb.p1 == -1:
            return (), ()
        c = self.ocoef.get(i)
        c1 = c[0] if c is not None else bb.c1
        c2 = c[1] if c is not None else bb.c2
        if bb.p2 == -1:
            return (bb.p1,), (c1,)
        return (bb.p1, bb.p2), (c1, c2)

    def eval(self, seeds, wanted):
        """Sweep the bindings newest-first once; return the adjoints of the ``wanted`` ids.

        The float sweep (every coefficient and seed a double) runs in C without the GIL;
        otherwise the general sweep computes with Python objects, as ``_pure`` does.
        """
        # Each seed and wanted id is converted to a C integer and checked once. All Python
        # code that could record on this tape (an iterator, an ``__index__``) runs before ``n``
        # and ``b`` are read; an id checked against the earlier size stays valid, since a tape
        # only grows.
        cdef Py_ssize_t n0 = self.n
        cdef Py_ssize_t i, j, k, m, sid
        cdef double a
        cdef list sl = []
        cdef bint float_seeds = True
        for pair in seeds:
            i_, ct = pair
            sid = _index(i_)
            if not 0 <= sid < n0:
                raise IndexError("seed id %r is not on this tape of %d bindings" % (i_, n0))
            if type(ct) is not float:
                float_seeds = False
            sl.append((sid, ct))
        # ``wanted`` as a range (the inputs of a float argument: consecutive ids) is read
        # without making an int per id: its ends are checked, and every id lies between them.
        cdef list wl = None
        cdef Py_ssize_t nw, r0 = 0, rstep = 0
        if type(wanted) is range:
            nw = len(wanted)
            if nw:
                for i_ in (wanted[0], wanted[nw - 1]):
                    if not 0 <= i_ < n0:
                        raise IndexError("wanted id %r is not on this tape of %d bindings" % (i_, n0))
                r0 = wanted[0]
                if nw > 1:  # |step| <= |last - first| < n0: fits
                    rstep = wanted.step
        else:
            wl = []
            for w_ in wanted:
                sid = _index(w_)
                if not 0 <= sid < n0:
                    raise IndexError("wanted id %r is not on this tape of %d bindings" % (w_, n0))
                wl.append(sid)
            nw = len(wl)
        if not (float_seeds and not self.general and not self.linear):
            return self._eval_general(sl, wl if wl is not None
                                      else [r0 + m * rstep for m in range(nw)])
        global _spare_adj, _spare_adj_n
        cdef Py_ssize_t n = self.n
        cdef Binding* b = self.b
        cdef double* adj
        cdef Py_ssize_t adj_n
        if _spare_adj != NULL and _spare_adj_n >= n and not _tracing():
            adj = _spare_adj
            adj_n = _spare_adj_n
            _spare_adj = NULL
            _spare_adj_n = 0
        else:
            adj_n = n if n > 0 else 1
            adj = <double*>PyMem_Malloc(adj_n * sizeof(double))
            if adj == NULL:
                raise MemoryError("deltaad eval: out of memory for %d adjoints" % n)
        # ``b`` is read without the GIL: another thread appending to this (open) tape may
        # write past ``n`` but not move the buffer (``_grow`` refuses while sweeping).
        self.sweeping += 1
        try:
            memset(adj, 0, n * sizeof(double))
            for m in range(len(sl)):  # ids checked above; cotangents exact floats
                sid = (<tuple>sl[m])[0]
                adj[sid] += PyFloat_AS_DOUBLE((<tuple>sl[m])[1])
            with nogil:
                # Parents are always older than their binding (0 <= p < i), so every index
                # below is in bounds.
                for i in range(n - 1, -1, -1):
                    a = adj[i]
                    if a == 0.0:
                        continue
                    j = b[i].p1
                    if j >= 0:
                        adj[j] += b[i].c1 * a
                        k = b[i].p2
                        if k >= 0:
                            adj[k] += b[i].c2 * a
            if wl is None:  # every index is between the range's checked ends
                return [adj[r0 + m * rstep] for m in range(nw)]
            return [adj[<Py_ssize_t>wl[m]] for m in range(nw)]
        finally:
            self.sweeping -= 1
            if (adj_n > _spare_adj_n and adj_n * <Py_ssize_t>sizeof(double) <= SPARE_MAX_BYTES
                    and not _tracing()):
                if _spare_adj != NULL:
                    PyMem_Free(_spare_adj)
                _spare_adj = adj
                _spare_adj_n = adj_n
            else:
                PyMem_Free(adj)

    cdef list _eval_general(self, list seeds, list wanted):
        cdef Py_ssize_t n = self.n
        cdef Py_ssize_t i, j, k
        cdef list adj = [None] * n
        cdef dict ocoef = self.ocoef
        cdef dict linear = self.linear
        cdef Binding* b
        for i_, ct in seeds:
            _accumulate(adj, i_, ct)
        keep = set(wanted)
        for i in range(n - 1, -1, -1):
            a = adj[i]
            if a is None or _is_zero(a):
                continue
            b = self.b  # re-read: a vjp callback may have recorded on this tape and moved it
            j = b[i].p1
            if j == -2:
                parents, rule = linear[i]
                if callable(rule):
                    cts = rule(a)
                    for p, ct in zip(parents, cts):
                        if ct is not None:
                            _accumulate(adj, p, ct)
                else:
                    for p, c in zip(parents, rule):
                        _accumulate(adj, p, c * a)
            elif j >= 0:
                k = b[i].p2
                oc = ocoef.get(i)
                if oc is None:
                    _accumulate(adj, j, b[i].c1 * a)
                    if k >= 0:
                        _accumulate(adj, k, b[i].c2 * a)
                else:
                    _accumulate(adj, j, oc[0] * a)
                    if k >= 0:
                        _accumulate(adj, k, oc[1] * a)
            if i not in keep:
                adj[i] = None
        return [adj[w] for w in wanted]


cdef tuple _check_parents(object parents, Py_ssize_t n):
    """``parents`` as a tuple of ints, each an earlier binding (``0 <= p < n``): the general
    sweep indexes its adjoint list by them without a bounds check."""
    out = tuple([_index(p) for p in parents])
    for p in out:
        if not 0 <= p < n:
            raise ValueError("push_linear: parent %d is not an earlier binding of this tape "
                             "(it holds %d)" % (p, n))
    return out


cdef bint _is_zero(object a) except -1:
    """An adjoint that contributes exactly nothing: a float zero, or a dual of a forward level
    whose value and tangent are such zeros (a zero adjoint is skipped even where a partial is
    infinite, as in the float sweep: 0 * inf counts as 0). A tape dual is never skipped: it
    carries a derivative even where its value is 0."""
    cdef Dual d
    while True:
        if type(a) is float:
            return <double>a == 0.0
        if type(a) is not Dual or not (<Dual>a).tr.is_forward:
            return False
        d = <Dual>a
        if (d.t != 0.0) if d.ot is None else not _is_zero(d.ot):
            return False
        if d.ov is None:
            return d.v == 0.0
        a = d.ov


cdef inline void _accumulate(list adj, Py_ssize_t i, object x) except *:
    old = adj[i]
    adj[i] = x if old is None else old + x


@cython.auto_pickle(False)
cdef class ForwardLevel(Trace):
    """A forward trace: each dual carries its tangent; partials meet tangents at once (§4)."""

    def __cinit__(self, *args):
        self.is_forward = True

    def input(self, value, tangent):
        _check_lower(self, value)
        _check_lower(self, tangent)
        cdef Dual r = _new_dual(value, self, -1)
        _set_tangent(r, tangent)
        return r

    def inputs(self, values, tangents):
        """``input`` for each pair of ``values`` and ``tangents``."""
        cdef list vals = values if type(values) is list else list(values)
        cdef list tans = tangents if type(tangents) is list else list(tangents)
        cdef Py_ssize_t m = min(len(vals), len(tans))
        cdef Py_ssize_t k
        cdef Dual r
        cdef list out = [None] * m
        for k in range(m):
            _check_lower(self, vals[k])
            _check_lower(self, tans[k])
            r = _new_dual(vals[k], self, -1)
            _set_tangent(r, tans[k])
            out[k] = r
        return out

    def emit(self, value, operands, coefs):
        """Forward twin of ``Tape.push_linear`` with coefficients: sum of c_i * tangent_i."""
        operands = list(operands)
        coefs = list(coefs)
        if len(operands) != len(coefs) or not operands:
            raise ValueError("emit: one coefficient per operand, and at least one operand")
        t = None
        for x, c in zip(operands, coefs):
            if type(x) is not Dual or (<Dual>x).tr is not self:
                raise TypeError("emit: every operand must be a dual of this forward level")
            term = _tmul(c, (<Dual>x).tangent)
            t = term if t is None else t + term
        cdef Dual r = _new_dual(value, self, -1)
        _set_tangent(r, t)
        return r


# --------------------------------------------------------------------------------------------
# The dual number

@cython.final
@cython.no_gc
@cython.freelist(1024)
@cython.auto_pickle(False)
cdef class Dual:
    """A dual number ``(value, delta)``: ``value`` with ``Var id`` on ``trace`` (a tape) or with
    ``tangent`` (a forward level). ``value`` is a float or a dual of a lower level."""

    # ``ov``/``ot`` are None in the float case. They are object fields rather than raw
    # pointers released in a ``__dealloc__``: Cython wraps a ``__dealloc__`` in a save and
    # restore of the error state, which cost more per dual than the two None references.
    cdef double v       # the value, when ov is None
    cdef object ov      # the value when it is not a float (a dual of a lower level)
    cdef Trace tr
    cdef Py_ssize_t i   # Var id on a tape; -1 on a forward level
    cdef double t       # the tangent, when ot is None (forward levels only)
    cdef object ot      # the tangent when it is not a float

    def __init__(self, value, trace, id, tangent):
        if self.tr is not None:
            raise TypeError("Dual: a dual number is immutable; make a new one")
        if not isinstance(trace, (Tape, ForwardLevel)):
            raise TypeError("Dual: trace must be a deltaad Tape or ForwardLevel")
        cdef Py_ssize_t i = _check_id(<Trace>trace, id)
        _check_lower(<Trace>trace, value)
        _set_value(self, value)
        if (<Trace>trace).is_forward:
            _check_lower(<Trace>trace, tangent)
            _set_tangent(self, tangent)
        self.i = i
        self.tr = <Trace>trace

    @property
    def value(self):
        return self.v if self.ov is None else self.ov

    @property
    def trace(self):
        return self.tr

    @property
    def id(self):
        return self.i

    @property
    def tangent(self):
        if not self.tr.is_forward:
            return None
        return self.t if self.ot is None else self.ot

    # -- arithmetic: a fast path for two float duals of one trace or a dual and a float,
    #    everything else through the general path shared with _pure's logic --

    def __add__(self, other):
        cdef Dual a = <Dual>self
        if a.ov is None:
            if type(other) is Dual:
                if (<Dual>other).tr is a.tr and (<Dual>other).ov is None:
                    return _fast2(a, <Dual>other, a.v + (<Dual>other).v, 1.0, 1.0)
            elif type(other) is float:
                return _fast1(a, a.v + PyFloat_AS_DOUBLE(other), 1.0)
        return _binop(self, other, OP_ADD)

    def __radd__(self, other):
        cdef Dual b = <Dual>self
        if b.ov is None and type(other) is float:
            return _fast1(b, PyFloat_AS_DOUBLE(other) + b.v, 1.0)
        return _binop(other, self, OP_ADD)

    def __sub__(self, other):
        cdef Dual a = <Dual>self
        if a.ov is None:
            if type(other) is Dual:
                if (<Dual>other).tr is a.tr and (<Dual>other).ov is None:
                    return _fast2(a, <Dual>other, a.v - (<Dual>other).v, 1.0, -1.0)
            elif type(other) is float:
                return _fast1(a, a.v - PyFloat_AS_DOUBLE(other), 1.0)
        return _binop(self, other, OP_SUB)

    def __rsub__(self, other):
        cdef Dual b = <Dual>self
        if b.ov is None and type(other) is float:
            return _fast1(b, PyFloat_AS_DOUBLE(other) - b.v, -1.0)
        return _binop(other, self, OP_SUB)

    def __mul__(self, other):
        cdef Dual a = <Dual>self
        cdef double c
        if a.ov is None:
            if type(other) is Dual:
                if (<Dual>other).tr is a.tr and (<Dual>other).ov is None:
                    return _fast2(a, <Dual>other, a.v * (<Dual>other).v, (<Dual>other).v, a.v)
            elif type(other) is float:
                c = PyFloat_AS_DOUBLE(other)
                return _fast1(a, a.v * c, c)
        return _binop(self, other, OP_MUL)

    def __rmul__(self, other):
        cdef Dual b = <Dual>self
        cdef double c
        if b.ov is None and type(other) is float:
            c = PyFloat_AS_DOUBLE(other)
            return _fast1(b, c * b.v, c)
        return _binop(other, self, OP_MUL)

    def __truediv__(self, other):
        cdef Dual a = <Dual>self
        cdef double bv, v
        if a.ov is None:
            if type(other) is Dual:
                if (<Dual>other).tr is a.tr and (<Dual>other).ov is None:
                    bv = (<Dual>other).v
                    if bv != 0.0:
                        v = a.v / bv
                        return _fast2(a, <Dual>other, v, 1.0 / bv, -v / bv)
            elif type(other) is float:
                bv = PyFloat_AS_DOUBLE(other)
                if bv != 0.0:
                    return _fast1(a, a.v / bv, 1.0 / bv)
        return _binop(self, other, OP_DIV)

    def __rtruediv__(self, other):
        cdef Dual b = <Dual>self
        cdef double v
        if b.ov is None and type(other) is float and b.v != 0.0:
            v = PyFloat_AS_DOUBLE(other) / b.v
            return _fast1(b, v, -v / b.v)
        return _binop(other, self, OP_DIV)

    def __floordiv__(self, other):
        return _binop(self, other, OP_FLOORDIV)

    def __rfloordiv__(self, other):
        return _binop(other, self, OP_FLOORDIV)

    def __mod__(self, other):
        return _binop(self, other, OP_MOD)

    def __rmod__(self, other):
        return _binop(other, self, OP_MOD)

    def __pow__(self, other, modulo):
        cdef Dual a = <Dual>self
        cdef double x, y, r, d
        if modulo is not None:
            return NotImplemented
        # Fast path: a float dual to a constant power, away from every special case (zero
        # base, negative base with a non-integer power, overflow): there pow(x, y) and the
        # derivative y * pow(x, y - 1) are what _rules computes, bit for bit. Anything else
        # goes the general way, which also raises the errors Python's float ** raises.
        if a.ov is None and (type(other) is float or type(other) is int):
            x = a.v
            y = PyFloat_AS_DOUBLE(other) if type(other) is float else <double>float(other)
            if x != 0.0 and cm.isfinite(x) and cm.isfinite(y) and (x > 0.0 or y == cm.floor(y)):
                r = cm.pow(x, y)
                d = y * cm.pow(x, y - 1.0)
                if cm.isfinite(r) and cm.isfinite(d):
                    return _fast1(a, r, d)
        return _binop(self, other, OP_POW)

    def __rpow__(self, other, modulo):
        if modulo is not None:
            return NotImplemented
        return _binop(other, self, OP_POW)

    def __neg__(self):
        cdef Dual a = <Dual>self
        if a.ov is None:
            return _fast1(a, -a.v, -1.0)
        if a.tr.closed:
            raise escaped_error(a.tr.level)
        return _emit1(a.tr, -a.ov, a, -1.0)

    def __pos__(self):
        if self.tr.closed:
            raise escaped_error(self.tr.level)
        return self

    def __abs__(self):
        if self.ov is not None and type(strip(self.ov)) is not float:  # a numpy scalar
            if self.tr.closed:
                raise escaped_error(self.tr.level)
            y, c = _rules.numpy_abs(self.ov, strip(self.ov))
            return _emit1(self.tr, y, <Dual>self, c)
        return _unary(self, U_ABSOLUTE)

    # -- comparisons: on values, returning bool --
    def __eq__(self, other):
        return strip(self) == _cmp(other)

    def __ne__(self, other):
        return strip(self) != _cmp(other)

    def __lt__(self, other):
        if self.ov is None and type(other) is float:
            return self.v < PyFloat_AS_DOUBLE(other)
        return strip(self) < _cmp(other)

    def __le__(self, other):
        if self.ov is None and type(other) is float:
            return self.v <= PyFloat_AS_DOUBLE(other)
        return strip(self) <= _cmp(other)

    def __gt__(self, other):
        if self.ov is None and type(other) is float:
            return self.v > PyFloat_AS_DOUBLE(other)
        return strip(self) > _cmp(other)

    def __ge__(self, other):
        if self.ov is None and type(other) is float:
            return self.v >= PyFloat_AS_DOUBLE(other)
        return strip(self) >= _cmp(other)

    def __hash__(self):
        raise TypeError("unhashable type: 'Dual'")

    def __bool__(self):
        return bool(strip(self))

    def __float__(self):
        raise no_float_error("float")

    def __int__(self):
        raise no_float_error("int")

    def __complex__(self):
        raise no_float_error("complex")

    def __round__(self, ndigits=None):
        return round(strip(self), ndigits)

    def __floor__(self):
        return _math.floor(strip(self))

    def __ceil__(self):
        return _math.ceil(strip(self))

    def __trunc__(self):
        return _math.trunc(strip(self))

    def __repr__(self):
        kind = "tangent" if self.tr.is_forward else "Var %d" % self.i
        return "Dual(%r, %s, level=%d)" % (self.value, kind, self.tr.level)

    def __format__(self, spec):
        return format(strip(self), spec)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        hook = _hooks["array_ufunc"]
        if hook is None:
            return NotImplemented
        return hook(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        hook = _hooks["array_function"]
        if hook is None:
            return NotImplemented
        return hook(self, func, types, args, kwargs)

    def __reduce__(self):
        raise TypeError("a deltaad Dual cannot be pickled: use deltaad.value(x)")

    def __copy__(self):
        return self  # immutable, like a float: copy.copy and copy.deepcopy give it back

    def __deepcopy__(self, memo):
        return self

    def __divmod__(self, other):
        return _binop(self, other, OP_FLOORDIV), _binop(self, other, OP_MOD)

    def __rdivmod__(self, other):
        return _binop(other, self, OP_FLOORDIV), _binop(other, self, OP_MOD)

    # Methods numpy object arrays of duals call (np.sin(a) calls a[i].sin(), ...): the
    # elementary functions' methods are added from the table at the end of this module.
    def conjugate(self): return self
    def fmod(self, other): return lift([self, other], _math.fmod, _fmod_partials)
    def rint(self): return float(round(check_open(self)))  # half to even, as numpy; derivative 0


cdef inline int _check_lower(Trace tr, object x) except -1:
    """A value or tangent handed to a trace may be a dual only of a lower level (an outer
    differentiation): a dual of the same or an inner level would break the nesting order, and
    chains of them would make freeing a dual recurse without bound."""
    if type(x) is Dual and (<Dual>x).tr.level >= tr.level:
        raise ValueError("deltaad: a value or tangent of a trace of level %d must be a number "
                         "or a dual of a lower level (an outer differentiation), not of level %d"
                         % (tr.level, (<Dual>x).tr.level))
    return 0


cdef Py_ssize_t _check_id(Trace tr, object id) except? -2:
    """The id of a dual made by hand, converted once: on a tape, a binding the tape already
    holds (the sweep writes into ``adj[id]`` without a bounds check, relying on every parent
    being older than its binding); -1 on a forward level. ``tr`` is a Tape or ForwardLevel."""
    cdef Py_ssize_t i = _index(id)
    if tr.is_forward:
        if i != -1:
            raise ValueError("Dual: a dual of a forward level has id -1, not %r" % (id,))
    elif not 0 <= i < (<Tape>tr).n:
        raise ValueError("Dual: id %r is not a binding of this tape (it holds %d); make inputs "
                         "with Tape.input" % (id, (<Tape>tr).n))
    return i


def _fmod_partials(a, b):
    """fmod(a, b) = a - b * trunc(a / b): partials 1 and -trunc(a / b) (0 across the jumps)."""
    return 1.0, -float(_math.trunc(strip(a) / strip(b)))


cdef inline void _set_value(Dual r, object value) except *:
    if type(value) is float:  # a numpy scalar (np.float64 too) keeps its type: see _numpy_binop
        r.v = PyFloat_AS_DOUBLE(value)
        if r.ov is not None:
            r.ov = None
    elif value is None:
        raise TypeError("Dual: the value must be a number or a dual, not None")
    else:
        r.v = 0.0
        r.ov = value


cdef inline void _set_tangent(Dual r, object tangent) except *:
    if isinstance(tangent, float):
        r.t = PyFloat_AS_DOUBLE(tangent)
        if r.ot is not None:
            r.ot = None
    elif tangent is None:
        raise TypeError("Dual: the tangent must be a number, an array or a dual, not None")
    else:
        r.t = 0.0
        r.ot = tangent


cdef inline Dual _new_dual(object value, Trace tr, Py_ssize_t i):
    cdef Dual r = Dual.__new__(Dual)
    _set_value(r, value)
    r.tr = tr
    r.i = i
    return r


cdef inline Dual _fast1(Dual a, double v, double ca):
    """Result of a unary step on a float dual: one binding, or one tangent product."""
    cdef Trace tr = a.tr
    if tr.closed:
        raise escaped_error(tr.level)
    cdef Dual r = Dual.__new__(Dual)
    r.v = v
    r.tr = tr
    if tr.is_forward:
        r.i = -1
        if a.ot is None:
            r.t = ca * a.t if a.t != 0.0 else 0.0  # a zero tangent stays 0, even if ca is inf
        else:
            _set_tangent(r, _tmul(ca, a.ot))
    else:
        r.i = (<Tape>tr)._push(a.i, ca, -1, 0.0)
    return r


cdef inline Dual _fast2(Dual a, Dual b, double v, double ca, double cb):
    """Result of a binary step on two float duals of the same trace."""
    cdef Trace tr = a.tr
    if tr.closed:
        raise escaped_error(tr.level)
    cdef Dual r = Dual.__new__(Dual)
    r.v = v
    r.tr = tr
    if tr.is_forward:
        r.i = -1
        if a.ot is None and b.ot is None:
            r.t = (ca * a.t if a.t != 0.0 else 0.0) + (cb * b.t if b.t != 0.0 else 0.0)
        else:
            _set_tangent(r, _tmul(ca, a.tangent) + _tmul(cb, b.tangent))
    else:
        r.i = (<Tape>tr)._push(a.i, ca, b.i, cb)
    return r


cdef inline object _tmul(object c, object t):
    """``c * t`` for a partial ``c`` and a tangent ``t``: 0.0 when ``t`` is an exact zero (a
    zero vector maps to zero, even through an infinite or nan partial): forward mode's twin of
    the sweep skipping zero adjoints, so both modes agree at the edge of a domain."""
    if _is_zero(t):
        return 0.0
    return c * t


cdef Dual _emit1(Trace tr, object value, Dual a, object ca):
    """General twin of ``_fast1``: value and coefficient may be outer duals."""
    if type(ca) is not float and isinstance(ca, float):
        ca = float(ca)  # np.float64: swept as a float (_rules.as_float_coef)
    cdef Dual r = _new_dual(value, tr, -1)
    cdef Py_ssize_t i
    if tr.is_forward:
        _set_tangent(r, _tmul(ca, a.tangent))
    elif type(ca) is float:
        r.i = (<Tape>tr)._push(a.i, PyFloat_AS_DOUBLE(ca), -1, 0.0)
    else:
        i = (<Tape>tr)._push(a.i, 0.0, -1, 0.0)
        (<Tape>tr).ocoef[i] = (ca, 0.0)
        (<Tape>tr).general = True
        r.i = i
    return r


cdef Dual _emit2(Trace tr, object value, Dual a, object ca, Dual b, object cb):
    """General twin of ``_fast2``."""
    if type(ca) is not float and isinstance(ca, float):
        ca = float(ca)
    if type(cb) is not float and isinstance(cb, float):
        cb = float(cb)
    cdef Dual r = _new_dual(value, tr, -1)
    cdef Py_ssize_t i
    if tr.is_forward:
        _set_tangent(r, _tmul(ca, a.tangent) + _tmul(cb, b.tangent))
    elif type(ca) is float and type(cb) is float:
        r.i = (<Tape>tr)._push(a.i, PyFloat_AS_DOUBLE(ca), b.i, PyFloat_AS_DOUBLE(cb))
    else:
        i = (<Tape>tr)._push(a.i, 0.0, b.i, 0.0)
        (<Tape>tr).ocoef[i] = (ca, cb)
        (<Tape>tr).general = True
        r.i = i
    return r


cdef object _finish(Trace tr, object value, object a, bint a_on, object ca, object b, bint b_on, object cb):
    if a_on:
        if b_on:
            return _emit2(tr, value, <Dual>a, ca, <Dual>b, cb)
        return _emit1(tr, value, <Dual>a, ca)
    return _emit1(tr, value, <Dual>b, cb)


cdef object _cmp(object x):
    """The other side of a comparison: stripped, and a numpy scalar as a float (so: bool)."""
    x = strip(x)
    if type(x) is not float and type(x) is not int and isinstance(x, _numbers.Real):
        return float(x)
    return x


def strip(x):
    """The plain number under any number of dual levels."""
    while type(x) is Dual:
        if (<Dual>x).ov is None:
            return (<Dual>x).v
        x = (<Dual>x).ov
    return x


cdef object _const(object x):
    """``x`` as a constant operand: a float, a lower-level dual, or None if not a real number."""
    tx = type(x)
    if tx is float or tx is Dual:
        return x
    if tx is int or tx is bool:
        return float(x)
    if isinstance(x, _numbers.Real):
        return _rules.numpy_const(x)
    return None


cdef enum:
    OP_ADD = 0
    OP_SUB = 1
    OP_MUL = 2
    OP_DIV = 3
    OP_FLOORDIV = 4
    OP_MOD = 5
    OP_POW = 6


cdef object _binop(object a, object b, int op):
    """The general path of a binary operator, step for step as ``_pure``'s ``_split``/``_finish``."""
    cdef Trace t
    cdef Trace ta
    cdef Trace tb
    cdef bint a_on, b_on
    if type(a) is Dual:
        ta = (<Dual>a).tr
        if type(b) is Dual:
            tb = (<Dual>b).tr
            if ta is tb:
                t = ta
                a_on = True
                b_on = True
            elif ta.level < tb.level:
                t = tb
                a_on = False
                b_on = True
            else:
                t = ta
                a_on = True
                b_on = False
            if t.closed:
                raise escaped_error(t.level)
            va = (<Dual>a).value if a_on else a
            vb = (<Dual>b).value if b_on else b
        else:
            vb = _const(b)
            if vb is None:
                return NotImplemented
            t = ta
            if t.closed:
                raise escaped_error(t.level)
            a_on = True
            b_on = False
            va = (<Dual>a).value
    else:
        va = _const(a)
        if va is None:
            return NotImplemented
        t = (<Dual>b).tr
        if t.closed:
            raise escaped_error(t.level)
        a_on = False
        b_on = True
        vb = (<Dual>b).value
    if ((type(va) is not float or type(vb) is not float)
            and type(va) is not Dual and type(vb) is not Dual):
        return _numpy_binop(t, op, a, a_on, va, b, b_on, vb)
    if op == OP_ADD:
        return _finish(t, va + vb, a, a_on, 1.0, b, b_on, 1.0)
    if op == OP_SUB:
        return _finish(t, va - vb, a, a_on, 1.0, b, b_on, -1.0)
    if op == OP_MUL:
        return _finish(t, va * vb, a, a_on, vb, b, b_on, va)
    if op == OP_DIV:
        if type(vb) is float and type(va) is Dual and _numpy_under(va):
            vb = _rules.numpy_weak(vb, strip(va))  # nested, a numpy scalar below: numpy's division
        v = va / vb
        ca = 1.0 / vb if a_on else 0.0
        cb = -v / vb if b_on else 0.0
        return _finish(t, v, a, a_on, ca, b, b_on, cb)
    if op == OP_FLOORDIV:
        return strip(va) // strip(vb)
    if op == OP_MOD:
        v = va % vb
        cb = -(strip(va) // strip(vb)) if b_on else 0.0
        return _finish(t, v, a, a_on, 1.0, b, b_on, cb)
    # OP_POW
    if type(va) is float and type(vb) is float:
        v = _rules.float_pow(va, vb)
        ca = _pow_da(va, vb) if a_on else 0.0
        if b_on:
            cb = _math.log(va) * v if va > 0.0 else (0.0 if va == 0.0 else NAN)
        else:
            cb = 0.0
    else:
        v = va ** vb
        ca = _pow_da(va, vb) if a_on else 0.0
        if b_on:
            sa = strip(va)
            cb = log(va) * v if sa > 0.0 else (0.0 if sa == 0.0 else NAN)
        else:
            cb = 0.0
    return _finish(t, v, a, a_on, ca, b, b_on, cb)


cdef inline bint _numpy_under(object x):
    """True when the plain value under the dual ``x`` is a numpy scalar."""
    while type(x) is Dual:
        if (<Dual>x).ov is None:
            return False
        x = (<Dual>x).ov
    return type(x) is not float


cdef object _numpy_binop(Trace t, int op, object a, bint a_on, object va, object b, bint b_on,
                         object vb):
    """A binary operator on plain values one of which is a numpy scalar: numpy's value (computed
    here, so that numpy's warnings name the user's line), the float's partials
    (``_rules.numpy_partials``, which ``_pure`` calls too)."""
    if op == OP_ADD:
        v = va + vb
        name = "add"
    elif op == OP_SUB:
        v = va - vb
        name = "sub"
    elif op == OP_MUL:
        v = va * vb
        name = "mul"
    elif op == OP_DIV:
        v = va / vb
        name = "div"
    elif op == OP_FLOORDIV:
        return va // vb  # piecewise constant: a constant
    elif op == OP_MOD:
        v = va % vb
        name = "mod"
    else:
        v = va ** vb
        name = "pow"
    ca, cb = _rules.numpy_partials(name, va, vb)
    return _finish(t, v, a, a_on, ca, b, b_on, cb)


def check_open(x):
    """Raise if ``x`` is a dual whose trace has closed (used by the piecewise-constant functions)."""
    while type(x) is Dual:
        if (<Dual>x).tr.closed:
            raise escaped_error((<Dual>x).tr.level)
        x = (<Dual>x).value
    return x


# --------------------------------------------------------------------------------------------
# Elementary functions: a C fast path for floats and float duals (the table's formulas in C,
# for the functions named in ``_UNARY_NAMES``), and the table itself, lifted by ``lift1`` /
# ``lift2`` as in ``_pure``, for everything else (nesting, and the table's other entries).

cdef enum:
    U_SIN, U_COS, U_TAN, U_ARCSIN, U_ARCCOS, U_ARCTAN, U_SINH, U_COSH, U_TANH, U_ARCSINH,
    U_ARCCOSH, U_ARCTANH, U_EXP, U_EXPM1, U_EXP2, U_LOG, U_LOG1P, U_LOG2, U_LOG10, U_SQRT,
    U_CBRT, U_ABSOLUTE, U_ERF, U_ERFC, U_SIGMOID, U_SOFTPLUS, U_COUNT

_UNARY_NAMES = (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt",
    "cbrt", "absolute", "erf", "erfc", "sigmoid", "softplus",
)

cdef list _GENERIC = []   # code -> the table's lift of the same function (the general path)


cdef inline double _sigmoid(double x) noexcept nogil:
    cdef double e
    if x >= 0.0:
        return 1.0 / (1.0 + cm.exp(-x))
    e = cm.exp(x)
    return e / (1.0 + e)


cdef int _check(double x, double r, bint can_overflow) except -1:
    """Raise as Python's math module does for this input and result."""
    if cm.isnan(r) and not cm.isnan(x):
        raise ValueError("math domain error")
    if cm.isinf(r) and cm.isfinite(x):
        if can_overflow:
            raise OverflowError("math range error")
        raise ValueError("math domain error")
    return 0


cdef int _float_unary(int code, double x, double* y, double* d) except -1:
    """Value and derivative of unary primitive ``code`` at the float ``x``, as the table says."""
    cdef double r
    if code == U_SIN:
        r = cm.sin(x); _check(x, r, 0); d[0] = cm.cos(x)
    elif code == U_COS:
        r = cm.cos(x); _check(x, r, 0); d[0] = -cm.sin(x)
    elif code == U_TAN:
        r = cm.tan(x); _check(x, r, 0); d[0] = 1.0 + r * r
    elif code == U_ARCSIN:
        r = cm.asin(x); _check(x, r, 0); d[0] = 1.0 / cm.sqrt(1.0 - x * x)
    elif code == U_ARCCOS:
        r = cm.acos(x); _check(x, r, 0); d[0] = -(1.0 / cm.sqrt(1.0 - x * x))
    elif code == U_ARCTAN:
        r = cm.atan(x); _check(x, r, 0); d[0] = 1.0 / (1.0 + x * x)
    elif code == U_SINH:
        r = cm.sinh(x); _check(x, r, 1); d[0] = cm.cosh(x)
    elif code == U_COSH:
        r = cm.cosh(x); _check(x, r, 1); d[0] = cm.sinh(x)
    elif code == U_TANH:
        r = cm.tanh(x); _check(x, r, 0); d[0] = 1.0 - r * r
    elif code == U_ARCSINH:
        r = cm.asinh(x); _check(x, r, 0); d[0] = 1.0 / cm.sqrt(x * x + 1.0)
    elif code == U_ARCCOSH:
        r = cm.acosh(x); _check(x, r, 0); d[0] = 1.0 / cm.sqrt(x * x - 1.0)
    elif code == U_ARCTANH:
        r = cm.atanh(x); _check(x, r, 0); d[0] = 1.0 / (1.0 - x * x)
    elif code == U_EXP:
        r = cm.exp(x); _check(x, r, 1); d[0] = r
    elif code == U_EXPM1:
        r = cm.expm1(x); _check(x, r, 1); d[0] = r + 1.0
    elif code == U_EXP2:
        r = cm.exp2(x); _check(x, r, 1); d[0] = r * LN2
    elif code == U_LOG:
        if x <= 0.0 and not cm.isnan(x):
            raise ValueError("math domain error")
        r = cm.log(x); d[0] = 1.0 / x
    elif code == U_LOG1P:
        r = cm.log1p(x); _check(x, r, 0); d[0] = 1.0 / (1.0 + x)
    elif code == U_LOG2:
        if x <= 0.0 and not cm.isnan(x):
            raise ValueError("math domain error")
        r = cm.log2(x); d[0] = 1.0 / (x * LN2)
    elif code == U_LOG10:
        if x <= 0.0 and not cm.isnan(x):
            raise ValueError("math domain error")
        r = cm.log10(x); d[0] = 1.0 / (x * LN10)
    elif code == U_SQRT:
        r = cm.sqrt(x); _check(x, r, 0); d[0] = 0.5 / (r + 0.0)  # +inf at -0.0 too (ns.rdiv)
    elif code == U_CBRT:
        r = cm.cbrt(x); d[0] = 1.0 / (3.0 * (r * r))
    elif code == U_ABSOLUTE:
        r = cm.fabs(x); d[0] = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else NAN))
    elif code == U_ERF:
        r = cm.erf(x); d[0] = TWO_OVER_SQRT_PI * cm.exp(-(x * x))
    elif code == U_ERFC:
        r = cm.erfc(x); d[0] = -(TWO_OVER_SQRT_PI * cm.exp(-(x * x)))
    elif code == U_SIGMOID:
        r = _sigmoid(x); d[0] = r * (1.0 - r)
    elif code == U_SOFTPLUS:
        r = cm.log1p(cm.exp(-cm.fabs(x))) + (x if x > 0.0 else 0.0); d[0] = _sigmoid(x)
    else:
        raise SystemError("deltaad: unknown unary primitive %d" % code)
    y[0] = r
    return 0


cdef object _unary(object x, int code):
    """Apply unary primitive ``code`` to a float, an int, a dual, or (via numpy) anything else."""
    cdef double y, d
    cdef Dual a
    tx = type(x)
    if tx is float:
        _float_unary(code, PyFloat_AS_DOUBLE(x), &y, &d)
        return y
    if tx is Dual:
        a = <Dual>x
        if a.tr.closed:
            raise escaped_error(a.tr.level)
        if a.ov is None:
            _float_unary(code, a.v, &y, &d)
            return _fast1(a, y, d)
        return _GENERIC[code](x)  # the value is a dual of an outer differentiation
    if tx is int or tx is bool or isinstance(x, _numbers.Real):
        _float_unary(code, float(x), &y, &d)
        return y
    return _fallback(_UNARY_NAMES[code], x)


def _fallback(name, *args):
    hook = _hooks["fallback"]
    if hook is None:
        raise TypeError("deltaad.%s: unsupported argument types %s" % (name, [type(a).__name__ for a in args]))
    return hook(name, *args)


def sin(x): return _unary(x, U_SIN)
def cos(x): return _unary(x, U_COS)
def tan(x): return _unary(x, U_TAN)
def arcsin(x): return _unary(x, U_ARCSIN)
def arccos(x): return _unary(x, U_ARCCOS)
def arctan(x): return _unary(x, U_ARCTAN)
def sinh(x): return _unary(x, U_SINH)
def cosh(x): return _unary(x, U_COSH)
def tanh(x): return _unary(x, U_TANH)
def arcsinh(x): return _unary(x, U_ARCSINH)
def arccosh(x): return _unary(x, U_ARCCOSH)
def arctanh(x): return _unary(x, U_ARCTANH)
def exp(x): return _unary(x, U_EXP)
def expm1(x): return _unary(x, U_EXPM1)
def exp2(x): return _unary(x, U_EXP2)
def log(x): return _unary(x, U_LOG)
def log1p(x): return _unary(x, U_LOG1P)
def log2(x): return _unary(x, U_LOG2)
def log10(x): return _unary(x, U_LOG10)
def sqrt(x): return _unary(x, U_SQRT)
def cbrt(x): return _unary(x, U_CBRT)
def absolute(x): return _unary(x, U_ABSOLUTE)
def erf(x): return _unary(x, U_ERF)
def erfc(x): return _unary(x, U_ERFC)
def sigmoid(x): return _unary(x, U_SIGMOID)
def softplus(x): return _unary(x, U_SOFTPLUS)


def lift1(name, f, derivative, ns=None, plain=None):
    """The scalar function of a unary table entry, as ``_pure.lift1``: ``f`` on floats; on a
    dual, one binding with coefficient ``derivative(ns, x, y)`` (``ns`` defaults to ``NS``)."""
    if ns is None:
        ns = NS

    def fn(x):
        tx = type(x)
        if tx is float:
            return f(x)
        if tx is Dual:
            t = (<Dual>x).tr
            if t.closed:
                raise escaped_error(t.level)
            v = (<Dual>x).value
            if type(v) is float:
                y = f(v)
            elif type(v) is not Dual:
                # a numpy scalar: the value is the plain program's (``plain``, numpy's function
                # on it, in its type), the derivative the float's
                if plain is not None:
                    yp = plain(v)
                    return _emit1(t, yp, <Dual>x, derivative(ns, float(v), float(yp)))
                v = float(v)
                y = f(v)
            else:
                y = fn(v)
            return _emit1(t, y, <Dual>x, derivative(ns, v, y))
        if tx is int or tx is bool or isinstance(x, _numbers.Real):
            return f(float(x))
        return _fallback(name, x)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = "%s of a float or a dual (elementwise numpy for arrays)." % name
    return fn


def lift2(name, f, partials, ns=None, plain=None):
    """The scalar function of a binary table entry: ``f`` on floats, ``partials(NS, a, b, y)
    -> (da, db)`` on duals (``ns`` defaults to ``NS``)."""
    if ns is None:
        ns = NS

    def fn(a, b):
        if type(a) is not Dual and type(b) is not Dual:
            va = _const(a)
            vb = _const(b)
            if va is None or vb is None:
                return _fallback(name, a, b)
            return f(va, vb)
        s = _split_py(a, b)
        if s is None:
            return _fallback(name, a, b)
        t, a_on, b_on, va, vb = s
        if type(va) is float and type(vb) is float:
            y = f(va, vb)
        elif type(va) is not Dual and type(vb) is not Dual:  # a numpy scalar: as in lift1
            if plain is not None:
                yp = plain(va, vb)
                da, db = partials(ns, float(va), float(vb), float(yp))
                return _finish(<Trace>t, yp, a, a_on, da, b, b_on, db)
            va = float(va)
            vb = float(vb)
            y = f(va, vb)
        else:
            y = fn(va, vb)
        da, db = partials(ns, va, vb, y)
        return _finish(<Trace>t, y, a, a_on, da, b, b_on, db)

    fn.__name__ = name
    fn.__qualname__ = name
    return fn


cdef tuple _split_py(object a, object b):
    """``(trace, a_on, b_on, va, vb)`` for the trace of highest level, or None (see _pure)."""
    cdef Trace ta, tb
    if type(a) is Dual:
        ta = (<Dual>a).tr
        if type(b) is Dual:
            tb = (<Dual>b).tr
            if ta is tb:
                if ta.closed:
                    raise escaped_error(ta.level)
                return ta, True, True, (<Dual>a).value, (<Dual>b).value
            if ta.level < tb.level:
                if tb.closed:
                    raise escaped_error(tb.level)
                return tb, False, True, a, (<Dual>b).value
            if ta.closed:
                raise escaped_error(ta.level)
            return ta, True, False, (<Dual>a).value, b
        vb = _const(b)
        if vb is None:
            return None
        if ta.closed:
            raise escaped_error(ta.level)
        return ta, True, False, (<Dual>a).value, vb
    va = _const(a)
    if va is None:
        return None
    tb = (<Dual>b).tr
    if tb.closed:
        raise escaped_error(tb.level)
    return tb, False, True, va, (<Dual>b).value


def power(a, b):
    """``a ** b`` on floats or duals (a ValueError where the real power does not exist)."""
    if type(a) is not Dual and type(b) is not Dual:
        va = _const(a)
        vb = _const(b)
        if va is None or vb is None:
            return _fallback("power", a, b)
        return _rules.float_pow(va, vb)
    r = _binop(a, b, OP_POW)
    if r is NotImplemented:
        return _fallback("power", a, b)
    return r


def lift(operands, f, partials):
    """Apply a primitive of n reals (paper Fig. 14) to ``operands``; see ``_pure.lift``."""
    cdef Trace top = None
    operands = list(operands)
    for x in operands:
        if type(x) is Dual and (top is None or (<Dual>x).tr.level > top.level):
            top = (<Dual>x).tr
    if top is None:
        return f(*operands)
    if top.closed:
        raise escaped_error(top.level)
    on = [type(x) is Dual and (<Dual>x).tr is top for x in operands]
    vals = [(<Dual>x).value if o else x for x, o in zip(operands, on)]
    y = lift(vals, f, partials)
    cs = tuple(partials(*vals))
    if len(cs) != len(on):
        raise ValueError("lift: partials gave %d coefficient(s) for %d operand(s)" % (len(cs), len(on)))
    duals = [x for x, o in zip(operands, on) if o]
    coefs = tuple(c for c, o in zip(cs, on) if o)
    if top.is_forward:
        return (<ForwardLevel>top).emit(y, duals, coefs)
    if len(duals) == 1:
        return _emit1(top, y, <Dual>duals[0], coefs[0])
    if len(duals) == 2:
        return _emit2(top, y, <Dual>duals[0], coefs[0], <Dual>duals[1], coefs[1])
    i = (<Tape>top).push_linear([(<Dual>x).i for x in duals], coefs)
    return _new_dual_id(y, top, i)


cdef Dual _new_dual_id(object value, Trace tr, Py_ssize_t i):
    return _new_dual(value, tr, i)



# The derivative namespace and the table's functions: the C fast function where there is one
# (its general path calls the table's lift), the lift itself otherwise.
NS = _rules.namespace(strip, lift)
_methods = {}
_GENERIC.extend([None] * U_COUNT)
_C_CODES = {_name: _code for _code, _name in enumerate(_UNARY_NAMES)}
for _e in _table.TABLE:
    _fn = _table.lift(_e, lift1, lift2, _fallback, Dual)
    if _e.name in _C_CODES:
        _GENERIC[_C_CODES[_e.name]] = _fn
    else:
        globals()[_e.name] = _fn
    setattr(NS, _e.name, globals()[_e.name])
    for _u in _e.ufuncs:
        if not isinstance(_u, str):
            _methods[_u.__name__] = globals()[_e.name]
_methods.update(_rules.SCALAR_ATTRIBUTES)  # shape, ndim, size, dtype, as numpy's scalars
if None in _GENERIC:  # the C copy names a function the table does not have
    raise ImportError("deltaad._core: C fast paths without a table entry: %s"
                      % [n for n, g in zip(_UNARY_NAMES, _GENERIC) if g is None])
_ipow, _pow_da = _rules.pow_rules(strip, lift)


def _dual_new(*args, **kwargs):
    raise TypeError(DUAL_NEW)


# ``Dual.__new__(Dual)`` from Python would give a dual whose trace is None, which the hot path
# (no None checks) must never see; ``Dual(...)`` and this module's own ``Dual.__new__`` (a
# direct call of the type's C slot) are unaffected. Cython patches ``__reduce__`` into type
# dicts the same way.
(<dict><object>(<PyTypeObject*>Dual).tp_dict)["__new__"] = staticmethod(_dual_new)
# The table's functions as methods, for numpy object arrays (a final type cannot be given
# attributes from Python; this is the same type-dict patch).
(<dict><object>(<PyTypeObject*>Dual).tp_dict).update(_methods)
PyType_Modified(<PyTypeObject*>Dual)

# Python writes the name of a type into its own error messages ("unsupported operand type(s)
# for @: 'Dual' and 'float'") from its C-level tp_name, which for a Cython class carries the
# module: 'deltaad._core.Dual'. The pure twin's classes are named 'Dual', 'Tape', ...: name
# these the same, so that both backends say the same thing. (A static type's ``__module__``
# is read from that name, so it becomes 'builtins'; nothing here relies on it.)
(<PyTypeObject*>Trace).tp_name = "Trace"
(<PyTypeObject*>Tape).tp_name = "Tape"
(<PyTypeObject*>ForwardLevel).tp_name = "ForwardLevel"
(<PyTypeObject*>Dual).tp_name = "Dual"
for _t in (Trace, Tape, ForwardLevel, Dual):
    PyType_Modified(<PyTypeObject*>_t)
