"""The checkpointing schedules, on their own: executed by a small simulator that counts step
evaluations and live snapshots and checks every action is legal. The expected counts come from
a dynamic program over all schedules (not from the module's formula) and from Griewank's closed
form written out here."""

import functools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltaad import schedules as S


def simulate(actions, n, c, stored=None):
    """Run primitive ``actions`` on a loop of ``n`` steps; return (advanced steps, turned steps
    in order, most snapshots alive). ``stored`` (position -> slot) are filled beforehand."""
    snaps = dict((slot, p) for p, slot in (stored or {}).items())
    most = len(snaps)
    pos = None if stored else 0  # the current state's position (None: no current state)
    advanced = 0
    turns = []
    for act in actions:
        kind = act[0]
        if kind == S.STORE:
            assert pos is not None, act
            assert act[1] not in snaps, "store into a slot in use: %r" % (act,)
            snaps[act[1]] = pos
            most = max(most, len(snaps))
        elif kind == S.RESTORE:
            pos = snaps[act[1]]
        elif kind == S.FREE:
            del snaps[act[1]]
        elif kind == S.ADVANCE:
            assert pos is not None and pos < act[1] < n, (pos, act)
            advanced += act[1] - pos
            pos = act[1]
        elif kind == S.TURN:
            assert pos is not None
            expect = n - 1 - len(turns)
            assert pos == expect, "turn at %d, expected step %d" % (pos, expect)
            turns.append(pos)
            pos = None  # the state after a turn is spent: a restore must come next
        else:
            raise AssertionError(act)
    assert max(snaps, default=0) < 10 ** 9
    assert most <= c, "%d snapshots alive, %d allowed" % (most, c)
    return advanced, turns, most


@functools.lru_cache(maxsize=None)
def dp(n, c):
    """The least number of advanced steps of any schedule reversing n steps with c snapshots
    (the initial state's included): try every first snapshot position."""
    if n == 1:
        return 0
    if c == 1:
        return n * (n - 1) // 2
    return min(m + dp(n - m, c - 1) + dp(m, c) for m in range(1, n))


def closed_form(n, c):
    """Griewank's t(n, c) = r n - C(c + r, c + 1), r the least with C(c + r, c) >= n."""
    r = 0
    while math.comb(c + r, c) < n:
        r += 1
    return r * n - math.comb(c + r, c + 1)


def test_closed_form_is_the_optimum():
    for n in range(1, 60):
        for c in range(1, 8):
            assert closed_form(n, c) == dp(n, c), (n, c)
            assert S.optimal_advances(n, c) == dp(n, c), (n, c)


@given(st.integers(1, 400), st.integers(1, 40))
def test_revolve_is_optimal_and_legal(n, c):
    advanced, turns, most = simulate(S.revolve(n, c), n, c)
    assert turns == list(range(n - 1, -1, -1))
    assert advanced == closed_form(n, min(c, n))
    assert most <= min(c, n)


@pytest.mark.parametrize("n,c", [(1, 1), (2, 1), (10, 1), (10, 2), (100, 3), (1000, 10),
                                 (10 ** 4, 30), (12345, 7), (5, 100)])
def test_revolve_counts_at_chosen_sizes(n, c):
    advanced, turns, most = simulate(S.revolve(n, c), n, c)
    assert advanced == closed_form(n, min(c, n))
    assert len(turns) == n


def test_the_run_is_everything_before_the_first_turn():
    # the forward part of revolve: snapshots and advances up to step n - 1, nothing else
    n, c = 1000, 10
    actions = list(S.revolve(n, c))
    first = next(k for k, a in enumerate(actions) if a[0] == S.TURN)
    run = actions[:first]
    assert all(a[0] in (S.STORE, S.ADVANCE, S.RESTORE) for a in run)
    advanced, _, _ = simulate(run, n, c)
    assert advanced == n - 1


@given(st.integers(1, 300), st.integers(1, 20))
def test_plan_without_frees_reuses_slots(n, c):
    # The executor drops FREE actions: a slot is overwritten when used again, and still no
    # more than c distinct slots are ever used.
    slots = set()
    for act in S.plan(n, c, frees=False):
        assert act[0] != S.FREE
        if act[0] == S.ADVANCE:
            slots.add(act[3])
        elif act[0] == S.STORE:
            slots.add(act[1])
    assert len(slots) <= min(c, n)
    with_frees = [a for a in S.plan(n, c) if a[0] != S.FREE]
    assert with_frees == list(S.plan(n, c, frees=False))


