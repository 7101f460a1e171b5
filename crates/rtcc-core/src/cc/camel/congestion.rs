//! Camel §4.2, the Congestion Detector: the gradient of frame-level delay with
//! respect to bytes in flight, the window scale γ (eqs. 1, 5) and the
//! congestion-adjusted target of eq. 6.
//!
//! Interpretations I9–I12 of `docs/algorithms/camel.md`: least-squares slope
//! of D against x over the samples of the last `detect_window`, normalised by
//! BW_avg (G = S · BW_avg, 1 above the BDP under eq. 4, 0 below); congestion
//! ⇔ G > threshold; at most one decision per feedback round. I23: Fig. 6's
//! detector "combines delay trends and RTCP feedback": a round whose media
//! loss exceeds p_phys + `loss_margin` is congestion too, whatever G says.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

/// Detector settings (see `CamelConfig` for sources).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectorConfig {
    /// γ₀ (§4.2: "we set the initial value of γ to 1").
    pub gamma_initial: f64,
    /// Multiplier on detection (§4.2, eq. 5: 0.95).
    pub gamma_decrease: f64,
    /// Threshold on the normalised gradient G (ours, I9).
    pub gradient_threshold: f64,
    /// Sample window (ours, I11).
    pub detect_window: Duration,
    /// Fewest samples for a decision (ours, I11).
    pub detect_min_samples: usize,
    /// Smallest in-flight spread for a decision (ours, I11).
    pub detect_min_spread: Bytes,
    /// Whether the anchored gradient G_a (the slope from eq. 4's point
    /// (x = 0, D = D_min) to (x̄, the window's lowest D), × BW_avg) is also
    /// compared with `gradient_threshold` (ours, I22).
    pub anchored_gradient: bool,
    /// Margin of a round's loss rate over p_phys that counts as congestion
    /// (ours, I23; absolute).
    pub loss_margin: f64,
    /// Fewest reported media packets for a round's loss rate to count (ours, I23).
    pub loss_min_packets: u64,
    /// γ's step back towards γ₀ per clear round; 0 resets γ to γ₀ at once,
    /// as §4.2 says (ours, I25).
    pub gamma_increase: f64,
    /// A window whose lowest frame delay stands this far above D_min is
    /// congested (ours, I26: §4.2's ground truth "RTT exceeds RTprop", the
    /// same delay for every flow on the path); zero disables the test.
    pub standing_queue: Duration,
    /// A decision congested by a standing queue q multiplies γ by
    /// max(1 − q / horizon, `QUEUE_DRAIN_FLOOR`) when that is smaller than
    /// `gamma_decrease` (ours, I30); zero disables it.
    pub queue_drain_horizon: Duration,
    /// A queue that stands this long (drained for no more than
    /// `COMPETE_GAP` at a time, `COMPETE_QUEUE_MIN` or more on the mean)
    /// while the flow delivers less than `COMPETE_SHARE` of BW_avg is a
    /// competitor's (ours, I35); zero disables the competing mode.
    pub compete_after: Duration,
    /// The competing mode holds while the standing queue is at most this;
    /// a deeper one is yielded to (ours, I35: §5.5).
    pub compete_queue_max: Duration,
}

/// I35: a queue cannot be the flow's own while it delivers less than this
/// fraction of the bottleneck rate (BW_avg) and the queue still stands.
pub const COMPETE_SHARE: f64 = 0.15;

/// I35: a flow delivering at least this fraction of BW_avg makes most of
/// the queue itself; `compete_after` of that ends the competing mode.
pub const COMPETE_EXIT_SHARE: f64 = 0.5;

/// I35: the smallest mean queue over a span that is taken for a loss-based
/// flow's: ten times the standing-queue threshold (I26), which delay-based
/// flows hold the queue near.
pub const COMPETE_QUEUE_MIN: Duration = Duration::from_millis(100);

/// I35: the longest the queue may stay drained within a span (a loss-based
/// flow's queue drains briefly after its losses; 0.5 s or less here).
pub const COMPETE_GAP: Duration = Duration::from_secs(1);

/// The smallest factor one decision applies to γ for a standing queue
/// (ours, I30: halving, as BBR's drain after Startup roughly does).
pub const QUEUE_DRAIN_FLOOR: f64 = 0.5;

/// Standard errors of a round's loss rate above p_phys before it counts
/// (ours, I23: about the 97.5th percentile under physical loss alone).
pub const LOSS_Z: f64 = 2.0;

/// Multiple of the mean step between consecutive frame delays below which
/// a standing queue is read as jitter (ours, I26).
pub const STANDING_NOISE_GAIN: f64 = 2.0;

/// The outcome of one detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// G above the threshold: γ ← 0.95 γ.
    Congested,
    /// G at or below the threshold: γ ← 1.
    Clear,
    /// Too few samples or too little spread: γ held.
    Undecided,
}

