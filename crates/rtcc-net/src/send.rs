//! `rtcc send`: a media sender session over real UDP (DESIGN §5).
//!
//! The loop is the simulator's, with real sockets and the real clock: after
//! any input (a timer, a datagram) it asks the core [`SenderSession`] for due
//! frames (`on_timeout`), drains `poll_transmit` onto the socket as RTP, and
//! sleeps until `poll_timeout` or the next datagram. RTCP from the receiver
//! (transport-wide CC feedback or RFC 8888, PLI) becomes a `WireFeedback` for
//! `handle_feedback`; generic NACKs (RFC 4585 §6.2.1) for our stream go to
//! `handle_nack`, and the retransmissions the session then releases go out as
//! RFC 4588 RTX packets ([`wire::encode_rtx`]). The session's probe padding
//! is on (`SenderSession::enable_probe_padding`, as in the simulator): a
//! controller's bandwidth probe with no media to send is filled with
//! padding-only RTP packets on the RTX stream ([`wire::encode_padding`]),
//! each as large as the session charged for. Media padding is on too
//! (`SenderSession::enable_media_padding`): a packet train that asks for
//! equal sizes (svc-probing's start phase) has its media packets padded up to
//! the train's packet size with RTP padding ([`wire::encode_media`]).
//!
//! A scenario flow with the layered encoder (`encoder.kind = "svc"`) runs
//! it here too ([`SvcEncoder`], zero payloads), and a controller's layer
//! plan may ask for repair packets ([`PacketKind::Fec`]: a copy of a data
//! packet, `SenderSession`'s module doc). Each goes out as an RFC 4588 RTX
//! packet, as a retransmission of the packet it copies would
//! ([`wire::encode_rtx`], module doc of `wire::media`, "Repair copies"):
//! it never takes a media sequence number. The RTX stream therefore exists
//! whenever loss recovery is on or repair may be sent
//! ([`SendConfig::may_send_repair`], [`SendConfig::rtx_stream`]); without
//! it, probe padding goes on the media SSRC ([`wire::encode_media_padding`]).
//! How each transmit is numbered and written is `RtpStreams`'s, apart from
//! the socket so that its tests need none.
//!
//! Datagrams from anyone but the peer, and anything that does not parse, are
//! dropped and counted.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rtcc_core::feedback::Nack;
use rtcc_core::media::encoder::{EncodedFrame, EncoderModel, ParametricEncoder};
use rtcc_core::media::packetizer::Packetizer;
use rtcc_core::media::svc::LayerPlan;
use rtcc_core::media::svc_encoder::{SvcEncoder, SvcEncoderConfig};
use rtcc_core::recovery::{LossRecovery as _, RecoveryStats};
use rtcc_core::session::sender::{SenderConfig, SenderSession, Transmit};
use rtcc_core::{rng, Bitrate, Bytes, CongestionController, Duration, Instant, PacketKind};
use rtcc_sim::output::{self, TimeseriesRow};
use rtcc_sim::MediaSetup;
use serde_json::json;

use crate::capture::Capture;
use crate::clock::Clock;
use crate::h264::source::{H264FileSource, H264SourceConfig};
use crate::reports::{self, REPORT_INTERVAL};
use crate::sdp::{H264Sdp, RtxSdp};
use crate::wire::{self, FeedbackDecoder, ReceptionStats, WireConfig, WireError};
use crate::NetError;

/// Interval of the sender's own time series (as the simulator's default).
const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);
/// Longest sleep between checks of the stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);
/// Receive buffer: the largest UDP payload.
const MAX_DATAGRAM: usize = 65_536;

/// Where the sender's frames come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The parametric encoder model, following the controller's target
    /// (`rtcc_core::media::encoder`); payload bytes are zeros.
    Synthetic,
    /// An H.264 Annex-B file, packetised per RFC 6184; its rate is the file's.
    H264 {
        /// The file.
        path: PathBuf,
        /// Frames per second.
        fps: f64,
        /// Start over at the end of the file.
        looped: bool,
    },
}

/// Settings of `rtcc send`.
#[derive(Debug, Clone)]
pub struct SendConfig {
    /// The receiver (or the emulator in front of it).
    pub to: SocketAddr,
    /// Local address (port 0 = any).
    pub bind: SocketAddr,
    /// Controller, packetizer, encoder and receiver settings (from a scenario
    /// flow or from defaults).
    pub media: MediaSetup,
    /// Frame source.
    pub source: Source,
    /// Wire settings (payload type, extension ids, SSRC).
    pub wire: WireConfig,
    /// Stop after this long (`None` = until stopped).
    pub duration: Option<Duration>,
    /// Seed of the encoder model's randomness.
    pub seed: u64,
    /// Where to write `send_summary.json` and `send_timeseries.csv`.
    pub out_dir: Option<PathBuf>,
    /// Write an SDP (RFC 8866) describing the stream for a stock receiver
    /// (ffplay, GStreamer) to this file before sending; H.264 sources only.
    pub sdp: Option<PathBuf>,
    /// The receiver's RTCP address when it does not multiplex RTCP on its
    /// RTP port (RFC 5761 §4): sender reports go there, and RTCP is
    /// accepted from that host (a stock receiver's RTCP leaves from a port
    /// of its own). `None`: RTCP goes to, and comes from, `to`.
    pub rtcp: Option<SocketAddr>,
    /// A local address of our own for RTCP (RFC 5761 §4, non-multiplexed):
    /// sender reports leave from there and RTCP is read there too.
    pub rtcp_listen: Option<SocketAddr>,
    /// Write every datagram sent and received to this pcap file
    /// (`rtcc send --pcap`; docs/net.md, "Packet captures").
    pub pcap: Option<PathBuf>,
}

