//! A windowed min or max filter: the best value seen over a sliding window of
//! time (or of round trips), in O(1) time and space.
//!
//! This is Kathleen Nichols' algorithm, the one BBR uses for its BtlBw max
//! filter (draft-cardwell-iccrg-bbr-congestion-control-00 §4.1.1.5, "a
//! windowed max filter ... using Kathleen Nichols' algorithm"): it keeps the
//! best, second-best and third-best samples, each newer than the one before,
//! so that when the best one ages out of the window a good replacement is
//! already at hand. The sub-window refresh at ¼ and ½ of the window keeps the
//! second and third choices spread over the window.
//!
//! Time is generic ([`WindowTime`]): [`Instant`] with a [`Duration`] window, or
//! a `u64` counter (BBR's round count) with a `u64` window.

use crate::time::{Duration, Instant};

/// A clock for [`WindowedFilter`]: a totally ordered instant with a span type.
pub trait WindowTime: Copy + Ord {
    /// The length of a window, and of the time between two instants.
    type Span: Copy + Ord;
    /// `self − earlier`, zero if `earlier` is later.
    fn since(self, earlier: Self) -> Self::Span;
    /// `span / divisor`.
    fn fraction(span: Self::Span, divisor: u64) -> Self::Span;
}

impl WindowTime for u64 {
    type Span = u64;
    fn since(self, earlier: u64) -> u64 {
        self.saturating_sub(earlier)
    }
    fn fraction(span: u64, divisor: u64) -> u64 {
        span / divisor
    }
}

impl WindowTime for Instant {
    type Span = Duration;
    fn since(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
    fn fraction(span: Duration, divisor: u64) -> Duration {
        span / divisor
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample<V, T> {
    time: T,
    value: V,
}

/// The best (largest or smallest) value seen within the last `window`.
#[derive(Debug, Clone)]
pub struct WindowedFilter<V, T: WindowTime> {
    window: T::Span,
    keep_max: bool,
    /// Best, second-best and third-best samples; `None` until the first update.
    samples: Option<[Sample<V, T>; 3]>,
}

impl<V: Copy + PartialOrd, T: WindowTime> WindowedFilter<V, T> {
    /// A filter keeping the largest value of the last `window`.
    pub fn max(window: T::Span) -> Self {
        WindowedFilter {
            window,
            keep_max: true,
            samples: None,
        }
    }

    /// A filter keeping the smallest value of the last `window`.
    pub fn min(window: T::Span) -> Self {
        WindowedFilter {
            window,
            keep_max: false,
            samples: None,
        }
    }

    /// The window length.
    pub fn window(&self) -> T::Span {
        self.window
    }

    /// The current best value, `None` before the first sample.
    pub fn best(&self) -> Option<V> {
        self.samples.map(|s| s[0].value)
    }

    /// Forget every sample.
    pub fn clear(&mut self) {
        self.samples = None;
    }

    /// Forget every sample and start again from `value` at `time`.
    pub fn reset(&mut self, time: T, value: V) {
        let s = Sample { time, value };
        self.samples = Some([s; 3]);
    }

    /// `a` is at least as good as `b`.
    fn at_least(&self, a: V, b: V) -> bool {
        if self.keep_max {
            a >= b
        } else {
            a <= b
        }
    }

    /// Add the sample `value` taken at `time` (times must not go backwards) and
    /// return the new best value.
    pub fn update(&mut self, time: T, value: V) -> V {
        let new = Sample { time, value };
        let Some(mut s) = self.samples else {
            self.reset(time, value);
            return value;
        };
        // A new best, or nothing left in the window: start over.
        if self.at_least(value, s[0].value) || time.since(s[2].time) > self.window {
            self.reset(time, value);
            return value;
        }
        if self.at_least(value, s[1].value) {
            s[1] = new;
            s[2] = new;
        } else if self.at_least(value, s[2].value) {
            s[2] = new;
        }
        // Age the choices (Nichols' sub-window refresh).
        let dt = time.since(s[0].time);
        if dt > self.window {
            // The best has expired: promote the others; the second may have
            // expired too.
            s[0] = s[1];
            s[1] = s[2];
            s[2] = new;
            if time.since(s[0].time) > self.window {
                s[0] = s[1];
                s[1] = s[2];
                s[2] = new;
            }
        } else if s[1].time == s[0].time && dt > T::fraction(self.window, 4) {
            // A quarter of the window passed with no second choice: take one.
            s[1] = new;
            s[2] = new;
        } else if s[2].time == s[1].time && dt > T::fraction(self.window, 2) {
            // Half the window passed with no third choice: take one.
            s[2] = new;
        }
        self.samples = Some(s);
        s[0].value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_keeps_best_within_window_and_expires_it() {
        let mut f = WindowedFilter::<u64, u64>::max(10);
        assert_eq!(f.best(), None);
        assert_eq!(f.update(0, 100), 100);
        // Lower samples do not replace the max while it is in the window.
        for t in 1..=10 {
            assert_eq!(f.update(t, 50 + t), 100, "round {t}");
        }
        // Round 11: the max from round 0 is 11 rounds old, out of a 10-round
        // window; the best remaining choice takes over.
        let b = f.update(11, 40);
        assert!(b < 100, "expired max still reported: {b}");
        assert!(b >= 50, "replacement should be a recent sample, got {b}");
    }

    #[test]
    fn max_replacement_is_max_of_remaining_window() {
        let mut f = WindowedFilter::<u64, u64>::max(10);
        f.update(0, 100);
        f.update(3, 80); // after ¼ window: becomes second choice
        f.update(6, 70); // after ½ window: third choice
        f.update(8, 60);
        // At 11 the 100 expires; 80 (t = 3) is the best remaining.
        assert_eq!(f.update(11, 10), 80);
        // At 14 the 80 expires; the best in (4, 14] is 70.
        assert_eq!(f.update(14, 10), 70);
    }

    #[test]
    fn min_filter_over_time() {
        let ms = Duration::from_millis;
        let t0 = Instant::from_secs(1);
        let mut f = WindowedFilter::<Duration, Instant>::min(Duration::from_secs(10));
        f.update(t0, ms(40));
        assert_eq!(f.update(t0 + ms(500), ms(60)), ms(40));
        assert_eq!(f.update(t0 + ms(9_000), ms(55)), ms(40));
        // 40 ms is older than 10 s now; the newer choices take over.
        let b = f.update(t0 + ms(10_500), ms(70));
        assert!(b > ms(40), "expired minimum still reported: {b:?}");
        // A new minimum replaces everything at once.
        assert_eq!(f.update(t0 + ms(10_600), ms(30)), ms(30));
    }

    #[test]
    fn whole_window_expiry_resets() {
        let mut f = WindowedFilter::<u64, u64>::max(10);
        f.update(0, 100);
        f.update(1, 90);
        assert_eq!(f.update(50, 5), 5);
    }
}
