//! The real-transport commands (`rtcc emulate`, `rtcc send`, `rtcc recv`):
//! each runs on its own thread with the GIL released, while the calling thread
//! wakes every 100 ms to run Python's signal handlers; Ctrl-C sets the run's
//! stop flag, the run winds down (writing its files), and `KeyboardInterrupt`
//! propagates.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use rtcc_net::emulate::{run_blocking as run_emulator, EmulatorOptions, LinkOptions};
use rtcc_net::options::{RecvOptions, SendOptions};
use rtcc_net::NetError;

use crate::ScenarioError;

/// How a real-transport run ended, decided on its thread.
pub(crate) enum NetOutcome {
    /// Its JSON report.
    Done(String),
    /// A user error (address, option, file).
    BadInput(String),
    /// A bug.
    Internal(String),
}

/// Runs `work` on a thread, GIL released, polling signals every 100 ms.
pub(crate) fn run_on_thread(
    py: Python<'_>,
    work: impl FnOnce(Arc<AtomicBool>) -> NetOutcome + Send + 'static,
) -> PyResult<String> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = std::thread::Builder::new()
        .name("rtcc-net".into())
        .spawn(move || work(flag))
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
    let mut interrupted: Option<PyErr> = None;
    py.detach(|| {
        while !handle.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if interrupted.is_none() {
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    interrupted = Some(e);
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    let outcome = handle
        .join()
        .map_err(|_| PyRuntimeError::new_err("the network thread panicked (a bug in rtcc)"))?;
    if let Some(e) = interrupted {
        return Err(e);
    }
    match outcome {
        NetOutcome::Done(json) => Ok(json),
        NetOutcome::BadInput(msg) => Err(ScenarioError::new_err(msg)),
        NetOutcome::Internal(msg) => Err(PyRuntimeError::new_err(msg)),
    }
}

fn link_options(mut o: HashMap<String, String>) -> Result<LinkOptions, String> {
    let mut take = |k: &str| o.remove(k);
    let opts = LinkOptions {
        rate: take("rate"),
        trace: take("trace").map(PathBuf::from),
        trace_format: take("trace_format"),
        delay: take("delay"),
        queue: take("queue"),
        loss: take("loss"),
        jitter: take("jitter"),
    };
    match o.keys().next() {
        Some(k) => Err(format!("unknown link option `{k}`")),
        None => Ok(opts),
    }
}

/// Runs the link emulator (a UDP relay through the simulator's link models)
/// and returns its statistics as JSON. `link` and `reverse` map option names
/// (rate, trace, trace_format, delay, queue, loss, jitter) to strings.
#[pyfunction]
#[pyo3(signature = (
    listen,
    forward,
    link = HashMap::new(),
    reverse = HashMap::new(),
    scenario = None,
    scenario_link = None,
    seed = None,
    duration = None,
    client = None,
    upstream = None,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn emulate(
    py: Python<'_>,
    listen: String,
    forward: String,
    link: HashMap<String, String>,
    reverse: HashMap<String, String>,
    scenario: Option<PathBuf>,
    scenario_link: Option<String>,
    seed: Option<u64>,
    duration: Option<String>,
    client: Option<String>,
    upstream: Option<String>,
) -> PyResult<String> {
    let opts = EmulatorOptions {
        listen,
        forward,
        link: link_options(link).map_err(ScenarioError::new_err)?,
        reverse: link_options(reverse).map_err(ScenarioError::new_err)?,
        scenario,
        scenario_link,
        seed,
        duration,
        client,
        upstream,
    };
    let config = opts
        .build()
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    run_on_thread(py, move |stop| match run_emulator(config, stop) {
        Ok(stats) => match serde_json::to_string(&stats.summary_json()) {
            Ok(s) => NetOutcome::Done(s),
            Err(e) => NetOutcome::Internal(e.to_string()),
        },
        Err(e) => NetOutcome::BadInput(e.to_string()),
    })
}

/// Sends video over RTP/UDP under congestion control; returns the sender's
/// statistics as JSON.
#[pyfunction]
#[pyo3(signature = (
    to,
    cc = None,
    source = None,
    fps = 30.0,
    looped = true,
    scenario = None,
    flow = None,
    duration = None,
    out_dir = None,
    sdp = None,
    seed = 1,
    bind = None,
    feedback_timeout = true,
    recovery = None,
    rtcp = None,
    rtcp_listen = None,
    pcap = None,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn send(
    py: Python<'_>,
    to: String,
    cc: Option<String>,
    source: Option<PathBuf>,
    fps: f64,
    looped: bool,
    scenario: Option<PathBuf>,
    flow: Option<String>,
    duration: Option<String>,
    out_dir: Option<PathBuf>,
    sdp: Option<PathBuf>,
    seed: u64,
    bind: Option<String>,
    feedback_timeout: bool,
    recovery: Option<String>,
    rtcp: Option<String>,
    rtcp_listen: Option<String>,
    pcap: Option<PathBuf>,
) -> PyResult<String> {
    let opts = SendOptions {
        to,
        bind,
        cc,
        source,
        fps,
        looped,
        scenario,
        flow,
        duration,
        out_dir,
        sdp,
        seed,
        feedback_timeout,
        recovery,
        rtcp,
        rtcp_listen,
        pcap,
    };
    let config = opts
        .build()
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    run_on_thread(py, move |stop| {
        match rtcc_net::send::run_blocking(config, stop) {
            Ok(report) => NetOutcome::Done(report.to_json().to_string()),
            Err(e) => net_failure(e),
        }
    })
}

/// Receives video, sends feedback, writes the simulator's output files;
/// returns the run's `summary.json` as JSON.
#[pyfunction]
#[pyo3(signature = (
    listen,
    out_dir = None,
    scenario = None,
    flow = None,
    duration = None,
    idle_timeout = None,
    feedback = None,
    recovery = None,
    peer = None,
    rtcp = None,
    rtcp_listen = None,
    pcap = None,
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn recv(
    py: Python<'_>,
    listen: String,
    out_dir: Option<PathBuf>,
    scenario: Option<PathBuf>,
    flow: Option<String>,
    duration: Option<String>,
    idle_timeout: Option<String>,
    feedback: Option<String>,
    recovery: Option<String>,
    peer: Option<String>,
    rtcp: Option<String>,
    rtcp_listen: Option<String>,
    pcap: Option<PathBuf>,
) -> PyResult<String> {
    let opts = RecvOptions {
        listen,
        out_dir,
        scenario,
        flow,
        duration,
        idle_timeout,
        feedback,
        recovery,
        peer,
        rtcp,
        rtcp_listen,
        pcap,
    };
    let config = opts
        .build()
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    run_on_thread(py, move |stop| {
        match rtcc_net::recv::run_blocking(config, stop) {
            Ok(report) => NetOutcome::Done(report.summary.to_string()),
            Err(e) => net_failure(e),
        }
    })
}

/// User errors (options, sockets, files) versus bugs.
fn net_failure(e: NetError) -> NetOutcome {
    match e {
        NetError::Internal(m) => NetOutcome::Internal(m),
        other => NetOutcome::BadInput(other.to_string()),
    }
}
