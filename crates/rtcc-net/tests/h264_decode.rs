//! A stock decoder accepts our H.264 RTP stream (RFC 6184 over RFC 3550).
//!
//! ffmpeg encodes a 2 s 320x240 clip; `H264FileSource` replays it through the
//! core `SenderSession` (so the packets are the ones the session chooses, via
//! `EncoderModel::packet_payloads`), each packet gets an RTP header (PT 96,
//! 90 kHz timestamps, marker on a frame's last packet) and goes over UDP
//! loopback, paced at real time, to an ffmpeg that reads the SDP `sdp.rs`
//! writes. ffmpeg must exit cleanly, report no decode error and decode at
//! least 90 % of the frames.
//!
//! Skips (with a message) when ffmpeg is not installed: `make media-tools`.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;

use rtcc_core::cc::{CcConfig, FixedConfig};
use rtcc_core::media::packetizer::Packetizer;
use rtcc_core::session::sender::{SenderConfig, SenderSession};
use rtcc_core::{Bitrate, Duration, Instant};
use rtcc_net::h264::source::{H264FileSource, H264SourceConfig};
use rtcc_net::sdp::H264Sdp;
use rtcc_net::wire::WireConfig;
use webrtc_util::marshal::Marshal as _;

/// RTP clock rate of H.264 (RFC 6184 §8.2.1).
const RTP_CLOCK_HZ: u64 = 90_000;
const PAYLOAD_TYPE: u8 = 96;
const SSRC: u32 = 0x5eed_0001;
/// How long ffmpeg may take after it was started before it is killed.
const FFMPEG_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);
const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Kills the child when the test fails before it exits.
struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// Removes the scratch directory at the end of the test.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ffmpeg_installed() -> bool {
    Command::new("ffmpeg")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// An even UDP port on loopback whose successor (RTCP, RFC 3550 §11) is free too.
fn free_port_pair() -> u16 {
    for _ in 0..100 {
        let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let p = a.local_addr().unwrap().port();
        if p % 2 == 0 && p < u16::MAX && UdpSocket::bind((Ipv4Addr::LOCALHOST, p + 1)).is_ok() {
            return p;
        }
    }
    panic!("no free even UDP port pair on 127.0.0.1");
}

fn encode_clip(dir: &Path) -> PathBuf {
    let out = dir.join("clip.h264");
    let status = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-loglevel", "error", "-y"])
        .args([
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=320x240:rate=30",
            "-t",
            "2",
        ])
        // testsrc is RGB; Baseline needs 4:2:0.
        .args([
            "-pix_fmt",
            "yuv420p",
            "-c:v",
            "libx264",
            "-profile:v",
            "baseline",
        ])
        .args(["-g", "30", "-bf", "0", "-x264-params", "repeat-headers=1"])
        .args(["-f", "h264"])
        .arg(&out)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg could not encode the test clip");
    out
}

/// Waits for the child to exit, at most until the deadline.
fn wait_until(child: &mut Child, mut budget: std::time::Duration) -> Option<ExitStatus> {
    loop {
        if let Some(s) = child.try_wait().expect("wait for ffmpeg") {
            return Some(s);
        }
        if budget.is_zero() {
            return None;
        }
        sleep(POLL);
        budget = budget.saturating_sub(POLL);
    }
}

