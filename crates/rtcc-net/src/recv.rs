//! `rtcc recv`: a media receiver session over real UDP (DESIGN §5).
//!
//! RTP media from the sender goes to the core [`ReceiverSession`] (feedback
//! builder and player), exactly as in the simulator; its feedback reports go
//! back as RTCP (transport-wide CC feedback or RFC 8888, plus a PLI while the
//! decoding chain is broken). At the end the run writes the simulator's
//! `summary.json`, `timeseries.csv` and `frames.csv` (DESIGN §4.2), so real and
//! simulated runs are read by the same tools.
//!
//! With loss recovery on, the session's NACKs go back as RTCP generic NACKs
//! (RFC 4585 §6.2.1) in the same compound datagram as the feedback when both
//! are due, and RFC 4588 retransmissions (the RTX payload type) reach the
//! session with their original sequence number.
//!
//! A layer plan's repair packets come as RFC 4588 RTX packets too, sent
//! unasked, marked by the frame-info R flag (module doc of `wire::media`,
//! "Repair copies"). They are taken whether or not loss recovery is on
//! here, on the RTX stream locked onto as for retransmissions, and reach
//! the session as the simulator hands it a repair packet: under the
//! original's media sequence number, as a repair (`PacketMeta::repair`), so
//! the player keeps whichever copy came first and counts the other as a
//! duplicate, and a data packet the copy restored is not NACKed. They count
//! in `repair_packets` (not `rtx_packets`), those that restored a missing
//! data packet in `repair_recovered`.
//!
//! Probe padding (padding-only RTP packets on the retransmission stream,
//! [`wire::encode_padding`]) is recorded with its transport-wide sequence
//! number (`ReceiverSession::on_padding`), so the congestion feedback reports
//! it like media; it never reaches the media path, the reception statistics of
//! the media stream or the NACK requester.
//!
//! Media padded for a packet train (RTP padding in a media packet, module doc
//! of `wire::media`, "Media padding") needs nothing of its own here: the
//! parser strips the padding, so the player gets the payload the sender
//! packetised (the frame's size and `payload_received`, the goodput, leave
//! the padding out), while the bytes received (`ReceiverSession::on_packet`'s
//! `wire_size`, the datagram + IPv4 + UDP) count it, as the simulator's
//! receiver counts the padded size the sender charged. The congestion
//! feedback reports arrival times only, so it is the same either way.
//!
//! The receiver locks onto the first media stream (SSRC) whose packet passes
//! every check (payload type and the extensions the session needs), and
//! onto the first retransmission stream after it, and answers the address
//! that stream came from. Packets of the stream from another address are
//! dropped until that address takes over (the sender silent for a second,
//! then a run of valid in-order media from the new address: `takes_over`);
//! other streams, RTCP and anything that does not parse are dropped and
//! counted, never a panic.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rtcc_core::feedback::{Nack, WireFeedback};
use rtcc_core::media::player::FrameRecord;
use rtcc_core::session::receiver::{ReceiverConfig, ReceiverSession};
use rtcc_core::summary::{round3, FlowSummary, RecoveryCounters, RunSummary};
use rtcc_core::{Bytes, Duration, Instant};
use rtcc_sim::metrics::DelayHistogram;
use rtcc_sim::output::{self, TimeseriesRow};
use serde_json::Value;

use crate::capture::Capture;
use crate::clock::Clock;
use crate::plain::{self, PlainFrames, PlainOutcome};
use crate::reports::{ReceptionStatistics, REPORT_INTERVAL};
use crate::wire::{self, FeedbackEncoder, SeqUnwrapper, Unwrapper, WireConfig};
use crate::NetError;

/// Interval of the time series (as the simulator's default).
const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);
/// Longest sleep between checks of the stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);
/// Receive buffer: the largest UDP payload.
const MAX_DATAGRAM: usize = 65_536;
/// IPv4 + UDP headers, added to a datagram's length to give the size the
/// simulator charges on the wire.
const IP_UDP_HEADERS: u64 = (wire::IPV4_HEADER + wire::UDP_HEADER) as u64;
/// Name of the flow in the output files.
const FLOW: &str = "media";
/// A transport sequence number more than this far ahead of the highest one
/// seen is not believed until the next packet follows on from it (RFC 3550
/// Appendix A.1, `MAX_DROPOUT`, and its `bad_seq` probation): one stray or
/// crafted packet must not move the stream's window (the feedback would report
/// thousands of packets lost and every later packet as reordered).
const MAX_DROPOUT: u64 = 3_000;
/// The same check for frame ids: 300 frames (10 s at 30 fps; our choice, as
/// frame ids have no RFC bound). A frame id far ahead would make the player
/// give up every frame before it and drop the real ones as late.
const MAX_FRAME_JUMP: u64 = 300;

/// Settings of `rtcc recv`.
#[derive(Debug, Clone)]
pub struct RecvConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Feedback interval and player settings.
    pub receiver: ReceiverConfig,
    /// Wire settings (must match the sender's).
    pub wire: WireConfig,
    /// Stop after this long (`None` = until stopped).
    pub duration: Option<Duration>,
    /// Stop after this long without media once some has arrived (`None` = never).
    pub idle_timeout: Option<Duration>,
    /// Where to write `summary.json`, `timeseries.csv`, `frames.csv`.
    pub out_dir: Option<PathBuf>,
    /// Accept media (and sender reports) from this address only; `None`:
    /// the first valid sender, with the takeover rule of `takes_over`.
    pub peer: Option<SocketAddr>,
    /// The sender's RTCP address when it does not multiplex RTCP on its RTP
    /// port (RFC 5761 §4): feedback and reports go there, and RTCP is
    /// accepted from that host (a stock sender's RTCP leaves from a port of
    /// its own). `None`: RTCP goes to, and comes from, the media's address.
    pub rtcp: Option<SocketAddr>,
    /// A local address of our own for RTCP, when we do not multiplex it
    /// either (RFC 5761 §4; RFC 3550 §11's RTP port + 1 by convention): our
    /// RTCP leaves from there and RTCP is read there too (media never is).
    pub rtcp_listen: Option<SocketAddr>,
    /// Write every datagram received and sent to this pcap file
    /// (`rtcc recv --pcap`; docs/net.md, "Packet captures").
    pub pcap: Option<PathBuf>,
}

/// Whom `on_datagram` hears: the `--peer` pin and the `--rtcp` address.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Addrs {
    pub(crate) pinned: Option<SocketAddr>,
    pub(crate) rtcp: Option<SocketAddr>,
}

/// Counters of a receiver run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecvStats {
    /// Datagrams received (all).
    pub datagrams: u64,
    /// Media packets handed to the session.
    pub media_packets: u64,
    /// Datagrams that did not parse as our RTP media (dropped).
    pub malformed: u64,
    /// RTCP datagrams other than the followed stream's sender reports (dropped).
    pub rtcp_dropped: u64,
    /// Sender reports of the followed stream received (RFC 3550 §6.4.1).
    pub sender_reports: u64,
    /// Receiver reports sent (RFC 3550 §6.4.2).
    pub receiver_reports: u64,
    /// Media of another SSRC than the one locked onto, retransmissions of
    /// another SSRC than the retransmission stream locked onto, and
    /// retransmissions or padding before any media (dropped).
    pub foreign_ssrc: u64,
    /// RFC 4588 retransmissions handed to the session (in `media_packets`
    /// too; repair copies are `repair_packets`).
    pub rtx_packets: u64,
    /// A layer plan's repair packets (RFC 4588 RTX packets with the
    /// frame-info R flag) handed to the session (in `media_packets` too).
    pub repair_packets: u64,
    /// Of `repair_packets`, those that brought a data packet the player was
    /// missing: its original was lost (or is still on its way, with
    /// reordering). The session's `repair_useful`.
    pub repair_recovered: u64,
    /// Padding-only packets (probe padding, RFC 3550 §5.1) recorded for the
    /// congestion feedback (not in `media_packets`).
    pub padding_packets: u64,
    /// Generic NACKs sent (RFC 4585 §6.2.1; one per request of the session,
    /// in as many RTCP packets as its numbers need).
    pub nacks_sent: u64,
    /// Packets of the followed streams from another address than the
    /// sender's, while that address has not taken over (dropped; see
    /// `PEER_SILENCE` and `TAKEOVER_RUN`).
    pub unexpected_source: u64,
    /// Sender changes: another address took over the stream after the
    /// sender fell silent (RFC 3550 §8.2).
    pub peer_changes: u64,
    /// Media or padding without the transport-wide sequence number, and
    /// media with only one of rtcc's frame-info and capture-time extensions
    /// (dropped: the session needs them).
    pub missing_extension: u64,
    /// Media without rtcc's frame-info and capture-time extensions (a
    /// standard sender), framed by RTP timestamp and marker bit
    /// (`crate::plain`); in `media_packets` too.
    pub plain_packets: u64,
    /// Media of a standard sender whose payload is not RFC 6184 H.264
    /// (dropped).
    pub not_h264: u64,
    /// Media of a standard sender that could not be placed in a frame: its
    /// frame is older than the frames remembered, or it comes before its
    /// frame's first packet (dropped).
    pub unplaceable: u64,
    /// Duplicate media or padding packets (same transport sequence number).
    pub duplicates: u64,
    /// Packets that arrived with a lower sequence number than an earlier one.
    pub reordered: u64,
    /// Media whose transport sequence number or frame id jumped implausibly far
    /// ahead (`MAX_DROPOUT` = 3 000 packets, `MAX_FRAME_JUMP` = 300 frames)
    /// and that was dropped; a jump is believed when the very next packet
    /// follows on from it (a restarted sender, RFC 3550 Appendix A.1).
    pub sequence_jumps: u64,
    /// RTCP feedback datagrams sent.
    pub feedback_datagrams: u64,
    /// Feedback sends the OS refused (counted, the report is lost).
    pub send_errors: u64,
}

