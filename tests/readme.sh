#!/usr/bin/env bash
# readme.sh: every example of README.md and of the docs/*.md pages that shows
# "$ src/pipegrid ..." with its output is rerun against a built binary (from the
# source tree's root) and must print that output (lines that vary with the
# host, such as the host time, excepted; see readme.py).
#   tests/readme.sh [BIN] [--update]    --update rewrites the examples in place
# Ends with "readme: N passed, M failed".
set -u
BIN=src/pipegrid
ARGS=()
for a in "$@"; do
    case $a in --update) ARGS+=(--update) ;; *) BIN=$a ;; esac
done
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
exec python3 "$HERE/readme.py" "$BIN" "$HERE/../README.md" "$HERE"/../docs/*.md "${ARGS[@]}"
