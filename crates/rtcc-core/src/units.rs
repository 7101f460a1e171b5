//! Physical units as types: [`Bitrate`], [`Bytes`], [`Probability`].
//!
//! Arithmetic between them carries the physics: `Bitrate × Duration → Bytes`,
//! `Bytes / Duration → Bitrate`, `Bytes / Bitrate → Duration`. Prefixes are SI
//! (k = 1000), as in networking practice: "2.5Mbps" is 2 500 000 bit/s and
//! "30KB" is 30 000 bytes.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};
use std::str::FromStr;

use crate::time::{trim_float, Duration};

/// Why a unit string could not be parsed. Names the quantity, the text and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {quantity} \"{text}\": {reason}")]
#[non_exhaustive]
pub struct ParseError {
    /// The kind of quantity ("bitrate", "duration", "size", ...).
    pub quantity: &'static str,
    /// The text that was given.
    pub text: String,
    /// What was wrong with it.
    pub reason: String,
}

impl ParseError {
    /// A parse error for `quantity` on input `text`.
    pub fn new(quantity: &'static str, text: &str, reason: impl Into<String>) -> Self {
        ParseError {
            quantity,
            text: text.to_string(),
            reason: reason.into(),
        }
    }
}

/// Splits `"2.5Mbps"` into `(2.5, "Mbps")`. Rejects negative, non-finite and unit-less input.
pub(crate) fn split_number_unit<'a>(
    s: &'a str,
    quantity: &'static str,
    example: &str,
) -> Result<(f64, &'a str), ParseError> {
    let t = s.trim();
    let mut split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    // An exponent (`1e6bps`, `2.5E-3s`) belongs to the number, so that an
    // out-of-range value is reported as such and not as a bad unit.
    let rest = &t.as_bytes()[split..];
    if split > 0 && matches!(rest.first(), Some(b'e' | b'E')) {
        let mut k = 1;
        if matches!(rest.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let digits = rest[k..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 {
            split += k + digits;
        }
    }
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if num.is_empty() {
        return Err(ParseError::new(
            quantity,
            s,
            format!("expected a number with a unit, e.g. \"{example}\""),
        ));
    }
    let value: f64 = num.parse().map_err(|_| {
        ParseError::new(
            quantity,
            s,
            format!("\"{num}\" is not a number (e.g. \"{example}\")"),
        )
    })?;
    if !value.is_finite() {
        return Err(ParseError::new(
            quantity,
            s,
            "is out of range (the number must be at most 1e15)",
        ));
    }
    if value < 0.0 {
        return Err(ParseError::new(quantity, s, "must not be negative"));
    }
    if value > 1e15 {
        return Err(ParseError::new(
            quantity,
            s,
            "is out of range (the number must be at most 1e15)",
        ));
    }
    if unit.is_empty() {
        return Err(ParseError::new(
            quantity,
            s,
            format!("a unit is required, e.g. \"{example}\""),
        ));
    }
    Ok((value, unit))
}

/// A data rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bitrate(u64);

impl Bitrate {
    /// No rate.
    pub const ZERO: Bitrate = Bitrate(0);
    /// Effectively unlimited.
    pub const MAX: Bitrate = Bitrate(u64::MAX);

    /// `bps` bits per second.
    pub const fn bps(bps: u64) -> Self {
        Bitrate(bps)
    }
    /// `kbps` kilobits (1000 bits) per second.
    pub const fn kbps(kbps: u64) -> Self {
        Bitrate(kbps * 1_000)
    }
    /// `mbps` megabits per second.
    pub const fn mbps(mbps: u64) -> Self {
        Bitrate(mbps * 1_000_000)
    }
    /// From a float in bits per second; negative or non-finite values become zero.
    pub fn from_bps_f64(bps: f64) -> Self {
        if bps.is_finite() && bps > 0.0 {
            Bitrate(bps.min(u64::MAX as f64).round() as u64)
        } else {
            Bitrate(0)
        }
    }
    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    /// Bits per second as a float.
    pub fn as_bps_f64(self) -> f64 {
        self.0 as f64
    }
    /// Kilobits per second as a float (for reports).
    pub fn as_kbps_f64(self) -> f64 {
        self.0 as f64 * 1e-3
    }
    /// Megabits per second as a float (for reports).
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// True if zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// Scale by a non-negative factor.
    pub fn mul_f64(self, k: f64) -> Bitrate {
        Bitrate::from_bps_f64(self.0 as f64 * k)
    }
    /// Clamp into `[lo, hi]`.
    pub fn clamp(self, lo: Bitrate, hi: Bitrate) -> Bitrate {
        Bitrate(self.0.clamp(lo.0, hi.0.max(lo.0)))
    }
    /// The smaller of two rates.
    pub fn min(self, other: Bitrate) -> Bitrate {
        Bitrate(self.0.min(other.0))
    }
    /// The larger of two rates.
    pub fn max(self, other: Bitrate) -> Bitrate {
        Bitrate(self.0.max(other.0))
    }
    /// Time needed to transmit `bytes` at this rate; `Duration::MAX` at zero rate.
    pub fn transmit_time(self, bytes: Bytes) -> Duration {
        bytes / self
    }
}

/// `rate × time → bytes` (rounded down to whole bytes).
impl Mul<Duration> for Bitrate {
    type Output = Bytes;
    fn mul(self, d: Duration) -> Bytes {
        Bytes(((self.0 as u128 * d.as_nanos() as u128) / 8_000_000_000u128) as u64)
    }
}
impl Add for Bitrate {
    type Output = Bitrate;
    fn add(self, rhs: Bitrate) -> Bitrate {
        Bitrate(self.0.saturating_add(rhs.0))
    }
}
impl Sub for Bitrate {
    type Output = Bitrate;
    fn sub(self, rhs: Bitrate) -> Bitrate {
        Bitrate(self.0.saturating_sub(rhs.0))
    }
}

impl fmt::Display for Bitrate {
    /// `2.5Mbps`, `800kbps`, `1Gbps`, `64bps`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if self.0 >= 1_000_000_000 {
            write!(f, "{}Gbps", trim_float(b / 1e9))
        } else if self.0 >= 1_000_000 {
            write!(f, "{}Mbps", trim_float(b / 1e6))
        } else if self.0 >= 1_000 {
            write!(f, "{}kbps", trim_float(b / 1e3))
        } else {
            write!(f, "{}bps", self.0)
        }
    }
}
impl fmt::Debug for Bitrate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl FromStr for Bitrate {
    type Err = ParseError;
    /// Parses `"2.5Mbps"`, `"800kbps"` (also `Kbps`), `"1Gbps"`, `"64bps"`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let (value, unit) = split_number_unit(s, "bitrate", "2.5Mbps")?;
        let scale = match unit {
            "bps" => 1.0,
            "kbps" | "Kbps" => 1e3,
            "Mbps" | "mbps" => 1e6,
            "Gbps" | "gbps" => 1e9,
            _ => {
                return Err(ParseError::new(
                    "bitrate",
                    s,
                    "unit must be one of bps, kbps, Mbps, Gbps (e.g. \"2.5Mbps\")",
                ))
            }
        };
        let bps = value * scale;
        if bps >= u64::MAX as f64 {
            return Err(ParseError::new(
                "bitrate",
                s,
                "is out of range (at most 1.8e19 bps)",
            ));
        }
        Ok(Bitrate::from_bps_f64(bps))
    }
}

