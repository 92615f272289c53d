"""Programs written as users write them, timed against their own plain run.

The harness's programs are written once over a namespace (``ns.exp``) so that every mode and
peer runs the same code. Code people already have is written otherwise: ``import math`` and
``math.exp``, int constants (``1 - p``, ``2 * x``), ``math.hypot`` and ``math.atan2``, data in
numpy arrays read element by element, ``np.exp`` of a float. Each of those has a cost of its
own under differentiation (a switched module's look-up, a constant of another type, numpy's
dispatch), which this suite shows. The ``np_`` programs are small numpy programs as users
write them -- a model's loss over a flat parameter vector, broadcasting, a scalar parameter
meeting arrays, a loop over an array's entries -- where the gradient's fixed cost per call
and the cost of each array operation show::

    .venv/bin/python -m bench.userstyle            # every program, 5 alternating pairs
    .venv/bin/python -m bench.userstyle springs 9  # one program, 9 pairs

Each line: the plain run's median time, ``deltaad.grad``'s, and the median of the per-pair
ratios (plain and gradient timed alternately in one process). ``tests/test_bench.py`` checks
every program's gradient against central differences (nothing is timed there).
"""

import math
import random
import statistics
import sys
import time

import numpy as np

_rng = random.Random(0)
_DATA = [([_rng.gauss(0, 1) for _ in range(5)], _rng.random() < 0.5) for _ in range(2000)]
_SERIES = np.linspace(0.1, 1.0, 5000)


def pendulum(params):
    """A damped pendulum by explicit Euler: ``math.sin`` and augmented assignments."""
    L, g, damp = params
    th, om = 1.0, 0.0
    dt = 0.001
    for _ in range(20000):
        acc = -(g / L) * math.sin(th) - damp * om
        om += acc * dt
        th += om * dt
    return th ** 2 + om ** 2


def logistic(w):
    """Logistic regression's loss over a list of samples: ``sum`` of a generator, ``zip``,
    ``math.exp`` and ``math.log``, int constants (``1 - y``)."""
    loss = 0.0
    for x, y in _DATA:
        z = sum(wi * xi for wi, xi in zip(w, x))
        p = 1.0 / (1.0 + math.exp(-z))
        loss -= y * math.log(p) + (1 - y) * math.log(1 - p)
    return loss / len(_DATA)


def rosen(x):
    """Rosenbrock's function as a ``sum`` over a generator with ``** 2`` and int constants."""
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def rk4(p):
    """Lotka-Volterra by RK4 with tuples and a nested function."""
    a, b, c, d = p

    def f(u, v):
        return a * u - b * u * v, -c * v + d * u * v
    u, v, h = 1.0, 1.0, 0.01
    for _ in range(5000):
        k1 = f(u, v)
        k2 = f(u + h / 2 * k1[0], v + h / 2 * k1[1])
        k3 = f(u + h / 2 * k2[0], v + h / 2 * k2[1])
        k4 = f(u + h * k3[0], v + h * k3[1])
        u += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        v += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return u + v


def black_scholes(p):
    """A strip of Black-Scholes call prices: ``math.log``, ``math.sqrt``, ``math.erf`` and
    ``math.exp`` of duals and of plain numbers."""
    S, K, r, sigma = p
    total = 0.0
    for i in range(3000):
        T = 0.1 + i * 0.001
        d1 = (math.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * math.sqrt(T))
        d2 = d1 - sigma * math.sqrt(T)
        n1 = 0.5 * (1 + math.erf(d1 / math.sqrt(2)))
        n2 = 0.5 * (1 + math.erf(d2 / math.sqrt(2)))
        total += S * n1 - K * math.exp(-r * T) * n2
    return total


def clipped(xs):
    """Clipping by the builtins ``max``/``min`` and ``abs``."""
    s = 0.0
    for x in xs:
        s += max(min(x, 1.0), -1.0) ** 2 + abs(x)
    return s


