#!/usr/bin/env python3
"""Measures what ``rtcc.sweep`` adds to the runs themselves, and its throughput.

Run with the project's virtualenv (``make develop`` first)::

    .venv/bin/python bench/sweep_bench.py [--overhead-runs 64] [--runs 64] [--duration 30s]

Two tables:

1. Overhead per run: the same N short runs (``--short``, default 0.1 s of
   simulated time) once as a plain loop of ``rtcc.run`` in this process, then
   as a sweep with 1 worker. The difference divided by N is what the sweep
   costs per run: grid expansion, run directories, pool start-up (amortised),
   task dispatch, the results table and Parquet file.
2. Throughput: a sweep of ``--runs`` runs of a ``--duration`` scenario with
   1, 2, ... ``--max-jobs`` workers: runs per second and speed-up.

Every sweep goes to a fresh temporary directory, so nothing is reused.
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import rtcc
from rtcc.sweep import Backend, _load_grid, _sweep

# Two flows over a lossy 2 Mbps link, as tests/python/conftest.py's tiny scenario.
SCENARIO: dict[str, Any] = {
    "name": "sweep-bench",
    "link": [
        {
            "name": "bottleneck",
            "rate": "2Mbps",
            "delay": "20ms",
            "queue": "30KB",
            "loss": {"model": "bernoulli", "p": 0.02},
        }
    ],
    "flow": [
        {"name": "video", "kind": "media", "cc": "gcc"},
        {"name": "bulk", "kind": "tcp", "cc": "newreno", "start": "1s"},
    ],
}


def grid(duration: str, runs: int, base: str | None = None) -> dict[str, Any]:
    """``runs`` runs: 2 rates x 2 controllers x runs/4 seeds, or a base file x runs seeds."""
    if base is not None:
        return {"base": str(Path(base).resolve()), "grid": {"duration": [duration]}, "seeds": runs}
    scenario = copy.deepcopy(SCENARIO)
    scenario["duration"] = duration
    return {
        "base": scenario,
        "grid": {"link.0.rate": ["1Mbps", "2Mbps"], "flow.0.cc": ["gcc", "fixed"]},
        "seeds": max(1, runs // 4),
    }


def overhead(runs: int, duration: str) -> None:
    """Prints the sweep's cost per run beyond the runs themselves."""
    spec = grid(duration, runs)
    with tempfile.TemporaryDirectory() as tmp:
        # The same scenarios, seeds and output files, without the sweep.
        points = _load_grid(spec).runs
        start = time.perf_counter()
        for point in points:
            rtcc.run(point.scenario, seed=point.seed, out=Path(tmp) / "plain" / point.run_id)
        plain = time.perf_counter() - start
        # The first pool of a process also starts the forkserver (it imports rtcc once).
        _, cold = _sweep(spec, out=Path(tmp) / "cold", jobs=1, progress=False)
        _, warm = _sweep(spec, out=Path(tmp) / "warm", jobs=1, progress=False)
        _, resumed = _sweep(spec, out=Path(tmp) / "warm", jobs=1, progress=False)
    n = len(points)
    print(f"overhead: {n} runs of {duration} simulated, 1 worker")
    print(f"  {'':34} {'total s':>9} {'per run ms':>11}")
    rows = [
        ("plain rtcc.run loop", plain),
        ("sweep, first in process (wall)", cold.wall_s),
        ("sweep, forkserver up (wall)", warm.wall_s),
        ("  of which inside workers", warm.run_s),
        ("sweep overhead, first", cold.wall_s - plain),
        ("sweep overhead, forkserver up", warm.wall_s - plain),
        ("resumed sweep, nothing to run", resumed.wall_s),
    ]
    for label, seconds in rows:
        print(f"  {label:34} {seconds:9.3f} {seconds / n * 1e3:11.1f}")


def throughput(runs: int, duration: str, max_jobs: int, backend: str, base: str | None) -> None:
    """Prints runs per second of one sweep per worker count."""
    what = base or "the two-flow scenario"
    print(f"throughput: {runs} runs of {duration} of {what}, backend {backend}")
    print(f"  {'jobs':>4} {'wall s':>8} {'runs/s':>8} {'speed-up':>9} {'ms/run in worker':>17}")
    base_rate = None
    for jobs in range(1, max_jobs + 1):
        with tempfile.TemporaryDirectory() as tmp:
            _, stats = _sweep(
                grid(duration, runs, base),
                out=tmp,
                backend=cast(Backend, backend),
                jobs=jobs,
                progress=False,
            )
        rate = stats.runs / stats.wall_s
        base_rate = base_rate or rate
        print(
            f"  {jobs:4} {stats.wall_s:8.2f} {rate:8.2f} {rate / base_rate:9.2f}"
            f" {stats.run_s / stats.runs * 1e3:17.1f}"
        )


def main() -> int:
    """Parses the command line and prints both tables."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--overhead-runs", type=int, default=64)
    ap.add_argument("--short", default="100ms", help="duration of the overhead runs")
    ap.add_argument("--runs", type=int, default=64)
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--max-jobs", type=int, default=2)
    ap.add_argument("--backend", choices=("local", "ray"), default="local")
    ap.add_argument("--base", help="scenario file for the throughput sweep (seeds vary)")
    args = ap.parse_args()
    overhead(args.overhead_runs, args.short)
    throughput(args.runs, args.duration, args.max_jobs, args.backend, args.base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
