"""The compiled fast path's indexing, ``np.concatenate`` and ``np.maximum``/``np.minimum`` with
a float bound (``deltaad._arrays``: ``_getitem``, ``_concat``, ``_choice``) give the bits of
the Python short paths and of the general path, and of the pure backend in another process;
they step aside for what they do not take (float32, nested traces, a cotangent that is a dual,
ties and nans at the bound, three duals in one concatenate); and an underflow that numpy's
error state ignores no longer sends an operation the Python way."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from deltaad.numpy import array, fast
from numpy_checks import check_first_order, check_second_order

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
compiled = pytest.mark.skipif(d.backend != "c", reason="the fast path is the compiled backend's")


def _switched(fast_on, shortcuts_on, fn, *args):
    old_f = fast.set_enabled(fast_on)
    old_s = array.set_shortcuts(shortcuts_on)
    try:
        return fn(*args)
    finally:
        fast.set_enabled(old_f)
        array.set_shortcuts(old_s)


def _bits(xs):
    return [np.asarray(x).dtype.str + np.asarray(x).tobytes().hex() for x in xs]


# -- random programs over the three operations ------------------------------------------------


def _slice(rng, n):
    def end():
        return None if rng.random() < 0.3 else int(rng.integers(-n - 1, n + 2))
    step = [None, 1, 1, 2, 3, -1, -2][int(rng.integers(0, 7))]
    return slice(end(), end(), step)


def make_case(seed):
    """A random case: shape, dtype, a basic index, a concatenation axis, a bound."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 4))
    shape = [int(rng.integers(1, 6)) for _ in range(nd)]
    idx = []
    for n in shape[:int(rng.integers(0, nd + 1))]:
        if rng.random() < 0.2:
            idx.append(None)
        idx.append(int(rng.integers(-n, n)) if rng.random() < 0.3 else _slice(rng, n))
    if idx and rng.random() < 0.3:
        idx.append(Ellipsis)
    single = len(idx) == 1 and rng.random() < 0.5
    return {"seed": seed, "shape": shape, "dtype": "float32" if seed % 5 == 0 else "float64",
            "idx": _encode(idx[0] if single else tuple(idx)), "axis": int(rng.integers(-nd, nd)),
            "bound": [0.0, 0.25, -0.5][seed % 3], "tie": seed % 4 == 0, "nan": seed % 7 == 0,
            "three": seed % 6 == 0}


def _encode(idx):
    if type(idx) is tuple:
        return {"tuple": [_encode(k) for k in idx]}
    if type(idx) is slice:
        return {"slice": [idx.start, idx.stop, idx.step]}
    if idx is None:
        return "none"
    if idx is Ellipsis:
        return "ellipsis"
    return idx


def _decode(e):
    if isinstance(e, dict):
        if "tuple" in e:
            return tuple(_decode(k) for k in e["tuple"])
        return slice(*e["slice"])
    return {"none": None, "ellipsis": Ellipsis}.get(e, e) if isinstance(e, str) else e


def inputs(c):
    rng = np.random.default_rng(c["seed"])
    x = rng.uniform(-1, 1, c["shape"]).astype(c["dtype"])
    k = rng.uniform(-1, 1, c["shape"]).astype(c["dtype"])
    flat = x.reshape(-1)
    if c["tie"]:
        flat[0] = c["bound"]
    if c["nan"] and flat.size > 1:
        flat[-1] = np.nan
    return x, k


def program(c):
    idx = _decode(c["idx"])
    axis = c["axis"]
    bound = c["bound"]

    def f(x, k):
        a = x[idx]
        b = x * 2.0
        parts = [x, k, b, x] if c["three"] else [k, x, b]  # two duals, or three (general)
        cat = np.concatenate(parts, axis=axis)
        one = np.concatenate((k, np.sin(x)), axis)  # one dual, a tuple, axis by position
        m = np.maximum(x, bound) * x + np.minimum(bound, x)
        s = np.sum(a * a) + np.sum(cat * cat) + np.sum(one) + np.nansum(m * m)
        return s + np.sum(np.maximum(b[..., 1:], bound)) if x.shape[-1] > 1 else s

    return f


def results(c):
    """Value and gradient (both arguments) of the case's program, as bytes."""
    x, k = inputs(c)
    v, g = d.value_and_grad(program(c), argnums=(0, 1))(x, k)
    return _bits([v, g[0], g[1]])


@compiled
@given(st.integers(0, 2**31 - 1))
def test_same_bits_as_python_paths(seed):
    """The fast path, the Python short paths and the general path: the same bits."""
    c = make_case(seed)
    on = _switched(True, True, results, c)
    assert on == _switched(False, True, results, c)
    assert on == _switched(False, False, results, c)


