//! The TFRC receiver's reception record, kept at the sender from rtcc's
//! per-packet feedback (RFC 5348 §5.1, §5.2, §6.2 step 3).
//!
//! An rtcc [`FeedbackReport`](crate::packet::FeedbackReport) tells the
//! sender each packet's arrival time at the receiver, so the sender can keep
//! the record the RFC's receiver keeps and run its computations:
//!
//! - §5.1: "The loss of a packet is detected by the arrival of at least
//!   NDUPACK packets with a higher sequence number than the lost packet, for
//!   NDUPACK = 3." A report's own "lost" verdict (the simulator's receiver
//!   calls every hole lost) is not used: a hole becomes a loss only once
//!   NDUPACK later packets are reported received
//!   ([`Reception::detect_losses`]). A packet that arrives after it was
//!   declared lost fills its hole ([`Reception::on_arrival`] says so).
//! - §5.2: the nominal arrival time of a lost packet is interpolated from
//!   the arrivals of its neighbours `S_before` and `S_after`:
//!   `T_loss = T_before + (T_after − T_before)·(S_loss − S_before)/(S_after − S_before)`.
//! - §6.2 step 3: `X_recv` is "based on the packets received within the past
//!   R_m seconds" before the feedback: the bytes of the packets that arrived
//!   in `(report_time − R, report_time]`, over `R`
//!   ([`Reception::receive_rate`]).
//!
//! The record also remembers, per packet, whether the sender was limited by
//! its allowed rate when it sent it (not data-limited), for the data-limited
//! intervals of §4.3 / §8.2.1.

use std::collections::VecDeque;

use super::loss_history::{Loss, SendCount};
use crate::packet::{SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// RFC 5348 §5.1: "NDUPACK = 3" ("the same as with TCP").
pub const NDUPACK: u32 = 3;

/// Largest sequence-number gap filled with placeholders; a larger jump
/// restarts the record (rtcc bound on memory, as the feedback builder's).
const MAX_GAP: u64 = 1 << 16;
/// Largest number of packets remembered; the oldest go first beyond it.
const MAX_RECORDS: usize = 1 << 17;

/// What the receiver told of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// A sequence number the sender skipped (never sent).
    Unsent,
    /// Sent; not (yet) received, not declared lost.
    Pending,
    /// Arrived at this receiver-clock instant.
    Received(Instant),
    /// Declared lost (§5.1).
    Lost,
}

#[derive(Debug, Clone, Copy)]
struct Record {
    send_time: Instant,
    fate: Fate,
    /// What was sent before this packet.
    sent_before: SendCount,
    /// Packets sent while rate-limited, up to and including this one.
    rate_limited_through: u64,
    /// This packet was sent while rate-limited.
    rate_limited: bool,
}

/// A received packet, for the receive rate.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    at: Instant,
    seq: SeqNo,
    size: Bytes,
    rate_limited: bool,
    rate_limited_through: u64,
}

/// A packet newly reported received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewArrival {
    /// When the sender sent it.
    pub send_time: Instant,
    /// It had been declared lost (a late arrival, §5.1).
    pub was_lost: bool,
}

/// The receive rate of one report (§6.2 step 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiveRate {
    /// `X_recv`.
    pub x_recv: Bitrate,
    /// Whether a packet sent between the first and the last one counted was
    /// sent rate-limited; `None` if no packet arrived in the window.
    pub any_rate_limited: Option<bool>,
}

/// The reception record (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Reception {
    /// Sequence number of `records[0]`.
    base: SeqNo,
    records: VecDeque<Record>,
    /// Lowest sequence number not yet received or declared lost.
    undecided: SeqNo,
    /// Highest sequence number received.
    highest_received: Option<SeqNo>,
    /// Highest received packet below `undecided`, with its arrival.
    floor: Option<(SeqNo, Instant)>,
    /// Received packets by arrival time.
    arrivals: VecDeque<Arrival>,
    /// Everything sent so far.
    sent: SendCount,
    /// Packets sent while rate-limited so far.
    rate_limited_count: u64,
    /// The first sequence number sent.
    first_seq: Option<SeqNo>,
    /// Scratch for [`Self::detect_losses`]: (lost seq, its S_after, T_after).
    scratch: Vec<(SeqNo, SeqNo, Instant)>,
}

impl Reception {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything sent so far.
    pub fn sent(&self) -> SendCount {
        self.sent
    }

    /// The first sequence number sent.
    pub fn first_seq(&self) -> Option<SeqNo> {
        self.first_seq
    }

    /// The highest sequence number received.
    pub fn highest_received(&self) -> Option<SeqNo> {
        self.highest_received
    }

