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

from rtcc.reproduce import Claim, PaperError, metric_value, reproduce
from rtcc.reproduce.judging import Setting, _judge
from rtcc.reproduce.rendering import _markdown
from rtcc.reproduce.spec import _claims, _experiments


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
        # Two seeds keep the test short; real papers use the default of 5.
        "min_seeds": 1,
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
    assert "**fails**" in text
    assert "- `wrong` — **fails**: on the mean, `flow:gcc.goodput_kbps` = " in text, "with a reason"
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
        (
            {"id": "x", "text": "t", "experiment": "e1", "metric": "m"},
            "needs `check`, `published` or both",
        ),
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
        "min_seeds": 1,
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
    assert "- `link-set` (holds): the link is 1 Mbps here" in text
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
        "min_seeds": 1,
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


# ---- expression metrics, `vary` (no simulation: summaries built in memory) ----


def _paper(tmp_path: Path, spec: dict[str, Any]) -> tuple[dict[str, Any], Path]:
    """A paper folder with a one-flow scenario; returns the spec and paper.toml's path."""
    spec = {"min_seeds": 1, **spec}
    scenario = {
        "duration": "8s",
        "link": [{"name": "bottleneck", "rate": "4Mbps", "delay": "20ms", "queue": "60KB"}],
        "flow": [{"name": "media", "kind": "media", "cc": "gcc"}],
    }
    (tmp_path / "base.toml").write_text(tomli_w.dumps(scenario))
    path = tmp_path / "paper.toml"
    path.write_text(tomli_w.dumps(spec))
    return spec, path


def _summary(**values: float) -> dict[str, Any]:
    return {"flows": [{"name": "a", **values}]}


def _claim(metric: str, check: dict[str, object] | None = None) -> Claim:
    return Claim(
        id="c", text="t", experiment="e", metric=metric, check=check or {"op": ">", "value": 0.0}
    )


def test_an_expression_is_evaluated_per_seed_then_averaged() -> None:
    summaries = {"e": [_summary(x=10.0, y=4.0), _summary(x=1.0, y=2.0)]}
    res = _judge(_claim("abs({flow:a.y} - {flow:a.x})"), summaries, {"e": [1, 2]})
    assert res.values == [6.0, 1.0]
    assert res.mean == 3.5
    # Per seed, not the ratio of the means (11/6): (10/4 + 1/2) / 2 = 1.5.
    res = _judge(_claim("{flow:a.x} / {flow:a.y}"), summaries, {"e": [1, 2]})
    assert res.values == [2.5, 0.5]
    assert res.mean == 1.5
    res = _judge(
        _claim("-max({flow:a.x}, 3, {flow:a.y}) + min(2 * (1 + 1), 5)"), summaries, {"e": [1, 2]}
    )
    assert res.values == [-6.0, 1.0]
    # A plain metric is unchanged.
    assert _judge(_claim("flow:a.x"), summaries, {"e": [1, 2]}).values == [10.0, 1.0]


def test_a_cross_experiment_reference_takes_the_same_seed() -> None:
    summaries = {
        "e": [_summary(x=1.0), _summary(x=2.0)],
        # Seeds in another order: pairing by position would give 1/100, 2/10.
        "base": [_summary(x=100.0), _summary(x=10.0), _summary(x=1000.0)],
    }
    seeds = {"e": [1, 2], "base": [2, 1, 3]}
    res = _judge(_claim("1 - {flow:a.x} / {base:flow:a.x}"), summaries, seeds)
    assert res.values == pytest.approx([0.9, 0.98])
    with pytest.raises(PaperError, match=r"claim `c`: key `metric`: .*`base` has no seed 4"):
        _judge(_claim("{base:flow:a.x}"), summaries, {"e": [1, 4], "base": [2, 1, 3]})


def test_missing_values_and_division_by_zero_drop_that_seed() -> None:
    summaries = {"e": [_summary(x=1.0, y=0.0), _summary(x=3.0, y=1.0), _summary(y=1.0)]}
    seeds = {"e": [1, 2, 3]}
    res = _judge(_claim("{flow:a.x} / {flow:a.y}"), summaries, seeds)
    assert res.values == [3.0], "seed 1 divides by zero, seed 3 lacks x"
    res = _judge(_claim("{flow:a.nothing} + 1"), summaries, seeds)
    assert res.mean is None
    assert res.holds is None
    assert "not in the runs' summaries" in res.why


def test_a_check_metric_may_be_an_expression() -> None:
    summaries = {"e": [_summary(x=10.0, y=4.0)], "o": [_summary(x=20.0)]}
    seeds = {"e": [1], "o": [1]}
    res = _judge(
        _claim("flow:a.x", {"op": "<", "metric": "{flow:a.y} + {o:flow:a.x}", "factor": 0.5}),
        summaries,
        seeds,
    )
    assert res.reference == 12.0
    assert res.holds is True
    # A plain check metric keeps the `id:` prefix of today.
    res = _judge(_claim("flow:a.x", {"op": "<", "metric": "o:flow:a.x"}), summaries, seeds)
    assert res.reference == 20.0


