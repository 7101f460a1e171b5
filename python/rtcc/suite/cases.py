"""The test cases of RFC 8867 and RFC 8869 as scenarios (docs/suites.md).

Each :class:`Case` turns a controller name, a time scale and a seed into a
:class:`Plan`: the scenario (a dict for :func:`rtcc.run`) and what its
metrics need (the media flows under test, their reference share over time,
the instants at which the network changes, the window over which fairness is
judged, the bottleneck link). Times in the tables are the RFCs' seconds; a
plan multiplies every one of them by ``scale`` (``--quick`` runs the same
timelines shortened).

Values the RFCs fix are used as given: bottleneck capacities and their
changes, one-way propagation delays, the 300 ms drop-tail queue, flow start
and stop times, the short-TCP model of RFC 8868. Values they leave open are
chosen once for every case, below, and listed in docs/suites.md:

- the media source: rtcc's default media flow (a WebRTC-like parametric
  encoder, 30 fps, 50 kbps to 2.5 Mbps, starting at 300 kbps; 1200-byte
  payloads with 48 bytes of headers);
- the feedback path: uncongested (unlimited rate) except where a case
  congests it (§5.3), with the forward path's propagation delay;
- no jitter and no random loss on wired paths (the cases' defaults);
- long TCP flows are NewReno (RFC 5681/6582), 1448-byte segments.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtcc import _native

__all__ = ["CASES", "MEDIA_CONTROLLERS", "SUITES", "Case", "Plan", "trace_path"]

MEDIA_CONTROLLERS: tuple[str, ...] = _native.CONTROLLERS
"""The media controllers, as the native module lists them
(``rtcc_core::cc::CcConfig::NAMES``)."""

SUITES: tuple[str, ...] = ("rfc8867", "rfc8869")

# The encoder's largest target: a flow's reference share never exceeds it.
MAX_MEDIA_KBPS = 2500.0

ShareFn = Callable[[float, float | None], float | None]
"""``share(t, capacity_kbps)``: a media flow's reference rate at time ``t``
(seconds, already scaled), given the mean capacity of its bottleneck over
the second around ``t`` when the run recorded one; ``None`` where no
reference applies (the flow is paused)."""


@dataclass(frozen=True)
class Plan:
    """One case for one controller: the scenario and what its metrics need."""

    scenario: dict[str, Any]
    """The scenario, for :func:`rtcc.run`."""
    media: tuple[str, ...]
    """The media flows under test (every other flow is cross traffic)."""
    shares: Mapping[str, ShareFn]
    """Each media flow's reference rate (its fair share) over time."""
    events: tuple[float, ...]
    """Instants (s) at which the network or the set of flows changes; each
    starts a convergence measurement (metrics.py)."""
    fairness_window: tuple[float, float] | None
    """``[start, end)`` (s) over which Jain's index is taken; ``None`` for a
    single flow."""
    fairness_flows: tuple[str, ...]
    """The flows Jain's index is taken over (the media flows, or the media
    flow and the TCP flow it competes with)."""
    bottleneck: str
    """The link whose utilisation and queue the case reports."""


@dataclass(frozen=True)
class Case:
    """One test case of a suite."""

    suite: str
    id: str
    """The RFC's section number, e.g. ``"5.1"``; a variant adds a letter."""
    title: str
    build: Callable[[str, float, int], Plan] | None
    """``build(cc, scale, seed)``; ``None`` when the case is not expressible."""
    choices: str
    """What the case sets that the RFC leaves open, or how it approximates
    what the simulator cannot model (docs/suites.md)."""
    quick: bool = False
    """Part of the ``--quick`` subset."""
    reason: str = ""
    """Why the case is not expressible (``build`` is ``None``)."""
    approximate: bool = False
    """The scenario stands in for a setting the simulator cannot model."""
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def slug(self) -> str:
        """A file-safe name: ``5.1`` → ``5-1``."""
        return self.id.replace(".", "-")


