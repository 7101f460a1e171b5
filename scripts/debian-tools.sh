#!/bin/sh
# Installs the Debian packages that optional tests need, best effort: it never
# fails the build and says why when it cannot install (the tests then skip
# with a message of their own). Used by the Makefile's *-tools targets.
#
# usage: scripts/debian-tools.sh LABEL WHAT SKIPS CHECK PACKAGE...
#   LABEL   the make target, the prefix of every line printed
#   WHAT    what the packages are, for the messages ("ns-2")
#   SKIPS   what skips without them ("the ns-2 cross-check test will skip")
#   CHECK   a shell command that succeeds when everything is already there
label=$1
what=$2
skips=$3
check=$4
shift 4
if sh -c "$check" >/dev/null 2>&1; then
  echo "$label: $what already installed"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "$label: apt-get not found; install $what with your package manager"
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  SUDO=
elif command -v sudo >/dev/null 2>&1; then
  SUDO=sudo
else
  echo "$label: not root and no sudo; cannot install $what"
  exit 0
fi
# DEBIAN_FRONTEND=noninteractive answers debconf questions (tshark's, about
# non-root capture) with their defaults.
if $SUDO apt-get update -qq &&
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "$@"; then
  echo "$label: installed $what"
else
  echo "$label: apt-get install failed; $skips"
fi
exit 0
