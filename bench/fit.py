"""Fits of time (or memory) against operation count, and the thesis's classification.

The thesis (Sigal, §6.1) fits linear and quadratic least-squares models and reads the two R²
values: linear when the linear fit is as good as the quadratic one, quadratic when the
quadratic fit is particularly good, nonlinear (super-linear) when the quadratic fit is much
better than the linear but not good. Our sizes are geometric (over decades, not a linear ramp),
so R² in linear space is dominated by the largest sizes; the log-log slope is reported beside
it and decides together with the R² values:

- ``linear``:    log-log slope <= 1.15 and linear R² >= 0.98
- ``quadratic``: y = a + b x + c x² with a, b >= 0 (up to noise) and c > 0 fits every point
                 within 30% (least squares on relative residuals, so small sizes count as
                 much as large ones), and the x² term is at least half of the largest value
- ``exponential`` (a kind of nonlinear): local log-log slopes keep growing and log(y) is
                 better explained by a straight line in x than in log x
- ``sublinear``: slope < 0.5 (e.g. memory that does not grow)
- ``nonlinear``: anything else that grows faster than linear (with only 3 points, every
                 super-linear series: three points fit any quadratic exactly)
- ``insufficient``: fewer than 3 points
"""

import math

import numpy as np

MIN_POINTS = 3


def _r2(y, yhat):
    y = np.asarray(y, dtype=float)
    ss_res = float(np.sum((y - yhat) ** 2))
    ss_tot = float(np.sum((y - np.mean(y)) ** 2))
    if ss_tot == 0.0:
        return 1.0 if ss_res == 0.0 else 0.0
    return 1.0 - ss_res / ss_tot


def polyfit(x, y, degree):
    """Least-squares polynomial ``y ~ c0 + c1 x + ... `` of ``degree``: (coefs low-first, R²)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    # scale x for conditioning; coefficients are returned for the unscaled x
    s = float(np.max(np.abs(x))) or 1.0
    v = np.vander(x / s, degree + 1, increasing=True)
    c, *_ = np.linalg.lstsq(v, y, rcond=None)
    yhat = v @ c
    coefs = [float(c[k]) / s ** k for k in range(degree + 1)]
    return coefs, _r2(y, yhat)


def loglog(x, y):
    """Slope, intercept and R² of ``log y ~ a + b log x`` (positive values only)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = (x > 0) & (y > 0)
    x, y = x[keep], y[keep]
    if len(x) < 2 or np.ptp(np.log(x)) == 0.0:
        return None, None, None
    lx, ly = np.log(x), np.log(y)
    b, a = np.polyfit(lx, ly, 1)
    return float(b), float(a), _r2(ly, a + b * lx)


def relative_quadratic(x, y):
    """``y ~ a + b x + c x²`` minimising relative residuals: (a, b, c), max |relative residual|."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    s = float(np.max(np.abs(x))) or 1.0
    v = np.vander(x / s, 3, increasing=True)
    c, *_ = np.linalg.lstsq(v / y[:, None], np.ones_like(y), rcond=None)
    resid = float(np.max(np.abs((v @ c) / y - 1.0)))
    return (float(c[0]), float(c[1]) / s, float(c[2]) / s ** 2), resid


def is_quadratic(x, y):
    """The quadratic class of the module docstring."""
    if len(x) < MIN_POINTS + 1 or min(y) <= 0:  # 3 points fit any quadratic exactly
        return False
    (a, b, c), resid = relative_quadratic(x, y)
    xm, ym = max(x), max(y)
    return (resid <= 0.30 and c > 0 and c * xm * xm >= 0.5 * ym
            and a >= -0.1 * min(y) and b * xm >= -0.1 * ym)


def local_slopes(x, y):
    """Log-log slopes between consecutive points."""
    out = []
    for (x0, y0), (x1, y1) in zip(zip(x, y), zip(x[1:], y[1:])):
        if x0 > 0 and x1 > x0 and y0 > 0 and y1 > 0:
            out.append(math.log(y1 / y0) / math.log(x1 / x0))
    return out


def is_exponential(x, y):
    """Growth that speeds up without bound: y ~ c * b^x rather than a power of x."""
    if len(x) < 4:
        return False
    sl = local_slopes(x, y)
    if len(sl) < 3 or sl[-1] < 2.5 or sl[-1] < sl[0] + 1.0:
        return False
    y = np.asarray(y, dtype=float)
    ly = np.log(y)
    b_lin, a_lin = np.polyfit(np.asarray(x, dtype=float), ly, 1)
    r2_exp = _r2(ly, a_lin + b_lin * np.asarray(x, dtype=float))
    _, _, r2_pow = loglog(x, y)
    return b_lin > 0 and r2_exp >= r2_pow


def doubling_ops(x, y):
    """For exponential growth: how many more operations double y (from log2 y ~ a + x / k)."""
    b, _ = np.polyfit(np.asarray(x, dtype=float), np.log2(np.asarray(y, dtype=float)), 1)
    return float(1.0 / b) if b > 0 else None


def analyse(x, y):
    """All the fits of one series ``y`` (times or bytes) against operation counts ``x``."""
    pts = sorted((float(a), float(b)) for a, b in zip(x, y) if a is not None and b is not None)
    x = [a for a, _ in pts]
    y = [b for _, b in pts]
    out = {"points": len(x), "slope": None, "loglog_r2": None, "linear_r2": None,
           "quadratic_r2": None, "linear": None, "quadratic": None, "class": "insufficient",
           "doubling_ops": None}
    if len(x) >= 2:
        out["slope"], _, out["loglog_r2"] = loglog(x, y)
    if len(x) < MIN_POINTS:
        return out
    lin, r2l = polyfit(x, y, 1)
    quad, r2q = polyfit(x, y, 2)
    out.update(linear=lin, quadratic=quad, linear_r2=r2l, quadratic_r2=r2q)
    out["class"] = classify(x, y, out)
    if out["class"] == "exponential":
        out["doubling_ops"] = doubling_ops(x, y)
    return out


def classify(x, y, fits=None):
    """The classification described in the module docstring."""
    if fits is None:
        return analyse(x, y)["class"]
    if len(x) < MIN_POINTS:
        return "insufficient"
    s = fits["slope"]
    r2l = fits["linear_r2"]
    if s is None:
        return "insufficient"
    if s < 0.5:
        return "sublinear"
    if s <= 1.15 and r2l >= 0.98:
        return "linear"
    if is_exponential(x, y):
        return "exponential"
    if is_quadratic(x, y):
        return "quadratic"
    if s <= 1.15:
        return "linear"  # noisy but not growing faster than linear
    return "nonlinear"


def slope_ratio(x, y_mode, y_base):
    """The thesis's slowdown ratio: slope of the mode's linear fit over the baseline's."""
    if len(x) < 2:
        return None
    (_, b_mode), _ = polyfit(x, y_mode, 1)
    (_, b_base), _ = polyfit(x, y_base, 1)
    if b_base <= 0:
        return None
    return b_mode / b_base
