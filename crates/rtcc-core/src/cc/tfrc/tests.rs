//! Mechanism tests of the TFRC sender (RFC 5348 §4, with §5–§6 at the
//! sender). The equation, the loss history, the reception record and
//! `X_recv_set` have their own tests in their files.

#![allow(
    clippy::float_cmp,
    reason = "p is exactly 0 until a loss event, and trace values are copies of exact ones"
)]

use super::*;
use crate::media::frame::FrameType;
use crate::packet::PacketResult;

/// Receiver clock offset: only differences of receiver times may matter.
const RX_OFFSET: Duration = Duration::from_secs(1000);
/// One-way delay each way: the RTT sample of every report is 100 ms.
const OWD: Duration = Duration::from_millis(50);
/// R in every test.
const R: Duration = Duration::from_millis(100);

fn kbps(x: Bitrate) -> f64 {
    x.as_kbps_f64()
}

/// Segments of 1000 bytes, bounds that never clamp, no §4.5 (X exact).
fn config() -> TfrcConfig {
    TfrcConfig {
        min_bitrate: Bitrate::bps(1),
        max_bitrate: Bitrate::mbps(1000),
        segment_size: Bytes::new(1000),
        oscillation_prevention: false,
        ..TfrcConfig::default()
    }
}

/// Drives one sender: packets are sent at `now`, arrive `OWD` later and are
/// reported `OWD` after that.
struct Harness {
    cc: Tfrc,
    now: Instant,
    start: Instant,
    next_seq: u64,
    size: u64,
    next_frame: u64,
    /// Sent, not yet reported.
    unreported: Vec<SentPacket>,
}

impl Harness {
    fn new() -> Self {
        Self::with(config())
    }

