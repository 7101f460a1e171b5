//! Scenario files (DESIGN §4.1): TOML with units in strings.
//!
//! Every field has a default; an unknown key or a bad value is a
//! [`ScenarioError`] that names the file, the line, the key and the value, in
//! one line. Parsing checks the syntax and each value; [`Scenario`] then checks
//! the relations between values (a flow's kind and its options, trace files that
//! must exist, ...), still pointing at the line of the key at fault.

use std::fmt;
use std::path::{Path, PathBuf};

use rtcc_core::{Bitrate, Bytes, Duration, Probability};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use toml::Spanned;

/// A scenario that failed to load or validate. Displays as one line:
/// `FILE:LINE: key `KEY`: MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ScenarioError {
    /// The scenario's file name, or an origin such as `<dict>`.
    pub file: String,
    /// 1-based line of the key at fault, when known.
    pub line: Option<usize>,
    /// Dotted path of the key at fault (`link[0].rate`), when known.
    pub key: Option<String>,
    /// What is wrong, including the offending value.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{k}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl ScenarioError {
    pub(crate) fn at(
        origin: &Origin,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        message: impl Into<String>,
    ) -> Self {
        ScenarioError {
            file: origin.name.clone(),
            line: span.map(|s| origin.line_of(s.start)),
            key: if key.is_empty() {
                None
            } else {
                Some(key.to_string())
            },
            message: message.into(),
        }
    }
}

/// Where a scenario's text came from, for error messages and relative paths.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub(crate) name: String,
    pub(crate) dir: Option<PathBuf>,
    text: String,
}

impl Origin {
    fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }
}

// ---------------------------------------------------------------------------
// The file's shape. Field names are a contract (DESIGN §4.1): extend, don't rename.

/// The topology the links form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// All flows share one forward link (the first `[[link]]`) and one reverse link.
    #[default]
    Single,
    /// N senders and N receivers with their own access links on both sides of a
    /// shared bottleneck, in both directions.
    Dumbbell,
    /// Several paths (Delay-BBR multipath §5.2): each `[[link]]` is the
    /// forward bottleneck of one path named like it, or `[[path]]` tables make
    /// paths of sequences of links (paths may share a link). Every link used
    /// by a path gets a reverse link derived as a single link's is. A flow
    /// takes the path its `path` key names (the first by default); a
    /// `multipath-media` flow takes the paths of its `paths` key.
    Paths,
}

impl TopologyKind {
    /// The name used in scenarios.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologyKind::Single => "single",
            TopologyKind::Dumbbell => "dumbbell",
            TopologyKind::Paths => "paths",
        }
    }
}

/// `[topology]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopologySpec {
    /// single | dumbbell | paths.
    pub kind: TopologyKind,
    /// Dumbbell access links: rate.
    pub access_rate: Bitrate,
    /// Dumbbell access links: one-way propagation delay.
    pub access_delay: Duration,
    /// Dumbbell access links: queue size.
    pub access_queue: QueueSpec,
    /// Rate of the reverse path (feedback, ACKs). Default: same as the forward bottleneck
    /// for a dumbbell, unlimited for a single link and for every reverse link of
    /// a paths topology.
    pub reverse_rate: Option<Bitrate>,
    /// One-way delay of the reverse path. Default: the forward link's delay
    /// (or its `delay_schedule`).
    pub reverse_delay: Option<Duration>,
    /// Queue of the reverse path. Default: same as forward for a dumbbell, unlimited otherwise.
    pub reverse_queue: Option<QueueSpec>,
    /// Random loss on the reverse path (every reverse link the topology
    /// derives), as a link's `loss`. Default: none.
    pub reverse_loss: Option<Spanned<LossSpec>>,
}

impl Default for TopologySpec {
    fn default() -> Self {
        TopologySpec {
            kind: TopologyKind::Single,
            access_rate: Bitrate::mbps(100),
            access_delay: Duration::from_millis(1),
            access_queue: QueueSpec::Bytes(Bytes::new(10_000_000)),
            reverse_rate: None,
            reverse_delay: None,
            reverse_queue: None,
            reverse_loss: None,
        }
    }
}

/// A sender queue bound: a duration (`"2s"`) or `"off"`
/// (flow keys `queue_time_limit`, `frame_drop_queue_time`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeLimitSpec {
    /// Switched off.
    Off,
    /// On, with this time.
    Time(Duration),
}

impl TimeLimitSpec {
    /// The limit, `None` when off.
    pub fn time(self) -> Option<Duration> {
        match self {
            TimeLimitSpec::Off => None,
            TimeLimitSpec::Time(d) => Some(d),
        }
    }
}

impl std::str::FromStr for TimeLimitSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t == "off" {
            return Ok(TimeLimitSpec::Off);
        }
        t.parse::<Duration>()
            .map(TimeLimitSpec::Time)
            .map_err(|_| format!("invalid limit \"{s}\": expected a duration (\"2s\") or \"off\""))
    }
}

impl<'de> Deserialize<'de> for TimeLimitSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// A queue size: `"60KB"`, `"50pkts"`, `"100ms"` (at link rate) or `"unlimited"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueSpec {
    /// No limit.
    #[default]
    Unlimited,
    /// Bytes.
    Bytes(Bytes),
    /// Packets.
    Packets(u32),
    /// Time at the link's rate.
    Time(Duration),
}

impl std::str::FromStr for QueueSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t == "unlimited" {
            return Ok(QueueSpec::Unlimited);
        }
        if let Some(n) = t.strip_suffix("pkts").or_else(|| t.strip_suffix("pkt")) {
            return n
                .trim()
                .parse::<u32>()
                .map(QueueSpec::Packets)
                .map_err(|_| format!("invalid queue size \"{s}\": packet count must be a whole number, e.g. \"50pkts\""));
        }
        if let Ok(b) = t.parse::<Bytes>() {
            return Ok(QueueSpec::Bytes(b));
        }
        if let Ok(d) = t.parse::<Duration>() {
            return Ok(QueueSpec::Time(d));
        }
        Err(format!(
            "invalid queue size \"{s}\": expected bytes (\"60KB\"), packets (\"50pkts\"), time at link rate (\"100ms\") or \"unlimited\""
        ))
    }
}

impl<'de> Deserialize<'de> for QueueSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// Trace file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormatSpec {
    /// mm-link delivery opportunities, one ms timestamp per line.
    Mahimahi,
    /// `seconds Mbps` lines (Lumos5G, Norway HSDPA, FCC).
    Throughput,
    /// OpenNetLab JSON.
    Opennetlab,
}

/// One step of a piecewise rate schedule: from `at`, the rate is `rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleStep {
    /// Offset from the start of the run.
    pub at: Duration,
    /// Rate from then on.
    pub rate: Bitrate,
}

/// One step of a propagation-delay schedule: from `at`, the one-way delay
/// is `delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayStep {
    /// Offset from the start of the run.
    pub at: Duration,
    /// One-way propagation delay from then on.
    pub delay: Duration,
}

/// Random loss model names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossModelKind {
    /// No random loss.
    #[default]
    None,
    /// Independent losses with probability `p`.
    Bernoulli,
    /// Two-state Markov loss.
    GilbertElliott,
    /// Every packet arriving inside one of `windows` is lost.
    Outage,
}

impl LossModelKind {
    /// The name used in scenarios.
    pub fn as_str(self) -> &'static str {
        match self {
            LossModelKind::None => "none",
            LossModelKind::Bernoulli => "bernoulli",
            LossModelKind::GilbertElliott => "gilbert-elliott",
            LossModelKind::Outage => "outage",
        }
    }
}

/// `loss = { model = ..., ... }`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossSpec {
    /// none | bernoulli | gilbert-elliott.
    #[serde(default)]
    pub model: LossModelKind,
    /// Bernoulli loss probability.
    #[serde(default, deserialize_with = "de_opt_prob")]
    pub p: Option<Probability>,
    /// Gilbert–Elliott: time step of the state chain.
    pub step: Option<Duration>,
    /// Gilbert–Elliott: P(good → bad) per step.
    #[serde(default, deserialize_with = "de_opt_prob")]
    pub p_gb: Option<Probability>,
    /// Gilbert–Elliott: P(bad → good) per step.
    #[serde(default, deserialize_with = "de_opt_prob")]
    pub p_bg: Option<Probability>,
    /// Gilbert–Elliott: loss probability in the good state.
    #[serde(default, deserialize_with = "de_opt_prob")]
    pub loss_good: Option<Probability>,
    /// Gilbert–Elliott: loss probability in the bad state.
    #[serde(default, deserialize_with = "de_opt_prob")]
    pub loss_bad: Option<Probability>,
    /// Outage: the windows `[start, end)` during which the link is down,
    /// sorted and disjoint (`[["60s", "90s"], ["120s", "125s"]]`).
    pub windows: Option<Vec<(Duration, Duration)>>,
}

fn de_opt_prob<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Probability>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum P {
        F(f64),
        S(String),
    }
    match P::deserialize(d)? {
        P::F(x) => Probability::new(x).map(Some).map_err(de::Error::custom),
        P::S(s) => s
            .parse::<Probability>()
            .map(Some)
            .map_err(de::Error::custom),
    }
}

/// `[[link]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Name, used in outputs ("bottleneck").
    pub name: String,
    /// Constant rate.
    pub rate: Option<Spanned<Bitrate>>,
    /// Trace file (path relative to the working directory or to the scenario file).
    pub trace: Option<Spanned<String>>,
    /// Format of `trace`.
    pub trace_format: Option<Spanned<TraceFormatSpec>>,
    /// Piecewise-constant schedule.
    pub schedule: Option<Spanned<Vec<ScheduleStep>>>,
    /// One-way propagation delay (default 0s); not with `delay_schedule`.
    pub delay: Option<Spanned<Duration>>,
    /// A propagation delay that changes during the run (route change):
    /// steps `{ at, delay }`, the first at 0s, `at` strictly increasing.
    pub delay_schedule: Option<Spanned<Vec<DelayStep>>>,
    /// Queue size.
    #[serde(default)]
    pub queue: QueueSpec,
    /// Extra per-packet delay, uniform in [0, jitter].
    #[serde(default)]
    pub jitter: Duration,
    /// Random loss.
    pub loss: Option<Spanned<LossSpec>>,
    /// Bytes per Mahimahi delivery opportunity.
    #[serde(default = "default_opportunity")]
    pub mahimahi_opportunity: Bytes,
}

