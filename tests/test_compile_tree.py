"""deltaad.compile's recordings of one array input structure: a tree keyed by guard outcomes
(lookups follow the outcomes, least recently used dropped), and the choice between replaying
and running the uncompiled function by timing both."""

import math
import sys
import threading

import numpy as np
import pytest

import deltaad as d
from deltaad import compile_arrays

compile_module = sys.modules["deltaad.compile"]


def tree_bits(x):
    leaves, tdef = d.tree_flatten(x)
    return repr(tdef), [(type(v).__name__, np.shape(v), np.asarray(v).tobytes()) for v in leaves]


@pytest.fixture(autouse=True)
def always_replay(monkeypatch):
    monkeypatch.setattr(compile_arrays, "CHOOSE", "replay")


@pytest.fixture
def runs(monkeypatch):
    """How many array recordings each call replayed (tried), in order."""
    counts = []
    orig = compile_arrays.ArrayProgram.run

    def run(self, inputs, fail=None):
        counts[-1] += 1
        return orig(self, inputs, fail)

    monkeypatch.setattr(compile_arrays.ArrayProgram, "run", run)

    def call(cg, *args):
        counts.append(0)
        return cg(*args)
    call.counts = counts
    return call


W = np.random.default_rng(3).normal(size=(8, 3))


def piece(x):
    """A piecewise function: which row of W it uses is an integer from the input's values."""
    i = int(np.floor(np.sum(x))) % 8
    return np.sum(np.sin(x) * W[i])


def at(i):
    """A point where piece takes row i (sum(x) in [i, i + 1))."""
    return np.array([0.25, 0.125, i + 0.125])


def the_tree(cg):
    (entries,) = cg._cache.values()
    (tree,) = [e[1] for e in entries]
    assert type(tree) is compile_module._Tree
    return tree


def test_lookup_follows_the_guard_outcome(runs):
    g = d.value_and_grad(piece)
    cg = d.compile(g)
    for i in range(8):  # the root, then one child per outcome of the integer guard
        assert tree_bits(runs(cg, at(i))) == tree_bits(g(at(i)))
    assert cg.recordings_made == 8 and cg.nrecordings == 8
    tree = the_tree(cg)
    assert len(tree.roots) == 1 and len(tree.kids[tree.roots[0]]) == 7
    del runs.counts[:]
    for i in [5, 0, 7, 3, 3, 1, 6, 2, 4, 0]:
        assert tree_bits(runs(cg, at(i) * 1.0)) == tree_bits(g(at(i)))
    # each call: the root fails at the guard, its outcome names the recording (a list of
    # recordings tried in turn would replay up to eight)
    assert max(runs.counts) <= 2
    assert cg.recordings_made == 8


def test_both_sides_of_nested_branches_same_bits(runs):
    def f(x):
        s = np.sum(x)
        if s > 0:
            y = np.exp(x) if np.max(x) > 1.0 else np.sin(x)
        else:
            y = x ** 3 if np.min(x) < -1.0 else np.cos(x)
        return np.sum(y * x)

    pts = [np.array(p) for p in ([0.5, 2.0, 0.1], [0.2, 0.3, 0.1], [-2.0, 0.5, 0.1],
                                 [-0.3, 0.1, -0.2])]
    for g in (f, d.grad(f), d.value_and_grad(f)):
        cg = d.compile(g)
        for k in range(3):
            for p in pts:
                assert tree_bits(runs(cg, p)) == tree_bits(g(p))
            assert cg.recordings_made == 4
        assert cg.nrecordings == 4
        tree = the_tree(cg)
        # one root; the others hang below where they branched off
        assert len(tree.roots) == 1 and len(tree.parent) == 3
    assert max(runs.counts) <= 3  # the depth of the tree, not the number of recordings


