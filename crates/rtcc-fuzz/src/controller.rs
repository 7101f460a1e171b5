//! Every built-in congestion controller through the `CongestionController`
//! trait, driven by events decoded from the fuzz input with `arbitrary`: the
//! property test of `crates/rtcc-core/tests/cc_properties.rs`, with the
//! events' values left to the fuzzer and feedback as hostile as a receiver
//! can make it while staying well-typed (any arrival times in its own clock,
//! any subset of the packets in flight reported, losses, duplicates,
//! packets reported lost and later received).
//!
//! Invariants checked after every event: the trait's contract as
//! `rtcc_core::cc::contract::check` states it (the one the property tests
//! check too).

use std::collections::VecDeque;

use arbitrary::{Arbitrary, Unstructured};
use rtcc_core::cc::contract::{self, Contract};
use rtcc_core::{
    Bitrate, Bytes, CcConfig, CongestionController, Controller, Duration, FeedbackReport,
    FrameInfo, FrameType, Instant, PacketKind, PacketResult, SentPacket,
};

/// Events per input: enough for minutes of traffic, bounded so an input
/// runs in milliseconds.
const MAX_EVENTS: usize = 2_000;
/// Simulated time per input. Controllers keep timers of a few milliseconds,
/// each served with a full check: an hour of them is a second of fuzzing
/// time per input. Gaps longer than this (the zero-rate samples of an hour
/// without feedback) are kept as fixed corpus inputs and unit tests.
const MAX_SPAN: Duration = Duration::from_secs(120);

/// What the fuzz input decodes to.
#[derive(Debug, Arbitrary)]
struct Input {
    /// Index into `CcConfig::NAMES` (modulo its length).
    controller: u8,
    /// Origin of the receiver's clock, seconds after the sender's zero
    /// (clocks are unrelated; only differences matter).
    receiver_offset_s: u32,
    events: Vec<Event>,
}

#[derive(Debug, Arbitrary)]
enum Event {
    /// A frame of `size` bytes is handed to the transport.
    Frame { size: u32, key: bool },
    /// After `gap_us`, a packet of `48 + size % 1453` bytes is sent: the
    /// next queued media packet, or padding.
    Send { gap_us: u16, size: u16 },
    /// After `gap_us`, a report on the `n` oldest packets in flight:
    /// `lost` bit i loses the i-th, arrivals `delay_ms` after sending plus
    /// a per-packet `jitter_us` spread (reordering them), the receiver held
    /// the report `hold_us` after its last arrival; `dup` delivers it twice;
    /// `keep` leaves the lost ones in flight, to be reported again.
    Feedback {
        gap_us: u32,
        n: u8,
        lost: u64,
        delay_ms: u16,
        jitter_us: u32,
        hold_us: u32,
        dup: bool,
        keep: bool,
    },
    /// Time passes; timers fire when due.
    Advance { ms: u16 },
    /// The driver looks for a probe to carry (it has no media to send).
    Probe,
}

/// `controller`: picks a controller and drives it with the decoded events.
pub fn controller(data: &[u8]) -> bool {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else {
        return false;
    };
    let names = CcConfig::NAMES;
    let name = names[usize::from(input.controller) % names.len()];
    let cfg = CcConfig::default_for(name)
        .unwrap_or_else(|| panic!("CcConfig::NAMES lists {name} but default_for does not"));
    let mut d = Driver::new(
        &cfg,
        Duration::from_secs(u64::from(input.receiver_offset_s)),
    );
    d.check("construction");
    for e in input.events.iter().take(MAX_EVENTS) {
        if d.now >= d.end {
            break;
        }
        d.apply(e);
    }
    true
}

struct Driver {
    cc: Controller,
    bounds: (Bitrate, Bitrate),
    may_plan_repair: bool,
    now: Instant,
    /// Time stops here ([`MAX_SPAN`]).
    end: Instant,
    receiver_offset: Duration,
    next_seq: u64,
    next_frame: u64,
    /// Queued media packets: (frame id, first, last).
    queue: VecDeque<(u64, bool, bool)>,
    /// Sent, not yet reported received.
    in_flight: VecDeque<SentPacket>,
    bytes_in_flight: u64,
}

impl Driver {
    fn new(cfg: &CcConfig, receiver_offset: Duration) -> Self {
        let now = Instant::from_secs(1);
        Driver {
            cc: cfg.build(now),
            bounds: cfg.bitrate_bounds(),
            may_plan_repair: cfg.may_plan_repair(),
            now,
            end: now + MAX_SPAN,
            receiver_offset,
            next_seq: 0,
            next_frame: 0,
            queue: VecDeque::new(),
            in_flight: VecDeque::new(),
            bytes_in_flight: 0,
        }
    }