/// `[[path]]` of a `kind = "paths"` topology: a named sequence of links,
/// crossed in order by the forward direction and in reverse order by the
/// reverse links.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Name, used by the flows' `path` / `paths` keys and in outputs.
    pub name: String,
    /// Names of the `[[link]]`s the path crosses, sender to receiver.
    pub links: Spanned<Vec<String>>,
}

/// A path of a `kind = "paths"` topology after validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path's name.
    pub name: String,
    /// Indices into [`Scenario::links`], sender to receiver.
    pub links: Vec<usize>,
}

/// Most paths a `multipath-media` flow may use (a packet carries its path
/// index in a byte; 64 is far beyond any multipath experiment).
pub const MAX_FLOW_PATHS: usize = 64;

fn default_opportunity() -> Bytes {
    Bytes::new(1500)
}

/// Which way a flow's data goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowDirection {
    /// From the sender side to the receiver side, as media flows.
    #[default]
    Forward,
    /// From the receiver side to the sender side, on the reverse path the
    /// forward flows' feedback takes (return-path congestion); the flow's
    /// own ACKs go on the forward path.
    Reverse,
}

impl FlowDirection {
    /// The name used in scenarios.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowDirection::Forward => "forward",
            FlowDirection::Reverse => "reverse",
        }
    }
}

/// Flow kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    /// A video session: encoder → packetizer → CC → pacer → network → receiver.
    Media,
    /// A TCP bulk transfer.
    Tcp,
    /// Constant-bit-rate UDP.
    UdpCbr,
    /// A multipath video session (Delay-BBR multipath §3.1): one encoder,
    /// a scheduler placing each segment on one of several paths, a congestion
    /// controller per path (`rtcc_core::session::multipath`).
    MultipathMedia,
    /// A reliable live stream over the QUIC-like transport
    /// (`rtcc_core::transport`, `papers/autorec.txt` §II, §VII): a live
    /// source at a fixed `bitrate`, a congestion controller behind a pacer,
    /// ARQ and optionally AutoRec or XOR FEC; ACK frames on the reverse path.
    Live,
    /// A greedy TFRC source (RFC 5348), as ns-2's TFRC agent: always has
    /// data, sends `packet_size` packets at the rate TFRC allows, and hears
    /// rtcc's transport-wide feedback (`world/endpoint/tfrc.rs`).
    Tfrc,
}

impl FlowKind {
    /// The name used in scenarios and outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowKind::Media => "media",
            FlowKind::Tcp => "tcp",
            FlowKind::UdpCbr => "udp-cbr",
            FlowKind::MultipathMedia => "multipath-media",
            FlowKind::Live => "live",
            FlowKind::Tfrc => "tfrc",
        }
    }
}

/// `on_off = { ... }` of a udp-cbr flow: ns-2's Pareto on/off source
/// (`Application/Traffic/Pareto`): bursts and idle times drawn from Pareto
/// distributions with these means and this shape; `rate` while on.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffSpec {
    /// Mean burst (on) time.
    pub on: Duration,
    /// Mean idle (off) time.
    pub off: Duration,
    /// Pareto shape α (> 1 so that the means exist; ns-2's default 1.5).
    #[serde(default = "default_pareto_shape")]
    pub shape: f64,
}

/// `interarrival = { ... }` of a udp-cbr flow: a Pareto renewal source,
/// each packet's gap to the next drawn from a Pareto law of this shape whose
/// mean is the packet's time at `rate` (papers/svc-topdown-probing.txt
/// §3.1: "the inter-arrival time of those cross traffics from each source
/// follows Pareto distribution with exponential factor a = 1.5").
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterarrivalSpec {
    /// Pareto shape α (> 1 so that the mean exists).
    #[serde(default = "default_pareto_shape")]
    pub shape: f64,
}

fn default_pareto_shape() -> f64 {
    1.5
}

/// `encoder = { ... }` of a media flow.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EncoderSpec {
    /// "parametric" (the model), "ladder" (replay of a frame-size trace
    /// ladder, `trace`) or "svc" (layered video, `layers`).
    pub kind: String,
    /// `kind = "ladder"`: the ladder CSV (`rung_kbps,frame,size_bytes,type`),
    /// resolved like link traces (working directory, then the scenario's
    /// folder and the folders above it).
    pub trace: Option<String>,
    /// Frames per second.
    pub fps: f64,
    /// Frames per group of pictures.
    pub gop: u32,
    /// Key-frame size as a multiple of a delta frame.
    pub i_frame_factor: f64,
    /// Coefficient of variation of frame sizes.
    pub size_variability: f64,
    /// Delay before the encoder follows a new target.
    pub reaction_delay: Duration,
    /// Lowest bitrate.
    pub min_bitrate: Bitrate,
    /// Highest bitrate.
    pub max_bitrate: Bitrate,
    /// Bitrate before the first target.
    pub start_bitrate: Option<Bitrate>,
    /// Encoded-to-target ratio model.
    pub etr: Option<EtrSpec>,
    /// `kind = "svc"`: the layers, a count of `layer_rate` steps (`20`) or
    /// their cumulative rates (`["100kbps", "300kbps", ...]`).
    pub layers: Option<LayersSpec>,
    /// `kind = "svc"` with a layer count: each layer's rate.
    pub layer_rate: Option<Bitrate>,
    /// `kind = "svc"`: the PSNR model's rate–distortion curve, "paper"
    /// (default) or "x264" (`rtcc_core::media::psnr`).
    pub psnr_model: Option<String>,
    /// `kind = "svc"` with `psnr_model = "x264"`: layered coding's extra
    /// rate for the same quality, a fraction (default 0).
    pub psnr_svc_overhead: Option<f64>,
}

/// `layers = 20` or `layers = ["100kbps", "200kbps", ...]` of an svc encoder.
#[derive(Debug, Clone, PartialEq)]
pub enum LayersSpec {
    /// That many layers of `layer_rate` each.
    Count(i64),
    /// Cumulative rates, base layer first.
    Rates(Vec<Bitrate>),
}

impl<'de> Deserialize<'de> for LayersSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::Integer(n) => Ok(LayersSpec::Count(n)),
            toml::Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    toml::Value::String(s) => s.parse::<Bitrate>().map_err(de::Error::custom),
                    other => Err(de::Error::custom(format!(
                        "a cumulative layer rate is a string like \"300kbps\", not {other}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(LayersSpec::Rates),
            other => Err(de::Error::custom(format!(
                "expected a layer count (20) or a list of cumulative rates ([\"100kbps\", ...]), not {other}"
            ))),
        }
    }
}

impl Default for EncoderSpec {
    /// The encoder library's own defaults: one source of truth, so a scenario
    /// without an `encoder` table gets exactly `ParametricEncoderConfig::default()`.
    fn default() -> Self {
        let d = rtcc_core::media::encoder::ParametricEncoderConfig::default();
        EncoderSpec {
            kind: "parametric".into(),
            fps: d.fps,
            gop: d.gop,
            i_frame_factor: d.i_frame_factor,
            size_variability: d.size_variability,
            reaction_delay: d.reaction_delay,
            min_bitrate: d.min_bitrate,
            max_bitrate: d.max_bitrate,
            start_bitrate: None,
            etr: None,
            trace: None,
            layers: None,
            layer_rate: None,
            psnr_model: None,
            psnr_svc_overhead: None,
        }
    }
}

/// `etr = { ... }`: exactly one of `constant`, `profile`, `schedule`, `distribution`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtrSpec {
    /// A constant ratio.
    pub constant: Option<f64>,
    /// A named profile: "ios", "android", "none".
    pub profile: Option<String>,
    /// `[["0s", 1.0], ["30s", 0.6]]`: ratio from each offset on.
    pub schedule: Option<Vec<(Duration, f64)>>,
    /// "uniform" | "normal" | "beta" | "empirical".
    pub distribution: Option<String>,
    /// Uniform lower bound.
    pub lo: Option<f64>,
    /// Uniform upper bound.
    pub hi: Option<f64>,
    /// Normal mean.
    pub mean: Option<f64>,
    /// Normal standard deviation.
    pub std: Option<f64>,
    /// Beta shape a.
    pub a: Option<f64>,
    /// Beta shape b.
    pub b: Option<f64>,
    /// Beta scale.
    pub scale: Option<f64>,
    /// Empirical values.
    pub values: Option<Vec<f64>>,
    /// Redraw period of a distribution.
    pub every: Option<Duration>,
}

