//! Packet captures of the simulated links (`RunOptions::pcap_dir`): one
//! classic pcap file per link, `<link name>.pcap`, with a record per packet
//! the link forwards, written by [`crate::pcap::PcapWriter`].
//!
//! What a record is (docs/scenarios.md, "Packet captures"):
//!
//! - **When**: the packet's departure from the link, the instant its last
//!   bit leaves the transmitter (after queueing and transmission, before
//!   propagation delay and jitter), in nanoseconds since the start of the
//!   run. Departures of a FIFO link never decrease, so a file's timestamps
//!   are monotone. Packets the link drops (queue full, random loss, outage)
//!   have no record: a file holds `packets − drops` records of its link in
//!   `summary.json`.
//! - **Framing**: Ethernet II / IPv4 / UDP, or TCP for TCP flows. The IPv4
//!   total length is the packet's simulated size (which counts IPv4, UDP and
//!   RTP headers, `rtcc_core::media::packetizer::DEFAULT_HEADER_OVERHEAD`);
//!   a packet smaller than the headers written for it grows to them.
//! - **Addresses** (deterministic, per flow index `i` in scenario order and
//!   path `p`, 0 but on the other paths of a multipath flow; `n = i + 1`):
//!   the sender is `10.(1+2p).(n/256).(n%256)`, the receiver
//!   `10.(2+2p).(n/256).(n%256)` (flow 0: 10.1.0.1 → 10.2.0.1);
//!   MAC addresses are `02:00` and the IPv4 address. Ports: RTP media 5004
//!   and RTCP 5005 on both ends (the RFC 3550 §11 even/odd pair, no
//!   RTCP multiplexing); TCP from 49152 + `i % 16384` to 5201; CBR 5001,
//!   TFRC data 5006 and its feedback 5007, live flows 6000, on both ends.
//! - **Bytes**: media packets carry a real RTP header (RFC 3550 §5.1):
//!   version 2, payload type 96, the packet's RTP sequence number, a 90 kHz
//!   timestamp of its frame's capture time, SSRC `0x1000_0000 + 256·i + 2p`,
//!   the marker bit on a frame's last packet, and the transport-wide
//!   sequence number in an RFC 8285 one-byte extension (id 1), then zeros
//!   up to the packet's size. Retransmissions, repair copies and probe
//!   padding go on the RFC 4588 retransmission stream (payload type 97,
//!   SSRC + 1) as in rtcc-net, numbered from 0 in the order the sender
//!   sends them (`Flow::rtx_seq`; a multipath flow's padding per path,
//!   `MpPath::rtx_seq`); a retransmission's payload starts with the original sequence number, a
//!   probe's is RTP padding. NACKs are real RFC 4585 generic NACKs. The
//!   transport feedback is a real RTCP compound: an empty receiver report,
//!   then the report's transport-wide CC packets
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1, written by
//!   `rtcc_core::feedback::twcc::Plan::write`, the bytes rtcc-net's `rtcp`
//!   crate writes for the same report; its feedback packet count counts the
//!   flow's reports this link has carried), and a picture-loss indication
//!   when the report asks for a key frame. The simulator sizes feedback by
//!   `WireFeedback::wire_size` (2 bytes a packet); what that size holds
//!   beyond the real packets is an RTCP APP packet (subtype 0, name `RTCC`,
//!   zeros) after the RR, or one or two empty SDES packets for 4 or 8 bytes;
//!   a record whose real packets exceed the size is longer than the
//!   simulated packet. The receiver's RTCP SSRC is
//!   `0x2000_0000 + 256·i + 2p`. TCP segments carry the simulated sequence
//!   and acknowledgment numbers (low 32 bits) and their payload length; a
//!   header longer than 20 bytes is filled with NOP options. CBR, TFRC and
//!   live packets are UDP; TFRC and live data start with their sequence or
//!   packet number (64 bits), the rest is zeros; TFRC feedback is an RTCP
//!   APP packet (subtype 1, name `RTCC`, data: the first sequence number
//!   reported and the count, then zeros) of the feedback's size, on the TFRC
//!   feedback port.
//!
//! Only [`World::capture`] runs per packet, and only when captures are on:
//! `hop` tests one `Option` otherwise, and the run is the same with or
//! without captures (`pcap_changes_no_output` in `tests/pcap.rs`). Nothing is
//! allocated per packet: the payload head is built in a scratch buffer that
//! grows to the largest NACK or feedback and is reused, as are the TWCC
//! plan's buffers.