#[test]
fn h264_stream_decodes_in_ffmpeg() {
    if !ffmpeg_installed() {
        eprintln!("skipping: ffmpeg not installed (make media-tools installs it)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("rtcc-h264-decode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _scratch = Scratch(dir.clone());
    let clip = encode_clip(&dir);

    let config = H264SourceConfig {
        looping: false,
        ..Default::default()
    };
    let source = H264FileSource::open(Instant::ZERO, &clip, config).unwrap();
    let total = source.frames_in_file();
    assert_eq!(total, 60, "2 s at 30 fps");

    let port = free_port_pair();
    let sdp = H264Sdp {
        addr: Ipv4Addr::LOCALHOST.into(),
        port,
        payload_type: PAYLOAD_TYPE,
        sps: source.sps().expect("the clip has an SPS"),
        pps: source.pps().expect("the clip has a PPS"),
        rtx: None,
        nack: false,
        media_ssrc: WireConfig::default().media_ssrc,
        extension_ids: [1, 2, 3],
    }
    .to_sdp()
    .unwrap();
    let sdp_path = dir.join("stream.sdp");
    std::fs::write(&sdp_path, &sdp).unwrap();
    let md5_path = dir.join("frames.md5");
    let err_path = dir.join("ffmpeg.err");

    let mut ffmpeg = Reap(
        Command::new("ffmpeg")
            .args(["-hide_banner", "-nostdin", "-loglevel", "warning"])
            .args(["-protocol_whitelist", "file,udp,rtp", "-i"])
            .arg(&sdp_path)
            // One output line per decoded frame, whatever its timestamp.
            .args(["-fps_mode", "passthrough", "-f", "framemd5", "-y"])
            .arg(&md5_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&err_path).unwrap())
            .spawn()
            .expect("start ffmpeg"),
    );
    let mut budget = FFMPEG_DEADLINE;
    // Ready when it holds the RTP port.
    while UdpSocket::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
        assert!(
            matches!(ffmpeg.0.try_wait(), Ok(None)),
            "ffmpeg exited before listening: {}",
            std::fs::read_to_string(&err_path).unwrap_or_default()
        );
        assert!(!budget.is_zero(), "ffmpeg did not bind port {port}");
        sleep(POLL);
        budget = budget.saturating_sub(POLL);
    }

    // The core session decides the packets; a fixed 20 Mbps controller keeps
    // the pacer out of the way of a ~100 kbps clip.
    let cc = CcConfig::Fixed(FixedConfig {
        bitrate: Bitrate::mbps(20),
        pacing_factor: 2.5,
        plan: None,
    });
    let sender_config = SenderConfig {
        cc,
        packetizer: Packetizer::default(),
        // No feedback in this test: keep the file's rate.
        feedback_timeout: None,
        recovery: Default::default(),
        queue_time_limit: Some(rtcc_core::session::sender::DEFAULT_QUEUE_TIME_LIMIT),
        // A real H.264 bitstream: frames cannot be skipped after encoding.
        frame_drop_queue_time: None,
    };
    let mut sender = SenderSession::new(Instant::ZERO, sender_config, source);
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let dest = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut seq: u16 = 0x1234;
    let mut packets = 0u64;
    let mut slept = Duration::ZERO;
    let mut t = Instant::ZERO;
    let end = Instant::from_secs(5);
    while t < end {
        // Real-time pacing: sleep until core time t.
        let due = t.saturating_duration_since(Instant::ZERO);
        if due > slept {
            sleep(std::time::Duration::from_nanos((due - slept).as_nanos()));
            slept = due;
        }
        sender.on_timeout(t);
        while let Some(tx) = sender.poll_transmit(t) {
            let m = tx.packet;
            let payload = sender
                .encoder()
                .payload(m.frame_id, m.index)
                .expect("payload of a frame just sent");
            assert_eq!(
                payload.len() as u64,
                m.payload.get(),
                "session size = wire bytes"
            );
            let ts = m.capture_time.as_nanos() as u128 * RTP_CLOCK_HZ as u128 / 1_000_000_000;
            let pkt = rtp::packet::Packet {
                header: rtp::header::Header {
                    version: 2,
                    marker: m.last_in_frame,
                    payload_type: PAYLOAD_TYPE,
                    sequence_number: seq,
                    // The RTP timestamp wraps (RFC 3550 §5.1).
                    timestamp: ts as u32,
                    ssrc: SSRC,
                    ..Default::default()
                },
                payload: bytes::Bytes::copy_from_slice(payload),
            };
            sock.send_to(&pkt.marshal().unwrap(), dest).unwrap();
            seq = seq.wrapping_add(1);
            packets += 1;
        }
        let done = sender.stats().frames_encoded == total as u64 && sender.queued_bytes().is_zero();
        if done {
            break;
        }
        match sender.poll_timeout(t) {
            Some(next) => t = next.max(t),
            None => break,
        }
    }
    assert_eq!(sender.stats().frames_encoded, total as u64);
    // End of stream: an RTCP BYE (RFC 3550 §6.6) on the RTCP port. ffmpeg's
    // RTP demuxer takes it as the end of the input, flushes the decoder (the
    // last frame is only complete once the stream ends) and exits.
    let bye = rtcp::goodbye::Goodbye {
        sources: vec![SSRC],
        reason: bytes::Bytes::from_static(b"end of clip"),
    };
    let rtcp_dest = SocketAddr::from((Ipv4Addr::LOCALHOST, port + 1));
    // Sent after the last frame's interval, as a live sender would end.
    sleep(std::time::Duration::from_millis(1000 / 30 + 50));
    sock.send_to(&bye.marshal().unwrap(), rtcp_dest).unwrap();
    let streamed = std::time::Duration::from_nanos(slept.as_nanos());

    let status = wait_until(&mut ffmpeg.0, FFMPEG_DEADLINE.saturating_sub(streamed));
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let status =
        status.unwrap_or_else(|| panic!("ffmpeg did not finish in time; stderr:\n{stderr}"));
    let md5 = std::fs::read_to_string(&md5_path).unwrap_or_default();
    let decoded = md5
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count();
    eprintln!(
        "h264 decode: {packets} RTP packets, ffmpeg decoded {decoded}/{total} frames, exit {status}; stderr: {:?}",
        stderr.trim()
    );
    assert!(status.success(), "ffmpeg failed ({status}):\n{stderr}");
    let lower = stderr.to_lowercase();
    for bad in [
        "error",
        "concealing",
        "corrupt",
        "missed",
        "non-existing",
        "no frame",
    ] {
        assert!(!lower.contains(bad), "ffmpeg reported \"{bad}\":\n{stderr}");
    }
    assert!(
        decoded * 10 >= total * 9,
        "decoded {decoded} of {total} frames:\n{stderr}"
    );
}