impl SendConfig {
    /// Whether the run may send a layer plan's repair packets: a synthetic
    /// source with the layered encoder ([`MediaSetup::svc`]; an H.264 file
    /// has no layers) under a controller that may plan them
    /// ([`rtcc_core::CcConfig::may_plan_repair`]: CDM, or the fixed
    /// controller with protected layers in its plan).
    pub fn may_send_repair(&self) -> bool {
        matches!(self.source, Source::Synthetic)
            && self.media.svc.is_some()
            && self.media.sender.cc.may_plan_repair()
    }

    /// Whether the run has an RFC 4588 retransmission stream (offered in
    /// the SDP, carrying probe padding): it needs one for loss recovery's
    /// retransmissions or for repair packets
    /// ([`Self::may_send_repair`]). Without, probe padding goes on the
    /// media SSRC, and the wire is what it was before repair packets were
    /// sent as RTX.
    pub fn rtx_stream(&self) -> bool {
        !self.media.sender.recovery.is_none() || self.may_send_repair()
    }
}

/// Counters of a sender run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SendStats {
    /// RTP datagrams sent.
    pub datagrams_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// Sends the OS refused (e.g. ICMP port unreachable while the receiver
    /// restarts): counted, the packet is lost.
    pub send_errors: u64,
    /// RTCP datagrams accepted.
    pub rtcp_received: u64,
    /// Feedback reports handed to the session.
    pub feedback_reports: u64,
    /// Key-frame requests (PLI) received.
    pub key_frame_requests: u64,
    /// Datagrams from an address other than the peer (dropped).
    pub unexpected_source: u64,
    /// Datagrams that did not parse as RTCP (dropped).
    pub malformed: u64,
    /// RTCP packets of types we do not use (ignored).
    pub rtcp_ignored: u64,
    /// Sender reports sent (RFC 3550 §6.4.1).
    pub sender_reports: u64,
    /// Receiver reports about our stream received (RFC 3550 §6.4.2).
    pub receiver_reports: u64,
    /// Round-trip time from the last receiver report (LSR/DLSR, §6.4.1), µs
    /// (0 until one refers to a sender report).
    pub rr_rtt_us: u64,
    /// Fraction lost in the last receiver report, in 1/256.
    pub rr_fraction_lost: u64,
    /// Cumulative loss in the last receiver report.
    pub rr_cumulative_lost: i64,
    /// Interarrival jitter in the last receiver report, RTP units (1/90 ms).
    pub rr_jitter_rtp: u64,
    /// Generic NACK packets (RFC 4585 §6.2.1) about our media stream received
    /// (NACKs about another SSRC count as `rtcp_ignored`).
    pub nacks_received: u64,
    /// RFC 4588 retransmission (RTX) datagrams sent.
    pub retransmissions_sent: u64,
    /// Padding-only datagrams sent for the controller's bandwidth probes
    /// (on the RTX stream; in `datagrams_sent` too).
    pub padding_sent: u64,
    /// Media datagrams (first transmissions) carrying media padding: a
    /// packet train's equal-size padding (`ProbeRequest::pad_media`; in
    /// `datagrams_sent` too).
    pub padded_media_sent: u64,
    /// Bytes of that padding (RTP padding and extension-block filler), in
    /// `bytes_sent` and in the session's `padding_bytes_sent` too.
    pub media_padding_bytes: u64,
    /// Retransmissions not sent because the H.264 source no longer holds the
    /// payload (older than its payload history).
    pub retransmissions_without_payload: u64,
    /// A layer plan's repair packets ([`PacketKind::Fec`]) sent, as RFC
    /// 4588 RTX packets on the RTX stream (in `datagrams_sent` too).
    pub repair_sent: u64,
    /// Their UDP payload bytes (in `bytes_sent` too).
    pub repair_bytes: u64,
    /// Repair packets not sent because a real source no longer held the
    /// payload of the packet they copy (as
    /// `retransmissions_without_payload`; a synthetic source has none to
    /// lose).
    pub repair_without_payload: u64,
}

/// What a sender run did.
#[derive(Debug, Clone)]
pub struct SendReport {
    /// Counters of the transport.
    pub stats: SendStats,
    /// Counters of the core session.
    pub session: rtcc_core::session::sender::SenderStats,
    /// Run time.
    pub elapsed: Duration,
    /// Controller target at the end.
    pub final_target: Bitrate,
    /// Counters of the loss-recovery scheme (`None` without recovery).
    pub recovery: Option<RecoveryStats>,
}

