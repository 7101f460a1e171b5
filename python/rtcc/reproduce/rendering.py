"""The results page: tables, headline counts, notes and figures."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtcc.reproduce.judging import HOLDS, MIXED, NA, VERDICTS, ClaimResult, _seed_values
from rtcc.reproduce.metrics import _mean_of, metric_value
from rtcc.reproduce.spec import _Experiment

if TYPE_CHECKING:
    from rtcc.plot import FigureKind

_GROUP_KINDS: tuple[FigureKind, ...] = ("rate", "delay")
_GROUP_DPI = 60


def _figures(
    experiments: Mapping[str, _Experiment], first_dirs: Mapping[str, Path], out_dir: Path
) -> dict[str, list[Path]]:
    """Report figures (PNG) of each experiment's (or group's) first seed."""
    from rtcc import plot
    from rtcc.report import load_run

    groups: dict[str, list[str]] = {}
    for exp_id, exp in experiments.items():
        groups.setdefault(exp.group, []).append(exp_id)
    # The folder belongs to this page: figures of experiments since removed
    # must not linger.
    if out_dir.is_dir():
        shutil.rmtree(out_dir)
    figures: dict[str, list[Path]] = {}
    for group, ids in groups.items():
        results = [load_run(first_dirs[i]) for i in ids]
        (out_dir / group).mkdir(parents=True, exist_ok=True)
        figures[group] = []
        for kind in _GROUP_KINDS:
            path = out_dir / group / f"{kind}.png"
            plot.figure(kind, results).savefig(path, dpi=_GROUP_DPI)
            figures[group].append(path)
        for i in ids:
            flow = experiments[i].estimates
            if flow is not None:
                path = out_dir / group / f"estimates-{i}.png"
                if _estimates_figure(first_dirs[i], flow, path):
                    figures[group].append(path)
    return figures


def _estimates_figure(run_dir: Path, flow: str, path: Path) -> bool:
    """Plots ``flow``'s true available bandwidth with each estimate (Fig. 11).

    The estimates are spots at their starts (papers/svc-topdown-probing.txt
    Fig. 11), each with the true value over its estimation as a bar. False
    when the run has no estimation to show.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import polars as pl

    from rtcc.reproduce.metrics import estimations

    trace_path = run_dir / "cc_trace.csv"
    if not trace_path.is_file():
        return False
    ts = pl.read_csv(run_dir / "timeseries.csv", infer_schema_length=None)
    done = estimations(pl.read_csv(trace_path), ts, flow)
    if not done:
        return False
    avail = ts.filter(pl.col("flow") == flow).select(["time_s", "avail_kbps"]).drop_nulls()
    fig, ax = plt.subplots(figsize=(7, 3), layout="constrained")
    ax.plot(avail["time_s"], avail["avail_kbps"] / 1000, lw=0.6, color="0.6", label="available")
    ax.scatter(
        [e.start_s for e in done],
        [e.estimate_kbps / 1000 for e in done],
        color="C3",
        zorder=3,
        label="estimate",
    )
    ax.hlines(
        [e.true_kbps / 1000 for e in done],
        [e.start_s for e in done],
        [e.end_s for e in done],
        color="k",
        lw=2,
        label="true over the estimation",
    )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbps")
    ax.legend(loc="lower right", fontsize=7)
    fig.savefig(path, dpi=_GROUP_DPI)
    plt.close(fig)
    return True


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


# The comparison table of a compared experiment: (header, metric key, format).
_COMPARE_COLUMNS = (
    ("media bitrate (kbps)", "media_bitrate_kbps", "{:.0f}"),
    ("frame delay mean (ms)", "frame_delay_ms.mean", "{:.0f}"),
    ("frame delay p95 (ms)", "frame_delay_ms.p95", "{:.0f}"),
    ("stall ratio", "stall_ratio", "{:.2%}"),
    ("estimate accuracy", "bw_estimate_accuracy", "{:.1%}"),
    ("loss", "loss_rate", "{:.1%}"),
)


