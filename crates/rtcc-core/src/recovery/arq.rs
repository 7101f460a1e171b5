//! NACK-based retransmission (ARQ) for real-time media: the receiver asks for
//! missing media packets with generic NACKs (RFC 4585 §6.2.1), the sender
//! retransmits them (RFC 4588), within the time a frame can still be played.
//!
//! The receiver's half, [`NackRequester`], follows the behaviour of
//! libwebrtc's `NackRequester` (modules/video_coding/nack_requester.cc):
//! - a gap in the media sequence numbers puts every missing number on the
//!   NACK list, and they are requested at once (the sequence-number trigger);
//! - every [`ArqConfig::process_interval`] (20 ms, `kProcessIntervalMs`) the
//!   list is scanned and every number last requested at least an RTT ago is
//!   requested again (the time trigger), all due numbers in one NACK;
//! - a number is requested at most [`ArqConfig::max_nacks`] times (10,
//!   `kMaxNackRetries`), the list holds at most [`ArqConfig::max_nack_list`]
//!   numbers (1000, `kMaxNackPackets`), and numbers more than
//!   [`ArqConfig::max_packet_age`] behind the newest are forgotten (10000,
//!   `kMaxPacketAge`);
//! - a packet that arrives late (reordered or retransmitted) leaves the list.
//!
//! Beyond libwebrtc, a number is also given up once the frame it belongs to can
//! no longer be played: its frame was captured no earlier than the packet
//! received before the hole, so the number is dropped at that capture instant
//! plus [`ArqConfig::frame_deadline`].
//!
//! The receiver needs an RTT for the retry interval. It has no round trip of
//! its own to measure in a receive-only session, so it measures the one it
//! causes: the time from a NACK to the retransmission it brings back, taken only
//! from numbers requested once (Karn's rule, as RFC 6298 §3 for TCP), smoothed
//! with gain 1/8 (RFC 6298 §2.3). Until the first sample it uses
//! [`ArqConfig::default_rtt`] (100 ms, `kDefaultRttMs`).
//!
//! The sender's half, [`Arq`], keeps each media packet until its frame's
//! deadline has passed and serves a NACK entry unless (in this order):
//! the packet is no longer in the history; it is already queued for
//! retransmission; it was retransmitted [`ArqConfig::max_retransmissions`]
//! times; it was retransmitted less than an RTT ago (libwebrtc's
//! `RtpPacketHistory` refuses a resend within one RTT of the last one); or it
//! would arrive after its frame's deadline: `now + srtt/2 > capture +
//! frame_deadline` (the one-way delay estimated as half the smoothed RTT). The
//! deadline is checked again when the pacer releases the retransmission.

use std::collections::VecDeque;

use crate::cc::TraceSink;
use crate::feedback::Nack;
use crate::media::packetizer::MediaPacket;
use crate::packet::{FeedbackReport, PacketKind};
use crate::recovery::{LossRecovery, MediaSeq, MediaSeqNo, RecoveryPacket, RecoveryStats};
use crate::time::{Duration, Instant};

/// Settings of NACK-based retransmission (both ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArqConfig {
    /// Latest useful arrival of a packet, counted from its frame's capture.
    /// Default 500 ms: the player gives an incomplete frame up
    /// `max_frame_wait` (500 ms) after a newer frame completed, which is never
    /// earlier than capture + 500 ms ([`crate::media::player::PlayerConfig`]).
    pub frame_deadline: Duration,
    /// Times the sender retransmits one packet at most. Default 10, as many as
    /// the receiver asks (`kMaxNackRetries`).
    pub max_retransmissions: u32,
    /// Times the receiver asks for one packet at most. Default 10
    /// (libwebrtc nack_requester.cc `kMaxNackRetries`).
    pub max_nacks: u32,
    /// The receiver's retry scan interval. Default 20 ms
    /// (nack_requester.cc `kProcessIntervalMs`).
    pub process_interval: Duration,
    /// RTT assumed before the first measurement (both ends). Default 100 ms
    /// (nack_requester.cc `kDefaultRttMs`).
    pub default_rtt: Duration,
    /// Longest NACK list; the oldest numbers are dropped beyond it. Default
    /// 1000 (nack_requester.cc `kMaxNackPackets`).
    pub max_nack_list: usize,
    /// Numbers further than this behind the newest are forgotten. Default
    /// 10000 (nack_requester.cc `kMaxPacketAge`).
    pub max_packet_age: u64,
}