use std::fs::File;
use std::io::{self, BufWriter};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};

use rtcc_core::feedback::twcc;
use rtcc_core::Instant;

use super::arena::{Body, ColdBody};
use super::{Dir, World};
use crate::pcap::{tcp_flags, FrameHeaders, Payload, PcapWriter, IPV4_HEADER, UDP_HEADER};
use crate::scenario::FlowKind;

/// RTP payload type of simulated media (rtcc-net's default, the first
/// dynamic type, RFC 3551 §6).
pub(crate) const MEDIA_PAYLOAD_TYPE: u8 = 96;
/// RTP payload type of the retransmission stream (RFC 4588; rtcc-net's default).
pub(crate) const RTX_PAYLOAD_TYPE: u8 = 97;
/// UDP port of RTP media on both ends.
pub(crate) const RTP_PORT: u16 = 5004;
/// UDP port of RTCP on both ends (RTP + 1, RFC 3550 §11).
pub(crate) const RTCP_PORT: u16 = 5005;
/// UDP port of CBR flows on both ends (iperf's).
pub(crate) const CBR_PORT: u16 = 5001;
/// UDP port of TFRC data on both ends.
pub(crate) const TFRC_PORT: u16 = 5006;
/// UDP port of TFRC feedback on both ends.
pub(crate) const TFRC_FEEDBACK_PORT: u16 = 5007;
/// UDP port of live flows on both ends.
pub(crate) const LIVE_PORT: u16 = 6000;
/// TCP port of a TCP flow's receiver (iperf3's).
pub(crate) const TCP_SERVER_PORT: u16 = 5201;
/// First TCP port of the senders (the dynamic range, RFC 6335 §6).
pub(crate) const TCP_CLIENT_PORT_BASE: u16 = 49152;

/// RTP fixed header (RFC 3550 §5.1).
const RTP_HEADER: usize = 12;
/// The RFC 8285 one-byte extension block with the transport-wide sequence
/// number: 0xBEDE, length 1 word, then id 1 / length 2, the number, a zero pad.
const TWCC_EXTENSION: usize = 8;
/// RTCP packet types (RFC 3550 §12.1, RFC 4585 §6.1).
const RTCP_RR: u8 = 201;
const RTCP_SDES: u8 = 202;
const RTCP_APP: u8 = 204;
const RTCP_RTPFB: u8 = 205;
const RTCP_PSFB: u8 = 206;
/// The APP subtype of TFRC feedback.
const APP_SUBTYPE_TFRC: u8 = 1;
/// The APP subtype of the filler after a feedback's RR.
const APP_SUBTYPE_FILL: u8 = 0;
/// Bytes of an APP packet's header and the data we put in TFRC's.
const APP_MIN: usize = 12 + 8;
/// Largest TWCC packet in a capture (rtcc-net's default RTCP datagram).
const TWCC_MAX: usize = 1200;
/// A picture-loss indication (RFC 4585 §6.3.1): header, two SSRCs.
const PLI_LEN: usize = 12;

/// The open capture files, one per link, and the scratch they share.
pub(crate) struct PcapLinks {
    files: Vec<PcapWriter<BufWriter<File>>>,
    scratch: Vec<u8>,
    /// The TWCC packet being written (its buffers reused).
    plan: twcc::Plan,
    /// Per link and flow (`link * flows + flow`): the feedback packet count
    /// and the last reference time written (`twcc_state`).
    twcc: Vec<(u8, u32)>,
    /// Flows in the scenario.
    flows: usize,
}

