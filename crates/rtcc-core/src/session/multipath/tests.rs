//! Tests of the multipath session: the sender's mechanisms through its public
//! API, the receive buffer's frame rule, and two-path runs over an in-test
//! network (fixed one-way delay per path, chosen packets dropped).

use std::collections::VecDeque;

use super::*;
use crate::cc::{CcConfig, FixedConfig};
use crate::feedback::WireFeedback;
use crate::media::encoder::{EncodedFrame, EncoderModel, TraceEncoder};
use crate::media::frame::FrameType;
use crate::media::packetizer::MediaPacket;
use crate::multipath::{PathScheduler, SchedulerConfig};
use crate::packet::PacketKind;
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

fn fixed(rate: Bitrate, pacing_factor: f64) -> CcConfig {
    CcConfig::Fixed(FixedConfig {
        bitrate: rate,
        pacing_factor,
        plan: None,
    })
}

/// Frames given in advance, each produced at its capture instant; nothing
/// after the last. Records the targets it is given.
struct Script {
    frames: VecDeque<(Instant, Bytes, FrameType)>,
    next_id: u64,
    target: Bitrate,
    key_requests: u32,
}

impl Script {
    fn new(frames: &[(u64, u64, FrameType)]) -> Self {
        Script {
            frames: frames
                .iter()
                .map(|&(t, size, ty)| (ms(t), Bytes::new(size), ty))
                .collect(),
            next_id: 0,
            target: Bitrate::ZERO,
            key_requests: 0,
        }
    }
}

impl EncoderModel for Script {
    fn set_target(&mut self, _now: Instant, target: Bitrate) {
        self.target = target;
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.frames.front().map(|f| f.0)
    }
    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        let &(t, size, frame_type) = self.frames.front()?;
        if t > now {
            return None;
        }
        self.frames.pop_front();
        let frame_id = self.next_id;
        self.next_id += 1;
        Some(EncodedFrame {
            frame_id,
            capture_time: t,
            size,
            frame_type,
            target_bitrate: self.target,
            etr: 1.0,
        })
    }
    fn current_target(&self) -> Bitrate {
        self.target
    }
    fn request_key_frame(&mut self) {
        self.key_requests += 1;
    }
}

fn sender(
    paths: Vec<CcConfig>,
    scheduler: &str,
    frames: &[(u64, u64, FrameType)],
) -> MultipathSender<Script> {
    let cfg = MultipathSenderConfig::new(paths, SchedulerConfig::default_for(scheduler).unwrap());
    MultipathSender::new(Instant::ZERO, cfg, Script::new(frames))
}

/// Runs the sender alone from `from` to `to` in 1 ms steps, collecting sends.
fn drive(s: &mut MultipathSender<Script>, from: u64, to: u64, out: &mut Vec<MpTransmit>) {
    for t in from..to {
        s.on_timeout(ms(t));
        while let Some(tx) = s.poll_transmit(ms(t)) {
            out.push(tx);
        }
    }
}

fn feedback(report_ms: u64, packets: &[(u64, Option<u64>)]) -> WireFeedback {
    WireFeedback {
        report_time: ms(report_ms),
        packets: packets.iter().map(|&(s, a)| (s, a.map(ms))).collect(),
        key_frame_request: false,
    }
}

// ---------------------------------------------------------------- sender

/// A 12 000 B frame is 10 segments of 1248 B. Path 0 paces at 2 Mbps, path 1
/// at 1 Mbps, no RTT yet (both 333 ms): min-cost (eq. 14) splits 7/3 —
/// in units of 1248 B at 2 Mbps the queue costs go 0|0 → 1|0 → 1|2 → 2|2 →
/// 3|2 → 3|4 → 4|4 → 5|4 → 5|6 → 6|6 → 7|6, ties to path 0 — while WRR
/// (loads ⌈20·2/3⌉ = 14 and ⌈20/3⌉ = 7, interleaved) alternates 5/5.
#[test]
fn placement_goes_through_the_scheduler_into_per_path_queues() {
    let paths = vec![
        fixed(Bitrate::kbps(800), 2.5),
        fixed(Bitrate::kbps(400), 2.5),
    ];
    let frame = [(0, 12_000, FrameType::Key)];
    let seg = Bytes::new(1248);
    for (name, split) in [("min-cost", (7, 3)), ("wrr", (5, 5))] {
        let mut s = sender(paths.clone(), name, &frame);
        s.on_timeout(Instant::ZERO);
        assert_eq!(s.scheduler().name(), name);
        assert_eq!(
            (s.queued_bytes(0), s.queued_bytes(1)),
            (seg * split.0, seg * split.1),
            "{name}"
        );
        assert_eq!(
            (
                s.path_stats(0).media_packets_scheduled,
                s.path_stats(1).media_packets_scheduled
            ),
            split
        );
        assert!((s.path_share(0) - split.0 as f64 / 10.0).abs() < 1e-12);
        // The scheduler saw the queue: the state it is given says so.
        assert_eq!(s.path_state(1).queued, seg * split.1);
        // Every segment leaves on the path it was placed on, each path
        // numbering its own packets from 0.
        let mut out = Vec::new();
        drive(&mut s, 0, 100, &mut out);
        for path in 0..2 {
            let seqs: Vec<u64> = out
                .iter()
                .filter(|t| t.path == path)
                .map(|t| t.seq)
                .collect();
            let n = if path == 0 { split.0 } else { split.1 };
            assert_eq!(seqs, (0..n).collect::<Vec<u64>>(), "{name} path {path}");
        }
        let mut idx: Vec<u32> = out.iter().map(|t| t.packet.index).collect();
        idx.sort_unstable();
        assert_eq!(idx, (0..10).collect::<Vec<u32>>());
        assert_eq!(s.queued_bytes(0) + s.queued_bytes(1), Bytes::ZERO);
    }
}

