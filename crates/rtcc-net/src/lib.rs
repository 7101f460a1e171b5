//! rtcc-net: the real transport (DESIGN §5).
//!
//! The very same `rtcc-core` sender and receiver sessions the simulator drives,
//! carried over real UDP sockets as RTP (RFC 3550) with the transport-wide
//! sequence-number header extension, and RTCP feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01, or RFC 8888), with
//! NACK-based loss recovery as RTCP generic NACK (RFC 4585 §6.2.1) and RFC 4588
//! retransmission packets, which also carry a layer plan's repair packets.
//! A link emulator replays the simulator's link models on a real clock.
//!
//! Malformed or unexpected datagrams are dropped and counted, never a panic.
mod capture;
pub mod clock;
pub mod emulate;
#[doc(hidden)]
pub mod fuzz;
pub mod h264;
pub mod options;
pub mod plain;
pub mod recv;
pub mod reports;
pub mod sdp;
pub mod send;
pub mod wire;

/// Receives on `sock` if there is one; never completes otherwise (a branch
/// of a `select!` that is off).
async fn recv_opt(
    sock: Option<&tokio::net::UdpSocket>,
    buf: &mut [u8],
) -> std::io::Result<(usize, std::net::SocketAddr)> {
    match sock {
        Some(s) => s.recv_from(buf).await,
        None => std::future::pending().await,
    }
}

use std::path::Path;

/// Why a real-transport run could not start or had to stop.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// A setting is invalid; names the option/field and says why.
    #[error("{field}: {message}")]
    Config {
        /// The option or field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A socket or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (with the address or path).
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A bug: please report it.
    #[error("internal error: {0}")]
    Internal(String),
}

impl NetError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> NetError {
        NetError::Io {
            what: path.display().to_string(),
            source,
        }
    }
}

/// Runs `fut` to completion on a current-thread tokio runtime: one run, one
/// thread, so a caller (Python) can run several side by side.
pub(crate) fn block_on<T>(
    fut: impl std::future::Future<Output = Result<T, NetError>>,
) -> Result<T, NetError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| NetError::Io {
            what: "tokio runtime".into(),
            source: e,
        })?;
    rt.block_on(fut)
}

/// Checks the wire settings and binds the run's UDP socket.
pub(crate) async fn open_socket(
    wire: &wire::WireConfig,
    addr: std::net::SocketAddr,
) -> Result<tokio::net::UdpSocket, NetError> {
    wire.validate().map_err(|e| NetError::Config {
        field: "wire".into(),
        message: e.to_string(),
    })?;
    tokio::net::UdpSocket::bind(addr)
        .await
        .map_err(|e| NetError::Io {
            what: format!("bind {addr}"),
            source: e,
        })
}

/// The media settings of a scenario flow with only `cc = "<name>"` set: the
/// library's defaults ([`ParametricEncoderConfig::default`],
/// [`SenderConfig::with_cc`], [`ReceiverConfig::default`]), the same the
/// simulator gives such a flow. A real H.264 source drops no frames at the
/// sender whatever this says (`send::run` turns it off: its bitstream cannot
/// skip a frame).
///
/// [`ParametricEncoderConfig::default`]: rtcc_core::media::encoder::ParametricEncoderConfig
/// [`SenderConfig::with_cc`]: rtcc_core::session::sender::SenderConfig::with_cc
/// [`ReceiverConfig::default`]: rtcc_core::session::receiver::ReceiverConfig
pub fn default_media(cc: &str) -> Result<rtcc_sim::MediaSetup, NetError> {
    use rtcc_core::media::encoder::ParametricEncoderConfig;
    use rtcc_core::session::receiver::ReceiverConfig;
    use rtcc_core::session::sender::SenderConfig;

    let encoder = ParametricEncoderConfig::default();
    let cc =
        rtcc_sim::default_cc_config(cc, &encoder, None).map_err(|message| NetError::Config {
            field: "--cc".into(),
            message,
        })?;
    Ok(rtcc_sim::MediaSetup {
        sender: SenderConfig::with_cc(cc),
        encoder,
        svc: None,
        receiver: ReceiverConfig::default(),
    })
}
