//! Unit tests: one per mechanism in which WebRTC-BBR differs from `cc/bbr`;
//! each fails if the difference is removed.

#![expect(
    clippy::float_cmp,
    reason = "gains are copied from the configuration, so exact equality is the check"
)]

use std::collections::VecDeque;

use super::ack_aggregation::AckAggregation;
use super::*;
use crate::cc::bbr::delivery_rate::DeliveryRateEstimator;
use crate::media::frame::FrameType;
use crate::packet::{PacketKind, PacketResult, SeqNo};
use crate::units::Bytes;

const MSS: u64 = 1200;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}
fn at(x: u64) -> Instant {
    Instant::from_millis(x)
}
fn pkt(seq: SeqNo, t: Instant, size: u64) -> SentPacket {
    SentPacket {
        seq,
        size: Bytes::new(size),
        send_time: t,
        kind: PacketKind::Media,
        ..SentPacket::default()
    }
}
fn result(p: SentPacket, arrival: Instant) -> PacketResult {
    PacketResult {
        sent: p,
        arrival: Some(arrival),
    }
}

fn config() -> WebRtcBbrConfig {
    let mut c = WebRtcBbrConfig::default();
    c.bbr.start_bitrate = Bitrate::kbps(500);
    c.bbr.max_bitrate = Bitrate::mbps(10);
    c.bbr.mss = Bytes::new(MSS);
    c
}

/// A backlogged sender over one drop-tail bottleneck of `cap` (queue of
/// `queue_pkts` packets) with one-way delay `owd`; the receiver reports
/// every 20 ms, after the last arrival it covers (so a report holds its
/// packets up to 20 ms, as transport-wide feedback does).
struct Path {
    cap: Bitrate,
    owd: Duration,
    queue_pkts: usize,
    t: Instant,
    next_send: Instant,
    /// Departure times of the packets in the bottleneck queue.
    queue: VecDeque<Instant>,
    seq: SeqNo,
    results: VecDeque<(PacketResult, Instant)>,
    reports: VecDeque<(Instant, FeedbackReport)>,
    last_report: Instant,
}

impl Path {
    fn new(cap: Bitrate, owd: Duration, queue_pkts: usize) -> Self {
        Path {
            cap,
            owd,
            queue_pkts,
            t: Instant::ZERO,
            next_send: Instant::ZERO,
            queue: VecDeque::new(),
            seq: 0,
            results: VecDeque::new(),
            reports: VecDeque::new(),
            last_report: Instant::ZERO,
        }
    }

    fn run(&mut self, cc: &mut WebRtcBbr, until: Instant, mut hook: impl FnMut(&WebRtcBbr)) {
        while self.t < until {
            let t = self.t;
            while self.reports.front().is_some_and(|(due, _)| *due <= t) {
                if let Some((_, r)) = self.reports.pop_front() {
                    cc.on_feedback(t, &r);
                    hook(cc);
                }
            }
            while self.queue.front().is_some_and(|d| *d <= t) {
                self.queue.pop_front();
            }
            if t >= self.last_report + ms(20) {
                self.last_report = t;
                let mut packets = Vec::new();
                // Arrivals up to now, and losses detected by then.
                while self.results.front().is_some_and(|(_, known)| *known <= t) {
                    if let Some((r, _)) = self.results.pop_front() {
                        packets.push(r);
                    }
                }
                if !packets.is_empty() {
                    let report = FeedbackReport {
                        report_time: t,
                        packets,
                    };
                    self.reports.push_back((t + self.owd, report));
                }
            }
            let _ = cc.poll_probe(t);
            self.next_send = self.next_send.max(t.saturating_sub(ms(1)));
            while self.next_send <= t {
                let budget = cc.send_budget();
                if budget.cwnd.is_some_and(|w| cc.bbr().bytes_in_flight() >= w) {
                    break;
                }
                let p = pkt(self.seq, t, MSS);
                self.seq += 1;
                cc.on_packet_sent(t, &p);
                if self.queue.len() >= self.queue_pkts {
                    // Dropped: the receiver notices at the next arrival.
                    let known = self.queue.back().copied().unwrap_or(t) + self.owd;
                    self.results.push_back((
                        PacketResult {
                            sent: p,
                            arrival: None,
                        },
                        known,
                    ));
                } else {
                    let start = self.queue.back().copied().unwrap_or(t).max(t);
                    let depart = start + Bytes::new(MSS) / self.cap;
                    self.queue.push_back(depart);
                    self.results
                        .push_back((result(p, depart + self.owd), depart + self.owd));
                }
                self.next_send += Bytes::new(MSS) / budget.pacing_rate;
            }
            self.t = t + ms(1);
        }
    }
}

