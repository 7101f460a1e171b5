//! Unit tests of the link models.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtcc_core::rng::stream;
use rtcc_core::{Bitrate, Bytes, Duration, Instant, Probability};

use super::*;

fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

fn us(x: u64) -> Instant {
    Instant::from_micros(x)
}

fn link(config: LinkConfig) -> Link {
    config.validate().unwrap();
    Link::new(config, stream(1, 1))
}

fn constant(rate: Bitrate) -> LinkConfig {
    LinkConfig {
        rate: RateModel::Constant(rate),
        ..LinkConfig::default()
    }
}

fn at(o: LinkOutcome) -> Instant {
    match o {
        LinkOutcome::Delivered { at } => at,
        other => panic!("expected delivery, got {other:?}"),
    }
}

fn mahimahi(ms_list: &[u64], opportunity: u64) -> LinkConfig {
    LinkConfig {
        rate: RateModel::Mahimahi(Arc::new(
            MahimahiTrace::from_millis(ms_list.to_vec()).unwrap(),
        )),
        mahimahi_opportunity: Bytes::new(opportunity),
        ..LinkConfig::default()
    }
}

fn p(x: f64) -> Probability {
    Probability::new(x).unwrap()
}

/// Workspace root (traces/ lives there).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Keeps the link busy from time 0: each packet arrives 1 ns before the previous one
/// departs. Returns the bytes of packets departing at or before `until`.
/// The link must have no delay, jitter or loss (delivery = departure).
fn saturate(l: &mut Link, size: Bytes, until: Instant) -> u64 {
    let mut now = Instant::ZERO;
    let mut bytes = 0;
    loop {
        let t = at(l.transmit(now, size));
        if t > until {
            return bytes;
        }
        bytes += size.get();
        now = now.max(t - Duration::from_nanos(1));
    }
}

// ---------------------------------------------------------------- constant rate

#[test]
fn constant_rate_departures_queue_behind_each_other() {
    // 12 Mbps: 1500 B take exactly 1 ms.
    let mut l = link(LinkConfig {
        delay: Duration::from_millis(10),
        ..constant(Bitrate::mbps(12))
    });
    assert_eq!(at(l.transmit(ms(0), Bytes::new(1500))), ms(11));
    assert_eq!(at(l.transmit(ms(0), Bytes::new(1500))), ms(12));
    // Arrives while two are in the system: waits for both.
    assert_eq!(at(l.transmit(us(500), Bytes::new(750))), us(12_500));
    assert_eq!(l.backlog(us(500)), Bytes::new(3750));
    assert_eq!(l.backlog(ms(1)), Bytes::new(2250));
    assert_eq!(l.backlog(us(2_500)), Bytes::ZERO);
    // Idle link: starts at once.
    assert_eq!(at(l.transmit(ms(5), Bytes::new(1500))), ms(16));
    let s = l.stats();
    assert_eq!((s.packets_in, s.delivered, s.bytes_delivered), (4, 4, 5250));
    // Waiting times before transmission starts: 0, 1, 1.5, 0 ms → mean 0.625 ms.
    let q = l.queue_delay().summary();
    assert!((q.mean - 0.625).abs() < 1e-3, "{q:?}");
}

// ---------------------------------------------------------------- drop-tail

fn fill_at_zero(l: &mut Link, n: usize) -> Vec<LinkOutcome> {
    (0..n)
        .map(|_| l.transmit(ms(0), Bytes::new(1500)))
        .collect()
}

fn admitted(v: &[LinkOutcome]) -> usize {
    v.iter()
        .filter(|o| matches!(o, LinkOutcome::Delivered { .. }))
        .count()
}

#[test]
fn drop_tail_bytes_excludes_packet_in_transmission() {
    // ns-3 DropTailQueue of 3000 B behind a 12 Mbps device: one packet in the
    // device plus two waiting.
    let mut l = link(LinkConfig {
        queue: QueueLimit::Bytes(Bytes::new(3000)),
        ..constant(Bitrate::mbps(12))
    });
    let out = fill_at_zero(&mut l, 5);
    assert_eq!(admitted(&out), 3);
    assert_eq!(out[3], LinkOutcome::DroppedQueue);
    assert_eq!(l.stats().drops_queue, 2);
    // 1 ms later the first has left and the second is in transmission: room for one.
    assert!(matches!(
        l.transmit(ms(1), Bytes::new(1500)),
        LinkOutcome::Delivered { .. }
    ));
    assert_eq!(
        l.transmit(ms(1), Bytes::new(1500)),
        LinkOutcome::DroppedQueue
    );
    // A small packet still fits when the waiting bytes leave exactly enough room.
    let mut l = link(LinkConfig {
        queue: QueueLimit::Bytes(Bytes::new(2000)),
        ..constant(Bitrate::mbps(12))
    });
    assert_eq!(admitted(&fill_at_zero(&mut l, 2)), 2); // 1 in tx + 1500 waiting
    assert!(matches!(
        l.transmit(ms(0), Bytes::new(500)),
        LinkOutcome::Delivered { .. }
    ));
    assert_eq!(l.transmit(ms(0), Bytes::new(1)), LinkOutcome::DroppedQueue);
    // ns-3 enqueues before the device dequeues: a packet larger than the limit is
    // dropped even on an idle link.
    let mut l = link(LinkConfig {
        queue: QueueLimit::Bytes(Bytes::new(1000)),
        ..constant(Bitrate::mbps(12))
    });
    assert_eq!(
        l.transmit(ms(0), Bytes::new(1500)),
        LinkOutcome::DroppedQueue
    );
}

#[test]
fn drop_tail_packets() {
    let mut l = link(LinkConfig {
        queue: QueueLimit::Packets(2),
        ..constant(Bitrate::mbps(12))
    });
    let out = fill_at_zero(&mut l, 6);
    assert_eq!(admitted(&out), 3);
    // Half-way through the second transmission: one waiting, room for one.
    assert!(matches!(
        l.transmit(us(1500), Bytes::new(100)),
        LinkOutcome::Delivered { .. }
    ));
    assert_eq!(
        l.transmit(us(1500), Bytes::new(100)),
        LinkOutcome::DroppedQueue
    );
}

