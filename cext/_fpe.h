/* Clearing the floating-point exception flags before a numpy loop whose flags are read after.
 *
 * glibc's feclearexcept on x86-64 saves and reloads the whole x87 environment (fnstenv,
 * fldenv) and MXCSR: about 65 ns here, against 11 ns for fetestexcept. The flags are almost
 * always clear already (a raising loop sends the operation the Python way, which leaves them
 * as numpy does), so they are tested first and cleared only when set: what numpy's own
 * npy_clear_floatstatus does, for the same reason. The flags after the call are the same. */
#ifndef DELTAAD_FPE_H
#define DELTAAD_FPE_H

#include <fenv.h>

static inline void dad_clear_fpe(int excepts) {
    if (fetestexcept(excepts))
        feclearexcept(excepts);
}

#endif
