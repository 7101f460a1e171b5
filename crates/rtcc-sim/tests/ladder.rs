//! The ladder replay encoder (`encoder.kind = "ladder"`) through the whole
//! simulator: GCC on 1 Mbps driving real x264 frame sizes, and scenario
//! errors that name the file, line and field (STYLE rules 11, 12).

use rtcc_core::media::frame::FrameType;
use rtcc_core::media::ladder::LadderTrace;
use rtcc_sim::{run, RunOptions, Scenario};

mod common;
use common::{repo, tmp};

#[test]
fn gcc_drives_the_testsrc2_ladder_on_1mbps() {
    // Step: GCC from 700 kbps on a constant 1 Mbps link, 60 s, encoder =
    // replay of data/encoder-traces/testsrc2.csv (rungs 200 … 3000 kbps).
    let sc = Scenario::from_file(&repo().join("scenarios/tests/gcc-ladder-1mbps.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tmp("gcc");
    let opts = RunOptions {
        seed: Some(1),
        out_dir: Some(dir.clone()),
        ..Default::default()
    };
    let s = run(&sc, &opts, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .summary;
    let f = &s["flows"][0];
    let goodput = f["goodput_kbps"].as_f64().unwrap();
    // Check: the rung GCC's target allows is sent, never above capacity:
    // between the 400 and 1000 kbps rungs on average, no loss, no stall.
    assert!(
        (350.0..1000.0).contains(&goodput),
        "goodput {goodput} kbps: {f}"
    );
    assert_eq!(f["packets_lost"].as_u64(), Some(0), "{f}");
    assert_eq!(f["frames_dropped"].as_u64(), Some(0), "{f}");
    let p95 = f["frame_delay_ms"]["p95"].as_f64().unwrap();
    assert!(p95 < 100.0, "frame delay p95 {p95} ms");

    // Check: every frame is the trace's frame at its index in some rung
    // (content position runs across rung switches), key frames where the
    // trace has them, and GCC moved the encoder across at least two rungs.
    let trace = LadderTrace::load(&repo().join("data/encoder-traces/testsrc2.csv")).unwrap();
    let frames = std::fs::read_to_string(dir.join("frames.csv")).unwrap();
    let mut used = std::collections::BTreeSet::new();
    let mut n = 0;
    for line in frames.lines().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        if c[5].is_empty() {
            continue; // Still in flight at the end: size is what arrived.
        }
        let (k, ty, size): (usize, &str, u64) =
            (c[1].parse().unwrap(), c[2], c[3].parse().unwrap());
        let matching: Vec<usize> = trace
            .rungs()
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                let (s, t) = r.frames[k % r.frames.len()];
                s.get() == size && (t == FrameType::Key) == (ty == "I")
            })
            .map(|(i, _)| i)
            .collect();
        assert!(
            !matching.is_empty(),
            "frame {k} ({ty}, {size} B) is in no rung"
        );
        if matching.len() == 1 {
            used.insert(matching[0]);
        }
        n += 1;
    }
    assert!(n >= 1790, "only {n} frames");

    let used_kbps: Vec<u64> = used
        .iter()
        .map(|&i| trace.rungs()[i].bitrate.as_bps() / 1000)
        .collect();
    eprintln!("goodput {goodput} kbps, frame delay p95 {p95} ms, rungs used {used_kbps:?}");
    assert!(used.len() >= 2, "rungs used: {used_kbps:?}");
    assert!(
        used_kbps.iter().all(|&k| k <= 1000),
        "a rung above the 1 Mbps link was used: {used_kbps:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ladder_scenario_errors_name_the_key_and_the_csv_line() {
    let good =
        std::fs::read_to_string(repo().join("scenarios/tests/gcc-ladder-1mbps.toml")).unwrap();
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    // A malformed ladder next to the scenario: line 3 has a bad size.
    std::fs::write(
        dir.join("bad.csv"),
        "rung_kbps,frame,size_bytes,type\n200,0,900,I\n200,1,12x,P\n",
    )
    .unwrap();
    let cases = [
        (
            good.replace(", trace = \"data/encoder-traces/testsrc2.csv\"", ""),
            "flow[0].encoder.trace",
            "needs `trace`",
        ),
        (
            good.replace("kind = \"ladder\"", "kind = \"parametric\""),
            "flow[0].encoder.trace",
            "only applies to kind = \"ladder\"",
        ),
        (
            good.replace("kind = \"ladder\"", "kind = \"lader\""),
            "flow[0].encoder.kind",
            "unknown encoder kind \"lader\"",
        ),
        (
            good.replace("data/encoder-traces/testsrc2.csv", "nope.csv"),
            "flow[0].encoder.trace",
            "\"nope.csv\" not found",
        ),
        (
            good.replace("data/encoder-traces/testsrc2.csv", "bad.csv"),
            "flow[0].encoder.trace",
            "bad.csv:3: field `size_bytes`: \"12x\"",
        ),
    ];
    for (text, key, want) in cases {
        let path = dir.join("bad.toml");
        std::fs::write(&path, &text).unwrap();
        // Validation errors come from loading, CSV errors from building the run.
        let e = match Scenario::from_file(&path) {
            Err(e) => e.to_string(),
            Ok(sc) => run(&sc, &RunOptions::default(), &mut |_| {})
                .err()
                .unwrap_or_else(|| panic!("{want}: the scenario ran"))
                .to_string(),
        };
        assert!(
            e.contains(key) && e.contains(want),
            "want {key} / {want}: {e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
