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
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_Check
from libc cimport math as cm
from libc.stdint cimport int32_t
from libc.string cimport memset
from libc.string cimport memcpy
from libc.stdint cimport int64_t, uint64_t
from cpython.object cimport PyObject, PyTypeObject, destructor
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject_RichCompare, Py_LT, Py_LE, Py_EQ, Py_NE, Py_GT, Py_GE

cdef extern from "Python.h":
    void PyType_Modified(PyTypeObject* t)
    void PyObject_GC_UnTrack(void* o)
    void PyObject_GC_Track(void* o)
    int PyObject_GC_IsTracked(PyObject* o)
    void PyObject_Free(void* p)
    ctypedef struct PyListObject:
        PyObject** ob_item
    void Py_SET_SIZE(PyObject* o, Py_ssize_t n)
    ctypedef struct PyTupleObject:
        PyObject** ob_item
    ctypedef struct PyFloatObject:
        double ob_fval
    PyObject* _new_float "PyFloat_FromDouble"(double x)

cdef extern from *:
    """
    #include <string.h>
    #define deltaad_steal(p) ((PyObject *)(p))
    /* a forward dual's float tangent lives in the 8 bytes of the id's slot (see Dual) */
    static inline double deltaad_load_t(const Py_ssize_t* p) {
        double t; memcpy(&t, p, sizeof(double)); return t; }
    static inline void deltaad_store_t(Py_ssize_t* p, double t) {
        memcpy(p, &t, sizeof(double)); }
    /* a dual's trace field read and written as a plain pointer, for stores whose references
       are counted apart (in bulk, or the handle's and None's once each); macros: the struct
       is declared further down */
    /* The common step of _rec1/_rec2 calls nothing: their rare cases (_rec1_slow,
       _rec2_slow) are never inlined into them, so the common one saves no register and is
       itself small enough to inline into each arithmetic slot; and they are called as a
       tail call (the aliases below: no check of the result, which the caller makes). */
    #if defined(__GNUC__) || defined(__clang__)
    #define DELTAAD_NOINLINE __attribute__((noinline))
    #elif defined(_MSC_VER)
    #define DELTAAD_NOINLINE __declspec(noinline)
    #else
    #define DELTAAD_NOINLINE
    #endif
    DELTAAD_NOINLINE static PyObject *__pyx_f_7deltaad_5_core__rec1_slow(PyObject *, double,
                                                                        double);
    DELTAAD_NOINLINE static PyObject *__pyx_f_7deltaad_5_core__rec2_slow(PyObject *, PyObject *,
                                                                        double, double, double);
    DELTAAD_NOINLINE static void __pyx_f_7deltaad_5_core__dual_dealloc_slow(PyObject *);
    /* (an int operand: rare beside floats, kept out of the arithmetic slots) */
    DELTAAD_NOINLINE static PyObject *__pyx_f_7deltaad_5_core__nb_add_int(PyObject *, PyObject *);
    DELTAAD_NOINLINE static PyObject *__pyx_f_7deltaad_5_core__nb_sub_int(PyObject *, PyObject *);
    DELTAAD_NOINLINE static PyObject *__pyx_f_7deltaad_5_core__nb_mul_int(PyObject *, PyObject *);
    DELTAAD_NOINLINE static PyObject *__pyx_f_7deltaad_5_core__nb_div_int(PyObject *, PyObject *);
    #define deltaad_rec1_slow __pyx_f_7deltaad_5_core__rec1_slow
    #define deltaad_rec2_slow __pyx_f_7deltaad_5_core__rec2_slow
    #define deltaad_get_tr(o) \
        ((PyObject *)((struct __pyx_obj_7deltaad_5_core_Dual *)(o))->tr)
    #define deltaad_set_tr(o, h) (((struct __pyx_obj_7deltaad_5_core_Dual *)(o))->tr = \
        (struct __pyx_obj_7deltaad_5_core_TraceHandle *)(h))
    """
    double _load_t "deltaad_load_t"(const Py_ssize_t* p) noexcept nogil
    void _store_t "deltaad_store_t"(Py_ssize_t* p, double t) noexcept nogil
    # a new reference held in a C pointer, handed to Cython as the object it owns (no count)
    object _steal "deltaad_steal"(PyObject* p)
    PyObject* _get_tr "deltaad_get_tr"(PyObject* o) noexcept nogil
    void _set_tr "deltaad_set_tr"(PyObject* o, PyObject* h) noexcept nogil
    # _rec1_slow/_rec2_slow, their NULL (an exception set) handed on as it is
    PyObject* _rec1_slow_tail "deltaad_rec1_slow"(PyObject* a, double v, double ca) noexcept
    PyObject* _rec2_slow_tail "deltaad_rec2_slow"(PyObject* a, PyObject* b, double v, double ca,
                                                  double cb) noexcept

cdef extern from "Python.h":
    void _list_steal "PyList_SET_ITEM"(object lst, Py_ssize_t i, PyObject* o)  # steals o
    bytearray PyByteArray_FromStringAndSize(const char* s, Py_ssize_t n)
    char* PyByteArray_AS_STRING(object b)
    const Py_ssize_t PY_SSIZE_T_MAX

from deltaad._plainmath import math as _math
import numbers as _numbers
from operator import add as _pyadd  # 0.0 + o as Python adds it (never through float(o))
from operator import index as _index

from deltaad import _rules
from deltaad import elementwise as _table
from deltaad._errors import (DUAL_NEW, escaped_error, exact_ratio_error, formatted,
                             kept_intermediate_error,
                             no_float_error, step_reads_error, trace_call_error)

cdef double INF = _math.inf
cdef double NAN = _math.nan
cdef double LN2 = _table.LN2
cdef double LN10 = _table.LN10
cdef double TWO_OVER_SQRT_PI = _table.TWO_OVER_SQRT_PI

_hooks = {"fallback": None, "array_ufunc": None, "array_function": None, "complex": None}
cdef dict _scalar_ufuncs = None  # see set_hooks
cdef object _constant_ufuncs = None
cdef object _float64 = None

# The recording value type of ``deltaad.compile`` (None until it is imported): a number below
# every dual that records the float operations done on it. Three places treat it as a float:
# a constant operand, the zero test (a recorded comparison), and the sweep's result.
cdef object _recorder = None


def set_recorder_type(cls):
    """Declare ``cls`` the recording number type (see ``deltaad._replay_pure``)."""
    global _recorder
    _recorder = cls


cdef object _dispatch_type = None
cdef object _recorder_dispatch = None


def set_recorder_dispatch(cls, fn):
    """``fn(name, x)`` applies the unary primitive ``name`` to ``x``, a ``cls``: called at once
    by ``sin(x)``... (``deltaad.compile``'s gradient recordings make one per call)."""
    global _dispatch_type, _recorder_dispatch
    _dispatch_type = cls
    _recorder_dispatch = fn


def set_hooks(fallback, array_ufunc, array_function=None, complex_binop=None,
              scalar_ufuncs=None, constant_ufuncs=None):
    """Install the numpy glue: ``fallback(name, *args)``, ``array_ufunc(ufunc, method, inputs,
    kwargs)``, ``array_function(dual, func, types, args, kwargs)`` and ``complex_binop(op, a,
    b)`` (an operator meeting a complex operand; NotImplemented for anything else);
    ``scalar_ufuncs`` (ufunc -> its function of floats and scalar duals, a dict the glue keeps
    filling) and ``constant_ufuncs`` (a set of ufuncs with derivative 0), which
    ``__array_ufunc__`` reads itself for the commonest call, ``np.exp(x)`` of scalars."""
    global _scalar_ufuncs, _constant_ufuncs, _float64
    _hooks["fallback"] = fallback
    _hooks["array_ufunc"] = array_ufunc
    _hooks["array_function"] = array_function
    _hooks["complex"] = complex_binop
    _scalar_ufuncs = scalar_ufuncs
    _constant_ufuncs = constant_ufuncs
    if scalar_ufuncs is not None:  # numpy's float scalar: kept as it is by the hook as well
        from deltaad._plainnumpy import np
        _float64 = np.float64


# numpy's unary functions of a float dual (``np.exp(x)``) in C: the array fast path's
# ``_scalar_unary`` (``deltaad._arrays``: numpy's loops on one float, the table's derivative
# over them; 0 where numpy's own call must be made), and the table's scalar functions it stands
# for, by their code there. Keyed by the function ``_scalar_ufuncs`` holds, so a rule the user
# puts in its place is called instead.
ctypedef int (*np_unary_t)(int, double, double*, double*) noexcept
cdef np_unary_t _np_unary = NULL
cdef dict _np_unary_codes = {}


def set_numpy_unary(capsule, codes):
    """Install (a capsule named ``deltaad._arrays.scalar_unary`` and a dict: scalar function
    -> code) or remove (None, {}) the C path of ``np.<ufunc>(x)`` for a float dual ``x``."""
    global _np_unary, _np_unary_codes
    if capsule is None:
        _np_unary = NULL
    else:
        _np_unary = <np_unary_t>PyCapsule_GetPointer(capsule, "deltaad._arrays.scalar_unary")
    _np_unary_codes = dict(codes)


cdef extern from *:
    """
    /* ``t`` is ``ModuleType`` or a direct subclass that adds nothing to its instances
       (``__slots__ = ()``): the same size, dict, weak-reference list, freeing and
       garbage-collector support. Any two such classes may be swapped on a module, as
       ``module.__class__ = cls`` allows (CPython's compatible_for_assignment then finds
       ModuleType as the common base with nothing added). */
    #ifdef Py_TPFLAGS_MANAGED_WEAKREF
    #define DELTAAD_LAYOUT_FLAGS (Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_MANAGED_DICT | \
                                  Py_TPFLAGS_MANAGED_WEAKREF)
    #else
    #define DELTAAD_LAYOUT_FLAGS (Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_MANAGED_DICT)
    #endif
    static int deltaad_module_layout(PyTypeObject *t) {
        PyTypeObject *m = &PyModule_Type;
        unsigned long f = DELTAAD_LAYOUT_FLAGS;
        return t == m || (t->tp_base == m && (PyType_GetFlags(t) & Py_TPFLAGS_HEAPTYPE)
            && t->tp_basicsize == m->tp_basicsize && t->tp_itemsize == m->tp_itemsize
            && t->tp_dictoffset == m->tp_dictoffset
            && t->tp_weaklistoffset == m->tp_weaklistoffset && t->tp_free == m->tp_free
            && (PyType_GetFlags(t) & f) == (PyType_GetFlags(m) & f));
    }
    /* give module ``o`` the class ``t`` as object.__class__'s setter does where both classes
       have a module's layout (its audit event, the heap classes' references): 1 when done,
       0 when not (they have not: nothing done, no event), -1 on an error. The class is read
       again after the audit hooks, which run Python code. */
    static int deltaad_swap_module_class(PyObject *o, PyTypeObject *t) {
        PyTypeObject *old;
        if (!deltaad_module_layout(Py_TYPE(o)) || !deltaad_module_layout(t))
            return 0;
        if (PySys_Audit("object.__setattr__", "OsO", o, "__class__", (PyObject *)t) < 0)
            return -1;
        old = Py_TYPE(o);
        if (!deltaad_module_layout(old))  /* a hook changed it meanwhile */
            return 0;
        if (old == t)
            return 1;
        if (PyType_GetFlags(t) & Py_TPFLAGS_HEAPTYPE)
            Py_INCREF(t);
        Py_SET_TYPE(o, t);
        if (PyType_GetFlags(old) & Py_TPFLAGS_HEAPTYPE)
            Py_DECREF(old);
        return 1;
    }
    """
    int _swap_module_class "deltaad_swap_module_class"(object o, PyTypeObject* t) except -1
    PyTypeObject* _type_of "Py_TYPE"(object o)
    bint PyModule_Check(object o)


def set_module_classes(tuple modules, tuple classes):
    """``modules[k].__class__ = classes[k]`` for each k. ``deltaad.stdmath`` switches the
    classes of ``math``, numpy and others twice per differentiation, and the attribute's
    generic checks cost more than the rest of a short gradient's opening; where both classes
    have a module's exact layout (``deltaad_module_layout``) the class is swapped here
    directly, with the audit event and the class references the attribute has. Anything
    else goes through the attribute, which checks it."""
    cdef Py_ssize_t k
    if len(modules) != len(classes):
        raise ValueError("set_module_classes: one class per module")
    for k in range(len(modules)):
        m = modules[k]
        c = classes[k]
        if isinstance(c, type) and PyModule_Check(m):
            if _type_of(m) == <PyTypeObject*>c or _swap_module_class(m, <PyTypeObject*>c):
                continue
        m.__class__ = c


cdef PyObject** _items(object xs, Py_ssize_t* n):
    """The item array of a list or tuple (borrowed; valid until it is next changed; NULL when
    empty) and its length in ``n``; ``n`` is -1 for any other object."""
    if type(xs) is list:
        n[0] = len(<list>xs)
        return (<PyListObject*>xs).ob_item
    if type(xs) is tuple:
        n[0] = len(<tuple>xs)
        return (<PyTupleObject*>xs).ob_item
    n[0] = -1
    return NULL


def all_floats(xs):
    """True when every item of the list or tuple ``xs`` is exactly a float (one C loop)."""
    cdef Py_ssize_t k, n
    cdef PyObject** it = _items(xs, &n)
    cdef PyTypeObject* tf = <PyTypeObject*>float
    if n < 0:
        for x in xs:
            if type(x) is not float:
                return False
        return True
    for k in range(n):  # no Python code runs in this loop: the item array stays put
        if it[k].ob_type != tf:
            return False
    return True


def float_copy(xs):
    """A new list of the items of the list or tuple ``xs`` when every one is exactly a float;
    None otherwise (a flat float argument flattened and checked in one C loop)."""
    cdef Py_ssize_t k, n
    if type(xs) is not list and type(xs) is not tuple:
        return None
    cdef list out = PyList_New(len(xs))  # slots NULL until set: safe to free at any point
    cdef PyObject** it = _items(xs, &n)  # read after the allocation (which may run Python)
    cdef PyTypeObject* tf = <PyTypeObject*>float
    if n != len(out):
        return None
    for k in range(n):  # no Python code runs in this loop
        if it[k].ob_type != tf:
            return None
        Py_INCREF(<object>it[k])
        _list_steal(out, k, it[k])
    return out


def all_scalars(xs):
    """True when every item of the list or tuple ``xs`` is a float or a scalar dual (a run of
    pytree leaves: flattened without a step per item)."""
    cdef Py_ssize_t k, n
    cdef PyObject** it = _items(xs, &n)
    cdef PyTypeObject* tf = <PyTypeObject*>float
    cdef PyTypeObject* td = <PyTypeObject*>Dual
    if n < 0:
        return False
    for k in range(n):
        if it[k].ob_type != tf and it[k].ob_type != td:
            return False
    return True


def read_outputs(list leaves, Trace tape):
    """``(ids, values)`` of output ``leaves`` when every one is a dual of ``tape`` with a float
    value (the common output: one C loop), ``ids`` a range when they are evenly spaced; None
    otherwise (the caller checks leaf by leaf)."""
    global _kept_mark
    cdef Py_ssize_t k, m = len(leaves)
    cdef object x, y
    cdef list vals = PyList_New(m)  # first: making it may run Python code (a collection)
    cdef Py_ssize_t step = 1, first = 0, prev = 0
    cdef bint even = True
    _kept_floats_from(0)
    for k in range(m):  # each item checked where it is read: no Python code runs in the loop
        if m != len(leaves):
            return None
        x = leaves[k]
        if type(x) is not Dual or (<Dual>x).tr is not tape.h or (<Dual>x).ov is not None:
            return None
        if k == 0:
            first = (<Dual>x).i
        elif k == 1:
            step = (<Dual>x).i - prev
            even = step > 0
        elif (<Dual>x).i - prev != step:
            even = False
        prev = (<Dual>x).i
        _list_steal(vals, k, _kept_float((<Dual>x).v))
    _kept_mark = _fkeep_at
    if m and even:  # evenly spaced ids (an elementwise map's outputs): no int per output
        return range(first, first + m * step, step), vals
    cdef list ids = PyList_New(m)
    if m != len(leaves):
        return None
    for k in range(m):
        x = leaves[k]
        if type(x) is not Dual:
            return None
        y = (<Dual>x).i
        Py_INCREF(y)
        PyList_SET_ITEM(ids, k, y)
    return ids, vals


def read_tangents(list leaves, Trace level):
    """``(values, tangents)`` of output ``leaves`` when every one is a dual of the forward
    ``level`` with a float value and tangent; None otherwise (see ``read_outputs``)."""
    cdef Py_ssize_t k, m = len(leaves)
    cdef object x
    cdef list vals = PyList_New(m)
    cdef list tans = PyList_New(m)
    _kept_floats_from(0)
    for k in range(m):
        if m != len(leaves):
            return None
        x = leaves[k]
        if type(x) is not Dual or (<Dual>x).tr is not level.h or (<Dual>x).ov is not None:
            return None  # (ov None: a float value and a float tangent)
        _list_steal(vals, k, _kept_float((<Dual>x).v))
        _list_steal(tans, k, _kept_float(_load_t(&(<Dual>x).i)))
    return vals, tans


# The input list of duals of the last gradient of a list of floats, kept whole by
# ``free_inputs`` instead of its duals freed one by one: the next ``float_inputs`` takes them
# over in place (``_reuse_inputs``), so each input's dual is touched once between two gradients
# rather than once to free it and once to make it again. Past the caches (a list of 10^6
# floats: 48 MB of duals) each touch is a miss per dual. The list is untracked by the garbage
# collector while kept (a collection would visit every dual in it; no cycle goes through it:
# only this module refers to it), tracked again when handed out. ``_istash_h`` is the handle
# its duals were made on (each holds a reference to it). Both None when nothing is kept; let
# go (its duals freed as before, ``_free_input_list``) when another list is kept, by
# ``release_memory`` and when tracemalloc starts tracing (``_drop_input_stash``). A list is
# kept only if the kept duals (``_dfree``) have room for its duals: the two together hold no
# more than DFREE_MAX duals when it is kept.
cdef object _istash = None
cdef object _istash_h = None


def free_inputs(list holder, Py_ssize_t k, Trace trace):
    """Drop ``holder[k]``, the list of input duals of ``trace`` (``float_inputs``'): kept as
    it is for the next ``float_inputs`` to take its duals (see ``_istash``) when nothing but
    ``holder`` refers to it (else the user kept it, and it stays as it is); the list kept
    before goes (``_free_input_list``)."""
    _free_inputs(holder, k, trace)


cdef int _free_inputs(list holder, Py_ssize_t k, Trace trace) except -1:
    global _istash, _istash_h
    if not 0 <= k < len(holder):
        return 0
    cdef PyObject* lp = (<PyListObject*>holder).ob_item[k]
    if lp.ob_type != <PyTypeObject*>list or lp.ob_refcnt != 1 or not _dfree_on:
        holder[k] = None
        return 0
    # the list kept before goes; dropped on return (its deallocation may run Python code:
    # ``lp`` stays holder's until then)
    cdef object old = _drop_input_stash()
    if len(<list>lp) > DFREE_MAX - _dfree_n:  # no more than the kept duals have room for
        _free_input_list(<object>lp, trace.h)
        holder[k] = None
        return 0
    PyObject_GC_UnTrack(lp)
    _istash = <object>lp  # counted: holder's reference goes below
    _istash_h = trace.h
    holder[k] = None
    return 0


cdef list _float_inputs(Trace trace, Tape tape, object xs, object ts, Py_ssize_t m):
    """The ``m`` input duals of ``float_inputs`` for the floats ``xs``: a tape's (``tape`` is
    ``trace``; ids from its ``n``, bindings there, below its capacity; ``ts`` None) or a
    forward level's (``tape`` None; tangents ``ts``, ``m`` of them). None, with nothing kept,
    if an item is not a float. The duals are, in turn, the kept input list's (``_istash``),
    kept ones (``_dfree``) and fresh ones; the kept list is the result itself when it has
    ``m`` items and all of them are taken (no list made, none freed)."""
    global _istash, _istash_h
    cdef Py_ssize_t k, mt = m, r = 0, start = tape.n if tape is not None else 0
    cdef object stash = _istash  # taken off first: nothing else sees it while this runs
    cdef object stash_h = _istash_h
    cdef list out
    cdef bint in_place = stash is not None and len(<list>stash) == m
    if stash is not None:
        _istash = None
        _istash_h = None
    out = <list>stash if in_place else PyList_New(m)  # (slots NULL until set)
    cdef PyObject** it = _items(xs, &k)  # read after the allocation (which may run Python)
    cdef PyObject** tt = _items(ts, &mt) if ts is not None else NULL
    if k != m or mt != m or (tape is not None and tape.n != start):
        return None  # (``out`` goes, with any duals in it)
    cdef PyObject* h = <PyObject*>trace.h
    cdef PyObject** oi = (<PyListObject*>out).ob_item
    cdef Binding* b = tape.b + start if tape is not None else NULL  # below cap (the caller's)
    if stash is not None:
        r = _reuse_inputs(stash, stash_h, oi, it, tt, m, h, start, b)
    if in_place:
        if r < m:  # (rare: the program kept an input or put something else in the list)
            # a list of its own after all: the duals made go there, the rest go with the
            # kept list (consistent while the allocation may run Python code)
            out = PyList_New(m)
            oi = (<PyListObject*>out).ob_item
            memcpy(oi, (<PyListObject*>stash).ob_item, r * sizeof(PyObject*))
            memset((<PyListObject*>stash).ob_item, 0, r * sizeof(PyObject*))
            it = _items(xs, &k)
            tt = _items(ts, &mt) if ts is not None else NULL
            if k != m or mt != m or (tape is not None and tape.n != start):
                return None
            b = tape.b + start if tape is not None else NULL
        else:
            stash = None  # it is ``out``
            if not PyObject_GC_IsTracked(<PyObject*>out):
                PyObject_GC_Track(<PyObject*>out)
    cdef PyObject* o
    cdef PyTypeObject* tf = <PyTypeObject*>float
    cdef Py_ssize_t nz = _zombies_for(m - r)  # the next nz duals: kept ones, counted at once
    # read once (no Python code runs in the first loop: nothing moves them)
    cdef Py_ssize_t top = _dfree_n - 1 + r
    for k in range(r, r + nz):  # no Python code runs: the item arrays and ``b`` stay put
        if it[k].ob_type != tf or (tt != NULL and tt[k].ob_type != tf):
            _taken(k - r, h)
            return None  # ``out`` and the duals made so far go; n was never advanced
        o = _zombie_at(top - k, h)
        _as_input(o, it, tt, k, start, b)
        oi[k] = o
    _taken(nz, h)
    for k in range(r + nz, m):  # the rest, made afresh
        if it[k].ob_type != tf or (tt != NULL and tt[k].ob_type != tf):
            return None
        o = _alloc_raw(h)
        _as_input(o, it, tt, k, start, b)
        _list_steal(out, k, o)
    return out


