"""``python -m bench.checkpointing``: memory and time of checkpointed loops, up to 10⁷ steps.

The program is ``odeloop`` (RK4 of Lotka–Volterra written as ``fori_loop``, the parameters
captured by the body), its gradient with respect to the 4 parameters and the initial state.
Each point (mode, n) runs in a fresh process (``--point``), so its resident-set peak is its
own: the peak RSS above what the process held after a warm-up on a small size (``ru_maxrss``),
the peak traced by ``tracemalloc`` in a separate run (skipped above ``--traced-max`` steps:
tracing slows a 10⁷-step run several times), and time ÷ float: the float program and the
gradient timed alternately at the same n, the median of the pairwise ratios (7 pairs when a
gradient takes under 0.5 s, 3 under 5 s, else 1). Modes: ``plain`` (``checkpoints=None``: every step's operations on the tape) and
``c=10``, ``c=30``, ``c=auto`` (``fori_loop(..., checkpoints=c)``).

    python -m bench.checkpointing --quick     # n = 10^3 .. 10^5, about 4 minutes
    python -m bench.checkpointing --full      # n = 10^3 .. 10^7 (plain up to 10^6), ~20 min

Writes ``checkpointing.md``, ``checkpointing.json`` and (with matplotlib)
``checkpointing.png`` to ``--out`` (default ``bench/results``). Verdicts: the traced and RSS
peaks of the checkpointed modes are flat in n (log-log slope below 0.1 over the sizes above
10⁴), the process running 10⁷ steps peaks below 1 GiB of RSS, and time ÷ float is within (recomputations ÷ n + 1) ×
the plain gradient's time ÷ float + 10% (plain at the same n, or its largest n above that).
"""

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = {"plain": None, "c=10": 10, "c=30": 30, "c=auto": "auto"}
PRESETS = {
    "quick": {"sizes": [1000, 10000, 100000], "plain_max": 100000, "traced_max": 100000,
              "c10_max": 100000},
    "full": {"sizes": [1000, 10000, 100000, 1000000, 10000000], "plain_max": 1000000,
             "traced_max": 1000000, "c10_max": 1000000},
}
GIB = 1 << 30


def recomputations(n, c):
    """Griewank's r n - C(c + r, c + 1), r the least with C(c + r, c) >= n."""
    if n <= 1:
        return 0
    c = min(c, n)
    r = 0
    while math.comb(c + r, c) < n:
        r += 1
    return r * n - math.comb(c + r, c + 1)


def snapshots(n, spec):
    return max(2, (max(n, 1) - 1).bit_length()) if spec == "auto" else spec


def _rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux


