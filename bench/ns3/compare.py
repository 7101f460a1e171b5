#!/usr/bin/env python3
"""Run rtcc-bench and the ns-3 reference program alternately and compare them.

Speed: wall time of each child process (and the simulation loop time each
simulator reports), simulated seconds per wall second, events/s, delivered
packets/s, peak RSS (from os.wait4's rusage of the child, so each run is
measured alone). Fidelity: per-flow goodput and bottleneck queue delay of the
two simulators on the same scenario, relative difference, PASS/FAIL against a
tolerance (default 10 %).

Python standard library only. See bench/ns3/README.md for the definitions of
every number and the exact scenario settings.

Exit codes: 0 all good; 1 a run failed or a fidelity check FAILED; 2 bad
arguments; 3 rtcc-bench is unavailable (ns-3 results are still reported).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

SCENARIOS = ("dumbbell", "dumbbell-8", "heavy")
DEFAULT_SCENARIOS = ("dumbbell", "heavy")
# Scenarios whose fidelity decides the exit code (the reference scenarios).
REFERENCE = ("dumbbell", "dumbbell-8")
# Above this many flows the fidelity table shows only the aggregate rows.
MAX_FLOW_ROWS = 10

EXIT_OK, EXIT_FAIL, EXIT_ARGS, EXIT_NO_RTCC = 0, 1, 2, 3


class RunError(Exception):
    """A simulator run did not produce a usable JSON line."""


def log(msg: str) -> None:
    print(f"compare: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- building


def build_ns3(build_script: str) -> None:
    log("building the ns-3 program (bench/ns3/build.sh)")
    subprocess.run(["bash", build_script], check=True)


def rtcc_default_bin() -> str:
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    if not os.path.isabs(target):
        target = os.path.join(REPO, target)
    return os.path.join(target, "release", "rtcc-bench")


def build_rtcc() -> str | None:
    """Builds rtcc-bench; returns None on success, else the reason."""
    log("building rtcc-bench (cargo build --release -p rtcc-bench)")
    try:
        proc = subprocess.run(
            ["cargo", "build", "--release", "-p", "rtcc-bench"], cwd=REPO, check=False
        )
    except FileNotFoundError:
        return "cargo is not on PATH"
    if proc.returncode != 0:
        return f"cargo build --release -p rtcc-bench failed (exit {proc.returncode})"
    return None


# ---------------------------------------------------------------- running


def run_child(cmd: list[str], timeout: float | None) -> dict[str, Any]:
    """Runs one simulator; returns its JSON plus process wall time and RSS.

    The child's stdout/stderr go to temporary files (no pipe can fill up), and
    os.wait4 returns the rusage of exactly this child, whose ru_maxrss is its
    peak resident set size in KiB on Linux.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        deadline = None if timeout is None else start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if deadline else 0)
            if pid != 0:
                break
            if deadline is not None and time.perf_counter() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise RunError(f"{cmd[0]} exceeded --timeout {timeout} s")
            time.sleep(0.01)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = "\n".join(stderr.strip().splitlines()[-5:])
        raise RunError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{tail}")
    result = None
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RunError(f"{' '.join(cmd)} printed bad JSON: {exc}") from exc
            break
    if result is None:
        raise RunError(f"{' '.join(cmd)} printed no JSON line")
    for key in ("sim_seconds", "wall_seconds", "flows", "links"):
        if key not in result:
            raise RunError(f"{' '.join(cmd)}: JSON line has no {key!r}")
    return {
        "cmd": cmd,
        "process_wall_seconds": wall,
        "peak_rss_kb": usage.ru_maxrss,
        "user_seconds": usage.ru_utime,
        "system_seconds": usage.ru_stime,
        "result": result,
    }


# ---------------------------------------------------------------- metrics