cdef object _drop_input_stash():
    """Let the kept input list go (see ``_istash``): its duals freed at once, the list
    returned, for the caller to drop when Python code may run (None if none was kept)."""
    global _istash, _istash_h
    cdef object old = _istash
    cdef object old_h = _istash_h
    _istash = None
    _istash_h = None
    if old is not None:
        _free_input_list(old, old_h)
    return old


cdef Py_ssize_t _reuse_inputs(list stash, object stash_h, PyObject** oi, PyObject** it,
                              PyObject** tt, Py_ssize_t m, PyObject* h, Py_ssize_t start,
                              Binding* b) noexcept:
    """Make input duals of ``h`` (see ``_as_input``) from the kept list ``stash``'s duals, in
    place, from the first while each is a float dual of ``stash_h`` that only ``stash`` holds
    and its input (and tangent) is a float; input ``k`` goes to ``oi[k]``. Returns how many
    were made. Unless ``oi`` is ``stash``'s own item array, their slots in ``stash`` are
    emptied (the rest go with it). No Python code runs."""
    cdef PyObject* lp = <PyObject*>stash
    cdef PyObject** items = (<PyListObject*>lp).ob_item
    cdef Py_ssize_t r = 0, n = len(stash)
    cdef Py_ssize_t lim = n if n < m else m
    cdef PyObject* d
    cdef PyObject* h0 = <PyObject*>stash_h
    cdef PyObject* none = <PyObject*>None
    cdef PyTypeObject* td = <PyTypeObject*>Dual
    cdef PyTypeObject* tf = <PyTypeObject*>float
    while r < lim:  # no Python code runs: the lists are held, the handles too
        d = items[r]
        if (d.ob_type != td or d.ob_refcnt != 1 or _get_tr(d) != h0
                or <PyObject*>(<Dual>d).ov != none or it[r].ob_type != tf
                or (tt != NULL and tt[r].ob_type != tf)):
            break
        _as_input(d, it, tt, r, start, b)
        _set_tr(d, h)
        oi[r] = d
        r += 1
    h.ob_refcnt += r
    h0.ob_refcnt -= r  # stash_h holds one more: never zero here
    if oi != items:
        if r == n:
            Py_SET_SIZE(lp, 0)
        else:
            memset(items, 0, r * sizeof(PyObject*))  # the list's deallocation skips them
    return r


cdef void _free_input_list(object lst, object handle):
    """Free the duals of an input list of ``handle`` that only the list holds in one C loop:
    each float one goes straight to the kept duals, without a deallocation call per dual;
    then the list goes, with the duals left in it."""
    global _dfree_n
    cdef PyObject* lp = <PyObject*>lst
    cdef PyObject** items = (<PyListObject*>lp).ob_item
    cdef Py_ssize_t j, m = len(<list>lst), n = m
    cdef Py_ssize_t top = _dfree_n, start = _dfree_n
    cdef PyObject* d
    cdef PyObject* h = <PyObject*>handle
    cdef PyObject* none = <PyObject*>None
    cdef PyTypeObject* td = <PyTypeObject*>Dual
    if not _dfree_on:
        return  # (the list goes as it is)
    if m > DFREE_MAX - top:
        m = DFREE_MAX - top
    for j in range(m):  # no Python code runs: the list is ours, the handle stays alive
        d = items[j]
        if (d.ob_type != td or d.ob_refcnt != 1 or _get_tr(d) != h
                or <PyObject*>(<Dual>d).ov != none):
            continue
        # what _dual_dealloc does (a zombie, see _dfree: tr None, reference count 0), with the
        # references to the handle and to None counted once below
        _set_tr(d, none)
        d.ob_refcnt = 0
        _dfree[top] = d
        top += 1
    _dfree_n = top
    none.ob_refcnt += top - start
    h.ob_refcnt -= top - start  # ``handle`` holds one more: it never reaches zero here
    # the list's deallocation must not see the duals that went: when all went (the common
    # case), the list is emptied in one step; else their slots are cleared, found without
    # touching a dual again: they are _dfree[start:top], in the list's order (a dual that
    # went is in one slot only: one in two would have had a count of 2)
    cdef Py_ssize_t q = start
    if top - start == n:
        Py_SET_SIZE(lp, 0)
    else:
        for j in range(m):
            if q < top and items[j] == _dfree[q]:
                items[j] = NULL  # the list's deallocation skips it
                q += 1


# --------------------------------------------------------------------------------------------
# Traces

@cython.final
@cython.freelist(16)
@cython.auto_pickle(False)
cdef class TraceHandle:
    """What a dual names of its trace: the trace's level, its open/closed state and its kind,
    and the trace itself as a pointer the trace clears when it is freed.

    A dual never keeps its trace alive. A tape can hold anything (a custom rule's closure, its
    residuals, outer duals as coefficients); a scalar dual is not tracked by the garbage
    collector (that is much of its speed), so a dual that owned its tape would make every
    cycle tape -> rule -> dual -> tape invisible to the collector, and the tape would leak.
    A handle holds no Python object, so no cycle runs through it. The tape is kept by whoever
    must keep it (the thread's stack of open traces, the differentiation that swept it, a
    ``vjp`` function, a checkpoint's node); when the last of them goes, the tape is freed and
    its handle closed for good: the duals left over are escaped, as any dual of a finished
    differentiation. Python code never sees a live handle (``Dual.trace`` gives the trace);
    a finished trace's duals give their handle, which reads as a closed trace."""

    cdef readonly Py_ssize_t level
    cdef readonly bint closed
    cdef readonly bint is_forward
    cdef PyObject* trace  # borrowed: the Trace, NULL once it is freed (then ``closed``)
    cdef object __weakref__  # as a trace's: code that watches ``x.trace`` may watch this

    def __repr__(self):
        return "<finished %s trace of level %d>" % ("forward" if self.is_forward else "reverse",
                                                    self.level)

    def __reduce__(self):
        raise TypeError("a deltaad trace cannot be pickled")


cdef inline void _close_handle(Trace t) noexcept:
    """The trace ``t`` is being freed: its handle closes and forgets it (first thing in every
    ``__dealloc__``, before any field is cleared: clearing can run Python code, which must find
    the trace gone, never a pointer to it)."""
    cdef TraceHandle h = t.h
    if h is not None:
        h.closed = True
        h.trace = NULL


@cython.no_gc_clear  # a cleared trace (h None) must never be reachable
@cython.auto_pickle(False)
cdef class Trace:
    """One differentiation in progress; ``level`` orders nested traces (higher = inner).

    Its state lives in its ``TraceHandle``, which its duals name instead of the trace: a trace
    is kept by whoever holds it (the code that opened it, a ``vjp`` function, a checkpoint),
    never by its duals. One that nothing holds any more is finished: its duals are escaped."""

    cdef TraceHandle h
    cdef object __weakref__

    def __call__(self, *args, **kwargs):
        # ``A.trace()`` meant numpy's method; an array dual's ``trace`` names its trace
        raise trace_call_error()

    def __cinit__(self, *args):
        global _dfree_on, _kept_mark
        _dfree_on = not _tracing()  # see _dfree
        if not _dfree_on and (_dfree_n or _istash is not None):
            _drop_input_stash()  # (its duals are freed: _dfree_on is off)
            _release_duals()  # none kept while off: see _dfree
        _kept_mark = 0  # see _fkeep
        cdef TraceHandle h = TraceHandle.__new__(TraceHandle)
        h.trace = <PyObject*>self
        self.h = h

    def __dealloc__(self):
        _close_handle(self)

    def __init__(self, level):
        self.h.level = level
        self.h.closed = False

    @property
    def level(self):
        return self.h.level

    @property
    def closed(self):
        return self.h.closed

    @closed.setter
    def closed(self, value):
        self.h.closed = value

    @property
    def is_forward(self):
        return self.h.is_forward

    def close(self):
        """End recording: duals of this trace may no longer enter arithmetic."""
        self.h.closed = True

    cdef list _flat_inputs(self, xs, ts):
        """``float_inputs``: the input duals of ``xs`` (tangents ``ts`` on a forward level)."""
        return None

    def call_on_inputs(self, fn, tuple args, dict kwargs, Py_ssize_t n, xs, ts, bint has_aux,
                       finish):
        """The commonest differentiation's body (run with this trace open): one list or tuple
        of floats ``xs`` (tangents ``ts`` on a forward level, else None) is argument ``n`` of
        ``fn(*args, **kwargs)``. Its input duals are made (``float_inputs``) and put in that
        place, as a list (a tuple for a tuple); the call is made; the input list is let go
        (``free_inputs``). ``finish(self, result)`` gives the output packed and, with
        ``has_aux``, the pair ``(output, aux)`` (it is not called on an output that is a dual
        without an aux). ``(the inputs' ids (consecutive: a range; None on a forward level),
        output, aux)``; None, nothing called, if an item of ``xs`` (or ``ts``) is not a float.
        One C function: a short gradient's Python steps cost more than its arithmetic."""
        cdef Py_ssize_t first
        cdef list duals
        cdef object ids = None
        if not 0 <= n < len(args):
            raise IndexError("call_on_inputs: no argument %d of %d" % (n, len(args)))
        duals = self._flat_inputs(xs, ts)
        if duals is None:
            return None
        if not self.h.is_forward:
            first = (<Dual>duals[0]).i
            ids = range(first, first + len(duals))
        cdef list new_args = list(args)
        new_args[n] = duals if type(xs) is list else tuple(duals)
        duals = None
        out = fn(*new_args, **kwargs) if kwargs else fn(*new_args)
        _free_inputs(new_args, n, self)
        if has_aux:
            out, aux = finish(self, out)
            return ids, out, aux
        if type(out) is not Dual:
            out = finish(self, out)
        return ids, out, None

    def run(self, fn, *args):
        """``fn(*args)`` with this trace open; it is closed when ``fn`` returns or raises.

        Opening, the call and closing are one C function: no bytecode runs between them, so
        an asynchronous exception (``KeyboardInterrupt``, a tracer's) cannot skip the close."""
        self.h.closed = False
        try:
            return fn(*args)
        finally:
            self.h.closed = True


cdef inline Tape _tape_of(TraceHandle h):
    """The open tape of the reverse handle ``h`` (a counted reference); EscapedDualError if
    it has closed. An open trace is always alive (its opener holds it)."""
    if h.closed or h.trace == NULL:
        raise escaped_error(h.level)
    return <Tape>h.trace


cdef inline Trace _trace_of(TraceHandle h):
    """``_tape_of`` for either kind of trace."""
    if h.closed or h.trace == NULL:
        raise escaped_error(h.level)
    return <Trace>h.trace


ctypedef struct Binding:
    double c1
    double c2
    int32_t p1      # first parent id; -1 none (an input); -2 a linear binding (see Tape.linear);
                    # -3 a node; B_ARRAY an array fast-path binding (see _push_array)
    int32_t p2      # second parent id or -1

# An array fast-path binding keeps its rule and parents in the binding itself, not in
# ``Tape.linear``: p1 is B_ARRAY, p2 the first parent, c1's bytes the second parent (an int64,
# -1 for none) and c2's the rule (a PyObject*, a reference the tape owns). Only these accessors
# read or write them.
cdef enum:
    B_ARRAY = -4


cdef inline void _sweep_floats(const Binding* b, double* adj, Py_ssize_t top) noexcept nogil:
    """The float sweep of bindings ``top`` down to 0: ``adj[p] += c * adj[i]``. Parents are
    always older than their binding (0 <= p < i), so every index is in bounds; the other
    kinds (inputs, linear bindings, nodes, array bindings) have a negative ``p1``."""
    _sweep_floats_to(b, adj, top, 0)


cdef inline void _sweep_floats_to(const Binding* b, double* adj, Py_ssize_t top,
                                  Py_ssize_t bottom) noexcept nogil:
    """``_sweep_floats`` down to ``bottom``: bindings below it are inputs (nothing to do)."""
    _sweep_floats_clearing(b, adj, top, bottom, False)


cdef inline void _sweep_floats_clearing(const Binding* b, double* adj, Py_ssize_t top,
                                        Py_ssize_t bottom, bint clear) noexcept nogil:
    """``_sweep_floats_to``; with ``clear``, each adjoint from ``top`` down to ``bottom`` is
    left +0.0 once read (when no id above ``bottom`` is wanted: see ``Tape.eval``).

    A term for the binding just below (``i - 1``, a chain's running value: ``s = s + v``) is
    kept in a register, ``d``, and added when that binding is read, rather than stored and
    loaded again at once (a store, then a load that waits for it, on the chain's critical
    path at every step; the sum is still stored, for the adjoints read afterwards). The sums
    are the same, in the same order, to the bit: binding ``i - 1`` is the next one read, so
    no other term reaches its adjoint in between; only
    one parent's term is kept (both parents ``i - 1``: both stored, as before), and a term
    left over when the sweep stops is stored."""
    cdef Py_ssize_t i, j, k
    cdef double a, d = 0.0
    cdef bint held = False  # d is a term of adj[i] not yet added
    for i in range(top, bottom - 1, -1):
        if held:
            a = adj[i] + d  # adj[i] += d, then a = adj[i] (stored: a wanted id's adjoint
            adj[i] = 0.0 if clear else a  # is read from adj; nothing waits for this store)
            held = False
        else:
            a = adj[i]
            if clear:
                adj[i] = 0.0
        if a == 0.0:
            continue
        j = b[i].p1
        if j >= 0:
            k = b[i].p2
            if j == i - 1 and k != j:
                d = b[i].c1 * a
                held = True
            else:
                adj[j] += b[i].c1 * a
            if k >= 0:
                if k == i - 1 and not held and k != j:
                    d = b[i].c2 * a
                    held = True
                else:
                    adj[k] += b[i].c2 * a
    if held:  # a term of adj[bottom - 1] (an input's), past the bottom
        adj[bottom - 1] += d


cdef inline void _set_array(Binding* b, Py_ssize_t p1, Py_ssize_t p2, PyObject* rule) noexcept:
    cdef int64_t q = p2
    b.p1 = B_ARRAY
    b.p2 = <int32_t>p1
    memcpy(&b.c1, &q, sizeof(int64_t))
    memcpy(&b.c2, &rule, sizeof(PyObject*))  # a pointer fits in a double's 8 bytes


cdef inline Py_ssize_t _array_p2(Binding* b) noexcept:
    cdef int64_t q
    memcpy(&q, &b.c1, sizeof(int64_t))
    return <Py_ssize_t>q


cdef inline PyObject* _array_rule(Binding* b) noexcept:
    cdef PyObject* r
    memcpy(&r, &b.c2, sizeof(PyObject*))
    return r


cdef tuple _array_parents(Binding* b):
    return _parents_of(b.p2, _array_p2(b))


cdef tuple _parents_of(Py_ssize_t p1, Py_ssize_t p2):
    """The parents' tuple of a binding with parents ``p1`` and ``p2`` (-1: none)."""
    if p2 < 0:
        return (p1,)
    return (p1, p2)


# Ids are int32: a tape holds at most 2**31 - 1 bindings (48 GiB of them, twice this machine's
# memory), and a binding is 24 bytes.
cdef Py_ssize_t MAX_BINDINGS = 2147483647


# One spare binding buffer, kept from the last tape that died, so the next tape writes into
# memory that is already mapped: a fresh 48 MB tape otherwise pays ~12000 page faults, a
# fifth of its recording time in a gradient loop (on a small VM a fault costs 2.5-20 us, and
# a tape of 10^7 bindings, 240 MB, then spends more time faulting than recording). A larger
# buffer is cut down to the cap and kept: the next big tape starts in mapped memory and
# faults only past it. The adjoint array of the float sweep is kept likewise.
cdef Binding* _spare = NULL
cdef Py_ssize_t _spare_cap = 0
cdef Py_ssize_t SPARE_MAX_BYTES = 1024 * 1024 * 1024
cdef Py_ssize_t SPARE_ADJ_MAX_BYTES = 512 * 1024 * 1024
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
# Whether the spare adjoint array is +0.0 in all its _spare_adj_n entries: a gradient whose
# wanted adjoints all lie below its sweep (its inputs) leaves it so (``Tape.eval``), and the
# next one then needs no memset first (at 10^6 inputs and as many operations, 16 MB): the
# sweep clears what it reads, the inputs' adjoints are cleared as they are read. Set with the
# spare itself, wherever it is.
cdef bint _spare_adj_zero = False


cdef void _offer_spare(Binding* b, Py_ssize_t cap) noexcept:
    """Keep the binding buffer ``b`` of ``cap`` bindings as the spare (cut down to the cap) if
    that is larger than the spare kept; free it otherwise."""
    global _spare, _spare_cap
    cdef Py_ssize_t maxcap = SPARE_MAX_BYTES // <Py_ssize_t>sizeof(Binding)
    cdef Binding* nb
    if (cap if cap < maxcap else maxcap) <= _spare_cap or _tracing():
        PyMem_Free(b)
        return
    if cap > maxcap:  # shrinking a large (mapped) block gives its tail back, in place
        nb = <Binding*>PyMem_Realloc(b, maxcap * sizeof(Binding))
        if nb == NULL:
            PyMem_Free(b)
            return
        b = nb
        cap = maxcap
    if _spare != NULL:
        PyMem_Free(_spare)
    _spare = b
    _spare_cap = cap


cdef void _offer_spare_adj(double* adj, Py_ssize_t n, bint zero) noexcept:
    """``_offer_spare`` for the adjoint array of ``n`` doubles (``zero``: all +0.0)."""
    global _spare_adj, _spare_adj_n, _spare_adj_zero
    cdef Py_ssize_t maxn = SPARE_ADJ_MAX_BYTES // <Py_ssize_t>sizeof(double)
    cdef double* na
    if (n if n < maxn else maxn) <= _spare_adj_n or _tracing():
        PyMem_Free(adj)
        return
    if n > maxn:
        na = <double*>PyMem_Realloc(adj, maxn * sizeof(double))
        if na == NULL:
            PyMem_Free(adj)
            return
        adj = na
        n = maxn
    if _spare_adj != NULL:
        PyMem_Free(_spare_adj)
    _spare_adj = adj
    _spare_adj_n = n
    _spare_adj_zero = zero  # (a shorter block keeps what it held)


# The floats of long result lists (gradients, output values and tangents) are kept likewise:
# a gradient of 10^6 inputs otherwise allocates 10^6 floats, and the user's dropping them
# frees them again; pymalloc then gives whole arenas back to the system and the next call
# faults them in again (a fifth of the time of a gradient of a list). Each float handed out
# is also held here; once nothing else holds it (reference count 1: no code but this module
# can see it) it is reused for a later result, its value overwritten. A float the caller kept
# is never touched: its slot gets a fresh float. Off while tracemalloc traces (see _dfree).
# Room for 4 * 2^20 (96 MB of floats at most): an elementwise map of 10^6 inputs hands out
# 10^6 output values and 10^6 gradients, and past the room each call allocates them afresh.
cdef enum:
    FKEEP_MAX = 4194304
cdef PyObject* _fkeep[FKEEP_MAX]
cdef Py_ssize_t _fkeep_n = 0     # slots filled
cdef Py_ssize_t _fkeep_at = 0    # the next slot to hand out
cdef Py_ssize_t _kept_mark = 0   # where the gradients start (after the output values)


cdef inline void _kept_floats_from(Py_ssize_t k) noexcept:
    """Hand out kept floats from slot ``k`` on. A trace's output values start at slot 0 and
    its gradients after them (at ``_kept_mark``), so that each list finds the floats it had
    the last time round."""
    global _fkeep_at
    _fkeep_at = k if k < _fkeep_n else _fkeep_n


cdef inline PyObject* _kept_float(double x) except NULL:
    """A new reference to a float of value ``x``: a kept one when one is free."""
    global _fkeep_at, _fkeep_n
    cdef PyObject* f
    cdef Py_ssize_t k = _fkeep_at
    if not _dfree_on:  # tracemalloc traces: every float a fresh allocation (see _dfree)
        return _new_float(x)
    if k < _fkeep_n:
        f = _fkeep[k]
        _fkeep_at = k + 1
        if f.ob_refcnt == 1:  # held here only: reuse it
            (<PyFloatObject*>f).ob_fval = x
            f.ob_refcnt = 2
            return f
        f = _new_float(x)  # the caller kept the old one: a fresh one takes its slot
        if f == NULL:
            return NULL
        Py_DECREF(<object>_fkeep[k])  # not the last reference: never frees here
        f.ob_refcnt += 1
        _fkeep[k] = f
        return f
    f = _new_float(x)
    if f != NULL and k < FKEEP_MAX:
        f.ob_refcnt += 1
        _fkeep[k] = f
        _fkeep_n = k + 1
        _fkeep_at = k + 1
    return f


