//! The media sender session: encoder → packetizer → congestion controller →
//! pacer → network. The simulator and the real transport drive this same type.
//!
//! Call protocol (see the crate doc): after any input (`on_timeout`,
//! `handle_feedback`), drain [`SenderSession::poll_transmit`] until `None`,
//! then ask [`SenderSession::poll_timeout`] when to call `on_timeout` next.
//! With loss recovery ([`SenderConfig::recovery`]), the receiver's NACKs go to
//! [`SenderSession::handle_nack`]; retransmissions then come out of
//! `poll_transmit` ahead of new media, paced, counted in bytes in flight and
//! shown to the controller as [`PacketKind::Retransmission`].
//! With probe padding on ([`SenderSession::enable_probe_padding`]), a
//! controller's bandwidth probe ([`CongestionController::poll_probe`]) that
//! finds no media queued is filled with [`PacketKind::Padding`] packets, paced
//! at the probe rate like media.
//!
//! The queue in front of the pacer is bounded the way libwebrtc bounds it
//! (docs/algorithms/pacer.md): the pacer drains it within a queue-time limit
//! ([`SenderConfig::queue_time_limit`]), and a frame produced while the queue
//! holds more than [`SenderConfig::frame_drop_queue_time`] at the pacing rate
//! is dropped before it is queued, as libwebrtc's encoder pauses while the
//! pacer queue is full. A dropped frame is skipped the way an encoder skips a
//! capture: the frames sent keep consecutive frame ids (the next frame
//! references the last one sent), so the receiver's decoding chain holds.
//!
//! A controller with a layer plan ([`CongestionController::layer_plan`],
//! papers/cdm-scalable-video.txt §III) has it passed to the encoder with
//! every target and before every frame, so a change applies from the next
//! frame. A layered frame's repair packets (the plan's protected layers,
//! `Packetizer::packetize_layers_with_repair`) are queued after its data
//! packets and sent as [`PacketKind::Fec`]: each takes a transport-wide
//! sequence number and counts in flight like any packet, carries the media
//! sequence number of the data packet it copies (as a FlexFEC packet names
//! the packets it protects, RFC 8627 §4.2), is not part of the frame's packet
//! train (`SentPacket::first_in_frame`/`last_in_frame` stay false), and is
//! not shown to loss recovery. A frame of no layer (a plan of none: the
//! flow sends nothing) is skipped as a dropped frame is.

use std::collections::VecDeque;

use super::history::{Fate, SendHistory};
use crate::cc::{CcConfig, CongestionController, Controller};
use crate::feedback::{Nack, WireFeedback};
use crate::media::encoder::EncoderModel;
use crate::media::frame::{FrameInfo, FrameType};
use crate::media::packetizer::{MediaPacket, Packetizer};
use crate::pacer::Pacer;
/// Default of [`SenderConfig::queue_time_limit`] (re-exported from [`crate::pacer`]).
pub use crate::pacer::DEFAULT_QUEUE_TIME_LIMIT;
use crate::packet::{FeedbackReport, PacketKind, SentPacket, SeqNo};
use crate::recovery::{LossRecovery, MediaSeqNo, Recovery, RecoveryConfig, RecoveryStats};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// How long sent packets are remembered to join with feedback
/// (libwebrtc keeps 60 s, `kSendTimeHistoryWindow`; 10 s suffices for any
/// feedback that still matters and bounds memory).
const HISTORY_WINDOW: Duration = Duration::from_secs(10);

/// Key-frame requests closer together than this are served by one key frame:
/// the receiver repeats its request in every report until a key frame arrives,
/// and a key frame takes about a round trip to show up. 300 ms is libwebrtc's
/// sender-side limit (`kMinKeyframeSendIntervalMs` in
/// `video/encoder_rtcp_feedback.cc`: an intra request within 300 ms of the
/// last one served is ignored); RFC 4585 §3.5 leaves the rate of such
/// requests to the application.
const KEY_FRAME_REQUEST_INTERVAL: Duration = Duration::from_millis(300);

/// Bytes an RFC 4588 retransmission adds to the original packet: the 2-byte
/// original sequence number (OSN) at the start of the RTX payload (RFC 4588 §4).
pub const RTX_OVERHEAD: Bytes = Bytes::new(2);

/// Window over which the retransmission rate is measured for the encoder
/// target (our choice: one second, long enough to average a NACK burst, as
/// libwebrtc's rate statistics use a 1 s window, `kBitrateStatisticsWindowMs`).
const RECOVERY_RATE_WINDOW: Duration = Duration::from_secs(1);

/// Default of [`SenderConfig::frame_drop_queue_time`]: libwebrtc's
/// `PacedSender::kMaxQueueLengthMs` = 2000 ms, above which the pacer's
/// expected queue time (queued bytes / pacing rate) makes `IsSendQueueFull()`
/// true and the encoder target 0, so the encoder drops the frames it is given
/// (modules/congestion_controller send-side controller `IsSendQueueFull`,
/// video/video_stream_encoder.cc `EncoderPaused`).
pub const DEFAULT_FRAME_DROP_QUEUE_TIME: Duration = Duration::from_secs(2);

/// While the congestion window is full, one keep-alive padding packet goes
/// out every this long, window or not: libwebrtc's
/// `PacingController::kCongestedPacketInterval` (500 ms), sent as padding
/// while `Congested()`. Without it, a window whose every packet was lost
/// never hears of the loss (nothing later reaches the receiver, so no report
/// names the holes) and the sender stalls for ever.
pub const CONGESTED_PACKET_INTERVAL: Duration = Duration::from_millis(500);

/// Sender settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderConfig {
    /// Congestion controller.
    pub cc: CcConfig,
    /// Packet sizes.
    pub packetizer: Packetizer,
    /// What to do when the receiver falls silent (`None` = nothing).
    pub feedback_timeout: Option<FeedbackTimeout>,
    /// Loss recovery (default none). The receiver must run the same scheme
    /// ([`crate::session::receiver::ReceiverConfig::recovery`]).
    pub recovery: RecoveryConfig,
    /// Pacer queue-time limit: while media is queued, the pacer sends at
    /// least at `queued bytes / (limit − average queue time)` (libwebrtc's
    /// `drain_large_queues`, [`crate::pacer`] module doc). `None` = off.
    /// libwebrtc's default, and ours: [`DEFAULT_QUEUE_TIME_LIMIT`] (2 s).
    pub queue_time_limit: Option<Duration>,
    /// Frame dropping at the sender: a frame produced while the queue holds
    /// more than `pacing rate × this` bytes is dropped, not queued (libwebrtc's
    /// encoder pause on a full pacer queue). `None` = off. Default
    /// [`DEFAULT_FRAME_DROP_QUEUE_TIME`] (2 s). Only for encoder models, which
    /// can skip a capture: the frames sent are renumbered so that their ids
    /// stay consecutive, which a real encoded bitstream (whose payload is
    /// looked up by the encoder's frame id) does not allow.
    pub frame_drop_queue_time: Option<Duration>,
}

impl SenderConfig {
    /// The library's sender defaults around the controller `cc`: the default
    /// packetizer, [`FeedbackTimeout::default`], no loss recovery, the pacer
    /// queue-time limit [`DEFAULT_QUEUE_TIME_LIMIT`] and frame dropping above
    /// [`DEFAULT_FRAME_DROP_QUEUE_TIME`]. A scenario flow with only `cc` set
    /// gets exactly this, in the simulator and in the real transport.
    pub fn with_cc(cc: CcConfig) -> Self {
        SenderConfig {
            cc,
            packetizer: Packetizer::default(),
            feedback_timeout: Some(FeedbackTimeout::default()),
            recovery: RecoveryConfig::None,
            queue_time_limit: Some(DEFAULT_QUEUE_TIME_LIMIT),
            frame_drop_queue_time: Some(DEFAULT_FRAME_DROP_QUEUE_TIME),
        }
    }
}

