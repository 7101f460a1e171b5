"""RFC 8868's metrics of one suite run (docs/suites.md, "Metrics").

RFC 8868 §2 asks for each media flow's rate, delay and loss, the
bottleneck's utilisation, fairness among competing flows, the convergence
time after a change, and the stability of the rate. Here, from a run's
``summary.json`` and ``timeseries.csv`` (docs/metrics.md):

- ``rate_kbps``: the media flows' mean ``goodput_kbps`` (payload delivered
  over each flow's active time), averaged over the flows;
- ``utilisation``: the bottleneck link's ``utilization`` (bytes it sent /
  what its capacity could have sent over the run), all flows together;
- ``owd_ms`` / ``owd_p95_ms``: the media flows' one-way delay of delivered
  packets, mean over flows of their mean / largest of their 95th
  percentiles; ``queue_ms``: the bottleneck's mean queueing delay;
- ``loss``: the media flows' loss rate (dropped / sent), mean over flows;
- ``jain``: Jain's index, (Σx)² / (n·Σx²), of the mean goodputs of the
  plan's fairness flows over its fairness window;
- ``convergence_s``: after each event (a capacity change, a flow starting,
  pausing or resuming) and for each media flow active then, the time until
  the flow's goodput averaged over the last second (:data:`AVERAGE_S`)
  comes within ±20 % (:data:`TOLERANCE`) of its reference share and stays
  there for :data:`HOLD_S` (or half the time to the next event, if less);
  mean over the events where that happens, the others counted in
  ``unconverged`` (of ``convergence_events``);
- ``rate_cv``: the coefficient of variation (standard deviation / mean) of
  the 1 s averaged goodput between events, leaving out the first
  :data:`SETTLE_S` after each; mean over those stretches and the flows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rtcc.suite.cases import Plan, ShareFn

if TYPE_CHECKING:
    import polars as pl

    from rtcc._api import Result

__all__ = [
    "AVERAGE_S",
    "HOLD_S",
    "METRICS",
    "SETTLE_S",
    "TOLERANCE",
    "convergence_time",
    "jain",
    "run_metrics",
]

TOLERANCE = 0.2
"""Half-width of the band around the reference share, as a fraction of it."""
AVERAGE_S = 1.0
"""The goodput is averaged over this trailing window before it is compared."""
HOLD_S = 5.0
"""How long the averaged goodput must stay in the band to count as converged."""
SETTLE_S = 5.0
"""Time after each event left out of the rate variation."""

METRICS: tuple[tuple[str, str, str, float], ...] = (
    ("rate_kbps", "rate (kbps)", "{:.0f}", 1.0),
    ("utilisation", "util. (%)", "{:.0f}", 100.0),
    ("owd_ms", "OWD (ms)", "{:.0f}", 1.0),
    ("owd_p95_ms", "OWD p95 (ms)", "{:.0f}", 1.0),
    ("queue_ms", "queue (ms)", "{:.0f}", 1.0),
    ("loss", "loss (%)", "{:.2f}", 100.0),
    ("jain", "Jain", "{:.3f}", 1.0),
    ("convergence_s", "conv. (s)", "{:.1f}", 1.0),
    ("rate_cv", "rate CV", "{:.2f}", 1.0),
)
"""Each metric: key, column heading, number format, scale for display."""


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index of ``values``: 1 when equal, 1/n when one takes all."""
    if not values:
        return None
    total = sum(values)
    squares = sum(v * v for v in values)
    if squares <= 0:
        return 1.0
    return total * total / (len(values) * squares)


def _smoothed(times: Sequence[float], values: Sequence[float], window: float) -> list[float]:
    """Trailing mean of ``values`` over ``(t - window, t]`` at each sample time."""
    out: list[float] = []
    total = 0.0
    lo = 0
    for hi, t in enumerate(times):
        total += values[hi]
        while times[lo] <= t - window:
            total -= values[lo]
            lo += 1
        out.append(total / (hi - lo + 1))
    return out


def convergence_time(
    times: Sequence[float],
    rates: Sequence[float],
    reference: Sequence[float | None],
    start: float,
    end: float,
    *,
    tolerance: float = TOLERANCE,
    hold: float = HOLD_S,
) -> float | None:
    """Time from ``start`` until ``rates`` enter the band around ``reference`` and stay.

    ``rates`` are already averaged; the band is ``reference * (1 ± tolerance)``.
    The rates must stay in it for ``min(hold, (end - start) / 2)`` seconds,
    within ``[start, end)``. ``None`` if that never happens.
    """
    need = min(hold, (end - start) / 2)
    since: float | None = None
    for t, x, r in zip(times, rates, reference, strict=True):
        if t < start:
            continue
        if t >= end:
            break
        inside = r is not None and r > 0 and abs(x - r) <= tolerance * r
        if not inside:
            since = None
            continue
        if since is None:
            since = t
        if t - since >= need - 1e-9:
            return since - start
    return None


def _flow_series(
    ts: pl.DataFrame, flow: str
) -> tuple[list[float], list[float], list[float | None]]:
    import polars as pl

    rows = ts.filter(pl.col("flow") == flow).sort("time_s")
    times = [float(t) for t in rows["time_s"]]
    goodput = [float(g or 0.0) for g in rows["goodput_kbps"]]
    caps: list[float | None] = [None] * len(times)
    if "capacity_kbps" in rows.columns:
        raw = [None if c is None else float(c) for c in rows["capacity_kbps"]]
        if any(c is not None for c in raw):
            known = [c if c is not None else 0.0 for c in raw]
            caps = list(_smoothed(times, known, AVERAGE_S))
    return times, goodput, caps