/// A quantity of data in bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(u64);

impl Bytes {
    /// No data.
    pub const ZERO: Bytes = Bytes(0);
    /// Effectively unlimited.
    pub const MAX: Bytes = Bytes(u64::MAX);

    /// `n` bytes.
    pub const fn new(n: u64) -> Self {
        Bytes(n)
    }
    /// Number of bytes.
    pub const fn get(self) -> u64 {
        self.0
    }
    /// Number of bytes as a float.
    pub fn as_f64(self) -> f64 {
        self.0 as f64
    }
    /// Number of bits.
    pub const fn bits(self) -> u64 {
        self.0 * 8
    }
    /// True if zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// `self - rhs`, clamped at zero.
    pub const fn saturating_sub(self, rhs: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(rhs.0))
    }
    /// Scale by a non-negative factor (rounded).
    pub fn mul_f64(self, k: f64) -> Bytes {
        let v = self.0 as f64 * k;
        if v.is_finite() && v > 0.0 {
            Bytes(v.round() as u64)
        } else {
            Bytes(0)
        }
    }
    /// The smaller of two sizes.
    pub fn min(self, other: Bytes) -> Bytes {
        Bytes(self.0.min(other.0))
    }
    /// The larger of two sizes.
    pub fn max(self, other: Bytes) -> Bytes {
        Bytes(self.0.max(other.0))
    }
}

