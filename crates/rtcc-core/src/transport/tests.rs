//! Tests of the loss detector and of the tracker → frame → detector round
//! trip, with the numbers worked by hand in the comments, and a property test
//! over random send/deliver/drop/ack sequences.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::time::{Duration, Instant};
use crate::units::Bytes;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
fn at(n: u64) -> Instant {
    Instant::from_millis(n)
}
const MTU: Bytes = Bytes::new(1200);

fn frame(ack_delay: Duration, ranges: &[(u64, u64)]) -> AckFrame {
    AckFrame::new(
        ack_delay,
        ranges
            .iter()
            .map(|&(smallest, largest)| AckRange { smallest, largest })
            .collect(),
    )
    .unwrap()
}

fn pns(lost: &[LostPacket]) -> Vec<u64> {
    lost.iter().map(|l| l.packet.packet_number).collect()
}

/// Sends pn 0..n at 1 ms spacing starting at t = 0, all ack-eliciting, 1200 B.
fn sent(n: u64) -> LossDetector {
    let mut d = LossDetector::default();
    for pn in 0..n {
        d.on_packet_sent(at(pn), pn, MTU, true, 100 + pn);
    }
    d
}

#[test]
fn packet_threshold_then_time_threshold() {
    let mut d = sent(5);
    assert_eq!(d.bytes_in_flight(), Bytes::new(6000));
    // ACK of pn 4 only, at t = 100 ms: latest_rtt = 100 − 4 = 96 ms, first
    // sample, so smoothed = 96 and the loss delay is 9/8 · 96 = 108 ms.
    let out = d
        .on_ack_received(at(100), &frame(ms(0), &[(4, 4)]))
        .unwrap();
    assert!(out.rtt_updated);
    assert_eq!(d.rtt().smoothed_rtt(), ms(96));
    // pn 0 and 1 are ≥ 3 below the largest acked (4): lost by packet threshold.
    assert_eq!(pns(&out.lost), vec![0, 1]);
    assert!(out
        .lost
        .iter()
        .all(|l| l.reason == LossReason::PacketThreshold));
    // Detection times: 100 − 0 and 100 − 1.
    assert_eq!(out.lost[0].detection_time, ms(100));
    assert_eq!(out.lost[1].detection_time, ms(99));
    // pn 2 is only 2 below: not lost yet; its time threshold is 2 + 108 = 110 ms.
    assert_eq!(d.poll_timeout(), Some(at(110)));
    assert_eq!(d.bytes_in_flight(), Bytes::new(2400));
    assert_eq!(d.on_timeout(at(109)), TimeoutOutcome::NotDue);
    let TimeoutOutcome::Lost(lost) = d.on_timeout(at(110)) else {
        panic!("expected a time-threshold loss")
    };
    assert_eq!(pns(&lost), vec![2]);
    assert_eq!(lost[0].reason, LossReason::TimeThreshold);
    assert_eq!(lost[0].detection_time, ms(108));
    // pn 3 (sent at 3 ms) follows at 3 + 108 = 111 ms.
    assert_eq!(d.poll_timeout(), Some(at(111)));
    let TimeoutOutcome::Lost(lost) = d.on_timeout(at(111)) else {
        panic!("expected a time-threshold loss")
    };
    assert_eq!(pns(&lost), vec![3]);
    assert_eq!(d.bytes_in_flight(), Bytes::ZERO);
    assert_eq!(d.poll_timeout(), None);
    // T_unit = (100 + 99 + 108 + 108) / 4 = 103.75 ms.
    assert_eq!(
        d.stats().mean_detection_time(),
        Some(Duration::from_micros(103_750))
    );
    assert_eq!(d.stats().packets_lost, 4);
    assert_eq!(d.stats().packets_acked, 1);
}

