use super::*;
use crate::packet::PacketKind;

/// Receiver clock offset: only differences of receiver times may matter.
const RX_OFFSET: Duration = Duration::from_secs(1000);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A configuration with bounds wide enough never to clamp, and segments of
/// `mds` bytes.
fn config(mds: u64) -> CubicConfig {
    CubicConfig {
        min_bitrate: Bitrate::kbps(1),
        max_bitrate: Bitrate::mbps(10_000),
        max_datagram_size: Bytes::new(mds),
        ..CubicConfig::default()
    }
}

/// Drives one controller: sends packets, then reports them acknowledged or
/// lost, with the receiver's clock offset by [`RX_OFFSET`].
struct Harness {
    cc: Cubic,
    now: Instant,
    next_seq: u64,
    in_flight: u64,
    mds: u64,
}

impl Harness {
    fn new(mds: u64) -> Self {
        Self::with(config(mds))
    }

    fn with(cfg: CubicConfig) -> Self {
        let now = Instant::from_secs(1);
        let mds = cfg.max_datagram_size.get();
        Harness {
            cc: Cubic::new(now, cfg),
            now,
            next_seq: 0,
            in_flight: 0,
            mds,
        }
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    /// Sends one packet of `size` bytes now.
    fn send_sized(&mut self, size: u64) -> SentPacket {
        self.in_flight += size;
        let p = SentPacket {
            seq: self.next_seq,
            size: Bytes::new(size),
            send_time: self.now,
            kind: PacketKind::Media,
            bytes_in_flight: Bytes::new(self.in_flight),
            ..SentPacket::default()
        };
        self.next_seq += 1;
        self.cc.on_packet_sent(self.now, &p);
        p
    }

    /// Sends `n` full-size packets now.
    fn send(&mut self, n: u64) -> Vec<SentPacket> {
        (0..n).map(|_| self.send_sized(self.mds)).collect()
    }

    /// A report at `now`: `acked` received, held `ack_delay` at the receiver
    /// before the report (QUIC: the ACK Delay), `lost` declared lost.
    fn report(&mut self, acked: &[SentPacket], lost: &[SentPacket], ack_delay: Duration) {
        let report_time = self.now + RX_OFFSET;
        let mut packets: Vec<PacketResult> = acked
            .iter()
            .map(|&sent| PacketResult {
                sent,
                arrival: Some(report_time - ack_delay),
            })
            .chain(lost.iter().map(|&sent| PacketResult {
                sent,
                arrival: None,
            }))
            .collect();
        packets.sort_by_key(|p| p.sent.seq);
        for p in &packets {
            self.in_flight -= p.sent.size.get();
        }
        self.cc.on_feedback(
            self.now,
            &FeedbackReport {
                report_time,
                packets,
            },
        );
    }

    fn ack(&mut self, acked: &[SentPacket]) {
        self.report(acked, &[], Duration::ZERO);
    }

    fn lose(&mut self, lost: &[SentPacket]) {
        self.report(&[], lost, Duration::ZERO);
    }

    /// One ACK-clocked round: a window of packets now, all acknowledged
    /// `rtt` later in one report.
    fn round(&mut self, rtt: Duration) {
        let n = self.cc.cwnd().get() / self.mds;
        let sent = self.send(n);
        self.advance(rtt);
        self.ack(&sent);
    }

    fn cwnd_segments(&self) -> f64 {
        self.cc.cwnd().as_f64() / self.mds as f64
    }

    /// One packet sent and acknowledged `rtt` later: an RTT sample.
    fn sample(&mut self, rtt: Duration) {
        let p = self.send_sized(self.mds);
        self.advance(rtt);
        self.ack(&[p]);
    }
}

#[test]
fn initial_and_minimum_window_follow_rfc_9002_7_2() {
    // min(10·1200, max(14720, 2400)) = 12 000.
    assert_eq!(config(1200).initial_window(), Bytes::new(12_000));
    // min(15 000, max(14720, 3000)) = 14 720.
    assert_eq!(config(1500).initial_window(), Bytes::new(14_720));
    // min(90 000, max(14720, 18 000)) = 18 000.
    assert_eq!(config(9000).initial_window(), Bytes::new(18_000));
    assert_eq!(config(1200).minimum_window(), Bytes::new(2400));
    let h = Harness::new(1200);
    assert_eq!(h.cc.cwnd(), Bytes::new(12_000));
    assert_eq!(h.cc.ssthresh(), Bytes::MAX);
    assert!(h.cc.in_slow_start());
    assert_eq!(h.cc.estimate().state, "slow-start");
}

#[test]
fn slow_start_grows_by_the_bytes_acknowledged() {
    let mut h = Harness::new(1200);
    // 10 packets fill the 12 000 B window; all acknowledged: +12 000 B.
    let sent = h.send(10);
    h.advance(ms(100));
    h.ack(&sent);
    assert_eq!(h.cc.cwnd(), Bytes::new(24_000));
    // A 500 B packet (sent into a full window) adds 500 B.
    let mut sent = h.send(19);
    sent.push(h.send_sized(500));
    h.advance(ms(100));
    h.ack(&sent[19..]);
    assert_eq!(h.cc.cwnd(), Bytes::new(24_500));
    h.ack(&sent[..19]);
    assert_eq!(h.cc.cwnd(), Bytes::new(24_500 + 19 * 1200));
    assert_eq!(h.cc.window().region(), CubicRegion::SlowStart);
}

#[test]
fn loss_exits_slow_start_to_beta_times_cwnd() {
    let mut h = Harness::new(1200);
    let sent = h.send(10);
    h.advance(ms(100));
    h.ack(&sent);
    assert_eq!(h.cc.cwnd(), Bytes::new(24_000));
    let sent = h.send(20);
    h.advance(ms(100));
    h.lose(&sent[..1]);
    // RFC 9438 §4.6: 0.7 · 24 000 = 16 800 = ssthresh (RFC 9002 B.6).
    assert_eq!(h.cc.cwnd(), Bytes::new(16_800));
    assert_eq!(h.cc.ssthresh(), Bytes::new(16_800));
    assert!(!h.cc.in_slow_start());
    assert!(h.cc.in_recovery());
    assert_eq!(h.cc.recovery_start(), Some(h.now));
    assert_eq!(h.cc.estimate().state, "recovery");
    // W_max = cwnd_prior = 20 segments (first event: no fast convergence).
    assert_eq!(h.cc.window().w_max_segments(), Some(20.0));
    assert_eq!(h.cc.window().cwnd_prior_segments(), Some(20.0));
}

#[test]
fn reduction_never_goes_below_the_minimum_window() {
    let mut h = Harness::new(1200);
    // 12 000 → 8400 → 5880 → 4116 → 2881 → 2400 (not 2017).
    for want in [8400, 5880, 4116, 2881, 2400, 2400] {
        h.advance(ms(10));
        let p = h.send(1);
        h.advance(ms(10));
        h.lose(&p);
        assert_eq!(h.cc.cwnd(), Bytes::new(want));
    }
}

#[test]
fn one_reduction_per_recovery_period() {
    let mut h = Harness::new(1200);
    let early = h.send(10);
    h.advance(ms(100));
    h.lose(&early[..1]);
    let start = h.now;
    assert_eq!(h.cc.cwnd(), Bytes::new(8400));
    // Another packet sent before the recovery started is lost: RFC 9002
    // §7.3.2, no second reduction.
    h.advance(ms(5));
    h.lose(&early[1..3]);
    assert_eq!(h.cc.cwnd(), Bytes::new(8400));
    assert_eq!(h.cc.recovery_start(), Some(start));
    // Nor does an ACK of a packet sent before the recovery grow cwnd.
    h.ack(&early[3..]);
    assert_eq!(h.cc.cwnd(), Bytes::new(8400));
    assert!(h.cc.in_recovery());
    // A packet sent after the recovery started is lost: a new period,
    // 0.7 · 8400 = 5880.
    let late = h.send(8);
    h.advance(ms(100));
    h.lose(&late[..1]);
    assert_eq!(h.cc.cwnd(), Bytes::new(5880));
    assert_eq!(h.cc.recovery_start(), Some(h.now));
    // An ACK of a packet sent after that start ends the recovery.
    h.advance(ms(1));
    let after = h.send(5);
    h.advance(ms(100));
    h.ack(&after);
    assert!(!h.cc.in_recovery());
    assert!(h.cc.cwnd() > Bytes::new(5880));
}

#[test]
fn cubic_growth_after_a_reduction_follows_w_cubic() {
    // Segments of 1000 B. Slow start to 100 segments, a loss: cwnd = 70,
    // W_max = 100, K = ∛((100 − 70)/0.4) = ∛75 = 4.217163 s.
    let mut h = Harness::new(1000);
    let rtt = ms(100);
    let sent = h.send(90);
    h.advance(rtt);
    h.ack(&sent);
    assert_eq!(h.cc.cwnd(), Bytes::new(100_000));
    let p = h.send(1);
    h.advance(rtt);
    h.lose(&p);
    assert_eq!(h.cc.cwnd(), Bytes::new(70_000));
    h.advance(ms(1));
    let t_epoch = h.now + rtt;
    // 50 rounds (5 s): W_est (+0.53 per round from 70) stays below the
    // curve; around t = 5.9 s it would catch up (the Reno-friendly region).
    let mut rounds = Vec::new();
    for _ in 0..50 {
        h.round(rtt);
        rounds.push((h.now, h.cwnd_segments()));
    }
    let w = h.cc.window();
    assert_eq!(w.epoch_start(), Some(t_epoch));
    let k = w.k().expect("stage began").as_secs_f64();
    assert!((k - 4.217_163).abs() < 1e-5, "K = {k}");
    // W_cubic(t) = 0.4·(t − K)³ + 100 by hand: t = 0: 70; t = 1 s: 86.6808;
    // t = 2 s: 95.6403; t = 3 s: 99.2787; t = K: 100; t = 6 s: 102.2667.
    // (Evaluating the curve needs no ACK at t.)
    for (t, want) in [
        (0.0, 70.0),
        (1.0, 86.6808),
        (2.0, 95.6403),
        (3.0, 99.2787),
        (k, 100.0),
        (6.0, 102.2667),
    ] {
        let at = t_epoch + Duration::from_secs_f64(t);
        let got = w.w_cubic_segments(at).expect("stage began");
        assert!(
            (got - want).abs() < 1e-3,
            "W_cubic({t}) = {got}, want {want}"
        );
    }
    // Each round's ACKs (all at t) aim at W_cubic(t + RTT): cwnd ends the
    // round between the curve now and one RTT ahead.
    assert!(w.w_est_segments().unwrap() < w.w_cubic_segments(h.now).unwrap());
    for &(t, cwnd) in &rounds {
        let lo = w.w_cubic_segments(t).unwrap();
        let hi = w.w_cubic_segments(t + rtt).unwrap();
        assert!(
            cwnd >= lo - 0.01 && cwnd <= hi + 0.01,
            "t = {t}: cwnd {cwnd:.3} not in [{lo:.3}, {hi:.3}]"
        );
    }
    // At t = 1 s (round 10), 2 s and 3 s the window is within 1 segment of
    // W_cubic(t + RTT) = 87.88, 96.20, 99.44.
    for (i, want) in [(10, 87.88), (20, 96.20), (30, 99.44)] {
        let (_, cwnd) = rounds[i];
        assert!((cwnd - want).abs() < 1.0, "round {i}: cwnd {cwnd}");
    }
    assert_eq!(w.region(), CubicRegion::Convex);
    assert_eq!(h.cc.estimate().state, "convex");
}

#[test]
fn reno_friendly_region_takes_over_at_small_rtt() {
    // Segments of 1000 B, initial window 10; RTT 10 ms. A loss at 10
    // segments: cwnd 7, W_max 10, K = ∛(3/0.4) = 1.957 s: the curve stays
    // below 10 for ~200 RTTs while W_est grows α_cubic = 0.529 segments per
    // RTT up to cwnd_prior = 10, then 1 per RTT (RFC 9438 §4.3).
    let mut h = Harness::new(1000);
    let rtt = ms(10);
    h.sample(rtt);
    let p = h.send(1);
    h.advance(rtt);
    h.lose(&p);
    assert_eq!(h.cc.cwnd(), Bytes::new(7000));
    h.advance(ms(1));
    h.round(rtt);
    let first = h.cwnd_segments() - 7.0;
    // The first round grows by about α_cubic (7 ACKs · 0.529/cwnd).
    assert!((first - 0.529).abs() < 0.05, "first round +{first}");
    assert_eq!(h.cc.window().region(), CubicRegion::RenoFriendly);
    for _ in 1..60 {
        h.round(rtt);
    }
    let w = h.cc.window();
    assert_eq!(w.region(), CubicRegion::RenoFriendly);
    // W_cubic(0.6 s) = 0.4·(0.6 − 1.957)³ + 10 = 9.0 segments.
    let w_cubic = w.w_cubic_segments(h.now).unwrap();
    assert!(w_cubic < 10.0, "W_cubic {w_cubic}");
    let w_est = w.w_est_segments().unwrap();
    let cwnd = h.cwnd_segments();
    assert!((cwnd - w_est).abs() < 0.01, "cwnd {cwnd} W_est {w_est}");
    // About 7 + 3 (6 rounds at α) + 54 (at 1) = 64 segments.
    assert!(cwnd > 55.0 && cwnd < 70.0, "cwnd {cwnd}");
    assert_eq!(h.cc.estimate().state, "reno-friendly");
}

#[test]
fn fast_convergence_lowers_w_max() {
    fn run(fast_convergence: bool) -> Harness {
        let mut cfg = config(1000);
        cfg.window.fast_convergence = fast_convergence;
        let mut h = Harness::with(cfg);
        // Slow start to 100 segments; loss: W_max = 100, cwnd 70.
        let sent = h.send(90);
        h.advance(ms(100));
        h.ack(&sent);
        let p = h.send(1);
        h.advance(ms(100));
        h.lose(&p);
        assert_eq!(h.cc.window().w_max_segments(), Some(100.0));
        // A new loss at cwnd = 70 < W_max = 100.
        h.advance(ms(1));
        let p = h.send(1);
        h.advance(ms(100));
        h.lose(&p);
        assert_eq!(h.cc.cwnd(), Bytes::new(49_000));
        h
    }
    // RFC 9438 §4.7: W_max = 70 · (1 + 0.7)/2 = 59.5.
    let mut h = run(true);
    assert_eq!(h.cc.window().w_max_segments(), Some(59.5));
    // The next stage aims at it: K = ∛((59.5 − 49)/0.4) = 2.97196 s.
    h.advance(ms(1));
    h.round(ms(100));
    let k = h.cc.window().k().unwrap().as_secs_f64();
    assert!((k - 2.971_96).abs() < 1e-4, "K = {k}");
    // Without fast convergence W_max = cwnd = 70.
    let h = run(false);
    assert_eq!(h.cc.window().w_max_segments(), Some(70.0));
}

#[test]
fn no_growth_while_application_limited() {
    let mut h = Harness::new(1200);
    // 2 packets into a 12 000 B window: 2400 + 3·1200 < 12 000 and 2400 is
    // not above half of cwnd: application-limited (RFC 9002 §7.8).
    let sent = h.send(2);
    h.advance(ms(100));
    h.ack(&sent);
    assert_eq!(h.cc.cwnd(), Bytes::new(12_000));
    // 6 packets: 7200 B in flight > 6000 = cwnd/2 in slow start: limited,
    // and every packet of the burst grows cwnd.
    let sent = h.send(6);
    h.advance(ms(100));
    h.ack(&sent);
    assert_eq!(h.cc.cwnd(), Bytes::new(12_000 + 7200));
    // Congestion avoidance: after a loss cwnd = 0.7·19 200 = 13 440.
    let p = h.send(1);
    h.advance(ms(100));
    h.lose(&p);
    assert_eq!(h.cc.cwnd(), Bytes::new(13_440));
    // More than one smoothed RTT later, 5 packets (6000 + 3600 < 13 440)
    // grow nothing.
    h.advance(ms(300));
    let sent = h.send(5);
    h.advance(ms(100));
    h.ack(&sent);
    assert_eq!(h.cc.cwnd(), Bytes::new(13_440));
    // A full window does grow it.
    h.advance(ms(300));
    let sent = h.send(12);
    h.advance(ms(100));
    h.ack(&sent);
    assert!(h.cc.cwnd() > Bytes::new(13_440));
}

#[test]
fn cwnd_limited_state_lasts_one_smoothed_rtt() {
    let mut h = Harness::new(1200);
    h.sample(ms(100));
    // Window-limited at t0 (12 packets), then 1 packet 50 ms later: within
    // one srtt (100 ms), so its ACK grows cwnd; one 250 ms later does not.
    let full = h.send(12);
    h.advance(ms(50));
    let near = h.send(1);
    h.advance(ms(100));
    h.ack(&full);
    let before = h.cc.cwnd();
    h.ack(&near);
    assert_eq!(h.cc.cwnd(), before + Bytes::new(1200));
    h.advance(ms(100));
    let far = h.send(1);
    h.advance(ms(100));
    let before = h.cc.cwnd();
    h.ack(&far);
    assert_eq!(h.cc.cwnd(), before);
}

#[test]
fn persistent_congestion_collapses_to_the_minimum_window() {
    let mut h = Harness::new(1200);
    // First sample 100 ms: srtt 100, rttvar 50; duration =
    // 3·(100 + max(4·50, 1) + 25) = 975 ms (RFC 9002 §7.6.1).
    h.sample(ms(100));
    assert_eq!(h.cc.persistent_congestion_duration(), ms(975));
    // 11 consecutive packets over 1000 ms, all lost in one report.
    h.advance(ms(1));
    let mut lost = Vec::new();
    for _ in 0..11 {
        lost.extend(h.send(1));
        h.advance(ms(100));
    }
    h.lose(&lost);
    assert_eq!(h.cc.cwnd(), Bytes::new(2400));
    assert_eq!(h.cc.persistent_congestion_count(), 1);
    assert_eq!(h.cc.recovery_start(), None);
    // ssthresh keeps the reduction (0.7 · 12 000): slow start up to it.
    assert_eq!(h.cc.ssthresh(), Bytes::new(8400));
    assert!(h.cc.in_slow_start());
}

#[test]
fn no_persistent_congestion_when_the_run_is_short_or_broken() {
    // 10 packets over 900 ms < 975 ms: only the β reduction.
    let mut h = Harness::new(1200);
    h.sample(ms(100));
    h.advance(ms(1));
    let mut lost = Vec::new();
    for _ in 0..10 {
        lost.extend(h.send(1));
        h.advance(ms(100));
    }
    h.lose(&lost);
    assert_eq!(h.cc.cwnd(), Bytes::new(8400));
    assert_eq!(h.cc.persistent_congestion_count(), 0);
    // 11 packets over 1000 ms but the middle one was acknowledged.
    let mut h = Harness::new(1200);
    h.sample(ms(100));
    h.advance(ms(1));
    let mut sent = Vec::new();
    for _ in 0..11 {
        sent.extend(h.send(1));
        h.advance(ms(100));
    }
    let mut lost = sent.clone();
    let acked = lost.remove(5);
    h.report(&[acked], &lost, Duration::ZERO);
    assert_eq!(h.cc.persistent_congestion_count(), 0);
    assert_eq!(h.cc.cwnd(), Bytes::new(8400));
    // Packets sent before the first RTT sample never count (B.8).
    let mut h = Harness::new(1200);
    let mut lost = Vec::new();
    for _ in 0..11 {
        lost.extend(h.send(1));
        h.advance(ms(100));
    }
    h.sample(ms(100));
    h.lose(&lost);
    assert_eq!(h.cc.persistent_congestion_count(), 0);
}

#[test]
fn persistent_congestion_restarts_the_curve() {
    // After persistent congestion (RFC 9438 §4.8 by analogy with an RTO), the
    // next congestion avoidance stage has K = 0 and W_max = cwnd_epoch.
    let mut h = Harness::new(1000);
    h.sample(ms(100));
    let sent = h.send(90);
    h.advance(ms(100));
    h.ack(&sent);
    // (The sample's single packet was application-limited: no growth.)
    assert_eq!(h.cc.cwnd(), Bytes::new(100_000));
    h.advance(ms(1));
    let mut lost = Vec::new();
    for _ in 0..21 {
        lost.extend(h.send(1));
        h.advance(ms(100));
    }
    h.lose(&lost);
    assert_eq!(h.cc.persistent_congestion_count(), 1);
    assert_eq!(h.cc.cwnd(), Bytes::new(2000));
    // ssthresh = 0.7 · 100 000 = 70 000: slow start there, then one round
    // of congestion avoidance.
    h.advance(ms(1));
    while h.cc.in_slow_start() {
        h.round(ms(100));
    }
    h.advance(ms(1));
    h.round(ms(100));
    // The stage began when cwnd crossed ssthresh = 70 segments, within the
    // last slow-start round; without the restart it would aim at W_max = 100
    // with K = ∛(30/0.4) = 4.2 s.
    let w = h.cc.window();
    assert_eq!(w.k(), Some(Duration::ZERO));
    let w_max = w.w_max_segments().unwrap();
    assert!((70.0..71.0).contains(&w_max), "W_max {w_max}");
}

#[test]
fn pacing_is_two_in_slow_start_and_one_and_a_quarter_after() {
    let mut h = Harness::new(1200);
    // Before any sample: smoothed_rtt = 333 ms (RFC 9002 §6.2.2):
    // 2 · 12 000 B / 333 ms = 2 · 288 288 = 576 576 bit/s.
    assert_eq!(h.cc.send_budget().pacing_rate, Bitrate::bps(576_576));
    h.sample(ms(100));
    // Slow start: 2 · 12 000 B / 100 ms = 2 · 960 kbit/s.
    let b = h.cc.send_budget();
    assert_eq!(b.pacing_rate, Bitrate::bps(1_920_000));
    assert_eq!(b.cwnd, Some(Bytes::new(12_000)));
    // Congestion avoidance: cwnd 8400 B, srtt 100 ms: 1.25 · 672 000.
    let p = h.send(1);
    h.advance(ms(100));
    h.lose(&p);
    assert_eq!(h.cc.send_budget().pacing_rate, Bitrate::bps(840_000));
    // Bounded by N · max_bitrate.
    let mut tight = Harness::with(CubicConfig {
        max_bitrate: Bitrate::kbps(500),
        ..config(1200)
    });
    tight.sample(ms(100));
    assert_eq!(tight.cc.send_budget().pacing_rate, Bitrate::kbps(1000));
}

#[test]
fn rtt_sample_removes_the_ack_delay() {
    let mut h = Harness::new(1200);
    // Sent at t, reported 130 ms later with a 20 ms ACK delay: 110 ms.
    let p = h.send(1);
    h.advance(ms(130));
    h.report(&p, &[], ms(20));
    assert_eq!(h.cc.rtt().smoothed_rtt(), ms(110));
    assert_eq!(h.cc.rtt().min_rtt(), ms(110));
    // Two packets 40 ms apart in one ACK frame: only the newest (largest
    // acknowledged, RFC 9002 §5.1) is sampled: 100 − 0 = 100 ms →
    // srtt = 7/8·110 + 1/8·100 = 108.75 ms.
    let old = h.send(1);
    h.advance(ms(40));
    let new = h.send(1);
    h.advance(ms(100));
    h.report(&[old[0], new[0]], &[], Duration::ZERO);
    assert_eq!(h.cc.rtt().smoothed_rtt(), Duration::from_micros(108_750));
    assert_eq!(h.cc.rtt().min_rtt(), ms(100));
    assert_eq!(h.cc.estimate().rtt, Some(Duration::from_micros(108_750)));
    assert_eq!(h.cc.estimate().min_rtt, Some(ms(100)));
    // A later report whose newest packet is older than the last sampled one
    // gives no sample.
    let stale = PacketResult {
        sent: old[0],
        arrival: Some(h.now + RX_OFFSET),
    };
    h.advance(ms(500));
    h.cc.on_feedback(
        h.now,
        &FeedbackReport {
            report_time: h.now + RX_OFFSET,
            packets: vec![stale],
        },
    );
    assert_eq!(h.cc.rtt().smoothed_rtt(), Duration::from_micros(108_750));
}

#[test]
fn target_is_cwnd_over_srtt_within_bounds() {
    let cfg = CubicConfig {
        start_bitrate: Bitrate::kbps(300),
        min_bitrate: Bitrate::kbps(100),
        max_bitrate: Bitrate::kbps(800),
        ..config(1200)
    };
    let mut h = Harness::with(cfg);
    // No sample: the start bitrate.
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(300));
    assert_eq!(h.cc.estimate().bandwidth, None);
    // 12 000 B / 200 ms = 480 kbit/s.
    h.sample(ms(200));
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(480));
    assert_eq!(h.cc.estimate().bandwidth, Some(Bitrate::kbps(480)));
    // Slow start to 36 000 B (+12 000 per full window, here +24 000): 1440
    // kbit/s, clamped to 800.
    for _ in 0..2 {
        let sent = h.send(10);
        h.advance(ms(200));
        h.ack(&sent);
    }
    assert_eq!(h.cc.cwnd(), Bytes::new(36_000));
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(800));
    // Many losses: cwnd at the 2400 B floor, 96 kbit/s, clamped to 100.
    for _ in 0..10 {
        h.advance(ms(1));
        let p = h.send(1);
        h.advance(ms(200));
        h.lose(&p);
    }
    assert_eq!(h.cc.cwnd(), Bytes::new(2400));
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(100));
    assert!((h.cc.estimate().loss_rate.unwrap() - 1.0).abs() < 1e-12);
}

#[test]
fn window_budget_covers_the_bytes_held_for_the_report() {
    let mut h = Harness::new(1200);
    // RTT 100 ms, the packet held 50 ms before the report: the sender sees
    // 150 ms, srtt is 100 ms. Rate = 12 000 B / 100 ms = 960 kbit/s, which
    // over 50 ms is 6000 B: the enforced window is 18 000 B.
    let p = h.send(1);
    h.advance(ms(150));
    h.report(&p, &[], ms(50));
    assert_eq!(h.cc.rtt().smoothed_rtt(), ms(100));
    assert_eq!(h.cc.window_budget(), Bytes::new(18_000));
    assert_eq!(h.cc.send_budget().cwnd, Some(Bytes::new(18_000)));
    assert_eq!(h.cc.cwnd(), Bytes::new(12_000));
    // Literal RFC 9002: the window is cwnd.
    let mut literal = Harness::with(CubicConfig {
        compensate_feedback_hold: false,
        ..config(1200)
    });
    let p = literal.send(1);
    literal.advance(ms(150));
    literal.report(&p, &[], ms(50));
    assert_eq!(literal.cc.send_budget().cwnd, Some(Bytes::new(12_000)));
}
