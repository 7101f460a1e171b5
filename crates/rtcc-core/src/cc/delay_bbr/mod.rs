//! Delay-BBR (Zhang et al., "Delay-BBR" multipath real-time video paper,
//! `papers/delay-bbr-multipath.txt` §4.1, eqs. 12–13, Algorithms 1–5): BBR v1
//! made to respond to delay, as a media congestion controller.
//!
//! It is [`Bbr`] with four changes (§4.1):
//!
//! 1. the ProbeBW pacing-gain cycle is [`DELAY_BBR_GAIN_CYCLE`]
//!    `[1.11, 0.9, 1, 1, 1, 1, 1, 1]` instead of `[1.25, 0.75, 1 ×6]`;
//! 2. a smoothed RTT, `srtt = (1 − α)·srtt + α·rtt` with α = 0.9 (eq. 12), is
//!    compared with `base_line_rtt`, the minimum RTT since the last back-off
//!    (Algorithm 3); in ProbeBW, `srtt > β·base_line_rtt` with β = 1.2 is
//!    congestion (Algorithm 4);
//! 3. congestion, or a min-RTT older than 10 s, enters a ProbeRTT that paces
//!    at 0.75 × BtlBw (no 4-packet window) until in-flight falls below the
//!    BDP `bw · min_rtt` frozen at entry, then returns to ProbeBW
//!    (Algorithm 5); at entry srtt is reset to 0 and base_line_rtt to +∞, and
//!    acknowledgements of packets sent before the back-off do not update
//!    them (Algorithm 3 line 11);
//! 4. bandwidth samples are `min(send rate, ack rate)` (eq. 13,
//!    [`send_ack_rate`]), and padding is requested through
//!    [`poll_probe`](CongestionController::poll_probe) while a phase probes
//!    (pacing gain > 1) so the probe happens even when the encoder has
//!    nothing to send (§4.1, last paragraph).
//!
//! Everything else (Startup, Drain, BtlBw/RTprop filters, cwnd, recovery,
//! application-limited detection) is BBR's, run through the `bbr` module's
//! derivative hooks. See `docs/algorithms/delay-bbr.md`.

pub mod send_ack_rate;

#[cfg(test)]
mod tests;

use self::send_ack_rate::SendAckRateSampler;
use super::bbr::padding::ProbePadding;
use super::bbr::{Bbr, BbrConfig, BbrState};
use super::{
    trace_bytes, trace_flag, trace_ms, CongestionController, Estimate, ProbeRequest, SendBudget,
    TraceSink,
};
use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, PacketKind, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Delay-BBR's ProbeBW gain cycle (§4.1: "[1.25, 0.75, 1, 1, 1, 1, 1, 1] are
/// changed to [1.11, 0.9, 1, 1, 1, 1, 1, 1] in 8 RTT periods").
pub const DELAY_BBR_GAIN_CYCLE: [f64; 8] = [1.11, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];

/// Configuration of [`DelayBbr`], with the paper's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct DelayBbrConfig {
    /// The underlying BBR's configuration (bitrate bounds, MSS, filters,
    /// Startup). `rtprop_filter_len` is the paper's `kMinRttExpiry` (10 s).
    pub bbr: BbrConfig,
    /// ProbeBW gain cycle (§4.1: [`DELAY_BBR_GAIN_CYCLE`]).
    pub gain_cycle: [f64; 8],
    /// EWMA weight of the new RTT sample (§4.1, eq. 12: α = 0.9).
    pub srtt_alpha: f64,
    /// Congestion when `srtt > beta · base_line_rtt` (§4.1, Algorithm 4: β = 1.2).
    pub beta: f64,
    /// Pacing gain of the delay-triggered ProbeRTT (§4.1, Algorithm 5 line 6: 0.75).
    pub backoff_gain: f64,
    /// An RTT below `similar_min_rtt · min_rtt` restarts the min-RTT expiry
    /// clock (Algorithm 3 line 8, `kSimilarMinRtt`; the paper gives no value,
    /// 1.125 is QUIC BBR's `kSimilarMinRttThreshold`).
    pub similar_min_rtt: f64,
    /// Ask for padding while a phase probes (§4.1: "padding packets ... must
    /// be generated for bandwidth probe purpose when there are no video
    /// packets available"). Default `true`.
    pub padding: bool,
    /// On min-RTT expiry, take the next RTT sample as `min_rtt_` even if it
    /// is higher, as QUIC BBR's `MaybeUpdateMinRtt` does. Default `false`:
    /// the paper's Algorithm 3 (lines 4–7) only ever lowers `min_rtt_`, and
    /// expiry only triggers a back-off (I12; the ablation is in the note).
    pub min_rtt_rises_on_expiry: bool,
}

impl Default for DelayBbrConfig {
    fn default() -> Self {
        DelayBbrConfig {
            bbr: BbrConfig::default(),
            gain_cycle: DELAY_BBR_GAIN_CYCLE,
            srtt_alpha: 0.9,
            beta: 1.2,
            backoff_gain: 0.75,
            similar_min_rtt: 1.125,
            padding: true,
            min_rtt_rises_on_expiry: false,
        }
    }
}

