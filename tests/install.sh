#!/usr/bin/env bash
# install.sh: an installed pipegrid works on its own.  Installs the build
# into a staging root (`make install DESTDIR=...`), then runs the installed
# binary from an unrelated directory with every workload kind: uniform, a
# profile (profiles/zb-gpt-6.2b.yaml), gpt (its cost model reads
# profiles/gpus/), hf:PATH when model configs are shipped, the bundled
# default experiment, and a shipped platform.  An installed binary never
# reads the source tree (src/util/datapath.h), so a data file that
# `make install` leaves out fails here.
#   tests/install.sh [BUILD_DIR]   (make check passes the build directory)
# With PIPEGRID_INSTALLED_BIN=PATH it checks that binary instead of
# installing (make installcheck, run by make distcheck, uses this).
set -u
BUILD=${1:-${top_builddir:-.}}
case $BUILD in /*) ;; *) BUILD="$PWD/$BUILD" ;; esac
. "$(dirname "$0")/lib.sh" install
unset PIPEGRID_DATA_DIR

if [ -n "${PIPEGRID_INSTALLED_BIN:-}" ]; then
    BIN=$PIPEGRID_INSTALLED_BIN
else
    # MAKEFLAGS from an enclosing `make check -j` would hand this make the
    # parent's jobserver; the install is a plain serial copy.
    if ! MAKEFLAGS= "${MAKE:-make}" -C "$BUILD" install DESTDIR="$TMP/root" >"$TMP/install.out" 2>&1; then
        not_ok "make install DESTDIR succeeds" "$(tail -n 5 "$TMP/install.out")"
        test_summary
        exit
    fi
    ok "make install DESTDIR succeeds"
    BIN=$(find "$TMP/root" -type f -name pipegrid -perm -u+x | head -n 1)
fi
if [ -n "$BIN" ] && [ -x "$BIN" ]; then ok "the binary is installed ($BIN)"; else not_ok "the binary is installed"; test_summary; exit; fi

mkdir -p "$TMP/elsewhere" && cd "$TMP/elsewhere" || exit 1
SMALL=(--set pp=4 --set microbatches=8 --format json)
expect_rc "installed: workload=uniform" 0 "$BIN" run --set workload=uniform --set network=ideal "${SMALL[@]}"
expect_rc "installed: a profile (profiles/zb-gpt-6.2b.yaml)" 0 "$BIN" run \
    --set workload=profiles/zb-gpt-6.2b.yaml --set network=ideal "${SMALL[@]}"
expect_rc "installed: workload=gpt (profiles/gpus/ through network=cluster)" 0 "$BIN" run --set workload=gpt \
    --set gpt.layers=8 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024 \
    --set network=cluster --set cluster.gpu=a100-80g "${SMALL[@]}"
expect_rc "installed: the bundled default experiment" 0 "$BIN" run --format json
expect_rc "installed: a shipped platform" 0 "$BIN" run --set network=platforms/dgx-h100-1node.xml \
    --set workload=uniform "${SMALL[@]}"
# A model config shipped under profiles/models/ (when the tree has them).
share=$(dirname "$(dirname "$BIN")")/share/pipegrid
cfg=profiles/models/llama3-8b.json
if [ -f "$share/$cfg" ]; then
    expect_rc "installed: workload=hf:$cfg" 0 "$BIN" run --set "workload=hf:$cfg" --set gpt.seq=1024 \
        --set network=cluster --set cluster.gpu=h100-sxm --set cluster.nodes=1 --set pp=4 --set microbatches=4 \
        --format json
fi
test_summary
