//! What the emulator relays and through which links: [`EmulatorConfig`], built
//! from command-line style options ([`EmulatorOptions`]) or from a scenario's
//! `[[link]]` ([`EmulatorConfig::from_scenario`]).
//!
//! # The two directions
//!
//! The *forward* link carries datagrams from the client (the media sender) to
//! `forward` (the receiver); the *reverse* link carries the receiver's replies
//! (RTCP feedback) back. From options, the reverse link has by default the very
//! same parameters as the forward one (rate or trace, delay, queue, loss,
//! jitter) but its own queue and its own random stream; a trace then plays from
//! the relay's start in both directions. Each `--reverse-*` option replaces the
//! corresponding forward value (`--reverse-rate` or `--reverse-trace` replaces
//! the whole rate model). From a scenario, the reverse link is the one the
//! simulator pairs with that link ([`Scenario::reverse_link_config`]: by default
//! unlimited rate and queue with the same delay, for a single topology).
//!
//! # Sizes
//!
//! A datagram is charged on the link as its UDP payload plus
//! [`UDP_IPV4_OVERHEAD`] = 28 bytes (IPv4 header, RFC 791 §3.1, 20 B; UDP
//! header, RFC 768, 8 B), whatever the sockets' address family, so that a rate,
//! a byte queue limit and a mahimahi opportunity mean what they mean in the
//! simulator, whose packet sizes are IPv4 wire sizes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rtcc_core::{Bitrate, Bytes, Duration, Probability};
use rtcc_sim::link::{
    self, LinkConfig, LossConfig, QueueLimit, RateModel, TraceFormat, MAHIMAHI_OPPORTUNITY,
};
use rtcc_sim::scenario::{QueueSpec, Scenario};

use super::EmulatorError;

/// Bytes added to a UDP payload to give its size on the link: IPv4 header
/// (RFC 791 §3.1, 20 B without options) + UDP header (RFC 768, 8 B). The
/// simulator charges the same (`rtcc-sim` world, `UDP_IP_HEADER`).
pub const UDP_IPV4_OVERHEAD: Bytes = Bytes::new(28);

/// Seed used when neither the options nor a scenario give one (the simulator's
/// default scenario seed).
pub const DEFAULT_SEED: u64 = 1;

/// RNG element id of the forward link: `rng::stream(seed, FORWARD_RNG)`. The
/// simulator's element ids are `1 << 32 + i` (links) and `2 << 32 + i` (flows);
/// the emulator's own are disjoint from them.
pub const FORWARD_RNG: u64 = 3 << 32;
/// RNG element id of the reverse link.
pub const REVERSE_RNG: u64 = FORWARD_RNG + 1;

/// A complete, validated description of one emulator run.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Address the client (media sender) sends to.
    pub listen: SocketAddr,
    /// Address of the receiver the relay forwards to.
    pub forward: SocketAddr,
    /// Link from the client to `forward`.
    pub forward_link: LinkConfig,
    /// Link from `forward` back to the client.
    pub reverse_link: LinkConfig,
    /// Seed of both links' random streams ([`FORWARD_RNG`], [`REVERSE_RNG`]).
    pub seed: u64,
    /// Stop after this long; `None` = until the shutdown signal.
    pub duration: Option<Duration>,
    /// Name of the link in the summary (the scenario's link name, or `"cli"`).
    pub link_name: String,
    /// `--client`: relay only this client's datagrams (and replies only to
    /// it). `None`: the first client, which another address replaces only
    /// after it has been silent for [`super::relay::CLIENT_SILENCE`].
    pub client: Option<SocketAddr>,
    /// `--upstream`: where the socket facing `forward` is bound (default an
    /// ephemeral port): a receiver whose RTCP leaves before it hears from
    /// the relay (GStreamer's) needs to know the address.
    pub upstream: Option<SocketAddr>,
}

impl EmulatorConfig {
    /// The same link model in both directions (independent queues and random
    /// streams), seed [`DEFAULT_SEED`], no time limit.
    pub fn symmetric(listen: SocketAddr, forward: SocketAddr, link: LinkConfig) -> EmulatorConfig {
        EmulatorConfig {
            listen,
            forward,
            reverse_link: link.clone(),
            forward_link: link,
            seed: DEFAULT_SEED,
            duration: None,
            link_name: "cli".into(),
            client: None,
            upstream: None,
        }
    }