/// The file name of link `name`'s capture: the name with anything but
/// ASCII letters, digits, `-`, `_` and `.` replaced by `_`, then `.pcap`.
pub(crate) fn pcap_file_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.pcap")
}

impl World {
    /// Opens a capture file per link in `dir` (an existing folder).
    pub(crate) fn open_pcap(&mut self, dir: &Path) -> Result<(), (PathBuf, io::Error)> {
        let mut files = Vec::with_capacity(self.link_names.len());
        for name in &self.link_names {
            let path = dir.join(pcap_file_name(name));
            let file = File::create(&path).map_err(|e| (path.clone(), e))?;
            let w = PcapWriter::new(BufWriter::with_capacity(1 << 16, file))
                .map_err(|e| (path.clone(), e))?;
            files.push(w);
        }
        let flows = self.flows.len();
        self.pcap = Some(Box::new(PcapLinks {
            twcc: vec![(0, 0); files.len() * flows],
            files,
            scratch: Vec::with_capacity(256),
            plan: twcc::Plan::default(),
            flows,
        }));
        Ok(())
    }

    /// Flushes the capture files, if any.
    pub(crate) fn flush_pcap(&mut self) -> io::Result<()> {
        if let Some(pc) = &mut self.pcap {
            for f in &mut pc.files {
                f.flush()?;
            }
        }
        Ok(())
    }