/// `[[flow]]`. Options that do not apply to the flow's kind are errors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Name, used in outputs.
    pub name: String,
    /// media | tcp | udp-cbr | multipath-media | live | tfrc.
    pub kind: Spanned<FlowKind>,
    /// Congestion controller (media, live and multipath-media, where it is
    /// every path's: gcc | fixed | camel | bbr | delay-bbr | webrtc-bbr |
    /// copa | cubic | tfrc | sqp | pudica; tcp: newreno | reno | tahoe | cubic; a
    /// media "cubic" is the core's RFC 9438 + RFC 9002 controller, a tcp
    /// "cubic" the simulator's TCP sender with the same window function;
    /// tfrc: "tfrc", the default).
    /// Required for media flows; a live flow defaults to "bbr" (§VII).
    pub cc: Option<Spanned<String>>,
    /// Start time.
    #[serde(default)]
    pub start: Duration,
    /// A random delay added to `start`, uniform in [0, start_jitter), drawn
    /// from the run's seed (papers' "random start times"; default none).
    pub start_jitter: Option<Spanned<Duration>>,
    /// Stop time (default: end of run).
    pub stop: Option<Spanned<Duration>>,
    /// Media: encoder model.
    pub encoder: Option<Spanned<EncoderSpec>>,
    /// Media, tfrc: algorithm-specific overrides.
    pub cc_config: Option<Spanned<toml::Table>>,
    /// Media: payload bytes per packet (default 1200).
    pub mtu: Option<Spanned<Bytes>>,
    /// Media: bytes each packet costs on the wire beyond its payload (default
    /// 48 B: IPv4 + UDP + RTP + an 8-byte extension block; rtcc-net's real
    /// packets carry 68 B, see docs/results/fidelity.md).
    pub header_overhead: Option<Spanned<Bytes>>,
    /// Media, tfrc: feedback interval (default 50 ms).
    pub feedback_interval: Option<Spanned<Duration>>,
    /// Media: loss recovery, `"none"` (default) or `"nack"` (NACK-based
    /// retransmission, docs/algorithms/arq.md). Live: `"rtx"` (default, the
    /// transport's ARQ alone), `"autorec"` or `"fec"`.
    pub recovery: Option<Spanned<String>>,
    /// Live: settings of the `recovery` scheme (docs/scenarios.md).
    pub recovery_config: Option<Spanned<toml::Table>>,
    /// Live: the stream's bitrate, fixed (required).
    pub bitrate: Option<Spanned<Bitrate>>,
    /// Live: the player's render deadline after capture (default 100 ms,
    /// AutoRec §VII-A).
    pub playout_delay: Option<Spanned<Duration>>,
    /// Live: the receiver's longest ACK delay (default 25 ms, RFC 9000 §18.2).
    pub max_ack_delay: Option<Spanned<Duration>>,
    /// Live: ACK after this many ack-eliciting packets (default 2, RFC 9000
    /// §13.2.2).
    pub ack_eliciting_threshold: Option<Spanned<u32>>,
    /// Media: the pacer's queue-time limit, `"2s"` (default, libwebrtc's
    /// `kMaxExpectedQueueLength`) or `"off"` (docs/algorithms/pacer.md).
    pub queue_time_limit: Option<Spanned<TimeLimitSpec>>,
    /// Media: drop new frames while the sender queue holds more than the
    /// pacing rate sends in this time, `"2s"` (default, libwebrtc's
    /// `kMaxQueueLengthMs`) or `"off"` (docs/algorithms/pacer.md).
    pub frame_drop_queue_time: Option<Spanned<TimeLimitSpec>>,
    /// udp-cbr: rate.
    pub rate: Option<Spanned<Bitrate>>,
    /// udp-cbr: payload bytes per packet (default 1200); tfrc: bytes per
    /// packet on the wire (default 1000).
    pub packet_size: Option<Spanned<Bytes>>,
    /// udp-cbr: send in Pareto on/off bursts instead of constantly.
    pub on_off: Option<Spanned<OnOffSpec>>,
    /// udp-cbr: Pareto-distributed gaps between packets (mean rate `rate`)
    /// instead of constant ones; not with `on_off`.
    pub interarrival: Option<Spanned<InterarrivalSpec>>,
    /// udp-cbr: packet sizes drawn from a mix instead of `packet_size`;
    /// `"internet"` = 40 B 40 %, 550 B 50 %, 1500 B 10 % on the wire
    /// (papers/svc-topdown-probing.txt §4.1).
    pub packet_mix: Option<Spanned<String>>,
    /// tcp: segment payload (default 1448 B).
    pub mss: Option<Spanned<Bytes>>,
    /// tcp: delayed ACKs (default false).
    pub delayed_ack: Option<Spanned<bool>>,
    /// tcp: initial window in segments (default 10).
    pub initial_cwnd: Option<Spanned<u32>>,
    /// tcp: the receiver's advertised window in segments (default:
    /// unlimited); the sender keeps at most min(cwnd, rwnd) in flight.
    pub rwnd: Option<Spanned<u32>>,
    /// tcp: minimum RTO (default 1 s).
    pub min_rto: Option<Spanned<Duration>>,
    /// tcp: appropriate-byte-counting limit L in segments (default 1, RFC 5681 §3.1).
    pub abc_limit: Option<Spanned<u32>>,
    /// media: windows `[start, end)` during which the encoder captures
    /// nothing (media pause and resume, RFC 8867 §5.8); the first frame
    /// after a pause is a key frame. Checked in `build` (media flows only;
    /// windows non-empty, sorted, apart, inside the flow's active time).
    pub pause: Option<Spanned<Vec<(Duration, Duration)>>>,
    /// tcp: payload to send, a download of this size after which the flow
    /// sends nothing more (default: unlimited, a bulk flow). Checked in
    /// `build` (only tcp flows, > 0).
    pub size: Option<Spanned<Bytes>>,
    /// Dumbbell: this flow's access-link delay (both sides), overriding the topology's.
    pub access_delay: Option<Spanned<Duration>>,
    /// tcp, udp-cbr: which way the data goes (default forward).
    pub direction: Option<Spanned<FlowDirection>>,
    /// `kind = "paths"` topology, single-path flows: the path taken
    /// (default: the first path).
    pub path: Option<Spanned<String>>,
    /// multipath-media: the paths used, by name (at least one, each once);
    /// the order is the session's path index.
    pub paths: Option<Spanned<Vec<String>>>,
    /// multipath-media: the scheduler placing segments on paths, one of
    /// `rtcc_core::multipath::SchedulerConfig::NAMES` (default "min-cost").
    pub scheduler: Option<Spanned<String>>,
    /// multipath-media: cap on the encoder target, the sum of the paths'
    /// targets (default 2 Mbps, `DEFAULT_MAX_TOTAL_BITRATE`).
    pub max_total_bitrate: Option<Spanned<Bitrate>>,
    /// multipath-media: how long a sent segment stays retransmittable
    /// (default 500 ms, `DEFAULT_RETRANSMIT_BUFFER`).
    pub retransmit_buffer: Option<Spanned<Duration>>,
    /// multipath-media: how long the receiver waits for an incomplete delta
    /// frame (default 500 ms, `DEFAULT_MAX_WAIT`).
    pub max_wait: Option<Spanned<Duration>>,
}

/// `[output]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSpec {
    /// Interval of `timeseries.csv` rows (and of `cc_trace.csv` samples).
    pub sample_interval: Duration,
    /// Write `cc_trace.csv`: every controller's (and recovery scheme's)
    /// state variables at each sample (default off).
    pub cc_trace: bool,
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            sample_interval: Duration::from_millis(100),
            cc_trace: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default = "default_duration")]
    duration: Spanned<Duration>,
    #[serde(default = "default_seed")]
    seed: u64,
    #[serde(default)]
    topology: TopologySpec,
    #[serde(default, rename = "link")]
    links: Vec<Spanned<LinkSpec>>,
    #[serde(default, rename = "flow")]
    flows: Vec<Spanned<FlowSpec>>,
    #[serde(default, rename = "path")]
    paths: Vec<Spanned<PathSpec>>,
    #[serde(default)]
    output: OutputSpec,
}

fn default_duration() -> Spanned<Duration> {
    Spanned::new(0..0, Duration::from_secs(60))
}
fn default_seed() -> u64 {
    1
}

/// A parsed and validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Scenario name (defaults to the file stem).
    pub name: String,
    /// Simulated duration.
    pub duration: Duration,
    /// Seed used unless the run overrides it.
    pub seed: u64,
    /// Topology options.
    pub topology: TopologySpec,
    /// Links, in file order.
    pub links: Vec<Spanned<LinkSpec>>,
    /// Flows, in file order.
    pub flows: Vec<Spanned<FlowSpec>>,
    /// `[[path]]` tables, in file order (`kind = "paths"` only; see
    /// [`Scenario::resolved_paths`]).
    pub paths: Vec<Spanned<PathSpec>>,
    /// Output options.
    pub output: OutputSpec,
    pub(crate) origin: Origin,
}

