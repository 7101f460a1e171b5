//! CDM, the Congestion and Delay Monitor of congestion-aware scalable video
//! (`papers/cdm-scalable-video.txt` §III–§VI): a controller that decides
//! which priority IDs (PIDs) of an SVC stream a sender transmits, and which
//! of them carry a repair stream (FEC), once per reporting interval.
//!
//! Map (design note `docs/algorithms/cdm.md`, which numbers every choice
//! the paper leaves to its ref. \[14\] as I1–I17):
//!
//! - **The stream** (§III): N PIDs of equal rate (10 × 10 % of the nominal
//!   rate), sent as a [`LayerPlan`]: data PIDs 1..=`layers` and a rate-1/2
//!   repair stream for PIDs 1..=`protected`. The target bitrate is the
//!   plan's rate.
//! - **Reporting intervals** (I1): the feedback of each `report_interval`
//!   (10 s) is summed ([`IntervalSummary`], `interval.rs`) and the CDM
//!   decides once, when the interval closes (a timer).
//! - **Delay mode** (§IV, §V): the interval's mean one-way delay (I2) is
//!   placed in [d_min, d_max]: d_min the smallest delay of the last
//!   `d_min_window` intervals (§V-A/B, I3); d_max = d_min + min(k × playout
//!   buffer, the queuing delay at the last loss) (§IV, I4). Above the high
//!   threshold one PID is dropped, at or below the low one for
//!   `increase_after` intervals in a row one is added (I5); an interval with
//!   a loss halves the PIDs and records its delay for d_max (§V-C, I6). The
//!   flow starts at 5 PIDs (§VI).
//! - **Feedback loss** (§V-D, I8): no feedback for two intervals while
//!   packets were sent drops one step, and one more every two intervals,
//!   until feedback returns.
//! - **Safe Retreat** (§VI, I9–I10): held at one PID with losses for
//!   `retreat_after` intervals, the CDM sends the retreat plan (PID1 + FEC,
//!   PID1 + FEC + PID2, or PIDs 1–2 with FEC of both). Losses above
//!   `terminate_loss` for `terminate_after` intervals terminate the flow
//!   (I15).
//! - **Responsible Aggression** (§VI, I11–I14): after more than
//!   `aggression_after` intervals with a competitor present (a loss, or the
//!   delay above the low threshold) and some loss, the plan grows by one
//!   step per loss-free interval (a PID, then its repair), and on a loss is
//!   bounded by TFRC's eq. (1) ([`crate::cc::tfrc::equation`]) with the
//!   interval's RTT, loss fraction and mean packet size. Overloaded back
//!   down to the retreat plan, it returns to Safe Retreat; `release_after`
//!   clear intervals (no loss, low delay) return either TCP-aware mode to
//!   delay mode, with the FEC dropped.
//!
//! Call protocol: the [`CongestionController`] one. The controller keeps one
//! timer, the end of the reporting interval
//! ([`poll_timeout`](CongestionController::poll_timeout)); an input that
//! comes after that instant closes the interval first, so a late
//! `on_timeout` changes nothing.

mod interval;

use std::collections::VecDeque;

use super::tfrc::equation::{self, TimeoutRule};
use super::{trace_kbps, trace_ms, CongestionController, Estimate, SendBudget, TraceSink};
use crate::media::svc::{LayerLadder, LayerPlan, MAX_LAYERS};
use crate::packet::{FeedbackReport, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

pub use interval::{IntervalSummary, OneWayDelay};

#[cfg(test)]
mod tests;

/// What Safe Retreat sends (§VI, I10), each a [`LayerPlan`] whose rate is a
/// multiple of one PID's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetreatPlan {
    /// "PID1 + FEC for a rate of 20 %".
    Base,
    /// "PID1+FEC PID2 for a rate of 30 %".
    BaseAndPid2,
    /// PIDs 1 and 2 with the FEC of both, 40 %: Fig. 5's narrative,
    /// "adding PID 2 and also FEC packets of PIDs 1 & 2 ... equivalent to
    /// 4 PIDs of rate".
    BothProtected,
}

impl RetreatPlan {
    /// The plan.
    pub fn plan(self) -> LayerPlan {
        aggression_plan(self.steps())
    }

    /// Its rate in PIDs (data and repair streams).
    pub fn steps(self) -> usize {
        match self {
            RetreatPlan::Base => 2,
            RetreatPlan::BaseAndPid2 => 3,
            RetreatPlan::BothProtected => 4,
        }
    }
}

