//! Whole-controller tests of Camel through the trait.

use super::*;
use crate::pacer::Pacer;
use crate::packet::{PacketKind, PacketResult};

fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

/// One frame of `n` packets of 1000 B sent at `t_ms`, through a 1 Mbps
/// bottleneck with 20 ms one-way delay, reported 10 ms after the last arrival;
/// the report reaches the sender 20 ms later. Returns the report instant.
fn send_frame(c: &mut Camel, fid: u64, seq: &mut u64, t_ms: u64, n: u64) -> Instant {
    send_frame_with_queue(c, fid, seq, t_ms, n, 0)
}

#[test]
fn send_budget_in_camel_mode() {
    let cfg = CamelConfig::default();
    let mut c = Camel::new(Instant::ZERO, cfg.clone());
    // Start-up: start bitrate, no window, initial burst length.
    let b = c.send_budget();
    assert_eq!(b.pacing_rate, Bitrate::kbps(300).mul_f64(cfg.pacing_gain));
    assert_eq!(b.cwnd, None);
    assert_eq!(b.frame_burst, Some(Bytes::new(8192)));
    assert_eq!(b.max_burst, Bytes::ZERO);
    assert_eq!(c.estimate().state, "startup");
    let mut seq = 0;
    let now = send_frame(&mut c, 0, &mut seq, 0, 5);
    // Eq. 2: 4000 B / 32 ms = 1 Mbps; γ = 1 → target 1 Mbps (eq. 6).
    assert_eq!(c.target_bitrate(), Bitrate::mbps(1));
    assert_eq!(c.estimate().state, "normal");
    let b = c.send_budget();
    assert_eq!(b.pacing_rate, Bitrate::mbps(1).mul_f64(cfg.pacing_gain));
    let i = c.internals();
    // Frame delay of the first packet: sent 0, arrived 28, report at 50 (hold
    // 22), received at 70 → 48 ms.
    assert_eq!(i.d_min, Some(Duration::from_millis(48)));
    // I13: cwnd = γ · BW_avg · (D_min + H) + the head, H = the longest hold
    // in the report (first packet: 70 − 28 = 42 ms): 1 Mbps × 90 ms; the
    // head is L = 8192 B within I34's budget, 1 Mbps × 33 ms = 4125 B.
    assert_eq!(c.internals().bdp, Some(Bytes::new(6000)));
    assert_eq!(b.frame_burst, Some(Bytes::new(4125)));
    assert_eq!(b.cwnd, Some(Bytes::new(11_250 + 4125)));
    assert!(now > Instant::ZERO);
}

#[test]
fn the_head_is_capped_by_the_delay_budget() {
    // I34: the head is min(L, γ · BW_avg × burst_budget), at least two full
    // packets; zero budget leaves L (§4.3 alone).
    let head = |budget_ms: u64, l: u64| {
        let mut c = Camel::new(
            Instant::ZERO,
            CamelConfig {
                burst_budget: Duration::from_millis(budget_ms),
                burst_initial: Bytes::new(l),
                ..CamelConfig::default()
            },
        );
        // Before the first sample the head is L: it makes the first sample.
        assert_eq!(c.send_budget().frame_burst, Some(Bytes::new(l)));
        let mut seq = 0;
        send_frame(&mut c, 0, &mut seq, 0, 5);
        assert_eq!(c.target_bitrate(), Bitrate::mbps(1));
        c.send_budget().frame_burst.unwrap().get()
    };
    // 1 Mbps × 33 ms = 4125 B, below L = 16 KB.
    assert_eq!(head(33, 16_384), 4125);
    // A budget above L leaves L.
    assert_eq!(head(200, 16_384), 16_384);
    // No budget: L.
    assert_eq!(head(0, 16_384), 16_384);
    // 1 Mbps × 10 ms = 1250 B: the floor of two full packets.
    assert_eq!(head(10, 16_384), MIN_CWND.get());
}

