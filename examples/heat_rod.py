"""A rod's thermal diffusivity from its measured temperatures.

The model is numpy code as it is usually written: the temperature array is made with
``np.zeros`` and updated in place each step (interior by slices, the heated end entry by
entry), explicit finite differences of the heat equation. It differentiates unchanged: while
deltaad differentiates, an array your code makes with numpy's constructors takes duals by
assignment. The gradient of the misfit with respect to the diffusivity agrees with a central
difference, and scipy's minimizer, given value and gradient, recovers the diffusivity the
"measurements" were made with.
"""

import numpy as np
from scipy import optimize

import deltaad as ad

N, STEPS, DX, DT = 24, 150, 1.0 / 23, 2e-4


def temperatures(kappa):
    """The rod after STEPS steps: the left end heated (a ramp to 1), the right end held at 0."""
    u = np.zeros(N)
    r = kappa * DT / DX ** 2
    for step in range(STEPS):
        un = u.copy()
        un[1:-1] = u[1:-1] + r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        un[0] = min(1.0, step / 50.0)
        un[-1] = 0.0
        u = un
    return u


TRUE_KAPPA = 0.8
MEASURED = temperatures(TRUE_KAPPA)[::4]


def misfit(kappa):
    return np.sum((temperatures(kappa)[::4] - MEASURED) ** 2)


def main():
    k, h = 0.5, 1e-6
    g = ad.grad(misfit)(k)
    fd = (misfit(k + h) - misfit(k - h)) / (2 * h)
    assert abs(g - fd) < 1e-5 * abs(fd), (g, fd)

    vg = ad.value_and_grad(lambda p: misfit(p[0]))
    fit = optimize.minimize(vg, x0=np.array([0.5]), jac=True, method="L-BFGS-B",
                            bounds=[(0.1, 2.0)], options={"gtol": 1e-12, "ftol": 1e-15})
    assert abs(fit.x[0] - TRUE_KAPPA) < 1e-4, fit
    print("diffusivity recovered: %.6f (true %.1f) in %d evaluations; d misfit/d kappa at 0.5: "
          "%.6g (central difference %.6g)" % (fit.x[0], TRUE_KAPPA, fit.nfev, g, fd))


if __name__ == "__main__":
    main()
