//! Random loss on a link: Bernoulli, Gilbert–Elliott, a piecewise Bernoulli
//! schedule (OpenNetLab traces), and outage windows.
//!
//! Gilbert–Elliott: E. N. Gilbert, "Capacity of a burst-noise channel", Bell Syst.
//! Tech. J. 39 (1960); E. O. Elliott, "Estimates of error rates for codes on
//! burst-noise channels", BSTJ 42 (1963). A two-state Markov chain (Good, Bad)
//! is stepped every `step` of simulated time with transition probabilities
//! `p_gb` (Good→Bad) and `p_bg` (Bad→Good); a packet is lost with the current
//! state's loss probability. The chain starts in Good (as netem's GE model does).
//!
//! Lazy stepping in O(1): over `k` elapsed steps the two-state chain has the
//! closed form (with `s = p_gb + p_bg`, `λ = 1 − s`, `π_B = p_gb / s`)
//! `P(Bad after k | Good) = π_B (1 − λ^k)` and `P(Bad after k | Bad) = π_B + (1 − π_B) λ^k`
//! (standard result for a two-state chain: the deviation from the stationary
//! distribution decays as `λ^k`), so one draw advances any number of steps and a
//! long idle gap costs the same as one step. The chain is evaluated at the
//! packet's departure instant (when it is on the channel).
//!
//! Outage windows ([`OutageWindows`]): the link is down during each window
//! `[start, end)`, and every packet that *arrives* at it then is lost, at
//! ingress, before the queue: it uses no capacity and has no queue delay
//! (unlike the models above, which act at departure). Packets queued before
//! a window still leave. This is the blackout of a route change or of a
//! feedback path (the robustness cases of delay-based video congestion
//! control); it draws nothing from the RNG. Windows are sorted and disjoint
//! and arrivals come in non-decreasing time, so a cursor over the windows
//! decides each packet in amortised O(1).

use std::sync::Arc;

use rand::Rng as _;
use rtcc_core::rng::Rng;
use rtcc_core::{Duration, Instant, Probability};

/// Random loss applied after the queue: a lost packet has used link capacity.
#[derive(Debug, Clone, Default)]
pub enum LossConfig {
    /// No random loss.
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: Probability,
    },
    /// Two-state Markov (Gilbert–Elliott) loss, see the module doc.
    GilbertElliott {
        /// Interval at which the state chain is stepped (must be > 0).
        step: Duration,
        /// Probability of moving Good → Bad at each step.
        p_gb: Probability,
        /// Probability of moving Bad → Good at each step.
        p_bg: Probability,
        /// Loss probability in the Good state.
        loss_good: Probability,
        /// Loss probability in the Bad state.
        loss_bad: Probability,
    },
    /// Bernoulli loss whose probability follows a piecewise schedule (e.g. the
    /// per-segment `loss` of an OpenNetLab trace).
    Schedule(Arc<LossSchedule>),
    /// Every packet arriving inside one of the windows is lost (module doc).
    Outage(Arc<OutageWindows>),
}

impl LossConfig {
    /// Long-run loss rate: `p`; for Gilbert–Elliott the stationary rate
    /// `(p_gb·loss_bad + p_bg·loss_good) / (p_gb + p_bg)` (the initial Good state's
    /// rate if the chain never moves); for a schedule its time average over a
    /// period; 0 for outage windows (they end: a long enough run loses nothing
    /// more, [`OutageWindows::total`] says how long the link is down).
    pub fn mean_loss(&self) -> f64 {
        match self {
            LossConfig::None => 0.0,
            LossConfig::Bernoulli { p } => p.get(),
            LossConfig::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
                ..
            } => {
                let s = p_gb.get() + p_bg.get();
                if s <= 0.0 {
                    loss_good.get()
                } else {
                    (p_gb.get() * loss_bad.get() + p_bg.get() * loss_good.get()) / s
                }
            }
            LossConfig::Schedule(s) => s.mean(),
            LossConfig::Outage(_) => 0.0,
        }
    }
}

