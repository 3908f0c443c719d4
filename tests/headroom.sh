#!/bin/bash
# headroom.sh: the memory a training process holds besides its tensors
# (issue 33, "Memory has no headroom"): the GPU type's CUDA context, NCCL's
# buffers per communicator and the allocator's fragmentation, counted in
# every run, in OOM and in the planners, reported as their own part, and
# under the user's control (memory.headroom, memory.fragmentation,
# memory.reserved).
#   tests/headroom.sh [BIN]
. "$(dirname "$0")/lib.sh" headroom
BIN=${1:-src/pipegrid}
JOB=experiments/llama3-70b-h100.yaml   # tp 8, pp 4, dp 2 on 64 H100: 4 communicators per rank

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
check() {
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$3" 2>"$TMP/pyerr"
    then ok "$1"; else not_ok "$1" "$2 is false: $(head -c 300 "$TMP/pyerr")"; fi
}
# profile_value KEY: the h100-sxm profile's memory_headroom entry, in bytes or as a fraction
profile_value() {
    python3 - "$1" <<'EOF'
import re, sys
text = open("profiles/gpus/h100-sxm.yaml").read()
block = text.split("memory_headroom:", 1)[1]
m = re.search(r"^  %s: \{value: ([0-9.e+]+)," % sys.argv[1], block, re.M)
print(m.group(1))
EOF
}
ctx=$(profile_value cuda_context)
per_comm=$(profile_value nccl_per_communicator)
frag=$(profile_value fragmentation)

# 1. Counted by default, from the GPU type's profile, as its own parts.
expect_rc "default headroom" 0 "$BIN" run "$JOB" --format json
cp "$TMP/out" "$TMP/auto.json"
check "the job's GPU type and communicators (tp, dp, two pipeline neighbours)" \
    "d['memory_headroom']['gpu'] == 'h100-sxm' and d['memory_headroom']['nccl_communicators'] == 4" "$TMP/auto.json"
check "CUDA context and NCCL bytes are the profile's" \
    "d['ranks'][0]['headroom']['cuda_context_bytes'] == $ctx and d['ranks'][0]['headroom']['nccl_bytes'] == 4 * $per_comm" \
    "$TMP/auto.json"
check "the contract's three parts still add up to the peak" \
    "all(abs(sum(r['peak_breakdown'].values()) - r['peak_memory_bytes']) <= 1e-9 * r['peak_memory_bytes'] for r in d['ranks'])" \
    "$TMP/auto.json"
check "fragmentation is the profile's fraction of the activations and workspace at the peak" \
    "all(abs(r['headroom']['fragmentation_bytes'] - $frag / (1 + $frag) * (r['peak_memory_bytes'] - r['peak_breakdown']['static_bytes'])) <= 1e-6 * r['peak_memory_bytes'] for r in d['ranks'])" \
    "$TMP/auto.json"

# 2. memory.headroom=none takes exactly those parts away.
expect_rc "memory.headroom=none" 0 "$BIN" run "$JOB" --set memory.headroom=none --format json
cp "$TMP/out" "$TMP/none.json"
peak_auto=$(field "$TMP/auto.json" "d['ranks'][0]['peak_memory_bytes']")
parts=$(field "$TMP/auto.json" "sum(d['ranks'][0]['headroom'].values())")
check "none: the peak less the context, NCCL and fragmentation" \
    "abs(d['ranks'][0]['peak_memory_bytes'] - ($peak_auto - $parts)) <= 1e-9 * $peak_auto and sum(d['ranks'][0]['headroom'].values()) == 0" \
    "$TMP/none.json"

# 3. The user sets the fragmentation and adds a margin.
expect_rc "memory.fragmentation=0.25" 0 "$BIN" run "$JOB" --set memory.fragmentation=0.25 --set memory.reserved=1GiB \
    --format json
