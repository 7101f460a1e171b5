//! RTCP: the receiver's congestion-control feedback and key-frame requests,
//! sender and receiver reports, and a compound-packet decoder.
//!
//! Receiver side: [`FeedbackEncoder::encode`] turns a core [`WireFeedback`]
//! into RTCP datagrams: transport-wide CC feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1) or RFC 8888, and a
//! PLI (RFC 4585 §6.3.1) when the receiver asks for a key frame;
//! [`FeedbackEncoder::append_nack`] adds generic NACKs (RFC 4585 §6.2.1) to
//! the same compound datagram. Every datagram is a full compound packet
//! (RFC 3550 §6.1): an empty receiver report and an SDES packet with the
//! receiver's CNAME come first, then the feedback, the PLI and the NACKs.
//! WebRTC sends reduced-size RTCP (RFC 5506 §3: feedback alone), but only
//! where `a=rtcp-rsize` was negotiated; a peer that did not offer it, such as
//! GStreamer's rtpbin, validates compounds by RFC 3550 Appendix A.2 and
//! drops the ones that do not start with SR or RR.
//!
//! Sender side: [`decode_rtcp`] parses a compound datagram (RFC 3550 §6.1) into
//! [`RtcpMessages`]; [`FeedbackDecoder::feedback`] turns its feedback and PLIs
//! back into a [`WireFeedback`] for `SenderSession::handle_feedback`.
//!
//! # Splitting (size limits)
//! One feedback packet covers a run of *consecutive* sequence numbers; a report
//! is split into several packets at every gap (a packet that arrived after being
//! reported lost is re-reported alone, and the sequence numbers between it and
//! the rest must not be reported again), when a TWCC packet would exceed 65 535
//! statuses (§3.1, 16-bit count) or a receive delta would exceed ±8191.75 ms
//! (§3.1.5, 16-bit signed in 250 µs), when an RFC 8888 block would exceed 16 384
//! reports (RFC 8888 §3.1), and when a packet would not fit
//! [`WireConfig::max_rtcp_datagram`] less the RR and SDES head and 12 bytes
//! kept for a PLI (with the
//! default 1200 B: about 540 TWCC statuses with 1-byte deltas, 590 RFC 8888
//! reports). Packets are then packed into as few datagrams as fit.
//!
//! # Time origins of decoded arrivals
//! - TWCC: a decoded arrival is the receiver's core-clock `Instant` of arrival,
//!   rounded to the nearest 250 µs, minus k × 2^24 × 64 ms (≈ 12.43 days), where
//!   k fixes the 24-bit reference time's era at the first report the decoder
//!   sees (k = 0 while the receiver has run less than 12.43 days, which it always
//!   has with `rtcc_net::clock::Clock`). Later wraps are unwrapped, so arrivals
//!   are monotone in time across reports. TWCC carries no report time: the
//!   decoded `report_time` is the latest arrival in the datagram (a round-trip
//!   sample then includes the receiver's hold time, up to one feedback interval;
//!   use SR/RR for RTT).
//! - RFC 8888: arrivals and `report_time` are the receiver's NTP time
//!   (nanoseconds, from the start of the 2^16 s ≈ 18.2 h era the first report
//!   falls in), the report time to 1/65536 s and arrivals to 1/2048 s.
//!
//! Either way only differences between decoded arrivals mean anything, which is
//! all GCC and the other controllers use (see `rtcc_core::packet::FeedbackReport`).

use rtcc_core::feedback::{Nack, WireFeedback};
use rtcc_core::packet::SeqNo;
use rtcc_core::time::Instant;
use rtcp::payload_feedbacks::picture_loss_indication::PictureLossIndication;
use rtcp::receiver_report::ReceiverReport;
use rtcp::reception_report::ReceptionReport;
use rtcp::sender_report::SenderReport;
use webrtc_util::marshal::{Marshal, MarshalSize, Unmarshal};

use super::ccfb::{self, CcfbPacket, ATO_OVER_RANGE, ATO_PER_SECOND, ATO_UNAVAILABLE};
use super::nack::{self, GenericNack};
use super::twcc::{self, TwccPacket, DELTA_UNIT_NS, REFERENCE_UNIT_NS};
use super::unwrap::{unwrap_near, Unwrapper};
use super::{need, FeedbackFormat, WireConfig, WireError};

/// Smallest [`WireConfig::max_rtcp_datagram`]: the RR and SDES head of a
/// compound with a CNAME of up to [`MAX_CNAME`] octets, a PLI and a feedback
/// packet with a few entries.
pub const MIN_RTCP_DATAGRAM: usize = 160;
/// Longest CNAME the encoders take (RFC 3550 §6.5 allows 255 octets; 64 is
/// ours, to keep the compound head small: RFC 7022's random CNAMEs are 16–24).
pub const MAX_CNAME: usize = 64;
/// The CNAME used when none is set (RFC 3550 §6.5.1; the SDP's `a=ssrc:…
/// cname:` must name the same, RFC 5576 §6.1).
pub const DEFAULT_CNAME: &str = "rtcc";
/// A PLI is 12 bytes (RFC 4585 §6.3.1: common header and two SSRCs).
pub const PLI_LEN: usize = 12;

// RTCP packet types (RFC 3550 §12.1, RFC 4585 §6.1) and feedback formats.
const PT_SR: u8 = 200;
const PT_RR: u8 = 201;
const PT_SDES: u8 = 202;
/// SDES item type CNAME (RFC 3550 §6.5.1).
const SDES_CNAME: u8 = 1;
const PT_RTPFB: u8 = 205;
const PT_PSFB: u8 = 206;
const FMT_TWCC: u8 = 15;
const FMT_PLI: u8 = 1;

/// Receiver side: writes [`WireFeedback`] as RTCP. Keeps the TWCC feedback
/// packet count and the last reference time.
#[derive(Debug, Clone)]
pub struct FeedbackEncoder {
    config: WireConfig,
    fb_count: u8,
    last_reference: u32,
    /// The empty RR and the SDES CNAME every datagram starts with.
    head: Vec<u8>,
    cname: String,
}

impl FeedbackEncoder {
    /// An encoder for `config` (validated).
    pub fn new(config: WireConfig) -> Result<Self, WireError> {
        config.validate()?;
        let mut enc = FeedbackEncoder {
            config,
            fb_count: 0,
            last_reference: 0,
            head: Vec::new(),
            cname: DEFAULT_CNAME.to_owned(),
        };
        enc.build_head()?;
        Ok(enc)
    }

    /// Address the feedback, NACKs and PLIs to the media stream `ssrc` (the
    /// one actually received; the configuration's `media_ssrc` until then).
    pub fn set_media_ssrc(&mut self, ssrc: u32) {
        self.config.media_ssrc = ssrc;
    }

    /// The CNAME of the SDES packet in every compound (RFC 3550 §6.5.1):
    /// 1–[`MAX_CNAME`] octets.
    pub fn set_cname(&mut self, cname: &str) -> Result<(), WireError> {
        check_cname(cname)?;
        cname.clone_into(&mut self.cname);
        self.build_head()
    }

    /// The CNAME in use.
    pub fn cname(&self) -> &str {
        &self.cname
    }

