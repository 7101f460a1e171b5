//! [`H264FileSource`]: an H.264 Annex-B file replayed as an `rtcc_core`
//! encoder, so the sender session sends the file's real RFC 6184 payloads.
//!
//! Each access unit (see [`super::annexb`]) is one frame, captured at
//! `start + k / fps` (the core's frame clock, computed from `k` so it does not
//! drift). Its size is the sum of its RFC 6184 payload sizes
//! ([`super::payload`]) and `EncoderModel::packet_payloads` gives those sizes,
//! so the session's packets are exactly the payloads; the runtime takes the
//! bytes of packet `index` of frame `frame_id` from [`H264FileSource::payload`].
//!
//! What a file cannot do: follow the controller's target (the stream's rate is
//! the file's; `current_target` reports the file's mean bitrate and the
//! requested target is only recorded) or produce a key frame on request (key
//! frames come where the file has IDR pictures; requests are counted).

use std::path::Path;

use rtcc_core::media::encoder::{EncodedFrame, EncoderModel};
use rtcc_core::{Bitrate, Bytes, Duration, FrameType, Instant};

use super::annexb::AnnexBStream;
use super::payload::packetize_access_unit;
use super::{nal_type, H264Error};

/// Default frame rate of a raw H.264 file (an Annex-B stream carries no
/// timing unless its SPS has VUI timing info, which we do not read).
pub const DEFAULT_FPS: f64 = 30.0;

/// Default RTP payload MTU: the core packetizer's (1200 B, the common WebRTC
/// choice; see `rtcc_core::media::packetizer::DEFAULT_MTU`).
pub const DEFAULT_PAYLOAD_MTU: usize = 1200;

/// How many of the most recently produced frames [`H264FileSource::payload`]
/// and `packet_payloads` still answer for: 300 frames = 10 s at 30 fps, longer than a packet waits in the
/// pacer queue (our choice).
pub const PAYLOAD_HISTORY_FRAMES: u64 = 300;

/// Settings of an [`H264FileSource`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct H264SourceConfig {
    /// Frames per second (> 0).
    pub fps: f64,
    /// Largest RTP payload, bytes (> 2, the FU-A header).
    pub mtu: usize,
    /// Start again from the first access unit when the file ends.
    pub looping: bool,
}

impl Default for H264SourceConfig {
    fn default() -> Self {
        H264SourceConfig {
            fps: DEFAULT_FPS,
            mtu: DEFAULT_PAYLOAD_MTU,
            looping: true,
        }
    }
}

#[derive(Debug, Clone)]
struct SourceFrame {
    payloads: Vec<bytes::Bytes>,
    sizes: Vec<Bytes>,
    size: Bytes,
    frame_type: FrameType,
}

/// Counters of an [`H264FileSource`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H264SourceStats {
    /// Bytes before the first start code, skipped.
    pub skipped_leading_bytes: usize,
    /// NAL units dropped while parsing (empty, or no slice after them).
    pub dropped_nal_units: usize,
    /// Key-frame requests received (a file cannot honour them).
    pub key_frame_requests: u64,
}

/// An H.264 Annex-B file as an [`EncoderModel`].
#[derive(Debug, Clone)]
pub struct H264FileSource {
    frames: Vec<SourceFrame>,
    fps: f64,
    start: Instant,
    looping: bool,
    next_frame: u64,
    mean_bitrate: Bitrate,
    requested_target: Option<Bitrate>,
    sps: Option<bytes::Bytes>,
    pps: Option<bytes::Bytes>,
    stats: H264SourceStats,
}

