"""Bad input to the backends is a clear Python error, never a crash, and both backends agree.

Each case here once crashed the compiled core (an audit's reproductions): ids checked once
and used again, user code running between reading the binding array and sweeping it, casts
of objects that were not what the hot path assumed, Cython's automatic pickling. The core
relies on invariants it cannot afford to re-check per operation (a dual's trace is a Tape or
ForwardLevel; every parent is an earlier binding); these tests hold the entry points that
establish them.
"""

import copy
import math
import pickle

import pytest

from deltaad import _pure

_core = pytest.importorskip("deltaad._core")

BACKENDS = (_pure, _core)
ids = pytest.mark.parametrize("B", BACKENDS, ids=lambda B: B.__name__)


class FlipIndex:
    """An id whose ``__index__`` answers 0 the first time and 10**9 afterwards."""

    def __init__(self):
        self.calls = 0

    def __index__(self):
        self.calls += 1
        return 0 if self.calls == 1 else 10 ** 9


class FlipPair:
    """A seed ``(id, cotangent)`` that unpacks to a valid id once and a wild one afterwards."""

    def __init__(self):
        self.calls = 0

    def __iter__(self):
        self.calls += 1
        return iter((0, 1.0) if self.calls == 1 else (10 ** 9, 1.0))


@ids
def test_ids_are_converted_once(B):
    T = B.Tape(1)
    x = T.input(3.0)
    d = B.Dual(1.0, T, FlipIndex(), None)  # names binding 0 for good
    assert d.id == 0
    y = d * x
    assert T.eval([(y.id, 1.0)], [0]) == [4.0]  # 3.0 from d, 1.0 from x: both are binding 0
    assert T.eval([FlipPair()], [0]) == [1.0]
    assert T.eval([(y.id, 1.0)], [FlipIndex()]) == [4.0]


@ids
def test_wanted_range_ends_are_checked_without_overflow(B):
    T = B.Tape(1)
    y = T.input(1.0) * 2.0
    with pytest.raises(IndexError, match="wanted id"):
        T.eval([(y.id, 1.0)], range(0, 17 * 2 ** 60, 2 ** 60))
    assert T.eval([(y.id, 1.0)], range(0, 2 ** 70, 2 ** 70)) == [2.0]  # one id: step unused
    big = 2 ** 70
    for r in (range(big, big + 2), range(-big, 3 - big), range(2 ** 64, 2 ** 64 + 1),
              range(-1, 1), range(1, 3), range(2, 3), range(0, -2, -1)):  # an end off the tape
        with pytest.raises(IndexError, match="wanted id"):
            T.eval([(y.id, 1.0)], r)
    assert T.eval([(y.id, 1.0)], range(1, -1, -1)) == [1.0, 2.0]


def _stale_buffer(B):
    """A seeds iterator that records on the tape being swept (and makes it grow) before
    yielding: the sweep must read the bindings after it."""
    T = B.Tape(1)
    x = T.input(1.0)
    y = x
    while T.nbindings < 1024:
        y = y * 1.0000001
    ys = y

    def seeds():
        z = x
        for _ in range(3000):
            z = z * 2.0
        junk = [bytes([0x7F]) * 24000 for _ in range(50)]  # reuse a freed block with garbage
        del junk
        yield (ys.id, 1.0)

    return T.eval(seeds(), [0])


def test_eval_reads_the_tape_after_user_code():
    assert _stale_buffer(_pure) == _stale_buffer(_core)
    assert _stale_buffer(_core)[0] == pytest.approx(1.0000001 ** 1023)


@ids
def test_duals_are_immutable_and_only_on_real_traces(B):
    T = B.Tape(1)
    x = T.input(1.0)
    with pytest.raises(TypeError, match="immutable"):
        x.__init__(1.0, T, 0, None)
    with pytest.raises(TypeError, match="Tape or ForwardLevel"):
        B.Dual(1.0, B.Trace(1), 0, None)

    class MyTrace(B.Trace):
        __slots__ = ("s0", "s1", "s2", "s3")

    t = MyTrace(1)
    t.s2 = object()
    with pytest.raises(TypeError, match="Tape or ForwardLevel"):
        B.Dual(1.0, t, 0, None)


def test_core_dual_new_from_python_is_refused():
    """A dual made by ``Dual.__new__`` has no trace; the core's hot path must never see one."""
    with pytest.raises(TypeError, match="without a trace"):
        _core.Dual.__new__(_core.Dual)
    with pytest.raises(TypeError):
        object.__new__(_core.Dual)
    # the module's own construction is unaffected
    T = _core.Tape(1)
    assert (T.input(2.0) * 3.0).value == 6.0


@ids
def test_values_and_tangents_nest_only_outward(B):
    """A value or tangent must be a dual of a LOWER level: same-level chains are refused at
    every entry point (they broke the nesting order and let freeing recurse without bound)."""
    T = B.Tape(5)
    x = T.input(1.0)
    L = B.ForwardLevel(5)
    for make in (lambda: T.input(x), lambda: T.inputs([1.0, x]),
                 lambda: B.Dual(x, T, 0, None), lambda: L.input(x, 1.0),
                 lambda: L.input(1.0, x), lambda: L.inputs([x], [1.0]),
                 lambda: B.Tape(2).input(x)):
        with pytest.raises(ValueError, match="lower level"):
            make()
    inner = B.Tape(9)
    assert inner.input(x).value is x  # a dual of an outer level is a fine value


@ids
def test_lift_and_emit_check_their_arguments(B):
    T = B.Tape(1)
    x, y = T.input(1.0), T.input(2.0)
    with pytest.raises(ValueError, match="coefficient"):
        B.lift([x, y], lambda a, b: a * b, lambda a, b: (1.0,))
    L = B.ForwardLevel(2)
    with pytest.raises(TypeError, match="dual of this forward level"):
        L.emit(1.0, [1.0], [2.0])
    with pytest.raises(TypeError, match="dual of this forward level"):
        L.emit(1.0, [x], [2.0])
    with pytest.raises(ValueError, match="one coefficient per operand"):
        L.emit(1.0, [L.input(1.0, 1.0)], [])


def test_core_has_no_unsafe_helpers():
    assert not hasattr(_core, "_split_py")       # casts without checking: C only
    assert not hasattr(_core, "_tm_is_tracing")  # read once at import, not patchable
    assert not hasattr(_core.Trace, "__setstate_cython__")
    for obj in (_core.Trace(1), _core.Tape(1), _core.ForwardLevel(1)):
        with pytest.raises(TypeError):
            pickle.dumps(obj)


@ids
def test_copy_deepcopy_and_pickle(B):
    """A dual is immutable: copies are itself (so ``deepcopy`` of a structure inside a
    differentiated function keeps the derivative); pickling would drop the trace: an error."""
    T = B.Tape(1)
    x = T.input(1.5)
    assert copy.copy(x) is x and copy.deepcopy([x, {"k": x}])[1]["k"] is x
    y = copy.deepcopy(x) * x
    assert T.eval([(y.id, 1.0)], [x.id]) == [3.0]
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(x)


def test_divmod_matches_floordiv_and_mod():
    res = []
    for B in BACKENDS:
        L = B.ForwardLevel(1)
        x, y = L.input(7.5, 1.0), L.input(-2.0, 0.5)
        out = []
        for q, r in (divmod(x, y), divmod(x, 2.0), divmod(9.0, y)):
            out.append((q, r.value, r.tangent))
        assert out[0][0] == 7.5 // -2.0 and out[0][1] == 7.5 % -2.0
        assert divmod(x, y)[1].tangent == (x % y).tangent
        res.append(out)
    assert res[0] == res[1]
