//! Tests of AutoRec's Redundancy Adapter and reinjection queue.

use proptest::prelude::*;

use super::adapter::{max_k_where, min_k_where, TOLERANCE_EPSILON};
use super::*;
use crate::time::{Duration, Instant};
use crate::units::{Bytes, Probability};

fn p(r: f64) -> Probability {
    Probability::new(r).unwrap()
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn at(v: u64) -> Instant {
    Instant::from_millis(v)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12
}

// ---------------------------------------------------------------- F, G, H

#[test]
fn recovery_latency_matches_hand_values() {
    // F(K) = (1 + K·R^K) / ((1 − R)(1 + K)) · T_unit, in ns, rounded.
    let cases: [(f64, u64, u32, u64); 8] = [
        // R = 0.1, T = 100 ms, K = 0: 1/0.9 · 100 ms = 111.111111 ms.
        (0.1, 100, 0, 111_111_111),
        // K = 1: (1 + 0.1) / (0.9 · 2) = 1.1/1.8 = 0.6111.. → 61.111111 ms.
        (0.1, 100, 1, 61_111_111),
        // K = 2: (1 + 2·0.01) / (0.9 · 3) = 1.02/2.7 = 0.37777.. → 37.7777778 ms.
        (0.1, 100, 2, 37_777_778),
        // R = 0.5, T = 60 ms, K = 3: (1 + 3·0.125)/(0.5·4) = 1.375/2 = 0.6875 → 41.25 ms.
        (0.5, 60, 3, 41_250_000),
        // R = 0.2, T = 50 ms, K = 4: (1 + 4·0.0016)/(0.8·5) = 1.0064/4 = 0.2516 → 12.58 ms.
        (0.2, 50, 4, 12_580_000),
        // Base testbed (R = 5 %, T_unit ≈ RTT = 60 ms), K = 0: 60/0.95 = 63.1578947 ms.
        (0.05, 60, 0, 63_157_895),
        // K = 1: 1.05/(0.95·2) · 60 = 33.1578947 ms (> α = 30 ms).
        (0.05, 60, 1, 33_157_895),
        // K = 2: (1 + 2·0.0025)/(0.95·3) · 60 = 1.005/2.85 · 60 = 21.1578947 ms (≤ 30 ms).
        (0.05, 60, 2, 21_157_895),
    ];
    for (r, t, k, want_ns) in cases {
        let got = recovery_latency(p(r), ms(t), k);
        assert_eq!(
            got.as_nanos(),
            want_ns,
            "F({k}) at R = {r}, T_unit = {t} ms"
        );
    }
}

#[test]
fn recovery_latency_without_replicas_is_plain_arq() {
    // F(0) = T_unit/(1 − R): the first retransmission was lost (one T_unit),
    // then 1/(1 − R) − 1 more rounds on average.
    for i in 1..100 {
        let r = f64::from(i) / 100.0;
        let t = ms(80);
        let want = t.as_nanos() as f64 / (1.0 - r);
        let got = recovery_latency(p(r), t, 0).as_nanos() as f64;
        assert!((got - want).abs() <= 0.5, "R = {r}: {got} vs {want}");
    }
}

#[test]
fn recovery_latency_edges() {
    // R = 0: the first replica, T_unit/(K+1) after the retransmission, arrives.
    assert_eq!(recovery_latency(Probability::ZERO, ms(90), 2), ms(30));
    // R = 1: nothing ever arrives.
    assert_eq!(recovery_latency(Probability::ONE, ms(90), 2), Duration::MAX);
    // T_unit = 0: nothing to wait for.
    assert_eq!(recovery_latency(p(0.3), Duration::ZERO, 3), Duration::ZERO);
    assert_eq!(
        recovery_latency(Probability::ONE, Duration::ZERO, 3),
        Duration::ZERO
    );
}

#[test]
fn redundancy_cost_matches_hand_values() {
    // G(K) = K·R.
    assert!(close(redundancy_cost(p(0.1), 3), 0.3));
    assert!(close(redundancy_cost(p(0.05), 6), 0.3));
    assert!(close(redundancy_cost(p(0.37), 0), 0.0));
    assert!(close(redundancy_cost(p(0.25), 10), 2.5));
}

#[test]
fn goodput_reduction_matches_hand_values() {
    // H(K) = 1 − 1/(1 + K·R − (1+K)·R² + R^(K+2)) = x/(1+x), x = K·R − (1+K)R² + R^(K+2).
    // R = 0.1, K = 1: x = 0.1 − 0.02 + 0.001 = 0.081 → 0.081/1.081.
    assert!(close(goodput_reduction(p(0.1), 1), 0.081 / 1.081));
    // R = 0.5, K = 2: x = 1 − 0.75 + 0.0625 = 0.3125 → 0.3125/1.3125 = 5/21.
    assert!(close(goodput_reduction(p(0.5), 2), 5.0 / 21.0));
    // R = 0.05, K = 1: x = 0.05 − 0.005 + 0.000125 = 0.045125.
    assert!(close(goodput_reduction(p(0.05), 1), 0.045125 / 1.045125));
    // K = 0: x = −R² + R² = 0.
    assert!(close(goodput_reduction(p(0.4), 0), 0.0));
    // R = 0 and R = 1: no duplicate ever arrives (x = 0).
    assert!(close(goodput_reduction(Probability::ZERO, 5), 0.0));
    assert!(close(goodput_reduction(Probability::ONE, 5), 0.0));
}

#[test]
fn goodput_reduction_equals_the_papers_closed_form() {
    for i in 1..200 {
        let r = f64::from(i) / 200.0;
        for k in 0..=12u32 {
            let kf = f64::from(k);
            let closed = 1.0 - 1.0 / (1.0 + kf * r - (1.0 + kf) * r * r + r.powi(k as i32 + 2));
            let got = goodput_reduction(p(r), k);
            assert!(
                (got - closed).abs() <= 1e-12,
                "R = {r}, K = {k}: {got} vs {closed}"
            );
        }
    }
}

#[test]
fn reinjection_threshold_is_t_unit_over_k_plus_one() {
    // Eq. 5.
    assert_eq!(reinjection_threshold(ms(60), 2), ms(20));
    assert_eq!(reinjection_threshold(ms(60), 0), ms(60));
    assert_eq!(reinjection_threshold(ms(100), 9), ms(10));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// F non-increasing, G and H non-decreasing in K over [0, 10] (Appendices
    /// C, E, G), for any R in (0, 1) and T_unit.
    #[test]
    fn formulas_are_monotone(r in 0.0001f64..0.9999, t_ms in 1u64..2000) {
        let r = p(r);
        let t = ms(t_ms);
        for k in 0..DEFAULT_MAX_REDUNDANCY_LEVEL {
            prop_assert!(recovery_latency(r, t, k + 1) <= recovery_latency(r, t, k), "F at K = {}", k);
            prop_assert!(redundancy_cost(r, k + 1) >= redundancy_cost(r, k), "G at K = {}", k);
            prop_assert!(goodput_reduction(r, k + 1) >= goodput_reduction(r, k), "H at K = {}", k);
        }
    }

    /// The binary searches agree with a linear scan over [0, k_max].
    #[test]
    fn binary_search_equals_linear_scan(
        r in 0.0001f64..0.9999,
        t_ms in 0u64..1000,
        alpha_ms in 0u64..1000,
        beta in 0.0f64..3.0,
        gamma in 0.0f64..1.0,
        k_max in 0u32..=20,
    ) {
        let r = p(r);
        let (t, alpha) = (ms(t_ms), ms(alpha_ms));
        let linear_alpha = (0..=k_max).find(|&k| recovery_latency(r, t, k) <= alpha).unwrap_or(k_max);
        let linear_beta = (0..=k_max)
            .filter(|&k| redundancy_cost(r, k) <= beta + TOLERANCE_EPSILON)
            .max()
            .unwrap_or(0);
        let linear_gamma = (0..=k_max)
            .filter(|&k| goodput_reduction(r, k) <= gamma + TOLERANCE_EPSILON)
            .max()
            .unwrap_or(0);
        prop_assert_eq!(k_alpha(r, t, alpha, k_max), linear_alpha);
        prop_assert_eq!(k_beta(r, beta, k_max), linear_beta);
        prop_assert_eq!(k_gamma(r, gamma, k_max), linear_gamma);
    }

    /// The generic searches find the threshold of any monotone predicate.
    #[test]
    fn generic_searches_find_the_threshold(k_max in 0u32..50, threshold in 0u32..60) {
        let want_min = (threshold <= k_max).then_some(threshold);
        prop_assert_eq!(min_k_where(k_max, |k| k >= threshold), want_min);
        // Largest k with k < threshold.
        let want_max = (threshold > 0).then(|| (threshold - 1).min(k_max));
        prop_assert_eq!(max_k_where(k_max, |k| k < threshold), want_max);
    }
}

#[test]
fn generic_searches_at_the_extremes_of_u32() {
    assert_eq!(min_k_where(u32::MAX, |k| k == u32::MAX), Some(u32::MAX));
    assert_eq!(min_k_where(u32::MAX, |_| false), None);
    assert_eq!(max_k_where(u32::MAX, |_| true), Some(u32::MAX));
    assert_eq!(max_k_where(u32::MAX, |k| k <= 7), Some(7));
}

// ---------------------------------------------------------------- K_α, K_β, K_γ, K_θ

#[test]
fn base_testbed_decision() {
    // §VII-A base testbed: R = 5 %, RTT 60 ms (T_unit ≈ 60 ms), α = 30 ms,
    // β = 30 %, γ = 20 %.
    // K_α: F(1) = 33.16 ms > 30 ms, F(2) = 21.16 ms ≤ 30 ms → 2.
    // K_β: G(6) = 0.30 ≤ 0.30, G(7) = 0.35 → 6 (needs the epsilon: 6·0.05 = 0.30000000000000004).
    // K_γ: H(5) = 0.1903 ≤ 0.2, H(6) = 0.2203 > 0.2 → 5.
    let d = redundancy_level(p(0.05), ms(60), &AutoRecConfig::default());
    assert_eq!((d.k_alpha, d.k_beta, d.k_gamma), (2, 6, 5));
    assert_eq!(d.redundancy_level, 2);
    assert!(goodput_reduction(p(0.05), 5) <= 0.2 && goodput_reduction(p(0.05), 6) > 0.2);
}

#[test]
fn no_loss_means_no_redundancy() {
    // §V-A: "When there is no packet loss ... directly sets the redundancy level to 0",
    // even with α = 0 (which alone would ask for K_max).
    let d = redundancy_level(Probability::ZERO, ms(60), &AutoRecConfig::rtc_high_cost());
    assert_eq!(d.redundancy_level, 0);
}

#[test]
fn unreachable_alpha_gives_k_max() {
    // α = 0 with T_unit > 0: no K has F(K) ≤ 0 → K_α = K_max (best effort).
    assert_eq!(k_alpha(p(0.05), ms(60), Duration::ZERO, 10), 10);
    // α below F(10) = 5.74 ms (R = 5 %, T = 60 ms) → 10 as well.
    assert_eq!(k_alpha(p(0.05), ms(60), ms(5), 10), 10);
    // A generous α needs no replica: F(0) = 63.2 ms ≤ 100 ms.
    assert_eq!(k_alpha(p(0.05), ms(60), ms(100), 10), 0);
    // T_unit = 0 (nothing measured): F ≡ 0.
    assert_eq!(k_alpha(p(0.05), Duration::ZERO, Duration::ZERO, 10), 0);
}

#[test]
fn level_is_clamped_at_k_max() {
    // R = 1 %, β = γ = 100 %, α = 0: every constraint allows more than 10.
    let c = AutoRecConfig {
        recovery_latency_tolerance: Duration::ZERO,
        redundancy_cost_tolerance: 1.0,
        goodput_reduction_tolerance: 1.0,
        ..AutoRecConfig::default()
    };
    let d = redundancy_level(p(0.01), ms(60), &c);
    assert_eq!(
        (d.k_alpha, d.k_beta, d.k_gamma, d.redundancy_level),
        (10, 10, 10, 10)
    );
    // A smaller K_max is honoured too.
    let c3 = AutoRecConfig {
        max_redundancy_level: 3,
        ..c
    };
    assert_eq!(redundancy_level(p(0.01), ms(60), &c3).redundancy_level, 3);
}

#[test]
fn presets_decide_as_the_paper_intends() {
    // LC (β = γ = 5 %) at R = 5 %: K_β = 1 (G(1) = 0.05), K_γ = 1 (H(1) = 0.043, H(2) = 0.085).
    let lc = redundancy_level(p(0.05), ms(30), &AutoRecConfig::rtc_low_cost());
    assert_eq!((lc.k_alpha, lc.k_beta, lc.k_gamma), (10, 1, 1));
    assert_eq!(lc.redundancy_level, 1);
    // Standard RTC (β = γ = 20 %): K_β = 4 (0.2), K_γ = 5 → 4.
    let std = redundancy_level(p(0.05), ms(30), &AutoRecConfig::rtc());
    assert_eq!((std.k_beta, std.k_gamma, std.redundancy_level), (4, 5, 4));
    // HC (β = γ = 50 %): K_β = 10, H(10) = 0.31 ≤ 0.5 → K_max.
    let hc = redundancy_level(p(0.05), ms(30), &AutoRecConfig::rtc_high_cost());
    assert_eq!(hc.redundancy_level, 10);
}

#[test]
fn total_loss_is_evaluated_at_the_limit() {
    // R = 1: F unbounded (K_α = K_max), G(K) = K, H(K) = 0 → K_θ = min(K_max, ⌊β⌋).
    let d = redundancy_level(Probability::ONE, ms(60), &AutoRecConfig::default());
    assert_eq!(
        (d.k_alpha, d.k_beta, d.k_gamma, d.redundancy_level),
        (10, 0, 10, 0)
    );
    let c = AutoRecConfig {
        redundancy_cost_tolerance: 2.5,
        ..AutoRecConfig::default()
    };
    assert_eq!(
        redundancy_level(Probability::ONE, ms(60), &c).redundancy_level,
        2
    );
}

#[test]
fn config_presets_and_validation() {
    let d = AutoRecConfig::default();
    assert_eq!(d.recovery_latency_tolerance, ms(30));
    assert!(close(d.redundancy_cost_tolerance, 0.3) && close(d.goodput_reduction_tolerance, 0.2));
    assert_eq!((d.max_redundancy_level, d.decision_interval_rtts), (10, 5));
    let lc = AutoRecConfig::rtc_low_cost();
    assert_eq!(lc.recovery_latency_tolerance, Duration::ZERO);
    assert!(
        close(lc.redundancy_cost_tolerance, 0.05) && close(lc.goodput_reduction_tolerance, 0.05)
    );
    let hc = AutoRecConfig::rtc_high_cost();
    assert!(close(hc.redundancy_cost_tolerance, 0.5) && close(hc.goodput_reduction_tolerance, 0.5));
    let dep = AutoRecConfig::deployment();
    assert_eq!(dep.recovery_latency_tolerance, ms(200));
    for c in [d.clone(), lc, hc, dep, AutoRecConfig::rtc()] {
        assert_eq!(c.validate(), Ok(()));
    }
    let bad = [
        AutoRecConfig {
            redundancy_cost_tolerance: -0.1,
            ..d.clone()
        },
        AutoRecConfig {
            redundancy_cost_tolerance: f64::NAN,
            ..d.clone()
        },
        AutoRecConfig {
            goodput_reduction_tolerance: 1.5,
            ..d.clone()
        },
        AutoRecConfig {
            max_redundancy_level: 5000,
            ..d.clone()
        },
        AutoRecConfig {
            decision_interval_rtts: 0,
            ..d.clone()
        },
        AutoRecConfig {
            initial_rtt: Duration::ZERO,
            ..d.clone()
        },
    ];
    for c in bad {
        assert!(c.validate().is_err(), "{c:?} accepted");
        assert!(RedundancyAdapter::new(at(0), c).is_err());
    }
}

// ---------------------------------------------------------------- RedundancyAdapter

/// An adapter measuring each interval alone (the paper's letter), so that
/// the tests can count the interval's packets.
fn adapter() -> RedundancyAdapter {
    let c = AutoRecConfig {
        min_resolved_packets: 0,
        ..AutoRecConfig::default()
    };
    RedundancyAdapter::new(at(0), c).unwrap()
}

#[test]
fn short_intervals_are_pooled_until_enough_packets_resolved() {
    let c = AutoRecConfig {
        min_resolved_packets: 100,
        ..AutoRecConfig::default()
    };
    assert_eq!(AutoRecConfig::default().min_resolved_packets, 1000);
    let mut a = RedundancyAdapter::new(at(0), c).unwrap();
    a.on_rtt(at(0), ms(60));
    // Interval 1: 40 acked, 2 lost (80 ms each).
    for i in 0..40 {
        a.on_packet_acked(at(i));
    }
    a.on_packet_lost(at(50), ms(80));
    a.on_packet_lost(at(51), ms(80));
    let r1 = a.poll_decision(at(300)).unwrap();
    assert_eq!(
        (r1.acked, r1.lost, r1.intervals_pooled),
        (40, 2, 1),
        "nothing to pool yet"
    );
    // Interval 2: 30 acked, 1 lost (20 ms): pooled with interval 1 (73 < 100).
    for i in 0..30 {
        a.on_packet_acked(at(300 + i));
    }
    a.on_packet_lost(at(350), ms(20));
    let r2 = a.poll_decision(at(600)).unwrap();
    assert_eq!((r2.acked, r2.lost, r2.intervals_pooled), (70, 3, 2));
    assert!(close(r2.loss_rate.get(), 3.0 / 73.0));
    assert_eq!(r2.t_unit, Some(ms(60)), "(80 + 80 + 20) / 3");
    // Interval 3: 120 acked, no loss: enough alone, and loss-free → K = 0.
    for i in 0..120 {
        a.on_packet_acked(at(600 + i));
    }
    let r3 = a.poll_decision(at(900)).unwrap();
    assert_eq!((r3.acked, r3.lost, r3.intervals_pooled), (120, 0, 1));
    assert_eq!(r3.decision.redundancy_level, 0);
    // Interval 4: 10 acked, 1 lost: pooled with interval 3 only (131 ≥ 100).
    for i in 0..10 {
        a.on_packet_acked(at(900 + i));
    }
    a.on_packet_lost(at(950), ms(40));
    let r4 = a.poll_decision(at(1200)).unwrap();
    assert_eq!((r4.acked, r4.lost, r4.intervals_pooled), (130, 1, 2));
}

#[test]
fn decision_interval_is_five_rtts() {
    let mut a = adapter();
    // Before any RTT sample: 5 × 333 ms (RFC 9002 kInitialRtt).
    assert_eq!(a.decision_interval(), ms(1665));
    assert_eq!(a.poll_timeout(), at(1665));
    a.on_rtt(at(10), ms(60));
    assert_eq!(a.decision_interval(), ms(300));
    assert_eq!(a.poll_timeout(), at(300));
    assert!(a.poll_decision(at(299)).is_none());
    let r = a.poll_decision(at(300)).expect("interval over");
    assert_eq!(r.at, at(300));
    // The next interval starts at the deciding poll.
    assert_eq!(a.poll_timeout(), at(600));
    // A late poll starts the next interval late.
    assert!(a.poll_decision(at(650)).is_some());
    assert_eq!(a.poll_timeout(), at(950));
    // The latest RTT sets the length of the running interval.
    a.on_rtt(at(700), ms(100));
    assert_eq!(a.poll_timeout(), at(1150));
}

#[test]
fn adapter_decides_from_the_interval_measurements() {
    let mut a = adapter();
    a.on_rtt(at(0), ms(60));
    assert_eq!(a.redundancy_level(), 0);
    // 19 delivered, 1 lost detected 60 ms after it was sent: R = 5 %, T_unit = 60 ms.
    for i in 0..19 {
        a.on_packet_acked(at(i));
    }
    a.on_packet_lost(at(100), ms(60));
    let r = a.poll_decision(at(300)).unwrap();
    assert_eq!((r.acked, r.lost), (19, 1));
    assert!(close(r.loss_rate.get(), 0.05));
    assert_eq!(r.t_unit, Some(ms(60)));
    assert_eq!(r.decision.redundancy_level, 2);
    assert_eq!(r.t_thres, Some(ms(20)));
    assert_eq!(a.redundancy_level(), 2);
    assert_eq!(a.reinjection_threshold(), Some(ms(20)));
    assert_eq!(a.last_report(), Some(&r));
    // A loss-free interval: back to 0, counters were reset.
    for i in 0..50 {
        a.on_packet_acked(at(300 + i));
    }
    let r2 = a.poll_decision(at(600)).unwrap();
    assert_eq!((r2.acked, r2.lost, r2.t_unit), (50, 0, None));
    assert_eq!(r2.decision.redundancy_level, 0);
    assert_eq!(a.redundancy_level(), 0);
    assert_eq!(a.reinjection_threshold(), None);
}

#[test]
fn t_unit_is_the_mean_detection_time() {
    let mut a = adapter();
    a.on_rtt(at(0), ms(60));
    for _ in 0..8 {
        a.on_packet_acked(at(1));
    }
    // Two losses detected after 40 ms and 80 ms: T_unit = 60 ms; R = 2/10.
    a.on_packet_lost(at(2), ms(40));
    a.on_packet_lost(at(3), ms(80));
    let r = a.poll_decision(at(300)).unwrap();
    assert_eq!(r.t_unit, Some(ms(60)));
    assert!(close(r.loss_rate.get(), 0.2));
    // R = 20 %: F(K) with T = 60 ms: K = 3: (1 + 3·0.008)/(0.8·4)·60 = 19.2 ms ≤ 30;
    // K = 2: (1.08)/(2.4)·60 = 27 ms ≤ 30; K = 1: 1.2/1.6·60 = 45 ms → K_α = 2.
    // K_β = ⌊0.3/0.2⌋ = 1 → K_θ = 1, T_thres = 30 ms.
    assert_eq!(r.decision.k_alpha, 2);
    assert_eq!(r.decision.k_beta, 1);
    assert_eq!(r.decision.redundancy_level, 1);
    assert_eq!(r.t_thres, Some(ms(30)));
}

#[test]
fn nothing_resolved_counts_as_no_loss() {
    let mut a = adapter();
    let r = a.poll_decision(at(2000)).unwrap();
    assert!(close(r.loss_rate.get(), 0.0));
    assert_eq!(r.decision.redundancy_level, 0);
}

#[test]
fn all_lost_interval() {
    let mut a = adapter();
    a.on_rtt(at(0), ms(50));
    a.on_packet_lost(at(10), ms(70));
    let r = a.poll_decision(at(250)).unwrap();
    assert!(close(r.loss_rate.get(), 1.0));
    // β = 30 % < 1 → K_β = 0.
    assert_eq!(r.decision.redundancy_level, 0);
    assert_eq!(r.t_thres, None);
}

// ---------------------------------------------------------------- ReinjectionQueue

fn queue(k: u32) -> ReinjectionQueue {
    let mut q = ReinjectionQueue::new();
    q.set_redundancy_level(k);
    q
}

fn ids(q: &ReinjectionQueue) -> Vec<DataId> {
    q.iter().map(|e| e.data_id).collect()
}

#[test]
fn retransmitted_data_enter_at_the_tail_in_send_order() {
    let mut q = queue(2);
    q.on_retransmitted(at(1), 10, Bytes::new(1200));
    q.on_retransmitted(at(2), 11, Bytes::new(1000));
    q.on_retransmitted(at(3), 12, Bytes::new(800));
    assert_eq!(ids(&q), vec![10, 11, 12]);
    let s = q.status(11).unwrap();
    assert_eq!(
        (s.size, s.last_sent, s.reinjections),
        (Bytes::new(1000), at(2), 0)
    );
    assert_eq!(q.stats().admitted, 3);
    // Retransmitted again by ARQ: moves to the tail, T_stmp updated, same count and size.
    q.on_retransmitted(at(4), 10, Bytes::new(1));
    assert_eq!(ids(&q), vec![11, 12, 10]);
    let s = q.status(10).unwrap();
    assert_eq!(
        (s.size, s.last_sent, s.reinjections),
        (Bytes::new(1200), at(4), 0)
    );
    assert_eq!(q.stats().admitted, 3);
}

#[test]
fn nothing_is_reinjected_at_level_zero() {
    let mut q = queue(0);
    q.on_retransmitted(at(1), 1, Bytes::new(1000));
    assert!(!q.has_off_mode_candidate());
    assert_eq!(q.next_for_off_mode(at(5)), None);
    assert_eq!(q.next_opportunistic(at(500), ms(1)), None);
    assert_eq!(q.opportunistic_deadline(ms(1)), None);
    assert_eq!(q.len(), 1);
}

#[test]
fn off_mode_reinjects_the_least_recently_sent() {
    let mut q = queue(3);
    q.on_retransmitted(at(1), 1, Bytes::new(100));
    q.on_retransmitted(at(2), 2, Bytes::new(200));
    assert!(q.has_off_mode_candidate());
    let r = q.next_for_off_mode(at(3)).unwrap();
    assert_eq!(
        r,
        Reinjection {
            data_id: 1,
            size: Bytes::new(100),
            ordinal: 1
        }
    );
    // Its T_stmp and count were updated, and it moved to the tail.
    assert_eq!(ids(&q), vec![2, 1]);
    let s = q.status(1).unwrap();
    assert_eq!((s.last_sent, s.reinjections), (at(3), 1));
    // Next: datum 2, now the oldest.
    assert_eq!(q.next_for_off_mode(at(4)).unwrap().data_id, 2);
    assert_eq!(q.next_for_off_mode(at(5)).unwrap().data_id, 1);
    let st = q.stats();
    assert_eq!((st.off_mode, st.opportunistic, st.bytes), (3, 0, 400));
}

#[test]
fn at_most_k_reinjections_per_datum() {
    let mut q = queue(2);
    q.on_retransmitted(at(0), 7, Bytes::new(1000));
    assert_eq!(q.next_for_off_mode(at(1)).unwrap().ordinal, 1);
    assert_eq!(q.next_for_off_mode(at(2)).unwrap().ordinal, 2);
    assert_eq!(q.next_for_off_mode(at(3)), None);
    assert_eq!(q.next_opportunistic(at(1000), ms(1)), None);
    // §VIII-C: after its K reinjections the datum is left to ARQ; a new ARQ
    // retransmission does not give it a fresh budget.
    q.on_retransmitted(at(100), 7, Bytes::new(1000));
    let s = q.status(7).unwrap();
    assert_eq!((s.last_sent, s.reinjections), (at(100), 2));
    assert_eq!(q.next_for_off_mode(at(101)), None);
    // An exhausted datum is skipped, a younger one with budget is served.
    q.on_retransmitted(at(102), 8, Bytes::new(500));
    assert_eq!(q.next_for_off_mode(at(103)).unwrap().data_id, 8);
}

#[test]
fn the_level_in_force_applies_to_queued_data() {
    let mut q = queue(3);
    q.on_retransmitted(at(0), 1, Bytes::new(10));
    q.next_for_off_mode(at(1)).unwrap();
    // K rises to 4 before datum 1 is exhausted: it may get up to 4.
    q.set_redundancy_level(4);
    assert_eq!(q.next_for_off_mode(at(2)).unwrap().ordinal, 2);
    // K drops to 2: datum 1 (A = 2) has reached it and is exhausted (§V-B
    // would delete it here).
    q.set_redundancy_level(2);
    assert!(!q.has_off_mode_candidate());
    assert!(q.status(1).unwrap().exhausted);
    assert_eq!(q.len(), 1, "kept until acknowledged");
    // K back to 5: nothing more for datum 1, which the paper has deleted.
    q.set_redundancy_level(5);
    assert!(!q.has_off_mode_candidate());
    // A datum admitted now gets the new level's budget.
    q.on_retransmitted(at(3), 2, Bytes::new(10));
    assert_eq!(q.next_for_off_mode(at(4)).unwrap().data_id, 2);
    assert_eq!(q.redundancy_level(), 5);
}

#[test]
fn a_datum_exhausted_at_its_level_gets_nothing_when_the_level_rises() {
    // The RTC runs of §VII-A: K changes every 5 RTTs; replicas per datum
    // must stay within the level that exhausted it, or the redundancy cost
    // exceeds β whenever K rises.
    let mut q = queue(2);
    q.on_retransmitted(at(0), 1, Bytes::new(10));
    assert_eq!(q.next_for_off_mode(at(1)).unwrap().ordinal, 1);
    assert_eq!(q.next_for_off_mode(at(2)).unwrap().ordinal, 2);
    assert!(q.status(1).unwrap().exhausted);
    q.set_redundancy_level(10);
    assert_eq!(q.next_for_off_mode(at(3)), None);
    assert_eq!(q.next_opportunistic(at(500), ms(1)), None);
    // Admitted while K = 0: exhausted at once (§V-B: A_i = 0 reaches K = 0).
    let mut z = queue(0);
    z.on_retransmitted(at(0), 7, Bytes::new(10));
    z.set_redundancy_level(3);
    assert_eq!(z.next_for_off_mode(at(1)), None);
}

#[test]
fn acknowledgement_removes_the_datum() {
    let mut q = queue(2);
    q.on_retransmitted(at(0), 1, Bytes::new(10));
    q.on_retransmitted(at(1), 2, Bytes::new(20));
    q.on_retransmitted(at(2), 3, Bytes::new(30));
    let s = q.on_acked(at(3), 2).unwrap();
    assert_eq!(s.data_id, 2);
    assert_eq!(ids(&q), vec![1, 3]);
    assert_eq!(q.on_acked(at(4), 2), None);
    assert_eq!(q.on_acked(at(4), 99), None);
    assert_eq!(q.forget(1).map(|s| s.data_id), Some(1));
    assert_eq!(q.forget(1), None);
    assert_eq!(ids(&q), vec![3]);
    let st = q.stats();
    assert_eq!((st.acked, st.forgotten), (1, 1));
    q.on_acked(at(5), 3);
    assert!(q.is_empty());
    assert_eq!(q.next_for_off_mode(at(6)), None);
}

#[test]
fn opportunistic_reinjection_waits_for_the_silence_to_exceed_t_thres() {
    let mut q = queue(2);
    q.on_retransmitted(at(0), 1, Bytes::new(10));
    let t_thres = ms(20);
    assert_eq!(
        q.opportunistic_deadline(t_thres),
        Some(at(20) + Duration::from_nanos(1))
    );
    assert_eq!(q.next_opportunistic(at(10), t_thres), None);
    // Exactly T_thres of silence is not enough ("exceeds").
    assert_eq!(q.next_opportunistic(at(20), t_thres), None);
    let r = q
        .next_opportunistic(at(20) + Duration::from_nanos(1), t_thres)
        .unwrap();
    assert_eq!((r.data_id, r.ordinal), (1, 1));
    // The silence restarts at the reinjection.
    assert_eq!(q.next_opportunistic(at(30), t_thres), None);
    assert!(q.next_opportunistic(at(41), t_thres).is_some());
    assert_eq!(q.stats().opportunistic, 2);
}

#[test]
fn spaced_off_mode_reinjection_waits_t_thres_between_copies_of_a_datum() {
    // Interpretation 11: without spacing a lone datum's K replicas leave back
    // to back; with spacing each waits for a silence above T_thres.
    let t_thres = ms(10);
    let mut plain = queue(3);
    plain.on_retransmitted(at(0), 1, Bytes::new(10));
    assert!(plain.next_for_off_mode(at(1)).is_some());
    assert!(plain.next_for_off_mode(at(1)).is_some());
    let mut q = queue(3);
    q.on_retransmitted(at(0), 1, Bytes::new(10));
    assert_eq!(q.next_for_off_mode_spaced(at(1), t_thres), None);
    assert_eq!(q.next_for_off_mode_spaced(at(10), t_thres), None);
    let r = q
        .next_for_off_mode_spaced(at(10) + Duration::from_nanos(1), t_thres)
        .unwrap();
    assert_eq!((r.data_id, r.ordinal), (1, 1));
    // The next copy of the same datum waits another T_thres; a datum
    // retransmitted meanwhile waits for its own silence.
    q.on_retransmitted(at(15), 2, Bytes::new(10));
    assert_eq!(q.next_for_off_mode_spaced(at(20), t_thres), None);
    assert_eq!(
        q.next_for_off_mode_spaced(at(21), t_thres).unwrap().data_id,
        1
    );
    assert_eq!(q.next_for_off_mode_spaced(at(21), t_thres), None);
    assert_eq!(
        q.next_for_off_mode_spaced(at(26), t_thres).unwrap().data_id,
        2
    );
    let st = q.stats();
    assert_eq!((st.off_mode, st.opportunistic), (3, 0));
}

#[test]
fn opportunistic_skips_exhausted_data_and_checks_the_oldest_allowed() {
    let mut q = queue(1);
    q.on_retransmitted(at(0), 1, Bytes::new(10));
    q.next_for_off_mode(at(1)).unwrap(); // datum 1 exhausted, T_stmp = 1 ms
    q.on_retransmitted(at(2), 2, Bytes::new(20));
    q.on_retransmitted(at(3), 3, Bytes::new(30));
    // Order: 1 (exhausted), 2, 3. At 25 ms with T_thres = 22 ms only 2 has been silent long enough.
    assert_eq!(
        q.opportunistic_deadline(ms(22)),
        Some(at(24) + Duration::from_nanos(1))
    );
    assert_eq!(q.next_opportunistic(at(25), ms(22)).unwrap().data_id, 2);
    assert_eq!(q.next_opportunistic(at(25), ms(22)), None);
    assert_eq!(q.next_opportunistic(at(26), ms(22)).unwrap().data_id, 3);
}

#[test]
fn figure_11_walkthrough() {
    // §V-B Fig. 11, K = 2: retransmitted at t1; opportunistic replica at t2 once
    // the silence exceeds T_thres; a second replica at t3 when off-mode starts;
    // nothing more in the rest of the off-mode; acknowledged at t6.
    let t_unit = ms(60);
    let t_thres = reinjection_threshold(t_unit, 2); // 20 ms
    let mut q = queue(2);
    q.on_retransmitted(at(100), 42, Bytes::new(1200)); // t1
    assert_eq!(q.next_opportunistic(at(110), t_thres), None);
    let r2 = q.next_opportunistic(at(125), t_thres).unwrap(); // t2
    assert_eq!(r2.ordinal, 1);
    let r3 = q.next_for_off_mode(at(130)).unwrap(); // t3
    assert_eq!(r3.ordinal, 2);
    assert_eq!(q.next_for_off_mode(at(140)), None); // t4, still off-mode
    assert_eq!(q.next_opportunistic(at(200), t_thres), None);
    let done = q.on_acked(at(210), 42).unwrap(); // t6
    assert_eq!((done.reinjections, done.last_sent), (2, at(130)));
    assert!(q.is_empty());
}

#[test]
fn steady_state_does_not_grow_the_queue() {
    let mut q = ReinjectionQueue::with_capacity(8);
    q.set_redundancy_level(3);
    let cap = q_capacity(&q);
    let mut t = 0;
    for id in 0..10_000u64 {
        t += 1;
        q.on_retransmitted(at(t), id, Bytes::new(1000));
        q.next_for_off_mode(at(t));
        q.next_opportunistic(at(t), ms(0));
        q.on_retransmitted(at(t), id.saturating_sub(2), Bytes::new(1000));
        if id >= 4 {
            q.on_acked(at(t), id - 4);
        }
        assert!(q.len() <= 5);
    }
    assert_eq!(q_capacity(&q), cap, "the deque reallocated in steady state");
}

fn q_capacity(q: &ReinjectionQueue) -> usize {
    q.capacity()
}

// A reference model of the queue: a plain vector, the order decided by
// sorting on (T_stmp, last-touch sequence) at every query.
#[derive(Default)]
struct Model {
    rows: Vec<(DataId, u64, Instant, u32, u64, bool)>, // id, size, T_stmp, A_i, touch seq, exhausted
    seq: u64,
    k: u32,
}

impl Model {
    fn find(&self, id: DataId) -> Option<usize> {
        self.rows.iter().position(|r| r.0 == id)
    }
    fn retransmitted(&mut self, now: Instant, id: DataId, size: u64) {
        self.seq += 1;
        match self.find(id) {
            Some(i) => {
                self.rows[i].2 = now;
                self.rows[i].4 = self.seq;
            }
            None => self.rows.push((id, size, now, 0, self.seq, self.k == 0)),
        }
    }
    fn acked(&mut self, id: DataId) {
        if let Some(i) = self.find(id) {
            self.rows.remove(i);
        }
    }
    fn oldest_allowed(&self) -> Option<usize> {
        (0..self.rows.len())
            .filter(|&i| !self.rows[i].5 && self.rows[i].3 < self.k)
            .min_by_key(|&i| (self.rows[i].2, self.rows[i].4))
    }
    fn reinject(&mut self, now: Instant, i: usize) -> (DataId, u32) {
        self.seq += 1;
        let r = &mut self.rows[i];
        r.2 = now;
        r.3 += 1;
        r.4 = self.seq;
        if r.3 >= self.k {
            r.5 = true;
        }
        (r.0, r.3)
    }
    fn off_mode(&mut self, now: Instant) -> Option<(DataId, u32)> {
        let i = self.oldest_allowed()?;
        Some(self.reinject(now, i))
    }
    fn opportunistic(&mut self, now: Instant, t_thres: Duration) -> Option<(DataId, u32)> {
        // Any allowed datum silent for more than T_thres, the oldest first.
        let i = (0..self.rows.len())
            .filter(|&i| {
                !self.rows[i].5 && self.rows[i].3 < self.k && now - self.rows[i].2 > t_thres
            })
            .min_by_key(|&i| (self.rows[i].2, self.rows[i].4))?;
        Some(self.reinject(now, i))
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    Retransmit(DataId, u64),
    Ack(DataId),
    OffMode,
    Opportunistic(u64),
    SetLevel(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..30).prop_map(Op::Advance),
        (0u64..12, 1u64..1500).prop_map(|(id, s)| Op::Retransmit(id, s)),
        (0u64..12).prop_map(Op::Ack),
        Just(Op::OffMode),
        (0u64..40).prop_map(Op::Opportunistic),
        (0u32..4).prop_map(Op::SetLevel),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The queue behaves like the sort-at-every-query model, stays ordered by
    /// T_stmp, and never gives a datum more than the level in force.
    #[test]
    fn queue_matches_the_reference_model(ops in prop::collection::vec(op(), 1..120)) {
        let mut q = ReinjectionQueue::new();
        let mut m = Model::default();
        let mut now = Instant::ZERO;
        for op in ops {
            match op {
                Op::Advance(d) => now += ms(d),
                Op::Retransmit(id, s) => {
                    q.on_retransmitted(now, id, Bytes::new(s));
                    m.retransmitted(now, id, s);
                }
                Op::Ack(id) => {
                    let had = m.find(id).is_some();
                    prop_assert_eq!(q.on_acked(now, id).is_some(), had);
                    m.acked(id);
                }
                Op::OffMode => {
                    let got = q.next_for_off_mode(now).map(|r| (r.data_id, r.ordinal));
                    prop_assert_eq!(got, m.off_mode(now));
                }
                Op::Opportunistic(t) => {
                    let got = q.next_opportunistic(now, ms(t)).map(|r| (r.data_id, r.ordinal));
                    prop_assert_eq!(got, m.opportunistic(now, ms(t)));
                }
                Op::SetLevel(k) => {
                    q.set_redundancy_level(k);
                    m.k = k;
                    for r in &mut m.rows {
                        if r.3 >= k {
                            r.5 = true;
                        }
                    }
                }
            }
            let stamps: Vec<Instant> = q.iter().map(|e| e.last_sent).collect();
            prop_assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "out of order: {:?}", stamps);
            prop_assert_eq!(q.len(), m.rows.len());
            for r in &m.rows {
                let s = q.status(r.0).unwrap();
                prop_assert_eq!(
                    (s.size.get(), s.last_sent, s.reinjections, s.exhausted),
                    (r.1, r.2, r.3, r.5)
                );
            }
        }
    }
}