    /// Takes the links from a scenario file: `link_name`, or by default its main
    /// link (named `"bottleneck"`, else the first), and the reverse link the
    /// simulator pairs with it. The seed is the scenario's. Scenario errors
    /// keep their file, line and key; an unknown link name is an
    /// [`EmulatorError::UnknownLink`] naming it and the links there are.
    pub fn from_scenario(
        listen: SocketAddr,
        forward: SocketAddr,
        path: &Path,
        link_name: Option<&str>,
    ) -> Result<EmulatorConfig, EmulatorError> {
        let sc = Scenario::from_file(path)?;
        let index = match link_name {
            None => sc.main_link_index(),
            Some(name) => sc
                .links
                .iter()
                .position(|l| l.get_ref().name == name)
                .ok_or_else(|| EmulatorError::UnknownLink {
                    file: path.display().to_string(),
                    name: name.to_string(),
                    available: sc.links.iter().map(|l| l.get_ref().name.clone()).collect(),
                })?,
        };
        Ok(EmulatorConfig {
            listen,
            forward,
            forward_link: sc.link_config(index)?,
            reverse_link: sc.reverse_link_config(index)?,
            seed: sc.seed(),
            duration: None,
            link_name: sc.links[index].get_ref().name.clone(),
            client: None,
            upstream: None,
        })
    }
}

/// One direction's link options, as strings from a command line (`--rate 2Mbps`).
/// Unset fields take the defaults of a scenario's `[[link]]`: unlimited rate
/// (only `delay`, `jitter`, `loss` apply), no delay, no jitter, unlimited queue,
/// no loss; a trace without a format is mahimahi.
#[derive(Debug, Clone, Default)]
pub struct LinkOptions {
    /// `--rate`: constant rate (`"2Mbps"`). Exclusive with `trace`.
    pub rate: Option<String>,
    /// `--trace`: trace file.
    pub trace: Option<PathBuf>,
    /// `--trace-format`: `mahimahi` | `throughput` | `opennetlab`.
    pub trace_format: Option<String>,
    /// `--delay`: one-way propagation delay (`"20ms"`).
    pub delay: Option<String>,
    /// `--queue`: `"60KB"`, `"50pkts"`, `"100ms"` (at the mean rate) or `"unlimited"`.
    pub queue: Option<String>,
    /// `--loss`: Bernoulli loss probability (`"1%"` or `"0.01"`).
    pub loss: Option<String>,
    /// `--jitter`: extra delay, uniform in `[0, jitter]`, without reordering.
    pub jitter: Option<String>,
}

impl LinkOptions {
    /// Whether any option is set.
    pub fn is_empty(&self) -> bool {
        self.first_set().is_none()
    }

    /// These options where set, `base`'s otherwise; a rate or a trace here
    /// replaces `base`'s whole rate model (rate, trace and trace format).
    pub fn over(&self, base: &LinkOptions) -> LinkOptions {
        let own_rate = self.rate.is_some() || self.trace.is_some();
        let pick = |a: &Option<String>, b: &Option<String>| a.clone().or_else(|| b.clone());
        LinkOptions {
            rate: if own_rate {
                self.rate.clone()
            } else {
                base.rate.clone()
            },
            trace: if own_rate {
                self.trace.clone()
            } else {
                base.trace.clone()
            },
            trace_format: if own_rate {
                self.trace_format.clone()
            } else {
                pick(&self.trace_format, &base.trace_format)
            },
            delay: pick(&self.delay, &base.delay),
            queue: pick(&self.queue, &base.queue),
            loss: pick(&self.loss, &base.loss),
            jitter: pick(&self.jitter, &base.jitter),
        }
    }

    /// The link these options describe. `prefix` is how the options are spelled
    /// in error messages (`"--"` or `"--reverse-"`).
    pub fn to_link_config(&self, prefix: &str) -> Result<LinkConfig, EmulatorError> {
        let opt = |name: &str| format!("{prefix}{name}");
        let rate = match (&self.rate, &self.trace) {
            (Some(_), Some(_)) => {
                return Err(EmulatorError::Conflict {
                    first: opt("rate"),
                    second: opt("trace"),
                })
            }
            (Some(r), None) => RateModel::Constant(parse_value::<Bitrate>(&opt("rate"), r)?),
            (None, Some(path)) => {
                let format = match &self.trace_format {
                    Some(f) => parse_value::<TraceFormat>(&opt("trace-format"), f)?,
                    None => TraceFormat::Mahimahi,
                };
                load_rate(&opt("trace"), path, format)?
            }
            (None, None) => {
                if let Some(f) = &self.trace_format {
                    return Err(EmulatorError::Option {
                        option: opt("trace-format"),
                        value: f.clone(),
                        message: format!("needs {}", opt("trace")),
                    });
                }
                RateModel::Constant(Bitrate::MAX)
            }
        };
        let duration = |name: &str, v: &Option<String>| -> Result<Duration, EmulatorError> {
            v.as_deref().map_or(Ok(Duration::ZERO), |s| {
                parse_value::<Duration>(&opt(name), s)
            })
        };
        let queue = match &self.queue {
            None => QueueLimit::Unlimited,
            Some(q) => match QueueSpec::from_str(q) {
                Ok(QueueSpec::Unlimited) => QueueLimit::Unlimited,
                Ok(QueueSpec::Bytes(b)) => QueueLimit::Bytes(b),
                Ok(QueueSpec::Packets(n)) => QueueLimit::Packets(n),
                Ok(QueueSpec::Time(d)) => QueueLimit::Time(d),
                Err(message) => {
                    return Err(EmulatorError::Parse {
                        option: opt("queue"),
                        value: q.clone(),
                        message,
                    })
                }
            },
        };
        let loss = match &self.loss {
            None => LossConfig::None,
            Some(p) => LossConfig::Bernoulli {
                p: parse_value::<Probability>(&opt("loss"), p)?,
            },
        };
        let config = LinkConfig {
            rate,
            delay: duration("delay", &self.delay)?,
            delay_schedule: None,
            jitter: duration("jitter", &self.jitter)?,
            queue,
            loss,
            mahimahi_opportunity: MAHIMAHI_OPPORTUNITY,
        };
        config.validate().map_err(|e| {
            // The only check a constant rate can fail is a zero rate.
            let (option, value) = match (&self.rate, &self.trace) {
                (Some(r), _) => (opt("rate"), r.clone()),
                (None, Some(t)) => (opt("trace"), t.display().to_string()),
                (None, None) => (opt("rate"), String::new()),
            };
            EmulatorError::Option {
                option,
                value,
                message: e.to_string(),
            }
        })?;
        Ok(config)
    }