    /// Moves time to `to` (at most `end`), firing every timer due on the way.
    fn advance(&mut self, to: Instant) {
        let to = to.min(self.end);
        let mut fired = 0u32;
        while let Some(t) = self.cc.poll_timeout() {
            if t > to {
                break;
            }
            self.now = self.now.max(t);
            self.cc.on_timeout(self.now);
            self.check("on_timeout");
            fired += 1;
            if self.cc.poll_timeout() == Some(self.now) {
                // Due again at once: a second call must move it on.
                self.cc.on_timeout(self.now);
                assert!(
                    self.cc.poll_timeout().is_none_or(|t| t > self.now),
                    "{}: poll_timeout stays at {} after two on_timeout calls",
                    self.cc.name(),
                    self.now
                );
            }
            assert!(
                fired < 1_000_000,
                "{}: timers do not move forward",
                self.cc.name()
            );
        }
        self.now = self.now.max(to);
    }

    fn apply(&mut self, e: &Event) {
        match *e {
            Event::Frame { size, key } => {
                let size = u64::from(size % 4_000_000);
                let packets = size.div_ceil(1200).max(1);
                let id = self.next_frame;
                self.next_frame += 1;
                // A frame of a million packets would only slow the fuzzer.
                for i in 0..packets.min(2_000) {
                    self.queue
                        .push_back((id, i == 0, i + 1 == packets.min(2_000)));
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
                    num_packets: u32::try_from(packets).unwrap_or(u32::MAX),
                    target_bitrate: self.cc.target_bitrate(),
                };
                self.cc.on_frame(self.now, &info);
                self.check("on_frame");
            }
            Event::Send { gap_us, size } => {
                self.advance(self.now + Duration::from_micros(u64::from(gap_us)));
                let (kind, frame_id, first, last) = match self.queue.pop_front() {
                    Some((id, first, last)) => (PacketKind::Media, Some(id), first, last),
                    None => (PacketKind::Padding, None, false, false),
                };
                let size = 48 + u64::from(size % 1453);
                self.bytes_in_flight += size;
                let pkt = SentPacket {
                    seq: self.next_seq,
                    size: Bytes::new(size),
                    send_time: self.now,
                    kind,
                    frame_id,
                    first_in_frame: first,
                    last_in_frame: last,
                    bytes_in_flight: Bytes::new(self.bytes_in_flight),
                };
                self.next_seq += 1;
                self.in_flight.push_back(pkt);
                self.cc.on_packet_sent(self.now, &pkt);
                self.check("on_packet_sent");
            }
            Event::Feedback {
                gap_us,
                n,
                lost,
                delay_ms,
                jitter_us,
                hold_us,
                dup,
                keep,
            } => {
                self.advance(self.now + Duration::from_micros(u64::from(gap_us)));
                let n = usize::from(n).min(self.in_flight.len());
                let mut packets = Vec::with_capacity(n);
                let mut kept = Vec::new();
                let mut latest = Instant::ZERO;
                let jitter = u64::from(jitter_us);
                for i in 0..n {
                    let Some(sent) = self.in_flight.pop_front() else {
                        break;
                    };
                    let is_lost = i < 64 && lost >> i & 1 == 1;
                    // Per-packet jitter in [0, jitter]: arrivals reorder.
                    let j = jitter.wrapping_mul(i as u64 * 7 + 3) % (jitter + 1);
                    let arrival = sent.send_time
                        + self.receiver_offset
                        + Duration::from_millis(u64::from(delay_ms))
                        + Duration::from_micros(j);
                    if is_lost && keep {
                        kept.push(sent);
                    } else {
                        self.bytes_in_flight -= sent.size.get();
                    }
                    if !is_lost {
                        latest = latest.max(arrival);
                    }
                    packets.push(PacketResult {
                        sent,
                        arrival: (!is_lost).then_some(arrival),
                    });
                }
                // Lost packets kept in flight go back in sequence order.
                for p in kept.into_iter().rev() {
                    self.in_flight.push_front(p);
                }
                let report = FeedbackReport {
                    report_time: latest.max(self.now + self.receiver_offset)
                        + Duration::from_micros(u64::from(hold_us)),
                    packets,
                };
                self.cc.on_feedback(self.now, &report);
                self.check("on_feedback");
                if dup {
                    self.cc.on_feedback(self.now, &report);
                    self.check("on_feedback (duplicate)");
                }
            }
            Event::Advance { ms } => {
                self.advance(self.now + Duration::from_millis(u64::from(ms)));
                self.check("advance");
            }
            Event::Probe => {
                let _ = self.cc.poll_probe(self.now);
                self.check("poll_probe");
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
