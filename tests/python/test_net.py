"""The real transport through the ``rtcc`` command line.

- ``rtcc send`` + ``rtcc recv`` on loopback write the simulator's files;
- a clip encoded by ffmpeg, sent by ``rtcc send`` (RFC 6184), is decoded by a
  stock ffmpeg from the SDP ``rtcc send --sdp`` writes (skipped, with the
  reason, when ffmpeg is not installed: ``make media-tools`` installs it);
- bad options exit 2 naming the option and the value;
- SIGTERM and SIGINT stop ``rtcc recv`` with its outputs written.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

RTCC = [sys.executable, "-m", "rtcc"]


def free_port_pair() -> int:
    """An even free UDP port whose successor is free too (RTP + RTCP)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port % 2 or port >= 65535:
            continue
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s2:
                s2.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        return port
    raise RuntimeError("no free UDP port pair")


def start_recv(port: int, out: Path, *extra: str) -> subprocess.Popen[str]:
    """``rtcc recv`` on loopback ``port`` writing to ``out``, in the background."""
    recv = subprocess.Popen(
        [*RTCC, "recv", "--listen", f"127.0.0.1:{port}", "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)
    return recv


def run_rtcc(*args: str) -> subprocess.CompletedProcess[str]:
    """``rtcc ARGS`` to completion, output captured."""
    return subprocess.run([*RTCC, *args], capture_output=True, text=True, timeout=30)


def run_send(port: int, *extra: str) -> subprocess.CompletedProcess[str]:
    """``rtcc send`` to loopback ``port``; fails the test if it fails."""
    send = run_rtcc("send", "--to", f"127.0.0.1:{port}", *extra)
    assert send.returncode == 0, send.stderr
    return send


def test_send_and_recv_write_the_simulator_files(tmp_path: Path) -> None:
    port = free_port_pair()
    out = tmp_path / "real"
    recv = start_recv(port, out, "--duration", "5s")
    run_send(port, "--duration", "3s", "--out", str(out))
    r_out, r_err = recv.communicate(timeout=30)
    assert recv.returncode == 0, r_err
    summary = json.loads((out / "summary.json").read_text())
    flow = summary["flows"][0]
    assert flow["kind"] == "media"
    assert flow["frames_displayed"] > 60
    sent = json.loads((out / "send_summary.json").read_text())
    assert sent["transport"]["feedback_reports"] > 20
    assert sent["session"]["unknown_feedback_entries"] == 0
    import rtcc

    for name in ("timeseries.csv", "frames.csv"):
        assert (out / name).stat().st_size > 0
    # The files read back like a simulated run's.
    result = rtcc.Result(summary, out)
    assert result.frames.height == flow["frames_displayed"] + flow["frames_dropped"]
    assert result.timeseries.height > 20
    assert "media" in r_out


def test_recv_with_peer_hears_that_sender_only(tmp_path: Path) -> None:
    # The real sender binds a known port; a receiver pinned to another
    # address hears none of it, one pinned to that port hears it all.
    port = free_port_pair()
    src = free_port_pair()
    results = {}
    for name, peer in (("other", f"127.0.0.1:{src + 1}"), ("it", f"127.0.0.1:{src}")):
        out = tmp_path / name
        recv = start_recv(port, out, "--duration", "3s", "--peer", peer)
        run_send(port, "--bind", f"127.0.0.1:{src}", "--duration", "2s")
        _, err = recv.communicate(timeout=30)
        assert recv.returncode == 0, err
        results[name] = json.loads((out / "summary.json").read_text())["transport"]
    assert results["other"]["media_packets"] == 0
    # (the sender, hearing no feedback, backs off to a trickle after 1 s)
    assert results["other"]["unexpected_source"] > 30
    assert results["it"]["media_packets"] > 100
    assert results["it"]["unexpected_source"] == 0


def test_send_that_sent_nothing_fails_and_emulate_refuses_a_loop() -> None:
    # Port 0 cannot be sent to: every datagram fails, so the command fails
    # too (it used to exit 0), naming the address.
    send = run_rtcc("send", "--to", "127.0.0.1:0", "--duration", "1s")
    assert send.returncode == 2, send.stdout
    assert "--to 127.0.0.1:0" in send.stderr
    assert "no datagram" in send.stderr
    # --forward to the emulator's own --listen would loop every datagram.
    port = free_port_pair()
    listen = f"127.0.0.1:{port}"
    emu = run_rtcc("emulate", "--listen", listen, "--forward", listen, "--duration", "1s")
    assert emu.returncode == 2, emu.stdout
    assert "--forward" in emu.stderr
    assert "own --listen" in emu.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_stops_recv_with_its_outputs_written(tmp_path: Path, sig: int) -> None:
    # What a process manager (SIGTERM) or Ctrl-C (SIGINT) sends: the receiver
    # stops within a moment and leaves a complete summary.json behind.
    port = free_port_pair()
    out = tmp_path / "real"
    recv = start_recv(port, out, "--duration", "60s")
    run_send(port, "--duration", "2s")
    recv.send_signal(sig)
    _, err = recv.communicate(timeout=10)
    assert recv.returncode == (143 if sig == signal.SIGTERM else 130), err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flows"][0]["frames_displayed"] > 30
    assert summary["transport"]["media_packets"] > 100


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["send", "--to", "nohost", "--duration", "1s"], ["--to", "nohost"]),
        (["send", "--to", "127.0.0.1:9", "--cc", "bbr9"], ["--cc", "bbr9"]),
        (["send", "--to", "127.0.0.1:9", "--duration", "3 parsecs"], ["--duration", "3 parsecs"]),
        (["recv", "--listen", "127.0.0.1:0", "--out", "x", "--feedback", "nack"], ["--feedback"]),
        (["send", "--to", "127.0.0.1:9", "--recovery", "fec"], ["--recovery", "fec"]),
        (
            ["recv", "--listen", "127.0.0.1:0", "--out", "x", "--peer", "nohost"],
            ["--peer", "nohost"],
        ),
        (
            ["recv", "--listen", "127.0.0.1:0", "--out", "x", "--recovery", "arq"],
            ["--recovery", "arq"],
        ),
        (
            ["emulate", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--rate", "3Mbs"],
            ["--rate", "3Mbs"],
        ),
        (
            ["send", "--to", "127.0.0.1:9", "--source", "no-such.h264", "--duration", "1s"],
            ["no-such.h264"],
        ),
    ],
    ids=[
        "bad-addr",
        "bad-cc",
        "bad-duration",
        "bad-feedback",
        "bad-send-recovery",
        "bad-peer",
        "bad-recv-recovery",
        "bad-rate",
        "missing-source",
    ],
)
def test_bad_net_options_exit_2_naming_them(
    tmp_path: Path, args: list[str], needles: list[str]
) -> None:
    proc = subprocess.run([*RTCC, *args], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def encode_clip(path: Path) -> None:
    subprocess.run(
        [
            "ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y",
            "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-t", "2",
            "-pix_fmt", "yuv420p", "-c:v", "libx264", "-profile:v", "baseline",
            "-g", "30", "-bf", "0", "-x264-params", "repeat-headers=1",
            "-f", "h264", str(path),
        ],
        check=True,
        timeout=60,
    )  # fmt: skip


@pytest.mark.skipif(
    shutil.which("ffmpeg") is None, reason="ffmpeg not installed (make media-tools installs it)"
)
def test_ffmpeg_decodes_what_rtcc_send_sends(tmp_path: Path) -> None:
    clip = tmp_path / "clip.h264"
    encode_clip(clip)
    port = free_port_pair()
    sdp = tmp_path / "stream.sdp"
    common = ["--source", str(clip), "--to", f"127.0.0.1:{port}", "--fps", "30", "--no-loop"]
    # --duration 0s: write the SDP and stop, so the receiver can start first.
    made = subprocess.run(
        [*RTCC, "send", *common, "--sdp", str(sdp), "--duration", "0s"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert made.returncode == 0, made.stderr
    assert "H264/90000" in sdp.read_text()

    md5 = tmp_path / "frames.md5"
    err = tmp_path / "ffmpeg.err"
    with err.open("w") as err_file:
        ffmpeg = subprocess.Popen(
            [
                "ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "warning",
                "-protocol_whitelist", "file,udp,rtp", "-i", str(sdp),
                "-fps_mode", "passthrough", "-frames:v", "60", "-f", "framemd5", "-y", str(md5),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 10
            while _port_free(port) and time.monotonic() < deadline:
                assert ffmpeg.poll() is None, err.read_text()
                time.sleep(0.05)
            # A stock receiver sends no congestion feedback: no back-off, a
            # fixed target (the file's rate is its own anyway).
            sent = run_rtcc(
                "send", *common, "--cc", "fixed", "--no-feedback-timeout", "--duration", "4s"
            )
            assert sent.returncode == 0, sent.stderr
            try:
                ffmpeg.wait(timeout=10)
            except subprocess.TimeoutExpired:
                ffmpeg.terminate()
                ffmpeg.wait(timeout=10)
        finally:
            if ffmpeg.poll() is None:
                ffmpeg.kill()
    log = err.read_text()
    frames = [ln for ln in md5.read_text().splitlines() if ln and not ln.startswith("#")]
    bad = [
        w for w in ("error", "concealing", "corrupt", "missed", "non-existing") if w in log.lower()
    ]
    assert not bad, log
    assert len(frames) >= 57, f"{len(frames)} of 60 frames decoded; ffmpeg said: {log}"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
