/* The forward loop of the compiled replayer (``deltaad._replay.Program``), in C.
 *
 * The program is the recording's instructions (``dad_instr``, the layout of ``Instr`` in
 * _replay.pyx) plus one byte per instruction, its *exec code* (``DX_*`` below), chosen once
 * when the program is made (``dad_lower``). The exec code is dense (a jump table, not a chain
 * of tests on the sparse opcodes) and says, for an arithmetic instruction, which operands are
 * the value the instruction just before computed: that value is kept in a register (``last``)
 * and read from there, not from the slot just stored, so a chain of dependent operations waits
 * for the arithmetic only, not for a store-to-load round trip through memory at each step.
 * Every value is stored in its slot as well (the sweep and later instructions read them).
 *
 * Under GCC and Clang each instruction's handler jumps to the next one's itself (computed
 * goto: one indirect branch per handler, which the branch predictor learns per handler);
 * elsewhere a ``switch`` does the same.
 *
 * ``dad_forward`` runs instructions ``start`` .. ``n - 1`` and stops where a guard fails (or
 * Python would have raised) or where an instruction needs Python (a Python function, a libm
 * value where Python's ``math`` raises): its caller does that one and resumes after it.
 * Operands were checked when the program was made (earlier slots, inputs in range). */
#ifndef DELTAAD_REPLAY_EXEC_H
#define DELTAAD_REPLAY_EXEC_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "_replay_float.h"

typedef struct {
    int op;
    int a;
    int b;
    int k;
    double c;
} dad_instr;

/* the recorded opcodes (``_replay_pure``'s) */
enum {
    DO_INPUT = 0, DO_CONST = 1, DO_ADD = 2, DO_SUB = 3, DO_MUL = 4, DO_DIV = 5, DO_NEG = 6,
    DO_CALL1 = 7, DO_CALL2 = 8, DO_FIRST_LIBM = 16, DO_NLIBM = 19,
    DO_G_LT = 64, DO_G_LE, DO_G_GT, DO_G_GE, DO_G_EQ, DO_G_NE, DO_G_BITS, DO_G_FLOOR, DO_G_CEIL,
    DO_G_TRUNC, DO_G_ROUND, DO_G_RANGE = 80,
    DO_NZ = 128, DO_ZZ = 256
};

/* exec codes: an arithmetic operation's four forms are consecutive: operands from slots
 * (+0), the first operand the previous value (+1), the second (+2), both (+3) */
enum {
    DX_ADD = 0, DX_SUB = 4, DX_MUL = 8, DX_DIV = 12,
    DX_ADD_NZ = 16, DX_SUB_NZ = 20, DX_MUL_NZ = 24,
    DX_ADD_ZZ = 28, DX_SUB_ZZ = 32, DX_MUL_ZZ = 36,
    DX_NEG = 40, DX_NEG_P = 41,
    DX_INPUT = 42, DX_CONST = 43, DX_CALL = 44, DX_LIBM = 45,
    DX_G_LT = 46, DX_G_LE, DX_G_GT, DX_G_GE, DX_G_EQ, DX_G_NE, DX_G_BITS, DX_G_FLOOR,
    DX_G_CEIL, DX_G_TRUNC, DX_G_ROUND,
    DX_BAD = 57,
    DX_END = 58,  /* after the last instruction (``xop[n]``) */
    DX_SIN_D = 59, DX_COS_D = 60,  /* a binding's sin or cos: its partial kept for the sweep */
    DX_G_RANGE = 61,  /* the optimiser's range guard (never recorded) */
    DX_COUNT = 62
};

/* what ``dad_forward`` stopped for */
enum { DAD_DONE = 0, DAD_FAILED = 1, DAD_PYTHON = 2 };

static inline int dad_is_guard(int op) {
    return (DO_G_LT <= op && op <= DO_G_ROUND) || op == DO_G_RANGE;
}

