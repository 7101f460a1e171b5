//! Loss recovery of the window-based TCP family: what happens on duplicate
//! ACKs and on ACKs that arrive during recovery.
//!
//! - Tahoe: on the third duplicate ACK, ssthresh by RFC 5681 eq. (4),
//!   cwnd = 1 SMSS and go-back-N from `snd_una` (fast retransmit without fast
//!   recovery, as 4.3BSD-Tahoe).
//! - Reno: RFC 5681 §3.2 steps 1–6. Fast recovery ends on the first ACK of
//!   new data, partial or not.
//! - NewReno: RFC 6582 §3.2 steps 1–6 with the "Impatient" timer variant
//!   (§4): partial ACKs retransmit the next hole and deflate the window; the
//!   full ACK (covering `recover`) sets cwnd = ssthresh (§3.2 step 6, option 2,
//!   as ns-3).
//!
//! The sender owns sequence numbers and the timer; this module decides, and
//! returns what the sender must do.
//!
//! `recover` is kept as an exclusive end (the sender's `snd_max`, one past the
//! highest byte sent), so RFC 6582's "ACK acknowledges all data up to and
//! including recover" is `ack >= recover` here.

use rtcc_core::Bytes;

use super::growth::Window;

/// RFC 5681 §3.2: fast retransmit on the third duplicate ACK ("DupThresh").
pub(crate) const DUP_THRESH: u32 = 3;

/// Loss recovery flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecoveryKind {
    /// No fast recovery: slow start from `snd_una` after a fast retransmit.
    Tahoe,
    /// RFC 5681 §3.2 fast recovery.
    Reno,
    /// RFC 6582 fast recovery with partial ACKs.
    NewReno,
}

/// What the sender does after the third duplicate ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnLoss {
    /// Retransmit the segment at `snd_una` now, regardless of cwnd.
    FastRetransmit,
    /// Rewind `snd_nxt` to `snd_una` and resend under the (1 SMSS) window.
    GoBackN,
}

/// What the sender does on an ACK of new data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnNewAck {
    /// Not in recovery: the growth policy grows cwnd.
    Grow,
    /// Recovery just ended; cwnd was set, no growth on this ACK.
    Exit,
    /// RFC 6582 partial ACK: retransmit the segment at the new `snd_una`;
    /// restart the timer only if `restart_timer` (first partial ACK, §4).
    Partial {
        /// True for the first partial ACK of this recovery episode.
        restart_timer: bool,
    },
}

/// Recovery state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recovery {
    kind: RecoveryKind,
    in_recovery: bool,
    /// RFC 6582 "recover" (exclusive end); `None` until the first loss, which
    /// stands for the initial send sequence number (below every ACK).
    recover: Option<u64>,
    /// No partial ACK seen yet in this episode (RFC 6582 §4, Impatient).
    first_partial: bool,
}

impl Recovery {
    pub(crate) fn new(kind: RecoveryKind) -> Self {
        Recovery { kind, in_recovery: false, recover: None, first_partial: true }
    }

    pub(crate) fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    pub(crate) fn recover(&self) -> Option<u64> {
        self.recover
    }

    /// RFC 6582 §3.2 step 1: after the third duplicate ACK, fast retransmit
    /// only if the ACK covers `recover` (all data outstanding at the previous
    /// loss event or RTO), which stops stale duplicate ACKs from a go-back-N
    /// burst halving cwnd again. Reno (RFC 5681) has no such guard. Tahoe uses
    /// it too: its go-back-N resends data the receiver holds, whose duplicate
    /// ACKs would otherwise trigger spurious reductions.
    pub(crate) fn may_enter(&self, ack: u64) -> bool {
        match self.kind {
            RecoveryKind::Reno => true,
            RecoveryKind::Tahoe | RecoveryKind::NewReno => self.recover.map_or(true, |r| ack >= r),
        }
    }

    /// Third duplicate ACK, `may_enter` held and `w.ssthresh` is already the
    /// post-loss value (RFC 5681 eq. (4)). `snd_max` is one past the highest
    /// byte sent.
    pub(crate) fn enter(&mut self, w: &mut Window, snd_max: u64) -> OnLoss {
        // RFC 6582 §3.2 step 2: recover <- highest sequence number transmitted.
        self.recover = Some(snd_max);
        match self.kind {
            RecoveryKind::Tahoe => {
                // Tahoe: slow start from one segment (RFC 5681 §3.1 loss window).
                w.cwnd = w.mss;
                OnLoss::GoBackN
            }
            RecoveryKind::Reno | RecoveryKind::NewReno => {
                // RFC 5681 §3.2 step 3 / RFC 6582 §3.2 step 2:
                // cwnd = ssthresh + 3·SMSS (inflated by the segments that left).
                w.cwnd = w.ssthresh + w.mss * u64::from(DUP_THRESH);
                self.in_recovery = true;
                self.first_partial = true;
                OnLoss::FastRetransmit
            }
        }
    }

    /// A duplicate ACK during fast recovery: RFC 5681 §3.2 step 4 / RFC 6582
    /// §3.2 step 3, cwnd += SMSS.
    pub(crate) fn on_extra_dupack(&mut self, w: &mut Window) {
        if self.in_recovery {
            w.cwnd += w.mss;
        }
    }

