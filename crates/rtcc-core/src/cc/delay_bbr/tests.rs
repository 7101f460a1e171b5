//! Unit tests of Delay-BBR's mechanisms (§4.1, eqs. 12–13, Algorithms 1–5).

#![expect(
    clippy::float_cmp,
    reason = "gains are copied from the constant tables, so exact equality is the check"
)]

use std::collections::VecDeque;

use super::send_ack_rate::SendAckRateSampler;
use super::*;
use crate::packet::PacketResult;

const MSS: u64 = 1200;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}
fn at(x: u64) -> Instant {
    Instant::from_millis(x)
}
fn pkt(seq: SeqNo, t: Instant, size: u64, kind: PacketKind) -> SentPacket {
    SentPacket {
        seq,
        size: Bytes::new(size),
        send_time: t,
        kind,
        ..SentPacket::default()
    }
}
/// A report that acknowledges `pkts` on arrival (`report_time` = arrival, so
/// their ACK time is the sender's `now`).
fn ack(now: Instant, pkts: &[SentPacket]) -> FeedbackReport {
    FeedbackReport {
        report_time: now,
        packets: pkts
            .iter()
            .map(|p| PacketResult {
                sent: *p,
                arrival: Some(now),
            })
            .collect(),
    }
}

/// A backlogged sender over one bottleneck of `cap` with one-way delay
/// `owd` and an unbounded queue; the receiver reports every 10 ms. Runs
/// until `until`, calling `hook` after each feedback.
struct Path {
    cap: Bitrate,
    owd: Duration,
    t: Instant,
    next_send: Instant,
    free_at: Instant,
    seq: SeqNo,
    arrivals: VecDeque<(SentPacket, Instant)>,
    reports: VecDeque<(Instant, FeedbackReport)>,
    last_report: Instant,
}

impl Path {
    fn new(cap: Bitrate, owd: Duration) -> Self {
        Path {
            cap,
            owd,
            t: Instant::ZERO,
            next_send: Instant::ZERO,
            free_at: Instant::ZERO,
            seq: 0,
            arrivals: VecDeque::new(),
            reports: VecDeque::new(),
            last_report: Instant::ZERO,
        }
    }

