//! Packetizer: cuts an encoded frame into RTP-sized packets.
//!
//! A frame of `S` payload bytes becomes `n = ⌈S / mtu⌉` packets of nearly equal
//! size (the first `S mod n` packets carry one byte more), as libwebrtc's
//! `RtpPacketizer::SplitAboutEqually` does, so that no tiny tail packet distorts
//! per-packet measurements. Each packet's on-wire size adds a fixed header
//! overhead.
//!
//! An encoder whose bitstream carries its own packetisation (H.264 NAL units
//! packetised per RFC 6184 §5.6–5.8) gives the payload sizes instead
//! (`EncoderModel::packet_payloads`), and [`Packetizer::packetize_sizes`] emits
//! exactly those packets.
//!
//! A layered (SVC) encoder gives the sizes of its layers' sub-frames
//! (`EncoderModel::layer_sizes`), and [`Packetizer::packetize_layers`] cuts
//! each layer on its own, base layer first, as an H.264 SVC sender puts each
//! layer's NAL unit in its own packets (RFC 6190's single-session
//! transmission, one NAL unit per layer and picture; a NAL unit larger than
//! the MTU is fragmented, RFC 6184 §5.8). Index, count and the marker bit stay frame-wide, so the transport
//! sees a layered frame as one packet train like any other; each packet
//! carries its layer and, on the layer's last packet, the end-of-layer bit
//! (the FU header's E bit, RFC 6184 §5.8) that lets the receiver tell where a
//! layer ends.
//!
//! A layered sender following a [`LayerPlan`](crate::media::svc::LayerPlan)
//! also sends a repair stream for its protected layers
//! ([`Packetizer::packetize_layers_with_repair`]): after the frame's data
//! packets, one repair packet per data packet of layers 1..=`protected`, a
//! copy of it (same size, frame, index, layer and end-of-layer bit) flagged
//! [`MediaPacket::repair`]. Over a single packet an XOR parity packet is the
//! packet itself, so the copy is the rate-1/2 code of the plan: the receiver
//! has the data packet when either arrives. Repairs go after every data
//! packet of the frame rather than beside their own, so that one burst loss
//! is less likely to take both.

use crate::media::frame::FrameType;
use crate::time::Instant;
use crate::units::Bytes;

/// Default payload MTU: 1200 B, the common WebRTC choice (libwebrtc
/// `kDefaultMaxPacketSize` is 1200 bytes of IP packet in media_constants.cc; we
/// take it as payload to keep frames of the papers' sizes in round packets).
pub const DEFAULT_MTU: Bytes = Bytes::new(1200);

