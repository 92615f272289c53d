"""``fori_loop`` and ``while_loop`` with ``checkpoints``: the plain loop's values and derivatives
to the bit in every mode; the body runs exactly as often as the schedule says (counted, against
the formulas written out here); at most ``c`` saved states; errors leave nothing behind."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import deltaad as ad
from deltaad import schedules as S

from helpers import OPS, bits, programs, scaled

ckpt_module = __import__("deltaad.checkpointing", fromlist=["_observe"])


def same(a, b):
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.tobytes() == b.tobytes()
    if a is None or b is None or isinstance(a, int):
        return a == b
    return bits(a) == bits(b)


def revolve_count(n, c):
    """Body calls of a checkpointed fori_loop of n >= 2 steps: Griewank's least number of
    recomputations r n - C(c + r, c + 1) (r least with C(c + r, c) >= n), plus n recorded."""
    c = min(c, n)
    r = 0
    while math.comb(c + r, c) < n:
        r += 1
    return r * n - math.comb(c + r, c + 1) + n


@pytest.fixture
def observed(monkeypatch):
    """The loops run while the test runs (the module's test hook)."""
    seen = []
    monkeypatch.setattr(ckpt_module, "_observe", seen.append)
    return seen


def rk4_body(p, calls=None):
    a, b, d, g = p
    h = 0.01

    def f(x, y):
        xy = x * y
        return a * x - b * xy, d * xy - g * y

    def body(i, s):
        if calls is not None:
            calls["body"] += 1
        x, y = s
        k1x, k1y = f(x, y)
        k2x, k2y = f(x + 0.5 * h * k1x, y + 0.5 * h * k1y)
        k3x, k3y = f(x + 0.5 * h * k2x, y + 0.5 * h * k2y)
        k4x, k4y = f(x + h * k3x, y + h * k3y)
        return (x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x),
                y + h / 6 * (k1y + 2 * k2y + 2 * k3y + k4y))
    return body


P = (1.1, 0.4, 0.1, 0.4)
S0 = (10.0, 10.0)


def ode_loss(n, c, calls=None):
    def loss(p, s0):
        s = ad.fori_loop(0, n, rk4_body(p, calls), s0, checkpoints=c)
        return s[0] * s[1] + s[0]
    return loss


@pytest.mark.parametrize("n,c", [(2, 1), (3, 2), (10, 1), (37, 3), (100, 4), (200, "auto"),
                                 (500, 30), (64, 64), (50, 1000)])
def test_fori_ode_bits_and_counts(n, c, observed):
    calls = Counter()
    plain = ad.value_and_grad(ode_loss(n, None, calls), argnums=(0, 1))(P, S0)
    assert calls["body"] == n
    calls.clear()
    got = ad.value_and_grad(ode_loss(n, c, calls), argnums=(0, 1))(P, S0)
    assert same(got, plain)
    cc = max(2, (n - 1).bit_length()) if c == "auto" else c
    assert calls["body"] == revolve_count(n, cc)
    loop = observed[-1]
    assert loop.max_alive <= min(cc, n)


@scaled(0.5)
@given(st.integers(0, 120), st.integers(1, 12) | st.just("auto"))
def test_fori_counts_for_any_length(n, c):
    calls = Counter()
    got = ad.grad(ode_loss(n, c, calls), argnums=(0, 1))(P, S0)
    cc = max(2, (max(n, 1) - 1).bit_length()) if c == "auto" else c
    assert calls["body"] == (n if n <= 1 else revolve_count(n, cc))
    assert same(got, ad.grad(ode_loss(n, None), argnums=(0, 1))(P, S0))


def while_loss(n, c, calls=None):
    body = rk4_body(P if False else None, None) if False else None

    def loss(p, s0):
        step = rk4_body(p, calls)
        out = ad.while_loop(lambda st: st[0] < n, lambda st: (st[0] + 1, step(st[0], st[1])),
                            (0, s0), checkpoints=c)
        assert out[0] == n and type(out[0]) is int
        s = out[1]
        return s[0] * s[1] + s[0]
    return loss


def while_count(n, c):
    if c == "auto":
        cap = lambda p: max(2, (max(p, 1) - 1).bit_length())  # noqa: E731
        total = 2 * cap(n)
    else:
        cap = lambda p: (c + 1) // 2  # noqa: E731
        total = c
    pos = sorted(S.online_positions(n, cap))
    adv = 0
    for j, s in enumerate(pos):
        e = pos[j + 1] if j + 1 < len(pos) else n
        L = e - s
        k = min(total - j, L)
        r = 0
        while math.comb(k + r, k) < L:
            r += 1
        adv += r * L - math.comb(k + r, k + 1)
    return n + adv + n, total


