//! Protection policies: how many repairs per protected packet (the
//! *protection factor* `f`, relative to the number of protected packets as in
//! libwebrtc's RTP module) for a given loss rate and RTT.
//!
//! Both WebRTC policies are our own closed-form formulas. libwebrtc takes its
//! loss-based factor from an offline table (`kFecRateTable`, formerly
//! `kCodeRateXORTable`, indexed by bits per frame and loss) and its RTT
//! adjustment from another (`VCMNackFecTable`); we copy neither and keep only
//! the documented constants around them (cited at each one):
//!
//! - **Loss-based factor** (both policies), [`loss_based_factor`]:
//!   `f(p) = 0` if `p < 1/255`, else `min(1, max(0.25, κ·p))`.
//! - **WebRTC_NOW** (aggressive): `f(p)`, whatever the RTT — libwebrtc's
//!   `VCMFecMethod` factor as used today: `VCMNackFecMethod`'s RTT adjustment
//!   has been disabled (`adjustRtt = 1.0f`, "Disabling adjustment
//!   temporarily") so above 20 ms the full factor is sent.
//! - **WebRTC₁₄** (modest): `a(rtt) · f(p)` with the hybrid NACK/FEC RTT
//!   adjustment `a` of Holmer et al. (ICIP 2013 §2–3.1, the paper's ref. \[30\])
//!   and libwebrtc's `VCMNackFecMethod::ProtectionFactor`: NACK alone below
//!   20 ms, FEC reduced where NACK can still repair in time, full FEC from
//!   100 ms. See [`nack_rtt_adjustment`].

use crate::time::Duration;
use crate::units::Probability;

/// How much FEC redundancy to add.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FecPolicy {
    /// WebRTC₁₄ (AutoRec §VII-A): Google's hybrid NACK/FEC of Holmer, Shemer,
    /// Paniconi (ICIP 2013): the loss-based factor scaled down by the RTT
    /// adjustment [`nack_rtt_adjustment`] (zero below 20 ms).
    WebRtc14,
    /// WebRTC_NOW (AutoRec §VII-A): today's libwebrtc FEC, the loss-based
    /// factor [`loss_based_factor`] at every RTT.
    WebRtcNow,
    /// A constant protection factor in `[0, 1]` (tests, sweeps).
    Fixed(f64),
}

impl FecPolicy {
    /// Short name ("webrtc14", "webrtc-now", "fixed").
    pub fn name(&self) -> &'static str {
        match self {
            FecPolicy::WebRtc14 => "webrtc14",
            FecPolicy::WebRtcNow => "webrtc-now",
            FecPolicy::Fixed(_) => "fixed",
        }
    }

    /// The protection factor (repairs per protected packet, in `[0, 1]`) at
    /// loss rate `loss` and round-trip time `rtt`; `loss_gain` is `κ` of
    /// [`loss_based_factor`].
    pub fn protection_factor(&self, loss: Probability, rtt: Duration, loss_gain: f64) -> f64 {
        match *self {
            FecPolicy::WebRtc14 => nack_rtt_adjustment(rtt) * loss_based_factor(loss, loss_gain),
            FecPolicy::WebRtcNow => loss_based_factor(loss, loss_gain),
            FecPolicy::Fixed(f) => {
                if f.is_nan() {
                    0.0
                } else {
                    f.clamp(0.0, MAX_PROTECTION_FACTOR)
                }
            }
        }
    }
}

/// Loss rates below this get no FEC: libwebrtc quantises the loss to 1/255
/// by truncation and `VCMFecMethod::ProtectionFactor` returns zero protection
/// "if (filtered) packetLoss is 0" (media_opt_util.cc).
pub const MIN_PROTECTED_LOSS: f64 = 1.0 / 255.0;

/// Smallest non-zero protection factor, 0.25 repairs per protected packet:
/// libwebrtc's floor `firstPartitionProt = 255 · 0.20` ("First partition
/// protection: ~ 20%", `VCMFecMethod::ProtectionFactor`) is relative to all
/// packets sent (source + FEC); `VCMFecMethod::ConvertFECRate` turns a share
/// `r` of all packets into `r / (1 − r)` repairs per source packet, here
/// 0.20 / 0.80 = 0.25. This floor is why WebRTC FEC is "considerably above
/// the loss rate at low loss".
pub const MIN_PROTECTION_FACTOR: f64 = 0.25;

