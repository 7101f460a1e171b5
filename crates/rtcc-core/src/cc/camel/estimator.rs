//! Camel §4.1: the mean frame-level bandwidth BW_avg, the minimum frame-level
//! delay D_min and the frame-level bandwidth–delay product (eq. 3), plus the
//! receiver hold H used by the window allowance (I13).
//!
//! Interpretation I8 of `docs/algorithms/camel.md`: BW_avg is the plain mean
//! of the eq. 2 samples of frames sent in the last `bw_window`; D_min the
//! minimum frame delay over `min_delay_window` (BBR's RTprop filter). A window
//! that empties keeps its last value.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Window of the receiver-hold maximum H (ours, I13: about the feedback
/// interval, taken over the last second).
pub const HOLD_WINDOW: Duration = Duration::from_secs(1);

/// BW_avg, D_min and H with their windows.
#[derive(Debug, Clone)]
pub struct Estimator {
    bw_window: Duration,
    min_delay_window: Duration,
    bw: VecDeque<(Instant, Bitrate)>,
    delay: VecDeque<(Instant, Duration)>,
    hold: VecDeque<(Instant, Duration)>,
    bw_avg: Option<Bitrate>,
    d_min: Option<Duration>,
    h: Duration,
    last_bw: Option<Bitrate>,
    last_delay: Option<Duration>,
}

impl Estimator {
    /// An estimator with the given windows.
    pub fn new(bw_window: Duration, min_delay_window: Duration) -> Self {
        Estimator {
            bw_window,
            min_delay_window,
            bw: VecDeque::new(),
            delay: VecDeque::new(),
            hold: VecDeque::new(),
            bw_avg: None,
            d_min: None,
            h: Duration::ZERO,
            last_bw: None,
            last_delay: None,
        }
    }

    /// Adds an eq. 2 sample of a frame sent at `send_time`.
    pub fn on_bandwidth(&mut self, send_time: Instant, bw: Bitrate) {
        self.bw.push_back((send_time, bw));
        self.last_bw = Some(bw);
    }

    /// Adds a frame-delay sample of a frame sent at `send_time`.
    pub fn on_delay(&mut self, send_time: Instant, d: Duration) {
        self.delay.push_back((send_time, d));
        self.last_delay = Some(d);
    }

    /// Adds a receiver-hold observation made at `now`.
    pub fn on_hold(&mut self, now: Instant, hold: Duration) {
        self.hold.push_back((now, hold));
    }

    /// Expires old samples and recomputes BW_avg, D_min and H as of `now`.
    pub fn update(&mut self, now: Instant) {
        fn expire<T>(now: Instant, q: &mut VecDeque<(Instant, T)>, w: Duration) {
            while q
                .front()
                .is_some_and(|(t, _)| now.saturating_duration_since(*t) > w)
            {
                q.pop_front();
            }
        }
        expire(now, &mut self.bw, self.bw_window);
        expire(now, &mut self.delay, self.min_delay_window);
        expire(now, &mut self.hold, HOLD_WINDOW);
        if !self.bw.is_empty() {
            // §4.1, eq. 3: "the average frame-level bandwidth" (plain mean, I8).
            let sum: f64 = self.bw.iter().map(|&(_, b)| b.as_bps_f64()).sum();
            self.bw_avg = Some(Bitrate::from_bps_f64(sum / self.bw.len() as f64));
        }
        if let Some(m) = self.delay.iter().map(|&(_, d)| d).min() {
            // §4.1: "the minimum observed frame-level delay" ≈ RTprop.
            self.d_min = Some(m);
        }
        if let Some(h) = self.hold.iter().map(|&(_, h)| h).max() {
            self.h = h;
        }
    }

    /// Forgets the bandwidth samples (leaving fall-back, I19); D_min is kept.
    pub fn reset_bandwidth(&mut self) {
        self.bw.clear();
        self.bw_avg = None;
    }

    /// BW_avg, once a sample was seen.
    pub fn bw_avg(&self) -> Option<Bitrate> {
        self.bw_avg
    }
    /// D_min, once a sample was seen.
    pub fn d_min(&self) -> Option<Duration> {
        self.d_min
    }
    /// H: the longest receiver hold over the last second.
    pub fn hold(&self) -> Duration {
        self.h
    }
    /// The newest eq. 2 sample.
    pub fn last_frame_bw(&self) -> Option<Bitrate> {
        self.last_bw
    }
    /// The newest frame delay.
    pub fn last_frame_delay(&self) -> Option<Duration> {
        self.last_delay
    }
    /// Number of bandwidth samples in the window.
    pub fn bw_samples(&self) -> usize {
        self.bw.len()
    }

    /// Eq. 3: BDP = BW_avg · D_min.
    pub fn bdp(&self) -> Option<Bytes> {
        Some(self.bw_avg? * self.d_min?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> Estimator {
        Estimator::new(Duration::from_secs(1), Duration::from_secs(10))
    }

    #[test]
    fn bw_avg_is_mean_of_last_second() {
        let mut e = est();
        e.on_bandwidth(Instant::ZERO, Bitrate::mbps(1));
        e.on_bandwidth(Instant::from_millis(500), Bitrate::mbps(2));
        e.on_bandwidth(Instant::from_millis(1200), Bitrate::mbps(3));
        e.update(Instant::from_millis(1200));
        // The 0 s sample is 1.2 s old: mean of 2 and 3.
        assert_eq!(e.bw_avg(), Some(Bitrate::bps(2_500_000)));
        // Everything expires: the last value is held.
        e.update(Instant::from_secs(10));
        assert_eq!(e.bw_avg(), Some(Bitrate::bps(2_500_000)));
        assert_eq!(e.bw_samples(), 0);
    }

    #[test]
    fn min_delay_expires_after_window() {
        let mut e = est();
        e.on_delay(Instant::ZERO, Duration::from_millis(20));
        e.on_delay(Instant::from_secs(5), Duration::from_millis(40));
        e.update(Instant::from_secs(9));
        assert_eq!(e.d_min(), Some(Duration::from_millis(20)));
        e.on_delay(Instant::from_secs(11), Duration::from_millis(50));
        e.update(Instant::from_secs(11));
        assert_eq!(e.d_min(), Some(Duration::from_millis(40)));
    }

    #[test]
    fn bdp_is_mean_bandwidth_times_min_delay() {
        let mut e = est();
        assert_eq!(e.bdp(), None);
        e.on_bandwidth(Instant::ZERO, Bitrate::mbps(1));
        e.on_delay(Instant::ZERO, Duration::from_millis(40));
        e.update(Instant::ZERO);
        assert_eq!(e.bdp(), Some(Bytes::new(5000)));
    }

    #[test]
    fn hold_is_max_over_last_second() {
        let mut e = est();
        e.on_hold(Instant::ZERO, Duration::from_millis(45));
        e.on_hold(Instant::from_millis(600), Duration::from_millis(10));
        e.update(Instant::from_millis(900));
        assert_eq!(e.hold(), Duration::from_millis(45));
        e.update(Instant::from_millis(1500));
        assert_eq!(e.hold(), Duration::from_millis(10));
    }
}
