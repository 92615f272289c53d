"""The cost of programs that mix array duals and scalar duals: ``grad(f)(x)`` against the plain
call ``f(x)`` (numpy and floats), side by side in one process. Scalar work whose adjoints are
floats sits below (in the backward sweep: after) array operations whose adjoints are arrays:
an array input read element by element, scalar duals packed into an array and reduced.
Alternating timings, the median of 15 per-round ratios (each the best of 3).

- ``recurrence``: lfilter's direct-form II recurrence written by hand over ``x.tolist()``
  (an array input read as scalars), the outputs packed by ``np.array`` and summed squared:
  about 9 scalar operations per sample;
- ``scalar_sum``: a list of floats, ``v * v * 0.5 + 0.25 * v`` per element (scalar duals), the
  results stacked into an array (``np.stack``) and summed squared: the sweep meets array
  cotangents at the top and sweeps every scalar binding after them;
- ``lfilter``: ``scipy.signal.lfilter`` differentiated in the signal (deltaad's rule runs the
  same recurrence on scalar duals), then ``np.sum(y ** 2)``.

    python -m bench.mixed 1000 10000       # sizes; prints name, n, slowdown, f(x) in us
"""
import statistics
import sys
import time

import numpy as np

import deltaad as ad

try:
    import scipy.signal as sg
except ImportError:  # scipy is optional: the lfilter row is reported missing
    sg = None

B0, B1, A1, A2 = 0.2, 0.3, -0.5, 0.1


def recurrence(x):
    z0 = z1 = 0.0
    ys = []
    for v in x.tolist():
        y = B0 * v + z0
        z0 = B1 * v + z1 - A1 * y
        z1 = -A2 * y
        ys.append(y)
    return np.sum(np.array(ys) ** 2)


def scalar_sum(xs):
    return np.sum(np.stack([v * v * 0.5 + 0.25 * v for v in xs]) ** 2)


def lfilter(x):
    return np.sum(sg.lfilter([B0, B1], [1.0, A1, A2], x) ** 2)


PROGRAMS = {"recurrence": (recurrence, False), "scalar_sum": (scalar_sum, True),
            "lfilter": (lfilter, False)}


def t(f, *a):
    s = time.perf_counter()
    f(*a)
    return time.perf_counter() - s


def slowdown(f, x, rounds=15):
    """``(median of alternating rounds of grad(f)(x) / f(x), f(x) in microseconds)``."""
    g = ad.grad(f)
    g(x)
    f(x)
    rs = []
    for _ in range(rounds):
        a = min(t(f, x) for _ in range(3))
        b = min(t(g, x) for _ in range(3))
        rs.append(b / a)
    return statistics.median(rs), min(t(f, x) for _ in range(5)) * 1e6


def main(sizes):
    print("# deltaad %s (backend %s)" % (ad.__file__, ad.backend))
    for n in sizes:
        x = np.linspace(-0.9, 1.1, n)
        for name, (f, as_list) in PROGRAMS.items():
            if f is lfilter and sg is None:
                print("%s\t%d\tscipy not installed" % (name, n))
                continue
            print("%s\t%d\t%.1f\t%.1f" % ((name, n) + slowdown(f, x.tolist() if as_list else x)),
                  flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000])