impl H264FileSource {
    /// Read the Annex-B file at `path`; frame 0 is captured at `now`.
    pub fn open(
        now: Instant,
        path: &Path,
        config: H264SourceConfig,
    ) -> Result<H264FileSource, H264Error> {
        let data = std::fs::read(path).map_err(|source| H264Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        H264FileSource::from_annexb(now, bytes::Bytes::from(data), path, config)
    }

    /// An Annex-B stream already in memory; `name` names it in errors.
    pub fn from_annexb(
        now: Instant,
        data: bytes::Bytes,
        name: &Path,
        config: H264SourceConfig,
    ) -> Result<H264FileSource, H264Error> {
        if !(config.fps.is_finite() && config.fps > 0.0) {
            return Err(H264Error::Config {
                field: "fps",
                value: config.fps.to_string(),
                reason: "must be finite and > 0",
            });
        }
        // FU-A needs room for its 2-byte header and one byte (RFC 6184 §5.8).
        if config.mtu <= 2 {
            return Err(H264Error::Config {
                field: "mtu",
                value: config.mtu.to_string(),
                reason: "must be > 2 bytes (the FU-A header)",
            });
        }
        let stream = AnnexBStream::parse(&data, name)?;
        // The packetisation of an access unit does not depend on when it is
        // sent, so it is done once here; single NAL unit payloads are slices of
        // the file buffer, FU-A and STAP-A payloads are built once.
        let mut frames = Vec::with_capacity(stream.access_units.len());
        for au in &stream.access_units {
            let payloads = packetize_access_unit(au, config.mtu)?;
            if payloads.is_empty() {
                // Only delimiters/filler besides its slices cannot happen (a
                // slice is never dropped), but an empty frame must not be sent.
                continue;
            }
            let sizes: Vec<Bytes> = payloads
                .iter()
                .map(|p| Bytes::new(p.len() as u64))
                .collect();
            frames.push(SourceFrame {
                size: sizes.iter().copied().sum(),
                sizes,
                payloads,
                frame_type: if au.is_key {
                    FrameType::Key
                } else {
                    FrameType::Delta
                },
            });
        }
        let total: f64 = frames.iter().map(|f| f.size.as_f64()).sum();
        // Mean rate = bits per frame × frames per second (`frames` is non-empty:
        // every access unit has a slice, and slices always yield payloads).
        let mean_bitrate =
            Bitrate::from_bps_f64(total * 8.0 * config.fps / frames.len().max(1) as f64);
        Ok(H264FileSource {
            fps: config.fps,
            start: now,
            looping: config.looping,
            next_frame: 0,
            mean_bitrate,
            requested_target: None,
            sps: stream.first_nal_unit(nal_type::SPS).cloned(),
            pps: stream.first_nal_unit(nal_type::PPS).cloned(),
            stats: H264SourceStats {
                skipped_leading_bytes: stream.skipped_leading_bytes,
                dropped_nal_units: stream.dropped_nal_units,
                key_frame_requests: 0,
            },
            frames,
        })
    }

    /// Bytes of RTP payload `index` of frame `frame_id`, for the wire. `None`
    /// for a frame not produced yet, one older than the last
    /// [`PAYLOAD_HISTORY_FRAMES`] frames produced, or an index past the
    /// frame's packets.
    pub fn payload(&self, frame_id: u64, index: u32) -> Option<&[u8]> {
        self.payloads(frame_id)?
            .get(index as usize)
            .map(|p| p.as_ref())
    }

    /// All RTP payloads of frame `frame_id` in order (same window as [`Self::payload`]).
    pub fn payloads(&self, frame_id: u64) -> Option<&[bytes::Bytes]> {
        self.recent(frame_id).map(|f| f.payloads.as_slice())
    }

    /// Access units (frames) in the file.
    pub fn frames_in_file(&self) -> usize {
        self.frames.len()
    }

    /// The stream's first sequence parameter set (for the SDP, RFC 6184 §8.1).
    pub fn sps(&self) -> Option<&[u8]> {
        self.sps.as_deref()
    }

    /// The stream's first picture parameter set (for the SDP, RFC 6184 §8.1).
    pub fn pps(&self) -> Option<&[u8]> {
        self.pps.as_deref()
    }

    /// The file's mean bitrate (payload bytes, at the configured frame rate).
    pub fn mean_bitrate(&self) -> Bitrate {
        self.mean_bitrate
    }

    /// The last target the controller asked for (recorded, not followed).
    pub fn requested_target(&self) -> Option<Bitrate> {
        self.requested_target
    }

    /// Counters.
    pub fn stats(&self) -> &H264SourceStats {
        &self.stats
    }

    /// Capture instant of frame `k`: `start + k / fps`, from `k` so it does not
    /// drift (as the core's encoders compute it).
    pub fn capture_time(&self, k: u64) -> Instant {
        self.start + Duration::from_nanos((k as f64 * 1e9 / self.fps).round() as u64)
    }

    fn frame(&self, k: u64) -> Option<&SourceFrame> {
        let n = self.frames.len() as u64;
        if !self.looping && k >= n {
            return None;
        }
        self.frames.get((k % n.max(1)) as usize)
    }

    fn recent(&self, frame_id: u64) -> Option<&SourceFrame> {
        let produced = frame_id < self.next_frame;
        let fresh = self.next_frame - frame_id.min(self.next_frame) <= PAYLOAD_HISTORY_FRAMES;
        if produced && fresh {
            self.frame(frame_id)
        } else {
            None
        }
    }
}

impl EncoderModel for H264FileSource {
    /// Recorded only: a file's rate is the file's.
    fn set_target(&mut self, _now: Instant, target: Bitrate) {
        self.requested_target = Some(target);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.frame(self.next_frame)
            .map(|_| self.capture_time(self.next_frame))
    }

    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        let k = self.next_frame;
        let capture_time = self.capture_time(k);
        if now < capture_time {
            return None;
        }
        let f = self.frame(k)?;
        let frame = EncodedFrame {
            frame_id: k,
            capture_time,
            size: f.size,
            frame_type: f.frame_type,
            target_bitrate: self.mean_bitrate,
            etr: 1.0,
        };
        self.next_frame += 1;
        Some(frame)
    }

