//! ProbeBW (draft-cardwell-iccrg-bbr-congestion-control-00 §4.3.4).
//!
//! The pacing gain cycles through [`super::PACING_GAIN_CYCLE`]
//! `[1.25, 0.75, 1, 1, 1, 1, 1, 1]`, each phase lasting about one RTprop: the
//! 1.25 phase probes for more bandwidth (and lasts until in-flight reaches
//! 1.25 · BDP or a loss is seen), the 0.75 phase drains what it queued (and
//! ends early once in-flight is down to one BDP), the six 1.0 phases cruise.
//! The cycle starts at a random phase other than 0.75 (§4.3.4.2), drawn from
//! the controller's seeded stream. A derivative may substitute its own
//! cycle (`Bbr::set_gain_cycle`; Delay-BBR uses `[1.11, 0.9, 1 ×6]`).

use rand::Rng as _;

use super::delivery_rate::AckOutcome;
use super::{Bbr, BbrState};
use crate::time::{Duration, Instant};

impl Bbr {
    /// `BBREnterProbeBW` (§4.3.4.3).
    pub(crate) fn enter_probe_bw(&mut self, now: Instant) {
        self.state = BbrState::ProbeBw;
        self.pacing_gain = 1.0;
        self.cwnd_gain = self.config.cwnd_gain;
        // "cycle_index = BBRGainCycleLen - 1 - random_int_between(0, 6)":
        // after the advance below the phase is anything but index 1 (0.75).
        let r: usize = self.rng.random_range(0..=6);
        self.cycle_index = self.gain_cycle.len() - 1 - r;
        self.advance_cycle_phase(now);
    }

    /// `BBRCheckCyclePhase` (§4.3.4.3).
    pub(super) fn check_cycle_phase(&mut self, now: Instant, out: &AckOutcome) {
        if self.state == BbrState::ProbeBw && self.is_next_cycle_phase(now, out) {
            self.advance_cycle_phase(now);
        }
    }

    /// `BBRAdvanceCyclePhase` (§4.3.4.3).
    pub(crate) fn advance_cycle_phase(&mut self, now: Instant) {
        self.cycle_stamp = now;
        self.cycle_index = (self.cycle_index + 1) % self.gain_cycle.len();
        self.pacing_gain = self.gain_cycle[self.cycle_index];
    }

    /// `BBRIsNextCyclePhase` (§4.3.4.3).
    fn is_next_cycle_phase(&self, now: Instant, out: &AckOutcome) -> bool {
        let rtprop = self.rtprop.unwrap_or(Duration::ZERO);
        let is_full_length = now.saturating_duration_since(self.cycle_stamp) > rtprop;
        if self.cycle_by_time {
            return is_full_length;
        }
        if self.pacing_gain > 1.0 {
            is_full_length
                && (!out.newly_lost.is_zero()
                    || out.prior_inflight >= self.inflight_at_gain(self.pacing_gain))
        } else if self.pacing_gain < 1.0 {
            is_full_length || out.prior_inflight <= self.inflight_at_gain(1.0)
        } else {
            is_full_length
        }
    }
}
