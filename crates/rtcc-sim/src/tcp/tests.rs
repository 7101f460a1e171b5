//! Sender mechanism tests, an end-to-end run over an in-test bottleneck and
//! randomized invariant checks.

use std::collections::VecDeque;

use rand::Rng as _;
use rtcc_core::{rng, Bitrate, Bytes, Duration, Instant};

use super::*;

const MSS: u64 = 1000;

/// The unit tests below were written for RFC 3465 byte counting with L = 2;
/// the default (L = 1, RFC 5681 §3.1 and ns-3) is exercised where named.
fn cfg() -> TcpConfig {
    TcpConfig {
        mss: Bytes::new(MSS),
        abc_limit_segments: 2,
        ..TcpConfig::default()
    }
}

#[test]
fn default_growth_is_one_smss_per_ack() {
    assert_eq!(TcpConfig::default().abc_limit_segments, 1);
}

fn ack(n: u64) -> Ack {
    Ack {
        ack: n,
        wire_size: Bytes::new(40),
        echo_sent_time: Instant::ZERO,
    }
}

fn drain(s: &mut TcpSender, now: Instant) -> Vec<Segment> {
    let mut out = Vec::new();
    while let Some(seg) = s.poll_transmit(now) {
        out.push(seg);
    }
    s.check_invariants().expect("sender invariants");
    out
}

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

/// A tiny network: one bottleneck (rate, drop-tail queue in bytes) then a
/// fixed one-way delay; ACKs return over the delay only. Segments whose
/// first byte is in `forced_drops` are lost on their first transmission.
struct Net {
    now: Instant,
    rate: Bitrate,
    delay: Duration,
    queue_limit: Bytes,
    link_free_at: Instant,
    to_receiver: VecDeque<(Instant, Segment)>,
    to_sender: VecDeque<(Instant, Ack)>,
    forced_drops: Vec<u64>,
    queue_drops: u64,
    sender: TcpSender,
    receiver: TcpReceiver,
    /// (cwnd, ssthresh, snd_una) each time fast recovery ended.
    recovery_exits: Vec<(Bytes, Bytes, u64)>,
}

impl Net {
    fn new(config: TcpConfig, rate: Bitrate, delay: Duration, queue_limit: Bytes) -> Self {
        let receiver = TcpReceiver::new(&config);
        let sender = TcpSender::new(Instant::ZERO, config);
        Net {
            now: Instant::ZERO,
            rate,
            delay,
            queue_limit,
            link_free_at: Instant::ZERO,
            to_receiver: VecDeque::new(),
            to_sender: VecDeque::new(),
            forced_drops: Vec::new(),
            queue_drops: 0,
            sender,
            receiver,
            recovery_exits: Vec::new(),
        }
    }

    fn send_all(&mut self) {
        while let Some(seg) = self.sender.poll_transmit(self.now) {
            if !seg.retransmission && self.forced_drops.contains(&seg.seq) {
                continue;
            }
            let start = self.link_free_at.max(self.now);
            let backlog = self.rate * (start - self.now);
            if backlog + seg.wire_size > self.queue_limit {
                self.queue_drops += 1;
                continue;
            }
            self.link_free_at = start + seg.wire_size / self.rate;
            self.to_receiver
                .push_back((self.link_free_at + self.delay, seg));
        }
        self.sender.check_invariants().expect("sender invariants");
    }

    /// Processes the next event if it is not later than `until`.
    fn step(&mut self, until: Instant) -> bool {
        let candidates = [
            self.to_receiver.front().map(|e| e.0),
            self.to_sender.front().map(|e| e.0),
            self.sender.poll_timeout(),
            self.receiver.poll_timeout(),
        ];
        let Some(t) = candidates.iter().flatten().min().copied() else {
            return false;
        };
        if t > until {
            return false;
        }
        assert!(t >= self.now, "event in the past: {t} < {}", self.now);
        self.now = t;
        if candidates[0] == Some(t) {
            let (_, seg) = self.to_receiver.pop_front().expect("front exists");
            if let Some(a) = self.receiver.on_segment(t, &seg) {
                self.to_sender.push_back((t + self.delay, a));
            }
        } else if candidates[1] == Some(t) {
            let (_, a) = self.to_sender.pop_front().expect("front exists");
            let was = self.sender.in_recovery();
            self.sender.on_ack(t, &a);
            if was && !self.sender.in_recovery() {
                self.recovery_exits.push((
                    self.sender.cwnd(),
                    self.sender.ssthresh(),
                    self.sender.snd_una(),
                ));
            }
        } else if candidates[2] == Some(t) {
            self.sender.on_timeout(t);
        } else if let Some(a) = self.receiver.on_timeout(t) {
            self.to_sender.push_back((t + self.delay, a));
        }
        self.send_all();
        true
    }

