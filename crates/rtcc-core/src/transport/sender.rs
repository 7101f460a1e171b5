//! The sender of the QUIC-like reliable live-streaming transport (CDN → player,
//! `papers/autorec.txt` §II, §VII): a live source hands it encoded frames,
//! it cuts them into data chunks (one datum per packet), sends them in
//! packets whose numbers are never reused, detects losses per RFC 9002
//! ([`LossDetector`]), retransmits every lost datum in a new packet (ARQ,
//! no retransmission limit: the stream is reliable), runs a pluggable
//! congestion controller ([`crate::cc`]; BBR by default) behind a pacer, and
//! optionally accelerates recovery with AutoRec (`papers/autorec.txt` §IV–§V,
//! [`crate::recovery::autorec`]).
//!
//! **On-mode and off-mode** (§III-B): the sender is in *off-mode* when it
//! has nothing new to send and no datum waiting for retransmission
//! ([`TransportSender::is_off_mode`]): a live source produces frames at its
//! bitrate, so a sender whose path is faster than the stream empties its
//! queue between frames.
//!
//! **Newest copy** (§VIII-C): each datum records the packet number of its
//! newest copy (original, retransmission, replica or probe). Only the loss of
//! that copy triggers a retransmission; the loss of an older copy is ignored
//! by ARQ (it is still a loss for the congestion controller and for AutoRec's
//! loss rate, since the packet really was lost on the path, and it stays in
//! bytes in flight until declared lost or acknowledged, since it really was
//! in the network). An acknowledgement of any copy completes the datum and
//! ends its loss tracking.
//!
//! **FEC** ([`RecoveryScheme::Fec`], the WebRTC-style baselines of §VII-A):
//! every data packet is reported to an XOR [`FecEncoder`], whose groups close
//! at the end of each frame; its repair packets are ack-eliciting, count in
//! flight and are paid from the controller's budget. The protection factor
//! follows a smoothed loss rate (an EWMA over resolved packets,
//! [`FEC_LOSS_GAIN`]) and the smoothed RTT. A receiver that rebuilds a lost
//! packet acknowledges it like a received one, so ARQ does not resend it.
//!
//! **What goes first** when the pacer and the window allow a packet: PTO
//! probes (which ignore both, RFC 9002 §7.5), ARQ retransmissions (oldest
//! loss first), FEC repairs, AutoRec's opportunistic reinjection when a datum's silence
//! exceeds `T_thres` (§V-B: "regardless of whether the off-mode is entered
//! or not"), new data, and in off-mode AutoRec's off-mode reinjection.
//!
//! **Congestion-controller feedback.** QUIC's ACK frames carry ranges and an
//! ACK delay, no per-packet arrival times. Each ACK frame becomes one
//! [`FeedbackReport`] at the sender's `now`: newly acknowledged packets with
//! `arrival = now − ack_delay` (as if all arrived when the largest did; the
//! controllers compute an RTT sample as `now − send − (report − arrival)`, so
//! each gets `now − send − ack_delay`, QUIC's adjusted RTT) and newly lost
//! packets with no arrival.
//!
//! **Recovery metrics** (§III-C, §VII): see [`RecoveryMetrics`].

use std::collections::VecDeque;

use crate::cc::{CcConfig, CongestionController, Controller, TraceSink};
use crate::media::encoder::EncodedFrame;
use crate::media::packetizer::{MediaPacket, Packetizer};
use crate::pacer::Pacer;
use crate::packet::{FeedbackReport, PacketKind, PacketResult, SentPacket};
use crate::recovery::autorec::{
    reinjection_threshold, AutoRecConfig, AutoRecConfigError, DataId, IntervalReport,
    RedundancyAdapter, ReinjectionQueue,
};
use crate::recovery::fec::{FecConfig, FecConfigError, FecEncoder};
use crate::time::{Duration, Instant};
use crate::transport::ack::{AckFrame, PacketNumber};
use crate::transport::loss::{
    AckError, AckOutcome, LossDetector, LossDetectorConfig, LostPacket, TimeoutKind,
    TransportPacket,
};
use crate::transport::metrics::RecoveryMetrics;
use crate::transport::wire::{CopyKind, Datagram, Payload, MAX_CHUNK, PACKET_OVERHEAD, PING_SIZE};
use crate::units::{Bitrate, Bytes, Probability};

/// Weight of one resolved packet in the loss-rate estimate FEC protects
/// against: 1/1024, about one second of packets at 10 Mbps. libwebrtc feeds
/// its FEC the RTCP receiver report's loss fraction (one value per report
/// interval, ~1 s) after filtering; ours is the per-packet equivalent.
pub const FEC_LOSS_GAIN: f64 = 1.0 / 1024.0;

/// Packets whose content the sender can still tell ([`TransportSender::content_of`])
/// after they left flight: enough for a receiver-side repair of any recent
/// packet; older entries are dropped.
pub const CONTENT_LOG: u64 = 1 << 16;

