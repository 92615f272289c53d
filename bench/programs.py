"""The benchmark programs: plain Python written once, generic over the number type.

A program is a function ``fn(ns, n, xs)`` of a size ``n`` and an input ``xs`` (a flat list of
floats) returning one real number. Every arithmetic operation is an ordinary Python operator,
so the same code runs on floats, deltaad duals, torch tensors, autograd boxes, jax arrays and
the ablations' own dual types. Elementary functions come from the namespace ``ns`` (see
:class:`NS`): ``math`` for floats, ``deltaad``'s for duals, ``torch``'s for tensors, ...

Each program also declares its operation count ``ops(n)`` (the number of primitive operations
on values that depend on the input: exactly the number of bindings deltaad records, checked by
the reference run), an input generator, the sizes of each preset and which modes it supports.

Adding a program: write ``fn``, describe it with :class:`Program` and :func:`register` it. A
program that is not scalar Python (say numpy array code) sets ``kind="array"`` (only modes
whose ``kinds`` include "array" run it) or lists its modes explicitly in ``modes``.
"""

import math
import random

from .program import PROGRAMS, Program, register  # noqa: F401 (PROGRAMS: read from here)


class NS:
    """The elementary functions for one number type: ``ns.sin(x)``, ``ns.cos``, ``ns.exp``,
    ``ns.sqrt``. ``extra`` adds more (e.g. ``log``, ``tanh``) for programs that need them."""

    def __init__(self, name, sin, cos, exp, sqrt, **extra):
        self.name = name
        self.sin = sin
        self.cos = cos
        self.exp = exp
        self.sqrt = sqrt
        self.fori_loop = plain_fori_loop
        for k, v in extra.items():
            setattr(self, k, v)

    def __repr__(self):
        return "NS(%s)" % self.name


def plain_fori_loop(lower, upper, body, val):
    """``jax.lax.fori_loop``'s meaning as a Python loop (every namespace's default)."""
    for i in range(lower, upper):
        val = body(i, val)
    return val


FLOAT_NS = NS("float", math.sin, math.cos, math.exp, math.sqrt, log=math.log, tanh=math.tanh)


# --------------------------------------------------------------------------------------------
# The programs


def taylor(ns, n, xs):
    """Taylor series of 1/x around 1 (the thesis's benchmark loop); 4 operations a step."""
    x = xs[0]
    prev = 1.0
    acc = 1.0
    for _ in range(n):
        prev = prev * (-(x - 1.0))
        acc = prev + acc
    return acc


def letchain(ns, n, xs):
    """``x = (x + x) * 0.5`` n times: the sharing test of paper §7 (a Delta tree without
    ``Let`` doubles at every step). 2 operations a step."""
    x = xs[0]
    for _ in range(n):
        x = (x + x) * 0.5
    return x


def rosenbrock(ns, n, xs):
    """Rosenbrock plus sine over the list of n floats; 10 operations per term."""
    s = 0.0
    a = xs[0]
    for i in range(1, n):
        b = xs[i]
        t = b - a * a
        u = 1.0 - a
        s = s + 100.0 * (t * t) + u * u + ns.sin(a)
        a = b
    return s


# quaternion: rotate_vec_by_quat of paper 003, Fig. 12, written over tuples


def _dot(p, q):
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


def _vadd(p, q):
    return (p[0] + q[0], p[1] + q[1], p[2] + q[2])


def _scale(k, v):
    return (k * v[0], k * v[1], k * v[2])


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0])


def rotate_vec_by_quat(v, q):
    """Fig. 12: ``v`` a vec3, ``q`` a quaternion (x, y, z, w); 38 operations."""
    u = (q[0], q[1], q[2])
    s = q[3]
    return _vadd(_vadd(_scale(2.0 * _dot(u, v), u),
                       _scale(s * s - _dot(u, u), v)),
                 _scale(2.0 * s, _cross(u, v)))


def quaternion(ns, n, xs):
    """Sum of the components of ``rotate_vec_by_quat(v_i, q_i)`` over n (q, v) pairs; the input
    is 7n floats (q then v for each pair); 41 operations a pair."""
    total = 0.0
    for i in range(n):
        k = 7 * i
        q = (xs[k], xs[k + 1], xs[k + 2], xs[k + 3])
        v = (xs[k + 4], xs[k + 5], xs[k + 6])
        r = rotate_vec_by_quat(v, q)
        total = total + (r[0] + r[1] + r[2])
    return total


