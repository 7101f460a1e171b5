//! Acknowledged-bitrate estimator: the receive rate `R̂` that the rate
//! controller decreases to (draft-ietf-rmcat-gcc-02 §5.5 "R_hat … measured
//! over a T second window"; libwebrtc `bitrate_estimator.cc` and
//! `acknowledged_bitrate_estimator.cc`).
//!
//! Received bytes are summed over fixed windows of arrival time (500 ms for
//! the first sample, 150 ms afterwards). Each window's rate is a sample that
//! updates a scalar Bayesian estimate: the sample's variance grows with its
//! relative distance from the current estimate
//! (`σ_s = 10 · |R̂ − s| / R̂`), the estimate's variance grows by 5 per update
//! (the rate drifts), and the two are combined by inverse-variance weighting.
//! Rates are in kbps inside the filter, as in libwebrtc, so the variances keep
//! their tuned meaning.

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Ack-bitrate estimator parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckBitrateConfig {
    /// Window of the first sample (libwebrtc `bitrate_estimator.cc`:
    /// `kInitialRateWindowMs = 500`).
    pub initial_window: Duration,
    /// Window of later samples (libwebrtc `bitrate_estimator.cc`:
    /// `kRateWindowMs = 150`).
    pub window: Duration,
    /// Scale of a sample's uncertainty (libwebrtc `bitrate_estimator.cc`:
    /// `uncertainty_scale_("scale", 10.0)`).
    pub uncertainty_scale: f64,
    /// Variance added to the estimate per update, kbps² (libwebrtc
    /// `bitrate_estimator.cc`: `bitrate_estimate_var_ + 5.f`).
    pub process_variance: f64,
    /// Variance of the estimate after the first sample, kbps² (libwebrtc
    /// `bitrate_estimator.cc`: `bitrate_estimate_var_(50.0f)`).
    pub initial_variance: f64,
}

impl Default for AckBitrateConfig {
    fn default() -> Self {
        AckBitrateConfig {
            initial_window: Duration::from_millis(500),
            window: Duration::from_millis(150),
            uncertainty_scale: 10.0,
            process_variance: 5.0,
            initial_variance: 50.0,
        }
    }
}

/// The acknowledged-bitrate estimator.
#[derive(Debug, Clone)]
pub struct AckBitrateEstimator {
    config: AckBitrateConfig,
    sum: Bytes,
    current_window: Duration,
    prev_arrival: Option<Instant>,
    estimate_kbps: Option<f64>,
    variance: f64,
}

impl AckBitrateEstimator {
    /// An estimator without samples.
    pub fn new(config: AckBitrateConfig) -> Self {
        AckBitrateEstimator {
            config,
            sum: Bytes::ZERO,
            current_window: Duration::ZERO,
            prev_arrival: None,
            estimate_kbps: None,
            variance: config.initial_variance,
        }
    }

    /// The estimate, once the first window has completed.
    pub fn bitrate(&self) -> Option<Bitrate> {
        self.estimate_kbps.map(|k| Bitrate::from_bps_f64(k * 1e3))
    }

    /// A packet of `size` was received at `arrival` (receiver clock). Packets
    /// must come in arrival order; a step backwards restarts the window.
    pub fn update(&mut self, arrival: Instant, size: Bytes) {
        let window = if self.estimate_kbps.is_none() {
            self.config.initial_window
        } else {
            self.config.window
        };
        let Some(sample) = self.update_window(arrival, size, window) else {
            return;
        };
        let Some(est) = self.estimate_kbps else {
            self.estimate_kbps = Some(sample);
            return;
        };
        // bitrate_estimator.cc, Update: sample uncertainty relative to the estimate.
        let sample_sigma =
            self.config.uncertainty_scale * (est - sample).abs() / est.max(f64::MIN_POSITIVE);
        let sample_var = sample_sigma * sample_sigma;
        let pred_var = self.variance + self.config.process_variance;
        let new = (sample_var * est + pred_var * sample) / (sample_var + pred_var);
        self.estimate_kbps = Some(new.max(0.0));
        self.variance = sample_var * pred_var / (sample_var + pred_var);
    }

