"""The real transport from Python: ``send``, ``recv`` and ``emulate``.

Each call blocks until its duration is over (or Ctrl-C, which stops the run
cleanly and raises ``KeyboardInterrupt``), with the GIL released, and returns
a dict: the receiver's ``summary.json`` (the same shape as a simulated run's),
the sender's and the emulator's statistics. Bad addresses, options and files
raise :class:`rtcc.ScenarioError` naming the option and the value.

A loopback run in one process, for instance::

    import threading, rtcc

    rx = threading.Thread(target=rtcc.recv, args=("127.0.0.1:5004",),
                          kwargs={"out": "results/real", "duration": "12s"})
    rx.start()
    rtcc.send("127.0.0.1:5004", cc="gcc", duration="10s")
    rx.join()
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from rtcc import _native
from rtcc.summary import RunSummary

__all__ = ["emulate", "recv", "send"]

Duration = str | float | int | timedelta
"""``"10s"``/``"250ms"``, seconds as a number, or a ``timedelta``."""

StrPath = str | os.PathLike[str]


def _duration(value: Duration | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, timedelta | int | float):
        raise TypeError(
            f"a duration must be a string, a number of seconds or a timedelta, got {value!r}"
        )
    return f"{_seconds_to_us(value)}us"


def _seconds_to_us(value: timedelta | float | int) -> int:
    if isinstance(value, timedelta):
        return value // timedelta(microseconds=1)
    return round(value * 1e6)


def _path(value: StrPath | None) -> str | None:
    return None if value is None else os.fspath(value)


def send(
    to: str,
    *,
    cc: str | None = None,
    source: StrPath | None = None,
    fps: float = 30.0,
    loop: bool = True,
    scenario: StrPath | None = None,
    flow: str | None = None,
    duration: Duration | None = None,
    out: StrPath | None = None,
    sdp: StrPath | None = None,
    seed: int = 1,
    bind: str | None = None,
    feedback_timeout: bool = True,
    recovery: str | None = None,
    rtcp: str | None = None,
    rtcp_listen: str | None = None,
    pcap: StrPath | None = None,
) -> dict[str, Any]:
    """Send video over RTP/UDP to ``to`` (``host:port``) under congestion control.

    Args:
        to: The receiver, or an emulator in front of it.
        cc: Congestion controller (``"gcc"``, ``"fixed"``); default the
            scenario flow's, else ``"gcc"``.
        source: An H.264 Annex-B file (sent per RFC 6184 at its own rate);
            ``None`` = the synthetic encoder model, which follows the target.
        fps: Frame rate of ``source``.
        loop: Start ``source`` over at its end.
        scenario: Take the controller and encoder settings from this scenario's
            media flow ``flow`` (default: its first media flow).
        flow: See ``scenario``.
        duration: How long to send; ``None`` = until Ctrl-C.
        out: Directory for ``send_summary.json`` and ``send_timeseries.csv``.
        sdp: Write an SDP file here that a stock receiver (ffplay, GStreamer)
            can open (H.264 sources only).
        seed: Seed of the synthetic encoder.
        bind: Local ``host:port`` (default any).
        feedback_timeout: Back off when the receiver's feedback stops (RFC 8083
            spirit); turn off for a stock receiver that sends none.
        recovery: Loss recovery, ``"none"`` or ``"nack"`` (RTCP NACK and
            RFC 4588 retransmissions); default the scenario flow's, else
            ``"none"``. The receiver must use the same.
        rtcp: The receiver's RTCP ``host:port`` when it does not multiplex
            RTCP on its RTP port (RFC 5761): sender reports go there, and RTCP
            is accepted from that host; ``None``: RTCP shares ``to``.
        rtcp_listen: A local ``host:port`` of our own for RTCP (no
            multiplexing, RFC 5761): sender reports leave from there and RTCP
            is read there too.
        pcap: Write every datagram sent and received to this pcap file (real
            bytes, wall-clock timestamps, synthesized Ethernet/IP/UDP
            headers with the real addresses; docs/net.md, "Packet captures").

    Returns:
        The sender's statistics.
    """
    text = _native.send(
        to,
        cc=cc,
        source=_path(source),
        fps=float(fps),
        looped=loop,
        scenario=_path(scenario),
        flow=flow,
        duration=_duration(duration),
        out_dir=_path(out),
        sdp=_path(sdp),
        seed=seed,
        bind=bind,
        feedback_timeout=feedback_timeout,
        recovery=recovery,
        rtcp=rtcp,
        rtcp_listen=rtcp_listen,
        pcap=_path(pcap),
    )
    result: dict[str, Any] = json.loads(text)
    return result


def recv(
    listen: str,
    *,
    out: StrPath | None = None,
    scenario: StrPath | None = None,
    flow: str | None = None,
    duration: Duration | None = None,
    idle_timeout: Duration | None = None,
    feedback: str = "twcc",
    recovery: str | None = None,
    peer: str | None = None,
    rtcp: str | None = None,
    rtcp_listen: str | None = None,
    pcap: StrPath | None = None,
) -> RunSummary:
    """Receive video on ``listen`` (``host:port``), send feedback, play it out.

    Args:
        listen: Address to listen on.
        out: Directory for ``summary.json``, ``timeseries.csv``, ``frames.csv``
            (the files a simulated run writes).
        scenario: Take the feedback interval from this scenario's media flow.
        flow: See ``scenario``.
        duration: How long to run; ``None`` = until Ctrl-C or ``idle_timeout``.
        idle_timeout: Stop after this long without media once media has come.
        feedback: ``"twcc"`` (transport-wide CC feedback) or ``"rfc8888"``.
        recovery: Loss recovery, ``"none"`` or ``"nack"``; default the scenario
            flow's, else ``"none"``. The sender must use the same.
        peer: Accept media from this ``host:port`` only; ``None``: the first
            valid sender (another address takes over only after it falls
            silent, docs/net.md).
        rtcp: The sender's RTCP ``host:port`` when it does not multiplex RTCP
            on its RTP port (RFC 5761): reports and feedback go there, and RTCP
            is accepted from that host; ``None``: RTCP shares the media's
            addresses.
        rtcp_listen: A local ``host:port`` of our own for RTCP (no
            multiplexing, RFC 5761; by convention the RTP port + 1): our RTCP
            leaves from there and RTCP is read there too, never media.
        pcap: Write every datagram received and sent to this pcap file (as
            ``send``'s ``pcap``).

    Returns:
        The run's ``summary.json`` as a dict (a real run's
        :class:`rtcc.summary.RunSummary`: with ``transport``, without links).
    """
    text = _native.recv(
        listen,
        out_dir=_path(out),
        scenario=_path(scenario),
        flow=flow,
        duration=_duration(duration),
        idle_timeout=_duration(idle_timeout),
        feedback=feedback,
        recovery=recovery,
        peer=peer,
        rtcp=rtcp,
        rtcp_listen=rtcp_listen,
        pcap=_path(pcap),
    )
    result: RunSummary = json.loads(text)
    return result


_LINK_KEYS = ("rate", "trace", "trace_format", "delay", "queue", "loss", "jitter")


def emulate(
    listen: str,
    forward: str,
    *,
    rate: str | None = None,
    trace: StrPath | None = None,
    trace_format: str | None = None,
    delay: Duration | None = None,
    queue: str | None = None,
    loss: str | float | None = None,
    jitter: Duration | None = None,
    reverse: Mapping[str, Any] | None = None,
    scenario: StrPath | None = None,
    link: str | None = None,
    seed: int | None = None,
    duration: Duration | None = None,
    client: str | None = None,
    upstream: str | None = None,
) -> dict[str, Any]:
    """Relay UDP from ``listen`` to ``forward`` through the simulator's link models.

    The forward link (``rate`` or ``trace``, ``delay``, ``queue``, ``loss``,
    ``jitter``) carries the client's datagrams to ``forward``; replies come
    back through a reverse link with the same parameters (own queue and random
    stream) unless ``reverse`` overrides some of them. With ``scenario``, both
    links come from that scenario's ``link`` (default its main link).

    Replies go to the client: ``client`` (``host:port``) if given, and no
    other address is relayed; else the first address heard, which another
    replaces only after it has been silent for 1 s (docs/net.md). ``upstream``
    (``host:port``) binds the socket facing ``forward`` there instead of an
    ephemeral port, for a receiver that must know where to reply first.

    Returns:
        Per-direction statistics (datagrams, drops, queue delay, timer lateness).
    """
    values: dict[str, object] = {
        "rate": rate,
        "trace": trace,
        "trace_format": trace_format,
        "delay": delay,
        "queue": queue,
        "loss": loss,
        "jitter": jitter,
    }
    fwd = _link_options(values)
    rev = _link_options(dict(reverse or {}))
    text = _native.emulate(
        listen,
        forward,
        link=fwd,
        reverse=rev,
        scenario=_path(scenario),
        scenario_link=link,
        seed=seed,
        duration=_duration(duration),
        client=client,
        upstream=upstream,
    )
    result: dict[str, Any] = json.loads(text)
    return result


def _link_options(values: Mapping[str, object]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        if key not in _LINK_KEYS:
            raise _native.ScenarioError(
                f"unknown link option `{key}` (allowed: {', '.join(_LINK_KEYS)})"
            )
        if value is None:
            continue
        if isinstance(value, timedelta | int | float) and key in ("delay", "jitter"):
            out[key] = f"{_seconds_to_us(value)}us"
        elif isinstance(value, os.PathLike):
            out[key] = os.fspath(value)
        else:
            out[key] = str(value)
    return out