/// Why outage windows are unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutageError {
    /// No window at all.
    #[error("give at least one window, e.g. [[\"60s\", \"90s\"]]")]
    Empty,
    /// A window that does not end after it starts.
    #[error("window {index} [\"{start}\", \"{end}\"] is empty: its end must be after its start")]
    EmptyWindow {
        /// Index of the offending window.
        index: usize,
        /// Its start.
        start: Duration,
        /// Its end.
        end: Duration,
    },
    /// A window that starts before the previous one ends.
    #[error(
        "window {index} starts at \"{start}\", before the previous window ends (\"{previous_end}\"): \
         windows must be sorted and must not overlap"
    )]
    Overlap {
        /// Index of the offending window.
        index: usize,
        /// Its start.
        start: Duration,
        /// The previous window's end.
        previous_end: Duration,
    },
}

/// Intervals `[start, end)` of simulated time during which a link is down
/// (module doc): non-empty, sorted, disjoint (one may start where the
/// previous ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutageWindows {
    /// `(start, end)` in ns.
    windows: Vec<(u64, u64)>,
}

impl OutageWindows {
    /// Windows from `(start, end)` offsets from the start of the run.
    pub fn new(windows: Vec<(Duration, Duration)>) -> Result<Self, OutageError> {
        if windows.is_empty() {
            return Err(OutageError::Empty);
        }
        for (index, &(start, end)) in windows.iter().enumerate() {
            if end <= start {
                return Err(OutageError::EmptyWindow { index, start, end });
            }
            if let Some(&(_, previous_end)) = index.checked_sub(1).and_then(|p| windows.get(p)) {
                if start < previous_end {
                    return Err(OutageError::Overlap {
                        index,
                        start,
                        previous_end,
                    });
                }
            }
        }
        Ok(OutageWindows {
            windows: windows
                .iter()
                .map(|(s, e)| (s.as_nanos(), e.as_nanos()))
                .collect(),
        })
    }

    /// The windows as `(start, end)`.
    pub fn windows(&self) -> impl Iterator<Item = (Duration, Duration)> + '_ {
        self.windows
            .iter()
            .map(|&(s, e)| (Duration::from_nanos(s), Duration::from_nanos(e)))
    }

    /// Whether the link is down at `t`.
    pub fn contains(&self, t: Instant) -> bool {
        let t = t.as_nanos();
        // The first window that ends after `t` is the only one that can hold it.
        let i = self.windows.partition_point(|w| w.1 <= t);
        self.windows.get(i).is_some_and(|w| w.0 <= t)
    }

    /// How long the link is down in all.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.windows.iter().map(|w| w.1 - w.0).sum())
    }
}

/// A piecewise-constant loss probability: step `i` holds `p_i` from `offset_i`
/// until `offset_{i+1}`, repeating every `period` (or holding the last value).
#[derive(Debug, Clone)]
pub struct LossSchedule {
    starts: Vec<u64>,
    probs: Vec<Probability>,
    period: Option<u64>,
}

impl LossSchedule {
    /// A schedule from `(offset, probability)` steps: the first offset must be zero and
    /// offsets strictly increasing; `period` longer than the last offset.
    pub fn new(
        steps: Vec<(Duration, Probability)>,
        period: Option<Duration>,
    ) -> Result<Self, super::rate::ScheduleError> {
        super::rate::check_steps(&steps, period)?;
        Ok(LossSchedule {
            starts: steps.iter().map(|s| s.0.as_nanos()).collect(),
            probs: steps.iter().map(|s| s.1).collect(),
            period: period.map(Duration::as_nanos),
        })
    }

    /// The loss probability in force at `t`.
    pub fn at(&self, t: Instant) -> Probability {
        let t = t.as_nanos();
        let off = match self.period {
            Some(p) => t % p,
            None => t,
        };
        // starts[0] = 0 <= off.
        self.probs[self.starts.partition_point(|&s| s <= off) - 1]
    }

    /// Time-average over one period (the last value if not looping).
    pub fn mean(&self) -> f64 {
        match self.period {
            None => self.probs[self.probs.len() - 1].get(),
            Some(p) => {
                let mut acc = 0.0;
                for i in 0..self.starts.len() {
                    let end = self.starts.get(i + 1).copied().unwrap_or(p);
                    acc += self.probs[i].get() * (end - self.starts[i]) as f64;
                }
                acc / p as f64
            }
        }
    }

