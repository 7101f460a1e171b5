"""``rtcc reproduce PAPER``: run a paper's experiments and set our numbers beside its own.

A paper lives in ``scenarios/papers/<paper>/`` as scenario files plus a
``paper.toml`` that says what to run and what to check::

    title = "Camel: frame-level congestion control for live streaming"
    source = "papers/camel.txt §5.2, Fig. 7"   # where the published numbers are

    [[experiment]]
    id = "fig7"
    scenario = "fig7.toml"           # relative to paper.toml
    seeds = [1, 2, 3]
    quick = { duration = "10s", seeds = [1] }   # what --quick runs instead

    [[claim]]
    id = "delay"
    text = "Camel's p95 frame delay is below GCC's"
    experiment = "fig7"
    metric = "flow:camel.frame_delay_ms.p95"   # a number in summary.json, below
    published = 120.0                          # the paper's value (optional)
    unit = "ms"
    check = { op = "<", metric = "flow:gcc.frame_delay_ms.p95" }

A metric is ``flow:<name>.<key>[.<sub>]``, ``link:<name>.<key>[.<sub>]`` or a
plain dotted path from the top of ``summary.json`` (``fairness.jain``). Our
value is its mean over the experiment's seeds. ``check`` is one of:

- ``{ op = "<" | "<=" | ">" | ">=", value = X }``: against a constant;
- ``{ op = ..., metric = "..." , factor = 1.0 }``: against ``factor`` x another
  metric (``factor`` defaults to 1), of the same experiment, or of another one
  when prefixed with its id (``"gcc-alone:flow:gcc.goodput_kbps"``; papers
  often run each algorithm alone on its own link);
- ``{ within = 0.1 }``: ``|ours - published| ≤ 0.1 x |published|``.

The report (``docs/results/<paper>.md`` by default) has a table per
experiment with each claim, our value (mean, min-max over seeds), the
published value, and whether the claim holds here, plus the report figures
of the first seed of each experiment.
"""

from __future__ import annotations

import math
import operator
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtcc._api import run
from rtcc._native import ScenarioError

__all__ = ["Claim", "ClaimResult", "PaperError", "reproduce"]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class PaperError(ScenarioError):
    """A paper folder or its ``paper.toml`` is unusable; names file, entry and key."""


@dataclass(frozen=True)
class Claim:
    """One claim of ``paper.toml`` (see the module doc)."""

    id: str
    text: str
    experiment: str
    metric: str
    check: Mapping[str, Any]
    published: float | None = None
    unit: str = ""


@dataclass
class ClaimResult:
    """A claim with our numbers and the verdict."""

    claim: Claim
    values: list[float] = field(default_factory=list)
    reference: float | None = None
    holds: bool | None = None
    why: str = ""

    @property
    def mean(self) -> float | None:
        """Our value: the mean over seeds (None if the metric was missing)."""
        return sum(self.values) / len(self.values) if self.values else None


def metric_value(summary: Mapping[str, Any], path: str) -> float | None:
    """The number at ``path`` in a run's summary (module doc), or None."""
    node: Any
    if path.startswith(("flow:", "link:")):
        kind, _, rest = path.partition(":")
        name, _, keys = rest.partition(".")
        items = summary.get("flows" if kind == "flow" else "links", [])
        node = next((x for x in items if x.get("name") == name), None)
    else:
        node, keys = summary, path
    for key in keys.split(".") if keys else []:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None
    return float(node)


