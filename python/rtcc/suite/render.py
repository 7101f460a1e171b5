"""A suite's Markdown tables and its self-contained HTML report.

The page reuses ``rtcc report``'s style and its plotly figure cells
(:mod:`rtcc.report`): per case, the choices it makes, a table of RFC 8868's
metrics per controller (mean over the seeds, ± their standard deviation)
and, per controller, the media flows' goodput against their reference
share over time for the first seed.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from rtcc.suite.metrics import METRICS

if TYPE_CHECKING:
    from rtcc.suite import CaseResult, SuiteResult

__all__ = ["case_table_rows", "write_html", "write_markdown"]

_TITLES = {
    "rfc8867": "RFC 8867: test cases for congestion control of interactive real-time media",
    "rfc8869": "RFC 8869: interactive real-time media over wireless networks",
}


def _cell(agg: dict[str, Any], key: str, fmt: str, scale: float) -> str:
    v = agg.get(key)
    if v is None:
        return "-"
    text = fmt.format(v["mean"] * scale)
    if v["sd"] is not None:
        text += " ± " + fmt.format(v["sd"] * scale)
    if key == "convergence_s" and agg["convergence_events"]:
        text += f" ({agg['unconverged']}/{agg['convergence_events']} not)"
    return text


def case_table_rows(cr: CaseResult) -> list[list[str]]:
    """The table of one case: a header row, then one row per controller."""
    rows = [["cc", *[m[1] for m in METRICS]]]
    for cc in cr.runs:
        agg = cr.aggregate(cc)
        cells = [_cell(agg, key, fmt, scale) for key, _, fmt, scale in METRICS]
        if agg.get("convergence_s") is None and agg["convergence_events"]:
            # Never converged: say so rather than leave the cell blank.
            cells[[m[0] for m in METRICS].index("convergence_s")] = (
                f"never ({agg['unconverged']}/{agg['convergence_events']})"
            )
        rows.append([cc, *cells])
    return rows


def _md_table(rows: list[list[str]]) -> str:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def write_markdown(res: SuiteResult) -> None:
    """``results.md``: the command, then per case its choices and table."""
    seeds = len(res.seeds)
    parts = [
        f"# {_TITLES[res.suite]}",
        "",
        f"Command: `{res.command}`",
        "",
        f"Controllers: {', '.join(res.controllers)}; seeds 1-{seeds} (mean"
        + (" ± standard deviation over seeds" if seeds > 1 else "")
        + "). Metrics as in docs/suites.md (RFC 8868 §2): rate = media goodput, "
        "util. = bottleneck utilisation (all flows), OWD = one-way delay of the media "
        "packets, queue = bottleneck queueing delay, conv. = convergence time to ±20 % of "
        "the reference share (in parentheses: events that did not converge / events), "
        "rate CV = coefficient of variation of the 1 s goodput between events.",
        "",
    ]
    for cr in res.cases:
        c = cr.case
        parts += [
            f"## {c.id} {c.title}" + (" (approximation)" if c.approximate else ""),
            "",
            f"Set-up: {c.choices}.",
            "",
            _md_table(case_table_rows(cr)),
            "",
        ]
    if res.skipped:
        parts += ["## Not expressible", ""]
        parts += [f"- {c.id} {c.title}: {c.reason}." for c in res.skipped]
        parts.append("")
    res.markdown.write_text("\n".join(parts))


def _rate_panels(cr: CaseResult, scale: float) -> list[tuple[str, Any]]:
    """Per controller, a panel of its first seed's media goodput over time."""
    import polars as pl

    from rtcc.plot import _CAPACITY_COLOR, _PALETTE, Panel, Trace
    from rtcc.report import load_run

    out: list[tuple[str, Any]] = []
    for cc, dirs in cr.dirs.items():
        if not dirs:
            continue
        result = load_run(dirs[0])
        assert cr.case.build is not None  # ran
        plan = cr.case.build(cc, scale, int(result.seed))
        ts = result.timeseries
        traces = []
        for i, name in enumerate(plan.media):
            rows = ts.filter(pl.col("flow") == name).sort("time_s")
            color = _PALETTE[i % len(_PALETTE)]
            times = [float(t) for t in rows["time_s"]]
            traces.append(
                Trace(f"{name}", times, [float(g or 0.0) for g in rows["goodput_kbps"]], color)
            )
            caps = rows["capacity_kbps"] if "capacity_kbps" in rows.columns else None
            share = plan.shares[name]
            ref = [
                share(t, None if caps is None or caps[k] is None else float(caps[k]))
                for k, t in enumerate(times)
            ]
            xs = [t for t, r in zip(times, ref, strict=True) if r is not None]
            ys = [r for r in ref if r is not None]
            traces.append(Trace(f"{name} share", xs, ys, color, "dash"))
        first = plan.media[0] if plan.media else None
        cap = ts.filter(pl.col("flow") == first).drop_nulls("capacity_kbps") if first else None
        if cap is not None and cap.height:
            traces.append(
                Trace(
                    "capacity",
                    [float(t) for t in cap["time_s"]],
                    [float(c) for c in cap["capacity_kbps"]],
                    _CAPACITY_COLOR,
                    "dot",
                )
            )
        p = Panel(
            kind="rate",
            title="Media goodput and reference share",
            x_label="time (s)",
            y_label="kbps",
            traces=traces,
        )
        out.append((cc, p))
    return out


