//! The short fuzz run of `cargo test` (stable, no libFuzzer): every target
//! of `rtcc_fuzz::TARGETS` replays its committed corpus (`fuzz/corpus/<name>/`,
//! seeds and every crash the fuzzers found), which must reach the code under
//! test (at least half the seeds are accepted), then a few thousand mutations
//! of it drawn from a fixed seed (byte flips, random bytes, truncations,
//! insertions, deletions, splices), so a failure replays exactly. Every
//! corpus file also goes through every other target.
//!
//! `cargo test -p rtcc-fuzz -- --ignored write_seed_corpus` rewrites the
//! generated seed files (`seed-*`) from the project's own writers.

use std::path::{Path, PathBuf};

use rand::Rng as _;
use rtcc_core::rng;

/// Mutated inputs per target (the controller's inputs run longer).
const MUTATIONS: usize = 3_000;
const CONTROLLER_MUTATIONS: usize = 600;
/// Seed of the mutation streams.
const SEED: u64 = 0xF022;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("readable corpus directory").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// One mutation of `input`, libFuzzer-style, drawn from `rng`.
fn mutate(rng: &mut rng::Rng, input: &mut Vec<u8>, others: &[(String, Vec<u8>)]) {
    for _ in 0..rng.random_range(1..=4) {
        let len = input.len();
        match rng.random_range(0..7u32) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                input[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                input[i] = rng.random();
            }
            2 if len > 0 => input.truncate(rng.random_range(0..len)),
            3 => {
                let i = rng.random_range(0..=len);
                for _ in 0..rng.random_range(1..=8) {
                    input.insert(i, rng.random());
                }
            }
            4 if len > 1 => {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a..=len.min(a + 64));
                input.drain(a..b);
            }
            5 if len > 0 => {
                // Interesting values where parsers keep lengths and counts.
                let i = rng.random_range(0..len);
                input[i] = [0, 1, 0x7F, 0x80, 0xFF, b'0', b'9', b'-', b'.', b'\n']
                    [rng.random_range(0..10)];
            }
            _ => {
                // Splice: the tail of another corpus file.
                let (_, other) = &others[rng.random_range(0..others.len())];
                if !other.is_empty() {
                    let from = rng.random_range(0..other.len());
                    let at = rng.random_range(0..=len);
                    input.truncate(at);
                    input.extend_from_slice(&other[from..]);
                }
            }
        }
    }
}

fn smoke(target: &str, mutations: usize) {
    let (index, f) = rtcc_fuzz::TARGETS
        .iter()
        .enumerate()
        .find_map(|(i, (n, f))| (*n == target).then_some((i, *f)))
        .unwrap_or_else(|| panic!("no target {target}"));
    let files = corpus(target);
    assert!(!files.is_empty(), "fuzz/corpus/{target} is empty");
    let accepted: Vec<&str> = files
        .iter()
        .filter(|(_, data)| f(data))
        .map(|(n, _)| n.as_str())
        .collect();
    // The seeds are real inputs: most must get past the syntax.
    let seeds = files.iter().filter(|(n, _)| n.starts_with("seed-")).count();
    assert!(
        accepted.len() * 2 >= seeds && !accepted.is_empty(),
        "{target}: only {accepted:?} of {} corpus files accepted",
        files.len()
    );
    let mut rng = rng::stream(SEED, index as u64);
    let mut input = Vec::new();
    for _ in 0..mutations {
        let (_, base) = &files[rng.random_range(0..files.len())];
        input.clear();
        input.extend_from_slice(base);
        mutate(&mut rng, &mut input, &files);
        if std::panic::catch_unwind(|| f(&input)).is_err() {
            // Kept for `cargo run -p rtcc-fuzz --example replay`.
            let out = std::env::temp_dir().join(format!("rtcc-fuzz-{target}-crash"));
            let _ = std::fs::write(&out, &input);
            panic!(
                "{target}: a mutated input panicked (written to {}): {:?}",
                out.display(),
                String::from_utf8_lossy(&input)
            );
        }
    }
}