/* A range guard's test (``_in_range`` in _replay.pyx, where the optimiser makes them): ``x`` is
 * 0, inf, a NaN (a quiet one where bit 22 of ``k`` asks), or normal with its biased exponent
 * in ``[k & 2047, k >> 11 & 2047]``. */
static inline int dad_in_range(double x, int k) {
    uint64_t u;
    int e;
    memcpy(&u, &x, sizeof u);
    e = (int)((u >> 52) & 0x7FF);
    if ((k & 0x7FF) <= e && e <= ((k >> 11) & 0x7FF))
        return 1;
    if (e == 0x7FF)
        return ((k >> 22) & 1) == 0 || (u & 0x000FFFFFFFFFFFFFULL) == 0
            || (u & 0x0008000000000000ULL) != 0;
    return (u << 1) == 0;
}

/* Whether the sweep's partial of a binding's sin or cos comes from the forward pass: one
 * ``sincos`` gives both the value and the partial, where it gives the bits ``sin`` and ``cos``
 * give (glibc's computes both with its sin's and cos's code; tests/test_compile_grad.py checks
 * that on the machine it runs on); elsewhere the sweep calls the partial's function. */
#if defined(__GLIBC__) && defined(_GNU_SOURCE) && !defined(DELTAAD_NO_SINCOS)
#define DAD_SINCOS 1
#endif

static inline int dad_partial_kept(const dad_instr *code, const char *sw, long i) {
#ifdef DAD_SINCOS
    return sw != NULL && sw[i] != 0
        && (code[i].op == DO_FIRST_LIBM || code[i].op == DO_FIRST_LIBM + 1);
#else
    (void)code; (void)sw; (void)i;
    return 0;
#endif
}

/* The exec code of instruction ``i`` (see above; ``sw``: a gradient recording's sweep codes,
 * else NULL); ``DX_BAD`` for an opcode the replayer does not know (the program's check
 * rejects those first). */
static inline unsigned char dad_exec_code(const dad_instr *code, const char *sw, long i) {
    int op = code[i].op, base, form = 0;
    switch (op) {
    case DO_ADD: base = DX_ADD; break;
    case DO_SUB: base = DX_SUB; break;
    case DO_MUL: base = DX_MUL; break;
    case DO_DIV: base = DX_DIV; break;
    case DO_ADD + DO_NZ: base = DX_ADD_NZ; break;
    case DO_SUB + DO_NZ: base = DX_SUB_NZ; break;
    case DO_MUL + DO_NZ: base = DX_MUL_NZ; break;
    case DO_ADD + DO_ZZ: base = DX_ADD_ZZ; break;
    case DO_SUB + DO_ZZ: base = DX_SUB_ZZ; break;
    case DO_MUL + DO_ZZ: base = DX_MUL_ZZ; break;
    case DO_NEG:
        return (i > 0 && code[i].a == i - 1 && !dad_is_guard(code[i - 1].op)) ? DX_NEG_P : DX_NEG;
    case DO_INPUT: return DX_INPUT;
    case DO_CONST: return DX_CONST;
    case DO_CALL1: case DO_CALL2: return DX_CALL;
    default:
        if (dad_partial_kept(code, sw, i))
            return op == DO_FIRST_LIBM ? DX_SIN_D : DX_COS_D;
        if (DO_FIRST_LIBM <= op && op < DO_FIRST_LIBM + DO_NLIBM)
            return DX_LIBM;
        if (op == DO_G_RANGE)
            return DX_G_RANGE;
        if (dad_is_guard(op))
            return (unsigned char)(DX_G_LT + (op - DO_G_LT));
        return DX_BAD;
    }
    /* the previous instruction's value is in ``last`` unless it was a guard (no value) */
    if (i > 0 && !dad_is_guard(code[i - 1].op)) {
        if (code[i].a == i - 1)
            form += 1;
        if (code[i].b == i - 1)
            form += 2;
    }
    return (unsigned char)(base + form);
}

