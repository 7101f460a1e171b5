"""The ``rtcc`` console script.

Exit codes (DESIGN.md §4.3): 0 success; 2 bad input (scenario, trace,
arguments) with one line ``rtcc: error: <message>`` on stderr; 1 an internal
failure, with one line asking for a bug report; 130 interrupted (Ctrl-C);
143 terminated (SIGTERM, what process managers send). Both signals stop a
run the same way: it winds down and writes its outputs first.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import rich.markup
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import rtcc
from rtcc import ScenarioError

__all__ = ["main"]

_ISSUES_HINT = "this is a bug in rtcc; please report it with the scenario and the seed"


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        _fail(2, f"{message} (see `{self.prog} --help`)")


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's ``KeyboardInterrupt``.

    A run then stops the same way: the native loops run signal handlers every
    100 ms, see the stop, wind down and write their files.
    """


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rtcc`` command line; return the process exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.func
    # Python's default SIGTERM action ends the process at once, without the
    # outputs a run writes when it stops.
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return command(args)
    except ScenarioError as e:
        _fail(2, str(e))
    except _Terminated:
        print("rtcc: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("rtcc: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # anything else is a bug, reported in one line
        _fail(1, f"internal error: {type(e).__name__}: {e} ({_ISSUES_HINT})", prefix="rtcc: ")
    finally:
        signal.signal(signal.SIGTERM, previous)


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rtcc",
        description="Congestion control for real-time video: simulate and compare.",
    )
    parser.add_argument("--version", action="version", version=f"rtcc {rtcc.__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", required=True)

    run = commands.add_parser(
        "run",
        help="simulate one scenario",
        description="Simulate one scenario file and print a per-flow summary.",
    )
    run.add_argument("scenario", type=Path, metavar="SCENARIO", help="scenario TOML file")
    run.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="directory for summary.json, timeseries.csv and frames.csv (created if missing)",
    )
    run.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help="override the scenario's seed (0 <= N < 2**64)",
    )
    run.add_argument(
        "--cc-trace",
        action="store_true",
        help="also write cc_trace.csv: each controller's state variables at every sample "
        "(as [output] cc_trace = true; `rtcc report` plots them)",
    )
    run.add_argument(
        "--allow-large",
        action="store_true",
        help="run even when the run is estimated above the resource limits "
        '(docs/scenarios.md, "Limits")',
    )
    run.add_argument(
        "--pcap",
        type=Path,
        metavar="PCAPDIR",
        help="also write a packet capture per link, PCAPDIR/<link>.pcap "
        '(docs/scenarios.md, "Packet captures")',
    )
    run.set_defaults(func=_cmd_run)
    _add_sweep_command(commands)
    _add_net_commands(commands)
    _add_report_command(commands)
    _add_reproduce_command(commands)
    _add_topology_command(commands)
    _add_suite_command(commands)
    return parser


def _add_reproduce_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    rep = commands.add_parser(
        "reproduce",
        help="run a paper's experiments and compare with its published numbers",
        description="Run the experiments under scenarios/papers/PAPER/ (its paper.toml) and "
        "write docs/results/PAPER.md: our numbers beside the published ones, figures, and "
        "whether each claim holds here.",
    )
    rep.add_argument("paper", metavar="PAPER", help="a folder under scenarios/papers/, or a path")
    rep.add_argument("--quick", action="store_true", help="the short variant (for tests)")
    rep.add_argument("--out", type=Path, metavar="FILE", help="Markdown file to write")
    rep.add_argument(
        "--papers", type=Path, default=Path("scenarios/papers"), metavar="DIR", help="papers folder"
    )
    rep.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="runs at once (default: the number of CPUs)",
    )
    rep.set_defaults(func=_cmd_reproduce)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from rtcc.reproduce import reproduce

    md, results = reproduce(
        args.paper, quick=args.quick, out=args.out, papers_root=args.papers, workers=args.workers
    )
    console = Console() if sys.stdout.isatty() else Console(width=160)
    table = Table(title=f"{args.paper}: claims", title_justify="left")
    for header in ("claim", "ours", "published", "verdict", "seeds"):
        table.add_column(header)
    for r in results:
        table.add_row(
            r.claim.text,
            _fmt(r.mean, "{:.4g}"),
            _fmt(r.claim.published, "{:.4g}"),
            r.verdict,
            f"{r.seeds_held}/{r.seeds_judged}" if r.seeds_judged else "",
        )
    console.print(table)
    counts = Counter(r.verdict for r in results)
    console.print(
        f"{counts['holds']} of {len(results)} claims hold; "
        + ", ".join(f"{n} {v}" for v, n in counts.items() if v != "holds")
    )
    console.print(f"written to {md}")
    return 0


