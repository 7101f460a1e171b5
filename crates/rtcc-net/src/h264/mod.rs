//! Real H.264 video payloads: an Annex-B byte stream (ITU-T H.264 Annex B)
//! cut into access units, packetised per RFC 6184 (packetization-mode 1,
//! non-interleaved), and replayed as an `rtcc_core` encoder so the sessions
//! send exactly the RTP payloads a stock receiver (ffmpeg, GStreamer) decodes.
//!
//! - [`annexb`]: start-code parser and access-unit grouping (H.264 §7.4.1.2.3, Annex B).
//! - [`payload`]: RFC 6184 single NAL unit (§5.6), STAP-A (§5.7.1) and FU-A
//!   (§5.8) packets, via the webrtc-rs `rtp` crate, and the inverse for tests.
//! - [`source`]: [`source::H264FileSource`], an `EncoderModel` replaying a file.

pub mod annexb;
pub mod payload;
pub mod source;

use std::path::PathBuf;

/// NAL unit types used here (ITU-T H.264 Table 7-1).
pub mod nal_type {
    /// Coded slice of a non-IDR picture.
    pub const SLICE: u8 = 1;
    /// Coded slice of an IDR picture (a key frame).
    pub const IDR: u8 = 5;
    /// Supplemental enhancement information.
    pub const SEI: u8 = 6;
    /// Sequence parameter set.
    pub const SPS: u8 = 7;
    /// Picture parameter set.
    pub const PPS: u8 = 8;
    /// Access unit delimiter.
    pub const AUD: u8 = 9;
    /// Filler data.
    pub const FILLER: u8 = 12;
}

/// `nal_unit_type`: the low five bits of the NAL unit header (H.264 §7.3.1).
pub fn nal_unit_type(nal: &[u8]) -> Option<u8> {
    nal.first().map(|b| b & 0x1f)
}

/// Why an H.264 stream could not be read or packetised.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum H264Error {
    /// The file could not be read.
    #[error("cannot read H.264 file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No access unit with a coded slice could be salvaged.
    #[error("{path}: no complete H.264 access unit (Annex-B stream truncated or not H.264) at byte {offset}: {reason}")]
    NoAccessUnit {
        /// The file (or the name given for an in-memory stream).
        path: PathBuf,
        /// Byte offset where parsing gave up.
        offset: usize,
        /// What was missing.
        reason: &'static str,
    },
    /// A NAL unit cannot be carried with this MTU.
    #[error(
        "NAL unit of type {nal_type} ({len} B) cannot be packetised with a {mtu} B MTU: {reason}"
    )]
    Packetise {
        /// `nal_unit_type`.
        nal_type: u8,
        /// Its length in bytes.
        len: usize,
        /// The payload MTU.
        mtu: usize,
        /// Why.
        reason: &'static str,
    },
    /// A configuration value is out of range.
    #[error("invalid H.264 source {field} = {value}: {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// The value given, as text.
        value: String,
        /// What is required.
        reason: &'static str,
    },
}
