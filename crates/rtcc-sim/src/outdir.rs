//! An output folder that appears whole or not at all.
//!
//! A run writes into a staging folder beside the requested one (same parent,
//! so the final `rename` stays on one file system and is atomic) and moves
//! its files into place only when the run succeeded. On any error, an
//! interruption or a panic the staging folder is removed by `Drop`, as is
//! every parent folder this run had to create: `--out` is left exactly as
//! it was (docs/scenarios.md, "Limits").
//!
//! When the requested folder already exists, each produced file replaces its
//! namesake by `rename` (atomic per file), and the optional outputs this run
//! did not produce (a `cc_trace.csv` of an earlier `--cc-trace` run) are
//! removed, so the folder never mixes two runs.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Files a run may write; the optional ones are removed from an existing
/// folder when this run did not write them.
const OPTIONAL_OUTPUTS: &[&str] = &["cc_trace.csv"];

/// A staging folder for a run's outputs.
#[derive(Debug)]
pub(crate) struct StagedDir {
    /// Where the outputs go on success.
    target: PathBuf,
    /// Where they are written meanwhile.
    staging: PathBuf,
    /// The outermost parent folder this run created (removed on failure).
    created_parent: Option<PathBuf>,
    /// Files removed from an existing `target` unless this run wrote them.
    optional: &'static [&'static str],
    done: bool,
}

impl StagedDir {
    /// Create the staging folder for `target` (and the parents `target`
    /// needs). Fails, leaving nothing behind, if `target` exists and is not a
    /// folder or the parent cannot be written.
    pub(crate) fn new(target: &Path) -> Result<StagedDir, (PathBuf, io::Error)> {
        StagedDir::with_optional(target, OPTIONAL_OUTPUTS)
    }

    /// Like [`StagedDir::new`], with `optional` the files removed from an
    /// existing `target` when this run did not write them (none for a
    /// folder of packet captures, which may be the outputs' own).
    pub(crate) fn with_optional(
        target: &Path,
        optional: &'static [&'static str],
    ) -> Result<StagedDir, (PathBuf, io::Error)> {
        if target.exists() && !target.is_dir() {
            return Err((
                target.to_path_buf(),
                io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "exists and is not a directory",
                ),
            ));
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let created_parent = outermost_missing(&parent);
        fs::create_dir_all(&parent).map_err(|e| (parent.clone(), e))?;
        let mut staged = StagedDir {
            target: target.to_path_buf(),
            staging: PathBuf::new(),
            created_parent,
            optional,
            done: false,
        };
        let base = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        // A name no other run picks: the process id and a counter, retried
        // if a stale folder of a killed run holds it.
        for attempt in 0..1000u32 {
            let cand = parent.join(format!(
                ".{base}.rtcc-partial-{}-{attempt}",
                std::process::id()
            ));
            match fs::create_dir(&cand) {
                Ok(()) => {
                    staged.staging = cand;
                    return Ok(staged);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                // `staged` drops here and removes the parents it created.
                Err(e) => return Err((cand, e)),
            }
        }
        Err((
            parent,
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                "no free name for a staging folder",
            ),
        ))
    }

    /// The folder to write into.
    pub(crate) fn path(&self) -> &Path {
        &self.staging
    }

    /// Move the outputs into place.
    pub(crate) fn commit(mut self) -> Result<(), (PathBuf, io::Error)> {
        if !self.target.exists() {
            fs::rename(&self.staging, &self.target).map_err(|e| (self.target.clone(), e))?;
        } else {
            let mut produced = Vec::new();
            let entries = fs::read_dir(&self.staging).map_err(|e| (self.staging.clone(), e))?;
            for entry in entries {
                let entry = entry.map_err(|e| (self.staging.clone(), e))?;
                let name = entry.file_name();
                let dest = self.target.join(&name);
                fs::rename(entry.path(), &dest).map_err(|e| (dest.clone(), e))?;
                produced.push(name);
            }
            for stale in self.optional {
                if !produced.iter().any(|n| n == *stale) {
                    let p = self.target.join(stale);
                    match fs::remove_file(&p) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => return Err((p, e)),
                    }
                }
            }
            let _ = fs::remove_dir(&self.staging);
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if !self.staging.as_os_str().is_empty() {
            let _ = fs::remove_dir_all(&self.staging);
        }
        if let Some(p) = &self.created_parent {
            let _ = fs::remove_dir_all(p);
        }
    }
}

/// The outermost ancestor of `dir` (or `dir` itself) that does not exist yet.
fn outermost_missing(dir: &Path) -> Option<PathBuf> {
    let mut missing = None;
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        missing = Some(d.to_path_buf());
        cur = d.parent();
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtcc-outdir-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn listing(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_dropped_stage_leaves_nothing_not_even_the_parents_it_made() {
        let root = scratch("drop");
        let target = root.join("a/b/out");
        let s = StagedDir::new(&target).unwrap();
        fs::write(s.path().join("timeseries.csv"), "x").unwrap();
        drop(s);
        assert!(listing(&root).is_empty(), "{:?}", listing(&root));
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_committed_stage_becomes_the_folder() {
        let root = scratch("commit");
        let target = root.join("out");
        let s = StagedDir::new(&target).unwrap();
        fs::write(s.path().join("summary.json"), "{}").unwrap();
        s.commit().unwrap();
        assert_eq!(listing(&root), vec!["out"]);
        assert_eq!(listing(&target), vec!["summary.json"]);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn an_existing_folder_keeps_other_files_and_loses_stale_outputs() {
        let root = scratch("existing");
        let target = root.join("out");
        fs::create_dir_all(&target).unwrap();
        fs::write(target.join("notes.txt"), "mine").unwrap();
        fs::write(target.join("cc_trace.csv"), "old").unwrap();
        fs::write(target.join("summary.json"), "old").unwrap();
        // A failed run changes nothing.
        let s = StagedDir::new(&target).unwrap();
        fs::write(s.path().join("summary.json"), "half").unwrap();
        drop(s);
        assert_eq!(
            listing(&target),
            vec!["cc_trace.csv", "notes.txt", "summary.json"]
        );
        assert_eq!(
            fs::read_to_string(target.join("summary.json")).unwrap(),
            "old"
        );
        // A good one replaces its files and removes the stale trace.
        let s = StagedDir::new(&target).unwrap();
        fs::write(s.path().join("summary.json"), "new").unwrap();
        s.commit().unwrap();
        assert_eq!(listing(&target), vec!["notes.txt", "summary.json"]);
        assert_eq!(
            fs::read_to_string(target.join("summary.json")).unwrap(),
            "new"
        );
        assert_eq!(listing(&root), vec!["out"]);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_file_in_the_way_is_refused_before_anything_is_made() {
        let root = scratch("file");
        let target = root.join("out");
        fs::write(&target, "a file").unwrap();
        let err = StagedDir::new(&target).unwrap_err();
        assert_eq!(err.0, target);
        assert_eq!(listing(&root), vec!["out"]);
        fs::remove_dir_all(root).unwrap();
    }
}
