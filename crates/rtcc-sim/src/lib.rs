//! # rtcc-sim: a deterministic discrete-event network simulator
//!
//! Runs rtcc-core sessions (single-path and multipath), TCP and UDP flows
//! over links built from constant rates, real traces and schedules, in a
//! single-bottleneck, dumbbell or several-paths topology. A run is a pure function of
//! (scenario, seed): events are ordered by (time, insertion sequence), every
//! random element draws from its own stream derived from the seed, and no
//! decision depends on hash-map order.
//!
//! ```no_run
//! use rtcc_sim::{run, RunOptions, scenario::Scenario};
//! let sc = Scenario::from_file("scenarios/demo.toml".as_ref()).unwrap();
//! let report = run(&sc, &RunOptions { seed: Some(7), out_dir: Some("out".into()), ..Default::default() }, &mut |_| {}).unwrap();
//! println!("{}", report.summary);
//! ```

mod build;
mod cc_config;
mod encoder;
pub mod engine;
pub mod limits;
pub mod link;
mod live;
pub mod metrics;
mod outdir;
pub mod output;
pub mod pcap;
pub mod scenario;
pub mod tcp;
mod world;

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use rtcc_core::Duration;
pub use scenario::{Scenario, ScenarioError};
pub use world::{default_cc_config, media_setup, MediaSetup};

/// How to run a scenario.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Seed; `None` = the scenario's own.
    pub seed: Option<u64>,
    /// Where to write `summary.json`, `timeseries.csv`, `frames.csv` (and
    /// `cc_trace.csv` when asked for); `None` = nowhere.
    pub out_dir: Option<PathBuf>,
    /// Simulated time between progress callbacks (zero = never).
    pub progress_interval: Duration,
    /// Deliver packets ahead of the event queue when nothing can intervene
    /// (early delivery, see `World::hop`). It only saves events: outputs are
    /// the same either way, which a test checks by turning it off.
    pub lookahead: bool,
    /// Write `cc_trace.csv` (with `out_dir`) even if the scenario's
    /// `[output] cc_trace` is off.
    pub cc_trace: bool,
    /// Run even if [`limits::estimate`] puts the run above
    /// [`limits::MAX_PACKETS`] or [`limits::MAX_OUTPUT_BYTES`].
    pub allow_large: bool,
    /// Where to write a packet capture per link, `<link name>.pcap`
    /// (classic pcap, a record per packet the link forwards, at its
    /// departure; docs/scenarios.md "Packet captures"); `None` = none. May
    /// be `out_dir`. Staged like `out_dir`: the files appear when the run
    /// succeeds, and an error leaves the folder as it was.
    pub pcap_dir: Option<PathBuf>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: None,
            out_dir: None,
            progress_interval: Duration::from_secs(1),
            lookahead: true,
            cc_trace: false,
            allow_large: false,
            pcap_dir: None,
        }
    }
}

/// Progress of a run, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Simulated time reached.
    pub sim_time: Duration,
    /// Simulated time the run will reach.
    pub duration: Duration,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The content of `summary.json`: a serialised
    /// [`rtcc_core::summary::RunSummary`], which `serde_json::from_value`
    /// gives back typed.
    pub summary: serde_json::Value,
    /// Seed used.
    pub seed: u64,
    /// Where the files went.
    pub out_dir: Option<PathBuf>,
    /// Events processed.
    pub events: u64,
    /// Packets delivered to their destination endpoint (data direction).
    pub delivered_packets: u64,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// Bad scenario (exit code 2).
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// An output file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The progress callback asked to stop.
    #[error("run interrupted")]
    Interrupted,
    /// A bug.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Run a scenario.
