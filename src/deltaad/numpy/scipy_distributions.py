"""scipy's private distribution ufuncs (``scipy.special._ufuncs._beta_pdf``, ``_binom_cdf``,
``_skewnorm_ppf``...) on duals: scipy.stats's ``beta``, ``binom``, ``nbinom``, ``bernoulli``,
``skewnorm``, ``cauchy`` and ``invgauss`` compute with them.

Each is an elementwise primitive of all its arguments whose value is scipy's own ufunc on the
plain values (the same bits as without deltaad) and whose partials are closed forms written with
numpy and scipy.special functions (so they differentiate again): densities for the cumulative
functions, ``1 / density`` at the quantile for the quantile functions (the implicit function
theorem), the log-density's derivatives for the densities. A partial with no closed form (a
cumulative function's or quantile's derivative in a parameter of the incomplete beta
function) is computed numerically (:mod:`deltaad.incomplete`), to first order: a second
derivative there raises an error naming the ufunc and the argument, never a silent zero. They are
late rules keyed ``scipy.special._ufuncs.<name>``: taken up when scipy has been imported.

Choices: the count ``k`` of the binomial functions is floored, as scipy does, and is not
differentiable (a dual there is an error); at ``p = 0`` or ``1`` the pmf's derivative is the
one-sided limit (terms with a zero count are dropped, not ``0 * inf``).
"""

import sys

from deltaad._plainnumpy import np

from .. import incomplete
from ..trace import is_dual
from ..trace import value as strip
from . import registry
from .array import apply
from .elementwise import elementwise_primitive

_MODULE = "scipy.special._ufuncs."
_SQRT_2PI = float(np.sqrt(2.0 * np.pi))


def _sp():
    return sys.modules["scipy.special"]


def _none(name, arg, why="it has no closed form"):
    def partial(*args):
        raise NotImplementedError(
            "deltaad: %s%s has no derivative in %s (%s; deltaad gives no approximate one). "
            "Pass %s as a plain number." % (_MODULE, name, arg, why, arg))

    return partial


def _count(name):
    return _none(name, "the count k", "k is an integer, floored: piecewise constant")


def _term(c, y, over):
    """``y * c / over``, 0 where the count ``c`` is 0 (the term is absent, even at ``over = 0``:
    the one-sided derivative at p = 0 or 1)."""
    zero = _value(c) == 0
    return np.where(zero, 0.0, y * c / np.where(zero, 1.0, over))


def _value(x):
    return np.asarray(strip(x))


# --------------------------------------------------------------------------------------------
# beta


def _beta_pdf_dx(x, a, b, y):
    return y * ((a - 1.0) / x - (b - 1.0) / (1.0 - x))


def _beta_pdf_da(x, a, b, y):
    sp = _sp()
    return y * (np.log(x) - sp.digamma(a) + sp.digamma(a + b))


def _beta_pdf_db(x, a, b, y):
    sp = _sp()
    return y * (np.log1p(-x) - sp.digamma(b) + sp.digamma(a + b))


def _beta_ppf_dp(p, a, b, y):
    return 1.0 / _sp()._ufuncs._beta_pdf(y, a, b)


def _plain(name, arg, vals):
    """The shape partials below are computed numerically on plain values (first order)."""
    for v in vals:
        if is_dual(v):
            raise NotImplementedError(
                "deltaad: %s%s differentiates in %s to first order only (that derivative is "
                "computed numerically); a second derivative involving %s is not supported"
                % (_MODULE, name, arg, arg))


def _beta_ppf_shape(j):
    """d/da (``j = 0``) or d/db of the quantile ``y``: ``-I_a / I_x`` at ``y`` (the implicit
    function theorem on ``betainc(a, b, y) = p``)."""
    name = "ab"[j]

    def partial(p, a, b, y):
        _plain("_beta_ppf", name, (p, a, b, y))
        d = incomplete.betainc_dab_of(a, b, y)[j]
        return -d / _sp()._ufuncs._beta_pdf(y, a, b)

    return partial


# --------------------------------------------------------------------------------------------
# binom, nbinom: k is floored; the cumulative functions' derivatives in p are beta densities


def _binom_pmf_dp(k, n, p, y):
    # y (k / p - (n - k) / (1 - p)), each term dropped where its count is 0
    return _term(k, y, p) - _term(n - k, y, 1.0 - p)


