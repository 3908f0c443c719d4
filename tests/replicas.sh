#!/bin/bash
# replicas.sh: symmetric data-parallel replicas (src/sim/replicas.c).  With
# dp.replicas=auto a symmetric job simulates one replica for all, its gradient
# rings over the mirror routes; every result must equal the full simulation's
# (dp.replicas=all) to 1e-9 relative: makespan, iteration, the dp all-reduce,
# per-rank peaks, samples/s, MFU -- the whole JSON report but the simulator's
# own counters.  A job that is not symmetric falls back and says why.
#   tests/replicas.sh [BIN]
. "$(dirname "$0")/lib.sh" replicas
BIN=${1:-src/pipegrid}

# A small GPT (seconds for both runs of every case); tp 8 fills a node, so
# each node holds one replica's GPUs.  NIC_BW: a slow NIC (2 GB/s) makes
# the all-reduce and the pipeline's transfers long enough to overlap, so the
# cases with dp.overlap test the sharing of each member's NIC in both
# directions (with the mirror's receiving side left out, the interleaved
# case below differs by 1 %).
NIC_BW=2GBps
GPT=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024
     --set network=cluster --set cluster.nodes=128 --set memory.capacity=1TiB --format json)

# same NAME DP ARGS...: auto simulates 1 of DP replicas and equals all to 1e-9
same() {
    local name=$1 dp=$2
    shift 2
    expect_rc "$name: dp.replicas=auto" 0 "$BIN" run "${GPT[@]}" --set dp="$dp" "$@"
    cp "$TMP/out" "$TMP/auto.json"
    expect_rc "$name: dp.replicas=all" 0 "$BIN" run "${GPT[@]}" --set dp="$dp" --set dp.replicas=all "$@"
    if PYTHONPATH="$TEST_HERE" python3 - "$TMP/auto.json" "$TMP/out" "$dp" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
from report_close import differences
a, b = (json.load(open(p)) for p in sys.argv[1:3])
dp = int(sys.argv[3])
sa, sb = a.pop("simulator"), b.pop("simulator")
assert (sa["replicas"], sa["replicas_simulated"], sa["replicas_reason"]) == (dp, 1, "symmetric"), sa
assert (sb["replicas"], sb["replicas_simulated"], sb["replicas_reason"]) == (dp, dp, "dp.replicas=all"), sb
assert sa["events"] < sb["events"], (sa["events"], sb["events"])
# the fields the shortcut exists for, named so that none can go missing
for key in ("makespan", "iteration_seconds", "samples_per_second", "mfu"):
    assert key in a, key
assert a["iteration"]["dp_allreduce_seconds"] > 0 or a["iteration"]["dp_allreduce_busy_seconds"] > 0, a["iteration"]
bad = differences(a, b)
assert not bad, bad[:6]
PY
        ok "$name: one replica simulated for $dp, the same report to 1e-9"
    else
        not_ok "$name: one replica simulated for $dp, the same report to 1e-9" "$(tail -c 600 "$TMP/cmp")"
    fi
}

same "tp 8, pp 2, dp 2" 2 --set tp=8 --set pp=2 --set microbatches=4
same "tp 8, pp 2, dp 4, overlap" 4 --set tp=8 --set pp=2 --set microbatches=4 --set dp.overlap=true \
    --set cluster.ib_bw=$NIC_BW
same "tp 8, pp 4, dp 8, small buckets, overlap" 8 --set tp=8 --set pp=4 --set microbatches=8 \
    --set dp.overlap=true --set dp.bucket_bytes=1MiB --set cluster.ib_bw=$NIC_BW
same "interleaved, dp 8, overlap" 8 --set tp=8 --set pp=2 --set microbatches=8 --set schedule=interleaved \
    --set dp.overlap=true --set cluster.ib_bw=$NIC_BW
same "interleaved, dp 4, no overlap, stepwise collectives" 4 --set tp=8 --set pp=2 --set microbatches=8 \
    --set schedule=interleaved --set collectives.mode=stepwise --set cluster.ib_bw=$NIC_BW
same "zb-h1, dp 4, overlap, h100" 4 --set tp=8 --set pp=4 --set microbatches=8 --set schedule=zb-h1 \
    --set dp.overlap=true --set cluster.gpu=h100-sxm --set cluster.ib_bw=$NIC_BW
same "zb-v, dp 2, overlap, a100" 2 --set tp=8 --set pp=4 --set microbatches=8 --set schedule=zb-v \
    --set dp.overlap=true --set cluster.gpu=a100-80g --set cluster.ib_bw=$NIC_BW
same "tp 8 x cp 2 (a group over 2 nodes), dp 4" 4 --set tp=8 --set cp=2 --set pp=2 --set microbatches=4 \
    --set dp.overlap=true --set cluster.ib_bw=$NIC_BW
same "1f1b, offload=full (copy engines per replica), dp 4" 4 --set tp=8 --set pp=2 --set microbatches=8 \
    --set offload=full --set dp.overlap=true --set cluster.ib_bw=$NIC_BW
# 9 x 8 = 72 nodes: the star layout of cluster.c (two core crossings per flow)
same "star layout (72 nodes), interleaved, dp 8" 8 --set tp=8 --set pp=9 --set gpt.layers=18 \
    --set microbatches=9 --set schedule=interleaved --set dp.overlap=true --set cluster.ib_bw=$NIC_BW

# Not symmetric: every replica simulated, and the report says why.
# fallback NAME PATTERN ARGS...: simulates every replica, reason matches PATTERN
fallback() {
    local name=$1 pattern=$2
    shift 2
    expect_rc "$name: runs" 0 "$BIN" run "$@" --format json
    python3 - "$TMP/out" "$pattern" >"$TMP/cmp" 2>&1 <<'PY' && ok "$name: falls back, says why" || not_ok "$name: falls back, says why" "$(cat "$TMP/cmp")"
import json, re, sys
s = json.load(open(sys.argv[1]))["simulator"]
assert s["replicas"] > 1 and s["replicas_simulated"] == s["replicas"], s
assert re.search(sys.argv[2], s["replicas_reason"]), s["replicas_reason"]
PY
}
fallback "tp 4: two replicas per node" "^not symmetric: node 0 holds GPUs of replicas 0 and 1" \
    "${GPT[@]}" --set tp=4 --set pp=2 --set dp=4 --set microbatches=4
fallback "network=ideal" "^not symmetric: only a generated cluster" --set workload=uniform --set network=ideal \
    --set tp=2 --set pp=2 --set dp=4 --set microbatches=4
fallback "a platform file" "^not symmetric: only a generated cluster" --set network=platforms/dgx-a100-4node-hdr.xml \
    --set workload=uniform --set tp=8 --set pp=2 --set dp=2 --set microbatches=4
fallback "expert parallelism" "^not symmetric: expert parallelism" --set workload=hf:profiles/models/mixtral-8x7b.json \
    --set gpt.seq=1024 --set tp=8 --set pp=2 --set dp=2 --set ep=2 --set network=cluster --set cluster.nodes=4 \
    --set microbatches=2 --set memory.capacity=1TiB
# the text report's line
expect_rc "text report" 0 "$BIN" run "${GPT[@]}" --set tp=8 --set pp=2 --set dp=4 --set microbatches=4 --format text
if grep -Eq '^replicas +simulated 1 of 4 \(symmetric\)$' "$TMP/out"; then ok "text report: replicas simulated 1 of 4"
else not_ok "text report: replicas simulated 1 of 4" "$(grep -i replicas "$TMP/out")"; fi

test_summary
