//! CUBIC window arithmetic, RFC 9438 §4, independent of the transport: the
//! cubic curve, its epoch, the Reno-friendly estimate, fast convergence and
//! the restart after a timeout. Window quantities are in segments (RFC 9438
//! uses SMSS; a QUIC sender uses its maximum datagram size), as the RFC's
//! equations are.
//!
//! The transport owns cwnd, ssthresh, slow start and loss recovery and calls
//! in here for the congestion-avoidance increase and on congestion events.
//! Two transports use it: the media/QUIC controller [`super::Cubic`] and the
//! simulator's TCP CUBIC (`rtcc-sim/src/tcp/cubic.rs`).
//!
//! By section of RFC 9438:
//!
//! - §4.1: growth is a function of the time since the start of the current
//!   congestion avoidance stage, not of ACK counts.
//! - §4.2: `W_cubic(t) = C·(t − K)³ + W_max` (eq. 1),
//!   `K = ∛((W_max − cwnd_epoch)/C)` (eq. 2); per ACK the target
//!   `W_cubic(t + RTT)` clamped to `[cwnd, 1.5·cwnd]` and
//!   `cwnd += (target − cwnd)/cwnd` per acknowledged segment.
//! - §4.3: `W_est` starts at `cwnd_epoch` and grows by
//!   `α_cubic · segments_acked / cwnd`, `α_cubic = 3(1 − β)/(1 + β)` (eq. 4),
//!   which becomes 1 once `W_est ≥ cwnd_prior`; while `W_cubic(t) < W_est`,
//!   `cwnd = W_est`.
//! - §4.4 / §4.5: concave (`cwnd < W_max`) and convex (`cwnd ≥ W_max`)
//!   regions both follow the §4.2 target; [`CubicRegion`] says which applied.
//! - §4.6: `cwnd_prior = cwnd` at a congestion event (the new ssthresh and
//!   cwnd are the transport's: TCP uses `flight_size·β`, QUIC `cwnd·β`).
//! - §4.7: fast convergence, `W_max = cwnd·(1 + β)/2` when `cwnd < W_max`.
//! - §4.8: after a timeout the next stage has `K = 0`, `W_max = cwnd_epoch`.
//! - §4.10: a stage that begins without any congestion event also has
//!   `K = 0`, `W_max = cwnd_epoch`, `cwnd_prior = cwnd_epoch`.

use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// RFC 9438 §5.1: `C = 0.4` (segments / s³).
pub const CUBIC_C: f64 = 0.4;

/// RFC 9438 §4.6 / §5.1: multiplicative decrease factor `β_cubic = 0.7`.
pub const BETA_CUBIC: f64 = 0.7;

/// RFC 9438 §4.2: the target is clamped to at most `1.5·cwnd` per RTT.
const MAX_TARGET_RATIO: f64 = 1.5;

/// Which rule set cwnd on the last ACK (RFC 9438 §4.3–§4.5, §4.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CubicRegion {
    /// `cwnd < ssthresh`: slow start (RFC 9438 §4.10).
    SlowStart,
    /// `W_cubic(t) < W_est`: cwnd follows the Reno estimate (§4.3).
    RenoFriendly,
    /// `cwnd < W_max`: the concave part of the cubic curve (§4.4).
    Concave,
    /// `cwnd ≥ W_max`: the convex part of the cubic curve (§4.5).
    Convex,
}

impl CubicRegion {
    /// Name for traces ("slow-start", "reno-friendly", "concave", "convex").
    pub fn as_str(self) -> &'static str {
        match self {
            CubicRegion::SlowStart => "slow-start",
            CubicRegion::RenoFriendly => "reno-friendly",
            CubicRegion::Concave => "concave",
            CubicRegion::Convex => "convex",
        }
    }

    /// The region's code in traces (`region`): 0 slow start, 1
    /// Reno-friendly (§4.3), 2 concave (§4.4), 3 convex (§4.5).
    pub fn trace_code(self) -> f64 {
        match self {
            CubicRegion::SlowStart => 0.0,
            CubicRegion::RenoFriendly => 1.0,
            CubicRegion::Concave => 2.0,
            CubicRegion::Convex => 3.0,
        }
    }
}

/// The constants of the window function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CubicParams {
    /// `C` of eq. 1 (segments / s³). Default 0.4 (§5.1).
    pub c: f64,
    /// `β_cubic` (§4.6). Default 0.7 (§5.1).
    pub beta: f64,
    /// §4.7 fast convergence. Default on ("SHOULD").
    pub fast_convergence: bool,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams {
            c: CUBIC_C,
            beta: BETA_CUBIC,
            fast_convergence: true,
        }
    }
}