#[test]
fn target_is_gamma_times_mean_bandwidth_clamped() {
    let cfg = CamelConfig {
        max_bitrate: Bitrate::kbps(800),
        ..CamelConfig::default()
    };
    let mut c = Camel::new(Instant::ZERO, cfg);
    let mut seq = 0;
    send_frame(&mut c, 0, &mut seq, 0, 5);
    assert_eq!(c.target_bitrate(), Bitrate::kbps(800));
    assert_eq!(c.estimate().bandwidth, Some(Bitrate::kbps(800)));
}

#[test]
fn pacer_emits_head_of_l_then_paces() {
    let mut c = Camel::new(
        Instant::ZERO,
        CamelConfig {
            burst_initial: Bytes::new(4096),
            ..CamelConfig::default()
        },
    );
    let mut seq = 0;
    send_frame(&mut c, 0, &mut seq, 0, 5);
    let b = c.send_budget();
    let mut p = Pacer::new(ms(100), b);
    p.on_frame_at_head(ms(100), 1);
    // A 10 KB frame of 1000 B packets.
    let mut t = ms(100);
    let mut times = Vec::new();
    for _ in 0..10 {
        t = p.next_send_time(t);
        assert!(p.can_send(t));
        p.on_sent(t, Bytes::new(1000));
        times.push(t);
    }
    // 4 KB back-to-back (5 packets: the burst ends once 4096 B are used up)...
    assert!(times[..5].iter().all(|&x| x == ms(100)), "{times:?}");
    // ...then paced at γ · BW_avg · pacing_gain = 1.25 Mbps (6.4 ms per 1000 B),
    // after the burst's own debt is paid.
    let gap = times[6] - times[5];
    assert_eq!(gap, Duration::from_micros(6400), "{times:?}");
    assert!(times[5] - times[4] >= Duration::from_micros(6400 * 4));
}

/// Camel at L = L_min after a first 5 s period in which slice 0 (the burst)
/// lost nothing and slice 1 (the paced rest) half its packets: the period's
/// loss, 1/6, is more than 0.1 above p_phys = 0, so at the minimum L Camel
/// falls back (§4.3, I19). Returns the controller and its target before.
fn after_lossy_first_period(cfg: CamelConfig) -> (Camel, Bitrate) {
    let mut c = Camel::new(Instant::ZERO, cfg);
    let mut seq = 0;
    send_frame(&mut c, 0, &mut seq, 0, 5);
    // 80 packets of slice 0 (two per frame), none lost; 40 of slice 1, half lost.
    let mut pk = Vec::new();
    for f in 0..40u64 {
        for i in 0..3u64 {
            let p = SentPacket {
                seq,
                size: Bytes::new(1200),
                send_time: ms(200 + 10 * f),
                kind: PacketKind::Media,
                frame_id: Some(10 + f),
                first_in_frame: i == 0,
                last_in_frame: i == 2,
                bytes_in_flight: Bytes::new(1200),
            };
            seq += 1;
            c.on_packet_sent(p.send_time, &p);
            let lost = i == 2 && f % 2 == 0;
            pk.push(PacketResult {
                sent: p,
                arrival: (!lost).then(|| ms(230 + 10 * f)),
            });
        }
    }
    c.on_feedback(
        ms(700),
        &FeedbackReport {
            report_time: ms(690),
            packets: pk,
        },
    );
    // The report's loss (1/6) is above p_phys + 2 points: the detector cut
    // γ (I23); GCC starts from the target as cut.
    let camel_target = c.target_bitrate();
    assert_eq!(c.poll_timeout(), Some(Instant::from_secs(5)));
    c.on_timeout(Instant::from_secs(5));
    (c, camel_target)
}