/// Two paths pacing at 100 kbps each (fixed, factor 1): five 25 000 B
/// frames 10 ms apart. The limit is 0.2 s of the summed pacing rate
/// (5 000 B): the first frame is queued, the next three are dropped while
/// the queues stay above it, and the frames that are sent keep consecutive
/// ids. A dropped key frame makes the encoder produce a key frame next.
#[test]
fn frames_are_dropped_while_the_paths_queues_are_full() {
    let frames = [
        (0, 25_000, FrameType::Delta),
        (10, 25_000, FrameType::Key),
        (20, 25_000, FrameType::Delta),
        (30, 25_000, FrameType::Delta),
    ];
    let paths = vec![
        fixed(Bitrate::kbps(100), 1.0),
        fixed(Bitrate::kbps(100), 1.0),
    ];
    let mut cfg =
        MultipathSenderConfig::new(paths, SchedulerConfig::default_for("min-cost").unwrap());
    cfg.frame_drop_queue_time = Some(Duration::from_millis(200));
    let mut s = MultipathSender::new(Instant::ZERO, cfg, Script::new(&frames));
    let mut out = Vec::new();
    drive(&mut s, 0, 40, &mut out);
    assert_eq!(s.stats().frames_encoded, 1);
    assert_eq!(s.stats().frames_dropped_at_sender, 3);
    assert_eq!(
        s.encoder().key_requests,
        1,
        "the dropped key frame is asked for again"
    );
    assert!(out.iter().all(|t| t.packet.frame_id == 0));

    // Without the limit every frame is queued.
    let paths = vec![
        fixed(Bitrate::kbps(100), 1.0),
        fixed(Bitrate::kbps(100), 1.0),
    ];
    let mut cfg =
        MultipathSenderConfig::new(paths, SchedulerConfig::default_for("min-cost").unwrap());
    cfg.frame_drop_queue_time = None;
    let mut s = MultipathSender::new(Instant::ZERO, cfg, Script::new(&frames));
    drive(&mut s, 0, 40, &mut out);
    assert_eq!(s.stats().frames_encoded, 4);
    assert_eq!(s.stats().frames_dropped_at_sender, 0);
}

/// Frame ids stay consecutive across a drop: the next frame sent after the
/// dropped ones takes the id after the last one sent.
#[test]
fn frames_sent_after_a_drop_keep_consecutive_ids() {
    let frames = [
        (0, 25_000, FrameType::Delta),
        (10, 25_000, FrameType::Delta),
        (5_000, 1_000, FrameType::Delta),
    ];
    let paths = vec![
        fixed(Bitrate::kbps(100), 1.0),
        fixed(Bitrate::kbps(100), 1.0),
    ];
    let mut cfg =
        MultipathSenderConfig::new(paths, SchedulerConfig::default_for("min-cost").unwrap());
    cfg.frame_drop_queue_time = Some(Duration::from_millis(200));
    let mut s = MultipathSender::new(Instant::ZERO, cfg, Script::new(&frames));
    let mut out = Vec::new();
    drive(&mut s, 0, 5_001, &mut out);
    assert_eq!(s.stats().frames_dropped_at_sender, 1);
    let ids: std::collections::BTreeSet<u64> = out
        .iter()
        .filter(|t| t.kind == PacketKind::Media)
        .map(|t| t.packet.frame_id)
        .collect();
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), vec![0, 1]);
}

#[test]
fn encoder_target_is_the_capped_sum_of_the_path_targets() {
    // Payload share of each path: 1200/1248 of its wire rate.
    let s = sender(
        vec![
            fixed(Bitrate::kbps(624), 1.0),
            fixed(Bitrate::kbps(832), 1.0),
        ],
        "min-cost",
        &[],
    );
    assert_eq!(s.target_bitrate(), Bitrate::kbps(600 + 800));
    assert_eq!(s.encoder().current_target(), Bitrate::kbps(1400));
    assert_eq!(s.path_target(1), Bitrate::kbps(832));
    // 1.5 + 1.5 Mbps of paths: the encoder stays at the 2 Mbps cap (§5.2).
    let s = sender(
        vec![
            fixed(Bitrate::kbps(1500), 1.0),
            fixed(Bitrate::kbps(1500), 1.0),
        ],
        "min-cost",
        &[],
    );
    assert_eq!(s.encoder().current_target(), DEFAULT_MAX_TOTAL_BITRATE);
}

