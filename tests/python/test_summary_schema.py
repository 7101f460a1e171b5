"""``summary.json`` against its Python mirror, :mod:`rtcc.summary`.

Runs of every flow kind (media with NACK recovery, a layered svc encoder
with and without a layer plan, live with AutoRec and its formula,
multipath-media, tfrc, tcp, udp-cbr) and a real loopback run
(``rtcc.recv``) must write only keys the ``TypedDict`` s
declare, with the declared value types, and every key they require: the
schema cannot drift from what the Rust side writes (``rtcc_core::summary``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, NotRequired, get_args, get_origin, get_type_hints, is_typeddict

import pytest

import rtcc
from rtcc.summary import RunSummary

from .test_net import free_port_pair

REPO = Path(__file__).resolve().parents[2]


def check(value: object, hint: Any, where: str) -> set[str]:
    """Errors of ``value`` against the type ``hint``, and the keys it covered.

    Returns the paths of the TypedDict keys seen (``flows[].live.formula``),
    so that a test can tell which parts of the schema its runs exercised.
    """
    seen: set[str] = set()
    if get_origin(hint) is NotRequired:
        (hint,) = get_args(hint)
    if is_typeddict(hint):
        assert isinstance(value, dict), f"{where}: {value!r} is not an object"
        hints = get_type_hints(hint)
        unknown = set(value) - set(hints)
        assert not unknown, f"{where}: keys not declared in {hint.__name__}: {sorted(unknown)}"
        missing = set(hint.__required_keys__) - set(value)
        assert not missing, f"{where}: required keys missing: {sorted(missing)}"
        for key, item in value.items():
            path = f"{where}.{key}"
            seen.add(path)
            seen |= check(item, hints[key], path)
        return seen
    origin = get_origin(hint)
    if origin is list:
        assert isinstance(value, list), f"{where}: {value!r} is not a list"
        (item_hint,) = get_args(hint)
        for item in value:
            seen |= check(item, item_hint, f"{where}[]")
        return seen
    if origin is dict:
        assert isinstance(value, dict), f"{where}: {value!r} is not an object"
        key_hint, item_hint = get_args(hint)
        for key, item in value.items():
            assert isinstance(key, key_hint), f"{where}: key {key!r}"
            check(item, item_hint, f"{where}[{key!r}]")
        return seen
    assert hint in (int, float, str, bool), f"{where}: unexpected hint {hint!r}"
    # JSON's numbers: serde writes an f64 with a decimal point, an integer
    # without; a bool is not an int here.
    ok = type(value) is hint
    assert ok, f"{where}: {value!r} is not a {hint.__name__}"
    return seen


LIVE_AND_CBR: dict[str, Any] = {
    "name": "live-and-cbr",
    "duration": "5s",
    "link": [
        {
            "name": "bottleneck",
            "rate": "12Mbps",
            "delay": "30ms",
            "queue": "150KB",
            "loss": {"model": "bernoulli", "p": 0.05},
        }
    ],
    "flow": [
        {
            "name": "live",
            "kind": "live",
            "bitrate": "4Mbps",
            "cc": "bbr",
            "recovery": "autorec",
            "recovery_config": {"fixed_level": 1},
        },
        {"name": "cbr", "kind": "udp-cbr", "rate": "500kbps"},
    ],
}

SVC: dict[str, Any] = {
    "name": "svc",
    "duration": "5s",
    "link": [{"name": "bottleneck", "rate": "1Mbps", "delay": "20ms", "queue": "30KB"}],
    "flow": [
        {
            "name": "svc",
            "kind": "media",
            "cc": "svc-probing",
            "encoder": {"kind": "svc", "layers": 4, "layer_rate": "100kbps"},
        }
    ],
}

SCENARIOS: dict[str, str | dict[str, Any]] = {
    "media-nack": "scenarios/tests/gcc-loss5-nack.toml",
    "svc": SVC,
    "svc-plan": "scenarios/tests/svc-plan-loss.toml",
    "live": "scenarios/tests/live-autorec.toml",
    "live-formula-and-cbr": LIVE_AND_CBR,
    "multipath": "scenarios/tests/multipath-2paths.toml",
    "tfrc-and-tcp": "scenarios/tests/tfrc-flow-vs-newreno.toml",
}


def run(scenario: str | dict[str, Any]) -> RunSummary:
    source = REPO / scenario if isinstance(scenario, str) else scenario
    return rtcc.run(source, seed=1).summary


@pytest.fixture(scope="module")
def summaries() -> dict[str, RunSummary]:
    return {name: run(s) for name, s in SCENARIOS.items()}


def test_every_key_a_simulated_run_writes_is_declared(summaries: dict[str, RunSummary]) -> None:
    seen: set[str] = set()
    for name, summary in summaries.items():
        seen |= check(summary, RunSummary, name)
    relative = {p.split(".", 1)[1] for p in seen}
    kinds = {f["kind"] for s in summaries.values() for f in s["flows"]}
    assert kinds >= {"media", "live", "multipath-media", "tfrc", "tcp", "udp-cbr"}
    # Each kind-specific part of the schema was exercised.
    for path in (
        "flows.recovery",
        "flows.layers",
        "flows.mean_displayed_level",
        "flows.psnr_db",
        "flows.mean_protected_layers",
        "flows.layers.repair_sent_packets",
        "flows.layers.recovered_packets",
        "flows.live",
        "flows.live.formula",
        "flows.paths",
        "flows.multipath",
        "flows.loss_event_rate",
        "flows.cc_states",
        "flows.avail_kbps",
        "links",
        "fairness",
        "seed",
    ):
        assert path in {p.replace("[]", "") for p in relative}, path


def test_check_refuses_an_undeclared_key_and_a_missing_one(
    summaries: dict[str, RunSummary],
) -> None:
    summary: Any = summaries["svc"]
    extra = {**summary, "flows": [{**summary["flows"][0], "frame_rate": 30.0}]}
    with pytest.raises(AssertionError, match="frame_rate"):
        check(extra, RunSummary, "extra")
    lacking = {k: v for k, v in summary.items() if k != "duration_s"}
    with pytest.raises(AssertionError, match="duration_s"):
        check(lacking, RunSummary, "lacking")


def test_a_real_run_writes_the_same_schema(tmp_path: Path) -> None:
    port = free_port_pair()
    received: list[RunSummary] = []
    rx = threading.Thread(
        target=lambda: received.append(
            rtcc.recv(f"127.0.0.1:{port}", duration="3s", recovery="nack", out=tmp_path)
        )
    )
    rx.start()
    rtcc.send(f"127.0.0.1:{port}", cc="gcc", duration="2s", recovery="nack")
    rx.join(timeout=30)
    assert received, "rtcc.recv did not return"
    (summary,) = received
    seen = {p.split(".", 1)[1] for p in check(summary, RunSummary, "real")}
    for path in ("transport", "flows[].recovery", "flows[].packets_received"):
        assert path in seen, path
    assert summary["links"] == []
