//! Whole-controller tests of Copa's mechanisms, driven through the trait.

#![allow(
    clippy::float_cmp,
    reason = "δ, v and unchanged cwnds are compared exactly: they are powers of two or copies"
)]

use std::collections::VecDeque;

use super::*;
use crate::packet::{FeedbackReport, PacketResult, SentPacket};

const MSS: Bytes = Bytes::new(1200);

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}
fn at(v: u64) -> Instant {
    Instant::from_millis(v)
}

fn config(mode: CopaMode) -> CopaConfig {
    CopaConfig {
        start_bitrate: Bitrate::mbps(1),
        min_bitrate: Bitrate::kbps(10),
        max_bitrate: Bitrate::mbps(100),
        mode,
        ..CopaConfig::default()
    }
}

/// Sends one MSS packet every `gap` and acknowledges each packet, alone in its
/// report, `rtt(send_time)` after it was sent. The receiver clock is offset
/// by 1000 s, and reports are built 5 ms after the arrival, to prove that only
/// differences of receiver times count.
struct Harness {
    copa: Copa,
    now: Instant,
    seq: u64,
    /// (packet, time its ACK reaches the sender).
    in_flight: VecDeque<(SentPacket, Instant)>,
}

const RX_OFFSET: Duration = Duration::from_secs(1000);
const HOLD: Duration = Duration::from_millis(5);

impl Harness {
    fn new(mode: CopaMode) -> Self {
        Harness {
            copa: Copa::new(Instant::ZERO, config(mode)),
            now: Instant::ZERO,
            seq: 0,
            in_flight: VecDeque::new(),
        }
    }

    fn report_for(p: &SentPacket, ack_at: Instant, lost: bool) -> FeedbackReport {
        // The ACK reaches the sender at `ack_at`; the report was built HOLD
        // after the arrival, so the packet arrived at ack_at − HOLD − (return
        // path) in sender time; with the return path folded into `rtt` we put
        // the arrival HOLD before the report.
        let report_time = ack_at + RX_OFFSET;
        FeedbackReport {
            report_time,
            packets: vec![PacketResult {
                sent: *p,
                arrival: if lost { None } else { Some(report_time - HOLD) },
            }],
        }
    }

    /// Run until `end`, sending every `gap`, with RTT `rtt(send_time)`.
    fn run(&mut self, end: Instant, gap: Duration, rtt: impl Fn(Instant) -> Duration) {
        while self.now < end {
            self.now += gap;
            let p = SentPacket {
                seq: self.seq,
                size: MSS,
                send_time: self.now,
                ..Default::default()
            };
            self.seq += 1;
            self.copa.on_packet_sent(self.now, &p);
            // The report is delivered HOLD after the ACK would have been.
            self.in_flight
                .push_back((p, self.now + rtt(self.now) + HOLD));
            while let Some(&(p, ack_at)) = self.in_flight.front() {
                if ack_at > self.now {
                    break;
                }
                self.in_flight.pop_front();
                let r = Self::report_for(&p, ack_at, false);
                self.copa.on_feedback(ack_at, &r);
            }
        }
    }

    /// Send one packet now and have it acknowledged after `rtt`.
    fn one(&mut self, rtt: Duration, lost: bool) {
        let p = SentPacket {
            seq: self.seq,
            size: MSS,
            send_time: self.now,
            ..Default::default()
        };
        self.seq += 1;
        self.copa.on_packet_sent(self.now, &p);
        let ack_at = self.now + rtt + HOLD;
        self.now = ack_at;
        let r = Self::report_for(&p, ack_at, lost);
        self.copa.on_feedback(ack_at, &r);
    }

    fn state(&self) -> CopaState {
        self.copa.state()
    }
}

#[test]
fn rtt_sample_removes_receiver_hold_time() {
    let mut h = Harness::new(CopaMode::Default);
    h.one(ms(40), false);
    // Reported 45 ms after sending, held 5 ms at the receiver: RTT 40 ms.
    assert_eq!(h.state().srtt, Some(ms(40)));
    assert_eq!(h.state().rtt_min, Some(ms(40)));
}

#[test]
fn standing_rtt_is_min_over_half_srtt() {
    let mut h = Harness::new(CopaMode::Default);
    // RTT 100 ms (srtt/2 = 50 ms), except one packet, sent at 1000 ms, with
    // 60 ms. Its ACK queues behind the one sent at 999 ms (FIFO), so Copa
    // sees it at 1099 ms.
    let rtt = |t: Instant| if t == at(1000) { ms(60) } else { ms(100) };
    h.run(at(1105), ms(1), rtt);
    assert_eq!(h.state().rtt_standing, Some(ms(60)));
    // 36 ms later it is still inside srtt/2 (srtt ≈ 95 ms after the dip).
    h.run(at(1140), ms(1), rtt);
    assert_eq!(h.state().rtt_standing, Some(ms(60)));
    // 66 ms later it has left the window; RTTmin (10 s) keeps it.
    h.run(at(1170), ms(1), rtt);
    let s = h.state();
    assert_eq!(s.rtt_standing, Some(ms(100)));
    assert_eq!(s.rtt_min, Some(ms(60)));
    assert_eq!(s.queueing_delay, Some(ms(40)));
}

