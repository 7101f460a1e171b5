"""Shared scenarios for the Python tests: small enough to run in about a second."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import tomli_w


def tiny_scenario() -> dict[str, Any]:
    """A 3 s run: one video flow and one TCP flow over a lossy 2 Mbps link."""
    return {
        "name": "tiny",
        "duration": "3s",
        "link": [
            {
                "name": "bottleneck",
                "rate": "2Mbps",
                "delay": "20ms",
                "queue": "30KB",
                # Random loss makes the outcome depend on the seed.
                "loss": {"model": "bernoulli", "p": 0.02},
            }
        ],
        "flow": [
            {"name": "video", "kind": "media", "cc": "gcc"},
            {"name": "bulk", "kind": "tcp", "cc": "newreno", "start": "1s"},
        ],
    }


@pytest.fixture
def tiny() -> dict[str, Any]:
    return copy.deepcopy(tiny_scenario())


@pytest.fixture
def tiny_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(tiny_scenario()))
    return path
