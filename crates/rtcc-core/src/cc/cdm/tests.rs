//! Unit tests of each mechanism of the CDM, one per mechanism (design note,
//! "Tests").
//!
//! Most use a scripted harness: each call plays one reporting interval whose
//! packets, delays, losses and feedback are chosen by the test, so every
//! expected PID count, threshold and eq. (1) value can be worked out by
//! hand. One test runs the controller over a FIFO bottleneck instead.

#![allow(
    clippy::float_cmp,
    reason = "trace values are copies of exact integers and codes"
)]

use std::collections::VecDeque;

use super::*;
use crate::cc::test_feedback::take_report;
use crate::packet::{PacketKind, PacketResult};
use crate::units::Bytes;

/// Packet size on the wire in every test (eq. 1's s).
const SIZE: Bytes = Bytes::new(1000);
/// The receiver's clock runs this far ahead of the sender's: one-way delays
/// carry the offset, and only their differences may matter.
const RX_OFFSET: Duration = Duration::from_secs(1000);

/// The traffic of one reporting interval in the scripted harness.
#[derive(Debug, Clone, Copy)]
struct Iv {
    /// Packets sent during the interval (spread over its first half).
    packets: usize,
    /// Queuing delay of every packet but the first (the queue empties once
    /// per interval, so the interval's smallest delay is the path's).
    queue: Duration,
    /// A queue that never empties: added to every packet, the first too.
    standing: Duration,
    /// The first packet's delay is this much below the path's (a spurious
    /// sample, §V-A).
    dip: Duration,
    /// Packets 1..=lost are lost.
    lost: usize,
    /// Whether the receiver's report reaches the sender.
    report: bool,
}

impl Iv {
    /// 100 packets, no queue, no loss, reported.
    fn quiet() -> Self {
        Iv {
            packets: 100,
            queue: Duration::ZERO,
            standing: Duration::ZERO,
            dip: Duration::ZERO,
            lost: 0,
            report: true,
        }
    }

    /// A queue of `ms` behind the first packet.
    fn queued(ms: u64) -> Self {
        Iv {
            queue: Duration::from_millis(ms),
            ..Iv::quiet()
        }
    }

    /// A queue of `ms` and `lost` of the 100 packets lost.
    fn lossy(ms: u64, lost: usize) -> Self {
        Iv {
            lost,
            ..Iv::queued(ms)
        }
    }

    /// Packets sent, no feedback back.
    fn silent() -> Self {
        Iv {
            report: false,
            ..Iv::quiet()
        }
    }
}

/// Plays reporting intervals at a controller: packets sent at `now`, a
/// single report per interval built after the last one arrived, delivered
/// `ret` later; then the interval's timer.
struct Script {
    cc: Cdm,
    now: Instant,
    seq: u64,
    /// Forward propagation delay.
    base: Duration,
    /// Return-path delay of the reports.
    ret: Duration,
}

impl Script {
    fn new(config: CdmConfig) -> Self {
        let now = Instant::from_secs(1);
        Script {
            cc: Cdm::new(now, config),
            now,
            seq: 0,
            base: Duration::from_millis(50),
            ret: Duration::from_millis(50),
        }
    }

    fn interval_len(&self) -> Duration {
        self.cc.config.report_interval
    }

    /// One reporting interval; returns the plan after its decision.
    fn play(&mut self, iv: Iv) -> LayerPlan {
        let start = self.now;
        let len = self.interval_len();
        let gap = (len / 2) / iv.packets.max(1) as u64;
        let mut packets = Vec::with_capacity(iv.packets);
        let mut last_arrival = None;
        for i in 0..iv.packets {
            let t = start + Duration::from_millis(1) + gap * i as u64;
            let pkt = SentPacket {
                seq: self.seq,
                size: SIZE,
                send_time: t,
                kind: PacketKind::Media,
                ..SentPacket::default()
            };
            self.seq += 1;
            self.cc.on_packet_sent(t, &pkt);
            let mut owd = self.base + iv.standing;
            if i == 0 {
                owd = owd.saturating_sub(iv.dip);
            } else {
                owd += iv.queue;
            }
            let lost = i >= 1 && i <= iv.lost;
            let arrival = (!lost).then(|| t + RX_OFFSET + owd);
            if let Some(a) = arrival {
                last_arrival = Some(last_arrival.map_or(a, |l: Instant| l.max(a)));
            }
            packets.push(PacketResult { sent: pkt, arrival });
        }
        if iv.report {
            if let Some(newest) = last_arrival {
                // Built 1 ms after the last arrival, back after `ret`.
                let report_time = newest + Duration::from_millis(1);
                let at = report_time - RX_OFFSET + self.ret;
                assert!(
                    at < start + len,
                    "the report must arrive within its interval"
                );
                self.cc.on_feedback(
                    at,
                    &FeedbackReport {
                        report_time,
                        packets,
                    },
                );
            }
        }
        self.now = start + len;
        assert_eq!(self.cc.poll_timeout(), Some(self.now), "interval timer");
        self.cc.on_timeout(self.now);
        self.check();
        self.cc.plan()
    }

