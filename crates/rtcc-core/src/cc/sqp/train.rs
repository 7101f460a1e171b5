//! Frame trains: the packets of one video frame, joined from feedback reports,
//! give one bandwidth sample from their receive dispersion and one one-way
//! delay sample from their head.
//!
//! SQP (Ray et al., arXiv 2207.11857, abstract: "frame-coupled, paced packet
//! trains to sample the network bandwidth") and Pudica (Wang et al., NSDI '24,
//! abstract: "paced frame to probe the bandwidth utilization ratio") both
//! measure each frame as a packet train. Camel §4.1 eq. 2 writes the same
//! measurement down: `B = Σ_{i=2..n} s_i / (t_n − t_1)` over a frame's packets
//! in receive order. This module is shared by [`super::Sqp`] and
//! [`crate::cc::pudica::Pudica`].

use crate::collections::IdMap;
use crate::packet::{FeedbackReport, PacketKind, PacketResult};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Frames whose train is still being assembled beyond this many are dropped,
/// oldest first (a frame whose last packet was never reported). Our choice:
/// 64 frames is two seconds at 30 fps, far beyond any feedback delay.
pub const MAX_OPEN_FRAMES: usize = 64;

/// Weight of a new RTT sample in the smoothed RTT (RFC 6298 §2.3: α = 1/8).
const RTT_ALPHA: f64 = 0.125;

/// Smoothed and minimum round-trip time of a feedback stream, as SQP and
/// Pudica both keep them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RttStats {
    /// Smoothed RTT (RFC 6298 §2.3 smoothing with α = 1/8).
    pub srtt: Option<Duration>,
    /// Smallest RTT sample seen.
    pub min_rtt: Option<Duration>,
}

impl RttStats {
    /// Takes the report's RTT sample (`FeedbackReport::rtt_sample`), if any.
    pub fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        if let Some(rtt) = report.rtt_sample(now) {
            self.srtt = Some(match self.srtt {
                None => rtt,
                Some(s) => s.mul_f64(1.0 - RTT_ALPHA) + rtt.mul_f64(RTT_ALPHA),
            });
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
    }
}

/// What one complete frame train measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameSample {
    /// The frame.
    pub frame_id: u64,
    /// Packets of the frame reported (received or lost).
    pub packets: u32,
    /// Packets reported lost.
    pub lost: u32,
    /// Bytes of the received packets, the first received one included.
    pub received_bytes: Bytes,
    /// Receive dispersion: last arrival − first arrival.
    pub dispersion: Duration,
    /// Send spread: last send time − first send time (of received packets).
    pub send_spread: Duration,
    /// Dispersion bandwidth sample (Camel §4.1 eq. 2): bytes received after
    /// the first arrival over the dispersion. `None` with fewer than two
    /// received packets or zero dispersion.
    pub bandwidth: Option<Bitrate>,
    /// Raw one-way delay of the frame's first received packet, in ns:
    /// arrival (receiver clock) − send time (sender clock). The clocks'
    /// origins differ, so only differences between these values mean
    /// anything (e.g. against the minimum: queuing delay).
    pub head_owd_ns: i64,
    /// Send time of the frame's first packet.
    pub first_send: Instant,
}

#[derive(Debug, Clone, Copy, Default)]
struct OpenTrain {
    packets: u32,
    lost: u32,
    received_bytes: Bytes,
    after_first_bytes: Bytes,
    first_arrival: Option<Instant>,
    last_arrival: Instant,
    first_send: Option<Instant>,
    last_send: Instant,
    head_owd_ns: i64,
    seen_last: bool,
    expected: Option<u32>,
}

/// Joins feedback into per-frame trains and yields a [`FrameSample`] when a
/// frame's packets have all been reported.
///
/// A frame is complete when its `last_in_frame` packet has been reported and,
/// if the frame's packet count is known (from `on_frame`), that many packets
/// have been reported. Feedback covers packets in sequence order, so for a
/// frame sent contiguously the last packet's report means the others were
/// reported too.
#[derive(Debug, Clone, Default)]
pub struct TrainCollector {
    open: IdMap<OpenTrain>,
}