impl SendReport {
    /// The report as `send_summary.json` holds it.
    pub fn to_json(&self) -> serde_json::Value {
        let s = &self.session;
        let mut v = json!({
            "elapsed_s": self.elapsed.as_secs_f64(),
            "final_target_kbps": self.final_target.as_kbps_f64(),
            "transport": self.stats,
            "session": {
                "frames_encoded": s.frames_encoded,
                "packets_sent": s.packets_sent,
                "bytes_sent": s.bytes_sent,
                "payload_sent": s.payload_sent,
                "packets_reported_lost": s.packets_reported_lost,
                "packets_reported_received": s.packets_reported_received,
                "feedback_reports": s.feedback_reports,
                "unknown_feedback_entries": s.unknown_feedback_entries,
                "key_frames_requested": s.key_frames_requested,
                "feedback_timeouts": s.feedback_timeouts,
                "nacks_received": s.nacks_received,
                "padding_packets_sent": s.padding_packets_sent,
                "padding_bytes_sent": s.padding_bytes_sent,
                "repair_packets_sent": s.repair_packets_sent,
                "repair_bytes_sent": s.repair_bytes_sent,
            },
        });
        if let (Some(r), Some(obj)) = (&self.recovery, v.as_object_mut()) {
            // The simulator's `recovery` names (rtcc_sim::output) where they exist.
            obj.insert(
                "recovery".into(),
                json!({
                    "nack_requests": r.requested,
                    "retransmissions_sent": r.packets_sent,
                    "retransmission_bytes": r.bytes_sent,
                    "retransmissions_expired": r.expired,
                    "retransmissions_max_retries": r.max_retries,
                    "retransmissions_too_soon": r.too_soon,
                    "retransmissions_unknown": r.unknown,
                }),
            );
        }
        v
    }
}

/// The encoders the real sender can use.
#[derive(Debug)]
enum NetEncoder {
    Synthetic(Box<ParametricEncoder>),
    /// The layered model (a scenario flow's `encoder.kind = "svc"`).
    Svc(Box<SvcEncoder>),
    H264(Box<H264FileSource>),
}

macro_rules! each {
    ($self:ident, $e:ident => $body:expr) => {
        match $self {
            NetEncoder::Synthetic($e) => $body,
            NetEncoder::Svc($e) => $body,
            NetEncoder::H264($e) => $body,
        }
    };
}

impl EncoderModel for NetEncoder {
    fn set_target(&mut self, now: Instant, target: Bitrate) {
        each!(self, e => e.set_target(now, target))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        each!(self, e => e.poll_timeout())
    }
    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        each!(self, e => e.produce(now))
    }
    fn current_target(&self) -> Bitrate {
        each!(self, e => e.current_target())
    }
    fn request_key_frame(&mut self) {
        each!(self, e => e.request_key_frame())
    }
    fn packet_payloads(&self, frame_id: u64) -> Option<&[Bytes]> {
        each!(self, e => e.packet_payloads(frame_id))
    }
    fn layer_sizes(&self, frame_id: u64) -> Option<&[Bytes]> {
        each!(self, e => e.layer_sizes(frame_id))
    }
    fn set_layer_plan(&mut self, now: Instant, plan: Option<LayerPlan>) {
        each!(self, e => e.set_layer_plan(now, plan))
    }
    fn protected_layers(&self, frame_id: u64) -> usize {
        each!(self, e => e.protected_layers(frame_id))
    }
    fn rates_include_headers(&self) -> bool {
        each!(self, e => e.rates_include_headers())
    }
}

impl NetEncoder {
    /// Bytes of packet `index` of a frame (`None` = synthetic zeros).
    fn payload(&self, frame_id: u64, index: u32) -> Option<&[u8]> {
        match self {
            NetEncoder::Synthetic(_) | NetEncoder::Svc(_) => None,
            NetEncoder::H264(e) => e.payload(frame_id, index),
        }
    }
}

/// Runs a sender until `duration` elapses or `stop` is set. Blocks the
/// calling thread (a current-thread tokio runtime), so Python can run it with
/// the GIL released and set `stop` on Ctrl-C.
pub fn run_blocking(config: SendConfig, stop: Arc<AtomicBool>) -> Result<SendReport, NetError> {
    crate::block_on(run(config, stop))
}