def _add_suite_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    from rtcc.suite import DEFAULT_CONTROLLERS, QUICK_CONTROLLERS
    from rtcc.suite.cases import SUITES

    suite = commands.add_parser(
        "suite",
        help="run a standard evaluation suite (RFC 8867, RFC 8869) for some controllers",
        description="Run the test cases of RFC 8867 (wired) or RFC 8869 (wireless) for each "
        "controller and seed, compute RFC 8868's metrics and write SUITE/report.html and "
        "SUITE/results.md under --out (docs/suites.md).",
    )
    suite.add_argument("suite", choices=SUITES, metavar="SUITE", help=" or ".join(SUITES))
    suite.add_argument(
        "--cc",
        metavar="LIST",
        help="comma-separated media controllers (default "
        f"{','.join(DEFAULT_CONTROLLERS)}; with --quick {','.join(QUICK_CONTROLLERS)})",
    )
    suite.add_argument(
        "--quick",
        action="store_true",
        help="the quick cases only, their timelines shortened to a quarter (for tests)",
    )
    suite.add_argument("--seeds", type=int, default=1, metavar="N", help="seeds 1..N (default 1)")
    suite.add_argument(
        "--out",
        type=Path,
        default=Path("results/suites"),
        metavar="DIR",
        help="output folder; the suite writes DIR/SUITE/ (default results/suites)",
    )
    suite.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="runs at once (default: the number of CPUs)",
    )

    def cmd(args: argparse.Namespace) -> int:
        from rtcc.suite import SuiteError, run_suite

        console = Console(stderr=True)

        def progress(done: int, total: int, label: str) -> None:
            console.print(f"[{done}/{total}] {label}", highlight=False)

        parts = ["rtcc suite", args.suite]
        if args.cc:
            parts += ["--cc", args.cc]
        if args.quick:
            parts.append("--quick")
        parts += ["--seeds", str(args.seeds), "--out", str(args.out)]
        try:
            res = run_suite(
                args.suite,
                ccs=args.cc,
                quick=args.quick,
                seeds=args.seeds,
                out=args.out,
                workers=args.workers,
                progress=progress,
                command=" ".join(parts),
            )
        except SuiteError as e:
            _fail(2, str(e))
        print(res.markdown.read_text())
        print(f"report: {res.report}")
        return 0

    suite.set_defaults(func=cmd)


