//! Unit tests of BBR's mechanisms: each drives the piece it names and would
//! fail if that piece were wrong.

use std::collections::VecDeque;

use super::delivery_rate::{AckOutcome, DeliveryRateEstimator, RateSample};
use super::*;
use crate::media::frame::{FrameInfo, FrameType};
use crate::packet::{PacketResult, SentPacket};

const MSS: u64 = 1248;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn sent(seq: u64, size: u64, t: Instant) -> SentPacket {
    SentPacket {
        seq,
        size: Bytes::new(size),
        send_time: t,
        ..Default::default()
    }
}

fn report(t: Instant, pkts: &[(SentPacket, bool)]) -> FeedbackReport {
    FeedbackReport {
        report_time: t,
        packets: pkts
            .iter()
            .map(|&(s, ok)| PacketResult {
                sent: s,
                arrival: ok.then_some(t),
            })
            .collect(),
    }
}

// ----------------------------------------------------------------------
// A small bottleneck path for the state-machine tests.

/// Where the data comes from.
#[derive(Clone, Copy)]
enum Source {
    /// Always something to send (bulk transfer; never app-limited).
    Unlimited,
    /// A 30 fps encoder producing `target × ratio` (frames through `on_frame`).
    Encoder { ratio: f64 },
}

struct Path {
    bbr: Bbr,
    now: Instant,
    bw: Bitrate,
    one_way: Duration,
    queue_limit: Duration,
    source: Source,
    next_seq: u64,
    next_send: Instant,
    link_free: Instant,
    next_frame: Instant,
    frame_id: u64,
    pending: VecDeque<u64>,
    /// (arrival at receiver or None if dropped, packet), in send order.
    in_network: VecDeque<(Option<Instant>, SentPacket)>,
    feedback_every: Duration,
    next_feedback: Instant,
    feedback_in_transit: VecDeque<(Instant, FeedbackReport)>,
    /// (time, state, cwnd, btlbw) after every feedback.
    trace: Vec<(Instant, BbrState, Bytes, Bitrate)>,
    drops: u64,
}

impl Path {
    fn new(config: BbrConfig, bw: Bitrate, rtt: Duration, source: Source) -> Self {
        let now = Instant::from_secs(1);
        Path {
            bbr: Bbr::new(now, config),
            now,
            bw,
            one_way: rtt / 2,
            queue_limit: ms(200),
            source,
            next_seq: 0,
            next_send: now,
            link_free: now,
            next_frame: now,
            frame_id: 0,
            pending: VecDeque::new(),
            in_network: VecDeque::new(),
            feedback_every: ms(5),
            next_feedback: now,
            feedback_in_transit: VecDeque::new(),
            trace: Vec::new(),
            drops: 0,
        }
    }

    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        let tick = Duration::from_micros(100);
        while self.now < end {
            self.now += tick;
            self.step();
        }
    }

    fn step(&mut self) {
        let now = self.now;
        while self
            .feedback_in_transit
            .front()
            .is_some_and(|(t, _)| *t <= now)
        {
            if let Some((_, r)) = self.feedback_in_transit.pop_front() {
                self.bbr.on_feedback(now, &r);
                self.trace
                    .push((now, self.bbr.state(), self.bbr.cwnd(), self.bbr.btlbw()));
            }
        }
        if let Source::Encoder { ratio } = self.source {
            if now >= self.next_frame {
                self.next_frame += ms(33);
                let bytes = (self.bbr.target_bitrate() * ms(33)).mul_f64(ratio);
                let n = bytes.get().div_ceil(MSS).max(1);
                for _ in 0..n {
                    self.pending.push_back(self.frame_id);
                }
                self.bbr.on_frame(
                    now,
                    &FrameInfo {
                        frame_id: self.frame_id,
                        capture_time: now,
                        size: bytes,
                        frame_type: FrameType::Delta,
                        num_packets: n as u32,
                        target_bitrate: self.bbr.target_bitrate(),
                    },
                );
                self.frame_id += 1;
            }
        }
        loop {
            let has_data = match self.source {
                Source::Unlimited => true,
                Source::Encoder { .. } => !self.pending.is_empty(),
            };
            let budget = self.bbr.send_budget();
            let window_open = budget.cwnd.is_none_or(|c| self.bbr.bytes_in_flight() < c);
            if !has_data || !window_open || self.next_send > now {
                break;
            }
            let frame_id = self.pending.pop_front();
            let size = Bytes::new(MSS);
            let pkt = SentPacket {
                seq: self.next_seq,
                size,
                send_time: now,
                frame_id,
                bytes_in_flight: self.bbr.bytes_in_flight() + size,
                ..Default::default()
            };
            self.next_seq += 1;
            self.next_send = self.next_send.max(now - ms(1)) + size / budget.pacing_rate;
            let start = self.link_free.max(now);
            let arrival = if start.saturating_duration_since(now) > self.queue_limit {
                self.drops += 1;
                None
            } else {
                self.link_free = start + size / self.bw;
                Some(self.link_free + self.one_way)
            };
            self.in_network.push_back((arrival, pkt));
            self.bbr.on_packet_sent(now, &pkt);
        }
        if now >= self.next_feedback {
            self.next_feedback += self.feedback_every;
            // Report every packet that arrived, and every dropped packet sent
            // before the newest arrival.
            let mut r = FeedbackReport {
                report_time: now,
                packets: Vec::new(),
            };
            while let Some(&(arr, pkt)) = self.in_network.front() {
                match arr {
                    Some(a) if a <= now => {}
                    None if self
                        .in_network
                        .iter()
                        .any(|(a, _)| a.is_some_and(|a| a <= now)) => {}
                    _ => break,
                }
                self.in_network.pop_front();
                r.packets.push(PacketResult {
                    sent: pkt,
                    arrival: arr,
                });
            }
            if !r.packets.is_empty() {
                self.feedback_in_transit.push_back((now + self.one_way, r));
            }
        }
    }

    fn states(&self) -> Vec<BbrState> {
        let mut v: Vec<BbrState> = Vec::new();
        for &(_, s, _, _) in &self.trace {
            if v.last() != Some(&s) {
                v.push(s);
            }
        }
        v
    }
}