/// Runs a sender (see [`run_blocking`]).
pub async fn run(config: SendConfig, stop: Arc<AtomicBool>) -> Result<SendReport, NetError> {
    let sock = crate::open_socket(&config.wire, config.bind).await?;
    let rtcp_sock = match config.rtcp_listen {
        Some(a) => Some(crate::open_socket(&config.wire, a).await?),
        None => None,
    };
    let mut rtcp_buf = vec![0u8; MAX_DATAGRAM];
    let clock = Clock::start();
    let start = clock.now();
    let mut capture = Capture::open(config.pcap.as_deref(), clock)?;
    // The sockets' own addresses, for the capture's headers.
    let media_addr = sock.local_addr().unwrap_or(config.bind);
    let rtcp_addr = rtcp_sock
        .as_ref()
        .and_then(|s| s.local_addr().ok())
        .unwrap_or(media_addr);
    // The session charges each packet what it really costs on the wire.
    let packetizer = Packetizer {
        header_overhead: Bytes::new(wire::rtp_overhead(&config.wire) as u64),
        ..config.media.sender.packetizer
    };
    let bad_encoder = |e: rtcc_core::media::encoder::EncoderConfigError| NetError::Config {
        field: "encoder".into(),
        message: e.to_string(),
    };
    let encoder = match (&config.source, &config.media.svc) {
        (Source::Synthetic, None) => NetEncoder::Synthetic(Box::new(
            ParametricEncoder::new(
                start,
                config.media.encoder.clone(),
                rng::stream(config.seed, 0),
            )
            .map_err(bad_encoder)?,
        )),
        (Source::Synthetic, Some(svc)) => {
            // Layer payloads are sized for the packets the session cuts.
            let svc = SvcEncoderConfig {
                packetizer,
                ..svc.clone()
            };
            NetEncoder::Svc(Box::new(
                SvcEncoder::new(start, svc, rng::stream(config.seed, 0)).map_err(bad_encoder)?,
            ))
        }
        (Source::H264 { path, fps, looped }, _) => {
            let cfg = H264SourceConfig {
                fps: *fps,
                mtu: usize::try_from(config.media.sender.packetizer.mtu.get())
                    .unwrap_or(usize::MAX),
                looping: *looped,
            };
            let src = H264FileSource::open(start, path, cfg).map_err(|e| NetError::Config {
                field: "--source".into(),
                message: e.to_string(),
            })?;
            NetEncoder::H264(Box::new(src))
        }
    };
    let rtx_stream = config.rtx_stream();
    if let Some(path) = &config.sdp {
        let rtx = rtx_stream.then_some(RtxSdp {
            payload_type: config.wire.rtx_payload_type,
            ssrc: config.wire.rtx_ssrc,
            media_ssrc: config.wire.media_ssrc,
        });
        let nack = !config.media.sender.recovery.is_none();
        write_sdp(path, &encoder, config.to, &config.wire, rtx, nack)?;
    }
    // A real H.264 bitstream cannot skip a frame after encoding (the next
    // frame references it, and payloads are looked up by the encoder's frame
    // id): no frame dropping at the sender then (docs/algorithms/pacer.md).
    let frame_drop_queue_time = match encoder {
        NetEncoder::H264(_) => None,
        NetEncoder::Synthetic(_) | NetEncoder::Svc(_) => config.media.sender.frame_drop_queue_time,
    };
    let sender_cfg = SenderConfig {
        packetizer,
        frame_drop_queue_time,
        ..config.media.sender.clone()
    };
    let mut session = SenderSession::new(start, sender_cfg, encoder);
    // Probes send padding when there is no media, as the simulator's senders
    // do (and libwebrtc's pacer): without it a probe has nothing to carry it.
    session.enable_probe_padding();
    // A packet train that asks for equal-sized packets (svc-probing's start
    // phase, docs/algorithms/svc-probing.md I11) gets its media packets padded
    // to the train's size, as in the simulator: `wire::encode_media` writes
    // the padding the session adds to `wire_size` as RTP padding, so the
    // datagram is the size charged (the packetizer charges `rtp_overhead`,
    // so an unpadded packet's `wire_size` is exactly its own size).
    session.enable_media_padding();
    let mut out = Outputs::open(config.out_dir.as_deref())?;
    let end = config.duration.map(|d| start + d);

    let mut stats = SendStats::default();
    let mut decoder = FeedbackDecoder::new();
    let mut tx_buf: Vec<u8> = Vec::with_capacity(2048);
    let mut rx_buf = vec![0u8; MAX_DATAGRAM];
    let mut next_sample = start + SAMPLE_INTERVAL;
    let mut prev_bytes = 0u64;
    let mut next_report = start + REPORT_INTERVAL;
    let mut sr_buf: Vec<u8> = Vec::with_capacity(128);
    // Both SSRCs this sender uses (padding, retransmissions and repair
    // packets go on the RTX one) are described with the one CNAME.
    let sdes_ssrcs = [config.wire.media_ssrc, config.wire.rtx_ssrc];
    let mut streams = RtpStreams::new(config.wire, rtx_stream);
    let real_source = !matches!(config.source, Source::Synthetic);

    loop {
        let now = clock.now();
        if stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
            break;
        }
        session.on_timeout(now);
        while let Some(tx) = session.poll_transmit(now) {
            let payload = session
                .encoder()
                .payload(tx.packet.frame_id, tx.packet.index);
            let ntp = clock.ntp_of(tx.packet.capture_time);
            let written = streams
                .write(&tx, payload, ntp, real_source, &mut tx_buf)
                .map_err(|e| NetError::Internal(format!("encoding packet {}: {e}", tx.seq)))?;
            let Some(written) = written else {
                // A copy whose payload the source no longer holds: zeros
                // would corrupt the video, better lost than wrong.
                if tx.kind == PacketKind::Fec {
                    stats.repair_without_payload += 1;
                } else {
                    stats.retransmissions_without_payload += 1;
                }
                continue;
            };
            if !send_datagram(&sock, &tx_buf, config.to, &mut stats).await {
                continue;
            }
            if let Some(c) = &mut capture {
                c.sent(media_addr, config.to, &tx_buf);
            }
            match written {
                Written::Padding => stats.padding_sent += 1,
                Written::Retransmission => stats.retransmissions_sent += 1,
                Written::Repair => {
                    stats.repair_sent += 1;
                    stats.repair_bytes += tx_buf.len() as u64;
                }
                Written::Media { padding } => {
                    if padding > 0 {
                        stats.padded_media_sent += 1;
                        stats.media_padding_bytes += padding as u64;
                    }
                }
            }
        }
        if now >= next_report {
            next_report = now + REPORT_INTERVAL;
            sr_buf.clear();
            let st = session.stats();
            // RFC 3550 §6.4.1: counts wrap modulo 2^32; the octet count is
            // payload. Padding counts when it goes on this SSRC; repair
            // packets never do (they are RTX).
            let packets = if rtx_stream {
                st.packets_sent - st.padding_packets_sent
            } else {
                st.packets_sent
            } - st.repair_packets_sent;
            let built = wire::encode_sender_report(
                config.wire.media_ssrc,
                clock.ntp_of(now),
                wire::rtp_timestamp(now, config.wire.rtp_timestamp_offset),
                packets as u32,
                st.payload_sent as u32,
                &[],
                &mut sr_buf,
            )
            // RFC 3550 §6.1: the compound carries the sender's CNAME.
            .and_then(|_| wire::encode_sdes_cname(&sdes_ssrcs, wire::DEFAULT_CNAME, &mut sr_buf));
            if built.is_ok() {
                let out_sock = rtcp_sock.as_ref().unwrap_or(&sock);
                let to = config.rtcp.unwrap_or(config.to);
                match out_sock.try_send_to(&sr_buf, to) {
                    Ok(_) => {
                        stats.sender_reports += 1;
                        if let Some(c) = &mut capture {
                            c.sent(rtcp_addr, to, &sr_buf);
                        }
                    }
                    Err(_) => stats.send_errors += 1,
                }
            }
        }
        while now >= next_sample {
            let sent = session.stats().bytes_sent;
            let cc = session.controller();
            let e = cc.estimate();
            out.timeseries(&TimeseriesRow {
                time: next_sample,
                flow: "media",
                send_rate: Some(Bytes::new(sent - prev_bytes) / SAMPLE_INTERVAL),
                goodput: None,
                target: Some(cc.target_bitrate()),
                estimate: e.bandwidth,
                cwnd: cc.send_budget().cwnd,
                srtt: e.rtt,
                queue: None,
                queue_delay: None,
                capacity: None,
                ..TimeseriesRow::default()
            })?;
            prev_bytes = sent;
            next_sample += SAMPLE_INTERVAL;
        }

        let mut wake = now + STOP_POLL;
        if let Some(t) = session.poll_timeout(now) {
            wake = wake.min(t);
        }
        wake = wake.min(next_sample).min(next_report);
        if let Some(e) = end {
            wake = wake.min(e);
        }
        let deadline = tokio::time::Instant::from_std(clock.to_std(wake));
        tokio::select! {
            r = sock.recv_from(&mut rx_buf) => {
                let Ok((n, from)) = r else {
                    // ICMP errors surface here on some systems: count and go on.
                    stats.send_errors += 1;
                    continue;
                };
                if let Some(c) = &mut capture {
                    c.received(media_addr, from, &rx_buf[..n]);
                }
                accept_rtcp(&rx_buf[..n], from, &config, &clock, &mut decoder, &mut session, &mut stats);
            }
            r = crate::recv_opt(rtcp_sock.as_ref(), &mut rtcp_buf) => {
                let Ok((n, from)) = r else {
                    stats.send_errors += 1;
                    continue;
                };
                if let Some(c) = &mut capture {
                    c.received(rtcp_addr, from, &rtcp_buf[..n]);
                }
                accept_rtcp(&rtcp_buf[..n], from, &config, &clock, &mut decoder, &mut session, &mut stats);
            }
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
    if let Some(c) = capture {
        c.finish()?;
    }
    let elapsed = clock.now() - start;
    let report = SendReport {
        stats,
        session: *session.stats(),
        elapsed,
        final_target: session.target_bitrate(),
        recovery: (session.recovery().name() != "none").then(|| session.recovery_stats()),
    };
    out.finish(&report)?;
    Ok(report)
}

/// What [`RtpStreams::write`] put in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// A first transmission on the media stream, with this many bytes of
    /// media padding (a packet train's; `wire::encode_media`).
    Media { padding: usize },
    /// A retransmission, on the RTX stream.
    Retransmission,
    /// A layer plan's repair packet, on the RTX stream.
    Repair,
    /// Probe padding, on the RTX stream or, without one, the media stream.
    Padding,
}

