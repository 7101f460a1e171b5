//! Frames of a standard RTP H.264 sender: one that sends neither rtcc's
//! `urn:rtcc:frame-info` extension nor abs-capture-time (GStreamer's
//! `rtph264pay`, ffmpeg, a browser). [`PlainFrames`] rebuilds the
//! [`PacketMeta`] the player needs from what RFC 3550 and RFC 6184 give
//! every receiver:
//!
//! - **Frame boundaries** (RFC 6184 §5.1): the packets of one access unit
//!   share an RTP timestamp, and the marker bit is set on its last packet.
//! - **Frame ids**, which the player wants consecutive so that a missing
//!   frame breaks the decode chain: frames are numbered in timestamp order,
//!   and a timestamp step of k frame intervals (the smallest step seen
//!   between frames, which is the frame interval once two consecutive frames
//!   have arrived) counts k − 1 frames that never arrived. A sender with a
//!   variable frame rate therefore shows "missing" frames where it only
//!   paused.
//! - **Packet index in the frame**: the RTP sequence number less the frame's
//!   first one. The first is the previous frame's marker packet + 1 when that
//!   packet has arrived, else the lowest sequence number of the frame seen
//!   when its first packet arrived; a packet before it is refused
//!   ([`PlainOutcome::BeforeFrameStart`]). If a frame's first packets are lost
//!   *and* so is the previous frame's last one, the frame can look complete
//!   without them; the decoder, not the player, would notice.
//! - **Key frames** (H.264 Table 7-1): a packet carrying an IDR slice or an SPS
//!   (single NAL unit, the first NAL of a STAP-A, RFC 6184 §5.7.1, or an FU-A
//!   fragment's type, §5.8) marks its frame as key.
//! - **Capture time**: not sent, so it is taken as the arrival of the stream's
//!   first packet plus the frame's RTP timestamp offset from that packet's (90
//!   kHz clock, RFC 6184 §5.1). The frame delay the player computes from it is
//!   therefore the delay *relative to the first packet's*: queueing and
//!   jitter that build up during the run, not the absolute one-way delay
//!   (docs/net.md, "Standard senders").
//!
//! Memory is bounded: the last [`FRAMES_KEPT`] frames are remembered; a packet
//! of an older frame is [`PlainOutcome::TooOld`].

use std::collections::VecDeque;

use rtcc_core::media::frame::FrameType;
use rtcc_core::media::player::PacketMeta;
use rtcc_core::time::{Duration, Instant};
use rtcc_core::units::Bytes;

use crate::h264::{nal_type, nal_unit_type};
use crate::wire::{SeqUnwrapper, Unwrapper};

/// Frames remembered (about 2 s at 30 fps).
pub const FRAMES_KEPT: usize = 64;
/// RTP clock rate of H.264 (RFC 6184 §8.2.1).
pub const H264_CLOCK_RATE: u64 = 90_000;
/// RFC 6184 §5.4 aggregation and fragmentation packet types.
const STAP_A: u8 = 24;
const FU_A: u8 = 28;

/// Why a packet got no [`PacketMeta`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainOutcome {
    /// The packet's frame is older than the frames remembered.
    TooOld,
    /// The packet's sequence number is before its frame's first packet.
    BeforeFrameStart,
    /// The payload is not an RFC 6184 packet (empty, forbidden bit set, or a
    /// NAL unit type RFC 6184 does not carry in packetization-mode 1).
    NotH264,
}

/// One frame as [`PlainFrames`] knows it.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Unwrapped RTP timestamp.
    ts: u64,
    id: u64,
    /// Unwrapped sequence number of the frame's first packet.
    first_seq: u64,
    /// Unwrapped sequence number of the marker packet, once it arrived.
    last_seq: Option<u64>,
    key: bool,
}

/// Rebuilds frame metadata for packets without rtcc's extensions (module doc).
#[derive(Debug, Clone)]
pub struct PlainFrames {
    ts: Unwrapper<32>,
    seqs: SeqUnwrapper,
    /// First packet: (unwrapped timestamp, arrival).
    origin: Option<(u64, Instant)>,
    /// Smallest positive timestamp step between consecutive frames.
    interval: Option<u64>,
    /// Frames in timestamp order, the newest last.
    frames: VecDeque<Frame>,
}

impl Default for PlainFrames {
    fn default() -> Self {
        Self::new()
    }
}

