"""The benchmark harness itself (bench/): fits, checks, ablations, and a --tiny run.

Quick (a few seconds) and run under both backends by ``make test``. Nothing here times
deltaad: performance is measured by ``make bench``, never asserted in unit tests.
"""

import json
import math
import os
import sys
import time

import numpy as np
import pytest

import deltaad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench import ablations, fit, worker  # noqa: E402
from bench.modes import MODES, DeltaadReverse  # noqa: E402
from bench.programs import PROGRAMS, make_input  # noqa: E402


def geometric(lo, hi, k):
    return [lo * (hi / lo) ** (i / (k - 1)) for i in range(k)]


# --------------------------------------------------------------------------------------------
# fits on synthetic data


def test_fit_linear():
    x = geometric(1e3, 1e6, 10)
    a = fit.analyse(x, [3.0 * v for v in x])
    assert a["slope"] == pytest.approx(1.0, abs=1e-9)
    assert a["linear_r2"] == pytest.approx(1.0, abs=1e-9)
    assert a["class"] == "linear"


def test_fit_linear_with_overhead_and_noise():
    x = geometric(1e3, 1e6, 10)
    noise = [1.03, 0.98, 1.01, 0.97, 1.02, 1.0, 0.99, 1.03, 0.98, 1.01]
    a = fit.analyse(x, [(2e-5 + 4e-8 * v) * e for v, e in zip(x, noise)])
    assert 0.85 < a["slope"] < 1.05
    assert a["class"] == "linear"


def test_fit_quadratic():
    x = geometric(1e2, 1e5, 10)
    a = fit.analyse(x, [v * v for v in x])
    assert a["slope"] == pytest.approx(2.0, abs=1e-9)
    assert a["quadratic_r2"] == pytest.approx(1.0, abs=1e-9)
    assert a["class"] == "quadratic"
    # a quadratic with a linear part that still dominates at the top end is quadratic too
    b = fit.analyse(x, [1e-3 * v + 1e-7 * v * v for v in x])
    assert b["class"] == "quadratic"


def test_fit_nonlinear_and_sublinear():
    x = geometric(1e2, 1e5, 10)
    assert fit.analyse(x, [v ** 1.5 for v in x])["class"] == "nonlinear"
    assert fit.analyse(x[:5], [v ** 1.8 for v in x[:5]])["class"] == "nonlinear"
    c = fit.analyse(x, [1000.0 + 1e-9 * v for v in x])
    assert c["class"] == "sublinear"
    assert abs(c["slope"]) < 0.01


def test_fit_exponential():
    x = list(range(2, 26, 2))
    a = fit.analyse(x, [1e-6 * 2.0 ** v for v in x])
    assert a["class"] == "exponential"
    assert a["doubling_ops"] == pytest.approx(1.0, rel=1e-6)


def test_fit_insufficient_and_ratio():
    assert fit.analyse([1, 2], [1, 2])["class"] == "insufficient"
    x = geometric(1e3, 1e6, 6)
    base = [1e-8 * v + 1e-6 for v in x]
    assert fit.slope_ratio(x, [3 * b for b in base], base) == pytest.approx(3.0)


# --------------------------------------------------------------------------------------------
# programs, ablations, checks


@pytest.mark.parametrize("name", sorted(p for p in PROGRAMS if PROGRAMS[p].ops_are_bindings))
def test_declared_operation_count_is_deltaads_binding_count(name):
    from bench.modes import deltaad_ns

    prog = PROGRAMS[name]
    dns = deltaad_ns(deltaad)
    for n in (prog.check_n, prog.check_n + 3):
        xs = make_input(prog, n, 0)
        _, vjp_fn = deltaad.vjp(lambda v: prog.fn(dns, n, v), xs)
        assert vjp_fn.tape.nbindings - len(xs) == prog.ops(n)


@pytest.mark.parametrize("name", sorted(p for p in PROGRAMS if PROGRAMS[p].kind == "scalar"))
def test_reference_and_ablations_agree(name):
    ref = worker.run_reference({"program": name}, emit=lambda line: None)
    assert ref["status"] == "ok", ref
    assert ref["fd_ok"] and ref["ops_ok"]
    prog = PROGRAMS[name]
    xs = make_input(prog, prog.check_n, 0)
    for mname in ("naive-delta", "backpropagator"):
        mode = MODES[mname]
        if not prog.supports(mode):  # e.g. a list-valued program: deltaad modes only
            continue
        mode.prepare()
        got = mode.runner(prog, prog.check_n, None)(xs)
        ok, err, detail = worker.compare("reverse", got, ref)
        assert ok, (mname, detail)