/// What a receiver run did.
#[derive(Debug, Clone)]
pub struct RecvReport {
    /// Transport counters.
    pub stats: RecvStats,
    /// Session counters.
    pub session: rtcc_core::session::receiver::ReceiverStats,
    /// The same JSON as a simulated run's `summary.json`: a serialised
    /// [`RunSummary`]`<`[`RecvStats`]`>`.
    pub summary: Value,
    /// Run time.
    pub elapsed: Duration,
}

/// Runs a receiver until `duration`, the idle timeout, or `stop`. Blocks
/// the calling thread (a current-thread tokio runtime).
pub fn run_blocking(config: RecvConfig, stop: Arc<AtomicBool>) -> Result<RecvReport, NetError> {
    crate::block_on(run(config, stop))
}

/// State of the media stream the receiver follows.
pub(crate) struct Stream {
    pub(crate) ssrc: u32,
    peer: SocketAddr,
    seqs: SeqUnwrapper,
    frames: Unwrapper<32>,
    highest_seq: Option<u64>,
    first_seq: u64,
    last_heard: Instant,
    /// After a dropped jump: the transport sequence number that would confirm it.
    probation: Option<u64>,
    /// Frames of a standard sender (no rtcc extensions).
    plain: PlainFrames,
    /// RFC 3550 reception statistics for receiver reports (media SSRC only).
    pub(crate) reception: ReceptionStatistics,
    /// Unwraps the media stream's RTP sequence numbers for the reception statistics.
    media_seqs: SeqUnwrapper,
    /// SSRC of the retransmission stream, once one has been accepted.
    rtx_ssrc: Option<u32>,
    /// Unwraps the RTX stream's own sequence numbers.
    rtx_seqs: SeqUnwrapper,
    /// First RTX sequence number heard (unwrapped).
    rtx_first: Option<u64>,
    /// Padding packets heard on the RTX stream (they take RTX sequence numbers).
    rtx_padding: u64,
    /// Repair packets heard on the RTX stream (they take RTX sequence
    /// numbers too).
    rtx_repair: u64,
    /// Another address sending valid media of this stream: the address, its
    /// consecutive in-order packets and its last transport sequence number.
    candidate: Option<(SocketAddr, u32, u16)>,
}

/// How long the sender must have been silent before another address may
/// take its stream over.
const PEER_SILENCE: Duration = Duration::from_secs(1);

/// Valid media packets in transport-sequence order, with no other address
/// in between, that another address must send before it takes over.
const TAKEOVER_RUN: u32 = 20;

