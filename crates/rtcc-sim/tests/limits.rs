//! The limits of docs/scenarios.md ("Limits"): every committed scenario is
//! within them, the resource guard refuses what is above them, and a run
//! that fails leaves its output folder as it was.

mod common;

use std::path::{Path, PathBuf};

use common::{repo, tmp};
use rtcc_sim::limits::{estimate, MAX_OUTPUT_BYTES, MAX_PACKETS};
use rtcc_sim::{run, RunOptions, Scenario, SimError};

const SMALL: &str = r#"
name = "small"
duration = "2s"

[[link]]
name = "bottleneck"
rate = "1Mbps"
delay = "20ms"
queue = "60KB"

[[flow]]
name = "v"
kind = "media"
cc = "gcc"
"#;

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            // Sweep grids are not scenarios.
            if p.file_name().is_some_and(|n| n != "sweeps") {
                scenario_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "toml")
            // `rtcc reproduce` specifications, not scenarios.
            && p.file_name().is_some_and(|n| n != "paper.toml")
        {
            out.push(p);
        }
    }
}

#[test]
fn every_committed_scenario_is_within_the_limits() {
    let mut files = Vec::new();
    scenario_files(&repo().join("scenarios"), &mut files);
    assert!(files.len() > 50, "found only {} scenarios", files.len());
    let mut checked = 0;
    for f in &files {
        let sc = match Scenario::from_file(f) {
            Ok(sc) => sc,
            // Scenarios that read the GPL Mahimahi traces of ../shared.
            Err(e) if e.message.contains("not found") && e.to_string().contains("shared") => {
                eprintln!("skipped (trace outside the repository): {e}");
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        // As committed (the soak's day with `--cc-trace` would be above the
        // output limit, 4.3 GB, and rightly asks for --allow-large).
        let size = estimate(&sc, false, false).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            size.refusal().is_none(),
            "{}: {:?} would be refused",
            f.display(),
            size
        );
        checked += 1;
    }
    assert!(checked > 50, "checked only {checked}");
}

#[test]
fn the_estimate_bounds_a_real_run() {
    let sc = Scenario::from_toml_str(SMALL, "<small>").unwrap();
    let dir = tmp("estimate");
    let opts = RunOptions {
        out_dir: Some(dir.clone()),
        ..Default::default()
    };
    let report = run(&sc, &opts, &mut |_| {}).unwrap();
    let size = estimate(&sc, false, false).unwrap();
    let written: u64 = ["timeseries.csv", "frames.csv"]
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .sum();
    // An upper bound, and not a wild one.
    assert!(
        size.output_bytes >= written && size.output_bytes < 4 * written,
        "estimated {} B, wrote {written} B",
        size.output_bytes
    );
    let sent = report.summary["flows"][0]["packets_sent"].as_u64().unwrap();
    assert!(
        size.packets >= sent && size.packets < 20 * sent,
        "estimated {} packets, sent {sent}",
        size.packets
    );
    std::fs::remove_dir_all(&dir).unwrap();
    // Packet captures count too: again an upper bound, not a wild one.
    let opts = RunOptions {
        out_dir: Some(dir.clone()),
        pcap_dir: Some(dir.join("pcap")),
        ..Default::default()
    };
    run(&sc, &opts, &mut |_| {}).unwrap();
    let captured: u64 = std::fs::read_dir(dir.join("pcap"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let with_pcap = estimate(&sc, false, true).unwrap();
    let pcap_estimate = with_pcap.output_bytes - size.output_bytes;
    assert!(
        pcap_estimate >= captured && pcap_estimate < 20 * captured,
        "estimated {pcap_estimate} B of captures, wrote {captured} B"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_guard_refuses_large_runs_before_writing_anything() {
    // A day at 100 Gbps: far above the packet limit.
    let huge = SMALL
        .replace("duration = \"2s\"", "duration = \"24h\"")
        .replace("rate = \"1Mbps\"", "rate = \"100Gbps\"");
    let sc = Scenario::from_toml_str(&huge, "<huge>").unwrap();
    assert!(estimate(&sc, false, false).unwrap().packets > MAX_PACKETS);
    // A day sampled every millisecond: above the output limit.
    let verbose = SMALL
        .replace("duration = \"2s\"", "duration = \"24h\"")
        .replace(
            "[[flow]]",
            "[output]\nsample_interval = \"1ms\"\n\n[[flow]]",
        );
    let sv = Scenario::from_toml_str(&verbose, "<verbose>").unwrap();
    let size = estimate(&sv, false, false).unwrap();
    assert!(size.packets <= MAX_PACKETS && size.output_bytes > MAX_OUTPUT_BYTES);
    for (sc, word) in [(&sc, "packet transmissions"), (&sv, "of output")] {
        let dir = tmp("guard");
        let opts = RunOptions {
            out_dir: Some(dir.clone()),
            ..Default::default()
        };
        let err = run(sc, &opts, &mut |_| {}).unwrap_err();
        let SimError::Scenario(e) = &err else {
            panic!("{err}")
        };
        assert!(e.message.contains(word), "{e}");
        assert!(e.message.contains("--allow-large"), "{e}");
        assert!(!dir.exists(), "{} was created", dir.display());
    }
}

#[test]
fn a_failed_run_leaves_the_output_folder_as_it_was() {
    // Found only when the world is built (after the outputs used to be
    // opened): a controller option out of range.
    let bad = SMALL.replace(
        "cc = \"gcc\"",
        "cc = \"fixed\"\ncc_config = { bitrate = \"1Mbps\", pacing_factor = 0.5 }",
    );
    let sc = Scenario::from_toml_str(&bad, "<bad>").unwrap();
    let root = tmp("failed");
    // A folder that does not exist stays absent, with its parents.
    let fresh = root.join("a/b/out");
    let opts = RunOptions {
        out_dir: Some(fresh.clone()),
        ..Default::default()
    };
    assert!(run(&sc, &opts, &mut |_| {}).is_err());
    assert!(!root.exists(), "{} was left behind", root.display());
    // A folder with an earlier run keeps it, byte for byte.
    let good = Scenario::from_toml_str(SMALL, "<good>").unwrap();
    let out = root.join("out");
    let opts = RunOptions {
        out_dir: Some(out.clone()),
        ..Default::default()
    };
    run(&good, &opts, &mut |_| {}).unwrap();
    let before: Vec<(String, Vec<u8>)> = ["summary.json", "timeseries.csv", "frames.csv"]
        .iter()
        .map(|n| (n.to_string(), std::fs::read(out.join(n)).unwrap()))
        .collect();
    assert!(run(&sc, &opts, &mut |_| {}).is_err());
    for (name, bytes) in &before {
        assert_eq!(&std::fs::read(out.join(name)).unwrap(), bytes, "{name}");
    }
    let names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["out"], "staging folders left behind");
    std::fs::remove_dir_all(root).unwrap();
}
