"""The `rtcc` console script, run as users run it: in a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomli_w

import rtcc

from .conftest import tiny_scenario

# The console script installed next to this interpreter (by `make develop`).
RTCC = Path(sysconfig.get_path("scripts")) / "rtcc"


def rtcc_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RTCC), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        check=False,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("rtcc: error: "), line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def write_scenario(tmp_path: Path, edit: dict[str, object], where: str) -> Path:
    scenario = tiny_scenario()
    target = scenario if where == "top" else scenario[where][0]
    target.update(edit)
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(scenario))
    return path


@pytest.mark.parametrize(
    ("edit", "where", "needles"),
    [
        ({"bogus_key": 1}, "top", ["bogus_key"]),
        ({"rate": "3Mbs"}, "link", ["rate", "3Mbs"]),
        ({"delay": "-5ms"}, "link", ["delay", "-5ms"]),
        ({"colour": "blue"}, "flow", ["colour"]),
    ],
    ids=["unknown-key", "bad-unit", "negative-delay", "unknown-flow-key"],
)
def test_bad_scenario_exits_2_with_one_line(
    tmp_path: Path, edit: dict[str, object], where: str, needles: list[str]
) -> None:
    path = write_scenario(tmp_path, edit, where)
    proc = rtcc_cli("run", path, "--out", tmp_path / "out")
    line = assert_one_line_error(proc, "bad.toml", *needles)
    # FILE:LINE: names the line of the key at fault.
    assert re.search(r"bad\.toml:\d+: ", line), line
    assert proc.stdout == ""


def test_missing_trace_exits_2_naming_the_trace(tmp_path: Path) -> None:
    link = {"trace": "no-such-trace.log", "trace_format": "mahimahi"}
    scenario = tiny_scenario()
    del scenario["link"][0]["rate"]
    scenario["link"][0].update(link)
    path = tmp_path / "trace.toml"
    path.write_text(tomli_w.dumps(scenario))
    proc = rtcc_cli("run", path, "--out", tmp_path / "out")
    assert_one_line_error(proc, "no-such-trace.log")


def test_missing_scenario_file_exits_2(tmp_path: Path) -> None:
    proc = rtcc_cli("run", tmp_path / "absent.toml", "--out", tmp_path / "out")
    assert_one_line_error(proc, "absent.toml")


@pytest.mark.parametrize(
    "args",
    [
        ["run", "x.toml", "--out", "o", "--seed", "-1"],
        ["run", "x.toml", "--out", "o", "--seed", "seven"],
        ["run", "x.toml"],
        ["frobnicate"],
        [],
    ],
    ids=["negative-seed", "non-integer-seed", "no-out", "unknown-command", "no-command"],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path: Path, args: list[str]) -> None:
    assert_one_line_error(rtcc_cli(*args, cwd=tmp_path))


def test_good_scenario_prints_tables_and_seed(tiny_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = rtcc_cli("run", tiny_file, "--out", out, "--seed", "5")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    text = proc.stdout
    for needle in ("video", "bulk", "media", "tcp", "gcc", "newreno", "bottleneck", "Jain"):
        assert needle in text, needle
    assert "goodput kbps" in text
    assert "seed 5" in text
    for name in ("summary.json", "timeseries.csv", "frames.csv"):
        assert (out / name).is_file(), name


def test_seed_defaults_to_the_scenario_seed(tiny_file: Path, tmp_path: Path) -> None:
    proc = rtcc_cli("run", tiny_file, "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "seed 1 " in proc.stdout


def test_version() -> None:
    proc = rtcc_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"rtcc {rtcc.__version__}"


def test_python_dash_m_is_the_same_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rtcc", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"rtcc {rtcc.__version__}"
