//! The multipath media session of Delay-BBR multipath
//! (`shared/papers/delay-bbr-multipath.txt` §3.1, Figure 1, and §4.2, last
//! paragraph), sans-IO, driven like the single-path
//! [`SenderSession`](crate::session::sender::SenderSession) /
//! [`ReceiverSession`](crate::session::receiver::ReceiverSession).
//!
//! Sender ([`MultipathSender`]): one encoder; its frames are cut into
//! segments by the packetizer (the segment header of §3.1 is
//! [`MediaPacket`](crate::media::packetizer::MediaPacket)'s `frame_id`,
//! `index`, `count`); a [`PathScheduler`](crate::multipath::PathScheduler)
//! places every segment on one path's sender buffer; each path has its own
//! congestion controller, pacer and transport sequence numbers, and its own
//! feedback. The encoder target is the sum of the paths' targets, capped
//! ("rate control module", §3.1). Sent segments stay in a session-level
//! buffer for 500 ms; a segment a path reports lost is retransmitted at once
//! on the path with the least transfer delay (eq. 14) while it is still
//! there (§4.2).
//!
//! Receiver ([`MultipathReceiver`]): per-path feedback (each report goes back
//! on its own path), and a session-level receive buffer that reassembles
//! frames from segments of any path (§3.1, §4.2): a key frame waits for
//! repair; an incomplete delta frame is dropped after `max_wait` (500 ms).
//!
//! Call protocol (as the crate doc): inputs `on_*` / `handle_*` with `now`
//! first, never going backwards; after each input drain
//! [`MultipathSender::poll_transmit`] until `None`, then ask
//! [`MultipathSender::poll_timeout`]. On the receiver, after each input poll
//! [`MultipathReceiver::poll_feedback`] for every path, drain
//! [`MultipathReceiver::poll_frame`], then ask
//! [`MultipathReceiver::poll_timeout`].
//!
//! See docs/algorithms/multipath.md, section "Session", for every
//! interpretation of what the paper leaves open.

mod buffer;
pub mod receiver;
pub mod sender;

pub use buffer::SegmentArrival;
pub use receiver::{
    MultipathReceiver, MultipathReceiverConfig, MultipathReceiverStats, ReceiverPathStats,
    DEFAULT_MAX_WAIT,
};
pub use sender::{
    MpTransmit, MultipathSender, MultipathSenderConfig, MultipathSenderStats, SenderPathStats,
    DEFAULT_LOSS_REPORT_SLACK, DEFAULT_MAX_TOTAL_BITRATE, DEFAULT_RETRANSMIT_BUFFER,
};

#[cfg(test)]
mod tests;