    /// `n` intervals alike; the data PIDs after each.
    fn play_n(&mut self, iv: Iv, n: usize) -> Vec<usize> {
        (0..n).map(|_| self.play(iv).layers).collect()
    }

    /// Plan, target, budget and estimate agree (checked after every interval).
    fn check(&self) {
        let cc = &self.cc;
        let plan = cc.plan();
        let pid = cc.ladder().step(1);
        assert!(plan.protected <= plan.layers, "{plan:?}");
        assert_eq!(cc.layer_plan(), Some(plan));
        let steps = (plan.layers + plan.protected) as u64;
        assert_eq!(cc.target_bitrate(), Bitrate::bps(pid.as_bps() * steps));
        assert_eq!(cc.target_bitrate(), plan.rate(cc.ladder()));
        assert!(cc.target_bitrate() <= cc.ladder().rate(cc.ladder().len()));
        let paced = cc.target_bitrate().max(pid).mul_f64(cc.config.pacing_gain);
        assert_eq!(cc.send_budget().pacing_rate, paced);
        assert_eq!(cc.estimate().state, cc.mode().name());
        if cc.mode() == Mode::Terminated {
            assert_eq!(plan, LayerPlan::default());
        } else {
            assert!(plan.layers >= 1, "{plan:?}");
        }
    }

    /// Losses at the minimum rate until Safe Retreat (five intervals from
    /// the start at 5 PIDs: 5 → 2 → 1, then three intervals at one PID).
    fn drive_to_retreat(&mut self) {
        let layers = self.play_n(Iv::lossy(300, 2), 5);
        assert_eq!(layers, [2, 1, 1, 1, 2], "5 → 2 → 1 → Safe Retreat");
        assert_eq!(self.cc.mode(), Mode::SafeRetreat);
    }

    /// Safe Retreat, then four intervals with a competitor and 1 % loss.
    fn drive_to_aggression(&mut self) {
        self.drive_to_retreat();
        self.play_n(Iv::lossy(300, 1), 4);
        assert_eq!(self.cc.mode(), Mode::Aggression);
    }

