//! `rtcc send` / `rtcc recv` options as the command line gives them (strings),
//! turned into [`SendConfig`] / [`RecvConfig`] with errors that name the option
//! and the value.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use rtcc_core::Duration;
use rtcc_sim::scenario::Scenario;
use rtcc_sim::MediaSetup;

use crate::recv::RecvConfig;
use crate::send::{SendConfig, Source};
use crate::wire::{FeedbackFormat, WireConfig};
use crate::NetError;

/// Options of `rtcc send`.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// `--to HOST:PORT`.
    pub to: String,
    /// `--bind HOST:PORT` (default any port on all interfaces).
    pub bind: Option<String>,
    /// `--cc NAME`: overrides the scenario flow's controller (default gcc).
    pub cc: Option<String>,
    /// `--source FILE.h264` (`None` = synthetic).
    pub source: Option<PathBuf>,
    /// `--fps` of an H.264 source.
    pub fps: f64,
    /// Loop an H.264 source.
    pub looped: bool,
    /// `--scenario FILE`.
    pub scenario: Option<PathBuf>,
    /// `--flow NAME` of the scenario.
    pub flow: Option<String>,
    /// `--duration D`.
    pub duration: Option<String>,
    /// `--out DIR`.
    pub out_dir: Option<PathBuf>,
    /// `--sdp FILE`.
    pub sdp: Option<PathBuf>,
    /// `--seed N`.
    pub seed: u64,
    /// Back off when feedback stops (`--no-feedback-timeout` clears it: a
    /// stock receiver sends no congestion feedback).
    pub feedback_timeout: bool,
}

/// Options of `rtcc recv`.
#[derive(Debug, Clone, Default)]
pub struct RecvOptions {
    /// `--listen HOST:PORT`.
    pub listen: String,
    /// `--out DIR`.
    pub out_dir: Option<PathBuf>,
    /// `--scenario FILE` (feedback interval, player).
    pub scenario: Option<PathBuf>,
    /// `--flow NAME`.
    pub flow: Option<String>,
    /// `--duration D`.
    pub duration: Option<String>,
    /// `--idle-timeout D`.
    pub idle_timeout: Option<String>,
    /// `--feedback twcc|rfc8888`.
    pub feedback: Option<String>,
}

/// `host:port`, preferring IPv4 when a name resolves to both (the endpoints
/// usually listen on 127.0.0.1 while `localhost` may resolve to ::1 first).
pub fn parse_addr(option: &str, value: &str) -> Result<SocketAddr, NetError> {
    resolve(value).map_err(|message| NetError::Config {
        field: option.to_string(),
        message: format!("`{value}`: {message}"),
    })
}