// ----------------------------------------------------------------------
// Delivery-rate estimation (draft-cheng)

#[test]
fn delivery_rate_hand_worked_example() {
    let mut e = DeliveryRateEstimator::new();
    let t = |x| Instant::from_millis(x);
    let p: Vec<SentPacket> = (1..=4).map(|i| sent(i, 1000, t(i - 1))).collect();
    for x in &p {
        e.on_packet_sent(x.send_time, x);
    }
    assert_eq!(e.inflight(), Bytes::new(4000));
    // At 50 ms P1 and P2 are acked. Both were sent with delivered = 0 and
    // delivered_time = first_sent_time = 0 ms, so P1 starts the sample:
    // send_elapsed = 0, ack_elapsed = 50 ms, delivered = 2000 B → 320 kbps.
    let out = e.on_feedback(t(50), &report(t(50), &[(p[0], true), (p[1], true)]), None);
    let rs = out.sample.expect("a sample");
    assert_eq!(rs.delivered, Bytes::new(2000));
    assert_eq!(rs.interval, ms(50));
    assert_eq!(rs.delivery_rate, Bitrate::kbps(320));
    assert!(!rs.is_app_limited);
    assert_eq!(out.newly_acked, Bytes::new(2000));
    assert_eq!(out.prior_inflight, Bytes::new(4000));
    // P5 sent at 55 ms carries delivered = 2000, delivered_time = 50 ms,
    // first_sent_time = 0 ms (P1's send time, set when P1 was acked).
    let p5 = sent(5, 1000, t(55));
    e.on_packet_sent(t(55), &p5);
    // At 100 ms P3, P4, P5 are acked; P5 has the largest P.delivered:
    // send_elapsed = 55 − 0 = 55 ms, ack_elapsed = 100 − 50 = 50 ms,
    // interval = 55 ms, delivered = 5000 − 2000 = 3000 B → 436 363 bps.
    let out = e.on_feedback(
        t(100),
        &report(t(100), &[(p[2], true), (p[3], true), (p5, true)]),
        None,
    );
    let rs = out.sample.expect("a sample");
    assert_eq!(rs.interval, ms(55));
    assert_eq!(rs.delivered, Bytes::new(3000));
    assert_eq!(rs.delivery_rate, Bitrate::bps(436_363));
    assert_eq!(out.newest_prior_delivered, Some(Bytes::new(2000)));
    assert_eq!(e.delivered(), Bytes::new(5000));
    assert_eq!(e.inflight(), Bytes::ZERO);
}

