"""Checkpointing schedules for reversing a loop: which states to keep, what to recompute.

Pure Python, independent of the rest of deltaad. A schedule is a stream of actions on a loop of
``n`` steps (step ``k`` maps the state at position ``k`` to the state at ``k + 1``):

- ``(ADVANCE, to)``: run the steps from the current position up to position ``to``, without
  recording (``to - position`` calls of the step);
- ``(STORE, slot)``: keep the current state in snapshot ``slot``;
- ``(RESTORE, slot)``: make the state kept in ``slot`` current (and its position);
- ``(FREE, slot)``: the snapshot in ``slot`` is no longer needed;
- ``(TURN,)``: record the step at the current position and sweep it backwards; the adjoint of
  the state after it is known, the adjoint of the state before it is the result. Turns come
  for steps ``n - 1, n - 2, ..., 0`` in that order.

:func:`revolve` is an optimal offline schedule (the step count is known): with ``c`` snapshots
(the initial state's included) it advances exactly ``t(n, c) = r·n − C(c + r, c + 1)`` steps,
``r`` the least integer with ``C(c + r, c) ≥ n`` (Griewank, "Achieving logarithmic growth of
temporal and spatial complexity in reverse automatic differentiation", and Griewank & Walther,
"Algorithm 799: revolve"), the least any schedule with ``c`` snapshots can. It is the recursive
form of their binomial schedule: advance ``m`` steps, keep that state, reverse the remaining
``n − m`` steps with one snapshot fewer, then reverse the first ``m``; every ``m`` in the range
derived below gives the optimum.

:class:`Online` and :func:`online_reversal` serve loops whose step count is known only when
they end (``while_loop``): during the run, states are kept at multiples of a stride that
doubles whenever the snapshots allowed for the run are full (so at most about half the
snapshots are used and they stay evenly spread); afterwards each interval between kept states
is reversed, newest first, by :func:`revolve` with the snapshots not holding an earlier kept
state. :func:`online_bound` states the recomputation this costs.
"""

import functools
import itertools
from deltaad._plainmath import math

ADVANCE, STORE, RESTORE, FREE, TURN = range(5)
NAMES = ("advance", "store", "restore", "free", "turn")


def beta(c, r):
    """``C(c + r, c)``: the most steps ``c`` snapshots reverse with each step advanced at most
    ``r`` times; 0 for ``r < 0``."""
    if r < 0:
        return 0
    return math.comb(c + r, c)


def repetitions(n, c):
    """The least ``r >= 0`` with ``beta(c, r) >= n`` (for ``n >= 1``, ``c >= 1``)."""
    _check(n, c)
    r = 0
    while beta(c, r) < n:
        r += 1
    return r


def optimal_advances(n, c):
    """``t(n, c) = r·n − C(c + r, c + 1)``: the least number of step evaluations without
    recording that reversing ``n`` steps with ``c`` snapshots needs (besides the ``n``
    recorded ones)."""
    _check(n, c)
    r = repetitions(n, c)
    return r * n - beta(c + 1, r - 1)


def _check(n, c):
    if n < 1 or c < 1:
        raise ValueError("schedules: need at least one step and one snapshot (n=%r, c=%r)" % (n, c))


@functools.lru_cache(maxsize=1 << 14)
def split(n, c):
    """Where the optimal schedule keeps its next state when reversing ``n >= 2`` steps with
    ``c >= 2`` snapshots: after ``m`` steps, ``1 <= m < n``.

    With ``r = repetitions(n, c)``: the first part must be reversible with ``r − 1``
    repetitions and ``c`` snapshots, the second with ``r`` and ``c − 1``:
    ``beta(c, r−2) <= m <= beta(c, r−1)`` and ``beta(c−1, r−1) <= n − m <= beta(c−1, r)``.
    Then ``m + t(n−m, c−1) + t(m, c) = t(n, c)`` (Pascal's rule); the smallest such ``m``.
    """
    r = repetitions(n, c)
    m = max(beta(c, r - 2), n - beta(c - 1, r), 1)
    return min(m, n - 1)


