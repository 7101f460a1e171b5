//! Sender-side loss detection: RFC 9002 §6 and its pseudocode in Appendix A
//! (A.5 on_packet_sent, A.7 on_ack_received, A.8 the loss-detection timer,
//! A.9 on_loss_detection_timeout, A.10 detect_and_remove_lost_packets).
//!
//! One packet number space (application data), handshake confirmed, the peer's
//! address validated: the anti-amplification and Initial/Handshake space parts
//! of Appendix A do not apply. The congestion controller is not called from
//! here; the caller passes [`AckOutcome`] and [`LostPacket`]s on to it.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};
use crate::transport::ack::{AckFrame, PacketNumber};
use crate::transport::rtt::{RttEstimator, DEFAULT_MAX_ACK_DELAY};
use crate::units::Bytes;

/// RFC 9002 §6.1.1: `kPacketThreshold`, "The RECOMMENDED initial value for the
/// packet threshold (kPacketThreshold) is 3".
pub const PACKET_THRESHOLD: u64 = 3;

/// RFC 9002 §6.2.1: the PTO backoff doubles per consecutive PTO; we stop
/// doubling after this many (2^16 × PTO is far past any sensible run) so the
/// arithmetic cannot overflow. Our choice, not in the RFC.
pub const MAX_PTO_BACKOFF_EXPONENT: u32 = 16;

/// Configuration of the [`LossDetector`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossDetectorConfig {
    /// The peer's `max_ack_delay` (RFC 9000 §18.2, default 25 ms).
    pub max_ack_delay: Duration,
    /// `kPacketThreshold` (RFC 9002 §6.1.1, default 3).
    pub packet_threshold: u64,
}

impl Default for LossDetectorConfig {
    fn default() -> Self {
        Self {
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            packet_threshold: PACKET_THRESHOLD,
        }
    }
}

/// One sent packet as the loss detector remembers it (RFC 9002 Appendix A.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportPacket {
    /// Its packet number.
    pub packet_number: PacketNumber,
    /// When it was sent.
    pub time_sent: Instant,
    /// Its size on the wire.
    pub size: Bytes,
    /// True if it elicits an ACK (A.1.1 `ack_eliciting`). Ack-eliciting packets
    /// are the ones counted in flight (§2: ACK-only packets are not; PADDING is
    /// not modelled).
    pub ack_eliciting: bool,
    /// Opaque caller token, e.g. an index into the caller's table of the data
    /// ids this packet carries; returned unchanged when the packet is acked or lost.
    pub token: u64,
}

/// Which rule declared a packet lost (RFC 9002 §6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossReason {
    /// §6.1.1: `kPacketThreshold` or more newer packets were acknowledged.
    PacketThreshold,
    /// §6.1.2: sent more than the loss delay before an ACK of a newer packet.
    TimeThreshold,
}

/// A packet declared lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostPacket {
    /// The packet.
    pub packet: TransportPacket,
    /// Which rule fired.
    pub reason: LossReason,
    /// Loss-detection time: from its send to being declared lost. AutoRec's
    /// `T_unit` is the mean of these (§V-A of the AutoRec paper).
    pub detection_time: Duration,
}

/// What an ACK frame did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Packets acknowledged for the first time, in ascending packet number.
    pub newly_acked: Vec<TransportPacket>,
    /// Packets declared lost by this ACK, in ascending packet number.
    pub lost: Vec<LostPacket>,
    /// True if the ACK produced an RTT sample (§5.1).
    pub rtt_updated: bool,
}

/// What the loss-detection timer did, as reported by
/// [`LossDetector::on_timeout_into`]: the lost packets, if any, are in the
/// caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutKind {
    /// The timer was not due (or not armed): nothing happened.
    NotDue,
    /// The time threshold fired (§6.1.2): the buffer holds the lost packets.
    Lost,
    /// The PTO fired (§6.2.4); see [`TimeoutOutcome::Probe`].
    Probe {
        /// Number of probe packets to send.
        count: usize,
    },
}

/// What the loss-detection timer did (RFC 9002 Appendix A.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeoutOutcome {
    /// The timer was not due (or not armed): nothing happened.
    NotDue,
    /// The time threshold fired: these packets are lost (§6.1.2).
    Lost(Vec<LostPacket>),
    /// The PTO fired (§6.2.4): the caller must now send `count` ack-eliciting
    /// probe packets (new data, or retransmitted data in new packets), and
    /// report them with [`LossDetector::on_packet_sent`]. `pto_count` has
    /// already been incremented.
    Probe {
        /// Number of probe packets to send: 1 or 2 (§6.2.4: "at least one
        /// ack-eliciting packet ... An endpoint MAY send up to two").
        count: usize,
    },
}

