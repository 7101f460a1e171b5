//! EDCLD, the second baseline of Delay-BBR multipath
//! (`shared/papers/delay-bbr-multipath.txt`) §4.3, eq. 17.
//!
//! Each path has a cost, a mix of an M/M/1 delay (Poisson traffic) and a
//! queue-drain delay (unknown traffic):
//!
//! `C_p(ψ_p) = D_p + (1 − w) · 1/(μ_p − ψ_p·λ) + w · q_p/μ_p` (eq. 17),
//!
//! with `D_p` the fixed propagation delay, `μ_p` the available bandwidth,
//! `q_p` the path's input buffer, `ψ_p` its packet splitting ratio, `λ` the
//! total input rate and `w = 0.8`. Periodically the ratio of the cheapest path
//! grows and the ratio of the most expensive path shrinks by the `Δψ` solving
//! `C_best(ψ_best + Δψ) = C_worst(ψ_worst − Δψ)`, a quadratic in `Δψ`; the
//! paths in between keep their ratio (§4.3). Packets are then split by the
//! ratios with a deterministic deficit counter.
//!
//! Units: rates in bytes/s, delays in seconds. `1/(μ − ψλ)` is the M/M/1
//! sojourn time in packets, so with rates in bytes it becomes
//! `L/(μ − ψλ)` for a meta packet of `L` bytes.

use super::{candidate_filter, PathScheduler, PathState};
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Configuration of [`Edcld`].
#[derive(Debug, Clone, PartialEq)]
pub struct EdcldConfig {
    /// `w` in eq. 17, weight of the unknown-traffic term. §4.3: "In
    /// experiment, w is set to 0.8."
    pub w: f64,
    /// Meta packet size `L` that turns the M/M/1 term into seconds. The paper
    /// gives none; default the packetizer's payload MTU
    /// ([`DEFAULT_MTU`](crate::media::packetizer::DEFAULT_MTU), 1200 B), the
    /// size of the meta packets the session schedules.
    pub packet_size: Bytes,
    /// How often the split ratios are updated (one quadratic step per
    /// update). The paper gives no period; 100 ms is a few frames at 30 fps,
    /// long enough to measure `λ`.
    pub update_interval: Duration,
    /// RTT assumed for a path with neither `min_rtt` nor `srtt` (`D_p` is
    /// half of it). 333 ms, RFC 9002 §6.2.2 kInitialRtt; the paper gives none.
    pub unknown_rtt: Duration,
}

impl Default for EdcldConfig {
    fn default() -> Self {
        EdcldConfig {
            // §4.3: w = 0.8.
            w: 0.8,
            packet_size: crate::media::packetizer::DEFAULT_MTU,
            update_interval: Duration::from_millis(100),
            // RFC 9002 §6.2.2: kInitialRtt = 333 ms.
            unknown_rtt: Duration::from_millis(333),
        }
    }
}

/// EDCLD (§4.3, eq. 17).
#[derive(Debug, Clone)]
pub struct Edcld {
    config: EdcldConfig,
    /// Packet splitting ratio `ψ_p` per path; sums to 1.
    psi: Vec<f64>,
    /// Deficit counter per path (bytes owed to the path by its ratio).
    credit: Vec<f64>,
    /// Start of the current `λ` measurement interval.
    interval_start: Option<Instant>,
    /// Bytes scheduled since `interval_start`.
    interval_bytes: u64,
    /// Last measured total input rate `λ`, bytes/s.
    input_rate: f64,
}

impl Edcld {
    /// A scheduler with the given configuration.
    pub fn new(config: EdcldConfig) -> Self {
        Edcld {
            config,
            psi: Vec::new(),
            credit: Vec::new(),
            interval_start: None,
            interval_bytes: 0,
            input_rate: 0.0,
        }
    }

    /// Current splitting ratios `ψ_p`.
    pub fn split_ratios(&self) -> &[f64] {
        &self.psi
    }

    /// Last measured total input rate `λ`, bytes per second.
    pub fn input_rate(&self) -> f64 {
        self.input_rate
    }

    /// `D_p`: half of `min_rtt` (the propagation estimate), else of `srtt`,
    /// else of `unknown_rtt`; seconds.
    fn propagation(&self, p: &PathState) -> f64 {
        p.min_rtt
            .or(p.srtt)
            .unwrap_or(self.config.unknown_rtt)
            .as_secs_f64()
            / 2.0
    }

    /// `μ_p` in bytes per second.
    fn mu(p: &PathState) -> f64 {
        p.pacing_rate.as_bps_f64() / 8.0
    }

