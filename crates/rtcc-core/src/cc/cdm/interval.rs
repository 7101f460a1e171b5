//! One reporting interval of the CDM: the feedback that arrived during it,
//! reduced to what the paper's receiver report tells the sender
//! (`papers/cdm-scalable-video.txt` §IV: "the delay currently experienced by
//! packets", the loss, "the measured RTT" and "the average video packet
//! size" of §VI's eq. 1).
//!
//! rtcc's feedback arrives often (every 50 ms in the simulator) and tells of
//! each packet; the CDM decides once per reporting interval (design note,
//! I1), so the reports of an interval are summed here and summarised when
//! it closes ([`IntervalSummary`]).

use super::DelaySignal;
use crate::packet::{FeedbackReport, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// A one-way delay as the sender measures it: a packet's arrival time in the
/// receiver's clock minus its send time in the sender's clock. It is the
/// true forward delay plus the (unknown, constant) offset between the two
/// clocks, so only differences between such delays mean anything; the CDM
/// compares them with d_min, which carries the same offset (§IV: "one-way
/// delay to infer queuing delay").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OneWayDelay(i64);

impl OneWayDelay {
    /// The delay of a packet sent at `send` (sender's clock) that arrived at
    /// `arrival` (receiver's clock).
    pub fn of(send: Instant, arrival: Instant) -> Self {
        OneWayDelay(arrival.signed_nanos_since(send))
    }

    /// A delay of `ns` nanoseconds (offset included).
    pub const fn from_nanos(ns: i64) -> Self {
        OneWayDelay(ns)
    }

    /// Nanoseconds, offset included.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Milliseconds, offset included (for traces).
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }

    /// `self + d`, saturating.
    pub fn plus(self, d: Duration) -> Self {
        let d = i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        OneWayDelay(self.0.saturating_add(d))
    }

    /// How much longer `self` is than `base` (zero if it is not): the
    /// queuing delay of a packet whose delay is `self` when `base` is the
    /// path's base delay. The clock offset cancels.
    pub fn since(self, base: OneWayDelay) -> Duration {
        let diff = self.0.saturating_sub(base.0);
        Duration::from_nanos(u64::try_from(diff).unwrap_or(0))
    }
}

/// What one reporting interval told (design note, I1–I2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntervalSummary {
    /// Feedback reports that told of at least one packet not told of before.
    pub reports: u32,
    /// Packets those reports told of for the first time.
    pub packets: u64,
    /// Of them, reported lost.
    pub lost: u64,
    /// Mean one-way delay of the packets received (I2), if any was.
    pub delay: Option<OneWayDelay>,
    /// The smallest one-way delay among them (d_min's sample, I3).
    pub min_delay: Option<OneWayDelay>,
    /// The largest one-way delay among them (the delay of a loss, I4).
    pub peak_delay: Option<OneWayDelay>,
    /// Mean round-trip sample of the interval's reports (eq. 1's R, I13).
    pub rtt: Option<Duration>,
    /// Mean size of the packets sent during the interval (eq. 1's s, I13).
    pub packet_size: Option<Bytes>,
}

impl IntervalSummary {
    /// Whether any feedback arrived during the interval (§V-D).
    pub fn heard(&self) -> bool {
        self.reports > 0
    }

    /// Whether the interval reported a lost packet: a "loss report" (§V-C).
    pub fn has_loss(&self) -> bool {
        self.lost > 0
    }

    /// Fraction of the interval's packets reported lost (eq. 1's p: "the
    /// loss fraction (in place of the loss event rate)"); 0 without packets.
    pub fn loss_fraction(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.lost as f64 / self.packets as f64
        }
    }
}

/// The running sums of the open interval.
#[derive(Debug, Clone, Default)]
pub(super) struct Accumulator {
    reports: u32,
    packets: u64,
    lost: u64,
    /// Σ delay over received packets, in ns (i128: offsets of days times
    /// millions of packets do not overflow it).
    delay_sum: i128,
    delays: u64,
    min: Option<OneWayDelay>,
    peak: Option<OneWayDelay>,
    rtt_sum_ns: u128,
    rtts: u64,
    sent_bytes: u64,
    sent: u64,
}