/// Which delay of an interval with a loss is "the delay associated with a
/// loss event" that bounds d_max (§IV, §V-C; I4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossDelay {
    /// The interval's largest one-way delay: the queue when it overflowed.
    Peak,
    /// The interval's mean one-way delay (the delay the thresholds judge).
    Mean,
}

/// Over which packets eq. (1)'s p, "the loss fraction (in place of the loss
/// event rate)", is measured (§VI; I13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossHorizon {
    /// The packets of the TCP-aware modes so far (since Safe Retreat was
    /// entered), back at most to the oldest of the last
    /// [`LOSS_HISTORY_EVENTS`] intervals with a loss: the span TFRC's loss
    /// event rate averages over (RFC 5348 §5.4, n = 8), counted in packets.
    Mode,
    /// The packets of the interval with the loss alone.
    Interval,
}

/// Intervals with a loss in [`LossHorizon::Mode`]'s span, TFRC's n.
pub const LOSS_HISTORY_EVENTS: usize = 8;

/// At most this many intervals in [`LossHorizon::Mode`]'s span (21 min of
/// 5 s intervals): the history has a fixed size.
pub const LOSS_HISTORY_MAX: usize = 256;

/// Which losses make a flow held at one PID "consistently forced to stay at
/// a minimum rate with reported packet losses" (§VI; I9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetreatLoss {
    /// A loss since the delay was last low: the losses that drove the flow
    /// down count (Fig. 5: losses take it to PID 1, then "the delay still
    /// remains high enough to hinder it from growing back").
    Descent,
    /// A loss while at one PID, or in the interval that brought it there.
    Floor,
}

/// What the CDM measures as "delay" (§IV, §V-D; I18).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelaySignal {
    /// Each packet's one-way forward delay (the paper's: "we use a one-way
    /// forward delay measurement instead of RTT", §V-D).
    OneWay,
    /// Each packet's round trip: from its send to the arrival of the report
    /// that told of it, less the receiver's hold. Not the paper's: the
    /// ablation that shows what §V-D avoids (return-path queues count).
    Rtt,
}

/// Configuration of [`Cdm`] (design note, "Parameters").
#[derive(Debug, Clone, PartialEq)]
pub struct CdmConfig {
    /// N, the number of PIDs (§III: "creating 10 PIDs"), at most
    /// [`MAX_LAYERS`].
    pub pids: usize,
    /// The nominal video rate, all N PIDs (§VI's experiment: 700 kbps; a
    /// scenario takes the encoder's `max_bitrate`).
    pub nominal_rate: Bitrate,
    /// PIDs sent at the start (§VI: "By default the CDM starts ... to
    /// transmit 5 PIDs").
    pub initial_pids: usize,
    /// Length of a reporting interval (I1: 10 s, from Fig. 5's timeline).
    pub report_interval: Duration,
    /// Intervals over which d_min is the smallest delay (§IV "updated over
    /// several reporting intervals", §V-A; I3: 3).
    pub d_min_window: usize,
    /// The receiver's playout buffer (§II's one-second segment; I4).
    pub playout_buffer: Duration,
    /// k: d_max is at most d_min + k × `playout_buffer` (§IV "a value
    /// proportional to the size of the playout buffer"; I4: 0.5).
    pub playout_factor: f64,
    /// Narrowest [d_min, d_max] (ours, I4: 50 ms), so that a loss at an
    /// empty queue does not put every threshold on d_min.
    pub min_span: Duration,
    /// Low threshold, as a fraction of [d_min, d_max] (I5: 0.1).
    pub threshold_low: f64,
    /// High threshold, as a fraction of [d_min, d_max] (I5: 0.3).
    pub threshold_high: f64,
    /// Intervals in a row at or below the low threshold before a PID is
    /// added (§V-C "only pursued when the delay is consistently low"; I5: 3).
    pub increase_after: u32,
    /// Which delay of a loss interval bounds d_max (I4).
    pub loss_delay: LossDelay,
    /// The delay the thresholds judge (I18).
    pub delay_signal: DelaySignal,
    /// Eq. (1)'s p: over which packets (I13).
    pub loss_horizon: LossHorizon,
    /// Intervals held at one PID with losses before Safe Retreat (§VI
    /// "consistently forced to stay at a minimum rate"; I9: 3).
    pub retreat_after: u32,
    /// Which losses count for Safe Retreat's trigger (I9).
    pub retreat_loss: RetreatLoss,
    /// What Safe Retreat sends (I10).
    pub retreat_plan: RetreatPlan,
    /// Responsible Aggression after more than this many intervals with a
    /// competitor present (§VI-A "more than three consecutive reporting
    /// intervals"; I11: 3).
    pub aggression_after: u32,
    /// Clear intervals in a row (no loss, delay at or below the low
    /// threshold) that return to delay mode (§VI "consistent delay
    /// reduction and no loss"; I11: 2).
    pub release_after: u32,
    /// Loss intervals in a row in Responsible Aggression from which each
    /// one also drops a step (§VI "persistently overloaded"; I14: 3).
    pub overload_after: u32,
    /// Loss fraction above which Safe Retreat's base layer is not sustained
    /// (I15: 0.5, what a rate-1/2 repair stream can at best make good).
    pub terminate_loss: f64,
    /// Intervals in a row above `terminate_loss` that terminate the flow
    /// (§VI "If the flow cannot sustain the base rate (with FEC) then it is
    /// terminated"; I15: 3).
    pub terminate_after: u32,
    /// Silent intervals per step down when feedback stops (§V-D "two
    /// consecutive reporting intervals"; I8: 2).
    pub silent_intervals: u32,
    /// b of eq. (1) (§VI: "approximated by b = 1").
    pub tfrc_b: f64,
    /// Pacing rate over the plan's rate (I16: 1.25).
    pub pacing_gain: f64,
}

