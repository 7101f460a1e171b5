//! Valid ranges of the scenario's numeric fields, and the resource guard.
//!
//! Every bound here has its reason at the line and its row in
//! docs/scenarios.md ("Limits"); `Scenario::validate` checks them at load
//! time, so a value out of range is a one-line error naming the file, the
//! line, the key, the value and the range, before anything runs or is
//! written.
//!
//! The ranges catch unit slips (`"20s"` of propagation delay for `"20ms"`)
//! and values that would exhaust the machine (a TCP initial window of 4e9
//! segments). What a scenario may cost as a whole is the job of the resource
//! guard: [`estimate`] sizes the run (packet transmissions and output bytes)
//! from the scenario alone, and a run above [`MAX_PACKETS`] or
//! [`MAX_OUTPUT_BYTES`] is refused unless the caller allows it
//! (`rtcc run --allow-large`, `RunOptions::allow_large`).

use rtcc_core::{Bitrate, Bytes, Duration};

use crate::scenario::{FlowKind, Scenario, ScenarioError, TopologyKind};

/// Longest run: 30 days. A soak test needs a day; more is a unit slip
/// (`"1000000000h"`), and the resource guard sizes what lies inside.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);
/// Shortest sampling interval: 1 ms. Below it the rows of `timeseries.csv`
/// outnumber the packets of any video flow (a 1 Mbps flow sends one packet
/// per 10 ms), so nothing more is learnt and the file grows without bound.
pub const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(1);
/// Fastest link or flow rate: 100 Gbps, an order above any path real-time
/// video crosses; the simulator's byte counters stay far from overflow.
pub const MAX_RATE: Bitrate = Bitrate::bps(100_000_000_000);
/// Longest one-way propagation delay, jitter or access delay: 10 s. A
/// geostationary hop is 0.27 s; 10 s covers deep-space-like test cases and
/// catches `"20s"` written for `"20ms"`.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// Longest timer a flow option sets (playout delay, RTO floor, reaction
/// delay, buffers held in time): 60 s. Interactive video gives up long
/// before.
pub const MAX_TIMER: Duration = Duration::from_secs(60);
/// Longest duration a controller's or recovery scheme's option
/// (`cc_config`, `recovery_config`) may take: one hour. Their windows and
/// timers are seconds long; an hour is a unit slip.
pub const MAX_CC_DURATION: Duration = Duration::from_secs(3600);
/// Largest drop-tail queue in bytes: 1 GB (a buffer no router has; memory
/// for the queued packets stays bounded).
pub const MAX_QUEUE_BYTES: Bytes = Bytes::new(1_000_000_000);
/// Largest drop-tail queue in packets: one million.
pub const MAX_QUEUE_PACKETS: u64 = 1_000_000;
/// Largest queue given as a time at the link rate: 60 s.
pub const MAX_QUEUE_TIME: Duration = Duration::from_secs(60);
/// Feedback interval: from 1 ms (finer than any RTCP feedback, RFC 8888
/// suggests one report per frame or per RTT) to 10 s.
pub const FEEDBACK_INTERVAL: (Duration, Duration) =
    (Duration::from_millis(1), Duration::from_secs(10));
/// Key-frame interval in frames: 0 (none) to one million (over 9 hours at
/// 30 fps).
pub const MAX_GOP: u32 = 1_000_000;
/// Key frame size over a delta frame's: 1 to 100 (x264 key frames are 3–20 ×
/// a delta frame at video-call rates).
pub const I_FRAME_FACTOR: (f64, f64) = (1.0, 100.0);
/// Log-normal frame-size variability (sigma): 0 to 3 (sigma 3 already puts
/// 1 % of frames above 1000 × the median).
pub const SIZE_VARIABILITY: (f64, f64) = (0.0, 3.0);
/// TCP initial congestion window in segments: 1 (RFC 5681) to 10 000 (RFC
/// 6928 uses 10; above that only the receive window limits, and the sender's
/// per-segment state grows with it).
pub const INITIAL_CWND: (u32, u32) = (1, 10_000);
/// TCP receive window in segments: 1 to one million (1.5 GB of 1500 B
/// segments; the per-segment state of a window that large is the limit).
pub const RWND: (u32, u32) = (1, 1_000_000);
/// TCP minimum RTO: 1 ms (the floor of RFC 6298's clock granularity
/// allowance) to 60 s (RFC 6298's suggested maximum RTO).
pub const MIN_RTO: (Duration, Duration) = (Duration::from_millis(1), Duration::from_secs(60));
/// QUIC-like ack-eliciting threshold (packets per ACK): 1 to 1000.
pub const ACK_ELICITING: (u32, u32) = (1, 1000);
/// Mahimahi delivery opportunity: 1 B to 65 000 B (an IPv4 datagram).
pub const OPPORTUNITY: (u64, u64) = (1, 65_000);

/// Resource guard: the most packet transmissions (packets sent onto any
/// link, counted per hop) a run may be estimated to take without
/// `allow_large`: ten billion, about an hour at the simulator's speed.
pub const MAX_PACKETS: u64 = 10_000_000_000;
/// Resource guard: the most bytes of output files a run may be estimated to
/// write without `allow_large`: 4 GB.
pub const MAX_OUTPUT_BYTES: u64 = 4_000_000_000;