def springs(pos):
    """A chain of springs in the plane, points as tuples: ``math.hypot`` and ``math.atan2``."""
    pts = [(pos[2 * i], pos[2 * i + 1]) for i in range(len(pos) // 2)]
    e = 0.0
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        e += (math.hypot(x1 - x0, y1 - y0) - 1.0) ** 2
    for x, y in pts:
        e += 0.1 * math.atan2(y, x) ** 2
    return e


def series_fit(w):
    """A least-squares fit to data held in a numpy array, read element by element: numpy's
    float scalars meet duals on both sides (``w * t`` and ``t - ...``)."""
    a, b = w
    s = 0.0
    for t in _SERIES:
        s += (t - (a * t + b)) ** 2
    return s


def numpy_scalars(p):
    """``np.exp``/``np.sin`` of a float, as code mixing numpy into scalar loops writes it."""
    (x,) = p
    s = 0.0
    for k in range(3000):
        s = s + np.exp(-x * k * 1e-3) * np.sin(x)
    return s


_nrng = np.random.default_rng(0)
_LX = _nrng.standard_normal((200, 5))
_LY = (_nrng.random(200) > 0.5).astype(float)
_MX = _nrng.standard_normal((64, 2))
_MY = np.sin(_MX[:, 0]) * _MX[:, 1]
_SX = _nrng.standard_normal((32, 20))
_SY = _nrng.integers(0, 10, 32)
_PX = np.linspace(-1, 1, 100)
_PY = np.cos(3 * _PX)


def np_logreg(w):
    """Logistic regression over 200 samples in numpy: ``X @ w``, ``np.log1p(np.exp(-z))``,
    ``np.mean``."""
    z = _LX @ w
    return np.mean(np.log1p(np.exp(-z)) + (1 - _LY) * z)


def np_mlp(p):
    """A 2-16-1 tanh network's squared error on 64 points, its weights sliced from one flat
    parameter vector (what an optimiser hands over)."""
    W1 = p[:32].reshape(2, 16)
    b1 = p[32:48]
    W2 = p[48:64].reshape(16, 1)
    h = np.tanh(_MX @ W1 + b1)
    out = (h @ W2)[:, 0] + p[64]
    return np.mean((out - _MY) ** 2)


def np_energy(x):
    """Pairwise inverse distances of 20 particles in the plane by broadcasting, and a
    confining term."""
    P = x.reshape(-1, 2)
    diff = P[:, None, :] - P[None, :, :]
    r2 = np.sum(diff * diff, axis=-1) + np.eye(len(P))
    return np.sum(np.triu(1.0 / np.sqrt(r2), 1)) + 0.1 * np.sum(P ** 2)


def np_oscill(k):
    """Ten damped oscillators by explicit Euler on numpy state, 200 steps."""
    x = np.ones(10)
    v = np.zeros(10)
    dt = 0.01
    for _ in range(200):
        a = -k * x - 0.1 * v
        v = v + dt * a
        x = x + dt * v
    return np.sum(x ** 2)


def np_softmax(W):
    """Softmax cross-entropy of a linear layer on 32 samples: ``max``/``exp``/``log`` along
    an axis with ``keepdims``, the labels' entries by fancy indexing."""
    z = _SX @ W.reshape(20, 10)
    z = z - z.max(axis=1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -np.mean(lp[np.arange(32), _SY])


def np_polyfit(c):
    """A polynomial's least-squares error by Horner's rule over the coefficients' entries
    (each a scalar meeting an array)."""
    acc = np.zeros_like(_PX)
    for ci in c:
        acc = acc * _PX + ci
    return np.sum((acc - _PY) ** 2)


def np_rosen_loop(x):
    """Rosenbrock's function written with ``x[i]`` over the ndarray ``scipy.optimize`` hands
    an objective: element reads of the array being differentiated."""
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))


PROGRAMS = {
    "pendulum": (pendulum, [1.0, 9.81, 0.1]),
    "logistic": (logistic, [0.1, -0.2, 0.3, 0.0, 0.05]),
    "rosen": (rosen, [_rng.uniform(-1, 1) for _ in range(20000)]),
    "rk4": (rk4, [1.1, 0.4, 0.4, 0.1]),
    "blackscholes": (black_scholes, [100.0, 95.0, 0.02, 0.25]),
    "clipped": (clipped, [_rng.uniform(-2, 2) for _ in range(50000)]),
    "springs": (springs, [_rng.uniform(-2, 2) for _ in range(20000)]),
    "series_fit": (series_fit, [0.5, 0.1]),
    "numpy_scalars": (numpy_scalars, [0.7]),
    "np_logreg": (np_logreg, _nrng.standard_normal(5)),
    "np_mlp": (np_mlp, _nrng.standard_normal(65) * 0.3),
    "np_energy": (np_energy, _nrng.standard_normal(40)),
    "np_oscill": (np_oscill, _nrng.random(10) + 0.5),
    "np_softmax": (np_softmax, _nrng.standard_normal(200) * 0.1),
    "np_polyfit": (np_polyfit, _nrng.standard_normal(8)),
    "np_rosen_loop": (np_rosen_loop, _nrng.uniform(-1.0, 1.0, 200)),
}


def _time(f, x, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        f(x)
    return (time.perf_counter() - t0) / reps


def measure(name, pairs=5):
    """``(plain median s, gradient median s, median ratio)`` of program ``name``."""
    import deltaad

    f, x = PROGRAMS[name]
    g = deltaad.grad(f)
    g(x)
    reps = max(1, int(2e-3 / max(_time(f, x, 1), 1e-7)))  # timings of ~2 ms at least
    plain, grad, ratios = [], [], []
    for _ in range(pairs):
        a = _time(f, x, reps)
        b = _time(g, x, reps)
        plain.append(a)
        grad.append(b)
        ratios.append(b / a)
    return statistics.median(plain), statistics.median(grad), statistics.median(ratios)


def main(argv):
    names = [a for a in argv if a in PROGRAMS] or list(PROGRAMS)
    pairs = next((int(a) for a in argv if a.isdigit()), 5)
    print("| program | plain | gradient | gradient ÷ plain |")
    print("| --- | --- | --- | --- |")
    for name in names:
        a, b, r = measure(name, pairs)
        print("| %s | %.3f ms | %.3f ms | %.2f |" % (name, a * 1e3, b * 1e3, r), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
