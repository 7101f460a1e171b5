//! A propagation delay that changes during the run: a route change, as in the
//! robustness cases of delay-based congestion control (the one-way delay of
//! the path steps from, say, 20 ms to 80 ms at t = 60 s).
//!
//! A [`DelaySchedule`] is piecewise constant: step `i` holds `delay_i` from
//! `at_i` until `at_{i+1}`, the last step forever (no loop). The link applies
//! the delay in force at a packet's *departure* from its queue, the instant
//! the packet enters the new or the old route; deliveries never reorder, so a
//! packet that would overtake its predecessor after a fall of the delay is
//! held until that one has arrived (`Link::transmit`). A rise of the delay
//! simply leaves a gap in the deliveries.
//!
//! Departures come in non-decreasing time, so the link looks the delay up
//! with a cursor that only moves forward (`DelaySchedule::advance`): no
//! search and no allocation per packet.

use rtcc_core::{Duration, Instant};

use super::rate::{check_steps, ScheduleError};

/// A piecewise-constant one-way propagation delay (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelaySchedule {
    /// Step start offsets in ns, strictly increasing, first = 0.
    starts: Vec<u64>,
    /// Step delays in ns.
    delays: Vec<u64>,
}

impl DelaySchedule {
    /// A schedule from `(offset, delay)` steps: at least one, the first at
    /// offset zero, offsets strictly increasing (as rate schedules,
    /// [`ScheduleError`]).
    pub fn new(steps: Vec<(Duration, Duration)>) -> Result<Self, ScheduleError> {
        check_steps(&steps, None)?;
        Ok(DelaySchedule {
            starts: steps.iter().map(|s| s.0.as_nanos()).collect(),
            delays: steps.iter().map(|s| s.1.as_nanos()).collect(),
        })
    }

    /// The steps as `(offset, delay)`.
    pub fn steps(&self) -> impl Iterator<Item = (Duration, Duration)> + '_ {
        self.starts
            .iter()
            .zip(&self.delays)
            .map(|(&s, &d)| (Duration::from_nanos(s), Duration::from_nanos(d)))
    }

    /// The delay in force at `t`.
    pub fn delay_at(&self, t: Instant) -> Duration {
        // starts[0] = 0 <= t, so the partition point is >= 1.
        let i = self.starts.partition_point(|&s| s <= t.as_nanos()) - 1;
        Duration::from_nanos(self.delays[i])
    }

    /// The delay of the first step, in force from the start of the run.
    pub fn initial(&self) -> Duration {
        Duration::from_nanos(self.delays[0])
    }

    /// The least delay of any step: the base one-way delay of the link over
    /// the run (what a base-RTT estimate converges to on an idle path).
    pub fn min(&self) -> Duration {
        Duration::from_nanos(self.delays.iter().copied().min().unwrap_or(0))
    }

    /// The delay in force at `t` ns, moving `cursor` (a step index, 0 at
    /// first) forward to the step containing `t`. `t` must not decrease
    /// between calls with the same cursor.
    #[inline]
    pub(crate) fn advance(&self, cursor: &mut usize, t: u64) -> u64 {
        while self.starts.get(*cursor + 1).is_some_and(|&next| next <= t) {
            *cursor += 1;
        }
        self.delays.get(*cursor).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn validation_names_the_offending_step() {
        assert_eq!(DelaySchedule::new(vec![]), Err(ScheduleError::Empty));
        assert_eq!(
            DelaySchedule::new(vec![(ms(5), ms(20))]),
            Err(ScheduleError::FirstNotAtZero(ms(5)))
        );
        let e = DelaySchedule::new(vec![(ms(0), ms(20)), (ms(60), ms(80)), (ms(60), ms(40))])
            .unwrap_err();
        assert!(
            matches!(e, ScheduleError::NotSorted { index: 2, .. }),
            "{e}"
        );
    }

    #[test]
    fn lookups_by_search_and_by_cursor_agree() {
        let s =
            DelaySchedule::new(vec![(ms(0), ms(20)), (ms(60), ms(80)), (ms(90), ms(10))]).unwrap();
        assert_eq!(s.initial(), ms(20));
        assert_eq!(s.min(), ms(10));
        let mut cursor = 0;
        for t in [
            0u64,
            59_999_999,
            60_000_000,
            75_000_000,
            90_000_000,
            500_000_000,
        ] {
            let by_search = s.delay_at(Instant::from_nanos(t));
            assert_eq!(
                s.advance(&mut cursor, t),
                by_search.as_nanos(),
                "t = {t} ns"
            );
        }
        assert_eq!(s.delay_at(Instant::from_millis(59)), ms(20));
        assert_eq!(s.delay_at(Instant::from_millis(60)), ms(80));
        assert_eq!(s.delay_at(Instant::from_millis(1000)), ms(10));
        // A cursor jumps several steps at once after a long idle gap.
        let mut fresh = 0;
        assert_eq!(s.advance(&mut fresh, 95_000_000), 10_000_000);
        assert_eq!(fresh, 2);
    }
}
