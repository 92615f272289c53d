"""Inputs and outputs as pytrees (Krawiec et al. §11, JAX's convention): tuples, lists, dicts,
namedtuples, dataclasses (also frozen), None, nesting, static leaves, sum-typed values, Jacobian
layout."""

import dataclasses
import math
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad

grad = deltaad.grad

Point = namedtuple("Point", "x y")


@dataclasses.dataclass
class Params:
    w: float
    b: float
    name: str = "p"


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: float
    n: int
    inner: tuple


def test_tuple_list_dict_inputs():
    assert grad(lambda t: t[0] * t[1])((2.0, 3.0)) == (3.0, 2.0)
    g = grad(lambda l: l[0] * l[1] + l[2])([2.0, 3.0, 4.0])
    assert g == [3.0, 2.0, 1.0] and type(g) is list
    g = grad(lambda d: d["a"] * d["b"])({"a": 2.0, "b": 5.0})
    assert g == {"a": 5.0, "b": 2.0} and type(g) is dict
    assert list(g) == ["a", "b"]


def test_dict_key_order_kept():
    g = grad(lambda d: d["z"] * 2.0 + d["a"])({"z": 1.0, "a": 1.0})
    assert list(g) == ["z", "a"] and g == {"z": 2.0, "a": 1.0}


def test_namedtuple_input_and_output():
    g = grad(lambda p: p.x * p.y)(Point(2.0, 3.0))
    assert type(g) is Point and g == Point(3.0, 2.0)
    out, pb = deltaad.vjp(lambda p: Point(p.x * 2.0, p.y * p.x), Point(2.0, 3.0))
    assert type(out) is Point and out == Point(4.0, 6.0)
    (ct,) = pb(Point(1.0, 1.0))
    assert type(ct) is Point and ct == Point(5.0, 2.0)


def test_dataclass_input():
    g = grad(lambda p: p.w * 3.0 + p.b * p.b)(Params(1.0, 2.0))
    assert type(g) is Params
    assert (g.w, g.b) == (3.0, 4.0)
    assert g.name is None  # a static str leaf


