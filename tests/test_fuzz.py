"""The differential fuzzer (tests/fuzz.py) in the suite: a few hundred random scalar and array
programs, each differentiated every way (value, reverse, forward, hessian, reverse over
reverse, finite differences) on the selected backend, and a sample compared bit for bit
between the compiled core and the pure twin. ``make fuzz N=...`` runs many more and saves
each mismatch as a reproducible case."""

import os

import pytest

import deltaad
import fuzz

N = int(os.environ.get("DELTAAD_FUZZ_PROGRAMS", "300"))
CHUNK = 50


@pytest.mark.parametrize("start", range(0, N, CHUNK))
def test_programs_agree(start):
    found = {s: p for s in range(start, min(start + CHUNK, N)) for p in [fuzz.check(s)] if p}
    assert not found, "mismatches (fuzz.check(seed) repeats one): %r" % found


def test_backends_agree_bit_for_bit():
    pytest.importorskip("deltaad._core")
    seeds = range(100000, 100000 + max(N // 3, 20))  # other programs than the ones above
    assert fuzz.compare_backends(seeds) == {}


def test_programs_are_varied():
    kinds = [fuzz.program(s) for s in range(200)]
    srcs = "".join(src for src, _k, _x in kinds)
    assert {k for _s, k, _x in kinds} == {"scalar", "array"}
    assert "_branch(" in srcs and "for _ in range" in srcs


def test_a_wrong_derivative_is_found():
    """The checks can fail: a rule with a wrong derivative (or a wrong value) is reported."""

    @deltaad.custom_jvp
    def wrong(x):
        return x * x

    wrong.defjvp(lambda p, t: (p[0] * p[0], 3.0 * p[0] * t[0]))  # 3x, not 2x

    @deltaad.custom_vjp
    def shifted(x):
        return x * 2.0

    shifted.defvjp(lambda x: (x * 2.0 + 1e-12, None), lambda r, g: (2.0 * g,))
    src = "def f(x0):\n    v1 = np.sin(x0)\n    return %s(v1)\n"
    for name, fn, what in (("wrong", wrong, "finite differences"), ("shifted", shifted, "value")):
        problems = fuzz.check((src % name, "scalar", [0.7]), {name: fn})
        assert any(what in p for p in problems), problems
