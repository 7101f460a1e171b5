//! TCP-friendly congestion control for layered (SVC) video with top-down
//! packet-train probing (`papers/svc-topdown-probing.txt` §3).
//!
//! Map (design note `docs/algorithms/svc-probing.md`, which rebuilds every
//! equation from the garbled text and numbers the interpretations I1–I9):
//!
//! - **Start phase** (§3.1, Fig. 6): trains of `train_length` packets at a
//!   probing rate R_in ([`crate::estimate::packet_train`]). A train whose
//!   one-way delays increase (eq. 11, [`crate::estimate::trend`], FS above
//!   threshold_FS) or that lost a packet (I3) was above the available
//!   bandwidth: its received rate R_out becomes the next R_in ("top-down").
//!   The first train without a trend ends the phase and its R_in is the
//!   estimate. [`Search::Binary`] is the Pathload-style baseline (I7).
//!   Meanwhile the base layer is sent (I9).
//! - **Transmission phase** (§3.2): the highest layer set within the
//!   estimate is sent. Every t (eq. 12) a probing period sends one more
//!   layer as a train; a trend (or a loss) in it gives the layer back and
//!   backs t off (eq. 13, threshold_t). In normal periods a loss rate above
//!   threshold_PLR (eq. 14) drops to the layer nearest rate_i·(1 − √p); an
//!   RTT back near RTT_min after it had risen probes at once (eq. 15, I6).
//!
//! Call protocol: the [`CongestionController`] one. Trains are data (I1):
//! while a train is being sent the budget paces at R_in and
//! [`CongestionController::poll_probe`] asks the driver to pad at that rate
//! when media runs out; the train is the next `train_length` packets sent,
//! whatever they carry.

use std::collections::VecDeque;

use super::{
    trace_flag, trace_kbps, trace_ms, CongestionController, Estimate, ProbeRequest, SendBudget,
    TraceSink,
};
use crate::estimate::packet_train::{PacketTrain, TrainResult};
use crate::media::svc::LayerLadder;
use crate::packet::{FeedbackReport, SentPacket, SeqNo};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

#[cfg(test)]
mod tests;

/// The first probing rate of a start phase (§3.1: "the probing rate (R_in)
/// which is equal to the capacity of tight link. Or ... back-to-back
/// packets when the capacity of tight link is not available, or the initial
/// probing rate can be the bit rate of the largest layer in SVC").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialProbe {
    /// A known rate, e.g. the tight link's capacity.
    Rate(Bitrate),
    /// Back-to-back packets: paced at `back_to_back_rate`.
    BackToBack,
    /// The cumulative rate of all layers.
    TopLayer,
}

/// How the start phase searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Search {
    /// §3.1: the received rate of a train with a trend is the next probing rate.
    TopDown,
    /// §4.1.3's baseline (I7): halve the range [lo, hi] each train.
    Binary,
}

/// How eq. 12's quantity becomes a time (I4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeInterval {
    /// t = Δ/s · RTT_min, read as seconds (the equation as printed).
    Literal,
    /// t = Δ/s · RTT_min²: the time TCP's congestion avoidance (one packet
    /// per RTT) takes to add Δ.
    Tcp,
}

/// How a transmission-phase probe is judged (design note, I10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeSuccess {
    /// §3.2 as read: the probe train shows no increasing delay trend (FS at
    /// most threshold_FS) and lost nothing.
    Trend,
    /// The start phase's bound applied to probes: the train's received rate
    /// reaches its probing rate within `probe_tolerance`, and it lost nothing.
    ReceivedRate,
}

/// When eq. 15's "loss rate in normal periods is less than threshold_PLR"
/// holds (design note, I6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RttProbeLoss {
    /// The loss rate has been measured over a whole `loss_window` of this
    /// normal period and is below threshold_PLR.
    Measured,
    /// Also when no loss rate is measured yet (as before I6's change: right
    /// after a drop, when the RTT falls back, a probe starts at once).
    Assumed,
}