cdef Py_ssize_t _kept_floats_into(list out, double* src, Py_ssize_t r0, Py_ssize_t step,
                                  Py_ssize_t nw, bint clear) noexcept:
    """``_kept_float(src[r0 + m * step])`` into ``out[m]`` for ``m`` from 0 while kept floats
    that nothing else holds come in turn (a gradient list, the second time round: one loop
    with no test that need not be made per item); returns how many were filled. With
    ``clear``, each ``src`` entry read is left +0.0."""
    global _fkeep_at
    cdef Py_ssize_t m = 0, j = r0, k = _fkeep_at, lim = _fkeep_n - _fkeep_at
    cdef PyObject* f
    # read once: no Python code runs below, and no store in the loop moves them
    cdef PyObject** fk = _fkeep + k
    cdef PyObject** oi = (<PyListObject*>out).ob_item
    if not _dfree_on:
        return 0
    if lim > nw:
        lim = nw
    while m < lim:
        f = fk[m]
        if f.ob_refcnt != 1:  # the caller kept it: _kept_float gives its slot a fresh one
            break
        (<PyFloatObject*>f).ob_fval = src[j]  # j = r0 + m * step
        if clear:
            src[j] = 0.0
        f.ob_refcnt = 2
        oi[m] = f  # (PyList_SET_ITEM: ``out``'s slot m, NULL before)
        j += step
        m += 1
    _fkeep_at = k + m
    return m


cdef void _release_floats() noexcept:
    global _fkeep_n, _fkeep_at
    cdef PyObject* f
    while _fkeep_n > 0:
        _fkeep_n -= 1
        f = _fkeep[_fkeep_n]
        Py_DECREF(<object>f)
    _fkeep_at = 0


def release_memory():
    """Give the spare tape and adjoint buffers and the kept duals and floats back to the
    allocator."""
    global _spare, _spare_cap, _spare_adj, _spare_adj_n, _spare_adj_zero
    _drop_input_stash()
    _release_duals()
    _release_floats()
    if _array_release is not None:  # the array fast path's kept arrays
        _array_release()
    if _spare != NULL:
        PyMem_Free(_spare)
        _spare = NULL
        _spare_cap = 0
    if _spare_adj != NULL:
        PyMem_Free(_spare_adj)
        _spare_adj = NULL
        _spare_adj_n = 0
        _spare_adj_zero = False


# How many truncations dropped node bindings, on any tape (see ``node_drops``).
cdef Py_ssize_t _drops_of_nodes = 0


def node_drops():
    """How many times a truncation has dropped node bindings, on any tape of this process: a
    value cached beside a node (an array's unpacked elements) is still valid while this count
    is what it was, and otherwise must ask whether its node is still on the tape."""
    return _drops_of_nodes


def node_drops_capsule():
    """``node_drops``' count itself (a ``Py_ssize_t*``), as a capsule: the array fast path
    reads it at each element read (``_arrays.setup_elements``)."""
    return PyCapsule_New(<void*>&_drops_of_nodes, "deltaad._core.node_drops", NULL)


cdef enum:
    # A float sweep of fewer bindings runs with the GIL held: releasing and taking it back
    # costs more than such a sweep (a short gradient's), and no other thread gains from it.
    NOGIL_MIN = 4096


cdef inline bint _int_below(object i, Py_ssize_t n) except -1:
    """``0 <= i < n`` for a Python int ``i`` of any size (an item of a range)."""
    cdef int overflow
    cdef long long v = PyLong_AsLongLongAndOverflow(i, &overflow)
    return overflow == 0 and 0 <= v < n


@cython.auto_pickle(False)
@cython.no_gc_clear  # a cleared tape (ocoef/linear None) must never be reachable
cdef class Tape(Trace):
    """A reverse trace: a growable C array of 24-byte bindings ``id := c1*Var(p1) + c2*Var(p2)``.

    Coefficients that are not C doubles (outer duals, when nesting) are kept beside the array
    in ``ocoef``; bindings with other than two scalar parents in ``linear``, and so are nodes
    (``p1 == -3``: computations the tape does not keep, re-run by the sweep; see ``_pure``).
    The flags ``general`` and ``truncated`` are set once and never reset, as in ``_pure``.
    """

    cdef Binding* b
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef dict ocoef
    cdef dict linear
    cdef list nodes     # ids of the node bindings, ascending
    cdef Py_ssize_t max_linear  # the largest key of ``linear`` (-1: none): truncating below
                                # it is the only case that must look into the dict
    cdef bint general   # some coefficient is not a C double (an outer dual)
    cdef bint truncated # bindings were dropped: the sweep checks parents are older
    cdef bint busy      # a sweep that may run nodes is in progress
    cdef int sweeping   # float sweeps in progress (without the GIL) over ``b``: do not move it
    cdef Py_ssize_t narray  # array fast-path bindings (B_ARRAY) on the tape: each owns its rule
    cdef Py_ssize_t lead    # bindings 0 .. lead-1 are inputs (made first, by input/inputs):
                            # the float sweep stops above them

    def __cinit__(self, *args):
        self.b = NULL
        self.n = 0
        self.cap = 0
        self.sweeping = 0
        self.ocoef = {}
        self.linear = {}
        self.nodes = []
        self.max_linear = -1
        self.general = False
        self.truncated = False
        self.busy = False
        self.narray = 0
        self.lead = 0

    def __dealloc__(self):
        _close_handle(self)  # first: see _close_handle
        cdef Py_ssize_t i
        if self.b != NULL:
            i = self.n - 1
            while self.narray > 0 and i >= 0:  # the rules the array bindings own
                if self.b[i].p1 == B_ARRAY:
                    self.narray -= 1
                    Py_DECREF(<object>_array_rule(&self.b[i]))
                i -= 1
            _offer_spare(self.b, self.cap)
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
        _check_lower(self.h, value)
        cdef Py_ssize_t i = self._push(-1, 0.0, -1, 0.0)
        if i == self.lead:
            self.lead = i + 1
        return _new_dual(value, self.h, i)

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
        cdef list out = PyList_New(m)  # slots NULL until set: safe to free on an error
        cdef Dual r
        cdef Binding* b
        cdef PyObject* o
        cdef PyObject* xp
        cdef TraceHandle h = self.h
        k = 0
        while k < m and k < len(vals):  # floats: no Python code runs, no reference counted
            xp = (<PyListObject*>vals).ob_item[k]
            if xp.ob_type != <PyTypeObject*>float:
                break
            o = _alloc_raw(<PyObject*>h)
            (<Dual>o).v = (<PyFloatObject*>xp).ob_fval
            (<Dual>o).i = start + k
            b = &self.b[start + k]  # below cap (grown above)
            b.p1 = -1
            b.c1 = 0.0
            b.p2 = -1
            b.c2 = 0.0
            _list_steal(out, k, o)
            k += 1
            self.n = start + k
        for k in range(k, m):  # the rest, one at a time
            x = vals[k]
            b = &self.b[start + k]  # re-read: nothing below runs Python code on a float
            b.p1 = -1
            b.c1 = 0.0
            b.p2 = -1
            b.c2 = 0.0
            if type(x) is float:  # the common case in one step
                r = _alloc_dual(self.h)
                r.v = PyFloat_AS_DOUBLE(x)
                r.i = start + k
            else:
                _check_lower(self.h, x)
                r = _new_dual(x, self.h, start + k)
            Py_INCREF(r)
            PyList_SET_ITEM(out, k, r)
            self.n = start + k + 1
        if self.lead == start:
            self.lead = start + m
        return out

    def float_inputs(self, xs):
        """``inputs(xs)`` for a non-empty list or tuple ``xs`` of exact floats, each item read
        once (no checked copy of ``xs`` first: a gradient of a long list touches each input
        float once); None, with nothing recorded, for anything else."""
        return self._flat_inputs(xs, None)

    cdef list _flat_inputs(self, xs, ts):
        cdef Py_ssize_t m
        cdef Py_ssize_t start = self.n
        if type(xs) is not list and type(xs) is not tuple:
            return None
        m = len(xs)
        if m == 0:
            return None
        if m > MAX_BINDINGS - start:
            raise MemoryError("deltaad tape: more than %d bindings on one tape" % MAX_BINDINGS)
        while self.cap < start + m:
            self._grow()
        cdef list out = _float_inputs(self, self, xs, None, m)
        if out is None:
            return None
        self.n = start + m
        if self.lead == start:
            self.lead = start + m
        return out

    def push_linear(self, parents, rule):
        """Record a binding with any number of parents; return its id (see ``_pure``)."""
        if self.h.closed:
            raise escaped_error(self.h.level)
        parents = _check_parents(parents, self.n)
        if not callable(rule) and not all_floats(rule):
            self.general = True
        cdef Py_ssize_t i = self._push(-2, 0.0, -1, 0.0)
        self.linear[i] = (parents, rule)
        self.max_linear = i
        return i

    def push_node(self, parents, node):
        """Record a node binding (checkpointing); see ``_pure.Tape.push_node``."""
        if self.h.closed:
            raise escaped_error(self.h.level)
        parents = _check_parents(parents, self.n)
        cdef Py_ssize_t i = self._push(-3, 0.0, -1, 0.0)
        self.linear[i] = (parents, node)
        self.max_linear = i
        self.nodes.append(i)
        return i

    @property
    def nnodes(self):
        """The number of node bindings (checkpoints) on the tape."""
        return len(self.nodes)

    def release_nodes(self):
        """Let go of what the nodes hold; see ``_pure.Tape.release_nodes``."""
        for i in self.nodes:
            parents, node = self.linear[i]
            self.linear[i] = (parents, _RELEASED)

    def truncate(self, m):
        """Drop the bindings ``m, m+1, ...``; see ``_pure.Tape.truncate``."""
        self._truncate(m)

    cdef int _truncate(self, Py_ssize_t m) except -1:
        global _drops_of_nodes
        if m < 0 or m > self.n:
            raise ValueError("truncate: %d is not between 0 and the tape's %d bindings" % (m, self.n))
        if m == self.n:
            return 0
        if self.sweeping:
            raise RuntimeError("deltaad tape: cannot drop bindings while another thread runs its "
                               "backward sweep; give each thread its own differentiation")
        if self.max_linear >= m:
            _pop_tail(self.linear, m)
            self.max_linear = next(reversed(self.linear)) if self.linear else -1
            nodes = self.nodes
            if nodes and <Py_ssize_t>nodes[len(nodes) - 1] >= m:
                _drops_of_nodes += 1
            while nodes and <Py_ssize_t>nodes[len(nodes) - 1] >= m:
                nodes.pop()
        if self.ocoef:
            _pop_tail(self.ocoef, m)
        dead = self._array_rules_from(m) if self.narray else None
        self.n = m
        if self.lead > m:
            self.lead = m
        self.truncated = True
        return 0  # the dropped bindings' rules are freed here, the tape already consistent

    cdef list _array_rules_from(self, Py_ssize_t m):
        """Take the rules of the array bindings ``m ..`` off them (they become inputs, about
        to be dropped) into a list: freeing a rule may run Python code, which then sees a
        consistent tape."""
        cdef list dead = []
        cdef Py_ssize_t i = self.n - 1
        cdef PyObject* r
        while self.narray > 0 and i >= m:
            if self.b[i].p1 == B_ARRAY:
                r = _array_rule(&self.b[i])
                dead.append(<object>r)
                self.b[i].p1 = -1
                self.narray -= 1
                Py_DECREF(<object>r)  # the tape's reference: the list holds it now
            i -= 1
        return dead

    def region_parents(self, m):
        """The ids below ``m`` that bindings ``m, m+1, ...`` read, ascending (see ``_pure``)."""
        cdef Py_ssize_t mm = _index(m)
        cdef Py_ssize_t i, j, k
        cdef _IdSet ids
        if mm < 0 or mm > self.n:
            raise ValueError("region_parents: %d is not between 0 and the tape's %d bindings" % (mm, self.n))
        ids.v = NULL
        ids.n = 0
        ids.cap = 0
        for i in range(64):
            ids.seen[i] = -1
        extra = None
        cdef Binding* b = self.b
        cdef Py_ssize_t n = self.n
        try:
            for i in range(mm, n):  # the region reads no Python code: b and n stay valid
                j = b[i].p1
                if j >= 0:
                    if j < mm and ids.seen[j & 63] != j:
                        _idset_add(&ids, <int32_t>j)
                    k = b[i].p2
                    if 0 <= k < mm and ids.seen[k & 63] != k:
                        _idset_add(&ids, <int32_t>k)
                elif j == B_ARRAY:
                    for k in (b[i].p2, _array_p2(&b[i])):
                        if 0 <= k < mm and ids.seen[k & 63] != k:
                            _idset_add(&ids, <int32_t>k)
                elif j < -1:
                    for p in (<tuple>self.linear[i])[0]:
                        if p < mm:
                            if extra is None:
                                extra = set()
                            extra.add(p)
            out = [ids.v[i] for i in range(ids.n)]
        finally:
            PyMem_Free(ids.v)
        if extra is not None:
            extra.update(out)
            out = sorted(extra)
        return out

    def advance(self, body, first, Py_ssize_t count, state, Py_ssize_t limit, free, who):
        """Run ``count`` steps of a loop whose state is a flat tuple or list of floats or
        scalar duals, recording and dropping in batches; see ``_pure.Tape.advance``."""
        return self._advance(body, first, count, state, limit, free, who)

    cdef list _advance(self, body, first, Py_ssize_t count, state, Py_ssize_t limit, free, who):
        cdef Py_ssize_t start = self.n
        cdef Py_ssize_t lim = start + limit
        cdef Py_ssize_t j, f0 = 0
        cdef bint indexed = first is not None
        kind = type(state)
        cdef Py_ssize_t k = len(state)
        if indexed:
            f0 = first
        val = state
        try:
            for j in range(count):
                if indexed:
                    val = body(f0 + j, val)
                else:
                    val = body(val)
                if self.n > lim:
                    val = kind(_flat_values(self, val, kind, k, who))
                    self._drop(start, free)
            out = _flat_values(self, val, kind, k, who)
            self._drop(start, free)
            return out
        except BaseException:
            if self.n > start:
                self._truncate(start)
            raise

    cdef int _drop(self, Py_ssize_t start, object free) except -1:
        if self.n > start:
            if free is not None:
                free.update(self.region_parents(start))
            self._truncate(start)
        return 0

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
        if bb.p1 == B_ARRAY:
            return _array_parents(&bb), <object>_array_rule(&bb)
        if bb.p1 < -1:
            return self.linear[i]
        if bb.p1 == -1:
            return (), ()
        c = self.ocoef.get(i)
        c1 = c[0] if c is not None else bb.c1
        c2 = c[1] if c is not None else bb.c2
        if bb.p2 == -1:
            return (bb.p1,), (c1,)
        return (bb.p1, bb.p2), (c1, c2)

    def bindings_bytes(self):
        """The bindings as the bytes of their C array (24 each: c1, c2, p1, p2), or None when
        one does not fit it (linear bindings, nodes, coefficients that are not doubles, a
        truncated tape): ``deltaad.compile`` compares a gradient recording with them."""
        if self.linear or self.narray or self.ocoef or self.general or self.truncated:
            return None
        if self.n == 0:
            return b""
        return (<char*>self.b)[:self.n * <Py_ssize_t>sizeof(Binding)]

    def eval(self, seeds, wanted, bint floats_only=False):
        """Sweep the bindings newest-first once; return the adjoints of the ``wanted`` ids.

        The float sweep (every coefficient and seed a double) runs in C without the GIL;
        otherwise the general sweep computes with Python objects, as ``_pure`` does. With
        ``floats_only``, only the float sweep runs, and its result is a list of floats (the
        caller need not check each): None, nothing swept, where it does not apply.
        """
        # Each seed and wanted id is converted to a C integer and checked once. All Python
        # code that could record on this tape (an iterator, an ``__index__``) runs before ``n``
        # and ``b`` are read; an id checked against the earlier size stays valid, since a tape
        # only grows.
        cdef Py_ssize_t n0 = self.n
        cdef Py_ssize_t i, j, k, m, sid, lead
        cdef double a
        cdef object g
        # Seeds are kept as two lists, ids and cotangents, not as a tuple per seed: with many
        # outputs (a list-valued function), n tuples would each count towards a collection
        # of the garbage collector, which then walks every young list (~300 instructions a
        # seed). Dropping ``pair`` at once lets a ``zip`` of seeds reuse its tuple.
        cdef object sids = None  # a list of ints, or a range (Seeds)
        cdef list cts = None
        cdef bint float_seeds = True
        cdef Py_ssize_t s0 = 0, sstep = 0
        if type(seeds) is Seeds:
            # Seeds of exact ints (or a range) and cotangents, copied (no Python code can
            # change them below) and checked in C: nothing made per seed
            sids, cts = _check_seeds(<Seeds>seeds, n0)
            if sids is not None:
                float_seeds = all_floats(cts)
        if sids is None:
            sids = []
            cts = []
            for pair in seeds:
                i_, ct = pair
                pair = None
                sid = i_ if type(i_) is int else _index(i_)  # an int: no Python-level call
                if not 0 <= sid < n0:
                    raise IndexError("seed id %r is not on this tape of %d bindings" % (i_, n0))
                if type(ct) is not float:
                    float_seeds = False
                (<list>sids).append(i_ if type(i_) is int else sid)
                cts.append(ct)
        if type(sids) is range and len(sids) > 1:
            s0 = sids[0]
            sstep = sids.step
        # ``wanted`` as a range (the inputs of a float argument: consecutive ids) is read
        # without making an int per id: its ends are checked, and every id lies between them.
        cdef list wl = None
        cdef Py_ssize_t nw, r0 = 0, rstep = 0, wmax = -1  # (the largest wanted id)
        if type(wanted) is range:
            nw = len(wanted)
            if nw:
                for i_ in (wanted[0], wanted[nw - 1]):  # (each an int of any size)
                    if not _int_below(i_, n0):
                        raise IndexError("wanted id %r is not on this tape of %d bindings" % (i_, n0))
                r0 = wanted[0]  # (checked: fits)
                if nw > 1:  # |step| <= |last - first| < n0: fits
                    rstep = wanted.step
                wmax = r0 if rstep <= 0 else r0 + (nw - 1) * rstep
        else:
            wl = []
            for w_ in wanted:
                sid = _index(w_)
                if not 0 <= sid < n0:
                    raise IndexError("wanted id %r is not on this tape of %d bindings" % (w_, n0))
                wl.append(sid)
                if sid > wmax:
                    wmax = sid
            nw = len(wl)
        if self.n < n0:
            raise RuntimeError("deltaad eval: the tape lost bindings while its seeds were read")
        if not (float_seeds and not self.general and not self.linear and not self.narray
                and not self.truncated):
            if floats_only:
                return None
            out = self._eval_sweep(list(zip(sids, cts)),
                                   wl if wl is not None else [r0 + m * rstep for m in range(nw)],
                                   float_seeds)
            if (_recorder is not None and not self.linear and not self.narray
                    and _recorded_floats(cts, self.ocoef)):
                # The float sweep would have run: its adjoints start at 0.0, so a sum of -0.0
                # terms ends +0.0 there. Record that addition too (same bits as the float path).
                out = [_pyadd(0.0, o) if type(o) is _recorder or type(o) is float else o for o in out]
            return out
        global _spare_adj, _spare_adj_n, _spare_adj_zero
        cdef Py_ssize_t n = self.n
        cdef Binding* b = self.b
        cdef double* adj
        cdef Py_ssize_t adj_n
        cdef bint zeroed = False  # adj is +0.0 in all adj_n entries
        cdef bint clean = False  # and is so again when offered back
        if _spare_adj != NULL and _spare_adj_n >= n and not _tracing():
            adj = _spare_adj
            adj_n = _spare_adj_n
            zeroed = _spare_adj_zero
            _spare_adj = NULL
            _spare_adj_n = 0
            _spare_adj_zero = False
        else:
            adj_n = n if n > 0 else 1
            adj = <double*>PyMem_Malloc(adj_n * sizeof(double))
            if adj == NULL:
                raise MemoryError("deltaad eval: out of memory for %d adjoints" % n)
        lead = self.lead  # <= n: only inputs made on a tape of inputs move it
        # wanted ids all below the sweep's bottom (a gradient's inputs): the sweep leaves each
        # adjoint it reads +0.0, and the ids below it are cleared once read (see
        # _spare_adj_zero); then only an array not zeroed before needs a memset
        cdef bint below = wmax < lead
        # ``b`` is read without the GIL: another thread appending to this (open) tape may
        # write past ``n`` but not move the buffer (``_grow`` refuses while sweeping).
        self.sweeping += 1
        try:
            if not zeroed:
                if below and adj_n <= 2 * n:  # all of it, to keep it zeroed from here on
                    memset(adj, 0, adj_n * sizeof(double))
                    zeroed = True
                else:
                    memset(adj, 0, n * sizeof(double))
            below = below and zeroed
            for m in range(len(cts)):  # ids checked above; cotangents exact floats
                sid = s0 + m * sstep if sstep else <Py_ssize_t>sids[m]
                adj[sid] += PyFloat_AS_DOUBLE(cts[m])
            if n > NOGIL_MIN:
                with nogil:
                    _sweep_floats_clearing(b, adj, n - 1, lead, below)
            else:
                _sweep_floats_clearing(b, adj, n - 1, lead, below)
            out = PyList_New(nw)  # slots NULL until set: safe to free on an error
            _kept_floats_from(_kept_mark)
            # a range's ids all lie between its checked ends; a list's were checked above
            m = _kept_floats_into(out, adj, r0, rstep, nw, below) if wl is None else 0
            for m in range(m, nw):
                j = r0 + m * rstep if wl is None else <Py_ssize_t>wl[m]
                _list_steal(out, m, _kept_float(adj[j]))
                if below and wl is None:  # (a list may name an id twice: cleared below)
                    adj[j] = 0.0
            if below:
                # the sweep's terms and seeds below its bottom that were not read: none
                # when the wanted ids are all of them (a gradient of one list of floats)
                if not (wl is None and r0 == 0 and nw == lead and (rstep == 1 or nw == 1)):
                    memset(adj, 0, lead * sizeof(double))
                clean = True
            return out
        finally:
            self.sweeping -= 1
            _offer_spare_adj(adj, adj_n, clean)

    def rows(self, seeds, wanted):
        """A Jacobian's rows: for each seed id alone (cotangent 1.0), the adjoints of the
        ``wanted`` ids, as one ``bytearray`` of C doubles, row after row (``eval``'s values,
        bit for bit); None unless every binding is a float one (then ``eval`` row by row).

        Each row sweeps only the bindings at or below its seed (every later adjoint is zero)
        and is written straight into the buffer: no float object per entry."""
        cdef Py_ssize_t n0 = self.n
        cdef Py_ssize_t m, nw, r, i, j, k, s, w
        cdef double a
        if self.general or self.linear or self.truncated:
            return None
        cdef list sl = []
        for x in seeds:
            s = _index(x)
            if not 0 <= s < n0:
                raise IndexError("seed id %r is not on this tape of %d bindings" % (x, n0))
            sl.append(s)
        cdef list wl = []
        for x in wanted:
            w = _index(x)
            if not 0 <= w < n0:
                raise IndexError("wanted id %r is not on this tape of %d bindings" % (x, n0))
            wl.append(w)
        m = len(sl)
        nw = len(wl)
        if nw and m > PY_SSIZE_T_MAX // 8 // nw:
            raise MemoryError("deltaad rows: %d x %d entries" % (m, nw))
        cdef bytearray out = PyByteArray_FromStringAndSize(NULL, m * nw * 8)
        cdef double* o = <double*>PyByteArray_AS_STRING(out)
        cdef Py_ssize_t* ids = <Py_ssize_t*>PyMem_Malloc((m + nw + 1) * sizeof(Py_ssize_t))
        cdef double* adj = <double*>PyMem_Malloc((n0 + 1) * sizeof(double))
        if ids == NULL or adj == NULL:
            PyMem_Free(ids)
            PyMem_Free(adj)
            raise MemoryError("deltaad rows: out of memory for %d adjoints" % n0)
        for r in range(m):  # ids checked above; copied to C before the sweep drops the GIL
            ids[r] = <Py_ssize_t>sl[r]
        for r in range(nw):
            ids[m + r] = <Py_ssize_t>wl[r]
        cdef Binding* b = self.b  # read after every Python call above (none could move it)
        self.sweeping += 1  # another thread may append to the (open) tape, not move it
        try:
            with nogil:
                for r in range(m):
                    s = ids[r]  # 0 <= s < n0: only bindings 0..s reach the wanted ids
                    memset(adj, 0, (s + 1) * sizeof(double))
                    adj[s] = 1.0  # eval's 0.0 + 1.0
                    _sweep_floats(b, adj, s)
                    for w in range(nw):  # a wanted id above s got nothing: 0.0, as eval's
                        k = ids[m + w]
                        o[r * nw + w] = adj[k] if k <= s else 0.0
        finally:
            self.sweeping -= 1
            PyMem_Free(ids)
            PyMem_Free(adj)
        return out

    cdef list _eval_sweep(self, list seeds, list wanted, bint float_seeds):
        """The sweep of a tape with linear bindings or nodes (see ``Sweep``): in float mode
        when every seed and coefficient is a float, else in mixed mode from the start."""
        cdef Sweep sw = Sweep.__new__(Sweep)
        cdef Py_ssize_t n = self.n
        cdef Py_ssize_t i, j
        cdef list nodes = self.nodes
        sw.tape = self
        sw.floats = float_seeds and not self.general
        sw.active = True
        sw.end = n
        sw.base = set(wanted)
        sw._set_keep(sw.base)
        if nodes:
            if self.busy:
                raise RuntimeError(_BUSY)
            self.busy = True
        try:
            if sw.floats:
                sw._ensure(n)
                memset(sw.adj, 0, n * sizeof(double))
                for j in nodes:  # ids below n: the marker that makes the sweep stop at a node
                    sw.adj[j] = 1.0
                for pair in seeds:  # ids checked by eval; cotangents exact floats
                    i = (<tuple>pair)[0]
                    sw.adj[i] += PyFloat_AS_DOUBLE((<tuple>pair)[1])
                sw._float_range(0, n)
                if sw.floats:
                    return _float_adjoints(sw.adj, wanted, self)
                return [sw._get(w) for w in wanted]
            sw._ensure(n)
            _fill_none(sw.adj, 0, n)
            sw.oadj = [None] * n
            for j in nodes:
                sw.adj[j] = 1.0
            for pair in seeds:
                sw._add((<tuple>pair)[0], (<tuple>pair)[1])
            sw._mixed_range(0, n)
            return [sw._get(w) for w in wanted]
        finally:
            sw._finish()
            if nodes:
                self.busy = False


