"""scipy.stats's ``multivariate_normal`` (``logpdf``, ``pdf``, ``entropy``) and ``dirichlet``
(``logpdf``, ``pdf``) on duals.

scipy's methods convert their arguments to float arrays (``multivariate_normal`` factors the
covariance with ``eigh`` into a ``Covariance`` object). When ``scipy.stats`` is imported
(deltaad never imports it), the methods are replaced by versions that, when an argument holds a
dual, compute scipy's own value on the plain values (its checks and errors too) and the
derivative from the formula written with deltaad's rules -- ``slogdet`` and ``solve`` of the
covariance, ``gammaln`` and ``xlogy`` for the Dirichlet -- revalued with scipy's value
(:mod:`.scipy_late`). On plain arguments scipy's method runs, unchanged.

Choices: scipy reads the covariance's lower triangle (its ``eigh``), so the gradient in ``cov``
lives there (the upper triangle has gradient 0), consistent with scipy's value under any
perturbation; a singular covariance (``allow_singular=True`` with a rank below the dimension)
and a ``Covariance`` object with dual arguments raise. A frozen ``multivariate_normal`` with dual
parameters answers ``logpdf``, ``pdf``, ``entropy``, ``.mean`` and ``.cov`` with derivatives; its
other methods (``cdf``, ``logcdf``, ``rvs``) raise rather than drop the parameters' derivative.
"""

import contextlib
import functools
import sys

from deltaad._plainnumpy import np

from . import registry
from .args import as_array, ndim, swap
from .array import shape_of
from .registry import holds_dual
from .scipy_late import plain, refuse, revalue

_LOG_2PI = np.log(2 * np.pi)
MVN = "scipy.stats.multivariate_normal"


def _any_dual(args, kwargs):
    return any(holds_dual(a) for a in args) or any(holds_dual(v) for v in kwargs.values())


def _squeeze(out):
    out = np.squeeze(out)
    return out[()] if ndim(out) == 0 else out


def _mvn_parameters(dist, mean, cov, allow_singular, name):
    """``(dim, mean, cov)`` as duals or arrays shaped as scipy shapes them (mean a vector,
    cov the symmetric matrix of its lower triangle), after scipy's own checks."""
    if type(cov).__name__.startswith("Cov") and hasattr(cov, "whiten"):
        refuse(name, "a Covariance object", "pass the covariance matrix")
    dim, _, pcov = dist._process_parameters_psd(None, plain(mean), plain(cov))
    psd = _psd(pcov)
    if psd.rank < dim:
        refuse(name, "a singular covariance (rank %d < %d)" % (psd.rank, dim))
    m = np.zeros(dim) if mean is None else np.reshape(as_array(mean), (dim,))
    c = as_array(1.0 if cov is None else cov)
    if dim == 1:
        c = np.reshape(c, (1, 1))
    elif ndim(c) == 0:
        c = c * np.eye(dim)
    elif ndim(c) == 1:
        c = np.diag(c)
    return dim, m, np.tril(c) + swap(np.tril(c, -1))


def _psd(cov):
    """scipy's own factorization of the covariance (for its rank)."""
    return sys.modules[MODULE]._PSD(cov, allow_singular=True)


def _quantiles(x, dim):
    x = as_array(x)
    if ndim(x) == 0:
        return np.reshape(x, (1,))
    if ndim(x) == 1:
        return np.reshape(x, (-1, 1)) if dim == 1 else np.reshape(x, (1, -1))
    return x


def _mvn_logpdf(x, dim, mean, cov):
    dev = _quantiles(x, dim) - mean
    shape = shape_of(dev)
    flat = np.reshape(dev, (-1, dim))
    maha = np.sum(flat * swap(np.linalg.solve(cov, swap(flat))), axis=-1)
    logdet = np.linalg.slogdet(cov)[1]
    out = -0.5 * (dim * _LOG_2PI + logdet + maha)
    return _squeeze(np.reshape(out, shape[:-1]))


def _gen(method):
    def evaluate(dist, x, mean=None, cov=1, allow_singular=False):
        name = "%s.%s" % (MVN, method)
        dim, m, c = _mvn_parameters(dist, mean, cov, allow_singular, name)
        out = _mvn_logpdf(x, dim, m, c)
        return np.exp(out) if method == "pdf" else out

    return evaluate


def _entropy(dim, cov):
    return 0.5 * (dim * (_LOG_2PI + 1) + np.linalg.slogdet(cov)[1])


def _gen_entropy(dist, mean=None, cov=1):
    dim, _, c = _mvn_parameters(dist, mean, cov, False, MVN + ".entropy")
    return _entropy(dim, c)


def _frozen_entropy(frozen):
    mean, cov = frozen.__dict__["_deltaad_params"]
    dim, _, c = _mvn_parameters(frozen._dist, mean, cov, frozen.allow_singular,
                                MVN + "(...).entropy")
    return _entropy(dim, c)


def _frozen_logpdf(frozen, x):
    params = frozen.__dict__.get("_deltaad_params")
    if params is None:
        params = (frozen.mean, frozen.cov_object.covariance)
    mean, cov = params
    name = MVN + "(...).logpdf"
    dim, m, c = _mvn_parameters(frozen._dist, mean, cov, frozen.allow_singular, name)
    return _mvn_logpdf(x, dim, m, c)