static inline double dad_libm(int j, double x) {
    switch (j) {
    case 0: return sin(x);
    case 1: return cos(x);
    case 2: return tan(x);
    case 3: return asin(x);
    case 4: return acos(x);
    case 5: return atan(x);
    case 6: return sinh(x);
    case 7: return cosh(x);
    case 8: return tanh(x);
    case 9: return asinh(x);
    case 10: return acosh(x);
    case 11: return atanh(x);
    case 12: return exp(x);
    case 13: return expm1(x);
    case 14: return log(x);
    case 15: return log2(x);
    case 16: return log10(x);
    case 17: return sqrt(x);
    default: return fabs(x);
    }
}

static inline double dad_round_half_even(double x) {
    double r = round(x);
    if (fabs(x - r) == 0.5)
        r = 2.0 * round(x / 2.0);
    return r;
}

static inline int dad_same_bits(double x, double y) {
    uint64_t u, w;
    memcpy(&u, &x, 8);
    memcpy(&w, &y, 8);
    return u == w;
}

#if defined(__GNUC__) && !defined(DELTAAD_NO_COMPUTED_GOTO)
#define DAD_THREADED 1
#endif

#ifdef __GNUC__
#define DAD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define DAD_UNLIKELY(x) (x)
#endif

/* Run instructions ``start`` .. ``n - 1`` of ``code`` (exec codes ``xop``, ``xop[n]`` being
 * ``DX_END``) over the value
 * slots ``v``, the inputs' values ``xin``. Returns where it stopped: ``n`` with ``*why =
 * DAD_DONE``, or the instruction that failed (``DAD_FAILED``) or needs Python
 * (``DAD_PYTHON``; its slot is not written). */
