"""Shared test helpers: finite differences, float comparison, bit equality, random programs.

Nothing here calls deltaad to compute an expected value: references come from ``math``,
finite differences, or hand-derived formulas. The random-program strategy produces
straight-line programs that can be run with any namespace of math functions (deltaad's public
functions, one backend module, or plain ``math`` on floats).
"""

import math
import struct

from hypothesis import settings
from hypothesis import strategies as st


def scaled(frac):
    """Settings with a fraction of the profile's ``max_examples`` (at least 5): for the tests
    parametrised over many functions, where the parametrisation already multiplies the work."""
    return settings(max_examples=max(5, int(settings().max_examples * frac)))

# --------------------------------------------------------------------------------------------
# Finite differences and comparisons


def step_for(x, rel=1e-4):
    """A finite-difference step scaled to ``|x|`` (never below ``rel``)."""
    return rel * max(1.0, abs(x))


def fd(f, x, h=None):
    """Fourth-order central difference of a scalar function at ``x``."""
    if h is None:
        h = step_for(x)
    return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)


def fd_partial(f, args, k, h=None):
    """Partial derivative of ``f(*args)`` with respect to argument ``k`` (floats)."""
    args = list(args)

    def g(t):
        a = list(args)
        a[k] = t
        return f(*a)

    return fd(g, args[k], h)


def close(a, b, rtol=1e-5, atol=1e-8):
    """``|a - b| <= rtol * max(|a|, |b|) + atol`` (both nan counts as equal)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + atol


def assert_close(a, b, rtol=1e-5, atol=1e-8, what=""):
    assert close(a, b, rtol, atol), "%s: %r vs %r (diff %.3g, rtol %g, atol %g)" % (
        what, a, b, abs(a - b), rtol, atol)


def bits(x):
    """The bit pattern of a float; every nan maps to one token (nan payloads may differ)."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    return struct.pack("<d", x)


def scalar_of(prog):
    """A random program (``programs``) as a function of its inputs returning one real: the
    sum of its outputs, computed with deltaad's functions."""
    import deltaad

    def f(*xs):
        outs = prog.run(deltaad, xs)
        s = outs[0]
        for o in outs[1:]:
            s = s + o
        return s
    return f


def agree_on(cg, g, points, same):
    """``cg`` (a compiled ``g``) and ``g`` called on every point in order: results equal by
    ``same``, or the same exception; ``cg`` is returned (for its recording counts)."""
    import pytest
    for xs in points:
        try:
            want = g(*xs)
        except Exception as e:  # noqa: BLE001 - the compiled call must raise the same
            with pytest.raises(type(e)):
                cg(*xs)
            continue
        got = cg(*xs)
        assert same(got, want), (xs, got, want)
    return cg


def same_bits(a, b):
    return bits(a) == bits(b)


def tree_bits(x):
    """The bit patterns of every number in ``x`` (nested tuples, lists, dicts, arrays, None),
    with its structure, shapes and dtypes: equal exactly when two results agree to the bit
    (every nan counts as one)."""
    import numpy as np
    if x is None or isinstance(x, (str, bool, int)) and not isinstance(x, float):
        return x
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(tree_bits(e) for e in x)
    if isinstance(x, dict):
        return tuple((k, tree_bits(v)) for k, v in sorted(x.items()))
    a = np.asarray(x)
    if a.dtype.kind in "fc":
        a = np.where(np.isnan(a), np.nan, a)  # one nan
    return (a.dtype.str, a.shape, a.tobytes())


# --------------------------------------------------------------------------------------------
# The elementwise table as the tests see it


class Bound:
    """An entry with an order (``polygamma(n, x)``, ``jv(v, x)``) bound to one order: to the
    tests a function of one real like the others, named ``polygamma[2]``, ``jv[0.5]``."""

    def __init__(self, e, n):
        self.entry = e
        self.n = n  # a number, or a tuple for several orders (betainc(a, b, x))
        ns = n if isinstance(n, tuple) else (n,)
        self.orders_ = ns
        self.name = "%s[%s]" % (e.name, ",".join(map(str, ns)))
        self.arity = 1
        self.orders = 0
        self.float = lambda x: e.float(*ns, x)
        self.array = lambda x: e.array(*ns, x)
        self.derivative = lambda ns_, x, y: e.derivative(ns_, *ns, x, y)
        for a in ("domain", "chosen", "edges", "math", "ufuncs", "needs"):
            setattr(self, a, getattr(e, a))

    def __repr__(self):
        return "<%s>" % self.name


REAL_ORDERS = (0.5, 1.0, 2.5)


