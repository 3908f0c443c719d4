#!/bin/bash
# replay.sh: the simulator's shortcuts against its references (issue 35).
#  1. Symmetric blocks of replicas (src/sim/replicas.c): where replicas share
#     nodes (tp x cp below a node's GPUs) or meet in expert-parallel groups,
#     dp.replicas=auto simulates the smallest block of replicas that repeats,
#     its data-parallel rings as block rings (collectives.h); the whole JSON
#     report (makespan, iteration, per-rank peaks, the dp collectives' times,
#     samples/s, MFU) equals the full simulation's (dp.replicas=all) to 1e-9.
#  2. The replay without actors (src/sim/eventreplay.c) against the actor
#     replay (sim.engine=actors) on every job kind: plain pipelines, tp / cp
#     groups with their collectives, dp buckets (overlapped, small, stepwise,
#     symmetric blocks), the optimizer step, the distributed optimizer (its
#     gathers overlapped or not), the hierarchical all-reduce, ZeRO-2/3, FSDP and HSDP's per-layer collectives,
#     ep's all-to-alls run without actors, and the whole JSON report (makespan, peak
#     memory, every collective's time) equals the actor replay's to 1e-9 with
#     the same event count, and so do ep's all-to-alls and DualPipeV's
#     overlapped pairs, and memory plans (offload's copy engines and streams,
#     admission, PipeOffload's postponed forwards and reload slots, recompute).
#  3. Both are deterministic: the same job twice, the same report and trace.
#   tests/replay.sh [BIN]
. "$(dirname "$0")/lib.sh" replay
BIN=${1:-src/pipegrid}

# A small GPT on a generated cluster (each run well under a second); NIC_BW
# slows the NICs so that the gradient buckets overlap the pipeline's
# transfers and the block ring's edge out of the block shares NICs with them.
NIC_BW=2GBps
GPT=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024
     --set network=cluster --set cluster.nodes=64 --set memory.capacity=1TiB --set cluster.ib_bw=$NIC_BW
     --format json)
MOE=(--set workload=hf:profiles/models/mixtral-8x7b.json --set gpt.seq=1024 --set network=cluster
     --set cluster.nodes=64 --set memory.capacity=1TiB --set cluster.ib_bw=$NIC_BW --format json)

