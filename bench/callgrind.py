"""Instruction counts of the compiled core's hot path, for callgrind (stable under load, where
wall-clock timings on a shared machine are not).

``python -m bench.callgrind PROGRAM N [--dry]`` runs deltaad's reverse mode (the
``deltaad-c`` mode's runner) on ``PROGRAM`` at size ``N`` once to warm every cache (the
spare tape, the kept duals), then once more unless ``--dry``. Under
``valgrind --tool=callgrind`` the difference of the two runs' totals is one gradient's
instructions; ``--all`` drives the five programs of the scalar hot-path comparison at about
2e4 operations each and prints instructions per operation::

    .venv/bin/python -m bench.callgrind --all

(needs ``valgrind`` on the PATH; each program runs twice under it, ~1 min in all).
"""

import os
import re
import subprocess
import sys
import tempfile

# about 2e4 operations each: taylor 4n, letchain 2n, rosenbrock 10(n-1), quaternion 41n,
# ode 54n+1
SIZES = {"taylor": 5000, "letchain": 10000, "rosenbrock": 2001, "quaternion": 488, "ode": 370}


def _one(name, n, dry):
    from .modes import MODES
    from .programs import PROGRAMS, make_input

    mode = MODES["deltaad-c"]
    mode.prepare()
    program = PROGRAMS[name]
    xs = make_input(program, n, 0)
    run = mode.runner(program, n, None)
    run(xs)  # warm-up
    if not dry:
        run(xs)


def _total(name, n, dry):
    """Callgrind's instruction total of ``_one`` in a fresh process (after a run without
    valgrind, which leaves every module's bytecode cached: compiling a changed source would
    count in the first run only)."""
    env = dict(os.environ, DELTAAD_BACKEND="c")
    subprocess.run([sys.executable, "-m", "bench.callgrind", name, str(n), "--dry"], env=env,
                   check=True, capture_output=True)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
               sys.executable, "-m", "bench.callgrind", name, str(n)] + (["--dry"] if dry else [])
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
            ins = _total(name, n, False) - _total(name, n, True)
            tot_i += ins
            tot_ops += ops
            print("%-11s n=%-6d ops=%-6d instructions=%-10d per op %.1f"
                  % (name, n, ops, ins, ins / ops), flush=True)
        print("%-11s %-8s ops=%-6d instructions=%-10d per op %.1f"
              % ("all", "", tot_ops, tot_i, tot_i / tot_ops))
        return
    _one(argv[0], int(argv[1]), "--dry" in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
