#!/bin/bash
# scale.sh: issue 17's hangs, with time limits: what once ran for minutes
# must now finish in seconds, with the same results as the small case.
#   tests/scale.sh [BIN]
# The limits are ten times and more what a loaded 2-core machine needs
# (measured: about 1 s each), so that they catch a return of the quadratic
# or unbounded cost, not a slow machine.
. "$(dirname "$0")/lib.sh" scale
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
LIMIT_S=30
timed() { # NAME RC COMMAND...: expect_rc, and the command finishes within LIMIT_S
    local name=$1 t0=$SECONDS
    expect_rc "$@"
    local took=$((SECONDS - t0))
    if [ "$took" -le "$LIMIT_S" ]; then ok "$name: within $LIMIT_S s ($took s)"
    else not_ok "$name: within $LIMIT_S s" "took $took s"; fi
}
# 8,000 GPUs all used: symmetric replicas simulate one for all (3 s); every replica
# (dp.replicas=all, the 65- and 128-node cases below) took 20-36 s under load at 1,000 nodes:
# the issue's goal for an 8,192-GPU job is a minute; twice that here
ALL_GPUS_LIMIT_S=120

# dp.bucket_bytes=1 once meant one all-reduce per byte (minutes): the floor bounds the buckets
timed "dp.bucket_bytes=1" 0 "$BIN" run --set dp=2 --set pp=4 --set dp.bucket_bytes=1 --format json
cp "$TMP/out" "$TMP/b1.json"
expect_rc "dp.bucket_bytes=1MiB" 0 "$BIN" run --set dp=2 --set pp=4 --set dp.bucket_bytes=1MiB --format json
python3 - "$TMP/b1.json" "$TMP/out" <<'PY' && ok "bucket 1 B times as the 1 MiB floor" || not_ok "bucket 1 B times as the 1 MiB floor"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["iteration_seconds"] == b["iteration_seconds"] and a["iteration"]["dp_buckets"] == b["iteration"]["dp_buckets"]
PY

# a generated cluster of thousands of nodes for an 8-GPU job: only the used node is generated
GPT=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024
     --set network=cluster --set pp=8 --set microbatches=8 --format json)
expect_rc "cluster.nodes=1, pp=8" 0 "$BIN" run "${GPT[@]}" --set cluster.nodes=1
cp "$TMP/out" "$TMP/n1.json"
for n in 4000 16000; do
    timed "cluster.nodes=$n, an 8-GPU job" 0 "$BIN" run "${GPT[@]}" --set cluster.nodes=$n
    python3 - "$TMP/n1.json" "$TMP/out" <<'PY' && ok "cluster.nodes=$n: the 1-node timings" || not_ok "cluster.nodes=$n: the 1-node timings"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["makespan"] == b["makespan"] and a["iteration_seconds"] == b["iteration_seconds"], (a["makespan"], b["makespan"])
PY
done

# tp and dp across nodes past 64 nodes (SimGrid once aborted: "dynar is not that long")
for n in 65 128 1000; do
    [ $n = 1000 ] && LIMIT_S=$ALL_GPUS_LIMIT_S
    # the full simulation too (every replica's rings over the real routes), where it is cheap
    [ $n != 1000 ] && timed "cluster.nodes=$n, dp.replicas=all" 0 "$BIN" run "${GPT[@]}" --set cluster.nodes=$n \
        --set tp=8 --set pp=1 --set dp=$n --set microbatches=2 --set dp.replicas=all
    timed "cluster.nodes=$n, tp=8 and dp across all nodes" 0 "$BIN" run "${GPT[@]}" --set cluster.nodes=$n \
        --set tp=8 --set pp=1 --set dp=$n --set microbatches=2
    python3 - "$TMP/out" <<'PY' && ok "cluster.nodes=$n: the all-reduce crossed the nodes" || not_ok "cluster.nodes=$n: the all-reduce crossed the nodes"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["iteration"]["dp_allreduce_seconds"] > 0 and j["iteration"]["tp_comm_seconds"] > 0, j["iteration"]
PY
done
LIMIT_S=30
# network=ideal past 128 GPUs with tp and dp
timed "network=ideal, 512 GPUs, tp=4 dp=64" 0 "$BIN" run --set workload=uniform --set network=ideal --set tp=4 \
    --set pp=2 --set dp=64 --set microbatches=2 --format json

test_summary