impl Default for CdmConfig {
    fn default() -> Self {
        CdmConfig {
            pids: 10,
            nominal_rate: Bitrate::kbps(700),
            initial_pids: 5,
            report_interval: Duration::from_secs(10),
            d_min_window: 3,
            playout_buffer: Duration::from_secs(1),
            playout_factor: 0.5,
            min_span: Duration::from_millis(50),
            threshold_low: 0.1,
            threshold_high: 0.3,
            increase_after: 3,
            loss_delay: LossDelay::Peak,
            delay_signal: DelaySignal::OneWay,
            loss_horizon: LossHorizon::Mode,
            retreat_after: 3,
            retreat_loss: RetreatLoss::Descent,
            retreat_plan: RetreatPlan::BothProtected,
            aggression_after: 3,
            release_after: 2,
            overload_after: 3,
            terminate_loss: 0.5,
            terminate_after: 3,
            silent_intervals: 2,
            tfrc_b: equation::DEFAULT_B,
            pacing_gain: 1.25,
        }
    }
}

/// A [`CdmConfig`] value that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
#[error("cdm: `{key}` = {value} must be {expected}")]
pub struct CdmConfigError {
    /// The key.
    pub key: &'static str,
    /// Its value, printed.
    pub value: String,
    /// The valid range.
    pub expected: String,
}

impl CdmConfig {
    /// Checks every value against its range.
    pub fn validate(&self) -> Result<(), CdmConfigError> {
        let err = |key, value: String, expected: &str| {
            Err(CdmConfigError {
                key,
                value,
                expected: expected.to_string(),
            })
        };
        let need = self.retreat_plan.steps();
        if self.pids < need || self.pids > MAX_LAYERS {
            return Err(CdmConfigError {
                key: "pids",
                value: self.pids.to_string(),
                expected: format!(
                    "in [{need}, {MAX_LAYERS}] (the retreat plan sends {need} PIDs' worth)"
                ),
            });
        }
        if self.nominal_rate.as_bps() < self.pids as u64 {
            return err(
                "nominal_rate",
                self.nominal_rate.to_string(),
                "at least 1 bps per PID",
            );
        }
        if self.initial_pids == 0 || self.initial_pids > self.pids {
            return Err(CdmConfigError {
                key: "initial_pids",
                value: self.initial_pids.to_string(),
                expected: format!("in [1, {}] (`pids`)", self.pids),
            });
        }
        for (key, d) in [
            ("report_interval", self.report_interval),
            ("playout_buffer", self.playout_buffer),
        ] {
            if d.is_zero() {
                return err(key, "0s".into(), "> 0");
            }
        }
        if !(1..=1000).contains(&self.d_min_window) {
            return err(
                "d_min_window",
                self.d_min_window.to_string(),
                "in [1, 1000]",
            );
        }
        if !(self.playout_factor.is_finite() && self.playout_factor > 0.0) {
            return err("playout_factor", self.playout_factor.to_string(), "> 0");
        }
        let fraction = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
        if !fraction(self.threshold_low) || self.threshold_low >= 1.0 {
            return err("threshold_low", self.threshold_low.to_string(), "in [0, 1)");
        }
        if !fraction(self.threshold_high) || self.threshold_high <= self.threshold_low {
            return err(
                "threshold_high",
                self.threshold_high.to_string(),
                "in (threshold_low, 1]",
            );
        }
        if !(self.terminate_loss.is_finite()
            && self.terminate_loss > 0.0
            && self.terminate_loss <= 1.0)
        {
            return err(
                "terminate_loss",
                self.terminate_loss.to_string(),
                "in (0, 1]",
            );
        }
        for (key, n) in [
            ("increase_after", self.increase_after),
            ("retreat_after", self.retreat_after),
            ("release_after", self.release_after),
            ("overload_after", self.overload_after),
            ("terminate_after", self.terminate_after),
            ("silent_intervals", self.silent_intervals),
        ] {
            if n == 0 {
                return err(key, "0".into(), ">= 1");
            }
        }
        if !(self.tfrc_b.is_finite() && self.tfrc_b > 0.0) {
            return err("tfrc_b", self.tfrc_b.to_string(), "> 0");
        }
        if !(self.pacing_gain.is_finite() && (1.0..=10.0).contains(&self.pacing_gain)) {
            return err("pacing_gain", self.pacing_gain.to_string(), "in [1, 10]");
        }
        Ok(())
    }

