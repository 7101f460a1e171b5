//! Loading real link traces into rate models.
//!
//! Formats (see `traces/README.md` for the data sets and their sources):
//!
//! - [`TraceFormat::Mahimahi`]: one integer per line, a millisecond timestamp =
//!   one delivery opportunity (mahimahi `traces/README`, `man/mm-link.1`).
//!   Timestamps must be non-decreasing and the last one non-zero (the checks of
//!   mm-link's loader, `src/frontend/link_queue.cc`). Blank lines are skipped.
//! - [`TraceFormat::Throughput`]: throughput logs, one sample per line, columns
//!   separated by spaces or TABs, lines starting with `#` and blank lines skipped.
//!   The column count of the first sample selects the layout for the whole file:
//!   - 2 columns `time_s throughput_Mbps` — Lumos5G 4G (`0 1.5`, integer seconds
//!     from 0), Lumos5G 5G (`1.0\t123.0`, float seconds from 1.0), the
//!     Pensieve-cooked Norway HSDPA logs (`0.0\t1.066`, cumulative float seconds,
//!     ~1 s non-uniform steps) and the Pensieve-cooked FCC logs (`0.0\t1.418`,
//!     5 s steps).
//!   - 6 columns — a raw Norway HSDPA log (Riiser et al., MMSys 2013):
//!     `unix_time_s  elapsed_ms  latitude  longitude  bytes  interval_ms`, where
//!     `bytes` were received during the `interval_ms` milliseconds before the
//!     sample; the sample's rate is `bytes·8 / interval_ms` and its time is
//!     `elapsed_ms` (column 2). Columns 1, 3 and 4 are ignored.
//!
//!   Times are made relative to the first sample. Each sample's rate holds until
//!   the next sample (missing seconds are simply longer steps; a zero rate is an
//!   outage during which packets wait); the last sample holds for the median
//!   sampling interval, and the trace loops with period
//!   `t_last − t_first + median interval` (the convention of `traces/README.md`).
//! - [`TraceFormat::OpenNetLab`]: AlphaRTC gym JSON (`{"uplink": {"trace_pattern":
//!   [{"duration": ms, "capacity": kbps, "loss": 0..1, "rtt": ms}, ...]}}`), see
//!   [`load_opennetlab`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtcc_core::{Bitrate, Duration, ParseError, Probability};
use serde::Deserialize;

use super::loss::LossSchedule;
use super::rate::{MahimahiTrace, RateModel, RateSchedule};

/// The file format of a link trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// mahimahi delivery-opportunity timestamps (ms), one per line.
    Mahimahi,
    /// `time_s throughput_Mbps` logs (Lumos5G, Norway HSDPA, FCC), or raw Norway logs.
    Throughput,
    /// OpenNetLab / AlphaRTC gym JSON trace.
    OpenNetLab,
}

impl std::str::FromStr for TraceFormat {
    type Err = ParseError;
    /// Parses the scenario spelling: `"mahimahi"`, `"throughput"` or `"opennetlab"`.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.trim() {
            "mahimahi" => Ok(TraceFormat::Mahimahi),
            "throughput" => Ok(TraceFormat::Throughput),
            "opennetlab" => Ok(TraceFormat::OpenNetLab),
            _ => Err(ParseError::new(
                "trace format",
                s,
                "must be one of mahimahi, throughput, opennetlab",
            )),
        }
    }
}

/// Why a trace file could not be loaded. Names the file and, where there is one,
/// the line and its text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be read.
    #[error("{path}: cannot read trace: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("{path}:{line}: {reason}: \"{text}\"")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The offending line's text.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// The file as a whole is unusable (empty, too short, ...).
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// An OpenNetLab trace: capacity, plus the per-segment loss and delay when the file
/// carries them.
#[derive(Debug, Clone)]
pub struct OpenNetLabTrace {
    /// Capacity per segment (looping over the trace duration).
    pub rate: Arc<RateSchedule>,
    /// Per-segment Bernoulli loss probability, if any entry has a `loss` field.
    pub loss: Option<Arc<LossSchedule>>,
    /// Per-segment one-way delay (`rtt / 2`) as `(offset, delay)` steps, if any entry
    /// has an `rtt` field. Not applied by [`super::Link`], whose delay is constant:
    /// callers may use it to pick a delay.
    pub one_way_delay: Option<Vec<(Duration, Duration)>>,
}

