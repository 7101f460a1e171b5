//! `rtcc-bench SCENARIO.toml [--seed N] [--out DIR]`: runs one scenario in the
//! simulator and prints one JSON line with speed and the metrics the ns-3
//! comparison reads (bench/ns3/compare.py): simulated seconds per wall
//! second, events and delivered packets per second, peak memory, per-flow
//! goodput and per-link queue delay.

use std::path::PathBuf;
use std::process::ExitCode;

use rtcc_sim::{run, RunOptions, Scenario, SimError};
use serde_json::json;

fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut scenario: Option<PathBuf> = None;
    let mut seed = None;
    let mut out = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seed" => match args.next().and_then(|s| s.parse::<u64>().ok()) {
                Some(s) => seed = Some(s),
                None => return usage("--seed needs a whole number"),
            },
            "--out" => match args.next() {
                Some(d) => out = Some(PathBuf::from(d)),
                None => return usage("--out needs a folder"),
            },
            "-h" | "--help" => return usage(""),
            s if s.starts_with('-') => return usage(&format!("unknown option {s}")),
            s => scenario = Some(PathBuf::from(s)),
        }
    }
    let Some(path) = scenario else {
        return usage("a scenario file is required");
    };
    let sc = match Scenario::from_file(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rtcc-bench: error: {e}");
            return ExitCode::from(2);
        }
    };
    let opts = RunOptions {
        seed,
        out_dir: out,
        progress_interval: rtcc_core::Duration::ZERO,
        ..RunOptions::default()
    };
    // The simulator never reads the wall clock; the benchmark times the call.
    #[expect(
        clippy::disallowed_methods,
        reason = "a benchmark measures wall time; it decides nothing"
    )]
    let t0 = std::time::Instant::now();
    let result = run(&sc, &opts, &mut |_| {});
    let elapsed = t0.elapsed();
    let report = match result {
        Ok(r) => r,
        Err(SimError::Scenario(e)) => {
            eprintln!("rtcc-bench: error: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("rtcc-bench: internal error: {e}");
            return ExitCode::from(1);
        }
    };
    let wall = elapsed.as_secs_f64().max(1e-9);
    let sim = sc.duration().as_secs_f64();
    let flows: Vec<_> = report.summary["flows"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .map(|f| json!({ "name": f["name"], "goodput_kbps": f["goodput_kbps"] }))
                .collect()
        })
        .unwrap_or_default();
    let links: Vec<_> = report.summary["links"]
        .as_array()
        .map(|ls| {
            ls.iter()
                .filter(|l| l["name"] == "bottleneck" || l["name"] == "bottleneck-reverse")
                .map(|l| json!({ "name": l["name"], "queue_delay_ms": l["queue_delay_ms"], "drops": l["drops"] }))
                .collect()
        })
        .unwrap_or_default();
    let line = json!({
        "simulator": "rtcc",
        "scenario": sc.name(),
        "seed": report.seed,
        "sim_seconds": sim,
        "wall_seconds": wall,
        "events": report.events,
        "delivered_packets": report.delivered_packets,
        "sim_seconds_per_wall_second": sim / wall,
        "events_per_second": report.events as f64 / wall,
        "delivered_packets_per_second": report.delivered_packets as f64 / wall,
        "peak_rss_kb": peak_rss_kb(),
        "flows": flows,
        "links": links,
    });
    println!("{line}");
    ExitCode::SUCCESS
}

fn usage(msg: &str) -> ExitCode {
    if !msg.is_empty() {
        eprintln!("rtcc-bench: error: {msg}");
    }
    eprintln!("usage: rtcc-bench SCENARIO.toml [--seed N] [--out DIR]");
    ExitCode::from(2)
}
