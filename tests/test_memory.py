"""No differentiation leaks: after ``gc.collect()`` no tape outlives the last thing that uses
it (a ``vjp_fn``), and memory stays flat over repeated calls -- for plain gradients, pullbacks
kept and dropped, nesting, forward mode, checkpoints, custom rules whose rules or residuals
close over their arguments (reference cycles through a dual: tape -> rule -> dual -> tape),
and differentiations stopped by an exception."""

import gc
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import deltaad as ad

# Every tape (and forward level) a case opens, weakly: a tape must die with its last user.
REFS = []
NOTING = [True]


def _note():
    """Remember the innermost open trace (call inside a differentiated function)."""
    if NOTING[0]:
        REFS.append(weakref.ref(ad.open_traces()[-1]))


def _chain(x, n=200):
    _note()
    for k in range(n):
        x = ad.sin(x) * 0.5 + x * (1.0 / (k + 1))
    return x


def _array_prog(a):
    _note()
    for _ in range(5):
        a = np.tanh(a) @ np.eye(3) * 0.9 + a
    return np.sum(a * a)


@ad.custom_vjp
def _cube(x):
    return x * x * x


_cube.defvjp(lambda x: (_cube(x), ad.value(x)), lambda x, g: (3.0 * x * x * g,))


def _closing_vjp(x):
    """A custom_vjp whose bwd closes over the dual ``x`` it was called with: a reference
    cycle tape -> binding -> bwd -> x -> tape."""
    @ad.custom_vjp
    def h(y):
        return y * 2.0

    h.defvjp(lambda y: (h(y), None), lambda r, g: (g * 2.0 + 0.0 * ad.value(x),))
    _note()
    return h(x) * x


def _closing_residual(x):
    """A custom_vjp whose residual holds (behind a static leaf, a function) the dual ``x``:
    tape -> binding -> residuals -> x -> tape."""
    @ad.custom_vjp
    def h(y):
        return ad.sin(y)

    h.defvjp(lambda y: (h(y), (lambda: x,)),
             lambda res, g: (g * ad.cos(ad.value(res[0]())),))
    _note()
    return _chain(h(x) * x, 30)


def _closing_pullback(x):
    """A ``vjp_fn`` kept where a rule of the tape it belongs to can reach it, beside a dual of
    that tape: tape -> rule -> holder -> (vjp_fn -> tape, x -> tape)."""
    holder = [x]

    @ad.custom_vjp
    def h(y):
        return y * 3.0

    h.defvjp(lambda y: (h(y), None), lambda r, g: (g * 3.0 + 0.0 * len(holder),))
    _note()
    return _chain(h(x), 30), holder


def _kept_pullback():
    holders = []

    def f(x):
        out, holder = _closing_pullback(x)
        holders.append(holder)
        return out

    out, pb = ad.vjp(f, 0.3)
    holders[0].append(pb)  # the holder its own tape's rule reaches keeps the vjp_fn
    pb(1.0)


def _nested_closing(x):
    """An inner differentiation whose custom rule closes over a dual of the inner tape and
    one of the outer tape, inside an outer one doing the same."""
    def inner(y):
        @ad.custom_vjp
        def h(z):
            return z * z

        h.defvjp(lambda z: (h(z), ad.value(z)),
                 lambda r, g: (2.0 * r * g + 0.0 * ad.value(y) + 0.0 * ad.value(x),))
        _note()
        return h(y) * x
    return _closing_vjp(x) * ad.grad(inner)(x * 1.5)


def _checkpointed_closing(x):
    """A checkpoint whose function closes over a dual of the enclosing tape: the node, kept on
    the tape, holds it (tape -> node -> function -> x -> tape)."""
    _note()
    return ad.checkpoint(lambda y: _chain(y * x, 20))(x)


@ad.custom_jvp
def _soft(x):
    return ad.log(1.0 + ad.exp(x))


