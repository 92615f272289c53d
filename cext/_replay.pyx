# cython: language_level=3
"""The compiled replayer of ``deltaad.compile``: a recording's instructions over C doubles.

Twin of ``deltaad._replay_pure.Program`` (same opcodes, same results bit for bit): one pass
over an array of 24-byte instructions, each writing the value slot of its own index, guards
checked where they stand. Every operand index is checked once when the program is made (an
operand is an earlier slot, an input index is below the number of inputs, a function index is
in range), so the loop reads without bounds checks.
"""

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_FromDouble
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
cimport cython
from libc.stdint cimport int32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset
cimport libc.math as cm

from . import _replay_pure as _p

cdef extern from "_replay_float.h":  # a sum keeping its first operand's NaN
    double dad_add(double x, double y) nogil

cdef extern from "_replay_exec.h":  # the forward loop (threaded code over exec codes)
    ctypedef struct dad_instr:
        pass
    enum:
        DAD_DONE
        DAD_FAILED
        DAD_PYTHON
        DO_NLIBM
        DX_END
    enum:
        DX_SIN_D
        DX_COS_D
    unsigned char dad_exec_code(const dad_instr* code, const char* sw, long i) nogil
    int dad_sweep_codes(const dad_instr* code, const char* sw, long n, unsigned char* xsw) nogil
    void dad_sweep(const dad_instr* code, const unsigned char* xsw, long n, long seed,
                   const double* v, double* adj, double ln2, double ln10,
                   const double* part, long npart) nogil
    long dad_forward(const dad_instr* code, const unsigned char* xop, long start, long n,
                     double* v, const double* xin, double* part, long* npart, int* why) nogil

cdef enum:
    INPUT = 0
    CONST = 1
    ADD = 2
    SUB = 3
    MUL = 4
    DIV = 5
    NEG = 6
    CALL1 = 7
    CALL2 = 8
    FIRST_LIBM = 16
    G_LT = 64
    G_LE = 65
    G_GT = 66
    G_GE = 67
    G_EQ = 68
    G_NE = 69
    G_BITS = 70
    G_FLOOR = 71
    G_CEIL = 72
    G_TRUNC = 73
    G_ROUND = 74
    # the optimiser's fused checks (never recorded): ``op + NZ`` computes ``op`` and fails
    # where the result is 0 (a guard ``x == 0`` seen false, fused into x's instruction);
    # ``op + ZZ`` fails where it is not 0 (the guard seen true)
    NZ = 128
    ZZ = 256
    ADD_NZ = 130
    SUB_NZ = 131
    MUL_NZ = 132
    ADD_ZZ = 258
    SUB_ZZ = 259
    MUL_ZZ = 260
    G_RANGE = 80  # the optimiser's range guard (never recorded; see ``_optimize``)
    NOT_POW2 = 99999

cdef enum:  # a gradient recording's sweep code per slot: the operation and which operands
    # are bindings (A: the first, B: the second, AB: both); 0: no binding to sweep
    SW_MUL_A = 1
    SW_MUL_B = 2
    SW_MUL_AB = 3
    SW_ADD_A = 4
    SW_ADD_B = 5
    SW_ADD_AB = 6
    SW_SUB_A = 7
    SW_SUB_B = 8
    SW_SUB_AB = 9
    SW_DIV_A = 10
    SW_DIV_B = 11
    SW_DIV_AB = 12
    SW_NEG = 13
    SW_LIBM = 14

ctypedef struct Instr:
    int op
    int a
    int b
    int k
    double c

assert (_p.INPUT, _p.CONST, _p.ADD, _p.SUB, _p.MUL, _p.DIV, _p.NEG, _p.CALL1, _p.CALL2,
        _p.FIRST_LIBM, _p.G_LT, _p.G_ROUND) == (0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 64, 74)
assert _p.INSTRUCTION_BYTES == sizeof(Instr) == sizeof(dad_instr)
cdef int NLIBM = len(_p.LIBM)
assert NLIBM == DO_NLIBM
cdef int STACK_SLOTS = 512


cdef inline double _libm(int i, double x) noexcept nogil:
    if i == 0: return cm.sin(x)
    elif i == 1: return cm.cos(x)
    elif i == 2: return cm.tan(x)
    elif i == 3: return cm.asin(x)
    elif i == 4: return cm.acos(x)
    elif i == 5: return cm.atan(x)
    elif i == 6: return cm.sinh(x)
    elif i == 7: return cm.cosh(x)
    elif i == 8: return cm.tanh(x)
    elif i == 9: return cm.asinh(x)
    elif i == 10: return cm.acosh(x)
    elif i == 11: return cm.atanh(x)
    elif i == 12: return cm.exp(x)
    elif i == 13: return cm.expm1(x)
    elif i == 14: return cm.log(x)
    elif i == 15: return cm.log2(x)
    elif i == 16: return cm.log10(x)
    elif i == 17: return cm.sqrt(x)
    return cm.fabs(x)


from . import elementwise as _table

cdef double LN2 = _table.LN2
cdef double LN10 = _table.LN10


cdef inline double _libm_partial(int j, double x, double r) noexcept nogil:
    """The derivative of libm function ``j`` at ``x`` (value ``r``): the core's formulas
    (its ``_float_unary``), operation for operation, so the partials are its bits."""
    if j == 0: return cm.cos(x)
    elif j == 1: return -cm.sin(x)
    elif j == 2: return 1.0 + r * r
    elif j == 3: return 1.0 / cm.sqrt(1.0 - x * x)
    elif j == 4: return -(1.0 / cm.sqrt(1.0 - x * x))
    elif j == 5: return 1.0 / (1.0 + x * x)
    elif j == 6: return cm.cosh(x)
    elif j == 7: return cm.sinh(x)
    elif j == 8: return 1.0 - r * r
    elif j == 9: return 1.0 / cm.sqrt(x * x + 1.0)
    elif j == 10: return 1.0 / cm.sqrt(x * x - 1.0)
    elif j == 11: return 1.0 / (1.0 - x * x)
    elif j == 12: return r
    elif j == 13: return r + 1.0
    elif j == 14: return 1.0 / x
    elif j == 15: return 1.0 / (x * LN2)
    elif j == 16: return 1.0 / (x * LN10)
    elif j == 17: return 0.5 / (r + 0.0)
    if x > 0.0: return 1.0
    if x < 0.0: return -1.0
    if x == 0.0: return 0.0
    return cm.NAN


cdef inline double _cmul(double c, double g) noexcept nogil:
    """``c * g`` for the partial ``c`` of a binding's first parent and an adjoint ``g`` as the
    core's sweep gives it, nan payloads included: where both are nan, the partial's. (Which
    operand of a product of two nans survives is the C compiler's choice, not the source's;
    these two functions are what the core's build gives, measured; the pure backend keeps the
    partial's in both places, and so does the pure replayer.)"""
    if c != c:
        return c
    return c * g


cdef inline double _cmul2(double c, double g) noexcept nogil:
    """``c * g`` for a binding's second parent: where both are nan, the adjoint's."""
    if g != g:
        return g
    return c * g


cdef inline double _neg1(double g) noexcept nogil:
    """``-1.0 * g`` without the multiplication: ``-g``, but a NaN as it is (as the product
    keeps it)."""
    if g != g:
        return g
    return -g


cdef inline int _acc(double* adj, int s, double x, double* carry, int cs) noexcept nogil:
    """``adj[s] += x`` with ``adj[cs]`` read from ``carry`` (see ``Program._sweep``); returns
    the new ``cs``. Where both are NaN the sum keeps the contribution ``x``'s, as the core's
    sweep gives it (measured on its build, like ``_cmul``)."""
    cdef double t
    if s == cs:
        t = dad_add(x, carry[0])
    else:
        t = dad_add(x, adj[s])
    adj[s] = t
    carry[0] = t
    return s


cdef double* _spare = NULL  # the buffer of the last replay, kept for the next (see _take)
cdef Py_ssize_t _spare_n = 0


cdef double* _take(Py_ssize_t n) except NULL:
    """A buffer of at least ``n`` doubles: the spare one when it is big enough (taken, so a
    replay that calls Python, letting another thread replay, never shares it), else a new
    one. A long replay's buffer is reused, not allocated afresh each call."""
    global _spare, _spare_n
    cdef double* p
    if _spare != NULL and _spare_n >= n:
        p = _spare
        _spare = NULL
        return p
    p = <double*>PyMem_Malloc(n * sizeof(double))
    if p == NULL:
        raise MemoryError("replay: out of memory for %d values" % n)
    return p


cdef void _give(double* p, Py_ssize_t n) noexcept:
    """Hand back a buffer of ``_take`` (the size asked for): kept as the spare, or freed."""
    global _spare, _spare_n
    if _spare == NULL or _spare_n < n:
        PyMem_Free(_spare)
        _spare = p
        _spare_n = n
    else:
        PyMem_Free(p)


