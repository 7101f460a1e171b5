"""Run a paper's TFRC and TCP baselines in ns-2 and in rtcc, side by side.

papers/svc-topdown-probing.txt ran ns-2. Its TFRC numbers (Tables 2-3) are
far less fair than rtcc's TFRC. This script settles whether that is our
TFRC or the paper's set-up: it writes each experiment of ``paper.toml``
whose flows ns-2 has agents for (TFRC, TCP Tahoe/Reno/NewReno, constant UDP)
as an ns-2 Tcl script, runs ns-2 (Debian ``ns2``, 2.35) on the same seeds,
and prints ns-2's numbers beside rtcc's and the paper's.

    python bench/ns2/crosscheck.py                      # every supported experiment
    python bench/ns2/crosscheck.py table3-tfrc-rtt3 fig14-tahoe-tfrc --seeds 1 2
    python bench/ns2/crosscheck.py --tcl table3-tfrc-rtt1 --seed 1   # print one Tcl script

The mapping (bench/ns2/README.md says why each choice was made):
- links are ns-2 duplex DropTail links of the scenario's rate, delay and
  queue (packets); a dumbbell's access links are per flow at both ends;
- TFRC: ``Agent/TFRC`` of ``packet_size`` wire bytes with ``Agent/TFRCSink``,
  fed by an FTP source (greedy), as the paper's ns-2 runs;
- TCP: ``Agent/TCP`` (Tahoe), ``Agent/TCP/Reno``, ``Agent/TCP/Newreno`` with
  ``Agent/TCPSink`` (one ACK per packet); ``packetSize_`` = the scenario's
  ``mss`` (ns-2 adds a 40 B header, so the wire size is the same),
  ``windowInit_`` = ``initial_cwnd``, ``window_`` = ``rwnd`` (unlimited:
  100 000), ``minrto_`` = ``min_rto`` (rtcc's default 1 s);
- UDP: ``Application/Traffic/CBR`` over ``Agent/UDP`` with the wire size
  (payload + 28 B) and the rate scaled so packets leave every payload/rate,
  as rtcc's constant udp-cbr;
- start times: ``start`` + uniform [0, ``start_jitter``) from ns-2's own
  random stream seeded with the seed (the same law, not the same draws);
- throughput: wire bytes each flow's packets leave its last link with in
  the window (an ns-2 flow monitor), times payload / wire (TFRC 48 B of
  headers, TCP 40 B, UDP 28 B) so that it is rtcc's ``goodput_kbps``.
"""

from __future__ import annotations

import argparse
import itertools
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "scenarios/papers/svc-probing/paper.toml"

# Experiments of papers/svc-topdown-probing.txt whose flows ns-2 has agents for,
# with the paper's Jain index for it (None: none given).
EXPERIMENTS: dict[str, float | None] = {
    "fig14-tahoe-tfrc": 0.964,
    "fig15-newreno-tfrc": 0.997,
    "fig14-tahoe-q50-tfrc": 0.964,
    "fig15-newreno-q50-tfrc": 0.997,
    "fig14-tahoe-rwnd20-tfrc": 0.964,
    "fig15-newreno-rwnd20-tfrc": 0.997,
    "fig16-two-tfrc": None,
    "table3-tfrc-rtt1": 0.781547,
    "table3-tfrc-rtt2": 0.686865,
    "table3-tfrc-rtt3": 0.626920,
    "table3-tfrc-rtt4": 0.594973,
    "table3-tfrc-rtt5": 0.569127,
    "table2-4-peers-tfrc": 0.437532,
    "table2-8-peers-tfrc": 0.610675,
    "table2-16-peers-tfrc": 0.999736,
    "table2-16-peers-20mbps-tfrc": 0.520080,
}

TFRC_HEADERS = 48
TCP_HEADERS = 40
UDP_HEADERS = 28


class Unsupported(ValueError):
    """The scenario uses something this mapping does not write for ns-2."""


_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_RATES = {"bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9}
_SIZES = {"B": 1.0, "KB": 1e3, "MB": 1e6}


def _split(value: object, units: Mapping[str, float], what: str) -> float:
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]+)\s*", str(value))
    if not m or m.group(2) not in units:
        raise Unsupported(f"{what} = {value!r}: expected a number and one of {sorted(units)}")
    return float(m.group(1)) * units[m.group(2)]


def seconds(value: object, what: str) -> float:
    """A duration such as ``"10ms"`` in seconds."""
    return _split(value, _UNITS, what)


def bps(value: object, what: str) -> float:
    """A rate such as ``"3Mbps"`` in bit/s."""
    return _split(value, _RATES, what)