# ode: RK4 of Lotka-Volterra

ODE_H = 0.01


def _lotka_volterra(alpha, beta, delta, gamma, x, y):
    xy = x * y
    return alpha * x - beta * xy, delta * xy - gamma * y  # 7 operations


def ode(ns, n, xs):
    """n RK4 steps (h = 0.01) of Lotka-Volterra; input (alpha, beta, delta, gamma, x0, y0);
    output x + y at the end. 54 operations a step, plus 1."""
    alpha, beta, delta, gamma, x, y = xs
    h = ODE_H
    h2 = 0.5 * h
    h6 = h / 6.0
    f = _lotka_volterra
    for _ in range(n):
        k1x, k1y = f(alpha, beta, delta, gamma, x, y)
        k2x, k2y = f(alpha, beta, delta, gamma, x + h2 * k1x, y + h2 * k1y)
        k3x, k3y = f(alpha, beta, delta, gamma, x + h2 * k2x, y + h2 * k2y)
        k4x, k4y = f(alpha, beta, delta, gamma, x + h * k3x, y + h * k3y)
        x = x + h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h6 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
    return x + y


# per-input and comparison-heavy shapes: little work per input, branches on values


def sumsq(ns, n, xs):
    """Sum of squares of a list of n floats: 2 operations per input, so the cost of making
    each input's dual and reading its gradient back shows."""
    s = 0.0
    for v in xs:
        s = s + v * v
    return s


def logsumexp(ns, n, xs):
    """log(sum(exp(v - max))) over n logits, the maximum found by comparisons (``if v > mx``):
    n comparisons of duals, which record nothing, and 3 operations per logit, plus 2."""
    mx = xs[0]
    for v in xs:
        if v > mx:
            mx = v
    s = 0.0
    for v in xs:
        s = s + ns.exp(v - mx)
    return ns.log(s) + mx


def listsum(ns, n, xs):
    """The sum of a list of n floats by a loop: one operation per input, so nearly all of a
    gradient's cost is making each input's dual and reading its gradient back."""
    s = 0.0
    for v in xs:
        s = s + v
    return s


def branches(ns, n, xs):
    """Comparison-heavy: the running maximum and its index by ``if v > mx`` (n comparisons of
    duals, which record nothing), then a sum of a piecewise (clipped) function of each input
    whose piece is chosen by ``if`` (one or two more comparisons per input), plus the value at
    the argmax. 2 operations per input, plus 2."""
    mx = xs[0]
    arg = 0
    for i in range(n):
        v = xs[i]
        if v > mx:
            mx = v
            arg = i
    s = mx * 1.0
    for v in xs:
        if v > 0.5:
            s = s + 0.5 * v
        elif v < -0.5:
            s = s - 0.5 * v
        else:
            s = s + v * v
    return s + xs[arg]


def elementwise(ns, n, xs):
    """An elementwise map returning a list of n outputs, ``sin(v) * v``: 2 operations per
    input. Reverse modes pull back a list cotangent (one seed per output, one sweep): for an
    elementwise map that gives every Jacobian entry, one per input."""
    sin = ns.sin
    return [sin(v) * v for v in xs]


def jacmap(ns, n, xs):
    """The Jacobian of an elementwise map, ``sin(v) * v`` over n floats (``elementwise``'s),
    by ``jacrev``: the dense n x n array a JAX user gets, one backward sweep per output. Its
    float baseline runs the map once per Jacobian row (n runs: what a finite-difference
    Jacobian costs), so ``ops`` counts 2n per run, 2n^2 in all; n <= 2000 (n^2 <= 4e6)."""
    sin = ns.sin
    return [sin(v) * v for v in xs]


