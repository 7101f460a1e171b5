//! Packet captures of the simulated links (`RunOptions::pcap_dir`,
//! docs/scenarios.md "Packet captures"): one classic pcap file per link,
//! a record per packet the link forwarded, at monotone departure times,
//! framed as Ethernet / IPv4 / UDP or TCP with valid checksums, media as
//! RTP whose sequence numbers run on without a gap where nothing was lost;
//! and turning captures on changes no other output byte.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::tmp;
use rtcc_sim::{run, RunOptions, Scenario};
use serde_json::Value;

/// A dumbbell with a lossy bottleneck: a GCC flow with NACKs, a TCP flow
/// and a CBR flow (flow indices 0, 1, 2).
const SCENARIO: &str = r#"
name = "pcap"
duration = "8s"
seed = 3
[topology]
kind = "dumbbell"
[[link]]
name = "bottleneck"
rate = "4Mbps"
delay = "20ms"
queue = "60KB"
loss = { model = "bernoulli", p = 0.02 }
[[flow]]
name = "video"
kind = "media"
cc = "gcc"
recovery = "nack"
encoder = { fps = 30, max_bitrate = "2Mbps", start_bitrate = "500kbps" }
[[flow]]
name = "bulk"
kind = "tcp"
start = "2s"
[[flow]]
name = "cbr"
kind = "udp-cbr"
rate = "300kbps"
"#;

/// One record of a pcap file: timestamp (ns) and frame.
struct Record {
    ts_ns: u64,
    frame: Vec<u8>,
}

/// Reads a classic nanosecond pcap file, checking its header.
fn read_pcap(path: &Path) -> Vec<Record> {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let le32 = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(le32(0), 0xa1b2_3c4d, "{}: nanosecond magic", path.display());
    assert_eq!(&b[4..8], &[2, 0, 4, 0], "version 2.4");
    assert_eq!(le32(20), 1, "LINKTYPE_ETHERNET");
    let mut at = 24;
    let mut out = Vec::new();
    while at < b.len() {
        let (sec, ns, cap, orig) = (le32(at), le32(at + 4), le32(at + 8), le32(at + 12));
        assert!(ns < 1_000_000_000);
        assert_eq!(cap, orig, "{}: whole frames", path.display());
        let end = at + 16 + cap as usize;
        assert!(end <= b.len(), "{}: truncated record", path.display());
        out.push(Record {
            ts_ns: u64::from(sec) * 1_000_000_000 + u64::from(ns),
            frame: b[at + 16..end].to_vec(),
        });
        at = end;
    }
    out
}

/// The ones'-complement sum of `bytes` folded and complemented (RFC 1071):
/// zero when a checksum inside them is right.
fn checksum(seed: u32, bytes: &[u8]) -> u16 {
    let mut sum = seed;
    for c in bytes.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// What a frame is, once its headers are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// RTP of payload type `pt`: SSRC, sequence number, timestamp, marker.
    Rtp {
        pt: u8,
        ssrc: u32,
        seq: u16,
        ts: u32,
        marker: bool,
    },
    /// An RTCP compound packet: each packet's type and count/format field,
    /// and the (base sequence number, status count) of its TWCC packets.
    Rtcp {
        packets: Vec<(u8, u8)>,
        twcc: Vec<(u16, u16)>,
    },
    /// Other UDP to `port`.
    Udp { port: u16 },
    /// A TCP segment with `len` payload bytes.
    Tcp { seq: u32, ack: u32, len: usize },
}

/// An RTCP compound's (type, count/format) per packet and its TWCC packets
/// (base sequence number, status count).
type Compound = (Vec<(u8, u8)>, Vec<(u16, u16)>);