/// Runs a receiver (see [`run_blocking`]).
pub async fn run(config: RecvConfig, stop: Arc<AtomicBool>) -> Result<RecvReport, NetError> {
    let sock = crate::open_socket(&config.wire, config.listen).await?;
    let rtcp_sock = match config.rtcp_listen {
        Some(a) => Some(crate::open_socket(&config.wire, a).await?),
        None => None,
    };
    // Our RTCP leaves from the RTCP socket when there is one.
    let out_sock = rtcp_sock.as_ref().unwrap_or(&sock);
    let mut rtcp_buf = vec![0u8; MAX_DATAGRAM];
    let addrs = Addrs {
        pinned: config.peer,
        rtcp: config.rtcp,
    };
    let clock = Clock::start();
    let start = clock.now();
    let mut capture = Capture::open(config.pcap.as_deref(), clock)?;
    // The sockets' own addresses, for the capture's headers.
    let media_addr = sock.local_addr().unwrap_or(config.listen);
    let out_addr = out_sock.local_addr().unwrap_or(media_addr);
    let mut session = ReceiverSession::new(start, config.receiver.clone());
    let mut out = Outputs::open(config.out_dir.as_deref())?;
    let end = config.duration.map(|d| start + d);

    let mut stats = RecvStats::default();
    let mut stream: Option<Stream> = None;
    let mut encoder = FeedbackEncoder::new(config.wire).map_err(|e| NetError::Config {
        field: "wire".into(),
        message: e.to_string(),
    })?;
    let mut fb = WireFeedback::default();
    let mut nack = Nack::default();
    let mut rtcp_out: Vec<Vec<u8>> = Vec::new();
    let mut rx_buf = vec![0u8; MAX_DATAGRAM];
    let mut frame_delay = DelayHistogram::new();
    let mut first_media: Option<Instant> = None;
    let mut next_sample = start + SAMPLE_INTERVAL;
    let mut prev_payload = 0u64;
    let mut next_report = start + REPORT_INTERVAL;
    let mut rr_buf: Vec<u8> = Vec::with_capacity(64);

    loop {
        let now = clock.now();
        let idle = match (&stream, config.idle_timeout) {
            (Some(s), Some(t)) => now - s.last_heard >= t,
            _ => false,
        };
        if stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) || idle {
            break;
        }
        session.on_timeout(now);
        if let Some(s) = &stream {
            // Feedback, NACKs and PLIs name the SSRC being received (RFC 4585
            // §6.1 "SSRC of media source"), whatever the sender chose.
            encoder.set_media_ssrc(s.ssrc);
            rtcp_out.clear();
            if session.poll_feedback(now, &mut fb) {
                rtcp_out = encoder
                    .encode(&fb, clock.ntp_of(now))
                    .map_err(|e| NetError::Internal(format!("encoding feedback: {e}")))?;
            }
            // A NACK due now joins the feedback's compound datagram (RFC 3550 §6.1).
            if session.poll_nack(now, &mut nack) {
                encoder
                    .append_nack(&nack, &mut rtcp_out)
                    .map_err(|e| NetError::Internal(format!("encoding NACK: {e}")))?;
                stats.nacks_sent += 1;
            }
            for d in &rtcp_out {
                let to = config.rtcp.unwrap_or(s.peer);
                match out_sock.try_send_to(d, to) {
                    Ok(_) => {
                        stats.feedback_datagrams += 1;
                        if let Some(c) = &mut capture {
                            c.sent(out_addr, to, d);
                        }
                    }
                    Err(_) => stats.send_errors += 1,
                }
            }
        }
        if now >= next_report {
            next_report = now + REPORT_INTERVAL;
            if let Some(s) = &mut stream {
                if let Some(block) = s.reception.report(now) {
                    rr_buf.clear();
                    let built = wire::encode_receiver_report(
                        config.wire.feedback_ssrc,
                        &[block],
                        &mut rr_buf,
                    )
                    .and_then(|_| {
                        wire::encode_sdes_cname(
                            &[config.wire.feedback_ssrc],
                            encoder.cname(),
                            &mut rr_buf,
                        )
                    });
                    if built.is_ok() {
                        let to = config.rtcp.unwrap_or(s.peer);
                        match out_sock.try_send_to(&rr_buf, to) {
                            Ok(_) => {
                                stats.receiver_reports += 1;
                                if let Some(c) = &mut capture {
                                    c.sent(out_addr, to, &rr_buf);
                                }
                            }
                            Err(_) => stats.send_errors += 1,
                        }
                    }
                }
            }
        }
        while let Some(rec) = session.poll_frame() {
            if let Some(d) = rec.delay() {
                frame_delay.record(d);
            }
            out.frame(&rec)?;
        }
        while now >= next_sample {
            let payload = session.stats().payload_received;
            out.timeseries(&TimeseriesRow {
                time: next_sample,
                flow: FLOW,
                goodput: Some(Bytes::new(payload - prev_payload) / SAMPLE_INTERVAL),
                ..TimeseriesRow::default()
            })?;
            prev_payload = payload;
            next_sample += SAMPLE_INTERVAL;
        }

        let mut wake = (now + STOP_POLL).min(next_sample).min(next_report);
        if let Some(t) = session.poll_timeout() {
            wake = wake.min(t);
        }
        if let Some(e) = end {
            wake = wake.min(e);
        }
        let deadline = tokio::time::Instant::from_std(clock.to_std(wake));
        tokio::select! {
            r = sock.recv_from(&mut rx_buf) => {
                let Ok((n, from)) = r else {
                    // ICMP errors (the sender went away) surface here: count, go on.
                    stats.send_errors += 1;
                    continue;
                };
                stats.datagrams += 1;
                let now = clock.now();
                let datagram = rx_buf.get(..n).unwrap_or_default();
                if let Some(c) = &mut capture {
                    c.received(media_addr, from, datagram);
                }
                if on_datagram(datagram, from, addrs, now, &config.wire, &clock, &mut stream, &mut session, &mut stats) {
                    first_media.get_or_insert(now);
                }
            }
            r = crate::recv_opt(rtcp_sock.as_ref(), &mut rtcp_buf) => {
                let Ok((n, from)) = r else {
                    stats.send_errors += 1;
                    continue;
                };
                stats.datagrams += 1;
                let datagram = rtcp_buf.get(..n).unwrap_or_default();
                if let Some(c) = &mut capture {
                    c.received(out_addr, from, datagram);
                }
                if !wire::is_rtcp(datagram) {
                    // The RTCP port carries RTCP only.
                    stats.malformed += 1;
                    continue;
                }
                on_datagram(datagram, from, addrs, clock.now(), &config.wire, &clock, &mut stream, &mut session, &mut stats);
            }
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
    if let Some(c) = capture {
        c.finish()?;
    }
    let now = clock.now();
    session.finish(now);
    while let Some(rec) = session.poll_frame() {
        if let Some(d) = rec.delay() {
            frame_delay.record(d);
        }
        out.frame(&rec)?;
    }
    // Metrics over the time media flowed, as the simulator's over a flow's active time.
    let active = now - first_media.unwrap_or(start);
    let recovery_on = !config.receiver.recovery.is_none();
    let summary = run_summary(
        &session,
        &stats,
        &frame_delay,
        active,
        stream.as_ref(),
        recovery_on,
    );
    let report = RecvReport {
        stats,
        session: *session.stats(),
        summary: serde_json::to_value(summary).map_err(|e| NetError::Internal(e.to_string()))?,
        elapsed: now - start,
    };
    out.finish(&report)?;
    Ok(report)
}

/// One datagram; true if it was media handed to the session.
#[allow(clippy::too_many_arguments)]
pub(crate) fn on_datagram(
    datagram: &[u8],
    from: SocketAddr,
    addrs: Addrs,
    now: Instant,
    cfg: &WireConfig,
    clock: &Clock,
    stream: &mut Option<Stream>,
    session: &mut ReceiverSession,
    stats: &mut RecvStats,
) -> bool {
    let is_rtcp = wire::is_rtcp(datagram);
    // `--rtcp`: the sender's RTCP comes from its host, from a port of its own.
    let rtcp_host = is_rtcp && addrs.rtcp.is_some_and(|r| r.ip() == from.ip());
    if addrs.pinned.is_some_and(|p| p != from) && !rtcp_host {
        // `--peer`: anyone else is a stranger, whatever it sends.
        stats.unexpected_source += 1;
        return false;
    }
    if is_rtcp {
        // Sender reports of the stream we follow feed the receiver reports'
        // LSR/DLSR; any other RTCP is not for a receiver.
        let sr = wire::decode_rtcp(datagram).ok().and_then(|m| {
            let s = stream.as_ref()?;
            m.sender_reports
                .iter()
                .find(|sr| sr.ssrc == s.ssrc)
                .map(|sr| sr.ntp_time)
        });
        match (sr, stream.as_mut()) {
            (Some(ntp), Some(s)) if from == s.peer || rtcp_host => {
                s.reception.on_sender_report(now, ntp);
                stats.sender_reports += 1;
            }
            _ => stats.rtcp_dropped += 1,
        }
        return false;
    }
    let Ok(rtp) = wire::decode_media(cfg, datagram) else {
        stats.malformed += 1;
        return false;
    };
    let rtx = rtp.original_seq.is_some();
    // Padding on the RTX payload type travels on the retransmission stream.
    let on_rtx = rtx || (rtp.padding_only && rtp.payload_type == cfg.rtx_payload_type);
    if (rtx || rtp.padding_only) && stream.is_none() {
        // A retransmission or padding cannot start a stream: it names no media SSRC.
        stats.foreign_ssrc += 1;
        return false;
    }
    if stream.is_none() {
        // Lock only onto a packet that passes every check media must pass
        // (payload type, done by the parser; the transport-wide sequence
        // number, frame-info and capture-time extensions): one stray or
        // random datagram must not take the stream.
        // A standard sender (no rtcc extensions) must send an RFC 6184
        // payload.
        let mut probe = Unwrapper::new();
        let framed = match (rtp.frame_info, rtp.capture_ntp) {
            (None, None) => plain::is_rfc6184(rtp.payload),
            _ => rtp
                .packet_meta(&mut probe, |ntp| clock.instant_of_ntp(ntp))
                .is_some(),
        };
        if rtp.transport_seq.is_none() || !framed {
            stats.missing_extension += 1;
            return false;
        }
    }
    let s = stream.get_or_insert_with(|| Stream {
        ssrc: rtp.ssrc,
        peer: from,
        seqs: SeqUnwrapper::new(),
        frames: Unwrapper::new(),
        highest_seq: None,
        first_seq: 0,
        last_heard: now,
        probation: None,
        reception: ReceptionStatistics::new(rtp.ssrc),
        media_seqs: SeqUnwrapper::new(),
        rtx_ssrc: None,
        rtx_seqs: SeqUnwrapper::new(),
        rtx_first: None,
        rtx_padding: 0,
        rtx_repair: 0,
        candidate: None,
        plain: PlainFrames::new(),
    });
    // The RTX stream is locked onto by its first packet that passes every
    // check below (in WebRTC the SDP's ssrc-group:FID names it).
    let expected_ssrc = if on_rtx {
        s.rtx_ssrc.unwrap_or(rtp.ssrc)
    } else {
        s.ssrc
    };
    if rtp.ssrc != expected_ssrc {
        stats.foreign_ssrc += 1;
        return false;
    }
    let Some(tseq) = rtp.transport_seq else {
        stats.missing_extension += 1;
        return false;
    };
    if from != s.peer && !takes_over(s, from, now, tseq, &rtp, stats) {
        stats.unexpected_source += 1;
        return false;
    }
    if rtp.padding_only {
        on_padding(datagram, now, tseq, on_rtx, &rtp, s, session, stats);
        return false;
    }
    if let (Some(h), Some(f), Some(info)) = (s.seqs.highest(), s.frames.highest(), rtp.frame_info) {
        let seq = wire::unwrap_near(h, u64::from(tseq), 16);
        let frame = wire::unwrap_near(f, u64::from(info.frame_id), 32);
        let jumped =
            seq > h.saturating_add(MAX_DROPOUT) || frame > f.saturating_add(MAX_FRAME_JUMP);
        if jumped && s.probation != Some(seq) {
            s.probation = Some(seq.saturating_add(1));
            stats.sequence_jumps += 1;
            return false;
        }
    }
    // Confirmation needs the very next packet: one of the old stream in
    // between means the jump was a stray.
    s.probation = None;
    let meta = if rtp.frame_info.is_none() && rtp.capture_ntp.is_none() {
        // A standard sender: frames from the RTP timestamp and marker bit;
        // a retransmission carries the original's (RFC 4588 §4).
        let sequence = rtp.original_seq.unwrap_or(rtp.sequence);
        match s
            .plain
            .on_packet(now, sequence, rtp.timestamp, rtp.marker, rtp.payload)
        {
            Ok(m) => {
                stats.plain_packets += 1;
                m
            }
            Err(PlainOutcome::NotH264) => {
                stats.not_h264 += 1;
                return false;
            }
            Err(PlainOutcome::TooOld | PlainOutcome::BeforeFrameStart) => {
                stats.unplaceable += 1;
                return false;
            }
        }
    } else {
        let Some(meta) = rtp.packet_meta(&mut s.frames, |ntp| clock.instant_of_ntp(ntp)) else {
            stats.missing_extension += 1;
            return false;
        };
        meta
    };
    let seq = s.seqs.unwrap(u64::from(tseq));
    if s.highest_seq.is_none() {
        s.first_seq = seq;
    }
    match s.highest_seq {
        Some(h) if seq == h => stats.duplicates += 1,
        Some(h) if seq < h => stats.reordered += 1,
        _ => s.highest_seq = Some(seq),
    }
    s.last_heard = now;
    stats.media_packets += 1;
    if rtx {
        s.rtx_ssrc = Some(rtp.ssrc);
        let r = s.rtx_seqs.unwrap(u64::from(rtp.sequence));
        s.rtx_first = Some(s.rtx_first.map_or(r, |f| f.min(r)));
        if rtp.is_repair() {
            s.rtx_repair += 1;
            stats.repair_packets += 1;
        } else {
            stats.rtx_packets += 1;
        }
    } else {
        let m = s.media_seqs.unwrap(u64::from(rtp.sequence));
        s.reception.on_packet(now, m, rtp.timestamp);
    }
    let wire_size = Bytes::new(datagram.len() as u64 + IP_UDP_HEADERS);
    let useful = session.stats().repair_useful;
    // A retransmission or a repair copy carries the original's sequence
    // number (RFC 4588 §4); `media_seq` tells which it is.
    session.on_packet(now, seq, wire_size, rtp.media_seq(), &meta);
    stats.repair_recovered += session.stats().repair_useful - useful;
    true
}

/// Whether a packet of the followed stream from `from`, not the sender's
/// address, moves the stream to `from`. RFC 3550 §8.2: a source's transport
/// address may change (a NAT rebinding, a restarted sender), but a packet
/// from a new address may also come from a third party. So only media (not
/// retransmissions or padding) counts; `from` takes over once the sender
/// has been silent for `PEER_SILENCE` and `from` has sent `TAKEOVER_RUN`
/// consecutive media packets in transport-sequence order; until then its
/// packets are dropped and feedback keeps going to the sender.
fn takes_over(
    s: &mut Stream,
    from: SocketAddr,
    now: Instant,
    tseq: u16,
    rtp: &wire::RtpMedia,
    stats: &mut RecvStats,
) -> bool {
    if rtp.original_seq.is_some() || rtp.padding_only {
        return false;
    }
    let run = match s.candidate {
        Some((addr, n, last)) if addr == from && tseq.wrapping_sub(last).wrapping_sub(1) < 1000 => {
            n + 1
        }
        _ => 1,
    };
    s.candidate = Some((from, run, tseq));
    let silent = now.saturating_duration_since(s.last_heard) >= PEER_SILENCE;
    if run >= TAKEOVER_RUN && silent {
        s.peer = from;
        s.candidate = None;
        stats.peer_changes += 1;
        return true;
    }
    false
}

/// A padding-only packet of the followed stream with transport-wide sequence
/// number `tseq`: the same sequence checks as media, then recorded for the
/// feedback only (`ReceiverSession::on_padding`). Padding on the media SSRC
/// (a libwebrtc sender without RTX; ours never sends it) counts in the media
/// stream's reception statistics, as it takes a media RTP sequence number.
#[allow(clippy::too_many_arguments)]
fn on_padding(
    datagram: &[u8],
    now: Instant,
    tseq: u16,
    on_rtx: bool,
    rtp: &wire::RtpMedia<'_>,
    s: &mut Stream,
    session: &mut ReceiverSession,
    stats: &mut RecvStats,
) {
    if let Some(h) = s.seqs.highest() {
        let seq = wire::unwrap_near(h, u64::from(tseq), 16);
        if seq > h.saturating_add(MAX_DROPOUT) && s.probation != Some(seq) {
            s.probation = Some(seq.saturating_add(1));
            stats.sequence_jumps += 1;
            return;
        }
    }
    s.probation = None;
    let seq = s.seqs.unwrap(u64::from(tseq));
    match s.highest_seq {
        Some(h) if seq == h => stats.duplicates += 1,
        Some(h) if seq < h => stats.reordered += 1,
        _ => s.highest_seq = Some(seq),
    }
    s.last_heard = now;
    stats.padding_packets += 1;
    if on_rtx {
        s.rtx_ssrc = Some(rtp.ssrc);
        let r = s.rtx_seqs.unwrap(u64::from(rtp.sequence));
        s.rtx_first = Some(s.rtx_first.map_or(r, |f| f.min(r)));
        s.rtx_padding += 1;
    } else {
        let m = s.media_seqs.unwrap(u64::from(rtp.sequence));
        s.reception.on_packet(now, m, rtp.timestamp);
    }
    session.on_padding(now, seq, Bytes::new(datagram.len() as u64 + IP_UDP_HEADERS));
}

/// `summary.json` of a real run: the simulator's per-flow fields for a media
/// flow, plus the transport counters. Link metrics do not exist here.
fn run_summary(
    session: &ReceiverSession,
    stats: &RecvStats,
    frame_delay: &DelayHistogram,
    active: Duration,
    stream: Option<&Stream>,
    recovery_on: bool,
) -> RunSummary<RecvStats> {
    let secs = active.as_secs_f64().max(1e-9);
    let p = session.player().stats();
    let s = session.stats();
    let expected = stream
        .and_then(|st| st.highest_seq)
        .map(|h| h + 1)
        .unwrap_or(0);
    // Sequence numbers before the first one heard do not count (a restarted receiver).
    let first = stream.map_or(0, |st| st.first_seq);
    let expected = expected.saturating_sub(first);
    // Transport-wide sequence numbers: padding takes them too (as the
    // simulator counts a flow's padding in its packets and losses).
    let unique = (stats.media_packets + stats.padding_packets).saturating_sub(stats.duplicates);
    let lost = expected.saturating_sub(unique);
    let loss = if expected == 0 {
        0.0
    } else {
        lost as f64 / expected as f64
    };
    let recovery = recovery_on.then(|| {
        let ns = session.nack_stats();
        // RTX sequence numbers count the retransmissions sent (RFC 4588 §4:
        // the RTX stream numbers its packets itself), up to the last one
        // heard, less the probe padding and repair packets heard on that
        // stream (a lost padding or repair packet still counts as a
        // retransmission sent).
        let rtx_sent = stream
            .and_then(|st| {
                let span = st.rtx_seqs.highest()? + 1 - st.rtx_first?;
                Some(span.saturating_sub(st.rtx_padding + st.rtx_repair))
            })
            .unwrap_or(0);
        // The simulator's counters; `retransmissions_expired` is the
        // sender's to know (send_summary.json).
        RecoveryCounters {
            nacks_sent: ns.nack_messages,
            nack_requests: ns.requests,
            retransmissions_sent: rtx_sent,
            retransmissions_received: Some(s.rtx_received),
            retransmissions_useful: s.rtx_useful,
            retransmissions_late: s.rtx_late,
            retransmissions_duplicate: s.rtx_duplicate,
            retransmissions_expired: None,
        }
    });
    let flow = FlowSummary {
        name: FLOW.to_string(),
        kind: "media".to_string(),
        media_bitrate_kbps: Some(round3(
            p.delivered_payload.get() as f64 * 8.0 / secs / 1000.0,
        )),
        goodput_kbps: round3(s.payload_received as f64 * 8.0 / secs / 1000.0),
        frame_delay_ms: Some(output::delay_ms(frame_delay.summary())),
        stall_ratio: Some(round3(session.player().stall_ratio(active))),
        frames_displayed: Some(p.frames_displayed),
        frames_dropped: Some(p.frames_dropped),
        loss_rate: round3(loss),
        packets_received: Some(unique),
        packets_lost: lost,
        recovery,
        ..FlowSummary::default()
    };
    RunSummary {
        scenario: "real".to_string(),
        duration_s: round3(secs),
        rtcc_version: env!("CARGO_PKG_VERSION").to_string(),
        flows: vec![flow],
        links: Vec::new(),
        transport: Some(*stats),
        fairness: None,
        seed: None,
    }
}

/// The receiver's output files.
struct Outputs {
    dir: Option<PathBuf>,
    ts: Option<BufWriter<File>>,
    frames: Option<BufWriter<File>>,
}

impl Outputs {
    fn open(dir: Option<&Path>) -> Result<Outputs, NetError> {
        let Some(dir) = dir else {
            return Ok(Outputs {
                dir: None,
                ts: None,
                frames: None,
            });
        };
        std::fs::create_dir_all(dir).map_err(|e| NetError::io(dir, e))?;
        let open = |name: &str, header: &str| -> Result<BufWriter<File>, NetError> {
            let path = dir.join(name);
            let mut w = BufWriter::new(File::create(&path).map_err(|e| NetError::io(&path, e))?);
            writeln!(w, "{header}").map_err(|e| NetError::io(&path, e))?;
            Ok(w)
        };
        Ok(Outputs {
            ts: Some(open("timeseries.csv", output::TIMESERIES_HEADER)?),
            frames: Some(open("frames.csv", output::FRAMES_HEADER)?),
            dir: Some(dir.to_path_buf()),
        })
    }

    fn timeseries(&mut self, row: &TimeseriesRow<'_>) -> Result<(), NetError> {
        if let (Some(w), Some(dir)) = (&mut self.ts, &self.dir) {
            output::write_timeseries_row(w, row)
                .map_err(|e| NetError::io(&dir.join("timeseries.csv"), e))?;
        }
        Ok(())
    }

    fn frame(&mut self, rec: &FrameRecord) -> Result<(), NetError> {
        if let (Some(w), Some(dir)) = (&mut self.frames, &self.dir) {
            // The real transport sends no layers: no PSNR model.
            output::write_frame_row(w, FLOW, rec, None)
                .map_err(|e| NetError::io(&dir.join("frames.csv"), e))?;
        }
        Ok(())
    }

    fn finish(&mut self, report: &RecvReport) -> Result<(), NetError> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        for (w, name) in [
            (&mut self.ts, "timeseries.csv"),
            (&mut self.frames, "frames.csv"),
        ] {
            if let Some(w) = w {
                w.flush().map_err(|e| NetError::io(&dir.join(name), e))?;
            }
        }
        let path = dir.join("summary.json");
        let text = serde_json::to_string_pretty(&report.summary)
            .map_err(|e| NetError::Internal(e.to_string()))?;
        std::fs::write(&path, text + "\n").map_err(|e| NetError::io(&path, e))
    }
}