impl TrainCollector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// The encoder told us how many packets frame `frame_id` has.
    pub fn expect(&mut self, frame_id: u64, num_packets: u32) {
        self.open
            .entry_or_insert_with(frame_id, |_| OpenTrain::default())
            .expected = Some(num_packets);
        self.prune();
    }

    fn prune(&mut self) {
        while self.open.len() > MAX_OPEN_FRAMES {
            self.open.pop_first();
        }
    }

    /// Feed one report; `out` receives every frame it completes, in frame order.
    pub fn on_feedback(&mut self, report: &FeedbackReport, out: &mut Vec<FrameSample>) {
        for p in &report.packets {
            self.add(p);
        }
        // Complete trains leave in frame order, as they are found.
        let open = &mut self.open;
        open.retain(|id, t| {
            let complete = t.seen_last && t.expected.is_none_or(|n| t.packets >= n);
            if complete {
                if let Some(s) = finish(id, t) {
                    out.push(s);
                }
            }
            !complete
        });
        self.prune();
    }

    fn add(&mut self, p: &PacketResult) {
        // Retransmissions, FEC and padding are not part of the frame's train.
        if p.sent.kind != PacketKind::Media {
            return;
        }
        let Some(frame_id) = p.sent.frame_id else {
            return;
        };
        let t = self
            .open
            .entry_or_insert_with(frame_id, |_| OpenTrain::default());
        t.packets += 1;
        t.seen_last |= p.sent.last_in_frame;
        let Some(arrival) = p.arrival else {
            t.lost += 1;
            return;
        };
        t.received_bytes += p.sent.size;
        match t.first_arrival {
            None => {
                t.first_arrival = Some(arrival);
                t.last_arrival = arrival;
                t.first_send = Some(p.sent.send_time);
                t.last_send = p.sent.send_time;
                t.head_owd_ns = arrival.signed_nanos_since(p.sent.send_time);
            }
            Some(first) => {
                // Reports are in sequence order; an arrival before the first
                // one (reordering) would make the dispersion meaningless for
                // this packet, so it is left out of the byte count.
                if arrival >= first {
                    t.after_first_bytes += p.sent.size;
                    t.last_arrival = t.last_arrival.max(arrival);
                }
                t.last_send = t.last_send.max(p.sent.send_time);
            }
        }
    }
}

fn finish(frame_id: u64, t: &OpenTrain) -> Option<FrameSample> {
    let first_arrival = t.first_arrival?;
    let first_send = t.first_send?;
    let dispersion = t.last_arrival.saturating_duration_since(first_arrival);
    let bandwidth = if dispersion.is_zero() || t.after_first_bytes.is_zero() {
        None
    } else {
        Some(t.after_first_bytes / dispersion)
    };
    Some(FrameSample {
        frame_id,
        packets: t.packets,
        lost: t.lost,
        received_bytes: t.received_bytes,
        dispersion,
        send_spread: t.last_send.saturating_duration_since(first_send),
        bandwidth,
        head_owd_ns: t.head_owd_ns,
        first_send,
    })
}

/// Windowed minimum of raw one-way delays (ns, see
/// [`FrameSample::head_owd_ns`]): the propagation-delay baseline against which
/// queuing delay is measured.
///
/// Kept as the minimum of the current and the previous window-length epoch,
/// so the baseline is at most two windows old and at least one window deep
/// (a two-bucket version of the windowed filter in BBR's `min_rtt`, RFC-draft
/// draft-cardwell-iccrg-bbr-congestion-control §4.1.2, 10 s window).
#[derive(Debug, Clone)]
pub struct MinOwd {
    window: Duration,
    epoch_start: Option<Instant>,
    current: Option<i64>,
    previous: Option<i64>,
}

impl MinOwd {
    /// A tracker with the given window.
    pub fn new(window: Duration) -> Self {
        MinOwd {
            window,
            epoch_start: None,
            current: None,
            previous: None,
        }
    }