    /// The PIDs as a ladder: N layers of `nominal_rate / N` each (rounded
    /// down to the bit per second). A configuration out of range is brought
    /// into it (1..=[`MAX_LAYERS`] PIDs of at least 1 bps), so this never
    /// fails; [`validate`](Self::validate) reports it.
    pub fn ladder(&self) -> LayerLadder {
        let n = self.pids.clamp(1, MAX_LAYERS);
        let step = Bitrate::bps((self.nominal_rate.as_bps() / n as u64).max(1));
        LayerLadder::uniform(n, step).expect("1..=64 layers of a positive step form a ladder")
    }
}

/// The CDM's operating mode (design note, "What it traces": `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// §IV: delay-based rate control (trace code 0).
    Delay,
    /// §VI: Safe Retreat (code 1).
    SafeRetreat,
    /// §VI: Responsible Aggression (code 2).
    Aggression,
    /// §VI: the flow could not sustain its base layer with FEC and stopped
    /// (code 3). Final.
    Terminated,
}

impl Mode {
    /// The trace code.
    pub fn code(self) -> u8 {
        match self {
            Mode::Delay => 0,
            Mode::SafeRetreat => 1,
            Mode::Aggression => 2,
            Mode::Terminated => 3,
        }
    }

    /// The name [`Estimate::state`] carries.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Delay => "delay",
            Mode::SafeRetreat => "safe-retreat",
            Mode::Aggression => "aggression",
            Mode::Terminated => "terminated",
        }
    }
}

/// The operational delay interval [d_min, d_max] and the two thresholds
/// inside it (§IV; I3–I5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// The base delay.
    pub d_min: OneWayDelay,
    /// The top of the interval.
    pub d_max: OneWayDelay,
    /// At or below: the delay is low.
    pub low: OneWayDelay,
    /// Above: the delay is high.
    pub high: OneWayDelay,
}

/// The plan of `k` PIDs' worth in the TCP-aware modes: PIDs and their
/// repair streams added alternately (§VI: "injecting data from one
/// additional PID at a time, followed by copies of the same PID"; I12), so
/// ⌈k/2⌉ data PIDs of which ⌊k/2⌋ protected.
fn aggression_plan(k: usize) -> LayerPlan {
    LayerPlan {
        layers: k.div_ceil(2),
        protected: k / 2,
    }
}

/// The controller.
#[derive(Debug, Clone)]
pub struct Cdm {
    config: CdmConfig,
    ladder: LayerLadder,
    mode: Mode,
    plan: LayerPlan,
    /// When the open reporting interval closes.
    interval_end: Instant,
    open: interval::Accumulator,
    /// The last interval that heard feedback.
    last: Option<IntervalSummary>,
    /// Packets numbered below this were counted already (I17).
    next_seq: SeqNo,
    /// A packet was sent since the last feedback that told of a new packet.
    unreported: bool,
    /// Smallest delay of each of the last `d_min_window` intervals (I3).
    minima: VecDeque<OneWayDelay>,
    /// Queuing delay above d_min at the last loss (I4).
    loss_queuing: Option<Duration>,
    /// TCP-aware modes: (packets, lost) of each interval of
    /// [`LossHorizon::Mode`]'s span, oldest first, and how many lost any.
    loss_history: VecDeque<(u64, u64)>,
    loss_intervals: usize,
    /// Eq. (1) at the last interval with a loss, R and s known.
    tfrc_bound: Option<Bitrate>,
    /// Eq. (1) for the last heard interval, at most the nominal rate (trace).
    tfrc_trace: Option<Bitrate>,
    /// Mean size of the packets sent in the last interval that sent any.
    packet_size: Option<Bytes>,
    srtt: Option<Duration>,
    min_rtt: Option<Duration>,
    /// Delay mode: intervals in a row at or below the low threshold.
    low_streak: u32,
    /// Delay mode: intervals in a row that began at one PID and could not
    /// grow, and whether one of them (or the one that brought the flow to
    /// one PID) lost packets (I9).
    floor_streak: u32,
    floor_loss: bool,
    /// Delay mode: a loss since the delay was last low (I9).
    descent_loss: bool,
    /// TCP-aware modes: intervals in a row with a competitor present, and
    /// whether one of them lost packets (I11).
    present_streak: u32,
    present_loss: bool,
    /// TCP-aware modes: clear intervals in a row (I11).
    clear_streak: u32,
    /// Aggression: loss intervals in a row (I14).
    overload_streak: u32,
    /// Safe Retreat: intervals in a row above `terminate_loss` (I15).
    heavy_streak: u32,
    /// Intervals in a row without feedback while packets were sent (I8).
    silent: u32,
}

