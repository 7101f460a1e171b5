//! Delay-BBR (Zhang et al., "Delay-BBR" multipath real-time video paper,
//! `papers/delay-bbr-multipath.txt` §4.1, eqs. 12–13, Algorithms 1–5): BBR v1
//! made to respond to delay, as a media congestion controller.
//!
//! It is [`Bbr`] with these changes (§4.1, and the authors' released
//! simulator where the paper is silent: `SoonyangZhang/mp-video-simulation`,
//! `congestion/bbr_sender_v5.cc` `MyBbrSenderV5`, `path_sender_v1.cc`):
//!
//! 1. the ProbeBW pacing-gain cycle is [`DELAY_BBR_GAIN_CYCLE`]
//!    `[1.11, 0.9, 1, 1, 1, 1, 1, 1]`, each phase one min-RTT long, advanced
//!    by time alone (`UpdateGainCyclePhase`), on a timer as well as on ACKs;
//! 2. a smoothed RTT, `srtt = (1 − α)·srtt + α·rtt` with α = 0.9 (eq. 12), is
//!    compared with `base_line_rtt`, the minimum RTT since the last back-off
//!    (Algorithm 3); in ProbeBW, `srtt > β·base_line_rtt` with β = 1.2 is
//!    congestion (Algorithm 4);
//! 3. congestion, or a min-RTT older than 10 s, enters a back-off (our
//!    ProbeRTT state) that paces at 0.75 × BtlBw until in-flight falls to
//!    the BDP `bw · min_rtt` frozen at entry, then returns to ProbeBW
//!    (Algorithm 5); at entry srtt is reset to 0 and base_line_rtt to +∞, and
//!    acknowledgements of packets sent before the back-off do not update
//!    them (Algorithm 3 line 11). A back-off entered on min-RTT expiry also
//!    ends after 4 × min_rtt and then takes the lowest RTT seen during it as
//!    the new min_rtt, which may be higher (`MaybeEnterOrExitDecrease`);
//! 4. bandwidth samples are `min(send rate, ack rate)` (eq. 13,
//!    [`send_ack_rate`]), and padding is requested through
//!    [`poll_probe`](CongestionController::poll_probe) whenever the sender
//!    has no media, in every state (§4.1 last paragraph;
//!    `ShouldSendProbePacket` is always true);
//! 5. the encoder gets 0.8 × BtlBw (`PathSenderV1::OnBandwidthUpdate`).
//!
//! Unlike the authors' controller, which paces only, it keeps BBR's
//! congestion window by default (`window`; I16 in the note).
//!
//! Everything else (Startup, Drain, BtlBw/RTprop filters, recovery,
//! application-limited detection) is BBR's, run through the `bbr` module's
//! derivative hooks. Each departure from the authors' code is an option; see
//! `docs/algorithms/delay-bbr.md`.

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

/// When Delay-BBR asks the sender for padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelayBbrPadding {
    /// Whenever the sender has no media to send, in every state (the
    /// authors' `ShouldSendProbePacket`, which always returns true).
    Always,
    /// Only while a phase probes (pacing gain above 1: Startup and the 1.11
    /// ProbeBW phase); our earlier reading of §4.1.
    Probing,
    /// Never.
    Off,
}

/// What Delay-BBR does to `min_rtt_` when it expires (older than
/// `kMinRttExpiry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinRttUpdate {
    /// The authors' `MaybeEnterOrExitDecrease`: the expiry enters a back-off;
    /// when it ends (drained, or after 4 × min_rtt) `min_rtt_` becomes the
    /// lowest RTT seen during it, higher or not, stamped when it was seen.
    Backoff,
    /// `min_rtt_` only ever falls (Algorithm 3 lines 4–7 read alone); the
    /// expiry only backs off and restarts the 10 s clock. Our earlier reading.
    FallsOnly,
    /// QUIC BBR's `MaybeUpdateMinRtt`: the next sample after expiry replaces
    /// `min_rtt_`, and the expiry also backs off.
    NextSample,
}

/// Startup's pacing gain in the authors' code (`kDefaultHighGain`, 2.0).
pub const AUTHORS_HIGH_GAIN: f64 = 2.0;

