//! AutoRec's Redundancy Adapter (`papers/autorec.txt` §V-A, eqs. 1–4) and
//! the opportunistic reinjection threshold (§V-B, eq. 5).
//!
//! Once per decision interval (five round-trip times, §V-A footnote 4) the
//! adapter turns the interval's loss rate `R` and mean loss-detection time
//! `T_unit` into a redundancy level `K`: how many extra copies (replicas) of a
//! lost-and-retransmitted datum the sender may inject.
//!
//! - `K_α`, the smallest `K` whose expected recovery latency `F(K)` (eq. 1) is
//!   within the tolerance `α`;
//! - `K_β`, the largest `K` whose redundancy cost `G(K) = K·R` (eq. 2) is
//!   within `β`;
//! - `K_γ`, the largest `K` whose goodput reduction `H(K)` (eq. 3) is within
//!   `γ`;
//! - `K_θ = min(K_α, K_β, K_γ)` (eq. 4), and `K_θ = 0` when the interval saw
//!   no loss.
//!
//! Each of `K_α`, `K_β`, `K_γ` is found by binary search over
//! `[0, K_max]` (`K_max` = 10, §VII "we limit the value range of the
//! redundancy level to [0, 10]"), which is correct because `F` decreases and
//! `G`, `H` increase in `K` (the paper's Appendices C, E, G; the short proofs
//! are in `docs/algorithms/autorec.md`).
//!
//! The free functions ([`recovery_latency`], [`redundancy_cost`],
//! [`goodput_reduction`], [`k_alpha`], [`k_beta`], [`k_gamma`],
//! [`redundancy_level`], [`reinjection_threshold`]) are the pure formulas; the
//! [`RedundancyAdapter`] is the sans-IO state machine a transport feeds.

use crate::time::{Duration, Instant};
use crate::units::Probability;

/// Largest redundancy level the adapter ever chooses by default: §VII "to
/// enhance the robustness of AutoRec, we limit the value range of the
/// redundancy level to [0, 10]"; §VIII-A "typically set to 10".
pub const DEFAULT_MAX_REDUNDANCY_LEVEL: u32 = 10;

/// Largest `max_redundancy_level` a configuration may ask for. Not from the
/// paper: a guard so that evaluating `H(K)` (a sum of `K` terms) stays cheap.
pub const MAX_REDUNDANCY_LEVEL_LIMIT: u32 = 1000;

/// Slack allowed in the `G(K) ≤ β` and `H(K) ≤ γ` comparisons. Not from the
/// paper: without it binary floating point rejects exact boundary cases the
/// paper's arithmetic accepts (`6 × 0.05 = 0.30000000000000004 > 0.3`, so
/// `R` = 5 %, `β` = 30 % would give `K_β` = 5 instead of 6).
pub const TOLERANCE_EPSILON: f64 = 1e-12;

/// AutoRec's user tolerances and the adapter's constants (§V-A, §VII).
///
/// The [`Default`] is the paper's base testbed configuration (§VII-A: "we use
/// recovery latency tolerance α = 30 ms, redundancy cost tolerance β = 30 %,
/// and goodput reduction tolerance γ = 20 %"). The other presets are the
/// configurations the paper evaluates elsewhere: [`Self::rtc`],
/// [`Self::rtc_low_cost`] ("AutoRec_LC"), [`Self::rtc_high_cost`]
/// ("AutoRec_HC") and [`Self::deployment`].
#[derive(Debug, Clone, PartialEq)]
pub struct AutoRecConfig {
    /// `α`: the recovery latency tolerance (§V-A). A soft target: met
    /// "whenever possible" (§IV-A Principle #2, §V-A Step #4). Zero means
    /// "minimise the recovery latency" (§VII-A, RTC configurations).
    pub recovery_latency_tolerance: Duration,
    /// `β`: the redundancy cost tolerance (§V-A), a fraction (0.3 = 30 %) of
    /// replicas per packet sent. A hard limit: "strictly satisfying".
    pub redundancy_cost_tolerance: f64,
    /// `γ`: the goodput reduction tolerance (§V-A), a fraction in `[0, 1]`.
    /// A hard limit.
    pub goodput_reduction_tolerance: f64,
    /// `K_max`, the largest redundancy level (§VII: `[0, 10]`).
    pub max_redundancy_level: u32,
    /// Length of a decision interval in smoothed RTTs. Default 5 (§V-A
    /// footnote 4: "usually set several RTTs, e.g., D = 5 RTTs").
    pub decision_interval_rtts: u32,
    /// RTT assumed until the transport reports one. Default 333 ms, QUIC's
    /// `kInitialRtt` (RFC 9002 §6.2.2); the paper builds on QUIC and does not
    /// say.
    pub initial_rtt: Duration,
    /// Fewest resolved packets `R` and `T_unit` are measured over: when the
    /// interval just ended resolved fewer, the previous intervals are pooled
    /// with it, newest first (at most [`POOLED_INTERVALS`]), until they
    /// reach this many. Default 1000 (ours; 0 = the paper's letter, one
    /// interval). See `docs/algorithms/autorec.md`, Interpretation 4a.
    pub min_resolved_packets: u64,
}

