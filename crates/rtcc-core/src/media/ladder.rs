//! A replay encoder over a bitrate ladder of real encoder output.
//!
//! A [`LadderTrace`] holds, for each rung of a ladder (the bitrate a real
//! encoder was configured with), the per-frame sizes and types that encoder
//! produced for one clip (`scripts/encoder_traces.py` makes them with ffmpeg
//! and x264; `data/encoder-traces/README.md`). [`LadderEncoder`] replays it:
//!
//! - **Rung choice**: the highest rung whose configured bitrate is ≤ the
//!   target; the lowest rung when the target is below all of them. This is
//!   what a simulcast/ABR ladder does, and it keeps the encoder at or below
//!   the target except at the bottom.
//! - **Switching at frame boundaries**: `set_target` only records the target;
//!   each frame takes its rung when it is produced, so a frame is never split
//!   between rungs and a new target applies from the next frame on.
//! - **Content position**: the frame index runs across rungs (frame `k` is
//!   entry `k mod len` of whatever rung is in force), so a switch continues
//!   the clip where it was instead of restarting it; the trace loops.
//! - **ETR** (Camel §2.1, encoded / target bitrate): each frame reports the
//!   measured mean bitrate of its rung divided by the target.
//! - **Key-frame requests** (PLI): the next frame is a key frame whose size is
//!   the mean key-frame size of its rung (the recorded sizes are kept for
//!   the following frames).
//!
//! Call protocol: as every [`EncoderModel`] (module `encoder`).
//!
//! CSV format (`rung_kbps,frame,size_bytes,type`, header required, `#`
//! comments and blank lines allowed): one row per frame, frames of a rung
//! numbered 0, 1, 2, … in order; `type` is `I` (key) or `P` (delta).

use std::collections::BTreeMap;
use std::path::Path;

use crate::media::encoder::{EncodedFrame, EncoderConfigError, EncoderModel};
use crate::media::frame::FrameType;
use crate::time::Instant;
use crate::units::{Bitrate, Bytes};

/// The header line a ladder CSV starts with.
pub const LADDER_CSV_HEADER: &str = "rung_kbps,frame,size_bytes,type";

/// Why a ladder trace could not be read. Names the file, line and field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LadderError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("{file}:{line}: field `{field}`: {message}")]
    Parse {
        /// The file (or the name given to [`LadderTrace::parse`]).
        file: String,
        /// Line number, from 1.
        line: usize,
        /// The CSV field, or `"header"` / `"row"`.
        field: &'static str,
        /// What is wrong, with the offending value.
        message: String,
    },
    /// The trace as a whole is unusable (no rungs, ...).
    #[error("{file}: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// One rung: what the encoder produced when configured for `bitrate`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rung {
    /// The bitrate the encoder was configured with (`rung_kbps`).
    pub bitrate: Bitrate,
    /// Frame sizes and types, in capture order.
    pub frames: Vec<(Bytes, FrameType)>,
}

/// A ladder of frame-size traces of one clip, rungs in increasing bitrate.
#[derive(Debug, Clone, PartialEq)]
pub struct LadderTrace {
    rungs: Vec<Rung>,
}

impl LadderTrace {
    /// A ladder from its rungs (any order; sorted here). Every rung needs at
    /// least one frame, bitrates must be distinct and non-zero.
    pub fn new(mut rungs: Vec<Rung>) -> Result<Self, EncoderConfigError> {
        if rungs.is_empty() {
            return Err(EncoderConfigError::Invalid {
                field: "ladder",
                value: "[]".into(),
                reason: "needs at least one rung",
            });
        }
        rungs.sort_by_key(|r| r.bitrate);
        for (i, r) in rungs.iter().enumerate() {
            if r.bitrate == Bitrate::ZERO {
                return Err(EncoderConfigError::Invalid {
                    field: "ladder.bitrate",
                    value: r.bitrate.to_string(),
                    reason: "must be > 0",
                });
            }
            if r.frames.is_empty() {
                return Err(EncoderConfigError::Invalid {
                    field: "ladder.frames",
                    value: r.bitrate.to_string(),
                    reason: "a rung needs at least one frame",
                });
            }
            if i > 0 && rungs[i - 1].bitrate == r.bitrate {
                return Err(EncoderConfigError::Invalid {
                    field: "ladder.bitrate",
                    value: r.bitrate.to_string(),
                    reason: "rung bitrates must be distinct",
                });
            }
        }
        Ok(LadderTrace { rungs })
    }

