#!/bin/bash
# fsdp.sh: data-parallel sharding (dp.sharding, dp.shard_group; model/memory.h,
# src/sim/gradsync.c, the surrogate in src/calib/itermodel.c):
#   - bad values exit 2 naming the key (and, in a file, the file and line);
#   - memory.zero1=true is dp.sharding=optimizer: the same report;
#   - static memory falls mode by mode (none > optimizer > gradients > full)
#     and HSDP's smaller shard group holds more than full sharding over dp;
#   - FSDP and HSDP on a symmetric cluster: one replica simulated for all
#     gives the full simulation's report (the shard and cross-group rings'
#     mirrors);
#   - the Megatron-Bridge summary's FSDP rows are FSDP experiments (validate
#     --emit: dp.sharding=full with their sharding group) and the simulator
#     and the surrogate agree on them within 2 % (tests/parity.sh's bound).
#   tests/fsdp.sh [BIN]
. "$(dirname "$0")/lib.sh" fsdp
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
DATA="$TEST_HERE/../data/validation"

GPT=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024
     --set network=cluster --set cluster.nodes=16 --set tp=8 --set pp=2 --set dp=4 --format json)

# ---- bad values: exit 2 naming the key ----
expect_rc "dp.sharding=zero3 is refused" 2 "$BIN" run --set dp.sharding=zero3
expect_err "... naming dp.sharding and its values" "key 'dp.sharding'.*none, optimizer, gradients, full"
expect_rc "dp.shard_group=0 is refused" 2 "$BIN" run --set dp.sharding=full --set dp.shard_group=0
expect_err "... naming dp.shard_group" "key 'dp.shard_group'"
expect_rc "a shard group that does not divide dp is refused" 2 "$BIN" run --set dp=8 --set dp.sharding=full \
    --set dp.shard_group=3
expect_err "... naming dp.shard_group and dp" "key 'dp.shard_group': 3 does not divide dp = 8"
expect_rc "HSDP groups without gradient or parameter sharding are refused" 2 "$BIN" run --set dp=8 \
    --set dp.sharding=optimizer --set dp.shard_group=4
expect_err "... naming dp.shard_group" "key 'dp.shard_group': 4 with dp.sharding=optimizer"
expect_rc "memory.zero1=true contradicting dp.sharding is refused" 2 "$BIN" run --set memory.zero1=true \
    --set dp.sharding=full
expect_err "... naming dp.sharding" "key 'dp.sharding': contradicts memory.zero1=true"
printf 'name: bad\ndp: 8\ndp.sharding: full\ndp.shard_group: 5\n' > "$TMP/bad.yaml"
expect_rc "a bad shard group in a file is refused" 2 "$BIN" run "$TMP/bad.yaml"
expect_err "... naming the file, the line and the key" "bad.yaml:4: key 'dp.shard_group'"

# ---- memory.zero1 is dp.sharding=optimizer ----
expect_rc "memory.zero1=true runs" 0 "$BIN" run "${GPT[@]}" --set memory.zero1=true
cp "$TMP/out" "$TMP/zero1.json"
expect_rc "dp.sharding=optimizer runs" 0 "$BIN" run "${GPT[@]}" --set dp.sharding=optimizer
# the same report but the simulator's own counters (its wall time)
if python3 -c 'import json,sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); a.pop("simulator"); b.pop("simulator"); sys.exit(a != b)' \
    "$TMP/zero1.json" "$TMP/out"; then ok "memory.zero1=true and dp.sharding=optimizer: the same report"
else not_ok "memory.zero1=true and dp.sharding=optimizer: the same report"; fi

# ---- static memory per mode ----
static_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"][0]["peak_breakdown"]["static_bytes"])' "$1"; }
for mode in none optimizer gradients full; do
    expect_rc "dp.sharding=$mode runs" 0 "$BIN" run "${GPT[@]}" --set dp.sharding=$mode
    eval "static_$mode=$(static_of "$TMP/out")"
done
expect_rc "HSDP (full, shard groups of 2) runs" 0 "$BIN" run "${GPT[@]}" --set dp.sharding=full --set dp.shard_group=2
static_hsdp=$(static_of "$TMP/out")
if python3 -c 'import sys; a = [float(x) for x in sys.argv[1:]]; sys.exit(not (a[0] > a[1] > a[2] > a[3] and a[4] > a[3]))' \
    "$static_none" "$static_optimizer" "$static_gradients" "$static_full" "$static_hsdp"; then
    ok "static memory: none > optimizer > gradients > full, HSDP above full"
