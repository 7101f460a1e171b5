//! Property tests every built-in multipath scheduler must pass through the
//! `PathScheduler` trait: random path sets (rates including zero, missing
//! RTTs, queues, unusable paths) and packet sizes, following the trait's call
//! protocol (the caller adds the packet to the chosen path's queue), never
//! panic and always give a valid index that respects `can_send`.
//!
//! The list of schedulers is `SchedulerConfig::NAMES`, so a new scheduler is
//! tested as soon as it is registered. Then the properties of each
//! scheduler's own rule, each of which a wrong scheduler fails: min-cost
//! picks a path of least eq. 14 cost; water filling starts each round on the
//! lowest floor and never pours into a path whose floor is above the level
//! another path could still take; no queue-aware scheduler keeps feeding a
//! backlogged path while an idle one would deliver sooner; WRR gives every
//! usable path its share in every round.

use proptest::prelude::*;
use rtcc_core::multipath::{
    MinCost, MinCostConfig, PathScheduler, PathState, SchedulerConfig, WaterFilling,
    WaterFillingConfig, Wrr, WrrConfig,
};
use rtcc_core::{Bitrate, Bytes, Duration, Instant, Probability};

#[derive(Debug, Clone)]
struct PathSpec {
    rate_kbps: u64,
    rtt_ms: Option<u64>,
    queued: u64,
    can_send: bool,
}

fn path_spec() -> impl Strategy<Value = PathSpec> {
    (
        prop_oneof![Just(0u64), 1u64..100_000],
        prop::option::of(1u64..2_000),
        0u64..2_000_000,
        prop::bool::weighted(0.8),
    )
        .prop_map(|(rate_kbps, rtt_ms, queued, can_send)| PathSpec {
            rate_kbps,
            rtt_ms,
            queued,
            can_send,
        })
}

/// A packet to place: after `gap_us`, of `size` bytes; `flip` toggles the
/// usability of one path first (a window opening or closing).
#[derive(Debug, Clone)]
struct Step {
    gap_us: u64,
    size: u64,
    flip: Option<usize>,
}

fn step() -> impl Strategy<Value = Step> {
    (
        prop_oneof![Just(0u64), 1u64..50_000],
        1u64..1_500,
        prop::option::of(0usize..8),
    )
        .prop_map(|(gap_us, size, flip)| Step { gap_us, size, flip })
}