def test_naive_delta_is_stopped_by_the_deadline():
    prog = PROGRAMS["letchain"]
    mode = MODES["naive-delta"]
    mode.prepare()
    run = mode.runner(prog, 200, None)  # 2^200 paths
    ablations.set_deadline(time.perf_counter() + 0.05)
    try:
        with pytest.raises(ablations.BudgetExceeded):
            run([1.0])
    finally:
        ablations.set_deadline(math.inf)


def test_backpropagator_deep_chain_does_not_crash():
    def chain(d):
        x = d[0]
        for _ in range(50_000):
            x = x * 1.00001 - 0.5  # one parent per step: the closures nest 100000 deep
        return x

    g = ablations.backpropagator_grad(chain, [0.5])
    assert g[0] == pytest.approx(1.00001 ** 50_000, rel=1e-9)


def test_measure_pair_alternates_and_pairs():
    calls = []
    res, base = worker.measure_pair(lambda: calls.append("f"), lambda: calls.append("b"),
                                    reps=3, warmups=1, min_time=0.0)
    assert calls == ["b", "f", "b", "f", "b", "f", "b", "f"]
    assert len(res["paired_ratios"]) == 3 and len(base["times"]) == 3 and res["repeated"]

    def slow():
        time.sleep(0.03)
    res, base = worker.measure_pair(slow, lambda: None, reps=3, warmups=1, min_time=0.0,
                                    budget=0.01)
    assert not res["repeated"] and res["over_budget"] and len(res["times"]) == 1
    assert len(base["times"]) == 3


def test_compare_detects_wrong_gradients():
    ref = {"grad": [1.0, -2.0, 3.0], "value": 2.0, "dirderiv": 0.5, "dirderiv_scale": 6.0}
    assert worker.compare("reverse", [1.0, -2.0, 3.0], ref)[0]
    assert not worker.compare("reverse", [1.1, -2.2, 3.3], ref)[0]
    assert not worker.compare("reverse", [1.0, -2.0], ref)[0]
    assert not worker.compare("reverse", [1.0, float("nan"), 3.0], ref)[0]
    assert worker.compare("value", 2.0, ref)[0]
    assert not worker.compare("forward", 0.55, ref)[0]


def test_list_valued_program_modes_agree_and_wrong_is_caught():
    """``elementwise`` returns a list: the reverse modes pull back ones, the forward mode's
    tangents sum to the directional derivative; a gradient 10% off fails the check."""
    from bench.programs import random_direction

    ref = worker.run_reference({"program": "elementwise"}, emit=lambda line: None)
    assert ref["status"] == "ok" and ref["fd_ok"] and ref["ops_ok"], ref
    prog = PROGRAMS["elementwise"]
    n = prog.check_n
    xs = make_input(prog, n, 0)
    # independent of deltaad: d/dv (sin(v) v) = cos(v) v + sin(v)
    want = [math.cos(v) * v + math.sin(v) for v in xs]
    assert ref["grad"] == pytest.approx(want, rel=1e-12, abs=1e-15)
    b = deltaad.backend
    for mname in ("float", "deltaad-%s" % b, "deltaad-%s-fwd" % b):
        mode = MODES[mname]
        assert prog.supports(mode)
        mode.prepare()
        got = mode.runner(prog, n, random_direction(xs, 0))(xs)
        assert worker.compare(mode.kind, got, ref)[0], mname
    wrong = MODES["deltaad-wrong"]
    wrong.prepare()
    assert not worker.compare("reverse", wrong.runner(prog, n, None)(xs), ref)[0]
    assert not prog.supports(MODES["naive-delta"]) and not prog.supports(MODES["torch"])