/// Path 0 has an RTT of ~100 ms, path 1 of ~10 ms. A segment path 0
/// reports lost is retransmitted on path 1 (least RTT/2 + Q/c), with the
/// same segment and session number; when that copy is lost too it goes again;
/// a loss learnt more than 500 ms after the first transmission is not
/// repaired.
#[test]
fn a_lost_segment_is_retransmitted_on_the_least_delay_path_while_young() {
    let paths = vec![fixed(Bitrate::mbps(1), 10.0), fixed(Bitrate::mbps(1), 10.0)];
    let frames = [(0, 6000, FrameType::Key), (40, 6000, FrameType::Delta)];
    let cfg = MultipathSenderConfig {
        // Isolate the feedback rule from the report timeout.
        loss_report_slack: Duration::from_secs(10),
        ..MultipathSenderConfig::new(paths, SchedulerConfig::default_for("wrr").unwrap())
    };
    let mut s = MultipathSender::new(Instant::ZERO, cfg, Script::new(&frames));
    let mut out = Vec::new();
    drive(&mut s, 0, 30, &mut out);
    let on = |out: &[MpTransmit], p: usize| -> Vec<MpTransmit> {
        out.iter().filter(|t| t.path == p).copied().collect()
    };
    let p0 = on(&out, 0);
    let p1 = on(&out, 1);
    assert!(p0.len() >= 2 && p1.len() >= 2, "{} {}", p0.len(), p1.len());
    // Path 1: everything received, RTT ≈ 10 ms.
    let last1 = p1.last().unwrap();
    let t1 = last1.send_time.as_nanos() / 1_000_000 + 10;
    let fb1: Vec<(u64, Option<u64>)> = p1.iter().map(|t| (t.seq, Some(t1))).collect();
    s.handle_feedback(ms(t1), 1, &feedback(t1, &fb1));
    // Path 0: seq 0 lost, the rest received; RTT ≈ 100 ms.
    let last0 = p0.last().unwrap();
    let t0 = last0.send_time.as_nanos() / 1_000_000 + 100;
    let mut fb0: Vec<(u64, Option<u64>)> = p0.iter().map(|t| (t.seq, Some(t0))).collect();
    fb0[0].1 = None;
    drive(&mut s, 30, t0, &mut out);
    let before = out.len();
    s.handle_feedback(ms(t0), 0, &feedback(t0, &fb0));
    assert!(s.srtt(0).unwrap() > Duration::from_millis(80));
    assert!(s.srtt(1).unwrap() < Duration::from_millis(20));
    assert_eq!(s.stats().retransmissions, 1);
    let mut out2 = Vec::new();
    drive(&mut s, t0, t0 + 5, &mut out2);
    let rtx: Vec<_> = out2
        .iter()
        .filter(|t| t.kind == PacketKind::Retransmission)
        .collect();
    assert_eq!(rtx.len(), 1, "{out2:?}");
    assert_eq!(rtx[0].path, 1);
    assert_eq!(rtx[0].packet, p0[0].packet);
    assert_eq!(rtx[0].media_seq, p0[0].media_seq);
    assert_eq!(s.path_stats(1).retransmissions_sent, 1);
    out.truncate(before);
    // The copy is lost too (path 1 reports it missing behind a later
    // packet): still younger than 500 ms, it goes again.
    let rseq = rtx[0].seq;
    let t2 = t0 + 20;
    let mut fb2: Vec<(u64, Option<u64>)> = out
        .iter()
        .chain(&out2)
        .filter(|t| t.path == 1 && t.seq > last1.seq)
        .map(|t| (t.seq, (t.seq != rseq).then_some(t2)))
        .collect();
    let next = fb2.last().unwrap().0 + 1;
    // An entry for a packet never sent is counted and ignored.
    fb2.push((next, Some(t2)));
    s.handle_feedback(ms(t2), 1, &feedback(t2, &fb2));
    let mut out3 = Vec::new();
    assert_eq!(s.path_stats(1).unknown_feedback_entries, 1);
    assert_eq!(s.path_stats(1).packets_presumed_lost, 0);
    drive(&mut s, t2, t2 + 5, &mut out3);
    assert_eq!(
        out3.iter()
            .filter(|t| t.kind == PacketKind::Retransmission && t.media_seq == p0[0].media_seq)
            .count(),
        1
    );
    assert_eq!(s.stats().retransmissions, 2);
    // A loss of the second frame's first path-0 segment, reported 600 ms
    // after it was first sent: gone from the buffer, not retransmitted.
    let late = out
        .iter()
        .find(|t| t.path == 0 && t.packet.frame_id == 1)
        .copied()
        .unwrap();
    let t3 = late.send_time.as_nanos() / 1_000_000 + 600;
    drive(&mut s, t2 + 5, t3, &mut Vec::new());
    let expired = s.stats().retransmissions_expired;
    s.handle_feedback(ms(t3), 0, &feedback(t3, &[(late.seq, None)]));
    assert_eq!(s.stats().retransmissions, 2);
    assert_eq!(s.stats().retransmissions_expired, expired + 1);
    let mut out4 = Vec::new();
    drive(&mut s, t3, t3 + 20, &mut out4);
    assert!(out4.iter().all(|t| t.kind != PacketKind::Retransmission));
}

/// The last segment of a burst is never reported (no later packet of its
/// path reveals the hole): after 2·srtt + slack it is taken as lost and
/// retransmitted once; a later loss report does not send it twice.
#[test]
fn an_unreported_tail_segment_is_retransmitted_after_the_report_timeout() {
    let mut s = sender(
        vec![fixed(Bitrate::mbps(1), 10.0)],
        "min-cost",
        &[(0, 3600, FrameType::Key)],
    );
    let mut out = Vec::new();
    drive(&mut s, 0, 20, &mut out);
    assert_eq!(out.len(), 3);
    // Seq 0 and 1 arrive; the report at 20 ms gives srtt ≈ 10 ms.
    let sent1 = out[1].send_time.as_nanos() / 1_000_000;
    s.handle_feedback(
        ms(20),
        0,
        &feedback(20, &[(0, Some(sent1 + 5)), (1, Some(sent1 + 5))]),
    );
    let srtt = s.srtt(0).unwrap();
    assert!(srtt <= Duration::from_millis(20), "{srtt}");
    let deadline = out[2].send_time + srtt * 2 + DEFAULT_LOSS_REPORT_SLACK;
    let mut later = Vec::new();
    let d = deadline.as_nanos() / 1_000_000;
    drive(&mut s, 20, d, &mut later);
    assert!(later.is_empty(), "{later:?}");
    assert_eq!(s.poll_timeout(ms(d)), Some(deadline.max(ms(d))));
    drive(&mut s, d, d + 10, &mut later);
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].kind, PacketKind::Retransmission);
    assert_eq!(later[0].media_seq, out[2].media_seq);
    assert_eq!(s.path_stats(0).packets_presumed_lost, 1);
    // The path now reports seq 2 lost behind the retransmission (seq 3).
    s.handle_feedback(
        ms(d + 30),
        0,
        &feedback(d + 30, &[(2, None), (3, Some(d + 20))]),
    );
    assert_eq!(s.stats().retransmissions, 1);
}

