#!/usr/bin/env python3
"""Encode synthetic test clips at a ladder of bitrates and store per-frame sizes.

Each content type is one of ffmpeg's lavfi generators (no third-party
footage, so the traces are ours to license). For every content, one ffmpeg run
generates the clip once and encodes it with x264 at every rung of the ladder
(low-latency settings: zerolatency tune, no B-frames, CBR-like VBV); ffprobe
then lists each output's packets. The result is
``data/encoder-traces/<content>.csv`` with columns
``rung_kbps,frame,size_bytes,type`` (type I or P), which
``rtcc_core::media::ladder::LadderTrace`` loads.

Python 3 standard library only; ``ffmpeg`` and ``ffprobe`` come from PATH
(``make media-tools`` installs Debian's). x264 runs single-threaded so the
output is reproducible on one ffmpeg build.

Usage: ``python3 scripts/encoder_traces.py [--out data/encoder-traces]
[--duration 20] [--content NAME ...]``
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FPS = 30
SIZE = "640x360"
# Frames between key frames: 2 s at 30 fps, a common real-time setting.
KEYINT = 60
# Bitrate ladder (kbps), spanning what a 360p real-time call uses.
LADDER_KBPS = [200, 400, 700, 1000, 1500, 2000, 3000]

# lavfi source graphs, one per content type.
CONTENT = {
    # Synthetic motion: moving gradient, rotating shapes, timer.
    "testsrc2": f"testsrc2=size={SIZE}:rate={FPS}",
    # Complex, ever-finer detail: a Mandelbrot zoom (maxiter lowered from
    # 7189 so the generator runs in seconds; detail is still high).
    "mandelbrot": f"mandelbrot=size={SIZE}:rate={FPS}:maxiter=500",
    # High entropy: Conway's life from a random seed, cells change every frame.
    "life": f"life=size={SIZE}:rate={FPS}:seed=1:ratio=0.3:mold=10"
    ":life_color=#00ff00:death_color=#aa0000,format=yuv420p",
    # Static structure plus strong temporal noise (sensor-noise-like).
    "noise": f"smptebars=size={SIZE}:rate={FPS},noise=alls=30:allf=t+u:all_seed=1",
}


def x264_args(kbps: int) -> list[str]:
    """Encoder options of one rung: low-latency x264, CBR-like rate control."""
    return [
        "-c:v", "libx264",
        "-preset", "veryfast",
        "-tune", "zerolatency",
        "-b:v", f"{kbps}k",
        "-maxrate", f"{kbps}k",
        "-bufsize", f"{kbps // 2}k",
        "-g", str(KEYINT),
        "-keyint_min", str(KEYINT),
        "-sc_threshold", "0",
        "-bf", "0",
        "-pix_fmt", "yuv420p",
        "-threads", "1",
    ]


def encode_command(graph: str, duration: float, outputs: list[tuple[int, Path]]) -> list[str]:
    """One ffmpeg run: generate `graph` once, encode it at every rung."""
    cmd = [
        "ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y",
        # -t before -i limits the input, so every output ends with it.
        "-f", "lavfi", "-t", str(duration), "-i", graph,
    ]
    for kbps, path in outputs:
        cmd += ["-map", "0:v"] + x264_args(kbps) + ["-f", "matroska", str(path)]
    return cmd


def packets(path: Path) -> list[tuple[int, str]]:
    """(size in bytes, 'I' or 'P') of each video packet, in decode order."""
    out = subprocess.run(
        [
            "ffprobe", "-v", "error", "-select_streams", "v:0",
            "-show_entries", "packet=size,flags", "-of", "csv=p=0", str(path),
        ],
        check=True, capture_output=True, text=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        if not line.strip():
            continue
        size, flags = line.split(",", 1)
        rows.append((int(size), "I" if "K" in flags else "P"))
    return rows


def ffmpeg_version() -> str:
    first = subprocess.run(
        ["ffmpeg", "-version"], check=True, capture_output=True, text=True
    ).stdout.splitlines()[0]
    return first


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("data/encoder-traces"))
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per clip")
    ap.add_argument("--content", nargs="*", choices=sorted(CONTENT), default=list(CONTENT))
    args = ap.parse_args()
    for tool in ("ffmpeg", "ffprobe"):
        if shutil.which(tool) is None:
            print(f"encoder_traces: {tool} not found on PATH (make media-tools)", file=sys.stderr)
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    print(ffmpeg_version())
    with tempfile.TemporaryDirectory(prefix="rtcc-traces-") as tmp:
        for name in args.content:
            outputs = [(k, Path(tmp) / f"{name}-{k}.mkv") for k in LADDER_KBPS]
            cmd = encode_command(CONTENT[name], args.duration, outputs)
            subprocess.run(cmd, check=True)
            lines = ["rung_kbps,frame,size_bytes,type"]
            summary = []
            for kbps, path in outputs:
                rows = packets(path)
                lines += [f"{kbps},{i},{s},{t}" for i, (s, t) in enumerate(rows)]
                mean_kbps = sum(s for s, _ in rows) * 8 * FPS / len(rows) / 1000
                summary.append(f"{kbps}:{mean_kbps:.0f}")
            dest = args.out / f"{name}.csv"
            dest.write_text("\n".join(lines) + "\n")
            print(f"{dest}: {len(lines) - 1} frames; rung:actual kbps {' '.join(summary)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