/// Past decision intervals the adapter remembers for pooling
/// ([`AutoRecConfig::min_resolved_packets`]).
pub const POOLED_INTERVALS: usize = 64;

/// Default [`AutoRecConfig::min_resolved_packets`]: with a 5 % loss rate the
/// standard deviation of a loss rate measured over 1000 packets is 0.7
/// points, small enough that `K_β = ⌊β/R⌋` does not overshoot `β` on
/// average; over one 5-RTT interval of a 4 Mbps stream at 30 ms RTT (about 70
/// packets) it is 2.6 points and the measured redundancy cost exceeded `β`.
pub const DEFAULT_MIN_RESOLVED_PACKETS: u64 = 1000;

impl Default for AutoRecConfig {
    fn default() -> Self {
        AutoRecConfig {
            // §VII-A, base testbed: α = 30 ms, β = 30 %, γ = 20 %.
            recovery_latency_tolerance: Duration::from_millis(30),
            redundancy_cost_tolerance: 0.30,
            goodput_reduction_tolerance: 0.20,
            max_redundancy_level: DEFAULT_MAX_REDUNDANCY_LEVEL,
            // §V-A footnote 4: D = 5 RTTs.
            decision_interval_rtts: 5,
            // RFC 9002 §6.2.2: kInitialRtt = 333 ms.
            initial_rtt: Duration::from_millis(333),
            min_resolved_packets: DEFAULT_MIN_RESOLVED_PACKETS,
        }
    }
}

impl AutoRecConfig {
    /// The paper's standard configuration for real-time communication
    /// (§VII-A, "AutoRec vs. FEC"): α = 0 ms ("minimizing recovery latency"),
    /// β = 20 %, γ = 20 %.
    pub fn rtc() -> Self {
        AutoRecConfig {
            recovery_latency_tolerance: Duration::ZERO,
            redundancy_cost_tolerance: 0.20,
            goodput_reduction_tolerance: 0.20,
            ..AutoRecConfig::default()
        }
    }

    /// "AutoRec_LC" (low cost, §VII-A): α = 0 ms, β = 5 %, γ = 5 %; "aims to
    /// reduce bandwidth cost by accepting higher susceptibility to video
    /// freezing".
    pub fn rtc_low_cost() -> Self {
        AutoRecConfig {
            redundancy_cost_tolerance: 0.05,
            goodput_reduction_tolerance: 0.05,
            ..AutoRecConfig::rtc()
        }
    }

    /// "AutoRec_HC" (high cost, §VII-A): α = 0 ms, β = 50 %, γ = 50 %; "aims
    /// to reduce video freezing by tolerating higher bandwidth costs".
    pub fn rtc_high_cost() -> Self {
        AutoRecConfig {
            redundancy_cost_tolerance: 0.50,
            goodput_reduction_tolerance: 0.50,
            ..AutoRecConfig::rtc()
        }
    }

    /// The real-network deployment (§VII-B "Parameter configuration"):
    /// α = 200 ms, β = 50 %, γ = 50 %.
    pub fn deployment() -> Self {
        AutoRecConfig {
            recovery_latency_tolerance: Duration::from_millis(200),
            redundancy_cost_tolerance: 0.50,
            goodput_reduction_tolerance: 0.50,
            ..AutoRecConfig::default()
        }
    }