peak_none=$(field "$TMP/none.json" "d['ranks'][0]['peak_memory_bytes']")
static_none=$(field "$TMP/none.json" "d['ranks'][0]['peak_breakdown']['static_bytes']")
check "fragmentation 0.25 of the live bytes, and the 1 GiB margin" \
    "abs(d['ranks'][0]['headroom']['fragmentation_bytes'] - 0.25 * ($peak_none - $static_none)) <= 1e-6 * $peak_none \
and d['ranks'][0]['headroom']['reserved_bytes'] == 2**30" "$TMP/out"

# 4. It decides OOM: a capacity between the two peaks fits only without it.
cap=$(python3 -c "print(int(($peak_none + $peak_auto) / 2))")
expect_rc "fits without the headroom" 0 "$BIN" run "$JOB" --set memory.headroom=none --set memory.capacity=$cap
expect_rc "out of memory with it" 3 "$BIN" run "$JOB" --set memory.capacity=$cap

# 5. Planners keep it free: the rematerialization ILP's plan fits the same
# capacity with the headroom counted (fragmentation included).
expect_rc "recompute=plan fits under the headroom" 0 "$BIN" run "$JOB" --set recompute=plan --set memory.capacity=$cap \
    --format json
check "the plan's peak is within capacity" "max(r['peak_memory_bytes'] for r in d['ranks']) <= $cap" "$TMP/out"

# 6. The text report: the made-of line and the headroom's parts.
expect_rc "text report" 0 "$BIN" run "$JOB"
if grep -q "made of .*+ headroom .* + activations" "$TMP/out" &&
   grep -q "headroom .*CUDA context .* + NCCL .*(4 communicators) + fragmentation .* + reserved" "$TMP/out"
then ok "text: headroom in the made-of line and its parts"
else not_ok "text: headroom in the made-of line and its parts" "$(grep -A1 'made of' "$TMP/out")"; fi

# 7. Measured times on the ideal network name no GPU type: only the margin,
# and the report says why.
expect_rc "profile workload on the ideal network" 0 "$BIN" run --set network=ideal --set memory.reserved=1GiB \
    --format json
check "no GPU type: only memory.reserved" \
    "d['memory_headroom']['gpu'] == '' and d['ranks'][0]['headroom']['reserved_bytes'] == 2**30 \
and d['ranks'][0]['headroom']['cuda_context_bytes'] == 0" "$TMP/out"

# 8. Bad values: exit 2 naming the key (and the file's line for a profile).
expect_rc "memory.headroom=maybe" 2 "$BIN" run "$JOB" --set memory.headroom=maybe
expect_err "names memory.headroom" "memory.headroom"
for bad in 1 1.5 -0.1 lots; do
    expect_rc "memory.fragmentation=$bad" 2 "$BIN" run "$JOB" --set memory.fragmentation=$bad
    expect_err "names memory.fragmentation ($bad)" "memory.fragmentation"
done
expect_rc "memory.fragmentation with memory.headroom=none warns" 0 "$BIN" run "$JOB" --set memory.headroom=none \
    --set memory.fragmentation=0.2
expect_err "says it does not apply" "memory.fragmentation.*memory.headroom=auto"
mkdir -p "$TMP/gpus"
sed '/^  fragmentation:/d' profiles/gpus/h100-sxm.yaml >"$TMP/gpus/half.yaml"
expect_rc "a profile with half a headroom block" 2 "$BIN" run "$JOB" --set cluster.gpu="$TMP/gpus/half.yaml"
expect_err "names the block, file and line" "half.yaml:[0-9]+.*memory_headroom.*fragmentation"
sed 's/^  fragmentation: {value: [0-9.e+-]*,/  fragmentation: {value: 1.5,/' profiles/gpus/h100-sxm.yaml >"$TMP/gpus/big.yaml"
expect_rc "a profile's fragmentation of 1.5" 2 "$BIN" run "$JOB" --set cluster.gpu="$TMP/gpus/big.yaml"
expect_err "names memory_headroom.fragmentation" "big.yaml:[0-9]+.*memory_headroom.fragmentation"

test_summary