#[cfg(test)]
mod tests {
    use rtcc_core::media::frame::FrameType;
    use rtcc_core::media::packetizer::MediaPacket;
    use rtcc_core::session::sender::Transmit;

    use super::*;

    struct Rx {
        pinned: Option<SocketAddr>,
        rtcp: Option<SocketAddr>,
        cfg: WireConfig,
        clock: Clock,
        stream: Option<Stream>,
        session: ReceiverSession,
        stats: RecvStats,
    }

    impl Rx {
        fn new() -> Rx {
            let clock = Clock::start();
            let config = ReceiverConfig {
                feedback_interval: Duration::from_millis(50),
                player: Default::default(),
                recovery: Default::default(),
            };
            Rx {
                pinned: None,
                rtcp: None,
                cfg: WireConfig::default(),
                clock,
                stream: None,
                session: ReceiverSession::new(Instant::ZERO, config),
                stats: RecvStats::default(),
            }
        }

        /// Feeds a one-packet frame; true if it reached the session.
        fn feed(&mut self, seq: u64, frame_id: u64) -> bool {
            self.feed_as(seq, seq, frame_id, None)
        }

        /// Feeds packet `media_seq` of frame `frame_id` with transport
        /// sequence `seq`; with `rtx = Some(ssrc)` as an RFC 4588
        /// retransmission from `ssrc`.
        fn feed_as(&mut self, seq: u64, media_seq: u64, frame_id: u64, rtx: Option<u32>) -> bool {
            let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
            let now = Instant::from_millis(frame_id + 1);
            self.feed_full(seq, media_seq, frame_id, rtx, from, now)
        }