    /// Checks the ranges the adapter relies on.
    pub fn validate(&self) -> Result<(), AutoRecConfigError> {
        let beta = self.redundancy_cost_tolerance;
        if !(beta.is_finite() && beta >= 0.0) {
            return Err(AutoRecConfigError::OutOfRange {
                key: "redundancy_cost_tolerance",
                value: beta,
                expected: "a finite fraction >= 0",
            });
        }
        let gamma = self.goodput_reduction_tolerance;
        if !(gamma.is_finite() && (0.0..=1.0).contains(&gamma)) {
            return Err(AutoRecConfigError::OutOfRange {
                key: "goodput_reduction_tolerance",
                value: gamma,
                expected: "a fraction within [0, 1]",
            });
        }
        if self.max_redundancy_level > MAX_REDUNDANCY_LEVEL_LIMIT {
            return Err(AutoRecConfigError::OutOfRange {
                key: "max_redundancy_level",
                value: f64::from(self.max_redundancy_level),
                expected: "at most 1000 (the paper uses 10)",
            });
        }
        if self.decision_interval_rtts == 0 {
            return Err(AutoRecConfigError::OutOfRange {
                key: "decision_interval_rtts",
                value: 0.0,
                expected: "at least 1",
            });
        }
        if self.initial_rtt.is_zero() {
            return Err(AutoRecConfigError::OutOfRange {
                key: "initial_rtt",
                value: 0.0,
                expected: "a positive duration",
            });
        }
        Ok(())
    }
}

/// An [`AutoRecConfig`] value that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AutoRecConfigError {
    /// A parameter is outside its valid range.
    #[error("autorec: {key} = {value} is out of range ({expected})")]
    OutOfRange {
        /// Field name.
        key: &'static str,
        /// Given value.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
}

/// `F(K)`, eq. 1 (§V-A): the expected recovery latency of a datum whose first
/// retransmission was lost (footnote 5), when `K` replicas follow the
/// retransmission at intervals of `T_unit/(K+1)` and the whole transmission
/// is in on-mode:
///
/// `F(K) = (1 + K·R^K) / ((1 − R)(1 + K)) · T_unit`.
///
/// `F(0) = T_unit/(1 − R)`: plain ARQ, one lost round plus a geometric number
/// of further rounds. `R = 0` gives `T_unit/(K+1)`; `R = 1` (nothing ever
/// arrives) gives [`Duration::MAX`]. The result is rounded to the nanosecond
/// and saturates at [`Duration::MAX`].
pub fn recovery_latency(loss_rate: Probability, t_unit: Duration, k: u32) -> Duration {
    let r = loss_rate.get();
    if r >= 1.0 {
        return if t_unit.is_zero() {
            Duration::ZERO
        } else {
            Duration::MAX
        };
    }
    let kf = f64::from(k);
    // Eq. 1: (1 + K·R^K) / ((1 − R)(1 + K)) · T_unit.
    let factor = (1.0 + kf * pow(r, k)) / ((1.0 - r) * (1.0 + kf));
    let ns = factor * t_unit.as_nanos() as f64;
    // `as` saturates a too-large float at u64::MAX (= Duration::MAX).
    Duration::from_nanos(ns.round() as u64)
}

/// `G(K)`, eq. 2 (§V-A): the expected redundancy cost, replicas injected per
/// packet sent (retransmissions and replicas not counted in the
/// denominator): every lost packet, a fraction `R`, gets `K` replicas.
///
/// `G(K) = K·R`.
pub fn redundancy_cost(loss_rate: Probability, k: u32) -> f64 {
    f64::from(k) * loss_rate.get()
}

/// `H(K)`, eq. 3 (§V-A): the expected goodput reduction when the whole
/// transmission is in on-mode:
///
/// `H(K) = 1 − 1 / (1 + K·R − (1 + K)·R² + R^(K+2))`.
///
/// Computed through the identity `K·R − (1+K)·R² + R^(K+2) =
/// R·(1 − R)·Σ_{j=1..K} (1 − R^j)` (expand the sum: `K − (R − R^(K+1))/(1 − R)`
/// times `R(1 − R)`), whose terms are all non-negative, so that the result is
/// non-decreasing in `K` in floating point too, not only on paper. (Each term
/// counts a replica that arrives although an earlier copy already did: the
/// `j`-th replica arrives with probability `1 − R` after at least one of the
/// `j` copies before it arrived, `1 − R^j`.)
pub fn goodput_reduction(loss_rate: Probability, k: u32) -> f64 {
    let r = loss_rate.get();
    let mut sum = 0.0;
    let mut r_pow = 1.0;
    for _ in 0..k {
        r_pow *= r;
        sum += 1.0 - r_pow;
    }
    let extra = r * (1.0 - r) * sum;
    // Eq. 3: 1 − 1/(1 + extra).
    1.0 - 1.0 / (1.0 + extra)
}

