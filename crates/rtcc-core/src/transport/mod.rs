//! The transport-independent foundation of a QUIC-like reliable transport,
//! sans-IO: RTT estimation (RFC 9002 §5), ACK frames with ranges and the
//! receiver's ACK tracker (RFC 9000 §19.3, §13.2), and sender-side loss
//! detection with the probe timeout (RFC 9002 §6 and Appendix A).
//!
//! Packet numbers are never reused: a retransmission is a new packet carrying
//! the same data, which the caller identifies by the opaque `token` it gives
//! [`LossDetector::on_packet_sent`]. ACK frames carry ranges and an ACK Delay,
//! no per-packet arrival times.
//!
//! - [`rtt`]: [`RttEstimator`] (`latest_rtt`, `min_rtt`, `smoothed_rtt`, `rttvar`).
//! - [`ack`]: [`AckFrame`], [`AckRange`], [`AckTracker`].
//! - [`loss`]: [`LossDetector`]: packet and time thresholds, the
//!   loss-detection timer, PTO with exponential backoff, bytes in flight and
//!   the loss-detection time of every lost packet (AutoRec's `T_unit`).
//!
//! - [`sender`]: [`TransportSender`], the live-streaming sender: data
//!   chunks, ARQ with newest-copy tracking, the congestion controller behind
//!   a pacer, AutoRec ([`RecoveryScheme`]), the off-mode signal.
//! - [`receiver`]: [`TransportReceiver`]: ACK policy, in-order exactly-once
//!   delivery, frame completion.
//! - [`playback`]: deadline misses and freezes of the rendered frames.
//! - [`metrics`]: recovery latency and deterioration (AutoRec §III-C, §VII).
//! - [`wire`]: what a packet carries, and wire sizes.
//!
//! ## How a sender drives it
//!
//! ```text
//! send packet pn             -> det.on_packet_sent(now, pn, size, ack_eliciting, token)
//! ACK frame arrives          -> out = det.on_ack_received(now, &frame)?
//!                               out.newly_acked -> cc + data layer; out.lost -> cc + retransmit
//! now >= det.poll_timeout()  -> match det.on_timeout(now) {
//!                                 Lost(l) => retransmit l's data in new packets,
//!                                 Probe { count } => send `count` ack-eliciting packets,
//!                                 NotDue => {} }
//! ```
//!
//! And a receiver: `tracker.on_packet_received(now, pn)` per packet (drop it
//! on [`Received::Duplicate`]), `tracker.build_ack(now)` when sending an ACK.

pub mod ack;
pub mod loss;
pub mod metrics;
pub mod playback;
pub mod receiver;
pub mod rtt;
pub mod sender;
pub mod wire;

#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod tests;

pub use ack::{AckFrame, AckFrameError, AckRange, AckTracker, PacketNumber, Received};
pub use loss::{
    AckError, AckOutcome, LossDetector, LossDetectorConfig, LossReason, LossStats, LostPacket,
    TimeoutKind, TimeoutOutcome, TransportPacket, MAX_PTO_BACKOFF_EXPONENT, PACKET_THRESHOLD,
};
pub use metrics::RecoveryMetrics;
pub use playback::{Playback, PlaybackConfig, PlaybackStats};
pub use receiver::{TransportReceiver, TransportReceiverConfig, TransportReceiverStats};
pub use rtt::{RttEstimator, DEFAULT_MAX_ACK_DELAY, GRANULARITY, INITIAL_RTT};
pub use sender::{
    AutoRecSettings, RecoveryScheme, TransportConfigError, TransportSender, TransportSenderConfig,
    TransportSenderStats,
};
pub use wire::{CopyKind, Datagram, Payload};
