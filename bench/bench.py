#!/usr/bin/env python3
"""Runs rtcc-bench on scenarios and prints speed as a table (`make bench`).

Each scenario runs `--runs` times; the table shows the median of each column.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scenarios", nargs="+", help="scenario TOML files")
    ap.add_argument("--runs", type=int, default=3, help="runs per scenario (default 3)")
    ap.add_argument("--bin", default=str(ROOT / "target/release/rtcc-bench"))
    args = ap.parse_args()
    rows = []
    for sc in args.scenarios:
        runs = []
        for _ in range(args.runs):
            out = subprocess.run([args.bin, sc], capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr.strip(), file=sys.stderr)
                return out.returncode
            runs.append(json.loads(out.stdout))
        med = {k: statistics.median(r[k] for r in runs) for k in (
            "wall_seconds", "sim_seconds_per_wall_second", "events_per_second",
            "delivered_packets_per_second", "peak_rss_kb")}
        rows.append((runs[0]["scenario"], runs[0]["sim_seconds"], runs[0]["events"],
                     runs[0]["delivered_packets"], med))
    head = ("scenario", "sim s", "events", "delivered pkts", "wall s",
            "sim s/wall s", "events/s", "delivered pkts/s", "peak RSS MiB")
    table = [head] + [
        (name, f"{sim:.0f}", f"{ev}", f"{pk}", f"{m['wall_seconds']:.3f}",
         f"{m['sim_seconds_per_wall_second']:.0f}", f"{m['events_per_second'] / 1e6:.2f} M",
         f"{m['delivered_packets_per_second'] / 1e6:.2f} M", f"{m['peak_rss_kb'] / 1024:.1f}")
        for name, sim, ev, pk, m in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for i, r in enumerate(table):
        print("  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"(median of {args.runs} runs; wall s = the simulator's event loop, single core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