/// Each path's controller probes with padding when its queue is empty: GCC
/// starts with probe clusters; both paths carry them.
#[test]
fn padding_carries_each_paths_probes() {
    let paths = vec![
        CcConfig::default_for("gcc").unwrap(),
        CcConfig::default_for("gcc").unwrap(),
    ];
    let mut s = sender(paths, "min-cost", &[(0, 100, FrameType::Key)]);
    s.enable_probe_padding();
    let mut out = Vec::new();
    drive(&mut s, 0, 100, &mut out);
    for p in 0..2 {
        let pads = out
            .iter()
            .filter(|t| t.path == p && t.kind == PacketKind::Padding)
            .count() as u64;
        assert!(pads >= 5, "path {p}: {pads}");
        assert_eq!(s.path_stats(p).padding_packets_sent, pads);
    }
    // And none without it.
    let mut s = sender(
        vec![
            CcConfig::default_for("gcc").unwrap(),
            CcConfig::default_for("gcc").unwrap(),
        ],
        "min-cost",
        &[(0, 100, FrameType::Key)],
    );
    let mut out = Vec::new();
    drive(&mut s, 0, 100, &mut out);
    assert!(out.iter().all(|t| t.kind == PacketKind::Media));
}

#[test]
fn a_key_frame_request_on_any_path_reaches_the_encoder_once() {
    let mut s = sender(
        vec![fixed(Bitrate::mbps(1), 2.5), fixed(Bitrate::mbps(1), 2.5)],
        "min-cost",
        &[],
    );
    let mut fb = feedback(10, &[]);
    fb.key_frame_request = true;
    s.handle_feedback(ms(10), 0, &fb);
    s.handle_feedback(ms(11), 1, &fb);
    assert_eq!(s.encoder().key_requests, 1);
    // Served by the key frame on its way for at least 1 s.
    s.handle_feedback(ms(400), 1, &fb);
    assert_eq!(s.encoder().key_requests, 1);
    s.handle_feedback(ms(1010), 1, &fb);
    assert_eq!(s.encoder().key_requests, 2);
    assert_eq!(s.stats().key_frames_requested, 2);
}

#[test]
fn key_frame_requests_wait_for_the_backlog_and_the_last_key_frame() {
    // Two 100 kbps paths and a 100 kB backlog: the key frame asked for
    // now needs about 8 s to drain behind it (200 kB at 200 kbps, the last
    // key frame's size counted), so the chain-broken reports of those
    // seconds ask for nothing more.
    let mut s = sender(
        vec![
            fixed(Bitrate::kbps(100), 1.0),
            fixed(Bitrate::kbps(100), 1.0),
        ],
        "min-cost",
        &[(0, 100_000, FrameType::Key)],
    );
    let mut out = Vec::new();
    drive(&mut s, 0, 10, &mut out);
    let mut fb = feedback(10, &[]);
    fb.key_frame_request = true;
    s.handle_feedback(ms(10), 0, &fb);
    assert_eq!(s.encoder().key_requests, 1);
    for t in [1100, 4000, 7500] {
        s.handle_feedback(ms(t), 1, &fb);
        assert_eq!(s.encoder().key_requests, 1, "at {t} ms");
    }
    s.handle_feedback(ms(8600), 0, &fb);
    assert_eq!(s.encoder().key_requests, 2);
}

// ---------------------------------------------------------------- receiver

fn receiver() -> MultipathReceiver {
    MultipathReceiver::new(Instant::ZERO, MultipathReceiverConfig::new(2))
}

/// Segment `index` of `count` of frame `frame_id`, captured at `capture` ms.
fn seg(frame_id: u64, key: bool, capture: u64, index: u32, count: u32) -> MediaPacket {
    MediaPacket {
        frame_id,
        frame_type: if key {
            FrameType::Key
        } else {
            FrameType::Delta
        },
        capture_time: ms(capture),
        index,
        count,
        last_in_frame: index + 1 == count,
        payload: Bytes::new(1000),
        wire_size: Bytes::new(1048),
        layer: 0,
        layer_end: false,
        repair: false,
    }
}

fn frames(r: &mut MultipathReceiver) -> Vec<crate::media::player::FrameRecord> {
    std::iter::from_fn(|| r.poll_frame()).collect()
}