def reproduce(
    paper: str | os.PathLike[str],
    *,
    quick: bool = False,
    out: str | os.PathLike[str] | None = None,
    runs_dir: str | os.PathLike[str] | None = None,
    papers_root: str | os.PathLike[str] = "scenarios/papers",
) -> tuple[Path, list[ClaimResult]]:
    """Run a paper's experiments and write its results page.

    Args:
        paper: The paper's name (a folder under ``papers_root``) or a path to
            its folder.
        quick: Run each experiment's ``quick`` variant (shorter, fewer seeds).
        out: The Markdown file to write (default ``docs/results/<paper>.md``;
            with ``quick``, ``results/reproduce/<paper>/<paper>-quick.md``).
        runs_dir: Where the runs' files go (default
            ``results/reproduce/<paper>``).
        papers_root: Folder holding the papers.

    Returns:
        The Markdown path and every claim's result.

    Raises:
        PaperError: The paper folder or ``paper.toml`` is unusable.
        ScenarioError: A scenario is invalid.
    """
    folder = Path(paper)
    if not folder.is_dir():
        folder = Path(papers_root) / str(paper)
    spec_path = folder / "paper.toml"
    if not spec_path.is_file():
        raise PaperError(f"{spec_path}: no such file (is `{paper}` a paper under {papers_root}/?)")
    try:
        spec = tomllib.loads(spec_path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise PaperError(f"{spec_path}: {e}") from None
    name = folder.name
    experiments = _experiments(spec, spec_path)
    claims = _claims(spec, spec_path, set(experiments))
    runs_root = Path(runs_dir) if runs_dir is not None else Path("results/reproduce") / name
    summaries: dict[str, list[dict[str, Any]]] = {}
    first_dirs: dict[str, Path] = {}
    for exp_id, exp in experiments.items():
        scenario_path = folder / str(exp["scenario"])
        variant = exp.get("quick", {}) if quick else {}
        seeds = [int(s) for s in variant.get("seeds", exp.get("seeds", [1]))]
        scenario = tomllib.loads(scenario_path.read_text())
        if "duration" in variant:
            scenario["duration"] = variant["duration"]
        summaries[exp_id] = []
        for seed in seeds:
            run_dir = runs_root / ("quick" if quick else "full") / exp_id / f"seed-{seed}"
            result = run(_with_origin(scenario, scenario_path), seed=seed, out=run_dir)
            summaries[exp_id].append(result.summary)
            first_dirs.setdefault(exp_id, run_dir)
    results = [_judge(c, summaries) for c in claims]
    md_path = (
        Path(out)
        if out is not None
        else (runs_root / f"{name}-quick.md" if quick else Path("docs/results") / f"{name}.md")
    )
    md_path.parent.mkdir(parents=True, exist_ok=True)
    figures = _figures(first_dirs, md_path.parent / f"{name}-figures")
    md_path.write_text(_markdown(spec, name, quick, experiments, results, figures, md_path.parent))
    return md_path, results


def _with_origin(scenario: dict[str, Any], path: Path) -> dict[str, Any]:
    """Relative trace paths in a paper's scenario are relative to its folder."""
    for link in scenario.get("link", []):
        trace = link.get("trace")
        if isinstance(trace, str) and not Path(trace).is_absolute():
            candidate = path.parent / trace
            if candidate.exists():
                link["trace"] = str(candidate)
    return scenario


def _experiments(spec: Mapping[str, Any], path: Path) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for i, exp in enumerate(spec.get("experiment", [])):
        where = f"{path}: experiment[{i}]"
        if "id" not in exp or "scenario" not in exp:
            raise PaperError(f"{where}: needs `id` and `scenario`")
        if not (path.parent / str(exp["scenario"])).is_file():
            raise PaperError(
                f"{where}: key `scenario`: no file {path.parent / str(exp['scenario'])}"
            )
        out[str(exp["id"])] = exp
    if not out:
        raise PaperError(f"{path}: no [[experiment]]")
    return out


def _claims(spec: Mapping[str, Any], path: Path, experiments: set[str]) -> list[Claim]:
    claims = []
    for i, c in enumerate(spec.get("claim", [])):
        where = f"{path}: claim[{i}]"
        for key in ("id", "text", "experiment", "metric", "check"):
            if key not in c:
                raise PaperError(f"{where}: missing key `{key}`")
        if c["experiment"] not in experiments:
            raise PaperError(f"{where}: key `experiment`: no experiment `{c['experiment']}`")
        check = c["check"]
        valid = isinstance(check, Mapping) and (
            ("within" in check and c.get("published") is not None)
            or (check.get("op") in _OPS and ("value" in check or "metric" in check))
        )
        if not valid:
            raise PaperError(
                f'{where}: key `check`: expected {{ op = "<", value = X }}, '
                f'{{ op = "<", metric = "..." }} or {{ within = 0.1 }} (with `published`)'
            )
        claims.append(
            Claim(
                id=str(c["id"]),
                text=str(c["text"]),
                experiment=str(c["experiment"]),
                metric=str(c["metric"]),
                check=check,
                published=None if c.get("published") is None else float(c["published"]),
                unit=str(c.get("unit", "")),
            )
        )
    return claims


def _mean_of(summaries: Sequence[Mapping[str, Any]], metric: str) -> float | None:
    vals = [v for s in summaries if (v := metric_value(s, metric)) is not None]
    return sum(vals) / len(vals) if vals else None


def _split_ref(metric: str, experiments: Mapping[str, Any], default: str) -> tuple[str, str]:
    """``"<experiment>:<metric>"`` or a plain metric of ``default``."""
    head, sep, rest = metric.partition(":")
    if sep and head in experiments and head not in ("flow", "link"):
        return head, rest
    return default, metric


def _judge(claim: Claim, all_summaries: Mapping[str, Sequence[Mapping[str, Any]]]) -> ClaimResult:
    res = ClaimResult(claim)
    summaries = all_summaries[claim.experiment]
    res.values = [v for s in summaries if (v := metric_value(s, claim.metric)) is not None]
    ours = res.mean
    if ours is None:
        res.why = f"metric `{claim.metric}` not in the runs' summaries"
        return res
    check = claim.check
    if "within" in check:
        assert claim.published is not None  # validated in _claims
        tol = float(check["within"])
        res.reference = claim.published
        res.holds = abs(ours - claim.published) <= tol * abs(claim.published)
        res.why = f"|{ours:.4g} - {claim.published:.4g}| ≤ {tol:.0%} of {claim.published:.4g}"
        return res
    op = str(check["op"])
    if "metric" in check:
        exp, other_metric = _split_ref(str(check["metric"]), all_summaries, claim.experiment)
        other = _mean_of(all_summaries[exp], other_metric)
        if other is None:
            res.why = f"metric `{check['metric']}` not in the runs' summaries"
            return res
        factor = float(check.get("factor", 1.0))
        res.reference = factor * other
        scale = "" if math.isclose(factor, 1.0) else f"{factor:g} x "
        res.why = f"{ours:.4g} {op} {scale}{check['metric']} = {res.reference:.4g}"
    else:
        res.reference = float(check["value"])
        res.why = f"{ours:.4g} {op} {res.reference:.4g}"
    res.holds = _OPS[op](ours, res.reference)
    return res


def _figures(first_dirs: Mapping[str, Path], out_dir: Path) -> dict[str, list[Path]]:
    """Report figures (PNG) of each experiment's first seed."""
    from rtcc import plot
    from rtcc.report import load_run

    figures: dict[str, list[Path]] = {}
    for exp_id, run_dir in first_dirs.items():
        paths = plot.save_figures([load_run(run_dir)], out_dir / exp_id)
        figures[exp_id] = [p for p in paths if p.suffix == ".png"]
    return figures


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _markdown(
    spec: Mapping[str, Any],
    name: str,
    quick: bool,
    experiments: Mapping[str, Mapping[str, Any]],
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
    held = sum(1 for r in results if r.holds)
    lines += [f"**{held} of {len(results)} claims hold here.**", ""]
    for exp_id, exp in experiments.items():
        lines += [f"## {exp_id}", "", f"Scenario `{exp['scenario']}`.", ""]
        lines += [
            "| claim | ours (mean; min-max over seeds) | published | holds here? | check |",
            "|---|---|---|---|---|",
        ]
        for r in results:
            if r.claim.experiment != exp_id:
                continue
            unit = f" {r.claim.unit}" if r.claim.unit else ""
            spread = f"; {min(r.values):.4g}-{max(r.values):.4g}" if len(r.values) > 1 else ""
            verdict = {True: "yes", False: "**no**", None: "n/a"}[r.holds]
            lines.append(
                f"| {r.claim.text} | {_fmt(r.mean)}{unit}{spread} | "
                f"{_fmt(r.claim.published)}{unit if r.claim.published is not None else ''} | "
                f"{verdict} | {r.why} |"
            )
        lines.append("")
        for p in figures.get(exp_id, []):
            rel = os.path.relpath(p, base)
            lines.append(f"![{exp_id} {p.stem}]({rel})")
        lines.append("")
    return "\n".join(lines)
