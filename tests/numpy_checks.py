"""Shared checks and strategies for the numpy tests: reverse mode, forward mode and central finite differences
agree on a random direction, and the paper's Lemma 1 (``<u, J v> == <J^T u, v>``) holds.

Everything is checked along random directions (a cotangent ``u`` on the outputs, a tangent
``v`` on the inputs) so that a check costs a handful of evaluations whatever the sizes.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import deltaad as d
from deltaad.pytrees import tree_flatten, tree_unflatten


def leaves(tree):
    return tree_flatten(tree)[0]


def is_float_leaf(x):
    return isinstance(x, (float, np.floating)) or isinstance(x, np.ndarray) and x.dtype.kind == "f"


def random_like(rng, x):
    if isinstance(x, np.ndarray):
        return rng.standard_normal(x.shape)
    return float(rng.standard_normal())


def inner(a_tree, b_tree):
    """Sum of elementwise products over matching float leaves (None counts as zero)."""
    tot = 0.0
    for a, b in zip(leaves(a_tree), leaves(b_tree)):
        if a is None or b is None:
            continue
        tot += float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))
    return tot


def fd_directional(phi, h=1e-3):
    """d/ds phi(s) at 0 by the fourth-order central difference."""
    return (-phi(2 * h) + 8 * phi(h) - 8 * phi(-h) + phi(-2 * h)) / (12 * h)


def _plain_output(out):
    """Output leaves with the float ones as float64 arrays; others kept (not compared)."""
    return [np.asarray(x, dtype=float) if is_float_leaf(x) else x for x in leaves(out)]


def _within(a, b, rtol, atol):
    return abs(a - b) <= atol * max(1.0, abs(a), abs(b)) + rtol * max(abs(a), abs(b))


def close(a, b, rtol=2e-6, atol=2e-7, what=""):
    assert _within(a, b, rtol, atol), "%s: %r vs %r" % (what, a, b)


def check_first_order(f, args, seed=0, rtol=1e-5, atol=1e-6, check_value=True):
    """Reverse, forward and FD agree along random directions; Lemma 1 holds tightly."""
    rng = np.random.default_rng(seed)
    args = tuple(args)
    expected = f(*args)  # plain numpy
    out, pb = d.vjp(f, *args)
    if check_value:
        for a, b in zip(_plain_output(out), _plain_output(expected)):
            if isinstance(a, np.ndarray):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)
                assert np.shape(a) == np.shape(b)
    out_leaves, out_def = tree_flatten(out)
    u_leaves = [random_like(rng, np.asarray(x)) if is_float_leaf(x) else None for x in out_leaves]
    u = tree_unflatten(out_def, u_leaves)
    v = tuple(random_like(rng, np.asarray(a)) if isinstance(a, np.ndarray) else random_like(rng, a) for a in args)
    g = pb(u)
    assert len(g) == len(args)
    for gi, a in zip(g, args):
        assert np.shape(gi) == np.shape(a), (np.shape(gi), np.shape(a))
        if isinstance(a, np.ndarray):
            assert isinstance(gi, np.ndarray) and gi.dtype == a.dtype
    rev = inner(g, v)
    out2, t = d.jvp(f, args, v)
    for a, b in zip(_plain_output(out2), _plain_output(expected)):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)
    t_leaves = leaves(t)
    for x, tx in zip(out_leaves, t_leaves):
        if is_float_leaf(x):
            assert np.shape(tx) == np.shape(x), (np.shape(tx), np.shape(x))
    fwd = inner(u, t)
    close(rev, fwd, rtol=1e-9, atol=1e-10, what="Lemma 1 <u, jvp v> vs <vjp u, v>")

    def phi(s):
        xs = tuple(np.asarray(a + s * vi) if isinstance(a, np.ndarray) else a + s * vi for a, vi in zip(args, v))
        return inner(u, f(*xs))

    fd = _converged_fd(phi, rev, rtol, atol)
    close(rev, fd, rtol, atol, "reverse vs finite differences")
    close(fwd, fd, rtol, atol, "forward vs finite differences")
    return rev


def _converged_fd(phi, want, rtol, atol):
    """The directional difference at the step 1e-3, or at a smaller one (to 1e-5) where the
    larger misses ``want``: a random composition can curve so fast that the step's error
    passes the tolerance (seed 37622 of the fast path's programs: 1756.5 at 1e-3 against the
    derivative 1767.8, 1767.81 at 1e-5), while a wrong derivative is missed at every step."""
    for h in (1e-3, 1e-4, 1e-5):
        fd = fd_directional(phi, h)
        if _within(want, fd, rtol, atol):  # (``close``'s test)
            break
    return fd


def scalarize(f, u):
    """``x -> <u, f(x)>``: a real function whose derivatives are ``u``-weighted ones of ``f``."""
    u_leaves = leaves(u)

    def g(*xs):
        out = f(*xs)
        tot = 0.0
        for y, ui in zip(leaves(out), u_leaves):
            if ui is None or y is None:
                continue
            tot = tot + np.sum(y * ui)
        return tot

    return g


def check_second_order(f, args, seed=0, rtol=1e-4, atol=1e-5, modes=("fr", "rr", "rf", "ff")):
    """Hessian-vector products of ``<u, f(x)>`` by all four nestings against FD of the gradient."""
    rng = np.random.default_rng(seed + 1)
    args = tuple(args)
    out = f(*args)
    u = tree_unflatten(tree_flatten(out)[1], [random_like(rng, np.asarray(x)) if is_float_leaf(x) else None for x in leaves(out)])
    g = scalarize(f, u)
    n = len(args)
    nums = tuple(range(n))
    v = tuple(random_like(rng, a) for a in args)
    w = tuple(random_like(rng, a) for a in args)
    grad = d.grad(g, argnums=nums)

    def phi(s):
        xs = tuple(np.asarray(a + s * vi) if isinstance(a, np.ndarray) else a + s * vi for a, vi in zip(args, v))
        return inner(grad(*xs), w)

    fd = fd_directional(phi)
    if "fr" in modes:  # forward over reverse
        _, hv = d.jvp(grad, args, v)
        close(inner(hv, w), fd, rtol, atol, "forward-over-reverse Hv")
    if "rr" in modes:  # reverse over reverse
        def gv(*xs):
            gs = grad(*xs)
            return sum(np.sum(gi * vi) for gi, vi in zip(gs, v))

        hv = d.grad(gv, argnums=nums)(*args)
        close(inner(hv, w), fd, rtol, atol, "reverse-over-reverse Hv")
    if "rf" in modes:  # reverse over forward
        def jv(*xs):
            return d.jvp(g, xs, v)[1]

        hv = d.grad(jv, argnums=nums)(*args)
        close(inner(hv, w), fd, rtol, atol, "reverse-over-forward Hv")
    if "ff" in modes:  # forward over forward
        def jv2(*xs):
            return d.jvp(g, xs, v)[1]

        _, whv = d.jvp(jv2, args, w)
        close(float(whv), fd, rtol, atol, "forward-over-forward wHv")


# --------------------------------------------------------------------------------------------
# Strategies, and the functions of a rule family under test

seeds = st.integers(0, 2**31 - 1)


def bshapes(draw, n=2):
    """``n`` mutually broadcastable shapes, drawn with ``draw``."""
    return draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, max_side=3)).input_shapes


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


# A fraction of the profile's examples (conftest: 50 by default, DELTAAD_HYPOTHESIS_EXAMPLES=500
# for a thorough pass): the parametrisation over ~100 functions multiplies the work.
_N = settings().max_examples
FIRST = settings(max_examples=max(6, _N // 5), deadline=None, suppress_health_check=list(HealthCheck))
SECOND = settings(max_examples=max(3, _N // 12), deadline=None, suppress_health_check=list(HealthCheck))


class Family:
    """The numpy functions of one rule family under test: ``name -> strategy`` of ``(f, args)``.
    ``family.tests()`` gives the two parametrised tests every family file runs: first order
    (reverse, forward and finite differences agree, and Lemma 1) and second order."""

    def __init__(self):
        self.ops = {}
        self.no_second = set()

    def op(self, name, second=True):
        def deco(strategy):
            self.ops[name] = strategy
            if not second:
                self.no_second.add(name)
            return strategy

        return deco

    def tests(self):
        ops = self.ops

        @pytest.mark.parametrize("name", list(ops))
        def test_first_order(name):
            @FIRST
            @given(ops[name](), seeds)
            def run(fa, seed):
                f, args = fa
                check_first_order(f, args, seed)

            run()

        @pytest.mark.parametrize("name", [n for n in ops if n not in self.no_second])
        def test_second_order(name):
            @SECOND
            @given(ops[name](), seeds)
            def run(fa, seed):
                f, args = fa
                check_second_order(f, args, seed)

            run()

        return test_first_order, test_second_order
