//! A packet train's outcome: its received rate and its one-way delays.
//!
//! `papers/svc-topdown-probing.txt` §3.1: a train of M packets is sent at a
//! probing rate R_in; the receiver observes the dispersion d_out of the
//! train and its received rate R_out = S/d_out, and the one-way delays whose
//! trend (eq. 11, [`crate::estimate::trend`]) tells whether R_in exceeded
//! the available bandwidth.
//!
//! rtcc's transport-wide feedback reports every packet's arrival time in the
//! receiver's clock, so the sender computes both (svc-probing.md I2):
//! R_out = Σ_{i=2..n} s_i / (a_n − a_1) over the received packets (the first
//! packet's bytes start the dispersion and are not counted, as in every
//! dispersion estimate), and D_k = a_k − send_k (the clock offset cancels in
//! the trend test). Call protocol: [`PacketTrain::on_sent`] for each packet
//! of the train in send order, then [`PacketTrain::on_feedback`] with every
//! report; [`PacketTrain::result`] once [`PacketTrain::complete`].

use crate::packet::{FeedbackReport, SentPacket, SeqNo};
use crate::time::Instant;
use crate::units::{Bitrate, Bytes};

use super::trend::full_search;

/// One packet of a train.
#[derive(Debug, Clone, Copy)]
struct TrainPacket {
    seq: SeqNo,
    size: Bytes,
    send_time: Instant,
    /// `None` = not reported yet; `Some(None)` = reported lost.
    arrival: Option<Option<Instant>>,
}

/// What a finished train measured.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainResult {
    /// The rate the train was paced at.
    pub r_in: Bitrate,
    /// Σ_{i=2..n} s_i / (a_n − a_1) over the received packets; `None` with
    /// fewer than two received packets or no dispersion.
    pub r_out: Option<Bitrate>,
    /// Eq. 11 over the received packets' one-way delays, in send order.
    pub fs: Option<f64>,
    /// Packets sent.
    pub sent: usize,
    /// Packets reported lost.
    pub lost: usize,
}

/// Trains this long or shorter compute their result without allocating.
const STACK_DELAYS: usize = 64;

/// A train being sent and reported.
#[derive(Debug, Clone)]
pub struct PacketTrain {
    r_in: Bitrate,
    length: usize,
    packets: Vec<TrainPacket>,
}

impl PacketTrain {
    /// A train of `length` packets paced at `r_in`.
    pub fn new(r_in: Bitrate, length: usize) -> Self {
        PacketTrain {
            r_in,
            length,
            packets: Vec::with_capacity(length),
        }
    }

    /// Starts over as a new train of `length` packets at `r_in`, keeping
    /// the packet list's capacity (no allocation for a train no longer than
    /// an earlier one).
    pub fn restart(&mut self, r_in: Bitrate, length: usize) {
        self.r_in = r_in;
        self.length = length;
        self.packets.clear();
    }

    /// The probing rate.
    pub fn r_in(&self) -> Bitrate {
        self.r_in
    }

    /// Packets of the train sent so far.
    pub fn sent_count(&self) -> usize {
        self.packets.len()
    }

    /// All `length` packets have been sent.
    pub fn fully_sent(&self) -> bool {
        self.packets.len() >= self.length
    }

    /// Records a packet of the train; ignored once the train is fully sent.
    pub fn on_sent(&mut self, pkt: &SentPacket) {
        if !self.fully_sent() {
            self.packets.push(TrainPacket {
                seq: pkt.seq,
                size: pkt.size,
                send_time: pkt.send_time,
                arrival: None,
            });
        }
    }

    /// Whether `seq` is one of the train's packets.
    pub fn contains(&self, seq: SeqNo) -> bool {
        self.packets.iter().any(|p| p.seq == seq)
    }

    /// Takes the fates of the train's packets from `report`. A packet
    /// reported lost and later reported received (reordering) counts as
    /// received.
    pub fn on_feedback(&mut self, report: &FeedbackReport) {
        for r in &report.packets {
            if let Some(p) = self.packets.iter_mut().find(|p| p.seq == r.sent.seq) {
                match (p.arrival, r.arrival) {
                    (_, Some(a)) => p.arrival = Some(Some(a)),
                    (None, None) => p.arrival = Some(None),
                    (Some(_), None) => {}
                }
            }
        }
    }

    /// Counts every packet sent and not reported as lost (a train judged
    /// after its timeout).
    pub fn expire(&mut self) {
        for p in &mut self.packets {
            if p.arrival.is_none() {
                p.arrival = Some(None);
            }
        }
    }

    /// Every packet was sent and reported.
    pub fn complete(&self) -> bool {
        self.fully_sent() && self.packets.iter().all(|p| p.arrival.is_some())
    }

    /// Send time of the first packet, if any was sent.
    pub fn started(&self) -> Option<Instant> {
        self.packets.first().map(|p| p.send_time)
    }

