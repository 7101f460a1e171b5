//! End-to-end runs over loopback: `rtcc send` and `rtcc recv` (the library
//! entry points) on real sockets, directly and through the link emulator.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;

use rtcc_core::{Bitrate, Duration};
use rtcc_net::emulate::{self, EmulatorConfig};
use rtcc_net::recv::{self, RecvConfig};
use rtcc_net::send::{self, SendConfig, Source};
use rtcc_net::wire::WireConfig;
use rtcc_sim::link::{LinkConfig, LossConfig, QueueLimit, RateModel};

mod common;
use common::free_port;

fn sender(to: SocketAddr, cc: &str, secs: u64) -> SendConfig {
    SendConfig {
        to,
        bind: "127.0.0.1:0".parse().unwrap(),
        media: rtcc_net::default_media(cc).unwrap(),
        source: Source::Synthetic,
        wire: WireConfig::default(),
        duration: Some(Duration::from_secs(secs)),
        seed: 1,
        out_dir: None,
        sdp: None,
        rtcp: None,
        rtcp_listen: None,
        pcap: None,
    }
}

fn receiver(listen: SocketAddr, secs: u64, out: Option<std::path::PathBuf>) -> RecvConfig {
    RecvConfig {
        listen,
        receiver: rtcc_net::default_media("gcc").unwrap().receiver,
        wire: WireConfig::default(),
        duration: Some(Duration::from_secs(secs)),
        idle_timeout: None,
        out_dir: out,
        peer: None,
        rtcp: None,
        rtcp_listen: None,
        pcap: None,
    }
}

#[test]
fn rtcp_on_separate_ports_both_ways() {
    // RFC 5761 §4 without multiplexing: each side reads RTCP on a port of its
    // own and sends its RTCP to the other's. Feedback, NACK-free reports and
    // SRs all flow, and nothing RTCP arrives on the media ports.
    let (rx_addr, rx_rtcp, tx_rtcp) = (free_port(), free_port(), free_port());
    let mut rx_cfg = receiver(rx_addr, 4, None);
    rx_cfg.rtcp_listen = Some(rx_rtcp);
    rx_cfg.rtcp = Some(tx_rtcp);
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(200));
    let mut tx_cfg = sender(rx_addr, "gcc", 3);
    tx_cfg.rtcp_listen = Some(tx_rtcp);
    tx_cfg.rtcp = Some(rx_rtcp);
    let tx = send::run_blocking(tx_cfg, Arc::new(AtomicBool::new(false))).unwrap();
    let rx = rx.join().unwrap().unwrap();
    assert!(tx.stats.feedback_reports > 30, "{:?}", tx.stats);
    assert!(tx.stats.receiver_reports >= 2, "{:?}", tx.stats);
    assert!(rx.stats.sender_reports >= 2, "{:?}", rx.stats);
    assert_eq!(
        (tx.stats.malformed, tx.stats.unexpected_source),
        (0, 0),
        "{:?}",
        tx.stats
    );
    assert_eq!(
        (rx.stats.malformed, rx.stats.rtcp_dropped),
        (0, 0),
        "{:?}",
        rx.stats
    );
    assert!(rx.stats.media_packets > 100, "{:?}", rx.stats);
}