/// The sender's reaction to a receiver that stopped sending feedback, in the
/// spirit of the RTP circuit breaker (RFC 8083 §4.1: the RTCP timeout): a
/// controller that hears nothing cannot tell congestion collapse from a dead
/// path, so the session stops trusting its target. After `after` without
/// feedback while sending, the rate allowed to the encoder and the pacer is
/// the controller's target times `factor`, and times `factor` again for every
/// further `after` of silence, down to `floor`. Unlike RFC 8083, which ceases
/// transmission, the sender keeps a trickle at `floor` so that feedback can
/// resume when the path heals (a receiver restart, a route change); the first
/// report lifts the cap and the controller takes over again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeedbackTimeout {
    /// Silence before the first back-off. Default 1 s: 20 feedback intervals
    /// at the default 50 ms, and several RTTs on any path video is sent over
    /// (RFC 8083 §4.1 uses 3 RTCP reporting intervals).
    pub after: Duration,
    /// Multiplier per `after` of silence (default 0.5).
    pub factor: f64,
    /// Lowest allowed rate (default 50 kbps: a low-quality video stream keeps
    /// the path and the receiver's feedback alive).
    pub floor: Bitrate,
}

impl Default for FeedbackTimeout {
    fn default() -> Self {
        FeedbackTimeout {
            after: Duration::from_secs(1),
            factor: 0.5,
            floor: Bitrate::kbps(50),
        }
    }
}

/// A packet to put on the wire now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Transport-wide sequence number.
    pub seq: SeqNo,
    /// Media sequence number (the RTP sequence of the media stream, unwrapped;
    /// for a retransmission, the original packet's: RFC 4588's OSN; for a
    /// repair packet, the data packet's it copies). For padding, the next
    /// media packet's number, which padding does not use.
    pub media_seq: MediaSeqNo,
    /// First transmission ([`PacketKind::Media`]), a retransmission, a
    /// layer plan's repair packet ([`PacketKind::Fec`] with
    /// `packet.repair`), or probe padding ([`PacketKind::Padding`]: `packet`
    /// has no payload and its frame fields mean nothing).
    pub kind: PacketKind,
    /// The media it carries (`wire_size` includes [`RTX_OVERHEAD`] on a
    /// retransmission).
    pub packet: MediaPacket,
    /// Send time (= `now` of the `poll_transmit` call).
    pub send_time: Instant,
}

/// Counters of a sender session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Frames produced by the encoder.
    pub frames_encoded: u64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Bytes sent on the wire.
    pub bytes_sent: u64,
    /// Payload bytes sent.
    pub payload_sent: u64,
    /// Packets the receiver reported lost (first report of each).
    pub packets_reported_lost: u64,
    /// Packets the receiver reported received.
    pub packets_reported_received: u64,
    /// Feedback reports processed.
    pub feedback_reports: u64,
    /// Feedback entries that matched no packet we remember (dropped and counted).
    pub unknown_feedback_entries: u64,
    /// Key frames produced on the receiver's request.
    pub key_frames_requested: u64,
    /// Back-off steps taken because feedback stopped ([`FeedbackTimeout`]).
    pub feedback_timeouts: u64,
    /// NACK messages received.
    pub nacks_received: u64,
    /// Padding packets sent for bandwidth probes (included in `packets_sent`).
    pub padding_packets_sent: u64,
    /// Bytes of padding sent (included in `bytes_sent`).
    pub padding_bytes_sent: u64,
    /// Keep-alive padding packets sent into a full window
    /// ([`CONGESTED_PACKET_INTERVAL`]; included in `padding_packets_sent`).
    pub keepalives_sent: u64,
    /// Frames dropped at the sender because the queue was too long
    /// ([`SenderConfig::frame_drop_queue_time`]); not in `frames_encoded`.
    pub frames_dropped_at_sender: u64,
    /// Frames of a layered encoder that had no layer to send (a layer plan
    /// of none); skipped as dropped frames are, not in `frames_encoded`.
    pub frames_without_layers: u64,
    /// Repair packets of the layer plan sent (included in `packets_sent`).
    pub repair_packets_sent: u64,
    /// Their bytes on the wire (included in `bytes_sent`).
    pub repair_bytes_sent: u64,
}

/// The media sender.
#[derive(Debug)]
pub struct SenderSession<E> {
    cc: Controller,
    recovery: Recovery,
    /// Recovery is on (its rate is taken out of the encoder target).
    recovery_on: bool,
    next_media_seq: MediaSeqNo,
    /// The frame whose first data packet was sent last, and that packet's
    /// media sequence number: the data packet of index `i` of that frame
    /// has `seq + i` (the frame's data packets leave in order, before its
    /// repair packets and the next frame's packets).
    frame_media_seq: (u64, MediaSeqNo),
    /// Smoothed RTT from feedback (RFC 6298 §2), for recovery.
    srtt: Option<Duration>,
    /// Recovery packets sent within [`RECOVERY_RATE_WINDOW`]: (time, bytes).
    recovery_sent: VecDeque<(Instant, Bytes)>,
    recovery_window_bytes: Bytes,
    pacer: Pacer,
    encoder: E,
    packetizer: Packetizer,
    queue: VecDeque<MediaPacket>,
    queued_bytes: Bytes,
    /// Enqueue instant of each packet in `queue` (same order), for the
    /// average queue time of the queue-time limit.
    enqueued_at: VecDeque<Instant>,
    /// Σ enqueue instants (ns) of the packets in `queue`.
    enqueued_sum_ns: u128,
    frame_drop_queue_time: Option<Duration>,
    /// Frames dropped so far: subtracted from the encoder's frame ids so
    /// the frames sent keep consecutive ids (module doc).
    frame_id_offset: u64,
    next_seq: SeqNo,
    /// Sent packets, joined with feedback; bytes in flight.
    history: SendHistory<()>,
    report: FeedbackReport,
    stats: SenderStats,
    last_now: Instant,
    last_key_frame_request: Option<Instant>,
    feedback_timeout: Option<FeedbackTimeout>,
    /// Since when the receiver has been silent while we sent: the last
    /// feedback, or the first send after it (`None` = not silent).
    silent_since: Option<Instant>,
    /// Back-off steps in force (0 = none).
    backoff_steps: u64,
    /// Send padding for the controller's probes when there is no media
    /// (and keep-alives into a full window, [`CONGESTED_PACKET_INTERVAL`]).
    probe_padding: bool,
    /// Pad media packets to a probe's size while it asks for equal sizes
    /// ([`ProbeRequest::pad_media`]).
    media_padding: bool,
    /// When the last packet of any kind left.
    last_sent: Option<Instant>,
}

impl<E: EncoderModel> SenderSession<E> {
    /// A session starting at `now`.
    pub fn new(now: Instant, config: SenderConfig, mut encoder: E) -> Self {
        let cc = config.cc.build(now);
        let mut pacer = Pacer::new(now, cc.send_budget());
        pacer.set_queue_time_limit(now, config.queue_time_limit);
        let start = encoder_target(&encoder, &config.packetizer, cc.target_bitrate());
        encoder.set_target(now, start);
        encoder.set_layer_plan(now, cc.layer_plan());
        SenderSession {
            pacer,
            cc,
            recovery: config.recovery.build(now),
            recovery_on: !config.recovery.is_none(),
            next_media_seq: 0,
            frame_media_seq: (u64::MAX, 0),
            srtt: None,
            recovery_sent: VecDeque::new(),
            recovery_window_bytes: Bytes::ZERO,
            encoder,
            packetizer: config.packetizer,
            queue: VecDeque::with_capacity(256),
            queued_bytes: Bytes::ZERO,
            enqueued_at: VecDeque::with_capacity(256),
            enqueued_sum_ns: 0,
            frame_drop_queue_time: config.frame_drop_queue_time,
            frame_id_offset: 0,
            next_seq: 0,
            history: SendHistory::with_capacity(4096),
            report: FeedbackReport::default(),
            stats: SenderStats::default(),
            last_now: now,
            last_key_frame_request: None,
            feedback_timeout: config.feedback_timeout,
            silent_since: None,
            backoff_steps: 0,
            probe_padding: false,
            media_padding: false,
            last_sent: None,
        }
    }