def unary_entries(table, orders=range(4)):
    """The table's functions of one real: its unary entries, and each entry with an order
    bound to ``orders`` (integers) or to ``REAL_ORDERS`` (real parameters), those in the
    order's domain."""
    out = [e for e in table if e.arity == 1 and not e.orders]
    for e in table:
        if e.orders:
            picks = [n for n in (orders if e.order.integer else REAL_ORDERS)
                     if n in e.order.domain]
            if e.orders == 2:
                picks = [(a, b) for a in picks for b in picks]
            elif e.orders == 3:  # three parameters: a few triples, not all of them
                picks = [(a, b, c) for a in picks for b in picks for c in picks][::5]
            out += [Bound(e, n) for n in picks if _defined(e, n)]
    return out


def _defined(e, n):
    """Whether entry ``e`` bound to the orders ``n`` is a function at all: not nan at a point
    of its domain (``lpmv`` needs an integer m, ``bdtri`` a count k below the trials n)."""
    import warnings

    import numpy as np

    x = 0.5 if 0.5 in e.domain else e.domain.lo + 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return not np.isnan(e.array(*(n if isinstance(n, tuple) else (n,)), x))
        except ImportError:  # scipy is optional: keep the entry (its tests skip)
            return True


def scipy_hangs(name, x):
    """Points where scipy's own function does not return: ``hyp1f1`` for large positive x
    (from about 1e15; its value overflows from about 700, so every x above 700 is skipped)."""
    return name.startswith("hyp1f1") and x > 700


def function(e, module):
    """The function of (possibly bound) entry ``e`` in ``module`` (deltaad or a backend)."""
    if isinstance(e, Bound):
        f = getattr(module, e.entry.name)
        return lambda x: f(*e.orders_, x)
    return getattr(module, e.name)


# --------------------------------------------------------------------------------------------
# Plain-float reference functions (deltaad exposes these; math does not, or not by this name)


def ref_sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def ref_softplus(x):
    return math.log1p(math.exp(x)) if x < 30 else x + math.log1p(math.exp(-x))


def ref_logaddexp(a, b):
    import numpy as np

    return float(np.logaddexp(a, b))


class FloatMath:
    """The names the random programs use, on plain floats, from ``math``."""

    sin = staticmethod(math.sin)
    cos = staticmethod(math.cos)
    tan = staticmethod(math.tan)
    tanh = staticmethod(math.tanh)
    arctan = staticmethod(math.atan)
    arcsinh = staticmethod(math.asinh)
    exp = staticmethod(math.exp)
    expm1 = staticmethod(math.expm1)
    log = staticmethod(math.log)
    log1p = staticmethod(math.log1p)
    sqrt = staticmethod(math.sqrt)
    cbrt = staticmethod(math.cbrt)
    erf = staticmethod(math.erf)
    absolute = staticmethod(abs)
    hypot = staticmethod(math.hypot)
    arctan2 = staticmethod(math.atan2)
    sigmoid = staticmethod(ref_sigmoid)
    softplus = staticmethod(ref_softplus)
    logaddexp = staticmethod(ref_logaddexp)

    @staticmethod
    def power(a, b):
        return a ** b


# --------------------------------------------------------------------------------------------
# Random straight-line programs
#
# Each op takes a namespace ``F`` (deltaad, a backend module or FloatMath) and two operands
# chosen among the values computed so far. The ops are built so that they are defined for every
# real operand (denominators and logarithm arguments are kept positive) and use only the names
# that deltaad, both backends and FloatMath share. They exercise every operator in both operand
# orders with float and int constants, most elementary functions, and data-dependent branches.

