"""The cost of differentiating scipy.stats's distributions unchanged: ``grad`` in one parameter
of a sum of a method over ``n`` points, against the plain call (the pattern of
:mod:`bench.library_slowdown`: the median of 15 alternating per-round ratios, each the best of 3).

    python -m bench.stats_slowdown 1 100     # sizes; prints name, n, slowdown, plain call in us
    python -m bench.stats_slowdown --shapes 1 100   # only the shape-parameter rows
"""
import sys
import warnings

import numpy as np
import scipy.optimize as so
import scipy.stats as st

from bench.library_slowdown import slowdown

CALLS = {
    "norm.logpdf / loc": lambda x: lambda v: np.sum(st.norm.logpdf(x, v, 1.3)),
    "t.cdf / x (stdtr)": lambda x: lambda v: np.sum(st.t.cdf(x * v, 4.5)),
    "chi2.sf / scale (chdtrc)": lambda x: lambda v: np.sum(st.chi2.sf(x + 1.0, 3.5, scale=v)),
    "f.cdf / x (fdtr)": lambda x: lambda v: np.sum(st.f.cdf(x * v + 1.0, 4.5, 6.5)),
    "beta.pdf / a (_beta_pdf)": lambda x: lambda v: np.sum(st.beta.pdf(x / 2.0, v, 3.5)),
    "skewnorm.cdf / a (_skewnorm_cdf)": lambda x: lambda v: np.sum(st.skewnorm.cdf(x, v)),
    "binom.cdf / p (_binom_cdf)": lambda x: lambda v: np.sum(st.binom.cdf(np.floor(x * 5), 10, v)),
    "poisson.cdf / mu (pdtr)": lambda x: lambda v: np.sum(st.poisson.cdf(np.floor(x * 3), v)),
    "triang.pdf / x (_lazyselect)": lambda x: lambda v: np.sum(st.triang.pdf(x / 2.0 * v, 0.3)),
    # the shape parameters of the incomplete gamma and beta functions (numerical derivatives)
    "gamma.cdf / a (gammainc)": lambda x: lambda v: np.sum(st.gamma.cdf(x * 2.0, v * 2.0)),
    "chi2.sf / df (chdtrc)": lambda x: lambda v: np.sum(st.chi2.sf(x * 3.0, v * 3.0)),
    "beta.cdf / a (betainc)": lambda x: lambda v: np.sum(st.beta.cdf(x / 2.0, v * 2.0, 3.5)),
    "t.cdf / df (stdtr)": lambda x: lambda v: np.sum(st.t.cdf(x - 1.0, v * 4.0)),
    "f.cdf / dfn (fdtr)": lambda x: lambda v: np.sum(st.f.cdf(x, v * 4.0, 6.5)),
    "gamma.logcdf / a (gammaincinv)": lambda x: lambda v: np.sum(st.gamma.logcdf(x * 2.0, v * 2.0)),
    # scipy.optimize.brentq's root, by the implicit function theorem
    "brentq / args (x^3 + v x - 2)": lambda x: lambda v: sum(
        so.brentq(lambda r, c: r ** 3 + c * r - 2.0, -5.0, 5.0, args=(v * c,)) for c in x),
    "exponnorm.ppf / q (brentq)": lambda x: lambda v: np.sum(st.exponnorm.ppf(x / 2.0 * v, 1.5)),
}
# the shape-derivative rows (the table in docs/arrays.md)
SHAPES = [k for k in CALLS if k.startswith(("gamma.", "chi2.sf / df", "beta.cdf", "t.cdf / df",
                                            "f.cdf / dfn", "brentq", "exponnorm"))]


def main(sizes, names=None):
    warnings.simplefilter("ignore")
    for n in sizes:
        x = np.linspace(0.1, 1.9, n)
        for name, make in CALLS.items():
            if names is not None and name not in names:
                continue
            ratio, us = slowdown(make(x), 0.7 if "/ p" in name else 1.1)
            print("%s\t%d\t%.0f\t%.1f" % (name, n, ratio, us))


if __name__ == "__main__":
    args = sys.argv[1:]
    shapes = "--shapes" in args  # only the shape-derivative rows
    main([int(a) for a in args if a != "--shapes"] or [1, 100], SHAPES if shapes else None)