cdef list _float_adjoints(double* adj, list wanted, Tape tape):
    """The wanted adjoints of a sweep that stayed over floats. A linear binding's value may be
    an array (an array input, an array operation) whose adjoint no array cotangent reached
    (else the sweep would have turned to objects): its 0.0 is "untouched", None, as the object
    sweep says, not a float in an array's place. For a scalar binding None and 0.0 both mean
    zero."""
    cdef list out = []
    cdef double a
    cdef Py_ssize_t k
    for w in wanted:
        k = w
        a = adj[k]
        out.append(None if a == 0.0 and (w in tape.linear or tape.b[k].p1 == B_ARRAY) else a)
    return out


class _Released:
    """What a node becomes once its tape's owner has gone (``Tape.release_nodes``)."""

    def run(self, sweep, i):
        raise RuntimeError("deltaad: this tape's checkpoints were released when the "
                           "differentiation that recorded them (its vjp function) was freed")

    def __call__(self, *args):
        raise TypeError("a released checkpoint node is not a linear map")


_RELEASED = _Released()

_BUSY = ("deltaad: this tape is already being swept (by another thread, or re-entrantly from a "
         "checkpointed function); a tape holding checkpoints is swept by one caller at a time")

_NODE_DROPPED = ("deltaad: a node dropped bindings of the part of the tape being swept; a node "
                 "may drop only what it recorded itself")

_NEW_KIND = ("deltaad checkpoint: the re-run of a checkpointed computation recorded operations "
             "its first run did not (array or custom-rule operations, or values of an outer "
             "differentiation), so it is not a function of its inputs: it read state that "
             "changed in between")


cdef bint _reads_within(Tape tape, Py_ssize_t m, object allowed) except -1:
    """True when every id below ``m`` that bindings ``m ..`` read is in the set ``allowed``
    (``region_parents`` without building its list: a loop step checks this once)."""
    cdef Py_ssize_t i, j, k, q
    cdef int32_t seen[64]
    cdef Binding* b = tape.b
    for i in range(64):
        seen[i] = -1
    for i in range(m, tape.n):  # no Python code runs below: b stays valid
        j = b[i].p1
        if j == B_ARRAY:
            j = b[i].p2  # the parents: p2 and the id kept in c1's bytes
        elif j < -1:
            for p in (<tuple>tape.linear[i])[0]:
                if p < m and p not in allowed:
                    return False
            continue
        for q in range(2):
            k = j if q == 0 else (b[i].p2 if b[i].p1 != B_ARRAY else _array_p2(&b[i]))
            if 0 <= k < m and seen[k & 63] != k:
                if k not in allowed:
                    return False
                seen[k & 63] = <int32_t>k
    return True


cdef list _flat_values(Tape tape, object val, object kind, Py_ssize_t k, object who):
    """The leaves of a flat loop state as values at ``tape``'s level (see ``_pure``)."""
    if type(val) is not kind or len(val) != k:
        raise TypeError("%s: body_fun must return a value with the structure of init_val (a %s of %d "
                        "float leaves); got %s"
                        % (who, kind.__name__, k, _describe(val)))
    cdef list out = []
    for x in val:
        if type(x) is Dual:
            out.append((<Dual>x).value if (<Dual>x).tr is tape.h else x)
        elif type(x) is float:
            out.append(x)
        else:
            raise TypeError("%s: body_fun must return a value with the structure of init_val (a %s "
                            "of %d float leaves); got a leaf of type %s" % (who, kind.__name__, k, type(x).__name__))
    return out


def _describe(x):
    if type(x) is tuple or type(x) is list:
        return "a %s of %d" % (type(x).__name__, len(x))
    return "a value of type %s" % type(x).__name__


ctypedef struct _IdSet:
    int32_t* v          # distinct ids, ascending
    Py_ssize_t n
    Py_ssize_t cap
    int32_t seen[64]    # ids known to be in the set, by their low bits (a region reads the
                        # same few ids over and over: most adds end here)


