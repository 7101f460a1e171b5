"""``rtcc.sweep`` and ``rtcc sweep``: grids, backends, resumption, failures."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import tomli_w

import rtcc
from rtcc.sweep import _load_grid

from .conftest import tiny_scenario
from .test_cli import assert_one_line_error, rtcc_cli

# 2 rates x 2 controllers x 2 seeds = 8 runs of the 3 s tiny scenario.
GRID_AXES = {"link.0.rate": ["1Mbps", "2Mbps"], "flow.0.cc": ["gcc", "fixed"]}


def eight_run_grid() -> dict[str, Any]:
    return {"base": tiny_scenario(), "grid": dict(GRID_AXES), "seeds": 2}


def stats(out: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((out / "sweep.json").read_text())
    return result


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, Path]:
    out = tmp_path_factory.mktemp("local")
    table = rtcc.sweep(eight_run_grid(), out=out, backend="local", jobs=2, progress=False)
    return table, out


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    # One Ray instance for the module: it takes seconds to start.
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed; `make venv` installs it with the dev extra"
    )
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_eight_runs_one_row_per_run_and_flow(local_sweep: tuple[pl.DataFrame, Path]) -> None:
    table, out = local_sweep
    assert table.height == 16  # 8 runs x 2 flows
    assert table["run_id"].n_unique() == 8
    assert table["status"].to_list() == ["ok"] * 16
    assert table["error"].null_count() == 16
    assert table["run_id"].to_list() == sorted(table["run_id"].to_list())
    assert sorted(set(table["seed"].to_list())) == [1, 2]
    assert sorted(set(table["link.0.rate"].to_list())) == ["1Mbps", "2Mbps"]
    assert sorted(set(table["flow.0.cc"].to_list())) == ["fixed", "gcc"]
    for column in ("frame_delay_ms_mean", "owd_ms_p95", "link_bottleneck_drops", "fairness_jain"):
        assert column in table.columns, column
    video = table.filter(pl.col("flow") == "video")
    assert video["cc"].to_list() == video["flow.0.cc"].to_list()
    # A media metric is null for the TCP flow, not zero.
    assert table.filter(pl.col("flow") == "bulk")["frame_delay_ms_mean"].null_count() == 8
    # The seed matters: same parameters, different seeds, different outcomes.
    gcc_2m = video.filter((pl.col("flow.0.cc") == "gcc") & (pl.col("link.0.rate") == "2Mbps"))
    assert gcc_2m.height == 2
    assert gcc_2m["goodput_kbps"][0] != gcc_2m["goodput_kbps"][1]

    assert pl.read_parquet(out / "results.parquet").equals(table)
    for run_id in table["run_id"].unique():
        run_dir = out / "runs" / run_id
        for name in ("summary.json", "timeseries.csv", "frames.csv", "params.json"):
            assert (run_dir / name).is_file(), run_dir / name
        params = json.loads((run_dir / "params.json").read_text())
        assert params["run_id"] == run_id
        # The scenario written next to the results replays the run exactly.
        replay = rtcc.run(run_dir / "scenario.toml", seed=params["seed"])
        assert replay.summary == json.loads((run_dir / "summary.json").read_text())
        break
    assert stats(out)["executed"] == 8


def test_local_and_ray_give_identical_tables(
    local_sweep: tuple[pl.DataFrame, Path], ray_instance: None, tmp_path: Path
) -> None:
    local, _ = local_sweep
    remote = rtcc.sweep(eight_run_grid(), out=tmp_path, backend="ray", progress=False)
    assert remote.equals(local)
    assert stats(tmp_path)["backend"] == "ray"
    assert (tmp_path / "runs" / local["run_id"][0] / "timeseries.csv").is_file()


def test_issue_grid_2x3x2_with_both_backends(ray_instance: None, tmp_path: Path) -> None:
    """The done-when of issue 4: a 2 x 3 x 2-seed grid, local and Ray, one Parquet table."""
    grid = Path(__file__).resolve().parents[2] / "scenarios" / "sweeps" / "cc-vs-loss.toml"
    local = rtcc.sweep(grid, out=tmp_path / "local", progress=False)
    remote = rtcc.sweep(grid, out=tmp_path / "ray", backend="ray", progress=False)
    assert local.height == 12  # one media flow per run
    assert local["status"].to_list() == ["ok"] * 12
    assert remote.equals(local)
    assert pl.read_parquet(tmp_path / "ray" / "results.parquet").equals(remote)
    frame = local.to_pandas()
    assert frame.shape == local.shape


def test_resumed_sweep_repeats_no_work(
    local_sweep: tuple[pl.DataFrame, Path], tmp_path: Path
) -> None:
    first, done = local_sweep
    out = tmp_path / "copy"
    shutil.copytree(done, out)
    summaries = sorted((out / "runs").glob("*/summary.json"))
    mtimes = [p.stat().st_mtime_ns for p in summaries]

    start = time.perf_counter()
    again = rtcc.sweep(eight_run_grid(), out=out, jobs=2, progress=False)
    elapsed = time.perf_counter() - start
    assert again.equals(first)
    assert stats(out)["executed"] == 0
    assert stats(out)["reused"] == 8
    assert [p.stat().st_mtime_ns for p in summaries] == mtimes
    # No worker pool and no simulation: loading the grid and 8 summaries.
    assert elapsed < 2.0, elapsed

    # An interrupted run (its summary.json cut short) is the only one redone.
    summaries[0].write_text(summaries[0].read_text()[:20])
    redone = rtcc.sweep(eight_run_grid(), out=out, jobs=2, progress=False)
    assert redone.equals(first)
    assert stats(out)["executed"] == 1
    assert [p.stat().st_mtime_ns for p in summaries[1:]] == mtimes[1:]


def test_failing_grid_point_is_recorded_and_others_succeed(tmp_path: Path) -> None:
    grid = {"base": tiny_scenario(), "grid": {"link.0.rate": ["2Mbps", "3Mbs"]}, "seeds": [7]}
    table = rtcc.sweep(grid, out=tmp_path, progress=False)
    failed = table.filter(pl.col("status") == "error")
    assert failed.height == 1
    assert failed["link.0.rate"][0] == "3Mbs"
    error = failed["error"][0]
    assert "link[0].rate" in error
    assert "3Mbs" in error
    assert failed["flow"][0] is None
    assert failed["goodput_kbps"][0] is None
    assert (tmp_path / "runs" / failed["run_id"][0] / "error.txt").is_file()
    ok = table.filter(pl.col("status") == "ok")
    assert ok.height == 2
    assert ok["seed"].to_list() == [7, 7]
    assert stats(tmp_path)["failed"] == 1

    # A failed run is tried again on resume; the good one is not.
    rtcc.sweep(grid, out=tmp_path, progress=False)
    assert stats(tmp_path)["executed"] == 1


def write_grid(tmp_path: Path, grid: dict[str, Any]) -> Path:
    (tmp_path / "base.toml").write_text(tomli_w.dumps(tiny_scenario()))
    path = tmp_path / "grid.toml"
    path.write_text(tomli_w.dumps({"base": "base.toml", **grid}))
    return path


@pytest.mark.parametrize(
    ("grid", "needles"),
    [
        ({"grid": {"link.0.ratee": ["1Mbps"]}}, ["link.0.ratee", "not a scenario field"]),
        ({"grid": {"flow.0.encoder.fpss": [30]}}, ["flow.0.encoder.fpss"]),
        ({"grid": {"bogus": [1]}}, ["bogus"]),
        ({"grid": {"link.3.rate": ["1Mbps"]}}, ["link.3.rate", "out of range"]),
        ({"grid": {"links.0.rate": ["1Mbps"]}}, ["links.0.rate"]),
        ({"grid": {"link.0.rate": []}}, ["grid.link.0.rate", "non-empty list"]),
        ({"grid": {"seed": [1, 2]}}, ["seed", "seeds"]),
        ({"seeds": 0}, ["seeds"]),
        ({"seeds": [1, -1]}, ["seeds", "-1"]),
        ({"gird": {}}, ["gird", "unknown grid key"]),
        ({"runs": [{"link.0.dealy": "5ms"}]}, ["link.0.dealy"]),
    ],
)
def test_grid_errors_name_file_and_key(
    tmp_path: Path, grid: dict[str, Any], needles: list[str]
) -> None:
    path = write_grid(tmp_path, grid)
    with pytest.raises(rtcc.GridError) as caught:
        rtcc.sweep(path, out=tmp_path / "out", progress=False)
    message = str(caught.value)
    assert message.startswith(f"{path}: key `"), message
    for needle in needles:
        assert needle in message, (needle, message)
    # Nothing ran.
    assert not (tmp_path / "out" / "results.parquet").exists()


def test_missing_base_is_named(tmp_path: Path) -> None:
    path = tmp_path / "grid.toml"
    path.write_text('base = "nowhere.toml"\n')
    with pytest.raises(rtcc.GridError, match=r"grid\.toml: key `base`: cannot read .*nowhere"):
        rtcc.sweep(path, out=tmp_path / "out", progress=False)


def test_grid_file_forms_are_equivalent(tmp_path: Path) -> None:
    # Quoted dotted keys, nested tables, a file base and an inline [base].
    path = write_grid(tmp_path, {"grid": dict(GRID_AXES), "seeds": [1, 2]})
    nested = tmp_path / "nested.toml"
    nested.write_text(
        tomli_w.dumps(
            {
                "base": tiny_scenario(),
                "seeds": 2,
                "grid": {"link": {"0": {"rate": GRID_AXES["link.0.rate"]}}},
            }
        )
        + '[grid.flow.0]\ncc = ["gcc", "fixed"]\n'
    )
    from_file = _load_grid(path)
    from_nested = _load_grid(nested)
    from_dict = _load_grid(eight_run_grid())
    ids = [r.run_id for r in from_dict.runs]
    assert len(ids) == 8
    assert ids == sorted(ids)
    # A file base takes the file's stem as its name, as `rtcc run` does.
    assert {r.scenario["name"] for r in from_file.runs} == {"tiny"}
    assert [r.run_id for r in from_file.runs] == ids
    assert [r.run_id for r in from_nested.runs] == ids
    assert from_nested.keys == ["link.0.rate", "flow.0.cc"]


def test_explicit_runs_add_to_the_product(tmp_path: Path) -> None:
    grid = {
        "base": tiny_scenario(),
        "grid": {"link.0.rate": ["1Mbps", "2Mbps"]},
        "seeds": [1, 2],
        "runs": [
            {"link.0.delay": "80ms", "link.0.rate": "500kbps"},
            {"link.0.delay": "5ms", "seed": 9},
            # The same as a grid point: not run twice.
            {"link.0.rate": "1Mbps"},
        ],
    }
    spec = _load_grid(grid)
    assert spec.keys == ["link.0.rate", "link.0.delay"]
    assert len(spec.runs) == 4 + 2 + 1
    pinned = [r for r in spec.runs if r.seed == 9]
    assert len(pinned) == 1
    assert pinned[0].scenario["link"][0]["delay"] == "5ms"
    assert pinned[0].scenario["link"][0]["rate"] == "2Mbps"  # the base's value

    table = rtcc.sweep(grid, out=tmp_path, jobs=2, progress=False)
    assert table["run_id"].n_unique() == 7
    row = table.filter(pl.col("seed") == 9).row(0, named=True)
    assert row["link.0.delay"] == "5ms"
    assert row["link.0.rate"] is None  # left at the base value


def test_structured_parameter_values(tmp_path: Path) -> None:
    losses = [{"model": "bernoulli", "p": 0.0}, {"model": "bernoulli", "p": 0.05}]
    grid = {"base": tiny_scenario(), "grid": {"link.0.loss": losses, "link.0.queue": ["10KB"]}}
    table = rtcc.sweep(grid, out=tmp_path, progress=False)
    assert table.schema["link.0.loss"] == pl.String()
    video = table.filter(pl.col("flow") == "video")
    rates = [
        video.filter(pl.col("link.0.loss") == json.dumps(loss, sort_keys=True))["loss_rate"][0]
        for loss in losses
    ]
    assert rates[0] < rates[1], rates


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="backend"):
        rtcc.sweep(eight_run_grid(), out=tmp_path, backend="slurm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="jobs"):
        rtcc.sweep(eight_run_grid(), out=tmp_path, jobs=0)
    with pytest.raises(ValueError, match="address"):
        rtcc.sweep(eight_run_grid(), out=tmp_path, address="ray://x:1")


def test_cli_sweep(tmp_path: Path) -> None:
    path = write_grid(tmp_path, {"grid": {"link.0.rate": ["1Mbps", "3Mbs"]}, "seeds": 1})
    out = tmp_path / "out"
    proc = rtcc_cli("sweep", path, "--out", out, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    assert "2 runs: 2 executed, 0 reused, 1 failed" in proc.stdout
    assert "3Mbs" in proc.stdout
    table = pl.read_parquet(out / "results.parquet")
    assert sorted(table["status"].unique().to_list()) == ["error", "ok"]

    again = rtcc_cli("sweep", path, "--out", out)
    assert again.returncode == 0, again.stderr
    assert "1 reused" in again.stdout


def test_cli_sweep_bad_grid_is_one_line(tmp_path: Path) -> None:
    path = write_grid(tmp_path, {"grid": {"flow.0.colour": ["blue"]}})
    proc = rtcc_cli("sweep", path, "--out", tmp_path / "out")
    assert_one_line_error(proc, os.fspath(path), "flow.0.colour")
    proc = rtcc_cli("sweep", path, "--out", tmp_path / "out", "--jobs", "0")
    assert_one_line_error(proc, "--jobs")
    proc = rtcc_cli("sweep", path, "--out", tmp_path / "out", "--address", "x:1")
    assert_one_line_error(proc, "--address")


def test_field_known_only_beside_another_value_is_not_a_grid_error(tmp_path: Path) -> None:
    # `cc_config.bitrate` exists for `fixed`, not for `gcc`: the gcc runs fail
    # (recorded), the fixed ones run, and the grid itself is fine.
    grid = {
        "base": tiny_scenario(),
        "grid": {"flow.0.cc": ["gcc", "fixed"], "flow.0.cc_config.bitrate": ["300kbps"]},
    }
    table = rtcc.sweep(grid, out=tmp_path, progress=False)
    by_cc = {row["flow.0.cc"]: row for row in table.iter_rows(named=True)}
    assert by_cc["fixed"]["status"] == "ok"
    assert by_cc["gcc"]["status"] == "error"
    assert "bitrate" in by_cc["gcc"]["error"]
    # The same field under a misspelt name is unknown for every controller.
    grid["grid"] = {"flow.0.cc": ["gcc", "fixed"], "flow.0.cc_config.bitrat": ["300kbps"]}
    with pytest.raises(rtcc.GridError, match=r"key `flow\.0\.cc_config\.bitrat`"):
        rtcc.sweep(grid, out=tmp_path / "typo", progress=False)


def test_relative_trace_is_found_beside_the_base(tmp_path: Path) -> None:
    # As `rtcc run` does for a scenario file: a trace next to the base
    # scenario is found although the working directory is elsewhere.
    folder = tmp_path / "scenarios"
    folder.mkdir()
    # Mahimahi: one 1500-byte delivery opportunity per line, at these ms.
    (folder / "flat.trace").write_text("".join(f"{ms}\n" for ms in range(1, 11)))
    scenario = tiny_scenario()
    del scenario["link"][0]["rate"]
    scenario["link"][0].update(trace="flat.trace", trace_format="mahimahi")
    (folder / "base.toml").write_text(tomli_w.dumps(scenario))
    grid = tmp_path / "grid.toml"
    grid.write_text('base = "scenarios/base.toml"\n[grid]\n"link.0.delay" = ["10ms", "30ms"]\n')
    assert not (Path.cwd() / "flat.trace").exists()
    table = rtcc.sweep(grid, out=tmp_path / "out", progress=False)
    assert table["status"].to_list() == ["ok"] * 4, table["error"].to_list()
