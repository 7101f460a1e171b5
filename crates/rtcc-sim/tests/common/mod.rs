//! Helpers shared by the integration tests; each test file includes this
//! module (`mod common;`) and uses a subset of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rtcc_sim::{run, RunOptions, Scenario};
use serde_json::Value;

/// The repository's root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scenario file, by its path from the repository's root.
pub(crate) fn load(rel: &str) -> Scenario {
    Scenario::from_file(&repo().join(rel)).unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh (removed) temporary directory for this test process.
pub(crate) fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtcc-sim-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Runs `sc` with `seed`, writing the output files to `dir` if given, with
/// early delivery on or off; the summary.
pub(crate) fn summary(sc: &Scenario, seed: u64, dir: Option<&Path>, lookahead: bool) -> Value {
    let opts = RunOptions {
        seed: Some(seed),
        out_dir: dir.map(Path::to_path_buf),
        lookahead,
        ..Default::default()
    };
    run(sc, &opts, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .summary
}

/// The first flow's summary of a run of `sc` (`summary`, early delivery on).
pub(crate) fn first_flow(sc: &Scenario, seed: u64, dir: Option<&Path>) -> Value {
    summary(sc, seed, dir, true)["flows"][0].clone()
}

/// Column `name` of a CSV file, by row (empty cells as `None`).
pub(crate) fn column(path: &Path, name: &str) -> Vec<Option<f64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no column {name} in {}", path.display()));
    lines
        .map(|l| {
            let cell = l.split(',').nth(col).unwrap();
            (!cell.is_empty()).then(|| cell.parse().unwrap())
        })
        .collect()
}

/// The summary entry of flow `name`.
pub(crate) fn flow<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flow {name} in {}", s["flows"]))
}

/// The summary entry of link `name`.
pub(crate) fn link<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no link {name} in {}", s["links"]))
}
