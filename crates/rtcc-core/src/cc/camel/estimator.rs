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
//!
//! Interpretation I32: per-packet delay noise that never reorders stretches
//! every head's dispersion by about the same time whatever its length
//! (`scripts/jitter_dispersion_bias.py`), so over the heads of the last
//! `stretch_window` the dispersion is regressed on the bytes (least squares,
//! span = a + bytes / C). When the intercept a is positive and significant
//! (more than two standard errors), a is the stretch each head carries and
//! BW_avg = Σ bytes / (Σ span − N·a); otherwise (a clean path: a = 0 to the
//! nanosecond) BW_avg is eq. 3's plain ratio of sums.

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
    /// Window of the stretch regression (I32); zero disables it.
    stretch_window: Duration,
    /// (send time, Σ s_i, t_n − t_1) of each eq. 2 sample.
    bw: VecDeque<(Instant, Bytes, Duration)>,
    /// The same samples over `stretch_window` (I32).
    stretch_samples: VecDeque<(Instant, Bytes, Duration)>,
    /// The per-head dispersion stretch of the last update (I32).
    stretch: Duration,
    /// Scratch space of the stretch regression, kept to avoid allocating.
    stretch_fits: Vec<(f64, f64)>,
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
    /// An estimator with the given windows; `stretch_window` zero turns
    /// the stretch correction (I32) off.
    pub fn new(bw_window: Duration, min_delay_window: Duration, stretch_window: Duration) -> Self {
        Estimator {
            bw_window,
            min_delay_window,
            stretch_window,
            bw: VecDeque::new(),
            stretch_samples: VecDeque::new(),
            stretch: Duration::ZERO,
            stretch_fits: Vec::new(),
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
        if !self.stretch_window.is_zero() {
            self.stretch_samples.push_back((send_time, bytes, span));
        }
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
        while self
            .stretch_samples
            .front()
            .is_some_and(|(t, _, _)| now.saturating_duration_since(*t) > self.stretch_window)
        {
            self.stretch_samples.pop_front();
        }
        self.stretch = stretch(
            &self.stretch_samples,
            self.bw_window,
            &mut self.stretch_fits,
        );
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
            // Σ dispersion over the window (I8), less each head's stretch
            // (I32), which may remove at most half of the dispersion.
            let n = u32::try_from(self.bw.len()).unwrap_or(u32::MAX);
            let stretched = self.stretch.mul_f64(f64::from(n));
            let span = span.saturating_sub(stretched).max(span / 2);
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
    /// The per-head dispersion stretch removed from BW_avg (I32).
    pub fn stretch(&self) -> Duration {
        self.stretch
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

/// Fewest heads for the stretch regression (I32).
const STRETCH_MIN_SAMPLES: usize = 20;

/// I32: the common intercept a of least-squares lines span = a + b_s·bytes,
/// one slope b_s per `bin` of send time (the rate may change from one bin to
/// the next; the stretch is the path's), when a is positive and more than
/// two standard errors from zero; zero otherwise (too few heads, heads all
/// the same length within their bins, or no significant stretch).
///
/// For a given a each bin's best slope is b_s = (S_xy − a·S_x) / S_xx, so
/// the residual of head k is u_k − a·v_k with u_k = span_k − bytes_k·S_xy/S_xx
/// and v_k = 1 − bytes_k·S_x/S_xx, and a = Σ u·v / Σ v².
fn stretch(
    samples: &VecDeque<(Instant, Bytes, Duration)>,
    bin: Duration,
    fits: &mut Vec<(f64, f64)>,
) -> Duration {
    let n = samples.len();
    if n < STRETCH_MIN_SAMPLES || bin.is_zero() {
        return Duration::ZERO;
    }
    let bin_of = |t: Instant| t.as_nanos() / bin.as_nanos();
    // Per-bin sums, in one pass over samples sorted by send time.
    let (mut suv, mut svv) = (0.0, 0.0);
    let mut bins = 0usize;
    let mut start = 0;
    let v = samples;
    fits.clear();
    while start < n {
        let b = bin_of(v[start].0);
        let mut end = start;
        let (mut sx, mut sxx, mut sxy) = (0.0, 0.0, 0.0);
        while end < n && bin_of(v[end].0) == b {
            let (x, y) = (v[end].1.as_f64(), v[end].2.as_secs_f64());
            sx += x;
            sxx += x * x;
            sxy += x * y;
            end += 1;
        }
        bins += 1;
        for &(_, bytes, span) in v.range(start..end) {
            let x = bytes.as_f64();
            let (u, w) = if sxx > 0.0 {
                (span.as_secs_f64() - x * sxy / sxx, 1.0 - x * sx / sxx)
            } else {
                (span.as_secs_f64(), 1.0)
            };
            suv += u * w;
            svv += w * w;
            fits.push((u, w));
        }
        start = end;
    }
    if svv <= 0.0 || n <= bins + 1 {
        return Duration::ZERO;
    }
    let a = suv / svv;
    if a <= 0.0 {
        return Duration::ZERO;
    }
    let ssr: f64 = fits.iter().map(|&(u, w)| (u - a * w).powi(2)).sum();
    let se = (ssr / (n - bins - 1) as f64 / svv).sqrt();
    if a > 2.0 * se {
        Duration::from_secs_f64(a)
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> Estimator {
        Estimator::new(
            Duration::from_secs(1),
            Duration::from_secs(10),
            Duration::ZERO,
        )
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

    /// Heads of 2 to 9 packets of 1200 B at `kbps`, 30 per second from
    /// `from` for `secs` seconds, each dispersion stretched by `stretch`
    /// plus a deterministic zero-mean `noise` pattern.
    fn heads(
        e: &mut Estimator,
        from: Instant,
        secs: u64,
        kbps: u64,
        stretch: Duration,
        noise: Duration,
    ) -> Instant {
        let mut t = from;
        for k in 0..secs * 30 {
            let bytes = Bytes::new(1200 * (1 + k % 8));
            // Zero-mean noise: +noise on one head in three, −noise/2 on the others.
            let base = bytes / Bitrate::kbps(kbps) + stretch;
            let span = if k % 3 == 0 {
                base + noise
            } else {
                base.saturating_sub(noise / 2)
            };
            e.on_bandwidth(t, bytes, span);
            e.update(t);
            t += Duration::from_micros(33_333);
        }
        t
    }

    fn with_stretch() -> Estimator {
        Estimator::new(
            Duration::from_secs(1),
            Duration::from_secs(10),
            Duration::from_secs(10),
        )
    }

    #[test]
    fn a_clean_path_has_no_stretch_and_keeps_the_ratio_of_sums() {
        let mut e = with_stretch();
        let t = heads(
            &mut e,
            Instant::ZERO,
            5,
            1000,
            Duration::ZERO,
            Duration::ZERO,
        );
        e.update(t);
        assert_eq!(e.stretch(), Duration::ZERO);
        let bw = e.bw_avg().unwrap().as_kbps_f64();
        assert!((bw - 1000.0).abs() < 1.0, "{bw}");
    }

    #[test]
    fn a_constant_stretch_is_found_and_removed() {
        // Every head 20 ms longer than its bytes take at 1 Mbps, with noise:
        // the ratio of sums reads far below 1 Mbps, the corrected BW_avg
        // within 5 % of it.
        let mut plain = est();
        let t = heads(
            &mut plain,
            Instant::ZERO,
            10,
            1000,
            Duration::from_millis(20),
            Duration::from_millis(6),
        );
        plain.update(t);
        let biased = plain.bw_avg().unwrap().as_kbps_f64();
        assert!(biased < 800.0, "{biased}");
        let mut e = with_stretch();
        let t = heads(
            &mut e,
            Instant::ZERO,
            10,
            1000,
            Duration::from_millis(20),
            Duration::from_millis(6),
        );
        e.update(t);
        let a = e.stretch().as_millis_f64();
        assert!((a - 20.0).abs() < 2.0, "stretch {a} ms");
        let bw = e.bw_avg().unwrap().as_kbps_f64();
        assert!((bw - 1000.0).abs() < 50.0, "{bw}");
    }

    #[test]
    fn a_rate_step_is_not_read_as_stretch() {
        // 5 s at 2 Mbps then 5 s at 1 Mbps, no stretch: one regression line
        // over the 10 s would tilt and cross zero away from the origin; one
        // slope per second does not.
        let mut e = with_stretch();
        let t = heads(
            &mut e,
            Instant::ZERO,
            5,
            2000,
            Duration::ZERO,
            Duration::ZERO,
        );
        let t = heads(&mut e, t, 5, 1000, Duration::ZERO, Duration::ZERO);
        e.update(t);
        assert_eq!(e.stretch(), Duration::ZERO);
        let bw = e.bw_avg().unwrap().as_kbps_f64();
        assert!((bw - 1000.0).abs() < 1.0, "{bw}");
    }

    #[test]
    fn the_correction_at_most_halves_the_dispersion() {
        // Heads of one packet's worth after the first: a stretch of 30 ms
        // on 9.6 ms of true dispersion would remove three quarters of it;
        // the correction stops at half (BW_avg at most twice the plain ratio).
        let mut e = with_stretch();
        let mut plain = est();
        let mut t = Instant::ZERO;
        for k in 0..300u64 {
            let bytes = Bytes::new(1200 * (1 + k % 2));
            let span = bytes / Bitrate::kbps(1000) + Duration::from_millis(30);
            for x in [&mut e, &mut plain] {
                x.on_bandwidth(t, bytes, span);
                x.update(t);
            }
            t += Duration::from_micros(33_333);
        }
        assert!(e.stretch() > Duration::from_millis(25));
        let ratio = e.bw_avg().unwrap().as_kbps_f64() / plain.bw_avg().unwrap().as_kbps_f64();
        assert!((ratio - 2.0).abs() < 1e-6, "{ratio}");
    }

    #[test]
    fn a_zero_window_turns_the_correction_off() {
        let mut e = est();
        let t = heads(
            &mut e,
            Instant::ZERO,
            5,
            1000,
            Duration::from_millis(20),
            Duration::ZERO,
        );
        e.update(t);
        assert_eq!(e.stretch(), Duration::ZERO);
    }
}
