"""``scipy.spatial.distance``'s ``cdist``, ``pdist`` and ``squareform`` on duals.

Kernel matrices (``exp(-cdist(X, Y, 'sqeuclidean') / l)``), pair potentials and nearest
neighbour losses are written with them; scipy computes them in C on float arrays, which a dual
cannot enter. They are late rules (:mod:`.scipy_late`): once the user imports
``scipy.spatial.distance``, each is replaced by a version that, when an argument holds a dual,
computes the same distances with numpy's rules on the duals (every order) and gives them
scipy's own value, bit for bit; plain calls run scipy's function unchanged. A callable metric
is called on the rows, as scipy calls it.

Choices: where two points coincide, the Euclidean, Minkowski and weighted norms (not smooth
there) get derivative 0, as PyTorch's ``cdist`` gives -- the least-norm subgradient; the
metrics other than those named in ``METRICS`` (``'hamming'``, ``'jaccard'``...: counts of
booleans, piecewise constant or rarely differentiated) raise, naming the metric.
"""

from deltaad._plainnumpy import np

from ..trace import value as strip
from .scipy_late import install, late, operand, refuse

METRICS = ("euclidean", "sqeuclidean", "cityblock", "minkowski", "chebyshev", "cosine",
           "correlation", "seuclidean")


def _root(s, p):
    """``s ** (1 / p)`` with derivative 0 where ``s`` is 0 (coincident points)."""
    pos = np.asarray(strip(s)) > 0.0
    return np.where(pos, np.where(pos, s, 1.0) ** (1.0 / p), 0.0)


def _cosine(u, v):
    """``1 - u.v / (|u| |v|)`` over the last axis, as scipy computes it."""
    uv = np.sum(u * v, axis=-1)
    return 1.0 - uv / np.sqrt(np.sum(u * u, axis=-1) * np.sum(v * v, axis=-1))


def _distances(name, u, v, metric, p, w, V):
    """The distances between the points ``u`` and ``v`` (array duals or arrays, broadcast
    against each other, coordinates on the last axis); ``V``: the variances of ``seuclidean``."""
    if metric not in METRICS:
        refuse(name, "metric=%r" % (metric,), "the metrics deltaad differentiates are %s, or "
               "a callable" % ", ".join(METRICS))
    if w is not None and metric not in ("euclidean", "sqeuclidean", "cityblock", "minkowski"):
        refuse(name, "w= with metric=%r" % (metric,))
    if metric in ("cosine", "correlation"):
        if metric == "correlation":
            u = u - np.mean(u, axis=-1, keepdims=True)
            v = v - np.mean(v, axis=-1, keepdims=True)
        return _cosine(u, v)
    d = u - v
    if metric == "chebyshev":
        return np.max(np.abs(d), axis=-1)
    weight = 1.0 if w is None else np.asarray(strip(operand(w)))
    if metric == "seuclidean":
        return _root(np.sum(d * d / operand(V), axis=-1), 2.0)
    if metric == "sqeuclidean":
        return np.sum(weight * (d * d), axis=-1)
    if metric == "cityblock":
        return np.sum(weight * np.abs(d), axis=-1)
    if metric == "euclidean":
        return _root(np.sum(weight * (d * d), axis=-1), 2.0)
    p = 2.0 if p is None else float(p)
    return _root(np.sum(weight * np.abs(d) ** p, axis=-1), p)


def _two_d(name, x):
    x = operand(x)
    if np.ndim(x) != 2:
        refuse(name, "an input of %d dimensions" % np.ndim(x), "scipy takes 2-d arrays")
    return x


def _cdist(original):
    def cdist(ref, XA, XB, metric="euclidean", *, out=None, p=None, w=None, V=None, **kw):
        if out is not None:
            refuse("scipy.spatial.distance.cdist", "out=", "use the returned array")
        if kw:
            refuse("scipy.spatial.distance.cdist", ", ".join("%s=" % k for k in kw))
        name = "scipy.spatial.distance.cdist"
        a, b = _two_d(name, XA), _two_d(name, XB)
        if callable(metric):  # called on each pair of rows, as scipy calls it
            shape = (a.shape[0], b.shape[0])
            pairs = [metric(a[i], b[j]) for i in range(shape[0]) for j in range(shape[1])]
            return np.reshape(np.stack(pairs), shape) if pairs else np.zeros(shape)
        if V is None and metric == "seuclidean":
            V = np.var(np.concatenate([a, b]), axis=0, ddof=1)
        return _distances(name, a[:, None, :], b[None, :, :], metric, p, w, V)

    return cdist


def _pdist(original):
    def pdist(ref, X, metric="euclidean", *, out=None, p=None, w=None, V=None, **kw):
        if out is not None:
            refuse("scipy.spatial.distance.pdist", "out=", "use the returned array")
        if kw:
            refuse("scipy.spatial.distance.pdist", ", ".join("%s=" % k for k in kw))
        name = "scipy.spatial.distance.pdist"
        x = _two_d(name, X)
        m = x.shape[0]
        i, j = np.triu_indices(m, 1)
        if callable(metric):  # only the pairs scipy calls it on, in its order
            if not len(i):
                return np.zeros(0)
            return np.stack([metric(x[a], x[b]) for a, b in zip(i.tolist(), j.tolist())])
        if V is None and metric == "seuclidean":
            V = np.var(x, axis=0, ddof=1)
        return _distances(name, x[i], x[j], metric, p, w, V)  # the pairs i < j only

    return pdist


def _squareform(original):
    def squareform(ref, X, force="no", checks=True):
        x = operand(X)
        if np.ndim(ref) == 2:  # a condensed vector to its square matrix: a gather
            m = np.shape(ref)[0]
            index = np.full((m, m), np.size(x), dtype=np.intp)  # the diagonal reads the 0
            i, j = np.triu_indices(m, 1)
            index[i, j] = index[j, i] = np.arange(len(i))
            return np.concatenate([x, np.zeros(1)])[index]
        m = np.shape(x)[0]
        i, j = np.triu_indices(m, 1)
        return x[i, j]

    return squareform


late("scipy.spatial.distance.cdist", _cdist, "the distances on the duals; 0 at coincident "
     "points for the norms")
late("scipy.spatial.distance.pdist", _pdist, "the distances on the duals; 0 at coincident "
     "points for the norms")
late("scipy.spatial.distance.squareform", _squareform, "a gather")
install("scipy.spatial.distance")
