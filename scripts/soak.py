"""Soak run: a long simulation while its memory is sampled against simulated time.

    python scripts/soak.py [SCENARIO] [--out DIR] [--csv FILE] [--keep]

Runs SCENARIO (default ``scenarios/soak/soak-24h.toml``: every media
controller, TCP and UDP cross traffic and a looped cellular trace for a
simulated day) through ``rtcc.run`` and, at every progress callback (each
simulated second), records the process's resident memory (VmRSS from
/proc/self/status) with the simulated time and the wall-clock time. The curve
goes to FILE (default ``docs/results/soak-memory.csv``: one row per
simulated minute) and a summary is printed: the peak after warm-up against the
peak at the end of warm-up (the first hour). The run's own files go to DIR (a
temporary folder, removed unless ``--keep``: a simulated day writes about
2 GB of frames.csv).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import tempfile
import time
from pathlib import Path

import rtcc

WARM_UP_S = 3600.0


def rss_kib() -> int:
    """Resident memory of this process, in KiB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> int:
    """Run the soak, write the curve, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/soak/soak-24h.toml")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--csv", type=Path, default=Path("docs/results/soak-memory.csv"))
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    tmp = None
    out = args.out
    if out is None:
        tmp = tempfile.mkdtemp(prefix="rtcc-soak-")
        out = Path(tmp) / "run"
    rows: list[tuple[float, float, int]] = []
    start = time.perf_counter()
    next_minute = 0.0

    def on_progress(sim_s: float, _duration_s: float) -> None:
        nonlocal next_minute
        if sim_s >= next_minute:
            rows.append((sim_s, time.perf_counter() - start, rss_kib()))
            next_minute += 60.0

    try:
        result = rtcc.run(args.scenario, out=out, progress=on_progress)
        end_s = float(result.summary.get("duration_s", rows[-1][0]))
        rows.append((end_s, time.perf_counter() - start, rss_kib()))
        flows = result.summary["flows"]
    finally:
        if tmp is not None and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    with args.csv.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sim_time_s", "wall_time_s", "rss_kib"])
        for sim_s, wall_s, rss in rows:
            w.writerow([f"{sim_s:.0f}", f"{wall_s:.1f}", rss])
    warm = [r for r in rows if r[0] <= WARM_UP_S]
    after = [r for r in rows if r[0] > WARM_UP_S]
    peak_warm = max(r[2] for r in warm)
    peak_after = max((r[2] for r in after), default=peak_warm)
    last_hour = [r[2] for r in rows if r[0] >= rows[-1][0] - 3600]
    print(f"{len(flows)} flows, {rows[-1][0]:.0f} s simulated in {rows[-1][1]:.0f} s")
    print(f"RSS at the end of warm-up (first hour): peak {peak_warm} KiB")
    print(f"RSS after warm-up: peak {peak_after} KiB ({peak_after / peak_warm:.3f} x)")
    print(f"RSS over the last hour: {min(last_hour)}-{max(last_hour)} KiB")
    print(f"curve: {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