impl Scenario {
    /// Load a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: name.clone(),
            line: None,
            key: None,
            message: format!("cannot read scenario file: {e}"),
        })?;
        let dir = path.parent().map(Path::to_path_buf);
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        Self::parse(text, name, dir, stem)
    }

    /// Parse a scenario from TOML text; `origin` names it in error messages
    /// (e.g. `<dict>`). Relative trace paths resolve against the working directory.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        Self::parse(text.to_string(), origin.to_string(), None, None)
    }

    /// Scenario name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Simulated duration.
    pub fn duration(&self) -> Duration {
        self.duration
    }
    /// Default seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The paths of a `kind = "paths"` topology, in order: the `[[path]]`
    /// tables, or without them one path per `[[link]]`, named like it.
    /// Empty for the other topologies.
    pub fn resolved_paths(&self) -> Vec<ResolvedPath> {
        if self.topology.kind != TopologyKind::Paths {
            return Vec::new();
        }
        if self.paths.is_empty() {
            return self
                .links
                .iter()
                .enumerate()
                .map(|(i, l)| ResolvedPath {
                    name: l.get_ref().name.clone(),
                    links: vec![i],
                })
                .collect();
        }
        self.paths
            .iter()
            .map(|p| {
                let p = p.get_ref();
                ResolvedPath {
                    name: p.name.clone(),
                    // Validation checked that every name is a link's.
                    links: p
                        .links
                        .get_ref()
                        .iter()
                        .filter_map(|n| self.links.iter().position(|l| &l.get_ref().name == n))
                        .collect(),
                }
            })
            .collect()
    }

    fn parse(
        text: String,
        name: String,
        dir: Option<PathBuf>,
        stem: Option<String>,
    ) -> Result<Scenario, ScenarioError> {
        let origin = Origin { name, dir, text };
        let de = toml::Deserializer::parse(&origin.text).map_err(|e| {
            ScenarioError::at(&origin, e.span(), "", e.message().trim().to_string())
        })?;
        let file: ScenarioFile = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e
                .path()
                .to_string()
                .replace("$__serde_spanned_private_value.", "")
                .replace(".$__serde_spanned_private_value", "");
            let inner = e.into_inner();
            let key = if path == "." { String::new() } else { path };
            ScenarioError::at(
                &origin,
                inner.span(),
                &key,
                inner.message().trim().to_string(),
            )
        })?;
        let scenario = Scenario {
            name: file.name.or(stem).unwrap_or_else(|| "scenario".into()),
            duration: *file.duration.get_ref(),
            seed: file.seed,
            topology: file.topology,
            links: file.links,
            flows: file.flows,
            paths: file.paths,
            output: file.output,
            origin,
        };
        scenario.validate(file.duration.span())?;
        Ok(scenario)
    }

    pub(crate) fn error(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError::at(&self.origin, span, key, message)
    }

    /// Resolve a trace path: absolute as is; else relative to the working
    /// directory, else to the scenario's folder or any folder above it.
    pub(crate) fn resolve_path(&self, p: &str) -> Result<PathBuf, Vec<PathBuf>> {
        let path = PathBuf::from(p);
        if path.is_absolute() {
            return if path.exists() {
                Ok(path)
            } else {
                Err(vec![path])
            };
        }
        let mut tried = vec![path.clone()];
        if path.exists() {
            return Ok(path);
        }
        let mut dir = self.origin.dir.clone();
        while let Some(d) = dir {
            let cand = d.join(&path);
            if cand.exists() {
                return Ok(cand);
            }
            tried.push(cand);
            dir = d
                .parent()
                .map(Path::to_path_buf)
                .filter(|p| !p.as_os_str().is_empty());
        }
        Err(tried)
    }

    fn validate(&self, duration_span: std::ops::Range<usize>) -> Result<(), ScenarioError> {
        let dspan = if duration_span.is_empty() {
            None
        } else {
            Some(duration_span)
        };
        if self.duration.is_zero() {
            return Err(self.error(dspan, "duration", "must be greater than 0s"));
        }
        if self.links.is_empty() {
            return Err(self.error(None, "link", "a scenario needs at least one [[link]]"));
        }
        if self.flows.is_empty() {
            return Err(self.error(None, "flow", "a scenario needs at least one [[flow]]"));
        }
        let mut names: Vec<&str> = Vec::new();
        for (i, l) in self.links.iter().enumerate() {
            let span = Some(l.span());
            let key = |k: &str| format!("link[{i}].{k}");
            if names.contains(&l.get_ref().name.as_str()) {
                return Err(self.error(
                    span,
                    &key("name"),
                    format!("duplicate link name \"{}\"", l.get_ref().name),
                ));
            }
            names.push(&l.get_ref().name);
            let spec = l.get_ref();
            let sources = spec.rate.is_some() as u8
                + spec.trace.is_some() as u8
                + spec.schedule.is_some() as u8;
            if sources != 1 {
                return Err(self.error(
                    span,
                    &key("rate"),
                    "give exactly one of `rate`, `trace` or `schedule`",
                ));
            }
            if let Some(r) = &spec.rate {
                if r.get_ref().is_zero() {
                    return Err(self.error(
                        Some(r.span()),
                        &key("rate"),
                        "must be greater than 0bps",
                    ));
                }
            }
            if let Some(t) = &spec.trace {
                if spec.trace_format.is_none() {
                    return Err(self.error(Some(t.span()), &key("trace_format"), "a trace needs `trace_format` = \"mahimahi\" | \"throughput\" | \"opennetlab\""));
                }
                if let Err(tried) = self.resolve_path(t.get_ref()) {
                    let tried: Vec<String> =
                        tried.iter().map(|p| p.display().to_string()).collect();
                    return Err(self.error(
                        Some(t.span()),
                        &key("trace"),
                        format!(
                            "trace file \"{}\" not found (looked in: {})",
                            t.get_ref(),
                            tried.join(", ")
                        ),
                    ));
                }
            } else if let Some(f) = &spec.trace_format {
                return Err(self.error(
                    Some(f.span()),
                    &key("trace_format"),
                    "`trace_format` without `trace`",
                ));
            }
            if let Some(s) = &spec.schedule {
                let steps = s.get_ref();
                if steps.is_empty() || !steps[0].at.is_zero() {
                    return Err(self.error(
                        Some(s.span()),
                        &key("schedule"),
                        "a schedule must start with a step at \"0s\"",
                    ));
                }
                if steps.windows(2).any(|w| w[1].at <= w[0].at) {
                    return Err(self.error(
                        Some(s.span()),
                        &key("schedule"),
                        "schedule steps must be in increasing `at` order",
                    ));
                }
            }
            if let Some(ds) = &spec.delay_schedule {
                if let Some(d) = &spec.delay {
                    return Err(self.error(
                        Some(d.span()),
                        &key("delay"),
                        format!(
                            "delay = \"{}\" given with `delay_schedule`: give one of them (the schedule's first step is the delay from 0s)",
                            d.get_ref()
                        ),
                    ));
                }
                crate::build::delay_schedule(ds.get_ref())
                    .map_err(|m| self.error(Some(ds.span()), &key("delay_schedule"), m))?;
            }
            if let Some(loss) = &spec.loss {
                self.validate_loss(&key("loss"), loss)?;
            }
        }
        if let Some(loss) = &self.topology.reverse_loss {
            self.validate_loss("topology.reverse_loss", loss)?;
        }
        if self.topology.kind == TopologyKind::Dumbbell
            && !self.links.iter().any(|l| l.get_ref().name == "bottleneck")
        {
            return Err(self.error(
                Some(self.links[0].span()),
                "link",
                format!(
                    "a dumbbell needs a link named \"bottleneck\" (found: {})",
                    self.links
                        .iter()
                        .map(|l| format!("\"{}\"", l.get_ref().name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        self.validate_paths()?;
        let mut fnames: Vec<&str> = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            self.validate_flow(i, f)?;
            if fnames.contains(&f.get_ref().name.as_str()) {
                return Err(self.error(
                    Some(f.span()),
                    &format!("flow[{i}].name"),
                    format!("duplicate flow name \"{}\"", f.get_ref().name),
                ));
            }
            fnames.push(&f.get_ref().name);
        }
        if self.output.sample_interval.is_zero() {
            return Err(self.error(None, "output.sample_interval", "must be greater than 0s"));
        }
        self.validate_limits(dspan)
    }

    /// The span of `name = ...` inside `within` (a table's span; the whole
    /// text when `None`), for values that have no span of their own. Falls
    /// back to `within`.
    fn key_span(
        &self,
        within: Option<std::ops::Range<usize>>,
        table: &str,
        name: &str,
    ) -> Option<std::ops::Range<usize>> {
        let text = &self.origin.text;
        let (mut from, mut to) = match &within {
            Some(r) => (r.start.min(text.len()), r.end.min(text.len())),
            None => (0, text.len()),
        };
        if within.is_some() {
            // The span of an array-of-tables entry (`[[link]]`) may cover
            // its header only: its keys run to the next header.
            let body_end = text[from..]
                .find("\n[")
                .map_or(text.len(), |i| from + i + 1);
            to = to.max(body_end);
        }
        if within.is_none() && !table.is_empty() {
            // A top-level table: look after its header.
            if let Some(h) = text.find(&format!("[{table}]")) {
                from = h;
            }
        }
        let hay = &text[from..to];
        let bytes = hay.as_bytes();
        let mut at = 0;
        while let Some(i) = hay[at..].find(name) {
            let start = at + i;
            let end = start + name.len();
            let before_ok = start == 0
                || !(bytes[start - 1].is_ascii_alphanumeric()
                    || bytes[start - 1] == b'_'
                    || bytes[start - 1] == b'.');
            let after = hay[end..].trim_start_matches([' ', '\t']);
            if before_ok && after.starts_with('=') {
                return Some(from + start..from + end);
            }
            at = end;
        }
        within
    }

    /// A value within `[lo, hi]`, or the error naming key, value and range.
    fn within<T: PartialOrd + fmt::Display>(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        value: T,
        (lo, hi): (T, T),
    ) -> Result<(), ScenarioError> {
        if value < lo || value > hi {
            return Err(self.error(
                span,
                key,
                format!("{value} is out of range [{lo}, {hi}] (docs/scenarios.md, \"Limits\")"),
            ));
        }
        Ok(())
    }

    /// A queue bound within [`limits`](crate::limits)' ranges.
    fn queue_within(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        q: QueueSpec,
    ) -> Result<(), ScenarioError> {
        use crate::limits::*;
        match q {
            QueueSpec::Unlimited => Ok(()),
            QueueSpec::Bytes(b) => self.within(span, key, b, (Bytes::new(1), MAX_QUEUE_BYTES)),
            QueueSpec::Packets(n) => self.within(span, key, u64::from(n), (1, MAX_QUEUE_PACKETS)),
            QueueSpec::Time(d) => {
                self.within(span, key, d, (Duration::from_nanos(1), MAX_QUEUE_TIME))
            }
        }
    }

    /// Every numeric field within its documented range
    /// ([`crate::limits`], docs/scenarios.md "Limits"). Fields without a
    /// span of their own are reported at their table's line.
    fn validate_limits(&self, dspan: Option<std::ops::Range<usize>>) -> Result<(), ScenarioError> {
        use crate::limits::*;
        let positive_rate = (Bitrate::bps(1), MAX_RATE);
        let any_rate = (Bitrate::ZERO, MAX_RATE);
        let delay = (Duration::ZERO, MAX_DELAY);
        let timer = (Duration::ZERO, MAX_TIMER);
        self.within(
            dspan.clone(),
            "duration",
            self.duration,
            (Duration::from_nanos(1), MAX_DURATION),
        )?;
        self.within(
            self.key_span(None, "output", "sample_interval"),
            "output.sample_interval",
            self.output.sample_interval,
            (MIN_SAMPLE_INTERVAL, MAX_DURATION),
        )?;
        let t = &self.topology;
        let at = |k: &str| self.key_span(None, "topology", k);
        self.within(
            at("access_rate"),
            "topology.access_rate",
            t.access_rate,
            positive_rate,
        )?;
        self.within(
            at("access_delay"),
            "topology.access_delay",
            t.access_delay,
            delay,
        )?;
        self.queue_within(at("access_queue"), "topology.access_queue", t.access_queue)?;
        if let Some(r) = t.reverse_rate {
            self.within(
                at("reverse_rate"),
                "topology.reverse_rate",
                r,
                positive_rate,
            )?;
        }
        if let Some(d) = t.reverse_delay {
            self.within(at("reverse_delay"), "topology.reverse_delay", d, delay)?;
        }
        if let Some(q) = t.reverse_queue {
            self.queue_within(at("reverse_queue"), "topology.reverse_queue", q)?;
        }
        for (i, l) in self.links.iter().enumerate() {
            let key = |k: &str| format!("link[{i}].{k}");
            let spec = l.get_ref();
            let span = Some(l.span());
            if let Some(r) = &spec.rate {
                self.within(Some(r.span()), &key("rate"), *r.get_ref(), positive_rate)?;
            }
            if let Some(sc) = &spec.schedule {
                for (j, st) in sc.get_ref().iter().enumerate() {
                    self.within(
                        Some(sc.span()),
                        &key(&format!("schedule[{j}].rate")),
                        st.rate,
                        any_rate,
                    )?;
                }
            }
            if let Some(d) = &spec.delay {
                self.within(Some(d.span()), &key("delay"), *d.get_ref(), delay)?;
            }
            if let Some(ds) = &spec.delay_schedule {
                for (j, st) in ds.get_ref().iter().enumerate() {
                    self.within(
                        Some(ds.span()),
                        &key(&format!("delay_schedule[{j}].delay")),
                        st.delay,
                        delay,
                    )?;
                }
            }
            let at = |k: &str| self.key_span(span.clone(), "", k);
            self.queue_within(at("queue"), &key("queue"), spec.queue)?;
            self.within(at("jitter"), &key("jitter"), spec.jitter, delay)?;
            self.within(
                at("mahimahi_opportunity"),
                &key("mahimahi_opportunity"),
                spec.mahimahi_opportunity.get(),
                OPPORTUNITY,
            )?;
        }
        for (i, f) in self.flows.iter().enumerate() {
            let key = |k: &str| format!("flow[{i}].{k}");
            let spec = f.get_ref();
            let span = Some(f.span());
            if spec.start >= self.duration {
                return Err(self.error(
                    self.key_span(span.clone(), "", "start"),
                    &key("start"),
                    format!(
                        "start ({}) is not before the end of the run (duration = {}): the flow would never run",
                        spec.start, self.duration
                    ),
                ));
            }
            if let Some(e) = &spec.encoder {
                let enc = e.get_ref();
                let espan = Some(e.span());
                let at = |k: &str| self.key_span(espan.clone(), "", k);
                self.within(at("gop"), &key("encoder.gop"), enc.gop, (0, MAX_GOP))?;
                for (name, v, range) in [
                    ("i_frame_factor", enc.i_frame_factor, I_FRAME_FACTOR),
                    ("size_variability", enc.size_variability, SIZE_VARIABILITY),
                ] {
                    if !v.is_finite() {
                        return Err(self.error(
                            at(name),
                            &key(&format!("encoder.{name}")),
                            format!("{v} is not a finite number"),
                        ));
                    }
                    self.within(at(name), &key(&format!("encoder.{name}")), v, range)?;
                }
                self.within(
                    at("reaction_delay"),
                    &key("encoder.reaction_delay"),
                    enc.reaction_delay,
                    timer,
                )?;
                self.within(
                    at("min_bitrate"),
                    &key("encoder.min_bitrate"),
                    enc.min_bitrate,
                    any_rate,
                )?;
                self.within(
                    at("max_bitrate"),
                    &key("encoder.max_bitrate"),
                    enc.max_bitrate,
                    positive_rate,
                )?;
                if let Some(r) = enc.start_bitrate {
                    self.within(
                        at("start_bitrate"),
                        &key("encoder.start_bitrate"),
                        r,
                        any_rate,
                    )?;
                }
                if let Some(r) = enc.layer_rate {
                    self.within(
                        at("layer_rate"),
                        &key("encoder.layer_rate"),
                        r,
                        positive_rate,
                    )?;
                }
            }
            if let Some(fi) = &spec.feedback_interval {
                self.within(
                    Some(fi.span()),
                    &key("feedback_interval"),
                    *fi.get_ref(),
                    FEEDBACK_INTERVAL,
                )?;
            }
            for (name, v) in [
                ("bitrate", &spec.bitrate),
                ("rate", &spec.rate),
                ("max_total_bitrate", &spec.max_total_bitrate),
            ] {
                if let Some(r) = v {
                    self.within(Some(r.span()), &key(name), *r.get_ref(), positive_rate)?;
                }
            }
            for (name, v) in [
                ("playout_delay", &spec.playout_delay),
                ("max_ack_delay", &spec.max_ack_delay),
                ("retransmit_buffer", &spec.retransmit_buffer),
                ("max_wait", &spec.max_wait),
            ] {
                if let Some(d) = v {
                    self.within(Some(d.span()), &key(name), *d.get_ref(), timer)?;
                }
            }
            for (name, v) in [
                ("queue_time_limit", &spec.queue_time_limit),
                ("frame_drop_queue_time", &spec.frame_drop_queue_time),
            ] {
                if let Some(l) = v {
                    if let TimeLimitSpec::Time(d) = *l.get_ref() {
                        self.within(Some(l.span()), &key(name), d, timer)?;
                    }
                }
            }
            if let Some(d) = &spec.access_delay {
                self.within(Some(d.span()), &key("access_delay"), *d.get_ref(), delay)?;
            }
            if let Some(n) = &spec.ack_eliciting_threshold {
                self.within(
                    Some(n.span()),
                    &key("ack_eliciting_threshold"),
                    *n.get_ref(),
                    ACK_ELICITING,
                )?;
            }
            if let Some(n) = &spec.initial_cwnd {
                self.within(
                    Some(n.span()),
                    &key("initial_cwnd"),
                    *n.get_ref(),
                    INITIAL_CWND,
                )?;
            }
            if let Some(n) = &spec.rwnd {
                self.within(Some(n.span()), &key("rwnd"), *n.get_ref(), RWND)?;
            }
            if let Some(d) = &spec.min_rto {
                self.within(Some(d.span()), &key("min_rto"), *d.get_ref(), MIN_RTO)?;
            }
            if let Some(o) = &spec.on_off {
                let v = o.get_ref();
                for (name, d) in [("on_off.on", v.on), ("on_off.off", v.off)] {
                    self.within(
                        Some(o.span()),
                        &key(name),
                        d,
                        (Duration::ZERO, MAX_DURATION),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// `[[path]]` tables: only with `kind = "paths"`, unique names, at least
    /// one link each, every link declared and crossed once.
    fn validate_paths(&self) -> Result<(), ScenarioError> {
        if let Some(p) = self.paths.first() {
            if self.topology.kind != TopologyKind::Paths {
                return Err(self.error(
                    Some(p.span()),
                    "path[0]",
                    format!(
                        "`[[path]]` only applies to [topology] kind = \"paths\" (this topology is \"{}\")",
                        self.topology.kind.as_str()
                    ),
                ));
            }
        }
        let mut names: Vec<&str> = Vec::new();
        for (i, p) in self.paths.iter().enumerate() {
            let spec = p.get_ref();
            if names.contains(&spec.name.as_str()) {
                return Err(self.error(
                    Some(p.span()),
                    &format!("path[{i}].name"),
                    format!("duplicate path name \"{}\"", spec.name),
                ));
            }
            names.push(&spec.name);
            let links = &spec.links;
            let key = format!("path[{i}].links");
            if links.get_ref().is_empty() {
                return Err(self.error(Some(links.span()), &key, "a path needs at least one link"));
            }
            for (k, n) in links.get_ref().iter().enumerate() {
                if !self.links.iter().any(|l| &l.get_ref().name == n) {
                    let known: Vec<&str> = self
                        .links
                        .iter()
                        .map(|l| l.get_ref().name.as_str())
                        .collect();
                    return Err(self.error(
                        Some(links.span()),
                        &key,
                        format!("unknown link \"{n}\" (links: {})", known.join(", ")),
                    ));
                }
                if links.get_ref()[..k].contains(n) {
                    return Err(self.error(
                        Some(links.span()),
                        &key,
                        format!("link \"{n}\" appears twice in the path"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `path` / `paths` / multipath keys of flow `i` against the topology.
    fn validate_flow_paths(&self, i: usize, f: &Spanned<FlowSpec>) -> Result<(), ScenarioError> {
        let spec = f.get_ref();
        let kind = *spec.kind.get_ref();
        let key = |k: &str| format!("flow[{i}].{k}");
        let paths_topology = self.topology.kind == TopologyKind::Paths;
        let known: Vec<String> = self.resolved_paths().into_iter().map(|p| p.name).collect();
        let unknown = |n: &str| format!("unknown path \"{n}\" (paths: {})", known.join(", "));
        if let Some(p) = &spec.path {
            if kind == FlowKind::MultipathMedia {
                return Err(self.error(
                    Some(p.span()),
                    &key("path"),
                    "a multipath-media flow takes `paths = [...]`, not `path`",
                ));
            }
            if !paths_topology {
                return Err(self.error(
                    Some(p.span()),
                    &key("path"),
                    format!(
                        "`path = \"{}\"` only applies to [topology] kind = \"paths\" (this topology is \"{}\")",
                        p.get_ref(),
                        self.topology.kind.as_str()
                    ),
                ));
            }
            if !known.iter().any(|k| k == p.get_ref()) {
                return Err(self.error(Some(p.span()), &key("path"), unknown(p.get_ref())));
            }
        }
        if kind != FlowKind::MultipathMedia {
            return Ok(());
        }
        if !paths_topology {
            return Err(self.error(
                Some(spec.kind.span()),
                &key("kind"),
                format!(
                    "a multipath-media flow needs [topology] kind = \"paths\" (this topology is \"{}\")",
                    self.topology.kind.as_str()
                ),
            ));
        }
        let Some(ps) = &spec.paths else {
            return Err(self.error(
                Some(f.span()),
                &key("paths"),
                format!(
                    "a multipath-media flow needs `paths = [...]` (paths: {})",
                    known.join(", ")
                ),
            ));
        };
        let list = ps.get_ref();
        if list.is_empty() {
            return Err(self.error(
                Some(ps.span()),
                &key("paths"),
                "`paths` is empty: give at least one path",
            ));
        }
        if list.len() > MAX_FLOW_PATHS {
            return Err(self.error(
                Some(ps.span()),
                &key("paths"),
                format!(
                    "{} paths is more than the {MAX_FLOW_PATHS} a flow may use",
                    list.len()
                ),
            ));
        }
        for (k, n) in list.iter().enumerate() {
            if !known.iter().any(|x| x == n) {
                return Err(self.error(Some(ps.span()), &key("paths"), unknown(n)));
            }
            if list[..k].contains(n) {
                return Err(self.error(
                    Some(ps.span()),
                    &key("paths"),
                    format!("path \"{n}\" is listed twice"),
                ));
            }
        }
        if let Some(s) = &spec.scheduler {
            let names = rtcc_core::multipath::SchedulerConfig::NAMES;
            if !names.contains(&s.get_ref().as_str()) {
                return Err(self.error(
                    Some(s.span()),
                    &key("scheduler"),
                    format!(
                        "unknown scheduler \"{}\" (one of: {})",
                        s.get_ref(),
                        names.join(", ")
                    ),
                ));
            }
        }
        if let Some(m) = &spec.max_total_bitrate {
            if m.get_ref().is_zero() {
                return Err(self.error(
                    Some(m.span()),
                    &key("max_total_bitrate"),
                    "must be greater than 0bps",
                ));
            }
        }
        if let Some(w) = &spec.max_wait {
            if w.get_ref().is_zero() {
                return Err(self.error(
                    Some(w.span()),
                    &key("max_wait"),
                    "must be greater than 0s",
                ));
            }
        }
        Ok(())
    }

    /// The keys of a live flow: `bitrate`, `recovery` and its
    /// `recovery_config` table, the receiver's keys, the source's encoder.
    fn validate_live(&self, i: usize, f: &Spanned<FlowSpec>) -> Result<(), ScenarioError> {
        let spec = f.get_ref();
        let key = |k: &str| format!("flow[{i}].{k}");
        match &spec.bitrate {
            None => {
                return Err(self.error(
                    Some(f.span()),
                    &key("bitrate"),
                    "a live flow needs `bitrate` (the stream's, e.g. \"4Mbps\")",
                ))
            }
            Some(b) if b.get_ref().is_zero() => {
                return Err(self.error(
                    Some(b.span()),
                    &key("bitrate"),
                    "must be greater than 0bps",
                ))
            }
            _ => {}
        }
        let name = spec.recovery.as_ref().map(|r| r.get_ref().as_str());
        crate::live::recovery_scheme(name, spec.recovery_config.as_ref().map(|t| t.get_ref()))
            .map_err(|e| match e {
                crate::live::RecoveryKeyError::Name(m) => self.error(
                    spec.recovery.as_ref().map(|r| r.span()),
                    &key("recovery"),
                    m,
                ),
                crate::live::RecoveryKeyError::Table(m) => self.error(
                    spec.recovery_config.as_ref().map(|t| t.span()),
                    &key("recovery_config"),
                    m,
                ),
            })?;
        if let Some(t) = &spec.ack_eliciting_threshold {
            if *t.get_ref() == 0 {
                return Err(self.error(
                    Some(t.span()),
                    &key("ack_eliciting_threshold"),
                    "must be at least 1",
                ));
            }
        }
        if let Some(e) = &spec.encoder {
            let enc = e.get_ref();
            let d = EncoderSpec::default();
            if enc.kind != "parametric" {
                return Err(self.error(
                    Some(e.span()),
                    &key("encoder.kind"),
                    format!(
                        "a live flow's source is the parametric model (got \"{}\")",
                        enc.kind
                    ),
                ));
            }
            if enc.min_bitrate != d.min_bitrate
                || enc.max_bitrate != d.max_bitrate
                || enc.start_bitrate.is_some()
            {
                return Err(self.error(
                    Some(e.span()),
                    &key("encoder"),
                    "a live source's bitrate is fixed by the flow's `bitrate`: \
                     drop `min_bitrate`, `max_bitrate` and `start_bitrate`",
                ));
            }
        }
        Ok(())
    }

    /// A loss table (`loss` of a link, `reverse_loss` of the topology) whose
    /// key is `key`: the model's parameters, and no other model's.
    fn validate_loss(&self, key: &str, loss: &Spanned<LossSpec>) -> Result<(), ScenarioError> {
        let l = loss.get_ref();
        let span = Some(loss.span());
        let ge_given = l.step.is_some()
            || l.p_gb.is_some()
            || l.p_bg.is_some()
            || l.loss_good.is_some()
            || l.loss_bad.is_some();
        if l.windows.is_some() && l.model != LossModelKind::Outage {
            return Err(self.error(
                span,
                &format!("{key}.windows"),
                format!(
                    "`windows` is for model = \"outage\" (this model is \"{}\")",
                    l.model.as_str()
                ),
            ));
        }
        match l.model {
            LossModelKind::None => {
                if l.p.is_some() || ge_given {
                    return Err(self.error(
                        span,
                        key,
                        "loss parameters given with model = \"none\" (set `model`)",
                    ));
                }
            }
            LossModelKind::Bernoulli => {
                if l.p.is_none() {
                    return Err(self.error(
                        span,
                        &format!("{key}.p"),
                        "model = \"bernoulli\" needs `p`",
                    ));
                }
                if ge_given {
                    return Err(self.error(
                        span,
                        key,
                        "Gilbert–Elliott parameters given with model = \"bernoulli\"",
                    ));
                }
            }
            LossModelKind::GilbertElliott => {
                for (name, v) in [
                    ("p_gb", l.p_gb),
                    ("p_bg", l.p_bg),
                    ("loss_good", l.loss_good),
                    ("loss_bad", l.loss_bad),
                ] {
                    if v.is_none() {
                        return Err(self.error(span, &format!("{key}.{name}"), "model = \"gilbert-elliott\" needs `step`, `p_gb`, `p_bg`, `loss_good`, `loss_bad`"));
                    }
                }
                match l.step {
                    None => {
                        return Err(self.error(
                            span,
                            &format!("{key}.step"),
                            "model = \"gilbert-elliott\" needs `step`",
                        ))
                    }
                    Some(s) if s.is_zero() => {
                        return Err(self.error(
                            span,
                            &format!("{key}.step"),
                            "must be greater than 0s",
                        ))
                    }
                    _ => {}
                }
                if l.p.is_some() {
                    return Err(self.error(
                        span,
                        &format!("{key}.p"),
                        "`p` is for model = \"bernoulli\"",
                    ));
                }
            }
            LossModelKind::Outage => {
                if l.p.is_some() || ge_given {
                    return Err(self.error(
                        span,
                        key,
                        "model = \"outage\" takes `windows` only (no `p`, no Gilbert–Elliott parameters)",
                    ));
                }
                let Some(w) = &l.windows else {
                    return Err(self.error(
                        span,
                        &format!("{key}.windows"),
                        "model = \"outage\" needs `windows = [[\"60s\", \"90s\"], ...]`",
                    ));
                };
                crate::link::OutageWindows::new(w.clone())
                    .map_err(|e| self.error(span, &format!("{key}.windows"), e.to_string()))?;
            }
        }
        Ok(())
    }

    /// `encoder.kind = "svc"`: a media flow's layered encoder, its keys
    /// checked as the world builds them (`build::svc_encoder_config`).
    fn validate_svc_encoder(
        &self,
        i: usize,
        f: &Spanned<FlowSpec>,
        e: &Spanned<EncoderSpec>,
    ) -> Result<(), ScenarioError> {
        let spec = f.get_ref();
        let kind = *spec.kind.get_ref();
        if kind != FlowKind::Media {
            return Err(self.error(
                Some(e.span()),
                &format!("flow[{i}].encoder.kind"),
                format!(
                    "the svc encoder runs on media flows (this flow is {})",
                    kind.as_str()
                ),
            ));
        }
        crate::build::svc_encoder_config(e.get_ref(), crate::build::flow_packetizer(spec))
            .and_then(|_| crate::build::psnr_config(e.get_ref()))
            .map(|_| ())
            .map_err(|(k, m)| self.error(Some(e.span()), &format!("flow[{i}].{k}"), m))
    }

    fn validate_flow(&self, i: usize, f: &Spanned<FlowSpec>) -> Result<(), ScenarioError> {
        let spec = f.get_ref();
        let kind = *spec.kind.get_ref();
        let key = |k: &str| format!("flow[{i}].{k}");
        // Options that belong to one kind only.
        let not_for = |present: Option<std::ops::Range<usize>>,
                       name: &str,
                       allowed: &[FlowKind]|
         -> Result<(), ScenarioError> {
            if let Some(span) = present {
                if !allowed.contains(&kind) {
                    let kinds: Vec<&str> = allowed.iter().map(|k| k.as_str()).collect();
                    return Err(self.error(
                        Some(span),
                        &key(name),
                        format!(
                            "only applies to flows of kind {} (this flow is {})",
                            kinds.join("/"),
                            kind.as_str()
                        ),
                    ));
                }
            }
            Ok(())
        };
        use FlowKind::*;
        not_for(
            spec.encoder.as_ref().map(|s| s.span()),
            "encoder",
            &[Media, MultipathMedia, Live],
        )?;
        not_for(
            spec.cc_config.as_ref().map(|s| s.span()),
            "cc_config",
            &[Media, MultipathMedia, Live, Tfrc],
        )?;
        not_for(
            spec.mtu.as_ref().map(|s| s.span()),
            "mtu",
            &[Media, MultipathMedia, Live],
        )?;
        not_for(
            spec.header_overhead.as_ref().map(|s| s.span()),
            "header_overhead",
            &[Media, MultipathMedia, Live],
        )?;
        if let Some(h) = &spec.header_overhead {
            if h.get_ref().get() > 1000 {
                return Err(self.error(
                    Some(h.span()),
                    &key("header_overhead"),
                    format!("{} is out of range (0B..1000B)", h.get_ref()),
                ));
            }
        }
        not_for(
            spec.feedback_interval.as_ref().map(|s| s.span()),
            "feedback_interval",
            &[Media, MultipathMedia, Tfrc],
        )?;
        not_for(
            spec.recovery.as_ref().map(|s| s.span()),
            "recovery",
            &[Media, Live],
        )?;
        for (present, name) in [
            (
                spec.recovery_config.as_ref().map(|s| s.span()),
                "recovery_config",
            ),
            (spec.bitrate.as_ref().map(|s| s.span()), "bitrate"),
            (
                spec.playout_delay.as_ref().map(|s| s.span()),
                "playout_delay",
            ),
            (
                spec.max_ack_delay.as_ref().map(|s| s.span()),
                "max_ack_delay",
            ),
            (
                spec.ack_eliciting_threshold.as_ref().map(|s| s.span()),
                "ack_eliciting_threshold",
            ),
        ] {
            not_for(present, name, &[Live])?;
        }
        if kind == Live {
            self.validate_live(i, f)?;
        }
        not_for(
            spec.queue_time_limit.as_ref().map(|s| s.span()),
            "queue_time_limit",
            &[Media, MultipathMedia],
        )?;
        not_for(
            spec.frame_drop_queue_time.as_ref().map(|s| s.span()),
            "frame_drop_queue_time",
            &[Media, MultipathMedia],
        )?;
        if let (Some(r), Media) = (&spec.recovery, kind) {
            let names = rtcc_core::recovery::RecoveryConfig::NAMES;
            if !names.contains(&r.get_ref().as_str()) {
                return Err(self.error(
                    Some(r.span()),
                    &key("recovery"),
                    format!(
                        "unknown loss recovery \"{}\" (one of: {})",
                        r.get_ref(),
                        names.join(", ")
                    ),
                ));
            }
        }
        not_for(spec.rate.as_ref().map(|s| s.span()), "rate", &[UdpCbr])?;
        for (present, name) in [
            (spec.paths.as_ref().map(|s| s.span()), "paths"),
            (spec.scheduler.as_ref().map(|s| s.span()), "scheduler"),
            (
                spec.max_total_bitrate.as_ref().map(|s| s.span()),
                "max_total_bitrate",
            ),
            (
                spec.retransmit_buffer.as_ref().map(|s| s.span()),
                "retransmit_buffer",
            ),
            (spec.max_wait.as_ref().map(|s| s.span()), "max_wait"),
        ] {
            not_for(present, name, &[MultipathMedia])?;
        }
        self.validate_flow_paths(i, f)?;
        not_for(
            spec.packet_size.as_ref().map(|s| s.span()),
            "packet_size",
            &[UdpCbr, Tfrc],
        )?;
        not_for(spec.on_off.as_ref().map(|s| s.span()), "on_off", &[UdpCbr])?;
        not_for(
            spec.interarrival.as_ref().map(|s| s.span()),
            "interarrival",
            &[UdpCbr],
        )?;
        if let Some(g) = &spec.interarrival {
            let shape = g.get_ref().shape;
            if spec.on_off.is_some() {
                return Err(self.error(
                    Some(g.span()),
                    &key("interarrival"),
                    "give `on_off` (bursts) or `interarrival` (Pareto gaps), not both",
                ));
            }
            if !(shape.is_finite() && shape > 1.0 && shape <= 100.0) {
                return Err(self.error(
                    Some(g.span()),
                    &key("interarrival"),
                    format!(
                        "shape = {shape} must be in (1, 100] (the mean of a Pareto law needs shape > 1)"
                    ),
                ));
            }
        }
        not_for(
            spec.packet_mix.as_ref().map(|s| s.span()),
            "packet_mix",
            &[UdpCbr],
        )?;
        if let Some(o) = &spec.on_off {
            let v = o.get_ref();
            let problem = if v.on.is_zero() || v.off.is_zero() {
                Some(format!(
                    "on = {} and off = {} must both be positive",
                    v.on, v.off
                ))
            } else if !(v.shape.is_finite() && v.shape > 1.0 && v.shape <= 100.0) {
                Some(format!(
                    "shape = {} must be in (1, 100] (the mean of a Pareto law needs shape > 1)",
                    v.shape
                ))
            } else {
                None
            };
            if let Some(msg) = problem {
                return Err(self.error(Some(o.span()), &key("on_off"), msg));
            }
        }
        if let Some(m) = &spec.packet_mix {
            if m.get_ref() != "internet" {
                return Err(self.error(
                    Some(m.span()),
                    &key("packet_mix"),
                    format!("unknown packet mix \"{}\" (one of: internet)", m.get_ref()),
                ));
            }
            if let Some(p) = &spec.packet_size {
                return Err(self.error(
                    Some(p.span()),
                    &key("packet_size"),
                    "give `packet_size` or `packet_mix`, not both",
                ));
            }
        }
        not_for(spec.mss.as_ref().map(|s| s.span()), "mss", &[Tcp])?;
        not_for(
            spec.delayed_ack.as_ref().map(|s| s.span()),
            "delayed_ack",
            &[Tcp],
        )?;
        not_for(
            spec.initial_cwnd.as_ref().map(|s| s.span()),
            "initial_cwnd",
            &[Tcp],
        )?;
        not_for(spec.min_rto.as_ref().map(|s| s.span()), "min_rto", &[Tcp])?;
        not_for(spec.rwnd.as_ref().map(|s| s.span()), "rwnd", &[Tcp])?;
        if let Some(w) = &spec.rwnd {
            if *w.get_ref() == 0 {
                return Err(self.error(
                    Some(w.span()),
                    &key("rwnd"),
                    "0 segments would never send; give at least 1",
                ));
            }
        }
        not_for(
            spec.abc_limit.as_ref().map(|s| s.span()),
            "abc_limit",
            &[Tcp],
        )?;
        if let Some(l) = &spec.abc_limit {
            if !(1..=16).contains(l.get_ref()) {
                return Err(self.error(
                    Some(l.span()),
                    &key("abc_limit"),
                    format!("{} is out of range (1..16)", l.get_ref()),
                ));
            }
        }
        if let Some(d) = &spec.direction {
            if kind == Tcp
                && *d.get_ref() == FlowDirection::Reverse
                && self.topology.kind != TopologyKind::Dumbbell
                && self.topology.reverse_rate.is_none()
            {
                // Its window would grow without bound (no loss, no queue)
                // and its ACKs alone would flood the forward link.
                return Err(self.error(
                    Some(d.span()),
                    &key("direction"),
                    format!(
                        "a reverse tcp flow needs a reverse path with a rate: the {} topology's reverse links are unlimited unless `topology.reverse_rate` is set",
                        self.topology.kind.as_str()
                    ),
                ));
            }
            if !matches!(kind, Tcp | UdpCbr | Media) {
                return Err(self.error(
                    Some(d.span()),
                    &key("direction"),
                    format!(
                        "direction = \"{}\" only applies to flows of kind media/tcp/udp-cbr (this flow is {})",
                        d.get_ref().as_str(),
                        kind.as_str()
                    ),
                ));
            }
        }
        if spec.access_delay.is_some() && self.topology.kind != TopologyKind::Dumbbell {
            return Err(self.error(
                spec.access_delay.as_ref().map(|s| s.span()),
                &key("access_delay"),
                "only applies to a dumbbell topology",
            ));
        }
        if let Some(j) = &spec.start_jitter {
            let latest = spec.start + *j.get_ref();
            if latest >= self.duration || spec.stop.as_ref().is_some_and(|s| latest >= *s.get_ref())
            {
                return Err(self.error(
                    Some(j.span()),
                    &key("start_jitter"),
                    format!(
                        "start ({}) + start_jitter ({}) must end before the flow stops",
                        spec.start,
                        j.get_ref()
                    ),
                ));
            }
        }
        if let Some(stop) = &spec.stop {
            if *stop.get_ref() <= spec.start {
                return Err(self.error(
                    Some(stop.span()),
                    &key("stop"),
                    format!(
                        "stop ({}) must be after start ({})",
                        stop.get_ref(),
                        spec.start
                    ),
                ));
            }
        }
        let cc_names: &[&str] = match kind {
            Media | MultipathMedia | Live => rtcc_core::CcConfig::NAMES,
            Tcp => &["newreno", "reno", "tahoe", "cubic"],
            UdpCbr => &[],
            Tfrc => &["tfrc"],
        };
        match (&spec.cc, kind) {
            (None, Media | MultipathMedia) => {
                return Err(self.error(
                    Some(f.span()),
                    &key("cc"),
                    format!(
                        "a {} flow needs `cc` (one of: {})",
                        kind.as_str(),
                        cc_names.join(", ")
                    ),
                ))
            }
            (Some(cc), UdpCbr) => {
                return Err(self.error(
                    Some(cc.span()),
                    &key("cc"),
                    "udp-cbr flows have no congestion control",
                ))
            }
            (Some(cc), _) if !cc_names.contains(&cc.get_ref().as_str()) => {
                return Err(self.error(
                    Some(cc.span()),
                    &key("cc"),
                    format!(
                        "unknown congestion controller \"{}\" for a {} flow (one of: {})",
                        cc.get_ref(),
                        kind.as_str(),
                        cc_names.join(", ")
                    ),
                ));
            }
            _ => {}
        }
        if let (Tfrc, Some(t)) = (kind, &spec.cc_config) {
            // No encoder to bound: TFRC's X alone sets a tfrc flow's rate.
            let bounds = ["start_bitrate", "min_bitrate", "max_bitrate"];
            if let Some(b) = bounds.iter().find(|b| t.get_ref().contains_key(**b)) {
                return Err(self.error(
                    Some(t.span()),
                    &key("cc_config"),
                    format!(
                        "`{b}` does not apply to a tfrc flow (it has no encoder: TFRC's X alone sets its rate)"
                    ),
                ));
            }
        }
        if kind == UdpCbr && spec.rate.is_none() {
            return Err(self.error(Some(f.span()), &key("rate"), "a udp-cbr flow needs `rate`"));
        }
        for (name, v) in [
            ("mtu", &spec.mtu),
            ("packet_size", &spec.packet_size),
            ("mss", &spec.mss),
        ] {
            if let Some(b) = v {
                let n = b.get_ref().get();
                if !(100..=65_000).contains(&n) {
                    return Err(self.error(
                        Some(b.span()),
                        &key(name),
                        format!("{} is out of range (100B..65000B)", b.get_ref()),
                    ));
                }
            }
        }
        if let Some(e) = &spec.encoder {
            let enc = e.get_ref();
            let span = Some(e.span());
            match (enc.kind.as_str(), &enc.trace) {
                ("parametric", None) => {}
                ("parametric", Some(_)) => {
                    return Err(self.error(
                        span,
                        &key("encoder.trace"),
                        "only applies to kind = \"ladder\"",
                    ))
                }
                ("ladder", None) => {
                    return Err(self.error(
                        span,
                        &key("encoder.trace"),
                        "kind = \"ladder\" needs `trace` (a ladder CSV)",
                    ))
                }
                ("ladder", Some(t)) => {
                    if let Err(tried) = self.resolve_path(t) {
                        let tried: Vec<String> =
                            tried.iter().map(|p| p.display().to_string()).collect();
                        return Err(self.error(
                            span,
                            &key("encoder.trace"),
                            format!(
                                "trace file \"{t}\" not found (looked in: {})",
                                tried.join(", ")
                            ),
                        ));
                    }
                }
                ("svc", Some(_)) => {
                    return Err(self.error(
                        span,
                        &key("encoder.trace"),
                        "only applies to kind = \"ladder\"",
                    ))
                }
                ("svc", None) => self.validate_svc_encoder(i, f, e)?,
                (other, _) => {
                    return Err(self.error(
                        span,
                        &key("encoder.kind"),
                        format!(
                            "unknown encoder kind \"{other}\" (one of: parametric, ladder, svc)"
                        ),
                    ))
                }
            }
            if enc.kind != "svc" {
                for (name, given) in [
                    ("layers", enc.layers.is_some()),
                    ("layer_rate", enc.layer_rate.is_some()),
                    ("psnr_model", enc.psnr_model.is_some()),
                    ("psnr_svc_overhead", enc.psnr_svc_overhead.is_some()),
                ] {
                    if given {
                        return Err(self.error(
                            span,
                            &key(&format!("encoder.{name}")),
                            "only applies to kind = \"svc\"",
                        ));
                    }
                }
            }
            if !(enc.fps.is_finite() && enc.fps > 0.0 && enc.fps <= 1000.0) {
                return Err(self.error(
                    span,
                    &key("encoder.fps"),
                    format!("{} is out of range (0, 1000]", enc.fps),
                ));
            }
            if enc.min_bitrate > enc.max_bitrate {
                return Err(self.error(
                    span,
                    &key("encoder.min_bitrate"),
                    format!(
                        "min_bitrate {} exceeds max_bitrate {}",
                        enc.min_bitrate, enc.max_bitrate
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
duration = "10s"

[[link]]
name = "bottleneck"
rate = "1Mbps"
delay = "20ms"
queue = "60KB"

[[flow]]
name = "v"
kind = "media"
cc = "gcc"
"#;

    fn err(text: &str) -> ScenarioError {
        Scenario::from_toml_str(text, "s.toml").unwrap_err()
    }

    #[test]
    fn parses_a_good_scenario() {
        let s = Scenario::from_toml_str(GOOD, "s.toml").unwrap();
        assert_eq!(s.name(), "t");
        assert_eq!(s.duration(), Duration::from_secs(10));
        assert_eq!(
            s.links[0].get_ref().queue,
            QueueSpec::Bytes(Bytes::new(60_000))
        );
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let e = err(&GOOD.replace("delay = \"20ms\"", "dealy = \"20ms\""));
        assert_eq!(e.line, Some(8), "{e}");
        assert!(e.to_string().contains("dealy"), "{e}");
        assert!(
            e.to_string().starts_with("s.toml:8: key `link[0].dealy`"),
            "{e}"
        );
    }

    #[test]
    fn bad_unit_names_value() {
        let e = err(&GOOD.replace("\"1Mbps\"", "\"3Mbs\""));
        let s = e.to_string();
        assert!(s.starts_with("s.toml:7:"), "{s}");
        assert!(s.contains("link[0].rate"), "{s}");
        assert!(s.contains("3Mbs"), "{s}");
    }

    #[test]
    fn negative_delay_is_rejected() {
        let e = err(&GOOD.replace("\"20ms\"", "\"-20ms\""));
        let s = e.to_string();
        assert!(
            s.contains("link[0].delay") && s.contains("-20ms") && s.contains("negative"),
            "{s}"
        );
        assert_eq!(e.line, Some(8));
    }

    #[test]
    fn missing_trace_names_file() {
        let text = GOOD.replace(
            "rate = \"1Mbps\"",
            "trace = \"no/such.trace\"\ntrace_format = \"mahimahi\"",
        );
        let e = err(&text);
        let s = e.to_string();
        assert!(
            s.contains("no/such.trace") && s.contains("not found") && s.contains("link[0].trace"),
            "{s}"
        );
        assert_eq!(e.line, Some(7));
    }

    #[test]
    fn kind_specific_options_are_checked() {
        let e = err(&format!("{GOOD}rate = \"1Mbps\"\n"));
        assert!(
            e.to_string()
                .contains("only applies to flows of kind udp-cbr"),
            "{e}"
        );
        let e = err(&GOOD.replace("cc = \"gcc\"", "cc = \"nope\""));
        assert!(
            e.to_string()
                .contains("unknown congestion controller \"nope\""),
            "{e}"
        );
    }

    #[test]
    fn queue_specs() {
        assert_eq!("50pkts".parse::<QueueSpec>(), Ok(QueueSpec::Packets(50)));
        assert_eq!(
            "100ms".parse::<QueueSpec>(),
            Ok(QueueSpec::Time(Duration::from_millis(100)))
        );
        assert_eq!("unlimited".parse::<QueueSpec>(), Ok(QueueSpec::Unlimited));
        assert!("lots".parse::<QueueSpec>().is_err());
    }

    #[test]
    fn loss_models_validate() {
        let e = err(&GOOD.replace(
            "queue = \"60KB\"",
            "queue = \"60KB\"\nloss = { model = \"bernoulli\" }",
        ));
        assert!(e.to_string().contains("needs `p`"), "{e}");
        let e = err(&GOOD.replace(
            "queue = \"60KB\"",
            "queue = \"60KB\"\nloss = { model = \"bernoulli\", p = 1.5 }",
        ));
        assert!(e.to_string().contains("[0, 1]"), "{e}");
        Scenario::from_toml_str(
            &GOOD.replace("queue = \"60KB\"", "queue = \"60KB\"\nloss = { model = \"gilbert-elliott\", step = \"30ms\", p_gb = 0.2, p_bg = 0.8, loss_good = 0.01, loss_bad = 0.4 }"),
            "s.toml",
        )
        .unwrap();
    }

    #[test]
    fn robustness_keys_reach_the_link_configurations() {
        use crate::link::LossConfig;
        // A route change, loss on the reverse path, a reverse TCP flow.
        let text = GOOD
            .replace(
                "delay = \"20ms\"",
                "delay_schedule = [{ at = \"0s\", delay = \"20ms\" }, { at = \"5s\", delay = \"80ms\" }]",
            )
            .replace(
                "[[link]]",
                "[topology]\nreverse_rate = \"1Mbps\"\nreverse_loss = { model = \"outage\", windows = [[\"2s\", \"3s\"]] }\n[[link]]",
            )
            + "[[flow]]\nname = \"up\"\nkind = \"tcp\"\ndirection = \"reverse\"\n";
        let s = Scenario::from_toml_str(&text, "s.toml").unwrap();
        assert!(s.flows[0].get_ref().direction.is_none());
        assert_eq!(
            s.flows[1]
                .get_ref()
                .direction
                .as_ref()
                .map(|d| *d.get_ref()),
            Some(FlowDirection::Reverse)
        );
        let fwd = s.link_config(0).unwrap();
        assert_eq!(fwd.delay, Duration::ZERO);
        assert_eq!(fwd.min_delay(), Duration::from_millis(20));
        assert_eq!(
            fwd.delay_at(rtcc_core::Instant::from_secs(5)),
            Duration::from_millis(80)
        );
        assert!(matches!(fwd.loss, LossConfig::None));
        // The reverse link follows the forward delay schedule and takes
        // `reverse_loss`.
        let rev = s.reverse_link_config(0).unwrap();
        assert_eq!(rev.delay_schedule, fwd.delay_schedule);
        match &rev.loss {
            LossConfig::Outage(w) => assert_eq!(
                w.windows().collect::<Vec<_>>(),
                vec![(Duration::from_secs(2), Duration::from_secs(3))]
            ),
            other => panic!("reverse loss {other:?}"),
        }
        // `reverse_delay` fixes the reverse delay whatever the forward does.
        let fixed = text.replace("[topology]", "[topology]\nreverse_delay = \"30ms\"");
        let rev = Scenario::from_toml_str(&fixed, "s.toml")
            .unwrap()
            .reverse_link_config(0)
            .unwrap();
        assert_eq!(
            (rev.delay, rev.delay_schedule.is_none()),
            (Duration::from_millis(30), true)
        );
    }
}
