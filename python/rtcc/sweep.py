"""``rtcc.sweep``: one scenario run over a grid of parameter values and seeds.

A grid file is TOML (docs/sweeps.md)::

    base = "../tests/gcc-1mbps.toml"   # relative to this file; or an inline [base] table
    seeds = [1, 2]                       # or `seeds = 3`, meaning 1, 2, 3

    [grid]                               # dotted paths into the scenario, each a list
    "link.0.rate" = ["1Mbps", "2Mbps"]
    "flow.0.cc" = ["gcc", "fixed"]

    [[runs]]                             # optional extra parameter sets
    "link.0.rate" = "500kbps"
    "link.0.delay" = "80ms"

The runs are the Cartesian product of the ``[grid]`` lists and the seeds, plus
each ``[[runs]]`` entry with every seed (or with its own ``seed`` / list of
seeds). A dotted path names tables by key and arrays of tables by index
(``flow.0.encoder.fps``); an unquoted dotted TOML key (``link.0.rate = [...]``)
means the same. The arrays and tables it passes through must exist in the base
(except a missing last table, which is created); a path the scenario format
does not know is a :class:`GridError` naming the grid file and the key, raised
before anything runs. A bad *value* is not: its runs are recorded with
``status = "error"`` and the others go on.

Each run has a stable id, a short hash of its scenario (the base with the
parameters applied) and seed, and its own directory ``OUT/runs/<id>/`` with
``scenario.toml`` (replay it with ``rtcc run``), ``params.json`` and the run's
``summary.json``, ``timeseries.csv`` and ``frames.csv``. A run whose directory
already holds a complete ``summary.json`` is not run again, so an interrupted
sweep resumes where it stopped. All rows go to ``OUT/results.parquet`` (one row
per run and flow, see :func:`sweep`); ``OUT/sweep.json`` says how many runs
were executed, reused and failed, and how long they took.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import itertools
import json
import multiprocessing
import os
import re
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl
import tomli_w
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from rtcc import _native
from rtcc._api import _coerce_table
from rtcc._native import ScenarioError

__all__ = ["GridError", "SweepStats", "sweep"]

# Name given to a dict grid in error messages.
DICT_GRID_ORIGIN = "<grid>"

# A seed is a u64 in the simulator.
_SEED_MAX = 2**64 - 1
#: The most runs one sweep may hold (docs/sweeps.md): a hundred thousand runs
#: of a minute each is already weeks of CPU; a larger grid is a typo.
MAX_RUNS = 100_000

# Hex digits of a run id: 48 bits, so a collision among a million runs has a
# probability of about 2e-3 (birthday bound n²/2·2⁻⁴⁸).
_RUN_ID_HEX = 12

# Output files of one run; summary.json last, because its presence marks a
# complete run.
_RUN_FILES = ("timeseries.csv", "frames.csv", "summary.json")

# Columns every row has, ahead of the grid parameters and the metrics.
_KEY_COLUMNS = ("run_id", "seed")
_STATUS_COLUMNS = ("status", "error")

Backend = Literal["local", "ray"]


class GridError(ScenarioError):
    """A grid file (or dict) that cannot describe a sweep: names the file and the key."""


@dataclass(frozen=True)
class SweepStats:
    """What a sweep did; written to ``OUT/sweep.json``.

    Attributes:
        runs: Runs in the grid.
        executed: Runs simulated by this call (the others were reused).
        reused: Runs whose complete results were already on disk.
        failed: Runs recorded with ``status = "error"``.
        wall_s: Wall-clock time of the whole call, seconds.
        run_s: Sum over executed runs of the time spent inside the worker
            (simulation plus writing its files), seconds.
        backend: ``"local"`` or ``"ray"``.
        jobs: Worker processes (local) or CPUs asked of a local Ray instance;
            0 when an existing Ray cluster was used.

    """

    runs: int
    executed: int
    reused: int
    failed: int
    wall_s: float
    run_s: float
    backend: str
    jobs: int


def sweep(
    grid: str | os.PathLike[str] | Mapping[str, Any],
    *,
    out: str | os.PathLike[str],
    backend: Backend = "local",
    jobs: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> pl.DataFrame:
    """Run every point of a grid and collect the results in one table.

    Args:
        grid: Path of a grid TOML file (see the module documentation and
            docs/sweeps.md), or a dict with the same structure; a ``base``
            path in a dict is relative to the working directory.
        out: Directory for ``runs/<id>/``, ``results.parquet`` and
            ``sweep.json``; created if missing. Runs already complete in it
            are reused, not run again.
        backend: ``"local"``: a pool of worker processes on this machine.
            ``"ray"``: Ray tasks, on the cluster at ``address`` or on a local
            Ray instance (an already initialised Ray is used as is).
        jobs: Parallel runs: worker processes (local) or CPUs of a local Ray
            instance. Default: every CPU this process may use.
        address: Address of a Ray cluster (``backend="ray"`` only). Its
            workers need rtcc installed; files come back to this machine.
        progress: Show a progress bar with an ETA on a terminal.

    Returns:
        The table written to ``OUT/results.parquet``: one row per run and
        flow (one row for a failed run), sorted by ``run_id`` and then in the
        scenario's flow order. Columns: ``run_id``, ``seed``, one per grid
        parameter (named by its dotted path; null where a ``[[runs]]`` entry
        leaves it at the base value), ``status`` (``"ok"`` or ``"error"``),
        ``error`` (the message, else null), ``scenario``, ``duration_s``,
        ``flow``, ``kind``, ``cc``, each flow metric with nested names joined
        by ``_`` (``frame_delay_ms_mean``), each link metric as
        ``link_<name>_<metric>`` and ``fairness_jain``. Metrics that do not
        apply to a flow are null. Nothing in it depends on the backend, the
        number of jobs or timing.

    Raises:
        GridError: The grid is unusable: the message names the grid file and key.
        ScenarioError: The base scenario file cannot be read, or ``out``
            cannot be created.
        ValueError: A bad ``backend``, ``jobs`` or ``address``.
        ImportError: ``backend="ray"`` without Ray installed (``pip install rtcc[ray]``).

    """
    table, _ = _sweep(grid, out=out, backend=backend, jobs=jobs, address=address, progress=progress)
    return table


# ---------------------------------------------------------------------------
# Grid


@dataclass(frozen=True)
class _RunSpec:
    run_id: str
    seed: int
    params: dict[str, Any]
    # The base with the parameters applied, as a TOML-ready dict.
    scenario: dict[str, Any]


@dataclass(frozen=True)
class _Grid:
    origin: str
    keys: list[str]
    runs: list[_RunSpec]
    # Folders a relative trace path is looked up from, after the working directory.
    search_dirs: list[Path]


def _load_grid(grid: str | os.PathLike[str] | Mapping[str, Any]) -> _Grid:
    if isinstance(grid, Mapping):
        origin = DICT_GRID_ORIGIN
        grid_dir: Path | None = None
        doc: dict[str, Any] = _coerce_table(grid)
    elif isinstance(grid, str | os.PathLike):
        path = Path(grid)
        origin = os.fspath(grid)
        grid_dir = path.parent
        try:
            with path.open("rb") as f:
                doc = tomllib.load(f)
        except OSError as e:
            raise GridError(f"{origin}: cannot read grid file: {e.strerror}") from e
        except tomllib.TOMLDecodeError as e:
            raise GridError(f"{origin}: invalid TOML: {e}") from e
    else:
        raise TypeError(f"grid must be a path or a dict, not {type(grid).__name__}")

    unknown = sorted(set(doc) - {"base", "grid", "seeds", "runs"})
    if unknown:
        raise GridError(
            f"{origin}: key `{unknown[0]}`: unknown grid key (expected base, grid, seeds, runs)"
        )

    base, base_dir = _load_base(doc.get("base"), origin, grid_dir)
    seeds = _seeds(doc.get("seeds"), origin, "seeds", default=[_base_seed(base, origin)])

    grid_table = doc.get("grid", {})
    if not isinstance(grid_table, Mapping):
        raise GridError(f"{origin}: key `grid`: must be a table of dotted paths to lists")
    axes: dict[str, list[Any]] = {}
    for key, values in _flatten_keys(grid_table):
        if not isinstance(values, list) or not values:
            raise GridError(f"{origin}: key `grid.{key}`: must be a non-empty list of values")
        axes[key] = values

    extra = doc.get("runs", [])
    if not isinstance(extra, list) or not all(isinstance(r, Mapping) for r in extra):
        raise GridError(f"{origin}: key `runs`: must be an array of tables ([[runs]])")

    # Sized before anything is built: a grid of a hundred million runs would
    # otherwise fill the memory listing them.
    combos = 1
    for values in axes.values():
        combos *= len(values)
    planned = combos * len(seeds) + len(extra) * len(seeds)
    if planned > MAX_RUNS:
        raise GridError(
            f"{origin}: the grid has {planned} runs ({combos} points x {len(seeds)} seeds"
            f"{f' + {len(extra)} [[runs]]' if extra else ''}), above the limit of {MAX_RUNS}; "
            "split it into several sweeps"
        )
    points: list[tuple[dict[str, Any], list[int]]] = [
        (dict(zip(axes, combo, strict=True)), seeds) for combo in itertools.product(*axes.values())
    ]
    for i, entry in enumerate(extra):
        params = dict(_flatten_keys({k: v for k, v in entry.items() if k != "seed"}))
        run_seeds = seeds
        if "seed" in entry:
            # Here an integer is one seed, not a count.
            pinned = entry["seed"]
            pinned = (
                [pinned] if isinstance(pinned, int) and not isinstance(pinned, bool) else pinned
            )
            run_seeds = _seeds(pinned, origin, f"runs[{i}].seed", default=seeds)
        points.append((params, run_seeds))

    keys = list(dict.fromkeys(k for params, _ in points for k in params))
    reserved = set(_KEY_COLUMNS) | set(_STATUS_COLUMNS)
    for key in keys:
        if key in reserved:
            raise GridError(f"{origin}: key `{key}`: reserved; use `seeds` to vary the seed")
        _check_path(base, key, origin)
    _probe_fields(base, points, origin)

    runs: dict[str, _RunSpec] = {}
    for params, run_seeds in points:
        scenario = _copy_table(base)
        for key, value in params.items():
            _assign(scenario, key, value, origin)
        for seed in run_seeds:
            run_id = _run_id(scenario, seed)
            # An explicit run equal to a grid point is the same run: keep one.
            runs.setdefault(run_id, _RunSpec(run_id, seed, params, scenario))

    search_dirs = [d for d in (base_dir, grid_dir) if d is not None]
    return _Grid(origin, keys, sorted(runs.values(), key=lambda r: r.run_id), search_dirs)


def _load_base(
    base: object, origin: str, grid_dir: Path | None
) -> tuple[dict[str, Any], Path | None]:
    if isinstance(base, Mapping):
        return _coerce_table(base), None
    if isinstance(base, str):
        path = Path(base) if grid_dir is None else grid_dir / base
        try:
            with path.open("rb") as f:
                scenario = tomllib.load(f)
        except OSError as e:
            raise GridError(f"{origin}: key `base`: cannot read {path}: {e.strerror}") from e
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{path}: invalid TOML: {e}") from e
        # The simulator names a file scenario after its stem; keep that name.
        scenario.setdefault("name", path.stem)
        return scenario, path.parent
    if base is None:
        raise GridError(f"{origin}: key `base`: missing (a scenario path or a [base] table)")
    raise GridError(f"{origin}: key `base`: must be a scenario path or a [base] table")


def _base_seed(base: Mapping[str, Any], origin: str) -> int:
    seed = base.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GridError(f"{origin}: key `base.seed`: must be an integer, got {seed!r}")
    return seed


def _seeds(value: object, origin: str, key: str, *, default: list[int]) -> list[int]:
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_RUNS:
            raise GridError(
                f"{origin}: key `{key}`: a count of seeds must be in [1, {MAX_RUNS}], got {value}"
            )
        return list(range(1, value + 1))
    if isinstance(value, list) and value:
        for seed in value:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _SEED_MAX:
                raise GridError(f"{origin}: key `{key}`: bad seed {seed!r} (0 <= seed < 2**64)")
        return list(dict.fromkeys(value))
    raise GridError(f"{origin}: key `{key}`: must be a count or a non-empty list of seeds")


def _flatten_keys(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Nested tables become dotted keys: ``{"link": {"0": {"rate": v}}}`` is ``link.0.rate``."""
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten_keys(value, f"{name}.")
        else:
            yield name, value


