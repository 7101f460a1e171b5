//! A constant-target controller, for tests and as a reference flow.
//!
//! It ignores all feedback: the target bitrate and pacing rate stay at the
//! configured value for the whole run.

use super::{trace_kbps, CongestionController, Estimate, SendBudget, TraceSink};
use crate::packet::{FeedbackReport, SentPacket};
use crate::time::Instant;
use crate::units::Bitrate;

/// Configuration of [`Fixed`].
#[derive(Debug, Clone, PartialEq)]
pub struct FixedConfig {
    /// The constant target bitrate.
    pub bitrate: Bitrate,
    /// Pacing rate as a multiple of the target (libwebrtc paces at 2.5× by
    /// default: `kDefaultPaceMultiplier` in pacing_controller.h).
    pub pacing_factor: f64,
}

impl Default for FixedConfig {
    fn default() -> Self {
        FixedConfig {
            bitrate: Bitrate::mbps(1),
            pacing_factor: 2.5,
        }
    }
}

/// Constant target bitrate.
#[derive(Debug, Clone)]
pub struct Fixed {
    config: FixedConfig,
}

impl Fixed {
    /// A fixed controller.
    pub fn new(config: FixedConfig) -> Self {
        Fixed { config }
    }
}

impl CongestionController for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn trace_variables(&self) -> &'static [&'static str] {
        &["target_kbps", "pacing_kbps"]
    }
    fn trace(&self, sink: &mut dyn TraceSink) {
        sink.record("target_kbps", trace_kbps(self.config.bitrate));
        sink.record("pacing_kbps", trace_kbps(self.send_budget().pacing_rate));
    }
    fn on_packet_sent(&mut self, _now: Instant, _pkt: &SentPacket) {}
    fn on_feedback(&mut self, _now: Instant, _report: &FeedbackReport) {}
    fn target_bitrate(&self) -> Bitrate {
        self.config.bitrate
    }
    fn send_budget(&self) -> SendBudget {
        SendBudget::paced(self.config.bitrate.mul_f64(self.config.pacing_factor))
    }
    fn estimate(&self) -> Estimate {
        Estimate {
            bandwidth: Some(self.config.bitrate),
            state: "fixed",
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FeedbackReport;

    #[test]
    fn ignores_feedback() {
        let mut f = Fixed::new(FixedConfig {
            bitrate: Bitrate::kbps(700),
            pacing_factor: 2.5,
        });
        let lossy = FeedbackReport {
            report_time: Instant::ZERO,
            packets: vec![],
        };
        f.on_feedback(Instant::from_secs(1), &lossy);
        assert_eq!(f.target_bitrate(), Bitrate::kbps(700));
        assert_eq!(f.send_budget().pacing_rate, Bitrate::kbps(1750));
        assert_eq!(f.send_budget().cwnd, None);
    }
}
