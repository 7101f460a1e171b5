//! The link emulator over real loopback sockets: rate, delay, loss, the
//! reverse direction, unexpected sources, traces, and configuration errors.
//!
//! Each test runs a relay on its own thread and drives it from blocking std
//! sockets, reading the real clock to pace sends and time arrivals. Tolerances
//! allow for a loaded 2-core machine and tokio's 1 ms timer resolution.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use rtcc_net::emulate::{
    EmulatorConfig, EmulatorError, EmulatorOptions, EmulatorStats, LinkOptions, Relay, StatsHandle,
};

/// Bytes of IPv4 + UDP headers the link charges per datagram.
const OVERHEAD: usize = 28;

/// A relay running on its own thread.
struct Running {
    listen: SocketAddr,
    upstream: SocketAddr,
    stats: StatsHandle,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<EmulatorStats, EmulatorError>>,
}

impl Running {
    fn finish(self) -> EmulatorStats {
        self.stop.store(true, Ordering::Relaxed);
        let stats = self.thread.join().expect("relay thread panicked");
        let stats = stats.expect("relay failed");
        eprintln!("{}", stats.summary_json());
        stats
    }
}

fn start(config: EmulatorConfig) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let relay = Relay::bind(config).await?;
            tx.send((
                relay.listen_addr()?,
                relay.upstream_addr()?,
                relay.stats_handle(),
            ))
            .expect("test thread gone");
            relay
                .run(async move {
                    while !flag.load(Ordering::Relaxed) {
                        tokio::time::sleep(StdDuration::from_millis(10)).await;
                    }
                })
                .await
        })
    });
    let (listen, upstream, stats) = rx.recv().expect("relay did not bind");
    Running {
        listen,
        upstream,
        stats,
        stop,
        thread,
    }
}

fn local() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.set_read_timeout(Some(StdDuration::from_millis(50)))
        .expect("timeout");
    s
}

fn config(forward: SocketAddr, link: LinkOptions) -> EmulatorConfig {
    EmulatorOptions {
        listen: "127.0.0.1:0".into(),
        forward: forward.to_string(),
        link,
        ..Default::default()
    }
    .build()
    .expect("valid options")
}

/// Receives on `sock` until `stop` is set (plus a grace period without
/// datagrams): `(arrival, payload)` per datagram.
#[expect(
    clippy::disallowed_methods,
    reason = "the test times arrivals on the real clock"
)]
fn receive_all(sock: UdpSocket, stop: Arc<AtomicBool>) -> JoinHandle<Vec<(StdInstant, Vec<u8>)>> {
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65_536];
        loop {
            match sock.recv_from(&mut buf) {
                Ok((n, _)) => got.push((StdInstant::now(), buf[..n].to_vec())),
                Err(_) if stop.load(Ordering::Relaxed) => return got,
                Err(_) => {}
            }
        }
    })
}

/// Sends `count` datagrams of `payload` bytes, one every `interval` from now
/// (catching up when late); the first 8 bytes carry the sequence number and
/// the next 8 the send time in µs since the returned origin.
#[expect(
    clippy::disallowed_methods,
    reason = "the test paces sends on the real clock"
)]
fn send_paced(
    sock: &UdpSocket,
    dest: SocketAddr,
    payload: usize,
    interval: StdDuration,
    count: u32,
) -> StdInstant {
    let t0 = StdInstant::now();
    let mut buf = vec![0u8; payload];
    for i in 0..count {
        let due = t0 + interval * i;
        let now = StdInstant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        buf[..8].copy_from_slice(&u64::from(i).to_le_bytes());
        let us = StdInstant::now().duration_since(t0).as_micros() as u64;
        buf[8..16].copy_from_slice(&us.to_le_bytes());
        sock.send_to(&buf, dest).expect("send");
    }
    t0
}

fn seq_of(p: &[u8]) -> u64 {
    u64::from_le_bytes(p[..8].try_into().expect("8 bytes"))
}

fn sent_us_of(p: &[u8]) -> u64 {
    u64::from_le_bytes(p[8..16].try_into().expect("8 bytes"))
}