@pytest.mark.parametrize("n,c", [(1, 1), (2, 1), (5, 2), (37, 3), (100, 4), (300, 10),
                                 (257, "auto"), (40, 100)])
def test_while_bits_counts_and_bound(n, c, observed):
    calls = Counter()
    plain = ad.value_and_grad(while_loss(n, None, calls), argnums=(0, 1))(P, S0)
    calls.clear()
    got = ad.value_and_grad(while_loss(n, c, calls), argnums=(0, 1))(P, S0)
    assert same(got, plain)
    expect, total = while_count(n, c)
    assert calls["body"] == expect
    if c != "auto":
        assert calls["body"] <= S.online_bound(n, c)
    assert observed[-1].max_alive <= total


def test_while_loop_zero_steps():
    def f(x):
        out = ad.while_loop(lambda s: s > 10.0, lambda s: s * 2.0, x, checkpoints=3)
        assert out is x
        return out * x
    assert ad.grad(f)(1.5) == 3.0


# --------------------------------------------------------------------------------------------
# Random bodies


def body_from(prog, k, F):
    """A contracting step of a state of k floats, reading parameters from the closure: the
    random program sees (state, params) and its outputs nudge the state."""
    def make(params, calls=None):
        def body(i, s):
            if calls is not None:
                calls["body"] += 1
            vals = list(s) + list(params)
            outs = prog.run(F, vals)
            return tuple(0.9 * s[j] + 0.1 * F.tanh(outs[j]) for j in range(k))
        return body
    return make


def loop_cases():
    return st.tuples(st.integers(1, 3), st.integers(0, 2)).flatmap(
        lambda kp: st.tuples(
            st.just(kp[0]),
            programs(min_in=sum(kp), max_in=sum(kp), max_ops=8, min_out=kp[0], max_out=kp[0]),
            st.lists(st.floats(-1.5, 1.5), min_size=sum(kp), max_size=sum(kp)),
            st.integers(0, 40),
            st.integers(1, 6) | st.just("auto")))


def ties(prog, xs):
    """True if the program (one step) is near a data-dependent switch: branches could go
    differently in the modes compared, which is not what this test is about."""
    vals = list(xs)
    for op, i, j in prog.steps:
        a, b = vals[i], vals[j]
        if op in ("branch", "max") and abs(a - b) < 1e-6:
            return True
        try:
            vals.append(OPS[op](FloatMath, a, b))
        except (ValueError, OverflowError, ZeroDivisionError):
            return True
        if not math.isfinite(vals[-1]):
            return True
    return False


from helpers import FloatMath  # noqa: E402


def run_loop(kind, make, k, n, c, params, s0, calls=None):
    body = make(params, calls)
    if kind == "fori":
        s = ad.fori_loop(0, n, body, s0, checkpoints=c)
    else:
        s = ad.while_loop(lambda st: st[0] < n, lambda st: (st[0] + 1, body(st[0], st[1])),
                          (0, s0), checkpoints=c)[1]
    out = s[0]
    for j in range(1, k):
        out = out + (1.0 + j) * s[j]
    return out


@scaled(0.5)
@given(loop_cases(), st.sampled_from(["fori", "while"]))
def test_random_loops_every_mode(case, kind):
    k, prog, xs, n, c = case
    assume(not ties(prog, xs))
    make = body_from(prog, k, ad)
    s0, params = tuple(xs[:k]), tuple(xs[k:])

    def f(ckpt):
        return lambda *v: run_loop(kind, make, k, n, ckpt, v[k:], tuple(v[:k]))

    try:
        plain_vg = ad.value_and_grad(f(None), argnums=tuple(range(len(xs))))(*xs)
    except (ValueError, OverflowError, ZeroDivisionError):
        assume(False)
    assert same(ad.value_and_grad(f(c), argnums=tuple(range(len(xs))))(*xs), plain_vg)
    tans = tuple(0.5 - 0.25 * j for j in range(len(xs)))
    assert same(ad.jvp(f(c), tuple(xs), tans), ad.jvp(f(None), tuple(xs), tans))
    if n <= 15:
        args = tuple(range(len(xs)))
        assert same(ad.hessian(f(c), argnums=args)(*xs), ad.hessian(f(None), argnums=args)(*xs))
        rr = ad.jacrev(ad.grad(f(c), argnums=args), argnums=args)(*xs)
        assert same(rr, ad.jacrev(ad.grad(f(None), argnums=args), argnums=args)(*xs))


