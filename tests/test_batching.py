"""``vmap``: JAX's signature computed by a loop. Results are bit for bit the loop's, and
differentiate (inside and outside) to the loop's derivatives."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d


def loss(w, x, y):
    return (np.dot(w, x) - y) ** 2 + np.sum(np.sin(w) * x)


@settings(max_examples=30)
@given(st.integers(1, 5), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_per_example_gradients_are_the_loops(n, k, seed):
    rng = np.random.default_rng(seed)
    w, xs, ys = rng.normal(size=k), rng.normal(size=(n, k)), rng.normal(size=n)
    got = d.vmap(d.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    want = np.stack([d.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    assert got.tobytes() == want.tobytes()
    # differentiated from outside: the loop's derivative
    total = lambda w: np.sum(d.vmap(loss, in_axes=[None, 0, 0])(w, xs, ys))  # noqa: E731
    loop = lambda w: np.sum(np.stack([loss(w, x, y) for x, y in zip(xs, ys)]))  # noqa: E731
    assert d.grad(total)(w).tobytes() == d.grad(loop)(w).tobytes()
    v = rng.normal(size=k)
    assert d.jvp(total, (w,), (v,)) == d.jvp(loop, (w,), (v,))


def test_axes_and_structures():
    a = np.arange(6.0).reshape(2, 3)
    out = d.vmap(lambda r: (r * 2.0, {"s": np.sum(r)}), in_axes=1, out_axes=(1, 0))(a)
    np.testing.assert_array_equal(out[0], a * 2.0)  # mapped over columns, stacked back as them
    np.testing.assert_array_equal(out[1]["s"], a.sum(axis=0))
    got = d.vmap(lambda p: p["x"] * p["c"], in_axes=({"x": 0, "c": None},))({"x": a, "c": 3.0})
    np.testing.assert_array_equal(got, a * 3.0)
    np.testing.assert_array_equal(d.vmap(lambda x: x * x)(np.arange(3.0)), [0.0, 1.0, 4.0])
    np.testing.assert_array_equal(d.jacfwd(d.vmap(np.sin))(np.arange(3.0)),
                                  np.diag(np.cos(np.arange(3.0))))


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="sizes \\[2, 3\\]"):
        d.vmap(lambda x, y: x + y)(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="scalar argument"):
        d.vmap(lambda x: x)(1.0)
    with pytest.raises(ValueError, match="2 entries for 1 arguments"):
        d.vmap(lambda x: x, in_axes=(0, 0))(np.ones(2))
    with pytest.raises(ValueError, match="different structures"):
        d.vmap(lambda x: (x,) if x > 0 else x)(np.array([1.0, -1.0]))