cdef int _idset_add(_IdSet* s, int32_t x) except -1:
    """Add ``x`` to the sorted set ``s`` (binary search; the sets are small)."""
    cdef Py_ssize_t lo = 0, hi, mid, k
    cdef int32_t* nv
    if s.seen[x & 63] == x:
        return 0
    s.seen[x & 63] = x
    hi = s.n
    while lo < hi:
        mid = (lo + hi) >> 1
        if s.v[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    if lo < s.n and s.v[lo] == x:
        return 0
    if s.n == s.cap:
        k = s.cap * 2 if s.cap else 16
        nv = <int32_t*>PyMem_Realloc(s.v, k * sizeof(int32_t))
        if nv == NULL:
            raise MemoryError("deltaad region_parents: out of memory")
        s.v = nv
        s.cap = k
    for k in range(s.n, lo, -1):
        s.v[k] = s.v[k - 1]
    s.v[lo] = x
    s.n += 1
    return 0


cdef _pop_tail(dict d, Py_ssize_t m):
    """Remove the keys >= m of ``d``, whose keys were inserted in increasing order."""
    while d:
        last = next(reversed(d))
        if <Py_ssize_t>last < m:
            break
        del d[last]


def zero_adjoint(a):
    """True for an adjoint that contributes nothing: None, a float zero, or a forward dual
    that is zero all the way down (what the sweep skips)."""
    return a is None or _is_zero(a)


cdef extern from "_mixed.h" nogil:
    uint64_t da_bits(double x)
    double da_from_bits(uint64_t u)
    uint64_t DA_MARK_NONE
    uint64_t DA_MARK_OBJ


cdef enum:
    MIXED_GIL = 256  # the bindings a run of the mixed sweep takes with the GIL held


cdef inline bint _is_mark(double x) noexcept nogil:
    """A mixed sweep's mark (see ``_mixed.h``), by its bits."""
    cdef uint64_t u = da_bits(x)
    return u == DA_MARK_NONE or u == DA_MARK_OBJ


cdef void _fill_none(double* adj, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """Mark the adjoints ``lo .. hi - 1`` untouched."""
    cdef double m = da_from_bits(DA_MARK_NONE)
    cdef Py_ssize_t j
    for j in range(lo, hi):
        adj[j] = m


cdef void _zeros_to_none(double* adj, Py_ssize_t n) noexcept nogil:
    """Mark the zero adjoints (either sign) of ``0 .. n - 1`` untouched."""
    cdef double m = da_from_bits(DA_MARK_NONE)
    cdef Py_ssize_t j
    for j in range(n):
        if (da_bits(adj[j]) << 1) == 0:
            adj[j] = m


cdef Py_ssize_t _mixed_run(const Binding* b, double* adj, Py_ssize_t i, Py_ssize_t lo,
                           bint check, bint ocoef, int* bad) noexcept nogil:
    """The C part of the mixed sweep: bindings ``i`` down to ``lo`` for as long as each is
    skipped (a zero or untouched adjoint, an input) or is a scalar binding whose adjoint and
    parents' adjoints are floats or untouched. Its additions are the object sweep's, in its
    order: ``adj[p] + c * a``, or ``c * a`` alone into an untouched adjoint (``None + x`` is
    ``x``). Returns the id of the first binding left to the caller (below ``lo``: none); sets
    ``bad`` for a parent not older than its binding (a truncated tape's kept intermediate).
    With ``ocoef`` (the tape has object coefficients, whose bindings hold 0.0 in C) a binding
    with both coefficients +0.0 is left to the caller too. Parents are older than their
    binding, so every index is in bounds."""
    cdef Py_ssize_t j, k
    cdef double a, t, x
    cdef uint64_t u
    while i >= lo:
        a = adj[i]
        u = da_bits(a)
        if (u << 1) == 0 or u == DA_MARK_NONE:  # a zero of either sign, or untouched
            i -= 1
            continue
        if u == DA_MARK_OBJ:
            return i
        j = b[i].p1
        if j < 0:
            if j == -1:  # an input
                i -= 1
                continue
            return i  # a linear binding, a node, an array binding
        k = b[i].p2
        if check and (j >= i or k >= i):
            bad[0] = 1
            return i
        if ocoef and da_bits(b[i].c1) == 0 and da_bits(b[i].c2) == 0:
            return i
        if da_bits(adj[j]) == DA_MARK_OBJ or (k >= 0 and da_bits(adj[k]) == DA_MARK_OBJ):
            return i
        x = b[i].c1 * a
        t = adj[j]
        adj[j] = x if da_bits(t) == DA_MARK_NONE else t + x
        if k >= 0:
            x = b[i].c2 * a
            t = adj[k]  # (after j's: j may be k)
            adj[k] = x if da_bits(t) == DA_MARK_NONE else t + x
        i -= 1
    return i


@cython.final
@cython.auto_pickle(False)
cdef class Sweep:
    """A backward sweep in progress over a tape with linear bindings or nodes (see ``_pure``).

    Float mode keeps the adjoints in a C array (``adj``, room for ``cap``; untouched is 0.0),
    swept without the GIL between linear bindings and nodes. At the first cotangent a rule
    gives that is not a float it turns into mixed mode, which computes what ``_pure``'s object
    sweep computes, addition for addition, but keeps every float adjoint in the same C array:
    a slot holds a float or a mark (``_mixed.h``), "untouched" (None) or "an object, in the
    list ``oadj``" (an array, an outer dual). Scalar bindings whose adjoint and parents'
    adjoints are floats are swept in C (``_mixed_run``), an untouched adjoint taking the
    product itself as ``None + x`` is ``x``; the others one by one with Python objects
    (``_mixed_one``). A tape whose seeds or coefficients are not all floats is swept in mixed
    mode from the start. A node's segment is swept into the same adjoints, so results are
    those of the program without checkpoints to the last bit.
    """

    cdef Tape tape
    cdef bint floats
    cdef bint active
    cdef double* adj
    cdef Py_ssize_t cap
    cdef Py_ssize_t end     # adjoint slots in use: the end of the part being swept
    cdef list oadj
    cdef object keep        # the ids an object sweep must not free: base and every segment's
    cdef Py_ssize_t keep_hi # the largest id in keep (-1: none): ids above it are not looked up
    cdef object base        # the eval's wanted ids
    cdef list wanted        # the wanted ids (lists or ranges) of the segments being swept

    def __cinit__(self):
        self.adj = NULL
        self.cap = 0
        self.wanted = []

    def __dealloc__(self):
        if self.adj != NULL:
            PyMem_Free(self.adj)
            self.adj = NULL

    cdef int _ensure(self, Py_ssize_t n) except -1:
        """Room for ``n`` float adjoints (the kept part is preserved)."""
        global _spare_adj, _spare_adj_n, _spare_adj_zero
        cdef Py_ssize_t newcap
        cdef double* na
        if n <= self.cap:
            return 0
        if self.adj == NULL and _spare_adj != NULL and _spare_adj_n >= n and not _tracing():
            self.adj = _spare_adj
            self.cap = _spare_adj_n
            _spare_adj = NULL
            _spare_adj_n = 0
            _spare_adj_zero = False
            return 0
        newcap = self.cap * 2
        if newcap < n:
            newcap = n
        if newcap < 16:
            newcap = 16
        na = <double*>PyMem_Realloc(self.adj, newcap * sizeof(double))
        if na == NULL:
            raise MemoryError("deltaad eval: out of memory for %d adjoints" % newcap)
        self.adj = na
        self.cap = newcap
        return 0

    cdef void _finish(self) noexcept:
        """End of the sweep: later calls of its methods raise; the adjoint array is freed or
        kept as the spare (see ``_spare_adj``)."""
        global _spare_adj, _spare_adj_n, _spare_adj_zero
        self.active = False
        self.oadj = None
        if self.adj == NULL:
            return
        if (self.cap > _spare_adj_n and self.cap * <Py_ssize_t>sizeof(double) <= SPARE_MAX_BYTES
                and not _tracing()):
            if _spare_adj != NULL:
                PyMem_Free(_spare_adj)
            _spare_adj = self.adj
            _spare_adj_n = self.cap
            _spare_adj_zero = False
        else:
            PyMem_Free(self.adj)
        self.adj = NULL
        self.cap = 0

    def adjoint(self, i):
        """The adjoint accumulated so far for id ``i`` (0.0 or None when untouched)."""
        if not self.active:
            raise RuntimeError("deltaad: this sweep has finished")
        cdef Py_ssize_t k = _index(i)
        if not 0 <= k < self.end:  # the slots in use: a node's new segment has none yet
            raise IndexError("adjoint: id %d is not in the part of the tape being swept" % k)
        if self.floats:
            return self.adj[k]
        return self._get(k)

    def sweep(self, start, seeds, wanted):
        """Sweep the segment ``start .. end`` recorded by a node into this sweep's adjoints
        after adding ``seeds``; return the ``wanted`` adjoints; drop the segment (see ``_pure``)."""
        if not self.active:
            raise RuntimeError("deltaad: this sweep has finished")
        cdef Py_ssize_t n = self.tape.n
        cdef Py_ssize_t w
        cdef list wl = []
        for w_ in wanted:
            w = w_
            if not 0 <= w < n:
                raise IndexError("sweep: wanted id %d is not on the tape" % w)
            wl.append(w)
        return self._segment(start, seeds, wl, 0, 0)

    cdef list _segment(self, Py_ssize_t st, object seeds, list wl, Py_ssize_t w0, Py_ssize_t nw):
        """``sweep``; the wanted ids are ``wl``, or when it is None the ``nw`` ids from
        ``w0`` (checked by the caller)."""
        cdef Tape tape = self.tape
        cdef Py_ssize_t n = tape.n
        cdef Py_ssize_t i, k
        cdef list nodes = tape.nodes
        if st != self.end or st > n:
            raise ValueError("sweep: a segment starts where the swept part ends (%d), not at %d "
                             "(the tape holds %d)" % (self.end, st, n))
        self.wanted.append(wl if wl is not None else range(w0, w0 + nw))
        if not self.floats:
            self._set_keep(self._keep())
        try:
            self._ensure(n)
            if self.floats:
                if tape.general:
                    raise RuntimeError(_NEW_KIND)
                memset(self.adj + st, 0, (n - st) * sizeof(double))
            else:
                _fill_none(self.adj, st, n)
                self.oadj.extend([None] * (n - st))
            for k in range(len(nodes) - 1, -1, -1):
                i = nodes[k]
                if i < st:
                    break
                self.adj[i] = 1.0
            for pair in seeds:
                i_, ct = pair
                i = i_
                if not 0 <= i < n:
                    raise IndexError("sweep: seed id %d is not on the tape" % i)
                if self.floats:
                    if type(ct) is not float:
                        raise TypeError("sweep: a float sweep takes float cotangents, not %s"
                                        % type(ct).__name__)
                    self.adj[i] += PyFloat_AS_DOUBLE(ct)
                else:
                    self._add(i, ct)
            self.end = n
            if self.floats:
                self._float_range(st, n)
                if self.floats:
                    if wl is None:
                        return [self.adj[w0 + i] for i in range(nw)]
                    return [self.adj[<Py_ssize_t>w_] for w_ in wl]
            else:
                self._mixed_range(st, n)
            if wl is None:
                return [self._get(w0 + i) for i in range(nw)]
            return [self._get(<Py_ssize_t>w_) for w_ in wl]
        finally:
            self.wanted.pop()
            if not self.floats:
                self._set_keep(self._keep())
            self.end = st
            if tape.n > st:
                tape._truncate(st)
            if not self.floats and self.oadj is not None:
                del self.oadj[st:]

    def reverse(self, actions, dict snaps, body, first, kind, adj, expect, allowed, check,
                who, Py_ssize_t limit):
        """A loop's reversal schedule for a flat state of scalars, up to the turn of step 0;
        see ``_pure.Sweep.reverse``."""
        if not self.active:
            raise RuntimeError("deltaad: this sweep has finished")
        cdef Tape tape = self.tape
        cdef Py_ssize_t most = len(snaps), pos, q, f0 = 0
        cdef bint indexed = first is not None
        cdef tuple act, entry
        if indexed:
            f0 = first
        for a_ in actions:
            act = <tuple>a_
            op = act[0]
            if op == 4:  # TURN
                entry = <tuple>snaps[act[1]]
                pos = entry[0]
                cur = entry[1]
                q = act[2]
                if q > pos:
                    cur = tape._advance(body, f0 + pos if indexed else None, q - pos, kind(cur),
                                        limit, None, who)
                if q == 0:
                    return adj, expect, most
                adj, vals = self._turn(body, f0 + q if indexed else None, kind(cur), adj,
                                       allowed, who)
                if not (all_floats(vals) and vals == expect):  # == is bitwise but for 0.0
                    check(q, vals, expect)
                expect = cur
                if all_floats(adj):
                    if not any(adj):
                        return None, expect, most
                else:
                    for a in adj:
                        if not (a is None or _is_zero(a)):
                            break
                    else:
                        return None, expect, most
            elif op == 0:  # ADVANCE
                entry = <tuple>snaps[act[1]]
                pos = entry[0]
                q = act[2]
                snaps[act[3]] = (q, tape._advance(body, f0 + pos if indexed else None, q - pos,
                                                  kind(entry[1]), limit, None, who))
                if len(snaps) > most:
                    most = len(snaps)
            else:  # FREE
                del snaps[act[1]]
        return adj, expect, most

    def turn(self, body, index, state, adj, allowed, who):
        """Record one step of a loop from the flat state ``state`` and sweep it; see
        ``_pure.Sweep.turn``."""
        if not self.active:
            raise RuntimeError("deltaad: this sweep has finished")
        return self._turn(body, index, state, adj, allowed, who)

    cdef tuple _turn(self, body, index, state, adj, allowed, who):
        cdef Tape tape = self.tape
        cdef Py_ssize_t start = tape.n
        cdef Py_ssize_t k = len(state)
        cdef Py_ssize_t j, i
        kind = type(state)
        cdef list ins = [None] * k
        if k > MAX_BINDINGS - start:
            raise MemoryError("deltaad tape: more than %d bindings on one tape" % MAX_BINDINGS)
        for j in range(k):  # Tape.inputs inlined
            v = state[j]
            _check_lower(tape.h, v)
            i = tape._push(-1, 0.0, -1, 0.0)
            ins[j] = _new_dual(v, tape.h, i)
        cdef list seeds = []
        try:
            arg = tuple(ins) if kind is tuple else ins
            out = body(arg) if index is None else body(index, arg)
            vals = _flat_values(tape, out, kind, k, who)
            for x, a in zip(out, adj):
                if type(x) is Dual and (<Dual>x).tr is tape.h:
                    if a is None or _is_zero(a):
                        continue
                    seeds.append(((<Dual>x).i, a))
            if tape.n > start and not _reads_within(tape, start, allowed):
                raise step_reads_error(who, index, tape.region_parents(start), allowed)
        except BaseException:
            if tape.n > start:
                tape._truncate(start)
            raise
        return self._segment(start, seeds, None, start, k), vals

    cdef int _float_range(self, Py_ssize_t lo, Py_ssize_t hi) except -1:
        """Sweep bindings ``hi - 1`` down to ``lo`` over C doubles: without the GIL up to the
        next linear binding or node, which is handled with it."""
        cdef Tape tape = self.tape
        cdef Py_ssize_t i = hi - 1
        cdef Py_ssize_t j, k
        cdef double a
        cdef Binding* b
        cdef double* adj
        cdef bint check = tape.truncated
        cdef bint bad
        while i >= lo:
            b = tape.b  # re-read: a node may have recorded on the tape and moved it
            adj = self.adj
            bad = False
            tape.sweeping += 1
            with nogil:
                # Parents are older than their binding (checked when the tape was truncated),
                # so every index is in bounds.
                while i >= lo:
                    a = adj[i]
                    if a != 0.0:
                        j = b[i].p1
                        if j >= 0:
                            k = b[i].p2
                            if check and (j >= i or k >= i):
                                bad = True
                                break
                            adj[j] += b[i].c1 * a
                            if k >= 0:
                                adj[k] += b[i].c2 * a
                        elif j != -1:
                            break
                    i -= 1
            tape.sweeping -= 1
            if i < lo:
                break
            if bad:
                raise kept_intermediate_error()
            j = tape.b[i].p1
            if j == -2 or j == B_ARRAY:
                a = adj[i]
                if j == B_ARRAY:
                    parents = _array_parents(&tape.b[i])
                    rule = <object>_array_rule(&tape.b[i])
                else:
                    parents, rule = <tuple>tape.linear[i]
                if callable(rule):
                    for p, ct in zip(<tuple>parents, rule(a)):
                        if ct is None:
                            continue
                        if type(ct) is float and self.floats:
                            self.adj[<Py_ssize_t>p] += PyFloat_AS_DOUBLE(ct)  # p < i: in bounds
                        else:
                            if self.floats:
                                self._to_mixed()
                            self._add(p, ct)
                    if not self.floats:  # the rest of the range in mixed mode
                        return self._mixed_range(lo, i)
                else:
                    for p, c in zip(<tuple>parents, rule):  # float coefficients (else general)
                        adj[<Py_ssize_t>p] += PyFloat_AS_DOUBLE(c) * a
            else:
                (<tuple>tape.linear[i])[1].run(self, i)
                if tape.n < hi:
                    raise RuntimeError(_NODE_DROPPED)
                if not self.floats:  # a segment turned the sweep into mixed mode
                    return self._mixed_range(lo, i)
            i -= 1
        return 0

    cdef int _to_mixed(self) except -1:
        """Turn this float sweep into mixed mode (a rule gave a cotangent that is not a float):
        zeros (untouched or not) become untouched, what the object sweep skips (``_pure``'s
        ``_to_objects``); the other floats stay where they are."""
        _zeros_to_none(self.adj, self.end)
        self.oadj = [None] * self.end
        self.floats = False
        self._set_keep(self._keep())
        return 0

    cdef int _set_keep(self, object keep) except -1:
        self.keep = keep
        self.keep_hi = max(keep) if keep else -1
        return 0

    cdef object _keep(self):
        """The ids an object sweep must not free: the eval's wanted ids and the segments'."""
        if not self.wanted:
            return self.base
        keep = set(self.base)
        for w in self.wanted:
            keep.update(w)
        return keep

    cdef object _get(self, Py_ssize_t k):
        """Mixed mode: adjoint ``k`` as the object sweep has it (None when untouched)."""
        cdef double d = self.adj[k]
        cdef uint64_t u = da_bits(d)
        if u == DA_MARK_NONE:
            return None
        if u == DA_MARK_OBJ:
            return self.oadj[k]
        return d

    cdef int _add(self, Py_ssize_t p, object x) except -1:
        """Mixed mode: add the cotangent ``x`` into adjoint ``p`` as the object sweep does
        (``_accumulate``): a float into a float or untouched adjoint in C, anything else into
        the list (a float adjoint that meets an object becomes ``float + x`` there)."""
        cdef double t = self.adj[p]
        cdef uint64_t u = da_bits(t)
        cdef double v
        if type(x) is float:
            v = PyFloat_AS_DOUBLE(x)
            if not _is_mark(v):  # (a float with a mark's bits is kept as an object)
                if u == DA_MARK_NONE:
                    self.adj[p] = v
                    return 0
                if u != DA_MARK_OBJ:
                    self.adj[p] = t + v
                    return 0
        if u == DA_MARK_OBJ:
            _accumulate(self.oadj, p, x)
            return 0
        if u == DA_MARK_NONE:
            self.oadj[p] = x
        else:
            self.oadj[p] = t + x  # the float adjoint's ``old + x``
        self.adj[p] = da_from_bits(DA_MARK_OBJ)
        return 0

    cdef int _lift(self, Py_ssize_t p) except -1:
        """Mixed mode: move adjoint ``p`` into the list (for the array pullback, which sums
        into the list itself)."""
        cdef double t = self.adj[p]
        cdef uint64_t u = da_bits(t)
        if u == DA_MARK_OBJ:
            return 0
        if u != DA_MARK_NONE:
            self.oadj[p] = t
        self.adj[p] = da_from_bits(DA_MARK_OBJ)
        return 0

    cdef int _mixed_range(self, Py_ssize_t lo, Py_ssize_t hi) except -1:
        """Mixed mode: sweep bindings ``hi - 1`` down to ``lo`` (as ``_pure``'s object sweep):
        runs of float bindings in C (``_mixed_run``, without the GIL when long), every other
        binding by ``_mixed_one``."""
        cdef Tape tape = self.tape
        cdef bint check = tape.truncated
        cdef Py_ssize_t i = hi - 1
        cdef Py_ssize_t lo1
        cdef int bad = 0
        cdef bint oc
        cdef Binding* b
        cdef double* adj
        while i >= lo:
            b = tape.b  # re-read: a rule or a node may have recorded and moved them
            adj = self.adj
            oc = len(tape.ocoef) != 0
            tape.sweeping += 1  # another thread may append to the (open) tape, not move it
            # a short run with the GIL (most end soon, at an array's element); one that goes
            # through MIXED_GIL bindings continues without it
            lo1 = i - MIXED_GIL + 1 if i - MIXED_GIL + 1 > lo else lo
            i = _mixed_run(b, adj, i, lo1, check, oc, &bad)
            if i == lo1 - 1 and i >= lo and not bad:
                with nogil:
                    i = _mixed_run(b, adj, i, lo, check, oc, &bad)
            tape.sweeping -= 1
            if bad:
                raise kept_intermediate_error()
            if i < lo:
                break
            self._mixed_one(i, hi, check)
            i -= 1
        return 0

    cdef int _mixed_one(self, Py_ssize_t i, Py_ssize_t hi, bint check) except -1:
        """Mixed mode: binding ``i`` with Python objects, as the object sweep's step (an
        object adjoint not wanted is freed once spent)."""
        cdef Tape tape = self.tape
        cdef Py_ssize_t j, k
        cdef double d = self.adj[i]
        cdef uint64_t u = da_bits(d)
        cdef Binding* b
        if u == DA_MARK_NONE:
            return 0
        if u == DA_MARK_OBJ:
            a = self.oadj[i]
            if a is None or _is_zero(a):
                return 0
        elif (u << 1) == 0:
            return 0
        else:
            a = d
        b = tape.b
        j = b[i].p1
        if j == B_ARRAY:
            # the array fast path's binding: its parents older (checked at the push)
            j = b[i].p2
            k = _array_p2(&b[i])
            rule = <object>_array_rule(&b[i])  # held: the pull may record (its fallback)
            self._lift(j)  # the pull sums into the list
            if k >= 0:
                self._lift(k)
            if _array_pull == NULL or not _array_pull(rule, j, k, self.oadj, a):
                cts = rule(a)  # (may record and move b)
                for p, ct in zip(_parents_of(j, k), cts):
                    if ct is not None:
                        self._add(p, ct)
        elif j == -2:
            parents, rule = <tuple>tape.linear[i]
            if callable(rule):
                cts = rule(a)
                for p, ct in zip(<tuple>parents, cts):
                    if ct is not None:
                        self._add(p, ct)
            else:
                for p, c in zip(<tuple>parents, rule):
                    self._add(p, c * a)
        elif j == -3:
            (<tuple>tape.linear[i])[1].run(self, i)
            if tape.n < hi:
                raise RuntimeError(_NODE_DROPPED)
        elif j >= 0:
            k = b[i].p2
            if check and (j >= i or k >= i):
                raise kept_intermediate_error()
            oc = tape.ocoef.get(i) if tape.ocoef else None
            if oc is None:
                c1 = b[i].c1
                c2 = b[i].c2
                self._add(j, c1 * a)
                if k >= 0:
                    self._add(k, c2 * a)
            else:
                self._add(j, oc[0] * a)
                if k >= 0:
                    self._add(k, oc[1] * a)
        if u == DA_MARK_OBJ and (i > self.keep_hi or i not in self.keep):
            self.oadj[i] = None  # free array adjoints as soon as they are spent
            self.adj[i] = da_from_bits(DA_MARK_NONE)
        return 0


cdef bint _recorded_floats(list cts, dict ocoef) except -1:
    """True when every seed's cotangent and every coefficient is a float or a recorded number:
    without recording this tape would have taken the float sweep."""
    for ct in cts:
        if type(ct) is not float and type(ct) is not _recorder:
            return False
    for pair in ocoef.values():
        for c in pair:
            if type(c) is not float and type(c) is not _recorder:
                return False
    return True


@cython.final
@cython.auto_pickle(False)
cdef class Seeds:
    """Seeds for ``Tape.eval`` as two sequences of equal length, ``ids`` and ``cotangents``,
    instead of ``(id, cotangent)`` pairs: a function with many outputs has one seed per
    output, and a tuple per seed costs more than the seed (each one counts towards a
    garbage collection). Iterating gives the pairs."""

    cdef readonly object ids
    cdef readonly object cotangents

    def __init__(self, ids, cotangents):
        if len(ids) != len(cotangents):
            raise ValueError("Seeds: %d ids but %d cotangents" % (len(ids), len(cotangents)))
        self.ids = ids
        self.cotangents = cotangents

    def __iter__(self):
        return zip(self.ids, self.cotangents)


cdef tuple _check_seeds(Seeds s, Py_ssize_t n0):
    """``(ids, cotangents)`` of ``s`` for the sweep, every id checked to lie on a tape of
    ``n0`` bindings: a range as it is (its ends checked) or a copied list of exact ints, and a
    copied list of cotangents; ``(None, None)`` when ``s`` holds other types (then its pairs
    are read one by one)."""
    ids = s.ids
    cts = s.cotangents
    cdef Py_ssize_t k, m, v
    if type(cts) is not list or len(cts) != len(ids):
        return None, None
    m = len(ids)
    if type(ids) is range:
        for x in ((ids[0], ids[m - 1]) if m else ()):
            if not 0 <= x < n0:
                raise IndexError("seed id %r is not on this tape of %d bindings" % (x, n0))
        return ids, list(cts)
    if type(ids) is not list:
        return None, None
    ids = list(ids)
    for k in range(m):
        x = (<list>ids)[k]
        if type(x) is not int:
            return None, None
        v = x
        if not 0 <= v < n0:
            raise IndexError("seed id %r is not on this tape of %d bindings" % (x, n0))
    return ids, list(cts)


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
        if type(a) is _recorder and _recorder is not None:
            return bool(a == 0.0)  # a recorded comparison: the replay checks it
        if type(a) is not Dual or not (<Dual>a).tr.is_forward:
            return False
        d = <Dual>a
        if type(d.ov) is _Objects:
            if not _is_zero((<_Objects>d.ov).tangent):
                return False
            a = (<_Objects>d.ov).value
            continue
        if _load_t(&d.i) != 0.0:
            return False
        if d.ov is None:
            return d.v == 0.0
        a = d.ov


# The sum of two adjoints that are float64 arrays of one shape, by numpy's add loop without
# its dispatch (``old + x`` to the last bit; None when it does not take them): installed by
# the array fast path, deltaad._arrays, through ``set_array_add``.
ctypedef object (*array_add_t)(object, object)
cdef array_add_t _array_add = NULL


def set_array_add(capsule):
    """Install (a capsule named ``deltaad._arrays.add``) or remove (None) the adjoint sum of
    float64 arrays used by the general sweep."""
    global _array_add
    if capsule is None:
        _array_add = NULL
    else:
        _array_add = <array_add_t>PyCapsule_GetPointer(capsule, "deltaad._arrays.add")


# The array fast path's own bindings (deltaad._arrays, through ``set_array_hooks``): pushed
# from C with their parents' ids as C integers and kept in the binding itself (B_ARRAY: no
# tuple, no entry in ``Tape.linear``), and pulled back by the general sweep from C
# (``_array_pull(rule, p1, p2, adj, ct)`` returns 0 for a cotangent it does not take: the
# sweep then calls the rule as any other).
ctypedef int (*array_pull_t)(object, Py_ssize_t, Py_ssize_t, list, object) except -1
cdef array_pull_t _array_pull = NULL


cdef object _push_array(object tape, Py_ssize_t p1, Py_ssize_t p2, object rule):
    """``tape.push_linear((p1, p2), rule)`` (``(p1,)`` when ``p2`` is -1) for an exact ``Tape``
    and a rule of the array fast path (a callable that holds numpy arrays and no path back to
    the tape: the tape owns it through a C pointer the garbage collector does not see);
    returns the new id."""
    cdef Tape t = <Tape?>tape
    if t.h.closed:
        raise escaped_error(t.h.level)
    if not (0 <= p1 < t.n and -1 <= p2 < t.n):
        raise ValueError("push_linear: parent %d is not an earlier binding of this tape "
                         "(it holds %d)" % (p1 if not 0 <= p1 < t.n else p2, t.n))
    cdef Py_ssize_t i = t.n
    if i == t.cap:
        t._grow()
    Py_INCREF(rule)
    _set_array(&t.b[i], p1, p2, <PyObject*>rule)
    t.n = i + 1
    t.narray += 1
    return i


cdef object _array_release = None


def set_array_hooks(pull, release=None):
    """Install (a capsule named ``deltaad._arrays.pull``) or remove (None) the pullback of the
    array fast path's rules in the general sweep; ``release``, called by ``release_memory``,
    lets go of what the fast path keeps."""
    global _array_pull, _array_release
    _array_release = release
    if pull is None:
        _array_pull = NULL
    else:
        _array_pull = <array_pull_t>PyCapsule_GetPointer(pull, "deltaad._arrays.pull")


def array_push_capsule():
    """The array fast path's push (see ``_push_array``), as a capsule."""
    return PyCapsule_New(<void*>_push_array, "deltaad._core.push_array", NULL)


cdef inline void _accumulate(list adj, Py_ssize_t i, object x) except *:
    old = adj[i]
    if old is None:
        adj[i] = x
        return
    if _array_add != NULL and type(old) is not float:
        r = _array_add(old, x)
        if r is not None:
            adj[i] = r
            return
    adj[i] = old + x


@cython.no_gc_clear  # as Trace
@cython.auto_pickle(False)
cdef class ForwardLevel(Trace):
    """A forward trace: each dual carries its tangent; partials meet tangents at once (§4)."""

    def __cinit__(self, *args):
        self.h.is_forward = True

    def __dealloc__(self):
        _close_handle(self)  # before Trace's deallocation runs weak reference callbacks

    def input(self, value, tangent):
        _check_lower(self.h, value)
        _check_lower(self.h, tangent)
        cdef Dual r = _new_dual(value, self.h, -1)
        _set_tangent(r, tangent)
        return r

    def inputs(self, values, tangents):
        """``input`` for each pair of ``values`` and ``tangents``."""
        cdef list vals = values if type(values) is list else list(values)
        cdef list tans = tangents if type(tangents) is list else list(tangents)
        cdef Py_ssize_t m = min(len(vals), len(tans))
        cdef Py_ssize_t k
        cdef Dual r
        cdef list out = PyList_New(m)  # slots NULL until set: safe to free on an error
        cdef PyObject* o
        cdef PyObject* xp
        cdef PyObject* tp
        cdef TraceHandle h = self.h
        k = 0
        while k < m and k < len(vals) and k < len(tans):  # floats, as in Tape.inputs
            xp = (<PyListObject*>vals).ob_item[k]
            tp = (<PyListObject*>tans).ob_item[k]
            if xp.ob_type != <PyTypeObject*>float or tp.ob_type != <PyTypeObject*>float:
                break
            o = _alloc_raw(<PyObject*>h)
            (<Dual>o).v = (<PyFloatObject*>xp).ob_fval
            _store_t(&(<Dual>o).i, (<PyFloatObject*>tp).ob_fval)
            _list_steal(out, k, o)
            k += 1
        for k in range(k, m):
            x = vals[k]
            t = tans[k]
            if type(x) is float and type(t) is float:  # the common case in one step
                r = _alloc_dual(self.h)
                r.v = PyFloat_AS_DOUBLE(x)
                _store_t(&r.i, PyFloat_AS_DOUBLE(t))
            else:
                _check_lower(self.h, x)
                _check_lower(self.h, t)
                r = _new_dual(x, self.h, -1)
                _set_tangent(r, t)
            Py_INCREF(r)
            PyList_SET_ITEM(out, k, r)
        return out

    def float_inputs(self, xs, ts):
        """``inputs(xs, ts)`` for non-empty lists or tuples ``xs`` and ``ts`` of exact floats
        of one length, each item read once (see ``Tape.float_inputs``); None for anything else."""
        return self._flat_inputs(xs, ts)

    cdef list _flat_inputs(self, xs, ts):
        cdef Py_ssize_t m
        if type(xs) is not list and type(xs) is not tuple:
            return None
        if type(ts) is not list and type(ts) is not tuple:
            return None
        m = len(xs)
        if m == 0 or len(ts) != m:
            return None
        return _float_inputs(self, None, xs, ts, m)

    def emit(self, value, operands, coefs):
        """Forward twin of ``Tape.push_linear`` with coefficients: sum of c_i * tangent_i."""
        operands = list(operands)
        coefs = list(coefs)
        if len(operands) != len(coefs) or not operands:
            raise ValueError("emit: one coefficient per operand, and at least one operand")
        t = None
        for x, c in zip(operands, coefs):
            if type(x) is not Dual or (<Dual>x).tr is not self.h:
                raise TypeError("emit: every operand must be a dual of this forward level")
            term = _tmul(c, (<Dual>x).tangent)
            t = term if t is None else t + term
        cdef Dual r = _new_dual(value, self.h, -1)
        _set_tangent(r, t)
        return r


# --------------------------------------------------------------------------------------------
# The dual number

@cython.final
@cython.no_gc
@cython.auto_pickle(False)
cdef class Dual:
    """A dual number ``(value, delta)``: ``value`` with ``Var id`` on ``trace`` (a tape) or with
    ``tangent`` (a forward level). ``value`` is a float or a dual of a lower level."""

    # 48 bytes with the object header, a size class of CPython's allocator below 64: every
    # input's dual is made, read and freed once per gradient, so its size is memory traffic.
    # A tape's dual needs an id, a forward level's a tangent: one slot holds either. On a
    # forward level, ``i`` holds the float tangent's 8 bytes (``_load_t``/``_store_t``); a
    # tangent that is not a float goes with the value into an ``_Objects`` in ``ov`` (so
    # ``ov is None`` still means "value and tangent are floats"). ``ov`` is an object field
    # rather than a raw pointer released in a ``__dealloc__``: Cython wraps a ``__dealloc__``
    # in a save and restore of the error state, which cost more per dual than a None reference.
    cdef double v       # the value, when ov is None
    cdef object ov      # the value when it is not a float (a dual of a lower level), or on a
                        # forward level an _Objects when the tangent is not a float
    cdef TraceHandle tr # its trace's handle: a dual never keeps its trace alive (see TraceHandle)
    cdef Py_ssize_t i   # Var id on a tape; on a forward level the float tangent (see above)

    def __init__(self, value, trace, id, tangent):
        if self.tr is not None:
            raise TypeError("Dual: a dual number is immutable; make a new one")
        cdef TraceHandle h
        cdef Py_ssize_t i
        if isinstance(trace, (Tape, ForwardLevel)):
            h = (<Trace>trace).h
            i = _check_id(<Trace>trace, id)
        elif type(trace) is TraceHandle:  # a finished trace (a left-over dual's ``trace``):
            h = <TraceHandle>trace        # the dual is escaped from the start
            i = _index(id)
        else:
            raise TypeError("Dual: trace must be a deltaad Tape or ForwardLevel")
        _check_lower(h, value)
        _set_value(self, value)
        if h.is_forward:
            _check_lower(h, tangent)
            _set_tangent(self, tangent)  # (in the id's slot: a forward dual's id is -1)
        else:
            self.i = i
        self.tr = h

    @property
    def value(self):
        return _value_of(self)

    @property
    def trace(self):
        """The dual's trace while something keeps it; once it has been freed, its handle,
        which reads as a closed trace (``closed``, ``level``, ``is_forward``)."""
        cdef PyObject* t = self.tr.trace
        if t == NULL:
            return self.tr
        return <object>t

    @property
    def id(self):
        if self.tr is not None and self.tr.is_forward:
            return -1
        return self.i

    @property
    def tangent(self):
        if not self.tr.is_forward:
            return None
        if type(self.ov) is _Objects:
            return (<_Objects>self.ov).tangent
        return _load_t(&self.i)

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
        return _emit1(a.tr, -_value_of(a), a, -1.0)

    def __pos__(self):
        if self.tr.closed:
            raise escaped_error(self.tr.level)
        return self

    def __abs__(self):
        cdef object x = _value_of(self)
        if (self.ov is not None and type(strip(x)) is not float
                and (_recorder is None or type(strip(x)) is not _recorder)):  # a numpy scalar
            if self.tr.closed:
                raise escaped_error(self.tr.level)
            y, c = _rules.numpy_abs(x, strip(x))
            return _emit1(self.tr, y, <Dual>self, c)
        return _unary(self, U_ABSOLUTE)

    # -- comparisons: on values, returning bool; nothing is recorded --
    def __richcmp__(self, other, int op):
        # Fast path: float values on both sides (a float dual against a float dual of any
        # trace, a float, or an int that a double holds exactly): the C comparison of the two
        # doubles is Python's float comparison, NaN included. Everything else compares the
        # stripped values with Python's rules (numpy scalars as floats: see _cmp).
        cdef double x, y
        cdef long long k
        cdef int overflow
        cdef Dual a = <Dual>self
        if a.ov is None:
            x = a.v
            if type(other) is Dual:
                if (<Dual>other).ov is None:
                    return _cmp_doubles(x, (<Dual>other).v, op)
            elif type(other) is float or type(other) is _float64:  # (_cmp's float(other))
                return _cmp_doubles(x, PyFloat_AS_DOUBLE(other), op)
            elif type(other) is int:
                k = PyLong_AsLongLongAndOverflow(other, &overflow)
                if overflow == 0 and -9007199254740992 <= k <= 9007199254740992:
                    return _cmp_doubles(x, <double>k, op)
        return PyObject_RichCompare(_strip(self), _cmp(other), op)

    def __hash__(self):
        raise TypeError("unhashable type: 'Dual'")

    def __bool__(self):
        if self.ov is None:
            return self.v != 0.0  # bool of a float: NaN is true
        return bool(_strip(self))

    def __float__(self):
        return formatted("float", strip(self))

    def __int__(self):
        # piecewise constant, like floor and trunc: its derivative is 0, nothing is dropped
        return int(strip(self))

    def __complex__(self):
        raise no_float_error("complex")

    def as_integer_ratio(self):
        raise exact_ratio_error()

    def __round__(self, ndigits=None):
        return round(strip(self), ndigits)

    def __floor__(self):
        return _math.floor(strip(self))

    def is_integer(self):
        # a truth about the value, as comparisons are (float's method; numbers.Real lacks it)
        return strip(self).is_integer()

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
        cdef double y, d
        if not kwargs and _scalar_ufuncs is not None and method == "__call__":
            # np.exp(x) of floats and scalar duals (scalar code written with numpy), the
            # commonest: the scalar function the hook would reach, without its dispatch
            f = _scalar_ufuncs.get(ufunc)
            if f is not None and ufunc not in _constant_ufuncs:
                if (_np_unary != NULL and len(inputs) == 1 and inputs[0] is self
                        and self.ov is None):
                    code = _np_unary_codes.get(f)
                    if code is not None:
                        if self.tr.closed:
                            raise escaped_error(self.tr.level)
                        if _np_unary(<int>code, self.v, &y, &d):
                            return _steal(_rec1(<PyObject*>self, y, d))
                for x in inputs:
                    if type(x) is not Dual and type(x) is not float and type(x) is not _float64:
                        break
                else:
                    return f(*inputs)
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


cdef inline int _check_lower(TraceHandle tr, object x) except -1:
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
    if tr.h.is_forward:
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
    """The tangent of a forward dual whose value is set: a float in the id's slot, anything
    else in an _Objects with the value (see Dual)."""
    cdef _Objects o
    if isinstance(tangent, float):
        _store_t(&r.i, PyFloat_AS_DOUBLE(tangent))
        if type(r.ov) is _Objects:  # a value set with an earlier tangent: back to itself
            x = (<_Objects>r.ov).value
            r.ov = None if type(x) is float else x
    elif tangent is None:
        raise TypeError("Dual: the tangent must be a number, an array or a dual, not None")
    else:
        o = _Objects.__new__(_Objects)
        o.value = _value_of(r)
        o.tangent = tangent
        _store_t(&r.i, 0.0)
        r.ov = o


cdef inline object _value_of(Dual d):
    """The value of ``d`` (a float, or the object its ``ov`` holds)."""
    cdef object o = d.ov
    if o is None:
        return d.v
    if type(o) is _Objects:
        return (<_Objects>o).value
    return o


@cython.final
@cython.no_gc
@cython.auto_pickle(False)
cdef class _Objects:
    """A forward dual's value and tangent when the tangent is not a float (an array, a dual
    of a lower level): kept in its ``ov``, so that the dual has no field for it."""
    cdef object value    # a float or any value a dual holds
    cdef object tangent


# Freed duals are kept for reuse ("zombies": reference count 0, type Dual, ov and tr None), up
# to DFREE_MAX of them (192 MB; an elementwise map of 10^6 inputs frees 3 * 10^6 duals at
# once, and those past the room cost pymalloc arenas given back and faulted in again): making a dual then costs a pop and three stores, where
# CPython's allocator costs ~150 instructions per dual made and freed, and memory that
# CPython's allocator gave back to the system costs page faults again. An input list of 10^6
# floats gets its 10^6 duals back from here on the next call. ``_dual_dealloc`` replaces the
# type's tp_dealloc (set at the end of the module); only this module's code sees zombies.
# While tracemalloc traces, no dual is kept or reused (see _spare): ``_dfree_on`` is refreshed
# whenever a trace is made, and the kept duals are freed when it turns off; so a kept dual
# (``_dfree_n > 0``) is always one to reuse, and taking one tests nothing else.
cdef enum:
    DFREE_MAX = 4194304
cdef PyObject* _dfree[DFREE_MAX]
cdef Py_ssize_t _dfree_n = 0
cdef bint _dfree_on = True


cdef inline Dual _alloc_dual(TraceHandle tr):
    """A dual of ``tr`` with ov/ot None; the caller sets v, i (and t or ot on a forward level)."""
    return _steal(_alloc_raw(<PyObject*>tr))


cdef inline PyObject* _alloc_raw(PyObject* tr) except NULL:
    """``_alloc_dual`` as a new reference held in a C pointer (no counting around the call)."""
    global _dfree_n
    cdef PyObject* o
    if _dfree_n > 0:  # (only while _dfree_on: see _dfree)
        _dfree_n -= 1
        o = _dfree[_dfree_n]
        o.ob_refcnt = 1  # a zombie: see _dual_dealloc
    else:
        o = _fresh_raw()
    (<Dual>o).tr = <TraceHandle>tr  # in place of None: no Python code runs
    return o


cdef inline Py_ssize_t _zombies_for(Py_ssize_t m) noexcept:
    """How many of ``m`` duals to be made in one C loop the kept duals give (``_zombie_at``;
    none while ``_dfree_on`` is off: see _dfree)."""
    return _dfree_n if _dfree_n < m else m


cdef inline void _as_input(PyObject* o, PyObject** it, PyObject** tt, Py_ssize_t k,
                           Py_ssize_t start, Binding* b) noexcept:
    """The dual ``o`` made input ``k`` of value ``it[k]`` (a float): on a tape (``b`` not
    NULL) its id ``start + k`` and binding ``b[k]`` an input's; on a forward level its
    tangent ``tt[k]`` (a float). The step of every loop of ``_float_inputs``."""
    (<Dual>o).v = (<PyFloatObject*>it[k]).ob_fval
    if b != NULL:
        (<Dual>o).i = start + k
        b[k].p1 = -1  # no parents
        b[k].c1 = 0.0
        b[k].p2 = -1
        b[k].c2 = 0.0
    else:
        _store_t(&(<Dual>o).i, (<PyFloatObject*>tt[k]).ob_fval)


cdef inline PyObject* _zombie_at(Py_ssize_t j, PyObject* h) noexcept:
    """``_alloc_raw(h)`` for the kept dual in slot ``j`` (the ``k``-th from the top for ``j =
    _dfree_n - 1 - k``, ``_dfree_n`` read once before the loop), in a loop that takes several
    and runs no Python code: its reference to ``h`` (and the one to None it drops) are counted
    by ``_taken`` once for all."""
    cdef PyObject* o = _dfree[j]
    o.ob_refcnt = 1
    _set_tr(o, h)
    return o


cdef inline PyObject* _pop_zombie(PyObject* h) noexcept:
    """``_alloc_raw(h)`` when a kept dual is there (``_dfree_n > 0``,
    checked by the caller): no call, no test that may not be needed."""
    global _dfree_n
    _dfree_n -= 1
    cdef PyObject* o = _dfree[_dfree_n]
    o.ob_refcnt = 1
    h.ob_refcnt += 1
    (<PyObject*>None).ob_refcnt -= 1  # the zombie's reference (the module holds None too)
    _set_tr(o, h)
    return o


cdef inline void _taken(Py_ssize_t t, PyObject* h) noexcept:
    """Settle ``_zombie_at(0 .. t-1)``: off the kept list, ``t`` more references to ``h`` and
    ``t`` fewer to None (which the module holds: never zero here)."""
    global _dfree_n
    _dfree_n -= t
    h.ob_refcnt += t
    (<PyObject*>None).ob_refcnt -= t


cdef PyObject* _fresh_raw() except NULL:
    r = Dual.__new__(Dual)
    Py_INCREF(r)
    return <PyObject*>r


cdef void _dual_dealloc(PyObject* o) noexcept:
    """tp_dealloc of Dual: drop the references, then keep the object for reuse (or free it).
    The common case -- a float dual (ov None) whose handle something else holds too, room
    among the kept duals -- runs no Python code and calls nothing (no register to save): the
    handle's reference becomes one to None, as ``_dual_dealloc_slow`` leaves it, the same
    zombie. Only borrowed casts of ``o`` below: a counted reference would free it again."""
    global _dfree_n
    cdef PyObject* h = _get_tr(o)
    cdef PyObject* none = <PyObject*>None
    cdef Py_ssize_t k = _dfree_n
    if <PyObject*>(<Dual>o).ov == none and h.ob_refcnt > 1 and k < DFREE_MAX and _dfree_on:
        h.ob_refcnt -= 1  # never the last reference: nothing is freed
        none.ob_refcnt += 1
        _set_tr(o, none)
        _dfree[k] = o
        _dfree_n = k + 1
        return
    _dual_dealloc_slow(o)


cdef void _dual_dealloc_slow(PyObject* o) noexcept:
    """``_dual_dealloc``'s every case: the references go (freeing a handle, or a value that
    is not a float, may run Python code), then the dual is kept or freed."""
    global _dfree_n
    if (<Dual>o).ov is not None:
        (<Dual>o).ov = None
    (<Dual>o).tr = None  # may free a handle (never a trace; a weak reference to it may call back)
    if _dfree_n < DFREE_MAX and _dfree_on:
        _dfree[_dfree_n] = o
        _dfree_n += 1
    else:
        _free_zombie(o)


cdef void _free_zombie(PyObject* o) noexcept:
    """Give a zombie's memory back: its two references to None, then the block itself."""
    Py_DECREF(<object>(<Dual>o).ov)
    Py_DECREF(<object>(<Dual>o).tr)
    PyObject_Free(o)


cdef void _release_duals() noexcept:
    global _dfree_n
    while _dfree_n > 0:
        _dfree_n -= 1
        _free_zombie(_dfree[_dfree_n])


cdef inline Dual _new_dual(object value, TraceHandle tr, Py_ssize_t i):
    cdef Dual r = _alloc_dual(tr)
    _set_value(r, value)
    r.i = i
    return r


cdef inline object _fast1(Dual a, double v, double ca):
    """Result of a unary step on a float dual: one binding, or one tangent product."""
    return _steal(_rec1(<PyObject*>a, v, ca))


cdef inline object _fast2(Dual a, Dual b, double v, double ca, double cb):
    """Result of a binary step on two float duals of the same trace."""
    return _steal(_rec2(<PyObject*>a, <PyObject*>b, v, ca, cb))


# _fast1/_fast2 over C pointers: no reference is counted but the result's own. An open trace
# is alive (its opener holds it) and no Python code runs between the test and the push: the
# tape pointer is valid there.
cdef inline PyObject* _rec1(PyObject* a, double v, double ca) except NULL:
    """``_fast1``'s step over C pointers. The common case -- a kept dual to reuse, an open
    trace, room on the tape or a float tangent -- calls nothing, so it needs no saved registers
    (a fifth of a step's instructions); the rest is ``_rec1_slow``'s, the same bits."""
    global _dfree_n
    cdef PyObject* h = <PyObject*>(<Dual>a).tr
    cdef PyObject* r
    cdef PyObject* tp
    cdef Py_ssize_t i
    cdef double t
    if _dfree_n > 0 and not (<TraceHandle>h).closed:  # (a kept dual: see _dfree)
        if not (<TraceHandle>h).is_forward:
            tp = (<TraceHandle>h).trace
            i = (<Tape>tp).n
            if i < (<Tape>tp).cap:
                r = _pop_zombie(h)
                (<Dual>r).v = v
                (<Tape>tp).b[i].p1 = <int32_t>(<Dual>a).i
                (<Tape>tp).b[i].c1 = ca
                (<Tape>tp).b[i].p2 = -1
                (<Tape>tp).b[i].c2 = 0.0
                (<Tape>tp).n = i + 1
                (<Dual>r).i = i
                return r
        elif (<Dual>a).ov is None:  # a float tangent (see Dual)
            t = _load_t(&(<Dual>a).i)
            r = _pop_zombie(h)
            (<Dual>r).v = v
            _store_t(&(<Dual>r).i, ca * t if t != 0.0 else 0.0)
            return r
    return _rec1_slow_tail(a, v, ca)


cdef inline PyObject* _rec2(PyObject* a, PyObject* b, double v, double ca, double cb) except NULL:
    """``_fast2``'s step over C pointers; the common case calls nothing (see ``_rec1``)."""
    cdef PyObject* h = <PyObject*>(<Dual>a).tr
    cdef PyObject* r
    cdef PyObject* tp
    cdef Py_ssize_t i
    cdef double t, u
    if _dfree_n > 0 and not (<TraceHandle>h).closed:  # (a kept dual: see _dfree)
        if not (<TraceHandle>h).is_forward:
            tp = (<TraceHandle>h).trace
            i = (<Tape>tp).n
            if i < (<Tape>tp).cap:
                r = _pop_zombie(h)
                (<Dual>r).v = v
                (<Tape>tp).b[i].p1 = <int32_t>(<Dual>a).i
                (<Tape>tp).b[i].c1 = ca
                (<Tape>tp).b[i].p2 = <int32_t>(<Dual>b).i
                (<Tape>tp).b[i].c2 = cb
                (<Tape>tp).n = i + 1
                (<Dual>r).i = i
                return r
        elif (<Dual>a).ov is None and (<Dual>b).ov is None:  # float tangents (see Dual)
            t = _load_t(&(<Dual>a).i)
            u = _load_t(&(<Dual>b).i)
            r = _pop_zombie(h)
            (<Dual>r).v = v
            _store_t(&(<Dual>r).i, ((ca * t) if t != 0.0 else 0.0) + ((cb * u) if u != 0.0 else 0.0))
            return r
    return _rec2_slow_tail(a, b, v, ca, cb)


cdef PyObject* _rec1_slow(PyObject* a, double v, double ca) except NULL:
    cdef PyObject* h = <PyObject*>(<Dual>a).tr
    cdef PyObject* r = _alloc_raw(h)
    cdef PyObject* tp
    cdef Py_ssize_t i
    cdef double t
    (<Dual>r).v = v
    if (<TraceHandle>h).closed:
        return _drop_escaped(r, h)
    if not (<TraceHandle>h).is_forward:
        tp = (<TraceHandle>h).trace
        i = (<Tape>tp).n
        if i == (<Tape>tp).cap:
            return _push_full(r, tp, (<Dual>a).i, ca, -1, 0.0)
        (<Tape>tp).b[i].p1 = <int32_t>(<Dual>a).i
        (<Tape>tp).b[i].c1 = ca
        (<Tape>tp).b[i].p2 = -1
        (<Tape>tp).b[i].c2 = 0.0
        (<Tape>tp).n = i + 1
        (<Dual>r).i = i
    elif (<Dual>a).ov is None:  # a float tangent (see Dual)
        t = _load_t(&(<Dual>a).i)
        _store_t(&(<Dual>r).i, ca * t if t != 0.0 else 0.0)  # a zero tangent stays 0, even if
                                                             # ca is inf
    else:
        return _fwd1_objects(r, a, ca)
    return r


cdef PyObject* _rec2_slow(PyObject* a, PyObject* b, double v, double ca, double cb) except NULL:
    cdef PyObject* h = <PyObject*>(<Dual>a).tr
    cdef PyObject* r = _alloc_raw(h)
    cdef PyObject* tp
    cdef Py_ssize_t i
    cdef double t, u
    (<Dual>r).v = v
    if (<TraceHandle>h).closed:
        return _drop_escaped(r, h)
    if not (<TraceHandle>h).is_forward:
        tp = (<TraceHandle>h).trace
        i = (<Tape>tp).n
        if i == (<Tape>tp).cap:
            return _push_full(r, tp, (<Dual>a).i, ca, (<Dual>b).i, cb)
        (<Tape>tp).b[i].p1 = <int32_t>(<Dual>a).i
        (<Tape>tp).b[i].c1 = ca
        (<Tape>tp).b[i].p2 = <int32_t>(<Dual>b).i
        (<Tape>tp).b[i].c2 = cb
        (<Tape>tp).n = i + 1
        (<Dual>r).i = i
    elif (<Dual>a).ov is None and (<Dual>b).ov is None:  # float tangents (see Dual)
        t = _load_t(&(<Dual>a).i)
        u = _load_t(&(<Dual>b).i)
        _store_t(&(<Dual>r).i, ((ca * t) if t != 0.0 else 0.0) + ((cb * u) if u != 0.0 else 0.0))
    else:
        return _fwd2_raw(r, a, b, ca, cb)
    return r


cdef PyObject* _drop_escaped(PyObject* r, PyObject* h) except NULL:
    """The result ``r`` of a step on a dual of a finished trace: dropped, and the error."""
    Py_DECREF(<object>r)
    raise escaped_error((<TraceHandle>h).level)


cdef PyObject* _push_full(PyObject* r, PyObject* tp, Py_ssize_t p1, double c1, Py_ssize_t p2,
                          double c2) except NULL:
    """The binding of ``r`` on the tape ``tp`` whose buffer is full (it grows); ``r`` is
    dropped if it cannot."""
    try:
        (<Dual>r).i = (<Tape>tp)._push(p1, c1, p2, c2)
    except BaseException:
        Py_DECREF(<object>r)
        raise
    return r


cdef PyObject* _fwd1_objects(PyObject* r, PyObject* a, double ca) except NULL:
    """The tangent of ``_rec1``'s result when the tangent is not a float."""
    try:
        _set_tangent(<Dual>r, _tmul(ca, (<Dual>a).tangent))
    except BaseException:
        Py_DECREF(<object>r)
        raise
    return r


cdef PyObject* _fwd2_raw(PyObject* r, PyObject* a, PyObject* b, double ca, double cb) except NULL:
    try:
        _fwd2_objects(<Dual>r, <Dual>a, <Dual>b, ca, cb)
    except BaseException:
        Py_DECREF(<object>r)
        raise
    return r


cdef int _fwd2_objects(Dual r, Dual a, Dual b, double ca, double cb) except -1:
    """The tangent of ``_fast2``'s result when a tangent is not a float (an array, an outer
    dual)."""
    _set_tangent(r, _tmul(ca, a.tangent) + _tmul(cb, b.tangent))
    return 0


cdef int _raise_escaped(TraceHandle tr) except -1:
    raise escaped_error(tr.level)


cdef inline object _tmul(object c, object t):
    """``c * t`` for a partial ``c`` and a tangent ``t``: 0.0 when ``t`` is an exact zero (a
    zero vector maps to zero, even through an infinite or nan partial): forward mode's twin of
    the sweep skipping zero adjoints, so both modes agree at the edge of a domain."""
    if _is_zero(t):
        return 0.0
    return c * t


cdef Dual _emit1(TraceHandle tr, object value, Dual a, object ca):
    """General twin of ``_fast1``: value and coefficient may be outer duals."""
    if type(ca) is not float and isinstance(ca, float):
        ca = float(ca)  # np.float64: swept as a float (_rules.as_float_coef)
    cdef Dual r = _new_dual(value, tr, -1)
    cdef Py_ssize_t i
    cdef Tape tp
    if tr.is_forward:
        _set_tangent(r, _tmul(ca, a.tangent))
        return r
    tp = _tape_of(tr)  # held: Python code ran since the caller's test (``isinstance``)
    if type(ca) is float:
        r.i = tp._push(a.i, PyFloat_AS_DOUBLE(ca), -1, 0.0)
    else:
        i = tp._push(a.i, 0.0, -1, 0.0)
        tp.ocoef[i] = (ca, 0.0)
        tp.general = True
        r.i = i
    return r


cdef Dual _emit2(TraceHandle tr, object value, Dual a, object ca, Dual b, object cb):
    """General twin of ``_fast2``."""
    if type(ca) is not float and isinstance(ca, float):
        ca = float(ca)
    if type(cb) is not float and isinstance(cb, float):
        cb = float(cb)
    cdef Dual r = _new_dual(value, tr, -1)
    cdef Py_ssize_t i
    cdef Tape tp
    if tr.is_forward:
        _set_tangent(r, _tmul(ca, a.tangent) + _tmul(cb, b.tangent))
        return r
    tp = _tape_of(tr)  # as in _emit1
    if type(ca) is float and type(cb) is float:
        r.i = tp._push(a.i, PyFloat_AS_DOUBLE(ca), b.i, PyFloat_AS_DOUBLE(cb))
    else:
        i = tp._push(a.i, 0.0, b.i, 0.0)
        tp.ocoef[i] = (ca, cb)
        tp.general = True
        r.i = i
    return r


cdef object _finish(TraceHandle tr, object value, object a, bint a_on, object ca, object b, bint b_on, object cb):
    if a_on:
        if b_on:
            return _emit2(tr, value, <Dual>a, ca, <Dual>b, cb)
        return _emit1(tr, value, <Dual>a, ca)
    return _emit1(tr, value, <Dual>b, cb)


cdef object _cmp(object x):
    """The other side of a comparison: stripped, and a numpy scalar as a float (so: bool)."""
    x = _strip(x)
    if type(x) is not float and type(x) is not int and isinstance(x, _numbers.Real):
        return float(x)
    return x


cdef inline bint _cmp_doubles(double x, double y, int op) noexcept:
    if op == Py_LT:
        return x < y
    if op == Py_LE:
        return x <= y
    if op == Py_EQ:
        return x == y
    if op == Py_NE:
        return x != y
    if op == Py_GT:
        return x > y
    return x >= y


cdef inline object _strip(object x):
    while type(x) is Dual:
        if (<Dual>x).ov is None:
            return (<Dual>x).v
        x = _value_of(<Dual>x)
    return x


def strip(x):
    """The plain number under any number of dual levels."""
    return _strip(x)


cdef object _const(object x):
    """``x`` as a constant operand: a float, a lower-level dual, or None if not a real number."""
    tx = type(x)
    if tx is float or tx is Dual or (tx is _recorder and _recorder is not None):
        return x
    if tx is int or tx is bool:
        return float(x)
    if tx is _float64:  # numpy's float scalar (data[i]): numpy_const keeps it
        return x
    if isinstance(x, _numbers.Real):
        return _rules.numpy_const(x)
    return None


# The number slots of Dual for + - * /: the float fast paths of __add__/__radd__ etc., the
# same arithmetic, reached without the generic slot Cython generates (which looks up the
# method pair and, for a float on the left, walks the type's MRO): ~60 instructions less per
# operation. Anything else goes to that generic slot, saved here at import.
ctypedef object (*binop_slot)(object, object)
cdef binop_slot _cy_nb_add = NULL
cdef binop_slot _cy_nb_sub = NULL
cdef binop_slot _cy_nb_mul = NULL
cdef binop_slot _cy_nb_div = NULL

# The slots below are written over C pointers and return one (NULL with an exception set, as
# a slot does): every call in them is their last step (a tail call: no register saved, no
# result checked on the way out). ``_rec1_raw``/``_rec2_raw`` are _rec1/_rec2, their NULL
# handed on as it is; ``binop_raw`` is the saved generic slot, called the same way.
ctypedef PyObject* (*binop_raw)(PyObject*, PyObject*) noexcept
cdef extern from *:
    PyObject* _rec1_raw "__pyx_f_7deltaad_5_core__rec1"(PyObject* a, double v, double ca) noexcept
    PyObject* _rec2_raw "__pyx_f_7deltaad_5_core__rec2"(PyObject* a, PyObject* b, double v,
                                                        double ca, double cb) noexcept


cdef inline bint _is_float_dual(PyObject* x) noexcept:
    """``x`` is a Dual with a float value."""
    return x.ob_type == <PyTypeObject*>Dual and <PyObject*>(<Dual>x).ov == <PyObject*>None


cdef inline bint _is_float(PyObject* x) noexcept:
    return x.ob_type == <PyTypeObject*>float


cdef inline bint _same_trace(PyObject* x, PyObject* y) noexcept:
    return _get_tr(x) == _get_tr(y)


cdef inline bint _small_int(PyObject* x, double* out) noexcept:
    """``x`` is an int that a float holds exactly (``2 * x``, ``1 - p``: user code's commonest
    constants); ``out`` gets ``float(x)``, what the general path converts it to."""
    cdef int overflow = 0
    cdef long long v
    if x.ob_type != <PyTypeObject*>int:
        return False
    v = PyLong_AsLongLongAndOverflow(<object>x, &overflow)
    if overflow != 0 or v > 9007199254740992 or v < -9007199254740992:
        return False
    out[0] = <double>v
    return True


# Each slot's float cases call nothing (see _rec1); what they leave goes on by a tail call to
# its _int twin, never inlined (DELTAAD_NOINLINE above): an int operand, a float dual with
# it, recorded as with float(k); anything else to the generic slot Cython made.

cdef PyObject* _nb_add(PyObject* x, PyObject* y) noexcept:
    if _is_float_dual(x):
        if _is_float_dual(y):
            if _same_trace(x, y):
                return _rec2_raw(x, y, (<Dual>x).v + (<Dual>y).v, 1.0, 1.0)
        elif _is_float(y):
            return _rec1_raw(x, (<Dual>x).v + PyFloat_AS_DOUBLE(<object>y), 1.0)
    elif _is_float(x) and _is_float_dual(y):
        return _rec1_raw(y, PyFloat_AS_DOUBLE(<object>x) + (<Dual>y).v, 1.0)
    return _nb_add_int(x, y)


cdef PyObject* _nb_add_int(PyObject* x, PyObject* y) noexcept:
    cdef double c
    if _is_float_dual(x) and _small_int(y, &c):
        return _rec1_raw(x, (<Dual>x).v + c, 1.0)
    if _is_float_dual(y) and _small_int(x, &c):
        return _rec1_raw(y, c + (<Dual>y).v, 1.0)
    return (<binop_raw>_cy_nb_add)(x, y)


cdef PyObject* _nb_sub(PyObject* x, PyObject* y) noexcept:
    if _is_float_dual(x):
        if _is_float_dual(y):
            if _same_trace(x, y):
                return _rec2_raw(x, y, (<Dual>x).v - (<Dual>y).v, 1.0, -1.0)
        elif _is_float(y):
            return _rec1_raw(x, (<Dual>x).v - PyFloat_AS_DOUBLE(<object>y), 1.0)
    elif _is_float(x) and _is_float_dual(y):
        return _rec1_raw(y, PyFloat_AS_DOUBLE(<object>x) - (<Dual>y).v, -1.0)
    return _nb_sub_int(x, y)


cdef PyObject* _nb_sub_int(PyObject* x, PyObject* y) noexcept:
    cdef double c
    if _is_float_dual(x) and _small_int(y, &c):
        return _rec1_raw(x, (<Dual>x).v - c, 1.0)
    if _is_float_dual(y) and _small_int(x, &c):
        return _rec1_raw(y, c - (<Dual>y).v, -1.0)
    return (<binop_raw>_cy_nb_sub)(x, y)


cdef PyObject* _nb_mul(PyObject* x, PyObject* y) noexcept:
    cdef double c
    if _is_float_dual(x):
        if _is_float_dual(y):
            if _same_trace(x, y):
                return _rec2_raw(x, y, (<Dual>x).v * (<Dual>y).v, (<Dual>y).v, (<Dual>x).v)
        elif _is_float(y):
            c = PyFloat_AS_DOUBLE(<object>y)
            return _rec1_raw(x, (<Dual>x).v * c, c)
    elif _is_float(x) and _is_float_dual(y):
        c = PyFloat_AS_DOUBLE(<object>x)
        return _rec1_raw(y, c * (<Dual>y).v, c)
    return _nb_mul_int(x, y)


cdef PyObject* _nb_mul_int(PyObject* x, PyObject* y) noexcept:
    cdef double c
    if _is_float_dual(x) and _small_int(y, &c):
        return _rec1_raw(x, (<Dual>x).v * c, c)
    if _is_float_dual(y) and _small_int(x, &c):
        return _rec1_raw(y, c * (<Dual>y).v, c)
    return (<binop_raw>_cy_nb_mul)(x, y)


cdef PyObject* _nb_div(PyObject* x, PyObject* y) noexcept:
    cdef double bv, v
    if _is_float_dual(x):
        if _is_float_dual(y):
            if _same_trace(x, y):
                bv = (<Dual>y).v
                if bv != 0.0:
                    v = (<Dual>x).v / bv
                    return _rec2_raw(x, y, v, 1.0 / bv, -v / bv)
        elif _is_float(y):
            bv = PyFloat_AS_DOUBLE(<object>y)
            if bv != 0.0:
                return _rec1_raw(x, (<Dual>x).v / bv, 1.0 / bv)
    elif _is_float(x) and _is_float_dual(y) and (<Dual>y).v != 0.0:
        v = PyFloat_AS_DOUBLE(<object>x) / (<Dual>y).v
        return _rec1_raw(y, v, -v / (<Dual>y).v)
    return _nb_div_int(x, y)


cdef PyObject* _nb_div_int(PyObject* x, PyObject* y) noexcept:
    cdef double c, v
    if _is_float_dual(x) and _small_int(y, &c) and c != 0.0:
        return _rec1_raw(x, (<Dual>x).v / c, 1.0 / c)
    if _is_float_dual(y) and (<Dual>y).v != 0.0 and _small_int(x, &c):
        v = c / (<Dual>y).v
        return _rec1_raw(y, v, -v / (<Dual>y).v)
    return (<binop_raw>_cy_nb_div)(x, y)


# The comparison slot of Dual: __richcmp__'s fast path for two float values (a float dual
# against a float dual, a float or an np.float64), reached without the wrapper Cython makes around
# __richcmp__ (a counted reference to self, a call, a bool made from an int): ~20
# instructions less per comparison. Anything else goes to that wrapper, saved here at import.
# The slot's first argument is always a Dual: the type is final, so CPython calls it as the
# slot of the left operand, or of the right one with the operator reflected.
ctypedef object (*richcmp_slot)(object, object, int)
cdef richcmp_slot _cy_richcmp = NULL


cdef object _tp_richcmp(object x, object y, int op):
    if (<Dual>x).ov is None:
        if type(y) is Dual:
            if (<Dual>y).ov is None:
                if _cmp_doubles((<Dual>x).v, (<Dual>y).v, op):
                    return True
                return False
        elif type(y) is float or type(y) is _float64:  # (np.float64: a float's layout)
            if _cmp_doubles((<Dual>x).v, PyFloat_AS_DOUBLE(y), op):
                return True
            return False
    return _cy_richcmp(x, y, op)


cdef extern from *:
    """
    /* Swap Dual's number slots for + - * / (see _nb_add); return the ones Cython made. */
    static void deltaad_swap_number_slots(PyTypeObject *t, binaryfunc *add, binaryfunc *sub,
                                          binaryfunc *mul, binaryfunc *div) {
        PyNumberMethods *nb = t->tp_as_number;
        binaryfunc x;
        x = nb->nb_add; nb->nb_add = *add; *add = x;
        x = nb->nb_subtract; nb->nb_subtract = *sub; *sub = x;
        x = nb->nb_multiply; nb->nb_multiply = *mul; *mul = x;
        x = nb->nb_true_divide; nb->nb_true_divide = *div; *div = x;
    }
    /* Swap Dual's comparison slot (see _tp_richcmp); return the one Cython made. */
    static void deltaad_swap_richcompare(PyTypeObject *t, richcmpfunc *f) {
        richcmpfunc x = t->tp_richcompare; t->tp_richcompare = *f; *f = x;
    }
    """
    void deltaad_swap_number_slots(PyTypeObject* t, binop_slot* add, binop_slot* sub,
                                   binop_slot* mul, binop_slot* div)
    void deltaad_swap_richcompare(PyTypeObject* t, richcmp_slot* f)


cdef enum:
    OP_ADD = 0
    OP_SUB = 1
    OP_MUL = 2
    OP_DIV = 3
    OP_FLOORDIV = 4
    OP_MOD = 5
    OP_POW = 6


_OP_NAMES = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")


cdef object _nonreal(object a, object b, int op):
    """``a op b`` where one operand is not a real number: see ``_pure._nonreal``."""
    hook = _hooks["complex"]
    if hook is None:
        return NotImplemented
    return hook(_OP_NAMES[op], a, b)


cdef object _binop(object a, object b, int op):
    """The general path of a binary operator, step for step as ``_pure``'s ``_split``/``_finish``."""
    cdef TraceHandle t
    cdef TraceHandle ta
    cdef TraceHandle tb
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
                return _nonreal(a, b, op)
            t = ta
            if t.closed:
                raise escaped_error(t.level)
            a_on = True
            b_on = False
            va = (<Dual>a).value
    else:
        va = _const(a)
        if va is None:
            return _nonreal(a, b, op)
        t = (<Dual>b).tr
        if t.closed:
            raise escaped_error(t.level)
        a_on = False
        b_on = True
        vb = (<Dual>b).value
    if ((type(va) is not float or type(vb) is not float)
            and type(va) is not Dual and type(vb) is not Dual
            and (_recorder is None or (type(va) is not _recorder and type(vb) is not _recorder))):
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
        x = _value_of(<Dual>x)
    return type(x) is not float


cdef object _numpy_binop(TraceHandle t, int op, object a, bint a_on, object va, object b, bint b_on,
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
    cdef double fa, fb, da, db
    if (op <= OP_DIV or op == OP_POW) and PyFloat_Check(va) and PyFloat_Check(vb):
        # np.float64 and float (data[i] * w): _rules.numpy_partials' float partials, computed
        # here in the same IEEE operations (C's division is ieee_div: inf or nan at 0)
        fa = PyFloat_AS_DOUBLE(va)
        fb = PyFloat_AS_DOUBLE(vb)
        if op == OP_ADD:
            da = 1.0
            db = 1.0
        elif op == OP_SUB:
            da = 1.0
            db = -1.0
        elif op == OP_MUL:
            da = fb
            db = fa
        elif op == OP_DIV:  # (cdivision: C's division, inf or nan at 0, as ieee_div)
            da = 1.0 / fb
            db = -((fa / fb) / fb)
        else:  # pow: numpy_partials' branches, ieee_pow as _ieee_pow
            if fa < 0.0 and cm.isfinite(fb) and fb != cm.floor(fb):
                da = NAN  # no real power
            elif fb == 0.0 and fa == 0.0:
                da = 0.0  # a**0 is 1 everywhere
            else:
                da = fb * _ieee_pow(fa, fb - 1.0)
            if fa > 0.0:
                db = cm.log(fa) * _ieee_pow(fa, fb)
            elif fa == 0.0:
                db = 0.0
            else:
                db = NAN
        return _finish(t, v, a, a_on, da, b, b_on, db)
    ca, cb = _rules.numpy_partials(name, va, vb)
    return _finish(t, v, a, a_on, ca, b, b_on, cb)


cdef inline double _ieee_pow(double a, double b) noexcept:
    """``_rules.ieee_pow`` for a real power: +inf for a zero base (of either sign) to a
    negative power, C's pow otherwise (which is Python's where Python does not raise, and
    gives the infinity ieee_pow gives where Python would overflow)."""
    if a == 0.0 and b < 0.0:
        return INF
    return cm.pow(a, b)


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
    if tx is Dual:  # casts, not a typed local: no reference counted (see _nb_add)
        if (<Dual>x).tr.closed:
            raise escaped_error((<Dual>x).tr.level)
        if (<Dual>x).ov is None:
            _float_unary(code, (<Dual>x).v, &y, &d)
            return _steal(_rec1(<PyObject*>x, y, d))
        return _GENERIC[code](x)  # the value is a dual of an outer differentiation
    if tx is _dispatch_type and _dispatch_type is not None:
        return _recorder_dispatch(_UNARY_NAMES[code], x)
    if tx is int or tx is bool or isinstance(x, _numbers.Real):
        _float_unary(code, float(x), &y, &d)
        return y
    return _fallback(_UNARY_NAMES[code], x)


def _fallback(name, *args):
    hook = _hooks["fallback"]
    if hook is None:
        raise TypeError("deltaad.%s: unsupported argument types %s" % (name, [type(a).__name__ for a in args]))
    return hook(name, *args)


# One positional argument, as math's: called through METH_O, without parsing keywords, and
# made builtin functions (``binding(False)``), as math's are: CPython's interpreter calls a
# builtin METH_O function directly (a specialised call), a Cython function through the
# generic vectorcall (~40 instructions more per call). The "clinic" signature keeps
# ``inspect.signature`` working on a builtin.
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def sin(x): return _unary(x, U_SIN)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def cos(x): return _unary(x, U_COS)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def tan(x): return _unary(x, U_TAN)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def arcsin(x): return _unary(x, U_ARCSIN)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def arccos(x): return _unary(x, U_ARCCOS)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def arctan(x): return _unary(x, U_ARCTAN)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def sinh(x): return _unary(x, U_SINH)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def cosh(x): return _unary(x, U_COSH)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def tanh(x): return _unary(x, U_TANH)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def arcsinh(x): return _unary(x, U_ARCSINH)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def arccosh(x): return _unary(x, U_ARCCOSH)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def arctanh(x): return _unary(x, U_ARCTANH)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def exp(x): return _unary(x, U_EXP)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def expm1(x): return _unary(x, U_EXPM1)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def exp2(x): return _unary(x, U_EXP2)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def log(x): return _unary(x, U_LOG)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def log1p(x): return _unary(x, U_LOG1P)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def log2(x): return _unary(x, U_LOG2)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def log10(x): return _unary(x, U_LOG10)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def sqrt(x): return _unary(x, U_SQRT)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def cbrt(x): return _unary(x, U_CBRT)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def absolute(x): return _unary(x, U_ABSOLUTE)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def erf(x): return _unary(x, U_ERF)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def erfc(x): return _unary(x, U_ERFC)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def sigmoid(x): return _unary(x, U_SIGMOID)
@cython.binding(False)
@cython.embedsignature.format("clinic")
@cython.always_allow_keywords(False)
def softplus(x): return _unary(x, U_SOFTPLUS)


# ``math``'s functions as deltaad.math gives them (and the switched ``math`` module while a
# differentiation is open): builtin functions, so that ``math.exp(x)`` of a float dual costs a
# C call, as ``deltaad.exp(x)`` does, not a Python function's frame (~50 ns a call, about as
# much as the operation itself). One C function serves them all, each bound to a
# _MathFunction that says which: a float dual takes the C fast path, a plain float gets
# ``math``'s own result and errors, anything else deltaad.math's Python function (0-d array
# duals, nesting, deltaad.compile's numbers, ints, numpy scalars).

cdef class _MathFunction:
    """What one builtin of ``math_function`` is: its C fast path's code, ``math``'s function,
    and deltaad.math's Python one."""
    cdef int code    # the unary C fast path (-1: none)
    cdef int code2   # the binary one (-1: none)
    cdef readonly object name
    cdef object plain
    cdef readonly object slow   # (readonly: the tests hold the fast path to it)
    cdef object function

    def __reduce__(self):  # a builtin bound to self pickles as getattr(self, name)
        return (_math_entry, (self.name,))

    def __getattr__(self, name):
        if name == self.name and self.function is not None:
            return self.function
        raise AttributeError(name)


def _math_entry(name):
    """The _MathFunction behind ``deltaad.math.<name>`` (unpickling)."""
    from deltaad import math as m
    return getattr(m, name).__self__


cdef object _math_one(object self, object x):
    """``f(x)`` of the builtin bound to ``self`` (a _MathFunction)."""
    tx = type(x)
    cdef int code = (<_MathFunction>self).code
    if code >= 0:
        if tx is Dual:
            return _unary(x, code)
        if tx is float or tx is int:  # (math.sqrt(2): what the Python function does with it)
            return (<_MathFunction>self).plain(x)
    return (<_MathFunction>self).slow(x)


cdef enum:
    B_ATAN2, B_HYPOT, B_POW

_BINARY_CODES = {"arctan2": B_ATAN2, "hypot": B_HYPOT, "pow": B_POW}


cdef inline bint _real_operand(PyObject* x) noexcept:
    """A float dual, a float or an int: what math.pow's short path takes."""
    return _is_float_dual(x) or _is_float(x) or x.ob_type == <PyTypeObject*>int


cdef object _math_two(object self, object a, object b):
    """``f(a, b)`` of the builtin bound to ``self``: a float dual (or two of one open trace) with
    a float or float dual recorded in C. The value is ``math``'s own (called on the floats); the
    partials are the table's formulas, the same operations in the same order as its Python
    rule, so both backends give the same bits."""
    cdef int code = (<_MathFunction>self).code2
    cdef PyObject* pa = <PyObject*>a
    cdef PyObject* pb = <PyObject*>b
    cdef double x, y, v, r, ca, cb
    cdef bint da = _is_float_dual(pa)
    cdef bint db = _is_float_dual(pb)
    if (da and (<Dual>a).tr.closed) or (db and (<Dual>b).tr.closed):
        return (<_MathFunction>self).slow(a, b)  # (its error names the finished differentiation)
    if code == B_POW:
        if (da or db) and _real_operand(pa) and _real_operand(pb):
            # deltaad.math.pow's steps: math's errors from the values, then ``x ** y`` of the
            # operands (an int as its float), by the duals' own power
            (<_MathFunction>self).plain((<Dual>a).value if da else a,
                                        (<Dual>b).value if db else b)
            return (a if da else float(a)) ** (b if db else float(b))
        return (<_MathFunction>self).slow(a, b)
    if code < 0 or not ((da and (db or _is_float(pb))) or (db and _is_float(pa))):
        return (<_MathFunction>self).slow(a, b)
    if da and db and not _same_trace(pa, pb):
        return (<_MathFunction>self).slow(a, b)
    x = (<Dual>a).v if da else PyFloat_AS_DOUBLE(a)
    y = (<Dual>b).v if db else PyFloat_AS_DOUBLE(b)
    out = (<_MathFunction>self).plain(x, y)  # math's value and errors
    v = PyFloat_AS_DOUBLE(out)
    if code == B_ATAN2:  # atan2(a, b) = atan2(x, y) here: d/dx y / r, d/dy -x / r, nan at 0
        r = y * y + x * x
        if r == 0.0:
            ca = NAN
            cb = NAN
        else:
            ca = y / r
            cb = -x / r
    else:  # hypot: a / h, b / h, 0 at the origin (a subgradient)
        if v == 0.0:
            ca = 0.0
            cb = 0.0
        else:
            ca = x / v
            cb = y / v
    if da and db:
        return _steal(_rec2(pa, pb, v, ca, cb))
    if da:
        return _steal(_rec1(pa, v, ca))
    return _steal(_rec1(pb, v, cb))


cdef object _math_many(object self, tuple args):
    """``f(*args)`` with other than one argument: deltaad.math's Python function decides."""
    return (<_MathFunction>self).slow(*args)


ctypedef object (*_math_one_t)(object, object)
ctypedef object (*_math_many_t)(object, tuple)
ctypedef object (*_math_two_t)(object, object, object)

cdef extern from *:
    """
    static PyObject *(*deltaad_math_one)(PyObject *, PyObject *) = NULL;
    static PyObject *(*deltaad_math_many)(PyObject *, PyObject *) = NULL;
    static PyObject *(*deltaad_math_two)(PyObject *, PyObject *, PyObject *) = NULL;

    /* The one C function of every math builtin (METH_FASTCALL, positional only, as math's). */
    static PyObject *deltaad_math_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *t, *r;
        Py_ssize_t k;
        if (nargs == 1)
            return deltaad_math_one(self, args[0]);
        if (nargs == 2)
            return deltaad_math_two(self, args[0], args[1]);
        t = PyTuple_New(nargs);
        if (t == NULL)
            return NULL;
        for (k = 0; k < nargs; k++) {
            Py_INCREF(args[k]);
            PyTuple_SET_ITEM(t, k, args[k]);
        }
        r = deltaad_math_many(self, t);
        Py_DECREF(t);
        return r;
    }

    /* A builtin function named by the bytes ``name`` (its doc ``doc``), bound to ``self``. The
       method table and the bytes stay alive as long as the process: the caller keeps the bytes,
       and the table is never freed (one per math function, as a static table would be). */
    static PyObject *deltaad_new_math_builtin(PyObject *name, PyObject *doc, PyObject *self,
                                              PyObject *module) {
        PyObject *f;
        PyMethodDef *def = (PyMethodDef *)PyMem_RawMalloc(sizeof(PyMethodDef));
        if (def == NULL)
            return PyErr_NoMemory();
        def->ml_name = PyBytes_AS_STRING(name);
        def->ml_meth = (PyCFunction)(void (*)(void))deltaad_math_call;
        def->ml_flags = METH_FASTCALL;
        def->ml_doc = PyBytes_AS_STRING(doc);
        f = PyCFunction_NewEx(def, self, module);
        if (f == NULL)
            PyMem_RawFree(def);
        return f;
    }
    """
    void* deltaad_math_one
    void* deltaad_math_many
    void* deltaad_math_two
    object deltaad_new_math_builtin(bytes name, bytes doc, object self, object module)


(&deltaad_math_one)[0] = <void*><_math_one_t>_math_one
(&deltaad_math_many)[0] = <void*><_math_many_t>_math_many
(&deltaad_math_two)[0] = <void*><_math_two_t>_math_two
cdef list _math_keep = []  # the names and docs the builtins point into


def math_function(name, dual_name, plain, slow, signature="(x, /)"):
    """``math.<name>`` as deltaad.math gives it: a builtin taking the C fast path of
    ``dual_name`` (a name in ``_UNARY_NAMES`` or ``_BINARY_CODES``) for float duals, ``plain``
    (math's) for a float and ``slow`` (deltaad.math's Python function) for anything else;
    ``slow`` itself where ``dual_name`` has no C fast path."""
    code = _C_CODES.get(dual_name, -1)
    code2 = _BINARY_CODES.get(dual_name, -1)
    if code < 0 and code2 < 0:
        return slow
    e = _MathFunction()
    e.code = code
    e.code2 = code2
    e.name = name
    e.plain = plain
    e.slow = slow
    bname = name.encode()
    doc = ("%s%s\n--\n\n%s" % (name, signature, slow.__doc__ or "")).encode()
    _math_keep.append((bname, doc))
    e.function = deltaad_new_math_builtin(bname, doc, e, "deltaad.math")
    return e.function


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
            elif type(v) is not Dual and (_recorder is None or type(v) is not _recorder):
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
            if va is None or vb is None or (_recorder is not None and (
                    type(va) is _recorder or type(vb) is _recorder)):  # deltaad.compile records it
                return _fallback(name, a, b)
            return f(va, vb)
        s = _split_py(a, b)
        if s is None:
            return _fallback(name, a, b)
        t, a_on, b_on, va, vb = s
        if type(va) is float and type(vb) is float:
            y = f(va, vb)
        elif (type(va) is not Dual and type(vb) is not Dual
              and (_recorder is None or (type(va) is not _recorder and type(vb) is not _recorder))):
            # a numpy scalar: as in lift1
            if plain is not None:
                yp = plain(va, vb)
                da, db = partials(ns, float(va), float(vb), float(yp))
                return _finish(<TraceHandle>t, yp, a, a_on, da, b, b_on, db)
            va = float(va)
            vb = float(vb)
            y = f(va, vb)
        else:
            y = fn(va, vb)
        da, db = partials(ns, va, vb, y)
        return _finish(<TraceHandle>t, y, a, a_on, da, b, b_on, db)

    fn.__name__ = name
    fn.__qualname__ = name
    return fn


cdef tuple _split_py(object a, object b):
    """``(trace, a_on, b_on, va, vb)`` for the trace of highest level, or None (see _pure)."""
    cdef TraceHandle ta, tb
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
    cdef TraceHandle top = None
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
        return (<ForwardLevel>_trace_of(top)).emit(y, duals, coefs)
    if len(duals) == 1:
        return _emit1(top, y, <Dual>duals[0], coefs[0])
    if len(duals) == 2:
        return _emit2(top, y, <Dual>duals[0], coefs[0], <Dual>duals[1], coefs[1])
    i = _tape_of(top).push_linear([(<Dual>x).i for x in duals], coefs)
    return _new_dual_id(y, top, i)


cdef Dual _new_dual_id(object value, TraceHandle tr, Py_ssize_t i):
    return _new_dual(value, tr, i)



def _as_method(f):
    """``f`` as a method of Dual (``x.sin()``, which numpy's object arrays call): a builtin
    function (the C fast functions, see ``sin``) does not bind to an instance, so it is
    wrapped in one that does."""
    if type(f) is not type(len):
        return f

    def method(self):
        return f(self)
    method.__name__ = method.__qualname__ = f.__name__
    return method


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
            _methods[_u.__name__] = _as_method(globals()[_e.name])
_methods.update(_rules.SCALAR_ATTRIBUTES)  # shape, ndim, size, dtype, as numpy's scalars
if None in _GENERIC:  # the C copy names a function the table does not have
    raise ImportError("deltaad._core: C fast paths without a table entry: %s"
                      % [n for n, g in zip(_UNARY_NAMES, _GENERIC) if g is None])
_ipow, _pow_da = _rules.pow_rules(strip, lift)


def _real_part(self):
    check_open(self)
    return self


def _imag_part(self):
    check_open(self)
    return 0.0


# a real number's complex parts, as floats have them (complex values are ComplexDuals)
_methods["real"] = property(_real_part)
_methods["imag"] = property(_imag_part)


def _dual_new(*args, **kwargs):
    raise TypeError(DUAL_NEW)


# ``Dual.__new__(Dual)`` from Python would give a dual whose trace is None, which the hot path
# (no None checks) must never see; ``Dual(...)`` and this module's own ``Dual.__new__`` (a
# direct call of the type's C slot) are unaffected. Cython patches ``__reduce__`` into type
# dicts the same way.
(<dict><object>(<PyTypeObject*>Dual).tp_dict)["__new__"] = staticmethod(_dual_new)
(<PyTypeObject*>Dual).tp_dealloc = <destructor>_dual_dealloc  # keeps freed duals: see _dfree
_cy_nb_add = <binop_slot>_nb_add
_cy_nb_sub = <binop_slot>_nb_sub
_cy_nb_mul = <binop_slot>_nb_mul
_cy_nb_div = <binop_slot>_nb_div
deltaad_swap_number_slots(<PyTypeObject*>Dual, &_cy_nb_add, &_cy_nb_sub, &_cy_nb_mul,
                          &_cy_nb_div)  # now Dual's slots are ours, _cy_nb_* Cython's
_cy_richcmp = _tp_richcmp
deltaad_swap_richcompare(<PyTypeObject*>Dual, &_cy_richcmp)  # likewise the comparison slot
# The table's functions as methods, for numpy object arrays (a final type cannot be given
# attributes from Python; this is the same type-dict patch).
(<dict><object>(<PyTypeObject*>Dual).tp_dict).update(_methods)
PyType_Modified(<PyTypeObject*>Dual)


# --------------------------------------------------------------------------------------------
# numpy's scalars on the left of a dual

cdef extern from *:
    """
    /* A numpy scalar's operator meeting an object it does not know (``t - x``, ``t < x`` for
       an np.float64 ``t`` read from an array) hands it to numpy's ufunc machinery, which asks
       the object's ``__array_ufunc__``: ~600 ns before the dual is reached, where numpy's own
       protocol would defer (return NotImplemented, so that Python asks the dual's reflected
       operator) only for a class whose ``__array_ufunc__`` is None, which a dual cannot set:
       ``np.exp(x)`` needs it. ``__array_ufunc__`` ends in that same reflected operator
       (``deltaad.numpy.elementwise._SCALAR``), so the wrapped slots below defer to an exact
       Dual directly: + - * / ** and the comparisons, whose result stays numpy's bool (what
       ``np.greater`` gives). Anything else, and a dual on the left (Python has asked it
       already), goes to numpy's slot as before. One set of functions per numpy type (each
       keeps its type's slots; two types sharing a function would skip Python's second try). */
    #define DELTAAD_NPS_MAX 16
    typedef struct {
        PyTypeObject *type;
        binaryfunc add, sub, mul, div;
        ternaryfunc pow;
        richcmpfunc cmp;
    } deltaad_nps_slots;
    static deltaad_nps_slots deltaad_nps[DELTAAD_NPS_MAX];
    static int deltaad_nps_n = 0;
    static PyTypeObject *deltaad_nps_dual = NULL;
    static PyObject *deltaad_nps_true = NULL, *deltaad_nps_false = NULL;
    static const int deltaad_nps_swapped[6] = {Py_GT, Py_GE, Py_EQ, Py_NE, Py_LT, Py_LE};

    /* ``t op x`` as ``x op' t`` (op' reflected), Python's bool as numpy's */
    static PyObject *deltaad_nps_compare(PyObject *t, PyObject *x, int op) {
        PyObject *r = deltaad_nps_dual->tp_richcompare(x, t, deltaad_nps_swapped[op]);
        if (r == Py_True || r == Py_False) {
            PyObject *b = r == Py_True ? deltaad_nps_true : deltaad_nps_false;
            Py_DECREF(r);
            Py_INCREF(b);
            return b;
        }
        return r;
    }

    #define DELTAAD_NPS_BIN(K, SLOT) \\
        static PyObject *deltaad_nps_##SLOT##K(PyObject *a, PyObject *b) { \\
            if (Py_TYPE(b) == deltaad_nps_dual) Py_RETURN_NOTIMPLEMENTED; \\
            return deltaad_nps[K].SLOT(a, b); }
    #define DELTAAD_NPS_FUNCS(K) \\
        DELTAAD_NPS_BIN(K, add) DELTAAD_NPS_BIN(K, sub) DELTAAD_NPS_BIN(K, mul) \\
        DELTAAD_NPS_BIN(K, div) \\
        static PyObject *deltaad_nps_pow##K(PyObject *a, PyObject *b, PyObject *m) { \\
            if (Py_TYPE(b) == deltaad_nps_dual && m == Py_None) Py_RETURN_NOTIMPLEMENTED; \\
            return deltaad_nps[K].pow(a, b, m); } \\
        static PyObject *deltaad_nps_cmp##K(PyObject *a, PyObject *b, int op) { \\
            if (Py_TYPE(b) == deltaad_nps_dual && Py_TYPE(a) != deltaad_nps_dual) \\
                return deltaad_nps_compare(a, b, op); \\
            return deltaad_nps[K].cmp(a, b, op); }
    DELTAAD_NPS_FUNCS(0) DELTAAD_NPS_FUNCS(1) DELTAAD_NPS_FUNCS(2) DELTAAD_NPS_FUNCS(3)
    DELTAAD_NPS_FUNCS(4) DELTAAD_NPS_FUNCS(5) DELTAAD_NPS_FUNCS(6) DELTAAD_NPS_FUNCS(7)
    DELTAAD_NPS_FUNCS(8) DELTAAD_NPS_FUNCS(9) DELTAAD_NPS_FUNCS(10) DELTAAD_NPS_FUNCS(11)
    DELTAAD_NPS_FUNCS(12) DELTAAD_NPS_FUNCS(13) DELTAAD_NPS_FUNCS(14) DELTAAD_NPS_FUNCS(15)
    #define DELTAAD_NPS_ROW(K) {NULL, deltaad_nps_add##K, deltaad_nps_sub##K, \\
        deltaad_nps_mul##K, deltaad_nps_div##K, deltaad_nps_pow##K, deltaad_nps_cmp##K}
    static const deltaad_nps_slots deltaad_nps_ours[DELTAAD_NPS_MAX] = {
        DELTAAD_NPS_ROW(0), DELTAAD_NPS_ROW(1), DELTAAD_NPS_ROW(2), DELTAAD_NPS_ROW(3),
        DELTAAD_NPS_ROW(4), DELTAAD_NPS_ROW(5), DELTAAD_NPS_ROW(6), DELTAAD_NPS_ROW(7),
        DELTAAD_NPS_ROW(8), DELTAAD_NPS_ROW(9), DELTAAD_NPS_ROW(10), DELTAAD_NPS_ROW(11),
        DELTAAD_NPS_ROW(12), DELTAAD_NPS_ROW(13), DELTAAD_NPS_ROW(14), DELTAAD_NPS_ROW(15)};

    /* Wrap the slots of the static type ``t`` (a numpy scalar type: it has all six), its
       comparison too when ``cmp``: 1 when done or done before, 0 when refused (a heap type, a
       slot missing, the table full). */
    static int deltaad_nps_install(PyTypeObject *t, PyObject *dual, PyObject *yes,
                                   PyObject *no, int cmp) {
        PyNumberMethods *nb = t->tp_as_number;
        deltaad_nps_slots *s;
        int k;
        for (k = 0; k < deltaad_nps_n; k++)
            if (deltaad_nps[k].type == t)
                return 1;
        if (deltaad_nps_n >= DELTAAD_NPS_MAX || (PyType_GetFlags(t) & Py_TPFLAGS_HEAPTYPE)
                || nb == NULL || !nb->nb_add || !nb->nb_subtract || !nb->nb_multiply
                || !nb->nb_true_divide || !nb->nb_power || !t->tp_richcompare)
            return 0;
        if (deltaad_nps_dual == NULL) {  /* kept for the process: the slots stay wrapped */
            Py_INCREF(dual); Py_INCREF(yes); Py_INCREF(no);
            deltaad_nps_dual = (PyTypeObject *)dual;
            deltaad_nps_true = yes;
            deltaad_nps_false = no;
        }
        k = deltaad_nps_n;
        s = &deltaad_nps[k];
        s->type = t;
        s->add = nb->nb_add; s->sub = nb->nb_subtract; s->mul = nb->nb_multiply;
        s->div = nb->nb_true_divide; s->pow = nb->nb_power; s->cmp = t->tp_richcompare;
        deltaad_nps_n = k + 1;
        nb->nb_add = deltaad_nps_ours[k].add;
        nb->nb_subtract = deltaad_nps_ours[k].sub;
        nb->nb_multiply = deltaad_nps_ours[k].mul;
        nb->nb_true_divide = deltaad_nps_ours[k].div;
        nb->nb_power = deltaad_nps_ours[k].pow;
        if (cmp)
            t->tp_richcompare = deltaad_nps_ours[k].cmp;
        return 1;
    }
    """
    int _nps_install "deltaad_nps_install"(PyTypeObject* t, object dual, object yes, object no,
                                           int cmp)


def defer_numpy_scalars(tuple types, tuple comparing):
    """Let the numpy scalar types ``types`` defer to a dual on their right in + - * / **, and
    those also in ``comparing`` in the comparisons, as they would to a class with
    ``__array_ufunc__ = None`` (see ``deltaad_nps_compare`` above: the result is the one
    numpy's ufunc path reaches, without its ~600 ns). Kept for the process. The types wrapped,
    in order (a type refused is left out: it keeps numpy's path)."""
    from deltaad._plainnumpy import np
    done = []
    for t in types:
        if type(t) is type and issubclass(t, np.generic) and _nps_install(
                <PyTypeObject*>t, Dual, np.True_, np.False_, t in comparing):
            done.append(t)
    return tuple(done)


# --------------------------------------------------------------------------------------------
# The revolve schedule for the checkpointed loop's hot path: the compiled twin of
# ``deltaad.schedules.plan`` (that module is the specification; tests compare the two action
# by action). A step of a loop can cost as little as its schedule does in Python.

ctypedef struct _Frame:
    Py_ssize_t kind     # 0: reverse s..e-1 from slot with c snapshots; 1: free slot;
    Py_ssize_t s        # 2: turn steps e, e-1, ..., s from slot (c == 1)
    Py_ssize_t e
    Py_ssize_t slot
    Py_ssize_t c

cdef Py_ssize_t _BINOM_CAP = (<Py_ssize_t>1) << 62


cdef Py_ssize_t _beta(Py_ssize_t c, Py_ssize_t r) noexcept nogil:
    """C(c + r, c), saturated at 2**62 (it is only compared with step counts)."""
    cdef Py_ssize_t b = 1, j
    if r < 0:
        return 0
    for j in range(1, r + 1):
        if b > _BINOM_CAP // (c + j):
            return _BINOM_CAP
        b = b * (c + j) // j
    return b


cdef Py_ssize_t _split(Py_ssize_t n, Py_ssize_t c) noexcept nogil:
    """``deltaad.schedules.split``."""
    cdef Py_ssize_t r = 0, m, a
    while _beta(c, r) < n:
        r += 1
    m = _beta(c, r - 2)
    a = n - _beta(c - 1, r)
    if a > m:
        m = a
    if m < 1:
        m = 1
    if m > n - 1:
        m = n - 1
    return m


@cython.final
@cython.auto_pickle(False)
cdef class Plan:
    """``deltaad.schedules.plan(n, c, frees)`` as an iterator in C."""

    cdef _Frame* stack
    cdef Py_ssize_t top
    cdef Py_ssize_t cap
    cdef Py_ssize_t* free
    cdef Py_ssize_t nfree
    cdef bint frees
    cdef bint started

    def __cinit__(self, n, c, frees=True):
        cdef Py_ssize_t nn = n, cc = c, j
        if nn < 1 or cc < 1:
            raise ValueError("schedules: need at least one step and one snapshot (n=%r, c=%r)"
                             % (n, c))
        if cc > nn:
            cc = nn
        self.stack = NULL
        self.free = NULL
        self.top = 0
        self.cap = 0
        self.frees = frees
        self.started = False
        self.free = <Py_ssize_t*>PyMem_Malloc(cc * sizeof(Py_ssize_t))
        if self.free == NULL:
            raise MemoryError("deltaad plan: out of memory")
        self.nfree = 0
        for j in range(cc - 1, 0, -1):
            self.free[self.nfree] = j
            self.nfree += 1
        self._push(0, 0, nn, 0, cc)

    def __dealloc__(self):
        PyMem_Free(self.stack)
        PyMem_Free(self.free)

    cdef int _push(self, Py_ssize_t kind, Py_ssize_t s, Py_ssize_t e, Py_ssize_t slot,
                   Py_ssize_t c) except -1:
        cdef _Frame* ns
        cdef Py_ssize_t k
        if self.top == self.cap:
            k = self.cap * 2 if self.cap else 64
            ns = <_Frame*>PyMem_Realloc(self.stack, k * sizeof(_Frame))
            if ns == NULL:
                raise MemoryError("deltaad plan: out of memory")
            self.stack = ns
            self.cap = k
        self.stack[self.top].kind = kind
        self.stack[self.top].s = s
        self.stack[self.top].e = e
        self.stack[self.top].slot = slot
        self.stack[self.top].c = c
        self.top += 1
        return 0

    def __iter__(self):
        return self

    def __next__(self):
        cdef _Frame f
        cdef Py_ssize_t n, m, new
        if not self.started:
            self.started = True
            return (1, 0)  # (STORE, 0)
        while self.top > 0:
            self.top -= 1
            f = self.stack[self.top]
            if f.kind == 1:
                self.free[self.nfree] = f.slot  # at most c - 1 slots are ever spare
                self.nfree += 1
                if self.frees:
                    return (3, f.slot)  # (FREE, slot)
                continue
            if f.kind == 2:
                if f.e > f.s:
                    self._push(2, f.s, f.e - 1, f.slot, 1)
                return (4, f.slot, f.e)  # (TURN, slot, k)
            n = f.e - f.s
            if n == 1:
                return (4, f.slot, f.s)
            if f.c == 1:
                self._push(2, f.s, f.e - 1, f.slot, 1)
                continue
            m = f.s + _split(n, f.c)
            if self.nfree == 0:  # cannot happen: a part with c snapshots has c - 1 spare
                raise SystemError("deltaad plan: no spare snapshot slot")
            self.nfree -= 1
            new = self.free[self.nfree]
            self._push(0, f.s, m, f.slot, f.c)
            self._push(1, 0, 0, new, 0)
            self._push(0, m, f.e, new, f.c - 1)
            return (0, f.slot, m, new)  # (ADVANCE, slot, to, new)
        raise StopIteration


def plan(n, c, frees=True):
    """``deltaad.schedules.plan`` in C (the same actions)."""
    return Plan(n, c, frees)


# Python writes the name of a type into its own error messages ("unsupported operand type(s)
# for @: 'Dual' and 'float'") from its C-level tp_name, which for a Cython class carries the
# module: 'deltaad._core.Dual'. The pure twin's classes are named 'Dual', 'Tape', ...: name
# these the same, so that both backends say the same thing. (A static type's ``__module__``
# is read from that name, so it becomes 'builtins'; nothing here relies on it.)
(<PyTypeObject*>Trace).tp_name = "Trace"
(<PyTypeObject*>Tape).tp_name = "Tape"
(<PyTypeObject*>ForwardLevel).tp_name = "ForwardLevel"
(<PyTypeObject*>Dual).tp_name = "Dual"
(<PyTypeObject*>TraceHandle).tp_name = "TraceHandle"
for _t in (Trace, Tape, ForwardLevel, Dual, TraceHandle):
    PyType_Modified(<PyTypeObject*>_t)