    /// RFC 3550 §6.1: "each individual RTCP packet is sent in a compound
    /// packet" whose first packet "MUST always be a report packet", an empty
    /// RR when there is nothing to report, followed by an SDES with CNAME.
    fn build_head(&mut self) -> Result<(), WireError> {
        self.head.clear();
        encode_receiver_report(self.config.feedback_ssrc, &[], &mut self.head)?;
        encode_sdes_cname(&[self.config.feedback_ssrc], &self.cname, &mut self.head)?;
        Ok(())
    }

    /// A new datagram holding the compound head.
    fn new_datagram(&self) -> Vec<u8> {
        self.head.clone()
    }

    /// The RTCP datagrams carrying `fb` (none if it has no packets and no
    /// key-frame request). `report_ntp` is the 64-bit NTP time of
    /// `fb.report_time` (`Clock::ntp_of`); only RFC 8888 uses it.
    pub fn encode(
        &mut self,
        fb: &WireFeedback,
        report_ntp: u64,
    ) -> Result<Vec<Vec<u8>>, WireError> {
        if fb.packets.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(WireError::UnsortedFeedback);
        }
        let ssrcs = (self.config.feedback_ssrc, self.config.media_ssrc);
        let head = self.head.len();
        let max_packet = self.config.max_rtcp_datagram - PLI_LEN - head;
        let mut rtcp_packets: Vec<Vec<u8>> = Vec::new();
        let mut i = 0;
        while i < fb.packets.len() {
            let mut bytes = Vec::new();
            match self.config.feedback_format {
                FeedbackFormat::TransportCc => {
                    let (end, p) = twcc::build(
                        &fb.packets,
                        i,
                        max_packet,
                        ssrcs,
                        self.fb_count,
                        &mut self.last_reference,
                    );
                    // The 8-bit feedback packet count wraps (§3.1).
                    self.fb_count = self.fb_count.wrapping_add(1);
                    bytes.resize(p.marshal_size(), 0);
                    p.marshal_to(&mut bytes)?;
                    zero_pad(&mut bytes);
                    i = end;
                }
                FeedbackFormat::Rfc8888 => {
                    let (end, p) = ccfb::build(
                        &fb.packets,
                        i,
                        max_packet,
                        ssrcs,
                        fb.report_time,
                        report_ntp,
                    );
                    p.write(&mut bytes)?;
                    i = end;
                }
            }
            rtcp_packets.push(bytes);
        }
        let mut datagrams = Vec::new();
        let mut current = self.new_datagram();
        if fb.key_frame_request {
            let pli = PictureLossIndication {
                sender_ssrc: self.config.feedback_ssrc,
                media_ssrc: self.config.media_ssrc,
            };
            append(&pli, &mut current)?;
        }
        for p in rtcp_packets {
            if current.len() > head && current.len() + p.len() > self.config.max_rtcp_datagram {
                datagrams.push(std::mem::replace(&mut current, self.new_datagram()));
            }
            current.extend_from_slice(&p);
        }
        if current.len() > head {
            datagrams.push(current);
        }
        Ok(datagrams)
    }

    /// Adds the generic NACK packets (RFC 4585 §6.2.1) asking for `nack.seqs`
    /// of the media stream to `datagrams`: into the last datagram while it has
    /// room (a compound packet with the feedback [`Self::encode`] returned,
    /// RFC 3550 §6.1), then into new compounds, each at most
    /// [`WireConfig::max_rtcp_datagram`].
    pub fn append_nack(&self, nack: &Nack, datagrams: &mut Vec<Vec<u8>>) -> Result<(), WireError> {
        let max = self.config.max_rtcp_datagram;
        let packets = nack::encode_nack(
            self.config.feedback_ssrc,
            self.config.media_ssrc,
            &nack.seqs,
            max - self.head.len(),
        )?;
        for p in packets {
            match datagrams.last_mut() {
                Some(last) if last.len() + p.len() <= max => last.extend_from_slice(&p),
                _ => {
                    let mut d = self.new_datagram();
                    d.extend_from_slice(&p);
                    datagrams.push(d);
                }
            }
        }
        Ok(())
    }
}

/// Turns the RTCP padding the `rtcp` crate gives a TWCC packet whose
/// feedback does not end on a 32-bit boundary (P bit set, the last octet a
/// count of 1–3) into the zero padding the TWCC draft specifies
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1: "zero padding"
/// after the last recv delta), with P clear. RFC 3550 §6.4.1 allows padding
/// only on the last packet of a compound and counts it in multiples of
/// four; a padded TWCC packet followed by a NACK or another TWCC packet made
/// validators (GStreamer) drop the whole compound. Parsers read the recv
/// deltas by the status count, so the zero octets are ignored.
fn zero_pad(packet: &mut [u8]) {
    if let Some(first) = packet.first_mut() {
        if *first & 0x20 != 0 {
            *first &= !0x20;
            if let Some(last) = packet.last_mut() {
                *last = 0;
            }
        }
    }
}

/// Everything found in one RTCP compound datagram, in order per kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RtcpMessages {
    /// Sender reports (RFC 3550 §6.4.1).
    pub sender_reports: Vec<SenderReport>,
    /// Receiver reports (RFC 3550 §6.4.2).
    pub receiver_reports: Vec<ReceiverReport>,
    /// Picture loss indications (RFC 4585 §6.3.1).
    pub plis: Vec<PictureLossIndication>,
    /// Transport-wide CC feedback packets.
    pub twcc: Vec<TwccPacket>,
    /// RFC 8888 feedback packets.
    pub ccfb: Vec<CcfbPacket>,
    /// Generic NACKs (RFC 4585 §6.2.1).
    pub nacks: Vec<GenericNack>,
    /// SDES packets (RFC 3550 §6.5), skipped by their length field: every
    /// RFC 3550 compound carries one.
    pub sdes: usize,
    /// RTCP packets of types we do not handle (BYE, APP, XR, other
    /// feedback formats), skipped by their length field and counted.
    pub unknown: usize,
}

/// Parses an RTCP compound datagram (RFC 3550 §6.1): a sequence of RTCP
/// packets, each with version 2 and a length field that must lie inside the
/// datagram. An RTP datagram is [`WireError::NotRtcp`]. Unknown packet types are
/// counted in [`RtcpMessages::unknown`]; a malformed known one fails the whole
/// datagram.
pub fn decode_rtcp(datagram: &[u8]) -> Result<RtcpMessages, WireError> {
    need("RTCP header", datagram, 4)?;
    let version = datagram[0] >> 6;
    if version != 2 {
        return Err(WireError::BadVersion(version));
    }
    if !super::is_rtcp(datagram) {
        return Err(WireError::NotRtcp(datagram[1]));
    }
    let mut out = RtcpMessages::default();
    let mut at = 0;
    while at < datagram.len() {
        let rest = &datagram[at..];
        need("RTCP header", rest, 4)?;
        let version = rest[0] >> 6;
        if version != 2 {
            return Err(WireError::BadVersion(version));
        }
        let len = 4 * (usize::from(u16::from_be_bytes([rest[2], rest[3]])) + 1);
        if len > rest.len() {
            return Err(WireError::BadLength("packet runs past the datagram"));
        }
        let whole = &rest[..len];
        // RFC 3550 §6.4.1: with P set, the last octet counts the padding octets.
        let pkt = if rest[0] & 0x20 != 0 {
            let pad = usize::from(whole[len - 1]);
            if pad == 0 || pad > len - 4 {
                return Err(WireError::BadPadding("RTCP padding count"));
            }
            &whole[..len - pad]
        } else {
            whole
        };
        let fmt = rest[0] & 0x1F;
        match (rest[1], fmt) {
            (PT_SR, _) => out
                .sender_reports
                .push(SenderReport::unmarshal(&mut &pkt[..])?),
            (PT_RR, _) => out
                .receiver_reports
                .push(ReceiverReport::unmarshal(&mut &pkt[..])?),
            (PT_PSFB, FMT_PLI) => out
                .plis
                .push(PictureLossIndication::unmarshal(&mut &pkt[..])?),
            (PT_RTPFB, FMT_TWCC) => out.twcc.push(twcc::parse(pkt)?),
            (PT_RTPFB, ccfb::FMT_CCFB) => out.ccfb.push(CcfbPacket::parse(pkt)?),
            (PT_RTPFB, nack::FMT_NACK) => out.nacks.push(nack::parse(whole, pkt)?),
            (PT_SDES, _) => out.sdes += 1,
            _ => out.unknown += 1,
        }
        at += len;
    }
    Ok(out)
}

