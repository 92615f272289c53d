"""The transformations at their edges: static leaves among float leaves in Jacobians, outputs
that hide duals, repeated or odd argnums, escaped duals as outputs, cotangent and tangent
checks, Jacobian dtypes, OrderedDict/defaultdict pytrees, and how dataclasses are rebuilt.

Expected derivatives come from finite differences, hand-derived formulas or the other mode.
"""

import dataclasses
import functools
from collections import OrderedDict, defaultdict, deque

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad
from helpers import assert_close, fd

grad = deltaad.grad

finite = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)
static = st.one_of(st.integers(-3, 3), st.booleans(), st.sampled_from(["s", "label"]))


def fd_grad(f, leaves, k):
    """Partial derivative of ``f(leaves)`` with respect to float leaf ``k`` (finite differences)."""

    def g(t):
        v = list(leaves)
        v[k] = t
        return f(v)

    return fd(g, leaves[k])


# --------------------------------------------------------------------------------------------
# 1. Static leaves before float leaves in Jacobians (their slots are None, as in grad)


def test_jacrev_static_leaf_before_float_input():
    J = deltaad.jacrev(lambda v: v[1] * v[2])([2, 1.0, 3.0])
    assert J == [None, 3.0, 1.0]
    assert J == grad(lambda v: v[1] * v[2])([2, 1.0, 3.0])


def test_hessian_static_leaf_first_in_dict():
    H = deltaad.hessian(lambda p: p["w"] ** 2 * p["b"])({"n": 3, "w": 1.0, "b": 2.0})
    # f = w^2 b: f_ww = 2b = 4, f_wb = 2w = 2, f_bb = 0
    assert H == {"n": None, "w": {"n": None, "w": 4.0, "b": 2.0}, "b": {"n": None, "w": 2.0, "b": 0.0}}


@pytest.mark.parametrize("jac", [deltaad.jacfwd, deltaad.jacrev])
def test_jacobian_static_leaf_before_float_output(jac):
    J = jac(lambda x: [3, 2.0 * x, "s", x * x])(1.5)
    assert J == [None, 2.0, None, 3.0]


@given(st.lists(st.one_of(finite, static), min_size=1, max_size=6).filter(
    lambda v: any(type(e) is float for e in v)))
def test_mixed_static_and_float_inputs(v):
    """grad, jacrev and jacfwd agree on a list mixing static and float leaves in any order;
    static slots are None, float slots match finite differences."""
    fl = [k for k, e in enumerate(v) if type(e) is float]

    def f(u):
        return sum((k + 1) * deltaad.sin(u[k]) for k in fl) + u[fl[0]] * u[fl[-1]]

    def f_out(u):  # a vector output with static leaves among the floats
        return [1, f(u), "x", u[fl[0]] * 3.0, True]

    g = grad(f)(v)
    Jr = deltaad.jacrev(f)(v)
    Jf = deltaad.jacfwd(f)(v)
    for k, e in enumerate(v):
        if type(e) is float:
            assert_close(g[k], fd_grad(f, v, k), rtol=1e-6, atol=1e-7)
            assert_close(Jr[k], g[k], rtol=1e-12, atol=1e-14)
            assert_close(Jf[k], g[k], rtol=1e-12, atol=1e-14)
        else:
            assert g[k] is None and Jr[k] is None and Jf[k] is None
    for jac in (deltaad.jacrev, deltaad.jacfwd):
        J = jac(f_out)(v)
        assert J[0] is None and J[2] is None and J[4] is None
        for k, e in enumerate(v):
            if type(e) is float:
                assert_close(J[1][k], g[k], rtol=1e-12, atol=1e-14)
                assert J[3][k] == (3.0 if k == fl[0] else 0.0)
            else:
                assert J[1][k] is None and J[3][k] is None


@given(st.lists(st.one_of(finite, static), min_size=1, max_size=4).filter(
    lambda v: any(type(e) is float for e in v)))
