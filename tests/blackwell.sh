#!/usr/bin/env bash
# blackwell.sh: the Blackwell systems (b300, gb200, gb300), rack-scale NVLink
# domains (cluster.nvlink_domain, cluster.oversubscription), the precision
# recipes (mxfp8, fp8-block, nvfp4) and the Megatron-Bridge rows they let
# validate predict (docs/blackwell.md).
#   - every bad value of a new key exits 2 naming the key;
#   - the same data-parallel job on a GB200 rack (one NVLink domain of 72)
#     reduces its gradients faster than on 8-GPU domains, and slower again
#     when the fabric above the domains is oversubscribed;
#   - the recipes' order on GB200: nvfp4 < fp8 < bf16, and MXFP8 / blockwise
#     FP8 a little above per-tensor FP8 (their scales);
#   - validate predicts the DGX-GB200 / GB300 / B300 rows and the NVFP4 rows
#     (no row skipped for its GPU type or its precision), each row run as the
#     recipe it names, a GB row in its 64-GPU NVLink domain.
# Ends with "blackwell: N passed, M failed".
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" blackwell
S="$TEST_HERE/../data/validation/modern/mbridge_perf_summary.csv"
cd "$TMP" || exit 1

# ---- bad values exit 2 and name the key ----
bad() {   # bad NAME KEY SETTINGS...: exit 2, the message names KEY
    local name=$1 key=$2
    shift 2
    expect_rc "$name: exit 2" 2 "$BIN" run --set network=cluster "$@"
    expect_err "$name: names $key" "key '$key'"
}
bad "a domain neither whole nodes nor a node's divisor" cluster.nvlink_domain --set cluster.gpu=gb200 \
    --set cluster.nvlink_domain=5
bad "a negative domain" cluster.nvlink_domain --set cluster.nvlink_domain=-1
bad "a domain that is no number" cluster.nvlink_domain --set cluster.nvlink_domain=rack
bad "an oversubscription below 1" cluster.oversubscription --set cluster.oversubscription=0.5
bad "an oversubscription that is no number" cluster.oversubscription --set cluster.oversubscription=x
bad "an unknown recipe" precision --set precision=fp4
M="--set workload=gpt --set gpt.layers=4 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024 --set pp=2"
# shellcheck disable=SC2086
bad "nvfp4 on a GPU without FP4 tensor cores" precision --set cluster.gpu=h100-sxm --set precision=nvfp4 $M
expect_err "nvfp4 on H100: says why" "FP4 tensor cores"
# shellcheck disable=SC2086
bad "mxfp8 on a GPU without FP8 tensor cores" precision --set cluster.gpu=a100-80g --set precision=mxfp8 $M
# shellcheck disable=SC2086
bad "a measured host link where none is published (NVLink-C2C)" cluster.host_link --set cluster.gpu=gb200 \
    --set cluster.host_link=measured $M
expect_rc "cluster.nvlink_domain outside network=cluster: a warning, not an error" 0 "$BIN" run \
    --set cluster.nvlink_domain=8
expect_err "the warning names the key" "cluster.nvlink_domain.*network=cluster"

# ---- the same job on 72-GPU and 8-GPU NVLink domains ----
J="--set network=cluster --set cluster.gpu=gb200 --set cluster.nodes=2 --set workload=gpt --set gpt.layers=8
   --set gpt.hidden=2048 --set gpt.heads=16 --set gpt.seq=2048 --set micro_batch_size=1 --set global_batch_size=64
   --set tp=1 --set pp=1 --set dp=16 --format json"
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, d))' "$TMP/out" "$1"; }
# shellcheck disable=SC2086
expect_rc "dp 16 on one GB200 rack" 0 "$BIN" run $J
rack=$(field "iteration['dp_allreduce_busy_seconds']")
# shellcheck disable=SC2086
expect_rc "dp 16 on GB200 in 8-GPU domains" 0 "$BIN" run $J --set cluster.nvlink_domain=8
nodes8=$(field "iteration['dp_allreduce_busy_seconds']")
# shellcheck disable=SC2086
expect_rc "dp 16 in 8-GPU domains under a 4:1 oversubscribed spine" 0 "$BIN" run $J --set cluster.nvlink_domain=8 \
    --set cluster.oversubscription=4