def _add_topology_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    topology = commands.add_parser(
        "topology",
        help="generate a router topology and a scenario on it",
        description="Generate a router topology and write a `paths` scenario on it.",
    )
    generators = topology.add_subparsers(title="generators", dest="generator", required=True)
    brite = generators.add_parser(
        "brite",
        help="a BRITE-like Waxman or Barabasi-Albert topology, one server streaming to N peers",
        description="Generate a BRITE-like router topology (rtcc.topology: core routers by the "
        "Waxman or Barabasi-Albert model, edge routers with m links into the core) and write a "
        "`paths` scenario where a server host on one edge router streams to PEERS other edge "
        "routers over shortest routes, one media flow each; every route starts on the server's "
        "access link. Same arguments, same file (docs/scenarios.md, Generated topologies).",
    )
    brite.add_argument("--nodes", type=_positive_int, default=50, help="routers (default 50)")
    brite.add_argument(
        "--core", type=_positive_int, default=33, help="core routers among them (default 33)"
    )
    brite.add_argument(
        "--m", type=_positive_int, default=2, help="links per new router (default 2)"
    )
    brite.add_argument("--model", choices=("waxman", "ba"), default="waxman")
    brite.add_argument("--alpha", type=float, default=0.15, help="Waxman alpha (default 0.15)")
    brite.add_argument("--beta", type=float, default=0.2, help="Waxman beta (default 0.2)")
    brite.add_argument(
        "--plane", type=_positive_int, default=1000, help="side of the plane (default 1000)"
    )
    brite.add_argument("--placement", choices=("random", "heavy-tailed"), default="random")
    brite.add_argument(
        "--seed", type=int, default=1, help="topology, endpoints and start times (default 1)"
    )
    brite.add_argument("--peers", type=_positive_int, required=True, help="peers (flows)")
    brite.add_argument("--capacity", default="10Mbps", help="every link's rate (default 10Mbps)")
    brite.add_argument("--cc", default="svc-probing", help="the flows' controller")
    brite.add_argument("--duration", default="300s", help="scenario duration (default 300s)")
    brite.add_argument("--name", help="scenario name (default brite-PEERS-peers)")
    brite.add_argument(
        "--out", type=Path, metavar="FILE", help="scenario file to write (default: stdout)"
    )
    brite.set_defaults(func=_cmd_topology_brite)


def _cmd_topology_brite(args: argparse.Namespace) -> int:
    from rtcc.topology import brite, peers_scenario, pick_endpoints

    command = (
        f"rtcc topology brite --nodes {args.nodes} --core {args.core} --m {args.m} "
        f"--model {args.model} --alpha {args.alpha:g} --beta {args.beta:g} "
        f"--plane {args.plane} --placement {args.placement} --seed {args.seed} "
        f"--peers {args.peers} --capacity {args.capacity} --cc {args.cc} "
        f"--duration {args.duration}"
    )
    try:
        topology = brite(
            args.nodes,
            args.core,
            args.m,
            model=args.model,
            alpha=args.alpha,
            beta=args.beta,
            plane=args.plane,
            placement=args.placement,
            seed=args.seed,
        )
        server, peers = pick_endpoints(topology, args.peers, seed=args.seed)
        text = peers_scenario(
            topology,
            server,
            peers,
            name=args.name or f"brite-{args.peers}-peers",
            capacity=args.capacity,
            cc=args.cc,
            duration=args.duration,
            seed=args.seed,
            header=[f"Generated by `{command}`.", topology.describe() + "."],
        )
    except ValueError as e:
        raise ScenarioError(f"rtcc topology brite: {e}") from None
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
        print(f"{args.out}: server on n{server}, {len(peers)} peers", file=sys.stderr)
    return 0


def _add_sweep_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    sweep = commands.add_parser(
        "sweep",
        help="run a scenario over a grid of parameters and seeds",
        description="Run every point of a grid file (docs/sweeps.md) and collect one row per "
        "run and flow in DIR/results.parquet. Runs already complete in DIR are reused.",
    )
    sweep.add_argument("grid", type=Path, metavar="GRID", help="grid TOML file")
    sweep.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="directory for runs/<id>/, results.parquet and sweep.json (created if missing)",
    )
    sweep.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="local worker processes (default) or Ray tasks",
    )
    sweep.add_argument(
        "--jobs", type=_positive_int, metavar="N", help="parallel runs (default: all CPUs)"
    )
    sweep.add_argument(
        "--address", metavar="ADDR", help="Ray cluster address (--backend ray; default: local)"
    )
    sweep.set_defaults(func=_cmd_sweep)


