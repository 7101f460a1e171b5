//! Text inputs a user hands to the simulator: scenario files and link traces.

use std::path::Path;

use rtcc_core::rng;
use rtcc_core::{Bytes, Duration, Instant};
use rtcc_sim::link::{parse_opennetlab, parse_trace, Link, LinkConfig, RateModel, TraceFormat};

/// `scenario`: the bytes as a scenario file's text. Must give a
/// `Scenario` or a `ScenarioError`, never a panic.
pub fn scenario(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    rtcc_sim::Scenario::from_toml_str(text, "<fuzz>").is_ok()
}

/// `trace_mahimahi`: the bytes as a mahimahi trace.
pub fn trace_mahimahi(data: &[u8]) -> bool {
    trace(data, TraceFormat::Mahimahi)
}

/// `trace_throughput`: the bytes as a throughput log.
pub fn trace_throughput(data: &[u8]) -> bool {
    trace(data, TraceFormat::Throughput)
}

/// `trace_opennetlab`: the bytes as an OpenNetLab JSON trace; its loss and
/// delay schedules are read too.
pub fn trace_opennetlab(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let path = Path::new("<fuzz>");
    let Ok(t) = parse_opennetlab(path, text) else {
        return false;
    };
    if let Some(loss) = &t.loss {
        let _ = loss.mean();
        for at in probe_times(t.rate.period()) {
            let p = loss.at(at).get();
            assert!((0.0..=1.0).contains(&p), "loss {p} at {at}");
        }
    }
    // The plain loader must agree that it parses.
    let rate = parse_trace(path, text, TraceFormat::OpenNetLab).expect("parse_opennetlab took it");
    drive(rate);
    true
}

fn trace(data: &[u8], format: TraceFormat) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    match parse_trace(Path::new("<fuzz>"), text, format) {
        Ok(rate) => {
            drive(rate);
            true
        }
        Err(_) => false,
    }
}

/// Longest time the targets simulate: a week (a run this long in the
/// simulator is far beyond any scenario; beyond it nanosecond arithmetic on
/// `u64` is not promised to hold).
const HORIZON: Instant = Instant::from_secs(7 * 24 * 3600);

/// Instants around the loop boundaries of a trace of period `period`, and
/// far ones (an hour, the horizon), in increasing order.
fn probe_times(period: Option<Duration>) -> Vec<Instant> {
    let mut at = vec![
        Instant::ZERO,
        Instant::from_millis(1),
        Instant::from_secs(3600),
        HORIZON,
    ];
    if let Some(p) = period {
        let p = p.as_nanos();
        for k in [1u64, 2, 1000] {
            if let Some(t) = p.checked_mul(k) {
                at.extend([t.saturating_sub(1), t, t.saturating_add(1)].map(Instant::from_nanos));
            }
        }
    }
    at.retain(|&t| t <= HORIZON);
    at.sort_unstable();
    at.dedup();
    at
}

/// What the simulator does with a trace it loaded: a link whose rate it is,
/// asked for its capacity and sent packets through.
fn drive(rate: RateModel) {
    let period = match &rate {
        RateModel::Constant(_) => None,
        RateModel::Schedule(s) => s.period(),
        RateModel::Mahimahi(m) => Some(m.period()),
    };
    let _ = rate.mean_rate(Bytes::new(1500));
    let times = probe_times(period);
    for w in times.windows(2) {
        let _ = rate.mean_capacity(w[0], w[1], Bytes::new(1500));
        let _ = rate.mean_capacity(w[1], w[0], Bytes::new(1500));
    }
    let config = LinkConfig {
        rate,
        ..LinkConfig::default()
    };
    if config.validate().is_err() {
        return;
    }
    let mut link = Link::new(config, rng::stream(1, 0));
    // Packets every 10 ms for 2 s, then a few far apart (times must not go
    // backwards on a link).
    let mut sends: Vec<Instant> = (0..200).map(|i| Instant::from_millis(i * 10)).collect();
    sends.extend(times.iter().copied().filter(|&t| t > Instant::from_secs(2)));
    sends.sort_unstable();
    for t in sends {
        let _ = link.capacity_at(t);
        let _ = link.transmit(t, Bytes::new(1200));
        let _ = link.backlog(t);
    }
}