/// Configuration of [`DelayBbr`], with the paper's defaults and, where the
/// paper is silent, the authors' code's.
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
    /// Pacing gain of the back-off (§4.1, Algorithm 5 line 6: 0.75).
    pub backoff_gain: f64,
    /// An RTT below `similar_min_rtt · min_rtt` restarts the min-RTT expiry
    /// clock (Algorithm 3 line 8, `kSimilarMinRtt`; the paper gives no value,
    /// the authors' `kSimilarMinRttThreshold` is 1.125).
    pub similar_min_rtt: f64,
    /// When to ask for padding (§4.1 last paragraph). Default
    /// [`DelayBbrPadding::Always`], as the authors' code.
    pub padding: DelayBbrPadding,
    /// What an expired `min_rtt_` becomes. Default
    /// [`MinRttUpdate::Backoff`], as the authors' code.
    pub min_rtt_update: MinRttUpdate,
    /// Keep BBR's congestion window (cwnd_gain · BDP). Default `true`, a
    /// departure from the authors' controller, which paces only: without a
    /// window, a late flow's Startup fills a deep buffer, every flow's
    /// min-RTT expires into the standing queue and the link stays full
    /// (docs/algorithms/delay-bbr.md, I16).
    pub window: bool,
    /// The encoder's target as a fraction of BtlBw (the authors'
    /// `PathSenderV1::OnBandwidthUpdate`: 0.8).
    pub encoder_gain: f64,
    /// During a back-off the encoder's target also takes the back-off gain
    /// (our earlier I11). Default `false`: the authors' reference rate stays
    /// BtlBw.
    pub target_follows_backoff: bool,
    /// ProbeBW phases last one min-RTT whatever the in-flight data (the
    /// authors' `UpdateGainCyclePhase`). Default `true`; `false` is BBR's
    /// rule (the probing phase also waits for in-flight to reach 1.11 · BDP).
    pub cycle_by_time: bool,
}

impl Default for DelayBbrConfig {
    fn default() -> Self {
        DelayBbrConfig {
            // The authors' kDefaultHighGain is 2 (Startup doubles the rate
            // each round, Drain paces at 1/2), not BBR's 2/ln 2: without a
            // window, Startup's overshoot is bounded only by the gain.
            bbr: BbrConfig {
                high_gain: AUTHORS_HIGH_GAIN,
                ..BbrConfig::default()
            },
            gain_cycle: DELAY_BBR_GAIN_CYCLE,
            srtt_alpha: 0.9,
            beta: 1.2,
            backoff_gain: 0.75,
            similar_min_rtt: 1.125,
            padding: DelayBbrPadding::Always,
            min_rtt_update: MinRttUpdate::Backoff,
            window: true,
            encoder_gain: 0.8,
            target_follows_backoff: false,
            cycle_by_time: true,
        }
    }
}

impl DelayBbrConfig {
    /// The configuration of our earlier reading (padding while probing only,
    /// min_rtt only falls, BBR's window, the encoder at BtlBw following the
    /// back-off, BBR's cycle rule): kept for comparison.
    pub fn earlier_reading() -> Self {
        DelayBbrConfig {
            padding: DelayBbrPadding::Probing,
            min_rtt_update: MinRttUpdate::FallsOnly,
            window: true,
            encoder_gain: 1.0,
            target_follows_backoff: true,
            cycle_by_time: false,
            ..DelayBbrConfig::default()
        }
    }
}

/// The back-off in progress (Algorithm 5, `MaybeEnterOrExitDecrease`).
#[derive(Debug, Clone, Copy)]
struct Backoff {
    /// When it began (`exit_probe_rtt_at_`).
    since: Instant,
    /// Entered because min_rtt_ expired (`min_rtt_expired_`).
    expiry: bool,
    /// min_rtt_ at entry (`min_rtt_record_`).
    min_rtt_record: Duration,
    /// Lowest RTT seen during it and when (`min_rtt_in_decrease_`).
    lowest: Option<(Duration, Instant)>,
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
    /// The back-off in progress.
    backoff: Option<Backoff>,
    /// Number of back-offs so far, and how many of them the min-RTT expiry
    /// started.
    backoffs: u64,
    expiry_backoffs: u64,
    /// Probe padding requests.
    padding: ProbePadding,
}

