//! SFL water filling, the third baseline of Delay-BBR multipath
//! (`shared/papers/delay-bbr-multipath.txt`) §4.3, Algorithm 7 and Figure 2.
//!
//! Each path is a bucket whose floor is at its one-way delay `d_i`; water
//! poured into it rises by `D_i`, the time the path needs to send what it was
//! given this round. The round's packets are poured so that the surfaces are
//! level, `D_i + d_i = D_j + d_j`, and `Σ_i D_i · ABW_i = length` (§4.3). The
//! paper's simplification, "the water depth ... will increase by a step of
//! `ΔD = L/ABW` until all the packets can be sent out", is applied to every
//! meta packet of size `L`: the packet goes to the bucket with the lowest
//! surface `d_i + D_i`, whose depth then grows by `L/ABW_i`.
//!
//! Algorithm 7's pseudo-code did not survive the text extraction of the paper
//! (only its last line, `26: end for`, is left), so this is built from the
//! prose; see `docs/algorithms/multipath.md`.
//!
//! A round is the set of packets handed in at one `now` (a frame is
//! packetized at one instant); the depths restart at zero when `now` moves.
//!
//! The floor `d_i` (the paper: "the one way delay of path i") is, by default,
//! what the authors' simulator uses (`sfl_v1.cc` `SFLScheduleV1`,
//! `PathSenderV1::get_aggregate_delay`): the path's aggregate delay (the
//! smoothed time from a segment's entry into the path's queue to the report
//! of its arrival; `srtt/2` before the first report) plus the time the path
//! needs to drain what is queued at the start of the round. With
//! [`SflFloor::HalfRtt`] it is `srtt/2` alone, our first reading, which left
//! the sender queue out: the low-delay path then took every delta frame
//! whatever its backlog (docs/algorithms/multipath.md).

use super::{candidate_filter, PathScheduler, PathState};
use crate::time::{Duration, Instant};
use crate::units::Bytes;

/// A bucket's floor (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SflFloor {
    /// The authors': aggregate delay plus the queue's drain time, taken at
    /// the start of each round.
    Aggregate,
    /// `srtt/2` alone.
    HalfRtt,
}

/// Configuration of [`WaterFilling`].
#[derive(Debug, Clone, PartialEq)]
pub struct WaterFillingConfig {
    /// RTT assumed for a path without a sample (its floor is at half of it).
    /// Same choice as [`MinCostConfig::unknown_rtt`](super::MinCostConfig):
    /// 333 ms, RFC 9002 §6.2.2 kInitialRtt; the paper gives none.
    pub unknown_rtt: Duration,
    /// The floor. Default [`SflFloor::Aggregate`].
    pub floor: SflFloor,
}

impl Default for WaterFillingConfig {
    fn default() -> Self {
        WaterFillingConfig {
            // RFC 9002 §6.2.2: kInitialRtt = 333 ms.
            unknown_rtt: Duration::from_millis(333),
            floor: SflFloor::Aggregate,
        }
    }
}

/// SFL water filling (§4.3, Algorithm 7).
#[derive(Debug, Clone)]
pub struct WaterFilling {
    config: WaterFillingConfig,
    /// Water depth `D_i` poured into each path this round.
    depth: Vec<Duration>,
    /// Floor `d_i` of each path, taken at the round's first packet.
    floor: Vec<Duration>,
    /// `now` of the current round.
    round: Option<Instant>,
}

impl WaterFilling {
    /// A scheduler with the given configuration.
    pub fn new(config: WaterFillingConfig) -> Self {
        WaterFilling {
            config,
            depth: Vec::new(),
            floor: Vec::new(),
            round: None,
        }
    }

    /// The water depths `D_i` of the current round.
    pub fn depths(&self) -> &[Duration] {
        &self.depth
    }

    /// The floors `d_i` of the current round.
    pub fn floors(&self) -> &[Duration] {
        &self.floor
    }

    /// Floor `d_i` of a path at the start of a round (module doc).
    fn floor_of(&self, p: &PathState) -> Duration {
        let half_rtt = p.one_way_delay(self.config.unknown_rtt);
        match self.config.floor {
            SflFloor::HalfRtt => half_rtt,
            SflFloor::Aggregate => {
                let drain = if p.pacing_rate.is_zero() {
                    Duration::ZERO
                } else {
                    p.queued / p.pacing_rate
                };
                p.aggregate_delay.unwrap_or(half_rtt) + drain
            }
        }
    }

    /// Surface `d_i + D_i` of path `i`. A path with `ABW_i = 0` holds no
    /// water: its surface is `Duration::MAX`.
    fn surface(&self, i: usize, p: &PathState) -> Duration {
        if p.pacing_rate.is_zero() {
            return Duration::MAX;
        }
        self.floor[i] + self.depth[i]
    }
}

