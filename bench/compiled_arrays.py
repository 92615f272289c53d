"""``python -m bench.compiled_arrays``: deltaad.compile on numpy programs (array inputs).

For each array program: plain numpy ``f``, the uncompiled ``value_and_grad(f)``, the first
call of ``compile(value_and_grad(f))`` (the recording) and a replayed call (the recorded numpy
steps, elementwise ones by numpy's loops in C; no Python of ``f``), medians of ``--reps`` runs
in this process, the replay and the uncompiled call timed alternately. ``loops``: steps run by
numpy's loops. ``chose``: what ``compile`` itself settled on after timing its first replays
against uncompiled calls (the replay column always replays). Ratios, not absolute times, are
what to compare on a shared machine.
"""

import argparse
import random
import statistics
import time

from .array_programs import NUMPY, mlp, mlp_input, rk4small, rk4small_input, smallops, \
    smallops_input
from .compiled import _median


def _medians_side_by_side(fa, fb, reps):
    """Medians of ``fa`` and ``fb`` timed alternately (load changes hit both alike)."""
    ta, tb = [], []
    for _ in range(reps):
        for fn, ts in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)

CASES = {
    "smallops": (smallops, smallops_input, 100),   # shape (3,), 201 operations
    "rk4small": (rk4small, rk4small_input, 50),    # shape (2,), ~1450 operations
    "mlp": (mlp, mlp_input, 32),                   # 784-32-32-10, batch 256 (mid-size)
}




def measure(names, reps):
    import deltaad as ad
    from deltaad import compile_arrays

    rows = []
    for name in names:
        prog, make, n = CASES[name]
        params = make(n, random.Random(0))

        def f(params, prog=prog, n=n):
            return prog(NUMPY, n, params)

        vg = ad.value_and_grad(f)
        t_np = _median(lambda: f(params), reps)
        firsts = []
        for _ in range(max(1, reps // 4)):
            c = ad.compile(vg)
            t0 = time.perf_counter()
            c(params)
            firsts.append(time.perf_counter() - t0)
        auto = ad.compile(vg)  # compile's own choice (CHOOSE as set: "race" by default)
        for _ in range(2 * compile_arrays.RACE_CALLS + 1):
            auto(params)
        chose = {True: "replay", False: "uncompiled", None: "-"}[_tree(auto).mode]
        saved = compile_arrays.CHOOSE
        compile_arrays.CHOOSE = "replay"
        try:
            c = ad.compile(vg)
            c(params)
        finally:
            compile_arrays.CHOOSE = saved
        assert c.recordings_made == 1, "%s did not record (it fell back)" % name
        t_vg, t_rep = _medians_side_by_side(lambda: vg(params), lambda: c(params), reps)
        prog_ = next(iter(_tree(c).order)).prog
        rows.append((name, n, prog_.nsteps, prog_.nloops, t_np, t_vg,
                     statistics.median(firsts), t_rep, chose))
    return rows


def _tree(c):
    """The recordings of the compiled function's one input structure."""
    (entries,) = c._cache.values()
    return entries[0][1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("programs", nargs="*", default=list(CASES))
    args = ap.parse_args(argv)
    rows = measure(args.programs, args.reps)
    print("%-9s %4s %6s %6s %10s %10s %10s %10s %8s %8s %8s %10s" % (
        "program", "n", "steps", "loops", "numpy", "vg", "first", "replay", "vg/np", "rep/np",
        "rep/vg", "chose"))
    for name, n, steps, loops, t_np, t_vg, t_first, t_rep, chose in rows:
        print("%-9s %4d %6d %6d %8.1fus %8.1fus %8.1fus %8.1fus %8.2f %8.2f %8.2f %10s" % (
            name, n, steps, loops, t_np * 1e6, t_vg * 1e6, t_first * 1e6, t_rep * 1e6,
            t_vg / t_np, t_rep / t_np, t_rep / t_vg, chose))


if __name__ == "__main__":
    main()