    fn with(cfg: TfrcConfig) -> Self {
        let now = Instant::from_secs(1);
        Harness {
            cc: Tfrc::new(now, cfg),
            now,
            start: now,
            next_seq: 0,
            size: 1000,
            next_frame: 0,
            unreported: Vec::new(),
        }
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    /// Time since the start, in ms.
    fn t(&self) -> u64 {
        (self.now - self.start).as_millis()
    }

    /// Sends `n` packets now.
    fn send(&mut self, n: u64) {
        for _ in 0..n {
            let p = SentPacket {
                seq: self.next_seq,
                size: Bytes::new(self.size),
                send_time: self.now,
                kind: PacketKind::Media,
                frame_id: Some(self.next_frame),
                ..SentPacket::default()
            };
            self.next_seq += 1;
            self.cc.on_packet_sent(self.now, &p);
            self.unreported.push(p);
        }
    }

    /// A frame of `packets` packets is handed to the transport.
    fn frame(&mut self, packets: u32) {
        let info = FrameInfo {
            frame_id: self.next_frame,
            capture_time: self.now,
            size: Bytes::new(u64::from(packets) * self.size),
            frame_type: FrameType::Delta,
            num_packets: packets,
            target_bitrate: self.cc.target_bitrate(),
        };
        self.next_frame += 1;
        self.cc.on_frame(self.now, &info);
    }

    /// `n` packets sent with a backlog behind them (rate-limited, §8.2.1).
    fn send_rate_limited(&mut self, n: u32) {
        self.frame(1);
        self.frame(n - 1); // finds the first frame still queued
        self.send(u64::from(n));
    }

    /// `n` packets, each sent as soon as its frame comes (data-limited).
    fn send_data_limited(&mut self, n: u32) {
        for _ in 0..n {
            self.frame(1);
            self.send(1);
        }
    }

    /// Reports every packet sent at least 2·OWD ago; those in `lost` never
    /// arrive. The report leaves the receiver at `now − OWD`.
    fn feedback(&mut self, lost: &[u64]) {
        let due = self.now - OWD * 2;
        let (ready, later): (Vec<SentPacket>, Vec<SentPacket>) =
            self.unreported.iter().partition(|p| p.send_time <= due);
        self.unreported = later;
        let packets = ready
            .into_iter()
            .map(|sent| PacketResult {
                sent,
                arrival: (!lost.contains(&sent.seq)).then(|| sent.send_time + RX_OFFSET + OWD),
            })
            .collect();
        let report = FeedbackReport {
            report_time: self.now - OWD + RX_OFFSET,
            packets,
        };
        self.cc.on_feedback(self.now, &report);
    }

    /// One round: `n` rate-limited packets now, their feedback one RTT later.
    fn round(&mut self, n: u32, lost: &[u64]) {
        self.send_rate_limited(n);
        self.advance(R);
        self.feedback(lost);
    }

    /// Moves to the nofeedback deadline and fires it.
    fn expire(&mut self) {
        self.now = self
            .cc
            .poll_timeout()
            .expect("the nofeedback timer is always set");
        self.cc.on_timeout(self.now);
    }

    /// Slow start from the first packet to X = 1280 kbps at t = 300 ms:
    /// rounds of 1, 4 and 8 packets.
    fn slow_start(&mut self) {
        self.round(1, &[]);
        self.round(4, &[]);
        self.round(8, &[]);
    }

    /// [`Self::slow_start`], then a round of 16 with packet `seq` 20 lost:
    /// the first loss event, at t = 400 ms.
    fn first_loss(&mut self) {
        self.slow_start();
        self.round(16, &[20]);
    }
}

fn assert_kbps(got: Bitrate, want: f64) {
    assert!(
        (kbps(got) - want).abs() < 1e-3 * want.max(1.0),
        "got {got}, want {want} kbps"
    );
}

#[test]
fn before_feedback_one_segment_per_second_then_w_init_over_r() {
    let mut h = Harness::new();
    // §4.2: X = s bytes per second, the nofeedback timer at 2 s.
    assert_eq!(h.cc.x(), Bitrate::kbps(8));
    assert_eq!(h.cc.state(), TfrcState::Initial);
    assert_eq!(h.cc.poll_timeout(), Some(h.start + Duration::from_secs(2)));
    assert_eq!(h.cc.send_budget().pacing_rate, Bitrate::kbps(8));
    // The encoder gets start_bitrate until then.
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(300));
    h.round(1, &[]);
    // W_init = min(4·1000, max(2·1000, 4380)) = 4000 B over R = 100 ms.
    assert_eq!(h.cc.rtt(), Some(R));
    assert_eq!(h.cc.x(), Bitrate::kbps(320));
    assert_eq!(h.cc.state(), TfrcState::SlowStart);
    // 4380 B caps W_init for s = 1248 B (350.4 kbps), 2·s rules for 500 B.
    let mut big = Harness::with(TfrcConfig {
        segment_size: Bytes::new(1248),
        ..config()
    });
    big.size = 1248;
    big.round(1, &[]);
    assert_eq!(big.cc.x(), Bitrate::bps(350_400));
    let mut small = Harness::with(TfrcConfig {
        segment_size: Bytes::new(500),
        ..config()
    });
    small.size = 500;
    small.round(1, &[]);
    assert_eq!(small.cc.x(), Bitrate::kbps(160));
}

#[test]
fn rtt_is_an_ewma_with_q_0_9() {
    let mut h = Harness::new();
    h.round(1, &[]);
    assert_eq!(h.cc.rtt(), Some(R));
    // A packet held 100 ms longer in the network: sample 200 ms.
    h.send(1);
    h.advance(Duration::from_millis(200));
    let sent = h.unreported.pop().unwrap();
    let report = FeedbackReport {
        report_time: h.now - OWD + RX_OFFSET,
        packets: vec![PacketResult {
            sent,
            arrival: Some(h.now - OWD + RX_OFFSET),
        }],
    };
    h.cc.on_feedback(h.now, &report);
    // §4.3 step 2: R = 0.9·100 + 0.1·200 = 110 ms.
    assert_eq!(h.cc.rtt(), Some(Duration::from_millis(110)));
    // The receiver's hold (report_time − arrival) is not part of the sample:
    // held 30 ms, the sample is 100 ms again → R = 0.9·110 + 0.1·100 = 109.
    h.send(1);
    h.advance(Duration::from_millis(130));
    let sent = h.unreported.pop().unwrap();
    let report = FeedbackReport {
        report_time: h.now - OWD + RX_OFFSET,
        packets: vec![PacketResult {
            sent,
            arrival: Some(sent.send_time + OWD + RX_OFFSET),
        }],
    };
    h.cc.on_feedback(h.now, &report);
    assert_eq!(h.cc.rtt(), Some(Duration::from_millis(109)));
}

