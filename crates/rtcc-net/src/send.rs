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
use rtcc_core::recovery::{LossRecovery as _, RecoveryStats};
use rtcc_core::session::sender::{SenderConfig, SenderSession, Transmit};
use rtcc_core::{rng, Bitrate, Bytes, CongestionController, Duration, Instant, PacketKind};
use rtcc_sim::output::{self, TimeseriesRow};
use rtcc_sim::MediaSetup;
use serde_json::json;

use crate::clock::Clock;
use crate::h264::source::{H264FileSource, H264SourceConfig};
use crate::reports::{self, REPORT_INTERVAL};
use crate::sdp::{H264Sdp, RtxSdp};
use crate::wire::{self, FeedbackDecoder, ReceptionStats, WireConfig};
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
    H264(Box<H264FileSource>),
}

impl EncoderModel for NetEncoder {
    fn set_target(&mut self, now: Instant, target: Bitrate) {
        match self {
            NetEncoder::Synthetic(e) => e.set_target(now, target),
            NetEncoder::H264(e) => e.set_target(now, target),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            NetEncoder::Synthetic(e) => e.poll_timeout(),
            NetEncoder::H264(e) => e.poll_timeout(),
        }
    }
    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        match self {
            NetEncoder::Synthetic(e) => e.produce(now),
            NetEncoder::H264(e) => e.produce(now),
        }
    }
    fn current_target(&self) -> Bitrate {
        match self {
            NetEncoder::Synthetic(e) => e.current_target(),
            NetEncoder::H264(e) => e.current_target(),
        }
    }
    fn request_key_frame(&mut self) {
        match self {
            NetEncoder::Synthetic(e) => e.request_key_frame(),
            NetEncoder::H264(e) => e.request_key_frame(),
        }
    }
    fn packet_payloads(&self, frame_id: u64) -> Option<&[Bytes]> {
        match self {
            NetEncoder::Synthetic(e) => e.packet_payloads(frame_id),
            NetEncoder::H264(e) => e.packet_payloads(frame_id),
        }
    }
}

