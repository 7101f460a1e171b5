//! Property tests every built-in congestion controller must pass through the
//! `CongestionController` trait: random sequences of sends, feedback (with
//! losses, reordering, duplicates and an arbitrary receiver clock), frames and
//! time steps never panic, keep the target bitrate within the configured
//! bounds, keep the pacing rate positive and bounded, never ask for a
//! timer in the past, trace only declared, finite state variables, and plan
//! repair streams only when their configuration says they may
//! (`CcConfig::may_plan_repair`, by which a transport sets up the stream
//! that carries them).
//!
//! The list of controllers is `CcConfig::NAMES`, so a new controller is tested
//! as soon as it is registered.

use std::collections::VecDeque;

use proptest::prelude::*;
use rtcc_core::cc::contract::{self, Contract};
use rtcc_core::{
    Bitrate, Bytes, CcConfig, CongestionController, Controller, Duration, FeedbackReport,
    FrameInfo, FrameType, Instant, PacketKind, PacketResult, SentPacket,
};

/// Payload bytes per packet of the driver's packetizer.
const MTU: u64 = 1200;
/// Wire overhead per packet.
const OVERHEAD: u64 = 48;

#[derive(Debug, Clone)]
enum Op {
    /// A frame of `size` payload bytes is handed to the transport.
    Frame { size: u64, key: bool },
    /// After `gap_us`, the next queued packet (or a padding packet) is sent.
    Send { gap_us: u64 },
    /// After `gap_us`, feedback covering the `n` oldest unreported packets:
    /// `loss_mask` bit i loses packet i, arrivals are `delay_ms` after sending
    /// plus up to `jitter_us`, `dup` repeats the report.
    Feedback {
        gap_us: u64,
        n: usize,
        loss_mask: u64,
        delay_ms: u64,
        jitter_us: u64,
        dup: bool,
    },
    /// Time passes.
    Advance { dt_ms: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (100u64..80_000, prop::bool::weighted(0.1))
            .prop_map(|(size, key)| Op::Frame { size, key }),
        8 => (0u64..20_000).prop_map(|gap_us| Op::Send { gap_us }),
        3 => (0u64..100_000, 0usize..60, any::<u64>(), 0u64..800, 0u64..30_000, prop::bool::weighted(0.05))
            .prop_map(|(gap_us, n, loss_mask, delay_ms, jitter_us, dup)| Op::Feedback {
                gap_us, n, loss_mask, delay_ms, jitter_us, dup,
            }),
        1 => (0u64..6_000).prop_map(|dt_ms| Op::Advance { dt_ms }),
    ]
}

/// Drives one controller and checks the invariants after every input.
struct Driver {
    cc: Controller,
    bounds: (Bitrate, Bitrate),
    /// `CcConfig::may_plan_repair` of the configuration.
    may_plan_repair: bool,
    now: Instant,
    /// The receiver clock's offset from the sender's (arbitrary origin).
    clock_offset: Duration,
    next_seq: u64,
    next_frame: u64,
    /// Packets queued for sending: (frame id, first, last).
    queue: VecDeque<(u64, bool, bool)>,
    /// Sent, not yet reported.
    outstanding: VecDeque<SentPacket>,
    in_flight: u64,
}

impl Driver {
    fn new(cfg: &CcConfig, clock_offset: Duration) -> Self {
        let now = Instant::from_nanos(1_000_000_000);
        Driver {
            cc: cfg.build(now),
            bounds: cfg.bitrate_bounds(),
            may_plan_repair: cfg.may_plan_repair(),
            now,
            clock_offset,
            next_seq: 0,
            next_frame: 0,
            queue: VecDeque::new(),
            outstanding: VecDeque::new(),
            in_flight: 0,
        }
    }