        /// `feed_as` from `from` at `now`.
        fn feed_full(
            &mut self,
            seq: u64,
            media_seq: u64,
            frame_id: u64,
            rtx: Option<u32>,
            from: SocketAddr,
            now: Instant,
        ) -> bool {
            let tx = one_packet_frame(
                seq,
                media_seq,
                frame_id,
                rtcc_core::PacketKind::Media,
                Instant::from_millis(frame_id),
            );
            let mut d = Vec::new();
            let ntp = self.clock.ntp_of(Instant::ZERO);
            match rtx {
                None => wire::encode_media(&self.cfg, &tx, ntp, None, &mut d),
                Some(ssrc) => {
                    let cfg = WireConfig {
                        rtx_ssrc: ssrc,
                        ..self.cfg
                    };
                    wire::encode_rtx(&cfg, &tx, seq as u16, ntp, None, &mut d)
                }
            }
            .unwrap();
            self.raw(&d, from, now)
        }

        /// Any datagram.
        fn raw(&mut self, d: &[u8], from: SocketAddr, now: Instant) -> bool {
            on_datagram(
                d,
                from,
                Addrs {
                    pinned: self.pinned,
                    rtcp: self.rtcp,
                },
                now,
                &self.cfg,
                &self.clock,
                &mut self.stream,
                &mut self.session,
                &mut self.stats,
            )
        }
    }

    /// An RTP packet as a standard sender (GStreamer's `rtph264pay` with the
    /// transport-wide CC extension at id 1, RFC 8285 one-byte form) sends it:
    /// no abs-capture-time, no frame-info.
    /// A key frame of one 100 B packet, as the sender would transmit it:
    /// media, or (`PacketKind::Fec`) the repair copy of one.
    fn one_packet_frame(
        seq: u64,
        media_seq: u64,
        frame_id: u64,
        kind: rtcc_core::PacketKind,
        send_time: Instant,
    ) -> Transmit {
        Transmit {
            seq,
            media_seq,
            kind,
            packet: MediaPacket {
                frame_id,
                frame_type: FrameType::Key,
                capture_time: Instant::from_millis(frame_id),
                index: 0,
                count: 1,
                last_in_frame: true,
                payload: Bytes::new(100),
                wire_size: Bytes::new(148),
                layer: 0,
                layer_end: false,
                repair: kind == rtcc_core::PacketKind::Fec,
            },
            send_time,
        }
    }

    fn plain_rtp(seq: u16, ts: u32, marker: bool, tseq: u16, payload: &[u8]) -> Vec<u8> {
        let mut d = vec![0x90, (u8::from(marker) << 7) | 96];
        d.extend_from_slice(&seq.to_be_bytes());
        d.extend_from_slice(&ts.to_be_bytes());
        d.extend_from_slice(&0x1234_5678u32.to_be_bytes());
        d.extend_from_slice(&[0xBE, 0xDE, 0, 1, 0x11]);
        d.extend_from_slice(&tseq.to_be_bytes());
        d.push(0);
        d.extend_from_slice(payload);
        d
    }

    #[test]
    fn a_standard_sender_is_framed_by_timestamp_and_marker() {
        let mut rx = Rx::new();
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let at = Instant::from_millis;
        // Frame 0: STAP-A (SPS, PPS) then an IDR in two FU-A fragments.
        let stap = [0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xCE];
        assert!(rx.raw(&plain_rtp(100, 9_000, false, 0, &stap), from, at(10)));
        assert!(rx.raw(
            &plain_rtp(101, 9_000, false, 1, &[0x7C, 0x85, 1]),
            from,
            at(11)
        ));
        assert!(rx.raw(
            &plain_rtp(102, 9_000, true, 2, &[0x7C, 0x45, 2]),
            from,
            at(12)
        ));
        // Frame 1 (one slice), 3000 ticks = 33.3 ms later, arriving 40 ms later.
        assert!(rx.raw(&plain_rtp(103, 12_000, true, 3, &[0x41, 3]), from, at(50)));
        // Frame 2 lost; frame 3 breaks the chain, frame 4 too.
        assert!(rx.raw(&plain_rtp(105, 18_000, true, 5, &[0x41, 5]), from, at(110)));
        // A payload that is not RFC 6184 is dropped and counted.
        assert!(!rx.raw(&plain_rtp(106, 21_000, true, 6, &[0x1E, 0]), from, at(120)));
        assert_eq!(rx.stats.not_h264, 1);
        // A key frame restarts it.
        assert!(rx.raw(&plain_rtp(107, 24_000, true, 7, &[0x65, 7]), from, at(150)));
        assert_eq!(rx.stats.plain_packets, 6);
        assert_eq!(rx.stats.media_packets, 6);
        rx.session.on_timeout(at(2_000));
        let mut frames = Vec::new();
        while let Some(f) = rx.session.poll_frame() {
            frames.push(f);
        }
        let shown: Vec<(u64, bool)> = frames
            .iter()
            .map(|f| (f.frame_id, f.displayed.is_some()))
            .collect();
        assert_eq!(
            shown,
            vec![(0, true), (1, true), (3, false), (5, true)],
            "{frames:?}"
        );
        assert_eq!(frames[0].frame_type, FrameType::Key);
        // Frame delay is relative to the first packet's: frame 0 completed 2
        // ms after it, frame 1 40 ms after its media time of 33.3 ms.
        assert_eq!(frames[0].delay(), Some(Duration::from_millis(2)));
        let d1 = frames[1].delay().unwrap();
        assert!(
            d1 > Duration::from_millis(6) && d1 < Duration::from_millis(7),
            "{d1:?}"
        );
        // Without the transport-wide sequence number nothing locks.
        let mut rx = Rx::new();
        let mut d = plain_rtp(1, 0, true, 0, &[0x65, 1]);
        d[0] = 0x80;
        d.drain(12..20);
        assert!(!rx.raw(&d, from, at(1)));
        assert_eq!(rx.stats.missing_extension, 1);
        assert!(rx.stream.is_none());
    }

