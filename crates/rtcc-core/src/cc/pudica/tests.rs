//! Whole-controller tests of Pudica on the frame-level link model of the SQP
//! tests.

use super::*;
use crate::cc::sqp::tests::Link;
use crate::cc::sqp::train::FrameSample;

fn pudica(start_kbps: u64) -> Pudica {
    Pudica::new(
        Instant::ZERO,
        PudicaConfig {
            start_bitrate: Bitrate::kbps(start_kbps),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::mbps(10),
            ..PudicaConfig::default()
        },
    )
}

fn kbps(b: Bitrate) -> f64 {
    b.as_kbps_f64()
}

#[test]
fn utilisation_stays_under_the_ceiling() {
    let mut cc = pudica(300);
    let mut link = Link::new(Bitrate::kbps(2000));
    link.run(&mut cc, 200);
    let target = kbps(cc.target_bitrate());
    let bw = kbps(cc.estimate().bandwidth.unwrap());
    assert!((1900.0..=2100.0).contains(&bw), "bandwidth {bw}");
    assert!(
        target <= 0.9 * bw + 1.0,
        "target {target} above ceiling of {bw}"
    );
    assert!(
        target >= 0.85 * 2000.0,
        "target {target} should reach the ceiling"
    );
    assert!((cc.bur() - 0.9).abs() < 0.05, "BUR {}", cc.bur());
    assert_eq!(cc.state(), PudicaState::Approach);
}

#[test]
fn ceiling_parameter_sets_the_utilisation() {
    let mut cc = Pudica::new(
        Instant::ZERO,
        PudicaConfig {
            start_bitrate: Bitrate::kbps(500),
            max_bitrate: Bitrate::mbps(10),
            bur_ceiling: 0.7,
            ..PudicaConfig::default()
        },
    );
    let mut link = Link::new(Bitrate::kbps(1000));
    link.run(&mut cc, 200);
    let target = kbps(cc.target_bitrate());
    assert!((650.0..=710.0).contains(&target), "target {target}");
}

fn sample(frame_id: u64, owd_ms: i64, bw: Bitrate) -> FrameSample {
    FrameSample {
        frame_id,
        packets: 4,
        lost: 0,
        received_bytes: Bytes::new(4800),
        dispersion: Duration::from_millis(30),
        send_spread: Duration::from_millis(15),
        bandwidth: Some(bw),
        head_owd_ns: owd_ms * 1_000_000,
        first_send: Instant::ZERO,
    }
}

#[test]
fn queue_above_high_threshold_decreases_once_per_rtt() {
    let mut cc = pudica(800);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.run(&mut cc, 100);
    let before = cc.target_bitrate();
    let srtt = cc.estimate().rtt.unwrap();
    // Baseline OWD 5 ms from the run; the link model's OWD is
    // 5 ms + 1000 s of clock offset, so work with raw values around it.
    let base = cc.min_owd.min().unwrap() / 1_000_000;
    let bw = Bitrate::kbps(1000);
    let t0 = link.now;
    cc.on_sample(t0, &sample(1000, base + 40, bw));
    assert_eq!(cc.state(), PudicaState::Drain);
    let once = cc.target_bitrate();
    let expect = before.mul_f64(0.85).as_bps_f64();
    assert!(
        (once.as_bps_f64() - expect).abs() < 2.0,
        "{once:?} vs {expect}"
    );
    // Another congested frame within one srtt may not cut again ...
    cc.on_sample(t0 + srtt / 2, &sample(1001, base + 40, bw));
    assert_eq!(cc.target_bitrate(), once, "two decreases within one RTT");
    // ... one a full srtt later does.
    cc.on_sample(t0 + srtt, &sample(1002, base + 40, bw));
    let twice = cc.target_bitrate().as_bps_f64();
    assert!(
        (twice - expect * 0.85).abs() < 3.0,
        "{twice} vs {}",
        expect * 0.85
    );
}

#[test]
fn small_queue_holds() {
    let mut cc = pudica(300);
    let mut link = Link::new(Bitrate::kbps(2000));
    link.run(&mut cc, 20);
    let before = cc.target_bitrate();
    assert!(kbps(before) < 1500.0, "still ramping: {before:?}");
    link.standing = Duration::from_millis(10);
    link.run(&mut cc, 20);
    assert_eq!(cc.state(), PudicaState::Hold);
    assert!(
        cc.target_bitrate() <= before,
        "held target {:?} grew from {before:?}",
        cc.target_bitrate()
    );
}

#[test]
fn rate_recovers_after_the_delay_drops() {
    let mut cc = pudica(800);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.run(&mut cc, 100);
    link.standing = Duration::from_millis(60);
    link.run(&mut cc, 30);
    let low = kbps(cc.target_bitrate());
    link.standing = Duration::ZERO;
    link.run(&mut cc, 60);
    let back = kbps(cc.target_bitrate());
    assert!(low < 400.0, "during queue {low}");
    assert!(back > 850.0, "after the delay dropped {back}");
}

#[test]
fn undershoot_does_not_lower_the_estimate_or_target() {
    let mut cc = pudica(800);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.etr = 0.6;
    link.run(&mut cc, 200);
    let bw = kbps(cc.estimate().bandwidth.unwrap());
    let target = kbps(cc.target_bitrate());
    assert!((900.0..=1100.0).contains(&bw), "bandwidth {bw}");
    assert!(target > 850.0, "target {target} with 60 % frames");
}

#[test]
fn capacity_drop_brings_the_target_under_the_new_ceiling() {
    let mut cc = pudica(800);
    let mut link = Link::new(Bitrate::kbps(2000));
    link.run(&mut cc, 150);
    link.capacity = Bitrate::kbps(1000);
    link.run(&mut cc, 45);
    let target = kbps(cc.target_bitrate());
    assert!(target <= 950.0, "target {target} after the drop");
}