    /// The file's mean bitrate.
    fn current_target(&self) -> Bitrate {
        self.mean_bitrate
    }

    /// Counted only: key frames come where the file has IDR pictures.
    fn request_key_frame(&mut self) {
        self.stats.key_frame_requests += 1;
    }

    fn packet_payloads(&self, frame_id: u64) -> Option<&[Bytes]> {
        self.recent(frame_id).map(|f| f.sizes.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h264::payload::depacketize;

    fn nal(header: u8, len: usize) -> Vec<u8> {
        let mut v = vec![header];
        v.extend((1..len).map(|i| (i % 200) as u8 + 10));
        v
    }

    /// Two GOPs: SPS PPS IDR(3000 B) P(500 B) P(100 B) each; first_mb = 0
    /// (the byte after the header has its top bit set).
    fn file() -> (bytes::Bytes, Vec<Vec<u8>>) {
        let mut nals = Vec::new();
        for _ in 0..2 {
            nals.push(nal(0x67, 10));
            nals.push(nal(0x68, 4));
            let mut idr = nal(0x65, 3000);
            idr[1] = 0x88;
            nals.push(idr);
            for len in [500, 100] {
                let mut p = nal(0x41, len);
                p[1] = 0x9a;
                nals.push(p);
            }
        }
        let mut v = vec![0xff, 0xee];
        for n in &nals {
            v.extend_from_slice(&[0, 0, 0, 1]);
            v.extend_from_slice(n);
        }
        (bytes::Bytes::from(v), nals)
    }

    fn source(looping: bool) -> H264FileSource {
        let config = H264SourceConfig {
            looping,
            ..Default::default()
        };
        H264FileSource::from_annexb(Instant::ZERO, file().0, Path::new("t.h264"), config).unwrap()
    }

    #[test]
    fn frames_are_access_units_with_their_rfc6184_payloads() {
        let mut s = source(true);
        let (_, nals) = file();
        assert_eq!(s.frames_in_file(), 6);
        assert_eq!(s.stats().skipped_leading_bytes, 2);
        assert_eq!(s.sps(), Some(&nals[0][..]));
        let f = s.produce(Instant::ZERO).unwrap();
        assert_eq!(f.frame_type, FrameType::Key);
        let sizes = s.packet_payloads(0).unwrap().to_vec();
        // STAP-A(SPS, PPS) + 3 FU-A for the 2999 bytes after the IDR header.
        assert_eq!(sizes.len(), 4);
        assert_eq!(sizes[0], Bytes::new(1 + 2 + 10 + 2 + 4));
        assert_eq!(f.size, sizes.iter().copied().sum());
        let wire: Vec<bytes::Bytes> = (0..4)
            .map(|i| bytes::Bytes::copy_from_slice(s.payload(0, i).unwrap()))
            .collect();
        assert_eq!(
            wire.iter()
                .map(|p| Bytes::new(p.len() as u64))
                .collect::<Vec<_>>(),
            sizes
        );
        assert_eq!(depacketize(&wire).unwrap(), nals[..3].to_vec());
        assert!(s.payload(0, 4).is_none());
        let p = s.produce(Instant::from_millis(34)).unwrap();
        assert_eq!(p.frame_type, FrameType::Delta);
        assert_eq!(s.payload(1, 0), Some(&nals[3][..]));
    }

    #[test]
    fn frame_clock_loops_and_window() {
        let mut s = source(true);
        assert!(s.packet_payloads(0).is_none(), "not produced yet");
        let mut ids = Vec::new();
        while let Some(t) = s.poll_timeout() {
            if t >= Instant::from_secs(20) {
                break;
            }
            if t > Instant::ZERO {
                let early = t.saturating_sub(Duration::from_nanos(1));
                assert!(
                    s.produce(early).is_none(),
                    "no frame before its capture time"
                );
            }
            let f = s.produce(t).unwrap();
            assert_eq!(f.capture_time, s.capture_time(f.frame_id));
            ids.push((f.frame_id, f.frame_type));
        }
        assert_eq!(ids.len(), 600, "20 s at 30 fps");
        assert_eq!(s.capture_time(3), Instant::from_nanos(100_000_000));
        // Looping: frame 6 is the file's frame 0 again.
        assert_eq!(ids[6].1, FrameType::Key);
        assert_eq!(s.payloads(599), s.payloads(599 - 6));
        // The most recent PAYLOAD_HISTORY_FRAMES frames (300..=599) answer.
        assert!(s.payloads(600 - PAYLOAD_HISTORY_FRAMES).is_some());
        assert!(
            s.payloads(600 - PAYLOAD_HISTORY_FRAMES - 1).is_none(),
            "too old"
        );
        assert!(s.payloads(600).is_none(), "not produced yet");
    }

    #[test]
    fn without_looping_the_file_ends() {
        let mut s = source(false);
        let mut n = 0;
        while let Some(t) = s.poll_timeout() {
            s.produce(t).unwrap();
            n += 1;
        }
        assert_eq!(n, 6);
        assert!(s.produce(Instant::from_secs(100)).is_none());
    }

    #[test]
    fn targets_and_key_frame_requests_are_recorded_not_followed() {
        let mut s = source(true);
        let mean = s.current_target();
        // 6 frames of payload at 30 fps.
        let total: u64 = (0..6)
            .map(|k| {
                s.produce(s.capture_time(k)).unwrap();
                s.packet_payloads(k)
                    .unwrap()
                    .iter()
                    .map(|b| b.get())
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(mean, Bitrate::from_bps_f64(total as f64 * 8.0 * 30.0 / 6.0));
        s.set_target(Instant::ZERO, Bitrate::kbps(100));
        s.request_key_frame();
        assert_eq!(s.current_target(), mean);
        assert_eq!(s.requested_target(), Some(Bitrate::kbps(100)));
        assert_eq!(s.stats().key_frame_requests, 1);
        let next = s.produce(s.capture_time(6)).unwrap();
        assert_eq!(
            next.frame_type,
            FrameType::Key,
            "file's own IDR, at frame 6"
        );
        let p = s.produce(s.capture_time(7)).unwrap();
        assert_eq!(p.frame_type, FrameType::Delta, "request not honoured");
    }

    #[test]
    fn rejects_bad_config_and_empty_files() {
        let bad = H264SourceConfig {
            fps: 0.0,
            ..Default::default()
        };
        assert!(H264FileSource::from_annexb(Instant::ZERO, file().0, Path::new("a"), bad).is_err());
        let e = H264FileSource::open(
            Instant::ZERO,
            Path::new("/nonexistent.h264"),
            Default::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent.h264"));
    }
}
