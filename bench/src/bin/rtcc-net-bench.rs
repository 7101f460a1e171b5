//! `rtcc-net-bench [--only NAME] [--packets N] [--seconds S]`: speed of the real
//! transport (issue 3 §6: CPU per packet of the session logic and the largest
//! packet rate on loopback). Prints one JSON line per measurement:
//!
//! - `session` (twice: `"wire": false`, then `true`): a GCC `SenderSession` and a
//!   `ReceiverSession` connected in memory on a simulated clock (20 ms one way,
//!   no loss), so the measured time is the sessions' own work. With `wire`, each
//!   media packet also goes through `wire::encode_media` / `decode_media` and
//!   each report through `FeedbackEncoder::encode` / `decode_rtcp` /
//!   `FeedbackDecoder::feedback`, as `rtcc send` / `rtcc recv` do. The run
//!   alternates a sender phase and a receiver phase per 10 ms of simulated time
//!   (both less than the one-way delay, so each phase has all its inputs) and
//!   times each phase as a whole, which splits the CPU time between the two
//!   sides without reading the clock per packet.
//! - `loopback_raw`: a plain UDP socket sending to a plain UDP sink on
//!   127.0.0.1, the ceiling of the socket path on this machine.
//! - `loopback_send`: `rtcc_net::send::run_blocking` (fixed controller, pacer
//!   and encoder far above what the socket can take) to a plain counting sink;
//!   `limited_by` says whether the configured rates or the send loop (timers,
//!   session, socket) set the rate.
//! - `loopback_recv`: a plain socket sending valid RTP media as fast as it can
//!   to `rtcc_net::recv::run_blocking`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use rtcc_core::cc::fixed::FixedConfig;
use rtcc_core::cc::CcConfig;
use rtcc_core::feedback::WireFeedback;
use rtcc_core::media::encoder::ParametricEncoder;
use rtcc_core::media::packetizer::{MediaPacket, Packetizer};
use rtcc_core::media::player::PacketMeta;
use rtcc_core::recovery::MediaSeq;
use rtcc_core::session::receiver::ReceiverSession;
use rtcc_core::session::sender::{SenderConfig, SenderSession, Transmit};
use rtcc_core::{rng, Bitrate, Bytes, Duration, FrameType, Instant, PacketKind};
use rtcc_net::clock::Clock;
use rtcc_net::recv::RecvConfig;
use rtcc_net::send::{SendConfig, Source};
use rtcc_net::wire::{self, FeedbackDecoder, FeedbackEncoder, SeqUnwrapper, Unwrapper, WireConfig};
use serde_json::{json, Value};

/// Counts heap allocations, to report allocations per packet.
struct CountingAlloc;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the counter
// has no effect on the memory handed out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// The benchmark's stopwatch: the one place it reads the wall clock.
#[derive(Clone, Copy)]
struct Stopwatch(std::time::Instant);