# compare A.json B.json MODE ARGS: python checks; MODE "blocks B DP" or "engine KIND"
compare() {
    PYTHONPATH="$TEST_HERE" python3 - "$@" <<'PY'
import json, sys
from report_close import differences
a, b = (json.load(open(p)) for p in sys.argv[1:3])
mode = sys.argv[3]
sa, sb = a.pop("simulator"), b.pop("simulator")
if mode == "blocks":
    block, dp = int(sys.argv[4]), int(sys.argv[5])
    assert (sa["replicas"], sa["replicas_simulated"]) == (dp, block), sa
    assert sa["replicas_reason"].startswith("symmetric in blocks of %d replicas" % block), sa
    assert (sb["replicas"], sb["replicas_simulated"], sb["replicas_reason"]) == (dp, dp, "dp.replicas=all"), sb
    assert sa["events"] * (dp // block) <= sb["events"] * 1.0000001, (sa["events"], sb["events"])
    for key in ("makespan", "iteration_seconds", "samples_per_second", "mfu", "peak_memory_bytes"):
        assert key in a, key
    it = a["iteration"]
    assert it["dp_allreduce_seconds"] > 0 or it["dp_allreduce_busy_seconds"] > 0, it
else:
    want = sys.argv[4]
    assert sb["engine"] == "actors", sb
    assert sa["engine"] == want, (sa["engine"], want)
    assert sa["events"] == sb["events"], (sa["events"], sb["events"])
bad = differences(a, b)
assert not bad, bad[:6]
PY
}

# blocks NAME BLOCK DP ARGS...: auto simulates BLOCK of DP replicas, the same report as all
blocks() {
    local name=$1 block=$2 dp=$3
    shift 3
    expect_rc "$name: dp.replicas=auto" 0 "$BIN" run "$@" --set dp="$dp"
    cp "$TMP/out" "$TMP/auto.json"
    expect_rc "$name: dp.replicas=all" 0 "$BIN" run "$@" --set dp="$dp" --set dp.replicas=all
    if compare "$TMP/auto.json" "$TMP/out" blocks "$block" "$dp" >"$TMP/cmp" 2>&1; then
        ok "$name: $block of $dp replicas simulated, the same report to 1e-9"
    else
        not_ok "$name: $block of $dp replicas simulated, the same report to 1e-9" "$(tail -c 600 "$TMP/cmp")"
    fi
}

blocks "tp 4 (two replicas per node), interleaved, overlap" 4 8 "${GPT[@]}" --set tp=4 --set pp=2 \
    --set microbatches=8 --set schedule=interleaved --set dp.overlap=true
blocks "tp 2 x cp 2 (two replicas per node), zb-h1, small buckets" 4 8 "${GPT[@]}" --set tp=2 --set cp=2 \
    --set pp=4 --set microbatches=8 --set schedule=zb-h1 --set dp.overlap=true --set dp.bucket_bytes=1MiB
blocks "tp 2 (four replicas per node), 1f1b, stepwise collectives" 8 16 "${GPT[@]}" --set tp=2 --set pp=2 \
    --set microbatches=4 --set collectives.mode=stepwise
blocks "tp 4, distributed optimizer with overlap" 4 8 "${GPT[@]}" --set tp=4 --set pp=2 --set microbatches=4 \
    --set memory.zero1=true --set dp.overlap=true
blocks "tp 4, offload=full (replicas share a node's host links)" 4 8 "${GPT[@]}" --set tp=4 --set pp=2 \
    --set microbatches=8 --set offload=full
blocks "MoE: tp 8, ep 2 (groups of two replicas)" 2 4 "${MOE[@]}" --set tp=8 --set pp=2 --set ep=2 \
    --set microbatches=4
blocks "MoE: tp 4, ep 2, replicas share nodes" 4 8 "${MOE[@]}" --set tp=4 --set pp=2 --set ep=2 \
    --set microbatches=4 --set dp.overlap=true
blocks "MoE: etp 1, distributed optimizer with overlap (the experts' own rings)" 8 16 "${MOE[@]}" --set tp=2 \
    --set pp=2 --set ep=8 --set etp=1 --set microbatches=4 --set memory.zero1=true --set dp.overlap=true
blocks "MoE: ep 2, distributed optimizer (the experts' gather after the step)" 2 8 "${MOE[@]}" --set tp=8 \
    --set pp=2 --set ep=2 --set microbatches=4 --set memory.zero1=true
blocks "MoE: DualPipeV's overlapped pairs, tp 2 x cp 2, ep 4" 4 8 "${MOE[@]}" --set tp=2 --set cp=2 --set pp=2 \
    --set ep=4 --set microbatches=8 --set schedule=dualpipe-v --set tp.sequence_parallel=true

# Not symmetric: every replica simulated, and the report says why.
# fallback NAME PATTERN ARGS...: simulates every replica, reason matches PATTERN
fallback() {
    local name=$1 pattern=$2
    shift 2
    expect_rc "$name: runs" 0 "$BIN" run "$@"
    python3 - "$TMP/out" "$pattern" >"$TMP/cmp" 2>&1 <<'PY' && ok "$name: falls back, says why" || not_ok "$name: falls back, says why" "$(cat "$TMP/cmp")"
import json, re, sys
s = json.load(open(sys.argv[1]))["simulator"]
assert s["replicas"] > 1 and s["replicas_simulated"] == s["replicas"], s
assert re.search(sys.argv[2], s["replicas_reason"]), s["replicas_reason"]
PY
}
fallback "replicas share nodes, dp.algorithm=hierarchical" "^not symmetric: node 0 holds GPUs of replicas 0 and 1" \
    "${GPT[@]}" --set tp=4 --set pp=2 --set dp=8 --set microbatches=4 --set dp.algorithm=hierarchical
fallback "ep = dp: one group" "^not symmetric: expert parallelism" "${MOE[@]}" --set tp=8 --set pp=2 --set dp=4 \
    --set ep=4 --set microbatches=4

# engine NAME ENGINE ARGS...: auto (running ENGINE) against sim.engine=actors, the same report
engine() {
    local name=$1 want=$2
    shift 2
    expect_rc "$name: sim.engine=auto" 0 "$BIN" run "$@"
    cp "$TMP/out" "$TMP/auto.json"
    expect_rc "$name: sim.engine=actors" 0 "$BIN" run "$@" --set sim.engine=actors
    local what="runs without actors, the same report to 1e-9 (makespan, peak memory, collectives)"
    [ "$want" = actors ] && what="falls back to the actor replay, the same report"
    if compare "$TMP/auto.json" "$TMP/out" engine "$want" >"$TMP/cmp" 2>&1; then ok "$name: $what"
    else not_ok "$name: $what" "$(tail -c 600 "$TMP/cmp")"; fi
}
EV="without actors"
PLAIN=(--set workload=uniform --set network=cluster --set cluster.nodes=2 --set pp=16 --set microbatches=32
       --set memory.capacity=1TiB --format json)
for sched in 1f1b interleaved zb-v; do
    engine "plain $sched" "$EV" "${PLAIN[@]}" --set schedule=$sched
done
engine "pp only, GPT cost model (optimizer step, tied embedding)" "$EV" "${GPT[@]}" --set pp=8 --set microbatches=16
engine "tp 2" "$EV" "${GPT[@]}" --set tp=2 --set pp=4 --set microbatches=8
engine "tp 2 x cp 2, sequence parallel" "$EV" "${GPT[@]}" --set tp=2 --set cp=2 --set pp=4 --set microbatches=8 \
    --set tp.sequence_parallel=true
engine "tp 4, tp.comm_overlap" "$EV" "${GPT[@]}" --set tp=4 --set pp=2 --set dp=2 --set microbatches=8 \
    --set tp.comm_overlap=true
engine "dp 2" "$EV" "${GPT[@]}" --set dp=2 --set pp=4 --set microbatches=8
engine "dp 8 in blocks of 4, overlap, 1 MiB buckets, interleaved" "$EV" "${GPT[@]}" --set dp=8 --set tp=4 --set pp=2 \
    --set microbatches=8 --set dp.overlap=true --set dp.bucket_bytes=1MiB --set schedule=interleaved
engine "dp 8 every replica, overlap" "$EV" "${GPT[@]}" --set dp=8 --set tp=4 --set pp=2 --set microbatches=8 \
    --set dp.overlap=true --set dp.replicas=all
engine "zb-v, stepwise collectives, dp 2, overlap" "$EV" "${GPT[@]}" --set dp=2 --set tp=8 --set pp=4 \
    --set microbatches=8 --set schedule=zb-v --set collectives.mode=stepwise --set dp.overlap=true
engine "distributed optimizer" "$EV" "${GPT[@]}" --set dp=4 --set tp=2 --set pp=2 --set microbatches=8 \
    --set memory.zero1=true
engine "distributed optimizer with overlap (gathers under the forwards), interleaved" "$EV" "${GPT[@]}" --set dp=8 \
    --set tp=4 --set pp=2 --set microbatches=8 --set memory.zero1=true --set dp.overlap=true --set schedule=interleaved
engine "hierarchical all-reduce" "$EV" "${GPT[@]}" --set dp=4 --set tp=4 --set pp=2 --set microbatches=4 \
    --set dp.algorithm=hierarchical
engine "ZeRO-2 (per-layer reduce-scatters, the updated parameters gathered)" "$EV" "${GPT[@]}" --set dp=4 --set tp=2 \
    --set pp=2 --set microbatches=8 --set dp.sharding=gradients
engine "FSDP (per-layer gathers in F and B), interleaved" "$EV" "${GPT[@]}" --set dp=4 --set tp=2 --set pp=2 \
    --set microbatches=8 --set dp.sharding=full --set schedule=interleaved
engine "HSDP (shard groups of 2 of dp 8, the all-reduce across them), zb-h1" "$EV" "${GPT[@]}" --set dp=8 --set tp=2 \
    --set pp=2 --set microbatches=8 --set dp.sharding=full --set dp.shard_group=2 --set schedule=zb-h1
engine "FSDP, tp 8, no pipeline, every replica" "$EV" "${GPT[@]}" --set dp=4 --set tp=8 --set pp=1 --set microbatches=4 \
    --set dp.sharding=full --set dp.replicas=all
engine "offload=full" "$EV" "${GPT[@]}" --set pp=4 --set microbatches=8 --set offload=full
engine "recompute=full" "$EV" "${GPT[@]}" --set pp=4 --set microbatches=8 --set recompute=full
# memory plans on a slow measured host link, so that copies stall and slots fill: copy engines (duplex),
# one stream per GPU (single) or per pair (paired), admission, PipeOffload's presets (postponed forwards,
# reload slots), recompute with tp x dp groups, DualPipeV (no pairs under a plan)
OFF=(--set workload=gpt --set gpt.layers=16 --set gpt.hidden=4096 --set gpt.heads=32 --set gpt.seq=4096
     --set network=cluster --set cluster.gpu=a100-80g --set cluster.host_link=measured --format json)
engine "offload=full, copy slots 1" "$EV" "${OFF[@]}" --set pp=4 --set microbatches=16 --set offload=full \
    --set offload.copy_slots=1
engine "offload=selective, one copy stream per GPU" "$EV" "${OFF[@]}" --set pp=4 --set microbatches=16 \
    --set offload=selective --set offload.ratio=0.5 --set offload.copy_model=single
engine "offload=full, a copy stream per pair of GPUs, tp 2, dp 2" "$EV" "${OFF[@]}" --set pp=4 --set tp=2 --set dp=2 \
    --set cluster.nodes=2 --set microbatches=16 --set offload=full --set offload.copy_model=paired
engine "PO-H on GIS-H (postponed forwards, reload slots)" "$EV" "${OFF[@]}" --set pp=4 --set microbatches=16 \
    --set schedule=gis-h --set chunks=2 --set offload.preset=po-h
engine "PO-F on GIS-H" "$EV" "${OFF[@]}" --set pp=4 --set microbatches=16 --set schedule=gis-h --set chunks=2 \
    --set offload.preset=po-f
engine "recompute=selective, tp 2 x dp 2, interleaved" "$EV" "${GPT[@]}" --set pp=2 --set tp=2 --set dp=2 \
    --set microbatches=8 --set recompute=selective --set schedule=interleaved
# the plan cases above are not vacuous: their copies run and the compute stalls for them
for args in "--set pp=4 --set offload=full --set offload.copy_slots=1" \
            "--set pp=4 --set tp=2 --set dp=2 --set cluster.nodes=2 --set offload=full --set offload.copy_model=paired"; do
    # shellcheck disable=SC2086
    "$BIN" run "${OFF[@]}" --set microbatches=16 $args >"$TMP/plan.json" 2>/dev/null
    if python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert sum(d["offload_bytes"]) > 0 and sum(d["offload_stall_seconds"]) > 0 and d["simulator"]["engine"] == "without actors", d["simulator"]' \
        "$TMP/plan.json" 2>"$TMP/pyerr"; then ok "memory plan ($args): copies and stalls, without actors"
    else not_ok "memory plan ($args): copies and stalls, without actors" "$(tail -1 "$TMP/pyerr")"; fi
done
engine "DualPipeV with offload=full (no pairs under a plan)" "$EV" "${MOE[@]}" --set tp=2 --set pp=2 --set dp=4 \
    --set ep=4 --set microbatches=8 --set schedule=dualpipe-v --set offload=full
engine "MoE ep 2" "$EV" "${MOE[@]}" --set tp=8 --set pp=2 --set dp=2 --set ep=2 --set microbatches=4
engine "MoE tp 2 x cp 2, ep 4 in blocks, overlap" "$EV" "${MOE[@]}" --set tp=2 --set cp=2 --set pp=2 --set dp=8 \
    --set ep=4 --set microbatches=4 --set dp.overlap=true --set tp.sequence_parallel=true
engine "MoE etp 1, distributed optimizer with overlap" "$EV" "${MOE[@]}" --set tp=2 --set pp=2 --set dp=8 \
    --set ep=8 --set etp=1 --set microbatches=4 --set memory.zero1=true --set dp.overlap=true
engine "MoE ep 2, distributed optimizer, gathers after the step" "$EV" "${MOE[@]}" --set tp=8 --set pp=2 --set dp=4 \
    --set ep=2 --set microbatches=4 --set memory.zero1=true
engine "DualPipeV, pairs one after the other" "$EV" "${MOE[@]}" --set tp=2 --set pp=2 --set dp=4 --set ep=4 \
    --set microbatches=8 --set schedule=dualpipe-v --set dualpipe.overlap=false
engine "DualPipeV's overlapped pairs, ep 4" "$EV" "${MOE[@]}" --set tp=2 --set pp=2 --set dp=4 --set ep=4 \
    --set microbatches=8 --set schedule=dualpipe-v
engine "DualPipeV's overlapped pairs, dense, dp 2" "$EV" "${GPT[@]}" --set tp=2 --set pp=4 --set dp=2 --set microbatches=8 \
    --set schedule=dualpipe-v

# Deterministic: the same job twice without actors (blocks, ep, DualPipeV's pairs, overlap) gives the
# same report (but the host time) and the same trace, byte for byte.
DET=("${MOE[@]}" --set tp=2 --set cp=2 --set pp=2 --set dp=8 --set ep=4 --set microbatches=8
     --set schedule=dualpipe-v --set dp.overlap=true)
for i in 1 2; do
    expect_rc "deterministic: run $i" 0 "$BIN" run "${DET[@]}" --trace "$TMP/det$i.trace"
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["simulator"].pop("wall_seconds")
print(json.dumps(d, sort_keys=True))' "$TMP/out" >"$TMP/det$i.json"
done
if cmp -s "$TMP/det1.json" "$TMP/det2.json" && cmp -s "$TMP/det1.trace" "$TMP/det2.trace"; then
    ok "deterministic: the same report and trace twice"
else
    not_ok "deterministic: the same report and trace twice"
fi

test_summary
