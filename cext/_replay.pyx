# cython: language_level=3
"""The compiled replayer of ``deltaad.compile``: a recording's instructions over C doubles.

Twin of ``deltaad._replay_pure.Program`` (same opcodes, same results bit for bit): one pass
over an array of 24-byte instructions, each writing the value slot of its own index, guards
checked where they stand. Every operand index is checked once when the program is made (an
operand is an earlier slot, an input index is below the number of inputs, a function index is
in range), so the loop reads without bounds checks.
"""

from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcmp
cimport libc.math as cm

from . import _replay_pure as _p

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

ctypedef struct Instr:
    int op
    int a
    int b
    int k
    double c

assert (_p.INPUT, _p.CONST, _p.ADD, _p.SUB, _p.MUL, _p.DIV, _p.NEG, _p.CALL1, _p.CALL2,
        _p.FIRST_LIBM, _p.G_LT, _p.G_ROUND) == (0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 64, 74)
assert _p.INSTRUCTION_BYTES == sizeof(Instr)
cdef int NLIBM = len(_p.LIBM)
cdef int STACK_SLOTS = 512


cdef inline double _libm(int i, double x) noexcept nogil:
    if i == 0: return cm.sin(x)
    if i == 1: return cm.cos(x)
    if i == 2: return cm.tan(x)
    if i == 3: return cm.asin(x)
    if i == 4: return cm.acos(x)
    if i == 5: return cm.atan(x)
    if i == 6: return cm.sinh(x)
    if i == 7: return cm.cosh(x)
    if i == 8: return cm.tanh(x)
    if i == 9: return cm.asinh(x)
    if i == 10: return cm.acosh(x)
    if i == 11: return cm.atanh(x)
    if i == 12: return cm.exp(x)
    if i == 13: return cm.expm1(x)
    if i == 14: return cm.log(x)
    if i == 15: return cm.log2(x)
    if i == 16: return cm.log10(x)
    if i == 17: return cm.sqrt(x)
    return cm.fabs(x)


cdef inline double _round_half_even(double x) noexcept nogil:
    cdef double r = cm.round(x)
    if cm.fabs(x - r) == 0.5:
        r = 2.0 * cm.round(x / 2.0)
    return r


cdef class Program:
    """A finished recording; ``run(inputs)`` gives the output slots' values, or None where a
    guard fails (or Python would have raised)."""

    cdef Instr* code
    cdef readonly Py_ssize_t n
    cdef readonly Py_ssize_t ninputs
    cdef int* outs
    cdef Py_ssize_t nouts
    cdef tuple funcs

    def __cinit__(self, code, funcs, Py_ssize_t ninputs, outs):
        cdef list cl = list(code)
        cdef list ol = list(outs)
        cdef Py_ssize_t i, nf
        cdef int op, a, b, k
        self.funcs = tuple(funcs)
        nf = len(self.funcs)
        self.n = len(cl)
        self.ninputs = ninputs
        self.nouts = len(ol)
        if self.n >= 2147483647:
            raise OverflowError("replay: a recording of %d instructions is too long" % self.n)
        self.code = <Instr*>PyMem_Malloc((self.n if self.n else 1) * sizeof(Instr))
        self.outs = <int*>PyMem_Malloc((self.nouts if self.nouts else 1) * sizeof(int))
        if self.code == NULL or self.outs == NULL:
            raise MemoryError("replay: out of memory for a recording of %d instructions" % self.n)
        for i in range(self.n):
            op, a, b, k, c = cl[i]
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
                raise ValueError("replay: instruction %d %r is not well formed" % (i, cl[i]))
            self.code[i].op = op
            self.code[i].a = a
            self.code[i].b = b
            self.code[i].k = k
            self.code[i].c = c
        for i in range(self.nouts):
            if not 0 <= ol[i] < self.n:
                raise ValueError("replay: output slot %r out of range" % (ol[i],))
            self.outs[i] = ol[i]

    def __dealloc__(self):
        PyMem_Free(self.code)
        PyMem_Free(self.outs)

    @property
    def nbytes(self):
        """Bytes of instructions and value slots."""
        return (sizeof(Instr) + sizeof(double)) * self.n

    def run(self, inputs):
        cdef Py_ssize_t i
        cdef double stack[512]
        cdef double* v
        cdef list ins = inputs if type(inputs) is list else list(inputs)
        if len(ins) != self.ninputs:
            raise ValueError("replay: %d inputs for a recording of %d" % (len(ins), self.ninputs))
        for x in ins:
            if type(x) is not float:
                raise TypeError("replay: inputs must be floats")
        if self.n <= STACK_SLOTS:
            v = stack
        else:
            v = <double*>PyMem_Malloc(self.n * sizeof(double))
            if v == NULL:
                raise MemoryError("replay: out of memory for %d values" % self.n)
        try:
            if not self._run(v, ins):
                return None
            return [v[self.outs[i]] for i in range(self.nouts)]
        finally:
            if v != stack:
                PyMem_Free(v)

    cdef bint _run(self, double* v, list ins) except -1:
        # one chain of ``op == constant`` tests: Cython makes it a C switch
        cdef Py_ssize_t i
        cdef Instr* p
        cdef double x, r
        cdef int op
        for i in range(self.n):
            p = &self.code[i]
            op = p.op
            if op == MUL:
                v[i] = v[p.a] * v[p.b]
            elif op == ADD:
                v[i] = v[p.a] + v[p.b]
            elif op == G_EQ:
                if (v[p.a] == v[p.b]) != p.k:
                    return False
            elif op == SUB:
                v[i] = v[p.a] - v[p.b]
            elif op == DIV:
                x = v[p.b]
                if x == 0.0:
                    return False
                v[i] = v[p.a] / x
            elif op == NEG:
                v[i] = -v[p.a]
            elif op == INPUT:
                v[i] = PyFloat_AS_DOUBLE(ins[p.a])
            elif op == CONST:
                v[i] = p.c
            elif op == CALL1 or op == CALL2:
                if not self._call(v, i, p):
                    return False
            elif op == G_LT:
                if (v[p.a] < v[p.b]) != p.k:
                    return False
            elif op == G_LE:
                if (v[p.a] <= v[p.b]) != p.k:
                    return False
            elif op == G_GT:
                if (v[p.a] > v[p.b]) != p.k:
                    return False
            elif op == G_GE:
                if (v[p.a] >= v[p.b]) != p.k:
                    return False
            elif op == G_NE:
                if (v[p.a] != v[p.b]) != p.k:
                    return False
            elif op == G_BITS:
                x = v[p.a]
                if memcmp(&x, &p.c, sizeof(double)) != 0:
                    return False
            elif op == G_FLOOR:
                x = v[p.a]
                if not cm.isfinite(x) or cm.floor(x) != p.c:
                    return False
            elif op == G_CEIL:
                x = v[p.a]
                if not cm.isfinite(x) or cm.ceil(x) != p.c:
                    return False
            elif op == G_TRUNC:
                x = v[p.a]
                if not cm.isfinite(x) or cm.trunc(x) != p.c:
                    return False
            elif op == G_ROUND:
                x = v[p.a]
                if not cm.isfinite(x) or _round_half_even(x) != p.c:
                    return False
            else:  # a libm function (checked when the program was made)
                x = v[p.a]
                r = _libm(op - FIRST_LIBM, x)
                if (cm.isnan(r) and not cm.isnan(x)) or (cm.isinf(r) and cm.isfinite(x)):
                    # where Python's math raises (or a function is not libm's): ask it
                    if not self._call(v, i, p):
                        return False
                else:
                    v[i] = r
        return True

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