def trace_path(relative: str) -> str:
    """A trace under the repository's ``traces/`` folder, as an absolute path.

    Looked up from the working directory, then from the source tree that
    holds this package (a checkout); the relative path if neither has it.
    """
    for root in (Path.cwd(), Path(__file__).resolve().parents[3]):
        p = root / relative
        if p.exists():
            return str(p)
    return relative


# --- scenario pieces ---------------------------------------------------------


def _d(seconds: float) -> str:
    """A duration string at millisecond resolution."""
    return f"{round(seconds * 1000)}ms"


def _rate(kbps: float) -> str:
    return f"{round(kbps)}kbps"


def _media(name: str, cc: str, start: float, stop: float, **extra: object) -> dict[str, Any]:
    return {"name": name, "kind": "media", "cc": cc, "start": _d(start), "stop": _d(stop), **extra}


def _schedule(steps: Sequence[tuple[float, float]], scale: float) -> list[dict[str, str]]:
    return [{"at": _d(t * scale), "rate": _rate(kbps)} for t, kbps in steps]


def _step_fn(steps: Sequence[tuple[float, float]], scale: float) -> Callable[[float], float]:
    """The capacity (kbps) of a schedule at a (scaled) time."""

    def at(t: float) -> float:
        value = steps[0][1]
        for start, kbps in steps:
            if t >= start * scale:
                value = kbps
        return value

    return at


def _capped(kbps: float) -> float:
    return min(kbps, MAX_MEDIA_KBPS)


def _active(start: float, stop: float, share: Callable[[float], float]) -> ShareFn:
    """A share that applies while a flow is active, ``[start, stop)``."""

    def f(t: float, _cap: float | None) -> float | None:
        return share(t) if start <= t < stop else None

    return f


# Common path values of RFC 8867 §5 (and RFC 8869 §4.2's wired part).
_OWD_S = 0.050
_QUEUE = "300ms"


def _single_link(
    name: str,
    duration: float,
    link: dict[str, Any],
    flows: list[dict[str, Any]],
    **top: object,
) -> dict[str, Any]:
    return {
        "name": name,
        "duration": _d(duration),
        "topology": {"kind": "single", **top},
        "link": [link],
        "flow": flows,
    }


# --- RFC 8867 ----------------------------------------------------------------


def _c5_1(cc: str, scale: float, seed: int) -> Plan:
    # §5.1: reference capacity 1 Mbps; ratios 1.0 / 2.5 / 0.6 / 1.0 at 0 / 40 / 60 / 80 s.
    steps = [(0, 1000.0), (40, 2500.0), (60, 600.0), (80, 1000.0)]
    cap = _step_fn(steps, scale)
    end = 99 * scale
    sc = _single_link(
        "rfc8867-5.1",
        100 * scale,
        {
            "name": "bottleneck",
            "schedule": _schedule(steps, scale),
            "delay": _d(_OWD_S),
            "queue": _QUEUE,
        },
        [_media("media", cc, 0, end)],
    )
    return Plan(
        sc,
        ("media",),
        {"media": _active(0, end, lambda t: _capped(cap(t)))},
        tuple(t * scale for t, _ in steps),
        None,
        ("media",),
        "bottleneck",
    )


def _c5_2(cc: str, scale: float, seed: int) -> Plan:
    # §5.2: reference 2 Mbps; ratios 2.0 / 1.0 / 1.75 / 0.5 / 1.0 at 0 / 25 / 50 / 75 / 100 s;
    # two media flows from 0 to 119 s of a 125 s run.
    steps = [(0, 4000.0), (25, 2000.0), (50, 3500.0), (75, 1000.0), (100, 2000.0)]
    cap = _step_fn(steps, scale)
    end = 119 * scale
    names = ("media1", "media2")
    sc = _single_link(
        "rfc8867-5.2",
        125 * scale,
        {
            "name": "bottleneck",
            "schedule": _schedule(steps, scale),
            "delay": _d(_OWD_S),
            "queue": _QUEUE,
        },
        [_media(n, cc, 0, end) for n in names],
    )
    share = _active(0, end, lambda t: _capped(cap(t) / 2))
    return Plan(
        sc,
        names,
        dict.fromkeys(names, share),
        tuple(t * scale for t, _ in steps),
        (0.0, end),
        names,
        "bottleneck",
    )