    /// The last trace sample, as (name, value) pairs.
    fn trace(&self) -> Vec<(&'static str, f64)> {
        let mut vars = Vec::new();
        self.cc
            .trace(&mut |v: &'static str, x: f64| vars.push((v, x)));
        vars
    }

    fn traced(&self, name: &str) -> Option<f64> {
        self.trace()
            .into_iter()
            .find(|(v, _)| *v == name)
            .map(|(_, x)| x)
    }

    /// The path's delay as the controller measures it (offset included).
    fn owd(&self, extra: Duration) -> OneWayDelay {
        OneWayDelay::of(Instant::ZERO, Instant::ZERO + RX_OFFSET + self.base + extra)
    }
}

fn config() -> CdmConfig {
    CdmConfig::default()
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

#[test]
fn the_defaults_are_the_papers() {
    let c = config();
    c.validate().unwrap();
    let cc = Cdm::new(Instant::ZERO, c);
    // §III: 10 PIDs of 10 % each; §VI: 5 of them at the start.
    assert_eq!(cc.ladder().len(), 10);
    assert_eq!(cc.ladder().step(1), Bitrate::kbps(70));
    assert_eq!(cc.plan(), LayerPlan::data(5));
    assert_eq!(cc.target_bitrate(), Bitrate::kbps(350));
    assert_eq!(cc.mode(), Mode::Delay);
    assert_eq!(cc.poll_timeout(), Some(Instant::from_secs(10)));
    assert_eq!(cc.thresholds(), None, "no delay measured yet");
}

#[test]
fn thresholds_move_the_rate_one_pid_at_a_time() {
    // [d_min, d_max] = [base, base + 0.5 × 1 s]; low at 10 % (+50 ms),
    // high at 30 % (+150 ms). A queue of 40 ms is low, 100 ms between the
    // thresholds, 200 ms high (the interval's mean is 0.99 × the queue).
    let mut h = Script::new(config());
    assert_eq!(
        h.play_n(Iv::queued(40), 3),
        [5, 5, 6],
        "up after three low intervals"
    );
    let t = h.cc.thresholds().unwrap();
    assert_eq!(t.d_min, h.owd(Duration::ZERO));
    assert_eq!(t.d_max, h.owd(ms(500)));
    assert_eq!(t.low, h.owd(ms(50)));
    assert_eq!(t.high, h.owd(ms(150)));
    // Between the thresholds: hold, and the low streak starts again.
    assert_eq!(h.play_n(Iv::queued(40), 2), [6, 6]);
    assert_eq!(h.play(Iv::queued(100)).layers, 6);
    assert_eq!(h.play_n(Iv::queued(40), 3), [6, 6, 7]);
    // Above the high threshold: one PID down per interval.
    assert_eq!(h.play_n(Iv::queued(200), 2), [6, 5]);
    assert_eq!(h.cc.plan().protected, 0, "delay mode sends no FEC");
    assert_eq!(h.cc.mode(), Mode::Delay);
    // Never above N.
    let mut h = Script::new(CdmConfig {
        initial_pids: 10,
        ..config()
    });
    assert_eq!(h.play_n(Iv::quiet(), 3), [10, 10, 10]);
}

#[test]
fn a_loss_report_halves_the_pids_and_bounds_d_max_by_its_delay() {
    let mut h = Script::new(config());
    assert_eq!(h.play_n(Iv::quiet(), 3), [5, 5, 6]);
    // A loss with the queue at 120 ms: 6 → 3 PIDs, and d_max is now
    // d_min + 120 ms (the interval's peak delay), below the playout cap of
    // 500 ms; the thresholds follow: low +12 ms, high +36 ms.
    assert_eq!(h.play(Iv::lossy(120, 2)).layers, 3);
    let t = h.cc.thresholds().unwrap();
    assert_eq!(t.d_max, h.owd(ms(120)));
    assert_eq!((t.low, t.high), (h.owd(ms(12)), h.owd(ms(36))));
    assert_eq!(h.traced("d_max_ms"), Some(t.d_max.as_millis_f64()));
    // A queue of 60 ms sat between the thresholds before the loss; now it
    // is above the high one: the flow "avoids contributing a similar load".
    assert_eq!(h.play(Iv::queued(60)).layers, 2);
    // A loss is halved even when the delay is low; at one PID it stays.
    assert_eq!(h.play(Iv::lossy(0, 1)).layers, 1);
    assert_eq!(h.play(Iv::lossy(0, 1)).layers, 1);
    // Its d_max is the new loss's delay, floored at `min_span` (50 ms).
    assert_eq!(h.cc.thresholds().unwrap().d_max, h.owd(ms(50)));

    // With the interval's mean delay as the loss delay, d_max is 0.99 × 120.
    let mut h = Script::new(CdmConfig {
        loss_delay: LossDelay::Mean,
        ..config()
    });
    h.play(Iv::lossy(120, 2));
    // Mean of 1 packet at base and 97 at base + 120 ms.
    let mean = Duration::from_nanos(120_000_000 * 97 / 98);
    assert_eq!(h.cc.thresholds().unwrap().d_max, h.owd(mean));
    assert_eq!(h.cc.plan().layers, 2, "5 PIDs halved, rounded down");
}

#[test]
fn a_spurious_d_min_is_purged_after_its_window() {
    let mut h = Script::new(config());
    h.play(Iv::quiet());
    // One packet 30 ms faster than the path (a measurement glitch).
    h.play(Iv {
        dip: ms(30),
        ..Iv::quiet()
    });
    let path = h.owd(Duration::ZERO);
    let dip = OneWayDelay::from_nanos(path.as_nanos() - 30_000_000);
    assert_eq!(h.cc.d_min(), Some(dip));
    // It stays while its interval is among the last `d_min_window` = 3,
    // then the path's is back.
    h.play_n(Iv::quiet(), 2);
    assert_eq!(h.cc.d_min(), Some(dip));
    h.play(Iv::quiet());
    assert_eq!(h.cc.d_min(), Some(path));
}

#[test]
fn a_late_comer_relearns_d_min_when_the_standing_queue_drains() {
    // The flow starts behind a standing queue of 200 ms (an earlier flow's):
    // it takes the queue for the path and sees no congestion.
    let standing = Iv {
        standing: ms(200),
        ..Iv::quiet()
    };
    let mut h = Script::new(config());
    assert_eq!(h.play_n(standing, 3), [5, 5, 6]);
    assert_eq!(h.cc.d_min(), Some(h.owd(ms(200))));
    // The queue drains once: d_min is the path's at once (a minimum).
    h.play(Iv::quiet());
    assert_eq!(h.cc.d_min(), Some(h.owd(Duration::ZERO)));
    // The same standing queue is now read as a queue: one PID down.
    assert_eq!(h.play(standing).layers, 5);
}

#[test]
fn a_route_change_is_relearned_not_read_as_congestion_forever() {
    let mut h = Script::new(config());
    assert_eq!(h.play_n(Iv::quiet(), 3), [5, 5, 6]);
    // The path's delay steps up by 300 ms (a new route, no queue). While
    // the old minimum is in the 3-interval window, 300 ms reads as a queue
    // above the high threshold (+150 ms): one PID down per interval...
    h.base += ms(300);
    assert_eq!(h.play_n(Iv::quiet(), 2), [5, 4]);
    // ...until the window holds only the new route: d_min is re-learned,
    // the delay is low again and the rate climbs back.
    assert_eq!(h.play(Iv::quiet()).layers, 4);
    assert_eq!(h.cc.d_min(), Some(h.owd(Duration::ZERO)));
    assert_eq!(h.play_n(Iv::quiet(), 6), [4, 5, 5, 5, 6, 6]);
}

#[test]
fn return_path_delay_does_not_cut_the_rate() {
    // Two flows see the same forward path; the second's reports come back
    // 550 ms later from the fourth interval on (return-path congestion).
    let mut a = Script::new(config());
    let mut b = Script::new(config());
    let mut plans = (Vec::new(), Vec::new());
    for i in 0..12 {
        if i == 3 {
            b.ret += ms(550);
        }
        plans.0.push(a.play(Iv::quiet()));
        plans.1.push(b.play(Iv::quiet()));
    }
    assert_eq!(plans.0, plans.1, "the plans differ");
    assert_eq!(
        b.cc.plan(),
        LayerPlan::data(9),
        "5 → 9 PIDs in 12 intervals"
    );
    // The RTT did rise by 550 ms: only the forward one-way delay is judged.
    assert_eq!(b.cc.last_interval().unwrap().rtt, Some(ms(650)));
    assert_eq!(a.cc.last_interval().unwrap().rtt, Some(ms(100)));
    // The same with round trips judged (I18's ablation): the 550 ms of
    // return-path queue reads as forward congestion and cuts the rate.
    let mut c = Script::new(CdmConfig {
        delay_signal: DelaySignal::Rtt,
        ..config()
    });
    let mut rtt_plans = Vec::new();
    for i in 0..12 {
        if i == 3 {
            c.ret += ms(550);
        }
        rtt_plans.push(c.play(Iv::quiet()).layers);
    }
    assert_eq!(rtt_plans[..4], [5, 5, 6, 5], "{rtt_plans:?}");
    assert!(rtt_plans[4] < rtt_plans[2], "{rtt_plans:?}");
}

#[test]
fn silence_drops_one_pid_every_two_intervals_until_feedback_returns() {
    let mut h = Script::new(config());
    assert_eq!(h.play_n(Iv::quiet(), 3), [5, 5, 6]);
    // §V-D: no feedback within two intervals, then one step every two.
    assert_eq!(h.play_n(Iv::silent(), 5), [6, 5, 5, 4, 4]);
    assert_eq!(h.cc.silent_intervals(), 5);
    assert_eq!(h.traced("silent_intervals"), Some(5.0));
    // Feedback returns: delay-based control resumes from where it is.
    assert_eq!(h.play_n(Iv::quiet(), 3), [4, 4, 5]);
    assert_eq!(h.cc.silent_intervals(), 0);
    // An interval in which nothing was sent is not silence.
    let idle = Iv {
        packets: 0,
        report: false,
        ..Iv::quiet()
    };
    assert_eq!(h.play_n(idle, 4), [5, 5, 5, 5]);
    assert_eq!(h.cc.silent_intervals(), 0);
}

#[test]
fn silence_steps_a_tcp_aware_plan_down_and_a_loss_never_raises_it() {
    let mut h = Script::new(config());
    h.drive_to_aggression();
    // One PID's worth every two silent intervals: the last repair stream
    // or data PID added goes first.
    let plans: Vec<LayerPlan> = (0..4).map(|_| h.play(Iv::silent())).collect();
    let (four, three, two) = (
        LayerPlan {
            layers: 2,
            protected: 2,
        },
        LayerPlan {
            layers: 2,
            protected: 1,
        },
        LayerPlan {
            layers: 1,
            protected: 1,
        },
    );
    assert_eq!(plans, [four, three, three, two]);
    assert_eq!(h.cc.mode(), Mode::Aggression);
    // Feedback returns with a loss: eq. (1) at R = 400 ms, p = 0.01 allows
    // 224.7 kbit/s (3 PIDs' worth), at or below the retreat plan, so the
    // flow goes back to Safe Retreat, keeping the smaller plan it had.
    assert_eq!(h.play(Iv::lossy(300, 1)), two);
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
}

#[test]
fn losses_at_one_pid_lead_to_safe_retreat() {
    let mut h = Script::new(config());
    // 5 → 2 → 1 on the first two loss reports; the second brought the flow
    // to one PID with a loss. Then held there with losses: intervals 3 and
    // 4 are not yet "consistently" (3 intervals), 5 is.
    assert_eq!(h.play_n(Iv::lossy(300, 2), 4), [2, 1, 1, 1]);
    assert_eq!(h.cc.mode(), Mode::Delay);
    assert_eq!(h.play(Iv::lossy(300, 2)), RetreatPlan::BothProtected.plan());
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
    // Fig. 5: "PID 2 and also FEC packets of PIDs 1 & 2", 4 PIDs' worth.
    assert_eq!(
        h.cc.plan(),
        LayerPlan {
            layers: 2,
            protected: 2
        }
    );
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(280));
    assert_eq!(h.traced("mode"), Some(1.0));
    assert_eq!(h.traced("protected"), Some(2.0));
    // §VI's other plans: 20 % and 30 %.
    for (plan, kbps) in [(RetreatPlan::Base, 140), (RetreatPlan::BaseAndPid2, 210)] {
        let mut h = Script::new(CdmConfig {
            retreat_plan: plan,
            ..config()
        });
        h.play_n(Iv::lossy(300, 2), 5);
        assert_eq!(h.cc.mode(), Mode::SafeRetreat);
        assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(kbps));
    }
    // Held at one PID by delay alone (no loss since it got there), the flow
    // stays in delay mode: delay-based competitors are not TCP.
    let mut h = Script::new(config());
    h.play_n(Iv::quiet(), 1);
    assert_eq!(h.play_n(Iv::queued(400), 5), [4, 3, 2, 1, 1]);
    assert_eq!(h.play_n(Iv::queued(400), 6), [1; 6]);
    assert_eq!(h.cc.mode(), Mode::Delay);
}

