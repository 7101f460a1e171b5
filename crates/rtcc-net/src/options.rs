//! `rtcc send` / `rtcc recv` options as the command line gives them (strings),
//! turned into [`SendConfig`] / [`RecvConfig`] with errors that name the option
//! and the value.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use rtcc_core::recovery::RecoveryConfig;
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
    /// `--recovery none|nack`: overrides the scenario flow's loss recovery
    /// (default: the flow's, else none). The receiver must use the same.
    pub recovery: Option<String>,
    /// `--rtcp HOST:PORT`: the receiver's RTCP address, when it does not
    /// multiplex RTCP on its RTP port (RFC 5761).
    pub rtcp: Option<String>,
    /// `--rtcp-listen HOST:PORT`: our own RTCP address (no multiplexing).
    pub rtcp_listen: Option<String>,
    /// `--pcap FILE`: a capture of the datagrams sent and received.
    pub pcap: Option<PathBuf>,
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
    /// `--recovery none|nack`: overrides the scenario flow's loss recovery
    /// (default: the flow's, else none). The sender must use the same.
    pub recovery: Option<String>,
    /// `--peer HOST:PORT`: accept media from this address only.
    pub peer: Option<String>,
    /// `--rtcp HOST:PORT`: the sender's RTCP address, when it does not
    /// multiplex RTCP on its RTP port (RFC 5761).
    pub rtcp: Option<String>,
    /// `--rtcp-listen HOST:PORT`: our own RTCP address (no multiplexing).
    pub rtcp_listen: Option<String>,
    /// `--pcap FILE`: a capture of the datagrams sent and received.
    pub pcap: Option<PathBuf>,
}

/// An optional `host:port` option ([`parse_addr`] when given).
fn opt_addr(option: &str, value: Option<&str>) -> Result<Option<SocketAddr>, NetError> {
    value.map(|v| parse_addr(option, v)).transpose()
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

/// Applies `--recovery NAME` to `media`, both ends: the scheme's defaults,
/// with NACK's frame deadline the player's (`playout_delay + max_frame_wait`,
/// as the simulator sets it for a flow's `recovery` key).
fn apply_recovery(media: &mut MediaSetup, name: Option<&str>) -> Result<(), NetError> {
    let Some(name) = name else {
        return Ok(());
    };
    let mut r = RecoveryConfig::default_for(name).ok_or_else(|| NetError::Config {
        field: "--recovery".into(),
        message: format!(
            "`{name}`: expected one of {}",
            RecoveryConfig::NAMES.join(", ")
        ),
    })?;
    if let RecoveryConfig::Nack(c) = &mut r {
        let p = &media.receiver.player;
        c.frame_deadline = p.playout_delay + p.max_frame_wait;
    }
    media.sender.recovery = r.clone();
    media.receiver.recovery = r;
    Ok(())
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
            media.sender.cc = rtcc_sim::default_cc_config(cc, &media.encoder, media.svc.as_ref())
                .map_err(|m| NetError::Config {
                field: "--cc".into(),
                message: m,
            })?;
        }
        if !self.feedback_timeout {
            media.sender.feedback_timeout = None;
        }
        apply_recovery(&mut media, self.recovery.as_deref())?;
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
            rtcp: opt_addr("--rtcp", self.rtcp.as_deref())?,
            rtcp_listen: opt_addr("--rtcp-listen", self.rtcp_listen.as_deref())?,
            pcap: self.pcap.clone(),
        })
    }
}

impl RecvOptions {
    /// The receiver configuration these options describe.
    pub fn build(&self) -> Result<RecvConfig, NetError> {
        let listen = parse_addr("--listen", &self.listen)?;
        let mut media = media(self.scenario.as_ref(), self.flow.as_deref())?;
        apply_recovery(&mut media, self.recovery.as_deref())?;
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
            peer: opt_addr("--peer", self.peer.as_deref())?,
            rtcp: opt_addr("--rtcp", self.rtcp.as_deref())?,
            rtcp_listen: opt_addr("--rtcp-listen", self.rtcp_listen.as_deref())?,
            pcap: self.pcap.clone(),
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
        let mut o = send("127.0.0.1:5004");
        o.recovery = Some("fec".into());
        let e = o.build().unwrap_err().to_string();
        assert!(e.contains("--recovery") && e.contains("fec"), "{e}");
    }