fn state(p: &PathSpec) -> PathState {
    let srtt = p.rtt_ms.map(Duration::from_millis);
    PathState {
        srtt,
        min_rtt: srtt,
        aggregate_delay: srtt,
        pacing_rate: Bitrate::kbps(p.rate_kbps),
        queued: Bytes::new(p.queued),
        loss: Probability::ZERO,
        can_send: p.can_send,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_scheduler_places_every_packet_on_a_valid_path(
        specs in prop::collection::vec(path_spec(), 1..6),
        steps in prop::collection::vec(step(), 1..200),
    ) {
        for name in SchedulerConfig::NAMES {
            let config = SchedulerConfig::default_for(name).expect("a listed name");
            prop_assert_eq!(config.name(), *name);
            let mut s = config.build();
            prop_assert_eq!(s.name(), *name);
            let mut paths: Vec<PathState> = specs.iter().map(state).collect();
            let mut now = Instant::ZERO;
            for st in &steps {
                now += Duration::from_micros(st.gap_us);
                if let Some(i) = st.flip {
                    let n = paths.len();
                    paths[i % n].can_send = !paths[i % n].can_send;
                }
                let size = Bytes::new(st.size);
                let j = s.choose_path(now, &paths, size);
                let Some(j) = j else {
                    return Err(TestCaseError::fail(format!("{name}: no path out of {}", paths.len())));
                };
                prop_assert!(j < paths.len(), "{}: index {} of {}", name, j, paths.len());
                let any_usable = paths.iter().any(|p| p.can_send);
                prop_assert!(
                    paths[j].can_send || !any_usable,
                    "{}: chose unusable path {} while another was usable",
                    name,
                    j
                );
                // Call protocol: the caller queues the packet on the chosen path.
                paths[j].queued += size;
                s.on_packet_scheduled(now, j, size);
            }
        }
    }

    #[test]
    fn no_path_means_no_choice(size in 1u64..1_500) {
        for name in SchedulerConfig::NAMES {
            let mut s = SchedulerConfig::default_for(name).expect("a listed name").build();
            prop_assert_eq!(s.choose_path(Instant::ZERO, &[], Bytes::new(size)), None);
        }
    }

    #[test]
    fn min_cost_picks_a_path_of_least_cost(
        specs in prop::collection::vec(path_spec(), 1..6),
        sizes in prop::collection::vec(1u64..1_500, 1..100),
    ) {
        // Eq. 14 computed here, independently of the scheduler:
        // srtt/2 (333 ms unknown) + queued / rate, infinite at rate 0.
        let cost = |p: &PathState| -> Option<u128> {
            if p.pacing_rate.is_zero() {
                return None;
            }
            let half_rtt = u128::from(p.srtt.unwrap_or(Duration::from_millis(333)).as_nanos()) / 2;
            let drain = u128::from(p.queued.get()) * 8 * 1_000_000_000 / u128::from(p.pacing_rate.as_bps());
            Some(half_rtt + drain)
        };
        let mut s = MinCost::new(MinCostConfig::default());
        let mut paths: Vec<PathState> = specs.iter().map(state).collect();
        for (k, &size) in sizes.iter().enumerate() {
            let now = Instant::from_millis(k as u64);
            let j = s.choose_path(now, &paths, Bytes::new(size)).expect("a path");
            let usable: Vec<usize> = (0..paths.len())
                .filter(|&i| paths[i].can_send || !paths.iter().any(|p| p.can_send))
                .collect();
            let best = usable.iter().filter_map(|&i| cost(&paths[i])).min();
            if let (Some(best), Some(cj)) = (best, cost(&paths[j])) {
                // 2 ns of rounding between our integer arithmetic and its own.
                prop_assert!(cj <= best + 2, "chose {} at cost {} above {}", j, cj, best);
            } else {
                prop_assert!(best.is_none(), "chose a zero-rate path {} over a priced one", j);
            }
            paths[j].queued += Bytes::new(size);
        }
    }

    #[test]
    fn water_filling_starts_each_round_on_the_lowest_floor(
        specs in prop::collection::vec(path_spec(), 1..6),
        aggregate in prop::collection::vec(prop::option::of(1u64..2_000), 6),
        rounds in prop::collection::vec(1usize..20, 1..20),
    ) {
        let mut s = WaterFilling::new(WaterFillingConfig::default());
        let mut paths: Vec<PathState> = specs.iter().map(state).collect();
        for (p, a) in paths.iter_mut().zip(&aggregate) {
            p.aggregate_delay = a.map(Duration::from_millis);
        }
        for (r, &n) in rounds.iter().enumerate() {
            let now = Instant::from_millis(40 * r as u64);
            let any_usable = paths.iter().any(|p| p.can_send);
            // The floor, independently: aggregate delay (else srtt/2, else
            // 333/2 ms) plus the queue's drain time.
            let floor = |p: &PathState| -> Option<u128> {
                if p.pacing_rate.is_zero() || (!p.can_send && any_usable) {
                    return None;
                }
                let half = p.srtt.unwrap_or(Duration::from_millis(333)).as_nanos() / 2;
                let base = u128::from(p.aggregate_delay.map_or(half, |d| d.as_nanos()));
                let drain = u128::from(p.queued.get()) * 8 * 1_000_000_000 / u128::from(p.pacing_rate.as_bps());
                Some(base + drain)
            };
            // Floors are taken once, at the round's first packet.
            let floors: Vec<Option<u128>> = paths.iter().map(floor).collect();
            let lowest = floors.iter().flatten().min().copied();
            for k in 0..n {
                let before: Vec<u128> = s.depths().iter().map(|d| u128::from(d.as_nanos())).collect();
                let j = s.choose_path(now, &paths, Bytes::new(1_200)).expect("a path");
                if k == 0 {
                    if let (Some(lo), Some(fj)) = (lowest, floors[j]) {
                        prop_assert!(fj <= lo + 2, "round {}: floor {} above {}", r, fj, lo);
                    }
                } else if let Some(fj) = floors[j] {
                    // The packet went to a lowest surface (floor + depth).
                    let sj = fj + before[j];
                    let lowest_surface = (0..paths.len())
                        .filter_map(|i| floors[i].map(|f| f + before[i]))
                        .min()
                        .unwrap_or(sj);
                    prop_assert!(sj <= lowest_surface + 2, "round {}: poured above the level", r);
                }
                paths[j].queued += Bytes::new(1_200);
            }
        }
    }

    #[test]
    fn queue_aware_schedulers_leave_a_backlogged_path_for_an_idle_one(
        rate_kbps in 200u64..20_000,
        rtt_a in 10u64..300,
        rtt_b in 10u64..300,
        backlog_s in 1u64..10,
    ) {
        // Path A holds `backlog_s` seconds of queue (more than any RTT gap
        // here); path B, as fast, is idle. Min-cost and water filling must
        // send the next frame's packets to B until its own queue costs as
        // much: a scheduler that ignores the queue (WRR, by design) would not.
        let rate = Bitrate::kbps(rate_kbps);
        let backlog = rate * Duration::from_secs(backlog_s);
        for name in ["min-cost", "water-filling"] {
            let mut s = SchedulerConfig::default_for(name).expect("built in").build();
            let mut paths = vec![
                PathState::new(rate, Some(Duration::from_millis(rtt_a)), backlog),
                PathState::new(rate, Some(Duration::from_millis(rtt_b)), Bytes::ZERO),
            ];
            for _ in 0..20 {
                let j = s.choose_path(Instant::from_millis(5), &paths, Bytes::new(1_200));
                prop_assert_eq!(j, Some(1), "{}: fed the backlogged path", name);
                paths[1].queued += Bytes::new(1_200);
            }
        }
    }

    #[test]
    fn wrr_gives_every_usable_path_its_share_each_round(
        rates in prop::collection::vec(1u64..50_000, 2..5),
        rounds in 1usize..10,
    ) {
        // Eq. 16: a path with a positive rate gets ⌈20 · ABW_i / Σ⌉ ≥ 1
        // packets per 20-packet round, so none starves and the shares
        // follow the rates within one packet per round.
        let paths: Vec<PathState> = rates
            .iter()
            .map(|&r| PathState::new(Bitrate::kbps(r), Some(Duration::from_millis(50)), Bytes::ZERO))
            .collect();
        let mut s = Wrr::new(WrrConfig::default());
        let total: u64 = rates.iter().sum();
        let per_round: Vec<u64> = rates.iter().map(|&r| (20 * r).div_ceil(total)).collect();
        let round_len: u64 = per_round.iter().sum();
        let mut count = vec![0u64; paths.len()];
        for _ in 0..(round_len as usize * rounds) {
            let j = s.choose_path(Instant::ZERO, &paths, Bytes::new(1_200)).expect("a path");
            count[j] += 1;
        }
        for (i, c) in count.iter().enumerate() {
            prop_assert_eq!(*c, per_round[i] * rounds as u64, "path {}", i);
        }
    }
}