# --------------------------------------------------------------------------------------------
# State shapes, what the body may do


def test_pytree_state_with_arrays_and_static_leaves():
    w = np.array([[0.9, 0.1], [-0.2, 0.8]])

    def body(i, st):
        v = np.tanh(w @ st["v"] * st["scale"]) + 0.01 * i
        return {"v": v, "scale": st["scale"] * 1.01, "k": st["k"] + 1, "tag": st["tag"]}

    def loss(x, c):
        st0 = {"v": ad.stack([x, -x]), "scale": x, "k": 0, "tag": "s"}
        out = ad.fori_loop(0, 30, body, st0, checkpoints=c)
        assert out["k"] == 30 and out["tag"] == "s"
        return np.sum(out["v"] ** 2) + out["scale"]

    assert same(ad.value_and_grad(loss)(0.7, 4), ad.value_and_grad(loss)(0.7, None))
    assert same(ad.hessian(loss)(0.7, 4), ad.hessian(loss)(0.7, None))


def test_body_branches_calls_grad_and_checkpoint():
    def body(i, s):
        x, y = s
        if x > y:  # branch on values
            x = x * 0.9
        inner = ad.grad(lambda t: ad.sin(t * y) * t)(x)  # a differentiation inside the body
        z = ad.checkpoint(lambda: ad.tanh(x * y) + inner * 0.01)()
        return (y + 0.1 * z, x - 0.05 * z)

    def loss(a, b, c):
        s = ad.fori_loop(0, 25, body, (a, b), checkpoints=c)
        return s[0] * s[1]

    for c in (1, 3, "auto"):
        assert same(ad.grad(loss, argnums=(0, 1))(0.3, 0.8, c),
                    ad.grad(loss, argnums=(0, 1))(0.3, 0.8, None))


def test_state_that_starts_constant_and_passes_through():
    # a float leaf that is a constant until the body makes it depend on x, and a leaf the
    # body passes through unchanged
    def loss(x, z, c):
        def body(i, s):
            acc, y, keep = s
            return (acc + y * x, y * 0.99, keep)
        out = ad.fori_loop(0, 20, body, (0.0, 1.0, z), checkpoints=c)
        return out[0] * out[2]

    args = (1.3, 0.4)
    assert same(ad.value_and_grad(loss, argnums=(0, 1))(*args, 3),
                ad.value_and_grad(loss, argnums=(0, 1))(*args, None))
    # The documented exception to "the same bits": a variable that the body passes through
    # unchanged *and* that is read elsewhere (here x, also captured) gets the adjoint carried
    # through the loop in one sum instead of interleaved with its other contributions.
    (v1, g1), (v2, g2) = [ad.value_and_grad(loss)(1.3, 1.3, c) for c in (3, None)]
    assert same(v1, v2) and math.isclose(g1, g2, rel_tol=1e-14)


def test_loop_inside_a_checkpoint_and_checkpoint_inside_loops():
    def loss(x, c):
        def seg():
            return ad.fori_loop(0, 12, lambda i, s: ad.sin(s) * x + 0.1, x, checkpoints=c)
        return ad.checkpoint(seg)() * x

    assert same(ad.grad(loss)(0.5, 3), ad.grad(loss)(0.5, None))


def test_forward_mode_and_plain_calls_run_the_plain_loop():
    calls = Counter()
    f = ode_loss(50, 3, calls)
    ad.jvp(lambda s: f(P, s), (S0,), ((1.0, 0.0),))
    assert calls["body"] == 50
    calls.clear()
    f(P, S0)
    assert calls["body"] == 50


def test_reverse_inside_reverse_runs_the_plain_loop():
    calls = Counter()

    def inner(p0):
        return ode_loss(20, 3, calls)((p0, 0.4, 0.1, 0.4), S0)

    got = ad.grad(lambda p0: ad.grad(inner)(p0))(1.1)
    assert calls["body"] == 20
    assert same(got, ad.grad(ad.grad(lambda p0: ode_loss(20, None)((p0, 0.4, 0.1, 0.4), S0)))(1.1))