/// Loads a trace file as a rate model. For OpenNetLab files only the capacity is
/// used; see [`load_opennetlab`] for their loss and delay.
pub fn load_trace(path: &Path, format: TraceFormat) -> Result<RateModel, TraceError> {
    parse_trace(path, &read(path)?, format)
}

/// Parses the text of a trace file as [`load_trace`] does once it has read
/// it; `path` only names the trace in errors.
pub fn parse_trace(path: &Path, text: &str, format: TraceFormat) -> Result<RateModel, TraceError> {
    match format {
        TraceFormat::Mahimahi => {
            parse_mahimahi(path, text).map(|t| RateModel::Mahimahi(Arc::new(t)))
        }
        TraceFormat::Throughput => {
            parse_throughput(path, text).map(|s| RateModel::Schedule(Arc::new(s)))
        }
        TraceFormat::OpenNetLab => {
            parse_opennetlab(path, text).map(|t| RateModel::Schedule(t.rate))
        }
    }
}

/// Loads an OpenNetLab / AlphaRTC gym JSON trace.
///
/// Reads `uplink.trace_pattern` (the direction the gym's sender uses), or
/// `downlink.trace_pattern` if the uplink has none. Each entry lasts `duration` ms
/// at `capacity` kbit/s (`DataRate = capacity·1e3` bit/s as in the gym's
/// `ns-app/scratch/webrtc_test/trace_player.cc`); the pattern loops over the sum of
/// durations. As in that player, an entry without `loss` or `rtt` keeps the
/// previous value (initially 0). Deviation: the gym turns a zero capacity into
/// 100 % loss; here it is an outage during which packets wait, like zero rates in
/// every other trace format. Entries are taken as written (the README lists a few
/// absurd capacities in some files; they are not filtered).
pub fn load_opennetlab(path: &Path) -> Result<OpenNetLabTrace, TraceError> {
    let text = read(path)?;
    parse_opennetlab(path, &text)
}

/// Longest loop period of a throughput trace: a quarter of the `u64`
/// nanosecond clock (146 years), so that instants a few periods ahead of any
/// simulated time stay representable. A real log is hours long.
const MAX_PERIOD_NS: u64 = u64::MAX / 4;