    #[test]
    fn with_a_separate_rtcp_address_reports_come_from_its_host() {
        // RFC 5761 non-muxed: the sender's SR leaves from its own RTCP port.
        let sr = |rx: &Rx| {
            let mut d = Vec::new();
            wire::encode_sender_report(rx.cfg.media_ssrc, 1 << 32, 0, 1, 1, &[], &mut d).unwrap();
            wire::encode_sdes_cname(&[rx.cfg.media_ssrc], "gst", &mut d).unwrap();
            d
        };
        let at = Instant::from_millis(5);
        let media: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let rtcp_out: SocketAddr = "127.0.0.1:40001".parse().unwrap();
        let stranger: SocketAddr = "127.0.0.2:40001".parse().unwrap();
        for (rtcp, pinned) in [
            (None, None),
            (Some("127.0.0.1:5001"), None),
            (Some("127.0.0.1:5001"), Some(media)),
        ] {
            let mut rx = Rx::new();
            rx.rtcp = rtcp.map(|r| r.parse().unwrap());
            rx.pinned = pinned;
            assert!(rx.feed(0, 0));
            let d = sr(&rx);
            rx.raw(&d, rtcp_out, at);
            rx.raw(&d, stranger, at);
            let heard = u64::from(rtcp.is_some());
            assert_eq!(rx.stats.sender_reports, heard, "{rtcp:?} {pinned:?}");
            let stranger_counted = rx.stats.rtcp_dropped + rx.stats.unexpected_source;
            assert_eq!(
                stranger_counted,
                2 - heard,
                "{rtcp:?} {pinned:?}: {:?}",
                rx.stats
            );
        }
    }

    #[test]
    fn retransmissions_reach_the_session_with_their_original_number() {
        let mut rx = Rx::new();
        let rtx_ssrc = WireConfig::default().rtx_ssrc;
        // Before any media, a retransmission names no stream: dropped.
        assert!(!rx.feed_as(0, 0, 0, Some(rtx_ssrc)));
        assert_eq!(rx.stats.foreign_ssrc, 1);
        assert!(rx.feed(0, 0));
        assert!(rx.feed(2, 2)); // media 1 is lost
                                // Its retransmission, with transport seq 3: locks the RTX stream.
        assert!(rx.feed_as(3, 1, 1, Some(rtx_ssrc)));
        let st = rx.session.stats();
        assert_eq!((st.rtx_received, st.rtx_useful), (1, 1), "{st:?}");
        assert_eq!(st.seq_end, 4);
        // Another RTX SSRC is a stranger now; the locked one still passes.
        assert!(!rx.feed_as(4, 1, 1, Some(0x0BAD_0BAD)));
        assert_eq!(rx.stats.foreign_ssrc, 2);
        assert!(rx.feed_as(5, 1, 1, Some(rtx_ssrc)));
        // A second copy fills nothing (late or duplicate, as the player sees it).
        let st = rx.session.stats();
        assert_eq!((st.rtx_received, st.rtx_useful), (2, 1), "{st:?}");
        assert_eq!(rx.stats.rtx_packets, 2);
        assert_eq!(rx.stats.media_packets, 4);
        // The RTX stream's own numbers count what was sent (3 and 5).
        let s = rx.stream.as_ref().unwrap();
        assert_eq!(s.rtx_seqs.highest(), Some(5));
        assert_eq!(s.rtx_first, Some(3));
        // Media reception statistics see the media stream only.
        assert_eq!(s.media_seqs.highest(), Some(2));
    }

    impl Rx {
        /// Feeds a repair copy (an RTX packet with the frame-info R flag) of
        /// the one-packet frame `frame_id`, media sequence `media_seq`, with
        /// transport sequence `seq`, at `ms`.
        fn feed_repair(&mut self, seq: u64, media_seq: u64, frame_id: u64, ms: u64) -> bool {
            let tx = one_packet_frame(
                seq,
                media_seq,
                frame_id,
                rtcc_core::PacketKind::Fec,
                Instant::from_millis(ms),
            );
            let mut d = Vec::new();
            let ntp = self.clock.ntp_of(Instant::ZERO);
            wire::encode_rtx(&self.cfg, &tx, seq as u16, ntp, None, &mut d).unwrap();
            let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
            self.raw(&d, from, Instant::from_millis(ms))
        }
    }

    #[test]
    fn repair_copies_restore_lost_originals_and_count_once() {
        for recovery in ["none", "nack"] {
            let mut rx = Rx::new();
            rx.session = ReceiverSession::new(
                Instant::ZERO,
                ReceiverConfig {
                    feedback_interval: Duration::from_millis(50),
                    player: Default::default(),
                    recovery: rtcc_core::recovery::RecoveryConfig::default_for(recovery).unwrap(),
                },
            );
            // Media 0, (1 lost), 2, then the repair copies of all three on
            // the RTX stream (transport 3..5), unasked; then frame 3's copy
            // before its original (reordering).
            assert!(rx.feed(0, 0));
            assert!(rx.feed(2, 2));
            for m in 0..3 {
                assert!(rx.feed_repair(3 + m, m, m, 3), "{recovery}: copy of {m}");
            }
            assert!(rx.feed_repair(6, 3, 3, 4));
            assert!(rx.feed_as(7, 3, 3, None));
            // Every copy reached the session as a repair, not a
            // retransmission; two restored a data packet (1, and 3 ahead of
            // its original), the other two were duplicates.
            let st = *rx.session.stats();
            assert_eq!(
                (st.repair_received, st.repair_useful),
                (4, 2),
                "{recovery}: {st:?}"
            );
            assert_eq!(st.rtx_received, 0, "{recovery}");
            assert_eq!(rx.stats.repair_packets, 4, "{recovery}");
            assert_eq!(rx.stats.repair_recovered, 2, "{recovery}");
            assert_eq!(rx.stats.rtx_packets, 0, "{recovery}");
            assert_eq!(rx.stats.media_packets, 7, "{recovery}");
            assert_eq!(rx.stats.foreign_ssrc, 0, "{recovery}");
            // The player took each data packet once: the copies of 0 and 2,
            // then original 3, came for frames already complete (late, as
            // the player tells a second copy of a one-packet frame), and all
            // four frames show.
            let p = rx.session.player().stats();
            let refused = p.packets_duplicate + p.packets_late;
            assert_eq!((p.packets_received, refused), (7, 3), "{recovery}: {p:?}");
            rx.session.on_timeout(Instant::from_millis(2_000));
            let mut shown = 0;
            while let Some(f) = rx.session.poll_frame() {
                shown += u64::from(f.displayed.is_some());
            }
            assert_eq!(shown, 4, "{recovery}");
            // With NACKs on, nothing is asked for: the copy restored 1
            // before any request was due.
            let mut nack = Nack::default();
            for ms in (10..1_000).step_by(10) {
                let now = Instant::from_millis(ms);
                rx.session.on_timeout(now);
                assert!(!rx.session.poll_nack(now, &mut nack), "NACK {nack:?}");
            }
            // The RTX stream's numbers 3..=6 were repairs, no retransmission.
            let s = rx.stream.as_ref().unwrap();
            assert_eq!((s.rtx_ssrc, s.rtx_repair), (Some(rx.cfg.rtx_ssrc), 4));
            let summary = run_summary(
                &rx.session,
                &rx.stats,
                &DelayHistogram::new(),
                Duration::from_secs(1),
                rx.stream.as_ref(),
                recovery == "nack",
            );
            let json = serde_json::to_value(&summary).unwrap();
            assert_eq!(json["transport"]["repair_packets"], 4, "{json}");
            assert_eq!(json["transport"]["repair_recovered"], 2, "{json}");
            if let Some(r) = summary.flows[0].recovery {
                assert_eq!(r.retransmissions_sent, 0, "{recovery}: {r:?}");
            }
        }
    }

