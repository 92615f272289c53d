# cython: language_level=3
"""The compiled replayer of array steps (``deltaad._array_replay``): the loop of
:meth:`deltaad.compile_arrays.ArrayProgram.run` over its recorded numpy steps, in C.

A :class:`Plan` holds one recording's steps as C records. ``run`` walks them: a step whose
arguments are array slots and constants calls its numpy function with them (no Python frame
of ours in between) and checks what it gave (type, shape, dtype; a guard's outcome) as the
Python loop does; a step recorded as a plain elementwise ufunc call on C-contiguous float64
arrays of the result's shape and Python scalars (``fast``) calls numpy's own float64 inner
loop of that ufunc on the buffers, with the lengths and strides numpy's ufunc machinery passes
it for such operands (an array: its itemsize; a scalar: 0) -- numpy's bits, without numpy's
per-call dispatch (the same technique as the array duals' fast path, ``deltaad._arrays``).
Where an operand is not such an array on this call, or a loop raises a floating-point
exception (numpy would warn or raise by ``np.errstate``), the step calls the ufunc instead:
numpy itself then computes the same bits and reports what it reports. Steps that need Python
(arguments with recorded floats or containers, the scalar recording's interleaved
instructions) are handed back to the caller by index.
"""

cimport numpy as cnp
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_REFCNT
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from libc.string cimport memcmp

cdef extern from "<fenv.h>" nogil:
    int feclearexcept(int)
    int fetestexcept(int)
    int FE_DIVBYZERO
    int FE_OVERFLOW
    int FE_UNDERFLOW
    int FE_INVALID

cdef extern from "_fpe.h" nogil:
    void dad_clear_fpe(int)  # feclearexcept, only where a flag is set (a test is ~6x cheaper)

cnp.import_array()
cnp.import_umath()

ctypedef cnp.npy_intp intp

# what a step does
cdef enum:
    OP_PY = 0     # handed back to the caller
    OP_CALL = 1   # fn(*slots) or fn(*slots, **kwargs)
    OP_FAST = 2   # numpy's float64 loop of an elementwise ufunc, else OP_CALL
# how its result is checked
cdef enum:
    CK_NONE = 0   # a guard (compared with its outcome) or nothing
    CK_ARRAY = 1  # an ndarray of the recorded shape and dtype
    CK_TUPLE = 2  # a tuple (list) of the recorded type and length
    CK_TYPE = 3   # a numpy scalar of the recorded type
    CK_GUARD = 4  # a Python value: the recorded outcome

cdef int _FPE = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID
# a step's array is kept for the next call up to this many elements (512 KiB): a larger one
# costs less to allocate than to compute, and would hold memory between calls
cdef intp KEEP_MAX = 1 << 16


cdef struct Step:
    int op
    int check
    Py_ssize_t out        # the slot it fills (-1: none)
    Py_ssize_t nargs
    Py_ssize_t* args      # slot of each argument (constants have slots of their own)
    # OP_FAST: operand k is slot args[k] when isconst[k] is 0, else the scalar consts[k]
    int isconst[2]
    double consts[2]
    cnp.PyUFuncGenericFunction loop
    void* data
    int nd
    intp* dims            # CK_ARRAY and OP_FAST: the recorded shape
    intp size
    Py_ssize_t ndead
    Py_ssize_t* dead      # slots no later step reads: dropped after this one