#[test]
fn drop_tail_time_uses_rate_and_trace_mean() {
    // 2 ms at 12 Mbps = 3000 B.
    let cfg = LinkConfig {
        queue: QueueLimit::Time(Duration::from_millis(2)),
        ..constant(Bitrate::mbps(12))
    };
    assert_eq!(cfg.queue_limit_bytes(), Some(Bytes::new(3000)));
    let mut l = link(cfg);
    assert_eq!(admitted(&fill_at_zero(&mut l, 5)), 3);
    // Mahimahi: 2 opportunities of 1500 B per 4 ms period = 6 Mbps mean; 4 ms → 3000 B.
    let cfg = LinkConfig {
        queue: QueueLimit::Time(Duration::from_millis(4)),
        ..mahimahi(&[1, 4], 1500)
    };
    assert_eq!(cfg.queue_limit_bytes(), Some(Bytes::new(3000)));
    // Looping schedule 8 Mbps / 0 → 4 Mbps mean; 6 ms → 3000 B.
    let s = RateSchedule::new(
        vec![
            (Duration::ZERO, Bitrate::mbps(8)),
            (Duration::from_millis(10), Bitrate::ZERO),
        ],
        Some(Duration::from_millis(20)),
    )
    .unwrap();
    let cfg = LinkConfig {
        rate: RateModel::Schedule(Arc::new(s)),
        queue: QueueLimit::Time(Duration::from_millis(6)),
        ..LinkConfig::default()
    };
    assert_eq!(cfg.queue_limit_bytes(), Some(Bytes::new(3000)));
}

// ---------------------------------------------------------------- mahimahi

#[test]
fn mahimahi_small_packets_share_an_opportunity() {
    // Opportunities at 5 and 10 ms, period 10 ms.
    let mut l = link(mahimahi(&[5, 10], 1500));
    for _ in 0..3 {
        assert_eq!(at(l.transmit(ms(0), Bytes::new(500))), ms(5));
    }
    assert_eq!(at(l.transmit(ms(0), Bytes::new(500))), ms(10));
    // A later arrival, still before 10 ms, uses the rest of that opportunity.
    assert_eq!(at(l.transmit(ms(7), Bytes::new(1000))), ms(10));
    assert_eq!(at(l.transmit(ms(7), Bytes::new(1))), ms(15));
}

#[test]
fn mahimahi_arrival_at_an_opportunity_instant_cannot_use_it() {
    // mm-link rationalizes opportunities <= now before enqueueing the arrival.
    let mut l = link(mahimahi(&[5, 10], 1500));
    assert_eq!(at(l.transmit(ms(5), Bytes::new(100))), ms(10));
}

#[test]
fn mahimahi_large_packet_spans_opportunities() {
    let mut l = link(mahimahi(&[5, 10], 1500));
    // 2000 B: 1500 at 5 ms, 500 at 10 ms.
    assert_eq!(at(l.transmit(ms(0), Bytes::new(2000))), ms(10));
    // The rest of the 10 ms opportunity (1000 B) serves the next packet.
    assert_eq!(at(l.transmit(ms(0), Bytes::new(1000))), ms(10));
    // 4000 B: opportunities at 15, 20 and 25 ms.
    assert_eq!(at(l.transmit(ms(0), Bytes::new(4000))), ms(25));
    // While the big packet spans, it is in transmission: not counted as waiting.
    let mut l = link(LinkConfig {
        queue: QueueLimit::Packets(0),
        ..mahimahi(&[5, 10], 1500)
    });
    assert_eq!(
        l.transmit(ms(0), Bytes::new(100)),
        LinkOutcome::DroppedQueue
    );
    let mut l = link(LinkConfig {
        queue: QueueLimit::Packets(1),
        ..mahimahi(&[5, 10], 1500)
    });
    assert_eq!(at(l.transmit(ms(0), Bytes::new(3000))), ms(10));
    assert_eq!(at(l.transmit(ms(6), Bytes::new(100))), ms(15));
    // At 6 ms the 3000 B packet is in transmission (started at 5 ms), the 100 B waits.
    assert_eq!(
        l.transmit(ms(6), Bytes::new(100)),
        LinkOutcome::DroppedQueue
    );
    assert_eq!(l.backlog(ms(6)), Bytes::new(3100));
}

#[test]
fn mahimahi_unused_opportunities_are_lost() {
    // One opportunity per ms.
    let trace: Vec<u64> = (1..=10).collect();
    let mut l = link(mahimahi(&trace, 1500));
    // Idle until 5.5 ms: opportunities 1..5 ms are gone, not accumulated.
    for k in 0..3 {
        assert_eq!(at(l.transmit(us(5_500), Bytes::new(1500))), ms(6 + k));
    }
    // The unused rest of an opportunity is lost once it has passed.
    let mut l = link(mahimahi(&trace, 1500));
    assert_eq!(at(l.transmit(ms(0), Bytes::new(100))), ms(1));
    assert_eq!(at(l.transmit(us(1_500), Bytes::new(100))), ms(2));
}

#[test]
fn mahimahi_trace_loops_with_period_last_timestamp() {
    // Opportunities at 0 and 4 ms, period 4: each wrap instant 4k ms has two.
    let mut l = link(mahimahi(&[0, 4], 1500));
    assert_eq!(at(l.transmit(ms(1), Bytes::new(1500))), ms(4));
    assert_eq!(at(l.transmit(ms(1), Bytes::new(1500))), ms(4));
    assert_eq!(at(l.transmit(ms(1), Bytes::new(1500))), ms(8));
    // Far later, after an idle gap spanning many loops.
    assert_eq!(at(l.transmit(us(1_000_500), Bytes::new(1500))), ms(1004));
    assert_eq!(at(l.transmit(us(1_000_500), Bytes::new(1500))), ms(1004));
    assert_eq!(at(l.transmit(us(1_000_500), Bytes::new(1500))), ms(1008));
    // Capacity: 2 opportunities per 4 ms = 6 Mbps, also over a 100 ms window.
    assert_eq!(l.mean_capacity(ms(1), ms(401)), Bitrate::mbps(6));
    assert_eq!(l.capacity_at(ms(1000)), Bitrate::mbps(6));
}

