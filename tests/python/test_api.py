"""rtcc.run and Result: the public Python API over the simulator."""

from __future__ import annotations

import gc
import importlib.metadata
import json
import os
import signal
import threading
import time
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import rtcc
from rtcc import _native

FRAME_COLUMNS = [
    "flow",
    "frame_id",
    "type",
    "size_bytes",
    "capture_ms",
    "complete_ms",
    "displayed_ms",
    "delay_ms",
    "dropped",
    "level",
    "psnr_db",
]
TIMESERIES_COLUMNS = [
    "time_s",
    "flow",
    "send_rate_kbps",
    "goodput_kbps",
    "target_kbps",
    "estimate_kbps",
    "cwnd_bytes",
    "srtt_ms",
]


def test_dict_scenario_returns_summary_with_every_flow(tiny: dict[str, Any]) -> None:
    result = rtcc.run(tiny, seed=3)
    summary = result.summary
    assert summary["scenario"] == "tiny"
    assert summary["seed"] == 3
    assert result.seed == 3
    assert summary["duration_s"] == pytest.approx(3.0)
    assert [f["name"] for f in summary["flows"]] == ["video", "bulk"]
    assert [f["kind"] for f in summary["flows"]] == ["media", "tcp"]
    assert summary["links"][0]["name"] == "bottleneck"
    video = summary["flows"][0]
    assert video["goodput_kbps"] > 0.0
    assert 0.0 < summary["fairness"]["jain"] <= 1.0


