#!/usr/bin/env bash
# vhalf.sh: V-Half at p = 4, m = 8, F = B = W = 1 must reach the reference
# generator's makespan, 26.5 (the zero-bubble repository's V-Half), within its
# memory, (pp+2)//2 = 3 stage activations.  pipegrid's V-Half takes 27.5 today:
# this test is listed in XFAIL_TESTS (tests/local.am) until the generator is
# fixed, when it starts to pass ("XPASS", a failure) and must leave that list.
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" vhalf
# ---- V-Half at p = 4, m = 8, F = B = W = 1: the reference generator's 26.5 at its memory ----
expect_rc "v-half p=4 m=8 runs" 0 "$BIN" run --set schedule=v-half --set pp=4 --set microbatches=8 \
    --set workload=uniform --set network=ideal --format json
if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert abs(j["makespan"]-26.5)<1e-9, j["makespan"]; assert max(j["peak_activations"])<=3, j["peak_activations"]' "$TMP/out" 2>"$TMP/pyerr"
then ok "v-half p=4 m=8: makespan 26.5 within (pp+2)//2 = 3 activations"; else not_ok "v-half p=4 m=8: makespan 26.5 within 3 activations" "$(tail -1 "$TMP/pyerr")"; fi
test_summary