/// Checks the Ethernet, IPv4 and UDP/TCP headers of `f` and says what it is.
fn parse(f: &[u8]) -> Kind {
    assert_eq!(&f[12..14], &[0x08, 0x00], "IPv4 EtherType");
    let ip = &f[14..];
    assert_eq!(ip[0], 0x45);
    assert_eq!(
        usize::from(u16::from_be_bytes([ip[2], ip[3]])),
        ip.len(),
        "IPv4 total length = frame − 14"
    );
    assert_eq!(checksum(0, &ip[..20]), 0, "IPv4 header checksum");
    let l4 = &ip[20..];
    let pseudo = |proto: u32| {
        let mut s = proto + l4.len() as u32;
        for c in ip[12..20].chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], c[1]]));
        }
        s
    };
    match ip[9] {
        17 => {
            assert_eq!(usize::from(u16::from_be_bytes([l4[4], l4[5]])), l4.len());
            assert_eq!(checksum(pseudo(17), l4), 0, "UDP checksum");
            let port = u16::from_be_bytes([l4[2], l4[3]]);
            let p = &l4[8..];
            match port {
                5004 => {
                    assert_eq!(p[0] >> 6, 2, "RTP version 2");
                    Kind::Rtp {
                        pt: p[1] & 0x7f,
                        marker: p[1] & 0x80 != 0,
                        seq: u16::from_be_bytes([p[2], p[3]]),
                        ts: u32::from_be_bytes(p[4..8].try_into().unwrap()),
                        ssrc: u32::from_be_bytes(p[8..12].try_into().unwrap()),
                    }
                }
                5005 => {
                    // A compound packet: each RTCP header's length in words.
                    let (mut at, mut packets, mut twcc) = (0, Vec::new(), Vec::new());
                    while at < p.len() {
                        assert_eq!(p[at] >> 6, 2, "RTCP version 2");
                        let (fmt, pt) = (p[at] & 0x1f, p[at + 1]);
                        let len = 4 * (usize::from(u16::from_be_bytes([p[at + 2], p[at + 3]])) + 1);
                        if (pt, fmt) == (205, 15) {
                            let be16 = |i: usize| u16::from_be_bytes([p[at + i], p[at + i + 1]]);
                            assert!(len >= 20 + 2, "a TWCC packet has a chunk");
                            twcc.push((be16(12), be16(14)));
                        }
                        packets.push((pt, fmt));
                        at += len;
                    }
                    assert_eq!(at, p.len(), "RTCP lengths add up to the datagram");
                    Kind::Rtcp { packets, twcc }
                }
                port => Kind::Udp { port },
            }
        }
        6 => {
            assert_eq!(checksum(pseudo(6), l4), 0, "TCP checksum");
            let hl = usize::from(l4[12] >> 4) * 4;
            assert!((20..=60).contains(&hl));
            Kind::Tcp {
                seq: u32::from_be_bytes(l4[4..8].try_into().unwrap()),
                ack: u32::from_be_bytes(l4[8..12].try_into().unwrap()),
                len: l4.len() - hl,
            }
        }
        p => panic!("IP protocol {p}"),
    }
}