def test_summary_json_on_disk_matches_result(tiny: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "nested" / "out"
    result = rtcc.run(tiny, seed=1, out=out)
    assert result.out_dir == out
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == result.summary


def test_dataframes_have_the_documented_columns(tiny: dict[str, Any]) -> None:
    result = rtcc.run(tiny, seed=1)
    frames = result.frames
    assert isinstance(frames, pl.DataFrame)
    assert frames.columns == FRAME_COLUMNS
    assert frames.height > 0
    assert set(frames["flow"].unique()) == {"video"}

    ts = result.timeseries
    assert isinstance(ts, pl.DataFrame)
    assert ts.columns[: len(TIMESERIES_COLUMNS)] == TIMESERIES_COLUMNS
    # Link queue columns follow the per-flow ones.
    assert len(ts.columns) > len(TIMESERIES_COLUMNS)
    assert set(ts["flow"].unique()) <= {"video", "bulk"}
    # Types are fixed, even for columns that are empty for every row.
    assert ts.schema["cwnd_bytes"] == pl.Int64
    assert ts.schema["target_kbps"] == pl.Float64
    # Columns added later go at the end, so that positions never move.
    assert ts.columns[-3:] == ["layer_level", "protected_layers", "psnr_db"]
    assert ts.schema["avail_kbps"] == pl.Float64
    assert frames.schema["displayed_ms"] == pl.Float64
    # Layered flows only; typed all the same.
    assert frames.schema["level"] == pl.Int64
    assert ts.schema["layer_level"] == pl.Int64
    assert ts.schema["protected_layers"] == pl.Int64
    assert frames["level"].null_count() == frames.height
    assert frames.schema["psnr_db"] == pl.Float64
    assert ts.schema["psnr_db"] == pl.Float64
    assert frames["psnr_db"].null_count() == frames.height
    assert ts["psnr_db"].null_count() == ts.height
    last = ts["time_s"].max()
    assert isinstance(last, int | float)
    assert last <= 3.0 + 1e-9
    # Loaded once, then cached.
    assert result.frames is frames


def test_same_seed_gives_identical_outputs(tiny: dict[str, Any], tmp_path: Path) -> None:
    a = rtcc.run(tiny, seed=7, out=tmp_path / "a")
    b = rtcc.run(tiny, seed=7, out=tmp_path / "b")
    assert a.summary == b.summary
    for name in ("summary.json", "timeseries.csv", "frames.csv"):
        assert (a.out_dir / name).read_bytes() == (b.out_dir / name).read_bytes(), name


def test_seed_changes_the_run(tiny: dict[str, Any]) -> None:
    # The link drops 2% of packets at random: another seed, other losses.
    assert rtcc.run(tiny, seed=1).summary != rtcc.run(tiny, seed=2).summary


def test_scenario_seed_is_used_without_override(tiny: dict[str, Any]) -> None:
    tiny["seed"] = 11
    assert rtcc.run(tiny).seed == 11


def test_path_str_and_pathlike_give_the_same_run(tiny_file: Path) -> None:
    assert rtcc.run(tiny_file, seed=4).summary == rtcc.run(str(tiny_file), seed=4).summary


def test_dict_coerces_timedelta_and_path(tiny: dict[str, Any]) -> None:
    as_text = rtcc.run(tiny, seed=5).summary
    tiny["duration"] = timedelta(seconds=3)
    tiny["link"][0]["delay"] = timedelta(milliseconds=20)
    assert rtcc.run(tiny, seed=5).summary == as_text


def test_temporary_output_lives_as_long_as_the_result(tiny: dict[str, Any]) -> None:
    result = rtcc.run(tiny, seed=1)
    out_dir = result.out_dir
    assert (out_dir / "frames.csv").is_file()
    del result
    gc.collect()
    assert not out_dir.exists()


def test_bad_dict_value_names_origin_key_and_value(tiny: dict[str, Any]) -> None:
    tiny["link"][0]["rate"] = "3Mbs"
    with pytest.raises(rtcc.ScenarioError) as info:
        rtcc.run(tiny)
    message = str(info.value)
    assert message.startswith("<dict>:")
    assert "rate" in message
    assert "3Mbs" in message
    assert "\n" not in message
    assert isinstance(info.value, ValueError)


def test_unknown_key_is_an_error(tiny: dict[str, Any]) -> None:
    tiny["flow"][0]["colour"] = "blue"
    with pytest.raises(rtcc.ScenarioError, match="colour"):
        rtcc.run(tiny)


def test_value_toml_cannot_hold_is_a_scenario_error(tiny: dict[str, Any]) -> None:
    tiny["link"][0]["jitter"] = None
    with pytest.raises(rtcc.ScenarioError, match="<dict>"):
        rtcc.run(tiny)


def test_missing_scenario_file_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(rtcc.ScenarioError, match=r"nowhere\.toml"):
        rtcc.run(tmp_path / "nowhere.toml")


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_seed_out_of_range_is_rejected(tiny: dict[str, Any], seed: int) -> None:
    with pytest.raises(rtcc.ScenarioError, match="seed"):
        rtcc.run(tiny, seed=seed)


def test_wrong_argument_types_raise_type_error(tiny: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        rtcc.run(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        rtcc.run(tiny, seed="1")  # type: ignore[arg-type]


def test_progress_reports_simulated_time(tiny: dict[str, Any]) -> None:
    calls: list[tuple[float, float]] = []
    rtcc.run(tiny, seed=1, progress=lambda t, d: calls.append((t, d)))
    assert len(calls) >= 2
    times = [t for t, _ in calls]
    assert times == sorted(times)
    assert all(d == pytest.approx(3.0) for _, d in calls)
    assert 0.0 < times[-1] <= 3.0 + 1e-9


class _Stop(Exception):
    pass


def test_exception_in_progress_stops_the_run_and_propagates(tiny: dict[str, Any]) -> None:
    calls: list[float] = []

    def stop_at_first(t: float, d: float) -> None:
        calls.append(t)
        raise _Stop(f"stopped at {t}")

    with pytest.raises(_Stop, match="stopped at"):
        rtcc.run(tiny, seed=1, progress=stop_at_first)
    assert len(calls) == 1


def test_keyboard_interrupt_in_progress_propagates(tiny: dict[str, Any]) -> None:
    def interrupt(t: float, d: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rtcc.run(tiny, seed=1, progress=interrupt)
    # The module is still usable after an aborted run.
    assert rtcc.run(tiny, seed=1).summary["flows"]


def test_native_run_needs_exactly_one_source(tiny_file: Path) -> None:
    with pytest.raises(_native.ScenarioError, match="exactly one"):
        _native.run()
    with pytest.raises(_native.ScenarioError, match="exactly one"):
        _native.run(scenario_path=str(tiny_file), toml_text="duration = '1s'")


def test_native_run_returns_summary_json(tiny_file: Path) -> None:
    summary = json.loads(_native.run(scenario_path=str(tiny_file), seed=9))
    assert summary["seed"] == 9


def test_native_origin_names_text_in_errors() -> None:
    with pytest.raises(_native.ScenarioError, match=r"^my-origin"):
        _native.run(toml_text="bogus_key = 1\n", origin="my-origin")


def test_scenario_error_is_the_native_type() -> None:
    assert rtcc.ScenarioError is _native.ScenarioError
    assert issubclass(rtcc.ScenarioError, ValueError)


def test_version_matches_the_installed_distribution() -> None:
    assert rtcc.__version__ == _native.version()
    assert rtcc.__version__ == importlib.metadata.version("rtcc")


def test_ctrl_c_stops_a_run_without_a_callback(tiny: dict[str, Any]) -> None:
    # A day of simulated time takes several seconds (about 9 on 2 cores; an
    # hour took 0.36 s, close enough to the 0.2 s before the signal that the
    # run sometimes finished first); the binding polls for signals about once
    # per simulated second.
    tiny["duration"] = "24h"
    timer = threading.Timer(0.2, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            rtcc.run(tiny, seed=1)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 60.0


def test_gil_is_released_while_running(tiny: dict[str, Any]) -> None:
    ticks = 0
    running = threading.Event()
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        running.set()
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    tiny["duration"] = "10min"
    worker = threading.Thread(target=count)
    worker.start()
    running.wait()
    before = ticks
    started = time.monotonic()
    try:
        rtcc.run(tiny, seed=1)
    finally:
        elapsed = time.monotonic() - started
        during = ticks - before
        done.set()
        worker.join()
    # Holding the GIL for the run would leave the worker at most one tick.
    assert elapsed > 0.05, f"run too short ({elapsed:.3f} s) to observe the worker"
    assert during >= 10, (during, elapsed)


def test_a_dict_cc_config_holding_only_a_table_runs() -> None:
    # tomli_w writes `cc_config = {"plan": {...}}` as an implicit table
    # (`[flow.cc_config.plan]` alone), which the toml crate cannot read into
    # the loader's spanned table; the dict path writes the parent's header.
    from rtcc._api import _to_toml

    scenario = {
        "name": "plan-from-dict",
        "duration": "3s",
        "topology": {"kind": "single"},
        "link": [{"name": "l", "rate": "2Mbps", "delay": "10ms", "queue": "200ms"}],
        "flow": [
            {
                "name": "video",
                "kind": "media",
                "cc": "fixed",
                "cc_config": {"plan": {"layers": 5, "protected": 5}},
                "encoder": {"kind": "svc", "layers": 10, "layer_rate": "70kbps", "fps": 30},
            }
        ],
    }
    text = _to_toml(scenario)
    assert "[flow.cc_config]\n[flow.cc_config.plan]" in text
    assert tomllib.loads(text) == scenario
    flow = rtcc.run(scenario, seed=1).summary["flows"][0]
    assert flow.get("mean_protected_layers") == 5.0
