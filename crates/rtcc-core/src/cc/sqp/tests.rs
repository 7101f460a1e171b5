//! Whole-controller tests of SQP, and a small frame-level link model that the
//! Pudica tests share.

use super::*;
use crate::packet::{PacketResult, SentPacket};

/// Receiver clock = sender clock + this: only differences must matter.
const CLOCK_OFFSET: Duration = Duration::from_secs(1000);
/// Payload-plus-header bytes per packet in the model.
const PKT: u64 = 1200;

/// A bottleneck of rate `capacity` with one-way propagation `prop`, an extra
/// standing queue delay `standing` (cross traffic the controller cannot
/// drain), driven one frame at a time at 30 fps. Every frame is sent as a
/// train paced at the controller's pacing rate; the feedback for the frame
/// arrives `prop` after its last packet.
pub(crate) struct Link {
    pub capacity: Bitrate,
    pub prop: Duration,
    pub standing: Duration,
    /// Encoded size / target size of each frame (undershoot < 1).
    pub etr: f64,
    pub now: Instant,
    link_free: Instant,
    seq: u64,
    frame: u64,
}

impl Link {
    pub(crate) fn new(capacity: Bitrate) -> Self {
        Link {
            capacity,
            prop: Duration::from_millis(5),
            standing: Duration::ZERO,
            etr: 1.0,
            now: Instant::from_secs(1),
            link_free: Instant::ZERO,
            seq: 0,
            frame: 0,
        }
    }

    /// Send one frame sized for the controller's target and deliver its feedback.
    pub(crate) fn frame<C: CongestionController>(&mut self, cc: &mut C) {
        let frame_interval = Duration::from_nanos(1_000_000_000 / 30);
        let start = self.now;
        let size = (cc.target_bitrate() * frame_interval).mul_f64(self.etr);
        let n = size.get().div_ceil(PKT).max(1);
        let info = FrameInfo {
            frame_id: self.frame,
            capture_time: start,
            size,
            num_packets: u32::try_from(n).unwrap_or(u32::MAX),
            target_bitrate: cc.target_bitrate(),
            ..Default::default()
        };
        cc.on_frame(start, &info);
        let gap = Bytes::new(PKT) / cc.send_budget().pacing_rate;
        let mut results = Vec::new();
        let mut t = start;
        for i in 0..n {
            let sent = SentPacket {
                seq: self.seq,
                size: Bytes::new(PKT),
                send_time: t,
                frame_id: Some(self.frame),
                first_in_frame: i == 0,
                last_in_frame: i + 1 == n,
                ..Default::default()
            };
            cc.on_packet_sent(t, &sent);
            self.seq += 1;
            // FIFO bottleneck: service starts when the packet is there and
            // the link is free; the standing queue adds a constant delay.
            let at_link = t + self.prop;
            let begin = at_link.max(self.link_free);
            let done = begin + Bytes::new(PKT) / self.capacity;
            self.link_free = done;
            results.push(PacketResult {
                sent,
                arrival: Some(done + self.standing + CLOCK_OFFSET),
            });
            t += gap;
        }
        let last_arrival = self.link_free + self.standing;
        let fb_time = last_arrival + self.prop;
        let report = FeedbackReport {
            report_time: last_arrival + CLOCK_OFFSET,
            packets: results,
        };
        cc.on_feedback(fb_time, &report);
        self.frame += 1;
        self.now = (start + frame_interval).max(fb_time);
    }

    pub(crate) fn run<C: CongestionController>(&mut self, cc: &mut C, frames: usize) {
        for _ in 0..frames {
            self.frame(cc);
        }
    }
}

fn sqp(start_kbps: u64) -> Sqp {
    Sqp::new(
        Instant::ZERO,
        SqpConfig {
            start_bitrate: Bitrate::kbps(start_kbps),
            min_bitrate: Bitrate::kbps(50),
            max_bitrate: Bitrate::mbps(10),
            ..SqpConfig::default()
        },
    )
}

fn kbps(b: Bitrate) -> f64 {
    b.as_kbps_f64()
}

#[test]
fn converges_to_the_bottleneck_from_below() {
    let mut cc = sqp(300);
    let mut link = Link::new(Bitrate::kbps(2000));
    link.run(&mut cc, 150);
    let bw = kbps(cc.estimate().bandwidth.unwrap());
    assert!((1900.0..=2100.0).contains(&bw), "estimate {bw} kbps");
    let target = kbps(cc.target_bitrate());
    assert!(
        (0.85 * 2000.0..=0.95 * 2000.0).contains(&target),
        "target {target} kbps should be ≈ 0.9 × capacity"
    );
}