impl Accumulator {
    /// A packet of `size` left the sender.
    pub(super) fn on_sent(&mut self, size: Bytes) {
        self.sent_bytes = self.sent_bytes.saturating_add(size.get());
        self.sent += 1;
    }

    /// Adds the packets of `report` numbered `first_new` or above (each
    /// packet counts once, at the first report that tells of it, I17), and
    /// its round-trip sample if it told of any. Returns the sequence number
    /// after the highest one it counted, or `None` if it told of nothing new.
    /// With [`DelaySignal::Rtt`] a received packet's "delay" is its round
    /// trip (`now` − send − the receiver's hold, report time − arrival; the
    /// clock offset cancels), in place of its one-way delay.
    pub(super) fn on_report(
        &mut self,
        now: Instant,
        report: &FeedbackReport,
        first_new: SeqNo,
        signal: DelaySignal,
    ) -> Option<SeqNo> {
        let mut next = None;
        for p in report.packets.iter().filter(|p| p.sent.seq >= first_new) {
            self.packets += 1;
            match p.arrival {
                None => self.lost += 1,
                Some(a) => {
                    let d = match signal {
                        DelaySignal::OneWay => OneWayDelay::of(p.sent.send_time, a),
                        DelaySignal::Rtt => {
                            let hold = report.report_time.signed_nanos_since(a).max(0);
                            OneWayDelay::from_nanos(
                                now.signed_nanos_since(p.sent.send_time)
                                    .saturating_sub(hold),
                            )
                        }
                    };
                    self.delay_sum += i128::from(d.as_nanos());
                    self.delays += 1;
                    self.min = Some(self.min.map_or(d, |m| m.min(d)));
                    self.peak = Some(self.peak.map_or(d, |m| m.max(d)));
                }
            }
            next = Some(next.map_or(p.sent.seq, |n: SeqNo| n.max(p.sent.seq)) + 1);
        }
        if next.is_some() {
            self.reports += 1;
            // RTT: the newest received packet's time from send to the
            // report's arrival, less the receiver's hold (as svc-probing).
            if let Some(rtt) = report.rtt_sample(now).filter(|r| !r.is_zero()) {
                self.rtt_sum_ns += u128::from(rtt.as_nanos());
                self.rtts += 1;
            }
        }
        next
    }

