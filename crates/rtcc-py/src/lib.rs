//! # `rtcc._native`: the private native module under the `rtcc` Python package
//!
//! A deliberately thin layer (STYLE.md rule 14, DESIGN.md §7): it converts
//! arguments, runs the simulator with the GIL released, and maps errors onto
//! two Python exception types. Everything users see — path coercion, dict
//! scenarios, DataFrames, the CLI — lives in `python/rtcc/`, and the typed
//! contract of this module is `python/rtcc/_native.pyi`, checked against the
//! compiled module by `python -m mypy.stubtest rtcc._native` in `make test`.
//!
//! Errors (DESIGN.md §4.3):
//! - bad input (scenario, trace, arguments, output directory) raises
//!   `ScenarioError`, a `ValueError`, with the simulator's one-line message
//!   naming file, line, key and value;
//! - a bug raises `RuntimeError`;
//! - an exception raised by the `progress` callback, or by a signal handler
//!   (Ctrl-C ⇒ `KeyboardInterrupt`), stops the run and propagates unchanged.

mod net;

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rtcc_core::Duration;
use rtcc_sim::scenario::Scenario;
use rtcc_sim::{Progress, RunOptions, SimError};

create_exception!(
    rtcc,
    ScenarioError,
    PyValueError,
    "Bad input: a scenario, trace or argument the simulator cannot use."
);

/// Simulated time between two returns to Python during a run: the `progress`
/// callback and pending signal handlers (Ctrl-C) run at this cadence.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Runs one scenario and returns its summary as JSON (DESIGN.md §4.2).
///
/// Exactly one of `scenario_path` (a TOML file) and `toml_text` (TOML named
/// `origin` in error messages) must be given. With `out_dir`, the run writes
/// `summary.json`, `timeseries.csv` and `frames.csv` there, and
/// `cc_trace.csv` if `cc_trace` or the scenario's `[output] cc_trace` is
/// true. With `pcap_dir`, a packet capture per link, `<link name>.pcap`,
/// goes there (docs/scenarios.md "Packet captures"). `seed` overrides
/// the scenario's seed. `progress(sim_time_s, duration_s)` is called about
/// once per simulated second with the GIL held; everything else runs without
/// it.
#[pyfunction]
#[pyo3(signature = (
    scenario_path = None,
    toml_text = None,
    origin = "<text>",
    out_dir = None,
    seed = None,
    progress = None,
    cc_trace = false,
    allow_large = false,
    pcap_dir = None,
))]
#[expect(
    clippy::too_many_arguments,
    reason = "the keyword arguments of the Python function, one by one"
)]
fn run(
    py: Python<'_>,
    scenario_path: Option<PathBuf>,
    toml_text: Option<String>,
    origin: &str,
    out_dir: Option<PathBuf>,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
    cc_trace: bool,
    allow_large: bool,
    pcap_dir: Option<PathBuf>,
) -> PyResult<String> {
    let source = match (scenario_path, toml_text) {
        (Some(path), None) => Source::File(path),
        (None, Some(text)) => Source::Text {
            text,
            origin: origin.to_owned(),
        },
        (Some(_), Some(_)) | (None, None) => {
            return Err(ScenarioError::new_err(
                "pass exactly one of `scenario_path` and `toml_text`",
            ))
        }
    };
    #[allow(
        clippy::needless_update,
        reason = "RunOptions may grow fields; new ones keep their defaults"
    )]
    let opts = RunOptions {
        seed,
        out_dir,
        progress_interval: PROGRESS_INTERVAL,
        cc_trace,
        allow_large,
        pcap_dir,
        ..RunOptions::default()
    };

    let outcome = py.detach(|| run_detached(&source, &opts, progress.as_ref()));
    outcome.map_err(Failure::into_pyerr)
}

/// Returns the version of the rtcc crates this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The native module; `rtcc/__init__.py` re-exports what users need.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(net::emulate, m)?)?;
    m.add_function(wrap_pyfunction!(net::send, m)?)?;
    m.add_function(wrap_pyfunction!(net::recv, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    // The controllers a media flow's `cc` may name, in the core's order.
    m.add(
        "CONTROLLERS",
        pyo3::types::PyTuple::new(m.py(), rtcc_core::cc::CcConfig::NAMES)?,
    )?;
    Ok(())
}

/// Where the scenario comes from.
enum Source {
    File(PathBuf),
    Text { text: String, origin: String },
}

/// Why a run did not produce a summary, decided without the GIL and turned
/// into a Python exception once it is held again.
#[derive(Debug)]
enum Failure {
    /// Scenario, trace, argument or output-directory problem: a user error.
    BadInput(String),
    /// A bug in rtcc.
    Internal(String),
    /// Raised by the progress callback or a signal handler; re-raised as is.
    Python(PyErr),
}

impl Failure {
    fn from_sim(err: SimError) -> Self {
        // Reading a trace or writing the output directory fails on the user's
        // files (a missing trace, an unwritable --out), not on a bug.
        if matches!(err, SimError::Scenario(_) | SimError::Io { .. }) {
            Failure::BadInput(err.to_string())
        } else {
            Failure::Internal(err.to_string())
        }
    }

    fn into_pyerr(self) -> PyErr {
        match self {
            Failure::BadInput(msg) => ScenarioError::new_err(msg),
            Failure::Internal(msg) => PyRuntimeError::new_err(msg),
            Failure::Python(err) => err,
        }
    }
}

/// Runs with the GIL released; re-attaches only inside the progress hook.
fn run_detached(
    source: &Source,
    opts: &RunOptions,
    callback: Option<&Py<PyAny>>,
) -> Result<String, Failure> {
    let loaded = match source {
        Source::File(path) => Scenario::from_file(path),
        Source::Text { text, origin } => Scenario::from_toml_str(text, origin),
    };
    let scenario = loaded.map_err(|e| Failure::BadInput(e.to_string()))?;

    // The exception that stopped the run, if any; `run_interruptible` only
    // learns "stop" from the hook and reports `SimError::Interrupted`.
    let mut raised: Option<PyErr> = None;
    let mut on_progress = |p: Progress| -> bool {
        let delivered = Python::attach(|py| -> PyResult<()> {
            // Runs pending signal handlers: Ctrl-C raises KeyboardInterrupt here.
            py.check_signals()?;
            if let Some(cb) = callback {
                cb.call1(py, (p.sim_time.as_secs_f64(), p.duration.as_secs_f64()))?;
            }
            Ok(())
        });
        match delivered {
            Ok(()) => true,
            Err(err) => {
                raised = Some(err);
                false
            }
        }
    };
    // A panic is a bug: report it as RuntimeError rather than let PyO3 turn
    // it into a PanicException, which `except Exception` does not catch.
    let ran = panic::catch_unwind(AssertUnwindSafe(|| {
        rtcc_sim::run_interruptible(&scenario, opts, &mut on_progress)
    }));
    match ran {
        Ok(Ok(report)) => serde_json::to_string(&report.summary)
            .map_err(|e| Failure::Internal(format!("summary is not valid JSON: {e}"))),
        Ok(Err(err)) => Err(match raised.take() {
            Some(py_err) => Failure::Python(py_err),
            None => Failure::from_sim(err),
        }),
        Err(payload) => Err(Failure::Internal(format!(
            "simulator panicked: {}",
            panic_text(&*payload)
        ))),
    }
}

/// The message of a panic payload (`panic!` with a literal or a format).
fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-text panic payload"
    }
}
