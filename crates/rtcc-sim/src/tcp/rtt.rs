//! The retransmission timeout of RFC 6298 §2 and §5: SRTT/RTTVAR smoothing,
//! the RTO bounds and exponential backoff. Karn's rule (§3: no samples from
//! retransmitted segments) is applied by the sender, which decides what a
//! sample is.

use rtcc_core::Duration;

/// RFC 6298 §2 estimator with exponential backoff (§5.5).
///
/// Arithmetic is in integer nanoseconds; the gains α = 1/8 and β = 1/4 are
/// applied as `(7·SRTT + R)/8` and `(3·RTTVAR + |SRTT − R|)/4`, truncating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    /// RTO before backoff: RFC 6298 (2.1) initial value or (2.2)/(2.3) result,
    /// already clamped to the bounds.
    base_rto: Duration,
    /// Number of consecutive backoffs (RFC 6298 (5.5)); cleared by a new sample.
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
    granularity: Duration,
}

/// RFC 6298 §2: K = 4.
const K: u64 = 4;

impl RttEstimator {
    /// An estimator with no samples: RTO = `initial_rto` (RFC 6298 (2.1)).
    pub fn new(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        granularity: Duration,
    ) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            base_rto: initial_rto.min(max_rto),
            backoff: 0,
            min_rto,
            max_rto,
            granularity,
        }
    }

    /// Feeds one RTT measurement `r` (RFC 6298 (2.2), (2.3)) and clears any
    /// backoff: a sample from a non-retransmitted segment ends Karn's
    /// "keep the backed-off RTO" period (RFC 6298 §5, note after (5.7)).
    pub fn on_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                // RFC 6298 (2.2): SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // RFC 6298 (2.3), RTTVAR first (it uses the old SRTT):
                // RTTVAR <- (1 - beta)·RTTVAR + beta·|SRTT - R'|, beta = 1/4
                let diff = if srtt >= r { srtt - r } else { r - srtt };
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                // SRTT <- (1 - alpha)·SRTT + alpha·R', alpha = 1/8
                self.srtt = Some((srtt * 7 + r) / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        // RFC 6298 (2.2)/(2.3): RTO <- SRTT + max(G, K·RTTVAR)
        let rto = srtt + self.granularity.max(self.rttvar * K);
        // RFC 6298 (2.4) lower bound, (2.5) upper bound.
        self.base_rto = rto.max(self.min_rto).min(self.max_rto);
        self.backoff = 0;
    }

    /// RFC 6298 (5.5): the timer expired, double the RTO (up to the maximum).
    pub fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// The RTO to arm the timer with now: the base RTO doubled once per
    /// backoff, capped at the maximum (RFC 6298 (2.5), (5.5)).
    pub fn rto(&self) -> Duration {
        let mut rto = self.base_rto;
        for _ in 0..self.backoff {
            if rto >= self.max_rto {
                break;
            }
            rto = rto * 2;
        }
        rto.min(self.max_rto)
    }

    /// Smoothed RTT, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation (zero before the first sample).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// Consecutive backoffs since the last sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn est() -> RttEstimator {
        RttEstimator::new(Duration::from_secs(1), Duration::from_secs(1), Duration::from_secs(60), ms(1))
    }

    #[test]
    fn initial_rto_before_samples() {
        let e = est();
        assert_eq!(e.rto(), Duration::from_secs(1));
        assert_eq!(e.srtt(), None);
    }

    /// Exact values of RFC 6298 (2.2) and (2.3) for samples 400, 800, 200 ms,
    /// with a 100 ms minimum so the formula, not the floor, decides.
    #[test]
    fn rfc6298_smoothing_exact_values() {
        let mut e = RttEstimator::new(Duration::from_secs(1), ms(100), Duration::from_secs(60), ms(1));
        e.on_sample(ms(400));
        // SRTT = 400, RTTVAR = 200, RTO = 400 + 4·200 = 1200.
        assert_eq!(e.srtt(), Some(ms(400)));
        assert_eq!(e.rttvar(), ms(200));
        assert_eq!(e.rto(), ms(1200));
        e.on_sample(ms(800));
        // RTTVAR = 3/4·200 + 1/4·|400 − 800| = 150 + 100 = 250
        // SRTT = 7/8·400 + 1/8·800 = 350 + 100 = 450; RTO = 450 + 1000 = 1450.
        assert_eq!(e.rttvar(), ms(250));
        assert_eq!(e.srtt(), Some(ms(450)));
        assert_eq!(e.rto(), ms(1450));
        e.on_sample(ms(200));
        // RTTVAR = 187.5 + 62.5 = 250; SRTT = 393.75 + 25 = 418.75; RTO = 1418.75.
        assert_eq!(e.rttvar(), ms(250));
        assert_eq!(e.srtt(), Some(Duration::from_micros(418_750)));
        assert_eq!(e.rto(), Duration::from_micros(1_418_750));
    }

    #[test]
    fn min_rto_and_granularity_apply() {
        let mut e = est();
        e.on_sample(ms(100));
        // 100 + 4·50 = 300 ms < 1 s floor (RFC 6298 (2.4)).
        assert_eq!(e.rto(), Duration::from_secs(1));
        // Granularity dominates when the variance is tiny.
        let mut g = RttEstimator::new(Duration::from_secs(1), Duration::ZERO, Duration::from_secs(60), ms(10));
        g.on_sample(Duration::from_micros(4));
        // SRTT 4 us, RTTVAR 2 us, K·RTTVAR = 8 us < G = 10 ms.
        assert_eq!(g.rto(), Duration::from_micros(10_004));
    }

    #[test]
    fn backoff_doubles_up_to_max_and_sample_resets() {
        let mut e = est();
        e.on_sample(ms(400)); // RTO 1.2 s
        e.back_off();
        assert_eq!(e.rto(), ms(2400));
        e.back_off();
        assert_eq!(e.rto(), ms(4800));
        for _ in 0..10 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.on_sample(ms(400));
        assert_eq!(e.backoff(), 0);
        assert!(e.rto() < ms(2400));
    }
}