cdef inline int _set_float(list out, Py_ssize_t i, double x) except -1:
    """``out[i] = x`` into a list fresh from ``PyList_New`` (its slot still empty)."""
    f = PyFloat_FromDouble(x)
    Py_INCREF(f)
    PyList_SET_ITEM(out, i, f)
    return 0


ctypedef struct TapeBinding:  # the core's binding: what ``Tape.bindings_bytes`` gives
    double c1
    double c2
    int32_t p1
    int32_t p2


cdef inline double _round_half_even(double x) noexcept nogil:
    cdef double r = cm.round(x)
    if cm.fabs(x - r) == 0.5:
        r = 2.0 * cm.round(x / 2.0)
    return r



cdef inline uint64_t _bits(double x) noexcept nogil:
    cdef uint64_t u
    memcpy(&u, &x, 8)
    return u


cdef inline bint _maybe_snan_const(double x) noexcept nogil:
    """A signalling NaN (quiet bit clear): multiplying it by 1.0 quiets it."""
    cdef uint64_t u = _bits(x)
    return (u & 0x7FF0000000000000ULL) == 0x7FF0000000000000ULL and \
        (u & 0x000FFFFFFFFFFFFFULL) != 0 and (u & 0x0008000000000000ULL) == 0


cdef inline bint _is_guard(int op) noexcept nogil:
    return G_LT <= op <= G_ROUND or op == G_RANGE


cdef inline bint _binary(int op) noexcept nogil:
    op = op & 127
    return (op == ADD or op == SUB or op == MUL or op == DIV or op == CALL2
            or G_LT <= op <= G_NE)


cdef inline bint _unary(int op) noexcept nogil:
    return (op == NEG or op == CALL1 or FIRST_LIBM <= op < FIRST_LIBM + NLIBM
            or G_BITS <= op <= G_ROUND or op == G_RANGE)


cdef inline bint _pure(int op) noexcept nogil:
    """Same operands, same bits (and the same failure): one instruction serves both."""
    return (op == ADD or op == SUB or op == MUL or op == DIV or op == NEG or op == CONST
            or FIRST_LIBM <= op < FIRST_LIBM + NLIBM or G_LT <= op <= G_ROUND
            or op == G_RANGE)


cdef inline uint64_t _hash(Instr* p) noexcept nogil:
    cdef uint64_t h = <uint64_t>(p.op & 127) * 0x9E3779B97F4A7C15ULL
    h = (h ^ <uint64_t><unsigned int>p.a) * 0xBF58476D1CE4E5B9ULL
    h = (h ^ <uint64_t><unsigned int>p.b) * 0x94D049BB133111EBULL
    h = (h ^ <uint64_t><unsigned int>p.k) * 0x9E3779B97F4A7C15ULL
    h = (h ^ _bits(p.c)) * 0xBF58476D1CE4E5B9ULL
    return h ^ (h >> 31)


cdef inline bint _same(Instr* p, Instr* q) noexcept nogil:
    return ((p.op & 127) == (q.op & 127) and p.a == q.a and p.b == q.b and p.k == q.k
            and _bits(p.c) == _bits(q.c))


cdef inline int _pow2(double c) noexcept nogil:
    """The exponent ``e`` of ``c = ±2**e``, a normal power of two; ``NOT_POW2`` otherwise."""
    cdef uint64_t u = _bits(c)
    cdef int e = <int>((u >> 52) & 0x7FF)
    if (u & 0x000FFFFFFFFFFFFFULL) != 0 or e == 0 or e == 0x7FF:
        return NOT_POW2
    return e - 1023


cdef inline bint _in_range(double x, int k) noexcept nogil:
    """A range guard's test (see ``_optimize``): ``x`` is 0, inf, a NaN (a quiet one where
    bit 22 of ``k`` asks), or normal with its biased exponent in ``[k & 2047, k >> 11 & 2047]``."""
    cdef uint64_t u = _bits(x)
    cdef int e = <int>((u >> 52) & 0x7FF)
    if (k & 0x7FF) <= e <= ((k >> 11) & 0x7FF):
        return True
    if e == 0x7FF:
        return ((k >> 22) & 1) == 0 or (u & 0x000FFFFFFFFFFFFFULL) == 0 or \
            (u & 0x0008000000000000ULL) != 0
    return (u << 1) == 0


cdef struct _Opt:  # the optimiser's output buffer and what it knows per output slot
    Instr* dst
    int* gid      # the recorded instruction whose check an instruction makes (-1: none)
    char* snan    # may be a signalling NaN
    int* base     # a product by a power of two: its first factor's slot (-1: not one)
    int* exp2     # ... and the exponent of the power, with its sign in ``neg``
    char* neg
    int* table    # open addressing: slot of each distinct pure instruction
    Py_ssize_t mask
    Py_ssize_t m  # instructions written


cdef int _lookup(_Opt* o, Instr* d) noexcept nogil:
    """The slot of an instruction the same as ``d`` already written, else -1 (and where it
    goes in the table: ``_put``)."""
    cdef Py_ssize_t h = <Py_ssize_t>(_hash(d) & <uint64_t>o.mask)
    while o.table[h] >= 0 and not _same(&o.dst[o.table[h]], d):
        h = (h + 1) & o.mask
    return o.table[h]


cdef void _put(_Opt* o, Instr* d, int gid) noexcept nogil:
    """Write ``d`` as the next instruction (a pure one into the table as well)."""
    cdef Py_ssize_t h
    cdef int op = d.op
    if _pure(op):
        h = <Py_ssize_t>(_hash(d) & <uint64_t>o.mask)
        while o.table[h] >= 0:
            h = (h + 1) & o.mask
        o.table[h] = <int>o.m
    o.dst[o.m] = d[0]
    o.gid[o.m] = gid
    o.base[o.m] = -1
    if op == INPUT or op == CALL1 or op == CALL2:
        o.snan[o.m] = 1
    elif op == CONST:
        o.snan[o.m] = _maybe_snan_const(d.c)
    elif op == NEG or op == FIRST_LIBM + NLIBM - 1:  # -x and fabs keep a signalling NaN
        o.snan[o.m] = o.snan[d.a]
    else:
        o.snan[o.m] = 0
    o.m += 1


cdef int _find_const(_Opt* o, double c) noexcept nogil:
    """The slot of constant ``c`` already written, else -1."""
    cdef Instr d
    d.op = CONST
    d.a = 0
    d.b = 0
    d.k = 0
    d.c = c
    return _lookup(o, &d)


cdef void _range_guard(_Opt* o, int a, int lo, int hi) noexcept nogil:
    """A range guard on slot ``a`` (biased exponents ``lo..hi``; see ``_in_range``): written
    unless the same one is there."""
    cdef Instr d
    d.op = G_RANGE
    d.a = a
    d.b = 0
    d.k = lo | (hi << 11) | ((1 << 22) if o.snan[a] else 0)
    d.c = 0.0
    if _lookup(o, &d) < 0:
        _put(o, &d, -1)