@pytest.mark.parametrize(
    ("metric", "needle"),
    [
        ("{flow:media.x} +", "syntax error"),
        ("{flow:media.x} {flow:media.y}", "syntax error"),
        ("pow({flow:media.x}, 2)", "unknown function `pow`"),
        ("{flow:media.x}.real", "not allowed"),
        ("x + {flow:media.x}", "unknown name `x`"),
        ("_ref0 + {flow:media.x}", "unknown name `_ref0`"),
        ("__import__('os') + {flow:media.x}", "unknown function `__import__`"),
        ("{flow:media.x} ** 2", "not allowed"),
        ("{flow:media.x} % 2", "not allowed"),
        ("{flow:media.x} < 2", "not allowed"),
        ("[{flow:media.x}][0]", "not allowed"),
        ("'a' + {flow:media.x}", "is not a number"),
        ("True + {flow:media.x}", "is not a number"),
        ("(lambda: 1)() + {flow:media.x}", "unknown function"),
        ("min({flow:media.x})", "`min` takes 2 or more"),
        ("abs(x={flow:media.x})", "`abs` takes 1"),
        ("+{flow:media.x}", "not allowed"),
        ("{flow:media.x} + {}", "empty reference"),
        ("{flow:{media}.x}", "braces"),
        ("{nope:flow:media.x} + 1", "names no experiment `nope`"),
        ("{other:flow:media.x} - {flow:media.x}", "`other`, which has no seed 2"),
    ],
)
def test_bad_expressions_name_the_file_claim_and_key(
    tmp_path: Path, metric: str, needle: str
) -> None:
    spec, path = _paper(
        tmp_path,
        {
            "experiment": [
                {"id": "e", "scenario": "base.toml", "seeds": [1, 2]},
                {"id": "other", "scenario": "base.toml", "seeds": [1]},
            ],
            "claim": [
                {
                    "id": "c",
                    "text": "t",
                    "experiment": "e",
                    "metric": metric,
                    "check": {"within": 1},
                    "published": 1.0,
                }
            ],
        },
    )
    with pytest.raises(PaperError) as err:
        _claims(spec, path, {"e": [1, 2], "other": [1]})
    assert f"{path}: claim[0] `c`: key `metric`: " in str(err.value)
    assert needle in str(err.value)
    # The same in the check's metric.
    spec["claim"][0].update(metric="flow:media.x", check={"op": "<", "metric": metric})
    with pytest.raises(PaperError, match=r"claim\[0\] `c`: key `check.metric`: "):
        _claims(spec, path, {"e": [1, 2], "other": [1]})


def test_vary_expands_an_experiment_and_composes_with_compare_and_quick(tmp_path: Path) -> None:
    spec, path = _paper(
        tmp_path,
        {
            "experiment": [
                {
                    "id": "fig13",
                    "scenario": "base.toml",
                    "set": {"link.0.delay": "30ms"},
                    "vary": {"key": "link.0.loss", "values": [0, 0.05, 1.0], "name": "p"},
                    "compare": ["gcc", "bbr"],
                    "seeds": [1, 2, 3],
                    "quick": {"duration": "2s", "seeds": [7]},
                },
                {
                    "id": "fig17",
                    "scenario": "base.toml",
                    "vary": {"key": "link.0.rate", "values": ["4Mbps", "12Mbps"]},
                },
            ]
        },
    )
    exps = _experiments(spec, path, quick=False)
    assert list(exps) == [
        "fig13-p0-gcc",
        "fig13-p0-bbr",
        "fig13-p0.05-gcc",
        "fig13-p0.05-bbr",
        "fig13-p1-gcc",
        "fig13-p1-bbr",
        "fig17-rate4Mbps",
        "fig17-rate12Mbps",
    ]
    e = exps["fig13-p0.05-bbr"]
    assert e.scenario["link"][0]["loss"] == 0.05
    assert e.scenario["link"][0]["delay"] == "30ms", "`set` still applies"
    assert e.scenario["flow"][0]["cc"] == "bbr"
    assert e.scenario["name"] == "fig13-p0.05-bbr"
    assert e.group == "fig13-p0.05"
    assert e.seeds == [1, 2, 3]
    assert e.sweep is not None
    assert (e.sweep.id, e.sweep.name, e.sweep.label) == ("fig13", "p", "0.05")
    assert exps["fig13-p1-gcc"].scenario["link"][0]["loss"] == 1.0
    assert exps["fig17-rate12Mbps"].scenario["link"][0]["rate"] == "12Mbps"
    assert exps["fig17-rate12Mbps"].cc is None
    # Each expanded run is its own copy.
    assert exps["fig17-rate4Mbps"].scenario["link"][0]["rate"] == "4Mbps"
    quick = _experiments(spec, path, quick=True)
    assert list(quick) == list(exps)
    assert all(x.seeds == [7] for x in quick.values() if x.group.startswith("fig13"))
    assert quick["fig13-p1-bbr"].scenario["duration"] == "2s"
    assert quick["fig17-rate4Mbps"].seeds == [1]
    # Claims name the expanded ids.
    claims = _claims(
        {
            "claim": [
                {
                    "id": "c",
                    "text": "t",
                    "experiment": "fig13-p0-bbr",
                    "metric": "m",
                    "check": {"op": "<", "value": 1},
                }
            ]
        },
        path,
        {k: x.seeds for k, x in exps.items()},
    )
    assert claims[0].experiment == "fig13-p0-bbr"


