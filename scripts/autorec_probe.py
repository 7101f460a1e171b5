#!/usr/bin/env python3
"""Run an AutoRec scenario under several settings and seeds; print its metrics.

The scenario is a file of ``scenarios/papers/autorec/``; the metrics are the
flow's ``live`` object, side by side. Used to investigate the AutoRec results
(docs/algorithms/autorec.md,
"Interpretations"): e.g. why AutoRec_HC misses more deadlines than RTX under
Gilbert-Elliott bursts, and whether spacing off-mode replicas helps.

Usage::

    python scripts/autorec_probe.py gilbert.toml \
        --set link.0.loss.loss_bad=0.6 \
        --variant rtx:flow.0.recovery=rtx \
        --variant hc:flow.0.recovery=autorec,flow.0.recovery_config.preset=rtc-hc \
        --seeds 1 2 3 --metrics deadline_miss_rate recovery_latency_ms

A value is parsed as TOML (``0.6``, ``true``, ``"rtc-hc"``), else kept as a
string. Prints one row per variant: the mean over seeds, then each seed.
"""

from __future__ import annotations

import argparse
import copy
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import rtcc

ROOT = Path(__file__).resolve().parent.parent / "scenarios" / "papers" / "autorec"


def _value(text: str) -> object:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _assign(scenario: dict[str, Any], key: str, value: object) -> None:
    parts: list[str | int] = [int(p) if p.isdigit() else p for p in key.split(".")]
    node: Any = scenario
    for part in parts[:-1]:
        node = node[part] if isinstance(part, int) else node.setdefault(part, {})
    node[parts[-1]] = value


def _settings(text: str) -> list[tuple[str, object]]:
    out = []
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        out.append((key, _value(value)))
    return out


def main() -> None:
    """Parse the arguments, run every variant on every seed, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", help="file under scenarios/papers/autorec/")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every variant")
    parser.add_argument(
        "--variant", action="append", required=True, help="NAME:KEY=VALUE,KEY=VALUE"
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--metrics", nargs="+", default=["deadline_miss_rate"])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    base = tomllib.loads((ROOT / args.scenario).read_text())
    for key, value in _settings(",".join(args.set)):
        _assign(base, key, value)
    variants = []
    for v in args.variant:
        name, _, settings = v.partition(":")
        scenario = copy.deepcopy(base)
        for key, value in _settings(settings):
            _assign(scenario, key, value)
        variants.append((name, scenario))

    jobs = [(name, seed, sc) for name, sc in variants for seed in args.seeds]

    def one(job: tuple[str, int, dict[str, Any]]) -> dict[str, Any]:
        flow = rtcc.run(job[2], seed=job[1]).summary["flows"][0]
        return dict(flow["live"])

    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        lives = list(pool.map(one, jobs))

    def get(live: dict[str, Any], metric: str) -> float:
        node: Any = live
        for part in metric.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return float(node) if isinstance(node, int | float) else float("nan")

    print(f"# {args.scenario} {' '.join(args.set)} seeds {args.seeds}")
    for metric in args.metrics:
        print(f"## {metric}")
        for name, _ in variants:
            vals = [get(lv, metric) for (n, _, _), lv in zip(jobs, lives, strict=True) if n == name]
            mean = sum(vals) / len(vals)
            print(f"{name:>14}  mean {mean:10.5g}   " + " ".join(f"{x:.4g}" for x in vals))


if __name__ == "__main__":
    main()