/// `K_α` (§V-A Step #1): the smallest `K ∈ [0, k_max]` with
/// `F(K) ≤ α`, by binary search (`F` decreases in `K`, Appendix C).
///
/// If no `K` in range meets `α` (for instance `α` = 0 with `T_unit` > 0, the
/// RTC setting of §VII-A), the result is `k_max`: the level with the lowest
/// recovery latency, because α is met only "whenever possible" (§IV-A
/// Principle #2) and the two cost constraints bound `K` in Step #4 anyway.
pub fn k_alpha(loss_rate: Probability, t_unit: Duration, alpha: Duration, k_max: u32) -> u32 {
    min_k_where(k_max, |k| recovery_latency(loss_rate, t_unit, k) <= alpha).unwrap_or(k_max)
}

/// `K_β` (§V-A Step #2): the largest `K ∈ [0, k_max]` with `G(K) ≤ β`
/// (within [`TOLERANCE_EPSILON`]), by binary search (`G` increases in `K`,
/// Appendix E). `G(0) = 0`, so for `β ≥ 0` the result always exists; a
/// negative `β` gives 0.
pub fn k_beta(loss_rate: Probability, beta: f64, k_max: u32) -> u32 {
    max_k_where(k_max, |k| {
        redundancy_cost(loss_rate, k) <= beta + TOLERANCE_EPSILON
    })
    .unwrap_or(0)
}

/// `K_γ` (§V-A Step #3): the largest `K ∈ [0, k_max]` with `H(K) ≤ γ`
/// (within [`TOLERANCE_EPSILON`]), by binary search (`H` increases in `K`,
/// Appendix G). `H(0) = 0`, so for `γ ≥ 0` the result always exists; a
/// negative `γ` gives 0.
pub fn k_gamma(loss_rate: Probability, gamma: f64, k_max: u32) -> u32 {
    max_k_where(k_max, |k| {
        goodput_reduction(loss_rate, k) <= gamma + TOLERANCE_EPSILON
    })
    .unwrap_or(0)
}

/// The three candidate levels and the decision of one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedundancyDecision {
    /// `K_α` (Step #1).
    pub k_alpha: u32,
    /// `K_β` (Step #2).
    pub k_beta: u32,
    /// `K_γ` (Step #3).
    pub k_gamma: u32,
    /// `K_θ = min(K_α, K_β, K_γ)` (Step #4, eq. 4), or 0 without loss.
    pub redundancy_level: u32,
}

/// The redundancy level `K_θ` for loss rate `R` and mean loss-detection time
/// `T_unit` (§V-A Steps #1–#4): 0 if `R` = 0 ("when there is no packet loss
/// ... directly sets the redundancy level to 0"), else
/// `min(K_α, K_β, K_γ)` (eq. 4).
///
/// `R = 1` (every resolved packet of the interval was lost) is outside the
/// formulas' domain `0 < R < 1`; it is evaluated at the limit: `F` is
/// unbounded (`K_α = K_max`), `G(K) = K`, `H(K) = 0`.
pub fn redundancy_level(
    loss_rate: Probability,
    t_unit: Duration,
    config: &AutoRecConfig,
) -> RedundancyDecision {
    if loss_rate.get() <= 0.0 {
        return RedundancyDecision {
            k_alpha: 0,
            k_beta: 0,
            k_gamma: 0,
            redundancy_level: 0,
        };
    }
    let k_max = config.max_redundancy_level;
    let ka = k_alpha(loss_rate, t_unit, config.recovery_latency_tolerance, k_max);
    let kb = k_beta(loss_rate, config.redundancy_cost_tolerance, k_max);
    let kg = k_gamma(loss_rate, config.goodput_reduction_tolerance, k_max);
    RedundancyDecision {
        k_alpha: ka,
        k_beta: kb,
        k_gamma: kg,
        // Eq. 4: K_θ = min{K_α, K_β, K_γ}.
        redundancy_level: ka.min(kb).min(kg),
    }
}

/// `T_thres` (§V-B, eq. 5): `T_unit / (K_θ + 1)`, the silence after which a
/// datum is reinjected even in on-mode (opportunistic reinjection).
pub fn reinjection_threshold(t_unit: Duration, redundancy_level: u32) -> Duration {
    t_unit / (u64::from(redundancy_level) + 1)
}

