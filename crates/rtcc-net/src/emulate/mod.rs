//! The link emulator behind `rtcc emulate` (DESIGN §5): a UDP relay that
//! applies the simulator's link models ([`rtcc_sim::link::Link`]: rate or
//! trace, drop-tail queue, propagation delay, jitter, loss) on a real clock, in
//! both directions, so that a scenario's link can be replayed between real
//! endpoints and the two runs compared.
//!
//! ```text
//!  client ──► listen ─[forward link]─► (ephemeral) ──► forward (receiver)
//!  client ◄── listen ◄─[reverse link]─ (ephemeral) ◄── forward
//! ```
//!
//! [`config`] says what a run relays through which links and how a datagram is
//! charged on a link; [`relay`] runs it and counts what happened.

pub mod config;
pub mod relay;

pub use self::config::{EmulatorConfig, EmulatorOptions, LinkOptions, UDP_IPV4_OVERHEAD};
pub use self::relay::{
    run_blocking, run_relay, DirectionStats, EmulatorStats, LatenessSummary, Relay, StatsHandle,
    CLIENT_SILENCE,
};

/// Why the emulator could not be configured or could not run. Configuration
/// errors name the option (or the scenario file, line and key) and the value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmulatorError {
    /// An option's value does not parse.
    #[error("{option}: cannot parse `{value}`: {message}")]
    Parse {
        /// The option as spelled on the command line (`--rate`).
        option: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        message: String,
    },
    /// An option's value parses but cannot be used.
    #[error("{option}: `{value}`: {message}")]
    Option {
        /// The option as spelled on the command line.
        option: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        message: String,
    },
    /// Two options that exclude each other were both given.
    #[error("{first} and {second}: give one, not both")]
    Conflict {
        /// The first option.
        first: String,
        /// The second option.
        second: String,
    },
    /// The scenario file does not load (names its file, line, key and value).
    #[error(transparent)]
    Scenario(#[from] rtcc_sim::ScenarioError),
    /// `--link` names no `[[link]]` of the scenario.
    #[error("{file}: --link: no [[link]] named `{name}` (links: {})", available.join(", "))]
    UnknownLink {
        /// The scenario file.
        file: String,
        /// The name asked for.
        name: String,
        /// The links the scenario has.
        available: Vec<String>,
    },
    /// A link configuration built by hand is unusable.
    #[error("{direction} link: {source}")]
    Link {
        /// `forward` or `reverse`.
        direction: &'static str,
        /// What is wrong.
        #[source]
        source: rtcc_sim::link::LinkConfigError,
    },
    /// A socket could not be set up (bind, local address) or the runtime could
    /// not start.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`bind --listen 127.0.0.1:5000`).
        what: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}