def _split(key: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in key.split(".")]


def _check_path(base: Mapping[str, Any], key: str, origin: str) -> None:
    """Every table and array a path goes through exists in the base (the last table may not)."""
    parts = _split(key)
    if any(p == "" for p in parts):
        raise GridError(f"{origin}: key `{key}`: empty component in dotted path")
    node: Any = base
    for depth, part in enumerate(parts[:-1]):
        here = ".".join(map(str, parts[: depth + 1]))
        if isinstance(part, int):
            if not isinstance(node, list):
                raise GridError(f"{origin}: key `{key}`: `{here}` indexes something not an array")
            if part >= len(node):
                raise GridError(
                    f"{origin}: key `{key}`: index {part} out of range "
                    f"(the base has {len(node)} entries there)"
                )
            node = node[part]
        else:
            if not isinstance(node, Mapping):
                raise GridError(f"{origin}: key `{key}`: `{here}` is inside a non-table value")
            if part not in node:
                if isinstance(parts[depth + 1], int):
                    raise GridError(f"{origin}: key `{key}`: the base has no `{here}` array")
                return  # a missing table is created; the simulator checks its name
            node = node[part]
    if isinstance(parts[-1], int) and not (isinstance(node, list) and parts[-1] < len(node)):
        raise GridError(f"{origin}: key `{key}`: index {parts[-1]} out of range")