/// The sender's two RTP streams: which one each transmit goes on, and the
/// sequence numbers of each (sans IO: `run` puts what [`Self::write`]
/// writes on the socket).
///
/// The media stream's RTP sequence number is the session's media sequence
/// number (`Transmit::media_seq`, what NACKs name) plus `media_offset`, the
/// numbers probe padding took on the media SSRC (only without an RTX
/// stream, when nothing is NACKed). Retransmissions and repair packets are
/// copies of media packets that already had their number: they go on the
/// RTX stream with the original's number as OSN (RFC 4588 §4) and never
/// move `next_media_seq`, so padding on the media SSRC never takes a number
/// a media packet has or will have.
#[derive(Debug)]
pub(crate) struct RtpStreams {
    wire: WireConfig,
    /// No RTX stream ([`SendConfig::rtx_stream`]): probe padding goes on
    /// the media SSRC, as RFC 3550 §5.1 padding-only packets of the media
    /// stream (a receiver offered no RTX payload type drops the packets of
    /// one).
    pad_on_media: bool,
    /// RFC 4588 §4: the RTX stream numbers its packets itself (RFC 3550
    /// §5.1 asks for a random start; like the media stream's, ours start at
    /// 0).
    rtx_seq: u16,
    /// Media sequence numbers taken by padding on the media SSRC so far.
    media_offset: u64,
    /// The media sequence number after the last first transmission's.
    next_media_seq: u64,
}

impl RtpStreams {
    pub(crate) fn new(wire: WireConfig, rtx_stream: bool) -> RtpStreams {
        RtpStreams {
            wire,
            pad_on_media: !rtx_stream,
            rtx_seq: 0,
            media_offset: 0,
            next_media_seq: 0,
        }
    }