#if defined(__GNUC__) && !defined(__clang__)
/* keep each handler's own dispatch (GCC would merge the identical tails into one jump) */
__attribute__((optimize("no-crossjumping", "no-gcse", "no-tree-tail-merge")))
#endif
static long dad_forward(const dad_instr *code, const unsigned char *xop, long start, long n,
                        double *v, const double *xin, double *part, long *npart, int *why) {
    long i = start, j = *npart;
    const dad_instr *p = code + start;
    double last = start > 0 ? v[start - 1] : 0.0, x, y;
    if (i >= n) {
        *why = DAD_DONE;
        return n;
    }
#ifdef DAD_THREADED
    static const void *const labels[DX_COUNT] = {
        &&L_ADD, &&L_ADD_A, &&L_ADD_B, &&L_ADD_AB,
        &&L_SUB, &&L_SUB_A, &&L_SUB_B, &&L_SUB_AB,
        &&L_MUL, &&L_MUL_A, &&L_MUL_B, &&L_MUL_AB,
        &&L_DIV, &&L_DIV_A, &&L_DIV_B, &&L_DIV_AB,
        &&L_ADD_NZ, &&L_ADD_NZ_A, &&L_ADD_NZ_B, &&L_ADD_NZ_AB,
        &&L_SUB_NZ, &&L_SUB_NZ_A, &&L_SUB_NZ_B, &&L_SUB_NZ_AB,
        &&L_MUL_NZ, &&L_MUL_NZ_A, &&L_MUL_NZ_B, &&L_MUL_NZ_AB,
        &&L_ADD_ZZ, &&L_ADD_ZZ_A, &&L_ADD_ZZ_B, &&L_ADD_ZZ_AB,
        &&L_SUB_ZZ, &&L_SUB_ZZ_A, &&L_SUB_ZZ_B, &&L_SUB_ZZ_AB,
        &&L_MUL_ZZ, &&L_MUL_ZZ_A, &&L_MUL_ZZ_B, &&L_MUL_ZZ_AB,
        &&L_NEG, &&L_NEG_P,
        &&L_INPUT, &&L_CONST, &&L_CALL, &&L_LIBM,
        &&L_G_LT, &&L_G_LE, &&L_G_GT, &&L_G_GE, &&L_G_EQ, &&L_G_NE, &&L_G_BITS, &&L_G_FLOOR,
        &&L_G_CEIL, &&L_G_TRUNC, &&L_G_ROUND,
        &&L_BAD, &&L_END, &&L_SIN_D, &&L_COS_D, &&L_G_RANGE,
    };
#define DAD_CASE(name) L_##name:
#define DAD_NEXT do { ++p; ++i; goto *labels[xop[i]]; } while (0)
    goto *labels[xop[i]];
#else
#define DAD_CASE(name) case DX_##name:
#define DAD_NEXT do { ++p; ++i; goto top; } while (0)
top:
    switch (xop[i]) {
#endif

/* one arithmetic operation in its four operand forms; ``CHECK`` fails on the result */
#define DAD_DO(EXPR, CHECK) last = (EXPR); if (CHECK) goto failed; v[i] = last; DAD_NEXT;
#define DAD_ARITH(NAME, EXPR, CHECK)                                   \
    DAD_CASE(NAME) x = v[p->a]; y = v[p->b]; DAD_DO(EXPR, CHECK)     \
    DAD_CASE(NAME##_A) x = last; y = v[p->b]; DAD_DO(EXPR, CHECK)    \
    DAD_CASE(NAME##_B) x = v[p->a]; y = last; DAD_DO(EXPR, CHECK)    \
    DAD_CASE(NAME##_AB) x = last; y = last; DAD_DO(EXPR, CHECK)

    DAD_ARITH(ADD, dad_add(x, y), 0)
    DAD_ARITH(SUB, x - y, 0)
    DAD_ARITH(MUL, dad_mul(x, y), 0)
    DAD_ARITH(ADD_NZ, dad_add(x, y), last == 0.0)
    DAD_ARITH(SUB_NZ, x - y, last == 0.0)
    DAD_ARITH(MUL_NZ, dad_mul(x, y), last == 0.0)
    DAD_ARITH(ADD_ZZ, dad_add(x, y), last != 0.0)
    DAD_ARITH(SUB_ZZ, x - y, last != 0.0)
    DAD_ARITH(MUL_ZZ, dad_mul(x, y), last != 0.0)

    /* a division by zero fails (Python raises) before dividing */
    DAD_CASE(DIV) x = v[p->a]; y = v[p->b]; goto DIV_do;
    DAD_CASE(DIV_A) x = last; y = v[p->b]; goto DIV_do;
    DAD_CASE(DIV_B) x = v[p->a]; y = last; goto DIV_do;
    DAD_CASE(DIV_AB) x = last; y = last;
    DIV_do:
        if (y == 0.0) goto failed;
        last = x / y;
        v[i] = last;
        DAD_NEXT;

    DAD_CASE(NEG) last = -v[p->a]; v[i] = last; DAD_NEXT;
    DAD_CASE(NEG_P) last = -last; v[i] = last; DAD_NEXT;
    DAD_CASE(INPUT) last = xin[p->a]; v[i] = last; DAD_NEXT;
    DAD_CASE(CONST) last = p->c; v[i] = last; DAD_NEXT;
    DAD_CASE(CALL) goto python;
    DAD_CASE(LIBM)
        x = v[p->a];
        y = dad_libm(p->op - DO_FIRST_LIBM, x);
        if (DAD_UNLIKELY((isnan(y) && !isnan(x)) || (isinf(y) && isfinite(x))))
            goto python;  /* where Python's math raises (or the function is not libm's) */
        last = y;
        v[i] = y;
        DAD_NEXT;
#ifdef DAD_SINCOS
    DAD_CASE(SIN_D)
        x = v[p->a];
        sincos(x, &y, &part[j]);  /* sin's partial: cos */
        if (DAD_UNLIKELY(isnan(y) && !isnan(x)))
            goto python;  /* sin(inf): Python's math raises */
        j++;
        last = y;
        v[i] = y;
        DAD_NEXT;
    DAD_CASE(COS_D)
        x = v[p->a];
        sincos(x, &part[j], &y);
        if (DAD_UNLIKELY(isnan(y) && !isnan(x)))
            goto python;
        part[j] = -part[j];  /* cos's partial: -sin */
        j++;
        last = y;
        v[i] = y;
        DAD_NEXT;
#else
    DAD_CASE(SIN_D) goto failed;  /* (never chosen) */
    DAD_CASE(COS_D) goto failed;
#endif
    DAD_CASE(G_LT) if ((v[p->a] < v[p->b]) != p->k) goto failed; DAD_NEXT;
    DAD_CASE(G_LE) if ((v[p->a] <= v[p->b]) != p->k) goto failed; DAD_NEXT;
    DAD_CASE(G_GT) if ((v[p->a] > v[p->b]) != p->k) goto failed; DAD_NEXT;
    DAD_CASE(G_GE) if ((v[p->a] >= v[p->b]) != p->k) goto failed; DAD_NEXT;
    DAD_CASE(G_EQ) if ((v[p->a] == v[p->b]) != p->k) goto failed; DAD_NEXT;
    DAD_CASE(G_NE) if ((v[p->a] != v[p->b]) != p->k) goto failed; DAD_NEXT;
    DAD_CASE(G_BITS) if (!dad_same_bits(v[p->a], p->c)) goto failed; DAD_NEXT;
    DAD_CASE(G_FLOOR)
        x = v[p->a];
        if (!isfinite(x) || floor(x) != p->c) goto failed;
        DAD_NEXT;
    DAD_CASE(G_CEIL)
        x = v[p->a];
        if (!isfinite(x) || ceil(x) != p->c) goto failed;
        DAD_NEXT;
    DAD_CASE(G_TRUNC)
        x = v[p->a];
        if (!isfinite(x) || trunc(x) != p->c) goto failed;
        DAD_NEXT;
    DAD_CASE(G_ROUND)
        x = v[p->a];
        if (!isfinite(x) || dad_round_half_even(x) != p->c) goto failed;
        DAD_NEXT;
    DAD_CASE(G_RANGE) if (!dad_in_range(v[p->a], p->k)) goto failed; DAD_NEXT;
    DAD_CASE(BAD) goto failed;
    DAD_CASE(END) goto done;
#ifndef DAD_THREADED
    }
#endif
#undef DAD_ARITH
#undef DAD_DO
#undef DAD_CASE
#undef DAD_NEXT
done:
    *npart = j;
    *why = DAD_DONE;
    return n;
failed:
    *npart = j;
    *why = DAD_FAILED;
    return i;
python:
    *npart = j;
    *why = DAD_PYTHON;
    return i;
}

/* -- the sweep of a gradient recording ------------------------------------------------------
 *
 * ``Program._sweep``'s float operations in its order (see there), over *sweep exec codes*
 * (``xsw[i + 1]`` for slot ``i``; ``xsw[0]`` ends the sweep), chosen once per program by
 * ``dad_sweep_codes`` from the recording's sweep codes (``SW_*``, as in _replay.pyx): the
 * kind of binding, which parent is added into first, and where the adjoints read come from.
 *
 * The adjoint last written is kept in a register (``carry``) as well as in its slot, so a
 * binding whose adjoint (or first parent's) was just written reads it without a
 * store-to-load round trip. Which slot that is, is known when the program is made: the
 * last parent written by the binding swept before (the higher of two parents: the lower is
 * added into first). A binding whose adjoint is zero is skipped (the core's sweep skips
 * it); the register then takes that last parent's adjoint from its slot, so what it holds is
 * what the codes say it holds whether or not a binding was skipped. */

enum { /* the recording's sweep codes (``SW_*`` in _replay.pyx) */
    DS_MUL_A = 1, DS_MUL_B, DS_MUL_AB, DS_ADD_A, DS_ADD_B, DS_ADD_AB, DS_SUB_A, DS_SUB_B,
    DS_SUB_AB, DS_DIV_A, DS_DIV_B, DS_DIV_AB, DS_NEG, DS_LIBM
};

/* sweep exec codes: kind * 3 + where the adjoints come from (0: slots; 1: the binding's own
 * adjoint is the register's; 2: the first parent's is) */
enum {
    DK_MUL_A, DK_MUL_B, DK_ADD_A, DK_ADD_B, DK_SUB_B, DK_DIV_A, DK_DIV_B, DK_NEG, DK_LIBM,
    DK_KEPT, /* a libm binding whose partial the forward pass kept */
    DK_MUL_LT, DK_MUL_GT, DK_MUL_EQ, DK_ADD_LT, DK_ADD_GT, DK_ADD_EQ,
    DK_SUB_LT, DK_SUB_GT, DK_SUB_EQ, DK_DIV_LT, DK_DIV_GT, DK_DIV_EQ,
    DK_KINDS
};
enum { DS_SKIP = 3 * DK_KINDS, DS_END = DS_SKIP + 1, DS_COUNT = DS_END + 1 };

/* ``xsw[0 .. n]`` from the sweep codes ``sw[0 .. n - 1]`` (0: no binding). Returns -1 for
 * a sweep code it does not know, else 0. */
static inline int dad_sweep_codes(const dad_instr *code, const char *sw, long n,
                                  unsigned char *xsw) {
    long i, cs = -1, lo, hi;
    int c, kind, where;
    xsw[0] = DS_END;
    for (i = n - 1; i >= 0; i--) {
        c = sw[i];
        if (c == 0) {
            xsw[i + 1] = DS_SKIP;
            continue;
        }
        where = (i == cs) ? 1 : 0;
        if (c == DS_MUL_AB || c == DS_ADD_AB || c == DS_SUB_AB || c == DS_DIV_AB) {
            long a = code[i].a, b = code[i].b;
            lo = a < b ? a : b;
            hi = a < b ? b : a;
            kind = (c == DS_MUL_AB ? DK_MUL_LT : c == DS_ADD_AB ? DK_ADD_LT
                    : c == DS_SUB_AB ? DK_SUB_LT : DK_DIV_LT) + (a < b ? 0 : a > b ? 1 : 2);
            if (lo == cs) where = 2;
            cs = hi;
        } else {
            switch (c) {
            case DS_MUL_A: kind = DK_MUL_A; lo = code[i].a; break;
            case DS_MUL_B: kind = DK_MUL_B; lo = code[i].b; break;
            case DS_ADD_A: case DS_SUB_A: kind = DK_ADD_A; lo = code[i].a; break;
            case DS_ADD_B: kind = DK_ADD_B; lo = code[i].b; break;
            case DS_SUB_B: kind = DK_SUB_B; lo = code[i].b; break;
            case DS_DIV_A: kind = DK_DIV_A; lo = code[i].a; break;
            case DS_DIV_B: kind = DK_DIV_B; lo = code[i].b; break;
            case DS_NEG: kind = DK_NEG; lo = code[i].a; break;
            case DS_LIBM:
                kind = dad_partial_kept(code, sw, i) ? DK_KEPT : DK_LIBM;
                lo = code[i].a;
                break;
            default: return -1;
            }
            if (lo == cs) where = 2;
            cs = lo;
        }
        xsw[i + 1] = (unsigned char)(kind * 3 + where);
    }
    return 0;
}

/* The core's partial of libm function ``j`` at ``x`` (value ``r``): ``_libm_partial``. */
static inline double dad_libm_partial(int j, double x, double r, double ln2, double ln10) {
    switch (j) {
    case 0: return cos(x);
    case 1: return -sin(x);
    case 2: return 1.0 + r * r;
    case 3: return 1.0 / sqrt(1.0 - x * x);
    case 4: return -(1.0 / sqrt(1.0 - x * x));
    case 5: return 1.0 / (1.0 + x * x);
    case 6: return cosh(x);
    case 7: return sinh(x);
    case 8: return 1.0 - r * r;
    case 9: return 1.0 / sqrt(x * x + 1.0);
    case 10: return 1.0 / sqrt(x * x - 1.0);
    case 11: return 1.0 / (1.0 - x * x);
    case 12: return r;
    case 13: return r + 1.0;
    case 14: return 1.0 / x;
    case 15: return 1.0 / (x * ln2);
    case 16: return 1.0 / (x * ln10);
    case 17: return 0.5 / (r + 0.0);
    default:
        if (x > 0.0) return 1.0;
        if (x < 0.0) return -1.0;
        if (x == 0.0) return 0.0;
        return NAN;
    }
}

/* ``c * g`` for a binding's first parent (where both are NaN: the partial's), for its second
 * (the adjoint's), and ``-1.0 * g``: ``_cmul``, ``_cmul2``, ``_neg1`` of _replay.pyx */
static inline double dad_cmul(double c, double g) { return c != c ? c : c * g; }
static inline double dad_cmul2(double c, double g) { return g != g ? g : c * g; }
static inline double dad_neg1(double g) { return g != g ? g : -g; }

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-crossjumping", "no-gcse", "no-tree-tail-merge")))
#endif
/* The adjoints ``adj[0 .. n - 1]`` of the values ``v`` (slot ``seed`` seeded with 1.0; -1:
 * none). */
static void dad_sweep(const dad_instr *code, const unsigned char *xsw, long n, long seed,
                      const double *v, double *adj, double ln2, double ln10,
                      const double *part, long npart) {
    long i = n - 1, j = npart;
    const dad_instr *p = code + i;
    double g, carry = 0.0, x, y;
    memset(adj, 0, (size_t)n * sizeof(double));
    if (seed >= 0)
        adj[seed] += 1.0;
#define ACC_0(s, e) carry = dad_add((e), adj[s]); adj[s] = carry;
#define ACC_1(s, e) ACC_0(s, e)
#define ACC_2(s, e) carry = dad_add((e), carry); adj[s] = carry;
#define G_0 g = adj[i];
#define G_1 g = carry;
#define G_2 g = adj[i];
#ifdef DAD_THREADED
#define SW_CASE(K, W) S_##K##_##W:
#define SW_CASE_X(name) S_##name:
#define SW_NEXT do { --p; --i; goto *labels[xsw[i + 1]]; } while (0)
#define SW_L3(K) &&S_##K##_0, &&S_##K##_1, &&S_##K##_2
    static const void *const labels[DS_COUNT] = {
        SW_L3(MUL_A), SW_L3(MUL_B), SW_L3(ADD_A), SW_L3(ADD_B), SW_L3(SUB_B), SW_L3(DIV_A),
        SW_L3(DIV_B), SW_L3(NEG), SW_L3(LIBM), SW_L3(KEPT),
        SW_L3(MUL_LT), SW_L3(MUL_GT), SW_L3(MUL_EQ), SW_L3(ADD_LT), SW_L3(ADD_GT),
        SW_L3(ADD_EQ), SW_L3(SUB_LT), SW_L3(SUB_GT), SW_L3(SUB_EQ), SW_L3(DIV_LT),
        SW_L3(DIV_GT), SW_L3(DIV_EQ),
        &&S_SKIP, &&S_END,
    };
#undef SW_L3
    goto *labels[xsw[i + 1]];
#else
#define SW_CASE(K, W) case DK_##K * 3 + W:
#define SW_CASE_X(name) case DS_##name:
#define SW_NEXT do { --p; --i; goto top; } while (0)
top:
    switch (xsw[i + 1]) {
#endif
/* one parent: slot S gets E (an expression of g); W: where the adjoints come from */
#define SW1(K, W, S, E)                                        \
    SW_CASE(K, W) G_##W                                     \
        if (g == 0.0) { carry = adj[S]; SW_NEXT; }             \
        ACC_##W(S, E) SW_NEXT;
/* two parents: X (first's contribution) and Y (second's), the lower slot first */
#define SW2(K, W, X, Y)                                                      \
    SW_CASE(K##_LT, W) G_##W                                                \
        if (g == 0.0) { carry = adj[p->b]; SW_NEXT; }                        \
        x = (X); y = (Y); ACC_##W(p->a, x) ACC_0(p->b, y) SW_NEXT;          \
    SW_CASE(K##_GT, W) G_##W                                                \
        if (g == 0.0) { carry = adj[p->a]; SW_NEXT; }                        \
        x = (X); y = (Y); ACC_##W(p->b, y) ACC_0(p->a, x) SW_NEXT;          \
    SW_CASE(K##_EQ, W) G_##W                                                \
        if (g == 0.0) { carry = adj[p->a]; SW_NEXT; }                        \
        x = (X); y = (Y); ACC_##W(p->a, x) ACC_2(p->a, y) SW_NEXT;
#define SW1_ALL(K, S, E) SW1(K, 0, S, E) SW1(K, 1, S, E) SW1(K, 2, S, E)
#define SW2_ALL(K, X, Y) SW2(K, 0, X, Y) SW2(K, 1, X, Y) SW2(K, 2, X, Y)
    SW1_ALL(MUL_A, p->a, dad_cmul(v[p->b], g))
    SW1_ALL(MUL_B, p->b, dad_cmul(v[p->a], g))
    SW1_ALL(ADD_A, p->a, g)
    SW1_ALL(ADD_B, p->b, g)
    SW1_ALL(SUB_B, p->b, dad_neg1(g))
    SW1_ALL(DIV_A, p->a, dad_cmul(1.0 / v[p->b], g))  /* the forward pass saw v[b] != 0 */
    SW1_ALL(DIV_B, p->b, dad_cmul(-v[i] / v[p->b], g))
    SW1_ALL(NEG, p->a, dad_neg1(g))
    SW1_ALL(LIBM, p->a,
            dad_cmul(dad_libm_partial(p->op - DO_FIRST_LIBM, v[p->a], v[i], ln2, ln10), g))
    SW2_ALL(MUL, dad_cmul(v[p->b], g), dad_cmul2(v[p->a], g))
    SW2_ALL(ADD, g, g)
    SW2_ALL(SUB, g, dad_neg1(g))
    SW2_ALL(DIV, dad_cmul(1.0 / v[p->b], g), dad_cmul2(-v[i] / v[p->b], g))
    /* the forward pass kept the partials in order: the sweep takes them from the end */
    SW_CASE(KEPT, 0) G_0 j--; if (g == 0.0) { carry = adj[p->a]; SW_NEXT; }
        ACC_0(p->a, dad_cmul(part[j], g)) SW_NEXT;
    SW_CASE(KEPT, 1) G_1 j--; if (g == 0.0) { carry = adj[p->a]; SW_NEXT; }
        ACC_1(p->a, dad_cmul(part[j], g)) SW_NEXT;
    SW_CASE(KEPT, 2) G_2 j--; if (g == 0.0) { carry = adj[p->a]; SW_NEXT; }
        ACC_2(p->a, dad_cmul(part[j], g)) SW_NEXT;
    SW_CASE_X(SKIP) SW_NEXT;
    SW_CASE_X(END) return;
#ifndef DAD_THREADED
    }
#endif
#undef SW1
#undef SW2
#undef SW1_ALL
#undef SW2_ALL
#undef SW_CASE
#undef SW_CASE_X
#undef SW_NEXT
#undef ACC_0
#undef ACC_1
#undef ACC_2
#undef G_0
#undef G_1
#undef G_2
}

#endif
