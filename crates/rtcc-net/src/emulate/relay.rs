//! The relay: two UDP sockets, two links, two FIFOs of held datagrams, one
//! timer per direction.
//!
//! # How a datagram crosses
//!
//! The socket bound at `listen` faces the client; a second socket, bound to an
//! ephemeral port (on the loopback interface when `forward` is a loopback
//! address, on all interfaces otherwise), faces `forward`. A datagram arriving
//! at core time `now` (the [`Clock`] started when the relay runs) is offered to
//! its direction's link ([`Link::transmit`]), which answers at once with the
//! instant it reaches the far end, or a drop (queue full, or lost). A delivered
//! datagram is copied into a pooled buffer and held in the direction's FIFO
//! until the real clock reaches that instant; a link never reorders, so the
//! FIFO's head is always the next one due and one timer per direction
//! (`sleep_until` the head's instant) suffices. Client datagrams go to
//! `forward`; datagrams from `forward` go back to the client. The client is
//! the first address heard on `listen` (or the `--client` address, and no
//! other); another address replaces it only once it has been silent for
//! [`CLIENT_SILENCE`] (a restarted sender, a NAT rebinding, RFC 3550 §8.2),
//! and until then its datagrams are dropped and counted
//! (`drops_unexpected_source`, forward): a third party cannot draw the
//! replies away from an active client. On the second socket, datagrams from
//! any other address than `forward` are dropped and counted; replies that
//! arrive before any client datagram are dropped and counted too (there is
//! nobody to send them to).
//!
//! # Real-time accuracy
//!
//! tokio's timer wheel has a 1 ms resolution and rounds deadlines up, so a
//! datagram is sent up to about a millisecond after its instant, plus the
//! scheduling delay of a loaded host. The relay measures it: each send's
//! lateness (clock at the send − scheduled instant) is recorded
//! ([`DirectionStats::send_lateness`]). Timers are served before the sockets
//! are read, so a flood of arrivals does not delay sends.
//!
//! # Memory
//!
//! Datagrams are read into one 64 KiB buffer per socket and copied into a
//! buffer from a free list, which returns to the list after the send: once the
//! FIFOs and the list have grown to the largest backlog, relaying allocates
//! nothing per datagram.

use std::collections::VecDeque;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rtcc_core::{Bytes, Duration, Instant};
use rtcc_sim::link::{Link, LinkOutcome, LinkStats};
use rtcc_sim::metrics::DelaySummary;
use serde_json::json;
use tokio::net::UdpSocket;

use super::config::{EmulatorConfig, FORWARD_RNG, REVERSE_RNG, UDP_IPV4_OVERHEAD};
use super::EmulatorError;
use crate::clock::Clock;

/// Largest UDP datagram (IPv4: 65 535 − 20 − 8 = 65 507 B of payload; a
/// 64 KiB buffer holds any of them whole, RFC 768 / RFC 791).
const MAX_DATAGRAM: usize = 65_536;

/// How long the client must have been silent before another address may
/// take its place (the receiver's `PEER_SILENCE`, `crate::recv`).
pub const CLIENT_SILENCE: Duration = Duration::from_secs(1);

/// Initial capacity of a pooled datagram buffer: a full Ethernet frame's
/// payload (1500 B MTU) fits, so media packets never make it grow.
const POOL_BUFFER_CAPACITY: usize = 2048;

/// How often [`run_blocking`] looks at its stop flag.
const STOP_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Lateness histogram: 10 µs buckets up to 50 ms, then one overflow bucket.
const LATENESS_BUCKET_NS: u64 = 10_000;
const LATENESS_BUCKETS: usize = 5_000;

/// Runs a relay until `shutdown` completes (or the configured duration ends)
/// and returns its counters. Binds first: a bind error is returned at once.
pub async fn run_relay(
    config: EmulatorConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<EmulatorStats, EmulatorError> {
    Relay::bind(config).await?.run(shutdown).await
}

/// Runs a relay on a new single-threaded runtime, blocking the calling thread
/// until `stop` becomes true (looked at every 50 ms) or the configured duration
/// ends. For callers without a runtime (the Python CLI, which sets `stop` on
/// Ctrl-C).
pub fn run_blocking(
    config: EmulatorConfig,
    stop: Arc<AtomicBool>,
) -> Result<EmulatorStats, EmulatorError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| EmulatorError::Io {
            what: "start the emulator's runtime".into(),
            source,
        })?;
    runtime.block_on(run_relay(config, async move {
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(STOP_POLL_INTERVAL).await;
        }
    }))
}

