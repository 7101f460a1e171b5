#!/usr/bin/env python3
"""How much per-packet jitter biases a packet train's dispersion estimate.

The simulator's jitter (crates/rtcc-sim/src/link/mod.rs) adds to each packet
a delay uniform in [0, J] and never reorders: a packet is delivered no
earlier than the one before it. A head of n back-to-back packets leaves the
bottleneck ``spacing`` apart; Camel's BW_avg is the head's bytes over its
dispersion, summed over many heads (docs/algorithms/camel.md, I8). This
prints that ratio of sums against the true rate (1.0 = unbiased) for some
jitter levels and head lengths.

Usage: python scripts/jitter_dispersion_bias.py [--heads N] [--spacing MS] [--seed S]
"""

from __future__ import annotations

import argparse
import random


def bias(
    jitter_ms: float, packets: int, spacing_ms: float, heads: int, rng: random.Random
) -> float:
    """Σ true dispersion / Σ measured dispersion over ``heads`` trains."""
    true_total = measured_total = 0.0
    for _ in range(heads):
        last = float("-inf")
        arrivals = []
        for i in range(packets):
            t = max(i * spacing_ms + rng.uniform(0.0, jitter_ms), last)
            last = t
            arrivals.append(t)
        true_total += (packets - 1) * spacing_ms
        measured_total += arrivals[-1] - arrivals[0]
    return true_total / measured_total


def main() -> int:
    """Prints the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=20_000)
    ap.add_argument("--spacing", type=float, default=9.6, help="ms (1200 B at 1 Mbps)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sizes = (2, 3, 4, 6, 10, 15)
    print("| jitter (ms) | " + " | ".join(f"{n} packets" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for jitter in (10.0, 20.0, 50.0, 100.0):
        row = [bias(jitter, n, args.spacing, args.heads, rng) for n in sizes]
        print(f"| {jitter:.0f} | " + " | ".join(f"{r:.2f}" for r in row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