#[test]
fn time_threshold_uses_the_larger_of_smoothed_and_latest_rtt() {
    let mut d = LossDetector::default();
    d.on_packet_sent(at(0), 0, MTU, true, 0);
    d.on_ack_received(at(100), &frame(ms(0), &[(0, 0)]))
        .unwrap();
    d.on_packet_sent(at(100), 1, MTU, true, 0);
    d.on_packet_sent(at(110), 2, MTU, true, 0);
    d.on_packet_sent(at(120), 3, MTU, true, 0);
    // ACK of pn 3 at 320: latest = 200, smoothed = 7/8·100 + 1/8·200 = 112.5.
    // Loss delay = 9/8 · max(112.5, 200) = 225 ms. With smoothed_rtt alone it
    // would be 126.5625 ms and pn 1 (sent at 100 < 320 − 126.6) would be lost now.
    let out = d
        .on_ack_received(at(320), &frame(ms(0), &[(3, 3)]))
        .unwrap();
    assert_eq!(d.rtt().smoothed_rtt(), Duration::from_micros(112_500));
    assert!(out.lost.is_empty());
    // pn 1 crosses the threshold at 100 + 225 = 325 ms.
    assert_eq!(d.poll_timeout(), Some(at(325)));
    let TimeoutOutcome::Lost(lost) = d.on_timeout(at(325)) else {
        panic!("expected a time-threshold loss")
    };
    assert_eq!(pns(&lost), vec![1]);
    assert_eq!(lost[0].detection_time, ms(225));
    assert_eq!(d.poll_timeout(), Some(at(335)));
}

#[test]
fn pto_value_and_backoff() {
    let mut d = LossDetector::default();
    // No sample: PTO = 333 + max(4 · 166.5, 1) + 25 = 1024 ms.
    assert_eq!(d.pto(), ms(1024));
    d.on_packet_sent(at(0), 0, MTU, true, 0);
    d.on_ack_received(at(100), &frame(ms(0), &[(0, 0)]))
        .unwrap();
    // After one 100 ms sample: smoothed 100, rttvar 50:
    // PTO = 100 + max(200, 1) + 25 = 325 ms.
    assert_eq!(d.pto(), ms(325));
    // Nothing in flight: no timer.
    assert_eq!(d.poll_timeout(), None);
    d.on_packet_sent(at(200), 1, MTU, true, 0);
    assert_eq!(d.poll_timeout(), Some(at(525)));
    assert_eq!(d.on_timeout(at(524)), TimeoutOutcome::NotDue);
    assert_eq!(d.on_timeout(at(525)), TimeoutOutcome::Probe { count: 2 });
    assert_eq!(d.pto_count(), 1);
    // Backoff: 200 + 2 · 325 = 850 ms (the probes have not been sent yet).
    assert_eq!(d.pto(), ms(650));
    assert_eq!(d.poll_timeout(), Some(at(850)));
    assert_eq!(d.on_timeout(at(850)), TimeoutOutcome::Probe { count: 2 });
    assert_eq!(d.pto_count(), 2);
    // 200 + 4 · 325 = 1500 ms.
    assert_eq!(d.poll_timeout(), Some(at(1500)));
    // The caller sends a probe at 850: the timer restarts from it,
    // 850 + 1300 = 2150 ms.
    d.on_packet_sent(at(850), 2, MTU, true, 0);
    assert_eq!(d.poll_timeout(), Some(at(2150)));
    // A PTO declares nothing lost.
    assert_eq!(d.stats().packets_lost, 0);
    assert_eq!(d.stats().pto_expirations, 2);
    // An ACK resets pto_count.
    d.on_ack_received(at(900), &frame(ms(0), &[(2, 2)]))
        .unwrap();
    assert_eq!(d.pto_count(), 0);
}

#[test]
fn pto_counts_max_ack_delay() {
    let mut d = LossDetector::new(LossDetectorConfig {
        max_ack_delay: ms(0),
        ..LossDetectorConfig::default()
    });
    // 333 + 666 + 0.
    assert_eq!(d.pto(), ms(999));
    d.on_packet_sent(at(0), 0, MTU, true, 0);
    // Sample 40 ms: rttvar 20, 4·rttvar = 80: PTO = 40 + 80 + 0 = 120 ms.
    d.on_ack_received(at(40), &frame(ms(0), &[(0, 0)])).unwrap();
    assert_eq!(d.pto(), ms(120));
}