def test_frozen_dataclass_input():
    x = Frozen(2.0, 3, (1.0, 5.0))
    g = grad(lambda f: f.a ** f.n * f.inner[0] + f.inner[1])(x)
    assert type(g) is Frozen
    assert g.a == 12.0 and g.n is None and g.inner == (8.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.a = 1.0


def test_dataclass_output_vjp_and_jvp():
    def f(x):
        return Params(x * x, x + 1.0, "out")

    out, pb = deltaad.vjp(f, 3.0)
    assert type(out) is Params and (out.w, out.b, out.name) == (9.0, 4.0, "out")
    assert pb(Params(1.0, 2.0, None)) == (8.0,)
    o, t = deltaad.jvp(f, (3.0,), (1.0,))
    assert (o.w, o.b, t.w, t.b) == (9.0, 4.0, 6.0, 1.0)
    assert t.name is None


def test_none_and_nesting():
    x = {"a": (1.0, [2.0, None]), "b": None, "c": [Point(3.0, 4.0)]}

    def f(t):
        return t["a"][0] * t["a"][1][0] + t["c"][0].x * t["c"][0].y

    g = grad(f)(x)
    assert g == {"a": (2.0, [1.0, None]), "b": None, "c": [Point(4.0, 3.0)]}
    assert type(g["c"][0]) is Point and type(g["a"][1]) is list


def test_static_leaves_get_none():
    seen = {}

    def f(t):
        seen.update(n=t["n"], flag=t["flag"], s=t["s"])
        return t["x"] * t["n"] if t["flag"] else t["x"]

    g = grad(f)({"x": 2.0, "n": 3, "flag": True, "s": "label"})
    assert g == {"x": 3.0, "n": None, "flag": None, "s": None}
    # static leaves reach the function unchanged (not duals)
    assert seen == {"n": 3, "flag": True, "s": "label"}
    assert type(seen["n"]) is int and type(seen["flag"]) is bool


def test_static_argument_via_argnums():
    def f(x, n, mode):
        return x ** n if mode == "pow" else x * n

    assert grad(f)(2.0, 3, "pow") == 12.0
    assert grad(f)(2.0, 3, "mul") == 3.0
    assert grad(f, argnums=(0, 1))(2.0, 3, "pow") == (12.0, None)


def test_numpy_scalar_leaves_keep_their_type():
    g = grad(lambda t: t[0] * t[1])((np.float64(2.0), np.float32(3.0)))
    assert type(g[0]) is np.float64 and g[0] == 3.0
    assert type(g[1]) is np.float32 and g[1] == 2.0


def test_sum_typed_value():
    """A value that is sometimes a float, sometimes a pair: the gradient follows what is passed."""

    def f(v):
        if isinstance(v, tuple):
            return v[0] * v[1]
        return v * v

    assert grad(f)(3.0) == 6.0
    assert grad(f)((2.0, 5.0)) == (5.0, 2.0)

    def g(tree):  # a recursive sum type: a leaf or a (left, right) node
        if isinstance(tree, tuple):
            return g(tree[0]) * g(tree[1])
        return tree + 1.0

    t = (1.0, (2.0, 3.0))
    # (a+1)(b+1)(c+1)
    assert grad(g)(t) == (12.0, (8.0, 6.0))
    assert grad(g)(1.0) == 1.0


def test_output_pytree_cotangent_structure():
    f = lambda x: {"p": (x, x * x), "q": [deltaad.sin(x)]}  # noqa: E731
    out, pb = deltaad.vjp(f, 0.5)
    assert out == {"p": (0.5, 0.25), "q": [math.sin(0.5)]}
    assert pb({"p": (1.0, 1.0), "q": [1.0]}) == (1.0 + 1.0 + math.cos(0.5),)
    assert pb({"p": (0.0, 2.0), "q": [0.0]}) == (2.0,)


def test_output_with_static_leaves():
    out, pb = deltaad.vjp(lambda x: (x * 2.0, 3, "s"), 1.5)
    assert out == (3.0, 3, "s")
    # None stands for the cotangent of a static (or constant) output leaf, as in gradients
    assert pb((1.0, None, None)) == (2.0,)
    assert pb((None, None, None)) == (0.0,)
    assert pb((1.0, 3, "s")) == (2.0,)
    o, t = deltaad.jvp(lambda x: (x * 2.0, 3, "s"), (1.5,), (1.0,))
    assert o == (3.0, 3, "s") and t == (2.0, None, None)


def test_multiple_primals_vjp_and_jvp():
    f = lambda a, b: a["u"] * b[0] + b[1]  # noqa: E731
    out, pb = deltaad.vjp(f, {"u": 2.0}, (3.0, 4.0))
    assert out == 10.0
    assert pb(1.0) == ({"u": 3.0}, (2.0, 1.0))
    o, t = deltaad.jvp(f, ({"u": 2.0}, (3.0, 4.0)), ({"u": 1.0}, (0.0, 0.0)))
    assert (o, t) == (10.0, 3.0)


# --------------------------------------------------------------------------------------------
# Jacobian layout (JAX's): output structure, each leaf replaced by the input structure


def test_jacobian_vector_to_vector_is_matrix():
    f = lambda v: [v[0] * v[1], v[0] + 2.0 * v[2]]  # noqa: E731
    for jac in (deltaad.jacrev, deltaad.jacfwd):
        J = jac(f)([1.0, 2.0, 3.0])
        assert isinstance(J, np.ndarray) and J.shape == (2, 3)
        assert np.array_equal(J, [[2.0, 1.0, 0.0], [1.0, 0.0, 2.0]])
    J = deltaad.jacrev(lambda t: (t[0] * t[0], t[1]))((3.0, 4.0))
    assert isinstance(J, np.ndarray) and np.array_equal(J, [[6.0, 0.0], [0.0, 1.0]])


def test_jacobian_scalar_output_has_input_structure():
    f = lambda v: v[0] * v[1]  # noqa: E731
    for jac in (deltaad.jacrev, deltaad.jacfwd):
        J = jac(f)([2.0, 3.0])
        assert list(J) == [3.0, 2.0]


def test_jacobian_scalar_input():
    for jac in (deltaad.jacrev, deltaad.jacfwd):
        J = jac(lambda x: x * x)(3.0)
        assert J == 6.0
        J = jac(lambda x: {"a": x * x, "b": (x, 2.0 * x)})(3.0)
        assert J == {"a": 6.0, "b": (1.0, 2.0)}


def test_jacobian_pytree_layout():
    def f(p):
        return {"s": p["x"] * p["y"][0], "t": (p["y"][1], p["x"] + p["y"][0])}

    x = {"x": 2.0, "y": (3.0, 5.0)}
    want = {
        "s": {"x": 3.0, "y": (2.0, 0.0)},
        "t": ({"x": 0.0, "y": (0.0, 1.0)}, {"x": 1.0, "y": (1.0, 0.0)}),
    }
    for jac in (deltaad.jacrev, deltaad.jacfwd):
        J = jac(f)(x)
        assert J == want, (jac, J)


def test_jacobian_argnums_tuple_layout():
    f = lambda a, b: [a * b, a + b]  # noqa: E731
    for jac in (deltaad.jacrev, deltaad.jacfwd):
        J = jac(f, argnums=(0, 1))(2.0, 3.0)
        assert J == [(3.0, 2.0), (1.0, 1.0)]


def test_hessian_layout():
    H = deltaad.hessian(lambda v: v[0] ** 2 * v[1] + v[1] ** 3)([1.0, 2.0])
    assert isinstance(H, np.ndarray) and np.array_equal(H, [[4.0, 2.0], [2.0, 12.0]])
    H = deltaad.hessian(lambda p: p["a"] * p["a"] * p["b"])({"a": 1.0, "b": 2.0})
    assert H == {"a": {"a": 4.0, "b": 2.0}, "b": {"a": 2.0, "b": 0.0}}
    assert deltaad.hessian(lambda x: x ** 3)(2.0) == 12.0


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=6), st.integers(1, 4))
def test_jacobian_shapes_random(xs, m):
    def f(v):
        return [deltaad.sin(v[i % len(v)] * (i + 1)) * v[0] for i in range(m)]

    Jr = deltaad.jacrev(f)(xs)
    Jf = deltaad.jacfwd(f)(xs)
    assert Jr.shape == Jf.shape == (m, len(xs))
    # by hand: d/dv_j [sin((i+1) v_k) v_0] with k = i mod n
    n = len(xs)
    want = np.zeros((m, n))
    for i in range(m):
        k = i % n
        want[i, k] += (i + 1) * math.cos((i + 1) * xs[k]) * xs[0]
        want[i, 0] += math.sin((i + 1) * xs[k])
    assert np.allclose(Jr, want, rtol=1e-13, atol=1e-13)
    assert np.allclose(Jf, want, rtol=1e-13, atol=1e-13)