/// A bound relay, not yet running: its addresses are known (useful when
/// `listen` has port 0) and its counters can be watched.
#[derive(Debug)]
pub struct Relay {
    config: EmulatorConfig,
    client_socket: UdpSocket,
    upstream_socket: UdpSocket,
    shared: StatsHandle,
}

impl Relay {
    /// Binds the client-facing socket at `config.listen` and the upstream
    /// socket to an ephemeral port, and builds both links with their random
    /// streams (`rng::stream(seed, FORWARD_RNG | REVERSE_RNG)`).
    ///
    /// Fails if a link configuration does not validate
    /// ([`LinkConfig::validate`](rtcc_sim::link::LinkConfig::validate)) or a
    /// socket cannot be bound.
    pub async fn bind(config: EmulatorConfig) -> Result<Relay, EmulatorError> {
        for (direction, link) in [
            ("forward", &config.forward_link),
            ("reverse", &config.reverse_link),
        ] {
            link.validate()
                .map_err(|source| EmulatorError::Link { direction, source })?;
        }
        let client_socket =
            UdpSocket::bind(config.listen)
                .await
                .map_err(|source| EmulatorError::Io {
                    what: format!("bind --listen {}", config.listen),
                    source,
                })?;
        if let Ok(bound) = client_socket.local_addr() {
            let same_host = config.forward.ip() == bound.ip()
                || (bound.ip().is_unspecified() && config.forward.ip().is_loopback());
            if config.forward.port() == bound.port() && same_host {
                // Every datagram would come back to the relay and go round
                // again (one looped 1348 times in 1.5 s).
                return Err(EmulatorError::Option {
                    option: "--forward".into(),
                    value: config.forward.to_string(),
                    message: format!("is the emulator's own --listen address ({bound})"),
                });
            }
        }
        let upstream_ip = match config.forward.ip() {
            ip if ip.is_loopback() => ip,
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        // `--upstream`: a fixed address, for a receiver that must know where
        // to send its replies before any datagram reaches it.
        let upstream = config.upstream.unwrap_or(SocketAddr::new(upstream_ip, 0));
        let upstream_socket =
            UdpSocket::bind(upstream)
                .await
                .map_err(|source| EmulatorError::Io {
                    what: format!("bind {upstream} to reach --forward {}", config.forward),
                    source,
                })?;
        let engine = Engine {
            clock: None,
            link_name: config.link_name.clone(),
            seed: config.seed,
            forward: Direction::new(Link::new(
                config.forward_link.clone(),
                rtcc_core::rng::stream(config.seed, FORWARD_RNG),
            )),
            reverse: Direction::new(Link::new(
                config.reverse_link.clone(),
                rtcc_core::rng::stream(config.seed, REVERSE_RNG),
            )),
        };
        Ok(Relay {
            config,
            client_socket,
            upstream_socket,
            shared: StatsHandle(Arc::new(Mutex::new(engine))),
        })
    }

    /// Address the client sends to (the bound `listen`).
    pub fn listen_addr(&self) -> Result<SocketAddr, EmulatorError> {
        self.client_socket
            .local_addr()
            .map_err(|source| EmulatorError::Io {
                what: "local address of --listen".into(),
                source,
            })
    }

    /// Address of the socket that talks to `forward` (replies must come from
    /// `forward` to this address).
    pub fn upstream_addr(&self) -> Result<SocketAddr, EmulatorError> {
        self.upstream_socket
            .local_addr()
            .map_err(|source| EmulatorError::Io {
                what: "local address of the upstream socket".into(),
                source,
            })
    }

    /// A handle to read the counters while the relay runs.
    pub fn stats_handle(&self) -> StatsHandle {
        self.shared.clone()
    }

    /// Relays until `shutdown` completes or the configured duration ends, then
    /// returns the counters. Datagrams still held at that moment are not sent
    /// ([`DirectionStats::held_at_exit`]). Socket errors while running are
    /// counted, not fatal.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<EmulatorStats, EmulatorError> {
        let Relay {
            config,
            client_socket,
            upstream_socket,
            shared,
        } = self;
        let clock = Clock::start();
        shared.lock().clock = Some(clock);
        let deadline = |t: Instant| tokio::time::Instant::from_std(clock.to_std(t));
        // A deadline for disabled timers (their branches are guarded off).
        let never = deadline(Instant::ZERO + Duration::from_secs(365 * 86_400));
        let end = config.duration.map(|d| deadline(Instant::ZERO + d));

        let mut client_buf = vec![0u8; MAX_DATAGRAM];
        let mut upstream_buf = vec![0u8; MAX_DATAGRAM];
        let mut forward_q: VecDeque<Held> = VecDeque::new();
        let mut reverse_q: VecDeque<Held> = VecDeque::new();
        let mut pool: Vec<Vec<u8>> = Vec::new();
        let mut client: Option<SocketAddr> = None;
        let mut client_heard = Instant::ZERO;

        let stop_timer = tokio::time::sleep_until(end.unwrap_or(never));
        let forward_timer = tokio::time::sleep_until(never);
        let reverse_timer = tokio::time::sleep_until(never);
        tokio::pin!(shutdown, stop_timer, forward_timer, reverse_timer);

        loop {
            if let Some(h) = forward_q.front() {
                let d = deadline(h.at);
                if forward_timer.deadline() != d {
                    forward_timer.as_mut().reset(d);
                }
            }
            if let Some(h) = reverse_q.front() {
                let d = deadline(h.at);
                if reverse_timer.deadline() != d {
                    reverse_timer.as_mut().reset(d);
                }
            }
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                () = &mut stop_timer, if end.is_some() => break,
                () = &mut forward_timer, if !forward_q.is_empty() => {
                    send_due(
                        &clock, &shared, Side::Forward, &mut forward_q, &mut pool,
                        &upstream_socket, Some(config.forward),
                    ).await;
                }
                () = &mut reverse_timer, if !reverse_q.is_empty() => {
                    send_due(
                        &clock, &shared, Side::Reverse, &mut reverse_q, &mut pool,
                        &client_socket, client,
                    ).await;
                }
                r = client_socket.recv_from(&mut client_buf) => match r {
                    Ok((n, from)) => {
                        let now = clock.now();
                        let mut eng = shared.lock();
                        let accepted = match (config.client, client) {
                            (Some(pinned), _) => from == pinned,
                            (None, Some(c)) if c != from => {
                                now.saturating_duration_since(client_heard) >= CLIENT_SILENCE
                            }
                            _ => true,
                        };
                        if !accepted {
                            let c = &mut eng.forward.counters;
                            c.datagrams_in += 1;
                            c.bytes_in += n as u64;
                            c.drops_unexpected_source += 1;
                            continue;
                        }
                        if client.is_some_and(|c| c != from) {
                            eng.forward.counters.client_changes += 1;
                        }
                        client = Some(from);
                        client_heard = now;
                        eng.forward.admit(now, &client_buf[..n], &mut forward_q, &mut pool);
                    }
                    Err(_) => shared.lock().forward.counters.recv_errors += 1,
                },
                r = upstream_socket.recv_from(&mut upstream_buf) => match r {
                    Ok((n, from)) => {
                        let now = clock.now();
                        let mut eng = shared.lock();
                        let dir = &mut eng.reverse;
                        if from != config.forward {
                            dir.counters.datagrams_in += 1;
                            dir.counters.bytes_in += n as u64;
                            dir.counters.drops_unexpected_source += 1;
                        } else if client.is_none() {
                            dir.counters.datagrams_in += 1;
                            dir.counters.bytes_in += n as u64;
                            dir.counters.drops_no_client += 1;
                        } else {
                            dir.admit(now, &upstream_buf[..n], &mut reverse_q, &mut pool);
                        }
                    }
                    Err(_) => shared.lock().reverse.counters.recv_errors += 1,
                },
            }
        }
        {
            let mut eng = shared.lock();
            eng.forward.counters.held_at_exit = forward_q.len() as u64;
            eng.reverse.counters.held_at_exit = reverse_q.len() as u64;
        }
        Ok(shared.snapshot())
    }
}