    /// Name (without prefix) of the first option set, for conflict messages.
    fn first_set(&self) -> Option<&'static str> {
        [
            ("rate", self.rate.is_some()),
            ("trace", self.trace.is_some()),
            ("trace-format", self.trace_format.is_some()),
            ("delay", self.delay.is_some()),
            ("queue", self.queue.is_some()),
            ("loss", self.loss.is_some()),
            ("jitter", self.jitter.is_some()),
        ]
        .into_iter()
        .find_map(|(name, set)| set.then_some(name))
    }
}

/// All of `rtcc emulate`'s options, as strings. [`EmulatorOptions::build`]
/// checks them and names the option and value at fault.
#[derive(Debug, Clone, Default)]
pub struct EmulatorOptions {
    /// `--listen`: `host:port` the client sends to.
    pub listen: String,
    /// `--forward`: `host:port` of the receiver.
    pub forward: String,
    /// Forward link options (`--rate`, `--trace`, ...).
    pub link: LinkOptions,
    /// Reverse link overrides (`--reverse-rate`, ...); unset = as forward.
    pub reverse: LinkOptions,
    /// `--scenario`: take the links from this scenario instead (exclusive with
    /// the link options).
    pub scenario: Option<PathBuf>,
    /// `--link`: which `[[link]]` of the scenario (default: its main link).
    pub scenario_link: Option<String>,
    /// `--seed`: overrides the scenario's or [`DEFAULT_SEED`].
    pub seed: Option<u64>,
    /// `--duration`: stop after this long (`"30s"`).
    pub duration: Option<String>,
    /// `--client`: `host:port` of the only client relayed.
    pub client: Option<String>,
    /// `--upstream`: `host:port` to bind the socket facing `--forward` to.
    pub upstream: Option<String>,
}

impl EmulatorOptions {
    /// The configuration these options describe.
    pub fn build(&self) -> Result<EmulatorConfig, EmulatorError> {
        let listen = parse_addr("--listen", &self.listen)?;
        let forward = parse_addr("--forward", &self.forward)?;
        let mut config = match &self.scenario {
            Some(path) => {
                let conflict = self
                    .link
                    .first_set()
                    .map(|o| format!("--{o}"))
                    .or_else(|| self.reverse.first_set().map(|o| format!("--reverse-{o}")));
                if let Some(second) = conflict {
                    return Err(EmulatorError::Conflict {
                        first: "--scenario".into(),
                        second,
                    });
                }
                EmulatorConfig::from_scenario(listen, forward, path, self.scenario_link.as_deref())?
            }
            None => {
                if let Some(l) = &self.scenario_link {
                    return Err(EmulatorError::Option {
                        option: "--link".into(),
                        value: l.clone(),
                        message: "needs --scenario".into(),
                    });
                }
                let mut c =
                    EmulatorConfig::symmetric(listen, forward, self.link.to_link_config("--")?);
                if !self.reverse.is_empty() {
                    c.reverse_link = self.reverse.over(&self.link).to_link_config("--reverse-")?;
                }
                c
            }
        };
        if let Some(seed) = self.seed {
            config.seed = seed;
        }
        if let Some(d) = &self.duration {
            let d = parse_value::<Duration>("--duration", d)?;
            if d.is_zero() {
                return Err(EmulatorError::Option {
                    option: "--duration".into(),
                    value: "0s".into(),
                    message: "must be greater than 0s".into(),
                });
            }
            config.duration = Some(d);
        }
        if let Some(c) = &self.client {
            config.client = Some(parse_addr("--client", c)?);
        }
        if let Some(u) = &self.upstream {
            config.upstream = Some(parse_addr("--upstream", u)?);
        }
        Ok(config)
    }
}