    /// The train's measurements so far (final once [`Self::complete`]).
    pub fn result(&self) -> TrainResult {
        // Eq. 11's one-way delays: on the stack for trains of up to
        // `STACK_DELAYS` packets (30 by default, §3.1), in a vector beyond.
        let mut on_stack = [0i64; STACK_DELAYS];
        let mut on_heap = Vec::new();
        let mut n = 0;
        let mut push = |d: i64| {
            if n < STACK_DELAYS {
                on_stack[n] = d;
            } else {
                if on_heap.is_empty() {
                    on_heap.extend_from_slice(&on_stack);
                }
                on_heap.push(d);
            }
            n += 1;
        };
        let mut first: Option<Instant> = None;
        let mut last = Instant::ZERO;
        let mut bytes = Bytes::ZERO;
        let mut lost = 0;
        for p in &self.packets {
            match p.arrival {
                Some(Some(a)) => {
                    // One-way delay in ns, "receiver clock − sender clock",
                    // signed: the offset is the same for every packet and
                    // may make it negative (I2).
                    push(nanos(a) - nanos(p.send_time));
                    match first {
                        None => first = Some(a),
                        Some(_) => bytes += p.size,
                    }
                    last = last.max(a);
                }
                Some(None) => lost += 1,
                None => {}
            }
        }
        let delays: &[i64] = if n <= STACK_DELAYS {
            &on_stack[..n]
        } else {
            &on_heap
        };
        let r_out = first.and_then(|f| {
            let span = last.saturating_duration_since(f);
            (delays.len() >= 2 && !span.is_zero()).then(|| bytes / span)
        });
        TrainResult {
            r_in: self.r_in,
            r_out,
            fs: full_search(delays),
            sent: self.packets.len(),
            lost,
        }
    }
}

/// An instant as signed nanoseconds (saturating far beyond any run).
fn nanos(t: Instant) -> i64 {
    i64::try_from(t.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{PacketKind, PacketResult};

    fn sent(seq: u64, at_us: u64) -> SentPacket {
        SentPacket {
            seq,
            size: Bytes::new(1000),
            send_time: Instant::from_micros(at_us),
            kind: PacketKind::Media,
            frame_id: None,
            first_in_frame: false,
            last_in_frame: false,
            bytes_in_flight: Bytes::ZERO,
        }
    }

    /// A 5-packet train sent 1 ms apart (8 Mbps at 1000 B) through a 2 Mbps
    /// bottleneck: arrivals 4 ms apart, delays growing by 3 ms per packet.
    fn train_through_bottleneck(lose: Option<u64>) -> PacketTrain {
        let mut t = PacketTrain::new(Bitrate::mbps(8), 5);
        let mut results = Vec::new();
        for k in 0..5u64 {
            let p = sent(k, k * 1000);
            t.on_sent(&p);
            let arrival = Some(Instant::from_micros(50_000 + k * 4000));
            results.push(PacketResult {
                sent: p,
                arrival: if lose == Some(k) { None } else { arrival },
            });
        }
        t.on_feedback(&FeedbackReport {
            report_time: Instant::from_millis(80),
            packets: results,
        });
        t
    }

    #[test]
    fn received_rate_is_bytes_after_the_first_over_the_dispersion() {
        let t = train_through_bottleneck(None);
        assert!(t.complete());
        let r = t.result();
        // 4 × 1000 B over 16 ms = 2 Mbps; counting the first packet would
        // give 2.5 Mbps.
        assert_eq!(r.r_out, Some(Bitrate::mbps(2)));
        assert_eq!(r.fs, Some(1.0));
        assert_eq!((r.sent, r.lost), (5, 0));
    }

    #[test]
    fn a_lost_packet_is_left_out_of_rate_and_trend() {
        // The last packet lost: 3 × 1000 B over 12 ms, still 2 Mbps.
        let r = train_through_bottleneck(Some(4)).result();
        assert_eq!(r.r_out, Some(Bitrate::mbps(2)));
        assert_eq!(r.lost, 1);
        // The first packet lost: the second becomes the reference.
        let r = train_through_bottleneck(Some(0)).result();
        assert_eq!(r.r_out, Some(Bitrate::mbps(2)));
        assert_eq!(r.fs, Some(1.0));
    }

    #[test]
    fn a_train_is_complete_only_when_every_packet_is_reported() {
        let mut t = PacketTrain::new(Bitrate::mbps(1), 3);
        t.on_sent(&sent(7, 0));
        t.on_sent(&sent(8, 8000));
        assert!(!t.fully_sent());
        t.on_sent(&sent(9, 16_000));
        t.on_sent(&sent(10, 24_000)); // beyond the train: ignored
        assert!(t.fully_sent() && !t.contains(10));
        t.on_feedback(&FeedbackReport {
            report_time: Instant::from_millis(50),
            packets: vec![
                PacketResult {
                    sent: sent(7, 0),
                    arrival: Some(Instant::from_millis(30)),
                },
                PacketResult {
                    sent: sent(8, 8000),
                    arrival: None,
                },
            ],
        });
        assert!(!t.complete());
        // The lost packet shows up late (reordered): received after all.
        t.on_feedback(&FeedbackReport {
            report_time: Instant::from_millis(100),
            packets: vec![
                PacketResult {
                    sent: sent(8, 8000),
                    arrival: Some(Instant::from_millis(45)),
                },
                PacketResult {
                    sent: sent(9, 16_000),
                    arrival: Some(Instant::from_millis(47)),
                },
            ],
        });
        assert!(t.complete());
        assert_eq!(t.result().lost, 0);
    }
}
