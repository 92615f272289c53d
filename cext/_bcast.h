/* Elementwise +, -, *, / of two float64 operands broadcast against each other.
 *
 * numpy calls its inner loop once per innermost row of the broadcast shape; where that row is
 * short (an (n, 1, d) operand against (k, n, d), d small) the call and the iterator's step
 * cost more than the arithmetic: a (25, 1000, 10) product with a (25, 1, 10) factor takes
 * ~200 us in numpy, ~90 us here. Each entry is one IEEE operation on the same two operands in
 * the same order, so the bits are numpy's; the exception flags are raised as numpy's loops
 * raise them (the caller reads them).
 *
 * n[0..nd-1] is the shape (nd >= 1), sa and sb the operands' strides in bytes along it (0
 * where broadcast); o is C-contiguous. */
#ifndef DELTAAD_BCAST_H
#define DELTAAD_BCAST_H

#include <stddef.h>

#define DAD_BCAST_MAXDIMS 32

#define DAD_ROW(OP)                                                                         \
    if (ia == 8 && ib == 8) {                                                               \
        const double *x = (const double *)pa, *y = (const double *)pb;                      \
        for (ptrdiff_t k = 0; k < m; k++) q[k] = x[k] OP y[k];                              \
    } else if (ia == 8 && ib == 0) {                                                        \
        const double *x = (const double *)pa; const double y = *(const double *)pb;         \
        for (ptrdiff_t k = 0; k < m; k++) q[k] = x[k] OP y;                                 \
    } else if (ia == 0 && ib == 8) {                                                        \
        const double x = *(const double *)pa; const double *y = (const double *)pb;         \
        for (ptrdiff_t k = 0; k < m; k++) q[k] = x OP y[k];                                 \
    } else {                                                                                \
        for (ptrdiff_t k = 0; k < m; k++)                                                   \
            q[k] = *(const double *)(pa + k * ia) OP *(const double *)(pb + k * ib);        \
    }

static void dad_bcast(int op, double *restrict o, const char *a, const char *b, int nd,
                      const ptrdiff_t *n, const ptrdiff_t *sa, const ptrdiff_t *sb)
{
    ptrdiff_t idx[DAD_BCAST_MAXDIMS] = {0};
    const ptrdiff_t m = n[nd - 1], ia = sa[nd - 1], ib = sb[nd - 1];
    const char *pa = a, *pb = b;
    double *restrict q = o;
    for (;;) {
        switch (op) {
        case 0: DAD_ROW(+) break;
        case 1: DAD_ROW(-) break;
        case 2: DAD_ROW(*) break;
        default: DAD_ROW(/) break;
        }
        q += m;
        /* the next row: carry through the outer indices, last first */
        int d = nd - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < n[d]) {
                pa += sa[d];
                pb += sb[d];
                break;
            }
            idx[d] = 0;
            pa -= sa[d] * (n[d] - 1);
            pb -= sb[d] * (n[d] - 1);
        }
        if (d < 0)
            return;
    }
}

#undef DAD_ROW
#endif