/// `bytes / time → rate`; zero time gives `Bitrate::MAX` unless no bytes.
impl Div<Duration> for Bytes {
    type Output = Bitrate;
    fn div(self, d: Duration) -> Bitrate {
        if d.is_zero() {
            return if self.0 == 0 {
                Bitrate::ZERO
            } else {
                Bitrate::MAX
            };
        }
        Bitrate(
            ((self.0 as u128 * 8_000_000_000u128) / d.as_nanos() as u128).min(u64::MAX as u128)
                as u64,
        )
    }
}
/// `bytes / rate → time` (rounded up to the nanosecond); zero rate gives `Duration::MAX`.
impl Div<Bitrate> for Bytes {
    type Output = Duration;
    fn div(self, r: Bitrate) -> Duration {
        if r.is_zero() {
            return if self.0 == 0 {
                Duration::ZERO
            } else {
                Duration::MAX
            };
        }
        let num = self.0 as u128 * 8_000_000_000u128;
        let d = num.div_ceil(r.0 as u128);
        Duration::from_nanos(d.min(u64::MAX as u128) as u64)
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, rhs: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, rhs: Bytes) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    fn sub(self, rhs: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(rhs.0))
    }
}
impl SubAssign for Bytes {
    fn sub_assign(&mut self, rhs: Bytes) {
        self.0 = self.0.saturating_sub(rhs.0);
    }
}
impl Mul<u64> for Bytes {
    type Output = Bytes;
    fn mul(self, rhs: u64) -> Bytes {
        Bytes(self.0.saturating_mul(rhs))
    }
}
impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for Bytes {
    /// `1500B`, `30KB`, `1.5MB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if self.0 >= 1_000_000 && self.0 % 1000 == 0 {
            write!(f, "{}MB", trim_float(b / 1e6))
        } else if self.0 >= 1_000 && self.0 % 1000 == 0 {
            write!(f, "{}KB", trim_float(b / 1e3))
        } else {
            write!(f, "{}B", self.0)
        }
    }
}
impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl FromStr for Bytes {
    type Err = ParseError;
    /// Parses `"1500B"`, `"30KB"`, `"1.5MB"`, `"1GB"`, and binary `"64KiB"`, `"1MiB"`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let (value, unit) = split_number_unit(s, "size", "30KB")?;
        let scale = match unit {
            "B" => 1.0,
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            _ => {
                return Err(ParseError::new(
                    "size",
                    s,
                    "unit must be one of B, KB, MB, GB, KiB, MiB (e.g. \"30KB\")",
                ))
            }
        };
        let bytes = value * scale;
        if bytes >= u64::MAX as f64 {
            return Err(ParseError::new(
                "size",
                s,
                "is out of range (at most 1.8e19 B)",
            ));
        }
        Ok(Bytes(bytes.round() as u64))
    }
}

/// A probability in `[0, 1]`.
#[derive(Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Probability(f64);

impl Probability {
    /// Never.
    pub const ZERO: Probability = Probability(0.0);
    /// Always.
    pub const ONE: Probability = Probability(1.0);