def _plan(s, e, slot, c, free, frees=True):
    """Compound actions that reverse steps ``s .. e-1``, the state at ``s`` being in
    ``slot``, with ``c`` snapshots (``slot``'s included) and the spare slot numbers in the
    list ``free`` (see :func:`plan`); without ``frees`` no FREE actions (a slot is then
    simply overwritten when it is used again).

    An explicit stack, not recursion: with many snapshots the recursion is as deep as ``c``.
    """
    stack = [(s, e, slot, c)]
    pop = stack.pop
    push = stack.append
    while stack:
        s, e, slot, c = pop()
        if c == 0:  # the end of a part that used an extra snapshot (in ``slot``)
            free.append(slot)
            if frees:
                yield (FREE, slot)
        elif e - s == 1:
            yield (TURN, slot, s)
        elif c == 1:
            for k in range(e - 1, s - 1, -1):
                yield (TURN, slot, k)
        elif e - s <= c:
            # Enough snapshots (r = 1): the recursion below stores every state, one step
            # apart, then turns back; written out, it is the same sequence without a frame per
            # action (the schedule's cost matters for small steps).
            slots = [slot]
            for k in range(s + 1, e):
                new = free.pop()
                yield (ADVANCE, slots[-1], k, new)
                slots.append(new)
            for k in range(e - 1, s, -1):
                new = slots.pop()
                yield (TURN, new, k)
                free.append(new)
                if frees:
                    yield (FREE, new)
            yield (TURN, slot, s)
        else:
            m = s + split(e - s, c)
            new = free.pop()
            yield (ADVANCE, slot, m, new)
            push((s, m, slot, c))          # last: the first part
            push((0, 0, new, 0))           # then free the extra snapshot
            push((m, e, new, c - 1))       # first: the second part


def plan(n, c, frees=True):
    """:func:`revolve`'s schedule in compound actions, three kinds, about three a step:
    ``(STORE, 0)`` first; ``(ADVANCE, slot, to, new)``: restore ``slot``, advance to ``to``,
    store in ``new``; ``(TURN, slot, k)``: restore ``slot``, advance to ``k``, record and
    reverse step ``k``; ``(FREE, slot)``. :func:`expand` gives the primitive actions."""
    _check(n, c)
    c = min(c, n)
    # chain, not ``yield from`` in a generator: each action would resume two frames
    return itertools.chain(((STORE, 0),), _plan(0, n, 0, c, list(range(c - 1, 0, -1)), frees))


def expand(actions, positions=None):
    """The primitive actions (module docstring) of compound ones (:func:`plan`,
    :func:`online_reversal`); ``positions`` maps the slots filled beforehand to their
    positions (a leading ``(STORE, 0)`` fills slot 0 with position 0)."""
    pos = dict(positions or {})
    for act in actions:
        kind = act[0]
        if kind == ADVANCE:
            yield (RESTORE, act[1])
            yield (ADVANCE, act[2])
            yield (STORE, act[3])
            pos[act[3]] = act[2]
        elif kind == TURN:
            yield (RESTORE, act[1])
            if act[2] > pos[act[1]]:
                yield (ADVANCE, act[2])
            yield (TURN,)
        else:
            if kind == STORE:
                pos[act[1]] = 0
            yield act


def revolve(n, c):
    """The optimal offline schedule for ``n`` steps and ``c`` snapshots (see the module's
    docstring), in primitive actions. Its first action stores the initial state in slot 0;
    slots are ``0 .. min(c, n) - 1``. The forward run is every action before the first TURN
    (which is for step ``n - 1``)."""
    return expand(plan(n, c))


# --------------------------------------------------------------------------------------------
# Online: the step count is not known in advance


