"""``rtcc.run`` and its ``Result``: the public face of ``rtcc._native.run``.

This layer owns everything Python-shaped (DESIGN.md §7, STYLE.md rule 14):
path and unit coercion, dict scenarios serialised to TOML, output directories
(a temporary one when none is given), and lazy DataFrames over the CSV files.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl
import tomli_w

from rtcc import _native
from rtcc._native import ScenarioError
from rtcc.summary import RunSummary

__all__ = ["Result", "run"]

# Name given to a dict scenario in error messages ("<dict>:3: key `rate`: ...").
DICT_ORIGIN = "<dict>"

# A run's seed is a u64 in the simulator.
_SEED_MAX = 2**64 - 1

ProgressCallback = Callable[[float, float], object]
"""``progress(sim_time_s, duration_s)``, called about once per simulated second."""


class Result:
    """The outcome of one run: its summary and its output files.

    Attributes:
        summary: ``summary.json`` as a dict (DESIGN.md §4.2), typed as
            :class:`rtcc.summary.RunSummary`: ``scenario``, ``seed``,
            ``duration_s``, ``flows``, ``links``, ``fairness``. Metrics that
            do not apply to a flow kind are absent; docs/metrics.md defines
            each.
        out_dir: Directory holding ``summary.json``, ``timeseries.csv`` and
            ``frames.csv``. When ``run`` was not given ``out``, this is a
            temporary directory removed when the ``Result`` is garbage collected.

    """

    summary: RunSummary
    out_dir: Path

    def __init__(
        self,
        summary: RunSummary,
        out_dir: Path,
        *,
        tmp: tempfile.TemporaryDirectory[str] | None = None,
    ) -> None:
        self.summary = summary
        self.out_dir = out_dir
        # Owning the TemporaryDirectory ties the files' lifetime to ours.
        self._tmp = tmp

    @property
    def seed(self) -> int:
        """The seed the run used; pass it back as ``seed=`` to replay the run."""
        return int(self.summary["seed"])

    @cached_property
    def frames(self) -> pl.DataFrame:
        """``frames.csv``: one row per video frame, loaded on first access.

        Columns: flow, frame_id, type, size_bytes, capture_ms, complete_ms,
        displayed_ms, delay_ms, dropped, level (a layered flow's frame: the
        layers shown, 0 if not displayed), psnr_db (a layered flow's frame:
        its modelled PSNR, of the layers shown or of the picture left on
        screen; docs/algorithms/psnr-model.md). Times of frames that never
        completed or were never displayed are null, and so are the level and
        PSNR of a frame without layers.
        """
        return _read_csv(self.out_dir / "frames.csv", _FRAMES_SCHEMA)

    @cached_property
    def timeseries(self) -> pl.DataFrame:
        """``timeseries.csv``: one row per flow and sampling interval, loaded on first access.

        Columns: time_s, flow, send_rate_kbps, goodput_kbps, target_kbps,
        estimate_kbps, cwnd_bytes, srtt_ms, queue_bytes, queue_delay_ms,
        capacity_kbps (the flow's bottleneck link), packets_sent,
        packets_lost (in the interval), avail_kbps (the available bandwidth
        of the flow's forward path: per link, capacity less the bytes other
        flows offered to it, the least over the path; docs/metrics.md),
        layer_level (a layered flow's subscribed level), protected_layers
        (a layered flow following a layer plan: the layers sent with a
        repair stream), psnr_db (a layered flow's mean modelled PSNR over
        the frames finished in the interval). Cells that do not apply to a
        flow are null.
        """
        return _read_csv(self.out_dir / "timeseries.csv", _TIMESERIES_SCHEMA)

    @cached_property
    def cc_trace(self) -> pl.DataFrame | None:
        """``cc_trace.csv``: the controllers' state variables, or None when not traced.

        Long format, one row per sample, flow and variable: time_s, flow,
        variable, value. A path of a multipath flow is the flow ``flow/path``.
        Written when the run asked for it (``run(..., cc_trace=True)``,
        ``rtcc run --cc-trace`` or ``[output] cc_trace = true``); the
        variables of each controller are listed in its design note
        (docs/algorithms/<name>.md, "What it traces").
        """
        path = self.out_dir / "cc_trace.csv"
        if not path.exists():
            return None
        return _read_csv(path, _CC_TRACE_SCHEMA)

    def __repr__(self) -> str:
        name = self.summary.get("scenario", "?")
        return f"<rtcc.Result scenario={name!r} seed={self.seed} out_dir={str(self.out_dir)!r}>"


def run(
    scenario: str | os.PathLike[str] | Mapping[str, Any],
    *,
    seed: int | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
    cc_trace: bool = False,
    allow_large: bool = False,
    pcap: str | os.PathLike[str] | None = None,
) -> Result:
    """Simulate one scenario and return its results.

    The simulator runs in Rust with the GIL released, so other Python threads
    keep running; Ctrl-C stops it within about one simulated second.

    Args:
        scenario: Path of a TOML scenario file, or a dict with the same
            structure (``{"duration": "30s", "link": [...], "flow": [...]}``).
            In a dict, ``pathlib.Path`` values become strings and
            ``datetime.timedelta`` values become durations; relative trace
            paths are resolved against the working directory.
        seed: Overrides the scenario's seed (0 ≤ seed < 2**64).
        out: Directory for ``summary.json``, ``timeseries.csv`` and
            ``frames.csv``; created if missing. The files are written beside
            it and moved in only when the run succeeds, so an error leaves
            ``out`` as it was. Default: a temporary
            directory that lives as long as the returned ``Result``.
        progress: Called as ``progress(sim_time_s, duration_s)`` about once
            per simulated second. An exception it raises stops the run and
            propagates out of ``run``.
        cc_trace: Also write ``cc_trace.csv`` (``Result.cc_trace``): each
            controller's state variables at every sample, as if the
            scenario said ``[output] cc_trace = true``.
        allow_large: Run even when the run is estimated above the resource
            limits (``ScenarioError`` otherwise; docs/scenarios.md, "Limits").
        pcap: Directory for a packet capture per link, ``<link name>.pcap``
            (classic pcap: a record per packet the link forwards, at its
            departure, as Ethernet/IPv4/UDP with real RTP and RTCP headers,
            or TCP; docs/scenarios.md, "Packet captures"). May be ``out``.
            Staged like ``out``: an error leaves it as it was.

    Returns:
        The run's :class:`Result`.

    Raises:
        ScenarioError: The scenario, a trace it names, an argument or the
            output directory is unusable. The message is one line naming the
            file, line, key and value.
        RuntimeError: An internal error in rtcc (a bug: please report it).

    """
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, not {type(seed).__name__}")
        if not 0 <= seed <= _SEED_MAX:
            raise ScenarioError(f"seed must be in [0, 2**64 - 1], got {seed}")

    path: str | os.PathLike[str] | None = None
    text: str | None = None
    if isinstance(scenario, Mapping):
        text = _to_toml(scenario)
    elif isinstance(scenario, str | os.PathLike):
        path = scenario
    else:
        raise TypeError(f"scenario must be a path or a dict, not {type(scenario).__name__}")

    tmp: tempfile.TemporaryDirectory[str] | None = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="rtcc-run-")
        out_dir = Path(tmp.name)
    else:
        # Created by the run itself, and only when it succeeds: a bad
        # scenario leaves nothing behind (docs/scenarios.md, "Limits").
        out_dir = Path(out)

    summary_json = _native.run(
        scenario_path=path,
        toml_text=text,
        origin=DICT_ORIGIN,
        out_dir=out_dir,
        seed=seed,
        progress=progress,
        cc_trace=bool(cc_trace),
        allow_large=bool(allow_large),
        pcap_dir=None if pcap is None else Path(pcap),
    )
    summary: RunSummary = json.loads(summary_json)
    return Result(summary, out_dir, tmp=tmp)


def _to_toml(scenario: Mapping[str, Any]) -> str:
    """Serialise a dict scenario, naming what TOML cannot hold."""
    try:
        return _explicit_tables(tomli_w.dumps(_coerce_table(scenario)))
    except ScenarioError:
        raise
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"{DICT_ORIGIN}: cannot be written as TOML: {e}") from e


def _explicit_tables(text: str) -> str:
    """Give every table a header of its own before its sub-tables' headers.

    tomli_w writes a table that holds only tables (``cc_config = {plan =
    {...}}``) as an implicit table: ``[flow.cc_config.plan]`` with no
    ``[flow.cc_config]``. That is valid TOML, but the toml crate (0.8)
    cannot read an implicit table into the span-keeping type the scenario
    loader uses for ``cc_config`` ("expected a borrowed string"), so the
    parents' headers are written out (an empty ``[flow.cc_config]`` first).
    """
    out: list[str] = []
    defined: set[str] = set()
    array_root = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[[") and stripped.endswith("]]"):
            array_root = stripped[2:-2].strip()
            defined = set()
        elif stripped.startswith("[") and stripped.endswith("]") and '"' not in stripped:
            parts = stripped[1:-1].strip().split(".")
            skip = len(array_root.split(".")) if array_root else 0
            for n in range(max(skip, 1), len(parts)):
                parent = ".".join(parts[:n])
                if parent == array_root or parent in defined:
                    continue
                if array_root and not parent.startswith(array_root + "."):
                    continue
                out.append(f"[{parent}]")
                defined.add(parent)
            defined.add(".".join(parts))
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _coerce_table(table: Mapping[Any, object], path: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in table.items():
        key = _text(str(k), path or "<top level>", what="key")
        out[key] = _coerce(v, f"{path}.{key}" if path else key)
    return out


def _coerce(value: object, path: str = "") -> object:
    """Turn Python conveniences into the strings scenarios use."""
    if isinstance(value, Mapping):
        return _coerce_table(value, path)
    if isinstance(value, list | tuple):
        return [_coerce(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, os.PathLike):
        return _text(os.fspath(value), path)
    if isinstance(value, timedelta):
        # Whole microseconds are exact: timedelta's resolution is 1 µs.
        return f"{value // timedelta(microseconds=1)}us"
    if isinstance(value, str):
        return _text(value, path)
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        # TOML integers are 64-bit signed.
        raise ScenarioError(f"{DICT_ORIGIN}: key `{path}`: {value} does not fit a 64-bit integer")
    return value


def _text(value: str, path: str, *, what: str = "value") -> str:
    """A string TOML can hold: valid Unicode (no lone surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ScenarioError(
            f"{DICT_ORIGIN}: key `{path}`: {what} {value!a} is not valid Unicode (a lone surrogate)"
        ) from None
    return value


# Column types of the output files (docs/metrics.md). Fixed rather than
# inferred: a column that is empty for a whole run (cwnd_bytes of a flow without
# a window) must still be numeric.
_TIMESERIES_SCHEMA: dict[str, pl.DataType] = {
    "time_s": pl.Float64(),
    "flow": pl.String(),
    "send_rate_kbps": pl.Float64(),
    "goodput_kbps": pl.Float64(),
    "target_kbps": pl.Float64(),
    "estimate_kbps": pl.Float64(),
    "cwnd_bytes": pl.Int64(),
    "srtt_ms": pl.Float64(),
    "queue_bytes": pl.Int64(),
    "queue_delay_ms": pl.Float64(),
    "capacity_kbps": pl.Float64(),
    "packets_sent": pl.Int64(),
    "packets_lost": pl.Int64(),
    "avail_kbps": pl.Float64(),
    "layer_level": pl.Int64(),
    "protected_layers": pl.Int64(),
    "psnr_db": pl.Float64(),
}
_CC_TRACE_SCHEMA: dict[str, pl.DataType] = {
    "time_s": pl.Float64(),
    "flow": pl.String(),
    "variable": pl.String(),
    "value": pl.Float64(),
}
_FRAMES_SCHEMA: dict[str, pl.DataType] = {
    "flow": pl.String(),
    "frame_id": pl.Int64(),
    "type": pl.String(),
    "size_bytes": pl.Int64(),
    "capture_ms": pl.Float64(),
    "complete_ms": pl.Float64(),
    "displayed_ms": pl.Float64(),
    "delay_ms": pl.Float64(),
    "dropped": pl.Int64(),
    "level": pl.Int64(),
    "psnr_db": pl.Float64(),
}


def _read_csv(path: Path, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    # Known columns get their fixed type; any others are inferred from the whole file.
    return pl.read_csv(path, schema_overrides=schema, infer_schema_length=None)
