"""Camel in closed loop on the simulator: shared links, shallow buffers, loss, jitter.

The unit tests of each mechanism are in `crates/rtcc-core/src/cc/camel/`; these
run the whole controller against the network (docs/algorithms/camel.md,
"Tests"). Each check names its set-up, seeds and numbers in its message. The
bounds were set on seeds 1-3 (the ones run here); seeds 4-5, run by hand with
the same code, gave values inside them (camel.md lists the numbers). The
set-up is the §5 one of the paper runs: 1000 kbps, 20 ms one way, a 60 KB
drop-tail queue, GOP 60, key frames 4 x a delta frame.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import rtcc
from rtcc.reproduce.metrics import window_metrics

SEEDS = [1, 2, 3]
LINK = {"name": "bottleneck", "rate": "1000kbps", "delay": "20ms", "queue": "60KB"}
# The paper's rules alone (gamma reset to 1, no standing-queue test, eq. 1 and eq. 6
# as written, no drain, the head is L; camel.md I25-I29, I34).
LITERAL = {
    "gamma_increase": 0.0,
    "standing_queue": "0s",
    "scale_allowance": False,
    "window_cap": False,
    "drain_interval": "0s",
    "burst_budget": "0s",
}
# Camel without the head budget (camel.md I34): the head is L, the window's
# allowance L.
NO_BUDGET = {"burst_budget": "0s"}


def media(name: str, cc: str = "camel", start: str | None = None, **kw: Any) -> dict[str, Any]:
    flow: dict[str, Any] = {
        "name": name,
        "kind": "media",
        "cc": cc,
        "encoder": {"gop": 60, "i_frame_factor": 4},
    }
    if start:
        flow["start"] = start
    flow.update(kw)
    return flow


def scenario(flows: list[dict[str, Any]], duration: str = "60s", **link: Any) -> dict[str, Any]:
    return {"duration": duration, "link": [{**LINK, **link}], "flow": flows}


def window(result: rtcc.Result, start: float, end: float) -> dict[str, Any]:
    out: dict[str, Any] = window_metrics(result.timeseries, {"w": (start, end)})["w"]
    return out


def trace(result: rtcc.Result, flow: str, variable: str) -> pl.DataFrame:
    assert result.cc_trace is not None, "run with cc_trace=True"
    return result.cc_trace.filter(
        (pl.col("flow") == flow) & (pl.col("variable") == variable)
    ).select("time_s", "value")


@pytest.mark.parametrize("seed", SEEDS)
def test_two_camel_flows_share_with_a_short_queue(seed: int) -> None:
    """Fig. 14 with two flows (0 s, 10 s): fair, lossless, a short queue over 30-60 s."""
    r = rtcc.run(scenario([media("a"), media("b", start="10s")]), seed=seed)
    w = window(r, 30, 60)
    shares = f"{w['a']['goodput_kbps']:.0f} and {w['b']['goodput_kbps']:.0f} kbps"
    ctx = f"two Camel flows, seed {seed}, 30-60 s: {shares}"
    assert w["jain"] >= 0.88, f"{ctx}: Jain {w['jain']:.3f}"
    assert w["loss_rate"] <= 0.01, f"{ctx}: loss {w['loss_rate']:.3f}"
    assert w["queue_delay_ms"] <= 50, f"{ctx}: mean queue {w['queue_delay_ms']:.1f} ms"


def test_two_camel_flows_overflow_with_the_paper_rules_alone() -> None:
    """The same run with gamma reset to 1 and no standing-queue test: both flows'
    BW_avg read the capacity, so they keep the 60 KB queue full (measured:
    21-25 % loss, 416-458 ms mean queue on seeds 1-5). This is what the two
    deviations fix, and shows the test above can fail."""
    flows = [media("a", cc_config=LITERAL), media("b", start="10s", cc_config=LITERAL)]
    w = window(rtcc.run(scenario(flows), seed=1), 30, 60)
    assert w["loss_rate"] > 0.1, f"paper rules, seed 1: loss {w['loss_rate']:.3f}"
    assert w["queue_delay_ms"] > 200, f"paper rules, seed 1: queue {w['queue_delay_ms']:.1f} ms"


@pytest.mark.parametrize("seed", SEEDS)
def test_four_staggered_camel_flows_share_with_a_short_queue(seed: int) -> None:
    """Fig. 14 (a flow every 10 s), over 40-60 s: measured Jain 0.91-0.97,
    no loss, 22-34 ms mean queue on seeds 1-5 (without the drain, Jain
    0.85-0.98; under the paper's rules alone 28-37 % loss, 430-460 ms)."""
    flows = [media("a"), media("b", start="10s"), media("c", start="20s"), media("d", start="30s")]
    w = window(rtcc.run(scenario(flows), seed=seed), 40, 60)
    ctx = f"four Camel flows, seed {seed}, 40-60 s"
    assert w["jain"] >= 0.88, f"{ctx}: Jain {w['jain']:.3f}"
    assert w["loss_rate"] <= 0.01, f"{ctx}: loss {w['loss_rate']:.3f}"
    assert w["queue_delay_ms"] <= 60, f"{ctx}: mean queue {w['queue_delay_ms']:.1f} ms"


@pytest.mark.parametrize("seed", SEEDS)
def test_camel_and_gcc_keep_the_queue_short(seed: int) -> None:
    """§5.5 with a GCC flow from 30 s, over 40-90 s: no loss, a short queue,
    and GCC keeps a quarter of the link (230-258 kbps on seeds 1-5; the
    >= 35 % target is not reached, results/camel.md). Without the head
    budget (camel.md I34) GCC keeps 74-136 kbps: Camel's whole key frames go
    back to back and GCC's trendline reads each as overuse."""
    flows = [media("camel"), media("gcc", cc="gcc", start="30s")]
    w = window(rtcc.run(scenario(flows, duration="90s"), seed=seed), 40, 90)
    shares = f"Camel {w['camel']['goodput_kbps']:.0f}, GCC {w['gcc']['goodput_kbps']:.0f} kbps"
    ctx = f"Camel + GCC, seed {seed}, 40-90 s: {shares}"
    assert w["loss_rate"] <= 0.01, f"{ctx}: loss {w['loss_rate']:.3f}"
    assert w["queue_delay_ms"] <= 50, f"{ctx}: mean queue {w['queue_delay_ms']:.1f} ms"
    assert w["gcc"]["goodput_kbps"] >= 200, ctx
    assert w["jain"] >= 0.8, f"{ctx}: Jain {w['jain']:.3f}"


def test_without_the_head_budget_camel_squeezes_gcc() -> None:
    """The same run without I34: GCC falls below 150 kbps (74-136 on seeds
    1-5), so the test above can fail and I34 is what passes it."""
    flows = [media("camel", cc_config=NO_BUDGET), media("gcc", cc="gcc", start="30s")]
    w = window(rtcc.run(scenario(flows, duration="90s"), seed=1), 40, 90)
    assert w["gcc"]["goodput_kbps"] < 150, (
        f"without I34, seed 1: GCC {w['gcc']['goodput_kbps']:.0f}"
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_the_head_is_held_to_its_budget(seed: int) -> None:
    """I34 on the 10 KB buffer of Fig. 20: eq. 7 still runs (L above 12 KB
    most of the time, as nothing overflows), but the head sent back to back
    is 33 ms of gamma x BW_avg, about 3.7 KB on a 1000 kbps link, from 10 s;
    before the first sample it is L (8 KB), which makes the first sample."""
    flow = media("media", recovery="nack")
    r = rtcc.run(scenario([flow], duration="40s", queue="10KB"), seed=seed, cc_trace=True)
    head = trace(r, "media", "head_bytes")
    first = head["value"][0]
    assert first == 8192, f"10 KB, seed {seed}: first head {first}"
    late = head.filter(pl.col("time_s") >= 10)["value"].cast(pl.Float64)
    lo, hi = float(late.min()), float(late.max())  # type: ignore[arg-type]
    assert lo >= 2496, (seed, lo)
    assert hi <= 4200, (seed, hi)
    length = trace(r, "media", "burst_length_bytes").filter(pl.col("time_s") >= 10)["value"]
    above = float((length > 12288).mean())  # type: ignore[arg-type]
    assert above >= 0.5, (seed, above)


@pytest.mark.parametrize("seed", SEEDS)
def test_camel_takes_what_udp_leaves(seed: int) -> None:
    """§5.5, Fig. 15: a 500 kbps UDP flow on 30-60 s; over 40-60 s Camel
    gets most of the 500 kbps left, UDP loses little, and the bottleneck's
    p95 queue delay stays within the issue's 200 ms (67-160 ms on seeds 1-8
    with the sender-queue pushback, I31; 55-116 ms without it)."""
    udp = {"name": "udp", "kind": "udp-cbr", "rate": "500kbps", "start": "30s", "stop": "60s"}
    w = window(rtcc.run(scenario([media("camel"), udp], duration="90s"), seed=seed), 40, 60)
    ctx = f"Camel + UDP, seed {seed}, 40-60 s: Camel {w['camel']['goodput_kbps']:.0f} kbps"
    assert w["udp"]["loss_rate"] <= 0.01, f"{ctx}: UDP loss {w['udp']['loss_rate']:.3f}"
    assert 0.8 * 500 <= w["camel"]["goodput_kbps"] <= 520, ctx
    p95 = w["queue_delay_ms_p95"]
    assert p95 <= 200, f"{ctx}: p95 queue {p95:.1f} ms"


@pytest.mark.parametrize("seed", SEEDS)
def test_camel_keeps_a_minimal_rate_beside_cubic_in_a_deep_buffer(seed: int) -> None:
    """§5.5, Fig. 17: a bulk CUBIC flow from 30 s fills a 500 KB buffer (4 s
    at 1 Mbps); over 40-90 s Camel keeps a minimal rate (111-128 kbps on seeds
    1-5) instead of pushing its frames through seconds of queue, and CUBIC
    keeps most of the link: the queue is deeper than I35's 1 s, so the
    competing mode never starts."""
    cubic = {"name": "cubic", "kind": "tcp", "cc": "cubic", "start": "30s"}
    w = window(
        rtcc.run(scenario([media("camel"), cubic], duration="90s", queue="500KB"), seed=seed),
        40,
        90,
    )
    camel, tcp = w["camel"]["goodput_kbps"], w["cubic"]["goodput_kbps"]
    ctx = f"Camel + CUBIC at 500 KB, seed {seed}, 40-90 s: Camel {camel:.0f}, CUBIC {tcp:.0f} kbps"
    assert 50 <= camel <= 200, ctx
    assert tcp >= 400, ctx


@pytest.mark.parametrize("seed", SEEDS)
def test_camel_shares_with_cubic_in_a_shallow_buffer(seed: int) -> None:
    """§5.5, Fig. 17: at 100 KB (800 ms at 1 Mbps) "Camel achieves roughly
    equal bandwidth sharing with TCP CUBIC". CUBIC's queue stands through
    Camel's cuts, so I35's competing mode starts (`competitor_queue_ms` in
    the trace) and Camel answers loss only: over 40-90 s each flow gets 30-70
    % (Camel 343-389 kbps on seeds 1-3, 318-382 on 4-15). Without I35 Camel
    kept 42-45 kbps."""
    cubic = {"name": "cubic", "kind": "tcp", "cc": "cubic", "start": "30s"}
    r = rtcc.run(
        scenario([media("camel"), cubic], duration="90s", queue="100KB"), seed=seed, cc_trace=True
    )
    w = window(r, 40, 90)
    camel, tcp = w["camel"]["goodput_kbps"], w["cubic"]["goodput_kbps"]
    ctx = f"Camel + CUBIC at 100 KB, seed {seed}, 40-90 s: Camel {camel:.0f}, CUBIC {tcp:.0f} kbps"
    assert 300 <= camel <= 700, ctx
    assert 300 <= tcp <= 700, ctx
    competing = trace(r, "camel", "competitor_queue_ms").filter(pl.col("value") > 0)
    assert competing.height > 0, f"{ctx}: the competing mode never started"


def test_without_the_competing_mode_camel_yields_to_cubic() -> None:
    """The same 100 KB run without I35 (`compete_after = "0s"`): Camel keeps
    under 100 kbps (42-45 on seeds 1-5), so the test above can fail and I35
    is what passes it."""
    cubic = {"name": "cubic", "kind": "tcp", "cc": "cubic", "start": "30s"}
    camel = media("camel", cc_config={"compete_after": "0s"})
    w = window(rtcc.run(scenario([camel, cubic], duration="90s", queue="100KB"), seed=1), 40, 90)
    assert w["camel"]["goodput_kbps"] < 100, w["camel"]


def test_the_competing_mode_ends_when_cubic_leaves() -> None:
    """I35: CUBIC on 30-60 s at 100 KB. Once it has left, Camel's queue is
    its own: the competing mode ends within `compete_after` (10 s), and over
    70-120 s Camel holds the link with a short queue again (857-866 kbps,
    13-16 ms on seeds 6-8)."""
    cubic = {"name": "cubic", "kind": "tcp", "cc": "cubic", "start": "30s", "stop": "60s"}
    r = rtcc.run(
        scenario([media("camel"), cubic], duration="120s", queue="100KB"), seed=1, cc_trace=True
    )
    competing = (
        trace(r, "camel", "competitor_queue_ms")
        .filter(pl.col("value") > 0)["time_s"]
        .cast(pl.Float64)
    )
    assert competing.len() > 0, "the competing mode never started"
    last = competing.max()
    assert isinstance(last, float)
    assert last <= 75, f"competing until {last:.1f} s"
    w = window(r, 70, 120)
    assert w["camel"]["goodput_kbps"] >= 750, w["camel"]
    assert w["queue_delay_ms"] <= 50, w


def test_shallow_buffer_shrinks_the_burst_and_falls_back() -> None:
    """§4.3 at a 2 KB buffer (Fig. 20): L reaches its minimum within 20 s on
    every seed; the period's queue range (I33's buffer estimate) is under a
    2 KB burst plus a packet, so the loss hands control to GCC at the first
    update at the minimum, and GCC holds most of the run. At 4 KB the
    estimate is above the bound and Camel keeps bursting (Fig. 13)."""
    for seed in [1, 2, 3, 4, 5]:
        flow = media("media", recovery="nack")
        r = rtcc.run(scenario([flow], duration="90s", queue="2KB"), seed=seed, cc_trace=True)
        length = trace(r, "media", "burst_length_bytes")
        at_min = length.filter(pl.col("value") <= 2048)["time_s"].cast(pl.Float64).min()
        assert isinstance(at_min, float), f"2 KB, seed {seed}: L never at 2 KB"
        assert at_min <= 20, f"2 KB, seed {seed}: L at 2 KB from {at_min} s"
        buffer = trace(r, "media", "buffer_bytes")["value"].median()
        assert isinstance(buffer, float), (seed, buffer)
        assert buffer < 2048 + 1200, (seed, buffer)
        fallback = trace(r, "media", "fallback")
        first = fallback.filter(pl.col("value") > 0)["time_s"].cast(pl.Float64).min()
        assert isinstance(first, float), f"2 KB, seed {seed}: {first!r}"
        assert first <= at_min + 10, f"2 KB, seed {seed}: {first}"
        share = fallback["value"].mean()
        assert isinstance(share, float), f"2 KB, seed {seed}: {share!r}"
        assert share >= 0.5, f"2 KB, seed {seed}: {share}"
    for seed in [1, 2]:
        flow = media("media", recovery="nack")
        r = rtcc.run(scenario([flow], duration="60s", queue="4KB"), seed=seed, cc_trace=True)
        buffer = trace(r, "media", "buffer_bytes")["value"].min()
        assert isinstance(buffer, float), (seed, buffer)
        assert buffer > 2048 + 1200, (seed, buffer)
        assert trace(r, "media", "fallback")["value"].max() == 0, f"4 KB, seed {seed}"


@pytest.mark.parametrize("seed", SEEDS)
def test_capacity_steps_are_tracked(seed: int) -> None:
    """Fig. 11: 2000 -> 1000 -> 2000 kbps at 30 s and 60 s, ETR 0.6: the
    target's mean over each step, 3 s after it starts, is within 5 % of the
    capacity (the estimate follows the link, not the undershooting encoder)."""
    steps = [
        {"at": "0s", "rate": "2000kbps"},
        {"at": "30s", "rate": "1000kbps"},
        {"at": "60s", "rate": "2000kbps"},
    ]
    encoder = {"gop": 60, "i_frame_factor": 4, "max_bitrate": "2.5Mbps", "etr": {"constant": 0.6}}
    link = {k: v for k, v in LINK.items() if k != "rate"} | {"schedule": steps}
    sc = {"duration": "90s", "link": [link], "flow": [media("media", encoder=encoder)]}
    r = rtcc.run(sc, seed=seed)
    ts = r.timeseries
    for start, end, capacity in [(3, 30, 2000), (33, 60, 1000), (63, 90, 2000)]:
        part = ts.filter((pl.col("time_s") >= start) & (pl.col("time_s") < end))
        mean = float(part["target_kbps"].mean())  # type: ignore[arg-type]
        assert abs(mean / capacity - 1) <= 0.05, (
            f"steps, seed {seed}, {start}-{end} s: target {mean:.0f} kbps, capacity {capacity}"
        )


@pytest.mark.parametrize("seed", SEEDS)
def test_sustained_random_loss_keeps_a_bounded_target(seed: int) -> None:
    """30 % Bernoulli loss for 60 s: the target neither runs above the link
    nor collapses (loss above p_phys is congestion; random loss is not)."""
    loss = {"model": "bernoulli", "p": 0.3}
    r = rtcc.run(scenario([media("media", recovery="nack")], loss=loss), seed=seed)
    t = r.timeseries.filter(pl.col("time_s") >= 10)["target_kbps"].cast(pl.Float64)
    top, mean = float(t.max()), float(t.mean())  # type: ignore[arg-type]
    ctx = f"30 % loss, seed {seed}, 10-60 s"
    assert top <= 1050, f"{ctx}: target max {top:.0f} kbps"
    assert mean >= 600, f"{ctx}: target mean {mean:.0f} kbps"


@pytest.mark.parametrize("seed", SEEDS)
def test_jitter_does_not_run_away(seed: int) -> None:
    """20 ms of jitter for 60 s: BW_avg is bytes over dispersion (not a
    mean of per-frame ratios, which jitter biases upward), so the target's
    90th percentile stays at the link and nothing stalls."""
    r = rtcc.run(scenario([media("media")], jitter="20ms"), seed=seed)
    t = r.timeseries.filter(pl.col("time_s") >= 10)["target_kbps"]
    p90 = float(t.quantile(0.9))  # type: ignore[arg-type]
    stall = r.summary["flows"][0]["stall_ratio"]
    assert p90 <= 1050, f"20 ms jitter, seed {seed}: target p90 {p90:.0f} kbps"
    assert stall <= 0.01, f"20 ms jitter, seed {seed}: stall {stall:.3f}"


@pytest.mark.parametrize("seed", SEEDS)
def test_the_dispersion_stretch_of_jitter_is_removed(seed: int) -> None:
    """50 ms of jitter (uniform per packet, never reordering) stretches every
    head's dispersion by about 20 ms whatever its length; without the stretch
    correction (camel.md I32) BW_avg reads about half the link and Camel's
    bitrate falls below GCC's (505 against 607 kbps, seeds 1-5). With it the
    bitrate is above GCC's, the target's 90th percentile stays within 15 %
    of the link (1035-1100 kbps on seeds 1-6: the corrected samples are
    noisier than plain ones), nothing stalls, and the trace shows the
    stretch found (median 6-9 ms after 20 s; zero while not significant).
    Run without the head budget (I34), whose 2-3 packet heads are noisier:
    this tests I32 alone; `test_camel_beats_gcc_under_jitter_with_the_budget`
    tests the default."""
    sc = scenario([media("media", recovery="nack", cc_config=NO_BUDGET)], jitter="50ms")
    r = rtcc.run(sc, seed=seed, cc_trace=True)
    gcc_sc = scenario([media("media", cc="gcc", recovery="nack")], jitter="50ms")
    gcc = rtcc.run(gcc_sc, seed=seed).summary["flows"][0]
    flow = r.summary["flows"][0]
    t = r.timeseries.filter(pl.col("time_s") >= 10)["target_kbps"]
    p90 = float(t.quantile(0.9))  # type: ignore[arg-type]
    stretch = trace(r, "media", "stretch_ms").filter(pl.col("time_s") >= 20)["value"]
    ctx = f"50 ms jitter, seed {seed}"
    kbps, gcc_kbps = flow["media_bitrate_kbps"], gcc["media_bitrate_kbps"]
    assert kbps > 1.1 * gcc_kbps, f"{ctx}: Camel {kbps:.0f} kbps, GCC {gcc_kbps:.0f}"
    assert p90 <= 1150, f"{ctx}: target p90 {p90:.0f} kbps"
    assert flow["stall_ratio"] <= 0.01, f"{ctx}: stall {flow['stall_ratio']:.3f}"
    median = float(stretch.median())  # type: ignore[arg-type]
    assert 3 <= median <= 40, f"{ctx}: median stretch {median:.1f} ms"


@pytest.mark.parametrize("seed", SEEDS)
def test_camel_beats_gcc_under_jitter_with_the_budget(seed: int) -> None:
    """50 ms of jitter with the defaults: the window I34 tightens keeps a
    slack of 1.5 delay noises or 4 stretches, so Camel stays above GCC's
    bitrate (745 against 607 kbps on seeds 1-5; without the noise term 706
    against GCC's 648 on seed 2) without stalling."""
    r = rtcc.run(scenario([media("media", recovery="nack")], jitter="50ms"), seed=seed)
    gcc_sc = scenario([media("media", cc="gcc", recovery="nack")], jitter="50ms")
    gcc = rtcc.run(gcc_sc, seed=seed).summary["flows"][0]
    flow = r.summary["flows"][0]
    ctx = f"50 ms jitter, seed {seed}: Camel {flow['media_bitrate_kbps']:.0f} kbps"
    assert flow["media_bitrate_kbps"] > gcc["media_bitrate_kbps"], (
        f"{ctx}, GCC {gcc['media_bitrate_kbps']:.0f}"
    )
    assert flow["stall_ratio"] <= 0.01, f"{ctx}: stall {flow['stall_ratio']:.3f}"


# ---- Snapshot trajectories (STYLE.md rule 9) ----
#
# Canonical runs print Camel's state every 500 ms as integers: target (kbps),
# gamma (per mille), L (bytes), the head (bytes, I34; "-" in fall-back), D_min
# (ms), BW_avg (kbps), fall-back (0/1). The
# files under tests/python/snapshots/ are committed, so a behaviour change shows
# in review. After an intended change, rewrite them with
# RTCC_UPDATE_SNAPSHOTS=1 pytest tests/python/test_camel.py -k snapshot
# and explain the difference in the commit message.

SNAPSHOTS = Path(__file__).parent / "snapshots"
SNAPSHOT_STEPS = [
    {"at": "0s", "rate": "2000kbps"},
    {"at": "20s", "rate": "1000kbps"},
    {"at": "40s", "rate": "2000kbps"},
]
SNAPSHOT_RUNS: dict[str, dict[str, Any]] = {
    # Unlimited start on a clean 1000 kbps link.
    "camel-start": scenario([media("media")], duration="20s"),
    # Capacity 2000 -> 1000 -> 2000 kbps at 20 s and 40 s.
    "camel-steps": {
        "duration": "60s",
        "link": [{k: v for k, v in LINK.items() if k != "rate"} | {"schedule": SNAPSHOT_STEPS}],
        "flow": [
            media("media", encoder={"gop": 60, "i_frame_factor": 4, "max_bitrate": "2.5Mbps"})
        ],
    },
    # Application-limited: the encoder undershoots at ETR 0.6.
    "camel-app-limited": scenario(
        [media("media", encoder={"gop": 60, "i_frame_factor": 4, "etr": {"constant": 0.6}})],
        duration="30s",
    ),
    # A shallow buffer: L shrinks to 2 KB, then the fall-back to GCC.
    "camel-shallow": scenario([media("media", recovery="nack")], duration="60s", queue="2KB"),
}
SNAPSHOT_VARIABLES = [
    ("target_kbps", 1.0),
    ("gamma", 1000.0),
    ("burst_length_bytes", 1.0),
    ("head_bytes", 1.0),
    ("d_min_ms", 1.0),
    ("bw_avg_kbps", 1.0),
    ("fallback", 1.0),
]


def trajectory(sc: dict[str, Any]) -> str:
    """Camel's state every 500 ms of a run (seed 1), one line per instant."""
    r = rtcc.run(sc, seed=1, cc_trace=True)
    assert r.cc_trace is not None
    state = r.cc_trace.pivot(on="variable", index=["time_s", "flow"], values="value")
    target = r.timeseries.select("time_s", "flow", "target_kbps")
    table = state.join(target, on=["time_s", "flow"], how="left").sort("time_s")
    lines = ["time_ms " + " ".join(name for name, _ in SNAPSHOT_VARIABLES)]
    for row in table.iter_rows(named=True):
        ms = round(row["time_s"] * 1000)
        if ms % 500:
            continue
        cells = []
        for name, scale in SNAPSHOT_VARIABLES:
            v = row.get(name)
            cells.append("-" if v is None else str(round(v * scale)))
        lines.append(f"{ms} " + " ".join(cells))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", sorted(SNAPSHOT_RUNS))
def test_snapshot_trajectory(name: str) -> None:
    """The run's trajectory is the committed one (rewrite on purpose only)."""
    got = trajectory(SNAPSHOT_RUNS[name])
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("RTCC_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(got)
    assert path.exists(), f"{path} missing: run with RTCC_UPDATE_SNAPSHOTS=1"
    want = path.read_text()
    if got != want:
        diff = "\n".join(
            difflib.unified_diff(
                want.splitlines(), got.splitlines(), "committed", "now", n=1, lineterm=""
            )
        )
        pytest.fail(
            f"{name}: trajectory changed (RTCC_UPDATE_SNAPSHOTS=1 to accept)\n{diff[:3000]}"
        )
