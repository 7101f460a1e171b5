"""`rtcc report`: the HTML page, the PNG/SVG figures, errors, and the page in a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rtcc
from rtcc import plot
from rtcc.cli import main
from rtcc.report import load_run

from .conftest import tiny_scenario

# plotly.js declares its version in a banner comment at the top of the bundle.
PLOTLY_BANNER = re.compile(r"\* plotly\.js v\d+\.\d+\.\d+")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two short simulated runs: different seeds and a different second flow."""
    root = tmp_path_factory.mktemp("runs")
    first = rtcc.run(tiny_scenario(), seed=1, out=root / "tiny-a")
    second_scenario = tiny_scenario()
    second_scenario["name"] = "tiny-cbr"
    second_scenario["flow"][1] = {"name": "cbr", "kind": "udp-cbr", "rate": "300kbps"}
    second = rtcc.run(second_scenario, seed=2, out=root / "tiny-b")
    return [first.out_dir, second.out_dir]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory, runs: list[Path]) -> Path:
    """A directory shaped like `rtcc recv --out`: no links, only goodput in the time series."""
    d = tmp_path_factory.mktemp("real") / "recv"
    d.mkdir()
    summary = json.loads((runs[0] / "summary.json").read_text())
    summary["scenario"] = "real"
    summary["links"] = []
    summary["flows"] = [f for f in summary["flows"] if f["kind"] == "media"]
    (d / "summary.json").write_text(json.dumps(summary))
    lines = (runs[0] / "timeseries.csv").read_text().splitlines()
    header = lines[0].split(",")
    keep = {"time_s", "flow", "goodput_kbps"}
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split(",")
        if cells[header.index("flow")] != "video":
            continue
        out.append(",".join(c if h in keep else "" for h, c in zip(header, cells, strict=True)))
    (d / "timeseries.csv").write_text("\n".join(out) + "\n")
    frames = (runs[0] / "frames.csv").read_text().splitlines()
    (d / "frames.csv").write_text(
        "\n".join([frames[0]] + [f for f in frames[1:] if f.startswith("video,")]) + "\n"
    )
    return d


def plotly_divs(page: str) -> list[str]:
    return re.findall(r'<div id="(fig-[a-z_]+-\d+)" class="plotly-graph-div"', page)


# --- the page -----------------------------------------------------------------


def test_page_embeds_plotly_once_and_has_a_column_per_run(runs: list[Path], tmp_path: Path) -> None:
    out = rtcc.report(runs, tmp_path / "sub" / "report.html")
    assert out == tmp_path / "sub" / "report.html"
    page = out.read_text()
    assert len(PLOTLY_BANNER.findall(page)) == 1
    # Offline: no script or stylesheet comes from the network.
    # (plotly.js names cdn.plot.ly only as the default topojson URL of geo maps.)
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page)
    titles = re.findall(r'<h2 class="run-title" id="run-(\d)">([^<]*)</h2>', page)
    assert titles == [
        ("0", "tiny-a · tiny · seed 1"),
        ("1", "tiny-b · tiny-cbr · seed 2"),
    ]
    assert "<title>rtcc report: tiny-a · tiny · seed 1, tiny-b · tiny-cbr · seed 2</title>" in page
    # One figure per kind per run, in page order.
    expected = [f"fig-{kind}-{i}" for kind in plot.FIGURE_KINDS for i in range(2)]
    assert plotly_divs(page) == expected
    # plotly.js is ~4.8 MB; the runs themselves must stay small.
    assert len(page.encode()) < 6_000_000