def _positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _cmd_sweep(args: argparse.Namespace) -> int:
    # The module, not the function `rtcc.sweep` that shadows it as a package attribute.
    from rtcc.sweep import _sweep

    if args.address is not None and args.backend != "ray":
        raise ScenarioError("--address needs --backend ray")
    table, stats = _sweep(
        args.grid, out=args.out, backend=args.backend, jobs=args.jobs, address=args.address
    )
    console = Console() if sys.stdout.isatty() else Console(width=160)
    console.print(
        f"{stats.runs} runs: {stats.executed} executed, {stats.reused} reused, "
        f"{stats.failed} failed, in {stats.wall_s:.1f} s"
    )
    failed = table.filter(table["status"] == "error")
    for run_id, error in zip(failed["run_id"], failed["error"], strict=True):
        console.print(f"run {run_id} failed: {error}", markup=False, highlight=False)
    console.print(f"results in {Path(args.out) / 'results.parquet'}")
    return 0


def _add_net_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
    send = commands.add_parser(
        "send",
        help="send video over real UDP/RTP under congestion control",
        description="Send RTP video to a receiver (or an emulator) with a congestion controller; "
        "feedback comes back as RTCP. Stop with Ctrl-C or --duration.",
    )
    send.add_argument(
        "--to", required=True, metavar="HOST:PORT", help="receiver (or `rtcc emulate --listen`)"
    )
    send.add_argument("--cc", metavar="NAME", help="congestion controller: gcc (default), fixed")
    send.add_argument(
        "--source",
        default="synthetic",
        metavar="synthetic|FILE.h264",
        help="synthetic encoder model (default; follows the target) "
        "or an H.264 Annex-B file (RFC 6184)",
    )
    send.add_argument(
        "--fps", type=float, default=30.0, help="frame rate of an H.264 source (default 30)"
    )
    send.add_argument("--no-loop", action="store_true", help="stop the H.264 source at its end")
    send.add_argument(
        "--scenario",
        type=Path,
        metavar="FILE",
        help="take cc and encoder settings from this scenario",
    )
    send.add_argument(
        "--flow", metavar="NAME", help="media flow of --scenario (default: the first)"
    )
    send.add_argument(
        "--duration", metavar="D", help='how long, e.g. "30s" (default: until Ctrl-C)'
    )
    send.add_argument(
        "--out", type=Path, metavar="DIR", help="write send_summary.json and send_timeseries.csv"
    )
    send.add_argument(
        "--sdp", type=Path, metavar="FILE", help="write an SDP for a stock receiver (H.264 source)"
    )
    send.add_argument(
        "--seed", type=_seed, default=1, metavar="N", help="seed of the synthetic encoder"
    )
    send.add_argument("--bind", metavar="HOST:PORT", help="local address (default: any)")
    send.add_argument(
        "--recovery",
        metavar="NAME",
        help="loss recovery: none or nack (default: the scenario flow's, else none)",
    )
    send.add_argument(
        "--no-feedback-timeout",
        action="store_true",
        help="do not back off when feedback stops (for a stock receiver such as ffplay)",
    )
    send.add_argument(
        "--rtcp",
        metavar="HOST:PORT",
        help="the receiver's RTCP address when it does not multiplex RTCP on its RTP port "
        "(RFC 5761): sender reports go there, RTCP is accepted from that host",
    )
    send.add_argument(
        "--rtcp-listen",
        metavar="HOST:PORT",
        help="a local address of our own for RTCP (no multiplexing): reports leave from there "
        "and RTCP is read there too",
    )
    send.add_argument(
        "--pcap",
        type=Path,
        metavar="FILE",
        help="write every datagram sent and received to this pcap file "
        '(docs/net.md, "Packet captures")',
    )
    send.set_defaults(func=_cmd_send)

    recv = commands.add_parser(
        "recv",
        help="receive video over real UDP/RTP and send feedback",
        description="Receive RTP video, send congestion-control feedback, play it out, and write "
        "the files a simulated run writes.",
    )
    recv.add_argument("--listen", required=True, metavar="HOST:PORT", help="address to listen on")
    recv.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="directory for summary.json, timeseries.csv, frames.csv",
    )
    recv.add_argument(
        "--duration", metavar="D", help='how long, e.g. "30s" (default: until Ctrl-C)'
    )
    recv.add_argument(
        "--idle-timeout", metavar="D", help="stop after this long without media once media came"
    )
    recv.add_argument(
        "--feedback",
        choices=("twcc", "rfc8888"),
        default="twcc",
        help="feedback format (default twcc)",
    )
    recv.add_argument(
        "--scenario",
        type=Path,
        metavar="FILE",
        help="take the feedback interval from this scenario",
    )
    recv.add_argument(
        "--recovery",
        metavar="NAME",
        help="loss recovery: none or nack, as the sender (default: the flow's, else none)",
    )
    recv.add_argument(
        "--flow", metavar="NAME", help="media flow of --scenario (default: the first)"
    )
    recv.add_argument(
        "--peer",
        metavar="HOST:PORT",
        help="accept media from this sender address only (default: the first valid sender)",
    )
    recv.add_argument(
        "--rtcp",
        metavar="HOST:PORT",
        help="the sender's RTCP address when it does not multiplex RTCP on its RTP port "
        "(RFC 5761): feedback and reports go there, RTCP is accepted from that host",
    )
    recv.add_argument(
        "--rtcp-listen",
        metavar="HOST:PORT",
        help="a local address of our own for RTCP (no multiplexing; by convention the RTP "
        "port + 1): our RTCP leaves from there and RTCP is read there too, never media",
    )
    recv.add_argument(
        "--pcap",
        type=Path,
        metavar="FILE",
        help="write every datagram received and sent to this pcap file "
        '(docs/net.md, "Packet captures")',
    )
    recv.set_defaults(func=_cmd_recv)

    emu = commands.add_parser(
        "emulate",
        help="relay UDP through the simulator's link models on a real clock",
        description="A UDP relay: datagrams to --listen go to --forward through a link "
        "(rate or trace, delay, drop-tail queue, loss, jitter); replies come back through "
        "a reverse link.",
    )
    emu.add_argument(
        "--listen", required=True, metavar="HOST:PORT", help="address the sender sends to"
    )
    emu.add_argument("--forward", required=True, metavar="HOST:PORT", help="the receiver")
    emu.add_argument("--rate", metavar="R", help='constant rate, e.g. "2Mbps"')
    emu.add_argument("--trace", type=Path, metavar="FILE", help="rate trace (mahimahi by default)")
    emu.add_argument("--trace-format", metavar="F", help="mahimahi | throughput | opennetlab")
    emu.add_argument("--delay", metavar="D", help='one-way propagation delay, e.g. "20ms"')
    emu.add_argument(
        "--queue", metavar="Q", help='drop-tail limit: "60KB", "50pkts", "100ms" or "unlimited"'
    )
    emu.add_argument("--loss", metavar="P", help='random loss, e.g. "1%%"')
    emu.add_argument(
        "--jitter", metavar="D", help="extra delay uniform in [0, D], never reordering"
    )
    for key in ("rate", "trace", "delay", "queue", "loss", "jitter"):
        emu.add_argument(
            f"--reverse-{key}", metavar="X", help=f"reverse direction's {key} (default: as forward)"
        )
    emu.add_argument(
        "--scenario", type=Path, metavar="FILE", help="take both links from this scenario"
    )
    emu.add_argument(
        "--link", metavar="NAME", help="[[link]] of --scenario (default: its main link)"
    )
    emu.add_argument("--seed", type=_seed, metavar="N", help="seed of the links' randomness")
    emu.add_argument("--duration", metavar="D", help="how long (default: until Ctrl-C)")
    emu.add_argument(
        "--client",
        metavar="HOST:PORT",
        help="relay this client only (default: the first one heard; another takes its place "
        "only after it has been silent for 1 s)",
    )
    emu.add_argument(
        "--upstream",
        metavar="HOST:PORT",
        help="bind the socket facing --forward here (default: an ephemeral port), for a "
        "receiver that must know where to send its replies",
    )
    emu.set_defaults(func=_cmd_emulate)