/// Run `cc` on a 2 Mbps, 40 ms RTT path with a deep queue until `until`.
fn run(cc: &mut WebRtcBbr, until: Instant, hook: impl FnMut(&WebRtcBbr)) {
    Path::new(Bitrate::mbps(2), ms(20), 1000).run(cc, until, hook);
}

// ---------------------------------------------------------------------------
// 1. Encoder target = min(BtlBw · encoder gain, pacing rate)

#[test]
fn target_follows_the_pacing_rate_down_in_the_drain_phase() {
    let mut cc = WebRtcBbr::new(Instant::ZERO, config());
    let mut drain_phases = 0;
    run(&mut cc, at(6000), |cc| {
        let b = cc.bbr();
        if b.state() == BbrState::ProbeBw && b.pacing_gain() == 0.75 {
            drain_phases += 1;
            // CreateRateUpdate: min(BtlBw · 1, 0.75 · BtlBw) = 0.75 · BtlBw.
            assert_eq!(cc.target_bitrate(), b.pacing_rate());
            assert!(cc.target_bitrate() < b.btlbw());
        }
        if b.state() == BbrState::ProbeBw && b.pacing_gain() == 1.25 {
            assert_eq!(cc.target_bitrate(), b.btlbw());
        }
    });
    assert!(drain_phases > 0, "never saw the 0.75 phase");
}

#[test]
fn target_uses_the_probe_rtt_encoder_gain_in_probe_rtt() {
    let mut c = config();
    c.encoder_rate_gain = 0.9;
    c.encoder_rate_gain_in_probe_rtt = 0.5;
    let mut cc = WebRtcBbr::new(Instant::ZERO, c);
    let (mut in_probe_rtt, mut cruising) = (0, 0);
    run(&mut cc, at(12_000), |cc| {
        let b = cc.bbr();
        match b.state() {
            BbrState::ProbeRtt => {
                in_probe_rtt += 1;
                assert_eq!(cc.target_bitrate(), b.btlbw().mul_f64(0.5));
            }
            BbrState::ProbeBw if b.pacing_gain() == 1.0 => {
                cruising += 1;
                assert_eq!(cc.target_bitrate(), b.btlbw().mul_f64(0.9));
            }
            _ => {}
        }
    });
    assert!(in_probe_rtt > 0 && cruising > 0);
}

#[test]
fn target_before_samples_is_the_start_bitrate_capped_by_pacing() {
    let cc = WebRtcBbr::new(Instant::ZERO, config());
    assert_eq!(cc.target_bitrate(), Bitrate::kbps(500));
}

// ---------------------------------------------------------------------------
// 2. No application-limited signal from the media stack

#[test]
fn frames_do_not_mark_application_limited_phases() {
    let frame = FrameInfo {
        frame_id: 0,
        capture_time: Instant::ZERO,
        size: Bytes::new(MSS),
        frame_type: FrameType::Delta,
        num_packets: 1,
        target_bitrate: Bitrate::kbps(500),
    };
    let mut p = pkt(0, Instant::ZERO, MSS);
    p.frame_id = Some(0);
    let mut cc = WebRtcBbr::new(Instant::ZERO, config());
    cc.on_frame(Instant::ZERO, &frame);
    cc.on_packet_sent(Instant::ZERO, &p);
    assert!(!cc.bbr().delivery_rate().is_app_limited());
    // Our BBR (draft-cheng §3.3) marks the same sequence app-limited.
    let mut bbr = Bbr::new(Instant::ZERO, config().bbr.clone());
    let mut detect = config().bbr;
    detect.app_limited_detection = true;
    let mut bbr_detect = Bbr::new(Instant::ZERO, detect);
    for b in [&mut bbr, &mut bbr_detect] {
        b.on_frame(Instant::ZERO, &frame);
        b.on_packet_sent(Instant::ZERO, &p);
    }
    assert!(!bbr.delivery_rate().is_app_limited());
    assert!(bbr_detect.delivery_rate().is_app_limited());
}