cdef Instr* _optimize(Instr* src, Py_ssize_t n, int* outs, Py_ssize_t nouts,
                      Py_ssize_t* out_n, int** out_gid, bint* guarded, bint fold=True) except NULL:
    """The recorded instructions ``src[:n]`` rewritten to give the same bits with less work;
    ``outs`` renumbered in place, the new count in ``out_n``, per instruction the recorded
    instruction whose check it makes in ``out_gid`` (a guard fused into an instruction names
    the guard: failures are reported as the recorded program's).

    - a guard ``x == 0`` (the backward sweeps' skip test) is fused into the instruction that
      computes ``x`` when that is an addition, subtraction or multiplication (``MUL_NZ``...);
    - ``x * 1.0`` and ``1.0 * x`` are ``x`` (bit for bit, but for a signalling NaN, which only
      an input, a constant or a Python function can bring: those are kept);
    - ``x + x`` is ``x * 2.0`` (bit for bit: both exact or both inf, a NaN kept and quieted
      alike), and ``x / c`` for a power of two ``c`` (with a normal reciprocal) is
      ``x * (1 / c)`` (the same real quotient, rounded once; rewritten where that constant
      is there already);
    - a product of a product by a power of two, ``(x * c1) * c2``, is ``x`` when ``c1 * c2``
      is 1.0, or ``x * (c1 * c2)`` (where ``x * c1`` has no other use and that constant is
      there already: the program is never longer) -- the same bits wherever the
      intermediate ``x * c1`` is
      exact: where it is neither rounded into the subnormal range nor overflows. That is a
      condition on the binary exponent of ``x`` (0, inf and NaN pass; a NaN must be quiet
      where ``x`` itself is the result), checked at replay by a *range guard* (``G_RANGE``)
      placed before the product. Such a program sets ``guarded``: where a range guard (or
      any check) fails, the caller replays the recorded program instead, so the rewrites
      never change a result or the failure reported. Identical range guards are one (see
      below): ``x = (x + x) * 0.5`` repeated is ``x`` and one guard;
    - an instruction the same as an earlier one (operation, operands, constant) is that one,
      and a guard on constants only (it held when recorded) is dropped;
    - an instruction whose value nothing uses and that cannot fail is dropped.

    A replay either passes every check or returns None, whatever their order, so moving a
    guard's check to where its value is computed keeps what ``run`` returns."""
    cdef Py_ssize_t i, j, m, tsize = 16, cap = 2 * n + 1  # (a range guard and one more each)
    cdef int op, a, b, x, xr = 0, q, c = 0, e, ec, lo, hi, bs
    cdef Instr cur
    cdef Instr* d = &cur
    cdef Instr* p
    cdef Instr* dst
    cdef bint zero_seen, sg, sgn
    cdef _Opt o
    cdef int* rep = <int*>PyMem_Malloc((n if n else 1) * sizeof(int))
    cdef int* uses = <int*>PyMem_Malloc((n if n else 1) * sizeof(int))
    cdef int* live = NULL
    while tsize < 2 * cap:
        tsize *= 2
    o.mask = tsize - 1
    o.m = 0
    o.dst = <Instr*>PyMem_Malloc(cap * sizeof(Instr))
    o.gid = <int*>PyMem_Malloc(cap * sizeof(int))
    o.snan = <char*>PyMem_Malloc(cap)
    o.base = <int*>PyMem_Malloc(cap * sizeof(int))
    o.exp2 = <int*>PyMem_Malloc(cap * sizeof(int))
    o.neg = <char*>PyMem_Malloc(cap)
    o.table = <int*>PyMem_Malloc(tsize * sizeof(int))
    live = <int*>PyMem_Malloc(cap * sizeof(int))
    guarded[0] = False
    if (rep == NULL or o.dst == NULL or o.gid == NULL or o.snan == NULL or o.base == NULL
            or o.exp2 == NULL or o.neg == NULL or o.table == NULL or live == NULL
            or uses == NULL):
        PyMem_Free(rep); PyMem_Free(uses); PyMem_Free(o.dst); PyMem_Free(o.gid); PyMem_Free(o.snan)
        PyMem_Free(o.base); PyMem_Free(o.exp2); PyMem_Free(o.neg); PyMem_Free(o.table)
        PyMem_Free(live)
        raise MemoryError("replay: out of memory optimising %d instructions" % n)
    dst = o.dst
    try:
        for i in range(tsize):
            o.table[i] = -1
        for i in range(n):  # how many instructions (and outputs) read each recorded slot
            uses[i] = 0
        for i in range(n):
            op = src[i].op
            if op != INPUT and op != CONST:
                if _binary(op):
                    uses[src[i].a] += 1
                    uses[src[i].b] += 1
                elif _unary(op):
                    uses[src[i].a] += 1
        for j in range(nouts):
            uses[outs[j]] += 1
        for i in range(n):
            p = &src[i]
            op = p.op
            d.op = op
            d.a = rep[p.a] if op != INPUT and op != CONST else p.a
            d.b = rep[p.b] if _binary(op) else p.b
            d.k = p.k
            d.c = p.c
            rep[i] = -1
            if op != INPUT and op != CONST and (d.a < 0 or (_binary(op) and d.b < 0)):
                raise ValueError("replay: instruction %d reads the slot of a guard" % i)
            if _is_guard(op):
                a = d.a
                b = d.b
                if dst[a].op == CONST and (not _binary(op) or dst[b].op == CONST):
                    continue  # on constants: it held when recorded, it holds
                if op == G_EQ or op == G_NE:
                    x = -1
                    if dst[b].op == CONST and dst[b].c == 0.0:
                        x = a
                    elif dst[a].op == CONST and dst[a].c == 0.0:
                        x = b
                    if x >= 0:
                        zero_seen = (d.k != 0) if op == G_EQ else (d.k == 0)
                        q = dst[x].op
                        if q == ADD or q == SUB or q == MUL:
                            dst[x].op = q + (ZZ if zero_seen else NZ)
                            o.gid[x] = <int>i
                            continue
                        if q == (q & 127) + (ZZ if zero_seen else NZ):
                            continue  # already checked there
            elif op == ADD or op == MUL or op == DIV:
                if op == MUL:
                    if dst[d.b].op == CONST and _bits(dst[d.b].c) == _bits(1.0) and not o.snan[d.a]:
                        rep[i] = d.a
                        continue
                    if dst[d.a].op == CONST and _bits(dst[d.a].c) == _bits(1.0) and not o.snan[d.b]:
                        rep[i] = d.b
                        continue
                # a product of x by ±2**e: x * c, x / c (x * (1 / c)) or x + x (x * 2.0)
                x = -1
                e = NOT_POW2
                sg = False
                if op == ADD:
                    if d.a == d.b and dst[d.a].op != CONST:
                        x = d.a
                        xr = p.a
                        e = 1
                elif dst[d.b].op == CONST and dst[d.a].op != CONST:
                    x = d.a
                    xr = p.a
                    c = d.b
                elif op == MUL and dst[d.a].op == CONST and dst[d.b].op != CONST:
                    x = d.b
                    xr = p.b
                    c = d.a
                if x >= 0 and op != ADD:
                    e = _pow2(dst[c].c)
                    sg = dst[c].c < 0.0
                    if e != NOT_POW2 and op == DIV:
                        if e == 1023:  # 1 / c subnormal
                            e = NOT_POW2
                        else:
                            e = -e
                            q = _find_const(&o, 1.0 / dst[c].c)
                            if q >= 0:  # (no constant added: no longer program)
                                d.op = op = MUL
                                d.b = q
                if e != NOT_POW2:
                    if fold and o.base[x] >= 0:
                        # x = bs * 2**exp2[x]: exact where bs's biased exponent + exp2[x] is
                        # a normal one (then bs * 2**ec is the product, rounded once)
                        bs = o.base[x]
                        ec = o.exp2[x] + e
                        sgn = (o.neg[x] != 0) != sg
                        lo = 1 - o.exp2[x]
                        hi = 2046 - o.exp2[x]
                        if lo < 1:
                            lo = 1
                        if hi > 2046:
                            hi = 2046
                        if lo <= hi and -1022 <= ec <= 1023:
                            if ec == 0 and not sgn:
                                _range_guard(&o, bs, lo, hi)
                                guarded[0] = True
                                rep[i] = bs
                                continue
                            # one product, where x has no other use and the constant is
                            # there (the program is not made longer)
                            q = _find_const(&o, cm.ldexp(-1.0 if sgn else 1.0, ec))
                            if q >= 0 and uses[xr] == (2 if op == ADD else 1):
                                _range_guard(&o, bs, lo, hi)
                                guarded[0] = True
                                d.op = op = MUL
                                d.a = bs
                                d.b = q
                                x = bs
                                e = ec
                                sg = sgn
                    a = _lookup(&o, d)
                    if a >= 0:
                        rep[i] = a
                        continue
                    rep[i] = <int>o.m
                    _put(&o, d, <int>i)
                    o.base[rep[i]] = x
                    o.exp2[rep[i]] = e
                    o.neg[rep[i]] = sg
                    continue
            if _pure(op):
                a = _lookup(&o, d)
                if a >= 0:
                    rep[i] = a
                    continue
            if not _is_guard(op):
                rep[i] = <int>o.m  # a guard has no value: nothing may read its slot
            _put(&o, d, <int>i)
        m = o.m
        # dead code: what no output, guard or failing instruction needs
        for j in range(m):
            op = dst[j].op
            live[j] = (_is_guard(op) or op >= NZ or op == CALL1 or op == CALL2
                       or FIRST_LIBM <= op < FIRST_LIBM + NLIBM
                       or (op == DIV and not (dst[dst[j].b].op == CONST
                                              and dst[dst[j].b].c != 0.0)))
        for j in range(nouts):
            if rep[outs[j]] < 0:
                raise ValueError("replay: output slot %d is a guard's" % outs[j])
            live[rep[outs[j]]] = 1
        for j in range(m - 1, -1, -1):
            if live[j]:
                op = dst[j].op
                if _binary(op):
                    live[dst[j].a] = 1
                    live[dst[j].b] = 1
                elif _unary(op):
                    live[dst[j].a] = 1
        i = 0
        for j in range(m):
            if live[j]:
                live[j] = <int>i  # now: the new index
                op = dst[j].op
                dst[i] = dst[j]
                o.gid[i] = o.gid[j]
                if _binary(op):
                    dst[i].a = live[dst[j].a]
                    dst[i].b = live[dst[j].b]
                elif _unary(op):
                    dst[i].a = live[dst[j].a]
                i += 1
            else:
                live[j] = -1
        if i > n and fold:  # longer than recorded (range guards): without the folds
            PyMem_Free(dst)
            dst = NULL
            return _optimize(src, n, outs, nouts, out_n, out_gid, guarded, False)
        for j in range(nouts):
            outs[j] = live[rep[outs[j]]]
        out_n[0] = i
        d = <Instr*>PyMem_Realloc(dst, (i if i else 1) * sizeof(Instr))  # (shrinking)
        if d != NULL:
            dst = d
        out_gid[0] = <int*>PyMem_Realloc(o.gid, (i if i else 1) * sizeof(int))
        if out_gid[0] == NULL:
            out_gid[0] = o.gid
        o.gid = NULL
        return dst
    except BaseException:
        PyMem_Free(dst)
        raise
    finally:
        PyMem_Free(rep)
        PyMem_Free(uses)
        PyMem_Free(o.gid)
        PyMem_Free(o.snan)
        PyMem_Free(o.base)
        PyMem_Free(o.exp2)
        PyMem_Free(o.neg)
        PyMem_Free(o.table)
        PyMem_Free(live)