/// What one decision interval measured and decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalReport {
    /// When the interval ended (the `now` of the deciding poll).
    pub at: Instant,
    /// Packets acknowledged over the measurement (the interval, pooled with
    /// earlier ones up to `min_resolved_packets`).
    pub acked: u64,
    /// Packets declared lost over the measurement.
    pub lost: u64,
    /// Intervals the measurement pooled (1 = the interval alone).
    pub intervals_pooled: u32,
    /// `R`: lost / (acked + lost), 0 if nothing was resolved.
    pub loss_rate: Probability,
    /// Mean loss-detection time of the interval's losses, if any were
    /// declared.
    pub t_unit: Option<Duration>,
    /// The candidate levels and `K_θ`.
    pub decision: RedundancyDecision,
    /// `T_thres` (eq. 5) for the next interval, `None` when `K_θ` = 0 (no
    /// reinjection).
    pub t_thres: Option<Duration>,
}

/// The Redundancy Adapter (§V-A) as a sans-IO state machine.
///
/// Inputs (`now` first, never going backwards): [`on_packet_acked`],
/// [`on_packet_lost`] with the packet's loss-detection time, [`on_rtt`] with
/// the transport's smoothed RTT. Output: [`poll_decision`], which at the end
/// of each decision interval (`decision_interval_rtts` × the latest smoothed
/// RTT, [`poll_timeout`]) computes the new `K_θ` and `T_thres` and starts the
/// next interval. Getters: [`redundancy_level`], [`reinjection_threshold`],
/// [`last_report`].
///
/// The level starts at 0 (nothing measured yet, so no reinjection).
///
/// [`on_packet_acked`]: Self::on_packet_acked
/// [`on_packet_lost`]: Self::on_packet_lost
/// [`on_rtt`]: Self::on_rtt
/// [`poll_decision`]: Self::poll_decision
/// [`poll_timeout`]: Self::poll_timeout
/// [`redundancy_level`]: Self::redundancy_level
/// [`reinjection_threshold`]: Self::reinjection_threshold
/// [`last_report`]: Self::last_report
#[derive(Debug, Clone)]
pub struct RedundancyAdapter {
    config: AutoRecConfig,
    srtt: Option<Duration>,
    interval_start: Instant,
    acked: u64,
    lost: u64,
    /// Sum of the interval's loss-detection times, in nanoseconds (u128: no
    /// overflow even for u64::MAX-long detections).
    detection_sum_ns: u128,
    level: u32,
    t_thres: Option<Duration>,
    last_report: Option<IntervalReport>,
    /// Past intervals' `(acked, lost, detection_sum_ns)`, a ring.
    history: [(u64, u64, u128); POOLED_INTERVALS],
    history_len: usize,
    history_next: usize,
}

