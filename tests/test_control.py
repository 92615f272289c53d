"""``scan``, ``cond`` and ``switch`` (deltaad.control): JAX's layout and semantics, as the
Python loop and branch they stand for, differentiated in both modes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from helpers import fd


def _cumulative(c, x):
    c = 0.9 * c + d.sin(x) * c
    return c, (c * c, {"x": x})


def _loop(c0, xs, reverse=False):
    c, ys, zs = c0, [], []
    for x in (xs[::-1] if reverse else xs):
        c, (y, z) = _cumulative(c, x)
        ys.append(y)
        zs.append(z["x"])
    if reverse:
        ys, zs = ys[::-1], zs[::-1]
    return c, np.array(ys), np.array(zs)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=8), st.floats(0.5, 1.5),
       st.booleans())
def test_scan_is_the_loop_with_stacked_outputs(xs, c0, reverse):
    xs = np.array(xs)
    c, (ys, z) = d.scan(_cumulative, c0, xs, reverse=reverse)
    rc, rys, rzs = _loop(c0, xs, reverse)
    assert c == rc and np.array_equal(ys, rys) and np.array_equal(z["x"], rzs)

    def loss(c0, xs):
        c, (ys, _) = d.scan(_cumulative, c0, xs, reverse=reverse)
        return c + np.sum(ys)

    gc, gx = d.grad(loss, argnums=(0, 1))(c0, xs)
    assert gc == pytest.approx(fd(lambda c: loss(c, xs), c0), rel=1e-5, abs=1e-7)
    for i, e in enumerate(np.eye(len(xs))):
        assert gx[i] == pytest.approx(fd(lambda h: loss(c0, xs + h * e), 0.0), rel=1e-5,
                                      abs=1e-7)
    t = np.linspace(-1.0, 1.0, len(xs))
    assert d.jvp(lambda x: loss(c0, x), (xs,), (t,))[1] == pytest.approx(np.dot(gx, t),
                                                                         rel=1e-12, abs=1e-12)


def test_scan_length_without_xs_and_errors():
    c, ys = d.scan(lambda c, _: (c * 2.0, c), 1.0, length=3)
    assert c == 8.0 and np.array_equal(ys, [1.0, 2.0, 4.0])
    assert d.grad(lambda a: d.scan(lambda c, _: (c * a, None), 1.0, length=3)[0])(2.0) == 12.0
    assert d.scan(lambda c, x: (c + x, None), 0.0, np.zeros(0)) == (0.0, None)
    with pytest.raises(ValueError, match="different leading lengths"):
        d.scan(lambda c, x: (c, None), 0.0, (np.zeros(2), np.zeros(3)))
    with pytest.raises(ValueError, match="give xs or length="):
        d.scan(lambda c, x: (c, None), 0.0)


def test_cond_and_switch_take_one_branch():
    ran = []

    def branch(k):
        def b(x):
            ran.append(k)
            return x ** (k + 1)
        return b

    assert d.grad(lambda x: d.cond(x > 0, branch(1), branch(0), x))(3.0) == 6.0
    assert d.grad(lambda x: d.cond(x > 0, branch(1), branch(0), x))(-3.0) == 1.0
    assert d.grad(lambda x: d.switch(2, [branch(0), branch(1), branch(2)], x))(2.0) == 12.0
    assert d.switch(7, [branch(0), branch(1)], 3.0) == 9.0  # clamped, as JAX clamps
    assert d.switch(-1, [branch(0), branch(1)], 3.0) == 3.0
    assert ran == [1, 0, 2, 1, 0]


def test_tree_leaves_and_structure_are_tree_flattens_halves():
    tree = {"a": (1.0, [2.0, None]), "b": np.ones(2)}
    leaves, treedef = d.tree_flatten(tree)
    got = d.tree_leaves(tree)
    assert len(got) == 3 and all(a is b for a, b in zip(got, leaves))
    assert d.tree_structure(tree) == treedef
    assert d.tree_unflatten(d.tree_structure(tree), [5.0, 6.0, 7.0])["a"] == (5.0, [6.0, None])