// ---------------------------------------------------------------------------
// 3. Padding while probing

#[test]
fn pads_in_startup_and_the_probing_phase_only() {
    let mut cc = WebRtcBbr::new(Instant::ZERO, config());
    let probe = cc.poll_probe(Instant::ZERO);
    assert!(probe.is_some(), "Startup probes");
    assert_eq!(probe.map(|p| p.rate), Some(cc.send_budget().pacing_rate));
    let mut seen = [0u32; 3];
    let mut path = Path::new(Bitrate::mbps(2), ms(20), 1000);
    path.run(&mut cc, at(6000), |_| {});
    // Step through ProbeBW with feedback and check each phase.
    path.run(&mut cc, at(9000), |_| {});
    let mut probe_cc = cc.clone();
    for _ in 0..2000 {
        let now = path.t;
        path.run(&mut probe_cc, now + ms(1), |_| {});
        let state = probe_cc.state();
        let gain = probe_cc.bbr().pacing_gain();
        let inflight = probe_cc.bbr().bytes_in_flight();
        let window_open = probe_cc.send_budget().cwnd.is_none_or(|w| inflight < w);
        let p = probe_cc.poll_probe(now);
        if state == BbrState::ProbeBw && gain > 1.0 && window_open {
            assert!(p.is_some());
            seen[0] += 1;
        } else if state == BbrState::ProbeBw && gain < 1.0 {
            assert!(p.is_none());
            seen[1] += 1;
        } else if state == BbrState::ProbeBw {
            assert!(p.is_none());
            seen[2] += 1;
        }
    }
    assert!(seen.iter().all(|&n| n > 0), "phases seen: {seen:?}");
    let mut off = config();
    off.padding = false;
    let mut cc = WebRtcBbr::new(Instant::ZERO, off);
    assert!(cc.poll_probe(Instant::ZERO).is_none());
}

// ---------------------------------------------------------------------------
// 4. QUIC congestion window: 32-packet start, no send quanta, ack height

#[test]
fn initial_window_is_32_packets() {
    let cc = WebRtcBbr::new(Instant::ZERO, config());
    assert_eq!(cc.bbr().cwnd(), Bytes::new(32 * MSS));
    assert_eq!(cc.send_budget().cwnd, Some(Bytes::new(32 * MSS)));
}

#[test]
fn window_is_two_bdp_plus_max_ack_height_without_send_quanta() {
    let mut cc = WebRtcBbr::new(Instant::ZERO, config());
    let (mut steady, mut exact) = (0, 0);
    run(&mut cc, at(9000), |cc| {
        let b = cc.bbr();
        let (Some(rtprop), bw) = (b.rtprop(), b.btlbw()) else {
            return;
        };
        // GetTargetCongestionWindow(gain) = gain · BDP: no 3 · send_quantum.
        assert_eq!(b.inflight_at_gain(1.0), bw * rtprop);
        if b.state() == BbrState::ProbeBw && !b.in_recovery() {
            steady += 1;
            if b.cwnd() == (bw * rtprop).mul_f64(2.0) + cc.max_ack_height() {
                exact += 1;
            }
        }
    });
    assert!(
        cc.max_ack_height() > Bytes::ZERO,
        "20 ms reports bunch acks"
    );
    assert!(steady > 50 && exact * 2 > steady, "{exact} of {steady}");

    let mut c = config();
    c.ack_aggregation = false;
    let mut cc = WebRtcBbr::new(Instant::ZERO, c);
    run(&mut cc, at(9000), |_| {});
    assert_eq!(cc.max_ack_height(), Bytes::ZERO);
}

