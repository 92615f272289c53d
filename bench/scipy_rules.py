"""The cost of scipy's functions with deltaad's scipy-valued rules (scipy.linalg, scipy.fft,
scipy.signal, scipy.stats.multivariate_normal): ``grad(f)(x)`` against the plain call ``f(x)``
for an m x m matrix (vector of m entries for the transforms and densities). A rule calls
scipy's function once for the value and deltaad's rules once for the derivative, so a
gradient costs at least two plain calls plus the reverse sweep. Alternating timings, the
median of 15 per-round ratios (each the best of 3).

    python -m bench.scipy_rules 4 32        # matrix sizes; prints name, m, slowdown, f(x) in us
"""
import sys

import numpy as np
import scipy.fft as sf
import scipy.linalg as sl
import scipy.signal as sg
import scipy.stats as st

from .library_slowdown import slowdown


def _funcs(m):
    rng = np.random.default_rng(0)
    base = (m + 1) * np.eye(m) + rng.uniform(-0.5, 0.5, (m, m))
    spd = base @ base.T
    b = rng.standard_normal(m)
    k = rng.standard_normal(5)
    pts = rng.standard_normal((10, m))
    return {
        "scipy.linalg.solve": lambda a: np.sum(sl.solve(base + a, b)),
        "scipy.linalg.cho_factor+cho_solve": lambda a: np.sum(sl.cho_solve(sl.cho_factor(spd + a @ a.T), b)),
        "scipy.linalg.expm": lambda a: np.sum(sl.expm(a / m)),
        "scipy.linalg.sqrtm": lambda a: np.sum(sl.sqrtm(spd + a @ a.T)),
        "scipy.linalg.logm": lambda a: np.sum(sl.logm(spd + a @ a.T)),
        "scipy.linalg.eigh (values)": lambda a: np.sum(sl.eigh(spd + a @ a.T, eigvals_only=True)),
        "scipy.signal.fftconvolve": lambda a: np.sum(sg.fftconvolve(a[0], k) ** 2),
        "scipy.fft.rfft": lambda a: np.sum(np.abs(sf.rfft(a[0]))),
        "multivariate_normal.logpdf (in cov)": lambda a: np.sum(st.multivariate_normal.logpdf(pts, b, spd + a @ a.T)),
    }


def main(sizes):
    for m in sizes:
        x = np.linspace(-0.3, 0.4, m * m).reshape(m, m)
        for name, f in _funcs(m).items():
            print("%s\t%d\t%.0f\t%.1f" % ((name, m) + slowdown(f, x)), flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [4, 32])