def test_jacobian_program_modes_agree_and_wrong_is_caught():
    """``jacrev``'s reverse modes return the dense n x n Jacobian of the map (diagonal, checked
    by formula here), whose column sums the check compares with the reference; the float
    baseline runs the map once per row; a Jacobian 10% off, or of the wrong size, fails."""
    ref = worker.run_reference({"program": "jacrev"}, emit=lambda line: None)
    assert ref["status"] == "ok" and ref["fd_ok"], ref
    prog = PROGRAMS["jacrev"]
    n = prog.check_n
    xs = make_input(prog, n, 0)
    mode = MODES["deltaad-%s" % deltaad.backend]
    mode.prepare()
    J = mode.runner(prog, n, None)(xs)
    want = [math.cos(v) * v + math.sin(v) for v in xs]
    assert J.shape == (n, n)
    assert J.tolist() == [[want[r] if r == c else 0.0 for c in range(n)] for r in range(n)]
    assert worker.compare("reverse", J, ref)[0]
    assert not worker.compare("reverse", J[:, :-1], ref)[0]
    assert not worker.compare("reverse", want, ref)[0]
    wrong = MODES["deltaad-wrong"]
    wrong.prepare()
    assert not worker.compare("reverse", wrong.runner(prog, n, None)(xs), ref)[0]
    calls = []
    prog_fn = prog.fn
    try:
        prog.fn = lambda ns, m, v: calls.append(m) or prog_fn(ns, m, v)
        fl = MODES["float"].runner(prog, n, None)
        assert worker.compare("value", fl(xs), ref)[0]
    finally:
        prog.fn = prog_fn
    assert calls == [n] * n
    assert not prog.supports(MODES["deltaad-c-fwd"]) and not prog.supports(MODES["torch"])


class CountingWrongMode(DeltaadReverse):
    """deltaad's gradient times 1.1; counts how often its runner is called."""

    def __init__(self):
        DeltaadReverse.__init__(self, None, name="test-wrong", scale=1.1)
        self.calls = 0

    def runner(self, program, n, direction):
        inner = DeltaadReverse.runner(self, program, n, direction)

        def run(xs):
            self.calls += 1
            return inner(xs)
        return run


def test_wrong_mode_is_reported_wrong_and_never_timed(monkeypatch):
    timed = []
    for name in ("measure_time", "measure_pair", "measure_memory"):
        real = getattr(worker, name)
        monkeypatch.setattr(worker, name,
                            lambda *a, _real=real, **k: timed.append(a) or _real(*a, **k))
    ref = worker.run_reference({"program": "rosenbrock"}, emit=lambda line: None)
    mode = CountingWrongMode()
    spec = {"program": "rosenbrock", "mode": mode.name, "reference": ref, "preset": "tiny",
            "budget": 0.1, "reps": 3, "min_time": 0.001}
    res = worker.run_job(spec, mode=mode, emit=lambda line: None)
    assert res["status"] == "wrong"
    assert "check" in res["reason"]
    assert res["points"] == []
    assert mode.calls == 1  # the check, nothing else
    assert timed == []
    # the same mode without the error is timed
    good = DeltaadReverse(None, name="test-right")
    res = worker.run_job(dict(spec, mode=good.name), mode=good, emit=lambda line: None)
    assert res["status"] == "ok", res
    assert [p["n"] for p in res["points"]] == PROGRAMS["rosenbrock"].sizes("tiny")
    assert all(p["median"] > 0 and p["tape_nbindings"] > p["ops"] for p in res["points"])
    assert timed  # and the monkeypatched measurement functions did see it


# --------------------------------------------------------------------------------------------
# end to end


def test_tiny_run_writes_report_and_results(tmp_path, capfd):
    from bench import run

    mode = "deltaad-%s" % deltaad.backend
    out = tmp_path / "results"
    run.main(["--tiny", "--programs", "taylor,letchain", "--modes",
              "float,%s,deltaad-wrong" % mode, "--out", str(out), "--no-plots"])
    report = (out / "report.md").read_text()
    results = json.loads((out / "results.json").read_text())
    assert "## taylor" in report and "## letchain" in report
    assert "Machine:" in report and "Python" in report
    for pname in ("taylor", "letchain"):
        entry = results["programs"][pname]
        assert entry["reference"]["status"] == "ok"
        assert entry["modes"]["float"]["status"] == "ok"
        m = entry["modes"][mode]
        assert m["status"] == "ok", m
        assert len(m["points"]) == len(PROGRAMS[pname].sizes("tiny"))
        for p in m["points"]:
            assert p["median"] > 0 and p["float_median"] > 0 and p["ratio"] > 0
            assert p["mem_peak"] > 0 and p["tape_nbindings"] >= p["ops"]
            assert p["faults_per_op"] >= 0 and p["float"]["faults_per_call"] >= 0
        assert m["summary"]["time"]["slope"] is not None
        assert m["summary"]["ratio_slope"] is not None
        lo, hi = m["summary"]["faults_per_op"]
        assert lo >= 0 and hi >= 0
        wrong = entry["modes"]["deltaad-wrong"]
        assert wrong["status"] == "wrong" and wrong["points"] == []
    assert "wrong: gradient check" in report
    assert "faults/op small → large" in report and "slope of ×float" in report
    assert results["meta"]["settings"]["malloc"] == "steady"
    assert "Allocator: glibc told to keep freed memory" in report
    printed = capfd.readouterr().out
    assert "== taylor" in printed and "check ok" in printed


