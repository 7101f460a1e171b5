//! Startup and Drain (draft-cardwell-iccrg-bbr-congestion-control-00 §4.3.2,
//! §4.3.3).
//!
//! Startup paces and sizes cwnd at `BBRHighGain = 2/ln 2` so the sending rate
//! doubles each round trip. It ends when the pipe is full: three rounds in a
//! row in which BtlBw grew by less than 25 %, counting only rounds whose
//! sample was not application-limited (§4.3.2.2). Drain then paces at the
//! inverse gain until in-flight falls to one BDP (§4.3.3) and hands over to
//! ProbeBW.

use super::delivery_rate::AckOutcome;
use super::{Bbr, BbrState};
use crate::time::Instant;
use crate::units::Bitrate;

impl Bbr {
    /// `BBREnterStartup` (§4.3.2).
    pub(super) fn enter_startup(&mut self) {
        self.state = BbrState::Startup;
        self.pacing_gain = self.config.high_gain;
        self.cwnd_gain = self.config.high_gain;
    }

    /// `BBRCheckFullPipe` (§4.3.2.2): once per round, on a sample that is not
    /// application-limited.
    pub(super) fn check_full_pipe(&mut self, out: &AckOutcome) {
        if self.filled_pipe || !self.round_start {
            return;
        }
        let Some(rs) = out.sample else { return };
        if rs.is_app_limited {
            return;
        }
        let btlbw = self.btlbw();
        if btlbw >= self.full_bw.mul_f64(self.config.full_bw_threshold) && btlbw > Bitrate::ZERO {
            // Still growing: record the new plateau candidate and start over.
            self.full_bw = btlbw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        // QUIC BbrSender::CheckIfFullBandwidthReached: with
        // `exit_startup_on_loss`, a flat round in recovery also ends Startup.
        let loss_exit = self.config.exit_startup_on_loss && self.in_recovery();
        if self.full_bw_count >= self.config.full_bw_rounds || loss_exit {
            self.filled_pipe = true;
        }
    }

    /// `BBREnterDrain` (§4.3.3).
    fn enter_drain(&mut self) {
        self.state = BbrState::Drain;
        // "pacing_gain = 1/BBRHighGain": drain the queue in about one round.
        self.pacing_gain = 1.0 / self.config.high_gain;
        self.cwnd_gain = self.config.high_gain;
    }

    /// `BBRCheckDrain` (§4.3.3).
    pub(super) fn check_drain(&mut self, now: Instant) {
        if self.state == BbrState::Startup && self.filled_pipe {
            self.enter_drain();
        }
        if self.state == BbrState::Drain && self.rate.inflight() <= self.inflight_at_gain(1.0) {
            self.enter_probe_bw(now);
        }
    }
}