@pytest.mark.parametrize(
    ("experiments", "needle"),
    [
        (
            [
                {"id": "e-k1", "scenario": "base.toml"},
                {
                    "id": "e",
                    "scenario": "base.toml",
                    "vary": {"key": "x", "values": [1], "name": "k"},
                },
            ],
            r"experiment\[1\]: key `id`: experiment `e-k1` is also made by experiment\[0\]",
        ),
        (
            [{"id": "e", "scenario": "base.toml"}, {"id": "e", "scenario": "base.toml"}],
            r"experiment\[1\]: key `id`: experiment `e` is also made by experiment\[0\]",
        ),
        (
            [{"id": "e", "scenario": "base.toml", "vary": {"key": "x", "values": [1, 1.0]}}],
            r"experiment\[0\]: key `vary.values`: two values are both written `1`",
        ),
        (
            [{"id": "e", "scenario": "base.toml", "vary": {"key": "x", "values": ["a:b"]}}],
            r"key `vary.values`: `a:b` cannot be part of an id",
        ),
        (
            [{"id": "e", "scenario": "base.toml", "vary": {"key": "x", "values": [{"a": 1}]}}],
            r"key `vary.values`: .*give `labels`",
        ),
        (
            [{"id": "e", "scenario": "base.toml", "vary": {"values": [1]}}],
            r"key `vary.key`",
        ),
        (
            [
                {
                    "id": "e",
                    "scenario": "base.toml",
                    "set": {"link.0.loss": 0.1},
                    "vary": {"key": "link.0.loss", "values": [0.2]},
                }
            ],
            r"key `vary.key`: `link.0.loss` is also in `set`",
        ),
        (
            [{"id": "e", "scenario": "base.toml", "vary": {"key": "link.3.loss", "values": [0.2]}}],
            r"experiment\[0\]: key `set`: .*index 3 out of range",
        ),
        (
            [{"id": "a:b", "scenario": "base.toml"}],
            r"key `id`: `a:b` holds `:`",
        ),
        (
            [
                {
                    "id": "e",
                    "scenario": "base.toml",
                    "vary": {"key": "x", "values": [1], "columns": ["{zz:flow:m.x}"]},
                }
            ],
            r"experiment `e-x1`: key `vary.columns`: .*no experiment `zz`",
        ),
        (
            [
                {
                    "id": "e",
                    "scenario": "base.toml",
                    "vary": {"key": "x", "values": [1], "columns": ["{flow:m.x} +"]},
                }
            ],
            r"experiment\[0\]: key `vary.columns`: .*syntax error",
        ),
    ],
)
def test_bad_vary_names_the_entry(
    tmp_path: Path, experiments: list[dict[str, Any]], needle: str
) -> None:
    spec, path = _paper(tmp_path, {"experiment": experiments})
    with pytest.raises(PaperError, match=needle):
        _experiments(spec, path, quick=False)


def test_labels_name_values_that_are_tables(tmp_path: Path) -> None:
    spec, path = _paper(
        tmp_path,
        {
            "experiment": [
                {
                    "id": "etr",
                    "scenario": "base.toml",
                    "vary": {
                        "key": "flow.0.encoder.etr",
                        "values": [{"constant": 0.6}, {"profile": "ios"}],
                        "labels": ["60", "ios"],
                    },
                }
            ]
        },
    )
    exps = _experiments(spec, path, quick=False)
    assert exps["etr-etr60"].scenario["flow"][0]["encoder"]["etr"] == {"constant": 0.6}
    assert exps["etr-etrios"].scenario["flow"][0]["encoder"]["etr"] == {"profile": "ios"}


def test_claim_vary_substitutes_placeholders_before_references(tmp_path: Path) -> None:
    spec, path = _paper(
        tmp_path,
        {
            "claim": [
                {
                    "id": "err-{cc}-k{k}",
                    "text": "{cc}: formula within 3 ms at K = {k}",
                    "experiment": "f-k{k}-{cc}",
                    "metric": "abs({flow:m.lat} - {f-k{k}-{cc}:flow:m.formula})",
                    "check": {"op": "<=", "metric": "{base-{cc}:flow:m.lat}", "factor": 0.1},
                    "note": "K = {k}",
                    "vary": [
                        {"name": "k", "values": [0, 10]},
                        {"name": "cc", "values": ["bbr", "copa"]},
                    ],
                }
            ]
        },
    )
    known = {f"f-k{k}-{cc}": [1, 2] for k in (0, 10) for cc in ("bbr", "copa")}
    known |= {"base-bbr": [1, 2], "base-copa": [1, 2, 3]}
    claims = _claims(spec, path, known)
    assert [c.id for c in claims] == ["err-bbr-k0", "err-copa-k0", "err-bbr-k10", "err-copa-k10"]
    c = claims[3]
    assert c.text == "copa: formula within 3 ms at K = 10"
    assert c.experiment == "f-k10-copa"
    assert c.metric == "abs({flow:m.lat} - {f-k10-copa:flow:m.formula})"
    assert c.check == {"op": "<=", "metric": "{base-copa:flow:m.lat}", "factor": 0.1}
    assert c.note == "K = 10"
    # The expanded expression runs.
    summaries = {
        "f-k10-copa": [{"flows": [{"name": "m", "lat": 20.0, "formula": 18.0}]}] * 2,
        "base-copa": [{"flows": [{"name": "m", "lat": 40.0}]}] * 3,
    }
    res = _judge(c, summaries, {"f-k10-copa": [1, 2], "base-copa": [1, 2, 3]})
    assert res.values == [2.0, 2.0]
    assert res.reference == pytest.approx(4.0)
    assert res.holds is True


