//! Injected time: [`Instant`] and [`Duration`] as integer nanoseconds.
//!
//! The core never reads a clock. Every input carries `now`, an [`Instant`]
//! measured from an arbitrary origin chosen by the driver (the simulator starts
//! at zero; rtcc-net maps its monotonic clock once, at start-up).

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};
use std::str::FromStr;

use crate::units::ParseError;

/// A point in time, in nanoseconds from the driver's origin.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

/// A non-negative span of time in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

impl Instant {
    /// The driver's origin.
    pub const ZERO: Instant = Instant(0);
    /// Later than any instant a run can reach; used as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `ns` nanoseconds after the origin.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// An instant `us` microseconds after the origin.
    pub const fn from_micros(us: u64) -> Self {
        Instant(us * 1_000)
    }
    /// An instant `ms` milliseconds after the origin.
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms * 1_000_000)
    }
    /// An instant `s` seconds after the origin.
    pub const fn from_secs(s: u64) -> Self {
        Instant(s * 1_000_000_000)
    }
    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the origin, as a float (for reports).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Milliseconds since the origin, as a float (for reports).
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    /// `self - d`, clamped at the origin.
    pub fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
    /// Signed difference `self - other` in nanoseconds.
    pub fn signed_nanos_since(self, other: Instant) -> i64 {
        self.0 as i64 - other.0 as i64
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The largest representable span; used as "infinite".
    pub const MAX: Duration = Duration(u64::MAX);

    /// `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// `us` microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// From fractional seconds; negative or non-finite values become zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_finite() && s > 0.0 {
            Duration((s * 1e9).round() as u64)
        } else {
            Duration(0)
        }
    }
    /// From fractional milliseconds; negative or non-finite values become zero.
    pub fn from_millis_f64(ms: f64) -> Self {
        Self::from_secs_f64(ms * 1e-3)
    }
    /// Whole nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Whole microseconds.
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    /// Whole milliseconds.
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }
    /// Fractional seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Fractional milliseconds.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// True if this span is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// `self - rhs`, clamped at zero.
    pub const fn saturating_sub(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_sub(rhs.0))
    }
    /// Scale by a non-negative factor (rounded to the nanosecond).
    pub fn mul_f64(self, k: f64) -> Duration {
        Duration::from_secs_f64(self.as_secs_f64() * k)
    }
    /// The smaller of two spans.
    pub fn min(self, other: Duration) -> Duration {
        if self <= other {
            self
        } else {
            other
        }
    }
    /// The larger of two spans.
    pub fn max(self, other: Duration) -> Duration {
        if self >= other {
            self
        } else {
            other
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_sub(rhs.0))
    }
}
/// `later - earlier`; saturates at zero if `earlier` is in fact later.
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        Duration(self.0.saturating_sub(rhs.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, rhs: Duration) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_sub(rhs.0))
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, rhs: Duration) {
        self.0 = self.0.saturating_sub(rhs.0);
    }
}
impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, rhs: u64) -> Duration {
        Duration(self.0.saturating_mul(rhs))
    }
}
impl Div<u64> for Duration {
    type Output = Duration;
    fn div(self, rhs: u64) -> Duration {
        Duration(self.0 / rhs.max(1))
    }
}

impl fmt::Display for Duration {
    /// Prints with the largest unit that keeps the value readable: `1.5s`, `20ms`, `125us`, `7ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            write!(f, "0s")
        } else if ns % 1_000_000_000 == 0 {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns >= 1_000_000_000 {
            write!(f, "{}s", trim_float(ns as f64 / 1e9))
        } else if ns % 1_000_000 == 0 || ns >= 1_000_000 {
            write!(f, "{}ms", trim_float(ns as f64 / 1e6))
        } else if ns % 1_000 == 0 || ns >= 1_000 {
            write!(f, "{}us", trim_float(ns as f64 / 1e3))
        } else {
            write!(f, "{ns}ns")
        }
    }
}
impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Instant {
    /// Prints as seconds since the origin with microsecond precision: `t=12.345678s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:.6}s", self.as_secs_f64())
    }
}
impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

pub(crate) fn trim_float(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

impl FromStr for Duration {
    type Err = ParseError;
    /// Parses `"100ms"`, `"1.5s"`, `"250us"`, `"10ns"`, `"2min"`. A bare number is an error:
    /// the unit is always explicit.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let (value, unit) = crate::units::split_number_unit(s, "duration", "100ms")?;
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "min" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(ParseError::new(
                    "duration",
                    s,
                    "unit must be one of ns, us, ms, s, min, h",
                ))
            }
        };
        let secs = value * scale;
        // u64 nanoseconds: about 584 years.
        if secs * 1e9 >= u64::MAX as f64 {
            return Err(ParseError::new(
                "duration",
                s,
                "is out of range (at most 584 years)",
            ));
        }
        Ok(Duration::from_secs_f64(secs))
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    use super::Duration;
    impl serde::Serialize for Duration {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self)
        }
    }
    impl<'de> serde::Deserialize<'de> for Duration {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let s = String::deserialize(d)?;
            s.parse().map_err(serde::de::Error::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(
            "100ms".parse::<Duration>().unwrap(),
            Duration::from_millis(100)
        );
        assert_eq!(
            "1.5s".parse::<Duration>().unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            "250us".parse::<Duration>().unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(" 2 s ".parse::<Duration>().unwrap(), Duration::from_secs(2));
        assert_eq!(
            "2min".parse::<Duration>().unwrap(),
            Duration::from_secs(120)
        );
    }

    #[test]
    fn rejects_bad_durations() {
        for bad in ["-5ms", "5", "ms", "5 parsecs", "", "nanms", "1e400s"] {
            let err = bad.parse::<Duration>().unwrap_err();
            assert!(err.to_string().contains("duration"), "{bad}: {err}");
        }
    }

    #[test]
    fn display_round_trips() {
        for d in [
            Duration::from_millis(20),
            Duration::from_secs(3),
            Duration::from_micros(125),
            Duration::from_millis(1500),
            Duration::from_nanos(7),
        ] {
            assert_eq!(d.to_string().parse::<Duration>().unwrap(), d, "{d}");
        }
        assert_eq!(Duration::from_millis(1500).to_string(), "1.5s");
    }

    #[test]
    fn instant_arithmetic_saturates() {
        let t = Instant::from_millis(10);
        assert_eq!(t + Duration::from_millis(5), Instant::from_millis(15));
        assert_eq!(Instant::from_millis(5) - t, Duration::ZERO);
        assert_eq!(t - Instant::from_millis(4), Duration::from_millis(6));
        assert_eq!(t.signed_nanos_since(Instant::from_millis(12)), -2_000_000);
    }
}
