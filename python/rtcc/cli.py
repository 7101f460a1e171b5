"""The ``rtcc`` console script.

Exit codes (DESIGN.md §4.3): 0 success; 2 bad input (scenario, trace,
arguments) with one line ``rtcc: error: <message>`` on stderr; 1 an internal
failure, with one line asking for a bug report; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rtcc`` command line; return the process exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.func
    try:
        return command(args)
    except ScenarioError as e:
        _fail(2, str(e))
    except KeyboardInterrupt:
        print("rtcc: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # anything else is a bug, reported in one line
        _fail(1, f"internal error: {type(e).__name__}: {e} ({_ISSUES_HINT})", prefix="rtcc: ")


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
    run.set_defaults(func=_cmd_run)
    return parser


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

        result = rtcc.run(scenario, seed=args.seed, out=out, progress=on_progress)

    out_console = Console() if sys.stdout.isatty() else Console(width=160)
    _print_summary(out_console, result.summary)
    out_console.print(f"results in {result.out_dir}")
    out_console.print(f"seed {result.seed} (replay with --seed {result.seed})")
    return 0


def _print_summary(console: Console, summary: Mapping[str, Any]) -> None:
    flows = Table(title=f"{summary.get('scenario', '')}: flows", title_justify="left")
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
            str(flow.get("name", "")),
            str(flow.get("kind", "")),
            str(flow.get("cc", "")),
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

    links = Table(title="links", title_justify="left")
    links.add_column("link")
    for header in ("queue delay mean ms", "queue delay p95 ms", "drops"):
        links.add_column(header, justify="right")
    for link in summary.get("links", []):
        queue = link.get("queue_delay_ms") or {}
        links.add_row(
            str(link.get("name", "")),
            _fmt(queue.get("mean"), "{:.1f}"),
            _fmt(queue.get("p95"), "{:.1f}"),
            _fmt(link.get("drops"), "{}"),
        )
    console.print(links)

    jain = (summary.get("fairness") or {}).get("jain")
    console.print(f"Jain fairness index: {_fmt(jain, '{:.3f}') or 'n/a'}")


def _fmt(value: object, spec: str) -> str:
    """Format a metric; blank when the metric does not apply (absent)."""
    return "" if value is None else spec.format(value)


def _percent(ratio: object) -> float | None:
    return float(ratio) * 100.0 if isinstance(ratio, int | float) else None


def _fail(code: int, message: str, *, prefix: str = "rtcc: error: ") -> NoReturn:
    # One line, whatever the message holds (DESIGN.md §4.3).
    line = " ".join(message.split())
    print(f"{prefix}{line}", file=sys.stderr)
    raise SystemExit(code)