def _c5_3(cc: str, scale: float, seed: int) -> Plan:
    # §5.3: reference 1 Mbps. Forward ratios 2.0 / 1.0 / 0.5 / 2.0 at 0 / 20 / 40 / 60 s;
    # backward 2.0 / 0.8 / 2.0 at 0 / 35 / 70 s; 100 s.
    fwd = [(0, 2000.0), (20, 1000.0), (40, 500.0), (60, 2000.0)]
    cap = _step_fn(fwd, scale)
    end = 99 * scale
    # The backward capacity drop is made by reverse CBR traffic filling
    # 2.0 - 0.8 = 1.2 Mbps of a 2 Mbps reverse link (ns-3 rmcat's method for
    # every capacity change), since a reverse link's rate is constant here.
    back = [(0, 2000.0), (35, 800.0), (70, 2000.0)]
    back_cap = _step_fn(back, scale)
    flows = [
        _media("media", cc, 0, end),
        # The backward half of the call: its media on the congested backward
        # link, its feedback on the forward one.
        _media("media-back", cc, 0, end, direction="reverse"),
        {
            "name": "reverse-load",
            "kind": "udp-cbr",
            "direction": "reverse",
            "rate": "1200kbps",
            "start": _d(35 * scale),
            "stop": _d(70 * scale),
        },
    ]
    sc = _single_link(
        "rfc8867-5.3",
        100 * scale,
        {
            "name": "bottleneck",
            "schedule": _schedule(fwd, scale),
            "delay": _d(_OWD_S),
            "queue": _QUEUE,
        },
        flows,
        reverse_rate="2Mbps",
        reverse_queue=_QUEUE,
    )
    events = sorted({t * scale for t, _ in fwd} | {35 * scale, 70 * scale})
    return Plan(
        sc,
        ("media", "media-back"),
        {
            "media": _active(0, end, lambda t: _capped(cap(t))),
            "media-back": _active(0, end, lambda t: _capped(back_cap(t))),
        },
        tuple(events),
        None,
        ("media", "media-back"),
        "bottleneck",
    )


def _c5_4(cc: str, scale: float, seed: int) -> Plan:
    # §5.4: 3.5 Mbps; three media flows starting at 0 / 20 / 40 s, ending at 119 s; 120 s.
    starts = (0, 20, 40)
    names = ("media1", "media2", "media3")
    end = 119 * scale
    flows = [_media(n, cc, s * scale, end) for n, s in zip(names, starts, strict=True)]
    sc = _single_link(
        "rfc8867-5.4",
        120 * scale,
        {"name": "bottleneck", "rate": "3.5Mbps", "delay": _d(_OWD_S), "queue": _QUEUE},
        flows,
    )

    shares = _equal_shares(names, starts, scale, end, 3500.0)
    return Plan(
        sc,
        names,
        shares,
        tuple(s * scale for s in starts),
        (60 * scale, end),
        names,
        "bottleneck",
    )


def _equal_shares(
    names: Sequence[str], starts: Sequence[float], scale: float, end: float, capacity: float
) -> dict[str, ShareFn]:
    """Each flow's share of ``capacity`` (kbps) split equally among the started flows."""

    def n_active(t: float) -> int:
        return sum(1 for s in starts if t >= s * scale)

    return {
        n: _active(s * scale, end, lambda t: _capped(capacity / n_active(t)))
        for n, s in zip(names, starts, strict=True)
    }


