//! The sender's half: groups protected packets and queues XOR repairs.

use std::collections::VecDeque;

use super::{FecConfig, FecConfigError, FecRepair, MAX_GROUP_SPAN};
use crate::time::{Duration, Instant};
use crate::units::{Bytes, Probability};

/// Number of repairs for a group of `n` protected packets at protection
/// factor `factor`: `round(n · factor)`, at least 1 when `factor > 0` and
/// `n ≥ 1`, at most `n`.
///
/// This is libwebrtc's `ForwardErrorCorrection::NumFecPackets` (rounded
/// product "in Q0 with an unsigned round"; "Generate at least one FEC packet
/// if we need protection"; `RTC_DCHECK_LE(num_fec_packets,
/// num_media_packets)`), with the factor in `f64` instead of Q8. The minimum
/// of one repair is what makes FEC expensive for small frames: a 7-packet
/// frame at `factor` = 0.05 still gets one repair (14 %).
pub fn repair_count(n: usize, factor: f64) -> usize {
    if n == 0 || factor.is_nan() || factor <= 0.0 {
        return 0;
    }
    // 1e-9 absorbs binary rounding of products such as 10 × 0.15 = 1.4999…;
    // halves round up like libwebrtc's `+ (1 << 7)` before the shift.
    let m = (n as f64 * factor.min(1.0) + 1e-9).round() as usize;
    m.clamp(1, n)
}

/// FEC header bytes of a repair covering a span of `span` packet numbers:
/// the RFC 8627 §4.2.2.1 FlexFEC header in flexible-mask mode, 8 bytes of
/// recovery fields (P/X/CC/M/PT recovery, length recovery, TS recovery) plus
/// the 2-byte SN base plus a k-bit-extended mask of 2, 6 or 14 bytes covering
/// 15, 46 or 109 packets — 12, 16 or 24 bytes (the mask sizes are
/// libwebrtc's `kFlexfecPacketMaskSizes` {2, 6, 14},
/// flexfec_header_reader_writer.cc). The repair's own transport header is
/// already counted: the XOR of whole packets is as large as the largest one.
pub fn flexfec_header_size(span: u64) -> Bytes {
    match span {
        0..=15 => Bytes::new(12),
        16..=46 => Bytes::new(16),
        _ => Bytes::new(24),
    }
}

/// Counters of an [`FecEncoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FecEncoderStats {
    /// Packets reported with [`FecEncoder::on_packet_sent`] and protected.
    pub packets_protected: u64,
    /// Reports ignored because the packet number did not increase.
    pub out_of_order: u64,
    /// Groups closed (including those that got no repair at factor 0).
    pub groups: u64,
    /// Groups closed because the next packet number would not fit the
    /// 64-packet-number span (or the span was full), not at an end of frame.
    pub groups_closed_full: u64,
    /// Repairs generated (queued).
    pub repairs_generated: u64,
    /// Repairs handed out by [`FecEncoder::poll_repair`].
    pub repairs_sent: u64,
    /// Wire bytes of the repairs handed out.
    pub repair_bytes_sent: Bytes,
}

/// The open group: members as offsets from `first`, with their wire sizes.
#[derive(Debug, Clone)]
struct Group {
    first: u64,
    len: usize,
    offsets: [u8; MAX_GROUP_SPAN as usize],
    sizes: [Bytes; MAX_GROUP_SPAN as usize],
    /// The protection factor in force when the group opened (libwebrtc's
    /// `UlpfecGenerator` applies new parameters only when its media packet
    /// list is empty, i.e. at the start of a group).
    factor: f64,
}

/// The sender's half of XOR FEC.
///
/// Inputs: [`set_conditions`](Self::set_conditions),
/// [`on_packet_sent`](Self::on_packet_sent),
/// [`close_group`](Self::close_group). Output:
/// [`poll_repair`](Self::poll_repair), to drain whenever the transport may
/// send (repairs go before new data). No timers.
#[derive(Debug, Clone)]
pub struct FecEncoder {
    config: FecConfig,
    factor: f64,
    loss: Probability,
    rtt: Duration,
    group: Group,
    last_pn: Option<u64>,
    repairs: VecDeque<FecRepair>,
    stats: FecEncoderStats,
}