def _segments(events: Sequence[float], start: float, end: float) -> list[tuple[float, float]]:
    """The stretches ``[a, b)`` of ``[start, end)`` between events."""
    cuts = sorted({start, *(e for e in events if start < e < end)})
    return [(a, b) for a, b in zip(cuts, [*cuts[1:], end], strict=True) if b > a]


def _flow_dynamics(
    times: Sequence[float],
    goodput: Sequence[float],
    caps: Sequence[float | None],
    share: ShareFn,
    events: Sequence[float],
    run_end: float,
    scale: float,
) -> tuple[list[float], int, int, list[float]]:
    """Convergence times, unconverged count, events measured and rate CVs of one flow."""
    smooth = _smoothed(times, goodput, AVERAGE_S)
    reference = [share(t, c) for t, c in zip(times, caps, strict=True)]
    active = [t for t, r in zip(times, reference, strict=True) if r is not None]
    if not active:
        return [], 0, 0, []
    conv: list[float] = []
    unconverged = 0
    measured = 0
    cvs: list[float] = []
    # The flow's own start, pause and resume are events for it too: they are
    # where its reference appears.
    starts = [
        t
        for i, (t, r) in enumerate(zip(times, reference, strict=True))
        if r is not None and (i == 0 or reference[i - 1] is None)
    ]
    flow_events = sorted({*events, *starts})
    for a, b in _segments(flow_events, active[0], min(run_end, active[-1] + 1e-9)):
        if not any(a <= t < b and r is not None for t, r in zip(times, reference, strict=True)):
            continue  # paused throughout
        measured += 1
        c = convergence_time(times, smooth, reference, a, b, hold=HOLD_S * scale)
        if c is None:
            unconverged += 1
        else:
            conv.append(c)
        steady = [
            x
            for t, x, r in zip(times, smooth, reference, strict=True)
            if a + SETTLE_S * scale <= t < b and r is not None
        ]
        if len(steady) >= 2:
            mean = sum(steady) / len(steady)
            if mean > 0:
                var = sum((x - mean) ** 2 for x in steady) / (len(steady) - 1)
                cvs.append(math.sqrt(var) / mean)
    return conv, unconverged, measured, cvs


def run_metrics(result: Result, plan: Plan, *, scale: float = 1.0) -> dict[str, Any]:
    """RFC 8868's metrics of one run of ``plan`` (module doc).

    ``scale`` is the plan's time scale: :data:`HOLD_S` and :data:`SETTLE_S`
    shrink with it (``--quick``).

    Returns the metrics of :data:`METRICS` (``None`` where one does not
    apply), ``unconverged`` and ``convergence_events`` (counts), and
    ``flows``: per media flow its ``rate_kbps``, ``owd_ms``, ``owd_p95_ms``,
    ``loss`` and ``frame_delay_p95_ms``.
    """
    import polars as pl

    summary = result.summary
    flows: Mapping[str, Any] = {f["name"]: f for f in summary["flows"]}
    per_flow: dict[str, dict[str, float | None]] = {}
    for name in plan.media:
        f = flows.get(name, {})
        owd = f.get("owd_ms") or {}
        fd = f.get("frame_delay_ms") or {}
        per_flow[name] = {
            "rate_kbps": f.get("goodput_kbps"),
            "owd_ms": owd.get("mean"),
            "owd_p95_ms": owd.get("p95"),
            "loss": f.get("loss_rate"),
            "frame_delay_p95_ms": fd.get("p95"),
        }

    def mean_of(key: str) -> float | None:
        vals = [x for v in per_flow.values() if (x := v[key]) is not None]
        return sum(vals) / len(vals) if vals else None

    p95s = [x for v in per_flow.values() if (x := v["owd_p95_ms"]) is not None]
    link = next((x for x in summary["links"] if x["name"] == plan.bottleneck), None)
    out: dict[str, Any] = {
        "rate_kbps": mean_of("rate_kbps"),
        "utilisation": link["utilization"] if link else None,
        "owd_ms": mean_of("owd_ms"),
        "owd_p95_ms": max(p95s) if p95s else None,
        "queue_ms": link["queue_delay_ms"]["mean"] if link else None,
        "loss": mean_of("loss"),
        "jain": None,
        "convergence_s": None,
        "rate_cv": None,
        "unconverged": 0,
        "convergence_events": 0,
        "flows": per_flow,
    }
    ts = result.timeseries
    if plan.fairness_window is not None and len(plan.fairness_flows) >= 2:
        a, b = plan.fairness_window
        part = ts.filter((pl.col("time_s") >= a) & (pl.col("time_s") < b))
        means = []
        for name in plan.fairness_flows:
            g = part.filter(pl.col("flow") == name)["goodput_kbps"].fill_null(0.0)
            means.append(float(g.mean()) if g.len() else 0.0)  # type: ignore[arg-type]
        out["jain"] = jain(means)
    conv: list[float] = []
    cvs: list[float] = []
    run_end = float(summary["duration_s"])
    for name in plan.media:
        times, goodput, caps = _flow_series(ts, name)
        if not times:
            continue
        c, unconverged, measured, cv = _flow_dynamics(
            times, goodput, caps, plan.shares[name], plan.events, run_end, scale
        )
        conv += c
        cvs += cv
        out["unconverged"] += unconverged
        out["convergence_events"] += measured
    if conv:
        out["convergence_s"] = sum(conv) / len(conv)
    if cvs:
        out["rate_cv"] = sum(cvs) / len(cvs)
    return out
