"""Complex linear algebra: ``linalg.eig`` and ``linalg.eigvals`` (complex results, also of a
real matrix), and ``linalg.inv`` and ``linalg.solve`` on complex matrices (which the rules of
``eig`` use, so that they differentiate again).

``eig`` returns ``A = V diag(w) V^-1`` with unit-norm eigenvector columns of an arbitrary phase
(LAPACK's). With ``W = V^-1 dA V``: ``dw = diag(W)`` and ``dV = V (F o W)``, ``F_ij = 1/(w_j - w_i)``
off the diagonal and 0 on it, minus each column's component that would change its norm
(``v_j Re(v_j^H dv_j)``), as JAX does; the phase is left as the formula gives it, so only
phase-invariant functions of ``V`` have a meaningful derivative. The vjp is the adjoint:
``A̅ = V^-H (diag(w̄) + conj(F) o (V^H V̄)) V^H``, its real part for a real ``A``. At a repeated
eigenvalue ``F`` is infinite: eigenvalue derivatives stay finite for a simple eigenvalue,
eigenvector derivatives are inf/nan there (as in JAX). Where numpy returns real arrays (a real
matrix whose eigenvalues are all real) so does deltaad.
"""

from deltaad._plainnumpy import np

from ..trace import value as strip
from . import registry
from .array import shape_of
from .complex_array import FUNCTIONS, NOTES, ComplexDual, capply, cprimitive


def _h(x):
    """The conjugate transpose over the last two axes."""
    return np.conj(np.swapaxes(x, -1, -2))


def _diag(w):
    """Diagonal matrices with ``w`` (..., n) on their diagonals (..., n, n)."""
    n = shape_of(w)[-1]
    return w[..., None] * np.eye(n)


def _diagonal(x):
    return np.diagonal(x, 0, -2, -1)


# -- inv and solve ----------------------------------------------------------------------------

def _inv_vjp(out, vals, on):
    xh = _h(out)
    return lambda c: (-np.matmul(np.matmul(xh, c), xh),)


def _inv_jvp(out, vals, tans):
    return -np.matmul(np.matmul(out, tans[0]), out)


INV = cprimitive("linalg.inv", np.linalg.inv, _inv_vjp, _inv_jvp)


def _as_matrix(x, vec):
    return x[..., None] if vec else x


def _solve_vec(a, b):
    """numpy's rule: ``b`` is a vector when it is 1-d."""
    return len(shape_of(b)) == 1


def _solve_vjp(out, vals, on):
    a, b = vals
    vec = _solve_vec(a, b)
    ah = _h(a)
    x = _as_matrix(out, vec)

    def rule(c):
        gb = np.linalg.solve(ah, c)
        ga = -np.matmul(_as_matrix(gb, vec), _h(x)) if on[0] else None
        return ga, (gb if on[1] else None)

    return rule


def _solve_jvp(out, vals, tans):
    a, b = vals
    ta, tb = tans
    vec = _solve_vec(a, b)
    r = None
    if tb is not None:
        r = tb
    if ta is not None:
        u = np.matmul(ta, _as_matrix(out, vec))
        u = u[..., 0] if vec else u
        r = -u if r is None else r - u
    return np.linalg.solve(a, r)


SOLVE = cprimitive("linalg.solve", np.linalg.solve, _solve_vjp, _solve_jvp)


def _complex_involved(*xs):
    return any(type(x) is ComplexDual or np.iscomplexobj(strip(x)) for x in xs)


def inv(a):
    return capply(INV, (a,))


def solve(a, b):
    return capply(SOLVE, (a, b))


FUNCTIONS[np.linalg.inv] = inv
FUNCTIONS[np.linalg.solve] = solve


# -- det and norm -------------------------------------------------------------------------------

def _det_vjp(out, vals, on):
    # d det = det tr(A^-1 dA): the cotangent c det^* A^-H
    g = np.conj(out)[..., None, None] * _h(np.linalg.inv(vals[0]))
    return lambda c: (np.asarray(c)[..., None, None] * g if type(c) is not ComplexDual
                      else c[..., None, None] * g,)


def _det_jvp(out, vals, tans):
    t = np.linalg.solve(vals[0], tans[0])
    return out * np.trace(t, axis1=-2, axis2=-1)


DET = cprimitive("linalg.det", np.linalg.det, _det_vjp, _det_jvp)


def det(a):
    return capply(DET, (a,))


FUNCTIONS[np.linalg.det] = det
NOTES[np.linalg.det] = "nan at a singular complex matrix (the inverse does not exist)"


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy's norm of complex values, branch by branch as numpy computes it (so the value is
    numpy's): the 2-norm and Frobenius norm from the squared moduli, the others from |x|."""
    real_norm = registry.FUNCTIONS[np.linalg.norm]
    if type(x) is not ComplexDual and not np.iscomplexobj(strip(x)):
        return real_norm(x, ord, axis, keepdims)
    nd = len(shape_of(x))
    if axis is None and (ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1)):
        x = np.ravel(x)
        xr, xi = np.real(x), np.imag(x)
        ret = np.sqrt(np.dot(xr, xr) + np.dot(xi, xi))
        return np.reshape(ret, nd * [1]) if keepdims else ret
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        axis = (int(axis),)
    if len(axis) == 1 and ord in (None, 2):
        s = np.real(np.conj(x) * x)
        return np.sqrt(np.sum(s, axis=axis, keepdims=keepdims))
    if len(axis) == 2 and ord in (None, "fro", "f"):
        ret = np.sqrt(np.sum(np.real(np.conj(x) * x), axis=axis))
        if keepdims:
            shape = list(shape_of(x))
            shape[axis[0]] = shape[axis[1]] = 1
            ret = np.reshape(ret, shape)
        return ret
    if len(axis) == 2 and ord in (2, -2, "nuc"):
        raise NotImplementedError("deltaad: numpy.linalg.norm(ord=%r) of a complex matrix needs "
                                  "its singular values, which have no complex rule yet" % (ord,))
    return real_norm(np.abs(x), ord, axis, keepdims)  # numpy's other orders use |x| only


