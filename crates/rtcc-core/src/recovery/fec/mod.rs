//! XOR forward error correction for the QUIC-like reliable transport: the two
//! WebRTC FEC baselines of AutoRec's evaluation (`papers/autorec.txt` §VII-A,
//! "AutoRec vs. FEC": WebRTC₁₄ and WebRTC_NOW), expressed over transport
//! packet numbers like the QUIC FEC proposals (Michel, De Coninck,
//! Bonaventure, "QUIC-FEC", IFIP Networking 2019, the paper's ref. \[6\]).
//!
//! The transport is reliable: it retransmits every lost packet anyway. FEC
//! adds *repair* packets so that a loss can be repaired at the receiver one
//! loss-detection time (or more) before the retransmission would arrive.
//!
//! - [`FecEncoder`] (sender): every FEC-protected packet the transport sends
//!   is reported with [`FecEncoder::on_packet_sent`]. Packets accumulate into
//!   a *group* that spans at most [`MAX_GROUP_SPAN`] packet numbers and closes
//!   at the end of a video frame (libwebrtc generates FEC per frame:
//!   `UlpfecGenerator::AddRtpPacketAndGenerateFec` waits for the RTP marker
//!   bit) or when full. On close the encoder queues
//!   `m = `[`repair_count`]`(n, f)` XOR repairs for the `n` members, with the
//!   protection factor `f` of the [`FecPolicy`]; repair `j` covers the members
//!   whose index `i ≡ j (mod m)` (interleaved single parity).
//! - [`FecRepair`]: what a repair covers (first packet number + 64-bit mask)
//!   and its wire size. Payload bytes are never materialised.
//! - [`FecDecoder`] (receiver): told of every received protected packet and
//!   every received repair, in any order; when exactly one covered packet is
//!   missing it recovers that packet number ([`FecDecoder::poll_recovered`]).
//! - [`policy`]: the protection factor of WebRTC₁₄ (hybrid NACK/FEC, Holmer,
//!   Shemer, Paniconi, "Handling packet loss in WebRTC", ICIP 2013, and
//!   libwebrtc `VCMNackFecMethod`) and WebRTC_NOW (libwebrtc `VCMFecMethod`
//!   without the low-RTT reduction), each as our own closed-form formula.
//!
//! ## How a transport drives it
//!
//! ```text
//! sender                                            receiver
//! loss / RTT estimate changed:                      protected packet pn arrived:
//!   enc.set_conditions(now, loss, srtt)               dec.on_packet_received(now, pn)
//! data packet pn sent (1st tx or retransmission):   repair arrived:
//!   enc.on_packet_sent(now, pn, size, end_of_frame)   dec.on_repair_received(now, &repair)
//! can send a packet:                                after each of those:
//!   if let Some(r) = enc.poll_repair(now) { send r }  while let Some(pn) = dec.poll_recovered() {
//!   else { send new data }                                treat pn as received }
//! ```
//!
//! Repair packets themselves and ACK-only packets are not reported to the
//! encoder; the packet numbers they take simply do not belong to any group
//! (the group is the list of reported packet numbers, encoded as a bitmap).
//! Reported packet numbers must increase; one that does not is ignored and
//! counted ([`FecEncoderStats::out_of_order`]).
//!
//! Design note: `docs/algorithms/fec.md`.

mod decoder;
mod encoder;
pub mod policy;

#[cfg(test)]
mod tests;

pub use decoder::{FecDecoder, FecDecoderStats};
pub use encoder::{flexfec_header_size, repair_count, FecEncoder, FecEncoderStats};
pub use policy::FecPolicy;

use crate::units::Bytes;

/// Largest span of packet numbers one group (and so one repair) may cover:
/// the repair header's membership bitmap has 64 bits. A group closes early
/// when the next protected packet number would not fit.
pub const MAX_GROUP_SPAN: u64 = 64;

/// Default receiver window in packet numbers: repairs whose last covered
/// packet number is more than this below the largest packet number seen are
/// dropped (rtcc choice: at the paper's 4 Mbps with ~1200-byte packets this
/// is about 10 s of packets, far beyond any useful recovery).
pub const DEFAULT_DECODER_WINDOW: u64 = 4096;

/// One XOR repair packet: which protected packet numbers it covers and its
/// size on the wire.
///
/// Covers `first + k` for every bit `k` set in `mask`; bit 0 is always set, so
/// `first` is itself covered (the "SN base" of RFC 8627 §4.2.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FecRepair {
    first: u64,
    mask: u64,
    size: Bytes,
}

