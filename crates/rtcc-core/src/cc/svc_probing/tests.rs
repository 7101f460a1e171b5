//! Unit tests of each mechanism of the SVC probing controller, against a
//! minimal bottleneck (one FIFO link, constant rate, no cross traffic) so
//! that every expected value can be worked out by hand.

use std::collections::VecDeque;

use super::*;
use crate::cc::test_feedback::take_report;
use crate::packet::{PacketKind, PacketResult};

/// A sender of 1000 B packets at the subscribed layers' rate (at the train's
/// rate while a train is being sent), over a
/// FIFO bottleneck of `rate` with `one_way` delay each way; the receiver
/// reports every `report_every`.
struct Harness {
    cc: SvcProbing,
    rate: Bitrate,
    one_way: Duration,
    report_every: Duration,
    now: Instant,
    seq: u64,
    busy_until: Instant,
    next_send: Instant,
    next_report: Instant,
    /// Sent packets not yet reported, with their arrival (None = dropped).
    unreported: Vec<(SentPacket, Option<Instant>)>,
    /// Reports on their way back, with their delivery time.
    returning: VecDeque<(Instant, FeedbackReport)>,
    /// Sequence numbers to drop at the link.
    drop: Vec<u64>,
    /// Extra queueing delay added to packets sent in [from, to).
    bump: Option<(Instant, Instant, Duration)>,
}

const SIZE: Bytes = Bytes::new(1000);

impl Harness {
    fn new(config: SvcProbingConfig, rate: Bitrate) -> Self {
        Harness {
            cc: SvcProbing::new(Instant::ZERO, config),
            rate,
            one_way: Duration::from_millis(20),
            report_every: Duration::from_millis(50),
            now: Instant::ZERO,
            seq: 0,
            busy_until: Instant::ZERO,
            next_send: Instant::ZERO,
            next_report: Instant::from_millis(50),
            unreported: Vec::new(),
            returning: VecDeque::new(),
            drop: Vec::new(),
            bump: None,
        }
    }

    fn send(&mut self) {
        let pkt = SentPacket {
            seq: self.seq,
            size: SIZE,
            send_time: self.now,
            kind: PacketKind::Media,
            frame_id: None,
            first_in_frame: false,
            last_in_frame: false,
            bytes_in_flight: Bytes::ZERO,
        };
        self.seq += 1;
        self.cc.on_packet_sent(self.now, &pkt);
        let start = self.busy_until.max(self.now);
        self.busy_until = start + self.rate.transmit_time(SIZE);
        let mut arrival = self.busy_until + self.one_way;
        if let Some((from, to, extra)) = self.bump {
            if self.now >= from && self.now < to {
                arrival += extra;
            }
        }
        let arrival = (!self.drop.contains(&pkt.seq)).then_some(arrival);
        self.unreported.push((pkt, arrival));
        // A layered source sends at its layers' rate; while a train is
        // being sent the driver pads up to the train's rate (I1).
        let rate = match self.cc.poll_probe(self.now) {
            Some(p) => p.rate,
            None => self.cc.target_bitrate(),
        };
        self.next_send = self.now + rate.transmit_time(SIZE);
    }

    fn report(&mut self) {
        let now = self.now;
        // Everything that arrived by now, and every dropped packet sent
        // before the newest arrival (NACK-style), is reported.
        if let Some(r) = take_report(&mut self.unreported, now) {
            self.returning.push_back((now + self.one_way, r));
        }
        self.next_report = now + self.report_every;
    }

