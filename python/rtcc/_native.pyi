"""Private native module built from crates/rtcc-py; use the `rtcc` package instead.

Checked against the compiled module by `python -m mypy.stubtest rtcc._native`.
"""

from collections.abc import Callable
from os import PathLike

__all__ = ["CONTROLLERS", "ScenarioError", "emulate", "recv", "run", "send", "version"]

CONTROLLERS: tuple[str, ...]
"""The controllers a media flow's ``cc`` may name (``rtcc_core::cc::CcConfig::NAMES``)."""

class ScenarioError(ValueError):
    """Bad input: a scenario, trace or argument the simulator cannot use."""

def run(
    scenario_path: str | PathLike[str] | None = None,
    toml_text: str | None = None,
    origin: str = "<text>",
    out_dir: str | PathLike[str] | None = None,
    seed: int | None = None,
    progress: Callable[[float, float], object] | None = None,
    cc_trace: bool = False,
    allow_large: bool = False,
    pcap_dir: str | PathLike[str] | None = None,
) -> str:
    """Run one scenario with the GIL released and return its summary as JSON.

    Exactly one of `scenario_path` and `toml_text` must be given; `origin`
    names `toml_text` in error messages. `cc_trace` writes `cc_trace.csv` to
    `out_dir` whatever the scenario's `[output] cc_trace` says. `progress(sim_time_s, duration_s)`
    is called about once per simulated second; an exception it raises stops
    the run and propagates. `allow_large` runs past the resource guard.
    `pcap_dir` gets a packet capture per link, `<link name>.pcap`.
    """

def version() -> str:
    """Return the version of the rtcc crates this module was built from."""

def emulate(
    listen: str,
    forward: str,
    link: dict[str, str] = ...,
    reverse: dict[str, str] = ...,
    scenario: str | PathLike[str] | None = None,
    scenario_link: str | None = None,
    seed: int | None = None,
    duration: str | None = None,
    client: str | None = None,
    upstream: str | None = None,
) -> str:
    """Relay UDP from `listen` to `forward` through the simulator's link models.

    `link` and `reverse` map option names (rate, trace, trace_format, delay,
    queue, loss, jitter) to strings such as ``"2Mbps"``. Blocks until
    `duration` or Ctrl-C; returns the relay's statistics as JSON.
    """

def send(
    to: str,
    cc: str | None = None,
    source: str | PathLike[str] | None = None,
    fps: float = 30.0,
    looped: bool = True,
    scenario: str | PathLike[str] | None = None,
    flow: str | None = None,
    duration: str | None = None,
    out_dir: str | PathLike[str] | None = None,
    sdp: str | PathLike[str] | None = None,
    seed: int = 1,
    bind: str | None = None,
    feedback_timeout: bool = True,
    recovery: str | None = None,
    rtcp: str | None = None,
    rtcp_listen: str | None = None,
    pcap: str | PathLike[str] | None = None,
) -> str:
    """Send video over RTP/UDP to `to` under congestion control; statistics as JSON."""

def recv(
    listen: str,
    out_dir: str | PathLike[str] | None = None,
    scenario: str | PathLike[str] | None = None,
    flow: str | None = None,
    duration: str | None = None,
    idle_timeout: str | None = None,
    feedback: str | None = None,
    recovery: str | None = None,
    peer: str | None = None,
    rtcp: str | None = None,
    rtcp_listen: str | None = None,
    pcap: str | PathLike[str] | None = None,
) -> str:
    """Receive video on `listen`, send feedback; the run's summary.json as JSON."""
