#!/usr/bin/env python3
"""Compares two rtcc-bench binaries on the same scenarios, interleaved.

    bench/ab.py BASE_BIN NEW_BIN SCENARIO.toml... [--rounds N]

On a shared, noisy machine two benchmarks run minutes apart measure the
machine as much as the code. Here each round runs every scenario once with
each binary, back to back, the order alternating between rounds, so that
both see the same load. Two clocks are kept: the event loop's wall time as
rtcc-bench reports it, and the process's CPU time (user + system, from
getrusage), which does not count the time the process waits for a core
while other jobs run, so it is the steadier of the two on a loaded machine.
Printed per scenario and clock: the median time of each binary and the
median over rounds of the paired ratio NEW / BASE (below 1 = faster), with
its spread (min, max). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys


def measure(binary: str, scenario: str) -> tuple[float, float]:
    """One rtcc-bench run: the event loop's wall time and the process's CPU time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, scenario], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"{binary} {scenario}: {out.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(json.loads(out.stdout)["wall_seconds"]), cpu


def main() -> int:
    """Runs the rounds and prints the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("base", help="rtcc-bench of the reference commit")
    ap.add_argument("new", help="rtcc-bench of the commit under test")
    ap.add_argument("scenarios", nargs="+", help="scenario TOML files")
    ap.add_argument("--rounds", type=int, default=15, help="rounds (default 15)")
    args = ap.parse_args()
    # times[scenario][clock][binary]: one entry per round.
    times = {
        s: {c: {"base": [], "new": []} for c in ("wall", "cpu")} for s in args.scenarios
    }
    for r in range(args.rounds):
        order = [("base", args.base), ("new", args.new)]
        if r % 2:
            order.reverse()
        for s in args.scenarios:
            for label, binary in order:
                wall, cpu = measure(binary, s)
                times[s]["wall"][label].append(wall)
                times[s]["cpu"][label].append(cpu)
    print(
        f"{'scenario':<36} {'clock':<5} {'base s':>8} {'new s':>8} {'new/base':>9}"
        f" {'min':>6} {'max':>6}"
    )
    for s, clocks in times.items():
        for clock, t in clocks.items():
            ratios = [n / b for b, n in zip(t["base"], t["new"], strict=True)]
            print(
                f"{s:<36} {clock:<5} {statistics.median(t['base']):>8.3f}"
                f" {statistics.median(t['new']):>8.3f} {statistics.median(ratios):>9.3f}"
                f" {min(ratios):>6.3f} {max(ratios):>6.3f}"
            )
    print(f"({args.rounds} interleaved rounds; ratio = median of the per-round NEW/BASE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
