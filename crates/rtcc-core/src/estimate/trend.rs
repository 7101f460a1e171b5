//! One-way-delay trend tests over a packet train.
//!
//! [`full_search`] is the full-search statistic of
//! `papers/svc-topdown-probing.txt` eq. 11 (after its reference \[11\]): over a
//! train of M one-way delays D_1..D_M,
//!
//! FS = Σ_{k=2..M} Σ_{l=1..k−1} I(D_k > D_l) / (M(M−1)/2),
//!
//! the fraction of ordered pairs in which the later packet waited longer. A
//! strictly increasing series gives 1, independent noise 0.5 on average, a
//! decreasing series 0. A train whose rate exceeds the available bandwidth
//! queues at the tight link and its delays increase (§2.2); the paper decides
//! "increasing" when FS exceeds threshold_FS (0.7 above 2 Mbps, 0.6–0.7
//! below, §3.1).
//!
//! Delays are compared, never subtracted from a reference, so a constant
//! clock offset between sender and receiver does not matter. Ties count as
//! "not greater" (I(D_k > D_l) = 0), as the paper's indicator says.

/// Eq. 11 over `delays` in train order (any ordered type: durations, or
/// signed nanoseconds when the clocks' offset may make them negative);
/// `None` for fewer than two delays.
///
/// O(M²) comparisons; trains are tens of packets.
pub fn full_search<T: PartialOrd>(delays: &[T]) -> Option<f64> {
    let m = delays.len();
    if m < 2 {
        return None;
    }
    let mut greater = 0u64;
    for k in 1..m {
        for l in 0..k {
            if delays[k] > delays[l] {
                greater += 1;
            }
        }
    }
    let pairs = (m * (m - 1) / 2) as f64;
    Some(greater as f64 / pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&x| Duration::from_millis(x)).collect()
    }

    #[test]
    fn increasing_is_one_decreasing_is_zero() {
        assert_eq!(full_search(&ms(&[1, 2, 3, 4, 5])), Some(1.0));
        assert_eq!(full_search(&ms(&[5, 4, 3, 2, 1])), Some(0.0));
    }

    #[test]
    fn hand_counted_pairs() {
        // D = 10, 30, 20, 40: pairs (k > l) with D_k > D_l:
        // (30>10), (20>10), (40>10), (40>30), (40>20) = 5 of 6; 20 > 30 fails.
        assert_eq!(full_search(&ms(&[10, 30, 20, 40])), Some(5.0 / 6.0));
        // Ties are not "greater": 10, 10, 10 → 0 of 3.
        assert_eq!(full_search(&ms(&[10, 10, 10])), Some(0.0));
        // 10, 20, 10: (20>10) only; the last 10 is not above the first → 1 of 3.
        assert_eq!(full_search(&ms(&[10, 20, 10])), Some(1.0 / 3.0));
    }

    #[test]
    fn too_short_a_train_has_no_statistic() {
        assert_eq!(full_search::<Duration>(&[]), None);
        assert_eq!(full_search(&ms(&[3])), None);
        assert_eq!(full_search(&ms(&[3, 4])), Some(1.0));
    }

    #[test]
    fn a_constant_offset_changes_nothing() {
        let d = ms(&[12, 15, 11, 19, 22, 18]);
        let shifted: Vec<_> = d.iter().map(|&x| x + Duration::from_secs(1000)).collect();
        assert_eq!(full_search(&d), full_search(&shifted));
    }
}
