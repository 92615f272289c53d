"""Instruction counts of the compiled core's hot path, for callgrind (stable under load, where
wall-clock timings on a shared machine are not).

``python -m bench.callgrind PROGRAM N`` runs deltaad's reverse mode (the ``deltaad-c``
mode's runner) on ``PROGRAM`` at size ``N`` once to warm every cache (the spare tape, the kept
duals), then once more through ``operator.call``: under
``valgrind --tool=callgrind --toggle-collect=_operator_call`` only that second gradient is
counted (no import, no warm-up, no subtraction of two processes). ``--all`` drives the
programs of the scalar hot-path comparison at about 2e4 operations each and prints
instructions per operation, of the gradient and of the same program on plain floats (the
``float`` mode, counted the same way), and their ratio; ``--all MODE [PROGRAMS]`` counts
another mode (``deltaad-c-fwd``: jvp along a random direction) and a comma-separated subset::

    .venv/bin/python -m bench.callgrind --all
    .venv/bin/python -m bench.callgrind --all deltaad-c-fwd sumsq,listsum,elementwise

``--micro`` counts the per-input and per-comparison costs on a list of 2e4 floats:
``grad(lambda l: l[0])`` (make each input's dual, read its gradient back) against a float
loop that only reads each item, and a running maximum by ``if v > mx`` under ``grad`` against
the same on floats; a comparison's cost is the running maximum's less the loop's and, under
``grad``, less the per-input cost.

(needs ``valgrind`` on the PATH; ~1 min of CPU per program). ``PYTHONHASHSEED`` is fixed, so
repeated runs give the same counts to a few instructions per operation.
"""

import operator
import os
import re
import subprocess
import sys
import tempfile

# about 2e4 operations each: taylor 4n, letchain 2n, rosenbrock 10(n-1), quaternion 41n,
# ode 54n+1; jacrev 2n^2 (its float baseline runs the map n times)
SIZES = {"taylor": 5000, "letchain": 10000, "rosenbrock": 2001, "quaternion": 488, "ode": 370,
         "sumsq": 10000, "listsum": 20000, "logsumexp": 6666, "branches": 10000,
         "elementwise": 10000, "jacrev": 100}
MICRO_N = 20000


def _micro(name):
    """The micro-programs of ``--micro``: a function of a list of floats."""
    import deltaad

    def first(xs):
        return xs[0]

    def read_all(xs):
        s = 0.0
        for v in xs:
            s = v
        return s

    def running_max(xs):
        mx = xs[0]
        for v in xs:
            if v > mx:
                mx = v
        return mx
    return {"inputs": deltaad.grad(first), "inputs-float": read_all,
            "comparisons": deltaad.grad(running_max), "comparisons-float": running_max}[name]


def _one(name, n, mode_name="deltaad-c"):
    from .modes import MODES
    from .programs import PROGRAMS, make_input, random_direction

    if mode_name == "micro":
        run = _micro(name)
        xs = [float(k % 97) * 0.01 for k in range(n)]
    else:
        mode = MODES[mode_name]
        mode.prepare()
        program = PROGRAMS[name]
        xs = make_input(program, n, 0)
        run = mode.runner(program, n,
                          random_direction(xs, 0) if mode.kind == "forward" else None)
    run(xs)  # warm-up
    operator.call(run, xs)  # the one counted


def _count(name, n, mode_name="deltaad-c"):
    """Callgrind's instruction count of one run of ``name`` at ``n`` in ``mode_name`` (a bench
    mode, or "micro"), in a fresh process."""
    env = dict(os.environ, DELTAAD_BACKEND="c", PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=_operator_call",
               "--callgrind-out-file=" + out, sys.executable, "-m", "bench.callgrind", name, str(n),
               mode_name]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode or not m:
            raise RuntimeError("callgrind failed:\n" + p.stderr[-2000:])
        return int(m.group(1))


def main(argv):
    if argv and argv[0] == "--all":
        from .programs import PROGRAMS

        mode_name = argv[1] if len(argv) > 1 else "deltaad-c"
        tot_i = tot_f = tot_ops = 0
        for name, n in SIZES.items():
            if len(argv) > 2 and name not in argv[2].split(","):
                continue
            ops = PROGRAMS[name].ops(n)
            ins = _count(name, n, mode_name)
            fl = _count(name, n, "float")
            tot_i += ins
            tot_f += fl
            tot_ops += ops
            print("%-11s n=%-6d ops=%-6d instructions=%-10d per op %6.1f  float per op %6.1f  "
                  "ratio %.2f" % (name, n, ops, ins, ins / ops, fl / ops, ins / fl), flush=True)
        print("%-11s %-8s ops=%-6d instructions=%-10d per op %6.1f  float per op %6.1f  ratio %.2f"
              % ("all", "", tot_ops, tot_i, tot_i / tot_ops, tot_f / tot_ops, tot_i / tot_f))
        return
    if argv and argv[0] == "--micro":
        c = {k: _count(k, MICRO_N, "micro") / MICRO_N
             for k in ("inputs", "inputs-float", "comparisons", "comparisons-float")}
        print("per input:      %6.1f instructions (float loop reading the list %6.1f)"
              % (c["inputs"], c["inputs-float"]))
        # the running maximum less the loop that only reads (its float twin) and, under grad,
        # less the per-input cost: what the comparison itself adds
        print("per comparison: %6.1f instructions (float %6.1f)"
              % (c["comparisons"] - c["inputs"] - c["inputs-float"],
                 c["comparisons-float"] - c["inputs-float"]))
        return
    _one(argv[0], int(argv[1]), argv[2] if len(argv) > 2 else "deltaad-c")


if __name__ == "__main__":
    main(sys.argv[1:])
