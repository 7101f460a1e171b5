//! The state-variable traces (`CongestionController::trace`,
//! `LossRecovery::trace`, `TransportSender::trace_recovery`), through the
//! public traits, over every registered name: each controller driven over a
//! small bottleneck reports only the variables it declares, each once per
//! call, all finite, and reports every one of them at some point; and the
//! variables move when the mechanism they describe acts (BBR leaves Startup,
//! Camel's γ falls when the capacity drops, GCC detects the over-use, ...).
//!
//! The driver is a one-link network: a drop-tail bottleneck whose capacity
//! steps from 2 Mbps to 0.6 Mbps at 10 s and back at 20 s, 20 ms one-way
//! delay each way, a queue that drops what would wait more than 150 ms,
//! feedback every 50 ms, frames at 30 fps of the controller's target.

use std::collections::VecDeque;

use rtcc_core::recovery::LossRecovery;
use rtcc_core::recovery::RecoveryConfig;
use rtcc_core::transport::{RecoveryScheme, TransportSender, TransportSenderConfig};
use rtcc_core::{
    Bitrate, Bytes, CcConfig, CongestionController, Controller, Duration, FeedbackReport,
    FrameInfo, FrameType, Instant, PacketKind, PacketResult, SentPacket,
};

/// Payload + overhead of a packet on the wire.
const PACKET: u64 = 1200;
/// One-way propagation delay, each direction.
const ONE_WAY: Duration = Duration::from_millis(20);
/// Packets that would wait longer than this in the bottleneck queue are dropped.
const MAX_QUEUE_DELAY: Duration = Duration::from_millis(150);
/// Run length.
const RUN: Duration = Duration::from_secs(40);

/// Bottleneck capacity at `t` (time since the start).
fn capacity(t: Duration) -> Bitrate {
    let s = t.as_secs_f64();
    if (10.0..20.0).contains(&s) {
        Bitrate::kbps(600)
    } else {
        Bitrate::kbps(2000)
    }
}