/// Average packet size the estimate assumes: the smallest full-size packet
/// of the simulated flows is about 1000 B, so links full of them give the
/// most packets.
const ESTIMATE_PACKET_BYTES: u64 = 1000;
/// Bytes of one `timeseries.csv` row (17 columns), rounded up from runs.
const TIMESERIES_ROW_BYTES: u64 = 160;
/// Bytes of one `frames.csv` row (11 columns), rounded up from runs.
const FRAME_ROW_BYTES: u64 = 80;
/// Rows of `cc_trace.csv` per flow and sample: the most variables a
/// controller reports, with a margin.
const CC_TRACE_ROWS_PER_SAMPLE: u64 = 40;
/// Bytes of one `cc_trace.csv` row.
const CC_TRACE_ROW_BYTES: u64 = 40;
/// Bytes a packet capture adds to a packet of its size: the pcap record
/// header (16) and the Ethernet header (14) (`crate::pcap`).
const PCAP_RECORD_OVERHEAD: u64 = 16 + 14;

/// What a run is estimated to cost, before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Packet transmissions: every link's long-run mean capacity, full of
    /// 1000 B packets, for the whole run. An upper bound for any run whose
    /// flows do not overrun their links by more than the queue.
    pub packets: u64,
    /// Bytes of `timeseries.csv`, `frames.csv`, `cc_trace.csv` and, with
    /// `pcap`, the packet captures (every transmission a record of
    /// 1000 B + its headers: the links full, as for `packets`).
    pub output_bytes: u64,
}

/// Size a run of `scenario` (traces are loaded to learn their mean rate),
/// with `cc_trace.csv` if `cc_trace` and per-link packet captures if `pcap`.
pub fn estimate(
    scenario: &Scenario,
    cc_trace: bool,
    pcap: bool,
) -> Result<Estimate, ScenarioError> {
    let secs = scenario.duration.as_secs_f64();
    let mut packets = 0.0;
    for i in 0..scenario.links.len() {
        let cfg = scenario.link_config(i)?;
        let rate = cfg.rate.mean_rate(cfg.mahimahi_opportunity);
        // A flow's packets cross its bottleneck and, in a dumbbell, two
        // access links: count each link as carrying its capacity.
        packets += rate.as_bps() as f64 / 8.0 / ESTIMATE_PACKET_BYTES as f64 * secs;
    }
    let samples = (scenario.duration.as_nanos() / scenario.output.sample_interval.as_nanos()) + 1;
    let mut rows_per_sample = 0u64;
    let mut frames = 0.0;
    for f in &scenario.flows {
        let f = f.get_ref();
        rows_per_sample += match *f.kind.get_ref() {
            // One row per path besides the flow's own.
            FlowKind::MultipathMedia => {
                1 + f.paths.as_ref().map_or(2, |p| p.get_ref().len()) as u64
            }
            _ => 1,
        };
        if matches!(
            *f.kind.get_ref(),
            FlowKind::Media | FlowKind::MultipathMedia | FlowKind::Live
        ) {
            let fps = f.encoder.as_ref().map_or(30.0, |e| e.get_ref().fps);
            frames += fps * secs;
        }
    }
    let timeseries = samples.saturating_mul(rows_per_sample) as f64 * TIMESERIES_ROW_BYTES as f64;
    let trace = if cc_trace || scenario.output.cc_trace {
        samples as f64
            * scenario.flows.len() as f64
            * (CC_TRACE_ROWS_PER_SAMPLE * CC_TRACE_ROW_BYTES) as f64
    } else {
        0.0
    };
    let captures = if pcap {
        // A record per link a packet crosses: in a dumbbell, the bottleneck
        // and two access links, each with a capture file of its own.
        let hops = match scenario.topology.kind {
            TopologyKind::Dumbbell => 3.0,
            _ => 1.0,
        };
        hops * packets * (ESTIMATE_PACKET_BYTES + PCAP_RECORD_OVERHEAD) as f64
    } else {
        0.0
    };
    let output = timeseries + frames * FRAME_ROW_BYTES as f64 + trace + captures;
    Ok(Estimate {
        packets: packets.min(u64::MAX as f64) as u64,
        output_bytes: output.min(u64::MAX as f64) as u64,
    })
}

impl Estimate {
    /// Why a run of this size is refused without `allow_large`, if it is.
    pub fn refusal(&self) -> Option<String> {
        if self.packets > MAX_PACKETS {
            Some(format!(
                "the run is estimated at {:.2e} packet transmissions, above the limit of {:.0e} (about an hour); shorten `duration` or lower the link rates, or allow it with --allow-large",
                self.packets as f64, MAX_PACKETS as f64
            ))
        } else if self.output_bytes > MAX_OUTPUT_BYTES {
            Some(format!(
                "the run would write about {} of output, above the limit of {}; raise `output.sample_interval`, shorten `duration`, or allow it with --allow-large",
                human_bytes(self.output_bytes),
                human_bytes(MAX_OUTPUT_BYTES)
            ))
        } else {
            None
        }
    }
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e12 {
        format!("{:.1} TB", b / 1e12)
    } else if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else {
        format!("{:.1} MB", b / 1e6)
    }
}
