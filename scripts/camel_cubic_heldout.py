#!/usr/bin/env python3
"""Camel beside a loss-based TCP flow on set-ups the competing mode (I35) was not tuned on.

I35 (docs/algorithms/camel.md) was tuned on fig17's 100 KB case, seeds 1-3.
This script runs the checks that confirm it elsewhere: other seeds, NewReno
instead of CUBIC, a 2 Mbps link with a 200 KB buffer (the same 800 ms of
queue), a 150 KB buffer (1.2 s, deeper than ``compete_queue_max``), 500 KB,
and CUBIC leaving at 60 s of 120 (the mode must end). Each run is also made
with ``compete_after = "0s"`` (I35 off). The set-up is ``with-cubic.toml``'s:
20 ms one way, GOP 60, key frames 4 x a delta frame, the TCP flow from 30 s.

Usage::

    python scripts/camel_cubic_heldout.py              # seeds 6 7 8
    python scripts/camel_cubic_heldout.py --seeds 4 5 6 7 8 9 10 11 12 13 14 15

Prints one Markdown table: per case, seed and variant, Camel's and the TCP
flow's goodput and Jain's index over the window, the mean queue delay, and
the share of the window's trace samples in the competing mode.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import polars as pl

import rtcc
from rtcc.reproduce.metrics import window_metrics

# (label, link rate, queue, TCP controller, TCP stop, duration, window).
CASES: list[tuple[str, str, str, str, str | None, str, tuple[float, float]]] = [
    ("cubic 100 KB", "1000kbps", "100KB", "cubic", None, "90s", (40.0, 90.0)),
    ("newreno 100 KB", "1000kbps", "100KB", "newreno", None, "90s", (40.0, 90.0)),
    ("cubic 2 Mbps 200 KB", "2000kbps", "200KB", "cubic", None, "90s", (40.0, 90.0)),
    ("cubic 150 KB", "1000kbps", "150KB", "cubic", None, "90s", (40.0, 90.0)),
    ("cubic 500 KB", "1000kbps", "500KB", "cubic", None, "90s", (40.0, 90.0)),
    ("cubic leaves, 40-60 s", "1000kbps", "100KB", "cubic", "60s", "120s", (40.0, 60.0)),
    ("cubic leaves, 70-120 s", "1000kbps", "100KB", "cubic", "60s", "120s", (70.0, 120.0)),
]

VARIANTS: dict[str, dict[str, Any]] = {"camel": {}, "camel without I35": {"compete_after": "0s"}}


def run_one(case: tuple[Any, ...], over: dict[str, Any], seed: int) -> dict[str, float]:
    """One run; Camel's and TCP's goodput, Jain, queue and time in the mode."""
    _, rate, queue, tcp_cc, stop, duration, (start, end) = case
    tcp: dict[str, Any] = {"name": "tcp", "kind": "tcp", "cc": tcp_cc, "start": "30s"}
    if stop:
        tcp["stop"] = stop
    media: dict[str, Any] = {
        "name": "media",
        "kind": "media",
        "cc": "camel",
        "encoder": {"gop": 60, "i_frame_factor": 4},
        "cc_config": over,
    }
    link = {"name": "bottleneck", "rate": rate, "delay": "20ms", "queue": queue}
    scenario = {"duration": duration, "link": [link], "flow": [media, tcp]}
    result = rtcc.run(scenario, seed=seed, cc_trace=True)
    w = window_metrics(result.timeseries, {"w": (start, end)})["w"]
    assert result.cc_trace is not None
    tr = result.cc_trace.filter(
        (pl.col("flow") == "media")
        & (pl.col("variable") == "competitor_queue_ms")
        & (pl.col("time_s").cast(pl.Float64) >= start)
        & (pl.col("time_s").cast(pl.Float64) < end)
    )
    competing = tr.filter(pl.col("value") > 0).height / max(tr.height, 1)
    return {
        "camel": float(w["media"]["goodput_kbps"]),
        "tcp": float(w["tcp"]["goodput_kbps"]),
        "jain": float(w["jain"]),
        "queue": float(w["queue_delay_ms"]),
        "competing": competing,
    }


def main() -> None:
    """Run every case, variant and seed; print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[6, 7, 8])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    jobs = [(c, v, s) for c in CASES for v in VARIANTS for s in args.seeds]
    with ThreadPoolExecutor(args.workers) as pool:
        results = list(pool.map(lambda j: run_one(j[0], VARIANTS[j[1]], j[2]), jobs))
    print("| case | variant | seed | Camel kbps | TCP kbps | Jain | queue ms | in the mode |")
    print("|---|---|---|---|---|---|---|---|")
    for (case, variant, seed), r in zip(jobs, results, strict=True):
        print(
            f"| {case[0]} | {variant} | {seed} | {r['camel']:.0f} | {r['tcp']:.0f} | "
            f"{r['jain']:.3f} | {r['queue']:.0f} | {r['competing']:.0%} |"
        )


if __name__ == "__main__":
    main()