#[test]
fn mahimahi_1500_versus_1504_byte_opportunities() {
    // One opportunity per ms; saturate with 1500 B packets from t = 0.
    let trace: Vec<u64> = (1..=1000).collect();
    let delivery_of_376th = |opp| {
        let mut l = link(mahimahi(&trace, opp));
        let mut last = Instant::ZERO;
        for _ in 0..376 {
            last = at(l.transmit(ms(0), Bytes::new(1500)));
        }
        last
    };
    // 1500 B: one packet per opportunity. 1504 B (mm-link's PACKET_SIZE): the 4 spare
    // bytes per opportunity accumulate, 376 × 1500 = 375 × 1504.
    assert_eq!(delivery_of_376th(1500), ms(376));
    assert_eq!(delivery_of_376th(1504), ms(375));
    assert_eq!(
        MahimahiTrace::from_millis(trace.clone())
            .unwrap()
            .mean_capacity(Bytes::new(1504)),
        Bitrate::bps(12_032_000)
    );
}

#[test]
fn mahimahi_verizon_lte_long_run_throughput() {
    // GPL-3.0 trace: read from the shared folder, never copied into the repository.
    let path = Path::new("/work/shared/traces/mahimahi/Verizon-LTE-short.down");
    if !path.exists() {
        println!("skipping: {} is absent", path.display());
        return;
    }
    let RateModel::Mahimahi(trace) = load_trace(path, TraceFormat::Mahimahi).unwrap() else {
        panic!("expected a mahimahi rate model");
    };
    assert_eq!(trace.len(), 58655);
    assert_eq!(trace.period(), Duration::from_secs(140));
    let cfg = LinkConfig {
        rate: RateModel::Mahimahi(trace),
        ..LinkConfig::default()
    };
    let mut l = link(cfg);
    let end = Instant::from_secs(140);
    let bytes = saturate(&mut l, Bytes::new(1500), end);
    let mbps = (Bytes::new(bytes) / Duration::from_secs(140)).as_mbps_f64();
    // traces/README.md: 5.028 Mbps at 1500 B per opportunity.
    assert!((mbps - 5.028).abs() < 0.005, "delivered {mbps} Mbps");
    assert!((l.mean_capacity(Instant::ZERO, end).as_mbps_f64() - 5.028).abs() < 0.001);
}

// ---------------------------------------------------------------- throughput traces

/// Loads a copied throughput trace, checks its long-run mean and that a saturated
/// link delivers it over one period.
fn check_throughput_trace(rel: &str, readme_mean_mbps: f64, readme_duration_s: f64, size: u64) {
    let path = repo_root().join("traces").join(rel);
    let RateModel::Schedule(s) = load_trace(&path, TraceFormat::Throughput).unwrap() else {
        panic!("expected a schedule");
    };
    let period = s.period().unwrap();
    assert!(
        (period.as_secs_f64() - readme_duration_s).abs() < 0.05,
        "{rel}: period {period}"
    );
    let mean = s.long_run_mean().as_mbps_f64();
    assert!(
        (mean - readme_mean_mbps).abs() / readme_mean_mbps < 1e-3,
        "{rel}: mean {mean}"
    );
    let mut l = link(LinkConfig {
        rate: RateModel::Schedule(s),
        ..LinkConfig::default()
    });
    let end = Instant::ZERO + period;
    let bytes = saturate(&mut l, Bytes::new(size), end);
    let got = (Bytes::new(bytes) / period).as_mbps_f64();
    assert!(
        (got - readme_mean_mbps).abs() / readme_mean_mbps < 5e-3,
        "{rel}: delivered {got} Mbps"
    );
}

#[test]
fn lumos5g_4g_space_separated_integer_seconds() {
    // Starts at 5 s (times are made relative to the first sample).
    check_throughput_trace("lumos5g/4G/4g_trace_driving_60005_dr", 12.588, 245.0, 1500);
}

#[test]
fn lumos5g_5g_tab_separated_float_seconds() {
    check_throughput_trace("lumos5g/5G/5g_trace_22_driving", 66.492, 250.0, 6000);
}

#[test]
fn norway_hsdpa_cooked_log() {
    check_throughput_trace(
        "norway-hsdpa/car.snaroya-smestad-report.2011-02-14_2032CET.log",
        1.782,
        408.6,
        1500,
    );
}

#[test]
fn fcc_cooked_log() {
    check_throughput_trace("fcc/trace_866_http---www.amazon.com", 2.623, 1845.0, 1500);
}

#[test]
fn throughput_outage_makes_packets_wait() {
    // 0 s: 8 Mbps, 1 s: outage, 2 s: 8 Mbps; period 3 s.
    let path = write_temp("outage.log", "0 8\n1 0\n2 8\n");
    let rate = load_trace(&path, TraceFormat::Throughput).unwrap();
    let mut l = link(LinkConfig {
        rate,
        ..LinkConfig::default()
    });
    // 1000 B at 8 Mbps = 1 ms; arriving at 1.5 s it leaves at 2.001 s.
    assert_eq!(at(l.transmit(ms(1500), Bytes::new(1000))), ms(2001));
    assert_eq!(l.capacity_at(ms(1500)), Bitrate::ZERO);
    assert_eq!(l.capacity_at(ms(3500)), Bitrate::mbps(8));
    assert_eq!(l.mean_capacity(ms(0), ms(3000)), Bitrate::bps(5_333_333));
}

#[test]
fn raw_norway_log_six_columns() {
    // unix_s elapsed_ms lat lon bytes interval_ms: 125000 B in 1000 ms = 1 Mbps.
    let text = "1289406399 0 59.85 10.78 125000 1000\n\
                1289406400 1000 59.85 10.78 250000 1000\n\
                1289406401 2000 59.85 10.78 0 1000\n";
    let path = write_temp("raw-norway.log", text);
    let RateModel::Schedule(s) = load_trace(&path, TraceFormat::Throughput).unwrap() else {
        panic!("expected a schedule");
    };
    let steps: Vec<_> = s.steps().collect();
    assert_eq!(steps[1], (Duration::from_secs(1), Bitrate::mbps(2)));
    assert_eq!(s.period(), Some(Duration::from_secs(3)));
    assert_eq!(s.long_run_mean(), Bitrate::mbps(1));
}

// ---------------------------------------------------------------- OpenNetLab

