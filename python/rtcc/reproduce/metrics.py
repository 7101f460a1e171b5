"""Numbers of a run: metric paths into ``summary.json`` and time-window metrics.

``docs/reproduce.md`` ("Metrics") defines the paths and the window metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import polars as pl


def metric_value(summary: Mapping[str, Any], path: str) -> float | None:
    """The number at ``path`` in a run's summary (module doc), or None."""
    node: Any
    if path.startswith("flow:*."):
        values = [
            v
            for f in summary.get("flows", [])
            if (v := metric_value(summary, f"flow:{f.get('name')}.{path[7:]}")) is not None
        ]
        return sum(values) / len(values) if values else None
    if path.startswith(("flow:", "link:")):
        kind, _, rest = path.partition(":")
        name, _, keys = rest.partition(".")
        items = summary.get("flows" if kind == "flow" else "links", [])
        node = next((x for x in items if x.get("name") == name), None)
    else:
        node, keys = summary, path
    parts = keys.split(".") if keys else []
    for i, key in enumerate(parts):
        if not isinstance(node, Mapping):
            return None
        if key not in node:
            # A flow's `cc_states` lists only the states it was seen in: the
            # share of any other state is 0.
            # Likewise a traced variable's `share` lists only the values seen.
            last = i == len(parts) - 1
            if last and i > 0 and parts[i - 1] == "cc_states":
                return 0.0
            if last and i > 1 and parts[i - 2] == "share" and isinstance(node, Mapping):
                return 0.0
            return None
        node = node[key]
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None
    return float(node)