def _add_report_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    report = commands.add_parser(
        "report",
        help="write an HTML page of plots and tables for runs",
        description="Write one self-contained HTML page (viewable offline) with plots and "
        "per-flow tables for the run directories of `rtcc run --out` or `rtcc recv --out`, "
        "side by side.",
    )
    report.add_argument(
        "dirs", nargs="+", type=Path, metavar="DIR", help="run directory (summary.json, ...)"
    )
    report.add_argument(
        "-o",
        "--out",
        type=Path,
        default=Path("report.html"),
        metavar="FILE",
        help="HTML file to write (default report.html)",
    )
    report.add_argument(
        "--png",
        type=Path,
        metavar="DIR",
        help="also write each figure as PNG and SVG (matplotlib) to DIR",
    )
    report.set_defaults(func=_cmd_report)


def _seed(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**64 - 1], got {value}")
    return value


def _cmd_run(args: argparse.Namespace) -> int:
    scenario: Path = args.scenario
    out: Path = args.out
    progress_console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[simulated]}"),
        TimeElapsedColumn(),
        console=progress_console,
        transient=True,
        # A bar is for people watching; logs and pipes get nothing.
        disable=not progress_console.is_terminal,
    ) as bar:
        task = bar.add_task(scenario.name, total=None, simulated="")

        def on_progress(sim_time_s: float, duration_s: float) -> None:
            bar.update(
                task,
                completed=sim_time_s,
                total=duration_s,
                simulated=f"{sim_time_s:.0f} / {duration_s:.0f} s simulated",
            )

        result = rtcc.run(
            scenario,
            seed=args.seed,
            out=out,
            progress=on_progress,
            cc_trace=args.cc_trace,
            allow_large=args.allow_large,
            pcap=args.pcap,
        )

    out_console = Console() if sys.stdout.isatty() else Console(width=160)
    _print_summary(out_console, result.summary)
    out_console.print(f"results in {result.out_dir}")
    out_console.print(f"seed {result.seed} (replay with --seed {result.seed})")
    return 0