    impl Rx {
        /// Feeds a padding-only packet of `wire_size` bytes with transport
        /// sequence `seq` and RTX sequence `rtx_seq`, at `ms`; `patch` may
        /// rewrite the datagram first.
        fn feed_padding(&mut self, seq: u64, rtx_seq: u16, ms: u64, patch: impl Fn(&mut Vec<u8>)) {
            let tx = Transmit {
                seq,
                media_seq: 999,
                kind: rtcc_core::PacketKind::Padding,
                packet: MediaPacket {
                    frame_id: u64::MAX,
                    frame_type: FrameType::Delta,
                    capture_time: Instant::from_millis(ms),
                    index: 0,
                    count: 0,
                    last_in_frame: false,
                    payload: Bytes::ZERO,
                    wire_size: Bytes::new(450),
                    layer: 0,
                    layer_end: false,
                    repair: false,
                },
                send_time: Instant::from_millis(ms),
            };
            let mut d = Vec::new();
            wire::encode_padding(&self.cfg, &tx, rtx_seq, &mut d).unwrap();
            patch(&mut d);
            let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
            let media = on_datagram(
                &d,
                from,
                Addrs {
                    pinned: self.pinned,
                    rtcp: self.rtcp,
                },
                Instant::from_millis(ms + 1),
                &self.cfg,
                &self.clock,
                &mut self.stream,
                &mut self.session,
                &mut self.stats,
            );
            assert!(!media, "padding is never media");
        }
    }

    #[test]
    fn padding_on_the_media_ssrc_fills_the_media_numbers() {
        // Without RTX the sender pads on the media SSRC, taking media
        // sequence numbers (send.rs): media 0, padding 1, media 2 is no loss.
        let mut rx = Rx::new();
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(rx.feed_as(0, 0, 0, None));
        let tx = Transmit {
            seq: 1,
            media_seq: 1,
            kind: rtcc_core::PacketKind::Padding,
            packet: MediaPacket {
                frame_id: u64::MAX,
                frame_type: FrameType::Delta,
                capture_time: Instant::from_millis(1),
                index: 0,
                count: 0,
                last_in_frame: false,
                payload: Bytes::ZERO,
                wire_size: Bytes::new(300),
                layer: 0,
                layer_end: false,
                repair: false,
            },
            send_time: Instant::from_millis(1),
        };
        let mut d = Vec::new();
        wire::encode_media_padding(&rx.cfg, &tx, 1, &mut d).unwrap();
        let parsed = wire::decode_media(&rx.cfg, &d).unwrap();
        assert!(parsed.padding_only);
        assert_eq!(
            (parsed.payload_type, parsed.ssrc),
            (rx.cfg.payload_type, rx.cfg.media_ssrc)
        );
        assert!(!rx.raw(&d, from, Instant::from_millis(2)));
        assert!(rx.feed_as(2, 2, 2, None));
        assert_eq!((rx.stats.padding_packets, rx.stats.media_packets), (1, 2));
        let s = rx.stream.as_mut().unwrap();
        assert_eq!(s.rtx_padding, 0);
        let block = s.reception.report(Instant::from_millis(1_000)).unwrap();
        assert_eq!(
            (block.fraction_lost, block.cumulative_lost),
            (0, 0),
            "{block:?}"
        );
        assert_eq!(block.extended_highest_seq, 2);
    }

    #[test]
    fn padded_media_counts_on_the_wire_but_not_as_payload() {
        // svc-probing's start-phase trains pad media to the train's packet
        // size (send.rs, wire/media.rs "Media padding"): frame 0 is two
        // packets of 100 B and 0 B of payload, each padded to 1000 B on the
        // wire (the second with extension-block filler too).
        let mut rx = Rx::new();
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let own = wire::rtp_overhead(&rx.cfg) as u64;
        let ntp = rx.clock.ntp_of(Instant::ZERO);
        for (index, payload) in [(0u32, 100u64), (1, 0)] {
            let tx = Transmit {
                seq: u64::from(index),
                media_seq: u64::from(index),
                kind: rtcc_core::PacketKind::Media,
                packet: MediaPacket {
                    frame_id: 0,
                    frame_type: FrameType::Key,
                    capture_time: Instant::ZERO,
                    index,
                    count: 2,
                    last_in_frame: index == 1,
                    payload: Bytes::new(payload),
                    wire_size: Bytes::new(1000),
                    layer: 0,
                    layer_end: false,
                    repair: false,
                },
                send_time: Instant::ZERO,
            };
            let mut d = Vec::new();
            wire::encode_media(&rx.cfg, &tx, ntp, None, &mut d).unwrap();
            assert_eq!(d.len() as u64 + IP_UDP_HEADERS, 1000);
            assert!(1000 > own + payload, "padded");
            assert!(rx.raw(&d, from, Instant::from_millis(1 + u64::from(index))));
        }
        // Both are media (the empty one too), none is padding-only.
        assert_eq!((rx.stats.media_packets, rx.stats.padding_packets), (2, 0));
        assert_eq!(rx.stats.malformed, 0);
        let st = *rx.session.stats();
        // The bytes received are the datagrams' (what the sender charged);
        // the payload is the media's only, as in the simulator.
        assert_eq!(st.bytes_received, 2000, "{st:?}");
        assert_eq!(st.payload_received, 100, "{st:?}");
        let mut frames = Vec::new();
        for ms in (0..1_000).step_by(10) {
            rx.session.on_timeout(Instant::from_millis(ms));
            while let Some(f) = rx.session.poll_frame() {
                frames.push(f);
            }
        }
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(frames[0].size, Bytes::new(100));
        assert!(frames[0].displayed.is_some(), "{frames:?}");
        assert_eq!(
            rx.session.player().stats().delivered_payload,
            Bytes::new(100)
        );
    }

