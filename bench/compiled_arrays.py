"""``python -m bench.compiled_arrays``: deltaad.compile on numpy programs (array inputs).

For each array program: plain numpy ``f``, the uncompiled ``value_and_grad(f)``, the first
call of ``compile(value_and_grad(f))`` (the recording) and a replayed call (numpy called step
by step, no Python of ``f``), medians of ``--reps`` runs in this process. Ratios, not absolute
times, are what to compare on a shared machine.
"""

import argparse
import random
import statistics
import time

from .array_programs import NUMPY, mlp, mlp_input, rk4small, rk4small_input, smallops, \
    smallops_input
from .compiled import _median

CASES = {
    "smallops": (smallops, smallops_input, 100),   # shape (3,), 201 operations
    "rk4small": (rk4small, rk4small_input, 50),    # shape (2,), ~1450 operations
    "mlp": (mlp, mlp_input, 32),                   # 784-32-32-10, batch 256 (mid-size)
}




def measure(names, reps):
    import deltaad as ad

    rows = []
    for name in names:
        prog, make, n = CASES[name]
        params = make(n, random.Random(0))

        def f(params, prog=prog, n=n):
            return prog(NUMPY, n, params)

        vg = ad.value_and_grad(f)
        t_np = _median(lambda: f(params), reps)
        t_vg = _median(lambda: vg(params), reps)
        firsts = []
        for _ in range(max(1, reps // 4)):
            c = ad.compile(vg)
            t0 = time.perf_counter()
            c(params)
            firsts.append(time.perf_counter() - t0)
        c = ad.compile(vg)
        c(params)
        assert c.recordings_made == 1, "%s did not record (it fell back)" % name
        t_rep = _median(lambda: c(params), reps)
        prog_ = next(iter(c._cache.values()))[0][1][0].prog
        rows.append((name, n, prog_.nsteps, t_np, t_vg, statistics.median(firsts), t_rep))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("programs", nargs="*", default=list(CASES))
    args = ap.parse_args(argv)
    rows = measure(args.programs, args.reps)
    print("%-9s %4s %6s %10s %10s %10s %10s %8s %8s %8s" % (
        "program", "n", "steps", "numpy", "vg", "first", "replay", "vg/np", "rep/np",
        "rep/vg"))
    for name, n, steps, t_np, t_vg, t_first, t_rep in rows:
        print("%-9s %4d %6d %8.1fus %8.1fus %8.1fus %8.1fus %8.2f %8.2f %8.2f" % (
            name, n, steps, t_np * 1e6, t_vg * 1e6, t_first * 1e6, t_rep * 1e6, t_vg / t_np,
            t_rep / t_np, t_rep / t_vg))


if __name__ == "__main__":
    main()
