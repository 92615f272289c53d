"""Fit the four rates of a Lotka-Volterra predator-prey model to observations.

The model is integrated by a plain-Python Runge-Kutta loop on floats; deltaad's forward mode
gives the Jacobian of the residuals with respect to the parameters (four inputs, many
outputs: one ``jvp`` per parameter), which scipy's least-squares solver uses. The data
come from scipy's own adaptive integrator, so the fit is checked against an independent
solver.
"""

import numpy as np
from scipy import integrate, optimize

import deltaad as ad

TRUE = np.array([1.1, 0.4, 0.1, 0.4])      # prey growth, predation, predator growth, death
X0, Y0 = 10.0, 5.0
T_OBS = np.linspace(0.5, 10.0, 20)
STEPS_PER_OBS = 10


def rates(p, x, y):
    a, b, c, d = p
    return a * x - b * x * y, c * x * y - d * y


def simulate(p):
    """Prey and predator at the observation times, by classic RK4 (fixed steps)."""
    p = [p[i] for i in range(4)]            # Python floats (or scalar duals): fast arithmetic
    if isinstance(p[0], np.floating):
        p = [float(v) for v in p]
    x, y, t, out = X0, Y0, 0.0, []
    for t_obs in T_OBS:
        h = (t_obs - t) / STEPS_PER_OBS
        for _ in range(STEPS_PER_OBS):
            k1 = rates(p, x, y)
            k2 = rates(p, x + 0.5 * h * k1[0], y + 0.5 * h * k1[1])
            k3 = rates(p, x + 0.5 * h * k2[0], y + 0.5 * h * k2[1])
            k4 = rates(p, x + h * k3[0], y + h * k3[1])
            x = x + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0])
            y = y + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1])
        t = t_obs
        out += [x, y]
    return out


def observations():
    sol = integrate.solve_ivp(lambda t, s: rates(TRUE, *s), (0.0, T_OBS[-1]), [X0, Y0],
                              t_eval=T_OBS, rtol=1e-11, atol=1e-11)
    return sol.y.T.ravel()                  # x(t1), y(t1), x(t2), ...


def main():
    data = observations()

    def residuals(p):
        return ad.stack(simulate(p)) - data

    jacobian = ad.jacfwd(residuals)         # (40, 4): forward mode, one pass per parameter

    guess = np.array([1.0, 0.5, 0.15, 0.3])
    # the Jacobian agrees with central finite differences at the guess
    eps = 1e-6
    fd = np.stack([(residuals(guess + eps * e) - residuals(guess - eps * e)) / (2 * eps)
                   for e in np.eye(4)], axis=1)
    assert np.allclose(jacobian(guess), fd, rtol=1e-5, atol=1e-5)
    # ... and reverse mode's (one backward sweep per residual)
    assert np.allclose(jacobian(guess), ad.jacrev(residuals)(guess), rtol=1e-12, atol=1e-12)

    # rates stay positive (bounds): a wild trial step would make the populations overflow
    fit = optimize.least_squares(residuals, guess, jac=jacobian, bounds=(0.0, 5.0))
    assert fit.success, fit.message
    assert np.allclose(fit.x, TRUE, rtol=1e-4), fit.x
    print("fitted rates %s (true %s) in %d evaluations" % (np.round(fit.x, 5), TRUE, fit.nfev))


if __name__ == "__main__":
    main()
