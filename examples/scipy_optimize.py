"""Minimise the Rosenbrock function with scipy.optimize, deltaad supplying ``jac`` and ``hess``.

scipy calls our functions with plain arrays; deltaad turns the objective, written once in
numpy, into its gradient and Hessian. scipy's own closed-form ``rosen_der`` and
``rosen_hess`` check them.
"""

import numpy as np
from scipy import optimize

import deltaad as ad


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


jac = ad.grad(rosenbrock)
hess = ad.hessian(rosenbrock)


def main():
    rng = np.random.default_rng(0)
    x0 = rng.uniform(-1.5, 1.5, size=8)

    # the derivatives agree with scipy's hand-written ones
    assert np.allclose(jac(x0), optimize.rosen_der(x0), rtol=1e-12, atol=1e-10)
    assert np.allclose(hess(x0), optimize.rosen_hess(x0), rtol=1e-12, atol=1e-10)

    # Newton's method with the exact Hessian: a trust-region solver
    res = optimize.minimize(rosenbrock, x0, jac=jac, hess=hess, method="trust-exact")
    assert res.success, res.message
    assert np.allclose(res.x, 1.0, atol=1e-6), res.x

    # quasi-Newton with the gradient only takes more steps to the same point
    bfgs = optimize.minimize(rosenbrock, x0, jac=jac, method="BFGS")
    assert np.allclose(bfgs.x, 1.0, atol=1e-4), bfgs.x
    assert res.nit < bfgs.nit
    print("trust-exact: %d iterations, BFGS: %d, minimum at %s"
          % (res.nit, bfgs.nit, np.round(res.x, 6)))


if __name__ == "__main__":
    main()
