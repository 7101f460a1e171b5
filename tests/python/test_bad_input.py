"""The bad-input corpus: every class of bad input a hostile user tried.

Each case is a scenario file with one thing wrong. `rtcc run` must exit 2 with
one line naming the file, the line, the key and the value (docs/scenarios.md,
"Limits"), and leave `--out` as it was: absent when it was absent, unchanged
when it held an earlier run. The command runs in-process (`rtcc.cli.main`),
so the corpus takes seconds; test_cli.py runs the console script itself.

The classes follow the review that found them: (1) sizes that exhaust the
machine, (2) limits of every numeric field, (5) errors found only when the run
is built, (6) numbers too large for their type, (9) values accepted without a
word, and unknown keys, bad units and contradictions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rtcc
from rtcc.cli import main
from rtcc.reproduce import reproduce

BASE = """\
duration = "2s"

[topology]
kind = "dumbbell"

[[link]]
name = "bottleneck"
rate = "1Mbps"
delay = "20ms"
queue = "60KB"

[[flow]]
name = "video"
kind = "media"
cc = "gcc"
encoder = { fps = 30, gop = 60 }

[[flow]]
name = "bulk"
kind = "tcp"
cc = "cubic"
start = "1s"
"""


def _replace(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def _add_to_flow(flow: str, line: str) -> str:
    anchor = f'name = "{flow}"\n'
    return _replace(anchor, anchor + line + "\n")


# (id, scenario text, key named, value named, line of the key or None)
CASES: list[tuple[str, str, str, str, int | None]] = [
    # §1: sizes that exhaust the machine.
    ("duration-years", _replace('"2s"', '"1000000000h"'), "duration", "1000000000h", 1),
    ("duration-31-days", _replace('"2s"', '"744h"'), "duration", "2678400s", 1),
    (
        "sample-interval-1ns",
        BASE + '\n[output]\nsample_interval = "1ns"\n',
        "output.sample_interval",
        "1ns",
        25,
    ),
    (
        "sample-interval-1us",
        BASE + '\n[output]\nsample_interval = "1us"\n',
        "output.sample_interval",
        "1us",
        25,
    ),
    (
        "initial-cwnd-4e9",
        _add_to_flow("bulk", "initial_cwnd = 4000000000"),
        "flow[1].initial_cwnd",
        "4000000000",
        20,
    ),
    # §2: every numeric field has a range.
    (
        "link-rate-1tbps",
        _replace('rate = "1Mbps"', 'rate = "1000Gbps"'),
        "link[0].rate",
        "1000Gbps",
        8,
    ),
    ("link-delay-20s", _replace('delay = "20ms"', 'delay = "20s"'), "link[0].delay", "20s", 9),
    ("queue-2gb", _replace('queue = "60KB"', 'queue = "2GB"'), "link[0].queue", "2000MB", 10),
    (
        "queue-2m-packets",
        _replace('queue = "60KB"', 'queue = "2000000pkts"'),
        "link[0].queue",
        "2000000",
        10,
    ),
    ("queue-120s", _replace('queue = "60KB"', 'queue = "120s"'), "link[0].queue", "120s", 10),
    (
        "jitter-11s",
        _replace('queue = "60KB"', 'queue = "60KB"\njitter = "11s"'),
        "link[0].jitter",
        "11s",
        11,
    ),
    (
        "opportunity-0",
        _replace('queue = "60KB"', 'queue = "60KB"\nmahimahi_opportunity = "0B"'),
        "link[0].mahimahi_opportunity",
        "0",
        11,
    ),
    (
        "access-rate-0",
        _replace('kind = "dumbbell"', 'kind = "dumbbell"\naccess_rate = "0bps"'),
        "topology.access_rate",
        "0bps",
        5,
    ),
    (
        "access-delay-1min",
        _replace('kind = "dumbbell"', 'kind = "dumbbell"\naccess_delay = "1min"'),
        "topology.access_delay",
        "60s",
        5,
    ),
    (
        "reverse-rate-0",
        _replace('kind = "dumbbell"', 'kind = "dumbbell"\nreverse_rate = "0bps"'),
        "topology.reverse_rate",
        "0bps",
        5,
    ),
    ("gop-too-large", _replace("gop = 60", "gop = 2000000"), "flow[0].encoder.gop", "2000000", 16),
    (
        "i-frame-factor-1000",
        _replace("gop = 60", "gop = 60, i_frame_factor = 1000.0"),
        "flow[0].encoder.i_frame_factor",
        "1000",
        16,
    ),
    (
        "i-frame-factor-below-1",
        _replace("gop = 60", "gop = 60, i_frame_factor = 0.5"),
        "flow[0].encoder.i_frame_factor",
        "0.5",
        16,
    ),
    (
        "size-variability-nan",
        _replace("gop = 60", "gop = 60, size_variability = nan"),
        "flow[0].encoder.size_variability",
        "NaN",
        16,
    ),
    (
        "reaction-delay-2min",
        _replace("gop = 60", 'gop = 60, reaction_delay = "2min"'),
        "flow[0].encoder.reaction_delay",
        "120s",
        16,
    ),
    (
        "max-bitrate-1tbps",
        _replace("gop = 60", 'gop = 60, max_bitrate = "1000Gbps"'),
        "flow[0].encoder.max_bitrate",
        "1000Gbps",
        16,
    ),
    ("fps-0", _replace("fps = 30", "fps = 0"), "flow[0].encoder.fps", "0", 16),
    (
        "feedback-interval-0",
        _add_to_flow("video", 'feedback_interval = "0ms"'),
        "flow[0].feedback_interval",
        "0s",
        14,
    ),
    (
        "feedback-interval-1min",
        _add_to_flow("video", 'feedback_interval = "1min"'),
        "flow[0].feedback_interval",
        "60s",
        14,
    ),
    ("initial-cwnd-0", _add_to_flow("bulk", "initial_cwnd = 0"), "flow[1].initial_cwnd", "0", 20),
    ("rwnd-too-large", _add_to_flow("bulk", "rwnd = 2000000"), "flow[1].rwnd", "2000000", 20),
    ("min-rto-0", _add_to_flow("bulk", 'min_rto = "0ms"'), "flow[1].min_rto", "0s", 20),
    ("min-rto-2min", _add_to_flow("bulk", 'min_rto = "2min"'), "flow[1].min_rto", "120s", 20),
    ("mss-tiny", _add_to_flow("bulk", 'mss = "10B"'), "flow[1].mss", "10B", 20),
    (
        "flow-access-delay",
        _add_to_flow("bulk", 'access_delay = "30s"'),
        "flow[1].access_delay",
        "30s",
        20,
    ),
    (
        "header-overhead",
        _add_to_flow("video", 'header_overhead = "5000B"'),
        "flow[0].header_overhead",
        "5KB",
        14,
    ),
    # §5: errors found when the run is built.
    (
        "cc-config-value",
        _replace(
            'cc = "gcc"', 'cc = "fixed"\ncc_config = { bitrate = "1Mbps", pacing_factor = 0.5 }'
        ),
        "flow[0].cc_config",
        "0.5",
        16,
    ),
    (
        "cc-config-duration",
        _replace('cc = "gcc"', 'cc = "camel"\ncc_config = { stretch_window = "2h" }'),
        "flow[0].cc_config",
        "7200s",
        16,
    ),
    (
        "cc-config-unknown-key",
        _replace('cc = "gcc"', 'cc = "gcc"\ncc_config = { alpha = 1 }'),
        "flow[0].cc_config",
        "alpha",
        16,
    ),
    # §6: numbers too large for their type.
    (
        "gop-u32-overflow",
        _replace("gop = 60", "gop = 99999999999999999999"),
        "flow[0].encoder.gop",
        "99999999999999999999",
        16,
    ),
    (
        "rate-1e400",
        _replace('rate = "1Mbps"', 'rate = "1e400Mbps"'),
        "link[0].rate",
        "1e400Mbps",
        8,
    ),
    ("duration-1e30", _replace('"2s"', '"1e30s"'), "duration", "1e30s", 1),
    ("queue-1e30", _replace('queue = "60KB"', 'queue = "1e30GB"'), "link[0].queue", "1e30GB", 10),
    # §9: accepted without a word before.
    (
        "fixed-0bps",
        _replace('cc = "gcc"', 'cc = "fixed"\ncc_config = { bitrate = "0bps" }'),
        "flow[0].cc_config",
        "0bps",
        16,
    ),
    ("start-after-end", _replace('start = "1s"', 'start = "5s"'), "flow[1].start", "5s", 22),
    (
        "dumbbell-without-bottleneck",
        _replace('name = "bottleneck"', 'name = "core"'),
        "link",
        "core",
        6,
    ),
    (
        "reverse-tcp-unlimited",
        _replace('kind = "dumbbell"', 'kind = "single"').replace(
            'start = "1s"', 'start = "1s"\ndirection = "reverse"'
        ),
        "flow[1].direction",
        "reverse_rate",
        23,
    ),
    # Unknown keys, bad units, contradictions.
    ("unknown-key", _replace('delay = "20ms"', 'delai = "20ms"'), "link[0].delai", "delai", 9),
    ("bad-unit", _replace('rate = "1Mbps"', 'rate = "3Mbs"'), "link[0].rate", "3Mbs", 8),
    ("negative-delay", _replace('delay = "20ms"', 'delay = "-20ms"'), "link[0].delay", "-20ms", 9),
    ("unknown-cc", _replace('cc = "gcc"', 'cc = "gccc"'), "flow[0].cc", "gccc", 15),
    ("unknown-kind", _replace('kind = "tcp"', 'kind = "quic"'), "flow[1].kind", "quic", 20),
    ("stop-before-start", _add_to_flow("bulk", 'stop = "0.5s"'), "flow[1].stop", "500ms", 20),
    (
        "two-rates",
        _replace('rate = "1Mbps"', 'rate = "1Mbps"\nschedule = [{ at = "0s", rate = "2Mbps" }]'),
        "link[0].rate",
        "rate",
        6,
    ),
    (
        "loss-above-1",
        _replace('queue = "60KB"', 'queue = "60KB"\nloss = { model = "bernoulli", p = 1.5 }'),
        "link[0].loss",
        "1.5",
        11,
    ),
    ("duplicate-flow", _replace('name = "bulk"', 'name = "video"'), "flow[1].name", "video", 18),
    (
        "trace-missing",
        _replace('rate = "1Mbps"', 'trace = "nope.log"\ntrace_format = "mahimahi"'),
        "link[0].trace",
        "nope.log",
        8,
    ),
    ("seed-negative", "seed = -1\n" + BASE, "seed", "-1", 1),
]


def _run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code: object = main(args)
    except SystemExit as exc:
        code = exc.code
    return (code if isinstance(code, int) else 1), capsys.readouterr().err


def _listing(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize(
    ("text", "key", "value", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_scenario_is_one_line_naming_it_and_leaves_nothing_behind(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    key: str,
    value: str,
    line: int | None,
) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_text(text)
    out = tmp_path / "runs" / "out"
    code, err = _run_cli(["run", str(scenario), "--out", str(out)], capsys)
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    msg = lines[0]
    assert msg.startswith("rtcc: error: "), msg
    assert "Traceback" not in err, err
    assert "internal error" not in msg, msg
    where = f"{scenario}:{line}:" if line is not None else f"{scenario}:"
    assert where in msg, f"wanted {where!r} in {msg!r}"
    assert f"`{key}" in msg, f"wanted key {key!r} in {msg!r}"
    assert value in msg, f"wanted value {value!r} in {msg!r}"
    # Nothing left behind: not the folder, not its parent, no staging folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_a_failed_run_keeps_the_earlier_run_in_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.toml"
    good.write_text(BASE)
    out = tmp_path / "out"
    code, err = _run_cli(["run", str(good), "--out", str(out), "--cc-trace"], capsys)
    assert code == 0, err
    before = _listing(out)
    assert {"summary.json", "timeseries.csv", "frames.csv", "cc_trace.csv"} <= set(before)
    # Errors found at load time and when the run is built.
    for _, text, *_ in (CASES[0], CASES[31]):
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        code, err = _run_cli(["run", str(bad), "--out", str(out)], capsys)
        assert code == 2, err
        assert _listing(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml", "good.toml", "out"]


def test_the_resource_guard_refuses_and_allow_large_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A day at 100 Gbps: estimated above the packet limit.
    big = tmp_path / "big.toml"
    big.write_text(_replace('"2s"', '"24h"').replace('rate = "1Mbps"', 'rate = "100Gbps"'))
    code, err = _run_cli(["run", str(big), "--out", str(tmp_path / "o")], capsys)
    assert code == 2, err
    assert re.search(r"estimated at [0-9.e+]+ packet transmissions", err), err
    assert "--allow-large" in err
    assert not (tmp_path / "o").exists()
    # The override reaches the simulator (shown with the output guard on a
    # small run: allowed, it runs).
    with pytest.raises(rtcc.ScenarioError, match="of output"):
        rtcc.run(
            {**_small_dict(), "duration": "30h", "output": {"sample_interval": "1ms"}},
            out=tmp_path / "p",
        )
    assert not (tmp_path / "p").exists()


def _small_dict() -> dict[str, object]:
    return {
        "link": [{"name": "bottleneck", "rate": "10kbps"}],
        "flow": [{"name": "f", "kind": "udp-cbr", "rate": "1kbps"}],
    }


def test_python_values_that_toml_cannot_hold_are_scenario_errors() -> None:
    base = _small_dict()
    for bad, key in [
        ({**base, "name": "\ud800"}, "name"),
        ({**base, "seed": 2**80}, "seed"),
        (
            {**base, "flow": [{"name": "f", "kind": "udp-cbr", "rate": "1kbps", "\udc80": 1}]},
            "flow[0]",
        ),
    ]:
        with pytest.raises(rtcc.ScenarioError, match=re.escape(f"key `{key}`")):
            rtcc.run(bad)
    with pytest.raises(rtcc.ScenarioError, match="seed must be in"):
        rtcc.run(base, seed=2**80)


def test_names_reach_the_terminal_without_their_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The name as TOML writes it: \u001b is the escape character.
    evil = "\\u001b[2J\\u001b[31m[bold]red"
    text = _replace('name = "bulk"', f'name = "{evil}"')
    scenario = tmp_path / "evil.toml"
    scenario.write_text(text)
    code, _ = _run_cli(["run", str(scenario), "--out", str(tmp_path / "o")], capsys)
    assert code == 0
    out = capsys.readouterr()
    # rtcc printed the summary table: no escape character reached it.
    code = main(["run", str(scenario), "--out", str(tmp_path / "o")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "\x1b" not in printed, repr(printed)
    assert "\\x1b[31m" in printed, printed
    del out
    # In an error too.
    dup = tmp_path / "dup.toml"
    dup.write_text(text.replace('name = "video"', f'name = "{evil}"'))
    code, err = _run_cli(["run", str(dup), "--out", str(tmp_path / "d")], capsys)
    assert code == 2
    assert "\x1b" not in err, err
    assert "\\x1b" in err, err


@pytest.mark.parametrize("workers", ["0", "-3", "x"])
def test_workers_must_be_positive(capsys: pytest.CaptureFixture[str], workers: str) -> None:
    code, err = _run_cli(["reproduce", "cdm", "--quick", "--workers", workers], capsys)
    assert code == 2
    assert "--workers" in err
    with pytest.raises((ValueError, TypeError)):
        reproduce("cdm", quick=True, workers=int(workers) if workers != "x" else "x")  # type: ignore[arg-type]


def test_report_on_bad_inputs_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.toml"
    good.write_text(BASE)
    run = tmp_path / "run"
    assert _run_cli(["run", str(good), "--out", str(run)], capsys)[0] == 0
    html = tmp_path / "r.html"
    # A garbage timeseries.csv.
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    for name in ("summary.json", "frames.csv"):
        (garbage / name).write_bytes((run / name).read_bytes())
    (garbage / "timeseries.csv").write_bytes(b"a,b\n\x00\x01,\xff\n")
    code, err = _run_cli(["report", str(garbage), "-o", str(html)], capsys)
    assert code == 2, err
    assert "timeseries.csv" in err, err
    assert len(err.splitlines()) == 1, err
    # A summary.json of the wrong shape.
    shape = tmp_path / "shape"
    shape.mkdir()
    for name in ("timeseries.csv", "frames.csv"):
        (shape / name).write_bytes((run / name).read_bytes())
    (shape / "summary.json").write_text(
        (run / "summary.json").read_text().replace('"links": [', '"links": 7, "x": [')
    )
    code, err = _run_cli(["report", str(shape), "-o", str(html)], capsys)
    assert code == 2, err
    assert str(shape) in err, err
    assert "internal error" not in err, err
    # --png onto a file: refused before the page is written.
    afile = tmp_path / "afile"
    afile.write_text("x")
    code, err = _run_cli(["report", str(run), "-o", str(html), "--png", str(afile)], capsys)
    assert code == 2, err
    assert str(afile) in err, err
    assert not html.exists()


def test_a_missing_scenario_file_creates_no_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nonexistent.toml"
    code, err = _run_cli(["run", str(missing), "--out", str(tmp_path / "c2")], capsys)
    assert code == 2, err
    assert str(missing) in err, err
    assert sorted(tmp_path.iterdir()) == []


def test_a_sweep_of_a_hundred_million_seeds_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    grid = {"base": _small_dict() | {"duration": "1s"}, "seeds": 100_000_000}
    with pytest.raises(
        rtcc.GridError, match=r"key `seeds`: a count of seeds must be in \[1, 100000\]"
    ):
        rtcc.sweep(grid, out=tmp_path / "s", progress=False)
    grid = {
        "base": _small_dict() | {"duration": "1s"},
        "seeds": 1000,
        "grid": {"link.0.rate": [f"{k}kbps" for k in range(10, 1010)]},
    }
    with pytest.raises(rtcc.GridError, match=r"1000000 runs .* above the limit of 100000"):
        rtcc.sweep(grid, out=tmp_path / "s", progress=False)
    assert not (tmp_path / "s").exists()