fn read(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn line_err(path: &Path, line: usize, text: &str, reason: impl Into<String>) -> TraceError {
    TraceError::Line {
        path: path.to_path_buf(),
        line,
        text: text.trim_end().to_string(),
        reason: reason.into(),
    }
}

fn file_err(path: &Path, reason: impl Into<String>) -> TraceError {
    TraceError::File {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

pub(crate) fn parse_mahimahi(path: &Path, text: &str) -> Result<MahimahiTrace, TraceError> {
    let mut ms = Vec::with_capacity(text.len() / 6);
    let mut last_line = (0, "");
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let v: u64 = t.parse().map_err(|_| {
            line_err(
                path,
                i + 1,
                line,
                "expected a millisecond timestamp (integer)",
            )
        })?;
        if let Some(&prev) = ms.last() {
            if v < prev {
                return Err(line_err(
                    path,
                    i + 1,
                    line,
                    format!("timestamps must be non-decreasing (previous: {prev})"),
                ));
            }
        }
        ms.push(v);
        last_line = (i + 1, line);
    }
    if ms.is_empty() {
        return Err(file_err(
            path,
            "no delivery opportunities (empty mahimahi trace)",
        ));
    }
    if ms.last() == Some(&0) {
        return Err(line_err(
            path,
            last_line.0,
            last_line.1,
            "the trace must last a non-zero time (last timestamp is 0)",
        ));
    }
    // Checked above: non-empty, non-decreasing, last > 0.
    MahimahiTrace::from_millis(ms).map_err(|e| file_err(path, e.to_string()))
}

fn parse_f64(
    path: &Path,
    lineno: usize,
    line: &str,
    field: &str,
    what: &str,
) -> Result<f64, TraceError> {
    let v: f64 = field.parse().map_err(|_| {
        line_err(
            path,
            lineno,
            line,
            format!("{what} \"{field}\" is not a number"),
        )
    })?;
    if !v.is_finite() || v < 0.0 {
        return Err(line_err(
            path,
            lineno,
            line,
            format!("{what} {field} must be finite and >= 0"),
        ));
    }
    Ok(v)
}

pub(crate) fn parse_throughput(path: &Path, text: &str) -> Result<RateSchedule, TraceError> {
    // (time in ns relative to nothing yet, rate, line number, line text)
    let mut samples: Vec<(u64, Bitrate)> = Vec::new();
    let mut columns = None;
    let mut prev: Option<(f64, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = t.split_whitespace().collect();
        let n = *columns.get_or_insert(fields.len());
        if fields.len() != n || !(n == 2 || n == 6) {
            return Err(line_err(
                path,
                lineno,
                line,
                if n == 2 || n == 6 {
                    format!(
                        "expected {n} columns like the first sample, found {}",
                        fields.len()
                    )
                } else {
                    format!(
                        "expected 2 columns (time_s throughput_Mbps) or 6 (raw Norway HSDPA log), found {}",
                        fields.len()
                    )
                },
            ));
        }
        let (time_s, bps) = if n == 2 {
            let time_s = parse_f64(path, lineno, line, fields[0], "time")?;
            let mbps = parse_f64(path, lineno, line, fields[1], "throughput (Mbps)")?;
            (time_s, mbps * 1e6)
        } else {
            let elapsed_ms = parse_f64(path, lineno, line, fields[1], "elapsed time (ms)")?;
            let bytes = parse_f64(path, lineno, line, fields[4], "bytes received")?;
            let interval_ms = parse_f64(path, lineno, line, fields[5], "interval (ms)")?;
            if interval_ms <= 0.0 {
                return Err(line_err(path, lineno, line, "interval (ms) must be > 0"));
            }
            (elapsed_ms / 1e3, bytes * 8.0 / (interval_ms / 1e3))
        };
        if let Some((pt, _)) = prev {
            if time_s <= pt {
                return Err(line_err(
                    path,
                    lineno,
                    line,
                    format!("time {time_s} s is not after the previous sample's ({pt} s)"),
                ));
            }
        }
        prev = Some((time_s, lineno));
        samples.push((
            Duration::from_secs_f64(time_s).as_nanos(),
            Bitrate::from_bps_f64(bps),
        ));
    }
    if samples.len() < 2 {
        return Err(file_err(
            path,
            "a throughput trace needs at least two samples",
        ));
    }
    let t0 = samples[0].0;
    let mut intervals: Vec<u64> = samples.windows(2).map(|w| w[1].0 - w[0].0).collect();
    intervals.sort_unstable();
    let median = intervals[intervals.len() / 2];
    // Times from `Duration::from_secs_f64` are strictly increasing only if the text
    // values differ by at least 1 ns; a zero interval would make the schedule invalid.
    if intervals[0] == 0 {
        return Err(file_err(path, "two samples are less than 1 ns apart"));
    }
    let last = samples[samples.len() - 1].0;
    // Times past u64 nanoseconds (585 years) saturate in `from_secs_f64`;
    // the loop must also fit.
    let period = (last - t0)
        .checked_add(median)
        .filter(|&p| p <= MAX_PERIOD_NS)
        .map(Duration::from_nanos)
        .ok_or_else(|| {
            file_err(
                path,
                format!(
                    "the trace is too long: its loop must last at most {} s",
                    MAX_PERIOD_NS / 1_000_000_000
                ),
            )
        })?;
    let steps = samples
        .iter()
        .map(|&(t, r)| (Duration::from_nanos(t - t0), r))
        .collect();
    RateSchedule::new(steps, Some(period)).map_err(|e| file_err(path, e.to_string()))
}

/// One `trace_pattern` entry as written in the file.
#[derive(Deserialize)]
struct Entry {
    duration: f64,
    capacity: f64,
    #[serde(default)]
    loss: Option<f64>,
    #[serde(default)]
    rtt: Option<f64>,
}

impl Entry {
    /// Checks the values; on error returns the offending field and the reason.
    fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.duration.is_finite() && self.duration > 0.0) {
            return Err((
                "duration",
                format!("duration {} ms must be > 0", self.duration),
            ));
        }
        if !(self.capacity.is_finite() && self.capacity >= 0.0) {
            return Err((
                "capacity",
                format!("capacity {} kbps must be >= 0", self.capacity),
            ));
        }
        if let Some(l) = self.loss {
            if !(0.0..=1.0).contains(&l) {
                return Err(("loss", format!("loss {l} must be within [0, 1]")));
            }
        }
        if let Some(rtt) = self.rtt {
            if !(rtt.is_finite() && rtt >= 0.0) {
                return Err(("rtt", format!("rtt {rtt} ms must be >= 0")));
            }
        }
        Ok(())
    }
}

