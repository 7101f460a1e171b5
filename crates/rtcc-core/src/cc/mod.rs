//! Congestion controllers: the [`CongestionController`] trait, the budget and
//! estimate it exposes, and the built-in algorithms.
//!
//! Built-in controllers are dispatched through the [`Controller`] enum on the
//! per-packet path; `Box<dyn CongestionController>` is for plug-ins only.

pub mod bbr;
pub mod camel;
pub mod cdm;
pub mod contract;
pub mod copa;
pub mod cubic;
pub mod delay_bbr;
pub mod fixed;
pub mod gcc;
pub mod pudica;
pub mod sqp;
pub mod svc_probing;
#[cfg(test)]
mod test_feedback;
pub mod tfrc;
pub mod webrtc_bbr;

use crate::media::frame::FrameInfo;
use crate::packet::{FeedbackReport, SentPacket};
use crate::time::{Duration, Instant};
use crate::units::{Bitrate, Bytes};

pub use bbr::{Bbr, BbrConfig};
pub use camel::{Camel, CamelConfig};
pub use cdm::{Cdm, CdmConfig};
pub use copa::{Copa, CopaConfig, CopaMode};
pub use cubic::{Cubic, CubicConfig};
pub use delay_bbr::{DelayBbr, DelayBbrConfig, DelayBbrPadding, MinRttUpdate};
pub use fixed::{Fixed, FixedConfig};
pub use gcc::{Gcc, GccConfig};
pub use pudica::{Pudica, PudicaConfig};
pub use sqp::{Sqp, SqpConfig};
pub use svc_probing::{SvcProbing, SvcProbingConfig};
pub use tfrc::{Tfrc, TfrcConfig};
pub use webrtc_bbr::{WebRtcBbr, WebRtcBbrConfig};

/// How the sender may emit packets right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendBudget {
    /// Rate at which the pacer releases packets.
    pub pacing_rate: Bitrate,
    /// Congestion window: no packet is sent while bytes in flight ≥ cwnd. `None` = rate-only.
    pub cwnd: Option<Bytes>,
    /// Burst allowance: budget the pacer may accumulate while idle and then send back-to-back.
    pub max_burst: Bytes,
    /// Frame-burst mode: up to this many bytes of a newly released frame go out
    /// back-to-back, the rest is paced. `None` = ordinary pacing. Frame-level
    /// controllers (Camel, SQP, Pudica) set it.
    pub frame_burst: Option<Bytes>,
}

impl SendBudget {
    /// A rate-only budget that does not build up while idle: after a pause the
    /// pacer sends one packet and then paces. This is libwebrtc's media budget
    /// (`IntervalBudget` constructed with `can_build_up_underuse = false` in
    /// modules/pacing/pacing_controller.cc), which GCC is tuned against.
    pub fn paced(rate: Bitrate) -> Self {
        SendBudget {
            pacing_rate: rate,
            cwnd: None,
            max_burst: Bytes::ZERO,
            frame_burst: None,
        }
    }

    /// A rate-only budget that may accumulate up to `burst_time` at `rate` while
    /// idle and spend it back-to-back.
    pub fn paced_with_burst(rate: Bitrate, burst_time: Duration) -> Self {
        SendBudget {
            pacing_rate: rate,
            cwnd: None,
            max_burst: rate * burst_time,
            frame_burst: None,
        }
    }
}

/// A bandwidth probe in progress (libwebrtc's probe clusters): while the
/// controller returns one from
/// [`CongestionController::poll_probe`], its pacing rate is the probe rate,
/// and a sender with no media to send fills the gaps with padding packets
/// ([`crate::packet::PacketKind::Padding`]) of about `padding_size`, so the
/// cluster goes out at `rate` whatever the encoder produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRequest {
    /// Id of the probe cluster being sent.
    pub cluster_id: u32,
    /// Rate the cluster is sent at (also the controller's pacing rate meanwhile).
    pub rate: Bitrate,
    /// Recommended size of a padding packet on the wire.
    pub padding_size: Bytes,
    /// The cluster must be of equal-sized packets (a packet train,
    /// papers/svc-topdown-probing.txt §2: "a sequence of probing packets of
    /// equal packet size"): a sender that pads media
    /// ([`SenderSession::enable_media_padding`](crate::session::sender::SenderSession::enable_media_padding))
    /// pads each first transmission of a media packet smaller than
    /// `padding_size` up to it (RFC 3550 §5.1 padding).
    pub pad_media: bool,
}

