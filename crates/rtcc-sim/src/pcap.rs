//! Classic libpcap files of Ethernet II / IPv4 (or IPv6) / UDP or TCP
//! frames, written by hand: the simulator's per-link captures
//! (`RunOptions::pcap_dir`) and rtcc-net's `rtcc send --pcap` /
//! `rtcc recv --pcap` both write through [`PcapWriter`].
//!
//! The format is the classic one of libpcap (the `pcap-savefile(5)` manual
//! page; draft-ietf-opsawg-pcap §3–4): a 24-byte file header — magic
//! `0xa1b23c4d` (nanosecond timestamps), version 2.4, zone and accuracy 0,
//! snapshot length [`SNAPLEN`], link type 1 (`LINKTYPE_ETHERNET`) — then per
//! packet a 16-byte record header (seconds, nanoseconds, captured length,
//! original length) and the frame. All fields are little-endian: the magic
//! tells a reader the byte order, so tshark and tcpdump read it on any host.
//! Nanoseconds because the simulator's clock is; tshark, tcpdump and
//! Wireshark read them (libpcap ≥ 1.5).
//!
//! A frame is built from its headers ([`FrameHeaders`]: Ethernet II with
//! locally administered MAC addresses derived from the IP address, IPv4
//! without options or IPv6 without extension headers, then UDP or TCP) and
//! its transport payload, given as a head of real bytes, a run of zeros and a
//! tail of real bytes ([`PcapWriter::write_frame`]): a simulated packet has
//! a few bytes of header and its size, and the zeros cost no copy. The
//! IPv4 header checksum and the UDP or TCP checksum (RFC 768, RFC 9293
//! §3.1, pseudo-header included) are computed over the real bytes; the
//! zeros add nothing to a ones'-complement sum, so the checksums are right
//! for the whole frame.
//!
//! Nothing is allocated per frame: headers are built in a fixed array and the
//! writer is buffered.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};

/// Snapshot length in the file header: frames up to this size are kept
/// whole (every frame we write: an IPv4 datagram is at most 65 535 bytes).
pub const SNAPLEN: u32 = 262_144;
/// `LINKTYPE_ETHERNET` (tcpdump.org link-layer header types).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Magic of a classic pcap file with nanosecond timestamps.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Bytes of the file header.
pub const FILE_HEADER_LEN: usize = 24;
/// Bytes of a record header.
pub const RECORD_HEADER_LEN: usize = 16;
/// Ethernet II header: destination, source, EtherType.
pub const ETHERNET_HEADER: usize = 14;
/// IPv4 header without options (RFC 791 §3.1).
pub const IPV4_HEADER: usize = 20;
/// IPv6 fixed header (RFC 8200 §3).
pub const IPV6_HEADER: usize = 40;
/// UDP header (RFC 768).
pub const UDP_HEADER: usize = 8;
/// TCP header without options (RFC 9293 §3.1).
pub const TCP_HEADER: usize = 20;
/// Largest TCP header, options included (data offset 15 words).
pub const TCP_HEADER_MAX: usize = 60;

/// TCP flags (RFC 9293 §3.1).
pub mod tcp_flags {
    /// More data follows at once (push).
    pub const PSH: u8 = 0x08;
    /// The acknowledgment number is valid.
    pub const ACK: u8 = 0x10;
}

const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
/// A run of zeros to write payload padding from, in slices.
static ZEROS: [u8; 4096] = [0; 4096];

