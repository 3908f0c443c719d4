#!/usr/bin/env bash
# models2026.sh: the config.json fields of 2026's models (GPT-OSS's sliding
# windows and attention sinks, Llama 4's interleaved MoE, Nemotron-H's hybrid
# Mamba-2 pattern, DeepSeek-V3's multi-token prediction, pipegrid's own
# per-layer letters): each shipped config runs, and every bad value of every
# new field exits 2 with a message naming the file, its line and the key.
# Ends with "models2026: N passed, M failed".
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" models2026
MODELS="$TEST_HERE/../profiles/models"
EXP="$TEST_HERE/../experiments/llama3-70b-h100.yaml"
cd "$TMP" || exit 1

# each shipped config of this work simulates (exit 0, or 3 when a layout the experiment
# fixes does not fit: the model is costed either way)
# (Nemotron-3 Nano's 2 query groups take tp 2)
for m in gpt-oss-120b gpt-oss-20b llama4-scout llama4-maverick nemotron-h-56b kimi-k2 nemotron3-nano; do
    tp=(); [ "$m" = nemotron3-nano ] && tp=(--set tp=2 --set dp=4)
    timeout "$COMMAND_TIMEOUT_S" "$BIN" run "$EXP" --set "workload=hf:$MODELS/$m.json" --set pp=2 \
        --set global_batch_size=16 "${tp[@]}" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" = 0 ] || [ "$rc" = 3 ]; then ok "$m runs (exit $rc)"; else not_ok "$m runs" "exit $rc: $(head -c 400 "$TMP/err")"; fi
done

# bad BASE KEY VALUE WORDS: BASE's config with KEY set to VALUE (JSON; DELETE removes it) exits 2
# naming bad.json, KEY's line and KEY, and saying WORDS
bad() {
    local base=$1 key=$2 value=$3 words=$4 named=${5:-$2}
    python3 - "$MODELS/$base.json" "$key" "$value" >"$TMP/bad.json" <<'PY'
import json, sys
path, key, value = sys.argv[1:4]
d = json.load(open(path))
if value == "DELETE":
    del d[key]
else:
    d[key] = json.loads(value)
print(json.dumps(d, indent=2))
PY
    expect_rc "$base: $key = $value exits 2" 2 "$BIN" run "$EXP" --set "workload=hf:$TMP/bad.json"
    local line where
    line=$(grep -n "\"$named\":" "$TMP/bad.json" | head -1 | cut -d: -f1)
    where="bad.json:${line:-[0-9]+}: key"
    [ -z "$line" ] && where="bad.json: key"   # a missing key has no line
    expect_err "$base: $key = $value names the file, line and key" "$where '$named'"
    expect_err "$base: $key = $value says '$words'" "$words"
}

# sliding windows
bad gpt-oss-120b sliding_window 0 "at least 1"
bad gpt-oss-120b sliding_window '"128"' "must be an integer"
bad gpt-oss-120b sliding_window DELETE "sliding_attention layers" sliding_window
bad gpt-oss-120b layer_types '"sliding_attention"' "must be a list"
bad gpt-oss-120b layer_types '["sliding_attention", "full_attention"]' "2 entries for 36 layers"
bad gpt-oss-20b layer_types "$(python3 -c 'import json; print(json.dumps(["chunked_attention"] * 24))')" "item 0"
bad gpt-oss-120b use_sliding_window '"no"' "true or false"
bad gpt-oss-120b attention_sinks 1 "true or false"
# Llama 4's alternating MoE
bad llama4-maverick interleave_moe_layer_step 0 "at least 1"
bad llama4-maverick interleave_moe_layer_step 49 "leaves none"
bad llama4-maverick decoder_sparse_step 2 "once" interleave_moe_layer_step
bad llama4-maverick intermediate_size_mlp 0 "at least 1"
bad llama4-maverick mlp_only_layers '[0, 48]' "not a layer index"
bad deepseek-v3 moe_layer_freq 0 "at least 1"
bad deepseek-v3 moe_layer_freq 62 "exceeds the 61 layers"
# Nemotron-H's hybrid pattern and Mamba-2 sizes
bad nemotron-h-56b hybrid_override_pattern '"M-M*"' "4 letters for 118 layers"
bad nemotron-h-56b hybrid_override_pattern "\"$(python3 -c 'print("X" + "M-" * 58 + "*")')\"" "letter 'X'"
bad nemotron-h-56b hybrid_override_pattern "\"$(python3 -c 'print("E" + "M-" * 58 + "*")')\"" "need experts"
bad nemotron-h-56b hybrid_override_pattern 7 "must be a string"
bad nemotron-h-56b mamba_num_heads DELETE "missing" mamba_num_heads
bad nemotron-h-56b mamba_num_heads 0 "at least 1"
bad nemotron-h-56b mamba_head_dim 100000 "more than any model"
bad nemotron-h-56b ssm_state_size 0 "at least 1"
bad nemotron-h-56b n_groups 7 "do not divide the 256 Mamba heads"
bad nemotron-h-56b conv_kernel -1 "at least 1"
bad nemotron-h-56b chunk_size '"128"' "must be an integer"
bad nemotron-h-56b mlp_hidden_act '"tanh"' "unknown activation"
bad nemotron-h-56b layer_types '["full_attention"]' "1 entries for 118 layers"
# multi-token prediction
bad deepseek-v3 num_nextn_predict_layers -1 "at least 0"
bad deepseek-v3 num_nextn_predict_layers 1.5 "must be an integer"
# pipegrid's own per-layer letters (what validate --emit writes)
bad gpt-oss-20b layer_mixers '"AS"' "24 letters of ASM-"
bad gpt-oss-20b layer_ffns "\"$(python3 -c 'print("Z" * 24)')\"" "24 letters of DE-"