    #[test]
    fn recovery_comes_from_the_flow_or_the_option() {
        let dir = std::env::temp_dir().join(format!("rtcc-opts-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.toml");
        std::fs::write(
            &path,
            "name = \"s\"\nduration = \"5s\"\n[[link]]\nname = \"bottleneck\"\nrate = \"1Mbps\"\n\
             [[flow]]\nname = \"v\"\nkind = \"media\"\ncc = \"gcc\"\nrecovery = \"nack\"\n",
        )
        .unwrap();
        // Default: none on both ends.
        let o = send("127.0.0.1:5004");
        assert!(o.build().unwrap().media.sender.recovery.is_none());
        let r = RecvOptions {
            listen: "127.0.0.1:5004".into(),
            ..RecvOptions::default()
        };
        assert!(r.build().unwrap().receiver.recovery.is_none());
        // The scenario flow's `recovery`.
        let mut o = send("127.0.0.1:5004");
        o.scenario = Some(path.clone());
        assert_eq!(o.build().unwrap().media.sender.recovery.name(), "nack");
        let mut rs = r.clone();
        rs.scenario = Some(path.clone());
        assert_eq!(rs.build().unwrap().receiver.recovery.name(), "nack");
        // The option overrides it, both ways; the deadline is the player's.
        o.recovery = Some("none".into());
        assert!(o.build().unwrap().media.sender.recovery.is_none());
        let mut rn = r.clone();
        rn.recovery = Some("nack".into());
        let cfg = rn.build().unwrap();
        let RecoveryConfig::Nack(c) = &cfg.receiver.recovery else {
            panic!("{:?}", cfg.receiver.recovery);
        };
        let p = &cfg.receiver.player;
        assert_eq!(c.frame_deadline, p.playout_delay + p.max_frame_wait);
    }

    #[test]
    fn repair_needs_a_layered_encoder_and_a_controller_that_plans_it() {
        let dir = std::env::temp_dir().join(format!("rtcc-opts-repair-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.toml");
        let flow = |name: &str, cc: &str, encoder: &str| {
            format!("[[flow]]\nname = \"{name}\"\nkind = \"media\"\n{cc}\n{encoder}\n")
        };
        let svc = "encoder = { kind = \"svc\", layers = 10 }";
        let text = [
            "name = \"s\"\nduration = \"5s\"\n[[link]]\nname = \"bottleneck\"\nrate = \"1Mbps\"\n"
                .to_string(),
            flow("cdm", "cc = \"cdm\"", svc),
            flow(
                "fixed-fec",
                "cc = \"fixed\"\ncc_config = { plan = { layers = 5, protected = 2 } }",
                svc,
            ),
            flow(
                "fixed-data",
                "cc = \"fixed\"\ncc_config = { plan = { layers = 5 } }",
                svc,
            ),
            flow("gcc", "cc = \"gcc\"", svc),
            flow("cdm-parametric", "cc = \"cdm\"", ""),
        ]
        .concat();
        std::fs::write(&path, text).unwrap();
        let config = |name: &str, source: Option<&str>, recovery: Option<&str>| {
            let mut o = send("127.0.0.1:5004");
            o.scenario = Some(path.clone());
            o.flow = Some(name.into());
            o.source = source.map(PathBuf::from);
            o.recovery = recovery.map(String::from);
            o.build().unwrap()
        };
        for (name, repair) in [
            ("cdm", true),
            ("fixed-fec", true),
            ("fixed-data", false),
            ("gcc", false),
            ("cdm-parametric", false),
        ] {
            let c = config(name, None, None);
            assert_eq!(c.may_send_repair(), repair, "{name}");
            // The RTX stream exists for repair or for loss recovery.
            assert_eq!(c.rtx_stream(), repair, "{name}");
            assert!(config(name, None, Some("nack")).rtx_stream(), "{name}");
        }
        // An H.264 file has no layers, whatever the flow's encoder says.
        let h264 = config("cdm", Some("clip.h264"), None);
        assert!(!h264.may_send_repair() && !h264.rtx_stream());
    }

    #[test]
    fn a_layered_controller_from_cc_takes_the_scenario_encoders_layers() {
        let dir = std::env::temp_dir().join(format!("rtcc-opts-layers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.toml");
        std::fs::write(
            &path,
            "name = \"s\"\nduration = \"5s\"\n[[link]]\nname = \"bottleneck\"\nrate = \"1Mbps\"\n\
             [[flow]]\nname = \"v\"\nkind = \"media\"\ncc = \"gcc\"\n\
             encoder = { kind = \"svc\", layers = 8, layer_rate = \"50kbps\" }\n",
        )
        .unwrap();
        let mut o = send("127.0.0.1:5004");
        o.scenario = Some(path.clone());
        // `--cc cdm` over the flow's gcc: CDM's PIDs are the encoder's 8
        // layers of 50 kbps, as the same scenario with `cc = "cdm"` gets.
        o.cc = Some("cdm".into());
        let rtcc_core::CcConfig::Cdm(c) = o.build().unwrap().media.sender.cc else {
            panic!("not cdm");
        };
        assert_eq!((c.pids, c.nominal_rate), (8, rtcc_core::Bitrate::kbps(400)));
        o.cc = Some("svc-probing".into());
        let rtcc_core::CcConfig::SvcProbing(c) = o.build().unwrap().media.sender.cc else {
            panic!("not svc-probing");
        };
        assert_eq!(c.ladder.len(), 8);
        assert_eq!(c.ladder.rate(8), rtcc_core::Bitrate::kbps(400));
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