def _binom_cdf_dp(k, n, p, y):
    # cdf = I_{1-p}(n - k, k + 1) for 0 <= k < n: d/dp = -(1-p)^(n-k-1) p^k / B(n-k, k+1)
    sp = _sp()
    kf = np.floor(_value(k))
    inside = (kf >= 0) & (kf < _value(n))
    nn = np.where(inside, n - kf, 1.0)
    d = np.exp(sp.xlogy(kf, p) + sp.xlog1py(nn - 1.0, -p) - sp.betaln(nn, kf + 1.0))
    return np.where(inside, -d, 0.0)


def _binom_sf_dp(k, n, p, y):
    return -_binom_cdf_dp(k, n, p, y)


def _nbinom_pmf_dn(k, n, p, y):
    sp = _sp()
    return y * (sp.digamma(k + n) - sp.digamma(n) + np.log(p))


def _nbinom_pmf_dp(k, n, p, y):
    return _term(n, y, p) - _term(k, y, 1.0 - p)


def _nbinom_cdf_dp(k, n, p, y):
    # cdf = I_p(n, k + 1): d/dp = p^(n-1) (1-p)^k / B(n, k+1)
    sp = _sp()
    kf = np.floor(_value(k))
    ok = kf >= 0
    kk = np.where(ok, kf, 0.0)
    d = np.exp(sp.xlogy(n - 1.0, p) + sp.xlog1py(kk, -p) - sp.betaln(n, kk + 1.0))
    return np.where(ok, d, 0.0)


def _nbinom_sf_dp(k, n, p, y):
    return -_nbinom_cdf_dp(k, n, p, y)


def _nbinom_cdf_dn(k, n, p, y):
    # cdf = I_p(n, k + 1): d/dn is the incomplete beta function's derivative in a
    _plain("_nbinom_cdf", "n", (k, n, p, y))
    kf = np.floor(_value(k))
    ok = kf >= 0
    return np.where(ok, incomplete.betainc_dab_of(n, np.where(ok, kf, 0.0) + 1.0, p)[0], 0.0)


def _nbinom_sf_dn(k, n, p, y):
    _plain("_nbinom_sf", "n", (k, n, p, y))
    return -_nbinom_cdf_dn(k, n, p, y)


# --------------------------------------------------------------------------------------------
# skewnorm(x, loc, scale, a): density 2 phi(z) Phi(a z) / scale; d cdf / d a is
# -exp(-z^2 (1 + a^2) / 2) / (pi (1 + a^2)) (the derivative of Owen's T function)


def _z(x, loc, scale):
    return (x - loc) / scale


def _skewnorm_density(z, a):
    sp = _sp()
    return 2.0 * np.exp(-0.5 * (z * z)) / _SQRT_2PI * sp.ndtr(a * z)


def _skewnorm_cdf_da_z(z, a):
    s = 1.0 + a * a
    return -np.exp(-0.5 * (z * z) * s) / (np.pi * s)


def _skewnorm_cdf_partials():
    def dx(x, loc, scale, a, y):
        return _skewnorm_density(_z(x, loc, scale), a) / scale

    def dloc(x, loc, scale, a, y):
        return -dx(x, loc, scale, a, y)

    def dscale(x, loc, scale, a, y):
        z = _z(x, loc, scale)
        return -z * _skewnorm_density(z, a) / scale

    def da(x, loc, scale, a, y):
        return _skewnorm_cdf_da_z(_z(x, loc, scale), a)

    return (dx, dloc, dscale, da)


def _skewnorm_quantile_partials(sign):
    """Partials of the quantile ``y`` (ppf: ``sign = 1``; isf, of ``1 - q``: ``sign = -1``):
    the implicit function theorem on ``cdf((y - loc) / scale, a) = q``."""

    def dq(q, loc, scale, a, y):
        return sign * scale / _skewnorm_density(_z(y, loc, scale), a)

    def dloc(q, loc, scale, a, y):
        return np.ones_like(_value(y))

    def dscale(q, loc, scale, a, y):
        return _z(y, loc, scale)

    def da(q, loc, scale, a, y):
        z = _z(y, loc, scale)
        return -scale * _skewnorm_cdf_da_z(z, a) / _skewnorm_density(z, a)

    return (dq, dloc, dscale, da)


# --------------------------------------------------------------------------------------------
# cauchy(q, loc, scale): y = loc + scale tan(pi (q - 1/2)) (isf: of 1 - q)


def _cauchy_partials(sign):
    def dq(q, loc, scale, y):
        z = _z(y, loc, scale)
        return sign * np.pi * scale * (1.0 + z * z)

    def dloc(q, loc, scale, y):
        return np.ones_like(_value(y))

    def dscale(q, loc, scale, y):
        return _z(y, loc, scale)

    return (dq, dloc, dscale)


