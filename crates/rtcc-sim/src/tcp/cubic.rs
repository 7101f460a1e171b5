//! CUBIC window growth, RFC 9438 §4, as a [`WindowGrowth`] for the shared
//! window-based sender. The window arithmetic (eq. 1, 2, 4, fast
//! convergence, the §4.8 restart) is the core's `CubicWindow`
//! (`rtcc_core::cc::cubic::window`), which the media/QUIC CUBIC controller
//! uses as well; this file adds TCP's slow start and ssthresh. Loss recovery
//! stays NewReno (RFC 6582), as RFC 9438 §1 allows: CUBIC "only changes the
//! congestion window increase and decrease", not fast retransmit/recovery.
//!
//! Implemented, by section of RFC 9438:
//!
//! - §4.1 principles: growth is a function of the time since the start of the
//!   current congestion avoidance stage, not of ACK counts.
//! - §4.2 window increase function: `W_cubic(t) = C·(t − K)³ + W_max` (eq. 1)
//!   with `K = ∛((W_max − cwnd_epoch)/C)` (eq. 2); per ACK the target
//!   `W_cubic(t + RTT)` clamped to `[cwnd, 1.5·cwnd]` and
//!   `cwnd += (target − cwnd)/cwnd` per acknowledged segment.
//! - §4.3 Reno-friendly region: `W_est` starts at `cwnd_epoch` and grows by
//!   `α_cubic · segments_acked / cwnd`, `α_cubic = 3(1 − β)/(1 + β)` (eq. 4),
//!   becoming 1 once `W_est ≥ cwnd_prior`; while `W_cubic(t) < W_est`,
//!   `cwnd = W_est`.
//! - §4.4 concave region (`cwnd < W_max`) and §4.5 convex region
//!   (`cwnd ≥ W_max`): both follow the §4.2 target; [`CubicRegion`] reports
//!   which one applied on the last ACK.
//! - §4.6 multiplicative decrease: `ssthresh = max(flight_size · β_cubic,
//!   2·SMSS)`, `cwnd_prior = cwnd`; the sender's recovery then sets cwnd.
//! - §4.7 fast convergence: `W_max = cwnd·(1 + β)/2` when `cwnd < W_max` at
//!   the congestion event, else `W_max = cwnd`.
//! - §4.8 timeout: ssthresh by §4.6 (the sender sets cwnd = 1 SMSS, RFC
//!   5681); in the first congestion avoidance stage after it `K = 0`,
//!   `W_max = W_est = cwnd_epoch`.
//! - §4.10 slow start: RFC 5681 slow start with RFC 3465 byte counting (the
//!   same rule as [`RenoGrowth`](super::RenoGrowth)); HyStart++ (RFC 9406),
//!   which §4.10 recommends ("SHOULD"), is not implemented. When congestion
//!   avoidance starts without a congestion event (initial ssthresh below
//!   infinity), `W_max` is undefined and §4.10's special case applies: `K = 0`,
//!   `W_max = cwnd_epoch`, `cwnd_prior = cwnd_epoch`.
//!
//! Not implemented: §4.9 spurious congestion events (undo; the simulated
//! sender has no timestamps or DSACK to detect them, and undo is optional),
//! ECN (§4.6 `reduction_on_ece`), and the application-limited rule of §5.8
//! (a bulk flow is never application-limited).

use rtcc_core::cc::cubic::window::{CubicParams, CubicWindow};
use rtcc_core::{Bytes, Duration, Instant};

use super::growth::{Window, WindowGrowth};

/// The window math is the core's (`rtcc_core::cc::cubic::window`), shared
/// with the media/QUIC CUBIC controller.
pub use rtcc_core::cc::cubic::window::{CubicRegion, BETA_CUBIC, CUBIC_C};