def test_least_recently_used_dropped():
    g = d.grad(piece)
    cg = d.compile(g, max_recordings=3)
    for i in (0, 1, 2):
        assert tree_bits(cg(at(i))) == tree_bits(g(at(i)))
    assert cg.recordings_made == 3 and cg.nrecordings == 3
    assert tree_bits(cg(at(1))) == tree_bits(g(at(1)))  # 1 is now more recent than 0
    assert tree_bits(cg(at(0))) == tree_bits(g(at(0)))  # and 0 than 2
    assert cg.recordings_made == 3
    assert tree_bits(cg(at(3))) == tree_bits(g(at(3)))  # a 4th: 2, least recent, dropped
    assert cg.recordings_made == 4 and cg.nrecordings == 3
    for i in (0, 1, 3):
        assert tree_bits(cg(at(i))) == tree_bits(g(at(i)))
    assert cg.recordings_made == 4  # kept: replayed
    assert tree_bits(cg(at(2))) == tree_bits(g(at(2)))
    assert cg.recordings_made == 5  # dropped: recorded again
    # dropping the root made its children roots; every call still finds its recording
    tree = the_tree(cg)
    assert len(tree) == 3 and set(tree.order) == set(tree.roots) | set(tree.parent)
    for _ in range(2):
        for i in (2, 3, 0):
            assert tree_bits(cg(at(i))) == tree_bits(g(at(i)))
    assert cg.recordings_made == 6  # 2, 3 kept; 0 dropped for 2 and recorded again


def test_max_recordings_one_keeps_the_latest():
    g = d.grad(piece)
    cg = d.compile(g, max_recordings=1)
    for i in (0, 1, 1, 0, 0, 2):
        assert tree_bits(cg(at(i))) == tree_bits(g(at(i)))
    assert cg.recordings_made == 4 and cg.nrecordings == 1


def test_threads_on_both_sides_get_the_serial_results():
    g = d.value_and_grad(piece)
    cg = d.compile(g, max_recordings=4)  # fewer than the outcomes: drops while threads run
    xs = [at(k % 6) * (1.0 + 0.01 * k) for k in range(8)]
    want = [tree_bits(g(x)) for x in xs]
    got = [[] for _ in xs]

    def work(k):
        for _ in range(6):
            got[k].append(tree_bits(cg(xs[k])))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [[w] * 6 for w in want]
    assert cg.nrecordings <= 4


# --------------------------------------------------------------------------------------------
# Structures of floats: the same tree, the scalar replayers naming the guard that failed


@pytest.fixture
def float_runs(monkeypatch):
    """How many recordings of floats each call replayed (tried), in order."""
    counts = []
    add = compile_module._Tree.add

    class Counted:
        def __init__(self, prog):
            self.prog = prog

        def run(self, inputs, fail=None):
            counts[-1] += 1
            return self.prog.run(inputs, fail)

    def counted_add(self, rep, attach, most):
        if type(rep.prog) is not Counted:
            rep.prog = Counted(rep.prog)
        return add(self, rep, attach, most)

    monkeypatch.setattr(compile_module._Tree, "add", counted_add)

    def call(cg, *args):
        counts.append(0)
        return cg(*args)
    call.counts = counts
    return call


def float_tree(cg):
    (entries,) = cg._cache.values()
    (tree,) = [e[1] for e in entries]
    return tree


def pieces(x):
    """Four pieces: two nested branches."""
    if x > 0.0:
        return x * x if x > 2.0 else d.sin(x) * 3.0
    return -x * 0.5 if x < -2.0 else x * x * x


def newton_sqrt(a):
    """A ``while`` loop whose trip count depends on the value."""
    x = a if a > 1.0 else 1.0
    while abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


TABLE = [1.0, -2.0, 0.5, 4.0, 3.0, -1.0]


def floor_index(x):
    return TABLE[math.floor(x) % 6] * x * x


