# rtcc developer entry points. A fresh Debian machine with Rust (cargo) and
# python3 (with the venv module, Debian package python3-venv) needs nothing
# else: every Python tool is installed from PyPI into $(VENV) by `make venv`.

VENV := .venv
PYTHON ?= python3

PY := $(abspath $(VENV))/bin/python
STAMP := $(VENV)/.rtcc-installed
# Tools and dependencies are read from pyproject.toml (single source of truth).
REQS := $(VENV)/requirements.txt

# PyO3's build script asks this interpreter for the Python configuration, so
# `cargo clippy` and `maturin develop` agree on which Python rtcc-py targets.
CARGO_PY := PYO3_PYTHON=$(PY)

.PHONY: venv develop build demo test lint-rust lint-python test-rust test-python \
        bench bench-ns3 ns2-crosscheck clean media-tools browser-tools sim-tools

venv: $(STAMP)

# Idempotent: the stamp is rebuilt only when pyproject.toml changes (new
# dependency or bound); an existing virtualenv is reused, never recreated.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "rtcc needs Python >= 3.11 (found: $$($(PYTHON) --version))" >&2; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || \
	  { echo "python3 -m venv failed: on Debian install the python3-venv package" >&2; exit 1; }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb")); \
	  print("\n".join(p["build-system"]["requires"] + p["project"]["dependencies"] \
	  + p["project"]["optional-dependencies"]["dev"]))' > $(REQS)
	$(PY) -m pip install --quiet --upgrade -r $(REQS)
	touch $@

# Builds the extension in release mode (the simulator is slow in debug) and
# installs the package in editable mode: python/rtcc is used in place and
# rtcc/_native.*.so is written next to it. Dependencies come from `venv`.
develop: venv
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release

build: develop
	cargo build --release -p rtcc-sim -p rtcc-bench

demo: develop
	$(VENV)/bin/rtcc run scenarios/demo.toml --out results/demo --seed 1
	$(VENV)/bin/rtcc report results/demo -o results/demo/report.html

test: media-tools browser-tools sim-tools test-rust lint-rust test-python

# Default members only: rtcc-py is a cdylib for the Python interpreter and is
# exercised through pytest below.
test-rust:
	cargo test

# `--workspace` covers every member, rtcc-py included.
lint-rust: venv
	$(CARGO_PY) cargo clippy --workspace --all-targets -- -D warnings
	cargo fmt --all --check
	# Doc links that point nowhere are docs that are no longer true.
	RUSTDOCFLAGS="-D warnings" $(CARGO_PY) cargo doc --no-deps --workspace --quiet

lint-python: venv
	$(VENV)/bin/ruff check python tests/python bench/ns2
	$(VENV)/bin/ruff format --check python tests/python bench/ns2

test-python: develop lint-python
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest rtcc._native
	$(VENV)/bin/pytest

bench: develop
	cargo build --release -p rtcc-bench
	$(PYTHON) bench/bench.py scenarios/bench/dumbbell.toml scenarios/bench/dumbbell-8.toml scenarios/bench/heavy.toml
	$(PYTHON) bench/bench.py --net
	$(PY) bench/sweep_bench.py

bench-ns3:
	bash bench/ns3/compare.sh

# The TFRC and TCP baselines of papers/svc-topdown-probing.txt in ns-2 and in
# rtcc, side by side (bench/ns2/README.md; docs/results/fidelity.md).
ns2-crosscheck: sim-tools develop
	$(PY) bench/ns2/crosscheck.py

# ffmpeg, for the H.264 decode test (crates/rtcc-net/tests/h264_decode.rs),
# GStreamer, for the interop test (tests/python/test_interop.py), and tshark,
# for the pcap test (tests/python/test_pcap.py); all skip without them. Best
# effort (scripts/debian-tools.sh): never fails the build, says why not.
media-tools:
	@sh scripts/debian-tools.sh media-tools "ffmpeg, GStreamer and tshark" \
	  "the decode, interop and pcap tests will skip" \
	  'command -v ffmpeg && command -v gst-launch-1.0 && command -v tshark && \
	   gst-inspect-1.0 --exists x264enc && gst-inspect-1.0 --exists rtpbin && \
	   gst-inspect-1.0 --exists avdec_h264 && \
	   /usr/bin/python3 -c "import gi; gi.require_version(\"Gst\", \"1.0\")"' \
	  ffmpeg gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good \
	  gstreamer1.0-plugins-ugly gstreamer1.0-libav python3-gi gir1.2-gstreamer-1.0 \
	  gir1.2-gst-plugins-base-1.0 tshark

# ns-2 (Debian `ns2`, 2.35), the simulator papers/svc-topdown-probing.txt ran:
# tests/python/test_ns2.py runs rtcc's TFRC and TCP against its agents on the
# paper's topologies (bench/ns2/crosscheck.py), and skips without it.
sim-tools:
	@sh scripts/debian-tools.sh sim-tools "ns-2" "the ns-2 cross-check test will skip" \
	  "echo 'puts [Agent/TFRC set packetSize_]; exit' | ns" ns2

# Chromium, for the headless-browser test of `rtcc report`
# (tests/python/test_report.py, which skips without it).
browser-tools:
	@sh scripts/debian-tools.sh browser-tools "chromium" "the browser test will skip" \
	  "command -v chromium" chromium

clean:
	rm -rf $(VENV) results .pytest_cache .mypy_cache .ruff_cache
	rm -f python/rtcc/_native.*.so
	find python tests -name __pycache__ -type d -prune -exec rm -rf {} +
	cargo clean