/// An ACK that cannot be right (RFC 9000 §13.1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AckError {
    /// RFC 9000 §13.1: an acknowledgment for a packet never sent SHOULD be a
    /// PROTOCOL_VIOLATION. Detected when the largest acknowledged exceeds the
    /// largest packet number sent. The frame is ignored.
    #[error("ACK frame acknowledges packet {largest_acknowledged} but the largest sent is {largest_sent:?}")]
    UnsentPacketAcknowledged {
        /// The frame's Largest Acknowledged.
        largest_acknowledged: PacketNumber,
        /// The largest packet number sent so far.
        largest_sent: Option<PacketNumber>,
    },
}

/// Running totals, for reports and for AutoRec's adapter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossStats {
    /// Packets reported with `on_packet_sent`.
    pub packets_sent: u64,
    /// Packets acknowledged.
    pub packets_acked: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Sum of the loss-detection times of the lost packets.
    pub total_detection_time: Duration,
    /// PTO expirations.
    pub pto_expirations: u64,
}

impl LossStats {
    /// Mean loss-detection time of the lost packets (AutoRec's `T_unit`), or
    /// `None` before the first loss.
    pub fn mean_detection_time(&self) -> Option<Duration> {
        (self.packets_lost > 0).then(|| self.total_detection_time / self.packets_lost)
    }
}

/// Sender-side sent-packet tracking and loss detection (RFC 9002 §6, Appendix A).
///
/// Call protocol: [`on_packet_sent`](Self::on_packet_sent) for every packet,
/// [`on_ack_received`](Self::on_ack_received) for every ACK frame,
/// [`on_timeout`](Self::on_timeout) when `now` reaches
/// [`poll_timeout`](Self::poll_timeout) (calling early returns
/// [`TimeoutOutcome::NotDue`]).
#[derive(Debug, Clone)]
pub struct LossDetector {
    config: LossDetectorConfig,
    rtt: RttEstimator,
    /// Unacknowledged, not-yet-lost packets (A.1.1 `sent_packets`): entry
    /// `i` is packet number `sent_base + i`, `None` once acked or lost (or
    /// never sent, for a skipped number). The front is always `Some` (trimmed
    /// after each removal), so the oldest outstanding packet is the front.
    /// A ring rather than a map: packet numbers are increasing and nearly
    /// dense, and a map allocates a node per packet sent while the ring
    /// reaches its capacity (about one RTT of packets) and then allocates
    /// nothing.
    sent: VecDeque<Option<TransportPacket>>,
    /// Packet number of `sent[0]`.
    sent_base: PacketNumber,
    largest_sent: Option<PacketNumber>,
    /// A.2 `largest_acked_packet`.
    largest_acked: Option<PacketNumber>,
    /// A.2 `time_of_last_ack_eliciting_packet`.
    time_of_last_ack_eliciting: Option<Instant>,
    /// A.2 `loss_time`: when the earliest outstanding packet crosses the time threshold.
    loss_time: Option<Instant>,
    /// A.2 `pto_count`.
    pto_count: u32,
    bytes_in_flight: Bytes,
    ack_eliciting_in_flight: u64,
    /// The armed loss-detection timer (A.8).
    timer: Option<Instant>,
    /// The latest `now` seen, so that [`Self::poll_timeout`] is never in the past.
    last_now: Instant,
    stats: LossStats,
}

impl LossDetector {
    /// A detector with no packet sent.
    pub fn new(config: LossDetectorConfig) -> Self {
        Self {
            config,
            rtt: RttEstimator::new(),
            sent: VecDeque::new(),
            sent_base: 0,
            largest_sent: None,
            largest_acked: None,
            time_of_last_ack_eliciting: None,
            loss_time: None,
            pto_count: 0,
            bytes_in_flight: Bytes::ZERO,
            ack_eliciting_in_flight: 0,
            timer: None,
            last_now: Instant::ZERO,
            stats: LossStats::default(),
        }
    }