    /// Writes `tx` into `out` as the datagram of its stream and returns
    /// which it was; `None` (nothing written) for a retransmission or
    /// repair packet of a `real_source` whose `payload` is gone. `payload`
    /// and `capture_ntp` as `wire::encode_media` takes them.
    pub(crate) fn write(
        &mut self,
        tx: &Transmit,
        payload: Option<&[u8]>,
        capture_ntp: u64,
        real_source: bool,
        out: &mut Vec<u8>,
    ) -> Result<Option<Written>, WireError> {
        let written = match tx.kind {
            PacketKind::Padding if self.pad_on_media => {
                let seq = (self.next_media_seq + self.media_offset) as u16;
                self.media_offset += 1;
                wire::encode_media_padding(&self.wire, tx, seq, out)?;
                Written::Padding
            }
            PacketKind::Padding => {
                let rtx_seq = self.next_rtx_seq();
                wire::encode_padding(&self.wire, tx, rtx_seq, out)?;
                Written::Padding
            }
            PacketKind::Retransmission | PacketKind::Fec => {
                if payload.is_none() && real_source {
                    return Ok(None);
                }
                // The original went out `media_offset` numbers later than
                // the session counts it: the offset then, as no padding
                // comes between a frame's data packets and their repair
                // packets (padding only fills an empty queue) and none is
                // on the media SSRC with recovery on.
                let copy = Transmit {
                    media_seq: tx.media_seq + self.media_offset,
                    ..*tx
                };
                let rtx_seq = self.next_rtx_seq();
                wire::encode_rtx(&self.wire, &copy, rtx_seq, capture_ntp, payload, out)?;
                if tx.kind == PacketKind::Fec {
                    Written::Repair
                } else {
                    Written::Retransmission
                }
            }
            PacketKind::Media => {
                self.next_media_seq = tx.media_seq + 1;
                let shifted = Transmit {
                    media_seq: tx.media_seq + self.media_offset,
                    ..*tx
                };
                wire::encode_media(&self.wire, &shifted, capture_ntp, payload, out)?;
                // What `encode_media` wrote beyond the packet's own size.
                let own = wire::rtp_overhead(&self.wire) - wire::IPV4_HEADER - wire::UDP_HEADER
                    + tx.packet.payload.get() as usize;
                Written::Media {
                    padding: out.len().saturating_sub(own),
                }
            }
        };
        Ok(Some(written))
    }

    /// The RTX stream's next sequence number, taken.
    fn next_rtx_seq(&mut self) -> u16 {
        let seq = self.rtx_seq;
        self.rtx_seq = seq.wrapping_add(1);
        seq
    }
}

/// Puts one RTP datagram on the wire, counting it (or the error); whether
/// it went out.
async fn send_datagram(
    sock: &tokio::net::UdpSocket,
    datagram: &[u8],
    to: SocketAddr,
    stats: &mut SendStats,
) -> bool {
    let sent = match sock.try_send_to(datagram, to) {
        Ok(n) => Some(n),
        // The socket buffer is full: wait for room rather than drop.
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
            sock.send_to(datagram, to).await.ok()
        }
        Err(_) => None,
    };
    match sent {
        Some(n) => {
            stats.datagrams_sent += 1;
            stats.bytes_sent += n as u64;
            true
        }
        None => {
            stats.send_errors += 1;
            false
        }
    }
}

/// Writes the SDP a stock receiver needs to decode an H.264 stream sent to `to`.
fn write_sdp(
    path: &Path,
    encoder: &NetEncoder,
    to: SocketAddr,
    wire: &WireConfig,
    rtx: Option<RtxSdp>,
    nack: bool,
) -> Result<(), NetError> {
    let NetEncoder::H264(src) = encoder else {
        return Err(NetError::Config {
            field: "--sdp".into(),
            message: "needs an H.264 --source (a synthetic stream carries no video)".into(),
        });
    };
    let (Some(sps), Some(pps)) = (src.sps(), src.pps()) else {
        return Err(NetError::Config {
            field: "--source".into(),
            message: "the H.264 stream has no SPS/PPS to put in the SDP".into(),
        });
    };
    let sdp = H264Sdp {
        addr: to.ip(),
        port: to.port(),
        payload_type: wire.payload_type,
        sps,
        pps,
        rtx,
        nack,
        media_ssrc: wire.media_ssrc,
        extension_ids: [
            wire.transport_seq_id,
            wire.abs_capture_time_id,
            wire.frame_info_id,
        ],
    }
    .to_sdp()
    .map_err(|e| NetError::Config {
        field: "--sdp".into(),
        message: e.to_string(),
    })?;
    std::fs::write(path, sdp).map_err(|e| NetError::io(path, e))
}

/// A datagram on one of the sender's sockets: RTCP from the receiver (`to`,
/// or with `--rtcp` any port of that host) is handled; anything else is
/// counted.
fn accept_rtcp<E: EncoderModel>(
    datagram: &[u8],
    from: SocketAddr,
    config: &SendConfig,
    clock: &Clock,
    decoder: &mut FeedbackDecoder,
    session: &mut SenderSession<E>,
    stats: &mut SendStats,
) {
    let rtcp_host = config.rtcp.is_some_and(|r| r.ip() == from.ip());
    if from != config.to && !rtcp_host {
        stats.unexpected_source += 1;
        return;
    }
    let now = clock.now();
    handle_rtcp(
        datagram,
        now,
        clock.ntp_of(now),
        config.wire.media_ssrc,
        decoder,
        session,
        stats,
    );
}