#[test]
fn direct_loopback_run_delivers_frames_and_feedback() {
    let rx_addr = free_port();
    let dir = tempfile_dir("direct");
    let rx_cfg = receiver(rx_addr, 5, Some(dir.clone()));
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(200));
    let tx =
        send::run_blocking(sender(rx_addr, "gcc", 4), Arc::new(AtomicBool::new(false))).unwrap();
    let rx = rx.join().unwrap().unwrap();

    let sent_kbps = tx.stats.bytes_sent as f64 * 8.0 / tx.elapsed.as_secs_f64() / 1000.0;
    let (sim_sent, _, sim_target) = simulated_gcc("1Gbps", "0ms", 4);
    // Loopback is an unconstrained path: the simulator's run on a 1 Gbps
    // link with no delay (seeds 1-3) is the reference for the sending rate
    // (mean over the 4 s) and for where GCC's target ends. Never more than
    // 10 % above it; below, a real-time pacer in a debug build on a loaded
    // machine runs late (CI measured 1 929 kbps against 2 343-2 462; 2 362
    // in a release build), so down to 60 % of it: a sender stuck near its
    // 300 kbps start, or sending in bursts of the wrong size, is far below.
    assert!(
        sent_kbps >= 0.6 * sim_sent.0 && sent_kbps <= 1.1 * sim_sent.1,
        "sent {sent_kbps} kbps, simulated {sim_sent:?}"
    );
    let target = tx.final_target.as_kbps_f64();
    assert!(
        target >= 0.7 * sim_target.0 && target <= 1.1 * sim_target.1,
        "final target {target} kbps, simulated {sim_target:?}"
    );
    assert!(tx.stats.feedback_reports > 40, "{:?}", tx.stats);
    assert_eq!(tx.stats.malformed, 0);
    assert_eq!(tx.session.unknown_feedback_entries, 0, "{:?}", tx.session);
    assert_eq!(rx.stats.malformed, 0);
    // RFC 3550 reports both ways, once a second; the RR's LSR/DLSR give the
    // round-trip time (loopback: well under 50 ms).
    assert!(tx.stats.sender_reports >= 3, "{:?}", tx.stats);
    assert!(rx.stats.sender_reports >= 2, "{:?}", rx.stats);
    assert!(tx.stats.receiver_reports >= 3, "{:?}", tx.stats);
    assert!((1..50_000).contains(&tx.stats.rr_rtt_us), "{:?}", tx.stats);
    assert_eq!(tx.stats.rr_cumulative_lost, 0, "{:?}", tx.stats);
    // Nothing is lost on loopback and the receiver outlives the sender by a
    // second: every datagram sent arrives (but 1 % the kernel's buffers may
    // drop under load; none idle), and none arrives that was not sent.
    let arrived = rx.stats.media_packets + rx.stats.padding_packets + rx.stats.rtx_packets;
    let slack = (tx.stats.datagrams_sent / 100).max(3);
    assert!(
        arrived <= tx.stats.datagrams_sent && arrived + slack >= tx.stats.datagrams_sent,
        "{:?} vs {:?}",
        rx.stats,
        tx.stats
    );
    let flow = &rx.summary["flows"][0];
    assert!(flow["frames_displayed"].as_u64().unwrap() > 90, "{flow}");
    // Loopback adds microseconds; what remains is pacing: a key frame (10x a
    // delta frame) at 2.5x a ~300 kbps target takes ~100 ms to send.
    let p95 = flow["frame_delay_ms"]["p95"].as_f64().unwrap();
    assert!(p95 < 200.0, "{flow}");
    for f in ["summary.json", "timeseries.csv", "frames.csv"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(text.lines().count() > 1 || f == "summary.json", "{f}");
    }
    let header = std::fs::read_to_string(dir.join("frames.csv")).unwrap();
    assert!(header.starts_with(rtcc_sim::output::FRAMES_HEADER));
}