#[test]
fn fallback_through_the_trait_and_back() {
    let cfg = CamelConfig {
        burst_initial: Bytes::new(2048),
        ..CamelConfig::default()
    };
    let (mut c, camel_target) = after_lossy_first_period(cfg);
    assert!(c.in_fallback());
    assert_eq!(c.estimate().state, "fallback");
    // GCC's budget and target. GCC starts at Camel's target (1 Mbps cut
    // once by eq. 5's 0.95) capped at β = 0.85 times the rate delivered over
    // the last second (I19): 125 000 B in 1 s, so 850 kbps.
    assert_eq!(camel_target, Bitrate::kbps(950));
    let start = Bitrate::kbps(850);
    assert_eq!(c.target_bitrate(), start);
    let b = c.send_budget();
    assert_eq!(b.frame_burst, None);
    assert_eq!(b.cwnd, None);
    assert_eq!(b.pacing_rate, start.mul_f64(2.5));
    // After the hold (30 s), Camel again at L_min, γ = 1.
    let until = c.internals().fallback_until.unwrap();
    assert_eq!(until, Instant::from_secs(35));
    let mut t = Instant::from_secs(5);
    while let Some(next) = c.poll_timeout().filter(|&n| n <= until) {
        t = next.max(t);
        c.on_timeout(t);
        if !c.in_fallback() {
            break;
        }
    }
    assert!(!c.in_fallback());
    assert_eq!(c.internals().burst_length, Bytes::new(2048));
    assert!((c.internals().gamma - 1.0).abs() < 1e-12);
    assert_eq!(c.send_budget().frame_burst, Some(Bytes::new(2048)));
}

#[test]
fn fallback_starts_at_the_target_when_it_is_below_beta_delivered() {
    // The same period with the target clamped to 800 kbps: β × delivered
    // (850 kbps) is above it, so GCC starts at Camel's target (I19).
    let cfg = CamelConfig {
        burst_initial: Bytes::new(2048),
        max_bitrate: Bitrate::kbps(800),
        ..CamelConfig::default()
    };
    let (c, camel_target) = after_lossy_first_period(cfg);
    assert!(c.in_fallback());
    assert_eq!(camel_target, Bitrate::kbps(800));
    assert_eq!(c.target_bitrate(), camel_target);
}

#[test]
fn fallback_disabled_keeps_camel_at_the_minimum() {
    let cfg = CamelConfig {
        burst_initial: Bytes::new(2048),
        fallback: false,
        ..CamelConfig::default()
    };
    let (c, _) = after_lossy_first_period(cfg);
    assert!(!c.in_fallback());
    assert_ne!(c.estimate().state, "fallback");
    assert_eq!(c.send_budget().frame_burst, Some(Bytes::new(2048)));
}

#[test]
fn config_errors_name_the_field() {
    let bad = CamelConfig {
        gamma_decrease: 1.5,
        ..CamelConfig::default()
    };
    match bad.validate() {
        Err(CamelConfigError::OutOfRange { key, .. }) => assert_eq!(key, "gamma_decrease"),
        other => panic!("{other:?}"),
    }
    let bad = CamelConfig {
        compete_queue_max: Duration::ZERO,
        ..CamelConfig::default()
    };
    match bad.validate() {
        Err(CamelConfigError::OutOfRange { key, .. }) => assert_eq!(key, "compete_queue_max"),
        other => panic!("{other:?}"),
    }
    let bad = CamelConfig {
        burst_initial: Bytes::new(1 << 20),
        ..CamelConfig::default()
    };
    assert!(bad
        .validate()
        .unwrap_err()
        .to_string()
        .contains("burst_initial"));
    assert!(CamelConfig::default().validate().is_ok());
}

/// I24: after a round congested by loss, BW_avg is capped by the delivered
/// rate (physical loss added back) for `share_cap_hold`; with a zero hold
/// only γ falls.
#[test]
fn loss_congestion_caps_bw_avg_by_the_delivered_rate() {
    for (hold, want) in [
        (Duration::from_secs(5), Bitrate::kbps(190)),
        (Duration::ZERO, Bitrate::kbps(950)),
    ] {
        let cfg = CamelConfig {
            share_cap_hold: hold,
            ..CamelConfig::default()
        };
        let mut c = Camel::new(Instant::ZERO, cfg);
        let mut seq = 0;
        // A clean 5-packet frame: BW_avg = 1 Mbps, 5000 B delivered.
        let now = send_frame(&mut c, 0, &mut seq, 0, 5);
        assert_eq!(c.target_bitrate(), Bitrate::mbps(1));
        // A 40-packet frame at 100 ms whose last 20 packets are lost: no new
        // eq. 2 sample (its head lost packets), 20 000 B more delivered, and
        // a round losing 50 % of 40 reports against p_phys = 0.
        let mut pk = Vec::new();
        for i in 0..40u64 {
            let p = SentPacket {
                seq,
                size: Bytes::new(1000),
                send_time: ms(100),
                kind: PacketKind::Media,
                frame_id: Some(1),
                first_in_frame: i == 0,
                last_in_frame: i == 39,
                bytes_in_flight: Bytes::new(1000 * (i + 1)),
            };
            seq += 1;
            c.on_packet_sent(ms(100), &p);
            pk.push(PacketResult {
                sent: p,
                arrival: (i < 20).then(|| ms(128 + 8 * i)),
            });
        }
        let report = FeedbackReport {
            report_time: ms(300),
            packets: pk,
        };
        c.on_feedback((now + Duration::from_millis(300)).max(ms(320)), &report);
        assert!((c.internals().gamma - 0.95).abs() < 1e-12);
        assert_eq!(c.internals().bw_avg, Some(Bitrate::mbps(1)));
        // Delivered: 25 000 B over the 1 s window = 200 kbps; × γ = 190 kbps.
        assert_eq!(c.target_bitrate(), want, "hold {hold}");
    }
}