/// A pcap file being written: the file header on creation, then a record per
/// [`PcapWriter::write_frame`]. Give it a buffered writer.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    records: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header to `out`.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut h = [0u8; FILE_HEADER_LEN];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs: 0 (UTC, accuracy unknown).
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, records: 0 })
    }

    /// Writes one frame at `ts_ns` nanoseconds (since the Unix epoch for a
    /// real capture, since the start of the run for a simulated one): the
    /// headers, then the transport payload as `head`, `zeros` zero bytes and
    /// `tail` (the lengths `headers` was built with).
    pub fn write_frame(
        &mut self,
        ts_ns: u64,
        headers: &FrameHeaders,
        head: &[u8],
        zeros: usize,
        tail: &[u8],
    ) -> io::Result<()> {
        let len = headers.len + head.len() + zeros + tail.len();
        // Our frames are at most 14 + 40 + 65 535 bytes, below SNAPLEN.
        let len32 = u32::try_from(len).unwrap_or(u32::MAX).min(SNAPLEN);
        let mut r = [0u8; RECORD_HEADER_LEN];
        r[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        r[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        r[8..12].copy_from_slice(&len32.to_le_bytes());
        r[12..16].copy_from_slice(&len32.to_le_bytes());
        self.out.write_all(&r)?;
        self.out.write_all(headers.bytes())?;
        self.out.write_all(head)?;
        let mut left = zeros;
        while left > 0 {
            let n = left.min(ZEROS.len());
            self.out.write_all(&ZEROS[..n])?;
            left -= n;
        }
        self.out.write_all(tail)?;
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The Ethernet, IP and UDP/TCP headers of one frame, built in place.
#[derive(Debug, Clone)]
pub struct FrameHeaders {
    buf: [u8; ETHERNET_HEADER + IPV6_HEADER + TCP_HEADER_MAX],
    len: usize,
}

/// The transport payload of a frame, as [`PcapWriter::write_frame`] takes
/// it: real bytes, zeros, real bytes.
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    /// Real bytes first.
    pub head: &'a [u8],
    /// Then this many zeros.
    pub zeros: usize,
    /// Then real bytes.
    pub tail: &'a [u8],
}

impl Payload<'_> {
    /// Bytes in all.
    pub fn len(&self) -> usize {
        self.head.len() + self.zeros + self.tail.len()
    }

    /// No byte at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl FrameHeaders {
    /// The headers of a UDP datagram from `src` to `dst` carrying `payload`.
    /// Both addresses must be of one family (a V4 and a V6 address: the
    /// source is mapped to the destination's family).
    pub fn udp(src: SocketAddr, dst: SocketAddr, payload: &Payload<'_>) -> FrameHeaders {
        let mut f = FrameHeaders::ip(src.ip(), dst.ip(), IPPROTO_UDP, UDP_HEADER + payload.len());
        let udp_len = UDP_HEADER + payload.len();
        let at = f.len;
        let h = &mut f.buf[at..at + UDP_HEADER];
        h[0..2].copy_from_slice(&src.port().to_be_bytes());
        h[2..4].copy_from_slice(&dst.port().to_be_bytes());
        h[4..6].copy_from_slice(&(udp_len.min(0xffff) as u16).to_be_bytes());
        f.len += UDP_HEADER;
        let mut sum = f.pseudo_header_sum(IPPROTO_UDP, udp_len);
        sum = add_bytes(sum, &f.buf[at..f.len]);
        sum = payload_sum(sum, payload);
        let mut c = fold(sum);
        // RFC 768: a computed checksum of zero is sent as all ones.
        if c == 0 {
            c = 0xffff;
        }
        f.buf[at + 6..at + 8].copy_from_slice(&c.to_be_bytes());
        f
    }

    /// The headers of a TCP segment from `src` to `dst`: sequence and
    /// acknowledgment numbers, `flags`, a receive window of 65 535, a header
    /// of `header_len` bytes (20–60, a multiple of 4; options are NOPs) and
    /// `payload`.
    pub fn tcp(
        src: SocketAddr,
        dst: SocketAddr,
        seq: u32,
        ack: u32,
        flags: u8,
        header_len: usize,
        payload: &Payload<'_>,
    ) -> FrameHeaders {
        let header_len = header_len.clamp(TCP_HEADER, TCP_HEADER_MAX) & !3;
        let seg_len = header_len + payload.len();
        let mut f = FrameHeaders::ip(src.ip(), dst.ip(), IPPROTO_TCP, seg_len);
        let at = f.len;
        let h = &mut f.buf[at..at + header_len];
        h[0..2].copy_from_slice(&src.port().to_be_bytes());
        h[2..4].copy_from_slice(&dst.port().to_be_bytes());
        h[4..8].copy_from_slice(&seq.to_be_bytes());
        h[8..12].copy_from_slice(&ack.to_be_bytes());
        h[12] = ((header_len / 4) as u8) << 4;
        h[13] = flags;
        h[14..16].copy_from_slice(&0xffffu16.to_be_bytes());
        h[16..20].fill(0);
        // No-operation options (RFC 9293 §3.2, kind 1) fill a longer header.
        h[TCP_HEADER..].fill(1);
        f.len += header_len;
        let mut sum = f.pseudo_header_sum(IPPROTO_TCP, seg_len);
        sum = add_bytes(sum, &f.buf[at..f.len]);
        sum = payload_sum(sum, payload);
        f.buf[at + 16..at + 18].copy_from_slice(&fold(sum).to_be_bytes());
        f
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Ethernet and IP headers for `transport_len` bytes of protocol `proto`.
    fn ip(src: IpAddr, dst: IpAddr, proto: u8, transport_len: usize) -> FrameHeaders {
        let mut f = FrameHeaders {
            buf: [0; ETHERNET_HEADER + IPV6_HEADER + TCP_HEADER_MAX],
            len: ETHERNET_HEADER,
        };
        let (src, dst) = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V6(d)) => (IpAddr::V6(s.to_ipv6_mapped()), IpAddr::V6(d)),
            (IpAddr::V6(s), IpAddr::V4(d)) => (IpAddr::V6(s), IpAddr::V6(d.to_ipv6_mapped())),
            pair => pair,
        };
        f.buf[0..6].copy_from_slice(&mac_of(dst));
        f.buf[6..12].copy_from_slice(&mac_of(src));
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                f.buf[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
                let total = (IPV4_HEADER + transport_len).min(0xffff) as u16;
                let h = &mut f.buf[ETHERNET_HEADER..ETHERNET_HEADER + IPV4_HEADER];
                h[0] = 0x45;
                h[2..4].copy_from_slice(&total.to_be_bytes());
                // Identification 0 with don't-fragment set (RFC 6864 §4.1).
                h[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
                h[8] = 64;
                h[9] = proto;
                h[12..16].copy_from_slice(&s.octets());
                h[16..20].copy_from_slice(&d.octets());
                let c = fold(add_bytes(0, h));
                h[10..12].copy_from_slice(&c.to_be_bytes());
                f.len += IPV4_HEADER;
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                f.buf[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
                let h = &mut f.buf[ETHERNET_HEADER..ETHERNET_HEADER + IPV6_HEADER];
                h[0] = 0x60;
                h[4..6].copy_from_slice(&(transport_len.min(0xffff) as u16).to_be_bytes());
                h[6] = proto;
                h[7] = 64;
                h[8..24].copy_from_slice(&s.octets());
                h[24..40].copy_from_slice(&d.octets());
                f.len += IPV6_HEADER;
            }
            // Mapped to one family above.
            _ => {}
        }
        f
    }

    /// Ones'-complement sum of the pseudo-header (RFC 768; RFC 8200 §8.1).
    fn pseudo_header_sum(&self, proto: u8, transport_len: usize) -> u32 {
        let ip = &self.buf[ETHERNET_HEADER..];
        let (addrs, len) = if self.buf[12..14] == [0x08, 0x00] {
            (&ip[12..20], (transport_len.min(0xffff)) as u32)
        } else {
            (&ip[8..40], transport_len.min(0xffff) as u32)
        };
        let sum = add_bytes(0, addrs);
        sum + u32::from(proto) + (len >> 16) + (len & 0xffff)
    }
}

/// A locally administered unicast MAC address for `ip`: `02:00` then the
/// last four bytes of the address.
fn mac_of(ip: IpAddr) -> [u8; 6] {
    let o = match ip {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(a) => {
            let b = a.octets();
            [b[12], b[13], b[14], b[15]]
        }
    };
    [0x02, 0x00, o[0], o[1], o[2], o[3]]
}

/// Adds `bytes` as big-endian 16-bit words to a ones'-complement sum
/// (RFC 1071), an odd last byte padded with zero.
fn add_bytes(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
        // Fold early: no overflow however long the input.
        if sum > 0xffff_0000 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

/// The sum over a payload: the zeros add nothing, but shift the tail to an
/// odd offset when there is an odd number of bytes before it.
fn payload_sum(sum: u32, p: &Payload<'_>) -> u32 {
    let sum = add_bytes(sum, p.head);
    if (p.head.len() + p.zeros) % 2 == 0 {
        add_bytes(sum, p.tail)
    } else {
        // The tail starts in the low byte of a word: its first byte pairs
        // with the zero (or head byte) before it.
        match p.tail.split_first() {
            Some((first, rest)) => add_bytes(sum + u32::from(*first), rest),
            None => sum,
        }
    }
}

/// Folds a sum to 16 bits and complements it.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checksum over a whole buffer: zero (as all ones) when it is valid.
    fn verify(bytes: &[u8], seed: u32) -> u16 {
        fold(add_bytes(seed, bytes))
    }

    #[test]
    fn the_file_header_is_the_classic_nanosecond_one() {
        let w = PcapWriter::new(Vec::new()).unwrap();
        let h = w.out;
        assert_eq!(h.len(), 24);
        assert_eq!(&h[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(u16::from_le_bytes([h[4], h[5]]), 2);
        assert_eq!(u16::from_le_bytes([h[6], h[7]]), 4);
        assert_eq!(u32::from_le_bytes([h[20], h[21], h[22], h[23]]), 1);
    }

    #[test]
    fn a_udp_frame_has_valid_checksums_with_zeros_and_an_odd_tail() {
        let src: SocketAddr = "10.1.0.3:5004".parse().unwrap();
        let dst: SocketAddr = "10.2.0.3:5004".parse().unwrap();
        let head = [0x80u8, 0x60, 0x12, 0x34, 0xaa];
        let tail = [0x07u8, 0x11, 0x22];
        let p = Payload {
            head: &head,
            zeros: 7,
            tail: &tail,
        };
        let h = FrameHeaders::udp(src, dst, &p);
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_frame(1_500_000_123, &h, &head, 7, &tail).unwrap();
        let buf = &w.out[24..];
        assert_eq!(u32::from_le_bytes(buf[0..4].try_into().unwrap()), 1);
        assert_eq!(
            u32::from_le_bytes(buf[4..8].try_into().unwrap()),
            500_000_123
        );
        let frame = &buf[16..];
        assert_eq!(frame.len(), 14 + 20 + 8 + 15);
        assert_eq!(u32::from_le_bytes(buf[8..12].try_into().unwrap()), 57);
        let ip = &frame[14..34];
        assert_eq!(verify(ip, 0), 0, "IPv4 header checksum");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 20 + 8 + 15);
        let udp = &frame[34..];
        let pseudo = add_bytes(0, &ip[12..20]) + 17 + udp.len() as u32;
        assert_eq!(verify(udp, pseudo), 0, "UDP checksum");
    }

    #[test]
    fn a_tcp_frame_has_a_valid_checksum_and_its_header_length() {
        let src: SocketAddr = "10.1.0.1:49152".parse().unwrap();
        let dst: SocketAddr = "10.2.0.1:5201".parse().unwrap();
        let p = Payload {
            head: &[],
            zeros: 1000,
            tail: &[],
        };
        let h = FrameHeaders::tcp(src, dst, 7, 9, tcp_flags::ACK, 32, &p);
        let b = h.bytes();
        assert_eq!(b.len(), 14 + 20 + 32);
        let tcp = &b[34..];
        assert_eq!(tcp[12] >> 4, 8);
        let pseudo = add_bytes(0, &b[26..34]) + 6 + 1032;
        assert_eq!(verify(tcp, pseudo), 0, "TCP checksum");
    }

    #[test]
    fn ipv6_frames_carry_the_v6_header() {
        let src: SocketAddr = "[::1]:5004".parse().unwrap();
        let dst: SocketAddr = "[::1]:5006".parse().unwrap();
        let head = [1u8, 2, 3];
        let p = Payload {
            head: &head,
            zeros: 0,
            tail: &[],
        };
        let h = FrameHeaders::udp(src, dst, &p);
        let b = h.bytes();
        assert_eq!(&b[12..14], &[0x86, 0xdd]);
        assert_eq!(b.len(), 14 + 40 + 8);
        let udp = [&b[54..], &head[..]].concat();
        let pseudo = add_bytes(0, &b[22..54]) + 17 + udp.len() as u32;
        assert_eq!(verify(&udp, pseudo), 0, "UDP checksum over IPv6");
    }
}
