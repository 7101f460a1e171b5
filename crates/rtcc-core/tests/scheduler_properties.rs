//! Property tests every built-in multipath scheduler must pass through the
//! `PathScheduler` trait: random path sets (rates including zero, missing
//! RTTs, queues, unusable paths) and packet sizes, following the trait's call
//! protocol (the caller adds the packet to the chosen path's queue), never
//! panic and always give a valid index that respects `can_send`.
//!
//! The list of schedulers is `SchedulerConfig::NAMES`, so a new scheduler is
//! tested as soon as it is registered.

use proptest::prelude::*;
use rtcc_core::multipath::{PathScheduler, PathState, SchedulerConfig};
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
}