impl Default for ArqConfig {
    fn default() -> Self {
        ArqConfig {
            frame_deadline: Duration::from_millis(500),
            max_retransmissions: 10,
            max_nacks: 10,
            process_interval: Duration::from_millis(20),
            default_rtt: Duration::from_millis(100),
            max_nack_list: 1000,
            max_packet_age: 10_000,
        }
    }
}

// ----------------------------------------------------------------------
// Sender

#[derive(Debug, Clone, Copy)]
struct Stored {
    packet: MediaPacket,
    /// Last (re)transmission.
    last_sent: Instant,
    retransmissions: u32,
    /// Queued for retransmission, not sent yet.
    pending: bool,
}

/// The sender's half of NACK-based retransmission (module doc).
#[derive(Debug, Clone)]
pub struct Arq {
    config: ArqConfig,
    /// Media packets `base ..` in media sequence order.
    history: VecDeque<Stored>,
    base: MediaSeqNo,
    /// Retransmissions waiting for the pacer, in request order.
    queue: VecDeque<MediaSeqNo>,
    srtt: Duration,
    stats: RecoveryStats,
}

impl Arq {
    /// A sender-side ARQ starting at `now`.
    pub fn new(_now: Instant, config: ArqConfig) -> Self {
        Arq {
            srtt: config.default_rtt,
            config,
            history: VecDeque::with_capacity(512),
            base: 0,
            queue: VecDeque::with_capacity(64),
            stats: RecoveryStats::default(),
        }
    }

    /// The smoothed RTT in use.
    pub fn srtt(&self) -> Duration {
        self.srtt
    }

    /// Packets held for retransmission.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The 64-bit media sequence number a 16-bit one from the wire stands
    /// for: the one nearest to the newest packet sent (the history spans far
    /// less than 2^15 packets).
    fn unwrap(&self, seq: u16) -> Option<MediaSeqNo> {
        let newest = (self.base + self.history.len() as u64).checked_sub(1)?;
        let back = (newest as u16).wrapping_sub(seq);
        newest.checked_sub(u64::from(back))
    }

    /// Would a retransmission sent now miss its frame's deadline?
    fn expired(&self, now: Instant, p: &MediaPacket) -> bool {
        now + self.srtt / 2 > p.capture_time + self.config.frame_deadline
    }

    /// Forget packets whose frames can no longer be played.
    fn prune(&mut self, now: Instant) {
        while let Some(front) = self.history.front() {
            if front.packet.capture_time + self.config.frame_deadline < now {
                self.history.pop_front();
                self.base += 1;
            } else {
                break;
            }
        }
    }
}