def _assign(scenario: dict[str, Any], key: str, value: object, origin: str) -> None:
    parts = _split(key)
    node: Any = scenario
    for part, after in itertools.pairwise(parts):
        if isinstance(part, int):
            node = node[part]
        else:
            if part not in node:
                node[part] = [] if isinstance(after, int) else {}
            node = node[part]
    last = parts[-1]
    settable = isinstance(last, int) if isinstance(node, list) else isinstance(node, dict)
    if not settable:  # _check_path has ruled this out
        raise GridError(f"{origin}: key `{key}`: cannot be set in the base scenario")
    node[last] = _deep_copy(value)


_KEY_IN_ERROR = re.compile(r"key `([^`]*)`")
_UNKNOWN_NAME = re.compile(r"unknown (?:field|key) `([^`]*)`")


def _probe_fields(
    base: dict[str, Any], points: Sequence[tuple[dict[str, Any], list[int]]], origin: str
) -> None:
    """Ask the simulator's parser whether each new field exists, before any run.

    Only paths whose last key is absent from the base need asking. A probe is
    a grid point (the base with all its parameters set) simulated for 1 ms. A
    field is unknown when the parser rejects it as such in every point that
    sets it: some fields exist only beside some values of another (the
    ``cc_config`` keys of each ``cc``). An error of any other kind (a bad
    value) is left for the runs to record.
    """
    absent = dict.fromkeys(k for params, _ in points for k in params if not _present(base, k))
    with tempfile.TemporaryDirectory(prefix="rtcc-probe-") as tmp:
        for key in absent:
            rust_key = re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", key)
            detail = ""
            tried: set[str] = set()
            for params, _ in points:
                if key not in params:
                    continue
                scenario = _copy_table(base)
                for name, value in params.items():
                    _assign(scenario, name, value, origin)
                scenario["duration"] = "1ms"
                # Every flow must start within that millisecond to be valid.
                for flow in scenario.get("flow", []):
                    if isinstance(flow, dict):
                        for timing in ("start", "stop", "start_jitter", "pause"):
                            flow.pop(timing, None)
                text = _dumps(scenario)
                if text in tried:
                    continue
                tried.add(text)
                detail = _unknown_field(text, rust_key, origin, tmp)
                if not detail:
                    break
            if detail:
                raise GridError(f"{origin}: key `{key}`: not a scenario field ({detail})")


