"""Greeks of a European call by Monte Carlo: differentiate the simulation itself.

The price is the discounted mean payoff over simulated terminal prices; its gradient with
respect to the spot, the volatility, the rate and the maturity (delta, vega, rho, theta) is
the *pathwise* estimator, computed by reverse mode through the numpy code in one sweep. The
Black-Scholes formulas are the independent check: the estimates must agree within their
Monte Carlo error.
"""

import math

import numpy as np

import deltaad as ad

STRIKE = 100.0


def mc_price(params, z):
    """Discounted mean payoff of a call; ``z`` are standard normal draws (held fixed)."""
    spot, vol, rate, mat = params["spot"], params["vol"], params["rate"], params["maturity"]
    terminal = spot * np.exp((rate - 0.5 * vol * vol) * mat + vol * np.sqrt(mat) * z)
    payoff = np.maximum(terminal - STRIKE, 0.0)
    return np.exp(-rate * mat) * np.mean(payoff)


def black_scholes(spot, vol, rate, maturity):
    mat = maturity
    """Price and (delta, vega, rho, dprice/dmaturity) in closed form."""
    cdf = lambda x: 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
    pdf = lambda x: math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    d1 = (math.log(spot / STRIKE) + (rate + 0.5 * vol * vol) * mat) / (vol * math.sqrt(mat))
    d2 = d1 - vol * math.sqrt(mat)
    disc = STRIKE * math.exp(-rate * mat)
    price = spot * cdf(d1) - disc * cdf(d2)
    greeks = {"spot": cdf(d1), "vol": spot * pdf(d1) * math.sqrt(mat),
              "rate": mat * disc * cdf(d2),
              "maturity": spot * pdf(d1) * vol / (2.0 * math.sqrt(mat)) + rate * disc * cdf(d2)}
    return price, greeks


def main():
    params = {"spot": 105.0, "vol": 0.25, "rate": 0.03, "maturity": 0.75}
    z = np.random.default_rng(1).standard_normal(200_000)

    price, grads = ad.value_and_grad(mc_price)(params, z)
    exact_price, exact = black_scholes(**params)

    # the standard error of each estimate, from the per-path values
    s = params
    st = s["spot"] * np.exp((s["rate"] - 0.5 * s["vol"] ** 2) * s["maturity"]
                            + s["vol"] * math.sqrt(s["maturity"]) * z)
    se = np.exp(-s["rate"] * s["maturity"]) * np.std(np.maximum(st - STRIKE, 0.0)) / math.sqrt(z.size)
    assert abs(price - exact_price) < 4 * se, (price, exact_price, se)
    for name in params:
        # pathwise estimates share the paths' noise; 1% is several standard errors here
        assert math.isclose(grads[name], exact[name], rel_tol=0.01), (name, grads[name], exact[name])
    # and the derivative of this very estimator (same paths): central differences, which
    # differ only by the few paths whose payoff kink falls inside the step
    for name in params:
        h = 1e-5 * params[name]
        up, down = dict(params), dict(params)
        up[name] += h
        down[name] -= h
        fd = (mc_price(up, z) - mc_price(down, z)) / (2 * h)
        assert math.isclose(grads[name], fd, rel_tol=1e-4), (name, grads[name], fd)
    print("price %.4f (Black-Scholes %.4f); " % (price, exact_price)
          + ", ".join("d/d%s %.4f (%.4f)" % (k, grads[k], exact[k]) for k in params))


if __name__ == "__main__":
    main()