/// Configuration of [`SvcProbing`] (design note, "Parameters").
#[derive(Debug, Clone, PartialEq)]
pub struct SvcProbingConfig {
    /// Cumulative layer rates (§4.2: 20 × 100 kbps).
    pub ladder: LayerLadder,
    /// Packets per train (§4.1: 30).
    pub train_length: usize,
    /// First probing rate of a start phase (§3.1).
    pub initial_probe: InitialProbe,
    /// Pacing rate of back-to-back trains (ours: far above any link here).
    pub back_to_back_rate: Bitrate,
    /// threshold_FS above `fs_rate_split` (§3.1, §4.1: 0.7).
    pub threshold_fs_high: f64,
    /// threshold_FS at or below `fs_rate_split` (§3.1: "0.6–0.7"; ours 0.65).
    pub threshold_fs_low: f64,
    /// e, the probing rate that splits the two thresholds (§4.1: 2 Mbps).
    pub fs_rate_split: Bitrate,
    /// Top-down (§3.1) or binary search (§4.1.3).
    pub search: Search,
    /// Trains of a binary search (I7; Table 1: 4).
    pub binary_trains: usize,
    /// Most trains of a top-down start phase (ours).
    pub max_start_trains: usize,
    /// a of eq. 14 (§4.2: 0.3).
    pub plr_a: f64,
    /// threshold_t of eq. 13 (§3.2: 10 s).
    pub probe_backoff_max: Duration,
    /// Reading of eq. 12 (I4).
    pub probe_interval: ProbeInterval,
    /// How a probe is judged (I10).
    pub probe_success: ProbeSuccess,
    /// Shortfall of R_out below R_in still counted as a success under
    /// [`ProbeSuccess::ReceivedRate`] (ours, I10).
    pub probe_tolerance: f64,
    /// s of eq. 12 (§4.2: 1000 B).
    pub packet_size: Bytes,
    /// Window of the normal-period loss rate (I5: 1 s).
    pub loss_window: Duration,
    /// Fewest packets in that window for its loss rate to count (I5: 20).
    pub loss_min_packets: usize,
    /// "Close to RTT_min" of eq. 15, as a fraction of RTT_min, at least 2 ms (I6).
    pub rtt_close: f64,
    /// Whether eq. 15 needs a measured loss rate (I6).
    pub rtt_probe_loss: RttProbeLoss,
    /// Pacing rate in normal periods, × the subscribed rate (I8).
    pub pacing_gain: f64,
    /// A train not fully reported this long (or two smoothed RTTs, if
    /// longer) after its last packet left is judged with its unreported
    /// packets as lost (ours).
    pub train_timeout: Duration,
    /// Restart the start phase this often (§4.1.3: "estimated every 20 s");
    /// zero = never (the default: §3's controller estimates once).
    pub reestimate_interval: Duration,
}

impl Default for SvcProbingConfig {
    fn default() -> Self {
        SvcProbingConfig {
            ladder: LayerLadder::default(),
            train_length: 30,
            initial_probe: InitialProbe::TopLayer,
            back_to_back_rate: Bitrate::mbps(1000),
            threshold_fs_high: 0.7,
            threshold_fs_low: 0.65,
            fs_rate_split: Bitrate::mbps(2),
            search: Search::TopDown,
            binary_trains: 4,
            max_start_trains: 10,
            plr_a: 0.3,
            probe_backoff_max: Duration::from_secs(10),
            probe_interval: ProbeInterval::Literal,
            probe_success: ProbeSuccess::Trend,
            probe_tolerance: 0.05,
            packet_size: Bytes::new(1000),
            loss_window: Duration::from_secs(1),
            loss_min_packets: 20,
            rtt_close: 0.1,
            rtt_probe_loss: RttProbeLoss::Measured,
            pacing_gain: 1.25,
            train_timeout: Duration::from_secs(1),
            reestimate_interval: Duration::ZERO,
        }
    }
}

/// A [`SvcProbingConfig`] value that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
#[error("svc-probing: `{key}` = {value} must be {expected}")]
pub struct SvcProbingConfigError {
    /// The key.
    pub key: &'static str,
    /// Its value, printed.
    pub value: String,
    /// The valid range.
    pub expected: &'static str,
}