#[test]
fn trains_are_paced_at_twice_the_estimate() {
    let mut cc = sqp(800);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.run(&mut cc, 60);
    let b = cc.send_budget();
    assert_eq!(b.frame_burst, None);
    assert_eq!(b.max_burst, Bytes::ZERO);
    let ratio = b.pacing_rate.as_bps_f64() / cc.estimate.as_bps_f64();
    assert!((ratio - 2.0).abs() < 1e-3, "pacing / estimate = {ratio}");
}

#[test]
fn one_outlier_sample_moves_the_estimate_by_the_filter_gain() {
    let mut cc = sqp(1000);
    let before = cc.estimate.as_bps_f64();
    // Frame 0: two packets 1 ms apart at the receiver = 9.6 Mbps.
    cc.on_frame(
        Instant::ZERO,
        &FrameInfo {
            frame_id: 0,
            num_packets: 2,
            ..Default::default()
        },
    );
    let mk = |seq: u64, first: bool, arr_ms: u64| PacketResult {
        sent: SentPacket {
            seq,
            size: Bytes::new(PKT),
            send_time: Instant::from_millis(seq),
            frame_id: Some(0),
            first_in_frame: first,
            last_in_frame: !first,
            ..Default::default()
        },
        arrival: Some(Instant::from_millis(arr_ms)),
    };
    let r = FeedbackReport {
        report_time: Instant::from_millis(20),
        packets: vec![mk(0, true, 10), mk(1, false, 11)],
    };
    cc.on_feedback(Instant::from_millis(30), &r);
    let after = cc.estimate.as_bps_f64();
    let expected = before + 0.125 * (9_600_000.0 - before);
    assert!(
        (after - expected).abs() < 1000.0,
        "estimate {after} bps, expected EWMA step to {expected}"
    );
}

#[test]
fn standing_queue_reduces_the_rate() {
    let mut clean = sqp(1000);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.run(&mut clean, 150);
    let mut queued = sqp(1000);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.run(&mut queued, 90);
    // 100 ms of standing queue appears (and stays): recovery cuts samples by 20 %.
    link.standing = Duration::from_millis(100);
    link.run(&mut queued, 60);
    assert_eq!(queued.queuing_delay(), Duration::from_millis(100));
    let (c, q) = (kbps(clean.target_bitrate()), kbps(queued.target_bitrate()));
    assert!(q < 0.85 * c, "queued target {q} kbps vs clean {c} kbps");
    assert!(
        q > 0.6 * c,
        "recovery must be proportional, not a collapse: {q}"
    );
    // The raw bandwidth estimate is untouched by recovery.
    let bw = kbps(queued.estimate().bandwidth.unwrap());
    assert!(bw > 950.0, "raw estimate {bw}");
    assert_eq!(queued.estimate().state, "queue-recovery");
}

#[test]
fn recovery_factor_grows_with_the_queue() {
    let cc = sqp(1000);
    assert!((cc.recovery_factor(Duration::from_millis(1)) - 1.0).abs() < 1e-12);
    assert!((cc.recovery_factor(Duration::from_millis(50)) - 0.9).abs() < 1e-9);
    assert!((cc.recovery_factor(Duration::from_millis(200)) - 0.6).abs() < 1e-9);
    assert!((cc.recovery_factor(Duration::from_secs(5)) - 0.5).abs() < 1e-9);
}

#[test]
fn rate_recovers_after_the_queue_drains() {
    let mut cc = sqp(1000);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.run(&mut cc, 60);
    link.standing = Duration::from_millis(200);
    link.run(&mut cc, 60);
    let low = kbps(cc.target_bitrate());
    link.standing = Duration::ZERO;
    link.run(&mut cc, 60);
    let back = kbps(cc.target_bitrate());
    assert!(low < 700.0, "during queue {low}");
    assert!(back > 850.0, "after the queue drained {back}");
}

#[test]
fn capacity_drop_is_tracked_within_a_second() {
    let mut cc = sqp(1000);
    let mut link = Link::new(Bitrate::kbps(2000));
    link.run(&mut cc, 120);
    link.capacity = Bitrate::kbps(1000);
    link.run(&mut cc, 30);
    let bw = kbps(cc.estimate().bandwidth.unwrap());
    assert!(
        (900.0..=1150.0).contains(&bw),
        "estimate {bw} kbps after drop"
    );
}

#[test]
fn undershooting_frames_still_measure_the_link() {
    let mut cc = sqp(1000);
    let mut link = Link::new(Bitrate::kbps(1000));
    link.etr = 0.6;
    link.run(&mut cc, 150);
    let bw = kbps(cc.estimate().bandwidth.unwrap());
    assert!((900.0..=1100.0).contains(&bw), "estimate {bw} kbps");
}