    /// Records packet `idx`, which link `link` has just accepted for
    /// delivery, in the link's capture (the module doc says what).
    #[cold]
    #[inline(never)]
    pub(super) fn capture(&mut self, idx: u32, link: usize) {
        let Some(pc) = self.pcap.as_deref_mut() else {
            return;
        };
        let p = self.packets[idx as usize];
        let ts = self.links[link].last_departure().as_nanos();
        let flow = p.flow;
        let kind = self.flows[flow as usize].kind;
        let ip_len = p.size.get() as usize;
        let udp_room = ip_len.saturating_sub(IPV4_HEADER + UDP_HEADER);
        let ssrc = 0x1000_0000u32
            .wrapping_add(flow.wrapping_mul(256))
            .wrapping_add(2 * u32::from(p.path));
        let rtcp_ssrc = ssrc.wrapping_add(0x1000_0000);
        let buf = &mut pc.scratch;
        buf.clear();
        let mut tail = [0u8; PLI_LEN];
        let mut tail_len = 0;
        // (head built in `buf`, UDP port, transport length) or a TCP segment.
        let port = match p.body {
            Body::Cold => match self.cold[idx as usize] {
                ColdBody::Media {
                    seq,
                    media,
                    meta,
                    rtx,
                } => {
                    let ts90 = rtp_timestamp(meta.capture_time);
                    if media.retransmission || meta.repair {
                        rtp_header(
                            buf,
                            RTX_PAYLOAD_TYPE,
                            meta.last_in_frame,
                            rtx,
                            ts90,
                            ssrc + 1,
                            seq as u16,
                            udp_room,
                        );
                        // RFC 4588 §4: the original sequence number first.
                        buf.extend_from_slice(&media.seq.to_be_bytes());
                    } else {
                        rtp_header(
                            buf,
                            MEDIA_PAYLOAD_TYPE,
                            meta.last_in_frame,
                            media.seq,
                            ts90,
                            ssrc,
                            seq as u16,
                            udp_room,
                        );
                    }
                    RTP_PORT
                }
                ColdBody::MpMedia { seq, meta } => {
                    rtp_header(
                        buf,
                        MEDIA_PAYLOAD_TYPE,
                        meta.last_in_frame,
                        seq as u16,
                        rtp_timestamp(meta.capture_time),
                        ssrc,
                        seq as u16,
                        udp_room,
                    );
                    RTP_PORT
                }
                ColdBody::LiveData { pn, .. }
                | ColdBody::LiveRepair { pn, .. }
                | ColdBody::LivePing { pn } => {
                    buf.extend_from_slice(&pn.to_be_bytes());
                    LIVE_PORT
                }
            },
            Body::Padding { seq, rtx } | Body::MpPadding { seq, rtx } => {
                rtp_header(
                    buf,
                    RTX_PAYLOAD_TYPE,
                    false,
                    rtx,
                    rtp_timestamp(p.sent),
                    ssrc + 1,
                    seq as u16,
                    udp_room,
                );
                // RFC 3550 §5.1 padding: the P bit, the count in the last octet.
                let count = udp_room.saturating_sub(buf.len()).min(255);
                if count > 0 {
                    buf[0] |= 0x20;
                    tail[0] = count as u8;
                    tail_len = 1;
                }
                RTP_PORT
            }
            Body::Feedback { slot } | Body::MpFeedback { slot } if kind != FlowKind::Tfrc => {
                let fb = &self.fb_pool[slot as usize];
                let pli = if fb.key_frame_request { PLI_LEN } else { 0 };
                // RFC 3550 §6.1: a compound packet starts with a report, an
                // empty RR when there is nothing to report (as rtcc-net's).
                buf.extend_from_slice(&[0x80, RTCP_RR, 0, 1]);
                buf.extend_from_slice(&rtcp_ssrc.to_be_bytes());
                let filler_at = buf.len();
                let state = &mut pc.twcc[link * pc.flows + flow as usize];
                let mut start = 0;
                while start < fb.packets.len() {
                    start = pc.plan.build(&fb.packets, start, TWCC_MAX);
                    if let Some(r) = pc.plan.reference {
                        state.1 = (r & ((1 << twcc::REFERENCE_BITS) - 1)) as u32;
                    }
                    pc.plan.write((rtcp_ssrc, ssrc), state.1, state.0, buf);
                    // The 8-bit feedback packet count wraps (§3.1).
                    state.0 = state.0.wrapping_add(1);
                }
                if pli > 0 {
                    tail[0] = 0x81;
                    tail[1] = RTCP_PSFB;
                    tail[2..4].copy_from_slice(&2u16.to_be_bytes());
                    tail[4..8].copy_from_slice(&rtcp_ssrc.to_be_bytes());
                    tail[8..12].copy_from_slice(&ssrc.to_be_bytes());
                    tail_len = PLI_LEN;
                }
                // What the simulated size holds beyond the real packets
                // (`WireFeedback::wire_size` estimates 2 bytes a packet):
                // an APP packet after the RR, or empty SDES packets for 4
                // or 8 bytes.
                let room = udp_room.saturating_sub(buf.len() + tail_len);
                fill(buf, filler_at, room - room % 4, rtcp_ssrc);
                RTCP_PORT
            }
            Body::Feedback { slot } | Body::MpFeedback { slot } | Body::TfrcFeedback { slot } => {
                // TFRC feedback (RFC 5348 §6.2 gives its content, not its
                // bytes): an APP packet of the feedback's size.
                let fb = &self.fb_pool[slot as usize];
                let app_len = udp_room.max(APP_MIN).next_multiple_of(4);
                buf.push(0x80 | APP_SUBTYPE_TFRC);
                buf.push(RTCP_APP);
                buf.extend_from_slice(&((app_len / 4 - 1) as u16).to_be_bytes());
                buf.extend_from_slice(&rtcp_ssrc.to_be_bytes());
                buf.extend_from_slice(b"RTCC");
                let first = fb.packets.first().map_or(0, |&(s, _)| s as u32);
                buf.extend_from_slice(&first.to_be_bytes());
                buf.extend_from_slice(&(fb.packets.len() as u32).to_be_bytes());
                // The zeros up to `app_len` come from the writer.
                let zeros = app_len - buf.len();
                return self.write_udp(idx, link, ts, TFRC_FEEDBACK_PORT, zeros, &[]);
            }
            Body::Nack { slot } => {
                let nack = &self.nack_pool[slot as usize];
                buf.extend_from_slice(&[0x81, RTCP_RTPFB, 0, 0]);
                buf.extend_from_slice(&rtcp_ssrc.to_be_bytes());
                buf.extend_from_slice(&ssrc.to_be_bytes());
                // RFC 4585 §6.2.1 FCIs, packed greedily as `Nack::fci_count`
                // counts them: a PID, and a bit in its BLP for each of the 16
                // numbers after it.
                let mut pid: Option<(u16, usize)> = None;
                for &s in &nack.seqs {
                    match pid {
                        Some((p, _)) if s == p => {}
                        Some((p, at)) if s.wrapping_sub(p) <= 16 => {
                            let bit = 1u16 << (s.wrapping_sub(p) - 1);
                            let blp = u16::from_be_bytes([buf[at + 2], buf[at + 3]]) | bit;
                            buf[at + 2..at + 4].copy_from_slice(&blp.to_be_bytes());
                        }
                        _ => {
                            pid = Some((s, buf.len()));
                            buf.extend_from_slice(&s.to_be_bytes());
                            buf.extend_from_slice(&[0, 0]);
                        }
                    }
                }
                let words = (buf.len() / 4 - 1) as u16;
                buf[2..4].copy_from_slice(&words.to_be_bytes());
                RTCP_PORT
            }
            Body::TfrcData { seq } => {
                buf.extend_from_slice(&seq.to_be_bytes());
                TFRC_PORT
            }
            Body::Cbr => CBR_PORT,
            Body::LiveAck { .. } => LIVE_PORT,
            Body::Seg(seg) => {
                let payload = seg.len as usize;
                let header = ip_len.saturating_sub(IPV4_HEADER + payload);
                return self.write_tcp(link, ts, (flow, p.dir), seg.seq as u32, 0, header, payload);
            }
            Body::Ack(a) => {
                let header = ip_len.saturating_sub(IPV4_HEADER);
                return self.write_tcp(link, ts, (flow, p.dir), 0, a.ack as u32, header, 0);
            }
        };
        let used = self.pcap.as_ref().map_or(0, |pc| pc.scratch.len()) + tail_len;
        let zeros = udp_room.saturating_sub(used);
        self.write_udp(idx, link, ts, port, zeros, &tail[..tail_len]);
    }

