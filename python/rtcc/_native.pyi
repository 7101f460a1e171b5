"""Private native module built from crates/rtcc-py; use the `rtcc` package instead.

Checked against the compiled module by `python -m mypy.stubtest rtcc._native`.
"""

from collections.abc import Callable
from os import PathLike

__all__ = ["ScenarioError", "run", "version"]

class ScenarioError(ValueError):
    """Bad input: a scenario, trace or argument the simulator cannot use."""

def run(
    scenario_path: str | PathLike[str] | None = None,
    toml_text: str | None = None,
    origin: str = "<text>",
    out_dir: str | PathLike[str] | None = None,
    seed: int | None = None,
    progress: Callable[[float, float], object] | None = None,
) -> str:
    """Run one scenario with the GIL released and return its summary as JSON.

    Exactly one of `scenario_path` and `toml_text` must be given; `origin`
    names `toml_text` in error messages. `progress(sim_time_s, duration_s)`
    is called about once per simulated second; an exception it raises stops
    the run and propagates.
    """

def version() -> str:
    """Return the version of the rtcc crates this module was built from."""
