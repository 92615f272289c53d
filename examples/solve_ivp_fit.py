"""Fit a damped oscillator's damping and stiffness with scipy's own ODE solver inside the loss.

The loss calls ``scipy.integrate.solve_ivp`` as anyone would, with the parameters closed over
by the right-hand side. deltaad differentiates the Runge-Kutta steps scipy took (its value is
scipy's, bit for bit), so ``value_and_grad`` of the loss is scipy.optimize's ``jac=True``. The
gradient is checked against finite differences of the same loss, and the fit against the
parameters that made the data, which come from the closed-form solution.
"""

import math

import numpy as np
from scipy import integrate, optimize

import deltaad as ad

TRUE = (0.3, 4.0)                             # damping c, stiffness k (x'' + c x' + k x = 0)
T_OBS = np.linspace(0.0, 6.0, 25)


def exact(c, k, t):
    """x(t) for x(0) = 1, x'(0) = 0 (under-damped)."""
    w = math.sqrt(k - c * c / 4.0)
    return np.exp(-c * t / 2.0) * (np.cos(w * t) + c / (2.0 * w) * np.sin(w * t))


DATA = exact(*TRUE, T_OBS)


def loss(p):
    c, k = p[0], p[1]
    sol = integrate.solve_ivp(lambda t, s: [s[1], -c * s[1] - k * s[0]], (0.0, 6.0),
                              [1.0, 0.0], t_eval=T_OBS, rtol=1e-9, atol=1e-11)
    return np.sum((sol.y[0] - DATA) ** 2)


def main():
    guess = np.array([0.5, 3.5])
    value, grad = ad.value_and_grad(loss)(guess)
    assert value == loss(guess)               # scipy's own value
    eps = 1e-6
    fd = [(loss(guess + eps * e) - loss(guess - eps * e)) / (2 * eps) for e in np.eye(2)]
    assert np.allclose(grad, fd, rtol=1e-5), (grad, fd)

    fit = optimize.minimize(ad.value_and_grad(loss), guess, jac=True, method="BFGS")
    assert fit.success, fit.message
    assert np.allclose(fit.x, TRUE, rtol=1e-5), fit.x
    print("fitted damping %.6f, stiffness %.6f (true %s) in %d gradient calls"
          % (fit.x[0], fit.x[1], TRUE, fit.njev))


if __name__ == "__main__":
    main()