def size_bytes(value: object, what: str) -> int:
    """A size such as ``"960B"`` in bytes."""
    return round(_split(value, _SIZES, what))


def packets(value: object, what: str) -> int:
    """A queue such as ``"20pkts"`` in packets (the only unit DropTail maps)."""
    m = re.fullmatch(r"\s*(\d+)\s*pkts\s*", str(value))
    if not m:
        raise Unsupported(f"{what} = {value!r}: only queues in packets map onto ns-2's DropTail")
    return int(m.group(1))


@dataclass
class Link:
    """One duplex link between two named nodes."""

    name: str
    rate: float
    delay: float
    queue: int
    src: str
    dst: str


@dataclass
class Flow:
    """One flow: its kind, end nodes, the link its receiver hangs off, its keys."""

    name: str
    kind: str
    first: str  # node the sender sits on
    last: str  # node the receiver sits on
    last_link: tuple[str, str]
    attrs: Mapping[str, Any]


class _Nodes:
    """Node names with union (a path joins one link's end to the next's start)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _link(spec: Mapping[str, Any], where: str) -> tuple[float, float, int]:
    for key in spec:
        if key not in ("name", "rate", "delay", "queue"):
            raise Unsupported(f"{where}.{key}: not mapped onto ns-2")
    return (
        bps(spec["rate"], f"{where}.rate"),
        seconds(spec.get("delay", "0ms"), f"{where}.delay"),
        packets(spec.get("queue", "50pkts"), f"{where}.queue"),
    )


def topology(scenario: Mapping[str, Any]) -> tuple[list[Link], list[Flow]]:
    """The scenario's links (each between two named nodes) and flows."""
    topo = scenario.get("topology", {})
    kind = topo.get("kind", "single")
    links: list[Link] = []
    flows: list[Flow] = []
    specs = scenario.get("link", [])
    if kind == "dumbbell":
        if len(specs) != 1:
            raise Unsupported("topology.kind = dumbbell: one [[link]] (the bottleneck) is mapped")
        rate, delay, queue = _link(specs[0], "link.0")
        links.append(Link(specs[0]["name"], rate, delay, queue, "A", "B"))
        a_rate = bps(topo.get("access_rate", "100Mbps"), "topology.access_rate")
        a_queue = packets(topo.get("access_queue", "50pkts"), "topology.access_queue")
        for i, f in enumerate(scenario.get("flow", [])):
            d = seconds(
                f.get("access_delay", topo.get("access_delay", "1ms")), f"flow.{i}.access_delay"
            )
            s, r = f"s{i}", f"r{i}"
            links.append(Link(f"{f['name']}-src", a_rate, d, a_queue, s, "A"))
            links.append(Link(f"{f['name']}-dst", a_rate, d, a_queue, "B", r))
            flows.append(Flow(f["name"], f.get("kind", "media"), s, r, ("B", r), f))
    elif kind == "paths":
        nodes = _Nodes()
        by_name: dict[str, tuple[float, float, int]] = {}
        for i, spec in enumerate(specs):
            by_name[spec["name"]] = _link(spec, f"link.{i}")
        paths = {p["name"]: list(p["links"]) for p in scenario.get("path", [])}
        for chain in paths.values():
            for a, b in itertools.pairwise(chain):
                nodes.union(f"{a}>", f"<{b}")
        for name, (rate, delay, queue) in by_name.items():
            links.append(
                Link(name, rate, delay, queue, nodes.find(f"<{name}"), nodes.find(f"{name}>"))
            )
        for i, f in enumerate(scenario.get("flow", [])):
            route = paths.get(f.get("path", ""))
            if route is None:
                raise Unsupported(
                    f"flow.{i}.path = {f.get('path')!r}: only [[path]] routes are mapped"
                )
            first, last = nodes.find(f"<{route[0]}"), nodes.find(f"{route[-1]}>")
            flows.append(
                Flow(
                    f["name"],
                    f.get("kind", "media"),
                    first,
                    last,
                    (nodes.find(f"<{route[-1]}"), last),
                    f,
                )
            )
    else:
        raise Unsupported(f"topology.kind = {kind!r}: only dumbbell and paths are mapped")
    return links, flows


def _tcp_class(cc: str) -> str:
    classes = {"tahoe": "Agent/TCP", "reno": "Agent/TCP/Reno", "newreno": "Agent/TCP/Newreno"}
    if cc not in classes:
        raise Unsupported(f"cc = {cc!r}: ns-2 TCP mapped for {sorted(classes)}")
    return classes[cc]