    fn run_until(&mut self, end: Instant) {
        while self.now < end {
            let next_back = self.returning.front().map(|(t, _)| *t);
            let next = [
                Some(self.next_send),
                Some(self.next_report),
                next_back,
                self.cc.poll_timeout(),
                Some(end),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap();
            self.now = next.max(self.now);
            if self.now >= end {
                break;
            }
            if next_back.is_some_and(|t| t <= self.now) {
                let (_, r) = self.returning.pop_front().unwrap();
                self.cc.on_feedback(self.now, &r);
            } else if self.cc.poll_timeout().is_some_and(|t| t <= self.now) {
                self.cc.on_timeout(self.now);
            } else if self.next_report <= self.now {
                self.report();
            } else {
                self.send();
            }
        }
    }

    /// Runs in 1 ms steps until the start phase is over (at most 10 s).
    fn until_start_done(&mut self) {
        while self.cc.in_start_phase() {
            assert!(self.now < Instant::from_secs(10), "start phase never ended");
            self.run_until(self.now + Duration::from_millis(1));
        }
    }
}

fn config() -> SvcProbingConfig {
    SvcProbingConfig::default()
}

#[test]
fn top_down_start_phase_reaches_the_link_in_two_trains() {
    // 1.25 Mbps link, first train at the top layer (2 Mbps): its delays
    // grow (FS = 1) and it arrives at the link's 1.25 Mbps, which becomes
    // the second train's rate; that train sees constant delays, so the
    // estimate is 1.25 Mbps and 12 layers (1200 kbps) are subscribed.
    let mut h = Harness::new(config(), Bitrate::kbps(1250));
    assert!(h.cc.in_start_phase());
    assert_eq!(h.cc.send_budget().pacing_rate, Bitrate::mbps(2));
    assert_eq!(
        h.cc.target_bitrate(),
        Bitrate::kbps(100),
        "base layer meanwhile (I9)"
    );
    h.until_start_done();
    let est = h.cc.start_estimate().unwrap().as_kbps_f64();
    assert!((est - 1250.0).abs() < 1.0, "estimate {est} kbps");
    assert_eq!(h.cc.start_trains(), 2);
    assert_eq!(h.cc.level(), 12);
}

#[test]
fn a_first_train_below_the_link_ends_the_start_phase_at_once() {
    let mut h = Harness::new(config(), Bitrate::mbps(5));
    h.until_start_done();
    assert_eq!(h.cc.start_trains(), 1);
    assert_eq!(h.cc.level(), 20);
    assert_eq!(h.cc.last_train().unwrap().fs, Some(0.0));
}

#[test]
fn binary_search_halves_the_range_for_four_trains() {
    // Range [0, 2 Mbps] on a 1.2 Mbps link: 1000 (no trend → lo), 1500
    // (trend → hi), 1250 (trend → hi), 1125 (no trend → lo); estimate the
    // middle of [1125, 1250] = 1187.5 kbps → 11 layers.
    let c = SvcProbingConfig {
        search: Search::Binary,
        ..config()
    };
    let mut h = Harness::new(c, Bitrate::kbps(1200));
    assert_eq!(h.cc.send_budget().pacing_rate, Bitrate::mbps(1));
    h.until_start_done();
    assert_eq!(h.cc.start_trains(), 4);
    assert_eq!(h.cc.start_estimate(), Some(Bitrate::bps(1_187_500)));
    assert_eq!(h.cc.level(), 11);
}

#[test]
fn a_lossy_train_counts_as_a_trend() {
    // A 5 Mbps link would pass the 2 Mbps train, but its 10th packet is
    // dropped: the train is judged above the available bandwidth (I3) and a
    // second train is sent.
    let mut h = Harness::new(config(), Bitrate::mbps(5));
    h.drop.push(10);
    h.until_start_done();
    assert_eq!(h.cc.start_trains(), 2);
}

#[test]
fn eq12_interval_is_layer_step_over_packet_size_times_rtt_min() {
    // 100 kbps = 12.5 packets/s of 1000 B; RTT_min about 100 ms (50 ms
    // each way, measured) → literal t = 12.5 × RTT_min seconds; TCP's time
    // 12.5 × RTT_min² (both above the one-RTT floor).
    let mut h = Harness::new(config(), Bitrate::mbps(5));
    h.one_way = Duration::from_millis(50);
    h.until_start_done();
    let rtt_min = h.cc.rtt_min.unwrap().as_secs_f64();
    let t = h.cc.eq12(10).as_secs_f64();
    assert!((t - 12.5 * rtt_min).abs() < 1e-6, "t {t} rtt_min {rtt_min}");
    let tcp = SvcProbing {
        config: SvcProbingConfig {
            probe_interval: ProbeInterval::Tcp,
            ..config()
        },
        ..h.cc.clone()
    };
    let t = tcp.eq12(10).as_secs_f64();
    assert!((t - 12.5 * rtt_min * rtt_min).abs() < 1e-6, "{t}");
}

#[test]
fn eq13_backs_off_by_the_share_of_the_top_layer_up_to_threshold_t() {
    let mut cc = SvcProbing::new(Instant::ZERO, config());
    cc.level = 10;
    cc.interval = Duration::from_secs(1);
    // 1 s × (1 + 1000/2000) = 1.5 s.
    assert_eq!(cc.eq13(), Duration::from_millis(1500));
    cc.interval = Duration::from_secs(8);
    assert_eq!(cc.eq13(), Duration::from_secs(10), "capped at threshold_t");
}

#[test]
fn eq14_threshold_is_a_times_the_top_layers_share() {
    let mut cc = SvcProbing::new(Instant::ZERO, config());
    cc.level = 10;
    assert!((cc.threshold_plr() - 0.03).abs() < 1e-12);
    cc.level = 1;
    assert!((cc.threshold_plr() - 0.3).abs() < 1e-12);
    cc.level = 20;
    assert!((cc.threshold_plr() - 0.015).abs() < 1e-12);
}

#[test]
fn loss_above_threshold_drops_to_the_layer_nearest_rate_times_one_minus_sqrt_p() {
    // 12 layers on a 5 Mbps link, then 4 % of packets lost: threshold_PLR at
    // 12 layers is 0.3 × 100/1200 = 2.5 %, so layers drop to the one nearest
    // 1200 × (1 − 0.2) = 960 kbps → 10 layers (1000; 900 is farther).
    let c = SvcProbingConfig {
        initial_probe: InitialProbe::Rate(Bitrate::kbps(1200)),
        probe_backoff_max: Duration::from_secs(100),
        ..config()
    };
    let mut h = Harness::new(c, Bitrate::mbps(5));
    h.until_start_done();
    assert_eq!(h.cc.level(), 12);
    h.cc.next_probe = Some(Instant::from_secs(100)); // no probing in this test
                                                     // Drop every 25th packet from now on; the first decision is checked
                                                     // (at 10 layers 4 % is still above 0.3 × 100/1000 = 3 %, and the
                                                     // layers keep going down until the threshold passes 4 %; probes in
                                                     // between fail on the loss of their own packets or succeed and are
                                                     // dropped again).
    let from = h.seq;
    h.drop.extend((from..from + 10_000).filter(|s| s % 25 == 0));
    let deadline = h.now + Duration::from_secs(3);
    while h.cc.level() == 12 && h.now < deadline {
        h.run_until(h.now + Duration::from_millis(1));
    }
    assert_eq!(h.cc.level(), 10, "loss {:?}", h.cc.loss_rate());
    h.run_until(h.now + Duration::from_secs(10));
    // 10 → nearest 800 kbps = 8 (3.75 % < 4 %) → nearest 640 = 6, where
    // 0.3 × 100/600 = 5 % stays above the loss: the cascade stops at 6.
    assert_eq!(h.cc.level(), 6);
}

#[test]
fn loss_below_threshold_keeps_the_layers() {
    // 1 % loss at 12 layers is under the 2.5 % threshold (2 % is too close:
    // a 1 s window of about 150 packets holds 3 or 4 of every 50th).
    let c = SvcProbingConfig {
        initial_probe: InitialProbe::Rate(Bitrate::kbps(1200)),
        probe_backoff_max: Duration::from_secs(100),
        probe_interval: ProbeInterval::Literal,
        ..config()
    };
    let mut h = Harness::new(c, Bitrate::mbps(5));
    h.until_start_done();
    h.cc.next_probe = Some(Instant::from_secs(100)); // no probing in this test
    let from = h.seq;
    h.drop
        .extend((from..from + 10_000).filter(|s| s % 100 == 0));
    h.run_until(Instant::from_secs(5));
    assert!(
        h.cc.loss_rate().is_some_and(|p| p > 0.0),
        "the loss is seen"
    );
    assert_eq!(h.cc.level(), 12);
}

#[test]
fn a_successful_probe_adds_a_layer_and_a_failed_one_gives_it_back() {
    // Start at 10 layers on a 1.15 Mbps link: probing 11 (1100 kbps)
    // succeeds, probing 12 (1200 kbps) queues and fails, and the next probe
    // is postponed by eq. 13.
    let c = SvcProbingConfig {
        initial_probe: InitialProbe::Rate(Bitrate::kbps(1000)),
        ..config()
    };
    let mut h = Harness::new(c, Bitrate::kbps(1150));
    h.until_start_done();
    assert_eq!(h.cc.level(), 10);
    let t12 = h.cc.probe_interval();
    // Wait for the first probe and its verdict.
    let mut seen_probe = false;
    while h.now < Instant::from_secs(20) && h.cc.level() < 11 {
        h.run_until(h.now + Duration::from_millis(10));
        if h.cc.phase == Phase::Probing {
            seen_probe = true;
            // I11: a transmission-phase probe is the media at its own
            // packet sizes (no padding of media asked for).
            if let Some(p) = h.cc.poll_probe(h.now) {
                assert!(
                    !p.pad_media,
                    "transmission-phase probe asks for padded media"
                );
            }
        }
    }
    assert!(seen_probe);
    h.run_until(h.now + Duration::from_millis(500));
    assert_eq!(h.cc.level(), 11, "the 1100 kbps probe fits the link");
    assert_eq!(h.cc.phase, Phase::Normal);
    assert!(h.cc.probe_interval() >= t12.mul_f64(0.99));
    // The next probe (12 layers) fails.
    let before = h.cc.probe_interval();
    let deadline = h.now + before + Duration::from_secs(2);
    while h.cc.probe_interval() == before && h.now < deadline {
        h.run_until(h.now + Duration::from_millis(1));
    }
    assert_eq!(h.cc.level(), 11, "the 1200 kbps probe does not fit");
    let ratio = h.cc.probe_interval().as_secs_f64() / before.as_secs_f64();
    // Eq. 13 at 11 layers: × (1 + 1100/2000) = 1.55.
    assert!((ratio - 1.55).abs() < 0.01, "backoff ratio {ratio}");
}

/// Runs a normal period from the end of the start phase, with 30 ms of
/// extra delay on packets sent in [`bump_from`, `bump_from` + 0.5 s) and no
/// timed probe; returns when the first probe started, if one did by 3 s
/// after the bump, the bump's end, and the normal period's start.
fn probe_after_an_rtt_bump(
    c: SvcProbingConfig,
    bump_from: Duration,
) -> (Option<Instant>, Instant, Instant) {
    let mut h = Harness::new(c, Bitrate::mbps(5));
    h.until_start_done();
    assert_eq!(h.cc.phase, Phase::Normal);
    h.cc.next_probe = Some(Instant::from_secs(100));
    let normal_from = h.now;
    let from = h.now + bump_from;
    let bump_end = from + Duration::from_millis(500);
    h.bump = Some((from, bump_end, Duration::from_millis(30)));
    let mut probed_at = None;
    while h.now < bump_end + Duration::from_secs(3) && probed_at.is_none() {
        h.run_until(h.now + Duration::from_millis(5));
        if h.cc.phase == Phase::Probing {
            probed_at = Some(h.now);
        }
    }
    (probed_at, bump_end, normal_from)
}

fn eq15_config(needs: RttProbeLoss) -> SvcProbingConfig {
    SvcProbingConfig {
        initial_probe: InitialProbe::Rate(Bitrate::kbps(1000)),
        probe_backoff_max: Duration::from_secs(10),
        rtt_probe_loss: needs,
        ..config()
    }
}

#[test]
fn rtt_back_near_its_minimum_probes_at_once() {
    // Eq. 15: once the normal period's loss rate is measured (a 1 s window)
    // and under threshold_PLR, the first RTT back near RTT_min after a
    // stretch of raised RTT starts a probe long before t expires.
    let (probed_at, bump_end, _) = probe_after_an_rtt_bump(
        eq15_config(RttProbeLoss::Measured),
        Duration::from_millis(1500),
    );
    // The first packet sent after the bump comes back one RTT (about 40 ms)
    // and one report interval later.
    let at = probed_at.expect("a probe on the RTT's return");
    let after = at.saturating_duration_since(bump_end).as_millis_f64();
    assert!(
        at > bump_end && after < 150.0,
        "probe {after} ms after the bump"
    );
}

#[test]
fn an_rtt_return_before_the_loss_rate_is_measured_waits_for_it() {
    // I6: the same bump at the start of the normal period, before its
    // loss window is full. With `Measured` the RTT's return probes only
    // once the 1 s window is full (until then "loss rate less than
    // threshold_PLR" is not known); with `Assumed` it probes at once.
    let (measured, bump_end, normal_from) =
        probe_after_an_rtt_bump(eq15_config(RttProbeLoss::Measured), Duration::ZERO);
    let at = measured.expect("a probe once the loss rate is measured");
    let window = at.saturating_duration_since(normal_from).as_millis_f64();
    assert!(
        (1000.0..1150.0).contains(&window),
        "probe {window} ms into the normal period"
    );
    let (assumed, bump_end_b, _) =
        probe_after_an_rtt_bump(eq15_config(RttProbeLoss::Assumed), Duration::ZERO);
    assert_eq!(bump_end, bump_end_b);
    let at = assumed.expect("a probe on the RTT's return");
    let after = at.saturating_duration_since(bump_end).as_millis_f64();
    assert!(
        at > bump_end && after < 150.0,
        "probe {after} ms after the bump"
    );
}

#[test]
fn trains_pace_at_their_rate_and_ask_for_padding_until_sent() {
    let mut cc = SvcProbing::new(Instant::ZERO, config());
    assert_eq!(cc.send_budget().pacing_rate, Bitrate::mbps(2));
    let probe = cc.poll_probe(Instant::ZERO).unwrap();
    assert_eq!(probe.rate, Bitrate::mbps(2));
    // I11: a start-phase train is of equal-sized packets, its data packets
    // padded to the train's size.
    assert!(probe.pad_media);
    assert_eq!(probe.padding_size, SIZE);
    for k in 0..30u64 {
        cc.on_packet_sent(
            Instant::from_millis(4 * k),
            &SentPacket {
                seq: k,
                size: SIZE,
                send_time: Instant::from_millis(4 * k),
                kind: PacketKind::Padding,
                frame_id: None,
                first_in_frame: false,
                last_in_frame: false,
                bytes_in_flight: Bytes::ZERO,
            },
        );
    }
    assert!(cc.poll_probe(Instant::from_millis(120)).is_none());
    assert_eq!(cc.send_budget().pacing_rate, Bitrate::kbps(125));
    // No RTT known yet: the train waits for the first report.
    assert_eq!(cc.poll_timeout(), None);
    // The first packet is reported (RTT 40 ms), the others never are:
    // after max(train_timeout, 2 RTT) = 1 s the train is judged lossy (a
    // trend), and the next train starts at half the rate (no R_out).
    let first = SentPacket {
        seq: 0,
        size: SIZE,
        send_time: Instant::ZERO,
        kind: PacketKind::Padding,
        frame_id: None,
        first_in_frame: false,
        last_in_frame: false,
        bytes_in_flight: Bytes::ZERO,
    };
    cc.on_feedback(
        Instant::from_millis(40),
        &FeedbackReport {
            report_time: Instant::from_millis(20),
            packets: vec![PacketResult {
                sent: first,
                arrival: Some(Instant::from_millis(20)),
            }],
        },
    );
    assert_eq!(
        cc.poll_timeout(),
        Some(Instant::from_millis(116) + Duration::from_secs(1))
    );
    cc.on_timeout(Instant::from_secs(2));
    assert_eq!(
        cc.poll_probe(Instant::from_secs(2)).unwrap().rate,
        Bitrate::mbps(1)
    );
}

#[test]
fn reestimation_restarts_the_start_phase() {
    let c = SvcProbingConfig {
        reestimate_interval: Duration::from_secs(5),
        ..config()
    };
    let mut h = Harness::new(c, Bitrate::kbps(1250));
    h.until_start_done();
    let first_done = h.now;
    let started = h.cc.trains_started;
    while !h.cc.in_start_phase() {
        assert!(h.now < Instant::from_secs(20), "no re-estimation");
        h.run_until(h.now + Duration::from_millis(1));
    }
    // Five seconds after the first estimate (plus the end of any probe).
    let gap = h.now.saturating_duration_since(first_done).as_secs_f64();
    assert!((5.0..6.0).contains(&gap), "restarted after {gap} s");
    h.until_start_done();
    assert!(h.cc.trains_started > started);
    let est = h.cc.start_estimate().unwrap().as_kbps_f64();
    assert!(
        (1100.0..=1250.0).contains(&est),
        "second estimate {est} kbps"
    );
}

#[test]
fn config_ranges_are_checked() {
    assert!(config().validate().is_ok());
    let bad = SvcProbingConfig {
        train_length: 2,
        ..config()
    };
    assert_eq!(bad.validate().unwrap_err().key, "train_length");
    let bad = SvcProbingConfig {
        plr_a: 1.5,
        ..config()
    };
    assert_eq!(bad.validate().unwrap_err().key, "plr_a");
    let bad = SvcProbingConfig {
        loss_window: Duration::ZERO,
        ..config()
    };
    assert_eq!(bad.validate().unwrap_err().key, "loss_window");
}

#[test]
fn the_received_rate_judge_accepts_a_probe_the_trend_judge_rejects() {
    // 1.15 Mbps link from 11 layers: the 1200 kbps probe queues (FS = 1,
    // rejected by the trend) but arrives at 1150 kbps, within 5 % of 1200
    // (I10), so the received-rate judge keeps the 12th layer.
    for (judge, want) in [(ProbeSuccess::Trend, 11), (ProbeSuccess::ReceivedRate, 12)] {
        let c = SvcProbingConfig {
            initial_probe: InitialProbe::Rate(Bitrate::kbps(1100)),
            probe_success: judge,
            ..config()
        };
        let mut h = Harness::new(c, Bitrate::kbps(1150));
        h.until_start_done();
        assert_eq!(h.cc.level(), 11);
        while h.cc.phase != Phase::Probing {
            h.run_until(h.now + Duration::from_millis(1));
        }
        while h.cc.phase == Phase::Probing {
            h.run_until(h.now + Duration::from_millis(1));
        }
        assert_eq!(h.cc.level(), want, "{judge:?}");
    }
}