/// Parameters of [`CubicGrowth`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CubicConfig {
    /// RFC 3465 §2.2 byte-counting limit L (segments) for slow start.
    pub abc_limit_segments: u32,
    /// RFC 9438 §4.7 fast convergence. Default on ("SHOULD").
    pub fast_convergence: bool,
    /// `C` of eq. 1 (segments / s³). Default 0.4 (§5.1).
    pub c: f64,
    /// `β_cubic` (§4.6). Default 0.7 (§5.1).
    pub beta: f64,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            abc_limit_segments: 1,
            fast_convergence: true,
            c: CUBIC_C,
            beta: BETA_CUBIC,
        }
    }
}

/// CUBIC growth (RFC 9438 §4) over the core's [`CubicWindow`]: TCP slow
/// start with byte counting, and `ssthresh = β·flight_size` (§4.6).
#[derive(Debug, Clone, PartialEq)]
pub struct CubicGrowth {
    abc_limit_segments: u32,
    beta: f64,
    window: CubicWindow,
}

impl CubicGrowth {
    /// Growth with the given parameters.
    pub fn new(config: CubicConfig) -> Self {
        CubicGrowth {
            abc_limit_segments: config.abc_limit_segments.max(1),
            beta: config.beta,
            window: CubicWindow::new(CubicParams {
                c: config.c,
                beta: config.beta,
                fast_convergence: config.fast_convergence,
            }),
        }
    }

    /// `α_cubic = 3(1 − β_cubic)/(1 + β_cubic)` (RFC 9438 §4.3, eq. 4);
    /// 0.529… for β = 0.7.
    pub fn alpha_cubic(&self) -> f64 {
        self.window.alpha_cubic()
    }

    /// `K` (eq. 2) of the current congestion avoidance stage, once it began.
    pub fn k(&self) -> Option<Duration> {
        self.window.k()
    }

    /// `W_max` in segments: the one the current stage's curve uses, else the
    /// one recorded at the last congestion event.
    pub fn w_max_segments(&self) -> Option<f64> {
        self.window.w_max_segments()
    }

    /// `W_est` in segments (§4.3) of the current stage.
    pub fn w_est_segments(&self) -> Option<f64> {
        self.window.w_est_segments()
    }

    /// `W_cubic(t)` in segments (eq. 1) at `now` in the current stage.
    pub fn w_cubic_segments(&self, now: Instant) -> Option<f64> {
        self.window.w_cubic_segments(now)
    }

    /// Which rule set cwnd on the last ACK.
    pub fn region(&self) -> CubicRegion {
        self.window.region()
    }
}

impl Default for CubicGrowth {
    fn default() -> Self {
        CubicGrowth::new(CubicConfig::default())
    }
}