else not_ok "static memory: none > optimizer > gradients > full, HSDP above full" \
    "$static_none $static_optimizer $static_gradients $static_full $static_hsdp"; fi

# ---- one replica for all: the same report (the mirror of the shard and cross-group rings) ----
same_replicas() {
    local name=$1
    shift
    expect_rc "$name: dp.replicas=auto" 0 "$BIN" run "${GPT[@]}" "$@"
    cp "$TMP/out" "$TMP/auto.json"
    expect_rc "$name: dp.replicas=all" 0 "$BIN" run "${GPT[@]}" --set dp.replicas=all "$@"
    if python3 - "$TMP/auto.json" "$TMP/out" >"$TMP/cmp" 2>&1 <<'PY'; then
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sa, sb = a.pop("simulator"), b.pop("simulator")
assert sa["replicas_simulated"] == 1 and sb["replicas_simulated"] == 4, (sa, sb)
assert a["iteration"]["dp_param_allgather_seconds"] > 0, a["iteration"]
for key in ("makespan", "iteration_seconds", "max_peak_memory_bytes"):
    x, y = a[key], b[key]
    assert abs(x - y) <= 1e-9 * max(abs(x), abs(y)), (key, x, y)
for key, x in a["iteration"].items():
    y = b["iteration"][key]
    assert abs(x - y) <= 1e-9 * max(abs(x), abs(y)), (key, x, y)
PY
        ok "$name: one replica simulated gives every replica's report"
    else not_ok "$name: one replica simulated gives every replica's report" "$(tail -3 "$TMP/cmp")"; fi
}
same_replicas "FSDP" --set dp.sharding=full
same_replicas "HSDP" --set dp.sharding=full --set dp.shard_group=2
same_replicas "ZeRO-2" --set dp.sharding=gradients

# ---- the summary's FSDP rows ----
S="$DATA/modern/mbridge_perf_summary.csv"
expect_rc "validate --emit the Megatron-Bridge summary on H100" 0 "$BIN" validate "$S" --gpu h100-sxm --format csv \
    --emit "$TMP/emit"
cp "$TMP/out" "$TMP/mbridge.csv"
# the FSDP rows of the file on H100: its fsdp column > 0 (line numbers of the shipped file, which $S keeps)
fsdp_lines=$(python3 - "$DATA/modern/mbridge_perf_summary.csv" <<'PY'
import csv, sys
rows = csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))
print(" ".join(str(i + 4) for i, r in enumerate(rows) if r["fsdp"] not in ("", "0") and r["gpu_type"] == "DGX-H100"))
PY
)
n=0 bad=""
for line in $fsdp_lines; do
    y="$TMP/emit/mbridge_perf_summary-line-$line.yaml"
    n=$((n + 1))
    grep -q '^dp.sharding: full$' "$y" && grep -q '^dp.shard_group: 8$' "$y" && ! grep -q '^memory.zero1' "$y" || bad="$bad $line"
done
if [ "$n" -gt 0 ] && [ -z "$bad" ]; then ok "the $n FSDP rows on H100 are dp.sharding=full with their sharding group"
else not_ok "the FSDP rows on H100 are dp.sharding=full with their sharding group" "rows: '$fsdp_lines' bad:$bad"; fi
if grep -q '^memory.zero1: true$' "$TMP/emit/mbridge_perf_summary-line-42.yaml"; then
    ok "a row without FSDP keeps the distributed optimizer"
else not_ok "a row without FSDP keeps the distributed optimizer"; fi
if python3 - "$TMP/mbridge.csv" $fsdp_lines <<'PY'; then
import csv, sys
want = set(sys.argv[2:])
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["line"] in want]
assert len(rows) == len(want) > 0, (len(rows), want)
for r in rows:
    assert abs(float(r["sim_surrogate_gap"])) <= 0.02, (r["line"], r["sim_surrogate_gap"])
PY
    ok "simulator and surrogate within 2 % on the FSDP rows"
else not_ok "simulator and surrogate within 2 % on the FSDP rows"; fi

test_summary