macro_rules! smoke_tests {
    ($($name:ident: $n:expr),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                smoke(stringify!($name), $n);
            }
        )*

        #[test]
        fn every_target_has_a_smoke_test() {
            let tested = [$(stringify!($name)),*];
            for (name, _) in rtcc_fuzz::TARGETS {
                assert!(tested.contains(name), "no smoke test for target {name}");
            }
        }
    };
}

smoke_tests! {
    scenario: MUTATIONS,
    trace_mahimahi: MUTATIONS,
    trace_throughput: MUTATIONS,
    trace_opennetlab: MUTATIONS,
    wire: MUTATIONS,
    recv: MUTATIONS,
    send: MUTATIONS,
    sdp: MUTATIONS,
    controller: CONTROLLER_MUTATIONS,
}

/// Each corpus file is fed to every other target too: a scenario as a
/// datagram, a packet as a trace, and so on.
#[test]
fn every_corpus_file_through_every_target() {
    let all: Vec<(String, Vec<u8>)> = rtcc_fuzz::TARGETS
        .iter()
        .flat_map(|(name, _)| corpus(name))
        .collect();
    for (target, f) in rtcc_fuzz::TARGETS {
        for (file, data) in &all {
            if std::panic::catch_unwind(|| f(data)).is_err() {
                panic!("{target} panicked on corpus file {file}");
            }
        }
    }
}

mod seeds {
    //! The generated seed files.

    use std::path::Path;

    use rand::Rng as _;
    use rtcc_core::feedback::{Nack, WireFeedback};
    use rtcc_core::media::frame::FrameType;
    use rtcc_core::media::packetizer::{MediaPacket, Packetizer};
    use rtcc_core::session::sender::Transmit;
    use rtcc_core::{rng, Bytes, Instant, PacketKind};
    use rtcc_fuzz::frame_datagrams;
    use rtcc_net::wire::{
        encode_media, encode_padding, encode_receiver_report, encode_rtx, encode_sdes_cname,
        encode_sender_report, FeedbackEncoder, FeedbackFormat, ReceptionStats, WireConfig,
        DEFAULT_CNAME,
    };

    use super::corpus_dir;

    fn write(target: &str, name: &str, data: &[u8]) {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{name}")), data).unwrap();
    }