#[test]
fn segments_of_both_paths_reassemble_out_of_order() {
    let mut r = receiver();
    let w = Bytes::new(1048);
    // Frame 0 (key, 4 segments): the last segment first, on the fast path.
    assert_eq!(
        r.on_packet(ms(20), 1, 0, w, &seg(0, true, 0, 3, 4)),
        SegmentArrival::New
    );
    r.on_packet(ms(21), 1, 1, w, &seg(0, true, 0, 1, 4));
    r.on_packet(ms(50), 0, 0, w, &seg(0, true, 0, 0, 4));
    assert!(frames(&mut r).is_empty());
    // Frame 1 completes before frame 0: it waits for it.
    r.on_packet(ms(55), 1, 2, w, &seg(1, false, 33, 0, 1));
    assert!(frames(&mut r).is_empty());
    r.on_packet(ms(60), 0, 1, w, &seg(0, true, 0, 2, 4));
    let f = frames(&mut r);
    assert_eq!(f.len(), 2);
    assert_eq!(
        (f[0].frame_id, f[0].complete, f[0].displayed),
        (0, Some(ms(60)), Some(ms(60)))
    );
    assert_eq!(f[0].delay(), Some(Duration::from_millis(60)));
    assert_eq!(f[0].size, Bytes::new(4000));
    assert_eq!(
        (f[1].frame_id, f[1].complete, f[1].displayed),
        (1, Some(ms(55)), Some(ms(60)))
    );
    assert_eq!(r.player_stats().frames_displayed, 2);
    assert_eq!(
        (r.path_stats(0).segments_new, r.path_stats(1).segments_new),
        (2, 3)
    );
}

#[test]
fn duplicate_segments_are_ignored() {
    let mut r = receiver();
    let w = Bytes::new(1048);
    r.on_packet(ms(10), 0, 0, w, &seg(0, true, 0, 0, 2));
    // The same segment again, on the other path (a retransmission racing
    // its original).
    assert_eq!(
        r.on_packet(ms(12), 1, 0, w, &seg(0, true, 0, 0, 2)),
        SegmentArrival::Duplicate
    );
    assert!(
        frames(&mut r).is_empty(),
        "a duplicate does not complete a frame"
    );
    r.on_packet(ms(14), 0, 1, w, &seg(0, true, 0, 1, 2));
    // After completion and display.
    assert_eq!(
        r.on_packet(ms(16), 1, 1, w, &seg(0, true, 0, 1, 2)),
        SegmentArrival::Late
    );
    let f = frames(&mut r);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].size, Bytes::new(2000));
    let st = r.stats();
    assert_eq!(
        (st.segments_new, st.segments_duplicate, st.segments_late),
        (2, 1, 1)
    );
    // Both copies were still reported on their paths.
    let mut fb = WireFeedback::default();
    assert!(r.poll_feedback(ms(50), 1, &mut fb));
    assert_eq!(fb.packets, vec![(0, Some(ms(12))), (1, Some(ms(16)))]);
}

/// A delta frame with a segment missing is dropped 500 ms after its first
/// segment arrived; a segment at or after that instant is late. The delta
/// frame behind it is undecodable and dropped with it.
#[test]
fn an_incomplete_delta_frame_is_dropped_after_max_wait() {
    let mut r = receiver();
    let w = Bytes::new(1048);
    r.on_packet(ms(10), 0, 0, w, &seg(0, true, 0, 0, 1));
    r.on_packet(ms(100), 0, 1, w, &seg(1, false, 33, 0, 3));
    r.on_packet(ms(130), 1, 0, w, &seg(1, false, 33, 2, 3));
    r.on_packet(ms(140), 1, 1, w, &seg(2, false, 66, 0, 1));
    let mut fb = WireFeedback::default();
    assert!(r.poll_feedback(ms(150), 0, &mut fb) && r.poll_feedback(ms(150), 1, &mut fb));
    // Nothing left to report: the next timer is frame 1's give-up instant,
    // 500 ms after its first segment.
    assert_eq!(r.poll_timeout(), Some(ms(600)));
    r.on_timeout(ms(599));
    assert_eq!(frames(&mut r).len(), 1, "only frame 0 so far");
    r.on_timeout(ms(600));
    let f = frames(&mut r);
    assert_eq!(f.len(), 2);
    assert!(f[0].dropped && f[0].complete.is_none() && f[0].frame_id == 1);
    assert!(f[1].dropped && f[1].complete == Some(ms(140)));
    assert_eq!(
        r.on_packet(ms(600), 0, 2, w, &seg(1, false, 33, 1, 3)),
        SegmentArrival::Late
    );
    assert!(r.needs_key_frame());
    let mut fb = WireFeedback::default();
    assert!(r.poll_feedback(ms(600), 0, &mut fb));
    assert!(fb.key_frame_request);
}

#[test]
fn a_delta_segment_arriving_at_its_deadline_is_late_even_if_not_at_the_front() {
    let mut r = receiver();
    let w = Bytes::new(1048);
    // Key frame 0 waits (segment 1 missing); delta frame 1 behind it.
    r.on_packet(ms(10), 0, 0, w, &seg(0, true, 0, 0, 2));
    r.on_packet(ms(40), 0, 1, w, &seg(1, false, 33, 0, 2));
    assert_eq!(
        r.on_packet(ms(540), 1, 0, w, &seg(1, false, 33, 1, 2)),
        SegmentArrival::Late
    );
    // The key frame is repaired; frame 1 is then given up at its deadline.
    r.on_packet(ms(700), 1, 1, w, &seg(0, true, 0, 1, 2));
    let f = frames(&mut r);
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].displayed, Some(ms(700)));
    assert!(f[1].dropped);
}

