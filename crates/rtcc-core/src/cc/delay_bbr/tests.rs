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
/// `owd` and a drop-tail queue of `buffer` (in time at `cap`); the receiver
/// reports every 10 ms, lost packets included. Runs until `until`, calling
/// `hook` after each feedback.
struct Path {
    cap: Bitrate,
    owd: Duration,
    buffer: Duration,
    t: Instant,
    next_send: Instant,
    free_at: Instant,
    seq: SeqNo,
    /// Packets in arrival order with their arrival (or, when dropped, report) time.
    arrivals: VecDeque<(SentPacket, Instant, bool)>,
    reports: VecDeque<(Instant, FeedbackReport)>,
    last_report: Instant,
}

impl Path {
    fn new(cap: Bitrate, owd: Duration) -> Self {
        Path {
            cap,
            owd,
            buffer: ms(200),
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
                while self.arrivals.front().is_some_and(|(_, a, _)| *a <= t) {
                    if let Some((p, a, lost)) = self.arrivals.pop_front() {
                        packets.push(PacketResult {
                            sent: p,
                            arrival: (!lost).then_some(a),
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
                let backlog = self.free_at.saturating_duration_since(t);
                if backlog > self.buffer {
                    // Dropped: reported with the packet queued ahead of it.
                    let at = self.free_at.max(t) + self.owd;
                    self.arrivals.push_back((p, at, true));
                } else {
                    let depart = self.free_at.max(t) + Bytes::new(MSS) / self.cap;
                    self.free_at = depart;
                    self.arrivals.push_back((p, depart + self.owd, false));
                }
                self.next_send += Bytes::new(MSS) / budget.pacing_rate;
            }
            self.t = t + ms(1);
        }
    }
}

fn bbr_config() -> BbrConfig {
    BbrConfig {
        start_bitrate: Bitrate::kbps(500),
        max_bitrate: Bitrate::mbps(10),
        mss: Bytes::new(MSS),
        ..DelayBbrConfig::default().bbr
    }
}

/// The default controller (the authors' choices where the paper is silent).
fn fresh() -> DelayBbr {
    with(DelayBbrConfig::default())
}

fn with(config: DelayBbrConfig) -> DelayBbr {
    DelayBbr::new(
        Instant::ZERO,
        DelayBbrConfig {
            bbr: bbr_config(),
            ..config
        },
    )
}

/// A controller run over a `cap`, `2·owd` RTT path for 3 s, into ProbeBW.
fn in_probe_bw(cap: Bitrate, owd: Duration) -> (DelayBbr, Path) {
    in_probe_bw_with(DelayBbrConfig::default(), cap, owd)
}

fn in_probe_bw_with(config: DelayBbrConfig, cap: Bitrate, owd: Duration) -> (DelayBbr, Path) {
    let mut cc = with(config);
    let mut path = Path::new(cap, owd);
    path.run(&mut cc, at(3000), |_| {});
    assert!(cc.bbr().filled_pipe(), "Startup must have ended");
    (cc, path)
}

#[test]
fn probe_bw_gain_cycle_is_1_11_0_9_then_six_1() {
    let mut cc = fresh();
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
    let mut cc = fresh();
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
    let mut cc = fresh();
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
    cc.maybe_enter_or_exit_drain(now, false, true, None);
    assert_eq!(cc.state(), BbrState::ProbeRtt);
    assert_eq!(cc.bbr().pacing_gain(), 0.75);
    let bdp = cc.bbr().btlbw() * cc.bbr().rtprop().unwrap_or(Duration::ZERO);
    assert_eq!(cc.backoff_bdp(), bdp);
    assert_eq!(cc.backoffs(), before + 1);
    assert_eq!(cc.expiry_backoffs(), 0);
    // Paced at 0.75 · BtlBw, until in-flight is down to the
    // frozen BDP; then ProbeBW, at the first report that shows it.
    let mut in_backoff = 0;
    let mut left_with = None;
    let mut prev = cc.state();
    path.run(&mut cc, now + ms(2000), |c| {
        if c.state() == BbrState::ProbeRtt {
            in_backoff += 1;
            assert!(c.bbr().bytes_in_flight() > c.backoff_bdp());
            assert_eq!(c.send_budget().pacing_rate, c.bbr().btlbw().mul_f64(0.75));
            // The window is not cut to BBR's 4 packets (I8).
            assert!(c.send_budget().cwnd > Some(Bytes::new(4 * MSS)));
        } else if prev == BbrState::ProbeRtt {
            left_with = Some(c.bbr().bytes_in_flight());
        }
        prev = c.state();
    });
    assert!(in_backoff > 0, "left at once");
    let left_with = left_with.expect("never left the back-off");
    assert!(left_with <= cc.backoff_bdp(), "{left_with:?}");
}

#[test]
fn backoff_resets_srtt_and_ignores_acks_sent_before_it() {
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    cc.update_srtt(10, ms(40));
    assert!(cc.srtt().is_some());
    cc.maybe_enter_or_exit_drain(path.t, false, true, None);
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

/// A path whose queue stands `extra` above its propagation delay from now
/// on (another flow's queue): every RTT is well above 1.125 · min_rtt.
fn standing_queue(path: &mut Path, extra: Duration) {
    path.owd += extra;
}

#[test]
fn min_rtt_expiry_is_detected_from_feedback_and_backs_off() {
    // Driven only through `on_feedback`: with every RTT 40 ms above
    // min_rtt, no sample refreshes it; 10 s after the last one, an ACK
    // finds it expired and backs off (Algorithm 2 line 3).
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let start = path.t;
    standing_queue(&mut path, ms(20));
    let mut first_expiry = None;
    path.run(&mut cc, start + ms(12_000), |c| {
        if first_expiry.is_none() && c.expiry_backoffs() > 0 {
            first_expiry = Some(c.state());
        }
    });
    assert_eq!(first_expiry, Some(BbrState::ProbeRtt));
    assert!(cc.expiry_backoffs() >= 1);
}

#[test]
fn expiry_backoff_takes_the_lowest_rtt_seen_during_it() {
    // The authors' MaybeEnterOrExitDecrease: when an expiry back-off ends,
    // min_rtt becomes the lowest RTT of its ACKs, even if higher, and the
    // clock restarts from that sample. So min_rtt follows a path whose
    // propagation delay grew, and the next expiry is 10 s later, not at the
    // next ACK.
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let min = cc.bbr().rtprop().expect("RTT sampled");
    let start = path.t;
    standing_queue(&mut path, ms(30));
    path.run(&mut cc, start + ms(11_500), |_| {});
    assert_eq!(cc.expiry_backoffs(), 1);
    let risen = cc.bbr().rtprop().expect("RTT sampled");
    assert!(risen >= min + ms(55), "{risen:?} from {min:?}");
    assert!(risen <= min + ms(80), "{risen:?} from {min:?}");
    path.run(&mut cc, start + ms(19_000), |_| {});
    assert_eq!(cc.expiry_backoffs(), 1, "expired again within 10 s");
}

#[test]
fn expiry_backoff_ends_after_four_min_rtts() {
    // Even when in-flight never falls to the frozen BDP (here: a back-off
    // forced with a BDP of zero), an expiry back-off ends after 4 × min_rtt.
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let min = cc.bbr().rtprop().expect("RTT sampled");
    let t0 = path.t;
    cc.maybe_enter_or_exit_drain(t0, true, false, None);
    cc.backoff_bdp = Bytes::ZERO;
    let mut left = None;
    path.run(&mut cc, t0 + ms(1000), |c| {
        if left.is_none() && c.state() != BbrState::ProbeRtt {
            left = Some(c.bbr().rtprop());
        }
    });
    assert!(left.is_some(), "still backing off");
    // It ended between 4 and 5 min-RTTs in; a delay back-off would not.
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let t0 = path.t;
    cc.maybe_enter_or_exit_drain(t0, false, true, None);
    cc.backoff_bdp = Bytes::ZERO;
    path.run(&mut cc, t0 + min * 6, |c| {
        assert_eq!(c.state(), BbrState::ProbeRtt, "a delay back-off timed out");
    });
}

#[test]
fn min_rtt_stays_at_the_path_rtt_over_a_long_session() {
    // Alone on a path, the baseline must not drift: the 1.11 phase queues a
    // little, the 0.9 phase and the back-offs drain it, and RTprop stays
    // within a few ms of the 40 ms propagation RTT for a minute.
    let (mut cc, mut path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let mut worst = Duration::ZERO;
    path.run(&mut cc, at(60_000), |c| {
        if let Some(r) = c.bbr().rtprop() {
            worst = worst.max(r);
        }
    });
    assert!(worst <= ms(48), "{worst:?}");
    assert!(cc.bbr().rtprop() >= Some(ms(40)));
}

#[test]
fn falls_only_restarts_the_expiry_clock_and_never_raises_min_rtt() {
    // Our earlier reading (Algorithm 3 lines 4–7 alone): an expiry back-off
    // restarts the 10 s clock and min_rtt_ never rises. A delay back-off
    // leaves the clock alone.
    let falls = DelayBbrConfig {
        min_rtt_update: MinRttUpdate::FallsOnly,
        ..DelayBbrConfig::default()
    };
    let (mut cc, path) = in_probe_bw_with(falls.clone(), Bitrate::mbps(2), ms(20));
    let now = path.t + ms(20_000);
    let stamp = cc.bbr().rtprop_stamp();
    cc.maybe_enter_or_exit_drain(now, false, true, None);
    assert_eq!(cc.bbr().rtprop_stamp(), stamp);
    cc.backoff = None;
    cc.bbr.leave_probe_rtt(now);
    cc.maybe_enter_or_exit_drain(now, true, false, None);
    assert_eq!(cc.bbr().rtprop_stamp(), now);

    let (mut cc, mut path) = in_probe_bw_with(falls, Bitrate::mbps(2), ms(20));
    let min = cc.bbr().rtprop().expect("RTT sampled");
    standing_queue(&mut path, ms(40));
    path.run(&mut cc, path.t + ms(12_000), |c| {
        assert_eq!(c.bbr().rtprop(), Some(min), "min_rtt rose");
    });
    assert!(cc.expiry_backoffs() > 0);
}

#[test]
fn next_sample_rule_takes_the_first_sample_after_expiry() {
    // QUIC's MaybeUpdateMinRtt, on request, and BBR itself (draft
    // §4.1.2.3): the expired min takes the next, higher sample.
    let quic = DelayBbrConfig {
        min_rtt_update: MinRttUpdate::NextSample,
        ..DelayBbrConfig::default()
    };
    let (mut cc, mut path) = in_probe_bw_with(quic, Bitrate::mbps(2), ms(20));
    let min = cc.bbr().rtprop().expect("RTT sampled");
    standing_queue(&mut path, ms(40));
    path.run(&mut cc, path.t + ms(12_000), |_| {});
    assert!(cc.bbr().rtprop() > Some(min), "{:?}", cc.bbr().rtprop());

    let mut bbr = Bbr::new(Instant::ZERO, bbr_config());
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
fn encoder_gets_0_8_of_btlbw_and_optionally_follows_the_backoff() {
    // The authors' PathSenderV1::OnBandwidthUpdate: 0.8 × the reference
    // rate (BtlBw), also during a back-off.
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let btlbw = cc.bbr().btlbw();
    assert_eq!(cc.target_bitrate(), btlbw.mul_f64(0.8));
    cc.maybe_enter_or_exit_drain(path.t, false, true, None);
    assert_eq!(cc.state(), BbrState::ProbeRtt);
    assert_eq!(cc.target_bitrate(), btlbw.mul_f64(0.8));
    // I11, on request: the encoder follows the 0.75 sending rate during a
    // back-off and gets its share back when ProbeBW resumes.
    let i11 = DelayBbrConfig {
        target_follows_backoff: true,
        encoder_gain: 1.0,
        ..DelayBbrConfig::default()
    };
    let (mut cc, path) = in_probe_bw_with(i11, Bitrate::mbps(2), ms(20));
    let btlbw = cc.bbr().btlbw();
    assert_eq!(cc.target_bitrate(), btlbw);
    cc.maybe_enter_or_exit_drain(path.t, false, true, None);
    assert_eq!(cc.target_bitrate(), btlbw.mul_f64(0.75));
    cc.backoff = None;
    cc.bbr.leave_probe_rtt(path.t);
    assert_eq!(cc.target_bitrate(), btlbw);
}

#[test]
fn window_by_default_rate_only_on_request() {
    let (cc, _) = in_probe_bw(Bitrate::mbps(2), ms(20));
    assert_eq!(cc.send_budget().cwnd, Some(cc.bbr().cwnd()));
    let rate_only = DelayBbrConfig {
        window: false,
        ..DelayBbrConfig::default()
    };
    let (mut cc, mut path) = in_probe_bw_with(rate_only, Bitrate::mbps(2), ms(20));
    assert_eq!(cc.send_budget().cwnd, None);
    // Its trace declares no window and everything else.
    let windowed = fresh();
    let (with, without) = (windowed.trace_variables(), cc.trace_variables());
    assert!(with.contains(&"cwnd_bytes") && !without.contains(&"cwnd_bytes"));
    assert_eq!(without.len() + 1, with.len());
    assert!(without.contains(&"expiry_backoffs") && without.contains(&"inflight_bytes"));
    // Rate only, a back-off paces at 0.75 · BtlBw with no window either.
    cc.maybe_enter_or_exit_drain(path.t, false, true, None);
    let mut seen = false;
    path.run(&mut cc, path.t + ms(50), |c| {
        if c.state() == BbrState::ProbeRtt {
            seen = true;
            assert_eq!(c.send_budget().cwnd, None);
            assert_eq!(c.send_budget().pacing_rate, c.bbr().btlbw().mul_f64(0.75));
        }
    });
    assert!(seen);
}

#[test]
fn probe_bw_phases_advance_on_a_timer_without_acks() {
    // UpdateGainCyclePhase is time-based: with no acknowledgement at all
    // (feedback lost), the phase still changes after one min-RTT, so the
    // 1.11 phase cannot last for ever.
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    let mut t = path.t;
    let mut phases = Vec::new();
    for _ in 0..20 {
        let due = cc.poll_timeout().expect("ProbeBW has a phase timer");
        assert!(due > t);
        t = due;
        cc.on_timeout(t);
        phases.push(cc.bbr().pacing_gain());
        assert_eq!(
            cc.send_budget().pacing_rate,
            cc.bbr().btlbw().mul_f64(cc.bbr().pacing_gain())
        );
    }
    assert!(
        phases.contains(&1.11) && phases.contains(&0.9),
        "{phases:?}"
    );
    // BBR's rule, on request: no timer.
    let bbr_rule = DelayBbrConfig {
        cycle_by_time: false,
        ..DelayBbrConfig::default()
    };
    let (cc, _) = in_probe_bw_with(bbr_rule, Bitrate::mbps(2), ms(20));
    assert_eq!(cc.poll_timeout(), None);
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
fn padding_is_requested_in_every_state_by_default() {
    // The authors' ShouldSendProbePacket() is always true: whenever the
    // sender has no media, it pads at the pacing rate, in every state.
    let mut cc = fresh();
    let p = cc.poll_probe(at(0)).expect("Startup pads");
    assert_eq!(p.rate, cc.send_budget().pacing_rate);
    assert_eq!(p.padding_size, Bytes::new(MSS));
    cc.bbr.enter_probe_bw(at(0));
    for i in 0..16u64 {
        let probe = cc.poll_probe(at(i)).expect("every ProbeBW phase pads");
        assert_eq!(probe.rate, cc.send_budget().pacing_rate);
        cc.bbr.advance_cycle_phase(at(i));
    }
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    cc.maybe_enter_or_exit_drain(path.t, false, true, None);
    assert_eq!(cc.state(), BbrState::ProbeRtt);
    assert!(cc.poll_probe(path.t).is_some(), "the back-off pads too");
}

#[test]
fn padding_is_requested_while_probing_only_on_request() {
    // Our earlier reading as a whole pads only while probing.
    let mut cc = with(DelayBbrConfig::earlier_reading());
    assert_eq!(cc.config().padding, DelayBbrPadding::Probing);
    // Startup (gain 2/ln 2) probes: pad at the pacing rate.
    let p = cc.poll_probe(at(0)).expect("Startup pads");
    assert_eq!(p.rate, cc.send_budget().pacing_rate);
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
    let mut off = with(DelayBbrConfig {
        padding: DelayBbrPadding::Off,
        ..DelayBbrConfig::default()
    });
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
    for padding in [DelayBbrPadding::Always, DelayBbrPadding::Off] {
        let mut cc = with(DelayBbrConfig {
            padding,
            ..DelayBbrConfig::default()
        });
        cc.on_frame(at(0), &frame); // opens a 1-byte bubble ...
        cc.on_packet_sent(at(0), &a);
        cc.on_feedback(at(50), &ack(at(50), &[a])); // ... delivered here
        assert!(!cc.bbr().delivery_rate().is_app_limited());
        let _ = cc.poll_probe(at(51)); // the driver pads
        cc.on_packet_sent(at(52), &b); // the frame's last packet
        cc.on_packet_sent(at(53), &c);
        // With padding the sender is never out of data; without, the last
        // media packet opens an application-limited bubble.
        let padded = padding == DelayBbrPadding::Always;
        assert_eq!(cc.bbr().delivery_rate().is_app_limited(), !padded);
    }
}

#[test]
fn no_padding_request_with_the_window_closed() {
    // With the optional window: a driver that wakes for padding it may not
    // send would spin, so the request is withdrawn while in-flight ≥ cwnd.
    let mut cc = with(DelayBbrConfig {
        window: true,
        ..DelayBbrConfig::default()
    });
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

#[test]
fn estimate_has_an_rtt_through_backoffs_and_the_reported_loss() {
    let (mut cc, path) = in_probe_bw(Bitrate::mbps(2), ms(20));
    cc.maybe_enter_or_exit_drain(path.t, false, true, None);
    assert_eq!(cc.srtt(), None);
    let e = cc.estimate();
    assert!(e.rtt.is_some_and(|r| r >= ms(40)), "{:?}", e.rtt);
    // A report with one of four packets lost: loss 0.25.
    let t = path.t + ms(100);
    let sent: Vec<SentPacket> = (0..4)
        .map(|i| pkt(100_000 + i, path.t, MSS, PacketKind::Media))
        .collect();
    for p in &sent {
        cc.on_packet_sent(path.t, p);
    }
    let mut report = ack(t, &sent);
    report.packets[2].arrival = None;
    cc.on_feedback(t, &report);
    assert_eq!(cc.estimate().loss_rate, Some(0.25));
}