cdef bytes _instr_bytes(Instr* src, Py_ssize_t n):
    return (<char*>src)[:n * sizeof(Instr)] if n else b""


cdef class Program:
    """A finished recording; ``run(inputs)`` gives the output slots' values, or None where a
    guard fails (or Python would have raised). The recorded instructions are optimised first
    (see ``_optimize``; ``optimize=False`` keeps them as recorded): ``n`` is the number
    replayed, ``nrecorded`` the number recorded."""

    cdef Instr* code
    cdef readonly Py_ssize_t n
    cdef readonly Py_ssize_t nrecorded
    cdef readonly Py_ssize_t ninputs
    cdef int* outs
    cdef Py_ssize_t nouts
    cdef tuple funcs
    # a gradient recording (``grad=(diff, seed, wanted)``): per slot whether it is a binding
    # of the uncompiled tape, the slot seeded with 1.0 (-1: none), the slots whose adjoints
    # are returned after the outputs' values
    cdef char* diff
    cdef char* sw
    cdef unsigned char* xop  # each instruction's exec code (see _replay_exec.h)
    cdef unsigned char* xsw  # a gradient recording's sweep exec codes (see _replay_exec.h)
    cdef Py_ssize_t npart    # partials the forward pass keeps for the sweep (sin, cos)
    cdef int seed
    cdef int* wanted
    cdef Py_ssize_t nwanted
    cdef double one
    cdef double mone  # -1.0 read at run time: ``-1.0 * a`` is not folded into ``-a`` (nan signs)
    # per instruction, the recorded one whose check it makes (NULL: the same index)
    cdef int* gid
    # the recorded program, where the optimised one has range guards: replayed when a check
    # fails (see ``_optimize``)
    cdef Program fallback
    # a gradient recording whose sweep has only constant partials: its gradient, computed
    # once, and (where optimising shortens it) the optimised forward program (``_exec``)
    cdef list cgrad
    cdef Program fwd
    cdef bint fwd_made

    def __cinit__(self, code, funcs, Py_ssize_t ninputs, outs, bint optimize=True, grad=None,
                  bint inner=False):
        # (``inner``: a program of another, which replays its recording where a check fails)
        cdef list cl = None
        cdef bytes cb = None
        cdef bint guarded = False
        cdef Recording rc = None
        cdef list ol = list(outs)
        cdef Py_ssize_t i, nf
        cdef int op, a, b, k
        cdef bint ok
        if type(code) is Recording:  # the C recorder's buffer, copied as it is
            rc = <Recording>code
            self.n = rc.n
        elif type(code) is bytes:  # instructions as another program holds them
            cb = <bytes>code
            self.n = len(cb) // sizeof(Instr)
        else:
            cl = list(code)
            self.n = len(cl)
        self.funcs = tuple(funcs)
        nf = len(self.funcs)
        self.ninputs = ninputs
        self.nouts = len(ol)
        if self.n >= 2147483647:
            raise OverflowError("replay: a recording of %d instructions is too long" % self.n)
        cdef Instr* src = NULL
        if rc is not None and rc.closed and rc.buf != NULL and grad is not None:
            src = rc.buf  # a finished recording's buffer: taken, not copied
            rc.buf = NULL
            rc.n = rc.cap = 0
        else:
            src = <Instr*>PyMem_Malloc((self.n if self.n else 1) * sizeof(Instr))
        self.outs = <int*>PyMem_Malloc((self.nouts if self.nouts else 1) * sizeof(int))
        if src == NULL or self.outs == NULL:
            PyMem_Free(src)
            raise MemoryError("replay: out of memory for a recording of %d instructions" % self.n)
        try:
            if rc is not None:
                if self.n and src != rc.buf and rc.buf != NULL:
                    memcpy(src, rc.buf, self.n * sizeof(Instr))
            elif cb is not None:
                if self.n:
                    memcpy(src, <char*>cb, self.n * sizeof(Instr))
            else:
                for i in range(self.n):
                    op, a, b, k, c = cl[i]
                    src[i].op = op
                    src[i].a = a
                    src[i].b = b
                    src[i].k = k
                    src[i].c = c
            for i in range(0 if rc is not None and not rc.raw and rc.ninputs == ninputs
                           and list(rc.funcs) == list(self.funcs) else self.n):
                # (a Recording's own instructions, made by its numbers' operations, are well
                # formed by construction: each operand the slot of a number of that
                # recording, made before; each function index one of its functions, which
                # are these; ``emit`` and ``guard`` with any operands make it ``raw``)
                op = src[i].op
                a = src[i].a
                b = src[i].b
                k = src[i].k
                # every operand an earlier slot; inputs and functions in range
                if op == INPUT:
                    ok = 0 <= a < ninputs
                elif op == CONST:
                    ok = True
                elif op == ADD or op == SUB or op == MUL or op == DIV or op == CALL2 or G_LT <= op <= G_NE:
                    ok = 0 <= a < i and 0 <= b < i
                elif op == NEG or G_BITS <= op <= G_ROUND:
                    ok = 0 <= a < i
                elif op == CALL1 or FIRST_LIBM <= op < FIRST_LIBM + NLIBM:
                    ok = 0 <= a < i
                else:
                    ok = False
                if ok and (op == CALL1 or op == CALL2 or FIRST_LIBM <= op < FIRST_LIBM + NLIBM):
                    ok = 0 <= k < nf
                if not ok:
                    raise ValueError("replay: instruction %d %r is not well formed"
                                     % (i, (op, a, b, k, src[i].c)))
            for i in range(self.nouts):
                if not 0 <= ol[i] < self.n:
                    raise ValueError("replay: output slot %r out of range" % (ol[i],))
                self.outs[i] = ol[i]
            self.nrecorded = self.n
            self.one = 1.0
            self.mone = -1.0
            self.seed = -1
            if grad is not None:
                self._set_grad(grad, src)
                optimize = False  # one slot per binding: the sweep's order is the tape's
            if optimize:
                self.code = _optimize(src, self.n, self.outs, self.nouts, &self.n, &self.gid,
                                      &guarded)
                if guarded and not inner:
                    self.fallback = Program(_instr_bytes(src, self.nrecorded), self.funcs,
                                            ninputs, ol, optimize=False)
            else:
                self.code = src
                src = NULL
            self._lower()
            if grad is not None:
                self._constant_sweep()
                PyMem_Free(self.sw)  # the sweep reads its exec codes (xsw) from now on
                self.sw = NULL
        finally:
            PyMem_Free(src)

    cdef int _constant_sweep(self) except -1:
        """A gradient recording whose bindings' partials are all constants (sums,
        differences, negations, products and quotients by constants: ``x = (x + x) * 0.5``)
        has a gradient that no input changes -- the same sweep from the same seed over the
        same constants, bit for bit: computed here, once. Its forward program is then only
        values and guards, optimised (see ``_forward``)."""
        cdef Py_ssize_t i, n = self.n
        cdef char c
        cdef int a, b
        cdef double* v
        cdef double* adj
        cdef Instr* src = self.code  # as recorded: a gradient recording is not optimised
        for i in range(n):
            c = self.sw[i]
            a = src[i].a
            b = src[i].b
            if c == SW_MUL_AB or c == SW_DIV_B or c == SW_DIV_AB or c == SW_LIBM:
                return 0
            if (c == SW_MUL_A or c == SW_DIV_A) and src[b].op != CONST:
                return 0
            if c == SW_MUL_B and src[a].op != CONST:
                return 0
        v = <double*>PyMem_Malloc((2 * n + self.ninputs + self.npart + 1) * sizeof(double))
        if v == NULL:
            raise MemoryError("replay: out of memory")
        try:
            adj = v + n
            for i in range(n):
                v[i] = src[i].c if src[i].op == CONST else 0.0
            self._sweep(v, adj)
            self.cgrad = [adj[self.wanted[i]] for i in range(self.nwanted)]
        finally:
            PyMem_Free(v)
        return 0

    cdef int _forward(self) except -1:
        """The optimised forward program of a constant-gradient recording (``fwd``), made at
        its first replay rather than at the recording call; kept where it is at most half
        as long."""
        self.fwd_made = True
        fwd = Program(_instr_bytes(self.code, self.n), self.funcs, self.ninputs,
                      [self.outs[i] for i in range(self.nouts)], inner=True)
        if 2 * fwd.n <= self.n:
            self.fwd = fwd
        return 0

    cdef int _lower(self) except -1:
        """Each instruction's exec code, for the forward loop (``dad_forward``)."""
        cdef Py_ssize_t i
        self.xop = <unsigned char*>PyMem_Malloc(self.n + 1)
        if self.xop == NULL:
            raise MemoryError("replay: out of memory for a recording of %d instructions" % self.n)
        for i in range(self.n):
            self.xop[i] = dad_exec_code(<dad_instr*>self.code, self.sw if self.diff != NULL
                                        else NULL, i)
            if self.xop[i] == DX_SIN_D or self.xop[i] == DX_COS_D:
                self.npart += 1
        self.xop[self.n] = DX_END
        if self.diff != NULL:
            self.xsw = <unsigned char*>PyMem_Malloc(self.n + 1)
            if self.xsw == NULL:
                raise MemoryError("replay: out of memory for a gradient recording")
            if dad_sweep_codes(<dad_instr*>self.code, self.sw, self.n, self.xsw) != 0:
                raise ValueError("replay: a gradient recording's sweep codes are not known")
        return 0

    def __dealloc__(self):
        PyMem_Free(self.code)
        PyMem_Free(self.gid)
        PyMem_Free(self.outs)
        PyMem_Free(self.diff)
        PyMem_Free(self.sw)
        PyMem_Free(self.wanted)
        PyMem_Free(self.xop)
        PyMem_Free(self.xsw)

    cdef int _set_grad(self, grad, Instr* src) except -1:
        cdef int fa, fb, w
        diff, seed, wanted = grad
        cdef bytes db = bytes(diff)
        cdef list wl = list(wanted)
        cdef Py_ssize_t i, n = self.n
        cdef int op
        if len(db) != n or not -1 <= seed < n:
            raise ValueError("replay: a gradient recording's flags or seed do not fit")
        self.diff = <char*>PyMem_Malloc(n if n else 1)
        self.sw = <char*>PyMem_Malloc(n if n else 1)
        self.wanted = <int*>PyMem_Malloc((len(wl) if wl else 1) * sizeof(int))
        if self.diff == NULL or self.sw == NULL or self.wanted == NULL:
            raise MemoryError("replay: out of memory for a gradient recording")
        if n:
            memcpy(self.diff, <char*>db, n)
        for i in range(n):  # a binding is a value the sweep has a rule for
            op = src[i].op
            self.diff[i] = 1 if self.diff[i] else 0
            self.sw[i] = 0
            if not self.diff[i] or op == INPUT:
                continue
            if not (op == ADD or op == SUB or op == MUL or op == DIV or op == NEG
                    or FIRST_LIBM <= op < FIRST_LIBM + NLIBM):
                raise ValueError("replay: slot %d (operation %d) has no derivative rule" % (i, op))
            if op == NEG or op >= FIRST_LIBM:
                self.sw[i] = SW_NEG if op == NEG else SW_LIBM
                continue
            fa = self.diff[src[i].a]  # operands are earlier slots (checked above)
            fb = self.diff[src[i].b]
            if not (fa or fb):
                raise ValueError("replay: slot %d is a binding of no binding" % i)
            w = 3 if fa and fb else (1 if fa else 2)  # A, B, AB as in SW_MUL_*
            self.sw[i] = <char>((SW_MUL_A if op == MUL else SW_ADD_A if op == ADD
                                 else SW_SUB_A if op == SUB else SW_DIV_A) + w - 1)
        for i in range(len(wl)):
            if not 0 <= wl[i] < n:
                raise ValueError("replay: wanted slot %r out of range" % (wl[i],))
            self.wanted[i] = wl[i]
        self.nwanted = len(wl)
        self.seed = seed
        return 0

    @property
    def code(self):
        """The instructions replayed, as ``(op, a, b, k, c)`` tuples (after optimisation)."""
        return [(self.code[i].op, self.code[i].a, self.code[i].b, self.code[i].k,
                 self.code[i].c) for i in range(self.n)]

    @property
    def outputs(self):
        """The output slots (after optimisation)."""
        return [self.outs[i] for i in range(self.nouts)]

    @property
    def nbytes(self):
        """Bytes of instructions (with their exec codes) and value slots (and a gradient
        recording's flags, sweep exec codes and adjoints; an optimised program's recorded
        indices, fallback and forward program)."""
        if self.diff != NULL:
            b = (sizeof(Instr) + 3 + 2 * sizeof(double)) * self.n
        else:
            b = (sizeof(Instr) + 1 + sizeof(double)) * self.n
        return b + self._extra_bytes(True)

    @property
    def tape_bytes(self):
        """Bytes of the instruction tape kept between calls: the instructions, their exec
        codes (one byte each), a gradient recording's flags and sweep exec codes, and the
        extras of ``nbytes``."""
        return (sizeof(Instr) + (3 if self.diff != NULL else 1)) * self.n + \
            self._extra_bytes(False)

    cdef Py_ssize_t _extra_bytes(self, bint values):
        cdef Py_ssize_t b = sizeof(int) * self.n if self.gid != NULL else 0
        if self.fallback is not None:
            b += self.fallback.nbytes if values else self.fallback.tape_bytes
        if self.fwd is not None:
            b += self.fwd.nbytes if values else self.fwd.tape_bytes
        return b

    def run(self, inputs, fail=None):
        """The output slots' values (a gradient recording's: then the wanted adjoints), or
        None where a check fails; then ``(recorded index, outcome)`` is appended to the list
        ``fail`` when one is given: the recorded instruction (guard) whose check failed, and
        what it gave -- None for a comparison (the other outcome) or an operation Python
        would raise on, the value for ``float()``, the integer (as a float) for a rounding.
        The same as the pure twin reports; a guard fused into an instruction (see
        ``_optimize``) is reported where the optimised program checks it."""
        cdef list ins = inputs if type(inputs) is list else list(inputs)
        if len(ins) != self.ninputs:
            raise ValueError("replay: %d inputs for a recording of %d" % (len(ins), self.ninputs))
        for x in ins:
            if type(x) is not float:
                raise TypeError("replay: inputs must be floats")
        return self._exec(ins, fail)

    cdef object _exec(self, list ins, object fail):
        cdef Py_ssize_t i, j, m, nbuf
        cdef double stack[1024]
        cdef double* v
        if self.cgrad is not None and not self.fwd_made:
            self._forward()
        if self.fwd is not None:  # constant gradient: the optimised forward program
            out = self.fwd._exec(ins, None)
            if out is not None:
                (<list>out).extend(self.cgrad)
                return out
            # (a check failed there: the recording decides, failure and result)
        # values, then (a gradient recording's) adjoints, then the inputs' values and the
        # partials kept by the forward pass: on the stack, or the spare buffer
        nbuf = self.n * (2 if self.diff != NULL else 1) + self.ninputs + self.npart
        if nbuf <= 2 * STACK_SLOTS:
            v = stack
        else:
            v = _take(nbuf)
        try:
            j = self._run(v, ins)
            if j >= 0:
                if self.fallback is not None:
                    return self.fallback._exec(ins, fail)
                if fail is not None:
                    fail.append(self._failure(j, v))
                return None
            m = self.nouts + (self.nwanted if self.diff != NULL else 0)
            out = PyList_New(m)
            for i in range(self.nouts):
                _set_float(out, i, v[self.outs[i]])
            if self.cgrad is not None:
                for i in range(self.nwanted):
                    g = self.cgrad[i]
                    Py_INCREF(g)
                    PyList_SET_ITEM(out, self.nouts + i, g)
            elif self.diff != NULL:
                self._gradients(v, v + self.n, out, self.nouts)
            return out
        finally:
            if v != stack:
                _give(v, nbuf)

    cdef tuple _failure(self, Py_ssize_t j, double* v):
        """``(recorded index, outcome)`` of the check of instruction ``j`` that failed."""
        cdef Instr* p = &self.code[j]
        cdef int op = p.op
        cdef double x
        r = self.gid[j] if self.gid != NULL else j
        if op == G_BITS:
            return (r, v[p.a])
        if G_FLOOR <= op <= G_ROUND:
            x = v[p.a]
            if not cm.isfinite(x):
                return (r, None)
            if op == G_FLOOR:
                x = cm.floor(x)
            elif op == G_CEIL:
                x = cm.ceil(x)
            elif op == G_TRUNC:
                x = cm.trunc(x)
            else:
                x = _round_half_even(x)
            return (r, x)
        return (r, None)

    cdef int _gradients(self, double* v, double* adj, list out, Py_ssize_t start) except -1:
        """Sweep, and put the wanted adjoints into ``out`` from ``start`` on."""
        cdef Py_ssize_t i
        self._sweep(v, adj)
        for i in range(self.nwanted):
            _set_float(out, start + i, adj[self.wanted[i]])
        return 0

    cdef inline int _partials(self, Py_ssize_t i, double* v, int* ps, double* cs) noexcept nogil:
        """The binding of differentiated slot ``i``: its parents ``ps`` and partials ``cs``,
        first parent first, as the uncompiled tape holds it; returns their number."""
        cdef Instr* p = &self.code[i]
        cdef int op = p.op
        cdef int m = 0
        cdef char* diff = self.diff
        if op == MUL:
            if diff[p.a]:
                ps[m] = p.a; cs[m] = v[p.b]; m += 1
            if diff[p.b]:
                ps[m] = p.b; cs[m] = v[p.a]; m += 1
        elif op == ADD:
            if diff[p.a]:
                ps[m] = p.a; cs[m] = self.one; m += 1
            if diff[p.b]:
                ps[m] = p.b; cs[m] = self.one; m += 1
        elif op == SUB:
            if diff[p.a]:
                ps[m] = p.a; cs[m] = self.one; m += 1
            if diff[p.b]:
                ps[m] = p.b; cs[m] = self.mone; m += 1
        elif op == DIV:  # the forward pass saw v[p.b] != 0
            if diff[p.a]:
                ps[m] = p.a; cs[m] = 1.0 / v[p.b]; m += 1
            if diff[p.b]:
                ps[m] = p.b; cs[m] = -v[i] / v[p.b]; m += 1
        elif op == NEG:
            ps[0] = p.a; cs[0] = self.mone; m = 1
        elif FIRST_LIBM <= op < FIRST_LIBM + NLIBM:
            ps[0] = p.a; cs[0] = _libm_partial(op - FIRST_LIBM, v[p.a], v[i]); m = 1
        return m

    cdef void _sweep(self, double* v, double* adj) noexcept nogil:
        """The adjoints of every slot: the uncompiled tape's float sweep replayed (adjoints
        from 0.0, a zero adjoint skipped, ``adj[p] += c * a`` first parent first), one
        handler per binding's sweep exec code (see ``_set_grad`` and ``_lower``).

        The same float operations in the same order, with less waiting: the adjoint last
        written is kept in a register (``carry``, the value of ``adj[cs]``; every adjoint is
        stored as well), so the next binding -- most often the slot just below -- reads it
        without a store-to-load round trip; a binding with two distinct parents adds into the
        lower slot first (the order of two different slots' sums is moot), so the one kept is
        the higher, the likelier next. A partial 1.0 adds the adjoint itself: ``1.0 * g`` is
        ``g`` bit for bit, as ``g`` is never a signalling NaN (the seed or a sum); a partial
        -1.0 is ``-g`` but where ``g`` is a NaN, which ``-1.0 * g`` keeps as it is.

        The loop is ``dad_sweep`` (_replay_exec.h): which adjoint the register holds at each
        binding is decided when the program is made (``dad_sweep_codes``), not tested per
        binding; a sin's or cos's partial comes from the forward pass (one ``sincos``)."""
        dad_sweep(<dad_instr*>self.code, self.xsw, self.n, self.seed, v, adj, LN2, LN10,
                  v + 2 * self.n + self.ninputs, self.npart)

    def checked_run(self, inputs, bindings, ids):
        """``run(inputs)`` when this gradient recording, evaluated at ``inputs``, has the
        bindings of the uncompiled tape (``bindings``: the core's ``Tape.bindings_bytes()``;
        its inputs are the slots ``ids``, in order) -- the same parents, partials the same
        bits -- else None."""
        cdef bytes bb = bindings
        cdef Py_ssize_t nb = len(bb) // sizeof(TapeBinding)
        cdef TapeBinding* tb = <TapeBinding*><char*>bb
        cdef list il = list(ids)
        cdef Py_ssize_t i, t, m = len(il), n = self.n
        cdef int np
        cdef int ps[2]
        cdef double cs[2]
        cdef double* v
        cdef double* adj = NULL
        cdef int* tid
        cdef bint ok = True
        cdef list ins = inputs if type(inputs) is list else list(inputs)
        if self.diff == NULL or len(bb) % sizeof(TapeBinding) or len(ins) != self.ninputs:
            return None
        for x in ins:
            if type(x) is not float:
                return None
        v = <double*>PyMem_Malloc((2 * n + self.ninputs + self.npart + 1) * sizeof(double))  # see _run
        tid = <int*>PyMem_Malloc((n if n else 1) * sizeof(int))
        try:
            if v == NULL or tid == NULL:
                raise MemoryError("replay: out of memory")
            if self._run(v, ins) >= 0:
                return None
            for i in range(n):
                tid[i] = -1
            for t in range(m):
                i = il[t]
                if not 0 <= i < n or not self.diff[i] or tid[i] >= 0 or self.code[i].op != INPUT:
                    return None
                tid[i] = <int>t
            if nb < m:
                return None
            for t in range(m):
                if tb[t].p1 != -1 or tb[t].p2 != -1:
                    return None
            t = m
            for i in range(n):
                if not self.diff[i] or self.code[i].op == INPUT:
                    continue
                if t >= nb:
                    return None
                np = self._partials(i, v, ps, cs)
                if np == 0 or tb[t].p1 < 0 or tid[ps[0]] != tb[t].p1 or \
                        _bits(cs[0]) != _bits(tb[t].c1):
                    return None
                if np == 1:
                    if tb[t].p2 != -1:
                        return None
                elif tid[ps[1]] != tb[t].p2 or _bits(cs[1]) != _bits(tb[t].c2):
                    return None
                tid[i] = <int>t
                t += 1
            for i in range(n):  # every differentiated input is one of the tape's
                if self.diff[i] and self.code[i].op == INPUT and tid[i] < 0:
                    return None
            if t != nb:
                return None
            adj = <double*>PyMem_Malloc((n if n else 1) * sizeof(double))
            if adj == NULL:
                raise MemoryError("replay: out of memory")
            out = PyList_New(self.nouts + self.nwanted)
            for i in range(self.nouts):
                _set_float(out, i, v[self.outs[i]])
            self._gradients(v, adj, out, self.nouts)
            return out
        finally:
            PyMem_Free(v)
            PyMem_Free(tid)
            PyMem_Free(adj)

    cdef Py_ssize_t _run(self, double* v, list ins) except -2:
        """The forward pass into ``v`` (which has room for the inputs' values after its
        ``n * (2 if gradient else 1)`` slots, and the kept partials after them): -1, or the
        index of the instruction whose check failed (or where Python would have raised)."""
        cdef Py_ssize_t i, ni = self.ninputs
        cdef long at = 0, npart = 0
        cdef int why = DAD_DONE
        cdef double* xin = v + self.n * (2 if self.diff != NULL else 1)
        for i in range(ni):  # (floats: checked by the caller)
            xin[i] = PyFloat_AS_DOUBLE(ins[i])
        while True:
            at = dad_forward(<dad_instr*>self.code, self.xop, at, self.n, v, xin, xin + ni,
                             &npart, &why)
            if why == DAD_DONE:
                return -1
            if why == DAD_FAILED:
                return at
            # a Python function, or a libm value where Python's math raises: ask Python
            if not self._call(v, at, &self.code[at]):
                return at
            at += 1

    cdef bint _call(self, double* v, Py_ssize_t i, Instr* p) except -1:
        f = self.funcs[p.k]
        try:
            if p.op == CALL2:
                r = f(v[p.a], v[p.b])
            else:
                r = f(v[p.a])
        except Exception:
            return False
        if type(r) is not float:
            return False
        v[i] = PyFloat_AS_DOUBLE(r)
        return True


