//! What the real transport reads from the network or from the user: RTP and
//! RTCP datagrams, and the H.264 file behind the SDP it writes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use arbitrary::{Arbitrary, Unstructured};
use rtcc_core::time::Instant;
use rtcc_core::Duration;
use rtcc_net::h264::payload::depacketize;
use rtcc_net::h264::source::{H264FileSource, H264SourceConfig};
use rtcc_net::sdp::{H264Sdp, RtxSdp};
use rtcc_net::wire::{decode_media, decode_rtcp, FeedbackDecoder, Unwrapper, WireConfig};

use crate::datagrams;

/// `wire`: the bytes as one datagram, through every decoder the transport
/// has (media, RTCP, the feedback join), with no state kept between inputs.
pub fn wire(data: &[u8]) -> bool {
    let cfg = WireConfig::default();
    let media = decode_media(&cfg, data);
    let rtcp = decode_rtcp(data);
    // A datagram is never both (RFC 5761 demultiplexing).
    assert!(media.is_err() || rtcp.is_err(), "both RTP and RTCP");
    let mut ok = false;
    if let Ok(m) = media {
        let mut frames = Unwrapper::<32>::new();
        let _ = m.packet_meta(&mut frames, |_| Instant::ZERO);
        let _ = m.media_seq();
        ok = true;
    }
    if let Ok(msgs) = rtcp {
        for highest in [0, 1 << 16, u64::MAX] {
            let mut dec = FeedbackDecoder::new();
            if let Some(fb) = dec.feedback(&msgs, highest) {
                // The decoder's promise to the session: sorted, no duplicates.
                assert!(
                    fb.packets.windows(2).all(|w| w[0].0 < w[1].0),
                    "feedback not strictly increasing: {fb:?}"
                );
            }
        }
        ok = true;
    }
    ok
}

/// `recv`: the bytes as a sequence of datagrams ([`crate::datagrams`]) to a
/// receiver, through the receive loop's own per-datagram function.
pub fn recv(data: &[u8]) -> bool {
    let mut rx = rtcc_net::fuzz::Receiver::new();
    let stranger: SocketAddr = (Ipv4Addr::new(192, 0, 2, 1), 6666).into();
    for d in datagrams(data) {
        let from = if d.stranger {
            stranger
        } else {
            rtcc_net::fuzz::PEER
        };
        rx.datagram(d.bytes, from, Duration::from_millis(d.gap_ms));
    }
    let s = rx.stats();
    s.media_packets + s.padding_packets + s.sender_reports > 0
}

/// `send`: the bytes as a sequence of RTCP datagrams ([`crate::datagrams`])
/// from the receiver to a sender that has been sending for a while, through
/// the send loop's own per-datagram function.
pub fn send(data: &[u8]) -> bool {
    let mut tx = rtcc_net::fuzz::Sender::new();
    for d in datagrams(data) {
        tx.datagram(d.bytes, Duration::from_millis(d.gap_ms));
    }
    tx.stats().rtcp_received > 0
}

/// The settings `rtcc send --sdp` takes besides the H.264 file.
#[derive(Debug, Arbitrary)]
struct SdpSettings {
    v6: bool,
    addr: [u8; 16],
    port: u16,
    payload_type: u8,
    rtx: Option<(u8, u32)>,
    nack: bool,
    media_ssrc: u32,
    extension_ids: [u8; 3],
    mtu: u16,
}

/// `sdp`: the first bytes as the sender's settings, the rest as the H.264
/// Annex-B file it sends: the file is parsed and packetised as `rtcc send
/// --source` does, and, when it has an SPS and a PPS, the SDP is written and
/// must read back with an RFC 8866 parser, naming the payload types.
pub fn sdp(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let Ok(settings) = SdpSettings::arbitrary(&mut u) else {
        return false;
    };
    let file = bytes::Bytes::copy_from_slice(u.take_rest());
    let config = H264SourceConfig {
        fps: 30.0,
        mtu: usize::from(settings.mtu),
        looping: false,
    };
    let Ok(src) = H264FileSource::from_annexb(Instant::ZERO, file, Path::new("<fuzz>"), config)
    else {
        return false;
    };
    // What the receiver would do with the first frame's payloads.
    if let Some(p) = src.payloads(0) {
        let _ = depacketize(p);
    }
    let (Some(sps), Some(pps)) = (src.sps(), src.pps()) else {
        return false;
    };
    let addr = if settings.v6 {
        IpAddr::V6(Ipv6Addr::from(settings.addr))
    } else {
        let [a, b, c, d, ..] = settings.addr;
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    };
    let description = H264Sdp {
        addr,
        port: settings.port,
        payload_type: settings.payload_type,
        sps,
        pps,
        rtx: settings.rtx.map(|(payload_type, ssrc)| RtxSdp {
            payload_type,
            ssrc,
            media_ssrc: settings.media_ssrc,
        }),
        nack: settings.nack,
        media_ssrc: settings.media_ssrc,
        extension_ids: settings.extension_ids,
    };
    let Ok(text) = description.to_sdp() else {
        return false;
    };
    let parsed =
        sdp::description::session::SessionDescription::unmarshal(&mut std::io::Cursor::new(&text))
            .unwrap_or_else(|e| panic!("the SDP we wrote does not parse ({e}):\n{text}"));
    let formats = &parsed.media_descriptions[0].media_name.formats;
    assert_eq!(
        formats.first(),
        Some(&settings.payload_type.to_string()),
        "{text}"
    );
    true
}