@_soft.defjvp
def _soft_jvp(p, t):
    (x,), (tx,) = p, t
    return _soft(x), ad.sigmoid(x) * tx


def _interrupted(x):
    _note()
    raise KeyboardInterrupt  # stands for an interrupt arriving mid-differentiation


def _run_interrupted():
    try:
        ad.grad(_interrupted)(1.0)
    except KeyboardInterrupt:
        pass


CASES = {
    "grad": lambda: ad.grad(_chain)(0.3),
    "value_and_grad array": lambda: ad.value_and_grad(_array_prog)(np.ones((2, 3))),
    "jvp": lambda: ad.jvp(_chain, (0.3,), (1.0,)),
    "hessian": lambda: ad.hessian(lambda x: _chain(x, 20))(0.3),
    "nested": lambda: ad.grad(lambda x: x * ad.grad(lambda y: _chain(x * y, 30))(1.0))(0.3),
    "jacrev": lambda: ad.jacrev(lambda v: [_chain(v[0], 30), v[0] * v[1]])([0.3, 0.2]),
    "vjp called and dropped": lambda: ad.vjp(_chain, 0.3)[1](1.0),
    "custom_vjp": lambda: ad.grad(lambda x: _cube(_chain(x, 30)))(0.3),
    "custom_vjp forward": lambda: ad.jacfwd(lambda x: _cube(_chain(x, 30)))(0.3),
    "custom_jvp reverse": lambda: ad.grad(lambda x: _soft(_chain(x, 30)))(0.3),
    "interrupted": _run_interrupted,
    "bwd closing over its argument": lambda: ad.grad(_closing_vjp)(0.3),
    "bwd closing over its argument, forward": lambda: ad.jacfwd(_closing_vjp)(0.3),
    "bwd closing over its argument, vjp_fn kept": lambda: ad.vjp(_closing_vjp, 0.3)[1](1.0),
    "residual holding its argument": lambda: ad.grad(_closing_residual)(0.3),
    "vjp_fn kept beside a dual": _kept_pullback,
    "nested, rules closing over both levels": lambda: ad.grad(_nested_closing)(0.3),
    "hessian of a closing bwd": lambda: ad.hessian(_closing_vjp)(0.3),
    "checkpoint closing over a dual": lambda: ad.grad(_checkpointed_closing)(0.3),
}


def _case(name):
    c = CASES[name]
    return c.values[0] if hasattr(c, "values") else c


def _params():
    return [pytest.param(n, marks=c.marks) if hasattr(c, "values") else n for n, c in CASES.items()]


@pytest.mark.parametrize("name", _params())
def test_no_tape_outlives_its_differentiation(name):
    run = _case(name)
    REFS.clear()
    for _ in range(20):
        run()
    gc.collect()
    alive = sum(r() is not None for r in REFS)
    n = len(REFS)
    REFS.clear()
    assert n >= 20
    assert alive == 0, "%d of %d tapes alive after gc.collect()" % (alive, n)


@pytest.mark.parametrize("name", _params())
def test_memory_flat(name, fast):
    """Memory after ``gc.collect()`` does not grow with the number of calls: the growth from
    the warm-up to 4x as many calls is the same as from nothing to the warm-up, within a
    small slack (allocator caches, interned objects)."""
    run = _case(name)
    calls = 60 if fast else 15
    NOTING[0] = False
    for _ in range(calls):  # warm up every cache first
        run()
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(calls):
            run()
        gc.collect()
        after1 = tracemalloc.get_traced_memory()[0]
        for _ in range(3 * calls):
            run()
        gc.collect()
        after4 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        NOTING[0] = True
    per_call = (after4 - after1) / (3 * calls)
    assert per_call < 64, "memory grew %.0f bytes per call" % per_call


