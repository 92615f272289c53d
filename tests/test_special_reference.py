"""The scipy.special entries' derivatives against a high-precision reference: mpmath's own
functions (independent of scipy), differentiated numerically by mpmath at 30 digits. mpmath is
optional (not a test dependency): without it this module is skipped.

First derivatives within 1e-11 relative (the table's formulas are a few roundings of scipy's
values), second derivatives (the formulas differentiated again) within 1e-9.
"""

import math

import pytest

import deltaad as d

mp = pytest.importorskip("mpmath")
special = pytest.importorskip("scipy.special")
mp.mp.dps = 30

F = mp.mpf


def _kolmogorov(y):
    return 2 * mp.nsum(lambda k: (-1) ** (k - 1) * mp.exp(-2 * k * k * y * y), [1, mp.inf])


def _bdtr(k, n, p):
    return mp.fsum(mp.binomial(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k + 1))


def _nbdtr(k, n, p):
    return mp.fsum(mp.binomial(j + n - 1, j) * p ** n * (1 - p) ** j for j in range(k + 1))


def _owens_t(h, a):
    return mp.quad(lambda t: mp.exp(-h * h * (1 + t * t) / 2) / (1 + t * t), [0, a]) / (2 * mp.pi)


def _hermitenorm(n, x):
    return mp.hermite(n, x / mp.sqrt(2)) * mp.mpf(2) ** (-F(n) / 2)


