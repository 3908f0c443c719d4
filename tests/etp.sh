#!/bin/bash
# etp.sh: expert tensor parallelism 1 (etp=1, Megatron's
# --expert-tensor-parallel-size 1): whole experts on every GPU, expert groups
# of ep consecutive GPUs of tp x cp x dp, so ep may exceed dp (issue 32: the
# Qwen3-235B rows of Megatron-Bridge ran so); and ep.dispatcher=hybridep.
#   tests/etp.sh [BIN]
. "$(dirname "$0")/lib.sh" etp
BIN=${1:-src/pipegrid}
MOE=(run --set workload=hf:profiles/models/qwen-moe-a2.7b.json --set gpt.seq=2048 --set network=cluster
     --set cluster.gpu=h100-sxm --set cluster.nodes=1 --set pp=2 --set microbatches=4 --set tp=2
     --set tp.sequence_parallel=true --set memory.headroom=none --format json)

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
check() {
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$3" 2>"$TMP/pyerr"
    then ok "$1"; else not_ok "$1" "$2 is false: $(head -c 300 "$TMP/pyerr")"; fi
}

# 1. ep larger than dp runs with etp=1 (4 GPUs of tp 2 x dp 2), and is refused without it.
expect_rc "ep=4 > dp=2 with etp=1" 0 "$BIN" "${MOE[@]}" --set dp=2 --set ep=4 --set etp=1
check "the all-to-alls are simulated" "d['iteration']['ep_alltoall_seconds'] > 0" "$TMP/out"
expect_rc "ep=4 > dp=2 without etp=1" 2 "$BIN" "${MOE[@]}" --set dp=2 --set ep=4
expect_err "names ep and etp" "'ep'.*etp=1"

# 2. Same ep, both placements: whole experts hold tp times the experts'
# weights per GPU (the attention and shared expert stay split), and the
# same token bytes leave each GPU.
expect_rc "ep=2 etp=tp" 0 "$BIN" "${MOE[@]}" --set dp=2 --set ep=2
cp "$TMP/out" "$TMP/tp.json"
expect_rc "ep=2 etp=1" 0 "$BIN" "${MOE[@]}" --set dp=2 --set ep=2 --set etp=1
check "etp=1 holds more static memory (whole experts)" \
    "d['ranks'][0]['peak_breakdown']['static_bytes'] > 1.5 * $(field "$TMP/tp.json" "d['ranks'][0]['peak_breakdown']['static_bytes']")" \
    "$TMP/out"
check "and exchanges its all-to-alls" "d['iteration']['ep_alltoall_seconds'] > 0" "$TMP/out"

# 3. Bad values exit 2 naming the key.
for bad in 0 3 two; do
    expect_rc "etp=$bad" 2 "$BIN" "${MOE[@]}" --set dp=2 --set ep=2 --set etp=$bad
    expect_err "names etp ($bad)" "etp"
done
expect_rc "etp=1 whose ep does not tile tp x dp" 2 "$BIN" "${MOE[@]}" --set dp=2 --set ep=3 --set etp=1
expect_err "names ep" "'ep'"

# 4. ep.dispatcher=hybridep (Megatron's flex dispatcher with HybridEP): an
# expert group over two nodes (ep 16 of tp 1) sends fewer bytes over the NICs
# and forwards them over NVLink: its all-to-alls take less than the alltoall
# dispatcher's; in one node both are the same; the replay without actors
# equals the actor replay (test_collectives checks the closed form).
X2=(run --set workload=hf:profiles/models/nemotron3-nano.json --set gpt.seq=2048 --set network=cluster
    --set cluster.gpu=h100-sxm --set cluster.nodes=2 --set pp=1 --set microbatches=2 --set dp=16 --set ep=16
    --set memory.headroom=none --set memory.capacity=1TiB --format json)
expect_rc "ep=16 over two nodes, alltoall" 0 "$BIN" "${X2[@]}"
cp "$TMP/out" "$TMP/a2a.json"
expect_rc "ep=16 over two nodes, hybridep" 0 "$BIN" "${X2[@]}" --set ep.dispatcher=hybridep
cp "$TMP/out" "$TMP/hyb.json"
check "hybridep's all-to-alls are shorter across nodes" \
    "d['iteration']['ep_alltoall_seconds'] < 0.8 * $(field "$TMP/a2a.json" "d['iteration']['ep_alltoall_seconds']")" \
    "$TMP/hyb.json"
expect_rc "hybridep on the actor replay" 0 "$BIN" "${X2[@]}" --set ep.dispatcher=hybridep --set sim.engine=actors
check "both replays agree to 1e-9" \
    "abs(d['makespan'] / $(field "$TMP/hyb.json" "repr(d['makespan'])") - 1) < 1e-9" "$TMP/out"
expect_rc "ep=8 in one node, alltoall" 0 "$BIN" "${X2[@]}" --set cluster.nodes=1 --set dp=8 --set ep=8
cp "$TMP/out" "$TMP/one.json"
expect_rc "ep=8 in one node, hybridep" 0 "$BIN" "${X2[@]}" --set cluster.nodes=1 --set dp=8 --set ep=8 \
    --set ep.dispatcher=hybridep
check "in one node the dispatchers agree" \
    "d['makespan'] == $(field "$TMP/one.json" "repr(d['makespan'])")" "$TMP/out"
expect_rc "ep.dispatcher=deepep" 2 "$BIN" "${MOE[@]}" --set dp=2 --set ep=2 --set ep.dispatcher=deepep
expect_err "names ep.dispatcher and its words" "ep.dispatcher.*alltoall, hybridep"
expect_rc "ep.dispatcher without ep" 0 "$BIN" "${MOE[@]}" --set dp=2 --set ep.dispatcher=hybridep
expect_err "warns that it applies only with ep > 1" "ep.dispatcher.*ignored: applies only with ep > 1"

test_summary