#[test]
fn losses_on_the_way_down_count_for_safe_retreat() {
    // Fig. 5: a loss halves the rate (5 → 2), the delay takes it to PID 1
    // (no loss in that interval), and "the delay still remains high enough
    // to hinder it from growing back": three intervals at PID 1 without a
    // loss, and Safe Retreat (I9, `retreat_loss = "descent"`).
    let mut h = Script::new(config());
    assert_eq!(h.play(Iv::lossy(300, 2)).layers, 2);
    assert_eq!(h.play(Iv::queued(400)).layers, 1);
    assert_eq!(h.play_n(Iv::queued(400), 2), [1, 1]);
    assert_eq!(h.cc.mode(), Mode::Delay);
    assert_eq!(h.play(Iv::queued(400)), RetreatPlan::BothProtected.plan());
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
    // A low-delay interval in between ends the descent: its loss no longer
    // counts.
    let mut h = Script::new(config());
    h.play(Iv::lossy(300, 2));
    h.play(Iv::quiet());
    h.play_n(Iv::queued(400), 2);
    assert_eq!(h.play_n(Iv::queued(400), 4), [1; 4]);
    assert_eq!(h.cc.mode(), Mode::Delay);
    // `"floor"`: only a loss at one PID or in the interval that brought the
    // flow there counts.
    let mut h = Script::new(CdmConfig {
        retreat_loss: RetreatLoss::Floor,
        ..config()
    });
    h.play(Iv::lossy(300, 2));
    assert_eq!(h.play_n(Iv::queued(400), 6), [1; 6]);
    assert_eq!(h.cc.mode(), Mode::Delay);
}