/// Wire throughput (payload + 28 B) of arrivals within `[from, to)` after `t0`, in bps.
fn throughput(got: &[(StdInstant, Vec<u8>)], t0: StdInstant, from: f64, to: f64) -> f64 {
    let bytes: usize = got
        .iter()
        .filter(|(t, _)| {
            let s = t.duration_since(t0).as_secs_f64();
            (from..to).contains(&s)
        })
        .map(|(_, p)| p.len() + OVERHEAD)
        .sum();
    bytes as f64 * 8.0 / (to - from)
}

/// Floods a link at twice `rate_bps` for 2 s with 1200 B (wire) datagrams and
/// returns the arrivals, the send origin and the relay's counters.
fn flood(
    link: LinkOptions,
    rate_bps: f64,
) -> (Vec<(StdInstant, Vec<u8>)>, StdInstant, u32, EmulatorStats) {
    let receiver = local();
    let relay = start(config(receiver.local_addr().expect("addr"), link));
    let done = Arc::new(AtomicBool::new(false));
    let rx = receive_all(receiver, done.clone());
    let client = local();
    let wire_bits = (1172 + OVERHEAD) as f64 * 8.0;
    let interval = StdDuration::from_secs_f64(wire_bits / (2.0 * rate_bps));
    let count = (2.0 / interval.as_secs_f64()) as u32;
    let t0 = send_paced(&client, relay.listen, 1172, interval, count);
    std::thread::sleep(StdDuration::from_millis(100));
    let stats = relay.finish();
    done.store(true, Ordering::Relaxed);
    let got = rx.join().expect("receiver");
    (got, t0, count, stats)
}

#[test]
fn a_flood_at_twice_the_rate_is_shaped_to_the_rate_and_the_queue_drops_the_excess() {
    let (got, t0, count, stats) = flood(
        LinkOptions {
            rate: Some("2Mbps".into()),
            queue: Some("30KB".into()),
            ..Default::default()
        },
        2e6,
    );
    let tput = throughput(&got, t0, 0.5, 2.0);
    assert!(
        (tput - 2e6).abs() <= 0.10 * 2e6,
        "throughput over [0.5 s, 2 s) = {tput:.0} bps, link 2 Mbps"
    );
    let f = &stats.forward;
    assert_eq!(f.datagrams_in, u64::from(count), "relay missed datagrams");
    // Half the offered load cannot fit: the queue drops it.
    assert!(
        f.drops_queue as f64 > 0.3 * f64::from(count),
        "drops_queue = {} of {count}",
        f.drops_queue
    );
    assert_eq!(f.datagrams_out, got.len() as u64);
    assert_eq!(
        f.datagrams_out + f.drops_queue + f.held_at_exit,
        f.datagrams_in
    );
    // A 30 KB queue at 2 Mbps holds 120 ms (+ one 4.8 ms transmission).
    let q = f.max_queue_delay.as_millis_f64();
    assert!((100.0..=130.0).contains(&q), "max queue delay {q} ms");
    // Sends follow the link's instants closely (tokio timers: ~1 ms).
    assert!(f.send_lateness.count > 0);
    assert!(f.send_lateness.mean < 5.0, "{:?}", f.send_lateness);
}

#[test]
fn sparse_datagrams_see_the_propagation_delay() {
    let receiver = local();
    let relay = start(config(
        receiver.local_addr().expect("addr"),
        LinkOptions {
            delay: Some("50ms".into()),
            ..Default::default()
        },
    ));
    let done = Arc::new(AtomicBool::new(false));
    let rx = receive_all(receiver, done.clone());
    let client = local();
    let t0 = send_paced(&client, relay.listen, 100, StdDuration::from_millis(40), 30);
    std::thread::sleep(StdDuration::from_millis(150));
    let stats = relay.finish();
    done.store(true, Ordering::Relaxed);
    let got = rx.join().expect("receiver");
    assert_eq!(got.len(), 30, "all datagrams arrive");
    let mut owd: Vec<f64> = got
        .iter()
        .map(|(t, p)| t.duration_since(t0).as_secs_f64() * 1e3 - sent_us_of(p) as f64 / 1e3)
        .collect();
    owd.sort_by(f64::total_cmp);
    let median = owd[owd.len() / 2];
    assert!(owd[0] >= 49.9, "a datagram arrived early: {owd:?}");
    assert!(
        (median - 50.0).abs() <= 5.0,
        "median one-way delay {median} ms: {owd:?}"
    );
    assert_eq!(stats.forward.datagrams_out, 30);
}