    /// The steps as `(offset, probability)`.
    pub fn steps(&self) -> impl Iterator<Item = (Duration, Probability)> + '_ {
        self.starts
            .iter()
            .zip(&self.probs)
            .map(|(&s, &p)| (Duration::from_nanos(s), p))
    }
}

/// Runtime state of a loss model.
#[derive(Debug, Clone)]
pub(crate) enum LossState {
    None,
    Bernoulli {
        p: f64,
    },
    GilbertElliott {
        step_ns: u64,
        p_gb: f64,
        p_bg: f64,
        loss_good: f64,
        loss_bad: f64,
        /// Index of the step the state refers to.
        at_step: u64,
        bad: bool,
    },
    Schedule(Arc<LossSchedule>),
    Outage {
        windows: Arc<OutageWindows>,
        /// The first window that had not ended at the last arrival.
        next: usize,
    },
}

impl LossState {
    pub(crate) fn new(cfg: &LossConfig) -> Self {
        match cfg {
            LossConfig::None => LossState::None,
            LossConfig::Bernoulli { p } if p.get() <= 0.0 => LossState::None,
            LossConfig::Bernoulli { p } => LossState::Bernoulli { p: p.get() },
            LossConfig::GilbertElliott {
                step,
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                LossState::GilbertElliott {
                    // A zero step is rejected by `LinkConfig::validate`; clamp so that
                    // an unvalidated config still behaves (one step per nanosecond).
                    step_ns: step.as_nanos().max(1),
                    p_gb: p_gb.get(),
                    p_bg: p_bg.get(),
                    loss_good: loss_good.get(),
                    loss_bad: loss_bad.get(),
                    at_step: 0,
                    bad: false,
                }
            }
            LossConfig::Schedule(s) => LossState::Schedule(Arc::clone(s)),
            LossConfig::Outage(w) => LossState::Outage {
                windows: Arc::clone(w),
                next: 0,
            },
        }
    }

    /// Whether a packet arriving at `t` ns is lost at ingress (an outage
    /// window holds `t`). `t` must not decrease between calls.
    #[inline]
    pub(crate) fn is_lost_at_arrival(&mut self, t: u64) -> bool {
        let LossState::Outage { windows, next } = self else {
            return false;
        };
        while windows.windows.get(*next).is_some_and(|w| w.1 <= t) {
            *next += 1;
        }
        windows.windows.get(*next).is_some_and(|w| w.0 <= t)
    }

    /// Whether a packet on the channel at `t` is lost. `t` must not decrease between calls.
    #[inline]
    pub(crate) fn is_lost(&mut self, t: Instant, rng: &mut Rng) -> bool {
        match self {
            LossState::None => false,
            LossState::Bernoulli { p } => rng.random::<f64>() < *p,
            LossState::GilbertElliott {
                step_ns,
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
                at_step,
                bad,
            } => {
                let now_step = t.as_nanos() / *step_ns;
                if now_step > *at_step {
                    let k = now_step - *at_step;
                    *at_step = now_step;
                    let s = *p_gb + *p_bg;
                    if s > 0.0 {
                        // Closed-form k-step transition (module doc).
                        let pi_bad = *p_gb / s;
                        let lambda = 1.0 - s;
                        let decay = lambda.powi(k.min(i32::MAX as u64) as i32);
                        let p_bad = if *bad {
                            pi_bad + (1.0 - pi_bad) * decay
                        } else {
                            pi_bad * (1.0 - decay)
                        };
                        *bad = rng.random::<f64>() < p_bad;
                    }
                }
                let p = if *bad { *loss_bad } else { *loss_good };
                p > 0.0 && rng.random::<f64>() < p
            }
            LossState::Schedule(s) => {
                let p = s.at(t).get();
                p > 0.0 && rng.random::<f64>() < p
            }
            // Decided at arrival (`is_lost_at_arrival`).
            LossState::Outage { .. } => false,
        }
    }
}
