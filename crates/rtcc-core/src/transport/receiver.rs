//! The receiver (player side) of the QUIC-like reliable live-streaming
//! transport: records packet numbers for ACK frames (RFC 9000 §13.2),
//! decides when to acknowledge, reassembles the stream in order, delivering
//! every datum exactly once, and hands completed frames to [`Playback`].
//!
//! **When to acknowledge** (RFC 9000 §13.2.1, §13.2.2): every packet here is
//! ack-eliciting. An ACK is sent after every
//! [`ack_eliciting_threshold`](TransportReceiverConfig::ack_eliciting_threshold)
//! packets (§13.2.2: "SHOULD send an ACK frame after receiving at least two
//! ack-eliciting packets"), at the latest `max_ack_delay` after the first
//! unacknowledged one (§13.2.1), and at once when a packet arrives out of
//! order: below the largest received, or above it with a gap (§13.2.1: "an
//! endpoint SHOULD generate and send an ACK frame without delay ... when the
//! received packet has a packet number less than another ack-eliciting packet
//! that has been received, or ... greater than the highest-numbered
//! ack-eliciting packet that has been received and there are missing packets
//! between that packet and this packet").
//!
//! **Range memory.** Only the newest [`AckTracker::DEFAULT_MAX_RANGES`]
//! ranges fit in an ACK frame; the tracker forgets packet numbers below the
//! oldest range it reports once more than `4 ×` that many ranges are held
//! (§13.2.4 lets a receiver bound its state). A late packet below that floor
//! is dropped as a duplicate; its datum is retransmitted by the sender, which
//! never saw it acknowledged.
//!
//! **FEC.** With [`fec`](TransportReceiverConfig::fec) set, every packet
//! number received and every repair go to an XOR [`FecDecoder`]; a packet it
//! rebuilds is reported by [`TransportReceiver::poll_recovered`], and the
//! driver hands its content back with [`TransportReceiver::on_recovered`]
//! (the simulator looks it up in the sender's log: XOR recovery reproduces
//! the packet's bytes exactly). A recovered packet is acknowledged like a
//! received one, so the sender does not retransmit it.
//!
//! **Exactly once.** Data are delivered to the application in id order
//! (the stream's byte order); a datum that arrives again (a replica, a
//! retransmission of a datum whose earlier copy was late) is counted and
//! dropped. [`TransportReceiver::delivered_digest`] is an order-sensitive
//! digest of what was delivered, which the tests compare with the sender's.

use std::collections::VecDeque;

use crate::media::packetizer::MediaPacket;
use crate::recovery::autorec::DataId;
use crate::recovery::fec::{FecConfig, FecDecoder, FecDecoderStats};
use crate::time::{Duration, Instant};
use crate::transport::ack::{AckFrame, AckTracker, PacketNumber, Received};
use crate::transport::playback::{Playback, PlaybackConfig, PlaybackStats};
use crate::transport::rtt::DEFAULT_MAX_ACK_DELAY;
use crate::transport::wire::Payload;
use crate::units::Bytes;

/// Configuration of a [`TransportReceiver`].
#[derive(Debug, Clone, PartialEq)]
pub struct TransportReceiverConfig {
    /// Longest an ACK is held back (RFC 9000 §18.2 default 25 ms).
    pub max_ack_delay: Duration,
    /// ACK after this many ack-eliciting packets (RFC 9000 §13.2.2: 2).
    pub ack_eliciting_threshold: u32,
    /// Ranges per ACK frame.
    pub max_ack_ranges: usize,
    /// Frame rendering.
    pub playback: PlaybackConfig,
    /// Decode XOR repairs (the sender runs FEC); its window is the decoder's.
    pub fec: Option<FecConfig>,
}

impl Default for TransportReceiverConfig {
    fn default() -> Self {
        TransportReceiverConfig {
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            ack_eliciting_threshold: 2,
            max_ack_ranges: AckTracker::DEFAULT_MAX_RANGES,
            playback: PlaybackConfig::default(),
            fec: None,
        }
    }
}

