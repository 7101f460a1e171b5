"""Plotting helpers: the figures of ``rtcc report``, as data and as matplotlib figures.

Each figure kind (:data:`FIGURE_KINDS`) is first computed as backend-neutral
:class:`Panel` values (traces of plain numbers) from a run's
``timeseries.csv``, ``frames.csv`` and ``summary.json`` (DESIGN.md §4.2, §6,
docs/metrics.md). :mod:`rtcc.report` draws the same panels with plotly for
the HTML page; :func:`figure` and :func:`save_figures` draw them with
matplotlib (Agg backend, no display needed) for papers::

    import rtcc
    from rtcc import plot

    runs = [rtcc.run("scenarios/demo.toml", out="results/demo")]
    plot.save_figures(runs, "figures")  # figures/rate.png, rate.svg, ...

Several runs share one figure per kind: one column per run with the same
axes, so they compare by eye.

Runs with a layered (svc) flow also get its modelled PSNR over time
(``"psnr"``, :func:`figure_kinds`; docs/algorithms/psnr-model.md).

Runs that wrote ``cc_trace.csv`` (``rtcc run --cc-trace``) also get the
controllers' internals: per flow, one panel per state variable over time
(:func:`cc_trace_variables`, :func:`cc_trace_panels`; ``cc_trace-<flow>``
figures in :func:`save_figures`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from rtcc._api import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "FIGURE_KINDS",
    "Panel",
    "Trace",
    "cc_trace_figure",
    "cc_trace_panels",
    "cc_trace_variables",
    "figure",
    "figure_kinds",
    "flow_colors",
    "panel",
    "panels",
    "run_label",
    "save_figures",
]

FigureKind = Literal["rate", "delay", "delay_cdf", "queue", "loss", "frame_loss", "psnr"]

PanelKind = FigureKind | Literal["cc_trace"]
"""A figure kind, or ``"cc_trace"``: one controller state variable of one
flow over time (one panel per flow and variable, not in :data:`FIGURE_KINDS`)."""

FIGURE_KINDS: tuple[FigureKind, ...] = (
    "rate",
    "delay",
    "delay_cdf",
    "queue",
    "loss",
    "frame_loss",
)
"""Figure kinds, in page order: target bitrate vs goodput (vs capacity when
recorded), frame delay over time, frame delay CDF, bottleneck queue, per-flow
packet loss rate, per-second frame loss."""


def figure_kinds(results: Sequence[Result]) -> tuple[FigureKind, ...]:
    """The figure kinds of a set of runs, in page order.

    Args:
        results: The runs.

    Returns:
        :data:`FIGURE_KINDS`, then ``"psnr"`` (modelled PSNR over time) when
        a run has a flow with a PSNR in ``timeseries.csv`` (a layered flow).

    """
    if any(_psnr_flows(r) for r in results):
        return (*FIGURE_KINDS, "psnr")
    return FIGURE_KINDS


# The CDF is drawn through at most this many quantiles: enough for a smooth
# curve at any figure size, and the page stays small for long runs.
_CDF_POINTS = 400

# Above this many frames per flow, the delay-over-time scatter shows the
# maximum delay per time bin instead (spikes are what matter), at most this
# many bins.
_MAX_DELAY_POINTS = 6000

# Interval of the per-interval frame loss (s).
_FRAME_LOSS_BIN_S = 1.0

# Color cycle shared by both backends: matplotlib's "tab10", which is also
# plotly's "D3" qualitative palette, so the page and the paper figures agree.
_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_CAPACITY_COLOR = "#404040"


@dataclass(frozen=True)
class Trace:
    """One curve, bar series or scatter of a panel.

    Attributes:
        name: Legend label.
        x: Abscissae (numbers), or category names for ``style="bar"``.
        y: Ordinates, as many as ``x``. A trace with no points is a legend
            entry only (for example "capacity: not recorded").
        color: CSS/matplotlib color.
        style: ``"line"``, ``"dash"`` (dashed line), ``"dot"`` (dotted line),
            ``"markers"`` (scatter) or ``"bar"``.
        secondary: Drawn against the panel's right-hand y axis.

    """

    name: str
    x: Sequence[float] | Sequence[str]
    y: Sequence[float]
    color: str
    style: Literal["line", "dash", "dot", "markers", "bar"] = "line"
    secondary: bool = False


@dataclass(frozen=True)
class Panel:
    """One figure kind for one run: axes labels, traces and an optional note.

    Attributes:
        kind: One of :data:`FIGURE_KINDS`, or ``"cc_trace"``.
        title: Panel title.
        x_label: Label of the x axis.
        y_label: Label of the left y axis.
        y2_label: Label of the right y axis, when a trace uses it.
        traces: What to draw.
        note: Why something is missing (shown on the panel), or ``None``.
        x_range: ``(low, high)`` of the x axis; :func:`panels` sets the same
            range on a kind's panels of all runs.
        y_range: ``(low, high)`` of the left y axis, shared likewise.
        y2_range: ``(low, high)`` of the right y axis, shared likewise.

    """

    kind: PanelKind
    title: str
    x_label: str
    y_label: str
    y2_label: str | None = None
    traces: list[Trace] = field(default_factory=list)
    note: str | None = None
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None
    y2_range: tuple[float, float] | None = None


def run_label(result: Result) -> str:
    """Name of a run on pages and figures: ``"<dir> · <scenario> · seed <n>"``."""
    scenario = result.summary.get("scenario") or "?"
    seed = result.summary.get("seed")
    seed_text = f"seed {seed}" if seed is not None else "no seed"
    return f"{result.out_dir.name} · {scenario} · {seed_text}"


def flow_colors(results: Sequence[Result]) -> dict[str, str]:
    """One color per flow name, the same in every run (first appearance order)."""
    names: list[str] = []
    for result in results:
        for name in _flow_names(result):
            if name not in names:
                names.append(name)
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(names)}


def panel(kind: FigureKind, result: Result, colors: dict[str, str]) -> Panel:
    """Compute one figure kind of one run, without a shared axis range.

    Args:
        kind: One of :data:`FIGURE_KINDS`, or ``"psnr"``.
        result: The run (a simulated or a real one).
        colors: Flow name to color, from :func:`flow_colors`.

    Returns:
        The panel's traces; ``note`` says what the run did not record.

    """
    builders = {
        "rate": _rate_panel,
        "delay": _delay_panel,
        "delay_cdf": _delay_cdf_panel,
        "queue": _queue_panel,
        "loss": _loss_panel,
        "frame_loss": _frame_loss_panel,
        "psnr": _psnr_panel,
    }
    return builders[kind](result, colors)


def panels(kind: FigureKind, results: Sequence[Result]) -> list[Panel]:
    """One kind's panels for several runs, with the same axis ranges on all.

    Args:
        kind: One of :data:`FIGURE_KINDS`, or ``"psnr"``.
        results: The runs, in display order.

    Returns:
        One panel per run, in the order of ``results``.

    """
    colors = flow_colors(results)
    computed = [panel(kind, r, colors) for r in results]
    x_range = _shared_range([t for p in computed for t in p.traces], axis="x")
    if kind in ("rate", "delay", "queue", "frame_loss", "psnr"):
        # Time axes start at 0 and end at the longest run, data or not.
        end = max([_duration(r) for r in results] + [x_range[1] if x_range else 0.0])
        x_range = (0.0, end if end > 0 else 1.0)
    y_range = _shared_range([t for p in computed for t in p.traces if not t.secondary], axis="y")
    y2_range = _shared_range([t for p in computed for t in p.traces if t.secondary], axis="y")
    if kind == "delay_cdf":
        y_range = (0.0, 1.0)
    if kind == "psnr":
        # PSNR varies over a few dB far from 0: the range of the values.
        y_range = _value_range([t for p in computed for t in p.traces])
    return [
        Panel(
            kind=p.kind,
            title=p.title,
            x_label=p.x_label,
            y_label=p.y_label,
            y2_label=p.y2_label,
            traces=p.traces,
            note=p.note,
            x_range=None if kind == "loss" else x_range,
            y_range=y_range,
            y2_range=y2_range,
        )
        for p in computed
    ]


def figure(kind: FigureKind, results: Sequence[Result]) -> Figure:
    """Draw one figure kind for several runs with matplotlib.

    The figure is made without pyplot, so no GUI backend is touched and the
    caller's pyplot state is left alone; ``savefig`` renders with Agg (PNG)
    or the SVG backend.

    Args:
        kind: One of :data:`FIGURE_KINDS`, or ``"psnr"``.
        results: The runs: one column each, same axes.

    Returns:
        A matplotlib figure; save it with ``savefig``.

    """
    # Imported here: matplotlib takes a noticeable time to import, and
    # `import rtcc` (and every CLI command) should not pay for it.
    from matplotlib.figure import Figure

    run_panels = panels(kind, results)
    n = len(run_panels)
    fig = Figure(figsize=(5.0 * n, 3.4), layout="constrained")
    axes = fig.subplots(1, n, squeeze=False, sharey=True)
    for i, (p, result) in enumerate(zip(run_panels, results, strict=True)):
        ax = axes[0][i]
        _draw_matplotlib(ax, p, first_column=i == 0, last_column=i == n - 1)
        title = f"{p.title}\n{run_label(result)}"
        if p.note and _has_points(p):
            title += f"\n({p.note})"
        ax.set_title(title, fontsize=9)
    return fig


def save_figures(results: Sequence[Result], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write every figure kind as PNG (200 dpi) and SVG for a set of runs.

    Args:
        results: The runs, side by side in each figure.
        out_dir: Directory for ``<kind>.png`` and ``<kind>.svg``; created if missing.

    Returns:
        The files written, in :func:`figure_kinds` order, PNG before SVG.

    """
    import matplotlib as mpl

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    # Identical runs give identical SVG files: no date, and element ids from a
    # fixed salt instead of a random one.
    with mpl.rc_context({"svg.hashsalt": "rtcc"}):
        figures: list[tuple[str, Figure]] = [
            (kind, figure(kind, results)) for kind in figure_kinds(results)
        ]
        for flow, variables in cc_trace_variables(results):
            name = f"cc_trace-{_file_safe(flow)}"
            figures.append((name, cc_trace_figure(flow, variables, results)))
        for name, fig in figures:
            for suffix in ("png", "svg"):
                path = out / f"{name}.{suffix}"
                metadata: dict[str, Any] = {"Date": None} if suffix == "svg" else {}
                fig.savefig(path, dpi=200, metadata=metadata)
                written.append(path)
    return written


