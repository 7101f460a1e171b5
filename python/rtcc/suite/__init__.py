"""``rtcc suite``: the standard evaluation suites of RFC 8867 and RFC 8869.

``run_suite("rfc8867", ccs=["gcc", "bbr"], seeds=3, out="results/suites")``
runs every expressible test case of the suite (:mod:`rtcc.suite.cases`) for
every controller and seed, computes RFC 8868's metrics of each run
(:mod:`rtcc.suite.metrics`) and writes ``<out>/<suite>/report.html`` (one
self-contained page: the cases, the choices each makes, a table of the
metrics per controller and the media flows' rates over time),
``results.md`` (the tables in Markdown) and ``metrics.json`` (every run's
numbers); each run's own files go under ``runs/<case>/<cc>/seed-<n>/``,
with the scenario it ran (``scenario.toml``, replayed by ``rtcc run
scenario.toml --seed <n>``).
docs/suites.md describes the cases, the choices and the metrics.

``quick=True`` runs the cases marked quick with every time of their
timelines multiplied by :data:`QUICK_SCALE`, by default for
:data:`QUICK_CONTROLLERS` only: the variant ``make test`` runs.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from rtcc.suite.cases import CASES, MEDIA_CONTROLLERS, SUITES, Case, Plan
from rtcc.suite.metrics import METRICS, run_metrics

__all__ = [
    "DEFAULT_CONTROLLERS",
    "QUICK_CONTROLLERS",
    "QUICK_SCALE",
    "CaseResult",
    "SuiteError",
    "SuiteResult",
    "parse_controllers",
    "run_suite",
]

DEFAULT_CONTROLLERS: tuple[str, ...] = ("gcc", "camel", "delay-bbr", "copa", "bbr")
"""The controllers a suite runs unless told otherwise."""
QUICK_CONTROLLERS: tuple[str, ...] = ("gcc", "bbr")
"""The controllers of ``--quick`` unless told otherwise."""
QUICK_SCALE = 0.25
"""``--quick`` multiplies every time of a case's timeline by this."""

Progress = Callable[[int, int, str], object]
"""``progress(done, total, label)``, called after each run."""


class SuiteError(ValueError):
    """A suite name, controller name or option is unusable (one-line message)."""


@dataclass
class CaseResult:
    """One case of a suite: its runs' metrics per controller."""

    case: Case
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Per controller, one metrics dict per seed (seed order)."""
    dirs: dict[str, list[Path]] = field(default_factory=dict)
    """Per controller, each seed's run directory."""

    def aggregate(self, cc: str) -> dict[str, Any]:
        """Per metric over the seeds: ``mean``, ``sd`` (two or more seeds), ``n``.

        Also ``unconverged`` and ``convergence_events`` summed over the seeds.
        """
        runs = self.runs.get(cc, [])
        out: dict[str, Any] = {}
        for key, *_ in METRICS:
            vals = [float(r[key]) for r in runs if r.get(key) is not None]
            if not vals:
                out[key] = None
                continue
            mean = sum(vals) / len(vals)
            sd = (
                math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
                if len(vals) > 1
                else None
            )
            out[key] = {"mean": mean, "sd": sd, "n": len(vals)}
        out["unconverged"] = sum(int(r.get("unconverged", 0)) for r in runs)
        out["convergence_events"] = sum(int(r.get("convergence_events", 0)) for r in runs)
        return out


@dataclass
class SuiteResult:
    """What :func:`run_suite` did and wrote."""

    suite: str
    controllers: tuple[str, ...]
    seeds: tuple[int, ...]
    quick: bool
    cases: list[CaseResult]
    skipped: list[Case]
    """Cases not expressible in the simulator (``Case.reason`` says why)."""
    report: Path
    markdown: Path
    command: str


def parse_controllers(text: str | Sequence[str] | None, *, quick: bool = False) -> tuple[str, ...]:
    """Controller names from ``"gcc,bbr"`` (or a list); the defaults for None.

    Raises:
        SuiteError: A name is not a media controller (the message lists them).

    """
    if text is None:
        return QUICK_CONTROLLERS if quick else DEFAULT_CONTROLLERS
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    if not names:
        raise SuiteError("--cc: no controller given")
    for n in names:
        if n not in MEDIA_CONTROLLERS:
            raise SuiteError(
                f"--cc: unknown controller {n!r} (one of: {', '.join(MEDIA_CONTROLLERS)})"
            )
    return tuple(dict.fromkeys(names))


