//! Google Congestion Control (draft-ietf-rmcat-gcc-02, libwebrtc goog_cc).
//!
//! IN PROGRESS: the full algorithm lands in the next commit; this placeholder
//! only holds the configuration so the rest of the workspace can be wired.

use crate::cc::{CongestionController, Estimate, SendBudget};
use crate::packet::{FeedbackReport, SentPacket};
use crate::time::Instant;
use crate::units::Bitrate;

/// Configuration of [`Gcc`].
#[derive(Debug, Clone, PartialEq)]
pub struct GccConfig {
    /// Initial target bitrate.
    pub start_bitrate: Bitrate,
    /// Lower bound of the target.
    pub min_bitrate: Bitrate,
    /// Upper bound of the target.
    pub max_bitrate: Bitrate,
}

impl Default for GccConfig {
    fn default() -> Self {
        GccConfig { start_bitrate: Bitrate::kbps(300), min_bitrate: Bitrate::kbps(30), max_bitrate: Bitrate::mbps(10) }
    }
}

/// Google Congestion Control.
#[derive(Debug, Clone)]
pub struct Gcc {
    config: GccConfig,
}

impl Gcc {
    /// A GCC instance starting at `now`.
    pub fn new(_now: Instant, config: GccConfig) -> Self {
        Gcc { config }
    }
}

impl CongestionController for Gcc {
    fn name(&self) -> &'static str {
        "gcc"
    }
    fn on_packet_sent(&mut self, _now: Instant, _pkt: &SentPacket) {}
    fn on_feedback(&mut self, _now: Instant, _report: &FeedbackReport) {}
    fn target_bitrate(&self) -> Bitrate {
        self.config.start_bitrate
    }
    fn send_budget(&self) -> SendBudget {
        SendBudget::paced(self.config.start_bitrate.mul_f64(2.5))
    }
    fn estimate(&self) -> Estimate {
        Estimate::default()
    }
}