#[test]
fn drain_halves_the_target_when_d_min_goes_unseen() {
    // I27: frames every 100 ms; their delay is 48 ms for the first second,
    // then a standing queue adds 100 ms. With drain_interval 2 s, a drain
    // starts once no frame has come back at D_min for 2 s: target halved,
    // window two packets, for 200 ms + D_min; then no new drain for 2 s.
    let cfg = CamelConfig {
        drain_interval: Duration::from_secs(2),
        standing_queue: Duration::ZERO,
        window_cap: false,
        ..CamelConfig::default()
    };
    let mut c = Camel::new(Instant::ZERO, cfg);
    let mut seq = 0;
    let mut drains = Vec::new();
    let mut before = None;
    for f in 0..60u64 {
        let t = 100 * f;
        let queue = if f < 10 { 0 } else { 100 };
        let now = send_frame_with_queue(&mut c, f, &mut seq, t, 3, queue);
        if c.draining()
            && drains
                .last()
                .is_none_or(|&(_, end): &(u64, u64)| end != u64::MAX)
        {
            drains.push((now.as_nanos() / 1_000_000, u64::MAX));
            let budget = c.send_budget();
            assert_eq!(budget.cwnd, Some(MIN_CWND), "two packets while draining");
            assert_eq!(c.estimate().state, "drain");
            let target: Bitrate = before.expect("a target before the drain");
            assert!(
                (c.target_bitrate().as_bps_f64() / target.as_bps_f64() - DRAIN_GAIN).abs() < 0.05,
                "target {} before {target}",
                c.target_bitrate()
            );
        } else if !c.draining() {
            if let Some(last) = drains.last_mut() {
                if last.1 == u64::MAX {
                    last.1 = now.as_nanos() / 1_000_000;
                }
            }
            before = Some(c.target_bitrate());
        }
    }
    assert!(!drains.is_empty(), "no drain");
    let (start, end) = drains[0];
    // The last D_min frame was sent at 900 ms: a drain about 2 s later.
    assert!((2900..=3300).contains(&start), "first drain at {start} ms");
    // 200 ms + D_min (48 ms), seen at the next frame's report.
    assert!(
        (240..=400).contains(&(end - start)),
        "drain {start}–{end} ms"
    );
    for w in drains.windows(2) {
        assert!(w[1].0 >= w[0].1 + 2000, "drains {drains:?} closer than 2 s");
    }
}