fn run_to(sc: &Scenario, out: &Path, pcap: Option<&Path>) -> Value {
    let opts = RunOptions {
        out_dir: Some(out.to_path_buf()),
        pcap_dir: pcap.map(Path::to_path_buf),
        ..Default::default()
    };
    run(sc, &opts, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .summary
}

#[test]
fn pcap_changes_no_output() {
    let sc = Scenario::from_toml_str(SCENARIO, "pcap.toml").unwrap();
    let (a, b) = (tmp("pcap-off"), tmp("pcap-on"));
    let caps = tmp("pcap-on-caps");
    run_to(&sc, &a, None);
    run_to(&sc, &b, Some(&caps));
    for f in ["summary.json", "timeseries.csv", "frames.csv"] {
        let x = std::fs::read(a.join(f)).unwrap();
        let y = std::fs::read(b.join(f)).unwrap();
        assert!(x == y, "{f} differs with captures on");
    }
    for d in [a, b, caps] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn a_capture_per_link_with_a_valid_record_per_forwarded_packet() {
    let sc = Scenario::from_toml_str(SCENARIO, "pcap.toml").unwrap();
    let out = tmp("pcap-records");
    // The captures beside the other outputs, in the same folder.
    let summary = run_to(&sc, &out, Some(&out));
    let links = summary["links"].as_array().unwrap();
    assert!(
        links.len() >= 6,
        "dumbbell: bottleneck, reverse, 4 access per flow"
    );
    let mut rtp_by_link = BTreeMap::new();
    let mut rtx: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    for l in links {
        let name = l["name"].as_str().unwrap();
        let forwarded = l["packets"].as_u64().unwrap() - l["drops"].as_u64().unwrap();
        let recs = read_pcap(&out.join(format!("{name}.pcap")));
        assert_eq!(
            recs.len() as u64,
            forwarded,
            "{name}: a record per packet forwarded"
        );
        let mut last = 0;
        let mut media = Vec::new();
        for r in &recs {
            assert!(r.ts_ns >= last, "{name}: timestamps monotone");
            last = r.ts_ns;
            let k = parse(&r.frame);
            if let Kind::Rtp {
                pt: 96,
                ssrc,
                seq,
                ts,
                marker,
            } = k
            {
                assert_eq!(ssrc, 0x1000_0000, "flow 0, path 0");
                media.push((seq, ts, marker));
            }
            if let Kind::Rtp {
                pt: 97, ssrc, seq, ..
            } = parse(&r.frame)
            {
                assert_eq!(ssrc, 0x1000_0001, "flow 0's RTX stream");
                rtx.entry(name.to_string()).or_default().push(seq);
            }
        }
        rtp_by_link.insert(name.to_string(), (recs, media));
    }
    // The RTX stream (retransmissions, padding) is numbered as rtcc send
    // numbers it: from 0, one by one, on the sender's access link.
    let sent_rtx = &rtx["video-access-src"];
    assert!(sent_rtx.len() > 10, "{} RTX packets", sent_rtx.len());
    for (i, &seq) in sent_rtx.iter().enumerate() {
        assert_eq!(seq, i as u16, "RTX sequence number {i}");
    }
    // On the sender's access link nothing is lost: RTP sequence numbers are
    // consecutive (with wrap), and a new timestamp (a new frame) follows a
    // marker (the last packet of the frame before).
    let (_, media) = &rtp_by_link["video-access-src"];
    assert!(media.len() > 500, "{} media packets", media.len());
    for w in media.windows(2) {
        let ((s0, t0, m0), (s1, t1, _)) = (w[0], w[1]);
        assert_eq!(s1, s0.wrapping_add(1), "consecutive RTP sequence numbers");
        assert_eq!(t1 != t0, m0, "marker on a frame's last packet");
        assert!(
            t1.wrapping_sub(t0) < 90_000,
            "90 kHz clock, frames 1/30 s apart"
        );
    }
    // Past the lossy bottleneck: increasing, and the gaps are the losses.
    let (_, after) = &rtp_by_link["video-access-dst"];
    let gaps: u64 = after
        .windows(2)
        .map(|w| {
            let d = w[1].0.wrapping_sub(w[0].0);
            assert!((1..1000).contains(&d), "sequence numbers increase");
            u64::from(d - 1)
        })
        .sum();
    assert_eq!(
        gaps + after.len() as u64,
        media.len() as u64 - missing_tail(media, after)
    );
    assert!(gaps > 0, "the bottleneck's 2 % loss shows as gaps");
    // RTCP feedback and NACKs come back, TCP segments carry their payload.
    let (back, _) = &rtp_by_link["video-access-dst-reverse"];
    let rtcp: Vec<Compound> = back
        .iter()
        .filter_map(|r| match parse(&r.frame) {
            Kind::Rtcp { packets, twcc } => Some((packets, twcc)),
            _ => None,
        })
        .collect();
    // Transport feedback: an RR first (RFC 3550 §6.1), then real TWCC
    // packets (RTPFB, FMT 15) that report every transport-wide sequence
    // number once, in order, from the first one sent; NACKs are RTPFB FMT 1.
    let feedback: Vec<&Vec<(u16, u16)>> = rtcp
        .iter()
        .filter(|(packets, _)| packets[0] == (201, 0))
        .map(|(_, twcc)| twcc)
        .collect();
    assert!(feedback.len() > 100, "{} feedback packets", feedback.len());
    let mut next = 0u16;
    let mut covered = 0u64;
    for (base, count) in feedback.iter().flat_map(|t| t.iter()) {
        assert_eq!(*base, next, "each report starts where the last one ended");
        next = base.wrapping_add(*count);
        covered += u64::from(*count);
    }
    assert!(covered > 1000, "{covered} sequence numbers reported");
    assert!(
        rtcp.iter().any(|(packets, _)| packets.contains(&(205, 1))),
        "generic NACKs"
    );
    let (tcp, _) = &rtp_by_link["bulk-access-src"];
    let segs: Vec<(u32, usize)> = tcp
        .iter()
        .filter_map(|r| match parse(&r.frame) {
            Kind::Tcp { seq, len, .. } if len > 0 => Some((seq, len)),
            _ => None,
        })
        .collect();
    assert!(segs.len() > 100);
    // In order but for retransmissions: most segments start where the one
    // before ended.
    let contiguous = segs
        .windows(2)
        .filter(|w| w[1].0 == w[0].0.wrapping_add(w[0].1 as u32))
        .count();
    assert!(
        contiguous * 10 > segs.len() * 9,
        "{contiguous} of {}",
        segs.len()
    );
    let (acks, _) = &rtp_by_link["bulk-access-dst-reverse"];
    assert!(acks
        .iter()
        .all(|r| matches!(parse(&r.frame), Kind::Tcp { len: 0, ack, .. } if ack > 0)));
    let (cbr, _) = &rtp_by_link["cbr-access-src"];
    assert!(cbr
        .iter()
        .all(|r| parse(&r.frame) == Kind::Udp { port: 5001 }));
    std::fs::remove_dir_all(out).unwrap();
}

/// Media packets sent after the last one that reached the far end (still
/// in flight at the end of the run): not gaps.
fn missing_tail(sent: &[(u16, u32, bool)], got: &[(u16, u32, bool)]) -> u64 {
    let last = got.last().map_or(0, |g| g.0);
    let pos = sent.iter().rposition(|s| s.0 == last).unwrap_or(0);
    (sent.len() - 1 - pos) as u64
}

#[test]
fn a_failed_run_leaves_no_capture_behind() {
    let sc = Scenario::from_toml_str(SCENARIO, "pcap.toml").unwrap();
    let root = tmp("pcap-fail");
    let caps = root.join("caps");
    let opts = RunOptions {
        out_dir: Some(root.join("out")),
        pcap_dir: Some(caps.clone()),
        ..Default::default()
    };
    let mut n = 0;
    let r = rtcc_sim::run_interruptible(&sc, &opts, &mut |_| {
        n += 1;
        n < 3
    });
    assert!(r.is_err());
    assert!(!caps.exists() && !root.join("out").exists());
    let _ = std::fs::remove_dir_all(root);
}

/// Every flow kind on a paths topology: a two-path flow, a live flow with
/// AutoRec, a TFRC flow and CBR of the "internet" mix (40 B packets, below
/// the RTP headers' size), with loss on the shared link.
const EVERY_KIND: &str = r#"
name = "pcap-kinds"
duration = "5s"
[topology]
kind = "paths"
[[link]]
name = "access-a"
rate = "20Mbps"
delay = "5ms"
[[link]]
name = "access-b"
rate = "20Mbps"
delay = "30ms"
[[link]]
name = "shared"
rate = "6Mbps"
delay = "20ms"
queue = "100ms"
loss = { model = "bernoulli", p = 0.01 }
[[path]]
name = "pa"
links = ["access-a", "shared"]
[[path]]
name = "pb"
links = ["access-b", "shared"]
[[flow]]
name = "mp"
kind = "multipath-media"
cc = "gcc"
paths = ["pa", "pb"]
[[flow]]
name = "live"
kind = "live"
bitrate = "1Mbps"
recovery = "autorec"
path = "pa"
[[flow]]
name = "tfrc"
kind = "tfrc"
path = "pb"
[[flow]]
name = "mix"
kind = "udp-cbr"
rate = "300kbps"
packet_mix = "internet"
path = "pa"
"#;

#[test]
fn every_flow_kind_is_captured_with_valid_frames() {
    let sc = Scenario::from_toml_str(EVERY_KIND, "kinds.toml").unwrap();
    let out = tmp("pcap-kinds");
    let caps = out.join("caps");
    let summary = run_to(&sc, &out, Some(&caps));
    let mut ports = BTreeMap::new();
    let mut ssrcs = BTreeMap::new();
    for l in summary["links"].as_array().unwrap() {
        let name = l["name"].as_str().unwrap();
        let forwarded = l["packets"].as_u64().unwrap() - l["drops"].as_u64().unwrap();
        let recs = read_pcap(&caps.join(format!("{name}.pcap")));
        assert_eq!(recs.len() as u64, forwarded, "{name}");
        assert!(recs.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "{name}");
        for r in &recs {
            match parse(&r.frame) {
                Kind::Udp { port } => *ports.entry(port).or_insert(0) += 1,
                Kind::Rtp { pt: 96, ssrc, .. } => *ssrcs.entry(ssrc).or_insert(0) += 1,
                Kind::Rtcp { .. } => *ports.entry(5005).or_insert(0) += 1,
                _ => {}
            }
        }
    }
    // Both paths of the multipath flow (flow 0) carry media, on SSRCs of
    // their own; the other kinds have their ports; feedback comes back.
    assert_eq!(
        ssrcs.keys().copied().collect::<Vec<_>>(),
        [0x1000_0000, 0x1000_0002]
    );
    for port in [5001, 5005, 5006, 5007, 6000] {
        assert!(
            ports.get(&port).is_some_and(|&n| n > 10),
            "port {port}: {ports:?}"
        );
    }
    std::fs::remove_dir_all(out).unwrap();
}