def reference_plan(n, c, frees=True):
    """The recursive schedule written plainly (the module writes parts of it out)."""
    c = min(c, n)
    free = list(range(c - 1, 0, -1))
    out = [(S.STORE, 0)]

    def rev(s, e, slot, c):
        if e - s == 1:
            out.append((S.TURN, slot, s))
        elif c == 1:
            out.extend((S.TURN, slot, k) for k in range(e - 1, s - 1, -1))
        else:
            m = s + S.split(e - s, c)
            new = free.pop()
            out.append((S.ADVANCE, slot, m, new))
            rev(m, e, new, c - 1)
            free.append(new)
            if frees:
                out.append((S.FREE, new))
            rev(s, m, slot, c)

    rev(0, n, 0, c)
    return out


@given(st.integers(1, 300), st.integers(1, 30), st.booleans())
def test_plan_is_the_recursive_schedule(n, c, frees):
    assert list(S.plan(n, c, frees)) == reference_plan(n, c, frees)


def test_split_is_in_range():
    for n in range(2, 300):
        for c in range(2, 12):
            m = S.split(n, c)
            assert 1 <= m < n
            assert m + dp(n - m, c - 1) + dp(m, c) == dp(n, c), (n, c, m)


def test_bad_sizes():
    with pytest.raises(ValueError):
        list(S.revolve(0, 3))
    with pytest.raises(ValueError):
        list(S.revolve(3, 0))


# --------------------------------------------------------------------------------------------
# Online


def half(c):
    return lambda p: (c + 1) // 2


def least_stride(n, h):
    s = 1
    while -(-n // s) > h:
        s *= 2
    return s


@given(st.integers(1, 3000), st.integers(1, 40))
def test_online_keeps_evenly_spread_states(n, c):
    h = (c + 1) // 2
    on = S.Online(half(c))
    most = 1
    for p in range(1, n):
        slot, freed = on.at(p)
        most = max(most, len(on.stored))
    assert most <= h
    s = least_stride(n, h)
    assert on.stride == s
    assert sorted(on.stored) == list(range(0, n, s))
    assert len(set(on.stored.values())) == len(on.stored)


@given(st.integers(1, 3000), st.integers(1, 40))
def test_online_reversal_counts_and_bound(n, c):
    stored = S.online_positions(n, half(c))
    actions = S.expand(S.online_reversal(n, c, stored), {slot: p for p, slot in stored.items()})
    advanced, turns, most = simulate(actions, n, c, stored)
    assert turns == list(range(n - 1, -1, -1))
    assert most <= c
    assert advanced == S.online_advances(n, c, half(c))
    # the exact count is the revolve optimum on each interval, with c - j snapshots
    pos = sorted(stored)
    expect = sum(closed_form(e - s, min(c - j, e - s))
                 for j, (s, e) in enumerate(zip(pos, pos[1:] + [n])))
    assert advanced == expect
    # the bound of the while_loop docstring: (2 + rho) n step evaluations in all
    total = n + advanced + n
    assert total <= S.online_bound(n, c)


@pytest.mark.parametrize("n,c", [(10 ** 4, 10), (10 ** 4, 30), (10 ** 5, 20)])
def test_online_bound_is_within_a_small_factor_of_offline(n, c):
    total = 2 * n + S.online_advances(n, c, half(c))
    offline = closed_form(n, c) + n
    assert total <= S.online_bound(n, c)
    assert total <= 2.5 * offline  # the price of not knowing n


def test_online_reversal_without_frees_uses_at_most_c_slots():
    for n in (1, 2, 7, 100, 1000):
        for c in (1, 2, 3, 8):
            stored = S.online_positions(n, half(c))
            slots = set(stored.values())
            for act in S.online_reversal(n, c, stored, frees=False):
                if act[0] == S.ADVANCE:
                    slots.add(act[3])
            assert len(slots) <= c, (n, c, slots)


@given(st.integers(1, 2000), st.integers(1, 60), st.booleans())
def test_the_compiled_plan_is_the_same_schedule(n, c, frees):
    _core = pytest.importorskip("deltaad._core")
    assert list(_core.plan(n, c, frees)) == list(S.plan(n, c, frees))


def test_the_compiled_plan_at_large_sizes():
    _core = pytest.importorskip("deltaad._core")
    for n, c in [(10 ** 5, 3), (123457, 40), (5000, 1)]:
        a = _core.plan(n, c, False)
        b = S.plan(n, c, False)
        for x, y in zip(a, b):
            assert x == y
        assert next(a, None) is None and next(b, None) is None
    with pytest.raises(ValueError):
        _core.plan(0, 3)