def _c5_5(cc: str, scale: float, seed: int) -> Plan:
    # §5.5: 4 Mbps; five media flows with one-way delays 10 / 25 / 50 / 100 / 150 ms,
    # starting at 0 / 10 / 20 / 30 / 40 s, ending at 299 s; 300 s.
    delays = (0.010, 0.025, 0.050, 0.100, 0.150)
    starts = (0, 10, 20, 30, 40)
    names = tuple(f"media-{round(d * 1000)}ms" for d in delays)
    end = 299 * scale
    flows = [
        # Each flow's one-way delay is its two access links' (the bottleneck adds none).
        _media(n, cc, s * scale, end, access_delay=_d(d / 2))
        for n, s, d in zip(names, starts, delays, strict=True)
    ]
    sc = {
        "name": "rfc8867-5.5",
        "duration": _d(300 * scale),
        "topology": {"kind": "dumbbell", "access_rate": "100Mbps", "access_queue": "10MB"},
        "link": [{"name": "bottleneck", "rate": "4Mbps", "delay": "0ms", "queue": _QUEUE}],
        "flow": flows,
    }

    shares = _equal_shares(names, starts, scale, end, 4000.0)
    return Plan(
        sc,
        names,
        shares,
        tuple(s * scale for s in starts),
        (80 * scale, end),
        names,
        "bottleneck",
    )


def _c5_6(queue: str) -> Callable[[str, float, int], Plan]:
    def build(cc: str, scale: float, seed: int) -> Plan:
        # §5.6: 2 Mbps; media flow 5-119 s, one long TCP flow 0-119 s; 120 s;
        # bottleneck queue 300 ms and 1000 ms.
        end = 119 * scale
        flows = [
            _media("media", cc, 5 * scale, end),
            {"name": "tcp", "kind": "tcp", "cc": "newreno", "stop": _d(end)},
        ]
        sc = _single_link(
            f"rfc8867-5.6-{queue}",
            120 * scale,
            {"name": "bottleneck", "rate": "2Mbps", "delay": _d(_OWD_S), "queue": queue},
            flows,
        )
        return Plan(
            sc,
            ("media",),
            {"media": _active(5 * scale, end, lambda t: 1000.0)},
            (5 * scale,),
            (30 * scale, end),
            ("media", "tcp"),
            "bottleneck",
        )

    return build


# RFC 8868 §5.2 (short TCP traffic model): file sizes uniform in 30-50 KB,
# idle times exponential with a 10 s mean.
_SHORT_TCP_KB = (30.0, 50.0)
_SHORT_TCP_IDLE_S = 10.0


def _short_tcp_flows(n: int, on_at_start: int, end: float, scale: float, seed: int) -> list[Any]:
    """RFC 8867 §5.7's short TCP flows: ``n`` sequences of downloads.

    Each download is a TCP flow of its own (a new connection, ``size``
    bytes) starting an exponential idle time after the previous one
    started; ``on_at_start`` sequences start with a download at 0 s, the
    others after an idle time. Drawn from ``seed`` in Python, so a seed
    gives the same downloads.
    """
    rng = random.Random(seed * 7919 + 87)
    flows = []
    for i in range(n):
        t = 0.0 if i < on_at_start else rng.expovariate(1 / _SHORT_TCP_IDLE_S)
        k = 0
        while t * scale < end:
            size_kb = rng.uniform(*_SHORT_TCP_KB)
            flows.append(
                {
                    "name": f"short{i}-{k}",
                    "kind": "tcp",
                    "cc": "newreno",
                    "start": _d(t * scale),
                    "size": f"{round(size_kb * 1000)}B",
                }
            )
            k += 1
            t += rng.expovariate(1 / _SHORT_TCP_IDLE_S)
    return flows