/// AutoRec as the transport runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoRecSettings {
    /// Tolerances and adapter settings (§V-A).
    pub config: AutoRecConfig,
    /// Opportunistic reinjection in on-mode (§V-B); off only for the
    /// ablation of Fig. 17.
    pub opportunistic: bool,
    /// A redundancy level fixed for the whole run instead of the adapter's
    /// decision, as in the formula validation of §VII-A ("we slightly modify
    /// the Redundancy Adapter so that the redundancy level remains a fixed
    /// preset value"). The adapter still measures `R` and `T_unit`.
    pub fixed_level: Option<u32>,
    /// Space off-mode replicas: in off-mode too, a datum is reinjected only
    /// once its silence exceeds `T_thres` (eq. 5). The paper's off-mode
    /// reinjects the oldest allowed datum whenever the sender is idle, so a
    /// lone datum's replicas leave back to back (docs/algorithms/autorec.md,
    /// Interpretation 11).
    pub off_mode_spacing: bool,
}

impl Default for AutoRecSettings {
    fn default() -> Self {
        AutoRecSettings {
            config: AutoRecConfig::default(),
            opportunistic: true,
            fixed_level: None,
            off_mode_spacing: false,
        }
    }
}

/// The loss-recovery scheme on top of the transport's own ARQ.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum RecoveryScheme {
    /// Plain ARQ (RTX): one retransmission per detected loss, as QUIC does.
    #[default]
    Rtx,
    /// ARQ plus AutoRec's reinjection (§IV–§V).
    AutoRec(AutoRecSettings),
    /// ARQ plus XOR FEC ([`crate::recovery::fec`]).
    Fec(FecConfig),
}

impl RecoveryScheme {
    /// The scheme's name in scenarios and outputs.
    pub fn name(&self) -> &'static str {
        match self {
            RecoveryScheme::Rtx => "rtx",
            RecoveryScheme::AutoRec(_) => "autorec",
            RecoveryScheme::Fec(_) => "fec",
        }
    }
}

/// Configuration of a [`TransportSender`].
#[derive(Debug, Clone, PartialEq)]
pub struct TransportSenderConfig {
    /// Congestion controller (BBR by default, as in §VII).
    pub cc: CcConfig,
    /// How frames are cut into data chunks: [`MAX_CHUNK`] payload bytes and
    /// [`PACKET_OVERHEAD`] by default.
    pub packetizer: Packetizer,
    /// Loss detection (RFC 9002 defaults).
    pub loss: LossDetectorConfig,
    /// Loss recovery on top of ARQ.
    pub recovery: RecoveryScheme,
}

impl Default for TransportSenderConfig {
    fn default() -> Self {
        TransportSenderConfig {
            cc: CcConfig::default_for("bbr").unwrap_or_else(|| {
                // Invariant: "bbr" is in CcConfig::NAMES.
                unreachable!("bbr is a built-in controller")
            }),
            packetizer: Packetizer {
                mtu: MAX_CHUNK,
                header_overhead: PACKET_OVERHEAD,
            },
            loss: LossDetectorConfig::default(),
            recovery: RecoveryScheme::Rtx,
        }
    }
}

/// Invalid sender configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportConfigError {
    /// AutoRec's tolerances are out of range.
    #[error("autorec: {0}")]
    AutoRec(#[from] AutoRecConfigError),
    /// A fixed redundancy level above the configured maximum.
    #[error("autorec fixed_level {level} is above max_redundancy_level {max}")]
    FixedLevelTooHigh {
        /// The fixed level.
        level: u32,
        /// The maximum.
        max: u32,
    },
    /// FEC settings out of range.
    #[error("fec: {0}")]
    Fec(#[from] FecConfigError),
    /// A zero chunk size.
    #[error("packetizer mtu must be at least one byte")]
    ZeroChunk,
}

/// Counters of a [`TransportSender`]. Byte counts are wire bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TransportSenderStats {
    /// Frames handed over by the source.
    pub frames: u64,
    /// Data chunks created (one per first transmission).
    pub data_created: u64,
    /// Payload bytes of those chunks (the video stream).
    pub payload_created: u64,
    /// Packets sent, of every kind.
    pub packets_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// First transmissions.
    pub originals_sent: u64,
    /// Their bytes.
    pub original_bytes: u64,
    /// ARQ retransmissions.
    pub retransmissions_sent: u64,
    /// Their bytes.
    pub retransmission_bytes: u64,
    /// AutoRec replicas.
    pub reinjections_sent: u64,
    /// Their bytes.
    pub reinjection_bytes: u64,
    /// Replicas sent in off-mode.
    pub reinjections_off_mode: u64,
    /// Replicas sent opportunistically in on-mode.
    pub reinjections_opportunistic: u64,
    /// FEC repair packets.
    pub repairs_sent: u64,
    /// Their bytes.
    pub repair_bytes: u64,
    /// PTO probe packets (data or PING).
    pub probes_sent: u64,
    /// Their bytes.
    pub probe_bytes: u64,
    /// ACK frames processed.
    pub acks_received: u64,
    /// ACK frames refused (they acknowledged a packet never sent).
    pub acks_invalid: u64,
    /// Packets acknowledged.
    pub packets_acked: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Losses of a datum's older copy, ignored by ARQ (§VIII-C).
    pub superseded_losses: u64,
    /// Data acknowledged (each datum once).
    pub data_acked: u64,
    /// Sending opportunities spent in off-mode (nothing new, nothing to
    /// retransmit) — counted each time the sender found itself idle with
    /// the window open.
    pub off_mode_polls: u64,
}