#[test]
fn slow_start_doubles_once_per_rtt_bounded_by_twice_the_receive_rate() {
    let mut h = Harness::new();
    h.round(1, &[]); // t = 100: X = initial rate 320, tld = 100
    assert_eq!(h.cc.x(), Bitrate::kbps(320));
    h.send_rate_limited(4);
    h.advance(Duration::from_millis(50));
    h.send_rate_limited(1); // a packet in the middle of the round
    h.advance(Duration::from_millis(50));
    h.feedback(&[]); // t = 200: one RTT since tld: doubles
    assert_eq!(h.t(), 200);
    assert_eq!(h.cc.x(), Bitrate::kbps(640));
    // Still unlimited: the initial Infinity of X_recv_set is 2R old, not older.
    assert_eq!(h.cc.recv_limit(), None);
    h.advance(Duration::from_millis(50));
    h.feedback(&[]); // t = 250: only half an RTT since the doubling
    assert_eq!(h.cc.x(), Bitrate::kbps(640));
    h.advance(Duration::from_millis(50));
    h.send_rate_limited(8);
    h.advance(R);
    h.feedback(&[]); // t = 400
                     // X_recv_set within 2R: 320 kbps (t = 200), 400 (t = 250: the window
                     // (100, 200] at the receiver held 5 packets), 640 (8 packets):
                     // recv_limit = 1280, and 2X = 1280.
    assert_eq!(h.cc.x_recv(), Bitrate::kbps(640));
    assert_eq!(h.cc.recv_limit(), Some(Bitrate::kbps(1280)));
    assert_eq!(h.cc.x(), Bitrate::kbps(1280));
    // The sender then sends 2 packets per RTT: X_recv 160 kbps.
    h.round(2, &[]); // 640 still in the set
    assert_eq!(h.cc.x(), Bitrate::kbps(1280));
    h.round(2, &[]); // t = 600: the set is {640 (t = 400), 160, 160}
    assert_eq!(h.cc.x(), Bitrate::kbps(1280));
    h.round(2, &[]); // t = 700: {160, 160, 160}: 2·X_recv = 320 kbps
    assert_eq!(h.cc.recv_limit(), Some(Bitrate::kbps(320)));
    // min(2X, 320) = 320, not below the initial rate (320).
    assert_eq!(h.cc.x(), Bitrate::kbps(320));
    assert_eq!(h.cc.p(), 0.0);
}

#[test]
fn slow_start_never_falls_below_the_initial_rate() {
    let mut h = Harness::new();
    h.slow_start();
    for _ in 0..4 {
        h.round(1, &[]); // X_recv = 80 kbps: 2·X_recv = 160 < W_init/R = 320
    }
    assert_eq!(h.cc.recv_limit(), Some(Bitrate::kbps(160)));
    assert_eq!(h.cc.x(), Bitrate::kbps(320));
}

#[test]
fn first_loss_interval_is_seeded_from_the_largest_receive_rate() {
    let mut h = Harness::new();
    h.first_loss();
    // X_recv of the loss round: 15 packets in 100 ms = 1200 kbps, the
    // largest so far. §6.3.1: the synthetic interval is 1/p for the p at
    // which X_Bps(s = 1000, R = 0.1) = 150 000 B/s: p = 0.0060003,
    // 1/p = 166.658 packets. The open interval (seq 20 to 28: 9 packets)
    // would lower the average, so I_mean = 166.658.
    let history = h.cc.loss_history();
    assert_eq!(history.event_count(), 1);
    let mut iv = [0.0; loss_history::MAX_N + 1];
    assert_eq!(history.intervals(28, &mut iv), Some(1));
    assert!((iv[1] - 166.658).abs() < 1e-3, "{iv:?}");
    assert!((h.cc.p() - 0.0060003).abs() < 1e-7, "{}", h.cc.p());
    // X = min(X_Bps, recv_limit) = X_target: instead of doubling from 1280
    // kbps, X falls to what the receiver got.
    assert_eq!(h.cc.state(), TfrcState::CongestionAvoidance);
    assert_kbps(h.cc.x(), 1200.0);
    assert_eq!(h.cc.x_bps().map(kbps).map(f64::round), Some(1200.0));
}

