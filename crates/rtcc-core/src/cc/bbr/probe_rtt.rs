//! ProbeRTT (draft-cardwell-iccrg-bbr-congestion-control-00 §4.3.5).
//!
//! When RTprop has not been refreshed for `RTpropFilterLen` (10 s), BBR cuts
//! cwnd to `BBRMinPipeCwnd` (4 packets) so the queue drains and a fresh
//! minimum RTT can be seen. Once in-flight is down to that, it holds for at
//! least `ProbeRTTDuration` (200 ms) and one round trip, then restores the
//! saved cwnd and returns to ProbeBW (or Startup if the pipe was never full).
//! Samples taken meanwhile are marked application-limited so the low rate
//! does not lower BtlBw.

use super::{Bbr, BbrState};
use crate::time::Instant;

impl Bbr {
    /// `BBRCheckProbeRTT` (§4.3.5).
    pub(crate) fn check_probe_rtt(&mut self, now: Instant) {
        if self.state != BbrState::ProbeRtt && self.rtprop_expired && !self.idle_restart {
            self.enter_probe_rtt();
            self.prior_cwnd = self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(now);
        }
        self.idle_restart = false;
    }

    /// `BBREnterProbeRTT` (§4.3.5).
    fn enter_probe_rtt(&mut self) {
        self.state = BbrState::ProbeRtt;
        self.pacing_gain = 1.0;
        self.cwnd_gain = 1.0;
    }

    /// `BBRHandleProbeRTT` (§4.3.5).
    fn handle_probe_rtt(&mut self, now: Instant) {
        // "Ignore low rate samples during ProbeRTT".
        self.rate.mark_app_limited();
        match self.probe_rtt_done_stamp {
            None => {
                if self.rate.inflight() <= self.probe_rtt_cwnd() {
                    self.probe_rtt_done_stamp = Some(now + self.config.probe_rtt_duration);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = self.rate.delivered();
                }
            }
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.rtprop_stamp = now;
                    self.restore_cwnd();
                    self.exit_probe_rtt(now);
                }
            }
        }
    }

    /// `BBRExitProbeRTT` (§4.3.5).
    fn exit_probe_rtt(&mut self, now: Instant) {
        if self.filled_pipe {
            self.enter_probe_bw(now);
        } else {
            self.enter_startup();
        }
    }
}