#[derive(Deserialize, Default)]
struct Direction {
    #[serde(default)]
    trace_pattern: Vec<Entry>,
}

#[derive(Deserialize)]
struct OnlFile {
    #[serde(default)]
    uplink: Option<Direction>,
    #[serde(default)]
    downlink: Option<Direction>,
}

/// 1-based line of `"field"` inside entry `index` of `direction.trace_pattern`, found
/// by scanning the (already successfully parsed) JSON text; serde_json's values carry
/// no positions. `None` if the layout is not the expected one.
fn entry_field_line(text: &str, direction: &str, index: usize, field: &str) -> Option<usize> {
    let dir = text.find(&format!("\"{direction}\""))?;
    let tp = dir + text[dir..].find("\"trace_pattern\"")?;
    let open = tp + text[tp..].find('[')?;
    let bytes = text.as_bytes();
    let (mut depth, mut in_str, mut esc, mut seen) = (0usize, false, false, 0usize);
    let mut start = None;
    for (pos, &c) in bytes.iter().enumerate().skip(open + 1) {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => {
                if depth == 0 && c == b'{' {
                    if seen == index {
                        start = Some(pos);
                    }
                    seen += 1;
                }
                depth += 1;
            }
            b'}' | b']' => {
                if depth == 0 {
                    return None; // end of the array
                }
                depth -= 1;
                if depth == 0 {
                    if let Some(s) = start {
                        let key = s + text[s..=pos].find(&format!("\"{field}\""))?;
                        return Some(text[..key].matches('\n').count() + 1);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses the text of an OpenNetLab trace as [`load_opennetlab`] does once it
/// has read it; `path` only names the trace in errors.
pub fn parse_opennetlab(path: &Path, text: &str) -> Result<OpenNetLabTrace, TraceError> {
    let file: OnlFile = serde_json::from_str(text).map_err(|e| {
        let line = e.line();
        let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
        line_err(
            path,
            line,
            line_text,
            format!("invalid OpenNetLab trace: {e}"),
        )
    })?;
    let (direction, pattern) = match (file.uplink, file.downlink) {
        (Some(u), _) if !u.trace_pattern.is_empty() => ("uplink", u.trace_pattern),
        (_, Some(d)) if !d.trace_pattern.is_empty() => ("downlink", d.trace_pattern),
        _ => {
            return Err(file_err(
                path,
                "no entries in uplink.trace_pattern or downlink.trace_pattern",
            ))
        }
    };
    for (k, e) in pattern.iter().enumerate() {
        if let Err((field, reason)) = e.check() {
            let reason = format!("{direction}.trace_pattern[{k}]: {reason}");
            return Err(match entry_field_line(text, direction, k, field) {
                Some(line) => {
                    let line_text = text.lines().nth(line - 1).unwrap_or("");
                    line_err(path, line, line_text.trim(), reason)
                }
                None => file_err(path, reason),
            });
        }
    }
    let mut rate_steps = Vec::with_capacity(pattern.len());
    let mut loss_steps = Vec::with_capacity(pattern.len());
    let mut delay_steps = Vec::with_capacity(pattern.len());
    let (mut any_loss, mut any_rtt) = (false, false);
    let (mut loss, mut rtt) = (0.0, 0.0);
    let mut offset = Duration::ZERO;
    for e in &pattern {
        // Carry the previous loss / rtt when an entry omits them (trace_player.cc).
        if let Some(l) = e.loss {
            loss = l;
            any_loss = true;
        }
        if let Some(r) = e.rtt {
            rtt = r;
            any_rtt = true;
        }
        rate_steps.push((offset, Bitrate::from_bps_f64(e.capacity * 1e3)));
        // Checked by `Entry::check` above.
        loss_steps.push((offset, Probability::saturating(loss)));
        delay_steps.push((offset, Duration::from_millis_f64(rtt / 2.0)));
        offset += Duration::from_millis_f64(e.duration);
    }
    let period = Some(offset);
    let rate = RateSchedule::new(rate_steps, period).map_err(|e| file_err(path, e.to_string()))?;
    let loss = if any_loss {
        Some(Arc::new(
            LossSchedule::new(loss_steps, period).map_err(|e| file_err(path, e.to_string()))?,
        ))
    } else {
        None
    };
    Ok(OpenNetLabTrace {
        rate: Arc::new(rate),
        loss,
        one_way_delay: any_rtt.then_some(delay_steps),
    })
}