#[test]
fn queueing_delay_and_target_rate_from_standing_and_min() {
    let mut h = Harness::new(CopaMode::Default);
    h.run(at(200), ms(1), |_| ms(40));
    let s = h.state();
    assert_eq!(s.rtt_standing, Some(ms(40)));
    assert_eq!(s.queueing_delay, Some(Duration::ZERO));
    assert!(s.target_rate_pps.is_infinite());
    h.run(
        at(700),
        ms(1),
        |t| if t > at(200) { ms(80) } else { ms(40) },
    );
    let s = h.state();
    assert_eq!(s.rtt_standing, Some(ms(80)));
    assert_eq!(s.rtt_min, Some(ms(40)));
    // dq = RTTstanding − RTTmin = 40 ms.
    assert_eq!(s.queueing_delay, Some(ms(40)));
    // λt = 1/(δ·dq) = 1/(0.5 · 0.04 s) = 50 packets/s.
    assert!(
        (s.target_rate_pps - 50.0).abs() < 1e-9,
        "{}",
        s.target_rate_pps
    );
}

#[test]
fn rtt_min_forgets_after_ten_seconds() {
    let mut h = Harness::new(CopaMode::Default);
    h.run(at(1000), ms(5), |_| ms(30));
    h.run(at(10_500), ms(5), |_| ms(50));
    assert_eq!(h.state().rtt_min, Some(ms(30)));
    h.run(at(11_200), ms(5), |_| ms(50));
    assert_eq!(h.state().rtt_min, Some(ms(50)));
}

#[test]
fn target_rate_formula() {
    assert!((target_rate_pps(0.5, ms(20)) - 100.0).abs() < 1e-9);
    assert!((target_rate_pps(0.25, ms(20)) - 200.0).abs() < 1e-9);
    assert!(target_rate_pps(0.5, Duration::ZERO).is_infinite());
}

#[test]
fn slow_start_doubles_once_per_rtt_while_queue_is_empty() {
    let mut h = Harness::new(CopaMode::Default);
    h.one(ms(40), false);
    // cwnd = start_bitrate × RTT = 1 Mbps × 40 ms = 5000 B = 4.1667 packets.
    let c0 = h.state().cwnd_packets;
    assert!((c0 - 5000.0 / 1200.0).abs() < 1e-9, "{c0}");
    // ACKs every ms; srtt = 40 ms, so one doubling per 40 ms.
    h.run(h.now + ms(39), ms(1), |_| ms(40));
    assert!((h.state().cwnd_packets - c0).abs() < 1e-9);
    h.run(h.now + ms(42), ms(1), |_| ms(40));
    assert!((h.state().cwnd_packets - 2.0 * c0).abs() < 1e-9);
    h.run(h.now + ms(40), ms(1), |_| ms(40));
    assert!((h.state().cwnd_packets - 4.0 * c0).abs() < 1e-9);
    assert!(h.state().slow_start);
}

#[test]
fn slow_start_ends_when_rate_exceeds_target() {
    let mut h = Harness::new(CopaMode::Default);
    h.run(at(300), ms(1), |_| ms(40));
    assert!(h.state().slow_start);
    // A standing queue of 40 ms: λt = 50 pkt/s, λ = cwnd/RTTstanding is far
    // above it (cwnd is tens of packets), so slow start ends.
    h.run(
        at(600),
        ms(1),
        |t| if t > at(300) { ms(80) } else { ms(40) },
    );
    let s = h.state();
    assert!(!s.slow_start);
    assert_eq!(h.copa.estimate().state, "default");
}

/// Drive out of slow start into a steady 20 ms queue (RTTmin 40 ms, standing
/// 60 ms): λt = 1/(0.5·0.02) = 100 packets/s.
fn steady_queue() -> Harness {
    let mut h = Harness::new(CopaMode::Default);
    h.run(at(200), ms(1), |_| ms(40));
    h.run(
        at(800),
        ms(1),
        |t| if t > at(200) { ms(60) } else { ms(40) },
    );
    assert!(!h.state().slow_start);
    assert_eq!(h.state().queueing_delay, Some(ms(20)));
    h
}

