# cython: language_level=3
"""The compiled fast path of array duals (``deltaad._arrays``): the commonest elementwise
operations on small float64 arrays, recorded without running Python code.

What :func:`deltaad.numpy.array.apply` does for ``np.sin(x)``, ``x + y``, ``2.0 * x``, ``x ** 3``
-- compute the value with numpy, compute the partial derivatives the primitive's ``vjp`` keeps,
push a linear binding whose rule the backward sweep calls -- done here in C: the values and
cotangents are computed by numpy's own inner loops (the function pointers of the ufunc's
float64 loop, called on the arrays' buffers with the lengths and strides numpy's ufunc
machinery passes them), so every bit is numpy's, and the rule is a small object
(:class:`ArrayRule`) whose ``__call__`` runs those loops, where the Python path keeps a closure
that calls the ufuncs. The arithmetic is the Python path's, operation by operation (the same
loops on the same operands in the same order): the pure backend, which always takes the Python
path, gives the same bits.

Only the plain case is taken: a reverse tape of the compiled core, operands that are array
duals of that tape with C-contiguous native float64 values of one shape, Python floats (and
ints that are exact as floats) or constant float64 arrays of that shape, no broadcasting, and no
floating-point exception raised by any loop (numpy would warn or raise by ``np.errstate``:
the Python path is taken instead, from the start, and does exactly that). Everything else --
forward levels, nesting, float32, broadcasting, a user's rule registered over numpy's, a
cotangent that is not such an array -- goes the Python way (the rule then builds the Python
closure lazily from the same operands: the partials are recomputed, bit for bit the same).
A cotangent that is a broadcast float64 array (a reduction's ``np.broadcast_to``) is read
where it lies, row by row, short rows gathered a block at a time into a cache-sized buffer,
never copied whole (elementwise loops give the same bits on either; see ``_ct_loop``).

What the loops decline on a reverse tape (broadcasting, float32, strided views, products of
matrices) takes the general lane where the registry's function is ``apply(prim, args)``: the
Python path's own calls (numpy's function, ``prim.vjp``'s rule) without its frames (see
``_general``).

Besides the loops: a 1-D array dual times a constant float64 matrix (``x @ M``, ``M @ x``)
calls numpy's ``matmul`` on the values, and its rule the same numpy calls the Python rule
makes (reshape, matmul by the swapped matrix, reshape), so BLAS or not, the bits are those.

Besides: basic indexing, ``np.concatenate`` and ``np.maximum``/``np.minimum`` with a float
bound, the short paths of stencil code (see their section). An underflow alone does not send
an operation the Python way where numpy's error state ignores it (its default), as numpy then
says nothing either.

Per operation the binding is pushed through the core's C entry (``_core.array_push_capsule``),
which keeps the parents' ids and the rule in the C binding itself (no tuple, no dict entry, no
Python int per parent), and pulled back by the general sweep through ours (``pull_capsule``):
no Python call, no tuple of cotangents zipped with the parents. sin's and cos's partials are
made by the sweep, in a scratch buffer, instead of being kept on the tape; the sweep's own
adjoint sums (arrays no one else holds) are added in place; and small arrays that nothing
holds any more are reused (see ``_empty_like``).
"""

cimport cython
cimport numpy as cnp
from cpython.object cimport PyObject, PyTypeObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_REFCNT
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_GetPointer
from cpython.long cimport PyLong_AsSsize_t, PyLong_AsLongLongAndOverflow
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.slice cimport PySlice_Unpack, PySlice_AdjustIndices
from cpython.list cimport PyList_GET_ITEM
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from libc.string cimport memcpy, memset
from libc.math cimport isfinite, fabs

cdef extern from "<fenv.h>" nogil:
    int fetestexcept(int)
    int FE_DIVBYZERO
    int FE_OVERFLOW
    int FE_UNDERFLOW
    int FE_INVALID

cdef extern from "_fpe.h" nogil:
    void dad_clear_fpe(int)  # feclearexcept, only where a flag is set (a test is ~6x cheaper)

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    PyObject* PyType_GenericAlloc(PyTypeObject* tp, Py_ssize_t n)

cnp.import_array()
cnp.import_umath()

ctypedef cnp.npy_intp intp

# operation codes (the ufuncs taken; HELPERS are loops the derivatives use)
cdef enum:
    ADD = 0
    SUB
    MUL
    DIV
    POW
    NEG
    SIN
    COS
    TAN
    TANH
    EXP
    LOG
    SQRT
    SQUARE
    ABS
    ARCTAN
    SINH
    COSH
    EXPM1
    LOG1P
    RECIP
    SIGN
    MATMUL  # not a loop of ours: numpy's matmul called on the values (see _matmul)
    MAXIMUM  # with a float bound (see _choice)
    MINIMUM
    NCODES

cdef int _FPE = 0  # set in setup: the floating-point exceptions that send us the Python way

# numpy's error state (``np.errstate``): a context variable holding a capsule; an underflow
# alone sends us the Python way only when that state does not ignore it (numpy's default
# ignores it: a long chain of partials below 1 underflows in its cotangents' tails)
cdef object _extobj_var = None      # numpy's context variable
cdef object _get_extobj_dict = None
cdef object _extobj_seen = None     # the state last read (held: its identity stays unique)
cdef bint _under_ignored = True     # whether it ignores an underflow


try:  # numpy >= 2: its error state is a context variable
    from numpy._core._multiarray_umath import (_extobj_contextvar as _extobj_var,
                                               _get_extobj_dict)
except ImportError:  # (an underflow then always sends us the Python way)
    pass


cdef bint _underflow_ignored() except -1:
    global _extobj_seen, _under_ignored
    if _extobj_var is None:
        return False
    e = _extobj_var.get()
    if e is not _extobj_seen:
        _under_ignored = _get_extobj_dict()["under"] == "ignore"
        _extobj_seen = e
    return _under_ignored


cdef inline bint _raised() except -1:
    """Whether the loops since ``dad_clear_fpe(_FPE)`` signalled an exception numpy would
    warn of or raise (an underflow only where its error state does not ignore it)."""
    cdef int f = fetestexcept(_FPE)
    if f == 0:
        return False
    if f == FE_UNDERFLOW:
        return not _underflow_ignored()
    return True

cdef struct Loop:
    cnp.PyUFuncGenericFunction f
    void* data

cdef Loop LOOPS[NCODES]
cdef bint _ready = False
cdef bint enabled = True  # switched off by tests to compare with the Python path

cdef object ArrayDual = None
cdef object Tape = None
cdef dict _UFUNCS = None       # registry.UFUNCS: the fast path only while a code's rule is ours
cdef dict _CODES = {}          # ufunc -> code
cdef list _FNS = [None] * NCODES    # code -> the registry's function the fast path stands for
cdef list _PRIMS = [None] * NCODES  # code -> its Primitive (for the lazy Python rule)
cdef object _python_rule = None     # array.python_rule(prim, out, vals, on, keep)
# the core's push of a binding (``_core.array_push_capsule``): Tape.push_linear without its
# Python call, the parents' ids as C integers (-1: no second parent), kept in the binding
# itself (no tuple, no dict entry)
ctypedef object (*push_t)(object, Py_ssize_t, Py_ssize_t, object)
cdef push_t _PUSH = NULL
# where the array dual's slots live in its instances (read and written without a lookup)
cdef Py_ssize_t OFF_VALUE = 0, OFF_TRACE = 0, OFF_ID = 0, OFF_TANGENT = 0
cdef object _NOTHING = object()     # "not taken here"


cdef int _find_loop(cnp.ufunc u, int code) except -1:
    """The ufunc's loop for all-float64 operands (what numpy's legacy loop selector picks)."""
    cdef int nargs = u.nargs
    cdef int k, j
    cdef bint ok
    for k in range(u.ntypes):
        ok = True
        for j in range(nargs):
            if u.types[k * nargs + j] != cnp.NPY_DOUBLE:
                ok = False
                break
        if ok:
            LOOPS[code].f = u.functions[k]
            LOOPS[code].data = u.data[k]
            return 0
    raise RuntimeError("numpy.%s has no float64 loop" % u.__name__)


def setup(array_dual, tape, push, ufuncs, registry_ufuncs, functions, prims, python_rule):
    """Bind the fast path to the Python side: the array dual's class, the core's tape class
    and its push (``_core.array_push_capsule()``), the ufuncs by code (``ufuncs[code]``), the
    registry's ufunc table, the functions the fast path stands for (``functions[code]``; None
    for the helpers), their primitives, and the builder of the Python rule."""
    global ArrayDual, Tape, _UFUNCS, _python_rule, _ready, _FPE
    cdef int code
    if len(ufuncs) != NCODES:
        raise ValueError("setup: %d ufuncs for %d codes" % (len(ufuncs), NCODES))
    global _MATMUL
    _MATMUL = ufuncs[MATMUL]
    for code in range(NCODES):
        if code != MATMUL:
            _find_loop(ufuncs[code], code)
        _FNS[code] = functions[code]
        _PRIMS[code] = prims[code]
        if functions[code] is not None:
            _CODES[ufuncs[code]] = code
    if array_dual.__bases__ != (object,) or array_dual.__new__ is not object.__new__:
        raise TypeError("setup: %s must be a plain class (its instances are allocated here as "
                        "object.__new__ allocates them)" % array_dual.__name__)
    ArrayDual = array_dual
    Tape = tape
    global _PUSH, OFF_VALUE, OFF_TRACE, OFF_ID, OFF_TANGENT
    _PUSH = <push_t>PyCapsule_GetPointer(push, "deltaad._core.push_array")
    offsets = []
    for name in ("value", "trace", "id", "tangent"):
        descr = array_dual.__dict__[name]
        if type(descr).__name__ != "member_descriptor":
            raise TypeError("setup: %s.%s is not a slot" % (array_dual.__name__, name))
        offsets.append((<PyMemberDescrObject*><PyObject*>descr).d_member.offset)
    OFF_VALUE, OFF_TRACE, OFF_ID, OFF_TANGENT = offsets
    _UFUNCS = registry_ufuncs
    _python_rule = python_rule
    _FPE = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID
    _ready = True


# --------------------------------------------------------------------------------------------
# numpy's loops on buffers

cdef inline bint _plain(object v):
    """A value the loops take: an exact ndarray, native float64, C-contiguous, aligned, not
    empty."""
    if type(v) is not cnp.ndarray:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>v
    return (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISCARRAY_RO(a)
            and cnp.PyArray_SIZE(a) > 0)


cdef inline bint _same_shape(cnp.ndarray a, cnp.ndarray b):
    cdef int nd = cnp.PyArray_NDIM(a)
    cdef int k
    if cnp.PyArray_NDIM(b) != nd:
        return False
    cdef intp* da = cnp.PyArray_DIMS(a)
    cdef intp* db = cnp.PyArray_DIMS(b)
    for k in range(nd):
        if da[k] != db[k]:
            return False
    return True


# Kept arrays. A small array costs numpy about as much to make and free (~1100 instructions)
# as the rest of a fast operation, and a gradient makes one per value, partial and cotangent,
# then frees them all when its tape dies. So every array of at most POOL_N entries made here
# is also held in a ring for its number of entries (the arrays of one size line up, whatever
# the shapes of the others), handed out in turn and started again at its first slot on a new
# tape (the next gradient finds the arrays the last one made, in order): one that nothing
# else holds any more (reference count 1, no weak reference, no base, its own C-ordered
# aligned writeable native float64 memory, the shape wanted) is reused, its entries all
# overwritten by the loop that makes the new array. A ring holds about RING_BYTES of arrays
# (``_RING_CAP``), so that a long program lapping it meets arrays still in the caches (a ring
# of 4096 slots handed out arrays last touched thousands of operations before: a cache miss
# each, the larger part of a long program's growth). An array still held when its slot comes
# round (a value a rule keeps until the tape dies) is parked in a first-in first-out queue of
# PARK_MAX: the rings take their new arrays from the queue's head once their holders let go
# (the next lap of a gradient finds the arrays the last one kept), else from numpy. An array
# someone holds (a result, a view's base, a weak reference) is never touched. Off while
# tracemalloc traces (read when an operation records on a tape other than the last one), so
# memory measurements see every array; ``release()`` empties the rings and the queue.
cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyArrayObject_fields:
        PyObject* weakreflist

cdef enum:
    POOL_MAX = 512      # a ring's slots at most (of one-entry arrays)
    POOL_N = 64
    PARK_MAX = 16384
    RING_BYTES = 98304
cdef PyObject* _pool[POOL_N + 1][POOL_MAX]
cdef PyObject* _park[PARK_MAX]
cdef Py_ssize_t _park_head = 0  # the oldest parked array's slot
cdef Py_ssize_t _park_n = 0     # arrays parked
cdef Py_ssize_t _pool_n[POOL_N + 1]   # slots filled, by size
cdef Py_ssize_t _pool_at[POOL_N + 1]  # the next slot to hand out, by size
cdef bint _pool_on = True
cdef PyObject* _pool_trace = NULL  # the tape last recorded on (compared, never dereferenced)
cdef Py_ssize_t _pool_last = 0     # the id of the binding last pushed
import _tracemalloc
cdef object _tm_is_tracing = _tracemalloc.is_tracing


cdef inline bint _reusable(PyObject* o, int nd, intp* dims) noexcept:
    """Whether the kept array ``o`` is held by nothing else and has the shape ``dims``."""
    if o.ob_refcnt != 1 or o.ob_type != <PyTypeObject*>cnp.ndarray:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>o
    return ((<PyArrayObject_fields*>o).weakreflist == NULL and cnp.PyArray_BASE(a) == NULL
            and cnp.PyArray_CHKFLAGS(a, cnp.NPY_ARRAY_CARRAY | cnp.NPY_ARRAY_OWNDATA)
            and cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISNOTSWAPPED(a)
            and _has_shape(a, nd, dims))


cdef inline bint _has_shape(cnp.ndarray a, int nd, intp* dims) noexcept:
    cdef int k
    if cnp.PyArray_NDIM(a) != nd:
        return False
    cdef intp* da = cnp.PyArray_DIMS(a)
    for k in range(nd):
        if da[k] != dims[k]:
            return False
    return True


cdef inline cnp.ndarray _empty_like(cnp.ndarray a):
    """A C-ordered float64 array of ``a``'s shape whose entries the caller overwrites all."""
    return _empty_shape(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a), cnp.PyArray_SIZE(a))


cdef cnp.ndarray _empty_shape(int nd, intp* dims, intp size):
    """A C-ordered float64 array of shape ``dims`` (``size`` entries) whose entries the caller
    overwrites all."""
    if not _pool_on or size > POOL_N:
        return <cnp.ndarray>cnp.PyArray_SimpleNew(nd, dims, cnp.NPY_DOUBLE)
    if _sweeping:
        return _ring_take(_spool[size], &_spool_n[size], &_spool_at[size], _RING_CAP[size],
                          nd, dims)
    return _ring_take(_pool[size], &_pool_n[size], &_pool_at[size], _RING_CAP[size], nd, dims)


