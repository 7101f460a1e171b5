//! `summary.json`: the typed run summary (DESIGN §4.2), the one schema both
//! the simulator (`rtcc_sim::output`) and the real receiver (`rtcc_net::recv`)
//! write, and that `python/rtcc/summary.py` mirrors as `TypedDict`s.
//!
//! What each field means is defined once, in `docs/metrics.md` (DESIGN §6);
//! the comments here only say when a field is present. A metric that does not
//! apply to a flow's kind, or to a real run, is absent (`None`), never zero.
//!
//! The structs declare their fields in alphabetical order, so that a summary
//! serialises with its keys sorted, as the file was written when it was a
//! `serde_json::Map`; a test in `rtcc-sim` (`tests/summary_schema.rs`) holds
//! that order and checks `docs/metrics.md` names every field. Numbers are
//! rounded by the writer ([`round3`], unless a field says otherwise), so that
//! the same scenario and seed give byte-identical files.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Rounds to 3 decimals (µs for a value in ms, bit/s for kbit/s), so that the
/// file is stable and readable.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A whole `summary.json`. `T` is the type of the transport counters of a
/// real run (`rtcc_net::recv::RecvStats`); a simulated run has none
/// ([`NoTransport`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSummary<T = NoTransport> {
    /// Run time (s): the scenario's duration, or a real run's active time.
    pub duration_s: f64,
    /// Simulated runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairness: Option<Fairness>,
    /// One entry per flow, in the scenario's order.
    pub flows: Vec<FlowSummary>,
    /// One entry per link, in the scenario's order (none in a real run).
    pub links: Vec<LinkSummary>,
    /// The version of the crate that wrote the file.
    pub rtcc_version: String,
    /// The scenario's name (`"real"` for a real run).
    pub scenario: String,
    /// Simulated runs: the seed, to replay the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Real runs: the receiver's transport counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<T>,
}

/// The transport counters of a simulated run: there are none, so
/// `RunSummary::transport` is always `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NoTransport {}

/// `fairness`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fairness {
    /// Jain's index over the flows' goodputs (rounded to 6 decimals).
    pub jain: f64,
}

/// A delay distribution (ms): `owd_ms`, `frame_delay_ms`, `queue_delay_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayMs {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
}

/// One entry of `flows`. Which kinds have which fields: `docs/metrics.md`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSummary {
    /// Flows whose path has a link of limited capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avail_kbps: Option<f64>,
    /// Media, multipath-media, live and tfrc flows with samples (rounded to 6
    /// decimals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bw_estimate_accuracy: Option<f64>,
    /// Flows with a controller (simulated runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// With `bw_estimate_accuracy`, but not for a multipath flow (a
    /// controller per path): state name → fraction of the samples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc_states: Option<BTreeMap<String, f64>>,
    /// Media and multipath-media flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_delay_ms: Option<DelayMs>,
    /// Media and multipath-media flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_displayed: Option<u64>,
    /// Media and multipath-media flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames_dropped: Option<u64>,
    /// Every flow.
    pub goodput_kbps: f64,
    /// The flow's kind (`media`, `multipath-media`, `live`, `tcp`,
    /// `udp-cbr`, `pareto-onoff`, `tfrc`, ...).
    pub kind: String,
    /// Layered (svc) media flows: one entry per layer, base layer first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<LayerSummary>>,
    /// Live flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveSummary>,
    /// Tfrc flows, once TFRC has a loss event rate (rounded to 6 decimals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_event_rate: Option<f64>,
    /// Every flow (rounded to 6 decimals in simulated runs).
    pub loss_rate: f64,
    /// Layered (svc) media flows that displayed a frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_displayed_level: Option<f64>,
    /// Layered (svc) media flows that followed a layer plan at a sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_protected_layers: Option<f64>,
    /// Media and multipath-media flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_bitrate_kbps: Option<f64>,
    /// Multipath-media flows: the session's counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multipath: Option<MultipathCounters>,
    /// The flow's name.
    pub name: String,
    /// Simulated runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owd_ms: Option<DelayMs>,
    /// Every flow.
    pub packets_lost: u64,
    /// Real runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_received: Option<u64>,
    /// Simulated runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_sent: Option<u64>,
    /// Multipath-media flows: one entry per path, in the session's order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<PathSummary>>,
    /// Layered (svc) media flows that finished a frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psnr_db: Option<PsnrDb>,
    /// Media flows that recover losses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryCounters>,
    /// Multipath-media flows: the scheduler's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// Tfrc flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_rate_kbps: Option<f64>,
    /// Tfrc flows with an RTT sample.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srtt_ms: Option<f64>,
    /// Media and multipath-media flows (rounded to 6 decimals in simulated
    /// runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_ratio: Option<f64>,
    /// With `bw_estimate_accuracy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_kbps_mean: Option<f64>,
}