#[test]
fn delivery_rate_rejects_interval_below_min_rtt_and_counts_losses() {
    let mut e = DeliveryRateEstimator::new();
    let t = Instant::from_millis;
    let a = sent(1, 1000, t(0));
    let b = sent(2, 1000, t(1));
    e.on_packet_sent(t(0), &a);
    e.on_packet_sent(t(1), &b);
    // 30 ms interval against a 40 ms min RTT: no sample; the loss is counted
    // and leaves flight without being delivered.
    let out = e.on_feedback(
        t(30),
        &report(t(30), &[(a, true), (b, false)]),
        Some(ms(40)),
    );
    assert_eq!(out.sample, None);
    assert_eq!(out.newly_lost, Bytes::new(1000));
    assert_eq!(out.newly_acked, Bytes::new(1000));
    assert_eq!(e.delivered(), Bytes::new(1000));
    assert_eq!(e.inflight(), Bytes::ZERO);
}

#[test]
fn app_limited_marking_flags_samples_until_bubble_delivered() {
    let mut e = DeliveryRateEstimator::new();
    let t = Instant::from_millis;
    let a = sent(1, 1000, t(0));
    e.on_packet_sent(t(0), &a);
    // Nothing more to send: the bubble ends when delivered > 0 + 1000.
    e.mark_app_limited();
    let b = sent(2, 1000, t(10));
    e.on_packet_sent(t(10), &b);
    let out = e.on_feedback(t(50), &report(t(50), &[(a, true)]), None);
    assert!(
        !out.sample.expect("sample").is_app_limited,
        "a was sent before the mark"
    );
    // delivered = 1000 is not yet past the mark (1000): still limited.
    assert!(e.is_app_limited());
    let out = e.on_feedback(t(60), &report(t(60), &[(b, true)]), None);
    assert!(
        out.sample.expect("sample").is_app_limited,
        "b was sent app-limited"
    );
    assert!(!e.is_app_limited(), "bubble delivered: 2000 > 1000");
}

// ----------------------------------------------------------------------
// BtlBw filter and app-limited samples (§4.1.1.4, §4.1.1.5)

fn outcome(rate: Bitrate, app_limited: bool, prior_delivered: Bytes) -> AckOutcome {
    AckOutcome {
        newly_acked: Bytes::new(MSS),
        newest_prior_delivered: Some(prior_delivered),
        sample: Some(RateSample {
            delivered: Bytes::new(MSS),
            interval: ms(40),
            delivery_rate: rate,
            is_app_limited: app_limited,
        }),
        ..AckOutcome::default()
    }
}

/// Feed one sample per round (every call is a new round).
fn feed_round(b: &mut Bbr, rate: Bitrate, app_limited: bool) {
    let next = b.next_round_delivered;
    b.update_btlbw(&outcome(rate, app_limited, next));
    assert!(b.round_start);
}

#[test]
fn app_limited_samples_do_not_lower_btlbw_but_may_raise_it() {
    let now = Instant::from_secs(1);
    let mut b = Bbr::new(now, BbrConfig::default());
    feed_round(&mut b, Bitrate::kbps(1000), false);
    // 20 rounds of low app-limited samples: the 10-round window would have
    // expired the 1000 kbps if they had been admitted.
    for _ in 0..20 {
        feed_round(&mut b, Bitrate::kbps(300), true);
    }
    assert_eq!(b.btlbw(), Bitrate::kbps(1000));
    // A higher app-limited sample is admitted.
    feed_round(&mut b, Bitrate::kbps(1200), true);
    assert_eq!(b.btlbw(), Bitrate::kbps(1200));
    // Low samples that are not app-limited replace it once it ages out.
    for _ in 0..11 {
        feed_round(&mut b, Bitrate::kbps(300), false);
    }
    assert_eq!(b.btlbw(), Bitrate::kbps(300));
}