    /// The packet number the next packet must carry: one above the largest sent.
    pub fn next_packet_number(&self) -> PacketNumber {
        self.largest_sent.map_or(0, |l| l + 1)
    }

    /// Records a sent packet (A.5 `OnPacketSent`). Packet numbers must be
    /// strictly increasing and are never reused (RFC 9000 §12.3); a violation
    /// panics in debug builds and the packet is ignored in release builds.
    pub fn on_packet_sent(
        &mut self,
        now: Instant,
        packet_number: PacketNumber,
        size: Bytes,
        ack_eliciting: bool,
        token: u64,
    ) {
        self.last_now = self.last_now.max(now);
        let fresh = self.largest_sent.is_none_or(|l| packet_number > l);
        debug_assert!(
            fresh,
            "packet number {packet_number} reused or not increasing (largest sent {:?})",
            self.largest_sent
        );
        if !fresh {
            return;
        }
        self.largest_sent = Some(packet_number);
        if self.sent.is_empty() {
            self.sent_base = packet_number;
        }
        // Skipped packet numbers (none in our sender) become empty entries.
        while self.sent_base + (self.sent.len() as u64) < packet_number {
            self.sent.push_back(None);
        }
        self.sent.push_back(Some(TransportPacket {
            packet_number,
            time_sent: now,
            size,
            ack_eliciting,
            token,
        }));
        self.stats.packets_sent += 1;
        if ack_eliciting {
            // A.5: in flight; time_of_last_ack_eliciting_packet = now.
            self.bytes_in_flight += size;
            self.ack_eliciting_in_flight += 1;
            self.time_of_last_ack_eliciting = Some(now);
            self.set_loss_detection_timer();
        }
    }

    /// Processes an ACK frame (A.7 `OnAckReceived`). Returns the newly acked
    /// and newly lost packets; the caller feeds them to its congestion
    /// controller and data layer. An ACK of a packet never sent is an error
    /// and changes nothing. Allocates the outcome's vectors;
    /// [`on_ack_received_into`](Self::on_ack_received_into) reuses them.
    pub fn on_ack_received(
        &mut self,
        now: Instant,
        ack: &AckFrame,
    ) -> Result<AckOutcome, AckError> {
        let mut outcome = AckOutcome::default();
        self.on_ack_received_into(now, ack, &mut outcome)?;
        Ok(outcome)
    }

    /// [`on_ack_received`](Self::on_ack_received) into a caller-owned
    /// outcome: `outcome` is cleared, then filled (its vectors keep their
    /// capacity, so a reused outcome makes the ACK path allocation-free). On
    /// an error `outcome` is left empty.
    pub fn on_ack_received_into(
        &mut self,
        now: Instant,
        ack: &AckFrame,
        outcome: &mut AckOutcome,
    ) -> Result<(), AckError> {
        outcome.newly_acked.clear();
        outcome.lost.clear();
        outcome.rtt_updated = false;
        let largest = ack.largest_acknowledged();
        self.last_now = self.last_now.max(now);
        if self.largest_sent.is_none_or(|l| largest > l) {
            return Err(AckError::UnsentPacketAcknowledged {
                largest_acknowledged: largest,
                largest_sent: self.largest_sent,
            });
        }
        // A.7: largest_acked_packet = max(largest_acked_packet, ack.largest_acked).
        self.largest_acked = Some(self.largest_acked.map_or(largest, |l| l.max(largest)));

        // A.7 DetectAndRemoveAckedPackets: walk the tracked packet numbers
        // inside each range, ascending (a range is clipped to the tracked
        // span, so a wide range costs no more than the packets in flight).
        for range in ack.ranges().iter().rev() {
            let (from, to) = self.span_indices(range.smallest, range.largest);
            for i in from..to {
                if let Some(p) = self.sent[i].take() {
                    self.remove_from_flight(&p);
                    outcome.newly_acked.push(p);
                }
            }
        }
        self.trim_sent();
        if outcome.newly_acked.is_empty() {
            // A.7: "Nothing to do if there are no newly acked packets."
            return Ok(());
        }
        self.stats.packets_acked += outcome.newly_acked.len() as u64;

        // §5.1 / A.7: an RTT sample when the largest acknowledged is newly
        // acked and at least one newly acked packet is ack-eliciting.
        if let Some(last) = outcome.newly_acked.last() {
            if last.packet_number == largest && outcome.newly_acked.iter().any(|p| p.ack_eliciting)
            {
                let latest_rtt = now - last.time_sent;
                self.rtt
                    .on_sample(now, latest_rtt, ack.ack_delay(), self.config.max_ack_delay);
                outcome.rtt_updated = true;
            }
        }

        self.detect_and_remove_lost_packets(now, &mut outcome.lost);
        // A.7: "Reset pto_count unless the client is unsure if the server has
        // validated the client's address" — we are past that, always reset.
        self.pto_count = 0;
        self.set_loss_detection_timer();
        Ok(())
    }