/// As `send_frame`, with `queue_ms` of standing queue before the bottleneck.
/// 1000 B at 1 Mbps = 8 ms per packet.
fn send_frame_with_queue(
    c: &mut Camel,
    fid: u64,
    seq: &mut u64,
    t_ms: u64,
    n: u64,
    queue_ms: u64,
) -> Instant {
    let mut pk = Vec::new();
    for i in 0..n {
        let p = SentPacket {
            seq: *seq,
            size: Bytes::new(1000),
            send_time: ms(t_ms),
            kind: PacketKind::Media,
            frame_id: Some(fid),
            first_in_frame: i == 0,
            last_in_frame: i + 1 == n,
            bytes_in_flight: Bytes::new(1000 * (i + 1)),
        };
        *seq += 1;
        c.on_packet_sent(ms(t_ms), &p);
        pk.push(p);
    }
    let arrivals: Vec<Instant> = (0..n)
        .map(|i| ms(t_ms + 20 + queue_ms + 8 * (i + 1)))
        .collect();
    let report_time = *arrivals.last().unwrap() + Duration::from_millis(10);
    let report = FeedbackReport {
        report_time,
        packets: pk
            .iter()
            .zip(&arrivals)
            .map(|(p, a)| PacketResult {
                sent: *p,
                arrival: Some(*a),
            })
            .collect(),
    };
    let now = report_time + Duration::from_millis(20);
    c.on_feedback(now, &report);
    now
}

/// A frame of `n` packets of 1000 B handed to the sender at `t_ms`.
fn frame_info(fid: u64, n: u32) -> FrameInfo {
    FrameInfo {
        frame_id: fid,
        capture_time: Instant::ZERO,
        size: Bytes::new(1000 * u64::from(n)),
        frame_type: crate::media::frame::FrameType::Delta,
        num_packets: n,
        target_bitrate: Bitrate::mbps(1),
    }
}

#[test]
fn sender_queue_pushes_the_encoder_target_back() {
    // I31: BW_avg 1 Mbps, γ 1, pacing 1.25 Mbps. A 5 KB frame leaves in
    // 32 ms (< 50 ms): no pushback. A 50 KB frame needs 320 ms: the target
    // is scaled by 1 − 0.32 = 0.68, and the scale holds, even as the queue
    // shortens, until the frame has left.
    let cfg = CamelConfig {
        window_cap: false,
        ..CamelConfig::default()
    };
    let mut c = Camel::new(Instant::ZERO, cfg.clone());
    let mut seq = 0;
    let now = send_frame(&mut c, 0, &mut seq, 0, 5);
    assert_eq!(c.target_bitrate(), Bitrate::mbps(1));
    c.on_frame(now, &frame_info(1, 5));
    assert_eq!(c.target_bitrate(), Bitrate::mbps(1), "32 ms of queue");
    let send = |c: &mut Camel, seq: &mut u64, fid: u64, i: u32, n: u32| {
        let p = SentPacket {
            seq: *seq,
            size: Bytes::new(1000),
            send_time: now,
            kind: PacketKind::Media,
            frame_id: Some(fid),
            first_in_frame: i == 0,
            last_in_frame: i + 1 == n,
            bytes_in_flight: Bytes::new(1000),
        };
        *seq += 1;
        c.on_packet_sent(now, &p);
    };
    for i in 0..5 {
        send(&mut c, &mut seq, 1, i, 5);
    }
    c.on_frame(now, &frame_info(2, 50));
    let pushed = c.target_bitrate().as_bps_f64();
    assert!((pushed - 680_000.0).abs() < 1_000.0, "{pushed}");
    for i in 0..49 {
        send(&mut c, &mut seq, 2, i, 50);
    }
    assert!(
        (c.target_bitrate().as_bps_f64() - pushed).abs() < 1.0,
        "the lowest scale holds while the queue is not empty"
    );
    send(&mut c, &mut seq, 2, 49, 50);
    assert_eq!(c.target_bitrate(), Bitrate::mbps(1), "released when empty");
    // A frame given up by the sender (never sent) is forgotten when a later
    // frame's packet leaves.
    c.on_frame(now, &frame_info(3, 50));
    c.on_frame(now, &frame_info(4, 1));
    assert!(c.target_bitrate() < Bitrate::kbps(700));
    send(&mut c, &mut seq, 4, 0, 1);
    assert_eq!(c.target_bitrate(), Bitrate::mbps(1));
    // Off: the queue does not move the target.
    let mut c = Camel::new(
        Instant::ZERO,
        CamelConfig {
            queue_pushback: false,
            ..cfg
        },
    );
    let now = send_frame(&mut c, 0, &mut seq, 0, 5);
    c.on_frame(now, &frame_info(1, 50));
    assert_eq!(c.target_bitrate(), Bitrate::mbps(1));
}