impl Stopwatch {
    #[expect(
        clippy::disallowed_methods,
        reason = "a benchmark measures wall time; it decides nothing"
    )]
    fn start() -> Self {
        Stopwatch(std::time::Instant::now())
    }

    fn secs(self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// Bitrate of the session benchmark's GCC and encoder (start = max), so the
/// encoder fills the pacer with many packets per frame.
const SESSION_BITRATE: Bitrate = Bitrate::mbps(50);
/// One-way delay of the in-memory path.
const SESSION_OWD: Duration = Duration::from_millis(20);
/// Simulated time per sender / receiver phase; must not exceed the one-way
/// delay, so a phase never needs an input the other side has not yet made.
const SESSION_SLICE: Duration = Duration::from_millis(10);

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut only: Option<String> = None;
    let mut packets: u64 = 1_000_000;
    let mut seconds: f64 = 3.0;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => match args.next() {
                Some(s) => only = Some(s),
                None => return usage("--only needs a name"),
            },
            "--packets" => match args.next().and_then(|s| s.parse().ok()) {
                Some(n) => packets = n,
                None => return usage("--packets needs a whole number"),
            },
            "--seconds" => match args.next().and_then(|s| s.parse::<f64>().ok()) {
                Some(s) if s > 0.0 => seconds = s,
                _ => return usage("--seconds needs a positive number"),
            },
            "-h" | "--help" => return usage(""),
            s => return usage(&format!("unknown argument {s}")),
        }
    }
    let want = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let known = ["session", "loopback_raw", "loopback_send", "loopback_recv"];
    if let Some(o) = &only {
        if !known.contains(&o.as_str()) {
            return usage(&format!("unknown --only {o} (one of {})", known.join(", ")));
        }
    }
    let mut results: Vec<Result<Value, String>> = Vec::new();
    if want("session") {
        results.push(session_bench(packets, false));
        results.push(session_bench(packets, true));
    }
    if want("loopback_raw") {
        results.push(loopback_raw(seconds));
    }
    if want("loopback_send") {
        results.push(loopback_send(seconds));
    }
    if want("loopback_recv") {
        results.push(loopback_recv(seconds));
    }
    for r in results {
        match r {
            Ok(v) => println!("{v}"),
            Err(e) => {
                eprintln!("rtcc-net-bench: error: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

fn usage(msg: &str) -> ExitCode {
    if !msg.is_empty() {
        eprintln!("rtcc-net-bench: error: {msg}");
    }
    eprintln!(
        "usage: rtcc-net-bench [--only session|loopback_raw|loopback_send|loopback_recv] \
         [--packets N] [--seconds S]"
    );
    ExitCode::from(2)
}

// ---------------------------------------------------------------------------
// Session logic on a simulated clock
// ---------------------------------------------------------------------------

/// 64-bit NTP time of a simulated instant (the simulated clock starts at NTP
/// zero; only differences matter).
fn ntp_of(t: Instant) -> u64 {
    let ns = u128::from(t.as_nanos());
    let secs = ns / 1_000_000_000;
    let frac = ((ns % 1_000_000_000) << 32) / 1_000_000_000;
    ((secs as u64) << 32) | frac as u64
}

/// The inverse of [`ntp_of`].
fn instant_of_ntp(ntp: u64) -> Instant {
    let secs = u128::from(ntp >> 32);
    let frac = u128::from(ntp & 0xFFFF_FFFF);
    let ns = secs * 1_000_000_000 + ((frac * 1_000_000_000) >> 32);
    Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// What travels from sender to receiver: the core's view, or the datagram.
enum Media {
    Core(Transmit),
    Datagram(Vec<u8>),
}

/// What travels back: the core's report, or one RTCP datagram.
enum Report {
    Core(WireFeedback),
    Datagram(Vec<u8>),
}

/// The receiver's stream state in wire mode (as `rtcc recv` keeps it).
struct RxStream {
    seqs: SeqUnwrapper,
    frames: Unwrapper<32>,
}

fn session_bench(target_packets: u64, use_wire: bool) -> Result<Value, String> {
    let start = Instant::ZERO;
    let mut media = rtcc_net::default_media("gcc").map_err(|e| e.to_string())?;
    media.encoder.start_bitrate = SESSION_BITRATE;
    media.encoder.max_bitrate = SESSION_BITRATE;
    if let CcConfig::Gcc(g) = &mut media.sender.cc {
        g.start_bitrate = SESSION_BITRATE;
        g.max_bitrate = SESSION_BITRATE;
    } else {
        return Err("default_media(\"gcc\") is not GCC".into());
    }
    let wire_cfg = WireConfig::default();
    // As `rtcc send` does: charge each packet its real wire overhead.
    let packetizer = Packetizer {
        header_overhead: Bytes::new(wire::rtp_overhead(&wire_cfg) as u64),
        ..media.sender.packetizer
    };
    let encoder = ParametricEncoder::new(start, media.encoder.clone(), rng::stream(1, 0))
        .map_err(|e| e.to_string())?;
    let mut sender = SenderSession::new(
        start,
        SenderConfig {
            packetizer,
            ..media.sender.clone()
        },
        encoder,
    );
    let mut receiver = ReceiverSession::new(start, media.receiver.clone());
    let mut fb_encoder = FeedbackEncoder::new(wire_cfg).map_err(|e| e.to_string())?;
    let mut fb_decoder = FeedbackDecoder::new();
    let mut rx_stream = RxStream {
        seqs: SeqUnwrapper::new(),
        frames: Unwrapper::new(),
    };

    let mut to_rx: VecDeque<(Instant, Media)> = VecDeque::new();
    let mut to_tx: VecDeque<(Instant, Report)> = VecDeque::new();
    // Recycled buffers, so the harness itself does not allocate per packet.
    let mut datagram_pool: Vec<Vec<u8>> = Vec::new();
    let mut report_pool: Vec<WireFeedback> = Vec::new();
    let mut fb = WireFeedback::default();

    let mut sender_wake = Some(start);
    let mut sender_secs = 0.0;
    let mut receiver_secs = 0.0;
    let mut sender_allocs = 0u64;
    let mut receiver_allocs = 0u64;
    let mut received = 0u64;
    let mut feedback_datagrams = 0u64;
    let mut frames_done = 0u64;
    let mut slice_start = start;

    while received < target_packets {
        let slice_end = slice_start + SESSION_SLICE;

        // Sender phase: timers and feedback arrivals before `slice_end`, in time order.
        let a0 = allocations();
        let sw = Stopwatch::start();
        loop {
            let fb_at = to_tx.front().map(|(t, _)| *t);
            let (now, is_fb) = match (sender_wake, fb_at) {
                (Some(w), Some(f)) if f <= w => (f, true),
                (None, Some(f)) => (f, true),
                (Some(w), _) => (w, false),
                (None, None) => break,
            };
            if now >= slice_end {
                break;
            }
            if is_fb {
                let Some((_, report)) = to_tx.pop_front() else {
                    break;
                };
                match report {
                    Report::Core(r) => {
                        sender.handle_feedback(now, &r);
                        report_pool.push(r);
                    }
                    Report::Datagram(d) => {
                        let msgs = wire::decode_rtcp(&d).map_err(|e| e.to_string())?;
                        let highest = sender.stats().packets_sent.saturating_sub(1);
                        if let Some(r) = fb_decoder.feedback(&msgs, highest) {
                            sender.handle_feedback(now, &r);
                        }
                        datagram_pool.push(d);
                    }
                }
            } else {
                sender.on_timeout(now);
            }
            while let Some(tx) = sender.poll_transmit(now) {
                let m = if use_wire {
                    let mut buf = datagram_pool.pop().unwrap_or_default();
                    wire::encode_media(
                        &wire_cfg,
                        &tx,
                        ntp_of(tx.packet.capture_time),
                        None,
                        &mut buf,
                    )
                    .map_err(|e| e.to_string())?;
                    Media::Datagram(buf)
                } else {
                    Media::Core(tx)
                };
                to_rx.push_back((now + SESSION_OWD, m));
            }
            sender_wake = sender.poll_timeout(now);
        }
        sender_secs += sw.secs();
        sender_allocs += allocations() - a0;

        // Receiver phase: media arrivals and receiver timers before `slice_end`.
        let a0 = allocations();
        let sw = Stopwatch::start();
        loop {
            let rx_at = to_rx.front().map(|(t, _)| *t);
            let wake = receiver.poll_timeout();
            let now = match (rx_at, wake) {
                (Some(a), Some(w)) => a.min(w),
                (Some(a), None) => a,
                (None, Some(w)) => w,
                (None, None) => break,
            };
            if now >= slice_end {
                break;
            }
            if rx_at == Some(now) {
                let Some((_, m)) = to_rx.pop_front() else {
                    break;
                };
                match m {
                    Media::Core(tx) => {
                        let p = &tx.packet;
                        let meta = PacketMeta::from(*p);
                        // RTP carries 16 bits of the media sequence (RFC 3550 §5.1).
                        let media = MediaSeq {
                            seq: tx.media_seq as u16,
                            retransmission: tx.kind == PacketKind::Retransmission,
                        };
                        receiver.on_packet(now, tx.seq, p.wire_size, media, &meta);
                    }
                    Media::Datagram(d) => {
                        let rtp = wire::decode_media(&wire_cfg, &d).map_err(|e| e.to_string())?;
                        let tseq = rtp
                            .transport_seq
                            .ok_or("media without transport sequence number")?;
                        let meta = rtp
                            .packet_meta(&mut rx_stream.frames, instant_of_ntp)
                            .ok_or("media without frame-info or capture time")?;
                        let seq = rx_stream.seqs.unwrap(u64::from(tseq));
                        let wire_size =
                            Bytes::new((d.len() + wire::IPV4_HEADER + wire::UDP_HEADER) as u64);
                        let media = MediaSeq {
                            seq: rtp.sequence,
                            retransmission: false,
                        };
                        receiver.on_packet(now, seq, wire_size, media, &meta);
                        datagram_pool.push(d);
                    }
                }
                received += 1;
            } else {
                receiver.on_timeout(now);
            }
            if receiver.poll_feedback(now, &mut fb) {
                if use_wire {
                    let datagrams = fb_encoder
                        .encode(&fb, ntp_of(now))
                        .map_err(|e| e.to_string())?;
                    for d in datagrams {
                        feedback_datagrams += 1;
                        to_tx.push_back((now + SESSION_OWD, Report::Datagram(d)));
                    }
                } else {
                    let next = report_pool.pop().unwrap_or_default();
                    let r = std::mem::replace(&mut fb, next);
                    feedback_datagrams += 1;
                    to_tx.push_back((now + SESSION_OWD, Report::Core(r)));
                }
            }
            while receiver.poll_frame().is_some() {
                frames_done += 1;
            }
        }
        receiver_secs += sw.secs();
        receiver_allocs += allocations() - a0;
        slice_start = slice_end;
    }

    let s = sender.stats();
    let n = received as f64;
    let total = sender_secs + receiver_secs;
    Ok(json!({
        "bench": "session",
        "wire": use_wire,
        "cc": "gcc",
        "bitrate_kbps": SESSION_BITRATE.as_kbps_f64(),
        "packets": received,
        "sim_seconds": slice_start.as_secs_f64(),
        "feedback_datagrams": feedback_datagrams,
        "frames_done": frames_done,
        "packets_reported_lost": s.packets_reported_lost,
        "final_target_kbps": sender.target_bitrate().as_kbps_f64(),
        "sender_seconds": sender_secs,
        "receiver_seconds": receiver_secs,
        "sender_us_per_packet": sender_secs * 1e6 / n,
        "receiver_us_per_packet": receiver_secs * 1e6 / n,
        "total_us_per_packet": total * 1e6 / n,
        "sender_packets_per_second": n / sender_secs.max(1e-9),
        "receiver_packets_per_second": n / receiver_secs.max(1e-9),
        "packets_per_second": n / total.max(1e-9),
        "sender_allocs_per_packet": sender_allocs as f64 / n,
        "receiver_allocs_per_packet": receiver_allocs as f64 / n,
    }))
}

// ---------------------------------------------------------------------------
// Loopback
// ---------------------------------------------------------------------------

/// A thread counting the datagrams that reach a plain UDP socket until `stop`.
struct Sink {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: thread::JoinHandle<(u64, u64)>,
}

impl Sink {
    fn start() -> Result<Sink, String> {
        let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("sink bind: {e}"))?;
        sock.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .map_err(|e| format!("sink timeout: {e}"))?;
        let addr = sock.local_addr().map_err(|e| format!("sink addr: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            let (mut n, mut bytes) = (0u64, 0u64);
            while !flag.load(Ordering::Relaxed) {
                if let Ok(len) = sock.recv(&mut buf) {
                    n += 1;
                    bytes += len as u64;
                }
            }
            (n, bytes)
        });
        Ok(Sink { addr, stop, handle })
    }

    /// Stops after the socket has been quiet a moment; (datagrams, bytes).
    fn finish(self) -> Result<(u64, u64), String> {
        thread::sleep(std::time::Duration::from_millis(100));
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| "sink thread panicked".to_string())
    }
}

/// A media packet of a synthetic stream: frames of `per_frame` packets of 1200 B.
fn synthetic_transmit(seq: u64, per_frame: u64, capture_time: Instant) -> Transmit {
    let pk = Packetizer::default();
    let index = seq % per_frame;
    let frame_id = seq / per_frame;
    Transmit {
        seq,
        media_seq: seq,
        kind: PacketKind::Media,
        packet: MediaPacket {
            frame_id,
            frame_type: if frame_id == 0 {
                FrameType::Key
            } else {
                FrameType::Delta
            },
            capture_time,
            index: index as u32,
            count: per_frame as u32,
            last_in_frame: index + 1 == per_frame,
            payload: pk.mtu,
            wire_size: pk.mtu + pk.header_overhead,
            layer: 0,
            layer_end: false,
            repair: false,
        },
        send_time: capture_time,
    }
}

fn loopback_raw(seconds: f64) -> Result<Value, String> {
    let sink = Sink::start()?;
    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    sock.connect(sink.addr)
        .map_err(|e| format!("connect: {e}"))?;
    let mut buf = Vec::new();
    wire::encode_media(
        &WireConfig::default(),
        &synthetic_transmit(0, 100, Instant::ZERO),
        0,
        None,
        &mut buf,
    )
    .map_err(|e| e.to_string())?;
    let sw = Stopwatch::start();
    let (mut sent, mut errors) = (0u64, 0u64);
    while sw.secs() < seconds {
        for _ in 0..64 {
            match sock.send(&buf) {
                Ok(_) => sent += 1,
                Err(_) => errors += 1,
            }
        }
    }
    let elapsed = sw.secs();
    let (received, _) = sink.finish()?;
    Ok(json!({
        "bench": "loopback_raw",
        "seconds": elapsed,
        "datagram_bytes": buf.len(),
        "sent": sent,
        "send_errors": errors,
        "received": received,
        "sent_pps": sent as f64 / elapsed,
        "received_pps": received as f64 / elapsed,
        "drops": sent.saturating_sub(received),
    }))
}

/// `rtcc send` with a fixed controller whose pacer allows far more than the
/// socket can take, into a counting sink.
fn loopback_send(seconds: f64) -> Result<Value, String> {
    // 4 Gbps × 2.5 pacing = 10 Gbps ≈ 0.99 M packets/s of 1268 B: above any
    // loopback path here, so the socket path (or the loop) is the limit. The
    // encoder runs at 240 fps so a key frame (10× a delta frame) stays below the
    // 65 535 packets the frame-info extension can count.
    let bitrate = Bitrate::mbps(4_000);
    let pacing_factor = 2.5;
    let mut media = rtcc_net::default_media("fixed").map_err(|e| e.to_string())?;
    media.encoder.start_bitrate = bitrate;
    media.encoder.max_bitrate = bitrate;
    media.encoder.fps = 240.0;
    media.sender.cc = CcConfig::Fixed(FixedConfig {
        bitrate,
        pacing_factor,
        plan: None,
    });
    // The sink sends no feedback; without this the sender would halve its
    // rate every second (RFC 8083-style back-off).
    media.sender.feedback_timeout = None;
    let wire_cfg = WireConfig::default();
    let sink = Sink::start()?;
    let config = SendConfig {
        to: sink.addr,
        bind: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
        media,
        source: Source::Synthetic,
        wire: wire_cfg,
        duration: Some(Duration::from_secs_f64(seconds)),
        seed: 1,
        out_dir: None,
        sdp: None,
        rtcp: None,
        rtcp_listen: None,
        pcap: None,
    };
    let report = rtcc_net::send::run_blocking(config, Arc::new(AtomicBool::new(false)))
        .map_err(|e| e.to_string())?;
    let (received, _) = sink.finish()?;
    let elapsed = report.elapsed.as_secs_f64().max(1e-9);
    let sent = report.stats.datagrams_sent;
    let wire_size = 1200 + wire::rtp_overhead(&wire_cfg) as u64;
    let pacer_pps = bitrate.as_bps_f64() * pacing_factor / (8.0 * wire_size as f64);
    let encoder_pps = bitrate.as_bps_f64() / (8.0 * wire_size as f64);
    let sent_pps = sent as f64 / elapsed;
    Ok(json!({
        "bench": "loopback_send",
        "seconds": elapsed,
        "bitrate_kbps": bitrate.as_kbps_f64(),
        "pacing_factor": pacing_factor,
        "pacer_limit_pps": pacer_pps,
        "encoder_limit_pps": encoder_pps,
        "sent": sent,
        "send_errors": report.stats.send_errors,
        "received": received,
        "sent_pps": sent_pps,
        "received_pps": received as f64 / elapsed,
        "drops": sent.saturating_sub(received),
        // Which limit was hit: the configured rates, or the send loop itself
        // (its timers, the session, the socket), when well below both.
        "limited_by": if sent_pps < 0.9 * encoder_pps.min(pacer_pps) {
            "send_loop"
        } else {
            "pacer_or_encoder"
        },
    }))
}

/// A plain socket sends valid RTP media as fast as it can to `rtcc recv`.
fn loopback_recv(seconds: f64) -> Result<Value, String> {
    // Pick a free port for the receiver (it does not report the one it bound).
    let port = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| format!("probe bind: {e}"))?
        .port();
    let listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], port));
    let media = rtcc_net::default_media("gcc").map_err(|e| e.to_string())?;
    let wire_cfg = WireConfig::default();
    let config = RecvConfig {
        listen,
        receiver: media.receiver,
        wire: wire_cfg,
        duration: Some(Duration::from_secs_f64(seconds + 5.0)),
        idle_timeout: Some(Duration::from_millis(300)),
        out_dir: None,
        peer: None,
        rtcp: None,
        rtcp_listen: None,
        pcap: None,
    };
    let rx = thread::spawn(move || {
        rtcc_net::recv::run_blocking(config, Arc::new(AtomicBool::new(false)))
    });
    thread::sleep(std::time::Duration::from_millis(200));
    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    sock.connect(listen).map_err(|e| format!("connect: {e}"))?;
    let clock = Clock::start();
    let mut buf = Vec::with_capacity(2048);
    let sw = Stopwatch::start();
    let (mut sent, mut errors) = (0u64, 0u64);
    let per_frame = 100;
    let mut capture = clock.now();
    let mut ntp = clock.ntp_of(capture);
    while sw.secs() < seconds {
        for _ in 0..per_frame {
            if sent % per_frame == 0 {
                capture = clock.now();
                ntp = clock.ntp_of(capture);
            }
            let tx = synthetic_transmit(sent, per_frame, capture);
            wire::encode_media(&wire_cfg, &tx, ntp, None, &mut buf).map_err(|e| e.to_string())?;
            match sock.send(&buf) {
                Ok(_) => sent += 1,
                Err(_) => errors += 1,
            }
        }
    }
    let blast = sw.secs();
    let report = rx
        .join()
        .map_err(|_| "receiver thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    let st = report.stats;
    Ok(json!({
        "bench": "loopback_recv",
        "seconds": blast,
        "sent": sent,
        "send_errors": errors,
        "sent_pps": sent as f64 / blast,
        "datagrams": st.datagrams,
        "media_packets": st.media_packets,
        "media_pps": st.media_packets as f64 / blast,
        "drops": sent.saturating_sub(st.datagrams),
        "malformed": st.malformed,
        "feedback_datagrams": st.feedback_datagrams,
    }))
}