FUNCTIONS[np.linalg.norm] = norm


# -- eig and eigvals --------------------------------------------------------------------------

def _eig_impl(a):
    w, v = np.linalg.eig(a)
    return np.concatenate([np.asarray(w, dtype=np.result_type(w, v, 1j))[..., None, :],
                           np.asarray(v, dtype=np.result_type(w, v, 1j))], axis=-2)


def _split(out):
    return out[..., 0, :], out[..., 1:, :]


def _f_matrix(w):
    """``F_ij = 1/(w_j - w_i)`` off the diagonal, 0 on it."""
    n = shape_of(w)[-1]
    eye = np.eye(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / (eye + w[..., None, :] - w[..., :, None]) - eye


def _eig_vjp(out, vals, on):
    w, v = _split(out)
    vh = _h(v)
    fc = np.conj(_f_matrix(w))

    def rule(c):
        cw, cv = _split(c)
        s = np.real(np.sum(np.conj(v) * cv, axis=-2))  # Re(v_j^H v̄_j)
        cv = cv - v * s[..., None, :]
        g = _diag(cw) + fc * np.matmul(vh, cv)
        return (np.linalg.solve(vh, np.matmul(g, vh)),)

    return rule


def _eig_jvp(out, vals, tans):
    w, v = _split(out)
    da = tans[0]
    wm = np.linalg.solve(v, np.matmul(da, v))  # V^-1 dA V
    dw = _diagonal(wm)
    dv = np.matmul(v, _f_matrix(w) * wm)
    dv = dv - v * np.real(np.sum(np.conj(v) * dv, axis=-2))[..., None, :]
    return np.concatenate([dw[..., None, :], dv], axis=-2)


EIG = cprimitive("linalg.eig", _eig_impl, _eig_vjp, _eig_jvp)


def _numpy_real(a, w):
    """numpy gives real arrays for a real matrix whose eigenvalues are all real."""
    return not np.iscomplexobj(strip(a)) and bool(np.all(np.imag(strip(w)) == 0))


def eig(a):
    out = capply(EIG, (a,))
    if type(out) is not ComplexDual:
        return np.linalg.eig(a)
    w, v = _split(out)
    if _numpy_real(a, w):
        return _EigResult(w.real, v.real)
    return _EigResult(w, v)


try:
    from numpy.linalg._linalg import EigResult as _EigResult
except ImportError:  # pragma: no cover (numpy < 2)
    from collections import namedtuple
    _EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def _match(w, w2):
    """The permutation ``p`` with ``w2[p] ~ w`` (eigvals and eig may order eigenvalues
    differently): nearest first, each used once."""
    w = np.asarray(w).reshape(-1, np.shape(w)[-1])
    w2 = np.asarray(w2).reshape(w.shape)
    perms = []
    for a, b in zip(w, w2):
        free = list(range(len(b)))
        p = []
        for x in a:
            j = min(free, key=lambda k: abs(b[k] - x))
            free.remove(j)
            p.append(j)
        perms.append(p)
    return np.array(perms)


def _eig_parts(a, w):
    """Eigenvectors of ``a`` ordered as the eigenvalues ``w`` (plain), as a differentiable
    function of ``a`` when ``a`` is a dual of an outer trace."""
    out = capply(EIG, (a,))
    w2, v = _split(out)
    perm = _match(strip(w), strip(w2))
    if (perm == np.arange(perm.shape[-1])).all():
        return v
    idx = perm.reshape(shape_of(w)[:-1] + (1, -1))
    return np.take_along_axis(v, np.broadcast_to(idx, shape_of(v)), axis=-1)


def _eigvals_vjp(out, vals, on):
    v = _eig_parts(vals[0], out)
    vh = _h(v)
    return lambda c: (np.linalg.solve(vh, np.matmul(_diag(c), vh)),)


def _eigvals_jvp(out, vals, tans):
    v = _eig_parts(vals[0], out)
    return _diagonal(np.linalg.solve(v, np.matmul(tans[0], v)))


def _eigvals_impl(a):
    w = np.linalg.eigvals(a)
    return w.astype(np.result_type(w, 1j))


EIGVALS = cprimitive("linalg.eigvals", _eigvals_impl, _eigvals_vjp, _eigvals_jvp)


def eigvals(a):
    out = capply(EIGVALS, (a,))
    if type(out) is not ComplexDual:
        return np.linalg.eigvals(a)
    return out.real if _numpy_real(a, out) else out


for _f, _impl in ((np.linalg.eig, eig), (np.linalg.eigvals, eigvals)):
    FUNCTIONS[_f] = _impl
    registry.FUNCTIONS[_f] = _impl
    NOTES[_f] = registry.NOTES[_f] = (
        "eigenvector derivatives are inf/nan at repeated eigenvalues (as JAX); eigenvectors "
        "have unit norm and LAPACK's phase")
