"""``paper.toml``: experiments (with ``compare`` and ``vary`` expanded) and claims.

The format is documented in ``docs/reproduce.md``; every error names the file,
the entry and the key.
"""

from __future__ import annotations

import copy
import itertools
import operator
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtcc._native import ScenarioError
from rtcc.reproduce.expressions import _parse_expr
from rtcc.sweep import GridError, _assign, _check_path

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


# Flow kinds `compare` picks by default (the first one in the scenario).
_UNDER_TEST = ("media", "live")
# Flow kinds that carry video frames.
_VIDEO = ("media", "live", "multipath-media")


class PaperError(ScenarioError):
    """A paper folder or its ``paper.toml`` is unusable; names file, entry and key."""


def load_toml(path: Path) -> dict[str, Any]:
    """A TOML file (``paper.toml`` or a scenario) as a table.

    Raises:
        PaperError: The file is not valid TOML (names the file, line and column).
    """
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise PaperError(f"{path}: {e}") from None


# The check `paper.toml` gives a published number without its own error bars:
# ±30 % of the number (docs/reproduce.md, rule 2).
DEFAULT_TOLERANCE = 0.3
# Seeds a full run of an experiment has at least (docs/reproduce.md, rule 3).
DEFAULT_MIN_SEEDS = 5


@dataclass(frozen=True)
class Condition:
    """One test a claim makes, evaluated per seed and on the mean over seeds.

    ``metric`` (a path or an expression of the claim's experiment) is compared
    by ``op`` with ``value``, or with ``factor`` times ``ref`` (a metric, an
    expression, or ``<experiment>:<metric>``); with ``op = "in"`` it must lie
    in ``[lo, hi]``.
    """

    metric: str
    op: str
    value: float | None = None
    ref: str | None = None
    factor: float = 1.0
    lo: float | None = None
    hi: float | None = None

    @property
    def absolute(self) -> bool:
        """Whether the condition tests a value rather than compares with a metric."""
        return self.ref is None


@dataclass(frozen=True)
class Claim:
    """One claim of ``paper.toml`` (``docs/reproduce.md``, "Claims")."""

    id: str
    text: str
    experiment: str
    metric: str
    check: Mapping[str, Any] = field(default_factory=dict)
    published: float | None = None
    unit: str = ""
    note: str = ""
    tolerance: float | None = None
    published_range: tuple[float, float] | None = None
    also: tuple[Mapping[str, Any], ...] = ()
    baselines: tuple[str, ...] | None = None
    collapse_expected: str = ""

    def conditions(self) -> list[Condition]:
        """Every test of the claim: its ``check``, the published number, ``also``."""
        out = []
        check = self.check
        if check and "within" not in check:
            out.append(_condition(self.metric, check))
        if self.published_range is not None:
            lo, hi = self.published_range
            out.append(Condition(self.metric, "in", lo=lo, hi=hi))
        elif self.published is not None:
            tol = float(check["within"]) if "within" in check else self.tolerance
            tol = DEFAULT_TOLERANCE if tol is None else tol
            half = tol * abs(self.published)
            out.append(
                Condition(self.metric, "in", lo=self.published - half, hi=self.published + half)
            )
        for extra in self.also:
            check = {k: v for k, v in extra.items() if k not in ("metric", "than")}
            if "than" in extra:
                check["metric"] = extra["than"]
            out.append(_condition(str(extra.get("metric", self.metric)), check))
        return out

    @property
    def absolute(self) -> bool:
        """Whether the claim says the system reaches a value (rule 5).

        Its own check is against a constant (or a published number) and its
        metric reads one flow, or no flow in particular, of its own
        experiment. A metric that relates two flows or two experiments (a
        gain over a baseline) is a comparison, however it is checked.
        """
        conditions = self.conditions()
        if not conditions or not conditions[0].absolute:
            return False
        try:
            expr = _parse_expr(self.metric)
        except ValueError:
            return True
        if expr is None:
            return True
        if any(other is not None and other != self.experiment for other, _ in expr.refs):
            return False
        flows = {
            path[5:].partition(".")[0]
            for _, path in expr.refs
            if path.startswith("flow:") and not path.startswith("flow:*.")
        }
        return len(flows) <= 1