def median(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def speed_summary(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Medians over runs of one simulator on one scenario."""
    if not runs:
        return None
    res = [r["result"] for r in runs]
    loop = [float(x["wall_seconds"]) for x in res]
    sim = [float(x["sim_seconds"]) for x in res]
    events = [x.get("events") for x in res]
    delivered = [x.get("delivered_packets") for x in res]

    def per_loop_second(counts: list[Any]) -> float | None:
        vals = [c / w for c, w in zip(counts, loop) if c is not None and w > 0]
        return median(vals)

    return {
        "runs": len(runs),
        "process_wall_seconds": median([r["process_wall_seconds"] for r in runs]),
        "process_cpu_seconds": median(
            [r["user_seconds"] + r["system_seconds"] for r in runs]
        ),
        "loop_wall_seconds": median(loop),
        "sim_seconds": median(sim),
        "sim_seconds_per_wall_second": median(
            [s / w for s, w in zip(sim, loop) if w > 0]
        ),
        "events": median([e for e in events if e is not None]),
        "events_per_second": per_loop_second(events),
        "delivered_packets": median([d for d in delivered if d is not None]),
        "delivered_packets_per_second": per_loop_second(delivered),
        "peak_rss_kb": median([r["peak_rss_kb"] for r in runs]),
    }


def metric_values(result: dict[str, Any]) -> dict[str, float]:
    """Flattens one run's fidelity metrics into name -> value."""
    out: dict[str, float] = {}
    tcp: list[float] = []
    for flow in result.get("flows", []):
        name = flow.get("name")
        gp = flow.get("goodput_kbps")
        if name is None or gp is None:
            continue
        out[f"goodput_kbps[{name}]"] = float(gp)
        if str(name).startswith("tcp"):
            tcp.append(float(gp))
    if len(tcp) > 1:
        out["goodput_kbps[all tcp]"] = sum(tcp)
        squares = sum(x * x for x in tcp)
        # Jain's fairness index (sum x)^2 / (n * sum x^2), informative only.
        out["jain[tcp]"] = sum(tcp) ** 2 / (len(tcp) * squares) if squares > 0 else 1.0
    for link in result.get("links", []):
        if link.get("name") != "bottleneck":
            continue
        qd = link.get("queue_delay_ms") or {}
        for stat in ("mean", "p50", "p95"):
            if qd.get(stat) is not None:
                out[f"queue_delay_ms[{stat}]"] = float(qd[stat])
        if link.get("drops") is not None:
            out["drops[bottleneck]"] = float(link["drops"])
    return out


# Rows judged against the tolerance; the rest are shown for information.
# With several TCP flows, how the drop-tail queue's losses fall on each flow
# is chaotic (a small timing difference moves a loss from one flow to another),
# so only their sum is judged there; a single TCP flow is judged on its own.
def is_judged(metric: str, tcp_flows: int) -> bool:
    if metric.startswith("goodput_kbps[tcp") and tcp_flows > 1:
        return False
    return metric.startswith("goodput_kbps[") or metric in (
        "queue_delay_ms[mean]",
        "queue_delay_ms[p95]",
    )


def fidelity(
    rtcc_runs: list[dict[str, Any]], ns3_runs: list[dict[str, Any]], tol: float
) -> list[dict[str, Any]]:
    rt = [metric_values(r["result"]) for r in rtcc_runs]
    ns = [metric_values(r["result"]) for r in ns3_runs]
    names: list[str] = []
    for source in ns + rt:
        for key in source:
            if key not in names:
                names.append(key)
    flow_rows = [n for n in names if n.startswith("goodput_kbps[") and "all tcp" not in n]
    tcp_flows = sum(1 for n in flow_rows if n.startswith("goodput_kbps[tcp"))
    rows = []
    for name in names:
        if name in flow_rows and len(flow_rows) > MAX_FLOW_ROWS:
            continue
        a = median([m.get(name) for m in rt])
        b = median([m.get(name) for m in ns])
        rel = None
        if a is not None and b is not None:
            if b != 0:
                rel = (a - b) / abs(b)
            else:
                rel = 0.0 if a == 0 else math.inf
        judged = is_judged(name, tcp_flows)
        if not judged:
            verdict = "info"
        elif not rtcc_runs:
            verdict = "-"  # ns-3 only: nothing to judge
        elif rel is None:
            verdict = "FAIL"  # a judged metric missing on one side
        else:
            verdict = "PASS" if abs(rel) <= tol else "FAIL"
        rows.append({"metric": name, "rtcc": a, "ns3": b, "rel_diff": rel, "verdict": verdict})
    return rows


# ---------------------------------------------------------------- output


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.{digits}f}"
    return str(v)


def fmt_pct(v: float | None) -> str:
    if v is None:
        return "n/a"
    if math.isinf(v):
        return "inf"
    return f"{v * 100:+.2f} %"


def table(headers: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(headers) + " |"]
        lines.append("|" + "|".join("---" for _ in headers) + "|")
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def speed_table(summary: dict[str, Any], markdown: bool) -> str:
    headers = [
        "scenario",
        "simulator",
        "runs",
        "wall s (process)",
        "wall s (sim loop)",
        "CPU s (process)",
        "ns-3/rtcc (process)",
        "ns-3/rtcc (loop)",
        "sim s / wall s",
        "events",
        "events/s",
        "delivered pkts/s",
        "peak RSS MiB",
    ]
    rows = []
    for scen, by_sim in summary.items():
        rt = by_sim.get("rtcc")
        ns = by_sim.get("ns-3")
        for sim_name, s in (("rtcc", rt), ("ns-3", ns)):
            if s is None:
                rows.append([scen, sim_name, "0"] + ["n/a"] * (len(headers) - 3))
                continue
            is_ns = sim_name == "ns-3"
            rows.append(
                [
                    scen,
                    sim_name,
                    str(s["runs"]),
                    fmt(s["process_wall_seconds"]),
                    fmt(s["loop_wall_seconds"]),
                    fmt(s["process_cpu_seconds"]),
                    fmt(ratio(ns and ns["process_wall_seconds"], rt and rt["process_wall_seconds"]), 2)
                    if is_ns
                    else "",
                    fmt(ratio(ns and ns["loop_wall_seconds"], rt and rt["loop_wall_seconds"]), 2)
                    if is_ns
                    else "",
                    fmt(s["sim_seconds_per_wall_second"], 1),
                    fmt(s["events"], 0) if s["events"] is not None else "n/a",
                    fmt(s["events_per_second"], 0),
                    fmt(s["delivered_packets_per_second"], 0),
                    fmt(s["peak_rss_kb"] / 1024.0, 1) if s["peak_rss_kb"] else "n/a",
                ]
            )
    return table(headers, rows, markdown)


def fidelity_table(scen: str, rows: list[dict[str, Any]], tol: float, markdown: bool) -> str:
    headers = ["metric", "rtcc", "ns-3", "rtcc vs ns-3", f"within {tol * 100:.0f} %"]
    body = [
        [r["metric"], fmt(r["rtcc"]), fmt(r["ns3"]), fmt_pct(r["rel_diff"]), r["verdict"]]
        for r in rows
    ]
    title = f"Fidelity: {scen}" + ("" if scen in REFERENCE else " (informative)")
    head = f"### {title}" if markdown else title
    judged = [r for r in rows if r["verdict"] != "info"]
    if not any(r["rtcc"] is not None for r in rows):
        verdict = "no rtcc result"
    elif any(r["verdict"] == "FAIL" for r in judged):
        verdict = "FAIL"
    else:
        verdict = "PASS"
    return head + "\n\n" + table(headers, body, markdown) + f"\n\nverdict: {verdict}"


# ---------------------------------------------------------------- main


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Compare rtcc-bench with ns-3 on the reference scenarios "
        "(runs the two alternately)."
    )
    p.add_argument(
        "--scenarios",
        default=",".join(DEFAULT_SCENARIOS),
        help="comma-separated subset of " + ", ".join(SCENARIOS) + " (default: %(default)s)",
    )
    p.add_argument(
        "--runs", type=int, default=3, help="runs per simulator for dumbbell scenarios (default 3)"
    )
    p.add_argument(
        "--heavy-runs", type=int, default=1, help="runs per simulator for heavy (default 1)"
    )
    p.add_argument("--seed", type=int, default=1, help="seed passed to both simulators")
    p.add_argument("--tolerance", type=float, default=0.10, help="fidelity tolerance (0.10 = 10 %%)")
    p.add_argument("--json", metavar="OUT", help="write all raw numbers to this JSON file")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    p.add_argument("--no-build", action="store_true", help="do not build either program")
    p.add_argument("--ns3-only", action="store_true", help="run only ns-3 (exit 0 without rtcc)")
    p.add_argument("--rtcc-bin", help="rtcc-bench binary (default: <target>/release/rtcc-bench)")
    p.add_argument(
        "--ns3-bin", default=os.path.join(HERE, "build", "dumbbell"), help="ns-3 program"
    )
    p.add_argument(
        "--scenario-dir",
        default=os.path.join(REPO, "scenarios", "bench"),
        help="directory of rtcc's <scenario>.toml files (default: scenarios/bench)",
    )
    p.add_argument("--timeout", type=float, help="kill a run after this many seconds")
    args = p.parse_args(argv)
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    bad = [s for s in args.scenarios if s not in SCENARIOS]
    if bad or not args.scenarios:
        p.error(f"unknown scenario(s) {bad}; choose from {', '.join(SCENARIOS)}")
    if args.runs < 1 or args.heavy_runs < 1:
        p.error("--runs and --heavy-runs must be >= 1")
    if args.seed < 0:
        p.error("--seed must be >= 0")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)

    if not args.no_build:
        try:
            build_ns3(os.path.join(HERE, "build.sh"))
        except subprocess.CalledProcessError as exc:
            log(f"building the ns-3 program failed (exit {exc.returncode})")
            return EXIT_FAIL
    if not os.access(args.ns3_bin, os.X_OK):
        log(f"ns-3 program {args.ns3_bin} not found; run bench/ns3/build.sh")
        return EXIT_FAIL

    rtcc_bin = args.rtcc_bin or rtcc_default_bin()
    rtcc_missing: str | None = None
    if args.ns3_only:
        rtcc_missing = "--ns3-only"
    else:
        if not args.no_build and not args.rtcc_bin:
            rtcc_missing = build_rtcc()
        if rtcc_missing is None and not os.access(rtcc_bin, os.X_OK):
            rtcc_missing = f"{rtcc_bin} does not exist"
        if rtcc_missing is not None:
            log(
                f"rtcc-bench is unavailable: {rtcc_missing}. Running ns-3 only; "
                "build it with `cargo build --release -p rtcc-bench` (or pass --rtcc-bin)."
            )

    load = os.getloadavg()
    if load[0] > (os.cpu_count() or 1):
        log(f"warning: load average {load[0]:.2f} exceeds {os.cpu_count()} CPUs; times are noisy")

    raw: dict[str, Any] = {
        "meta": {
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": platform.node(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_start": load,
            "seed": args.seed,
            "tolerance": args.tolerance,
            "rtcc_bin": None if rtcc_missing else rtcc_bin,
            "rtcc_missing": rtcc_missing,
            "ns3_bin": args.ns3_bin,
        },
        "runs": [],
        "summary": {},
        "fidelity": {},
    }
    failed = False
    summary: dict[str, Any] = {}
    rtcc_skipped: list[str] = []  # scenarios without an rtcc .toml file

    for scen in args.scenarios:
        n = args.heavy_runs if scen == "heavy" else args.runs
        toml = os.path.join(args.scenario_dir, f"{scen}.toml")
        use_rtcc = rtcc_missing is None
        if use_rtcc and not os.path.isfile(toml):
            log(f"{scen}: rtcc scenario file {toml} is missing; running ns-3 only")
            use_rtcc = False
            rtcc_skipped.append(scen)
        cmds = {
            "ns-3": [args.ns3_bin, f"--scenario={scen}", f"--seed={args.seed}"],
            "rtcc": [rtcc_bin, toml, "--seed", str(args.seed)],
        }
        by_sim: dict[str, list[dict[str, Any]]] = {"rtcc": [], "ns-3": []}
        for i in range(n):
            # Alternate, and swap who goes first every round, so slow drift of
            # the machine's load does not favour one simulator.
            order = ["rtcc", "ns-3"] if i % 2 == 0 else ["ns-3", "rtcc"]
            for sim in order:
                if sim == "rtcc" and not use_rtcc:
                    continue
                log(f"{scen}: run {i + 1}/{n} {sim}: {' '.join(cmds[sim])}")
                try:
                    rec = run_child(cmds[sim], args.timeout)
                except (RunError, OSError) as exc:
                    log(f"{scen}: {sim} run failed: {exc}")
                    failed = True
                    continue
                rec.update({"scenario": scen, "simulator": sim, "round": i})
                by_sim[sim].append(rec)
                raw["runs"].append(rec)
                log(
                    f"{scen}: {sim} took {rec['process_wall_seconds']:.2f} s "
                    f"(loop {float(rec['result']['wall_seconds']):.2f} s), "
                    f"peak RSS {rec['peak_rss_kb'] / 1024:.1f} MiB"
                )
        summary[scen] = {
            "rtcc": speed_summary(by_sim["rtcc"]),
            "ns-3": speed_summary(by_sim["ns-3"]),
        }
        if by_sim["rtcc"] and by_sim["ns-3"]:
            raw["fidelity"][scen] = fidelity(by_sim["rtcc"], by_sim["ns-3"], args.tolerance)
        elif by_sim["ns-3"]:
            # Still show ns-3's own numbers in the fidelity layout.
            raw["fidelity"][scen] = fidelity([], by_sim["ns-3"], args.tolerance)

    raw["summary"] = summary
    md = args.markdown
    print(("## Speed\n\n" if md else "Speed\n\n") + speed_table(summary, md))
    fidelity_failed = False
    for scen, rows in raw["fidelity"].items():
        print()
        print(fidelity_table(scen, rows, args.tolerance, md))
        if scen in REFERENCE and rtcc_missing is None and summary[scen]["rtcc"] is not None:
            if any(r["verdict"] == "FAIL" for r in rows):
                fidelity_failed = True
    if md:
        print(
            "\nwall s (process): median child wall time incl. setup; wall s (sim loop): "
            "time the simulator reports for its event loop, used for the per-second rates; "
            "CPU s (process): user + system time of the child (less sensitive to machine load). "
            "Peak RSS from wait4. Events are each simulator's own event count (not comparable "
            "one to one); delivered packets are defined identically (bench/ns3/README.md)."
        )

    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(raw, fh, indent=2, sort_keys=True)
        log(f"wrote {args.json}")

    if failed:
        return EXIT_FAIL
    if (rtcc_missing is not None and not args.ns3_only) or rtcc_skipped:
        return EXIT_NO_RTCC
    if fidelity_failed:
        log(f"fidelity FAILED (a judged metric differs by more than {args.tolerance * 100:.0f} %)")
        return EXIT_FAIL
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