impl LossRecovery for Arq {
    fn name(&self) -> &'static str {
        "nack"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        &[
            "retransmission_queue",
            "retransmission_history",
            "arq_rtt_ms",
            "nack_requests",
            "retransmissions_sent",
            "retransmissions_expired",
        ]
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        sink.record("retransmission_queue", self.queue.len() as f64);
        sink.record("retransmission_history", self.history.len() as f64);
        sink.record("arq_rtt_ms", self.srtt.as_millis_f64());
        sink.record("nack_requests", self.stats.requested as f64);
        sink.record("retransmissions_sent", self.stats.packets_sent as f64);
        sink.record("retransmissions_expired", self.stats.expired as f64);
    }

    fn on_packet_sent(
        &mut self,
        now: Instant,
        media_seq: MediaSeqNo,
        packet: &MediaPacket,
        kind: PacketKind,
    ) {
        match kind {
            PacketKind::Media => {
                self.prune(now);
                let next = self.base + self.history.len() as u64;
                if self.history.is_empty() || media_seq != next {
                    // First packet, or the sequence jumped (it does not in a
                    // session, which numbers media packets consecutively):
                    // start the history over at this packet.
                    self.history.clear();
                    self.base = media_seq;
                }
                self.history.push_back(Stored {
                    packet: *packet,
                    last_sent: now,
                    retransmissions: 0,
                    pending: false,
                });
            }
            _ => {
                self.stats.packets_sent += 1;
                self.stats.bytes_sent += packet.wire_size.get();
                if let Some(e) = media_seq
                    .checked_sub(self.base)
                    .and_then(|i| self.history.get_mut(i as usize))
                {
                    e.retransmissions += 1;
                    e.last_sent = now;
                }
            }
        }
    }

    fn on_feedback(&mut self, _now: Instant, _report: &FeedbackReport, srtt: Duration) {
        self.srtt = srtt;
    }

    fn on_nack(&mut self, now: Instant, nack: &Nack) {
        self.prune(now);
        for &s in &nack.seqs {
            self.stats.requested += 1;
            let Some(seq) = self.unwrap(s) else {
                self.stats.unknown += 1;
                continue;
            };
            let srtt = self.srtt;
            let max = self.config.max_retransmissions;
            let expired = match seq
                .checked_sub(self.base)
                .and_then(|i| self.history.get(i as usize))
            {
                None => {
                    self.stats.unknown += 1;
                    continue;
                }
                Some(e) if e.pending => continue,
                Some(e) if e.retransmissions >= max => {
                    self.stats.max_retries += 1;
                    continue;
                }
                Some(e) if e.retransmissions > 0 && now < e.last_sent + srtt => {
                    self.stats.too_soon += 1;
                    continue;
                }
                Some(e) => self.expired(now, &e.packet),
            };
            if expired {
                self.stats.expired += 1;
                continue;
            }
            let i = (seq - self.base) as usize;
            self.history[i].pending = true;
            self.queue.push_back(seq);
        }
    }

    fn has_pending(&self, _sender_idle: bool) -> bool {
        !self.queue.is_empty()
    }

    fn poll_transmit(&mut self, now: Instant, _sender_idle: bool) -> Option<RecoveryPacket> {
        while let Some(seq) = self.queue.pop_front() {
            let Some(i) = seq
                .checked_sub(self.base)
                .filter(|&i| (i as usize) < self.history.len())
            else {
                // Pruned while it waited: its frame is past its deadline.
                self.stats.expired += 1;
                continue;
            };
            let e = &mut self.history[i as usize];
            e.pending = false;
            let packet = e.packet;
            if self.expired(now, &packet) {
                self.stats.expired += 1;
                continue;
            }
            return Some(RecoveryPacket {
                media_seq: seq,
                packet,
                kind: PacketKind::Retransmission,
            });
        }
        None
    }

    fn stats(&self) -> RecoveryStats {
        self.stats
    }
}

// ----------------------------------------------------------------------
// Receiver

/// Unwraps 16-bit sequence numbers into a 64-bit count, each taken as the
/// value nearest to the previous one (forward or backward by less than 2^15).
#[derive(Debug, Clone, Copy, Default)]
pub struct SeqUnwrapper {
    last: Option<u64>,
}

impl SeqUnwrapper {
    /// The unwrapped value of `seq`. The first value is placed at 2^32 + seq,
    /// so that packets older than the first one still unwrap without going
    /// below zero.
    pub fn unwrap(&mut self, seq: u16) -> u64 {
        let v = match self.last {
            None => (1u64 << 32) + u64::from(seq),
            Some(last) => {
                let delta = seq.wrapping_sub(last as u16) as i16;
                last.saturating_add_signed(i64::from(delta))
            }
        };
        self.last = Some(self.last.map_or(v, |l| l.max(v)));
        v
    }
}

