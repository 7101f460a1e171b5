//! The live transport's steady state allocates nothing: project rule "the
//! simulator's per-packet path allocates nothing", applied to the QUIC-like
//! sender and receiver (frames in, packets out, ACK frames both ways,
//! losses, retransmissions, AutoRec replicas, FEC repairs and recoveries).
//!
//! A counting global allocator (this test binary only) counts the
//! allocations made on a thread while counting is switched on for it. A
//! sender and a receiver run over a deterministic lossy link (12 Mbps,
//! 60 ms RTT, 5 % seeded Bernoulli loss on the data direction, a 4 Mbps
//! 30 fps stream) for a warm-up that lets every buffer reach its steady
//! capacity, then the next seconds must make zero allocations.
//!
//! The warm-up is long because one buffer legitimately grows for minutes:
//! the sender's content log keeps the last `CONTENT_LOG` (2^16) packet
//! numbers, about 190 s of this stream.

use std::collections::VecDeque;

use rand::Rng as _;
use rtcc_core::cc::CcConfig;
use rtcc_core::media::encoder::EncodedFrame;
use rtcc_core::media::frame::FrameType;
use rtcc_core::recovery::fec::FecConfig;
use rtcc_core::rng;
use rtcc_core::time::{Duration, Instant};
use rtcc_core::transport::sender::CONTENT_LOG;
use rtcc_core::transport::{
    AckFrame, AutoRecSettings, Datagram, RecoveryScheme, TransportReceiver,
    TransportReceiverConfig, TransportSender, TransportSenderConfig,
};
use rtcc_core::units::Bitrate;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations_during;

#[test]
fn the_counter_sees_an_allocation() {
    // Guards the test itself: a counter that never counts proves nothing.
    let n = allocations_during(|| {
        let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(8));
        drop(v);
    });
    assert!(n >= 1, "counted {n}");
}

// ---- the lossy link ----------------------------------------------------------

/// A bottleneck link (serialisation at `rate`, one-way `delay` both ways,
/// Bernoulli loss on the data direction) between a sender fed by a
/// constant-bitrate source and a receiver. ACK frames travel in a pool of
/// reused frames, as in the simulator; the link's own queues are reserved up
/// front so that only the transport's allocations are measured.
struct Link {
    sender: TransportSender,
    receiver: TransportReceiver,
    rate: Bitrate,
    delay: Duration,
    loss: f64,
    rng: rng::Rng,
    link_free: Instant,
    fwd: VecDeque<(Instant, Datagram)>,
    /// (arrival, slot in `acks`).
    rev: VecDeque<(Instant, usize)>,
    acks: Vec<AckFrame>,
    free: Vec<usize>,
    stream_rate: Bitrate,
    fps: u64,
    next_frame: u64,
    now: Instant,
    dropped: u64,
}

impl Link {
    fn new(recovery: RecoveryScheme, seed: u64) -> Self {
        let fec = match &recovery {
            RecoveryScheme::Fec(c) => Some(*c),
            _ => None,
        };
        let config = TransportSenderConfig {
            cc: CcConfig::default_for("bbr").expect("bbr is built in"),
            recovery,
            ..TransportSenderConfig::default()
        };
        Link {
            sender: TransportSender::new(Instant::ZERO, config).expect("valid config"),
            receiver: TransportReceiver::new(TransportReceiverConfig {
                fec,
                ..TransportReceiverConfig::default()
            })
            .expect("valid receiver config"),
            rate: Bitrate::bps(12_000_000),
            delay: Duration::from_millis(30),
            loss: 0.05,
            rng: rng::stream(seed, 1),
            link_free: Instant::ZERO,
            fwd: VecDeque::with_capacity(1 << 14),
            rev: VecDeque::with_capacity(1 << 12),
            acks: Vec::with_capacity(1 << 12),
            free: Vec::with_capacity(1 << 12),
            stream_rate: Bitrate::bps(4_000_000),
            fps: 30,
            next_frame: 0,
            now: Instant::ZERO,
            dropped: 0,
        }
    }

    fn frame_time(&self, k: u64) -> Instant {
        Instant::ZERO + Duration::from_nanos(k * 1_000_000_000 / self.fps)
    }

    fn push_frame(&mut self) {
        let k = self.next_frame;
        self.next_frame += 1;
        let frame = EncodedFrame {
            frame_id: k,
            capture_time: self.frame_time(k),
            size: self.stream_rate * Duration::from_nanos(1_000_000_000 / self.fps),
            frame_type: if k == 0 {
                FrameType::Key
            } else {
                FrameType::Delta
            },
            target_bitrate: self.stream_rate,
            etr: 1.0,
        };
        self.sender.on_frame(self.now, &frame);
    }