    /// Record an OWD sample seen at `now`.
    pub fn update(&mut self, now: Instant, owd_ns: i64) {
        match self.epoch_start {
            None => self.epoch_start = Some(now),
            Some(s) if now.saturating_duration_since(s) >= self.window => {
                self.previous = self.current;
                self.current = None;
                self.epoch_start = Some(now);
            }
            Some(_) => {}
        }
        self.current = Some(self.current.map_or(owd_ns, |m| m.min(owd_ns)));
    }

    /// The baseline, if any sample was seen.
    pub fn min(&self) -> Option<i64> {
        match (self.current, self.previous) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Queuing delay of a sample: how far it is above the baseline.
    pub fn queuing(&self, owd_ns: i64) -> Duration {
        let base = self.min().unwrap_or(owd_ns);
        Duration::from_nanos(owd_ns.saturating_sub(base).max(0).unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::SentPacket;

    fn pkt(
        seq: u64,
        frame: u64,
        first: bool,
        last: bool,
        send_ms: u64,
        arr_us: Option<u64>,
    ) -> PacketResult {
        PacketResult {
            sent: SentPacket {
                seq,
                size: Bytes::new(1250),
                send_time: Instant::from_millis(send_ms),
                frame_id: Some(frame),
                first_in_frame: first,
                last_in_frame: last,
                ..Default::default()
            },
            arrival: arr_us.map(Instant::from_micros),
        }
    }

    #[test]
    fn dispersion_gives_the_bottleneck_rate() {
        // 4 packets of 1250 B arrive 10 ms apart: 3 × 10 000 bit / 30 ms = 1 Mbps.
        let mut c = TrainCollector::new();
        c.expect(7, 4);
        let r = FeedbackReport {
            report_time: Instant::from_millis(200),
            packets: vec![
                pkt(0, 7, true, false, 0, Some(100_000)),
                pkt(1, 7, false, false, 1, Some(110_000)),
                pkt(2, 7, false, false, 2, Some(120_000)),
                pkt(3, 7, false, true, 3, Some(130_000)),
            ],
        };
        let mut out = Vec::new();
        c.on_feedback(&r, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].bandwidth, Some(Bitrate::mbps(1)));
        assert_eq!(out[0].dispersion, Duration::from_millis(30));
        assert_eq!(out[0].head_owd_ns, 100_000_000);
    }

    #[test]
    fn a_train_split_over_reports_completes_once() {
        let mut c = TrainCollector::new();
        c.expect(1, 3);
        let mut out = Vec::new();
        let a = FeedbackReport {
            report_time: Instant::from_millis(50),
            packets: vec![pkt(0, 1, true, false, 0, Some(20_000))],
        };
        c.on_feedback(&a, &mut out);
        assert!(out.is_empty(), "incomplete train must not give a sample");
        let b = FeedbackReport {
            report_time: Instant::from_millis(100),
            packets: vec![
                pkt(1, 1, false, false, 1, Some(25_000)),
                pkt(2, 1, false, true, 2, None),
            ],
        };
        c.on_feedback(&b, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].lost, 1);
        // One packet after the first, 5 ms: 10 000 bit / 5 ms = 2 Mbps.
        assert_eq!(out[0].bandwidth, Some(Bitrate::mbps(2)));
    }

    #[test]
    fn single_packet_frame_gives_no_bandwidth() {
        let mut c = TrainCollector::new();
        let r = FeedbackReport {
            report_time: Instant::from_millis(50),
            packets: vec![pkt(0, 3, true, true, 0, Some(20_000))],
        };
        let mut out = Vec::new();
        c.on_feedback(&r, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].bandwidth, None);
    }

    #[test]
    fn min_owd_forgets_after_two_windows() {
        let mut m = MinOwd::new(Duration::from_secs(10));
        m.update(Instant::from_secs(0), 50);
        m.update(Instant::from_secs(5), 80);
        assert_eq!(m.min(), Some(50));
        m.update(Instant::from_secs(11), 90); // new epoch, previous = 50
        assert_eq!(m.min(), Some(50));
        m.update(Instant::from_secs(22), 100); // previous = 90
        assert_eq!(m.min(), Some(90));
        assert_eq!(m.queuing(130), Duration::from_nanos(40));
    }
}
