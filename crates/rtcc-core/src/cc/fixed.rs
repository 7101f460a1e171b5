//! A constant-target controller, for tests and as a reference flow.
//!
//! It ignores all feedback: the target bitrate and pacing rate stay at the
//! configured value for the whole run. With a [`LayerPlan`] it is the
//! unresponsive reference flow of papers/cdm-scalable-video.txt §VI-A,
//! "constantly streaming at nominal rate without any congestion control": a
//! layered sender sends the plan's layers and repair streams all along
//! (the full content is every layer; "50 % of the content and 50 % FEC
//! protection" is layers 1..=5 of 10, each protected).

use super::{trace_kbps, CongestionController, Estimate, SendBudget, TraceSink};
use crate::media::svc::LayerPlan;
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
    /// The layer plan a layered sender follows for the whole run (module
    /// doc); `None` (the default): a rate only. The target stays `bitrate`,
    /// which should be the plan's rate ([`LayerPlan::rate`]) so that the
    /// pacer keeps up.
    pub plan: Option<LayerPlan>,
}

impl Default for FixedConfig {
    fn default() -> Self {
        FixedConfig {
            bitrate: Bitrate::mbps(1),
            pacing_factor: 2.5,
            plan: None,
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
    fn layer_plan(&self) -> Option<LayerPlan> {
        self.config.plan
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
            plan: None,
        });
        let lossy = FeedbackReport {
            report_time: Instant::ZERO,
            packets: vec![],
        };
        f.on_feedback(Instant::from_secs(1), &lossy);
        assert_eq!(f.target_bitrate(), Bitrate::kbps(700));
        assert_eq!(f.send_budget().pacing_rate, Bitrate::kbps(1750));
        assert_eq!(f.send_budget().cwnd, None);
        assert_eq!(f.layer_plan(), None, "a rate only");
    }

    #[test]
    fn a_reference_flow_keeps_its_plan() {
        // §VI-A: "50 % of the content and 50 % FEC protection".
        let half = LayerPlan {
            layers: 5,
            protected: 5,
        };
        let mut f = Fixed::new(FixedConfig {
            bitrate: Bitrate::kbps(700),
            pacing_factor: 2.5,
            plan: Some(half),
        });
        f.on_feedback(Instant::from_secs(1), &FeedbackReport::default());
        assert_eq!(f.layer_plan(), Some(half));
        assert_eq!(f.target_bitrate(), Bitrate::kbps(700));
    }

    #[test]
    fn only_a_plan_with_protected_layers_may_send_repair() {
        let config = |plan| {
            crate::CcConfig::Fixed(FixedConfig {
                plan,
                ..FixedConfig::default()
            })
        };
        let half = LayerPlan {
            layers: 5,
            protected: 5,
        };
        assert!(config(Some(half)).may_plan_repair());
        assert!(!config(Some(LayerPlan::data(5))).may_plan_repair());
        assert!(!config(None).may_plan_repair());
    }
}