def test_table_holds_the_summary_values(runs: list[Path], tmp_path: Path) -> None:
    page = rtcc.report(runs[0], tmp_path / "r.html").read_text()
    summary = json.loads((runs[0] / "summary.json").read_text())
    video = next(f for f in summary["flows"] if f["name"] == "video")
    bulk = next(f for f in summary["flows"] if f["name"] == "bulk")
    row = re.search(r"<tr><td>video</td><td>media</td><td>gcc</td>(.*?)</tr>", page)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    assert cells == [
        f"{video['media_bitrate_kbps']:.1f}",
        f"{video['goodput_kbps']:.1f}",
        f"{video['frame_delay_ms']['mean']:.1f}",
        f"{video['frame_delay_ms']['p95']:.1f}",
        f"{video['stall_ratio'] * 100:.2f}",
        f"{video['loss_rate'] * 100:.2f}",
        f"{video['owd_ms']['mean']:.1f}",
        f"{video['owd_ms']['p95']:.1f}",
        f"{video['bw_estimate_accuracy']:.3f}",
        # Not a layered flow: no PSNR.
        "",
        "",
    ]
    # A TCP flow has no frame metrics: absent, so blank, not zero.
    bulk_row = re.search(r"<tr><td>bulk</td><td>tcp</td><td>newreno</td>(.*?)</tr>", page)
    assert bulk_row is not None
    bulk_cells = re.findall(r'<td class="num">([^<]*)</td>', bulk_row.group(1))
    assert bulk_cells[0] == ""
    assert bulk_cells[2] == ""
    assert bulk_cells[1] == f"{bulk['goodput_kbps']:.1f}"
    link = summary["links"][0]
    assert f'<td>bottleneck</td><td class="num">{link["queue_delay_ms"]["mean"]:.1f}</td>' in page


def test_traces_carry_the_run_data(runs: list[Path]) -> None:
    result = load_run(runs[0])
    colors = plot.flow_colors([result])
    rate = plot.panel("rate", result, colors)
    names = [t.name for t in rate.traces]
    # TCP has no target; both flows share the bottleneck, whose capacity is one series.
    assert names == ["video goodput", "video target", "bulk goodput", "capacity (video, bulk)"]
    cap = rate.traces[3]
    assert cap.y, "the simulator records capacity"
    assert all(abs(v - cap.y[0]) < 1e-6 for v in cap.y), "a constant-rate link"
    video = result.timeseries.filter(result.timeseries["flow"] == "video")
    assert rate.traces[0].y == [round(v, 3) for v in video["goodput_kbps"].to_list()]
    cdf = plot.panel("delay_cdf", result, colors)
    assert [t.name for t in cdf.traces] == ["video"]
    assert cdf.traces[0].y[-1] == 1.0
    assert list(cdf.traces[0].x) == sorted(cdf.traces[0].x)
    queue = plot.panel("queue", result, colors)
    # Both flows share the one bottleneck: one series for the link, not one per flow.
    assert [t.name for t in queue.traces] == [
        "queue delay (video, bulk)",
        "queue KB (video, bulk)",
    ]
    loss = plot.panel("loss", result, colors)
    summary_loss = {f["name"]: f["loss_rate"] * 100 for f in result.summary["flows"]}
    assert {str(t.x[0]): t.y[0] for t in loss.traces} == summary_loss


def test_shared_axes_across_runs(runs: list[Path]) -> None:
    results = [load_run(d) for d in runs]
    rate = plot.panels("rate", results)
    assert rate[0].x_range == rate[1].x_range == (0.0, 3.0)
    assert rate[0].y_range == rate[1].y_range
    highest = max(max(t.y, default=0.0) for p in rate for t in p.traces)
    assert rate[0].y_range is not None
    assert rate[0].y_range[1] >= highest
    # Flow colors agree across runs for the shared flow name.
    assert rate[0].traces[0].color == rate[1].traces[0].color


def test_frame_loss_counts_gaps_and_drops(tmp_path: Path, runs: list[Path]) -> None:
    d = tmp_path / "gaps"
    d.mkdir()
    shutil.copy(runs[0] / "summary.json", d)
    shutil.copy(runs[0] / "timeseries.csv", d)
    header = "flow,frame_id,type,size_bytes,capture_ms,complete_ms,displayed_ms,delay_ms,dropped"
    rows = [
        # second 0: ids 0, 1, (2, 3 missing) 4: 2 lost of 5
        "video,0,I,1000,0,50,60,50,0",
        "video,1,P,1000,100,150,160,50,0",
        "video,4,P,1000,400,450,460,50,0",
        # second 1: ids 10 dropped, 11 fine, (5..9 missing) counted at id 10: 6 of 7
        "video,10,P,1000,1000,1500,,500,1",
        "video,11,P,1000,1100,1150,1160,50,0",
    ]
    (d / "frames.csv").write_text("\n".join([header, *rows]) + "\n")
    result = load_run(d)
    p = plot.panel("frame_loss", result, plot.flow_colors([result]))
    (trace,) = p.traces
    assert list(trace.x) == [0.5, 1.5]
    assert list(trace.y) == [round(100 * 2 / 5, 3), round(100 * 6 / 7, 3)]