/// Counters of a [`TransportReceiver`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TransportReceiverStats {
    /// Packets received.
    pub packets_received: u64,
    /// Packets whose number had been seen (or was below the tracked floor): dropped.
    pub packets_duplicate: u64,
    /// Data packets whose datum had already arrived (replicas, late copies): dropped.
    pub data_duplicate: u64,
    /// Data delivered to the application, in order.
    pub data_delivered: u64,
    /// Payload bytes delivered (the goodput's numerator).
    pub payload_delivered: u64,
    /// ACK frames built.
    pub acks_sent: u64,
    /// Packets rebuilt from FEC repairs and delivered.
    pub fec_recovered: u64,
    /// Malformed payloads dropped (a datum id that contradicts its frame
    /// description can't be checked here; reserved for the real transport).
    pub malformed: u64,
}

/// The receiver (module doc).
#[derive(Debug)]
pub struct TransportReceiver {
    config: TransportReceiverConfig,
    tracker: AckTracker,
    /// Ack-eliciting packets received since the last ACK.
    unacked: u32,
    /// When the pending ACK is due (max_ack_delay after the first unacked packet).
    ack_due: Option<Instant>,
    /// An immediate ACK is wanted.
    ack_now: bool,
    /// Next datum to deliver.
    next_deliver: DataId,
    /// Data `next_deliver ..` that arrived ahead of a gap.
    ahead: VecDeque<Option<MediaPacket>>,
    playback: Playback,
    fec: Option<FecDecoder>,
    stats: TransportReceiverStats,
    digest: u64,
    /// Last time the range memory was trimmed (ranges count).
    last_now: Instant,
}

/// FNV-1a step over a 64-bit word.
fn fnv(h: u64, x: u64) -> u64 {
    // FNV-1a 64-bit prime (Fowler–Noll–Vo, IETF draft-eastlake-fnv).
    (h ^ x).wrapping_mul(0x0000_0100_0000_01b3)
}

/// FNV-1a 64-bit offset basis.
pub const DIGEST_INIT: u64 = 0xcbf2_9ce4_8422_2325;

/// The digest contribution of delivering datum `id` carrying `m`; the sender
/// side of a test folds the same over the data it created.
pub fn digest_step(h: u64, id: DataId, m: &MediaPacket) -> u64 {
    let h = fnv(h, id);
    let h = fnv(h, m.frame_id);
    let h = fnv(h, u64::from(m.index));
    fnv(h, m.payload.get())
}

impl TransportReceiver {
    /// An empty receiver. Fails only on an invalid FEC configuration.
    pub fn new(
        config: TransportReceiverConfig,
    ) -> Result<Self, crate::recovery::fec::FecConfigError> {
        let fec = match &config.fec {
            Some(c) => Some(FecDecoder::new(Instant::ZERO, c)?),
            None => None,
        };
        Ok(TransportReceiver {
            fec,
            tracker: AckTracker::new(config.max_ack_ranges),
            playback: Playback::new(config.playback),
            config,
            unacked: 0,
            ack_due: None,
            ack_now: false,
            next_deliver: 0,
            ahead: VecDeque::new(),
            stats: TransportReceiverStats::default(),
            digest: DIGEST_INIT,
            last_now: Instant::ZERO,
        })
    }

    /// FEC decoder counters, when FEC runs.
    pub fn fec_stats(&self) -> Option<FecDecoderStats> {
        self.fec.as_ref().map(FecDecoder::stats)
    }

    /// A packet number the FEC decoder rebuilt; hand its content to
    /// [`on_recovered`](Self::on_recovered).
    pub fn poll_recovered(&mut self) -> Option<PacketNumber> {
        self.fec.as_mut()?.poll_recovered()
    }

    /// The content of a packet rebuilt by FEC: it counts as received
    /// (acknowledged) and its datum is delivered. Ignored if the packet
    /// arrived meanwhile.
    pub fn on_recovered(&mut self, now: Instant, pn: PacketNumber, payload: &Payload) {
        if self.tracker.on_packet_received(now, pn) == Received::Duplicate {
            return;
        }
        self.stats.fec_recovered += 1;
        self.unacked += 1;
        if self.ack_due.is_none() {
            self.ack_due = Some(now + self.config.max_ack_delay);
        }
        if let Payload::Data { id, media, .. } = *payload {
            self.on_data(now, id, media);
        }
    }

    /// Counters.
    pub fn stats(&self) -> &TransportReceiverStats {
        &self.stats
    }
    /// Frame metrics.
    pub fn playback(&self) -> &PlaybackStats {
        self.playback.stats()
    }
    /// Data delivered in order so far (the id of the next one to deliver).
    pub fn delivered(&self) -> DataId {
        self.next_deliver
    }
    /// Order-sensitive digest of the delivered data ([`digest_step`] folded
    /// from [`DIGEST_INIT`]).
    pub fn delivered_digest(&self) -> u64 {
        self.digest
    }