    fn pump(&mut self) {
        let now = self.now;
        while let Some(d) = self.sender.poll_transmit(now) {
            let start = now.max(self.link_free);
            self.link_free = start + d.size / self.rate;
            if self.rng.random::<f64>() < self.loss {
                self.dropped += 1;
                continue;
            }
            self.fwd.push_back((self.link_free + self.delay, d));
        }
        loop {
            let slot = match self.free.pop() {
                Some(s) => {
                    if !self.receiver.poll_ack_into(now, &mut self.acks[s]) {
                        self.free.push(s);
                        break;
                    }
                    s
                }
                None => {
                    let Some(a) = self.receiver.poll_ack(now) else {
                        break;
                    };
                    self.acks.push(a);
                    self.acks.len() - 1
                }
            };
            self.rev.push_back((now + self.delay, slot));
        }
    }

    /// Runs every event up to `end`.
    fn run_until(&mut self, end: Instant) {
        loop {
            let mut next = end.min(self.frame_time(self.next_frame));
            for t in [
                self.sender.poll_timeout(self.now),
                self.receiver.poll_timeout(),
                self.fwd.front().map(|&(t, _)| t),
                self.rev.front().map(|&(t, _)| t),
            ]
            .into_iter()
            .flatten()
            {
                next = next.min(t);
            }
            self.now = next.max(self.now);
            if self.now >= end {
                return;
            }
            while self.frame_time(self.next_frame) <= self.now {
                self.push_frame();
            }
            while self.fwd.front().is_some_and(|&(t, _)| t <= self.now) {
                let Some((_, d)) = self.fwd.pop_front() else {
                    break;
                };
                self.receiver.on_datagram(self.now, d.pn, &d.payload);
                while let Some(pn) = self.receiver.poll_recovered() {
                    let content = self
                        .sender
                        .content_of(pn)
                        .expect("recent packet in the log");
                    self.receiver.on_recovered(self.now, pn, &content);
                }
            }
            while self.rev.front().is_some_and(|&(t, _)| t <= self.now) {
                let Some((_, slot)) = self.rev.pop_front() else {
                    break;
                };
                self.sender
                    .on_ack(self.now, &self.acks[slot])
                    .expect("acks only sent packets");
                self.free.push(slot);
            }
            self.sender.on_timeout(self.now);
            self.pump();
        }
    }
}

/// Warm up, then measure: the measured window makes no allocation and really
/// exercised every path (sends, ACKs, losses, retransmissions, the scheme's
/// own packets).
fn steady_state_allocates_nothing(recovery: RecoveryScheme, seed: u64) {
    let name = recovery.name();
    let mut link = Link::new(recovery, seed);
    // The content log fills after CONTENT_LOG packets (~350 packets/s here):
    // warm up past that, with margin.
    let packets_per_second = 4_000_000 / 8 / 1_200;
    let warm_up = Duration::from_secs(CONTENT_LOG / packets_per_second + 20);
    let window = Duration::from_secs(10);
    link.run_until(Instant::ZERO + warm_up);
    let before = *link.sender.stats();
    let acks_before = link.receiver.stats().acks_sent;
    let dropped_before = link.dropped;
    let delivered_before = link.receiver.delivered();

    let n = allocations_during(|| link.run_until(Instant::ZERO + warm_up + window));

    let after = *link.sender.stats();
    let first = counting_alloc::first_backtrace();
    assert_eq!(
        n,
        0,
        "{name}: {n} allocations in the steady state; the first at:\n{}",
        first.unwrap_or_default()
    );
    // The window really exercised the paths it claims to.
    assert!(after.packets_sent - before.packets_sent > 3_000, "{name}");
    assert!(after.acks_received - before.acks_received > 1_000, "{name}");
    assert!(
        link.receiver.stats().acks_sent - acks_before > 1_000,
        "{name}"
    );
    assert!(link.dropped - dropped_before > 100, "{name}");
    assert!(after.packets_lost - before.packets_lost > 100, "{name}");
    assert!(
        after.retransmissions_sent - before.retransmissions_sent > 50,
        "{name}"
    );
    assert!(
        link.receiver.delivered() - delivered_before > 3_000,
        "{name}"
    );
    match name {
        "autorec" => assert!(
            after.reinjections_sent > before.reinjections_sent,
            "autorec reinjected"
        ),
        "fec" => {
            assert!(after.repairs_sent > before.repairs_sent, "fec repaired");
            assert!(
                link.receiver.stats().fec_recovered > 0,
                "fec recovered packets"
            );
        }
        _ => {}
    }
}

#[test]
fn rtx_steady_state_allocates_nothing() {
    steady_state_allocates_nothing(RecoveryScheme::Rtx, 11);
}

#[test]
fn autorec_steady_state_allocates_nothing() {
    steady_state_allocates_nothing(RecoveryScheme::AutoRec(AutoRecSettings::default()), 12);
}

#[test]
fn fec_steady_state_allocates_nothing() {
    steady_state_allocates_nothing(RecoveryScheme::Fec(FecConfig::default()), 13);
}