@pytest.mark.parametrize(
    ("claims", "needle"),
    [
        (
            [{"id": "same", "vary": {"name": "k", "values": [1, 2]}}],
            r"claim\[0\] \(k = 2\): key `id`: claim `same` is also made by claim\[0\] \(k = 1\)",
        ),
        (
            [{"id": "c1"}, {"id": "c{k}", "vary": {"name": "k", "values": [0, 1]}}],
            r"claim\[1\] \(k = 1\): key `id`: claim `c1` is also made by claim\[0\]",
        ),
        (
            [{"id": "c{k}", "vary": {"name": "k-x", "values": [1]}}],
            r"claim\[0\]: key `vary.name`",
        ),
        (
            [{"id": "c{k}", "vary": [{"name": "k", "values": [1]}, {"name": "k", "values": [2]}]}],
            r"claim\[0\]: key `vary`: two tables vary the same name",
        ),
        (
            [{"id": "c{k}", "experiment": "e{k}", "vary": {"name": "k", "values": [1, 2]}}],
            r"claim\[0\] \(k = 2\) `c2`: key `experiment`: no experiment `e2`",
        ),
    ],
)
def test_bad_claim_vary_names_the_entry(
    tmp_path: Path, claims: list[dict[str, Any]], needle: str
) -> None:
    base = {"text": "t", "experiment": "e1", "metric": "m", "check": {"op": "<", "value": 1}}
    spec, path = _paper(tmp_path, {"claim": [base | c for c in claims]})
    with pytest.raises(PaperError, match=needle):
        _claims(spec, path, {"e1": [1]})


def test_a_swept_experiment_gets_one_table(tmp_path: Path) -> None:
    spec, path = _paper(
        tmp_path,
        {
            "experiment": [
                {
                    "id": "f",
                    "scenario": "base.toml",
                    "seeds": [1, 2],
                    "compare": ["gcc", "bbr"],
                    "vary": {
                        "key": "link.0.loss",
                        "values": [0.0, 0.1],
                        "name": "p",
                        "columns": ["flow:media.lat", "{flow:media.lat} - {flow:media.formula}"],
                    },
                },
                {
                    "id": "plain",
                    "scenario": "base.toml",
                    "vary": {"key": "link.0.loss", "values": [0.2]},
                },
            ]
        },
    )
    exps = _experiments(spec, path, quick=False)

    def run(lat: float, formula: float) -> dict[str, Any]:
        return {"flows": [{"name": "media", "lat": lat, "formula": formula}]}

    summaries = {
        "f-p0-gcc": [run(10, 9), run(20, 18)],
        "f-p0-bbr": [run(30, 30), run(30, 30)],
        "f-p0.1-gcc": [run(40, 0), run(40, 0)],
        "f-p0.1-bbr": [run(1, 1), {"flows": []}],
        "plain-loss0.2": [run(1, 1)],
    }
    text = _markdown({}, "toy", False, exps, summaries, [], {}, tmp_path)
    lines = text.splitlines()
    start = lines.index("## f: p = 0, 0.1")
    assert start < lines.index("## f-p0"), "the sweep comes before its values' sections"
    gcc = lines.index("Controller `gcc`:")
    assert lines[gcc + 2 : gcc + 6] == [
        "| p | `flow:media.lat` | `{flow:media.lat} - {flow:media.formula}` |",
        "|---|---|---|",
        "| 0 | 15 | 1.5 |",
        "| 0.1 | 40 | 40 |",
    ]
    bbr = lines.index("Controller `bbr`:")
    assert lines[bbr + 4 : bbr + 6] == ["| 0 | 30 | 0 |", "| 0.1 | 1 | 0 |"]
    assert "`link.0.loss` set to each value (experiments `f-p<value>-<controller>`)" in text
    assert "Scenario `base.toml`, `link.0.loss` = 0.1." in text
    assert text.count("## f: p =") == 1
    assert "## plain:" not in text, "no columns, no table"
    assert "## plain-loss0.2" in text


def test_quick_duration_wins_over_set_and_vary(tmp_path: Path) -> None:
    spec, path = _paper(
        tmp_path,
        {
            "experiment": [
                {
                    "id": "long",
                    "scenario": "base.toml",
                    "set": {"duration": "150s"},
                    "quick": {"duration": "3s"},
                },
                {
                    "id": "sweep",
                    "scenario": "base.toml",
                    "vary": {"key": "duration", "values": ["60s", "90s"]},
                    "quick": {"duration": "3s"},
                },
            ]
        },
    )
    full = _experiments(spec, path, quick=False)
    assert full["long"].scenario["duration"] == "150s"
    assert full["sweep-duration90s"].scenario["duration"] == "90s"
    quick = _experiments(spec, path, quick=True)
    assert {e.scenario["duration"] for e in quick.values()} == {"3s"}


def test_unknown_experiment_keys_and_estimate_flows_are_named(tmp_path: Path) -> None:
    folder = make_paper(tmp_path, CLAIMS)
    spec = tomllib.loads((folder / "paper.toml").read_text())
    spec["experiment"][0]["window"] = {"steady": ["1s", "end"]}
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    unknown = r"experiment\[0\]: unknown key `window` \(allowed: .*windows"
    with pytest.raises(PaperError, match=unknown):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    spec["experiment"][0].pop("window")
    spec["experiment"][0]["estimates"] = "nope"
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"experiment\[0\]: key `estimates`: no flow named `nope`"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")