cdef class Plan:
    """One recording's steps as the C loop runs them (see the module's docstring)."""

    cdef Step* steps
    cdef Py_ssize_t n
    cdef Py_ssize_t nslots
    cdef list fns         # per step: the callable
    cdef list kws         # per step: keyword arguments (dict) or None
    cdef list ctypes      # per step: the recorded type (CK_TUPLE, CK_TYPE)
    cdef list cdtypes     # per step: the recorded dtype (CK_ARRAY) or outcome (CK_GUARD)
    cdef object same      # the guards' comparison (compile_arrays._same_value)
    cdef list bufs        # per step: the array its loop last wrote (reused once no one holds it)

    def __cinit__(self):
        self.steps = NULL
        self.n = 0

    def __init__(self, rows, Py_ssize_t nslots, same):
        """``rows``: per step ``(op, check, fn, args, kwargs, out, ctype, cshape, cdtype,
        dead, fast)`` with ``fast`` None or ``(ufunc, operands)``, an operand an int (a slot)
        or a float (a scalar)."""
        cdef Py_ssize_t k, j, m
        cdef Step* s
        if self.steps != NULL:
            raise TypeError("array replay: a Plan is made once")
        rows = list(rows)
        m = len(rows)
        self.nslots = nslots
        self.same = same
        self.fns = []
        self.kws = []
        self.ctypes = []
        self.cdtypes = []
        self.bufs = [None] * m
        self.steps = <Step*>PyMem_Malloc((m if m else 1) * sizeof(Step))
        if self.steps == NULL:
            raise MemoryError("array replay: out of memory for %d steps" % m)
        for k in range(m):  # (every pointer NULL first: __dealloc__ frees what was made)
            s = &self.steps[k]
            s.args = NULL
            s.dims = NULL
            s.dead = NULL
            s.nargs = 0
            s.ndead = 0
            s.nd = 0
            s.op = OP_PY
        self.n = m
        for k in range(m):
            op, check, fn, args, kwargs, out, ctype, cshape, cdtype, dead, fast = rows[k]
            s = &self.steps[k]
            s.op = op
            s.check = check
            s.out = out
            if not -1 <= out < nslots:
                raise ValueError("array replay: step %d fills slot %d of %d" % (k, out, nslots))
            self.fns.append(fn)
            self.kws.append(kwargs if kwargs else None)
            self.ctypes.append(ctype)
            self.cdtypes.append(cdtype)
            if op == OP_PY:
                continue
            args = tuple(args)
            s.args = _slots(args, nslots)
            s.nargs = len(args)
            dead = tuple(dead)
            s.dead = _slots(dead, nslots)
            s.ndead = len(dead)
            if check == CK_ARRAY or op == OP_FAST:
                cshape = tuple(cshape)
                if len(cshape) > cnp.NPY_MAXDIMS:
                    raise ValueError("array replay: a shape of %d dimensions" % len(cshape))
                s.nd = len(cshape)
                s.dims = <intp*>PyMem_Malloc((s.nd if s.nd else 1) * sizeof(intp))
                if s.dims == NULL:
                    raise MemoryError("array replay: out of memory")
                s.size = 1
                for j in range(s.nd):
                    s.dims[j] = cshape[j]
                    s.size *= s.dims[j]
            elif check == CK_TUPLE:
                s.size = cshape
            if op == OP_FAST:
                ufunc, operands = fast
                if out < 0 or check != CK_ARRAY or s.nd < 1 or s.size < 1:
                    raise ValueError("array replay: step %d is no elementwise step" % k)
                _find_loop(ufunc, s)
                if len(operands) != (<cnp.ufunc>ufunc).nin or s.nargs != len(operands):
                    raise ValueError("array replay: step %d has %d operands for numpy.%s"
                                     % (k, len(operands), ufunc.__name__))
                for j in range(len(operands)):
                    if type(operands[j]) is float:
                        s.isconst[j] = 1
                        s.consts[j] = operands[j]
                    else:
                        s.isconst[j] = 0
                        s.consts[j] = 0.0

    def __dealloc__(self):
        cdef Py_ssize_t k
        if self.steps != NULL:
            for k in range(self.n):
                PyMem_Free(self.steps[k].args)
                PyMem_Free(self.steps[k].dims)
                PyMem_Free(self.steps[k].dead)
            PyMem_Free(self.steps)

    @property
    def nfast(self):
        """How many steps run numpy's loops directly (when their operands allow)."""
        cdef Py_ssize_t k, c = 0
        for k in range(self.n):
            if self.steps[k].op == OP_FAST:
                c += 1
        return c

    def run(self, list vals, Py_ssize_t start, list fail):
        """Run the steps from ``start`` on ``vals`` (the slots' values, in place): the index
        of the first step the caller must run (``len`` of the steps at the end), or -1 when a
        step's result or a guard differs from the recording's (``(step, what it gave)`` then
        appended to ``fail``) or the step raised (numpy's error: the caller records afresh)."""
        cdef Py_ssize_t k, j
        cdef Step* s
        cdef object r
        if PyList_GET_SIZE(vals) != self.nslots:
            raise ValueError("array replay: %d values for %d slots" % (len(vals), self.nslots))
        if start < 0:
            start = 0
        for k in range(start, self.n):
            if PyList_GET_SIZE(vals) != self.nslots:  # (the slots' bounds were checked for it)
                raise RuntimeError("array replay: the values changed length")
            s = &self.steps[k]
            if s.op == OP_PY:
                return k
            r = None
            if s.op == OP_FAST:
                r = _fast(s, vals, self.bufs, k)
            if r is None:
                try:
                    r = self._call(k, s, vals)
                except Exception:
                    fail.append((k, None))
                    return -1
                if not self._check(k, s, r):
                    fail.append((k, r))
                    return -1
            if s.out >= 0:
                vals[s.out] = r
            for j in range(s.ndead):
                vals[s.dead[j]] = None
        return self.n

    cdef object _call(self, Py_ssize_t k, Step* s, list vals):
        cdef Py_ssize_t j
        cdef object o
        cdef tuple a = PyTuple_New(s.nargs)
        for j in range(s.nargs):
            o = <object>PyList_GET_ITEM(vals, s.args[j])
            Py_INCREF(o)
            PyTuple_SET_ITEM(a, j, o)
        fn = <object>PyList_GET_ITEM(self.fns, k)
        kw = <object>PyList_GET_ITEM(self.kws, k)
        if kw is None:
            return fn(*a)
        return fn(*a, **kw)

    cdef bint _check(self, Py_ssize_t k, Step* s, object r) except -1:
        cdef int j
        cdef intp* d
        if s.check == CK_ARRAY:
            if type(r) is not cnp.ndarray or cnp.PyArray_NDIM(<cnp.ndarray>r) != s.nd:
                return False
            d = cnp.PyArray_DIMS(<cnp.ndarray>r)
            for j in range(s.nd):
                if d[j] != s.dims[j]:
                    return False
            dt = <object>PyList_GET_ITEM(self.cdtypes, k)
            rdt = <object><PyObject*>cnp.PyArray_DESCR(<cnp.ndarray>r)
            return rdt is dt or rdt == dt
        if s.check == CK_TYPE:
            return type(r) is <object>PyList_GET_ITEM(self.ctypes, k)
        if s.check == CK_TUPLE:
            return type(r) is <object>PyList_GET_ITEM(self.ctypes, k) and len(r) == s.size
        if s.check == CK_GUARD:
            return bool(self.same(r, <object>PyList_GET_ITEM(self.cdtypes, k)))
        return True