# -- the recording number in C ------------------------------------------------------------------
#
# Twin of ``_replay_pure.Recording`` and ``_replay_pure.Recorder``: the same instructions, in
# the same order, for the same operations (tests/test_compile.py records with both and compares);
# the instructions go to a C buffer instead of a list of tuples, and the number's arithmetic is
# C slots instead of Python methods. What is rare (calls of Python functions, rounding, the
# value leaving as a float's method) reuses the pure twin's code where it can.

from deltaad._plainmath import math as _math
import operator as _operator

cdef object _Unrecordable = _p.Unrecordable
cdef object _escaped = _p._escaped
cdef dict _LIBM_OP = _p._LIBM_OP
cdef object _np_floating = None
cdef object _np_integer = None


cdef _numpy_scalar_types():
    global _np_floating, _np_integer
    if _np_floating is None:
        import numpy
        _np_floating = numpy.floating
        _np_integer = numpy.integer


@cython.final
@cython.auto_pickle(False)
cdef class Recording:
    """The instructions and guards recorded for one call (slot ``i`` = instruction ``i``)."""

    cdef Instr* buf
    cdef Py_ssize_t n
    cdef Py_ssize_t cap
    cdef readonly list funcs
    cdef dict _fidx
    cdef dict _consts
    cdef public bint closed
    cdef public object failed
    cdef public Py_ssize_t ninputs
    cdef public Py_ssize_t nguards
    # a gradient recording (see ``deltaad._gradrecord``): per slot, whether its value depends
    # on a differentiated input (it is a binding of the uncompiled tape); NULL otherwise
    cdef char* diffs
    cdef readonly bint grad
    cdef bint din  # the flag of the input being pushed
    cdef bint raw             # instructions came through ``emit``/``guard`` (unchecked)
    cdef object last_f        # the function last called by ``_call1`` and its index
    cdef Py_ssize_t last_k
    cdef uint64_t cbits[64]   # recent constants: bit pattern -> slot (-1: empty)
    cdef Py_ssize_t cslot[64]

    def __cinit__(self, grad=False):
        cdef int i
        for i in range(64):
            self.cslot[i] = -1
            self.cbits[i] = 0
        self.funcs = []
        self._fidx = {}
        self._consts = {}
        self.failed = None
        self.grad = bool(grad)

    def __dealloc__(self):
        PyMem_Free(self.buf)
        PyMem_Free(self.diffs)

    @property
    def diff(self):
        """A gradient recording's flags, one byte per slot (None otherwise)."""
        if not self.grad:
            return None
        return (<char*>self.diffs)[:self.n] if self.n else b""

    cdef int _grad_flag(self, int op, Py_ssize_t a, Py_ssize_t b, Py_ssize_t k) except -1:
        """Whether the result of ``op`` on slots ``a``, ``b`` depends on a differentiated
        input; an operation the gradient replayer has no derivative rule for fails the
        recording (``compile`` then records the general way). The pure twin's ``_diff``."""
        cdef char* d = self.diffs
        if op == ADD or op == SUB or op == MUL or op == DIV:
            return d[a] or d[b]
        if op == NEG or FIRST_LIBM <= op < FIRST_LIBM + NLIBM:
            return d[a]
        if op == INPUT:
            return self.din
        if op == CALL1:
            if d[a]:
                self.fail("grad: no replay rule for the derivative of %s"
                          % getattr(self.funcs[k], "__name__", "a function"))
            return 0
        if op == CALL2:
            if d[a] or d[b]:
                if self.funcs[k] is _p._floordiv:  # piecewise constant: no binding, as uncompiled
                    return 0
                self.fail("grad: no replay rule for the derivative of %s"
                          % getattr(self.funcs[k], "__name__", "a function"))
            return 0
        if op == G_BITS and d[a]:
            # uncompiled, the function met a dual here (deltaad's own functions treat one
            # differently from a number): record the general way
            self.fail("grad: a differentiated value left as a float")
        return 0  # constants and guards

    cdef int _push(self, int op, Py_ssize_t a, Py_ssize_t b, Py_ssize_t k, double c) except -1:
        cdef Py_ssize_t cap
        cdef Instr* nb
        cdef char* nd
        cdef int flag = 0
        if self.grad:
            flag = self._grad_flag(op, a, b, k)
        if self.n == self.cap:
            if self.n >= 2147483600:
                raise OverflowError("deltaad.compile: a recording of more than 2**31 instructions")
            cap = self.cap * 2 if self.cap else 256
            nb = <Instr*>PyMem_Realloc(self.buf, cap * sizeof(Instr))
            if nb == NULL:
                raise MemoryError("deltaad.compile: out of memory recording %d instructions" % self.n)
            self.buf = nb
            if self.grad:
                nd = <char*>PyMem_Realloc(self.diffs, cap)
                if nd == NULL:
                    raise MemoryError("deltaad.compile: out of memory recording %d instructions" % self.n)
                self.diffs = nd
            self.cap = cap
        if self.grad:
            self.diffs[self.n] = <char>(1 if flag else 0)
        self.buf[self.n].op = op
        self.buf[self.n].a = <int>a
        self.buf[self.n].b = <int>b
        self.buf[self.n].k = <int>k
        self.buf[self.n].c = c
        self.n += 1
        return 0

    @property
    def code(self):
        """The instructions as ``(op, a, b, k, c)`` tuples (the pure twin's list)."""
        return [(self.buf[i].op, self.buf[i].a, self.buf[i].b, self.buf[i].k, self.buf[i].c)
                for i in range(self.n)]

    def __len__(self):
        return self.n

    cdef Recorder _new(self, Py_ssize_t slot, double v):
        cdef Recorder r = Recorder.__new__(Recorder)
        r._rec = self
        r.slot = slot
        r.v = v
        return r

    def input(self, double v, bint diff=False):
        cdef Recorder r = self._new(self.n, v)
        self.din = diff
        self._push(INPUT, self.ninputs, 0, 0, 0.0)
        self.ninputs += 1
        return r

    cdef Py_ssize_t _const(self, double v) except -1:
        """The slot of constant ``v`` (one per distinct bit pattern)."""
        cdef uint64_t u = _bits(v)
        cdef int h = <int>((u ^ (u >> 29) ^ (u >> 47)) & 63)
        if self.cslot[h] >= 0 and self.cbits[h] == u:  # a small cache before the dict
            return self.cslot[h]
        s = self._const_slot(v)
        self.cbits[h] = u
        self.cslot[h] = s
        return s

    cdef Py_ssize_t _const_slot(self, double v) except -1:
        key = _bits(v)
        s = self._consts.get(key)
        if s is not None:
            return <Py_ssize_t>s
        self._consts[key] = self.n
        self._push(CONST, 0, 0, 0, v)
        return self.n - 1

    def const(self, double v):
        return self._const(v)

    def func(self, f):
        k = self._fidx.get(id(f))
        if k is None:
            k = self._fidx[id(f)] = len(self.funcs)
            self.funcs.append(f)
        return k

    def emit(self, int op, Py_ssize_t a, Py_ssize_t b, Py_ssize_t k, double v):
        self.raw = True
        return self._emit(op, a, b, k, v)

    cdef Recorder _emit(self, int op, Py_ssize_t a, Py_ssize_t b, Py_ssize_t k, double v):
        cdef Recorder r = self._new(self.n, v)
        self._push(op, a, b, k, 0.0)
        return r

    def guard(self, int op, Py_ssize_t a, Py_ssize_t b, Py_ssize_t k, double c):
        self.raw = True
        self._push(op, a, b, k, c)
        self.nguards += 1

    def fail(self, why):
        if self.failed is None:
            self.failed = why
        raise _Unrecordable(why)

    def call(self, f, args):
        """Record ``f`` (a float function) applied to ``args`` (Recorders or numbers)."""
        cdef list slots = []
        cdef list vals = []
        for x in args:
            s = self.operand(x)
            if s is None:
                self.fail("a recorded number met an argument of type %s" % type(x).__name__)
            slots.append(s)
            vals.append((<Recorder>x).v if type(x) is Recorder else float(x))
        v = f(*vals)
        if type(v) is not float:
            self.fail("%s gave a %s, not a float" % (getattr(f, "__name__", f), type(v).__name__))
        k = self.func(f)
        if len(slots) == 1:
            return self._emit(_LIBM_OP.get(f, CALL1), slots[0], 0, k, v)
        if len(slots) == 2:
            return self._emit(CALL2, slots[0], slots[1], k, v)
        self.fail("a function of %d recorded arguments" % len(slots))

    cdef object _call1(self, object f, Recorder x):
        """``call(f, (x,))`` for one recorded argument: a libm function's value computed
        here (Python's function where it raises or is not libm's), no lists."""
        cdef double r, xv = x.v
        cdef int op
        cdef Py_ssize_t k
        o = _LIBM_OP.get(f)
        op = CALL1 if o is None else <int>o  # (a dict keyed by the function: no id object)
        if op != CALL1:
            r = _libm(op - FIRST_LIBM, xv)
            if (cm.isnan(r) and not cm.isnan(xv)) or (cm.isinf(r) and cm.isfinite(xv)):
                v = f(xv)  # Python's math raises here (as the uncompiled call does)
                if type(v) is not float:
                    self.fail("%s gave a %s, not a float" % (getattr(f, "__name__", f), type(v).__name__))
                r = PyFloat_AS_DOUBLE(v)
        else:
            v = f(xv)
            if type(v) is not float:
                self.fail("%s gave a %s, not a float" % (getattr(f, "__name__", f), type(v).__name__))
            r = PyFloat_AS_DOUBLE(v)
        if f is self.last_f:
            k = self.last_k
        else:
            k = self.func(f)
            self.last_f = f
            self.last_k = k
        return self._emit(op, x.slot, 0, k, r)

    def operand(self, x):
        """The slot of operand ``x``; None when it is not a number the recording can use."""
        tx = type(x)
        if tx is Recorder:
            if (<Recorder>x)._rec is not self:
                raise _escaped()
            return (<Recorder>x).slot
        if tx is float:
            return self._const(PyFloat_AS_DOUBLE(x))
        if tx is int or tx is bool:
            return self._const(float(x))  # what float arithmetic converts an int to
        _numpy_scalar_types()
        if isinstance(x, (float, _np_floating, _np_integer)):  # numpy scalars: numpy semantics
            self.fail("a numpy scalar (%s) met a recorded number" % tx.__name__)
        return None