    /// A probability, or an error if `p` is outside `[0, 1]` or not finite.
    pub fn new(p: f64) -> Result<Self, ParseError> {
        if p.is_finite() && (0.0..=1.0).contains(&p) {
            Ok(Probability(p))
        } else {
            Err(ParseError::new(
                "probability",
                &p.to_string(),
                "must be within [0, 1]",
            ))
        }
    }
    /// Clamps `p` into `[0, 1]` (NaN becomes 0).
    pub fn saturating(p: f64) -> Self {
        if p.is_nan() {
            Probability(0.0)
        } else {
            Probability(p.clamp(0.0, 1.0))
        }
    }
    /// The value in `[0, 1]`.
    pub fn get(self) -> f64 {
        self.0
    }
}
impl fmt::Debug for Probability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl FromStr for Probability {
    type Err = ParseError;
    /// Parses `"0.01"` or `"1%"`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let t = s.trim();
        let (num, scale) = match t.strip_suffix('%') {
            Some(n) => (n.trim(), 0.01),
            None => (t, 1.0),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| ParseError::new("probability", s, "expected e.g. \"0.01\" or \"1%\""))?;
        Probability::new(v * scale)
            .map_err(|_| ParseError::new("probability", s, "must be within [0, 1] (0%..100%)"))
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    use super::{Bitrate, Bytes};
    macro_rules! string_serde {
        ($t:ty) => {
            impl serde::Serialize for $t {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.collect_str(self)
                }
            }
            impl<'de> serde::Deserialize<'de> for $t {
                fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    let s = String::deserialize(d)?;
                    s.parse().map_err(serde::de::Error::custom)
                }
            }
        };
    }
    string_serde!(Bitrate);
    string_serde!(Bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_are_part_of_the_number_and_overflow_is_named() {
        assert_eq!("1e6bps".parse::<Bitrate>().unwrap(), Bitrate::mbps(1));
        assert_eq!("2.5E3kbps".parse::<Bitrate>().unwrap(), Bitrate::kbps(2500));
        assert_eq!("1e3B".parse::<Bytes>().unwrap(), Bytes::new(1000));
        let e = "1e400Mbps".parse::<Bitrate>().unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = "1e14Gbps".parse::<Bitrate>().unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = "1e14GB".parse::<Bytes>().unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = "1e30s".parse::<crate::Duration>().unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        let e = "1000000000h"
            .parse::<crate::Duration>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("584 years"), "{e}");
        // A unit that starts with `e` is still a unit error.
        let e = "5eggs".parse::<Bitrate>().unwrap_err().to_string();
        assert!(e.contains("unit must be"), "{e}");
    }

    #[test]
    fn parses_bitrates() {
        assert_eq!("2.5Mbps".parse::<Bitrate>().unwrap(), Bitrate::kbps(2500));
        assert_eq!("800kbps".parse::<Bitrate>().unwrap(), Bitrate::kbps(800));
        assert_eq!("1000Kbps".parse::<Bitrate>().unwrap(), Bitrate::mbps(1));
        assert_eq!("1Gbps".parse::<Bitrate>().unwrap(), Bitrate::mbps(1000));
        assert_eq!("64 bps".parse::<Bitrate>().unwrap(), Bitrate::bps(64));
    }

    #[test]
    fn rejects_bad_bitrates() {
        for bad in ["3Mbs", "-1Mbps", "Mbps", "3", "fastMbps", "1..2Mbps"] {
            let e = bad.parse::<Bitrate>().unwrap_err();
            assert_eq!(e.quantity, "bitrate");
            assert!(e.to_string().contains(bad.trim()), "{e}");
        }
    }

    #[test]
    fn parses_sizes() {
        assert_eq!("30KB".parse::<Bytes>().unwrap(), Bytes::new(30_000));
        assert_eq!("1500B".parse::<Bytes>().unwrap(), Bytes::new(1500));
        assert_eq!("1.5MB".parse::<Bytes>().unwrap(), Bytes::new(1_500_000));
        assert_eq!("64KiB".parse::<Bytes>().unwrap(), Bytes::new(65_536));
        assert!("30kb".parse::<Bytes>().is_err());
    }

    #[test]
    fn physics() {
        let r = Bitrate::mbps(8);
        assert_eq!(r * Duration::from_millis(1), Bytes::new(1000));
        assert_eq!(Bytes::new(1000) / Duration::from_millis(1), r);
        assert_eq!(
            Bytes::new(1500) / Bitrate::mbps(12),
            Duration::from_millis(1)
        );
        assert_eq!(Bytes::new(1) / Bitrate::ZERO, Duration::MAX);
        assert_eq!(Bytes::new(1) / Duration::ZERO, Bitrate::MAX);
    }

    #[test]
    fn display_round_trips() {
        for r in [
            Bitrate::kbps(2500),
            Bitrate::kbps(800),
            Bitrate::mbps(1000),
            Bitrate::bps(64),
        ] {
            assert_eq!(r.to_string().parse::<Bitrate>().unwrap(), r);
        }
        for b in [Bytes::new(1500), Bytes::new(30_000), Bytes::new(1_500_000)] {
            assert_eq!(b.to_string().parse::<Bytes>().unwrap(), b);
        }
    }

    #[test]
    fn probability_bounds() {
        assert!(Probability::new(1.5).is_err());
        assert!(Probability::new(f64::NAN).is_err());
        assert!(("1%".parse::<Probability>().unwrap().get() - 0.01).abs() < 1e-12);
        assert!("150%".parse::<Probability>().is_err());
    }
}