#[test]
fn ack_height_hand_worked() {
    let mut a = AckAggregation::new(10);
    let bw = Bitrate::mbps(1); // 125 bytes per ms
    a.on_ack(at(5), Bytes::new(1000), bw, 0); // before any send: ignored
    assert_eq!(a.max_height(), Bytes::ZERO);
    a.on_packet_sent(at(0));
    a.on_packet_sent(at(3)); // only the first send opens the epoch
                             // expected 1250 ≥ 0 in the epoch: new epoch at 10 ms with 1250 B.
    a.on_ack(at(10), Bytes::new(1250), bw, 1);
    // expected 1250 ≥ 1250: new epoch at 20 ms with 5000 B.
    a.on_ack(at(20), Bytes::new(5000), bw, 1);
    assert_eq!(a.max_height(), Bytes::ZERO);
    // expected 625 < 5000: height = 7500 − 625.
    a.on_ack(at(25), Bytes::new(2500), bw, 2);
    assert_eq!(a.max_height(), Bytes::new(6875));
    // A smaller height later in the window does not replace the max ...
    a.on_ack(at(26), Bytes::new(0), bw, 5);
    assert_eq!(a.max_height(), Bytes::new(6875));
    // ... until the max leaves the 10-round window: the best of the rest
    // (7500 − 750, round 5) takes over.
    a.on_ack(at(27), Bytes::new(0), bw, 13);
    assert_eq!(a.max_height(), Bytes::new(6750));
}

// ---------------------------------------------------------------------------
// 5. Startup ends on loss

#[test]
fn startup_exits_after_one_flat_round_in_recovery() {
    // A 1 Mbps path with a 6-packet queue: Startup overflows it.
    let exit_round = |on_loss: bool| {
        let mut c = config();
        c.bbr.exit_startup_on_loss = on_loss;
        let mut cc = WebRtcBbr::new(Instant::ZERO, c);
        let mut exit = None;
        let mut lost = false;
        Path::new(Bitrate::mbps(1), ms(20), 6).run(&mut cc, at(4000), |cc| {
            lost |= cc.bbr().in_recovery();
            if exit.is_none() && cc.bbr().filled_pipe() {
                exit = Some(cc.bbr().round_count());
            }
        });
        assert!(lost, "the queue never overflowed");
        exit
    };
    let (Some(webrtc), Some(draft)) = (exit_round(true), exit_round(false)) else {
        panic!("Startup never ended");
    };
    assert!(
        webrtc < draft,
        "exit on loss at round {webrtc}, without at {draft}"
    );
}

// ---------------------------------------------------------------------------
// 6. QUIC sampler timing and RTT samples

#[test]
fn report_ack_time_uses_the_report_arrival_and_keeps_short_intervals() {
    // p0 at 0 ms, acked at 100 ms; p1, p2 sent at 100 ms arrive at 140 and
    // 150 ms, reported at 170 ms, the report reaching the sender at 200 ms.
    let sample = |report_time: bool, min_rtt: Option<Duration>| {
        let mut e = DeliveryRateEstimator::new();
        e.set_report_ack_time(report_time);
        let p0 = pkt(0, at(0), 1000);
        e.on_packet_sent(at(0), &p0);
        let r = FeedbackReport {
            report_time: at(50),
            packets: vec![result(p0, at(50))],
        };
        e.on_feedback(at(100), &r, None);
        let (p1, p2) = (pkt(1, at(100), 1000), pkt(2, at(100), 1000));
        e.on_packet_sent(at(100), &p1);
        e.on_packet_sent(at(100), &p2);
        let r = FeedbackReport {
            report_time: at(170),
            packets: vec![result(p1, at(140)), result(p2, at(150))],
        };
        e.on_feedback(at(200), &r, min_rtt)
            .sample
            .map(|s| s.delivery_rate)
    };
    // Per-packet ACK times: p2 at 200 − (170 − 150) = 180 ms, 2000 B / 80 ms.
    assert_eq!(sample(false, None), Some(Bitrate::kbps(200)));
    // ... and 80 ms < RTprop 100 ms is no sample (draft-cheng §3.2).
    assert_eq!(sample(false, Some(ms(100))), None);
    // Report time: both at 200 ms, 2000 B / 100 ms, kept whatever RTprop.
    assert_eq!(sample(true, None), Some(Bitrate::kbps(160)));
    assert_eq!(sample(true, Some(ms(150))), Some(Bitrate::kbps(160)));
}

