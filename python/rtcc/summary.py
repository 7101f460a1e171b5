"""The shape of ``summary.json``: :class:`RunSummary` and the dicts inside it.

These ``TypedDict`` s mirror the Rust schema ``rtcc_core::summary`` (one
schema for simulated runs, ``rtcc.run``, and real ones, ``rtcc.recv``), key
for key; what each field means is defined in ``docs/metrics.md``. A key that
exists only for some flow kinds, or only in simulated or real runs, is
``NotRequired``: metrics that do not apply are absent, not zero.
``tests/python/test_summary_schema.py`` checks that runs of every flow kind
write no key that is not declared here and every key that is required.

No ``from __future__ import annotations`` here: with string annotations,
Python 3.11 cannot see ``NotRequired`` and takes every key for required
(``__required_keys__``), so the classes are defined before their use.
"""

from typing import NotRequired, TypedDict

__all__ = [
    "AutoRecFormula",
    "DelayMs",
    "Fairness",
    "FlowSummary",
    "LayerSummary",
    "LinkSummary",
    "LiveFrameDelay",
    "LiveSummary",
    "MultipathCounters",
    "PathSummary",
    "PerPacketKind",
    "PsnrDb",
    "ReceiverTransport",
    "RecoveryCounters",
    "RunSummary",
]


class DelayMs(TypedDict):
    """A delay distribution in ms: ``owd_ms``, ``frame_delay_ms``, ``queue_delay_ms``."""

    mean: float
    p50: float
    p95: float


class Fairness(TypedDict):
    """``fairness``."""

    jain: float


class LayerSummary(TypedDict):
    """One entry of a layered (svc) flow's ``layers``."""

    complete_frames: int
    decodable_frames: int
    delivered_bytes: int
    delivered_packets: int
    dependency_id: int
    layer: int
    priority_id: int
    quality_id: int
    recovered_packets: NotRequired[int]
    """Flows whose controller gave a layer plan."""
    repair_sent_packets: NotRequired[int]
    """Flows whose controller gave a layer plan."""
    sent_packets: int
    temporal_id: int


class PsnrDb(TypedDict):
    """A layered (svc) flow's ``psnr_db``: its frames' modelled PSNR in dB."""

    mean: float
    p5: float


class RecoveryCounters(TypedDict):
    """A media flow's ``recovery`` counters."""

    nack_requests: int
    nacks_sent: int
    retransmissions_duplicate: int
    retransmissions_expired: NotRequired[int]
    """Simulated runs."""
    retransmissions_late: int
    retransmissions_received: NotRequired[int]
    """Real runs."""
    retransmissions_sent: int
    retransmissions_useful: int


class PathSummary(TypedDict):
    """One entry of a multipath flow's ``paths``.

    The counters are the session's, present once it has reported them.
    """

    bottleneck: str
    bytes_sent: NotRequired[int]
    keepalives: NotRequired[int]
    loss_rate: NotRequired[float]
    media_packets_scheduled: NotRequired[int]
    owd_ms: DelayMs
    packets_lost: NotRequired[int]
    packets_received: NotRequired[int]
    packets_sent: NotRequired[int]
    padding_packets: NotRequired[int]
    path: str
    presumed_lost: NotRequired[int]
    reported_lost: NotRequired[int]
    retransmissions: NotRequired[int]
    segments_new: NotRequired[int]
    share: NotRequired[float]
    srtt_ms: NotRequired[float]
    target_kbps: NotRequired[float]


class MultipathCounters(TypedDict):
    """A multipath flow's ``multipath`` session counters."""

    frames_dropped_at_sender: int
    key_frames_requested: int
    retransmissions: int
    retransmissions_expired: int
    retransmissions_unneeded: int
    segments_duplicate: int
    segments_late: int


class PerPacketKind(TypedDict):
    """A live flow's packets or bytes sent, per kind of packet."""

    original: int
    ping: int
    probe: int
    reinjection: int
    repair: int
    retransmission: int
    total: int


class LiveFrameDelay(TypedDict):
    """A live flow's ``frame_delay_ms``: present once a frame completed."""

    max: NotRequired[float]
    mean: NotRequired[float]


class AutoRecFormula(TypedDict):
    """A live flow's ``formula``: AutoRec's eqs. 1-3 at the pinned level."""

    goodput_reduction: float
    k: int
    recovery_latency_ms: float
    redundancy_cost: float