    fn copy(target: &str, name: &str, from: &str, max_lines: usize) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let text = std::fs::read_to_string(root.join(from)).unwrap();
        let head: String = text
            .lines()
            .take(max_lines)
            .map(|l| format!("{l}\n"))
            .collect();
        write(target, name, head.as_bytes());
    }

    /// Packet `index` of `count` of frame `frame`, media sequence `seq`.
    fn transmit(seq: u64, frame: u64, index: u32, count: u32, kind: PacketKind) -> Transmit {
        let payload = Bytes::new(300);
        Transmit {
            seq,
            media_seq: seq,
            kind,
            packet: MediaPacket {
                frame_id: frame,
                frame_type: if frame == 0 {
                    FrameType::Key
                } else {
                    FrameType::Delta
                },
                capture_time: Instant::from_millis(frame * 33),
                index,
                count,
                last_in_frame: index + 1 == count,
                payload,
                wire_size: payload + Packetizer::default().header_overhead,
                layer: 0,
                layer_end: false,
                repair: false,
            },
            send_time: Instant::from_millis(frame * 33 + u64::from(index)),
        }
    }

    fn media(tx: &Transmit) -> Vec<u8> {
        let mut d = Vec::new();
        let ntp = (tx.packet.capture_time.as_nanos() << 32) / 1_000_000_000;
        encode_media(&WireConfig::default(), tx, ntp, None, &mut d).unwrap();
        d
    }

    fn feedback(format: FeedbackFormat, seqs: std::ops::Range<u64>, pli: bool) -> Vec<Vec<u8>> {
        let mut enc = FeedbackEncoder::new(WireConfig {
            feedback_format: format,
            ..WireConfig::default()
        })
        .unwrap();
        let fb = WireFeedback {
            report_time: Instant::from_millis(400),
            packets: seqs
                .map(|s| (s, (s % 7 != 3).then(|| Instant::from_millis(100 + 5 * s))))
                .collect(),
            key_frame_request: pli,
        };
        enc.encode(&fb, 1 << 40).unwrap()
    }

    fn reports() -> (Vec<u8>, Vec<u8>) {
        let block = ReceptionStats {
            ssrc: WireConfig::default().media_ssrc,
            fraction_lost: 12,
            cumulative_lost: 3,
            extended_highest_seq: 90,
            jitter: 40,
            last_sr: 0x1234_5678,
            delay_since_last_sr: 6_554,
        };
        let mut sr = Vec::new();
        let ssrc = WireConfig::default().media_ssrc;
        encode_sender_report(ssrc, 1 << 40, 9_000, 90, 27_000, &[], &mut sr).unwrap();
        encode_sdes_cname(&[ssrc], DEFAULT_CNAME, &mut sr).unwrap();
        let mut rr = Vec::new();
        let fb_ssrc = WireConfig::default().feedback_ssrc;
        encode_receiver_report(fb_ssrc, &[block], &mut rr).unwrap();
        encode_sdes_cname(&[fb_ssrc], DEFAULT_CNAME, &mut rr).unwrap();
        (sr, rr)
    }

    fn nack(seqs: &[u16]) -> Vec<Vec<u8>> {
        let enc = FeedbackEncoder::new(WireConfig::default()).unwrap();
        let mut out = Vec::new();
        enc.append_nack(
            &Nack {
                report_time: Instant::from_millis(300),
                seqs: seqs.to_vec(),
            },
            &mut out,
        )
        .unwrap();
        out
    }

    /// A tiny H.264 Annex-B stream: SPS (Baseline, level 3.0), PPS, an IDR
    /// slice and a non-IDR slice (slice data is filler, never decoded here).
    fn annexb() -> Vec<u8> {
        let mut s = Vec::new();
        for nal in [
            &[0x67, 0x42, 0xC0, 0x1E, 0xD9, 0x00, 0xA0, 0x47, 0xFE, 0xC8][..],
            &[0x68, 0xCE, 0x38, 0x80],
            &[0x65, 0x88, 0x84, 0x00, 0x33, 0xFF, 0x12, 0x34, 0x56, 0x78],
            &[0x41, 0x9A, 0x02, 0x04, 0x08, 0x10],
        ] {
            s.extend_from_slice(&[0, 0, 0, 1]);
            s.extend_from_slice(nal);
        }
        s
    }

    #[test]
    #[ignore = "rewrites fuzz/corpus/*/seed-*; run by hand after a format change"]
    fn write_seed_corpus() {
        // Real scenario files.
        for (name, path) in [
            ("demo.toml", "scenarios/demo.toml"),
            ("gcc-1mbps.toml", "scenarios/tests/gcc-1mbps.toml"),
            ("gcc-loss5-nack.toml", "scenarios/tests/gcc-loss5-nack.toml"),
            ("sqp-steps.toml", "scenarios/tests/sqp-steps.toml"),
            (
                "svc-layers-loss.toml",
                "scenarios/tests/svc-layers-loss.toml",
            ),
            ("copa-vs-gcc.toml", "scenarios/tests/copa-vs-gcc.toml"),
            (
                "robustness-conditions.toml",
                "scenarios/tests/robustness-conditions.toml",
            ),
            ("live-autorec.toml", "scenarios/tests/live-autorec.toml"),
        ] {
            copy("scenario", name, path, 200);
        }

        // Traces: heads of real logs, and hand-written mahimahi / OpenNetLab files.
        copy(
            "trace_throughput",
            "lumos5g-4g",
            "traces/lumos5g/4G/4g_trace_driving_50033_dr",
            40,
        );
        copy(
            "trace_throughput",
            "fcc",
            "traces/fcc/trace_866_http---www.amazon.com",
            40,
        );
        copy(
            "trace_throughput",
            "norway-raw",
            "traces/norway-hsdpa/bus.ljansbakken-oslo-report.2010-09-28_1407CEST.log",
            40,
        );
        let mut five_g = String::from("# time_s throughput_Mbps\n");
        for i in 0..30 {
            five_g += &format!("{}.0\t{}.5\n", i + 1, 100 + (i * 37) % 300);
        }
        write("trace_throughput", "lumos5g-5g-like", five_g.as_bytes());
        // 12 Mbps: one 1500 B opportunity per ms.
        let steady: String = (1..=100).map(|ms| format!("{ms}\n")).collect();
        write("trace_mahimahi", "12mbps", steady.as_bytes());
        // Bursty: repeated timestamps, gaps, a blank line.
        let mut bursty = String::new();
        for ms in [0, 0, 0, 4, 4, 9, 20, 20, 20, 20, 21, 40, 41, 42, 80, 120] {
            bursty += &format!("{ms}\n");
        }
        bursty += "\n200\n";
        write("trace_mahimahi", "bursty", bursty.as_bytes());
        write(
            "trace_opennetlab",
            "uplink",
            br#"{
  "type": "video",
  "downlink": {},
  "uplink": {
    "trace_pattern": [
      {"duration": 60000, "capacity": 300, "loss": 0, "rtt": 40, "jitter": 0},
      {"duration": 30000, "capacity": 1500, "loss": 0.02, "rtt": 80},
      {"duration": 10000, "capacity": 0},
      {"duration": 5000, "capacity": 4000, "rtt": 20}
    ]
  }
}
"#,
        );
        write(
            "trace_opennetlab",
            "downlink-only",
            br#"{"downlink": {"trace_pattern": [{"duration": 1000, "capacity": 800}, {"duration": 2000.5, "capacity": 2500.25}]}}"#,
        );

        // Wire: one datagram of each kind.
        let cfg = WireConfig::default();
        let first = media(&transmit(0, 0, 0, 3, PacketKind::Media));
        write("wire", "media", &first);
        let mut rtx = Vec::new();
        encode_rtx(
            &cfg,
            &transmit(5, 1, 1, 2, PacketKind::Retransmission),
            0,
            1 << 32,
            None,
            &mut rtx,
        )
        .unwrap();
        write("wire", "rtx", &rtx);
        let mut pad = Vec::new();
        let mut ptx = transmit(9, 0, 0, 1, PacketKind::Padding);
        ptx.packet.wire_size = Bytes::new(600);
        encode_padding(&cfg, &ptx, 3, &mut pad).unwrap();
        write("wire", "padding", &pad);
        let twcc = feedback(FeedbackFormat::TransportCc, 0..40, true);
        write("wire", "twcc-pli", &twcc[0]);
        let ccfb = feedback(FeedbackFormat::Rfc8888, 65_500..65_560, false);
        write("wire", "rfc8888", &ccfb[0]);
        let (sr, rr) = reports();
        write("wire", "sr-sdes", &sr);
        write("wire", "rr-sdes", &rr);
        let nacks = nack(&[3, 4, 9, 30, 31, 200]);
        write("wire", "nack", &nacks[0]);

        // Receiver: a stream of three-packet frames with an SR, a loss and
        // its retransmission, and probe padding.
        let mut items: Vec<(u8, Vec<u8>)> = Vec::new();
        let mut seq = 0;
        for frame in 0..10u64 {
            for index in 0..3 {
                if seq != 7 {
                    items.push((
                        if index == 0 { 33 } else { 0 },
                        media(&transmit(seq, frame, index, 3, PacketKind::Media)),
                    ));
                }
                seq += 1;
            }
            if frame == 4 {
                items.push((2, sr.clone()));
                let mut d = Vec::new();
                let mut lost = transmit(7, 2, 1, 3, PacketKind::Retransmission);
                lost.seq = seq;
                seq += 1;
                encode_rtx(&cfg, &lost, 0, 1 << 32, None, &mut d).unwrap();
                items.push((1, d));
                let mut p = Vec::new();
                let mut ptx = transmit(seq, 0, 0, 1, PacketKind::Padding);
                ptx.packet.wire_size = Bytes::new(400);
                seq += 1;
                encode_padding(&cfg, &ptx, 1, &mut p).unwrap();
                items.push((1, p));
            }
        }
        write(
            "recv",
            "stream",
            &frame_datagrams(items.iter().map(|(g, d)| (*g, d.as_slice()))),
        );
        // A standard sender: RFC 6184 single NAL unit packets, transport-wide
        // sequence only, frames by timestamp and marker.
        let mut plain = Vec::new();
        for i in 0..12u16 {
            let mut d = vec![0x90, (u8::from(i % 2 == 1) << 7) | 96];
            d.extend_from_slice(&i.to_be_bytes());
            d.extend_from_slice(&(u32::from(i / 2) * 3000).to_be_bytes());
            d.extend_from_slice(&0x1234_5678u32.to_be_bytes());
            d.extend_from_slice(&[0xBE, 0xDE, 0, 1, 0x11]);
            d.extend_from_slice(&i.to_be_bytes());
            d.push(0);
            d.extend_from_slice(if i == 0 {
                &[0x65, 0x88, 0x80, 0x40]
            } else {
                &[0x41, 0x9A, 0x20, 0x10]
            });
            plain.push(d);
        }
        write(
            "recv",
            "plain-h264",
            &frame_datagrams(plain.iter().map(|d| (16u8, d.as_slice()))),
        );

        // Sender: feedback on what it sent, NACKs, reports.
        let mut to_sender: Vec<Vec<u8>> = Vec::new();
        to_sender.extend(feedback(FeedbackFormat::TransportCc, 0..20, false));
        to_sender.push(rr.clone());
        to_sender.extend(nack(&[2, 5, 6]));
        to_sender.extend(feedback(FeedbackFormat::TransportCc, 20..45, true));
        write(
            "send",
            "twcc",
            &frame_datagrams(to_sender.iter().map(|d| (20u8, d.as_slice()))),
        );
        let ccfb: Vec<Vec<u8>> = [0..15, 15..40]
            .into_iter()
            .flat_map(|r| feedback(FeedbackFormat::Rfc8888, r, false))
            .collect();
        write(
            "send",
            "rfc8888",
            &frame_datagrams(ccfb.iter().map(|d| (25u8, d.as_slice()))),
        );

        // SDP: the settings `arbitrary` reads (every multi-byte field a
        // palindrome, so byte order does not matter), then the stream.
        let mut settings = vec![0u8]; // v6: false
        settings.extend_from_slice(&[127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        settings.extend_from_slice(&[0x13, 0x13]); // port 4883
        settings.push(96); // payload type
        settings.extend_from_slice(&[1, 97, 0x22, 0x22, 0x22, 0x22]); // rtx: Some((97, ssrc))
        settings.push(1); // nack
        settings.extend_from_slice(&[0x11, 0x11, 0x11, 0x11]); // media SSRC
        settings.extend_from_slice(&[1, 2, 3]); // extension ids
        settings.extend_from_slice(&[0x04, 0x04]); // MTU 1028
        let mut input = settings.clone();
        input.extend_from_slice(&annexb());
        assert!(rtcc_fuzz::sdp(&input), "the SDP seed must produce an SDP");
        write("sdp", "h264", &input);
        let mut small_mtu = settings;
        let n = small_mtu.len();
        small_mtu[n - 2..].copy_from_slice(&[0x03, 0x03]);
        small_mtu[0] = 1; // IPv6
        small_mtu.extend_from_slice(&annexb());
        write("sdp", "h264-v6-fu-a", &small_mtu);

        // Controller: random event streams, one per controller.
        let mut r = rng::stream(7, 7);
        for (i, name) in rtcc_core::CcConfig::NAMES.iter().enumerate() {
            let mut data = vec![i as u8];
            data.extend((0..1500).map(|_| r.random::<u8>()));
            write("controller", name, &data);
        }
    }
}