impl PlainFrames {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        PlainFrames {
            ts: Unwrapper::new(),
            seqs: SeqUnwrapper::new(),
            origin: None,
            interval: None,
            frames: VecDeque::with_capacity(FRAMES_KEPT),
        }
    }

    /// The metadata of a media packet (RTP `sequence`, `timestamp`,
    /// `marker` and H.264 `payload`) that arrived at `now`.
    pub fn on_packet(
        &mut self,
        now: Instant,
        sequence: u16,
        timestamp: u32,
        marker: bool,
        payload: &[u8],
    ) -> Result<PacketMeta, PlainOutcome> {
        let key = key_nal(payload)?;
        let ts = self.ts.unwrap(u64::from(timestamp));
        let seq = self.seqs.unwrap(u64::from(sequence));
        let (origin_ts, origin_at) = *self.origin.get_or_insert((ts, now));
        let at = self.frame_at(ts, seq)?;
        let frame = &mut self.frames[at];
        if seq < frame.first_seq {
            return Err(PlainOutcome::BeforeFrameStart);
        }
        frame.key |= key;
        if marker {
            frame.last_seq = Some(seq);
        }
        // A frame's first sequence number is fixed when the frame is first
        // seen: indices already given must not move.
        let (id, first_seq, key) = (frame.id, frame.first_seq, frame.key);
        let offset = ts.saturating_sub(origin_ts);
        let media_time = Duration::from_nanos(offset * 1_000_000_000 / H264_CLOCK_RATE);
        Ok(PacketMeta {
            frame_id: id,
            frame_type: if key {
                FrameType::Key
            } else {
                FrameType::Delta
            },
            capture_time: origin_at + media_time,
            index: u32::try_from(seq - first_seq).unwrap_or(u32::MAX),
            last_in_frame: marker,
            payload: Bytes::new(payload.len() as u64),
            // An RFC 6184 stream has no layers.
            layer: 0,
            layer_end: false,
            repair: false,
        })
    }

    /// The position in `frames` of the frame with timestamp `ts`, added if
    /// new (`seq` is the packet that revealed it).
    fn frame_at(&mut self, ts: u64, seq: u64) -> Result<usize, PlainOutcome> {
        if let Some(i) = self.frames.iter().rposition(|f| f.ts == ts) {
            return Ok(i);
        }
        let Some(newest) = self.frames.back().copied() else {
            self.frames.push_back(Frame {
                ts,
                id: 0,
                first_seq: seq,
                last_seq: None,
                key: false,
            });
            return Ok(0);
        };
        if ts < newest.ts {
            // A frame older than the newest that was never seen: only if it
            // fits between two remembered frames.
            let after = self.frames.iter().position(|f| f.ts > ts).unwrap_or(0);
            if after == 0 {
                return Err(PlainOutcome::TooOld);
            }
            let before = self.frames[after - 1];
            let next = self.frames[after];
            let id = before.id + self.steps(ts - before.ts);
            if id >= next.id {
                return Err(PlainOutcome::TooOld);
            }
            let first_seq = match before.last_seq {
                Some(l) if id == before.id + 1 => l + 1,
                _ => seq,
            };
            self.frames.insert(
                after,
                Frame {
                    ts,
                    id,
                    first_seq,
                    last_seq: None,
                    key: false,
                },
            );
            return Ok(after);
        }
        let step = ts - newest.ts;
        if self.interval.is_none_or(|i| step < i) {
            self.interval = Some(step);
        }
        let id = newest.id + self.steps(step);
        let first_seq = match newest.last_seq {
            Some(l) if id == newest.id + 1 => l + 1,
            _ => seq,
        };
        if self.frames.len() == FRAMES_KEPT {
            self.frames.pop_front();
        }
        self.frames.push_back(Frame {
            ts,
            id,
            first_seq,
            last_seq: None,
            key: false,
        });
        Ok(self.frames.len() - 1)
    }

    /// How many frame intervals a timestamp step of `step` spans (at least 1).
    fn steps(&self, step: u64) -> u64 {
        match self.interval {
            Some(i) if i > 0 => ((step + i / 2) / i).max(1),
            _ => 1,
        }
    }
}

/// Whether `payload` is an RFC 6184 packet rtcc can frame (a single NAL unit,
/// STAP-A or FU-A, forbidden bit clear).
pub fn is_rfc6184(payload: &[u8]) -> bool {
    key_nal(payload).is_ok()
}