def _c5_7(cc: str, scale: float, seed: int) -> Plan:
    # §5.7: 2 Mbps; two media flows 5-299 s; ten short TCP flows, two of
    # them starting in the ON state; 300 s.
    end = 299 * scale
    names = ("media1", "media2")
    flows: list[Any] = [_media(n, cc, 5 * scale, end) for n in names]
    flows += _short_tcp_flows(10, 2, end, scale, seed)
    sc = _single_link(
        "rfc8867-5.7",
        300 * scale,
        {"name": "bottleneck", "rate": "2Mbps", "delay": _d(_OWD_S), "queue": _QUEUE},
        flows,
    )
    # Ten flows of 40 KB every 10 s on average offer about 320 kbps: the
    # media flows' reference share is what is left, halved.
    load = 10 * sum(_SHORT_TCP_KB) / 2 * 8 / _SHORT_TCP_IDLE_S
    share = _active(5 * scale, end, lambda t: (2000.0 - load) / 2)
    # One sample every 500 ms: the hundreds of download flows would
    # otherwise make a timeseries.csv of about 10^6 rows.
    sc["output"] = {"sample_interval": "500ms"}
    return Plan(
        sc,
        names,
        dict.fromkeys(names, share),
        (5 * scale,),
        (30 * scale, end),
        names,
        "bottleneck",
    )


def _c5_8(cc: str, scale: float, seed: int) -> Plan:
    # §5.8: as §5.4 (3.5 Mbps, three media flows, 120 s), all starting at 0 s;
    # the second pauses at 40 s and resumes at 60 s.
    names = ("media1", "media2", "media3")
    end = 119 * scale
    pause = (40 * scale, 60 * scale)
    flows = [_media(n, cc, 0, end) for n in names]
    flows[1]["pause"] = [[_d(pause[0]), _d(pause[1])]]
    sc = _single_link(
        "rfc8867-5.8",
        120 * scale,
        {"name": "bottleneck", "rate": "3.5Mbps", "delay": _d(_OWD_S), "queue": _QUEUE},
        flows,
    )

    def paused(t: float) -> bool:
        return pause[0] <= t < pause[1]

    def share_other(t: float) -> float:
        return _capped(3500.0 / (2 if paused(t) else 3))

    def share_paused(t: float, _cap: float | None) -> float | None:
        return None if paused(t) or t >= end else _capped(3500.0 / 3)

    shares: dict[str, ShareFn] = {
        "media1": _active(0, end, share_other),
        "media2": share_paused,
        "media3": _active(0, end, share_other),
    }
    return Plan(sc, names, shares, (0.0, *pause), (80 * scale, end), names, "bottleneck")


def _c6_3(cc: str, scale: float, seed: int) -> Plan:
    # §6.3 (multiple bottlenecks) gives no parameters: a parking lot of two
    # 2 Mbps bottlenecks, 25 ms each (50 ms for the flow crossing both, as
    # §5's other cases), each shared by the long flow and one cross flow.
    end = 119 * scale
    names = ("long", "cross1", "cross2")
    link = {"rate": "2Mbps", "delay": "25ms", "queue": _QUEUE}
    sc = {
        "name": "rfc8867-6.3",
        "duration": _d(120 * scale),
        "topology": {"kind": "paths"},
        "link": [{"name": "b1", **link}, {"name": "b2", **link}],
        "path": [
            {"name": "both", "links": ["b1", "b2"]},
            {"name": "first", "links": ["b1"]},
            {"name": "second", "links": ["b2"]},
        ],
        "flow": [
            _media("long", cc, 0, end, path="both"),
            _media("cross1", cc, 0, end, path="first"),
            _media("cross2", cc, 0, end, path="second"),
        ],
    }
    share = _active(0, end, lambda t: 1000.0)
    return Plan(sc, names, dict.fromkeys(names, share), (0.0,), (30 * scale, end), names, "b1")


# --- RFC 8869 ----------------------------------------------------------------

# The Wi-Fi hop (RFC 8869 §4.2): a 30 Mbps link (about what 802.11n MCS 11,
# ns-3 rmcat's PHY mode, carries after MAC overhead) whose channel access
# adds up to 5 ms of delay per packet; no MAC model (docs/suites.md).
_WIFI = {"name": "wifi", "rate": "30Mbps", "delay": "2ms", "jitter": "5ms", "queue": "1000pkts"}