def _unknown_field(text: str, rust_key: str, origin: str, out_dir: str) -> str:
    """The parser's message if it rejects ``rust_key`` (or a table on its path) as unknown."""
    try:
        _native.run(toml_text=text, origin=origin, out_dir=out_dir, seed=1)
    except ScenarioError as e:
        message = str(e)
        found = _KEY_IN_ERROR.search(message)
        unknown = _UNKNOWN_NAME.search(message)
        if found is None or unknown is None:
            return ""
        # The parser names either the unknown key itself (`link[0].dealy`:
        # unknown field) or its table (`flow[0].cc_config`: unknown key `x`).
        table, name = found.group(1), unknown.group(1)
        culprit = table if table.split(".")[-1] == name else f"{table}.{name}"
        if rust_key == culprit or rust_key.startswith((f"{culprit}.", f"{culprit}[")):
            return message.split(": ", 2)[-1]
    return ""


def _present(base: Mapping[str, Any], key: str) -> bool:
    node: Any = base
    for part in _split(key):
        if isinstance(node, list):
            found = isinstance(part, int) and part < len(node)
        else:
            found = isinstance(node, Mapping) and part in node
        if not found:
            return False
        node = node[part]
    return True


def _copy_table(table: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) for k, v in table.items()}


def _deep_copy(value: object) -> object:
    # Grid values and scenarios are TOML data: tables, arrays and scalars.
    if isinstance(value, Mapping):
        return _copy_table(value)
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _run_id(scenario: Mapping[str, Any], seed: int) -> str:
    canonical = json.dumps(
        {"scenario": scenario, "seed": seed}, sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:_RUN_ID_HEX]