#[test]
fn first_packet_lost_seeds_with_one_packet_per_two_rtts() {
    let mut h = Harness::new();
    h.send_rate_limited(4);
    h.advance(R);
    h.feedback(&[0]);
    // §6.3.1: X_target = s/(2R) = 5000 B/s: p = 0.206429 (the open interval,
    // 4 packets, is below 1/p = 4.84), X = 40 kbps.
    assert!((h.cc.p() - 0.206429).abs() < 1e-6, "{}", h.cc.p());
    assert_kbps(h.cc.x(), 40.0);
}

#[test]
fn three_later_arrivals_make_a_loss_and_reordering_does_not() {
    // A hole reported as lost, filled by the next report: no loss.
    let mut h = Harness::new();
    h.send_rate_limited(10);
    h.advance(R);
    let sent = std::mem::take(&mut h.unreported);
    let result = |p: &SentPacket, late: bool| PacketResult {
        sent: *p,
        arrival: Some(p.send_time + OWD + RX_OFFSET + if late { R } else { Duration::ZERO }),
    };
    let first = FeedbackReport {
        report_time: h.now - OWD + RX_OFFSET,
        packets: sent
            .iter()
            .map(|p| match p.seq {
                5 => PacketResult {
                    sent: *p,
                    arrival: None,
                },
                _ => result(p, false),
            })
            .collect(),
    };
    // Packet 5 missing, four later ones received: a loss (§5.1)…
    let mut lossy = h.cc.clone();
    lossy.on_feedback(h.now, &first);
    assert_eq!(lossy.loss_history().event_count(), 1);
    assert!(lossy.p() > 0.0);
    // …but with only 6, 7 received after it, not yet; 5 then arrives late.
    let partial = FeedbackReport {
        packets: first
            .packets
            .iter()
            .copied()
            .filter(|p| p.sent.seq < 8)
            .collect(),
        ..first.clone()
    };
    h.cc.on_feedback(h.now, &partial);
    assert_eq!(h.cc.p(), 0.0);
    h.advance(R);
    let second = FeedbackReport {
        report_time: h.now - OWD + RX_OFFSET,
        packets: sent
            .iter()
            .filter(|p| p.seq == 5 || p.seq >= 8)
            .map(|p| result(p, p.seq == 5))
            .collect(),
    };
    h.cc.on_feedback(h.now, &second);
    assert_eq!(h.cc.loss_history().event_count(), 0);
    assert_eq!(h.cc.p(), 0.0);
    assert_eq!(h.cc.state(), TfrcState::SlowStart);
}

#[test]
fn a_late_arrival_after_the_loss_was_declared_recalculates_p() {
    let mut h = Harness::new();
    h.first_loss();
    assert!(h.cc.p() > 0.0);
    // Packet 20 turns up after all (RFC 5348 §5.1: it fills the hole).
    let late = PacketResult {
        sent: SentPacket {
            seq: 20,
            size: Bytes::new(1000),
            send_time: h.start + Duration::from_millis(300),
            kind: PacketKind::Media,
            ..SentPacket::default()
        },
        arrival: Some(h.now - OWD + RX_OFFSET),
    };
    h.send(1);
    h.advance(R);
    let mut report = FeedbackReport {
        report_time: h.now - OWD + RX_OFFSET,
        packets: vec![late],
    };
    let p = h.unreported.pop().unwrap();
    report.packets.push(PacketResult {
        sent: p,
        arrival: Some(p.send_time + OWD + RX_OFFSET),
    });
    h.cc.on_feedback(h.now, &report);
    assert!(h.cc.loss_history().is_empty());
    assert_eq!(h.cc.p(), 0.0);
}