    /// An ACK of `acked` new bytes, now acknowledging everything below `ack`.
    pub(crate) fn on_new_ack(&mut self, w: &mut Window, ack: u64, acked: Bytes) -> OnNewAck {
        if !self.in_recovery {
            return OnNewAck::Grow;
        }
        match self.kind {
            RecoveryKind::Tahoe => {
                // Tahoe never enters fast recovery; kept for exhaustiveness.
                self.in_recovery = false;
                OnNewAck::Grow
            }
            RecoveryKind::Reno => {
                // RFC 5681 §3.2 step 6: "deflate" cwnd to ssthresh on the next
                // ACK of new data.
                w.cwnd = w.ssthresh.max(w.mss);
                self.in_recovery = false;
                OnNewAck::Exit
            }
            RecoveryKind::NewReno => {
                if self.recover.map_or(true, |r| ack >= r) {
                    // RFC 6582 §3.2 step 6, full ACK, option 2: cwnd = ssthresh.
                    w.cwnd = w.ssthresh.max(w.mss);
                    self.in_recovery = false;
                    OnNewAck::Exit
                } else {
                    // RFC 6582 §3.2 step 5, partial ACK: deflate by the new
                    // data acknowledged, add back one SMSS if at least one SMSS
                    // was acknowledged. Clamped at one SMSS (our invariant;
                    // the RFC leaves the floor implicit).
                    let mut cwnd = w.cwnd.saturating_sub(acked);
                    if acked >= w.mss {
                        cwnd += w.mss;
                    }
                    w.cwnd = cwnd.max(w.mss);
                    let restart_timer = self.first_partial;
                    self.first_partial = false;
                    OnNewAck::Partial { restart_timer }
                }
            }
        }
    }

    /// Retransmission timeout: RFC 6582 §3.2 (after the steps) — record the
    /// highest sequence number transmitted in `recover` and leave fast recovery.
    pub(crate) fn on_rto(&mut self, snd_max: u64) {
        self.recover = Some(snd_max);
        self.in_recovery = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn window() -> Window {
        Window { cwnd: Bytes::new(20 * MSS), ssthresh: Bytes::new(10 * MSS), mss: Bytes::new(MSS) }
    }

    #[test]
    fn newreno_partial_then_full_ack() {
        let mut r = Recovery::new(RecoveryKind::NewReno);
        let mut w = window();
        assert!(r.may_enter(0));
        assert_eq!(r.enter(&mut w, 20 * MSS), OnLoss::FastRetransmit);
        assert_eq!(w.cwnd.get(), 13 * MSS);
        r.on_extra_dupack(&mut w);
        assert_eq!(w.cwnd.get(), 14 * MSS);
        // Partial ACK of 5 segments: 14 − 5 + 1 = 10 segments.
        let a = r.on_new_ack(&mut w, 5 * MSS, Bytes::new(5 * MSS));
        assert_eq!(a, OnNewAck::Partial { restart_timer: true });
        assert_eq!(w.cwnd.get(), 10 * MSS);
        // Second partial ACK does not restart the timer (Impatient).
        let a = r.on_new_ack(&mut w, 6 * MSS, Bytes::new(MSS));
        assert_eq!(a, OnNewAck::Partial { restart_timer: false });
        assert!(r.in_recovery());
        // Not allowed to re-enter on duplicate ACKs below recover.
        assert!(!r.may_enter(6 * MSS));
        assert_eq!(r.on_new_ack(&mut w, 20 * MSS, Bytes::new(14 * MSS)), OnNewAck::Exit);
        assert_eq!(w.cwnd, w.ssthresh);
        assert!(!r.in_recovery());
        assert!(r.may_enter(20 * MSS));
    }

    #[test]
    fn reno_exits_on_first_new_ack() {
        let mut r = Recovery::new(RecoveryKind::Reno);
        let mut w = window();
        assert_eq!(r.enter(&mut w, 20 * MSS), OnLoss::FastRetransmit);
        assert_eq!(r.on_new_ack(&mut w, 5 * MSS, Bytes::new(5 * MSS)), OnNewAck::Exit);
        assert_eq!(w.cwnd, w.ssthresh);
        // Reno has no "recover" guard.
        assert!(r.may_enter(5 * MSS));
    }

    #[test]
    fn tahoe_goes_back_n_with_one_segment() {
        let mut r = Recovery::new(RecoveryKind::Tahoe);
        let mut w = window();
        assert_eq!(r.enter(&mut w, 20 * MSS), OnLoss::GoBackN);
        assert_eq!(w.cwnd.get(), MSS);
        assert!(!r.in_recovery());
        assert_eq!(r.on_new_ack(&mut w, MSS, Bytes::new(MSS)), OnNewAck::Grow);
        assert!(!r.may_enter(MSS));
    }

    #[test]
    fn rto_sets_recover_and_leaves_recovery() {
        let mut r = Recovery::new(RecoveryKind::NewReno);
        let mut w = window();
        r.enter(&mut w, 20 * MSS);
        r.on_rto(30 * MSS);
        assert!(!r.in_recovery());
        assert_eq!(r.recover(), Some(30 * MSS));
        assert!(!r.may_enter(25 * MSS));
    }
}