/// Default per-packet header overhead on the wire: IPv4 20 + UDP 8 + RTP 12 +
/// transport-wide sequence header extension 8 (a 4 B extension header, then a
/// 1 B id/len and the 2 B sequence, padded to 4) = 48 bytes (RFC 3550 §5.1,
/// RFC 8285 §4.2, draft-holmer-rmcat-transport-wide-cc-extensions-01 §2).
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
    /// SVC layer carried, 1 = the base layer; 0 for a stream without layers.
    pub layer: u8,
    /// True on the last packet of its layer's sub-frame (RFC 6184 §5.8's E
    /// bit); always false for a stream without layers.
    pub layer_end: bool,
    /// A repair packet (module doc): a copy of the data packet of the same
    /// frame and `index`, every other field as that packet's. The session
    /// sends it as [`PacketKind::Fec`](crate::packet::PacketKind::Fec),
    /// without a media sequence number of its own. False for data.
    pub repair: bool,
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
        Packetizer {
            mtu: DEFAULT_MTU,
            header_overhead: DEFAULT_HEADER_OVERHEAD,
        }
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
                layer: 0,
                layer_end: false,
                repair: false,
            });
        }
    }

    /// Emit one packet per entry of `payloads` (the sizes an encoder with its
    /// own packetisation chose, e.g. RFC 6184 NAL units), in order, calling
    /// `emit` for each. Index, count, `last_in_frame` and `wire_size` are set as
    /// in [`Packetizer::packetize`]; sizes above `mtu` are kept as given (the
    /// encoder's packetisation is authoritative). An empty list emits nothing.
    /// Allocates nothing.
    pub fn packetize_sizes(
        &self,
        frame_id: u64,
        frame_type: FrameType,
        capture_time: Instant,
        payloads: &[Bytes],
        mut emit: impl FnMut(MediaPacket),
    ) {
        // A frame of more than u32::MAX packets cannot be described by
        // `MediaPacket::count`; saturate (4 G packets of one frame do not occur).
        let n = u32::try_from(payloads.len()).unwrap_or(u32::MAX);
        for (i, &payload) in (0..n).zip(payloads) {
            emit(MediaPacket {
                frame_id,
                frame_type,
                capture_time,
                index: i,
                count: n,
                last_in_frame: i + 1 == n,
                payload,
                wire_size: payload + self.header_overhead,
                layer: 0,
                layer_end: false,
                repair: false,
            });
        }
    }

    /// Number of packets a layered frame becomes: each layer's sub-frame is
    /// cut on its own ([`Packetizer::packet_count`] packets each).
    pub fn layered_packet_count(&self, layer_sizes: &[Bytes]) -> u32 {
        layer_sizes
            .iter()
            .fold(0u32, |n, &s| n.saturating_add(self.packet_count(s)))
    }

    /// Cut a layered (SVC) frame: `layer_sizes[k]` is the payload of layer
    /// `k + 1` (the base layer first). Each layer is split about equally as
    /// in [`Packetizer::packetize`], its packets tagged with the layer and the
    /// last one with `layer_end`; `index`, `count` and `last_in_frame` run
    /// over the whole frame (module doc). Layers above 255 are not
    /// describable by `MediaPacket::layer` and are not sent. Allocates
    /// nothing.
    pub fn packetize_layers(
        &self,
        frame_id: u64,
        frame_type: FrameType,
        capture_time: Instant,
        layer_sizes: &[Bytes],
        emit: impl FnMut(MediaPacket),
    ) {
        self.packetize_layers_with_repair(frame_id, frame_type, capture_time, layer_sizes, 0, emit);
    }

    /// [`Packetizer::packetize_layers`], then the repair stream of layers
    /// 1..=`protected` (module doc): each of their data packets again, in
    /// the same order, with [`MediaPacket::repair`] set. `protected` is
    /// clamped to the layers given; `count` and `last_in_frame` are the data
    /// packets', so a repair tells the receiver what its data packet would
    /// have. Allocates nothing.
    pub fn packetize_layers_with_repair(
        &self,
        frame_id: u64,
        frame_type: FrameType,
        capture_time: Instant,
        layer_sizes: &[Bytes],
        protected: usize,
        mut emit: impl FnMut(MediaPacket),
    ) {
        let layer_sizes = &layer_sizes[..layer_sizes.len().min(usize::from(u8::MAX))];
        let count = self.layered_packet_count(layer_sizes);
        let frame = LayeredFrame {
            frame_id,
            frame_type,
            capture_time,
            count,
        };
        self.cut_layers(&frame, layer_sizes, false, &mut emit);
        let protected = &layer_sizes[..protected.min(layer_sizes.len())];
        self.cut_layers(&frame, protected, true, &mut emit);
    }

    /// Emits the packets of `layer_sizes` (layers 1, 2, … of `frame`), as
    /// data or as their repair copies.
    fn cut_layers(
        &self,
        frame: &LayeredFrame,
        layer_sizes: &[Bytes],
        repair: bool,
        emit: &mut impl FnMut(MediaPacket),
    ) {
        let mut index = 0u32;
        for (layer, &size) in (1..=u8::MAX).zip(layer_sizes) {
            let n = self.packet_count(size);
            let base = size.get() / n as u64;
            let extra = size.get() % n as u64;
            for i in 0..n {
                let payload = Bytes::new(base + u64::from((i as u64) < extra));
                emit(MediaPacket {
                    frame_id: frame.frame_id,
                    frame_type: frame.frame_type,
                    capture_time: frame.capture_time,
                    index,
                    count: frame.count,
                    last_in_frame: index + 1 == frame.count,
                    payload,
                    wire_size: payload + self.header_overhead,
                    layer,
                    layer_end: i + 1 == n,
                    repair,
                });
                index += 1;
            }
        }
    }
}