#[test]
fn losses_within_one_rtt_are_one_loss_event() {
    let mut h = Harness::new();
    h.slow_start();
    // Three losses in one round (sent together): one event.
    h.round(16, &[15, 18, 22]);
    assert_eq!(h.cc.loss_history().event_count(), 1);
    // A loss in each of the next two rounds (100 ms apart = R: the nominal
    // arrival of the first is T_old + R exactly, the same event; the next
    // one is 200 ms after the event start: a new event).
    h.round(16, &[40]);
    assert_eq!(h.cc.loss_history().event_count(), 1);
    h.round(16, &[56]);
    assert_eq!(h.cc.loss_history().event_count(), 2);
}

#[test]
fn congestion_avoidance_follows_the_equation_within_recv_limit() {
    let mut h = Harness::new();
    h.first_loss();
    // No more loss: the open interval grows, p falls, X_Bps rises; the
    // sender keeps sending 15 packets per RTT, so recv_limit = 2·1200 kbps.
    for _ in 0..30 {
        h.round(15, &[]);
    }
    let x_bps = h.cc.x_bps().unwrap();
    assert!(kbps(x_bps) > 1200.0, "{x_bps}");
    assert_eq!(h.cc.recv_limit(), Some(Bitrate::kbps(2400)));
    assert_eq!(h.cc.x(), x_bps.min(Bitrate::kbps(2400)));
    // The equation at the current s, R and p.
    let want = equation::throughput(Bytes::new(1000), R, h.cc.p(), 1.0, R * 4);
    assert_eq!(x_bps, want);
    // Long enough without loss, the equation exceeds 2·X_recv: X = 2400.
    for _ in 0..200 {
        h.round(15, &[]);
    }
    assert_eq!(h.cc.x(), Bitrate::kbps(2400));
}

#[test]
fn nofeedback_timer_before_any_feedback() {
    // Sending: X halves from one segment per second, and the timer restarts
    // after max(2 s, 2s/X) (§4.2's 2 s in place of 4R).
    let mut h = Harness::new();
    h.send(1);
    h.expire();
    assert_eq!(h.t(), 2000);
    assert_eq!(h.cc.x(), Bitrate::kbps(4));
    assert_eq!(h.cc.nofeedback_expiries(), 1);
    assert_eq!(h.cc.poll_timeout(), Some(h.now + Duration::from_secs(4)));
    // Idle since the timer was set: no halving (no recover_rate yet).
    h.expire();
    assert_eq!(h.cc.x(), Bitrate::kbps(4));
    assert_eq!(h.cc.poll_timeout(), Some(h.now + Duration::from_secs(4)));
    // Not due yet: nothing happens.
    let before = h.cc.poll_timeout();
    h.cc.on_timeout(h.now);
    assert_eq!(h.cc.poll_timeout(), before);
}

#[test]
fn minimum_rate_is_one_segment_per_t_mbi() {
    let mut h = Harness::new();
    for _ in 0..10 {
        h.send(1);
        h.expire();
    }
    // 8000 bps halves to 125 bps = 1000 B / 64 s, and stops there.
    assert_eq!(h.cc.min_rate(), Bitrate::bps(125));
    assert_eq!(h.cc.x(), Bitrate::bps(125));
    // The timer: 2·s/X = 2000 B / 15.625 B/s = 128 s.
    assert_eq!(h.cc.poll_timeout(), Some(h.now + Duration::from_secs(128)));
    // The equation is floored the same way in congestion avoidance.
    let cfg = TfrcConfig {
        t_mbi: Duration::from_secs(1),
        ..config()
    };
    let mut h = Harness::with(cfg);
    h.send_rate_limited(4);
    h.advance(R);
    h.feedback(&[0]);
    // X_Bps = 40 kbps (s/(2R) seeding) > s/t_mbi = 8 kbps here…
    assert_kbps(h.cc.x(), 40.0);
    // …and §4.4 halving stops at 8 kbps.
    for _ in 0..10 {
        h.send(1);
        h.expire();
    }
    assert_eq!(h.cc.x(), Bitrate::kbps(8));
}