    fn run_until(&mut self, until: Instant) {
        self.send_all();
        while self.step(until) {}
        self.now = self.now.max(until);
    }
}

/// Fast network for mechanism tests: 1 Gbps, 50 ms one way, no queue limit,
/// 300 kB to send unless the test sets a limit.
fn fast_net(mut config: TcpConfig) -> Net {
    config.data_limit = config.data_limit.or(Some(Bytes::new(FAST_NET_DATA)));
    Net::new(
        config,
        Bitrate::mbps(1000),
        Duration::from_millis(50),
        Bytes::MAX,
    )
}

const FAST_NET_DATA: u64 = 300_000;

/// Segments sent per 100 ms round trip, rounds 0..n, on a loss-free path.
fn segments_per_round(config: TcpConfig, rounds: usize) -> Vec<usize> {
    let mut s = TcpSender::new(Instant::ZERO, config.clone());
    let mut r = TcpReceiver::new(&config);
    let mut round = drain(&mut s, Instant::ZERO);
    let mut counts = Vec::new();
    for k in 1..=rounds {
        counts.push(round.len());
        let t = ms(100 * k as u64);
        let mut next = Vec::new();
        for seg in &round {
            if let Some(a) = r.on_segment(t, seg) {
                s.on_ack(t, &a);
                next.extend(drain(&mut s, t));
            }
        }
        if let Some(a) = r.on_timeout(t + Duration::from_secs(1)) {
            s.on_ack(t, &a);
            next.extend(drain(&mut s, t));
        }
        round = next;
    }
    counts
}

#[test]
fn the_receive_window_caps_the_segments_in_flight() {
    // ns-2's `window_ = 20`: slow start doubles until 20 segments are in
    // flight and stays there, while cwnd itself keeps growing.
    let config = TcpConfig {
        receive_window: Some(20),
        ..cfg()
    };
    assert_eq!(segments_per_round(config, 5), vec![10, 20, 20, 20, 20]);
    let one = TcpConfig {
        receive_window: Some(1),
        initial_cwnd_segments: 4,
        ..cfg()
    };
    assert_eq!(segments_per_round(one, 3), vec![1, 1, 1]);
}

#[test]
fn slow_start_doubles_per_rtt() {
    assert_eq!(segments_per_round(cfg(), 5), vec![10, 20, 40, 80, 160]);
}

#[test]
fn slow_start_doubles_per_rtt_with_delayed_acks() {
    let config = TcpConfig {
        delayed_ack: true,
        ..cfg()
    };
    // Byte counting with L = 2 (RFC 3465) keeps the doubling with one ACK per two segments.
    assert_eq!(segments_per_round(config, 5), vec![10, 20, 40, 80, 160]);
    // ns-3's one SMSS per ACK (L = 1) grows 1.5× per RTT instead.
    let ns3 = TcpConfig {
        delayed_ack: true,
        abc_limit_segments: 1,
        ..cfg()
    };
    assert_eq!(segments_per_round(ns3, 3), vec![10, 15, 23]);
}

#[test]
fn congestion_avoidance_adds_one_mss_per_rtt() {
    for delayed_ack in [false, true] {
        let config = TcpConfig {
            initial_ssthresh: Bytes::new(10 * MSS),
            delayed_ack,
            ..cfg()
        };
        let counts = segments_per_round(config, 12);
        // 10 segments per round, one more per RTT (integer division of
        // SMSS²/cwnd loses a few bytes per round, so growth lags by at most one).
        for (k, pair) in counts.windows(2).enumerate() {
            assert!(
                pair[1] == pair[0] || pair[1] == pair[0] + 1,
                "round {k}: {counts:?}"
            );
        }
        assert!(counts[11] >= 10 + 10, "{counts:?}");
        assert!(counts[11] <= 10 + 11, "{counts:?}");
    }
}

