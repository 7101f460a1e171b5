"""``rtcc suite``: RFC 8867 / RFC 8869 cases, RFC 8868 metrics, report, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import rtcc
from rtcc.cli import main
from rtcc.suite import SuiteError, parse_controllers, run_suite
from rtcc.suite.cases import CASES, MEDIA_CONTROLLERS, Plan
from rtcc.suite.metrics import convergence_time, jain, run_metrics

ROOT = Path(__file__).resolve().parents[2]


def test_controller_names_are_the_cores() -> None:
    # The suite takes its list from the native module; every name runs.
    text = (ROOT / "crates/rtcc-core/src/cc/mod.rs").read_text()
    block = re.search(r"pub const NAMES: &'static \[&'static str\] = &\[(.*?)\];", text, re.S)
    assert block is not None
    assert tuple(re.findall(r'"([a-z0-9-]+)"', block.group(1))) == MEDIA_CONTROLLERS


def test_jain_by_hand() -> None:
    assert jain([700.0, 700.0]) == pytest.approx(1.0)
    assert jain([1.0, 0.0]) == pytest.approx(0.5)
    assert jain([1500.0, 500.0]) == pytest.approx(0.8)
    assert jain([]) is None


def test_convergence_time_by_hand() -> None:
    times = [i / 10 for i in range(200)]
    # Reaches the 1000 kbps share at 3 s and stays: converged after 3 s.
    rates = [0.0 if t < 3 else 1000.0 for t in times]
    ref: list[float | None] = [1000.0] * len(times)
    assert convergence_time(times, rates, ref, 0.0, 20.0) == pytest.approx(3.0)
    # Within ±20 % counts (900 kbps), a 2 s visit of the band does not.
    rates = [900.0 if 3 <= t < 5 else (500.0 if t < 8 else 1150.0) for t in times]
    assert convergence_time(times, rates, ref, 0.0, 20.0) == pytest.approx(8.0)
    # Never inside: None.
    assert convergence_time(times, [400.0] * len(times), ref, 0.0, 20.0) is None
    # Measured from the event, not from 0.
    rates = [1000.0] * len(times)
    assert convergence_time(times, rates, ref, 10.0, 20.0) == pytest.approx(0.0)


def _two_fixed(a_kbps: int, b_kbps: int, share_kbps: float) -> Plan:
    scenario: dict[str, Any] = {
        "name": "two-fixed",
        "duration": "12s",
        "link": [{"name": "bottleneck", "rate": "4Mbps", "delay": "20ms", "queue": "300ms"}],
        "flow": [
            {
                "name": name,
                "kind": "media",
                "cc": "fixed",
                "cc_config": {"bitrate": f"{rate}kbps"},
            }
            for name, rate in (("a", a_kbps), ("b", b_kbps))
        ],
    }

    def share(t: float, cap: float | None) -> float:
        return share_kbps

    return Plan(
        scenario,
        ("a", "b"),
        {"a": share, "b": share},
        (0.0,),
        (2.0, 12.0),
        ("a", "b"),
        "bottleneck",
    )


def test_metrics_of_equal_and_unequal_flows() -> None:
    # Two equal fixed-rate flows well below the capacity: Jain's index 1,
    # nothing lost, the rate each was given, converged at once.
    plan = _two_fixed(1000, 1000, 1000.0)
    m = run_metrics(rtcc.run(plan.scenario, seed=1), plan)
    assert m["jain"] == pytest.approx(1.0, abs=0.01)
    assert m["loss"] == 0.0
    # Payload at 1 Mbps on the wire less 48 B of 1248: about 962 kbps.
    assert m["rate_kbps"] == pytest.approx(961.5, rel=0.03)
    assert m["unconverged"] == 0
    assert m["convergence_events"] == 2
    assert m["convergence_s"] < 1.5
    assert m["rate_cv"] < 0.1
    # 1500 against 500 kbps: Jain's (2000)² / (2 · (1500² + 500²)) = 0.8.
    plan = _two_fixed(1500, 500, 1000.0)
    m = run_metrics(rtcc.run(plan.scenario, seed=1), plan)
    assert m["jain"] == pytest.approx(0.8, abs=0.01)
    # Neither is within ±20 % of the 1000 kbps share: neither converges.
    assert m["unconverged"] == 2
    assert m["convergence_s"] is None


def test_a_bad_controller_scores_worse_on_5_1() -> None:
    # RFC 8867 §5.1 at a quarter of its timeline: GCC adapts, a fixed 2 Mbps
    # flow overloads the 1 / 0.6 Mbps phases and fills the 300 ms queue.
    case = next(c for c in CASES if c.id == "5.1")
    assert case.build is not None
    good = case.build("gcc", 0.25, 1)
    bad = case.build("fixed", 0.25, 1)
    bad.scenario["flow"][0]["cc_config"] = {"bitrate": "2Mbps"}
    mg = run_metrics(rtcc.run(good.scenario, seed=1), good, scale=0.25)
    mb = run_metrics(rtcc.run(bad.scenario, seed=1), bad, scale=0.25)
    assert mb["loss"] > 0.2 > mg["loss"]
    assert mb["owd_ms"] > 250 > mg["owd_ms"]
    assert mb["queue_ms"] > 2 * mg["queue_ms"]


def test_parse_controllers() -> None:
    assert parse_controllers("gcc, bbr,gcc") == ("gcc", "bbr")
    assert parse_controllers(None, quick=True) == ("gcc", "bbr")
    with pytest.raises(SuiteError, match="unknown controller 'reno'"):
        parse_controllers("gcc,reno")


def test_every_case_builds_a_valid_scenario() -> None:
    # Each expressible case's scenario parses and runs briefly (a tenth of
    # its timeline) with every default controller's name.
    for case in CASES:
        if case.build is None:
            assert case.reason
            continue
        plan = case.build("copa", 0.02, 1)
        assert set(plan.media) <= {f["name"] for f in plan.scenario["flow"]}
        r = rtcc.run(plan.scenario, seed=1)
        assert {f["name"] for f in r.summary["flows"]} >= set(plan.media), case.id


@pytest.mark.parametrize("suite", ["rfc8867", "rfc8869"])
def test_quick_suite_writes_its_report(
    suite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["suite", suite, "--quick", "--out", str(tmp_path), "--workers", "2"]) == 0
    folder = tmp_path / suite
    page = (folder / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" in page
    assert "cdn." not in page.split("<body>")[1]
    md = (folder / "results.md").read_text()
    assert "| gcc |" in md
    assert "| bbr |" in md
    metrics = json.loads((folder / "metrics.json").read_text())
    quick = [c.id for c in CASES if c.suite == suite and c.quick and c.build is not None]
    assert sorted(metrics["cases"]) == sorted(quick)
    for case_id in quick:
        assert f'id="case-{case_id.replace(".", "-")}"' in page
        for cc in ("gcc", "bbr"):
            (run,) = metrics["cases"][case_id][cc]
            assert run["rate_kbps"] > 0, (case_id, cc)
            run_dir = folder / "runs" / case_id.replace(".", "-") / cc / "seed-1"
            assert (run_dir / "summary.json").is_file()
            # The scenario written beside the run replays it exactly.
            if case_id == "5.1" and cc == "gcc":
                again = rtcc.run(run_dir / "scenario.toml", seed=1)
                first = json.loads((run_dir / "summary.json").read_text())
                assert again.summary["flows"] == first["flows"]
    assert "report:" in capsys.readouterr().out


def test_not_expressible_cases_are_listed(tmp_path: Path) -> None:
    res = run_suite("rfc8867", quick=False, ccs="gcc", out=tmp_path, workers=2)
    assert {c.id for c in res.skipped} == {"6.1", "6.2"}
    assert "Not expressible" in res.markdown.read_text()


def test_bad_controller_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["suite", "rfc8867", "--cc", "gcc,nope", "--quick"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rtcc: error: --cc: unknown controller 'nope'")
    assert "\n" not in err


def test_short_tcp_flows_follow_rfc8868() -> None:
    # RFC 8867 §5.7 with RFC 8868 §5.2's model: ten sequences of 30-50 KB
    # downloads, exponential idle times of mean 10 s, two starting at 0 s.
    case = next(c for c in CASES if c.id == "5.7")
    assert case.build is not None
    flows = case.build("gcc", 1.0, 3).scenario["flow"]
    downloads = [f for f in flows if f["kind"] == "tcp"]
    sizes = [int(f["size"].removesuffix("B")) for f in downloads]
    assert all(30_000 <= s <= 50_000 for s in sizes)
    starts = [int(f["start"].removesuffix("ms")) / 1000 for f in downloads]
    assert sum(1 for f, t in zip(downloads, starts, strict=True) if t == 0.0) == 2
    # 300 s at one download per ~10 s per sequence: about 300 in all.
    assert 200 < len(downloads) < 400
    assert all(t < 299 for t in starts)
    # Drawn from the seed: the same seed, the same downloads; another, others.
    assert case.build("gcc", 1.0, 3).scenario["flow"] == flows
    assert case.build("gcc", 1.0, 4).scenario["flow"] != flows


def test_paused_flow_is_silent_in_5_8() -> None:
    # RFC 8867 §5.8 at a quarter of its timeline: the second flow pauses
    # from 10 to 15 s and comes back.
    import polars as pl

    case = next(c for c in CASES if c.id == "5.8")
    assert case.build is not None
    plan = case.build("gcc", 0.25, 1)
    result = rtcc.run(plan.scenario, seed=1)
    ts = result.timeseries

    def mean(flow: str, a: float, b: float) -> float:
        rows = ts.filter(
            (pl.col("flow") == flow) & (pl.col("time_s") >= a) & (pl.col("time_s") < b)
        )
        return float(rows["goodput_kbps"].mean())  # type: ignore[arg-type]

    assert mean("media2", 10.5, 15.0) == 0.0
    assert mean("media2", 20.0, 29.0) > 500.0
    # It resumes with a key frame, the frame ids running on without a gap.
    frames = result.frames.filter(pl.col("flow") == "media2").sort("frame_id")
    after = frames.filter(pl.col("capture_ms") >= 15000.0).row(0, named=True)
    before = frames.filter(pl.col("capture_ms") < 10000.0).row(-1, named=True)
    assert after["type"] == "I"
    assert after["frame_id"] == before["frame_id"] + 1