    /// Writes the UDP frame of packet `idx` with the head in the scratch
    /// buffer, `zeros` and `tail`, between its flow's ends at `port`.
    fn write_udp(&mut self, idx: u32, link: usize, ts: u64, port: u16, zeros: usize, tail: &[u8]) {
        let p = self.packets[idx as usize];
        let (src, dst) = ends(p.flow, p.path, p.dir, port, port);
        let Some(pc) = self.pcap.as_deref_mut() else {
            return;
        };
        let payload = Payload {
            head: &pc.scratch,
            zeros,
            tail,
        };
        let h = FrameHeaders::udp(src, dst, &payload);
        if let Err(e) = pc.files[link].write_frame(ts, &h, &pc.scratch, zeros, tail) {
            self.io_error.get_or_insert(e);
        }
    }

    /// Writes a TCP segment (or ACK) of flow `flow` in direction `dir`.
    #[expect(
        clippy::too_many_arguments,
        reason = "the header fields of one segment, one by one"
    )]
    fn write_tcp(
        &mut self,
        link: usize,
        ts: u64,
        (flow, dir): (u32, Dir),
        seq: u32,
        ack: u32,
        header: usize,
        payload: usize,
    ) {
        let client = TCP_CLIENT_PORT_BASE + (flow % 16384) as u16;
        let (src, dst) = ends(flow, 0, dir, client, TCP_SERVER_PORT);
        let Some(pc) = self.pcap.as_deref_mut() else {
            return;
        };
        let body = Payload {
            head: &[],
            zeros: payload,
            tail: &[],
        };
        let flags = tcp_flags::ACK | if payload > 0 { tcp_flags::PSH } else { 0 };
        let h = FrameHeaders::tcp(src, dst, seq, ack, flags, header, &body);
        if let Err(e) = pc.files[link].write_frame(ts, &h, &[], payload, &[]) {
            self.io_error.get_or_insert(e);
        }
    }
}