    /// Reads a ladder CSV file.
    pub fn load(path: &Path) -> Result<Self, LadderError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| LadderError::Io {
            path: name.clone(),
            source,
        })?;
        Self::parse(&text, &name)
    }

    /// Parses ladder CSV text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, LadderError> {
        let err = |line: usize, field: &'static str, message: String| LadderError::Parse {
            file: file.to_string(),
            line,
            field,
            message,
        };
        let mut rungs: BTreeMap<u64, Vec<(Bytes, FrameType)>> = BTreeMap::new();
        let mut saw_header = false;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let row = raw.trim();
            if row.is_empty() || row.starts_with('#') {
                continue;
            }
            if !saw_header {
                if row != LADDER_CSV_HEADER {
                    return Err(err(
                        line,
                        "header",
                        format!("expected \"{LADDER_CSV_HEADER}\", found \"{row}\""),
                    ));
                }
                saw_header = true;
                continue;
            }
            let cols: Vec<&str> = row.split(',').map(str::trim).collect();
            if cols.len() != 4 {
                return Err(err(
                    line,
                    "row",
                    format!("expected 4 fields, found {}: \"{row}\"", cols.len()),
                ));
            }
            let number = |k: usize, field: &'static str| {
                cols[k].parse::<u64>().map_err(|_| {
                    err(
                        line,
                        field,
                        format!("\"{}\" is not a non-negative integer", cols[k]),
                    )
                })
            };
            let kbps = number(0, "rung_kbps")?;
            if kbps == 0 {
                return Err(err(line, "rung_kbps", "0 is not a bitrate".into()));
            }
            let frame = number(1, "frame")?;
            let size = number(2, "size_bytes")?;
            if size == 0 {
                return Err(err(
                    line,
                    "size_bytes",
                    "a frame has at least 1 byte".into(),
                ));
            }
            let frame_type = match cols[3] {
                "I" => FrameType::Key,
                "P" => FrameType::Delta,
                other => return Err(err(line, "type", format!("\"{other}\" is not I or P"))),
            };
            let frames = rungs.entry(kbps).or_default();
            if frame != frames.len() as u64 {
                return Err(err(
                    line,
                    "frame",
                    format!(
                        "rung {kbps} kbps: expected frame {}, found {frame}",
                        frames.len()
                    ),
                ));
            }
            frames.push((Bytes::new(size), frame_type));
        }
        if !saw_header {
            return Err(LadderError::Invalid {
                file: file.to_string(),
                message: format!("empty: no \"{LADDER_CSV_HEADER}\" header"),
            });
        }
        let rungs: Vec<Rung> = rungs
            .into_iter()
            .map(|(kbps, frames)| Rung {
                bitrate: Bitrate::kbps(kbps),
                frames,
            })
            .collect();
        LadderTrace::new(rungs).map_err(|e| LadderError::Invalid {
            file: file.to_string(),
            message: e.to_string(),
        })
    }

    /// The rungs, in increasing bitrate.
    pub fn rungs(&self) -> &[Rung] {
        &self.rungs
    }

    /// Index of the rung for `target`: the highest whose bitrate ≤ target,
    /// else the lowest.
    pub fn rung_for(&self, target: Bitrate) -> usize {
        // `rungs` is sorted by bitrate, so the count of rungs ≤ target is
        // one past the highest of them.
        self.rungs
            .partition_point(|r| r.bitrate <= target)
            .saturating_sub(1)
    }
}

/// Per-rung numbers derived once.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RungStats {
    /// Mean encoded bitrate of the rung at the replay's fps.
    actual: Bitrate,
    /// Mean key-frame size (the largest frame's size if it has no key frame).
    key_size: Bytes,
}