/// Parses `value` as a `T`, or an error naming `option`.
fn parse_value<T>(option: &str, value: &str) -> Result<T, EmulatorError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    value.parse::<T>().map_err(|e| EmulatorError::Parse {
        option: option.to_string(),
        value: value.to_string(),
        message: e.to_string(),
    })
}

/// `host:port` (an IP literal or a name resolved now): the first IPv4 address
/// found, else the first address.
fn parse_addr(option: &str, value: &str) -> Result<SocketAddr, EmulatorError> {
    // A name such as `localhost` may resolve to ::1 first while the endpoints
    // listen on 127.0.0.1: `resolve` prefers IPv4, as most UDP tools do.
    crate::options::resolve(value).map_err(|message| EmulatorError::Parse {
        option: option.to_string(),
        value: value.to_string(),
        message,
    })
}

/// Loads a trace's rate model; OpenNetLab loss and delay columns are not used
/// (the options set loss and delay).
fn load_rate(option: &str, path: &Path, format: TraceFormat) -> Result<RateModel, EmulatorError> {
    let err = |message: String| EmulatorError::Option {
        option: option.to_string(),
        value: path.display().to_string(),
        message,
    };
    if format == TraceFormat::OpenNetLab {
        let t = link::load_opennetlab(path).map_err(|e| err(e.to_string()))?;
        return Ok(RateModel::Schedule(t.rate));
    }
    link::load_trace(path, format).map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(link: LinkOptions) -> EmulatorOptions {
        EmulatorOptions {
            listen: "127.0.0.1:0".into(),
            forward: "127.0.0.1:9".into(),
            link,
            ..Default::default()
        }
    }

    #[test]
    fn reverse_defaults_to_the_forward_parameters() {
        let c = opts(LinkOptions {
            rate: Some("2Mbps".into()),
            delay: Some("20ms".into()),
            queue: Some("60KB".into()),
            loss: Some("1%".into()),
            jitter: Some("5ms".into()),
            ..Default::default()
        })
        .build()
        .unwrap();
        for l in [&c.forward_link, &c.reverse_link] {
            assert!(matches!(l.rate, RateModel::Constant(r) if r == Bitrate::mbps(2)));
            assert_eq!(l.delay, Duration::from_millis(20));
            assert_eq!(l.jitter, Duration::from_millis(5));
            assert_eq!(l.queue, QueueLimit::Bytes(Bytes::new(60_000)));
            assert!(
                matches!(l.loss, LossConfig::Bernoulli { p } if (p.get() - 0.01).abs() < 1e-12)
            );
        }
    }

    #[test]
    fn reverse_options_override_one_field_each() {
        let mut o = opts(LinkOptions {
            rate: Some("2Mbps".into()),
            delay: Some("20ms".into()),
            ..Default::default()
        });
        o.reverse.rate = Some("500kbps".into());
        let c = o.build().unwrap();
        assert!(matches!(c.reverse_link.rate, RateModel::Constant(r) if r == Bitrate::kbps(500)));
        assert_eq!(c.reverse_link.delay, Duration::from_millis(20));
        assert!(matches!(c.forward_link.rate, RateModel::Constant(r) if r == Bitrate::mbps(2)));
    }

    #[test]
    fn no_rate_means_an_unlimited_link() {
        let c = opts(LinkOptions {
            delay: Some("50ms".into()),
            ..Default::default()
        })
        .build()
        .unwrap();
        assert!(matches!(
            c.forward_link.rate,
            RateModel::Constant(Bitrate::MAX)
        ));
        assert_eq!(c.forward_link.queue, QueueLimit::Unlimited);
    }

    #[test]
    fn rate_and_trace_conflict() {
        let e = opts(LinkOptions {
            rate: Some("2Mbps".into()),
            trace: Some("x".into()),
            ..Default::default()
        })
        .build()
        .unwrap_err();
        assert_eq!(e.to_string(), "--rate and --trace: give one, not both");
    }

    #[test]
    fn zero_rate_names_the_option() {
        let e = opts(LinkOptions {
            rate: Some("0bps".into()),
            ..Default::default()
        })
        .build()
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--rate: `0bps`: "), "{e}");
    }

    #[test]
    fn scenario_excludes_link_options() {
        let mut o = opts(LinkOptions {
            delay: Some("1ms".into()),
            ..Default::default()
        });
        o.scenario = Some("x.toml".into());
        let e = o.build().unwrap_err().to_string();
        assert_eq!(e, "--scenario and --delay: give one, not both");
    }
}
