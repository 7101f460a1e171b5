"""``rtcc reproduce PAPER``: run a paper's experiments and judge its claims.

A paper lives in ``scenarios/papers/<paper>/``: scenario files and a
``paper.toml`` that says what to run and what to check. Its format and the
rules that decide whether a claim holds are in ``docs/reproduce.md``. The
package's parts: :mod:`.spec` reads ``paper.toml``, :mod:`.expressions`
evaluates metric expressions, :mod:`.metrics` reads numbers from runs,
:mod:`.judging` applies the rules, :mod:`.rendering` writes the page.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rtcc._api import run
from rtcc.reproduce.judging import VERDICTS, ClaimResult, Setting, _judge
from rtcc.reproduce.metrics import (
    estimate_metrics,
    metric_value,
    trace_window_metrics,
    window_metrics,
)
from rtcc.reproduce.rendering import _figures, _markdown
from rtcc.reproduce.spec import (
    Claim,
    PaperError,
    _claims,
    _Experiment,
    _experiments,
    load_toml,
)

__all__ = ["VERDICTS", "Claim", "ClaimResult", "PaperError", "metric_value", "reproduce"]


def reproduce(
    paper: str | os.PathLike[str],
    *,
    quick: bool = False,
    out: str | os.PathLike[str] | None = None,
    runs_dir: str | os.PathLike[str] | None = None,
    papers_root: str | os.PathLike[str] = "scenarios/papers",
    workers: int | None = None,
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
        workers: Runs simulated at once (default: the number of CPUs). The
            simulator releases the GIL, so these are threads; results do not
            depend on the number.

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
    spec = load_toml(spec_path)
    name = folder.name
    experiments = _experiments(spec, spec_path, quick)
    seeds = {exp_id: exp.seeds for exp_id, exp in experiments.items()}
    claims = _claims(spec, spec_path, seeds)
    runs_root = Path(runs_dir) if runs_dir is not None else Path("results/reproduce") / name
    jobs: list[tuple[str, int, dict[str, Any], Path]] = []
    for exp_id, exp in experiments.items():
        for seed in exp.seeds:
            run_dir = runs_root / ("quick" if quick else "full") / exp_id / f"seed-{seed}"
            jobs.append((exp_id, seed, exp.scenario, run_dir))

    def one(job: tuple[str, int, dict[str, Any], Path]) -> dict[str, Any]:
        exp = experiments[job[0]]
        traced = exp.estimates is not None or bool(exp.trace)
        result = run(job[2], seed=job[1], out=job[3], cc_trace=traced)
        summary = dict(result.summary)
        if exp.windows:
            windows = window_metrics(result.timeseries, exp.windows)
            if exp.trace and result.cc_trace is not None:
                by_trace = trace_window_metrics(result.cc_trace, exp.windows, exp.trace)
                for window, flows in by_trace.items():
                    for flow, metrics in flows.items():
                        windows[window].setdefault(flow, {}).update(metrics)
            summary["windows"] = windows
        if exp.estimates is not None and result.cc_trace is not None:
            summary["estimates"] = {
                exp.estimates: estimate_metrics(result.cc_trace, result.timeseries, exp.estimates)
            }
        return summary

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise TypeError(f"workers must be an int, not {type(workers).__name__}")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    n = workers if workers is not None else (os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, n)) as pool:
        done = list(pool.map(one, jobs))
    summaries: dict[str, list[dict[str, Any]]] = {e: [] for e in experiments}
    first_dirs: dict[str, Path] = {}
    for (exp_id, _, _, run_dir), summary in zip(jobs, done, strict=True):
        summaries[exp_id].append(summary)
        first_dirs.setdefault(exp_id, run_dir)
    setting = _setting(spec, spec_path, experiments)
    results = [_judge(c, summaries, seeds, setting) for c in claims]
    md_path = (
        Path(out)
        if out is not None
        else (runs_root / f"{name}-quick.md" if quick else Path("docs/results") / f"{name}.md")
    )
    md_path.parent.mkdir(parents=True, exist_ok=True)
    figures = _figures(experiments, first_dirs, md_path.parent / f"{name}-figures")
    md_path.write_text(
        _markdown(spec, name, quick, experiments, summaries, results, figures, md_path.parent)
    )
    return md_path, results


def _setting(spec: dict[str, Any], path: Path, experiments: dict[str, _Experiment]) -> Setting:
    """What the rules need besides the summaries: baselines, flows under test, frames."""
    proposed = spec.get("proposed", [])
    if not isinstance(proposed, list) or not all(isinstance(p, str) for p in proposed):
        raise PaperError(f"{path}: key `proposed`: expected a list of controller names")
    groups: dict[str, list[str]] = {}
    for exp_id, exp in experiments.items():
        groups.setdefault(exp.group, []).append(exp_id)
    baselines = {}
    for exp_id, exp in experiments.items():
        if exp.cc is not None and exp.cc in proposed:
            baselines[exp_id] = tuple(
                other
                for other in groups[exp.group]
                if experiments[other].cc is not None and experiments[other].cc not in proposed
            )
    return Setting(
        baselines=baselines,
        flows={e: exp.flows_under_test() for e, exp in experiments.items()},
        frames={e: exp.frames() for e, exp in experiments.items()},
    )