/// Sender side: turns decoded feedback back into [`WireFeedback`]. Keeps the
/// unwrappers of the TWCC reference time and the RFC 8888 report timestamp, so
/// decoded arrivals are monotone across reports (origins in the module doc).
#[derive(Debug, Clone, Default)]
pub struct FeedbackDecoder {
    reference: Unwrapper<{ twcc::REFERENCE_BITS }>,
    report_timestamp: Unwrapper<32>,
}

impl FeedbackDecoder {
    /// A decoder that has seen no report.
    pub fn new() -> Self {
        Self::default()
    }

    /// The feedback and key-frame request carried by `msgs` (one datagram), or
    /// `None` if it carries neither. `highest_sent` is the highest transport-wide
    /// sequence number sent so far: the 16-bit wire sequence numbers are mapped to
    /// the nearest `SeqNo` to it (feedback never runs more than 32 768 behind).
    pub fn feedback(&mut self, msgs: &RtcpMessages, highest_sent: SeqNo) -> Option<WireFeedback> {
        if msgs.twcc.is_empty() && msgs.ccfb.is_empty() && msgs.plis.is_empty() {
            return None;
        }
        let mut packets: Vec<(SeqNo, Option<Instant>)> = Vec::new();
        let mut report_time: Option<Instant> = None;
        for p in &msgs.twcc {
            let base = unwrap_near(highest_sent, u64::from(p.base_seq), 16);
            let reference_ns = if p.any_received() {
                i128::from(self.reference.unwrap(u64::from(p.reference_time))) * REFERENCE_UNIT_NS
            } else {
                0
            };
            for (k, &(_, arrival)) in p.packets.iter().enumerate() {
                let arrival = arrival.map(|off| instant(reference_ns + i128::from(off)));
                if let Some(a) = arrival {
                    report_time = Some(report_time.map_or(a, |r| r.max(a)));
                }
                packets.push((base.saturating_add(k as u64), arrival));
            }
        }
        for p in &msgs.ccfb {
            let rts = self.report_timestamp.unwrap(u64::from(p.report_timestamp));
            // 16.16 fixed-point seconds to nanoseconds.
            let rts_ns = (i128::from(rts) * 1_000_000_000) >> 16;
            let rts_instant = instant(rts_ns);
            report_time = Some(report_time.map_or(rts_instant, |r| r.max(rts_instant)));
            for b in &p.blocks {
                let base = unwrap_near(highest_sent, u64::from(b.begin_seq), 16);
                for (k, m) in b.metrics.iter().enumerate() {
                    let arrival = m.received.then(|| match m.ato {
                        // Unavailable: the best we know is "by the report".
                        ATO_UNAVAILABLE => rts_instant,
                        // Over range counts as its bound; the same arithmetic.
                        ato => {
                            debug_assert!(ato <= ATO_OVER_RANGE);
                            instant(rts_ns - i128::from(ato) * 1_000_000_000 / ATO_PER_SECOND)
                        }
                    });
                    packets.push((base.saturating_add(k as u64), arrival));
                }
            }
        }
        packets.sort_by_key(|p| p.0);
        packets.dedup_by_key(|p| p.0);
        Some(WireFeedback {
            report_time: report_time.unwrap_or(Instant::ZERO),
            packets,
            key_frame_request: !msgs.plis.is_empty(),
        })
    }
}

/// Nanoseconds to an [`Instant`], clamped to zero (only hostile input is negative).
fn instant(ns: i128) -> Instant {
    Instant::from_nanos(u64::try_from(ns.max(0)).unwrap_or(u64::MAX))
}

/// One reception report block (RFC 3550 §6.4.1) as the runtime computes it
/// (RFC 3550 Appendix A.3 for loss, A.8 for jitter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceptionStats {
    /// SSRC of the source reported on.
    pub ssrc: u32,
    /// Fraction lost since the previous report, in 1/256.
    pub fraction_lost: u8,
    /// Cumulative packets lost (signed; duplicates can make it negative),
    /// clamped to 24 bits on the wire.
    pub cumulative_lost: i32,
    /// Extended highest sequence number received (cycles << 16 | seq).
    pub extended_highest_seq: u32,
    /// Interarrival jitter in RTP timestamp units.
    pub jitter: u32,
    /// Middle 32 bits of the NTP time of the last SR received (0 if none).
    pub last_sr: u32,
    /// Delay since that SR, in 1/65536 s.
    pub delay_since_last_sr: u32,
}

impl ReceptionStats {
    fn to_crate(self) -> ReceptionReport {
        // Signed 24-bit two's complement (RFC 3550 §6.4.1, "cumulative number of packets lost").
        let lost = self.cumulative_lost.clamp(-0x80_0000, 0x7F_FFFF);
        ReceptionReport {
            ssrc: self.ssrc,
            fraction_lost: self.fraction_lost,
            total_lost: (lost as u32) & 0xFF_FFFF,
            last_sequence_number: self.extended_highest_seq,
            jitter: self.jitter,
            last_sender_report: self.last_sr,
            delay: self.delay_since_last_sr,
        }
    }
}

impl From<&ReceptionReport> for ReceptionStats {
    fn from(r: &ReceptionReport) -> Self {
        let raw = r.total_lost & 0xFF_FFFF;
        // Sign-extend the 24-bit field.
        let lost = ((raw << 8) as i32) >> 8;
        ReceptionStats {
            ssrc: r.ssrc,
            fraction_lost: r.fraction_lost,
            cumulative_lost: lost,
            extended_highest_seq: r.last_sequence_number,
            jitter: r.jitter,
            last_sr: r.last_sender_report,
            delay_since_last_sr: r.delay,
        }
    }
}

/// Appends a sender report (RFC 3550 §6.4.1) to `out`; returns its length.
/// `ntp` is the 64-bit NTP time of `rtp_timestamp`; counts wrap at 2^32.
pub fn encode_sender_report(
    ssrc: u32,
    ntp: u64,
    rtp_timestamp: u32,
    packet_count: u32,
    octet_count: u32,
    reports: &[ReceptionStats],
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    if reports.len() > 31 {
        return Err(WireError::FieldOverflow("reception report count"));
    }
    let sr = SenderReport {
        ssrc,
        ntp_time: ntp,
        rtp_time: rtp_timestamp,
        packet_count,
        octet_count,
        reports: reports.iter().map(|r| r.to_crate()).collect(),
        ..SenderReport::default()
    };
    append(&sr, out)
}

