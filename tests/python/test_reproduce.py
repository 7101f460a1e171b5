"""`rtcc reproduce` on a paper folder made for the test."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from rtcc.reproduce import PaperError, metric_value, reproduce


def make_paper(root: Path, claims: list[dict[str, object]]) -> Path:
    folder = root / "toy"
    folder.mkdir(parents=True)
    scenario = {
        "name": "toy",
        "duration": "20s",
        "link": [{"name": "bottleneck", "rate": "2Mbps", "delay": "20ms", "queue": "60KB"}],
        "flow": [
            {"name": "gcc", "kind": "media", "cc": "gcc"},
            {"name": "fixed", "kind": "media", "cc": "fixed", "cc_config": {"bitrate": "200kbps"}},
        ],
    }
    (folder / "toy.toml").write_text(tomli_w.dumps(scenario))
    spec = {
        "title": "A toy paper",
        "source": "nowhere, a test",
        "experiment": [
            {
                "id": "e1",
                "scenario": "toy.toml",
                "seeds": [1, 2],
                "quick": {"duration": "5s", "seeds": [1]},
            }
        ],
        "claim": claims,
    }
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    return folder


CLAIMS: list[dict[str, object]] = [
    {
        "id": "more",
        "text": "GCC gets more goodput than a 200 kbps fixed flow",
        "experiment": "e1",
        "metric": "flow:gcc.goodput_kbps",
        "unit": "kbps",
        "check": {"op": ">", "metric": "flow:fixed.goodput_kbps"},
    },
    {
        "id": "wrong",
        "text": "GCC exceeds the link",
        "experiment": "e1",
        "metric": "flow:gcc.goodput_kbps",
        "check": {"op": ">", "value": 2000.0},
    },
    {
        "id": "near",
        "text": "the fixed flow gets its rate",
        "experiment": "e1",
        "metric": "flow:fixed.goodput_kbps",
        "published": 200.0,
        "check": {"within": 0.25},
    },
]


def test_claims_are_judged_and_written(tmp_path: Path) -> None:
    folder = make_paper(tmp_path, CLAIMS)
    md, results = reproduce(folder, out=tmp_path / "toy.md", runs_dir=tmp_path / "runs")
    verdicts = {r.claim.id: r.holds for r in results}
    assert verdicts == {"more": True, "wrong": False, "near": True}
    assert all(len(r.values) == 2 for r in results), "two seeds"
    text = md.read_text()
    assert "2 of 3 claims hold here" in text
    assert "| GCC exceeds the link |" in text
    assert "**no**" in text
    figs = list((tmp_path / "toy-figures" / "e1").glob("*.png"))
    assert figs, "figures of the first seed"
    assert f"]({figs[0].relative_to(tmp_path).as_posix()})" in text or "toy-figures/e1/" in text


def test_quick_runs_the_short_variant(tmp_path: Path) -> None:
    folder = make_paper(tmp_path, CLAIMS)
    _, results = reproduce(folder, quick=True, out=tmp_path / "q.md", runs_dir=tmp_path / "runs")
    assert all(len(r.values) == 1 for r in results)
    summary = (tmp_path / "runs" / "quick" / "e1" / "seed-1" / "summary.json").read_text()
    assert '"duration_s": 5.0' in summary


def test_checks_can_refer_to_another_experiment(tmp_path: Path) -> None:
    folder = make_paper(
        tmp_path,
        [
            {
                "id": "cross",
                "text": "the fixed flow alone gets less than GCC in e1",
                "experiment": "alone",
                "metric": "flow:fixed.goodput_kbps",
                "check": {"op": "<", "metric": "e1:flow:gcc.goodput_kbps"},
            }
        ],
    )
    spec = (folder / "paper.toml").read_text()
    spec += '\n[[experiment]]\nid = "alone"\nscenario = "toy.toml"\nseeds = [1]\n'
    (folder / "paper.toml").write_text(spec)
    _, results = reproduce(folder, quick=True, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    assert results[0].holds is True
    assert "e1:flow:gcc.goodput_kbps" in results[0].why


def test_metric_paths() -> None:
    summary = {
        "flows": [{"name": "a", "frame_delay_ms": {"p95": 12.5}, "goodput_kbps": 3}],
        "links": [{"name": "bottleneck", "drops": 4}],
        "fairness": {"jain": 0.9},
    }
    assert metric_value(summary, "flow:a.frame_delay_ms.p95") == 12.5
    assert metric_value(summary, "flow:a.goodput_kbps") == 3.0
    assert metric_value(summary, "link:bottleneck.drops") == 4.0
    assert metric_value(summary, "fairness.jain") == 0.9
    assert metric_value(summary, "flow:b.goodput_kbps") is None
    assert metric_value(summary, "flow:a.nothing") is None


@pytest.mark.parametrize(
    ("claim", "needle"),
    [
        ({"id": "x", "text": "t", "experiment": "e1", "metric": "m"}, "missing key `check`"),
        (
            {
                "id": "x",
                "text": "t",
                "experiment": "e9",
                "metric": "m",
                "check": {"op": "<", "value": 1},
            },
            "no experiment `e9`",
        ),
        (
            {"id": "x", "text": "t", "experiment": "e1", "metric": "m", "check": {"within": 0.1}},
            "key `check`",
        ),
    ],
)
def test_bad_claims_name_the_entry_and_key(
    tmp_path: Path, claim: dict[str, object], needle: str
) -> None:
    folder = make_paper(tmp_path, [claim])
    with pytest.raises(PaperError, match="claim\\[0\\]") as err:
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    assert needle in str(err.value)


def test_cli_unknown_paper_exits_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rtcc", "reproduce", "nopaper", "--papers", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "nopaper" in proc.stderr


def test_compare_expands_per_controller_with_settings(tmp_path: Path) -> None:
    folder = tmp_path / "cmp"
    folder.mkdir()
    scenario = {
        "duration": "8s",
        "link": [{"name": "bottleneck", "rate": "4Mbps", "delay": "20ms", "queue": "60KB"}],
        "flow": [{"name": "media", "kind": "media", "cc": "gcc"}],
    }
    (folder / "base.toml").write_text(tomli_w.dumps(scenario))
    spec = {
        "title": "compare",
        "experiment": [
            {
                "id": "e",
                "scenario": "base.toml",
                "set": {"link.0.rate": "1Mbps"},
                "compare": ["gcc", "fixed"],
                "cc_config": {"fixed": {"bitrate": "200kbps"}},
            }
        ],
        "claim": [
            {
                "id": "fixed-rate",
                "text": "the fixed variant sends its configured 200 kbps",
                "experiment": "e-fixed",
                "metric": "flow:media.goodput_kbps",
                "check": {"op": "<", "value": 260.0},
            },
            {
                "id": "gcc-more",
                "text": "GCC gets more than the fixed variant",
                "experiment": "e-gcc",
                "metric": "flow:media.goodput_kbps",
                "check": {"op": ">", "metric": "e-fixed:flow:media.goodput_kbps"},
            },
            {
                "id": "link-set",
                "text": "the `set` rate caps GCC below 1 Mbps",
                "experiment": "e-gcc",
                "metric": "flow:media.goodput_kbps",
                "check": {"op": "<", "value": 1000.0},
                "note": "the link is 1 Mbps here",
            },
        ],
        "intro": "Set-up differences go here.",
    }
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    md, results = reproduce(folder, out=tmp_path / "cmp.md", runs_dir=tmp_path / "runs", workers=2)
    assert {r.claim.id: r.holds for r in results} == {
        "fixed-rate": True,
        "gcc-more": True,
        "link-set": True,
    }
    text = md.read_text()
    assert "| controller | media bitrate (kbps)" in text
    assert "| gcc |" in text
    assert "| fixed |" in text
    assert "Set-up differences go here." in text
    assert "- `link-set`: the link is 1 Mbps here" in text
    assert (tmp_path / "cmp-figures" / "e" / "rate.png").is_file()
    assert (tmp_path / "runs" / "full" / "e-fixed" / "seed-1" / "summary.json").is_file()


def test_compare_errors_name_the_entry(tmp_path: Path) -> None:
    folder = make_paper(tmp_path, CLAIMS)
    spec = tomllib.loads((folder / "paper.toml").read_text())
    spec["experiment"][0]["compare"] = ["gcc"]
    spec["experiment"][0]["flow"] = "nope"
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"experiment\[0\]: key `flow`: .*no flow named `nope`"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    spec["experiment"][0].pop("flow")
    spec["experiment"][0].pop("compare")
    spec["experiment"][0]["set"] = {"flow.7.cc": "gcc"}
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"key `set`.*index 7 out of range"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")


def test_several_flows_under_test_and_time_windows(tmp_path: Path) -> None:
    """`flow = [...]` gives every listed flow the compared controller; `flow:*`
    averages over the flows; `windows` adds per-flow means over time."""
    folder = tmp_path / "multi"
    folder.mkdir()
    scenario = {
        "duration": "6s",
        "link": [{"name": "bottleneck", "rate": "2Mbps", "delay": "20ms", "queue": "60KB"}],
        "flow": [
            {"name": "a", "kind": "media", "cc": "gcc"},
            {"name": "b", "kind": "media", "cc": "gcc", "start": "2s"},
        ],
    }
    (folder / "base.toml").write_text(tomli_w.dumps(scenario))
    spec: dict[str, Any] = {
        "title": "multi",
        "experiment": [
            {
                "id": "e",
                "scenario": "base.toml",
                "compare": ["fixed"],
                "flow": ["a", "b"],
                "cc_config": {"fixed": {"bitrate": "300kbps"}},
                "flow_keys": {"fixed": {"mtu": "600B"}},
                "windows": {"early": ["0s", "2s"], "both": ["3s", "6s"]},
            }
        ],
        "claim": [
            {
                "id": "both-fixed",
                "text": "both flows run the compared controller",
                "experiment": "e-fixed",
                "metric": "flow:*.goodput_kbps",
                "check": {"op": "<", "value": 360.0},
            },
            {
                "id": "b-silent-early",
                "text": "flow b has not started in the early window",
                "experiment": "e-fixed",
                "metric": "windows.early.a.goodput_kbps",
                "check": {"op": ">", "value": 100.0},
            },
            {
                "id": "fair",
                "text": "two equal fixed flows are fair while both run",
                "experiment": "e-fixed",
                "metric": "windows.both.jain",
                "check": {"op": ">", "value": 0.95},
            },
        ],
    }
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    md, results = reproduce(folder, out=tmp_path / "m.md", runs_dir=tmp_path / "runs", workers=1)
    assert {r.claim.id: r.holds for r in results} == {
        "both-fixed": True,
        "b-silent-early": True,
        "fair": True,
    }
    # b is absent from the early window: it started at 2 s.
    assert "Mean over the flows" in md.read_text()
    # `flow_keys` reached both flows under test: 600 B packets, twice the count.
    run_dir = tmp_path / "runs" / "full" / "e-fixed" / "seed-1"
    sent = {
        f["name"]: f["packets_sent"]
        for f in json.loads((run_dir / "summary.json").read_text())["flows"]
    }
    assert sent["a"] > 1.8 * 300_000 * 6 / 8 / 1248
    summary = {"flows": [{"name": "a", "x": 1.0}, {"name": "b", "x": 3.0}, {"name": "c"}]}
    assert metric_value(summary, "flow:*.x") == 2.0
    assert metric_value(summary, "flow:*.y") is None
    experiment = spec["experiment"][0]
    experiment["windows"] = {"bad": ["5s", "1s"]}
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"experiment\[0\]: key `windows.bad`: start 5s"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    experiment["windows"] = {"bad": ["soon", "1s"]}
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"key `windows.bad`: `soon` is not a duration"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")


def test_an_unseen_controller_state_has_share_zero() -> None:
    summary = {"flows": [{"name": "m", "cc_states": {"normal": 1.0}}]}
    assert metric_value(summary, "flow:m.cc_states.normal") == 1.0
    assert metric_value(summary, "flow:m.cc_states.fallback") == 0.0
    assert metric_value(summary, "flow:m.nope.fallback") is None
    assert metric_value({"flows": [{"name": "m"}]}, "flow:m.cc_states.fallback") is None


def test_the_camel_paper_runs_end_to_end(tmp_path: Path) -> None:
    """`rtcc reproduce camel --quick`: every experiment runs, every claim is judged."""
    root = Path(__file__).resolve().parents[2]
    md, results = reproduce(
        root / "scenarios" / "papers" / "camel",
        quick=True,
        out=tmp_path / "camel-quick.md",
        runs_dir=tmp_path / "runs",
    )
    assert len(results) >= 35
    missing = [r.claim.id for r in results if r.mean is None]
    assert not missing, f"claims without a value: {missing}"
    text = md.read_text()
    assert "| camel |" in text
    assert "| pudica |" in text
    assert (tmp_path / "camel-figures" / "fig10-etr60" / "rate.png").is_file()
