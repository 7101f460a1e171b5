//! # rtcc-core: sans-IO real-time video transport algorithms
//!
//! Congestion controllers, pacing, media models and the sender/receiver
//! sessions that tie them together. Nothing here does I/O, reads a clock,
//! spawns a thread or seeds a random generator from entropy: the driver (the
//! simulator in `rtcc-sim`, or real sockets in `rtcc-net`) owns all of that and
//! calls in.
//!
//! ## Call protocol
//!
//! Every component follows the same shape (the quinn-proto pattern):
//!
//! - **Inputs** are `on_*` / `handle_*` methods. Their first argument is always
//!   `now: Instant`, and `now` never goes backwards across calls on one object.
//! - **Outputs** are `poll_*` methods. After any input, the driver drains them
//!   until they return `None`, in this order: `poll_transmit` (packets to send
//!   now), then `poll_event`-style outputs, then `poll_timeout`.
//! - **Timers**: `poll_timeout()` returns the earliest instant at which the
//!   component wants to be called again (`on_timeout(now)`), or `None`. It is
//!   never in the past relative to the last `now` given. The driver must call
//!   `on_timeout` no later than that instant has been reached; calling it early
//!   is harmless.
//! - **Getters** (`target_bitrate`, `send_budget`, `estimate`, ...) are pure
//!   queries and may be called at any time. So is `trace(sink)`: a controller
//!   or recovery scheme reports its own state variables, by name, to a
//!   [`TraceSink`] (what `cc_trace.csv` is made of), without allocating.
//!
//! Units are types ([`Instant`], [`Duration`], [`Bitrate`], [`Bytes`]); there is
//! no bare `f64` that means kbps in one place and bps in another.
//!
//! ## Where things are
//!
//! - [`time`], [`units`]: the unit types and their parsing from strings.
//! - [`packet`]: [`SentPacket`], [`FeedbackReport`].
//! - [`cc`]: the [`CongestionController`] trait and the built-in controllers.
//! - [`estimate`]: estimators shared by several algorithms (windowed filters).
//! - [`pacer`]: the pacer (burst allowance, frame-burst mode).
//! - [`media`]: frames, the encoder models (parametric, ladder replay, layered
//!   SVC with its layer adapter), the packetizer, the player, the PSNR model
//!   of delivered layered video.
//! - [`feedback`]: the receiver's feedback builder and the NACK message.
//! - [`recovery`]: the [`recovery::LossRecovery`] trait, NACK-based retransmission and
//!   AutoRec's redundancy adapter and reinjection queue.
//! - [`multipath`]: the [`multipath::PathScheduler`] trait and the multipath packet schedulers.
//! - [`session`]: the media sender and receiver sessions that tie it all together
//!   (single-path and multipath).
//! - [`transport`]: the QUIC-like reliable transport (sender and receiver, RTT
//!   estimator, ACK frames, RFC 9002 loss detection) that live flows and
//!   AutoRec run on.
//! - `summary` (with the `serde` feature): the typed `summary.json` both
//!   drivers write.

pub mod cc;
pub mod collections;
pub mod estimate;
pub mod feedback;
pub mod media;
pub mod multipath;
pub mod pacer;
pub mod packet;
pub mod recovery;
pub mod rng;
pub mod session;
#[cfg(feature = "serde")]
pub mod summary;
pub mod time;
pub mod transport;
pub mod units;

pub use cc::{CcConfig, CongestionController, Controller, Estimate, SendBudget, TraceSink};
pub use media::frame::{FrameInfo, FrameType};
pub use packet::{FeedbackReport, PacketKind, PacketResult, SentPacket, SeqNo};
pub use time::{Duration, Instant};
pub use units::{Bitrate, Bytes, ParseError, Probability};