/// One datum (media chunk) not yet acknowledged.
#[derive(Debug, Clone, Copy)]
struct Datum {
    media: MediaPacket,
    /// Packet number of its newest copy, once sent.
    newest: Option<PacketNumber>,
    /// When it was first declared lost, and that loss's detection time.
    first_loss: Option<(Instant, Duration)>,
    /// Packet number of its first ARQ retransmission.
    first_recovery: Option<PacketNumber>,
    acked: bool,
    /// Waiting in the retransmission queue.
    queued_for_retx: bool,
}

/// What the sender remembers of one packet number.
#[derive(Debug, Clone, Copy)]
struct PnRecord {
    sent: SentPacket,
    payload: Payload,
}

/// Token value of packets that carry no datum.
const NO_DATUM: u64 = u64::MAX;

/// The sender (module doc).
///
/// Inputs: [`on_frame`](Self::on_frame), [`on_ack`](Self::on_ack),
/// [`on_timeout`](Self::on_timeout). Outputs:
/// [`poll_transmit`](Self::poll_transmit) (call until `None`), then
/// [`poll_timeout`](Self::poll_timeout).
#[derive(Debug)]
pub struct TransportSender {
    config: TransportSenderConfig,
    cc: Controller,
    pacer: Pacer,
    loss: LossDetector,
    /// Data `data_base ..`; the front is the oldest unacknowledged datum.
    data: VecDeque<Datum>,
    data_base: DataId,
    /// Id of the next datum never sent.
    next_new: DataId,
    /// Lost data waiting for their ARQ retransmission, oldest loss first.
    retx: VecDeque<DataId>,
    /// PTO probes still to send.
    probes_pending: usize,
    /// Packet numbers `log_base ..`: what each carried.
    log: VecDeque<PnRecord>,
    log_base: PacketNumber,
    next_pn: PacketNumber,
    autorec: Option<AutoRecState>,
    fec: Option<FecEncoder>,
    /// Smoothed loss rate for FEC ([`FEC_LOSS_GAIN`]).
    fec_loss: f64,
    report: FeedbackReport,
    /// Reused by every ACK: the loss detector's outcome (no allocation per ACK).
    ack_outcome: AckOutcome,
    /// Reused by every loss-detection timeout: the packets it declared lost.
    timeout_lost: Vec<LostPacket>,
    stats: TransportSenderStats,
    metrics: RecoveryMetrics,
}

#[derive(Debug)]
struct AutoRecState {
    adapter: RedundancyAdapter,
    queue: ReinjectionQueue,
    opportunistic: bool,
    off_mode_spacing: bool,
    fixed_level: Option<u32>,
    /// `T_thres` in force (eq. 5), `None` while nothing is to be reinjected.
    t_thres: Option<Duration>,
    last_report: Option<IntervalReport>,
}

impl AutoRecState {
    fn level(&self) -> u32 {
        self.queue.redundancy_level()
    }

    /// Apply the adapter's decision (or the fixed level) and `T_thres`.
    fn apply(&mut self, report: Option<IntervalReport>) {
        if let Some(r) = report {
            self.last_report = Some(r);
        }
        let level = self
            .fixed_level
            .unwrap_or_else(|| self.adapter.redundancy_level());
        self.queue.set_redundancy_level(level);
        self.t_thres = match self.fixed_level {
            None => self.adapter.reinjection_threshold(),
            // Fixed level: eq. 5 with the latest measured T_unit.
            Some(k) if k > 0 => self
                .last_report
                .and_then(|r| r.t_unit)
                .map(|t| reinjection_threshold(t, k)),
            Some(_) => None,
        };
    }
}

