//! The media sender session: encoder → packetizer → congestion controller →
//! pacer → network. The simulator and the real transport drive this same type.
//!
//! Call protocol (see the crate doc): after any input (`on_timeout`,
//! `handle_feedback`), drain [`SenderSession::poll_transmit`] until `None`,
//! then ask [`SenderSession::poll_timeout`] when to call `on_timeout` next.

use std::collections::VecDeque;

use crate::cc::{CcConfig, CongestionController, Controller};
use crate::feedback::WireFeedback;
use crate::media::encoder::EncoderModel;
use crate::media::frame::FrameInfo;
use crate::media::packetizer::{MediaPacket, Packetizer};
use crate::pacer::Pacer;
use crate::packet::{FeedbackReport, PacketKind, PacketResult, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// How long sent packets are remembered to join with feedback
/// (libwebrtc keeps 60 s, `kSendTimeHistoryWindow`; 10 s suffices for any
/// feedback that still matters and bounds memory).
const HISTORY_WINDOW: Duration = Duration::from_secs(10);

/// Key-frame requests closer together than this are served by one key frame:
/// the receiver repeats its request in every report until a key frame arrives,
/// and a key frame takes about a round trip to show up (our choice; RFC 4585
/// §3.5 leaves the rate of such requests to the application).
const KEY_FRAME_REQUEST_INTERVAL: Duration = Duration::from_millis(300);

/// Sender settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SenderConfig {
    /// Congestion controller.
    pub cc: CcConfig,
    /// Packet sizes.
    pub packetizer: Packetizer,
    /// What to do when the receiver falls silent (`None` = nothing).
    pub feedback_timeout: Option<FeedbackTimeout>,
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
    /// The media it carries.
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
}

#[derive(Debug, Clone, Copy)]
struct HistoryEntry {
    sent: SentPacket,
    reported: bool,
    received: bool,
}

/// The media sender.
#[derive(Debug)]
pub struct SenderSession<E> {
    cc: Controller,
    pacer: Pacer,
    encoder: E,
    packetizer: Packetizer,
    queue: VecDeque<MediaPacket>,
    queued_bytes: Bytes,
    next_seq: SeqNo,
    history: VecDeque<HistoryEntry>,
    history_base: SeqNo,
    /// Every packet below this sequence number is marked reported: the scan
    /// for packets a lost report covered starts here (O(new packets), not
    /// O(history)).
    unreported_from: SeqNo,
    in_flight: Bytes,
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
}

impl<E: EncoderModel> SenderSession<E> {
    /// A session starting at `now`.
    pub fn new(now: Instant, config: SenderConfig, mut encoder: E) -> Self {
        let cc = config.cc.build(now);
        let pacer = Pacer::new(now, cc.send_budget());
        encoder.set_target(now, cc.target_bitrate());
        SenderSession {
            pacer,
            cc,
            encoder,
            packetizer: config.packetizer,
            queue: VecDeque::with_capacity(256),
            queued_bytes: Bytes::ZERO,
            next_seq: 0,
            history: VecDeque::with_capacity(4096),
            history_base: 0,
            unreported_from: 0,
            in_flight: Bytes::ZERO,
            report: FeedbackReport::default(),
            stats: SenderStats::default(),
            last_now: now,
            last_key_frame_request: None,
            feedback_timeout: config.feedback_timeout,
            silent_since: None,
            backoff_steps: 0,
        }
    }