# --- controller internals (cc_trace.csv) -------------------------------------


def cc_trace_variables(results: Sequence[Result]) -> list[tuple[str, list[str]]]:
    """The traced flows and their variables over the runs' ``cc_trace.csv``.

    Args:
        results: The runs; those without ``cc_trace.csv`` contribute nothing.

    Returns:
        ``(flow, variables)``: flows in order of first appearance; each
        flow's variables in the order its controller reports them (that of
        its fullest sample: a variable absent at first, an estimate before
        its first measurement, does not fall to the end), then any others
        in order of first appearance. Empty when no run was traced.

    """
    order: dict[str, list[str]] = {}
    for result in results:
        trace = result.cc_trace
        if trace is None:
            continue
        for (flow,), rows in trace.group_by("flow", maintain_order=True):
            variables = order.setdefault(str(flow), [])
            sizes = rows.group_by("time_s", maintain_order=True).len()
            fullest = sizes.row(sizes["len"].arg_max() or 0, named=True)["time_s"]
            sample = rows.filter(pl.col("time_s") == fullest)["variable"].to_list()
            everything = rows["variable"].unique(maintain_order=True).to_list()
            for variable in [*sample, *everything]:
                if variable not in variables:
                    variables.append(str(variable))
    return list(order.items())


def cc_trace_panels(flow: str, variable: str, results: Sequence[Result]) -> list[Panel]:
    """One state variable of one flow over time, one panel per run, shared axes.

    Args:
        flow: The flow (``flow/path`` for one path of a multipath flow).
        variable: The variable's name in ``cc_trace.csv``.
        results: The runs, in display order.

    Returns:
        One panel per run; ``note`` says when a run did not trace it.

    """
    colors = flow_colors(results)
    color = colors.get(flow) or colors.get(flow.split("/", 1)[0]) or _PALETTE[0]
    computed: list[Panel] = []
    for result in results:
        trace = result.cc_trace
        note: str | None = None
        traces: list[Trace] = []
        if trace is None:
            note = "no cc_trace.csv (run with --cc-trace)"
        else:
            rows = trace.filter((pl.col("flow") == flow) & (pl.col("variable") == variable))
            if rows.height == 0:
                note = f"{variable} not traced for {flow}"
            else:
                traces.append(_trace(f"{flow} {variable}", rows, "time_s", "value", color))
        computed.append(
            Panel(
                kind="cc_trace",
                title=f"{flow}: {variable}",
                x_label="time (s)",
                y_label=variable,
                traces=traces,
                note=note,
            )
        )
    end = max([_duration(r) for r in results] + [0.0])
    x_range = (0.0, end if end > 0 else 1.0)
    y_range = _value_range([t for p in computed for t in p.traces])
    return [replace(p, x_range=x_range, y_range=y_range) for p in computed]