impl SvcProbingConfig {
    /// Checks every value against its range.
    pub fn validate(&self) -> Result<(), SvcProbingConfigError> {
        let err = |key, value: String, expected| {
            Err(SvcProbingConfigError {
                key,
                value,
                expected,
            })
        };
        let unit = |x: f64| x.is_finite() && x > 0.0 && x <= 1.0;
        if self.train_length < 3 {
            return err("train_length", self.train_length.to_string(), ">= 3");
        }
        if self.train_length > 1000 {
            return err("train_length", self.train_length.to_string(), "<= 1000");
        }
        for (key, v) in [
            ("threshold_fs_high", self.threshold_fs_high),
            ("threshold_fs_low", self.threshold_fs_low),
            ("plr_a", self.plr_a),
        ] {
            if !unit(v) {
                return err(key, v.to_string(), "in (0, 1]");
            }
        }
        if !(self.probe_tolerance.is_finite() && (0.0..1.0).contains(&self.probe_tolerance)) {
            return err(
                "probe_tolerance",
                self.probe_tolerance.to_string(),
                "in [0, 1)",
            );
        }
        if !(self.rtt_close.is_finite() && self.rtt_close >= 0.0) {
            return err("rtt_close", self.rtt_close.to_string(), ">= 0");
        }
        if !(self.pacing_gain.is_finite() && (1.0..=10.0).contains(&self.pacing_gain)) {
            return err("pacing_gain", self.pacing_gain.to_string(), "in [1, 10]");
        }
        if self.binary_trains == 0 {
            return err("binary_trains", "0".into(), ">= 1");
        }
        if self.max_start_trains == 0 {
            return err("max_start_trains", "0".into(), ">= 1");
        }
        if self.packet_size.is_zero() {
            return err("packet_size", "0".into(), "> 0");
        }
        if self.back_to_back_rate.is_zero() {
            return err("back_to_back_rate", "0".into(), "> 0");
        }
        if let InitialProbe::Rate(r) = self.initial_probe {
            if r.is_zero() {
                return err("initial_probe", "0bps".into(), "a positive rate");
            }
        }
        for (key, d) in [
            ("probe_backoff_max", self.probe_backoff_max),
            ("loss_window", self.loss_window),
            ("train_timeout", self.train_timeout),
        ] {
            if d.is_zero() {
                return err(key, "0s".into(), "> 0");
            }
        }
        Ok(())
    }
}

/// Where the controller is (design note, "What it traces": `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// §3.1; `lo`/`hi` are the binary search's range (I7).
    Start {
        trains: usize,
        lo: Bitrate,
        hi: Bitrate,
    },
    /// §3.2, between probes.
    Normal,
    /// §3.2, a one-layer-up train in flight.
    Probing,
}

/// The controller.
#[derive(Debug, Clone)]
pub struct SvcProbing {
    config: SvcProbingConfig,
    phase: Phase,
    /// Subscribed layers (1..=N); during a probe, including the probed one.
    level: usize,
    train: Option<PacketTrain>,
    /// The last finished train, kept for its packet list's capacity.
    spare_train: Option<PacketTrain>,
    /// When the current train's last packet left.
    train_sent_at: Option<Instant>,
    trains_started: u32,
    /// Sequence numbers of the newest train (kept out of the loss rate, I5).
    train_seqs: Option<(SeqNo, SeqNo)>,
    last_train: Option<TrainResult>,
    /// The last start phase's estimate and its train count.
    start_estimate: Option<Bitrate>,
    start_trains: usize,
    next_probe: Option<Instant>,
    next_reestimate: Option<Instant>,
    /// t of eqs. 12–13.
    interval: Duration,
    rtt: Option<Duration>,
    srtt: Option<Duration>,
    rtt_min: Option<Duration>,
    /// An RTT sample above the eq. 15 bound since the last probe or drop (I6).
    rtt_was_high: bool,
    /// (report time, lost) of reported packets outside trains (I5).
    losses: VecDeque<(Instant, bool)>,
    lost_in_window: usize,
    /// When the loss window last started empty; its rate counts only once
    /// it spans a whole `loss_window` (I5).
    losses_since: Instant,
    losses_full: bool,
}

/// RTT used by eq. 12 before any sample (ours; the value only matters until
/// the first feedback, which arrives one RTT after the first train).
const DEFAULT_RTT: Duration = Duration::from_millis(100);

