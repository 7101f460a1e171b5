//! Pre-filtering: grouping packets into send bursts and computing
//! inter-group deltas (draft-ietf-rmcat-gcc-02 §5.2, "Pre-filtering" and the
//! arrival-time model of §5.1; libwebrtc `inter_arrival_delta.cc`).
//!
//! A *group* is a run of packets whose send times lie within
//! [`GroupingConfig::group_length`] of the group's first packet. A packet that
//! arrives less than [`GroupingConfig::burst_delta`] after the previous one and
//! whose propagation delta (arrival delta − send delta) is negative also joins
//! the current group, as long as the group has not lasted longer than
//! [`GroupingConfig::max_burst_duration`] at the receiver: such packets were
//! queued behind each other and arrived as one burst (draft §5.2).
//!
//! When the first packet of a new group arrives, the previous group is complete
//! and the grouper emits the deltas between the last two complete groups:
//! send delta (last send time of each group), arrival delta (last arrival of
//! each group) and size delta.
//!
//! Packets must be fed in arrival order (libwebrtc sorts each feedback by
//! receive time). A packet sent before the first packet of the current group is
//! a reordered packet and is skipped; a complete group whose arrival delta is
//! negative is skipped too, and after [`REORDERED_RESET_THRESHOLD`] such groups
//! in a row the grouper starts afresh.

use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Consecutive reordered groups that reset the grouper
/// (libwebrtc `inter_arrival_delta.cc`: `kReorderedResetThreshold = 3`).
pub const REORDERED_RESET_THRESHOLD: u32 = 3;

/// Grouping parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupingConfig {
    /// Send-time span of one group (draft-ietf-rmcat-gcc-02 §5.2: `burst_time`
    /// = 5 ms; libwebrtc `delay_based_bwe.cc`: `kSendTimeGroupLength` = 5 ms).
    pub group_length: Duration,
    /// A packet arriving within this time of the previous one with a negative
    /// propagation delta belongs to the same burst (libwebrtc
    /// `inter_arrival_delta.cc`: `kBurstDeltaThreshold` = 5 ms).
    pub burst_delta: Duration,
    /// Longest span of arrivals a burst may cover (libwebrtc
    /// `inter_arrival_delta.cc`: `kMaxBurstDuration` = 100 ms).
    pub max_burst_duration: Duration,
    /// If the receiver clock advances this much more than the sender's between
    /// two groups, the receiver clock jumped and the grouper resets (libwebrtc
    /// `inter_arrival_delta.cc`: `kArrivalTimeOffsetThreshold` = 3 s).
    pub arrival_offset_threshold: Duration,
}

impl Default for GroupingConfig {
    fn default() -> Self {
        GroupingConfig {
            group_length: Duration::from_millis(5),
            burst_delta: Duration::from_millis(5),
            max_burst_duration: Duration::from_millis(100),
            arrival_offset_threshold: Duration::from_secs(3),
        }
    }
}

/// Deltas between two consecutive complete groups (draft §5.1: `t(i) − t(i−1)`,
/// `T(i) − T(i−1)`), in milliseconds as the trendline filter consumes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupDeltas {
    /// Send-time delta between the last packets of the two groups, in ms.
    pub send_delta_ms: f64,
    /// Arrival-time delta between the last packets of the two groups, in ms.
    pub arrival_delta_ms: f64,
    /// Size of the newer group minus size of the older one, in bytes.
    pub size_delta: i64,
    /// Arrival time (receiver clock) of the packet that completed the newer
    /// group's successor, i.e. the packet that triggered these deltas.
    pub arrival: Instant,
}

impl GroupDeltas {
    /// Inter-group delay variation `d(i)` (draft §5.1), in ms.
    pub fn delay_variation_ms(&self) -> f64 {
        self.arrival_delta_ms - self.send_delta_ms
    }
}

#[derive(Debug, Clone, Copy)]
struct PacketGroup {
    /// Send time of the group's first packet.
    first_send: Instant,
    /// Latest send time in the group.
    last_send: Instant,
    /// Arrival of the group's first packet.
    first_arrival: Instant,
    /// Arrival of the group's latest packet.
    complete_time: Instant,
    /// Sum of packet sizes.
    size: Bytes,
    /// Sender clock when the group's latest packet was processed.
    last_local_time: Instant,
}

/// The inter-arrival grouper.
#[derive(Debug, Clone)]
pub struct ArrivalGrouper {
    config: GroupingConfig,
    current: Option<PacketGroup>,
    prev: Option<PacketGroup>,
    consecutive_reordered: u32,
    skipped_reordered: u64,
}

impl ArrivalGrouper {
    /// A grouper with no history.
    pub fn new(config: GroupingConfig) -> Self {
        ArrivalGrouper {
            config,
            current: None,
            prev: None,
            consecutive_reordered: 0,
            skipped_reordered: 0,
        }
    }

