"""The harness's worker: one mode on its programs, in a process of its own.

``python -m bench.worker SPEC.json`` reads a batch (one mode, several programs), runs it and
writes the results as JSON to ``spec["out"]`` (rewritten after every point, so a killed worker
leaves what it measured). Progress lines go to stdout. The same functions run in-process from
the tests.

A job (mode on program):
1. ``prepare`` the mode (unavailable -> reported, nothing else done);
2. check its result at the program's ``check_n`` against the reference (the gradient of
   deltaad's reverse mode; for forward modes the reference gradient dotted with the direction;
   for the float mode the value). A wrong mode is reported "wrong" and never timed;
3. for each size: time the float baseline and the mode in this same process, alternately
   (warm-up, then ``reps`` pairs of timings, each averaging ``number`` calls so it lasts
   ``min_time``; the mode's time is the median of its timings, its ratio to float the median
   of the pairwise ratios), then one separate run under tracemalloc for the peak traced
   memory (and deltaad's tape size);
   the sweep stops after the first point whose median run exceeds the per-point budget
   (an ablation run that goes past ``abort_factor`` budgets is abandoned).

The reference job (mode "reference") computes deltaad's gradient at ``check_n``, checks it
against central finite differences on a few coordinates, and checks the program's declared
operation count against the number of bindings on deltaad's tape.
"""

import gc
import json
import math
import os
import statistics
import sys
import time
import tracemalloc
import traceback

from . import ablations
from .modes import MODES, FLOAT_NS, Unavailable
from .programs import PROGRAMS, count_leaves, make_input, random_direction, unflatten_like

_now = time.perf_counter

RTOL = 1e-6  # relative tolerance of the gradient check against the reference


# --------------------------------------------------------------------------------------------
# measurement


def measure_time(fn, reps=5, warmups=1, min_time=0.01, budget=math.inf):
    """Median wall time of ``fn()`` over ``reps`` timings, after ``warmups`` runs.

    Each timing averages ``number`` back-to-back calls, ``number`` chosen so a timing lasts
    about ``min_time``. If the first warm-up run alone exceeds ``budget`` nothing is repeated:
    that one run is the point's time (``repeated`` is False).
    """
    gc.collect()
    warm = []
    t0 = _now()
    fn()
    warm.append(_now() - t0)
    if warm[0] > budget:
        return {"median": warm[0], "min": warm[0], "times": warm, "number": 1,
                "warmup": warm, "repeated": False, "over_budget": True}
    for _ in range(max(0, warmups - 1)):
        t0 = _now()
        fn()
        warm.append(_now() - t0)
    est = max(min(warm), 1e-8)
    number = 1 if est >= min_time else min(1_000_000, int(math.ceil(min_time / est)))
    times = []
    for _ in range(reps):
        gc.collect()
        t0 = _now()
        for _ in range(number):
            fn()
        times.append((_now() - t0) / number)
    med = statistics.median(times)
    return {"median": med, "min": min(times), "times": times, "number": number,
            "warmup": warm, "repeated": True, "over_budget": med > budget}


def _number(t, min_time):
    t = max(t, 1e-8)
    return 1 if t >= min_time else min(1_000_000, int(math.ceil(min_time / t)))


try:
    import resource

    def _minor_faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
except ImportError:  # not on this platform: faults are not reported
    def _minor_faults():
        return 0


def _timing(fn, number, faults=None):
    """Seconds per call of ``fn`` over ``number`` calls; with a list ``faults``, append the
    minor page faults per call (memory the kernel maps in: microseconds each on a VM, so a
    mode whose memory outgrows what the allocator keeps pays them only at large sizes)."""
    gc.collect()
    f0 = _minor_faults()
    t0 = _now()
    for _ in range(number):
        fn()
    t = (_now() - t0) / number
    if faults is not None:
        faults.append((_minor_faults() - f0) / number)
    return t