def _compare_table(
    ids: Sequence[str],
    experiments: Mapping[str, _Experiment],
    summaries: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[str]:
    flow = experiments[ids[0]].flow
    which = "Mean over the flows" if flow == "*" else f"Flow `{flow}`"
    lines = [
        f"{which}, mean over {len(experiments[ids[0]].seeds)} seed(s):",
        "",
        "| controller | " + " | ".join(h for h, _, _ in _COMPARE_COLUMNS) + " |",
        "|---|" + "---|" * len(_COMPARE_COLUMNS),
    ]
    for exp_id in ids:
        cells = []
        for _, key, fmt in _COMPARE_COLUMNS:
            v = _mean_of(summaries[exp_id], f"flow:{flow}.{key}")
            cells.append("—" if v is None else fmt.format(v))
        lines.append(f"| {experiments[exp_id].cc} | " + " | ".join(cells) + " |")
    return [*lines, ""]


# The window table of an experiment with `window_table = true`: (header, key, format).
_WINDOW_COLUMNS = (
    ("goodput (kbps)", "goodput_kbps", "{:.0f}"),
    ("target (kbps)", "target_kbps", "{:.0f}"),
    ("queue delay (ms)", "queue_delay_ms", "{:.0f}"),
    ("loss", "loss_rate", "{:.2%}"),
    ("PSNR (dB)", "psnr_db", "{:.1f}"),
)


def _window_table(exp: _Experiment, runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every flow's window metrics, mean (min-max) over the seeds."""
    lines: list[str] = []
    flows = [str(f.get("name")) for f in exp.scenario.get("flow", [])]

    def cell(path: str, fmt: str) -> str:
        values = [v for v in (metric_value(r, path) for r in runs) if v is not None]
        if not values:
            return "—"
        mean = fmt.format(sum(values) / len(values))
        if len(values) == 1:
            return mean
        return f"{mean} ({fmt.format(min(values))}-{fmt.format(max(values))})"

    for window, (start, end) in exp.windows.items():
        columns = [
            (h, k, f)
            for h, k, f in _WINDOW_COLUMNS
            if any(
                metric_value(r, f"windows.{window}.{fl}.{k}") is not None
                for r in runs
                for fl in flows
            )
        ]
        lines += [
            f"Window `{window}` ({start:g}-{end:g} s), mean (min-max) over "
            f"{len(runs)} seed(s); Jain's index {cell(f'windows.{window}.jain', '{:.3f}')}:",
            "",
            "| flow | " + " | ".join(h for h, _, _ in columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        for flow in flows:
            cells = [cell(f"windows.{window}.{flow}.{k}", f) for _, k, f in columns]
            lines.append(f"| {flow} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _sweep_tables(
    sweep_id: str,
    experiments: Mapping[str, _Experiment],
    summaries: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[str]:
    """The section of a swept experiment: a row per value, a column per ``vary.columns``.

    With ``compare``, one table per controller.
    """
    members = [
        (exp_id, exp)
        for exp_id, exp in experiments.items()
        if exp.sweep is not None and exp.sweep.id == sweep_id
    ]
    first = members[0][1]
    assert first.sweep is not None  # members are the experiments of this sweep
    sweep = first.sweep
    labels = list(dict.fromkeys(e.sweep.label for _, e in members if e.sweep is not None))
    controllers = list(dict.fromkeys(e.cc for _, e in members))
    seeds = {exp_id: exp.seeds for exp_id, exp in experiments.items()}
    pattern = f"{sweep_id}-{sweep.name}<value>" + ("-<controller>" if first.cc is not None else "")
    lines = [
        f"## {sweep_id}: {sweep.name} = {', '.join(labels)}",
        "",
        f"Scenario `{first.scenario_file}` with `{sweep.key}` set to each value "
        f"(experiments `{pattern}`); mean over {len(first.seeds)} seed(s).",
        "",
    ]
    for cc in controllers:
        if cc is not None:
            lines += [f"Controller `{cc}`:", ""]
        lines += [
            f"| {sweep.name} | " + " | ".join(f"`{c}`" for c in sweep.columns) + " |",
            "|---|" + "---|" * len(sweep.columns),
        ]
        for label in labels:
            exp_id = next(
                i
                for i, e in members
                if e.cc == cc and e.sweep is not None and e.sweep.label == label
            )
            cells = []
            for column in sweep.columns:
                found = [
                    v
                    for v in _seed_values(
                        column, exp_id, summaries, seeds, f"experiment `{exp_id}`: vary.columns"
                    )
                    if v is not None
                ]
                cells.append(_fmt(sum(found) / len(found) if found else None))
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def _markdown(
    spec: Mapping[str, Any],
    name: str,
    quick: bool,
    experiments: Mapping[str, _Experiment],
    summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    results: Sequence[ClaimResult],
    figures: Mapping[str, Sequence[Path]],
    base: Path,
) -> str:
    title = str(spec.get("title", name))
    lines = [
        f"# {title}: reproduced",
        "",
        f"Published numbers: {spec.get('source', 'see paper.toml')}. "
        f"Command: `rtcc reproduce {name}{' --quick' if quick else ''}`"
        + (
            " (quick variant: shorter runs, fewer seeds; not the reference numbers)."
            if quick
            else "."
        ),
        "",
    ]
    lines += _headline(results)
    intro = str(spec.get("intro", "")).strip()
    if intro:
        lines += [intro, ""]
    groups: dict[str, list[str]] = {}
    for exp_id, exp in experiments.items():
        groups.setdefault(exp.group, []).append(exp_id)
    tabled: set[str] = set()
    for group, ids in groups.items():
        exp = experiments[ids[0]]
        if exp.sweep is not None and exp.sweep.columns and exp.sweep.id not in tabled:
            tabled.add(exp.sweep.id)
            lines += _sweep_tables(exp.sweep.id, experiments, summaries)
        where = f"`{exp.sweep.key}` = {exp.sweep.label}" if exp.sweep is not None else ""
        lines += [f"## {group}", "", f"Scenario `{exp.scenario_file}`{where and ', '}{where}.", ""]
        if exp.cc is not None:
            lines += _compare_table(ids, experiments, summaries)
        for exp_id in ids:
            if experiments[exp_id].window_table:
                lines += _window_table(experiments[exp_id], summaries[exp_id])
        group_results = [r for r in results if r.claim.experiment in ids]
        if group_results:
            lines += [
                "| claim | ours (mean; min-max over seeds) | published | verdict | seeds | check |",
                "|---|---|---|---|---|---|",
            ]
        for r in group_results:
            unit = f" {r.claim.unit}" if r.claim.unit else ""
            spread = f"; {min(r.values):.4g}-{max(r.values):.4g}" if len(r.values) > 1 else ""
            verdict = r.verdict if r.verdict == HOLDS else f"**{r.verdict}**"
            count = f"{r.seeds_held}/{r.seeds_judged}" if r.seeds_judged else "—"
            lines.append(
                f"| {r.claim.text} | {_fmt(r.mean)}{unit}{spread} | "
                f"{_published(r)}{unit if r.claim.published is not None else ''} | "
                f"{verdict} | {count} | {_cell(r.why)} |"
            )
        lines.append("")
        for r in group_results:
            if r.claim.note:
                lines += [f"- `{r.claim.id}` ({r.verdict}): {r.claim.note}"]
        if any(r.claim.note for r in group_results):
            lines.append("")
        for p in figures.get(group, []):
            rel = os.path.relpath(p, base)
            lines.append(f"![{group} {p.stem}]({rel})")
        lines.append("")
    return "\n".join(lines)


def _published(r: ClaimResult) -> str:
    """The published number with the band the claim accepts around it."""
    c = r.claim
    if c.published_range is not None:
        lo, hi = c.published_range
        return (
            f"{_fmt(c.published)} [{lo:.4g}, {hi:.4g}]" if c.published else f"[{lo:.4g}, {hi:.4g}]"
        )
    if c.published is None:
        return "—"
    band = next((k for k in c.conditions() if k.op == "in"), None)
    if band is None or band.lo is None or band.hi is None:
        return _fmt(c.published)
    return f"{_fmt(c.published)} [{band.lo:.4g}, {band.hi:.4g}]"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _headline(results: Sequence[ClaimResult]) -> list[str]:
    """The counts per verdict and a line per claim that does not hold."""
    counts = {v: sum(1 for r in results if r.verdict == v) for v in VERDICTS}
    parts = [
        f"{counts[v]} {v if v != HOLDS else 'hold'}" for v in VERDICTS if counts[v] or v == HOLDS
    ]
    lines = [
        f"**{counts[HOLDS]} of {len(results)} claims hold here** "
        f"({', '.join(parts)}; rules: docs/reproduce.md).",
        "",
    ]
    others = [r for r in results if r.verdict != HOLDS]
    if others:
        lines += ["Claims that do not hold, with the reason:", ""]
        order = {v: i for i, v in enumerate((MIXED, "not discriminating", "void", "fails", NA))}
        for r in sorted(others, key=lambda r: order.get(r.verdict, 9)):
            lines.append(f"- `{r.claim.id}` — **{r.verdict}**: {r.why}")
        lines.append("")
    return lines