///
/// `progress` is called every `opts.progress_interval` of simulated time; the
/// run is deterministic whatever it does.
pub fn run(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, SimError> {
    run_interruptible(scenario, opts, &mut |p| {
        progress(p);
        true
    })
}

/// Like [`run`], but the callback may stop the run by returning `false`.
pub fn run_interruptible(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(Progress) -> bool,
) -> Result<RunReport, SimError> {
    let seed = opts.seed.unwrap_or(scenario.seed());
    let io = |path: PathBuf| {
        move |source: std::io::Error| SimError::Io {
            path: path.clone(),
            source,
        }
    };
    let mut sinks = world::Sinks {
        timeseries: None,
        frames: None,
        cc_trace: None,
    };
    if !opts.allow_large {
        let size = limits::estimate(scenario, opts.cc_trace, opts.pcap_dir.is_some())?;
        if let Some(why) = size.refusal() {
            return Err(SimError::Scenario(scenario.error(None, "", why)));
        }
    }
    // Outputs go to a staging folder beside `out_dir` and move into place
    // only when the run succeeds: an error leaves `out_dir` as it was.
    let staged = match &opts.out_dir {
        Some(dir) => Some(
            outdir::StagedDir::new(dir).map_err(|(path, source)| SimError::Io { path, source })?,
        ),
        None => None,
    };
    if let Some(stage) = &staged {
        let dir = stage.path();
        let ts = dir.join("timeseries.csv");
        sinks.timeseries = Some(Box::new(BufWriter::with_capacity(
            1 << 16,
            File::create(&ts).map_err(io(ts.clone()))?,
        )));
        let fr = dir.join("frames.csv");
        sinks.frames = Some(Box::new(BufWriter::with_capacity(
            1 << 16,
            File::create(&fr).map_err(io(fr.clone()))?,
        )));
        if opts.cc_trace || scenario.output.cc_trace {
            let tr = dir.join("cc_trace.csv");
            sinks.cc_trace = Some(Box::new(BufWriter::with_capacity(
                1 << 16,
                File::create(&tr).map_err(io(tr.clone()))?,
            )));
        }
    }
    // The captures are staged apart from `out_dir` (they may go elsewhere),
    // with no optional outputs to clear: a `pcap_dir` equal to `out_dir`
    // then receives them after the other outputs, and keeps them.
    let pcap_stage = match &opts.pcap_dir {
        Some(dir) => Some(
            outdir::StagedDir::with_optional(dir, &[])
                .map_err(|(path, source)| SimError::Io { path, source })?,
        ),
        None => None,
    };
    let mut world = world::World::build(scenario, seed, sinks)?;
    world.lookahead = opts.lookahead;
    if let Some(stage) = &pcap_stage {
        world
            .open_pcap(stage.path())
            .map_err(|(path, source)| SimError::Io { path, source })?;
    }
    let duration = scenario.duration();
    let mut interrupted = false;
    let result = world.run(opts.progress_interval, &mut |now| {
        let keep = progress(Progress {
            sim_time: now - rtcc_core::Instant::ZERO,
            duration,
        });
        interrupted |= !keep;
        keep
    });
    if interrupted {
        return Err(SimError::Interrupted);
    }
    result.map_err(io(opts.out_dir.clone().unwrap_or_default()))?;
    let summary = serde_json::to_value(output::summary(&world, scenario.name(), seed))
        .map_err(|e| SimError::Internal(e.to_string()))?;
    if let Some(stage) = staged {
        // The sinks flushed at the end of `world.run`; close them before the
        // move so no handle outlives it.
        world.close_sinks();
        let p = stage.path().join("summary.json");
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| SimError::Internal(e.to_string()))?;
        std::fs::write(&p, text + "\n").map_err(io(p.clone()))?;
        stage
            .commit()
            .map_err(|(path, source)| SimError::Io { path, source })?;
    }
    if let Some(stage) = pcap_stage {
        world.close_sinks();
        stage
            .commit()
            .map_err(|(path, source)| SimError::Io { path, source })?;
    }
    Ok(RunReport {
        summary,
        seed,
        out_dir: opts.out_dir.clone(),
        events: world.events(),
        delivered_packets: world.delivered_packets,
    })
}
