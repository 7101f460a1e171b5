//! Packetizer: cuts an encoded frame into RTP-sized packets.
//!
//! A frame of `S` payload bytes becomes `n = ⌈S / mtu⌉` packets of nearly equal
//! size (the first `S mod n` packets carry one byte more), as libwebrtc's
//! `RtpPacketizer::SplitAboutEqually` does, so that no tiny tail packet distorts
//! per-packet measurements. Each packet's on-wire size adds a fixed header
//! overhead.

use crate::media::frame::FrameType;
use crate::time::Instant;
use crate::units::Bytes;

/// Default payload MTU: 1200 B, the common WebRTC choice (libwebrtc
/// `kDefaultMaxPacketSize` is 1200 bytes of IP packet in media_constants.cc; we
/// take it as payload to keep frames of the papers' sizes in round packets).
pub const DEFAULT_MTU: Bytes = Bytes::new(1200);

/// Default per-packet header overhead on the wire: IPv4 20 + UDP 8 + RTP 12 +
/// transport-wide sequence header extension 8 (4 B extension header + 1 B id/len
/// + 2 B sequence, padded to 4) = 48 bytes (RFC 3550 §5.1, RFC 8285 §4.2,
/// draft-holmer-rmcat-transport-wide-cc-extensions-01 §2).
pub const DEFAULT_HEADER_OVERHEAD: Bytes = Bytes::new(48);

/// One media packet as it leaves the packetizer (no sequence number yet: the
/// session assigns transport-wide sequence numbers at send time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MediaPacket {
    /// Frame the packet belongs to.
    pub frame_id: u64,
    /// Key or delta frame.
    pub frame_type: FrameType,
    /// Capture time of the frame (sender clock).
    pub capture_time: Instant,
    /// Index of this packet within its frame, from 0.
    pub index: u32,
    /// Number of packets of the frame.
    pub count: u32,
    /// True for the frame's last packet (the RTP marker bit).
    pub last_in_frame: bool,
    /// Payload bytes.
    pub payload: Bytes,
    /// Bytes on the wire (payload + headers).
    pub wire_size: Bytes,
}

/// Packetizer settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packetizer {
    /// Largest payload per packet.
    pub mtu: Bytes,
    /// Header bytes added to each packet on the wire.
    pub header_overhead: Bytes,
}

impl Default for Packetizer {
    fn default() -> Self {
        Packetizer { mtu: DEFAULT_MTU, header_overhead: DEFAULT_HEADER_OVERHEAD }
    }
}

impl Packetizer {
    /// Number of packets a frame of `size` payload bytes becomes (at least one).
    pub fn packet_count(&self, size: Bytes) -> u32 {
        let mtu = self.mtu.get().max(1);
        size.get().div_ceil(mtu).max(1) as u32
    }

    /// Cut a frame into packets, calling `emit` for each in order. Allocates nothing.
    pub fn packetize(
        &self,
        frame_id: u64,
        frame_type: FrameType,
        capture_time: Instant,
        size: Bytes,
        mut emit: impl FnMut(MediaPacket),
    ) {
        let n = self.packet_count(size);
        let base = size.get() / n as u64;
        let extra = size.get() % n as u64;
        for i in 0..n {
            let payload = Bytes::new(base + u64::from((i as u64) < extra));
            emit(MediaPacket {
                frame_id,
                frame_type,
                capture_time,
                index: i,
                count: n,
                last_in_frame: i + 1 == n,
                payload,
                wire_size: payload + self.header_overhead,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(size: u64) -> Vec<MediaPacket> {
        let mut v = Vec::new();
        Packetizer::default().packetize(7, FrameType::Delta, Instant::ZERO, Bytes::new(size), |p| v.push(p));
        v
    }

    #[test]
    fn splits_about_equally() {
        let v = cut(2500);
        assert_eq!(v.len(), 3);
        let sizes: Vec<u64> = v.iter().map(|p| p.payload.get()).collect();
        assert_eq!(sizes, vec![834, 833, 833]);
        assert_eq!(v.iter().map(|p| p.payload).sum::<Bytes>(), Bytes::new(2500));
        assert!(v[2].last_in_frame && !v[0].last_in_frame);
        assert_eq!(v[1].wire_size, Bytes::new(833 + 48));
        assert!(v.iter().all(|p| p.count == 3));
    }

    #[test]
    fn exact_multiples_and_tiny_frames() {
        assert_eq!(cut(2400).len(), 2);
        assert_eq!(cut(1200).len(), 1);
        let tiny = cut(0);
        assert_eq!(tiny.len(), 1);
        assert!(tiny[0].last_in_frame);
    }
}
