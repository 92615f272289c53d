"""The cost of differentiating scipy.stats's distributions unchanged: ``grad`` in one parameter
of a sum of a method over ``n`` points, against the plain call (the pattern of
:mod:`bench.library_slowdown`: the median of 15 alternating per-round ratios, each the best of 3).

    python -m bench.stats_slowdown 1 100     # sizes; prints name, n, slowdown, plain call in us
"""
import sys
import warnings

import numpy as np
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
}


def main(sizes):
    warnings.simplefilter("ignore")
    for n in sizes:
        x = np.linspace(0.1, 1.9, n)
        for name, make in CALLS.items():
            ratio, us = slowdown(make(x), 0.7 if "/ p" in name else 1.1)
            print("%s\t%d\t%.0f\t%.1f" % (name, n, ratio, us))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1, 100])