def test_malloc_setting_reaches_every_worker(monkeypatch):
    """--malloc steady sets glibc's thresholds for every worker; --malloc default removes them
    even when the caller's environment had them (so a run says what it measured)."""
    from bench import run

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    steady = run._worker_env("c", "steady")
    assert steady["MALLOC_TRIM_THRESHOLD_"] == str(1 << 30)
    assert steady["MALLOC_MMAP_THRESHOLD_"] == str(32 << 20)
    assert steady["DELTAAD_BACKEND"] == "c"
    default = run._worker_env("python", "default")
    assert "MALLOC_TRIM_THRESHOLD_" not in default and "MALLOC_MMAP_THRESHOLD_" not in default
    assert run.parse_args(["--tiny"]).malloc == "steady"
    assert run.parse_args(["--tiny", "--malloc", "default"]).malloc == "default"


def test_unavailable_mode_is_reported_not_run():
    from bench.modes import Mode, Unavailable

    class Missing(Mode):
        name = "missing"

        def prepare(self):
            raise Unavailable("not installed here")

        def runner(self, program, n, direction):  # pragma: no cover - must not be called
            raise AssertionError("runner of an unavailable mode was called")

    res = worker.run_job({"program": "taylor", "mode": "missing", "reference": None},
                         mode=Missing(), emit=lambda line: None)
    assert res["status"] == "unavailable" and "not installed" in res["reason"]
    assert res["points"] == []


def test_finite_differences_and_structures():
    from bench.programs import random_direction, unflatten_like
    import numpy as np

    xs = [1.0, (2.0, np.array([[3.0, 4.0], [5.0, 6.0]])), [7.0]]
    flat = worker.flatten(xs)
    assert flat == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    back = unflatten_like(xs, flat)
    assert worker.flatten(back) == flat and isinstance(back[1][1], np.ndarray)
    d = random_direction(xs, 0)
    assert len(worker.flatten(d)) == 7

    def f(v):
        return v[0] * v[1][0] + float(np.sum(v[1][1] ** 2)) + 3.0 * v[2][0]

    good = [2.0, 1.0, 6.0, 8.0, 10.0, 12.0, 3.0]
    ok, rows = worker.finite_difference_check(f, xs, good)
    assert ok and [r["index"] for r in rows] == [0, 3, 6]
    ok, _ = worker.finite_difference_check(f, xs, [2.0, 1.0, 6.0, 8.8, 10.0, 12.0, 3.0])
    assert not ok


# --------------------------------------------------------------------------------------------
# array programs: mlp, gmm, smallops


ARRAY_PROGRAMS = sorted(p for p in PROGRAMS if PROGRAMS[p].kind == "array")


def test_array_programs_are_registered():
    assert {"mlp", "gmm", "smallops"} <= set(ARRAY_PROGRAMS)
    assert PROGRAMS["mlp"].spec_n == 512 and 512 in PROGRAMS["mlp"].sizes("quick")
    assert PROGRAMS["gmm"].spec_n == 1000 and 1000 in PROGRAMS["gmm"].sizes("quick")
    for name in ARRAY_PROGRAMS:
        assert not PROGRAMS[name].supports(MODES["deltaad-c-fwd"])
        assert not PROGRAMS[name].supports(MODES["naive-delta"])
        assert PROGRAMS[name].supports(MODES["torch"]) and PROGRAMS[name].supports(MODES["autograd"])