/// A layered flow's `psnr_db`: its frames' modelled PSNR (dB).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PsnrDb {
    /// Mean over the frames.
    pub mean: f64,
    /// 5th percentile.
    pub p5: f64,
}

/// One entry of a layered flow's `layers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerSummary {
    /// Frames whose layers 1..=k had all arrived.
    pub complete_frames: u64,
    /// Frames displayed with this layer.
    pub decodable_frames: u64,
    /// Payload the player accepted (bytes).
    pub delivered_bytes: u64,
    /// Packets the player accepted.
    pub delivered_packets: u64,
    /// The SVC NAL header's `dependency_id`.
    pub dependency_id: u8,
    /// The layer's level k (1-based).
    pub layer: usize,
    /// The SVC NAL header's `priority_id`.
    pub priority_id: u8,
    /// The SVC NAL header's `quality_id`.
    pub quality_id: u8,
    /// Flows that followed a layer plan: data packets the player got from
    /// their repair packet first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered_packets: Option<u64>,
    /// Flows that followed a layer plan: repair packets the sender sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_sent_packets: Option<u64>,
    /// First transmissions the sender sent.
    pub sent_packets: u64,
    /// The SVC NAL header's `temporal_id`.
    pub temporal_id: u8,
}

/// A media flow's `recovery` counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryCounters {
    /// Sequence numbers requested.
    pub nack_requests: u64,
    /// NACK messages the receiver sent.
    pub nacks_sent: u64,
    /// Retransmissions of packets the receiver already had.
    pub retransmissions_duplicate: u64,
    /// Simulated runs (only the sender knows it; a real sender writes it to
    /// `send_summary.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmissions_expired: Option<u64>,
    /// Retransmissions that arrived after their frame was finished.
    pub retransmissions_late: u64,
    /// Real runs: retransmissions the receiver heard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmissions_received: Option<u64>,
    /// Retransmissions the sender sent.
    pub retransmissions_sent: u64,
    /// Retransmissions that brought a packet the player was missing.
    pub retransmissions_useful: u64,
}

/// One entry of a multipath flow's `paths`. The counters from `bytes_sent`
/// to `target_kbps` are the session's and present once it has reported
/// them (at the end of the run); `path`, `bottleneck` and `owd_ms` always.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSummary {
    /// The name of the path's bottleneck link.
    pub bottleneck: String,
    /// Wire bytes sent on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_sent: Option<u64>,
    /// Keep-alive packets sent on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keepalives: Option<u64>,
    /// Packets lost in the network / packets sent on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_rate: Option<f64>,
    /// Media segments the scheduler gave the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_packets_scheduled: Option<u64>,
    /// One-way delay of the packets delivered on the path.
    pub owd_ms: DelayMs,
    /// Packets the network dropped on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_lost: Option<u64>,
    /// Packets the receiver got on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_received: Option<u64>,
    /// Packets sent on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets_sent: Option<u64>,
    /// Padding packets sent on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding_packets: Option<u64>,
    /// The path's name.
    pub path: String,
    /// Media packets the sender took as lost without a loss report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presumed_lost: Option<u64>,
    /// Packets the path's feedback reported lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_lost: Option<u64>,
    /// Retransmissions sent on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmissions: Option<u64>,
    /// Segments new to the receive buffer that came on the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments_new: Option<u64>,
    /// The path's share of the media segments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// The path's smoothed RTT, once it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub srtt_ms: Option<f64>,
    /// The path controller's target at the end of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_kbps: Option<f64>,
}

/// A multipath flow's `multipath` session counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultipathCounters {
    /// Frames dropped before packetization because the paths' queues were
    /// full.
    pub frames_dropped_at_sender: u64,
    /// Key frames produced on the receiver's request.
    pub key_frames_requested: u64,
    /// Retransmissions sent.
    pub retransmissions: u64,
    /// Lost segments older than the receive buffer, not retransmitted.
    pub retransmissions_expired: u64,
    /// Losses of segments already acknowledged on another path (or already
    /// queued for retransmission): not retransmitted.
    pub retransmissions_unneeded: u64,
    /// Copies of segments already received.
    pub segments_duplicate: u64,
    /// Segments of frames already finished or past their wait.
    pub segments_late: u64,
}