#[test]
fn btlbw_window_is_ten_rounds() {
    let now = Instant::from_secs(1);
    let mut b = Bbr::new(now, BbrConfig::default());
    feed_round(&mut b, Bitrate::kbps(900), false);
    for _ in 0..10 {
        feed_round(&mut b, Bitrate::kbps(500), false);
    }
    assert_eq!(b.btlbw(), Bitrate::kbps(900), "still inside 10 rounds");
    feed_round(&mut b, Bitrate::kbps(500), false);
    assert_eq!(b.btlbw(), Bitrate::kbps(500), "expired after 10 rounds");
}

#[test]
fn rounds_end_when_a_packet_sent_after_the_round_began_is_acked() {
    let now = Instant::from_secs(1);
    let mut b = Bbr::new(now, BbrConfig::default());
    b.rate.on_packet_sent(now, &sent(0, MSS, now));
    b.rate.on_packet_sent(now, &sent(1, MSS, now));
    let out = b.rate.on_feedback(
        now + ms(40),
        &report(now + ms(40), &[(sent(0, MSS, now), true)]),
        None,
    );
    b.update_round(&out);
    assert_eq!(b.round_count(), 1, "first ack starts round 1");
    // Packet 1 was sent before round 1 began (delivered = 0 < next_round_delivered).
    let out = b.rate.on_feedback(
        now + ms(41),
        &report(now + ms(41), &[(sent(1, MSS, now), true)]),
        None,
    );
    b.update_round(&out);
    assert_eq!(b.round_count(), 1);
    assert!(!b.round_start);
    // A packet sent now (delivered = 2 MSS ≥ next_round_delivered) ends the round.
    let t = now + ms(42);
    b.rate.on_packet_sent(t, &sent(2, MSS, t));
    let out = b.rate.on_feedback(
        t + ms(40),
        &report(t + ms(40), &[(sent(2, MSS, t), true)]),
        None,
    );
    b.update_round(&out);
    assert_eq!(b.round_count(), 2);
    assert!(b.round_start);
}

// ----------------------------------------------------------------------
// RTprop (§4.1.2)

#[test]
fn rtprop_expires_after_ten_seconds() {
    let t0 = Instant::from_secs(1);
    let mut b = Bbr::new(t0, BbrConfig::default());
    b.update_rtprop(t0, Some(ms(40)));
    b.update_rtprop(t0 + ms(5000), Some(ms(60)));
    assert_eq!(b.rtprop(), Some(ms(40)));
    assert!(!b.rtprop_expired);
    b.update_rtprop(t0 + ms(10_001), Some(ms(60)));
    assert!(b.rtprop_expired);
    assert_eq!(
        b.rtprop(),
        Some(ms(60)),
        "an expired RTprop takes any sample"
    );
}

// ----------------------------------------------------------------------
// Startup and Drain (§4.3.2, §4.3.3)

#[test]
fn startup_exits_after_three_rounds_without_25_percent_growth() {
    let now = Instant::from_secs(1);
    let mut b = Bbr::new(now, BbrConfig::default());
    let check = |b: &mut Bbr, rate: u64, app_limited: bool| {
        feed_round(b, Bitrate::kbps(rate), app_limited);
        b.check_full_pipe(&outcome(Bitrate::kbps(rate), app_limited, Bytes::ZERO));
        b.filled_pipe()
    };
    // Doubling: growing, never full.
    for r in [100, 200, 400, 800] {
        assert!(!check(&mut b, r, false));
    }
    // 900 is < 1.25 × 800: one flat round; 1100 ≥ 1.25 × 800: growth again.
    assert!(!check(&mut b, 900, false));
    assert!(!check(&mut b, 1100, false));
    assert_eq!(b.full_bw_count, 0);
    // App-limited rounds do not count toward the plateau.
    for _ in 0..5 {
        assert!(!check(&mut b, 1100, true));
    }
    assert!(!check(&mut b, 1150, false), "flat round 1");
    assert!(!check(&mut b, 1150, false), "flat round 2");
    assert!(check(&mut b, 1150, false), "flat round 3: pipe full");
}