/// One trace sample: time since the start and the (variable, value) pairs.
type Sample = (Duration, Vec<(&'static str, f64)>);

/// Drives controller `name` for [`RUN`], sampling its trace every 100 ms and
/// checking every sample; returns the samples.
fn drive(name: &str) -> Vec<Sample> {
    let cfg = CcConfig::default_for(name).expect("a registered name");
    let start = Instant::from_nanos(1_000_000_000);
    let mut cc: Controller = cfg.build(start);
    let declared = cc.trace_variables();
    assert!(!declared.is_empty(), "{name} declares no trace variables");
    let mut samples = Vec::new();
    let mut queue: VecDeque<(u64, bool, bool)> = VecDeque::new();
    let mut outstanding: VecDeque<(SentPacket, Option<Instant>)> = VecDeque::new();
    let mut seq = 0u64;
    let mut frame_id = 0u64;
    let mut in_flight = 0u64;
    let mut link_free = start;
    let mut credit = 0.0f64; // bytes the pacer may send now
                             // Frame-burst mode: bytes of the newest frame that may still go out
                             // back-to-back (`SendBudget::frame_burst`).
    let mut burst = 0.0f64;
    let step = Duration::from_millis(1);
    let mut now = start;
    while now - start < RUN {
        now += step;
        let t = now - start;
        while let Some(at) = cc.poll_timeout() {
            if at > now {
                break;
            }
            cc.on_timeout(now);
            if cc.poll_timeout().is_some_and(|a| a <= now) {
                break;
            }
        }
        let ms = t.as_millis_f64().round() as u64;
        if ms % 33 == 0 {
            let target = cc.target_bitrate();
            let size = (target.as_bps_f64() / 30.0 / 8.0).max(100.0) as u64;
            let packets = size.div_ceil(PACKET).max(1);
            for i in 0..packets {
                queue.push_back((frame_id, i == 0, i + 1 == packets));
            }
            let info = FrameInfo {
                frame_id,
                capture_time: now,
                size: Bytes::new(size),
                frame_type: if frame_id == 0 {
                    FrameType::Key
                } else {
                    FrameType::Delta
                },
                num_packets: packets as u32,
                target_bitrate: target,
            };
            frame_id += 1;
            cc.on_frame(now, &info);
            burst = cc.send_budget().frame_burst.map_or(0.0, |l| l.get() as f64);
        }
        // Pacing: a token bucket at the pacing rate, at most one burst deep.
        let budget = cc.send_budget();
        credit += budget.pacing_rate.as_bps_f64() / 8.0 * step.as_secs_f64();
        let depth = (budget.max_burst.get() as f64).max(2.0 * PACKET as f64);
        credit = credit.min(depth);
        loop {
            let from_burst = burst >= PACKET as f64 && !queue.is_empty();
            if credit < PACKET as f64 && !from_burst {
                break;
            }
            if budget
                .cwnd
                .is_some_and(|w| in_flight + PACKET > w.get().max(PACKET))
            {
                break;
            }
            let (kind, frame, first, last) = match queue.pop_front() {
                Some((id, first, last)) => (PacketKind::Media, Some(id), first, last),
                None => match cc.poll_probe(now) {
                    Some(_) => (PacketKind::Padding, None, false, false),
                    None => break,
                },
            };
            if from_burst {
                burst -= PACKET as f64;
            } else {
                credit -= PACKET as f64;
            }
            in_flight += PACKET;
            let pkt = SentPacket {
                seq,
                size: Bytes::new(PACKET),
                send_time: now,
                kind,
                frame_id: frame,
                first_in_frame: first,
                last_in_frame: last,
                bytes_in_flight: Bytes::new(in_flight),
            };
            seq += 1;
            cc.on_packet_sent(now, &pkt);
            // The bottleneck: FIFO at the capacity of the moment.
            let begin = link_free.max(now);
            let arrival = if begin - now > MAX_QUEUE_DELAY {
                None
            } else {
                let done = begin + capacity(t).transmit_time(Bytes::new(PACKET));
                link_free = done;
                Some(done + ONE_WAY)
            };
            outstanding.push_back((pkt, arrival));
        }
        if ms % 50 == 0 {
            // The receiver reports at `now − ONE_WAY` what reached it by then.
            let report_time = now - ONE_WAY;
            let mut packets = Vec::new();
            while let Some(&(sent, arrival)) = outstanding.front() {
                let due = arrival.unwrap_or(sent.send_time + ONE_WAY + MAX_QUEUE_DELAY);
                if due > report_time {
                    break;
                }
                outstanding.pop_front();
                in_flight -= sent.size.get();
                packets.push(PacketResult { sent, arrival });
            }
            if !packets.is_empty() {
                cc.on_feedback(
                    now,
                    &FeedbackReport {
                        report_time,
                        packets,
                    },
                );
            }
        }
        if ms % 100 == 0 {
            let mut vars = Vec::new();
            cc.trace(&mut |v: &'static str, x: f64| vars.push((v, x)));
            check_sample(name, t, declared, &vars);
            samples.push((t, vars));
        }
    }
    samples
}

/// A sample reports declared variables only, each once, all finite.
fn check_sample(name: &str, t: Duration, declared: &[&str], vars: &[(&'static str, f64)]) {
    for (i, &(v, x)) in vars.iter().enumerate() {
        assert!(
            declared.contains(&v),
            "{name} at {t}: reports \"{v}\", not in its trace_variables {declared:?}"
        );
        assert!(x.is_finite(), "{name} at {t}: {v} = {x}");
        assert!(
            !vars[..i].iter().any(|&(w, _)| w == v),
            "{name} at {t}: \"{v}\" reported twice in one call"
        );
    }
}

/// A mode or state code as an integer.
fn code(x: f64) -> i64 {
    x.round() as i64
}

/// The values of `var` over the samples, with their times.
fn series(samples: &[Sample], var: &str) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|(t, vars)| {
            vars.iter()
                .find(|(v, _)| *v == var)
                .map(|&(_, x)| (t.as_secs_f64(), x))
        })
        .collect()
}

#[test]
fn every_controller_reports_each_declared_variable() {
    for name in CcConfig::NAMES {
        let samples = drive(name);
        let declared = CcConfig::default_for(name)
            .expect("registered")
            .build(Instant::ZERO)
            .trace_variables();
        for var in declared {
            assert!(
                !series(&samples, var).is_empty(),
                "{name}: \"{var}\" declared but never reported in {RUN} over a bottleneck with a capacity drop"
            );
        }
    }
}

#[test]
fn bbr_family_mode_leaves_startup() {
    for name in ["bbr", "delay-bbr", "webrtc-bbr"] {
        let s = drive(name);
        let mode = series(&s, "mode");
        assert_eq!(code(mode[0].1), 0, "{name} starts in Startup (code 0)");
        assert!(
            mode.iter().any(|&(_, m)| code(m) == 2),
            "{name}: mode never reaches ProbeBW (code 2): {mode:?}"
        );
        let gain = series(&s, "pacing_gain");
        assert!(
            gain.iter().any(|&(_, g)| g > 1.0) && gain.iter().any(|&(_, g)| g < 1.5),
            "{name}: the pacing gain does not move from Startup's: {gain:?}"
        );
        let btl = series(&s, "btl_bw_kbps");
        let during_drop = btl
            .iter()
            .filter(|&&(t, _)| (19.0..20.0).contains(&t))
            .all(|&(_, b)| b < 1500.0);
        assert!(
            during_drop,
            "{name}: BtlBw still above the dropped capacity late in the drop: {btl:?}"
        );
    }
}

#[test]
fn camel_gamma_falls_when_capacity_drops() {
    let s = drive("camel");
    let gamma = series(&s, "gamma");
    let before = gamma
        .iter()
        .filter(|&&(t, _)| t < 10.0)
        .map(|&(_, g)| g)
        .fold(f64::INFINITY, f64::min);
    let during = gamma
        .iter()
        .filter(|&&(t, _)| (10.0..20.0).contains(&t))
        .map(|&(_, g)| g)
        .fold(f64::INFINITY, f64::min);
    assert!(
        during < before,
        "Camel's γ does not fall at the capacity drop (min before {before}, during {during})"
    );
    let bw = series(&s, "bw_avg_kbps");
    assert!(
        bw.iter()
            .any(|&(t, b)| (15.0..20.0).contains(&t) && b < 1000.0),
        "Camel's BW_avg does not follow the drop to 600 kbps: {bw:?}"
    );
}

#[test]
fn gcc_detects_overuse_and_decreases() {
    let s = drive("gcc");
    let usage = series(&s, "usage");
    assert!(
        usage.iter().any(|&(_, u)| code(u) == 1),
        "GCC never reports over-use (+1) across a capacity drop"
    );
    let threshold = series(&s, "threshold_ms");
    let (lo, hi) = threshold
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &(_, x)| {
            (lo.min(x), hi.max(x))
        });
    assert!(hi > lo, "GCC's adaptive threshold never adapts: {lo}..{hi}");
    let delay_based = series(&s, "delay_based_kbps");
    assert!(
        delay_based
            .iter()
            .any(|&(t, b)| (12.0..20.0).contains(&t) && b < 900.0),
        "GCC's delay-based estimate does not fall below 900 kbps in the drop"
    );
}

#[test]
fn delay_bbr_backs_off_on_delay() {
    let s = drive("delay-bbr");
    let backoffs = series(&s, "backoffs");
    let last = backoffs.last().map_or(0.0, |&(_, b)| b);
    assert!(last >= 1.0, "Delay-BBR never backs off in {RUN}");
}

#[test]
fn cubic_sets_ssthresh_and_k_on_loss() {
    let s = drive("cubic");
    assert!(
        series(&s, "ssthresh_bytes").len() < s.len(),
        "CUBIC reports ssthresh before any congestion event"
    );
    let region = series(&s, "region");
    assert_eq!(code(region[0].1), 0, "CUBIC starts in slow start (code 0)");
    assert!(
        region.iter().any(|&(_, r)| r >= 1.0),
        "CUBIC never leaves slow start: {region:?}"
    );
}

#[test]
fn copa_velocity_and_queueing_delay_move() {
    let s = drive("copa");
    let v = series(&s, "velocity");
    assert!(
        v.iter().any(|&(_, x)| x > 1.0),
        "Copa's velocity never doubles"
    );
    let dq = series(&s, "queueing_delay_ms");
    assert!(
        dq.iter().any(|&(_, x)| x > 1.0),
        "Copa never sees a standing queue across a capacity drop"
    );
}

/// Recovery schemes: declared names only, finite, and no name shared with a
/// controller (both go to one trace per flow).
#[test]
fn recovery_traces_are_declared_and_apart_from_controllers() {
    let cc_vars: Vec<&str> = CcConfig::NAMES
        .iter()
        .flat_map(|n| {
            CcConfig::default_for(n)
                .expect("registered")
                .build(Instant::ZERO)
                .trace_variables()
                .iter()
                .copied()
        })
        .collect();
    let disjoint = |scheme: &str, vars: &[&str]| {
        for v in vars {
            assert!(
                !cc_vars.contains(v),
                "recovery {scheme}: \"{v}\" is also a controller variable"
            );
        }
    };
    for name in RecoveryConfig::NAMES {
        let r = RecoveryConfig::default_for(name)
            .expect("registered")
            .build(Instant::ZERO);
        let declared = r.trace_variables();
        disjoint(name, declared);
        let mut vars = Vec::new();
        r.trace(&mut |v: &'static str, x: f64| vars.push((v, x)));
        check_sample(name, Duration::ZERO, declared, &vars);
    }
    for scheme in [
        RecoveryScheme::Rtx,
        RecoveryScheme::AutoRec(Default::default()),
        RecoveryScheme::Fec(Default::default()),
    ] {
        let name = scheme.name();
        let sender = TransportSender::new(
            Instant::ZERO,
            TransportSenderConfig {
                recovery: scheme,
                ..TransportSenderConfig::default()
            },
        )
        .expect("default transport config");
        let declared = sender.recovery_trace_variables();
        assert!(!declared.is_empty(), "transport {name} declares nothing");
        disjoint(name, declared);
        let mut vars = Vec::new();
        sender.trace_recovery(&mut |v: &'static str, x: f64| vars.push((v, x)));
        check_sample(name, Duration::ZERO, declared, &vars);
        assert!(
            !vars.is_empty(),
            "transport {name} reports nothing at the start"
        );
    }
}

#[test]
fn tfrc_leaves_slow_start_and_follows_the_drop() {
    let s = drive("tfrc");
    let state = series(&s, "state");
    assert_eq!(code(state[0].1), 0, "TFRC starts before feedback (code 0)");
    assert!(
        state.iter().any(|&(_, c)| code(c) == 1) && state.iter().any(|&(_, c)| code(c) == 2),
        "TFRC never goes through slow start (1) to congestion avoidance (2): {state:?}"
    );
    let events = series(&s, "loss_events");
    assert!(
        events.last().is_some_and(|&(_, n)| n >= 2.0),
        "TFRC sees fewer than two loss events across a capacity drop: {events:?}"
    );
    let x = series(&s, "x_kbps");
    assert!(
        x.iter()
            .any(|&(t, v)| (15.0..20.0).contains(&t) && v < 900.0),
        "TFRC's X does not follow the drop to 600 kbps: {x:?}"
    );
}