    /// The part of eq. 17 that does not depend on `ψ`: `D_p + w·q_p/μ_p`
    /// (seconds; infinite when `μ_p = 0`).
    fn fixed_cost(&self, p: &PathState) -> f64 {
        let mu = Self::mu(p);
        if mu <= 0.0 {
            return f64::INFINITY;
        }
        self.propagation(p) + self.config.w * p.queued.as_f64() / mu
    }

    /// Eq. 17, `C_p(ψ)` in seconds for input rate `lambda` (bytes/s).
    /// Infinite when the M/M/1 queue would be unstable (`μ_p ≤ ψ·λ`).
    pub fn cost(&self, p: &PathState, psi: f64, lambda: f64) -> f64 {
        let mu = Self::mu(p);
        let room = mu - psi * lambda;
        if mu <= 0.0 || room <= 0.0 {
            return f64::INFINITY;
        }
        // eq. 17: D_p + (1 − w)·1/(μ_p − ψ_p·λ) + w·q_p/μ_p, the M/M/1 term
        // scaled by the meta packet size L (rates in bytes/s).
        self.fixed_cost(p) + (1.0 - self.config.w) * self.config.packet_size.as_f64() / room
    }

    /// Solve `C_best(ψ_b + Δψ) = C_worst(ψ_w − Δψ)` (§4.3) for `Δψ ≥ 0`.
    ///
    /// With `x = Δψ·λ`, `k = (1 − w)·L`, `a = μ_b − ψ_b·λ`, `b = μ_w − ψ_w·λ`
    /// and `A` the difference of the fixed parts (worst − best), the equation
    /// `k/(a − x) − k/(b + x) = A` becomes
    /// `A·x² + (2k + A(b − a))·x − (A·a·b + k(a − b)) = 0`; its root in
    /// `[0, a)` is the one that keeps the best path stable (the left side is
    /// increasing in `x` there, so there is exactly one). Requires `a, b > 0`
    /// and `λ > 0`. The result is capped at `ψ_w`.
    pub fn balance_step(
        &self,
        best: &PathState,
        psi_b: f64,
        worst: &PathState,
        psi_w: f64,
        lambda: f64,
    ) -> f64 {
        let k = (1.0 - self.config.w) * self.config.packet_size.as_f64();
        let a = Self::mu(best) - psi_b * lambda;
        let b = Self::mu(worst) - psi_w * lambda;
        let big_a = self.fixed_cost(worst) - self.fixed_cost(best);
        let lin = 2.0 * k + big_a * (b - a);
        let cst = -(big_a * a * b + k * (a - b));
        let x = if big_a.abs() < 1e-15 || k == 0.0 {
            if k == 0.0 {
                // w = 1: costs do not depend on ψ; nothing to balance.
                0.0
            } else {
                // A = 0: linear, x = (a − b)/2.
                -cst / lin
            }
        } else {
            let disc = (lin * lin - 4.0 * big_a * cst).max(0.0);
            let sq = disc.sqrt();
            let r1 = (-lin + sq) / (2.0 * big_a);
            let r2 = (-lin - sq) / (2.0 * big_a);
            let ok = |r: f64| r.is_finite() && r >= 0.0 && r < a;
            match (ok(r1), ok(r2)) {
                (true, _) => r1,
                (false, true) => r2,
                // Only rounding can land here (a root in [0, a) exists when
                // C_best ≤ C_worst); no move is the safe answer.
                (false, false) => 0.0,
            }
        };
        (x.max(0.0) / lambda).min(psi_w)
    }

    fn reset_ratios(&mut self, paths: &[PathState]) {
        let total: f64 = paths.iter().map(Self::mu).sum();
        let n = paths.len() as f64;
        for (psi, p) in self.psi.iter_mut().zip(paths) {
            *psi = if total > 0.0 {
                Self::mu(p) / total
            } else {
                1.0 / n
            };
        }
    }

    /// One EDCLD iteration over the candidate paths at input rate `λ`.
    fn update_ratios(&mut self, paths: &[PathState]) {
        let lambda = self.input_rate;
        if lambda <= 0.0 {
            return;
        }
        let candidate = candidate_filter(paths);
        let mut best: Option<(usize, f64)> = None;
        let mut worst: Option<(usize, f64)> = None;
        for (i, p) in paths.iter().enumerate() {
            if !candidate(p) {
                continue;
            }
            let c = self.cost(p, self.psi[i], lambda);
            if best.is_none_or(|(_, bc)| c < bc) {
                best = Some((i, c));
            }
            // Only a path with a share to give can be the worst.
            if self.psi[i] > 0.0 && worst.is_none_or(|(_, wc)| c > wc) {
                worst = Some((i, c));
            }
        }
        let (Some((b, cb)), Some((w, cw))) = (best, worst) else {
            return;
        };
        if cb.is_infinite() {
            // Every candidate is overloaded: fall back to shares ∝ μ.
            self.reset_ratios(paths);
            return;
        }
        if b == w || cw <= cb {
            return;
        }
        let delta = if cw.is_infinite() {
            // The worst path's queue is unstable, so the quadratic has no
            // finite side to balance against: halve its share (our choice).
            self.psi[w] / 2.0
        } else {
            self.balance_step(&paths[b], self.psi[b], &paths[w], self.psi[w], lambda)
        };
        self.psi[b] += delta;
        self.psi[w] -= delta;
    }
}

