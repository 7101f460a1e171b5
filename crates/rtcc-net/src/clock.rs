//! The one place where real time becomes core time (DESIGN §3, §5).
//!
//! The sans-IO core counts [`Instant`]s in nanoseconds from an arbitrary origin.
//! A [`Clock`] fixes that origin at its creation: core time is the monotonic
//! time elapsed since then. It also remembers the wall-clock time of the origin
//! so that instants can be written as NTP timestamps (RFC 3550 §4) — sender
//! reports and capture times carried in packets — and read back on another
//! process's clock. Two processes on one host agree on NTP time to within the
//! host clock's resolution; across hosts they agree as well as NTP keeps the
//! hosts' wall clocks in step.

use std::time::{SystemTime, UNIX_EPOCH};

use rtcc_core::{Duration, Instant};

/// Seconds from the NTP epoch (1900-01-01) to the Unix epoch (1970-01-01),
/// RFC 868 / RFC 5905 §6.
const NTP_UNIX_OFFSET_SECS: u64 = 2_208_988_800;

/// Maps the host's monotonic clock to core [`Instant`]s, and core instants to
/// 64-bit NTP timestamps.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: std::time::Instant,
    /// NTP time of the origin, in nanoseconds since 1900.
    origin_ntp_nanos: u128,
}

impl Clock {
    /// A clock whose core time zero is now.
    #[expect(
        clippy::disallowed_methods,
        reason = "the single mapping of real time to core time (DESIGN §5)"
    )]
    pub fn start() -> Clock {
        let origin = std::time::Instant::now();
        // A wall clock set before 1970 is treated as the epoch: NTP times are
        // then only consistent within this host, which loopback runs need.
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Clock {
            origin,
            origin_ntp_nanos: (u128::from(NTP_UNIX_OFFSET_SECS) * 1_000_000_000) + unix.as_nanos(),
        }
    }

    /// Core time now.
    #[expect(
        clippy::disallowed_methods,
        reason = "the single mapping of real time to core time (DESIGN §5)"
    )]
    pub fn now(&self) -> Instant {
        self.instant_of(std::time::Instant::now())
    }

    /// Core time of a monotonic instant (zero if it is before the origin).
    pub fn instant_of(&self, t: std::time::Instant) -> Instant {
        let ns = t.saturating_duration_since(self.origin).as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// The monotonic instant of a core instant, for timers (`tokio::time::sleep_until`).
    pub fn to_std(&self, t: Instant) -> std::time::Instant {
        self.origin + std::time::Duration::from_nanos(t.as_nanos())
    }

    /// A core instant as a 64-bit NTP timestamp (32.32 fixed point seconds
    /// since 1900, RFC 3550 §4).
    pub fn ntp_of(&self, t: Instant) -> u64 {
        let ns = self.origin_ntp_nanos + u128::from(t.as_nanos());
        let secs = ns / 1_000_000_000;
        let frac = ((ns % 1_000_000_000) << 32) / 1_000_000_000;
        // NTP seconds wrap in 2036 (era 1): keep the low 32 bits, as the format does.
        (((secs as u64) & 0xFFFF_FFFF) << 32) | frac as u64
    }

    /// A core instant as nanoseconds since the Unix epoch (a packet
    /// capture's timestamp, `crate::capture`).
    pub fn unix_nanos_of(&self, t: Instant) -> u64 {
        let ns = (self.origin_ntp_nanos + u128::from(t.as_nanos()))
            .saturating_sub(u128::from(NTP_UNIX_OFFSET_SECS) * 1_000_000_000);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// The core instant of a 64-bit NTP timestamp written by [`Clock::ntp_of`],
    /// possibly by another process. Times before this clock's origin map to
    /// zero; the era ambiguity is resolved towards the origin's era.
    pub fn instant_of_ntp(&self, ntp: u64) -> Instant {
        let secs = u128::from(ntp >> 32);
        let frac = u128::from(ntp & 0xFFFF_FFFF);
        let origin_secs = self.origin_ntp_nanos / 1_000_000_000;
        let era_base = origin_secs & !0xFFFF_FFFF;
        let ns = (era_base + secs) * 1_000_000_000 + ((frac * 1_000_000_000) >> 32);
        let since = ns.saturating_sub(self.origin_ntp_nanos);
        Instant::from_nanos(u64::try_from(since).unwrap_or(u64::MAX))
    }

    /// The time since a core instant.
    pub fn elapsed(&self, since: Instant) -> Duration {
        self.now().saturating_duration_since(since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_time_starts_near_zero_and_is_monotonic() {
        let c = Clock::start();
        let a = c.now();
        let b = c.now();
        assert!(a <= b);
        assert!(a < Instant::from_secs(1));
    }

    #[test]
    fn std_instants_round_trip() {
        let c = Clock::start();
        let t = Instant::from_micros(1_234_567);
        assert_eq!(c.instant_of(c.to_std(t)), t);
    }

    #[test]
    fn ntp_round_trips_to_within_a_nanosecond() {
        let c = Clock::start();
        for t in [0, 1, 999_999_999, 5_000_000_123, 86_400_000_000_007] {
            let t = Instant::from_nanos(t);
            let back = c.instant_of_ntp(c.ntp_of(t));
            let err = back.signed_nanos_since(t).abs();
            assert!(err <= 1, "{t}: {back} ({err} ns)");
        }
    }

    #[test]
    fn ntp_fraction_is_a_binary_fraction_of_a_second() {
        let c = Clock::start();
        let a = c.ntp_of(Instant::ZERO);
        let b = c.ntp_of(Instant::from_millis(500));
        // Half a second is 2^31 in the fraction (mod carry into the seconds).
        let diff = b.wrapping_sub(a);
        assert!((diff as i64 - (1i64 << 31)).abs() <= 2, "{diff:#x}");
    }

    #[test]
    fn two_clocks_on_one_host_agree_on_ntp_time() {
        let a = Clock::start();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = Clock::start();
        // b's zero is about 20 ms into a's time.
        let b_zero_in_a = a.instant_of_ntp(b.ntp_of(Instant::ZERO));
        let ms = b_zero_in_a.as_nanos() as f64 / 1e6;
        assert!((15.0..200.0).contains(&ms), "{ms} ms");
    }
}