@pytest.mark.parametrize("name", ARRAY_PROGRAMS)
def test_array_program_reference_and_modes_agree(name):
    """deltaad's gradient passes finite differences; every importable mode (float, deltaad of
    the current backend, torch, autograd) agrees with it at the check size."""
    from bench.modes import Unavailable

    ref = worker.run_reference({"program": name}, emit=lambda line: None)
    assert ref["status"] == "ok", ref
    prog = PROGRAMS[name]
    xs = make_input(prog, prog.check_n, 0)
    for mname in ("float", "deltaad-%s" % deltaad.backend, "torch", "autograd"):
        mode = MODES[mname]
        try:
            mode.prepare()
        except Unavailable:
            continue
        got = mode.runner(prog, prog.check_n, None)(xs)
        ok, err, detail = worker.compare(mode.kind, got, ref)
        assert ok, (mname, detail)


def test_array_programs_tiny_run_and_report(tmp_path):
    from bench import report, run

    mode = "deltaad-%s" % deltaad.backend
    out = tmp_path / "results"
    results = run.main(["--tiny", "--programs", ",".join(ARRAY_PROGRAMS), "--modes",
                        "float,%s" % mode, "--out", str(out), "--no-plots"])
    for pname in ARRAY_PROGRAMS:
        entry = results["programs"][pname]
        assert entry["reference"]["status"] == "ok", entry["reference"]
        m = entry["modes"][mode]
        assert m["status"] == "ok", m
        assert [p["n"] for p in m["points"]] == PROGRAMS[pname].sizes("tiny")
        assert all(p["median"] > 0 and p["ratio"] > 0 for p in m["points"])
    # the tiny sizes do not reach the spec point: the array and overhead tables are built
    # from a run at the spec sizes, checked here on synthetic results
    fake = json.loads((out / "results.json").read_text())
    for pname in ("mlp", "gmm", "smallops"):
        entry = fake["programs"][pname]
        n = entry["spec_n"]
        for mname, t in (("float", 1.0), (mode, 2.0), ("autograd", 2.5), ("torch", 1.5)):
            entry["modes"][mname] = {"status": "ok", "peer": mname in ("autograd", "torch"),
                                     "points": [{"n": n, "ops": 1000, "median": t * 1e-3,
                                                 "float_median": 1e-3, "ratio": t,
                                                 "time": {"repeated": True}}]}
    report.analyse(fake)
    arrays = {(r["program"], r["mode"]): r for r in fake["arrays"]}
    r = arrays[("mlp", mode)]
    assert r["ratio"] == 2.0
    assert r["peers"]["autograd"]["ratio"] == pytest.approx(0.8)
    assert r["peers"]["torch"]["ratio"] == pytest.approx(2.0 / 1.5)
    assert r["checks"] == {"÷ numpy forward <= 3": True, "÷ autograd <= 1": True,
                           "÷ torch <= 1.3": False}
    over = {r["mode"]: r for r in fake["overhead"]}
    assert over[mode]["us_per_op"] == pytest.approx(2.0)
    assert over["torch"]["us_per_op"] == pytest.approx(1.5)
    md = report.markdown(fake)
    assert "## Array programs against their targets" in md and "## Per-operation overhead" in md
    assert "per-operation overhead" in report.terminal(fake)


# --------------------------------------------------------------------------------------------
# the report a user reads: headline first, 100 columns, plots, missing peers named