#[test]
fn fast_retransmit_after_exactly_three_dupacks() {
    let mut s = TcpSender::new(Instant::ZERO, cfg());
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    // Segment 2 is lost. ACKs of 0 and 1 (slow start → cwnd 12 segments).
    s.on_ack(ms(100), &ack(1000));
    assert_eq!(drain(&mut s, ms(100)).len(), 2);
    s.on_ack(ms(101), &ack(2000));
    assert_eq!(drain(&mut s, ms(101)).len(), 2);
    assert_eq!(s.snd_max(), 14_000);
    for k in 1..=2 {
        s.on_ack(ms(101 + k), &ack(2000));
        assert!(
            drain(&mut s, ms(101 + k)).is_empty(),
            "no send on dupack {k}"
        );
        assert_eq!(s.stats().fast_retransmits, 0);
    }
    s.on_ack(ms(104), &ack(2000));
    let out = drain(&mut s, ms(104));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].seq, out[0].retransmission), (2000, true));
    assert_eq!(s.stats().fast_retransmits, 1);
    // FlightSize 12 000 → ssthresh 6000 (RFC 5681 eq. 4), cwnd = ssthresh + 3 SMSS.
    assert_eq!(s.ssthresh(), Bytes::new(6000));
    assert_eq!(s.cwnd(), Bytes::new(9000));
    assert!(s.in_recovery());
    // Further dupacks inflate by one SMSS each; new data once cwnd > FlightSize.
    for k in 0..3 {
        s.on_ack(ms(105 + k), &ack(2000));
        assert!(drain(&mut s, ms(105 + k)).is_empty());
    }
    assert_eq!(s.cwnd(), Bytes::new(12_000));
    s.on_ack(ms(108), &ack(2000));
    let out = drain(&mut s, ms(108));
    assert_eq!(
        out.iter()
            .map(|x| (x.seq, x.retransmission))
            .collect::<Vec<_>>(),
        vec![(14_000, false)]
    );
    assert_eq!(s.stats().dup_acks, 7);
}

#[test]
fn limited_transmit_sends_one_new_segment_per_early_dupack() {
    for lt in [false, true] {
        let mut s = TcpSender::new(
            Instant::ZERO,
            TcpConfig {
                limited_transmit: lt,
                ..cfg()
            },
        );
        drain(&mut s, ms(0));
        let mut sent = 0;
        for k in 1..=2 {
            s.on_ack(ms(100 + k), &ack(0));
            sent += drain(&mut s, ms(100 + k)).len();
        }
        assert_eq!(sent, if lt { 2 } else { 0 });
        s.on_ack(ms(110), &ack(0));
        // RFC 5681 §3.2: segments sent by limited transmit are not in FlightSize.
        assert_eq!(s.ssthresh(), Bytes::new(5000));
        assert_eq!(drain(&mut s, ms(110))[0].seq, 0);
    }
}

#[test]
fn newreno_recovers_two_losses_in_one_window_without_rto() {
    let mut net = fast_net(cfg());
    net.forced_drops = vec![3000, 7000];
    net.run_until(Instant::from_secs(5));
    let st = net.sender.stats().clone();
    assert_eq!(st.timeouts, 0, "{st:?}");
    assert_eq!(st.fast_retransmits, 1, "{st:?}");
    assert_eq!(st.retransmits, 2, "{st:?}");
    // One exit from recovery (at the full ACK), with cwnd = ssthresh.
    assert_eq!(net.recovery_exits.len(), 1);
    let (cwnd, ssthresh, una) = net.recovery_exits[0];
    assert_eq!(cwnd, ssthresh);
    // ACKs of segments 0..2 grew cwnd to 13 and sent 6 more segments: the
    // third dupack finds 13 segments outstanding → ssthresh = 6.5 segments,
    // and `recover` = 16 000, which the full ACK covers.
    assert_eq!(ssthresh, Bytes::new(6500));
    assert!(una >= 16_000, "exit at the full ACK: {una}");
    assert_eq!(net.receiver.delivered_bytes(), FAST_NET_DATA);
}

