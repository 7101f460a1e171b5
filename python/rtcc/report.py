"""``rtcc report``: one self-contained HTML page of plots and tables for runs.

The page (DESIGN.md §7) shows, for each run directory written by ``rtcc run``
or ``rtcc recv --out`` (``summary.json``, ``timeseries.csv``, ``frames.csv``;
DESIGN.md §4.2, docs/metrics.md): a per-flow summary table, target bitrate vs
goodput over time, frame delay over time and its CDF, the bottleneck queue,
per-flow packet loss and per-second frame loss (:data:`rtcc.plot.FIGURE_KINDS`);
for runs with a layered (svc) flow, its modelled PSNR over time
(docs/algorithms/psnr-model.md); and, for runs that wrote ``cc_trace.csv``
(``rtcc run --cc-trace``), the controllers' internals: per flow, one figure
per state variable over time.

It works offline: plotly.js is embedded once, inline, and every figure is a
``<div>`` drawn by it, so the page needs no network and no server.

Several runs are shown side by side, one column per run, each figure kind on
one row with the same axis ranges in every column. Overlaying the runs in one
plot was the alternative; with two or more flows per run the traces of three
runs already make a dozen curves in one plot, while aligned columns keep each
run readable and still compare by eye.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import polars as pl

from rtcc._api import Result
from rtcc.plot import (
    Panel,
    Trace,
    cc_trace_panels,
    cc_trace_variables,
    figure_kinds,
    panels,
    run_label,
    save_figures,
)
from rtcc.summary import RunSummary

__all__ = ["ReportError", "load_run", "report"]

# Height of one figure on the page (CSS pixels).
_FIGURE_HEIGHT_PX = 380
# Height of one controller-variable figure (cc_trace.csv): there are many.
_TRACE_FIGURE_HEIGHT_PX = 260


class ReportError(ValueError):
    """A run directory or an output path of ``rtcc report`` is unusable.

    The message is one line naming the directory or file.
    """


#: The columns a report reads from each file; a file without them is not one
#: rtcc wrote.
_REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "timeseries.csv": ("time_s", "flow", "goodput_kbps"),
    "frames.csv": ("flow", "frame_id", "delay_ms"),
}


def load_run(directory: str | os.PathLike[str]) -> Result:
    """Open a run directory written by ``rtcc run`` or ``rtcc recv --out``.

    The CSV files are read now, so a broken file is reported here.

    Args:
        directory: Holds ``summary.json``, ``timeseries.csv`` and ``frames.csv``
            (and ``cc_trace.csv`` if the run traced its controllers).

    Returns:
        The run as a :class:`rtcc.Result`.

    Raises:
        ReportError: The directory or one of its files is missing or unreadable.

    """
    d = Path(directory)
    if not d.exists():
        raise ReportError(f"{d}: no such directory")
    if not d.is_dir():
        raise ReportError(f"{d}: not a directory")
    summary_path = d / "summary.json"
    if not summary_path.is_file():
        raise ReportError(
            f"{d}: no summary.json (not an output directory of `rtcc run` or `rtcc recv --out`)"
        )
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReportError(f"{summary_path}: cannot be read: {e}") from e
    if not isinstance(summary, dict) or not isinstance(summary.get("flows"), list):
        raise ReportError(f"{summary_path}: not an rtcc summary (no `flows` list)")
    # Only `flows` is checked: the file is taken for a RunSummary (one of an
    # older rtcc may lack keys).
    result = Result(cast(RunSummary, summary), d)
    for name in ("timeseries.csv", "frames.csv"):
        path = d / name
        if not path.is_file():
            raise ReportError(f"{path}: missing")
        try:
            table = result.timeseries if name == "timeseries.csv" else result.frames
        except (OSError, pl.exceptions.PolarsError) as e:
            raise ReportError(f"{path}: cannot be read: {type(e).__name__}: {e}") from e
        missing = [c for c in _REQUIRED_COLUMNS[name] if c not in table.columns]
        if missing:
            raise ReportError(
                f"{path}: not an rtcc {name} (no column {', '.join(map(repr, missing))})"
            )
    # Optional: written by `rtcc run --cc-trace`.
    trace_path = d / "cc_trace.csv"
    if trace_path.exists():
        try:
            _ = result.cc_trace
        except (OSError, pl.exceptions.PolarsError) as e:
            raise ReportError(f"{trace_path}: cannot be read: {type(e).__name__}: {e}") from e
    return result


def report(
    dirs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    png_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Write one HTML page with plots and tables for one or more runs.

    Args:
        dirs: Run directories (``rtcc run --out`` or ``rtcc recv --out``), in
            display order; a single path is one run.
        out: The HTML file to write; its directory is created if missing.
        png_dir: Also write each figure kind as PNG and SVG (matplotlib) here,
            all runs side by side in one file per kind
            (:func:`rtcc.plot.save_figures`).

    Returns:
        The path of the HTML page.

    Raises:
        ReportError: A directory is missing, is not a run directory, or a
            file cannot be read or written. The message names it.

    """
    paths = [dirs] if isinstance(dirs, str | os.PathLike) else list(dirs)
    if not paths:
        raise ReportError("no run directory given")
    results = [load_run(p) for p in paths]

    try:
        page = render_html(results)
    except (KeyError, TypeError, ValueError, AttributeError, pl.exceptions.PolarsError) as e:
        # The files parsed but do not have the shape rtcc writes (a hand-edited
        # summary.json, a CSV with the right headers and wrong cells).
        where = ", ".join(str(r.out_dir) for r in results)
        raise ReportError(f"{where}: not the shape of an rtcc run ({type(e).__name__}: {e})") from e
    out_path = Path(out)
    # Checked before anything is written: a bad --png must not leave a page.
    if png_dir is not None:
        png_path = Path(png_dir)
        if png_path.exists() and not png_path.is_dir():
            raise ReportError(f"{png_path}: cannot write figures: not a directory")
        try:
            png_path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ReportError(f"{png_path}: cannot write figures: {e.strerror or e}") from e
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside and renamed: a failure never leaves half a page.
        partial = out_path.with_name(f".{out_path.name}.partial-{os.getpid()}")
        try:
            partial.write_text(page, encoding="utf-8")
            os.replace(partial, out_path)
        finally:
            partial.unlink(missing_ok=True)
    except OSError as e:
        raise ReportError(f"{out_path}: cannot be written: {e.strerror or e}") from e

    if png_dir is not None:
        try:
            save_figures(results, png_dir)
        except OSError as e:
            raise ReportError(f"{png_dir}: cannot write figures: {e.strerror or e}") from e
    return out_path


