#!/bin/bash
# etp.sh: expert tensor parallelism 1 (etp=1, Megatron's
# --expert-tensor-parallel-size 1): whole experts on every GPU, expert groups
# of ep consecutive GPUs of tp x cp x dp, so ep may exceed dp (issue 32: the
# Qwen3-235B rows of Megatron-Bridge ran so).
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

test_summary