#[test]
fn drain_ends_when_inflight_at_most_bdp() {
    let now = Instant::from_secs(1);
    let mut b = Bbr::new(now, BbrConfig::default());
    feed_round(&mut b, Bitrate::mbps(1), false);
    b.update_rtprop(now, Some(ms(40)));
    for i in 0..8 {
        b.rate.on_packet_sent(now, &sent(i, MSS, now)); // 9984 B
    }
    b.check_drain(now);
    assert_eq!(b.state(), BbrState::Startup, "pipe not full yet");
    b.filled_pipe = true;
    b.check_drain(now);
    assert!((b.pacing_gain() - 1.0 / HIGH_GAIN).abs() < 1e-12);
    // BDP = 1 Mbps × 40 ms = 5000 B; BBRInflight(1) = 5000 + 3 × 1248 = 8744 B.
    assert_eq!(b.inflight_at_gain(1.0), Bytes::new(8744));
    assert_eq!(b.state(), BbrState::Drain, "9984 B > 8744 B in flight");
    let out = b.rate.on_feedback(
        now + ms(40),
        &report(now + ms(40), &[(sent(0, MSS, now), true)]),
        None,
    );
    assert_eq!(out.newly_acked, Bytes::new(MSS));
    b.check_drain(now + ms(40));
    assert_eq!(b.state(), BbrState::ProbeBw, "8736 B ≤ 8744 B");
    assert!((b.cwnd_gain() - 2.0).abs() < 1e-12);
}

// ----------------------------------------------------------------------
// ProbeBW (§4.3.4)

#[test]
fn probe_bw_random_start_phase_is_never_the_drain_phase() {
    let now = Instant::from_secs(1);
    let mut seen = [false; 8];
    for seed in 0..200 {
        let mut b = Bbr::new(
            now,
            BbrConfig {
                seed,
                ..BbrConfig::default()
            },
        );
        b.enter_probe_bw(now);
        seen[b.cycle_index()] = true;
    }
    assert!(!seen[1], "started in the 0.75 phase");
    assert!(
        seen.iter().enumerate().all(|(i, &s)| s || i == 1),
        "{seen:?}"
    );
}

#[test]
fn gain_cycle_order_and_phase_length_is_rtprop() {
    let t0 = Instant::from_secs(1);
    let mut b = Bbr::new(t0, BbrConfig::default());
    feed_round(&mut b, Bitrate::mbps(1), false);
    b.update_rtprop(t0, Some(ms(40)));
    b.filled_pipe = true;
    b.enter_probe_bw(t0);
    // Force the cycle to start at the 1.25 phase.
    b.cycle_index = 7;
    b.advance_cycle_phase(t0);
    assert_eq!(b.cycle_index(), 0);
    let bdp125 = b.inflight_at_gain(1.25);
    let bdp1 = b.inflight_at_gain(1.0);
    let with_inflight = |inflight: Bytes| AckOutcome {
        prior_inflight: inflight,
        ..AckOutcome::default()
    };
    let mut gains = vec![b.pacing_gain()];
    let mut t = t0;
    // 1.25: full length alone is not enough, in-flight must reach 1.25 BDP.
    t += ms(41);
    b.check_cycle_phase(t, &with_inflight(bdp1));
    assert_eq!(
        b.cycle_index(),
        0,
        "1.25 phase ended without reaching 1.25·BDP"
    );
    b.check_cycle_phase(t, &with_inflight(bdp125));
    gains.push(b.pacing_gain());
    // 0.75: ends early once in-flight is down to BDP.
    b.check_cycle_phase(t + ms(1), &with_inflight(bdp1 + Bytes::new(1)));
    assert_eq!(b.cycle_index(), 1);
    t += ms(2);
    b.check_cycle_phase(t, &with_inflight(bdp1));
    gains.push(b.pacing_gain());
    // 1.0 phases: exactly one RTprop each (strictly longer than 40 ms).
    for _ in 0..6 {
        let start = t;
        b.check_cycle_phase(start + ms(40), &with_inflight(bdp125 * 2));
        assert!((b.pacing_gain() - 1.0).abs() < 1e-12);
        let before = b.cycle_index();
        b.check_cycle_phase(start + ms(40), &with_inflight(bdp125 * 2));
        assert_eq!(b.cycle_index(), before, "phase shorter than RTprop");
        t = start + ms(40) + Duration::from_nanos(1);
        b.check_cycle_phase(t, &with_inflight(Bytes::ZERO));
        gains.push(b.pacing_gain());
    }
    assert_eq!(gains, vec![1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.25]);
}