def test_traced_flows_are_named_and_need_windows(tmp_path: Path) -> None:
    folder = make_paper(tmp_path, CLAIMS)
    spec = tomllib.loads((folder / "paper.toml").read_text())
    spec["experiment"][0]["trace"] = ["nope"]
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"experiment\[0\]: key `trace`: no flow named `nope`"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    spec["experiment"][0]["trace"] = 3
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"key `trace`: expected a flow name"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")


def test_trace_window_metrics_time_each_mode() -> None:
    import polars as pl

    from rtcc.reproduce.metrics import metric_value, trace_window_metrics

    # mode 0 until 3 s, 1 from 3 s, 2 from 5 s; a fractional variable too.
    rows = []
    for i in range(10):
        t = float(i)
        rows.append((t, "cdm", "mode", 0.0 if t < 3 else 1.0 if t < 5 else 2.0))
        rows.append((t, "cdm", "loss", 0.01 * i))
        rows.append((t, "other", "mode", 7.0))
    trace = pl.DataFrame(rows, schema=["time_s", "flow", "variable", "value"], orient="row")
    got = trace_window_metrics(trace, {"all": (0.0, 10.0), "late": (4.0, 10.0)}, ["cdm"])
    cc = got["all"]["cdm"]["cc"]
    assert cc["first"]["mode"] == {"0": 0.0, "1": 3.0, "2": 5.0}
    assert cc["share"]["mode"] == {"0": 0.3, "1": 0.2, "2": 0.5}
    assert cc["mode_max"] == 2.0
    assert cc["mode_min"] == 0.0
    assert cc["loss"] == pytest.approx(0.045)
    # A fractional variable has no first/share entries; flows not traced none.
    assert "loss" not in cc["first"]
    assert "other" not in got["all"]
    assert got["late"]["cdm"]["cc"]["first"]["mode"] == {"1": 4.0, "2": 5.0}
    summary = {"windows": got}
    assert metric_value(summary, "windows.all.cdm.cc.first.mode.1") == 3.0
    # A value never taken has share 0 (not missing), but no first time.
    assert metric_value(summary, "windows.late.cdm.cc.share.mode.0") == 0.0
    assert metric_value(summary, "windows.late.cdm.cc.first.mode.0") is None
    assert metric_value(summary, "windows.late.cdm.cc.share.nope.0") is None


def test_estimates_are_scored_against_the_available_bandwidth() -> None:
    import polars as pl

    from rtcc.reproduce.metrics import estimate_metrics

    # Two estimations (state 0 over 0-1 s and 10-12 s), a third cut by the end.
    states = [(0.0, 0), (0.5, 0), (1.0, 1), (5.0, 1), (10.0, 0), (12.0, 1), (20.0, 0)]
    estimates = {1.0: 900.0, 12.0: 1500.0}
    rows = []
    for t, state in states:
        rows.append((t, "svc", "state", float(state)))
        if t in estimates:
            rows.append((t, "svc", "estimate_kbps", estimates[t]))
            rows.append((t, "svc", "start_trains", 2.0 if t < 5 else 3.0))
        rows.append((t, "other", "state", 0.0))
    trace = pl.DataFrame(rows, schema=["time_s", "flow", "variable", "value"], orient="row")
    times = [x / 2 for x in range(0, 41)]
    avail = [1000.0 if t < 5 else 2000.0 for t in times]
    ts = pl.DataFrame({"time_s": times, "flow": ["svc"] * len(times), "avail_kbps": avail})
    got = estimate_metrics(trace, ts, "svc")
    assert got["count"] == 2
    assert got["mad_kbps"] == pytest.approx((100 + 500) / 2)
    assert got["bias_kbps"] == pytest.approx((-100 - 500) / 2)
    assert got["trains"] == pytest.approx(2.5)
    assert got["true_kbps"] == pytest.approx(1500)
    # No avail column, or no complete estimation: nothing to score.
    assert estimate_metrics(trace, ts.drop("avail_kbps"), "svc") == {}
    assert estimate_metrics(trace.filter(pl.col("time_s") < 1), ts, "svc") == {}


def test_the_estimates_figure_needs_a_traced_estimation(tmp_path: Path) -> None:
    from rtcc.reproduce.rendering import _estimates_figure

    rows = ["time_s,flow,variable,value"] + [
        f"{t / 10:.1f},svc,state,{0 if t < 5 else 1}" for t in range(10)
    ]
    rows.append("0.5,svc,estimate_kbps,900")
    (tmp_path / "timeseries.csv").write_text(
        "time_s,flow,avail_kbps\n" + "".join(f"{t / 10:.1f},svc,1000\n" for t in range(10))
    )
    out = tmp_path / "e.png"
    # No cc_trace.csv: nothing to draw.
    assert not _estimates_figure(tmp_path, "svc", out)
    (tmp_path / "cc_trace.csv").write_text("\n".join(rows) + "\n")
    assert _estimates_figure(tmp_path, "svc", out)
    assert out.stat().st_size > 1000
    # A flow without estimations: nothing either.
    assert not _estimates_figure(tmp_path, "other", tmp_path / "o.png")