#[test]
fn ack_ranges_round_trip_through_tracker_and_detector() {
    let mut d = sent(10);
    let mut rx = AckTracker::new(8);
    // One-way delay 50 ms; pn 2, 5, 6 are dropped; pn 9 overtakes pn 8 and
    // pn 3 arrives twice.
    let arrivals = [
        (0, 50),
        (1, 51),
        (3, 53),
        (3, 54),
        (4, 54),
        (7, 57),
        (9, 58),
        (8, 59),
    ];
    for (pn, t) in arrivals {
        rx.on_packet_received(at(t), pn);
    }
    let f = rx.build_ack(at(60)).unwrap();
    assert_eq!(
        f.ranges(),
        &[
            AckRange {
                smallest: 7,
                largest: 9
            },
            AckRange {
                smallest: 3,
                largest: 4
            },
            AckRange {
                smallest: 0,
                largest: 1
            },
        ]
    );
    // The largest (9) arrived at 58: ack delay 2 ms.
    assert_eq!(f.ack_delay(), ms(2));
    let out = d.on_ack_received(at(110), &f).unwrap();
    let acked: Vec<u64> = out.newly_acked.iter().map(|p| p.packet_number).collect();
    assert_eq!(acked, vec![0, 1, 3, 4, 7, 8, 9]);
    // Tokens come back unchanged.
    assert!(out
        .newly_acked
        .iter()
        .all(|p| p.token == 100 + p.packet_number));
    // 2, 5, 6 are all ≥ 3 below 9: lost by packet threshold at once.
    assert_eq!(pns(&out.lost), vec![2, 5, 6]);
    assert_eq!(d.bytes_in_flight(), Bytes::ZERO);
    assert_eq!(d.poll_timeout(), None);
    // First sample 110 − 9 = 101 ms; the ack delay is not used on the first sample.
    assert_eq!(d.rtt().smoothed_rtt(), ms(101));
    // The same ACK again (duplicated on the return path) changes nothing.
    let again = d.on_ack_received(at(111), &f).unwrap();
    assert!(again.newly_acked.is_empty() && again.lost.is_empty() && !again.rtt_updated);
}

#[test]
fn rtt_sample_needs_the_largest_newly_acked() {
    let mut d = sent(3);
    d.on_ack_received(at(50), &frame(ms(0), &[(1, 2)])).unwrap();
    assert_eq!(d.rtt().latest_rtt(), ms(48));
    // A late ACK newly acking only pn 0 (its largest, 2, is old): no sample (§5.1).
    let out = d.on_ack_received(at(80), &frame(ms(0), &[(0, 2)])).unwrap();
    assert_eq!(out.newly_acked.len(), 1);
    assert!(!out.rtt_updated);
    assert_eq!(d.rtt().latest_rtt(), ms(48));
}

#[test]
fn non_ack_eliciting_packets_are_not_in_flight() {
    let mut d = LossDetector::default();
    d.on_packet_sent(at(0), 0, Bytes::new(40), false, 0);
    assert_eq!(d.bytes_in_flight(), Bytes::ZERO);
    assert_eq!(d.poll_timeout(), None);
    d.on_packet_sent(at(1), 1, MTU, true, 0);
    assert_eq!(d.bytes_in_flight(), MTU);
    // ACK of the ACK-only packet alone: it is acked, but no RTT sample is taken
    // because no newly acked packet is ack-eliciting (§5.1).
    let out = d.on_ack_received(at(30), &frame(ms(0), &[(0, 0)])).unwrap();
    assert_eq!(out.newly_acked.len(), 1);
    assert!(!out.rtt_updated);
    assert_eq!(d.bytes_in_flight(), MTU);
}

#[test]
fn ack_of_an_unsent_packet_is_an_error_and_changes_nothing() {
    let mut d = sent(2);
    let err = d
        .on_ack_received(at(10), &frame(ms(0), &[(5, 5)]))
        .unwrap_err();
    assert_eq!(
        err,
        AckError::UnsentPacketAcknowledged {
            largest_acknowledged: 5,
            largest_sent: Some(1)
        }
    );
    assert_eq!(d.largest_acked(), None);
    assert_eq!(d.bytes_in_flight(), Bytes::new(2400));
}