# (name, deltaad's function of x, mpmath's reference function, points)
UNARY = [
    ("k0", lambda x: special.k0(x), lambda x: mp.besselk(0, x), [0.3, 2.0, 15.0]),
    ("k1", lambda x: special.k1(x), lambda x: mp.besselk(1, x), [0.3, 2.0, 15.0]),
    ("k0e", lambda x: special.k0e(x), lambda x: mp.exp(x) * mp.besselk(0, x), [0.3, 2.0, 15.0]),
    ("k1e", lambda x: special.k1e(x), lambda x: mp.exp(x) * mp.besselk(1, x), [0.3, 2.0, 15.0]),
    ("kn(3)", lambda x: special.kn(3, x), lambda x: mp.besselk(3, x), [0.7, 4.0]),
    ("jve(1.5)", lambda x: special.jve(1.5, x), lambda x: mp.besselj(1.5, x), [0.7, 4.0]),
    ("yve(0.5)", lambda x: special.yve(0.5, x), lambda x: mp.bessely(0.5, x), [0.7, 4.0]),
    ("exprel", lambda x: special.exprel(x), lambda x: mp.expm1(x) / x, [-3.0, 1e-3, 0.4, 5.0]),
    ("erfi", lambda x: special.erfi(x), mp.erfi, [-1.5, 0.2, 2.0]),
    ("loggamma", lambda x: special.loggamma(x), mp.loggamma, [0.3, 2.5, 40.0]),
    ("sindg", lambda x: special.sindg(x), lambda x: mp.sin(x * mp.pi / 180), [10.0, 100.0]),
    ("cosdg", lambda x: special.cosdg(x), lambda x: mp.cos(x * mp.pi / 180), [10.0, 100.0]),
    ("tandg", lambda x: special.tandg(x), lambda x: mp.tan(x * mp.pi / 180), [10.0, 100.0]),
    ("cotdg", lambda x: special.cotdg(x), lambda x: mp.cot(x * mp.pi / 180), [10.0, 100.0]),
    ("ellipk", lambda x: special.ellipk(x), mp.ellipk, [-3.0, -0.05, 0.02, 0.5, 0.95]),
    ("ellipe", lambda x: special.ellipe(x), mp.ellipe, [-3.0, -0.05, 0.02, 0.5, 0.95]),
    ("ellipkm1", lambda x: special.ellipkm1(x), lambda p: mp.ellipk(1 - p), [0.01, 0.5, 0.97]),
    ("hyp2f1", lambda x: special.hyp2f1(0.5, 1.5, 2.5, x), lambda z: mp.hyp2f1(0.5, 1.5, 2.5, z),
     [-2.0, 0.3, 0.8]),
    ("hyp1f1", lambda x: special.hyp1f1(0.5, 1.5, x), lambda z: mp.hyp1f1(0.5, 1.5, z),
     [-3.0, 0.3, 4.0]),
    ("hyp0f1", lambda x: special.hyp0f1(2.5, x), lambda z: mp.hyp0f1(2.5, z), [-3.0, 0.3, 4.0]),
    ("eval_legendre(5)", lambda x: special.eval_legendre(5, x), lambda x: mp.legendre(5, x),
     [-0.7, 0.2, 3.0]),
    ("eval_chebyt(4)", lambda x: special.eval_chebyt(4, x), lambda x: mp.chebyt(4, x),
     [-0.7, 0.2, 3.0]),
    ("eval_chebyu(4)", lambda x: special.eval_chebyu(4, x), lambda x: mp.chebyu(4, x),
     [-0.7, 0.2, 3.0]),
    ("eval_hermite(4)", lambda x: special.eval_hermite(4, x), lambda x: mp.hermite(4, x),
     [-0.7, 0.2, 3.0]),
    ("eval_hermitenorm(4)", lambda x: special.eval_hermitenorm(4, x),
     lambda x: _hermitenorm(4, x), [-0.7, 0.2, 3.0]),
    ("eval_chebyc(4)", lambda x: special.eval_chebyc(4, x), lambda x: 2 * mp.chebyt(4, x / 2),
     [-0.7, 0.2, 3.0]),
    ("eval_chebys(4)", lambda x: special.eval_chebys(4, x), lambda x: mp.chebyu(4, x / 2),
     [-0.7, 0.2, 3.0]),
    ("eval_sh_legendre(5)", lambda x: special.eval_sh_legendre(5, x),
     lambda x: mp.legendre(5, 2 * x - 1), [-0.7, 0.2, 3.0]),
    ("eval_sh_chebyt(4)", lambda x: special.eval_sh_chebyt(4, x),
     lambda x: mp.chebyt(4, 2 * x - 1), [-0.7, 0.2, 3.0]),
    ("eval_sh_chebyu(4)", lambda x: special.eval_sh_chebyu(4, x),
     lambda x: mp.chebyu(4, 2 * x - 1), [-0.7, 0.2, 3.0]),
    ("eval_laguerre(4)", lambda x: special.eval_laguerre(4, x), lambda x: mp.laguerre(4, 0, x),
     [-0.7, 0.2, 3.0]),
    ("eval_genlaguerre(3, 1.5)", lambda x: special.eval_genlaguerre(3, 1.5, x),
     lambda x: mp.laguerre(3, 1.5, x), [-0.7, 0.2, 3.0]),
    ("eval_gegenbauer(3, 0.7)", lambda x: special.eval_gegenbauer(3, 0.7, x),
     lambda x: mp.gegenbauer(3, 0.7, x), [-0.7, 0.2, 0.9]),
    ("eval_jacobi(3, 0.5, 1.5)", lambda x: special.eval_jacobi(3, 0.5, 1.5, x),
     lambda x: mp.jacobi(3, 0.5, 1.5, x), [-0.7, 0.2, 0.9]),
    ("lpmv(0, 2.5)", lambda x: special.lpmv(0, 2.5, x), lambda x: mp.legenp(2.5, 0, x, type=2),
     [-0.7, 0.2, 0.9]),
    ("gdtr(2, 1.5)", lambda x: special.gdtr(2.0, 1.5, x),
     lambda x: mp.gammainc(1.5, 0, 2 * x, regularized=True), [0.1, 1.0, 4.0]),
    ("gdtrc(2, 1.5)", lambda x: special.gdtrc(2.0, 1.5, x),
     lambda x: mp.gammainc(1.5, 2 * x, mp.inf, regularized=True), [0.1, 1.0, 4.0]),
    ("bdtr(2, 5)", lambda p: special.bdtr(2, 5, p), lambda p: _bdtr(2, 5, p), [0.1, 0.5, 0.9]),
    ("bdtrc(2, 5)", lambda p: special.bdtrc(2, 5, p), lambda p: 1 - _bdtr(2, 5, p),
     [0.1, 0.5, 0.9]),
    ("nbdtr(2, 3)", lambda p: special.nbdtr(2, 3, p), lambda p: _nbdtr(2, 3, p), [0.1, 0.5, 0.9]),
    ("nbdtrc(2, 3)", lambda p: special.nbdtrc(2, 3, p), lambda p: 1 - _nbdtr(2, 3, p),
     [0.1, 0.5, 0.9]),
    ("kolmogorov", lambda y: special.kolmogorov(y), _kolmogorov, [0.3, 0.79, 0.81, 1.5]),
]

