//! The paper's minimum-cost scheduler: Delay-BBR multipath
//! (`shared/papers/delay-bbr-multipath.txt`) §4.2, eq. 14–15, Algorithm 6.
//!
//! Each packet goes to the path with the smallest expected delivery delay
//! `λ_p = RTT_p/2 + Q_p/c_p` (eq. 14), `j = argmin_p λ_p` (eq. 15). Because the
//! session adds each placed packet to `Q_j` before the next call (Algorithm 6
//! line 5), a frame's packets spread over the paths as the cheap path's queue
//! grows.

use super::{candidate_filter, PathScheduler, PathState};
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// Configuration of [`MinCost`].
#[derive(Debug, Clone, PartialEq)]
pub struct MinCostConfig {
    /// RTT assumed for a path without an RTT sample. The paper gives none;
    /// default 333 ms is RFC 9002 §6.2.2 kInitialRtt (the usual "no sample
    /// yet" value), so a fresh path is neither preferred nor excluded.
    pub unknown_rtt: Duration,
}

impl Default for MinCostConfig {
    fn default() -> Self {
        MinCostConfig {
            // RFC 9002 §6.2.2: kInitialRtt = 333 ms.
            unknown_rtt: Duration::from_millis(333),
        }
    }
}

/// The minimum-cost scheduler (§4.2). Stateless apart from its configuration.
#[derive(Debug, Clone)]
pub struct MinCost {
    config: MinCostConfig,
}

impl MinCost {
    /// A scheduler with the given configuration.
    pub fn new(config: MinCostConfig) -> Self {
        MinCost { config }
    }

    /// The path cost `λ_p = RTT_p/2 + Q_p/c_p` (eq. 14).
    ///
    /// `c_p = 0` gives `Duration::MAX` even with an empty queue: a packet
    /// placed there would never be paced out. `RTT_p` unknown uses
    /// [`MinCostConfig::unknown_rtt`]. Saturates instead of overflowing.
    pub fn cost(&self, path: &PathState) -> Duration {
        if path.pacing_rate.is_zero() {
            return Duration::MAX;
        }
        // eq. 14: RTT_p(t)/2 + Q_p(t)/c_p(t)
        path.one_way_delay(self.config.unknown_rtt) + path.queued / path.pacing_rate
    }
}

impl PathScheduler for MinCost {
    fn name(&self) -> &'static str {
        "min-cost"
    }

    fn choose_path(&mut self, _now: Instant, paths: &[PathState], _size: Bytes) -> Option<usize> {
        let candidate = candidate_filter(paths);
        let mut best: Option<(usize, Duration)> = None;
        for (i, p) in paths.iter().enumerate() {
            if !candidate(p) {
                continue;
            }
            let c = self.cost(p);
            // eq. 15, argmin; equal costs keep the lower index (the paper gives
            // no tie rule; this one is deterministic).
            if best.is_none_or(|(_, bc)| c < bc) {
                best = Some((i, c));
            }
        }
        best.map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bitrate;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn cost_is_half_rtt_plus_queue_drain_time() {
        let s = MinCost::new(MinCostConfig::default());
        // 1 Mbps, 12500 B queued = 100 ms to drain; RTT 80 ms → 40 + 100.
        let p = PathState::new(Bitrate::mbps(1), Some(ms(80)), Bytes::new(12_500));
        assert_eq!(s.cost(&p), ms(140));
    }

    #[test]
    fn zero_rate_is_infinite_cost_and_unknown_rtt_uses_default() {
        let s = MinCost::new(MinCostConfig::default());
        let p = PathState::new(Bitrate::ZERO, Some(ms(10)), Bytes::ZERO);
        assert_eq!(s.cost(&p), Duration::MAX);
        let q = PathState::new(Bitrate::mbps(1), None, Bytes::ZERO);
        assert_eq!(s.cost(&q), Duration::from_micros(166_500));
    }

    #[test]
    fn picks_argmin_and_ties_go_to_lower_index() {
        let mut s = MinCost::new(MinCostConfig::default());
        let now = Instant::ZERO;
        // Path 0: 100 ms RTT empty → 50. Path 1: 20 ms RTT, 1 Mbps, 5000 B → 10 + 40 = 50.
        let mut paths = [
            PathState::new(Bitrate::mbps(1), Some(ms(100)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(1), Some(ms(20)), Bytes::new(5_000)),
        ];
        assert_eq!(s.choose_path(now, &paths, Bytes::new(1200)), Some(0));
        paths[1].queued = Bytes::new(4_875); // 39 ms → 49 < 50
        assert_eq!(s.choose_path(now, &paths, Bytes::new(1200)), Some(1));
    }

    /// Algorithm 6 on a hand-worked frame: paths A (RTT 40 ms, 1.2 Mbps =
    /// 150 B/ms) and B (RTT 100 ms, 2.4 Mbps = 300 B/ms), 1500 B packets, so
    /// in ms A costs 20 + 10·k_A and B costs 50 + 5·k_B after k packets.
    /// Packets 1–3 → A (20, 30, 40); packet 4: A 50 = B 50, tie → A; packet 5:
    /// A 60 > B 50 → B; packet 6: A 60 > B 55 → B; packet 7: A 60 = B 60 → A.
    #[test]
    fn algorithm6_frame_split_hand_worked() {
        let mut s = MinCost::new(MinCostConfig::default());
        let mut paths = [
            PathState::new(Bitrate::kbps(1200), Some(ms(40)), Bytes::ZERO),
            PathState::new(Bitrate::kbps(2400), Some(ms(100)), Bytes::ZERO),
        ];
        let mut order = Vec::new();
        for _ in 0..7 {
            let j = s
                .choose_path(Instant::ZERO, &paths, Bytes::new(1500))
                .unwrap();
            paths[j].queued += Bytes::new(1500); // Algorithm 6 line 5
            order.push(j);
        }
        assert_eq!(order, vec![0, 0, 0, 0, 1, 1, 0]);
    }

    #[test]
    fn unusable_path_is_skipped_unless_none_usable() {
        let mut s = MinCost::new(MinCostConfig::default());
        let mut paths = [
            PathState::new(Bitrate::mbps(5), Some(ms(10)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(1), Some(ms(200)), Bytes::new(100_000)),
        ];
        paths[0].can_send = false;
        assert_eq!(
            s.choose_path(Instant::ZERO, &paths, Bytes::new(1200)),
            Some(1)
        );
        paths[1].can_send = false;
        assert_eq!(
            s.choose_path(Instant::ZERO, &paths, Bytes::new(1200)),
            Some(0)
        );
        assert_eq!(s.choose_path(Instant::ZERO, &[], Bytes::new(1200)), None);
    }
}