/// Delay-BBR.
#[derive(Debug, Clone)]
pub struct DelayBbr {
    config: DelayBbrConfig,
    bbr: Bbr,
    sampler: SendAckRateSampler,
    /// `srtt_` (eq. 12); `None` is the paper's 0.
    srtt: Option<Duration>,
    /// `base_line_rtt_`; `None` is the paper's +∞.
    baseline_rtt: Option<Duration>,
    /// `seq_at_backoff_`: acks up to this packet do not touch srtt/baseline.
    seq_at_backoff: Option<SeqNo>,
    /// `bdp_`, frozen when the back-off began (Algorithm 5 line 7).
    backoff_bdp: Bytes,
    /// Number of back-offs (ProbeRTT entries) so far.
    backoffs: u64,
    /// Probe padding requests.
    padding: ProbePadding,
}

impl DelayBbr {
    /// A Delay-BBR controller starting at `now` in Startup.
    pub fn new(now: Instant, config: DelayBbrConfig) -> Self {
        let mut bbr = Bbr::new(now, config.bbr.clone());
        bbr.set_gain_cycle(config.gain_cycle);
        // Algorithm 5: ProbeRTT drains by pacing at 0.75, "instead of only
        // four packets are sent".
        bbr.set_probe_rtt_caps_cwnd(false);
        // Algorithm 3 lines 4–7: min_rtt_ only ever falls; its expiry
        // (Algorithm 2 line 3) triggers a back-off, never a higher min (I12),
        // unless the QUIC behaviour is asked for.
        bbr.set_rtprop_rises_on_expiry(config.min_rtt_rises_on_expiry);
        DelayBbr {
            bbr,
            sampler: SendAckRateSampler::new(),
            srtt: None,
            baseline_rtt: None,
            seq_at_backoff: None,
            backoff_bdp: Bytes::ZERO,
            backoffs: 0,
            padding: ProbePadding::default(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &DelayBbrConfig {
        &self.config
    }
    /// The underlying BBR state machine.
    pub fn bbr(&self) -> &Bbr {
        &self.bbr
    }
    /// The current state.
    pub fn state(&self) -> BbrState {
        self.bbr.state()
    }
    /// `srtt_` (eq. 12), `None` after a reset.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    /// `base_line_rtt_`, `None` (= +∞) after a reset.
    pub fn baseline_rtt(&self) -> Option<Duration> {
        self.baseline_rtt
    }
    /// `seq_at_backoff_`.
    pub fn seq_at_backoff(&self) -> Option<SeqNo> {
        self.seq_at_backoff
    }
    /// The BDP the current (or last) back-off drains to.
    pub fn backoff_bdp(&self) -> Bytes {
        self.backoff_bdp
    }
    /// Number of ProbeRTT entries so far.
    pub fn backoffs(&self) -> u64 {
        self.backoffs
    }

    /// A phase that probes for bandwidth: pacing gain above 1 (Startup, the
    /// 1.11 ProbeBW phase).
    fn probing(&self) -> bool {
        self.bbr.pacing_gain() > 1.0
    }

    /// Algorithm 3 lines 11–17: baseline and srtt, for acks of packets sent
    /// after the last back-off.
    fn update_srtt(&mut self, seq: SeqNo, rtt: Duration) {
        if self.seq_at_backoff.is_some_and(|b| seq <= b) {
            return;
        }
        if self.baseline_rtt.is_none_or(|b| rtt < b) {
            self.baseline_rtt = Some(rtt);
            self.srtt = Some(rtt);
        }
        // Eq. 12: srtt = (1 − α)·srtt + α·rtt. After a reset baseline is
        // +∞, so the first sample has just set srtt = rtt above: srtt never
        // blends with the reset value 0.
        let alpha = self.config.srtt_alpha;
        let prev = self.srtt.unwrap_or(Duration::ZERO);
        self.srtt = Some(prev.mul_f64(1.0 - alpha) + rtt.mul_f64(alpha));
    }

    /// Algorithm 4 `CheckIfCongestion`.
    fn congested(&self) -> bool {
        let (Some(srtt), Some(base)) = (self.srtt, self.baseline_rtt) else {
            return false;
        };
        if srtt.is_zero() {
            return false;
        }
        self.bbr.state() == BbrState::ProbeBw && srtt > base.mul_f64(self.config.beta)
    }

    /// Algorithm 5 `MaybeEnterOrExitDrain`.
    fn maybe_enter_or_exit_drain(&mut self, now: Instant, min_rtt_expired: bool, congested: bool) {
        if self.bbr.state() != BbrState::ProbeRtt && (min_rtt_expired || congested) {
            self.bbr.enter_probe_rtt_with_gain(self.config.backoff_gain);
            self.seq_at_backoff = self.bbr.largest_sent();
            self.srtt = None;
            self.baseline_rtt = None;
            let min_rtt = self.bbr.rtprop().unwrap_or(Duration::ZERO);
            self.backoff_bdp = self.bbr.btlbw() * min_rtt;
            self.backoffs += 1;
            if min_rtt_expired {
                // I12: one expiry back-off per kMinRttExpiry, not one per
                // ACK while no sample comes near min_rtt_.
                self.bbr.refresh_rtprop_stamp(now);
            }
        }
        if self.bbr.state() == BbrState::ProbeRtt && self.bbr.bytes_in_flight() < self.backoff_bdp {
            self.bbr.leave_probe_rtt(now);
        }
    }
}

impl CongestionController for DelayBbr {
    fn name(&self) -> &'static str {
        "delay-bbr"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        crate::cc::bbr::bbr_trace_variables!(
            "srtt_ms",
            "baseline_rtt_ms",
            "congested",
            "backoff_bdp_bytes",
            "backoffs"
        )
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        self.bbr.trace_state_machine(self.send_budget(), sink);
        // Algorithm 3: srtt_ and base_line_rtt_, unset after a back-off.
        if let Some(r) = self.srtt {
            sink.record("srtt_ms", trace_ms(r));
        }
        if let Some(b) = self.baseline_rtt {
            sink.record("baseline_rtt_ms", trace_ms(b));
        }
        // Algorithm 4: srtt_ > β · base_line_rtt_ in ProbeBW.
        sink.record("congested", trace_flag(self.congested()));
        sink.record("backoff_bdp_bytes", trace_bytes(self.backoff_bdp));
        sink.record("backoffs", self.backoffs as f64);
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        // Algorithm 1: record length and send time (both estimators).
        self.sampler.on_packet_sent(pkt);
        // While the driver pads a probing phase the sender never runs out of
        // data, so neither padding nor the last media packet marks an
        // application-limited bubble.
        let padded = self.config.padding && self.padding.driven() && self.probing();
        let may_mark = pkt.kind != PacketKind::Padding && !padded;
        self.bbr.on_packet_sent_inner(now, pkt, may_mark);
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let rtt = report.rtt_sample(now);
        let prior_min_rtt = self.bbr.rtprop();
        let mut out = self
            .bbr
            .delivery_rate_mut()
            .on_feedback(now, report, prior_min_rtt);
        // Eq. 13 replaces the draft-cheng rate; the validity and
        // application-limited flag stay the draft's.
        let eq13 = self.sampler.on_feedback(now, report);
        if let Some(s) = out.sample.as_mut() {
            if let Some(bw) = eq13 {
                s.delivery_rate = bw;
            }
        }
        // Algorithm 3 lines 4–7 (min_rtt) run inside BBR's RTprop update.
        self.bbr.update_model(now, &out, rtt);
        // Algorithm 3 lines 8–10: a sample close to min_rtt keeps it fresh,
        // so Algorithm 2 line 3 does not see it expired.
        let similar = match (rtt, prior_min_rtt) {
            (Some(r), Some(m)) => r < m.mul_f64(self.config.similar_min_rtt),
            _ => false,
        };
        if similar {
            self.bbr.refresh_rtprop_stamp(now);
        }
        if let (Some(seq), Some(r)) = (out.largest_acked, rtt) {
            self.update_srtt(seq, r);
        }
        let congested = self.congested();
        let min_rtt_expired = self.bbr.rtprop_expired() && !similar;
        self.maybe_enter_or_exit_drain(now, min_rtt_expired, congested);
        self.bbr.update_control_parameters(&out);
    }

    fn on_frame(&mut self, now: Instant, frame: &FrameInfo) {
        self.bbr.on_frame(now, frame);
    }

    fn target_bitrate(&self) -> Bitrate {
        // I11: during a back-off the encoder follows the reduced sending
        // rate (§4.1: "the sending rate would be reduced to 0.75X of its
        // maximum rate"). Were it left at BtlBw, the encoder would fill the
        // sender queue faster than the 0.75 pacing drains it, the pacer's
        // queue-time limit would then pace above the gain, and the back-off
        // would never drain the network queue.
        let target = self.bbr.target_bitrate();
        if self.bbr.state() == BbrState::ProbeRtt {
            let c = &self.config.bbr;
            target
                .mul_f64(self.config.backoff_gain)
                .clamp(c.min_bitrate, c.max_bitrate)
        } else {
            target
        }
    }

    fn send_budget(&self) -> SendBudget {
        self.bbr.send_budget()
    }

    fn estimate(&self) -> Estimate {
        Estimate {
            rtt: self.srtt.or(self.bbr.estimate().rtt),
            ..self.bbr.estimate()
        }
    }

    fn poll_probe(&mut self, _now: Instant) -> Option<ProbeRequest> {
        if !self.config.padding {
            return None;
        }
        let probing = self.probing();
        let (budget, in_flight) = (self.send_budget(), self.bbr.bytes_in_flight());
        self.padding
            .poll(probing, budget, in_flight, self.config.bbr.mss)
    }
}