def _wifi_wired(cross: str | None) -> Callable[[str, float, int], Plan]:
    def build(cc: str, scale: float, seed: int) -> Plan:
        # §4.2.1 (bottleneck in the wired network): 1 Mbps, 50 ms, 300 ms
        # queue, then the Wi-Fi hop; one downlink media flow for 120 s,
        # optionally with downlink cross traffic from 40 to 80 s.
        end = 119 * scale
        flows: list[dict[str, Any]] = [_media("media", cc, 0, end, path="downlink")]
        if cross == "udp":
            flows.append(
                {
                    "name": "udp",
                    "kind": "udp-cbr",
                    "rate": "300kbps",
                    "path": "downlink",
                    "start": _d(40 * scale),
                    "stop": _d(80 * scale),
                }
            )
        elif cross == "tcp":
            flows.append(
                {
                    "name": "tcp",
                    "kind": "tcp",
                    "cc": "newreno",
                    "path": "downlink",
                    "start": _d(40 * scale),
                    "stop": _d(80 * scale),
                }
            )
        sc = {
            "name": f"rfc8869-wired-{cross or 'alone'}",
            "duration": _d(120 * scale),
            "topology": {"kind": "paths"},
            "link": [
                {"name": "wired", "rate": "1Mbps", "delay": "50ms", "queue": _QUEUE},
                dict(_WIFI),
            ],
            "path": [{"name": "downlink", "links": ["wired", "wifi"]}],
            "flow": flows,
        }
        t0, t1 = 40 * scale, 80 * scale

        def share(t: float) -> float:
            if t0 <= t < t1 and cross == "udp":
                return 1000.0 - 300.0
            if t0 <= t < t1 and cross == "tcp":
                return 500.0
            return 1000.0

        events = (0.0,) if cross is None else (0.0, t0, t1)
        return Plan(
            sc,
            ("media",),
            {"media": _active(0, end, share)},
            events,
            (t0, t1) if cross == "tcp" else None,
            ("media", "tcp") if cross == "tcp" else ("media",),
            "wired",
        )

    return build


def _wifi_shared(cc: str, scale: float, seed: int) -> Plan:
    # §4.2.2 (bottleneck in the Wi-Fi network): 16 downlink media flows
    # (ns-3 rmcat's smallest set) through the Wi-Fi hop behind a 100 Mbps
    # wired link; 120 s.
    n = 16
    end = 119 * scale
    names = tuple(f"media{i + 1}" for i in range(n))
    sc = {
        "name": "rfc8869-wifi-shared",
        "duration": _d(120 * scale),
        "topology": {"kind": "paths"},
        "link": [
            {"name": "wired", "rate": "100Mbps", "delay": "50ms", "queue": _QUEUE},
            dict(_WIFI),
        ],
        "path": [{"name": "downlink", "links": ["wired", "wifi"]}],
        "flow": [_media(x, cc, 0, end, path="downlink") for x in names],
    }
    share = _active(0, end, lambda t: _capped(30000.0 / n))
    return Plan(sc, names, dict.fromkeys(names, share), (0.0,), (20 * scale, end), names, "wifi")


def _cellular(trace: str, delay: str) -> Callable[[str, float, int], Plan]:
    def build(cc: str, scale: float, seed: int) -> Plan:
        # §4.1 (cellular): a recorded downlink throughput trace stands in for
        # the RFC's LTE system simulation; 300 ms queue; 120 s.
        end = 119 * scale
        sc = {
            "name": f"rfc8869-cellular-{Path(trace).parts[1]}",
            "duration": _d(120 * scale),
            "link": [
                {
                    "name": "cell",
                    "trace": trace_path(trace),
                    "trace_format": "throughput",
                    "delay": delay,
                    "queue": _QUEUE,
                }
            ],
            "flow": [_media("media", cc, 0, end)],
        }

        def share(t: float, cap: float | None) -> float | None:
            if not 0 <= t < end or cap is None:
                return None
            return _capped(cap)

        return Plan(sc, ("media",), {"media": share}, (), None, ("media",), "cell")

    return build


