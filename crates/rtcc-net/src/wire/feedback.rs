//! RTCP: the receiver's congestion-control feedback and key-frame requests,
//! sender and receiver reports, and a compound-packet decoder.
//!
//! Receiver side: [`FeedbackEncoder::encode`] turns a core [`WireFeedback`]
//! into RTCP datagrams: transport-wide CC feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1) or RFC 8888, and a
//! PLI (RFC 4585 §6.3.1) when the receiver asks for a key frame. Datagrams are
//! reduced-size RTCP (RFC 5506 §3: feedback without a leading RR, as WebRTC
//! sends it).
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
//! [`WireConfig::max_rtcp_datagram`] less 12 bytes kept for a PLI (with the
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

use rtcc_core::feedback::WireFeedback;
use rtcc_core::packet::SeqNo;
use rtcc_core::time::Instant;
use rtcp::payload_feedbacks::picture_loss_indication::PictureLossIndication;
use rtcp::receiver_report::ReceiverReport;
use rtcp::reception_report::ReceptionReport;
use rtcp::sender_report::SenderReport;
use webrtc_util::marshal::{Marshal, MarshalSize, Unmarshal};

use super::ccfb::{self, CcfbPacket, ATO_OVER_RANGE, ATO_PER_SECOND, ATO_UNAVAILABLE};
use super::twcc::{self, TwccPacket, DELTA_UNIT_NS, REFERENCE_UNIT_NS};
use super::unwrap::{unwrap_near, Unwrapper};
use super::{need, FeedbackFormat, WireConfig, WireError};

/// Smallest [`WireConfig::max_rtcp_datagram`]: a PLI and a feedback packet
/// with a few entries.
pub const MIN_RTCP_DATAGRAM: usize = 64;
/// A PLI is 12 bytes (RFC 4585 §6.3.1: common header and two SSRCs).
pub const PLI_LEN: usize = 12;

// RTCP packet types (RFC 3550 §12.1, RFC 4585 §6.1) and feedback formats.
const PT_SR: u8 = 200;
const PT_RR: u8 = 201;
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
}

impl FeedbackEncoder {
    /// An encoder for `config` (validated).
    pub fn new(config: WireConfig) -> Result<Self, WireError> {
        config.validate()?;
        Ok(FeedbackEncoder {
            config,
            fb_count: 0,
            last_reference: 0,
        })
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
        let max_packet = self.config.max_rtcp_datagram - PLI_LEN;
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
        let mut current = Vec::new();
        if fb.key_frame_request {
            let pli = PictureLossIndication {
                sender_ssrc: self.config.feedback_ssrc,
                media_ssrc: self.config.media_ssrc,
            };
            current.resize(pli.marshal_size(), 0);
            pli.marshal_to(&mut current)?;
        }
        for p in rtcp_packets {
            if !current.is_empty() && current.len() + p.len() > self.config.max_rtcp_datagram {
                datagrams.push(std::mem::take(&mut current));
            }
            current.extend_from_slice(&p);
        }
        if !current.is_empty() {
            datagrams.push(current);
        }
        Ok(datagrams)
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
    /// RTCP packets of types we do not handle (SDES, BYE, APP, XR, other
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
                packets.push((base + k as u64, arrival));
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
                    packets.push((base + k as u64, arrival));
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

fn append(p: &(impl Marshal + MarshalSize), out: &mut Vec<u8>) -> Result<usize, WireError> {
    let start = out.len();
    let n = p.marshal_size();
    out.resize(start + n, 0);
    let written = p.marshal_to(&mut out[start..])?;
    out.truncate(start + written);
    Ok(written)
}

/// Quantum of a decoded TWCC arrival (for tests and documentation).
pub const TWCC_RESOLUTION_NS: u64 = DELTA_UNIT_NS as u64;