impl RedundancyAdapter {
    /// An adapter whose first decision interval starts at `now`.
    pub fn new(now: Instant, config: AutoRecConfig) -> Result<Self, AutoRecConfigError> {
        config.validate()?;
        Ok(RedundancyAdapter {
            config,
            srtt: None,
            interval_start: now,
            acked: 0,
            lost: 0,
            detection_sum_ns: 0,
            level: 0,
            t_thres: None,
            last_report: None,
            history: [(0, 0, 0); POOLED_INTERVALS],
            history_len: 0,
            history_next: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AutoRecConfig {
        &self.config
    }

    /// A packet was acknowledged. Counts towards the interval's loss rate.
    /// Call once per packet whose fate the transport resolves as delivered
    /// (any kind: original, retransmission or replica).
    pub fn on_packet_acked(&mut self, _now: Instant) {
        self.acked += 1;
    }

    /// A packet was declared lost; `detection_time` is its loss-detection
    /// time (§III-C: from its sending to its being declared lost and
    /// retransmitted). Counts towards the interval's loss rate and mean
    /// `T_unit`.
    pub fn on_packet_lost(&mut self, _now: Instant, detection_time: Duration) {
        self.lost += 1;
        self.detection_sum_ns += u128::from(detection_time.as_nanos());
    }

    /// The transport's smoothed RTT changed. Sets the length of the current
    /// and later decision intervals.
    pub fn on_rtt(&mut self, _now: Instant, srtt: Duration) {
        if !srtt.is_zero() {
            self.srtt = Some(srtt);
        }
    }

    /// Length of a decision interval at the current RTT estimate:
    /// `decision_interval_rtts` × smoothed RTT (§V-A footnote 4).
    pub fn decision_interval(&self) -> Duration {
        let rtt = self.srtt.unwrap_or(self.config.initial_rtt);
        rtt * u64::from(self.config.decision_interval_rtts)
    }

    /// When the current decision interval ends: call
    /// [`poll_decision`](Self::poll_decision) then.
    pub fn poll_timeout(&self) -> Instant {
        self.interval_start + self.decision_interval()
    }

    /// At or after the end of the decision interval: computes `K_θ` and
    /// `T_thres` from the interval's measurements, starts the next interval
    /// at `now`, and returns the report. Before the end: `None`, nothing
    /// changes.
    pub fn poll_decision(&mut self, now: Instant) -> Option<IntervalReport> {
        if now < self.poll_timeout() {
            return None;
        }
        // The interval, pooled with the previous ones (newest first) until
        // enough packets were resolved (`min_resolved_packets`).
        let (mut acked, mut lost, mut det) = (self.acked, self.lost, self.detection_sum_ns);
        let mut pooled = 1u32;
        for back in 1..=self.history_len {
            if acked + lost >= self.config.min_resolved_packets {
                break;
            }
            let slot = (self.history_next + POOLED_INTERVALS - back) % POOLED_INTERVALS;
            let (a, l, d) = self.history[slot];
            acked += a;
            lost += l;
            det += d;
            pooled += 1;
        }
        self.history[self.history_next] = (self.acked, self.lost, self.detection_sum_ns);
        self.history_next = (self.history_next + 1) % POOLED_INTERVALS;
        self.history_len = (self.history_len + 1).min(POOLED_INTERVALS);
        let resolved = acked + lost;
        let loss_rate = if resolved == 0 {
            Probability::ZERO
        } else {
            Probability::saturating(lost as f64 / resolved as f64)
        };
        let t_unit = if lost == 0 {
            None
        } else {
            let mean = det / u128::from(lost);
            Some(Duration::from_nanos(
                u64::try_from(mean).unwrap_or(u64::MAX),
            ))
        };
        let decision = redundancy_level(loss_rate, t_unit.unwrap_or(Duration::ZERO), &self.config);
        let t_thres = match (t_unit, decision.redundancy_level) {
            (Some(t), k) if k > 0 => Some(reinjection_threshold(t, k)),
            _ => None,
        };
        let report = IntervalReport {
            at: now,
            acked,
            lost,
            intervals_pooled: pooled,
            loss_rate,
            t_unit,
            decision,
            t_thres,
        };
        self.level = decision.redundancy_level;
        self.t_thres = t_thres;
        self.last_report = Some(report);
        self.interval_start = now;
        self.acked = 0;
        self.lost = 0;
        self.detection_sum_ns = 0;
        Some(report)
    }

    /// `K_θ` in force (decided at the end of the last interval; 0 before the
    /// first decision).
    pub fn redundancy_level(&self) -> u32 {
        self.level
    }

    /// `T_thres` in force (eq. 5), `None` while `K_θ` = 0.
    pub fn reinjection_threshold(&self) -> Option<Duration> {
        self.t_thres
    }

    /// The report of the last completed interval.
    pub fn last_report(&self) -> Option<&IntervalReport> {
        self.last_report.as_ref()
    }
}

/// `r^k` for a non-negative integer `k` (clamped to `i32::MAX`, far beyond any
/// valid level).
fn pow(r: f64, k: u32) -> f64 {
    r.powi(i32::try_from(k).unwrap_or(i32::MAX))
}

/// Smallest `k` in `[0, k_max]` with `pred(k)`, for a `pred` that is false
/// then true as `k` grows; `None` if `pred(k_max)` is false. O(log k_max)
/// evaluations.
pub(crate) fn min_k_where(k_max: u32, pred: impl Fn(u32) -> bool) -> Option<u32> {
    // Invariant: pred is false below `lo`, true at `hi` (if hi <= k_max).
    let (mut lo, mut hi) = (0u32, k_max.saturating_add(1));
    // `hi = k_max + 1` stands for "not found"; k_max ≤ MAX_REDUNDANCY_LEVEL_LIMIT
    // in a valid config, and the saturation only matters for u32::MAX.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    (lo <= k_max && pred(lo)).then_some(lo)
}

/// Largest `k` in `[0, k_max]` with `pred(k)`, for a `pred` that is true then
/// false as `k` grows; `None` if `pred(0)` is false. O(log k_max)
/// evaluations.
pub(crate) fn max_k_where(k_max: u32, pred: impl Fn(u32) -> bool) -> Option<u32> {
    if !pred(0) {
        return None;
    }
    // Invariant: pred(lo) is true; pred is false above `hi`.
    let (mut lo, mut hi) = (0u32, k_max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if pred(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}