# inverses: the derivative is 1 / (the forward function's mpmath derivative at the result)
_REF = {u[0]: u[2] for u in UNARY}
INVERSE = [
    ("gdtrix(2, 1.5)", lambda p: special.gdtrix(2.0, 1.5, p), _REF["gdtr(2, 1.5)"], [0.2, 0.7]),
    ("bdtri(2, 5)", lambda y: special.bdtri(2, 5, y), _REF["bdtr(2, 5)"], [0.2, 0.7]),
    ("nbdtri(2, 3)", lambda y: special.nbdtri(2, 3, y), _REF["nbdtr(2, 3)"], [0.2, 0.7]),
    ("kolmogi", lambda p: special.kolmogi(p), _kolmogorov, [0.2, 0.7]),
]

BINARY = [
    ("kl_div", special.kl_div, lambda x, y: x * mp.log(x / y) - x + y, [(0.3, 2.0), (4.0, 0.5)]),
    ("rel_entr", special.rel_entr, lambda x, y: x * mp.log(x / y), [(0.3, 2.0), (4.0, 0.5)]),
    ("huber", special.huber,
     lambda dl, r: r * r / 2 if abs(r) <= dl else dl * (abs(r) - dl / 2),
     [(1.0, 0.3), (1.0, -3.0)]),
    ("pseudo_huber", special.pseudo_huber,
     lambda dl, r: dl * dl * (mp.sqrt(1 + (r / dl) ** 2) - 1), [(1.0, 0.3), (0.2, -3.0)]),
    ("boxcox", special.boxcox, lambda x, lm: (x ** lm - 1) / lm, [(0.3, 0.7), (4.0, -1e-3)]),
    ("boxcox1p", special.boxcox1p, lambda x, lm: ((1 + x) ** lm - 1) / lm,
     [(0.3, 0.7), (4.0, 1e-3)]),
    ("inv_boxcox", special.inv_boxcox, lambda y, lm: (1 + lm * y) ** (1 / lm),
     [(0.3, 0.7), (2.0, -0.02)]),
    ("inv_boxcox1p", special.inv_boxcox1p, lambda y, lm: (1 + lm * y) ** (1 / lm) - 1,
     [(0.3, 0.7), (2.0, 0.05)]),
    ("agm", special.agm, mp.agm, [(1.0, 2.0), (3.0, 0.1), (1.0, 1.01)]),
    ("owens_t", special.owens_t, _owens_t, [(0.5, 0.3), (-1.2, 2.0)]),
    ("binom", special.binom, mp.binomial, [(5.5, 2.3), (3.0, 0.7)]),
    ("ellipkinc", special.ellipkinc, mp.ellipf, [(0.7, 0.4), (1.2, -2.0), (0.3, 0.05)]),
    ("ellipeinc", special.ellipeinc, mp.ellipe, [(0.7, 0.4), (1.2, -2.0), (0.3, 0.05)]),
]


def close(got, want, rtol, what):
    want = float(want)
    assert abs(got - want) <= rtol * max(abs(want), 1e-300), "%s: %r vs mpmath's %r" % (
        what, got, want)


@pytest.mark.parametrize("name,f,ref,points", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, f, ref, points):
    for x in points:
        close(d.grad(f)(x), mp.diff(ref, F(x)), 1e-11, "%s' at %r" % (name, x))
        close(d.grad(d.grad(f))(x), mp.diff(ref, F(x), 2), 1e-9, "%s'' at %r" % (name, x))


@pytest.mark.parametrize("name,f,ref,points", INVERSE, ids=[u[0] for u in INVERSE])
def test_inverse(name, f, ref, points):
    for p in points:
        y = f(p)
        close(d.grad(f)(p), 1 / mp.diff(ref, F(float(y))), 1e-10, "%s' at %r" % (name, p))


@pytest.mark.parametrize("name,f,ref,points", BINARY, ids=[u[0] for u in BINARY])
def test_binary(name, f, ref, points):
    for a, b in points:
        ga, gb = d.grad(f, argnums=(0, 1))(a, b)
        close(ga, mp.diff(ref, (F(a), F(b)), (1, 0)), 1e-11, "d%s/da at %r" % (name, (a, b)))
        close(gb, mp.diff(ref, (F(a), F(b)), (0, 1)), 1e-11, "d%s/db at %r" % (name, (a, b)))
        H = d.hessian(lambda p: f(p[0], p[1]))([a, b])
        for (i, j) in ((0, 0), (0, 1), (1, 1)):
            want = mp.diff(ref, (F(a), F(b)), ((i == 0) + (j == 0), (i == 1) + (j == 1)))
            close(H[i][j], want, 1e-8, "d2%s/d%d%d at %r" % (name, i, j, (a, b)))