/// Checks a CNAME: 1–[`MAX_CNAME`] octets (RFC 3550 §6.5: SDES text is
/// UTF-8 with a length octet; an empty CNAME names nothing).
pub fn check_cname(cname: &str) -> Result<(), WireError> {
    if cname.is_empty() || cname.len() > MAX_CNAME {
        return Err(WireError::BadConfig("CNAME must be 1 to 64 octets"));
    }
    Ok(())
}

/// Appends an SDES packet (RFC 3550 §6.5) with one chunk per SSRC of
/// `ssrcs`, each naming `cname` (a sender's media and RTX streams share one,
/// RFC 4588 §8.7), to `out`; returns its length.
///
/// Written here rather than with the `rtcp` crate's `SourceDescription`:
/// rtcp 0.17 pads each chunk like an RTCP packet (the last pad octet holds
/// the pad count), where RFC 3550 §6.5 wants null octets up to the 32-bit
/// boundary; a parser that reads items up to the boundary then sees an item
/// of type 1, 2 or 3 after the end marker.
pub fn encode_sdes_cname(
    ssrcs: &[u32],
    cname: &str,
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    check_cname(cname)?;
    if ssrcs.is_empty() || ssrcs.len() > 31 {
        return Err(WireError::FieldOverflow("SDES source count"));
    }
    let start = out.len();
    // Header: V=2, P=0, SC, PT=202, length filled in below.
    out.extend_from_slice(&[0x80 | ssrcs.len() as u8, PT_SDES, 0, 0]);
    for &ssrc in ssrcs {
        out.extend_from_slice(&ssrc.to_be_bytes());
        out.push(SDES_CNAME);
        out.push(cname.len() as u8);
        out.extend_from_slice(cname.as_bytes());
        // The item list ends with a null octet, and null octets pad the
        // chunk to the next 32-bit boundary (§6.5).
        out.push(0);
        while (out.len() - start) % 4 != 0 {
            out.push(0);
        }
    }
    let words = (out.len() - start) / 4 - 1;
    let words = u16::try_from(words).map_err(|_| WireError::FieldOverflow("SDES length"))?;
    out[start + 2..start + 4].copy_from_slice(&words.to_be_bytes());
    Ok(out.len() - start)
}

/// Appends a receiver report (RFC 3550 §6.4.2) to `out`; returns its length.
pub fn encode_receiver_report(
    ssrc: u32,
    reports: &[ReceptionStats],
    out: &mut Vec<u8>,
) -> Result<usize, WireError> {
    if reports.len() > 31 {
        return Err(WireError::FieldOverflow("reception report count"));
    }
    let rr = ReceiverReport {
        ssrc,
        reports: reports.iter().map(|r| r.to_crate()).collect(),
        ..ReceiverReport::default()
    };
    append(&rr, out)
}

fn append(p: &impl Marshal, out: &mut Vec<u8>) -> Result<usize, WireError> {
    let start = out.len();
    let n = p.marshal_size();
    out.resize(start + n, 0);
    let written = p.marshal_to(&mut out[start..])?;
    out.truncate(start + written);
    Ok(written)
}

/// Quantum of a decoded TWCC arrival (for tests and documentation).
pub const TWCC_RESOLUTION_NS: u64 = DELTA_UNIT_NS as u64;

#[cfg(test)]
mod tests {
    use rtcp::transport_feedbacks::transport_layer_cc::TransportLayerCc;

    use super::*;

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    fn cfg(format: FeedbackFormat) -> WireConfig {
        WireConfig {
            feedback_format: format,
            feedback_ssrc: 1,
            media_ssrc: 2,
            ..WireConfig::default()
        }
    }

    /// The head of every compound of [`cfg`]'s encoder: an empty RR from
    /// SSRC 1 (RFC 3550 §6.4.2) and an SDES with its CNAME (§6.5.1).
    #[rustfmt::skip]
    const HEAD: [u8; 24] = [
        0x80, 201, 0, 1,            // V=2 RC=0, PT=201 (RR), 2 words
        0, 0, 0, 1,                 // SSRC of packet sender
        0x81, 202, 0, 3,            // V=2 SC=1, PT=202 (SDES), 4 words
        0, 0, 0, 1,                 // SSRC of the chunk
        1, 4, b'r', b't',           // CNAME, 4 octets, "rt"
        b'c', b'c', 0, 0,           // "cc", end of items, null pad
    ];

    /// The datagrams without their compound head, which each must start with.
    fn strip_head(d: &[Vec<u8>]) -> Vec<Vec<u8>> {
        d.iter()
            .map(|dg| {
                assert_eq!(&dg[..HEAD.len()], &HEAD, "compound head");
                dg[HEAD.len()..].to_vec()
            })
            .collect()
    }

    /// RFC 3550 Appendix A.2 and §6.4.1 on one compound datagram: version 2
    /// everywhere, the packets' lengths add up to the datagram, and padding
    /// (P set) only on the last packet, counting a positive multiple of four
    /// octets within it.
    fn valid_compound(d: &[u8]) -> Result<(), String> {
        // §6.1: the first packet is a report; the compound carries a CNAME.
        match d.get(1) {
            Some(&PT_SR | &PT_RR) => {}
            other => return Err(format!("first packet type {other:?}, not SR or RR")),
        }
        let mut cname = false;
        let mut at = 0;
        while at < d.len() {
            let rest = &d[at..];
            if rest.len() < 4 {
                return Err(format!("{} trailing octets", rest.len()));
            }
            if rest[0] >> 6 != 2 {
                return Err(format!("version {} at {at}", rest[0] >> 6));
            }
            let len = 4 * (usize::from(u16::from_be_bytes([rest[2], rest[3]])) + 1);
            if len > rest.len() {
                return Err(format!("packet at {at} runs past the datagram"));
            }
            if rest[0] & 0x20 != 0 {
                if at + len != d.len() {
                    return Err(format!("padding on a packet at {at} that is not the last"));
                }
                let pad = usize::from(rest[len - 1]);
                if pad == 0 || pad % 4 != 0 || pad > len - 4 {
                    return Err(format!("padding count {pad} in a {len}-octet packet"));
                }
            }
            if rest[1] == PT_SDES && rest.get(8) == Some(&SDES_CNAME) {
                cname = true;
            }
            at += len;
        }
        if !cname {
            return Err("no SDES CNAME".into());
        }
        Ok(())
    }