#[test]
fn bernoulli_loss_of_ten_percent_delivers_ninety_percent() {
    let receiver = local();
    let relay = start(config(
        receiver.local_addr().expect("addr"),
        LinkOptions {
            loss: Some("10%".into()),
            ..Default::default()
        },
    ));
    let done = Arc::new(AtomicBool::new(false));
    let rx = receive_all(receiver, done.clone());
    let client = local();
    let n = 2000u32;
    send_paced(&client, relay.listen, 20, StdDuration::from_millis(1), n);
    std::thread::sleep(StdDuration::from_millis(100));
    let stats = relay.finish();
    done.store(true, Ordering::Relaxed);
    let got = rx.join().expect("receiver");
    let mut seqs: Vec<u64> = got.iter().map(|(_, p)| seq_of(p)).collect();
    seqs.dedup();
    let frac = seqs.len() as f64 / f64::from(n);
    let sd = (0.9 * 0.1 / f64::from(n)).sqrt();
    assert!(
        (frac - 0.9).abs() <= 4.0 * sd,
        "delivered {frac:.4}, expected 0.9 ± {:.4}",
        4.0 * sd
    );
    let f = &stats.forward;
    assert_eq!(f.datagrams_in, u64::from(n));
    assert_eq!(f.datagrams_out + f.drops_loss, f.datagrams_in);
    assert_eq!(f.datagrams_out, got.len() as u64);
}

#[test]
fn replies_from_the_receiver_cross_the_reverse_link_to_the_client() {
    let receiver = local();
    let mut options = EmulatorOptions {
        listen: "127.0.0.1:0".into(),
        forward: receiver.local_addr().expect("addr").to_string(),
        link: LinkOptions {
            delay: Some("10ms".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    options.reverse.delay = Some("40ms".into());
    let relay = start(options.build().expect("valid options"));
    // The receiver echoes every datagram to where it came from (the relay).
    let done = Arc::new(AtomicBool::new(false));
    let echo = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !done.load(Ordering::Relaxed) {
                if let Ok((n, from)) = receiver.recv_from(&mut buf) {
                    receiver.send_to(&buf[..n], from).expect("echo");
                }
            }
        })
    };
    let client = local();
    client
        .set_read_timeout(Some(StdDuration::from_millis(500)))
        .expect("timeout");
    let mut rtts = Vec::new();
    for i in 0..5u8 {
        let rtt = round_trip(&client, relay.listen, i);
        rtts.push(rtt);
    }
    let stats = relay.finish();
    done.store(true, Ordering::Relaxed);
    echo.join().expect("echo");
    for rtt in &rtts {
        // 10 ms forward + 40 ms reverse.
        assert!((49.9..80.0).contains(rtt), "round trip {rtt} ms: {rtts:?}");
    }
    assert_eq!(stats.forward.datagrams_out, 5);
    assert_eq!(stats.reverse.datagrams_in, 5);
    assert_eq!(stats.reverse.datagrams_out, 5);
}

#[expect(
    clippy::disallowed_methods,
    reason = "the test times a round trip on the real clock"
)]
fn round_trip(client: &UdpSocket, relay: SocketAddr, tag: u8) -> f64 {
    let t = StdInstant::now();
    client.send_to(&[tag; 64], relay).expect("send");
    let mut buf = [0u8; 128];
    let (n, from) = client.recv_from(&mut buf).expect("reply within 500 ms");
    assert_eq!(from, relay, "reply comes from the relay's listen address");
    assert_eq!(&buf[..n], &[tag; 64][..]);
    t.elapsed().as_secs_f64() * 1e3
}