#[test]
fn nofeedback_timer_in_slow_start_halves_unless_idle_near_the_initial_rate() {
    let mut h = Harness::new();
    h.slow_start(); // X = 1280 kbps at t = 300
                    // §4.3 steps 3/6: max(4R, 2s/X) with the X before the update (640 kbps:
                    // 2·8000 bits / 640 kbps = 25 ms): 400 ms.
    assert_eq!(h.cc.poll_timeout(), Some(h.now + R * 4));
    h.send(1);
    h.expire();
    // p = 0: X = max(X/2, s/t_mbi).
    assert_eq!(h.cc.x(), Bitrate::kbps(640));
    h.send(1);
    h.expire();
    assert_eq!(h.cc.x(), Bitrate::kbps(320));
    // Idle, and X < 2·recover_rate (640 kbps): kept.
    h.expire();
    assert_eq!(h.cc.x(), Bitrate::kbps(320));
    assert_eq!(h.cc.nofeedback_expiries(), 3);
}

#[test]
fn nofeedback_timer_in_congestion_avoidance_halves_through_x_recv_set() {
    let mut h = Harness::new();
    h.first_loss(); // X = X_Bps = 1200 = X_recv
    let x_bps = h.cc.x_bps().unwrap();
    // X_Bps ≤ 2·X_recv: Update_Limits(X_Bps/2): X = X_Bps/2.
    h.send(1);
    h.expire();
    assert_kbps(h.cc.x(), kbps(x_bps) / 2.0);
    assert_eq!(h.cc.recv_limit(), Some(x_bps.mul_f64(0.5)));
    // The cached X_recv is now X_Bps/4, so 2·X_recv < X_Bps: Update_Limits(X_recv):
    // X = X_Bps/4, and halving goes on at each expiry.
    h.send(1);
    h.expire();
    assert_kbps(h.cc.x(), kbps(x_bps) / 4.0);
    h.expire(); // idle, but X_Bps > recover_rate: halves anyway
    assert_kbps(h.cc.x(), kbps(x_bps) / 8.0);
    // Feedback resumes at a low receive rate: X_recv_set limits X.
    h.advance(Duration::from_millis(10));
    h.round(2, &[]);
    assert_eq!(h.cc.x_recv(), Bitrate::kbps(160));
}

#[test]
fn data_limited_intervals_keep_the_largest_receive_rate() {
    // The same history twice: a loss at 1200 kbps, then the application
    // sends one packet per RTT (X_recv = 80 kbps).
    let run = |detect: bool| {
        let mut h = Harness::with(TfrcConfig {
            data_limited_detection: detect,
            ..config()
        });
        h.first_loss();
        for _ in 0..5 {
            h.send_data_limited(1);
            h.advance(R);
            h.feedback(&[]);
        }
        h
    };
    let with = run(true);
    let without = run(false);
    assert!(with.cc.data_limited());
    assert!(!without.cc.data_limited());
    // Without the §4.3 data-limited branch, 2·X_recv = 160 kbps limits X.
    assert_eq!(without.cc.recv_limit(), Some(Bitrate::kbps(160)));
    assert_eq!(without.cc.x(), Bitrate::kbps(160));
    // With it, Maximize keeps the 1200 kbps received in the last
    // rate-limited RTT: recv_limit = 2400 kbps, and X is the equation's
    // (1200 kbps: the open interval is still below the first one).
    assert_eq!(with.cc.recv_limit(), Some(Bitrate::kbps(2400)));
    assert_eq!(Some(with.cc.x()), with.cc.x_bps());
    assert_kbps(with.cc.x(), 1200.0);
}