def to_tcl(
    scenario: Mapping[str, Any],
    seed: int,
    window: tuple[float, float],
    agent_defaults: bool = False,
) -> str:
    """An ns-2 script printing ``<flow> <goodput kbps>`` per flow over ``window``.

    With ``agent_defaults`` the TFRC agents keep ns-2's own defaults where
    rtcc's configuration has an equivalent (history discounting on).
    """
    for key in scenario:
        if key not in ("name", "duration", "seed", "topology", "link", "path", "flow", "output"):
            raise Unsupported(f"{key}: not mapped onto ns-2")
    duration = seconds(scenario.get("duration", "60s"), "duration")
    links, flows = topology(scenario)
    names = sorted({n for link in links for n in (link.src, link.dst)})
    out = [
        "set ns [new Simulator]",
        f"$defaultRNG seed {seed}",
        "set rng [new RNG]",
        f"$rng seed {seed}",
        "set u [new RandomVariable/Uniform]",
        "$u use-rng $rng",
    ]
    for n in names:
        out.append(f"set n({n}) [$ns node]")
    for link in links:
        out.append(
            f"$ns duplex-link $n({link.src}) $n({link.dst}) "
            f"{link.rate:.0f} {link.delay:.9f} DropTail"
        )
        out.append(f"$ns queue-limit $n({link.src}) $n({link.dst}) {link.queue}")
        out.append(f"$ns queue-limit $n({link.dst}) $n({link.src}) {link.queue}")
    monitored: dict[tuple[str, str], str] = {}
    scale: dict[str, float] = {}
    for i, f in enumerate(flows):
        a = f.attrs
        where = f"flow.{i}"
        allowed = {"name", "kind", "path", "start", "start_jitter", "stop", "access_delay"}
        if f.kind == "tfrc":
            allowed |= {"packet_size", "cc_config"}
            wire = size_bytes(a.get("packet_size", "1000B"), f"{where}.packet_size")
            config = dict(a.get("cc_config", {}))
            discount = bool(config.pop("history_discounting", False))
            if config:
                raise Unsupported(f"{where}.cc_config.{next(iter(config))}: not mapped onto ns-2")
            out += [
                f"set src({i}) [new Agent/TFRC]",
                f"$src({i}) set packetSize_ {wire}",
                f"set snk({i}) [new Agent/TFRCSink]",
                f"set app({i}) [new Application/FTP]",
            ]
            if not agent_defaults:
                # RFC 5348 §5.5's history discounting, off in rtcc by default and
                # on in ns-2's agent (`Agent/TFRCSink set discount_ 1`).
                out.append(f"$snk({i}) set discount_ {int(discount)}")
            scale[f.name] = (wire - TFRC_HEADERS) / wire
        elif f.kind == "tcp":
            allowed |= {"cc", "mss", "initial_cwnd", "rwnd", "min_rto"}
            mss = size_bytes(a.get("mss", "1448B"), f"{where}.mss")
            min_rto = seconds(a.get("min_rto", "1s"), f"{where}.min_rto")
            out += [
                f"set src({i}) [new {_tcp_class(a.get('cc', 'cubic'))}]",
                f"$src({i}) set packetSize_ {mss}",
                f"$src({i}) set windowInit_ {int(a.get('initial_cwnd', 10))}",
                f"$src({i}) set window_ {int(a.get('rwnd', 100000))}",
                f"$src({i}) set minrto_ {min_rto}",
                f"set snk({i}) [new Agent/TCPSink]",
                f"set app({i}) [new Application/FTP]",
            ]
            scale[f.name] = mss / (mss + TCP_HEADERS)
        elif f.kind == "udp-cbr":
            allowed |= {"rate", "packet_size"}
            payload = size_bytes(a.get("packet_size", "1200B"), f"{where}.packet_size")
            rate = bps(a["rate"], f"{where}.rate")
            wire = payload + UDP_HEADERS
            out += [
                f"set src({i}) [new Agent/UDP]",
                f"$src({i}) set packetSize_ {wire}",
                f"set snk({i}) [new Agent/Null]",
                f"set app({i}) [new Application/Traffic/CBR]",
                f"$app({i}) set packetSize_ {wire}",
                f"$app({i}) set rate_ {rate * wire / payload:.3f}",
            ]
            scale[f.name] = payload / wire
        else:
            raise Unsupported(f"{where}.kind = {f.kind!r}: ns-2 mapped for tfrc, tcp and udp-cbr")
        for key in a:
            if key not in allowed:
                raise Unsupported(f"{where}.{key}: not mapped onto ns-2")
        start = seconds(a.get("start", "0s"), f"{where}.start")
        jitter = seconds(a.get("start_jitter", "0s"), f"{where}.start_jitter")
        out += [
            f"$src({i}) set fid_ {i + 1}",
            f"$ns attach-agent $n({f.first}) $src({i})",
            f"$ns attach-agent $n({f.last}) $snk({i})",
            f"$ns connect $src({i}) $snk({i})",
            f"$app({i}) attach-agent $src({i})",
            f"$u set min_ 0; $u set max_ {jitter}",
            f'$ns at [expr {start} + [$u value]] "$app({i}) start"',
        ]
        if "stop" in a:
            out.append(f'$ns at {seconds(a["stop"], f"{where}.stop")} "$app({i}) stop"')
        if f.last_link not in monitored:
            m = f"fm{len(monitored)}"
            monitored[f.last_link] = m
            src, dst = f.last_link
            out += [
                f"set {m} [$ns makeflowmon Fid]",
                f"$ns attach-fmon [$ns link $n({src}) $n({dst})] ${m}",
            ]
    start, end = window
    end = min(end, duration)
    # Bytes each flow's packets leave its last link with, at the window's edges.
    lines = [
        "proc bytes {fm fid} {",
        "  set f [[$fm classifier] lookup auto 0 0 $fid]",
        '  if {$f == ""} { return 0 }',
        "  return [$f set bdepartures_]",
        "}",
    ]
    out += lines
    for i, f in enumerate(flows):
        m = monitored[f.last_link]
        out.append(f'$ns at {start} "set b0({i}) \\[bytes ${m} {i + 1}\\]"')
    report = ["proc report {} {", "  global b0 " + " ".join(sorted(set(monitored.values())))]
    for i, f in enumerate(flows):
        m = monitored[f.last_link]
        report.append(
            f'  puts "{f.name} [expr ([bytes ${m} {i + 1}] - $b0({i})) * 8.0 * {scale[f.name]!r}'
            f' / {end - start!r} / 1000.0]"'
        )
    report += ["  exit 0", "}"]
    out += report
    out += [f'$ns at {end} "report"', "$ns run"]
    return "\n".join(out) + "\n"


