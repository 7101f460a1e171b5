//! Copa's mode switching (NSDI 2018 §2.2, "Competing with Buffer-Filling
//! Schemes").
//!
//! When only Copa flows share a bottleneck the queue empties at least once
//! every 5 RTTs. A long-running buffer-filling competitor (Reno, CUBIC) keeps
//! it from emptying. The detector therefore looks for a *nearly empty* queue,
//! `dq ≤ 0.1 · (RTTmax − RTTmin)` with RTTmax the largest RTT of the last four
//! RTTs: if none was seen in the last 5 RTTs it switches to competitive mode,
//! where `1/δ` follows AIMD (`1/δ ← 1/δ + 1` once per RTT, halved on loss, never
//! below the default `1/δ`); as soon as the queue is nearly empty again it
//! returns to default mode and `δ` to its default.

use crate::packet::SeqNo;
use crate::time::{Duration, Instant};

/// "Nearly empty": queueing delay at most this fraction of the RTT
/// oscillation of the last four RTTs (§2.2: "less than 10% of the rate
/// oscillations in the last four RTTs").
pub const NEARLY_EMPTY_FRACTION: f64 = 0.1;
/// RTTs over which RTTmax is taken (§2.2: "RTTmax is measured over the past
/// four RTTs").
pub const RTT_MAX_WINDOW_RTTS: u64 = 4;
/// A queue that has not been nearly empty for this many RTTs signals a
/// buffer-filling competitor (§2.2: "the queue is empty at least once every
/// 5·RTT" when only Copa flows compete).
pub const EMPTY_QUEUE_PERIOD_RTTS: u64 = 5;

/// Which δ rule is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatingMode {
    /// δ fixed at its default (0.5).
    Default,
    /// δ adapted by AIMD on 1/δ to compete with buffer-fillers.
    Competitive,
}

/// Mode detector and δ.
#[derive(Debug, Clone)]
pub(super) struct ModeSwitch {
    /// Whether competitive mode may be entered at all (`CopaMode::Competitive`).
    enabled: bool,
    default_inv_delta: f64,
    inv_delta: f64,
    mode: OperatingMode,
    /// Last ACK time at which the queue was nearly empty.
    last_nearly_empty: Option<Instant>,
    /// Losses of packets up to this sequence belong to the loss event that
    /// already halved 1/δ.
    loss_recovery_until: Option<SeqNo>,
}

impl ModeSwitch {
    /// Default mode with `δ = default_delta`; `enabled` allows switching.
    pub(super) fn new(enabled: bool, default_delta: f64) -> Self {
        ModeSwitch {
            enabled,
            default_inv_delta: 1.0 / default_delta,
            inv_delta: 1.0 / default_delta,
            mode: OperatingMode::Default,
            last_nearly_empty: None,
            loss_recovery_until: None,
        }
    }

    /// The δ in force.
    pub(super) fn delta(&self) -> f64 {
        1.0 / self.inv_delta
    }

    /// The mode in force.
    pub(super) fn mode(&self) -> OperatingMode {
        self.mode
    }

    /// An ACK at `now` with queueing delay `dq`, RTTmax over the last four
    /// RTTs `rtt_max`, long-term `rtt_min` and smoothed RTT `srtt`.
    pub(super) fn on_ack(
        &mut self,
        now: Instant,
        dq: Duration,
        rtt_max: Duration,
        rtt_min: Duration,
        srtt: Duration,
    ) {
        if !self.enabled {
            return;
        }
        let oscillation = rtt_max.saturating_sub(rtt_min);
        // §2.2: nearly empty ⇔ dq < 0.1·(RTTmax − RTTmin). We use ≤ so that a
        // perfectly flat RTT (no oscillation, no queue) counts as empty.
        let nearly_empty = dq.as_secs_f64() <= NEARLY_EMPTY_FRACTION * oscillation.as_secs_f64();
        let last = *self.last_nearly_empty.get_or_insert(now);
        if nearly_empty {
            self.last_nearly_empty = Some(now);
            if self.mode == OperatingMode::Competitive {
                // §2.2: "When Copa switches from competitive mode to default
                // mode, it resets δ to 0.5."
                self.mode = OperatingMode::Default;
                self.inv_delta = self.default_inv_delta;
            }
        } else if self.mode == OperatingMode::Default
            && now.saturating_duration_since(last) > srtt * EMPTY_QUEUE_PERIOD_RTTS
        {
            self.mode = OperatingMode::Competitive;
            self.inv_delta = self.default_inv_delta;
            self.loss_recovery_until = None;
        }
    }