    /// The congestion controller.
    pub fn controller(&self) -> &Controller {
        &self.cc
    }
    /// The loss-recovery scheme.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }
    /// Counters of the loss-recovery scheme.
    pub fn recovery_stats(&self) -> RecoveryStats {
        self.recovery.stats()
    }
    /// Smoothed RTT measured from feedback, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    /// The encoder.
    pub fn encoder(&self) -> &E {
        &self.encoder
    }
    /// Counters.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    /// Bytes sent and not yet reported received or lost.
    pub fn bytes_in_flight(&self) -> Bytes {
        self.history.in_flight()
    }
    /// Bytes waiting in the pacer queue.
    pub fn queued_bytes(&self) -> Bytes {
        self.queued_bytes
    }
    /// Carry out the controller's bandwidth probes: when a probe is in
    /// progress and no media is queued, send padding packets
    /// ([`PacketKind::Padding`], no payload, not shown to loss recovery) at
    /// the pacing rate. Off by default: the receiving end must count padding
    /// in its feedback and keep it away from the media path (the simulator
    /// does; a transport must send it as RTP padding).
    pub fn enable_probe_padding(&mut self) {
        self.probe_padding = true;
    }

    /// Pad media packets of a probe that asks for equal-sized packets
    /// ([`ProbeRequest::pad_media`](crate::cc::ProbeRequest::pad_media): a
    /// packet train) up to its `padding_size` (RFC 3550 §5.1 padding;
    /// counted as padding bytes, the payload unchanged). Only the first
    /// transmission is padded, not a
    /// retransmission. A transport that cannot write padding into media
    /// packets leaves this off, and its trains keep the media's own sizes.
    pub fn enable_media_padding(&mut self) {
        self.media_padding = true;
    }

    /// Current target bitrate of the controller.
    pub fn target_bitrate(&self) -> Bitrate {
        self.cc.target_bitrate()
    }

    fn sync_controls(&mut self, now: Instant) {
        let mut budget = self.cc.send_budget();
        let mut target = self.cc.target_bitrate();
        if let (Some(ft), true) = (self.feedback_timeout, self.backoff_steps > 0) {
            let steps = i32::try_from(self.backoff_steps).unwrap_or(i32::MAX);
            let cap = target.mul_f64(ft.factor.powi(steps)).max(ft.floor);
            if cap < target {
                let k = cap.as_bps_f64() / target.as_bps_f64();
                budget.pacing_rate = budget.pacing_rate.mul_f64(k);
                target = cap;
            }
        }
        if self.recovery_on {
            target = self.media_share(now, target);
        }
        self.pacer.set_budget(now, budget);
        let target = encoder_target(&self.encoder, &self.packetizer, target);
        self.encoder.set_target(now, target);
        self.encoder.set_layer_plan(now, self.cc.layer_plan());
    }

    /// The part of `target` left to new media once the recovery packets of
    /// the last [`RECOVERY_RATE_WINDOW`] are paid for: libwebrtc likewise takes
    /// the measured NACK and FEC rate out of the encoder's target
    /// (call/rtp_video_sender.cc `OnBitrateUpdated`, through
    /// `FecController::UpdateFecRates`). Never below half the target (our
    /// choice: a loss burst must not starve the encoder).
    fn media_share(&mut self, now: Instant, target: Bitrate) -> Bitrate {
        while let Some(&(t, b)) = self.recovery_sent.front() {
            if now.saturating_duration_since(t) < RECOVERY_RATE_WINDOW {
                break;
            }
            self.recovery_window_bytes -= b;
            self.recovery_sent.pop_front();
        }
        let rate = self.recovery_window_bytes / RECOVERY_RATE_WINDOW;
        (target - rate).max(target.mul_f64(0.5))
    }

    /// Tells the pacer the queue's size and average wait (queue-time limit).
    fn report_queue(&mut self, now: Instant) {
        // Mean enqueue instant = Σ / n (≤ now, so it fits in u64); an empty
        // queue waits nothing.
        let average = self
            .enqueued_sum_ns
            .checked_div(self.enqueued_at.len() as u128)
            .map_or(Duration::ZERO, |mean| {
                Duration::from_nanos(now.as_nanos().saturating_sub(mean as u64))
            });
        self.pacer.on_queue(now, self.queued_bytes, average);
    }

    /// The queue holds more than the pacing rate sends in
    /// `frame_drop_queue_time`: a new frame is dropped. libwebrtc's
    /// `IsSendQueueFull()`: expected queue time (queue size / pacing rate,
    /// the controller's rate, not the drain rate) > `kMaxQueueLengthMs`.
    fn queue_full(&self) -> bool {
        self.frame_drop_queue_time
            .is_some_and(|limit| self.queued_bytes > self.pacer.rate() * limit)
    }

    /// The instant of the next back-off step, while the receiver is silent.
    fn next_backoff(&self) -> Option<Instant> {
        let ft = self.feedback_timeout?;
        let since = self.silent_since?;
        Some(since + ft.after.mul_f64((self.backoff_steps + 1) as f64))
    }

    /// Takes the back-off steps due at `now`.
    fn check_feedback_timeout(&mut self, now: Instant) {
        let mut stepped = false;
        while self.next_backoff().is_some_and(|t| t <= now) {
            self.backoff_steps += 1;
            self.stats.feedback_timeouts += 1;
            stepped = true;
        }
        if stepped {
            self.sync_controls(now);
        }
    }

    /// Timers: produce due frames, fire the controller's timer.
    pub fn on_timeout(&mut self, now: Instant) {
        debug_assert!(now >= self.last_now, "time went backwards");
        self.last_now = now;
        while self.encoder.poll_timeout().is_some_and(|t| t <= now) {
            // The plan as of now, whatever input changed it (module doc).
            self.encoder.set_layer_plan(now, self.cc.layer_plan());
            let Some(frame) = self.encoder.produce(now) else {
                break;
            };
            if self
                .encoder
                .layer_sizes(frame.frame_id)
                .is_some_and(|l| l.is_empty())
            {
                // Nothing to send (module doc); the encoder makes the next
                // frame sent a key frame.
                self.stats.frames_without_layers += 1;
                self.frame_id_offset += 1;
                continue;
            }
            if self.queue_full() {
                // Skipped as libwebrtc's paused encoder skips it: never
                // queued, not shown to the controller (it never reached the
                // transport), and the ids of later frames close the gap.
                self.stats.frames_dropped_at_sender += 1;
                self.frame_id_offset += 1;
                if frame.frame_type == FrameType::Key {
                    // The key frame asked for (by a PLI or the GOP) was not
                    // sent: the next frame must be one.
                    self.encoder.request_key_frame();
                }
                continue;
            }
            self.stats.frames_encoded += 1;
            let frame_id = frame.frame_id - self.frame_id_offset;
            let queue = &mut self.queue;
            let enqueued_at = &mut self.enqueued_at;
            let mut added = Bytes::ZERO;
            let mut n_added: u128 = 0;
            let push = |p: MediaPacket| {
                added += p.wire_size;
                n_added += 1;
                queue.push_back(p);
                enqueued_at.push_back(now);
            };
            // An encoder with its own packetisation (RFC 6184 NAL units) gives
            // the packets' sizes, a layered one its layers' sizes (each layer
            // cut on its own); otherwise the packetizer cuts the frame.
            let payloads = self.encoder.packet_payloads(frame.frame_id);
            let layers = self.encoder.layer_sizes(frame.frame_id);
            let n = match (payloads, layers) {
                (Some(sizes), _) => {
                    self.packetizer.packetize_sizes(
                        frame_id,
                        frame.frame_type,
                        frame.capture_time,
                        sizes,
                        push,
                    );
                    u32::try_from(sizes.len()).unwrap_or(u32::MAX)
                }
                (None, Some(sizes)) => {
                    self.packetizer.packetize_layers_with_repair(
                        frame_id,
                        frame.frame_type,
                        frame.capture_time,
                        sizes,
                        self.encoder.protected_layers(frame.frame_id),
                        push,
                    );
                    self.packetizer.layered_packet_count(sizes)
                }
                (None, None) => {
                    self.packetizer.packetize(
                        frame_id,
                        frame.frame_type,
                        frame.capture_time,
                        frame.size,
                        push,
                    );
                    self.packetizer.packet_count(frame.size)
                }
            };
            self.queued_bytes += added;
            self.enqueued_sum_ns += n_added * u128::from(now.as_nanos());
            let info = FrameInfo {
                frame_id,
                capture_time: frame.capture_time,
                size: frame.size,
                frame_type: frame.frame_type,
                num_packets: n,
                target_bitrate: frame.target_bitrate,
            };
            self.cc.on_frame(now, &info);
        }
        if self.cc.poll_timeout().is_some_and(|t| t <= now) {
            self.cc.on_timeout(now);
            self.sync_controls(now);
        }
        if self.recovery.poll_timeout().is_some_and(|t| t <= now) {
            self.recovery.on_timeout(now);
        }
        self.check_feedback_timeout(now);
    }