/// One congestion avoidance stage (RFC 9438 §4.2 "epoch").
#[derive(Debug, Clone, Copy, PartialEq)]
struct Epoch {
    /// `t_epoch`: when this congestion avoidance stage began.
    start: Instant,
    /// `K` (seconds), eq. 2.
    k: f64,
    /// `W_max` used by this stage's curve (segments).
    w_max: f64,
    /// `W_est` (segments), §4.3.
    w_est: f64,
    /// `α_cubic` (§4.3, eq. 4, or 1 once `W_est ≥ cwnd_prior`).
    alpha: f64,
}

/// The CUBIC window state of RFC 9438 §4: `W_max`, `cwnd_prior` and the
/// current congestion avoidance stage.
#[derive(Debug, Clone, PartialEq)]
pub struct CubicWindow {
    params: CubicParams,
    /// `W_max` (segments): cwnd before the last reduction, after fast
    /// convergence; `None` before the first congestion event.
    w_max: Option<f64>,
    /// `cwnd_prior` (segments): cwnd at the last congestion event.
    cwnd_prior: Option<f64>,
    /// The current congestion avoidance stage, `None` until its first ACK.
    epoch: Option<Epoch>,
    /// The last congestion event was a timeout (§4.8 applies to the next stage).
    after_timeout: bool,
    /// Fraction of a byte of growth not yet added to an integer cwnd
    /// ([`grow`](Self::grow)).
    carry: f64,
    region: CubicRegion,
}

impl CubicWindow {
    /// A window state with no congestion event yet.
    pub fn new(params: CubicParams) -> Self {
        CubicWindow {
            params,
            w_max: None,
            cwnd_prior: None,
            epoch: None,
            after_timeout: false,
            carry: 0.0,
            region: CubicRegion::SlowStart,
        }
    }

    /// The constants in use.
    pub fn params(&self) -> CubicParams {
        self.params
    }

    /// `α_cubic = 3(1 − β_cubic)/(1 + β_cubic)` (RFC 9438 §4.3, eq. 4);
    /// 0.529… for β = 0.7.
    pub fn alpha_cubic(&self) -> f64 {
        3.0 * (1.0 - self.params.beta) / (1.0 + self.params.beta)
    }

    /// `K` (eq. 2) of the current congestion avoidance stage, once it began.
    pub fn k(&self) -> Option<Duration> {
        self.epoch.map(|e| Duration::from_secs_f64(e.k))
    }

    /// `W_max` in segments: the one the current stage's curve uses, else the
    /// one recorded at the last congestion event.
    pub fn w_max_segments(&self) -> Option<f64> {
        self.epoch.map(|e| e.w_max).or(self.w_max)
    }

    /// `cwnd_prior` in segments (§4.6), once set.
    pub fn cwnd_prior_segments(&self) -> Option<f64> {
        self.cwnd_prior
    }

    /// `W_est` in segments (§4.3) of the current stage.
    pub fn w_est_segments(&self) -> Option<f64> {
        self.epoch.map(|e| e.w_est)
    }

    /// `W_cubic(t)` in segments (eq. 1) at `now` in the current stage.
    pub fn w_cubic_segments(&self, now: Instant) -> Option<f64> {
        self.epoch
            .map(|e| self.w_cubic(&e, (now - e.start).as_secs_f64()))
    }

    /// When the current congestion avoidance stage began (`t_epoch`).
    pub fn epoch_start(&self) -> Option<Instant> {
        self.epoch.map(|e| e.start)
    }

    /// Which rule set cwnd on the last ACK.
    pub fn region(&self) -> CubicRegion {
        self.region
    }

    /// An ACK in slow start: no congestion avoidance stage is running (the
    /// next one begins at the first ACK after slow start, §4.10).
    pub fn on_slow_start_ack(&mut self) {
        self.region = CubicRegion::SlowStart;
        self.epoch = None;
    }