/// The key frame waits far beyond 500 ms, asks for a new key frame after
/// 500 ms, and is displayed when the repair comes, with the frames behind it.
#[test]
fn a_key_frame_waits_beyond_max_wait_and_is_delivered_after_repair() {
    let mut r = receiver();
    let w = Bytes::new(1048);
    r.on_packet(ms(10), 0, 0, w, &seg(0, true, 0, 0, 3));
    r.on_packet(ms(11), 0, 1, w, &seg(0, true, 0, 2, 3));
    r.on_packet(ms(40), 1, 0, w, &seg(1, false, 33, 0, 1));
    assert!(!r.needs_key_frame());
    r.on_timeout(ms(509));
    assert!(!r.needs_key_frame());
    r.on_timeout(ms(510));
    assert!(
        r.needs_key_frame(),
        "waited max_wait: ask for a new key frame"
    );
    r.on_timeout(ms(2000));
    assert!(frames(&mut r).is_empty());
    assert_eq!(r.player_stats().frames_dropped, 0);
    assert_eq!(
        r.on_packet(ms(2000), 1, 1, w, &seg(0, true, 0, 1, 3)),
        SegmentArrival::New
    );
    let f = frames(&mut r);
    assert_eq!(f.len(), 2);
    assert_eq!(
        (f[0].complete, f[0].displayed),
        (Some(ms(2000)), Some(ms(2000)))
    );
    assert_eq!(f[1].displayed, Some(ms(2000)));
    assert!(!r.needs_key_frame());
    assert_eq!(
        r.player_stats().stall_count,
        0,
        "first gap is start-up, not a stall"
    );
}

#[test]
fn a_newer_complete_key_frame_supersedes_a_waiting_one() {
    let mut r = receiver();
    let w = Bytes::new(1048);
    r.on_packet(ms(10), 0, 0, w, &seg(0, true, 0, 0, 2));
    r.on_packet(ms(40), 0, 1, w, &seg(1, false, 33, 0, 1));
    r.on_packet(ms(800), 0, 2, w, &seg(2, true, 700, 0, 1));
    let f = frames(&mut r);
    assert_eq!(f.len(), 3);
    assert!(f[0].dropped && f[1].dropped);
    assert_eq!(f[2].displayed, Some(ms(800)));
    assert!(!r.needs_key_frame());
}

#[test]
fn each_paths_feedback_reports_only_its_own_sequence_numbers() {
    let mut r = receiver();
    let w = Bytes::new(1048);
    r.on_packet(ms(10), 0, 0, w, &seg(0, true, 0, 0, 5));
    r.on_packet(ms(11), 1, 0, w, &seg(0, true, 0, 1, 5));
    r.on_packet(ms(12), 0, 1, w, &seg(0, true, 0, 2, 5));
    r.on_padding(ms(13), 1, 1, Bytes::new(300));
    r.on_packet(ms(14), 0, 3, w, &seg(0, true, 0, 3, 5));
    let mut fb = WireFeedback::default();
    assert!(!r.poll_feedback(ms(49), 0, &mut fb));
    assert!(r.poll_feedback(ms(50), 0, &mut fb));
    assert_eq!(
        fb.packets,
        vec![
            (0, Some(ms(10))),
            (1, Some(ms(12))),
            (2, None),
            (3, Some(ms(14)))
        ]
    );
    assert!(r.poll_feedback(ms(50), 1, &mut fb));
    assert_eq!(fb.packets, vec![(0, Some(ms(11))), (1, Some(ms(13)))]);
    assert_eq!(r.path_stats(1).padding_received, 1);
    assert_eq!(r.path_stats(0).feedback_sent, 1);
}

// ---------------------------------------------------------------- end to end

struct E2e<E = TraceEncoder> {
    sender: MultipathSender<E>,
    receiver: MultipathReceiver,
    frames: Vec<crate::media::player::FrameRecord>,
    /// Packets the bottlenecks dropped.
    tail_drops: u64,
}

/// Two paths with one-way delays `owd` (ms), the sender's packets whose
/// `(path, seq)` is in `drop` lost; 30 fps of 6000 B frames (5 segments,
/// 1.5 Mbps on the wire), a key frame every 300; Fixed controllers pacing at
/// 1 Mbps per path, so the fast path alone cannot carry the stream and
/// min-cost puts about a third on the slow one.
fn e2e(owd: [u64; 2], drop: &[(usize, u64)], secs: u64) -> E2e {
    e2e_with(owd, drop, secs, DEFAULT_RETRANSMIT_BUFFER)
}

/// [`e2e`] with the sender buffer's length given.
fn e2e_with(owd: [u64; 2], drop: &[(usize, u64)], secs: u64, buffer: Duration) -> E2e {
    let trace: Vec<(Bytes, FrameType)> = (0..300)
        .map(|k| {
            let t = if k == 0 {
                FrameType::Key
            } else {
                FrameType::Delta
            };
            (Bytes::new(6000), t)
        })
        .collect();
    let enc = TraceEncoder::new(Instant::ZERO, 30.0, trace).unwrap();
    let cfg = MultipathSenderConfig {
        retransmit_buffer: buffer,
        ..MultipathSenderConfig::new(
            vec![fixed(Bitrate::mbps(1), 1.0), fixed(Bitrate::mbps(1), 1.0)],
            SchedulerConfig::default_for("min-cost").unwrap(),
        )
    };
    let mut sender = MultipathSender::new(Instant::ZERO, cfg, enc);
    sender.enable_probe_padding();
    run_net(sender, owd, [None, None], drop, secs)
}

/// Bottleneck buffer of the in-test network, in time at the bottleneck rate.
const QUEUE_LIMIT: Duration = Duration::from_millis(100);