_WIRED_DEFAULTS = (
    "50 ms one-way, 300 ms drop-tail queue, no jitter or loss; rtcc's default media flow "
    "(30 fps, 50 kbps-2.5 Mbps, start 300 kbps); feedback path uncongested"
)

CASES: tuple[Case, ...] = (
    Case(
        "rfc8867",
        "5.1",
        "Variable available capacity with a single flow",
        _c5_1,
        _WIRED_DEFAULTS + "; capacity 1 / 2.5 / 0.6 / 1 Mbps at 0 / 40 / 60 / 80 s; 100 s",
        quick=True,
    ),
    Case(
        "rfc8867",
        "5.2",
        "Variable available capacity with multiple flows",
        _c5_2,
        _WIRED_DEFAULTS + "; capacity 4 / 2 / 3.5 / 1 / 2 Mbps at 0 / 25 / 50 / 75 / 100 s; "
        "two media flows 0-119 s of 125 s",
        quick=True,
    ),
    Case(
        "rfc8867",
        "5.3",
        "Congested feedback link with bi-directional media flows",
        _c5_3,
        _WIRED_DEFAULTS.replace("; feedback path uncongested", "")
        + "; forward capacity 2 / 1 / 0.5 / 2 Mbps at 0 / 20 / 40 / 60 s; the backward "
        "link is 2 Mbps with a 300 ms queue, its capacity drop to 0.8 Mbps at 35-70 s made "
        "by 1.2 Mbps of reverse CBR traffic; a media flow each way (the backward one "
        "`direction = \"reverse\"`), so each flow's feedback crosses the other's link",
    ),
    Case(
        "rfc8867",
        "5.4",
        "Competing media flows with the same congestion control algorithm",
        _c5_4,
        _WIRED_DEFAULTS + "; 3.5 Mbps; flows start at 0 / 20 / 40 s; Jain's index over 60-119 s",
    ),
    Case(
        "rfc8867",
        "5.5",
        "Round trip time fairness",
        _c5_5,
        "4 Mbps, 300 ms queue; one-way delays 10 / 25 / 50 / 100 / 150 ms (each flow's "
        "access links, the bottleneck adds none); flows start at 0 / 10 / 20 / 30 / 40 s; "
        "rtcc's default media flow; Jain's index over 80-299 s",
    ),
    Case(
        "rfc8867",
        "5.6a",
        "Media flow competing with a long TCP flow (300 ms queue)",
        _c5_6("300ms"),
        _WIRED_DEFAULTS + "; 2 Mbps; TCP NewReno 0-119 s, media 5-119 s; reference share "
        "1 Mbps; Jain's index of media and TCP over 30-119 s",
        quick=True,
    ),
    Case(
        "rfc8867",
        "5.6b",
        "Media flow competing with a long TCP flow (1000 ms queue)",
        _c5_6("1000ms"),
        "as 5.6a with the RFC's second queue size, 1000 ms",
    ),
    Case(
        "rfc8867",
        "5.7",
        "Media flow competing with short TCP flows",
        _c5_7,
        _WIRED_DEFAULTS + "; 2 Mbps; two media flows 5-299 s; ten short TCP flows (RFC 8868 "
        "§5.2: downloads of 30-50 KB, exponential idle times of mean 10 s, two flows start "
        "on), each download a new NewReno connection starting one idle time after the "
        "previous one started; reference share (2 Mbps - 320 kbps of mean TCP load) / 2; "
        "500 ms samples",
    ),
    Case(
        "rfc8867",
        "5.8",
        "Media pause and resume",
        _c5_8,
        _WIRED_DEFAULTS + "; as 5.4 (3.5 Mbps, three media flows) all starting at 0 s; the "
        "second flow's encoder captures nothing from 40 to 60 s and resumes with a key frame "
        "(the flow keeps its controller; padding its controller asks for still goes out)",
        quick=True,
    ),
    Case(
        "rfc8867",
        "6.1",
        "Media flows with priority",
        None,
        "",
        reason="rtcc has no flow priorities and no coupled congestion control (RFC 8699) "
        "to apply them",
    ),
    Case(
        "rfc8867",
        "6.2",
        "Explicit congestion notification usage",
        None,
        "",
        reason="the simulator's queues neither mark ECN nor run an AQM, and no controller "
        "reads ECN feedback",
    ),
    Case(
        "rfc8867",
        "6.3",
        "Multiple bottlenecks",
        _c6_3,
        "the RFC gives no parameters: a parking lot of two 2 Mbps bottlenecks (25 ms, 300 ms "
        "queue each); one flow crosses both, one flow each crosses one; all 0-119 s of 120 s; "
        "max-min fair share 1 Mbps each",
    ),
    Case(
        "rfc8869",
        "4.1.1",
        "Cellular: varying network load (recorded 4G trace)",
        _cellular("traces/lumos5g/4G/4g_trace_walking_50093_a", "40ms"),
        "approximation: the RFC simulates an LTE cell with a varying number of users; here "
        "the first 120 s of the Lumos5G 4G walking trace 50093_a (mean 2.3 Mbps, 0-5 Mbps; "
        "the load of other users shows as its variation) is the bottleneck, 40 ms one-way, "
        "300 ms queue",
        approximate=True,
    ),
    Case(
        "rfc8869",
        "4.1.2",
        "Cellular: bad radio coverage (recorded 3G/HSDPA trace)",
        _cellular(
            "traces/norway-hsdpa/bus.ljansbakken-oslo-report.2010-09-28_1407CEST.log", "40ms"
        ),
        "approximation: the RFC simulates an LTE user at the cell edge; here a 3G/HSDPA "
        "bus ride in Oslo (first 120 s: mean 2.2 Mbps, 1.4-4.1 Mbps) is the bottleneck, "
        "40 ms one-way, 300 ms queue",
        approximate=True,
        quick=True,
    ),
    Case(
        "rfc8869",
        "4.2.1a",
        "Wi-Fi, bottleneck in the wired network: one downlink flow",
        _wifi_wired(None),
        "wired 1 Mbps, 50 ms, 300 ms queue; Wi-Fi hop 30 Mbps with up to 5 ms channel-access "
        "jitter (no MAC model); 120 s",
        approximate=True,
        quick=True,
    ),
    Case(
        "rfc8869",
        "4.2.1d",
        "Wi-Fi, bottleneck in the wired network: with downlink UDP",
        _wifi_wired("udp"),
        "as 4.2.1a with 300 kbps of downlink CBR from 40 to 80 s",
        approximate=True,
    ),
    Case(
        "rfc8869",
        "4.2.1f",
        "Wi-Fi, bottleneck in the wired network: with downlink TCP",
        _wifi_wired("tcp"),
        "as 4.2.1a with a downlink TCP NewReno flow from 40 to 80 s; Jain's index of media "
        "and TCP over 40-80 s",
        approximate=True,
    ),
    Case(
        "rfc8869",
        "4.2.1u",
        "Wi-Fi, bottleneck in the wired network: uplink and bi-directional flows",
        None,
        "",
        reason="uplink media flows go the reverse way of the downlink's links, and the "
        "simulator's media flows run forward only",
    ),
    Case(
        "rfc8869",
        "4.2.2",
        "Wi-Fi, bottleneck in the Wi-Fi network: 16 downlink flows",
        _wifi_shared,
        "approximation: 16 downlink media flows share the Wi-Fi hop's 30 Mbps as one queue "
        "(an AP's downlink queue); contention between stations is not modelled; 120 s",
        approximate=True,
    ),
)
"""Every case of both suites, in the RFCs' order."""