#[test]
fn a_loss_in_a_data_limited_interval_halves_the_receive_rates() {
    let mut h = Harness::new();
    h.first_loss();
    for _ in 0..2 {
        h.send_data_limited(1);
        h.advance(R);
        h.feedback(&[]);
    }
    assert_eq!(h.cc.recv_limit(), Some(Bitrate::kbps(2400)));
    // Four packets, data-limited, the first lost: a new loss event (the
    // previous one started 300 ms ago).
    let lost = h.next_seq;
    h.send_data_limited(4);
    h.advance(R);
    h.feedback(&[lost]);
    assert!(h.cc.data_limited());
    assert_eq!(h.cc.loss_history().event_count(), 2);
    // "Halve entries in X_recv_set; X_recv = 0.85 * X_recv; Maximize;
    // recv_limit = max (X_recv_set)": max(1200/2, 0.85·240) = 600 kbps
    // (not 2·max).
    assert_eq!(h.cc.x_recv(), Bitrate::kbps(204));
    assert_eq!(h.cc.recv_limit(), Some(Bitrate::kbps(600)));
    assert!(h.cc.x() <= Bitrate::kbps(600));
}

#[test]
fn oscillation_prevention_scales_by_the_square_root_of_the_rtt() {
    let mut h = Harness::with(TfrcConfig {
        oscillation_prevention: true,
        ..config()
    });
    h.round(1, &[]);
    // R_sqmean = sqrt(R_sample): X_inst = X.
    assert_eq!(h.cc.allowed_rate(), h.cc.x());
    // A 400 ms sample: R_sqmean = 0.9·sqrt(0.1) + 0.1·sqrt(0.4) = 0.347851;
    // X_inst = X·0.347851/sqrt(0.4) = 0.55·X.
    h.send(1);
    h.advance(Duration::from_millis(400));
    let sent = h.unreported.pop().unwrap();
    let report = FeedbackReport {
        report_time: h.now - OWD + RX_OFFSET,
        packets: vec![PacketResult {
            sent,
            arrival: Some(h.now - OWD + RX_OFFSET),
        }],
    };
    h.cc.on_feedback(h.now, &report);
    let ratio = h.cc.allowed_rate().as_bps_f64() / h.cc.x().as_bps_f64();
    assert!((ratio - 0.55).abs() < 1e-6, "{ratio}");
    assert_eq!(h.cc.send_budget().pacing_rate, h.cc.allowed_rate());
    assert_eq!(h.cc.target_bitrate(), h.cc.allowed_rate());
}

#[test]
fn segment_size_is_the_mean_over_the_last_four_loss_intervals() {
    let mut h = Harness::new();
    assert_eq!(h.cc.segment_size(), Bytes::new(1000)); // configured
    h.size = 500;
    h.send(1);
    assert_eq!(h.cc.segment_size(), Bytes::new(500));
    h.size = 1500;
    h.send(3);
    // (500 + 4500)/4
    assert_eq!(h.cc.segment_size(), Bytes::new(1250));
    h.advance(R);
    h.feedback(&[]);
    // Five loss events 200 ms apart, each opening an interval of 16
    // packets: 2000 B packets in the first, 1600 B in the second, 1000 B in
    // the last three. "The last four loss intervals" (I_0 … I_3) start at
    // the second event: (16·1600 + 48·1000)/64 = 1150 B.
    for size in [2000, 1600, 1000, 1000, 1000] {
        h.size = size;
        let lost = h.next_seq;
        h.round(8, &[lost]);
        h.round(8, &[]);
    }
    assert_eq!(h.cc.loss_history().event_count(), 5);
    assert_eq!(h.cc.segment_size(), Bytes::new(1150));
}

