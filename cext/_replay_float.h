/* Sums and products of two doubles whose NaN is fixed by the source, not by the compiler.
 *
 * Where both operands are NaNs, x86's SSE returns the first (destination) operand's; a C
 * compiler may swap the operands of a commutative + or *, so which NaN ``a + b`` keeps is
 * the compiler's choice. The replayer must give the uncompiled call's bits, NaN payloads
 * included: ``dad_add(x, y)`` and ``dad_mul(x, y)`` keep ``x``'s where both are NaN (as
 * Python's float ``x + y`` does), with one instruction on x86-64 under GCC or Clang, and a
 * test after the operation elsewhere. */
#ifndef DELTAAD_REPLAY_FLOAT_H
#define DELTAAD_REPLAY_FLOAT_H

#if defined(__x86_64__) && defined(__GNUC__) && defined(__SSE2__)
static inline double dad_add(double x, double y) {
    __asm__("addsd %1, %0" : "+x"(x) : "xm"(y));
    return x;
}
static inline double dad_mul(double x, double y) {
    __asm__("mulsd %1, %0" : "+x"(x) : "xm"(y));
    return x;
}
#else
static inline double dad_add(double x, double y) {
    double r = x + y;
    if (r != r && x != x)
        return x + x; /* x's NaN, quieted as the sum quiets it */
    return r;
}
static inline double dad_mul(double x, double y) {
    double r = x * y;
    if (r != r && x != x)
        return x + x;
    return r;
}
#endif

#endif
