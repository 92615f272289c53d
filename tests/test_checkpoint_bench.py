"""The benchmark's checkpointed-loop program and modes: right gradients, the report's verdict
section, and the memory study's pieces (its formula against the schedule module)."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import deltaad  # noqa: E402
from bench import checkpointing, report, worker  # noqa: E402
from bench.modes import MODES  # noqa: E402
from bench.programs import PROGRAMS, make_input  # noqa: E402
from deltaad import schedules  # noqa: E402


def test_odeloop_reference_and_checkpointed_modes_agree():
    ref = worker.run_reference({"program": "odeloop"}, emit=lambda line: None)
    assert ref["status"] == "ok" and ref["fd_ok"] and ref["ops_ok"], ref
    prog = PROGRAMS["odeloop"]
    names = ("deltaad-c-ckpt10", "deltaad-c-ckpt30", "deltaad-c-ckptauto")
    if deltaad.backend != "c":
        for name in names:
            with pytest.raises(Exception, match="backend"):
                MODES[name].prepare()
        return
    base = MODES["deltaad-c"]
    base.prepare()
    for n in (prog.check_n, 40):
        xs = make_input(prog, n, 0)
        plain = base.runner(prog, n, None)(xs)
        for name in names:
            mode = MODES[name]
            mode.prepare()
            got = mode.runner(prog, n, None)(xs)
            if n == prog.check_n:
                ok, err, detail = worker.compare("reverse", got, ref)
                assert ok, (name, detail)
            assert got == plain  # the same bits as the plain loop


def test_recomputations_formula_is_revolves():
    for n in (1, 2, 10, 1000, 12345):
        for c in (1, 3, 10, 30):
            expect = 0 if n <= 1 else schedules.optimal_advances(n, min(c, n))
            assert checkpointing.recomputations(n, c) == expect
            assert report._advances(n, c) == expect


def test_report_checks_time_and_memory_of_checkpointed_modes():
    def pts(ratio, mem):
        return {"points": [{"n": n, "ops": 54 * n + 1, "median": 1e-3 * ratio * n,
                            "ratio": ratio, "mem_peak": mem(n)} for n in (1000, 2000, 4000)]}

    results = {"programs": {"odeloop": {"kind": "loop", "modes": {
        "deltaad-c": pts(2.0, lambda n: 1300 * n),
        "deltaad-c-ckpt10": pts(10.0, lambda n: 200_000),
        "deltaad-c-ckpt30": pts(99.0, lambda n: 200_000 + n)}}}}
    for entry in results["programs"].values():
        for mres in entry["modes"].values():
            mres["summary"] = report.summarise(mres)
    rows = report.checkpoint_checks(results)
    by = {(r["mode"], r["n"]): r for r in rows}
    r = by[("deltaad-c-ckpt10", 1000)]
    assert r["bound"] == pytest.approx((schedules.optimal_advances(1000, 10) / 1000 + 1) * 2.0 * 1.1)
    assert r["time_ok"] and r["mem_flat"]
    assert not by[("deltaad-c-ckpt30", 4000)]["time_ok"]
    md = "\n".join(report._checkpoint_section(results | {"checkpointing": rows}))
    assert "OVER" in md and "ok" in md


def test_memory_study_point_and_verdicts(tmp_path):
    if deltaad.backend != "c":
        pytest.skip("the memory study measures the compiled core")
    p = checkpointing.point("c=10", 300, traced=True)
    assert p["recomputations"] == schedules.optimal_advances(300, 10)
    assert p["traced_peak"] > 0 and p["ratio"] > 0 and p["rss_process"] > 0
    plain = checkpointing.point("plain", 300, traced=True)
    assert plain["grad"] == p["grad"]
    by, verdicts = checkpointing.analyse([p, plain])
    assert "bound" in by["c=10"][300]
    md = checkpointing.markdown(by, verdicts, {"command": "x", "date": "d", "duration": 1.0})
    assert "c=10" in md and "plain" in md