#[test]
fn poll_timeout_is_never_in_the_past() {
    let mut d = LossDetector::default();
    d.on_packet_sent(at(0), 0, MTU, true, 0);
    // Sample 10 ms: smoothed 10, rttvar 5: PTO = 10 + 20 + 25 = 55 ms.
    d.on_ack_received(at(10), &frame(ms(0), &[(0, 0)])).unwrap();
    d.on_packet_sent(at(1000), 1, MTU, true, 0);
    assert_eq!(d.poll_timeout(), Some(at(1055)));
    // The driver comes back late, at 2 s, with a stale ACK that acks nothing
    // new: the PTO deadline (1055) has passed, so it is reported as now.
    let out = d
        .on_ack_received(at(2000), &frame(ms(0), &[(0, 0)]))
        .unwrap();
    assert!(out.newly_acked.is_empty());
    assert_eq!(d.poll_timeout(), Some(at(2000)));
    assert_eq!(d.on_timeout(at(2000)), TimeoutOutcome::Probe { count: 2 });
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "reused or not increasing")]
fn reused_packet_number_panics_in_debug() {
    let mut d = sent(3);
    d.on_packet_sent(at(10), 2, MTU, true, 0);
}

#[test]
fn next_packet_number_counts_up() {
    let mut d = LossDetector::default();
    assert_eq!(d.next_packet_number(), 0);
    d.on_packet_sent(at(0), 0, MTU, true, 0);
    d.on_packet_sent(at(0), 5, MTU, true, 0);
    assert_eq!(d.next_packet_number(), 6);
}

// ---- property test -------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Send { size: u64, ack_eliciting: bool },
    Deliver(usize),
    Drop(usize),
    SendAck,
    DeliverAck(usize),
    DropAck(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (100u64..1500, prop::bool::weighted(0.9))
            .prop_map(|(size, ack_eliciting)| Op::Send { size, ack_eliciting }),
        4 => any::<usize>().prop_map(Op::Deliver),
        1 => any::<usize>().prop_map(Op::Drop),
        2 => Just(Op::SendAck),
        2 => any::<usize>().prop_map(Op::DeliverAck),
        1 => any::<usize>().prop_map(Op::DropAck),
        3 => (0u64..400).prop_map(Op::Advance),
    ]
}

/// Sender, receiver and a lossy, reordering network in both directions, with
/// a reference model of which packets are acked or lost.
struct Harness {
    now: Instant,
    det: LossDetector,
    rx: AckTracker,
    data_net: Vec<PacketNumber>,
    ack_net: Vec<AckFrame>,
    sent: BTreeMap<PacketNumber, (Bytes, bool, Instant)>,
    acked: BTreeSet<PacketNumber>,
    lost: BTreeSet<PacketNumber>,
}

impl Harness {
    fn new(max_ranges: usize) -> Self {
        Self {
            now: Instant::ZERO,
            det: LossDetector::default(),
            rx: AckTracker::new(max_ranges),
            data_net: Vec::new(),
            ack_net: Vec::new(),
            sent: BTreeMap::new(),
            acked: BTreeSet::new(),
            lost: BTreeSet::new(),
        }
    }

    fn send(&mut self, size: Bytes, ack_eliciting: bool) {
        let pn = self.det.next_packet_number();
        self.det
            .on_packet_sent(self.now, pn, size, ack_eliciting, pn);
        self.sent.insert(pn, (size, ack_eliciting, self.now));
        self.data_net.push(pn);
    }

    fn record_lost(&mut self, lost: &[LostPacket]) -> Result<(), TestCaseError> {
        for l in lost {
            let pn = l.packet.packet_number;
            prop_assert!(!self.acked.contains(&pn), "pn {} lost after acked", pn);
            prop_assert!(self.lost.insert(pn), "pn {} lost twice", pn);
            prop_assert_eq!(l.detection_time, self.now - self.sent[&pn].2);
        }
        Ok(())
    }

    fn on_ack(&mut self, f: &AckFrame) -> Result<(), TestCaseError> {
        let out = self
            .det
            .on_ack_received(self.now, f)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for p in &out.newly_acked {
            let pn = p.packet_number;
            prop_assert!(f.acknowledges(pn));
            prop_assert!(!self.lost.contains(&pn), "pn {} acked after lost", pn);
            prop_assert!(self.acked.insert(pn), "pn {} acked twice", pn);
            prop_assert_eq!(p.token, pn);
        }
        self.record_lost(&out.lost)
    }