    fn run(&mut self, cc: &mut DelayBbr, until: Instant, mut hook: impl FnMut(&DelayBbr)) {
        while self.t < until {
            let t = self.t;
            while self.reports.front().is_some_and(|(due, _)| *due <= t) {
                if let Some((_, r)) = self.reports.pop_front() {
                    cc.on_feedback(t, &r);
                    hook(cc);
                }
            }
            if t >= self.last_report + ms(10) {
                self.last_report = t;
                let mut packets = Vec::new();
                while self.arrivals.front().is_some_and(|(_, a)| *a <= t) {
                    if let Some((p, a)) = self.arrivals.pop_front() {
                        packets.push(PacketResult {
                            sent: p,
                            arrival: Some(a),
                        });
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
            // A padding request is honoured like the simulator does; the
            // sender here always has media anyway.
            let _ = cc.poll_probe(t);
            self.next_send = self.next_send.max(t.saturating_sub(ms(1)));
            while self.next_send <= t {
                let budget = cc.send_budget();
                if budget.cwnd.is_some_and(|w| cc.bbr().bytes_in_flight() >= w) {
                    break;
                }
                let p = pkt(self.seq, t, MSS, PacketKind::Media);
                self.seq += 1;
                cc.on_packet_sent(t, &p);
                let depart = self.free_at.max(t) + Bytes::new(MSS) / self.cap;
                self.free_at = depart;
                self.arrivals.push_back((p, depart + self.owd));
                self.next_send += Bytes::new(MSS) / budget.pacing_rate;
            }
            self.t = t + ms(1);
        }
    }
}

fn fresh(padding: bool) -> DelayBbr {
    let config = DelayBbrConfig {
        bbr: BbrConfig {
            start_bitrate: Bitrate::kbps(500),
            max_bitrate: Bitrate::mbps(10),
            mss: Bytes::new(MSS),
            ..BbrConfig::default()
        },
        padding,
        ..DelayBbrConfig::default()
    };
    DelayBbr::new(Instant::ZERO, config)
}

/// A controller run over a `cap`, `2·owd` RTT path for 3 s, into ProbeBW.
fn in_probe_bw(cap: Bitrate, owd: Duration) -> (DelayBbr, Path) {
    let mut cc = fresh(true);
    let mut path = Path::new(cap, owd);
    path.run(&mut cc, at(3000), |_| {});
    assert!(cc.bbr().filled_pipe(), "Startup must have ended");
    (cc, path)
}

#[test]
fn probe_bw_gain_cycle_is_1_11_0_9_then_six_1() {
    let mut cc = fresh(true);
    cc.bbr.enter_probe_bw(at(0));
    let mut gains = Vec::new();
    for i in 0..8 {
        gains.push((cc.bbr().cycle_index(), cc.bbr().pacing_gain()));
        cc.bbr.advance_cycle_phase(at(i));
    }
    gains.sort_by_key(|(i, _)| *i);
    let gains: Vec<f64> = gains.into_iter().map(|(_, g)| g).collect();
    assert_eq!(gains, vec![1.11, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
}

#[test]
fn probe_bw_cycles_the_delay_bbr_gains_on_a_path() {
    // 10 Mbps, 100 ms RTT: the 1.11 phase queues ~11 ms, below 1.2 × RTT,
    // so the whole cycle runs without back-offs.
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(10), ms(50));
    let mut seen = Vec::new();
    path.run(&mut cc, at(8000), |c| {
        if c.state() == BbrState::ProbeBw {
            seen.push(c.bbr().pacing_gain());
        }
    });
    assert!(seen.contains(&1.11), "1.11 phase never used");
    assert!(seen.contains(&0.9), "0.9 phase never used");
    assert!(
        seen.iter().all(|g| [1.11, 0.9, 1.0].contains(g)),
        "{seen:?}"
    );
}

#[test]
fn srtt_is_an_ewma_with_alpha_0_9() {
    let mut cc = fresh(true);
    cc.update_srtt(1, ms(100));
    assert_eq!(cc.baseline_rtt(), Some(ms(100)));
    assert_eq!(cc.srtt(), Some(ms(100)));
    cc.update_srtt(2, ms(200));
    // eq. 12: 0.1 · 100 + 0.9 · 200 = 190 ms.
    assert_eq!(cc.srtt(), Some(ms(190)));
    assert_eq!(cc.baseline_rtt(), Some(ms(100)));
    // A new minimum resets srtt to it (Algorithm 3 lines 12–14).
    cc.update_srtt(3, ms(80));
    assert_eq!(cc.baseline_rtt(), Some(ms(80)));
    assert_eq!(cc.srtt(), Some(ms(80)));
}

#[test]
fn congestion_is_srtt_above_1_2_baseline_in_probe_bw_only() {
    let mut cc = fresh(true);
    cc.update_srtt(1, ms(100));
    // Startup: never congested by delay (Algorithm 4 line 4).
    cc.update_srtt(2, ms(200));
    assert!(!cc.congested());
    cc.bbr.enter_probe_bw(at(0));
    cc.update_srtt(3, ms(100)); // srtt = 0.1·200 + 0.9·100 = 110
    assert!(!cc.congested());
    cc.update_srtt(4, ms(121)); // srtt = 11 + 108.9 = 119.9 ≤ 120
    assert!(!cc.congested(), "{:?}", cc.srtt());
    cc.update_srtt(5, ms(122)); // srtt = 11.99 + 109.8 = 121.79 > 120
    assert!(cc.congested(), "{:?}", cc.srtt());
}

#[test]
fn backoff_paces_at_0_75_until_inflight_below_bdp() {
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let now = path.t;
    let before = cc.backoffs();
    let inflight = cc.bbr().bytes_in_flight();
    assert!(!inflight.is_zero());
    cc.maybe_enter_or_exit_drain(now, false, true);
    assert_eq!(cc.state(), BbrState::ProbeRtt);
    assert_eq!(cc.bbr().pacing_gain(), 0.75);
    let bdp = cc.bbr().btlbw() * cc.bbr().rtprop().unwrap_or(Duration::ZERO);
    assert_eq!(cc.backoff_bdp(), bdp);
    assert_eq!(cc.backoffs(), before + 1);
    // The pacing rate follows the 0.75 gain and cwnd is not cut to 4 packets.
    let mut states = Vec::new();
    path.run(&mut cc, now + ms(2000), |c| {
        if c.state() == BbrState::ProbeRtt {
            assert!(c.bbr().bytes_in_flight() >= c.backoff_bdp());
            assert_eq!(c.bbr().pacing_rate(), c.bbr().btlbw().mul_f64(0.75));
            assert!(c.bbr().cwnd() > Bytes::new(4 * MSS));
        }
        states.push(c.state());
    });
    assert!(states.contains(&BbrState::ProbeRtt), "left at once");
    assert!(states.contains(&BbrState::ProbeBw), "never left ProbeRTT");
}

#[test]
fn backoff_resets_srtt_and_ignores_acks_sent_before_it() {
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    cc.update_srtt(10, ms(40));
    assert!(cc.srtt().is_some());
    cc.maybe_enter_or_exit_drain(path.t, false, true);
    let s = cc.seq_at_backoff().expect("packets were sent");
    assert_eq!(Some(s), cc.bbr().largest_sent());
    assert_eq!(cc.srtt(), None);
    assert_eq!(cc.baseline_rtt(), None);
    cc.update_srtt(s, ms(30));
    assert_eq!(cc.srtt(), None, "ack of a packet sent before back-off used");
    cc.update_srtt(s + 1, ms(55));
    assert_eq!(cc.baseline_rtt(), Some(ms(55)));
    assert_eq!(cc.srtt(), Some(ms(55)));
}

#[test]
fn min_rtt_expiry_also_backs_off() {
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    cc.maybe_enter_or_exit_drain(path.t, true, false);
    assert_eq!(cc.state(), BbrState::ProbeRtt);
    assert_eq!(cc.bbr().pacing_gain(), 0.75);
}

#[test]
fn min_rtt_expiry_restarts_the_expiry_clock() {
    // I12: with min_rtt_ never rising, an expiry back-off restarts the
    // 10 s clock, so expiry backs off once per kMinRttExpiry rather than at
    // every ACK until a sample comes near min_rtt_. A delay back-off does not.
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let now = path.t + ms(20_000);
    let stamp = cc.bbr().rtprop_stamp();
    cc.maybe_enter_or_exit_drain(now, false, true);
    assert_eq!(cc.bbr().rtprop_stamp(), stamp);
    cc.bbr.leave_probe_rtt(now);
    cc.maybe_enter_or_exit_drain(now, true, false);
    assert_eq!(cc.bbr().rtprop_stamp(), now);
}

#[test]
fn backoff_lowers_the_encoder_target_with_the_pacing_rate() {
    // I11: the encoder follows the 0.75 sending rate during a back-off and
    // gets BtlBw back when ProbeBW resumes.
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let btlbw = cc.bbr().btlbw();
    assert_eq!(cc.target_bitrate(), btlbw);
    cc.maybe_enter_or_exit_drain(path.t, false, true);
    assert_eq!(cc.state(), BbrState::ProbeRtt);
    assert_eq!(cc.target_bitrate(), btlbw.mul_f64(0.75));
    cc.bbr.leave_probe_rtt(path.t);
    assert_eq!(cc.target_bitrate(), btlbw);
}

#[test]
fn min_rtt_never_rises_when_it_expires() {
    // I12 (Algorithm 3 lines 4–7): past kMinRttExpiry a higher RTT does not
    // replace min_rtt_ (BBR's RTprop would take it); the expiry only backs off.
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let min = cc.bbr().rtprop().expect("RTT sampled");
    // A standing queue from now on: every RTT well above 1.125 · min_rtt.
    path.owd = ms(60);
    path.run(&mut cc, path.t + ms(12_000), |c| {
        assert_eq!(c.bbr().rtprop(), Some(min), "min_rtt rose");
    });
    assert!(cc.backoffs() > 0);

    // The QUIC behaviour, on request: the expired min takes the higher sample.
    let mut quic = fresh(true);
    quic.config.min_rtt_rises_on_expiry = true;
    quic.bbr.set_rtprop_rises_on_expiry(true);
    let mut path = Path::new(Bitrate::mbps(2), ms(20));
    path.run(&mut quic, at(3000), |_| {});
    path.owd = ms(60);
    path.run(&mut quic, path.t + ms(12_000), |_| {});
    assert!(quic.bbr().rtprop() > Some(min), "{:?}", quic.bbr().rtprop());

    // BBR itself (draft §4.1.2.3) takes the higher sample on expiry.
    let mut bbr = Bbr::new(Instant::ZERO, cc.config().bbr.clone());
    let report = |t: Instant, seq: SeqNo, rtt: Duration| {
        let sent = pkt(seq, t.saturating_sub(rtt), MSS, PacketKind::Media);
        (sent, ack(t, &[sent]))
    };
    let (p, r) = report(at(100), 0, ms(40));
    bbr.on_packet_sent(p.send_time, &p);
    bbr.on_feedback(at(100), &r);
    assert_eq!(bbr.rtprop(), Some(ms(40)));
    let (p, r) = report(at(10_200), 1, ms(120));
    bbr.on_packet_sent(p.send_time, &p);
    bbr.on_feedback(at(10_200), &r);
    assert_eq!(bbr.rtprop(), Some(ms(120)));
}

#[test]
fn delay_backoffs_happen_on_a_standing_queue() {
    // Steady state on an uncongested path has no back-off; halving the
    // capacity builds a queue and ProbeBW must hand over to the
    // delay-triggered ProbeRTT, long before the 10 s min-RTT expiry.
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(10), ms(50));
    let before = cc.backoffs();
    path.run(&mut cc, path.t + ms(4000), |_| {});
    assert_eq!(cc.backoffs(), before, "back-off without a queue");
    path.cap = Bitrate::mbps(5);
    path.run(&mut cc, path.t + ms(2000), |_| {});
    assert!(cc.backoffs() > before, "no back-off on a growing queue");
}

#[test]
fn eq13_sample_is_the_smaller_of_send_and_ack_rate() {
    let mut s = SendAckRateSampler::new();
    let a = pkt(0, at(0), 1000, PacketKind::Media);
    s.on_packet_sent(&a);
    // First ack: no reference point yet.
    assert_eq!(s.on_feedback(at(100), &ack(at(100), &[a])), None);
    // Sent after A was acked: reference A (sent 0 ms, acked 100 ms).
    let b = pkt(1, at(110), 1000, PacketKind::Padding);
    let c = pkt(2, at(120), 1000, PacketKind::Media);
    s.on_packet_sent(&b);
    s.on_packet_sent(&c);
    // Δsent = 2000 B over 120 ms = 133.3 kbps; Δacked = 2000 B over 40 ms
    // = 400 kbps ⇒ the send rate.
    let bw = s.on_feedback(at(140), &ack(at(140), &[b, c]));
    assert_eq!(bw, Some(Bytes::new(2000) / ms(120)));
    // D sent 10 ms after C's ack; reference C (sent 120, acked 140):
    // Δsent = 1000 B over 30 ms = 266.7 kbps; Δacked = 1000 B over 200 ms
    // = 40 kbps ⇒ the ack rate.
    let d = pkt(3, at(150), 1000, PacketKind::Media);
    s.on_packet_sent(&d);
    let bw = s.on_feedback(at(340), &ack(at(340), &[d]));
    assert_eq!(bw, Some(Bytes::new(1000) / ms(200)));
}

#[test]
fn eq13_counts_lost_bytes_as_sent_not_acked() {
    let mut s = SendAckRateSampler::new();
    let a = pkt(0, at(0), 1000, PacketKind::Media);
    s.on_packet_sent(&a);
    s.on_feedback(at(100), &ack(at(100), &[a]));
    let b = pkt(1, at(100), 1000, PacketKind::Media);
    let c = pkt(2, at(200), 1000, PacketKind::Media);
    s.on_packet_sent(&b);
    s.on_packet_sent(&c);
    let mut report = ack(at(300), &[b, c]);
    report.packets[0].arrival = None; // b lost
                                      // Δsent = 2000 B / 200 ms = 80 kbps; Δacked = 1000 B / 200 ms = 40 kbps.
    assert_eq!(
        s.on_feedback(at(300), &report),
        Some(Bytes::new(1000) / ms(200))
    );
}

#[test]
fn padding_is_requested_while_probing_only() {
    let mut cc = fresh(true);
    // Startup (gain 2/ln 2) probes: pad at the pacing rate.
    let p = cc.poll_probe(at(0)).expect("Startup pads");
    assert_eq!(p.rate, cc.send_budget().pacing_rate);
    assert_eq!(p.padding_size, Bytes::new(MSS));
    let first = p.cluster_id;
    // ProbeBW: only the 1.11 phase pads, and each such phase is a new cluster.
    cc.bbr.enter_probe_bw(at(0));
    let mut clusters = Vec::new();
    for i in 0..16u64 {
        let gain = cc.bbr().pacing_gain();
        let probe = cc.poll_probe(at(i));
        assert_eq!(probe.is_some(), gain > 1.0, "gain {gain}");
        if let Some(p) = probe {
            clusters.push(p.cluster_id);
        }
        cc.bbr.advance_cycle_phase(at(i));
    }
    assert_eq!(clusters.len(), 2);
    assert!(clusters[0] != first && clusters[1] != clusters[0]);
    // Configured off: never.
    let mut off = fresh(false);
    assert_eq!(off.poll_probe(at(0)), None);
}

#[test]
fn padding_does_not_mark_app_limited() {
    let frame = FrameInfo {
        num_packets: 2,
        ..FrameInfo::default()
    };
    let media = |seq, t| SentPacket {
        frame_id: Some(0),
        ..pkt(seq, t, MSS, PacketKind::Media)
    };
    let (a, b) = (media(0, at(0)), media(1, at(52)));
    let c = pkt(2, at(53), MSS, PacketKind::Padding);
    for padding in [true, false] {
        let mut cc = fresh(padding);
        cc.on_frame(at(0), &frame); // opens a 1-byte bubble ...
        cc.on_packet_sent(at(0), &a);
        cc.on_feedback(at(50), &ack(at(50), &[a])); // ... delivered here
        assert!(!cc.bbr().delivery_rate().is_app_limited());
        let _ = cc.poll_probe(at(51)); // the driver pads (Startup probes)
        cc.on_packet_sent(at(52), &b); // the frame's last packet
        cc.on_packet_sent(at(53), &c);
        // With padding the sender is never out of data while probing;
        // without, the last media packet opens an application-limited bubble.
        assert_eq!(cc.bbr().delivery_rate().is_app_limited(), !padding);
    }
}

#[test]
fn no_padding_request_with_the_window_closed() {
    // A driver that wakes for padding it may not send would spin: the
    // request is withdrawn while in-flight ≥ cwnd.
    let mut cc = fresh(true);
    assert!(cc.poll_probe(at(0)).is_some());
    let mut seq = 0;
    while cc
        .send_budget()
        .cwnd
        .is_some_and(|w| cc.bbr().bytes_in_flight() < w)
    {
        cc.on_packet_sent(at(0), &pkt(seq, at(0), MSS, PacketKind::Padding));
        seq += 1;
    }
    assert!(cc.bbr().state() == BbrState::Startup);
    assert_eq!(cc.poll_probe(at(0)), None);
}
