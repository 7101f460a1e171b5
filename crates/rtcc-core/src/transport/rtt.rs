//! RTT estimation for the QUIC-like transport: RFC 9002 §5 ("Estimating the
//! Round-Trip Time") with the initial values of §6.2.2 and Appendix A.2/A.7.
//!
//! The estimator keeps the four quantities of §5: `latest_rtt`, `min_rtt`,
//! `smoothed_rtt` and `rttvar`. The handshake is treated as always confirmed,
//! so the peer's ack delay is always capped at `max_ack_delay` (§5.3).

use crate::time::{Duration, Instant};

/// RFC 9002 §6.2.2: "When no previous RTT is available, the initial RTT
/// SHOULD be set to 333 milliseconds." (`kInitialRtt`, Appendix A.2.)
pub const INITIAL_RTT: Duration = Duration::from_millis(333);

/// RFC 9002 §6.1.2 / Appendix A.2: `kGranularity`, the system timer
/// granularity; the RECOMMENDED value is 1 ms.
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// RFC 9000 §18.2: the default `max_ack_delay` transport parameter, 25 ms.
pub const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);

/// The RTT estimator of RFC 9002 §5.
///
/// Feed it one sample per ACK frame that newly acknowledges its largest packet
/// number (the rule of §5.1 is applied by the caller, see
/// [`super::LossDetector`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RttEstimator {
    /// `latest_rtt` (§5.1); zero before the first sample (Appendix A.3).
    latest_rtt: Duration,
    /// `min_rtt` (§5.2); zero before the first sample (Appendix A.3).
    min_rtt: Duration,
    /// `smoothed_rtt` (§5.3).
    smoothed_rtt: Duration,
    /// `rttvar` (§5.3).
    rttvar: Duration,
    /// Instant of the first sample, `None` before it (`first_rtt_sample`, A.3).
    first_sample: Option<Instant>,
}

impl Default for RttEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl RttEstimator {
    /// An estimator with no sample yet: `smoothed_rtt = kInitialRtt` and
    /// `rttvar = kInitialRtt / 2` (RFC 9002 §5.3 and Appendix A.4).
    pub fn new() -> Self {
        Self {
            latest_rtt: Duration::ZERO,
            min_rtt: Duration::ZERO,
            smoothed_rtt: INITIAL_RTT,
            rttvar: INITIAL_RTT / 2,
            first_sample: None,
        }
    }

    /// Takes one RTT sample: `latest_rtt` is `now - time_sent` of the largest
    /// newly acknowledged packet (§5.1), `ack_delay` the ACK frame's ACK Delay
    /// field, `max_ack_delay` the peer's transport parameter.
    pub fn on_sample(
        &mut self,
        now: Instant,
        latest_rtt: Duration,
        ack_delay: Duration,
        max_ack_delay: Duration,
    ) {
        self.latest_rtt = latest_rtt;
        if self.first_sample.is_none() {
            // §5.3: on the first sample, min_rtt = latest_rtt,
            // smoothed_rtt = latest_rtt, rttvar = latest_rtt / 2. The ack delay
            // is not used for the first sample (§5.2: min_rtt is not adjusted).
            self.first_sample = Some(now);
            self.min_rtt = latest_rtt;
            self.smoothed_rtt = latest_rtt;
            self.rttvar = latest_rtt / 2;
            return;
        }
        // §5.2: min_rtt is the minimum of raw samples, without ack delay.
        self.min_rtt = self.min_rtt.min(latest_rtt);
        // §5.3: "after the handshake is confirmed, [the endpoint] MUST use the
        // lesser of the acknowledgment delay and the peer's max_ack_delay".
        let ack_delay = ack_delay.min(max_ack_delay);
        // §5.3: subtract the ack delay only if the result is not below min_rtt.
        let adjusted_rtt = if latest_rtt >= self.min_rtt + ack_delay {
            latest_rtt - ack_delay
        } else {
            latest_rtt
        };
        // §5.3: rttvar_sample = |smoothed_rtt - adjusted_rtt|;
        // rttvar = 3/4 · rttvar + 1/4 · rttvar_sample (uses the old smoothed_rtt);
        // smoothed_rtt = 7/8 · smoothed_rtt + 1/8 · adjusted_rtt.
        let rttvar_sample = if self.smoothed_rtt >= adjusted_rtt {
            self.smoothed_rtt - adjusted_rtt
        } else {
            adjusted_rtt - self.smoothed_rtt
        };
        self.rttvar = Duration::from_nanos(
            (3 * self.rttvar.as_nanos() as u128 + rttvar_sample.as_nanos() as u128) as u64 / 4,
        );
        self.smoothed_rtt = Duration::from_nanos(
            (7 * self.smoothed_rtt.as_nanos() as u128 + adjusted_rtt.as_nanos() as u128) as u64 / 8,
        );
    }

    /// `latest_rtt` (§5.1); zero before the first sample.
    pub fn latest_rtt(&self) -> Duration {
        self.latest_rtt
    }
    /// `min_rtt` (§5.2); zero before the first sample.
    pub fn min_rtt(&self) -> Duration {
        self.min_rtt
    }
    /// `smoothed_rtt` (§5.3); [`INITIAL_RTT`] before the first sample.
    pub fn smoothed_rtt(&self) -> Duration {
        self.smoothed_rtt
    }
    /// `rttvar` (§5.3); `INITIAL_RTT / 2` before the first sample.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
    /// Instant of the first RTT sample, `None` while there is none.
    pub fn first_sample_time(&self) -> Option<Instant> {
        self.first_sample
    }
    /// True once at least one sample has been taken.
    pub fn has_sample(&self) -> bool {
        self.first_sample.is_some()
    }

