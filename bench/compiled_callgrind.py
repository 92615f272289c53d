"""Instruction counts of a replayed ``compile(value_and_grad(f))`` call, for callgrind (stable
under load, where wall-clock timings on a shared machine are not).

``python -m bench.compiled_callgrind`` counts, for each scalar program at about 2e4
operations, one replayed call (after the recording call and one warm replay), in a fresh
process under ``valgrind --tool=callgrind --toggle-collect=_operator_call``, and prints
instructions per recorded operation: the whole call, the forward pass (``Program._run``) and
the sweep (``Program._sweep``, inclusive), and the plain-float ``f`` counted the same way.
``python -m bench.compiled_callgrind --worker PROGRAM N MODE`` is the counted process (MODE:
``replay``, ``compiled-f`` for ``compile(f)``, ``float``).
(needs ``valgrind`` and ``callgrind_annotate`` on the PATH)
"""

import operator
import os
import re
import subprocess
import sys
import tempfile

from .callgrind import SIZES

PROGRAMS = ("taylor", "letchain", "rosenbrock", "quaternion", "ode", "newton")
SIZES = dict(SIZES, newton=500)


def _one(name, n, mode):
    import deltaad as ad

    from .modes import deltaad_ns
    from .programs import FLOAT_NS, PROGRAMS as P, make_input

    p = P[name]
    xs = make_input(p, n, 0)
    if mode == "float":
        def run(xs):
            return p.fn(FLOAT_NS, n, xs)
    else:
        ns = deltaad_ns(ad)
        f = lambda xs: p.fn(ns, n, xs)  # noqa: E731
        run = ad.compile(f if mode == "compiled-f" else ad.value_and_grad(f))
        run(xs)  # the recording
    run(xs)  # warm-up
    operator.call(run, xs)  # the one counted


def _count(name, n, mode):
    """``(whole call, forward, sweep)`` instruction counts of one call in a fresh process."""
    env = dict(os.environ, DELTAAD_BACKEND="c", PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=_operator_call",
               "--callgrind-out-file=" + out, sys.executable, "-m", "bench.compiled_callgrind",
               "--worker", name, str(n), mode]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode or not m:
            raise RuntimeError("callgrind failed:\n" + p.stderr[-2000:])
        total = int(m.group(1))
        if mode == "float":
            return total, 0, 0
        a = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                           capture_output=True, text=True).stdout

        def inclusive(fn):
            for line in a.splitlines():
                if re.search(r"Program_?_%s\b" % fn, line) or line.rstrip().endswith("_" + fn):
                    mm = re.match(r"\s*([\d,]+)", line)
                    if mm:
                        return int(mm.group(1).replace(",", ""))
            return 0
        return total, inclusive("_run"), inclusive("_sweep")


def main(argv):
    if argv[:1] == ["--worker"]:
        _one(argv[1], int(argv[2]), argv[3])
        return
    from .programs import PROGRAMS as P

    names = argv or PROGRAMS
    print("| program | ops | call instr/op | forward | sweep | float f instr/op | call / float |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        n = SIZES[name]
        ops = P[name].ops(n)
        tot, fw, sw = _count(name, n, "replay")
        fl = _count(name, n, "float")[0]
        print("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.3f |"
              % (name, ops, tot / ops, fw / ops, sw / ops, fl / ops, tot / fl), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