impl PathScheduler for Edcld {
    fn name(&self) -> &'static str {
        "edcld"
    }

    fn choose_path(&mut self, now: Instant, paths: &[PathState], size: Bytes) -> Option<usize> {
        if paths.is_empty() {
            return None;
        }
        if self.psi.len() != paths.len() {
            self.psi.clear();
            self.psi.resize(paths.len(), 0.0);
            self.credit.clear();
            self.credit.resize(paths.len(), 0.0);
            self.reset_ratios(paths);
        }
        let start = *self.interval_start.get_or_insert(now);
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= self.config.update_interval && !elapsed.is_zero() {
            // λ over the interval that just ended (bytes/s).
            self.input_rate = self.interval_bytes as f64 / elapsed.as_secs_f64();
            self.update_ratios(paths);
            self.interval_start = Some(now);
            self.interval_bytes = 0;
        }
        self.interval_bytes = self.interval_bytes.saturating_add(size.get());

        // Deterministic split by ψ: each candidate earns its normalised share
        // of the packet, the one owed the most gets it.
        let candidate = candidate_filter(paths);
        let share_sum: f64 = paths
            .iter()
            .zip(&self.psi)
            .filter(|(p, _)| candidate(p))
            .map(|(_, s)| *s)
            .sum();
        let count = paths.iter().filter(|p| candidate(p)).count() as f64;
        let bytes = size.as_f64();
        let mut pick: Option<(usize, f64)> = None;
        for (i, p) in paths.iter().enumerate() {
            if !candidate(p) {
                continue;
            }
            let share = if share_sum > 0.0 {
                self.psi[i] / share_sum
            } else {
                1.0 / count
            };
            self.credit[i] += share * bytes;
            if pick.is_none_or(|(_, c)| self.credit[i] > c) {
                pick = Some((i, self.credit[i]));
            }
        }
        let (j, _) = pick?;
        self.credit[j] -= bytes;
        Some(j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bitrate;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn cfg() -> EdcldConfig {
        EdcldConfig {
            packet_size: Bytes::new(1000),
            ..EdcldConfig::default()
        }
    }

    #[test]
    fn eq17_cost_hand_worked() {
        let s = Edcld::new(cfg());
        // μ = 1e6 B/s (8 Mbps), D = 10 ms (RTT 20 ms), q = 10 000 B, ψλ = 0.5e6.
        let p = PathState::new(Bitrate::mbps(8), Some(ms(20)), Bytes::new(10_000));
        // 0.010 + 0.2·1000/0.5e6 + 0.8·10 000/1e6 = 0.010 + 0.0004 + 0.008.
        let c = s.cost(&p, 0.5, 1e6);
        assert!((c - 0.0184).abs() < 1e-12, "{c}");
        assert!(s.cost(&p, 1.0, 1e6).is_infinite());
    }

    #[test]
    fn balance_step_linear_case_equalises_symmetric_paths() {
        let s = Edcld::new(cfg());
        let p = PathState::new(Bitrate::mbps(8), Some(ms(20)), Bytes::ZERO);
        // ψ = (0.25, 0.75), λ = 1e6: a = 0.75e6, b = 0.25e6, A = 0 → x = 0.25e6.
        let d = s.balance_step(&p, 0.25, &p, 0.75, 1e6);
        assert!((d - 0.25).abs() < 1e-12, "{d}");
    }

    #[test]
    fn balance_step_quadratic_case_equalises_costs() {
        let s = Edcld::new(cfg());
        let best = PathState::new(Bitrate::mbps(8), Some(ms(20)), Bytes::ZERO);
        let worst = PathState::new(Bitrate::mbps(8), Some(ms(24)), Bytes::new(2_000));
        let (pb, pw, lambda) = (0.3, 0.7, 1e6);
        assert!(s.cost(&best, pb, lambda) < s.cost(&worst, pw, lambda));
        let d = s.balance_step(&best, pb, &worst, pw, lambda);
        assert!(d > 0.0 && d < pw);
        let cb = s.cost(&best, pb + d, lambda);
        let cw = s.cost(&worst, pw - d, lambda);
        assert!((cb - cw).abs() < 1e-9, "{cb} vs {cw}");
        // Hand check: A = (0.012 + 0.8·2000/1e6) − 0.010 = 0.0036 s, k = 200,
        // a = 0.7e6, b = 0.3e6. Root of 3.6e-3·x² + (400 − 1440)·x −
        // (756e6 + 80e6) = 0: x = (1040 + √(1040² + 4·3.6e-3·836e6))/7.2e-3
        // ≈ 647 521, so Δψ ≈ 0.6475 (check: 200/52 479 − 200/947 521 ≈
        // 0.003811 − 0.000211 = 0.0036). The fixed-cost gap pushes the split
        // past the equal-room answer (a − b)/2 = 0.2.
        assert!((d - 0.647_52).abs() < 1e-4, "{d}");
    }

    #[test]
    fn ratios_start_proportional_to_rate_and_split_follows_them() {
        let mut s = Edcld::new(cfg());
        let paths = [
            PathState::new(Bitrate::mbps(3), Some(ms(20)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(1), Some(ms(20)), Bytes::ZERO),
        ];
        let mut count = [0u32; 2];
        for _ in 0..400 {
            count[s
                .choose_path(Instant::ZERO, &paths, Bytes::new(1000))
                .unwrap()] += 1;
        }
        assert_eq!(s.split_ratios(), &[0.75, 0.25]);
        assert_eq!(count, [300, 100]);
    }

    #[test]
    fn update_moves_share_from_costly_to_cheap_path() {
        let mut s = Edcld::new(cfg());
        // Equal rates, path 1 has a 200 ms longer propagation delay.
        let paths = [
            PathState::new(Bitrate::mbps(8), Some(ms(20)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(8), Some(ms(420)), Bytes::ZERO),
        ];
        // 100 ms at 4 Mbps input (50 000 B in 50 packets), then one update.
        for i in 0..50u64 {
            s.choose_path(Instant::from_millis(2 * i), &paths, Bytes::new(1000));
        }
        assert_eq!(s.split_ratios(), &[0.5, 0.5]);
        s.choose_path(Instant::from_millis(100), &paths, Bytes::new(1000));
        assert!((s.input_rate() - 500_000.0).abs() < 1e-6);
        // A = 0.2 s dwarfs the M/M/1 terms: all of path 1's share moves, as
        // long as path 0 stays stable (λ = 0.5e6 < μ_0 = 1e6).
        let r = s.split_ratios();
        assert!(r[0] > 0.99 && r[1] < 0.01, "{r:?}");
        assert!((r[0] + r[1] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn unstable_worst_path_loses_half_its_share() {
        let mut s = Edcld::new(cfg());
        let paths = [
            PathState::new(Bitrate::mbps(8), Some(ms(20)), Bytes::ZERO), // μ = 1e6 B/s
            PathState::new(Bitrate::kbps(800), Some(ms(20)), Bytes::ZERO), // μ = 1e5 B/s
        ];
        s.choose_path(Instant::ZERO, &paths, Bytes::new(1000));
        s.psi.copy_from_slice(&[0.2, 0.8]);
        for i in 1..50u64 {
            s.choose_path(Instant::from_millis(2 * i), &paths, Bytes::new(1000));
        }
        // λ = 50 000 B / 0.1 s = 0.5e6: path 1 needs 0.4e6 > μ_1 (unstable),
        // path 0 needs 0.1e6 < μ_0 (stable).
        s.choose_path(Instant::from_millis(100), &paths, Bytes::new(1000));
        let r = s.split_ratios();
        assert!(
            (r[0] - 0.6).abs() < 1e-12 && (r[1] - 0.4).abs() < 1e-12,
            "{r:?}"
        );
    }

    #[test]
    fn all_paths_overloaded_resets_ratios_to_rates() {
        let mut s = Edcld::new(cfg());
        let paths = [
            PathState::new(Bitrate::mbps(8), Some(ms(20)), Bytes::ZERO),
            PathState::new(Bitrate::kbps(800), Some(ms(20)), Bytes::ZERO),
        ];
        s.choose_path(Instant::ZERO, &paths, Bytes::new(2000));
        s.psi.copy_from_slice(&[0.5, 0.5]);
        for i in 1..100u64 {
            s.choose_path(Instant::from_millis(i), &paths, Bytes::new(2000));
        }
        // λ = 2e6 B/s exceeds μ_0 + μ_1 = 1.1e6: both costs infinite.
        s.choose_path(Instant::from_millis(100), &paths, Bytes::new(2000));
        let r = s.split_ratios();
        assert!((r[0] - 10.0 / 11.0).abs() < 1e-12, "{r:?}");
    }
}