impl FecEncoder {
    /// An encoder with no loss measured yet (protection factor of loss 0 and
    /// RTT 0: zero for the WebRTC policies, the constant for `Fixed`).
    pub fn new(_now: Instant, config: FecConfig) -> Result<Self, FecConfigError> {
        config.validate()?;
        let factor = config.protection_factor(Probability::ZERO, Duration::ZERO);
        Ok(FecEncoder {
            config,
            factor,
            loss: Probability::ZERO,
            rtt: Duration::ZERO,
            group: Group {
                first: 0,
                len: 0,
                offsets: [0; MAX_GROUP_SPAN as usize],
                sizes: [Bytes::ZERO; MAX_GROUP_SPAN as usize],
                factor,
            },
            last_pn: None,
            repairs: VecDeque::new(),
            stats: FecEncoderStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &FecConfig {
        &self.config
    }

    /// The loss rate and RTT the sender measured changed: recompute the
    /// protection factor. It applies from the next group (the open one keeps
    /// the factor it started with). `loss` should already be filtered (the
    /// transport's loss estimate); it is used as given.
    pub fn set_conditions(&mut self, _now: Instant, loss: Probability, rtt: Duration) {
        self.loss = loss;
        self.rtt = rtt;
        self.factor = self.config.protection_factor(loss, rtt);
    }

    /// The current protection factor (repairs per protected packet).
    pub fn protection_factor(&self) -> f64 {
        self.factor
    }

    /// The loss rate and RTT last given to [`set_conditions`](Self::set_conditions).
    pub fn conditions(&self) -> (Probability, Duration) {
        (self.loss, self.rtt)
    }

    /// A protected packet was sent: packet number `pn` (must increase from
    /// call to call), `wire_size` bytes, `end_of_frame` if it carries the
    /// last bytes of a video frame. Called for data packets (first
    /// transmissions and retransmissions), not for repairs or ACK-only
    /// packets. May close the group and queue repairs.
    pub fn on_packet_sent(&mut self, now: Instant, pn: u64, wire_size: Bytes, end_of_frame: bool) {
        if self.last_pn.is_some_and(|last| pn <= last) {
            self.stats.out_of_order += 1;
            return;
        }
        self.last_pn = Some(pn);
        if self.group.len > 0 && pn - self.group.first >= MAX_GROUP_SPAN {
            self.stats.groups_closed_full += 1;
            self.close_group(now);
        }
        if self.group.len == 0 {
            self.group.first = pn;
            self.group.factor = self.factor;
        }
        let offset = pn - self.group.first;
        let i = self.group.len;
        // `offset < MAX_GROUP_SPAN` = 64 was ensured just above, so it fits a u8.
        self.group.offsets[i] = offset as u8;
        self.group.sizes[i] = wire_size;
        self.group.len += 1;
        self.stats.packets_protected += 1;
        if end_of_frame {
            self.close_group(now);
        } else if offset == MAX_GROUP_SPAN - 1 {
            self.stats.groups_closed_full += 1;
            self.close_group(now);
        }
    }

    /// Close the open group now (if it has members) and queue its repairs,
    /// e.g. when the transport knows no more protected data follows soon.
    /// [`on_packet_sent`](Self::on_packet_sent) does this by itself at an end
    /// of frame and when the group is full.
    pub fn close_group(&mut self, _now: Instant) {
        let n = self.group.len;
        if n == 0 {
            return;
        }
        self.stats.groups += 1;
        let m = repair_count(n, self.group.factor);
        for j in 0..m {
            let mut mask = 0u64;
            let mut largest = Bytes::ZERO;
            // Interleaved parity: repair j covers members j, j + m, j + 2m, …
            for i in (j..n).step_by(m) {
                mask |= 1u64 << self.group.offsets[i];
                largest = largest.max(self.group.sizes[i]);
            }
            let shift = mask.trailing_zeros();
            let span = u64::from(u64::BITS - (mask >> shift).leading_zeros());
            let size = largest + flexfec_header_size(span);
            // Every subset is non-empty (j < m ≤ n) and lies within the
            // group's span of at most 64 increasing packet numbers, so `new`
            // cannot fail; an impossible failure drops that repair only.
            if let Some(r) = FecRepair::new(self.group.first, mask, size) {
                self.repairs.push_back(r);
                self.stats.repairs_generated += 1;
            }
        }
        self.group.len = 0;
    }

    /// Number of members of the open group.
    pub fn open_group_len(&self) -> usize {
        self.group.len
    }

    /// True if a repair is waiting to be sent.
    pub fn has_repair(&self) -> bool {
        !self.repairs.is_empty()
    }

    /// Number of repairs waiting to be sent.
    pub fn queued_repairs(&self) -> usize {
        self.repairs.len()
    }

    /// The next repair to send, if any (oldest first). The transport sends it
    /// with priority over new data, in a packet of [`FecRepair::size`] bytes,
    /// and does not report it to [`on_packet_sent`](Self::on_packet_sent).
    pub fn poll_repair(&mut self, _now: Instant) -> Option<FecRepair> {
        let r = self.repairs.pop_front()?;
        self.stats.repairs_sent += 1;
        self.stats.repair_bytes_sent += r.size();
        Some(r)
    }

    /// Counters.
    pub fn stats(&self) -> FecEncoderStats {
        self.stats
    }
}