impl SvcProbing {
    /// A controller whose session starts at `now`, in its start phase.
    pub fn new(_now: Instant, config: SvcProbingConfig) -> Self {
        let mut s = SvcProbing {
            config,
            phase: Phase::Normal,
            level: 1,
            train: None,
            spare_train: None,
            train_sent_at: None,
            trains_started: 0,
            train_seqs: None,
            last_train: None,
            start_estimate: None,
            start_trains: 0,
            next_probe: None,
            next_reestimate: None,
            interval: Duration::ZERO,
            rtt: None,
            srtt: None,
            rtt_min: None,
            rtt_was_high: false,
            losses: VecDeque::new(),
            lost_in_window: 0,
            losses_since: Instant::ZERO,
            losses_full: false,
        };
        s.begin_start_phase();
        s
    }

    /// Subscribed layer count (1..=N).
    pub fn level(&self) -> usize {
        self.level
    }

    /// The last start phase's estimate of the available bandwidth, once one finished.
    pub fn start_estimate(&self) -> Option<Bitrate> {
        self.start_estimate
    }

    /// Trains the last finished start phase took.
    pub fn start_trains(&self) -> usize {
        self.start_trains
    }

    /// Whether the start phase is running.
    pub fn in_start_phase(&self) -> bool {
        matches!(self.phase, Phase::Start { .. })
    }

    /// t of eqs. 12–13.
    pub fn probe_interval(&self) -> Duration {
        self.interval
    }

    /// The last finished train's measurements.
    pub fn last_train(&self) -> Option<&TrainResult> {
        self.last_train.as_ref()
    }

    fn first_probe_rate(&self) -> Bitrate {
        match self.config.initial_probe {
            InitialProbe::Rate(r) => r,
            InitialProbe::BackToBack => self.config.back_to_back_rate,
            InitialProbe::TopLayer => self.config.ladder.rate(self.config.ladder.len()),
        }
    }

    fn begin_start_phase(&mut self) {
        let hi = self.first_probe_rate();
        self.phase = Phase::Start {
            trains: 0,
            lo: Bitrate::ZERO,
            hi,
        };
        self.next_probe = None;
        let first = match self.config.search {
            Search::TopDown => hi,
            Search::Binary => Bitrate::bps(hi.as_bps() / 2),
        };
        self.level = 1;
        self.start_train(first);
    }

    fn start_train(&mut self, rate: Bitrate) {
        let length = self.config.train_length;
        let mut train = self
            .spare_train
            .take()
            .unwrap_or_else(|| PacketTrain::new(rate, length));
        train.restart(rate, length);
        self.train = Some(train);
        self.train_sent_at = None;
        self.trains_started += 1;
    }

    /// threshold_FS for a train at `r_in` (§3.1).
    fn threshold_fs(&self, r_in: Bitrate) -> f64 {
        if r_in > self.config.fs_rate_split {
            self.config.threshold_fs_high
        } else {
            self.config.threshold_fs_low
        }
    }

    /// Whether a train's delays increase, or it lost a packet (I3).
    fn has_trend(&self, r: &TrainResult) -> bool {
        r.lost > 0 || r.fs.is_some_and(|fs| fs > self.threshold_fs(r.r_in))
    }

    /// Eq. 12 for probing level + 1 from `level` (I4).
    fn eq12(&self, level: usize) -> Duration {
        let ladder = &self.config.ladder;
        let next = (level + 1).min(ladder.len());
        let delta = ladder.rate(next) - ladder.rate(level);
        let rtt = self.rtt_min.unwrap_or(DEFAULT_RTT).as_secs_f64();
        // Δ in bytes/s over s in bytes: packets per second.
        let per_s = delta.as_bps_f64() / 8.0 / self.config.packet_size.as_f64();
        let t = match self.config.probe_interval {
            ProbeInterval::Literal => per_s * rtt,
            ProbeInterval::Tcp => per_s * rtt * rtt,
        };
        // At least one RTT: a probe is judged on feedback (ours).
        Duration::from_secs_f64(t)
            .max(self.rtt_min.unwrap_or(DEFAULT_RTT))
            .min(self.config.probe_backoff_max)
    }

    /// Eq. 13: t = min(threshold_t, t · (1 + layer_i / layer_N)).
    fn eq13(&self) -> Duration {
        let ladder = &self.config.ladder;
        let ratio = ladder.rate(self.level).as_bps_f64() / ladder.rate(ladder.len()).as_bps_f64();
        self.interval
            .mul_f64(1.0 + ratio)
            .min(self.config.probe_backoff_max)
    }