impl DelayBbr {
    /// A Delay-BBR controller starting at `now` in Startup.
    pub fn new(now: Instant, config: DelayBbrConfig) -> Self {
        let mut bbr = Bbr::new(now, config.bbr.clone());
        bbr.set_gain_cycle(config.gain_cycle);
        // Algorithm 5: the back-off drains by pacing at 0.75, "instead of
        // only four packets are sent".
        bbr.set_probe_rtt_caps_cwnd(false);
        // BBR's own RTprop only falls; the expiry rule is ours to apply.
        bbr.set_rtprop_rises_on_expiry(config.min_rtt_update == MinRttUpdate::NextSample);
        bbr.set_cycle_by_time(config.cycle_by_time);
        DelayBbr {
            bbr,
            sampler: SendAckRateSampler::new(),
            srtt: None,
            baseline_rtt: None,
            seq_at_backoff: None,
            backoff_bdp: Bytes::ZERO,
            backoff: None,
            backoffs: 0,
            expiry_backoffs: 0,
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
    /// Number of back-offs so far.
    pub fn backoffs(&self) -> u64 {
        self.backoffs
    }
    /// Number of back-offs the min-RTT expiry started.
    pub fn expiry_backoffs(&self) -> u64 {
        self.expiry_backoffs
    }

    /// A phase that probes for bandwidth: pacing gain above 1 (Startup, the
    /// 1.11 ProbeBW phase).
    fn probing(&self) -> bool {
        self.bbr.pacing_gain() > 1.0
    }

    /// Whether padding is wanted now (before the window check).
    fn wants_padding(&self) -> bool {
        match self.config.padding {
            DelayBbrPadding::Always => true,
            DelayBbrPadding::Probing => self.probing(),
            DelayBbrPadding::Off => false,
        }
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

    /// Algorithm 5 `MaybeEnterOrExitDrain` (the authors'
    /// `MaybeEnterOrExitDecrease`), given this ACK's RTT sample.
    fn maybe_enter_or_exit_drain(
        &mut self,
        now: Instant,
        min_rtt_expired: bool,
        congested: bool,
        rtt: Option<Duration>,
    ) {
        if self.backoff.is_none() && (min_rtt_expired || congested) {
            self.bbr.enter_probe_rtt_with_gain(self.config.backoff_gain);
            self.seq_at_backoff = self.bbr.largest_sent();
            self.srtt = None;
            self.baseline_rtt = None;
            let min_rtt = self.bbr.rtprop().unwrap_or(Duration::ZERO);
            self.backoff_bdp = self.bbr.btlbw() * min_rtt;
            self.backoffs += 1;
            self.expiry_backoffs += u64::from(min_rtt_expired);
            self.backoff = Some(Backoff {
                since: now,
                expiry: min_rtt_expired,
                min_rtt_record: min_rtt,
                lowest: None,
            });
            if min_rtt_expired && self.config.min_rtt_update == MinRttUpdate::FallsOnly {
                // One expiry back-off per kMinRttExpiry, not one per ACK
                // while no sample comes near a min_rtt_ that never rises.
                self.bbr.refresh_rtprop_stamp(now);
            }
        } else if let (Some(b), Some(r)) = (self.backoff.as_mut(), rtt) {
            // The authors' min_rtt_in_decrease_: samples from the ACKs after
            // the one that started the back-off.
            if b.lowest.is_none_or(|(l, _)| r <= l) {
                b.lowest = Some((r, now));
            }
        }
        let Some(b) = self.backoff else { return };
        // An expiry back-off under the authors' rule (`min_rtt_expired_`).
        let authors_expiry = b.expiry && self.config.min_rtt_update == MinRttUpdate::Backoff;
        let drained = self.bbr.bytes_in_flight() <= self.backoff_bdp;
        let timed_out =
            authors_expiry && now.saturating_duration_since(b.since) > b.min_rtt_record * 4;
        if drained || timed_out {
            if authors_expiry {
                let (rtt, stamp) = b.lowest.unwrap_or((b.min_rtt_record, now));
                self.bbr.set_rtprop(rtt, stamp);
            }
            self.backoff = None;
            self.bbr.leave_probe_rtt(now);
        }
    }
}

impl CongestionController for DelayBbr {
    fn name(&self) -> &'static str {
        "delay-bbr"
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        macro_rules! with_own {
            ($($head:tt)*) => {
                crate::cc::bbr::bbr_trace_variables!(
                    $($head)*
                    "srtt_ms",
                    "baseline_rtt_ms",
                    "congested",
                    "backoff_bdp_bytes",
                    "backoffs",
                    "expiry_backoffs"
                )
            };
        }
        if self.config.window {
            with_own!()
        } else {
            // Rate only: there is no window to report (`cwnd_bytes`).
            with_own!(rate_only;)
        }
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
        sink.record("expiry_backoffs", self.expiry_backoffs as f64);
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        // Algorithm 1: record length and send time (both estimators).
        self.sampler.on_packet_sent(pkt);
        // While the driver pads, the sender never runs out of data, so
        // neither padding nor the last media packet marks an
        // application-limited bubble.
        let padded = self.padding.driven() && self.wants_padding();
        let may_mark = pkt.kind != PacketKind::Padding && !padded;
        self.bbr.on_packet_sent_inner(now, pkt, may_mark);
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let rtt = report.rtt_sample(now);
        self.bbr.note_report(report, rtt);
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
        self.maybe_enter_or_exit_drain(now, min_rtt_expired, congested, rtt);
        if self.config.cycle_by_time {
            // A lower min_rtt can make the current phase already due.
            self.bbr.on_cycle_timer(now);
        }
        self.bbr.update_control_parameters(&out);
    }

    fn on_frame(&mut self, now: Instant, frame: &FrameInfo) {
        // A sender that pads whenever it has no media is never out of data:
        // a frame arriving to an empty queue opens no application-limited
        // bubble (which would keep Startup from seeing the pipe full).
        if self.padding.driven() && self.config.padding == DelayBbrPadding::Always {
            return;
        }
        self.bbr.on_frame(now, frame);
    }

    fn on_timeout(&mut self, now: Instant) {
        // `UpdateGainCyclePhase` is time-based: a phase ends after one
        // min-RTT even when no acknowledgement arrives.
        if self.config.cycle_by_time {
            self.bbr.on_cycle_timer(now);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.config.cycle_by_time {
            self.bbr.cycle_deadline()
        } else {
            None
        }
    }

    fn target_bitrate(&self) -> Bitrate {
        // The authors' path sender gives the encoder 0.8 × the reference
        // rate (BtlBw) at all times (`PathSenderV1::OnBandwidthUpdate`).
        // I11, optional: during a back-off it also takes the 0.75 gain.
        let c = &self.config.bbr;
        let mut gain = self.config.encoder_gain;
        if self.config.target_follows_backoff && self.bbr.state() == BbrState::ProbeRtt {
            gain *= self.config.backoff_gain;
        }
        self.bbr
            .target_bitrate()
            .mul_f64(gain)
            .clamp(c.min_bitrate, c.max_bitrate)
    }

    fn send_budget(&self) -> SendBudget {
        let budget = self.bbr.send_budget();
        if self.config.window {
            budget
        } else {
            SendBudget {
                cwnd: None,
                ..budget
            }
        }
    }

    fn estimate(&self) -> Estimate {
        // srtt_ is unset after each back-off until a packet sent after it
        // is acknowledged; the RFC 6298 srtt fills that gap.
        let bbr = self.bbr.estimate();
        Estimate {
            rtt: self.srtt.or(bbr.rtt),
            ..bbr
        }
    }

    fn poll_probe(&mut self, _now: Instant) -> Option<ProbeRequest> {
        if self.config.padding == DelayBbrPadding::Off {
            return None;
        }
        let wants = self.wants_padding();
        let (budget, in_flight) = (self.send_budget(), self.bbr.bytes_in_flight());
        self.padding
            .poll(wants, budget, in_flight, self.config.bbr.mss)
    }
}