#[test]
fn reno_needs_more_than_one_fast_retransmit_for_two_losses() {
    let mut net = fast_net(TcpConfig {
        variant: TcpVariant::Reno,
        ..cfg()
    });
    net.forced_drops = vec![3000, 7000];
    net.run_until(Instant::from_secs(5));
    let st = net.sender.stats().clone();
    // Reno leaves recovery at the partial ACK and does not retransmit the
    // second hole then: it takes a second fast retransmit or an RTO.
    assert!(st.fast_retransmits + st.timeouts >= 2, "{st:?}");
    let (cwnd, ssthresh, una) = net.recovery_exits[0];
    assert_eq!(cwnd, ssthresh);
    assert_eq!(una, 7000, "Reno exits at the partial ACK");
    assert_eq!(net.receiver.delivered_bytes(), FAST_NET_DATA);
}

#[test]
fn tahoe_fast_retransmit_restarts_slow_start() {
    let mut s = TcpSender::new(
        Instant::ZERO,
        TcpConfig {
            variant: TcpVariant::Tahoe,
            ..cfg()
        },
    );
    drain(&mut s, ms(0));
    for k in 0..3 {
        s.on_ack(ms(100 + k), &ack(0));
    }
    assert_eq!(s.stats().fast_retransmits, 1);
    assert_eq!(s.cwnd(), Bytes::new(MSS));
    assert_eq!(s.ssthresh(), Bytes::new(5000));
    assert!(!s.in_recovery());
    let out = drain(&mut s, ms(103));
    assert_eq!(
        out.iter()
            .map(|x| (x.seq, x.retransmission))
            .collect::<Vec<_>>(),
        vec![(0, true)]
    );
    // More dupacks do not inflate the window.
    s.on_ack(ms(104), &ack(0));
    assert!(drain(&mut s, ms(104)).is_empty());
    // The ACK of the retransmission grows cwnd by slow start and go-back-N continues.
    s.on_ack(ms(200), &ack(1000));
    let out = drain(&mut s, ms(200));
    assert_eq!(
        out.iter()
            .map(|x| (x.seq, x.retransmission))
            .collect::<Vec<_>>(),
        vec![(1000, true), (2000, true)]
    );
    // And end to end, Tahoe survives two losses.
    let mut net = fast_net(TcpConfig {
        variant: TcpVariant::Tahoe,
        ..cfg()
    });
    net.forced_drops = vec![3000, 7000];
    net.run_until(Instant::from_secs(5));
    assert!(net.recovery_exits.is_empty());
    assert_eq!(net.receiver.delivered_bytes(), FAST_NET_DATA);
}

