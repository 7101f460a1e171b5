#!/usr/bin/env bash
# Build rtcc's ns-3 comparison program (bench/ns3/dumbbell.cc) against the
# Debian/Ubuntu ns-3 packages (libns3-dev, ns-3 3.37 on Debian bookworm).
# Installs libns3-dev if it is missing. Output: bench/ns3/build/dumbbell.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$here/build"
src="$here/dumbbell.cc"
bin="$out/dumbbell"

if ! dpkg -s libns3-dev >/dev/null 2>&1; then
    echo "build.sh: libns3-dev is not installed; installing it with apt-get" >&2
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y libns3-dev
fi

# Headers live in /usr/include/ns3/*.h (included as "ns3/xxx.h"). The .pc
# files of the Debian package are unusable (Cflags "-I/usr;", Libs naming
# /usr/lib/.../libgsl.so which only libgsl-dev provides), so link the needed
# modules directly; the shared libraries pull in their own dependencies.
libs="-lns3-applications -lns3-point-to-point -lns3-internet -lns3-traffic-control \
-lns3-bridge -lns3-network -lns3-stats -lns3-core"

# Rebuild only when the source (or this script) is newer than the binary.
if [ -x "$bin" ] && [ "$bin" -nt "$src" ] && [ "$bin" -nt "${BASH_SOURCE[0]}" ] \
    && [ "${1:-}" != "--force" ]; then
    echo "build.sh: $bin is up to date" >&2
    exit 0
fi

mkdir -p "$out"
echo "build.sh: compiling $src" >&2
# shellcheck disable=SC2086  # $libs is a word list on purpose
g++ -O2 -std=c++17 -I/usr/include -o "$bin.tmp" "$src" $libs
mv "$bin.tmp" "$bin"
echo "build.sh: built $bin" >&2