cdef Py_ssize_t* _slots(tuple idx, Py_ssize_t nslots) except? NULL:
    cdef Py_ssize_t j, m = len(idx)
    cdef Py_ssize_t* p = <Py_ssize_t*>PyMem_Malloc((m if m else 1) * sizeof(Py_ssize_t))
    if p == NULL:
        raise MemoryError("array replay: out of memory")
    for j in range(m):
        p[j] = idx[j]
        if not 0 <= p[j] < nslots:
            PyMem_Free(p)
            raise ValueError("array replay: slot %d of %d" % (p[j], nslots))
    return p


cdef int _find_loop(object ufunc, Step* s) except -1:
    """The ufunc's loop for all-float64 operands (what numpy's loop selector picks for them)."""
    if type(ufunc) is not cnp.ufunc:
        raise TypeError("array replay: %r is no ufunc" % (ufunc,))
    cdef cnp.ufunc u = <cnp.ufunc>ufunc
    cdef int nargs = u.nargs
    cdef int k, j
    cdef bint ok
    if u.nout != 1 or not 1 <= u.nin <= 2:
        raise ValueError("array replay: numpy.%s is no elementwise ufunc of 1 or 2 operands"
                         % u.__name__)
    for k in range(u.ntypes):
        ok = True
        for j in range(nargs):
            if u.types[k * nargs + j] != cnp.NPY_DOUBLE:
                ok = False
                break
        if ok:
            s.loop = u.functions[k]
            s.data = u.data[k]
            return 0
    raise ValueError("array replay: numpy.%s has no float64 loop" % u.__name__)


