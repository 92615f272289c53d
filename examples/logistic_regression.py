"""Logistic regression fitted by Newton's method, gradient and Hessian from deltaad.

The loss is the mean negative log-likelihood with a small ridge penalty, written with numpy
(``logaddexp`` keeps it stable). The Hessian's closed form, ``Xᵀ diag(p(1-p)) X / n + λI``,
checks deltaad's, and scipy's L-BFGS run on ``value_and_grad`` must find the same weights.
"""

import numpy as np
from scipy import optimize

import deltaad as ad

RIDGE = 1e-3


def loss(w, X, y):
    z = X @ w
    # log(1 + e^z) - y z, averaged: the negative log-likelihood of labels y in {0, 1}
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * RIDGE * np.sum(w * w)


def data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = np.hstack([np.ones((n, 1)), rng.normal(size=(n, d - 1))])
    w_true = np.array([-0.5, 2.0, -1.0, 0.5, 0.0])
    p = 1.0 / (1.0 + np.exp(-X @ w_true))
    y = (rng.uniform(size=n) < p).astype(float)
    return X, y, w_true


def main():
    X, y, w_true = data()
    grad = ad.grad(loss)
    hess = ad.hessian(loss)

    w = np.zeros(X.shape[1])
    for step in range(20):
        g = grad(w, X, y)
        if np.linalg.norm(g) < 1e-12:
            break
        w = w - np.linalg.solve(hess(w, X, y), g)
    assert np.linalg.norm(grad(w, X, y)) < 1e-12 and step < 10  # quadratic convergence

    p = 1.0 / (1.0 + np.exp(-X @ w))
    exact = (X.T * (p * (1.0 - p))) @ X / len(y) + RIDGE * np.eye(len(w))
    assert np.allclose(hess(w, X, y), exact, rtol=1e-10, atol=1e-14)

    lbfgs = optimize.minimize(ad.value_and_grad(loss), np.zeros_like(w), args=(X, y), jac=True,
                              method="L-BFGS-B", options={"gtol": 1e-10})
    assert np.allclose(lbfgs.x, w, atol=1e-5), (lbfgs.x, w)

    accuracy = np.mean((X @ w > 0) == (y > 0.5))
    assert accuracy > 0.75 and np.max(np.abs(w - w_true)) < 0.5
    print("Newton: %d steps, weights %s (true %s), accuracy %.2f"
          % (step, np.round(w, 3), w_true, accuracy))


if __name__ == "__main__":
    main()