def test_every_paper_toml_loads() -> None:
    """Each paper's experiments expand and every claim names a real experiment."""
    root = Path(__file__).resolve().parents[2] / "scenarios" / "papers"
    papers = sorted(p for p in root.iterdir() if (p / "paper.toml").is_file())
    assert {p.name for p in papers} >= {"camel", "delay-bbr", "autorec", "svc-probing"}
    for folder in papers:
        path = folder / "paper.toml"
        spec = tomllib.loads(path.read_text())
        for quick in (False, True):
            experiments = _experiments(spec, path, quick)
            seeds = {k: list(e.seeds) for k, e in experiments.items()}
            claims = _claims(spec, path, seeds)
            assert claims, f"{folder.name}: no claims"
            assert all(c.experiment in experiments for c in claims)


def test_the_autorec_paper_expands_its_sweeps() -> None:
    """AutoRec §VII-A: K = 0..10 for three controllers, every claim resolvable."""
    path = Path(__file__).resolve().parents[2] / "scenarios" / "papers" / "autorec" / "paper.toml"
    spec = tomllib.loads(path.read_text())
    experiments = _experiments(spec, path, False)
    for cc in ("bbr", "copa", "cubic"):
        for k in range(11):
            e = experiments[f"fig13-k{k}-{cc}"]
            flow = e.scenario["flow"][0]
            assert flow["cc"] == cc
            assert flow["recovery_config"]["fixed_level"] == k
    assert experiments["fig17-off-rate2Mbps"].scenario["link"][0]["rate"] == "2Mbps"
    claims = _claims(spec, path, {k: list(e.seeds) for k, e in experiments.items()})
    ids = {c.id for c in claims}
    assert "fig13-latency-bbr-k10" in ids
    assert "exactly-once-autorec" in ids


# ---- the rules (docs/reproduce.md) ---------------------------------------------------


def _flow(name: str, **values: object) -> dict[str, object]:
    return {"name": name, **values}


def _runs(*flows_per_seed: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{"flows": flows} for flows in flows_per_seed]


def test_a_comparison_that_holds_on_the_mean_but_not_on_most_seeds_is_mixed() -> None:
    # Ours beats the other flow by a lot on seed 1 and loses on seeds 2-5:
    # the mean says "holds", the seeds say otherwise.
    xs = [100.0, 10.0, 10.0, 10.0, 10.0]
    runs = _runs(*[[_flow("a", x=x), _flow("b", x=20.0)] for x in xs])
    claim = _claim("flow:a.x", {"op": ">", "metric": "flow:b.x"})
    res = _judge(claim, {"e": runs}, {"e": [1, 2, 3, 4, 5]})
    assert res.verdict == "mixed"
    assert (res.seeds_held, res.seeds_judged) == (1, 5)
    assert "not on seed 2, 3, 4, 5" in res.why
    # Four of five seeds (80 %) is enough.
    runs = _runs(*[[_flow("a", x=x), _flow("b", x=20.0)] for x in [30, 30, 30, 30, 10]])
    assert _judge(claim, {"e": runs}, {"e": [1, 2, 3, 4, 5]}).verdict == "holds"
    # Paired per seed across experiments: the other experiment's seed, not its mean.
    summaries = {
        "e": _runs(*[[_flow("a", x=x)] for x in [11.0, 11.0, 11.0, 11.0, 11.0]]),
        "o": _runs(*[[_flow("a", x=x)] for x in [1.0, 1.0, 50.0, 1.0, 1.0]]),
    }
    seeds = {"e": [1, 2, 3, 4, 5], "o": [1, 2, 3, 4, 5]}
    res = _judge(_claim("flow:a.x", {"op": ">", "metric": "o:flow:a.x"}), summaries, seeds)
    assert res.verdict == "holds", "11 > mean 10.8 and 11 > 1 on 4 of 5 seeds"
    summaries["o"] = _runs(*[[_flow("a", x=x)] for x in [1.0, 1.0, 50.0, 50.0, 1.0]])
    res = _judge(_claim("flow:a.x", {"op": "<", "metric": "o:flow:a.x"}), summaries, seeds)
    assert res.verdict == "mixed", "11 < mean 20.6 but only on seeds 3 and 4"


def test_a_comparison_against_a_collapsed_baseline_is_void() -> None:
    seeds = {"ours": [1, 2, 3, 4, 5], "base": [1, 2, 3, 4, 5]}
    ours = _runs(*[[_flow("media", frame_delay=100.0, stall_ratio=0.01)]] * 5)
    dead = _runs(*[[_flow("media", frame_delay=2000.0, stall_ratio=0.9)]] * 5)
    fine = _runs(*[[_flow("media", frame_delay=150.0, stall_ratio=0.02)]] * 5)
    check = {"op": "<", "metric": "base:flow:media.frame_delay"}
    claim = Claim(id="c", text="t", experiment="ours", metric="flow:media.frame_delay", check=check)
    res = _judge(claim, {"ours": ours, "base": dead}, seeds)
    assert res.verdict == "void"
    assert "baseline `base` flow `media` collapsed (stall ratio 90.0%)" in res.why
    assert _judge(claim, {"ours": ours, "base": fine}, seeds).verdict == "holds"
    # The same for a baseline flow that loses 40 % of its packets, or shows
    # too few of the frames its encoder produced.
    lossy = _runs(*[[_flow("media", frame_delay=150.0, loss_rate=0.4)]] * 5)
    assert _judge(claim, {"ours": ours, "base": lossy}, seeds).verdict == "void"
    few = _runs(*[[_flow("media", frame_delay=150.0, frames_displayed=400)]] * 5)
    setting = Setting(frames={"base": {"media": 1800.0}})
    res = _judge(claim, {"ours": ours, "base": few}, seeds, setting)
    assert res.verdict == "void"
    assert "400 of about 1800 frames displayed" in res.why
    # Another flow of the same experiment counts as well.
    both = _runs(*[[_flow("a", x=1.0), _flow("b", x=5.0, stall_ratio=0.8)]] * 5)
    res = _judge(
        _claim("flow:a.x", {"op": "<", "metric": "flow:b.x"}), {"e": both}, {"e": seeds["ours"]}
    )
    assert res.verdict == "void"
    # Unless the paper itself reports the collapse.
    reported = Claim(
        id="c",
        text="t",
        experiment="ours",
        metric="flow:media.frame_delay",
        check=check,
        collapse_expected="the paper's Fig. 9 shows the baseline stalling",
    )
    assert _judge(reported, {"ours": ours, "base": dead}, seeds).verdict == "holds"