/// Drives `sender` and a receiver over two paths: one-way delay `owd` (ms),
/// an optional bottleneck rate per path (a drop-tail FIFO of
/// [`QUEUE_LIMIT`] in front of the delay), the packets whose `(path, seq)`
/// is in `drop` lost.
fn run_net<E: EncoderModel>(
    mut sender: MultipathSender<E>,
    owd: [u64; 2],
    rate: [Option<Bitrate>; 2],
    drop: &[(usize, u64)],
    secs: u64,
) -> E2e<E> {
    let mut receiver = MultipathReceiver::new(Instant::ZERO, MultipathReceiverConfig::new(2));
    let mut fwd: VecDeque<(Instant, MpTransmit)> = VecDeque::new();
    let mut rev: VecDeque<(Instant, usize, WireFeedback)> = VecDeque::new();
    let mut frames = Vec::new();
    let mut link_free = [Instant::ZERO; 2];
    let mut tail_drops = 0u64;
    let owd = [Duration::from_millis(owd[0]), Duration::from_millis(owd[1])];
    let end = Instant::from_secs(secs);
    let mut t = Instant::ZERO;
    while t < end {
        sender.on_timeout(t);
        while let Some(tx) = sender.poll_transmit(t) {
            // Drop-tail: a bottleneck holding 100 ms of backlog drops.
            let full = rate[tx.path].is_some() && link_free[tx.path] > t + QUEUE_LIMIT;
            if full {
                tail_drops += 1;
            }
            if !drop.contains(&(tx.path, tx.seq)) && !full {
                // Each path is FIFO (bottleneck then constant delay); the
                // queue is kept sorted by arrival across paths.
                let start = link_free[tx.path].max(t);
                let done = rate[tx.path].map_or(start, |r| start + tx.packet.wire_size / r);
                link_free[tx.path] = done;
                let at = done + owd[tx.path];
                let pos = fwd.iter().position(|x| x.0 > at).unwrap_or(fwd.len());
                fwd.insert(pos, (at, tx));
            }
        }
        while fwd.front().is_some_and(|x| x.0 <= t) {
            let (at, tx) = fwd.pop_front().unwrap();
            if tx.kind == PacketKind::Padding {
                receiver.on_padding(at, tx.path, tx.seq, tx.packet.wire_size);
            } else {
                receiver.on_packet(at, tx.path, tx.seq, tx.packet.wire_size, &tx.packet);
            }
        }
        receiver.on_timeout(t);
        for (p, d) in owd.iter().enumerate() {
            let mut fb = WireFeedback::default();
            if receiver.poll_feedback(t, p, &mut fb) {
                let at = t + *d;
                let pos = rev.iter().position(|x| x.0 > at).unwrap_or(rev.len());
                rev.insert(pos, (at, p, fb));
            }
        }
        while rev.front().is_some_and(|x| x.0 <= t) {
            let (_, p, fb) = rev.pop_front().unwrap();
            sender.handle_feedback(t, p, &fb);
        }
        frames.extend(std::iter::from_fn(|| receiver.poll_frame()));
        t += Duration::from_millis(1);
    }
    receiver.finish(t);
    frames.extend(std::iter::from_fn(|| receiver.poll_frame()));
    E2e {
        sender,
        receiver,
        frames,
        tail_drops,
    }
}

#[test]
fn two_paths_deliver_every_frame() {
    let r = e2e([20, 60], &[], 5);
    let ps = r.receiver.player_stats();
    // 150 frames captured in 5 s; the last few are still in flight.
    assert!(ps.frames_displayed >= 145, "{ps:?}");
    assert_eq!(ps.frames_dropped + ps.frames_missing, 0, "{ps:?}");
    assert_eq!(r.sender.stats().retransmissions, 0);
    // Both paths carry media; the fast one more.
    let (s0, s1) = (r.sender.path_share(0), r.sender.path_share(1));
    assert!(s0 > s1 && s1 > 0.2, "{s0} {s1}");
    assert!((s0 + s1 - 1.0).abs() < 1e-9);
    // Frame delay ≤ slow path delay + pacing, far below the 500 ms wait.
    let max = r.frames.iter().filter_map(|f| f.delay()).max().unwrap();
    assert!(max < Duration::from_millis(150), "{max}");
    let total: u64 = (0..2).map(|p| r.sender.path_stats(p).packets_sent).sum();
    assert_eq!(total, r.sender.stats().packets_sent);
    assert_eq!(r.receiver.stats().segments_duplicate, 0);
}

#[test]
fn retransmission_repairs_dropped_segments_of_key_and_delta_frames() {
    // Path 1 seq 0 is part of the key frame 0; path 0 seq 40 of a delta frame.
    let r = e2e([20, 60], &[(1, 0), (0, 40)], 5);
    let ps = r.receiver.player_stats();
    assert_eq!(ps.frames_dropped + ps.frames_missing, 0, "{ps:?}");
    assert!(ps.frames_displayed >= 145, "{ps:?}");
    let st = r.sender.stats();
    assert_eq!(st.retransmissions, 2, "{st:?}");
    assert_eq!(r.receiver.stats().segments_duplicate, 0);
    // The repaired frames took about a slow-path round trip more, well within
    // the 500 ms wait.
    let f0 = &r.frames[0];
    assert_eq!(f0.frame_type, FrameType::Key);
    let d0 = f0.delay().unwrap();
    assert!(
        d0 > Duration::from_millis(100) && d0 < Duration::from_millis(400),
        "{d0}"
    );
    let slow: Vec<_> = r
        .frames
        .iter()
        .filter(|f| f.delay().unwrap_or(Duration::ZERO) > Duration::from_millis(100))
        .map(|f| f.frame_id)
        .collect();
    assert!(slow.len() <= 4, "{slow:?}");
}