#[test]
fn safe_retreat_turns_to_aggression_after_more_than_three_intervals_with_loss() {
    let mut h = Script::new(config());
    h.drive_to_retreat();
    // The delay stays high with 1 % loss: three intervals are not "more
    // than three", the fourth is.
    h.play_n(Iv::lossy(300, 1), 3);
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
    assert_eq!(h.play(Iv::lossy(300, 1)), RetreatPlan::BothProtected.plan());
    assert_eq!(h.cc.mode(), Mode::Aggression);
    assert_eq!(h.traced("mode"), Some(2.0));
    // A high delay without loss counts too, as long as some loss was seen.
    let mut h = Script::new(config());
    h.drive_to_retreat();
    h.play(Iv::lossy(300, 1));
    h.play_n(Iv::queued(300), 2);
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
    h.play(Iv::queued(300));
    assert_eq!(h.cc.mode(), Mode::Aggression);
    // Without any loss it stays in Safe Retreat.
    let mut h = Script::new(config());
    h.drive_to_retreat();
    h.play_n(Iv::queued(300), 8);
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
}

#[test]
fn aggression_adds_a_pid_then_its_repair() {
    let mut h = Script::new(config());
    h.drive_to_aggression();
    let plans: Vec<(usize, usize)> = (0..8)
        .map(|_| h.play(Iv::queued(300)))
        .map(|p| (p.layers, p.protected))
        .collect();
    // From PIDs 1–2 with their FEC: PID 3, its copy, PID 4, ... up to the
    // nominal rate with the FEC inside it (5 PIDs + 5 repair streams).
    assert_eq!(
        plans,
        [
            (3, 2),
            (3, 3),
            (4, 3),
            (4, 4),
            (5, 4),
            (5, 5),
            (5, 5),
            (5, 5)
        ]
    );
    assert_eq!(h.cc.target_bitrate(), Bitrate::kbps(700));
    assert_eq!(h.cc.mode(), Mode::Aggression);
}