def odeloop(ns, n, xs):
    """``ode`` written as ``ns.fori_loop`` over the state (x, y), the parameters read from the
    enclosing scope (so a checkpointed loop must handle duals captured by its body): n RK4
    steps, 54 operations a step, plus 1."""
    alpha, beta, delta, gamma, x0, y0 = xs
    h = ODE_H
    h2 = 0.5 * h
    h6 = h / 6.0
    f = _lotka_volterra

    def step(i, s):
        x, y = s
        k1x, k1y = f(alpha, beta, delta, gamma, x, y)
        k2x, k2y = f(alpha, beta, delta, gamma, x + h2 * k1x, y + h2 * k1y)
        k3x, k3y = f(alpha, beta, delta, gamma, x + h2 * k2x, y + h2 * k2y)
        k4x, k4y = f(alpha, beta, delta, gamma, x + h * k3x, y + h * k3y)
        return (x + h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x),
                y + h6 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y))

    x, y = ns.fori_loop(0, n, step, (x0, y0))
    return x + y


def newton(ns, n, xs):
    """n square roots by Newton's iteration to a relative tolerance, summed: a ``while`` loop
    whose trip count depends on the values (about 6 steps of 7 operations per input in
    [1, 4]); ``ops`` is an estimate, not a count."""
    s = 0.0
    for a in xs:
        x = a
        while abs(x * x - a) > 1e-12 * a:
            x = 0.5 * (x + a / x)
        s = s + x
    return s


# --------------------------------------------------------------------------------------------
# Inputs


def _uniform(n, lo, hi):
    def make(size, rng):
        return [rng.uniform(lo, hi) for _ in range(n(size))]
    return make


def _ode_input(n, rng):
    base = (1.1, 0.4, 0.1, 0.4, 10.0, 10.0)
    return [b * rng.uniform(0.95, 1.05) for b in base]


def _taylor_input(n, rng):
    return [0.5]


def _letchain_input(n, rng):
    return [rng.uniform(0.5, 1.5)]


# --------------------------------------------------------------------------------------------
# The registry


register(Program(
    "taylor", taylor, lambda n: 4 * n, _taylor_input, n_max=1_000_000, check_n=20,
    ladder=[4, 8, 16, 32, 64, 128],
    description="Taylor series of 1/x at 1, x = 0.5 (the loop of Sigal's benchmarks)", ops_text="4n"))
register(Program(
    "letchain", letchain, lambda n: 2 * n, _letchain_input, n_max=1_000_000, check_n=8,
    ladder=[2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24],
    description="x = (x + x) * 0.5 repeated n times (sharing: a Delta tree doubles)", ops_text="2n"))
register(Program(
    "rosenbrock", rosenbrock, lambda n: 10 * (n - 1), _uniform(lambda n: n, -1.0, 1.0),
    n_max=200_000, check_n=12, ladder=[2, 4, 8, 16, 32],
    description="Rosenbrock + sine over a list of n floats, gradient w.r.t. the list",
    ops_text="10(n-1)"))
register(Program(
    "quaternion", quaternion, lambda n: 41 * n, _uniform(lambda n: 7 * n, -1.0, 1.0),
    n_max=50_000, check_n=3, ladder=[1, 2, 4, 8],
    description="rotate_vec_by_quat (Krawiec et al., Fig. 12) over n random (q, v) pairs, summed",
    ops_text="41n"))
register(Program(
    "ode", ode, lambda n: 54 * n + 1, _ode_input, n_max=40_000, check_n=2,
    ladder=[1, 2, 3, 4, 5, 6, 7, 8],
    description="RK4 of Lotka-Volterra for n steps, gradient w.r.t. parameters and initial state",
    ops_text="54n+1"))
register(Program(
    "sumsq", sumsq, lambda n: 2 * n, _uniform(lambda n: n, -1.0, 1.0),
    n_max=1_000_000, check_n=12, ladder=[2, 4, 8, 16, 32],
    description="sum of v*v over a list of n floats (per-input cost)", ops_text="2n"))
register(Program(
    "logsumexp", logsumexp, lambda n: 3 * n + 2, _uniform(lambda n: n, -3.0, 3.0),
    n_max=1_000_000, check_n=12, ladder=[2, 4, 8, 16, 32],
    description="log-sum-exp of n logits, the maximum by comparisons of duals (if v > mx)",
    ops_text="3n+2"))
register(Program(
    "listsum", listsum, lambda n: n, _uniform(lambda n: n, -1.0, 1.0),
    n_max=1_000_000, check_n=12, ladder=[2, 4, 8, 16, 32],
    description="sum of a list of n floats by a loop: one operation per input (per-input cost)",
    ops_text="n"))