    /// Congestion avoidance: an ACK at `now` acknowledged `acked` segments
    /// with the window at `cwnd` segments; `srtt` is the smoothed RTT (§4.2),
    /// `None` before any sample. Returns the new cwnd in segments, never
    /// below `cwnd`.
    pub fn on_ack(&mut self, now: Instant, cwnd: f64, acked: f64, srtt: Option<Duration>) -> f64 {
        let mut e = match self.epoch {
            Some(e) => e,
            None => self.begin_epoch(now, cwnd),
        };
        let t = (now - e.start).as_secs_f64();
        // §4.2: "RTT is the smoothed round-trip time"; none yet (only without
        // any sample, i.e. never after a loss) means the target is W_cubic(t).
        let rtt = srtt.unwrap_or(Duration::ZERO).as_secs_f64();
        // §4.3: W_est += α_cubic · segments_acked / cwnd (eq. 4 per ACK).
        e.w_est += e.alpha * acked / cwnd;
        if self.cwnd_prior.is_none_or(|p| e.w_est >= p) {
            // §4.3: "α_cubic SHOULD be set to 1 once W_est ≥ cwnd_prior".
            e.alpha = 1.0;
        }
        let new_cwnd = if self.w_cubic(&e, t) < e.w_est {
            // §4.3: in the Reno-friendly region cwnd = W_est. Never lowered
            // on an ACK: cwnd may have passed W_est while tracking
            // W_cubic(t + RTT) (our reading; the RFC is silent).
            self.region = CubicRegion::RenoFriendly;
            cwnd.max(e.w_est)
        } else {
            self.region = if cwnd < e.w_max {
                CubicRegion::Concave // §4.4
            } else {
                CubicRegion::Convex // §4.5
            };
            // §4.2: target = W_cubic(t + RTT) clamped to [cwnd, 1.5·cwnd].
            let target = self
                .w_cubic(&e, t + rtt)
                .clamp(cwnd, MAX_TARGET_RATIO * cwnd);
            // §4.2: cwnd += (target − cwnd)/cwnd per acknowledged segment.
            cwnd + (target - cwnd) / cwnd * acked
        };
        self.epoch = Some(e);
        new_cwnd
    }

    /// [`on_ack`](Self::on_ack) for a transport that keeps cwnd in whole
    /// bytes: converts with segment size `mss`, and returns the whole bytes
    /// to add to `cwnd`, keeping the fraction for the next ACK.
    pub fn grow(
        &mut self,
        now: Instant,
        cwnd: Bytes,
        acked: Bytes,
        mss: Bytes,
        srtt: Option<Duration>,
    ) -> Bytes {
        let mss = mss.get().max(1) as f64;
        let cwnd = cwnd.get() as f64 / mss;
        let acked_segments = acked.get() as f64 / mss;
        let new_cwnd = self.on_ack(now, cwnd, acked_segments, srtt);
        let grow = (new_cwnd - cwnd) * mss + self.carry;
        let whole = grow.floor().max(0.0);
        self.carry = grow - whole;
        // `whole` is a non-negative integer-valued float; the cast saturates.
        Bytes::new(whole as u64)
    }

    /// A congestion event with the window at `cwnd` segments, before the
    /// reduction: records `W_max` (§4.7 fast convergence) and `cwnd_prior`
    /// (§4.6), and ends the congestion avoidance stage. The caller sets the
    /// new ssthresh and cwnd (β of [`params`](Self::params)).
    pub fn on_congestion_event(&mut self, cwnd: f64) {
        // §4.7 fast convergence: a flow whose window shrank since the last
        // event releases bandwidth: W_max = cwnd·(1 + β)/2; else W_max = cwnd.
        self.w_max = Some(match self.w_max {
            Some(w_max) if self.params.fast_convergence && cwnd < w_max => {
                cwnd * (1.0 + self.params.beta) / 2.0
            }
            _ => cwnd,
        });
        // §4.6: cwnd_prior = cwnd (for §4.3's α switch).
        self.cwnd_prior = Some(cwnd);
        // A new congestion avoidance stage begins after recovery.
        self.epoch = None;
        self.carry = 0.0;
    }

    /// A retransmission timeout (after [`on_congestion_event`](Self::on_congestion_event),
    /// if the transport called it): the next stage starts with `K = 0` and
    /// `W_max = W_est = cwnd_epoch` (§4.8).
    pub fn on_timeout(&mut self) {
        self.after_timeout = true;
        self.epoch = None;
        self.carry = 0.0;
    }

    /// Eq. 1: `W_cubic(t) = C·(t − K)³ + W_max`, `t` in seconds.
    fn w_cubic(&self, e: &Epoch, t: f64) -> f64 {
        self.params.c * (t - e.k).powi(3) + e.w_max
    }

