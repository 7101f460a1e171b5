//! Runs one scenario without the Python front, for developing algorithms:
//!
//! ```text
//! cargo run -p rtcc-sim --example run -- SCENARIO.toml [OUT_DIR] [SEED]
//! ```
//!
//! Prints `summary.json` to stdout; writes the usual output files to `OUT_DIR`
//! when given. The supported front end is `rtcc run` (python/rtcc).

use std::path::PathBuf;
use std::process::ExitCode;

use rtcc_core::Duration;
use rtcc_sim::{run, RunOptions, Scenario};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: run SCENARIO.toml [OUT_DIR] [SEED]");
        return ExitCode::from(2);
    };
    let scenario = match Scenario::from_file(path.as_ref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let seed = match args.get(2).map(|s| s.parse::<u64>()) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            eprintln!("SEED {:?}: {e}", args[2]);
            return ExitCode::from(2);
        }
    };
    let opts = RunOptions {
        seed,
        out_dir: args.get(1).map(PathBuf::from),
        progress_interval: Duration::ZERO,
        // RTCC_NO_LOOKAHEAD=1 turns early delivery off (outputs must not change).
        lookahead: std::env::var_os("RTCC_NO_LOOKAHEAD").is_none(),
        // RTCC_CC_TRACE=1 writes cc_trace.csv whatever the scenario says.
        cc_trace: std::env::var_os("RTCC_CC_TRACE").is_some(),
        // RTCC_ALLOW_LARGE=1 runs past the resource guard.
        allow_large: std::env::var_os("RTCC_ALLOW_LARGE").is_some(),
        // RTCC_PCAP=DIR writes a packet capture per link there.
        pcap_dir: std::env::var_os("RTCC_PCAP").map(PathBuf::from),
    };
    match run(&scenario, &opts, &mut |_| {}) {
        Ok(report) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&report.summary).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