    /// Bookkeeping common to every packet that leaves: the history that
    /// feedback is joined against, the silence clock of the feedback timeout,
    /// the pacer's budget and the controller.
    fn record_sent(&mut self, now: Instant, sent: SentPacket) {
        self.history.push(sent, ());
        if self.silent_since.is_none() {
            self.silent_since = Some(now);
        }
        self.last_sent = Some(now);
        self.pacer.on_sent(now, sent.size);
        self.cc.on_packet_sent(now, &sent);
    }

    /// The next packet to send now, if the window and the pacer allow.
    /// Packets the recovery scheme asks for go ahead of queued media.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let idle = self.queue.is_empty();
        let recover = self.recovery.has_pending(idle);
        if idle && !recover {
            return self.poll_padding(now);
        }
        if !recover {
            if let Some(head) = self.queue.front().filter(|h| h.index == 0 && !h.repair) {
                // Frame-burst mode arms when the frame reaches the head (pacer
                // doc); not while a retransmission goes first, so the burst is
                // the frame's own.
                self.pacer.on_frame_at_head(now, head.frame_id);
            }
        }
        if self.window_full() {
            self.pacer.cancel_due();
            return self.poll_keepalive(now);
        }
        self.report_queue(now);
        if !self.pacer.can_send(now) {
            return None;
        }
        let recovered = if recover {
            self.recovery.poll_transmit(now, idle)
        } else {
            None
        };
        let (media_seq, kind, mut packet) = match recovered {
            Some(r) => {
                let mut p = r.packet;
                p.wire_size += RTX_OVERHEAD;
                (r.media_seq, r.kind, p)
            }
            None => {
                let head = self.queue.pop_front()?;
                self.queued_bytes -= head.wire_size;
                if let Some(t) = self.enqueued_at.pop_front() {
                    self.enqueued_sum_ns -= u128::from(t.as_nanos());
                }
                if head.repair {
                    // The media sequence number of the data packet it copies.
                    let (frame, first) = self.frame_media_seq;
                    let m = if frame == head.frame_id {
                        first + u64::from(head.index)
                    } else {
                        self.next_media_seq
                    };
                    (m, PacketKind::Fec, head)
                } else {
                    let m = self.next_media_seq;
                    self.next_media_seq += 1;
                    if head.index == 0 {
                        self.frame_media_seq = (head.frame_id, m);
                    }
                    (m, PacketKind::Media, head)
                }
            }
        };
        // Loss recovery's packets are copies of data packets, never repairs.
        let repair = packet.repair;
        // Retransmissions keep the packet as first sent (unpadded).
        let unpadded = packet;
        let padding = self.media_padding_for(now, kind, packet.wire_size);
        packet.wire_size += padding;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.history.add_in_flight(packet.wire_size);
        let media = kind == PacketKind::Media;
        let sent = SentPacket {
            seq,
            size: packet.wire_size,
            send_time: now,
            kind,
            frame_id: Some(packet.frame_id),
            // A retransmission is not part of its frame's packet train.
            first_in_frame: media && packet.index == 0,
            last_in_frame: media && packet.last_in_frame,
            bytes_in_flight: self.history.in_flight(),
        };
        self.record_sent(now, sent);
        if !repair {
            self.recovery
                .on_packet_sent(now, media_seq, &unpadded, kind);
        }
        self.stats.padding_bytes_sent += padding.get();
        self.pacer.set_budget(now, self.cc.send_budget());
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += packet.wire_size.get();
        if media {
            self.stats.payload_sent += packet.payload.get();
        } else if repair {
            // The plan's, not loss recovery's: not taken out of the target.
            self.stats.repair_packets_sent += 1;
            self.stats.repair_bytes_sent += packet.wire_size.get();
        } else {
            self.recovery_sent.push_back((now, packet.wire_size));
            self.recovery_window_bytes += packet.wire_size;
        }
        Some(Transmit {
            seq,
            media_seq,
            kind,
            packet,
            send_time: now,
        })
    }

    /// The padding a media packet of `wire_size` gets: up to the probe's
    /// `padding_size` (at most a full packet) while the controller's probe
    /// asks for equal sizes and media padding is on; zero otherwise.
    fn media_padding_for(&mut self, now: Instant, kind: PacketKind, wire_size: Bytes) -> Bytes {
        if !self.media_padding || kind != PacketKind::Media {
            return Bytes::ZERO;
        }
        match self.cc.poll_probe(now) {
            Some(p) if p.pad_media => {
                let full = self.packetizer.mtu + self.packetizer.header_overhead;
                p.padding_size.min(full).saturating_sub(wire_size)
            }
            _ => Bytes::ZERO,
        }
    }

    /// A padding packet for the controller's probe, if one is in progress,
    /// probe padding is on and the pacer allows (called with no media to
    /// send). It takes a transport-wide sequence number, counts in flight and
    /// is reported to the controller like media; it has no media sequence
    /// number and no payload.
    fn poll_padding(&mut self, now: Instant) -> Option<Transmit> {
        if !self.probe_padding {
            return None;
        }
        if self.window_full() {
            self.pacer.cancel_due();
            return self.poll_keepalive(now);
        }
        let probe = self.cc.poll_probe(now)?;
        // The controller paces at the probe rate while probing.
        self.pacer.set_budget(now, self.cc.send_budget());
        if !self.pacer.can_send(now) {
            return None;
        }
        let full = self.packetizer.mtu + self.packetizer.header_overhead;
        let size = probe
            .padding_size
            .max(self.packetizer.header_overhead + Bytes::new(1))
            .min(full);
        Some(self.send_padding(now, size))
    }

    /// True while the controller's congestion window is full.
    fn window_full(&self) -> bool {
        self.cc
            .send_budget()
            .cwnd
            .is_some_and(|c| self.history.in_flight() >= c)
    }

    /// When a keep-alive is due into the full window, if padding is on and
    /// something was ever sent ([`CONGESTED_PACKET_INTERVAL`]).
    fn keepalive_due(&self) -> Option<Instant> {
        if !self.probe_padding {
            return None;
        }
        self.last_sent.map(|t| t + CONGESTED_PACKET_INTERVAL)
    }

    /// A keep-alive padding packet of one payload byte, if one is due.
    fn poll_keepalive(&mut self, now: Instant) -> Option<Transmit> {
        if self.keepalive_due().is_none_or(|t| now < t) {
            return None;
        }
        self.stats.keepalives_sent += 1;
        let size = self.packetizer.header_overhead + Bytes::new(1);
        Some(self.send_padding(now, size))
    }

    /// Send a padding packet of `size` bytes on the wire.
    fn send_padding(&mut self, now: Instant, size: Bytes) -> Transmit {
        let packet = MediaPacket {
            frame_id: u64::MAX,
            frame_type: crate::media::frame::FrameType::Delta,
            capture_time: now,
            index: 0,
            count: 0,
            last_in_frame: false,
            payload: Bytes::ZERO,
            wire_size: size,
            layer: 0,
            layer_end: false,
            repair: false,
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let sent = self.history.padding_leaves(now, seq, size);
        self.record_sent(now, sent);
        self.pacer.set_budget(now, self.cc.send_budget());
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size.get();
        self.stats.padding_packets_sent += 1;
        self.stats.padding_bytes_sent += size.get();
        Transmit {
            seq,
            media_seq: self.next_media_seq,
            kind: PacketKind::Padding,
            packet,
            send_time: now,
        }
    }

    /// A NACK from the receiver arrived: the recovery scheme queues the
    /// retransmissions it accepts; drain [`poll_transmit`](Self::poll_transmit)
    /// afterwards. Ignored when recovery is off.
    pub fn handle_nack(&mut self, now: Instant, nack: &Nack) {
        self.last_now = now;
        self.stats.nacks_received += 1;
        self.recovery.on_nack(now, nack);
    }

    /// Feedback from the receiver arrived.
    pub fn handle_feedback(&mut self, now: Instant, fb: &WireFeedback) {
        self.last_now = now;
        self.stats.feedback_reports += 1;
        // The receiver is alive: lift any back-off (applied by `sync_controls`
        // below) and start the silence clock again at the next send.
        self.silent_since = None;
        self.backoff_steps = 0;
        if fb.key_frame_request
            && self
                .last_key_frame_request
                .is_none_or(|t| now - t >= KEY_FRAME_REQUEST_INTERVAL)
        {
            self.last_key_frame_request = Some(now);
            self.encoder.request_key_frame();
            self.stats.key_frames_requested += 1;
        }
        let stats = &mut self.stats;
        stats.unknown_feedback_entries +=
            self.history
                .join(fb, &mut self.report, |_, fate| match fate {
                    Fate::Received => stats.packets_reported_received += 1,
                    Fate::Lost => stats.packets_reported_lost += 1,
                    Fate::Skipped | Fate::LateReceived => {}
                });
        self.history.expire(now, HISTORY_WINDOW);
        if !self.report.packets.is_empty() {
            self.cc.on_feedback(now, &self.report);
        }
        if self.recovery_on {
            if let Some(sample) = self.report.rtt_sample(now) {
                // RFC 6298 §2.2–2.3: first sample as is, then SRTT <- 7/8 SRTT + 1/8 R'.
                self.srtt = Some(self.srtt.map_or(sample, |s| (s * 7 + sample) / 8));
            }
            if let Some(srtt) = self.srtt {
                self.recovery.on_feedback(now, &self.report, srtt);
            }
        }
        self.sync_controls(now);
    }

    /// When `on_timeout` (or `poll_transmit`) should next be called.
    pub fn poll_timeout(&mut self, now: Instant) -> Option<Instant> {
        let mut t = self.encoder.poll_timeout();
        let mut consider = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t: Instant| t.min(x)));
            }
        };
        consider(self.cc.poll_timeout());
        consider(self.next_backoff());
        consider(self.recovery.poll_timeout());
        let recover = self.recovery.has_pending(self.queue.is_empty());
        if !recover {
            if let Some(head) = self.queue.front().filter(|h| h.index == 0 && !h.repair) {
                self.pacer.on_frame_at_head(now, head.frame_id);
            }
        }
        // Padding obeys the window like media (see `poll_padding`): with the
        // window closed there is nothing to wake for until feedback opens it,
        // and waking anyway would spin at `now`.
        let window_open = self
            .cc
            .send_budget()
            .cwnd
            .is_none_or(|c| self.history.in_flight() < c);
        if self.queue.is_empty()
            && !recover
            && window_open
            && self.probe_padding
            && self.cc.poll_probe(now).is_some()
        {
            // A probe with nothing to send: wake for padding at the probe rate.
            self.pacer.set_budget(now, self.cc.send_budget());
            consider(Some(self.pacer.next_send_time(now)));
        }
        if (!self.queue.is_empty() || recover) && window_open {
            self.report_queue(now);
            consider(Some(self.pacer.next_send_time(now)));
        }
        if !window_open {
            consider(self.keepalive_due());
        }
        t.map(|t| t.max(now))
    }
}