#[derive(Debug, Clone, Copy)]
struct NackEntry {
    seq: u64,
    /// When it was last requested (`None`: not yet).
    sent_at: Option<Instant>,
    retries: u32,
    /// Give up at this instant (frame deadline).
    deadline: Instant,
}

/// How many numbers behind the newest the requester remembers as received
/// (our choice: 4096, several seconds of video at any bitrate we simulate;
/// older duplicates count as not received).
pub const RECEIVED_WINDOW: u64 = 4096;

/// Counters of a [`NackRequester`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NackStats {
    /// NACK messages built.
    pub nack_messages: u64,
    /// Sequence numbers requested (every entry of every NACK).
    pub requests: u64,
    /// Distinct numbers found missing.
    pub missing: u64,
    /// Missing numbers that arrived as retransmissions.
    pub recovered: u64,
    /// Missing numbers that arrived as first transmissions (reordering).
    pub reordered: u64,
    /// Numbers given up after `max_nacks` requests.
    pub gave_up_retries: u64,
    /// Numbers given up because their frame's deadline passed.
    pub gave_up_deadline: u64,
    /// Numbers dropped because the list was full or they were too old.
    pub overflow: u64,
}

/// The receiver's half of NACK-based retransmission (module doc).
///
/// Inputs: [`on_packet`](Self::on_packet). Outputs: [`poll_nack`](Self::poll_nack),
/// then [`poll_timeout`](Self::poll_timeout).
#[derive(Debug, Clone)]
pub struct NackRequester {
    config: ArqConfig,
    unwrapper: SeqUnwrapper,
    /// Highest media sequence number seen.
    newest: Option<u64>,
    /// Capture instant of the newest packet.
    newest_capture: Instant,
    /// Missing numbers, increasing.
    list: VecDeque<NackEntry>,
    /// Which of the [`RECEIVED_WINDOW`] numbers up to `newest` arrived (bit
    /// `seq % RECEIVED_WINDOW`), to tell a duplicate from a late packet.
    received: [u64; (RECEIVED_WINDOW / 64) as usize],
    /// New numbers were added: request them without waiting for the scan.
    new_missing: bool,
    next_process: Instant,
    rtt: Duration,
    rtt_measured: bool,
    stats: NackStats,
}

impl NackRequester {
    /// A requester starting at `now`.
    pub fn new(now: Instant, config: ArqConfig) -> Self {
        NackRequester {
            rtt: config.default_rtt,
            next_process: now + config.process_interval,
            config,
            unwrapper: SeqUnwrapper::default(),
            newest: None,
            newest_capture: Instant::ZERO,
            list: VecDeque::with_capacity(64),
            received: [0; (RECEIVED_WINDOW / 64) as usize],
            new_missing: false,
            rtt_measured: false,
            stats: NackStats::default(),
        }
    }

    fn bit(seq: u64) -> (usize, u64) {
        let i = seq % RECEIVED_WINDOW;
        ((i / 64) as usize, 1 << (i % 64))
    }

    fn mark_received(&mut self, seq: u64) {
        let (w, b) = Self::bit(seq);
        self.received[w] |= b;
    }

    /// True if `seq` (unwrapped) arrived before, within the remembered window.
    fn was_received(&self, seq: u64) -> bool {
        let Some(newest) = self.newest else {
            return false;
        };
        if seq > newest || newest - seq >= RECEIVED_WINDOW {
            return false;
        }
        let (w, b) = Self::bit(seq);
        self.received[w] & b != 0
    }