/// A controller's view of the network, for metrics and traces.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    /// Estimated available bandwidth, if the algorithm keeps one.
    pub bandwidth: Option<Bitrate>,
    /// Smoothed round-trip time.
    pub rtt: Option<Duration>,
    /// Minimum round-trip time seen.
    pub min_rtt: Option<Duration>,
    /// Loss fraction the controller is acting on.
    pub loss_rate: Option<f64>,
    /// Name of the controller's current state ("increase", "startup", ...).
    pub state: &'static str,
}

/// Where a controller reports its state variables
/// ([`CongestionController::trace`]): one call per variable, with the
/// variable's name and its current value.
///
/// Any `FnMut(&'static str, f64)` is a sink, so a caller writes
/// `cc.trace(&mut |name, value| ...)`. A sink is called from a pure query,
/// at whatever interval the caller samples; the controller allocates nothing
/// to report.
pub trait TraceSink {
    /// `variable` has `value` now.
    fn record(&mut self, variable: &'static str, value: f64);
}

impl<F: FnMut(&'static str, f64)> TraceSink for F {
    fn record(&mut self, variable: &'static str, value: f64) {
        self(variable, value)
    }
}

/// Bits per second to the kbit/s of trace variables named `*_kbps`.
pub(crate) fn trace_kbps(b: Bitrate) -> f64 {
    b.as_kbps_f64()
}

/// A duration to the milliseconds of trace variables named `*_ms`.
pub(crate) fn trace_ms(d: Duration) -> f64 {
    d.as_millis_f64()
}

/// Bytes to the value of trace variables named `*_bytes`.
pub(crate) fn trace_bytes(b: Bytes) -> f64 {
    b.get() as f64
}

/// A flag to the 0/1 of a trace variable.
pub(crate) fn trace_flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// The congestion controller interface (DESIGN §3).
///
/// Inputs are `on_*` methods, always with `now` first; `now` never goes
/// backwards. Outputs are queries ([`target_bitrate`](Self::target_bitrate),
/// [`send_budget`](Self::send_budget), [`estimate`](Self::estimate)) that may
/// change after any input. A controller that needs a timer returns it from
/// [`poll_timeout`](Self::poll_timeout); the driver calls
/// [`on_timeout`](Self::on_timeout) once that instant is reached.
pub trait CongestionController {
    /// Short algorithm name, as used in scenarios ("gcc", "fixed").
    fn name(&self) -> &'static str;
    /// A packet left the pacer. Called for every packet, in send order.
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket);
    /// The receiver's feedback arrived.
    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport);
    /// A frame was handed to the transport (frame-level controllers).
    fn on_frame(&mut self, _now: Instant, _frame: &FrameInfo) {}
    /// The instant returned by `poll_timeout` was reached.
    fn on_timeout(&mut self, _now: Instant) {}
    /// When the controller next wants `on_timeout`, if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    /// What the encoder / SVC adapter should produce.
    fn target_bitrate(&self) -> Bitrate;
    /// Pacing rate, congestion window and burst allowance.
    fn send_budget(&self) -> SendBudget;
    /// The controller's network estimate, for metrics and traces.
    fn estimate(&self) -> Estimate;
    /// The probe the controller wants sent now, if any. A driver that can
    /// send padding calls this whenever it looks for a packet to send and has
    /// no media (and may call it at any other time); the first call tells the
    /// controller that its probes will be carried out, so a controller
    /// driven by someone who never asks (a fallback inside another
    /// controller, a transport without padding) never probes. While a probe
    /// is returned the driver pads at the pacing rate; packets it sends,
    /// media or padding, are reported through
    /// [`on_packet_sent`](Self::on_packet_sent) as usual. The default: no
    /// probing.
    fn poll_probe(&mut self, _now: Instant) -> Option<ProbeRequest> {
        None
    }
    /// The layer plan of a controller that decides which SVC layers and
    /// repair streams a layered sender transmits, not only a rate
    /// ([`LayerPlan`](crate::media::svc::LayerPlan); the CDM of
    /// papers/cdm-scalable-video.txt). A layered encoder follows the plan
    /// when there is one and maps [`target_bitrate`](Self::target_bitrate)
    /// with its adapter otherwise. The default: no plan.
    fn layer_plan(&self) -> Option<crate::media::svc::LayerPlan> {
        None
    }
    /// Names of the state variables [`trace`](Self::trace) reports, in the
    /// paper's vocabulary, each at most once per call (the design note
    /// `docs/algorithms/<name>.md`, "What it traces", gives their meaning).
    /// Conventions: a name ending in `_kbps`, `_ms` or `_bytes` carries that
    /// unit; a flag is 0 or 1; a mode or state is a numeric code whose
    /// mapping the design note lists. The default: none.
    fn trace_variables(&self) -> &'static [&'static str] {
        &[]
    }
    /// Reports the controller's own state variables to `sink`: every name
    /// is one of [`trace_variables`](Self::trace_variables) and every value
    /// finite. A variable with no value yet (an estimate before its first
    /// sample) is left out, not reported as zero. A pure query; it allocates
    /// nothing. The default reports nothing.
    fn trace(&self, _sink: &mut dyn TraceSink) {}
}