def layered_scenario() -> dict[str, Any]:
    """A 3 s layered (svc) flow of 10 x 84 kbps beside the tiny run's TCP flow."""
    scenario = tiny_scenario()
    scenario["name"] = "tiny-svc"
    scenario["flow"][0] = {
        "name": "layered",
        "kind": "media",
        "cc": "fixed",
        "cc_config": {"bitrate": "840kbps"},
        "encoder": {"kind": "svc", "layers": 10, "layer_rate": "84kbps"},
    }
    return scenario


def test_layered_runs_get_a_psnr_row(runs: list[Path], tmp_path: Path) -> None:
    layered = rtcc.run(layered_scenario(), seed=1, out=tmp_path / "svc")
    page = rtcc.report([layered.out_dir, runs[0]], tmp_path / "r.html").read_text()
    # The PSNR row comes after the other kinds, one figure per run.
    expected = [f"fig-{kind}-{i}" for kind in (*plot.FIGURE_KINDS, "psnr") for i in range(2)]
    assert plotly_divs(page) == expected
    assert plot.figure_kinds([layered]) == (*plot.FIGURE_KINDS, "psnr")
    assert plot.figure_kinds([load_run(runs[0])]) == plot.FIGURE_KINDS
    psnr = layered.summary["flows"][0]["psnr_db"]
    # The table has the summary's mean and p5; the TCP flow has none.
    row = re.search(r"<tr><td>layered</td><td>media</td><td>fixed</td>(.*?)</tr>", page)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    assert cells[-2:] == [f"{psnr['mean']:.1f}", f"{psnr['p5']:.1f}"]
    panels = plot.panels("psnr", [layered, load_run(runs[0])])
    (trace,) = panels[0].traces
    assert trace.name == f"layered (mean {psnr['mean']:.1f} dB, p5 {psnr['p5']:.1f} dB)"
    ts = layered.timeseries.filter(layered.timeseries["flow"] == "layered")
    assert list(trace.y) == [round(v, 3) for v in ts["psnr_db"].drop_nulls().to_list()]
    # 2 % loss on 10 layers: mostly the full 30 dB, some frames lower.
    assert max(trace.y) <= 30.0 + 1e-9
    assert 20.0 < psnr["mean"] < 30.0
    assert panels[1].traces == []
    assert panels[1].note is not None
    assert "svc" in panels[1].note
    # Both runs share the y range, which is the values', not from 0 dB.
    assert panels[0].y_range == panels[1].y_range
    assert panels[0].y_range is not None
    assert panels[0].y_range[0] > 10.0


def test_real_run_without_links_or_capacity(real_run: Path, tmp_path: Path) -> None:
    page = rtcc.report([real_run], tmp_path / "real.html").read_text()
    assert "no simulated links (a real run)" in page
    assert "no queue samples" in page
    assert len(plotly_divs(page)) == len(plot.FIGURE_KINDS)
    result = load_run(real_run)
    rate = plot.panel("rate", result, plot.flow_colors([result]))
    assert [t.name for t in rate.traces] == ["video goodput", "capacity: not recorded"]


def test_png_and_svg_figures(runs: list[Path], real_run: Path, tmp_path: Path) -> None:
    figures = tmp_path / "figs"
    rtcc.report([*runs, real_run], tmp_path / "r.html", png_dir=figures)
    for kind in plot.FIGURE_KINDS:
        png = figures / f"{kind}.png"
        svg = figures / f"{kind}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", kind
        assert png.stat().st_size > 10_000, kind
        text = svg.read_text()
        assert text.lstrip().startswith("<?xml"), kind
        assert "<svg" in text, kind
    # No timestamps: the same runs give the same SVG.
    again = plot.save_figures([load_run(runs[0])], tmp_path / "a")
    again2 = plot.save_figures([load_run(runs[0])], tmp_path / "b")
    svgs = [p for p in again if p.suffix == ".svg"]
    svgs2 = [p for p in again2 if p.suffix == ".svg"]
    assert [p.read_bytes() for p in svgs] == [p.read_bytes() for p in svgs2]


