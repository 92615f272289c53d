"""Instruction counts of the compiled core's hot path, for callgrind (stable under load, where
wall-clock timings on a shared machine are not).

``python -m bench.callgrind PROGRAM N`` runs deltaad's reverse mode (the ``deltaad-c``
mode's runner) on ``PROGRAM`` at size ``N`` once to warm every cache (the spare tape, the kept
duals), then once more through ``operator.call``: under
``valgrind --tool=callgrind --toggle-collect=_operator_call`` only that second gradient is
counted (no import, no warm-up, no subtraction of two processes). ``--all`` drives the five
programs of the scalar hot-path comparison at about 2e4 operations each and prints
instructions per operation::

    .venv/bin/python -m bench.callgrind --all

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
# ode 54n+1
SIZES = {"taylor": 5000, "letchain": 10000, "rosenbrock": 2001, "quaternion": 488, "ode": 370}


def _one(name, n):
    from .modes import MODES
    from .programs import PROGRAMS, make_input

    mode = MODES["deltaad-c"]
    mode.prepare()
    program = PROGRAMS[name]
    xs = make_input(program, n, 0)
    run = mode.runner(program, n, None)
    run(xs)  # warm-up
    operator.call(run, xs)  # the one counted


def _count(name, n):
    """Callgrind's instruction count of one gradient of ``name`` at ``n``, in a fresh process."""
    env = dict(os.environ, DELTAAD_BACKEND="c", PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=_operator_call",
               "--callgrind-out-file=" + out, sys.executable, "-m", "bench.callgrind", name, str(n)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode or not m:
            raise RuntimeError("callgrind failed:\n" + p.stderr[-2000:])
        return int(m.group(1))


def main(argv):
    if argv and argv[0] == "--all":
        from .programs import PROGRAMS

        tot_i = tot_ops = 0
        for name, n in SIZES.items():
            ops = PROGRAMS[name].ops(n)
            ins = _count(name, n)
            tot_i += ins
            tot_ops += ops
            print("%-11s n=%-6d ops=%-6d instructions=%-10d per op %.1f"
                  % (name, n, ops, ins, ins / ops), flush=True)
        print("%-11s %-8s ops=%-6d instructions=%-10d per op %.1f"
              % ("all", "", tot_ops, tot_i, tot_i / tot_ops))
        return
    _one(argv[0], int(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