    #[test]
    fn report_compounds_carry_a_cname_padded_with_nulls() {
        // RFC 3550 §6.5: after the CNAME item, a null octet ends the list
        // and null octets pad the chunk to 32 bits, whatever its length.
        for len in 1..=9 {
            let cname = "abcdefghi"[..len].to_owned();
            let mut d = Vec::new();
            encode_sender_report(2, 3, 4, 5, 6, &[], &mut d).unwrap();
            let n = encode_sdes_cname(&[2, 7], &cname, &mut d).unwrap();
            valid_compound(&d).unwrap_or_else(|e| panic!("{cname}: {e}: {d:02x?}"));
            let sdes = &d[d.len() - n..];
            assert_eq!(sdes[0], 0x82, "two chunks");
            let chunk = (4 + 2 + len + 1).div_ceil(4) * 4;
            assert_eq!(n, 4 + 2 * chunk);
            for c in 0..2 {
                let at = 4 + c * chunk;
                assert_eq!(&sdes[at + 4..at + 6], &[SDES_CNAME, len as u8]);
                assert_eq!(&sdes[at + 6..at + 6 + len], cname.as_bytes());
                assert!(sdes[at + 6 + len..at + chunk].iter().all(|&b| b == 0));
            }
            assert_eq!(decode_rtcp(&d).unwrap().sdes, 1);
            let mut r = Vec::new();
            encode_receiver_report(9, &[], &mut r).unwrap();
            encode_sdes_cname(&[9], &cname, &mut r).unwrap();
            valid_compound(&r).unwrap();
        }
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        assert!(enc.set_cname("").is_err());
        assert!(enc.set_cname(&"x".repeat(MAX_CNAME + 1)).is_err());
        enc.set_cname("peer@example").unwrap();
        assert_eq!(enc.cname(), "peer@example");
        let fb = WireFeedback {
            report_time: Instant::from_millis(5),
            packets: vec![],
            key_frame_request: true,
        };
        let d = enc.encode(&fb, 0).unwrap();
        valid_compound(&d[0]).unwrap();
        let at = d[0].windows(12).position(|w| w == b"peer@example");
        assert!(at.is_some(), "{:02x?}", d[0]);
    }

    #[test]
    fn every_feedback_compound_is_valid_rtcp() {
        // Feedback of 1–60 packets with every pattern of losses and small
        // and large deltas, with a PLI and NACKs appended: every compound
        // rtcc emits passes the RFC 3550 validity checks, and decodes back.
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let mut crate_padded = 0;
        for n in 1u64..60 {
            let packets: Vec<(u64, Option<Instant>)> = (0..n)
                .map(|i| {
                    let arrival = match (i * 7 + n) % 5 {
                        0 => None,
                        1 => at(i * 70 * MS),
                        _ => at(i * 3 * MS + n * US),
                    };
                    (100 + i, arrival)
                })
                .collect();
            if packets.iter().all(|p| p.1.is_none()) {
                continue;
            }
            // What the rtcp crate alone would emit: padded whenever the
            // recv deltas end off a 32-bit boundary.
            let mut last = 0;
            let (_, p) = twcc::build(&packets, 0, 1200, (1, 2), 0, &mut last);
            let mut raw = vec![0; p.marshal_size()];
            p.marshal_to(&mut raw).unwrap();
            crate_padded += usize::from(raw[0] & 0x20 != 0);
            let fb = WireFeedback {
                report_time: Instant::from_millis(n * 100),
                packets: packets.clone(),
                key_frame_request: n % 3 == 0,
            };
            let mut d = enc.encode(&fb, 0).unwrap();
            let nack = Nack {
                report_time: fb.report_time,
                seqs: vec![7, 9, 40],
            };
            enc.append_nack(&nack, &mut d).unwrap();
            for dg in &d {
                valid_compound(dg).unwrap_or_else(|e| panic!("n = {n}: {e}: {dg:02x?}"));
            }
            let back: Vec<(u16, Option<i64>)> = d
                .iter()
                .flat_map(|dg| decode_rtcp(dg).unwrap().twcc)
                .flat_map(|t| t.packets)
                .collect();
            assert_eq!(back.len(), packets.len(), "n = {n}");
            for ((seq, a), (bseq, b)) in packets.iter().zip(&back) {
                assert_eq!(*seq as u16, *bseq);
                assert_eq!(a.is_some(), b.is_some(), "n = {n}, seq {seq}");
            }
        }
        // The case that used to break compounds happened.
        assert!(crate_padded > 10, "{crate_padded}");
    }