/// One RTCP datagram from the peer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn handle_rtcp<E: EncoderModel>(
    datagram: &[u8],
    now: Instant,
    now_ntp: u64,
    media_ssrc: u32,
    decoder: &mut FeedbackDecoder,
    session: &mut SenderSession<E>,
    stats: &mut SendStats,
) {
    if !wire::is_rtcp(datagram) {
        stats.malformed += 1;
        return;
    }
    let msgs = match wire::decode_rtcp(datagram) {
        Ok(m) => m,
        Err(_) => {
            stats.malformed += 1;
            return;
        }
    };
    stats.rtcp_received += 1;
    stats.rtcp_ignored += msgs.unknown as u64;
    stats.key_frame_requests += msgs.plis.len() as u64;
    // Generic NACKs about our stream, as one request (RFC 4585 §6.2.1); the
    // numbers are the media stream's RTP sequence numbers.
    let mut nack = Nack {
        report_time: now,
        seqs: Vec::new(),
    };
    for n in &msgs.nacks {
        if n.media_ssrc == media_ssrc {
            stats.nacks_received += 1;
            nack.seqs.extend_from_slice(&n.seqs);
        } else {
            stats.rtcp_ignored += 1;
        }
    }
    if !nack.seqs.is_empty() {
        session.handle_nack(now, &nack);
    }
    for rr in &msgs.receiver_reports {
        let Some(block) = rr.reports.iter().find(|b| b.ssrc == media_ssrc) else {
            continue;
        };
        let block = ReceptionStats::from(block);
        stats.receiver_reports += 1;
        stats.rr_fraction_lost = u64::from(block.fraction_lost);
        stats.rr_cumulative_lost = i64::from(block.cumulative_lost);
        stats.rr_jitter_rtp = u64::from(block.jitter);
        if let Some(rtt) = reports::rtt_from_report(now_ntp, &block) {
            stats.rr_rtt_us = rtt.as_micros();
        }
    }
    let highest_sent = session.stats().packets_sent.saturating_sub(1);
    if let Some(fb) = decoder.feedback(&msgs, highest_sent) {
        stats.feedback_reports += 1;
        session.handle_feedback(now, &fb);
    }
}

/// The sender's own output files.
struct Outputs {
    dir: Option<PathBuf>,
    ts: Option<BufWriter<File>>,
}

impl Outputs {
    fn open(dir: Option<&Path>) -> Result<Outputs, NetError> {
        let Some(dir) = dir else {
            return Ok(Outputs {
                dir: None,
                ts: None,
            });
        };
        std::fs::create_dir_all(dir).map_err(|e| NetError::io(dir, e))?;
        let path = dir.join("send_timeseries.csv");
        let mut ts = BufWriter::new(File::create(&path).map_err(|e| NetError::io(&path, e))?);
        writeln!(ts, "{}", output::TIMESERIES_HEADER).map_err(|e| NetError::io(&path, e))?;
        Ok(Outputs {
            dir: Some(dir.to_path_buf()),
            ts: Some(ts),
        })
    }

    fn timeseries(&mut self, row: &TimeseriesRow<'_>) -> Result<(), NetError> {
        if let (Some(ts), Some(dir)) = (&mut self.ts, &self.dir) {
            output::write_timeseries_row(ts, row)
                .map_err(|e| NetError::io(&dir.join("send_timeseries.csv"), e))?;
        }
        Ok(())
    }

    fn finish(&mut self, report: &SendReport) -> Result<(), NetError> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        if let Some(ts) = &mut self.ts {
            ts.flush()
                .map_err(|e| NetError::io(&dir.join("send_timeseries.csv"), e))?;
        }
        let v = report.to_json();
        let path = dir.join("send_summary.json");
        let text =
            serde_json::to_string_pretty(&v).map_err(|e| NetError::Internal(e.to_string()))?;
        std::fs::write(&path, text + "\n").map_err(|e| NetError::io(&path, e))
    }
}

#[cfg(test)]
mod tests {
    use rtcc_core::media::packetizer::MediaPacket;

    use super::*;
    use crate::wire::media::tests::{padding_transmit, transmit};
    use crate::wire::RtpMedia;

    /// Media packet `media_seq` (transport `seq`) of a frame.
    fn media(seq: u64, media_seq: u64) -> Transmit {
        Transmit {
            media_seq,
            ..transmit(seq, 100)
        }
    }

    /// The repair copy of media packet `media_seq`, with transport `seq`.
    fn repair(seq: u64, media_seq: u64) -> Transmit {
        let data = media(seq, media_seq);
        Transmit {
            kind: PacketKind::Fec,
            packet: MediaPacket {
                repair: true,
                ..data.packet
            },
            ..data
        }
    }

    fn padding(seq: u64) -> Transmit {
        // The session gives padding the next media number, which it does
        // not use (`Transmit::media_seq`).
        padding_transmit(seq, 300)
    }

    /// Writes each transmit and decodes what went out (`None`: nothing).
    fn write_all(
        streams: &mut RtpStreams,
        txs: &[Transmit],
        payload: Option<&[u8]>,
        real_source: bool,
    ) -> Vec<Option<(Written, Vec<u8>)>> {
        txs.iter()
            .map(|tx| {
                let mut out = Vec::new();
                let w = streams
                    .write(tx, payload, 0, real_source, &mut out)
                    .unwrap();
                w.map(|w| (w, out))
            })
            .collect()
    }

