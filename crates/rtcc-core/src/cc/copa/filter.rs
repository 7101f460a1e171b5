//! A running minimum or maximum of RTT samples over a sliding time window.
//!
//! Copa needs three of them (NSDI 2018 §2.1 and §2.2): the standing RTT (min
//! over the last `srtt/2`), RTTmin (min over 10 s) and, for mode switching,
//! RTTmax (max over the last four RTTs). Each is a monotonic deque: a new
//! sample evicts every older sample it dominates (a smaller value for a
//! minimum, a larger one for a maximum), because such a sample can never be
//! the extremum of any window that also holds the newer one. The front is then
//! the extremum; it is dropped once it falls out of the window.
//!
//! The window length is passed with each update because Copa's windows are
//! measured in RTTs and move with `srtt`. A sample that expired under a short
//! window is not brought back if the window later grows; with windows that
//! change slowly (srtt is an EWMA) this loses little.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};

/// Which extremum the filter keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extremum {
    /// Running minimum.
    Min,
    /// Running maximum.
    Max,
}

/// Running extremum of `(time, value)` samples over a sliding window.
#[derive(Debug, Clone)]
pub(super) struct WindowedFilter {
    kind: Extremum,
    /// Samples in time order whose values are strictly monotonic (increasing
    /// for `Min`, decreasing for `Max`): the front is the extremum.
    samples: VecDeque<(Instant, Duration)>,
}

impl WindowedFilter {
    /// An empty filter.
    pub(super) fn new(kind: Extremum) -> Self {
        WindowedFilter {
            kind,
            samples: VecDeque::new(),
        }
    }

    /// Add the sample `value` taken at `now` and return the extremum over
    /// `[now − window, now]`. `now` must not go backwards.
    pub(super) fn update(&mut self, now: Instant, value: Duration, window: Duration) -> Duration {
        while let Some(&(_, v)) = self.samples.back() {
            let dominated = match self.kind {
                Extremum::Min => v >= value,
                Extremum::Max => v <= value,
            };
            if dominated {
                self.samples.pop_back();
            } else {
                break;
            }
        }
        self.samples.push_back((now, value));
        let start = now.saturating_sub(window);
        while let Some(&(t, _)) = self.samples.front() {
            // The newest sample (taken at `now`) is never older than `start`,
            // so the deque never empties here.
            if t < start {
                self.samples.pop_front();
            } else {
                break;
            }
        }
        self.samples.front().map_or(value, |&(_, v)| v)
    }

    /// The extremum over the window of the last update, if any sample was seen.
    pub(super) fn get(&self) -> Option<Duration> {
        self.samples.front().map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }
    fn at(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn min_over_window_forgets_old_samples() {
        let mut f = WindowedFilter::new(Extremum::Min);
        let w = ms(100);
        assert_eq!(f.update(at(0), ms(50), w), ms(50));
        assert_eq!(f.update(at(10), ms(70), w), ms(50));
        assert_eq!(f.update(at(50), ms(60), w), ms(50));
        // At 101 ms the 50 ms sample (taken at 0) has left the window; the
        // minimum of what remains (70 @ 10, 60 @ 50, 80 @ 101) is 60.
        assert_eq!(f.update(at(101), ms(80), w), ms(60));
        // 60 @ 50 leaves at 151; 80 remains.
        assert_eq!(f.update(at(152), ms(90), w), ms(80));
        assert_eq!(f.get(), Some(ms(80)));
    }

    #[test]
    fn max_over_window() {
        let mut f = WindowedFilter::new(Extremum::Max);
        let w = ms(100);
        assert_eq!(f.update(at(0), ms(50), w), ms(50));
        assert_eq!(f.update(at(10), ms(90), w), ms(90));
        assert_eq!(f.update(at(20), ms(60), w), ms(90));
        assert_eq!(f.update(at(111), ms(40), w), ms(60));
        assert_eq!(f.update(at(121), ms(40), w), ms(40));
    }

    #[test]
    fn zero_window_is_latest_sample() {
        let mut f = WindowedFilter::new(Extremum::Min);
        assert_eq!(f.update(at(0), ms(10), Duration::ZERO), ms(10));
        assert_eq!(f.update(at(1), ms(30), Duration::ZERO), ms(30));
    }
}