    #[test]
    fn padding_is_reported_in_feedback_but_never_media_loss_or_nacked() {
        let mut rx = Rx::new();
        rx.session = ReceiverSession::new(
            Instant::ZERO,
            ReceiverConfig {
                feedback_interval: Duration::from_millis(50),
                player: Default::default(),
                recovery: rtcc_core::recovery::RecoveryConfig::default_for("nack").unwrap(),
            },
        );
        // Padding before any media names no stream: dropped.
        rx.feed_padding(0, 0, 0, |_| {});
        assert_eq!((rx.stats.foreign_ssrc, rx.stats.padding_packets), (1, 0));
        // Media 0, 1 (transport 0, 1), padding (transport 2..5, RTX seq 7..10),
        // media 2 (transport 6): the media numbers have no gap.
        assert!(rx.feed_as(0, 0, 0, None));
        assert!(rx.feed_as(1, 1, 1, None));
        for k in 0..4 {
            rx.feed_padding(2 + k, 7 + k as u16, 2, |_| {});
        }
        assert!(rx.feed_as(6, 2, 3, None));
        assert_eq!(rx.stats.padding_packets, 4);
        assert_eq!(rx.stats.media_packets, 3);
        let st = *rx.session.stats();
        assert_eq!(st.packets_received, 3, "padding is not media: {st:?}");
        assert_eq!(st.seq_end, 7);
        assert_eq!(st.bytes_received, 3 * (148 + 20) + 4 * 450, "{st:?}");
        // The feedback reports all seven transport numbers as received.
        let mut fb = WireFeedback::default();
        let now = Instant::from_millis(200);
        rx.session.on_timeout(now);
        assert!(rx.session.poll_feedback(now, &mut fb));
        let got: Vec<_> = fb.packets.iter().map(|(s, a)| (*s, a.is_some())).collect();
        assert_eq!(got, (0..7).map(|s| (s, true)).collect::<Vec<_>>());
        // No NACK, now or later: padding opened no gap in the media numbers.
        let mut nack = Nack::default();
        for ms in (200..2_000).step_by(10) {
            let now = Instant::from_millis(ms);
            rx.session.on_timeout(now);
            assert!(!rx.session.poll_nack(now, &mut nack), "NACK {nack:?}");
        }
        assert_eq!(rx.session.nack_stats().requests, 0);
        // The padding locked the RTX stream; the media stream's statistics
        // and the RTX count of retransmissions do not see it.
        let s = rx.stream.as_ref().unwrap();
        assert_eq!(s.rtx_ssrc, Some(rx.cfg.rtx_ssrc));
        assert_eq!(s.media_seqs.highest(), Some(2));
        assert_eq!(s.rtx_padding, 4);
        let summary = run_summary(
            &rx.session,
            &rx.stats,
            &DelayHistogram::new(),
            Duration::from_secs(1),
            rx.stream.as_ref(),
            true,
        );
        // The simulator's schema, with the transport counters.
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["transport"]["padding_packets"], 4, "{json}");
        let back: RunSummary<RecvStats> = serde_json::from_value(json).unwrap();
        assert_eq!(back, summary);
        let flow = &summary.flows[0];
        let recovery = flow.recovery.expect("recovery is on");
        assert_eq!(recovery.retransmissions_sent, 0, "{flow:?}");
        assert_eq!(
            (flow.packets_lost, flow.packets_received),
            (0, Some(7)),
            "{flow:?}"
        );
        // Padding of another RTX SSRC is a stranger; padding without the
        // transport-wide number is missing its extension; a duplicate counts.
        rx.feed_padding(7, 11, 3, |d| d[8..12].copy_from_slice(&[1, 2, 3, 4]));
        assert_eq!(rx.stats.foreign_ssrc, 2);
        rx.feed_padding(7, 11, 3, |d| d[16] = 0x51); // element id 5, not ours
        assert_eq!(rx.stats.missing_extension, 1);
        rx.feed_padding(6, 11, 3, |_| {});
        assert_eq!(rx.stats.duplicates, 1);
        // A padding count larger than the packet: malformed, dropped.
        rx.feed_padding(8, 12, 3, |d| *d.last_mut().unwrap() = 255);
        rx.feed_padding(8, 12, 3, |d| {
            d.truncate(40);
            *d.last_mut().unwrap() = 30;
        });
        assert_eq!(rx.stats.malformed, 2);
        assert_eq!(rx.stats.padding_packets, 5);
    }

    #[test]
    fn padding_on_the_media_ssrc_counts_for_the_media_stream_statistics() {
        let mut rx = Rx::new();
        assert!(rx.feed(0, 0));
        // A libwebrtc sender without RTX pads on the media SSRC with a media
        // RTP sequence number (here 1).
        let media_ssrc = rx.cfg.media_ssrc.to_be_bytes();
        let pt = rx.cfg.payload_type;
        rx.feed_padding(1, 1, 1, |d| {
            d[1] = pt;
            d[8..12].copy_from_slice(&media_ssrc);
        });
        assert_eq!(rx.stats.padding_packets, 1);
        let s = rx.stream.as_ref().unwrap();
        assert_eq!(s.media_seqs.highest(), Some(1));
        assert_eq!((s.rtx_ssrc, s.rtx_padding), (None, 0));
        assert_eq!(rx.session.stats().seq_end, 2);
        assert_eq!(rx.session.stats().packets_received, 1);
    }

    #[test]
    fn a_lone_jump_is_dropped_and_a_confirmed_one_is_followed() {
        let mut rx = Rx::new();
        for k in 0..10 {
            assert!(rx.feed(100 + k, k));
        }
        // One packet far ahead in sequence, one far ahead in frame id (2^31,
        // the unwrapper's "ahead" half-way point): both dropped, the stream
        // carries on where it was.
        assert!(!rx.feed(100 + 10 + MAX_DROPOUT + 1, 10));
        assert!(!rx.feed(110, 10 + (1 << 31)));
        assert_eq!(rx.stats.sequence_jumps, 2);
        assert!(rx.feed(110, 10));
        assert_eq!(rx.stats.reordered, 0);
        // Two strays that follow on from each other, with the real stream in
        // between: neither is believed.
        assert!(!rx.feed(20_000, 10));
        assert!(rx.feed(110, 10));
        assert!(!rx.feed(20_001, 10));
        assert_eq!(rx.stats.sequence_jumps, 4);
        assert_eq!(rx.session.stats().seq_end, 111);
        // Within the allowed dropout: taken as loss.
        assert!(rx.feed(110 + MAX_DROPOUT, 11));
        // A real jump (a sender that restarted its counters): the second packet
        // following on from the first confirms it.
        assert!(!rx.feed(40_000, 5_000));
        assert!(rx.feed(40_001, 5_001));
        assert!(rx.feed(40_002, 5_002));
        assert_eq!(rx.stats.sequence_jumps, 5);
        assert_eq!(rx.session.stats().seq_end, 40_003);
        assert_eq!(rx.stats.media_packets, 15);
    }

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn a_stray_datagram_does_not_lock_the_stream() {
        // One 12-byte RTP packet of another SSRC (a stray, or an attacker),
        // then the real sender: the stray has none of the extensions media
        // needs, so it locks nothing and the real stream is followed.
        let mut rx = Rx::new();
        let mut stray = vec![0x80, rx.cfg.payload_type, 0, 1, 0, 0, 0, 1];
        stray.extend_from_slice(&0xDEAD_BEEFu32.to_be_bytes());
        assert!(!rx.raw(&stray, addr(666), Instant::ZERO));
        assert!(rx.stream.is_none());
        assert_eq!(rx.stats.missing_extension, 1);
        for seq in 0..10 {
            assert!(rx.feed(seq, seq), "packet {seq}");
        }
        assert_eq!(rx.stats.media_packets, 10);
        assert_eq!(rx.stats.foreign_ssrc, 0);
        assert_eq!(rx.stream.as_ref().map(|s| s.peer), Some(addr(9)));
    }

    #[test]
    fn noise_never_locks_or_panics() {
        let mut rx = Rx::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..20_000u64 {
            // xorshift: deterministic noise of every length up to 300 B,
            // with RTP's version bits on half of it.
            let len = (i % 300) as usize;
            let mut d = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                d.push(x as u8);
            }
            if i % 2 == 0 && len > 1 {
                d[0] = 0x80 | (d[0] & 0x3F);
                d[1] = rx.cfg.payload_type;
            }
            assert!(!rx.raw(&d, addr(666), Instant::from_millis(i)));
        }
        assert!(rx.stream.is_none());
        assert_eq!(rx.stats.media_packets, 0);
        // The real sender still gets the stream.
        assert!(rx.feed(0, 0));
    }

    #[test]
    fn another_address_takes_the_stream_only_after_the_sender_falls_silent() {
        let mut rx = Rx::new();
        let ms = Instant::from_millis;
        for seq in 0..50 {
            assert!(rx.feed_full(seq, seq, seq, None, addr(9), ms(seq * 10)));
        }
        // A third party sends the stream's own packets from another port
        // while the sender is active: dropped, replies stay with the sender.
        for seq in 50..80 {
            assert!(!rx.feed_full(seq, seq, seq, None, addr(666), ms(seq * 10)));
            assert!(rx.feed_full(
                seq + 100,
                seq + 100,
                seq + 100,
                None,
                addr(9),
                ms(seq * 10 + 5)
            ));
        }
        assert_eq!(rx.stats.unexpected_source, 30);
        assert_eq!(rx.stream.as_ref().map(|s| s.peer), Some(addr(9)));
        // The sender falls silent (a NAT rebinding): after 1 s, a run of
        // 20 in-order packets from the new address moves the stream there.
        let t0 = 2_000;
        let mut took = None;
        for k in 0..30u64 {
            let seq = 200 + k;
            if rx.feed_full(seq, seq, seq, None, addr(7000), ms(t0 + k * 10)) && took.is_none() {
                took = Some(k);
            }
        }
        assert_eq!(took, Some(19), "taken over at packet {took:?}");
        assert_eq!(rx.stream.as_ref().map(|s| s.peer), Some(addr(7000)));
        assert_eq!(rx.stats.peer_changes, 1);
        // The old address is now the stranger.
        assert!(!rx.feed_full(300, 300, 300, None, addr(9), ms(t0 + 400)));
    }

    #[test]
    fn with_a_pinned_peer_no_one_else_is_heard() {
        // `--peer`: a stranger's packets are dropped even before the
        // stream is locked, and even after the peer falls silent.
        let mut rx = Rx::new();
        rx.pinned = Some(addr(9));
        let ms = Instant::from_millis;
        assert!(!rx.feed_full(0, 0, 0, None, addr(666), ms(1)));
        assert!(rx.stream.is_none());
        for seq in 1..10 {
            assert!(rx.feed_full(seq, seq, seq, None, addr(9), ms(seq * 10)));
        }
        for k in 0..40 {
            let seq = 100 + k;
            assert!(!rx.feed_full(seq, seq, seq, None, addr(666), ms(3_000 + k * 10)));
        }
        assert_eq!(rx.stats.unexpected_source, 41);
        assert_eq!(rx.stats.peer_changes, 0);
        assert_eq!(rx.stream.as_ref().map(|s| s.peer), Some(addr(9)));
    }
}