    /// Forget all groups (stream time-out, receiver clock jump).
    pub fn reset(&mut self) {
        self.current = None;
        self.prev = None;
        self.consecutive_reordered = 0;
    }

    /// Number of packets or groups skipped because they were reordered.
    pub fn skipped_reordered(&self) -> u64 {
        self.skipped_reordered
    }

    /// Add one received packet. `now` is the sender's clock when the feedback
    /// is processed; `send_time` is in the sender's clock and `arrival` in the
    /// receiver's. Returns the deltas between the last two complete groups when
    /// this packet starts a new group.
    pub fn on_packet(
        &mut self,
        now: Instant,
        send_time: Instant,
        arrival: Instant,
        size: Bytes,
    ) -> Option<GroupDeltas> {
        let Some(mut current) = self.current else {
            self.current = Some(PacketGroup {
                first_send: send_time,
                last_send: send_time,
                first_arrival: arrival,
                complete_time: arrival,
                size,
                last_local_time: now,
            });
            return None;
        };
        if send_time < current.first_send {
            // Reordered packet: sent before the group it arrived in
            // (inter_arrival_delta.cc, "Reordered packet").
            self.skipped_reordered += 1;
            return None;
        }
        let mut deltas = None;
        if self.starts_new_group(&current, send_time, arrival) {
            if let Some(prev) = self.prev {
                let send_delta = current.last_send.signed_nanos_since(prev.last_send);
                let arrival_delta = current.complete_time.signed_nanos_since(prev.complete_time);
                let local_delta = current
                    .last_local_time
                    .signed_nanos_since(prev.last_local_time);
                if arrival_delta - local_delta
                    >= self.config.arrival_offset_threshold.as_nanos() as i64
                {
                    // The receiver clock jumped: start over with this packet.
                    self.reset();
                    self.current = Some(PacketGroup {
                        first_send: send_time,
                        last_send: send_time,
                        first_arrival: arrival,
                        complete_time: arrival,
                        size,
                        last_local_time: now,
                    });
                    return None;
                }
                if arrival_delta < 0 {
                    // The group was reordered after its arrival was stamped.
                    self.skipped_reordered += 1;
                    self.consecutive_reordered += 1;
                    if self.consecutive_reordered >= REORDERED_RESET_THRESHOLD {
                        self.reset();
                    }
                    return None;
                }
                self.consecutive_reordered = 0;
                deltas = Some(GroupDeltas {
                    send_delta_ms: send_delta as f64 * 1e-6,
                    arrival_delta_ms: arrival_delta as f64 * 1e-6,
                    size_delta: current.size.get() as i64 - prev.size.get() as i64,
                    arrival,
                });
            }
            self.prev = Some(current);
            current = PacketGroup {
                first_send: send_time,
                last_send: send_time,
                first_arrival: arrival,
                complete_time: arrival,
                size: Bytes::ZERO,
                last_local_time: now,
            };
        } else {
            current.last_send = current.last_send.max(send_time);
        }
        current.size += size;
        current.complete_time = arrival;
        current.last_local_time = now;
        self.current = Some(current);
        deltas
    }

    /// Draft §5.2: a packet starts a new group unless it belongs to the current
    /// burst, or it was sent within `group_length` of the group's first packet.
    fn starts_new_group(
        &self,
        current: &PacketGroup,
        send_time: Instant,
        arrival: Instant,
    ) -> bool {
        if self.belongs_to_burst(current, send_time, arrival) {
            return false;
        }
        send_time - current.first_send > self.config.group_length
    }

    fn belongs_to_burst(
        &self,
        current: &PacketGroup,
        send_time: Instant,
        arrival: Instant,
    ) -> bool {
        let arrival_delta = arrival.signed_nanos_since(current.complete_time);
        let send_delta = send_time.signed_nanos_since(current.last_send);
        if send_delta == 0 {
            return true;
        }
        let propagation_delta = arrival_delta - send_delta;
        propagation_delta < 0
            && arrival_delta <= self.config.burst_delta.as_nanos() as i64
            && arrival - current.first_arrival < self.config.max_burst_duration
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }
    fn us(x: u64) -> Instant {
        Instant::from_micros(x)
    }

    fn feed(g: &mut ArrivalGrouper, pkts: &[(Instant, Instant)]) -> Vec<GroupDeltas> {
        pkts.iter()
            .filter_map(|&(s, a)| g.on_packet(a, s, a, Bytes::new(1000)))
            .collect()
    }