    fn decode(d: &[u8]) -> RtpMedia<'_> {
        wire::decode_media(&WireConfig::default(), d).unwrap()
    }

    #[test]
    fn a_repair_packet_is_an_rtx_copy_of_its_data_packet() {
        let cfg = WireConfig::default();
        let mut streams = RtpStreams::new(cfg, true);
        // A frame of three data packets, a retransmission of 1, the repair
        // copies of 0..3, then the next frame's first packet.
        let txs = [
            media(0, 0),
            media(1, 1),
            media(2, 2),
            Transmit {
                kind: PacketKind::Retransmission,
                ..media(3, 1)
            },
            repair(4, 0),
            repair(5, 1),
            repair(6, 2),
            media(7, 3),
        ];
        let out = write_all(&mut streams, &txs, Some(b"payload"), true);
        let kinds: Vec<Written> = out.iter().map(|o| o.as_ref().unwrap().0).collect();
        assert_eq!(
            kinds,
            [
                Written::Media { padding: 0 },
                Written::Media { padding: 0 },
                Written::Media { padding: 0 },
                Written::Retransmission,
                Written::Repair,
                Written::Repair,
                Written::Repair,
                Written::Media { padding: 0 },
            ]
        );
        for (i, (tx, o)) in txs.iter().zip(&out).enumerate() {
            let (_, d) = o.as_ref().unwrap();
            let m = decode(d);
            assert_eq!(m.transport_seq, Some(i as u16), "{i}");
            assert_eq!(m.payload, b"payload", "{i}");
            if tx.kind == PacketKind::Media {
                assert_eq!((m.ssrc, m.payload_type), (cfg.media_ssrc, cfg.payload_type));
                assert_eq!((m.sequence, m.original_seq), (tx.media_seq as u16, None));
                continue;
            }
            // Copies: the RTX stream, its own numbers 0, 1, 2, 3, and the
            // copied packet's number as OSN; only the repairs carry R.
            assert_eq!(
                (m.ssrc, m.payload_type),
                (cfg.rtx_ssrc, cfg.rtx_payload_type)
            );
            assert_eq!(m.sequence, i as u16 - 3, "{i}");
            assert_eq!(m.original_seq, Some(tx.media_seq as u16), "{i}");
            assert_eq!(m.is_repair(), tx.kind == PacketKind::Fec, "{i}");
        }
        // The copies left the media numbering where the data packets put it.
        assert_eq!(streams.next_media_seq, 4);
        assert_eq!((streams.media_offset, streams.rtx_seq), (0, 4));
    }

    #[test]
    fn padding_on_the_media_ssrc_never_takes_a_media_number() {
        // No RTX stream: padding takes media numbers; repair copies still
        // go on the RTX stream, and none moves the media numbering back.
        let cfg = WireConfig::default();
        let mut streams = RtpStreams::new(cfg, false);
        let txs = [
            media(0, 0),
            media(1, 1),
            media(2, 2),
            repair(3, 0),
            repair(4, 1),
            repair(5, 2),
            padding(6),
            media(7, 3),
            repair(8, 3),
            padding(9),
            padding(10),
            media(11, 4),
        ];
        let out = write_all(&mut streams, &txs, None, false);
        let mut on_media = Vec::new();
        let mut osns = Vec::new();
        for (tx, o) in txs.iter().zip(&out) {
            let (_, d) = o.as_ref().unwrap();
            let m = decode(d);
            if m.ssrc == cfg.media_ssrc {
                on_media.push((m.sequence, tx.kind));
            } else {
                assert_eq!((m.ssrc, tx.kind), (cfg.rtx_ssrc, PacketKind::Fec));
                assert!(m.is_repair() && m.payload_len() == 100);
                osns.push(m.original_seq.unwrap());
            }
        }
        // One media number per datagram of the media SSRC, in order: no
        // padding reuses a media packet's number.
        let seqs: Vec<u16> = on_media.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, (0..8).collect::<Vec<u16>>(), "{on_media:?}");
        let kinds: Vec<PacketKind> = on_media.iter().map(|(_, k)| *k).collect();
        use PacketKind::{Media as M, Padding as P};
        assert_eq!(kinds, [M, M, M, P, M, P, P, M]);
        // Each copy names the RTP number its original went out with: media
        // 3 went out as 4, after one padding packet.
        assert_eq!(osns, [0, 1, 2, 4]);
        assert_eq!((streams.next_media_seq, streams.media_offset), (5, 3));
    }

    #[test]
    fn a_copy_without_its_payload_is_not_sent_from_a_real_source() {
        let mut streams = RtpStreams::new(WireConfig::default(), true);
        let txs = [
            repair(0, 0),
            Transmit {
                kind: PacketKind::Retransmission,
                ..media(1, 0)
            },
        ];
        // An H.264 file that no longer holds the payload: nothing written,
        // no RTX number taken.
        assert!(write_all(&mut streams, &txs, None, true)
            .iter()
            .all(Option::is_none));
        assert_eq!(streams.rtx_seq, 0);
        // A synthetic source has none to lose: zeros.
        let out = write_all(&mut streams, &txs, None, false);
        let (w, d) = out[0].as_ref().unwrap();
        assert_eq!(*w, Written::Repair);
        assert!(decode(d).payload.iter().all(|&b| b == 0));
        assert_eq!(streams.rtx_seq, 2);
    }
}