cdef inline Recording _live(Recorder self):
    cdef Recording rec = self._rec
    if rec.closed:
        raise _escaped()
    return rec


cdef object _binop(Recorder self, object other, int op, bint reflected):
    """``self op other`` (or ``other op self``): the pure twin's ``_bin``."""
    cdef Recording rec = _live(self)
    cdef Py_ssize_t s
    cdef double ov, a, b, r
    to = type(other)
    if to is Recorder and (<Recorder>other)._rec is rec and not reflected:
        s = (<Recorder>other).slot
        ov = (<Recorder>other).v
    elif to is float:
        ov = PyFloat_AS_DOUBLE(other)
        s = rec._const(ov)
    else:
        so = rec.operand(other)
        if so is None:
            return NotImplemented
        s = so
        ov = (<Recorder>other).v if to is Recorder else float(other)
    if reflected:
        a = ov
        b = self.v
    else:
        a = self.v
        b = ov
    if op == ADD:
        r = a + b
    elif op == SUB:
        r = a - b
    elif op == MUL:
        r = a * b
    else:
        if b == 0.0:
            raise ZeroDivisionError("float division by zero")
        r = a / b
    if reflected:
        return rec._emit(op, s, self.slot, 0, r)
    return rec._emit(op, self.slot, s, 0, r)