    /// Sums bytes over windows of arrival time; returns a completed window's
    /// rate in kbps (libwebrtc `BitrateEstimator::UpdateWindow`).
    fn update_window(&mut self, arrival: Instant, size: Bytes, window: Duration) -> Option<f64> {
        if let Some(prev) = self.prev_arrival {
            if arrival < prev {
                self.prev_arrival = None;
                self.sum = Bytes::ZERO;
                self.current_window = Duration::ZERO;
            }
        }
        if let Some(prev) = self.prev_arrival {
            let gap = arrival - prev;
            self.current_window += gap;
            if gap > window {
                // Nothing received for more than a window: drop the stale sum.
                self.sum = Bytes::ZERO;
                self.current_window =
                    Duration::from_nanos(self.current_window.as_nanos() % window.as_nanos().max(1));
            }
        }
        self.prev_arrival = Some(arrival);
        let mut sample = None;
        if self.current_window >= window {
            sample = Some(self.sum.bits() as f64 / window.as_millis_f64());
            self.current_window -= window;
            self.sum = Bytes::ZERO;
        }
        self.sum += size;
        sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `secs` seconds of 1200-byte packets at `rate`, starting at `t0`.
    fn feed(e: &mut AckBitrateEstimator, t0: Instant, secs: f64, rate: Bitrate) -> Instant {
        let gap = rate.transmit_time(Bytes::new(1200));
        let mut t = t0;
        while t < t0 + Duration::from_secs_f64(secs) {
            e.update(t, Bytes::new(1200));
            t += gap;
        }
        t
    }

    #[test]
    fn first_sample_after_initial_window() {
        let mut e = AckBitrateEstimator::new(AckBitrateConfig::default());
        let t = feed(&mut e, Instant::ZERO, 0.49, Bitrate::kbps(960));
        assert_eq!(e.bitrate(), None);
        feed(&mut e, t, 0.05, Bitrate::kbps(960));
        let r = e.bitrate().unwrap().as_kbps_f64();
        assert!((r - 960.0).abs() < 30.0, "{r}");
    }

    #[test]
    fn converges_to_new_rate() {
        let mut e = AckBitrateEstimator::new(AckBitrateConfig::default());
        let t = feed(&mut e, Instant::ZERO, 3.0, Bitrate::kbps(500));
        assert!((e.bitrate().unwrap().as_kbps_f64() - 500.0).abs() < 25.0);
        // Rate doubles: the estimate follows within a couple of seconds.
        let t = feed(&mut e, t, 0.3, Bitrate::kbps(1000));
        let mid = e.bitrate().unwrap().as_kbps_f64();
        assert!(mid < 950.0, "a step is not adopted at once: {mid}");
        feed(&mut e, t, 3.0, Bitrate::kbps(1000));
        let r = e.bitrate().unwrap().as_kbps_f64();
        assert!((r - 1000.0).abs() < 50.0, "{r}");
    }

    #[test]
    fn outlier_sample_has_little_weight() {
        let mut e = AckBitrateEstimator::new(AckBitrateConfig::default());
        let t = feed(&mut e, Instant::ZERO, 3.0, Bitrate::kbps(800));
        let before = e.bitrate().unwrap().as_kbps_f64();
        // One 150 ms window at 4× the rate (a burst after a gap in feedback).
        let t = feed(&mut e, t, 0.15, Bitrate::kbps(3200));
        feed(&mut e, t, 0.16, Bitrate::kbps(800));
        let after = e.bitrate().unwrap().as_kbps_f64();
        // A plain average over the same windows would move by hundreds of kbps;
        // the uncertainty weighting keeps the estimate within 10 % of the jump.
        assert!(
            after - before < 0.1 * (3200.0 - before),
            "before {before} after {after}"
        );
    }
}
