"""``checkpoint`` / ``remat``: same values and derivatives as the plain program, to the bit, in
every mode; the sub-computations run as often as checkpointed reverse mode says; the tape keeps
one checkpoint's operations at a time; errors leave nothing open or half-dropped."""

import math
import threading
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import deltaad as ad
from deltaad import _backend

from helpers import OPS, bits, finite_inputs, program_is_tame, programs, scaled

B = _backend.B


def same(a, b):
    """Bit equality of two results (floats, arrays, nested tuples and lists)."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a = np.asarray(a)
        b = np.asarray(b)
        return a.shape == b.shape and a.tobytes() == b.tobytes()
    if a is None or b is None:
        return a is b
    return bits(a) == bits(b)


# --------------------------------------------------------------------------------------------
# The Frank paper's nested example


def frank(calls, ckpt):
    def f(x):
        y = 2.0

        def zf():
            calls["x + y"] += 1
            return x + y

        z = ckpt(zf)()

        def wf():
            calls["x * z"] += 1
            return x * z

        def af():
            calls["w + y"] += 1
            return ckpt(wf)() + y

        a = ckpt(af)()
        return a + x
    return f


def test_frank_nested_example():
    # y = 2; z = ckpt(x + y); a = ckpt(ckpt(x * z) + y); a + x at x = 2: value 12,
    # derivative 7 (x^2 + 3x + 2). Checkpointed reverse mode runs each checkpointed thunk once
    # with the evaluate-only handler and once more with the reverse handler; a checkpoint met
    # during that second run is handled the same way, so x * z, inside a's checkpoint, runs
    # once in a's first run and twice in its second: 3 times.
    calls = Counter()
    assert ad.value_and_grad(frank(calls, ad.checkpoint))(2.0) == (12.0, 7.0)
    assert calls == {"x + y": 2, "w + y": 2, "x * z": 3}
    plain = Counter()
    assert ad.value_and_grad(frank(plain, lambda f: f))(2.0) == (12.0, 7.0)
    assert plain == {"x + y": 1, "w + y": 1, "x * z": 1}


def test_frank_example_tape_keeps_no_checkpointed_operation():
    calls = Counter()
    out, pb = ad.vjp(frank(calls, ad.checkpoint), 2.0)
    # x, z's output and node, a's output and node, a + x: nothing of x + y, w, w + y
    assert pb.tape.nbindings == 6
    assert [pb.tape.binding(i)[0] for i in (2, 4)] == [(0,), (0, 1)]
    assert out == 12.0 and pb(1.0) == (7.0,)
    assert pb(1.0) == (7.0,)  # a second sweep re-runs them again
    assert calls == {"x + y": 3, "w + y": 3, "x * z": 5}


def test_remat_is_checkpoint_and_a_decorator():
    assert ad.remat is ad.checkpoint

    @ad.checkpoint
    def f(x):
        return ad.sin(x) * x

    @ad.checkpoint(prevent_cse=False, static_argnums=(1,))
    def g(x, k):
        return x ** k

    assert f.__name__ == "f"
    x = 0.7
    assert ad.grad(f)(x) == ad.grad(lambda x: ad.sin(x) * x)(x)
    assert ad.grad(g)(x, 3) == ad.grad(lambda x: x ** 3)(x)
    with pytest.raises(NotImplementedError, match="policy"):
        ad.checkpoint(f, policy=object())
    with pytest.raises(TypeError):
        ad.checkpoint(3.0)


# --------------------------------------------------------------------------------------------
# Random programs with random nested checkpoints


@st.composite
def nestings(draw, n):
    """A random nesting of ``n`` steps into checkpoints: a list whose items are step numbers
    or nested lists (one checkpoint each), in program order."""
    def build(lo, hi, depth):
        items = []
        k = lo
        while k < hi:
            if depth < 3 and hi - k >= 1 and draw(st.integers(0, 3)) == 0:
                e = draw(st.integers(k + 1, hi))
                items.append(build(k, e, depth + 1))
                k = e
            else:
                items.append(k)
                k += 1
        return items
    return build(0, n, 0)


def run_nested(prog, F, xs, nest, ckpt, counter=None):
    """``prog`` on ``xs``, the steps grouped by ``nest``: a checkpointed function reads the
    values computed before it from the enclosing scope (closures over duals) and returns the
    ones it computes."""
    def execute(env, items):
        for item in items:
            if isinstance(item, int):
                op, i, j = prog.steps[item]
                env.append(OPS[op](F, env[i], env[j]))
            else:
                n0 = len(env)

                def seg(prefix=env, n0=n0, items=item):
                    if counter is not None:
                        counter[id(items)] += 1
                    local = prefix[:n0]
                    execute(local, items)
                    return local[n0:]

                env.extend(ckpt(seg)())
    env = list(xs)
    execute(env, nest)
    return [env[k] for k in prog.outs]


def program_cases():
    return st.integers(1, 4).flatmap(
        lambda n_in: st.tuples(programs(min_in=n_in, max_in=n_in, max_ops=12),
                               st.lists(finite_inputs, min_size=n_in, max_size=n_in)))


@scaled(0.6)
@given(program_cases(), st.data())
def test_random_programs_reverse_and_forward(case, data):
    prog, xs = case
    assume(program_is_tame(prog, xs))
    nest = data.draw(nestings(len(prog.steps)))
    xs = [float(x) for x in xs]

    def plain(*v):
        return run_nested(prog, ad, v, nest, lambda f: f)

    def ckpt(*v):
        return run_nested(prog, ad, v, nest, ad.checkpoint)

    cts = [1.0 + 0.5 * k for k in range(len(prog.outs))]
    out_p, pb_p = ad.vjp(plain, *xs)
    out_c, pb_c = ad.vjp(ckpt, *xs)
    assert same(out_p, out_c)
    assert same(pb_p(cts), pb_c(cts))
    assert same(pb_c(cts), pb_p(cts))  # swept twice
    assert pb_c.tape.nbindings <= pb_p.tape.nbindings + 2 * len(prog.steps) + 1
    tans = tuple(0.25 * (k + 1) for k in range(len(xs)))
    assert same(ad.jvp(plain, tuple(xs), tans), ad.jvp(ckpt, tuple(xs), tans))


def scalar(run):
    def f(*v):
        outs = run(*v)
        s = outs[0]
        for k, o in enumerate(outs[1:]):
            s = s + (0.5 + k) * o
        return s
    return f


@scaled(0.3)
@given(program_cases(), st.data())
def test_random_programs_second_order(case, data):
    prog, xs = case
    assume(program_is_tame(prog, xs))
    nest = data.draw(nestings(len(prog.steps)))
    xs = [float(x) for x in xs]
    plain = scalar(lambda *v: run_nested(prog, ad, v, nest, lambda f: f))
    ckpt = scalar(lambda *v: run_nested(prog, ad, v, nest, ad.checkpoint))
    args = tuple(range(len(xs)))
    # forward over reverse
    assert same(ad.hessian(plain, argnums=args)(*xs), ad.hessian(ckpt, argnums=args)(*xs))
    # reverse over reverse
    rr_p = ad.jacrev(ad.grad(plain, argnums=args), argnums=args)(*xs)
    rr_c = ad.jacrev(ad.grad(ckpt, argnums=args), argnums=args)(*xs)
    assert same(rr_p, rr_c)
    # a checkpoint around an inner differentiation: the outer tape drops it
    def outer(run):
        def f(x):
            g = ad.grad(run)(x, *xs[1:])
            return g * x
        return f
    assert same(ad.grad(outer(plain))(xs[0]), ad.grad(outer(ckpt))(xs[0]))
    assert same(ad.grad(ad.checkpoint(outer(plain)))(xs[0]), ad.grad(outer(plain))(xs[0]))


@scaled(0.4)
@given(program_cases(), st.data())
def test_random_programs_run_counts(case, data):
    # each checkpoint runs once in the first run of its parent and twice more for each
    # re-run of its parent in which an adjoint reaches it
    prog, xs = case
    assume(program_is_tame(prog, xs))
    nest = data.draw(nestings(len(prog.steps)))
    counter = Counter()
    f = scalar(lambda *v: run_nested(prog, ad, v, nest, ad.checkpoint, counter))
    ad.grad(f, argnums=tuple(range(len(xs))))(*[float(x) for x in xs])
    plain_counter = Counter()
    run_nested(prog, ad, xs, nest, lambda g: g, plain_counter)
    for key, n in plain_counter.items():
        assert n == 1
        assert 1 <= counter[key] <= 2 ** depth_of(nest, key) + 2 ** depth_of(nest, key) - 1


def depth_of(nest, key, d=1):
    for item in nest:
        if isinstance(item, list):
            if id(item) == key:
                return d
            r = depth_of(item, key, d + 1)
            if r:
                return r
    return 0


# --------------------------------------------------------------------------------------------
# Closures, pytrees, arrays, what is returned


def test_closure_over_parameters_and_pytree_arguments():
    def model(p, x):
        @ad.checkpoint
        def layer(h, scale):
            return {"v": ad.tanh(p["w"] * h["v"] + p["b"]) * scale, "n": h["n"] + 1}

        h = {"v": x, "n": 0}
        for _ in range(4):
            h = layer(h, 1.5)
        assert h["n"] == 4 and type(h["n"]) is int
        return h["v"] * h["v"]

    def plain(p, x):
        h = x
        for _ in range(4):
            h = ad.tanh(p["w"] * h + p["b"]) * 1.5
        return h * h

    p = {"w": 0.7, "b": -0.2}
    g = ad.grad(model, argnums=(0, 1))(p, 0.3)
    assert same(g[1], ad.grad(plain, argnums=1)(p, 0.3))
    assert same(g[0]["w"], ad.grad(plain)(p, 0.3)["w"])
    out, pb = ad.vjp(lambda p: model(p, 0.3), p)
    nb = pb.tape.nbindings
    out, pb = ad.vjp(lambda p: plain(p, 0.3), p)
    assert nb < pb.tape.nbindings


def test_outputs_passed_through_repeated_and_constant():
    @ad.checkpoint
    def f(x, y):
        z = x * y
        return (z, x, z, 3, "s", None, 2.5, y)

    def g(x, y):
        z, x2, z2, k, s, n, c, y2 = f(x, y)
        assert (k, s, n, c) == (3, "s", None, 2.5)
        return z * 2.0 + x2 * z2 + y2 + c

    def plain(x, y):
        z = x * y
        return z * 2.0 + x * z + y + 2.5

    xs = (0.3, -1.7)
    assert same(ad.value_and_grad(g, argnums=(0, 1))(*xs),
                ad.value_and_grad(plain, argnums=(0, 1))(*xs))


def test_arrays_inside_and_as_outputs():
    w = np.array([[0.5, -1.0], [2.0, 0.25]])

    def plain(x, v):
        h = np.tanh(w @ v * x)
        return np.sum(h * h) + x

    @ad.checkpoint
    def inner(x, v):
        return np.tanh(w @ v * x), x * 1.0

    def ckpt(x, v):
        h, y = inner(x, v)
        return np.sum(h * h) + y

    v = np.array([0.3, -0.4])
    assert same(ad.grad(plain, argnums=(0, 1))(0.8, v), ad.grad(ckpt, argnums=(0, 1))(0.8, v))
    assert same(ad.hessian(plain)(0.8, v), ad.hessian(ckpt)(0.8, v))


def test_custom_rules_and_inner_grad_inside_a_checkpoint():
    @ad.custom_vjp
    def cube(x):
        return x * x * x

    cube.defvjp(lambda x: (cube(x), x), lambda x, g: (3.0 * x * x * g,))

    def body(x):
        return cube(x) + ad.grad(lambda t: t * ad.sin(x * t))(x) * x

    assert same(ad.grad(ad.checkpoint(body))(0.6), ad.grad(body)(0.6))
    assert same(ad.hessian(ad.checkpoint(body))(0.6), ad.hessian(body)(0.6))


def test_forward_mode_and_no_differentiation_run_fun_once():
    calls = Counter()
    f = frank(calls, ad.checkpoint)
    assert ad.jvp(f, (2.0,), (1.0,)) == (12.0, 7.0)
    assert calls == {"x + y": 1, "w + y": 1, "x * z": 1}
    calls.clear()
    assert f(2.0) == 12.0
    assert calls == {"x + y": 1, "w + y": 1, "x * z": 1}


def test_reverse_over_forward_runs_fun_plainly():
    calls = Counter()
    f = frank(calls, ad.checkpoint)
    got = ad.grad(lambda x: ad.jvp(f, (x,), (1.0,))[1])(2.0)
    assert got == 2.0 and calls == {"x + y": 1, "w + y": 1, "x * z": 1}


def test_nested_reverse_keeps_the_region_recorded():
    # Under grad of grad the checkpoint's values are duals of the outer tape, which keeps
    # them all: the inner tape keeps the region too (no re-run), so results are the same bits.
    calls = Counter()
    f = frank(calls, ad.checkpoint)
    assert ad.grad(ad.grad(f))(2.0) == 2.0
    assert calls == {"x + y": 1, "w + y": 1, "x * z": 1}
    # A checkpoint whose computation does not touch the outer tape is still dropped.
    calls.clear()

    def inner(y):
        return ad.checkpoint(lambda: ad.sin(y) * y)()

    def outer(x):
        return ad.grad(inner)(0.5) * x

    assert ad.grad(outer)(3.0) == ad.grad(lambda y: ad.sin(y) * y)(0.5)


def test_jacrev_sweeps_re_run_each_time():
    calls = Counter()

    def f(x):
        def seg():
            calls["seg"] += 1
            return [x * x, ad.sin(x)]
        a, b = ad.checkpoint(seg)()
        return [a + b, a * b]

    assert same(ad.jacrev(f)(0.4), ad.jacrev(lambda x: [x * x + ad.sin(x), x * x * ad.sin(x)])(0.4))
    assert calls["seg"] == 3  # the run and one re-run per output


def test_zero_cotangent_does_not_re_run():
    calls = Counter()

    def f(x):
        def seg():
            calls["seg"] += 1
            return x * x
        a = ad.checkpoint(seg)()
        return [a, x]

    out, pb = ad.vjp(f, 1.5)
    assert pb([0.0, 1.0]) == (1.0,)
    assert calls["seg"] == 1
    assert pb([1.0, 0.0]) == (3.0,)
    assert calls["seg"] == 2


# --------------------------------------------------------------------------------------------
# Divergence, errors, no state left behind


def test_a_function_of_changing_state_is_detected():
    state = {"k": 1.0}

    def f(x):
        def seg():
            state["k"] += 1.0
            return x * state["k"]
        return ad.checkpoint(seg)() * x

    with pytest.raises(ad.CheckpointError, match="not a function|differs from the first run"):
        ad.grad(f)(1.0)


def test_reading_a_different_captured_dual_is_detected():
    box = {}

    def f(x, y):
        box["v"] = x

        def seg():
            return box["v"] * 2.0

        out = ad.checkpoint(seg)()
        box["v"] = y  # the same value, another variable
        return out

    with pytest.raises(ad.CheckpointError, match="read variables"):
        ad.grad(f, argnums=(0, 1))(1.0, 1.0)


def test_a_changed_structure_is_detected():
    flip = [False]

    def f(x):
        def seg():
            flip[0] = not flip[0]
            return (x * 2.0,) if flip[0] else [x * 2.0]
        return ad.checkpoint(seg)()[0]

    with pytest.raises(ad.CheckpointError, match="structure"):
        ad.grad(f)(1.0)


def test_an_exception_in_a_re_run_leaves_nothing_behind():
    fail = [False]

    def f(x, y):
        def seg():
            if fail[0]:
                raise KeyError("boom")
            return ad.sin(x) * y
        a = ad.checkpoint(seg)()
        return a * a + x

    xs = (0.3, 1.1)
    out, pb = ad.vjp(f, *xs)
    n = pb.tape.nbindings
    expect = pb(1.0)
    fail[0] = True
    for _ in range(2):
        with pytest.raises(KeyError, match="boom"):
            pb(1.0)
        assert ad.open_traces() == []
        assert pb.tape.nbindings == n
        assert pb.tape.closed
    fail[0] = False
    assert same(pb(1.0), expect)
    assert same(expect, ad.grad(lambda x, y: (ad.sin(x) * y) ** 2 + x, argnums=(0, 1))(*xs))


def test_an_exception_in_a_nested_re_run_leaves_nothing_behind():
    fail = [0]

    def f(x):
        def inner():
            fail[0] += 1
            if fail[0] == 5:  # the re-run of the inner checkpoint during the outer re-run
                raise ValueError("inner")
            return x * x
        def outer():
            return ad.checkpoint(inner)() + x
        return ad.checkpoint(outer)() * x

    out, pb = ad.vjp(f, 2.0)
    n = pb.tape.nbindings
    assert pb(1.0) == (16.0,)  # d/dx (x^2 + x) x = 3x^2 + 2x
    with pytest.raises(ValueError, match="inner"):
        pb(1.0)
    assert ad.open_traces() == [] and pb.tape.nbindings == n
    assert pb(1.0) == (16.0,)


def test_a_kept_intermediate_is_an_error_not_a_crash():
    kept = []

    def f(x):
        def seg():
            a = x * x
            b = a * x
            c = b * x
            kept.append(c)
            return a
        y = ad.checkpoint(seg)()
        return y + kept[0]  # c's id is past the tape's end after the checkpoint

    with pytest.raises(ad.EscapedDualError, match="checkpointed"):
        ad.grad(f)(1.5)


def test_sweeping_a_checkpointed_tape_re_entrantly_is_refused():
    box = {}

    def f(x):
        def seg():
            if "pb" in box:
                box["pb"](1.0)
            return x * x
        return ad.checkpoint(seg)()

    out, pb = ad.vjp(f, 2.0)
    box["pb"] = pb
    with pytest.raises(RuntimeError, match="already being swept"):
        pb(1.0)
    del box["pb"]
    assert pb(1.0) == (4.0,)


def test_concurrent_sweeps_are_safe():
    def f(x):
        return ad.checkpoint(lambda: ad.sin(x) * x)() * x

    out, pb = ad.vjp(f, 0.7)
    expect = pb(1.0)
    results = []
    errors = []

    def work():
        for _ in range(200):
            try:
                results.append(pb(1.0))
            except RuntimeError as exc:  # another thread was sweeping it
                assert "already being swept" in str(exc)
                errors.append(exc)

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results and all(same(r, expect) for r in results)
    assert pb.tape.closed and ad.open_traces() == []


def test_tapes_with_checkpoints_are_freed():
    # A checkpoint's node holds the function, whose closure holds duals of the tape: the
    # compiled core's duals are not tracked by the garbage collector, so the tape lets go of
    # its nodes when its vjp function is freed.
    import gc
    import weakref

    refs = []

    def f(x):
        refs.append(weakref.ref(ad.open_traces()[-1]))
        z = ad.checkpoint(lambda: x * x)()
        return z + ad.fori_loop(0, 10, lambda i, s: s * x, x, checkpoints=2)

    for _ in range(3):
        ad.grad(f)(1.5)
    gc.collect()
    assert all(r() is None for r in refs)
    out, pb = ad.vjp(f, 1.5)
    tape = pb.tape
    assert pb(1.0) == (ad.grad(f)(1.5),)
    del pb
    gc.collect()
    with pytest.raises(RuntimeError, match="released"):
        tape.eval([(tape.nbindings - 1, 1.0)], [0])
    del tape
    gc.collect()
    assert refs[-1]() is None


# --------------------------------------------------------------------------------------------
# The float sweep with rules: float cotangents stay floats, the first array turns the sweep
# into an object sweep (inside a checkpoint's segment too)


def mixed_program(ckpt):
    @ad.custom_vjp
    def cube(x):
        return x * x * x

    cube.defvjp(lambda x: (cube(x), x), lambda x, g: (3.0 * x * x * g,))
    w = np.array([0.5, -1.5, 2.0])

    def f(x, y):
        a = cube(x) * y                                    # a rule with float cotangents
        b = ckpt(lambda: cube(a + y) - x)()                # floats only inside a checkpoint
        # arrays inside a checkpoint whose output is a float: the sweep turns into an object
        # sweep inside the checkpoint's segment and stays one outside it
        s = ckpt(lambda: np.sum(np.sin(w * a) ** 2)[()] + y)()
        return ad.tanh(s) * b + cube(y) * x
    return f


def test_float_sweep_with_rules_and_arrays_same_bits():
    xs = (0.7, -0.3)
    plain = ad.value_and_grad(mixed_program(lambda f: f), argnums=(0, 1))(*xs)
    got = ad.value_and_grad(mixed_program(ad.checkpoint), argnums=(0, 1))(*xs)
    assert same(plain, got)
    h = 1e-6
    f = mixed_program(lambda f: f)
    fd = (f(xs[0] + h, xs[1]) - f(xs[0] - h, xs[1])) / (2 * h)
    assert abs(fd - plain[1][0]) < 1e-5 * max(1.0, abs(fd))
    assert same(ad.hessian(mixed_program(ad.checkpoint), argnums=(0, 1))(*xs),
                ad.hessian(mixed_program(lambda f: f), argnums=(0, 1))(*xs))


def test_scalar_custom_rules_keep_the_float_sweep():
    # a custom_vjp on floats gives float cotangents: the result is a float sweep's (its
    # gradient of a zero adjoint is an exact 0.0, as without rules)
    @ad.custom_vjp
    def sq(x):
        return x * x

    sq.defvjp(lambda x: (sq(x), x), lambda x, g: (2.0 * x * g,))
    g = ad.grad(lambda x, y: sq(x) + 0.0 * y, argnums=(0, 1))(1.5, 2.0)
    assert g == (3.0, 0.0) and all(type(v) is float for v in g)


@pytest.mark.parametrize("f, dw", [
    (lambda v, w: v[0] * 0.0 + w, 1.0),                         # a zero cotangent into v[0]
    (lambda v, w: (lambda a: a[0] - a[0])(list(v)) + w, 1.0),   # contributions that cancel
    (lambda v, w: w * 2.0, 2.0),                                # v not read at all
    (lambda v, w: ad.checkpoint(lambda: v[1] * 0.0)() + w, 1.0),
], ids=["zero", "cancel", "unread", "checkpointed"])
def test_an_array_input_no_array_cotangent_reaches_gets_zeros(f, dw):
    # the sweep stays over floats (no rule gives an array cotangent): an array input's
    # untouched adjoint is a zero array of its shape, not a float
    v = np.array([0.5, -1.0, 2.0])
    gv, gw = ad.grad(f, argnums=(0, 1))(v, 1.5)
    assert isinstance(gv, np.ndarray) and gv.shape == v.shape and gv.dtype == v.dtype
    assert not gv.any() and gw == dw
    hv = ad.hvp(lambda v: f(v, 1.5), (v,), (np.ones(3),))
    assert isinstance(hv, np.ndarray) and hv.shape == v.shape and not hv.any()
