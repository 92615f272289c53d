"""The backend primitives checkpointing is built on, on the tape itself: ``truncate``,
``region_parents``, node bindings and the ``Sweep`` they run in; and the sweep of linear
bindings with float coefficients (now over floats). Expected values come from the Delta
reference evaluator (``deltaad.delta``) or from plain arithmetic, never from the sweep."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as ad
from deltaad import _backend, delta

from helpers import bits, scaled

B = _backend.B


def random_tape(rng, n_in, n_ops, linear=True):
    """A closed tape with ``n_in`` inputs and ``n_ops`` random bindings (one or two parents,
    and with ``linear`` n-ary float-coefficient bindings)."""
    t = B.Tape(10 ** 6 + rng.randrange(10 ** 6))
    xs = t.inputs([rng.uniform(-1, 1) for _ in range(n_in)])
    ds = list(xs)
    for _ in range(n_ops):
        kind = rng.randrange(4 if linear else 3)
        a, b = rng.choice(ds), rng.choice(ds)
        if kind == 0:
            ds.append(a * b)
        elif kind == 1:
            ds.append(a + 0.5 * b)
        elif kind == 2:
            ds.append(B.sin(a))
        else:
            ps = rng.sample(ds, min(len(ds), 3))
            i = t.push_linear([p.id for p in ps], tuple(rng.uniform(-2, 2) for _ in ps))
            ds.append(B.Dual(0.0, t, i, None))
    t.close()
    return t, xs, ds


def reference_adjoints(tape, seeds, wanted):
    """The Delta term of the tape evaluated by the paper's reference ``eval`` (Fig. 10)."""
    acc = {}
    for i, ct in seeds:
        dm = delta.eval(ct, delta.Var(i), {})
        for k, v in dm.items():
            acc[k] = acc.get(k, 0.0) + v
    # walk bindings newest first with the reference term of each binding
    adj = dict(acc)
    for i in range(tape.nbindings - 1, -1, -1):
        a = adj.get(i)
        parents, rule = tape.binding(i)
        if a is None or not parents:
            continue
        for k, v in delta.eval(a, delta.term(parents, rule), {}).items():
            adj[k] = adj.get(k, 0.0) + v
    return [adj.get(w, 0.0) for w in wanted]


@scaled(0.5)
@given(st.integers(0, 10 ** 6), st.integers(1, 5), st.integers(0, 40))
def test_float_coefficient_linear_bindings_sweep_over_floats(seed, n_in, n_ops):
    rng = random.Random(seed)
    t, xs, ds = random_tape(rng, n_in, n_ops)
    seeds = [(ds[-1].id, 1.0), (rng.choice(ds).id, -0.5)]
    wanted = [x.id for x in xs]
    got = t.eval(seeds, wanted)
    assert all(type(g) is float for g in got)
    ref = reference_adjoints(t, seeds, wanted)
    for g, r in zip(got, ref):
        assert abs(g - r) <= 1e-9 * max(1.0, abs(r))


@scaled(0.5)
@given(st.integers(0, 10 ** 6), st.integers(1, 4), st.integers(0, 40), st.data())
def test_region_parents_and_truncate(seed, n_in, n_ops, data):
    rng = random.Random(seed)
    t, xs, ds = random_tape(rng, n_in, n_ops)
    n = t.nbindings
    m = data.draw(st.integers(0, n))
    expect = set()
    for i in range(m, n):
        for p in t.binding(i)[0]:
            if p < m:
                expect.add(p)
    assert t.region_parents(m) == sorted(expect)
    before = [t.binding(i) for i in range(m)]
    _reopen(t)
    t.truncate(m)
    t.closed = True
    assert t.nbindings == m and t.nbytes == 24 * m
    assert [t.binding(i) for i in range(m)] == before
    with pytest.raises(IndexError):
        t.binding(m)
    assert t.region_parents(m) == []
    # the tape records on after a truncation
    _reopen(t)
    z = t.input(1.0)
    t.closed = True
    assert z.id == m and t.nbindings == m + 1


def test_truncate_and_region_errors():
    t = B.Tape(7)
    a, b = t.inputs([1.0, 2.0])
    c = a * b
    for bad in (-1, 4):
        with pytest.raises(ValueError):
            t.truncate(bad)
        with pytest.raises(ValueError):
            t.region_parents(bad)
    with pytest.raises(TypeError):
        t.truncate(1.5)
    assert t.region_parents(2) == [0, 1]
    t.truncate(3)  # nothing to drop
    assert t.nbindings == 3
    t.close()


class Rerun:
    """A node that re-records ``y = x * x + w`` (x, w captured) and sweeps it."""

    def __init__(self, x, w, out_id, log):
        self.x, self.w, self.out, self.log = x, w, out_id, log

    def run(self, sweep, i):
        ct = sweep.adjoint(self.out)
        self.log.append(("run", i, ct))
        if B.zero_adjoint(ct):
            return
        tape = self.x.trace
        start = tape.nbindings
        tape.closed = False
        y = self.x * self.x + self.w
        tape.closed = True
        assert tape.region_parents(start) == sorted({self.x.id, self.w.id})
        got = sweep.sweep(start, [(y.id, ct)], [])
        assert got == [] and tape.nbindings == start


def node_tape(log):
    t = B.Tape(11)
    x, w = t.inputs([1.5, -0.5])
    v = x * x + w  # what the node stands for, recorded once to know its value
    val = v.value
    t.truncate(2)
    out = t.input(val)
    t.push_node([x.id, w.id], Rerun(x, w, out.id, log))
    z = out * x
    t.close()
    return t, x, w, z