#[test]
fn opennetlab_capacity_loss_and_rtt() {
    let t = load_opennetlab(&repo_root().join("traces/opennetlab/loss/trace_loss_pattern_2.json"))
        .unwrap();
    let steps: Vec<_> = t.rate.steps().collect();
    assert_eq!(
        steps,
        vec![
            (Duration::ZERO, Bitrate::mbps(1)),
            (Duration::from_millis(500), Bitrate::mbps(1))
        ]
    );
    assert_eq!(t.rate.period(), Some(Duration::from_secs(1)));
    let loss = t.loss.clone().unwrap();
    assert!((loss.mean() - 0.1).abs() < 1e-12);
    assert!((loss.at(ms(1700)).get() - 0.2).abs() < 1e-12);
    assert!(loss.at(ms(1200)).get().abs() < 1e-12);

    let rtt = load_opennetlab(&repo_root().join("traces/opennetlab/rtt/trace_rtt_pattern_2.json"))
        .unwrap();
    let d = rtt.one_way_delay.unwrap();
    assert_eq!(d[1], (Duration::from_secs(2), Duration::from_millis(200)));

    // Capacity-only file with a zero first entry (outage): raw duration-weighted mean
    // as in traces/README.md (30.195 Mbps including the absurd 8039999 kbps entry).
    let t = load_opennetlab(&repo_root().join("traces/opennetlab/4G_3mbps.json")).unwrap();
    assert!(t.loss.is_none() && t.one_way_delay.is_none());
    assert!((t.rate.long_run_mean().as_mbps_f64() - 30.195).abs() < 0.01);
    assert_eq!(t.rate.rate_at(ms(100)), Bitrate::ZERO);

    // Per-segment loss applied by a link: 20 % in the second half of each second.
    let mut l = link(LinkConfig {
        rate: RateModel::Schedule(Arc::clone(
            &load_opennetlab(&repo_root().join("traces/opennetlab/loss/trace_loss_pattern_2.json"))
                .unwrap()
                .rate,
        )),
        loss: LossConfig::Schedule(loss),
        ..LinkConfig::default()
    });
    let (mut first, mut second) = ((0, 0), (0, 0));
    for i in 0..20_000u64 {
        // One 100 B packet every 1 ms (0.8 ms of transmission at 1 Mbps).
        let now = ms(i);
        let lost = l.transmit(now, Bytes::new(100)) == LinkOutcome::DroppedLoss;
        let half = if (i % 1000) < 500 {
            &mut first
        } else {
            &mut second
        };
        half.0 += lost as u64;
        half.1 += 1;
    }
    assert_eq!(first.0, 0);
    let r = second.0 as f64 / second.1 as f64;
    assert!((r - 0.2).abs() < 0.02, "loss in lossy half {r}");
}

#[test]
fn trace_format_names() {
    assert_eq!(
        "mahimahi".parse::<TraceFormat>().unwrap(),
        TraceFormat::Mahimahi
    );
    assert_eq!(
        "throughput".parse::<TraceFormat>().unwrap(),
        TraceFormat::Throughput
    );
    assert_eq!(
        "opennetlab".parse::<TraceFormat>().unwrap(),
        TraceFormat::OpenNetLab
    );
    let e = "pcap".parse::<TraceFormat>().unwrap_err().to_string();
    assert!(e.contains("pcap") && e.contains("mahimahi"), "{e}");
}

#[test]
fn load_trace_opennetlab_gives_schedule() {
    let m = load_trace(
        &repo_root().join("traces/opennetlab/trace_300k.json"),
        TraceFormat::OpenNetLab,
    )
    .unwrap();
    assert_eq!(m.mean_rate(MAHIMAHI_OPPORTUNITY), Bitrate::kbps(300));
}

// ---------------------------------------------------------------- loss

#[test]
fn bernoulli_loss_rate() {
    let mut l = link(LinkConfig {
        loss: LossConfig::Bernoulli { p: p(0.1) },
        ..constant(Bitrate::mbps(100))
    });
    let n = 100_000;
    for i in 0..n {
        l.transmit(us(i * 200), Bytes::new(1000));
    }
    let s = l.stats();
    let r = s.drops_loss as f64 / n as f64;
    // σ = sqrt(0.09 / 1e5) ≈ 0.00095: 6σ tolerance.
    assert!((r - 0.1).abs() < 0.006, "loss rate {r}");
    assert_eq!(s.delivered + s.drops_loss, n);
}

fn ge(step_ms: u64, p_gb: f64, p_bg: f64, lg: f64, lb: f64) -> LossConfig {
    LossConfig::GilbertElliott {
        step: Duration::from_millis(step_ms),
        p_gb: p(p_gb),
        p_bg: p(p_bg),
        loss_good: p(lg),
        loss_bad: p(lb),
    }
}

#[test]
fn gilbert_elliott_stationary_rate_and_bursts() {
    let cfg = ge(1, 0.05, 0.2, 0.01, 0.6);
    let expected = (0.05 * 0.6 + 0.2 * 0.01) / 0.25; // 0.128
    assert!((cfg.mean_loss() - expected).abs() < 1e-12);
    let mut l = link(LinkConfig {
        loss: cfg,
        ..constant(Bitrate::mbps(1000))
    });
    // One packet per step.
    let n = 400_000u64;
    let mut lost = Vec::with_capacity(n as usize);
    for i in 0..n {
        lost.push(l.transmit(ms(i), Bytes::new(100)) == LinkOutcome::DroppedLoss);
    }
    let rate = lost.iter().filter(|&&x| x).count() as f64 / n as f64;
    assert!(
        (rate - expected).abs() < 0.01,
        "GE loss rate {rate}, expected {expected}"
    );
    // Losses come in bursts: P(loss | previous lost) is well above the mean
    // (a memoryless model would give equality).
    let pairs = lost.windows(2).filter(|w| w[0]).count() as f64;
    let both = lost.windows(2).filter(|w| w[0] && w[1]).count() as f64;
    let cond = both / pairs;
    assert!(cond > 2.0 * expected, "P(loss|loss) = {cond}");
}

#[test]
fn gilbert_elliott_jumps_long_gaps_in_constant_time() {
    // Packets 10^6 steps apart (1 ns steps, 1 ms apart): every packet sees a state
    // drawn from the stationary distribution, so the loss rate is still the
    // stationary one and the run is fast (a per-step loop would take 4e11 steps).
    let cfg = LossConfig::GilbertElliott {
        step: Duration::from_nanos(1),
        p_gb: p(0.1),
        p_bg: p(0.3),
        loss_good: p(0.0),
        loss_bad: p(1.0),
    };
    let mut l = link(LinkConfig {
        loss: cfg,
        ..constant(Bitrate::mbps(1000))
    });
    let n = 400_000u64;
    for i in 0..n {
        l.transmit(ms(i), Bytes::new(100));
    }
    let r = l.stats().drops_loss as f64 / n as f64;
    // Stationary P(bad) = 0.1 / 0.4 = 0.25; independent draws: σ ≈ 0.0007.
    assert!((r - 0.25).abs() < 0.005, "{r}");
}