#[test]
fn without_the_sender_buffer_a_dropped_delta_segment_loses_its_frame() {
    // The same delta-frame drop with a zero-length sender buffer: nothing is
    // retransmitted, the frame is dropped after 500 ms and the picture
    // freezes until the next key frame (frame 300, past the run).
    let r = e2e_with([20, 60], &[(0, 40)], 5, Duration::ZERO);
    let st = r.sender.stats();
    assert_eq!(
        (st.retransmissions, st.retransmissions_expired),
        (0, 1),
        "{st:?}"
    );
    let ps = r.receiver.player_stats();
    assert!(ps.frames_dropped >= 100, "{ps:?}");
    assert!(r.receiver.needs_key_frame());
}

/// 20 s of a padded Delay-BBR min-cost sender with encoder `enc` over
/// bottlenecks of 1 and 2 Mbps with 20 and 60 ms one-way delay, `drop`
/// lost.
fn delay_bbr_on_1_and_2_mbps<E: EncoderModel>(enc: E, drop: &[(usize, u64)]) -> E2e<E> {
    let cc = CcConfig::default_for("delay-bbr").unwrap();
    let cfg = MultipathSenderConfig::new(
        vec![cc.clone(), cc],
        SchedulerConfig::default_for("min-cost").unwrap(),
    );
    let mut sender = MultipathSender::new(Instant::ZERO, cfg, enc);
    sender.enable_probe_padding();
    run_net(
        sender,
        [20, 60],
        [Some(Bitrate::mbps(1)), Some(Bitrate::mbps(2))],
        drop,
        20,
    )
}

/// Delay-BBR (the paper's controller) on both paths, a rate-following
/// encoder, bottlenecks of 1 and 2 Mbps with 20 and 60 ms one-way delay:
/// the controllers find their paths, the encoder gets their (capped) sum,
/// both paths carry media and every frame arrives.
#[test]
fn delay_bbr_on_two_bottlenecked_paths() {
    use crate::media::encoder::{EtrModel, ParametricEncoder, ParametricEncoderConfig};
    let enc = ParametricEncoder::new(
        Instant::ZERO,
        ParametricEncoderConfig {
            etr: EtrModel::Constant(1.0),
            max_bitrate: Bitrate::mbps(5),
            // The settings these expectations were measured with (a key
            // frame every 2 s, 10 × a delta frame). With smaller key frames
            // (the default 4.3 ×, or anything up to 6 ×, with or without a
            // GOP) the Delay-BBR on the 2 Mbps path keeps overrunning its
            // 100 ms buffer from 4 s on and frames freeze: a sensitivity of
            // this set-up to the start-up traffic, not of the encoder.
            gop: 60,
            i_frame_factor: 10.0,
            ..Default::default()
        },
        crate::rng::stream(1, 1),
    )
    .unwrap();
    let r = delay_bbr_on_1_and_2_mbps(enc, &[]);
    let s = &r.sender;
    let ps = r.receiver.player_stats();
    // Start-up overshoots the 100 ms bottleneck buffers (BBR's startup);
    // the losses are retransmitted, and frames that could not be repaired
    // in time are dropped then. Once the controllers have settled, every
    // frame is displayed.
    assert!(r.tail_drops > 0 && s.stats().retransmissions > 0);
    let dropped_late: Vec<u64> = r
        .frames
        .iter()
        .filter(|f| f.capture_time >= Instant::from_secs(5) && f.dropped)
        .map(|f| f.frame_id)
        .collect();
    assert!(dropped_late.is_empty(), "{dropped_late:?}");
    assert!(ps.frames_displayed >= 540, "{ps:?}");
    for p in 0..2 {
        assert!(s.path_share(p) > 0.1, "path {p}: {}", s.path_share(p));
    }
    // The encoder runs near the 2 Mbps cap (3 Mbps of paths).
    assert!(
        s.target_bitrate() > Bitrate::kbps(1500),
        "{}",
        s.target_bitrate()
    );
    assert!(s.target_bitrate() <= DEFAULT_MAX_TOTAL_BITRATE);
}

/// A path whose whole window is lost (every packet from its 300th to its
/// 360th) must not stay shut: nothing later reaches the receiver, so no
/// report names the losses and in-flight never falls, unless the sender
/// sends a keep-alive into the full window (as the single-path sender,
/// `CONGESTED_PACKET_INTERVAL`). Delay-BBR keeps BBR's window by default.
#[test]
fn a_path_whose_window_was_lost_resumes() {
    use crate::media::encoder::{EtrModel, ParametricEncoder, ParametricEncoderConfig};
    let enc = ParametricEncoder::new(
        Instant::ZERO,
        ParametricEncoderConfig {
            etr: EtrModel::Constant(1.0),
            max_bitrate: Bitrate::mbps(2),
            ..Default::default()
        },
        crate::rng::stream(1, 1),
    )
    .unwrap();
    let drop: Vec<(usize, u64)> = (300..360).map(|s| (1, s)).collect();
    let r = delay_bbr_on_1_and_2_mbps(enc, &drop);
    let sent = r.sender.path_stats(1).packets_sent;
    assert!(sent > 2000, "path 1 stopped after {sent} packets");
}