    #[test]
    fn packets_within_5ms_of_send_form_one_group() {
        let mut g = ArrivalGrouper::new(GroupingConfig::default());
        // Group A: sends 0,2,4 ms. Group B: 10,12 ms. Group C: 20 ms. D: 30 ms.
        let pkts = [
            (ms(0), ms(50)),
            (ms(2), ms(52)),
            (ms(4), ms(54)),
            (ms(10), ms(63)),
            (ms(12), ms(65)),
            (ms(20), ms(72)),
            (ms(30), ms(82)),
        ];
        let d = feed(&mut g, &pkts);
        assert_eq!(d.len(), 2, "{d:?}");
        // A vs B: last sends 4 → 12, last arrivals 54 → 65.
        assert!((d[0].send_delta_ms - 8.0).abs() < 1e-9);
        assert!((d[0].arrival_delta_ms - 11.0).abs() < 1e-9);
        assert_eq!(d[0].size_delta, 2000 - 3000);
        assert!((d[0].delay_variation_ms() - 3.0).abs() < 1e-9);
        // B vs C.
        assert!((d[1].send_delta_ms - 8.0).abs() < 1e-9);
        assert!((d[1].arrival_delta_ms - 7.0).abs() < 1e-9);
        assert_eq!(d[1].size_delta, 1000 - 2000);
    }

    #[test]
    fn burst_rule_merges_packets_arriving_back_to_back() {
        let mut g = ArrivalGrouper::new(GroupingConfig::default());
        // Sends every 8 ms (each would be its own group), but packets 2 and 3
        // were queued and arrive 1 ms apart with negative propagation delta.
        let pkts = [
            (ms(0), ms(100)),
            (ms(8), ms(130)),
            (ms(16), ms(131)), // burst: arrival delta 1 ms, send delta 8 ms
            (ms(24), ms(132)), // burst again
            (ms(32), ms(150)), // new group
            (ms(40), ms(158)),
        ];
        let d = feed(&mut g, &pkts);
        // Groups: {0}, {8,16,24}, {32}, {40}. Deltas emitted at 32 and 40.
        assert_eq!(d.len(), 2, "{d:?}");
        assert!((d[0].send_delta_ms - 24.0).abs() < 1e-9, "{d:?}");
        assert!((d[0].arrival_delta_ms - 32.0).abs() < 1e-9);
        assert_eq!(d[0].size_delta, 2000);
        assert!((d[1].send_delta_ms - 8.0).abs() < 1e-9);
        assert!((d[1].arrival_delta_ms - 18.0).abs() < 1e-9);
    }

    #[test]
    fn burst_needs_negative_propagation_delta() {
        let mut g = ArrivalGrouper::new(GroupingConfig::default());
        // Arrivals 1 ms apart but sends 0.5 ms apart: propagation delta > 0,
        // and sends 6 ms after group start: separate groups.
        let pkts = [
            (us(0), us(100_000)),
            (us(6_000), us(106_500)),
            (us(12_000), us(113_000)),
        ];
        let d = feed(&mut g, &pkts);
        assert_eq!(d.len(), 1);
        assert!((d[0].send_delta_ms - 6.0).abs() < 1e-9);
    }

    #[test]
    fn reordered_packet_is_skipped() {
        let mut g = ArrivalGrouper::new(GroupingConfig::default());
        let pkts = [
            (ms(0), ms(50)),
            (ms(10), ms(60)),
            (ms(5), ms(61)), // sent before current group's first packet
            (ms(20), ms(70)),
        ];
        let d = feed(&mut g, &pkts);
        assert_eq!(g.skipped_reordered(), 1);
        assert_eq!(d.len(), 1);
        // Group {10} alone (the reordered packet did not join): size delta 0.
        assert_eq!(d[0].size_delta, 0);
        assert!((d[0].send_delta_ms - 10.0).abs() < 1e-9);
    }

    #[test]
    fn negative_arrival_delta_skips_group_and_resets_after_three() {
        let mut g = ArrivalGrouper::new(GroupingConfig::default());
        let mut p = |send: u64, arr: u64| g.on_packet(ms(0), ms(send), ms(arr), Bytes::new(1000));
        assert!(p(0, 100).is_none()); // G1
        assert!(p(10, 110).is_none()); // G2 starts
        assert!(p(16, 111).is_none()); // burst member of G2
        assert!(p(30, 112).is_none()); // burst member: G2 sends span 10..30
                                       // Sent after G2's first packet but arriving before G2's last one with a
                                       // positive propagation delta: starts G3; G1→G2 deltas come out.
        let d = p(18, 105).expect("G1 vs G2");
        assert!((d.arrival_delta_ms - 12.0).abs() < 1e-9);
        // G3 completed at 105 < G2's 112: skipped, three times in a row → reset.
        assert!(p(40, 130).is_none());
        assert!(p(50, 140).is_none());
        assert!(p(60, 150).is_none());
        // Fresh start: two groups are needed before deltas flow again.
        assert!(p(70, 160).is_none());
        assert!(p(80, 170).is_none());
        let d = p(90, 180).expect("deltas after reset");
        assert!((d.send_delta_ms - 10.0).abs() < 1e-9);
        assert!((d.arrival_delta_ms - 10.0).abs() < 1e-9);
    }
}
