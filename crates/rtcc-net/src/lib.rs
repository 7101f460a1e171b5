//! rtcc-net: the real transport (DESIGN §5).
//!
//! The very same `rtcc-core` sender and receiver sessions the simulator drives,
//! carried over real UDP sockets as RTP (RFC 3550) with the transport-wide
//! sequence-number header extension, and RTCP feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01, or RFC 8888).
//! A link emulator replays the simulator's link models on a real clock.
//!
//! Malformed or unexpected datagrams are dropped and counted, never a panic.
pub mod clock;
pub mod emulate;
pub mod h264;
pub mod sdp;
pub mod wire;
