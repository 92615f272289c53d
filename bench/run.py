"""``python -m bench``: run the asymptotic benchmark and write the report.

    python -m bench --quick            # make bench: under 3 minutes
    python -m bench --full             # make bench-full: 3+ decades of operation count
    python -m bench --tiny             # seconds; what the tests run
    python -m bench --quick --programs taylor,ode --modes float,deltaad-c,torch --budget 2

First the references (deltaad's reverse mode, compiled if it imports, checked against finite
differences), then one worker process per mode (``python -m bench.worker``, with
``DELTAAD_BACKEND`` set for the deltaad modes) that, program by program, checks the mode's
gradient against the reference and sweeps the sizes timing the float baseline and the mode
side by side in that process.
Finally: fits (bench/fit.py), ``results.json``, ``report.md`` (opening with the headline
table, also written alone to ``headline.md``), one PNG plot per program (when matplotlib
imports; the report says why when it does not), and the terminal summary, 100 columns wide.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

from . import report
from .modes import MODES, default_modes
from .programs import PROGRAMS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "bench", "results")

PRESETS = {
    # budget: seconds one run of a mode may take at a point before its sweep stops
    "tiny": {"budget": 0.1, "reps": 3, "warmups": 1, "min_time": 0.002, "abort_factor": 2.0},
    "quick": {"budget": 0.15, "reps": 5, "warmups": 1, "min_time": 0.01, "abort_factor": 2.0},
    "full": {"budget": 2.0, "reps": 5, "warmups": 1, "min_time": 0.05, "abort_factor": 2.0},
}


def _csv(text, known, what):
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in known]
    if bad:
        raise SystemExit("unknown %s: %s (known: %s)" % (what, ", ".join(bad), ", ".join(known)))
    return items


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--tiny", dest="preset", action="store_const", const="tiny",
                   help="a few small sizes (seconds; for tests)")
    g.add_argument("--quick", dest="preset", action="store_const", const="quick",
                   help="2 decades of operation count, < 3 min (default)")
    g.add_argument("--full", dest="preset", action="store_const", const="full",
                   help="3+ decades of operation count, < 30 min")
    p.add_argument("--programs", help="comma-separated programs (default: all): %s" % ", ".join(PROGRAMS))
    p.add_argument("--modes", help="comma-separated modes (default: all but hidden ones): %s"
                   % ", ".join(MODES))
    p.add_argument("--out", default=DEFAULT_OUT, help="output directory (default bench/results)")
    p.add_argument("--budget", type=float, help="seconds one run may take before a mode's sweep "
                   "stops (default: tiny 0.1, quick 0.15, full 2)")
    p.add_argument("--reps", type=int, help="timings per point; the median is reported (default 5)")
    p.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--malloc", choices=sorted(MALLOC), default="steady",
                   help="glibc allocator behaviour in every worker (default steady: keep freed "
                        "memory; 'default' leaves glibc's adaptive thresholds alone)")
    p.set_defaults(preset="quick")
    args = p.parse_args(argv)
    args.programs = _csv(args.programs, PROGRAMS, "program") if args.programs else list(PROGRAMS)
    args.modes = _csv(args.modes, MODES, "mode") if args.modes else default_modes()
    if "float" not in args.modes:
        args.modes.insert(0, "float")
    return args


# glibc's malloc, left to itself, hands large freed blocks (numpy temporaries of ~2 MB) back
# to the kernel and maps them again on the next call, and moves its thresholds as it goes: a
# program's time then depends on page faults (~2.5 us each on a small VM, 1400 per GMM
# forward) and on what ran before it in the process. "steady" fixes the thresholds so freed
# memory is reused, for every mode and the float baseline alike; other libcs ignore these.
MALLOC = {
    "steady": {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)},
    "default": {},
}


def _worker_env(backend, malloc="steady"):
    env = dict(os.environ)
    for k in MALLOC["steady"]:
        env.pop(k, None)
    env.update(MALLOC[malloc])
    paths = [ROOT]
    if importlib.util.find_spec("deltaad") is None and os.path.isdir(os.path.join(ROOT, "src", "deltaad")):
        paths.append(os.path.join(ROOT, "src"))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if backend == "auto":
        env.pop("DELTAAD_BACKEND", None)
    elif backend is not None:
        env["DELTAAD_BACKEND"] = backend
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def spawn(spec, backend, timeout, tmpdir, malloc="steady"):
    """Run one batch (a mode on its programs) in a worker process; return
    ``{program: result}`` (partial results kept if the worker is killed or crashes)."""
    name = spec["mode"]
    spec_path = os.path.join(tmpdir, name + ".spec.json")
    out_path = os.path.join(tmpdir, name + ".out.json")
    spec = dict(spec, out=out_path)
    with open(spec_path, "w") as fh:
        json.dump(spec, fh)
    t0 = time.perf_counter()
    killed = False
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.worker", spec_path], cwd=ROOT,
                              env=_worker_env(backend, malloc), timeout=timeout,
                              stderr=subprocess.PIPE, text=True)
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        killed, rc = True, None
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    wall = time.perf_counter() - t0
    batch = {}
    if os.path.exists(out_path):
        with open(out_path) as fh:
            batch = json.load(fh).get("programs", {})
    tail = err.strip().splitlines()[-15:] if err and err.strip() else []
    out = {}
    for pname in spec["programs"]:
        res = batch.get(pname)
        if res is None:
            why = ("worker killed after %.0f s (hard timeout) before it reached %s" % (wall, pname)
                   if killed else "worker exited with code %s before it reached %s" % (rc, pname))
            res = {"program": pname, "mode": name, "status": "error" if not killed else "stopped",
                   "points": [], "reason": why}
        elif res.get("status") == "running":
            if killed:
                res["status"] = "stopped"
                res["reason"] = "worker killed after %.0f s (hard timeout); kept the %d point(s) " \
                                "measured" % (wall, len(res.get("points", [])))
            else:
                res["status"] = "error"
                res["reason"] = "worker ended (code %s) in the middle of this program" % rc
        if tail and res.get("status") == "error":
            res["stderr_tail"] = tail
        out[pname] = res
    if tail and (rc not in (0, None) or any(r.get("status") == "error" for r in out.values())):
        print("   stderr of the %s worker:\n     %s" % (
            name, "\n     ".join(report._fit(tail, 95))), flush=True)
    for res in out.values():
        res["worker_wall"] = wall
    return out


def _timeout(settings, nsizes):
    per_point = settings["budget"] * (settings["reps"] + settings["warmups"] + 5) + 5
    return 60 + 2 * per_point * (nsizes + 1)


def run(args):
    settings = dict(PRESETS[args.preset])
    settings["malloc"] = getattr(args, "malloc", "steady")
    args.malloc = settings["malloc"]
    if args.budget is not None:
        settings["budget"] = args.budget
    if args.reps is not None:
        settings["reps"] = args.reps
    started = time.time()
    load_start = report.machine_info()["loadavg"]
    t0 = time.perf_counter()
    results = {"meta": {}, "programs": {}}
    _say("deltaad benchmark: preset %s, budget %g s per run, median of %d, programs %s, modes %s"
         % (args.preset, settings["budget"], settings["reps"], ", ".join(args.programs),
            ", ".join(args.modes)))
    base = {"preset": args.preset, "seed": args.seed, **settings}
    with tempfile.TemporaryDirectory(prefix="deltaad-bench-") as tmpdir:
        # the references: deltaad's reverse mode (compiled if it imports), checked by
        # finite differences; a compiled core that fails is replaced by the pure backend
        refs = spawn(dict(base, mode="reference", programs=args.programs), "auto",
                     120 + 30 * len(args.programs), tmpdir, args.malloc)
        redo = [p for p, r in refs.items() if r.get("status") == "wrong" and r.get("backend") == "c"]
        if redo:
            _say("the compiled core fails finite differences on %s; trying the pure backend"
                 % ", ".join(redo))
            refs.update(spawn(dict(base, mode="reference", programs=redo), "python", 120, tmpdir,
                              args.malloc))
        for pname in args.programs:
            prog = PROGRAMS[pname]
            results["programs"][pname] = {
                "description": prog.description, "ops": prog.ops_text, "kind": prog.kind,
                "check_n": prog.check_n, "sizes": prog.sizes(args.preset),
                "spec_n": prog.spec_n, "overhead": prog.overhead,
                "small_sizes": prog.small_sizes(args.preset), "reference": refs[pname], "modes": {}}
        for mname in args.modes:
            mode = MODES[mname]
            todo = []
            for pname in args.programs:
                prog, entry = PROGRAMS[pname], results["programs"][pname]
                if not prog.supports(mode):
                    entry["modes"][mname] = {"mode": mname, "status": "unsupported", "points": [],
                                             "reason": "%s does not run %s programs" % (mname, prog.kind)}
                elif entry["reference"].get("status") != "ok":
                    entry["modes"][mname] = {"mode": mname, "status": "unchecked", "points": [],
                                             "reason": "no trustworthy reference: %s"
                                             % entry["reference"].get("reason")}
                else:
                    todo.append(pname)
            if not todo:
                continue
            nsizes = sum(len(PROGRAMS[p].sizes(args.preset))
                         + (len(PROGRAMS[p].small_sizes(args.preset)) if mode.ladder else 0)
                         for p in todo)
            spec = dict(base, mode=mname, programs=todo,
                        references={p: results["programs"][p]["reference"] for p in todo})
            out = spawn(spec, mode.backend, _timeout(settings, nsizes), tmpdir, args.malloc)
            for pname, res in out.items():
                results["programs"][pname]["modes"][mname] = res
    duration = time.perf_counter() - t0
    results["meta"] = report.machine_info()
    results["meta"].update(
        preset=args.preset, settings=settings, seed=args.seed, started=started,
        loadavg_start=load_start,
        duration_s=duration, command="python -m bench " + " ".join(args.argv),
        programs=args.programs, modes=args.modes)
    if not results["meta"]["packages"].get("deltaad"):  # not installed: run from src/
        for entry in results["programs"].values():
            v = (entry["reference"].get("versions") or {}).get("deltaad")
            if v:
                results["meta"]["packages"]["deltaad"] = "%s (%s)" % (
                    v, os.path.dirname(entry["reference"].get("deltaad_file") or "") or "source tree")
                break
    report.analyse(results)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1, default=str)
    plots, plot_note = draw_plots(results, args)
    with open(os.path.join(args.out, "report.md"), "w") as fh:
        fh.write(report.markdown(results, plots, plot_note))
    with open(os.path.join(args.out, "headline.md"), "w") as fh:
        fh.write("\n".join(report.headline_markdown(results)))
    print()
    print(report.terminal(results))
    if plot_note:
        _say("plots: %s" % plot_note)
    _say("wrote %s: report.md, headline.md, results.json%s (%.0f s)" % (
        args.out, ", %d plots" % len(plots) if plots else "", duration))
    return results


def draw_plots(results, args):
    """``({program: png path}, None)``, or ``({}, why there are none)``."""
    if args.no_plots:
        return {}, "not drawn (--no-plots)"
    try:
        return report.plots(results, args.out), None
    except ImportError as exc:
        return {}, ("not drawn: matplotlib is not installed (%s); `make bench` installs it, "
                    "or `pip install matplotlib`" % exc)


def _say(text):
    print("\n".join(report._wrap(text)), flush=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    args.argv = argv
    return run(args)