impl NetEncoder {
    /// Bytes of packet `index` of a frame (`None` = synthetic zeros).
    fn payload(&self, frame_id: u64, index: u32) -> Option<&[u8]> {
        match self {
            NetEncoder::Synthetic(_) => None,
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
    let encoder = match &config.source {
        Source::Synthetic => NetEncoder::Synthetic(Box::new(
            ParametricEncoder::new(
                start,
                config.media.encoder.clone(),
                rng::stream(config.seed, 0),
            )
            .map_err(|e| NetError::Config {
                field: "encoder".into(),
                message: e.to_string(),
            })?,
        )),
        Source::H264 { path, fps, looped } => {
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
    if let Some(path) = &config.sdp {
        let rtx = (!config.media.sender.recovery.is_none()).then_some(RtxSdp {
            payload_type: config.wire.rtx_payload_type,
            ssrc: config.wire.rtx_ssrc,
            media_ssrc: config.wire.media_ssrc,
        });
        write_sdp(path, &encoder, config.to, &config.wire, rtx)?;
    }
    // The session charges each packet what it really costs on the wire.
    let packetizer = Packetizer {
        header_overhead: Bytes::new(wire::rtp_overhead(&config.wire) as u64),
        ..config.media.sender.packetizer
    };
    // A real H.264 bitstream cannot skip a frame after encoding (the next
    // frame references it, and payloads are looked up by the encoder's frame
    // id): no frame dropping at the sender then (docs/algorithms/pacer.md).
    let frame_drop_queue_time = match encoder {
        NetEncoder::H264(_) => None,
        NetEncoder::Synthetic(_) => config.media.sender.frame_drop_queue_time,
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
    // Both SSRCs this sender uses (padding and retransmissions go on the RTX
    // one) are described with the one CNAME.
    let sdes_ssrcs = [config.wire.media_ssrc, config.wire.rtx_ssrc];
    // RFC 4588 §4: the RTX stream has its own sequence numbers (RFC 3550 §5.1
    // asks for a random start; like the media stream's, ours start at 0).
    let mut rtx_seq: u16 = 0;
    let synthetic = matches!(config.source, Source::Synthetic);
    // Without loss recovery no RTX stream is offered (sdp.rs), so probe
    // padding goes on the media SSRC, as RFC 3550 §5.1 padding-only packets
    // of the media stream, each taking the next media sequence number:
    // media packets then go out `media_offset` numbers later than the
    // session counts them (no NACK can name them: recovery is off).
    let pad_on_media = config.media.sender.recovery.is_none();
    // A media datagram's size beyond its payload, unpadded.
    let media_header = wire::rtp_overhead(&config.wire) - wire::IPV4_HEADER - wire::UDP_HEADER;
    let mut media_offset: u64 = 0;
    let mut next_media_seq: u64 = 0;

    loop {
        let now = clock.now();
        if stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
            break;
        }
        session.on_timeout(now);
        while let Some(tx) = session.poll_transmit(now) {
            if tx.kind == PacketKind::Padding {
                // With recovery, the RTX stream's next number: padding must
                // not take a media sequence number the receiver would NACK
                // (wire/media.rs).
                let encoded = if pad_on_media {
                    let seq = (next_media_seq + media_offset) as u16;
                    media_offset += 1;
                    wire::encode_media_padding(&config.wire, &tx, seq, &mut tx_buf)
                } else {
                    let r = wire::encode_padding(&config.wire, &tx, rtx_seq, &mut tx_buf);
                    rtx_seq = rtx_seq.wrapping_add(1);
                    r
                };
                if let Err(e) = encoded {
                    return Err(NetError::Internal(format!(
                        "encoding padding {}: {e}",
                        tx.seq
                    )));
                }
                if send_datagram(&sock, &tx_buf, config.to, &mut stats).await {
                    stats.padding_sent += 1;
                }
                continue;
            }
            let payload = session
                .encoder()
                .payload(tx.packet.frame_id, tx.packet.index);
            let ntp = clock.ntp_of(tx.packet.capture_time);
            let encoded = if tx.kind == PacketKind::Retransmission {
                if payload.is_none() && !synthetic {
                    // Zeros would corrupt the video: better lost than wrong.
                    stats.retransmissions_without_payload += 1;
                    continue;
                }
                let r = wire::encode_rtx(&config.wire, &tx, rtx_seq, ntp, payload, &mut tx_buf);
                rtx_seq = rtx_seq.wrapping_add(1);
                r
            } else {
                next_media_seq = tx.media_seq + 1;
                let shifted = Transmit {
                    media_seq: tx.media_seq + media_offset,
                    ..tx
                };
                wire::encode_media(&config.wire, &shifted, ntp, payload, &mut tx_buf)
            };
            if let Err(e) = encoded {
                return Err(NetError::Internal(format!(
                    "encoding packet {}: {e}",
                    tx.seq
                )));
            }
            if !send_datagram(&sock, &tx_buf, config.to, &mut stats).await {
                continue;
            }
            match tx.kind {
                PacketKind::Retransmission => stats.retransmissions_sent += 1,
                PacketKind::Media => {
                    // What `encode_media` wrote beyond the packet's own size.
                    let own = media_header + tx.packet.payload.get() as usize;
                    let padding = tx_buf.len().saturating_sub(own);
                    if padding > 0 {
                        stats.padded_media_sent += 1;
                        stats.media_padding_bytes += padding as u64;
                    }
                }
                // Padding went out above; FEC is not sent here.
                PacketKind::Padding | PacketKind::Fec => {}
            }
        }
        if now >= next_report {
            next_report = now + REPORT_INTERVAL;
            sr_buf.clear();
            let st = session.stats();
            // RFC 3550 §6.4.1: counts wrap modulo 2^32; the octet count is
            // payload. Padding counts when it goes on this SSRC.
            let packets = if pad_on_media {
                st.packets_sent
            } else {
                st.packets_sent - st.padding_packets_sent
            };
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
                match out_sock.try_send_to(&sr_buf, config.rtcp.unwrap_or(config.to)) {
                    Ok(_) => stats.sender_reports += 1,
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
                accept_rtcp(&rx_buf[..n], from, &config, &clock, &mut decoder, &mut session, &mut stats);
            }
            r = crate::recv_opt(rtcp_sock.as_ref(), &mut rtcp_buf) => {
                let Ok((n, from)) = r else {
                    stats.send_errors += 1;
                    continue;
                };
                accept_rtcp(&rtcp_buf[..n], from, &config, &clock, &mut decoder, &mut session, &mut stats);
            }
            () = tokio::time::sleep_until(deadline) => {}
        }
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
fn handle_rtcp<E: EncoderModel>(
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
