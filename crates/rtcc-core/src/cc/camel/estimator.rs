//! Camel §4.1: the mean frame-level bandwidth BW_avg, the minimum frame-level
//! delay D_min and the frame-level bandwidth–delay product (eq. 3), plus the
//! receiver hold H used by the window allowance (I13).
//!
//! Interpretation I8 of `docs/algorithms/camel.md` (revised): BW_avg is the
//! total bytes over the total dispersion of the eq. 2 samples of frames sent
//! in the last `bw_window` (not the mean of their ratios, which jitter biases
//! upward); when that window empties, BW_avg expires to the rate delivered
//! in the last `bw_window`. D_min is the minimum frame delay over
//! `min_delay_window` (BBR's RTprop filter).

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
    /// (send time, Σ s_i, t_n − t_1) of each eq. 2 sample.
    bw: VecDeque<(Instant, Bytes, Duration)>,
    /// (report time, bytes) of packets reported received.
    delivered: VecDeque<(Instant, Bytes)>,
    /// When heads were found to have lost a packet (I8).
    lossy_heads: VecDeque<Instant>,
    delay: VecDeque<(Instant, Duration)>,
    hold: VecDeque<(Instant, Duration)>,
    bw_avg: Option<Bitrate>,
    d_min: Option<Duration>,
    h: Duration,
    last_bw: Option<Bitrate>,
    last_delay: Option<Duration>,
    /// EWMA (1/8, RFC 6298's α) of the frame delays (I29).
    smoothed_delay: Option<Duration>,
    /// EWMA (1/16) of |D_k − D_{k−1}| between consecutive frames (I26).
    delay_noise: Duration,
}

impl Estimator {
    /// An estimator with the given windows.
    pub fn new(bw_window: Duration, min_delay_window: Duration) -> Self {
        Estimator {
            bw_window,
            min_delay_window,
            bw: VecDeque::new(),
            delivered: VecDeque::new(),
            lossy_heads: VecDeque::new(),
            delay: VecDeque::new(),
            hold: VecDeque::new(),
            bw_avg: None,
            d_min: None,
            h: Duration::ZERO,
            last_bw: None,
            last_delay: None,
            smoothed_delay: None,
            delay_noise: Duration::ZERO,
        }
    }

    /// Adds an eq. 2 sample of a frame sent at `send_time`: `bytes` after
    /// the head's first packet, received over `span`.
    pub fn on_bandwidth(&mut self, send_time: Instant, bytes: Bytes, span: Duration) {
        self.bw.push_back((send_time, bytes, span));
        if !span.is_zero() {
            self.last_bw = Some(bytes / span);
        }
    }

    /// Counts `bytes` reported received at `now` (the delivered rate BW_avg
    /// expires to, I8).
    pub fn on_delivered(&mut self, now: Instant, bytes: Bytes) {
        self.delivered.push_back((now, bytes));
    }

    /// Notes a head found at `now` to have lost a packet, which gave no
    /// sample (I8: the evidence that BW_avg is stale).
    pub fn on_lossy_head(&mut self, now: Instant) {
        self.lossy_heads.push_back(now);
    }

