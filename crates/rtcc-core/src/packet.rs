//! Packets as the sender records them, and what the receiver reports back.

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Transport-wide sequence number: strictly increasing over every packet a
/// session sends (media, retransmission, padding, FEC), never reused.
pub type SeqNo = u64;

/// What a packet carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PacketKind {
    /// Video payload (first transmission).
    #[default]
    Media,
    /// A retransmission or reinjection of earlier media.
    Retransmission,
    /// Repair data (FEC).
    Fec,
    /// Padding or a probe with no media payload.
    Padding,
}

/// The sender's record of one packet at the moment it left the pacer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SentPacket {
    /// Transport-wide sequence number.
    pub seq: SeqNo,
    /// Size on the wire, headers included.
    pub size: Bytes,
    /// When the packet was handed to the network.
    pub send_time: Instant,
    /// What the packet carries.
    pub kind: PacketKind,
    /// Frame this packet belongs to, if it carries media.
    pub frame_id: Option<u64>,
    /// True for the first packet of its frame.
    pub first_in_frame: bool,
    /// True for the last packet of its frame.
    pub last_in_frame: bool,
    /// Bytes in flight (sent, not yet acknowledged or declared lost) including this packet.
    pub bytes_in_flight: Bytes,
}

/// One packet's fate as told by the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketResult {
    /// The sender's record of the packet.
    pub sent: SentPacket,
    /// Arrival time in the receiver's clock, or `None` if reported lost.
    pub arrival: Option<Instant>,
}

impl PacketResult {
    /// True if the receiver got the packet.
    pub fn received(&self) -> bool {
        self.arrival.is_some()
    }
}

/// A feedback report: for each packet it covers, the sender's record joined
/// with the receiver's arrival time (or loss). The wire carries sequence numbers
/// and arrival times (transport-wide CC feedback or RFC 8888); the sender joins
/// them with its own history to build this.
///
/// `packets` is ordered by sequence number. Arrival times are in the receiver's
/// clock, whose origin is unrelated to the sender's; only differences between
/// them, and against `report_time`, are meaningful.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedbackReport {
    /// Receiver clock when the report was built.
    pub report_time: Instant,
    /// Packets covered, ordered by sequence number.
    pub packets: Vec<PacketResult>,
}

impl FeedbackReport {
    /// Number of packets reported received.
    pub fn received_count(&self) -> usize {
        self.packets.iter().filter(|p| p.received()).count()
    }
    /// Number of packets reported lost.
    pub fn lost_count(&self) -> usize {
        self.packets.len() - self.received_count()
    }
    /// Fraction of the covered packets that were lost (0 if the report is empty).
    pub fn loss_fraction(&self) -> f64 {
        if self.packets.is_empty() {
            0.0
        } else {
            self.lost_count() as f64 / self.packets.len() as f64
        }
    }
    /// Bytes of the packets reported received.
    pub fn received_bytes(&self) -> Bytes {
        self.packets
            .iter()
            .filter(|p| p.received())
            .map(|p| p.sent.size)
            .sum()
    }
    /// Round-trip sample from the newest received packet: time since it was
    /// sent, less the time the receiver held it before reporting.
    pub fn rtt_sample(&self, now: Instant) -> Option<Duration> {
        let last = self.packets.iter().rev().find(|p| p.received())?;
        let arrival = last.arrival?;
        let hold = self.report_time.saturating_duration_since(arrival);
        Some(
            now.saturating_duration_since(last.sent.send_time)
                .saturating_sub(hold),
        )
    }
    /// Received rate over the span of arrivals in this report (first arrival
    /// excluded from the byte count, as in a packet-train estimate).
    pub fn received_rate(&self) -> Option<Bitrate> {
        let mut first: Option<Instant> = None;
        let mut last = Instant::ZERO;
        let mut bytes = Bytes::ZERO;
        for p in self.packets.iter() {
            if let Some(a) = p.arrival {
                match first {
                    None => first = Some(a),
                    Some(f) => {
                        if a < f {
                            continue;
                        }
                        bytes += p.sent.size;
                        last = last.max(a);
                    }
                }
            }
        }
        let span = last.saturating_duration_since(first?);
        if span.is_zero() {
            None
        } else {
            Some(bytes / span)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seq: u64, send_ms: u64, arr_ms: Option<u64>) -> PacketResult {
        PacketResult {
            sent: SentPacket {
                seq,
                size: Bytes::new(1000),
                send_time: Instant::from_millis(send_ms),
                ..Default::default()
            },
            arrival: arr_ms.map(Instant::from_millis),
        }
    }

    #[test]
    fn counts_and_rates() {
        let r = FeedbackReport {
            report_time: Instant::from_millis(130),
            packets: vec![
                pkt(1, 0, Some(100)),
                pkt(2, 1, None),
                pkt(3, 2, Some(108)),
                pkt(4, 3, Some(116)),
            ],
        };
        assert_eq!(r.received_count(), 3);
        assert_eq!(r.lost_count(), 1);
        assert!((r.loss_fraction() - 0.25).abs() < 1e-12);
        // 2000 bytes over 16 ms = 1 Mbps.
        assert_eq!(r.received_rate(), Some(Bitrate::mbps(1)));
        // newest received was sent at 3 ms, held 14 ms at the receiver; now = 150 ms.
        assert_eq!(
            r.rtt_sample(Instant::from_millis(150)),
            Some(Duration::from_millis(133))
        );
    }
}