/// Configuration of a built-in controller; builds a [`Controller`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CcConfig {
    /// Google Congestion Control.
    Gcc(GccConfig),
    /// Constant target, for tests.
    Fixed(FixedConfig),
    /// SQP (approximation; frame-coupled paced trains, OWD queue recovery).
    Sqp(SqpConfig),
    /// Pudica (approximation; bandwidth-utilisation ceiling, near-zero queuing).
    Pudica(PudicaConfig),
    /// Camel, frame-level congestion control (papers/camel.txt); boxed, as
    /// the largest configuration by far.
    Camel(Box<CamelConfig>),
    /// Copa (NSDI 2018).
    Copa(CopaConfig),
    /// CUBIC (RFC 9438) over QUIC congestion control (RFC 9002 §7).
    Cubic(CubicConfig),
    /// BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00).
    Bbr(BbrConfig),
    /// Delay-BBR (papers/delay-bbr-multipath.txt §4.1).
    DelayBbr(DelayBbrConfig),
    /// WebRTC-BBR: BBR v1 as once shipped in libwebrtc (docs/algorithms/webrtc-bbr.md).
    WebRtcBbr(WebRtcBbrConfig),
    /// TFRC, TCP Friendly Rate Control (RFC 5348).
    Tfrc(TfrcConfig),
    /// SVC layers with top-down packet-train probing
    /// (papers/svc-topdown-probing.txt §3).
    SvcProbing(Box<SvcProbingConfig>),
    /// CDM, the Congestion and Delay Monitor of congestion-aware scalable
    /// video (papers/cdm-scalable-video.txt §IV–§VI): decides a layer plan.
    Cdm(CdmConfig),
}

impl CcConfig {
    /// The seed of the controller's own randomness, for controllers that
    /// have one (the BBR family's random ProbeBW start phase, draft-cardwell
    /// §4.3.4.2); a driver derives it from its run seed so that seeds vary
    /// the phase as they vary everything else.
    pub fn seed_mut(&mut self) -> Option<&mut u64> {
        match self {
            CcConfig::Bbr(c) => Some(&mut c.seed),
            CcConfig::DelayBbr(c) => Some(&mut c.bbr.seed),
            CcConfig::WebRtcBbr(c) => Some(&mut c.bbr.seed),
            _ => None,
        }
    }