def measure_pair(fn, base, reps=5, warmups=1, min_time=0.01, budget=math.inf):
    """Time ``fn`` and the baseline ``base`` alternately, timing by timing, so that both see
    the same machine (a load that comes and goes shifts both). Returns ``(fn's, base's)``
    results in the format of :func:`measure_time`, the first with ``paired_ratios``: the ratio
    of each of ``fn``'s timings to the baseline's timing just before it.

    ``fn``'s warm-up decides as in :func:`measure_time`: over ``budget``, it is not repeated
    (the baseline still gets its ``reps`` timings).
    """
    gc.collect()
    bwarm = []
    for _ in range(max(1, warmups)):
        t0 = _now()
        base()
        bwarm.append(_now() - t0)
    gc.collect()
    t0 = _now()
    fn()
    warm = [_now() - t0]
    if warm[0] > budget:
        bres = measure_time(base, reps, 0, min_time)
        bres["warmup"] = bwarm
        return ({"median": warm[0], "min": warm[0], "times": warm, "number": 1, "warmup": warm,
                 "repeated": False, "over_budget": True,
                 "paired_ratios": [warm[0] / bres["median"]] if bres["median"] > 0 else []}, bres)
    for _ in range(max(0, warmups - 1)):
        t0 = _now()
        fn()
        warm.append(_now() - t0)
    nb = _number(min(bwarm), min_time)
    nf = _number(min(warm), min_time)
    btimes, times, ratios, bfaults, faults = [], [], [], [], []
    for _ in range(reps):
        tb = _timing(base, nb, bfaults)
        tf = _timing(fn, nf, faults)
        btimes.append(tb)
        times.append(tf)
        if tb > 0:
            ratios.append(tf / tb)
    med = statistics.median(times)
    bmed = statistics.median(btimes)
    return ({"median": med, "min": min(times), "times": times, "number": nf, "warmup": warm,
             "repeated": True, "over_budget": med > budget, "paired_ratios": ratios,
             "faults_per_call": statistics.median(faults)},
            {"median": bmed, "min": min(btimes), "times": btimes, "number": nb, "warmup": bwarm,
             "repeated": True, "over_budget": False,
             "faults_per_call": statistics.median(bfaults)})


def measure_memory(fn):
    """Peak traced memory (bytes above what was traced before) during one ``fn()``;
    returns ``(peak, fn's result)``."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return max(0, peak - base), result


# --------------------------------------------------------------------------------------------
# checks


def flatten(x):
    """A gradient-like value as a flat list of floats (lists, tuples, numpy arrays, scalars)."""
    out = []
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        elif hasattr(v, "tolist") and hasattr(v, "shape"):
            t = v.tolist()
            if isinstance(t, list):
                stack.extend(reversed(t))
            else:
                out.append(float(t))
        elif v is None:
            out.append(0.0)
        else:
            out.append(float(v))
    return out


def compare(kind, got, ref):
    """``(ok, relative error, detail)`` of a mode's result against the reference."""
    listed = ref.get("output") in ("list", "jacobian")  # list-valued: see Program.output
    if kind == "value":
        want = ref["value"]
        g = flatten(got)
        if listed:  # its outputs, summed as the reference's value is
            g = [math.fsum(g)]
        if len(g) != 1:
            return False, math.inf, "expected one number, got %d" % len(g)
        scale = max(abs(want), 1e-300)
        err = abs(g[0] - want) / scale
    elif kind == "forward":
        want = ref["dirderiv"]
        g = flatten(got)
        if listed:  # output tangents: their sum is the directional derivative of the sum
            g = [math.fsum(g)]
        if len(g) != 1:
            return False, math.inf, "expected one number, got %d" % len(g)
        scale = max(abs(want), ref["dirderiv_scale"], 1e-300)
        err = abs(g[0] - want) / scale
    else:
        want = ref["grad"]
        g = flatten(got)
        m = len(want)
        if ref.get("output") == "jacobian":  # m x m; its column sums: the gradient of the sum
            if len(g) != m * m:
                return False, math.inf, "Jacobian has %d entries, expected %d" % (len(g), m * m)
            g = [math.fsum(g[r * m + c] for r in range(m)) for c in range(m)]
        if len(g) != len(want):
            return False, math.inf, "gradient has %d entries, expected %d" % (len(g), len(want))
        scale = max(max((abs(w) for w in want), default=0.0), 1e-300)
        err = max((abs(a - b) for a, b in zip(g, want)), default=0.0) / scale
        if not all(math.isfinite(a) for a in g):
            err = math.inf
    if not math.isfinite(err) or err > RTOL:
        return False, err, "relative error %.3g > %g" % (err, RTOL)
    return True, err, "relative error %.3g" % err


