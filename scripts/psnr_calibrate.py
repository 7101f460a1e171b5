#!/usr/bin/env python3
"""Measure PSNR against bitrate on real x264 encodes, for rtcc's PSNR model.

The CDM paper (``papers/cdm-scalable-video.txt``) reports the quality of
layered (SVC) video as PSNR per number of priority IDs (PIDs) delivered, each
PID 10 % of a nominal rate (700 or 840 kbps). No SVC encoder ships with
Debian, so single-layer x264 at each *cumulative* rate stands in for the
layers 1..=k (docs/algorithms/psnr-model.md, "Interpretations").

For each source (ffmpeg lavfi generators, CIF 352x288 at 30 fps, 10 s, no
third-party footage):

1. generate the clip once (Y4M, lossless);
2. encode it with x264 at k/10 of each nominal rate, k = 1..=10 (real-time
   settings: ``-tune psnr,zerolatency``, no B-frames, one key frame, VBV of
   one second, one thread so that a build gives the same bits every run);
3. measure luma PSNR against the source with ffmpeg's ``psnr`` filter: the
   mean over frames of each frame's ``psnr_y`` (the per-frame mean that SVC
   evaluations report), and the achieved bitrate from the stream's size;
4. measure what a frozen picture costs: the luma MSE between each frame and
   the frame ``d`` frames earlier (the picture a player keeps showing when
   the next ``d`` frames are lost), and of a mid-grey picture (nothing shown).

Then it fits ``PSNR = a + b·x + c·x²`` with ``x = ln(R / 1000 kbps)`` (and
the plain log model, ``c = 0``, for comparison) to the mean over sources,
derives the paper-anchored curve through 20 / 27 / 30 dB at 1 / 4 / 10 PIDs,
and writes everything to ``data/psnr-calibration.json``. The Rust model
(``crates/rtcc-core/src/media/psnr.rs``) holds the same numbers as constants;
``crates/rtcc-sim/tests/psnr.rs`` checks that the two agree.

Python 3 standard library only; ``ffmpeg`` (with libx264) comes from PATH
(``make media-tools`` installs Debian's). Takes about two minutes (109 s on
the development machine, 57 encodes of 10 s CIF clips on one thread each).
x264 runs single-threaded, so one ffmpeg build writes the same file every
time.

Usage: ``python scripts/psnr_calibrate.py [--out data/psnr-calibration.json]
[--duration 10]``
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FPS = 30
SIZE = "352x288"
# The nominal rates of the paper's flows (Fig. 3: 840 kbps; Fig. 5-6: 700 kbps).
NOMINAL_KBPS = (700, 840)
# Equal-rate priority IDs per stream ("creating 10 PIDs corresponds to
# creating 10 substreams each including 10% of the total data").
PIDS = 10
# The rate the fit's x is relative to (kbps).
REFERENCE_KBPS = 1000.0
# Frame lags at which a frozen picture is compared with the current one.
FREEZE_LAGS = (1, 2, 3, 5, 10, 20, 30, 60)
# The paper's anchors: (PIDs, PSNR dB) read from its text (Fig. 3 and 6).
PAPER_ANCHORS = ((1, 20.0), (4, 27.0), (10, 30.0))
# Peak luma value of 8-bit video.
PEAK = 255.0

# lavfi source graphs, each with motion in every frame.
SOURCES = {
    # Synthetic graphics: moving gradient, rotating shapes, a timer; sharp
    # edges on flat areas, easy for a block codec.
    "testsrc2": f"testsrc2=size={SIZE}:rate={FPS}",
    # A continuous Mandelbrot zoom: fine detail everywhere, changing every
    # frame (maxiter lowered from 7189 so that it renders in a second).
    "mandelbrot": f"mandelbrot=size={SIZE}:rate={FPS}:maxiter=500",
    # Conway's life from a random seed: high entropy, little to predict.
    "life": f"life=size={SIZE}:rate={FPS}:seed=1:ratio=0.3:mold=10"
    ":life_color=#00ff00:death_color=#aa0000,format=yuv420p",
}


def x264_args(rate: str) -> list[str]:
    """Encoder options at one rate (``"84k"``): real-time x264 tuned for PSNR."""
    return [
        *("-c:v", "libx264", "-preset", "medium", "-tune", "psnr,zerolatency"),
        *("-b:v", rate, "-maxrate", rate, "-bufsize", rate),
        *("-g", "100000", "-keyint_min", "100000", "-sc_threshold", "0", "-bf", "0"),
        *("-pix_fmt", "yuv420p", "-threads", "1"),
    ]


def ffmpeg(args: list[str]) -> str:
    """Run ffmpeg quietly; return its stderr (where filters print)."""
    cmd = ["ffmpeg", "-hide_banner", "-nostdin", "-y", *args]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return done.stderr


def frame_stats(path: Path) -> list[dict[str, float]]:
    """The ``psnr`` filter's per-frame statistics (``key:value`` pairs)."""
    rows = []
    for line in path.read_text().splitlines():
        row = {}
        for pair in line.split():
            key, _, value = pair.partition(":")
            row[key] = float(value)  # "inf" parses
        rows.append(row)
    return rows