// ----------------------------------------------------------------------
// Loss recovery (§4.2.3.4)

#[test]
fn loss_enters_recovery_conserves_then_restores_cwnd() {
    let t0 = Instant::from_secs(1);
    let mut b = Bbr::new(t0, BbrConfig::default());
    let mut pkts = Vec::new();
    // The initial window: 10 packets.
    for i in 0..10 {
        let p = sent(i, MSS, t0);
        b.on_packet_sent(t0, &p);
        pkts.push(p);
    }
    let t1 = t0 + ms(40);
    b.on_feedback(t1, &report(t1, &[(pkts[0], true), (pkts[1], true)]));
    let cwnd_before = b.cwnd();
    // Packet 2 lost, 3 received.
    b.on_feedback(
        t1 + ms(1),
        &report(t1 + ms(1), &[(pkts[2], false), (pkts[3], true)]),
    );
    assert!(b.in_recovery());
    assert!(b.packet_conservation());
    // cwnd = in flight (6 packets) + acked (1), less the loss, conserved at
    // in flight + acked.
    assert_eq!(cwnd_before, Bytes::new(12 * MSS));
    assert_eq!(b.bytes_in_flight(), Bytes::new(6 * MSS));
    assert_eq!(b.cwnd(), Bytes::new(7 * MSS));
    assert!(b.cwnd() < cwnd_before);
    assert_eq!(b.prior_cwnd, cwnd_before);
    // Acks of packets sent before the loss do not end recovery.
    b.on_feedback(t1 + ms(2), &report(t1 + ms(2), &[(pkts[4], true)]));
    assert!(b.in_recovery());
    // A packet sent after recovery began is acked: recovery ends, cwnd restored.
    let t2 = t1 + ms(3);
    let p = sent(10, MSS, t2);
    b.on_packet_sent(t2, &p);
    let rest: Vec<_> = pkts[5..]
        .iter()
        .map(|&p| (p, true))
        .chain([(p, true)])
        .collect();
    b.on_feedback(t2 + ms(40), &report(t2 + ms(40), &rest));
    assert!(!b.in_recovery());
    assert!(!b.packet_conservation());
    assert!(b.cwnd() >= cwnd_before, "{} < {}", b.cwnd(), cwnd_before);
}

// ----------------------------------------------------------------------
// End to end on a path: state sequence, ProbeRTT, target

#[test]
fn bulk_flow_fills_pipe_drains_and_probes() {
    let mut p = Path::new(
        BbrConfig::default(),
        Bitrate::mbps(1),
        ms(40),
        Source::Unlimited,
    );
    p.run_for(Duration::from_secs(3));
    let states = p.states();
    assert_eq!(
        states[..3],
        [BbrState::Startup, BbrState::Drain, BbrState::ProbeBw],
        "{states:?}"
    );
    let bw = p.bbr.btlbw().as_kbps_f64();
    assert!(
        (900.0..=1100.0).contains(&bw),
        "BtlBw {bw} kbps on a 1 Mbps link"
    );
    let rtprop = p.bbr.rtprop().expect("rtprop").as_millis_f64();
    assert!((40.0..=50.0).contains(&rtprop), "RTprop {rtprop} ms");
    // cwnd in ProbeBW ≈ 2·BDP + 3 quanta.
    assert!(p.bbr.cwnd() <= p.bbr.inflight_at_gain(2.0));
}