impl Cdm {
    /// A controller whose session starts at `now`, in delay mode at
    /// `initial_pids`; its first reporting interval ends at `now +
    /// report_interval`.
    pub fn new(now: Instant, config: CdmConfig) -> Self {
        let ladder = config.ladder();
        let initial = config.initial_pids.clamp(1, ladder.len());
        Cdm {
            interval_end: now + config.report_interval,
            ladder,
            mode: Mode::Delay,
            plan: LayerPlan::data(initial),
            open: interval::Accumulator::default(),
            last: None,
            next_seq: 0,
            unreported: false,
            minima: VecDeque::with_capacity(config.d_min_window),
            loss_queuing: None,
            loss_history: VecDeque::with_capacity(LOSS_HISTORY_MAX),
            loss_intervals: 0,
            tfrc_bound: None,
            tfrc_trace: None,
            packet_size: None,
            srtt: None,
            min_rtt: None,
            low_streak: 0,
            floor_streak: 0,
            floor_loss: false,
            descent_loss: false,
            present_streak: 0,
            present_loss: false,
            clear_streak: 0,
            overload_streak: 0,
            heavy_streak: 0,
            silent: 0,
            config,
        }
    }

    /// The operating mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// What the sender transmits now.
    pub fn plan(&self) -> LayerPlan {
        self.plan
    }

    /// The PIDs as a ladder (N × `nominal_rate / N`).
    pub fn ladder(&self) -> &LayerLadder {
        &self.ladder
    }

    /// The last reporting interval that heard feedback.
    pub fn last_interval(&self) -> Option<&IntervalSummary> {
        self.last.as_ref()
    }

    /// d_min: the smallest delay of the last `d_min_window` intervals (I3).
    pub fn d_min(&self) -> Option<OneWayDelay> {
        self.minima.iter().copied().min()
    }

    /// The width of [d_min, d_max] (I4): min(k × playout buffer, the
    /// queuing delay at the last loss), at least `min_span`.
    pub fn span(&self) -> Duration {
        let c = &self.config;
        let cap = c.playout_buffer.mul_f64(c.playout_factor);
        let span = self.loss_queuing.map_or(cap, |q| q.min(cap));
        span.max(c.min_span)
    }

    /// [d_min, d_max] and its thresholds, once a delay was measured.
    pub fn thresholds(&self) -> Option<Thresholds> {
        let d_min = self.d_min()?;
        let span = self.span();
        Some(Thresholds {
            d_min,
            d_max: d_min.plus(span),
            low: d_min.plus(span.mul_f64(self.config.threshold_low)),
            high: d_min.plus(span.mul_f64(self.config.threshold_high)),
        })
    }

    /// Eq. (1)'s rate at the last interval with a loss (R, p, s of that
    /// interval), if R and s were known.
    pub fn tfrc_bound(&self) -> Option<Bitrate> {
        self.tfrc_bound
    }

    /// Consecutive reporting intervals without feedback (I8).
    pub fn silent_intervals(&self) -> u32 {
        self.silent
    }

    /// The plan's rate in PIDs (data and repair streams).
    fn steps(&self) -> usize {
        self.plan.layers + self.plan.protected
    }

    /// One PID's rate.
    fn pid_rate(&self) -> Bitrate {
        self.ladder.step(1)
    }

    /// Closes every interval that ended by `now`.
    fn catch_up(&mut self, now: Instant) {
        while self.mode != Mode::Terminated && now >= self.interval_end {
            self.close_interval();
            self.interval_end += self.config.report_interval;
        }
    }

