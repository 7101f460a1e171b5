//! `X_recv_set`, the recent receive rates that limit the sending rate
//! (RFC 5348 §4.3 step 4, §4.4).
//!
//! The set holds `(X_recv, timestamp)` pairs. It starts with the single
//! item Infinity (no limit before the receiver has reported a rate). Three
//! operations change it:
//!
//! - *Update* (§4.3, the usual case): "Add X_recv to X_recv_set; Delete from
//!   X_recv_set values older than two round-trip times."
//! - *Maximize* (§4.3, a data-limited interval): "Add X_recv to X_recv_set;
//!   Delete initial value Infinity from X_recv_set, if it is still a member.
//!   Set the timestamp of the largest item to the current time; Delete all
//!   other items."
//! - *Halve* (§4.3, a loss in a data-limited interval) and *replace* by one
//!   item (§4.4 `Update_Limits`, the nofeedback timer).
//!
//! The sender's `recv_limit` is `2·max(X_recv_set)` (or `max(X_recv_set)`
//! right after a loss in a data-limited interval).

use crate::time::{Duration, Instant};
use crate::units::Bitrate;

/// One item; `rate = None` is the initial Infinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Item {
    rate: Option<Bitrate>,
    at: Instant,
}

/// RFC 5348's `X_recv_set`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XRecvSet {
    items: Vec<Item>,
}

impl XRecvSet {
    /// The initial set `{Infinity}`, stamped `now` (§4.2, sender
    /// initialisation).
    pub fn new(now: Instant) -> Self {
        XRecvSet {
            items: vec![Item {
                rate: None,
                at: now,
            }],
        }
    }

    /// `max(X_recv_set)`; `None` for Infinity (or an empty set).
    pub fn max(&self) -> Option<Bitrate> {
        let mut best = Bitrate::ZERO;
        for item in &self.items {
            best = best.max(item.rate?);
        }
        (!self.items.is_empty()).then_some(best)
    }

    /// True while the initial Infinity is a member.
    pub fn is_unlimited(&self) -> bool {
        self.max().is_none()
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True if the set has no item.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// §4.3 "Update X_recv_set()": adds `x_recv` at `now` and deletes the
    /// items older than `2·rtt`.
    pub fn update(&mut self, x_recv: Bitrate, now: Instant, rtt: Duration) {
        self.items.push(Item {
            rate: Some(x_recv),
            at: now,
        });
        let horizon = now.saturating_sub(rtt * 2);
        self.items.retain(|i| i.at >= horizon);
    }

    /// §4.3 "Maximize X_recv_set()": one item, the largest of the set and
    /// `x_recv` (Infinity excluded), stamped `now`.
    pub fn maximize(&mut self, x_recv: Bitrate, now: Instant) {
        let largest = self
            .items
            .iter()
            .filter_map(|i| i.rate)
            .fold(x_recv, Bitrate::max);
        self.items.clear();
        self.items.push(Item {
            rate: Some(largest),
            at: now,
        });
    }

    /// §4.3 "Halve entries in X_recv_set" (Infinity stays Infinity).
    pub fn halve(&mut self) {
        for i in &mut self.items {
            i.rate = i.rate.map(|r| r.mul_f64(0.5));
        }
    }

    /// §4.4 `Update_Limits`: "Replace X_recv_set contents with the single
    /// item" `rate`, stamped `now`.
    pub fn replace(&mut self, rate: Bitrate, now: Instant) {
        self.items.clear();
        self.items.push(Item {
            rate: Some(rate),
            at: now,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn update_keeps_two_rtts_and_starts_unlimited() {
        let r = Duration::from_millis(100);
        let mut s = XRecvSet::new(t(0));
        assert!(s.is_unlimited());
        s.update(Bitrate::kbps(500), t(150), r);
        // Infinity (stamped 0) is within 2R = 200 ms of 150 ms: still unlimited.
        assert!(s.is_unlimited());
        s.update(Bitrate::kbps(300), t(250), r);
        // Infinity is now older than 2R: the max of the reported rates.
        assert_eq!(s.max(), Some(Bitrate::kbps(500)));
        s.update(Bitrate::kbps(200), t(400), r);
        // 500 (at 150) is older than 400 − 200.
        assert_eq!(s.max(), Some(Bitrate::kbps(300)));
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn maximize_halve_and_replace() {
        let mut s = XRecvSet::new(t(0));
        s.maximize(Bitrate::kbps(100), t(10));
        // Infinity deleted, one item.
        assert_eq!((s.max(), s.len()), (Some(Bitrate::kbps(100)), 1));
        s.update(Bitrate::kbps(400), t(20), Duration::from_millis(100));
        s.maximize(Bitrate::kbps(50), t(30));
        assert_eq!((s.max(), s.len()), (Some(Bitrate::kbps(400)), 1));
        s.halve();
        assert_eq!(s.max(), Some(Bitrate::kbps(200)));
        s.replace(Bitrate::kbps(70), t(40));
        assert_eq!((s.max(), s.len()), (Some(Bitrate::kbps(70)), 1));
    }
}