class Online:
    """Where to keep states while a loop of unknown length runs.

    ``cap(p)`` is the number of states the run may keep at position ``p`` (nondecreasing in
    ``p``). States are kept at the multiples of ``stride`` (position 0 first); when a new
    multiple arrives and ``cap`` states are kept, the stride doubles and the kept states that
    are not multiples of it are freed. After the run, ``stored`` maps the kept positions (all
    below the final one) to their slots.
    """

    __slots__ = ("cap", "stride", "stored", "_free", "_next")

    def __init__(self, cap):
        self.cap = cap
        self.stride = 1
        self.stored = {0: 0}
        self._free = []
        self._next = 1

    def at(self, p):
        """The state at position ``p >= 1`` is current and a step from it will run: return
        ``(slot or None, freed slots)``, the slot to keep it in (None: not kept)."""
        freed = []
        if p % self.stride:
            return None, freed
        cap = max(1, self.cap(p))
        while len(self.stored) >= cap:
            self.stride *= 2
            for q in [q for q in self.stored if q % self.stride]:
                slot = self.stored.pop(q)
                freed.append(slot)
                self._free.append(slot)
            if p % self.stride:
                return None, freed
        if self._free:
            slot = self._free.pop()
        else:
            slot = self._next
            self._next += 1
        self.stored[p] = slot
        return slot, freed


def online_reversal(n, c, stored, frees=True):
    """Compound actions (as :func:`plan`'s) that reverse a loop of ``n`` steps run under :class:`Online`, whose kept states
    ``stored`` (position -> slot, every position below ``n``) are in place, with ``c`` slots in
    all. The intervals between kept positions are reversed newest first, each by
    :func:`revolve`'s schedule with ``c − j`` snapshots when ``j`` earlier states are still
    kept; each kept state is freed after its interval."""
    pos = sorted(stored)
    if not pos or pos[0] != 0 or pos[-1] >= n or len(pos) > c or max(stored.values()) >= c:
        raise ValueError("online_reversal: kept positions %r do not fit %d steps and %d slots"
                         % (pos, n, c))
    used = set(stored.values())
    spare = [s for s in range(c) if s not in used]
    for j in range(len(pos) - 1, -1, -1):
        s = pos[j]
        e = pos[j + 1] if j + 1 < len(pos) else n
        k = min(c - j, e - s)
        free = spare[:k - 1]
        rest = spare[k - 1:]
        yield from _plan(s, e, stored[s], k, free, frees)
        if frees:
            yield (FREE, stored[s])
        spare = [stored[s]] + free + rest


def online_positions(n, cap):
    """The positions :class:`Online` keeps for a loop of ``n`` steps (position -> slot)."""
    on = Online(cap)
    for p in range(1, n):
        on.at(p)
    return dict(on.stored)


def online_advances(n, c, cap):
    """The step evaluations without recording :func:`online_reversal` makes (``n`` more are
    made during the run, and ``n`` recorded ones during the reversal)."""
    pos = sorted(online_positions(n, cap))
    total = 0
    for j, s in enumerate(pos):
        e = pos[j + 1] if j + 1 < len(pos) else n
        total += optimal_advances(e - s, min(c - j, e - s))
    return total


def online_bound(n, c):
    """An upper bound on all step evaluations of a ``while_loop`` of ``n`` steps with ``c``
    snapshots (run, recomputation and recording): ``(2 + ρ)·n``, where the run keeps at most
    ``h = ⌈c/2⌉`` states, so the kept states are ``s`` apart with ``s`` the least power of two
    with ``⌈n/s⌉ <= h``, each interval is reversed with at least ``c − h + 1`` snapshots, and
    ``ρ = repetitions(s, c − h + 1)``: no interval's step is advanced more than ``ρ`` times."""
    _check(n, c)
    h = (c + 1) // 2
    s = 1
    while -(-n // s) > h:
        s *= 2
    return (2 + repetitions(min(s, n), c - h + 1)) * n