def _cmd_send(args: argparse.Namespace) -> int:
    source = None if args.source == "synthetic" else Path(args.source)
    stats = rtcc.send(
        args.to,
        cc=args.cc,
        source=source,
        fps=args.fps,
        loop=not args.no_loop,
        scenario=args.scenario,
        flow=args.flow,
        duration=args.duration,
        out=args.out,
        sdp=args.sdp,
        seed=args.seed,
        bind=args.bind,
        feedback_timeout=not args.no_feedback_timeout,
        recovery=args.recovery,
        rtcp=args.rtcp,
        rtcp_listen=args.rtcp_listen,
        pcap=args.pcap,
    )
    console = Console() if sys.stdout.isatty() else Console(width=160)
    _print_stats(console, "sender", stats)
    transport = stats.get("transport", {})
    if transport.get("datagrams_sent", 0) == 0 and transport.get("send_errors", 0) > 0:
        _fail(
            2, f"--to {args.to}: no datagram could be sent ({transport['send_errors']} send errors)"
        )
    return 0


def _cmd_recv(args: argparse.Namespace) -> int:
    summary = rtcc.recv(
        args.listen,
        out=args.out,
        scenario=args.scenario,
        flow=args.flow,
        duration=args.duration,
        idle_timeout=args.idle_timeout,
        feedback=args.feedback,
        recovery=args.recovery,
        peer=args.peer,
        rtcp=args.rtcp,
        rtcp_listen=args.rtcp_listen,
        pcap=args.pcap,
    )
    console = Console() if sys.stdout.isatty() else Console(width=160)
    _print_summary(console, summary)
    _print_stats(console, "transport", summary.get("transport", {}))
    console.print(f"results in {args.out}")
    return 0


def _cmd_emulate(args: argparse.Namespace) -> int:
    reverse = {
        key: value
        for key in ("rate", "trace", "delay", "queue", "loss", "jitter")
        if (value := getattr(args, f"reverse_{key}")) is not None
    }
    stats = rtcc.emulate(
        args.listen,
        args.forward,
        rate=args.rate,
        trace=args.trace,
        trace_format=args.trace_format,
        delay=args.delay,
        queue=args.queue,
        loss=args.loss,
        jitter=args.jitter,
        reverse=reverse,
        scenario=args.scenario,
        link=args.link,
        seed=args.seed,
        duration=args.duration,
        client=args.client,
        upstream=args.upstream,
    )
    console = Console() if sys.stdout.isatty() else Console(width=160)
    for direction in ("forward", "reverse"):
        _print_stats(console, direction, stats.get(direction, {}))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    try:
        page = rtcc.report(args.dirs, args.out, png_dir=args.png)
    except rtcc.ReportError as e:
        _fail(2, str(e))
    print(f"report written to {page}")
    if args.png is not None:
        print(f"figures (PNG and SVG) written to {args.png}")
    return 0