    #[test]
    fn feedback_nack_and_pli_name_the_ssrc_received() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        enc.set_media_ssrc(0xDEAD_BEEF);
        let fb = WireFeedback {
            report_time: Instant::from_millis(10),
            packets: vec![(3, at(5 * MS)), (4, None)],
            key_frame_request: true,
        };
        let mut d = enc.encode(&fb, 0).unwrap();
        let nack = Nack {
            report_time: Instant::from_millis(10),
            seqs: vec![4],
        };
        enc.append_nack(&nack, &mut d).unwrap();
        let m = decode_rtcp(&d[0]).unwrap();
        assert_eq!(m.twcc[0].media_ssrc, 0xDEAD_BEEF);
        assert_eq!(m.nacks[0].media_ssrc, 0xDEAD_BEEF);
        assert_eq!(m.plis[0].media_ssrc, 0xDEAD_BEEF);
    }

    #[test]
    fn nacks_join_the_feedback_in_one_compound_datagram() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let fb = WireFeedback {
            report_time: Instant::from_millis(10),
            packets: vec![(3, at(5 * MS)), (4, None), (5, at(7 * MS))],
            key_frame_request: true,
        };
        let mut d = enc.encode(&fb, 0).unwrap();
        assert_eq!(d.len(), 1);
        let nack = Nack {
            report_time: Instant::from_millis(10),
            seqs: vec![40, 41, 60],
        };
        enc.append_nack(&nack, &mut d).unwrap();
        assert_eq!(d.len(), 1, "the NACK fits the feedback's datagram");
        let m = decode_rtcp(&d[0]).unwrap();
        assert_eq!(m.plis.len(), 1);
        assert_eq!(m.twcc.len(), 1);
        assert_eq!(m.unknown, 0);
        assert_eq!(
            m.nacks,
            vec![GenericNack {
                sender_ssrc: 1,
                media_ssrc: 2,
                seqs: vec![40, 41, 60]
            }]
        );
        // Alone, and too many for one datagram: several datagrams, all within
        // the limit, every number kept.
        let many = Nack {
            report_time: Instant::ZERO,
            seqs: (0..3_000u16).map(|i| i * 20).collect(),
        };
        let mut d = Vec::new();
        enc.append_nack(&many, &mut d).unwrap();
        assert!(d.len() >= 3, "{}", d.len());
        let mut back = Vec::new();
        for dg in &d {
            assert!(dg.len() <= 1200);
            for n in decode_rtcp(dg).unwrap().nacks {
                back.extend(n.seqs);
            }
        }
        assert_eq!(back, many.seqs);
    }

    fn at(ns: u64) -> Option<Instant> {
        Some(Instant::from_nanos(ns))
    }

    /// Encodes `fb`, decodes every datagram and merges the results.
    fn round_trip(
        enc: &mut FeedbackEncoder,
        dec: &mut FeedbackDecoder,
        fb: &WireFeedback,
        report_ntp: u64,
        highest_sent: SeqNo,
    ) -> (Vec<Vec<u8>>, WireFeedback) {
        let datagrams = enc.encode(fb, report_ntp).unwrap();
        let mut merged = WireFeedback::default();
        for d in &datagrams {
            assert!(d.len() <= enc.config.max_rtcp_datagram);
            let msgs = decode_rtcp(d).unwrap();
            assert_eq!(msgs.unknown, 0);
            let got = dec.feedback(&msgs, highest_sent).unwrap();
            merged.packets.extend(got.packets);
            merged.key_frame_request |= got.key_frame_request;
            merged.report_time = merged.report_time.max(got.report_time);
        }
        (datagrams, merged)
    }

    /// Nearest multiple of 250 µs (ties up), what TWCC reproduces.
    fn quantised(a: Instant) -> Instant {
        let q = 250 * US;
        Instant::from_nanos((a.as_nanos() + q / 2) / q * q)
    }

    fn assert_twcc_matches(sent: &WireFeedback, got: &WireFeedback) {
        assert_eq!(got.packets.len(), sent.packets.len());
        for (s, g) in sent.packets.iter().zip(&got.packets) {
            assert_eq!(s.0, g.0, "sequence");
            match (s.1, g.1) {
                (None, None) => {}
                (Some(a), Some(b)) => {
                    assert_eq!(b, quantised(a), "seq {}", s.0);
                    assert!(b.signed_nanos_since(a).unsigned_abs() <= 125 * US);
                }
                other => panic!("seq {}: received status differs: {other:?}", s.0),
            }
        }
    }

    #[test]
    fn twcc_round_trip_losses_runs_large_negative_deltas_and_seq_wrap() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let mut dec = FeedbackDecoder::new();
        let mut packets = Vec::new();
        let mut t = 1_000 * MS + 37 * US;
        for k in 0..60u64 {
            let seq = 65_510 + k; // crosses 65 535 -> 0 on the wire
            let arrival = match k {
                3 | 4 | 20 => None,                // losses
                30 => Some(t + 100 * MS),          // large delta (> 63.75 ms)
                31 => Some(t + 100 * MS - 3 * MS), // negative delta
                32 => Some(t + 9_000 * MS),        // beyond ±8.19 s: new packet
                _ => Some(t + k * 1_130 * US),     // runs of > 7 received
            };
            if k == 33 {
                t += 9_001 * MS;
            }
            packets.push((seq, arrival.map(Instant::from_nanos)));
        }
        // Arrivals must be consistent with the report: keep the list as is
        // (reordered arrivals are allowed in TWCC).
        let fb = WireFeedback {
            report_time: Instant::from_secs(20),
            packets,
            key_frame_request: false,
        };
        let (datagrams, got) = round_trip(&mut enc, &mut dec, &fb, 0, 65_510 + 59);
        assert_twcc_matches(&fb, &got);
        assert!(!got.key_frame_request);
        // The 9 s gap needed a second TWCC packet.
        let msgs = decode_rtcp(&datagrams[0]).unwrap();
        assert!(msgs.twcc.len() >= 2, "{} packets", msgs.twcc.len());
        assert_eq!(msgs.twcc[0].fb_count, 0);
        assert_eq!(msgs.twcc[1].fb_count, 1);
        // TWCC has no report time: the decoder reports the latest arrival.
        let latest = fb.packets.iter().filter_map(|p| p.1).max().unwrap();
        assert_eq!(got.report_time, quantised(latest));
    }

    #[test]
    fn twcc_quantisation_does_not_accumulate_and_big_reports_split() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let mut dec = FeedbackDecoder::new();
        // 3000 packets 1.1237 ms apart: each delta rounds, the sum must not drift.
        let fb = WireFeedback {
            report_time: Instant::from_secs(10),
            packets: (0..3_000u64)
                .map(|s| (s, at(5 * MS + s * 1_123_700)))
                .collect(),
            key_frame_request: true,
        };
        let (datagrams, got) = round_trip(&mut enc, &mut dec, &fb, 0, 2_999);
        assert!(
            datagrams.len() > 1,
            "a 3000-packet report needs several datagrams"
        );
        assert_twcc_matches(&fb, &got);
        assert!(got.key_frame_request);
        // The PLI is in the first datagram only.
        assert_eq!(decode_rtcp(&datagrams[0]).unwrap().plis.len(), 1);
        assert_eq!(decode_rtcp(&datagrams[1]).unwrap().plis.len(), 0);
    }

    #[test]
    fn late_arrival_is_its_own_packet_not_a_range() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let mut dec = FeedbackDecoder::new();
        // Packet 2 was reported lost before and arrived late; 3..=9 were
        // reported already and must not appear again.
        let fb = WireFeedback {
            report_time: Instant::from_millis(100),
            packets: vec![
                (2, at(90 * MS)),
                (10, at(60 * MS)),
                (11, None),
                (12, at(70 * MS)),
            ],
            key_frame_request: false,
        };
        let (_, got) = round_trip(&mut enc, &mut dec, &fb, 0, 12);
        assert_twcc_matches(&fb, &got);
    }

    #[test]
    fn twcc_reference_time_wrap_keeps_arrivals_monotone() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let mut dec = FeedbackDecoder::new();
        // The 24-bit reference time wraps at 2^24 × 64 ms.
        let wrap = (1u64 << 24) * 64 * MS;
        let mut last = None;
        for (i, t) in [
            wrap - 130 * MS,
            wrap - 20 * MS,
            wrap + 50 * MS,
            wrap + wrap / 3,
        ]
        .into_iter()
        .enumerate()
        {
            let seq = 100 + i as u64;
            let fb = WireFeedback {
                report_time: Instant::from_nanos(t + MS),
                packets: vec![(seq, at(t))],
                key_frame_request: false,
            };
            let (datagrams, got) = round_trip(&mut enc, &mut dec, &fb, 0, seq);
            let msgs = decode_rtcp(&datagrams[0]).unwrap();
            assert_eq!(
                u64::from(msgs.twcc[0].reference_time),
                (t / (64 * MS)) & 0xFF_FFFF
            );
            // Origin: the receiver's own clock (k = 0 at the first report).
            assert_twcc_matches(&fb, &got);
            let a = got.packets[0].1.unwrap();
            if let Some(prev) = last {
                assert!(a > prev);
            }
            last = Some(a);
        }
    }

    #[test]
    fn twcc_bytes_match_the_draft_layout() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let fb = WireFeedback {
            report_time: Instant::from_millis(300),
            packets: vec![
                (65_534, at(130 * MS + 100 * US)), // ref 2 (128 ms), delta 2 ms -> 8
                (65_535, None),
                (65_536, at(200 * MS)),            // +70 ms -> 280 (large)
                (65_537, at(199 * MS + 750 * US)), // -0.25 ms -> -1 (large)
            ],
            key_frame_request: false,
        };
        let d = enc.encode(&fb, 0).unwrap();
        #[rustfmt::skip]
        let expect: Vec<u8> = vec![
            0x8F, 205, 0x00, 0x06,        // V=2 P=0 FMT=15, PT=205, 7 words
            0, 0, 0, 1,                   // SSRC of packet sender
            0, 0, 0, 2,                   // SSRC of media source
            0xFF, 0xFE, 0x00, 0x04,       // base seq 65534, status count 4
            0x00, 0x00, 0x02, 0x00,       // reference time 2 (x 64 ms), fb count 0
            0xD2, 0x80,                   // 2-bit vector: 01 00 10 10 (+ 3 unused)
            0x08,                         // small delta 8 x 250 us
            0x01, 0x18,                   // large delta 280
            0xFF, 0xFF,                   // large delta -1
            0x00,                         // zero padding to 32 bits (draft §3.1)
        ];
        assert_eq!(strip_head(&d), vec![expect.clone()]);
        // The crate's own parser agrees with what we wrote.
        let p = TransportLayerCc::unmarshal(&mut &expect[..]).unwrap();
        assert_eq!(p.base_sequence_number, 65_534);
        assert_eq!(p.packet_status_count, 4);
        assert_eq!(p.reference_time, 2);
        let deltas: Vec<i64> = p.recv_deltas.iter().map(|d| d.delta).collect();
        assert_eq!(deltas, vec![2_000, 70_000, -250]);
        // And ours.
        let msgs = decode_rtcp(&expect).unwrap();
        assert_eq!(
            msgs.twcc[0].packets,
            vec![
                (65_534, Some(2_000_000)),
                (65_535, None),
                (0, Some(72_000_000)),
                (1, Some(71_750_000)),
            ]
        );
    }

    #[test]
    fn twcc_run_length_and_one_bit_chunks_decode() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let mut dec = FeedbackDecoder::new();
        // 20 received (run length), 16 lost (34, 35 too: run length), mixed (1-bit vector).
        let mut packets: Vec<(u64, Option<Instant>)> =
            (0..20).map(|s| (s, at(64 * MS + s * MS))).collect();
        packets.extend((20..34).map(|s| (s, None)));
        packets.extend((34..48).map(|s| (s, (s % 3 == 0).then(|| Instant::from_millis(100 + s)))));
        let fb = WireFeedback {
            report_time: Instant::from_millis(200),
            packets,
            key_frame_request: false,
        };
        let (d, got) = round_trip(&mut enc, &mut dec, &fb, 0, 47);
        assert_twcc_matches(&fb, &got);
        // Chunks: RL(received x20) = 0x2014, RL(lost x16) = 0x0010, 1-bit vector.
        let h = HEAD.len();
        assert_eq!(&d[0][h + 20..h + 24], &[0x20, 0x14, 0x00, 0x10]);
        assert_eq!(d[0][h + 24] & 0xC0, 0x80);
    }

    fn ntp_of(ns: u64) -> u64 {
        // A test mapping: NTP seconds = 3.9e9 + ns (any fixed offset will do).
        let secs = 3_900_000_000u64 + ns / 1_000_000_000;
        let frac = ((u128::from(ns % 1_000_000_000) << 32) / 1_000_000_000) as u64;
        (secs << 32) | frac
    }

    #[test]
    fn rfc8888_round_trip_within_half_a_unit() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::Rfc8888)).unwrap();
        let mut dec = FeedbackDecoder::new();
        let report = Instant::from_nanos(777 * MS + 123);
        let mut packets: Vec<(u64, Option<Instant>)> = (0..50u64)
            .map(|k| {
                let arr = (k % 7 != 3).then(|| Instant::from_nanos(700 * MS + k * 1_310 * US));
                (65_500 + k, arr)
            })
            .collect();
        packets.push((65_550, Some(Instant::from_nanos(1))));
        let fb = WireFeedback {
            report_time: report,
            packets,
            key_frame_request: true,
        };
        let (d, got) = round_trip(&mut enc, &mut dec, &fb, ntp_of(report.as_nanos()), 65_550);
        assert_eq!(d.len(), 1);
        assert!(got.key_frame_request);
        assert_eq!(got.packets.len(), fb.packets.len());
        // Decoded instants are on the NTP time line: compare differences to the report.
        for (s, g) in fb.packets.iter().zip(&got.packets) {
            assert_eq!(s.0, g.0);
            assert_eq!(s.1.is_some(), g.1.is_some());
            if let (Some(a), Some(b)) = (s.1, g.1) {
                let sent_off = report.as_nanos() as i64 - a.as_nanos() as i64;
                let got_off = got.report_time.as_nanos() as i64 - b.as_nanos() as i64;
                if sent_off <= 8_189 * 1_000_000_000 / 1_024 {
                    // 1/2048 s rounding, plus the report timestamp's own
                    // truncation to 1/65536 s, plus 1 ns of integer division.
                    assert!(
                        (sent_off - got_off).abs() <= 488_282 + 15_259 + 1,
                        "seq {}: {sent_off} vs {got_off}",
                        s.0
                    );
                }
            }
        }
        // Report time is the NTP time of the report, to 1/65536 s.
        let ntp_ns = (u128::from(ntp_of(report.as_nanos()) >> 16) * 1_000_000_000) >> 16;
        let ntp_ns = (ntp_ns % (65_536 * 1_000_000_000)) as u64;
        assert_eq!(got.report_time.as_nanos(), ntp_ns);
    }

    #[test]
    fn rfc8888_over_range_and_unavailable() {
        assert_eq!(ccfb::ato_of(-1), ATO_UNAVAILABLE);
        assert_eq!(ccfb::ato_of(8_189 * 1_000_000_000 / 1_024), 0x1FFD);
        assert_eq!(ccfb::ato_of(9_000_000_000), ATO_OVER_RANGE);
        assert_eq!(ccfb::ato_of(500_000_000), 512);
    }

    #[test]
    fn rfc8888_bytes_match_the_rfc_layout() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::Rfc8888)).unwrap();
        let fb = WireFeedback {
            report_time: Instant::from_millis(1_000),
            packets: vec![
                (65_535, at(500 * MS)), // 0.5 s before: ATO 512
                (65_536, None),
                (65_537, at(999 * MS)), // 1 ms before: ATO 1
            ],
            key_frame_request: false,
        };
        let d = enc.encode(&fb, 0x0000_1234_5678_0000).unwrap();
        #[rustfmt::skip]
        let expect: Vec<u8> = vec![
            0x8B, 205, 0x00, 0x06,  // V=2 P=0 FMT=11, PT=205, 7 words
            0, 0, 0, 1,             // SSRC of RTCP packet sender
            0, 0, 0, 2,             // SSRC of the RTP stream
            0xFF, 0xFF, 0x00, 0x03, // begin_seq 65535, num_reports 3
            0x82, 0x00,             // R=1 ECN=00 ATO=512
            0x00, 0x00,             // not received
            0x80, 0x01,             // R=1 ATO=1
            0x00, 0x00,             // pad to 32 bits
            0x12, 0x34, 0x56, 0x78, // report timestamp (middle 32 bits of NTP)
        ];
        assert_eq!(strip_head(&d), vec![expect.clone()]);
        let msgs = decode_rtcp(&expect).unwrap();
        let b = &msgs.ccfb[0].blocks[0];
        assert_eq!(b.begin_seq, 65_535);
        assert_eq!(b.metrics.len(), 3);
        let mut dec = FeedbackDecoder::new();
        let got = dec.feedback(&msgs, 65_537).unwrap();
        assert_eq!(
            got.packets.iter().map(|p| p.0).collect::<Vec<_>>(),
            vec![65_535, 65_536, 65_537]
        );
        let rts_ns = ((0x1234_5678u128 * 1_000_000_000) >> 16) as u64;
        assert_eq!(got.report_time, Instant::from_nanos(rts_ns));
        assert_eq!(
            got.packets[0].1,
            Some(Instant::from_nanos(rts_ns - 500 * MS))
        );
        assert_eq!(got.packets[1].1, None);
        assert_eq!(
            got.packets[2].1,
            Some(Instant::from_nanos(rts_ns - 976_562))
        );
    }

    #[test]
    fn rfc8888_report_timestamp_wrap_is_unwrapped() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::Rfc8888)).unwrap();
        let mut dec = FeedbackDecoder::new();
        // The 32-bit timestamp wraps every 65536 s of NTP time.
        let era = 65_536u64 << 32;
        let mut last = Instant::ZERO;
        for (i, ntp) in [era - (1 << 31), era - (1 << 20), era + (1 << 30)]
            .into_iter()
            .enumerate()
        {
            let fb = WireFeedback {
                report_time: Instant::from_secs(100),
                packets: vec![(i as u64, at(100_000 * MS - 10 * MS))],
                key_frame_request: false,
            };
            let (_, got) = round_trip(&mut enc, &mut dec, &fb, ntp, i as u64);
            assert!(got.report_time > last);
            last = got.report_time;
        }
    }

    #[test]
    fn pli_alone() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let fb = WireFeedback {
            report_time: Instant::from_millis(5),
            packets: vec![],
            key_frame_request: true,
        };
        let d = enc.encode(&fb, 0).unwrap();
        // RFC 4585 §6.3.1: PT=206 FMT=1, length 2, sender SSRC, media SSRC.
        assert_eq!(
            strip_head(&d),
            vec![vec![0x81, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2]]
        );
        let msgs = decode_rtcp(&d[0]).unwrap();
        assert_eq!(msgs.plis.len(), 1);
        assert_eq!(msgs.plis[0].media_ssrc, 2);
        let got = FeedbackDecoder::new().feedback(&msgs, 0).unwrap();
        assert!(got.key_frame_request);
        assert!(got.packets.is_empty());
        // Nothing to say: no datagram.
        let empty = WireFeedback::default();
        assert!(enc.encode(&empty, 0).unwrap().is_empty());
    }

    #[test]
    fn sender_and_receiver_reports_round_trip() {
        let stats = ReceptionStats {
            ssrc: 0xAABB_CCDD,
            fraction_lost: 25,
            cumulative_lost: -3,
            extended_highest_seq: 3 << 16 | 17,
            jitter: 1234,
            last_sr: 0x1234_5678,
            delay_since_last_sr: 65_536,
        };
        let mut d = Vec::new();
        let n = encode_sender_report(
            7,
            0x0102_0304_0506_0708,
            9_000,
            10,
            11_000,
            &[stats],
            &mut d,
        )
        .unwrap();
        assert_eq!(n, 28 + 24);
        let m = encode_receiver_report(8, &[stats], &mut d).unwrap();
        assert_eq!(m, 8 + 24);
        // An SDES and a BYE (RFC 3550 §6.5, §6.6) are skipped and counted.
        d.extend_from_slice(&[0x81, 202, 0, 2, 0, 0, 0, 8, 0, 0, 0, 0]);
        d.extend_from_slice(&[0x81, 203, 0, 1, 0, 0, 0, 8]);
        let msgs = decode_rtcp(&d).unwrap();
        assert_eq!((msgs.sdes, msgs.unknown), (1, 1));
        let sr = &msgs.sender_reports[0];
        assert_eq!(
            (
                sr.ssrc,
                sr.ntp_time,
                sr.rtp_time,
                sr.packet_count,
                sr.octet_count
            ),
            (7, 0x0102_0304_0506_0708, 9_000, 10, 11_000)
        );
        assert_eq!(ReceptionStats::from(&sr.reports[0]), stats);
        let rr = &msgs.receiver_reports[0];
        assert_eq!(rr.ssrc, 8);
        assert_eq!(ReceptionStats::from(&rr.reports[0]), stats);
        // RFC 3550 §6.4.1 layout of the SR's first words.
        assert_eq!(&d[..8], &[0x81, 200, 0, 12, 0, 0, 0, 7]);
        // A report feedback datagram has nothing for the decoder.
        assert!(FeedbackDecoder::new().feedback(&msgs, 0).is_none());
    }

    #[test]
    fn malformed_rtcp_is_an_error() {
        // Length field past the end.
        assert_eq!(
            decode_rtcp(&[0x81, 201, 0, 9, 0, 0, 0, 1]),
            Err(WireError::BadLength("packet runs past the datagram"))
        );
        // TWCC with a reserved symbol (run length of "11").
        let mut p = vec![0x8F, 205, 0, 5, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1];
        p.extend_from_slice(&[0, 0, 0, 0, 0x60, 0x01, 0, 0]);
        assert_eq!(
            decode_rtcp(&p),
            Err(WireError::MalformedFeedback("reserved TWCC status symbol"))
        );
        // TWCC claiming 65535 statuses with no chunks.
        let p = [
            0x8F, 205, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0,
        ];
        assert!(matches!(decode_rtcp(&p), Err(WireError::TooShort { .. })));
        // A run of 65535 one-bit vectors would overflow a 16-bit counter: we count in usize.
        let mut p = vec![
            0x8F, 205, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0,
        ];
        p.extend(std::iter::repeat_n([0xBF, 0xFF], 4_681).flatten());
        p.extend(std::iter::repeat_n(0u8, 65_535 + 2));
        let words = (p.len() / 4 - 1) as u16;
        p[2..4].copy_from_slice(&words.to_be_bytes());
        let _ = decode_rtcp(&p[..p.len() / 4 * 4]);
        // RFC 8888 block longer than the packet.
        let p = [
            0x8B, 205, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 9, 0, 0, 0, 0,
        ];
        assert!(matches!(decode_rtcp(&p), Err(WireError::TooShort { .. })));
    }

    #[test]
    fn unsorted_feedback_is_refused() {
        let mut enc = FeedbackEncoder::new(cfg(FeedbackFormat::TransportCc)).unwrap();
        let fb = WireFeedback {
            report_time: Instant::ZERO,
            packets: vec![(5, None), (5, None)],
            key_frame_request: false,
        };
        assert_eq!(enc.encode(&fb, 0), Err(WireError::UnsortedFeedback));
    }

    #[test]
    fn the_core_twcc_writer_and_the_rtcp_crate_write_the_same_bytes() {
        // The simulator's captures write TWCC with rtcc-core's `Plan::write`,
        // the real transport with the `rtcp` crate: random reports (losses,
        // small, large and negative deltas, runs) must give identical packets,
        // so that a capture shows what rtcc send puts on the wire.
        use rand::{Rng, SeedableRng};
        use rtcc_core::feedback::twcc::Plan;
        let mut r = rand::rngs::StdRng::seed_from_u64(8);
        let mut plan = Plan::default();
        for case in 0..2_000u64 {
            let n = r.random_range(1..400u64);
            let mut t = r.random_range(0..10_000 * MS);
            let packets: Vec<(u64, Option<Instant>)> = (0..n)
                .map(|i| {
                    let arrival = match r.random_range(0..10) {
                        0..=2 => None,
                        3 => {
                            t = t.saturating_sub(r.random_range(0..30 * MS));
                            Some(Instant::from_nanos(t))
                        }
                        4 => {
                            t += r.random_range(60 * MS..3_000 * MS);
                            Some(Instant::from_nanos(t))
                        }
                        _ => {
                            t += r.random_range(0..2 * MS);
                            Some(Instant::from_nanos(t))
                        }
                    };
                    (65_000 + i, arrival)
                })
                .collect();
            let max_len = r.random_range(24..1200);
            let mut start = 0;
            while start < packets.len() {
                let mut last = 77;
                let fb_count = (case % 256) as u8;
                let (end, p) = twcc::build(&packets, start, max_len, (1, 2), fb_count, &mut last);
                let mut raw = vec![0; p.marshal_size()];
                p.marshal_to(&mut raw).unwrap();
                zero_pad(&mut raw);
                assert_eq!(plan.build(&packets, start, max_len), end, "case {case}");
                let reference = plan
                    .reference
                    .map_or(77, |r| (r & ((1 << twcc::REFERENCE_BITS) - 1)) as u32);
                let mut ours = Vec::new();
                plan.write((1, 2), reference, fb_count, &mut ours);
                assert_eq!(ours, raw, "case {case} from {start}");
                start = end;
            }
        }
    }
}
