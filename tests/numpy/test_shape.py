"""Shape and indexing (deltaad.numpy.shape and the array dual's own indexing).

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import deltaad as d
from numpy_checks import Family, away, axis_args, bshapes, distinct, seeds, shapes, uniform

family = Family()
op = family.op


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


@op("compress/extract/choose/resize/trim_zeros/unwrap")
@st.composite
def _selections(draw):
    """Selections whose positions come from plain values: compress, extract, choose,
    resize, trim_zeros; and unwrap, whose corrections are constants."""
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    nd = len(s)
    ax = draw(st.integers(-nd, nd - 1))
    cond = rng.uniform(size=s[ax]) < 0.6
    fcond = rng.uniform(size=s) < 0.5
    which = rng.integers(0, 3, size=s)
    new_shape = tuple(int(n) for n in rng.integers(1, 4, size=draw(st.integers(1, 3))))
    fns = [
        lambda x: np.compress(cond, x, axis=ax),
        lambda x: np.compress(cond[:2], x),
        lambda x: np.extract(fcond, x),
        lambda x: np.choose(which, [x, x * x, np.sin(x)]),
        lambda x: np.choose(which + 1, [x, 2.0 * x], mode="clip"),
        lambda x: np.resize(x, new_shape),
        lambda x: np.trim_zeros(np.concatenate([[0.0, 0.0], np.ravel(x), [0.0]]) * 2.0),
        lambda x: np.trim_zeros(np.concatenate([[0.0], np.ravel(x)]), "f"),
        lambda x: np.unwrap(x * 4.0, axis=ax),
        lambda x: np.unwrap(x * 3.0, period=2.0),
    ]
    k = draw(st.integers(0, len(fns) - 1))
    x = away(rng, s, 0.2, 2.0)
    if k >= len(fns) - 2:  # unwrap: no step within a finite difference of a jump (its
        scale, half, axis = (4.0, np.pi, ax) if k == len(fns) - 2 else (3.0, 1.0, -1)
        d = np.abs(np.diff(x * scale, axis=axis))  # correction changes where a step
        gap = np.abs(np.mod(d, 2 * half) - half)   # crosses an odd multiple of half a period;
        # the differences move x by up to 2e-3 along a direction of entries up to ~3: a step
        # moves by up to 2 * 2e-3 * 3 * scale, 0.072 at scale 4, and 0.01 let one cross)
        assume(d.size == 0 or gap.min() > 0.1)
    return fns[k], [x]


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
    sc, sa, sb = bshapes(draw, 3)
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
# rot90, rollaxis, meshgrid, insert, delete, block, partition, linspace, gradient, and the
# joins (column_stack, dstack, append, atleast_nd)


@op("rot90/rollaxis")
@st.composite
def _rot90(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=2))
    nd = len(s)
    k = draw(st.integers(-5, 5))
    a0, a1 = draw(st.lists(st.integers(-nd, nd - 1), min_size=2, max_size=2,
                           unique_by=lambda i: i % nd))
    ax, start = draw(st.integers(-nd, nd - 1)), draw(st.integers(0, nd))
    f = draw(st.sampled_from([lambda x: np.rot90(x, k, axes=(a0, a1)),
                              lambda x: np.rollaxis(x, ax, start)]))
    return f, [uniform(rng, s)]


@op("meshgrid")
@st.composite
def _meshgrid(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    xs = [uniform(rng, draw(shapes(max_dims=2))) for _ in range(n)]
    kw = {"indexing": draw(st.sampled_from(["xy", "ij"])), "sparse": draw(st.booleans())}
    return (lambda *a: np.meshgrid(*a, **kw)), xs


@op("insert/delete/append")
@st.composite
def _insert(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    axis = draw(st.sampled_from([None] + list(range(-len(s), len(s)))))
    n = int(np.prod(s)) if axis is None else s[axis]
    obj = draw(st.sampled_from([0, n, [0, n // 2], slice(0, n, 2)]))
    which = draw(st.sampled_from(["insert", "delete", "append"]))
    x = uniform(rng, s)
    if which == "delete":
        obj = draw(st.sampled_from([0, n - 1, [0, n // 2], slice(0, n, 2)]))
        return (lambda t: np.delete(t, obj, axis=axis)), [x]
    if which == "append":
        vs = s if axis is not None else draw(shapes(max_dims=2))
        return (lambda t, v: np.append(t, v, axis=axis)), [x, uniform(rng, vs)]
    obj = draw(st.sampled_from([0, n, n // 2, [0, n]]))
    return (lambda t, v: np.insert(t, obj, v, axis=axis)), [x, uniform(rng, ())]


@op("block/column_stack/dstack/atleast_nd")
@st.composite
def _block(draw):
    rng = np.random.default_rng(draw(seeds))
    r, c, k = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    a, b = uniform(rng, (r, c)), uniform(rng, (r, k))
    f = draw(st.sampled_from([
        lambda x, y: np.block([[x, y], [x[:1] * 2.0, y[:1]]]),
        lambda x, y: np.block([x[0], y[0], 1.5]),
        lambda x, y: np.block([[[x]], [[x * 0.5]]]),
        lambda x, y: np.column_stack([x, y, x[:, 0]]),
        lambda x, y: np.dstack([x, x * y[:, :1], x[:, :, None]]),
        lambda x, y: np.atleast_3d(x[0], y, 2.0 * y[0, 0])[0] + np.atleast_2d(x[0]).sum(),
    ]))
    return f, [a, b]


@op("diagflat/ediff1d")
@st.composite
def _diagflat(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(max_dims=2))
    k = draw(st.integers(-2, 2))
    f = draw(st.sampled_from([lambda t, u: np.diagflat(t, k), lambda t, u: np.ediff1d(t),
                              lambda t, u: np.ediff1d(t, to_end=u, to_begin=[1.0, u])]))
    return f, [uniform(rng, s), 0.3]


@op("partition")
@st.composite
def _partition(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=1))
    axis = draw(st.sampled_from([None] + list(range(-len(s), len(s)))))
    n = int(np.prod(s)) if axis is None else s[axis]
    kth = draw(st.sampled_from([0, n - 1, (0, n - 1), n // 2]))
    return (lambda x: np.partition(x, kth, axis=axis)), [distinct(rng, s)]


@op("linspace")
@st.composite
def _linspace(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(max_dims=2))
    num = draw(st.integers(0, 6))
    endpoint = draw(st.booleans())
    axis = draw(st.integers(-len(s) - 1, len(s)))
    ret = draw(st.booleans()) and num - endpoint > 0  # (the step is nan otherwise)
    return ((lambda a, b: np.linspace(a, b, num, endpoint=endpoint, axis=axis, retstep=ret)),
            [uniform(rng, s), uniform(rng, s)])


@op("gradient")
@st.composite
def _gradient(draw):
    rng = np.random.default_rng(draw(seeds))
    s = draw(shapes(min_dims=1, min_side=3))
    edge = draw(st.sampled_from([1, 2]))
    axis = draw(st.sampled_from([None] + list(range(len(s)))))
    axes = range(len(s)) if axis is None else [axis]
    spacing = draw(st.sampled_from(["none", "scalar", "arrays"]))
    if spacing == "none":
        sp = ()
    elif spacing == "scalar":
        sp = (0.7,)
    else:
        sp = tuple(np.cumsum(rng.uniform(0.5, 1.5, s[i])) for i in axes)
    return (lambda x: np.gradient(x, *sp, axis=axis, edge_order=edge)), [uniform(rng, s)]


test_first_order, test_second_order = family.tests()


def test_values_are_numpys():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4))
    fs = [lambda t: np.rot90(t, 3), lambda t: np.rollaxis(t[None], 2),
          lambda t: np.meshgrid(t[0], t[1]), lambda t: np.insert(t, 1, 2.5, axis=1),
          lambda t: np.delete(t, [0, 2], axis=1), lambda t: np.block([[t, t], [t, t]]),
          lambda t: np.partition(t, 2, axis=1), lambda t: np.linspace(t[0], t[1], 5, axis=1),
          lambda t: np.gradient(t, 0.3, np.array([0.0, 0.2, 0.7, 1.5]), edge_order=2),
          lambda t: np.gradient(t[0])]
    for f in fs:
        v, _ = d.vjp(f, x)
        for a, b in zip(d.tree_flatten(v)[0], d.tree_flatten(f(x))[0]):
            assert np.array_equal(d.value(a), b)


def test_linspace_with_dual_endpoints_on_scalars():
    g = d.grad(lambda a, b: np.linspace(a, b, 5).sum(), argnums=(0, 1))(0.5, 2.0)
    assert g == (2.5, 2.5)