    /// One window (RTT) of ACKs completed: additive increase of 1/δ in
    /// competitive mode (§2.2: 1/δ ← 1/δ + 1 per RTT).
    pub(super) fn on_window_end(&mut self) {
        if self.mode == OperatingMode::Competitive {
            self.inv_delta += 1.0;
        }
    }

    /// Packet `seq` was reported lost; `highest_sent` is the newest packet
    /// sent so far. In competitive mode 1/δ halves (§2.2, multiplicative
    /// decrease), once per loss event: further losses among packets sent
    /// before the halving do not halve again (as NewReno reduces once per
    /// window, RFC 6582). δ never exceeds its default.
    pub(super) fn on_loss(&mut self, seq: SeqNo, highest_sent: SeqNo) {
        if self.mode != OperatingMode::Competitive {
            return;
        }
        if self.loss_recovery_until.is_some_and(|r| seq <= r) {
            return;
        }
        self.inv_delta = (self.inv_delta / 2.0).max(self.default_inv_delta);
        self.loss_recovery_until = Some(highest_sent);
    }
}

#[cfg(test)]
#[allow(
    clippy::float_cmp,
    reason = "the values compared are exact: powers of two and small integers"
)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }
    fn at(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    /// Queue stays at 30 ms of a 40 ms oscillation: never nearly empty.
    fn full_queue_ack(m: &mut ModeSwitch, t: u64) {
        m.on_ack(at(t), ms(30), ms(80), ms(40), ms(50));
    }

    #[test]
    fn switches_to_competitive_after_five_rtts_without_empty_queue() {
        let mut m = ModeSwitch::new(true, 0.5);
        m.on_ack(at(0), ms(0), ms(80), ms(40), ms(50)); // empty at t = 0
                                                        // 5 · srtt = 250 ms. Up to 250 ms: still default.
        for t in (10..=250).step_by(10) {
            full_queue_ack(&mut m, t);
            assert_eq!(m.mode(), OperatingMode::Default, "t = {t} ms");
        }
        full_queue_ack(&mut m, 260);
        assert_eq!(m.mode(), OperatingMode::Competitive);
        assert_eq!(m.delta(), 0.5);
    }

    #[test]
    fn periodically_empty_queue_stays_default() {
        let mut m = ModeSwitch::new(true, 0.5);
        for t in (0..5000).step_by(10) {
            // Empty once every 200 ms (4 RTTs).
            if t % 200 == 0 {
                m.on_ack(at(t), ms(3), ms(80), ms(40), ms(50));
            } else {
                full_queue_ack(&mut m, t);
            }
            assert_eq!(m.mode(), OperatingMode::Default, "t = {t} ms");
        }
    }

    #[test]
    fn disabled_never_switches() {
        let mut m = ModeSwitch::new(false, 0.5);
        for t in (0..5000).step_by(10) {
            full_queue_ack(&mut m, t);
        }
        assert_eq!(m.mode(), OperatingMode::Default);
        m.on_window_end();
        assert_eq!(m.delta(), 0.5);
    }

    #[test]
    fn aimd_on_inverse_delta_and_reset_on_empty_queue() {
        let mut m = ModeSwitch::new(true, 0.5);
        for t in (0..=400).step_by(10) {
            full_queue_ack(&mut m, t);
        }
        assert_eq!(m.mode(), OperatingMode::Competitive);
        // Additive increase: 1/δ = 2 → 3 → 4 → 5 → 6.
        for k in 3..=6 {
            m.on_window_end();
            assert!((1.0 / m.delta() - k as f64).abs() < 1e-12);
        }
        // Loss: 1/δ halves to 3, once per loss event.
        m.on_loss(100, 150);
        assert!((1.0 / m.delta() - 3.0).abs() < 1e-12);
        m.on_loss(120, 160);
        assert!((1.0 / m.delta() - 3.0).abs() < 1e-12, "same loss event");
        // A loss after the event halves again, floored at 1/δ = 2.
        m.on_loss(151, 170);
        assert!((1.0 / m.delta() - 2.0).abs() < 1e-12);
        // Queue nearly empty: back to default, δ = 0.5.
        m.on_window_end();
        m.on_ack(at(500), ms(2), ms(80), ms(40), ms(50));
        assert_eq!(m.mode(), OperatingMode::Default);
        assert_eq!(m.delta(), 0.5);
    }

    #[test]
    fn loss_in_default_mode_does_nothing() {
        let mut m = ModeSwitch::new(true, 0.5);
        m.on_loss(1, 2);
        assert_eq!(m.delta(), 0.5);
    }
}