/// Whether an RFC 6184 payload carries a key frame's NAL (IDR slice or SPS);
/// [`PlainOutcome::NotH264`] when it is not an RFC 6184 packet.
fn key_nal(payload: &[u8]) -> Result<bool, PlainOutcome> {
    let Some(&header) = payload.first() else {
        return Err(PlainOutcome::NotH264);
    };
    if header & 0x80 != 0 {
        // forbidden_zero_bit (H.264 §7.4.1).
        return Err(PlainOutcome::NotH264);
    }
    let is_key = |t: u8| t == nal_type::IDR || t == nal_type::SPS;
    match nal_unit_type(payload) {
        Some(t @ 1..=23) => Ok(is_key(t)),
        Some(STAP_A) => {
            // First aggregated NAL: 16-bit size, then its header (§5.7.1).
            let first = payload.get(3).ok_or(PlainOutcome::NotH264)?;
            Ok(is_key(first & 0x1f))
        }
        Some(FU_A) => {
            // FU header: S, E, R bits and the fragmented NAL's type (§5.8).
            let fu = payload.get(1).ok_or(PlainOutcome::NotH264)?;
            Ok(is_key(fu & 0x1f))
        }
        _ => Err(PlainOutcome::NotH264),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDR_FU_START: [u8; 3] = [0x7c, 0x85, 0xAA];
    const IDR_FU_END: [u8; 3] = [0x7c, 0x45, 0xAA];
    const SLICE: [u8; 2] = [0x41, 0x9A];
    const STAP_SPS: [u8; 6] = [0x78, 0x00, 0x02, 0x67, 0x42, 0x00];

    fn ms(x: u64) -> Instant {
        Instant::from_millis(x)
    }

    #[test]
    fn frames_from_timestamps_and_markers_with_a_lost_frame() {
        let mut p = PlainFrames::new();
        // Frame 0 (key): STAP-A with the SPS, then an IDR in two FU-A parts.
        let a = p
            .on_packet(ms(100), 65_534, 4_294_964_296, false, &STAP_SPS)
            .unwrap();
        let b = p
            .on_packet(ms(101), 65_535, 4_294_964_296, false, &IDR_FU_START)
            .unwrap();
        let c = p
            .on_packet(ms(102), 0, 4_294_964_296, true, &IDR_FU_END)
            .unwrap();
        for (i, m) in [a, b, c].iter().enumerate() {
            assert_eq!((m.frame_id, m.index), (0, i as u32));
            assert_eq!(m.frame_type, FrameType::Key);
            assert_eq!(m.capture_time, ms(100));
        }
        assert!(c.last_in_frame && !b.last_in_frame);
        // Frame 1, one packet, 3000 ticks later (the timestamp wraps).
        let d = p.on_packet(ms(140), 1, 0, true, &SLICE).unwrap();
        assert_eq!(
            (d.frame_id, d.index, d.frame_type),
            (1, 0, FrameType::Delta)
        );
        assert_eq!(
            d.capture_time,
            ms(100) + Duration::from_millis(33) + Duration::from_nanos(333_333)
        );
        // Frame 2 lost whole (seqs 2-3); frame 3 arrives with a gap of two
        // intervals: id 3, and its first packet (seq 4) is guessed as index 0.
        let e = p.on_packet(ms(210), 4, 6_000, false, &SLICE).unwrap();
        assert_eq!((e.frame_id, e.index), (3, 0));
        // Frame 4 starts after frame 3's marker: its first packet (seq 6) is
        // lost, and seq 7 is index 1.
        p.on_packet(ms(211), 5, 6_000, true, &SLICE).unwrap();
        let f = p.on_packet(ms(250), 7, 9_000, true, &SLICE).unwrap();
        assert_eq!((f.frame_id, f.index), (4, 1));
        // A packet before its frame's start is refused, a non-H.264 one too.
        assert_eq!(
            p.on_packet(ms(251), 3, 6_000, false, &SLICE),
            Err(PlainOutcome::BeforeFrameStart)
        );
        assert_eq!(
            p.on_packet(ms(252), 8, 14_000, false, &[]),
            Err(PlainOutcome::NotH264)
        );
        assert_eq!(
            p.on_packet(ms(252), 8, 14_000, false, &[0x9c, 0]),
            Err(PlainOutcome::NotH264)
        );
        assert_eq!(
            p.on_packet(ms(252), 8, 14_000, false, &[0x1e, 0]),
            Err(PlainOutcome::NotH264)
        );
    }

    #[test]
    fn a_late_packet_of_an_unseen_frame_fits_between_and_old_ones_are_refused() {
        let mut p = PlainFrames::new();
        p.on_packet(ms(0), 10, 0, true, &SLICE).unwrap();
        p.on_packet(ms(33), 11, 3_000, true, &SLICE).unwrap();
        // Frame 3 before frame 2 (reordered): frame 2 then fits between.
        let late3 = p.on_packet(ms(99), 13, 9_000, true, &SLICE).unwrap();
        assert_eq!((late3.frame_id, late3.index), (3, 0));
        let two = p.on_packet(ms(100), 12, 6_000, true, &SLICE).unwrap();
        assert_eq!((two.frame_id, two.index), (2, 0));
        for k in 4..(4 + FRAMES_KEPT as u64) {
            p.on_packet(ms(33 * k), 10 + k as u16, (3_000 * k) as u32, true, &SLICE)
                .unwrap();
        }
        assert_eq!(
            p.on_packet(ms(9_000), 11, 3_000, true, &SLICE),
            Err(PlainOutcome::TooOld)
        );
    }
}