/// The addresses of a packet of flow `flow` on path `path` in direction
/// `dir` (module doc): the sender's end has `sender_port`, the receiver's
/// Inserts `room` bytes (a multiple of 4) of RTCP at `at` in `buf`: an APP
/// packet (subtype 0, name `RTCC`, zeros) from 12 bytes, else one or two
/// empty SDES packets (RFC 3550 §6.5, SC = 0). Moves the bytes after `at`,
/// within the buffer's capacity once it has grown.
fn fill(buf: &mut Vec<u8>, at: usize, room: usize, ssrc: u32) {
    if room == 0 {
        return;
    }
    let old = buf.len();
    buf.resize(old + room, 0);
    buf.copy_within(at..old, at + room);
    let f = &mut buf[at..at + room];
    f.fill(0);
    if room >= 12 {
        f[0] = 0x80 | APP_SUBTYPE_FILL;
        f[1] = RTCP_APP;
        f[2..4].copy_from_slice(&((room / 4 - 1) as u16).to_be_bytes());
        f[4..8].copy_from_slice(&ssrc.to_be_bytes());
        f[8..12].copy_from_slice(b"RTCC");
    } else {
        for sdes in f.chunks_exact_mut(4) {
            sdes[0] = 0x80;
            sdes[1] = RTCP_SDES;
        }
    }
}

/// `receiver_port`.
fn ends(
    flow: u32,
    path: u8,
    dir: Dir,
    sender_port: u16,
    receiver_port: u16,
) -> (SocketAddr, SocketAddr) {
    // Host numbers from 1: flow 0 is 10.1.0.1, not a network address.
    let host = flow.wrapping_add(1);
    let (hi, lo) = ((host >> 8) as u8, host as u8);
    let net = 1 + 2 * path.min(126);
    let sender = SocketAddr::V4(SocketAddrV4::new(
        Ipv4Addr::new(10, net, hi, lo),
        sender_port,
    ));
    let receiver = SocketAddr::V4(SocketAddrV4::new(
        Ipv4Addr::new(10, net + 1, hi, lo),
        receiver_port,
    ));
    match dir {
        Dir::Fwd => (sender, receiver),
        Dir::Rev => (receiver, sender),
    }
}

/// The 90 kHz RTP timestamp of `t` (RFC 3551 §5; rtcc-net's `rtp_timestamp`
/// with offset 0), wrapping at 2^32.
pub(crate) fn rtp_timestamp(t: Instant) -> u32 {
    (u128::from(t.as_nanos()) * 90_000 / 1_000_000_000) as u32
}

/// Writes an RTP fixed header, and the transport-wide sequence number
/// extension when `room` (the UDP payload's size) has space for it.
#[expect(
    clippy::too_many_arguments,
    reason = "the fields of an RTP header, one by one"
)]
fn rtp_header(
    buf: &mut Vec<u8>,
    pt: u8,
    marker: bool,
    seq: u16,
    ts: u32,
    ssrc: u32,
    transport_seq: u16,
    room: usize,
) {
    let ext = room >= RTP_HEADER + TWCC_EXTENSION;
    buf.push(0x80 | if ext { 0x10 } else { 0 });
    buf.push(if marker { 0x80 } else { 0 } | pt);
    buf.extend_from_slice(&seq.to_be_bytes());
    buf.extend_from_slice(&ts.to_be_bytes());
    buf.extend_from_slice(&ssrc.to_be_bytes());
    if ext {
        buf.extend_from_slice(&[0xbe, 0xde, 0, 1, 0x11]);
        buf.extend_from_slice(&transport_seq.to_be_bytes());
        buf.push(0);
    }
}