    /// The reporting interval is over: decide (§IV–§VI).
    fn close_interval(&mut self) {
        let s = self.open.finish();
        if !s.heard() {
            self.on_silence();
            return;
        }
        self.silent = 0;
        if let Some(m) = s.min_delay {
            // §V-A/B: d_min over recent reports only (I3).
            if self.minima.len() == self.config.d_min_window {
                self.minima.pop_front();
            }
            self.minima.push_back(m);
        }
        if s.has_loss() {
            // §IV, §V-C: the delay of a loss bounds d_max from now on (I4).
            let delay = match self.config.loss_delay {
                LossDelay::Peak => s.peak_delay,
                LossDelay::Mean => s.delay,
            };
            if let (Some(d), Some(base)) = (delay, self.d_min()) {
                self.loss_queuing = Some(d.since(base));
            }
        }
        if self.mode != Mode::Delay {
            self.record_losses(&s);
        }
        self.update_tfrc(&s);
        self.last = Some(s);
        match self.mode {
            Mode::Delay => self.delay_mode(&s),
            Mode::SafeRetreat => self.safe_retreat(&s),
            Mode::Aggression => self.aggression(&s),
            Mode::Terminated => {}
        }
    }

    /// Adds an interval of a TCP-aware mode to [`LossHorizon::Mode`]'s span,
    /// which then starts at most at the oldest of the last
    /// [`LOSS_HISTORY_EVENTS`] intervals with a loss, and holds at most
    /// [`LOSS_HISTORY_MAX`] intervals.
    fn record_losses(&mut self, s: &IntervalSummary) {
        if self.loss_history.len() == LOSS_HISTORY_MAX {
            self.pop_loss_history();
        }
        self.loss_history.push_back((s.packets, s.lost));
        if s.has_loss() {
            self.loss_intervals += 1;
        }
        if self.loss_intervals > LOSS_HISTORY_EVENTS {
            // Drop the oldest loss interval and the clear ones after it.
            while self.loss_intervals > LOSS_HISTORY_EVENTS {
                self.pop_loss_history();
            }
            while self
                .loss_history
                .front()
                .is_some_and(|&(_, lost)| lost == 0)
            {
                self.pop_loss_history();
            }
        }
    }

    fn pop_loss_history(&mut self) {
        if self
            .loss_history
            .pop_front()
            .is_some_and(|(_, lost)| lost > 0)
        {
            self.loss_intervals -= 1;
        }
    }

    /// Eq. (1)'s p for the interval `s` just closed (I13).
    fn loss_fraction(&self, s: &IntervalSummary) -> f64 {
        if self.config.loss_horizon == LossHorizon::Interval || self.loss_history.is_empty() {
            return s.loss_fraction();
        }
        let (packets, lost) = self
            .loss_history
            .iter()
            .fold((0u64, 0u64), |(p, l), &(pi, li)| (p + pi, l + li));
        if packets == 0 {
            0.0
        } else {
            lost as f64 / packets as f64
        }
    }

    /// Eq. (1) with the interval's R and s and p of I13: the bound on a loss,
    /// and the trace's value. An interval that measured no RTT (every
    /// packet lost) or sent nothing takes the smoothed RTT or the last mean
    /// size; with neither a loss interval has no bound (not a stale one).
    fn update_tfrc(&mut self, s: &IntervalSummary) {
        if s.packet_size.is_some() {
            self.packet_size = s.packet_size;
        }
        let (Some(r), Some(size)) = (s.rtt.or(self.srtt), self.packet_size) else {
            if s.has_loss() {
                self.tfrc_bound = None;
            }
            return;
        };
        let p = self.loss_fraction(s);
        // §VI: "RTO is ... approximated by RTO=4R".
        let rto = TimeoutRule::FourR.t_rto(r);
        let x = equation::throughput(size, r, p, self.config.tfrc_b, rto);
        let nominal = self.ladder.rate(self.ladder.len());
        self.tfrc_trace = Some(x.min(nominal));
        if s.has_loss() {
            self.tfrc_bound = Some(x);
        }
    }

    /// Where the interval's delay lies: `Some(true)` above the high
    /// threshold, `Some(false)` at or below the low one; `None` between
    /// them or without a delay.
    fn zone(&self, s: &IntervalSummary) -> Option<bool> {
        let (d, t) = (s.delay?, self.thresholds()?);
        if d > t.high {
            Some(true)
        } else if d <= t.low {
            Some(false)
        } else {
            None
        }
    }

    /// Whether the interval's delay is at or below the low threshold.
    fn low(&self, s: &IntervalSummary) -> bool {
        self.zone(s) == Some(false)
    }

