"""The BRITE-like generator and the server-to-peers scenarios (rtcc.topology)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections import deque
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import rtcc
from rtcc.cli import main as cli_main
from rtcc.topology import Topology, brite, peers_scenario, pick_endpoints, routes

ROOT = Path(__file__).resolve().parents[2]
TABLE2 = ROOT / "scenarios" / "papers" / "svc-probing"

VARIANTS = [
    ("waxman", "random", 1),
    ("waxman", "random", 2),
    ("waxman", "random", 17),
    ("waxman", "heavy-tailed", 1),
    ("ba", "random", 1),
    ("ba", "random", 5),
]


def hop_counts(t: Topology, source: int) -> dict[int, int]:
    """Plain BFS over the graph, edge routers entered only as destinations."""
    dist = {source: 0}
    queue = deque([source])
    while queue:
        u = queue.popleft()
        if u != source and not t.nodes[u].core:
            continue
        for v in t.neighbours(u):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def least_delay_among_fewest_hops(t: Topology, source: int, hops: dict[int, int]) -> dict[int, int]:
    """Least delay over the BFS layers (a DP over the shortest-hop DAG)."""
    best = {source: 0}
    for u in sorted(hops, key=lambda n: hops[n]):
        if u != source and not t.nodes[u].core:
            continue
        for v in t.neighbours(u):
            if hops.get(v) == hops[u] + 1:
                d = best[u] + t.delay_us(u, v)
                best[v] = min(best.get(v, d), d)
    return best


@pytest.mark.parametrize(("model", "placement", "seed"), VARIANTS)
def test_the_paper_s_shape(model: str, placement: str, seed: int) -> None:
    t = brite(50, 33, 2, model=model, placement=placement, seed=seed)  # type: ignore[arg-type]
    assert len(t.nodes) == 50
    assert [n.id for n in t.nodes] == list(range(50))
    assert t.core == tuple(range(33))
    assert len(t.edge) == 17
    degrees = [t.degree(n) for n in range(50)]
    assert min(degrees) >= 2, degrees
    # Edge routers: exactly m links, all into the core.
    for e in t.edge:
        assert t.degree(e) == 2
        assert all(t.nodes[c].core for c in t.neighbours(e))
    # Simple graph: no self-loops, no duplicates, (u, v) with u < v.
    assert all(u < v for u, v in t.links)
    assert len(set(t.links)) == len(t.links)
    # BRITE's link counts: Waxman adds m per core router, BA a clique of m + 1
    # then m per router; each edge router adds m.
    core_links = 2 * 33 if model == "waxman" else 3 + 2 * (33 - 3)
    assert len(t.links) == core_links + 2 * 17
    # Points are distinct and on the plane.
    points = {(n.x, n.y) for n in t.nodes}
    assert len(points) == 50
    assert all(0 <= n.x < 1000 and 0 <= n.y < 1000 for n in t.nodes)


@pytest.mark.parametrize(("model", "placement", "seed"), VARIANTS)
def test_connected(model: str, placement: str, seed: int) -> None:
    t = brite(model=model, placement=placement, seed=seed)  # type: ignore[arg-type]
    seen = {0}
    queue = deque([0])
    while queue:
        for v in t.neighbours(queue.popleft()):
            if v not in seen:
                seen.add(v)
                queue.append(v)
    assert seen == set(range(50))


def test_heavy_tailed_placement_fills_squares_in_order() -> None:
    # BRITE's P_HT visits the 100-unit squares row by row, at least one router
    # in each: 50 routers fill at most 50 squares, the top five rows.
    for seed in (1, 2, 3):
        t = brite(placement="heavy-tailed", seed=seed)
        assert max(n.y for n in t.nodes) < 500


def test_same_seed_same_graph_and_different_seed_different_graph() -> None:
    a = brite(seed=7)
    assert a == brite(seed=7)
    assert a.links == brite(seed=7).links
    b = brite(seed=8)
    assert a.links != b.links
    assert [(n.x, n.y) for n in a.nodes] != [(n.x, n.y) for n in b.nodes]
    assert brite(model="ba", seed=7).links != brite(model="ba", seed=8).links


def test_scenario_text_is_reproducible() -> None:
    def text(seed: int) -> str:
        t = brite(seed=seed)
        server, peers = pick_endpoints(t, 8, seed=seed)
        return peers_scenario(t, server, peers, name="x", seed=seed)

    assert text(3) == text(3)
    assert text(3) != text(4)


@pytest.mark.parametrize(("model", "placement", "seed"), VARIANTS)
def test_routes_are_shortest(model: str, placement: str, seed: int) -> None:
    t = brite(model=model, placement=placement, seed=seed)  # type: ignore[arg-type]
    for source in (t.edge[0], t.edge[5], 0, 20):
        hops = hop_counts(t, source)
        delays = least_delay_among_fewest_hops(t, source, hops)
        tree = routes(t, source)
        assert set(tree) == set(hops) == set(range(50))
        for dst, route in tree.items():
            assert route[0] == source
            assert route[-1] == dst
            assert len(route) - 1 == hops[dst], (source, dst, route)
            assert all(b in t.neighbours(a) for a, b in pairwise(route))
            assert all(t.nodes[n].core for n in route[1:-1]), f"transit via an edge router: {route}"
            assert sum(t.delay_us(a, b) for a, b in pairwise(route)) == delays[dst]


def test_endpoints_are_nested_edge_routers() -> None:
    t = brite(seed=1)
    server, sixteen = pick_endpoints(t, 16, seed=1)
    assert sorted([server, *sixteen]) == sorted(t.edge[:17])
    assert pick_endpoints(t, 4, seed=1) == (server, sixteen[:4])
    with pytest.raises(ValueError, match="peers"):
        pick_endpoints(t, 17, seed=1)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"core": 2}, "core"),
        ({"nodes": 20}, "nodes"),
        ({"m": 0}, "m must"),
        ({"alpha": 0.0}, "alpha"),
        ({"beta": -1.0}, "beta"),
        ({"model": "glp"}, "model"),
        ({"plane": 5}, "plane"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        brite(**kwargs)


def written(
    peers: int, capacity: str = "10Mbps"
) -> tuple[Topology, int, list[int], dict[str, Any]]:
    t = brite(seed=1)
    server, chosen = pick_endpoints(t, peers, seed=1)
    text = peers_scenario(t, server, chosen, name="t", capacity=capacity, duration="2s")
    return t, server, chosen, tomllib.loads(text)


@pytest.mark.parametrize("peers", [4, 8, 16])
def test_every_route_starts_on_the_server_access_link(peers: int) -> None:
    t, server, chosen, scenario = written(peers)
    assert scenario["topology"] == {"kind": "paths"}
    access = f"server-n{server}"
    links = {link["name"]: link for link in scenario["link"]}
    assert len(links) == len(scenario["link"])
    paths = scenario["path"]
    assert len(paths) == peers
    assert all(p["links"][0] == access for p in paths)
    # No other link carries every flow but the server router's uplink, which
    # the access link feeds at the same rate; 16 peers leave over both uplinks.
    shared = set.intersection(*(set(p["links"]) for p in paths))
    assert shared - {access} <= {f"n{server}-n{r}" for r in t.neighbours(server)}
    if peers == 16:
        assert shared == {access}
    # Each path is the route to its peer, link by link, and every link is used.
    tree = routes(t, server)
    for p, peer in zip(paths, chosen, strict=True):
        assert p["name"] == f"to-n{peer}"
        assert p["links"][1:] == [f"n{u}-n{v}" for u, v in pairwise(tree[peer])]
    assert {name for p in paths for name in p["links"]} == set(links)
    for name, link in links.items():
        assert link["rate"] == "10Mbps"
        assert link["queue"] == "50pkts"
        if name != access:
            u, v = (int(x.removeprefix("n")) for x in name.split("-"))
            assert link["delay"] == f"{t.delay_us(u, v) / 1000:g}ms"
    # One flow per path, started within the first 5 s.
    flows = scenario["flow"]
    assert [f["path"] for f in flows] == [p["name"] for p in paths]
    assert all(f["kind"] == "media" and f["cc"] == "svc-probing" for f in flows)
    assert all(0 <= int(f["start"].removesuffix("ms")) < 5000 for f in flows)
    assert all("start_jitter" not in f for f in flows)
    assert all(f["cc_config"]["threshold_fs_high"] == 0.63 for f in flows)
    # The layered encoder: 20 layers of 100 kbps, up to 2 Mbps (§4.2).
    assert all(f["encoder"]["kind"] == "svc" for f in flows)
    assert all(f["encoder"]["layers"] == 20 for f in flows)
    assert all(f["encoder"]["layer_rate"] == "100kbps" for f in flows)


def test_the_scenario_runs() -> None:
    _, _, chosen, scenario = written(16)
    result = rtcc.run(scenario, seed=1)
    names = [f["name"] for f in result.summary["flows"]]
    assert names == [f"peer-n{p}" for p in chosen]
    assert "jain" in result.summary["fairness"]


def test_the_scenario_runs_with_tfrc() -> None:
    t, server, chosen, _ = written(4)
    text = peers_scenario(t, server, chosen, name="t", cc="tfrc", duration="2s")
    assert "cc_config" not in text
    result = rtcc.run(tomllib.loads(text), seed=1)
    assert [f["cc"] for f in result.summary["flows"]] == ["tfrc"] * 4
    # As greedy TFRC sources (ns-2's TFRC agent): no encoder, no controller key.
    bulk = peers_scenario(t, server, chosen, name="t", kind="tfrc", duration="8s")
    flows = tomllib.loads(bulk)["flow"]
    assert all(f["kind"] == "tfrc" and "encoder" not in f and "cc" not in f for f in flows)
    result = rtcc.run(tomllib.loads(bulk), seed=1)
    assert all(f["goodput_kbps"] > 0 for f in result.summary["flows"])
    with pytest.raises(ValueError, match="kind must be media or tfrc"):
        peers_scenario(t, server, chosen, name="t", kind="tcp")


def test_start_jitter_makes_tfrc_runs_differ_by_seed() -> None:
    # Greedy TFRC flows draw nothing at random: without start_jitter two seeds
    # run the same; with it each run starts the flows at its own times.
    t, server, chosen, _ = written(4)
    fixed = tomllib.loads(peers_scenario(t, server, chosen, name="t", kind="tfrc", duration="10s"))
    jittered = tomllib.loads(
        peers_scenario(
            t, server, chosen, name="t", kind="tfrc", duration="10s", start_jitter_ms=3000
        )
    )
    assert all(f["start_jitter"] == "3000ms" for f in jittered["flow"])

    def goodputs(scenario: dict[str, Any], seed: int) -> list[float]:
        return [f["goodput_kbps"] for f in rtcc.run(scenario, seed=seed).summary["flows"]]

    assert goodputs(fixed, 1) == goodputs(fixed, 2)
    assert goodputs(jittered, 1) != goodputs(jittered, 2)
    with pytest.raises(ValueError, match="start_jitter_ms"):
        peers_scenario(t, server, chosen, name="t", start_jitter_ms=-1)


def test_table2_files_are_what_the_script_writes(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "svc_probing_brite.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    written_files = sorted(p.name for p in tmp_path.iterdir())
    assert written_files == sorted(
        f"table2-{stem}{twin}.toml"
        for stem in ("4-peers", "8-peers", "16-peers", "16-peers-20mbps")
        for twin in ("", "-tfrc")
    )
    for name in written_files:
        assert (tmp_path / name).read_text() == (TABLE2 / name).read_text(), name
    twenty = tomllib.loads((TABLE2 / "table2-16-peers-20mbps.toml").read_text())
    assert {link["rate"] for link in twenty["link"]} == {"20Mbps"}


def test_cli_writes_a_scenario_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "brite.toml"
    args = ["topology", "brite", "--peers", "4", "--seed", "2", "--duration", "1s"]
    assert cli_main([*args, "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Generated by `rtcc topology brite --nodes 50 --core 33")
    scenario = tomllib.loads(text)
    assert len(scenario["flow"]) == 4
    rtcc.run(out, seed=1)
    # The same arguments give the same file.
    again = tmp_path / "again.toml"
    assert cli_main([*args, "--out", str(again)]) == 0
    assert again.read_text() == text


def test_cli_names_a_bad_peer_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["topology", "brite", "--peers", "17"])
    assert exit_info.value.code == 2
    assert "peers must be in [1, 16]" in capsys.readouterr().err