cdef object _cmp(Recorder self, object other, int op, object pyop):
    cdef Recording rec = _live(self)
    cdef double a = self.v, b
    cdef Py_ssize_t s
    cdef bint out
    tx = type(other)
    if tx is float or (tx is Recorder and (<Recorder>other)._rec is rec):
        # the commonest operands, compared in C (Python's float comparison, nan included)
        if tx is float:
            b = PyFloat_AS_DOUBLE(other)
            s = rec._const(b)
        else:
            b = (<Recorder>other).v
            s = (<Recorder>other).slot
        if op == G_LT:
            out = a < b
        elif op == G_LE:
            out = a <= b
        elif op == G_GT:
            out = a > b
        elif op == G_GE:
            out = a >= b
        elif op == G_EQ:
            out = a == b
        else:
            out = a != b
        rec._push(op, self.slot, s, 1 if out else 0, 0.0)
        rec.nguards += 1
        return True if out else False
    if tx is int or tx is bool:
        fo = float(other) if -2 ** 53 <= other <= 2 ** 53 else None
        if fo is None:  # Python compares floats with big ints exactly: keep the value
            return pyop(self._bits(), other)
        other = fo
    s = rec.operand(other)
    if s is None:
        return NotImplemented
    out = pyop(self.v, (<Recorder>other).v if type(other) is Recorder else other)
    rec._push(op, self.slot, s, 1 if out else 0, 0.0)
    rec.nguards += 1
    return out