def test_vjp_fns_kept_then_dropped():
    """A kept ``vjp_fn`` keeps its tape (it can be called again); dropping it frees it."""
    REFS.clear()
    fns = [ad.vjp(_chain, 0.1 * k)[1] for k in range(10)]
    gc.collect()
    assert all(r() is not None for r in REFS)
    first = [fn(1.0) for fn in fns]
    assert [fn(1.0) for fn in fns] == first
    del fns
    gc.collect()
    assert all(r() is None for r in REFS)
    REFS.clear()


def test_escaped_dual_keeps_at_most_its_own_tape():
    """A dual kept after its grad returned keeps no other tape, and its value, repr and error
    still work. The compiled core's dual does not even keep its own: it names its trace by a
    handle (a dual there is no object the collector tracks, so one that owned its tape could
    hide a cycle through it); the pure twin's dual is an ordinary object and keeps it until
    the dual goes."""
    REFS.clear()
    kept = []
    ad.grad(lambda x: kept.append(x) or _chain(x, 10))(0.3)
    for _ in range(5):
        ad.grad(_chain)(0.3)
    gc.collect()
    assert [r() is not None for r in REFS] == [ad.backend == "python"] + [False] * 5
    x = kept[0]
    assert ad.value(x) == 0.3 and repr(x).startswith("Dual(0.3, Var 0, level=")
    assert x.trace.closed
    with pytest.raises(ad.EscapedDualError):
        x * 2.0
    with pytest.raises(ad.EscapedDualError):
        ad.grad(lambda y: y * x)(1.0)
    del x
    kept.clear()
    gc.collect()
    assert all(r() is None for r in REFS)
    REFS.clear()


def test_tape_kept_by_its_owner_not_by_its_duals():
    """The tape lives exactly as long as what owns it (here a ``vjp_fn``), whatever duals of
    it are kept; once it is freed they raise as escaped duals, on both backends alike."""
    REFS.clear()
    kept = []
    out, pb = ad.vjp(lambda x: kept.append(x) or _chain(x, 10), 0.3)
    gc.collect()
    assert REFS[0]() is not None
    g = pb(1.0)
    assert pb(1.0) == g
    del pb
    gc.collect()
    if ad.backend == "c":
        assert REFS[0]() is None
    assert kept[0].trace.closed
    with pytest.raises(ad.EscapedDualError):
        ad.sin(kept[0])
    kept.clear()
    gc.collect()
    assert REFS[0]() is None
    REFS.clear()


@pytest.mark.skipif(ad.backend == "python",
                    reason="a pure-Python dual keeps its trace: none is freed while a dual of it "
                           "can be read")
@pytest.mark.parametrize("how", ["grad", "jvp"])
def test_duals_read_while_their_trace_is_freed(how):
    """Code that runs while a trace is being freed (a weak reference's callback) and reads a
    dual of it finds a closed trace, never the one being freed."""
    kept, seen, refs = [], [], []

    def f(x):
        kept.append(x)
        refs.append(weakref.ref(ad.open_traces()[-1],
                                lambda r: seen.append((kept[0].trace.closed, repr(kept[0])))))
        return x * 2.0

    if how == "grad":
        ad.grad(f)(1.0)
    else:
        ad.jvp(f, (1.0,), (1.0,))
    gc.collect()
    assert refs[0]() is None
    assert [s[0] for s in seen] == [True] and seen[0][1].startswith("Dual(1.0, ")
    x = kept[0]
    with pytest.raises(ad.EscapedDualError):
        x + 1.0
    with pytest.raises(ad.EscapedDualError):  # a dual made by hand on that trace: escaped too
        type(x)(2.0, x.trace, x.id, x.tangent) * 3.0


def test_refcount_of_inputs_unchanged():
    """Differentiating does not keep references to the caller's inputs."""
    x = np.ones(3)
    before = sys.getrefcount(x)
    for _ in range(10):
        ad.grad(lambda a: np.sum(a * a))(x)
        ad.jvp(lambda a: a * 2.0, (x,), (x,))
    gc.collect()
    assert sys.getrefcount(x) == before