// ---------------------------------------------------------------- outage windows

fn windows(w: &[(u64, u64)]) -> Result<OutageWindows, OutageError> {
    OutageWindows::new(
        w.iter()
            .map(|&(s, e)| (Duration::from_millis(s), Duration::from_millis(e)))
            .collect(),
    )
}

#[test]
fn outage_drops_every_arrival_inside_a_window_and_nothing_else() {
    // 12 Mbps: 1500 B take 1 ms. Down over [10 ms, 20 ms) and [30 ms, 31 ms).
    let w = Arc::new(windows(&[(10, 20), (30, 31)]).unwrap());
    let mut l = link(LinkConfig {
        delay: Duration::from_millis(5),
        loss: LossConfig::Outage(Arc::clone(&w)),
        ..constant(Bitrate::mbps(12))
    });
    assert_eq!(
        l.fast_rate, 0,
        "a link that can be down is never a fast one"
    );
    // Three packets at 8.5 ms: queued before the window, they still leave
    // during it (departures at 9.5, 10.5 and 11.5 ms).
    for k in 0..3 {
        let t = at(l.transmit(us(8_500), Bytes::new(1500)));
        assert_eq!(t, us(14_500 + 1_000 * k), "packet {k} of the burst");
    }
    // One packet per ms from 12 ms to 40 ms: lost exactly when the arrival
    // is in a window (start included, end excluded).
    let mut lost = 0;
    for i in 12..40 {
        let o = l.transmit(ms(i), Bytes::new(1500));
        let down = (10..20).contains(&i) || i == 30;
        assert_eq!(
            o == LinkOutcome::DroppedLoss,
            down,
            "arrival at {i} ms: {o:?}"
        );
        if down {
            lost += 1;
        } else {
            // Lost ones took no capacity: the link is idle at each arrival.
            assert_eq!(at(o), ms(i + 6), "arrival at {i} ms");
        }
        assert_eq!(down, w.contains(ms(i)));
    }
    assert_eq!(lost, 9);
    // Counted as random losses: offered = delivered + lost, and the lost
    // packets are neither admitted (no queue-delay sample) nor delivered bytes.
    let s = l.stats();
    assert_eq!(s.packets_in, 3 + 28);
    assert_eq!(s.drops_loss, 9);
    assert_eq!(s.drops_queue, 0);
    assert_eq!(s.delivered, 3 + 28 - 9);
    assert_eq!(s.bytes_delivered, 1500 * s.delivered);
    assert_eq!(l.queue_delay().count(), s.delivered);
}