def _print_stats(console: Console, title: str, stats: Mapping[str, Any]) -> None:
    """Counters as a two-column table; nested tables are flattened with dots."""
    table = Table(title=title, title_justify="left")
    table.add_column("counter")
    table.add_column("value", justify="right")

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, float):
            table.add_row(prefix, f"{value:.3f}")
        else:
            table.add_row(prefix, str(value))

    walk("", stats)
    console.print(table)


def _print_summary(console: Console, summary: Mapping[str, Any]) -> None:
    flows = Table(title=f"{_safe(str(summary.get('scenario', '')))}: flows", title_justify="left")
    for header in ("flow", "kind", "cc"):
        flows.add_column(header)
    for header in (
        "media kbps",
        "goodput kbps",
        "delay mean ms",
        "delay p95 ms",
        "stall %",
        "loss %",
        "owd mean ms",
        "owd p95 ms",
    ):
        flows.add_column(header, justify="right")
    for flow in summary.get("flows", []):
        delay = flow.get("frame_delay_ms") or {}
        owd = flow.get("owd_ms") or {}
        flows.add_row(
            _safe(str(flow.get("name", ""))),
            _safe(str(flow.get("kind", ""))),
            _safe(str(flow.get("cc", ""))),
            _fmt(flow.get("media_bitrate_kbps"), "{:.1f}"),
            _fmt(flow.get("goodput_kbps"), "{:.1f}"),
            _fmt(delay.get("mean"), "{:.1f}"),
            _fmt(delay.get("p95"), "{:.1f}"),
            _fmt(_percent(flow.get("stall_ratio")), "{:.2f}"),
            _fmt(_percent(flow.get("loss_rate")), "{:.2f}"),
            _fmt(owd.get("mean"), "{:.1f}"),
            _fmt(owd.get("p95"), "{:.1f}"),
        )
    console.print(flows)

    if summary.get("links"):
        links = Table(title="links", title_justify="left")
        links.add_column("link")
        for header in ("queue delay mean ms", "queue delay p95 ms", "drops"):
            links.add_column(header, justify="right")
        for link in summary["links"]:
            queue = link.get("queue_delay_ms") or {}
            links.add_row(
                _safe(str(link.get("name", ""))),
                _fmt(queue.get("mean"), "{:.1f}"),
                _fmt(queue.get("p95"), "{:.1f}"),
                _fmt(link.get("drops"), "{}"),
            )
        console.print(links)

    jain = (summary.get("fairness") or {}).get("jain")
    if jain is not None:
        console.print(f"Jain fairness index: {_fmt(jain, '{:.3f}')}")


def _safe(text: str) -> str:
    """A name from a scenario, fit for the terminal.

    Control characters (a terminal escape sequence in a flow name) are shown
    escaped, as Python writes them, and rich's markup is taken literally.
    """
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return rich.markup.escape(shown)


def _fmt(value: object, spec: str) -> str:
    """Format a metric; blank when the metric does not apply (absent)."""
    return "" if value is None else spec.format(value)


def _percent(ratio: object) -> float | None:
    return float(ratio) * 100.0 if isinstance(ratio, int | float) else None


def _fail(code: int, message: str, *, prefix: str = "rtcc: error: ") -> NoReturn:
    # One line, whatever the message holds (DESIGN.md §4.3), and no control
    # characters a scenario's names could carry to the terminal.
    line = " ".join(message.split())
    line = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line)
    print(f"{prefix}{line}", file=sys.stderr)
    raise SystemExit(code)
