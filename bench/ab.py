#!/usr/bin/env python3
"""Compares two rtcc-bench binaries on the same scenarios, interleaved.

    bench/ab.py BASE_BIN NEW_BIN SCENARIO.toml... [--rounds N]

On a shared, noisy machine two benchmarks run minutes apart measure the
machine as much as the code. Here each round runs every scenario once with
each binary, back to back, the order alternating between rounds, so that
both see the same load. Printed per scenario: the median wall time of each
binary and the median over rounds of the paired ratio NEW / BASE (below 1 =
faster), with its spread (min, max). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys


def wall_seconds(binary: str, scenario: str) -> float:
    """One rtcc-bench run: the event loop's wall time."""
    out = subprocess.run([binary, scenario], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} {scenario}: {out.stderr.strip()}")
    return float(json.loads(out.stdout)["wall_seconds"])


def main() -> int:
    """Runs the rounds and prints the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("base", help="rtcc-bench of the reference commit")
    ap.add_argument("new", help="rtcc-bench of the commit under test")
    ap.add_argument("scenarios", nargs="+", help="scenario TOML files")
    ap.add_argument("--rounds", type=int, default=15, help="rounds (default 15)")
    args = ap.parse_args()
    times: dict[str, dict[str, list[float]]] = {
        s: {"base": [], "new": []} for s in args.scenarios
    }
    for r in range(args.rounds):
        order = [("base", args.base), ("new", args.new)]
        if r % 2:
            order.reverse()
        for s in args.scenarios:
            for label, binary in order:
                times[s][label].append(wall_seconds(binary, s))
    print(f"{'scenario':<36} {'base s':>8} {'new s':>8} {'new/base':>9} {'min':>6} {'max':>6}")
    for s, t in times.items():
        ratios = [n / b for b, n in zip(t["base"], t["new"], strict=True)]
        print(
            f"{s:<36} {statistics.median(t['base']):>8.3f} {statistics.median(t['new']):>8.3f}"
            f" {statistics.median(ratios):>9.3f} {min(ratios):>6.3f} {max(ratios):>6.3f}"
        )
    print(f"({args.rounds} interleaved rounds; ratio = median of the per-round NEW/BASE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