    /// Eq. 14: a · (rate_i − rate_{i−1}) / rate_i.
    pub fn threshold_plr(&self) -> f64 {
        let ladder = &self.config.ladder;
        self.config.plr_a * ladder.step(self.level).as_bps_f64()
            / ladder.rate(self.level).as_bps_f64()
    }

    /// The loss rate of I5, once the window holds enough packets.
    pub fn loss_rate(&self) -> Option<f64> {
        let n = self.losses.len();
        (self.losses_full && n >= self.config.loss_min_packets && n > 0)
            .then(|| self.lost_in_window as f64 / n as f64)
    }

    fn clear_losses(&mut self, now: Instant) {
        self.losses.clear();
        self.lost_in_window = 0;
        self.losses_since = now;
        self.losses_full = false;
    }

    fn enter_normal(&mut self, now: Instant, interval: Duration) {
        self.phase = Phase::Normal;
        self.interval = interval;
        self.next_probe = Some(now + interval);
        self.rtt_was_high = false;
        self.clear_losses(now);
    }

    fn finish_start(&mut self, now: Instant, estimate: Bitrate, trains: usize) {
        self.start_estimate = Some(estimate);
        self.start_trains = trains;
        self.level = self.config.ladder.level_at_most(estimate).max(1);
        let t = self.eq12(self.level);
        self.enter_normal(now, t);
        if !self.config.reestimate_interval.is_zero() {
            self.next_reestimate = Some(now + self.config.reestimate_interval);
        }
    }

    /// A train finished (reported, or timed out): the phase's verdict.
    fn on_train_done(&mut self, now: Instant) {
        self.train_sent_at = None;
        let Some(mut train) = self.train.take() else {
            return;
        };
        if !train.complete() {
            train.expire();
        }
        let r = train.result();
        self.spare_train = Some(train);
        let trend = self.has_trend(&r);
        self.last_train = Some(r.clone());
        match self.phase {
            Phase::Start { trains, lo, hi } => {
                let trains = trains + 1;
                match self.config.search {
                    Search::TopDown => {
                        if !trend {
                            self.finish_start(now, r.r_in, trains);
                            return;
                        }
                        // R_out bounds the available bandwidth from above
                        // (§3.1, eq. 8); with too few packets received the
                        // rate is halved (ours).
                        let next = match r.r_out {
                            Some(out) if out < r.r_in => out,
                            Some(_) => r.r_in.mul_f64(0.9),
                            None => Bitrate::bps(r.r_in.as_bps() / 2),
                        };
                        if trains >= self.config.max_start_trains {
                            self.finish_start(now, next, trains);
                        } else {
                            self.phase = Phase::Start { trains, lo, hi };
                            self.start_train(next);
                        }
                    }
                    Search::Binary => {
                        let (lo, hi) = if trend { (lo, r.r_in) } else { (r.r_in, hi) };
                        let mid = Bitrate::bps((lo.as_bps() + hi.as_bps()) / 2);
                        if trains >= self.config.binary_trains {
                            self.finish_start(now, mid, trains);
                        } else {
                            self.phase = Phase::Start { trains, lo, hi };
                            self.start_train(mid);
                        }
                    }
                }
            }
            Phase::Probing => {
                let failed = match self.config.probe_success {
                    ProbeSuccess::Trend => trend,
                    ProbeSuccess::ReceivedRate => {
                        let floor = r.r_in.mul_f64(1.0 - self.config.probe_tolerance);
                        r.lost > 0 || r.r_out.is_none_or(|out| out < floor)
                    }
                };
                if failed {
                    // The probe failed: give the layer back, back off (eq. 13).
                    self.level = (self.level - 1).max(1);
                    let t = self.eq13();
                    self.enter_normal(now, t);
                } else {
                    let t = self.eq12(self.level);
                    self.enter_normal(now, t);
                }
            }
            Phase::Normal => {}
        }
    }

    fn start_probe(&mut self, now: Instant) {
        let top = self.config.ladder.len();
        if self.level >= top {
            // Nothing above to probe: look again after threshold_t.
            self.next_probe = Some(now + self.config.probe_backoff_max);
            return;
        }
        self.level += 1;
        self.phase = Phase::Probing;
        self.next_probe = None;
        self.start_train(self.config.ladder.rate(self.level));
    }

