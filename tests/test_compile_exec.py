"""The compiled replayer's execution (``deltaad._replay.Program.run``) against the pure one on
random instruction lists: every exec form of the forward loop (an operand that is the value
just computed, or both), the fused zero checks, guards, and every form of the gradient sweep
(which parent is added into first, adjoints read from the register, bindings skipped for a
zero adjoint, sin's and cos's partials kept from the forward pass), at special operands
(NaN, infinities, signed zeros, subnormals)."""

import ctypes
import math
import random
import struct

import pytest
from hypothesis import given, settings, strategies as st

from deltaad import _replay_pure as P

try:
    from deltaad import _replay as C
except ImportError:  # no compiled replayer: nothing to compare (said by the skip)
    C = None

pytestmark = pytest.mark.skipif(C is None, reason="the compiled replayer is not built")

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308,
           1e-300, 1e300, -1e300, 1.7976931348623157e308, math.inf, -math.inf, math.nan,
           -math.nan, math.pi, 1e22, 710.0]
UNARY = [P.NEG] + [P.FIRST_LIBM + P.LIBM.index(f) for f in
                   (math.sin, math.cos, math.exp, math.sqrt, abs, math.tanh, math.log)]
BINARY = [P.ADD, P.SUB, P.MUL, P.DIV]
GUARDS = [P.G_LT, P.G_LE, P.G_GT, P.G_GE, P.G_EQ, P.G_NE]


def bits(xs):
    """Floats as bit patterns, a NaN as "nan" (each replayer keeps its own backend's NaN)."""
    return None if xs is None else [struct.pack("<d", x) if x == x else "nan" for x in xs]


def random_program(rng, nin, nops, guards):
    """``(code, funcs, diff, outputs)``: ``nin`` inputs, a few constants, then ``nops``
    operations whose operands are most often the slot just before (the register forms)."""
    code = [(P.INPUT, i, 0, 0, 0.0) for i in range(nin)]
    values = list(range(nin))  # slots that hold values (not guards)
    diff = [1] * nin
    # (mostly ordinary constants: a special one in every operation makes most results NaN)
    for c in [rng.choice(SPECIAL), rng.uniform(-2.0, 2.0), rng.uniform(-2.0, 2.0), 0.0]:
        values.append(len(code))
        code.append((P.CONST, 0, 0, 0, c))
        diff.append(0)
    funcs = list(P.LIBM)

    def operand():
        i = len(code) - 1
        if rng.random() < 0.6 and i in values:
            return i
        return rng.choice(values)

    for _ in range(nops):
        r = rng.random()
        if guards and r < 0.08:
            # (not on constants only: the optimiser drops those, as they held when recorded)
            a = operand()
            while code[a][0] == P.CONST:
                a = rng.choice(values)
            b = rng.choice(values[nin:nin + 4]) if rng.random() < 0.5 else operand()
            code.append((rng.choice(GUARDS), a, b, rng.randrange(2), 0.0))
            diff.append(0)
            continue
        if r < 0.3:
            op = rng.choice(UNARY)
            a = operand()
            k = op - P.FIRST_LIBM if op >= P.FIRST_LIBM else 0
            code.append((op, a, 0, k, 0.0))
            diff.append(diff[a])
        else:
            op = rng.choice(BINARY)
            a = operand()
            b = a if rng.random() < 0.15 else operand()
            if rng.random() < 0.5:
                a, b = b, a
            code.append((op, a, b, 0, 0.0))
            diff.append(1 if diff[a] or diff[b] else 0)
        values.append(len(code) - 1)
    return code, funcs, diff, values


@settings(deadline=None, max_examples=300)
@given(seed=st.integers(0, 2 ** 32 - 1), nops=st.integers(1, 40), guards=st.booleans())
def test_random_instruction_lists_same_bits_as_the_pure_replayer(seed, nops, guards):
    rng = random.Random(seed)
    nin = rng.randrange(1, 4)
    code, funcs, diff, values = random_program(rng, nin, nops, guards)
    out = values[-1]
    seed_slot = out if diff[out] else -1
    grad = (bytes(diff), seed_slot, list(range(nin)))
    progs = [(P.Program(code, funcs, nin, [out], grad=grad),
              C.Program(code, funcs, nin, [out], grad=grad)),
             (P.Program(code, funcs, nin, values[-3:]),
              C.Program(code, funcs, nin, values[-3:])),
             (P.Program(code, funcs, nin, values[-3:]),
              C.Program(code, funcs, nin, values[-3:], optimize=False))]
    for _ in range(6):
        xs = [rng.choice(SPECIAL) if rng.random() < 0.25 else rng.uniform(-2.0, 2.0)
              for _ in range(nin)]
        for pure, comp in progs:
            assert bits(comp.run(xs)) == bits(pure.run(xs)), (code, xs)