def cc_trace_figure(flow: str, variables: Sequence[str], results: Sequence[Result]) -> Figure:
    """Draw one flow's traced variables with matplotlib: a row per variable, a column per run.

    Args:
        flow: The flow, as in ``cc_trace.csv``.
        variables: Its variables, from :func:`cc_trace_variables`.
        results: The runs, side by side.

    Returns:
        A matplotlib figure; save it with ``savefig``.

    """
    from matplotlib.figure import Figure

    n, rows = len(results), max(len(variables), 1)
    fig = Figure(figsize=(5.0 * n, 1.7 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, n, squeeze=False, sharex=True)
    for r, variable in enumerate(variables):
        for c, p in enumerate(cc_trace_panels(flow, variable, results)):
            ax = axes[r][c]
            _draw_matplotlib(ax, p, first_column=True, last_column=c == n - 1)
            legend = ax.get_legend()
            if legend is not None:
                legend.remove()
            if r != len(variables) - 1:
                ax.set_xlabel("")
            if r == 0:
                ax.set_title(f"{flow}\n{run_label(results[c])}", fontsize=9)
    return fig


def _value_range(traces: list[Trace]) -> tuple[float, float] | None:
    """A y range over the traces' values, which may be negative (codes, slopes)."""
    values = [float(v) for t in traces for v in t.y if math.isfinite(v)]
    if not values:
        return None
    low, high = min(values), max(values)
    if high <= low:
        low, high = low - 0.5, high + 0.5
    pad = 0.05 * (high - low)
    return (low - pad, high + pad)


def _file_safe(name: str) -> str:
    """A flow name as part of a file name: path separators and oddities become ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


# --- panels -----------------------------------------------------------------


def _rate_panel(result: Result, colors: dict[str, str]) -> Panel:
    ts = result.timeseries
    traces: list[Trace] = []
    for flow in _flow_names(result):
        rows = ts.filter(pl.col("flow") == flow)
        # Goodput first: the noisier curve goes under its flow's target.
        goodput = rows.drop_nulls("goodput_kbps")
        if goodput.height:
            traces.append(
                _trace(f"{flow} goodput", goodput, "time_s", "goodput_kbps", colors[flow])
            )
        target = rows.drop_nulls("target_kbps")
        if target.height:
            traces.append(
                _trace(f"{flow} target", target, "time_s", "target_kbps", colors[flow], "dash")
            )
    recorded = "capacity_kbps" in ts.columns and ts["capacity_kbps"].drop_nulls().len() > 0
    if recorded:
        for names, series in _per_link(ts.drop_nulls("capacity_kbps"), ["capacity_kbps"]):
            traces.append(
                _trace(
                    f"capacity ({names})", series, "time_s", "capacity_kbps", _CAPACITY_COLOR, "dot"
                )
            )
    else:
        # Real runs and unlimited links have none. The legend says so (a trace
        # without points), so a reader of a screenshot knows the curve is
        # missing, not zero.
        traces.append(Trace("capacity: not recorded", [], [], _CAPACITY_COLOR, "dot"))
    return Panel(
        kind="rate",
        title="Target bitrate and goodput",
        x_label="time (s)",
        y_label="kbps",
        traces=traces,
    )


def _delay_panel(result: Result, colors: dict[str, str]) -> Panel:
    frames = result.frames.drop_nulls(["delay_ms", "capture_ms"])
    traces: list[Trace] = []
    binned = False
    for flow in _flow_names(result):
        rows = frames.filter(pl.col("flow") == flow).sort("capture_ms")
        if rows.height == 0:
            continue
        rows = rows.with_columns((pl.col("capture_ms") / 1000.0).alias("t"))
        if rows.height > _MAX_DELAY_POINTS:
            binned = True
            width = (rows["t"].max() or 0.0) / _MAX_DELAY_POINTS  # type: ignore[operator]
            rows = (
                rows.with_columns(((pl.col("t") / width).floor() * width).alias("t"))
                .group_by("t")
                .agg(pl.col("delay_ms").max())
                .sort("t")
            )
        traces.append(_trace(flow, rows, "t", "delay_ms", colors[flow], "markers"))
    note = None if traces else "no frames in frames.csv"
    if binned:
        note = f"maximum per time bin (over {_MAX_DELAY_POINTS} frames per flow)"
    return Panel(
        kind="delay",
        title="Frame delay (complete - capture)",
        x_label="capture time (s)",
        y_label="frame delay (ms)",
        traces=traces,
        note=note,
    )


def _delay_cdf_panel(result: Result, colors: dict[str, str]) -> Panel:
    frames = result.frames.drop_nulls("delay_ms")
    traces: list[Trace] = []
    for flow in _flow_names(result):
        delays = frames.filter(pl.col("flow") == flow)["delay_ms"].sort().to_list()
        if not delays:
            continue
        x, y = _cdf(delays)
        traces.append(Trace(flow, x, y, colors[flow]))
    return Panel(
        kind="delay_cdf",
        title="Frame delay CDF",
        x_label="frame delay (ms)",
        y_label="fraction of frames",
        traces=traces,
        note=None if traces else "no frames in frames.csv",
    )


def _queue_panel(result: Result, colors: dict[str, str]) -> Panel:
    traces: list[Trace] = []
    for names, series in _per_link(result.timeseries, ["queue_delay_ms", "queue_bytes"]):
        color = colors[names.split(", ")[0]]
        traces.append(_trace(f"queue delay ({names})", series, "time_s", "queue_delay_ms", color))
        kb = series.with_columns((pl.col("queue_bytes") / 1000.0).alias("queue_kb"))
        traces.append(
            Trace(
                f"queue KB ({names})",
                _floats(kb["time_s"]),
                _floats(kb["queue_kb"]),
                color,
                "dot",
                secondary=True,
            )
        )
    return Panel(
        kind="queue",
        title="Bottleneck queue (per flow's bottleneck)",
        x_label="time (s)",
        y_label="queue delay (ms)",
        y2_label="queue (KB)",
        traces=traces,
        note=None if traces else "no queue samples (a real run records none)",
    )


def _loss_panel(result: Result, colors: dict[str, str]) -> Panel:
    traces: list[Trace] = []
    for flow in result.summary.get("flows", []):
        rate = flow.get("loss_rate")
        name = str(flow.get("name", ""))
        if isinstance(rate, int | float) and name in colors:
            traces.append(Trace(name, [name], [float(rate) * 100.0], colors[name], "bar"))
    return Panel(
        kind="loss",
        title="Packet loss rate (summary.json)",
        x_label="flow",
        y_label="loss (%)",
        traces=traces,
        note=None if traces else "no loss_rate in summary.json",
    )


def _frame_loss_panel(result: Result, colors: dict[str, str]) -> Panel:
    """Per-interval frame loss from frames.csv.

    Packet loss per interval cannot be derived from the outputs (timeseries.csv
    has rates, not packet counts), but frame loss can: frames.csv holds every
    frame that reached the receiver, so a gap in ``frame_id`` is a frame that
    never arrived, and ``dropped`` marks one the player gave up. A gap is
    counted in the interval of the next frame that did arrive.
    """
    frames = result.frames
    traces: list[Trace] = []
    for flow in _flow_names(result):
        rows = frames.filter(pl.col("flow") == flow).drop_nulls("capture_ms").sort("frame_id")
        if rows.height == 0:
            continue
        per_bin = (
            rows.with_columns(
                (pl.col("frame_id").diff().fill_null(1) - 1).clip(lower_bound=0).alias("missing"),
                (pl.col("capture_ms") / 1000.0 / _FRAME_LOSS_BIN_S).floor().alias("bin"),
            )
            .group_by("bin")
            .agg(
                pl.len().alias("received"),
                pl.col("missing").sum(),
                pl.col("dropped").fill_null(0).sum(),
            )
            .sort("bin")
            .with_columns(
                (
                    100.0
                    * (pl.col("missing") + pl.col("dropped"))
                    / (pl.col("received") + pl.col("missing"))
                ).alias("lost_pct"),
                ((pl.col("bin") + 0.5) * _FRAME_LOSS_BIN_S).alias("t"),
            )
        )
        traces.append(_trace(flow, per_bin, "t", "lost_pct", colors[flow]))
    return Panel(
        kind="frame_loss",
        title=f"Frames lost or dropped per {_FRAME_LOSS_BIN_S:g} s",
        x_label="capture time (s)",
        y_label="frames lost or dropped (%)",
        traces=traces,
        note=None if traces else "no frames in frames.csv",
    )


def _psnr_panel(result: Result, colors: dict[str, str]) -> Panel:
    """A layered flow's modelled PSNR per sample interval, its run mean and p5 in the legend."""
    ts = result.timeseries
    run_psnr = {
        str(f.get("name", "")): f["psnr_db"]
        for f in result.summary.get("flows", [])
        if "psnr_db" in f
    }
    traces: list[Trace] = []
    for flow in _psnr_flows(result):
        rows = ts.filter(pl.col("flow") == flow).drop_nulls("psnr_db")
        label = flow
        if flow in run_psnr:
            psnr = run_psnr[flow]
            label = f"{flow} (mean {psnr['mean']:.1f} dB, p5 {psnr['p5']:.1f} dB)"
        traces.append(_trace(label, rows, "time_s", "psnr_db", colors[flow]))
    return Panel(
        kind="psnr",
        title="Modelled PSNR of layered video (per sample interval)",
        x_label="time (s)",
        y_label="PSNR (dB)",
        traces=traces,
        note=None if traces else "no layered (svc) flow: PSNR is modelled for those only",
    )


# --- helpers ----------------------------------------------------------------


def _flow_names(result: Result) -> list[str]:
    """Flow names in summary order, then any only the CSV files name."""
    names = [str(f.get("name", "")) for f in result.summary.get("flows", [])]
    for df in (result.timeseries, result.frames):
        for name in df["flow"].unique(maintain_order=True).to_list():
            if name is not None and name not in names:
                names.append(name)
    return names


def _psnr_flows(result: Result) -> list[str]:
    """Flows with a PSNR in timeseries.csv (layered flows), in flow order."""
    ts = result.timeseries
    if "psnr_db" not in ts.columns:
        return []
    have = set(ts.drop_nulls("psnr_db")["flow"].unique().to_list())
    return [name for name in _flow_names(result) if name in have]


def _duration(result: Result) -> float:
    value = result.summary.get("duration_s")
    return float(value) if isinstance(value, int | float) else 0.0


def _per_link(ts: pl.DataFrame, columns: list[str]) -> list[tuple[str, pl.DataFrame]]:
    """Samples of the flows' bottleneck links, one series per link.

    timeseries.csv repeats a link's samples for every flow through it and
    does not name the link. Flows whose samples agree at every common instant
    are taken to share a link; the series is labelled with their names.
    """
    groups: list[tuple[list[str], pl.DataFrame]] = []
    for flow in ts["flow"].unique(maintain_order=True).to_list():
        series = ts.filter(pl.col("flow") == flow).select(["time_s", *columns]).drop_nulls(columns)
        if series.height == 0:
            continue
        for names, existing in groups:
            common = existing.join(series, on="time_s", how="inner", suffix="_other")
            if all((common[c] == common[f"{c}_other"]).all() for c in columns):
                names.append(flow)
                # Union of instants: a later flow may outlive the first one.
                merged = pl.concat([existing, series]).unique("time_s", keep="first")
                groups[groups.index((names, existing))] = (names, merged.sort("time_s"))
                break
        else:
            groups.append(([flow], series))
    return [(", ".join(names), series) for names, series in groups]


def _cdf(sorted_values: list[float]) -> tuple[list[float], list[float]]:
    """Empirical CDF through at most ``_CDF_POINTS`` points (always the extremes)."""
    n = len(sorted_values)
    if n <= _CDF_POINTS:
        indices = list(range(n))
    else:
        step = (n - 1) / (_CDF_POINTS - 1)
        indices = sorted({round(i * step) for i in range(_CDF_POINTS)})
    return [sorted_values[i] for i in indices], [(i + 1) / n for i in indices]


def _trace(
    name: str,
    df: pl.DataFrame,
    x: str,
    y: str,
    color: str,
    style: Literal["line", "dash", "dot", "markers", "bar"] = "line",
) -> Trace:
    return Trace(name, _floats(df[x]), _floats(df[y]), color, style)


def _floats(series: pl.Series) -> list[float]:
    # Rounded: the page embeds these as JSON text, and 0.001 is finer than any
    # unit plotted here resolves.
    return [round(float(v), 3) for v in series.cast(pl.Float64).to_list()]


def _shared_range(traces: list[Trace], *, axis: Literal["x", "y"]) -> tuple[float, float] | None:
    values: list[float] = []
    for t in traces:
        data = t.x if axis == "x" else t.y
        values.extend(float(v) for v in data if isinstance(v, int | float) and math.isfinite(v))
    if not values:
        return None
    low = min(0.0, min(values))
    high = max(values)
    if high <= low:
        high = low + 1.0
    # 5 % headroom so the highest point is not on the frame.
    return (low, high + 0.05 * (high - low) if axis == "y" else high)


def _has_points(p: Panel) -> bool:
    return any(len(t.x) > 0 for t in p.traces)


def _draw_matplotlib(ax: Axes, p: Panel, *, first_column: bool, last_column: bool) -> None:
    ax2 = ax.twinx() if any(t.secondary for t in p.traces) else None
    bar_names: list[str] = []
    for t in p.traces:
        target = ax2 if (t.secondary and ax2 is not None) else ax
        if t.style == "bar":
            bar_names.append(str(t.x[0]) if t.x else t.name)
            target.bar(list(map(str, t.x)), list(t.y), color=t.color, label=t.name)
        elif t.style == "markers":
            target.scatter(t.x, t.y, s=2, color=t.color, label=t.name, linewidths=0)
        else:
            linestyle = {"line": "-", "dash": "--", "dot": ":"}[t.style]
            # Reference curves (dashed target, dotted capacity) wider, to show on top.
            width = 0.8 if t.style == "line" else 1.4
            target.plot(t.x, t.y, linestyle=linestyle, linewidth=width, color=t.color, label=t.name)
    ax.set_xlabel(p.x_label)
    if first_column:
        ax.set_ylabel(p.y_label)
    if p.x_range is not None:
        ax.set_xlim(*p.x_range)
    if p.y_range is not None:
        ax.set_ylim(*p.y_range)
    if ax2 is not None:
        if p.y2_range is not None:
            ax2.set_ylim(*p.y2_range)
        if last_column and p.y2_label:
            ax2.set_ylabel(p.y2_label)
    ax.grid(True, linewidth=0.3, alpha=0.5)
    handles, labels = ax.get_legend_handles_labels()
    if ax2 is not None:
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    if handles and not bar_names:
        ax.legend(handles, labels, fontsize=6, loc="best")
    if p.note and not _has_points(p):
        ax.text(
            0.5,
            0.5,
            p.note,
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=7,
            color="#808080",
        )