    /// The loss-detection timer (A.8), `None` when disarmed. A deadline that
    /// has already passed (A.8 allows it: the timer then fires at once) is
    /// reported as the latest `now` seen, per the crate's call protocol.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timer.map(|t| t.max(self.last_now))
    }

    /// Fires the loss-detection timer if it is due (A.9 `OnLossDetectionTimeout`).
    /// Allocates the lost list; [`on_timeout_into`](Self::on_timeout_into)
    /// reuses a buffer.
    pub fn on_timeout(&mut self, now: Instant) -> TimeoutOutcome {
        let mut lost = Vec::new();
        match self.on_timeout_into(now, &mut lost) {
            TimeoutKind::NotDue => TimeoutOutcome::NotDue,
            TimeoutKind::Lost => TimeoutOutcome::Lost(lost),
            TimeoutKind::Probe { count } => TimeoutOutcome::Probe { count },
        }
    }

    /// [`on_timeout`](Self::on_timeout) into a caller-owned buffer: `lost`
    /// is cleared, then holds the packets lost by the time threshold when
    /// the result is [`TimeoutKind::Lost`] (and is empty otherwise).
    pub fn on_timeout_into(&mut self, now: Instant, lost: &mut Vec<LostPacket>) -> TimeoutKind {
        lost.clear();
        self.last_now = self.last_now.max(now);
        match self.timer {
            Some(t) if t <= now => {}
            _ => return TimeoutKind::NotDue,
        }
        if self.loss_time.is_some() {
            // A.9: time threshold loss detection.
            self.detect_and_remove_lost_packets(now, lost);
            self.set_loss_detection_timer();
            return TimeoutKind::Lost;
        }
        // A.9: PTO. The timer is only armed with ack-eliciting packets in
        // flight (A.8, address validated), so this is the PTO branch:
        // send one or two ack-eliciting packets, pto_count++.
        self.pto_count = self.pto_count.saturating_add(1);
        self.stats.pto_expirations += 1;
        self.set_loss_detection_timer();
        // Two probes (§6.2.4 allows up to two) improve the odds one gets
        // through on a lossy path; our choice.
        TimeoutKind::Probe { count: 2 }
    }

    /// Bytes in flight: the sizes of the outstanding ack-eliciting packets (§2).
    pub fn bytes_in_flight(&self) -> Bytes {
        self.bytes_in_flight
    }
    /// The RTT estimator.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    /// Consecutive PTO expirations without an ACK (A.2 `pto_count`).
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }
    /// The current probe timeout with backoff, RFC 9002 §6.2.1 and A.8:
    /// `(smoothed_rtt + max(4·rttvar, kGranularity) + max_ack_delay) · 2^pto_count`.
    pub fn pto(&self) -> Duration {
        self.rtt.pto_base(self.config.max_ack_delay)
            * (1u64 << self.pto_count.min(MAX_PTO_BACKOFF_EXPONENT))
    }
    /// Largest acknowledged packet number (A.2 `largest_acked_packet`).
    pub fn largest_acked(&self) -> Option<PacketNumber> {
        self.largest_acked
    }
    /// Largest packet number sent.
    pub fn largest_sent(&self) -> Option<PacketNumber> {
        self.largest_sent
    }
    /// Outstanding packets (neither acked nor lost), ascending.
    pub fn outstanding(&self) -> impl Iterator<Item = &TransportPacket> + '_ {
        self.sent.iter().flatten()
    }
    /// Number of outstanding ack-eliciting packets.
    pub fn ack_eliciting_in_flight(&self) -> u64 {
        self.ack_eliciting_in_flight
    }
    /// Running totals.
    pub fn stats(&self) -> &LossStats {
        &self.stats
    }
    /// The configuration.
    pub fn config(&self) -> &LossDetectorConfig {
        &self.config
    }

    fn remove_from_flight(&mut self, p: &TransportPacket) {
        if p.ack_eliciting {
            self.bytes_in_flight -= p.size;
            self.ack_eliciting_in_flight -= 1;
        }
    }

    /// Indices `from..to` of `sent` holding packet numbers `smallest..=largest`
    /// (empty when the range lies outside the tracked span).
    fn span_indices(&self, smallest: PacketNumber, largest: PacketNumber) -> (usize, usize) {
        let end = self.sent_base + self.sent.len() as u64;
        let from = smallest.clamp(self.sent_base, end);
        let to = largest.saturating_add(1).clamp(from, end);
        // Both lie within `sent_base ..= sent_base + len`, so the offsets fit in usize.
        (
            (from - self.sent_base) as usize,
            (to - self.sent_base) as usize,
        )
    }

    /// Drops the acked or lost entries at the front, so the front is the
    /// oldest outstanding packet.
    fn trim_sent(&mut self) {
        while self.sent.front().is_some_and(Option::is_none) {
            self.sent.pop_front();
            self.sent_base += 1;
        }
    }

    /// A.10 `DetectAndRemoveLostPackets`: appends the lost packets to `lost`,
    /// ascending.
    fn detect_and_remove_lost_packets(&mut self, now: Instant, lost: &mut Vec<LostPacket>) {
        self.loss_time = None;
        let Some(largest_acked) = self.largest_acked else {
            return;
        };
        // §6.1.2: loss_delay = max(9/8 · max(latest_rtt, smoothed_rtt), kGranularity).
        let loss_delay = self.rtt.loss_delay();
        // Packets sent before this time are deemed lost.
        let lost_send_time = now.saturating_sub(loss_delay);
        let enough_time = now >= Instant::ZERO + loss_delay;
        let (from, to) = self.span_indices(0, largest_acked);
        for i in from..to {
            let Some(p) = self.sent[i] else { continue };
            let pn = p.packet_number;
            // §6.1.1: packet threshold. Checked first so that a packet meeting
            // both rules is reported as a packet-threshold loss.
            let reason = if largest_acked >= pn + self.config.packet_threshold {
                LossReason::PacketThreshold
            } else if enough_time && p.time_sent <= lost_send_time {
                // §6.1.2: time threshold.
                LossReason::TimeThreshold
            } else {
                let t = p.time_sent + loss_delay;
                self.loss_time = Some(self.loss_time.map_or(t, |l: Instant| l.min(t)));
                continue;
            };
            self.sent[i] = None;
            self.remove_from_flight(&p);
            let detection_time = now - p.time_sent;
            self.stats.packets_lost += 1;
            self.stats.total_detection_time += detection_time;
            lost.push(LostPacket {
                packet: p,
                reason,
                detection_time,
            });
        }
        self.trim_sent();
    }

    /// A.8 `SetLossDetectionTimer`.
    fn set_loss_detection_timer(&mut self) {
        if let Some(t) = self.loss_time {
            // Time threshold loss detection.
            self.timer = Some(t);
            return;
        }
        if self.ack_eliciting_in_flight == 0 {
            // A.8: nothing to detect lost; cancel (the server-side case, the
            // peer's address is validated).
            self.timer = None;
            return;
        }
        // A.8 GetPtoTimeAndSpace for the application data space:
        // time_of_last_ack_eliciting_packet + PTO · 2^pto_count, where PTO
        // includes max_ack_delay (handshake confirmed).
        self.timer = self.time_of_last_ack_eliciting.map(|t| t + self.pto());
    }
}