def _dumps(scenario: Mapping[str, Any]) -> str:
    return tomli_w.dumps(scenario)


def _resolve_traces(scenario: dict[str, Any], search_dirs: Sequence[Path]) -> dict[str, Any]:
    """Absolute trace paths, looked up as the simulator does for a scenario file.

    The working directory first, then each search folder and every folder above
    it; a path found nowhere is left for the simulator to report.
    """
    links = scenario.get("link")
    if not isinstance(links, list):
        return scenario
    resolved = _copy_table(scenario)
    for link in resolved["link"]:
        trace = link.get("trace") if isinstance(link, dict) else None
        if not isinstance(trace, str) or Path(trace).is_absolute():
            continue
        candidates = [Path(trace)] + [
            folder / trace for d in search_dirs for folder in (d.resolve(), *d.resolve().parents)
        ]
        found = next((c for c in candidates if c.exists()), None)
        if found is not None:
            link["trace"] = str(found.resolve())
    return resolved


# ---------------------------------------------------------------------------
# Execution


@dataclass(frozen=True)
class _Task:
    run_id: str
    seed: int
    toml_text: str
    # Name of the scenario in error messages: the same whatever OUT and the backend.
    origin: str
    # Write the run's files here; None: return them (workers on other machines).
    run_dir: str | None


@dataclass(frozen=True)
class _Outcome:
    run_id: str
    summary_json: str | None
    error: str | None
    files: dict[str, bytes]
    elapsed_s: float


def _execute(task: _Task) -> _Outcome:
    """Run one grid point in a worker; never raises, so one run cannot sink a sweep."""
    start = time.perf_counter()
    files: dict[str, bytes] = {}
    summary_json: str | None = None
    error: str | None = None
    with contextlib.ExitStack() as stack:
        if task.run_dir is None:
            out_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="rtcc-sweep-"))
        else:
            out_dir = task.run_dir
        try:
            summary_json = _native.run(
                toml_text=task.toml_text, origin=task.origin, out_dir=out_dir, seed=task.seed
            )
        except ScenarioError as e:
            error = " ".join(str(e).split())
        except Exception as e:  # a bug in rtcc: recorded, the sweep goes on
            error = f"internal error: {type(e).__name__}: {' '.join(str(e).split())}"
        if task.run_dir is None and summary_json is not None:
            for name in _RUN_FILES:
                path = Path(out_dir) / name
                if path.exists():
                    files[name] = path.read_bytes()
    return _Outcome(task.run_id, summary_json, error, files, time.perf_counter() - start)