class LiveSummary(TypedDict):
    """A live flow's ``live`` object: the reliable transport's results."""

    bandwidth_cost: float
    bitrate_kbps: float
    bytes_sent: PerPacketKind
    cc: str
    data_created: int
    data_delivered: int
    data_duplicate: int
    data_lost: int
    data_recovered: int
    deadline_miss_rate: float
    delivered_all: bool
    deterioration_rate: float
    digest_mismatch: int
    fec_recovered: int
    formula: NotRequired[AutoRecFormula]
    frame_delay_ms: LiveFrameDelay
    frames: int
    frames_created: int
    freezes_per_100s: float
    frozen_fraction: float
    goodput_kbps: float
    loss_rate_measured: float
    max_recovery_latency_ms: NotRequired[float]
    mean_redundancy_level: NotRequired[float]
    multi_recoveries: int
    packets_acked: int
    packets_duplicate: int
    packets_lost: int
    packets_sent: PerPacketKind
    payload_created: int
    payload_delivered: int
    pto_probes: int
    recovery_latency_all_ms: NotRequired[float]
    recovery_latency_ms: NotRequired[float]
    recovery_latency_p95_ms: NotRequired[float]
    redundancy_cost: float
    redundancy_level: NotRequired[int]
    reinjections_off_mode: int
    reinjections_opportunistic: int
    scheme: str
    t_unit_ms: NotRequired[float]


class FlowSummary(TypedDict):
    """One entry of ``flows``; which kinds have which keys: ``docs/metrics.md``."""

    avail_kbps: NotRequired[float]
    bw_estimate_accuracy: NotRequired[float]
    cc: NotRequired[str]
    cc_states: NotRequired[dict[str, float]]
    """State name -> fraction of the samples."""
    frame_delay_ms: NotRequired[DelayMs]
    frames_displayed: NotRequired[int]
    frames_dropped: NotRequired[int]
    goodput_kbps: float
    kind: str
    layers: NotRequired[list[LayerSummary]]
    live: NotRequired[LiveSummary]
    loss_event_rate: NotRequired[float]
    loss_rate: float
    mean_displayed_level: NotRequired[float]
    mean_protected_layers: NotRequired[float]
    media_bitrate_kbps: NotRequired[float]
    multipath: NotRequired[MultipathCounters]
    name: str
    owd_ms: NotRequired[DelayMs]
    """Simulated runs."""
    packets_lost: int
    packets_received: NotRequired[int]
    """Real runs."""
    packets_sent: NotRequired[int]
    """Simulated runs."""
    paths: NotRequired[list[PathSummary]]
    psnr_db: NotRequired[PsnrDb]
    recovery: NotRequired[RecoveryCounters]
    scheduler: NotRequired[str]
    send_rate_kbps: NotRequired[float]
    srtt_ms: NotRequired[float]
    stall_ratio: NotRequired[float]
    target_kbps_mean: NotRequired[float]


class LinkSummary(TypedDict):
    """One entry of ``links``."""

    drops: int
    drops_loss: int
    drops_queue: int
    name: str
    packets: int
    queue_delay_ms: DelayMs
    utilization: float


class ReceiverTransport(TypedDict):
    """A real run's ``transport``: the receiver's counters (``RecvStats``, docs/net.md)."""

    datagrams: int
    duplicates: int
    feedback_datagrams: int
    foreign_ssrc: int
    malformed: int
    media_packets: int
    missing_extension: int
    nacks_sent: int
    not_h264: int
    padding_packets: int
    peer_changes: int
    plain_packets: int
    receiver_reports: int
    reordered: int
    repair_packets: int
    repair_recovered: int
    rtcp_dropped: int
    rtx_packets: int
    send_errors: int
    sender_reports: int
    sequence_jumps: int
    unexpected_source: int
    unplaceable: int


class RunSummary(TypedDict):
    """A whole ``summary.json``, of a simulated run or a real one."""

    duration_s: float
    fairness: NotRequired[Fairness]
    """Simulated runs."""
    flows: list[FlowSummary]
    links: list[LinkSummary]
    """Empty in a real run."""
    rtcc_version: str
    scenario: str
    """The scenario's name; ``"real"`` for a real run."""
    seed: NotRequired[int]
    """Simulated runs."""
    transport: NotRequired[ReceiverTransport]
    """Real runs."""