def point(mode, n, traced):
    """One measurement, in this (fresh) process; returns a dict."""
    import tracemalloc

    sys.path.insert(0, ROOT)
    import deltaad
    from bench.modes import deltaad_ns
    from bench.programs import FLOAT_NS, odeloop

    spec = MODES[mode]
    ns = deltaad_ns(deltaad, spec)
    xs = [1.1, 0.4, 0.1, 0.4, 10.0, 10.0]
    grad = deltaad.grad(lambda v: odeloop(ns, n, v))
    # warm up on a small size (a run at this size would set the RSS high-water mark)
    deltaad.grad(lambda v: odeloop(ns, 50, v))(xs)
    odeloop(FLOAT_NS, 50, xs)
    if hasattr(deltaad._B, "release_memory"):
        deltaad._B.release_memory()
    base = _rss_kb()
    t0 = time.perf_counter()
    g = grad(xs)
    t_grad = time.perf_counter() - t0
    rss_peak = (_rss_kb() - base) * 1024
    # time: the float program and the gradient alternately, median of the pairwise ratios
    # (repeated while a pair is short: one run of a big size is long enough to be steady)
    ratios, grads, floats = [], [t_grad], []
    reps = 1 if t_grad > 5.0 else (3 if t_grad > 0.5 else 7)
    for k in range(reps):
        t0 = time.perf_counter()
        value = odeloop(FLOAT_NS, n, xs)
        t_float = time.perf_counter() - t0
        if k:
            t0 = time.perf_counter()
            grad(xs)
            grads.append(time.perf_counter() - t0)
        floats.append(t_float)
        ratios.append(grads[-1] / t_float)
    ratios.sort()
    out = {"mode": mode, "n": n, "backend": deltaad.backend, "time": sorted(grads)[len(grads) // 2],
           "float_time": sorted(floats)[len(floats) // 2], "ratio": ratios[len(ratios) // 2],
           "reps": reps, "rss_peak": rss_peak, "rss_base": base * 1024,
           "rss_process": _rss_kb() * 1024, "value": value,
           "grad": list(g)}
    if traced:
        tracemalloc.start()
        grad(xs)
        out["traced_peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    if spec is not None:
        c = snapshots(n, spec)
        out["c"] = c
        out["recomputations"] = recomputations(n, c)
    return out


def run_point(mode, n, traced, timeout):
    env = dict(os.environ, DELTAAD_BACKEND="c", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "bench.checkpointing", "--point", mode, str(n)]
    if traced:
        cmd.append("--traced")
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        return {"mode": mode, "n": n, "error": res.stderr.strip().splitlines()[-3:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def loglog_slope(pts):
    pts = [(math.log(a), math.log(b)) for a, b in pts if a > 0 and b > 0]
    if len(pts) < 2:
        return None
    mx = sum(a for a, _ in pts) / len(pts)
    my = sum(b for _, b in pts) / len(pts)
    sxx = sum((a - mx) ** 2 for a, _ in pts)
    return sum((a - mx) * (b - my) for a, b in pts) / sxx if sxx else None


def analyse(points):
    by = {}
    for p in points:
        by.setdefault(p["mode"], {})[p["n"]] = p
    plain = by.get("plain", {})
    verdicts = []
    for mode, pts in by.items():
        if mode == "plain":
            continue
        for n, p in sorted(pts.items()):
            if "error" in p:
                continue
            ref = plain.get(n) or (plain[max(plain)] if plain else None)
            if ref and "error" not in ref:
                bound = (p["recomputations"] / n + 1) * ref["ratio"] * 1.10
                p["bound"] = bound
                p["bound_from"] = ref["n"]
                p["time_ok"] = p["ratio"] <= bound
        big = [(n, p) for n, p in sorted(pts.items()) if n >= 10000 and "error" not in p]
        verdicts.append({
            "mode": mode,
            "rss_slope": loglog_slope([(n, max(p["rss_peak"], 1)) for n, p in big]),
            "traced_slope": loglog_slope([(n, p["traced_peak"]) for n, p in big
                                          if "traced_peak" in p]),
            "max_rss": max((p["rss_process"] for _, p in big), default=None),
            "time_ok": all(p.get("time_ok", True) for p in pts.values() if "error" not in p)})
    pl = [(n, p) for n, p in sorted(plain.items()) if "error" not in p]
    verdicts.append({"mode": "plain", "rss_slope": loglog_slope([(n, p["rss_peak"]) for n, p in pl
                                                                 if n >= 10000]),
                     "traced_slope": loglog_slope([(n, p["traced_peak"]) for n, p in pl
                                                   if "traced_peak" in p and n >= 10000]),
                     "max_rss": max((p["rss_process"] for _, p in pl), default=None), "time_ok": None})
    return by, verdicts


def fmt_bytes(b):
    if b is None:
        return "–"
    for unit, k in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return "%.1f %s" % (b / k, unit)
    return "%d B" % b


def markdown(by, verdicts, meta):
    lines = ["# Checkpointed loops: memory and time", "",
             "`%s`, %s, %.0f s, deltaad backend c. Program `odeloop`: RK4 of Lotka–Volterra as "
             "`fori_loop`, the body capturing the parameters; gradient w.r.t. the parameters and "
             "the initial state. Each point in a fresh process. RSS: peak resident set above "
             "the process's after a warm-up; traced: `tracemalloc` peak of a second run; "
             "×float: one gradient ÷ one float run at the same n. Bound: (recomputations ÷ n + "
             "1) × plain ×float × 1.1 (plain at the same n, else its largest)." % (
                 meta["command"], meta["date"], meta["duration"]), "",
             "| mode | n | c | recomp ÷ n | time | ×float | bound | time ok | RSS peak above warm-up "
             "| process peak RSS | traced peak |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for mode in MODES:
        for n, p in sorted(by.get(mode, {}).items()):
            if "error" in p:
                lines.append("| %s | %d | | | error: %s | | | | | | |" % (mode, n, " ".join(p["error"])))
                continue
            lines.append("| %s | %d | %s | %s | %.2f s | %.2f | %s | %s | %s | %s | %s |" % (
                mode, n, p.get("c", "–"),
                "%.2f" % (p["recomputations"] / n) if "recomputations" in p else "–",
                p["time"], p["ratio"], "%.2f" % p["bound"] if "bound" in p else "–",
                {True: "ok", False: "OVER"}.get(p.get("time_ok"), "–"),
                fmt_bytes(p["rss_peak"]), fmt_bytes(p.get("rss_process")),
                fmt_bytes(p.get("traced_peak"))))
    lines += ["", "| mode | RSS slope (n ≥ 10⁴) | traced slope (n ≥ 10⁴) | largest process peak RSS "
              "| verdict |",
              "| --- | --- | --- | --- | --- |"]
    for v in verdicts:
        if v["mode"] == "plain":
            verdict = "grows (reference)"
        else:
            flat = all(s is None or s < 0.1 for s in (v["rss_slope"], v["traced_slope"]))
            under = v["max_rss"] is None or v["max_rss"] < GIB
            verdict = ", ".join([("flat" if flat else "NOT FLAT"), ("< 1 GiB" if under else "≥ 1 GiB"),
                                 ("time within bound" if v["time_ok"] else "time OVER bound")])
        lines.append("| %s | %s | %s | %s | %s |" % (
            v["mode"], "–" if v["rss_slope"] is None else "%.2f" % v["rss_slope"],
            "–" if v["traced_slope"] is None else "%.2f" % v["traced_slope"],
            fmt_bytes(v["max_rss"]), verdict))
    return "\n".join(lines) + "\n"


def plot(by, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return None
    fig, (ax_m, ax_t) = plt.subplots(1, 2, figsize=(12, 4.8))
    for mode in MODES:
        pts = [(n, p) for n, p in sorted(by.get(mode, {}).items()) if "error" not in p]
        if not pts:
            continue
        ax_m.plot([n for n, _ in pts], [p["rss_process"] for _, p in pts], "o-",
                  label="%s process RSS" % mode)
        tr = [(n, p["traced_peak"]) for n, p in pts if "traced_peak" in p]
        if tr:
            ax_m.plot([n for n, _ in tr], [b for _, b in tr], "x--", label="%s traced" % mode)
        ax_t.plot([n for n, _ in pts], [p["ratio"] for _, p in pts], "o-", label=mode)
    ax_m.axhline(GIB, color="grey", lw=0.8, ls=":")
    ax_m.set(xscale="log", yscale="log", xlabel="steps n", ylabel="peak memory (bytes)",
             title="memory of one gradient (odeloop)")
    ax_t.set(xscale="log", xlabel="steps n", ylabel="time ÷ float", title="time ÷ plain float")
    for ax in (ax_m, ax_t):
        ax.legend(fontsize=8)
        ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.checkpointing", description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="preset", action="store_const", const="quick")
    g.add_argument("--full", dest="preset", action="store_const", const="full")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--traced-max", type=int, help="largest n measured under tracemalloc")
    p.add_argument("--point", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    p.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(preset="quick")
    args = p.parse_args(argv)
    if args.point:
        print(json.dumps(point(args.point[0], int(args.point[1]), args.traced)))
        return 0
    cfg = PRESETS[args.preset]
    traced_max = cfg["traced_max"] if args.traced_max is None else args.traced_max
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    t0 = time.perf_counter()
    points = []
    for mode in modes:
        for n in cfg["sizes"]:
            if mode == "plain" and n > cfg["plain_max"] or mode == "c=10" and n > cfg["c10_max"]:
                continue
            res = run_point(mode, n, n <= traced_max, timeout=3 * 3600)
            points.append(res)
            if "error" in res:
                print("%-7s n=%-9d error: %s" % (mode, n, res["error"]), flush=True)
            else:
                print("%-7s n=%-9d %8.2f s  x float %6.2f  RSS %10s  traced %10s" % (
                    mode, n, res["time"], res["ratio"], fmt_bytes(res["rss_peak"]),
                    fmt_bytes(res.get("traced_peak"))), flush=True)
    by, verdicts = analyse(points)
    meta = {"command": "python -m bench.checkpointing " + " ".join(argv or sys.argv[1:]),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "duration": time.perf_counter() - t0}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "checkpointing.json"), "w") as fh:
        json.dump({"meta": meta, "points": points, "verdicts": verdicts}, fh, indent=1)
    md = markdown(by, verdicts, meta)
    png = plot(by, os.path.join(args.out, "checkpointing.png"))
    if png:
        md += "\n![checkpointing](checkpointing.png)\n"
    with open(os.path.join(args.out, "checkpointing.md"), "w") as fh:
        fh.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
