"""The cost of differentiating library code unchanged: ``grad(f)(x)`` against the plain call
``f(x)`` for scipy and numpy functions that convert their input with ``np.asarray`` (so they
run on the object array of the input's scalar duals). Alternating timings, the median of 15
per-round ratios (each the best of 3), so a busy machine moves both sides alike.

    python -m bench.library_slowdown 5 100      # sizes of x; prints name, n, slowdown, f(x) in us
"""
import statistics
import sys
import time

import numpy as np
import scipy.integrate as si
import scipy.optimize as so
import scipy.signal as sg
import scipy.spatial.distance as sd
import scipy.special as sp

import deltaad as ad

FUNCS = {
    "scipy.optimize.rosen": so.rosen,
    "scipy.optimize.rosen_der (sum)": lambda x: so.rosen_der(x).sum(),
    "scipy.signal.convolve": lambda x: np.sum(sg.convolve(x, np.array([1.0, -2.0, 0.5]))),
    "scipy.integrate.trapezoid": lambda x: si.trapezoid(x),
    "scipy.integrate.simpson": lambda x: si.simpson(x),
    "scipy.special.softmax": lambda x: np.sum(sp.softmax(x) * x),
    "scipy.spatial.distance.euclidean": lambda x: sd.euclidean(x, np.ones(x.size)),
    "numpy.polyval (no rule)": lambda x: np.polyval(x, 0.7),
    "numpy.convolve (no rule)": lambda x: np.sum(np.convolve(x, x)),
}


def t(f, *a):
    s = time.perf_counter()
    f(*a)
    return time.perf_counter() - s


def slowdown(f, x):
    """``(median of 15 alternating rounds of grad(f)(x) / f(x), f(x) in microseconds)``."""
    g = ad.grad(f)
    g(x)
    f(x)
    rs = []
    for _ in range(15):
        a = min(t(f, x) for _ in range(3))
        b = min(t(g, x) for _ in range(3))
        rs.append(b / a)
    return statistics.median(rs), min(t(f, x) for _ in range(5)) * 1e6


def main(sizes):
    for n in sizes:
        x = np.linspace(0.1, 1.9, n)
        for name, f in FUNCS.items():
            print("%s\t%d\t%.0f\t%.1f" % ((name, n) + slowdown(f, x)))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [5, 100])
