#!/usr/bin/env python3
"""Runs rtcc-bench on scenarios and prints speed as a table (`make bench`).

Each scenario runs `--runs` times; the table shows the median of each column.
With `--net`, also runs rtcc-net-bench `--runs` times and prints the real
transport's tables: CPU per packet of the session logic on a simulated clock,
and packet rates through UDP sockets on 127.0.0.1. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    """Parses the command line and prints the requested tables."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scenarios", nargs="*", help="scenario TOML files")
    ap.add_argument("--runs", type=int, default=3, help="runs per scenario (default 3)")
    ap.add_argument("--bin", default=str(ROOT / "target/release/rtcc-bench"))
    ap.add_argument("--net", action="store_true", help="run rtcc-net-bench too")
    ap.add_argument("--net-bin", default=str(ROOT / "target/release/rtcc-net-bench"))
    args = ap.parse_args()
    if not args.scenarios and not args.net:
        ap.error("give scenario files, --net, or both")
    if args.scenarios:
        rc = simulator_table(args)
        if rc != 0:
            return rc
    if args.net:
        return net_tables(args)
    return 0


def print_table(table: Sequence[tuple[str, ...]], left: tuple[int, ...] = (0,)) -> None:
    """Prints rows as aligned columns: those in `left` left-aligned, others right."""
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for i, r in enumerate(table):
        print(
            "  ".join(
                c.ljust(w) if j in left else c.rjust(w)
                for j, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
        if i == 0:
            print("  ".join("-" * w for w in widths))


def simulator_table(args: argparse.Namespace) -> int:
    """rtcc-bench on each scenario: the simulator's speed."""
    rows = []
    for sc in args.scenarios:
        runs = []
        for _ in range(args.runs):
            out = subprocess.run([args.bin, sc], capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr.strip(), file=sys.stderr)
                return out.returncode
            runs.append(json.loads(out.stdout))
        med = {
            k: statistics.median(r[k] for r in runs)
            for k in (
                "wall_seconds",
                "sim_seconds_per_wall_second",
                "events_per_second",
                "delivered_packets_per_second",
                "peak_rss_kb",
            )
        }
        rows.append(
            (
                runs[0]["scenario"],
                runs[0]["sim_seconds"],
                runs[0]["events"],
                runs[0]["delivered_packets"],
                med,
            )
        )
    head = (
        "scenario",
        "sim s",
        "events",
        "delivered pkts",
        "wall s",
        "sim s/wall s",
        "events/s",
        "delivered pkts/s",
        "peak RSS MiB",
    )
    table = [head] + [
        (
            name,
            f"{sim:.0f}",
            f"{ev}",
            f"{pk}",
            f"{m['wall_seconds']:.3f}",
            f"{m['sim_seconds_per_wall_second']:.0f}",
            f"{m['events_per_second'] / 1e6:.2f} M",
            f"{m['delivered_packets_per_second'] / 1e6:.2f} M",
            f"{m['peak_rss_kb'] / 1024:.1f}",
        )
        for name, sim, ev, pk, m in rows
    ]
    print_table(table)
    print(f"(median of {args.runs} runs; wall s = the simulator's event loop, single core)")
    return 0


def net_tables(args: argparse.Namespace) -> int:
    """rtcc-net-bench: one JSON line per measurement, keyed by `bench` (and `wire`)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.runs):
        out = subprocess.run([args.net_bin], capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr.strip(), file=sys.stderr)
            return out.returncode
        for line in out.stdout.splitlines():
            r = json.loads(line)
            key = r["bench"] + (" + wire" if r.get("wire") else "")
            runs.setdefault(key, []).append(r)

    def med(key: str, field: str) -> float:
        return float(statistics.median(r[field] for r in runs[key]))

    print()
    head = (
        "session logic (GCC, 50 Mbps)",
        "packets",
        "sender us/pkt",
        "receiver us/pkt",
        "sender pkts/s",
        "receiver pkts/s",
        "both pkts/s",
        "allocs/pkt tx/rx",
    )
    table: list[tuple[str, ...]] = [head]
    for key, name in (("session", "core sessions"), ("session + wire", "sessions + wire formats")):
        if key not in runs:
            continue
        table.append(
            (
                name,
                f"{int(med(key, 'packets'))}",
                f"{med(key, 'sender_us_per_packet'):.3f}",
                f"{med(key, 'receiver_us_per_packet'):.3f}",
                f"{med(key, 'sender_packets_per_second') / 1e6:.2f} M",
                f"{med(key, 'receiver_packets_per_second') / 1e6:.2f} M",
                f"{med(key, 'packets_per_second') / 1e6:.2f} M",
                f"{med(key, 'sender_allocs_per_packet'):.2f}/"
                f"{med(key, 'receiver_allocs_per_packet'):.2f}",
            )
        )
    print_table(table)
    print("(simulated clock, in-memory path, no sockets; each side timed apart on one core)")

    print()
    head2: tuple[str, ...] = (
        "loopback UDP 127.0.0.1",
        "seconds",
        "sent pkts/s",
        "received pkts/s",
        "dropped",
        "note",
    )
    table = [head2]
    if "loopback_raw" in runs:
        k = "loopback_raw"
        table.append(
            (
                "plain socket -> plain sink",
                f"{med(k, 'seconds'):.1f}",
                f"{med(k, 'sent_pps') / 1e3:.1f} k",
                f"{med(k, 'received_pps') / 1e3:.1f} k",
                f"{int(med(k, 'drops'))}",
                "ceiling of the socket path",
            )
        )
    if "loopback_send" in runs:
        k = "loopback_send"
        table.append(
            (
                "rtcc send -> plain sink",
                f"{med(k, 'seconds'):.1f}",
                f"{med(k, 'sent_pps') / 1e3:.1f} k",
                f"{med(k, 'received_pps') / 1e3:.1f} k",
                f"{int(med(k, 'drops'))}",
                f"limited by {runs[k][0]['limited_by']}; "
                f"pacer allows {med(k, 'pacer_limit_pps') / 1e3:.0f} k, "
                f"encoder {med(k, 'encoder_limit_pps') / 1e3:.0f} k",
            )
        )
    if "loopback_recv" in runs:
        k = "loopback_recv"
        table.append(
            (
                "plain socket -> rtcc recv",
                f"{med(k, 'seconds'):.1f}",
                f"{med(k, 'sent_pps') / 1e3:.1f} k",
                f"{med(k, 'media_pps') / 1e3:.1f} k",
                f"{int(med(k, 'drops'))}",
                "received = media packets processed",
            )
        )
    print_table(table, left=(0, 5))
    print(f"(median of {args.runs} runs; sender and receiver: separate threads on one host)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