#[test]
fn a_loss_in_aggression_is_bounded_by_eq_1() {
    // 10 PIDs of 100 kbps; the worked numbers of RFC 5348 §3.1 with
    // s = 1000 B, R = 100 ms, RTO = 4R = 400 ms, b = 1; p the interval's
    // own loss fraction (the next test has the default span).
    let mut h = Script::new(CdmConfig {
        nominal_rate: Bitrate::mbps(1),
        loss_horizon: LossHorizon::Interval,
        ..config()
    });
    h.drive_to_aggression();
    h.play_n(Iv::queued(300), 6);
    assert_eq!(
        h.cc.plan(),
        LayerPlan {
            layers: 5,
            protected: 5
        }
    );
    // One interval: 100 packets, 1 lost (p = 0.01), the newest packet
    // 20 + 30 ms forward and 50 ms back (R = 100 ms):
    //   R·sqrt(2p/3)              = 0.1 · 0.0816497 = 0.00816497
    //   RTO·3·sqrt(3p/8)·p·(1+32p²) = 0.4 · 0.1837117 · 0.01 · 1.0032 = 0.00073720
    //   X = 1000 / 0.00890217 B/s = 112 332 B/s = 898.658 kbit/s,
    // so 8 PIDs' worth: PIDs 1–4 with their repair streams.
    h.base = ms(20);
    h.ret = ms(50);
    let plan = h.play(Iv::lossy(30, 1));
    let s = *h.cc.last_interval().unwrap();
    assert_eq!(s.rtt, Some(ms(100)));
    assert_eq!(s.packet_size, Some(SIZE));
    assert_eq!(s.loss_fraction(), 0.01);
    assert_eq!(h.cc.tfrc_bound(), Some(Bitrate::bps(898_658)));
    assert_eq!(
        plan,
        LayerPlan {
            layers: 4,
            protected: 4
        }
    );
    assert_eq!(h.cc.mode(), Mode::Aggression);
    let traced = h.traced("tfrc_kbps").unwrap();
    assert!((traced - 898.658).abs() < 1e-9, "{traced}");
    // p = 0.05: X = 1000 / (0.0182574 + 0.0088731) = 36 859 B/s =
    // 294.871 kbit/s, 2 PIDs' worth: below the retreat plan, so back to
    // Safe Retreat and its plan.
    let plan = h.play(Iv::lossy(30, 5));
    assert_eq!(h.cc.tfrc_bound(), Some(Bitrate::bps(294_871)));
    assert_eq!(plan, RetreatPlan::BothProtected.plan());
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
}

#[test]
fn eq_1_takes_the_loss_fraction_of_the_tcp_aware_period() {
    let mut h = Script::new(CdmConfig {
        nominal_rate: Bitrate::mbps(1),
        ..config()
    });
    h.drive_to_aggression();
    h.play_n(Iv::queued(300), 6);
    h.base = ms(20);
    h.ret = ms(50);
    // Since Safe Retreat began: 4 intervals with 1 loss in 100 packets, 6
    // without, and this one: p = 5 / 1100, not this interval's 0.01. With
    // R = 100 ms eq. (1) gives 1396.120 kbit/s, above the nominal rate:
    // the plan stays.
    let plan = h.play(Iv::lossy(30, 1));
    assert_eq!(h.cc.last_interval().unwrap().loss_fraction(), 0.01);
    assert_eq!(h.cc.tfrc_bound(), Some(Bitrate::bps(1_396_120)));
    assert_eq!(plan.layers + plan.protected, 10);
    // Eight more intervals of 1 loss in 100: the span now starts at the
    // oldest of the last 8 loss intervals (TFRC's n), so p = 8 / 800 =
    // 0.01 and X = 898.658 kbit/s as in the previous test.
    h.play_n(Iv::lossy(30, 1), 8);
    assert_eq!(h.cc.tfrc_bound(), Some(Bitrate::bps(898_658)));
    // Back in delay mode the span starts over: a later TCP-aware period
    // does not inherit these losses.
    h.play_n(Iv::quiet(), 2);
    assert_eq!(h.cc.mode(), Mode::Delay);
    assert!(h.cc.loss_history.is_empty() && h.cc.loss_intervals == 0);
}

#[test]
fn persistent_overload_steps_down_to_safe_retreat() {
    let mut h = Script::new(CdmConfig {
        nominal_rate: Bitrate::mbps(1),
        ..config()
    });
    h.drive_to_aggression();
    h.play_n(Iv::queued(300), 6);
    assert_eq!(h.cc.plan().layers + h.cc.plan().protected, 10);
    // 1 loss in 1000 packets at R = 100 ms: eq. (1) allows 3.07 Mbit/s,
    // above the nominal rate, so the first two loss intervals keep the
    // plan; from the third in a row each drops a step.
    h.base = ms(20);
    let lossy = Iv {
        packets: 1000,
        ..Iv::lossy(30, 1)
    };
    let steps: Vec<usize> = (0..8)
        .map(|_| h.play(lossy))
        .map(|p| p.layers + p.protected)
        .collect();
    assert_eq!(h.cc.tfrc_bound(), Some(Bitrate::bps(3_070_749)));
    assert_eq!(steps, [10, 10, 9, 8, 7, 6, 5, 4]);
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
}