    /// Fires every timer due up to `until`, sending the probes asked for.
    fn advance(&mut self, until: Instant) -> Result<(), TestCaseError> {
        while let Some(t) = self.det.poll_timeout().filter(|&t| t <= until) {
            self.now = self.now.max(t);
            match self.det.on_timeout(self.now) {
                TimeoutOutcome::NotDue => prop_assert!(false, "timer at {:?} not due", t),
                TimeoutOutcome::Lost(lost) => self.record_lost(&lost)?,
                TimeoutOutcome::Probe { count } => {
                    for _ in 0..count {
                        self.send(MTU, true);
                    }
                }
            }
        }
        self.now = self.now.max(until);
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let outstanding: Vec<PacketNumber> = self
            .sent
            .keys()
            .copied()
            .filter(|pn| !self.acked.contains(pn) && !self.lost.contains(pn))
            .collect();
        let det_outstanding: Vec<PacketNumber> =
            self.det.outstanding().map(|p| p.packet_number).collect();
        prop_assert_eq!(&det_outstanding, &outstanding);
        let in_flight: Bytes = outstanding
            .iter()
            .filter(|pn| self.sent[pn].1)
            .map(|pn| self.sent[pn].0)
            .sum();
        prop_assert_eq!(self.det.bytes_in_flight(), in_flight);
        if let Some(t) = self.det.poll_timeout() {
            prop_assert!(t >= self.now, "timer {:?} before now {:?}", t, self.now);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// No packet is both acked and lost or reported twice, in-flight bytes are
    /// the sum of the outstanding ack-eliciting sizes at every step, and once
    /// the network is drained every sent packet has ended acked or lost.
    #[test]
    fn every_packet_ends_acked_or_lost_exactly_once(
        max_ranges in 1usize..6,
        ops in prop::collection::vec(op(), 1..150),
    ) {
        let mut h = Harness::new(max_ranges);
        for op in ops {
            match op {
                Op::Send { size, ack_eliciting } => h.send(Bytes::new(size), ack_eliciting),
                Op::Deliver(i) if !h.data_net.is_empty() => {
                    let pn = h.data_net.remove(i % h.data_net.len());
                    h.rx.on_packet_received(h.now, pn);
                }
                Op::Drop(i) if !h.data_net.is_empty() => {
                    h.data_net.remove(i % h.data_net.len());
                }
                Op::SendAck => {
                    if let Some(f) = h.rx.build_ack(h.now) {
                        h.ack_net.push(f);
                    }
                }
                Op::DeliverAck(i) if !h.ack_net.is_empty() => {
                    let f = h.ack_net.remove(i % h.ack_net.len());
                    h.on_ack(&f)?;
                }
                Op::DropAck(i) if !h.ack_net.is_empty() => {
                    h.ack_net.remove(i % h.ack_net.len());
                }
                Op::Advance(d) => {
                    let until = h.now + ms(d);
                    h.advance(until)?;
                }
                _ => {}
            }
            h.check()?;
        }

        // Drain: no more losses; deliver everything, ACK, let timers fire.
        h.ack_net.clear();
        for _ in 0..200 {
            for pn in std::mem::take(&mut h.data_net) {
                h.rx.on_packet_received(h.now, pn);
            }
            if let Some(f) = h.rx.build_ack(h.now) {
                h.on_ack(&f)?;
            }
            h.check()?;
            if h.det.outstanding().next().is_none() {
                break;
            }
            match h.det.poll_timeout() {
                Some(t) => h.advance(t)?,
                // Only ACK-only packets above the largest acked remain: a
                // real sender would send data; send one ack-eliciting packet.
                None => h.send(MTU, true),
            }
            h.check()?;
        }
        prop_assert!(h.det.outstanding().next().is_none(), "network drained but packets outstanding");
        prop_assert_eq!(h.det.bytes_in_flight(), Bytes::ZERO);
        prop_assert_eq!(h.acked.len() + h.lost.len(), h.sent.len());
        prop_assert_eq!(h.det.poll_timeout(), None);
        let s = h.det.stats();
        prop_assert_eq!(s.packets_sent as usize, h.sent.len());
        prop_assert_eq!(s.packets_acked as usize, h.acked.len());
        prop_assert_eq!(s.packets_lost as usize, h.lost.len());
    }
}
