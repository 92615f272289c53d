"""``python -m bench.compiled_counts``: deltaad.compile's costs as instruction counts.

Wall clock on a shared machine is noise; ``valgrind --tool=callgrind`` counts the CPU
instructions a run executes, which load does not change. Each figure is one worker run under
callgrind that collects only inside ``operator.call`` (``--toggle-collect=_operator_call``),
through which the worker makes its K measured calls after its setup, divided by K: per-call costs of the plain-float ``f``, the uncompiled ``value_and_grad``, the first
(recording) call of ``compile(value_and_grad(f))`` and a replayed call. Ratios of these are
what the issue's targets speak of (replay / float, first call / grad).

    python -m bench.compiled_counts --programs taylor,ode --ops 2000
"""

import argparse
import operator
import os
import re
import subprocess
import sys
import tempfile

from .compiled import _size
from .modes import deltaad_ns
from .programs import FLOAT_NS, PROGRAMS, make_input

WHATS = ("float", "grad", "first", "replay")


def worker(program, n, what, calls):
    import deltaad as ad

    p = PROGRAMS[program]
    ns = deltaad_ns(ad)
    xs = make_input(p, n, 0)

    def f(xs, fn=p.fn, n=n):
        return fn(ns, n, xs)

    vg = ad.value_and_grad(f)
    want = vg(xs)  # setup (both runs): imports, caches, one uncompiled call
    c = ad.compile(vg)
    assert c(xs) == want
    if what == "float":
        def run():
            for _ in range(calls):
                p.fn(FLOAT_NS, n, xs)
    elif what == "grad":
        def run():
            for _ in range(calls):
                vg(xs)
    elif what == "first":
        def run():
            for _ in range(calls):
                ad.compile(vg)(xs)
    else:
        def run():
            for _ in range(calls):
                c(xs)
    operator.call(run)  # what callgrind counts (nothing else calls operator.call)


def count(program, n, what, calls, backend):
    """Instructions executed by the worker (callgrind's total)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0", DELTAAD_BACKEND=backend)
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
               "--toggle-collect=_operator_call",
               sys.executable, "-m", "bench.compiled_counts", "--worker", program, str(n),
               what, str(calls)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if r.returncode:
            raise RuntimeError("callgrind worker failed:\n" + r.stderr[-3000:])
        m = re.search(r"Collected : (\d+)", r.stderr)
        if m is None:
            raise RuntimeError("no instruction count in callgrind's output:\n" + r.stderr[-2000:])
        return int(m.group(1))


def per_call(program, n, what, calls, backend):
    return count(program, n, what, calls, backend) / calls


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        program, n, what, calls = sys.argv[2:6]
        worker(program, int(n), what, int(calls))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", default="taylor,letchain,rosenbrock,quaternion,ode,newton")
    ap.add_argument("--ops", type=int, default=2000, help="operations per program (about)")
    ap.add_argument("--calls", type=int, default=3, help="measured calls per figure")
    ap.add_argument("--backend", default="c")
    ap.add_argument("--what", default=",".join(WHATS))
    args = ap.parse_args(argv)
    whats = args.what.split(",")
    print("callgrind instruction counts per call, DELTAAD_BACKEND=%s, PYTHONHASHSEED=0, "
          "%d calls each" % (args.backend, args.calls))
    print("| program | ops | " + " | ".join(whats) + " | replay / float | first / grad |")
    print("| --- | ---: | " + " | ".join("---:" for _ in whats) + " | ---: | ---: |")
    for name in args.programs.split(","):
        p = PROGRAMS[name]
        n = _size(p, args.ops)
        got = {w: per_call(name, n, w, args.calls, args.backend) for w in whats}
        ratio = lambda a, b: ("%.3f" % (got[a] / got[b])) if a in got and b in got else "-"  # noqa: E731
        print("| %s | %d | %s | %s | %s |" % (
            name, p.ops(n), " | ".join("%.0f" % got[w] for w in whats),
            ratio("replay", "float"), ratio("first", "grad")), flush=True)


if __name__ == "__main__":
    main()