def _synthetic_results():
    """Results of a made-up run: a linear program measured by deltaad, its pure backend, its
    forward mode, one peer that ran and one that is not installed, an ablation that was
    stopped, and an array program; names long enough to stress the terminal's width."""
    from bench import report

    def pts(per_op, sizes=(1000, 10_000, 100_000), mem=24.0, float_per_op=1e-8):
        return [{"n": o, "ops": o, "median": per_op * o, "float_median": float_per_op * o,
                 "ratio": per_op / float_per_op, "mem_peak": mem * o, "time": {"repeated": True},
                 "tape_nbytes": 24 * o, "tape_nbindings": o} for o in sizes]

    def ok(points, peer=False):
        return {"status": "ok", "peer": peer, "points": points}

    ablation = ok(pts(3e-6, sizes=(10, 100, 1000)))
    ablation["points"].append({"n": 10_000, "ops": 10_000, "aborted": True, "lower_bound": 0.3})
    ablation.update(status="stopped", reason="a run at n=10000 (10000 ops) was abandoned "
                    "after 0.3 s (2 x the 0.15 s budget) " + "and a long explanation " * 4)
    programs = {}
    for name, kind in (("a_program_with_a_long_name", "scalar"), ("arrays", "array")):
        modes = {"float": ok(pts(1e-8)), "deltaad-c": ok(pts(2.5e-8)),
                 "deltaad-python": ok(pts(4e-7)), "deltaad-c-fwd": ok(pts(2e-8, mem=0.1)),
                 "naive-delta": ablation, "torch": ok(pts(1e-7), peer=True),
                 "jax": {"status": "unavailable", "peer": True, "points": [],
                         "reason": "jax is not installed (No module named 'jax')"}}
        programs[name] = {"description": "a made-up program", "ops": "n", "kind": kind,
                          "check_n": 3, "sizes": [1000, 10_000, 100_000], "spec_n": None,
                          "overhead": False, "modes": modes,
                          "reference": {"status": "ok", "backend": "c", "n": 3, "fd": [], "fd_ok": True}}
    meta = report.machine_info()
    meta.update(preset="quick", command="python -m bench --quick", duration_s=1.0, seed=0,
                modes=["float", "deltaad-c", "deltaad-python", "deltaad-c-fwd", "naive-delta",
                       "torch", "jax"],
                settings={"budget": 0.15, "reps": 5, "min_time": 0.01, "warmups": 1,
                          "malloc": "steady", "abort_factor": 2.0})
    return report.analyse({"meta": meta, "programs": programs})


def test_headline_numbers():
    from bench import report

    h = report.headline(_synthetic_results())
    row = h["rows"][0]
    assert row["base"] == "deltaad-c" and row["ops"] == 100_000
    assert row["ratio"] == pytest.approx(2.5) and row["fwd_ratio"] == pytest.approx(2.0)
    assert row["pure_ratio"] == pytest.approx(40.0)
    assert row["ns_per_op"] == pytest.approx(25.0) and row["bytes_per_op"] == pytest.approx(24.0)
    assert row["peers"] == {"torch": pytest.approx(4.0)}  # torch's time ÷ deltaad's
    assert h["peers"] == ["torch"] and list(h["missing"]) == ["jax"]


def test_report_opens_with_the_headline_and_speaks_to_users():
    from bench import report

    results = _synthetic_results()
    md = report.markdown(results, {}, "not drawn (--no-plots)")
    first = md.index("## ")
    assert md[first:].startswith("## Headline")
    assert "| program | operations | gradient ÷ float |" in md and "torch ÷ deltaad" in md
    assert "Peers not measured: jax (not installed)" in md
    assert "Plots: not drawn (--no-plots)." in md
    for team_word in ("§7", "DESIGN", "issue", "budget verdict"):
        assert team_word not in md, team_word
    text = report.terminal(results)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "== headline" in text and "jax (not installed)" in text


def test_plots_one_png_per_program(tmp_path):
    pytest.importorskip("matplotlib")
    from bench import report

    results = _synthetic_results()
    paths = report.plots(results, str(tmp_path))
    assert sorted(paths) == sorted(results["programs"])
    for path in paths.values():
        with open(path, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
        assert os.path.getsize(path) > 20_000  # three panels with lines, not an empty canvas


def test_compiled_arrays_bench_runs(capsys):
    from bench import compiled_arrays

    compiled_arrays.main(["--reps", "1", "smallops"])
    out = capsys.readouterr().out
    assert "smallops" in out and "replay" in out


@pytest.mark.parametrize("name", sorted(__import__("bench.userstyle", fromlist=["PROGRAMS"]).PROGRAMS))
def test_userstyle_programs_differentiate_as_central_differences(name):
    """bench.userstyle's programs (math, ints, numpy scalars, small numpy programs, as users
    write them): each gradient agrees with central differences on a few coordinates (the
    suite only times them)."""
    from bench import userstyle

    f, x = userstyle.PROGRAMS[name]
    copy = np.array if isinstance(x, np.ndarray) else list  # (the np_ programs take arrays)
    g = deltaad.grad(f)(copy(x))
    for i in sorted({0, len(x) // 2, len(x) - 1}):
        h = 1e-6 * max(1.0, abs(x[i]))
        up, down = copy(x), copy(x)
        up[i] += h
        down[i] -= h
        fd = (f(up) - f(down)) / (2 * h)
        assert math.isclose(g[i], fd, rel_tol=1e-4, abs_tol=1e-6), (name, i, g[i], fd)
