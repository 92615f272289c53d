"""The elementwise rules (deltaad.numpy.elementwise) on array duals: the table's functions,
arithmetic with broadcasting, choices.

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, away, bshapes, seeds, shapes, uniform

family = Family()
op = family.op


# --------------------------------------------------------------------------------------------
# Elementwise functions of one argument


UNARY = {
    "sin": (np.sin, -3, 3), "cos": (np.cos, -3, 3), "tan": (np.tan, -1.2, 1.2),
    "arcsin": (np.arcsin, -0.9, 0.9), "arccos": (np.arccos, -0.9, 0.9), "arctan": (np.arctan, -3, 3),
    "sinh": (np.sinh, -2, 2), "cosh": (np.cosh, -2, 2), "tanh": (np.tanh, -2, 2),
    "arcsinh": (np.arcsinh, -3, 3), "arccosh": (np.arccosh, 1.2, 3), "arctanh": (np.arctanh, -0.8, 0.8),
    "exp": (np.exp, -2, 2), "expm1": (np.expm1, -2, 2), "exp2": (np.exp2, -2, 2),
    "log": (np.log, 0.3, 3), "log1p": (np.log1p, -0.6, 3), "log2": (np.log2, 0.3, 3),
    "log10": (np.log10, 0.3, 3), "sqrt": (np.sqrt, 0.3, 3), "cbrt": (np.cbrt, 0.3, 3),
    "square": (np.square, -2, 2), "negative": (np.negative, -2, 2), "positive": (np.positive, -2, 2),
    "deg2rad": (np.deg2rad, -2, 2), "rad2deg": (np.rad2deg, -2, 2), "conjugate": (np.conjugate, -2, 2),
    "deltaad.erf": (d.erf, -2, 2), "deltaad.erfc": (d.erfc, -2, 2), "deltaad.sigmoid": (d.sigmoid, -4, 4),
    "deltaad.softplus": (d.softplus, -4, 4), "deltaad.sin": (d.sin, -3, 3),
    "operator -x": (lambda x: -x, -2, 2), "x ** 3": (lambda x: x ** 3, -2, 2),
    "x ** 0.5": (lambda x: x ** 0.5, 0.3, 3), "2.0 ** x": (lambda x: 2.0 ** x, -2, 2),
    "1 / x**2": (lambda x: 1 / x ** 2, 0.5, 2),
}


def _unary(fn, lo, hi):
    @st.composite
    def strat(draw):
        rng = np.random.default_rng(draw(seeds))
        return fn, [uniform(rng, draw(shapes()), lo, hi)]

    return strat


for _n, (_f, _lo, _hi) in UNARY.items():
    op(_n)(_unary(_f, _lo, _hi))


@op("absolute")
@st.composite
def _abs(draw):
    rng = np.random.default_rng(draw(seeds))
    f = draw(st.sampled_from([np.abs, np.fabs, abs, d.abs]))
    return f, [away(rng, draw(shapes()))]


@op("reciprocal")
@st.composite
def _reciprocal(draw):
    rng = np.random.default_rng(draw(seeds))
    return np.reciprocal, [away(rng, draw(shapes()), 0.3, 2)]

# --------------------------------------------------------------------------------------------
# Elementwise functions of two arguments, with broadcasting


BINARY = {
    "add": (np.add, (-2, 2), (-2, 2)), "subtract": (np.subtract, (-2, 2), (-2, 2)),
    "multiply": (np.multiply, (-2, 2), (-2, 2)), "x + y": (lambda x, y: x + y, (-2, 2), (-2, 2)),
    "x - y": (lambda x, y: x - y, (-2, 2), (-2, 2)), "x * y": (lambda x, y: x * y, (-2, 2), (-2, 2)),
    "power": (np.power, (0.3, 2), (-2, 2)), "x ** y": (lambda x, y: x ** y, (0.3, 2), (-2, 2)),
    "float_power": (np.float_power, (0.3, 2), (-2, 2)), "arctan2": (np.arctan2, (-2, 2), (0.3, 2)),
    "hypot": (np.hypot, (0.3, 2), (-2, 2)), "logaddexp": (np.logaddexp, (-2, 2), (-2, 2)),
    "logaddexp2": (np.logaddexp2, (-2, 2), (-2, 2)),
    "remainder": (np.remainder, (0.1, 0.9), (1.1, 2)), "fmod": (np.fmod, (0.1, 0.9), (1.1, 2)),
    "deltaad.hypot": (d.hypot, (0.3, 2), (-2, 2)), "deltaad.logaddexp": (d.logaddexp, (-2, 2), (-2, 2)),
}


def _binary(fn, ra, rb):
    @st.composite
    def strat(draw):
        rng = np.random.default_rng(draw(seeds))
        sa, sb = bshapes(draw)
        return fn, [uniform(rng, sa, *ra), uniform(rng, sb, *rb)]

    return strat


for _n, (_f, _ra, _rb) in BINARY.items():
    op(_n)(_binary(_f, _ra, _rb))


@op("divide")
@st.composite
def _divide(draw):
    rng = np.random.default_rng(draw(seeds))
    sa, sb = bshapes(draw)
    f = draw(st.sampled_from([np.divide, lambda x, y: x / y, np.true_divide]))
    return f, [uniform(rng, sa), away(rng, sb, 0.3, 2)]


@op("x * x (one operand twice)")
@st.composite
def _square_same(draw):
    """Both factors the same dual: the vjp computes the shared product once (array_rules)."""
    rng = np.random.default_rng(draw(seeds))
    shape = draw(shapes())
    f = draw(st.sampled_from([
        lambda x: x * x,
        lambda x: np.multiply(np.sin(x), np.sin(x)),
        lambda x: (x * x) * (x * x),
        lambda x: np.sum(x * x, axis=-1) if np.ndim(x) else x * x,
    ]))
    return f, [uniform(rng, shape)]


@op("maximum/minimum/fmax/fmin")
@st.composite
def _choose2(draw):
    rng = np.random.default_rng(draw(seeds))
    sa, sb = bshapes(draw)
    f = draw(st.sampled_from([np.maximum, np.minimum, np.fmax, np.fmin, d.fmax, d.fmin]))
    # on two interleaved grids: |a - b| >= 0.08 everywhere, so no ties and no kinks nearby
    a = rng.integers(-6, 6, sa) * 0.25 + rng.uniform(0, 0.02, sa)
    b = rng.integers(-6, 6, sb) * 0.25 + 0.125 + rng.uniform(0, 0.02, sb)
    return f, [a, b]


@op("scalar dual with array")
@st.composite
def _scalar_mix(draw):
    rng = np.random.default_rng(draw(seeds))
    shape = draw(shapes(min_dims=1, min_side=1))
    f = draw(st.sampled_from([
        lambda x: x.ravel()[0] * x,
        lambda x: x / (1.0 + x.ravel()[-1] ** 2),
        lambda x: np.sin(x.ravel()[0]) + x,
        lambda x: x ** 2 - np.sum(x).item(),
        lambda x: d.stack([x.ravel()[0], x.ravel()[-1] * 2.0]) * np.sum(x),
        lambda x: np.float64(3.0) * x + np.array(2.0) * x,
    ]))
    return f, [uniform(rng, shape)]


test_first_order, test_second_order = family.tests()
