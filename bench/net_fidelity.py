#!/usr/bin/env python3
"""Sim-vs-real fidelity (issue 3 §4): one scenario, simulated and real.

The scenario runs in the simulator and over loopback through ``rtcc emulate``
with the same controller.

Runs ``rtcc run SCENARIO``, then ``--runs`` times the real chain
``rtcc send -> rtcc emulate --scenario -> rtcc recv`` (same scenario, same
media flow, same link model on a real clock), and prints a Markdown table of
the mean target bitrate, goodput, and frame delay (mean, p50, p95) over the
run after a warm-up, with the real runs' median and range and the relative
difference to the simulator.

Usage: .venv/bin/python bench/net_fidelity.py scenarios/net/fidelity.toml [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import polars as pl

import rtcc

RTCC = [sys.executable, "-m", "rtcc"]


def free_port() -> int:
    """A free UDP port on 127.0.0.1 (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics(
    timeseries: pl.DataFrame, frames: pl.DataFrame, target_ts: pl.DataFrame, warmup: float
) -> dict[str, float]:
    """Target, goodput and frame-delay statistics after the warm-up."""
    ts = timeseries.filter(pl.col("time_s") > warmup)
    tg = target_ts.filter(pl.col("time_s") > warmup)
    fr = frames.filter((pl.col("capture_ms") > warmup * 1000) & pl.col("delay_ms").is_not_null())
    delay = fr["delay_ms"]
    return {
        "target_kbps": float(tg["target_kbps"].mean()),  # type: ignore[arg-type]
        "goodput_kbps": float(ts["goodput_kbps"].mean()),  # type: ignore[arg-type]
        "frame_delay_mean_ms": float(delay.mean()),  # type: ignore[arg-type]
        "frame_delay_p50_ms": float(delay.quantile(0.5)),  # type: ignore[arg-type]
        "frame_delay_p95_ms": float(delay.quantile(0.95)),  # type: ignore[arg-type]
        "frames": float(fr.height),
    }


def read_csv(path: Path) -> pl.DataFrame:
    """A CSV output file with every column's type inferred from all rows."""
    return pl.read_csv(path, infer_schema_length=None)


def real_run(scenario: Path, duration: float, out: Path, feedback: str) -> dict[str, float]:
    """One real run of the scenario (emulate, recv, send); its metrics."""
    emu, rx = free_port(), free_port()
    slack = 3.0
    procs = [
        subprocess.Popen(
            [*RTCC, "emulate", "--listen", f"127.0.0.1:{emu}", "--forward", f"127.0.0.1:{rx}",
             "--scenario", str(scenario), "--duration", f"{duration + 2 * slack}s"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ),
        subprocess.Popen(
            [*RTCC, "recv", "--listen", f"127.0.0.1:{rx}", "--scenario", str(scenario),
             "--out", str(out), "--duration", f"{duration + slack}s", "--idle-timeout", "2s",
             "--feedback", feedback],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ),
    ]  # fmt: skip
    time.sleep(0.5)
    sent = subprocess.run(
        [*RTCC, "send", "--to", f"127.0.0.1:{emu}", "--scenario", str(scenario),
         "--duration", f"{duration}s", "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    if sent.returncode != 0:
        raise SystemExit(f"rtcc send failed: {sent.stderr}")
    for p in procs:
        _, err = p.communicate(timeout=duration + 30)
        if p.returncode != 0:
            raise SystemExit(f"{p.args[3]} failed: {err}")
    # Receiver time starts before the sender's (it was started 1 s earlier):
    # align both on the first frame's capture.
    frames = read_csv(out / "frames.csv")
    ts = read_csv(out / "timeseries.csv")
    send_ts = read_csv(out / "send_timeseries.csv")
    first_ms = float(frames["capture_ms"].min())  # type: ignore[arg-type]
    lead_s = first_ms / 1000.0
    ts = ts.with_columns(pl.col("time_s") - lead_s)
    frames = frames.with_columns(pl.col("capture_ms") - first_ms)
    return {"lead_s": lead_s, **_m(ts, frames, send_ts)}


WARMUP = 5.0


def _m(ts: pl.DataFrame, frames: pl.DataFrame, target_ts: pl.DataFrame) -> dict[str, float]:
    return metrics(ts, frames, target_ts, WARMUP)


def main() -> int:
    """Run both worlds and print the comparison table."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("scenario", type=Path)
    ap.add_argument("--runs", type=int, default=3, help="real runs (default 3)")
    ap.add_argument("--sim-seeds", type=int, default=5, help="simulator seeds (default 5)")
    ap.add_argument("--keep", type=Path, help="keep every run's files in this directory")
    ap.add_argument("--feedback", default="twcc", choices=("twcc", "rfc8888"))
    args = ap.parse_args()
    duration = _duration_s(args.scenario)
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        sims = []
        for seed in range(1, args.sim_seeds + 1):
            sim = rtcc.run(args.scenario, seed=seed, out=Path(tmp) / f"sim{seed}")
            sims.append(_m(sim.timeseries, sim.frames, sim.timeseries))
        reals = [
            real_run(args.scenario, duration, Path(tmp) / f"real{i}", args.feedback)
            for i in range(args.runs)
        ]
    keys = [
        "target_kbps",
        "goodput_kbps",
        "frame_delay_mean_ms",
        "frame_delay_p50_ms",
        "frame_delay_p95_ms",
    ]
    print(
        f"scenario {args.scenario}, {duration:.0f} s, metrics after {WARMUP:.0f} s; "
        f"simulator seeds 1-{args.sim_seeds}, {args.runs} real runs\n"
    )
    print("| metric | sim (median) | sim (min-max) | real (median) | real (min-max) | difference |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in keys:
        sv = [r[k] for r in sims]
        rv = [r[k] for r in reals]
        smed, rmed = statistics.median(sv), statistics.median(rv)
        diff = (rmed - smed) / smed * 100 if smed else float("nan")
        print(
            f"| {k} | {smed:.1f} | {min(sv):.1f}-{max(sv):.1f} | {rmed:.1f} | "
            f"{min(rv):.1f}-{max(rv):.1f} | {diff:+.1f} % |"
        )
    print("\nraw:", json.dumps({"sim": sims, "real": reals}))
    return 0


def _duration_s(path: Path) -> float:
    text = tomllib.loads(path.read_text())["duration"]
    return float(text.removesuffix("s"))


if __name__ == "__main__":
    sys.exit(main())
