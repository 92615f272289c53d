"""The values the scipy.special entries choose where a formula has no value (the table's
``chosen`` notes), on scalars and arrays, reverse and forward: one-sided limits at the ends of
domains, limits at removable 0/0 points (where the table switches to a power series), nan
where the function is infinite."""

import math

import numpy as np
import pytest

import deltaad as d

special = pytest.importorskip("scipy.special")
INF, NAN = math.inf, math.nan


def partials(f, a, b):
    """(d/da, d/db) of ``f`` at ``(a, b)`` in reverse mode, on scalars and on arrays, checked
    equal to forward mode."""
    g = d.grad(f, argnums=(0, 1))(a, b)
    fwd = (d.jvp(f, (a, b), (1.0, 0.0))[1], d.jvp(f, (a, b), (0.0, 1.0))[1])
    arr = d.grad(lambda s, t: f(s, t).sum(), argnums=(0, 1))(np.array([a]), np.array([b]))
    same = lambda u, v: u == v or (math.isnan(u) and math.isnan(v))  # noqa: E731
    for k in range(2):
        assert same(g[k], fwd[k]) and same(g[k], float(arr[k][0])), (f, a, b, g, fwd, arr)
    return g


def slope(f, x):
    g = d.grad(f)(x)
    ga = d.grad(lambda t: f(t).sum())(np.array([x]))[0]
    assert g == d.jvp(f, (x,), (1.0,))[1] and (g == ga or math.isnan(g) and math.isnan(ga))
    return g


@pytest.mark.parametrize("f,at0", [(special.kl_div, 1.0), (special.rel_entr, 0.0)])
def test_divergences_at_x_zero(f, at0):
    """At x = 0 the value is y (kl_div) or 0 (rel_entr): d/dx is the one-sided -inf of log x,
    d/dy the derivative of that value; nan where the value is +inf."""
    assert partials(f, 0.0, 2.0) == (-INF, at0)
    assert partials(f, 0.0, 0.0) == (-INF, at0)
    assert all(math.isnan(v) for v in partials(f, -1.0, 2.0))


def test_huber_is_smooth_at_the_switch():
    for r in (1.5, -1.5):
        assert partials(special.huber, 1.5, r) == (0.0, r)
        assert partials(special.huber, 1.5, 3 * r) == (abs(3 * r) - 1.5, math.copysign(1.5, r))
    assert all(math.isnan(v) for v in partials(special.huber, -1.0, 0.5))


def test_pseudo_huber_at_delta_zero():
    assert partials(special.pseudo_huber, 0.0, -3.0) == (3.0, 0.0)
    assert partials(special.pseudo_huber, 0.0, 0.0) == (0.0, 0.0)
    da, dr = partials(special.pseudo_huber, 0.0, 1e-200)  # no underflow of r^2
    assert (da, dr) == (1e-200, 0.0)


def test_boxcox_at_the_end_of_its_domain():
    assert partials(special.boxcox, 0.0, 0.5) == (INF, 4.0)
    assert partials(special.boxcox, 0.0, 1.0) == (1.0, 1.0)
    assert partials(special.boxcox, 0.0, 2.0) == (0.0, 0.25)
    assert partials(special.boxcox1p, -1.0, 0.5) == (INF, 4.0)
    # lmbda = 0 (log x) and its neighbours: d/dlmbda is log(x)^2 / 2, by the power series
    g0 = partials(special.boxcox, 3.0, 0.0)[1]
    assert g0 == pytest.approx(math.log(3.0) ** 2 / 2, rel=1e-15)
    assert partials(special.boxcox, 3.0, 1e-12)[1] == pytest.approx(g0, rel=1e-11)


def test_removable_points_take_their_limits():
    assert slope(special.exprel, 0.0) == 0.5
    assert slope(special.ellipk, 0.0) == pytest.approx(math.pi / 8, rel=1e-16)
    assert slope(special.ellipe, 0.0) == pytest.approx(-math.pi / 8, rel=1e-16)
    assert slope(special.ellipkm1, 1.0) == pytest.approx(-math.pi / 8, rel=1e-16)
    phi = 0.9
    lim = (2 * phi - math.sin(2 * phi)) / 8
    assert partials(special.ellipkinc, phi, 0.0)[1] == pytest.approx(lim, rel=1e-15)
    assert partials(special.ellipeinc, phi, 0.0)[1] == pytest.approx(-lim, rel=1e-15)
    # and near them the series and the closed form agree (the switch at |m| = 0.1)
    for m in (0.0999999, 0.1000001):
        assert slope(special.ellipk, m) == pytest.approx(slope(special.ellipk, 0.1), rel=1e-6)


def test_ends_and_flat_parts():
    assert slope(special.ellipe, 1.0) == -INF
    assert slope(lambda y: special.kolmogorov(y), -0.5) == 0.0
    assert slope(lambda y: special.kolmogorov(y), 0.01) == 0.0  # below 1e-300
    assert slope(special.kolmogi, 1.0) == -INF
    # the two forms of kolmogorov's derivative meet at y = 0.8
    lo, hi = slope(special.kolmogorov, 0.8 - 1e-12), slope(special.kolmogorov, 0.8)
    assert lo == pytest.approx(hi, rel=1e-10)
    assert all(math.isnan(v) for v in partials(special.agm, 1.0, -2.0))
    assert all(math.isnan(v) for v in partials(special.agm, 0.0, 2.0))


def test_degree_zero_polynomials_are_constant():
    for f in (special.eval_legendre, special.eval_chebyt, special.eval_chebyu,
              special.eval_hermite, special.eval_hermitenorm, special.eval_laguerre,
              special.eval_chebyc, special.eval_chebys, special.eval_sh_legendre,
              special.eval_sh_chebyt, special.eval_sh_chebyu):
        assert slope(lambda x: f(0, x), 0.3) == 0.0, f
    assert slope(lambda x: special.eval_genlaguerre(0, 1.5, x), 0.3) == 0.0
    assert slope(lambda x: special.eval_gegenbauer(0, 1.5, x), 0.3) == 0.0


def test_a_float_degree_array_is_refused_not_wrong():
    """On arrays the degrees are not checked by the scalar path: a non-integer degree in the
    sum formulas is an error naming the function, never a wrong derivative."""
    with pytest.raises(TypeError, match=r"scipy\.special\.eval_legendre: .*integer degrees"):
        d.grad(lambda t: special.eval_legendre(np.array([1.5, 2.0]), t).sum())(np.ones(2))
    with pytest.raises(TypeError, match=r"scipy\.special\.hyp2f1: the parameters a, b, c"):
        d.grad(lambda a: special.hyp2f1(a, 1.0, 2.0, 0.5))(0.5)
