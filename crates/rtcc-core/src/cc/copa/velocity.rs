//! Copa's velocity parameter `v` (NSDI 2018 §2.1, "Velocity parameter").
//!
//! Once per window (one RTT of packets) the sender compares the current cwnd
//! with the cwnd at the start of the window: larger is "up", smaller "down".
//! If the direction is the same as in the previous window `v` doubles, else it
//! resets to 1; but doubling starts only after the direction has stayed the
//! same for three RTTs, so that the 2.5-RTT oscillation of steady state keeps
//! `v = 1`.

/// Windows the direction must have held before `v` starts doubling (§2.1:
/// "start doubling v only after the direction has remained the same for three
/// RTTs").
pub const VELOCITY_HOLD_RTTS: u32 = 3;

/// Direction in which the cwnd moved over one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// cwnd grew.
    Up,
    /// cwnd shrank.
    Down,
}

/// The velocity state.
#[derive(Debug, Clone)]
pub(super) struct Velocity {
    v: f64,
    direction: Option<Direction>,
    /// Consecutive windows (this one included) that moved in `direction`.
    same_windows: u32,
}

impl Velocity {
    /// `v = 1`, no direction yet (§2.1: "v is initialized to 1").
    pub(super) fn new() -> Self {
        Velocity {
            v: 1.0,
            direction: None,
            same_windows: 0,
        }
    }

    /// The current velocity.
    pub(super) fn value(&self) -> f64 {
        self.v
    }

    /// The direction of the last completed window.
    pub(super) fn direction(&self) -> Option<Direction> {
        self.direction
    }

    /// Back to `v = 1` with no direction (after slow start).
    pub(super) fn reset(&mut self) {
        *self = Velocity::new();
    }

    /// A window ended with cwnd `cwnd_now`; it started at `cwnd_start` (both
    /// in packets). `v_cap` bounds the doubled value (see the design note,
    /// "Deviations").
    pub(super) fn on_window_end(&mut self, cwnd_now: f64, cwnd_start: f64, v_cap: f64) {
        let dir = if cwnd_now > cwnd_start {
            Some(Direction::Up)
        } else if cwnd_now < cwnd_start {
            Some(Direction::Down)
        } else {
            // No movement (cwnd pinned at a bound): neither direction held.
            None
        };
        match dir {
            None => self.reset(),
            Some(d) if self.direction == Some(d) => {
                self.same_windows = self.same_windows.saturating_add(1);
                if self.same_windows > VELOCITY_HOLD_RTTS {
                    // §2.1: "if the direction is the same as in the previous
                    // window, then double v".
                    self.v = (2.0 * self.v).min(v_cap.max(1.0));
                }
            }
            Some(d) => {
                // §2.1: "If not, then reset v to 1."
                self.direction = Some(d);
                self.same_windows = 1;
                self.v = 1.0;
            }
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::float_cmp,
    reason = "the values compared are exact: powers of two and small integers"
)]
mod tests {
    use super::*;

    #[test]
    fn doubles_after_three_windows_in_one_direction() {
        let mut v = Velocity::new();
        let cap = 1e9;
        // Windows 1..=3 up: direction held for three RTTs, v still 1.
        for w in 0..3 {
            v.on_window_end(11.0 + w as f64, 10.0 + w as f64, cap);
            assert_eq!(v.value(), 1.0, "window {}", w + 1);
        }
        // Windows 4, 5, 6: doubling.
        v.on_window_end(20.0, 19.0, cap);
        assert_eq!(v.value(), 2.0);
        v.on_window_end(21.0, 20.0, cap);
        assert_eq!(v.value(), 4.0);
        v.on_window_end(22.0, 21.0, cap);
        assert_eq!(v.value(), 8.0);
        assert_eq!(v.direction(), Some(Direction::Up));
    }

    #[test]
    fn direction_change_resets() {
        let mut v = Velocity::new();
        for w in 0..6 {
            v.on_window_end(11.0 + w as f64, 10.0 + w as f64, 1e9);
        }
        assert!(v.value() > 1.0);
        v.on_window_end(5.0, 6.0, 1e9);
        assert_eq!(v.value(), 1.0);
        assert_eq!(v.direction(), Some(Direction::Down));
        // And the count restarts: three more downs before doubling.
        for _ in 0..2 {
            v.on_window_end(4.0, 5.0, 1e9);
            assert_eq!(v.value(), 1.0);
        }
        v.on_window_end(3.0, 4.0, 1e9);
        assert_eq!(v.value(), 2.0);
    }

    #[test]
    fn no_movement_resets_and_cap_holds() {
        let mut v = Velocity::new();
        for w in 0..10 {
            v.on_window_end(11.0 + w as f64, 10.0 + w as f64, 4.0);
        }
        assert_eq!(v.value(), 4.0, "capped");
        v.on_window_end(5.0, 5.0, 4.0);
        assert_eq!(v.value(), 1.0);
        assert_eq!(v.direction(), None);
    }
}