#[test]
fn rtt_sample_and_rto_from_sender() {
    let config = TcpConfig {
        min_rto: Duration::from_millis(10),
        ..cfg()
    };
    let mut s = TcpSender::new(Instant::ZERO, config);
    drain(&mut s, ms(0));
    assert_eq!(s.poll_timeout(), Some(ms(1000)), "initial RTO 1 s");
    s.on_ack(ms(100), &ack(1000));
    assert_eq!(s.srtt(), Some(Duration::from_millis(100)));
    // RTO = 100 + 4·50 = 300 ms; timer restarted by the ACK (RFC 6298 (5.3)).
    assert_eq!(s.rto(), Duration::from_millis(300));
    assert_eq!(s.poll_timeout(), Some(ms(400)));
    // All data acknowledged: timer off (RFC 6298 (5.2)).
    drain(&mut s, ms(100));
    s.on_ack(ms(200), &ack(s.snd_max()));
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn rto_goes_back_n_with_backoff_and_karn() {
    let mut s = TcpSender::new(Instant::ZERO, cfg());
    assert_eq!(drain(&mut s, ms(0)).len(), 10);
    s.on_timeout(ms(500)); // early: nothing happens
    assert_eq!(s.stats().timeouts, 0);
    s.on_timeout(ms(1000));
    assert_eq!(s.stats().timeouts, 1);
    assert_eq!(s.cwnd(), Bytes::new(MSS));
    assert_eq!(s.ssthresh(), Bytes::new(5000));
    assert_eq!(s.bytes_in_flight(), Bytes::ZERO);
    let out = drain(&mut s, ms(1000));
    assert_eq!(
        out.iter()
            .map(|x| (x.seq, x.retransmission))
            .collect::<Vec<_>>(),
        vec![(0, true)]
    );
    // Backed-off timer: 2 s.
    assert_eq!(s.poll_timeout(), Some(ms(3000)));
    // Repeated timeouts double the RTO and hold ssthresh (RFC 5681 §3.1).
    s.on_timeout(ms(3000));
    drain(&mut s, ms(3000));
    assert_eq!(s.poll_timeout(), Some(ms(7000)));
    s.on_timeout(ms(7000));
    drain(&mut s, ms(7000));
    assert_eq!(s.poll_timeout(), Some(ms(15_000)));
    assert_eq!(s.ssthresh(), Bytes::new(5000));
    assert_eq!(s.stats().timeouts, 3);
    // ACK of the retransmitted segment: Karn, no sample; the backoff stays.
    s.on_ack(ms(7100), &ack(1000));
    assert_eq!(s.srtt(), None);
    assert_eq!(s.rto(), Duration::from_secs(8));
    assert_eq!(s.cwnd(), Bytes::new(2000));
    let out = drain(&mut s, ms(7100));
    assert_eq!(
        out.iter()
            .map(|x| (x.seq, x.retransmission))
            .collect::<Vec<_>>(),
        vec![(1000, true), (2000, true)]
    );
    // The receiver held 3..5: the ACK jumps past snd_nxt, go-back-N continues at 6000.
    s.on_ack(ms(7200), &ack(6000));
    assert_eq!(s.cwnd(), Bytes::new(4000));
    let out = drain(&mut s, ms(7200));
    assert_eq!(
        out.iter()
            .map(|x| (x.seq, x.retransmission))
            .collect::<Vec<_>>(),
        vec![(6000, true), (7000, true), (8000, true), (9000, true)]
    );
    s.on_ack(ms(7300), &ack(10_000));
    assert_eq!(
        s.srtt(),
        None,
        "all acknowledged segments were retransmitted"
    );
    let out = drain(&mut s, ms(7300));
    assert!(out.iter().all(|x| !x.retransmission && x.seq >= 10_000));
    // First ACK of new data gives a sample and collapses the backoff.
    s.on_ack(ms(7400), &ack(11_000));
    assert_eq!(s.srtt(), Some(Duration::from_millis(100)));
    assert_eq!(s.rto(), Duration::from_secs(1));
}

#[test]
fn data_limit_stops_and_completes() {
    let config = TcpConfig {
        data_limit: Some(Bytes::new(25_500)),
        ..cfg()
    };
    let mut net = fast_net(config);
    net.run_until(Instant::from_secs(2));
    assert_eq!(net.receiver.delivered_bytes(), 25_500);
    assert!(net.sender.is_complete());
    assert_eq!(net.sender.poll_timeout(), None);
    assert_eq!(net.sender.stats().bytes_sent, 25_500);
}

#[test]
fn segment_and_ack_sizes() {
    let mut s = TcpSender::new(Instant::ZERO, TcpConfig::default());
    let seg = s.poll_transmit(Instant::ZERO).expect("initial window");
    assert_eq!(
        (seg.seq, seg.len, seg.wire_size),
        (0, 1448, Bytes::new(1488))
    );
    let mut r = TcpReceiver::new(&TcpConfig::default());
    let a = r.on_segment(ms(1), &seg).expect("ack");
    assert_eq!(
        (a.ack, a.wire_size, a.echo_sent_time),
        (1448, Bytes::new(40), Instant::ZERO)
    );
}

/// 3 Mbps bottleneck, 100 ms one way, 112 500 B drop-tail queue, 60 s of bulk
/// 3 Mbps bottleneck, 100 ms one way, 112 500 B drop-tail queue, 60 s of bulk
/// NewReno (with and without delayed ACKs): utilisation above 85 %, the queue
/// overflows, and the flow never stalls: every second delivers data, and once
/// the slow-start overshoot is repaired (no SACK, so it takes an RTO and
/// go-back-N) every 5 s interval runs above 90 % of capacity.
#[test]
fn end_to_end_newreno_fills_a_3mbps_bottleneck() {
    for delayed_ack in [false, true] {
        let config = TcpConfig {
            delayed_ack,
            ..TcpConfig::default()
        };
        let rate = Bitrate::mbps(3);
        let mut net = Net::new(
            config,
            rate,
            Duration::from_millis(100),
            Bytes::new(112_500),
        );
        let mut per_second = Vec::new();
        let mut last = 0;
        for k in 1..=60 {
            net.run_until(Instant::from_secs(k));
            let d = net.receiver.delivered_bytes();
            per_second.push(d - last);
            last = d;
        }
        let capacity = rate * Duration::from_secs(60);
        let utilisation = net.receiver.delivered_bytes() as f64 / capacity.as_f64();
        let st = net.sender.stats().clone();
        let ctx = format!("delayed_ack={delayed_ack} utilisation {utilisation:.3} drops {} {st:?}\n{per_second:?}", net.queue_drops);
        assert!(utilisation > 0.85, "{ctx}");
        assert!(net.queue_drops > 0, "the queue must overflow: {ctx}");
        assert!(st.fast_retransmits > 0, "{ctx}");
        assert!(
            per_second.iter().all(|&b| b > 0),
            "a second without progress: {ctx}"
        );
        let five_s = (rate * Duration::from_secs(5)).get();
        for (k, w) in per_second.chunks(5).enumerate().skip(3) {
            let b: u64 = w.iter().sum();
            assert!(b * 10 > five_s * 9, "interval {k} below 90 %: {ctx}");
        }
    }
}

/// Random loss, reordering, duplication, stray ACKs and time jumps; after
/// every input the sender's and receiver's invariants hold.
#[test]
fn random_operation_sequences_keep_invariants() {
    // Totals over all cases, to show the mechanisms were exercised.
    let mut total = TcpSenderStats::default();
    let mut steps_in_recovery = 0u64;
    for case in 0..300u64 {
        let mut rng = rng::stream(0x7c9, case);
        let variant = [
            TcpVariant::Tahoe,
            TcpVariant::Reno,
            TcpVariant::NewReno,
            TcpVariant::Cubic,
        ][rng.random_range(0..4)];
        let config = TcpConfig {
            mss: Bytes::new(rng.random_range(1..3) * 500),
            variant,
            delayed_ack: rng.random(),
            limited_transmit: rng.random(),
            initial_cwnd_segments: rng.random_range(1..12),
            data_limit: if rng.random() {
                Some(Bytes::new(rng.random_range(0..200_000)))
            } else {
                None
            },
            min_rto: Duration::from_millis(rng.random_range(10..1000)),
            ..TcpConfig::default()
        };
        let loss: f64 = rng.random_range(0.0..0.4);
        let mut s = TcpSender::new(Instant::ZERO, config.clone());
        let mut r = TcpReceiver::new(&config);
        let mut now = Instant::ZERO;
        let mut net: Vec<Segment> = Vec::new();
        let mut acks: Vec<Ack> = Vec::new();
        let mut last_una = 0;
        let mut last_delivered = 0;
        let mut check = |s: &mut TcpSender,
                         r: &TcpReceiver,
                         now: Instant,
                         net: &mut Vec<Segment>,
                         step: usize| {
            while let Some(seg) = s.poll_transmit(now) {
                assert!(
                    seg.end() <= s.snd_max() && seg.len > 0,
                    "case {case} step {step}"
                );
                net.push(seg);
            }
            let ctx = format!("case {case} step {step} {variant:?}");
            s.check_invariants()
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert!(s.cwnd() >= config.mss, "{ctx}");
            assert_eq!(
                s.bytes_in_flight().get(),
                s.snd_nxt() - s.snd_una(),
                "{ctx}"
            );
            assert!(s.snd_una() >= last_una, "{ctx}: snd_una went back");
            last_una = s.snd_una();
            assert!(
                s.poll_timeout().is_none_or(|t| t >= now),
                "{ctx}: sender timer in the past"
            );
            assert!(
                r.poll_timeout().is_none_or(|t| t >= now),
                "{ctx}: receiver timer in the past"
            );
            assert!(
                r.delivered_bytes() >= last_delivered && r.delivered_bytes() <= s.snd_max(),
                "{ctx}"
            );
            last_delivered = r.delivered_bytes();
            steps_in_recovery += u64::from(s.in_recovery());
        };
        check(&mut s, &r, now, &mut net, 0);
        for step in 1..1500 {
            match rng.random_range(0..10) {
                0..=3 if !net.is_empty() => {
                    // Deliver one segment, maybe out of order, maybe lost, maybe duplicated.
                    let i = rng.random_range(0..net.len().min(4));
                    let seg = if rng.random_bool(0.05) {
                        net[i]
                    } else {
                        net.remove(i)
                    };
                    if !rng.random_bool(loss) {
                        if let Some(a) = r.on_segment(now, &seg) {
                            assert!(a.ack <= s.snd_max());
                            acks.push(a);
                        }
                    }
                }
                4..=6 if !acks.is_empty() => {
                    let i = rng.random_range(0..acks.len().min(3));
                    let a = acks.remove(i);
                    if !rng.random_bool(loss / 2.0) {
                        s.on_ack(now, &a);
                    }
                }
                7 => {
                    // A stray ACK anywhere around the window, mid-segment or beyond snd_max.
                    let lo = s.snd_una().saturating_sub(3000);
                    let v = rng.random_range(lo..=s.snd_max() + 3000);
                    s.on_ack(now, &ack(v));
                }
                _ => {
                    // Advance time, serving timers in order.
                    let target = now + Duration::from_millis(rng.random_range(0..400));
                    loop {
                        let next = [s.poll_timeout(), r.poll_timeout()]
                            .into_iter()
                            .flatten()
                            .min();
                        match next {
                            Some(t) if t <= target => {
                                now = now.max(t);
                                s.on_timeout(now);
                                check(&mut s, &r, now, &mut net, step);
                                if let Some(a) = r.on_timeout(now) {
                                    acks.push(a);
                                }
                            }
                            _ => break,
                        }
                    }
                    now = target;
                }
            }
            check(&mut s, &r, now, &mut net, step);
        }
        let st = s.stats();
        total.fast_retransmits += st.fast_retransmits;
        total.timeouts += st.timeouts;
        total.retransmits += st.retransmits;
        total.invalid_acks += st.invalid_acks;
    }
    assert!(total.fast_retransmits > 100, "{total:?}");
    assert!(total.timeouts > 100, "{total:?}");
    assert!(total.retransmits > 1000, "{total:?}");
    assert!(total.invalid_acks > 100, "{total:?}");
    assert!(
        steps_in_recovery > 1000,
        "fast recovery exercised: {steps_in_recovery}"
    );
}

/// One CUBIC flow alone on 10 Mbps, 40 ms RTT (20 ms each way), 100 KB
/// drop-tail queue (2 BDP), 60 s: utilisation above 90 %, the queue
/// overflows, recovery halves nothing (β = 0.7 keeps the pipe full), and
/// after the start-up every 5 s interval runs above 90 % of capacity.
#[test]
fn end_to_end_cubic_fills_a_10mbps_bottleneck() {
    let config = TcpConfig {
        variant: TcpVariant::Cubic,
        ..TcpConfig::default()
    };
    let rate = Bitrate::mbps(10);
    let mut net = Net::new(config, rate, Duration::from_millis(20), Bytes::new(100_000));
    assert_eq!(net.sender.growth_name(), "cubic");
    let mut per_second = Vec::new();
    let mut last = 0;
    for k in 1..=60 {
        net.run_until(Instant::from_secs(k));
        let d = net.receiver.delivered_bytes();
        per_second.push(d - last);
        last = d;
    }
    let capacity = rate * Duration::from_secs(60);
    let utilisation = net.receiver.delivered_bytes() as f64 / capacity.as_f64();
    let st = net.sender.stats().clone();
    let ctx = format!(
        "utilisation {utilisation:.3} drops {} exits {:?} {st:?}\n{per_second:?}",
        net.queue_drops, net.recovery_exits
    );
    eprintln!("{ctx}");
    assert!(utilisation > 0.90, "{ctx}");
    assert!(net.queue_drops > 0, "the queue must overflow: {ctx}");
    assert!(st.fast_retransmits > 1, "{ctx}");
    // β = 0.7: after each recovery ssthresh is 0.7 of the flight at the loss.
    for &(cwnd, ssthresh, _) in &net.recovery_exits {
        assert_eq!(cwnd, ssthresh, "{ctx}");
    }
    let five_s = (rate * Duration::from_secs(5)).get();
    for (k, w) in per_second.chunks(5).enumerate().skip(2) {
        let b: u64 = w.iter().sum();
        assert!(b * 10 > five_s * 9, "interval {k} below 90 %: {ctx}");
    }
}