def test_a_node_re_records_and_sweeps_into_the_same_adjoints():
    log = []
    t, x, w, z = node_tape(log)
    # z = (x^2 + w) x: dz/dx = 3x^2 + w, dz/dw = x
    got = t.eval([(z.id, 1.0)], [x.id, w.id])
    assert got == [3 * 1.5 ** 2 - 0.5, 1.5]
    assert log == [("run", 3, 1.5)]
    assert t.nbindings == 5
    got2 = t.eval([(z.id, 2.0)], [x.id, w.id])  # object sweep: a non-float seed
    assert got2 == [2 * (3 * 1.5 ** 2 - 0.5), 3.0]
    assert t.binding(3)[0] == (0, 1)
    log.clear()
    assert t.eval([(x.id, 1.0)], [x.id]) == [1.0]
    assert log == [("run", 3, 0.0)]  # no adjoint reaches it: it returns at once


def test_sweep_object_misuse():
    kept = []

    class Keep:
        def run(self, sweep, i):
            kept.append(sweep)
            with pytest.raises(ValueError, match="starts where"):
                sweep.sweep(0, [], [])
            with pytest.raises(IndexError):
                sweep.adjoint(10 ** 6)

    t = B.Tape(12)
    x = t.input(1.0)
    out = t.input(2.0)
    t.push_node([0], Keep())
    y = out * x
    t.close()
    assert t.eval([(y.id, 1.0)], [0]) == [2.0]
    with pytest.raises(RuntimeError, match="finished"):
        kept[0].adjoint(0)
    with pytest.raises(RuntimeError, match="finished"):
        kept[0].sweep(4, [], [])


def test_a_parent_at_or_after_its_binding_is_reported():
    # a dual of a dropped region, used after the truncation, names a binding at or after its
    # own: the sweep reports it rather than reading outside its adjoints
    t = B.Tape(13)
    x = t.input(1.0)
    a = x * 2.0
    b = a * 3.0
    t.truncate(1)
    c = b * x  # b.id == 2 is past this binding (id 1)
    t.close()
    with pytest.raises(ad.EscapedDualError, match="checkpointed"):
        t.eval([(c.id, 1.0)], [0])
    with pytest.raises(ad.EscapedDualError, match="checkpointed"):
        t.eval([(c.id, B.Dual(1.0, B.ForwardLevel(2), -1, 0.0))], [0])


def test_push_node_checks():
    t = B.Tape(14)
    x = t.input(1.0)
    with pytest.raises(ValueError, match="earlier binding"):
        t.push_node([5], object())
    t.close()
    with pytest.raises(ad.EscapedDualError):
        t.push_node([0], object())


def test_n_ary_primitives_sweep_over_floats():
    f = ad.primitive(lambda a, b, c: a * b + c, lambda a, b, c: b, lambda a, b, c: a,
                     lambda a, b, c: 1.0)

    def g(x, y, z):
        return f(x, y, z) * f(z, x, y)

    got = ad.grad(g, argnums=(0, 1, 2))(0.3, -1.2, 2.5)
    assert all(type(v) is float for v in got)
    x, y, z = 0.3, -1.2, 2.5
    u, v = x * y + z, z * x + y
    for a, b in zip(got, (y * v + u * z, x * v + u, v + u * x)):
        assert abs(a - b) < 1e-12


_pure = pytest.importorskip("deltaad._pure")


def _reopen(t):
    """Open a closed tape again for these low-level tests (the pure twin's flag is a list)."""
    if type(t.closed) is list:
        t.closed.clear()
    else:
        t.closed = False


@scaled(0.5)
@given(st.integers(0, 10 ** 6), st.integers(1, 4), st.integers(1, 30))
def test_both_backends_same_bits_with_nodes_and_linear(seed, n_in, n_ops):
    _core = pytest.importorskip("deltaad._core")
    results = []
    for BK in (_pure, _core):
        global B
        saved, B = B, BK
        try:
            rng = random.Random(seed)
            t, xs, ds = random_tape(rng, n_in, n_ops)
            n = t.nbindings
            m = rng.randrange(n_in, n + 1)
            parents = t.region_parents(m)
            _reopen(t)
            t.truncate(m)
            log = []
            x, w = xs[0], xs[-1]
            out = t.input((x.value * x.value) + w.value)
            t.push_node([x.id, w.id], Rerun(x, w, out.id, log))
            z = out * x + [d for d in ds if d.id < m][-1] * out
            t.close()
            got = t.eval([(z.id, 1.0)], [d.id for d in xs])
            got2 = t.eval([(z.id, 1.0), (out.id, 0.5)], [d.id for d in xs])
            results.append((parents, [bits(g) for g in got + got2], log))
        finally:
            B = saved
    assert results[0] == results[1]


def test_a_node_may_not_drop_what_is_being_swept():
    class Dropper:
        def run(self, sweep, i):
            with pytest.raises(IndexError):
                sweep.adjoint(i + 5)  # no slot there yet
            tape.closed = False
            tape.truncate(1)
            tape.closed = True

    tape = B.Tape(15)
    x = tape.input(1.0)
    y = x * 2.0
    out = tape.input(0.5)
    tape.push_node([0], Dropper())
    z = out * y
    tape.close()
    with pytest.raises(RuntimeError, match="dropped bindings"):
        tape.eval([(z.id, 1.0)], [0])
