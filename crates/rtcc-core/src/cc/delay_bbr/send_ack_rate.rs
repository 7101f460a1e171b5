//! Delay-BBR's bandwidth sample (Zhang et al., Delay-BBR multipath paper,
//! §4.1, eq. 13):
//!
//! ```text
//! bw = min(Δsent / Δsent_ts, Δacked / Δack_ts)
//! ```
//!
//! Both rates are measured between the packet being acknowledged, P, and the
//! packet that was the most recently acknowledged one when P was sent, S:
//! `Δsent` is every byte sent from just after S up to and including P (lost
//! packets too) over `P.send_time − S.send_time`; `Δacked` is every byte
//! acknowledged after S up to and including P over `P.ack_time − S.ack_time`.
//! This is the send-rate/ack-rate pair of the QUIC BBR bandwidth sampler the
//! paper's code builds on; BBR's draft-cheng estimator uses the delivered
//! bytes for both numerators instead (see `docs/algorithms/delay-bbr.md`, I3).

use std::collections::VecDeque;

use crate::packet::{FeedbackReport, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// The sender-side state of the last acknowledged packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AckPoint {
    send_time: Instant,
    ack_time: Instant,
    /// Total bytes sent up to and including that packet.
    total_sent: Bytes,
    /// Total bytes acknowledged once it was.
    total_acked: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    seq: SeqNo,
    size: Bytes,
    send_time: Instant,
    total_sent: Bytes,
    /// The last acknowledged packet when this one was sent.
    last_acked: Option<AckPoint>,
}

/// Eq. 13 sampler: `min(send rate, ack rate)` per acknowledged packet.
#[derive(Debug, Clone, Default)]
pub struct SendAckRateSampler {
    packets: VecDeque<Record>,
    total_sent: Bytes,
    total_acked: Bytes,
    last_acked: Option<AckPoint>,
}

impl SendAckRateSampler {
    /// A sampler with nothing sent.
    pub fn new() -> Self {
        Self::default()
    }

    /// A packet (media or padding) was sent.
    pub fn on_packet_sent(&mut self, pkt: &SentPacket) {
        self.total_sent += pkt.size;
        self.packets.push_back(Record {
            seq: pkt.seq,
            size: pkt.size,
            send_time: pkt.send_time,
            total_sent: self.total_sent,
            last_acked: self.last_acked,
        });
    }

    /// Process a report at sender time `now`; returns the eq. 13 sample of
    /// the newest acknowledged packet that yields one.
    ///
    /// A packet's ACK time is `now − (report_time − arrival)`, as in
    /// [`super::super::bbr::delivery_rate`].
    pub fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) -> Option<Bitrate> {
        // Packets older than the report's first were forgotten by the sender.
        if let Some(first) = report.packets.first() {
            while self.packets.front().is_some_and(|p| p.seq < first.sent.seq) {
                self.packets.pop_front();
            }
        }
        let mut sample = None;
        for r in &report.packets {
            let Ok(i) = self.packets.binary_search_by_key(&r.sent.seq, |p| p.seq) else {
                continue;
            };
            let Some(p) = self.packets.remove(i) else {
                continue;
            };
            let Some(arrival) = r.arrival else {
                continue; // lost: counted in Δsent of later samples only
            };
            let hold = report.report_time.saturating_duration_since(arrival);
            let floor = self.last_acked.map_or(Instant::ZERO, |a| a.ack_time);
            let ack_time = now.saturating_sub(hold).max(floor).min(now);
            self.total_acked += p.size;
            if let Some(s) = p.last_acked {
                if let Some(bw) = Self::rate(&p, &s, ack_time, self.total_acked) {
                    sample = Some(bw);
                }
            }
            self.last_acked = Some(AckPoint {
                send_time: p.send_time,
                ack_time,
                total_sent: p.total_sent,
                total_acked: self.total_acked,
            });
        }
        sample
    }

    /// Eq. 13 for packet `p` against its reference point `s`.
    fn rate(p: &Record, s: &AckPoint, ack_time: Instant, total_acked: Bytes) -> Option<Bitrate> {
        let ack_dt = ack_time.saturating_duration_since(s.ack_time);
        if ack_dt.is_zero() {
            return None; // no ack interval: no rate
        }
        let ack_rate = total_acked.saturating_sub(s.total_acked) / ack_dt;
        let send_dt: Duration = p.send_time.saturating_duration_since(s.send_time);
        // Both byte counts include P itself, so both rates are positive; over
        // a long enough interval (a 1200 B packet over 9 600 s) they round to
        // 0 bit/s, which would empty the BtlBw filter: keep the smallest
        // positive rate instead.
        let positive = |r: Bitrate| r.max(Bitrate::bps(1));
        if send_dt.is_zero() {
            // Sent back to back: the send rate is unbounded, the ack rate rules.
            return Some(positive(ack_rate));
        }
        let send_rate = p.total_sent.saturating_sub(s.total_sent) / send_dt;
        Some(positive(send_rate.min(ack_rate)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{PacketKind, PacketResult};

    fn packet(seq: SeqNo, send_time: Instant) -> SentPacket {
        SentPacket {
            seq,
            size: Bytes::new(100),
            send_time,
            kind: PacketKind::Media,
            frame_id: None,
            first_in_frame: false,
            last_in_frame: false,
            bytes_in_flight: Bytes::new(100),
        }
    }

    fn ack(sampler: &mut SendAckRateSampler, now: Instant, sent: SentPacket) -> Option<Bitrate> {
        let report = FeedbackReport {
            report_time: now,
            packets: vec![PacketResult {
                sent,
                arrival: Some(now),
            }],
        };
        sampler.on_feedback(now, &report)
    }

    #[test]
    fn a_sample_over_a_very_long_interval_is_still_positive() {
        // Found by the `controller` fuzz target (delay-bbr reported a zero
        // bandwidth estimate): 100 B acknowledged 2 000 s after the previous
        // acknowledgement is an ack rate of 0.4 bit/s, which the integer
        // rate rounded to zero.
        let mut sampler = SendAckRateSampler::new();
        let a = packet(0, Instant::ZERO);
        sampler.on_packet_sent(&a);
        assert_eq!(ack(&mut sampler, Instant::from_millis(1), a), None);
        let b = packet(1, Instant::from_secs(1));
        sampler.on_packet_sent(&b);
        let bw = ack(&mut sampler, Instant::from_secs(2_000), b);
        assert_eq!(bw, Some(Bitrate::bps(1)));
    }
}