def compare(a: list[str], b: list[str], stats: Path, trim: int = 0) -> list[dict[str, float]]:
    """Per-frame PSNR statistics of input ``a`` against input ``b``.

    Both streams are renumbered frame by frame (a raw H.264 stream has no
    timestamps of its own); ``trim`` drops the first frames of ``a``, so that
    frame ``t + trim`` of it is compared with frame ``t`` of ``b``.
    """
    graph = (
        f"[0:v]trim=start_frame={trim},settb=1/{FPS},setpts=N[a];"
        f"[1:v]settb=1/{FPS},setpts=N[b];"
        f"[a][b]psnr=shortest=1:stats_file={stats}"
    )
    ffmpeg([*a, *b, "-lavfi", graph, "-f", "null", "-"])
    return frame_stats(stats)


def psnr_of_mse(mse: float) -> float:
    """PSNR (dB) of a mean squared error of 8-bit luma."""
    return 10.0 * math.log10(PEAK * PEAK / mse)


def rates_kbps() -> list[float]:
    """The cumulative rates of 1..=PIDS PIDs of every nominal rate, once each."""
    return sorted({n * k / PIDS for n in NOMINAL_KBPS for k in range(1, PIDS + 1)})


def solve(m: list[list[float]], v: list[float]) -> list[float]:
    """Solve the small linear system ``m · x = v`` (Gaussian elimination)."""
    n = len(v)
    a = [[*row, rhs] for row, rhs in zip(m, v, strict=True)]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(a[r][i]))
        a[i], a[pivot] = a[pivot], a[i]
        for r in range(n):
            if r != i:
                f = a[r][i] / a[i][i]
                a[r] = [x - f * y for x, y in zip(a[r], a[i], strict=True)]
    return [a[i][n] / a[i][i] for i in range(n)]


def fit(xs: list[float], ys: list[float], degree: int) -> dict[str, float]:
    """Least-squares polynomial in x of ``degree`` (1 or 2), with its residuals."""
    k = degree + 1
    m = [[sum(x ** (i + j) for x in xs) for j in range(k)] for i in range(k)]
    v = [sum(y * x**i for x, y in zip(xs, ys, strict=True)) for i in range(k)]
    coef = [*solve(m, v), 0.0, 0.0][:3]
    res = [y - (coef[0] + coef[1] * x + coef[2] * x * x) for x, y in zip(xs, ys, strict=True)]
    return {
        "a": round(coef[0], 4),
        "b": round(coef[1], 4),
        "c": round(coef[2], 4),
        "rms_residual_db": round(math.sqrt(sum(r * r for r in res) / len(res)), 4),
        "max_residual_db": round(max(abs(r) for r in res), 4),
    }


def curve(f: dict[str, float], x: float) -> float:
    """A fitted curve at ``x``."""
    return f["a"] + f["b"] * x + f["c"] * x * x


def paper_curve() -> dict[str, float]:
    """The quadratic in ln(PIDs / 10) through the paper's three anchors."""
    xs = [math.log(k / PIDS) for k, _ in PAPER_ANCHORS]
    m = [[1.0, x, x * x] for x in xs]
    a, b, c = solve(m, [y for _, y in PAPER_ANCHORS])
    return {"a": round(a, 4), "b": round(b, 4), "c": round(c, 4)}


def measure_source(name: str, graph: str, duration: float, work: Path) -> dict[str, Any]:
    """Encode one source at every rate and measure it; returns its JSON entry."""
    src = work / f"{name}.y4m"
    ffmpeg(["-f", "lavfi", "-t", str(duration), "-i", graph, "-pix_fmt", "yuv420p", str(src)])
    points = []
    for kbps in rates_kbps():
        out = work / f"{name}-{kbps:g}.264"
        ffmpeg(["-i", str(src), *x264_args(f"{kbps:g}k"), "-f", "h264", str(out)])
        achieved = out.stat().st_size * 8 / duration / 1000.0
        frames = compare(["-i", str(out)], ["-i", str(src)], work / "stats.log")
        psnr = sum(min(f["psnr_y"], 100.0) for f in frames) / len(frames)
        points.append(
            {
                "target_kbps": kbps,
                "achieved_kbps": round(achieved, 3),
                "psnr_db": round(psnr, 3),
                "frames": len(frames),
            }
        )
        print(f"  {name} {kbps:g} kbps: {achieved:.1f} kbps, {psnr:.2f} dB", flush=True)
    freeze = []
    for lag in FREEZE_LAGS:
        frames = compare(["-i", str(src)], ["-i", str(src)], work / "stats.log", trim=lag)
        mse = sum(f["mse_y"] for f in frames) / len(frames)
        freeze.append(
            {"lag_frames": lag, "mse": round(mse, 3), "psnr_db": round(psnr_of_mse(mse), 3)}
        )
    grey = ["-f", "lavfi", "-t", str(duration), "-i", f"color=gray:size={SIZE}:rate={FPS}"]
    frames = compare(grey, ["-i", str(src)], work / "stats.log")
    blank = sum(f["mse_y"] for f in frames) / len(frames)
    xs = [math.log(p["achieved_kbps"] / REFERENCE_KBPS) for p in points]
    ys = [p["psnr_db"] for p in points]
    return {
        "graph": graph,
        "points": points,
        "fit_log": fit(xs, ys, 1),
        "fit_quadratic": fit(xs, ys, 2),
        "freeze": freeze,
        "blank_psnr_db": round(psnr_of_mse(blank), 3),
    }


