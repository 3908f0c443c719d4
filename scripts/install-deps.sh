#!/bin/sh
# Install the Debian packages pipegrid needs to build and test, only those missing.
# Runs as root, or through sudo when available. Safe to run repeatedly.
#   scripts/install-deps.sh           build + test dependencies
#   scripts/install-deps.sh --check   print what is missing, exit 1 if anything is
set -eu

PACKAGES="build-essential autoconf automake pkg-config libsimgrid-dev libyaml-dev libxml2-dev check libglpk-dev libjansson-dev python3 parallel librsvg2-bin"

missing=""
for pkg in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all Debian packages present"
    exit 0
fi
if [ "${1:-}" = "--check" ]; then
    echo "install-deps: missing:$missing"
    exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-deps: need root or sudo to install:$missing" >&2
    exit 1
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