/// Least-squares slope of `y` on `x` (None if x has no variance).
pub fn slope(points: impl Iterator<Item = (f64, f64)> + Clone) -> Option<f64> {
    let (mut n, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for (x, y) in points.clone() {
        n += 1.0;
        sx += x;
        sy += y;
    }
    if n < 2.0 {
        return None;
    }
    let (mx, my) = (sx / n, sy / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in points {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    if sxx <= 0.0 {
        return None;
    }
    Some(sxy / sxx)
}

/// The in-flight gradient detector and γ.
#[derive(Debug, Clone)]
pub struct CongestionDetector {
    cfg: DetectorConfig,
    /// (send time, x in bytes, D in seconds).
    samples: VecDeque<(Instant, f64, f64)>,
    gamma: f64,
    last_decision: Option<Instant>,
    gradient: Option<f64>,
    anchored: Option<f64>,
    /// Media packets reported (lost, total) since the last decision (I23).
    lost: u64,
    reported: u64,
    /// p_phys from the bursting-length controller (§4.3), 0 before any.
    p_phys: f64,
    /// The loss rate of the last round that had enough reports (I23).
    round_loss: Option<f64>,
    /// The last decision was congestion by loss.
    lossy: bool,
    /// Mean step between consecutive frame delays (I26).
    delay_noise: Duration,
    /// The decisions of the last `compete_after` since the queue last
    /// drained (I35): time, the flow's share of BW_avg, the queue (s).
    span: VecDeque<(Instant, f64, f64)>,
    /// The last decision that saw a standing queue (I35).
    last_standing: Option<Instant>,
    /// Since when no decision has seen a standing queue (I35).
    clear_since: Option<Instant>,
    /// The competing mode (I35): the standing queue is another flow's, and
    /// only loss is congestion.
    competing: bool,
    /// The last decision's standing queue while competing (I35).
    competitor_queue: Duration,
    /// The flow's delivered rate over BW_avg (I35).
    own_share: Option<f64>,
}

impl CongestionDetector {
    /// A detector with γ = γ₀.
    pub fn new(cfg: DetectorConfig) -> Self {
        CongestionDetector {
            cfg,
            samples: VecDeque::new(),
            gamma: cfg.gamma_initial,
            last_decision: None,
            gradient: None,
            anchored: None,
            lost: 0,
            reported: 0,
            p_phys: 0.0,
            round_loss: None,
            lossy: false,
            delay_noise: Duration::ZERO,
            span: VecDeque::new(),
            last_standing: None,
            clear_since: None,
            competing: false,
            competitor_queue: Duration::ZERO,
            own_share: None,
        }
    }

    /// Sets the mean step between consecutive frame delays, which widens
    /// the standing-queue threshold under jitter (I26).
    pub fn set_delay_noise(&mut self, noise: Duration) {
        self.delay_noise = noise;
    }

    /// Counts one media packet's first report (I23).
    pub fn on_outcome(&mut self, lost: bool) {
        self.lost += u64::from(lost);
        self.reported += 1;
    }

    /// Ends the competing mode, and the span that would start it, when a
    /// frame waited behind a queue deeper than `compete_queue_max` (I35,
    /// §5.5). Checked on every frame delay, not only at decisions: behind
    /// seconds of queue the frames of a detection window have aged out of
    /// it before their delays arrive.
    pub fn on_queue(&mut self, queue: Duration) {
        if queue > self.cfg.compete_queue_max {
            self.end_competing();
        }
    }

    /// Leaves the competing mode and forgets the span that would start it
    /// again (I35).
    fn end_competing(&mut self) {
        self.competing = false;
        self.span.clear();
    }

    /// Sets the flow's delivered rate over BW_avg, which the competing
    /// mode's entry asks to be small (I35).
    pub fn set_own_share(&mut self, share: Option<f64>) {
        self.own_share = share;
    }

    /// Sets the physical loss rate the round's loss is judged against (I23).
    pub fn set_physical_loss(&mut self, p_phys: Option<f64>) {
        self.p_phys = p_phys.unwrap_or(0.0);
    }

    /// The last decision was congestion by loss (I23).
    pub fn lossy(&self) -> bool {
        self.lossy
    }

    /// The loss rate of the last judged round (I23).
    pub fn round_loss(&self) -> Option<f64> {
        self.round_loss
    }

    /// γ.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }
    /// The last normalised gradient G computed.
    pub fn gradient(&self) -> Option<f64> {
        self.gradient
    }
    /// The last anchored gradient G_a computed (I22).
    pub fn anchored_gradient(&self) -> Option<f64> {
        self.anchored
    }
    /// The competitor's standing queue while the competing mode holds
    /// (I35), else None.
    pub fn competitor_queue(&self) -> Option<Duration> {
        self.competing.then_some(self.competitor_queue)
    }
    /// Samples in the window.
    pub fn samples_in_window(&self) -> usize {
        self.samples.len()
    }

    /// Back to γ₀ with an empty window (leaving fall-back, I19).
    pub fn reset(&mut self) {
        self.samples.clear();
        self.gamma = self.cfg.gamma_initial;
        self.last_decision = None;
        self.gradient = None;
        self.anchored = None;
        self.lost = 0;
        self.reported = 0;
        self.round_loss = None;
        self.lossy = false;
        self.span.clear();
        self.last_standing = None;
        self.clear_since = None;
        self.competing = false;
    }

    /// Adds a frame-delay sample (I10: x = in flight before the frame). A
    /// frame sent before the last decision is stale evidence (I12) and is
    /// not used.
    pub fn on_sample(&mut self, send_time: Instant, in_flight: Bytes, delay: Duration) {
        if self.last_decision.is_some_and(|t| send_time < t) {
            return;
        }
        self.samples
            .push_back((send_time, in_flight.as_f64(), delay.as_secs_f64()));
    }

    /// Runs one detection at `now` if a feedback round (`round` = D_min + H)
    /// has passed since the last one (I12), with BW_avg for the normalisation
    /// (I9) and D_min as the anchor of eq. 4's curve (I22).
    pub fn detect(
        &mut self,
        now: Instant,
        bw_avg: Bitrate,
        d_min: Duration,
        round: Duration,
    ) -> Decision {
        let w = self.cfg.detect_window;
        while self
            .samples
            .front()
            .is_some_and(|&(t, _, _)| now.saturating_duration_since(t) > w)
        {
            self.samples.pop_front();
        }
        if self
            .last_decision
            .is_some_and(|t| now.saturating_duration_since(t) < round)
        {
            return Decision::Undecided;
        }
        // I23: the round's loss against p_phys + margin (§4.3's physical
        // loss; Fig. 6's "RTCP feedback").
        let loss = (self.reported >= self.cfg.loss_min_packets.max(1))
            .then(|| self.lost as f64 / self.reported as f64);
        // A round holds few packets: under physical loss alone its rate
        // scatters by sqrt(p(1 − p)/n) around p_phys, so the test adds
        // LOSS_Z standard errors (at 50 % random loss and 20 reports, 22
        // points) to the margin.
        let se = (self.p_phys * (1.0 - self.p_phys) / self.reported.max(1) as f64).sqrt();
        let lossy = loss.is_some_and(|p| p > self.p_phys + self.cfg.loss_margin + LOSS_Z * se);
        if self.samples.len() < self.cfg.detect_min_samples.max(2) && !lossy {
            return Decision::Undecided;
        }
        let bw = bw_avg.as_bps_f64() / 8.0; // B/s
                                            // One pass over the window: in-flight range and sum, lowest delay.
        let (lo, hi, sx, dlo) = self.samples.iter().fold(
            (f64::MAX, f64::MIN, 0.0, f64::MAX),
            |(lo, hi, sx, dlo), &(_, x, d)| (lo.min(x), hi.max(x), sx + x, dlo.min(d)),
        );
        let queue = (dlo - d_min.as_secs_f64()).max(0.0);
        // I22: eq. 4's curve passes through (0, RTprop) ≈ (0, D_min). The
        // slope from that point to (x̄, lowest D of the window) is > 0
        // whenever every delay of the window stands above D_min, even when
        // the delays no longer vary with x (a queue that other traffic keeps
        // full). The window's lowest delay, not its mean, so that jitter,
        // which leaves some frames near D_min, does not count.
        let mean_x = sx / self.samples.len().max(1) as f64;
        let anchored_gradient = (mean_x > 0.0).then(|| queue / mean_x * bw);
        // I26: the queue every frame of the window waited behind, the same
        // for every flow through the bottleneck (unlike G_a, which divides
        // it by the flow's own in-flight and so cuts small flows harder).
        let standing_test = !self.cfg.standing_queue.is_zero()
            && self.samples.len() >= self.cfg.detect_min_samples.max(2);
        // I26: the threshold grows with the delay noise: under independent
        // jitter of spread J the mean step is J/3, and the lowest of a few
        // frames can stand J/2 above the minimum (D_min).
        let threshold = self
            .cfg
            .standing_queue
            .max(self.delay_noise.mul_f64(STANDING_NOISE_GAIN));
        let standing = standing_test && queue > threshold.as_secs_f64();
        let g = if hi - lo < self.cfg.detect_min_spread.as_f64() {
            None
        } else {
            slope(self.samples.iter().map(|&(_, x, d)| (x, d))).map(|s| s * bw)
        };
        // I22: the anchored gradient when configured; I11 (revised): when
        // the in-flight spread is too small for a slope (frames of one
        // packet at a low target), the standing-queue test (I26) decides, or
        // without it the anchored gradient, so that a flow whose target fell
        // that low is not left undecided, with γ frozen, for ever. Not G_a
        // when I26 is on: G_a divides by the flow's own in-flight, and a
        // flow at its floor would read any queue as congestion and never
        // climb back.
        let anchored = if self.cfg.anchored_gradient || (g.is_none() && !standing_test) {
            anchored_gradient
        } else {
            None
        };
        if g.is_none() && anchored.is_none() && !lossy && !standing_test {
            return Decision::Undecided;
        }
        if loss.is_some() {
            self.round_loss = loss;
            self.lost = 0;
            self.reported = 0;
        }
        // I9: G = S [s/B] · BW_avg [B/s].
        self.gradient = g.or(self.gradient);
        self.anchored = anchored.or(self.anchored);
        self.last_decision = Some(now);
        // I12: the next decision rests on frames sent after this one only, so
        // one episode of congestion is not multiplied into many cuts.
        self.samples.clear();
        self.lossy = lossy;
        // I35: the part of the queue the flow's own bytes explain: what it
        // has in flight beyond one BDP, at the bottleneck rate.
        let own_queue = if bw > 0.0 {
            (mean_x - bw * d_min.as_secs_f64()).max(0.0) / bw
        } else {
            0.0
        };
        self.track_competitor(
            now,
            standing_test,
            standing,
            queue,
            own_queue,
            threshold.as_secs_f64(),
        );
        let congested = if self.competing {
            // I35: the queue is the competitor's; Camel's own share shows
            // in loss, as a loss-based flow's does.
            lossy
        } else {
            lossy
                || standing
                || g.is_some_and(|g| g > self.cfg.gradient_threshold)
                || anchored.is_some_and(|a| a > self.cfg.gradient_threshold)
        };
        if congested {
            // §4.2, eq. 5: γ ← 0.95 · γ on congestion. I30: a standing
            // queue of q seconds is emptied in about `queue_drain_horizon`
            // when every flow through it sends (1 − q / horizon) of what it
            // sent, which keeps their shares.
            let drain = if standing && !self.cfg.queue_drain_horizon.is_zero() {
                (1.0 - queue / self.cfg.queue_drain_horizon.as_secs_f64()).max(QUEUE_DRAIN_FLOOR)
            } else {
                1.0
            };
            self.gamma *= self.cfg.gamma_decrease.min(drain);
            Decision::Congested
        } else {
            // §4.2: "If no congestion is detected, γ is reset to 1." I25:
            // or, with `gamma_increase`, it climbs back additively.
            self.gamma = if self.cfg.gamma_increase > 0.0 {
                (self.gamma + self.cfg.gamma_increase).min(self.cfg.gamma_initial)
            } else {
                self.cfg.gamma_initial
            };
            Decision::Clear
        }
    }

    /// I35: a queue that stands for `compete_after` (drained for no more
    /// than `COMPETE_GAP` at a time, `COMPETE_QUEUE_MIN` or more on the
    /// mean) while the flow delivers less than `COMPETE_SHARE` of BW_avg on
    /// the mean (its cuts, eq. 5 and I26, have taken it near its floor) is
    /// not the flow's own, nor that of flows that cut as it does: theirs
    /// would have drained. The competing mode holds while the queue stands
    /// no deeper than `compete_queue_max` (see also [`Self::on_queue`]),
    /// through the competitor's short drains, and ends when for
    /// `compete_after` the part of the queue that the flow's own bytes do
    /// not explain stays under the standing threshold or the flow delivers
    /// `COMPETE_EXIT_SHARE` of BW_avg or more.
    fn track_competitor(
        &mut self,
        now: Instant,
        standing_test: bool,
        standing: bool,
        queue: f64,
        own_queue: f64,
        threshold: f64,
    ) {
        if self.cfg.compete_after.is_zero() || !standing_test {
            return;
        }
        let after = self.cfg.compete_after;
        let shallow = queue <= self.cfg.compete_queue_max.as_secs_f64();
        if self.competing {
            if !shallow {
                // §5.5: behind a deep buffer, Camel keeps a minimal rate.
                self.end_competing();
            } else if queue - own_queue > threshold
                && self.own_share.is_some_and(|s| s < COMPETE_EXIT_SHARE)
            {
                self.clear_since = None;
            } else {
                let clear = *self.clear_since.get_or_insert(now);
                if now.saturating_duration_since(clear) >= after {
                    self.end_competing();
                }
            }
        } else {
            if standing {
                self.last_standing = Some(now);
            } else if self
                .last_standing
                .is_none_or(|t| now.saturating_duration_since(t) > COMPETE_GAP)
            {
                // No queue, or it drained: a delay-based flow's (its own or
                // a peer's, all of them cutting) would, within the span.
                self.span.clear();
                return;
            }
            self.span
                .push_back((now, self.own_share.unwrap_or(1.0), queue));
            while self
                .span
                .front()
                .is_some_and(|&(t, _, _)| now.saturating_duration_since(t) > after)
            {
                self.span.pop_front();
            }
            let full = self
                .span
                .front()
                .is_some_and(|&(t, _, _)| now.saturating_duration_since(t) >= after.mul_f64(0.9));
            if full && shallow {
                let n = self.span.len() as f64;
                let (share, q) = self
                    .span
                    .iter()
                    .fold((0.0, 0.0), |(s, q), &(_, si, qi)| (s + si, q + qi));
                // Delay-based flows hold a standing queue near the test's
                // threshold (I26), tens of ms; a loss-based flow fills the
                // buffer.
                if share / n < COMPETE_SHARE && q / n >= COMPETE_QUEUE_MIN.as_secs_f64() {
                    self.competing = true;
                    self.clear_since = None;
                    self.span.clear();
                }
            }
        }
        if self.competing {
            self.competitor_queue = Duration::from_secs_f64(queue);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;
    use rand::Rng as _;

    fn cfg() -> DetectorConfig {
        DetectorConfig {
            gamma_initial: 1.0,
            gamma_decrease: 0.95,
            gradient_threshold: 0.5,
            detect_window: Duration::from_secs(1),
            detect_min_samples: 10,
            detect_min_spread: Bytes::new(1248),
            anchored_gradient: false,
            loss_margin: 0.02,
            loss_min_packets: 20,
            gamma_increase: 0.0,
            standing_queue: Duration::ZERO,
            queue_drain_horizon: Duration::ZERO,
            compete_after: Duration::ZERO,
            compete_queue_max: Duration::from_secs(1),
        }
    }

    /// Eq. 4 (rebuilt): RTT = RTprop + max(0, x − BDP) / BW.
    fn eq4(x: f64) -> f64 {
        let bw = 2e6 / 8.0; // 2 Mbps in B/s (§4.2)
        let rtprop = 0.025;
        rtprop + (x - bw * rtprop).max(0.0) / bw
    }

    #[test]
    fn inflight_gradient_on_eq4_trace() {
        // §4.2 synthetic set-up: 2 Mbps, RTprop 25 ms, BDP 6250 B.
        let mut r = rng::stream(7, 1);
        // An encoder-like in-flight series, one sample per 33 ms: phases of
        // 10–20 s whose mean lies either below the BDP (3 ± 2.5 KB) or above
        // it (9 ± 1.2 KB: a standing queue whose level varies by about one
        // packet), as in Fig. 7.
        let mut series = Vec::new();
        let mut k = 0u64;
        let mut above = false;
        while series.len() < 6000 {
            let len = 300 + (r.random::<f64>() * 300.0) as usize;
            let (mean, spread) = if above {
                (9_000.0, 1_200.0)
            } else {
                (3_000.0, 2_500.0)
            };
            for _ in 0..len {
                let x = mean + (r.random::<f64>() * 2.0 - 1.0) * spread;
                series.push((Instant::from_millis(33 * k), x, eq4(x)));
                k += 1;
            }
            above = !above;
        }
        // Three signals over the same 5 s window (Fig. 7): the in-flight
        // gradient (G > 0.5), RTT − minRTT above one packet's queueing delay
        // (1248 B at 2 Mbps = 5 ms), and ∂RTT/∂t > 0. Ground truth: RTT > RTprop.
        let w = 150;
        let (mut ok_g, mut ok_min, mut ok_t, mut n) = (0, 0, 0, 0);
        let (mut standing, mut standing_g, mut standing_min, mut standing_t) = (0, 0, 0, 0);
        for i in w..series.len() {
            let win = &series[i - w..=i];
            let truth = series[i].2 > 0.025 + 1e-9;
            let g = slope(win.iter().map(|&(_, x, d)| (x, d))).unwrap() * 2e6 / 8.0 > 0.5;
            let min_rtt = win.iter().map(|w| w.2).fold(f64::MAX, f64::min);
            let q = series[i].2 - min_rtt > 0.005;
            let st = slope(win.iter().map(|&(t, _, d)| (t.as_secs_f64(), d))).unwrap() > 0.0;
            n += 1;
            ok_g += usize::from(g == truth);
            ok_min += usize::from(q == truth);
            ok_t += usize::from(st == truth);
            // A queue that has stood for the whole window ("after the queue
            // has built up"): only the in-flight gradient still sees it.
            if win.iter().all(|p| p.2 > 0.025 + 1e-9) {
                standing += 1;
                standing_g += usize::from(g);
                standing_min += usize::from(q);
                standing_t += usize::from(st);
            }
        }
        assert!(standing > 1000);
        assert_eq!(standing_g, standing, "G misses a standing queue");
        assert!(
            standing_min * 2 < standing && standing_t * 10 < standing * 7,
            "minRTT {standing_min}, time {standing_t} of {standing}"
        );
        let acc = |k: usize| k as f64 / n as f64;
        let (ag, am, at) = (acc(ok_g), acc(ok_min), acc(ok_t));
        // Overall (pointwise) the gradient is at least as accurate; its errors
        // are the 5 s after a queue drains, while the window still holds
        // congested points (why `detect_window` is 1 s, I11).
        assert!(
            ag >= am && ag > at + 0.1,
            "gradient {ag}, minRTT {am}, time {at}"
        );
        // Regimes of eq. 4: G ≈ 1 straddling the BDP, ≈ 0 entirely below.
        let above: Vec<_> = (0..40)
            .map(|i| (i as f64 * 300.0, eq4(i as f64 * 300.0 + 7000.0)))
            .collect();
        let g_above = slope(above.iter().copied()).unwrap() * 2e6 / 8.0;
        assert!((g_above - 1.0).abs() < 1e-9, "{g_above}");
        let below: Vec<_> = (0..40)
            .map(|i| (i as f64 * 150.0, eq4(i as f64 * 150.0)))
            .collect();
        let g_below = slope(below.iter().copied()).unwrap() * 2e6 / 8.0;
        assert!(g_below.abs() < 1e-9, "{g_below}");
    }

    fn feed(d: &mut CongestionDetector, t0: u64, f: impl Fn(u64) -> (u64, f64)) {
        for k in 0..30 {
            let (x, delay) = f(k);
            d.on_sample(
                Instant::from_millis(t0 + 30 * k),
                Bytes::new(x),
                Duration::from_secs_f64(delay),
            );
        }
    }

    #[test]
    fn jitter_uncorrelated_with_inflight_is_not_congestion() {
        let mut d = CongestionDetector::new(cfg());
        let mut r = rng::stream(3, 2);
        let jit: Vec<f64> = (0..30).map(|_| r.random::<f64>() * 0.030).collect();
        // x alternates low/high, jitter drawn independently of it.
        feed(&mut d, 0, |k| {
            (1000 + (k % 7) * 1500, 0.025 + jit[k as usize])
        });
        let bw = Bitrate::mbps(2);
        let dec = d.detect(
            Instant::from_millis(900),
            bw,
            Duration::from_millis(40),
            Duration::from_millis(100),
        );
        assert_eq!(dec, Decision::Clear, "G = {:?}", d.gradient());
        assert!((d.gamma() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn loss_above_physical_loss_is_congestion() {
        // I23: a full drop-tail queue loses half the packets while the
        // delays stay flat (G ≈ 0) and too few frames give delay samples.
        let bw = Bitrate::mbps(1);
        let d_min = Duration::from_millis(40);
        let round = Duration::from_millis(100);
        for (p_phys, lost_of_40, expect) in [
            (None, 20, Decision::Congested),
            // 5 % over a 4 % physical loss: within the margin.
            (Some(0.04), 2, Decision::Undecided),
            // 10 % over 4 %: 6 points, within 2 + 2 · 3.1 = 8.2 (noise).
            (Some(0.04), 4, Decision::Undecided),
            // 20 % over 4 %: congestion.
            (Some(0.04), 8, Decision::Congested),
            // 60 % over a 50 % physical loss, 40 reports: within 2 points
            // plus two standard errors (15.8 points), noise.
            (Some(0.5), 24, Decision::Undecided),
            // 80 %: congestion.
            (Some(0.5), 32, Decision::Congested),
        ] {
            let mut d = CongestionDetector::new(cfg());
            d.set_physical_loss(p_phys);
            for k in 0..40 {
                d.on_outcome(k < lost_of_40);
            }
            let dec = d.detect(Instant::from_millis(500), bw, d_min, round);
            assert_eq!(dec, expect, "p_phys {p_phys:?}, {lost_of_40}/40 lost");
            let want_gamma = if expect == Decision::Congested {
                0.95
            } else {
                1.0
            };
            assert!((d.gamma() - want_gamma).abs() < 1e-12);
        }
        // Too few reports: no loss verdict.
        let mut d = CongestionDetector::new(cfg());
        for _ in 0..19 {
            d.on_outcome(true);
        }
        let dec = d.detect(Instant::from_millis(500), bw, d_min, round);
        assert_eq!(dec, Decision::Undecided);
        // The counts restart after a verdict: a clean next round is clear of loss.
        d.on_outcome(true);
        assert_eq!(
            d.detect(Instant::from_millis(500), bw, d_min, round),
            Decision::Congested
        );
        for _ in 0..20 {
            d.on_outcome(false);
        }
        assert_eq!(
            d.detect(Instant::from_millis(700), bw, d_min, round),
            Decision::Undecided
        );
        assert_eq!(d.round_loss(), Some(1.0));
    }

    fn anchored(on: bool) -> CongestionDetector {
        CongestionDetector::new(DetectorConfig {
            anchored_gradient: on,
            ..cfg()
        })
    }

    #[test]
    fn full_queue_is_congestion_only_with_the_anchor() {
        // I22: a drop-tail queue kept full by other traffic. Every frame waits
        // 300 ms above D_min = 25 ms whatever our in-flight is: the fitted
        // slope is flat (G ≈ 0), the anchored one is (0.3 s · 250 kB/s) / 6 kB.
        let full = |k: u64| (3000 + (k % 7) * 1000, 0.325 + (k % 3) as f64 * 0.001);
        let bw = Bitrate::mbps(2);
        let d_min = Duration::from_millis(25);
        let mut plain = anchored(false);
        feed(&mut plain, 0, full);
        assert_eq!(
            plain.detect(Instant::from_millis(900), bw, d_min, Duration::ZERO),
            Decision::Clear
        );
        let mut d = anchored(true);
        feed(&mut d, 0, full);
        assert_eq!(
            d.detect(Instant::from_millis(900), bw, d_min, Duration::ZERO),
            Decision::Congested,
            "G_a = {:?}",
            d.anchored_gradient()
        );
        assert!(d.gradient().unwrap().abs() < 0.1);
        let ga = d.anchored_gradient().unwrap();
        assert!((ga - 0.3 * 250_000.0 / 6000.0).abs() < 1.0, "{ga}");
        // Standing queue without x spread: the anchored test still decides.
        let mut d = anchored(true);
        feed(&mut d, 0, |_| (6000, 0.325));
        assert_eq!(
            d.detect(Instant::from_millis(900), bw, d_min, Duration::ZERO),
            Decision::Congested
        );
    }

    #[test]
    fn anchored_test_ignores_jitter_that_reaches_d_min() {
        // Up to 100 ms of independent jitter: some frames of the window come
        // close to D_min, so the window's lowest delay is near it and the
        // anchored test, unlike one on the mean delay, stays quiet.
        let mut r = rng::stream(5, 3);
        let jit: Vec<f64> = (0..30).map(|_| r.random::<f64>() * 0.100).collect();
        let mut d = anchored(true);
        feed(&mut d, 0, |k| {
            (1000 + (k % 7) * 1500, 0.025 + jit[k as usize])
        });
        let dec = d.detect(
            Instant::from_millis(900),
            Bitrate::mbps(2),
            Duration::from_millis(25),
            Duration::ZERO,
        );
        assert_eq!(dec, Decision::Clear, "G_a = {:?}", d.anchored_gradient());
        let mean: f64 = jit.iter().sum::<f64>() / 30.0;
        let x_mean = (0..30)
            .map(|k| 1000.0 + (k % 7) as f64 * 1500.0)
            .sum::<f64>()
            / 30.0;
        assert!(
            mean * 250_000.0 / x_mean > 0.5,
            "a mean-delay anchor would fire"
        );
    }

    #[test]
    fn constant_inflight_is_judged_on_the_anchor() {
        // I11 (revised): in-flight spread < one packet gives no slope; the
        // anchored gradient decides instead, so a flow whose frames are all
        // one packet long is not left with γ frozen.
        let at = |standing: f64| {
            let mut d = CongestionDetector::new(cfg());
            feed(&mut d, 0, |k| (5000 + (k % 2) * 1000, 0.040 + standing));
            let dec = d.detect(
                Instant::from_millis(900),
                Bitrate::mbps(2),
                Duration::from_millis(40),
                Duration::ZERO,
            );
            (dec, d.gradient(), d.anchored_gradient())
        };
        // Delays at D_min: clear.
        let (dec, g, ga) = at(0.0);
        assert_eq!((dec, g), (Decision::Clear, None));
        assert_eq!(ga, Some(0.0));
        // A queue standing 100 ms above D_min with 5.5 KB in flight (22 ms
        // at 2 Mbps): G_a ≈ 4.5 > threshold.
        let (dec, g, ga) = at(0.1);
        assert_eq!((dec, g), (Decision::Congested, None));
        assert!(
            (ga.unwrap() - 0.1 / (5500.0 / 250_000.0)).abs() < 0.2,
            "{ga:?}"
        );
        // Too few samples: still undecided.
        let mut d = CongestionDetector::new(cfg());
        d.on_sample(Instant::ZERO, Bytes::new(5000), Duration::from_millis(40));
        let dec = d.detect(
            Instant::from_millis(900),
            Bitrate::mbps(2),
            Duration::from_millis(40),
            Duration::ZERO,
        );
        assert_eq!(dec, Decision::Undecided);
    }

    /// One decision at `t_ms` on 30 samples of constant-spread in-flight whose
    /// delay is `delay(k)`, with D_min 40 ms.
    fn decide(d: &mut CongestionDetector, t_ms: u64, delay: impl Fn(u64) -> f64) -> Decision {
        feed(d, t_ms, |k| ((k % 10) * 300 + 2000, delay(k)));
        d.detect(
            Instant::from_millis(t_ms + 900),
            Bitrate::mbps(2),
            Duration::from_millis(40),
            Duration::from_millis(100),
        )
    }

    #[test]
    fn gamma_climbs_back_additively() {
        // I25: gamma_increase 0.02: after two cuts (0.9025) each clear round
        // adds 0.02 up to γ₀; the paper's reset would be 1 at once.
        let mut d = CongestionDetector::new(DetectorConfig {
            gamma_increase: 0.02,
            standing_queue: Duration::from_millis(10),
            ..cfg()
        });
        let standing = |_| 0.040 + 0.030;
        let clear = |k| 0.040 + 0.001 * (k % 3) as f64;
        assert_eq!(decide(&mut d, 0, standing), Decision::Congested);
        assert_eq!(decide(&mut d, 1000, standing), Decision::Congested);
        assert!((d.gamma() - 0.9025).abs() < 1e-12);
        assert_eq!(decide(&mut d, 2000, clear), Decision::Clear);
        assert!((d.gamma() - 0.9225).abs() < 1e-12, "{}", d.gamma());
        for k in 3..10 {
            decide(&mut d, 1000 * k, clear);
        }
        assert!(
            (d.gamma() - 1.0).abs() < 1e-12,
            "capped at γ₀: {}",
            d.gamma()
        );
    }

    #[test]
    fn a_large_standing_queue_cuts_gamma_to_drain_it() {
        // I30: horizon 1 s. A queue standing 30 ms above D_min: eq. 5's
        // 0.95 (1 − 0.03 is milder); 300 ms: 0.7; 900 ms: the 0.5 floor;
        // without the horizon, 0.95 whatever the queue.
        for (standing_ms, horizon_ms, want) in [
            (30.0, 1000, 0.95),
            (300.0, 1000, 0.7),
            (900.0, 1000, QUEUE_DRAIN_FLOOR),
            (300.0, 0, 0.95),
        ] {
            let mut d = CongestionDetector::new(DetectorConfig {
                standing_queue: Duration::from_millis(10),
                queue_drain_horizon: Duration::from_millis(horizon_ms),
                ..cfg()
            });
            let dec = decide(&mut d, 0, |_| 0.040 + standing_ms / 1000.0);
            assert_eq!(dec, Decision::Congested);
            assert!(
                (d.gamma() - want).abs() < 1e-9,
                "{standing_ms} ms, horizon {horizon_ms}: γ {}",
                d.gamma()
            );
        }
        // A congestion found by the gradient alone, with no standing queue,
        // keeps eq. 5's step whatever the horizon.
        let mut d = CongestionDetector::new(DetectorConfig {
            standing_queue: Duration::from_millis(10),
            queue_drain_horizon: Duration::from_secs(1),
            ..cfg()
        });
        feed(&mut d, 0, |k| {
            let x = 2000 + (k % 6) * 2000;
            (x, 0.040 + (x as f64 - 2000.0) / 250_000.0)
        });
        let dec = d.detect(
            Instant::from_millis(900),
            Bitrate::mbps(2),
            Duration::from_millis(40),
            Duration::from_millis(100),
        );
        assert_eq!(dec, Decision::Congested);
        assert!((d.gamma() - 0.95).abs() < 1e-9, "γ {}", d.gamma());
    }

    #[test]
    fn standing_queue_is_congestion_for_every_flow_alike() {
        // I26: lowest delay of the window 30 ms above D_min = congestion,
        // whatever the flow's in-flight (G_a would divide by it); 5 ms is not.
        for threshold_ms in [10u64, 0] {
            let mut d = CongestionDetector::new(DetectorConfig {
                standing_queue: Duration::from_millis(threshold_ms),
                ..cfg()
            });
            // Delays flat in x (G ≈ 0): only the standing-queue test can fire.
            let dec = decide(&mut d, 0, |_| 0.070);
            let want = if threshold_ms > 0 {
                Decision::Congested
            } else {
                Decision::Clear
            };
            assert_eq!(dec, want, "standing_queue {threshold_ms} ms");
        }
        let mut d = CongestionDetector::new(DetectorConfig {
            standing_queue: Duration::from_millis(10),
            ..cfg()
        });
        assert_eq!(decide(&mut d, 0, |_| 0.045), Decision::Clear);
        // Jitter leaves some frames near D_min: the lowest delay decides.
        let mut d = CongestionDetector::new(DetectorConfig {
            standing_queue: Duration::from_millis(10),
            ..cfg()
        });
        let jitter = |k: u64| 0.041 + 0.020 * ((k * 7) % 10) as f64 / 10.0;
        assert_eq!(decide(&mut d, 0, jitter), Decision::Clear);
    }

    #[test]
    fn gamma_decreases_by_0_95_and_resets_to_1() {
        let mut d = CongestionDetector::new(cfg());
        let bw = Bitrate::mbps(2);
        feed(&mut d, 0, |k| {
            let x = (k % 10) * 1000 + 6000;
            (x, eq4(x as f64))
        });
        let round = Duration::from_millis(100);
        assert_eq!(
            d.detect(
                Instant::from_millis(900),
                bw,
                Duration::from_millis(40),
                round
            ),
            Decision::Congested
        );
        feed(&mut d, 900, |k| {
            let x = (k % 10) * 1000 + 6000;
            (x, eq4(x as f64))
        });
        assert_eq!(
            d.detect(
                Instant::from_millis(1800),
                bw,
                Duration::from_millis(40),
                round
            ),
            Decision::Congested
        );
        assert!((d.gamma() - 0.9025).abs() < 1e-12);
        // The window moves on to uncongested samples.
        feed(&mut d, 1800, |k| {
            let x = (k % 5) * 1000;
            (x, eq4(x as f64))
        });
        assert_eq!(
            d.detect(
                Instant::from_millis(2700),
                bw,
                Duration::from_millis(40),
                round
            ),
            Decision::Clear
        );
        assert!((d.gamma() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn one_decision_per_feedback_round() {
        let mut d = CongestionDetector::new(cfg());
        let bw = Bitrate::mbps(2);
        feed(&mut d, 0, |k| {
            let x = (k % 10) * 1000 + 6000;
            (x, eq4(x as f64))
        });
        let round = Duration::from_millis(100);
        for i in 0..10 {
            d.detect(
                Instant::from_millis(900 + 9 * i),
                bw,
                Duration::from_millis(40),
                round,
            );
        }
        assert!((d.gamma() - 0.95).abs() < 1e-12, "{}", d.gamma());
    }

    #[test]
    fn decisions_use_only_frames_sent_after_the_last_one() {
        let mut d = CongestionDetector::new(cfg());
        let bw = Bitrate::mbps(2);
        let congested = |k: u64| {
            let x = (k % 10) * 1000 + 6000;
            (x, eq4(x as f64))
        };
        feed(&mut d, 0, congested);
        assert_eq!(
            d.detect(
                Instant::from_millis(900),
                bw,
                Duration::from_millis(40),
                Duration::ZERO
            ),
            Decision::Congested
        );
        // Frames sent before the decision but reported after it are stale:
        // no second cut on the same evidence, however much time passes.
        feed(&mut d, 0, congested);
        assert_eq!(
            d.detect(
                Instant::from_secs(2),
                bw,
                Duration::from_millis(40),
                Duration::ZERO
            ),
            Decision::Undecided
        );
        assert!((d.gamma() - 0.95).abs() < 1e-12);
    }

    /// I35's detector: the standing-queue test (I26), γ climbing back
    /// additively (I25), and the competing mode after 10 s.
    fn competitor_detector() -> CongestionDetector {
        CongestionDetector::new(DetectorConfig {
            standing_queue: Duration::from_millis(10),
            gamma_increase: 0.02,
            compete_after: Duration::from_secs(10),
            ..cfg()
        })
    }

    /// One decision a second over `secs`, every frame of second s behind a
    /// queue of `queue(s)` (D_min 40 ms), the flow delivering `share(s)` of
    /// BW_avg.
    fn each_second(
        d: &mut CongestionDetector,
        secs: std::ops::Range<u64>,
        queue: impl Fn(u64) -> f64,
        share: impl Fn(u64) -> f64,
    ) -> Vec<Decision> {
        secs.map(|s| {
            d.set_own_share(Some(share(s)));
            let q = queue(s);
            decide(d, s * 1000, |_| 0.040 + q)
        })
        .collect()
    }

    #[test]
    fn a_queue_that_stands_while_the_flow_is_at_its_floor_starts_the_competing_mode() {
        // I35: half a second of queue at every decision while the flow
        // delivers 5 % of BW_avg. The standing-queue test cuts γ until the
        // span covers `compete_after` (nine seconds between its first and
        // last decision, 0.9 × 10 s), then only loss is congestion.
        let mut d = competitor_detector();
        let before = each_second(&mut d, 0..9, |_| 0.5, |_| 0.05);
        assert!(
            before.iter().all(|&x| x == Decision::Congested),
            "{before:?}"
        );
        assert_eq!(d.competitor_queue(), None);
        each_second(&mut d, 9..10, |_| 0.5, |_| 0.05);
        let q = d.competitor_queue().expect("competing after 10 s");
        assert!((q.as_secs_f64() - 0.5).abs() < 1e-6, "{q:?}");
        // The queue alone no longer cuts: γ climbs 0.02 a decision.
        let g = d.gamma();
        assert_eq!(
            each_second(&mut d, 10..12, |_| 0.5, |_| 0.05),
            [Decision::Clear; 2]
        );
        assert!(
            (d.gamma() - (g + 0.04)).abs() < 1e-9,
            "{} -> {}",
            g,
            d.gamma()
        );
        // A round losing a third of its packets is congestion (eq. 5).
        for k in 0..30 {
            d.on_outcome(k % 3 == 0);
        }
        let g = d.gamma();
        assert_eq!(
            each_second(&mut d, 12..13, |_| 0.5, |_| 0.05),
            [Decision::Congested]
        );
        assert!((d.gamma() - g * 0.95).abs() < 1e-9);
        // A short drain (the competitor's back-off) does not end the mode.
        each_second(&mut d, 13..14, |_| 0.0, |_| 0.05);
        each_second(&mut d, 14..16, |_| 0.5, |_| 0.05);
        assert!(d.competitor_queue().is_some());
    }

    #[test]
    fn a_draining_queue_a_large_share_or_a_short_queue_does_not_start_it() {
        // I35: each of these is what delay-based flows (the flow itself or
        // its peers) do, and none may enter the competing mode.
        type Series = fn(u64) -> f64;
        let cases: [(&str, Series, Series); 4] = [
            // The queue drains for two seconds (a join transient ending).
            (
                "drains",
                |s| if (5..7).contains(&s) { 0.0 } else { 0.5 },
                |_| 0.05,
            ),
            // The flow delivers 30 % of BW_avg: a share it could be making.
            ("large share", |_| 0.5, |_| 0.3),
            // 50 ms on the mean: peers hold the queue near the threshold.
            ("short queue", |_| 0.05, |_| 0.05),
            // Deeper than `compete_max_queue` (1 s): §5.5's deep buffer.
            ("deep", |_| 1.5, |_| 0.05),
        ];
        for (name, queue, share) in cases {
            let mut d = competitor_detector();
            each_second(&mut d, 0..16, queue, share);
            assert_eq!(d.competitor_queue(), None, "{name}");
        }
        // One frame behind more than `compete_queue_max` restarts the span.
        let mut d = competitor_detector();
        each_second(&mut d, 0..5, |_| 0.5, |_| 0.05);
        d.on_queue(Duration::from_millis(1500));
        each_second(&mut d, 5..14, |_| 0.5, |_| 0.05);
        assert_eq!(d.competitor_queue(), None, "deep frame");
        each_second(&mut d, 14..15, |_| 0.5, |_| 0.05);
        assert!(d.competitor_queue().is_some(), "nine seconds after it");
        // With `compete_after` zero the mode is off.
        let mut d = CongestionDetector::new(DetectorConfig {
            standing_queue: Duration::from_millis(10),
            ..cfg()
        });
        each_second(&mut d, 0..30, |_| 0.5, |_| 0.05);
        assert_eq!(d.competitor_queue(), None);
    }

    #[test]
    fn the_competing_mode_ends_when_the_queue_deepens_drains_or_is_the_flows_own() {
        let enter = || {
            let mut d = competitor_detector();
            each_second(&mut d, 0..10, |_| 0.5, |_| 0.05);
            assert!(d.competitor_queue().is_some());
            d
        };
        // One frame behind more than `compete_queue_max` (§5.5: yield).
        let mut d = enter();
        d.on_queue(Duration::from_millis(900));
        assert!(d.competitor_queue().is_some());
        d.on_queue(Duration::from_millis(1100));
        assert_eq!(d.competitor_queue(), None);
        // No queue beyond what the flow's own bytes explain for 10 s (the
        // competitor left).
        let mut d = enter();
        each_second(&mut d, 10..19, |_| 0.0, |_| 0.05);
        assert!(d.competitor_queue().is_some(), "ends only after 10 s");
        each_second(&mut d, 19..21, |_| 0.0, |_| 0.05);
        assert_eq!(d.competitor_queue(), None);
        // The flow delivers most of BW_avg for 10 s: the queue is its own.
        let mut d = enter();
        each_second(&mut d, 10..21, |_| 0.5, |_| 0.8);
        assert_eq!(d.competitor_queue(), None);
    }
}