    /// A media packet arrived at `now`: `media` is its position in the media
    /// stream, `capture_time` its frame's capture instant. Returns true if
    /// the same media packet had already arrived (a duplicate).
    pub fn on_packet(&mut self, now: Instant, media: MediaSeq, capture_time: Instant) -> bool {
        let seq = self.unwrapper.unwrap(media.seq);
        if self.was_received(seq) {
            return true;
        }
        match self.newest {
            Some(newest) if seq > newest => {
                // The numbers skipped over take the slots of numbers that fall
                // out of the window: clear them (at most the whole window).
                for s in (newest + 1).max(seq.saturating_sub(RECEIVED_WINDOW - 1))..seq {
                    let (w, b) = Self::bit(s);
                    self.received[w] &= !b;
                }
                self.mark_received(seq);
            }
            Some(newest) if newest - seq >= RECEIVED_WINDOW => {}
            _ => self.mark_received(seq),
        }
        self.on_new_packet(now, seq, media, capture_time);
        false
    }

    fn on_new_packet(&mut self, now: Instant, seq: u64, media: MediaSeq, capture_time: Instant) {
        let Some(newest) = self.newest else {
            self.newest = Some(seq);
            self.newest_capture = capture_time;
            return;
        };
        if seq <= newest {
            // Late: a retransmission or a reordered packet fills its hole.
            if let Ok(i) = self.list.binary_search_by_key(&seq, |e| e.seq) {
                let e = self.list.remove(i).unwrap_or_else(|| unreachable!());
                if media.retransmission {
                    self.stats.recovered += 1;
                    if e.retries == 1 {
                        if let Some(t) = e.sent_at {
                            self.rtt_sample(now - t);
                        }
                    }
                } else {
                    self.stats.reordered += 1;
                }
            }
            return;
        }
        if seq - newest > self.config.max_packet_age {
            // A jump beyond any useful history: start over.
            self.stats.overflow += self.list.len() as u64;
            self.list.clear();
        } else {
            let deadline = self.newest_capture + self.config.frame_deadline;
            for missing in newest + 1..seq {
                self.list.push_back(NackEntry {
                    seq: missing,
                    sent_at: None,
                    retries: 0,
                    deadline,
                });
                self.stats.missing += 1;
                self.new_missing = true;
            }
            while self.list.len() > self.config.max_nack_list {
                self.list.pop_front();
                self.stats.overflow += 1;
            }
        }
        self.newest = Some(seq);
        self.newest_capture = capture_time;
        // Numbers too far behind the newest are forgotten.
        while self
            .list
            .front()
            .is_some_and(|e| seq - e.seq > self.config.max_packet_age)
        {
            self.list.pop_front();
            self.stats.overflow += 1;
        }
    }

    fn rtt_sample(&mut self, sample: Duration) {
        if self.rtt_measured {
            // RFC 6298 §2.3: SRTT <- 7/8 SRTT + 1/8 R'.
            self.rtt = (self.rtt * 7 + sample) / 8;
        } else {
            self.rtt = sample;
            self.rtt_measured = true;
        }
    }

    /// The RTT used for retries.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// Numbers on the NACK list.
    pub fn pending(&self) -> usize {
        self.list.len()
    }

    /// Fill `out` with the numbers to request now (cleared first); true if
    /// there are any. Newly missing numbers go at once; the others when the
    /// retry scan is due and an RTT has passed since they were last asked for.
    pub fn poll_nack(&mut self, now: Instant, out: &mut Nack) -> bool {
        let scan = now >= self.next_process;
        if !scan && !self.new_missing {
            return false;
        }
        self.new_missing = false;
        if scan {
            let step = self.config.process_interval.max(Duration::from_micros(1));
            while self.next_process <= now {
                self.next_process += step;
            }
        }
        out.seqs.clear();
        out.report_time = now;
        let (rtt, max) = (self.rtt, self.config.max_nacks);
        let stats = &mut self.stats;
        self.list.retain_mut(|e| {
            if now >= e.deadline {
                stats.gave_up_deadline += 1;
                return false;
            }
            let due = match e.sent_at {
                None => true,
                Some(t) => scan && now >= t + rtt,
            };
            if due {
                out.seqs.push(e.seq as u16);
                e.sent_at = Some(now);
                e.retries += 1;
                stats.requests += 1;
                if e.retries >= max {
                    // The last request is sent; a packet that still does not
                    // come is given up (nack_requester.cc erases it here too).
                    stats.gave_up_retries += 1;
                    return false;
                }
            }
            true
        });
        if out.seqs.is_empty() {
            return false;
        }
        self.stats.nack_messages += 1;
        true
    }

