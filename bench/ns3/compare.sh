#!/usr/bin/env bash
# Compare rtcc-bench with ns-3 on the reference scenarios; see README.md.
# All arguments go to compare.py (python3, standard library only), e.g.
#   bench/ns3/compare.sh --scenarios dumbbell --runs 5 --markdown --json out.json
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "$here/compare.py" "$@"