#[test]
fn cwnd_steps_by_v_over_delta_cwnd_toward_target() {
    let mut h = steady_queue();
    let s = h.state();
    let lambda = s.cwnd_packets / 0.060;
    let expect = if lambda <= 100.0 {
        s.cwnd_packets + s.velocity / (0.5 * s.cwnd_packets)
    } else {
        s.cwnd_packets - s.velocity / (0.5 * s.cwnd_packets)
    };
    h.one(ms(60), false);
    let got = h.state().cwnd_packets;
    assert!((got - expect).abs() < 1e-9, "got {got}, expected {expect}");
}

#[test]
fn cwnd_converges_to_target_rate() {
    let mut h = steady_queue();
    // Keep the queue at 20 ms for 10 s: cwnd/RTTstanding must settle at
    // λt = 100 pkt/s, i.e. cwnd ≈ 6 packets.
    h.run(
        at(10_000),
        ms(2),
        |t| if t > at(200) { ms(60) } else { ms(40) },
    );
    let s = h.state();
    let rate = s.cwnd_packets / 0.060;
    assert!((rate - 100.0).abs() < 15.0, "rate {rate} pkt/s");
    // target_bitrate = cwnd / RTTstanding.
    let expect = Bitrate::from_bps_f64(s.cwnd_packets * 1200.0 * 8.0 / 0.060);
    let got = h.copa.target_bitrate();
    assert!(
        (got.as_bps_f64() - expect.as_bps_f64()).abs() < 8.0 * 1200.0 / 0.06 * 1e-3 + 10.0,
        "{got} vs {expect}"
    );
    // Pacing at 2 · cwnd / RTTstanding.
    let pacing = h.copa.send_budget().pacing_rate;
    assert!((pacing.as_bps_f64() - 2.0 * got.as_bps_f64()).abs() < 10.0);
    assert_eq!(h.copa.send_budget().cwnd, Some(h.copa.window_budget()));
    // The harness's receiver holds each packet 5 ms: the enforced window is
    // cwnd + (cwnd / RTTstanding) × 5 ms = cwnd × (1 + 5/60).
    let expect = h.copa.cwnd().as_f64() * (1.0 + 5.0 / 60.0);
    let budget = h.copa.window_budget().as_f64();
    assert!((budget - expect).abs() <= 2.0, "{budget} vs {expect}");
}

#[test]
fn velocity_doubles_when_direction_holds_and_resets_on_change() {
    let mut h = steady_queue();
    // Queue vanishes: λt = ∞, cwnd rises every ACK; after three windows up
    // the velocity doubles every window.
    let t0 = h.now;
    let mut max_v: f64 = 1.0;
    for k in 1..=12 {
        h.run(
            t0 + ms(60 * k),
            ms(2),
            |t| if t > t0 { ms(40) } else { ms(60) },
        );
        max_v = max_v.max(h.state().velocity);
    }
    assert!(max_v >= 8.0, "velocity only reached {max_v}");
    assert_eq!(h.state().direction, Some(Direction::Up));
    // A big queue: cwnd turns down, velocity resets to 1 on the first
    // window that went down.
    let t1 = h.now;
    let mut saw_reset = false;
    for k in 1..=10 {
        h.run(t1 + ms(100 * k), ms(2), |t| {
            if t > t1 {
                ms(200)
            } else {
                ms(40)
            }
        });
        let s = h.state();
        if s.direction == Some(Direction::Down) {
            saw_reset |= s.velocity == 1.0;
            break;
        }
    }
    assert!(saw_reset, "velocity did not reset on a direction change");
}

#[test]
fn app_limited_flow_overestimates_to_max() {
    // No queue ever builds (the sender is far below capacity): Copa's window
    // keeps growing and the target reaches max_bitrate (Camel §5.2 observes
    // this overestimation).
    let mut h = Harness::new(CopaMode::Default);
    h.run(at(5_000), ms(20), |_| ms(40));
    assert_eq!(h.copa.target_bitrate(), Bitrate::mbps(100));
    // cwnd is capped at 2 × max_bitrate × RTTstanding.
    let cap = Bitrate::mbps(200) * ms(40);
    assert!(h.copa.cwnd() <= cap + MSS);
}

#[test]
fn loss_is_ignored_in_default_mode() {
    let mut h = steady_queue();
    let before = h.state();
    // A report with only a lost packet.
    h.one(ms(60), true);
    let after = h.state();
    assert_eq!(before.cwnd_packets, after.cwnd_packets);
    assert_eq!(after.delta, 0.5);
    assert_eq!(h.copa.estimate().loss_rate, Some(1.0));
}