    /// When a fully sent train is judged with what was reported: after
    /// `train_timeout` or two smoothed RTTs, whichever is longer; never
    /// before an RTT is known (the first report is awaited: on a 1.2 s RTT
    /// path a fixed 1 s timeout judged every train lost).
    fn train_deadline(&self) -> Option<Instant> {
        let srtt = self.srtt?;
        self.train_sent_at
            .map(|t| t + self.config.train_timeout.max(srtt * 2))
    }

    /// Normal-period decisions after a report (eqs. 14–15).
    fn normal_period(&mut self, now: Instant) {
        if self.phase != Phase::Normal {
            return;
        }
        let threshold = self.threshold_plr();
        let p = self.loss_rate();
        if let Some(p) = p.filter(|&p| p > threshold) {
            // §3.2: drop to the layer nearest rate_i · (1 − √p), at least one
            // layer down, and reset t by eq. 12.
            let rate = self.config.ladder.rate(self.level);
            let nearest = self
                .config
                .ladder
                .level_nearest(rate.mul_f64(1.0 - p.sqrt()));
            self.level = nearest.min(self.level - 1).max(1);
            let t = self.eq12(self.level);
            self.enter_normal(now, t);
            return;
        }
        // Eq. 15 (I6): RTT back near RTT_min after having risen, with the
        // loss rate of this normal period measured and under threshold_PLR
        // (or, with `RttProbeLoss::Assumed`, not measurable yet).
        let loss_ok = p.is_some() || self.config.rtt_probe_loss == RttProbeLoss::Assumed;
        if let (Some(rtt), Some(min)) = (self.rtt, self.rtt_min) {
            let close = min
                + min
                    .mul_f64(self.config.rtt_close)
                    .max(Duration::from_millis(2));
            if rtt > close {
                self.rtt_was_high = true;
            } else if self.rtt_was_high && loss_ok {
                self.rtt_was_high = false;
                self.start_probe(now);
            }
        }
    }
}