over=$(field "iteration['dp_allreduce_busy_seconds']")
if python3 -c 'import sys; a, b, c = map(float, sys.argv[1:]); sys.exit(not (0 < a < b < c))' "$rack" "$nodes8" "$over"
then ok "gradient all-reduce: rack $rack s < 8-GPU domains $nodes8 s < oversubscribed $over s"
else not_ok "gradient all-reduce: rack < 8-GPU domains < oversubscribed" "$rack, $nodes8, $over"; fi

# ---- the recipes on GB200 ----
R="--set network=cluster --set cluster.gpu=gb200 --set workload=gpt --set gpt.layers=8 --set gpt.hidden=4096
   --set gpt.heads=32 --set gpt.seq=4096 --set micro_batch_size=1 --set global_batch_size=16 --set tp=2 --set pp=4
   --format json"
declare -A T
for p in bf16 fp8 mxfp8 fp8-block nvfp4; do
    # shellcheck disable=SC2086
    expect_rc "precision=$p on gb200" 0 "$BIN" run $R --set precision=$p
    T[$p]=$(field "iteration_seconds")
done
if python3 -c 'import sys; n, f, b = map(float, sys.argv[1:]); sys.exit(not (n < f < b))' "${T[nvfp4]}" "${T[fp8]}" \
    "${T[bf16]}"; then ok "nvfp4 ${T[nvfp4]} s < fp8 ${T[fp8]} s < bf16 ${T[bf16]} s"
else not_ok "nvfp4 < fp8 < bf16" "${T[nvfp4]} ${T[fp8]} ${T[bf16]}"; fi
if python3 -c 'import sys; f, m, k = map(float, sys.argv[1:]); sys.exit(not (f < m and f < k))' "${T[fp8]}" \
    "${T[mxfp8]}" "${T[fp8-block]}"; then ok "block-scaled FP8 pays for its scales: mxfp8 ${T[mxfp8]} s, fp8-block ${T[fp8-block]} s > fp8"
else not_ok "block-scaled FP8 above per-tensor FP8" "${T[fp8]} ${T[mxfp8]} ${T[fp8-block]}"; fi

# ---- validate: the Blackwell rows ----
for g in b300 gb200 gb300; do
    expect_rc "validate predicts the $g rows" 0 "$BIN" validate "$S" --surrogate --gpu "$g" --format csv
    cp "$TMP/out" "$g.csv"
    n=$(($(wc -l <"$g.csv") - 1))
    if [ "$n" -gt 0 ]; then ok "$g: $n rows predicted"; else not_ok "$g: rows predicted" "$(head -3 "$g.csv")"; fi
done
expect_rc "validate's skip list" 0 "$BIN" validate "$S" --surrogate --gpu gb200
if ! grep -Eq "no profile in profiles/gpus|no FP4 rate" "$TMP/out"; then
    ok "no row skipped for its GPU type or its FP4 precision"