#[test]
fn duplicate_reports_count_once() {
    let mut h = steady_queue();
    let p = SentPacket {
        seq: h.seq,
        size: MSS,
        send_time: h.now,
        ..Default::default()
    };
    h.seq += 1;
    h.copa.on_packet_sent(h.now, &p);
    let ack_at = h.now + ms(65);
    let r = Harness::report_for(&p, ack_at, false);
    h.copa.on_feedback(ack_at, &r);
    let once = h.state().cwnd_packets;
    h.copa.on_feedback(ack_at + ms(1), &r);
    assert_eq!(h.state().cwnd_packets, once);
}

/// RTT 40 ms for 200 ms, then a standing queue of 60 ms that never empties.
fn buffer_filler(mode: CopaMode, until: Instant) -> Harness {
    let mut h = Harness::new(mode);
    h.run(at(200), ms(1), |_| ms(40));
    h.run(until, ms(1), |t| if t > at(200) { ms(100) } else { ms(40) });
    h
}

#[test]
fn competitive_mode_detects_a_queue_that_never_empties() {
    let h = buffer_filler(CopaMode::Competitive, at(2_000));
    let s = h.state();
    assert_eq!(s.mode, OperatingMode::Competitive);
    assert!(s.delta < 0.5, "1/δ must have grown: δ = {}", s.delta);
    assert_eq!(h.copa.estimate().state, "competitive");
    // The same path in default mode never switches.
    let d = buffer_filler(CopaMode::Default, at(2_000));
    assert_eq!(d.state().mode, OperatingMode::Default);
    assert_eq!(d.state().delta, 0.5);
    // Lower δ ⇒ higher target rate for the same queue: competitive Copa sends more.
    assert!(h.copa.target_bitrate() > d.copa.target_bitrate());
}

#[test]
fn competitive_delta_additive_increase_per_rtt_and_halving_on_loss() {
    let mut h = buffer_filler(CopaMode::Competitive, at(2_000));
    let inv0 = 1.0 / h.state().delta;
    // One more second ≈ 10 RTTs of 100 ms: 1/δ grows by about 1 per RTT.
    h.run(
        at(3_000),
        ms(1),
        |t| if t > at(200) { ms(100) } else { ms(40) },
    );
    let inv1 = 1.0 / h.state().delta;
    let windows = inv1 - inv0;
    assert!((8.0..=12.0).contains(&windows), "1/δ grew by {windows}");
    // Drain the in-flight ACKs, then a loss halves 1/δ.
    h.in_flight.clear();
    let before = 1.0 / h.state().delta;
    h.one(ms(100), true);
    let after = 1.0 / h.state().delta;
    assert!(
        (after - (before / 2.0).max(2.0)).abs() < 1e-9,
        "{before} → {after}"
    );
}

#[test]
fn competitive_returns_to_default_when_queue_empties() {
    let mut h = buffer_filler(CopaMode::Competitive, at(2_000));
    assert_eq!(h.state().mode, OperatingMode::Competitive);
    h.run(at(2_500), ms(1), |t| {
        if t > at(2_000) {
            ms(40)
        } else {
            ms(100)
        }
    });
    let s = h.state();
    assert_eq!(s.mode, OperatingMode::Default);
    assert_eq!(s.delta, 0.5);
}

#[test]
fn bounds_before_and_after_feedback() {
    let cfg = CopaConfig {
        start_bitrate: Bitrate::kbps(500),
        min_bitrate: Bitrate::kbps(100),
        max_bitrate: Bitrate::mbps(2),
        ..CopaConfig::default()
    };
    let c = Copa::new(Instant::ZERO, cfg);
    assert_eq!(c.target_bitrate(), Bitrate::kbps(500));
    assert_eq!(c.send_budget().pacing_rate, Bitrate::mbps(1));
    assert_eq!(c.name(), "copa");
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn mode_names_parse() {
    assert_eq!("default".parse::<CopaMode>(), Ok(CopaMode::Default));
    assert_eq!("competitive".parse::<CopaMode>(), Ok(CopaMode::Competitive));
    assert!("fast".parse::<CopaMode>().is_err());
    assert_eq!(CopaMode::Competitive.to_string(), "competitive");
}

#[test]
fn literal_window_and_srtt_rate_options() {
    let mut cfg = config(CopaMode::Default);
    cfg.compensate_feedback_hold = false;
    cfg.rate_rtt = RateRtt::Smoothed;
    let mut h = steady_queue();
    h.copa = Copa::new(Instant::ZERO, cfg);
    h.now = Instant::ZERO;
    h.in_flight.clear();
    h.run(
        at(2_000),
        ms(1),
        |t| if t > at(200) { ms(60) } else { ms(40) },
    );
    assert_eq!(h.copa.send_budget().cwnd, Some(h.copa.cwnd()));
    // Target = cwnd / srtt; srtt has converged to 60 ms.
    let srtt = h.state().srtt.unwrap();
    let expect = h.copa.cwnd() / srtt;
    assert_eq!(h.copa.target_bitrate(), expect);
}
