"""Packet captures read by tshark (docs/scenarios.md and docs/net.md, "Packet captures").

- ``rtcc run --pcap``: every link's file opens in tshark without a malformed
  packet; the media stream's RTP sequence numbers increase by one but where
  the link before lost packets, and its timestamps step by the 90 kHz frame
  interval; ``-z rtp,streams`` lists the stream;
- ``rtcc send --pcap`` / ``rtcc recv --pcap`` on loopback: the same, on real
  datagrams, with no sequence gap at all (nothing is lost on loopback).

Skipped, with the reason, when tshark is not installed (``make media-tools``
installs it).
"""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomli_w

from .conftest import tiny_scenario

RTCC = [sys.executable, "-m", "rtcc"]
TSHARK = shutil.which("tshark")

pytestmark = pytest.mark.skipif(
    TSHARK is None, reason="tshark is not installed (make media-tools installs it)"
)

#: The simulator's RTP and RTCP ports and the first flow's media SSRC.
SIM_RTP_PORT = 5004
SIM_RTCP_PORT = 5005
SIM_SSRC = "0x10000000"


def tshark(pcap: Path, *args: str) -> str:
    """Run tshark on ``pcap`` with ``args``; its standard output."""
    assert TSHARK is not None
    done = subprocess.run(
        [TSHARK, "-n", "-r", str(pcap), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def malformed(pcap: Path, *decode: str) -> int:
    """Frames tshark flags as malformed."""
    out = tshark(
        pcap,
        *decode,
        "-Y",
        "_ws.malformed || _ws.expert.severity >= error",
        "-T",
        "fields",
        "-e",
        "frame.number",
    )
    return len(out.split())


Rtp = tuple[str, int, int, int, int, int]


def rtp_fields(pcap: Path, port: int) -> list[Rtp]:
    """(SSRC, payload type, sequence number, timestamp, marker, padding) of each RTP packet."""
    fields = ["rtp.ssrc", "rtp.p_type", "rtp.seq", "rtp.timestamp", "rtp.marker", "rtp.padding"]
    out = tshark(
        pcap,
        "-d",
        f"udp.port=={port},rtp",
        "-Y",
        "rtp",
        "-T",
        "fields",
        "-E",
        "separator=,",
        *[a for f in fields for a in ("-e", f)],
    )
    rows = []
    for line in out.splitlines():
        ssrc, pt, seq, ts, marker, padding = line.split(",")
        flag = ("1", "True")
        rows.append((ssrc, int(pt), int(seq), int(ts), int(marker in flag), int(padding in flag)))
    return rows


def check_media(rows: list[Rtp], ssrc: str) -> int:
    """Check one media stream's sequence numbers, timestamps and marker bits; the gaps."""
    media = [r for r in rows if r[0] == ssrc and r[1] == 96]
    assert len(media) > 100, f"{len(media)} media packets of {ssrc}"
    gaps = 0
    for a, b in itertools.pairwise(media):
        step = (b[2] - a[2]) % 65536
        assert 1 <= step < 1000, f"sequence {a[2]} -> {b[2]}"
        gaps += step - 1
    # Padding-only packets (a probe's, on the media SSRC without an RTX
    # stream) carry no frame: frames are the other packets.
    frames = [r for r in media if not r[5]]
    for (_, _, s0, t0, m0, _), (_, _, s1, t1, _, _) in itertools.pairwise(frames):
        if t1 == t0:
            continue
        # A new frame: 90 kHz, a whole number of 1/30 s frame intervals
        # (the encoder may skip frames), within the clock's rounding.
        d = (t1 - t0) % 2**32
        n = round(d / 3000)
        assert n >= 1, f"timestamp step {d} at {s1}"
        assert abs(d - 3000 * n) <= 2, f"timestamp step {d} at {s1}"
        if (s1 - s0) % 65536 == 1:
            assert m0 == 1, f"marker missing on {s0}, the last packet before {s1}"
    return gaps


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_simulated_captures_decode_in_tshark(tmp_path: Path) -> None:
    scenario = tiny_scenario()
    scenario["duration"] = "6s"
    scenario["flow"][0]["recovery"] = "nack"
    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(scenario))
    out, caps = tmp_path / "out", tmp_path / "pcap"
    done = subprocess.run(
        [*RTCC, "run", str(path), "--out", str(out), "--pcap", str(caps)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in caps.iterdir())
    assert files == ["bottleneck-reverse.pcap", "bottleneck.pcap"]
    decode = ["-d", f"udp.port=={SIM_RTP_PORT},rtp", "-d", f"udp.port=={SIM_RTCP_PORT},rtcp"]
    for f in files:
        assert malformed(caps / f, *decode) == 0, f
    rows = rtp_fields(caps / "bottleneck.pcap", SIM_RTP_PORT)
    # The bottleneck's departures: the gaps are the packets it dropped (its
    # queue, its random loss).
    summary = json.loads((out / "summary.json").read_text())
    link = next(li for li in summary["links"] if li["name"] == "bottleneck")
    assert check_media(rows, SIM_SSRC) <= link["drops"]
    # The RTX stream (NACKed packets resent) is numbered one by one as the
    # sender sends it: its gaps are drops too.
    rtx_ssrc = f"0x{int(SIM_SSRC, 16) + 1:08x}"
    rtx = [r[2] for r in rows if r[0] == rtx_ssrc and r[1] == 97]
    assert len(rtx) > 5, f"{len(rtx)} retransmissions"
    rtx_gaps = sum((b - a) % 65536 - 1 for a, b in itertools.pairwise(rtx))
    assert rtx[0] <= link["drops"], rtx
    assert 0 <= rtx_gaps <= link["drops"], rtx
    streams = tshark(caps / "bottleneck.pcap", *decode, "-q", "-z", "rtp,streams")
    line = next(ln for ln in streams.splitlines() if SIM_SSRC in ln.lower())
    assert "96" in line, streams
    # Feedback comes back as RTCP, TCP as TCP.
    back = tshark(
        caps / "bottleneck-reverse.pcap", *decode, "-T", "fields", "-e", "_ws.col.Protocol"
    )
    protocols = set(back.split())
    assert {"RTCP", "TCP"} <= protocols, protocols
    # The feedback is transport-wide CC as tshark knows it: base sequence
    # numbers that follow on from one report to the next, from the first
    # packet sent, and no chunk tshark finds wrong.
    twcc = tshark(
        caps / "bottleneck-reverse.pcap",
        *decode,
        "-Y",
        "rtcp.rtpfb.fmt == 15",
        "-T",
        "fields",
        "-e",
        "rtcp.rtpfb.transportcc.baseseq",
        "-e",
        "rtcp.rtpfb.transportcc.statuscount",
        "-e",
        "rtcp.rtpfb.transportcc_bad",
    )
    reports = [ln.split("\t") for ln in twcc.splitlines() if ln.strip()]
    assert len(reports) > 50, twcc
    expected = 0
    for fields in reports:
        bases, counts, bad = fields[0].split(","), fields[1].split(","), fields[2]
        assert bad == "", fields
        for base, count in zip(bases, counts, strict=True):
            assert int(base) == expected, (fields, expected)
            expected = (int(base) + int(count)) % 65536
    assert expected > 500, expected


def test_send_and_recv_captures_decode_in_tshark(tmp_path: Path) -> None:
    port = free_port()
    rx_pcap, tx_pcap = tmp_path / "recv.pcap", tmp_path / "send.pcap"
    rx = subprocess.Popen(
        [
            *RTCC,
            "recv",
            "--listen",
            f"127.0.0.1:{port}",
            "--duration",
            "5s",
            "--out",
            str(tmp_path / "rx"),
            "--pcap",
            str(rx_pcap),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)  # the receiver's interpreter starts and binds first
        tx = subprocess.run(
            [
                *RTCC,
                "send",
                "--to",
                f"127.0.0.1:{port}",
                "--duration",
                "3s",
                "--pcap",
                str(tx_pcap),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert tx.returncode == 0, tx.stderr
    finally:
        _, err = rx.communicate(timeout=60)
    assert rx.returncode == 0, err
    decode = ["-d", f"udp.port=={port},rtp"]
    for pcap in (rx_pcap, tx_pcap):
        assert malformed(pcap, *decode) == 0, pcap
        rows = rtp_fields(pcap, port)
        ssrcs = {r[0] for r in rows if r[1] == 96}
        assert len(ssrcs) == 1, ssrcs
        # Loopback loses nothing: consecutive sequence numbers.
        assert check_media(rows, ssrcs.pop()) == 0
    # The receiver heard every datagram the sender captured as sent to it.
    to_rx = tshark(tx_pcap, "-Y", f"udp.dstport=={port}", "-T", "fields", "-e", "frame.len")
    at_rx = tshark(rx_pcap, "-Y", f"udp.dstport=={port}", "-T", "fields", "-e", "frame.len")
    assert to_rx.split() == at_rx.split()
