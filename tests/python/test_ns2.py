"""rtcc's TFRC and TCP against ns-2's agents, on papers/svc-topdown-probing.txt's
topologies (bench/ns2/crosscheck.py). ns-2 is the simulator the paper ran: if
rtcc's baselines behaved differently from its agents, the paper's comparisons
would be judged against the wrong baseline. Skips without Debian's ``ns2``
(``make sim-tools`` installs it)."""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _crosscheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "ns2_crosscheck", ROOT / "bench/ns2/crosscheck.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cc = _crosscheck()
needs_ns2 = pytest.mark.skipif(
    shutil.which("ns") is None, reason="ns-2 not installed (make sim-tools; Debian package ns2)"
)


def _means(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: statistics.fmean(run[name] for run in runs) for name in runs[0]}


def _jains(runs: list[dict[str, float]]) -> float:
    return statistics.fmean(cc.jain(list(run.values())) for run in runs)


@needs_ns2
@pytest.mark.parametrize(
    ("experiment", "ns2_jain"),
    # ns-2's Jain on seeds 1-3 (bench/ns2/crosscheck.py, 2026-11-27): the
    # RTT-unfairness of TFRC grows with the RTT ratio.
    [("table3-tfrc-rtt1", 1.0), ("table3-tfrc-rtt4", 0.86)],
)
def test_two_tfrc_flows_share_as_in_ns2(experiment: str, ns2_jain: float) -> None:
    row = cc.compare([experiment], [1, 2, 3])[0]
    ours, theirs = _means(row.ours), _means(row.ns2)
    assert _jains(row.ns2) == pytest.approx(ns2_jain, abs=0.03), "ns-2 itself changed"
    assert _jains(row.ours) == pytest.approx(_jains(row.ns2), abs=0.03), (ours, theirs)
    for name in ours:
        assert ours[name] == pytest.approx(theirs[name], rel=0.08), (name, ours, theirs)


@needs_ns2
def test_tfrc_peers_on_the_brite_paths_share_as_in_ns2() -> None:
    # The generated 50-node topology of Table 2: the `paths` mapping (links
    # joined into nodes by the paths that cross them).
    row = cc.compare(["table2-8-peers-tfrc"], [1, 2])[0]
    assert _jains(row.ours) == pytest.approx(_jains(row.ns2), abs=0.03)
    ours, theirs = _means(row.ours), _means(row.ns2)
    assert sum(ours.values()) == pytest.approx(sum(theirs.values()), rel=0.05)


def _dumbbell(flows: list[dict[str, Any]]) -> dict[str, Any]:
    base = cc.load_scenario(ROOT / "scenarios/papers/svc-probing/dumbbell-tfrc.toml")
    return {**base, "flow": flows}


def _tcp(name: str, variant: str, start: str) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "tcp",
        "cc": variant,
        "mss": "960B",
        "initial_cwnd": 1,
        "start": start,
    }


@needs_ns2
@pytest.mark.parametrize("variant", ["tahoe", "newreno"])
def test_tcp_on_the_dumbbell_matches_ns2(variant: str) -> None:
    alone = cc.compare_one("alone", _dumbbell([_tcp("a", variant, "0s")]), (200.0, 500.0), [1])
    ours, theirs = _means(alone.ours), _means(alone.ns2)
    assert ours["a"] == pytest.approx(theirs["a"], rel=0.03)
    two = _dumbbell([_tcp("a", variant, "0s"), _tcp("b", variant, "2s")])
    row = cc.compare_one("two", two, (200.0, 500.0), [1])
    ours, theirs = _means(row.ours), _means(row.ns2)
    for name in ("a", "b"):
        assert ours[name] == pytest.approx(theirs[name], rel=0.06), (ours, theirs)


def test_the_mapping_refuses_what_it_does_not_write() -> None:
    scenario = _dumbbell([_tcp("a", "cubic", "0s")])
    with pytest.raises(cc.Unsupported, match="cc = 'cubic'"):
        cc.to_tcl(scenario, 1, (0.0, 10.0))
    bytes_queue = {**scenario, "link": [{**scenario["link"][0], "queue": "30KB"}]}
    with pytest.raises(cc.Unsupported, match=r"link\.0\.queue = '30KB'"):
        cc.to_tcl(bytes_queue, 1, (0.0, 10.0))
    media = _dumbbell([{"name": "v", "kind": "media", "cc": "gcc"}])
    with pytest.raises(cc.Unsupported, match=r"flow\.0\.kind = 'media'"):
        cc.to_tcl(media, 1, (0.0, 10.0))


def test_paths_join_links_into_nodes() -> None:
    # Fig. 12's chain: the main path crosses L1..L6, each cross flow one link.
    scenario = cc.load_scenario(ROOT / "scenarios/papers/svc-probing/fig12-tfrc.toml")
    links, flows = cc.topology(scenario)
    by_name = {link.name: link for link in links}
    chain = ["L1", "L2", "L3", "L4", "L5", "L6"]
    for a, b in itertools.pairwise(chain):
        assert by_name[a].dst == by_name[b].src
    assert len({n for link in links for n in (link.src, link.dst)}) == 7
    main = next(f for f in flows if f.name == "main")
    assert (main.first, main.last) == (by_name["L1"].src, by_name["L6"].dst)
    cross = next(f for f in flows if f.name == "x4-0")
    assert (cross.first, cross.last) == (by_name["L4"].src, by_name["L4"].dst)