def render_html(results: Sequence[Result]) -> str:
    """The report page for loaded runs, as one HTML document.

    Args:
        results: The runs, one column each.

    Returns:
        A complete, self-contained HTML document (plotly.js inline, once).

    """
    # Imported here: plotly is only needed for a report, and `import rtcc`
    # (every CLI command) should not pay for it.
    import plotly.io  # type: ignore[import-untyped]
    import plotly.offline  # type: ignore[import-untyped]

    from rtcc import __version__

    labels = [run_label(r) for r in results]
    n = len(results)
    columns = f"repeat({n}, minmax(480px, 1fr))"
    title = "rtcc report: " + ", ".join(labels)

    rows: list[str] = []
    rows.append(
        _row(
            "runs",
            None,
            columns,
            [
                f'<h2 class="run-title" id="run-{i}">{html.escape(label)}</h2>'
                f'<p class="dir">{html.escape(str(r.out_dir))}</p>'
                for i, (label, r) in enumerate(zip(labels, results, strict=True))
            ],
        )
    )
    rows.append(_row("summary", "Per-flow summary", columns, [_tables(r.summary) for r in results]))
    for kind in figure_kinds(results):
        kind_panels = panels(kind, results)
        cells = []
        for i, p in enumerate(kind_panels):
            cells.append(_figure_cell(p, labels[i], f"fig-{kind}-{i}", _FIGURE_HEIGHT_PX))
        rows.append(_row(kind, kind_panels[0].title, columns, cells))
    traced = [(flow, v) for flow, variables in cc_trace_variables(results) for v in variables]
    for k, (flow, variable) in enumerate(traced):
        cells = []
        trace_panels = cc_trace_panels(flow, variable, results)
        for i, p in enumerate(trace_panels):
            cells.append(
                _figure_cell(p, labels[i], f"fig-cc_trace-{k}-{i}", _TRACE_FIGURE_HEIGHT_PX)
            )
        heading = f"Controller internals: {flow}: {variable}"
        rows.append(_row(f"cc_trace-{k}", heading, columns, cells))

    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{_CSS}</style>