/// A live flow's `live` object: the reliable transport's results
/// (`docs/metrics.md`, "`live` (live flows)").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveSummary {
    /// Non-video bytes / all bytes sent.
    pub bandwidth_cost: f64,
    /// The stream's bitrate.
    pub bitrate_kbps: f64,
    /// Wire bytes sent, per packet kind.
    pub bytes_sent: PerPacketKind,
    /// The controller's name.
    pub cc: String,
    /// Chunks the source created.
    pub data_created: u64,
    /// Chunks delivered in order, exactly once.
    pub data_delivered: u64,
    /// Data packets whose chunk had already arrived.
    pub data_duplicate: u64,
    /// Chunks declared lost at least once.
    pub data_lost: u64,
    /// Lost chunks acknowledged since.
    pub data_recovered: u64,
    /// Frames completed after their playout deadline / frames completed.
    pub deadline_miss_rate: f64,
    /// Whether the whole stream was delivered, once, in order.
    pub delivered_all: bool,
    /// Recovery deterioration rate.
    pub deterioration_rate: f64,
    /// 1 if the delivered data's digest differs from the created data's.
    pub digest_mismatch: u8,
    /// Packets rebuilt from FEC repairs.
    pub fec_recovered: u64,
    /// AutoRec with `fixed_level` and a loss: its formulas at that level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formula: Option<AutoRecFormula>,
    /// Frame delay (ms).
    pub frame_delay_ms: LiveFrameDelay,
    /// Frames completed at the player.
    pub frames: u64,
    /// Frames the source produced.
    pub frames_created: u64,
    /// Freezes per 100 s of playback.
    pub freezes_per_100s: f64,
    /// Σ freeze durations / playback time.
    pub frozen_fraction: f64,
    /// Payload delivered in order / active time.
    pub goodput_kbps: f64,
    /// Packets lost / (acknowledged + lost).
    pub loss_rate_measured: f64,
    /// With `recovery_latency_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_recovery_latency_ms: Option<f64>,
    /// AutoRec with samples: mean redundancy level K.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_redundancy_level: Option<f64>,
    /// Data in `recovery_latency_ms`.
    pub multi_recoveries: u64,
    /// Packets acknowledged.
    pub packets_acked: u64,
    /// Packets whose number had been seen.
    pub packets_duplicate: u64,
    /// Packets the sender declared lost.
    pub packets_lost: u64,
    /// Packets sent, per packet kind.
    pub packets_sent: PerPacketKind,
    /// Payload bytes the source created.
    pub payload_created: u64,
    /// Payload bytes delivered in order.
    pub payload_delivered: u64,
    /// PTO probes carrying data.
    pub pto_probes: u64,
    /// Mean recovery latency over every recovered datum, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_latency_all_ms: Option<f64>,
    /// Mean recovery latency of data that needed two or more
    /// retransmissions, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_latency_ms: Option<f64>,
    /// With `recovery_latency_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_latency_p95_ms: Option<f64>,
    /// Replicas / originals sent.
    pub redundancy_cost: f64,
    /// AutoRec: the redundancy level K at the end of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redundancy_level: Option<u32>,
    /// Replicas sent in off-mode.
    pub reinjections_off_mode: u64,
    /// Replicas sent opportunistically in on-mode.
    pub reinjections_opportunistic: u64,
    /// The recovery scheme's name.
    pub scheme: String,
    /// Mean loss-detection time, if a packet was declared lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_unit_ms: Option<f64>,
}

/// A live flow's packets or bytes sent, per kind of packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerPacketKind {
    /// First transmissions of a datum.
    pub original: u64,
    /// PTO probes with nothing to carry.
    pub ping: u64,
    /// PTO probes carrying an already-sent datum.
    pub probe: u64,
    /// AutoRec replicas.
    pub reinjection: u64,
    /// FEC repairs.
    pub repair: u64,
    /// ARQ retransmissions.
    pub retransmission: u64,
    /// The sum of the above.
    pub total: u64,
}

/// A live flow's `frame_delay_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveFrameDelay {
    /// Once a frame completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Once a frame completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
}

/// A live flow's `formula`: AutoRec §V-A eqs. 1–3 at the pinned level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoRecFormula {
    /// H(K) (rounded to 6 decimals).
    pub goodput_reduction: f64,
    /// The pinned redundancy level K.
    pub k: u32,
    /// F(K).
    pub recovery_latency_ms: f64,
    /// G(K) = K·R (rounded to 6 decimals).
    pub redundancy_cost: f64,
}

/// One entry of `links`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSummary {
    /// `drops_queue` + `drops_loss`.
    pub drops: u64,
    /// Packets lost to the loss model.
    pub drops_loss: u64,
    /// Packets the queue dropped.
    pub drops_queue: u64,
    /// The link's name.
    pub name: String,
    /// Packets that arrived at the link.
    pub packets: u64,
    /// Queueing delay of the admitted packets.
    pub queue_delay_ms: DelayMs,
    /// Delivered bits / (capacity × run time).
    pub utilization: f64,
}