def test_hessian_with_static_leaves(v):
    fl = [k for k, e in enumerate(v) if type(e) is float]

    def f(u):
        return sum(u[a] * u[b] * (a + b + 1) for a in fl for b in fl)

    H = deltaad.hessian(f)(v)
    for a, ea in enumerate(v):
        if a not in fl:
            assert H[a] is None
            continue
        for b, eb in enumerate(v):
            if b not in fl:
                assert H[a][b] is None
            else:  # d2/da db sum_{i,j} u_i u_j (i+j+1) = 2 (a+b+1)
                assert H[a][b] == 2.0 * (a + b + 1)


# --------------------------------------------------------------------------------------------
# 2. Outputs hiding duals; OrderedDict and defaultdict are pytree nodes


def test_ordereddict_and_defaultdict_inputs():
    g = grad(lambda d: d["a"] * d["b"])(OrderedDict(b=2.0, a=3.0))
    assert type(g) is OrderedDict and list(g.items()) == [("b", 3.0), ("a", 2.0)]
    dd = defaultdict(list, a=2.0, b=5.0, n=3)
    g = grad(lambda d: d["a"] * d["b"] * d["n"])(dd)
    assert type(g) is defaultdict and g.default_factory is list
    assert dict(g) == {"a": 15.0, "b": 6.0, "n": None}


def test_ordereddict_and_defaultdict_outputs():
    J = deltaad.jacrev(lambda x: OrderedDict(a=x * x))(2.0)
    assert type(J) is OrderedDict and J == OrderedDict(a=4.0)
    J = deltaad.jacfwd(lambda x: OrderedDict(a=x * x))(2.0)
    assert type(J) is OrderedDict and J == OrderedDict(a=4.0)
    out, pb = deltaad.vjp(lambda x: defaultdict(float, z=x * x, y=x), 3.0)
    assert type(out) is defaultdict and out.default_factory is float and dict(out) == {"z": 9.0, "y": 3.0}
    assert pb(defaultdict(float, z=1.0, y=1.0)) == (7.0,)
    o, t = deltaad.jvp(lambda x: OrderedDict(z=x * x, n=2), (3.0,), (1.0,))
    assert type(o) is OrderedDict and type(t) is OrderedDict
    assert o == OrderedDict(z=9.0, n=2) and t == OrderedDict(z=6.0, n=None)


def _trees(leaves):
    return st.recursive(
        leaves,
        lambda kids: st.one_of(
            st.lists(kids, max_size=3),
            st.lists(kids, max_size=3).map(tuple),
            st.dictionaries(st.text("abc", min_size=1, max_size=2), kids, max_size=3),
            st.dictionaries(st.text("abc", min_size=1, max_size=2), kids, max_size=3).map(OrderedDict),
            st.dictionaries(st.text("abc", min_size=1, max_size=2), kids, max_size=3).map(
                lambda d: defaultdict(int, d)),
        ),
        max_leaves=8,
    )