#[test]
fn clear_intervals_return_to_delay_mode_with_the_fec_dropped() {
    let mut h = Script::new(config());
    h.drive_to_aggression();
    h.play_n(Iv::queued(300), 2);
    assert_eq!(
        h.cc.plan(),
        LayerPlan {
            layers: 3,
            protected: 3
        }
    );
    // The competitor leaves: no loss, the queue gone. One clear interval is
    // not "consistent" (it still adds a step); the second returns to delay
    // mode with the data PIDs and no repair stream.
    assert_eq!(
        h.play(Iv::quiet()),
        LayerPlan {
            layers: 4,
            protected: 3
        }
    );
    assert_eq!(h.cc.mode(), Mode::Aggression);
    assert_eq!(h.play(Iv::quiet()), LayerPlan::data(4));
    assert_eq!(h.cc.mode(), Mode::Delay);
    assert_eq!(h.traced("mode"), Some(0.0));
    // Then delay-based growth, one PID after three low intervals.
    assert_eq!(h.play_n(Iv::quiet(), 3), [4, 4, 5]);
    // From Safe Retreat alike ("the delay rapidly dives").
    let mut h = Script::new(config());
    h.drive_to_retreat();
    h.play(Iv::quiet());
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
    assert_eq!(h.play(Iv::quiet()), LayerPlan::data(2));
    assert_eq!(h.cc.mode(), Mode::Delay);
}

#[test]
fn a_retreat_that_cannot_hold_its_base_layer_terminates() {
    let mut h = Script::new(config());
    h.drive_to_retreat();
    // 60 % loss: more than a rate-1/2 repair stream can make good. An
    // interruption starts the count again.
    h.play_n(Iv::lossy(300, 60), 2);
    h.play(Iv::lossy(300, 10));
    h.play_n(Iv::lossy(300, 60), 2);
    assert_eq!(h.cc.mode(), Mode::SafeRetreat);
    h.play(Iv::lossy(300, 60));
    assert_eq!(h.cc.mode(), Mode::Terminated);
    assert_eq!(h.cc.plan(), LayerPlan::default());
    assert_eq!(h.cc.target_bitrate(), Bitrate::ZERO);
    assert_eq!(h.cc.estimate().state, "terminated");
    assert_eq!(h.cc.estimate().bandwidth, None);
    assert_eq!(h.traced("mode"), Some(3.0));
    assert_eq!(h.traced("pids"), Some(0.0));
    assert!(h.cc.send_budget().pacing_rate > Bitrate::ZERO);
    // Final: no timer, feedback changes nothing.
    assert_eq!(h.cc.poll_timeout(), None);
    let now = h.now + ms(20_000);
    h.cc.on_timeout(now);
    h.cc.on_feedback(now, &FeedbackReport::default());
    assert_eq!(h.cc.mode(), Mode::Terminated);
}

#[test]
fn plan_and_target_agree_through_every_mode() {
    // `Script::check` runs after every interval: this walks every mode.
    let mut h = Script::new(config());
    h.drive_to_aggression();
    h.play_n(Iv::queued(300), 3);
    h.play_n(Iv::silent(), 2);
    h.play_n(Iv::quiet(), 2);
    assert_eq!(h.cc.mode(), Mode::Delay);
    let vars: Vec<&str> = h.trace().iter().map(|(v, _)| *v).collect();
    assert_eq!(vars, CDM_TRACE_VARIABLES, "every variable reported");
    assert_eq!(
        h.traced("rate_kbps"),
        Some(h.cc.target_bitrate().as_kbps_f64())
    );
}

#[test]
fn a_late_timer_closes_every_interval_that_ended() {
    let mut h = Script::new(config());
    // Nothing sent: three intervals close on one call, silently.
    h.cc.on_timeout(Instant::from_secs(31) + ms(5));
    assert_eq!(h.cc.poll_timeout(), Some(Instant::from_secs(41)));
    assert_eq!(h.cc.plan(), LayerPlan::data(5));
}

#[test]
fn config_errors_name_the_key_and_value() {
    let bad = |c: CdmConfig| c.validate().unwrap_err();
    let e = bad(CdmConfig {
        pids: 3,
        ..config()
    });
    assert_eq!(e.key, "pids");
    assert_eq!(
        e.to_string(),
        "cdm: `pids` = 3 must be in [4, 64] (the retreat plan sends 4 PIDs' worth)"
    );
    CdmConfig {
        pids: 3,
        retreat_plan: RetreatPlan::BaseAndPid2,
        initial_pids: 3,
        ..config()
    }
    .validate()
    .unwrap();
    assert_eq!(
        bad(CdmConfig {
            pids: 65,
            ..config()
        })
        .key,
        "pids"
    );
    let e = bad(CdmConfig {
        initial_pids: 11,
        ..config()
    });
    assert_eq!(
        e.to_string(),
        "cdm: `initial_pids` = 11 must be in [1, 10] (`pids`)"
    );
    let e = bad(CdmConfig {
        threshold_high: 0.05,
        ..config()
    });
    assert_eq!(e.key, "threshold_high");
    assert_eq!(
        bad(CdmConfig {
            report_interval: Duration::ZERO,
            ..config()
        })
        .key,
        "report_interval"
    );
    assert_eq!(
        bad(CdmConfig {
            terminate_loss: 0.0,
            ..config()
        })
        .key,
        "terminate_loss"
    );
    assert_eq!(
        bad(CdmConfig {
            nominal_rate: Bitrate::bps(5),
            ..config()
        })
        .key,
        "nominal_rate"
    );
    assert_eq!(
        bad(CdmConfig {
            pacing_gain: 0.5,
            ..config()
        })
        .key,
        "pacing_gain"
    );
}