#[test]
fn rtt_samples_include_the_feedback_delay() {
    let rtprop = |with_delay: bool| {
        let mut c = config();
        c.rtt_with_feedback_delay = with_delay;
        let mut cc = WebRtcBbr::new(Instant::ZERO, c);
        let (p0, p1) = (pkt(0, at(0), MSS), pkt(1, at(5), MSS));
        cc.on_packet_sent(at(0), &p0);
        cc.on_packet_sent(at(5), &p1);
        let r = FeedbackReport {
            report_time: at(70),
            packets: vec![result(p0, at(40)), result(p1, at(45))],
        };
        cc.on_feedback(at(110), &r);
        cc.bbr().rtprop()
    };
    // libwebrtc: min over packets of feedback_time − send_time = 110 − 5.
    assert_eq!(rtprop(true), Some(ms(105)));
    // Ours (cc/bbr): the report's hold time (70 − 45) removed.
    assert_eq!(rtprop(false), Some(ms(80)));
}

// ---------------------------------------------------------------------------
// 7. Pacing capped at the maximum bitrate

#[test]
fn pacing_is_capped_at_the_maximum_bitrate() {
    let mut c = config();
    c.bbr.start_bitrate = Bitrate::mbps(1);
    c.bbr.max_bitrate = Bitrate::mbps(1);
    let cc = WebRtcBbr::new(Instant::ZERO, c.clone());
    assert_eq!(cc.send_budget().pacing_rate, Bitrate::mbps(1));
    // cc/bbr allows up to 2.885 × the maximum.
    let b = Bbr::new(Instant::ZERO, c.bbr);
    assert!(b.send_budget().pacing_rate > Bitrate::mbps(2));
}

// ---------------------------------------------------------------------------
// Optional: ProbeRTT window based on the BDP

#[test]
fn probe_rtt_window_is_four_packets_or_a_bdp_fraction() {
    let max_probe_rtt_cwnd = |gain: Option<f64>| {
        let mut c = config();
        c.bbr.probe_rtt_cwnd_gain = gain;
        let mut cc = WebRtcBbr::new(Instant::ZERO, c);
        let mut max: Option<Bytes> = None;
        run(&mut cc, at(12_000), |cc| {
            let b = cc.bbr();
            if b.state() == BbrState::ProbeRtt {
                // GetCongestionWindow in PROBE_RTT: max(gain · BDP, min_cwnd)
                // with the BDP of this very ACK, or 4 packets.
                let bdp = b.btlbw() * b.rtprop().unwrap_or(Duration::ZERO);
                let cap = gain.map_or(Bytes::new(4 * MSS), |g| {
                    bdp.mul_f64(g).max(Bytes::new(4 * MSS))
                });
                assert!(b.cwnd() <= cap, "{} > {cap}", b.cwnd());
                max = Some(max.map_or(b.cwnd(), |m| m.max(b.cwnd())));
            }
        });
        max
    };
    assert_eq!(max_probe_rtt_cwnd(None), Some(Bytes::new(4 * MSS)));
    let frac = max_probe_rtt_cwnd(Some(PROBE_RTT_BDP_GAIN));
    assert!(frac.is_some_and(|f| f > Bytes::new(4 * MSS)), "{frac:?}");
}

// ---------------------------------------------------------------------------
// End to end on the path model

#[test]
fn converges_to_the_path_rate() {
    let mut cc = WebRtcBbr::new(Instant::ZERO, config());
    run(&mut cc, at(8000), |_| {});
    assert_eq!(cc.state(), BbrState::ProbeBw);
    let bw = cc.bbr().btlbw();
    assert!(
        bw >= Bitrate::kbps(1800) && bw <= Bitrate::kbps(2600),
        "BtlBw {bw}"
    );
    assert_eq!(cc.name(), "webrtc-bbr");
}