def _condition(metric: str, check: Mapping[str, Any]) -> Condition:
    """A validated ``{ op = ..., value | metric = ..., factor = ... }``."""
    if "metric" in check and "value" not in check:
        return Condition(
            metric, str(check["op"]), ref=str(check["metric"]), factor=float(check.get("factor", 1))
        )
    return Condition(metric, str(check["op"]), value=float(check["value"]))


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
    # The flow whose bandwidth estimates are scored (`estimates` key).
    estimates: str | None = None
    # Flows whose cc_trace.csv variables get window metrics (`trace` key).
    trace: tuple[str, ...] = ()
    # The report shows every flow's window metrics (`window_table` key).
    window_table: bool = False

    def flows_under_test(self) -> tuple[str, ...]:
        """The flows ``compare`` gives the controller, else every video flow."""
        flows = self.scenario.get("flow", [])
        if self.cc is not None:
            return tuple(str(f.get("name")) for f in flows if f.get("cc") == self.cc)
        return tuple(str(f.get("name")) for f in flows if f.get("kind") in _VIDEO)

    def frames(self) -> dict[str, float]:
        """Frames each video flow's encoder produces in the run (fps x time active)."""
        out = {}
        duration = _seconds(self.scenario.get("duration", "60s"))
        for f in self.scenario.get("flow", []):
            if f.get("kind") not in _VIDEO:
                continue
            encoder = f.get("encoder", {})
            fps = float(encoder.get("fps", 30)) if isinstance(encoder, Mapping) else 30.0
            start = _seconds(f.get("start", 0.0))
            stop = min(duration, _seconds(f.get("stop", duration)))
            out[str(f.get("name"))] = max(0.0, stop - start) * fps
        return out


@dataclass(frozen=True)
class _Sweep:
    """Where an experiment sits in the expansion of a ``vary``."""

    id: str  # the `[[experiment]]` id before expansion
    key: str  # the dotted path varied
    name: str
    label: str  # the value as written in the expanded id
    columns: tuple[str, ...] = ()