cdef inline bint _plain(object v, Step* s) noexcept:
    """An operand the loop takes: an exact ndarray of native float64, C-contiguous and aligned,
    of the step's shape."""
    if type(v) is not cnp.ndarray:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>v
    if not (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISCARRAY_RO(a)
            and cnp.PyArray_ISNOTSWAPPED(a)) or cnp.PyArray_NDIM(a) != s.nd:
        return False
    cdef intp* d = cnp.PyArray_DIMS(a)
    cdef int j
    for j in range(s.nd):
        if d[j] != s.dims[j]:
            return False
    return True


cdef object _fast(Step* s, list vals, list bufs, Py_ssize_t k):
    """The step by numpy's loop, or None where it must call the ufunc (see the module).

    Its result goes into the array this step made on an earlier call when nothing but
    ``bufs`` holds that array any more (its reference count says so: not the caller, who may
    have been handed it, nor a view of it, nor this call's values), else into a new one."""
    cdef char* args[3]
    cdef intp steps[3]
    cdef intp n = s.size
    cdef Py_ssize_t j
    cdef object v
    for j in range(s.nargs):
        if s.isconst[j]:
            args[j] = <char*>&s.consts[j]
            steps[j] = 0
        else:
            v = <object>PyList_GET_ITEM(vals, s.args[j])
            if not _plain(v, s):
                return None
            args[j] = cnp.PyArray_BYTES(<cnp.ndarray>v)
            steps[j] = 8
    cdef PyObject* b = PyList_GET_ITEM(bufs, k)
    cdef object out
    if b != <PyObject*>None and Py_REFCNT(<object>b) == 1:
        out = <object>b  # (the arrays made here: exact float64 ndarrays of the step's shape)
    else:
        out = cnp.PyArray_SimpleNew(s.nd, s.dims, cnp.NPY_DOUBLE)
        if n <= KEEP_MAX:
            bufs[k] = out
    args[s.nargs] = cnp.PyArray_BYTES(<cnp.ndarray>out)
    steps[s.nargs] = 8
    dad_clear_fpe(_FPE)
    s.loop(args, &n, steps, s.data)
    if fetestexcept(_FPE):
        feclearexcept(_FPE)
        return None
    return out


def same_bits(a, b):
    """Whether ndarrays ``a`` and ``b`` (C-contiguous, same shape and dtype) hold the same
    bytes: a memcmp, where ``a.tobytes() == b.tobytes()`` copies both (a constant's check on
    every replay). None where they are not such arrays (the caller compares otherwise)."""
    if type(a) is not cnp.ndarray or type(b) is not cnp.ndarray:
        return None
    cdef cnp.ndarray x = <cnp.ndarray>a
    cdef cnp.ndarray y = <cnp.ndarray>b
    if not (cnp.PyArray_IS_C_CONTIGUOUS(x) and cnp.PyArray_IS_C_CONTIGUOUS(y)):
        return None
    cdef intp n = cnp.PyArray_NBYTES(x)
    if n != cnp.PyArray_NBYTES(y):
        return False
    if <PyObject*>cnp.PyArray_DESCR(x) != <PyObject*>cnp.PyArray_DESCR(y) and x.dtype != y.dtype:
        return False
    if not cnp.PyArray_SAMESHAPE(x, y):
        return False
    return memcmp(cnp.PyArray_BYTES(x), cnp.PyArray_BYTES(y), <size_t>n) == 0


def first_changed(list consts, list copies):
    """The index of the first array of ``consts`` whose bytes differ from its copy in
    ``copies`` (same shapes and dtypes, both C-contiguous: checked when recorded, and
    again here, where any other pair counts as changed), or -1: the constants' check of every
    replay in one call."""
    cdef Py_ssize_t k, m = len(consts)
    if len(copies) != m:
        raise ValueError("first_changed: %d constants, %d copies" % (m, len(copies)))
    for k in range(m):
        if same_bits(consts[k], copies[k]) is not True:
            return k
    return -1