# --- errors ---------------------------------------------------------------------


def test_missing_dir_is_named(tmp_path: Path, runs: list[Path]) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(rtcc.ReportError, match=f"^{re.escape(str(missing))}: no such directory"):
        rtcc.report([runs[0], missing], tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_dir_without_summary_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(rtcc.ReportError, match=f"^{re.escape(str(empty))}: no summary.json"):
        rtcc.report(empty, tmp_path / "r.html")


def test_broken_files_are_named(tmp_path: Path, runs: list[Path]) -> None:
    d = tmp_path / "broken"
    shutil.copytree(runs[0], d)
    (d / "summary.json").write_text("{not json")
    with pytest.raises(rtcc.ReportError, match=r"summary\.json: cannot be read"):
        rtcc.report(d, tmp_path / "r.html")
    shutil.copy(runs[0] / "summary.json", d)
    (d / "frames.csv").unlink()
    with pytest.raises(rtcc.ReportError, match=r"frames\.csv: missing"):
        rtcc.report(d, tmp_path / "r.html")


def test_cli_report(runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.html"
    assert main(["report", *map(str, runs), "-o", str(out), "--png", str(tmp_path / "p")]) == 0
    assert f"report written to {out}" in capsys.readouterr().out
    assert out.is_file()
    assert (tmp_path / "p" / "rate.svg").is_file()


def test_cli_missing_dir_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == f"rtcc: error: {tmp_path / 'nope'}: no such directory\n"


# --- in a browser ---------------------------------------------------------------


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture
def browser(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    exe = chromium()
    if exe is None:
        pytest.skip("chromium is not installed (`make browser-tools` installs it on Debian)")

    def run(page: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
        return subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=1",
                # plotly draws on load; give its scripts time before the dump.
                "--virtual-time-budget=10000",
                *extra,
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            # The page must render without the network: none is needed.
            env={**os.environ, "no_proxy": "*"},
        )

    return run


def console_messages(stderr: str) -> list[str]:
    """Console output of the page in chromium's log.

    Chromium logs every console message, whatever its level, as
    ``INFO:CONSOLE`` (an uncaught exception as ``"Uncaught ..."``). The report
    page writes nothing to the console, so any message is a failure.
    """
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def test_browser_check_sees_script_errors(
    browser: Callable[..., subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    # The check below must be able to fail: a page whose script throws.
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>throw new Error('report-broke')</script></body></html>")
    dom = browser(bad, "--dump-dom")
    assert any("Uncaught Error: report-broke" in m for m in console_messages(dom.stderr))
    assert 'class="main-svg"' not in dom.stdout


def test_page_renders_in_headless_chromium(
    browser: Callable[..., subprocess.CompletedProcess[str]], runs: list[Path], tmp_path: Path
) -> None:
    from PIL import Image

    page = rtcc.report(runs, tmp_path / "report.html")
    dom = browser(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_messages(dom.stderr) == []
    # plotly creates its <svg class="main-svg"> only when its JS ran: two per
    # figure (plot and hover layers), one figure per kind per run.
    figures = 2 * len(plot.FIGURE_KINDS)
    rendered = re.findall(
        r'<div id="fig-[a-z_]+-\d+" class="plotly-graph-div js-plotly-plot"', dom.stdout
    )
    assert len(rendered) == figures, dom.stdout[:2000]
    assert dom.stdout.count('class="main-svg"') >= figures
    # Every data trace became an SVG path: the goodput line has points.
    assert dom.stdout.count('class="scatterlayer') >= figures

    shot = tmp_path / "shot.png"
    snap = browser(page, f"--screenshot={shot}", "--window-size=1400,2000")
    assert snap.returncode == 0, snap.stderr[-2000:]
    assert console_messages(snap.stderr) == []
    with Image.open(shot) as image:
        assert image.size == (1400, 2000)
        colors = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colors is not None
    # A blank or error page has a handful of colors; plots with antialiased
    # lines in several colors have hundreds.
    assert len(colors) > 200
    # And the flow colors themselves are on screen.
    present = {rgb for _, rgb in colors}
    for hex_color in plot.flow_colors([load_run(d) for d in runs]).values():
        rgb = tuple(int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
        assert rgb in present, hex_color