    /// Adds a frame-delay sample of a frame sent at `send_time`.
    pub fn on_delay(&mut self, send_time: Instant, d: Duration) {
        self.delay.push_back((send_time, d));
        if let Some(prev) = self.last_delay {
            let step = if d > prev { d - prev } else { prev - d };
            self.delay_noise = self.delay_noise.mul_f64(15.0 / 16.0) + step.mul_f64(1.0 / 16.0);
        }
        self.last_delay = Some(d);
        self.smoothed_delay = Some(match self.smoothed_delay {
            None => d,
            Some(s) => s.mul_f64(0.875) + d.mul_f64(0.125),
        });
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
        while self
            .bw
            .front()
            .is_some_and(|(t, _, _)| now.saturating_duration_since(*t) > self.bw_window)
        {
            self.bw.pop_front();
        }
        expire(now, &mut self.delivered, self.bw_window);
        while self
            .lossy_heads
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > self.bw_window)
        {
            self.lossy_heads.pop_front();
        }
        expire(now, &mut self.delay, self.min_delay_window);
        expire(now, &mut self.hold, HOLD_WINDOW);
        let (bytes, span) = self
            .bw
            .iter()
            .fold((Bytes::ZERO, Duration::ZERO), |(b, d), &(_, sb, sd)| {
                (b + sb, d + sd)
            });
        if !span.is_zero() {
            // §4.1, eq. 3: "the average frame-level bandwidth", as Σ bytes /
            // Σ dispersion over the window (I8).
            self.bw_avg = Some(bytes / span);
        } else if self.bw_avg.is_some() && !self.lossy_heads.is_empty() {
            // I8: no head survived for a whole window and some were lost:
            // the last average is stale evidence; what the path delivered is
            // the evidence left. Frames too small to measure (one packet)
            // say nothing against the last average, which is held: the
            // delivered rate of an application-limited flow is no bound on
            // the path, and expiring to it would ratchet the target down.
            let got = self.delivered.iter().fold(Bytes::ZERO, |a, &(_, b)| a + b);
            self.bw_avg = Some(got / self.bw_window);
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
        self.delivered.clear();
        self.lossy_heads.clear();
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
    /// Send time of the newest frame whose delay came within `tolerance` of
    /// D_min: the last time the path was seen (nearly) empty (I27).
    pub fn near_d_min_stamp(&self, tolerance: Duration) -> Option<Instant> {
        let limit = self.d_min? + tolerance;
        self.delay
            .iter()
            .rev()
            .find(|&&(_, d)| d <= limit)
            .map(|&(t, _)| t)
    }
    /// H: the longest receiver hold over the last second.
    pub fn hold(&self) -> Duration {
        self.h
    }
    /// The newest eq. 2 sample.
    pub fn last_frame_bw(&self) -> Option<Bitrate> {
        self.last_bw
    }
    /// The mean step between consecutive frame delays (EWMA 1/16, I26):
    /// about a third of the spread of independent jitter.
    pub fn delay_noise(&self) -> Duration {
        self.delay_noise
    }
    /// The smoothed frame delay (EWMA 1/8, I29).
    pub fn smoothed_delay(&self) -> Option<Duration> {
        self.smoothed_delay
    }
    /// The newest frame delay.
    pub fn last_frame_delay(&self) -> Option<Duration> {
        self.last_delay
    }
    /// The rate delivered over the last `bw_window` (I8), once anything was.
    pub fn delivered_rate(&self) -> Option<Bitrate> {
        let got = self.delivered.iter().fold(Bytes::ZERO, |a, &(_, b)| a + b);
        (!self.delivered.is_empty()).then(|| got / self.bw_window)
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

    /// An eq. 2 sample of `kbps` over a 10 ms dispersion.
    fn sample(e: &mut Estimator, at: Instant, kbps: u64) {
        e.on_bandwidth(at, Bytes::new(kbps * 10 / 8), Duration::from_millis(10));
    }

    #[test]
    fn bw_avg_is_total_bytes_over_total_dispersion() {
        let mut e = est();
        sample(&mut e, Instant::ZERO, 1000);
        // 2 Mbps and 3 Mbps samples of unequal dispersion: 2500 B over 10 ms
        // and 7500 B over 20 ms give 10000 B / 30 ms = 2.667 Mbps, not the
        // 2.5 Mbps mean of the ratios.
        e.on_bandwidth(
            Instant::from_millis(500),
            Bytes::new(2500),
            Duration::from_millis(10),
        );
        e.on_bandwidth(
            Instant::from_millis(1200),
            Bytes::new(7500),
            Duration::from_millis(20),
        );
        // The 0 s sample is 1.2 s old and left the window.
        e.update(Instant::from_millis(1200));
        assert_eq!(
            e.bw_avg(),
            Some(Bytes::new(10000) / Duration::from_millis(30))
        );
        assert_eq!(e.last_frame_bw(), Some(Bitrate::mbps(3)));
    }

    #[test]
    fn ratio_of_sums_is_not_pulled_up_by_jitter() {
        // The same 1250 B head, dispersions 5 ms and 15 ms (10 ms ± jitter):
        // the mean of the ratios reads 1.33 Mbps, the ratio of sums 1 Mbps.
        let mut e = est();
        e.on_bandwidth(Instant::ZERO, Bytes::new(1250), Duration::from_millis(5));
        e.on_bandwidth(Instant::ZERO, Bytes::new(1250), Duration::from_millis(15));
        e.update(Instant::ZERO);
        assert_eq!(e.bw_avg(), Some(Bitrate::mbps(1)));
    }

    #[test]
    fn bw_avg_expires_to_the_delivered_rate_when_heads_are_lost() {
        let mut e = est();
        sample(&mut e, Instant::ZERO, 1000);
        e.update(Instant::ZERO);
        assert_eq!(e.bw_avg(), Some(Bitrate::mbps(1)));
        // No head survives for more than a window; 25 KB are delivered in
        // the last second.
        for k in 1..=10 {
            e.on_delivered(Instant::from_millis(1000 + 100 * k), Bytes::new(2500));
        }
        // Frames too small to measure: the last average is held (an
        // application-limited delivered rate is no evidence).
        e.update(Instant::from_millis(2000));
        assert_eq!(e.bw_samples(), 0);
        assert_eq!(e.bw_avg(), Some(Bitrate::mbps(1)));
        // Heads lost packets: BW_avg = 200 kbps, not the stale 1 Mbps.
        e.on_lossy_head(Instant::from_millis(1500));
        e.update(Instant::from_millis(2000));
        assert_eq!(e.bw_samples(), 0);
        assert_eq!(e.bw_avg(), Some(Bitrate::kbps(200)));
        // A new sample takes over again.
        sample(&mut e, Instant::from_millis(2100), 800);
        e.update(Instant::from_millis(2100));
        assert_eq!(e.bw_avg(), Some(Bitrate::kbps(800)));
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
        sample(&mut e, Instant::ZERO, 1000);
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