def window_metrics(ts: pl.DataFrame, windows: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """Metrics of each time window ``[start, end)`` (seconds) from ``timeseries.csv``.

    Per flow (``<window>.<flow>.<key>``): the mean of every numeric column
    over the window's samples, ``loss_rate`` (packets lost / packets sent in
    the window), ``queue_delay_ms_p95`` and, where the run scores pictures,
    ``psnr_db_min`` (the worst sample: the depth of a brief drop that the
    mean hides). Over all flows: ``jain`` (Jain's
    index of the flows' mean goodputs: flows that had not started have no
    samples and do not count), ``loss_rate`` and ``queue_delay_ms`` (mean and
    ``queue_delay_ms_p95`` over every sample).
    """
    import polars as pl

    out: dict[str, Any] = {}
    numeric = [c for c, t in ts.schema.items() if c not in ("time_s", "flow") and t.is_numeric()]
    extra = [pl.col("queue_delay_ms").quantile(0.95).alias("queue_delay_ms_p95")]
    if "psnr_db" in numeric:
        extra.append(pl.col("psnr_db").fill_nan(None).min().alias("psnr_db_min"))
    extra_names = [e.meta.output_name() for e in extra]
    for name, (start, end) in windows.items():
        part = ts.filter((pl.col("time_s") >= start) & (pl.col("time_s") < end))
        per_flow = part.group_by("flow", maintain_order=True).agg(
            [pl.col(c).mean() for c in numeric]
            + extra
            + [
                pl.col("packets_sent").sum().alias("_sent"),
                pl.col("packets_lost").sum().alias("_lost"),
            ]
        )
        table: dict[str, Any] = {}
        goodputs = []
        sent = lost = 0
        for row in per_flow.iter_rows(named=True):
            values = {c: row[c] for c in [*numeric, *extra_names] if row[c] is not None}
            if row["_sent"]:
                values["loss_rate"] = row["_lost"] / row["_sent"]
                sent += row["_sent"]
                lost += row["_lost"]
            table[str(row["flow"])] = values
            goodputs.append(float(row.get("goodput_kbps") or 0.0))
        total = sum(goodputs)
        squares = sum(g * g for g in goodputs)
        table["jain"] = total * total / (len(goodputs) * squares) if squares > 0 else 1.0
        if sent:
            table["loss_rate"] = lost / sent
        delay = part["queue_delay_ms"].drop_nulls()
        if delay.len():
            table["queue_delay_ms"] = float(delay.mean())  # type: ignore[arg-type]
            table["queue_delay_ms_p95"] = float(delay.quantile(0.95))  # type: ignore[arg-type]
        out[name] = table
    return out


def trace_window_metrics(
    cc_trace: pl.DataFrame,
    windows: Mapping[str, tuple[float, float]],
    flows: Sequence[str],
) -> dict[str, Any]:
    """Metrics of each time window ``[start, end)`` from ``flows``' ``cc_trace.csv``.

    For every traced variable ``v`` of a flow, under ``<window>.<flow>.cc``:
    ``v`` (the mean of its samples in the window), ``v_min`` and ``v_max``;
    and, for a variable whose samples in the window are all whole numbers (a
    mode or a layer count), ``first.v.<value>`` (the first time, in seconds,
    that ``v`` equals ``value`` in the window) and ``share.v.<value>`` (the
    fraction of the window's samples at ``value``) for every value it takes.
    A variable with no sample in the window has no entry. The result merges
    into :func:`window_metrics`'s (``windows.<w>.<flow>.cc.first.mode.1``).
    """
    import polars as pl

    out: dict[str, Any] = {}
    for name, (start, end) in windows.items():
        part = cc_trace.filter(
            (pl.col("time_s") >= start) & (pl.col("time_s") < end) & pl.col("flow").is_in(flows)
        )
        table: dict[str, Any] = {}
        for flow in flows:
            rows = part.filter(pl.col("flow") == flow)
            if not rows.height:
                continue
            cc: dict[str, Any] = {"first": {}, "share": {}}
            for (var,), group in rows.group_by(["variable"], maintain_order=True):
                values = group["value"].cast(pl.Float64)
                key = str(var)
                cc[key] = float(values.mean())  # type: ignore[arg-type]
                cc[f"{key}_min"] = float(values.min())  # type: ignore[arg-type]
                cc[f"{key}_max"] = float(values.max())  # type: ignore[arg-type]
                if not (values == values.round(0)).all():
                    continue  # not a mode or a count
                by_value = group.group_by("value").agg(
                    pl.col("time_s").min().alias("first"), pl.len().alias("n")
                )
                cc["first"][key] = {}
                cc["share"][key] = {}
                for value, first, n in by_value.sort("first").iter_rows():
                    cc["first"][key][str(int(value))] = float(first)
                    cc["share"][key][str(int(value))] = n / group.height
            table[flow] = {"cc": cc}
        out[name] = table
    return out


def _mean_of(summaries: Sequence[Mapping[str, Any]], metric: str) -> float | None:
    vals = [v for s in summaries if (v := metric_value(s, metric)) is not None]
    return sum(vals) / len(vals) if vals else None


class Estimation(NamedTuple):
    """One estimation of a bandwidth estimator.

    Its span of samples in state 0, its estimate and trains, and the true
    available bandwidth over the span (kbps).
    """

    start_s: float
    end_s: float
    estimate_kbps: float
    true_kbps: float
    trains: float | None


def estimations(cc_trace: pl.DataFrame, ts: pl.DataFrame, flow: str) -> list[Estimation]:
    """The completed estimations of ``flow`` (:func:`estimate_metrics` says which).

    Empty without an ``avail_kbps`` column.
    """
    import polars as pl

    if "avail_kbps" not in ts.columns:
        return []
    trace = cc_trace.filter(pl.col("flow") == flow)
    by_time: dict[float, dict[str, float]] = {}
    for t, var, value in trace.select(["time_s", "variable", "value"]).iter_rows():
        by_time.setdefault(float(t), {})[str(var)] = float(value)
    avail = ts.filter(pl.col("flow") == flow).select(["time_s", "avail_kbps"]).drop_nulls()
    out: list[Estimation] = []
    start: float | None = None
    for t in sorted(by_time):
        row = by_time[t]
        state = row.get("state")
        if state is None:
            continue
        if state == 0.0:
            if start is None:
                start = t
            continue
        if start is None:
            continue
        span = avail.filter((pl.col("time_s") >= start) & (pl.col("time_s") <= t))
        estimate = row.get("estimate_kbps")
        if span.height and estimate is not None:
            truth = float(span["avail_kbps"].mean())  # type: ignore[arg-type]
            out.append(Estimation(start, t, estimate, truth, row.get("start_trains")))
        start = None
    return out


def estimate_metrics(cc_trace: pl.DataFrame, ts: pl.DataFrame, flow: str) -> dict[str, Any]:
    """How well a bandwidth estimator's estimates match the true available bandwidth.

    For a controller that traces ``state`` (0 while it estimates, as
    svc-probing's start phase does) and ``estimate_kbps``, with the run's
    ``avail_kbps`` column (the path's capacity less the other flows' traffic).
    An *estimation* is a maximal span of samples in state 0 that ends in
    another state; its estimate is ``estimate_kbps`` at that first sample
    after, its trains ``start_trains`` there, and its true value the mean
    ``avail_kbps`` over the span ("the average real available bandwidth",
    papers/svc-topdown-probing.txt §4.1.1). An estimation cut by the end of
    the run does not count.

    Returns ``count``, ``mad_kbps`` (mean absolute difference), ``bias_kbps``
    (mean estimate - true), ``trains`` (mean trains per estimation),
    ``estimate_kbps`` and ``true_kbps`` (means); empty when there is no
    complete estimation or no ``avail_kbps``.
    """
    done = estimations(cc_trace, ts, flow)
    if not done:
        return {}
    n = len(done)
    out: dict[str, Any] = {
        "count": n,
        "mad_kbps": sum(abs(e.estimate_kbps - e.true_kbps) for e in done) / n,
        "bias_kbps": sum(e.estimate_kbps - e.true_kbps for e in done) / n,
        "estimate_kbps": sum(e.estimate_kbps for e in done) / n,
        "true_kbps": sum(e.true_kbps for e in done) / n,
    }
    trains = [e.trains for e in done if e.trains is not None]
    if trains:
        out["trains"] = sum(trains) / len(trains)
    return out