def ffmpeg_version() -> str:
    """The first line of ``ffmpeg -version``."""
    out = subprocess.run(["ffmpeg", "-version"], check=True, capture_output=True, text=True)
    return out.stdout.splitlines()[0]


def main() -> int:
    """Measure, fit and write the calibration file; print a summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("data/psnr-calibration.json"))
    ap.add_argument("--duration", type=float, default=10.0, help="clip length (s)")
    args = ap.parse_args()
    if shutil.which("ffmpeg") is None:
        print("ffmpeg not found: `make media-tools` installs Debian's", file=sys.stderr)
        return 2
    started = time.monotonic()
    sources: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="psnr-calibrate-") as tmp:
        for name, graph in SOURCES.items():
            sources[name] = measure_source(name, graph, args.duration, Path(tmp))

    # The pooled curve: at each target rate, the mean PSNR over sources
    # against the geometric mean of their achieved rates.
    pooled = []
    for i, kbps in enumerate(rates_kbps()):
        pts = [s["points"][i] for s in sources.values()]
        logs = [math.log(p["achieved_kbps"]) for p in pts]
        pooled.append(
            {
                "target_kbps": kbps,
                "kbps": round(math.exp(sum(logs) / len(logs)), 3),
                "psnr_db": round(sum(p["psnr_db"] for p in pts) / len(pts), 3),
            }
        )
    xs = [math.log(p["kbps"] / REFERENCE_KBPS) for p in pooled]
    ys = [p["psnr_db"] for p in pooled]
    fit_log, fit_quadratic = fit(xs, ys, 1), fit(xs, ys, 2)
    freeze = [
        {
            "lag_frames": lag,
            "psnr_db": round(
                sum(s["freeze"][j]["psnr_db"] for s in sources.values()) / len(sources),
                3,
            ),
        }
        for j, lag in enumerate(FREEZE_LAGS)
    ]
    blank = sum(s["blank_psnr_db"] for s in sources.values()) / len(sources)
    paper = paper_curve()
    comparison = [
        {
            "pids": k,
            "paper_db": y,
            **{
                f"x264_{n}kbps_db": round(
                    curve(fit_quadratic, math.log(n * k / PIDS / REFERENCE_KBPS)), 2
                )
                for n in NOMINAL_KBPS
            },
        }
        for k, y in PAPER_ANCHORS
    ]
    result = {
        "about": "PSNR of x264 encodes against bitrate; scripts/psnr_calibrate.py, "
        "docs/algorithms/psnr-model.md",
        "ffmpeg": ffmpeg_version(),
        "x264_args": " ".join(x264_args("<rate>")),
        "size": SIZE,
        "fps": FPS,
        "duration_s": args.duration,
        "nominal_kbps": list(NOMINAL_KBPS),
        "pids": PIDS,
        "reference_kbps": REFERENCE_KBPS,
        "psnr": "luma, mean over frames of each frame's PSNR (capped at 100 dB)",
        "sources": sources,
        "x264": {
            "points": pooled,
            "fit_log": fit_log,
            "fit_quadratic": fit_quadratic,
            "range_kbps": [pooled[0]["kbps"], pooled[-1]["kbps"]],
        },
        "freeze": freeze,
        "blank_psnr_db": round(blank, 3),
        "paper": {"anchors": [{"pids": k, "psnr_db": y} for k, y in PAPER_ANCHORS], **paper},
        "paper_vs_x264": comparison,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")

    print(f"wrote {args.out} in {time.monotonic() - started:.0f} s")
    print(f"x264 (mean of {len(sources)} sources), x = ln(R / {REFERENCE_KBPS:g} kbps):")
    for label, f in (("log", fit_log), ("quadratic", fit_quadratic)):
        print(
            f"  {label}: a={f['a']} b={f['b']} c={f['c']}  "
            f"rms {f['rms_residual_db']} dB, max {f['max_residual_db']} dB"
        )
    print(f"paper, x = ln(PIDs / {PIDS}): a={paper['a']} b={paper['b']} c={paper['c']}")
    for row in comparison:
        print(f"  {row}")
    print(
        "freeze (lag frames: dB):", ", ".join(f"{f['lag_frames']}: {f['psnr_db']}" for f in freeze)
    )
    print(f"blank: {blank:.3f} dB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