    /// The interval's summary; the sums start again from zero.
    pub(super) fn finish(&mut self) -> IntervalSummary {
        let a = std::mem::take(self);
        let mean = |sum: i128, n: u64| {
            // A mean of i64 values fits an i64.
            (n > 0).then(|| OneWayDelay((sum / i128::from(n)) as i64))
        };
        IntervalSummary {
            reports: a.reports,
            packets: a.packets,
            lost: a.lost,
            delay: mean(a.delay_sum, a.delays),
            min_delay: a.min,
            peak_delay: a.peak,
            rtt: (a.rtts > 0).then(|| {
                // A mean of u64 values fits a u64.
                Duration::from_nanos((a.rtt_sum_ns / u128::from(a.rtts)) as u64)
            }),
            packet_size: (a.sent > 0).then(|| Bytes::new(a.sent_bytes / a.sent)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{PacketResult, SentPacket};

    fn pkt(seq: u64, send_ms: u64, arrival_ms: Option<u64>) -> PacketResult {
        PacketResult {
            sent: SentPacket {
                seq,
                size: Bytes::new(1000),
                send_time: Instant::from_millis(send_ms),
                ..Default::default()
            },
            arrival: arrival_ms.map(Instant::from_millis),
        }
    }

    #[test]
    fn an_interval_sums_its_reports_once_per_packet() {
        let mut a = Accumulator::default();
        for _ in 0..4 {
            a.on_sent(Bytes::new(1000));
        }
        a.on_sent(Bytes::new(500));
        // Receiver clock 5 s ahead of the sender's: delays carry the offset.
        let first = FeedbackReport {
            report_time: Instant::from_millis(5_130),
            packets: vec![
                pkt(0, 0, Some(5_100)),
                pkt(1, 10, None),
                pkt(2, 20, Some(5_140)),
            ],
        };
        assert_eq!(
            a.on_report(Instant::from_millis(150), &first, 0, DelaySignal::OneWay),
            Some(3)
        );
        // The same report again tells of nothing new.
        assert_eq!(
            a.on_report(Instant::from_millis(160), &first, 3, DelaySignal::OneWay),
            None
        );
        let second = FeedbackReport {
            report_time: Instant::from_millis(5_200),
            packets: vec![pkt(1, 10, Some(5_190)), pkt(3, 30, Some(5_160))],
        };
        assert_eq!(
            a.on_report(Instant::from_millis(250), &second, 3, DelaySignal::OneWay),
            Some(4)
        );
        let s = a.finish();
        assert_eq!(s.reports, 2);
        // Packet 1 counts as lost (its late arrival is not counted again).
        assert_eq!((s.packets, s.lost), (4, 1));
        assert!((s.loss_fraction() - 0.25).abs() < 1e-12);
        // Delays 5100, 5120, 5130 ms: mean 5116.67, min 5100, peak 5130.
        assert_eq!(s.min_delay, Some(OneWayDelay::from_nanos(5_100_000_000)));
        assert_eq!(s.peak_delay, Some(OneWayDelay::from_nanos(5_130_000_000)));
        assert_eq!(s.delay, Some(OneWayDelay::from_nanos(5_116_666_666)));
        // RTT samples, from the highest-numbered packet received in each
        // report: 150 − 20 − (5130 − 5140 → no hold) = 130 ms, then
        // 250 − 30 − (5200 − 5160) = 180 ms. Mean 155 ms.
        assert_eq!(s.rtt, Some(Duration::from_millis(155)));
        assert_eq!(s.packet_size, Some(Bytes::new(900)));
        // The next interval starts empty.
        assert_eq!(a.finish(), IntervalSummary::default());
    }

    #[test]
    fn the_rtt_signal_counts_the_return_path_and_not_the_clock_offset() {
        // Receiver clock 5 s ahead. Packet 0 sent at 0, arrived 5_040
        // (40 ms forward), reported at 5_060 (held 20 ms), report in at 110
        // (50 ms back): round trip 110 − 20 = 90 ms. Packet 1 sent at 10,
        // arrived 5_045, held 15 ms: 110 − 10 − 15 = 85 ms.
        let report = FeedbackReport {
            report_time: Instant::from_millis(5_060),
            packets: vec![pkt(0, 0, Some(5_040)), pkt(1, 10, Some(5_045))],
        };
        let mut rtt = Accumulator::default();
        rtt.on_report(Instant::from_millis(110), &report, 0, DelaySignal::Rtt);
        let s = rtt.finish();
        assert_eq!(s.min_delay, Some(OneWayDelay::from_nanos(85_000_000)));
        assert_eq!(s.peak_delay, Some(OneWayDelay::from_nanos(90_000_000)));
        // The same report, 30 ms later (a return-path queue): every round
        // trip grows by 30 ms; the one-way delays do not move.
        let mut later = Accumulator::default();
        later.on_report(Instant::from_millis(140), &report, 0, DelaySignal::Rtt);
        assert_eq!(
            later.finish().min_delay,
            Some(OneWayDelay::from_nanos(115_000_000))
        );
        let mut one_way = Accumulator::default();
        one_way.on_report(Instant::from_millis(140), &report, 0, DelaySignal::OneWay);
        assert_eq!(
            one_way.finish().min_delay,
            Some(OneWayDelay::from_nanos(5_035_000_000))
        );
    }

    #[test]
    fn a_delay_above_its_base_is_queuing() {
        let base = OneWayDelay::from_nanos(-3_000_000);
        let d = base.plus(Duration::from_millis(40));
        assert_eq!(d.as_nanos(), 37_000_000);
        assert_eq!(d.since(base), Duration::from_millis(40));
        assert_eq!(base.since(d), Duration::ZERO);
    }
}
