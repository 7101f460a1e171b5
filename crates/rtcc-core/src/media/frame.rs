//! Video frames as produced by an encoder model.

use crate::time::Instant;
use crate::units::{Bitrate, Bytes};

/// Frame type, for decode dependencies and size modelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FrameType {
    /// An intra-coded key frame (I-frame): decodable on its own.
    Key,
    /// A predicted frame (P-frame): needs the previous frame.
    #[default]
    Delta,
}

impl FrameType {
    /// `"I"` or `"P"`, as written in `frames.csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameType::Key => "I",
            FrameType::Delta => "P",
        }
    }
}

/// What a congestion controller is told when a frame is handed to the transport
/// (`CongestionController::on_frame`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameInfo {
    /// Frame number, increasing from 0.
    pub frame_id: u64,
    /// When the frame was captured (and, in the models, encoded).
    pub capture_time: Instant,
    /// Encoded size (payload, no headers).
    pub size: Bytes,
    /// Key or delta frame.
    pub frame_type: FrameType,
    /// Number of packets the frame was cut into.
    pub num_packets: u32,
    /// The target bitrate the encoder was following when it produced this frame.
    pub target_bitrate: Bitrate,
}
