//! Deterministic fuzzing of every decoder: random datagrams and random
//! mutations and truncations of valid ones must give `Ok` or `Err`, never a
//! panic (DESIGN §5). Seeded from `rtcc_core::rng`, so a failure replays.

use rand::Rng as _;
use rtcc_core::feedback::WireFeedback;
use rtcc_core::time::Instant;

use super::feedback::FeedbackDecoder;
use super::media::tests::transmit;
use super::*;

fn valid_samples() -> Vec<Vec<u8>> {
    let cfg = WireConfig::default();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    encode_media(&cfg, &transmit(65_535, 40), 7, None, &mut buf).unwrap();
    out.push(buf.clone());
    encode_media(&cfg, &transmit(3, 0), 7, Some(b"hello"), &mut buf).unwrap();
    out.push(buf.clone());
    // Probe padding: a small one (RTP padding only) and one with filler words.
    for size in [100, 700] {
        let mut tx = transmit(9, 0);
        tx.kind = rtcc_core::PacketKind::Padding;
        tx.packet.wire_size = rtcc_core::units::Bytes::new(size);
        encode_padding(&cfg, &tx, 4, &mut buf).unwrap();
        out.push(buf.clone());
    }
    let fb = WireFeedback {
        report_time: Instant::from_millis(500),
        packets: (0..40u64)
            .map(|s| {
                let arr = (s % 5 != 0).then(|| Instant::from_micros(100_000 + s * 3_700));
                (65_520 + s, arr)
            })
            .collect(),
        key_frame_request: true,
    };
    for format in [FeedbackFormat::TransportCc, FeedbackFormat::Rfc8888] {
        let mut enc = FeedbackEncoder::new(WireConfig {
            feedback_format: format,
            ..cfg
        })
        .unwrap();
        out.extend(enc.encode(&fb, 1 << 40).unwrap());
    }
    let stats = ReceptionStats {
        ssrc: 9,
        fraction_lost: 3,
        cumulative_lost: -2,
        extended_highest_seq: 70_000,
        jitter: 5,
        last_sr: 6,
        delay_since_last_sr: 7,
    };
    let mut sr = Vec::new();
    encode_sender_report(1, 2, 3, 4, 5, &[stats], &mut sr).unwrap();
    encode_receiver_report(1, &[stats, stats], &mut sr).unwrap();
    out.push(sr);
    out
}

fn decode_everything(cfg: &WireConfig, dec: &mut FeedbackDecoder, d: &[u8]) {
    let media = decode_media(cfg, d);
    let rtcp = decode_rtcp(d);
    // A datagram is never both (RFC 5761 demultiplexing).
    assert!(media.is_err() || rtcp.is_err());
    if let Ok(m) = media {
        let mut frames = Unwrapper::<32>::new();
        let _ = m.packet_meta(&mut frames, |_| Instant::ZERO);
    }
    if let Ok(msgs) = rtcp {
        let _ = dec.feedback(&msgs, 1 << 20);
        let _ = dec.feedback(&msgs, 0);
    }
}

#[test]
fn decoders_never_panic() {
    let cfg = WireConfig::default();
    let samples = valid_samples();
    let mut dec = FeedbackDecoder::new();
    for s in &samples {
        // The samples themselves decode.
        assert!(decode_media(&cfg, s).is_ok() || decode_rtcp(s).is_ok());
    }
    let mut rng = rtcc_core::rng::stream(0x5EED, 42);
    let mut d: Vec<u8> = Vec::with_capacity(2048);
    for _ in 0..100_000 {
        d.clear();
        match rng.random_range(0..4u32) {
            0 => {
                // Random bytes, sometimes with a plausible first octet.
                let n = rng.random_range(0..80usize);
                d.extend((0..n).map(|_| rng.random::<u8>()));
                if !d.is_empty() && rng.random::<bool>() {
                    d[0] = 0x80 | (d[0] & 0x3F);
                }
            }
            1 => {
                // A valid datagram with a few bytes changed.
                d.extend_from_slice(&samples[rng.random_range(0..samples.len())]);
                for _ in 0..rng.random_range(1..6) {
                    let i = rng.random_range(0..d.len());
                    d[i] = rng.random();
                }
            }
            2 => {
                // Truncated.
                d.extend_from_slice(&samples[rng.random_range(0..samples.len())]);
                let n = rng.random_range(0..d.len());
                d.truncate(n);
            }
            _ => {
                // Bytes inserted, then maybe truncated.
                d.extend_from_slice(&samples[rng.random_range(0..samples.len())]);
                let i = rng.random_range(0..=d.len());
                let b: u8 = rng.random();
                d.insert(i, b);
                if rng.random::<bool>() {
                    let n = rng.random_range(0..d.len());
                    d.truncate(n);
                }
            }
        }
        decode_everything(&cfg, &mut dec, &d);
    }
}

#[test]
fn rtp_and_rtcp_are_told_apart() {
    let cfg = WireConfig::default();
    let samples = valid_samples();
    // Media and padding samples first, then RTCP.
    for m in &samples[..4] {
        assert!(!is_rtcp(m));
        assert!(decode_media(&cfg, m).is_ok());
        assert_eq!(decode_rtcp(m), Err(WireError::NotRtcp(m[1])));
    }
    for r in &samples[4..] {
        assert!(is_rtcp(r));
        assert!(decode_rtcp(r).is_ok());
        assert_eq!(decode_media(&cfg, r), Err(WireError::NotRtp));
    }
}