def run_suite(
    suite: str,
    *,
    ccs: str | Sequence[str] | None = None,
    quick: bool = False,
    seeds: int = 1,
    out: str | os.PathLike[str] = "results/suites",
    workers: int | None = None,
    progress: Progress | None = None,
    command: str | None = None,
) -> SuiteResult:
    """Run a suite's cases for each controller and seed, and write its report.

    Args:
        suite: ``"rfc8867"`` or ``"rfc8869"``.
        ccs: Controller names (``"gcc,bbr"`` or a list); default
            :data:`DEFAULT_CONTROLLERS` (:data:`QUICK_CONTROLLERS` with
            ``quick``).
        quick: Only the cases marked quick, timelines scaled by
            :data:`QUICK_SCALE` (module doc).
        seeds: Seeds 1..``seeds`` per case and controller.
        out: The suite's folder is ``<out>/<suite>/``.
        workers: Runs simulated at once (default: the number of CPUs).
        progress: Called after each run (:data:`Progress`).
        command: The command line to print in the report (default: the
            equivalent ``rtcc suite`` command).

    Returns:
        The :class:`SuiteResult`.

    Raises:
        SuiteError: Unknown suite or controller, or ``seeds`` < 1.
        ScenarioError: A case's scenario is rejected by the simulator (a bug).

    """
    from rtcc._api import run
    from rtcc.suite.render import write_html, write_markdown

    if suite not in SUITES:
        raise SuiteError(f"unknown suite {suite!r} (one of: {', '.join(SUITES)})")
    if seeds < 1:
        raise SuiteError(f"--seeds must be at least 1 (got {seeds})")
    controllers = parse_controllers(ccs, quick=quick)
    scale = QUICK_SCALE if quick else 1.0
    cases = [c for c in CASES if c.suite == suite and (c.quick or not quick)]
    runnable = [c for c in cases if c.build is not None]
    skipped = [c for c in cases if c.build is None]
    root = Path(out) / suite
    seed_list = tuple(range(1, seeds + 1))
    if command is None:
        command = f"rtcc suite {suite} --cc {','.join(controllers)} --seeds {seeds} --out {out}" + (
            " --quick" if quick else ""
        )

    jobs: list[tuple[CaseResult, str, int, Plan, Path]] = []
    results: list[CaseResult] = []
    for case in runnable:
        cr = CaseResult(case)
        results.append(cr)
        for cc in controllers:
            cr.runs[cc] = []
            cr.dirs[cc] = []
            for seed in seed_list:
                assert case.build is not None  # runnable
                plan = case.build(cc, scale, seed)
                d = root / "runs" / case.slug / cc / f"seed-{seed}"
                cr.dirs[cc].append(d)
                jobs.append((cr, cc, seed, plan, d))

    def one(job: tuple[CaseResult, str, int, Plan, Path]) -> dict[str, Any]:
        _cr, _cc, seed, plan, d = job
        # The scenario beside its outputs: `rtcc run scenario.toml --seed N`
        # replays the run.
        d.mkdir(parents=True, exist_ok=True)
        (d / "scenario.toml").write_text(tomli_w.dumps(plan.scenario))
        result = run(plan.scenario, seed=seed, out=d)
        m = run_metrics(result, plan, scale=scale)
        m["seed"] = seed
        return m

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise TypeError(f"workers must be an int, not {type(workers).__name__}")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    n = workers if workers is not None else (os.cpu_count() or 1)
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, n)) as pool:
        for job, metrics in zip(jobs, pool.map(one, jobs), strict=True):
            cr, cc, seed, _, _ = job
            cr.runs[cc].append(metrics)
            done += 1
            if progress is not None:
                progress(done, len(jobs), f"{suite} {cr.case.id} {cc} seed {seed}")

    root.mkdir(parents=True, exist_ok=True)
    res = SuiteResult(
        suite=suite,
        controllers=controllers,
        seeds=seed_list,
        quick=quick,
        cases=results,
        skipped=skipped,
        report=root / "report.html",
        markdown=root / "results.md",
        command=command,
    )
    (root / "metrics.json").write_text(
        json.dumps(
            {
                "suite": suite,
                "command": command,
                "controllers": list(controllers),
                "seeds": list(seed_list),
                "quick": quick,
                "cases": {cr.case.id: {cc: runs for cc, runs in cr.runs.items()} for cr in results},
            },
            indent=1,
            sort_keys=True,
        )
    )
    write_markdown(res)
    write_html(res)
    return res