def test_an_absolute_claim_a_baseline_also_passes_is_not_discriminating() -> None:
    seeds = {"camel": [1, 2, 3, 4, 5], "gcc": [1, 2, 3, 4, 5]}
    camel = _runs(*[[_flow("media", loss_rate=0.001)]] * 5)
    gcc = _runs(*[[_flow("media", loss_rate=0.002)]] * 5)
    claim = Claim(
        id="c",
        text="Camel loses less than 1 %",
        experiment="camel",
        metric="flow:media.loss_rate",
        check={"op": "<", "value": 0.01},
    )
    setting = Setting(baselines={"camel": ("gcc",)})
    res = _judge(claim, {"camel": camel, "gcc": gcc}, seeds, setting)
    assert res.verdict == "not discriminating"
    assert "`gcc`" in res.why
    # A baseline that fails the value makes the claim discriminating.
    gcc = _runs(*[[_flow("media", loss_rate=0.05)]] * 5)
    assert _judge(claim, {"camel": camel, "gcc": gcc}, seeds, setting).verdict == "holds"
    # Explicit `baselines` win over the compare group.
    explicit = Claim(**{**claim.__dict__, "baselines": ("other",)})
    other = _runs(*[[_flow("media", loss_rate=0.0)]] * 5)
    summaries = {"camel": camel, "gcc": gcc, "other": other}
    res = _judge(explicit, summaries, {**seeds, "other": [1, 2, 3, 4, 5]}, setting)
    assert res.verdict == "not discriminating"
    # A comparison with a baseline's metric is discriminating by construction.
    relative = Claim(
        id="c",
        text="t",
        experiment="camel",
        metric="flow:media.loss_rate",
        check={"op": "<", "metric": "gcc:flow:media.loss_rate"},
    )
    assert _judge(relative, {"camel": camel, "gcc": gcc}, seeds, setting).verdict == "holds"


def test_a_published_number_is_checked_on_both_sides() -> None:
    seeds = {"e": [1, 2, 3, 4, 5]}

    def judged(x: float, **keys: object) -> str:
        summaries = {"e": _runs(*[[_flow("a", x=x)]] * 5)}
        claim = Claim(id="c", text="t", experiment="e", metric="flow:a.x", **keys)  # type: ignore[arg-type]
        return _judge(claim, summaries, seeds).verdict

    # "loses about 10 %": a one-sided "more than 5 %" would pass 0.3.
    one_sided = {"check": {"op": ">", "value": 0.05}}
    assert judged(0.3, **one_sided) == "holds"
    assert judged(0.3, published=0.1, **one_sided) == "fails", "default ±30 %: [0.07, 0.13]"
    assert judged(0.12, published=0.1, **one_sided) == "holds"
    assert judged(0.06, published=0.1, **one_sided) == "fails", "below the band"
    assert judged(0.12, published=0.1, tolerance=0.1, **one_sided) == "fails"
    assert judged(0.06, published=0.1, published_range=(0.05, 0.2), **one_sided) == "holds"
    # Without a check: the published band alone.
    assert judged(0.1, published=0.1) == "holds"
    assert judged(0.2, published=0.1) == "fails"


def test_every_condition_of_the_sentence_must_hold() -> None:
    # "Fair and with convergent latency": Jain high, but loss and queue too.
    runs = _runs(*[[_flow("a", x=1.0)]] * 5)
    for r in runs:
        r["windows"] = {"steady": {"jain": 0.99, "loss_rate": 0.5, "queue_delay_ms": 385.0}}
    claim = Claim(
        id="fair",
        text="fair and with convergent latency",
        experiment="e",
        metric="windows.steady.jain",
        check={"op": ">=", "value": 0.9},
        also=(
            {"metric": "windows.steady.loss_rate", "op": "<", "value": 0.02},
            {"metric": "windows.steady.queue_delay_ms", "op": "<", "value": 100},
        ),
    )
    res = _judge(claim, {"e": runs}, {"e": [1, 2, 3, 4, 5]})
    assert res.verdict == "fails"
    assert "`windows.steady.loss_rate` = 0.5, wanted < 0.02" in res.why
    assert "`windows.steady.queue_delay_ms` = 385, wanted < 100" in res.why