def write_html(res: SuiteResult) -> None:
    """``report.html``: one self-contained page (plotly.js inline, once)."""
    import plotly.offline  # type: ignore[import-untyped]

    from rtcc import __version__
    from rtcc.report import _CSS, _figure_cell
    from rtcc.suite import QUICK_SCALE

    scale = QUICK_SCALE if res.quick else 1.0
    body: list[str] = []
    toc = "".join(
        f'<li><a href="#case-{cr.case.slug}">{html.escape(cr.case.id)} '
        f"{html.escape(cr.case.title)}</a></li>"
        for cr in res.cases
    )
    body.append(f"<ul>{toc}</ul>")
    for cr in res.cases:
        c = cr.case
        rows = case_table_rows(cr)
        head = "".join(f"<th>{html.escape(h)}</th>" for h in rows[0])
        trs = "".join(
            "<tr>"
            + "".join(
                f'<td class="{"num" if i else ""}">{html.escape(v)}</td>' for i, v in enumerate(r)
            )
            + "</tr>"
            for r in rows[1:]
        )
        figures = "".join(
            f"<div>{_figure_cell(p, cc, f'fig-{c.slug}-{k}', 320)}</div>"
            for k, (cc, p) in enumerate(_rate_panels(cr, scale))
        )
        approx = " <em>(approximation)</em>" if c.approximate else ""
        body.append(
            f'<section id="case-{c.slug}"><h2>{html.escape(c.id)} {html.escape(c.title)}'
            f"{approx}</h2>"
            f'<p class="note">{html.escape(c.choices)}</p>'
            f"<table><tr>{head}</tr>{trs}</table>"
            f'<div class="grid" style="grid-template-columns: repeat(auto-fill, '
            f'minmax(420px, 1fr))">{figures}</div></section>'
        )
    if res.skipped:
        items = "".join(
            f"<li>{html.escape(c.id)} {html.escape(c.title)}: {html.escape(c.reason)}</li>"
            for c in res.skipped
        )
        body.append(f"<section><h2>Not expressible</h2><ul>{items}</ul></section>")
    seeds = len(res.seeds)
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(_TITLES[res.suite])}</title>
<style>{_CSS}</style>
<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script>
</head>
<body>
<h1>{html.escape(_TITLES[res.suite])}</h1>
<p class="meta">Command: <code>{html.escape(res.command)}</code>; controllers
{html.escape(", ".join(res.controllers))}; seeds 1-{seeds}; written by rtcc
{html.escape(__version__)}. Each table cell is the mean over the seeds
(± their standard deviation); the metrics are RFC 8868's, defined in
docs/suites.md. Figures: the first seed of each controller, goodput (solid)
against each flow's reference share (dashed).</p>
{"".join(body)}
</body>
</html>
"""
    res.report.write_text(page)