#[test]
fn gcc_through_the_emulator_tracks_a_one_megabit_link() {
    let rx_addr = free_port();
    let emu_addr = free_port();
    let link = LinkConfig {
        rate: RateModel::Constant(Bitrate::kbps(1000)),
        delay: Duration::from_millis(20),
        delay_schedule: None,
        jitter: Duration::ZERO,
        queue: QueueLimit::Bytes(rtcc_core::Bytes::new(60_000)),
        loss: LossConfig::None,
        mahimahi_opportunity: rtcc_core::Bytes::new(1500),
    };
    let mut emu_cfg = EmulatorConfig::symmetric(emu_addr, rx_addr, link);
    emu_cfg.duration = Some(Duration::from_secs(11));
    let emu =
        thread::spawn(move || emulate::run_blocking(emu_cfg, Arc::new(AtomicBool::new(false))));
    let rx_cfg = receiver(rx_addr, 11, None);
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(300));
    let mut tx_cfg = sender(emu_addr, "gcc", 10);
    tx_cfg.out_dir = std::env::var_os("RTCC_TEST_OUT").map(std::path::PathBuf::from);
    let tx = send::run_blocking(tx_cfg, Arc::new(AtomicBool::new(false))).unwrap();
    let rx = rx.join().unwrap().unwrap();
    let emu = emu.join().unwrap().unwrap();

    let target = tx.final_target.as_kbps_f64();
    let goodput = rx.summary["flows"][0]["goodput_kbps"].as_f64().unwrap();
    // The same run in the simulator (seeds 1-3) is the reference: the real
    // one may differ by its timer ticks and scheduling (more so in a debug
    // build on a loaded machine), not by a different behaviour. Its target
    // ends within -25 %/+10 % of the simulated ones and never above the
    // capacity; its goodput, counted by the receiver over its 11 s against
    // the simulator's 10, within -30 %/+5 % (release build, idle: -5 % and
    // -11 %).
    let (_, (sim_g_lo, sim_g_hi), (sim_t_lo, sim_t_hi)) = simulated_gcc("1000kbps", "20ms", 10);
    assert!(
        target >= 0.75 * sim_t_lo && target <= (1.1 * sim_t_hi).min(1000.0),
        "final target {target} kbps, simulated {sim_t_lo}-{sim_t_hi}"
    );
    assert!(
        goodput >= 0.7 * sim_g_lo && goodput <= 1.05 * sim_g_hi,
        "goodput {goodput} kbps, simulated {sim_g_lo}-{sim_g_hi}"
    );
    assert!(emu.forward.datagrams_out > 500, "{:?}", emu.forward);
}

/// What a relay between sender and receiver saw of one media datagram (a
/// first transmission) of the sender.
#[derive(Debug, Clone, Copy)]
struct SeenMedia {
    len: usize,
    payload: usize,
    padded: bool,
    frame_id: u32,
}

/// A UDP relay on `sock` in front of the receiver `to`, until `stop`: RTP
/// from the sender goes to `to` (each media datagram decoded and recorded,
/// padding-only ones counted), the receiver's RTCP back to the sender.
fn relay(
    sock: UdpSocket,
    to: SocketAddr,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<(Vec<SeenMedia>, u64, u64)> {
    thread::spawn(move || {
        let cfg = WireConfig::default();
        sock.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        let mut sender = None;
        let (mut media, mut padding_only, mut wire_bytes) = (Vec::new(), 0u64, 0u64);
        let mut buf = vec![0u8; 65_536];
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let d = &buf[..n];
            if from == to {
                if let Some(s) = sender {
                    let _ = sock.send_to(d, s);
                }
                continue;
            }
            sender = Some(from);
            if let Ok(m) = rtcc_net::wire::decode_media(&cfg, d) {
                wire_bytes += n as u64 + 28;
                if m.padding_only {
                    padding_only += 1;
                } else {
                    media.push(SeenMedia {
                        len: n,
                        payload: m.payload_len(),
                        padded: d[0] & 0x20 != 0,
                        frame_id: m.frame_info.unwrap().frame_id,
                    });
                }
            }
            let _ = sock.send_to(d, to);
        }
        (media, padding_only, wire_bytes)
    })
}