/// Largest protection factor, one repair per protected packet: libwebrtc caps
/// the code rate below `kPacketLossMax` = 129/255 ("50% is max",
/// media_opt_util.cc), i.e. 128/255 of all packets, which `ConvertFECRate`
/// turns into 255·128/127 → saturated at 255/255 of the source packets;
/// `ForwardErrorCorrection::NumFecPackets` then never exceeds the number of
/// media packets. So FEC may at most double the protected traffic.
pub const MAX_PROTECTION_FACTOR: f64 = 1.0;

/// Default `κ` of [`loss_based_factor`] (rtcc choice, our replacement for
/// libwebrtc's `kFecRateTable`): with `f = κ·p` the interleaved XOR code puts
/// `s = 1/f` protected packets under each repair, so a parity subset expects
/// `s·p = 1/κ` losses; at `κ = 4` that is 1/4, and a lost packet is repairable
/// unless another of its subset is lost too, which happens with probability
/// ≈ 1 − e^(−1/4) ≈ 22 %: about four losses in five are repaired by FEC.
pub const DEFAULT_LOSS_GAIN: f64 = 4.0;

/// RTT below which hybrid NACK/FEC sends no FEC at all and relies on NACK:
/// libwebrtc `kLowRttNackMs` = 20 ms (media_opt_util.h, "Thresholds for
/// hybrid NACK/FEC"; `VCMNackFecMethod::ProtectionFactor` mode 1).
pub const LOW_RTT_NACK: Duration = Duration::from_millis(20);

/// RTT from which hybrid NACK/FEC sends the full FEC factor: the end of
/// libwebrtc's RTT adjustment table `VCMNackFecTable` (nack_fec_tables.h: "a
/// sigmoid function, ranging from 0 to 100", 100 entries indexed by the RTT
/// in ms; older copies call the bound `kHighRttNackMs` (100)).
pub const HIGH_RTT_NACK: Duration = Duration::from_millis(100);

/// Centre of our logistic RTT adjustment: 37 ms, where libwebrtc's
/// `VCMNackFecTable` sigmoid crosses one half (rtcc fit to its shape; the
/// table itself is not used).
pub const RTT_ADJUSTMENT_CENTER_MS: f64 = 37.0;

/// Scale of our logistic RTT adjustment: 5.5 ms, so that the adjustment is
/// ≈ 0.12 at 26 ms and ≈ 0.88 at 48 ms, within 2 percentage points of
/// `VCMNackFecTable` at those RTTs (rtcc fit; see `docs/algorithms/fec.md`).
pub const RTT_ADJUSTMENT_SCALE_MS: f64 = 5.5;

/// The loss-based protection factor `f(p)` shared by both WebRTC policies:
/// `0` if `p < 1/255` ([`MIN_PROTECTED_LOSS`]), else
/// `min(1, max(0.25, κ·p))` ([`MAX_PROTECTION_FACTOR`],
/// [`MIN_PROTECTION_FACTOR`], `κ` = `loss_gain`, default
/// [`DEFAULT_LOSS_GAIN`]). Non-decreasing in `p`.
pub fn loss_based_factor(loss: Probability, loss_gain: f64) -> f64 {
    let p = loss.get();
    if p < MIN_PROTECTED_LOSS {
        return 0.0;
    }
    let gain = if loss_gain.is_finite() && loss_gain > 0.0 {
        loss_gain
    } else {
        0.0
    };
    (gain * p).clamp(MIN_PROTECTION_FACTOR, MAX_PROTECTION_FACTOR)
}

/// Hybrid NACK/FEC's RTT adjustment `a(rtt)` in `[0, 1]` (Holmer et al.
/// ICIP 2013; libwebrtc `VCMNackFecMethod::ProtectionFactor`, three modes):
///
/// - `rtt < 20 ms` ([`LOW_RTT_NACK`]): 0, NACK only — a retransmission
///   arrives about as fast as the frame's other packets;
/// - `20 ms ≤ rtt < 100 ms` ([`HIGH_RTT_NACK`]): hybrid, the logistic
///   `1 / (1 + e^(−(rtt − 37 ms) / 5.5 ms))`
///   ([`RTT_ADJUSTMENT_CENTER_MS`], [`RTT_ADJUSTMENT_SCALE_MS`]): FEC grows
///   as NACK becomes too slow;
/// - `rtt ≥ 100 ms`: 1, full FEC.
///
/// Non-decreasing in `rtt`.
pub fn nack_rtt_adjustment(rtt: Duration) -> f64 {
    if rtt < LOW_RTT_NACK {
        return 0.0;
    }
    if rtt >= HIGH_RTT_NACK {
        return 1.0;
    }
    let x = (rtt.as_millis_f64() - RTT_ADJUSTMENT_CENTER_MS) / RTT_ADJUSTMENT_SCALE_MS;
    1.0 / (1.0 + (-x).exp())
}