/// What every packet of a layered frame carries alike.
struct LayeredFrame {
    frame_id: u64,
    frame_type: FrameType,
    capture_time: Instant,
    /// Data packets of the whole frame.
    count: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(size: u64) -> Vec<MediaPacket> {
        let mut v = Vec::new();
        Packetizer::default().packetize(
            7,
            FrameType::Delta,
            Instant::ZERO,
            Bytes::new(size),
            |p| v.push(p),
        );
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

    #[test]
    fn packetize_sizes_keeps_the_given_sizes() {
        let p = Packetizer::default();
        let sizes = [
            Bytes::new(30),
            Bytes::new(1200),
            Bytes::new(1500),
            Bytes::new(7),
        ];
        let mut v = Vec::new();
        p.packetize_sizes(9, FrameType::Key, Instant::from_millis(5), &sizes, |m| {
            v.push(m)
        });
        assert_eq!(v.len(), 4);
        let got: Vec<Bytes> = v.iter().map(|m| m.payload).collect();
        assert_eq!(got, sizes);
        for (i, m) in v.iter().enumerate() {
            assert_eq!(m.index, i as u32);
            assert_eq!(m.count, 4);
            assert_eq!(m.last_in_frame, i == 3);
            assert_eq!(m.wire_size, m.payload + DEFAULT_HEADER_OVERHEAD);
            assert_eq!(m.frame_id, 9);
            assert_eq!(m.frame_type, FrameType::Key);
            assert_eq!(m.capture_time, Instant::from_millis(5));
        }
    }

    #[test]
    fn layers_are_cut_one_by_one_with_frame_wide_indices() {
        let p = Packetizer::default();
        let sizes = [Bytes::new(417), Bytes::new(2500), Bytes::new(1)];
        let mut v = Vec::new();
        p.packetize_layers(3, FrameType::Delta, Instant::ZERO, &sizes, |m| v.push(m));
        // 1 + 3 + 1 packets; the middle layer split 834/833/833.
        assert_eq!(p.layered_packet_count(&sizes), 5);
        let got: Vec<(u32, u8, u64, bool, bool)> = v
            .iter()
            .map(|m| {
                (
                    m.index,
                    m.layer,
                    m.payload.get(),
                    m.layer_end,
                    m.last_in_frame,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 1, 417, true, false),
                (1, 2, 834, false, false),
                (2, 2, 833, false, false),
                (3, 2, 833, true, false),
                (4, 3, 1, true, true),
            ]
        );
        assert!(v.iter().all(|m| m.count == 5 && m.frame_id == 3));
        assert_eq!(v[1].wire_size, Bytes::new(834 + 48));
        // Frames without layers are tagged layer 0, never with an end of layer.
        let mut plain = Vec::new();
        p.packetize(1, FrameType::Key, Instant::ZERO, Bytes::new(3000), |m| {
            plain.push(m)
        });
        assert!(plain
            .iter()
            .all(|m| m.layer == 0 && !m.layer_end && !m.repair));
    }

    #[test]
    fn repair_copies_the_protected_layers_after_the_data() {
        let p = Packetizer::default();
        let sizes = [Bytes::new(417), Bytes::new(2500), Bytes::new(1)];
        let mut v = Vec::new();
        p.packetize_layers_with_repair(3, FrameType::Key, Instant::ZERO, &sizes, 2, |m| v.push(m));
        // 5 data packets, then the 1 + 3 of layers 1 and 2 again.
        assert_eq!(v.len(), 9);
        let (data, repair) = v.split_at(5);
        let mut plain = Vec::new();
        p.packetize_layers(3, FrameType::Key, Instant::ZERO, &sizes, |m| plain.push(m));
        assert_eq!(data, plain.as_slice(), "the data packets are unchanged");
        assert!(data.iter().all(|m| !m.repair) && repair.iter().all(|m| m.repair));
        for (r, d) in repair.iter().zip(data) {
            // A copy: as large, same frame, index, layer and end bit.
            assert_eq!(
                MediaPacket {
                    repair: false,
                    ..*r
                },
                *d
            );
        }
        // Clamped to the layers there are; none without protection.
        let mut n = 0;
        p.packetize_layers_with_repair(3, FrameType::Key, Instant::ZERO, &sizes, 9, |_| n += 1);
        assert_eq!(n, 10);
        n = 0;
        p.packetize_layers_with_repair(3, FrameType::Key, Instant::ZERO, &sizes, 0, |_| n += 1);
        assert_eq!(n, 5);
        // A frame of no layer has no packet.
        p.packetize_layers_with_repair(3, FrameType::Key, Instant::ZERO, &[], 2, |_| n += 1);
        assert_eq!(n, 5);
    }

    #[test]
    fn packetize_sizes_single_and_empty() {
        let p = Packetizer::default();
        let mut v = Vec::new();
        p.packetize_sizes(1, FrameType::Delta, Instant::ZERO, &[Bytes::new(10)], |m| {
            v.push(m)
        });
        assert_eq!(v.len(), 1);
        assert!(v[0].last_in_frame && v[0].index == 0 && v[0].count == 1);
        let mut none = 0;
        p.packetize_sizes(2, FrameType::Delta, Instant::ZERO, &[], |_| none += 1);
        assert_eq!(none, 0);
    }
}