def test_windows_resolve_the_steady_window_and_measure_loss_and_delay(tmp_path: Path) -> None:
    from rtcc.reproduce.metrics import window_metrics
    from rtcc.reproduce.spec import _resolve_windows

    scenario = {"duration": "60s", "flow": [{"start": "0s"}, {"start": "20s"}, {}]}
    windows = _resolve_windows({"steady": ["last_start+10s", "end"]}, scenario, "here")
    assert windows == {"steady": (30.0, 60.0)}
    with pytest.raises(PaperError, match=r"here: key `windows.bad`: start .* is not before end"):
        _resolve_windows({"bad": ["end", "10s"]}, scenario, "here")
    import polars as pl

    ts = pl.DataFrame(
        {
            "time_s": [1.0, 1.0, 2.0, 2.0, 3.0],
            "flow": ["a", "b", "a", "b", "a"],
            "goodput_kbps": [100.0, 300.0, 100.0, 300.0, 999.0],
            "queue_delay_ms": [10.0, 10.0, 30.0, 30.0, 0.0],
            "packets_sent": [10, 10, 10, 30, 5],
            "packets_lost": [1, 0, 1, 2, 5],
        }
    )
    m = window_metrics(ts, {"w": (1.0, 3.0)})["w"]
    assert m["a"]["loss_rate"] == pytest.approx(0.1)
    assert m["b"]["loss_rate"] == pytest.approx(0.05)
    assert m["loss_rate"] == pytest.approx(4 / 60)
    assert m["queue_delay_ms"] == pytest.approx(20.0)
    assert m["jain"] == pytest.approx(400**2 / (2 * (100**2 + 300**2)))
    assert "psnr_db_min" not in m["a"]
    # The worst picture sample of the window; samples without a picture
    # (null, NaN) are not zero.
    scored = ts.with_columns(psnr_db=pl.Series([30.0, None, 18.5, float("nan"), 10.0]))
    m = window_metrics(scored, {"w": (1.0, 3.0)})["w"]
    assert m["a"]["psnr_db_min"] == pytest.approx(18.5)
    assert "psnr_db_min" not in m["b"]


def test_a_full_run_needs_five_seeds(tmp_path: Path) -> None:
    folder = make_paper(tmp_path, CLAIMS)
    spec = tomllib.loads((folder / "paper.toml").read_text())
    del spec["min_seeds"]
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(
        PaperError, match=r"experiment\[0\]: key `seeds`: 2 seed\(s\); .* at least 5"
    ):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")


def test_a_gain_over_another_experiment_is_a_comparison() -> None:
    # "Camel's bitrate is 20 % above GCC's": a gain expression over a baseline
    # run on its own link, checked against a constant.
    seeds = {"camel": [1, 2, 3, 4, 5], "gcc": [1, 2, 3, 4, 5]}
    camel = _runs(*[[_flow("media", x=120.0)]] * 5)
    gcc = _runs(*[[_flow("media", x=100.0, stall_ratio=0.01)]] * 5)
    claim = Claim(
        id="gain",
        text="t",
        experiment="camel",
        metric="{flow:media.x} / {gcc:flow:media.x} - 1",
        check={"op": ">=", "value": 0.1},
    )
    assert not claim.absolute, "it relates two experiments"
    setting = Setting(baselines={"camel": ("gcc",)})
    # Not tried on the baseline (which would compute Camel's own gain again).
    assert _judge(claim, {"camel": camel, "gcc": gcc}, seeds, setting).verdict == "holds"
    # And void when that baseline collapsed.
    gcc = _runs(*[[_flow("media", x=100.0, stall_ratio=0.7)]] * 5)
    res = _judge(claim, {"camel": camel, "gcc": gcc}, seeds, setting)
    assert res.verdict == "void"
    assert "`gcc` flow `media`" in res.why
    # Two flows of one experiment: a comparison too; one flow alone: absolute.
    two = Claim(id="c", text="t", experiment="e", metric="{flow:a.x} / {flow:b.x}")
    assert not Claim(**{**two.__dict__, "check": {"op": ">", "value": 1}}).absolute
    one = Claim(
        id="c", text="t", experiment="e", metric="{flow:a.x} * 8", check={"op": ">", "value": 1}
    )
    assert one.absolute


def test_a_window_table_shows_every_flow_over_the_seeds(tmp_path: Path) -> None:
    folder = make_paper(tmp_path, CLAIMS)
    spec = tomllib.loads((folder / "paper.toml").read_text())
    spec["experiment"][0]["window_table"] = True
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"key `window_table`: needs `windows`"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    spec["experiment"][0]["window_table"] = "yes"
    spec["experiment"][0]["windows"] = {"late": ["10s", "end"]}
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    with pytest.raises(PaperError, match=r"key `window_table`: expected true or false"):
        reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    spec["experiment"][0]["window_table"] = True
    (folder / "paper.toml").write_text(tomli_w.dumps(spec))
    md, _ = reproduce(folder, out=tmp_path / "x.md", runs_dir=tmp_path / "runs")
    text = md.read_text()
    head = "Window `late` (10-20 s), mean (min-max) over 2 seed(s); Jain's index "
    assert head in text
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    assert rows["| flow"].startswith("| flow | goodput (kbps) | target (kbps) | queue delay (ms)")
    # The fixed flow's goodput over 10-20 s is its 200 kbps less headers, on both seeds.
    fixed = rows["| fixed"].split(" | ")[1]
    mean = float(fixed.split(" ")[0])
    assert 150 < mean <= 200, fixed