else not_ok "no row skipped for its GPU type or its FP4 precision" "$(grep -E 'no profile|FP4' "$TMP/out")"; fi
if grep -q "NVFP4" gb200.csv && grep -q "NVFP4" gb300.csv; then ok "NVFP4 rows predicted"
else not_ok "NVFP4 rows predicted"; fi
expect_rc "validate --emit the GB200 rows" 0 "$BIN" validate "$S" --surrogate --gpu gb200 --emit "$TMP/emit"
# a row's recipe and NVLink domain as it ran: every emitted row whose label names the precision
every_row() {   # every_row NAME LABEL PATTERN: each emitted experiment whose header has LABEL matches PATTERN
    local files n=0 bad=""
    files=$(grep -l -- "$2" "$TMP"/emit/*.yaml)
    for f in $files; do
        n=$((n + 1))
        grep -Eq "$3" "$f" || bad="$bad $(basename "$f")"
    done
    if [ "$n" -gt 0 ] && [ -z "$bad" ]; then ok "$1 ($n rows)"; else not_ok "$1" "$n rows; not:$bad"; fi
}
every_row "the NVFP4 rows run the nvfp4 recipe" "| NVFP4 " "^precision: nvfp4$"
every_row "the MXFP8 rows run the mxfp8 recipe" "| MXFP8 " "^precision: mxfp8$"
every_row "the FP8-CS rows run per-tensor FP8" "| FP8-CS " "^precision: fp8$"
every_row "the BF16 rows run bf16" "| BF16 " "^precision: bf16$"
every_row "the GB200 rows run in 64-GPU NVLink domains" "DGX-GB200" "^cluster.nvlink_domain: 64$"
# the recipe's selective recomputation (rows.c RECOMPUTE_RECIPES): GPT-OSS on GB200 recomputes its MoE
# layers' norm and its experts' activation (not the rows that run the combined 1F1B, which the simulator
# cannot run with recomputation); Megatron-Core of 2025-26 weighs the experts' activation (moe.probs's default)
every_row "the GPT-OSS rows recompute layernorm and moe_act" "GPT OSS 120B | DGX-GB200 | BF16 pretrain @ 2[56].[01][12]" \
    "^recompute.modules: layernorm,moe_act$"
if grep -q "^moe.probs" "$TMP"/emit/*.yaml; then not_ok "no Megatron-Bridge row keeps the experts' outputs"
else ok "no Megatron-Bridge row keeps the experts' outputs"; fi
# memory.fp8_params: the distributed optimizer all-gathers one byte a weight instead of two (less time), and
# each GPU keeps one byte less per weight (its static memory, here 4 layers of h 1024 over pp 2)
W=(run --set workload=gpt --set gpt.layers=4 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024 --set pp=2
   --set dp=4 --set memory.zero1=true --set network=cluster --set precision=fp8 --format json)
gather_and_static() {   # "ALLGATHER_S STATIC_BYTES" of rank 0
    "$BIN" "${W[@]}" "$@" | python3 -c 'import json,sys; d=json.load(sys.stdin)
print(d["iteration"]["dp_param_allgather_seconds"], d["ranks"][0]["peak_breakdown"]["static_bytes"])'
}
read -r g16 s16 <<<"$(gather_and_static)"
read -r g8 s8 <<<"$(gather_and_static --set memory.fp8_params=true)"
if python3 -c "import sys; g16, s16, g8, s8 = map(float, sys.argv[1:]); sys.exit(not (g8 < g16 and s8 < s16))" \
    "$g16" "$s16" "$g8" "$s8" 2>/dev/null; then ok "memory.fp8_params: a faster all-gather, less static memory"
else not_ok "memory.fp8_params: a faster all-gather, less static memory" "$g16 $s16 / $g8 $s8"; fi
# the per-tensor and MXFP8 recipes keep FP8 weights (fp8_param_gather), the NVFP4 and BF16 ones do not
every_row "the MXFP8 rows keep FP8 weights" "| MXFP8 " "^memory.fp8_params: true$"
every_row "the FP8-CS rows keep FP8 weights" "| FP8-CS " "^memory.fp8_params: true$"
if grep -l -- "| NVFP4 \|| BF16 " "$TMP"/emit/*.yaml | xargs grep -l "^memory.fp8_params" >/dev/null 2>&1
then not_ok "no NVFP4 or BF16 row keeps FP8 weights"; else ok "no NVFP4 or BF16 row keeps FP8 weights"; fi
one=$(grep -l -- "LLAMA.*| MXFP8 " "$TMP"/emit/*.yaml | head -1)
expect_rc "an emitted GB200 row runs" 0 "$BIN" run "$one" --format json
# (one model: the simulator and the surrogate agree on every GB200 and GB300 row: tests/parity.sh)
# a job that fills its last NVLink domain only in part is warned, and still runs (with full offload, as the
# README's GB200 example, so that it fits)
expect_rc "256 GPUs on 72-GPU racks" 0 "$BIN" run "$TEST_HERE/../experiments/deepseek-v3-256.yaml" --set cluster.gpu=gb200 \
    --set cluster.gpus_per_node=4 --set cluster.nodes=64 --set global_batch_size=512 --set offload=full
if grep -q "warning: cluster.nvlink_domain: the job's 256 GPUs fill 3 NVLink domains of 72 and 40 GPUs of another" "$TMP/err"
then ok "a partly used last NVLink domain is warned about"
else not_ok "a partly used last NVLink domain is warned about" "$(grep warning "$TMP/err")"; fi
expect_rc "256 GPUs on 64-GPU domains" 0 "$BIN" run "$TEST_HERE/../experiments/deepseek-v3-256.yaml" --set cluster.gpu=gb200 \
    --set cluster.gpus_per_node=4 --set cluster.nodes=64 --set cluster.nvlink_domain=64 --set global_batch_size=512 \
    --set offload=full
if ! grep -q "nvlink_domain" "$TMP/err"; then ok "whole domains: no warning"
else not_ok "whole domains: no warning" "$(grep warning "$TMP/err")"; fi
test_summary