@pytest.mark.parametrize("transform", ["plain", "grad", "value_and_grad", "jvp"])
def test_float_tree_piecewise_both_sides_of_each_branch(float_runs, transform):
    f = {"plain": pieces, "grad": d.grad(pieces), "value_and_grad": d.value_and_grad(pieces),
         "jvp": lambda x: d.jvp(pieces, (x,), (1.0,))}[transform]
    cg = d.compile(f)
    pts = [3.0, 1.0, -3.0, -1.0, 2.5, 0.5, -2.5, -0.5, 2.0, -2.0, -1.5]
    for k in range(2):
        for x in pts:
            assert tree_bits(float_runs(cg, x)) == tree_bits(f(x))
        assert cg.recordings_made == 4  # one per piece, recorded once
    tree = float_tree(cg)
    assert len(tree) == 4 and len(tree.roots) == 1 and len(tree.parent) == 3
    # the second round: every call found its recording by following outcomes (two nested
    # branches: at most three replays, the first of them the root)
    assert max(float_runs.counts[len(pts):]) <= 3
    assert float_runs.counts[len(pts)] == 1  # x = 3.0: the root's own piece


def test_float_tree_floor_index_follows_the_integer(float_runs):
    g = d.value_and_grad(floor_index)
    cg = d.compile(g)
    xs = [k + 0.25 for k in range(6)]
    for x in xs:
        assert tree_bits(float_runs(cg, x)) == tree_bits(g(x))
    assert cg.recordings_made == 6
    tree = float_tree(cg)
    assert len(tree.roots) == 1 and len(tree.kids[tree.roots[0]]) == 5  # keyed by the integer
    del float_runs.counts[:]
    for x in [5.5, 0.75, 3.125, 3.5, 1.9, 4.0, 2.0, 0.0]:
        assert tree_bits(float_runs(cg, x)) == tree_bits(g(x))
    # the root fails at the floor guard; its integer names the child: two replays at most
    # (a list tried in turn would replay up to six)
    assert max(float_runs.counts) <= 2 and cg.recordings_made == 6


def test_float_tree_while_loops_of_varying_length(float_runs):
    g = d.value_and_grad(newton_sqrt)
    cg = d.compile(g)
    xs = [2.0, 50.0, 1e6, 0.3, 7.0, 1e12]
    for x in xs:
        assert tree_bits(float_runs(cg, x)) == tree_bits(g(x))
    made = cg.recordings_made
    assert 2 <= made <= len(xs)
    for x in xs + [2.0 * (1 + 2 ** -40), 50.0 * (1 - 2 ** -45)]:  # (the same trip counts)
        assert tree_bits(float_runs(cg, x)) == tree_bits(g(x))
    assert cg.recordings_made == made
    assert max(float_runs.counts[len(xs):]) <= made  # (the tree's depth at most)


def test_float_tree_abs_at_zero(float_runs):
    def f(x):  # the general recording: abs's rule branches on the sign (three ways at 0)
        return d.hessian(lambda y: abs(y) * y)(x)

    cg = d.compile(f)
    pts = [0.5, 0.0, -0.5, -0.0, 2.0, -2.0, 0.0]
    for x in pts:
        assert tree_bits(float_runs(cg, x)) == tree_bits(f(x))
    made = cg.recordings_made
    for x in pts:
        assert tree_bits(float_runs(cg, x)) == tree_bits(f(x))
    assert cg.recordings_made == made and made >= 2
    assert max(float_runs.counts[len(pts):]) <= made


