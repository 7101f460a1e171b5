//! The simulator's packet captures read by the real transport's decoders:
//! the transport feedback a simulated receiver sends, written into the
//! capture by rtcc-core's TWCC writer, must decode with rtcc-net's RTCP
//! parser into the arrivals the forward capture shows.

use std::collections::BTreeMap;
use std::path::Path;

use rtcc_net::wire::{decode_rtcp, FeedbackDecoder};

/// One-way delay of the scenario's link.
const DELAY_NS: u64 = 20_000_000;

/// (timestamp ns, destination port, UDP payload) of each record of a
/// simulated capture (classic pcap, nanosecond timestamps, Ethernet/IPv4).
fn records(path: &Path) -> Vec<(u64, u16, Vec<u8>)> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let le32 = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(le32(0), 0xa1b2_3c4d, "nanosecond pcap");
    let (mut at, mut out) = (24, Vec::new());
    while at < b.len() {
        let ts = u64::from(le32(at)) * 1_000_000_000 + u64::from(le32(at + 4));
        let len = le32(at + 8) as usize;
        let f = &b[at + 16..at + 16 + len];
        if f[14 + 9] == 17 {
            let udp = &f[34..];
            out.push((ts, u16::from_be_bytes([udp[2], udp[3]]), udp[8..].to_vec()));
        }
        at += 16 + len;
    }
    out
}

#[test]
fn simulated_twcc_feedback_decodes_to_the_captured_arrivals() {
    let text = r#"
name = "capture-feedback"
duration = "8s"
[[link]]
name = "bottleneck"
rate = "1000kbps"
delay = "20ms"
queue = "30KB"
loss = { model = "bernoulli", p = 0.03 }
[[flow]]
name = "media"
kind = "media"
cc = "gcc"
"#;
    let sc = rtcc_sim::Scenario::from_toml_str(text, "capture-feedback.toml").unwrap();
    let dir = std::env::temp_dir().join(format!("rtcc-net-sim-capture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = rtcc_sim::RunOptions {
        seed: Some(4),
        pcap_dir: Some(dir.clone()),
        ..Default::default()
    };
    rtcc_sim::run(&sc, &opts, &mut |_| {}).unwrap();

    // Forward: each media packet's transport-wide sequence number (RFC 8285
    // extension, id 1) and its arrival at the receiver, departure + delay.
    let mut arrived: BTreeMap<u16, u64> = BTreeMap::new();
    for (ts, port, p) in records(&dir.join("bottleneck.pcap")) {
        if port == 5004 && p[0] & 0x10 != 0 {
            assert_eq!(&p[12..14], &[0xBE, 0xDE], "one-byte extensions");
            assert_eq!(p[16] >> 4, 1, "transport-wide sequence number");
            let seq = u16::from_be_bytes([p[17], p[18]]);
            arrived.insert(seq, ts + DELAY_NS);
        }
    }
    let highest = u64::from(*arrived.keys().last().unwrap());
    assert!(highest > 500 && highest < 30_000, "{highest} packets");

    // Back: every feedback datagram decodes, and says what the capture saw.
    let mut decoder = FeedbackDecoder::new();
    let (mut received, mut lost, mut reports) = (0, 0, 0);
    let mut reported = std::collections::BTreeSet::new();
    for (_, port, p) in records(&dir.join("bottleneck-reverse.pcap")) {
        if port != 5005 {
            continue;
        }
        let msgs = decode_rtcp(&p).unwrap_or_else(|e| panic!("{e}: {p:02x?}"));
        // RR, the APP filler, TWCC, NACK, PLI, empty SDES: at most one unknown.
        assert!(msgs.unknown <= 1, "{p:02x?}");
        let Some(fb) = decoder.feedback(&msgs, highest) else {
            continue;
        };
        reports += 1;
        for (seq, arrival) in fb.packets {
            let seq = seq as u16;
            reported.insert(seq);
            match (arrival, arrived.get(&seq)) {
                (Some(a), Some(&t)) => {
                    // TWCC's 250 µs deltas from a quantised base: within 125 µs.
                    let err = a.as_nanos().abs_diff(t);
                    assert!(err <= 125_000, "seq {seq}: {} vs {t} ns", a.as_nanos());
                    received += 1;
                }
                (None, None) => lost += 1,
                (a, t) => panic!("seq {seq}: reported {a:?}, captured {t:?}"),
            }
        }
    }
    assert!(reports > 100, "{reports} reports");
    assert!(
        received > 500 && lost > 5,
        "{received} received, {lost} lost"
    );
    // Every packet that arrived before the last report is in a report.
    let last = *reported.iter().last().unwrap();
    let missing: Vec<u16> = arrived
        .keys()
        .filter(|&&s| s < last && !reported.contains(&s))
        .copied()
        .collect();
    assert!(missing.is_empty(), "never reported: {missing:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