impl TransportSender {
    /// A sender starting at `now`.
    pub fn new(now: Instant, config: TransportSenderConfig) -> Result<Self, TransportConfigError> {
        if config.packetizer.mtu.is_zero() {
            return Err(TransportConfigError::ZeroChunk);
        }
        let fec = match &config.recovery {
            RecoveryScheme::Fec(c) => Some(FecEncoder::new(now, *c)?),
            _ => None,
        };
        let autorec = match &config.recovery {
            RecoveryScheme::Rtx | RecoveryScheme::Fec(_) => None,
            RecoveryScheme::AutoRec(s) => {
                if let Some(level) = s.fixed_level {
                    if level > s.config.max_redundancy_level {
                        return Err(TransportConfigError::FixedLevelTooHigh {
                            level,
                            max: s.config.max_redundancy_level,
                        });
                    }
                }
                let mut st = AutoRecState {
                    adapter: RedundancyAdapter::new(now, s.config.clone())?,
                    queue: ReinjectionQueue::new(),
                    opportunistic: s.opportunistic,
                    off_mode_spacing: s.off_mode_spacing,
                    fixed_level: s.fixed_level,
                    t_thres: None,
                    last_report: None,
                };
                st.apply(None);
                Some(st)
            }
        };
        let cc = config.cc.build(now);
        let pacer = Pacer::new(now, cc.send_budget());
        Ok(TransportSender {
            loss: LossDetector::new(config.loss),
            config,
            cc,
            pacer,
            data: VecDeque::new(),
            data_base: 0,
            next_new: 0,
            retx: VecDeque::new(),
            probes_pending: 0,
            log: VecDeque::new(),
            log_base: 0,
            next_pn: 0,
            autorec,
            fec,
            fec_loss: 0.0,
            report: FeedbackReport::default(),
            ack_outcome: AckOutcome::default(),
            timeout_lost: Vec::new(),
            stats: TransportSenderStats::default(),
            metrics: RecoveryMetrics::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TransportSenderConfig {
        &self.config
    }
    /// The congestion controller.
    pub fn controller(&self) -> &Controller {
        &self.cc
    }
    /// Loss detection and its RTT estimator.
    pub fn loss_detector(&self) -> &LossDetector {
        &self.loss
    }
    /// Counters.
    pub fn stats(&self) -> &TransportSenderStats {
        &self.stats
    }
    /// Recovery metrics (§III-C, §VII).
    pub fn metrics(&self) -> &RecoveryMetrics {
        &self.metrics
    }
    /// AutoRec's redundancy level in force, if AutoRec runs.
    pub fn redundancy_level(&self) -> Option<u32> {
        self.autorec.as_ref().map(AutoRecState::level)
    }
    /// AutoRec's latest decision-interval report, if any.
    pub fn autorec_report(&self) -> Option<&IntervalReport> {
        self.autorec.as_ref().and_then(|a| a.last_report.as_ref())
    }
    /// Bytes in flight (RFC 9002 §2).
    pub fn bytes_in_flight(&self) -> Bytes {
        self.loss.bytes_in_flight()
    }
    /// Smoothed RTT, once sampled.
    pub fn srtt(&self) -> Option<Duration> {
        let rtt = self.loss.rtt();
        rtt.has_sample().then(|| rtt.smoothed_rtt())
    }
    /// Data created and never sent.
    pub fn unsent_data(&self) -> u64 {
        self.data_base + self.data.len() as u64 - self.next_new
    }
    /// Data not yet acknowledged (sent or not).
    pub fn unacked_data(&self) -> u64 {
        self.data.iter().filter(|d| !d.acked).count() as u64
    }
    /// True when every datum created so far is acknowledged.
    pub fn all_acked(&self) -> bool {
        self.data.is_empty()
    }

    /// The off-mode signal (§III-B): nothing new to send, nothing to
    /// retransmit, no repair waiting.
    pub fn is_off_mode(&self) -> bool {
        self.next_new == self.data_base + self.data.len() as u64
            && self.retx.is_empty()
            && !self.fec.as_ref().is_some_and(FecEncoder::has_repair)
    }

    /// The FEC encoder, when FEC runs.
    pub fn fec(&self) -> Option<&FecEncoder> {
        self.fec.as_ref()
    }

    /// Names of the variables [`trace_recovery`](Self::trace_recovery)
    /// reports for this sender's recovery scheme (conventions of
    /// [`CongestionController::trace_variables`]; none is a controller's
    /// name, so that both go to one trace per flow).
    pub fn recovery_trace_variables(&self) -> &'static [&'static str] {
        match self.config.recovery {
            RecoveryScheme::Rtx => &["retransmissions_sent"],
            RecoveryScheme::AutoRec(_) => &[
                "redundancy_level",
                "k_alpha",
                "k_beta",
                "k_gamma",
                "interval_loss_rate",
                "t_unit_ms",
                "t_thres_ms",
                "replicas_sent",
                "retransmissions_sent",
            ],
            RecoveryScheme::Fec(_) => &[
                "fec_loss_rate",
                "protection_factor",
                "repairs_sent",
                "retransmissions_sent",
            ],
        }
    }

    /// Reports the recovery scheme's state to `sink`: ARQ's retransmissions;
    /// for AutoRec (`papers/autorec.txt` §V) the redundancy level K in force
    /// (eq. 4), the latest decision's K_α, K_β, K_γ (§V-A, from eqs. 1–3),
    /// its interval's loss rate R and T_unit, T_thres (§V-B, eq. 5) and the
    /// replicas sent; for FEC the
    /// smoothed loss rate it protects against, its protection factor and the
    /// repair packets sent. Values not known yet (before AutoRec's first
    /// decision) are left out. A pure query; it allocates nothing.
    pub fn trace_recovery(&self, sink: &mut dyn TraceSink) {
        if let Some(a) = &self.autorec {
            sink.record("redundancy_level", f64::from(a.level()));
            if let Some(r) = &a.last_report {
                sink.record("k_alpha", f64::from(r.decision.k_alpha));
                sink.record("k_beta", f64::from(r.decision.k_beta));
                sink.record("k_gamma", f64::from(r.decision.k_gamma));
                sink.record("interval_loss_rate", r.loss_rate.get());
                if let Some(t) = r.t_unit {
                    sink.record("t_unit_ms", t.as_millis_f64());
                }
            }
            if let Some(t) = a.t_thres {
                sink.record("t_thres_ms", t.as_millis_f64());
            }
            sink.record("replicas_sent", self.stats.reinjections_sent as f64);
        }
        if let Some(f) = &self.fec {
            sink.record("fec_loss_rate", self.fec_loss);
            sink.record("protection_factor", f.protection_factor());
            sink.record("repairs_sent", self.stats.repairs_sent as f64);
        }
        sink.record(
            "retransmissions_sent",
            self.stats.retransmissions_sent as f64,
        );
    }

    /// What packet `pn` carried, if it is still in the log (the last
    /// [`CONTENT_LOG`] packet numbers, and every packet in flight). A
    /// receiver that rebuilds a lost packet from repair data gets exactly this.
    pub fn content_of(&self, pn: PacketNumber) -> Option<Payload> {
        let i = pn.checked_sub(self.log_base)?;
        self.log.get(usize::try_from(i).ok()?).map(|r| r.payload)
    }

    /// The live source hands over an encoded frame at `now`: it is cut into
    /// data chunks queued behind the data already waiting.
    pub fn on_frame(&mut self, now: Instant, frame: &EncodedFrame) {
        let _ = now;
        self.stats.frames += 1;
        let data = &mut self.data;
        let stats = &mut self.stats;
        self.config.packetizer.packetize(
            frame.frame_id,
            frame.frame_type,
            frame.capture_time,
            frame.size,
            |media| {
                stats.data_created += 1;
                stats.payload_created += media.payload.get();
                data.push_back(Datum {
                    media,
                    newest: None,
                    first_loss: None,
                    first_recovery: None,
                    acked: false,
                    queued_for_retx: false,
                });
            },
        );
    }

    /// An ACK frame arrived at `now`. A frame acknowledging a packet never
    /// sent is refused (counted, nothing changes).
    pub fn on_ack(&mut self, now: Instant, ack: &AckFrame) -> Result<(), AckError> {
        // Taken out of `self` for the walk below, put back at the end: its
        // vectors keep their capacity from ACK to ACK.
        let mut outcome = std::mem::take(&mut self.ack_outcome);
        if let Err(e) = self.loss.on_ack_received_into(now, ack, &mut outcome) {
            self.ack_outcome = outcome;
            self.stats.acks_invalid += 1;
            return Err(e);
        }
        self.stats.acks_received += 1;
        let arrival = now - ack.ack_delay().min(now - Instant::ZERO);
        let mut report = std::mem::take(&mut self.report);
        report.report_time = now;
        report.packets.clear();
        for p in &outcome.newly_acked {
            self.on_packet_acked(now, p);
            if let Some(r) = self.record(p.packet_number) {
                report.packets.push(PacketResult {
                    sent: r.sent,
                    arrival: Some(arrival),
                });
            }
        }
        for l in &outcome.lost {
            if let Some(r) = self.record(l.packet.packet_number) {
                report.packets.push(PacketResult {
                    sent: r.sent,
                    arrival: None,
                });
            }
            self.on_packet_lost(now, l);
        }
        // Packet numbers are unique in a report (acked and lost are
        // disjoint), so the unstable sort gives the stable sort's order, and
        // it never allocates (the stable one does past a few dozen entries).
        report.packets.sort_unstable_by_key(|p| p.sent.seq);
        if !report.packets.is_empty() {
            self.cc.on_feedback(now, &report);
        }
        self.report = report;
        if outcome.rtt_updated {
            if let Some(a) = &mut self.autorec {
                a.adapter.on_rtt(now, self.loss.rtt().smoothed_rtt());
            }
        }
        self.ack_outcome = outcome;
        self.after_event(now);
        Ok(())
    }

    /// Timers: loss detection, PTO, AutoRec's decision interval, the
    /// controller's own.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.loss.poll_timeout().is_some_and(|t| t <= now) {
            let mut lost = std::mem::take(&mut self.timeout_lost);
            match self.loss.on_timeout_into(now, &mut lost) {
                TimeoutKind::NotDue => {}
                TimeoutKind::Lost => {
                    let mut report = std::mem::take(&mut self.report);
                    report.report_time = now;
                    report.packets.clear();
                    for l in &lost {
                        if let Some(r) = self.record(l.packet.packet_number) {
                            report.packets.push(PacketResult {
                                sent: r.sent,
                                arrival: None,
                            });
                        }
                        self.on_packet_lost(now, l);
                    }
                    if !report.packets.is_empty() {
                        self.cc.on_feedback(now, &report);
                    }
                    self.report = report;
                }
                TimeoutKind::Probe { count } => {
                    self.probes_pending = self.probes_pending.max(count);
                }
            }
            self.timeout_lost = lost;
        }
        if self.cc.poll_timeout().is_some_and(|t| t <= now) {
            self.cc.on_timeout(now);
        }
        self.after_event(now);
    }

