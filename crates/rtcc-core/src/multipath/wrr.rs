//! Weighted round robin, the first baseline of Delay-BBR multipath
//! (`shared/papers/delay-bbr-multipath.txt`) §4.3, eq. 16.
//!
//! A round of `n` packets gives path `i` the load
//! `path_load(i) = ⌈n · ABW_i / Σ_j ABW_j⌉` (eq. 16), `ABW_i` being the path's
//! pacing rate at the start of the round. Within a round the paths are
//! visited in index order, one packet per visit, skipping paths whose load is
//! used up (interleaved WRR); when no usable path has load left, a new round
//! starts from the current rates.

use super::{candidate_filter, PathScheduler, PathState};
use crate::time::Instant;
use crate::units::Bytes;

/// Configuration of [`Wrr`].
#[derive(Debug, Clone, PartialEq)]
pub struct WrrConfig {
    /// `n` in eq. 16: packets per round. The paper gives no value; 20 keeps
    /// the ceiling's rounding error (at most one packet per path per round)
    /// small for two to four paths while re-reading the rates every few
    /// frames at video packet rates.
    pub round_packets: u32,
}

impl Default for WrrConfig {
    fn default() -> Self {
        WrrConfig { round_packets: 20 }
    }
}

/// Weighted round robin (§4.3, eq. 16).
#[derive(Debug, Clone)]
pub struct Wrr {
    config: WrrConfig,
    /// Packets left in the current round per path (resized only when the
    /// number of paths changes).
    remaining: Vec<u64>,
    /// Next path index to visit.
    cursor: usize,
}

impl Wrr {
    /// A scheduler with the given configuration.
    pub fn new(config: WrrConfig) -> Self {
        Wrr {
            config,
            remaining: Vec::new(),
            cursor: 0,
        }
    }

    /// Eq. 16 for one path: `⌈n · abw / total⌉`, in integers. With
    /// `total == 0` (no rate known anywhere) every path gets `⌈n / paths⌉`.
    pub fn path_load(n: u32, abw_bps: u64, total_bps: u64, paths: usize) -> u64 {
        let n = u128::from(n.max(1));
        if total_bps == 0 {
            let k = paths.max(1) as u128;
            return n.div_ceil(k) as u64;
        }
        // eq. 16: ⌈n · ABW_i / Σ_j ABW_j⌉
        (n * u128::from(abw_bps)).div_ceil(u128::from(total_bps)) as u64
    }

    /// Packets left in the current round for each path.
    pub fn remaining(&self) -> &[u64] {
        &self.remaining
    }

    fn start_round(&mut self, paths: &[PathState]) {
        let candidate = candidate_filter(paths);
        let total: u64 = paths
            .iter()
            .filter(|p| candidate(p))
            .map(|p| p.pacing_rate.as_bps())
            .fold(0u64, u64::saturating_add);
        let count = paths.iter().filter(|p| candidate(p)).count();
        for (r, p) in self.remaining.iter_mut().zip(paths) {
            *r = if candidate(p) {
                Self::path_load(
                    self.config.round_packets,
                    p.pacing_rate.as_bps(),
                    total,
                    count,
                )
            } else {
                0
            };
        }
    }

    fn next_with_load(&self, paths: &[PathState]) -> Option<usize> {
        let candidate = candidate_filter(paths);
        let n = paths.len();
        (0..n)
            .map(|k| (self.cursor + k) % n)
            .find(|&i| self.remaining[i] > 0 && candidate(&paths[i]))
    }
}

impl PathScheduler for Wrr {
    fn name(&self) -> &'static str {
        "wrr"
    }

    fn choose_path(&mut self, _now: Instant, paths: &[PathState], _size: Bytes) -> Option<usize> {
        if paths.is_empty() {
            return None;
        }
        if self.remaining.len() != paths.len() {
            self.remaining.clear();
            self.remaining.resize(paths.len(), 0);
            self.cursor = 0;
        }
        let j = match self.next_with_load(paths) {
            Some(j) => j,
            None => {
                self.start_round(paths);
                self.cursor = 0;
                // After a new round at least one candidate has load ≥ 1
                // (ceil of a positive share, or the equal split); the
                // fallback to the cursor is for safety only.
                self.next_with_load(paths)
                    .unwrap_or(self.cursor % paths.len())
            }
        };
        self.remaining[j] = self.remaining[j].saturating_sub(1);
        self.cursor = (j + 1) % paths.len();
        Some(j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;
    use crate::units::Bitrate;

    fn path(mbps: u64) -> PathState {
        PathState::new(
            Bitrate::mbps(mbps),
            Some(Duration::from_millis(50)),
            Bytes::ZERO,
        )
    }

    #[test]
    fn eq16_loads_round_up() {
        // n = 10, 3 : 1 → 7.5 → 8 and 2.5 → 3.
        assert_eq!(Wrr::path_load(10, 3_000_000, 4_000_000, 2), 8);
        assert_eq!(Wrr::path_load(10, 1_000_000, 4_000_000, 2), 3);
        assert_eq!(Wrr::path_load(10, 0, 4_000_000, 2), 0);
        assert_eq!(Wrr::path_load(10, 0, 0, 3), 4);
    }

    #[test]
    fn interleaves_by_weight_and_restarts_rounds() {
        let mut s = Wrr::new(WrrConfig { round_packets: 4 });
        let paths = [path(3), path(1)];
        let picks: Vec<usize> = (0..8)
            .map(|_| {
                s.choose_path(Instant::ZERO, &paths, Bytes::new(1200))
                    .unwrap()
            })
            .collect();
        // Loads 3 and 1 per round, each round visiting from index 0:
        // 0,1,0,0 then again.
        assert_eq!(picks, vec![0, 1, 0, 0, 0, 1, 0, 0]);
    }

    #[test]
    fn shares_follow_rates_over_many_rounds() {
        let mut s = Wrr::new(WrrConfig { round_packets: 10 });
        let paths = [path(3), path(1)];
        let mut count = [0u32; 2];
        for _ in 0..110 {
            count[s
                .choose_path(Instant::ZERO, &paths, Bytes::new(1200))
                .unwrap()] += 1;
        }
        // 10 rounds of 8 + 3 packets.
        assert_eq!(count, [80, 30]);
    }

    #[test]
    fn skips_unusable_path_and_reweights_when_it_is_alone() {
        let mut s = Wrr::new(WrrConfig::default());
        let mut paths = [path(3), path(1)];
        paths[0].can_send = false;
        for _ in 0..30 {
            assert_eq!(
                s.choose_path(Instant::ZERO, &paths, Bytes::new(1200)),
                Some(1)
            );
        }
    }
}