def test_second_sweep_recomputes_the_states():
    calls = Counter()
    n, c = 60, 4
    out, pb = ad.vjp(ode_loss(n, c, calls), P, S0)
    g1 = pb(1.0)
    first_calls = calls["body"]
    assert first_calls == revolve_count(n, c)
    g2 = pb(1.0)
    assert same(g1, g2)
    # the second sweep runs the whole schedule again but the last step (on the tape) and the
    # advance that led to it: counted from the schedule's compound actions
    pos = {0: 0}
    expect = 0
    first = True
    for act in S.plan(n, c):
        if act[0] == S.ADVANCE:
            expect += act[2] - pos[act[1]]
            pos[act[3]] = act[2]
        elif act[0] == S.TURN:
            if not first:
                expect += act[2] - pos[act[1]] + 1
            first = False
    assert calls["body"] - first_calls == expect
    out, pbj = ad.vjp(lambda p: ode_loss(n, c)(p, S0), P)
    assert same(ad.jacrev(lambda p: ode_loss(n, c)(p, S0))(P), ad.jacrev(lambda p: ode_loss(n, None)(p, S0))(P))


def test_memory_is_a_few_states_not_every_step():
    n = 2000
    out, pb = ad.vjp(ode_loss(n, 5), P, S0)
    out, pbp = ad.vjp(ode_loss(n, None), P, S0)
    assert pb.tape.nbindings < 200  # inputs, the loop's outputs and node, the last step
    assert pbp.tape.nbindings > 50 * n


# --------------------------------------------------------------------------------------------
# Errors


def test_checkpoints_argument_is_checked():
    for bad, exc in [(0, ValueError), (-3, ValueError), ("all", ValueError), (True, TypeError),
                     (2.5, TypeError)]:
        with pytest.raises(exc, match="checkpoints"):
            ad.fori_loop(0, 3, lambda i, s: s, 1.0, checkpoints=bad)
        with pytest.raises(exc, match="checkpoints"):
            ad.while_loop(lambda s: False, lambda s: s, 1.0, checkpoints=bad)
    with pytest.raises(TypeError, match="integers"):
        ad.fori_loop(0.0, 3, lambda i, s: s, 1.0)
    assert ad.fori_loop(np.int64(2), 5, lambda i, s: s + i, 0) == 9
    assert ad.fori_loop(5, 2, lambda i, s: s + i, 7.0, checkpoints=2) == 7.0


def test_a_state_hiding_duals_is_an_error():
    def loss(x):
        return ad.fori_loop(0, 5, lambda i, s: s * x, np.array([x, 2.0 * x]), checkpoints=2)[0]
    with pytest.raises(TypeError, match="object array"):
        ad.grad(loss)(1.0)
    assert ad.open_traces() == []


def test_body_changing_structure_is_an_error():
    def loss(x):
        return ad.fori_loop(0, 10, lambda i, s: (s[0] * x, s[1], s[1]) if i == 3 else s,
                            (x, x), checkpoints=2)[0]
    with pytest.raises(TypeError, match="structure"):
        ad.grad(loss)(1.0)
    assert ad.open_traces() == []


def test_body_depending_on_changing_state_is_detected():
    counter = [0]

    def loss(x):
        def body(i, s):
            counter[0] += 1
            return s * x + 1e-3 * counter[0]
        return ad.fori_loop(0, 20, body, x, checkpoints=3)

    with pytest.raises(ad.CheckpointError, match="step"):
        ad.grad(loss)(0.9)
    assert ad.open_traces() == []


def test_an_exception_during_the_reversal_leaves_nothing_behind():
    fail = [None]

    def make(p):
        step = rk4_body(p)

        def body(i, s):
            if fail[0] is not None and i == fail[0]:
                raise ArithmeticError("step %d" % i)
            return step(i, s)
        return body

    def loss(p, s0):
        s = ad.fori_loop(0, 40, make(p), s0, checkpoints=3)
        return s[0] + s[1]

    out, pb = ad.vjp(loss, P, S0)
    n = pb.tape.nbindings
    g = pb(1.0)
    for step in (0, 5, 38):
        fail[0] = step
        for _ in range(2):
            with pytest.raises(ArithmeticError):
                pb(1.0)
            assert ad.open_traces() == [] and pb.tape.nbindings == n and pb.tape.closed
    fail[0] = None
    assert same(pb(1.0), g)