#[test]
fn outage_windows_must_be_non_empty_sorted_and_disjoint() {
    assert_eq!(windows(&[]), Err(OutageError::Empty));
    let e = windows(&[(10, 20), (40, 40)]).unwrap_err();
    assert!(
        matches!(e, OutageError::EmptyWindow { index: 1, .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("window 1 [\"40ms\", \"40ms\"]"),
        "{e}"
    );
    let e = windows(&[(10, 20), (5, 8)]).unwrap_err();
    assert!(matches!(e, OutageError::Overlap { index: 1, .. }), "{e}");
    assert!(
        e.to_string().contains("\"5ms\"") && e.to_string().contains("\"20ms\""),
        "{e}"
    );
    let e = windows(&[(10, 20), (15, 30)]).unwrap_err();
    assert!(matches!(e, OutageError::Overlap { index: 1, .. }), "{e}");
    // Back-to-back windows do not overlap ([start, end) intervals).
    let w = windows(&[(10, 20), (20, 30)]).unwrap();
    assert_eq!(w.total(), Duration::from_millis(20));
    assert!(w.contains(ms(20)) && !w.contains(ms(30)) && !w.contains(us(9_999)));
}

#[test]
fn outage_cursor_agrees_with_a_search_over_random_arrivals() {
    // Many short windows and arrivals at random gaps, some of them long
    // enough to skip several windows at once.
    use rand::Rng as _;
    let mut rng = stream(3, 3);
    let mut spans = Vec::new();
    let mut t = 0;
    for _ in 0..200 {
        let start = t + rng.random_range(1..20u64);
        let end = start + rng.random_range(1..10u64);
        spans.push((start, end));
        t = end + rng.random_range(0..5u64);
    }
    let w = Arc::new(windows(&spans).unwrap());
    let mut l = link(LinkConfig {
        loss: LossConfig::Outage(Arc::clone(&w)),
        ..constant(Bitrate::mbps(1000))
    });
    let mut now = 0u64;
    let mut lost = 0;
    while now < (t + 10) * 1_000_000 {
        now += rng.random_range(0..3_000_000u64);
        let arrival = Instant::from_nanos(now);
        let o = l.transmit(arrival, Bytes::new(100));
        assert_eq!(
            o == LinkOutcome::DroppedLoss,
            w.contains(arrival),
            "{arrival}"
        );
        lost += u64::from(o == LinkOutcome::DroppedLoss);
    }
    assert!(lost > 100, "the test should hit many windows: {lost}");
    assert_eq!(l.stats().drops_loss, lost);
}

// ---------------------------------------------------------------- delay schedule

fn delay_steps(steps: &[(u64, u64)]) -> Arc<DelaySchedule> {
    Arc::new(
        DelaySchedule::new(
            steps
                .iter()
                .map(|&(a, d)| (Duration::from_millis(a), Duration::from_millis(d)))
                .collect(),
        )
        .unwrap(),
    )
}

#[test]
fn scheduled_delay_applies_at_departure_and_never_reorders() {
    // 12 Mbps (1500 B = 1 ms); 20 ms, then 80 ms from 50 ms (the route gets
    // longer), then 10 ms from 100 ms (much shorter).
    let mut l = link(LinkConfig {
        delay_schedule: Some(delay_steps(&[(0, 20), (50, 80), (100, 10)])),
        ..constant(Bitrate::mbps(12))
    });
    assert_eq!(l.fast_rate, 0, "a scheduled delay takes the general path");
    let mut send = |arrival: Instant| at(l.transmit(arrival, Bytes::new(1500)));
    assert_eq!(send(ms(0)), ms(21));
    // Departs at 49.9 ms, just before the change: the old delay.
    assert_eq!(send(us(48_900)), us(69_900));
    // Waits behind it and departs at 50.9 ms: the new delay.
    assert_eq!(send(us(49_000)), us(130_900));
    // Departs at 99.5 ms on the long route; the next departs at 100.5 ms on
    // the short one and would arrive at 110.5 ms, before it: held.
    assert_eq!(send(us(98_500)), us(179_500));
    assert_eq!(send(us(99_500)), us(179_500));
    // Once the long route has drained, the short delay shows.
    assert_eq!(send(ms(200)), ms(211));
    let s = l.stats();
    assert_eq!((s.packets_in, s.delivered), (6, 6));
}

#[test]
fn one_step_delay_schedule_matches_the_constant_delay() {
    // The general path with a one-step schedule gives what the fast path
    // gives with the same constant delay, packet for packet.
    use rand::Rng as _;
    let base = LinkConfig {
        rate: RateModel::Constant(Bitrate::kbps(5_000)),
        queue: QueueLimit::Bytes(Bytes::new(15_000)),
        ..LinkConfig::default()
    };
    let mut fast = link(LinkConfig {
        delay: Duration::from_millis(25),
        ..base.clone()
    });
    let mut scheduled = link(LinkConfig {
        delay_schedule: Some(delay_steps(&[(0, 25)])),
        ..base
    });
    assert_ne!(fast.fast_rate, 0);
    let mut rng = stream(4, 4);
    let mut now = 0u64;
    for _ in 0..5_000 {
        now += rng.random_range(0..3_000_000u64);
        let t = Instant::from_nanos(now);
        assert_eq!(
            fast.transmit(t, Bytes::new(1200)),
            scheduled.transmit(t, Bytes::new(1200))
        );
    }
    assert_eq!(fast.stats(), scheduled.stats());
}

#[test]
fn delay_and_delay_schedule_are_exclusive() {
    let sched = delay_steps(&[(0, 20), (60_000, 80)]);
    let both = LinkConfig {
        delay: Duration::from_millis(20),
        delay_schedule: Some(Arc::clone(&sched)),
        ..LinkConfig::default()
    };
    assert_eq!(
        both.validate(),
        Err(LinkConfigError::DelayAndSchedule(Duration::from_millis(20)))
    );
    let cfg = LinkConfig {
        delay_schedule: Some(sched),
        ..LinkConfig::default()
    };
    cfg.validate().unwrap();
    assert_eq!(cfg.min_delay(), Duration::from_millis(20));
    assert_eq!(cfg.delay_at(ms(59_999)), Duration::from_millis(20));
    assert_eq!(cfg.delay_at(ms(60_000)), Duration::from_millis(80));
    let constant = LinkConfig {
        delay: Duration::from_millis(7),
        ..LinkConfig::default()
    };
    assert_eq!(constant.min_delay(), Duration::from_millis(7));
    assert_eq!(constant.delay_at(ms(1_000)), Duration::from_millis(7));
}

// ---------------------------------------------------------------- jitter

#[test]
fn jitter_is_bounded_and_never_reorders() {
    let delay = Duration::from_millis(20);
    let jitter = Duration::from_millis(5);
    let mut l = link(LinkConfig {
        delay,
        jitter,
        ..constant(Bitrate::mbps(100))
    });
    let mut prev = Instant::ZERO;
    let mut extra_max = Duration::ZERO;
    let mut held = 0;
    for i in 0..50_000u64 {
        // 100 B every 100 µs: 8 µs of transmission, departure = now + 8 µs.
        let now = us(i * 100);
        let t = at(l.transmit(now, Bytes::new(100)));
        let departure = now + Duration::from_micros(8);
        let min = departure + delay;
        assert!(t >= min, "delivery {t} before {min}");
        assert!(t >= prev, "reordered: {t} < {prev}");
        if t - min > jitter {
            // Only allowed when held behind the previous delivery.
            assert_eq!(t, prev);
            held += 1;
        }
        extra_max = extra_max.max(t - min);
        prev = t;
    }
    // Jitter is actually applied and spans most of its range.
    assert!(extra_max > Duration::from_millis(4), "{extra_max}");
    assert!(held < 50_000);
}

// ---------------------------------------------------------------- errors

fn write_temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtcc-link-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn error_text(path: &Path, format: TraceFormat) -> String {
    load_trace(path, format).unwrap_err().to_string()
}

#[test]
fn malformed_traces_name_file_line_and_text() {
    let p = write_temp("bad.mm", "1\n2\nx3\n4\n");
    let e = error_text(&p, TraceFormat::Mahimahi);
    assert!(e.contains("bad.mm:3:") && e.contains("\"x3\""), "{e}");
    let p = write_temp("dec.mm", "1\n5\n4\n");
    let e = error_text(&p, TraceFormat::Mahimahi);
    assert!(
        e.contains("dec.mm:3:") && e.contains("non-decreasing"),
        "{e}"
    );
    let p = write_temp("zero.mm", "0\n0\n");
    assert!(error_text(&p, TraceFormat::Mahimahi).contains("zero.mm:2:"));
    let p = write_temp("empty.mm", "\n");
    assert!(error_text(&p, TraceFormat::Mahimahi).contains("empty.mm"));

    let p = write_temp("bad.log", "0 1.0\n1 2.0\n2 fast\n");
    let e = error_text(&p, TraceFormat::Throughput);
    assert!(e.contains("bad.log:3:") && e.contains("\"2 fast\""), "{e}");
    let p = write_temp("cols.log", "0 1.0\n1 2.0 3.0\n");
    assert!(error_text(&p, TraceFormat::Throughput).contains("cols.log:2:"));
    let p = write_temp("back.log", "0 1.0\n2 2.0\n1 3.0\n");
    assert!(error_text(&p, TraceFormat::Throughput).contains("back.log:3:"));
    let p = write_temp("neg.log", "0 1.0\n1 -2.0\n");
    assert!(error_text(&p, TraceFormat::Throughput).contains("neg.log:2:"));

    let p = write_temp(
        "bad.json",
        "{\n \"uplink\": {\"trace_pattern\": [\n  {\"duration\": 100, \"capacity\": -5}\n ]}\n}\n",
    );
    let e = error_text(&p, TraceFormat::OpenNetLab);
    assert!(
        e.contains("bad.json:3:") && e.contains("capacity -5"),
        "{e}"
    );
    let p = write_temp(
        "syntax.json",
        "{\n \"uplink\": {\n  \"trace_pattern\": [ {\"duration\": 1,, } ]\n}}\n",
    );
    let e = error_text(&p, TraceFormat::OpenNetLab);
    assert!(e.contains("syntax.json:3:"), "{e}");

    let e = error_text(Path::new("/nonexistent/trace.log"), TraceFormat::Throughput);
    assert!(e.contains("/nonexistent/trace.log"), "{e}");
}

#[test]
fn traces_longer_than_the_clock_allows_are_errors() {
    // Found by the trace fuzz targets. A mahimahi timestamp of 384 years
    // made the link's next-loop instant (`base + at`) overflow u64
    // nanoseconds on the first wrap; a throughput log whose times saturate
    // to u64::MAX ns overflowed its loop period `last - first + median`.
    let path = Path::new("long");
    let e = parse_trace(path, "12111211222222\n", TraceFormat::Mahimahi).unwrap_err();
    assert!(e.to_string().contains("146 years"), "{e}");
    let e = parse_trace(
        path,
        "0 1\n1 1\n555555555555555555555 0.3\n",
        TraceFormat::Throughput,
    )
    .unwrap_err();
    assert!(e.to_string().contains("too long"), "{e}");
    // The longest mahimahi trace allowed serves packets across its wrap.
    let last = rate::MAX_MAHIMAHI_MS;
    let text = format!("{}\n{last}\n", last / 2);
    let rate = parse_trace(path, &text, TraceFormat::Mahimahi).unwrap();
    let mut link = Link::new(
        LinkConfig {
            rate,
            ..LinkConfig::default()
        },
        stream(1, 0),
    );
    for t in [0, 1, last / 2 * 1_000_000 + 1] {
        assert!(matches!(
            link.transmit(Instant::from_nanos(t), Bytes::new(1500)),
            LinkOutcome::Delivered { .. }
        ));
    }
}

/// A link whose rate is the trace `text`.
fn trace_link(name: &str, text: &str, format: TraceFormat) -> Link {
    let rate = parse_trace(Path::new(name), text, format).unwrap();
    Link::new(
        LinkConfig {
            rate,
            ..LinkConfig::default()
        },
        stream(1, 0),
    )
}

/// Forty 1200 B packets, one a millisecond, are all accepted, leave in
/// order, and the last one at the end of time ("never").
fn assert_forty_packets_depart_in_order_by_the_end_of_time(link: &mut Link) {
    let mut last = Instant::ZERO;
    for i in 0..40 {
        let LinkOutcome::Delivered { at } = link.transmit(ms(i), Bytes::new(1200)) else {
            panic!("packet {i} dropped");
        };
        assert!(at >= last, "packet {i} at {at} before {last}");
        last = at;
    }
    assert_eq!(last, Instant::from_nanos(u64::MAX));
}

#[test]
fn a_backlog_beyond_the_clock_departs_never() {
    // Found by the trace_mahimahi smoke run: one opportunity every 38
    // years and 40 packets queued: the 15th departs past u64::MAX ns, which
    // overflowed. Departures now saturate at the end of time ("never", as a
    // zero rate gives), in order.
    let mut link = trace_link("sparse", "1211121122222\n", TraceFormat::Mahimahi);
    assert_forty_packets_depart_in_order_by_the_end_of_time(&mut link);
}

#[test]
fn a_schedule_of_nanosecond_steps_serves_a_packet_in_one_go() {
    // Found by the trace_throughput fuzz target (a timeout): samples 1 ns
    // apart give a schedule of 5 Mbit/s for 1 ns, 0 for 1 ns, looping, and
    // a 1200 B packet was served one step at a time over ~2 million loops
    // (seconds per packet). Whole loops are now skipped at once.
    let mut link = trace_link("ns", "0 5\n.00000000128\t00", TraceFormat::Throughput);
    // 9 600 bit at 5 Mbit/s half of the time: 3.84 ms.
    let LinkOutcome::Delivered { at } = link.transmit(Instant::ZERO, Bytes::new(1200)) else {
        panic!("dropped");
    };
    assert!(at.as_nanos().abs_diff(3_840_000) <= 2, "departure at {at}");
    // Queued behind it: twice as late.
    let LinkOutcome::Delivered { at } = link.transmit(Instant::ZERO, Bytes::new(1200)) else {
        panic!("dropped");
    };
    assert!(at.as_nanos().abs_diff(7_680_000) <= 4, "departure at {at}");
}

#[test]
fn a_schedule_backlog_beyond_the_clock_departs_never() {
    // Found by the trace_throughput fuzz target: 1 ms at 5 Mbit/s in every
    // 35 years (625 B per loop), 40 packets of 1200 B queued. Departures
    // saturate at the end of time, and moving the next packet's cursor from
    // there added a loop period past u64::MAX.
    let mut link = trace_link("far", "0 5\n.0010 0\n555555552\t0", TraceFormat::Throughput);
    assert_forty_packets_depart_in_order_by_the_end_of_time(&mut link);
}

// ---------------------------------------------------------------- determinism

#[test]
fn same_seed_same_outcomes() {
    let run = |seed| {
        let cfg = LinkConfig {
            delay: Duration::from_millis(10),
            jitter: Duration::from_millis(3),
            queue: QueueLimit::Packets(20),
            loss: ge(5, 0.05, 0.3, 0.01, 0.5),
            ..constant(Bitrate::mbps(10))
        };
        let mut l = Link::new(cfg, stream(seed, 7));
        (0..20_000u64)
            .map(|i| l.transmit(us(i * 700), Bytes::new(1200)))
            .collect::<Vec<_>>()
    };
    let a = run(42);
    assert_eq!(a, run(42));
    assert_ne!(a, run(43));
    // The run exercises every outcome.
    assert!(a.contains(&LinkOutcome::DroppedQueue));
    assert!(a.contains(&LinkOutcome::DroppedLoss));
}

#[test]
fn fast_path_matches_the_general_path() {
    // A constant-rate link without loss or jitter takes `transmit`'s fast path
    // (cached transmission times); the same link with a loss model that never
    // loses takes the general one. Both must give the same outcomes and stats.
    use rand::Rng as _;
    let base = LinkConfig {
        rate: RateModel::Constant(Bitrate::kbps(12_345)),
        delay: Duration::from_millis(7),
        queue: QueueLimit::Bytes(Bytes::new(20_000)),
        ..LinkConfig::default()
    };
    let never = LossConfig::GilbertElliott {
        step: Duration::from_millis(1),
        p_gb: Probability::new(0.5).unwrap(),
        p_bg: Probability::new(0.5).unwrap(),
        loss_good: Probability::new(0.0).unwrap(),
        loss_bad: Probability::new(0.0).unwrap(),
    };
    let mut fast = link(base.clone());
    let mut general = link(LinkConfig {
        loss: never,
        ..base
    });
    assert_ne!(fast.fast_rate, 0);
    assert_eq!(general.fast_rate, 0);
    let mut rng = stream(5, 5);
    let mut now = 0u64;
    let sizes = [40u64, 1500, 1500, 1200, 64, 1500];
    let mut drops = 0;
    for _ in 0..20_000 {
        now += rng.random_range(0..1_000_000u64);
        let size = Bytes::new(sizes[rng.random_range(0..sizes.len())]);
        let t = Instant::from_nanos(now);
        let a = fast.transmit(t, size);
        assert_eq!(a, general.transmit(t, size));
        drops += u64::from(a == LinkOutcome::DroppedQueue);
        assert_eq!(fast.backlog(t), general.backlog(t));
    }
    assert!(drops > 0, "the test should exercise the queue limit");
    let (f, g) = (fast.stats(), general.stats());
    assert_eq!(
        (f.packets_in, f.delivered, f.bytes_delivered, f.drops_queue),
        (g.packets_in, g.delivered, g.bytes_delivered, g.drops_queue)
    );
    assert_eq!(
        fast.queue_delay().summary(),
        general.queue_delay().summary()
    );
    assert_eq!(fast.queue_delay().count(), general.queue_delay().count());
}

#[test]
fn hot_fields_fill_the_first_two_cache_lines() {
    // `transmit`'s fast path reads and writes nothing past the queue-delay
    // histogram's header (see `Link`'s layout), two lines of one aligned pair.
    assert_eq!(std::mem::align_of::<Link>(), 128);
    assert_eq!(std::mem::size_of::<InFlight>(), 16);
    assert!(std::mem::offset_of!(Link, queue_delay) < 128);
    assert_eq!(
        std::mem::offset_of!(Link, queue_delay) + std::mem::size_of::<DelayHistogram>(),
        std::mem::offset_of!(Link, drops_queue)
    );
    assert!(std::mem::offset_of!(Link, drops_queue) <= 128);
}

#[test]
fn ring_keeps_fifo_order_across_growth_and_wrap_around() {
    // Against a VecDeque: random pushes and pops, so that the ring grows
    // while its head is in the middle of the buffer.
    use rand::Rng as _;
    let mut ring = Ring::with_capacity(4);
    let mut model = VecDeque::new();
    let mut rng = stream(9, 9);
    let mut next = 0u64;
    for _ in 0..10_000 {
        if rng.random_range(0..3u32) > 0 || model.is_empty() {
            next += 1;
            ring.push_back(InFlight {
                departure: next,
                cum_end: 2 * next,
            });
            model.push_back(next);
        } else {
            assert_eq!(ring.front().map(|f| f.departure), model.front().copied());
            ring.pop_front();
            model.pop_front();
        }
        assert_eq!(ring.len(), model.len() as u64);
        assert_eq!(
            ring.front().map(|f| f.cum_end),
            model.front().map(|&d| 2 * d)
        );
    }
    assert!(ring.buf.len() > 4, "the ring should have grown");
    ring.clear();
    assert_eq!(ring.front().map(|f| f.departure), None);
}

#[test]
fn queue_matches_a_naive_fifo() {
    // Against a list of every admitted packet (departure, size): the bytes and
    // packets not yet departed, and the drop-tail decision (waiting = all but
    // the oldest, which is in transmission), at every arrival. Sparse and
    // bursty arrivals, so that the link is often idle (its newest packet
    // alone, kept out of the ring) and often queued.
    use rand::Rng as _;
    let delay = Duration::from_millis(3);
    for (queue, limit_bytes, limit_packets) in [
        (QueueLimit::Bytes(Bytes::new(9_000)), 9_000, u64::MAX),
        (QueueLimit::Packets(5), u64::MAX, 5),
    ] {
        let mut l = link(LinkConfig {
            rate: RateModel::Constant(Bitrate::mbps(10)),
            delay,
            queue,
            ..LinkConfig::default()
        });
        let mut rng = stream(9, 1);
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        let (mut now, mut drops, mut idle) = (0u64, 0, 0);
        for _ in 0..20_000 {
            now += if rng.random_bool(0.3) {
                rng.random_range(0..3_000_000)
            } else {
                rng.random_range(0..600_000)
            };
            let size = [40u64, 1500, 1200, 576][rng.random_range(0..4)];
            let present: Vec<&(u64, u64)> = admitted.iter().filter(|p| p.0 > now).collect();
            idle += u64::from(present.is_empty());
            let waiting_bytes: u64 = present.iter().skip(1).map(|p| p.1).sum();
            let waiting_pkts = present.len().saturating_sub(1) as u64;
            let admit = waiting_bytes + size <= limit_bytes && waiting_pkts < limit_packets;
            let t = Instant::from_nanos(now);
            match l.transmit(t, Bytes::new(size)) {
                LinkOutcome::Delivered { at } => {
                    assert!(admit, "admitted at {now} ns against the model");
                    admitted.push(((at - delay).as_nanos(), size));
                }
                LinkOutcome::DroppedQueue => {
                    assert!(!admit, "dropped at {now} ns against the model");
                    drops += 1;
                }
                LinkOutcome::DroppedLoss => unreachable!("no loss model"),
            }
            let left: Vec<&(u64, u64)> = admitted.iter().filter(|p| p.0 > now).collect();
            assert_eq!(l.backlog(t).get(), left.iter().map(|p| p.1).sum::<u64>());
            assert_eq!(l.backlog_packets(t), left.len());
            admitted.retain(|p| p.0 > now);
        }
        assert!(drops > 100 && idle > 1_000, "drops {drops}, idle {idle}");
    }
}