/// The target the encoder is given for the controller's `target`: as is when
/// the encoder's rates count headers
/// ([`EncoderModel::rates_include_headers`], a layered encoder), else its
/// payload share.
fn encoder_target<E: EncoderModel>(encoder: &E, p: &Packetizer, target: Bitrate) -> Bitrate {
    if encoder.rates_include_headers() {
        target
    } else {
        payload_share(p, target)
    }
}

/// The payload rate that fills `target` on the wire: controllers estimate
/// wire rates (their samples count headers), the encoder produces payload.
/// libwebrtc likewise takes the packet overhead out of the encoder's target
/// (call/rtp_video_sender.cc `OnBitrateUpdated`, "send-side BWE with
/// overhead"). Full packets are assumed: each carries `mtu` payload bytes
/// and `header_overhead` header bytes.
fn payload_share(p: &Packetizer, target: Bitrate) -> Bitrate {
    let mtu = p.mtu.as_f64();
    let overhead = p.header_overhead.as_f64();
    if mtu <= 0.0 {
        return target;
    }
    target.mul_f64(mtu / (mtu + overhead))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::FixedConfig;
    use crate::media::encoder::{EncodedFrame, TraceEncoder};
    use crate::media::frame::FrameType;
    use crate::media::svc::LayerPlan;
    use crate::recovery::RecoveryConfig;

    /// An encoder whose frames come with their own packet sizes, like an
    /// H.264 stream packetised per RFC 6184.
    struct NalEncoder {
        inner: TraceEncoder,
        sizes: Vec<Bytes>,
    }

    impl EncoderModel for NalEncoder {
        fn set_target(&mut self, now: Instant, target: Bitrate) {
            self.inner.set_target(now, target);
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.inner.poll_timeout()
        }
        fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
            self.inner.produce(now)
        }
        fn current_target(&self) -> Bitrate {
            self.inner.current_target()
        }
        fn packet_payloads(&self, _frame_id: u64) -> Option<&[Bytes]> {
            Some(&self.sizes)
        }
    }

    fn config() -> SenderConfig {
        SenderConfig {
            cc: CcConfig::Fixed(FixedConfig {
                bitrate: Bitrate::mbps(100),
                pacing_factor: 2.5,
                plan: None,
            }),
            packetizer: Packetizer::default(),
            feedback_timeout: None,
            recovery: RecoveryConfig::None,
            queue_time_limit: Some(DEFAULT_QUEUE_TIME_LIMIT),
            frame_drop_queue_time: Some(DEFAULT_FRAME_DROP_QUEUE_TIME),
        }
    }

    /// Payload sizes of everything sent in the first frame interval.
    fn first_frame<E: EncoderModel>(mut s: SenderSession<E>) -> Vec<(u64, u32, bool)> {
        let mut out = Vec::new();
        let mut t = Instant::ZERO;
        s.on_timeout(t);
        while out.len() < 16 && t < Instant::from_millis(30) {
            while let Some(tx) = s.poll_transmit(t) {
                let p = tx.packet;
                assert_eq!(p.frame_id, 0);
                out.push((p.payload.get(), p.count, p.last_in_frame));
            }
            t += Duration::from_millis(1);
        }
        out
    }

    /// Everything a GCC sender with a tiny encoder sends in the first
    /// `ms` milliseconds, polled every 100 µs.
    fn gcc_sends(padding: bool, ms: u64) -> Vec<Transmit> {
        let enc = TraceEncoder::new(
            Instant::ZERO,
            30.0,
            vec![(Bytes::new(100), FrameType::Delta)],
        )
        .unwrap();
        let cfg = SenderConfig {
            cc: CcConfig::Gcc(crate::cc::GccConfig::default()),
            ..config()
        };
        let mut s = SenderSession::new(Instant::ZERO, cfg, enc);
        if padding {
            s.enable_probe_padding();
        }
        let mut out = Vec::new();
        let mut t = Instant::ZERO;
        while t < Instant::from_millis(ms) {
            s.on_timeout(t);
            while let Some(tx) = s.poll_transmit(t) {
                out.push(tx);
            }
            t += Duration::from_micros(100);
        }
        assert_eq!(
            s.stats().padding_packets_sent,
            out.iter().filter(|x| x.kind == PacketKind::Padding).count() as u64
        );
        out
    }

    /// A BBR sender whose packets all vanish (no feedback ever), driven
    /// for `ms` milliseconds at the instants its `poll_timeout` asks for.
    fn blackholed_bbr(padding: bool, ms: u64) -> (Vec<Transmit>, SenderSession<TraceEncoder>) {
        let enc = TraceEncoder::new(
            Instant::ZERO,
            30.0,
            vec![(Bytes::new(20_000), FrameType::Delta)],
        )
        .unwrap();
        let cfg = SenderConfig {
            cc: CcConfig::Bbr(crate::cc::BbrConfig::default()),
            ..config()
        };
        let mut s = SenderSession::new(Instant::ZERO, cfg, enc);
        if padding {
            s.enable_probe_padding();
        }
        let mut out = Vec::new();
        let mut t = Instant::ZERO;
        let end = Instant::from_millis(ms);
        while t < end {
            s.on_timeout(t);
            while let Some(tx) = s.poll_transmit(t) {
                out.push(tx);
            }
            let next = s
                .poll_timeout(t)
                .expect("an encoder always has a next frame");
            assert!(next >= t);
            t = next.max(t + Duration::from_micros(1));
        }
        (out, s)
    }

    #[test]
    fn a_full_window_sends_a_keepalive_every_500_ms() {
        let (sent, s) = blackholed_bbr(true, 3_000);
        // The window (10 packets) fills at once and no feedback opens it.
        let media = sent.iter().filter(|x| x.kind == PacketKind::Media).count();
        let window = usize::try_from(s.controller().send_budget().cwnd.unwrap().get()).unwrap();
        assert!((1..=window / 1200 + 1).contains(&media), "{media} packets");
        let last_media = sent
            .iter()
            .filter(|x| x.kind == PacketKind::Media)
            .map(|x| x.send_time)
            .max()
            .unwrap();
        let keep: Vec<Instant> = sent
            .iter()
            .filter(|x| x.kind == PacketKind::Padding)
            .map(|x| x.send_time)
            .collect();
        // libwebrtc's kCongestedPacketInterval: 500 ms after the last packet.
        let want: Vec<Instant> = (1..=5)
            .map(|k| last_media + CONGESTED_PACKET_INTERVAL * k)
            .filter(|t| *t < Instant::from_millis(3_000))
            .collect();
        assert_eq!(keep, want);
        assert!(sent
            .iter()
            .filter(|x| x.kind == PacketKind::Padding)
            .all(|x| x.packet.wire_size == Packetizer::default().header_overhead + Bytes::new(1)));
        assert_eq!(s.stats().keepalives_sent, keep.len() as u64);
    }

    #[test]
    fn no_keepalive_without_padding_support() {
        let (sent, s) = blackholed_bbr(false, 3_000);
        assert!(sent.iter().all(|x| x.kind == PacketKind::Media));
        assert_eq!(s.stats().keepalives_sent, 0);
    }

    #[test]
    fn probe_clusters_are_padded_at_the_probe_rate() {
        let sent = gcc_sends(true, 100);
        let pad: Vec<_> = sent
            .iter()
            .filter(|x| x.kind == PacketKind::Padding)
            .collect();
        // Cluster 1 at 900 kbps (225 B pads, ≥ 1687.5 B), cluster 2 at
        // 1.8 Mbps (450 B pads, ≥ 3375 B); the 100 B media frame at t = 0
        // counts to cluster 1.
        assert!(pad.len() >= 14 && pad.len() <= 16, "{} pads", pad.len());
        assert_eq!(pad[0].packet.wire_size, Bytes::new(225));
        assert_eq!(pad.last().unwrap().packet.wire_size, Bytes::new(450));
        assert!(pad.iter().all(|p| p.packet.payload.is_zero()));
        // 225 B at 900 kbps: 2 ms apart.
        let gap = pad[2].send_time - pad[1].send_time;
        assert!(
            gap >= Duration::from_micros(1900) && gap <= Duration::from_micros(2100),
            "{gap:?}"
        );
        // Sequence numbers are shared with media; media numbering is not.
        let media: Vec<_> = sent
            .iter()
            .filter(|x| x.kind == PacketKind::Media)
            .map(|x| x.media_seq)
            .collect();
        assert_eq!(media, (0..media.len() as u64).collect::<Vec<_>>());
        // Nothing after the clusters but media.
        assert!(sent
            .iter()
            .all(|x| x.kind == PacketKind::Media || x.send_time < Instant::from_millis(40)));
    }

    /// Everything a fixed-rate sender of a smooth 10-layer SVC stream
    /// (100 kbps per layer) following `plan` sends in its first second.
    fn planned_sends(plan: Option<LayerPlan>) -> (Vec<Transmit>, SenderStats) {
        use crate::media::svc::LayerLadder;
        use crate::media::svc_encoder::{SvcEncoder, SvcEncoderConfig};
        let enc = SvcEncoder::new(
            Instant::ZERO,
            SvcEncoderConfig {
                ladder: LayerLadder::uniform(10, Bitrate::kbps(100)).unwrap(),
                size_variability: 0.0,
                ..SvcEncoderConfig::default()
            },
            crate::rng::stream(1, 1),
        )
        .unwrap();
        let cfg = SenderConfig {
            cc: CcConfig::Fixed(FixedConfig {
                bitrate: Bitrate::mbps(1),
                pacing_factor: 2.5,
                plan,
            }),
            ..config()
        };
        let mut s = SenderSession::new(Instant::ZERO, cfg, enc);
        let mut out = Vec::new();
        let mut t = Instant::ZERO;
        while t < Instant::from_secs(1) {
            s.on_timeout(t);
            while let Some(tx) = s.poll_transmit(t) {
                out.push(tx);
            }
            t += Duration::from_micros(500);
        }
        (out, *s.stats())
    }

    #[test]
    fn a_plan_of_5_protected_layers_sends_each_of_their_packets_twice() {
        let half = LayerPlan {
            layers: 5,
            protected: 5,
        };
        let (sent, stats) = planned_sends(Some(half));
        let count = |kind: PacketKind, layer: u8| {
            sent.iter()
                .filter(|x| x.kind == kind && x.packet.layer == layer)
                .count()
        };
        for k in 1..=5 {
            let data = count(PacketKind::Media, k);
            assert!(data >= 29, "layer {k}: {data} data packets in 1 s");
            assert_eq!(
                count(PacketKind::Fec, k),
                data,
                "layer {k}: one repair each"
            );
        }
        for k in 6..=10 {
            assert_eq!(count(PacketKind::Media, k) + count(PacketKind::Fec, k), 0);
        }
        let data: Vec<&Transmit> = sent
            .iter()
            .filter(|x| x.kind == PacketKind::Media)
            .collect();
        let repair: Vec<&Transmit> = sent.iter().filter(|x| x.kind == PacketKind::Fec).collect();
        assert_eq!(
            repair.len(),
            data.len(),
            "exactly twice layers 1-5's packets"
        );
        assert!(data.iter().all(|x| !x.packet.repair) && repair.iter().all(|x| x.packet.repair));
        assert_eq!(stats.repair_packets_sent, repair.len() as u64);
        assert_eq!(
            stats.repair_bytes_sent,
            repair.iter().map(|x| x.packet.wire_size.get()).sum::<u64>()
        );
        assert_eq!(stats.packets_sent, sent.len() as u64);
        // Each repair copies a data packet sent before it, media sequence
        // number included; data keep consecutive media numbers.
        for r in &repair {
            let d = data
                .iter()
                .find(|d| d.media_seq == r.media_seq)
                .expect("the data packet it repairs");
            assert_eq!(
                MediaPacket {
                    repair: false,
                    ..r.packet
                },
                d.packet
            );
            assert!(d.seq < r.seq && d.send_time <= r.send_time);
        }
        let media: Vec<u64> = data.iter().map(|x| x.media_seq).collect();
        assert_eq!(media, (0..data.len() as u64).collect::<Vec<_>>());
        // Transport sequence numbers run over both.
        let seqs: Vec<u64> = sent.iter().map(|x| x.seq).collect();
        assert_eq!(seqs, (0..sent.len() as u64).collect::<Vec<_>>());
        // A frame's repairs follow all its data packets.
        let first = sent.iter().position(|x| x.kind == PacketKind::Fec).unwrap();
        assert_eq!(first, 5, "frame 0's five data packets first");
        // Without a plan, the same controller's target picks 10 data layers.
        let (plain, stats) = planned_sends(None);
        assert!(plain.iter().all(|x| x.kind == PacketKind::Media));
        assert_eq!(plain.iter().map(|x| x.packet.layer).max(), Some(10));
        assert_eq!(stats.repair_packets_sent, 0);
    }

    #[test]
    fn a_plan_of_no_layer_sends_nothing() {
        let (sent, stats) = planned_sends(Some(LayerPlan::data(0)));
        assert!(sent.is_empty(), "{} packets", sent.len());
        assert_eq!((stats.frames_encoded, stats.frames_without_layers), (0, 30));
    }

    /// An SVC-probing sender of 100 B frames for `ms` milliseconds, with
    /// probe padding and optionally media padding.
    fn svc_sends(media_padding: bool, ms: u64) -> (Vec<Transmit>, SenderStats) {
        let enc = TraceEncoder::new(
            Instant::ZERO,
            30.0,
            vec![(Bytes::new(100), FrameType::Delta)],
        )
        .unwrap();
        let cfg = SenderConfig {
            cc: CcConfig::SvcProbing(Box::default()),
            ..config()
        };
        let mut s = SenderSession::new(Instant::ZERO, cfg, enc);
        s.enable_probe_padding();
        if media_padding {
            s.enable_media_padding();
        }
        let mut out = Vec::new();
        let mut t = Instant::ZERO;
        while t < Instant::from_millis(ms) {
            s.on_timeout(t);
            while let Some(tx) = s.poll_transmit(t) {
                out.push(tx);
            }
            t += Duration::from_micros(100);
        }
        (out, *s.stats())
    }

    #[test]
    fn a_packet_train_pads_its_media_packets_to_the_train_size() {
        // The start phase's first train (30 packets of 1000 B at the top
        // layer's 2 Mbps, no feedback yet): the frame sent during it is
        // padded to 1000 B on the wire, its payload unchanged.
        let (sent, stats) = svc_sends(true, 100);
        let media: Vec<_> = sent
            .iter()
            .filter(|x| x.kind == PacketKind::Media)
            .collect();
        assert!(!media.is_empty());
        assert!(media.iter().all(|m| m.packet.wire_size == Bytes::new(1000)));
        assert!(media.iter().all(|m| m.packet.payload <= Bytes::new(100)));
        let header = Packetizer::default().header_overhead;
        let padded: u64 = media
            .iter()
            .map(|m| 1000 - (m.packet.payload + header).get())
            .sum();
        let pads = stats.padding_packets_sent * 1000;
        assert_eq!(stats.padding_bytes_sent, pads + padded);
        // Without media padding (a transport that cannot write it), media
        // keeps its size; GCC's probes never ask for it.
        let (plain, _) = svc_sends(false, 100);
        assert!(plain
            .iter()
            .filter(|x| x.kind == PacketKind::Media)
            .all(|m| m.packet.wire_size < Bytes::new(200)));
    }

    #[test]
    fn no_padding_unless_enabled() {
        let sent = gcc_sends(false, 100);
        assert!(sent.iter().all(|x| x.kind == PacketKind::Media));
        assert_eq!(sent.len(), 3, "one small frame per 33 ms");
    }

    #[test]
    fn sends_the_encoder_packet_sizes_when_given() {
        let sizes = vec![Bytes::new(40), Bytes::new(1200), Bytes::new(333)];
        let total = sizes.iter().copied().sum::<Bytes>();
        let enc = NalEncoder {
            inner: TraceEncoder::new(Instant::ZERO, 30.0, vec![(total, FrameType::Key)]).unwrap(),
            sizes,
        };
        let s = SenderSession::new(Instant::ZERO, config(), enc);
        assert_eq!(
            first_frame(s),
            vec![(40, 3, false), (1200, 3, false), (333, 3, true)]
        );
    }

    #[test]
    fn splits_the_frame_when_the_encoder_gives_no_sizes() {
        let enc = TraceEncoder::new(
            Instant::ZERO,
            30.0,
            vec![(Bytes::new(2500), FrameType::Key)],
        )
        .unwrap();
        let s = SenderSession::new(Instant::ZERO, config(), enc);
        assert_eq!(
            first_frame(s),
            vec![(834, 3, false), (833, 3, false), (833, 3, true)]
        );
    }

    #[test]
    fn retransmission_is_paced_first_in_flight_and_shown_to_the_controller() {
        use crate::recovery::ArqConfig;
        let enc = TraceEncoder::new(
            Instant::ZERO,
            30.0,
            vec![(Bytes::new(6000), FrameType::Key)],
        )
        .unwrap();
        let cfg = SenderConfig {
            // 1248 B at 1 Mbps: one packet per ~10 ms.
            cc: CcConfig::Fixed(FixedConfig {
                bitrate: Bitrate::mbps(1),
                pacing_factor: 1.0,
                plan: None,
            }),
            recovery: RecoveryConfig::Nack(ArqConfig::default()),
            ..config()
        };
        let mut s = SenderSession::new(Instant::ZERO, cfg, enc);
        let mut t = Instant::ZERO;
        let mut sent = Vec::new();
        s.on_timeout(t);
        while sent.len() < 3 {
            while let Some(tx) = s.poll_transmit(t) {
                sent.push(tx);
            }
            t += Duration::from_millis(1);
        }
        let last = sent[2].send_time;
        assert_eq!(
            sent.iter()
                .map(|x| (x.media_seq, x.kind))
                .collect::<Vec<_>>(),
            vec![
                (0, PacketKind::Media),
                (1, PacketKind::Media),
                (2, PacketKind::Media)
            ]
        );
        s.handle_nack(
            last,
            &Nack {
                report_time: last,
                seqs: vec![1],
            },
        );
        // The pacer is in debt from the last packet: nothing goes at once.
        assert_eq!(s.poll_transmit(last), None);
        assert!(s.poll_timeout(last).is_some_and(|w| w > last));
        let before = s.bytes_in_flight();
        let mut t = last;
        let rtx = loop {
            t += Duration::from_millis(1);
            if let Some(tx) = s.poll_transmit(t) {
                break tx;
            }
        };
        // Ahead of the queued media packet 3, at the pacing rate.
        assert_eq!((rtx.media_seq, rtx.kind), (1, PacketKind::Retransmission));
        assert_eq!(rtx.seq, 3);
        assert!(rtx.send_time - last >= Duration::from_millis(9));
        assert_eq!(
            rtx.packet.wire_size,
            sent[1].packet.wire_size + RTX_OVERHEAD
        );
        assert_eq!(s.bytes_in_flight(), before + rtx.packet.wire_size);
        assert_eq!(s.recovery_stats().packets_sent, 1);
        // The next packet is new media again.
        let next = loop {
            t += Duration::from_millis(1);
            if let Some(tx) = s.poll_transmit(t) {
                break tx;
            }
        };
        assert_eq!((next.media_seq, next.kind), (3, PacketKind::Media));
        // Feedback for all of them: the controller sees the retransmission.
        let fb = WireFeedback {
            report_time: t,
            packets: (0..=4).map(|q| (q, Some(t))).collect(),
            key_frame_request: false,
        };
        s.handle_feedback(t, &fb);
        let kinds: Vec<_> = s.report.packets.iter().map(|p| p.sent.kind).collect();
        assert_eq!(kinds[3], PacketKind::Retransmission);
        assert!(!s.report.packets[3].sent.first_in_frame);
        assert_eq!(s.bytes_in_flight(), Bytes::ZERO);
    }

    /// Replays a trace but, like a real encoder, makes the next frame a key
    /// frame when asked (the trace encoder ignores requests).
    struct KeyOnRequest {
        inner: TraceEncoder,
        key_pending: bool,
    }

    impl EncoderModel for KeyOnRequest {
        fn set_target(&mut self, now: Instant, target: Bitrate) {
            self.inner.set_target(now, target);
        }
        fn poll_timeout(&self) -> Option<Instant> {
            self.inner.poll_timeout()
        }
        fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
            let mut f = self.inner.produce(now)?;
            if std::mem::take(&mut self.key_pending) {
                f.frame_type = FrameType::Key;
            }
            Some(f)
        }
        fn current_target(&self) -> Bitrate {
            self.inner.current_target()
        }
        fn request_key_frame(&mut self) {
            self.key_pending = true;
        }
    }

    /// 30 fps of 5000 B frames (≈ 1.2 Mbps) into a 200 kbps pacer: the
    /// queue grows by ~1 Mbps. Key frames at ids in `keys`.
    fn overloaded(keys: &[u64], drop: Option<Duration>) -> SenderSession<KeyOnRequest> {
        let trace = (0..300)
            .map(|k| {
                let t = if keys.contains(&k) {
                    FrameType::Key
                } else {
                    FrameType::Delta
                };
                (Bytes::new(5000), t)
            })
            .collect();
        let enc = KeyOnRequest {
            inner: TraceEncoder::new(Instant::ZERO, 30.0, trace).unwrap(),
            key_pending: false,
        };
        let cfg = SenderConfig {
            cc: CcConfig::Fixed(FixedConfig {
                bitrate: Bitrate::kbps(200),
                pacing_factor: 1.0,
                plan: None,
            }),
            queue_time_limit: None,
            frame_drop_queue_time: drop,
            ..config()
        };
        SenderSession::new(Instant::ZERO, cfg, enc)
    }

    /// Runs the session for `secs` s (1 ms steps), returning what it sent;
    /// checks the queue bound after every frame.
    fn run(
        s: &mut SenderSession<KeyOnRequest>,
        secs: u64,
        max_queue: Option<Bytes>,
    ) -> Vec<Transmit> {
        let mut out = Vec::new();
        let mut t = Instant::ZERO;
        while t < Instant::from_secs(secs) {
            s.on_timeout(t);
            if let Some(m) = max_queue {
                assert!(s.queued_bytes() <= m, "{} queued at {t}", s.queued_bytes());
            }
            while let Some(tx) = s.poll_transmit(t) {
                out.push(tx);
            }
            t += Duration::from_millis(1);
        }
        out
    }

    #[test]
    fn frames_are_dropped_while_the_queue_holds_more_than_the_limit() {
        // 200 kbps x 2 s = 50 000 B: a frame is queued only while the queue
        // holds at most that, so it never exceeds 50 000 B + one frame (plus
        // its headers).
        let mut s = overloaded(&[0], Some(DEFAULT_FRAME_DROP_QUEUE_TIME));
        let bound = Bytes::new(50_000 + 5 * 1248);
        run(&mut s, 8, Some(bound));
        let st = *s.stats();
        // ~240 frames captured in 8 s, ~200 kbps x 8 s / 5000 B ≈ 40 sent
        // plus the 2 s queue: most frames are dropped.
        assert!(st.frames_dropped_at_sender > 150, "{st:?}");
        assert_eq!(
            st.frames_encoded + st.frames_dropped_at_sender,
            240,
            "{st:?}"
        );
        // Without the rule the queue grows without bound.
        let mut s = overloaded(&[0], None);
        run(&mut s, 8, None);
        assert_eq!(s.stats().frames_dropped_at_sender, 0);
        assert!(
            s.queued_bytes() > Bytes::new(500_000),
            "{}",
            s.queued_bytes()
        );
    }

    #[test]
    fn no_frame_is_dropped_while_the_pacer_keeps_up() {
        // 5000 B at 30 fps through a 2 Mbps pacer: the queue empties between
        // frames and the rule never fires.
        let trace = vec![(Bytes::new(5000), FrameType::Delta)];
        let enc = KeyOnRequest {
            inner: TraceEncoder::new(Instant::ZERO, 30.0, trace).unwrap(),
            key_pending: false,
        };
        let cfg = SenderConfig {
            cc: CcConfig::Fixed(FixedConfig {
                bitrate: Bitrate::mbps(2),
                pacing_factor: 1.0,
                plan: None,
            }),
            frame_drop_queue_time: Some(Duration::from_millis(100)),
            ..config()
        };
        let mut s = SenderSession::new(Instant::ZERO, cfg, enc);
        run(&mut s, 4, Some(Bytes::new(5 * 1248)));
        assert_eq!(s.stats().frames_dropped_at_sender, 0);
        assert_eq!(s.stats().frames_encoded, 120);
    }

    #[test]
    fn dropped_frames_leave_the_receivers_decoding_chain_intact() {
        use crate::media::player::{PacketMeta, Player, PlayerConfig};
        let mut s = overloaded(&[0], Some(DEFAULT_FRAME_DROP_QUEUE_TIME));
        let sent = run(&mut s, 8, None);
        assert!(s.stats().frames_dropped_at_sender > 0);
        // Frame ids on the wire are consecutive: dropped frames leave no gap.
        let mut last = 0;
        for tx in &sent {
            assert!(
                tx.packet.frame_id <= last + 1,
                "gap before {}",
                tx.packet.frame_id
            );
            last = last.max(tx.packet.frame_id);
        }
        // A lossless path: the player decodes every frame it completes,
        // misses none and so never needs a key frame after the first.
        let mut player = Player::new(PlayerConfig::default());
        for tx in &sent {
            let p = tx.packet;
            player.on_packet(tx.send_time, &PacketMeta::from(p));
        }
        player.finish(Instant::from_secs(8));
        let ps = player.stats();
        assert_eq!((ps.frames_dropped, ps.frames_missing), (0, 0), "{ps:?}");
        assert!(ps.frames_displayed + 1 >= last, "{ps:?}, last id {last}");
    }

    #[test]
    fn a_dropped_key_frame_makes_the_next_frame_sent_a_key_frame() {
        // Frame 90 (t = 3 s) is a key frame; by then the queue is full.
        let mut s = overloaded(&[0, 90], Some(DEFAULT_FRAME_DROP_QUEUE_TIME));
        let sent = run(&mut s, 8, None);
        let keys: Vec<u64> = sent
            .iter()
            .filter(|tx| tx.packet.index == 0 && tx.packet.frame_type == FrameType::Key)
            .map(|tx| tx.packet.frame_id)
            .collect();
        // Frame 0 and one more: the key frame carried over to a later capture.
        assert_eq!(keys.len(), 2, "{keys:?}");
        let key = sent
            .iter()
            .find(|tx| tx.packet.frame_id == keys[1])
            .unwrap();
        assert!(
            key.packet.capture_time > Instant::from_secs(3),
            "{}",
            key.packet.capture_time
        );
    }

    #[test]
    fn the_pacer_drains_the_session_queue_within_the_queue_time_limit() {
        // 1.2 Mbps of frames into a 200 kbps controller, no frame dropping:
        // with the limit, no packet waits much beyond 2 s (the pacer speeds
        // up); without it, the wait grows with the run (~5 s after 8 s).
        let wait = |limit: Option<Duration>| {
            let mut s = overloaded(&[0], None);
            s.pacer.set_queue_time_limit(Instant::ZERO, limit);
            let sent = run(&mut s, 8, None);
            sent.iter()
                .map(|tx| tx.send_time - tx.packet.capture_time)
                .max()
                .unwrap()
        };
        let with = wait(Some(DEFAULT_QUEUE_TIME_LIMIT));
        assert!(with <= Duration::from_millis(2100), "{with}");
        let without = wait(None);
        assert!(without > Duration::from_secs(5), "{without}");
    }
}