# The slots of the ring of arrays of each size: about RING_BYTES of arrays (an array object,
# its shape and its entries: ~200 bytes and 8 a entry)
cdef Py_ssize_t _RING_CAP[POOL_N + 1]
for _z in range(POOL_N + 1):
    _RING_CAP[_z] = min(RING_BYTES // (200 + 8 * _z), POOL_MAX)
del _z


cdef cnp.ndarray _ring_take(PyObject** ring, Py_ssize_t* filled, Py_ssize_t* at,
                            Py_ssize_t cap, int nd, intp* dims):
    """The next slot's array of a ring of kept arrays, or another in its place (the parked
    queue's oldest when free, else a new one)."""
    cdef Py_ssize_t k = at[0] if at[0] < cap else 0
    cdef PyObject* o
    cdef PyObject* n
    at[0] = k + 1
    if k < filled[0] and _reusable(ring[k], nd, dims):
        return <cnp.ndarray>ring[k]
    n = _unpark(nd, dims)
    if n == NULL:
        r = cnp.PyArray_SimpleNew(nd, dims, cnp.NPY_DOUBLE)
        Py_INCREF(r)
        n = <PyObject*>r
    if k < filled[0]:
        o = ring[k]
        ring[k] = n
        if o.ob_refcnt > 1 and _park_n < PARK_MAX:  # held: parked until let go
            _park_push(o)
        else:
            Py_DECREF(<object>o)  # the ring is consistent should freeing it run Python code
    else:
        ring[k] = n
        filled[0] = k + 1
    return <cnp.ndarray>n


cdef inline void _park_push(PyObject* o) noexcept:
    """Put ``o`` (its reference handed over) at the back of the parked queue (not full)."""
    global _park_n
    _park[(_park_head + _park_n) % PARK_MAX] = o
    _park_n += 1


cdef inline PyObject* _park_pop() noexcept:
    """Take the parked queue's oldest array (not empty; its reference handed over)."""
    global _park_head, _park_n
    cdef PyObject* o = _park[_park_head]
    _park[_park_head] = NULL
    _park_head = (_park_head + 1) % PARK_MAX
    _park_n -= 1
    return o


cdef PyObject* _unpark(int nd, intp* dims) noexcept:
    """The parked queue's oldest array (its reference handed over) if nothing else holds
    it and it has the shape ``dims``, else NULL. An oldest one of another shape that nothing
    holds is let go (a queue full of a finished program's shapes would serve no other), and
    one still held goes to the back of the queue (it does not block the others)."""
    cdef PyObject* o
    cdef int tries
    for tries in range(2):
        if _park_n == 0:
            return NULL
        o = _park_pop()
        if _reusable(o, nd, dims):
            return o
        if o.ob_refcnt != 1:
            _park_push(o)
            return NULL
        Py_DECREF(<object>o)
    return NULL


# The sweep's own ring: the cotangents and adjoint sums the fast rules make die a few bindings
# later, while the main ring's slots may hold values the tape keeps. It starts again at its
# first slot on a new sweep (another adjoint list); adjoints held past their slot's turn are
# parked as the main ring's are
cdef PyObject* _spool[POOL_N + 1][POOL_MAX]
cdef Py_ssize_t _spool_n[POOL_N + 1]
cdef Py_ssize_t _spool_at[POOL_N + 1]
cdef bint _sweeping = False
cdef PyObject* _spool_adj = NULL  # the sweep's adjoint list (compared, never dereferenced)


cdef int _pull_sweeping(object rule, Py_ssize_t p1, Py_ssize_t p2, list adj,
                        object ct) except -1:
    """``_pull`` taking its new arrays from the sweep's ring."""
    global _sweeping, _spool_adj
    if <PyObject*>adj != _spool_adj:
        _spool_adj = <PyObject*>adj
        memset(_spool_at, 0, sizeof(_spool_at))
    _sweeping = True
    try:
        return _pull(rule, p1, p2, adj, ct)
    finally:
        _sweeping = False


cdef inline int _pool_check(object trace) except -1:
    """Refresh ``_pool_on`` when recording on another tape than the last."""
    global _pool_trace, _pool_on
    if <PyObject*>trace != _pool_trace:
        _pool_trace = <PyObject*>trace
        _pool_on = not _tm_is_tracing()
    return 0


cdef inline int _pool_pushed(Py_ssize_t i) except -1:
    """After pushing binding ``i``: a lower id than the last one's starts a new tape (or
    follows a truncation), and the ring's next lap."""
    global _pool_last, _pool_on
    if i < _pool_last:
        memset(_pool_at, 0, sizeof(_pool_at))
        _pool_on = not _tm_is_tracing()
    _pool_last = i
    return 0


cdef int _empty_ring(PyObject** ring, Py_ssize_t* filled, Py_ssize_t* at) except -1:
    """Let go of a ring's arrays (the ring consistent at each step: freeing one may run
    Python code)."""
    cdef PyObject* o
    while filled[0] > 0:
        filled[0] -= 1
        o = ring[filled[0]]
        ring[filled[0]] = NULL
        Py_DECREF(<object>o)
    at[0] = 0
    return 0


def release():
    """Let go of the kept arrays (see ``_empty_like``) and the swapped matrix (see ``_swap``)."""
    global _park_head, _swap_of, _swapped
    cdef PyObject* o
    cdef Py_ssize_t z
    for z in range(POOL_N + 1):
        _empty_ring(_pool[z], &_pool_n[z], &_pool_at[z])
        _empty_ring(_spool[z], &_spool_n[z], &_spool_at[z])
    while _park_n > 0:
        o = _park_pop()
        Py_DECREF(<object>o)
    _park_head = 0
    _swap_of = _swapped = None


# An operand of a loop: an array's buffer (step 8) or a scalar (step 0), as numpy passes a
# 0-d operand broadcast against an array.
cdef struct Opnd:
    char* p
    intp step
    double s


cdef inline void _arr(Opnd* o, cnp.ndarray a) noexcept:
    o.p = cnp.PyArray_BYTES(a)
    o.step = 8


cdef inline void _sc(Opnd* o, double s) noexcept:
    o.s = s
    o.p = <char*>&o.s
    o.step = 0


cdef inline cnp.ndarray _loop1(int code, Opnd* x, cnp.ndarray like, intp n):
    cdef cnp.ndarray out = _empty_like(like)
    cdef char* args[2]
    cdef intp steps[2]
    args[0] = x.p
    args[1] = cnp.PyArray_BYTES(out)
    steps[0] = x.step
    steps[1] = 8
    LOOPS[code].f(args, &n, steps, LOOPS[code].data)
    return out


cdef inline cnp.ndarray _loop2(int code, Opnd* a, Opnd* b, cnp.ndarray like, intp n):
    cdef cnp.ndarray out = _empty_like(like)
    cdef char* args[3]
    cdef intp steps[3]
    args[0] = a.p
    args[1] = b.p
    args[2] = cnp.PyArray_BYTES(out)
    steps[0] = a.step
    steps[1] = b.step
    steps[2] = 8
    LOOPS[code].f(args, &n, steps, LOOPS[code].data)
    return out


cdef inline cnp.ndarray _u(int code, cnp.ndarray x, intp n):
    cdef Opnd o
    _arr(&o, x)
    return _loop1(code, &o, x, n)


cdef inline cnp.ndarray _aa(int code, cnp.ndarray a, cnp.ndarray b, intp n):
    cdef Opnd oa, ob
    _arr(&oa, a)
    _arr(&ob, b)
    return _loop2(code, &oa, &ob, a, n)


cdef inline cnp.ndarray _sa(int code, double a, cnp.ndarray b, intp n):
    cdef Opnd oa, ob
    _sc(&oa, a)
    _arr(&ob, b)
    return _loop2(code, &oa, &ob, b, n)


cdef inline cnp.ndarray _as(int code, cnp.ndarray a, double b, intp n):
    cdef Opnd oa, ob
    _arr(&oa, a)
    _sc(&ob, b)
    return _loop2(code, &oa, &ob, a, n)


cdef inline bint _any_zero(cnp.ndarray a, intp n) noexcept:
    """``(a == 0).any()``."""
    cdef double* p = <double*>cnp.PyArray_BYTES(a)
    cdef intp k
    for k in range(n):
        if p[k] == 0.0:
            return True
    return False


cdef inline bint _normal(cnp.ndarray a, intp n) noexcept:
    """No entry is subnormal (where sin signals an underflow and cos does not)."""
    cdef double* p = <double*>cnp.PyArray_BYTES(a)
    cdef intp k
    for k in range(n):
        if p[k] != 0.0 and fabs(p[k]) < 2.2250738585072014e-308:
            return False
    return True


cdef inline bint _finite_sum(cnp.ndarray a, intp n) noexcept:
    """True when numpy's ``a.sum()`` is surely finite: every entry finite and the sum of their
    magnitudes far from overflow (in any order of addition). Else the Python path decides."""
    cdef double* p = <double*>cnp.PyArray_BYTES(a)
    cdef double s = 0.0
    cdef intp k
    for k in range(n):
        if not isfinite(p[k]):
            return False
        s += fabs(p[k])
    return s < 1e300


# How a rule reads its cotangent: as a C-ordered array, or row by row from a broadcast view
# (a reduction's rule spreads its cotangent by ``np.broadcast_to``): elementwise loops give the
# same bits on either, and the view is not copied (a copy of a spread (k, n, d) cotangent
# cost as much as the rule's own loop).
cdef enum:
    CT_NONE = 0     # not taken: the Python rule
    CT_PLAIN = 1    # a plain array (C-ordered)
    CT_SPREAD = 2   # a broadcast view
    CT_MAXDIMS = 64


cdef struct Ct:
    char* p             # the first entry
    intp inner          # entries per row
    intp step           # their step (0 along a broadcast axis)
    int nd              # the dimensions over rows, innermost first
    intp dims[CT_MAXDIMS]
    intp strides[CT_MAXDIMS]


# --------------------------------------------------------------------------------------------
# The rule: the binding's linear map, run by the backward sweep


# rule kinds
cdef enum:
    R_SCALE = 0   # (ct * d,)                            d an array or a scalar
    R_NEG         # (-ct,)
    R_ADD         # ct to each kept parent
    R_SUB         # (ct, -ct) for the kept parents
    R_MUL2        # (ct * b, ct * a)
    R_SQUARE      # g = ct * a; (g, g)
    R_DIV         # g = ct / b; (g, -(g * y)) for the kept parents
    R_SIN         # (ct * cos(a),): the partial made when the sweep needs it
    R_COS         # (ct * -(sin(a)),)
    R_MATVEC      # a 1-D dual times a constant matrix (either side): (ct @ the matrix^T,)
    R_GETITEM     # x[idx], basic indices: (zeros of x's shape with ct at idx,)
    R_CONCAT      # np.concatenate: (ct[cut] for the dual operands' cuts)
    R_RESHAPE     # x.reshape(shape), np.reshape: (ct reshaped to x's shape,)
    R_TRANSPOSE   # x.T: (ct.T,)
    R_SUM         # np.sum: (ct, the reduced axes put back, broadcast over the operand,)
    R_CHOOSE      # np.max/np.min: (ct at each slice's one extremum, 0.0 elsewhere,)


cdef object _ADD_REDUCE = None  # numpy.add.reduce
cdef list _ALL_AXES = []         # nd -> (0, ..., nd - 1)


cdef object _sum_all(object g, bint as_float):
    """``np.add.reduce(g, (0, ..., nd - 1))``, what ``unbroadcast(g, ())`` gives on the Python
    path, as a float when ``as_float`` (``to_scalar`` of it; ``float(g)`` for a 0-d ``g``)."""
    cdef int nd = cnp.PyArray_NDIM(<cnp.ndarray>g)
    if nd == 0:
        return float(g) if as_float else g
    while len(_ALL_AXES) <= nd:
        _ALL_AXES.append(tuple(range(len(_ALL_AXES))))
    r = _ADD_REDUCE(g, _ALL_AXES[nd], None, None)
    return float(r) if as_float else r


@cython.final
@cython.no_gc
@cython.freelist(65536)
@cython.auto_pickle(False)
cdef class ArrayRule:
    """A binding's linear map ``rule(ct) -> cotangents of the recorded parents``, computed by
    numpy's loops when ``ct`` is a plain float64 array of the output's shape, by the Python
    rule (the closure the Python path records, made on first need) otherwise."""

    cdef int kind
    cdef int code
    cdef char oa, ob
    cdef char sdual     # 1 or 2: operand a or b is a scalar dual (its cotangent a float); 3
                        # or 4: a 0-d array dual (its cotangent numpy's scalar); 0 neither
    cdef object d       # R_SCALE: the partial (array), or None with ds; R_MUL2/R_SQUARE: b/a
    cdef object e       # R_MUL2: a (or None with es); R_DIV: y; R_MATVEC: the matrix swapped
    cdef cnp.ndarray out
    cdef object va, vb  # the operands (vb None for a unary operation; R_SIN, R_COS: a is va)
    cdef object py      # the Python rule, once made
    cdef double ds
    cdef double es
    cdef intp i0, i1    # R_GETITEM of a 1-D slice: its start and step; R_SUM, R_CHOOSE:
                        # i0 the reduced axes as bits (ob: keepdims)

    def __call__(self, ct):
        cdef Ct c
        cdef object r
        cdef int how
        if self.kind >= R_GETITEM:
            return _shape_cotangents(self, ct)
        how = _cotangent(ct, self.out, &c)
        if how and self.kind == R_MATVEC:
            if how == CT_PLAIN:  # (a broadcast one: numpy's matmul may add in another order)
                return self._matvec(<cnp.ndarray>ct)
        elif how:
            dad_clear_fpe(_FPE)
            r = self._run(&c, cnp.PyArray_SIZE(self.out), ct)
            if not _raised():
                return self._scalar_slot(r, ct) if self.sdual else r
        if self.py is None:
            if self.vb is not None:
                on = (bool(self.oa), bool(self.ob))
                vals = [self.va, self.vb]
            else:
                on = (bool(self.oa),)
                vals = [self.va]
            keep = tuple([k for k in range(len(on)) if on[k]])
            self.py = _python_rule(_PRIMS[self.code], self.out, vals, list(on), keep,
                                   [self.sdual - 1] if 0 < self.sdual < 3 else None)
        return self.py(ct)

    cdef tuple _scalar_slot(self, tuple cts, object ct):
        """``cts`` with the scalar operand's cotangent made as the Python path makes it
        (``unbroadcast`` to shape ()): numpy's sum over every axis of the array-shaped
        cotangent -- a float for a scalar dual (``select``'s), numpy's scalar for a 0-d array
        dual. Called after the loops' exceptions are checked (numpy's sum clears the flags).
        ``x - s`` negates the sum of ``ct``, as the Python rule does (a sum of negated entries
        can differ in the sign of a zero)."""
        cdef int k = (self.sdual - 1) & 1  # (both operands are duals: two cotangents)
        cdef bint as_float = self.sdual < 3
        if self.kind == R_SUB and k == 1:
            g = -_sum_all(ct, as_float)
        else:
            g = _sum_all(cts[k], as_float)
        return (g, cts[1]) if k == 0 else (cts[0], g)

    cdef object _run(self, Ct* c, intp n, object ct):
        """The cotangents of ``ct`` (laid out as ``c`` says: C-ordered, or a broadcast view read
        row by row, never copied): what + and - hand on unchanged is ``ct``, the object the
        Python rule hands on (its layout steers later rules, a ``matmul``'s order of additions
        among them). Every result made here is a new C-ordered array, as numpy's elementwise
        results from such operands are."""
        cdef int kind = self.kind
        cdef cnp.ndarray g
        cdef cnp.ndarray like = self.out
        if kind == R_SCALE:
            if self.d is None:
                return (_cs(MUL, c, self.ds, like),)
            return (_ca(MUL, c, <cnp.ndarray>self.d, like),)
        if kind == R_SIN or kind == R_COS:
            return (self._lazy(c, n),)
        if kind == R_NEG:
            return (_ct_loop(NEG, c, NULL, like),)
        if kind == R_ADD:
            if self.oa and self.ob:
                return (ct, ct)
            return (ct,)
        if kind == R_SUB:
            if self.oa and self.ob:
                return (ct, _ct_loop(NEG, c, NULL, like))
            if self.oa:
                return (ct,)
            return (_ct_loop(NEG, c, NULL, like),)
        if kind == R_SQUARE:
            g = _ca(MUL, c, <cnp.ndarray>self.e, like)
            return (g, g)
        if kind == R_MUL2:
            # a's cotangent ct * b, b's ct * a (the Python rule's order)
            return (_ca(MUL, c, <cnp.ndarray>self.d, like) if self.d is not None else _cs(MUL, c, self.ds, like),
                    _ca(MUL, c, <cnp.ndarray>self.e, like) if self.e is not None else _cs(MUL, c, self.es, like))
        # R_DIV: g = ct / b; a: g; b: -(g * y)
        g = _ca(DIV, c, <cnp.ndarray>self.d, like) if self.d is not None else _cs(DIV, c, self.ds, like)
        if self.oa and self.ob:
            return (g, _u(NEG, _aa(MUL, g, <cnp.ndarray>self.e, n), n))
        if self.oa:
            return (g,)
        return (_u(NEG, _aa(MUL, g, <cnp.ndarray>self.e, n), n),)

    cdef tuple _matvec(self, cnp.ndarray c):
        """The Python rule's ``matmul`` cotangent for a 1-D dual ``a`` and a constant matrix
        ``b``: ``reshape(matmul(reshape(ct, (1, m)), swap(b)), (k,))``, or for ``b @ a``
        ``reshape(matmul(swap(b), reshape(ct, (m, 1))), (k,))`` -- the same numpy calls on the
        same operands (numpy checks its floating-point errors itself)."""
        cdef cnp.PyArray_Dims shape
        cdef intp dims[2]
        cdef intp m = cnp.PyArray_DIMS(c)[0]
        cdef cnp.ndarray a = <cnp.ndarray>(self.va if self.oa else self.vb)
        shape.ptr = dims
        shape.len = 2
        dims[0] = 1 if self.oa else m
        dims[1] = m if self.oa else 1
        ct2 = cnp.PyArray_Newshape(c, &shape, cnp.NPY_CORDER)
        g = _MATMUL(ct2, self.e) if self.oa else _MATMUL(self.e, ct2)
        if type(g) is not cnp.ndarray:
            raise TypeError("deltaad array fast path: numpy.matmul gave %s" % type(g).__name__)
        dims[0] = cnp.PyArray_DIMS(a)[0]
        shape.len = 1
        return (cnp.PyArray_Newshape(<cnp.ndarray>g, &shape, cnp.NPY_CORDER),)

    cdef cnp.ndarray _lazy(self, Ct* c, intp n):
        """``ct * d`` with the partial ``d`` of sin (``cos(a)``) or cos (``-(sin(a))``)
        computed now, by the loops the Python path runs when it records (the same bits), in a
        scratch buffer instead of an array kept on the tape."""
        cdef double small[64]
        cdef double* buf = small
        cdef Opnd ob
        cdef char* args[2]
        cdef intp steps[2]
        cdef int code = COS if self.kind == R_SIN else SIN
        if n > 64:
            buf = <double*>PyMem_Malloc(n * sizeof(double))
            if buf == NULL:
                raise MemoryError()
        try:
            args[0] = cnp.PyArray_BYTES(<cnp.ndarray>self.va)
            args[1] = <char*>buf
            steps[0] = 8
            steps[1] = 8
            LOOPS[code].f(args, &n, steps, LOOPS[code].data)
            if code == SIN:  # negated in place, as numpy's negative
                args[0] = <char*>buf
                LOOPS[NEG].f(args, &n, steps, LOOPS[NEG].data)
            ob.p = <char*>buf
            ob.step = 8
            return _ct_loop(MUL, c, &ob, self.out)
        finally:
            if buf != small:
                PyMem_Free(buf)


cdef void _ct_layout(Ct* c, cnp.ndarray a) noexcept:
    """``a``'s entries as rows: its dimensions of more than one entry, from the last, merged
    while one stride steps through them (a C-ordered array is one row)."""
    cdef int k
    cdef intp d, s
    cdef intp* dm = cnp.PyArray_DIMS(a)
    cdef intp* st = cnp.PyArray_STRIDES(a)
    cdef bint have = False
    c.p = cnp.PyArray_BYTES(a)
    c.inner = 1
    c.step = 8
    c.nd = 0
    for k in range(cnp.PyArray_NDIM(a) - 1, -1, -1):
        d = dm[k]
        s = st[k]
        if d == 1:
            continue
        if not have:
            c.inner = d
            c.step = s
            have = True
        elif c.nd == 0 and s == c.step * c.inner:
            c.inner *= d
        elif c.nd > 0 and s == c.strides[c.nd - 1] * c.dims[c.nd - 1]:
            c.dims[c.nd - 1] *= d
        else:
            c.dims[c.nd] = d
            c.strides[c.nd] = s
            c.nd += 1


cdef int _cotangent(object ct, cnp.ndarray out, Ct* c) except -1:
    """How the loops take the cotangent ``ct`` of the output ``out`` (``c`` set unless
    CT_NONE): CT_PLAIN for a plain float64 array of ``out``'s shape, CT_SPREAD for a broadcast
    one (a zero stride) of that shape, CT_NONE otherwise."""
    if type(ct) is not cnp.ndarray:
        return CT_NONE
    cdef cnp.ndarray a = <cnp.ndarray>ct
    if not _same_shape(a, out):
        return CT_NONE
    if _plain(a):
        c.p = cnp.PyArray_BYTES(a)
        c.inner = cnp.PyArray_SIZE(a)
        c.step = 8
        c.nd = 0
        return CT_PLAIN
    if (cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE or not cnp.PyArray_ISNOTSWAPPED(a)
            or not cnp.PyArray_ISALIGNED(a) or cnp.PyArray_SIZE(a) == 0
            or cnp.PyArray_NDIM(a) > CT_MAXDIMS):
        return CT_NONE
    # only a broadcast one (a zero stride): numpy's elementwise results from it are C-ordered
    # as the loops' are; from another strided one (a transposed array) numpy may make them
    # in another order, which later rules (a matmul) could see
    cdef int k
    cdef intp* st = cnp.PyArray_STRIDES(a)
    cdef intp* dm = cnp.PyArray_DIMS(a)
    for k in range(cnp.PyArray_NDIM(a)):
        if st[k] == 0 and dm[k] > 1:
            _ct_layout(c, a)
            return CT_SPREAD
    return CT_NONE


cdef enum:
    CT_BLOCK = 2048  # entries of the scratch block short rows are gathered in (16 kB)
    CT_SHORT = 256   # a row of at most this many entries is short


cdef extern from *:
    """
    /* rows t < cnt of n entries in q, row t all the value at cp + t * s0 */
    static void da_spread_rows(double *restrict q, const char *cp, Py_ssize_t s0,
                               Py_ssize_t cnt, Py_ssize_t n)
    {
        for (Py_ssize_t t = 0; t < cnt; t++) {
            double v;
            memcpy(&v, cp + t * s0, sizeof v);
            double *restrict row = q + t * n;
            for (Py_ssize_t j = 0; j < n; j++)
                row[j] = v;
        }
    }
    """
    void da_spread_rows(double* q, const char* cp, intp s0, intp cnt, intp n) nogil


cdef inline bint _ct_next(Ct* c, intp* idx, char** cp) noexcept:
    """Step ``cp`` to the next row of ``c`` (the innermost dimension over rows first); False
    after the last."""
    cdef int k = 0
    while k < c.nd:
        idx[k] += 1
        cp[0] += c.strides[k]
        if idx[k] < c.dims[k]:
            return True
        cp[0] -= c.strides[k] * c.dims[k]
        idx[k] = 0
        k += 1
    return False


cdef cnp.ndarray _ct_loop(int code, Ct* c, Opnd* b, cnp.ndarray like):
    """``code(ct)`` (``b`` NULL) or ``code(ct, b)`` (``b`` a C-ordered array of ``like``'s shape,
    or a scalar) into a new C-ordered array of ``like``'s shape. Long rows of ``c`` are read
    where they lie, by numpy's loop once per row; short ones (a cotangent spread along a short
    last axis) are gathered, a block of rows at a time, into a scratch buffer that stays in
    the cache, and numpy's loop runs once per block: the operands in the loop are the entries
    numpy's loop would see on a C-ordered copy of ``ct``, without the copy."""
    cdef cnp.ndarray out = _empty_like(like)
    cdef char* args[3]
    cdef intp steps[3]
    cdef intp idx[CT_MAXDIMS]
    cdef double buf[CT_BLOCK]
    cdef intp n = c.inner
    cdef intp j, r, rows, m0, cnt, t, s0
    cdef double v
    cdef double* q
    cdef int k
    cdef bint more = True
    cdef int m = 1 if b == NULL else 2
    cdef char* cp = c.p
    cdef char* bp = NULL if b == NULL else b.p
    cdef intp bstep = 0 if b == NULL else b.step
    cdef char* o = cnp.PyArray_BYTES(out)
    for k in range(c.nd):
        idx[k] = 0
    steps[1] = bstep
    steps[m] = 8
    if c.nd == 0 or n > CT_SHORT:
        steps[0] = c.step
        while more:
            args[0] = cp
            args[1] = bp
            args[m] = o
            LOOPS[code].f(args, &n, steps, LOOPS[code].data)
            o += n * 8
            bp += n * bstep
            more = _ct_next(c, idx, &cp)
        return out
    steps[0] = 8
    rows = CT_BLOCK // n
    while more:
        r = 0
        while more and r < rows:
            # a run of rows along the innermost dimension over rows
            cnt = c.dims[0] - idx[0]
            if cnt > rows - r:
                cnt = rows - r
            s0 = c.strides[0]
            if c.step == 0:
                da_spread_rows(buf + r * n, cp, s0, cnt, n)
            else:
                for t in range(cnt):
                    q = buf + (r + t) * n
                    for j in range(n):
                        q[j] = (<double*>(cp + t * s0 + j * c.step))[0]
            r += cnt
            idx[0] += cnt - 1
            cp += (cnt - 1) * s0
            more = _ct_next(c, idx, &cp)
        m0 = r * n
        args[0] = <char*>buf
        args[1] = bp
        args[m] = o
        LOOPS[code].f(args, &m0, steps, LOOPS[code].data)
        o += m0 * 8
        bp += m0 * bstep
    return out


cdef inline cnp.ndarray _ca(int code, Ct* c, cnp.ndarray b, cnp.ndarray like):
    cdef Opnd ob
    _arr(&ob, b)
    return _ct_loop(code, c, &ob, like)


cdef inline cnp.ndarray _cs(int code, Ct* c, double b, cnp.ndarray like):
    cdef Opnd ob
    _sc(&ob, b)
    return _ct_loop(code, c, &ob, like)


cdef inline ArrayRule _rule(int kind, int code, bint oa, bint ob, cnp.ndarray out, object va,
                            object vb):
    cdef ArrayRule r = ArrayRule.__new__(ArrayRule)
    r.kind = kind
    r.code = code
    r.oa = oa
    r.ob = ob
    r.out = out
    r.va = va
    r.vb = vb
    if (kind == R_ADD or kind == R_SUB or kind == R_NEG or kind == R_MUL2 or kind == R_SQUARE
            or kind == R_SIN or kind == R_COS or R_MATVEC <= kind <= R_SUM
            or (kind == R_SCALE and (code == MUL or code == MAXIMUM or code == MINIMUM))):
        # These rules read only the output's shape (the loops' template, the cotangent's
        # check), and their Python rules never read the output (maximum's reads its dtype):
        # a shared array of that shape stands in, so the output is held by its dual alone
        # and goes (or back to the pool) when the program drops it, not at the end of the
        # differentiation. Likewise the operands that neither rule reads (of + and -, of
        # negation, the dual of a product by a constant, of a product by a constant matrix,
        # the array indexed: the Python rules read their shapes only).
        r.out = _template(out)
        if kind == R_MATVEC or kind == R_GETITEM or R_RESHAPE <= kind <= R_SUM:
            if oa:
                r.va = _template(<cnp.ndarray>va)
            else:
                r.vb = _template(<cnp.ndarray>vb)
        if kind == R_ADD or kind == R_SUB or kind == R_NEG or (kind == R_SCALE and not ob):
            if type(va) is cnp.ndarray and _same_shape(<cnp.ndarray>va, out):
                r.va = r.out
        if kind == R_ADD or kind == R_SUB or (kind == R_SCALE and not oa):
            if type(vb) is cnp.ndarray and _same_shape(<cnp.ndarray>vb, out):
                r.vb = r.out
    return r


cdef object _last_template = None  # the template last handed out (one shape, the commonest)
cdef dict _TEMPLATES = {}           # shape -> its template
cdef object _ZERO = None            # the one 0.0 every template reads


cdef cnp.ndarray _template(cnp.ndarray y):
    """A read-only float64 array of ``y``'s shape, shared by every rule that needs only a
    shape (of a float64 array): one 0.0 broadcast (every stride 0), a few bytes whatever the
    shape."""
    global _last_template, _ZERO
    if _last_template is not None and _same_shape(<cnp.ndarray>_last_template, y):
        return <cnp.ndarray>_last_template
    shape = (<object>y).shape
    t = _TEMPLATES.get(shape)
    if t is None:
        if _ZERO is None:
            _ZERO = cnp.PyArray_ZEROS(0, NULL, cnp.NPY_DOUBLE, 0)
        if len(_TEMPLATES) >= 4096:
            _TEMPLATES.clear()
        t = _TEMPLATES[shape] = broadcast_view(_ZERO, shape, (0,) * len(shape))
    _last_template = t
    return <cnp.ndarray>t


# The swapped view of the constant matrix last multiplied (``x @ K``): one object for every
# binding of that product instead of a view each. Checked against the matrix each time (its
# shape, strides or data can change in place). Kept until ``release()``: a matrix of at most
# SWAP_MAX entries.
cdef enum:
    SWAP_MAX = 1024
cdef object _swap_of = None
cdef object _swapped = None


cdef object _swap(cnp.ndarray K):
    """``swap(K)`` (``np.swapaxes(K, -1, -2)``) of a 2-D matrix, the one made last time
    while it is still ``K``'s."""
    global _swap_of, _swapped
    cdef cnp.ndarray t
    if K is _swap_of:
        t = <cnp.ndarray>_swapped
        if (cnp.PyArray_DATA(t) == cnp.PyArray_DATA(K)
                and cnp.PyArray_DIMS(t)[0] == cnp.PyArray_DIMS(K)[1]
                and cnp.PyArray_DIMS(t)[1] == cnp.PyArray_DIMS(K)[0]
                and cnp.PyArray_STRIDES(t)[0] == cnp.PyArray_STRIDES(K)[1]
                and cnp.PyArray_STRIDES(t)[1] == cnp.PyArray_STRIDES(K)[0]
                and cnp.PyArray_DESCR(t) == cnp.PyArray_DESCR(K)):
            return t
    t = <cnp.ndarray>cnp.PyArray_SwapAxes(K, 0, 1)
    if cnp.PyArray_SIZE(K) <= SWAP_MAX:
        _swap_of = K
        _swapped = t
    return t


cdef inline PyObject* _get(object o, Py_ssize_t off) noexcept:
    """The slot at ``off`` of an array dual (NULL when unset)."""
    return (<PyObject**>((<char*><PyObject*>o) + off))[0]


cdef inline void _put(PyObject* o, Py_ssize_t off, object v) noexcept:
    """Set a slot of a fresh array dual (all NULL)."""
    Py_INCREF(v)
    (<PyObject**>((<char*>o) + off))[0] = <PyObject*>v


cdef inline object _taped_float64(object x):
    """The value of array dual ``x`` when it is a float64 ndarray and ``x`` records on a tape
    (its trace and binding id then set), or None (another trace or value, a slot unset)."""
    cdef PyObject* pt = _get(x, OFF_TRACE)
    cdef PyObject* pv = _get(x, OFF_VALUE)
    if pt == NULL or pv == NULL or _get(x, OFF_ID) == NULL:
        return None
    if type(<object>pt) is not Tape or not _float64(<object>pv):  # (a closed tape: the push
        return None                                               # raises, as in Python)
    return <object>pv


cdef inline Py_ssize_t _id_of(object x) except? -1:
    """The binding id of array dual ``x`` (set: see ``_taped_float64``)."""
    return PyLong_AsSsize_t(<object>_get(x, OFF_ID))


cdef object _dual(cnp.ndarray value, object trace, Py_ssize_t p1, Py_ssize_t p2,
                  ArrayRule rule):
    """The array dual of ``value`` with a binding of ``rule`` on ``trace`` whose parents are
    the ids ``p1`` and ``p2`` (-1: none)."""
    i = _PUSH(trace, p1, p2, rule)
    _pool_pushed(PyLong_AsSsize_t(i))
    return _new_dual(value, trace, i)


cdef object _new_dual(object value, object trace, object i):
    """An array dual holding ``value`` and the binding ``i`` of ``trace`` (what
    ``array._reverse_result`` makes)."""
    cdef PyObject* p = PyType_GenericAlloc(<PyTypeObject*>ArrayDual, 0)  # its tp_alloc
    if p == NULL:
        raise MemoryError()
    cdef object r = <object>p
    Py_DECREF(r)  # the reference tp_alloc gave is r's
    _put(p, OFF_VALUE, value)
    _put(p, OFF_TRACE, trace)
    _put(p, OFF_ID, i)
    _put(p, OFF_TANGENT, None)
    return r


# --------------------------------------------------------------------------------------------
# The operations


cdef object _unary(int code, object x):
    """``ufunc(x)`` for an array dual ``x``, or _NOTHING."""
    if type(x) is not ArrayDual:
        return _NOTHING
    cdef PyObject* pt = _get(x, OFF_TRACE)
    cdef PyObject* pv = _get(x, OFF_VALUE)
    cdef PyObject* pi = _get(x, OFF_ID)
    if pt == NULL or pv == NULL or pi == NULL:
        return _NOTHING
    trace = <object>pt
    if type(trace) is not Tape:  # (a closed tape: the push raises, as the Python path does)
        return _NOTHING
    _pool_check(trace)
    v = <object>pv
    if not _plain(v):
        return _NOTHING
    cdef cnp.ndarray a = <cnp.ndarray>v
    cdef intp n = cnp.PyArray_SIZE(a)
    cdef cnp.ndarray y, d, t
    cdef ArrayRule rule
    dad_clear_fpe(_FPE)
    y = _u(code, a, n)
    if code == NEG:
        rule = _rule(R_NEG, code, True, False, y, v, None)
    elif code == SIN:  # the partial cos(a) made by the sweep (its loop raises as sin's)
        rule = _rule(R_SIN, code, True, False, y, v, None)
    elif code == COS and _normal(a, n):  # -(sin(a)) by the sweep (raises as cos for these)
        rule = _rule(R_COS, code, True, False, y, v, None)
    else:
        rule = _rule(R_SCALE, code, True, False, y, v, None)
    if code == NEG or code == SIN or rule.kind == R_COS:
        pass
    elif code == COS:
        d = _u(NEG, _u(SIN, a, n), n)
    elif code == TAN:
        d = _sa(ADD, 1.0, _aa(MUL, y, y, n), n)
    elif code == TANH:
        d = _sa(SUB, 1.0, _aa(MUL, y, y, n), n)
    elif code == EXP:
        d = y
    elif code == LOG:  # rdiv(1.0, x), an edge at 0
        if _any_zero(a, n):
            return _NOTHING
        d = _sa(DIV, 1.0, a, n)
        if not _finite_sum(d, n):
            return _NOTHING
    elif code == SQRT:  # rdiv(0.5, y)
        if _any_zero(y, n):
            return _NOTHING
        d = _sa(DIV, 0.5, y, n)
        if not _finite_sum(d, n):
            return _NOTHING
    elif code == SQUARE:
        d = _sa(MUL, 2.0, a, n)
    elif code == ABS:
        d = _u(SIGN, a, n)
    elif code == ARCTAN:
        d = _sa(DIV, 1.0, _sa(ADD, 1.0, _aa(MUL, a, a, n), n), n)
    elif code == SINH:
        d = _u(COSH, a, n)
    elif code == COSH:
        d = _u(SINH, a, n)
    elif code == EXPM1:
        d = _as(ADD, y, 1.0, n)
    elif code == LOG1P:  # rdiv(1.0, 1.0 + x)
        t = _sa(ADD, 1.0, a, n)
        if _any_zero(t, n):
            return _NOTHING
        d = _sa(DIV, 1.0, t, n)
        if not _finite_sum(d, n):
            return _NOTHING
    elif code == RECIP:
        d = _u(NEG, _aa(MUL, y, y, n), n)
    else:
        return _NOTHING
    if _raised():
        return _NOTHING
    if rule.kind == R_SCALE:
        rule.d = d
    return _dual(y, trace, PyLong_AsSsize_t(<object>pi), -1, rule)


cdef inline int _scalar(object s, double* out) except -1:
    """1 with ``out`` set for a Python float, or an int that is exact as a float."""
    if type(s) is float:
        out[0] = <double>s
        return 1
    if type(s) is int and -9007199254740992 <= s <= 9007199254740992:
        out[0] = <double><long long>s
        return 1
    return 0


cdef object _binary(int code, object a, object b):
    """``ufunc(a, b)`` for a plain case, or _NOTHING."""
    cdef object trace = None
    cdef bint oa = False, ob = False
    cdef object va = a, vb = b
    cdef double sa = 0.0, sb = 0.0
    cdef bint ka = False, kb = False  # a scalar operand
    cdef cnp.ndarray like = None
    cdef PyObject* pt
    cdef PyObject* pv
    cdef PyObject* ia = NULL
    cdef PyObject* ib = NULL
    if type(a) is ArrayDual:
        pt = _get(a, OFF_TRACE)
        pv = _get(a, OFF_VALUE)
        ia = _get(a, OFF_ID)
        if pt == NULL or pv == NULL or ia == NULL:
            return _NOTHING
        trace = <object>pt
        va = <object>pv
        oa = True
    if type(b) is ArrayDual:
        pt = _get(b, OFF_TRACE)
        pv = _get(b, OFF_VALUE)
        ib = _get(b, OFF_ID)
        if pt == NULL or pv == NULL or ib == NULL:
            return _NOTHING
        if trace is None:
            trace = <object>pt
        elif <object>pt is not trace:
            return _NOTHING
        vb = <object>pv
        ob = True
    if trace is None or type(trace) is not Tape:  # closed: the push raises
        return _NOTHING
    # a scalar dual of this tape holding a float: a scalar operand, and a parent whose
    # cotangent is a float (see ArrayRule._scalar_slot); not as a power's exponent
    cdef int sdual = 0
    cdef object sid = None
    if type(a) is _Dual or type(b) is _Dual:
        x = a if type(a) is _Dual else b
        if code == POW or type(a) is type(b) or x.trace is not trace:
            return _NOTHING
        v = x.value
        if type(v) is not float:
            return _NOTHING
        sid = x.id
        if x is a:
            sdual, sa, ka, oa, va = 1, <double>v, True, True, v
        else:
            sdual, sb, kb, ob, vb = 2, <double>v, True, True, v
    _pool_check(trace)
    if sdual == 1:
        pass
    elif _plain(va):
        like = <cnp.ndarray>va
    elif oa or not _scalar(va, &sa):
        return _NOTHING
    else:
        ka = True
    if sdual == 2:
        pass
    elif _plain(vb):
        if like is None:
            like = <cnp.ndarray>vb
        elif not _same_shape(like, <cnp.ndarray>vb):
            # a 0-d array dual beside an array dual of more dimensions (x - x.max(),
            # x / x.sum()): its entry the loops' scalar operand, its cotangent numpy's sum
            # over every axis (see ArrayRule._scalar_slot); not as a power's exponent
            if not (oa and ob) or code == POW:
                return _NOTHING
            if cnp.PyArray_NDIM(<cnp.ndarray>vb) == 0 and cnp.PyArray_NDIM(like) > 0:
                sdual, sb, kb = 4, (<double*>cnp.PyArray_DATA(<cnp.ndarray>vb))[0], True
            elif cnp.PyArray_NDIM(like) == 0 and cnp.PyArray_NDIM(<cnp.ndarray>vb) > 0:
                sdual, sa, ka = 3, (<double*>cnp.PyArray_DATA(like))[0], True
                like = <cnp.ndarray>vb
            else:
                return _NOTHING
    elif ob or not _scalar(vb, &sb):
        return _NOTHING
    else:
        kb = True
    if like is None:
        return _NOTHING
    cdef intp n = cnp.PyArray_SIZE(like)
    cdef Opnd pa, pb
    if ka:
        _sc(&pa, sa)
    else:
        _arr(&pa, <cnp.ndarray>va)
    if kb:
        _sc(&pb, sb)
    else:
        _arr(&pb, <cnp.ndarray>vb)
    cdef cnp.ndarray y, d
    cdef ArrayRule rule
    if code == POW:
        if not (oa and kb):  # a constant exponent only
            return _NOTHING
    dad_clear_fpe(_FPE)
    y = _loop2(code, &pa, &pb, like, n)
    if code == ADD:
        rule = _rule(R_ADD, code, oa, ob, y, va, vb)
    elif code == SUB:
        rule = _rule(R_SUB, code, oa, ob, y, va, vb)
    elif code == MUL:
        if oa and ob and va is vb:
            rule = _rule(R_SQUARE, code, oa, ob, y, va, vb)
            rule.e = va
        elif oa and ob:
            rule = _rule(R_MUL2, code, oa, ob, y, va, vb)
            if kb:  # (b a scalar dual)
                rule.ds = sb
            else:
                rule.d = vb
            if ka:  # (a a scalar dual)
                rule.es = sa
            else:
                rule.e = va
        else:  # one dual: its cotangent ct * (the other operand)
            rule = _rule(R_SCALE, code, oa, ob, y, va, vb)
            if oa:
                if kb:
                    rule.ds = sb
                else:
                    rule.d = vb
            elif ka:
                rule.ds = sa
            else:
                rule.d = va
    elif code == DIV:
        rule = _rule(R_DIV, code, oa, ob, y, va, vb)
        if kb:
            rule.ds = sb
        else:
            rule.d = vb
        rule.e = y
    elif code == POW:
        rule = _rule(R_SCALE, code, True, False, y, va, vb)
        if sb == 2.0:
            rule.d = _sa(MUL, 2.0, <cnp.ndarray>va, n)
        elif sb == 1.0:
            rule.ds = 1.0
        elif sb == 0.0:
            rule.ds = 0.0
        else:
            rule.d = _sa(MUL, sb, _as(POW, <cnp.ndarray>va, sb - 1.0, n), n)
    else:
        return _NOTHING
    if _raised():
        return _NOTHING
    if sdual:
        rule.sdual = sdual
        if sdual > 2:
            return _dual(y, trace, PyLong_AsSsize_t(<object>ia), PyLong_AsSsize_t(<object>ib), rule)
        if sdual == 1:
            return _dual(y, trace, PyLong_AsSsize_t(sid), PyLong_AsSsize_t(<object>ib), rule)
        return _dual(y, trace, PyLong_AsSsize_t(<object>ia), PyLong_AsSsize_t(sid), rule)
    if oa and ob:
        return _dual(y, trace, PyLong_AsSsize_t(<object>ia), PyLong_AsSsize_t(<object>ib), rule)
    if oa:
        return _dual(y, trace, PyLong_AsSsize_t(<object>ia), -1, rule)
    return _dual(y, trace, PyLong_AsSsize_t(<object>ib), -1, rule)


cdef object _MATMUL = None  # numpy.matmul


cdef object _matmul(object a, object b):
    """``a @ b`` for a 1-D array dual of a tape and a constant float64 matrix (on either side),
    or _NOTHING. The value is numpy's matmul of the values, as on the Python path."""
    cdef bint oa = type(a) is ArrayDual
    cdef bint ob = type(b) is ArrayDual
    if oa == ob:
        return _NOTHING
    x = a if oa else b
    k = b if oa else a
    if type(k) is not cnp.ndarray:
        return _NOTHING
    cdef cnp.ndarray K = <cnp.ndarray>k
    if (cnp.PyArray_TYPE(K) != cnp.NPY_DOUBLE or not cnp.PyArray_ISNOTSWAPPED(K)
            or cnp.PyArray_NDIM(K) != 2 or cnp.PyArray_SIZE(K) == 0):
        return _NOTHING
    cdef PyObject* pt = _get(x, OFF_TRACE)
    cdef PyObject* pv = _get(x, OFF_VALUE)
    cdef PyObject* pi = _get(x, OFF_ID)
    if pt == NULL or pv == NULL or pi == NULL:
        return _NOTHING
    trace = <object>pt
    v = <object>pv
    if type(trace) is not Tape or not _plain(v) or cnp.PyArray_NDIM(<cnp.ndarray>v) != 1:
        return _NOTHING
    if cnp.PyArray_DIMS(K)[0 if oa else 1] != cnp.PyArray_DIMS(<cnp.ndarray>v)[0]:
        return _NOTHING  # numpy's error, from the Python path
    va = v if oa else k
    vb = k if oa else v
    y = _MATMUL(va, vb)
    if not _plain(y):
        raise TypeError("deltaad array fast path: numpy.matmul gave %r" % (y,))
    cdef ArrayRule rule = _rule(R_MATVEC, MATMUL, oa, ob, <cnp.ndarray>y, va, vb)
    rule.e = _swap(K)  # swap(b): np.swapaxes(b, -1, -2)
    return _dual(<cnp.ndarray>y, trace, PyLong_AsSsize_t(<object>pi), -1, rule)


cdef object _add_arrays(object a, object b):
    """``a + b`` for two float64 arrays of one shape (adjoints the sweep sums), or None."""
    if not enabled or type(a) is not cnp.ndarray or type(b) is not cnp.ndarray:
        return None
    if not (_plain(a) and _plain(b) and _same_shape(<cnp.ndarray>a, <cnp.ndarray>b)):
        return None
    dad_clear_fpe(_FPE)
    r = _aa(ADD, <cnp.ndarray>a, <cnp.ndarray>b, cnp.PyArray_SIZE(<cnp.ndarray>a))
    if _raised():
        return None
    return r


cdef int _pull(object rule, Py_ssize_t p1, Py_ssize_t p2, list adj, object ct) except -1:
    """The general sweep's pullback of a fast binding with parents ``p1`` and ``p2`` (-1:
    none; both older than the binding, so within ``adj``): its rule's cotangents of ``ct``
    summed into the adjoints ``adj`` of its parents, as the sweep sums them (in the parents'
    order, an absent adjoint taking the cotangent itself, else ``old + cotangent``). 0
    (nothing done) for another rule or a cotangent the loops do not take: the sweep then calls
    the rule."""
    if type(rule) is not ArrayRule:
        return 0
    cdef ArrayRule r = <ArrayRule>rule
    cdef Ct c
    cdef int how
    if r.kind >= R_GETITEM:
        return _pull_shape(r, p1, p2, adj, ct)
    how = _cotangent(ct, r.out, &c)
    if not how:
        return 0
    cdef tuple cts
    if r.kind == R_MATVEC:
        if how != CT_PLAIN:
            return 0
        cts = r._matvec(<cnp.ndarray>ct)
    else:
        dad_clear_fpe(_FPE)
        cts = r._run(&c, cnp.PyArray_SIZE(r.out), ct)
        if _raised():
            return 0
        if r.sdual:
            cts = r._scalar_slot(cts, ct)
    return _sum_into(cts, p1, p2, adj)


cdef int _sum_into(tuple cts, Py_ssize_t p1, Py_ssize_t p2, list adj) except -1:
    """The cotangents ``cts`` of a binding's parents ``p1`` (and ``p2``, or -1) summed into
    their adjoints as the sweep sums them: the first one taken as it is, later ones added."""
    cdef Py_ssize_t k, p
    cdef Py_ssize_t m = len(cts)
    if m != (1 if p2 < 0 else 2):
        raise RuntimeError("deltaad array fast path: %d cotangents for %d parents"
                           % (m, 1 if p2 < 0 else 2))
    cdef PyObject* po
    for k in range(m):
        p = p1 if k == 0 else p2
        x = cts[k]
        po = PyList_GET_ITEM(adj, p)  # borrowed: p < this binding's id < len(adj)
        if po == <PyObject*>None:
            adj[p] = x
            continue
        if Py_REFCNT(<object>po) == 1 and _add_into(<object>po, x):
            continue  # the sweep's own sum, seen by no one else: summed in place
        old = adj[p]
        s = _add_arrays(old, x)
        adj[p] = old + x if s is None else s
    return 1


cdef bint _add_into(object old, object x) except -1:
    """``old += x`` when both are float64 arrays of one shape, ``old`` owning its (writeable)
    memory: the bits of ``old + x`` (numpy's add loop on the same operands), without a new
    array. False (nothing done) otherwise, or when the loop signals an exception."""
    if not enabled or type(x) is not cnp.ndarray:
        return False
    if not (_plain(old) and _plain(x) and _same_shape(<cnp.ndarray>old, <cnp.ndarray>x)):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>old
    if (cnp.PyArray_BASE(a) != NULL or not cnp.PyArray_CHKFLAGS(a, cnp.NPY_ARRAY_OWNDATA)
            or not cnp.PyArray_ISWRITEABLE(a)):
        return False
    cdef double save[64]
    cdef intp n = cnp.PyArray_SIZE(a)
    cdef Opnd oa, ob
    cdef char* args[3]
    cdef intp steps[3]
    if n > 64:  # keeping a copy to restore on an exception costs what a new array costs
        return False
    memcpy(save, cnp.PyArray_BYTES(a), n * sizeof(double))
    args[0] = cnp.PyArray_BYTES(a)
    args[1] = cnp.PyArray_BYTES(<cnp.ndarray>x)
    args[2] = args[0]
    steps[0] = steps[1] = steps[2] = 8
    dad_clear_fpe(_FPE)
    LOOPS[ADD].f(args, &n, steps, LOOPS[ADD].data)
    if _raised():
        memcpy(cnp.PyArray_BYTES(a), save, n * sizeof(double))
        return False
    return True


cdef extern from *:
    """
    /* o[i, :] = 0.0 + x[i, 0, :] + x[i, 1, :] + ... (rows of hi entries, one after another) */
    static void da_sum_axis(double *restrict o, const double *restrict x, Py_ssize_t lo,
                            Py_ssize_t mid, Py_ssize_t hi)
    {
        for (Py_ssize_t i = 0; i < lo; i++) {
            double *restrict q = o + i * hi;
            for (Py_ssize_t c = 0; c < hi; c++)
                q[c] = 0.0;
            for (Py_ssize_t b = 0; b < mid; b++) {
                const double *restrict w = x + (i * mid + b) * hi;
                for (Py_ssize_t c = 0; c < hi; c++)
                    q[c] = q[c] + w[c];
            }
        }
    }
    """
    void da_sum_axis(double* o, const double* x, Py_ssize_t lo, Py_ssize_t mid,
                     Py_ssize_t hi) nogil


cdef inline void _lo_mid_hi(intp* dm, int nd, int first, int last, intp* lo, intp* mid,
                            intp* hi) noexcept:
    """The entries before axis ``first``, in axes ``first..last`` and after ``last`` of an
    array of shape ``dm``: a C-ordered array as lo x mid x hi for a sum or an extremum over
    those axes."""
    cdef int k
    lo[0] = mid[0] = hi[0] = 1
    for k in range(nd):
        if k < first:
            lo[0] *= dm[k]
        elif k <= last:
            mid[0] *= dm[k]
        else:
            hi[0] *= dm[k]


def sum_axis(g, Py_ssize_t axis):
    """``np.einsum`` of ``g`` summed over ``axis`` alone, for a C-ordered native float64 array
    ``g`` whose axes after ``axis`` hold two entries or more: each entry of the result is
    ``0.0`` plus the entries along ``axis`` in their order, one after another, as einsum adds
    them there: the same bits (but for the sign of a nan, which einsum's own vector and
    scalar loops do not agree on either), without einsum's loop setup once per short row (an
    unbroadcast of a (k, n, d) cotangent to (k, 1, d) ran 12 instructions per entry). None
    when it does not take ``g``: einsum then (with one entry after ``axis`` it sums in
    another order)."""
    if not enabled or type(g) is not cnp.ndarray:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>g
    cdef int nd = cnp.PyArray_NDIM(a)
    if (not _plain(a) or not 0 <= axis < nd - 1 or nd > CT_MAXDIMS):
        return None
    cdef intp* dm = cnp.PyArray_DIMS(a)
    cdef intp dims[CT_MAXDIMS]
    cdef intp lo, mid, hi
    cdef int k, j = 0
    _lo_mid_hi(dm, nd, axis, axis, &lo, &mid, &hi)
    for k in range(nd):
        if k != axis:
            dims[j] = dm[k]
            j += 1
    if hi < 2:  # (einsum then sums along the axis in its own order)
        return None
    cdef cnp.ndarray r = <cnp.ndarray>cnp.PyArray_SimpleNew(nd - 1, dims, cnp.NPY_DOUBLE)
    with nogil:
        da_sum_axis(<double*>cnp.PyArray_BYTES(r), <double*>cnp.PyArray_BYTES(a), lo, mid, hi)
    return r


cdef extern from *:
    """
    /* numpy's pairwise sum of n contiguous doubles (its DOUBLE_pairwise_sum for a stride of
       one entry): eight accumulators over blocks of at most 128, halves above that */
    static double da_pairwise(const double *a, Py_ssize_t n)
    {
        if (n < 8) {
            double res = 0.;
            for (Py_ssize_t i = 0; i < n; i++)
                res += a[i];
            return res;
        }
        if (n <= 128) {
            double r[8], res;
            Py_ssize_t i;
            for (int j = 0; j < 8; j++)
                r[j] = a[j];
            for (i = 8; i < n - (n % 8); i += 8)
                for (int j = 0; j < 8; j++)
                    r[j] += a[i + j];
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++)
                res += a[i];
            return res;
        }
        Py_ssize_t n2 = n / 2;
        n2 -= n2 % 8;
        return da_pairwise(a, n2) + da_pairwise(a + n2, n - n2);
    }

    /* o[i] = 0.0 + pairwise sum of row i (rows of m entries): numpy's add.reduce over the
       last axis of a C-ordered array, which starts each entry at the identity and adds the
       row's pairwise sum in one call of its loop */
    static void da_sum_rows(double *restrict o, const double *restrict x, Py_ssize_t rows,
                            Py_ssize_t m)
    {
        for (Py_ssize_t i = 0; i < rows; i++)
            o[i] = 0.0 + da_pairwise(x + i * m, m);
    }
    """
    void da_sum_rows(double* o, const double* x, Py_ssize_t rows, Py_ssize_t m) nogil


def sum_rows(v, tuple axes, bint keepdims):
    """``np.add.reduce(v, axes, keepdims=keepdims)`` for a C-ordered native float64 array of two
    or more axes summed over its last axis alone: the same pairwise sums numpy's loop makes,
    in one loop here, where numpy calls its loop once per row (a (25, 1000, 10) array summed
    over axis 2: ~520 us in numpy, ~170 here; rows of 3, 7x). None where it does not take
    ``v`` (or an overflow numpy would warn of): the caller then asks numpy."""
    return _sum_rows(v, axes, keepdims)


cdef object _sum_rows(object v, tuple axes, bint keepdims):
    """``sum_rows``."""
    if not enabled or type(v) is not cnp.ndarray or len(axes) != 1:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>v
    cdef int nd = cnp.PyArray_NDIM(a)
    if nd < 2 or nd > CT_MAXDIMS or not _plain(a) or <object>axes[0] != nd - 1:
        return None
    cdef intp* dm = cnp.PyArray_DIMS(a)
    cdef intp m = dm[nd - 1]
    cdef intp dims[CT_MAXDIMS]
    cdef int k
    for k in range(nd - 1):
        dims[k] = dm[k]
    dims[nd - 1] = 1
    cdef cnp.ndarray r = <cnp.ndarray>cnp.PyArray_SimpleNew(nd if keepdims else nd - 1, dims,
                                                            cnp.NPY_DOUBLE)
    dad_clear_fpe(_FPE)
    with nogil:
        da_sum_rows(<double*>cnp.PyArray_BYTES(r), <double*>cnp.PyArray_BYTES(a),
                    cnp.PyArray_SIZE(a) // m, m)
    if _raised():
        return None
    return r


cdef extern from *:
    """
    /* w = (x == m) as 0.0/1.0 for x of lo x mid x hi entries reduced over its middle to m
       (lo x hi), times the cotangent c (lo x hi) unless c is NULL: the weights of max/min's
       Python rule, or its cotangent ct * weights, in one pass. Counts the matches of each of
       m's entries in cnt (hi entries, zeroed here per i); 0 when every entry of m is matched
       exactly once, -1 otherwise (w then unfinished) */
    static int da_extremum_mask(double *restrict w, const double *restrict x,
                                const double *restrict m, const double *restrict c,
                                Py_ssize_t lo, Py_ssize_t mid, Py_ssize_t hi,
                                Py_ssize_t *restrict cnt)
    {
        for (Py_ssize_t i = 0; i < lo; i++) {
            const double *mi = m + i * hi, *ci = c ? c + i * hi : NULL;
            for (Py_ssize_t k = 0; k < hi; k++)
                cnt[k] = 0;
            for (Py_ssize_t j = 0; j < mid; j++) {
                const double *xr = x + (i * mid + j) * hi;
                double *wr = w + (i * mid + j) * hi;
                for (Py_ssize_t k = 0; k < hi; k++) {
                    int e = xr[k] == mi[k];
                    cnt[k] += e;
                    wr[k] = ci ? ci[k] * (e ? 1.0 : 0.0) : (e ? 1.0 : 0.0);
                }
            }
            for (Py_ssize_t k = 0; k < hi; k++)
                if (cnt[k] != 1)
                    return -1;
        }
        return 0;
    }
    """
    int da_extremum_mask(double* w, const double* x, const double* m, const double* c,
                         Py_ssize_t lo, Py_ssize_t mid, Py_ssize_t hi, Py_ssize_t* cnt) nogil


def extremum_weights(x, m, tuple axes):
    """The weights of ``np.max``/``np.min``'s cotangent where every slice has exactly one
    extremum: ``(x == m)`` as float64, what the Python rule makes then (``mask / 1``), in one
    pass instead of numpy's comparison, count, sum and cast. ``x`` a C-ordered float64 array
    reduced over ``axes`` (consecutive axes) to the C-ordered float64 ``m`` (keepdims or
    not); None where it does not take them or a slice has ties or no match (a nan
    extremum): the Python rule then."""
    if not enabled or type(x) is not cnp.ndarray or type(m) is not cnp.ndarray:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x, b = <cnp.ndarray>m
    if not _plain(a) or not _plain(b) or not axes:
        return None
    cdef int nd = cnp.PyArray_NDIM(a), k
    cdef int first = axes[0], last = axes[len(axes) - 1]
    if not 0 <= first <= last < nd or last - first + 1 != len(axes):
        return None
    for k in range(len(axes)):
        if <int>axes[k] != first + k:
            return None
    cdef intp* dm = cnp.PyArray_DIMS(a)
    cdef intp lo, mid, hi
    _lo_mid_hi(dm, nd, first, last, &lo, &mid, &hi)
    if cnp.PyArray_SIZE(b) != lo * hi:
        return None
    cdef Py_ssize_t* cnt = <Py_ssize_t*>PyMem_Malloc(hi * sizeof(Py_ssize_t))
    if cnt == NULL:
        raise MemoryError()
    cdef cnp.ndarray w
    cdef int r
    try:
        w = <cnp.ndarray>cnp.PyArray_SimpleNew(nd, dm, cnp.NPY_DOUBLE)
        with nogil:
            r = da_extremum_mask(<double*>cnp.PyArray_BYTES(w), <double*>cnp.PyArray_BYTES(a),
                                 <double*>cnp.PyArray_BYTES(b), NULL, lo, mid, hi, cnt)
    finally:
        PyMem_Free(cnt)
    return w if r == 0 else None


cdef extern from "_bcast.h" nogil:
    enum: DAD_BCAST_MAXDIMS
    void dad_bcast(int op, double* o, const char* a, const char* b, int nd, const intp* n,
                   const intp* sa, const intp* sb)

# The longest innermost row the broadcast loop divides along: past it numpy's loop, called
# once per row, is faster (its vector division is wider than the SSE2 one compiled here; for
# +, - and * memory is the bound and the loop here is faster at every length tried).
cdef intp BCAST_DIV_ROW_MAX = 16


cdef object _bcast(int c, object x, object y):
    """``x + y``, ``x - y``, ``x * y`` or ``x / y`` (``c`` ADD, SUB, MUL, DIV) of two float64
    ndarrays broadcast against each other, by ``dad_bcast`` (see ``_bcast.h``): numpy's
    values, in the C-ordered array numpy returns for operands whose strides run outer to
    inner. None where it does not take them: another dtype or layout (numpy might order its
    result otherwise), shapes that do not broadcast (numpy's error), nothing to broadcast
    over (one row: numpy's loop is called once), a division along rows longer than
    ``BCAST_DIV_ROW_MAX``, an empty result, or a floating-point exception numpy would warn
    of."""
    if type(x) is not cnp.ndarray or type(y) is not cnp.ndarray:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x, b = <cnp.ndarray>y
    if (cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE or cnp.PyArray_TYPE(b) != cnp.NPY_DOUBLE
            or not cnp.PyArray_ISBEHAVED_RO(a) or not cnp.PyArray_ISBEHAVED_RO(b)):
        return None
    cdef int na = cnp.PyArray_NDIM(a), nb = cnp.PyArray_NDIM(b)
    cdef int nd = na if na > nb else nb
    if nd > DAD_BCAST_MAXDIMS:
        return None
    cdef intp out[DAD_BCAST_MAXDIMS]
    cdef intp n[DAD_BCAST_MAXDIMS]
    cdef intp sa[DAD_BCAST_MAXDIMS]
    cdef intp sb[DAD_BCAST_MAXDIMS]
    cdef intp da, db, ta, tb
    cdef int k, m = 0
    for k in range(nd):
        da = cnp.PyArray_DIMS(a)[k - nd + na] if k >= nd - na else 1
        db = cnp.PyArray_DIMS(b)[k - nd + nb] if k >= nd - nb else 1
        ta = cnp.PyArray_STRIDES(a)[k - nd + na] if da != 1 else 0
        tb = cnp.PyArray_STRIDES(b)[k - nd + nb] if db != 1 else 0
        if da != db and da != 1 and db != 1:
            return None
        out[k] = da if da != 1 else db
        if out[k] == 0:
            return None
        if out[k] == 1:
            continue
        if ta < 0 or tb < 0 or (ta and ta > _last(sa, m)) or (tb and tb > _last(sb, m)):
            return None  # (numpy would order its result by these strides)
        n[m], sa[m], sb[m] = out[k], ta, tb
        m += 1
    # merge neighbouring axes both operands step through as one
    cdef int j = 0
    for k in range(1, m):
        if sa[j] == sa[k] * n[k] and sb[j] == sb[k] * n[k]:
            n[j] *= n[k]
            sa[j], sb[j] = sa[k], sb[k]
        else:
            j += 1
            n[j], sa[j], sb[j] = n[k], sa[k], sb[k]
    if m == 0 or j == 0 or (c == DIV and n[j] > BCAST_DIV_ROW_MAX):
        return None
    cdef cnp.ndarray r = <cnp.ndarray>cnp.PyArray_SimpleNew(nd, out, cnp.NPY_DOUBLE)
    dad_clear_fpe(_FPE)
    with nogil:
        dad_bcast(c, <double*>cnp.PyArray_BYTES(r), cnp.PyArray_BYTES(a), cnp.PyArray_BYTES(b),
                  j + 1, n, sa, sb)
    if _raised():
        return None
    return r


cdef inline intp _last(intp* s, int m) noexcept:
    """The last nonzero stride of s[0..m-1] (the largest intp when none: any stride fits)."""
    cdef int k
    for k in range(m - 1, -1, -1):
        if s[k]:
            return s[k]
    return PY_SSIZE_T_MAX


def binary(int code, x, y):
    """``_bcast`` for the Python rules' products and quotients (``elementwise``): numpy's
    result of ``x (+ - * /) y`` by the broadcast loop, or None where it does not take them
    (the caller then asks numpy)."""
    if not enabled:
        return None
    if not ADD <= code <= DIV:
        raise ValueError("binary: code %d is not one of +, -, *, /" % code)
    return _bcast(code, x, y)


def pull_capsule():
    """The general sweep's pullback of the fast path's rules (``_core.set_array_hooks``)."""
    return PyCapsule_New(<void*>_pull_sweeping, "deltaad._arrays.pull", NULL)


def add_capsule():
    """The adjoint sum of float64 arrays for the core's sweep (``_core.set_array_add``)."""
    return PyCapsule_New(<void*>_add_arrays, "deltaad._arrays.add", NULL)


# --------------------------------------------------------------------------------------------
# numpy's unary functions of one float: np.exp(x) of a scalar dual, for the core

# the codes whose value and derivative _scalar_unary gives (the table's rules, elementwise.py)
SCALAR_UNARY = (SIN, COS, TAN, TANH, EXP, LOG, SQRT, SQUARE, ABS, ARCTAN, SINH, COSH, EXPM1,
                LOG1P, RECIP)


cdef inline double _one(int code, double x) noexcept:
    """numpy's loop of ``code`` on one float64 (the loop its call on a float runs)."""
    cdef double out
    cdef char* args[2]
    cdef intp n = 1
    cdef intp steps[2]
    args[0] = <char*>&x
    args[1] = <char*>&out
    steps[0] = 8
    steps[1] = 8
    LOOPS[code].f(args, &n, steps, LOOPS[code].data)
    return out


cdef int _scalar_unary(int code, double x, double* y, double* d) noexcept:
    """Value and derivative of ufunc ``code`` at ``x`` as the table's scalar rule computes them
    (numpy's value of ``np.<name>(x)``, its derivative expression over floats with numpy's
    functions): 1, or 0 where numpy's own call must be made -- a floating-point exception,
    which numpy warns of or raises as its error state says, or a value or derivative that is
    not finite (the rule's IEEE choices at the edges stay the Python rule's)."""
    cdef double r, g
    if not enabled:
        return 0
    dad_clear_fpe(_FPE)
    r = _one(code, x)
    if code == SIN:
        g = _one(COS, x)
    elif code == COS:
        g = -_one(SIN, x)
    elif code == TAN:
        g = 1.0 + r * r
    elif code == TANH:
        g = 1.0 - r * r
    elif code == EXP:
        g = r
    elif code == LOG:
        g = 1.0 / x
    elif code == SQRT:
        g = 0.5 / r
    elif code == SQUARE:
        g = 2.0 * x
    elif code == ABS:
        g = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
    elif code == ARCTAN:
        g = 1.0 / (1.0 + x * x)
    elif code == SINH:
        g = _one(COSH, x)
    elif code == COSH:
        g = _one(SINH, x)
    elif code == EXPM1:
        g = r + 1.0
    elif code == LOG1P:
        g = 1.0 / (1.0 + x)
    elif code == RECIP:
        g = -(r * r)
    else:
        return 0
    if fetestexcept(_FPE) or not isfinite(x) or not isfinite(r) or not isfinite(g):
        return 0
    y[0] = r
    d[0] = g
    return 1


def scalar_unary_capsule():
    """``_scalar_unary`` for the core's ``__array_ufunc__`` (``_core.set_numpy_unary``)."""
    return PyCapsule_New(<void*>_scalar_unary, "deltaad._arrays.scalar_unary", NULL)


def scalar_unary(int code, double x):
    """``(value, derivative)`` of ``_scalar_unary`` (None where it declines): for the tests."""
    cdef double y, d
    if code not in SCALAR_UNARY or not _ready:
        raise ValueError("scalar_unary: code %d is not one of SCALAR_UNARY" % code)
    if not _scalar_unary(code, x, &y, &d):
        return None
    return y, d


# --------------------------------------------------------------------------------------------
# Indexing, concatenate, maximum/minimum with a float bound: the short paths of stencil code
#
# What the Python short paths record (``array._getitem_reverse``, ``shape._concat_reverse``,
# ``np.maximum(x, 0.0)`` by ``apply``), recorded here without a Python rule per call: the value
# is numpy's (the same indexing, concatenation or loop), the binding's rule an ArrayRule whose
# cotangents are those the Python rules give, made by the same numpy calls (a zero array with
# ``ct`` set at the index; ``ct``'s slices; ``ct`` times the 0/1 weights). A cotangent that is
# not an ndarray (a dual, under higher-order differentiation) goes to the Python functions the
# Python rules call (``scatter``, ``getitem``).

cdef object _scatter = None         # array.scatter(ct, shape, dtype, idx, unique)
cdef object _getitem_py = None      # array.getitem(x, idx, unique)
cdef object _NP_CONCATENATE = None  # np.concatenate
cdef object _CONCATENATE = None     # the registry's rule of np.concatenate (ours while it is)
cdef dict _FUNCTIONS = None         # registry.FUNCTIONS
cdef Py_ssize_t OFF_SLICED = 0      # the array dual's ``_sliced`` slot
cdef object _FULL = slice(None)


# ``x[i]`` of a vector whose element duals ``array._element`` cached in its ``_reads`` slot:
# ``(element duals, node, reads, node drops, re-runs)``, valid as it was last checked
# while no node was dropped (``_core.node_drops``) and no re-run began or ended
# (``trace.rerun_count``) since, and no recording of arrays is open (``trace.lifting``).

cdef Py_ssize_t OFF_READS = -1        # the array dual's ``_reads`` slot (-1: not set up)
cdef Py_ssize_t* _node_drops = NULL   # the core's count
cdef list _rerun_count = None
cdef object _trace_module = None


def setup_elements(node_drops, list rerun_count, trace_module):
    """Bind the element reads to the core's count of node drops (``_core.node_drops_capsule()``),
    ``trace.rerun_count`` and the ``trace`` module."""
    global OFF_READS, _node_drops, _rerun_count, _trace_module
    if not _ready:
        raise RuntimeError("setup_elements: call setup first")
    descr = ArrayDual.__dict__["_reads"]
    if type(descr).__name__ != "member_descriptor":
        raise TypeError("setup_elements: %s._reads is not a slot" % ArrayDual.__name__)
    _node_drops = <Py_ssize_t*>PyCapsule_GetPointer(node_drops, "deltaad._core.node_drops")
    _rerun_count = rerun_count
    _trace_module = trace_module
    OFF_READS = (<PyMemberDescrObject*><PyObject*>descr).d_member.offset


cdef object _element(object x, object idx):
    """``x[idx]`` for an int ``idx`` into a vector whose cached element duals are valid (see
    above), or _NOTHING (``array._element`` then decides, as on the Python path)."""
    cdef PyObject* pc
    cdef tuple r
    cdef list els
    cdef Py_ssize_t k, n
    cdef int overflow
    if OFF_READS < 0 or type(idx) is not int:
        return _NOTHING
    pc = _get(x, OFF_READS)
    if pc == NULL or type(<object>pc) is not tuple or len(<tuple>pc) != 5:
        return _NOTHING
    r = <tuple>pc
    d = r[3]
    if (type(d) is not int or PyLong_AsLongLongAndOverflow(d, &overflow) != _node_drops[0]
            or overflow or r[4] != _rerun_count[0] or type(r[0]) is not list
            or _trace_module.lifting):
        return _NOTHING
    pt = _get(x, OFF_TRACE)
    if pt == NULL or type(<object>pt) is not Tape or (<object>pt).closed:
        return _NOTHING
    els = <list>r[0]
    n = len(els)
    k = PyLong_AsLongLongAndOverflow(idx, &overflow)
    if overflow:
        return _NOTHING
    if k < 0:
        k += n
    if not 0 <= k < n:
        return _NOTHING
    return els[k]


def setup_shape(scatter, getitem, np_concatenate, functions):
    """Bind the indexing and concatenation paths to the Python side: the Python rules'
    ``scatter`` and ``getitem``, ``np.concatenate`` and the registry's function table (the fast
    path only while its rule of ``np.concatenate`` is the one it stands for)."""
    global _scatter, _getitem_py, _NP_CONCATENATE, _CONCATENATE, _FUNCTIONS, OFF_SLICED
    if not _ready:
        raise RuntimeError("setup_shape: call setup first")
    descr = ArrayDual.__dict__["_sliced"]
    if type(descr).__name__ != "member_descriptor":
        raise TypeError("setup_shape: %s._sliced is not a slot" % ArrayDual.__name__)
    OFF_SLICED = (<PyMemberDescrObject*><PyObject*>descr).d_member.offset
    _scatter = scatter
    _getitem_py = getitem
    _NP_CONCATENATE = np_concatenate
    _FUNCTIONS = functions
    _CONCATENATE = functions[np_concatenate]


cdef inline bint _float64(object v):
    """An exact ndarray of native float64 (any layout)."""
    if type(v) is not cnp.ndarray:
        return False
    return (cnp.PyArray_TYPE(<cnp.ndarray>v) == cnp.NPY_DOUBLE
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>v))


cdef extern from "numpy/arrayobject.h":
    object _NewFromDescr "PyArray_NewFromDescr" (
        PyTypeObject* subtype, cnp.PyArray_Descr* descr, int nd, intp* dims, intp* strides,
        void* data, int flags, PyObject* obj)


cdef cnp.ndarray _view1(cnp.ndarray a, intp start, intp step, intp n):
    """``a[start:start + n * step:step]`` of a 1-D array (a slice numpy's rules bound to
    ``a``'s length): the view numpy's slicing makes (its data, strides, writeability and base),
    without numpy's index machinery."""
    cdef intp st = cnp.PyArray_STRIDES(a)[0]
    cdef intp stride = st * step
    cdef cnp.PyArray_Descr* descr = cnp.PyArray_DESCR(a)
    Py_INCREF(<object>descr)  # (stolen)
    r = _NewFromDescr(<PyTypeObject*>cnp.ndarray, descr, 1, &n, &stride,
                      cnp.PyArray_BYTES(a) + start * st,
                      cnp.PyArray_FLAGS(a) & cnp.NPY_ARRAY_WRITEABLE, NULL)
    cnp.set_array_base(<cnp.ndarray>r, a)
    return <cnp.ndarray>r


def broadcast_view(g, tuple shape, tuple strides):
    """The read-only view of the C-contiguous non-empty ndarray ``g`` over ``shape`` with
    ``strides`` (``array.broadcast_to`` computed them, stride 0 where ``g`` is broadcast): what
    its ``np.ndarray(shape, dtype, g, 0, strides)`` with ``writeable = False`` makes, by
    numpy's C constructor (the Python one parses keywords and sets the flag through the flags
    object: ~7,000 instructions; reductions' backward rules make one per binding)."""
    if type(g) is not cnp.ndarray:
        raise TypeError("broadcast_view: %s is not an ndarray" % type(g).__name__)
    cdef cnp.ndarray a = <cnp.ndarray>g
    cdef int nd = len(shape), k
    if len(strides) != nd or nd > CT_MAXDIMS:
        raise ValueError("broadcast_view: %d strides for %d dimensions" % (len(strides), nd))
    cdef intp dims[CT_MAXDIMS]
    cdef intp st[CT_MAXDIMS]
    for k in range(nd):
        dims[k] = shape[k]
        st[k] = strides[k]
    return _read_only_view(a, nd, dims, st)


cdef object _read_only_view(cnp.ndarray a, int nd, intp* dims, intp* st):
    """The read-only view of ``a``'s data over ``dims`` with strides ``st`` (``a`` its base)."""
    cdef cnp.PyArray_Descr* descr = cnp.PyArray_DESCR(a)
    Py_INCREF(<object>descr)  # (stolen)
    r = _NewFromDescr(<PyTypeObject*>cnp.ndarray, descr, nd, dims, st, cnp.PyArray_BYTES(a), 0,
                      NULL)
    cnp.set_array_base(<cnp.ndarray>r, a)
    return r


cdef inline int _slice1(object idx, intp length, intp* at) except -1:
    """1 with ``at`` = (start, step, count) when ``idx`` is a slice or a 1-tuple of one (of
    an axis of ``length``), else 0."""
    if type(idx) is tuple and len(<tuple>idx) == 1:
        idx = (<tuple>idx)[0]
    if type(idx) is not slice:
        return 0
    cdef Py_ssize_t start, stop, step
    if PySlice_Unpack(idx, &start, &stop, &step) < 0:
        return -1
    at[2] = PySlice_AdjustIndices(length, &start, &stop, step)
    if at[2] <= 0:  # numpy's empty slice: at the start, step 1
        at[2] = 0
        start = 0
        step = 1
    at[0] = start
    at[1] = step
    return 1


cdef inline void _copy1(char* dst, intp dstep, char* src, intp sstep, intp n) noexcept:
    """n float64 entries copied bit for bit (as numpy's assignment copies them)."""
    cdef intp k
    for k in range(n):
        memcpy(dst + k * dstep, src + k * sstep, 8)


cdef inline bint _basic_index(object idx):
    """ints, slices, None and ... (the Python types themselves), alone or in a tuple: numpy's
    basic indexing, a view, what ``normalize_index`` leaves as it is."""
    cdef object t = type(idx)
    if t is int or t is slice:
        return True
    if t is not tuple:
        return False
    for k in <tuple>idx:
        t = type(k)
        if t is not int and t is not slice and k is not None and k is not Ellipsis:
            return False
    return True


cdef object _getitem(object x, object idx):
    """``x[idx]`` for basic indices of an array dual of a tape with a float64 value, or
    _NOTHING (also for a 0-d result: the Python path makes it a scalar dual)."""
    if not _basic_index(idx):
        return _NOTHING
    v = _taped_float64(x)
    if v is None:
        return _NOTHING
    trace = <object>_get(x, OFF_TRACE)
    _pool_check(trace)
    cdef intp at[3]
    cdef int one = 0
    if cnp.PyArray_NDIM(<cnp.ndarray>v) == 1:
        one = _slice1(idx, cnp.PyArray_DIMS(<cnp.ndarray>v)[0], at)
    if one:
        y = _view1(<cnp.ndarray>v, at[0], at[1], at[2])
    else:
        y = v[idx]
        if type(y) is not cnp.ndarray:
            return _NOTHING
    # code 1: a 1-D slice, its start and step kept (the rule keeps shapes, not the arrays)
    cdef ArrayRule rule = _rule(R_GETITEM, one, True, False, <cnp.ndarray>y, v, None)
    rule.e = idx
    if one:
        rule.i0 = at[0]
        rule.i1 = at[1]
    r = _dual(<cnp.ndarray>y, trace, _id_of(x), -1, rule)
    _put(<PyObject*>r, OFF_SLICED, True)  # numpy's is a view (an in-place operator refuses)
    return r


cdef object _concat_call(tuple args, dict kwargs):
    """``np.concatenate(*args, **kwargs)`` when it is ``np.concatenate(arrays[, axis])``."""
    cdef Py_ssize_t na = len(args)
    if na == 0 or na > 2:
        return _NOTHING
    axis = args[1] if na == 2 else 0
    if kwargs:
        if na == 2 or len(kwargs) != 1 or "axis" not in kwargs:
            return _NOTHING
        axis = kwargs["axis"]
    return _concat(args[0], axis)


cdef object _concat(object arrays, object axis_obj):
    """``np.concatenate(arrays, axis)`` for a list or tuple of float64 arrays and array duals
    (one or two) of one tape holding float64 values, all of one number of dimensions (at least
    1), or _NOTHING."""
    if type(arrays) is not list and type(arrays) is not tuple:
        return _NOTHING
    if type(axis_obj) is not int:
        return _NOTHING
    cdef Py_ssize_t m = len(arrays)
    if m == 0:
        return _NOTHING
    cdef object trace = None
    cdef list vals = [None] * m
    cdef Py_ssize_t ids[2]
    cdef Py_ssize_t ncut = 0
    cdef Py_ssize_t k, nd = -1, axis = 0, o = 0
    cdef PyObject* pt
    cdef PyObject* pv
    cdef PyObject* pi = NULL
    cdef cnp.ndarray a
    cdef list cuts = []
    for k in range(m):
        x = arrays[k]
        if type(x) is ArrayDual:
            pt = _get(x, OFF_TRACE)
            pv = _get(x, OFF_VALUE)
            pi = _get(x, OFF_ID)
            if pt == NULL or pv == NULL or pi == NULL or ncut == 2:
                return _NOTHING
            if trace is None:
                trace = <object>pt
            elif <object>pt is not trace:
                return _NOTHING
            v = <object>pv
        else:
            v = x
        if not _float64(v):
            return _NOTHING
        a = <cnp.ndarray>v
        if nd < 0:
            nd = cnp.PyArray_NDIM(a)
            axis = axis_obj
            if nd == 0 or not -nd <= axis < nd:
                return _NOTHING
            if axis < 0:
                axis += nd
        elif cnp.PyArray_NDIM(a) != nd:
            return _NOTHING
        n = cnp.PyArray_DIMS(a)[axis]
        if type(x) is ArrayDual:
            ids[ncut] = PyLong_AsSsize_t(<object>pi)
            cuts.append((_FULL,) * axis + (slice(o, o + n),))
            ncut += 1
        vals[k] = v
        o += n
    if trace is None or type(trace) is not Tape:
        return _NOTHING
    _pool_check(trace)
    cdef intp total = o
    if nd == 1:  # numpy's concatenation of 1-D float64 arrays: their entries copied in turn
        y = _empty_shape(1, &total, total)
        o = 0
        for k in range(m):
            a = <cnp.ndarray>vals[k]
            n = cnp.PyArray_DIMS(a)[0]
            _copy1(cnp.PyArray_BYTES(<cnp.ndarray>y) + 8 * o, 8, cnp.PyArray_BYTES(a),
                   cnp.PyArray_STRIDES(a)[0], n)
            o += n
    else:
        y = cnp.PyArray_Concatenate(vals, <int>axis)
    if not _plain(y):
        return _NOTHING
    # code 1: 1-D parts, whose cuts are (slice(o, o + n),)
    cdef ArrayRule rule = _rule(R_CONCAT, nd == 1, True, False, <cnp.ndarray>y, None, None)
    rule.e = tuple(cuts)
    return _dual(<cnp.ndarray>y, trace, ids[0], ids[1] if ncut == 2 else -1, rule)


cdef object _choice(int code, object a, object b):
    """``np.maximum``/``np.minimum`` of an array dual of a tape and a float bound (either
    side) when every entry is strictly either side of the bound (no tie, no nan: the Python
    rule's weights are then the comparison itself, 1.0 or 0.0), or _NOTHING."""
    cdef bint oa = type(a) is ArrayDual
    cdef bint ob = type(b) is ArrayDual
    if oa == ob:
        return _NOTHING
    x = a if oa else b
    s = b if oa else a
    if type(s) is not float:
        return _NOTHING
    cdef double sv = <double>s
    if sv != sv:
        return _NOTHING
    cdef PyObject* pt = _get(x, OFF_TRACE)
    cdef PyObject* pv = _get(x, OFF_VALUE)
    cdef PyObject* pi = _get(x, OFF_ID)
    if pt == NULL or pv == NULL or pi == NULL:
        return _NOTHING
    trace = <object>pt
    v = <object>pv
    if type(trace) is not Tape or not _plain(v):
        return _NOTHING
    _pool_check(trace)
    cdef cnp.ndarray av = <cnp.ndarray>v
    cdef intp n = cnp.PyArray_SIZE(av)
    cdef double* p = <double*>cnp.PyArray_BYTES(av)
    cdef intp k
    for k in range(n):  # no tie, no nan
        if not (p[k] > sv or p[k] < sv):
            return _NOTHING
    cdef cnp.ndarray w = _empty_like(av)
    cdef double* q = <double*>cnp.PyArray_BYTES(w)
    if code == MAXIMUM:
        for k in range(n):
            q[k] = 1.0 if p[k] > sv else 0.0
    else:
        for k in range(n):
            q[k] = 1.0 if p[k] < sv else 0.0
    dad_clear_fpe(_FPE)
    cdef cnp.ndarray y = _as(code, av, sv, n) if oa else _sa(code, sv, av, n)
    if _raised():
        return _NOTHING
    cdef ArrayRule rule = _rule(R_SCALE, code, oa, ob, y, a, b)
    if oa:
        rule.va = v
    else:
        rule.vb = v
    rule.d = w
    return _dual(y, trace, PyLong_AsSsize_t(<object>pi), -1, rule)


cdef extern from "Python.h":
    ctypedef struct PySliceObject:
        PyObject* start
        PyObject* stop


cdef inline cnp.ndarray _cut1(cnp.ndarray ct, tuple cut):
    """``ct[cut]`` for the cut ``(slice(o, o + n),)`` of a 1-D concatenation's part."""
    cdef PySliceObject* s = <PySliceObject*>(<PyObject*>cut[0])
    cdef intp o = PyLong_AsSsize_t(<object>s.start)
    return _view1(ct, o, 1, PyLong_AsSsize_t(<object>s.stop) - o)


cdef tuple _shape_cotangents(ArrayRule r, object ct):
    """The cotangents of an indexing or concatenate binding (the Python rules' values)."""
    cdef cnp.ndarray v, z
    cdef tuple cuts
    cdef intp st, n
    if r.kind == R_RESHAPE or r.kind == R_TRANSPOSE:
        return _view_cotangent(r, ct)
    if r.kind == R_SUM:
        return _sum_cotangent(r, ct)
    if r.kind == R_CHOOSE:
        return _choose_cotangent(r, ct)
    if r.kind == R_GETITEM:
        v = <cnp.ndarray>r.va
        if type(ct) is not cnp.ndarray:
            return (_scatter(ct, (<object>v).shape, (<object>v).dtype, r.e, True),)
        z = _empty_like(v)  # np.zeros(shape, dtype=float64)
        memset(cnp.PyArray_BYTES(z), 0, cnp.PyArray_SIZE(z) * sizeof(double))
        if r.code == 1 and _float64(ct) and _has_shape(<cnp.ndarray>ct, 1, cnp.PyArray_DIMS(r.out)):
            # z[start::step] = ct, the slice's entries copied as numpy's assignment copies them
            n = cnp.PyArray_DIMS(r.out)[0]
            if n:
                _copy1(cnp.PyArray_BYTES(z) + 8 * r.i0, 8 * r.i1,
                       cnp.PyArray_BYTES(<cnp.ndarray>ct),
                       cnp.PyArray_STRIDES(<cnp.ndarray>ct)[0], n)
        else:
            z[r.e] = ct
        return (z,)
    cuts = <tuple>r.e
    if type(ct) is not cnp.ndarray:
        return tuple([_getitem_py(ct, c, True) for c in cuts])
    if r.code == 1 and _has_shape(<cnp.ndarray>ct, 1, cnp.PyArray_DIMS(r.out)):
        if len(cuts) == 1:  # ct[o:o + n], numpy's view
            return (_cut1(<cnp.ndarray>ct, cuts[0]),)
        return (_cut1(<cnp.ndarray>ct, cuts[0]), _cut1(<cnp.ndarray>ct, cuts[1]))
    if len(cuts) == 1:
        return (ct[cuts[0]],)
    return (ct[cuts[0]], ct[cuts[1]])


cdef int _pull_shape(ArrayRule r, Py_ssize_t p1, Py_ssize_t p2, list adj, object ct) except -1:
    """``_pull`` of an indexing or concatenate binding: its cotangents summed into the
    parents' adjoints as the sweep sums them."""
    cdef tuple cts = _shape_cotangents(r, ct)
    return _sum_into(cts, p1, p2, adj)


# --------------------------------------------------------------------------------------------
# Views: ``x.reshape(shape)``, ``x.ravel()`` and ``np.reshape(x, shape)`` (C order, a shape of
# ints), ``x.T`` of two dimensions or more: numpy's view (or copy) of the value, as the Python
# path's primitives make it; the rule keeps shapes only.

cdef object _RESHAPE_VJP = None    # array._reshape_vjp
cdef object _TRANSPOSE_VJP = None  # array._transpose_vjp
cdef object _NP_RESHAPE = None     # np.reshape
cdef object _RESHAPE_FN = None     # the registry's rule of np.reshape (ours while it is)


def setup_views(reshape_vjp, transpose_vjp, np_reshape):
    """Bind the views to the Python side: the Python rules' makers and ``np.reshape``."""
    global _RESHAPE_VJP, _TRANSPOSE_VJP, _NP_RESHAPE, _RESHAPE_FN
    if _FUNCTIONS is None:
        raise RuntimeError("setup_views: call setup_shape first")
    _RESHAPE_VJP = reshape_vjp
    _TRANSPOSE_VJP = transpose_vjp
    _NP_RESHAPE = np_reshape
    _RESHAPE_FN = _FUNCTIONS[np_reshape]


cdef object _view(int kind, object x, object shape):
    """``x.reshape(shape)`` (R_RESHAPE; ``shape`` a tuple of Python ints or one) or ``x.T``
    (R_TRANSPOSE) of an array dual of a tape holding a float64 ndarray, or _NOTHING."""
    cdef intp dims[CT_MAXDIMS]
    cdef cnp.PyArray_Dims newshape
    cdef Py_ssize_t nd = 0, k
    if _RESHAPE_VJP is None or type(x) is not ArrayDual:
        return _NOTHING
    if kind == R_RESHAPE:
        if type(shape) is int:
            shape = (shape,)
        elif type(shape) is not tuple:
            return _NOTHING
        nd = len(<tuple>shape)
        if nd > CT_MAXDIMS:
            return _NOTHING
        for k in range(nd):
            n = (<tuple>shape)[k]
            if type(n) is not int or not -1 <= n <= PY_SSIZE_T_MAX:
                return _NOTHING
            dims[k] = n
    v = _taped_float64(x)
    if v is None:
        return _NOTHING
    trace = <object>_get(x, OFF_TRACE)
    if kind == R_TRANSPOSE and cnp.PyArray_NDIM(<cnp.ndarray>v) < 2:
        return _NOTHING  # (the Python path gives x itself)
    _pool_check(trace)
    if kind == R_RESHAPE:
        newshape.ptr = dims
        newshape.len = nd
        y = cnp.PyArray_Newshape(<cnp.ndarray>v, &newshape, cnp.NPY_CORDER)  # (numpy's error)
    else:
        y = cnp.PyArray_Transpose(<cnp.ndarray>v, NULL)
    if type(y) is not cnp.ndarray:
        return _NOTHING
    cdef ArrayRule rule = _rule(kind, 0, True, False, <cnp.ndarray>y, v, None)
    return _dual(<cnp.ndarray>y, trace, _id_of(x), -1, rule)


cdef tuple _view_cotangent(ArrayRule r, object ct):
    """A reshape's cotangent: ``ct.reshape(x's shape)``; a transpose's: ``ct.T`` (numpy's views
    of an ndarray, as the Python rules make them); the Python rule for another ``ct``."""
    cdef cnp.PyArray_Dims shape
    cdef cnp.ndarray v = <cnp.ndarray>r.va
    if type(ct) is cnp.ndarray and _same_shape(<cnp.ndarray>ct, r.out):
        if r.kind == R_TRANSPOSE:
            return (cnp.PyArray_Transpose(<cnp.ndarray>ct, NULL),)
        shape.ptr = cnp.PyArray_DIMS(v)
        shape.len = cnp.PyArray_NDIM(v)
        return (cnp.PyArray_Newshape(<cnp.ndarray>ct, &shape, cnp.NPY_CORDER),)
    if r.py is None:
        if r.kind == R_TRANSPOSE:
            r.py = _TRANSPOSE_VJP(r.out, (v,), (True,),
                                  tuple(range(cnp.PyArray_NDIM(v) - 1, -1, -1)))
        else:
            r.py = _RESHAPE_VJP(r.out, (v,), (True,), (<object>r.out).shape)
    return r.py(ct)


# --------------------------------------------------------------------------------------------
# Reductions: ``np.sum`` and ``np.mean`` of an array dual over any axes, ``np.max``/``np.min``
# (and ``amax``, ``amin``, and the methods) over consecutive ones, keepdims or not. The value
# is numpy's call the Python path makes (``reductions._sum_impl``, ``_choose_impl``; the mean
# that sum divided by the count, as ``_mean_of`` divides it); the sum's rule keeps shapes only, the
# extremum's the operand and the extremum, its weights made when the sweep needs them in the
# pass that makes the cotangent (the Python path makes them when it records: the same 0.0s
# and 1.0s times the same cotangent). Any other cotangent, and a slice with ties or a nan
# extremum, go to the Python rule, made then.

cdef dict _REDUCERS = None     # np.sum, np.max, ... -> (1 sum, 2 max, 3 min, 4 mean; the
                               # registry's rule)
cdef object _SUM_VJP = None    # reductions._sum_vjp
cdef object _CHOOSE_VJP = None  # reductions._choose_vjp
cdef object _AXES_OF = None    # args.axes_of
cdef object _MAX_REDUCE = None, _MIN_REDUCE = None  # numpy.maximum.reduce, numpy.minimum.reduce
cdef object _NP_MAX = None, _NP_MIN = None          # np.max, np.min (the Python rule's ``f``)
cdef bint _SUM_ROWS = False    # whether the Python path sums last axes by sum_rows
cdef dict _RAXES = {}          # (axis, ndim) -> axes_of(axis, ndim)
cdef object _NAN = float("nan")
cdef object _NP_FLOAT64 = None  # numpy.float64


def setup_reductions(reducers, methods, sum_vjp, choose_vjp, axes_of, max_reduce, min_reduce,
                     np_max, np_min, np_float64, bint sum_rows):
    """Bind the reductions to the Python side: ``reducers`` maps numpy's functions to (1 sum,
    2 max, 3 min, 4 mean), the fast path taken while the registry's rule of each is the one it held
    here; ``methods`` the array dual's methods of the same (``x.sum``) to (numpy's function,
    the Python method each falls back to); the Python rules' makers, ``axes_of``, numpy's
    extremum reductions, numpy's float64, and whether the Python path's sums call
    ``sum_rows``."""
    global _REDUCERS, _SUM_VJP, _CHOOSE_VJP, _AXES_OF, _MAX_REDUCE, _MIN_REDUCE, _NP_MAX
    global _NP_MIN, _SUM_ROWS, _NP_FLOAT64
    if _FUNCTIONS is None:
        raise RuntimeError("setup_reductions: call setup_shape first")
    _REDUCERS = {f: (which, _FUNCTIONS[f]) for f, which in reducers.items()}
    _SUM_VJP = sum_vjp
    _CHOOSE_VJP = choose_vjp
    _AXES_OF = axes_of
    _MAX_REDUCE = max_reduce
    _MIN_REDUCE = min_reduce
    _NP_MAX = np_max
    _NP_MIN = np_min
    _NP_FLOAT64 = np_float64
    _SUM_ROWS = sum_rows
    for name, (func, python) in methods.items():
        setattr(ArrayDual, name, _reduction_method(func, python))


def _reduction_method(func, python):
    """The array dual's method of the reduction ``func`` (``x.sum(axis)`` is ``np.sum(x,
    axis)``), falling back to its ``python`` method."""
    def method(self, *args, **kwargs):
        if enabled:
            r = _reduce_call(func, (self,) + args, kwargs)
            if r is not _NOTHING:
                return r
        return python(self, *args, **kwargs)

    method.__name__ = python.__name__
    method.__doc__ = python.__doc__
    return method


cdef object _reduce_call(object func, tuple args, dict kwargs):
    """``func(*args, **kwargs)`` for a reducer ``func`` called as ``f(a[, axis], axis=,
    keepdims=)`` on an array dual of a tape holding a float64 ndarray, an axis None, an int or
    a tuple of ints and keepdims a bool (what ``reductions._reverse_reduction`` takes), or
    _NOTHING."""
    red = _REDUCERS.get(func)
    if red is None or _FUNCTIONS.get(func) is not (<tuple>red)[1]:
        return _NOTHING
    cdef int which = (<tuple>red)[0]
    cdef Py_ssize_t n = len(args)
    if n == 0 or n > 2:
        return _NOTHING
    x = args[0]
    if type(x) is not ArrayDual:
        return _NOTHING
    axis = args[1] if n == 2 else None
    keepdims = False
    if kwargs:
        for name, val in kwargs.items():
            if name == "axis" and n == 1:
                axis = val
            elif name == "keepdims" and (val is True or val is False):
                keepdims = val
            else:
                return _NOTHING
    if type(axis) is tuple:
        for ax in <tuple>axis:
            if type(ax) is not int:
                return _NOTHING
    elif axis is not None and type(axis) is not int:
        return _NOTHING
    v = _taped_float64(x)
    if v is None:
        return _NOTHING
    trace = <object>_get(x, OFF_TRACE)
    cdef int nd = cnp.PyArray_NDIM(<cnp.ndarray>v)
    key = (axis, nd)
    axes = _RAXES.get(key)
    if axes is None:
        axes = _AXES_OF(axis, nd)  # (numpy's error for an axis out of range, as the Python path)
        if len(_RAXES) > 1024:
            _RAXES.clear()
        _RAXES[key] = axes
    cdef unsigned long long bits = 0
    cdef int first = nd, last = -1, k
    for a in <tuple>axes:
        k = a
        bits |= (<unsigned long long>1) << k
        first = k if k < first else first
        last = k if k > last else last
    cdef bint summed = which == 1 or which == 4
    if not summed and (last < 0 or last - first + 1 != len(<tuple>axes) or not _plain(v)):
        return _NOTHING  # (an extremum over axes apart, or nothing: the Python path)
    _pool_check(trace)
    if summed:
        out = _sum_rows(v, <tuple>axes, keepdims) if _SUM_ROWS else None
        if out is None:
            out = _ADD_REDUCE(v, axes, None, None, keepdims)
    else:
        out = (_MAX_REDUCE if which == 2 else _MIN_REDUCE)(v, axes, None, None, keepdims)
    if type(out) is not cnp.ndarray:
        out = _np_asarray(out)  # (numpy's scalar: the 0-d array the Python path makes)
    cdef ArrayRule rule = _rule(R_SUM if summed else R_CHOOSE, which, True, False,
                                <cnp.ndarray>out, v, None)
    rule.ob = keepdims
    rule.e = axes
    rule.i0 = <intp>bits
    r = _dual(<cnp.ndarray>out, trace, _id_of(x), -1, rule)
    if which != 4:
        return r
    # the mean: the sum over n entries divided by float(n) (``reductions._mean_of``)
    cdef intp count = 1
    for k in range(nd):
        if (bits >> k) & 1:
            count *= cnp.PyArray_DIMS(<cnp.ndarray>v)[k]
    return r / <double>count if count else r * _NAN


cdef object _reduction_python_rule(ArrayRule r):
    """The Python rule of a reduction's binding, made on first need."""
    if r.py is None:
        if r.kind == R_SUM:
            r.py = _SUM_VJP(r.out, (r.va,), (True,), r.e, bool(r.ob))
        else:
            r.py = _CHOOSE_VJP(r.out, [r.va], [True], r.e, bool(r.ob),
                               _NP_MAX if r.code == 2 else _NP_MIN, {})
    return r.py


cdef inline object _scalar_ct(object ct, cnp.ndarray out):
    """The cotangent of a 0-d reduction that is a float or numpy's float64 (a 0-d array dual's
    cotangent from the loops is numpy's scalar) as the 0-d array the Python rule's reshape
    makes of it; any other ``ct`` as it is."""
    if cnp.PyArray_NDIM(out) == 0 and (type(ct) is float or type(ct) is _NP_FLOAT64):
        return _np_asarray(ct)
    return ct


cdef tuple _sum_cotangent(ArrayRule r, object ct):
    """A sum's cotangent: ``ct`` with the reduced axes put back (numpy's reshape) and
    broadcast over the operand's shape, the read-only view ``array.broadcast_to`` makes of a
    C-ordered array (stride 0 along an axis of length 1); the Python rule for another."""
    cdef cnp.ndarray v = <cnp.ndarray>r.va
    cdef cnp.ndarray g
    cdef int nd = cnp.PyArray_NDIM(v), k
    cdef intp* vd = cnp.PyArray_DIMS(v)
    cdef intp dims[CT_MAXDIMS]
    cdef intp st[CT_MAXDIMS]
    cdef cnp.PyArray_Dims shape
    cdef unsigned long long bits = <unsigned long long>r.i0
    ct = _scalar_ct(ct, r.out)
    if (type(ct) is cnp.ndarray and _same_shape(<cnp.ndarray>ct, r.out)
            and cnp.PyArray_SIZE(v) > 0 and nd <= CT_MAXDIMS):
        g = <cnp.ndarray>ct
        if not r.ob:  # ct.reshape(the shape keepdims gives)
            for k in range(nd):
                dims[k] = 1 if (bits >> k) & 1 else vd[k]
            shape.ptr = dims
            shape.len = nd
            g = <cnp.ndarray>cnp.PyArray_Newshape(g, &shape, cnp.NPY_CORDER)
        if cnp.PyArray_IS_C_CONTIGUOUS(g) and cnp.PyArray_NDIM(g) == nd:
            for k in range(nd):
                st[k] = 0 if cnp.PyArray_DIMS(g)[k] == 1 else cnp.PyArray_STRIDES(g)[k]
            return (_read_only_view(g, nd, vd, st),)
    return _reduction_python_rule(r)(ct)


cdef tuple _choose_cotangent(ArrayRule r, object ct):
    """An extremum's cotangent: ``ct`` at each slice's one extremum, 0.0 elsewhere (``ct`` times
    the 0.0/1.0 weights, the Python rule's products); the Python rule for a cotangent that is
    not a float64 array of the extremum's shape, a slice with ties or a nan extremum, or a
    product that raises a floating-point exception (inf times 0.0: numpy reports it)."""
    cdef cnp.ndarray x = <cnp.ndarray>r.va
    cdef cnp.ndarray m = <cnp.ndarray>r.out
    cdef cnp.ndarray c, g
    cdef Py_ssize_t small[64]
    cdef Py_ssize_t* cnt = small
    cdef intp lo, mid, hi
    cdef int first = 0, last = -1, k, rc
    cdef unsigned long long bits = <unsigned long long>r.i0
    ct = _scalar_ct(ct, m)
    if _float64(ct) and _same_shape(<cnp.ndarray>ct, m) and _plain(x) and _plain(m):
        c = <cnp.ndarray>cnp.PyArray_GETCONTIGUOUS(<cnp.ndarray>ct)
        if _plain(c):
            for k in range(cnp.PyArray_NDIM(x)):
                if (bits >> k) & 1:
                    if last < 0:
                        first = k
                    last = k
            _lo_mid_hi(cnp.PyArray_DIMS(x), cnp.PyArray_NDIM(x), first, last, &lo, &mid, &hi)
            if hi > 64:
                cnt = <Py_ssize_t*>PyMem_Malloc(hi * sizeof(Py_ssize_t))
                if cnt == NULL:
                    raise MemoryError()
            try:
                g = _empty_like(x)
                dad_clear_fpe(_FPE)
                with nogil:
                    rc = da_extremum_mask(<double*>cnp.PyArray_BYTES(g),
                                          <double*>cnp.PyArray_BYTES(x),
                                          <double*>cnp.PyArray_BYTES(m),
                                          <double*>cnp.PyArray_BYTES(c), lo, mid, hi, cnt)
                if rc == 0 and not _raised():
                    return (g,)
            finally:
                if cnt != small:
                    PyMem_Free(cnt)
    return _reduction_python_rule(r)(ct)


# --------------------------------------------------------------------------------------------
# The general lane: the Python path's steps, without its frames


cdef list _APPLIES = [None] * NCODES  # code -> the primitive its registry function applies
cdef object _np_asarray = None
cdef object _Dual = None  # the core's scalar dual


cdef inline bint _real_type(int t) noexcept:
    """A bool, integer or real floating type number (a dtype of kind "b", "i", "u" or "f")."""
    return cnp.PyTypeNum_ISBOOL(t) or cnp.PyTypeNum_ISINTEGER(t) or cnp.PyTypeNum_ISFLOAT(t)


cdef object _general(int c, tuple args):
    """What ``array.apply`` does for an operation the loops above do not take (broadcasting,
    a matrix and a row, float32, a strided view, a product of matrices): ``prim.impl`` on the
    values, the rule ``python_rule`` builds (``prim.vjp``, selected to the duals), one binding
    pushed by the tape's ``push_linear``, an array dual of the result. The same calls on the
    same operands as the Python path, so the same values, rule and bits; only its Python
    frames (the operator, ``_binop``, the registry's function, ``apply``, ``select``) go.

    Taken only where ``c``'s registry function is exactly ``apply(prim, args)`` (``_APPLIES``;
    matmul's also checks that no operand is 0-d), every dual among ``args`` is an array dual
    holding an exact ndarray or a scalar dual holding a float, all of one open reverse tape
    (an array dual among them), and every other operand is a float, an int or an exact real
    ndarray; _NOTHING otherwise (nesting, forward levels, ``compile``'s recorded values,
    lists: the Python path). A scalar dual's cotangent is a float, as ``select`` makes it."""
    prim = _APPLIES[c]
    if prim is None:
        return _NOTHING
    cdef Py_ssize_t n = len(args), k
    cdef PyObject* pt
    cdef PyObject* pv
    cdef PyObject* pi
    cdef object trace = None
    cdef list vals = [], on = [], ids = [], keep = []
    cdef object scalar = None
    cdef bint array = False
    for k in range(n):
        x = args[k]
        tx = type(x)
        if tx is _Dual:
            t, v, i = x.trace, x.value, x.id
            if type(v) is not float:
                return _NOTHING
            if scalar is None:
                scalar = []
            scalar.append(len(keep))
        elif tx is ArrayDual:
            pt = _get(x, OFF_TRACE)
            pv = _get(x, OFF_VALUE)
            pi = _get(x, OFF_ID)
            if pt == NULL or pv == NULL or pi == NULL or type(<object>pv) is not cnp.ndarray:
                return _NOTHING
            t, v, i = <object>pt, <object>pv, <object>pi
            array = True
        elif tx is float or tx is int or (
                tx is cnp.ndarray and _real_type(cnp.PyArray_TYPE(<cnp.ndarray>x))):
            vals.append(x)
            on.append(False)
            continue
        else:
            return _NOTHING
        if trace is None:
            trace = t
        elif t is not trace:
            return _NOTHING
        vals.append(v)
        on.append(True)
        ids.append(i)
        keep.append(k)
    if not array or type(trace) is not Tape or trace.closed:
        return _NOTHING  # (the Python path raises for a finished trace)
    if c == MATMUL:
        for k in range(n):
            if type(vals[k]) is not cnp.ndarray or cnp.PyArray_NDIM(<cnp.ndarray>vals[k]) == 0:
                return _NOTHING  # (numpy's error, from the Python path)
    out = _bcast(c, vals[0], vals[1]) if c <= DIV and n == 2 else None
    if out is None:
        out = prim.impl(*vals)
    if type(out) is not cnp.ndarray:
        out = _np_asarray(out)  # (a numpy scalar of 0-d operands: as_ndarray's call)
    rule = _python_rule(prim, out, vals, on, keep, scalar)
    return _new_dual(out, trace, trace.push_linear(ids, rule))


def setup_general(applies, asarray, dual, add_reduce):
    """Bind the general lane: ``applies[code]``, the primitive the registry's function of
    ``code`` applies (None where it does more than ``apply``), numpy's ``asarray``, the core's
    scalar dual type and ``numpy.add.reduce`` (a scalar dual's cotangent)."""
    global _np_asarray, _Dual, _ADD_REDUCE
    _Dual = dual
    _ADD_REDUCE = add_reduce
    if len(applies) != NCODES:
        raise ValueError("setup_general: %d entries for %d codes" % (len(applies), NCODES))
    for k in range(NCODES):
        _APPLIES[k] = applies[k]
    _np_asarray = asarray


# --------------------------------------------------------------------------------------------
# Entry points: the array dual's methods on the compiled backend


cdef inline object _call(object ufunc, tuple inputs):
    if not enabled:
        return _NOTHING
    code = _CODES.get(ufunc)
    if code is None:
        return _NOTHING
    cdef int c = code
    if _UFUNCS.get(ufunc) is not _FNS[c]:  # a rule registered over ours
        return _NOTHING
    cdef object r = _NOTHING
    if c == MATMUL:
        if len(inputs) == 2:
            r = _matmul(inputs[0], inputs[1])
    elif c >= MAXIMUM:
        return _choice(c, inputs[0], inputs[1]) if len(inputs) == 2 else _NOTHING
    elif len(inputs) == 1:
        if c >= NEG:
            r = _unary(c, inputs[0])
    elif len(inputs) == 2 and c < NEG:
        r = _binary(c, inputs[0], inputs[1])
    if r is _NOTHING and len(inputs) == (1 if NEG <= c < MATMUL else 2):
        r = _general(c, inputs)
    return r


def try_ufunc(ufunc, inputs):
    """``ufunc(*inputs)`` by the fast path, or None when it does not take them."""
    r = _call(ufunc, inputs)
    return None if r is _NOTHING else r


cdef object _op(int c, object a, object b):
    if not enabled or _UFUNCS.get(_UFUNC_OF[c]) is not _FNS[c]:
        return _NOTHING
    r = _matmul(a, b) if c == MATMUL else _binary(c, a, b)
    return _general(c, (a, b)) if r is _NOTHING else r


cdef list _UFUNC_OF = [None] * NCODES


def bind_methods(cls, python_methods, ufuncs):
    """Install the fast methods on ``cls`` (the array dual), each falling back to the Python
    method it replaces (``python_methods[name]``)."""
    cdef int code
    for code in range(NCODES):
        _UFUNC_OF[code] = ufuncs[code]
    py = dict(python_methods)
    ufunc_py = py["__array_ufunc__"]
    add, radd = py["__add__"], py["__radd__"]
    sub, rsub = py["__sub__"], py["__rsub__"]
    mul, rmul = py["__mul__"], py["__rmul__"]
    div, rdiv = py["__truediv__"], py["__rtruediv__"]
    pow_, neg = py["__pow__"], py["__neg__"]
    matmul, rmatmul = py["__matmul__"], py["__rmatmul__"]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if not kwargs and method == "__call__":
            r = _call(ufunc, inputs)
            if r is not _NOTHING:
                return r
        return ufunc_py(self, ufunc, method, *inputs, **kwargs)

    def __add__(self, other):
        r = _op(ADD, self, other)
        return add(self, other) if r is _NOTHING else r

    def __radd__(self, other):
        r = _op(ADD, other, self)
        return radd(self, other) if r is _NOTHING else r

    def __sub__(self, other):
        r = _op(SUB, self, other)
        return sub(self, other) if r is _NOTHING else r

    def __rsub__(self, other):
        r = _op(SUB, other, self)
        return rsub(self, other) if r is _NOTHING else r

    def __mul__(self, other):
        r = _op(MUL, self, other)
        return mul(self, other) if r is _NOTHING else r

    def __rmul__(self, other):
        r = _op(MUL, other, self)
        return rmul(self, other) if r is _NOTHING else r

    def __truediv__(self, other):
        r = _op(DIV, self, other)
        return div(self, other) if r is _NOTHING else r

    def __rtruediv__(self, other):
        r = _op(DIV, other, self)
        return rdiv(self, other) if r is _NOTHING else r

    def __pow__(self, other, modulo=None):
        if modulo is None:
            r = _op(POW, self, other)
            if r is not _NOTHING:
                return r
        return pow_(self, other, modulo)

    def __matmul__(self, other):
        r = _op(MATMUL, self, other)
        return matmul(self, other) if r is _NOTHING else r

    def __rmatmul__(self, other):
        r = _op(MATMUL, other, self)
        return rmatmul(self, other) if r is _NOTHING else r

    def __neg__(self):
        cdef object r = _NOTHING
        if enabled and _UFUNCS.get(_UFUNC_OF[NEG]) is _FNS[NEG]:
            r = _unary(NEG, self)
            if r is _NOTHING:
                r = _general(NEG, (self,))
        return neg(self) if r is _NOTHING else r

    getitem = py["__getitem__"]
    array_function = py["__array_function__"]
    reshape_py, ravel_py, T_py = py["reshape"], py["ravel"], py["T"].fget

    def reshape(self, *shape, order="C"):
        if enabled and order == "C":
            r = _view(R_RESHAPE, self, shape[0] if len(shape) == 1 else shape)
            if r is not _NOTHING:
                return r
        return reshape_py(self, *shape, order=order)

    def ravel(self, order="C"):
        if enabled and order == "C":
            r = _view(R_RESHAPE, self, (-1,))
            if r is not _NOTHING:
                return r
        return ravel_py(self, order)

    def T(self):
        if enabled:
            r = _view(R_TRANSPOSE, self, None)
            if r is not _NOTHING:
                return r
        return T_py(self)

    def __getitem__(self, idx):
        r = _element(self, idx)  # (as the Python path does, on or off)
        if r is _NOTHING and enabled:
            r = _getitem(self, idx)
        return getitem(self, idx) if r is _NOTHING else r

    def __array_function__(self, func, types, args, kwargs):
        if enabled:
            if func is _NP_CONCATENATE:
                r = _concat_call(args, kwargs) if _FUNCTIONS.get(func) is _CONCATENATE else _NOTHING
            elif func is _NP_RESHAPE:
                r = (_view(R_RESHAPE, args[0], args[1])
                     if len(args) == 2 and not kwargs and _FUNCTIONS.get(func) is _RESHAPE_FN
                     else _NOTHING)
            elif _REDUCERS is not None:
                r = _reduce_call(func, args, kwargs)
            else:
                r = _NOTHING
            if r is not _NOTHING:
                return r
        return array_function(self, func, types, args, kwargs)

    for f in (__array_ufunc__, __add__, __radd__, __sub__, __rsub__, __mul__, __rmul__,
              __truediv__, __rtruediv__, __pow__, __matmul__, __rmatmul__, __neg__,
              __getitem__, __array_function__, reshape, ravel):
        f.__doc__ = py[f.__name__].__doc__
        setattr(cls, f.__name__, f)
    cls.T = property(T, doc=py["T"].__doc__)


def is_enabled():
    """Whether the fast path is switched on."""
    return enabled


def set_enabled(flag):
    """Switch the fast path on or off (tests compare it with the Python path); returns the
    previous setting."""
    global enabled
    old = enabled
    enabled = bool(flag)
    return old