    /// §IV, §V-C: one interval of delay-based rate control.
    fn delay_mode(&mut self, s: &IntervalSummary) {
        let n = self.ladder.len();
        let before = self.plan.layers;
        if s.has_loss() {
            // "halving the rate at every loss report" (I6).
            self.plan = LayerPlan::data((before / 2).max(1));
            self.low_streak = 0;
        } else {
            match self.zone(s) {
                Some(true) => {
                    self.plan = LayerPlan::data((before - 1).max(1));
                    self.low_streak = 0;
                }
                Some(false) => {
                    // "a gradual rate increase is only pursued when the
                    // delay is consistently low" (I5).
                    self.low_streak += 1;
                    if self.low_streak >= self.config.increase_after {
                        self.plan = LayerPlan::data((before + 1).min(n));
                        self.low_streak = 0;
                    }
                }
                None => self.low_streak = 0,
            }
        }
        // §VI: "consistently forced to stay at a minimum rate with reported
        // packet losses" (I9).
        if s.has_loss() {
            self.descent_loss = true;
        } else if self.low(s) {
            self.descent_loss = false;
        }
        if before == 1 {
            if s.has_loss() || !self.low(s) {
                self.floor_streak += 1;
                self.floor_loss |= s.has_loss();
            } else {
                self.floor_streak = 0;
                self.floor_loss = false;
            }
        } else {
            self.floor_streak = 0;
            self.floor_loss = self.plan.layers == 1
                && match self.config.retreat_loss {
                    RetreatLoss::Descent => self.descent_loss,
                    RetreatLoss::Floor => s.has_loss(),
                };
        }
        if self.floor_streak >= self.config.retreat_after && self.floor_loss {
            self.enter(Mode::SafeRetreat, self.config.retreat_plan.plan());
        }
    }

    /// Counts a clear interval (no loss, low delay) or one with a
    /// competitor present (I11); returns true when the clear ones say to go
    /// back to delay mode.
    fn watch_competitor(&mut self, s: &IntervalSummary) -> bool {
        if !s.has_loss() && self.low(s) {
            self.clear_streak += 1;
            self.present_streak = 0;
            self.present_loss = false;
            self.clear_streak >= self.config.release_after
        } else {
            self.clear_streak = 0;
            if s.loss_fraction() > self.config.terminate_loss {
                // Not "moderate" loss.
                self.present_streak = 0;
                self.present_loss = false;
            } else {
                self.present_streak += 1;
                self.present_loss |= s.has_loss();
            }
            false
        }
    }

    /// Back to delay mode: "the FEC is dropped" (§VI), the data PIDs kept.
    fn release(&mut self) {
        self.enter(Mode::Delay, LayerPlan::data(self.plan.layers.max(1)));
    }

    /// §VI: one interval of Safe Retreat.
    fn safe_retreat(&mut self, s: &IntervalSummary) {
        // I15: the base layer with FEC is not sustained.
        if s.loss_fraction() > self.config.terminate_loss {
            self.heavy_streak += 1;
            if self.heavy_streak >= self.config.terminate_after {
                self.enter(Mode::Terminated, LayerPlan::default());
                return;
            }
        } else {
            self.heavy_streak = 0;
        }
        if self.watch_competitor(s) {
            self.release();
        } else if self.present_streak > self.config.aggression_after && self.present_loss {
            // §VI-A: "the delay persists with some losses for more than
            // three consecutive reporting intervals".
            self.enter(Mode::Aggression, self.plan);
        }
    }

    /// §VI: one interval of Responsible Aggression.
    fn aggression(&mut self, s: &IntervalSummary) {
        if self.watch_competitor(s) {
            self.release();
            return;
        }
        let n = self.ladder.len();
        let k = self.steps();
        if !s.has_loss() {
            // "If no loss is observed over a given interval, the process is
            // repeated": one more PID, or the repair of the last one.
            self.overload_streak = 0;
            self.plan = aggression_plan((k + 1).min(n));
            return;
        }
        // "In case of loss, the rate must be bounded by the throughput
        // equation specified for TFRC (1)" (I13).
        self.overload_streak += 1;
        let mut to = k;
        if let Some(x) = self.tfrc_bound {
            let fits = (x.as_bps() / self.pid_rate().as_bps().max(1)).min(n as u64);
            to = to.min(fits as usize);
        }
        if self.overload_streak >= self.config.overload_after {
            // "If the link is persistently overloaded rate is reduced till
            // returning to Retreat" (I14).
            to = to.min(k.saturating_sub(1));
        }
        let retreat = self.config.retreat_plan;
        if to <= retreat.steps() {
            // The retreat plan, or the plan in force if silence (I8) had
            // taken it below: a loss never raises the rate.
            let back = aggression_plan(retreat.steps().min(k));
            self.enter(Mode::SafeRetreat, back);
        } else {
            self.plan = aggression_plan(to);
        }
    }