@compiled
def test_same_bits_as_pure_backend():
    """The same cases under the pure backend, in another process: the same bits."""
    cs = [make_case(seed) for seed in range(40)]
    env = dict(os.environ, DELTAAD_BACKEND="python",
               PYTHONPATH=os.pathsep.join([TESTS, os.path.join(TESTS, "numpy")]))
    out = subprocess.run([sys.executable, os.path.abspath(__file__)], input=json.dumps(cs),
                         capture_output=True, text=True, env=env, check=True).stdout
    for c, p in zip(cs, json.loads(out)):
        assert results(c) == p, c


@settings(max_examples=max(5, settings().max_examples // 3))
@given(st.integers(0, 2**31 - 1))
def test_derivatives_against_finite_differences(seed):
    c = make_case(seed)
    c.update(dtype="float64", tie=False, nan=False)
    x, k = inputs(c)
    b = c["bound"]
    for _ in range(3):  # x and 2x away from the kink, farther than the differences' steps
        near = (np.abs(x - b) < 0.02) | (np.abs(2.0 * x - b) < 0.02)
        x = np.where(near, x + 0.05, x)
    check_first_order(program(c), (x, k), seed=seed % 1000)


@st.composite
def one_d(draw):
    n = draw(st.integers(1, 70))
    def sl():
        return slice(draw(st.one_of(st.none(), st.integers(-n - 2, n + 2))),
                     draw(st.one_of(st.none(), st.integers(-n - 2, n + 2))),
                     draw(st.sampled_from([None, 1, 2, 3, -1, -3])))
    return n, sl(), sl(), draw(st.booleans()), draw(st.integers(0, 2**31 - 1))


@compiled
@given(one_d())
def test_one_d_slices_and_concatenate_same_bits(c):
    """1-D slices (any step, empty, of views with negative strides), their cotangents set
    into zeros, and 1-D concatenations of strided parts (their cotangents numpy's views,
    also of a broadcast cotangent): the fast path's own loops give the general path's bits,
    and the values and strides numpy's indexing gives."""
    n, s1, s2, wrap, seed = c
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    k = rng.uniform(-1, 1, 2 * n)[::-2]  # a constant with a negative stride
    seen = []

    def f(x):
        v = x[::-1] if wrap else x
        a = v[s1]
        b = v[(s2,)][::2]
        seen.append((getattr(a, "value", a).strides, getattr(b, "value", b).strides))
        cat = np.concatenate([k, a * 2.0, b, k[:1]])
        one = np.concatenate((a, k))
        t = np.sum(cat * np.arange(cat.size)) + np.sum(np.broadcast_to(one, (3, one.size)))
        return t + np.sum(np.sin(a)) + np.sum(b * b)

    on = _switched(True, True, d.value_and_grad(f), x)
    off = _switched(False, False, d.value_and_grad(f), x)
    assert _bits(on) == _bits(off)
    assert seen[0] == seen[1]
    v = x[::-1] if wrap else x
    assert _bits([f(x)]) == _bits([on[0]])
    assert seen[0] == (v[s1].strides, v[(s2,)][::2].strides)


def stencil(u, s, c, steps=3):
    z = np.zeros(1)
    for _ in range(steps):
        lap = u[2:] - 2.0 * u[1:-1] + u[:-2]
        u = np.maximum(u + c * np.concatenate([z, lap, z]) + s, 0.0)
    return np.sum(u * u) + np.sum(np.minimum(u[::2], 0.5))


def test_nested_traces():
    """Hessian-vector products by the four nestings (forward and reverse over reverse: the
    fast path steps aside where an operand's value is a dual)."""
    rng = np.random.default_rng(5)
    u = rng.uniform(0.2, 1, 10)
    s = rng.uniform(-0.01, 0.01, 10)
    check_second_order(stencil, (u, s, 0.2))


@compiled
def test_taken_and_stepped_aside():
    """Which operations the fast path records (an ArrayRule), which it leaves to Python."""
    seen = {}

    def kind(name, r):
        seen[name] = type(r.trace.binding(r.id)[1]).__name__

    def f(x):
        kind("slice", x[1:])
        kind("tuple", x[None, 1:, ...])
        kind("int", x[1])                      # a scalar: the Python path's scalar dual
        kind("array", x[np.array([0, 2])])     # advanced: Python
        kind("concat", np.concatenate([np.zeros(1), x, x]))
        kind("concat3", np.concatenate([x, x, x]))  # three duals: Python
        kind("concat_f32", np.concatenate([x, np.zeros(1, np.float32)]))  # ok: float64 value?
        kind("maximum", np.maximum(x, 0.0))
        kind("minimum_left", np.minimum(0.0, x))
        kind("tie", np.maximum(x, 0.5))        # x holds 0.5: Python
        kind("int_bound", np.maximum(x, 0))    # an int bound: Python
        return np.sum(x)

    d.grad(f)(np.array([0.5, -1.0, 2.0]))
    fast_ones = {"slice", "tuple", "concat", "maximum", "minimum_left"}
    for name, k in seen.items():
        if name == "int":
            continue
        if name == "concat_f32":
            assert k != "ArrayRule"  # a float32 operand: the Python path's promotion
            continue
        assert (k == "ArrayRule") == (name in fast_ones), (name, k)


@compiled
def test_float32_and_nested_values_step_aside():
    x32 = np.array([0.5, -1.0, 2.0], np.float32)
    g = d.grad(lambda x: np.sum(np.concatenate([x[1:], x]) ** 2) + np.sum(np.maximum(x, 0.0)))(x32)
    assert g.dtype == np.float32
    assert g.tobytes() == _switched(False, False, d.grad(
        lambda x: np.sum(np.concatenate([x[1:], x]) ** 2) + np.sum(np.maximum(x, 0.0))), x32).tobytes()


@compiled
def test_cotangent_that_is_a_dual():
    """A pullback of the fast bindings called with a dual cotangent: the Python rules' way."""
    x = np.array([0.3, -0.7, 1.1, 0.4])

    def f(x):
        return np.maximum(np.concatenate([np.zeros(1), x[1:] * x[:-1], x]), 0.1) + 0.0

    _, pb = d.vjp(f, x)

    def g(ct):
        return np.sum(pb(ct)[0] ** 2)

    ct = np.linspace(-1.0, 2.0, 8)
    gr = d.grad(g)(ct)
    assert gr.tobytes() == _switched(False, False, d.grad(g), ct).tobytes()
    np.testing.assert_allclose(gr, 2 * d.jacobian(f)(x) @ pb(ct)[0], rtol=1e-12)


@compiled
def test_concatenate_cotangent_keeps_its_layout():
    """The cotangents of a concatenate are views of ``ct`` (as the Python rule's slices), so a
    strided cotangent reaches the rules before it as the Python path hands it on."""
    M = np.arange(12.0).reshape(3, 4) / 7.0

    def f(x):
        y = np.concatenate([x, x * 3.0])
        return np.sum(np.sum(np.broadcast_to(y, (5, 6)), axis=0) * np.arange(6.0)) \
            + np.sum((x @ M) ** 2)

    x = np.array([0.2, -0.4, 0.9])
    g = d.grad(f)(x)
    assert g.tobytes() == _switched(False, False, d.grad(f), x).tobytes()


@compiled
def test_underflow_ignored_as_numpy_ignores_it():
    """An underflow alone no longer sends the operation the Python way where numpy's error
    state ignores it (its default); where it does not, numpy raises as without
    differentiation."""
    x = np.array([1e-160, 2.0])
    kinds = []

    def f(x):
        y = x * 1e-160  # the first entry underflows to a subnormal
        kinds.append(type(y.trace.binding(y.id)[1]).__name__)
        return np.sum(np.sin(y * y))

    g = d.grad(f)(x)
    assert kinds == ["ArrayRule"]
    assert g.tobytes() == _switched(False, False, d.grad(f), x).tobytes()
    with np.errstate(under="raise"):
        with pytest.raises(FloatingPointError):
            d.grad(f)(x)
    with np.errstate(under="raise"):
        with pytest.raises(FloatingPointError):
            _switched(False, False, d.grad(f), x)
    with np.errstate(under="warn"):
        with pytest.warns(RuntimeWarning, match="underflow"):
            d.grad(f)(x)


@compiled
def test_long_chain_backward_underflow_same_bits():
    """A long chain of sin partials (the bench's smallops): the cotangents' tails underflow
    in the sweep; the fast rules keep them (numpy ignores it) with the Python rule's bits."""
    x = np.random.default_rng(2).uniform(-1, 1, 16)

    def f(x):
        y = x
        for _ in range(300):
            y = np.sin(y) + x
        return np.sum(y)

    g = d.grad(f)(x)
    assert g.tobytes() == _switched(False, False, d.grad(f), x).tobytes()


@compiled
def test_sweep_ring_never_reuses_held_arrays():
    """A tape of more arrays than the kept rings hold (the sweep takes its arrays from its own
    ring): gradients, a pullback called twice and the cotangents it returned keep their bits."""
    x = np.array([1.2, 0.7])
    M = np.array([[0.0, 1.0], [1.0, 0.0]])

    def f(s):
        for _ in range(400):
            s = s + 0.01 * (s * (np.array([1.1, -0.4]) + np.array([-0.4, 0.1]) * (s @ M)))
        return np.sum(s * s)

    g = d.grad(f)(x)
    assert g.tobytes() == _switched(False, False, d.grad(f), x).tobytes()
    _, pb = d.vjp(f, x)
    first = pb(1.0)[0]
    kept = first.copy()
    again = pb(1.0)[0]
    assert first.tobytes() == kept.tobytes() == again.tobytes() == g.tobytes()


if __name__ == "__main__":  # the pure backend's results, for test_same_bits_as_pure_backend
    print(json.dumps([results(c) for c in json.loads(sys.stdin.read())]))