#[test]
fn svc_probing_start_trains_pad_media_to_the_train_size() {
    // svc-probing's start phase sends trains of 30 packets of 1000 B on the
    // wire (docs/algorithms/svc-probing.md I11); the media packets sent
    // during one are padded to that size with RTP padding, and the receiver
    // gets every frame with the payload the sender packetised.
    let rx_addr = free_port();
    let relay_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay_sock.local_addr().unwrap();
    let dir = tempfile_dir("svc-padding");
    let stop_relay = Arc::new(AtomicBool::new(false));
    let seen = relay(relay_sock, rx_addr, stop_relay.clone());
    let rx_cfg = receiver(rx_addr, 3, Some(dir.clone()));
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(200));
    let tx = send::run_blocking(
        sender(relay_addr, "svc-probing", 2),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    let rx = rx.join().unwrap().unwrap();
    stop_relay.store(true, std::sync::atomic::Ordering::Relaxed);
    let (media, padding_only, wire_bytes) = seen.join().unwrap();

    // The sender padded media, and wrote as much padding as it counted.
    let padded: Vec<_> = media.iter().filter(|m| m.padded).collect();
    eprintln!(
        "media datagrams {} ({} padded: sizes {:?}, payloads {:?}), padding-only {}, \
         session padding {} B, media padding {} B",
        media.len(),
        padded.len(),
        padded
            .iter()
            .map(|m| m.len)
            .collect::<std::collections::BTreeSet<_>>(),
        padded.iter().map(|m| m.payload).collect::<Vec<_>>(),
        padding_only,
        tx.session.padding_bytes_sent,
        tx.stats.media_padding_bytes,
    );
    assert!(!padded.is_empty(), "{:?}", tx.stats);
    assert_eq!(padded.len() as u64, tx.stats.padded_media_sent);
    // A train packet is 1000 B on the wire: a 972 B datagram, whatever its
    // payload; the padding is what the payload and 68 B of headers leave.
    assert!(padded.iter().all(|m| m.len == 1000 - 28), "{padded:?}");
    let media_padding: usize = padded.iter().map(|m| m.len - 40 - m.payload).sum();
    assert_eq!(media_padding as u64, tx.stats.media_padding_bytes);
    assert!(tx.stats.media_padding_bytes < tx.session.padding_bytes_sent);
    // Unpadded media is its own size.
    assert!(media.iter().all(|m| m.padded || m.len == 40 + m.payload));
    // The receiver: nothing malformed, padding counted on the wire only.
    assert_eq!(rx.stats.malformed, 0, "{:?}", rx.stats);
    assert_eq!(rx.stats.media_packets, media.len() as u64);
    assert_eq!(rx.session.bytes_received, wire_bytes);
    let payload: usize = media.iter().map(|m| m.payload).sum();
    assert_eq!(rx.session.payload_received, payload as u64);
    assert_eq!(tx.session.payload_sent, payload as u64);
    // Every frame it got, padded packets or not, has the size sent.
    let mut sent = std::collections::BTreeMap::<u64, usize>::new();
    for m in &media {
        *sent.entry(u64::from(m.frame_id)).or_default() += m.payload;
    }
    let frames = std::fs::read_to_string(dir.join("frames.csv")).unwrap();
    let mut checked = 0;
    let mut padded_frames = 0;
    for line in frames.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (id, size): (u64, usize) = (f[1].parse().unwrap(), f[3].parse().unwrap());
        assert_eq!(Some(&size), sent.get(&id), "frame {id}: {line}");
        assert!(!f[6].is_empty(), "frame {id} not displayed: {line}");
        checked += 1;
        if padded.iter().any(|m| u64::from(m.frame_id) == id) {
            padded_frames += 1;
        }
    }
    eprintln!("frames checked {checked}, with padded packets {padded_frames}");
    assert!(checked >= 50, "{checked}");
    assert!(padded_frames > 0);
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rtcc-net-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The (source port, destination port, UDP payload) of every record of a
/// classic nanosecond pcap file of Ethernet/IPv4/UDP frames; checks the
/// headers on the way and that timestamps never go backwards.
fn pcap_datagrams(path: &std::path::Path) -> Vec<(u16, u16, Vec<u8>)> {
    let b = std::fs::read(path).unwrap();
    let le32 = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(le32(0), 0xa1b2_3c4d);
    assert_eq!(le32(20), 1, "Ethernet");
    let (mut at, mut last, mut out) = (24, 0u64, Vec::new());
    while at < b.len() {
        let ts = u64::from(le32(at)) * 1_000_000_000 + u64::from(le32(at + 4));
        assert!(ts >= last, "timestamps in order");
        last = ts;
        let len = le32(at + 8) as usize;
        let f = &b[at + 16..at + 16 + len];
        assert_eq!(&f[12..14], &[8, 0], "IPv4");
        assert_eq!(f[14 + 9], 17, "UDP");
        assert_eq!(&f[26..30], &[127, 0, 0, 1], "the real source address");
        let udp = &f[34..];
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]) as usize, udp.len());
        let port = |i: usize| u16::from_be_bytes([udp[i], udp[i + 1]]);
        out.push((port(0), port(2), udp[8..].to_vec()));
        at += 16 + len;
    }
    out
}