    /// §V-D (I8): an interval without feedback.
    fn on_silence(&mut self) {
        if !self.unreported {
            // Nothing was sent that could have been reported.
            return;
        }
        self.silent += 1;
        self.low_streak = 0;
        if self.silent % self.config.silent_intervals == 0 {
            self.plan = match self.mode {
                Mode::Delay => LayerPlan::data(self.plan.layers.saturating_sub(1).max(1)),
                Mode::SafeRetreat | Mode::Aggression => {
                    aggression_plan(self.steps().saturating_sub(1).max(1))
                }
                Mode::Terminated => self.plan,
            };
        }
    }

    fn enter(&mut self, mode: Mode, plan: LayerPlan) {
        if self.mode == Mode::Delay || mode == Mode::Delay {
            // A TCP-aware period begins or ends: its loss span starts over.
            self.loss_history.clear();
            self.loss_intervals = 0;
        }
        self.mode = mode;
        self.plan = plan;
        self.low_streak = 0;
        self.floor_streak = 0;
        self.floor_loss = false;
        self.descent_loss = false;
        self.present_streak = 0;
        self.present_loss = false;
        self.clear_streak = 0;
        self.overload_streak = 0;
        self.heavy_streak = 0;
    }
}

impl CongestionController for Cdm {
    fn name(&self) -> &'static str {
        "cdm"
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        self.catch_up(now);
        self.open.on_sent(pkt.size);
        self.unreported = true;
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        self.catch_up(now);
        if self.mode == Mode::Terminated {
            return;
        }
        let Some(next) = self
            .open
            .on_report(now, report, self.next_seq, self.config.delay_signal)
        else {
            return;
        };
        self.next_seq = self.next_seq.max(next);
        self.unreported = false;
        if let Some(rtt) = report.rtt_sample(now).filter(|r| !r.is_zero()) {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.srtt = Some(match self.srtt {
                None => rtt,
                Some(s) => s.mul_f64(0.875) + rtt.mul_f64(0.125),
            });
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        self.catch_up(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (self.mode != Mode::Terminated).then_some(self.interval_end)
    }

    fn target_bitrate(&self) -> Bitrate {
        self.plan.rate(&self.ladder)
    }

    fn send_budget(&self) -> SendBudget {
        // I16; a terminated flow sends nothing, but a pacer needs a rate.
        let rate = self.plan.rate(&self.ladder).max(self.pid_rate());
        SendBudget::paced(rate.mul_f64(self.config.pacing_gain))
    }

    fn estimate(&self) -> Estimate {
        let rate = self.plan.rate(&self.ladder);
        Estimate {
            bandwidth: (!rate.is_zero()).then_some(rate),
            rtt: self.srtt,
            min_rtt: self.min_rtt,
            loss_rate: self.last.map(|s| s.loss_fraction()),
            state: self.mode.name(),
        }
    }

    fn layer_plan(&self) -> Option<LayerPlan> {
        Some(self.plan)
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        CDM_TRACE_VARIABLES
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        sink.record("mode", f64::from(self.mode.code()));
        sink.record("pids", self.plan.layers as f64);
        sink.record("protected", self.plan.protected as f64);
        sink.record("rate_kbps", trace_kbps(self.plan.rate(&self.ladder)));
        sink.record("silent_intervals", f64::from(self.silent));
        if let Some(t) = self.thresholds() {
            sink.record("d_min_ms", t.d_min.as_millis_f64());
            sink.record("d_max_ms", t.d_max.as_millis_f64());
            sink.record("low_ms", t.low.as_millis_f64());
            sink.record("high_ms", t.high.as_millis_f64());
        }
        if let Some(s) = &self.last {
            if let Some(d) = s.delay {
                sink.record("delay_ms", d.as_millis_f64());
            }
            sink.record("loss", s.loss_fraction());
        }
        if let Some(r) = self.srtt {
            sink.record("rtt_ms", trace_ms(r));
        }
        if let Some(x) = self.tfrc_trace {
            sink.record("tfrc_kbps", trace_kbps(x));
        }
    }
}

/// What [`Cdm`] traces (design note, "What it traces").
pub const CDM_TRACE_VARIABLES: &[&str] = &[
    "mode",
    "pids",
    "protected",
    "rate_kbps",
    "silent_intervals",
    "d_min_ms",
    "d_max_ms",
    "low_ms",
    "high_ms",
    "delay_ms",
    "loss",
    "rtt_ms",
    "tfrc_kbps",
];