    /// When [`poll_nack`](Self::poll_nack) should next be called: the next
    /// retry scan while numbers are missing.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.list.is_empty() {
            None
        } else {
            Some(self.next_process)
        }
    }

    /// Counters.
    pub fn stats(&self) -> NackStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::frame::FrameType;
    use crate::units::Bytes;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn first(seq: u16) -> MediaSeq {
        MediaSeq {
            seq,
            retransmission: false,
        }
    }

    fn rtx(seq: u16) -> MediaSeq {
        MediaSeq {
            seq,
            retransmission: true,
        }
    }

    fn nacks(r: &mut NackRequester, now: Instant) -> Vec<u16> {
        let mut out = Nack::default();
        if r.poll_nack(now, &mut out) {
            out.seqs
        } else {
            Vec::new()
        }
    }

    fn requester() -> NackRequester {
        NackRequester::new(ms(0), ArqConfig::default())
    }

    #[test]
    fn gap_is_requested_at_once_in_one_batch() {
        let mut r = requester();
        r.on_packet(ms(1), first(10), ms(0));
        r.on_packet(ms(2), first(11), ms(0));
        assert!(nacks(&mut r, ms(2)).is_empty());
        r.on_packet(ms(3), first(15), ms(0));
        assert_eq!(nacks(&mut r, ms(3)), vec![12, 13, 14]);
        // Asked once; not again before an RTT (default 100 ms) has passed.
        assert!(nacks(&mut r, ms(3)).is_empty());
        assert!(nacks(&mut r, ms(60)).is_empty());
        assert_eq!(r.poll_timeout(), Some(ms(80)));
    }

    #[test]
    fn reordered_packet_leaves_the_list() {
        let mut r = requester();
        r.on_packet(ms(1), first(1), ms(0));
        r.on_packet(ms(2), first(3), ms(0));
        assert_eq!(nacks(&mut r, ms(2)), vec![2]);
        r.on_packet(ms(3), first(2), ms(0));
        assert_eq!(r.pending(), 0);
        assert_eq!(r.stats().reordered, 1);
        assert!(nacks(&mut r, ms(500)).is_empty());
        assert_eq!(r.poll_timeout(), None);
    }

    #[test]
    fn gap_across_the_sequence_wrap() {
        let mut r = requester();
        r.on_packet(ms(1), first(65_534), ms(0));
        r.on_packet(ms(2), first(1), ms(0));
        assert_eq!(nacks(&mut r, ms(2)), vec![65_535, 0]);
        // An old packet from before the wrap is not a new gap.
        r.on_packet(ms(3), first(65_535), ms(0));
        assert_eq!(r.pending(), 1);
        r.on_packet(ms(4), rtx(0), ms(0));
        assert_eq!(r.pending(), 0);
        assert_eq!(r.stats().recovered, 1);
    }

    #[test]
    fn retry_after_an_rtt_and_give_up_after_max_nacks() {
        let cfg = ArqConfig {
            max_nacks: 3,
            frame_deadline: Duration::from_secs(10),
            ..ArqConfig::default()
        };
        let mut r = NackRequester::new(ms(0), cfg);
        r.on_packet(ms(1), first(1), ms(0));
        r.on_packet(ms(5), first(3), ms(0));
        let mut sent = Vec::new();
        for t in 5..1000 {
            if !nacks(&mut r, ms(t)).is_empty() {
                sent.push(t);
            }
        }
        // At once, then on the first 20 ms scan at least 100 ms later, twice.
        assert_eq!(sent, vec![5, 120, 220]);
        assert_eq!(r.stats().gave_up_retries, 1);
        assert_eq!(r.stats().requests, 3);
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn measured_rtt_sets_the_retry_interval() {
        let mut r = requester();
        r.on_packet(ms(0), first(1), ms(0));
        r.on_packet(ms(1), first(3), ms(0));
        assert_eq!(nacks(&mut r, ms(1)), vec![2]);
        r.on_packet(ms(41), rtx(2), ms(0));
        assert_eq!(r.rtt(), Duration::from_millis(40));
        r.on_packet(ms(50), first(5), ms(40));
        assert_eq!(nacks(&mut r, ms(50)), vec![4]);
        // Retried on the first scan ≥ 40 ms later (scans at 20 ms steps).
        assert!(nacks(&mut r, ms(80)).is_empty());
        assert_eq!(nacks(&mut r, ms(100)), vec![4]);
    }

    #[test]
    fn gives_up_when_the_frame_deadline_passed() {
        let mut r = requester();
        r.on_packet(ms(100), first(1), ms(90));
        r.on_packet(ms(101), first(3), ms(90));
        assert_eq!(nacks(&mut r, ms(101)), vec![2]);
        // Deadline = 90 + 500 ms; retries would be due every 100 ms.
        assert_eq!(nacks(&mut r, ms(220)), vec![2]);
        assert!(nacks(&mut r, ms(600)).is_empty());
        assert_eq!(r.stats().gave_up_deadline, 1);
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn duplicates_are_told_apart() {
        let mut r = requester();
        assert!(!r.on_packet(ms(0), first(5), ms(0)));
        assert!(!r.on_packet(ms(1), first(7), ms(0)));
        assert!(r.on_packet(ms(2), rtx(7), ms(0)));
        assert!(r.on_packet(ms(2), rtx(5), ms(0)));
        assert!(!r.on_packet(ms(3), rtx(6), ms(0)));
        assert!(r.on_packet(ms(4), rtx(6), ms(0)));
        // A jump of more than the window forgets what was received.
        assert!(!r.on_packet(ms(5), first(7 + RECEIVED_WINDOW as u16), ms(0)));
        assert!(!r.on_packet(ms(6), rtx(7), ms(0)));
        assert!(r.on_packet(ms(7), rtx(7 + RECEIVED_WINDOW as u16), ms(0)));
    }

    #[test]
    fn list_is_bounded() {
        let cfg = ArqConfig {
            max_nack_list: 5,
            ..ArqConfig::default()
        };
        let mut r = NackRequester::new(ms(0), cfg);
        r.on_packet(ms(0), first(0), ms(0));
        r.on_packet(ms(1), first(10), ms(0));
        assert_eq!(nacks(&mut r, ms(1)), vec![5, 6, 7, 8, 9]);
        assert_eq!(r.stats().overflow, 4);
    }

    // -- sender

    fn pkt(frame: u64, capture: Instant) -> MediaPacket {
        MediaPacket {
            frame_id: frame,
            frame_type: FrameType::Delta,
            capture_time: capture,
            index: 0,
            count: 1,
            last_in_frame: true,
            payload: Bytes::new(1000),
            wire_size: Bytes::new(1048),
            layer: 0,
            layer_end: false,
            repair: false,
        }
    }

    fn nack(seqs: &[u16]) -> Nack {
        Nack {
            report_time: Instant::ZERO,
            seqs: seqs.to_vec(),
        }
    }

    fn sender_with(n: u64) -> Arq {
        let mut a = Arq::new(ms(0), ArqConfig::default());
        for s in 0..n {
            a.on_packet_sent(ms(s), s, &pkt(s, ms(s)), PacketKind::Media);
        }
        a
    }

    #[test]
    fn serves_a_nack_once_per_rtt_up_to_max() {
        let mut a = Arq::new(
            ms(0),
            ArqConfig {
                max_retransmissions: 2,
                frame_deadline: Duration::from_secs(10),
                ..ArqConfig::default()
            },
        );
        for s in 0..5 {
            a.on_packet_sent(ms(0), s, &pkt(s, ms(0)), PacketKind::Media);
        }
        a.on_nack(ms(10), &nack(&[2, 3]));
        // A repeated request while queued adds nothing.
        a.on_nack(ms(10), &nack(&[2]));
        let p = a.poll_transmit(ms(10), false).expect("queued");
        assert_eq!((p.media_seq, p.kind), (2, PacketKind::Retransmission));
        a.on_packet_sent(ms(10), 2, &p.packet, p.kind);
        assert_eq!(a.poll_transmit(ms(10), false).map(|p| p.media_seq), Some(3));
        a.on_packet_sent(ms(10), 3, &pkt(3, ms(0)), PacketKind::Retransmission);
        assert_eq!(a.poll_transmit(ms(10), false), None);
        // Within an RTT (100 ms default) of the last resend: refused.
        a.on_nack(ms(50), &nack(&[2]));
        assert_eq!(a.stats().too_soon, 1);
        assert!(!a.has_pending(false));
        a.on_nack(ms(120), &nack(&[2]));
        let p = a.poll_transmit(ms(120), false).expect("second resend");
        a.on_packet_sent(ms(120), 2, &p.packet, p.kind);
        // Two retransmissions done: the third request is refused.
        a.on_nack(ms(300), &nack(&[2]));
        assert_eq!(a.stats().max_retries, 1);
        assert_eq!(a.poll_transmit(ms(300), false), None);
        assert_eq!(a.stats().packets_sent, 3);
    }

    #[test]
    fn does_not_retransmit_what_would_miss_the_deadline() {
        let mut a = sender_with(3);
        // srtt 100 ms: one-way 50 ms; capture of packet 1 at 1 ms, deadline 501 ms.
        a.on_nack(ms(440), &nack(&[1]));
        assert!(a.has_pending(false));
        // Queued behind the pacer until it is too late.
        assert_eq!(a.poll_transmit(ms(460), false), None);
        assert_eq!(a.stats().expired, 1);
        a.on_nack(ms(460), &nack(&[1]));
        assert!(!a.has_pending(false));
        assert_eq!(a.stats().expired, 2);
    }

    #[test]
    fn unknown_and_pruned_numbers_are_counted() {
        let mut a = sender_with(3);
        a.on_nack(ms(5), &nack(&[7]));
        assert_eq!(a.stats().unknown, 1);
        // Once every frame is past its deadline, the history is empty.
        a.on_packet_sent(ms(2000), 3, &pkt(3, ms(2000)), PacketKind::Media);
        assert_eq!(a.history_len(), 1);
        a.on_nack(ms(2001), &nack(&[1]));
        assert_eq!(a.stats().unknown, 2);
    }

    #[test]
    fn sender_maps_wire_numbers_across_the_wrap() {
        let mut a = Arq::new(ms(0), ArqConfig::default());
        for s in 65_530..65_540u64 {
            a.on_packet_sent(ms(0), s, &pkt(s, ms(0)), PacketKind::Media);
        }
        a.on_nack(ms(1), &nack(&[65_535, 2]));
        assert_eq!(
            a.poll_transmit(ms(1), false).map(|p| p.media_seq),
            Some(65_535)
        );
        assert_eq!(
            a.poll_transmit(ms(1), false).map(|p| p.media_seq),
            Some(65_538)
        );
    }

    #[test]
    fn unwrapper_follows_both_directions() {
        let mut u = SeqUnwrapper::default();
        let a = u.unwrap(65_535);
        assert_eq!(u.unwrap(0), a + 1);
        assert_eq!(u.unwrap(65_534), a - 1);
        assert_eq!(u.unwrap(5), a + 6);
    }
}
