"""deltaad.compile's guarded rewrites: products by powers of two folded under a range guard,
the recorded program replayed where the guard fails -- the uncompiled call's bits always,
without recording again."""

import struct

import pytest
from hypothesis import given, strategies as st

import deltaad as d
from deltaad import _replay_pure as P

try:
    from deltaad import _replay as C
except ImportError:  # no compiled replayer: its tests are skipped, and say so
    C = None


def bits(x):
    return struct.pack("<d", x) if type(x) is float else x


def tree_bits(x):
    leaves, tdef = d.tree_flatten(x)
    return repr(tdef), [bits(v) for v in leaves]


SNAN = struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf0\x7f")[0]
NEG_NAN = struct.unpack("<d", b"\x05\x00\x00\x00\x00\x00\xf8\xff")[0]
SPECIAL = [0.0, -0.0, 1.0, -0.75, 3.0, 1e308, -1.7e308, 8.98846567431158e307, 4.5e307,
           1e-300, 2.2250738585072014e-308, -2.2250738585072014e-308, 4.450147717014403e-308,
           1e-310, -5e-324, 5e-324, float("inf"), float("-inf"), float("nan"), NEG_NAN, SNAN]
values = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True),
                   st.floats(min_value=-1e-300, max_value=1e-300))
POWERS = [2.0, 0.5, -2.0, -0.5, 4.0, 0.25, 0.125, 8.0, 2.0 ** 600, 2.0 ** -600, 2.0 ** 1023,
          2.0 ** -1022, 1.0, -1.0, 3.0, 0.75]
steps = st.lists(st.tuples(st.sampled_from(["add", "mul", "rmul", "div", "out"]),
                           st.sampled_from(POWERS)), min_size=1, max_size=12)


def chain(prog):
    """A function of one float: the steps in turn (``x + x``, ``x * c``, ``c * x``,
    ``x / c``), returning the values where the steps say."""
    def f(x):
        outs = []
        for op, c in prog:
            if op == "add":
                x = x + x
            elif op == "mul":
                x = x * c
            elif op == "rmul":
                x = c * x
            elif op == "div":
                x = x / c
            else:
                outs.append(x)
        return outs + [x]
    return f


def last(prog):
    f = chain(prog)
    return lambda x: f(x)[-1]


@given(prog=steps, xs=st.lists(values, min_size=1, max_size=6))
def test_chains_replay_the_uncompiled_bits(prog, xs):
    f = chain(prog)
    cf = d.compile(f)
    vg = d.value_and_grad(last(prog))
    cvg = d.compile(vg)
    for x in [1.25] + xs:
        assert tree_bits(cf(x)) == tree_bits(f(x)), (prog, x)
        assert tree_bits(cvg(x)) == tree_bits(vg(x)), (prog, x)
    # no guard in a chain: one recording each, whatever range guard failed on the way
    assert cf.recordings_made == 1 and cvg.recordings_made == 1


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
@given(prog=steps, xs=st.lists(values, min_size=1, max_size=6))
def test_optimised_chains_as_recorded(prog, xs):
    rec = P.Recording()
    try:
        out = chain(prog)(rec.input(1.25))
    finally:
        rec.closed = True
    args = (rec.code, rec.funcs, 1, [r.slot for r in out])
    opt, raw, pure = C.Program(*args), C.Program(*args, optimize=False), P.Program(*args)
    assert opt.n <= raw.n
    for x in xs:
        a, b, c = opt.run([x]), raw.run([x]), pure.run([x])
        assert [bits(v) for v in a] == [bits(v) for v in b] == [bits(v) for v in c], (prog, x)


def letchain(x, n=50):
    for _ in range(n):
        x = (x + x) * 0.5
    return x


@pytest.mark.skipif(C is None, reason="the compiled replayer is not built")
def test_letchain_is_its_input_under_one_range_guard():
    rec = P.Recording()
    try:
        y = letchain(rec.input(0.9))
    finally:
        rec.closed = True
    prog = C.Program(rec.code, rec.funcs, 1, [y.slot])
    assert [op for op, *_ in prog.code] == [P.INPUT, 80]  # the input, one range guard
    assert prog.n == 2 and prog.nrecorded == 2 + 2 * 50
    for x in SPECIAL:  # 2x overflows at 2**1023 and above: the recorded program answers
        assert [bits(v) for v in prog.run([x])] == [bits(letchain(x))]
    assert bits(prog.run([SNAN])[0]) != bits(SNAN)  # quieted, as the products quiet it


def test_letchain_gradient_is_constant_and_replays_the_uncompiled_bits():
    vg = d.value_and_grad(letchain)
    cvg = d.compile(vg)
    for x in SPECIAL + [1e308, 0.9]:
        assert tree_bits(cvg(x)) == tree_bits(vg(x)), x
    assert cvg.recordings_made == 1
    prog = cvg.recordings()[0].prog
    if C is not None and type(prog) is C.Program:  # the recording's, and a forward program
        # 27 B per recorded instruction (24, its exec code, flags and sweep exec code), and
        # the forward program of an input and a range guard (25 B each, and their recorded
        # index)
        assert prog.tape_bytes <= 27 * prog.n + 2 * 29


def test_other_branches_of_a_chain_keep_their_guards():
    def f(x):
        y = (x + x) * 0.5
        return y * 3.0 if y > 1.0 else y / 4.0 * 4.0

    cf = d.compile(f)
    for x in [2.0, 0.5, 1e308, -1e-310, 1.5, 0.25, float("nan"), 3.0]:
        assert bits(cf(x)) == bits(f(x)), x
    assert cf.recordings_made == 2