    fn index(&self, seq: SeqNo) -> Option<usize> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        (i < self.records.len()).then_some(i)
    }

    /// The sender sent `pkt`; `rate_limited` if it was held back by the
    /// allowed rate (not data-limited). Sequence numbers must increase; a
    /// number at or below one already recorded is ignored.
    pub fn on_sent(&mut self, pkt: &SentPacket, rate_limited: bool) {
        let next = self.base + self.records.len() as u64;
        let started = self.first_seq.is_some();
        if started && pkt.seq < next {
            return;
        }
        if !started || pkt.seq - next > MAX_GAP {
            // The first packet, or a jump too far to fill: start over here.
            self.records.clear();
            self.base = pkt.seq;
            self.undecided = pkt.seq;
            self.floor = None;
        }
        let placeholder = Record {
            send_time: pkt.send_time,
            fate: Fate::Unsent,
            sent_before: self.sent,
            rate_limited_through: self.rate_limited_count,
            rate_limited: false,
        };
        while self.base + (self.records.len() as u64) < pkt.seq {
            self.records.push_back(placeholder);
        }
        self.first_seq.get_or_insert(pkt.seq);
        let sent_before = self.sent;
        self.sent.packets += 1;
        self.sent.bytes += pkt.size;
        self.rate_limited_count += u64::from(rate_limited);
        self.records.push_back(Record {
            send_time: pkt.send_time,
            fate: Fate::Pending,
            sent_before,
            rate_limited_through: self.rate_limited_count,
            rate_limited,
        });
        while self.records.len() > MAX_RECORDS {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        if self.records.pop_front().is_some() {
            self.base += 1;
            if self.undecided < self.base {
                self.undecided = self.base;
            }
        }
    }

    /// Packet `seq` of `size` bytes was reported received at `at`
    /// (receiver clock). `None` if it was already known received, or is not
    /// (or no longer) in the record.
    pub fn on_arrival(&mut self, seq: SeqNo, size: Bytes, at: Instant) -> Option<NewArrival> {
        let i = self.index(seq)?;
        let r = &mut self.records[i];
        let was_lost = match r.fate {
            Fate::Pending => false,
            Fate::Lost => true,
            Fate::Received(_) | Fate::Unsent => return None,
        };
        r.fate = Fate::Received(at);
        let arrival = Arrival {
            at,
            seq,
            size,
            rate_limited: r.rate_limited,
            rate_limited_through: r.rate_limited_through,
        };
        let send_time = r.send_time;
        self.highest_received = Some(self.highest_received.map_or(seq, |h| h.max(seq)));
        if seq < self.undecided && self.floor.is_none_or(|(f, _)| f < seq) {
            self.floor = Some((seq, at));
        }
        let pos = self.arrivals.partition_point(|a| a.at <= at);
        self.arrivals.insert(pos, arrival);
        Some(NewArrival {
            send_time,
            was_lost,
        })
    }

    /// RFC 5348 §5.1–§5.2: declares lost every pending packet with at least
    /// `ndupack` received packets above it, and appends them to `out` in
    /// increasing sequence order with their interpolated nominal arrival
    /// times.
    pub fn detect_losses(&mut self, ndupack: u32, out: &mut Vec<Loss>) {
        let Some(hi) = self.highest_received else {
            return;
        };
        let (Some(lo_i), Some(hi_i)) = (self.index(self.undecided), self.index(hi)) else {
            return;
        };
        if hi_i < lo_i {
            return;
        }
        // Downward: count received packets above each pending one.
        self.scratch.clear();
        let mut above = 0u32;
        let mut nearest_above: Option<(SeqNo, Instant)> = None;
        for i in (lo_i..=hi_i).rev() {
            let seq = self.base + i as u64;
            match self.records[i].fate {
                Fate::Received(at) => {
                    above = above.saturating_add(1);
                    nearest_above = Some((seq, at));
                }
                Fate::Pending if above >= ndupack => {
                    if let Some((s_after, t_after)) = nearest_above {
                        self.records[i].fate = Fate::Lost;
                        self.scratch.push((seq, s_after, t_after));
                    }
                }
                _ => {}
            }
        }
        // Upward: S_before of each loss, then T_loss (§5.2).
        let mut below = self.floor;
        let mut i = lo_i;
        for &(seq, s_after, t_after) in self.scratch.iter().rev() {
            while self.base + (i as u64) < seq {
                if let Fate::Received(at) = self.records[i].fate {
                    below = Some((self.base + i as u64, at));
                }
                i += 1;
            }
            let rec = self.records[i];
            let t_loss = match below {
                Some((s_before, t_before)) => {
                    interpolate(s_before, t_before, s_after, t_after, seq)
                }
                None => {
                    // No earlier arrival to interpolate from (the first
                    // packets were lost): extrapolate back from S_after by
                    // the sender's spacing.
                    let after_sent = self
                        .index(s_after)
                        .map_or(rec.send_time, |j| self.records[j].send_time);
                    t_after.saturating_sub(after_sent.saturating_duration_since(rec.send_time))
                }
            };
            out.push(Loss {
                seq,
                t_loss,
                sent_before: rec.sent_before,
            });
        }
        // Every packet from `undecided` up to the first pending one is decided.
        while let Some(i) = self.index(self.undecided) {
            match self.records[i].fate {
                Fate::Pending => break,
                Fate::Received(at) => self.floor = Some((self.undecided, at)),
                Fate::Lost | Fate::Unsent => {}
            }
            self.undecided += 1;
        }
    }

    /// RFC 5348 §6.2 step 3: the receive rate over the `r` before
    /// `report_time` (receiver clock), and whether the sender was
    /// rate-limited while sending the packets it counts. Arrivals older than
    /// `max(2·r, 1 s)` before `report_time` are forgotten.
    pub fn receive_rate(&mut self, report_time: Instant, r: Duration) -> ReceiveRate {
        let keep = r.mul_f64(2.0).max(Duration::from_secs(1));
        while self
            .arrivals
            .front()
            .is_some_and(|a| a.at + keep < report_time)
        {
            self.arrivals.pop_front();
        }
        let start = report_time.saturating_sub(r);
        let mut bytes = Bytes::ZERO;
        let mut first: Option<&Arrival> = None;
        let mut last: Option<&Arrival> = None;
        for a in self
            .arrivals
            .iter()
            .filter(|a| a.at > start && a.at <= report_time)
        {
            bytes += a.size;
            if first.is_none_or(|f| a.seq < f.seq) {
                first = Some(a);
            }
            if last.is_none_or(|l| a.seq > l.seq) {
                last = Some(a);
            }
        }
        let any_rate_limited = match (first, last) {
            (Some(f), Some(l)) => {
                let before_first = f.rate_limited_through - u64::from(f.rate_limited);
                Some(l.rate_limited_through > before_first)
            }
            _ => None,
        };
        ReceiveRate {
            x_recv: if r.is_zero() {
                Bitrate::ZERO
            } else {
                bytes / r
            },
            any_rate_limited,
        }
    }

    /// Forgets decided packets sent more than `keep` before `now` (a late
    /// arrival of one of them is then ignored).
    pub fn prune(&mut self, now: Instant, keep: Duration) {
        while let Some(front) = self.records.front() {
            let decided = self.base < self.undecided;
            if !decided || front.send_time + keep >= now {
                break;
            }
            self.pop_front();
        }
    }

    /// Packets in the record (for tests and bounds).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True if nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// RFC 5348 §5.2: `T_loss = T_before + (T_after − T_before)·(S_loss −
/// S_before)/(S_after − S_before)`. `T_before` may be later than `T_after`
/// (reordering); the result is then before `T_before`.
fn interpolate(
    s_before: SeqNo,
    t_before: Instant,
    s_after: SeqNo,
    t_after: Instant,
    s_loss: SeqNo,
) -> Instant {
    let span = s_after.saturating_sub(s_before);
    if span == 0 {
        return t_after;
    }
    let dt = i128::from(t_after.signed_nanos_since(t_before));
    let k = i128::from(s_loss.saturating_sub(s_before));
    let offset = dt * k / i128::from(span);
    let t = i128::from(t_before.as_nanos()) + offset;
    Instant::from_nanos(u64::try_from(t.max(0)).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(seq: SeqNo, ms: u64) -> SentPacket {
        SentPacket {
            seq,
            size: Bytes::new(1000),
            send_time: Instant::from_millis(ms),
            ..SentPacket::default()
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(5000 + ms)
    }

    /// Sends 0..n, one per 10 ms.
    fn record(n: u64) -> Reception {
        let mut r = Reception::new();
        for s in 0..n {
            r.on_sent(&sent(s, 10 * s), true);
        }
        r
    }

    fn receive(r: &mut Reception, seqs: &[SeqNo]) {
        for &s in seqs {
            r.on_arrival(s, Bytes::new(1000), at(10 * s + 50));
        }
    }

    #[test]
    fn a_hole_is_a_loss_only_after_three_later_arrivals() {
        let mut r = record(10);
        let mut out = Vec::new();
        receive(&mut r, &[0, 1, 3, 4]);
        r.detect_losses(NDUPACK, &mut out);
        assert!(out.is_empty(), "2 has only two later arrivals: {out:?}");
        // Reordering within NDUPACK: 2 arrives late, no loss at all.
        receive(&mut r, &[2]);
        receive(&mut r, &[6, 7]);
        r.detect_losses(NDUPACK, &mut out);
        assert!(out.is_empty(), "5 has two later arrivals: {out:?}");
        receive(&mut r, &[8]);
        r.detect_losses(NDUPACK, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 5);
        // §5.2 interpolation between 4 (at 5090) and 6 (at 5110).
        assert_eq!(out[0].t_loss, at(100));
        assert_eq!(out[0].sent_before.packets, 5);
        // Declared once.
        r.detect_losses(NDUPACK, &mut out);
        assert_eq!(out.len(), 1);
        // A late arrival of a declared loss says so.
        let late = r.on_arrival(5, Bytes::new(1000), at(300)).unwrap();
        assert!(late.was_lost);
        assert!(r.on_arrival(5, Bytes::new(1000), at(300)).is_none());
    }

    #[test]
    fn a_run_of_losses_is_interpolated_across() {
        let mut r = record(12);
        let mut out = Vec::new();
        // 2..=5 lost; 1 arrived at 5060, 6 at 5200 (queueing grew).
        r.on_arrival(0, Bytes::new(1000), at(50));
        r.on_arrival(1, Bytes::new(1000), at(60));
        r.on_arrival(6, Bytes::new(1000), at(200));
        r.on_arrival(7, Bytes::new(1000), at(210));
        r.on_arrival(8, Bytes::new(1000), at(220));
        r.detect_losses(NDUPACK, &mut out);
        let seqs: Vec<SeqNo> = out.iter().map(|l| l.seq).collect();
        assert_eq!(seqs, [2, 3, 4, 5]);
        // T_loss = 60 + (200 − 60)·(S − 1)/5.
        let t: Vec<Instant> = out.iter().map(|l| l.t_loss).collect();
        assert_eq!(t, [at(88), at(116), at(144), at(172)]);
    }

    #[test]
    fn first_packets_lost_extrapolate_from_the_sender_spacing() {
        let mut r = record(6);
        let mut out = Vec::new();
        receive(&mut r, &[2, 3, 4]);
        r.detect_losses(NDUPACK, &mut out);
        // 0 and 1 lost; 2 arrived at 5070 and was sent 20 / 10 ms after them.
        let t: Vec<(SeqNo, Instant)> = out.iter().map(|l| (l.seq, l.t_loss)).collect();
        assert_eq!(t, [(0, at(50)), (1, at(60))]);
    }

    #[test]
    fn receive_rate_counts_the_last_rtt_and_the_rate_limited_packets() {
        let mut r = Reception::new();
        // 0..10 sent data-limited, 10..20 rate-limited, 10 ms apart.
        for s in 0..20 {
            r.on_sent(&sent(s, 10 * s), s >= 10);
        }
        receive(&mut r, &(0..20).collect::<Vec<_>>());
        // Window (5100, 5200]: arrivals of 6..=15 → 10 000 B over 100 ms.
        let rr = r.receive_rate(at(200), Duration::from_millis(100));
        assert_eq!(rr.x_recv, Bitrate::kbps(800));
        assert_eq!(rr.any_rate_limited, Some(true));
        // Window (5050, 5100]: 1..=5 → data-limited throughout.
        let mut r2 = r.clone();
        let rr = r2.receive_rate(at(100), Duration::from_millis(50));
        assert_eq!(rr.x_recv, Bitrate::kbps(800));
        assert_eq!(rr.any_rate_limited, Some(false));
        // Nothing in the window.
        let rr = r2.receive_rate(at(10_000), Duration::from_millis(50));
        assert_eq!(rr.x_recv, Bitrate::ZERO);
        assert_eq!(rr.any_rate_limited, None);
    }

    #[test]
    fn gaps_and_duplicates_in_sending_are_tolerated() {
        let mut r = Reception::new();
        r.on_sent(&sent(10, 0), true);
        r.on_sent(&sent(10, 1), true); // duplicate: ignored
        r.on_sent(&sent(13, 2), true); // 11, 12 never sent
        assert_eq!(r.len(), 4);
        assert_eq!(r.sent().packets, 2);
        // Unsent numbers are neither received nor lost.
        assert!(r.on_arrival(11, Bytes::new(1), at(0)).is_none());
        r.on_sent(&sent(14, 3), true);
        r.on_sent(&sent(15, 4), true);
        r.on_sent(&sent(16, 5), true);
        receive(&mut r, &[13, 14, 15, 16]);
        let mut out = Vec::new();
        r.detect_losses(NDUPACK, &mut out);
        let seqs: Vec<SeqNo> = out.iter().map(|l| l.seq).collect();
        assert_eq!(seqs, [10]);
        r.prune(Instant::from_secs(100), Duration::from_secs(1));
        assert!(r.is_empty());
    }
}