#[test]
fn a_report_with_nothing_new_is_not_feedback() {
    let mut h = Harness::new();
    h.round(1, &[]);
    h.send(1);
    h.advance(R);
    let sent = h.unreported.pop().unwrap();
    let report = FeedbackReport {
        report_time: h.now - OWD + RX_OFFSET,
        packets: vec![PacketResult {
            sent,
            arrival: Some(sent.send_time + OWD + RX_OFFSET),
        }],
    };
    h.cc.on_feedback(h.now, &report);
    let (x, deadline, rtt) = (h.cc.x(), h.cc.poll_timeout(), h.cc.rtt());
    // The same report again, later: no RTT sample, no timer restart.
    h.advance(Duration::from_millis(30));
    h.cc.on_feedback(h.now, &report);
    assert_eq!(
        (h.cc.x(), h.cc.poll_timeout(), h.cc.rtt()),
        (x, deadline, rtt)
    );
    // A report of losses only: likewise.
    h.send(1);
    h.advance(R);
    let sent = h.unreported.pop().unwrap();
    h.cc.on_feedback(
        h.now,
        &FeedbackReport {
            report_time: h.now + RX_OFFSET,
            packets: vec![PacketResult {
                sent,
                arrival: None,
            }],
        },
    );
    assert_eq!((h.cc.x(), h.cc.poll_timeout()), (x, deadline));
}

#[test]
fn outputs_and_trace() {
    let mut h = Harness::with(TfrcConfig {
        min_bitrate: Bitrate::kbps(100),
        max_bitrate: Bitrate::kbps(1000),
        ..config()
    });
    // Before feedback: start_bitrate, pacing at one segment per second.
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(300));
    assert_eq!(h.cc.estimate().state, "initial");
    assert_eq!(h.cc.estimate().bandwidth, None);
    h.slow_start();
    // X = 1280 kbps: the target is clamped to 1000, pacing to 2·1000.
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(1000));
    assert_eq!(h.cc.send_budget().pacing_rate, Bitrate::kbps(1280));
    h.round(16, &[]);
    assert_eq!(h.cc.x(), Bitrate::kbps(2560));
    assert_eq!(h.cc.send_budget().pacing_rate, Bitrate::kbps(2000));
    let est = h.cc.estimate();
    assert_eq!(est.state, "slow-start");
    assert_eq!(est.rtt, Some(R));
    assert_eq!(est.loss_rate, Some(0.0));
    let mut vars = Vec::new();
    h.cc.trace(&mut |v: &'static str, x: f64| vars.push((v, x)));
    let get = |name: &str| vars.iter().find(|(v, _)| *v == name).map(|&(_, x)| x);
    assert_eq!(get("x_kbps"), Some(2560.0));
    assert_eq!(get("state"), Some(1.0));
    assert_eq!(get("rtt_ms"), Some(100.0));
    assert_eq!(get("x_bps_kbps"), None); // p = 0
    assert_eq!(get("x_inst_kbps"), None); // §4.5 off
    for (v, _) in &vars {
        assert!(h.cc.trace_variables().contains(v), "{v}");
    }
    let lost = h.next_seq + 1;
    h.round(16, &[lost]);
    let mut vars = Vec::new();
    h.cc.trace(&mut |v: &'static str, x: f64| vars.push((v, x)));
    let get = |name: &str| vars.iter().find(|(v, _)| *v == name).map(|&(_, x)| x);
    assert_eq!(get("state"), Some(2.0));
    assert_eq!(get("loss_events"), Some(1.0));
    assert!(get("x_bps_kbps").is_some() && get("i_mean_packets").is_some());
    assert_eq!(h.cc.estimate().state, "congestion-avoidance");
}

#[test]
fn config_validation_names_the_key() {
    assert_eq!(TfrcConfig::default().validate(), Ok(()));
    let bad = TfrcConfig {
        q: 1.0,
        ..TfrcConfig::default()
    };
    let Err(TfrcConfigError::OutOfRange { key, .. }) = bad.validate() else {
        panic!("q = 1 accepted")
    };
    assert_eq!(key, "q");
    let bad = TfrcConfig {
        min_bitrate: Bitrate::mbps(20),
        ..TfrcConfig::default()
    };
    assert!(matches!(
        bad.validate(),
        Err(TfrcConfigError::Bounds { .. })
    ));
    let mut bad = TfrcConfig::default();
    bad.loss_history.n = 0;
    assert!(bad.validate().is_err());
}
