"""rtcc: congestion control for real-time video, and a simulator to evaluate it.

Run a scenario and look at the results::

    import rtcc

    result = rtcc.run("scenarios/demo.toml", seed=1, out="results/demo")
    for flow in result.summary["flows"]:
        print(flow["name"], flow.get("goodput_kbps"))
    result.timeseries  # polars DataFrame, one row per flow and interval
    result.frames  # polars DataFrame, one row per video frame

A scenario is a TOML file (DESIGN.md §4.1) or the same structure as a dict.
Bad input raises :class:`ScenarioError` (a :class:`ValueError`) whose message
names the file, line, key and value.
"""

from rtcc._api import Result, run
from rtcc._native import ScenarioError
from rtcc._native import version as _native_version
from rtcc._net import emulate, recv, send
from rtcc.report import ReportError, report
from rtcc.sweep import GridError, SweepStats, sweep

__version__: str = _native_version()
"""Version of rtcc (the Rust crates and this package share it)."""

__all__ = [
    "GridError",
    "ReportError",
    "Result",
    "ScenarioError",
    "SweepStats",
    "__version__",
    "emulate",
    "recv",
    "report",
    "run",
    "send",
    "sweep",
]