impl FecRepair {
    /// A repair covering `first + k` for each bit `k` of `mask`, `size` bytes
    /// on the wire. The mask is normalised so that its lowest set bit is bit
    /// 0 (`first` moves up accordingly). `None` if `mask` is zero or a
    /// covered packet number would overflow `u64`.
    pub fn new(first: u64, mask: u64, size: Bytes) -> Option<Self> {
        if mask == 0 {
            return None;
        }
        let shift = mask.trailing_zeros();
        let first = first.checked_add(u64::from(shift))?;
        let mask = mask >> shift;
        let span = u64::from(u64::BITS - mask.leading_zeros());
        first.checked_add(span - 1)?;
        Some(FecRepair { first, mask, size })
    }
    /// The lowest covered packet number.
    pub fn first(&self) -> u64 {
        self.first
    }
    /// The highest covered packet number.
    pub fn last(&self) -> u64 {
        self.first + self.span() - 1
    }
    /// Number of packet numbers from [`first`](Self::first) to
    /// [`last`](Self::last) inclusive (1..=64).
    pub fn span(&self) -> u64 {
        u64::from(u64::BITS - self.mask.leading_zeros())
    }
    /// The membership bitmap: bit `k` set ⇔ `first + k` is covered.
    pub fn mask(&self) -> u64 {
        self.mask
    }
    /// Number of covered packets.
    pub fn len(&self) -> usize {
        self.mask.count_ones() as usize
    }
    /// Always false (a repair covers at least one packet); for clippy's
    /// `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.mask == 0
    }
    /// Size of the repair packet on the wire.
    pub fn size(&self) -> Bytes {
        self.size
    }
    /// True if packet number `pn` is one of the covered packets.
    pub fn covers(&self, pn: u64) -> bool {
        pn >= self.first
            && pn - self.first < MAX_GROUP_SPAN
            && self.mask >> (pn - self.first) & 1 == 1
    }
    /// The covered packet numbers, increasing.
    pub fn members(&self) -> impl Iterator<Item = u64> {
        let first = self.first;
        let mut rest = self.mask;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let k = rest.trailing_zeros();
            rest &= rest - 1;
            Some(first + u64::from(k))
        })
    }
}

/// Configuration of FEC (both ends).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FecConfig {
    /// How much redundancy to add, from the loss rate and the RTT.
    pub policy: FecPolicy,
    /// `κ` of the loss-based protection factor `min(1, max(0.25, κ·p))` of
    /// [`FecPolicy::WebRtc14`] and [`FecPolicy::WebRtcNow`] (see
    /// [`policy::loss_based_factor`]). Default
    /// [`policy::DEFAULT_LOSS_GAIN`] = 4.
    pub loss_gain: f64,
    /// Receiver window in packet numbers (default
    /// [`DEFAULT_DECODER_WINDOW`] = 4096).
    pub decoder_window: u64,
}

impl Default for FecConfig {
    fn default() -> Self {
        FecConfig {
            policy: FecPolicy::WebRtcNow,
            loss_gain: policy::DEFAULT_LOSS_GAIN,
            decoder_window: DEFAULT_DECODER_WINDOW,
        }
    }
}

impl FecConfig {
    /// The configuration with `policy` and the other fields at their defaults.
    pub fn with_policy(policy: FecPolicy) -> Self {
        FecConfig {
            policy,
            ..FecConfig::default()
        }
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), FecConfigError> {
        if let FecPolicy::Fixed(f) = self.policy {
            if !(f.is_finite() && (0.0..=1.0).contains(&f)) {
                return Err(FecConfigError::OutOfRange {
                    key: "policy.fixed",
                    value: f,
                    expected: "a protection factor within [0, 1] (repairs per protected packet)",
                });
            }
        }
        if !(self.loss_gain.is_finite() && self.loss_gain >= 0.0) {
            return Err(FecConfigError::OutOfRange {
                key: "loss_gain",
                value: self.loss_gain,
                expected: "a finite factor >= 0",
            });
        }
        if self.decoder_window < MAX_GROUP_SPAN || self.decoder_window > 1 << 20 {
            return Err(FecConfigError::OutOfRange {
                key: "decoder_window",
                value: self.decoder_window as f64,
                expected: "between 64 and 1048576 packet numbers",
            });
        }
        Ok(())
    }

    /// The protection factor (repairs per protected packet, in `[0, 1]`) of
    /// the configured policy at `loss` and `rtt`.
    pub fn protection_factor(
        &self,
        loss: crate::units::Probability,
        rtt: crate::time::Duration,
    ) -> f64 {
        self.policy.protection_factor(loss, rtt, self.loss_gain)
    }
}

/// An [`FecConfig`] value that cannot work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FecConfigError {
    /// A parameter is outside its valid range.
    #[error("fec: {key} = {value} is out of range ({expected})")]
    OutOfRange {
        /// Field name.
        key: &'static str,
        /// Given value.
        value: f64,
        /// The valid range, in words.
        expected: &'static str,
    },
}