register(Program(
    "branches", branches, lambda n: 2 * n + 2, _uniform(lambda n: n, -1.0, 1.0),
    n_max=1_000_000, check_n=12, ladder=[2, 4, 8, 16, 32],
    description="running max and argmax by if v > mx, then a clipped sum whose piece is chosen "
                "by if: about 3 comparisons of duals per input",
    ops_text="2n+2"))
register(Program(
    "elementwise", elementwise, lambda n: 2 * n, _uniform(lambda n: n, -2.0, 2.0),
    n_max=1_000_000, check_n=12, output="list",
    modes=("float", "deltaad-c", "deltaad-python", "deltaad-c-fwd", "deltaad-python-fwd",
           "deltaad-wrong"),
    description="[sin(v) * v for v in xs]: a list of n outputs, pulled back with a list "
                "cotangent of ones (reverse) or pushed forward (jvp)", ops_text="2n"))
register(Program(
    "jacrev", jacmap, lambda n: 2 * n * n, _uniform(lambda n: n, -2.0, 2.0),
    n_max=2000, check_n=6, output="jacobian", float_runs=lambda n: n, ops_are_bindings=False,
    modes=("float", "deltaad-c", "deltaad-python", "deltaad-wrong"),
    preset_sizes={"full": [63, 89, 126, 178, 251, 355, 502, 709, 1002, 1416, 2000]},
    description="jacrev of [sin(v) * v for v in xs]: the dense n x n Jacobian, against the "
                "map run once per row (n runs)", ops_text="2n^2"))
register(Program(
    "newton", newton, lambda n: 42 * n, _uniform(lambda n: n, 1.0, 4.0),
    n_max=20_000, check_n=4, ops_are_bindings=False,
    modes=("float", "deltaad-c", "deltaad-python", "deltaad-compiled"),
    description="n Newton square roots to a relative tolerance (a while loop on values)",
    ops_text="~42n"))


register(Program(
    "odeloop", odeloop, lambda n: 54 * n + 1, _ode_input, n_max=100_000, check_n=3,
    kind="loop",
    description="ode as a fori_loop whose body captures the parameters; the checkpointed modes "
                "run it with fori_loop(..., checkpoints=c)",
    ops_text="54n+1",
    preset_sizes={"tiny": [1, 3, 9], "quick": [250, 500, 1000, 2000, 4000],
                  "full": [1000, 1585, 2512, 3981, 6310, 10000, 15849, 25119, 39811, 63096,
                           100000]}))


def make_input(program, n, seed):
    """The input of ``program`` at size ``n``: deterministic in (program, n, seed)."""
    rng = random.Random("%s/%d/%d" % (program.name, n, seed))
    return program.make_input(n, rng)


def random_direction(xs, seed):
    """A random tangent with the structure of ``xs`` (floats, lists, tuples, numpy arrays)."""
    rng = random.Random("direction/%d/%d" % (count_leaves(xs), seed))

    def like(x):
        if isinstance(x, list):
            return [like(v) for v in x]
        if isinstance(x, tuple):
            return tuple(like(v) for v in x)
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            import numpy as np

            return np.array([rng.gauss(0.0, 1.0) for _ in range(x.size)]).reshape(x.shape)
        return rng.gauss(0.0, 1.0)
    return like(xs)


def count_leaves(xs):
    """Number of differentiable leaves (floats or arrays) in ``xs``: deltaad's input bindings."""
    if isinstance(xs, (list, tuple)):
        return sum(count_leaves(v) for v in xs)
    return 1


def unflatten_like(template, flat):
    """Rebuild ``template``'s structure (floats, lists, tuples, numpy arrays) from the flat
    sequence of floats ``flat`` (the inverse of ``bench.worker.flatten``)."""
    it = iter(flat)

    def build(x):
        if isinstance(x, list):
            return [build(v) for v in x]
        if isinstance(x, tuple):
            return tuple(build(v) for v in x)
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            import numpy as np

            return np.fromiter(it, dtype=x.dtype, count=x.size).reshape(x.shape)
        return next(it)
    return build(template)


from . import array_programs  # noqa: E402,F401  (registers mlp, gmm, smallops)