@cython.final
@cython.auto_pickle(False)
@cython.freelist(512)
@cython.no_gc  # it holds only its recording, which holds no number: no cycle to collect, and
               # a recording makes one per operation (each would count towards a collection)
cdef class Recorder:
    """A float being recorded: its slot in the recording and its value in this call."""

    cdef readonly Recording _rec
    cdef readonly Py_ssize_t slot
    cdef readonly double v

    def __add__(self, other):
        return _binop(self, other, ADD, False)

    def __radd__(self, other):
        return _binop(self, other, ADD, True)

    def __sub__(self, other):
        return _binop(self, other, SUB, False)

    def __rsub__(self, other):
        return _binop(self, other, SUB, True)

    def __mul__(self, other):
        return _binop(self, other, MUL, False)

    def __rmul__(self, other):
        return _binop(self, other, MUL, True)

    def __truediv__(self, other):
        return _binop(self, other, DIV, False)

    def __rtruediv__(self, other):
        return _binop(self, other, DIV, True)

    def __pow__(self, other, mod):
        return _callop(self, other, _p._pow, False)

    def __rpow__(self, other, mod):
        return _callop(self, other, _p._pow, True)

    def __floordiv__(self, other):
        return _callop(self, other, _p._floordiv, False)

    def __rfloordiv__(self, other):
        return _callop(self, other, _p._floordiv, True)

    def __mod__(self, other):
        return _callop(self, other, _p._mod, False)

    def __rmod__(self, other):
        return _callop(self, other, _p._mod, True)

    def __divmod__(self, other):
        return self.__floordiv__(other), self.__mod__(other)

    def __rdivmod__(self, other):
        return self.__rfloordiv__(other), self.__rmod__(other)

    def __lt__(self, other):
        return _cmp(self, other, G_LT, _operator.lt)

    def __le__(self, other):
        return _cmp(self, other, G_LE, _operator.le)

    def __gt__(self, other):
        return _cmp(self, other, G_GT, _operator.gt)

    def __ge__(self, other):
        return _cmp(self, other, G_GE, _operator.ge)

    def __eq__(self, other):
        return _cmp(self, other, G_EQ, _operator.eq)

    def __ne__(self, other):
        return _cmp(self, other, G_NE, _operator.ne)

    def __neg__(self):
        cdef Recording rec = _live(self)
        return rec._emit(NEG, self.slot, 0, 0, -self.v)

    def __pos__(self):
        _live(self)
        return self

    def __abs__(self):
        return _live(self)._call1(abs, self)

    # -- the value leaves the recorded world: guards --
    def _bits(self):
        """The value, as a plain float the caller keeps: guarded bit for bit."""
        cdef Recording rec = _live(self)
        rec._push(G_BITS, self.slot, 0, 0, self.v)
        rec.nguards += 1
        return self.v

    def _rounded(self, int op, fn):
        cdef Recording rec = _live(self)
        out = fn(self.v)  # raises on inf and nan as floats do
        rec._push(op, self.slot, 0, 0, float(out))
        rec.nguards += 1
        return out

    def __bool__(self):
        cdef Recording rec = _live(self)
        out = self.v != 0.0
        rec._push(G_NE, self.slot, rec._const(0.0), 1 if out else 0, 0.0)
        rec.nguards += 1
        return out

    def __float__(self):
        return self._bits()

    def __int__(self):
        return self._rounded(G_TRUNC, int)

    def __trunc__(self):
        return self._rounded(G_TRUNC, _math.trunc)

    def __floor__(self):
        return self._rounded(G_FLOOR, _math.floor)

    def __ceil__(self):
        return self._rounded(G_CEIL, _math.ceil)

    def __round__(self, ndigits=None):
        if ndigits is None:
            return self._rounded(G_ROUND, round)
        return round(self._bits(), ndigits)

    def __complex__(self):
        return complex(self._bits())

    def __hash__(self):
        return hash(self._bits())

    def __repr__(self):
        return repr(self._bits())

    def __str__(self):
        return str(self._bits())

    def __format__(self, spec):
        return format(self._bits(), spec)

    @property
    def real(self):
        return self

    @property
    def imag(self):
        return 0.0

    def conjugate(self):
        return self

    def __getattr__(self, name):  # float's other methods (hex, is_integer, ...): on the value
        if name.startswith("__") or not hasattr(float, name):
            raise AttributeError("'float' object has no attribute %r" % name)
        return getattr(self._bits(), name)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        self._rec.fail("a recorded number was pickled")

    def __array__(self, *a, **k):
        self._rec.fail("a recorded number was converted to a numpy array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self._rec.fail("numpy's %s on a recorded number" % getattr(ufunc, "__name__", ufunc))

    def __array_function__(self, func, types, args, kwargs):
        self._rec.fail("numpy's %s on a recorded number" % getattr(func, "__name__", func))


cdef object _callop(Recorder self, object other, object pyop, bint reflected):
    cdef Recording rec = _live(self)
    if rec.operand(other) is None:
        return NotImplemented
    return rec.call(pyop, (other, self) if reflected else (self, other))


_general_dispatch = _p.make_dispatch(Recorder)
cdef dict _UNARY = {}  # name -> the float function of a one-argument table entry


def dispatch(name, *args):
    """``deltaad.<name>`` on a recorded number (the pure twin's ``make_dispatch``), with the
    commonest case -- one argument, a table function without orders -- without lists."""
    if len(args) == 1 and type(args[0]) is Recorder:
        f = _UNARY.get(name)
        if f is None:
            f = _table.LIFTED.get(name)
            if f is None:
                e = _table.BY_NAME.get(name)
                if e is not None and not e.orders and e.arity == 1:
                    f = e.float
            if f is not None:
                _UNARY[name] = f
        if f is not None:
            return _live(<Recorder>args[0])._call1(f, <Recorder>args[0])
    return _general_dispatch(name, *args)