def _method(original, impl, name, frozen=False):
    """``original`` (a method) calling ``impl`` -- revalued with ``original``'s result on the
    plain arguments -- when an argument (or a frozen distribution's parameter) holds a dual."""

    @functools.wraps(original)
    def method(self, *args, **kwargs):
        if _any_dual(args, kwargs) or frozen and "_deltaad_params" in self.__dict__:
            with _plain_mean(self):
                ref = original(self, *plain(args), **{k: plain(v) for k, v in kwargs.items()})
            return revalue(impl(self, *args, **kwargs), ref, name)
        return original(self, *args, **kwargs)

    method.deltaad_original = original
    return method


@contextlib.contextmanager
def _plain_mean(frozen):
    """scipy's own method of a frozen distribution with dual parameters runs on its plain
    values: ``.mean`` (the dual mean the user reads) is plain while it runs."""
    d = frozen.__dict__
    if "_deltaad_params" not in d:
        yield
        return
    saved = d["mean"]
    d["mean"] = plain(saved)
    try:
        yield
    finally:
        d["mean"] = saved


def _frozen_init(original):
    @functools.wraps(original)
    def __init__(self, mean=None, cov=1, allow_singular=False, seed=None, *args, **kwargs):
        if not (holds_dual(mean) or holds_dual(cov)):
            return original(self, mean, cov, allow_singular, seed, *args, **kwargs)
        original(self, plain(mean), plain(cov), allow_singular, seed, *args, **kwargs)
        self._deltaad_params = (mean, cov)
        dim, m, _ = _mvn_parameters(self._dist, mean, cov, allow_singular, MVN)
        self.__dict__["mean"] = m

    __init__.deltaad_original = original
    return __init__


def _frozen_cov(original):
    def cov(self):
        params = self.__dict__.get("_deltaad_params")
        if params is None:
            return original.fget(self)
        return _mvn_parameters(self._dist, params[0], params[1], self.allow_singular, MVN)[2]

    p = property(cov, doc=original.__doc__)
    cov.deltaad_original = original
    return p


def _refusing(original, name):
    @functools.wraps(original)
    def method(self, *args, **kwargs):
        if "_deltaad_params" in self.__dict__:
            raise NotImplementedError(
                "deltaad: %s(mean, cov).%s with dual parameters is not supported (it would "
                "drop their derivative); logpdf and pdf are" % (MVN, name))
        return original(self, *args, **kwargs)

    method.deltaad_original = original
    return method


# --------------------------------------------------------------------------------------------
# dirichlet


def _dirichlet(method):
    def evaluate(dist, x, alpha):
        special = sys.modules["scipy.special"]
        alpha = as_array(alpha)
        x = as_array(x)
        k = shape_of(alpha)[0]
        if shape_of(x)[0] != k:  # scipy completes x with 1 - sum(x)
            last = 1.0 - np.sum(x, axis=0)
            x = np.concatenate([x, np.reshape(last, (1,) + shape_of(last))], axis=0)
        lnb = np.sum(special.gammaln(alpha)) - special.gammaln(np.sum(alpha))
        out = -lnb + np.sum(swap(special.xlogy(alpha - 1, swap(x))) if ndim(x) > 1
                            else special.xlogy(alpha - 1, x), axis=0)
        out = _squeeze(out)
        return np.exp(out) if method == "pdf" else out

    return evaluate


def _patch(cls, name, wrap):
    original = cls.__dict__.get(name)
    if original is None or hasattr(original, "deltaad_original") or \
            hasattr(getattr(original, "fget", None), "deltaad_original"):
        return
    setattr(cls, name, wrap(original))


def install(module):
    gen = getattr(module, "multivariate_normal_gen", None)
    frozen = getattr(module, "multivariate_normal_frozen", None)
    if gen is not None and hasattr(gen, "_process_parameters_psd") and hasattr(module, "_PSD"):
        for m in ("logpdf", "pdf"):
            _patch(gen, m, lambda o, m=m: _method(o, _gen(m), "%s.%s" % (MVN, m)))
        _patch(gen, "entropy", lambda o: _method(o, _gen_entropy, MVN + ".entropy"))
        if frozen is not None:
            _patch(frozen, "__init__", _frozen_init)
            _patch(frozen, "logpdf", lambda o: _method(o, _frozen_logpdf, MVN + "(...).logpdf",
                                                      frozen=True))
            if isinstance(frozen.__dict__.get("cov"), property):
                _patch(frozen, "cov", _frozen_cov)
            _patch(frozen, "entropy", lambda o: _method(o, _frozen_entropy,
                                                       MVN + "(...).entropy", frozen=True))
            for m in ("cdf", "logcdf", "rvs"):
                _patch(frozen, m, lambda o, m=m: _refusing(o, m))
    dgen = getattr(module, "dirichlet_gen", None)
    if dgen is not None:
        for m in ("logpdf", "pdf"):
            _patch(dgen, m, lambda o, m=m: _method(o, _dirichlet(m), "scipy.stats.dirichlet." + m))


MODULE = "scipy.stats._multivariate"
registry.watch(MODULE, install)