def test_float_tree_least_recently_used_dropped():
    g = d.grad(floor_index)
    cg = d.compile(g, max_recordings=3)
    for i in (0, 1, 2):
        assert tree_bits(cg(i + 0.5)) == tree_bits(g(i + 0.5))
    assert cg.recordings_made == 3 and cg.nrecordings == 3
    assert tree_bits(cg(1.25)) == tree_bits(g(1.25))  # 1 is now more recent than 0
    assert tree_bits(cg(0.25)) == tree_bits(g(0.25))  # and 0 than 2
    assert cg.recordings_made == 3
    assert tree_bits(cg(3.5)) == tree_bits(g(3.5))  # a 4th: 2, least recent, dropped
    assert cg.recordings_made == 4 and cg.nrecordings == 3
    for x in (0.5, 1.5, 3.5):
        assert tree_bits(cg(x)) == tree_bits(g(x))
    assert cg.recordings_made == 4  # kept: replayed
    assert tree_bits(cg(2.5)) == tree_bits(g(2.5))
    assert cg.recordings_made == 5  # dropped: recorded again
    tree = float_tree(cg)
    assert len(tree) == 3 and set(tree.order) == set(tree.roots) | set(tree.parent)
    for _ in range(2):
        for x in (2.5, 3.5, 0.5):
            assert tree_bits(cg(x)) == tree_bits(g(x))
    assert cg.recordings_made == 6  # 2, 3 kept; 0 dropped for 2 and recorded again


def test_float_tree_threads_get_the_serial_results():
    g = d.value_and_grad(pieces)
    cg = d.compile(g, max_recordings=3)  # fewer than the pieces: drops while threads run
    xs = [(-1.0) ** k * (0.7 + 0.45 * k) for k in range(8)]
    want = [tree_bits(g(x)) for x in xs]
    got = [[] for _ in xs]

    def work(k):
        for j in range(12):
            got[k].append(tree_bits(cg(xs[(k + j) % 8])))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [[want[(k + j) % 8] for j in range(12)] for k in range(8)]
    assert cg.nrecordings <= 3


# --------------------------------------------------------------------------------------------
# Replay or the uncompiled call


class FakeClock:
    """``time.perf_counter`` advancing 1.0 per reading, and by ``extra`` whenever the
    function's own Python runs (an uncompiled call, or the recording)."""

    def __init__(self, extra):
        self.t = 0.0
        self.extra = extra

    def perf_counter(self):
        self.t += 1.0
        return self.t


def _counting(clock):
    calls = []

    def f(x):
        calls.append(1)
        clock.t += clock.extra
        return np.sum(np.sin(x) * x)
    return f, calls


@pytest.mark.parametrize("extra, replays", [(5.0, True), (-0.5, False), (0.0, True)])
def test_the_faster_is_chosen(monkeypatch, extra, replays):
    """With ``CHOOSE = "race"``, the first ``RACE_CALLS`` replays and as many uncompiled calls
    are timed (alternating); the faster by least time is kept (replay on a tie)."""
    clock = FakeClock(extra)
    monkeypatch.setattr(compile_arrays, "CHOOSE", "race")
    monkeypatch.setattr(compile_arrays, "RACE_CALLS", 2)
    monkeypatch.setattr(compile_module, "time", clock)
    f, calls = _counting(clock)
    g = d.value_and_grad(f)
    cg = d.compile(g)
    xs = [np.array([0.1 * k, 1.0, -0.5]) for k in range(10)]
    want = []
    for x in xs:
        want.append(tree_bits(g(x)))
    del calls[:]
    got = [tree_bits(cg(x)) for x in xs]
    assert got == want
    tree = the_tree(cg)
    assert tree.mode is replays
    assert len(tree.times[0]) == 2 and len(tree.times[1]) == 2
    # the recording call, two timed uncompiled calls, then every call or none
    assert len(calls) == (1 + 2 if replays else 1 + 2 + (len(xs) - 5))
    assert cg.recordings_made == 1


@pytest.mark.parametrize("choose", ["replay", "uncompiled"])
def test_the_choice_can_be_forced(monkeypatch, choose):
    monkeypatch.setattr(compile_arrays, "CHOOSE", choose)
    f, calls = _counting(FakeClock(0.0))
    cg = d.compile(f)
    xs = [np.array([0.1 * k, 1.0, -0.5]) for k in range(5)]
    for x in xs:
        assert tree_bits(cg(x)) == tree_bits(np.sum(np.sin(x) * x))
    assert len(calls) == (len(xs) if choose == "uncompiled" else 1)  # (recording included)
    assert cg.recordings_made == 1