    /// Moves time forward to `to`, firing every timer that falls due on the way.
    fn advance(&mut self, to: Instant) {
        let mut fired = 0;
        while let Some(t) = self.cc.poll_timeout() {
            if t > to {
                break;
            }
            self.now = self.now.max(t);
            self.cc.on_timeout(self.now);
            fired += 1;
            assert!(
                fired < 100_000,
                "{}: on_timeout at {} does not move the timer forward",
                self.cc.name(),
                self.now
            );
            if let Some(next) = self.cc.poll_timeout() {
                if next <= self.now {
                    // A timer that is due again at the same instant must be
                    // served by a later call, not loop forever.
                    self.cc.on_timeout(self.now);
                    let again = self.cc.poll_timeout();
                    assert!(
                        again.is_none_or(|a| a > self.now),
                        "{}: poll_timeout stays at {} after two on_timeout calls",
                        self.cc.name(),
                        self.now
                    );
                }
            }
            self.check("on_timeout");
        }
        self.now = self.now.max(to);
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Frame { size, key } => {
                let packets = size.div_ceil(MTU).max(1);
                let id = self.next_frame;
                self.next_frame += 1;
                for i in 0..packets {
                    self.queue.push_back((id, i == 0, i + 1 == packets));
                }
                let info = FrameInfo {
                    frame_id: id,
                    capture_time: self.now,
                    size: Bytes::new(size),
                    frame_type: if key {
                        FrameType::Key
                    } else {
                        FrameType::Delta
                    },
                    num_packets: packets as u32,
                    target_bitrate: self.cc.target_bitrate(),
                };
                self.cc.on_frame(self.now, &info);
                self.check("on_frame");
            }
            Op::Send { gap_us } => {
                self.advance(self.now + Duration::from_micros(gap_us));
                let (kind, frame_id, first, last) = match self.queue.pop_front() {
                    Some((id, first, last)) => (PacketKind::Media, Some(id), first, last),
                    None => (PacketKind::Padding, None, false, false),
                };
                let size = MTU + OVERHEAD;
                self.in_flight += size;
                let pkt = SentPacket {
                    seq: self.next_seq,
                    size: Bytes::new(size),
                    send_time: self.now,
                    kind,
                    frame_id,
                    first_in_frame: first,
                    last_in_frame: last,
                    bytes_in_flight: Bytes::new(self.in_flight),
                };
                self.next_seq += 1;
                self.outstanding.push_back(pkt);
                self.cc.on_packet_sent(self.now, &pkt);
                self.check("on_packet_sent");
            }
            Op::Feedback {
                gap_us,
                n,
                loss_mask,
                delay_ms,
                jitter_us,
                dup,
            } => {
                self.advance(self.now + Duration::from_micros(gap_us));
                let n = n.min(self.outstanding.len());
                let mut packets = Vec::with_capacity(n);
                let mut latest = Instant::ZERO;
                for i in 0..n {
                    let Some(sent) = self.outstanding.pop_front() else {
                        break;
                    };
                    self.in_flight -= sent.size.get();
                    let lost = i < 64 && loss_mask >> i & 1 == 1;
                    // Jitter varies per packet; arrivals may reorder.
                    let jitter = jitter_us.wrapping_mul(i as u64 * 7 + 3) % (jitter_us + 1);
                    let arrival = sent.send_time
                        + self.clock_offset
                        + Duration::from_millis(delay_ms)
                        + Duration::from_micros(jitter);
                    if !lost {
                        latest = latest.max(arrival);
                    }
                    packets.push(PacketResult {
                        sent,
                        arrival: (!lost).then_some(arrival),
                    });
                }
                let report = FeedbackReport {
                    report_time: latest.max(self.now + self.clock_offset),
                    packets,
                };
                self.cc.on_feedback(self.now, &report);
                self.check("on_feedback");
                if dup {
                    self.cc.on_feedback(self.now, &report);
                    self.check("on_feedback (duplicate)");
                }
            }
            Op::Advance { dt_ms } => {
                self.advance(self.now + Duration::from_millis(dt_ms));
                self.check("advance");
            }
        }
    }

    fn check(&self, after: &str) {
        let contract = Contract {
            bounds: self.bounds,
            may_plan_repair: self.may_plan_repair,
        };
        if let Err(e) = contract::check(&self.cc, self.now, contract) {
            panic!("{} after {after} at {}: {e}", self.cc.name(), self.now);
        }
    }
}

fn run(name: &str, ops: &[Op], offset_s: u64) {
    let cfg = CcConfig::default_for(name).unwrap_or_else(|| {
        panic!("CcConfig::NAMES lists \"{name}\" but default_for does not know it")
    });
    let mut d = Driver::new(&cfg, Duration::from_secs(offset_s));
    d.check("construction");
    for op in ops {
        d.apply(op);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_controller_keeps_its_invariants(
        ops in prop::collection::vec(op(), 1..400),
        offset_s in 0u64..100_000,
    ) {
        for name in CcConfig::NAMES {
            run(name, &ops, offset_s);
        }
    }
}

/// A long steady run: frames at 30 fps, every packet sent and acknowledged
/// 20 ms later, must keep every controller within its bounds for minutes.
#[test]
fn steady_traffic_for_five_minutes() {
    let mut ops = Vec::new();
    for _ in 0..(300 * 30) {
        ops.push(Op::Frame {
            size: 4000,
            key: false,
        });
        for _ in 0..4 {
            ops.push(Op::Send { gap_us: 2_000 });
        }
        ops.push(Op::Feedback {
            gap_us: 25_000,
            n: 4,
            loss_mask: 0,
            delay_ms: 20,
            jitter_us: 0,
            dup: false,
        });
    }
    for name in CcConfig::NAMES {
        run(name, &ops, 5);
    }
}