/// Replays a [`LadderTrace`], picking the rung for the current target.
#[derive(Debug, Clone)]
pub struct LadderEncoder {
    trace: LadderTrace,
    stats: Vec<RungStats>,
    fps: f64,
    start: Instant,
    next_frame: u64,
    target: Bitrate,
    /// Rung of the last frame produced (or, before any, of the start target).
    rung: usize,
    key_frame_requested: bool,
}

impl LadderEncoder {
    /// A replay of `trace` at `fps`, frame 0 captured at `now`, following
    /// `start_target` until the first `set_target`.
    pub fn new(
        now: Instant,
        fps: f64,
        trace: LadderTrace,
        start_target: Bitrate,
    ) -> Result<Self, EncoderConfigError> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(EncoderConfigError::Invalid {
                field: "fps",
                value: fps.to_string(),
                reason: "must be finite and > 0",
            });
        }
        let stats = trace
            .rungs()
            .iter()
            .map(|r| {
                let total: f64 = r.frames.iter().map(|(s, _)| s.as_f64()).sum();
                let keys: Vec<f64> = r
                    .frames
                    .iter()
                    .filter(|(_, t)| *t == FrameType::Key)
                    .map(|(s, _)| s.as_f64())
                    .collect();
                let key_size = if keys.is_empty() {
                    r.frames
                        .iter()
                        .map(|(s, _)| *s)
                        .max()
                        .unwrap_or(Bytes::new(1))
                } else {
                    Bytes::new((keys.iter().sum::<f64>() / keys.len() as f64).round() as u64)
                };
                RungStats {
                    actual: Bitrate::from_bps_f64(total * 8.0 * fps / r.frames.len() as f64),
                    key_size,
                }
            })
            .collect();
        let rung = trace.rung_for(start_target);
        Ok(LadderEncoder {
            trace,
            stats,
            fps,
            start: now,
            next_frame: 0,
            target: start_target,
            rung,
            key_frame_requested: false,
        })
    }

    /// The ladder being replayed.
    pub fn trace(&self) -> &LadderTrace {
        &self.trace
    }

    /// Configured bitrate of the rung the last frame came from.
    pub fn current_rung(&self) -> Bitrate {
        self.trace.rungs()[self.rung].bitrate
    }

    /// Measured mean bitrate of rung `index` (at this replay's fps).
    pub fn rung_actual_bitrate(&self, index: usize) -> Option<Bitrate> {
        self.stats.get(index).map(|s| s.actual)
    }

    fn capture_time(&self, k: u64) -> Instant {
        super::encoder::frame_time(self.start, self.fps, k)
    }
}

