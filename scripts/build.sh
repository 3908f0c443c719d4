#!/bin/sh
# Install missing Debian packages, build pipegrid in the source tree, and run
# the bundled default simulation.   Usage: scripts/build.sh [--no-run]
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi
[ -f Makefile ] || ./configure --quiet
make -j"$(nproc)" --no-print-directory
if [ "${1:-}" != "--no-run" ]; then
    src/pipegrid run
fi