    /// The loss delay of the time threshold, RFC 9002 §6.1.2:
    /// `max(kTimeThreshold · max(smoothed_rtt, latest_rtt), kGranularity)` with
    /// `kTimeThreshold = 9/8`.
    pub fn loss_delay(&self) -> Duration {
        let base = self.smoothed_rtt.max(self.latest_rtt);
        // kTimeThreshold = 9/8 (§6.1.2), in integer nanoseconds.
        let scaled = Duration::from_nanos((base.as_nanos() as u128 * 9 / 8) as u64);
        scaled.max(GRANULARITY)
    }

    /// The probe timeout before backoff, RFC 9002 §6.2.1:
    /// `PTO = smoothed_rtt + max(4·rttvar, kGranularity) + max_ack_delay`.
    pub fn pto_base(&self, max_ack_delay: Duration) -> Duration {
        self.smoothed_rtt + (self.rttvar * 4).max(GRANULARITY) + max_ack_delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }
    fn at(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    #[test]
    fn initial_values_follow_6_2_2() {
        let r = RttEstimator::new();
        assert_eq!(r.smoothed_rtt(), ms(333));
        assert_eq!(r.rttvar(), Duration::from_micros(166_500));
        assert!(!r.has_sample());
        // PTO before any sample: 333 + max(4 · 166.5, 1) + 25 = 333 + 666 + 25 = 1024 ms.
        assert_eq!(r.pto_base(ms(25)), ms(1024));
    }

    #[test]
    fn first_sample_ignores_ack_delay() {
        let mut r = RttEstimator::new();
        r.on_sample(at(100), ms(100), ms(20), ms(25));
        // §5.3 first sample: smoothed = 100, rttvar = 50, min = 100.
        assert_eq!(r.smoothed_rtt(), ms(100));
        assert_eq!(r.rttvar(), ms(50));
        assert_eq!(r.min_rtt(), ms(100));
        assert_eq!(r.latest_rtt(), ms(100));
    }

    #[test]
    fn ack_delay_is_subtracted_when_it_stays_above_min_rtt() {
        let mut r = RttEstimator::new();
        r.on_sample(at(100), ms(100), ms(0), ms(25));
        // Second sample 140 ms with 20 ms ack delay: 140 >= 100 + 20, so
        // adjusted = 120. rttvar = 3/4·50 + 1/4·|100 - 120| = 37.5 + 5 = 42.5;
        // smoothed = 7/8·100 + 1/8·120 = 87.5 + 15 = 102.5.
        r.on_sample(at(300), ms(140), ms(20), ms(25));
        assert_eq!(r.smoothed_rtt(), Duration::from_micros(102_500));
        assert_eq!(r.rttvar(), Duration::from_micros(42_500));
        assert_eq!(r.min_rtt(), ms(100));
        assert_eq!(r.latest_rtt(), ms(140));
    }

    #[test]
    fn ack_delay_is_not_subtracted_below_min_rtt() {
        let mut r = RttEstimator::new();
        r.on_sample(at(100), ms(100), ms(0), ms(25));
        // 110 < 100 + 20: the ack delay would take the sample below min_rtt,
        // so adjusted = 110. rttvar = 37.5 + 2.5 = 40; smoothed = 87.5 + 13.75 = 101.25.
        r.on_sample(at(300), ms(110), ms(20), ms(25));
        assert_eq!(r.smoothed_rtt(), Duration::from_micros(101_250));
        assert_eq!(r.rttvar(), ms(40));
    }

    #[test]
    fn ack_delay_is_capped_at_max_ack_delay() {
        let mut r = RttEstimator::new();
        r.on_sample(at(100), ms(100), ms(0), ms(25));
        // ack delay 60 is capped to 25: 200 >= 125, adjusted = 175.
        // rttvar = 37.5 + 1/4·75 = 56.25; smoothed = 87.5 + 21.875 = 109.375.
        r.on_sample(at(400), ms(200), ms(60), ms(25));
        assert_eq!(r.smoothed_rtt(), Duration::from_micros(109_375));
        assert_eq!(r.rttvar(), Duration::from_micros(56_250));
    }

    #[test]
    fn min_rtt_uses_raw_samples() {
        let mut r = RttEstimator::new();
        r.on_sample(at(100), ms(100), ms(0), ms(25));
        r.on_sample(at(200), ms(80), ms(10), ms(25));
        // min_rtt takes the raw 80 ms; the ack delay is not subtracted
        // (80 < 80 + 10).
        assert_eq!(r.min_rtt(), ms(80));
    }

    #[test]
    fn loss_delay_is_nine_eighths_of_the_larger_rtt() {
        let mut r = RttEstimator::new();
        r.on_sample(at(100), ms(80), ms(0), ms(25));
        // smoothed = latest = 80: 9/8 · 80 = 90 ms.
        assert_eq!(r.loss_delay(), ms(90));
        r.on_sample(at(200), ms(160), ms(0), ms(25));
        // latest = 160 > smoothed = 70 + 20 = 90: 9/8 · 160 = 180 ms.
        assert_eq!(r.smoothed_rtt(), ms(90));
        assert_eq!(r.loss_delay(), ms(180));
        let mut tiny = RttEstimator::new();
        tiny.on_sample(at(1), Duration::from_micros(100), ms(0), ms(25));
        // 9/8 · 0.1 ms = 0.1125 ms < kGranularity: 1 ms.
        assert_eq!(tiny.loss_delay(), GRANULARITY);
    }
}