    /// The next packet to send now, if any may go.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Datagram> {
        self.decide(now);
        if self.probes_pending > 0 {
            self.probes_pending -= 1;
            return Some(self.send_probe(now));
        }
        let off_mode = self.is_off_mode();
        let want = !off_mode || self.reinjection_candidate(now, true).is_some();
        if !want {
            return None;
        }
        if self.window_full() {
            self.pacer.cancel_due();
            return None;
        }
        if !self.pacer.can_send(now) {
            return None;
        }
        // 1. ARQ retransmissions, oldest loss first.
        while let Some(id) = self.retx.pop_front() {
            let Some(i) = self.index(id) else { continue };
            self.data[i].queued_for_retx = false;
            if self.data[i].acked {
                continue;
            }
            return Some(self.send_datum(now, id, CopyKind::Retransmission));
        }
        // 2. FEC repairs.
        if let Some(r) = self.fec.as_mut().and_then(|f| f.poll_repair(now)) {
            self.stats.repairs_sent += 1;
            self.stats.repair_bytes += r.size().get();
            return Some(self.send_packet(
                now,
                r.size(),
                Payload::Repair(r),
                PacketKind::Fec,
                NO_DATUM,
            ));
        }
        // 3. Opportunistic reinjection (on-mode, silence > T_thres).
        if !off_mode {
            if let Some(id) = self.reinject(now, false) {
                self.stats.reinjections_opportunistic += 1;
                return Some(self.send_datum(now, id, CopyKind::Reinjection));
            }
        }
        // 4. New data.
        if self.next_new < self.data_base + self.data.len() as u64 {
            let id = self.next_new;
            self.next_new += 1;
            return Some(self.send_datum(now, id, CopyKind::Original));
        }
        // 5. Off-mode reinjection.
        self.stats.off_mode_polls += 1;
        let id = self.reinject(now, true)?;
        self.stats.reinjections_off_mode += 1;
        Some(self.send_datum(now, id, CopyKind::Reinjection))
    }

    /// When the sender next needs [`on_timeout`](Self::on_timeout) or a new
    /// [`poll_transmit`](Self::poll_transmit).
    pub fn poll_timeout(&mut self, now: Instant) -> Option<Instant> {
        let mut next = self.loss.poll_timeout();
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        };
        consider(self.cc.poll_timeout());
        if self.probes_pending > 0 {
            consider(Some(now));
        }
        if let Some(a) = &self.autorec {
            consider(Some(a.adapter.poll_timeout().max(now)));
        }
        if self.window_full() {
            // An ACK or a loss-detection timeout opens it.
            return next;
        }
        let off_mode = self.is_off_mode();
        if !off_mode || self.reinjection_candidate(now, true).is_some() {
            consider(Some(self.pacer.next_send_time(now)));
        }
        // On-mode (or off-mode with spacing), nothing sent meanwhile: wake
        // when a datum's silence exceeds T_thres (and the pacer allows).
        let spaced = if off_mode {
            self.off_mode_spacing_deadline()
        } else {
            self.opportunistic_deadline()
        };
        if let Some(t) = spaced {
            consider(Some(t.max(self.pacer.next_send_time(now))));
        }
        next
    }

    // ---- internals ----

    fn index(&self, id: DataId) -> Option<usize> {
        let i = id.checked_sub(self.data_base)?;
        usize::try_from(i).ok().filter(|&i| i < self.data.len())
    }

    fn record(&self, pn: PacketNumber) -> Option<&PnRecord> {
        let i = pn.checked_sub(self.log_base)?;
        self.log.get(usize::try_from(i).ok()?)
    }

    fn window_full(&self) -> bool {
        self.cc
            .send_budget()
            .cwnd
            .is_some_and(|w| self.loss.bytes_in_flight() >= w)
    }

    /// Run AutoRec's decision if its interval is over.
    fn decide(&mut self, now: Instant) {
        if let Some(a) = &mut self.autorec {
            if a.adapter.poll_timeout() <= now {
                let r = a.adapter.poll_decision(now);
                a.apply(r);
            }
        }
    }

    /// Is there a datum AutoRec would reinject now (pure query)?
    fn reinjection_candidate(&self, now: Instant, off_mode: bool) -> Option<()> {
        let a = self.autorec.as_ref()?;
        if off_mode {
            if a.off_mode_spacing {
                let t = a.t_thres?;
                a.queue
                    .opportunistic_deadline(t)
                    .filter(|&d| d <= now)
                    .map(|_| ())
            } else {
                a.queue.has_off_mode_candidate().then_some(())
            }
        } else {
            let t = a.t_thres.filter(|_| a.opportunistic)?;
            a.queue
                .opportunistic_deadline(t)
                .filter(|&d| d <= now)
                .map(|_| ())
        }
    }

    fn opportunistic_deadline(&self) -> Option<Instant> {
        let a = self.autorec.as_ref()?;
        let t = a.t_thres.filter(|_| a.opportunistic)?;
        a.queue.opportunistic_deadline(t)
    }

    /// With off-mode spacing: when the oldest allowed datum's silence will
    /// exceed `T_thres`.
    fn off_mode_spacing_deadline(&self) -> Option<Instant> {
        let a = self.autorec.as_ref()?;
        let t = a.t_thres.filter(|_| a.off_mode_spacing)?;
        a.queue.opportunistic_deadline(t)
    }

    /// Take the datum AutoRec reinjects now, if any.
    fn reinject(&mut self, now: Instant, off_mode: bool) -> Option<DataId> {
        loop {
            let a = self.autorec.as_mut()?;
            let r = if off_mode && a.off_mode_spacing {
                a.queue.next_for_off_mode_spaced(now, a.t_thres?)?
            } else if off_mode {
                a.queue.next_for_off_mode(now)?
            } else {
                let t = a.t_thres.filter(|_| a.opportunistic)?;
                a.queue.next_opportunistic(now, t)?
            };
            // The queue holds only unacknowledged data (acks remove them);
            // guard anyway so that a stale entry can never resend acked data.
            match self.index(r.data_id) {
                Some(i) if !self.data[i].acked => return Some(r.data_id),
                _ => {
                    if let Some(a) = self.autorec.as_mut() {
                        a.queue.forget(r.data_id);
                    }
                }
            }
        }
    }

    fn send_probe(&mut self, now: Instant) -> Datagram {
        // RFC 9002 §6.2.4: new data if available, else retransmit data in
        // flight; a PING if there is none.
        if self.next_new < self.data_base + self.data.len() as u64 {
            let id = self.next_new;
            self.next_new += 1;
            let d = self.send_datum(now, id, CopyKind::Original);
            self.stats.probes_sent += 1;
            return d;
        }
        if let Some(id) = self
            .data
            .iter()
            .position(|d| !d.acked && d.newest.is_some())
            .map(|i| self.data_base + i as u64)
        {
            return self.send_datum(now, id, CopyKind::Probe);
        }
        self.send_packet(now, PING_SIZE, Payload::Ping, PacketKind::Padding, NO_DATUM)
    }

    fn send_datum(&mut self, now: Instant, id: DataId, copy: CopyKind) -> Datagram {
        let i = self.index(id).unwrap_or_else(|| {
            // Invariant: callers take ids from the table (retx queue entries
            // are checked, new ids are below the table's end).
            unreachable!("datum {id} not in the table")
        });
        let media = self.data[i].media;
        let kind = match copy {
            CopyKind::Original => PacketKind::Media,
            _ => PacketKind::Retransmission,
        };
        let pn = self.next_pn;
        let d = self.send_packet(
            now,
            media.wire_size,
            Payload::Data { id, media, copy },
            kind,
            id,
        );
        let datum = &mut self.data[i];
        datum.newest = Some(pn);
        let size = media.wire_size.get();
        match copy {
            CopyKind::Original => {
                self.stats.originals_sent += 1;
                self.stats.original_bytes += size;
            }
            CopyKind::Retransmission => {
                self.stats.retransmissions_sent += 1;
                self.stats.retransmission_bytes += size;
                if datum.first_recovery.is_none() {
                    datum.first_recovery = Some(pn);
                }
                if let Some(a) = &mut self.autorec {
                    a.queue.on_retransmitted(now, id, media.payload);
                }
            }
            CopyKind::Reinjection => {
                self.stats.reinjections_sent += 1;
                self.stats.reinjection_bytes += size;
            }
            CopyKind::Probe => {
                self.stats.probes_sent += 1;
                self.stats.probe_bytes += size;
            }
        }
        d
    }

    fn send_packet(
        &mut self,
        now: Instant,
        size: Bytes,
        payload: Payload,
        kind: PacketKind,
        token: u64,
    ) -> Datagram {
        let pn = self.next_pn;
        self.next_pn += 1;
        self.loss.on_packet_sent(now, pn, size, true, token);
        let (frame_id, first, last) = match payload {
            Payload::Data { media, copy, .. } => (
                Some(media.frame_id),
                copy == CopyKind::Original && media.index == 0,
                copy == CopyKind::Original && media.last_in_frame,
            ),
            Payload::Ping | Payload::Repair(_) => (None, false, false),
        };
        let sent = SentPacket {
            seq: pn,
            size,
            send_time: now,
            kind,
            frame_id,
            first_in_frame: first,
            last_in_frame: last,
            bytes_in_flight: self.loss.bytes_in_flight(),
        };
        // Trim before the push, so the log never holds more than
        // CONTENT_LOG entries (trimming after it briefly held one more, which
        // doubled the ring's capacity). The new packet is in flight, so it
        // would never have been trimmed: the content is the same.
        self.trim_log();
        if self.log.is_empty() {
            self.log_base = pn;
        }
        self.log.push_back(PnRecord { sent, payload });
        if let (Some(f), Payload::Data { media, copy, .. }) = (self.fec.as_mut(), payload) {
            let end_of_frame = copy == CopyKind::Original && media.last_in_frame;
            f.on_packet_sent(now, pn, size, end_of_frame);
        }
        self.cc.on_packet_sent(now, &sent);
        self.pacer.on_sent(now, size);
        self.pacer.set_budget(now, self.cc.send_budget());
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size.get();
        Datagram {
            pn,
            size,
            send_time: now,
            payload,
        }
    }

    /// Drop log entries older than both the oldest packet in flight and the
    /// last [`CONTENT_LOG`] packet numbers.
    fn trim_log(&mut self) {
        let oldest_outstanding = self
            .loss
            .outstanding()
            .next()
            .map_or(self.next_pn, |p| p.packet_number);
        let keep_from = oldest_outstanding.min(self.next_pn.saturating_sub(CONTENT_LOG));
        while self.log_base < keep_from && !self.log.is_empty() {
            self.log.pop_front();
            self.log_base += 1;
        }
    }

    fn on_packet_acked(&mut self, now: Instant, p: &TransportPacket) {
        self.stats.packets_acked += 1;
        self.fec_loss -= FEC_LOSS_GAIN * self.fec_loss;
        if let Some(a) = &mut self.autorec {
            a.adapter.on_packet_acked(now);
        }
        if p.token == NO_DATUM {
            return;
        }
        let id = p.token;
        let Some(i) = self.index(id) else { return };
        let datum = &mut self.data[i];
        if datum.acked {
            return;
        }
        datum.acked = true;
        self.stats.data_acked += 1;
        if let Some((lost_at, detection)) = datum.first_loss {
            let single = datum.first_recovery.is_none_or(|f| p.packet_number <= f);
            self.metrics
                .on_recovered(lost_at, detection, p.time_sent, single);
        }
        if let Some(a) = &mut self.autorec {
            a.queue.on_acked(now, id);
        }
        while self.data.front().is_some_and(|d| d.acked) {
            self.data.pop_front();
            self.data_base += 1;
        }
        if self.next_new < self.data_base {
            self.next_new = self.data_base;
        }
    }

    fn on_packet_lost(&mut self, now: Instant, l: &LostPacket) {
        self.stats.packets_lost += 1;
        self.fec_loss += FEC_LOSS_GAIN * (1.0 - self.fec_loss);
        if let Some(a) = &mut self.autorec {
            a.adapter.on_packet_lost(now, l.detection_time);
        }
        self.metrics.on_packet_lost(l.detection_time);
        if l.packet.token == NO_DATUM {
            return;
        }
        let id = l.packet.token;
        let Some(i) = self.index(id) else { return };
        let datum = &mut self.data[i];
        if datum.acked {
            return;
        }
        if datum.newest != Some(l.packet.packet_number) {
            self.stats.superseded_losses += 1;
            return;
        }
        if datum.first_loss.is_none() {
            datum.first_loss = Some((now, l.detection_time));
            self.metrics.on_datum_lost();
        }
        if !datum.queued_for_retx {
            datum.queued_for_retx = true;
            self.retx.push_back(id);
        }
    }

    fn after_event(&mut self, now: Instant) {
        self.decide(now);
        if let Some(f) = &mut self.fec {
            let rtt = self.loss.rtt().smoothed_rtt();
            f.set_conditions(now, Probability::saturating(self.fec_loss), rtt);
        }
        self.pacer.set_budget(now, self.cc.send_budget());
    }

    /// The controller's target bitrate (what an adaptive source would follow).
    pub fn target_bitrate(&self) -> Bitrate {
        self.cc.target_bitrate()
    }
}