#[test]
fn datagrams_from_an_unexpected_source_are_dropped_and_counted() {
    let receiver = local();
    let relay = start(config(
        receiver.local_addr().expect("addr"),
        LinkOptions::default(),
    ));
    let client = local();
    // Register the client, so that a reply would have somewhere to go.
    client.send_to(b"hello", relay.listen).expect("send");
    let mut buf = [0u8; 64];
    let (n, _) = receiver.recv_from(&mut buf).expect("forwarded");
    assert_eq!(&buf[..n], b"hello");
    let stranger = local();
    stranger.send_to(b"intruder", relay.upstream).expect("send");
    let waited = wait_for(|| relay.stats.snapshot().reverse.drops_unexpected_source == 1);
    assert!(waited, "the stranger's datagram was not counted");
    assert!(
        client.recv_from(&mut buf).is_err(),
        "the stranger's datagram reached the client"
    );
    let stats = relay.finish();
    assert_eq!(stats.reverse.drops_unexpected_source, 1);
    assert_eq!(stats.reverse.datagrams_out, 0);
    assert_eq!(stats.reverse.link.packets_in, 0, "not offered to the link");
}

#[test]
fn a_stranger_cannot_draw_the_replies_from_an_active_client() {
    // The client keeps sending; a third party sends too: its datagrams are
    // dropped and counted, and every reply still goes to the client. Once the
    // client has been silent for CLIENT_SILENCE, the other address takes its
    // place (a restarted sender).
    let receiver = local();
    let relay = start(config(
        receiver.local_addr().expect("addr"),
        LinkOptions::default(),
    ));
    let client = local();
    let stranger = local();
    let mut buf = [0u8; 64];
    for _ in 0..5 {
        client.send_to(b"media", relay.listen).expect("send");
        stranger.send_to(b"x", relay.listen).expect("send");
        let (n, from) = receiver.recv_from(&mut buf).expect("forwarded");
        assert_eq!(&buf[..n], b"media", "only the client is relayed");
        receiver.send_to(b"feedback", from).expect("reply");
        let (n, _) = client
            .recv_from(&mut buf)
            .expect("the reply reached the client");
        assert_eq!(&buf[..n], b"feedback");
        assert!(
            stranger.recv_from(&mut buf).is_err(),
            "a reply reached the stranger"
        );
    }
    assert_eq!(relay.stats.snapshot().forward.drops_unexpected_source, 5);
    std::thread::sleep(
        StdDuration::from_nanos(rtcc_net::emulate::CLIENT_SILENCE.as_nanos())
            + StdDuration::from_millis(100),
    );
    stranger.send_to(b"restarted", relay.listen).expect("send");
    let (n, from) = receiver.recv_from(&mut buf).expect("forwarded");
    assert_eq!(&buf[..n], b"restarted");
    receiver.send_to(b"to-new", from).expect("reply");
    let (n, _) = stranger
        .recv_from(&mut buf)
        .expect("the reply follows the new client");
    assert_eq!(&buf[..n], b"to-new");
    let stats = relay.finish();
    assert_eq!(stats.forward.client_changes, 1);
    assert_eq!(stats.forward.drops_unexpected_source, 5);
}

#[test]
fn with_a_pinned_client_no_one_else_is_relayed() {
    let receiver = local();
    let client = local();
    let stranger = local();
    let mut cfg = config(receiver.local_addr().expect("addr"), LinkOptions::default());
    cfg.client = Some(client.local_addr().expect("addr"));
    let relay = start(cfg);
    let mut buf = [0u8; 64];
    // Before the client has sent, and after it fell silent: still dropped.
    stranger.send_to(b"first", relay.listen).expect("send");
    client.send_to(b"media", relay.listen).expect("send");
    let (n, _) = receiver.recv_from(&mut buf).expect("forwarded");
    assert_eq!(&buf[..n], b"media");
    std::thread::sleep(
        StdDuration::from_nanos(rtcc_net::emulate::CLIENT_SILENCE.as_nanos())
            + StdDuration::from_millis(100),
    );
    stranger.send_to(b"later", relay.listen).expect("send");
    assert!(
        receiver.recv_from(&mut buf).is_err(),
        "the stranger was relayed"
    );
    let stats = relay.finish();
    assert_eq!(stats.forward.drops_unexpected_source, 2);
    assert_eq!(stats.forward.client_changes, 0);
    assert_eq!(stats.forward.datagrams_out, 1);
}

