/* The marks of the mixed sweep (deltaad._core, Sweep): an adjoint slot of the C array holds a
 * float, or one of two signalling NaNs: "untouched" (None) or "the adjoint is an object, kept
 * in the sweep's list". No arithmetic produces a signalling NaN (an operation on one gives a
 * quiet NaN), so a float the sweep computes is never taken for a mark; a float that comes from
 * outside (a seed, a rule's cotangent) with a mark's bits is kept as an object. The marks are
 * told apart by their bits, never compared as floats. */
#ifndef DELTAAD_MIXED_H
#define DELTAAD_MIXED_H
#include <stdint.h>
#include <string.h>

#define DA_MARK_NONE 0x7FF4000000000001ULL
#define DA_MARK_OBJ 0x7FF4000000000002ULL

static inline uint64_t da_bits(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }
static inline double da_from_bits(uint64_t u) { double x; memcpy(&x, &u, sizeof x); return x; }

#endif