#[test]
fn probe_rtt_after_ten_seconds_holds_four_packets_then_returns() {
    let mut p = Path::new(
        BbrConfig::default(),
        Bitrate::mbps(1),
        ms(40),
        Source::Unlimited,
    );
    // A bulk flow keeps a standing queue in ProbeBW (cwnd = 2 BDP), so the
    // 40 ms minimum is not seen again and expires after 10 s.
    p.run_for(Duration::from_secs(13));
    let enter = p
        .trace
        .iter()
        .position(|e| e.1 == BbrState::ProbeRtt)
        .expect("entered ProbeRTT");
    let t_enter = p.trace[enter].0;
    let since_start = t_enter.saturating_duration_since(Instant::from_secs(1));
    assert!(
        since_start >= Duration::from_secs(10),
        "ProbeRTT at {since_start:?}"
    );
    let exit = p.trace[enter..]
        .iter()
        .position(|e| e.1 != BbrState::ProbeRtt)
        .expect("left ProbeRTT")
        + enter;
    let (t_exit, s_exit, _, _) = p.trace[exit];
    assert_eq!(s_exit, BbrState::ProbeBw);
    let held = t_exit.saturating_duration_since(t_enter);
    assert!(held >= ms(200), "ProbeRTT lasted {held:?}");
    assert!(held <= ms(600), "ProbeRTT lasted {held:?}");
    for &(_, s, cwnd, _) in &p.trace[enter..exit] {
        assert_eq!(s, BbrState::ProbeRtt);
        assert!(cwnd <= Bytes::new(4 * MSS), "cwnd {cwnd} in ProbeRTT");
    }
    // The estimate survives ProbeRTT (its samples are app-limited).
    let bw = p.trace[exit].3.as_kbps_f64();
    assert!(bw >= 900.0, "BtlBw {bw} after ProbeRTT");
    // cwnd was restored.
    assert!(p.bbr.cwnd() > Bytes::new(4 * MSS));
}

#[test]
fn target_is_btlbw_clamped_and_start_before_samples() {
    let now = Instant::from_secs(1);
    let cfg = BbrConfig {
        start_bitrate: Bitrate::kbps(500),
        min_bitrate: Bitrate::kbps(100),
        max_bitrate: Bitrate::kbps(2000),
        ..BbrConfig::default()
    };
    let mut b = Bbr::new(now, cfg);
    assert_eq!(b.target_bitrate(), Bitrate::kbps(500));
    assert_eq!(
        b.send_budget().pacing_rate,
        Bitrate::kbps(500).mul_f64(HIGH_GAIN)
    );
    assert_eq!(b.send_budget().frame_burst, None);
    feed_round(&mut b, Bitrate::kbps(700), false);
    assert_eq!(b.target_bitrate(), Bitrate::kbps(700));
    feed_round(&mut b, Bitrate::kbps(5000), false);
    assert_eq!(b.target_bitrate(), Bitrate::kbps(2000));
}

#[test]
fn encoder_at_60_percent_from_the_start_never_lets_bbr_find_capacity() {
    // The encoder produces 0.6 × target from the first frame, so the sender
    // never fills the pipe and BtlBw (= target) is discovered only as far as
    // app-limited samples above it push it up.
    let mut full = Path::new(
        BbrConfig::default(),
        Bitrate::mbps(1),
        ms(40),
        Source::Encoder { ratio: 1.0 },
    );
    full.run_for(Duration::from_secs(20));
    let mut under = Path::new(
        BbrConfig::default(),
        Bitrate::mbps(1),
        ms(40),
        Source::Encoder { ratio: 0.6 },
    );
    under.run_for(Duration::from_secs(20));
    let a = full.bbr.target_bitrate().as_kbps_f64();
    let b = under.bbr.target_bitrate().as_kbps_f64();
    assert!(b < 0.8 * a.min(1000.0), "undershoot target {b} vs full {a}");
}

#[test]
fn without_app_limited_detection_undershoot_lowers_btlbw() {
    // First 8 s with a capable encoder, then 0.6: with detection, the
    // app-limited samples cannot lower BtlBw; without it they replace the
    // old maximum once it leaves the 10-round window.
    let run = |detect: bool| {
        let cfg = BbrConfig {
            app_limited_detection: detect,
            ..BbrConfig::default()
        };
        let mut p = Path::new(
            cfg,
            Bitrate::mbps(1),
            ms(40),
            Source::Encoder { ratio: 1.0 },
        );
        p.run_for(Duration::from_secs(8));
        let before = p.bbr.btlbw();
        p.source = Source::Encoder { ratio: 0.6 };
        p.run_for(Duration::from_secs(10));
        (before, p.bbr.btlbw())
    };
    let (before, with) = run(true);
    assert!(with >= before, "detection on: {before} → {with}");
    let (before, without) = run(false);
    assert!(
        without.as_bps_f64() < 0.8 * before.as_bps_f64(),
        "detection off: {before} → {without}"
    );
}