# ---- Megatron's selective recomputation modules (recompute.modules) and moe.probs ----
# A small DeepSeek-shaped model (MLA, one dense layer, then MoE), two stages.
cat >"$TMP/mla.json" <<'JSON'
{"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "first_k_dense_replace": 1,
 "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 2048, "kv_lora_rank": 128,
 "moe_intermediate_size": 512, "n_routed_experts": 8, "n_shared_experts": 1, "num_attention_heads": 8,
 "num_experts_per_tok": 2, "num_hidden_layers": 4, "num_key_value_heads": 8, "q_lora_rank": 256,
 "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64, "vocab_size": 32000, "tie_word_embeddings": false}
JSON
MLA=(run --set "workload=hf:$TMP/mla.json" --set gpt.seq=2048 --set pp=2 --set network=cluster)
bad_key() {   # bad_key NAME KEY WORDS SETTINGS...: exit 2, the message names KEY and says WORDS
    local name=$1 key=$2 words=$3
    shift 3
    expect_rc "$name: exit 2" 2 "$BIN" "${MLA[@]}" "$@"
    expect_err "$name: names $key" "key '$key'.*$words"
}
bad_key "a module Megatron has and pipegrid does not model" recompute.modules "a comma-separated list of core_attn" \
    --set recompute=selective --set recompute.modules=shared_experts
bad_key "an empty module" recompute.modules "an empty word" --set recompute=selective --set recompute.modules=mla_up_proj,
# (a key that does not apply is a warning, as every such key)
expect_rc "modules without selective recomputation run" 0 "$BIN" "${MLA[@]}" --set recompute.modules=mla_up_proj
expect_err "modules without selective recomputation: warned" \
    "warning: --set: key 'recompute.modules': ignored: applies only with recompute=selective or recompute=plan"
bad_key "an unknown place for the router's probabilities" moe.probs "one of activation, combine" --set moe.probs=outputs
# each module recomputes something: less memory at the peak, more time, in the order of what it frees;
# moe.probs=combine keeps the experts' outputs: more memory, the same time
peak_and_time() {   # peak_and_time SETTINGS...: "PEAK_BYTES ITERATION_S", or "fail"
    timeout "$COMMAND_TIMEOUT_S" "$BIN" "${MLA[@]}" "$@" --format json >"$TMP/m.json" 2>"$TMP/err" &&
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["max_peak_memory_bytes"], d["iteration_seconds"])' \
            "$TMP/m.json" || echo fail
}
read -r none_b none_s <<<"$(peak_and_time --set recompute=none)"
read -r up_b up_s <<<"$(peak_and_time --set recompute=selective --set recompute.modules=mla_up_proj)"
read -r all_b all_s <<<"$(peak_and_time --set recompute=selective --set recompute.modules=mla_up_proj,moe_act,layernorm,mlp)"
read -r comb_b comb_s <<<"$(peak_and_time --set moe.probs=combine)"
if python3 -c "import sys; a=list(map(float, sys.argv[1:])); sys.exit(not (a[2] < a[0] and a[4] < a[2] and a[3] > a[1] and a[5] > a[3]))" \
    "$none_b" "$none_s" "$up_b" "$up_s" "$all_b" "$all_s" 2>/dev/null
then ok "recompute.modules: each module frees memory and costs time"
else not_ok "recompute.modules: each module frees memory and costs time" "$none_b $none_s / $up_b $up_s / $all_b $all_s"; fi
if python3 -c "import sys; a=list(map(float, sys.argv[1:])); sys.exit(not (a[2] > a[0] and a[3] == a[1]))" \
    "$none_b" "$none_s" "$comb_b" "$comb_s" 2>/dev/null
then ok "moe.probs=combine keeps the experts' outputs: more memory, the same time"
else not_ok "moe.probs=combine keeps the experts' outputs" "$none_b $none_s / $comb_b $comb_s"; fi
timeout "$COMMAND_TIMEOUT_S" "$BIN" "${MLA[@]}" --set recompute=selective --set recompute.modules=mla_up_proj,moe_act \
    >"$TMP/out" 2>"$TMP/err"
if grep -q "^policies   recompute selective (mla_up_proj,moe_act)," "$TMP/out"
then ok "the report names the modules"; else not_ok "the report names the modules" "$(grep policies "$TMP/out")"; fi

test_summary