/// Resolves `host:port`, preferring IPv4; the error says why not.
pub(crate) fn resolve(value: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = value
        .to_socket_addrs()
        .map_err(|e| format!("expected host:port ({e})"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| "the name has no address".to_string())
}

/// A duration such as `"30s"`.
pub fn parse_duration(option: &str, value: &str) -> Result<Duration, NetError> {
    value.parse::<Duration>().map_err(|e| NetError::Config {
        field: option.to_string(),
        message: format!("`{value}`: {e}"),
    })
}

fn media(scenario: Option<&PathBuf>, flow: Option<&str>) -> Result<MediaSetup, NetError> {
    match scenario {
        None => {
            if flow.is_some() {
                return Err(NetError::Config {
                    field: "--flow".into(),
                    message: "needs --scenario".into(),
                });
            }
            crate::default_media("gcc")
        }
        Some(path) => {
            let bad = |e: rtcc_sim::ScenarioError| NetError::Config {
                field: "--scenario".into(),
                message: e.to_string(),
            };
            let sc = Scenario::from_file(path).map_err(bad)?;
            rtcc_sim::media_setup(&sc, flow).map_err(bad)
        }
    }
}

impl SendOptions {
    /// The sender configuration these options describe.
    pub fn build(&self) -> Result<SendConfig, NetError> {
        let to = parse_addr("--to", &self.to)?;
        let bind = match &self.bind {
            Some(b) => parse_addr("--bind", b)?,
            None if to.is_ipv4() => SocketAddr::from(([0, 0, 0, 0], 0)),
            None => SocketAddr::from(([0u16; 8], 0)),
        };
        let mut media = media(self.scenario.as_ref(), self.flow.as_deref())?;
        if let Some(cc) = &self.cc {
            media.sender.cc =
                rtcc_sim::default_cc_config(cc, &media.encoder).map_err(|m| NetError::Config {
                    field: "--cc".into(),
                    message: m,
                })?;
        }
        if !self.feedback_timeout {
            media.sender.feedback_timeout = None;
        }
        let source = match &self.source {
            None => Source::Synthetic,
            Some(path) => {
                if !(self.fps.is_finite() && self.fps > 0.0 && self.fps <= 1000.0) {
                    return Err(NetError::Config {
                        field: "--fps".into(),
                        message: format!("`{}`: must be in (0, 1000]", self.fps),
                    });
                }
                Source::H264 {
                    path: path.clone(),
                    fps: self.fps,
                    looped: self.looped,
                }
            }
        };
        Ok(SendConfig {
            to,
            bind,
            media,
            source,
            wire: WireConfig::default(),
            duration: self
                .duration
                .as_deref()
                .map(|d| parse_duration("--duration", d))
                .transpose()?,
            seed: self.seed,
            out_dir: self.out_dir.clone(),
            sdp: self.sdp.clone(),
        })
    }
}

impl RecvOptions {
    /// The receiver configuration these options describe.
    pub fn build(&self) -> Result<RecvConfig, NetError> {
        let listen = parse_addr("--listen", &self.listen)?;
        let media = media(self.scenario.as_ref(), self.flow.as_deref())?;
        let feedback_format = match self.feedback.as_deref() {
            None | Some("twcc") => FeedbackFormat::TransportCc,
            Some("rfc8888") => FeedbackFormat::Rfc8888,
            Some(other) => {
                return Err(NetError::Config {
                    field: "--feedback".into(),
                    message: format!("`{other}`: expected twcc or rfc8888"),
                })
            }
        };
        let dur = |opt: &str, v: &Option<String>| {
            v.as_deref().map(|d| parse_duration(opt, d)).transpose()
        };
        Ok(RecvConfig {
            listen,
            receiver: media.receiver,
            wire: WireConfig {
                feedback_format,
                ..WireConfig::default()
            },
            duration: dur("--duration", &self.duration)?,
            idle_timeout: dur("--idle-timeout", &self.idle_timeout)?,
            out_dir: self.out_dir.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(to: &str) -> SendOptions {
        SendOptions {
            to: to.into(),
            fps: 30.0,
            looped: true,
            seed: 1,
            feedback_timeout: true,
            ..SendOptions::default()
        }
    }

    #[test]
    fn errors_name_the_option_and_the_value() {
        let e = send("nohost").build().unwrap_err().to_string();
        assert!(e.contains("--to") && e.contains("nohost"), "{e}");
        let mut o = send("127.0.0.1:5004");
        o.duration = Some("3 parsecs".into());
        let e = o.build().unwrap_err().to_string();
        assert!(e.contains("--duration") && e.contains("3 parsecs"), "{e}");
        let mut o = send("127.0.0.1:5004");
        o.cc = Some("bbr9".into());
        let e = o.build().unwrap_err().to_string();
        assert!(e.contains("--cc") && e.contains("bbr9"), "{e}");
        let r = RecvOptions {
            listen: "127.0.0.1:5004".into(),
            feedback: Some("nack".into()),
            ..RecvOptions::default()
        };
        let e = r.build().unwrap_err().to_string();
        assert!(e.contains("--feedback") && e.contains("nack"), "{e}");
    }

    #[test]
    fn scenario_flow_settings_are_used() {
        let dir = std::env::temp_dir().join(format!("rtcc-opts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.toml");
        std::fs::write(
            &path,
            "name = \"s\"\nduration = \"5s\"\n[[link]]\nname = \"bottleneck\"\nrate = \"1Mbps\"\n\
             [[flow]]\nname = \"v\"\nkind = \"media\"\ncc = \"fixed\"\nfeedback_interval = \"80ms\"\n",
        )
        .unwrap();
        let mut o = send("127.0.0.1:5004");
        o.scenario = Some(path.clone());
        let cfg = o.build().unwrap();
        assert!(matches!(cfg.media.sender.cc, rtcc_core::CcConfig::Fixed(_)));
        let r = RecvOptions {
            listen: "127.0.0.1:5004".into(),
            scenario: Some(path.clone()),
            flow: Some("v".into()),
            ..RecvOptions::default()
        };
        assert_eq!(
            r.build().unwrap().receiver.feedback_interval,
            Duration::from_millis(80)
        );
        let bad = RecvOptions {
            flow: Some("nope".into()),
            ..r
        };
        let e = bad.build().unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
    }
}