def _seconds(value: object) -> float:
    """``"50s"``, ``"250ms"``, ``"2min"`` or a number of seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    for suffix, scale in (("ms", 1e-3), ("min", 60.0), ("s", 1.0)):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * scale
            except ValueError:
                break
    raise ValueError(f'`{value}` is not a duration like "50s" or "250ms"')


# A window bound: a duration, `end` (the run's end), or `last_start` (the
# latest start of a flow) plus an optional settling time.
_BOUND = re.compile(r"^\s*(?:(end)|last_start\s*(?:\+\s*(\S+))?)\s*$")


def _bound(value: object, scenario: Mapping[str, Any]) -> float:
    """A window bound in seconds, for this scenario (``docs/reproduce.md``, "Windows")."""
    match = _BOUND.match(value) if isinstance(value, str) else None
    if match is None:
        return _seconds(value)
    if match.group(1):
        return _seconds(scenario.get("duration", "60s"))
    starts = [_seconds(f.get("start", 0.0)) for f in scenario.get("flow", [])]
    settle = _seconds(match.group(2)) if match.group(2) else 0.0
    return max(starts, default=0.0) + settle


def _check_windows(value: object, where: str) -> Mapping[str, Any]:
    """``windows = { name = [start, end] }``, checked for shape; bounds resolve per scenario."""
    if not isinstance(value, Mapping):
        raise PaperError(f"{where}: key `windows`: expected a table of [start, end] pairs")
    for name, pair in value.items():
        if not isinstance(pair, list) or len(pair) != 2:
            raise PaperError(f"{where}: key `windows.{name}`: expected [start, end], got {pair!r}")
    return value


def _resolve_windows(
    value: Mapping[str, Any], scenario: Mapping[str, Any], where: str, quick: bool = False
) -> dict[str, tuple[float, float]]:
    """The windows as ``[start, end)`` seconds in this scenario.

    In a quick run a window may start after the shortened run ends: it is
    left out (its metrics are then missing and claims on them are n/a).
    """
    out = {}
    for name, pair in value.items():
        try:
            start, end = (_bound(x, scenario) for x in pair)
        except ValueError as e:
            raise PaperError(f"{where}: key `windows.{name}`: {e}") from None
        if quick and start >= _seconds(scenario.get("duration", "60s")):
            continue
        if not start < end:
            raise PaperError(
                f"{where}: key `windows.{name}`: start {pair[0]} ({start:g} s) is not before "
                f"end {pair[1]} ({end:g} s)"
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


# The keys of an `[[experiment]]` (docs/reproduce.md, "The format").
_EXPERIMENT_KEYS = frozenset(
    {
        "id",
        "scenario",
        "seeds",
        "quick",
        "set",
        "compare",
        "flow",
        "windows",
        "cc_config",
        "flow_keys",
        "vary",
        "estimates",
        "trace",
        "window_table",
    }
)


def _experiments(spec: Mapping[str, Any], path: Path, quick: bool) -> dict[str, _Experiment]:
    out: dict[str, _Experiment] = {}
    origin: dict[str, str] = {}  # expanded id -> the entry that made it
    min_seeds = spec.get("min_seeds", DEFAULT_MIN_SEEDS)
    if isinstance(min_seeds, bool) or not isinstance(min_seeds, int) or min_seeds < 1:
        raise PaperError(f"{path}: key `min_seeds`: expected a whole number ≥ 1, got {min_seeds!r}")

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
        unknown = sorted(set(exp) - _EXPERIMENT_KEYS)
        if unknown:
            allowed = ", ".join(sorted(_EXPERIMENT_KEYS))
            raise PaperError(f"{where}: unknown key `{unknown[0]}` (allowed: {allowed})")
        exp_id = str(exp["id"])
        if _BAD_ID_CHARS.search(exp_id):
            raise PaperError(
                f"{where}: key `id`: `{exp_id}` holds `:`, a brace, a slash or a space"
            )
        scenario_path = path.parent / str(exp["scenario"])
        if not scenario_path.is_file():
            raise PaperError(f"{where}: key `scenario`: no file {scenario_path}")
        loaded = load_toml(scenario_path)
        variant = exp.get("quick", {}) if quick else {}
        seeds = [int(s) for s in variant.get("seeds", exp.get("seeds", [1]))]
        if len(set(seeds)) != len(seeds):
            raise PaperError(f"{where}: key `seeds`: a seed is listed twice: {seeds}")
        if not quick and len(seeds) < min_seeds:
            raise PaperError(
                f"{where}: key `seeds`: {len(seeds)} seed(s); a full run needs at least "
                f"{min_seeds} (docs/reproduce.md, rule 3)"
            )
        settings = exp.get("set", {})
        if not isinstance(settings, Mapping):
            raise PaperError(f"{where}: key `set`: expected a table of dotted paths")
        windows = _check_windows(exp.get("windows", {}), where)
        estimates = exp.get("estimates")
        if estimates is not None and not isinstance(estimates, str):
            raise PaperError(f"{where}: key `estimates`: expected a flow name")
        if estimates is not None and estimates not in {
            str(f.get("name")) for f in loaded.get("flow", [])
        }:
            raise PaperError(f"{where}: key `estimates`: no flow named `{estimates}`")
        traced = exp.get("trace", [])
        if isinstance(traced, str):
            traced = [traced]
        if not isinstance(traced, list) or not all(isinstance(f, str) for f in traced):
            raise PaperError(f"{where}: key `trace`: expected a flow name or a list of them")
        names = {str(f.get("name")) for f in loaded.get("flow", [])}
        for flow in traced:
            if flow not in names:
                raise PaperError(f"{where}: key `trace`: no flow named `{flow}`")
        if traced and not windows:
            raise PaperError(f"{where}: key `trace`: needs `windows` to measure over")
        window_table = exp.get("window_table", False)
        if not isinstance(window_table, bool):
            raise PaperError(f"{where}: key `window_table`: expected true or false")
        if window_table and not windows:
            raise PaperError(f"{where}: key `window_table`: needs `windows` to tabulate")
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
                experiment.windows = _resolve_windows(windows, experiment.scenario, where, quick)
                experiment.sweep = point_sweep
                experiment.estimates = estimates
                experiment.trace = tuple(traced)
                experiment.window_table = window_table
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
        for key in (
            "id",
            "text",
            "experiment",
            "metric",
            "check",
            "note",
            "unit",
            "also",
            "baselines",
            "collapse_expected",
        ):
            if key in fields:
                fields[key] = _substitute(fields[key], labels)
        at = ", ".join(f"{n} = {label}" for n, label in labels.items())
        yield f"{where} ({at})", fields


_CLAIM_KEYS = frozenset(
    {
        "id",
        "text",
        "experiment",
        "metric",
        "check",
        "published",
        "tolerance",
        "published_range",
        "unit",
        "note",
        "also",
        "baselines",
        "collapse_expected",
        "vary",
    }
)
_CHECK_FORMS = (
    '{ op = "<", value = X }, { op = "<", metric = "...", factor = F } '
    "or { within = 0.1 } (with `published`)"
)


def _number(value: object, where: str, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PaperError(f"{where}: key `{key}`: expected a number, got {value!r}")
    return float(value)


def _valid_check(check: object, where: str, key: str) -> Mapping[str, Any]:
    """A comparison ``{ op, value | metric, factor }``."""
    if not (
        isinstance(check, Mapping)
        and check.get("op") in _OPS
        and (("value" in check) != ("metric" in check))
        and set(check) <= {"op", "value", "metric", "factor", "text"}
    ):
        raise PaperError(f"{where}: key `{key}`: expected {_CHECK_FORMS}, got {check!r}")
    if "value" in check:
        _number(check["value"], where, f"{key}.value")
    if "factor" in check:
        _number(check["factor"], where, f"{key}.factor")
    return check


def _claims(
    spec: Mapping[str, Any], path: Path, experiments: Mapping[str, Sequence[int]]
) -> list[Claim]:
    """The claims of ``paper.toml``; ``experiments`` maps each experiment id to its seeds."""
    claims = []
    seen: dict[str, str] = {}
    for i, entry in enumerate(spec.get("claim", [])):
        for where, c in _expand_claim(entry, f"{path}: claim[{i}]"):
            for key in ("id", "text", "experiment", "metric"):
                if key not in c:
                    raise PaperError(f"{where}: missing key `{key}`")
            unknown = sorted(set(c) - _CLAIM_KEYS)
            if unknown:
                allowed = ", ".join(sorted(_CLAIM_KEYS))
                raise PaperError(f"{where}: unknown key `{unknown[0]}` (allowed: {allowed})")
            claim_id = str(c["id"])
            if claim_id in seen:
                raise PaperError(
                    f"{where}: key `id`: claim `{claim_id}` is also made by {seen[claim_id]}"
                    " (ids after expanding `vary` must be unique)"
                )
            seen[claim_id] = where.removeprefix(f"{path}: ")
            where = f"{where} `{claim_id}`"
            if c["experiment"] not in experiments:
                raise PaperError(f"{where}: key `experiment`: no experiment `{c['experiment']}`")
            exp_id = str(c["experiment"])
            published = (
                None if c.get("published") is None else _number(c["published"], where, "published")
            )
            check = c.get("check", {})
            if "within" in check:
                if published is None or set(check) != {"within"}:
                    raise PaperError(f"{where}: key `check`: `within` needs `published`, alone")
                _number(check["within"], where, "check.within")
            elif check or published is None:
                if not check and published is None:
                    raise PaperError(f"{where}: needs `check`, `published` or both")
                _valid_check(check, where, "check")
            tolerance = c.get("tolerance")
            if tolerance is not None:
                tolerance = _number(tolerance, where, "tolerance")
                if tolerance <= 0 or published is None or "within" in check:
                    raise PaperError(
                        f"{where}: key `tolerance`: a positive fraction of `published` "
                        "(and no `check.within`)"
                    )
            span = c.get("published_range")
            published_range = None
            if span is not None:
                if not (isinstance(span, list) and len(span) == 2):
                    raise PaperError(f"{where}: key `published_range`: expected [low, high]")
                lo, hi = (_number(x, where, "published_range") for x in span)
                if not lo <= hi or tolerance is not None or "within" in check:
                    raise PaperError(
                        f"{where}: key `published_range`: [low, high] with low ≤ high, "
                        "instead of `tolerance` or `check.within`"
                    )
                published_range = (lo, hi)
            also = c.get("also", [])
            if not isinstance(also, list):
                raise PaperError(f"{where}: key `also`: expected a list of checks")
            for k, extra in enumerate(also):
                _valid_check(_also_as_check(extra, where, k), where, f"also[{k}]")
            baselines = c.get("baselines")
            if baselines is not None:
                if not (isinstance(baselines, list) and all(isinstance(b, str) for b in baselines)):
                    raise PaperError(f"{where}: key `baselines`: expected a list of experiment ids")
                for b in baselines:
                    if b not in experiments:
                        raise PaperError(f"{where}: key `baselines`: no experiment `{b}`")
            _check_refs(str(c["metric"]), exp_id, experiments, f"{where}: key `metric`")
            refs = [("check.metric", check.get("metric"))]
            for k, extra in enumerate(also):
                refs += [(f"also[{k}].metric", extra.get("metric"))]
                refs += [(f"also[{k}].than", extra.get("than"))]
            for key, text in refs:
                if text is not None:
                    _check_refs(str(text), exp_id, experiments, f"{where}: key `{key}`")
            claims.append(
                Claim(
                    id=claim_id,
                    text=str(c["text"]),
                    experiment=exp_id,
                    metric=str(c["metric"]),
                    check=check,
                    published=published,
                    unit=str(c.get("unit", "")),
                    note=str(c.get("note", "")).strip(),
                    tolerance=tolerance,
                    published_range=published_range,
                    also=tuple(also),
                    baselines=None if baselines is None else tuple(baselines),
                    collapse_expected=str(c.get("collapse_expected", "")).strip(),
                )
            )
    return claims


def _also_as_check(extra: object, where: str, k: int) -> Mapping[str, Any]:
    """An ``also`` entry in the form of a check (``than`` is its reference metric)."""
    if not isinstance(extra, Mapping):
        raise PaperError(f"{where}: key `also[{k}]`: expected a table, got {extra!r}")
    unknown = sorted(set(extra) - {"metric", "op", "value", "than", "factor", "text"})
    if unknown:
        raise PaperError(f"{where}: key `also[{k}]`: unknown key `{unknown[0]}`")
    out = {x: v for x, v in extra.items() if x not in ("metric", "than")}
    if "than" in extra:
        out["metric"] = extra["than"]
    return out


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