    /// Names of the built-in controllers, as accepted in scenarios.
    pub const NAMES: &'static [&'static str] = &[
        "gcc",
        "fixed",
        "camel",
        "bbr",
        "copa",
        "cubic",
        "sqp",
        "pudica",
        "delay-bbr",
        "webrtc-bbr",
        "tfrc",
        "svc-probing",
        "cdm",
    ];

    /// The default configuration of the built-in controller `name` (one of
    /// [`NAMES`](Self::NAMES)), or `None` for an unknown name.
    pub fn default_for(name: &str) -> Option<CcConfig> {
        match name {
            "gcc" => Some(CcConfig::Gcc(GccConfig::default())),
            "fixed" => Some(CcConfig::Fixed(FixedConfig::default())),
            "sqp" => Some(CcConfig::Sqp(SqpConfig::default())),
            "pudica" => Some(CcConfig::Pudica(PudicaConfig::default())),
            "camel" => Some(CcConfig::Camel(Box::default())),
            "copa" => Some(CcConfig::Copa(CopaConfig::default())),
            "cubic" => Some(CcConfig::Cubic(CubicConfig::default())),
            "bbr" => Some(CcConfig::Bbr(BbrConfig::default())),
            "delay-bbr" => Some(CcConfig::DelayBbr(DelayBbrConfig::default())),
            "webrtc-bbr" => Some(CcConfig::WebRtcBbr(WebRtcBbrConfig::default())),
            "tfrc" => Some(CcConfig::Tfrc(TfrcConfig::default())),
            "svc-probing" => Some(CcConfig::SvcProbing(Box::default())),
            "cdm" => Some(CcConfig::Cdm(CdmConfig::default())),
            _ => None,
        }
    }

    /// The bounds `(min, max)` the controller's target bitrate stays within.
    pub fn bitrate_bounds(&self) -> (Bitrate, Bitrate) {
        match self {
            CcConfig::Gcc(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::Fixed(c) => (c.bitrate, c.bitrate),
            CcConfig::Sqp(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::Pudica(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::Camel(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::Copa(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::Cubic(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::Bbr(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::DelayBbr(c) => (c.bbr.min_bitrate, c.bbr.max_bitrate),
            CcConfig::WebRtcBbr(c) => (c.bbr.min_bitrate, c.bbr.max_bitrate),
            CcConfig::Tfrc(c) => (c.min_bitrate, c.max_bitrate),
            CcConfig::SvcProbing(c) => (c.ladder.rate(1), c.ladder.rate(c.ladder.len())),
            // A terminated flow sends nothing (§VI).
            CcConfig::Cdm(c) => {
                let ladder = c.ladder();
                (Bitrate::ZERO, ladder.rate(ladder.len()))
            }
        }
    }

    /// Whether a controller built from this configuration may plan repair
    /// streams: a [`LayerPlan`](crate::media::svc::LayerPlan) with protected
    /// layers from [`CongestionController::layer_plan`]. CDM decides its
    /// plan as it goes (papers/cdm-scalable-video.txt §IV: Safe Retreat
    /// protects half its PIDs), the fixed controller keeps the one it is
    /// given; no other controller has a plan. A transport sets up the stream
    /// that carries repair packets by this before the first frame (rtcc-net
    /// offers its RFC 4588 RTX stream), so every variant is listed: a new
    /// controller with a plan must answer here too.
    pub fn may_plan_repair(&self) -> bool {
        match self {
            CcConfig::Cdm(_) => true,
            CcConfig::Fixed(c) => c.plan.is_some_and(|p| p.protected > 0),
            CcConfig::Gcc(_)
            | CcConfig::Sqp(_)
            | CcConfig::Pudica(_)
            | CcConfig::Camel(_)
            | CcConfig::Copa(_)
            | CcConfig::Cubic(_)
            | CcConfig::Bbr(_)
            | CcConfig::DelayBbr(_)
            | CcConfig::WebRtcBbr(_)
            | CcConfig::Tfrc(_)
            | CcConfig::SvcProbing(_) => false,
        }
    }

    /// Build the controller. `now` is the session start.
    pub fn build(&self, now: Instant) -> Controller {
        match self {
            CcConfig::Gcc(c) => Controller::Gcc(Box::new(Gcc::new(now, c.clone()))),
            CcConfig::Fixed(c) => Controller::Fixed(Fixed::new(c.clone())),
            CcConfig::Sqp(c) => Controller::Sqp(Box::new(Sqp::new(now, c.clone()))),
            CcConfig::Pudica(c) => Controller::Pudica(Box::new(Pudica::new(now, c.clone()))),
            CcConfig::Camel(c) => Controller::Camel(Box::new(Camel::new(now, (**c).clone()))),
            CcConfig::Copa(c) => Controller::Copa(Box::new(Copa::new(now, c.clone()))),
            CcConfig::Cubic(c) => Controller::Cubic(Box::new(Cubic::new(now, c.clone()))),
            CcConfig::Bbr(c) => Controller::Bbr(Box::new(Bbr::new(now, c.clone()))),
            CcConfig::DelayBbr(c) => Controller::DelayBbr(Box::new(DelayBbr::new(now, c.clone()))),
            CcConfig::WebRtcBbr(c) => {
                Controller::WebRtcBbr(Box::new(WebRtcBbr::new(now, c.clone())))
            }
            CcConfig::Tfrc(c) => Controller::Tfrc(Box::new(Tfrc::new(now, c.clone()))),
            CcConfig::SvcProbing(c) => {
                Controller::SvcProbing(Box::new(SvcProbing::new(now, (**c).clone())))
            }
            CcConfig::Cdm(c) => Controller::Cdm(Box::new(Cdm::new(now, c.clone()))),
        }
    }
}

/// A built-in controller, dispatched without a vtable.
#[derive(Debug)]
#[non_exhaustive]
pub enum Controller {
    /// Google Congestion Control.
    Gcc(Box<Gcc>),
    /// Constant target.
    Fixed(Fixed),
    /// SQP (approximation).
    Sqp(Box<Sqp>),
    /// Pudica (approximation).
    Pudica(Box<Pudica>),
    /// Camel.
    Camel(Box<Camel>),
    /// Copa.
    Copa(Box<Copa>),
    /// CUBIC over RFC 9002.
    Cubic(Box<Cubic>),
    /// BBR v1.
    Bbr(Box<Bbr>),
    /// Delay-BBR.
    DelayBbr(Box<DelayBbr>),
    /// WebRTC-BBR.
    WebRtcBbr(Box<WebRtcBbr>),
    /// TFRC (RFC 5348).
    Tfrc(Box<Tfrc>),
    /// SVC top-down probing.
    SvcProbing(Box<SvcProbing>),
    /// CDM (congestion-aware scalable video).
    Cdm(Box<Cdm>),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Controller::Gcc($c) => $e,
            Controller::Fixed($c) => $e,
            Controller::Sqp($c) => $e,
            Controller::Pudica($c) => $e,
            Controller::Camel($c) => $e,
            Controller::Copa($c) => $e,
            Controller::Cubic($c) => $e,
            Controller::Bbr($c) => $e,
            Controller::DelayBbr($c) => $e,
            Controller::WebRtcBbr($c) => $e,
            Controller::Tfrc($c) => $e,
            Controller::SvcProbing($c) => $e,
            Controller::Cdm($c) => $e,
        }
    };
}

impl CongestionController for Controller {
    fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        dispatch!(self, c => c.on_packet_sent(now, pkt))
    }
    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        dispatch!(self, c => c.on_feedback(now, report))
    }
    fn on_frame(&mut self, now: Instant, frame: &FrameInfo) {
        dispatch!(self, c => c.on_frame(now, frame))
    }
    fn on_timeout(&mut self, now: Instant) {
        dispatch!(self, c => c.on_timeout(now))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        dispatch!(self, c => c.poll_timeout())
    }
    fn target_bitrate(&self) -> Bitrate {
        dispatch!(self, c => c.target_bitrate())
    }
    fn send_budget(&self) -> SendBudget {
        dispatch!(self, c => c.send_budget())
    }
    fn estimate(&self) -> Estimate {
        dispatch!(self, c => c.estimate())
    }
    fn poll_probe(&mut self, now: Instant) -> Option<ProbeRequest> {
        dispatch!(self, c => c.poll_probe(now))
    }
    fn layer_plan(&self) -> Option<crate::media::svc::LayerPlan> {
        dispatch!(self, c => c.layer_plan())
    }
    fn trace_variables(&self) -> &'static [&'static str] {
        dispatch!(self, c => c.trace_variables())
    }
    fn trace(&self, sink: &mut dyn TraceSink) {
        dispatch!(self, c => c.trace(sink))
    }
}
