//! Tests through the [`Scheduler`] enum: names, dispatch, and a property test
//! on random path states for every built-in scheduler.

use proptest::prelude::*;

use super::*;

#[test]
fn every_name_builds_a_scheduler_with_that_name() {
    for name in SchedulerConfig::NAMES {
        let cfg = SchedulerConfig::default_for(name).unwrap();
        assert_eq!(cfg.name(), *name);
        assert_eq!(cfg.build().name(), *name);
    }
    assert!(SchedulerConfig::default_for("round-robin").is_none());
}

#[test]
fn enum_dispatch_reaches_the_scheduler() {
    // Min-cost and WRR disagree here: min-cost always takes the idle fast
    // path, WRR gives the slow path its weighted share.
    let paths = [
        PathState::new(
            Bitrate::mbps(1),
            Some(Duration::from_millis(10)),
            Bytes::ZERO,
        ),
        PathState::new(
            Bitrate::mbps(1),
            Some(Duration::from_millis(300)),
            Bytes::ZERO,
        ),
    ];
    let mut mc = SchedulerConfig::default_for("min-cost").unwrap().build();
    let mut wrr = SchedulerConfig::default_for("wrr").unwrap().build();
    let a: Vec<_> = (0..4)
        .map(|_| mc.choose_path(Instant::ZERO, &paths, Bytes::new(1000)))
        .collect();
    let b: Vec<_> = (0..4)
        .map(|_| wrr.choose_path(Instant::ZERO, &paths, Bytes::new(1000)))
        .collect();
    assert_eq!(a, vec![Some(0); 4]);
    assert_eq!(b, vec![Some(0), Some(1), Some(0), Some(1)]);
}

fn arb_path() -> impl Strategy<Value = PathState> {
    (
        prop_oneof![Just(0u64), 1u64..100_000_000, Just(u64::MAX)],
        prop_oneof![
            Just(None),
            (0u64..2_000).prop_map(|m| Some(Duration::from_millis(m)))
        ],
        prop_oneof![
            Just(None),
            (0u64..2_000).prop_map(|m| Some(Duration::from_millis(m)))
        ],
        prop_oneof![Just(0u64), 0u64..10_000_000],
        0.0f64..=1.0,
        any::<bool>(),
    )
        .prop_map(|(rate, srtt, min_rtt, queued, loss, can_send)| PathState {
            srtt,
            min_rtt,
            aggregate_delay: srtt,
            pacing_rate: Bitrate::bps(rate),
            queued: Bytes::new(queued),
            loss: Probability::saturating(loss),
            can_send,
        })
}

proptest! {
    /// For every built-in scheduler, on random path sets that change between
    /// packets: a valid index, never an unusable path while one is usable, no
    /// panic on zero rates, unknown RTTs or huge queues.
    #[test]
    fn schedulers_return_valid_usable_paths(
        steps in prop::collection::vec(
            (prop::collection::vec(arb_path(), 0..5), 0u64..200, 1u64..3_000),
            1..60,
        )
    ) {
        for name in SchedulerConfig::NAMES {
            let mut s = SchedulerConfig::default_for(name).unwrap().build();
            let mut now = Instant::ZERO;
            for (paths, dt_ms, size) in &steps {
                now += Duration::from_millis(*dt_ms);
                let got = s.choose_path(now, paths, Bytes::new(*size));
                if paths.is_empty() {
                    prop_assert_eq!(got, None, "{}", name);
                    continue;
                }
                let j = got.unwrap();
                prop_assert!(j < paths.len(), "{}: {} of {}", name, j, paths.len());
                if paths.iter().any(|p| p.can_send) {
                    prop_assert!(paths[j].can_send, "{}: picked unusable {}", name, j);
                }
                s.on_packet_scheduled(now, j, Bytes::new(*size));
            }
        }
    }
}