impl WindowGrowth for CubicGrowth {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, now: Instant, w: &mut Window, acked: Bytes, srtt: Option<Duration>) {
        if w.in_slow_start() {
            // §4.10: RFC 5681 slow start, cwnd += min(N, L·SMSS) (RFC 3465).
            self.window.on_slow_start_ack();
            w.cwnd += acked.min(w.mss * u64::from(self.abc_limit_segments));
            return;
        }
        // §4.2–§4.5 in segments of SMSS; whole bytes added, the fraction kept.
        w.cwnd += self.window.grow(now, w.cwnd, acked, w.mss, srtt);
    }

    fn ssthresh_after_loss(&mut self, _now: Instant, w: &Window, flight_size: Bytes) -> Bytes {
        let mss = w.mss.get().max(1) as f64;
        // §4.6 cwnd_prior and §4.7 W_max with fast convergence.
        self.window.on_congestion_event(w.cwnd.get() as f64 / mss);
        // §4.6: ssthresh = flight_size · β_cubic, at least 2 SMSS.
        let ssthresh = (flight_size.get() as f64 * self.beta) as u64;
        Bytes::new(ssthresh).max(w.mss * 2)
    }

    fn on_retransmission_timeout(&mut self, _now: Instant) {
        // §4.8: the next congestion avoidance stage uses K = 0 and
        // W_max = W_est = cwnd_epoch.
        self.window.on_timeout();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn window(cwnd_segments: u64, ssthresh_segments: u64) -> Window {
        Window {
            cwnd: Bytes::new(cwnd_segments * MSS),
            ssthresh: Bytes::new(ssthresh_segments * MSS),
            mss: Bytes::new(MSS),
        }
    }

    fn seg(w: &Window) -> f64 {
        w.cwnd.get() as f64 / MSS as f64
    }

    /// A loss at `w_max` segments with a full flight, then recovery leaves
    /// cwnd = ssthresh (as the sender's NewReno recovery does).
    fn after_loss(g: &mut CubicGrowth, w_max: u64) -> Window {
        let mut w = window(w_max, u64::MAX / MSS);
        w.ssthresh = g.ssthresh_after_loss(Instant::ZERO, &w, w.cwnd);
        w.cwnd = w.ssthresh;
        w
    }

    /// ACK-clocked congestion avoidance: every `rtt` one ACK per segment of
    /// cwnd, spread over the round; returns (t, cwnd segments) per round.
    fn run_rounds(
        g: &mut CubicGrowth,
        w: &mut Window,
        start: Instant,
        rtt: Duration,
        rounds: u64,
    ) -> Vec<(Instant, f64)> {
        let mut out = Vec::new();
        let mut now = start;
        for _ in 0..rounds {
            let n = w.cwnd.get() / MSS;
            for i in 0..n {
                let t = now + Duration::from_nanos(rtt.as_nanos() * i / n);
                g.on_ack(t, w, Bytes::new(MSS), Some(rtt));
            }
            now += rtt;
            out.push((now, seg(w)));
        }
        out
    }

    #[test]
    fn alpha_is_0_529_for_beta_0_7() {
        let g = CubicGrowth::default();
        assert!((g.alpha_cubic() - 0.9 / 1.7).abs() < 1e-12);
    }

    #[test]
    fn k_worked_example() {
        // W_max = 100 segments, β = 0.7: cwnd_epoch = 70, K = ∛(30 / 0.4) =
        // ∛75 = 4.2172 s.
        let mut g = CubicGrowth::default();
        let mut w = after_loss(&mut g, 100);
        assert_eq!(w.cwnd.get(), 70 * MSS);
        g.on_ack(
            Instant::from_secs(1),
            &mut w,
            Bytes::new(MSS),
            Some(Duration::from_millis(100)),
        );
        let k = g.k().expect("stage began").as_secs_f64();
        assert!((k - 4.217_163).abs() < 1e-5, "K = {k}");
        assert!((g.w_max_segments().unwrap() - 100.0).abs() < 1e-9);
        // The curve passes through cwnd_epoch at t = 0 and W_max at t = K.
        let start = Instant::from_secs(1);
        assert!((g.w_cubic_segments(start).unwrap() - 70.0).abs() < 1e-6);
        let at_k = start + Duration::from_secs_f64(k);
        assert!((g.w_cubic_segments(at_k).unwrap() - 100.0).abs() < 1e-6);
    }

    #[test]
    fn beta_decrease_and_floor() {
        let mut g = CubicGrowth::default();
        let w = window(100, u64::MAX / MSS);
        // §4.6: ssthresh = 0.7 · flight_size.
        let s = g.ssthresh_after_loss(Instant::ZERO, &w, Bytes::new(100 * MSS));
        assert_eq!(s.get(), 70 * MSS);
        // flight_size, not cwnd.
        let s = g.ssthresh_after_loss(Instant::ZERO, &w, Bytes::new(40 * MSS));
        assert_eq!(s.get(), 28 * MSS);
        // At least 2 SMSS.
        let s = g.ssthresh_after_loss(Instant::ZERO, &w, Bytes::new(MSS));
        assert_eq!(s.get(), 2 * MSS);
    }

    #[test]
    fn cwnd_follows_the_cubic_curve() {
        // W_max = 1000 segments, RTT 100 ms, K = ∛(300/0.4) = 9.09 s: the
        // Reno estimate (700 + 0.53 per RTT → 748 at K) stays far below the
        // curve throughout the 14 s.
        let mut g = CubicGrowth::default();
        let mut w = after_loss(&mut g, 1000);
        let rtt = Duration::from_millis(100);
        let start = Instant::from_secs(10);
        let rounds = run_rounds(&mut g, &mut w, start, rtt, 140);
        let k = g.k().unwrap().as_secs_f64();
        assert!((k - 9.0856).abs() < 1e-3, "K = {k}");
        for (i, &(t, cwnd)) in rounds.iter().enumerate() {
            // After the ACKs of a round ending at t, cwnd lies between the
            // curve now and one RTT ahead (the §4.2 target).
            let lo = g.w_cubic_segments(t).unwrap();
            let hi = g.w_cubic_segments(t + rtt).unwrap();
            assert!(
                cwnd > lo * 0.995 && cwnd < hi * 1.005,
                "round {i} t = {t}: cwnd {cwnd:.2} not in [{lo:.2}, {hi:.2}]"
            );
        }
        // Concave: growth per round shrinks approaching K; convex after it.
        let inc = |i: usize| rounds[i + 1].1 - rounds[i].1;
        assert!(inc(5) > inc(40) && inc(40) > inc(80), "concave before K");
        assert!(inc(135) > inc(120) && inc(120) > inc(105), "convex after K");
        assert_eq!(g.region(), CubicRegion::Convex);
        assert!(g.w_est_segments().unwrap() < 800.0);
        // Plateau at W_max around t = K.
        let near_k = rounds[(k * 10.0) as usize].1;
        assert!((near_k - 1000.0).abs() < 1.0, "cwnd at K = {near_k}");
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_bdp() {
        // W_max = 10 segments, RTT 10 ms: K = ∛(3/0.4) = 1.96 s, so the
        // curve hardly moves for ~200 RTTs while W_est grows α per RTT.
        let mut g = CubicGrowth::default();
        let mut w = after_loss(&mut g, 10);
        let rtt = Duration::from_millis(10);
        let start = Instant::from_secs(1);
        let rounds = run_rounds(&mut g, &mut w, start, rtt, 60);
        let (t, cwnd) = *rounds.last().unwrap();
        assert_eq!(g.region(), CubicRegion::RenoFriendly);
        let w_cubic = g.w_cubic_segments(t).unwrap();
        let w_est = g.w_est_segments().unwrap();
        assert!(w_cubic < 10.0, "W_cubic {w_cubic}");
        assert!((cwnd - w_est).abs() < 0.01, "cwnd {cwnd} W_est {w_est}");
        // 6 rounds at α = 0.53 from 7 to cwnd_prior = 10, then α = 1:
        // about 7 + 3 + 54 = 64 segments (more than 3× the cubic curve).
        assert!(cwnd > 55.0 && cwnd < 70.0, "cwnd {cwnd}");
        // The first rounds grow by α_cubic ≈ 0.53 segments, not by 1.
        let first = rounds[0].1 - 7.0;
        assert!((first - 0.529).abs() < 0.05, "first round +{first}");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut g = CubicGrowth::default();
        let w = window(100, u64::MAX / MSS);
        g.ssthresh_after_loss(Instant::ZERO, &w, w.cwnd);
        assert!((g.w_max_segments().unwrap() - 100.0).abs() < 1e-9);
        // Next loss below the previous W_max: W_max = 80 · 1.7 / 2 = 68.
        let w = window(80, 70);
        g.ssthresh_after_loss(Instant::ZERO, &w, w.cwnd);
        assert!((g.w_max_segments().unwrap() - 68.0).abs() < 1e-9);
        // Above it: W_max = cwnd.
        let w = window(90, 70);
        g.ssthresh_after_loss(Instant::ZERO, &w, w.cwnd);
        assert!((g.w_max_segments().unwrap() - 90.0).abs() < 1e-9);
        // Disabled: W_max = cwnd even when shrinking.
        let mut off = CubicGrowth::new(CubicConfig {
            fast_convergence: false,
            ..CubicConfig::default()
        });
        off.ssthresh_after_loss(Instant::ZERO, &window(100, 1), Bytes::new(100 * MSS));
        off.ssthresh_after_loss(Instant::ZERO, &window(80, 1), Bytes::new(80 * MSS));
        assert!((off.w_max_segments().unwrap() - 80.0).abs() < 1e-9);
    }

    #[test]
    fn target_is_clamped_to_one_and_a_half_cwnd() {
        // No congestion event: CA from ssthresh = 10 segments, K = 0,
        // W_max = 10. A single ACK 100 s later: W_cubic(t + RTT) ≈ 400 000
        // segments, the target is 1.5 · 10 = 15, and one segment acked adds
        // (15 − 10)/10 = 0.5 segment.
        let mut g = CubicGrowth::default();
        let mut w = window(10, 10);
        let rtt = Some(Duration::from_millis(100));
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(MSS), rtt);
        assert_eq!(g.k(), Some(Duration::ZERO));
        let before = w.cwnd.get();
        g.on_ack(Instant::from_secs(100), &mut w, Bytes::new(MSS), rtt);
        assert_eq!(g.region(), CubicRegion::Convex);
        let grew = w.cwnd.get() - before;
        // 0.5 segment, ± rounding of the first ACK's carry.
        assert!((499..=501).contains(&grew), "grew {grew} B");
    }

    #[test]
    fn target_never_below_cwnd() {
        // cwnd above the curve (convex, W_cubic(t + RTT) < cwnd): no growth
        // from the cubic part, W_est below: cwnd unchanged.
        let mut g = CubicGrowth::default();
        let mut w = after_loss(&mut g, 100);
        let rtt = Some(Duration::from_millis(1));
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(MSS), rtt);
        w.cwnd = Bytes::new(90 * MSS);
        let before = w.cwnd;
        g.on_ack(Instant::from_millis(2), &mut w, Bytes::new(MSS), rtt);
        assert_eq!(w.cwnd, before);
    }

    #[test]
    fn slow_start_is_rfc5681() {
        let mut g = CubicGrowth::default();
        let mut w = window(10, u64::MAX / MSS);
        g.on_ack(Instant::ZERO, &mut w, Bytes::new(2 * MSS), None);
        // L = 1: +1 SMSS per ACK.
        assert_eq!(w.cwnd.get(), 11 * MSS);
        assert_eq!(g.region(), CubicRegion::SlowStart);
        let mut l2 = CubicGrowth::new(CubicConfig {
            abc_limit_segments: 2,
            ..CubicConfig::default()
        });
        l2.on_ack(Instant::ZERO, &mut w, Bytes::new(2 * MSS), None);
        assert_eq!(w.cwnd.get(), 13 * MSS);
    }

    #[test]
    fn after_rto_k_is_zero_and_w_max_is_cwnd_epoch() {
        let mut g = CubicGrowth::default();
        let w = window(100, u64::MAX / MSS);
        let ssthresh = g.ssthresh_after_loss(Instant::ZERO, &w, w.cwnd);
        g.on_retransmission_timeout(Instant::ZERO);
        // Slow start from 1 SMSS up to ssthresh = 70, then CA at 70.
        let mut w = Window {
            cwnd: Bytes::new(MSS),
            ssthresh,
            mss: Bytes::new(MSS),
        };
        let mut now = Instant::from_secs(1);
        while w.in_slow_start() {
            g.on_ack(
                now,
                &mut w,
                Bytes::new(MSS),
                Some(Duration::from_millis(50)),
            );
            now += Duration::from_millis(1);
        }
        let epoch_cwnd = seg(&w);
        g.on_ack(
            now,
            &mut w,
            Bytes::new(MSS),
            Some(Duration::from_millis(50)),
        );
        assert_eq!(g.k(), Some(Duration::ZERO));
        assert!((g.w_max_segments().unwrap() - epoch_cwnd).abs() < 1e-9);
        assert!(g.w_est_segments().unwrap() >= epoch_cwnd);
        // Without the RTO the same stage would aim at W_max = 100.
        let mut h = CubicGrowth::default();
        let mut w2 = after_loss(&mut h, 100);
        h.on_ack(
            now,
            &mut w2,
            Bytes::new(MSS),
            Some(Duration::from_millis(50)),
        );
        assert!(h.k().unwrap() > Duration::from_secs(4));
    }
}