impl Default for LossDetector {
    fn default() -> Self {
        Self::new(LossDetectorConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::ack::{AckRange, AckTracker};

    const MTU: Bytes = Bytes::new(1200);

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn frame(ranges: &[(u64, u64)]) -> AckFrame {
        let ranges = ranges
            .iter()
            .map(|&(smallest, largest)| AckRange { smallest, largest })
            .collect();
        AckFrame::new(Duration::ZERO, ranges).unwrap()
    }

    #[test]
    fn reusing_variants_match_the_allocating_ones() {
        // Two detectors fed the same events: one through the allocating
        // API, one through the `_into` variants with buffers reused across
        // calls. Every result must agree. Packets 0..400 at 1 ms spacing,
        // every 7th lost, ACKs every 4 ms built by a tracker, timers fired.
        let mut a = LossDetector::default();
        let mut b = LossDetector::default();
        let mut tracker = AckTracker::new(8);
        let mut outcome = AckOutcome::default();
        let mut lost = Vec::new();
        let mut seen_lost = 0;
        let mut timeouts = [0u32; 3];
        for t in 0..1_000u64 {
            let now = at(t);
            if t < 400 {
                a.on_packet_sent(now, t, MTU, true, t);
                b.on_packet_sent(now, t, MTU, true, t);
            }
            // Delivered 40 ms later unless dropped (every 7th, and 398: a
            // tail loss only the time threshold finds).
            if (40..440).contains(&t) && (t - 40) % 7 != 3 && t != 438 {
                tracker.on_packet_received(now, t - 40);
            }
            if t % 4 == 0 && t >= 70 {
                if let Some(f) = tracker.build_ack(now) {
                    let want = a.on_ack_received(now, &f).unwrap();
                    b.on_ack_received_into(now, &f, &mut outcome).unwrap();
                    assert_eq!(outcome, want, "ack at {t} ms");
                    seen_lost += want.lost.len();
                }
            }
            if a.poll_timeout().is_some_and(|d| d <= now) {
                let want = a.on_timeout(now);
                let kind = b.on_timeout_into(now, &mut lost);
                match want {
                    TimeoutOutcome::NotDue => {
                        timeouts[0] += 1;
                        assert_eq!(kind, TimeoutKind::NotDue);
                    }
                    TimeoutOutcome::Probe { count } => {
                        timeouts[1] += 1;
                        assert_eq!(kind, TimeoutKind::Probe { count });
                        assert!(lost.is_empty());
                    }
                    TimeoutOutcome::Lost(l) => {
                        timeouts[2] += 1;
                        assert_eq!(kind, TimeoutKind::Lost);
                        assert_eq!(lost, l);
                        seen_lost += l.len();
                    }
                }
            }
            assert_eq!(a.poll_timeout(), b.poll_timeout());
            assert!(a.outstanding().eq(b.outstanding()));
            assert_eq!(a.bytes_in_flight(), b.bytes_in_flight());
        }
        assert_eq!(a.stats(), b.stats());
        assert!(seen_lost >= 50, "losses exercised: {seen_lost}");
        assert!(
            timeouts[2] > 0,
            "time-threshold timeouts exercised: {timeouts:?}"
        );
        assert_eq!(a.stats().packets_acked + a.stats().packets_lost, 400);
        // An invalid ACK leaves the reused outcome empty.
        let bad = frame(&[(500, 500)]);
        assert!(b
            .on_ack_received_into(at(2_000), &bad, &mut outcome)
            .is_err());
        assert_eq!(outcome, AckOutcome::default());
    }

    #[test]
    fn skipped_packet_numbers_are_not_outstanding() {
        let mut d = LossDetector::default();
        for pn in [3, 4, 9, 10, 11, 20] {
            d.on_packet_sent(at(pn), pn, MTU, true, pn);
        }
        let pns = |d: &LossDetector| d.outstanding().map(|p| p.packet_number).collect::<Vec<_>>();
        assert_eq!(pns(&d), vec![3, 4, 9, 10, 11, 20]);
        assert_eq!(d.bytes_in_flight(), Bytes::new(6 * 1200));
        // Ranges reaching below the oldest tracked number, and one over
        // skipped numbers only.
        let out = d
            .on_ack_received(at(30), &frame(&[(9, 20), (5, 7), (0, 3)]))
            .unwrap();
        let acked: Vec<_> = out.newly_acked.iter().map(|p| p.packet_number).collect();
        assert_eq!(acked, vec![3, 9, 10, 11, 20]);
        // 4 is 16 below the largest acked: lost by the packet threshold.
        assert_eq!(out.lost.len(), 1);
        assert_eq!(out.lost[0].packet.packet_number, 4);
        assert_eq!(out.lost[0].reason, LossReason::PacketThreshold);
        assert!(d.outstanding().next().is_none());
        assert_eq!(d.bytes_in_flight(), Bytes::ZERO);
        // After the ring emptied, numbering resumes above the largest sent.
        d.on_packet_sent(at(31), 40, MTU, true, 40);
        assert_eq!(pns(&d), vec![40]);
        let out = d.on_ack_received(at(60), &frame(&[(40, 40)])).unwrap();
        assert_eq!(out.newly_acked.len(), 1);
    }
}