/// A sender of 1000 B packets at the CDM's target over a FIFO bottleneck
/// of `rate` whose queue drops what would wait longer than `buffer`, with
/// `one_way` propagation each way; the receiver reports every 50 ms what
/// arrived (and the losses before the newest arrival).
struct Bottleneck {
    cc: Cdm,
    rate: Bitrate,
    buffer: Duration,
    one_way: Duration,
    now: Instant,
    seq: u64,
    busy_until: Instant,
    next_send: Instant,
    next_report: Instant,
    unreported: Vec<(SentPacket, Option<Instant>)>,
    returning: VecDeque<(Instant, FeedbackReport)>,
    lost: u64,
    max_queue: Duration,
}

impl Bottleneck {
    fn new(config: CdmConfig, rate: Bitrate, buffer: Duration) -> Self {
        Bottleneck {
            cc: Cdm::new(Instant::ZERO, config),
            rate,
            buffer,
            one_way: ms(50),
            now: Instant::ZERO,
            seq: 0,
            busy_until: Instant::ZERO,
            next_send: Instant::ZERO,
            next_report: Instant::from_millis(50),
            unreported: Vec::new(),
            returning: VecDeque::new(),
            lost: 0,
            max_queue: Duration::ZERO,
        }
    }

    fn send(&mut self) {
        let pkt = SentPacket {
            seq: self.seq,
            size: SIZE,
            send_time: self.now,
            ..SentPacket::default()
        };
        self.seq += 1;
        self.cc.on_packet_sent(self.now, &pkt);
        let wait = self.busy_until.saturating_duration_since(self.now);
        let arrival = if wait > self.buffer {
            self.lost += 1;
            None
        } else {
            self.max_queue = self.max_queue.max(wait);
            self.busy_until = self.busy_until.max(self.now) + self.rate.transmit_time(SIZE);
            Some(self.busy_until + self.one_way)
        };
        self.unreported.push((pkt, arrival));
        let rate = self.cc.target_bitrate().max(Bitrate::kbps(1));
        self.next_send = self.now + rate.transmit_time(SIZE);
    }

    fn report(&mut self) {
        let now = self.now;
        if let Some(r) = take_report(&mut self.unreported, now) {
            self.returning.push_back((now + self.one_way, r));
        }
        self.next_report = now + ms(50);
    }

    /// Runs to `end`; the data PIDs at each interval end.
    fn run_until(&mut self, end: Instant) -> Vec<usize> {
        let mut layers = Vec::new();
        while self.now < end {
            let back = self.returning.front().map(|(t, _)| *t);
            let timer = self.cc.poll_timeout();
            let next = [
                Some(self.next_send),
                Some(self.next_report),
                back,
                timer,
                Some(end),
            ]
            .into_iter()
            .flatten()
            .min()
            .expect("end is a candidate");
            self.now = next.max(self.now);
            if self.now >= end {
                break;
            }
            // The timer first: any input past it would close the interval.
            if timer.is_some_and(|t| t <= self.now) {
                self.cc.on_timeout(self.now);
                layers.push(self.cc.plan().layers);
            } else if back.is_some_and(|t| t <= self.now) {
                let (_, r) = self.returning.pop_front().expect("front exists");
                self.cc.on_feedback(self.now, &r);
            } else if self.next_report <= self.now {
                self.report();
            } else {
                self.send();
            }
        }
        layers
    }
}

#[test]
fn on_a_bottleneck_delay_mode_backs_off_before_the_buffer_overflows() {
    // 10 PIDs of 70 kbps over a 500 kbps link with a 2 s buffer: 7 PIDs
    // (490 kbps) fit, 8 (560 kbps) build a queue of 0.12 s per second.
    // The CDM climbs one PID every three intervals and is pushed back by
    // the queue's delay alone: nothing is lost, and it never holds 9 PIDs.
    let mut b = Bottleneck::new(config(), Bitrate::kbps(500), Duration::from_secs(2));
    let layers = b.run_until(Instant::from_secs(400));
    assert_eq!(b.lost, 0, "a packet was lost: {layers:?}");
    assert_eq!(b.cc.mode(), Mode::Delay);
    assert_eq!(&layers[..6], [5, 5, 6, 6, 6, 7], "the climb");
    assert!(layers.iter().all(|&l| l <= 8), "above 8 PIDs: {layers:?}");
    assert!(
        layers.windows(2).any(|w| w[1] < w[0]),
        "never backed off: {layers:?}"
    );
    assert!(
        b.max_queue < Duration::from_millis(1500),
        "queue {}",
        b.max_queue
    );
    // Over the last 300 s it sends at least 5 PIDs on average.
    let tail = &layers[10..];
    let mean = tail.iter().sum::<usize>() as f64 / tail.len() as f64;
    assert!((5.0..=8.0).contains(&mean), "mean {mean} PIDs: {layers:?}");
}