def _sweep(
    grid: str | os.PathLike[str] | Mapping[str, Any],
    *,
    out: str | os.PathLike[str],
    backend: Backend = "local",
    jobs: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> tuple[pl.DataFrame, SweepStats]:
    wall_start = time.perf_counter()
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', not {backend!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if address is not None and backend != "ray":
        raise ValueError("address is only meaningful with backend='ray'")
    workers = jobs if jobs is not None else len(os.sched_getaffinity(0))

    spec = _load_grid(grid)
    out_dir = Path(out)
    try:
        (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ScenarioError(f"cannot create output directory {out_dir}: {e.strerror}") from e

    summaries: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    tasks: list[_Task] = []
    for run in spec.runs:
        run_dir = out_dir / "runs" / run.run_id
        done = _complete_summary(run_dir)
        if done is not None:
            summaries[run.run_id] = done
            continue
        text = _prepare_run_dir(run_dir, run, spec)
        origin = f"runs/{run.run_id}/scenario.toml"
        tasks.append(_Task(run.run_id, run.seed, text, origin, str(run_dir)))

    run_s = 0.0
    used_jobs = workers
    if tasks:
        execute = _run_ray if backend == "ray" else _run_local
        with _progress_bar(len(spec.runs), len(spec.runs) - len(tasks), enabled=progress) as step:
            for outcome in execute(tasks, workers, address):
                run_s += outcome.elapsed_s
                _record(outcome, out_dir / "runs" / outcome.run_id, summaries, errors)
                step()
        if backend == "ray" and address is not None:
            used_jobs = 0

    table = _table(spec, summaries, errors)
    table.write_parquet(out_dir / "results.parquet")
    stats = SweepStats(
        runs=len(spec.runs),
        executed=len(tasks),
        reused=len(spec.runs) - len(tasks),
        failed=len(errors),
        wall_s=time.perf_counter() - wall_start,
        run_s=run_s,
        backend=backend,
        jobs=used_jobs,
    )
    (out_dir / "sweep.json").write_text(json.dumps(asdict(stats), indent=2) + "\n")
    return table, stats


def _complete_summary(run_dir: Path) -> dict[str, Any] | None:
    """The run's summary if its directory holds a complete one, else None."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or not isinstance(summary.get("flows"), list):
        return None
    return summary


def _prepare_run_dir(run_dir: Path, run: _RunSpec, spec: _Grid) -> str:
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("error.txt", "summary.json"):
        (run_dir / stale).unlink(missing_ok=True)
    text = _dumps(_resolve_traces(run.scenario, spec.search_dirs))
    (run_dir / "scenario.toml").write_text(text)
    params = {"run_id": run.run_id, "seed": run.seed, "params": run.params}
    (run_dir / "params.json").write_text(json.dumps(params, indent=2) + "\n")
    return text


def _record(
    outcome: _Outcome,
    run_dir: Path,
    summaries: dict[str, dict[str, Any]],
    errors: dict[str, str],
) -> None:
    if outcome.summary_json is None:
        message = outcome.error or "run produced no summary"
        errors[outcome.run_id] = message
        (run_dir / "error.txt").write_text(message + "\n")
        return
    for name in _RUN_FILES:  # summary.json last: it marks the run complete
        if name in outcome.files:
            (run_dir / name).write_bytes(outcome.files[name])
    summaries[outcome.run_id] = json.loads(outcome.summary_json)


def _run_local(tasks: Sequence[_Task], workers: int, _address: str | None) -> Iterator[_Outcome]:
    # forkserver: workers fork from a fresh, single-threaded server process that
    # has imported rtcc once, so they start fast and never inherit this
    # process's threads (polars', Rust's) or locks, which plain fork would.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["rtcc.sweep"])
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context)
    try:
        pending: dict[Future[_Outcome], _Task] = {pool.submit(_execute, t): t for t in tasks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                try:
                    outcome = future.result()
                except BrokenProcessPool as e:
                    # Not this run's fault: every pending run fails with it. The
                    # runs done so far are on disk; a new sweep resumes after them.
                    raise RuntimeError(
                        f"a sweep worker process died while running {task.run_id} ({e}); "
                        "a script that calls rtcc.sweep must do so under "
                        "`if __name__ == '__main__':`, because workers import the main module"
                    ) from e
                yield outcome
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_ray(tasks: Sequence[_Task], workers: int, address: str | None) -> Iterator[_Outcome]:
    try:
        ray: Any = importlib.import_module("ray")
    except ImportError as e:
        raise ImportError("backend='ray' needs Ray: pip install 'rtcc[ray]'") from e
    started = False
    if not ray.is_initialized():
        if address is not None:
            ray.init(address=address)
        else:
            ray.init(num_cpus=workers, include_dashboard=False)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(_execute)
        # Files come back through Ray (run_dir None): workers may be elsewhere.
        pending: dict[Any, _Task] = {
            remote.remote(_Task(t.run_id, t.seed, t.toml_text, t.origin, None)): t for t in tasks
        }
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                task = pending.pop(ref)
                try:
                    outcome: _Outcome = ray.get(ref)
                except Exception as e:  # the task or its worker died
                    outcome = _Outcome(task.run_id, None, f"worker failed: {e}", {}, 0.0)
                yield outcome
    finally:
        if started:
            ray.shutdown()


@contextlib.contextmanager
def _progress_bar(total: int, completed: int, *, enabled: bool) -> Iterator[Callable[[], None]]:
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        # A bar is for people watching; logs and pipes get nothing.
        disable=not (enabled and console.is_terminal),
    ) as bar:
        task = bar.add_task("sweep", total=total, completed=completed)
        yield lambda: bar.advance(task)


# ---------------------------------------------------------------------------
# Results table


def _table(
    spec: _Grid, summaries: Mapping[str, dict[str, Any]], errors: Mapping[str, str]
) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for run in spec.runs:  # sorted by run id
        head: dict[str, Any] = {"run_id": run.run_id, "seed": run.seed}
        head.update({key: run.params.get(key) for key in spec.keys})
        summary = summaries.get(run.run_id)
        if summary is None:
            head.update(status="error", error=errors.get(run.run_id, "not run"))
            rows.append(head)
            continue
        head.update(status="ok", error=None)
        head.update(scenario=summary.get("scenario"), duration_s=summary.get("duration_s"))
        run_wide: dict[str, Any] = {}
        for link in summary.get("links") or []:
            name = link.get("name", "")
            for k, v in _flatten_metrics(link):
                if k != "name":
                    run_wide[f"link_{name}_{k}"] = v
        for k, v in _flatten_metrics(summary.get("fairness") or {}):
            run_wide[f"fairness_{k}"] = v
        for flow in summary.get("flows") or [{}]:
            row = dict(head)
            for k, v in _flatten_metrics(flow):
                row["flow" if k == "name" else k] = v
            row.update(run_wide)
            rows.append(row)

    first = [*_KEY_COLUMNS, *spec.keys, *_STATUS_COLUMNS]
    first += ["scenario", "duration_s", "flow", "kind", "cc"]
    columns = list(dict.fromkeys([*first, *(k for row in rows for k in row)]))
    data = {c: [row.get(c) for row in rows] for c in columns}
    return pl.DataFrame({c: _column(c, values) for c, values in data.items()})


def _flatten_metrics(value: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            yield from _flatten_metrics(item, f"{name}_")
        else:
            yield name, item


def _column(name: str, values: list[Any]) -> pl.Series:
    """One typed column; the type follows from the values alone, never from the backend."""
    present = [v for v in values if v is not None]
    if name == "seed":
        # Seeds go up to 2**64 - 1.
        return pl.Series(name, values, dtype=pl.UInt64())
    if present and all(isinstance(v, bool) for v in present):
        return pl.Series(name, values, dtype=pl.Boolean())
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pl.Series(name, values, dtype=pl.Int64())
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pl.Series(name, [None if v is None else float(v) for v in values], pl.Float64())
    if all(isinstance(v, str) for v in present):
        return pl.Series(name, values, dtype=pl.String())
    # Mixed or structured values (a grid of `loss` tables): canonical JSON text.
    return pl.Series(
        name,
        [v if v is None else json.dumps(v, sort_keys=True, default=str) for v in values],
        dtype=pl.String(),
    )