/// A live view of a relay's counters, shareable across threads.
#[derive(Debug, Clone)]
pub struct StatsHandle(Arc<Mutex<Engine>>);

impl StatsHandle {
    /// The counters now.
    pub fn snapshot(&self) -> EmulatorStats {
        let eng = self.lock();
        EmulatorStats {
            link_name: eng.link_name.clone(),
            seed: eng.seed,
            elapsed: eng
                .clock
                .map_or(Duration::ZERO, |c| c.elapsed(Instant::ZERO)),
            forward: eng.forward.stats(),
            reverse: eng.reverse.stats(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Engine> {
        // Poisoned only if a thread panicked while holding the lock; the
        // counters are still meaningful, so keep using them.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What a relay did, per direction.
#[derive(Debug, Clone)]
pub struct EmulatorStats {
    /// The emulated link's name (scenario link name, or `"cli"`).
    pub link_name: String,
    /// Seed of the links' random streams.
    pub seed: u64,
    /// Time since the relay started.
    pub elapsed: Duration,
    /// Client → `forward`.
    pub forward: DirectionStats,
    /// `forward` → client.
    pub reverse: DirectionStats,
}

impl EmulatorStats {
    /// The counters as JSON, for the CLI to print at the end (durations in ms).
    pub fn summary_json(&self) -> serde_json::Value {
        json!({
            "link": self.link_name,
            "seed": self.seed,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "forward": self.forward.summary_json(),
            "reverse": self.reverse.summary_json(),
        })
    }
}

/// Counters of one direction. Byte counts are UDP payload bytes (the link is
/// charged 28 B more per datagram, see [`UDP_IPV4_OVERHEAD`]).
#[derive(Debug, Clone)]
pub struct DirectionStats {
    /// Datagrams received on this direction's ingress socket (all of them,
    /// including those dropped for their source).
    pub datagrams_in: u64,
    /// Payload bytes of `datagrams_in`.
    pub bytes_in: u64,
    /// Datagrams sent on.
    pub datagrams_out: u64,
    /// Payload bytes sent on.
    pub bytes_out: u64,
    /// Dropped by the link's drop-tail queue.
    pub drops_queue: u64,
    /// Lost by the link's loss model.
    pub drops_loss: u64,
    /// Forward: from another address than the client's while the client is
    /// active (or than `--client`'s); reverse: from an address other than
    /// `forward`.
    pub drops_unexpected_source: u64,
    /// Forward only: times another address took the client's place after
    /// [`CLIENT_SILENCE`] of silence.
    pub client_changes: u64,
    /// Reverse only: arrived before any client datagram (no destination).
    pub drops_no_client: u64,
    /// Sends that failed (the datagram is lost).
    pub send_errors: u64,
    /// Receives that failed.
    pub recv_errors: u64,
    /// Admitted datagrams still held when the relay stopped (never sent).
    pub held_at_exit: u64,
    /// Largest time a delivered datagram spent in the link before propagation:
    /// its scheduled delivery − arrival − the link's delay, i.e. waiting +
    /// transmission (+ jitter). With a delay schedule, the delay in force at
    /// the datagram's arrival (off by the change for a datagram that waits
    /// across one).
    pub max_queue_delay: Duration,
    /// Waiting time in the queue, as the simulator reports it
    /// ([`Link::queue_delay`]), in ms.
    pub queue_delay: DelaySummary,
    /// Actual send time − scheduled delivery instant, over all sends.
    pub send_lateness: LatenessSummary,
    /// The link's own counters.
    pub link: LinkStats,
}

impl DirectionStats {
    /// The counters as JSON (durations in ms).
    pub fn summary_json(&self) -> serde_json::Value {
        json!({
            "datagrams_in": self.datagrams_in,
            "bytes_in": self.bytes_in,
            "datagrams_out": self.datagrams_out,
            "bytes_out": self.bytes_out,
            "drops_queue": self.drops_queue,
            "drops_loss": self.drops_loss,
            "drops_unexpected_source": self.drops_unexpected_source,
            "drops_no_client": self.drops_no_client,
            "client_changes": self.client_changes,
            "send_errors": self.send_errors,
            "recv_errors": self.recv_errors,
            "held_at_exit": self.held_at_exit,
            "max_queue_delay_ms": self.max_queue_delay.as_millis_f64(),
            "queue_delay_ms": self.queue_delay,
            "send_lateness_ms": self.send_lateness,
        })
    }
}

/// Distribution of send lateness (ms; p99 to 10 µs, values above 50 ms count
/// as 50 ms in the p99 but exactly in the mean and max).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct LatenessSummary {
    /// Number of sends.
    pub count: u64,
    /// Mean (ms).
    pub mean: f64,
    /// 99th percentile (ms, upper edge of its 10 µs bucket).
    pub p99: f64,
    /// Largest (ms).
    pub max: f64,
}

// ---------------------------------------------------------------------------

/// A datagram waiting for its delivery instant.
#[derive(Debug)]
struct Held {
    at: Instant,
    buf: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
enum Side {
    Forward,
    Reverse,
}

/// Everything the counters are made of; behind the [`StatsHandle`]'s mutex.
#[derive(Debug)]
struct Engine {
    clock: Option<Clock>,
    link_name: String,
    seed: u64,
    forward: Direction,
    reverse: Direction,
}

impl Engine {
    fn side(&mut self, side: Side) -> &mut Direction {
        match side {
            Side::Forward => &mut self.forward,
            Side::Reverse => &mut self.reverse,
        }
    }
}

/// Plain counters of a direction (see [`DirectionStats`]).
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    datagrams_in: u64,
    bytes_in: u64,
    datagrams_out: u64,
    bytes_out: u64,
    drops_queue: u64,
    drops_loss: u64,
    drops_unexpected_source: u64,
    drops_no_client: u64,
    client_changes: u64,
    send_errors: u64,
    recv_errors: u64,
    held_at_exit: u64,
    max_queue_delay: Duration,
}

#[derive(Debug)]
struct Direction {
    link: Link,
    counters: Counters,
    lateness: Lateness,
}

impl Direction {
    fn new(link: Link) -> Direction {
        Direction {
            link,
            counters: Counters::default(),
            lateness: Lateness::new(),
        }
    }

    /// Offers a datagram that arrived at `now` to the link; holds it if it is
    /// delivered.
    fn admit(
        &mut self,
        now: Instant,
        data: &[u8],
        queue: &mut VecDeque<Held>,
        pool: &mut Vec<Vec<u8>>,
    ) {
        let c = &mut self.counters;
        c.datagrams_in += 1;
        c.bytes_in += data.len() as u64;
        let size = Bytes::new(data.len() as u64) + UDP_IPV4_OVERHEAD;
        match self.link.transmit(now, size) {
            LinkOutcome::Delivered { at } => {
                let in_link = at
                    .saturating_duration_since(now)
                    .saturating_sub(self.link.config().delay_at(now));
                c.max_queue_delay = c.max_queue_delay.max(in_link);
                let mut buf = pool
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(POOL_BUFFER_CAPACITY));
                buf.clear();
                buf.extend_from_slice(data);
                queue.push_back(Held { at, buf });
            }
            LinkOutcome::DroppedQueue => c.drops_queue += 1,
            LinkOutcome::DroppedLoss => c.drops_loss += 1,
        }
    }

    fn stats(&self) -> DirectionStats {
        let c = self.counters;
        let link = self.link.stats();
        DirectionStats {
            datagrams_in: c.datagrams_in,
            bytes_in: c.bytes_in,
            datagrams_out: c.datagrams_out,
            bytes_out: c.bytes_out,
            drops_queue: c.drops_queue,
            drops_loss: c.drops_loss,
            drops_unexpected_source: c.drops_unexpected_source,
            drops_no_client: c.drops_no_client,
            client_changes: c.client_changes,
            send_errors: c.send_errors,
            recv_errors: c.recv_errors,
            held_at_exit: c.held_at_exit,
            max_queue_delay: c.max_queue_delay,
            queue_delay: self.link.queue_delay().summary(),
            send_lateness: self.lateness.summary(),
            link,
        }
    }
}

/// Sends every held datagram whose instant has come, oldest first, to `dest`
/// (dropped as a send error when there is none), and returns the buffers to
/// the pool.
async fn send_due(
    clock: &Clock,
    shared: &StatsHandle,
    side: Side,
    queue: &mut VecDeque<Held>,
    pool: &mut Vec<Vec<u8>>,
    socket: &UdpSocket,
    dest: Option<SocketAddr>,
) {
    while queue.front().is_some_and(|h| h.at <= clock.now()) {
        let Some(held) = queue.pop_front() else { break };
        let sent_at = clock.now();
        let result = match dest {
            Some(d) => socket.send_to(&held.buf, d).await.map(|_| ()),
            None => Err(std::io::ErrorKind::NotConnected.into()),
        };
        {
            let mut eng = shared.lock();
            let dir = eng.side(side);
            dir.lateness
                .record(sent_at.saturating_duration_since(held.at));
            match result {
                Ok(()) => {
                    dir.counters.datagrams_out += 1;
                    dir.counters.bytes_out += held.buf.len() as u64;
                }
                Err(_) => dir.counters.send_errors += 1,
            }
        }
        pool.push(held.buf);
    }
}

/// Fixed-bucket histogram of send lateness: recording never allocates.
#[derive(Debug)]
struct Lateness {
    buckets: Vec<u64>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Lateness {
    fn new() -> Lateness {
        Lateness {
            buckets: vec![0; LATENESS_BUCKETS + 1],
            count: 0,
            sum_ns: 0,
            max_ns: 0,
        }
    }

    fn record(&mut self, d: Duration) {
        let ns = d.as_nanos();
        let i = ((ns / LATENESS_BUCKET_NS) as usize).min(LATENESS_BUCKETS);
        self.buckets[i] += 1;
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    fn summary(&self) -> LatenessSummary {
        if self.count == 0 {
            return LatenessSummary::default();
        }
        let rank = (0.99 * self.count as f64).ceil() as u64;
        let mut seen = 0;
        let mut p99_ns = self.max_ns;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                p99_ns = ((i as u64 + 1) * LATENESS_BUCKET_NS).min(self.max_ns);
                break;
            }
        }
        LatenessSummary {
            count: self.count,
            mean: self.sum_ns as f64 / self.count as f64 / 1e6,
            p99: p99_ns as f64 / 1e6,
            max: self.max_ns as f64 / 1e6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_mean_p99_and_max() {
        let mut l = Lateness::new();
        for _ in 0..99 {
            l.record(Duration::from_micros(500));
        }
        l.record(Duration::from_millis(80));
        let s = l.summary();
        assert_eq!(s.count, 100);
        assert!((s.mean - (99.0 * 0.5 + 80.0) / 100.0).abs() < 1e-9, "{s:?}");
        // 99 % of the sends were at 0.5 ms: p99 is the upper edge of that bucket.
        assert!((s.p99 - 0.51).abs() < 1e-9, "{s:?}");
        assert!((s.max - 80.0).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn admitted_datagrams_are_held_until_their_delivery_and_charged_28_bytes_more() {
        let cfg = rtcc_sim::link::LinkConfig {
            rate: rtcc_sim::link::RateModel::Constant(rtcc_core::Bitrate::mbps(1)),
            delay: Duration::from_millis(10),
            ..Default::default()
        };
        let mut d = Direction::new(Link::new(cfg, rtcc_core::rng::stream(1, 1)));
        let (mut q, mut pool) = (VecDeque::new(), Vec::new());
        // 97 B payload + 28 = 125 B = 1 ms at 1 Mbps, then 10 ms of propagation.
        d.admit(Instant::ZERO, &[7u8; 97], &mut q, &mut pool);
        d.admit(Instant::ZERO, &[8u8; 97], &mut q, &mut pool);
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].at, Instant::from_millis(11));
        assert_eq!(q[1].at, Instant::from_millis(12));
        assert_eq!(q[1].buf, vec![8u8; 97]);
        assert_eq!(d.counters.max_queue_delay, Duration::from_millis(2));
        assert_eq!(d.link.stats().bytes_delivered, 250);
    }

    #[test]
    fn pooled_buffers_are_reused() {
        let mut d = Direction::new(Link::new(Default::default(), rtcc_core::rng::stream(1, 1)));
        let (mut q, mut pool) = (VecDeque::new(), Vec::new());
        d.admit(Instant::ZERO, &[1u8; 100], &mut q, &mut pool);
        let Some(held) = q.pop_front() else {
            panic!("delivered datagram not held")
        };
        let ptr = held.buf.as_ptr();
        pool.push(held.buf);
        d.admit(Instant::from_millis(5), &[2u8; 50], &mut q, &mut pool);
        assert_eq!(q[0].buf.as_ptr(), ptr);
        assert_eq!(q[0].buf, vec![2u8; 50]);
    }
}
