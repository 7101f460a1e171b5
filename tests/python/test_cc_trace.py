"""`cc_trace.csv`: the controllers' state variables, from the API, the CLI and the report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import rtcc
from rtcc import plot
from rtcc.report import ReportError, load_run

from .conftest import tiny_scenario
from .test_cli import rtcc_cli

TRACE_COLUMNS = ["time_s", "flow", "variable", "value"]

# What GCC reports at every sample (docs/algorithms/gcc.md, "What it traces").
GCC_ALWAYS = {
    "trendline_slope",
    "modified_trend_ms",
    "threshold_ms",
    "usage",
    "rate_control",
    "delay_based_kbps",
    "loss_based_kbps",
    "loss_fraction",
    "probing",
    "alr",
}


def test_trace_is_off_by_default(tiny: dict[str, Any]) -> None:
    result = rtcc.run(tiny, seed=1)
    assert result.cc_trace is None
    assert not (result.out_dir / "cc_trace.csv").exists()


def test_run_with_cc_trace_writes_the_long_format(tiny: dict[str, Any]) -> None:
    result = rtcc.run(tiny, seed=1, cc_trace=True)
    trace = result.cc_trace
    assert isinstance(trace, pl.DataFrame)
    assert trace.columns == TRACE_COLUMNS
    assert trace.schema["value"] == pl.Float64
    # The TCP flow has no controller of the core: only the video flow.
    assert set(trace["flow"].unique()) == {"video"}
    assert set(trace["variable"].unique()) >= GCC_ALWAYS
    # Every variable once per sample, at the timeseries instants.
    per_sample = trace.group_by("time_s", "variable").len()
    assert per_sample["len"].max() == 1
    ts_times = set(result.timeseries.filter(pl.col("flow") == "video")["time_s"].to_list())
    assert set(trace["time_s"].unique().to_list()) == ts_times
    # Codes stay codes.
    assert set(trace.filter(pl.col("variable") == "usage")["value"].unique()) <= {-1.0, 0.0, 1.0}


def test_trace_changes_no_other_output(tiny: dict[str, Any], tmp_path: Path) -> None:
    on = rtcc.run(tiny, seed=3, out=tmp_path / "on", cc_trace=True)
    off = rtcc.run(tiny, seed=3, out=tmp_path / "off")
    for name in ("summary.json", "timeseries.csv", "frames.csv"):
        assert (on.out_dir / name).read_bytes() == (off.out_dir / name).read_bytes(), name


def test_scenario_output_key_turns_it_on(tiny: dict[str, Any]) -> None:
    tiny["output"] = {"cc_trace": True}
    result = rtcc.run(tiny, seed=1)
    assert result.cc_trace is not None
    assert result.cc_trace.height > 0


def test_bad_scenario_value_names_the_key(tiny: dict[str, Any]) -> None:
    tiny["output"] = {"cc_trace": "yes"}
    with pytest.raises(rtcc.ScenarioError, match="cc_trace"):
        rtcc.run(tiny, seed=1)


def test_cli_cc_trace_flag(tiny_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = rtcc_cli("run", tiny_file, "--out", out, "--cc-trace")
    assert proc.returncode == 0, proc.stderr
    lines = (out / "cc_trace.csv").read_text().splitlines()
    assert lines[0] == ",".join(TRACE_COLUMNS)
    assert any(line.split(",")[1:3] == ["video", "usage"] for line in lines[1:])
    plain = tmp_path / "plain"
    assert rtcc_cli("run", tiny_file, "--out", plain).returncode == 0
    assert not (plain / "cc_trace.csv").exists()


@pytest.fixture(scope="module")
def traced_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A traced run (GCC and Camel) and an untraced one."""
    root = tmp_path_factory.mktemp("traced")
    scenario = tiny_scenario()
    scenario["flow"][1] = {"name": "camel", "kind": "media", "cc": "camel"}
    traced = rtcc.run(scenario, seed=1, out=root / "traced", cc_trace=True)
    plain = rtcc.run(tiny_scenario(), seed=1, out=root / "plain")
    return [traced.out_dir, plain.out_dir]


def test_report_draws_one_panel_per_flow_and_variable(
    traced_runs: list[Path], tmp_path: Path
) -> None:
    figures = tmp_path / "figs"
    page = rtcc.report(traced_runs, tmp_path / "r.html", png_dir=figures).read_text()
    results = [load_run(d) for d in traced_runs]
    variables = plot.cc_trace_variables(results)
    assert [flow for flow, _ in variables] == ["video", "camel"]
    # A controller's variables keep its reporting order, even those that
    # appear only after the first samples (Camel's gradient needs samples).
    camel = dict(variables)["camel"]
    assert camel[:7] == [
        "bw_avg_kbps",
        "frame_bw_kbps",
        "d_min_ms",
        "bdp_bytes",
        "gamma",
        "gradient",
        "burst_length_bytes",
    ]
    expected = [(flow, v) for flow, vs in variables for v in vs]
    assert ("camel", "gamma") in expected
    assert ("video", "usage") in expected
    headings = re.findall(r"<h3>Controller internals: ([^:<]+): ([^<]+)</h3>", page)
    assert headings == expected
    # One figure per run in each row; the untraced run says why it is empty.
    for k in range(len(expected)):
        assert f'id="fig-cc_trace-{k}-0"' in page
        assert f'id="fig-cc_trace-{k}-1"' in page
    assert "no cc_trace.csv (run with --cc-trace)" in page
    # The traced panel carries the file's values.
    trace = results[0].cc_trace
    assert trace is not None
    gamma = plot.cc_trace_panels("camel", "gamma", results)
    rows = trace.filter((pl.col("flow") == "camel") & (pl.col("variable") == "gamma"))
    assert list(gamma[0].traces[0].y) == [round(v, 3) for v in rows["value"].to_list()]
    assert gamma[1].traces == []
    # PNG/SVG: one figure per traced flow.
    for flow in ("video", "camel"):
        png = figures / f"cc_trace-{flow}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", flow
        assert (figures / f"cc_trace-{flow}.svg").exists(), flow


def test_report_without_traces_has_no_trace_rows(traced_runs: list[Path], tmp_path: Path) -> None:
    page = rtcc.report(traced_runs[1], tmp_path / "r.html").read_text()
    assert "Controller internals" not in page
    assert "fig-cc_trace" not in page


def test_broken_trace_is_named(traced_runs: list[Path], tmp_path: Path) -> None:
    d = tmp_path / "broken"
    d.mkdir()
    for name in ("summary.json", "timeseries.csv", "frames.csv"):
        (d / name).write_bytes((traced_runs[0] / name).read_bytes())
    (d / "cc_trace.csv").write_text("time_s,flow,variable,value\n0.1,video,usage,not-a-number\n")
    with pytest.raises(ReportError, match=r"cc_trace\.csv"):
        load_run(d)