#[test]
fn the_upstream_socket_binds_where_asked() {
    // `--upstream`: a receiver that must send its replies before it hears
    // from the relay needs to know the relay's upstream address.
    let receiver = local();
    let wanted = local().local_addr().expect("addr"); // bound, then released
    let mut cfg = config(receiver.local_addr().expect("addr"), LinkOptions::default());
    cfg.upstream = Some(wanted);
    let relay = start(cfg);
    assert_eq!(relay.upstream, wanted);
    let client = local();
    client.send_to(b"hello", relay.listen).expect("send");
    let mut buf = [0u8; 64];
    let (n, from) = receiver.recv_from(&mut buf).expect("forwarded");
    assert_eq!((&buf[..n], from), (&b"hello"[..], wanted));
    relay.finish();
}

/// Polls `cond` for up to a second.
fn wait_for(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if cond() {
            return true;
        }
        std::thread::sleep(StdDuration::from_millis(10));
    }
    false
}

#[test]
fn a_mahimahi_trace_shapes_the_throughput_to_its_mean() {
    // 100 ms period: 15 opportunities of 1500 B in its first half, 5 in the
    // second: 20 × 1500 B / 100 ms = 2.4 Mbps on average.
    let dir = std::env::temp_dir().join(format!("rtcc-emulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("bursty.mahi");
    let mut text = String::new();
    for ms in [10, 20, 30, 40, 50] {
        for _ in 0..3 {
            text.push_str(&format!("{ms}\n"));
        }
    }
    for ms in [60, 70, 80, 90, 100] {
        text.push_str(&format!("{ms}\n"));
    }
    std::fs::write(&path, text).expect("write trace");
    let (got, t0, _, stats) = flood(
        LinkOptions {
            trace: Some(path),
            trace_format: Some("mahimahi".into()),
            queue: Some("30KB".into()),
            ..Default::default()
        },
        2.4e6,
    );
    let _ = std::fs::remove_dir_all(&dir);
    let tput = throughput(&got, t0, 0.5, 2.0);
    assert!(
        (tput - 2.4e6).abs() <= 0.20 * 2.4e6,
        "throughput over [0.5 s, 2 s) = {tput:.0} bps, trace mean 2.4 Mbps"
    );
    assert!(stats.forward.drops_queue > 0);
}

#[test]
fn option_errors_name_the_option_and_the_value() {
    let base = EmulatorOptions {
        listen: "127.0.0.1:0".into(),
        forward: "127.0.0.1:9".into(),
        ..Default::default()
    };
    let err = |o: EmulatorOptions| o.build().expect_err("invalid options").to_string();

    let mut o = base.clone();
    o.link.rate = Some("3Mbs".into());
    let e = err(o);
    assert!(e.starts_with("--rate: cannot parse `3Mbs`: "), "{e}");

    let mut o = base.clone();
    o.reverse.delay = Some("soon".into());
    let e = err(o);
    assert!(
        e.starts_with("--reverse-delay: cannot parse `soon`: "),
        "{e}"
    );

    let mut o = base.clone();
    o.link.loss = Some("150%".into());
    let e = err(o);
    assert!(e.starts_with("--loss: cannot parse `150%`: "), "{e}");

    let mut o = base.clone();
    o.link.queue = Some("lots".into());
    let e = err(o);
    assert!(e.starts_with("--queue: cannot parse `lots`: "), "{e}");

    let mut o = base.clone();
    o.link.trace = Some("/nonexistent/trace".into());
    let e = err(o);
    assert!(e.starts_with("--trace: `/nonexistent/trace`: "), "{e}");

    let mut o = base.clone();
    o.forward = "nowhere".into();
    let e = err(o);
    assert!(e.starts_with("--forward: cannot parse `nowhere`: "), "{e}");

    let mut o = base;
    o.duration = Some("0s".into());
    let e = err(o);
    assert!(e.starts_with("--duration: "), "{e}");
}

fn demo_scenario() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml")
}

#[test]
fn a_scenario_link_becomes_the_forward_link_and_its_reverse_path_the_reverse_link() {
    let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let c = EmulatorConfig::from_scenario(addr, addr, &demo_scenario(), None).expect("demo loads");
    assert_eq!(c.link_name, "bottleneck");
    assert_eq!(c.seed, 1);
    assert_eq!(c.forward_link.delay, rtcc_core::Duration::from_millis(40));
    assert!(matches!(
        c.forward_link.queue,
        rtcc_sim::link::QueueLimit::Bytes(b) if b == rtcc_core::Bytes::new(150_000)
    ));
    assert!(!matches!(
        c.forward_link.rate,
        rtcc_sim::link::RateModel::Constant(_)
    ));
    // Single topology: the reverse path has the forward delay and no rate limit.
    assert_eq!(c.reverse_link.delay, rtcc_core::Duration::from_millis(40));
    assert!(matches!(
        c.reverse_link.rate,
        rtcc_sim::link::RateModel::Constant(r) if r == rtcc_core::Bitrate::MAX
    ));
    let named = EmulatorConfig::from_scenario(addr, addr, &demo_scenario(), Some("bottleneck"))
        .expect("named link");
    assert_eq!(named.link_name, "bottleneck");
}

#[test]
fn an_unknown_scenario_link_is_an_error_naming_it() {
    let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let e = EmulatorConfig::from_scenario(addr, addr, &demo_scenario(), Some("uplink"))
        .expect_err("no such link")
        .to_string();
    assert!(e.contains("no [[link]] named `uplink`"), "{e}");
    assert!(e.contains("links: bottleneck"), "{e}");
    assert!(e.contains("demo.toml"), "{e}");

    // Through the options, and a scenario error keeps its file and key.
    let o = EmulatorOptions {
        listen: "127.0.0.1:0".into(),
        forward: "127.0.0.1:9".into(),
        scenario: Some("/nonexistent/scenario.toml".into()),
        ..Default::default()
    };
    let e = o.build().expect_err("missing file").to_string();
    assert!(e.starts_with("/nonexistent/scenario.toml: "), "{e}");
}

#[test]
fn run_blocking_stops_when_asked() {
    let receiver = local();
    let c = config(receiver.local_addr().expect("addr"), LinkOptions::default());
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let t = std::thread::spawn(move || rtcc_net::emulate::run_blocking(c, flag));
    std::thread::sleep(StdDuration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let stats = t.join().expect("thread").expect("ran");
    let ms = stats.elapsed.as_millis_f64();
    assert!((90.0..1000.0).contains(&ms), "stopped after {ms} ms");
}

#[test]
fn a_duration_ends_the_run() {
    let receiver = local();
    let mut c = config(receiver.local_addr().expect("addr"), LinkOptions::default());
    c.duration = Some(rtcc_core::Duration::from_millis(200));
    let stats = rtcc_net::emulate::run_blocking(c, Arc::new(AtomicBool::new(false))).expect("ran");
    let ms = stats.elapsed.as_millis_f64();
    assert!((195.0..1000.0).contains(&ms), "stopped after {ms} ms");
}

#[test]
fn a_hand_built_zero_rate_link_is_refused_before_binding() {
    let addr: SocketAddr = "127.0.0.1:9".parse().expect("addr");
    let mut c = EmulatorConfig::symmetric(addr, addr, rtcc_sim::link::LinkConfig::default());
    c.reverse_link.rate = rtcc_sim::link::RateModel::Constant(rtcc_core::Bitrate::ZERO);
    let e = rtcc_net::emulate::run_blocking(c, Arc::new(AtomicBool::new(true)))
        .expect_err("zero rate")
        .to_string();
    assert_eq!(e, "reverse link: link rate must be > 0");
}