def _same_tree(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if type(a) is defaultdict and a.default_factory is not b.default_factory:
            return False
        return list(a) == list(b) and all(_same_tree(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b))
    return a == b


@given(_trees(st.one_of(finite, static, st.none())))
def test_tree_round_trip_keeps_types(tree):
    leaves, d = deltaad.tree_flatten(tree)
    assert not any(isinstance(x, (dict, list, tuple)) for x in leaves)  # containers are nodes
    assert _same_tree(deltaad.tree_unflatten(d, leaves), tree)
    assert _same_tree(deltaad.tree_map(lambda x: x, tree), tree)


@given(_trees(finite))
def test_grad_through_nested_dict_types(tree):
    """The gradient of sum(x^2) over every float leaf is 2x, in the input's very structure."""
    leaves, d = deltaad.tree_flatten(tree)
    if not leaves:
        return
    g = grad(lambda t: sum(x * x for x in deltaad.tree_flatten(t)[0]))(tree)
    assert _same_tree(g, deltaad.tree_unflatten(d, [2.0 * x for x in leaves]))


@pytest.mark.parametrize("make,want", [
    (lambda x: np.array(x * 2.0), lambda x: np.array(x * 2.0)),
    (lambda x: np.array([x * x, x]), lambda x: np.array([x * x, x])),
    (lambda x: (1.0, np.array([[x], [3.0]], dtype=object)),
     lambda x: (1.0, np.array([[x], [3.0]]))),
    # numpy's object min picked only constants: no dual left, still a float array (zero
    # derivative), not an object array with a None tangent
    (lambda x: np.min(np.array([[x, 0.5], [x, 0.5]]), axis=1),
     lambda x: np.min(np.array([[x, 0.5], [x, 0.5]]), axis=1)),
], ids=["0d", "1d", "in-tuple", "no-dual-left"])
def test_object_array_output_is_the_array_of_its_duals(make, want):
    """An object array of duals in the output (``np.array([x, y])``) is the array of those
    duals: a float64 array out, derivatives through each element."""
    out, pb = deltaad.vjp(make, 2.0)
    ref = want(2.0)
    leaves = deltaad.tree_flatten(out)[0]
    for a, b in zip(leaves, deltaad.tree_flatten(ref)[0]):
        assert type(a) is type(b) and np.shape(a) == np.shape(b)
        if isinstance(a, np.ndarray):
            assert a.dtype == np.float64
        np.testing.assert_array_equal(a, b)
    eps = 1e-6
    fd = deltaad.tree_map(lambda p, m: (p - m) / (2 * eps), want(2.0 + eps), want(2.0 - eps))
    for j in (deltaad.jacrev(make)(2.0), deltaad.jacfwd(make)(2.0),
              deltaad.jvp(make, (2.0,), (1.0,))[1]):
        for a, b in zip(deltaad.tree_flatten(j)[0], deltaad.tree_flatten(fd)[0]):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_object_array_that_is_not_an_array_of_numbers_raises():
    make = lambda x: {"a": np.array([1.0, [x]], dtype=object)}  # noqa: E731
    for run in (lambda: deltaad.vjp(make, 2.0), lambda: deltaad.jvp(make, (2.0,), (1.0,)),
                lambda: deltaad.jacrev(make)(2.0), lambda: deltaad.jacfwd(make)(2.0)):
        with pytest.raises(TypeError, match="object array.*deltaad.stack"):
            run()


def test_object_array_output_in_grad():
    assert grad(lambda x: np.array(x * 2.0))(2.0) == 2.0
    assert deltaad.value_and_grad(lambda x: np.array(x * x))(3.0) == (9.0, 6.0)
    assert grad(lambda x: np.sum(deltaad.stack([x * x, x])))(2.0) == 5.0
    assert grad(lambda x: np.sum(deltaad.asarray(np.array([x * x, x]))))(2.0) == 5.0
    assert grad(lambda x: np.sum(np.array([x * x, x])))(2.0) == 5.0


class MyList(list):
    pass


class MyDict(dict):
    pass


@pytest.mark.parametrize("wrap", [MyList, lambda xs: MyDict(enumerate(xs)), deque],
                         ids=["list-subclass", "dict-subclass", "deque"])
def test_duals_in_unknown_container_raise(wrap):
    def f(x):
        return wrap([x * x])

    with pytest.raises(TypeError, match="not a pytree container"):
        deltaad.vjp(f, 2.0)
    with pytest.raises(TypeError, match="not a pytree container"):
        deltaad.jvp(f, (2.0,), (1.0,))


def test_constant_containers_and_outer_duals_are_fine():
    # containers deltaad does not look inside are constants when they hold no duals of the trace
    out, t = deltaad.jvp(lambda x: (x * 2.0, np.array(["a", 1], dtype=object), MyList([1.0])), (1.0,), (1.0,))
    assert t[0] == 2.0 and t[1] is None and t[2] is None
    # an object array of duals of an OUTER, still-open trace is a constant of the inner one

    def f(x):
        o, _t = deltaad.jvp(lambda y: (y * 2.0, np.array([x], dtype=object)), (1.0,), (1.0,))
        return o[1][0] * x

    assert grad(f)(3.0) == 6.0


# --------------------------------------------------------------------------------------------
# 3. argnums: repeats refused, any integer type accepted, bools refused


REPEATS = [(0, 0), (0, -2), (1, -1), (1, 0, 1)]


@pytest.mark.parametrize("argnums", REPEATS)
@pytest.mark.parametrize("op", ["grad", "value_and_grad", "jacrev", "jacfwd", "hessian"])
def test_repeated_argnums_raise(op, argnums):
    with pytest.raises(ValueError, match=r"names argument %d more than once" % (argnums[0] % 2)) as ei:
        getattr(deltaad, op)(lambda x, y: x * y * x, argnums=argnums)(2.0, 3.0)
    assert op.replace("value_and_", "") in str(ei.value)


@pytest.mark.parametrize("n", [np.int64(1), np.int32(1), np.uint8(1), np.array(1)])
def test_numpy_integer_argnums(n):
    f = lambda x, y: x * y * x  # noqa: E731
    assert grad(f, argnums=n)(2.0, 3.0) == 4.0
    assert grad(f, argnums=(np.int64(0), n))(2.0, 3.0) == (12.0, 4.0)
    assert deltaad.jacfwd(f, argnums=n)(2.0, 3.0) == 4.0
    assert deltaad.jacrev(f, argnums=[0, n])(2.0, 3.0) == (12.0, 4.0)


@pytest.mark.parametrize("argnums", [True, False, (True,), (0, np.bool_(True))])
def test_bool_argnums_raise(argnums):
    with pytest.raises(TypeError, match="bool"):
        grad(lambda x, y: x * y, argnums=argnums)(2.0, 3.0)
    with pytest.raises(TypeError, match="bool"):
        deltaad.jacfwd(lambda x, y: x * y, argnums=argnums)(2.0, 3.0)


def test_argnums_non_integer_raise():
    with pytest.raises(TypeError, match="argnums"):
        grad(lambda x, y: x * y, argnums=1.0)(2.0, 3.0)
    with pytest.raises(TypeError, match="argnums"):
        grad(lambda x, y: x * y, argnums=(0, None))(2.0, 3.0)


# --------------------------------------------------------------------------------------------
# 4. Escaped duals returned as outputs


def _escaped_scalar():
    kept = []
    grad(lambda x: kept.append(x * 1.0) or x)(1.0)
    return kept[0]


def _escaped_forward():
    kept = []
    deltaad.jvp(lambda x: kept.append(x * 1.0) or x, (1.0,), (1.0,))
    return kept[0]


def _escaped_array():
    kept = []
    grad(lambda x: kept.append(x * 1.0) or np.sum(x))(np.ones(2))
    return kept[0]


ESCAPED = [_escaped_scalar, _escaped_forward, _escaped_array]


@pytest.mark.parametrize("make", ESCAPED, ids=["reverse", "forward", "array"])
@pytest.mark.parametrize("wrap", [lambda e, x: e, lambda e, x: (x * 2.0, e), lambda e, x: {"k": [e]}],
                         ids=["alone", "in-tuple", "nested"])
def test_escaped_dual_output_raises(make, wrap):
    esc = make()
    f = lambda x: wrap(esc, x)  # noqa: E731
    with pytest.raises(deltaad.EscapedDualError, match="already finished"):
        deltaad.vjp(f, 1.0)
    with pytest.raises(deltaad.EscapedDualError):
        deltaad.jvp(f, (1.0,), (1.0,))
    with pytest.raises(deltaad.EscapedDualError):
        deltaad.jacrev(f)(1.0)
    with pytest.raises(deltaad.EscapedDualError):
        deltaad.jacfwd(f)(1.0)
    # inspection keeps working on it
    repr(esc)
    deltaad.value(esc)


def test_escaped_dual_output_raises_in_grad_and_aux():
    esc = _escaped_scalar()
    with pytest.raises(deltaad.EscapedDualError):
        grad(lambda x: esc)(1.0)
    with pytest.raises(deltaad.EscapedDualError):
        deltaad.value_and_grad(lambda x: esc)(1.0)
    with pytest.raises(deltaad.EscapedDualError):
        grad(lambda x: (x * x, esc), has_aux=True)(1.0)
    with pytest.raises(deltaad.EscapedDualError):
        deltaad.make_delta(lambda x: esc, 1.0)
    with pytest.raises(deltaad.EscapedDualError):
        grad(lambda x: esc, argnums=(0,))(1.0)


def test_outer_duals_are_constants_of_inner_traces():
    """Returning a dual of an outer, still-open trace from an inner one is nesting, not an
    escape: it is a constant there and the outer derivative flows through it."""

    def via_vjp(x):
        out, pb = deltaad.vjp(lambda y: (y * 2.0, x), 1.0)
        assert pb((1.0, 1.0)) == (2.0,)
        return out[1] * x

    def via_jvp(x):
        out, t = deltaad.jvp(lambda y: (y * 2.0, x * x), (1.0,), (1.0,))
        assert t[1] == 0.0
        return out[1]

    def via_grad_aux(x):
        g, aux = grad(lambda y: (y * x, x * x), has_aux=True)(1.0)
        return g * aux

    for outer in (grad, lambda f: (lambda x: deltaad.jvp(f, (x,), (1.0,))[1])):
        assert outer(via_vjp)(3.0) == 6.0
        assert outer(via_jvp)(3.0) == 6.0
        assert outer(via_grad_aux)(3.0) == 27.0  # d/dx x^3


# --------------------------------------------------------------------------------------------
# 5. Cotangents and tangents are checked against their outputs and primals


def test_cotangent_shape_must_match_output():
    _, pb = deltaad.vjp(lambda x: x * np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"shape \(2,\).*shape \(2, 2\)"):
        pb(np.ones(2))
    _, pb = deltaad.vjp(lambda x: x * 2.0, 1.0)
    with pytest.raises(ValueError, match=r"shape \(1,\).*a float output takes a float or a 0-d array"):
        pb(np.ones(1))
    _, pb = deltaad.vjp(lambda x: np.sum(x * 2.0), np.ones(3))  # a 0-d array output
    with pytest.raises(ValueError, match=r"shape \(1,\)"):
        pb(np.ones(1))
    _, pb = deltaad.vjp(lambda x: (x * 2.0, np.ones(2)), 1.0)  # also a constant output's slot
    with pytest.raises(ValueError, match=r"output leaf 1 has shape \(3,\)"):
        pb((1.0, np.ones(3)))


@pytest.mark.parametrize("ct", [1j, np.complex128(1.0), np.array(1.0 + 0j), np.ones(2) * 1j])
def test_complex_cotangent_raises(ct):
    shape = np.shape(ct)
    _, pb = deltaad.vjp(lambda x: x * 2.0, np.ones(shape) if shape else 1.0)
    with pytest.raises(TypeError, match="complex"):
        pb(ct)


def test_cotangent_of_wrong_type_raises():
    _, pb = deltaad.vjp(lambda x: x * 2.0, 1.0)
    with pytest.raises(TypeError, match="type str"):
        pb("1.0")


@given(finite, finite)
def test_cotangent_forms_agree(x, c):
    """A float cotangent, a numpy scalar and a 0-d array give the same (float) gradient."""
    _, pb = deltaad.vjp(lambda t: t * t * 3.0, x)
    want = pb(c)
    assert type(want[0]) is float
    assert_close(want[0], 6.0 * x * c, rtol=1e-14, atol=1e-300)
    for ct in (np.float64(c), np.array(c)):
        got = pb(ct)
        assert type(got[0]) is float and got == want
    _, pb = deltaad.vjp(lambda t: np.sum(t * t), np.array([x, 1.0]))  # a 0-d array output
    assert np.array_equal(pb(c)[0], pb(np.array(c))[0])
    np.testing.assert_allclose(pb(c)[0], np.array([2.0 * x * c, 2.0 * c]), rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("t, err, msg", [
    (np.ones(2), ValueError, r"tangent of shape \(2,\) for a float primal"),
    (np.ones(1), ValueError, r"tangent of shape \(1,\) for a float primal"),
    (1j, TypeError, "complex"),
    (np.complex64(1.0), TypeError, "complex"),
    (np.array(1.0 + 0j), TypeError, "complex"),
    ("1.0", TypeError, "type str"),
])
def test_bad_tangent_for_float_primal(t, err, msg):
    with pytest.raises(err, match=msg):
        deltaad.jvp(lambda x: x * 2.0, (1.0,), (t,))
    with pytest.raises(err, match=msg):  # also when the other leaves are not all floats
        deltaad.jvp(lambda x, n: x * n, (1.0, 2), (t, 0))


def test_bad_tangent_for_array_primal():
    with pytest.raises(ValueError, match="shape"):
        deltaad.jvp(lambda x: x * 2.0, (np.ones(2),), (np.ones(3),))
    with pytest.raises(TypeError, match="complex"):
        deltaad.jvp(lambda x: x * 2.0, (np.ones(2),), (np.ones(2) * 1j,))


# --------------------------------------------------------------------------------------------
# 6. Jacobian dtypes follow the input and output leaves


def _plain(f, x):
    return np.asarray(f(x))


F32_FUNS = [
    ("scale", lambda x: x * 2.0),
    ("sin-sum", lambda x: np.sin(x) * np.sum(x)),
    ("to64", lambda x: x * np.ones(3)),
]


@pytest.mark.parametrize("name, f", F32_FUNS, ids=[n for n, _ in F32_FUNS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jacobian_dtype(name, f, dtype):
    x = np.array([0.5, -1.25, 2.0], dtype=dtype)
    want = np.result_type(x.dtype, _plain(f, x).dtype)
    Jr = deltaad.jacrev(f)(x)
    Jf = deltaad.jacfwd(f)(x)
    assert Jr.dtype == want and Jf.dtype == want
    # the same numbers as in float64, to float32 precision
    J64 = deltaad.jacrev(f)(x.astype(np.float64))
    np.testing.assert_allclose(Jr, J64, rtol=1e-6)
    np.testing.assert_allclose(Jf, J64, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hessian_dtype(dtype):
    x = np.array([0.5, -1.25], dtype=dtype)
    H = deltaad.hessian(lambda v: np.sum(v ** 3))(x)
    assert H.dtype == dtype
    np.testing.assert_allclose(H, np.diag(6.0 * x.astype(np.float64)), rtol=1e-6)


def test_jacobian_dtype_per_block():
    p = {"a": np.ones(2, dtype=np.float32), "b": np.ones(2)}
    J = deltaad.jacrev(lambda d: {"o32": d["a"] * 2.0, "o64": d["b"] * d["a"]})(p)
    assert J["o32"]["a"].dtype == np.float32 and J["o32"]["b"].dtype == np.float64
    assert J["o64"]["a"].dtype == np.float64 and J["o64"]["b"].dtype == np.float64
    J = deltaad.jacfwd(lambda d: {"o32": d["a"] * 2.0})(p)
    assert J["o32"]["a"].dtype == np.float32
    # a Python float output counts as float64
    assert deltaad.jacrev(lambda v: v[0] * v[1])(np.ones(2, dtype=np.float32)).dtype == np.float64


# --------------------------------------------------------------------------------------------
# 7. A 0-d array (or numpy scalar) tangent of a float primal gives float on both backends


@given(finite, finite)
def test_tangent_forms_agree(x, t):
    want = deltaad.jvp(lambda y: y * y, (x,), (t,))
    assert type(want[1]) is float
    assert_close(want[1], 2.0 * x * t, rtol=1e-15, atol=1e-300)
    for tt in (np.array(t), np.float64(t), np.array(t, dtype=np.float32)):
        out, tan = deltaad.jvp(lambda y: y * y, (x,), (tt,))
        assert type(out) is float and type(tan) is float
        assert_close(tan, 2.0 * x * float(tt), rtol=1e-15, atol=1e-300)


# --------------------------------------------------------------------------------------------
# 8. Dataclasses are rebuilt from their fields, without __init__ or __post_init__


@dataclasses.dataclass
class WithPostInit:
    a: float

    def __post_init__(self):
        self.b = 2.0 * self.a


@dataclasses.dataclass
class WithProperty:
    a: float
    n: int = 2

    @property
    def b(self):
        return self.a ** self.n

    @functools.cached_property
    def c(self):
        return 3.0 * self.a


@dataclasses.dataclass(slots=True)
class Slotted:
    a: float
    b: float


INITS = []


@dataclasses.dataclass
class Counted:
    a: float

    def __post_init__(self):
        INITS.append(1)


def test_dataclass_with_non_field_attribute_raises():
    with pytest.raises(TypeError, match=r"WithPostInit instance has attribute\(s\) 'b' that are not"):
        grad(lambda p: p.a * p.b)(WithPostInit(1.0))
    with pytest.raises(TypeError, match="only fields|Only fields"):
        deltaad.tree_flatten([WithPostInit(1.0)])


def test_dataclass_property_and_cached_property():
    p = WithProperty(1.5)
    assert p.c == 4.5  # cached in the instance's __dict__: recomputed on the rebuilt object
    g = grad(lambda q: q.b + q.c)(p)
    assert type(g) is WithProperty and g.n is None
    assert_close(g.a, 2.0 * 1.5 + 3.0, rtol=1e-15)


def test_dataclass_rebuilt_without_post_init():
    INITS.clear()
    c = Counted(2.0)
    assert INITS == [1]
    g = grad(lambda q: q.a * q.a)(c)
    assert type(g) is Counted and g.a == 4.0
    assert INITS == [1]  # neither the input's rebuild nor the gradient's ran __post_init__


def test_slotted_dataclass():
    g = grad(lambda s: s.a * s.b)(Slotted(2.0, 3.0))
    assert type(g) is Slotted and (g.a, g.b) == (3.0, 2.0)


def test_post_init_example_fixed_by_property():
    """The documented fix: compute derived values in a property, and the derivative flows."""
    x = 1.25
    g = grad(lambda q: q.b * q.a)(WithProperty(x, 3))
    assert_close(g.a, 4.0 * x ** 3, rtol=1e-14)
    assert_close(g.a, fd(lambda t: t ** 4, x), rtol=1e-7)


def test_nested_array_dual_tangent_and_cotangent():
    """Inside an outer differentiation a 0-d array dual is a valid tangent or cotangent of a
    float, and the outer derivative flows through it."""

    def via_jvp(s):
        return deltaad.jvp(lambda y: y * y, (2.0,), (deltaad.asarray(s) * 1.0,))[1]

    def via_vjp(s):
        _, pb = deltaad.vjp(lambda y: y * y, 2.0)
        return pb(deltaad.asarray(s) * 1.0)[0]

    for f in (via_jvp, via_vjp):
        assert grad(f)(1.0) == 4.0
        assert deltaad.jvp(f, (1.0,), (1.0,)) == (4.0, 4.0)


class _Box:
    def __init__(self, v):
        self.v = v


class _Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


HIDDEN = {
    "dict.values": lambda x: {"a": x * 2.0}.values(),
    "dict.items": lambda x: {"a": x * 2.0}.items(),
    "generator": lambda x: (x * k for k in range(2)),
    "map": lambda x: map(lambda k: x * k, range(2)),
    "zip": lambda x: zip([x], [1.0]),
    "iter": lambda x: iter([x]),
    "object attribute": lambda x: _Box(x * 3.0),
    "object slot": lambda x: _Slotted([x * 3.0]),
    "closure": lambda x: (lambda: x * 3.0),
    "nested in tuple": lambda x: (1.0, _Box({"k": [x]})),
}


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_outputs_that_hide_duals_raise_in_every_operator(name):
    """Never a silent None or zero derivative for duals the output hides."""
    make = HIDDEN[name]
    for run in (lambda: deltaad.vjp(make, 2.0), lambda: deltaad.jvp(make, (2.0,), (1.0,)),
                lambda: deltaad.jacrev(make)(2.0), lambda: deltaad.jacfwd(make)(2.0)):
        with pytest.raises(TypeError, match="(not a pytree container|an iterator)"):
            run()
    assert deltaad.open_traces() == []


def test_constant_objects_in_outputs_are_fine():
    out = deltaad.jvp(lambda x: (x * 2.0, _Box("label"), {1.0}.union({2.0})), (1.0,), (1.0,))
    assert out[0][0] == 2.0 and out[1][0] == 2.0 and out[1][1] is None
    assert deltaad.jacrev(lambda x: (x, _Box(None)))(1.0)[1] is None