    /// The congestion controller.
    pub fn controller(&self) -> &Controller {
        &self.cc
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
        self.in_flight
    }
    /// Bytes waiting in the pacer queue.
    pub fn queued_bytes(&self) -> Bytes {
        self.queued_bytes
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
        self.pacer.set_budget(now, budget);
        self.encoder.set_target(now, target);
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
            let Some(frame) = self.encoder.produce(now) else {
                break;
            };
            self.stats.frames_encoded += 1;
            let queue = &mut self.queue;
            let mut added = Bytes::ZERO;
            let push = |p: MediaPacket| {
                added += p.wire_size;
                queue.push_back(p);
            };
            // An encoder with its own packetisation (RFC 6184 NAL units) gives
            // the packets' sizes; otherwise the packetizer cuts the frame.
            let n = match self.encoder.packet_payloads(frame.frame_id) {
                Some(sizes) => {
                    self.packetizer.packetize_sizes(
                        frame.frame_id,
                        frame.frame_type,
                        frame.capture_time,
                        sizes,
                        push,
                    );
                    u32::try_from(sizes.len()).unwrap_or(u32::MAX)
                }
                None => {
                    self.packetizer.packetize(
                        frame.frame_id,
                        frame.frame_type,
                        frame.capture_time,
                        frame.size,
                        push,
                    );
                    self.packetizer.packet_count(frame.size)
                }
            };
            self.queued_bytes += added;
            let info = FrameInfo {
                frame_id: frame.frame_id,
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
        self.check_feedback_timeout(now);
    }

    /// The next packet to send now, if the window and the pacer allow.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let head = *self.queue.front()?;
        if head.index == 0 {
            // Frame-burst mode arms when the frame reaches the head (pacer doc).
            self.pacer.on_frame_at_head(now, head.frame_id);
        }
        if let Some(cwnd) = self.cc.send_budget().cwnd {
            if self.in_flight >= cwnd {
                self.pacer.cancel_due();
                return None;
            }
        }
        if !self.pacer.can_send(now) {
            return None;
        }
        self.queue.pop_front();
        self.queued_bytes -= head.wire_size;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight += head.wire_size;
        let sent = SentPacket {
            seq,
            size: head.wire_size,
            send_time: now,
            kind: PacketKind::Media,
            frame_id: Some(head.frame_id),
            first_in_frame: head.index == 0,
            last_in_frame: head.last_in_frame,
            bytes_in_flight: self.in_flight,
        };
        if self.history.is_empty() {
            self.history_base = seq;
        }
        self.history.push_back(HistoryEntry {
            sent,
            reported: false,
            received: false,
        });
        if self.silent_since.is_none() {
            self.silent_since = Some(now);
        }
        self.pacer.on_sent(now, head.wire_size);
        self.cc.on_packet_sent(now, &sent);
        self.pacer.set_budget(now, self.cc.send_budget());
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += head.wire_size.get();
        self.stats.payload_sent += head.payload.get();
        Some(Transmit {
            seq,
            packet: head,
            send_time: now,
        })
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
        self.report.packets.clear();
        self.report.report_time = fb.report_time;
        let first_new = fb.packets.iter().map(|&(s, _)| s).find(|&s| {
            s.checked_sub(self.history_base)
                .and_then(|i| self.history.get(i as usize))
                .is_some_and(|e| !e.reported)
        });
        // Packets older than the first newly reported one that were never
        // reported were covered by a lost feedback packet: their fate is unknown,
        // so they leave the in-flight count without being shown to the controller.
        if let Some(first) = first_new {
            let from = self.unreported_from.saturating_sub(self.history_base) as usize;
            self.unreported_from = self.unreported_from.max(first);
            for e in self.history.range_mut(from.min(self.history.len())..) {
                if e.sent.seq >= first {
                    break;
                }
                if !e.reported {
                    e.reported = true;
                    self.in_flight -= e.sent.size;
                }
            }
        }
        for &(seq, arrival) in &fb.packets {
            let Some(e) = seq
                .checked_sub(self.history_base)
                .and_then(|i| self.history.get_mut(i as usize))
            else {
                self.stats.unknown_feedback_entries += 1;
                continue;
            };
            if !e.reported {
                e.reported = true;
                self.in_flight -= e.sent.size;
                if arrival.is_some() {
                    self.stats.packets_reported_received += 1;
                } else {
                    self.stats.packets_reported_lost += 1;
                }
            } else if arrival.is_none() || e.received {
                // Already known; a repeated loss or duplicate says nothing new.
                continue;
            }
            e.received |= arrival.is_some();
            self.report.packets.push(PacketResult {
                sent: e.sent,
                arrival,
            });
        }
        while let Some(front) = self.history.front() {
            let old = now.saturating_duration_since(front.sent.send_time) > HISTORY_WINDOW;
            if old && (front.reported || self.history.len() > 1) {
                if !front.reported {
                    self.in_flight -= front.sent.size;
                }
                self.history.pop_front();
                self.history_base += 1;
            } else {
                break;
            }
        }
        if !self.report.packets.is_empty() {
            self.cc.on_feedback(now, &self.report);
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
        if let Some(head) = self.queue.front().filter(|h| h.index == 0) {
            self.pacer.on_frame_at_head(now, head.frame_id);
        }
        if !self.queue.is_empty() {
            let window_open = self
                .cc
                .send_budget()
                .cwnd
                .is_none_or(|c| self.in_flight < c);
            if window_open {
                consider(Some(self.pacer.next_send_time(now)));
            }
        }
        t.map(|t| t.max(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::FixedConfig;
    use crate::media::encoder::{EncodedFrame, TraceEncoder};
    use crate::media::frame::FrameType;

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
            }),
            packetizer: Packetizer::default(),
            feedback_timeout: None,
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
}