impl EncoderModel for LadderEncoder {
    fn set_target(&mut self, _now: Instant, target: Bitrate) {
        // Takes effect with the next frame produced.
        self.target = target;
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.capture_time(self.next_frame))
    }

    fn produce(&mut self, now: Instant) -> Option<EncodedFrame> {
        let k = self.next_frame;
        let capture_time = self.capture_time(k);
        if now < capture_time {
            return None;
        }
        self.next_frame += 1;
        self.rung = self.trace.rung_for(self.target);
        let rung = &self.trace.rungs()[self.rung];
        let stats = self.stats[self.rung];
        // `Rung::frames` is non-empty (checked by `LadderTrace::new`).
        let (mut size, mut frame_type) = rung.frames[(k % rung.frames.len() as u64) as usize];
        if std::mem::take(&mut self.key_frame_requested) && frame_type != FrameType::Key {
            frame_type = FrameType::Key;
            size = stats.key_size;
        }
        let etr = if self.target == Bitrate::ZERO {
            f64::INFINITY
        } else {
            stats.actual.as_bps_f64() / self.target.as_bps_f64()
        };
        Some(EncodedFrame {
            frame_id: k,
            capture_time,
            size: size.max(Bytes::new(1)),
            frame_type,
            target_bitrate: self.target,
            etr,
        })
    }

    fn current_target(&self) -> Bitrate {
        self.target
    }

    fn request_key_frame(&mut self) {
        self.key_frame_requested = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    /// Three rungs of 4 frames; sizes encode (rung, index) so a test can
    /// tell which entry a frame came from: size = rung_kbps + index.
    fn trace() -> LadderTrace {
        let rung = |kbps: u64| Rung {
            bitrate: Bitrate::kbps(kbps),
            frames: (0..4)
                .map(|i| {
                    let t = if i == 0 {
                        FrameType::Key
                    } else {
                        FrameType::Delta
                    };
                    (Bytes::new(kbps + i), t)
                })
                .collect(),
        };
        // Unsorted on purpose.
        LadderTrace::new(vec![rung(1000), rung(200), rung(500)]).unwrap()
    }

    fn sizes(enc: &mut LadderEncoder, n: u64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let t = enc.poll_timeout().unwrap();
                enc.produce(t).unwrap().size.get()
            })
            .collect()
    }

    #[test]
    fn rung_selection_highest_at_or_below_target() {
        let t = trace();
        let kbps = |i: usize| t.rungs()[i].bitrate;
        assert_eq!(kbps(t.rung_for(Bitrate::kbps(50))), Bitrate::kbps(200));
        assert_eq!(kbps(t.rung_for(Bitrate::kbps(200))), Bitrate::kbps(200));
        assert_eq!(kbps(t.rung_for(Bitrate::kbps(499))), Bitrate::kbps(200));
        assert_eq!(kbps(t.rung_for(Bitrate::kbps(500))), Bitrate::kbps(500));
        assert_eq!(kbps(t.rung_for(Bitrate::kbps(999))), Bitrate::kbps(500));
        assert_eq!(kbps(t.rung_for(Bitrate::kbps(5000))), Bitrate::kbps(1000));
    }

    #[test]
    fn switches_at_the_next_frame_and_keeps_content_position() {
        let mut e = LadderEncoder::new(Instant::ZERO, 30.0, trace(), Bitrate::kbps(600)).unwrap();
        assert_eq!(sizes(&mut e, 2), vec![500, 501]);
        // A new target between frames 1 and 2: frame 2 comes from the 1000
        // kbps rung at index 2 (the clip continues, it does not restart).
        let t2 = e.poll_timeout().unwrap();
        e.set_target(t2 - Duration::from_millis(10), Bitrate::kbps(1200));
        assert_eq!(e.current_target(), Bitrate::kbps(1200));
        assert_eq!(
            e.current_rung(),
            Bitrate::kbps(500),
            "no frame produced yet"
        );
        assert_eq!(sizes(&mut e, 1), vec![1002]);
        assert_eq!(e.current_rung(), Bitrate::kbps(1000));
        // Down below every rung: the lowest one, index still running.
        e.set_target(t2, Bitrate::kbps(10));
        assert_eq!(sizes(&mut e, 1), vec![203]);
        // Not due yet: nothing, and nothing consumed.
        let next = e.poll_timeout().unwrap();
        assert!(e.produce(next - Duration::from_nanos(1)).is_none());
        assert_eq!(e.produce(next).unwrap().frame_id, 4);
    }

    #[test]
    fn loops_at_the_end_with_frame_types() {
        let mut e = LadderEncoder::new(Instant::ZERO, 30.0, trace(), Bitrate::kbps(200)).unwrap();
        let frames: Vec<EncodedFrame> = (0..9)
            .map(|_| {
                let t = e.poll_timeout().unwrap();
                e.produce(t).unwrap()
            })
            .collect();
        let s: Vec<u64> = frames.iter().map(|f| f.size.get()).collect();
        assert_eq!(s, vec![200, 201, 202, 203, 200, 201, 202, 203, 200]);
        assert_eq!(frames[4].frame_type, FrameType::Key);
        assert_eq!(frames[5].frame_type, FrameType::Delta);
        assert_eq!(frames[8].frame_id, 8);
        // 30 fps, computed from the index.
        assert_eq!(frames[3].capture_time, Instant::from_nanos(100_000_000));
    }

    #[test]
    fn etr_is_rung_actual_bitrate_over_target() {
        let mut e = LadderEncoder::new(Instant::ZERO, 30.0, trace(), Bitrate::kbps(800)).unwrap();
        // 500 kbps rung: mean 501.5 B/frame · 8 · 30 = 120 360 bps.
        let actual = e.rung_actual_bitrate(1).unwrap();
        assert_eq!(actual, Bitrate::bps(120_360));
        let f = e.produce(Instant::ZERO).unwrap();
        assert!(
            (f.etr - 120_360.0 / 800_000.0).abs() < 1e-12,
            "etr {}",
            f.etr
        );
        assert_eq!(f.target_bitrate, Bitrate::kbps(800));
    }

    #[test]
    fn key_frame_request_makes_the_next_frame_a_key_frame() {
        let mut e = LadderEncoder::new(Instant::ZERO, 30.0, trace(), Bitrate::kbps(200)).unwrap();
        sizes(&mut e, 2);
        e.request_key_frame();
        let t = e.poll_timeout().unwrap();
        let f = e.produce(t).unwrap();
        assert_eq!(f.frame_type, FrameType::Key);
        assert_eq!(f.size.get(), 200, "mean key-frame size of the rung");
        let t = e.poll_timeout().unwrap();
        let f = e.produce(t).unwrap();
        assert_eq!((f.frame_type, f.size.get()), (FrameType::Delta, 203));
    }

    #[test]
    fn parses_csv() {
        let text = "# made by hand\nrung_kbps,frame,size_bytes,type\n\
                    400,0,5000,I\n400,1,900,P\n200,0,3000,I\n200,1,400,P\n\n";
        let t = LadderTrace::parse(text, "x.csv").unwrap();
        assert_eq!(t.rungs().len(), 2);
        assert_eq!(t.rungs()[0].bitrate, Bitrate::kbps(200));
        assert_eq!(
            t.rungs()[1].frames,
            vec![
                (Bytes::new(5000), FrameType::Key),
                (Bytes::new(900), FrameType::Delta)
            ]
        );
    }

    #[test]
    fn csv_errors_name_file_line_and_field() {
        let h = LADDER_CSV_HEADER;
        let cases = [
            ("", "x.csv: empty"),
            ("rung,frame\n", "x.csv:1: field `header`"),
            (
                &format!("{h}\n200,0,10\n") as &str,
                "x.csv:2: field `row`: expected 4 fields, found 3",
            ),
            (
                &format!("{h}\nabc,0,10,I\n"),
                "x.csv:2: field `rung_kbps`: \"abc\" is not",
            ),
            (&format!("{h}\n0,0,10,I\n"), "x.csv:2: field `rung_kbps`"),
            (
                &format!("{h}\n200,0,-5,I\n"),
                "x.csv:2: field `size_bytes`: \"-5\"",
            ),
            (
                &format!("{h}\n200,0,0,I\n"),
                "x.csv:2: field `size_bytes`: a frame",
            ),
            (
                &format!("{h}\n200,0,10,B\n"),
                "x.csv:2: field `type`: \"B\" is not I or P",
            ),
            (
                &format!("{h}\n200,0,10,I\n200,2,10,P\n"),
                "x.csv:3: field `frame`: rung 200 kbps: expected frame 1, found 2",
            ),
            (&format!("{h}\n"), "x.csv: invalid encoder ladder"),
        ];
        for (text, want) in cases {
            let e = LadderTrace::parse(text, "x.csv").unwrap_err().to_string();
            assert!(
                e.starts_with(want),
                "{text:?}: got \"{e}\", want \"{want}…\""
            );
        }
        let missing = LadderTrace::load(Path::new("/nonexistent/ladder.csv")).unwrap_err();
        assert!(missing.to_string().starts_with("/nonexistent/ladder.csv: "));
    }

    #[test]
    fn invalid_ladders_are_refused() {
        assert!(LadderTrace::new(vec![]).is_err());
        let empty = Rung {
            bitrate: Bitrate::kbps(100),
            frames: vec![],
        };
        assert!(LadderTrace::new(vec![empty]).is_err());
        let one = Rung {
            bitrate: Bitrate::kbps(100),
            frames: vec![(Bytes::new(1), FrameType::Key)],
        };
        assert!(LadderTrace::new(vec![one.clone(), one]).is_err());
        assert!(LadderEncoder::new(Instant::ZERO, 0.0, trace(), Bitrate::kbps(1)).is_err());
    }
}