OPS = {
    "add": lambda F, a, b: a + b,
    "sub": lambda F, a, b: a - b,
    "mul": lambda F, a, b: a * b,
    "div": lambda F, a, b: a / (1.5 + F.sin(b)),
    "rdiv": lambda F, a, b: 2.0 / (1.25 + F.tanh(a)),
    "radd_int": lambda F, a, b: 3 + a,
    "rsub": lambda F, a, b: 0.75 - a,
    "rmul_int": lambda F, a, b: -2 * a,
    "neg": lambda F, a, b: -a,
    "sq": lambda F, a, b: a * a,
    "powi": lambda F, a, b: a ** 3,
    "powf": lambda F, a, b: (1.0 + a * a) ** 0.7,
    "pow_dual": lambda F, a, b: (1.5 + F.sin(a)) ** F.cos(b),
    "rpow": lambda F, a, b: 1.5 ** F.sin(a),
    "power": lambda F, a, b: F.power(2.0 + F.tanh(b), a * 0.25),
    "sin": lambda F, a, b: F.sin(a),
    "cos": lambda F, a, b: F.cos(a),
    "tan": lambda F, a, b: F.tan(0.5 * F.tanh(a)),
    "tanh": lambda F, a, b: F.tanh(a),
    "arctan": lambda F, a, b: F.arctan(a),
    "arcsinh": lambda F, a, b: F.arcsinh(a),
    "exp": lambda F, a, b: F.exp(F.sin(a)),
    "expm1": lambda F, a, b: F.expm1(F.cos(a)),
    "log": lambda F, a, b: F.log(1.0 + a * a),
    "log1p": lambda F, a, b: F.log1p(b * b),
    "sqrt": lambda F, a, b: F.sqrt(2.0 + F.cos(a)),
    "cbrt": lambda F, a, b: F.cbrt(a + 0.5),
    "erf": lambda F, a, b: F.erf(a),
    "sigmoid": lambda F, a, b: F.sigmoid(a),
    "softplus": lambda F, a, b: F.softplus(a),
    "abs": lambda F, a, b: F.absolute(a - 0.3),
    "hypot": lambda F, a, b: F.hypot(a, b),
    "arctan2": lambda F, a, b: F.arctan2(a, 1.5 + F.cos(b)),
    "logaddexp": lambda F, a, b: F.logaddexp(a, b),
    "branch": lambda F, a, b: a * b if a > b else a - b,
    "max": lambda F, a, b: a if a >= b else b,
    "mod": lambda F, a, b: a % 1.75,
    "const_mix": lambda F, a, b: a * 0.5 + b * 0.25,
}

OP_NAMES = sorted(OPS)


class Program:
    """A straight-line program: ``n_in`` inputs, a list of ``(op, i, j)`` steps, output indices."""

    def __init__(self, n_in, steps, outs):
        self.n_in = n_in
        self.steps = steps
        self.outs = outs

    def values(self, F, xs):
        vals = list(xs)
        for op, i, j in self.steps:
            vals.append(OPS[op](F, vals[i], vals[j]))
        return vals

    def run(self, F, xs):
        """The outputs as a list."""
        vals = self.values(F, xs)
        return [vals[k] for k in self.outs]

    def __repr__(self):
        lines = ["Program(n_in=%d):" % self.n_in]
        for k, (op, i, j) in enumerate(self.steps):
            lines.append("  v%d = %s(v%d, v%d)" % (self.n_in + k, op, i, j))
        lines.append("  return %s" % ", ".join("v%d" % k for k in self.outs))
        return "\n".join(lines)


@st.composite
def programs(draw, min_in=1, max_in=4, min_ops=1, max_ops=14, min_out=1, max_out=3, ops=None):
    names = OP_NAMES if ops is None else sorted(ops)
    n_in = draw(st.integers(min_in, max_in))
    n_ops = draw(st.integers(min_ops, max_ops))
    steps = []
    for k in range(n_ops):
        n = n_in + k
        op = draw(st.sampled_from(names))
        # bias towards recent values so that programs are deep, not only wide
        i = draw(st.integers(max(0, n - 4), n - 1) | st.integers(0, n - 1))
        j = draw(st.integers(0, n - 1))
        steps.append((op, i, j))
    total = n_in + n_ops
    n_out = draw(st.integers(min_out, max_out))
    outs = [total - 1] + [draw(st.integers(0, total - 1)) for _ in range(n_out - 1)]
    return Program(n_in, steps, outs)


def program_is_tame(prog, xs, bound=1e6):
    """True if every intermediate value of ``prog`` on floats is finite and below ``bound``,
    and no data-dependent branch or ``%`` is within a hair of its switching point (so both modes
    and finite differences see the same piece)."""
    vals = list(xs)
    try:
        for op, i, j in prog.steps:
            a, b = vals[i], vals[j]
            if op in ("branch", "max") and abs(a - b) < 1e-3:
                return False
            if op == "mod":
                r = a % 1.75
                if r < 1e-3 or r > 1.75 - 1e-3:
                    return False
            if op == "abs" and abs(a - 0.3) < 1e-3:
                return False
            if op == "cbrt" and abs(a + 0.5) < 1e-2:
                return False
            if op == "hypot" and math.hypot(a, b) < 1e-2:
                return False
            v = OPS[op](FloatMath, a, b)
            if not math.isfinite(v) or abs(v) > bound:
                return False
            vals.append(v)
    except (OverflowError, ValueError, ZeroDivisionError):
        return False
    return True


finite_inputs = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False)


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))