impl PathScheduler for WaterFilling {
    fn name(&self) -> &'static str {
        "water-filling"
    }

    fn choose_path(&mut self, now: Instant, paths: &[PathState], size: Bytes) -> Option<usize> {
        if paths.is_empty() {
            return None;
        }
        if self.depth.len() != paths.len() || self.round != Some(now) {
            self.depth.clear();
            self.depth.resize(paths.len(), Duration::ZERO);
            self.floor.clear();
            for p in paths {
                let f = self.floor_of(p);
                self.floor.push(f);
            }
            self.round = Some(now);
        }
        let candidate = candidate_filter(paths);
        let mut best: Option<(usize, Duration)> = None;
        for (i, p) in paths.iter().enumerate() {
            if !candidate(p) {
                continue;
            }
            let s = self.surface(i, p);
            // Lowest surface; equal surfaces keep the lower index.
            if best.is_none_or(|(_, bs)| s < bs) {
                best = Some((i, s));
            }
        }
        let (j, _) = best?;
        // §4.3: ΔD = L / ABW.
        self.depth[j] += size / paths[j].pacing_rate;
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

    /// Paths A (d = 20 ms, 150 B/ms) and B (d = 50 ms, 300 B/ms), 1500 B
    /// packets: steps of 10 ms on A and 5 ms on B. Surfaces in ms: A 20, 30,
    /// 40, 50 (tie with B 50 → A), then B 50 → 55 → 60 … (as in the min-cost
    /// example while queues are empty).
    #[test]
    fn pours_into_lowest_surface_hand_worked() {
        let mut s = WaterFilling::new(WaterFillingConfig::default());
        let paths = [
            PathState::new(Bitrate::kbps(1200), Some(ms(40)), Bytes::ZERO),
            PathState::new(Bitrate::kbps(2400), Some(ms(100)), Bytes::ZERO),
        ];
        let order: Vec<usize> = (0..7)
            .map(|_| {
                s.choose_path(Instant::ZERO, &paths, Bytes::new(1500))
                    .unwrap()
            })
            .collect();
        assert_eq!(order, vec![0, 0, 0, 0, 1, 1, 0]);
        // Depths: A 5 packets = 50 ms, B 2 packets = 10 ms; Σ D·ABW = 7 · 1500 B.
        assert_eq!(s.depths(), &[ms(50), ms(10)]);
    }

    #[test]
    fn surfaces_end_level_within_one_step() {
        let mut s = WaterFilling::new(WaterFillingConfig::default());
        let paths = [
            PathState::new(Bitrate::mbps(2), Some(ms(30)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(5), Some(ms(90)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(1), Some(ms(60)), Bytes::ZERO),
        ];
        for _ in 0..200 {
            s.choose_path(Instant::from_millis(7), &paths, Bytes::new(1000));
        }
        let surf: Vec<u64> = (0..3)
            .map(|i| (paths[i].srtt.unwrap() / 2 + s.depths()[i]).as_nanos())
            .collect();
        let max_step = (Bytes::new(1000) / Bitrate::mbps(1)).as_nanos();
        let hi = *surf.iter().max().unwrap();
        let lo = *surf.iter().min().unwrap();
        assert!(hi - lo <= max_step, "surfaces {surf:?}");
        // Σ D_i · ABW_i = length (each depth step is rounded up by < 1 ns).
        let poured: u64 = (0..3)
            .map(|i| (paths[i].pacing_rate * s.depths()[i]).get())
            .sum();
        assert!((199_990..=200_010).contains(&poured), "poured {poured}");
    }

    #[test]
    fn new_round_resets_depth_and_takes_the_queue_into_the_floor() {
        let mut s = WaterFilling::new(WaterFillingConfig::default());
        let mut paths = [
            PathState::new(Bitrate::mbps(1), Some(ms(20)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(1), Some(ms(60)), Bytes::ZERO),
        ];
        for _ in 0..6 {
            s.choose_path(Instant::ZERO, &paths, Bytes::new(1250)); // 10 ms steps
        }
        assert_eq!(s.depths(), &[ms(40), ms(20)]);
        // Next frame: the fast path now holds 100 kB (800 ms at 1 Mbps) in
        // its sender queue and its aggregate delay is 25 ms; the round
        // restarts with floors 825 ms and 30 ms, so the slow path gets it.
        paths[0].queued = Bytes::new(100_000);
        paths[0].aggregate_delay = Some(ms(25));
        assert_eq!(
            s.choose_path(Instant::from_millis(33), &paths, Bytes::new(1250)),
            Some(1)
        );
        assert_eq!(s.floors(), &[ms(825), ms(30)]);
        assert_eq!(s.depths(), &[ms(0), ms(10)]);
        // The floor is taken once per round: what this round pours does not
        // count twice through `queued`.
        paths[1].queued = Bytes::new(1250);
        s.choose_path(Instant::from_millis(33), &paths, Bytes::new(1250));
        assert_eq!(s.floors(), &[ms(825), ms(30)]);
        // Our first reading, on request: srtt/2 only, the queue ignored.
        let mut half = WaterFilling::new(WaterFillingConfig {
            floor: SflFloor::HalfRtt,
            ..WaterFillingConfig::default()
        });
        assert_eq!(
            half.choose_path(Instant::from_millis(33), &paths, Bytes::new(1250)),
            Some(0)
        );
    }

    #[test]
    fn zero_rate_path_holds_no_water() {
        let mut s = WaterFilling::new(WaterFillingConfig::default());
        let paths = [
            PathState::new(Bitrate::ZERO, Some(ms(1)), Bytes::ZERO),
            PathState::new(Bitrate::mbps(1), Some(ms(500)), Bytes::ZERO),
        ];
        assert_eq!(
            s.choose_path(Instant::ZERO, &paths, Bytes::new(1000)),
            Some(1)
        );
    }
}
