"""``statistics`` code differentiates unchanged: deltaad.statistics' functions of the data's
moments give ``statistics``' value to the bit and its errors, their derivatives against finite
differences and forward mode (to second order), on both backends; ``import statistics`` code
gets them while a differentiation is open."""

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from deltaad import statistics as dstats

data = st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=7)
positive = st.lists(st.floats(0.2, 4.0), min_size=3, max_size=7)


def fd_grad(f, xs, h=1e-6):
    out = []
    for i in range(len(xs)):
        up = list(xs)
        dn = list(xs)
        up[i] += h
        dn[i] -= h
        out.append((f(up) - f(dn)) / (2 * h))
    return out


def check(f, xs, rtol=1e-5, atol=1e-6):
    v, g = d.value_and_grad(f)(list(xs))
    assert v == f(list(xs))  # statistics' value, to the bit
    want = fd_grad(f, list(xs))
    assert g == pytest.approx(want, rel=rtol, abs=atol)
    for i in range(len(xs)):
        e = [0.0] * len(xs)
        e[i] = 1.0
        t = d.jvp(f, (list(xs),), (e,))[1]
        assert t == pytest.approx(g[i], rel=1e-12, abs=1e-12)


def spread_enough(xs):
    return max(xs) - min(xs) > 0.3


@given(data)
def test_means_and_spreads(xs):
    if not spread_enough(xs):
        return
    for name in ("mean", "fmean", "variance", "stdev", "pvariance", "pstdev"):
        check(lambda v, name=name: getattr(statistics, name)(v), xs)
    check(lambda v: statistics.variance(v[1:], v[0]), xs)  # a given centre, differentiated
    check(lambda v: statistics.pstdev(v[1:], 0.25), xs)


@given(positive)
def test_geometric_and_harmonic_means(xs):
    check(lambda v: statistics.geometric_mean(v), xs)
    check(lambda v: statistics.harmonic_mean(v), xs)
    n = len(xs) // 2
    check(lambda v: statistics.harmonic_mean(v[:n], v[n:2 * n]), xs)
    check(lambda v: statistics.fmean(v[:n], weights=v[n:2 * n]), xs)


@given(data, data)
def test_covariance_correlation_regression(xs, ys):
    n = min(len(xs), len(ys))
    xs, ys = xs[:n], ys[:n]
    if not (spread_enough(xs) and spread_enough(ys)):
        return
    both = xs + ys

    def split(v):
        return v[:n], v[n:]

    check(lambda v: statistics.covariance(*split(v)), both)
    check(lambda v: statistics.correlation(*split(v)), both, rtol=1e-4)
    check(lambda v: statistics.linear_regression(*split(v)).slope, both, rtol=1e-4)
    check(lambda v: statistics.linear_regression(*split(v)).intercept, both, rtol=1e-4)
    check(lambda v: statistics.linear_regression(*split(v), proportional=True).slope, both,
          rtol=1e-4)


def test_second_derivatives():
    xs = [0.3, 1.7, -0.4, 2.2]
    h = d.hessian(lambda v: statistics.stdev(v))(xs)
    g = d.grad(lambda v: statistics.stdev(v))
    for i in range(len(xs)):
        up = list(xs)
        dn = list(xs)
        up[i] += 1e-5
        dn[i] -= 1e-5
        col = [(a - b) / 2e-5 for a, b in zip(g(up), g(dn))]
        assert [row[i] for row in h] == pytest.approx(col, rel=1e-4, abs=1e-6)


def test_statistics_errors_and_plain_values_are_statistics_own():
    with pytest.raises(statistics.StatisticsError):
        d.grad(lambda v: statistics.variance(v))([1.0])
    assert dstats.mean([1.0, 2.0, 4.0]) == statistics.mean([1.0, 2.0, 4.0])
    assert dstats.stdev is not statistics.stdev  # outside differentiation: statistics' own
    assert statistics.median is dstats.median


def test_median_and_quantiles_run_on_duals():
    g = d.grad(lambda v: statistics.median(v) + statistics.quantiles(v, n=4)[0])([3.0, 1.0, 2.0, 5.0])
    fd = fd_grad(lambda v: statistics.median(v) + statistics.quantiles(v, n=4)[0],
                 [3.0, 1.0, 2.0, 5.0])
    assert g == pytest.approx(fd, abs=1e-6)