# --------------------------------------------------------------------------------------------
# invgauss(q, mu, s) (boost's inverse Gaussian: mean mu, shape s): the density at x is
# sqrt(s / (2 pi x^3)) exp(-s (x - mu)^2 / (2 mu^2 x)); with r = sqrt(s / x),
# cdf = Phi(r (x/mu - 1)) + exp(2 s / mu) Phi(-r (x/mu + 1)), whose derivatives are
# d/dmu = -(2 s / mu^2) exp(2 s / mu) Phi(B) and d/ds = -phi(A) r / s + (2 / mu) exp(2 s / mu)
# Phi(B) (the phi terms of the chain rule cancel: phi(A) = exp(2 s / mu) phi(B)).


def _invgauss_density(x, mu, s):
    return np.sqrt(s / (2.0 * np.pi * x ** 3)) * np.exp(-s * (x - mu) ** 2 / (2.0 * mu * mu * x))


def _invgauss_tail(x, mu, s):
    """``exp(2 s / mu) Phi(B)``, in logarithms (each factor alone may overflow)."""
    r = np.sqrt(s / x)
    return np.exp(2.0 * s / mu + _sp().log_ndtr(-r * (x / mu + 1.0)))


def _invgauss_partials(sign):
    def dq(q, mu, s, y):
        return sign / _invgauss_density(y, mu, s)

    def dmu(q, mu, s, y):
        fmu = -(2.0 * s / (mu * mu)) * _invgauss_tail(y, mu, s)
        return -fmu / _invgauss_density(y, mu, s)

    def ds(q, mu, s, y):
        r = np.sqrt(s / y)
        a = r * (y / mu - 1.0)
        phi_a = np.exp(-0.5 * (a * a)) / _SQRT_2PI
        fs = -phi_a * r / s + (2.0 / mu) * _invgauss_tail(y, mu, s)
        return -fs / _invgauss_density(y, mu, s)

    return (dq, dmu, ds)


# --------------------------------------------------------------------------------------------

RULES = {
    "_beta_pdf": (_beta_pdf_dx, _beta_pdf_da, _beta_pdf_db),
    "_beta_ppf": (_beta_ppf_dp, _beta_ppf_shape(0), _beta_ppf_shape(1)),
    "_binom_pmf": (_count("_binom_pmf"), _none("_binom_pmf", "n", "n is a count"),
                   _binom_pmf_dp),
    "_binom_cdf": (_count("_binom_cdf"), _none("_binom_cdf", "n", "n is a count"),
                   _binom_cdf_dp),
    "_binom_sf": (_count("_binom_sf"), _none("_binom_sf", "n", "n is a count"), _binom_sf_dp),
    "_nbinom_pmf": (_count("_nbinom_pmf"), _nbinom_pmf_dn, _nbinom_pmf_dp),
    "_nbinom_cdf": (_count("_nbinom_cdf"), _nbinom_cdf_dn, _nbinom_cdf_dp),
    "_nbinom_sf": (_count("_nbinom_sf"), _nbinom_sf_dn, _nbinom_sf_dp),
    "_skewnorm_cdf": _skewnorm_cdf_partials(),
    "_skewnorm_ppf": _skewnorm_quantile_partials(1.0),
    "_skewnorm_isf": _skewnorm_quantile_partials(-1.0),
    "_cauchy_ppf": _cauchy_partials(1.0),
    "_cauchy_isf": _cauchy_partials(-1.0),
    "_invgauss_ppf": _invgauss_partials(1.0),
    "_invgauss_isf": _invgauss_partials(-1.0),
}

NOTES = {
    "_beta_ppf": "in q; in a, b to first order (numerical)",
    "_binom_pmf": "in p only (k, n: an error); one-sided at p = 0, 1",
    "_binom_cdf": "in p only (k, n: an error)", "_binom_sf": "in p only (k, n: an error)",
    "_nbinom_pmf": "in n and p (k: an error); one-sided at p = 0, 1",
    "_nbinom_cdf": "in p; in n to first order (numerical); k: an error",
    "_nbinom_sf": "in p; in n to first order (numerical); k: an error",
}


def _rules(name, partials):
    def factory(ufunc):
        prim = elementwise_primitive(_MODULE + name, ufunc, partials, with_out=True)

        def rule(*args, **kwargs):
            if kwargs or len(args) != len(partials):
                raise TypeError("deltaad: %s%s on dual numbers takes its %d arguments only"
                                % (_MODULE, name, len(partials)))
            return apply(prim, args)

        rule.__name__ = name
        return rule, None, NOTES.get(name, "")

    return factory


for _name, _partials in RULES.items():
    registry.register_late(_MODULE + _name, _rules(_name, _partials), NOTES.get(_name, ""))
del _name, _partials