impl CongestionController for SvcProbing {
    fn name(&self) -> &'static str {
        "svc-probing"
    }

    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        if let Some(train) = &mut self.train {
            if !train.fully_sent() {
                train.on_sent(pkt);
                self.train_seqs = match self.train_seqs {
                    Some((first, _)) if train.sent_count() > 1 => Some((first, pkt.seq)),
                    _ => Some((pkt.seq, pkt.seq)),
                };
                if train.fully_sent() {
                    self.train_sent_at = Some(now);
                }
            }
        }
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        // RTT of the newest received packet, receiver hold removed.
        if let Some(p) = report
            .packets
            .iter()
            .filter(|p| p.received())
            .max_by_key(|p| p.sent.send_time)
        {
            let arrival = p.arrival.unwrap_or(report.report_time);
            let hold = report.report_time.saturating_duration_since(arrival);
            let rtt = now
                .saturating_duration_since(p.sent.send_time)
                .saturating_sub(hold);
            if !rtt.is_zero() {
                self.rtt = Some(rtt);
                self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
                self.srtt = Some(match self.srtt {
                    None => rtt,
                    Some(s) => s.mul_f64(0.875) + rtt.mul_f64(0.125),
                });
            }
        }
        // I5: the loss rate over non-train packets.
        let in_train = |seq: SeqNo, seqs: Option<(SeqNo, SeqNo)>| {
            seqs.is_some_and(|(first, last)| seq >= first && seq <= last)
        };
        for p in &report.packets {
            if !in_train(p.sent.seq, self.train_seqs) {
                let lost = !p.received();
                self.losses.push_back((now, lost));
                self.lost_in_window += usize::from(lost);
            }
        }
        while let Some(&(t, lost)) = self.losses.front() {
            if now.saturating_duration_since(t) <= self.config.loss_window {
                break;
            }
            self.losses.pop_front();
            self.lost_in_window -= usize::from(lost);
        }
        self.losses_full |=
            now.saturating_duration_since(self.losses_since) >= self.config.loss_window;
        if let Some(train) = &mut self.train {
            train.on_feedback(report);
            if train.complete() {
                self.on_train_done(now);
            }
        }
        self.normal_period(now);
        // A report can put the train's deadline in the past: the first RTT
        // sample arrives after the train's timeout (the deadline needs an
        // RTT), or a smaller one shrinks 2·srtt. Handle it now, as the
        // driver would at once, so that `poll_timeout` is never before
        // `now` (the trait's contract; found by the controller fuzz target).
        if self.train_deadline().is_some_and(|d| now >= d) {
            self.on_timeout(now);
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        if self.train_deadline().is_some_and(|d| now >= d) {
            self.on_train_done(now);
        }
        if self.phase == Phase::Normal {
            if self.next_reestimate.is_some_and(|t| now >= t) {
                self.next_reestimate = None;
                self.begin_start_phase();
                return;
            }
            if self.next_probe.is_some_and(|t| now >= t) {
                self.start_probe(now);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // Probes and re-estimation wait for the normal period.
        let normal = self.phase == Phase::Normal;
        let probe = self.next_probe.filter(|_| normal);
        let reestimate = self.next_reestimate.filter(|_| normal);
        [self.train_deadline(), probe, reestimate]
            .into_iter()
            .flatten()
            .min()
    }

    fn target_bitrate(&self) -> Bitrate {
        // I9: the base layer during the start phase.
        self.config.ladder.rate(self.level)
    }

    fn send_budget(&self) -> SendBudget {
        match &self.train {
            Some(t) if !t.fully_sent() => SendBudget::paced(t.r_in()),
            _ => SendBudget::paced(
                self.config
                    .ladder
                    .rate(self.level)
                    .mul_f64(self.config.pacing_gain),
            ),
        }
    }

    fn poll_probe(&mut self, _now: Instant) -> Option<ProbeRequest> {
        match &self.train {
            Some(t) if !t.fully_sent() => Some(ProbeRequest {
                cluster_id: self.trains_started,
                rate: t.r_in(),
                padding_size: self.config.packet_size,
                // §2: a train is "a sequence of probing packets of equal
                // packet size": in the start phase its few data packets are
                // padded to the train's size (I11); a transmission-phase
                // probe is the media itself, at its own packet sizes.
                pad_media: matches!(self.phase, Phase::Start { .. }),
            }),
            _ => None,
        }
    }

    fn estimate(&self) -> Estimate {
        Estimate {
            bandwidth: Some(self.config.ladder.rate(self.level)),
            rtt: self.srtt,
            min_rtt: self.rtt_min,
            loss_rate: self.loss_rate(),
            state: match self.phase {
                Phase::Start { .. } => "start",
                Phase::Normal => "normal",
                Phase::Probing => "probing",
            },
        }
    }

    fn trace_variables(&self) -> &'static [&'static str] {
        SVC_PROBING_TRACE_VARIABLES
    }

    fn trace(&self, sink: &mut dyn TraceSink) {
        let state = match self.phase {
            Phase::Start { .. } => 0.0,
            Phase::Normal => 1.0,
            Phase::Probing => 2.0,
        };
        sink.record("state", state);
        sink.record("layers", self.level as f64);
        sink.record("rate_kbps", trace_kbps(self.config.ladder.rate(self.level)));
        if let Some(t) = &self.train {
            sink.record("probe_rate_kbps", trace_kbps(t.r_in()));
        }
        if let Some(r) = &self.last_train {
            if let Some(out) = r.r_out {
                sink.record("r_out_kbps", trace_kbps(out));
            }
            if let Some(fs) = r.fs {
                sink.record("fs", fs);
            }
            sink.record("train_loss", trace_flag(r.lost > 0));
        }
        if let Some(p) = self.loss_rate() {
            sink.record("loss", p);
        }
        if let Some(r) = self.srtt {
            sink.record("rtt_ms", trace_ms(r));
        }
        if let Some(r) = self.rtt_min {
            sink.record("rtt_min_ms", trace_ms(r));
        }
        if !self.interval.is_zero() {
            sink.record("probe_interval_ms", trace_ms(self.interval));
        }
        if let Some(e) = self.start_estimate {
            sink.record("estimate_kbps", trace_kbps(e));
            sink.record("start_trains", self.start_trains as f64);
        }
    }
}

/// What [`SvcProbing`] traces (design note, "What it traces").
pub const SVC_PROBING_TRACE_VARIABLES: &[&str] = &[
    "state",
    "layers",
    "rate_kbps",
    "probe_rate_kbps",
    "r_out_kbps",
    "fs",
    "train_loss",
    "loss",
    "rtt_ms",
    "rtt_min_ms",
    "probe_interval_ms",
    "estimate_kbps",
    "start_trains",
];