@pytest.mark.parametrize("where", ["first", "second", "both"])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_fused_zero_checks_and_register_operands(op, where):
    """A guard ``x == 0`` fused into the instruction computing ``x``, whose operands are the
    value just computed: replayed as the pure replayer does, passing or failing alike."""
    o = {"add": P.ADD, "sub": P.SUB, "mul": P.MUL}[op]
    for outcome in (0, 1):
        code = [(P.INPUT, 0, 0, 0, 0.0), (P.INPUT, 1, 0, 0, 0.0), (P.CONST, 0, 0, 0, 0.0),
                (P.NEG, 1, 0, 0, 0.0)]
        a, b = {"first": (3, 0), "second": (0, 3), "both": (3, 3)}[where]
        code.append((o, a, b, 0, 0.0))
        code.append((P.G_EQ, 4, 2, outcome, 0.0))
        code.append((P.MUL, 4, 4, 0, 0.0))
        cp = C.Program(code, [], 2, [6])
        assert any(ins[0] >= 128 for ins in cp.code)  # the check was fused
        pp = P.Program(code, [], 2, [6])
        for xs in ([1.0, 1.0], [1.0, -1.0], [0.0, -0.0], [-0.0, 0.0], [2.0, 3.0],
                   [math.nan, 1.0], [math.inf, math.inf], [5e-324, -5e-324]):
            assert bits(cp.run(xs)) == bits(pp.run(xs)), (code, xs)


def test_python_calls_resume_the_forward_loop():
    """A Python function (and libm's value where Python's math raises) between operations
    that read the value just before: the loop stops, Python computes, the loop resumes."""
    code = [(P.INPUT, 0, 0, 0, 0.0), (P.CALL1, 0, 0, 0, 0.0), (P.MUL, 1, 1, 0, 0.0),
            (P.FIRST_LIBM + P.LIBM.index(math.log), 2, 0, 1, 0.0), (P.ADD, 3, 2, 0, 0.0),
            (P.CALL2, 4, 0, 2, 0.0), (P.SUB, 5, 4, 0, 0.0)]
    funcs = [lambda x: x * 0.5 - 1.0, math.log, math.atan2]
    cp = C.Program(code, funcs, 1, [6], optimize=False)
    pp = P.Program(code, funcs, 1, [6])
    for x in (3.0, 2.0, 0.0, -1.0, math.inf, math.nan, 5e-324):
        assert bits(cp.run([x])) == bits(pp.run([x])), x


def _libm():
    try:
        lib = ctypes.CDLL(None)
        sincos = lib.sincos
        sin, cos = lib.sin, lib.cos
    except (OSError, AttributeError):
        return None
    sincos.restype = None
    sincos.argtypes = [ctypes.c_double, ctypes.POINTER(ctypes.c_double),
                       ctypes.POINTER(ctypes.c_double)]
    for f in (sin, cos):
        f.restype = ctypes.c_double
        f.argtypes = [ctypes.c_double]
    return sincos, sin, cos


def test_libm_sincos_gives_the_bits_of_sin_and_cos():
    """The replayer computes a binding's sin and cos with one ``sincos`` (glibc) and keeps the
    other for the sweep: that must be what ``sin`` and ``cos`` give, bit for bit, here --
    checked over special arguments, arguments near multiples of pi/2 (where reduction is
    hardest), huge and subnormal ones, and random bit patterns."""
    fs = _libm()
    if fs is None:
        pytest.skip("this C library has no sincos (the replayer calls sin and cos there)")
    sincos, sin, cos = fs
    rng = random.Random(20261124)
    xs = list(SPECIAL)
    for k in range(-2000, 2001):
        y = k * (math.pi / 2)
        xs += [y, math.nextafter(y, math.inf), math.nextafter(y, -math.inf)]
    for _ in range(40000):
        xs.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0])
        xs.append(rng.uniform(-10.0, 10.0))
        xs.append(math.ldexp(rng.random(), rng.randrange(-1075, 1025)) * rng.choice((1, -1)))
        xs.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(52)))[0])  # subnormal
    s, c = ctypes.c_double(), ctypes.c_double()
    pack = struct.Struct("<d").pack
    for x in xs:
        sincos(x, ctypes.byref(s), ctypes.byref(c))
        assert pack(s.value) == pack(sin(x)) and pack(c.value) == pack(cos(x)), x