def run_ns2(script: str) -> dict[str, float]:
    """Runs ns-2 on ``script``; each flow's goodput in kbit/s."""
    with tempfile.NamedTemporaryFile("w", suffix=".tcl", delete=False) as fh:
        fh.write(script)
        path = fh.name
    try:
        done = subprocess.run(
            ["ns", path], capture_output=True, text=True, check=False, timeout=3600
        )
    finally:
        Path(path).unlink()
    if done.returncode != 0:
        raise RuntimeError(f"ns-2 failed ({done.returncode}): {done.stderr.strip()[:500]}")
    rates = {}
    for line in done.stdout.splitlines():
        name, value = line.rsplit(" ", 1)
        rates[name] = float(value)
    return rates


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index."""
    total = sum(values)
    squares = sum(v * v for v in values)
    return total * total / (len(values) * squares) if squares > 0 else 0.0


@dataclass
class Row:
    """One experiment's goodputs per run (flow name to kbit/s), both simulators."""

    experiment: str
    seeds: list[int]
    ours: list[dict[str, float]]
    ns2: list[dict[str, float]]
    paper: float | None


def load_scenario(path: Path) -> dict[str, Any]:
    """A scenario file as a table (rtcc's own loader, so both runs read the same)."""
    from rtcc.reproduce.spec import load_toml

    return load_toml(path)


def _window(exp: Any, duration: float) -> tuple[float, float]:  # noqa: ANN401
    w = exp.windows.get("steady")
    if w is None:
        return (0.0, duration)
    return (float(w[0]), float(w[1]))


def with_queue_offset(scenario: Mapping[str, Any], offset: int) -> dict[str, Any]:
    """``scenario`` with its first link's queue ``offset`` packets longer."""
    out = dict(scenario)
    links = [dict(link) for link in scenario.get("link", [])]
    if offset:
        links[0]["queue"] = f"{packets(links[0]['queue'], 'link.0.queue') + offset}pkts"
    out["link"] = links
    return out


