#!/usr/bin/env python3
"""Camel against GCC and SQP on traces and seeds that no Camel setting was tuned on.

`rtcc reproduce camel` runs Table 1 on four Lumos5G traces with seeds 1-5;
this script confirms on other traces (Norway HSDPA and Lumos5G traces that
paper.toml does not use, from ``traces/``; the GPL-3.0 Mahimahi uplink traces
from ``../shared/traces/mahimahi`` when that folder exists, skipped with a
message otherwise) and seeds 6-8. The set-up is ``lte-trace.toml``'s (20 ms
one way, 60 KB queue, NACK, encoder up to 4 Mbps, 120 s). Each variant is a
controller plus ``cc_config`` overrides, so a mechanism can be compared with
itself switched off (docs/algorithms/camel.md, I30-I34).

Usage::

    python scripts/camel_heldout.py            # the default variants
    python scripts/camel_heldout.py --seeds 6 7 8 9 10
    python scripts/camel_heldout.py --trace-set fresh --seeds 9 10 11

Prints one Markdown table: per trace and variant, the mean over seeds of the
media bitrate, the mean and p95 frame delay and the stall ratio.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import rtcc

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces" / "mahimahi"

# (label, path, format); all outside paper.toml's Table 1 set.
TRACES: list[tuple[str, Path, str]] = [
    (
        "norway bus",
        ROOT / "traces/norway-hsdpa/bus.ljansbakken-oslo-report.2011-01-29_1423CET.log",
        "throughput",
    ),
    (
        "norway tram",
        ROOT / "traces/norway-hsdpa/tram.jernbanetorget-ljabru-report.2010-12-09_1222CET.log",
        "throughput",
    ),
    ("lumos 4G walking 50107", ROOT / "traces/lumos5g/4G/4g_trace_walking_50107_c", "throughput"),
    ("lumos 4G driving 50116", ROOT / "traces/lumos5g/4G/4g_trace_driving_50116_dr", "throughput"),
    ("mahimahi ATT LTE up", SHARED / "ATT-LTE-driving.up", "mahimahi"),
    ("mahimahi Verizon LTE up", SHARED / "Verizon-LTE-short.up", "mahimahi"),
]

# A second set, never looked at while a Camel setting was chosen (kept for
# confirming a change after the set above informed it): `--trace-set fresh`.
FRESH: list[tuple[str, Path, str]] = [
    (
        "norway car",
        ROOT / "traces/norway-hsdpa/car.snaroya-smestad-report.2011-02-14_2032CET.log",
        "throughput",
    ),
    (
        "norway ferry",
        ROOT / "traces/norway-hsdpa/ferry.nesoddtangen-oslo-report.2010-09-20_1542CEST.log",
        "throughput",
    ),
    (
        "norway metro",
        ROOT / "traces/norway-hsdpa/metro.kalbakken-jernbanetorget-report.2010-09-13_1046CEST.log",
        "throughput",
    ),
    (
        "norway train",
        ROOT / "traces/norway-hsdpa/train.oslo-vestby-report.2011-02-11_1618CET.log",
        "throughput",
    ),
    ("mahimahi TMobile LTE up", SHARED / "TMobile-LTE-short.up", "mahimahi"),
    ("mahimahi Verizon EVDO up", SHARED / "Verizon-EVDO-driving.up", "mahimahi"),
]

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "camel": ("camel", {}),
    "camel without I30/I31": (
        "camel",
        {"queue_pushback": False, "queue_drain_horizon": "0s"},
    ),
    "camel without I32": ("camel", {"stretch_window": "0s"}),
    "camel without I33": ("camel", {"buffer_fallback": False}),
    "camel without I34": ("camel", {"burst_budget": "0s"}),
    "camel without I35": ("camel", {"compete_after": "0s"}),
    "gcc": ("gcc", {}),
    "sqp": ("sqp", {}),
}


def run_one(
    base: dict[str, Any], trace: Path, fmt: str, cc: str, over: dict[str, Any], seed: int
) -> dict[str, float]:
    """One run of ``base`` on ``trace`` with controller ``cc``; its flow's metrics."""
    sc = copy.deepcopy(base)
    sc["link"][0]["trace"] = str(trace)
    sc["link"][0]["trace_format"] = fmt
    sc["flow"][0]["cc"] = cc
    sc["flow"][0]["recovery"] = "nack"
    if over:
        sc["flow"][0]["cc_config"] = dict(over)
    flow = rtcc.run(sc, seed=seed).summary["flows"][0]
    return {
        "kbps": flow["media_bitrate_kbps"],
        "delay": flow["frame_delay_ms"]["mean"],
        "p95": flow["frame_delay_ms"]["p95"],
        "stall": flow["stall_ratio"] * 100,
    }


def main() -> int:
    """Runs every trace, variant and seed; prints the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[6, 7, 8])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--trace-set", choices=["default", "fresh"], default="default")
    args = ap.parse_args()
    base = tomllib.loads((ROOT / "scenarios/papers/camel/lte-trace.toml").read_text())
    traces = []
    for label, path, fmt in TRACES if args.trace_set == "default" else FRESH:
        if path.exists():
            traces.append((label, path, fmt))
        else:
            print(f"skipped {label}: {path} is absent", file=sys.stderr)
    jobs = [
        (label, name, seed, path, fmt, cc, over)
        for label, path, fmt in traces
        for name, (cc, over) in VARIANTS.items()
        for seed in args.seeds
    ]
    with ThreadPoolExecutor(args.workers) as pool:
        results = list(pool.map(lambda j: run_one(base, j[3], j[4], j[5], j[6], j[2]), jobs))
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    for job, res in zip(jobs, results, strict=True):
        rows.setdefault((job[0], job[1]), []).append(res)
    seeds = " ".join(str(s) for s in args.seeds)
    print(f"Seeds {seeds}; mean over seeds.\n")
    print("| trace | variant | bitrate (kbps) | frame delay mean (ms) | p95 (ms) | stall % |")
    print("|---|---|---|---|---|---|")
    for (label, name), rs in rows.items():
        mean = {k: sum(r[k] for r in rs) / len(rs) for k in rs[0]}
        print(
            f"| {label} | {name} | {mean['kbps']:.0f} | {mean['delay']:.0f} "
            f"| {mean['p95']:.0f} | {mean['stall']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