    /// A packet arrived at `now`. Returns `false` if it was dropped as a
    /// duplicate packet number.
    pub fn on_datagram(&mut self, now: Instant, pn: PacketNumber, payload: &Payload) -> bool {
        self.last_now = self.last_now.max(now);
        self.stats.packets_received += 1;
        let largest = self.tracker.largest_received();
        if self.tracker.on_packet_received(now, pn) == Received::Duplicate {
            self.stats.packets_duplicate += 1;
            return false;
        }
        // §13.2.1: out of order → acknowledge at once.
        if largest.is_some_and(|l| pn < l || pn > l + 1) {
            self.ack_now = true;
        }
        self.unacked += 1;
        if self.unacked >= self.config.ack_eliciting_threshold {
            self.ack_now = true;
        }
        if self.ack_due.is_none() {
            self.ack_due = Some(now + self.config.max_ack_delay);
        }
        if let Some(f) = &mut self.fec {
            f.on_packet_received(now, pn);
            if let Payload::Repair(r) = payload {
                f.on_repair_received(now, r);
            }
        }
        if let Payload::Data { id, media, .. } = *payload {
            self.on_data(now, id, media);
        }
        true
    }

    fn on_data(&mut self, now: Instant, id: DataId, media: MediaPacket) {
        let Some(offset) = id.checked_sub(self.next_deliver) else {
            self.stats.data_duplicate += 1;
            return;
        };
        let Ok(offset) = usize::try_from(offset) else {
            self.stats.malformed += 1;
            return;
        };
        if offset >= self.ahead.len() {
            self.ahead.resize(offset + 1, None);
        }
        if self.ahead[offset].is_some() {
            self.stats.data_duplicate += 1;
            return;
        }
        self.ahead[offset] = Some(media);
        while let Some(Some(m)) = self.ahead.front().copied() {
            self.ahead.pop_front();
            self.digest = digest_step(self.digest, self.next_deliver, &m);
            self.next_deliver += 1;
            self.stats.data_delivered += 1;
            self.stats.payload_delivered += m.payload.get();
            if m.last_in_frame {
                self.playback.on_frame_complete(now, m.capture_time);
            }
        }
    }

    /// The ACK frame to send now, if one is due. Allocates the frame;
    /// [`poll_ack_into`](Self::poll_ack_into) refills one instead.
    pub fn poll_ack(&mut self, now: Instant) -> Option<AckFrame> {
        if !self.ack_is_due(now) {
            return None;
        }
        let frame = self.tracker.build_ack(now)?;
        self.on_ack_built(&frame);
        Some(frame)
    }

    /// [`poll_ack`](Self::poll_ack) into an existing frame, reusing its
    /// storage (no allocation once it has held a full frame): returns `true`
    /// and refills `frame` if an ACK is due, else returns `false` and leaves
    /// `frame` unchanged.
    pub fn poll_ack_into(&mut self, now: Instant, frame: &mut AckFrame) -> bool {
        if !self.ack_is_due(now) || !self.tracker.build_ack_into(now, frame) {
            return false;
        }
        self.on_ack_built(frame);
        true
    }

    fn ack_is_due(&self, now: Instant) -> bool {
        let due = self.ack_now || self.ack_due.is_some_and(|t| t <= now);
        due && self.unacked > 0
    }

    /// Bookkeeping once `frame` is built for sending.
    fn on_ack_built(&mut self, frame: &AckFrame) {
        self.unacked = 0;
        self.ack_due = None;
        self.ack_now = false;
        self.stats.acks_sent += 1;
        // Bound the range memory (module doc).
        if self.tracker.range_count() > 4 * self.config.max_ack_ranges {
            if let Some(oldest) = frame.ranges().last() {
                self.tracker.forget_below(oldest.smallest);
            }
        }
    }

    /// When the pending ACK is due, if one is pending.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.unacked == 0 {
            return None;
        }
        if self.ack_now {
            return Some(self.last_now);
        }
        self.ack_due
    }

    /// Payload bytes delivered (goodput numerator).
    pub fn payload_delivered(&self) -> Bytes {
        Bytes::new(self.stats.payload_delivered)
    }
}