def compare_one(
    label: str,
    scenario: Mapping[str, Any],
    window: tuple[float, float],
    seeds: Sequence[int],
    queue_offsets: Sequence[int] = (0,),
    agent_defaults: bool = False,
) -> Row:
    """Runs ``scenario`` in rtcc and in ns-2 on each seed (and queue offset)."""
    from rtcc import run
    from rtcc.reproduce.metrics import window_metrics

    ours, theirs, runs = [], [], []
    for offset in queue_offsets:
        varied = with_queue_offset(scenario, offset)
        for seed in seeds:
            result = run(varied, seed=seed)
            metrics = window_metrics(result.timeseries, {"w": window})["w"]
            ours.append({f["name"]: metrics[f["name"]]["goodput_kbps"] for f in scenario["flow"]})
            theirs.append(run_ns2(to_tcl(varied, seed, window, agent_defaults)))
            runs.append(seed)
    return Row(label, runs, ours, theirs, EXPERIMENTS.get(label))


def compare(
    ids: Sequence[str],
    seeds: Sequence[int] | None,
    queue_offsets: Sequence[int] = (0,),
    agent_defaults: bool = False,
) -> list[Row]:
    """:func:`compare_one` for experiments of ``paper.toml``, on their seeds by default."""
    from rtcc.reproduce.spec import _experiments, load_toml

    experiments = _experiments(load_toml(PAPER), PAPER, False)
    rows = []
    for exp_id in ids:
        exp = experiments[exp_id]
        duration = seconds(exp.scenario.get("duration", "60s"), "duration")
        use = list(seeds) if seeds else list(exp.seeds)
        window = _window(exp, duration)
        rows.append(compare_one(exp_id, exp.scenario, window, use, queue_offsets, agent_defaults))
    return rows


def _stat(values: Sequence[float], digits: int) -> str:
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def _per_flow(runs: Sequence[Mapping[str, float]]) -> str:
    means = [statistics.fmean(run[n] for run in runs) for n in runs[0]]
    if len(means) > 3:
        return f"{min(means):.0f}-{max(means):.0f}"
    return " / ".join(f"{m:.0f}" for m in means)


def markdown(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    out = [
        "| experiment | runs | Jain, rtcc | Jain, ns-2 | Jain, paper "
        "| kbit/s per flow, rtcc | kbit/s per flow, ns-2 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ours_j = [jain(list(run.values())) for run in r.ours]
        ns2_j = [jain(list(run.values())) for run in r.ns2]
        paper = "-" if r.paper is None else f"{r.paper:.3f}"
        out.append(
            f"| {r.experiment} | {len(r.seeds)} | {_stat(ours_j, 3)} | {_stat(ns2_j, 3)} "
            f"| {paper} | {_per_flow(r.ours)} | {_per_flow(r.ns2)} |"
        )
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module doc)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "experiments", nargs="*", help=f"ids from {PAPER.relative_to(ROOT)} (default: all mapped)"
    )
    parser.add_argument("--seeds", type=int, nargs="+", help="seeds (default: the experiment's)")
    parser.add_argument(
        "--scenario", type=Path, help="a scenario file instead of experiments (window: --window)"
    )
    parser.add_argument(
        "--window", type=float, nargs=2, default=[0.0, 1e18], metavar=("FROM", "TO")
    )
    parser.add_argument(
        "--queue-offsets",
        type=int,
        nargs="+",
        default=[0],
        metavar="N",
        help="also run with the first link's queue N packets longer (drop-tail phase effects)",
    )
    parser.add_argument(
        "--agent-defaults",
        action="store_true",
        help="keep ns-2's TFRC defaults where rtcc's differ (history discounting on)",
    )
    parser.add_argument(
        "--tcl", action="store_true", help="print the ns-2 script of one experiment and stop"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of --tcl")
    args = parser.parse_args(argv)
    ids = args.experiments or list(EXPERIMENTS)
    if args.tcl:
        from rtcc.reproduce.spec import _experiments, load_toml

        exp = _experiments(load_toml(PAPER), PAPER, False)[ids[0]]
        duration = seconds(exp.scenario.get("duration", "60s"), "duration")
        window = _window(exp, duration)
        sys.stdout.write(to_tcl(exp.scenario, args.seed, window, args.agent_defaults))
        return 0
    if shutil.which("ns") is None:
        print("crosscheck: ns-2 not found (make sim-tools, or Debian's ns2)", file=sys.stderr)
        return 2
    if args.scenario is not None:
        scenario = load_scenario(args.scenario)
        duration = seconds(scenario.get("duration", "60s"), "duration")
        window = (args.window[0], min(args.window[1], duration))
        seeds = args.seeds or [1]
        offsets = args.queue_offsets
        row = compare_one(args.scenario.stem, scenario, window, seeds, offsets, args.agent_defaults)
        print(markdown([row]), end="")
        return 0
    rows = compare(ids, args.seeds, args.queue_offsets, args.agent_defaults)
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
