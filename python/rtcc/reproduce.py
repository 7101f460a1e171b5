"""``rtcc reproduce PAPER``: run a paper's experiments and set our numbers beside its own.

A paper lives in ``scenarios/papers/<paper>/`` as scenario files plus a
``paper.toml`` that says what to run and what to check::

    title = "Camel: frame-level congestion control for live streaming"
    source = "papers/camel.txt §5.2, Fig. 7"   # where the published numbers are
    intro = "How the set-up differs from the paper's ..."   # Markdown, optional

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
    note = "why it differs here"               # printed under the table (optional)
    check = { op = "<", metric = "flow:gcc.frame_delay_ms.p95" }

An experiment may run one scenario with several controllers and changed
settings::

    [[experiment]]
    id = "fig19-loss-10"
    scenario = "base.toml"
    set = { "link.0.loss" = 0.1 }                  # dotted paths, as in sweeps
    compare = ["camel", "gcc", "bbr"]              # the `cc` of the flow under test
    flow = "media"                                 # that flow (default: the first media flow);
                                                   # a list gives every listed flow the
                                                   # controller (several flows of one kind)
    windows = { during = ["50s", "200s"] }         # per-flow means over time windows
    cc_config = { camel = { burst_max = "20KB" } } # per-controller [flow.cc_config]
    flow_keys = { webrtc-bbr = { queue_time_limit = "2s" } }  # per-controller flow keys

It expands into one experiment per controller, ``fig19-loss-10-camel``,
``fig19-loss-10-gcc``, ..., which claims name like any other. The report gets a
table comparing the controllers on the flow under test (media bitrate, frame
delay, stall ratio, estimate accuracy) and one set of figures with a column per
controller.

An experiment may also run once per value of one setting (``vary``)::

    [[experiment]]
    id = "fig13"
    scenario = "formula.toml"
    compare = ["bbr", "copa", "cubic"]           # optional, as above
    seeds = [1, 2, 3]
    quick = { duration = "10s", seeds = [1] }   # applies to every expanded run

    [experiment.vary]                            # or inline: vary = { key = ..., ... }
    key = "flow.0.autorec.k"                     # a dotted path, as in `set`
    values = [0, 1, 2, 3]
    name = "k"
    columns = [                                  # optional: the sweep's table
        "flow:live.recovery_latency_ms",
        "{flow:live.recovery_latency_ms} - {flow:live.formula.recovery_latency_ms}",
    ]

It expands into ``<id>-<name><value>`` (``fig13-k0``, ``fig13-k1``, ...) with
``set[key] = value`` added to ``set`` (the key must not be in ``set`` too);
with ``compare`` the controller comes last: ``fig13-k3-bbr``. ``name``
defaults to the key's last component. A value is written in the id as an
integer (``3``), a float without a trailing ``.0`` (``2.0`` is ``2``, ``0.3``
stays ``0.3``: ``alpha0.3``), a string as written (``rate4Mbps``) or
``true``/``false``; ``labels = [...]`` (one string per value) names values
that are tables. An id must not hold ``:``, a brace, a slash or a space, and
ids after expansion must be unique. The quick variant's ``duration`` wins over
``set`` and ``vary``. With ``columns`` (metrics or expressions, below) the
report adds one table for the whole sweep, a row per value (and, with
``compare``, one table per controller), before the values' own sections.

A metric is ``flow:<name>.<key>[.<sub>]``, ``link:<name>.<key>[.<sub>]`` or a
plain dotted path from the top of ``summary.json`` (``fairness.jain``).
``flow:*.<key>`` is the mean of the key over every flow that has it (a paper's
"average over all flows"). An experiment's ``windows`` add, to each run's
summary, ``windows.<window>.<flow>.<column>``: the mean of a
``timeseries.csv`` column (``goodput_kbps``, ``send_rate_kbps``,
``target_kbps``, ``queue_delay_ms``, ...) over the samples in ``[start, end)``,
and ``windows.<window>.jain``, Jain's index of the flows' mean goodputs there.
Our value is its mean over the experiment's seeds. ``check`` is one of:

- ``{ op = "<" | "<=" | ">" | ">=", value = X }``: against a constant;
- ``{ op = ..., metric = "..." , factor = 1.0 }``: against ``factor`` x another
  metric (``factor`` defaults to 1), of the same experiment, or of another one
  when prefixed with its id (``"gcc-alone:flow:gcc.goodput_kbps"``; papers
  often run each algorithm alone on its own link);
- ``{ within = 0.1 }``: ``|ours - published| ≤ 0.1 x |published|``.

A claim's ``metric`` (and a check's) may be an expression over metrics
written in braces, each optionally prefixed with another experiment's id::

    metric = "abs({flow:live.recovery_latency_ms} - {flow:live.formula.recovery_latency_ms})"
    # or, against another experiment:
    metric = "1 - {flow:live.goodput_kbps} / {fig13-k0-bbr:flow:live.goodput_kbps}"

It is evaluated per seed of the claim's experiment (a reference to another
experiment takes the same seed there; that experiment must have every seed),
then averaged over the seeds like a plain metric. Allowed: numbers, ``+ - *
/``, unary minus, parentheses, ``abs(x)``, ``min(x, y, ...)``,
``max(x, y, ...)``. A seed where a referenced metric is missing, a division by
zero or a non-finite result gives no value for that seed. A metric without
braces is a plain metric as above.

A claim may be repeated over values (a table, or a list of tables for every
combination)::

    [[claim]]
    id = "formula-{cc}-k{k}"
    text = "{cc}: the formula's recovery latency within 3.2 ms at K = {k}"
    experiment = "fig13-k{k}-{cc}"
    metric = "abs({flow:live.recovery_latency_ms} - {flow:live.formula.recovery_latency_ms})"
    check = { op = "<=", value = 3.2 }
    vary = [{ name = "k", values = [0, 5, 10] }, { name = "cc", values = ["bbr", "copa"] }]

``{k}`` (exactly the vary name in braces) is replaced, in ``id``, ``text``,
``experiment``, ``metric``, ``check``, ``note`` and ``unit``, by the value
written as in experiment ids, before references are read. Claim ids after
expansion must be unique.

The report (``docs/results/<paper>.md`` by default) has a table per
experiment with each claim, our value (mean, min-max over seeds), the
published value, and whether the claim holds here, plus the report figures
of the first seed of each experiment.
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import operator
import os
import re
import shutil
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtcc._api import run
from rtcc._native import ScenarioError
from rtcc.sweep import GridError, _assign, _check_path

if TYPE_CHECKING:
    import polars as pl

    from rtcc.plot import FigureKind

__all__ = ["Claim", "ClaimResult", "PaperError", "reproduce"]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


# Flow kinds `compare` picks by default (the first one in the scenario).
_UNDER_TEST = ("media", "live")


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
    note: str = ""


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
            return 0.0 if i > 0 and parts[i - 1] == "cc_states" and i == len(parts) - 1 else None
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
    try:
        spec = tomllib.loads(spec_path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise PaperError(f"{spec_path}: {e}") from None
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
        result = run(job[2], seed=job[1], out=job[3])
        summary = dict(result.summary)
        windows = experiments[job[0]].windows
        if windows:
            summary["windows"] = _window_means(result.timeseries, windows)
        return summary

    n = workers if workers is not None else (os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, n)) as pool:
        done = list(pool.map(one, jobs))
    summaries: dict[str, list[dict[str, Any]]] = {e: [] for e in experiments}
    first_dirs: dict[str, Path] = {}
    for (exp_id, _, _, run_dir), summary in zip(jobs, done, strict=True):
        summaries[exp_id].append(summary)
        first_dirs.setdefault(exp_id, run_dir)
    results = [_judge(c, summaries, seeds) for c in claims]
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


@dataclass
class _Experiment:
    """One experiment as run: a scenario (settings applied) and its seeds."""

    scenario_file: str
    scenario: dict[str, Any]
    seeds: list[int]
    group: str
    cc: str | None = None
    flow: str | None = None
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    sweep: _Sweep | None = None


@dataclass(frozen=True)
class _Sweep:
    """Where an experiment sits in the expansion of a ``vary``."""

    id: str  # the `[[experiment]]` id before expansion
    key: str  # the dotted path varied
    name: str
    label: str  # the value as written in the expanded id
    columns: tuple[str, ...] = ()


def _window_means(ts: pl.DataFrame, windows: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    """Per-flow means of the ``timeseries.csv`` columns over time windows.

    Each window is ``[start, end)`` in seconds; ``jain`` is Jain's index of the
    flows' mean goodputs there.
    """
    import polars as pl

    out: dict[str, Any] = {}
    numeric = [c for c, t in ts.schema.items() if c not in ("time_s", "flow") and t.is_numeric()]
    for name, (start, end) in windows.items():
        part = ts.filter((pl.col("time_s") >= start) & (pl.col("time_s") < end))
        means = part.group_by("flow", maintain_order=True).agg([pl.col(c).mean() for c in numeric])
        table: dict[str, Any] = {}
        goodputs = []
        for row in means.iter_rows(named=True):
            table[str(row["flow"])] = {c: row[c] for c in numeric if row[c] is not None}
            goodputs.append(float(row.get("goodput_kbps") or 0.0))
        total = sum(goodputs)
        squares = sum(g * g for g in goodputs)
        table["jain"] = total * total / (len(goodputs) * squares) if squares > 0 else 1.0
        out[name] = table
    return out


def _seconds(value: object) -> float:
    """``"50s"``, ``"250ms"`` or a number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    for suffix, scale in (("ms", 1e-3), ("s", 1.0)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * scale
            except ValueError:
                break
    raise ValueError(f'`{value}` is not a duration like "50s" or "250ms"')


def _parse_windows(value: object, where: str) -> dict[str, tuple[float, float]]:
    """``windows = { name = ["50s", "200s"] }`` as seconds."""
    if not isinstance(value, Mapping):
        raise PaperError(f"{where}: key `windows`: expected a table of [start, end] pairs")
    out = {}
    for name, pair in value.items():
        if not isinstance(pair, list) or len(pair) != 2:
            raise PaperError(f"{where}: key `windows.{name}`: expected [start, end], got {pair!r}")
        try:
            start, end = (_seconds(x) for x in pair)
        except ValueError as e:
            raise PaperError(f"{where}: key `windows.{name}`: {e}") from None
        if not start < end:
            raise PaperError(
                f"{where}: key `windows.{name}`: start {pair[0]} is not before end {pair[1]}"
            )
        out[str(name)] = (start, end)
    return out


def _with_origin(scenario: dict[str, Any], path: Path) -> dict[str, Any]:
    """Resolve relative trace paths as the simulator does for a scenario file.

    A path is looked up from the working directory, then from the scenario's
    folder and each folder above it (docs/scenarios.md).
    """

    def resolve(table: dict[str, Any]) -> None:
        trace = table.get("trace")
        if not isinstance(trace, str) or Path(trace).is_absolute() or Path(trace).exists():
            return
        for folder in [path.parent, *path.parent.parents]:
            candidate = folder / trace
            if candidate.exists():
                table["trace"] = str(candidate)
                return

    for link in scenario.get("link", []):
        resolve(link)
    for flow in scenario.get("flow", []):
        if isinstance(flow.get("encoder"), dict):
            resolve(flow["encoder"])
    return scenario


# Characters an id cannot hold: `:` separates an experiment from a metric in
# references, braces delimit references and placeholders, slashes and spaces
# would break the runs' folder names.
_BAD_ID_CHARS = re.compile(r"[:{}/\\\s]")
_PLACEHOLDER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _label(value: object) -> str:
    """How a ``vary`` value is written in ids and placeholders.

    Integers as they are (``3``), floats without a trailing ``.0`` (``2.0`` is
    ``2``, ``0.3`` stays ``0.3``), strings as written (``4Mbps``), booleans as
    ``true``/``false``.

    Raises:
        ValueError: A table or an array (give ``labels``).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"{value!r} cannot be written in an id: give `labels`")


def _vary_points(
    vary: object, where: str, needs_key: bool
) -> tuple[str, str, list[tuple[str, Any]]]:
    """A ``vary`` table as (key, name, [(label, value), ...])."""
    if not isinstance(vary, Mapping):
        raise PaperError(f"{where}: key `vary`: expected a table {{ name = ..., values = [...] }}")
    key = vary.get("key")
    if needs_key and (not isinstance(key, str) or not key):
        raise PaperError(f"{where}: key `vary.key`: expected the dotted path to vary")
    name = vary.get("name", key.rsplit(".", 1)[-1] if isinstance(key, str) else None)
    if not isinstance(name, str) or not _PLACEHOLDER_NAME.fullmatch(name):
        raise PaperError(
            f"{where}: key `vary.name`: expected a name of letters, digits and `_`, got {name!r}"
        )
    values = vary.get("values")
    if not isinstance(values, list) or not values:
        raise PaperError(f"{where}: key `vary.values`: expected a non-empty list")
    labels = vary.get("labels")
    if labels is None:
        try:
            labels = [_label(v) for v in values]
        except ValueError as e:
            raise PaperError(f"{where}: key `vary.values`: {e}") from None
    elif not (
        isinstance(labels, list)
        and len(labels) == len(values)
        and all(isinstance(x, str) for x in labels)
    ):
        raise PaperError(f"{where}: key `vary.labels`: expected one string per value")
    for text in labels:
        if not text or _BAD_ID_CHARS.search(text):
            raise PaperError(
                f"{where}: key `vary.values`: `{text}` cannot be part of an id "
                "(empty, or holds `:`, a brace, a slash or a space)"
            )
    if len(set(labels)) != len(labels):
        dup = next(x for x in labels if labels.count(x) > 1)
        raise PaperError(f"{where}: key `vary.values`: two values are both written `{dup}`")
    return str(key) if key is not None else "", name, list(zip(labels, values, strict=True))


def _experiments(spec: Mapping[str, Any], path: Path, quick: bool) -> dict[str, _Experiment]:
    out: dict[str, _Experiment] = {}
    origin: dict[str, str] = {}  # expanded id -> the entry that made it

    def add(exp_id: str, experiment: _Experiment, where: str) -> None:
        if exp_id in out:
            raise PaperError(
                f"{where}: key `id`: experiment `{exp_id}` is also made by {origin[exp_id]} "
                "(ids after expanding `vary` and `compare` must be unique)"
            )
        out[exp_id] = experiment
        origin[exp_id] = where.rpartition(": ")[2]

    for i, exp in enumerate(spec.get("experiment", [])):
        where = f"{path}: experiment[{i}]"
        if "id" not in exp or "scenario" not in exp:
            raise PaperError(f"{where}: needs `id` and `scenario`")
        exp_id = str(exp["id"])
        if _BAD_ID_CHARS.search(exp_id):
            raise PaperError(
                f"{where}: key `id`: `{exp_id}` holds `:`, a brace, a slash or a space"
            )
        scenario_path = path.parent / str(exp["scenario"])
        if not scenario_path.is_file():
            raise PaperError(f"{where}: key `scenario`: no file {scenario_path}")
        try:
            loaded = tomllib.loads(scenario_path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise PaperError(f"{scenario_path}: {e}") from None
        variant = exp.get("quick", {}) if quick else {}
        seeds = [int(s) for s in variant.get("seeds", exp.get("seeds", [1]))]
        settings = exp.get("set", {})
        if not isinstance(settings, Mapping):
            raise PaperError(f"{where}: key `set`: expected a table of dotted paths")
        windows = _parse_windows(exp.get("windows", {}), where)
        points: list[tuple[str, Any]] = [("", None)]
        sweep = None
        if "vary" in exp:
            key, name, points = _vary_points(exp["vary"], where, needs_key=True)
            if key in settings:
                raise PaperError(f"{where}: key `vary.key`: `{key}` is also in `set`")
            columns = exp["vary"].get("columns", [])
            if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
                raise PaperError(f"{where}: key `vary.columns`: expected a list of metrics")
            for column in columns:
                try:
                    _parse_expr(column)
                except ValueError as e:
                    raise PaperError(f"{where}: key `vary.columns`: {e}") from None
            sweep = _Sweep(exp_id, key, name, "", tuple(columns))
        for label, value in points:
            base = copy.deepcopy(loaded)
            point_settings = dict(settings)
            point_id = exp_id
            point_sweep = None
            if sweep is not None:
                point_settings[sweep.key] = value
                point_id = f"{exp_id}-{sweep.name}{label}"
                point_sweep = _Sweep(exp_id, sweep.key, sweep.name, label, sweep.columns)
                # Figures label their columns with the scenario name.
                base["name"] = point_id
            for key, setting in point_settings.items():
                try:
                    _check_path(base, str(key), f"{where}: key `set`")
                    _assign(base, str(key), setting, f"{where}: key `set`")
                except GridError as e:
                    raise PaperError(str(e)) from None
            # After `set` and `vary`: the quick variant is shorter even where
            # they set a duration.
            if "duration" in variant:
                base["duration"] = variant["duration"]
            base = _with_origin(base, scenario_path)
            for cc_id, experiment in _compared(exp, base, point_id, where, scenario_path):
                experiment.seeds = list(seeds)
                experiment.windows = windows
                experiment.sweep = point_sweep
                add(cc_id, experiment, where)
    if not out:
        raise PaperError(f"{path}: no [[experiment]]")
    seeds_of = {k: e.seeds for k, e in out.items()}
    for exp_id, experiment in out.items():
        if experiment.sweep is None:
            continue
        for column in experiment.sweep.columns:
            _check_refs(
                column, exp_id, seeds_of, f"{path}: experiment `{exp_id}`: key `vary.columns`"
            )
    return out


def _compared(
    exp: Mapping[str, Any], base: dict[str, Any], exp_id: str, where: str, scenario_path: Path
) -> Iterator[tuple[str, _Experiment]]:
    """The experiment, or with ``compare`` one per controller (seeds, windows set by the caller)."""
    compare = exp.get("compare")
    if compare is None:
        yield exp_id, _Experiment(str(exp["scenario"]), base, [], exp_id)
        return
    if not isinstance(compare, list) or not compare:
        raise PaperError(f"{where}: key `compare`: expected a non-empty list of controllers")
    flows = base.get("flow", [])
    wanted = exp.get("flow")
    names = wanted if isinstance(wanted, list) else [wanted]
    indices = []
    for name in names:
        index = next(
            (
                k
                for k, f in enumerate(flows)
                if (f.get("name") == name if name is not None else f.get("kind") in _UNDER_TEST)
            ),
            None,
        )
        if index is None:
            what = f"no flow named `{name}`" if name is not None else "no media or live flow"
            raise PaperError(f"{where}: key `flow`: {scenario_path} has {what}")
        indices.append(index)
    per_cc = exp.get("cc_config", {})
    per_cc_keys = exp.get("flow_keys", {})
    if not isinstance(per_cc_keys, Mapping) or not all(
        isinstance(v, Mapping) for v in per_cc_keys.values()
    ):
        raise PaperError(
            f"{where}: key `flow_keys`: expected {{ <controller> = {{ key = value }} }}"
        )
    for cc in compare:
        scenario = copy.deepcopy(base)
        for index in indices:
            flow = scenario["flow"][index]
            if flow.get("cc") != cc:
                flow.pop("cc_config", None)
            flow["cc"] = str(cc)
            if cc in per_cc:
                flow["cc_config"] = dict(per_cc[cc])
            flow.update(per_cc_keys.get(cc, {}))
        # Figures label their columns with the scenario name.
        scenario["name"] = f"{exp_id}-{cc}"
        # Several flows under test: the tables show their mean (`flow:*`).
        shown = "*" if len(indices) > 1 else str(scenario["flow"][indices[0]].get("name"))
        yield (
            f"{exp_id}-{cc}",
            _Experiment(str(exp["scenario"]), scenario, [], exp_id, str(cc), shown),
        )


def _substitute(value: object, names: Mapping[str, str]) -> object:
    """``value`` with every ``{name}`` placeholder in its strings replaced."""
    if isinstance(value, str):
        for name, label in names.items():
            value = value.replace("{" + name + "}", label)
        return value
    if isinstance(value, Mapping):
        return {k: _substitute(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, names) for v in value]
    return value


def _expand_claim(c: Mapping[str, Any], where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """A claim, or with ``vary`` one claim per value (or combination of values)."""
    vary = c.get("vary")
    if vary is None:
        yield where, c
        return
    tables = vary if isinstance(vary, list) else [vary]
    axes = [_vary_points(t, where, needs_key=False)[1:] for t in tables]
    names = [name for name, _ in axes]
    if len(set(names)) != len(names):
        raise PaperError(f"{where}: key `vary`: two tables vary the same name")
    for combo in itertools.product(*(points for _, points in axes)):
        labels = {name: label for name, (label, _) in zip(names, combo, strict=True)}
        fields = {k: v for k, v in c.items() if k != "vary"}
        for key in ("id", "text", "experiment", "metric", "check", "note", "unit"):
            if key in fields:
                fields[key] = _substitute(fields[key], labels)
        at = ", ".join(f"{n} = {label}" for n, label in labels.items())
        yield f"{where} ({at})", fields


def _claims(
    spec: Mapping[str, Any], path: Path, experiments: Mapping[str, Sequence[int]]
) -> list[Claim]:
    """The claims of ``paper.toml``; ``experiments`` maps each experiment id to its seeds."""
    claims = []
    seen: dict[str, str] = {}
    for i, entry in enumerate(spec.get("claim", [])):
        for where, c in _expand_claim(entry, f"{path}: claim[{i}]"):
            for key in ("id", "text", "experiment", "metric", "check"):
                if key not in c:
                    raise PaperError(f"{where}: missing key `{key}`")
            claim_id = str(c["id"])
            if claim_id in seen:
                raise PaperError(
                    f"{where}: key `id`: claim `{claim_id}` is also made by {seen[claim_id]}"
                    " (ids after expanding `vary` must be unique)"
                )
            seen[claim_id] = where.removeprefix(f"{path}: ")
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
            exp_id = str(c["experiment"])
            _check_refs(
                str(c["metric"]), exp_id, experiments, f"{where} `{claim_id}`: key `metric`"
            )
            if "metric" in check:
                _check_refs(
                    str(check["metric"]),
                    exp_id,
                    experiments,
                    f"{where} `{claim_id}`: key `check.metric`",
                )
            claims.append(
                Claim(
                    id=claim_id,
                    text=str(c["text"]),
                    experiment=exp_id,
                    metric=str(c["metric"]),
                    check=check,
                    published=None if c.get("published") is None else float(c["published"]),
                    unit=str(c.get("unit", "")),
                    note=str(c.get("note", "")).strip(),
                )
            )
    return claims


# ---- metric expressions -------------------------------------------------------------

_REFERENCE = re.compile(r"\{([^{}]*)\}")
# name -> (fewest, most) arguments
_FUNCTIONS: dict[str, tuple[int, int | None]] = {"abs": (1, 1), "min": (2, None), "max": (2, None)}
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_CALLS: dict[str, Callable[[list[float]], float]] = {
    "abs": lambda args: abs(args[0]),
    "min": min,
    "max": max,
}
_ALLOWED = "numbers, + - * /, unary minus, parentheses, abs, min, max and {metric} references"


@dataclass(frozen=True)
class _Expr:
    """A metric expression: its references and its checked syntax tree."""

    refs: tuple[tuple[str | None, str], ...]  # (experiment or None for the own one, metric)
    tree: ast.expr
    prefix: str  # reference i is the name f"{prefix}{i}" in the tree

    def evaluate(self, values: Sequence[float | None]) -> float | None:
        """The value with reference i set to ``values[i]``.

        None when a value is missing, on a division by zero or a result that
        is not finite.
        """
        if any(v is None for v in values):
            return None
        known = [float(v) for v in values if v is not None]
        try:
            result = self._eval(self.tree, known)
        except (ZeroDivisionError, OverflowError):
            return None
        return result if math.isfinite(result) else None

    def _eval(self, node: ast.expr, values: Sequence[float]) -> float:
        # Every node kind below was admitted by `_check_node`.
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.Name):
            return values[int(node.id[len(self.prefix) :])]
        if isinstance(node, ast.UnaryOp):
            return -self._eval(node.operand, values)
        if isinstance(node, ast.BinOp):
            op = _BINARY[type(node.op)]
            return op(self._eval(node.left, values), self._eval(node.right, values))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return _CALLS[node.func.id]([self._eval(a, values) for a in node.args])
        raise AssertionError(f"unchecked node {ast.dump(node)}")


def _check_node(node: ast.AST, prefix: str, n_refs: int) -> None:
    """Raise ValueError unless ``node`` is made of the allowed syntax only."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ValueError(f"`{node.value!r}` is not a number (allowed: {_ALLOWED})")
        return
    if isinstance(node, ast.Name):
        index = node.id[len(prefix) :]
        if node.id.startswith(prefix) and index.isdigit() and int(index) < n_refs:
            return
        raise ValueError(f"unknown name `{node.id}` (write a metric in braces: {{flow:...}})")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check_node(node.operand, prefix, n_refs)
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check_node(node.left, prefix, n_refs)
        _check_node(node.right, prefix, n_refs)
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ValueError(f"unknown function `{what}` (allowed: abs, min, max)")
        fewest, most = _FUNCTIONS[node.func.id]
        n = len(node.args)
        if node.keywords or n < fewest or (most is not None and n > most):
            count = f"{fewest}" if most == fewest else f"{fewest} or more"
            raise ValueError(f"`{node.func.id}` takes {count} argument(s), without names")
        for arg in node.args:
            _check_node(arg, prefix, n_refs)
        return
    raise ValueError(f"`{ast.unparse(node)}` is not allowed (allowed: {_ALLOWED})")


def _parse_expr(text: str) -> _Expr | None:
    """A metric with ``{...}`` references as an expression; None for a plain metric.

    Raises:
        ValueError: The expression is malformed or uses syntax not allowed.
    """
    if "{" not in text and "}" not in text:
        return None
    refs: list[tuple[str | None, str]] = []
    # A name the text cannot hold, so a user cannot write a reference's name.
    prefix = "_ref"
    while prefix in text:
        prefix += "_"

    def name_of(match: re.Match[str]) -> str:
        ref = match.group(1).strip()
        head, sep, rest = ref.partition(":")
        if sep and head not in ("flow", "link"):
            if not head or not rest:
                raise ValueError(f"reference `{{{ref}}}`: expected `{{<experiment>:<metric>}}`")
            refs.append((head, rest))
        elif not ref:
            raise ValueError("empty reference `{}`")
        else:
            refs.append((None, ref))
        return f" {prefix}{len(refs) - 1} "

    body = _REFERENCE.sub(name_of, text)
    if "{" in body or "}" in body:
        raise ValueError(f"`{text}`: unbalanced or nested braces")
    try:
        tree = ast.parse(body.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"`{text}`: syntax error ({e.msg})") from None
    _check_node(tree.body, prefix, len(refs))
    return _Expr(tuple(refs), tree.body, prefix)


def _check_refs(
    metric: str, exp_id: str, experiments: Mapping[str, Sequence[int]], where: str
) -> None:
    """Validate an expression metric and that every experiment it names has our seeds."""
    try:
        expr = _parse_expr(metric)
    except ValueError as e:
        raise PaperError(f"{where}: {e}") from None
    if expr is None:
        return
    for other, _ in expr.refs:
        if other is None:
            continue
        if other not in experiments:
            raise PaperError(f"{where}: `{metric}` names no experiment `{other}`")
        missing = [s for s in experiments[exp_id] if s not in experiments[other]]
        if missing:
            raise PaperError(
                f"{where}: `{metric}` takes each seed's value from `{other}`, "
                f"which has no seed {missing[0]}"
            )


def _seed_values(
    metric: str,
    exp_id: str,
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    seeds: Mapping[str, Sequence[int]],
    who: str,
) -> list[float | None]:
    """The metric (or expression) in each seed's summary of ``exp_id``.

    ``seeds[e]`` lists the seeds of ``all_summaries[e]`` in order; a reference
    to another experiment takes the same seed there.
    """
    try:
        expr = _parse_expr(metric)
    except ValueError as e:
        raise PaperError(f"{who}: {e}") from None
    summaries = all_summaries[exp_id]
    if expr is None:
        return [metric_value(s, metric) for s in summaries]
    out = []
    for seed, summary in zip(seeds[exp_id], summaries, strict=True):
        values = []
        for other, path in expr.refs:
            if other is None:
                values.append(metric_value(summary, path))
                continue
            if other not in all_summaries:
                raise PaperError(f"{who}: `{metric}` names no experiment `{other}`")
            if seed not in seeds[other]:
                raise PaperError(f"{who}: `{metric}`: experiment `{other}` has no seed {seed}")
            index = list(seeds[other]).index(seed)
            values.append(metric_value(all_summaries[other][index], path))
        out.append(expr.evaluate(values))
    return out


def _mean_of(summaries: Sequence[Mapping[str, Any]], metric: str) -> float | None:
    vals = [v for s in summaries if (v := metric_value(s, metric)) is not None]
    return sum(vals) / len(vals) if vals else None


def _split_ref(metric: str, experiments: Mapping[str, Any], default: str) -> tuple[str, str]:
    """``"<experiment>:<metric>"`` or a plain metric of ``default``."""
    head, sep, rest = metric.partition(":")
    if sep and head in experiments and head not in ("flow", "link"):
        return head, rest
    return default, metric


def _judge(
    claim: Claim,
    all_summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    seeds: Mapping[str, Sequence[int]],
) -> ClaimResult:
    """Our value of a claim and its verdict.

    ``seeds[e]`` lists the seeds of ``all_summaries[e]`` in order (expressions
    pair the seeds of different experiments).
    """
    res = ClaimResult(claim)
    values = _seed_values(
        claim.metric, claim.experiment, all_summaries, seeds, f"claim `{claim.id}`: key `metric`"
    )
    res.values = [v for v in values if v is not None]
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
        text = str(check["metric"])
        other: float | None
        if "{" in text or "}" in text:
            found = [
                v
                for v in _seed_values(
                    text,
                    claim.experiment,
                    all_summaries,
                    seeds,
                    f"claim `{claim.id}`: key `check.metric`",
                )
                if v is not None
            ]
            other = sum(found) / len(found) if found else None
        else:
            exp, other_metric = _split_ref(text, all_summaries, claim.experiment)
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


# Figures of an experiment: a column per controller (or one for a plain
# experiment); only the two kinds the paper's figures show, at a resolution
# that keeps the page and the repository light (`rtcc report` draws them all).
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
    return figures


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
    held = sum(1 for r in results if r.holds)
    lines += [f"**{held} of {len(results)} claims hold here.**", ""]
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
        group_results = [r for r in results if r.claim.experiment in ids]
        if group_results:
            lines += [
                "| claim | ours (mean; min-max over seeds) | published | holds here? | check |",
                "|---|---|---|---|---|",
            ]
        for r in group_results:
            unit = f" {r.claim.unit}" if r.claim.unit else ""
            spread = f"; {min(r.values):.4g}-{max(r.values):.4g}" if len(r.values) > 1 else ""
            verdict = {True: "yes", False: "**no**", None: "n/a"}[r.holds]
            lines.append(
                f"| {r.claim.text} | {_fmt(r.mean)}{unit}{spread} | "
                f"{_fmt(r.claim.published)}{unit if r.claim.published is not None else ''} | "
                f"{verdict} | {r.why} |"
            )
        lines.append("")
        for r in group_results:
            if r.claim.note:
                lines += [f"- `{r.claim.id}`: {r.claim.note}"]
        if any(r.claim.note for r in group_results):
            lines.append("")
        for p in figures.get(group, []):
            rel = os.path.relpath(p, base)
            lines.append(f"![{group} {p.stem}]({rel})")
        lines.append("")
    return "\n".join(lines)