def finite_difference_check(f, xs, grad, eps_rel=1e-6, coords=3):
    """Central differences of ``f`` at ``xs`` (any structure of floats and arrays) on up to
    ``coords`` coordinates of its flattening (first, middle, last) against ``grad`` (flat)."""
    flat = flatten(xs)
    m = len(flat)
    idx = sorted({0, m // 2, m - 1})[:coords]
    f0 = f(xs)
    rows = []
    ok = True
    for i in idx:
        h = eps_rel * max(1.0, abs(flat[i]))
        xp = list(flat)
        xm = list(flat)
        xp[i] += h
        xm[i] -= h
        fd = float(f(unflatten_like(xs, xp)) - f(unflatten_like(xs, xm))) / (2 * h)
        tol = 1e-5 * max(1.0, abs(grad[i])) + 1e-9 * abs(f0)
        good = bool(abs(fd - grad[i]) <= tol)
        ok = ok and good
        rows.append({"index": i, "ad": grad[i], "fd": fd, "abs_err": abs(fd - grad[i]), "ok": good})
    return ok, rows


# --------------------------------------------------------------------------------------------
# jobs


def _emit(line, width=100):
    """Print a progress line, wrapped to ``width`` columns (continuations indented)."""
    if len(line) > width:
        import textwrap

        line = "\n".join(textwrap.wrap(line, width, subsequent_indent="      ",
                                        break_on_hyphens=False))
    print(line, flush=True)


def _fmt_t(t):
    if t is None:
        return "-"
    if t >= 1:
        return "%.2fs" % t
    if t >= 1e-3:
        return "%.1fms" % (t * 1e3)
    return "%.1fus" % (t * 1e6)


def _fmt_b(b):
    if b is None:
        return "-"
    for unit, k in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if b >= k:
            return "%.1f%s" % (b / k, unit)
    return "%dB" % b


def run_reference(spec, emit=_emit):
    """deltaad's gradient at ``check_n``, checked against finite differences and op counts."""
    prog = PROGRAMS[spec["program"]]
    res = {"program": prog.name, "mode": "reference", "status": "running"}
    try:
        import deltaad
    except ImportError as exc:
        res.update(status="error", reason="cannot import deltaad: %s" % exc)
        return res
    from .modes import deltaad_ns, pullback_ones

    ns = deltaad_ns(deltaad)
    res["backend"] = deltaad.backend
    res["versions"] = {"deltaad": getattr(deltaad, "__version__", None)}
    res["deltaad_file"] = getattr(deltaad, "__file__", None)
    seed = spec.get("seed", 0)
    n = prog.check_n
    xs = make_input(prog, n, seed)
    direction = random_direction(xs, seed)

    def f(v):
        return prog.fn(ns, n, v)

    listed = prog.output in ("list", "jacobian")  # the reference: the gradient of the outputs' sum

    def f_float(v):
        out = prog.fn(FLOAT_NS, n, v)
        return math.fsum(out) if listed else out

    try:
        grad = flatten(pullback_ones(deltaad.vjp, f)(xs) if listed else deltaad.grad(f)(xs))
        value = flatten(f_float(xs))[0]
        fd_ok, fd_rows = finite_difference_check(f_float, xs, grad, eps_rel=prog.fd_eps)
        ops_rows = []
        for m in (n, 2 * n) if prog.ops_are_bindings else ():
            xm = make_input(prog, m, seed)
            _, vjp_fn = deltaad.vjp(lambda v, m=m: prog.fn(ns, m, v), xm)
            nb = int(vjp_fn.tape.nbindings)
            k = count_leaves(xm)
            ops_rows.append({"n": m, "declared_ops": prog.ops(m), "bindings": nb,
                             "inputs": k, "ok": nb - k == prog.ops(m)})
    except Exception as exc:
        res.update(status="error", reason="%s: %s" % (type(exc).__name__, exc),
                   traceback=traceback.format_exc())
        return res
    fdir = flatten(direction)
    dd = sum(g * d for g, d in zip(grad, fdir))
    res.update(
        status="ok" if fd_ok else "wrong", n=n, grad=grad, value=value, direction=fdir,
        output=prog.output,
        dirderiv=dd, dirderiv_scale=sum(abs(g * d) for g, d in zip(grad, fdir)),
        fd_ok=fd_ok, fd=fd_rows, ops_ok=all(r["ok"] for r in ops_rows), ops_check=ops_rows)
    if not fd_ok:
        res["reason"] = "deltaad's gradient disagrees with finite differences"
    emit("[%s] reference (deltaad-%s) at n=%d: finite differences %s, op count %s" % (
        prog.name, deltaad.backend, n, "ok" if fd_ok else "FAILED",
        ("ok" if res["ops_ok"] else "MISMATCH %r" % ops_rows) if ops_rows else "not checked"))
    return res


def run_job(spec, mode=None, program=None, emit=_emit, write=None):
    """Run one mode on one program as described in the module docstring; return the result.

    ``mode``/``program`` override the registry lookups (tests pass their own objects);
    ``write(result)`` is called after every point.
    """
    if spec["mode"] == "reference" and mode is None:
        return run_reference(spec, emit)
    prog = program or PROGRAMS[spec["program"]]
    mode = mode or MODES[spec["mode"]]
    budget = spec.get("budget", math.inf)
    abort_factor = spec.get("abort_factor", 2.0)
    reps = spec.get("reps", 5)
    warmups = spec.get("warmups", 1)
    min_time = spec.get("min_time", 0.01)
    seed = spec.get("seed", 0)
    ref = spec.get("reference")
    tag = "[%s] %-14s" % (prog.name, mode.name)
    res = {"program": prog.name, "mode": mode.name, "kind": mode.kind, "status": "running",
           "reason": None, "points": [], "check": None, "budget": budget,
           "description": mode.description, "peer": mode.peer}
    write = write or (lambda r: None)

    try:
        mode.prepare()
    except Unavailable as exc:
        res.update(status="unavailable", reason=str(exc))
        emit("%s unavailable: %s" % (tag, exc))
        return res
    res["versions"] = mode.versions()

    # 1. the check
    n = prog.check_n
    xs = make_input(prog, n, seed)
    direction = random_direction(xs, seed)
    ablations.set_deadline(_now() + abort_factor * budget)
    try:
        got = mode.runner(prog, n, direction)(xs)
    except ablations.BudgetExceeded as exc:
        res.update(status="stopped", reason="the check run at n=%d exceeded %g s (%s)" % (
            n, abort_factor * budget, exc))
        emit("%s stopped at the check: %s" % (tag, res["reason"]))
        return res
    except Exception as exc:
        res.update(status="error", reason="check run failed: %s: %s" % (type(exc).__name__, exc),
                   traceback=traceback.format_exc())
        emit("%s error: %s" % (tag, res["reason"]))
        return res
    finally:
        ablations.set_deadline(math.inf)
    if ref is None:
        res.update(status="unchecked", reason="no reference gradient")
        return res
    ok, err, detail = compare(mode.kind, got, ref)
    res["check"] = {"n": n, "ok": ok, "rel_err": err, "detail": detail}
    if not ok:
        res.update(status="wrong", reason="gradient check at n=%d failed: %s" % (n, detail))
        emit("%s WRONG: %s (not timed)" % (tag, res["reason"]))
        return res
    emit("%s check ok at n=%d (%s)" % (tag, n, detail))

    # 2. the sweep
    sizes = spec.get("sizes")
    if sizes is None:
        preset = spec.get("preset", "quick")
        sizes = (prog.small_sizes(preset) if mode.ladder else []) + prog.sizes(preset)
    float_run = MODES["float"].runner
    for n in sizes:
        xs = make_input(prog, n, seed)
        direction = random_direction(xs, seed)
        point = {"n": n, "ops": prog.ops(n)}
        run = mode.runner(prog, n, direction)
        if mode.deadline:  # each run gets abort_factor budgets before it is abandoned
            limit = abort_factor * budget
            set_deadline = ablations.set_deadline

            def call():
                set_deadline(_now() + limit)
                return run(xs)
        else:
            def call():
                return run(xs)
        try:
            if mode.name == "float":
                tm = measure_time(call, reps, warmups, min_time, budget)
            else:
                fr = float_run(prog, n, direction)
                tm, fm = measure_pair(call, lambda: fr(xs), reps, warmups, min_time, budget)
                point["float"] = fm
        except ablations.BudgetExceeded as exc:
            point.update(aborted=True, lower_bound=abort_factor * budget, detail=str(exc))
            res["points"].append(point)
            res.update(status="stopped", reason="a run at n=%d (%d ops) was abandoned after %g s "
                       "(%g x the %g s budget)" % (n, point["ops"], abort_factor * budget,
                                                   abort_factor, budget))
            emit("%s n=%-8d ops=%-9d ABANDONED after %gs (budget %gs): sweep stopped" % (
                tag, n, point["ops"], abort_factor * budget, budget))
            write(res)
            break
        finally:
            ablations.set_deadline(math.inf)
        point["time"] = tm
        point["median"] = tm["median"]
        if tm.get("faults_per_call") is not None:
            point["faults_per_op"] = tm["faults_per_call"] / point["ops"]
        if "float" in point:
            point["float_median"] = point["float"]["median"]
            # the median of the paired ratios (each timing over the float timing just before
            # it) is robust to load that changes during the point; median/median kept beside it
            pr = tm.get("paired_ratios") or []
            point["ratio"] = statistics.median(pr) if pr else None
            point["ratio_of_medians"] = (tm["median"] / point["float_median"]
                                         if point["float_median"] > 0 else None)
        else:
            point["float_median"] = tm["median"]
            point["ratio"] = 1.0
        # separate run for memory (never the timed one); skipped after a single over-budget run;
        # tracemalloc slows allocation down, so an ablation gets 3 times longer here
        ablations.set_deadline(_now() + 3 * abort_factor * budget)
        try:
            if not tm["repeated"]:
                raise ablations.BudgetExceeded("not measured: the run was over budget")
            peak, (_, extra) = measure_memory(lambda: mode.memory(prog, n, xs, direction))
            point["mem_peak"] = peak
            point.update(extra)
        except ablations.BudgetExceeded:
            point["mem_peak"] = None
        finally:
            ablations.set_deadline(math.inf)
        res["points"].append(point)
        emit("%s n=%-7d ops=%-8d t=%-8s x%-6s mem=%-8s%s%s" % (
            tag, n, point["ops"], _fmt_t(tm["median"]),
            "%.2f" % point["ratio"] if point.get("ratio") else "-",
            _fmt_b(point.get("mem_peak")),
            " tape=%s" % _fmt_b(point["tape_nbytes"]) if "tape_nbytes" in point else "",
            "" if tm["repeated"] else "  (single run)"))
        write(res)
        if tm["over_budget"]:
            res.update(status="stopped", reason="the run at n=%d (%d ops) took %s > the %g s "
                       "budget" % (n, point["ops"], _fmt_t(tm["median"]), budget))
            emit("%s sweep stopped: %s" % (tag, res["reason"]))
            break
    if res["status"] == "running":
        res["status"] = "ok"
    write(res)
    return res


def _writer(path):
    def write(res):
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(res, fh)
        os.replace(tmp, path)
    return write


def run_batch(spec, emit=_emit, write=None):
    """One mode on several programs in this process (a peer library is imported once):
    ``spec["programs"]`` lists them, ``spec["references"]`` maps each to its reference.
    Returns ``{"mode": ..., "programs": {name: result}}``; ``write`` gets it after every point."""
    batch = {"mode": spec["mode"], "programs": {}}
    write = write or (lambda r: None)
    for pname in spec["programs"]:
        job = dict(spec, program=pname, reference=(spec.get("references") or {}).get(pname))
        job.pop("programs", None)
        job.pop("references", None)

        def write_one(res, pname=pname):
            batch["programs"][pname] = res
            write(batch)
        try:
            res = run_job(job, emit=emit, write=write_one)
        except Exception as exc:  # report, never lose the traceback; go on with the next
            res = {"program": pname, "mode": spec["mode"], "status": "error", "points": [],
                   "reason": "%s: %s" % (type(exc).__name__, exc),
                   "traceback": traceback.format_exc()}
        write_one(res)
    return batch


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as fh:
        spec = json.load(fh)
    run_batch(spec, write=_writer(spec["out"]))


if __name__ == "__main__":
    main()