    /// Starts a congestion avoidance stage at `now` with `cwnd_epoch` segments.
    fn begin_epoch(&mut self, now: Instant, cwnd_epoch: f64) -> Epoch {
        let (w_max, k) = match self.w_max {
            // §4.2 eq. 2: K = ∛((W_max − cwnd_epoch)/C).
            Some(w_max) if !self.after_timeout && w_max > cwnd_epoch => {
                (w_max, ((w_max - cwnd_epoch) / self.params.c).cbrt())
            }
            // §4.8 (after a timeout) and §4.10 (no congestion event yet):
            // K = 0, W_max = cwnd_epoch. Also when cwnd_epoch ≥ W_max (only
            // after a reduction from a small flight size): the curve then
            // starts at its inflection point (Linux `bictcp_update` likewise).
            _ => (cwnd_epoch, 0.0),
        };
        self.w_max = Some(w_max);
        // §4.10: without a congestion event, cwnd_prior = cwnd.
        let cwnd_prior = *self.cwnd_prior.get_or_insert(cwnd_epoch);
        self.after_timeout = false;
        Epoch {
            start: now,
            k,
            w_max,
            // §4.3 / §4.8: W_est = cwnd_epoch at the start of the stage.
            w_est: cwnd_epoch,
            // §4.3: α_cubic, or 1 once W_est ≥ cwnd_prior.
            alpha: if cwnd_epoch >= cwnd_prior {
                1.0
            } else {
                self.alpha_cubic()
            },
        }
    }
}

impl Default for CubicWindow {
    fn default() -> Self {
        CubicWindow::new(CubicParams::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_and_curve_worked_example() {
        // W_max = 100 segments, reduced to cwnd_epoch = 70:
        // K = ∛((100 − 70)/0.4) = ∛75 = 4.217163 s.
        let mut w = CubicWindow::default();
        w.on_congestion_event(100.0);
        let start = Instant::from_secs(1);
        let rtt = Some(Duration::from_millis(100));
        // First ACK at t = 0: W_est = 70 + 0.5294/70 = 70.00756 is above
        // W_cubic(0) = 70: the Reno-friendly region, cwnd = W_est.
        let cwnd = w.on_ack(start, 70.0, 1.0, rtt);
        assert!((cwnd - 70.007_563).abs() < 1e-6, "cwnd {cwnd}");
        assert_eq!(w.region(), CubicRegion::RenoFriendly);
        let k = w.k().expect("stage began").as_secs_f64();
        assert!((k - 4.217_163).abs() < 1e-5, "K = {k}");
        // W_cubic(0) = 0.4·(−K)³ + 100 = −30 + 100 = 70; W_cubic(K) = 100.
        assert!((w.w_cubic_segments(start).unwrap() - 70.0).abs() < 1e-6);
        let at_k = start + Duration::from_secs_f64(k);
        assert!((w.w_cubic_segments(at_k).unwrap() - 100.0).abs() < 1e-6);
        // An ACK at t = 1 s: target W_cubic(1.1 s) = 0.4·(1.1 − K)³ + 100 =
        // 87.8846; cwnd += (87.8846 − 70.00756)/70.00756 = +0.255358.
        let cwnd = w.on_ack(start + Duration::from_secs(1), cwnd, 1.0, rtt);
        assert!((cwnd - 70.262_92).abs() < 1e-5, "cwnd {cwnd}");
        assert_eq!(w.region(), CubicRegion::Concave);
    }

    #[test]
    fn grow_keeps_the_fraction_of_a_byte() {
        // Segments of 1000 B, W_max = 100, cwnd_epoch = 70. An empty ACK at
        // t = 0 starts the stage; ACKs of 1 B at t = 1 s (no RTT: target
        // W_cubic(1 s) = 86.6808) add (86.6808 − 70)/70 · 0.001 segment =
        // 0.2383 B each: nothing whole for four ACKs, 1 B on the fifth.
        let mut w = CubicWindow::default();
        w.on_congestion_event(100.0);
        let mss = Bytes::new(1000);
        let mut cwnd = Bytes::new(70_000);
        let g = w.grow(Instant::ZERO, cwnd, Bytes::ZERO, mss, None);
        assert_eq!(g, Bytes::ZERO);
        let mut grown = Vec::new();
        for _ in 0..5 {
            let g = w.grow(Instant::from_secs(1), cwnd, Bytes::new(1), mss, None);
            cwnd += g;
            grown.push(g.get());
        }
        assert_eq!(w.region(), CubicRegion::Concave);
        assert_eq!(grown, vec![0, 0, 0, 0, 1]);
    }
}