def test_tree_utilities_roundtrip():
    tree = {"a": [1.0, (2, "s")], "b": Point(3.0, None), "c": Params(4.0, 5.0)}
    leaves, d = deltaad.tree_flatten(tree)
    assert leaves == [1.0, 2, "s", 3.0, 4.0, 5.0, "p"]
    back = deltaad.tree_unflatten(d, leaves)
    assert back == tree
    doubled = deltaad.tree_map(lambda x: x * 2, tree)
    assert doubled["b"] == Point(6.0, None) and doubled["c"].w == 8.0


@given(st.recursive(st.floats(-5, 5) | st.integers(0, 3) | st.none(),
                    lambda kids: st.lists(kids, max_size=4) | st.tuples(kids, kids)
                    | st.dictionaries(st.sampled_from("abc"), kids, max_size=3),
                    max_leaves=12))
def test_flatten_unflatten_roundtrip_random(tree):
    """Unflattening gives the tree back, from a list or any iterable of the leaves (flat runs of
    floats are sliced, nested ones rebuilt); too few leaves is a clear error."""
    leaves, d = deltaad.tree_flatten(tree)
    assert deltaad.tree_unflatten(d, leaves) == tree
    assert deltaad.tree_unflatten(d, iter(leaves)) == tree
    assert deltaad.tree_unflatten(d, leaves + [7.0]) == tree  # extra leaves are left over
    if leaves:
        with pytest.raises(ValueError, match="needs %d leaves" % len(leaves)):
            deltaad.tree_unflatten(d, leaves[:-1])
    # tree_flatten's early exits (a float, a flat float list or tuple, a 1-tuple: the arguments
    # of a one-argument function) give what the recursive walk gives for the same subtree
    # inside a dict, and unflatten back
    for t in (tree, (tree,), ((tree,),), [1.5, -2.0], (1.5,), ()):
        lv, dv = deltaad.tree_flatten(t)
        lw, dw = deltaad.tree_flatten({"k": t})
        assert lv == lw
        assert dv == dw.children[0] and dw.children[0] == dv and repr(dv) == repr(dw.children[0])
        assert deltaad.tree_unflatten(dv, lv) == t
        assert type(deltaad.tree_unflatten(dv, lv)) is type(t)


def test_flat_treedef_equality_and_repr():
    """A float list's treedef keeps no tuple of its leaves, yet compares and prints like any
    list of leaves."""
    flat = deltaad.tree_flatten([1.0, 2.0, 3.0])[1]
    mixed = deltaad.tree_flatten([1.0, 2, "s"])[1]
    assert flat == mixed and mixed == flat
    assert flat != deltaad.tree_flatten([1.0, 2.0])[1]
    assert flat != deltaad.tree_flatten((1.0, 2.0, 3.0))[1]
    assert repr(flat) == repr(mixed) == "list(*, *, *)"
    assert flat.children == mixed.children


@pytest.mark.parametrize("n", [3, 300, 5000])
def test_a_flat_argument_shape_is_described_once(n):
    """The TreeDef of one flat list or tuple argument is made once per shape and then shared
    (short ones always, a long one while it is the last shape seen): equal to a fresh one, and
    a gradient's structure follows each call's own length and type."""
    from deltaad.pytrees import TreeDef, flat_args_def, tree_flatten

    for kind in (list, tuple):
        d = flat_args_def(kind([0.5] * n))
        assert flat_args_def(kind([1.5] * n)) is d
        assert d == TreeDef("tuple", None, (tree_flatten(kind([0.0] * n))[1],))
        assert d.nleaves == n and d.children[0].kind == kind.__name__
    assert flat_args_def([0.5] * (n + 1)).nleaves == n + 1
    assert flat_args_def((0.5,) * n).children[0].kind == "tuple"
    for m in (n, n + 1, n):
        g = grad(lambda xs: sum(x * x for x in xs))([1.0] * m)
        assert type(g) is list and g == [2.0] * m