<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script>
</head>
<body>
<h1>rtcc report</h1>
<p class="meta">{n} run{"s" if n != 1 else ""}, written by rtcc {html.escape(__version__)}.
Runs are side by side; each row of figures shares its axis ranges.</p>
{"".join(rows)}
</body>
</html>
"""


# --- HTML pieces -------------------------------------------------------------

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1em 2em; color: #222; }
h1 { margin-bottom: 0.2em; }
h2.run-title { font-size: 1.1em; margin: 0.2em 0; }
h3 { margin: 1.2em 0 0.3em; }
.grid { display: grid; gap: 1em; overflow-x: auto; }
.grid > div { min-width: 0; }
p.dir, p.meta, p.note { color: #666; font-size: 0.85em; margin: 0.2em 0; }
table { border-collapse: collapse; font-size: 0.85em; margin-bottom: 0.6em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.2em 0.5em; }
th { text-align: left; background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""


def _row(kind: str, heading: str | None, columns: str, cells: list[str]) -> str:
    head = f"<h3>{html.escape(heading)}</h3>\n" if heading else ""
    body = "\n".join(f'<div class="cell" data-run="{i}">{c}</div>' for i, c in enumerate(cells))
    return (
        f'<section class="row" id="row-{kind}">\n{head}'
        f'<div class="grid" style="grid-template-columns: {columns}">\n{body}\n</div>\n</section>\n'
    )


# (header, key path into a flow, format, scale); absent metrics stay blank.
_FLOW_COLUMNS: list[tuple[str, tuple[str, ...], str, float]] = [
    ("media kbps", ("media_bitrate_kbps",), "{:.1f}", 1.0),
    ("goodput kbps", ("goodput_kbps",), "{:.1f}", 1.0),
    ("delay mean ms", ("frame_delay_ms", "mean"), "{:.1f}", 1.0),
    ("delay p95 ms", ("frame_delay_ms", "p95"), "{:.1f}", 1.0),
    ("stall %", ("stall_ratio",), "{:.2f}", 100.0),
    ("loss %", ("loss_rate",), "{:.2f}", 100.0),
    ("owd mean ms", ("owd_ms", "mean"), "{:.1f}", 1.0),
    ("owd p95 ms", ("owd_ms", "p95"), "{:.1f}", 1.0),
    ("bw est. accuracy", ("bw_estimate_accuracy",), "{:.3f}", 1.0),
    ("PSNR mean dB", ("psnr_db", "mean"), "{:.1f}", 1.0),
    ("PSNR p5 dB", ("psnr_db", "p5"), "{:.1f}", 1.0),
]


def _tables(summary: Mapping[str, Any]) -> str:
    head = "".join(
        f"<th>{html.escape(h)}</th>" for h in ["flow", "kind", "cc"] + [c[0] for c in _FLOW_COLUMNS]
    )
    body = []
    for flow in summary.get("flows", []):
        cells = [f"<td>{html.escape(str(flow.get(k, '')))}</td>" for k in ("name", "kind", "cc")]
        for _, keys, spec, scale in _FLOW_COLUMNS:
            cells.append(f'<td class="num">{_metric(flow, keys, spec, scale)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    parts = [
        f'<table class="flows"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    ]

    links = summary.get("links") or []
    if links:
        link_rows = []
        for link in links:
            link_rows.append(
                "<tr>"
                f"<td>{html.escape(str(link.get('name', '')))}</td>"
                f'<td class="num">{_metric(link, ("queue_delay_ms", "mean"), "{:.1f}", 1.0)}</td>'
                f'<td class="num">{_metric(link, ("queue_delay_ms", "p95"), "{:.1f}", 1.0)}</td>'
                f'<td class="num">{_metric(link, ("drops",), "{:.0f}", 1.0)}</td>'
                f'<td class="num">{_metric(link, ("utilization",), "{:.2f}", 100.0)}</td>'
                "</tr>"
            )
        parts.append(
            '<table class="links"><thead><tr><th>link</th><th>queue delay mean ms</th>'
            "<th>queue delay p95 ms</th><th>drops</th><th>utilization %</th></tr></thead>"
            f"<tbody>{''.join(link_rows)}</tbody></table>"
        )
    else:
        parts.append('<p class="note">no simulated links (a real run)</p>')

    jain = (summary.get("fairness") or {}).get("jain")
    extra = []
    if isinstance(jain, int | float):
        extra.append(f"Jain fairness index {jain:.3f}")
    duration = summary.get("duration_s")
    if isinstance(duration, int | float):
        extra.append(f"duration {duration:g} s")
    if extra:
        parts.append(f'<p class="meta">{html.escape("; ".join(extra))}</p>')
    return "\n".join(parts)


def _metric(record: Mapping[str, Any], keys: tuple[str, ...], spec: str, scale: float) -> str:
    value: Any = record
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return html.escape(spec.format(float(value) * scale))


# --- plotly -------------------------------------------------------------------


def _figure_cell(p: Panel, label: str, div_id: str, height_px: int) -> str:
    """One table cell: a panel as an interactive plotly figure, and its note."""
    import plotly.io

    fig_html = plotly.io.to_html(
        _plotly_figure(p, title=label),
        include_plotlyjs=False,
        full_html=False,
        div_id=div_id,
        default_height=f"{height_px}px",
        default_width="100%",
        config={"responsive": True, "displaylogo": False},
        validate=False,
    )
    note = f'<p class="note">{html.escape(p.note)}</p>' if p.note else ""
    return str(fig_html) + note


def _plotly_figure(p: Panel, *, title: str) -> dict[str, Any]:
    """A plotly figure as a plain dict (no validation pass: the traces are ours).

    The row heading names the figure kind; the figure's own title names the run.
    """
    data = [_plotly_trace(t) for t in p.traces]
    layout: dict[str, Any] = {
        "title": {"text": title, "font": {"size": 13}},
        "margin": {"l": 60, "r": 60 if p.y2_label else 20, "t": 40, "b": 40},
        "xaxis": {"title": {"text": p.x_label}, "zeroline": False},
        "yaxis": {"title": {"text": p.y_label}, "zeroline": False},
        "legend": {"orientation": "h", "y": -0.2},
        "showlegend": True,
        "hovermode": "closest",
    }
    if p.x_range is not None:
        layout["xaxis"]["range"] = list(p.x_range)
    if p.y_range is not None:
        layout["yaxis"]["range"] = list(p.y_range)
    if p.y2_label:
        layout["yaxis2"] = {
            "title": {"text": p.y2_label},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
        }
        if p.y2_range is not None:
            layout["yaxis2"]["range"] = list(p.y2_range)
    if p.note and not any(len(t.x) for t in p.traces):
        layout["annotations"] = [
            {
                "text": p.note,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"color": "#808080"},
            }
        ]
    return {"data": data, "layout": layout}


def _plotly_trace(t: Trace) -> dict[str, Any]:
    # An empty trace is a legend entry only; plotly needs one (null) point to list it.
    x: list[Any] = list(t.x) if len(t.x) else [None]
    y: list[Any] = list(t.y) if len(t.y) else [None]
    trace: dict[str, Any] = {"name": t.name, "x": x, "y": y}
    if t.style == "bar":
        trace.update(type="bar", marker={"color": t.color})
    elif t.style == "markers":
        trace.update(type="scatter", mode="markers", marker={"color": t.color, "size": 3})
    else:
        dash = {"line": "solid", "dash": "dash", "dot": "dot"}[t.style]
        # Dashed and dotted reference curves (target, capacity) are drawn
        # wider than the measured ones so they stay visible on top of them.
        width = 1.2 if t.style == "line" else 2.0
        trace.update(
            type="scatter", mode="lines", line={"color": t.color, "dash": dash, "width": width}
        )
    if t.secondary:
        trace["yaxis"] = "y2"
    return trace