#[test]
fn pcap_files_hold_every_datagram_sent_and_received() {
    let rx_addr = free_port();
    let dir = tempfile_dir("pcap");
    std::fs::create_dir_all(&dir).unwrap();
    let (rx_pcap, tx_pcap) = (dir.join("recv.pcap"), dir.join("send.pcap"));
    let mut rx_cfg = receiver(rx_addr, 4, None);
    rx_cfg.pcap = Some(rx_pcap.clone());
    let rx = thread::spawn(move || recv::run_blocking(rx_cfg, Arc::new(AtomicBool::new(false))));
    thread::sleep(std::time::Duration::from_millis(200));
    let mut tx_cfg = sender(rx_addr, "gcc", 3);
    tx_cfg.pcap = Some(tx_pcap.clone());
    let tx = send::run_blocking(tx_cfg, Arc::new(AtomicBool::new(false))).unwrap();
    let rx = rx.join().unwrap().unwrap();
    let sent = pcap_datagrams(&tx_pcap);
    let to_rx = sent.iter().filter(|d| d.1 == rx_addr.port()).count() as u64;
    assert_eq!(to_rx, tx.stats.datagrams_sent + tx.stats.sender_reports);
    let got = pcap_datagrams(&rx_pcap);
    let at_rx = got.iter().filter(|d| d.1 == rx_addr.port()).count() as u64;
    assert_eq!(at_rx, rx.stats.datagrams);
    // Real RTP: version 2, payload type 96, consecutive sequence numbers.
    let seqs: Vec<u16> = got
        .iter()
        .filter(|d| d.1 == rx_addr.port() && d.2[1] & 0x7f == 96)
        .map(|d| u16::from_be_bytes([d.2[2], d.2[3]]))
        .collect();
    assert!(seqs.len() > 100);
    assert!(seqs.windows(2).all(|w| w[1] == w[0].wrapping_add(1)));
    // And what the receiver sent back (feedback, reports) reached the sender.
    assert!(sent
        .iter()
        .any(|d| d.0 == rx_addr.port() && (200..=206).contains(&d.2[1])));
    let _ = std::fs::remove_dir_all(dir);
}

/// A GCC flow for `secs` through one link of `rate` and `delay` (60 KB
/// queue) in the simulator, seeds 1-3: the (min, max) of the flow's sending
/// rate, its goodput and its target at the end, kbps.
fn simulated_gcc(rate: &str, delay: &str, secs: u64) -> ((f64, f64), (f64, f64), (f64, f64)) {
    let text = format!(
        r#"
name = "loopback-reference"
duration = "{secs}s"
[output]
sample_interval = "100ms"
[[link]]
name = "bottleneck"
rate = "{rate}"
delay = "{delay}"
queue = "60KB"
[[flow]]
name = "media"
kind = "media"
cc = "gcc"
header_overhead = "68B"
"#
    );
    let sc = rtcc_sim::Scenario::from_toml_str(&text, "loopback-reference.toml").unwrap();
    let span = |(lo, hi): (f64, f64), x: f64| (lo.min(x), hi.max(x));
    let (mut sent, mut goodput, mut target) = ((f64::MAX, 0.0), (f64::MAX, 0.0), (f64::MAX, 0.0));
    for seed in 1..=3 {
        let dir = tempfile_dir(&format!("sim-{seed}"));
        let opts = rtcc_sim::RunOptions {
            seed: Some(seed),
            out_dir: Some(dir.clone()),
            ..Default::default()
        };
        let report = rtcc_sim::run(&sc, &opts, &mut |_| {}).unwrap();
        let flow = &report.summary["flows"][0];
        let kbps = |key: &str| flow[key].as_f64().unwrap();
        let ts = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
        let header: Vec<&str> = ts.lines().next().unwrap().split(',').collect();
        let cell = |line: &str, name: &str| -> f64 {
            let col = header.iter().position(|h| *h == name).unwrap();
            line.split(',').nth(col).unwrap().parse().unwrap()
        };
        let rows: Vec<&str> = ts.lines().skip(1).collect();
        let t = cell(rows[rows.len() - 1], "target_kbps");
        let mean_sent =
            rows.iter().map(|r| cell(r, "send_rate_kbps")).sum::<f64>() / rows.len() as f64;
        sent = span(sent, mean_sent);
        goodput = span(goodput, kbps("goodput_kbps"));
        target = span(target, t);
    }
    (sent, goodput, target)
}
