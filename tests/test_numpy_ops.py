"""Every supported numpy function on array duals, checked by hypothesis over shapes (0-d, empty
and broadcast shapes included), axes and values in the domain:

- the value equals plain numpy's;
- reverse mode, forward mode and central finite differences agree along random directions,
  and reverse and forward agree to rounding (the paper's Lemma 1);
- the four nestings (forward/reverse over forward/reverse) give the same Hessian-vector
  product as finite differences of the gradient.

Non-smooth functions are sampled away from their kinks and ties (values at least 0.1 apart),
so finite differences are meaningful.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import deltaad as d
from numpy_checks import check_first_order, check_second_order

# A fraction of the profile's examples (conftest: 50 by default, DELTAAD_HYPOTHESIS_EXAMPLES=500
# for a thorough pass): the parametrisation over ~100 functions multiplies the work.
_N = settings().max_examples
FIRST = settings(max_examples=max(6, _N // 5), deadline=None, suppress_health_check=list(HealthCheck))
SECOND = settings(max_examples=max(3, _N // 12), deadline=None, suppress_health_check=list(HealthCheck))

OPS = {}
NO_SECOND = set()


def op(name, second=True):
    def deco(strategy):
        OPS[name] = strategy
        if not second:
            NO_SECOND.add(name)
        return strategy

    return deco


seeds = st.integers(0, 2**31 - 1)


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def uniform(rng, shape, lo=-2.0, hi=2.0):
    return np.asarray(rng.uniform(lo, hi, shape))


def away(rng, shape, lo=0.1, hi=2.0):
    """Values with |x| in [lo, hi]: away from 0 (the kink of abs, the pole of 1/x)."""
    return np.asarray(rng.choice([-1.0, 1.0], size=shape) * rng.uniform(lo, hi, shape))


def distinct(rng, shape, gap=0.25):
    """Values at least ``gap`` apart (no ties for max/min/sort)."""
    n = int(np.prod(shape, dtype=np.int64))
    return (rng.permutation(n) * gap - n * gap / 2 + rng.uniform(0, 0.05, n)).reshape(shape)


@st.composite
def axis_args(draw, ndim, tuples=True, none=True):
    opts = []
    if none:
        opts.append(st.none())
    if ndim:
        opts.append(st.integers(-ndim, ndim - 1))
        if tuples:
            opts.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(tuple))
    elif tuples:
        opts.append(st.just(()))
    return draw(st.one_of(*opts))


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


def _bshapes(draw, n=2):
    return draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, max_side=3)).input_shapes


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
        sa, sb = _bshapes(draw)
        return fn, [uniform(rng, sa, *ra), uniform(rng, sb, *rb)]

    return strat


for _n, (_f, _ra, _rb) in BINARY.items():
    op(_n)(_binary(_f, _ra, _rb))


@op("divide")
@st.composite
def _divide(draw):
    rng = np.random.default_rng(draw(seeds))
    sa, sb = _bshapes(draw)
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
    sa, sb = _bshapes(draw)
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


# --------------------------------------------------------------------------------------------
# matmul and friends


@op("matmul")
@st.composite
def _matmul(draw):
    rng = np.random.default_rng(draw(seeds))
    m, k, n = draw(st.integers(1, 3)), draw(st.integers(0, 3)), draw(st.integers(1, 3))
    ba, bb = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=2)).input_shapes
    a_vec = draw(st.booleans())
    b_vec = draw(st.booleans())
    sa = (k,) if a_vec else ba + (m, k)
    sb = (k,) if b_vec else bb + (k, n)
    f = draw(st.sampled_from([np.matmul, lambda a, b: a @ b]))
    return f, [uniform(rng, sa), uniform(rng, sb)]


@op("dot")
@st.composite
def _dot(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(1, 3))
    sa = draw(st.sampled_from([(), (k,), (2, k), (2, 3, k)]))
    sb = draw(st.sampled_from([(), (k,), (k, 2), (2, k, 3)]))
    f = draw(st.sampled_from([np.dot, lambda a, b: a.dot(b) if hasattr(a, "dot") else np.dot(a, b)]))
    return f, [uniform(rng, sa), uniform(rng, sb)]


@op("inner/outer/vdot")
@st.composite
def _inner(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(0, 3))
    which = draw(st.sampled_from(["inner", "outer", "vdot"]))
    if which == "inner":
        sa = draw(st.sampled_from([(), (k,), (2, k)]))
        sb = draw(st.sampled_from([(k,), (3, k)])) if sa else (2,)
        return np.inner, [uniform(rng, sa), uniform(rng, sb)]
    if which == "outer":
        return np.outer, [uniform(rng, draw(shapes(max_dims=2))), uniform(rng, draw(shapes(max_dims=2)))]
    s = draw(shapes(max_dims=2))
    return np.vdot, [uniform(rng, s), uniform(rng, s)]


@op("tensordot")
@st.composite
def _tensordot(draw):
    rng = np.random.default_rng(draw(seeds))
    case = draw(st.sampled_from([
        ((2, 3, 4), (3, 4, 2), 2), ((2, 3), (3, 2), 1), ((2, 3), (4,), 0), ((2, 3, 4), (4, 3), ([1, 2], [1, 0])),
        ((3, 2), (3, 2), ([0, 1], [0, 1])), ((2, 0), (0, 3), 1), ((2, 3), (2, 3), ([0], [0])),
    ]))
    sa, sb, axes = case
    return (lambda a, b: np.tensordot(a, b, axes=axes)), [uniform(rng, sa), uniform(rng, sb)]


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 2)]), ("i,i->", [(3,), (3,)]),
    ("i,i", [(4,), (4,)]), ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]),
    ("...ij->...ji", [(2, 2, 3)]), ("...i,i->...", [(2, 3, 4), (4,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ij,ij->i", [(3, 2), (3, 2)]), ("i,j->ij", [(2,), (3,)]), ("ijk->", [(2, 3, 2)]),
    ("ij->", [(2, 0)]), ("ij,k->ijk", [(2, 1), (2,)]), ("...i,...i->...", [(3, 1, 2), (2, 2)]),
    ("iij->j", [(2, 2, 3)]), ("ab,bc,cd->ad", [(2, 3), (3, 2), (2, 2)]),
]


@op("einsum")
@st.composite
def _einsum(draw):
    rng = np.random.default_rng(draw(seeds))
    spec, sh = draw(st.sampled_from(EINSUM))
    opt = draw(st.sampled_from([False, "greedy"]))
    return (lambda *xs: np.einsum(spec, *xs, optimize=opt)), [uniform(rng, s) for s in sh]


@op("einsum (interleaved)")
@st.composite
def _einsum2(draw):
    rng = np.random.default_rng(draw(seeds))
    return (lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2])), [uniform(rng, (2, 3)), uniform(rng, (3, 2))]


@op("trace")
@st.composite
def _trace(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=2, max_dims=3))
    off = draw(st.integers(-2, 2))
    nd = len(s)
    a1 = draw(st.integers(0, nd - 1))
    a2 = draw(st.integers(0, nd - 1).filter(lambda a: a != a1))
    return (lambda x: np.trace(x, off, a1, a2)), [uniform(rng, s)]


# --------------------------------------------------------------------------------------------
# Reductions


def _reduction(fn, values=uniform, min_side=0, keepdims=True, tuples=True):
    @st.composite
    def strat(draw):
        rng = np.random.default_rng(draw(seeds))
        s = draw(shapes(min_side=min_side))
        axis = draw(axis_args(len(s), tuples=tuples))
        kd = draw(st.booleans()) if keepdims else False
        kw = {"keepdims": True} if kd else {}
        return (lambda x: fn(x, axis=axis, **kw)), [values(rng, s)]

    return strat


op("sum")(_reduction(np.sum))
op("x.sum")(_reduction(lambda x, **kw: x.sum(**kw)))
op("mean")(_reduction(np.mean, min_side=1))
op("prod")(_reduction(np.prod, values=lambda rng, s: away(rng, s, 0.5, 1.5)))
op("max")(_reduction(np.max, values=distinct, min_side=1))
op("min")(_reduction(np.min, values=distinct, min_side=1))
op("amax/x.min")(_reduction(lambda x, **kw: np.amax(x, **kw) + x.min(**kw), values=distinct, min_side=1))
op("ptp")(_reduction(np.ptp, values=distinct, min_side=1, tuples=False))
op("deltaad.logsumexp")(_reduction(d.logsumexp, min_side=1))


@op("logaddexp.reduce")
@st.composite
def _lae_reduce(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    return (lambda x: np.logaddexp.reduce(x, axis=0)), [uniform(rng, s)]


@op("var/std")
@st.composite
def _var(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=2))
    axis = draw(axis_args(len(s)))
    ddof = draw(st.integers(0, 1))
    axes = range(len(s)) if axis is None else ([axis] if isinstance(axis, int) else axis)
    if int(np.prod([s[a] for a in axes])) <= ddof:
        ddof = 0
    kd = draw(st.booleans())
    f = draw(st.sampled_from([np.var, np.std, lambda x, **kw: x.var(**kw), lambda x, **kw: x.std(**kw)]))
    if int(np.prod([s[a] for a in axes])) <= 1:
        f = np.var  # std of one value is sqrt(0): not differentiable
    return (lambda x: f(x, axis=axis, ddof=ddof, keepdims=kd)), [distinct(rng, s)]  # std > 0.1


@op("cumsum/cumprod")
@st.composite
def _cum(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes())
    axis = draw(st.none() | st.integers(-max(len(s), 1), max(len(s), 1) - 1)) if s else None
    f = draw(st.sampled_from([np.cumsum, np.cumprod, lambda x, axis: x.cumsum(axis), lambda x, axis: x.cumprod(axis)]))
    return (lambda x: f(x, axis=axis)), [away(rng, s, 0.5, 1.5)]


@op("ufunc.reduce/accumulate")
@st.composite
def _ufunc_methods(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    f = draw(st.sampled_from([
        lambda x: np.add.reduce(x), lambda x: np.multiply.reduce(x, axis=-1), lambda x: np.maximum.reduce(x),
        lambda x: np.add.accumulate(x), lambda x: np.multiply.accumulate(x), lambda x: np.multiply.outer(x, x[..., :2]),
    ]))
    return f, [distinct(rng, s) * 0.3 + 1.0]


@op("logsumexp composition")
@st.composite
def _lse(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))

    def f(x):
        m = np.max(x, axis=-1, keepdims=True)
        return m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))

    def softmax_xent(x):
        z = x - np.max(x, axis=-1, keepdims=True)
        return -np.sum(z[..., :1] - np.log(np.sum(np.exp(z), axis=-1, keepdims=True)))

    return draw(st.sampled_from([f, softmax_xent])), [distinct(rng, s)]


# --------------------------------------------------------------------------------------------
# Shape functions


@op("reshape/ravel/flatten")
@st.composite
def _reshape(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_side=1))
    n = int(np.prod(s))
    order = draw(st.sampled_from(["C", "F"]))
    f = draw(st.sampled_from([
        lambda x: np.reshape(x, (n,), order=order), lambda x: x.reshape(-1, 1), lambda x: np.ravel(x, order=order),
        lambda x: x.flatten(), lambda x: x.reshape((1,) + x.shape[::-1]) if True else x,
    ]))
    return f, [uniform(rng, s)]


@op("transpose/swapaxes/moveaxis/.T")
@st.composite
def _transpose(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1))
    nd = len(s)
    perm = draw(st.permutations(list(range(nd))))
    i, j = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
    f = draw(st.sampled_from([
        lambda x: np.transpose(x, perm), lambda x: x.T, lambda x: np.swapaxes(x, i, j),
        lambda x: np.moveaxis(x, i, j), lambda x: x.transpose(), lambda x: x.transpose(*perm),
    ]))
    return f, [uniform(rng, s)]


@op("expand_dims/squeeze/atleast")
@st.composite
def _expand(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes())
    nd = len(s)
    ax = draw(st.integers(-nd - 1, nd))
    f = draw(st.sampled_from([
        lambda x: np.expand_dims(x, ax), lambda x: np.squeeze(np.expand_dims(x, ax), axis=ax), lambda x: np.squeeze(x),
        lambda x: np.atleast_2d(x), lambda x: np.atleast_3d(x), lambda x: np.atleast_1d(x), lambda x: x[None, ..., None],
    ]))
    return f, [uniform(rng, s)]


@op("broadcast_to/broadcast_arrays")
@st.composite
def _broadcast(draw):
    rng = np.random.default_rng(draw(seeds))
    r = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
    sa, sb = r.input_shapes
    f = draw(st.sampled_from([
        lambda a, b: np.broadcast_to(a, r.result_shape), lambda a, b: np.broadcast_arrays(a, b),
    ]))
    return f, [uniform(rng, sa), uniform(rng, sb)]


@op("concatenate/stack")
@st.composite
def _concat(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, max_dims=3))
    nd = len(s)
    ax = draw(st.integers(-nd, nd - 1))
    k = draw(st.integers(1, 3))
    xs = []
    for _ in range(k):
        t = list(s)
        t[ax] = draw(st.integers(0, 3))
        xs.append(uniform(rng, tuple(t)))
    sax = draw(st.integers(-nd - 1, nd))
    same = [uniform(rng, s) for _ in range(k)]
    which = draw(st.sampled_from(["concatenate", "concatenate None", "stack", "vstack", "hstack", "append", "dstack", "column_stack"]))
    if which == "concatenate":
        return (lambda *a: np.concatenate(a, axis=ax)), xs
    if which == "concatenate None":
        return (lambda *a: np.concatenate(a, axis=None)), xs
    if which == "stack":
        return (lambda *a: np.stack(a, axis=sax)), same
    if which == "append":
        return (lambda a, b: np.append(a, b)), [uniform(rng, s), uniform(rng, draw(shapes(max_dims=2)))]
    f = {"vstack": np.vstack, "hstack": np.hstack, "dstack": np.dstack, "column_stack": np.column_stack}[which]
    if which == "column_stack":
        same = [uniform(rng, s[:2]) for _ in range(k)]
    return (lambda *a: f(list(a))), same


@op("split/array_split")
@st.composite
def _split(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    nd = len(s)
    ax = draw(st.integers(-nd, nd - 1))
    n = s[ax]
    which = draw(st.sampled_from(["even", "uneven", "indices", "hsplit"]))
    if which == "even":
        k = draw(st.sampled_from([q for q in range(1, n + 1) if n % q == 0]))
        return (lambda x: np.split(x, k, axis=ax)), [uniform(rng, s)]
    if which == "uneven":
        k = draw(st.integers(1, n + 1))
        return (lambda x: np.array_split(x, k, axis=ax)), [uniform(rng, s)]
    if which == "hsplit":
        return (lambda x: np.hsplit(x, [1])), [uniform(rng, s)]
    idx = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    return (lambda x: np.split(x, idx, axis=ax)), [uniform(rng, s)]


@op("flip/roll")
@st.composite
def _flip(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1))
    nd = len(s)
    ax = draw(axis_args(nd))
    sh = draw(st.integers(-5, 5))
    iax = draw(st.integers(-nd, nd - 1))
    f = draw(st.sampled_from([
        lambda x: np.flip(x, ax), lambda x: np.roll(x, sh), lambda x: np.roll(x, sh, axis=iax),
        lambda x: np.roll(x, (sh, 1), axis=(iax, 0)), lambda x: np.flipud(x),
    ]))
    return f, [uniform(rng, s)]


@op("tile/repeat")
@st.composite
def _tile(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(max_dims=2, max_side=3))
    reps = draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 2), min_size=1, max_size=3).map(tuple)))
    r = draw(st.integers(0, 3))
    nd = len(s)
    ax = draw(st.none() | st.integers(-nd, nd - 1)) if nd else None
    rr = None
    if ax is not None:
        rr = np.array(draw(st.lists(st.integers(0, 3), min_size=s[ax], max_size=s[ax])), dtype=int)
    f = draw(st.sampled_from([
        lambda x: np.tile(x, reps), lambda x: np.repeat(x, r, axis=ax),
        lambda x: np.repeat(x, rr, axis=ax) if rr is not None else np.repeat(x, 2),
    ]))
    return f, [uniform(rng, s)]


@op("pad")
@st.composite
def _pad(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, max_dims=2, min_side=2))
    pw = draw(st.one_of(st.integers(0, 2), st.tuples(st.integers(0, 2), st.integers(0, 2))))
    mode = draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    kw = {"constant_values": 1.5} if mode == "constant" else {}
    return (lambda x: np.pad(x, pw, mode=mode, **kw)), [uniform(rng, s)]


@op("diag/diagonal/triu/tril")
@st.composite
def _diag(draw):
    rng = np.random.default_rng(draw(seeds))
    k = draw(st.integers(-2, 2))
    which = draw(st.sampled_from(["diag1", "diag2", "diagonal", "triu", "tril"]))
    if which == "diag1":
        return (lambda v: np.diag(v, k)), [uniform(rng, draw(shapes(min_dims=1, max_dims=1)))]
    s = draw(shapes(min_dims=2, max_dims=3 if which != "diag2" else 2))
    f = {"diag2": lambda x: np.diag(x, k), "diagonal": lambda x: np.diagonal(x, k, -1, 0),
         "triu": lambda x: np.triu(x, k), "tril": lambda x: np.tril(x, k)}[which]
    return f, [uniform(rng, s)]


@op("take/take_along_axis")
@st.composite
def _take(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    nd = len(s)
    ax = draw(st.integers(-nd, nd - 1))
    idx = rng.integers(-s[ax], s[ax], size=draw(st.integers(0, 5)))
    flat = rng.integers(0, int(np.prod(s)), size=(2, 2))
    along = rng.integers(0, s[ax], size=tuple(3 if i == ax % nd else n for i, n in enumerate(s)))
    mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
    f = draw(st.sampled_from([
        lambda x: np.take(x, idx, axis=ax), lambda x: np.take(x, flat), lambda x: np.take(x, idx * 7, axis=ax, mode=mode) if mode != "raise" else np.take(x, 0, axis=ax),
        lambda x: np.take_along_axis(x, along, axis=ax), lambda x: x.take(idx, axis=ax),
    ]))
    return f, [uniform(rng, s)]


@op("where/select")
@st.composite
def _where(draw):
    rng = np.random.default_rng(draw(seeds))
    sc, sa, sb = _bshapes(draw, 3)
    c = rng.random(sc) < 0.5
    which = draw(st.sampled_from(["where", "where0", "select"]))
    if which == "where":
        return (lambda a, b: np.where(c, a, b)), [uniform(rng, sa), uniform(rng, sb)]
    if which == "where0":
        return (lambda a: np.where(a > 0, a, 0.0)), [away(rng, sa)]
    return (lambda a, b: np.select([c, ~c], [a, b * 2.0], default=0.0)), [uniform(rng, sa), uniform(rng, sb)]


@op("clip")
@st.composite
def _clip(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes())
    x = np.asarray(rng.choice([-1.5, -0.3, 0.3, 1.5], size=s) + rng.uniform(-0.1, 0.1, s))
    which = draw(st.sampled_from(["consts", "arrays", "lo only", "method", "deltaad"]))
    if which == "consts":
        return (lambda x: np.clip(x, -1.0, 1.0)), [x]
    if which == "lo only":
        return (lambda x: np.clip(x, -1.0, None)), [x]
    if which == "method":
        return (lambda x: x.clip(max=1.0)), [x]
    if which == "deltaad":
        return (lambda x, lo: d.clip(x, lo, 1.0)), [x, np.full(s, -1.0) + rng.uniform(-0.05, 0.05, s)]
    return (lambda x, lo, hi: np.clip(x, lo, hi)), [x, np.full(s, -1.0), np.full(s[-1:], 1.0)]


@op("sort")
@st.composite
def _sort(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1))
    nd = len(s)
    ax = draw(st.none() | st.integers(-nd, nd - 1))
    return (lambda x: np.sort(x, axis=ax)), [distinct(rng, s)]


@op("diff")
@st.composite
def _diff(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1))
    n = draw(st.integers(0, 2))
    f = draw(st.sampled_from([lambda x: np.diff(x, n), lambda x: np.diff(x, 1, axis=0, prepend=0.5), lambda x: np.diff(x, append=x[..., :1])]))
    return f, [uniform(rng, s)]


@op("astype/copy/real")
@st.composite
def _astype(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes())
    f = draw(st.sampled_from([
        lambda x: x.astype(np.float64) * np.copy(x), lambda x: np.real(x) + x.real + x.conj(),
        lambda x: x.copy() * 2.0 + np.imag(x),
    ]))
    return f, [uniform(rng, s)]


# --------------------------------------------------------------------------------------------
# Indexing and functional updates

INDICES = [
    0, -1, (0, 1), slice(1, None), (slice(None), slice(None, None, 2)), (Ellipsis, 0), (None, 1),
    (1, Ellipsis, None), np.array([0, 2, 0, 1]), [1, 1], (np.array([0, 2]), np.array([1, 1])),
    (slice(None), [0, 0, 3]), np.array([True, False, True]), (0, np.array([True, False, True, True])),
    (), (Ellipsis,), (slice(None, None, -1), 1), (np.array([[0, 1], [2, 2]]), slice(1, 3)),
]


@op("indexing")
@st.composite
def _index(draw):
    rng = np.random.default_rng(draw(seeds))
    idx = draw(st.sampled_from(INDICES))
    return (lambda x: x[idx]), [uniform(rng, (3, 4, 2))]


@op("at[].set/add")
@st.composite
def _at(draw):
    rng = np.random.default_rng(draw(seeds))
    idx, vshape = draw(st.sampled_from([
        (0, (4, 2)), ((1, 2), (2,)), ((1, 2, 0), ()), (np.array([0, 2]), (2, 4, 2)), ((slice(None), 0), (3, 2)),
        (np.array([True, False, True]), (2, 4, 2)), ((Ellipsis, 1), (3, 4)), ((0, slice(1, 3)), (1,)),
    ]))
    mode = draw(st.sampled_from(["set", "add"]))
    if mode == "set":
        return (lambda x, v: d.at(x)[idx].set(v)), [uniform(rng, (3, 4, 2)), uniform(rng, vshape)]
    return (lambda x, v: d.at(x)[idx].add(v * v)), [uniform(rng, (3, 4, 2)), uniform(rng, vshape)]


@op("at[].add repeated indices")
@st.composite
def _at_rep(draw):
    rng = np.random.default_rng(draw(seeds))
    return (lambda x, v: d.at(x)[np.array([0, 0, 2])].add(v)), [uniform(rng, (3, 2)), uniform(rng, (3, 2))]


@op("iteration/len")
@st.composite
def _iter(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    return (lambda x: sum(r * (i + 1) for i, r in enumerate(x)) + len(x)), [uniform(rng, s)]


# --------------------------------------------------------------------------------------------
# Linear algebra


def _spd(rng, n, batch=()):
    b = rng.standard_normal(batch + (n, n))
    return b @ np.swapaxes(b, -1, -2) + n * np.eye(n)


def _wellcond(rng, n, batch=()):
    """Diagonally dominant: |a_ii| >= n + 1 > sum of the rest, so the condition number is small."""
    return rng.uniform(-0.5, 0.5, batch + (n, n)) + (n + 1) * np.eye(n)


@op("linalg.solve")
@st.composite
def _solve(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    bshape = draw(st.sampled_from([(n,), (n, 2), batch + (n, 1)]))
    return np.linalg.solve, [_wellcond(rng, n, batch), uniform(rng, bshape)]


@op("linalg.inv/det/slogdet")
@st.composite
def _inv(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    a = _wellcond(rng, n, batch) * draw(st.sampled_from([1.0, -1.0]))
    f = draw(st.sampled_from([np.linalg.inv, np.linalg.det, np.linalg.slogdet, lambda a: np.linalg.slogdet(a)[1]]))
    return f, [a]


@op("linalg.cholesky")
@st.composite
def _chol(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    upper = draw(st.booleans())
    return (lambda a: np.linalg.cholesky(0.5 * (a + np.swapaxes(a, -1, -2)), upper=upper)), [_spd(rng, n, batch)]


@op("linalg.norm")
@st.composite
def _norm(draw):
    rng = np.random.default_rng(draw(seeds))
    case = draw(st.sampled_from([
        ((4,), None, None), ((4,), 2, None), ((4,), 1, None), ((4,), np.inf, None), ((4,), -np.inf, None),
        ((4,), 3, None), ((3, 2), None, None), ((3, 2), "fro", None), ((3, 2), 1, None), ((3, 2), np.inf, None),
        ((3, 2), -1, None), ((2, 3, 2), None, (0, 2)), ((2, 3), 2, 1), ((2, 3), None, -1), ((2, 3, 4), None, None),
    ]))
    s, ord_, axis = case
    kd = draw(st.booleans())
    return (lambda x: np.linalg.norm(x, ord=ord_, axis=axis, keepdims=kd)), [distinct(rng, s) + 0.07]


@op("linalg.vector_norm/matrix_norm/multi_dot")
@st.composite
def _norm2(draw):
    rng = np.random.default_rng(draw(seeds))
    f = draw(st.sampled_from([
        lambda x: np.linalg.vector_norm(x), lambda x: np.linalg.matrix_norm(x),
        lambda x: np.linalg.vector_norm(x, axis=(0, 1), keepdims=True),
        lambda x: np.linalg.multi_dot([x, x.T, x]),
    ]))
    return f, [distinct(rng, (3, 3)) + 0.07]


# --------------------------------------------------------------------------------------------
# The tests


SECOND_ORDER = [n for n in OPS if n not in NO_SECOND]


@pytest.mark.parametrize("name", list(OPS))
def test_first_order(name):
    @FIRST
    @given(OPS[name](), seeds)
    def run(fa, seed):
        f, args = fa
        check_first_order(f, args, seed)

    run()


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order(name):
    @SECOND
    @given(OPS[name](), seeds)
    def run(fa, seed):
        f, args = fa
        check_second_order(f, args, seed)

    run()


@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(shapes(min_dims=1, max_dims=4, max_side=5), st.data())
def test_unbroadcast_sums_like_numpy(shape, data):
    """The cotangent sum over broadcast axes (einsum on the fast path) equals np.sum."""
    from deltaad.numpy.array import _sum_axes
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    dtype = data.draw(st.sampled_from([np.float64, np.float32]))
    g = np.random.default_rng(data.draw(seeds)).uniform(-2, 2, shape).astype(dtype)
    got, want = _sum_axes(g, axes), np.sum(g, axis=axes)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
    tol = 1e-5 if dtype is np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
