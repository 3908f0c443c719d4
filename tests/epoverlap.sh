#!/bin/bash
# epoverlap.sh: ep.overlap, Megatron-Core's combined 1F1B
# (--overlap-moe-expert-parallel-comm): each steady-state forward and the
# backward after it run as one step, their expert-parallel all-to-alls under
# their computes (issue 32: Megatron-Bridge's Qwen3-235B H100 recipe runs it,
# and the rows were predicted +64-75 % without it).
#  1. where Megatron-Core has it (interleaved, or 1f1b with pp = 1; not with
#     recompute=full), else exit 2 naming ep.overlap; ignored with ep = 1;
#  2. it hides all-to-all time: the iteration is shorter than without, by no
#     more than the all-to-alls there were to hide;
#  3. the replay without actors gives the actor replay's report;
#  4. the rows whose recipe runs it (rows.c A2A_OVERLAP_RECIPES) carry it in
#     their experiment, the others do not, and the surrogate stays within 2 %
#     of the simulation on such rows.
#   tests/epoverlap.sh [BIN]
. "$(dirname "$0")/lib.sh" epoverlap
BIN=${1:-src/pipegrid}
MOE=(run --set workload=hf:profiles/models/qwen-moe-a2.7b.json --set gpt.seq=2048 --set network=cluster
     --set cluster.gpu=h100-sxm --set cluster.gpus_per_node=2 --set cluster.nodes=8 --set tp=2 --set dp=4 --set ep=4
     --set etp=1 --set tp.sequence_parallel=true --set memory.headroom=none --set memory.capacity=1TiB --format json)
IL=(--set schedule=interleaved --set pp=2 --set chunks=2 --set microbatches=8)

field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# 1. Where it applies.
expect_rc "ep.overlap=true, interleaved" 0 "$BIN" "${MOE[@]}" "${IL[@]}" --set ep.overlap=true
cp "$TMP/out" "$TMP/on.json"
cp "$TMP/err" "$TMP/on.err"
# under a memory plan the combined steps run in order (expert.c): run says so, and only then
expect_rc "ep.overlap=true with offload=full (a memory plan) runs" 0 "$BIN" "${MOE[@]}" "${IL[@]}" \
    --set ep.overlap=true --set offload=full
expect_err "... saying its combined steps run in order" "warning: ep.overlap's combined steps run in order under the memory plan"
if grep -q "run in order" "$TMP/on.err"; then not_ok "no such warning without a memory plan" "$(cat "$TMP/on.err")"
else ok "no such warning without a memory plan"; fi
# selective recomputation runs inside each backward (job.h job_selective_in_backward), as Megatron-Core runs its
# recompute modules inside the combined steps: no plan, the steps combined, the stage's modules' bytes not kept
# (the legacy attention's scores here) and their recomputation in the backward's time
expect_rc "ep.overlap=true with recompute=selective runs" 0 "$BIN" "${MOE[@]}" "${IL[@]}" --set ep.overlap=true \
    --set recompute=selective --set attention=legacy
cp "$TMP/out" "$TMP/sel.json"
if grep -q "run in order" "$TMP/err"; then not_ok "... its combined steps combined" "$(cat "$TMP/err")"
else ok "... its combined steps combined"; fi
expect_rc "the same without recomputation" 0 "$BIN" "${MOE[@]}" "${IL[@]}" --set ep.overlap=true --set attention=legacy
if python3 -c "
import json, sys
s, n = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if s['max_peak_memory_bytes'] < n['max_peak_memory_bytes'] and s['makespan'] > n['makespan'] else 1)" \
    "$TMP/sel.json" "$TMP/out"; then ok "... keeping less and taking longer than without"
else not_ok "... keeping less and taking longer than without"; fi
expect_rc "ep.overlap=true, 1f1b with pp = 1" 0 "$BIN" "${MOE[@]}" --set pp=1 --set microbatches=4 --set ep.overlap=true
expect_rc "ep.overlap=true, 1f1b with pp = 2" 2 "$BIN" "${MOE[@]}" --set pp=2 --set microbatches=4 --set ep.overlap=true
expect_err "names ep.overlap and the interleaved schedule" "ep.overlap.*interleaved"
expect_rc "ep.overlap=true, gpipe" 2 "$BIN" "${MOE[@]}" --set pp=2 --set microbatches=4 --set schedule=gpipe \
    --set ep.overlap=true
expect_err "names ep.overlap and the schedules that have it" "ep.overlap.*1f1b or interleaved"
expect_rc "ep.overlap=true, recompute=full" 2 "$BIN" "${MOE[@]}" "${IL[@]}" --set recompute=full --set ep.overlap=true
expect_err "names ep.overlap and recompute" "ep.overlap.*recompute=full"
expect_rc "ep.overlap=maybe" 2 "$BIN" "${MOE[@]}" "${IL[@]}" --set ep.overlap=maybe
expect_err "names ep.overlap" "ep.overlap"
expect_rc "ep.overlap=true with ep = 1 runs" 0 "$BIN" "${MOE[@]}" "${IL[@]}" --set ep=1 --set ep.overlap=true
expect_err "and says it is ignored" "ep.overlap.*ignored"

# 2. It hides all-to-all time, and no more than there was.
expect_rc "ep.overlap=false, interleaved" 0 "$BIN" "${MOE[@]}" "${IL[@]}" --set ep.overlap=false
cp "$TMP/out" "$TMP/off.json"
off=$(field "$TMP/off.json" "d['iteration_seconds']")
a2a=$(field "$TMP/off.json" "d['iteration']['ep_alltoall_seconds']")
on=$(field "$TMP/on.json" "d['iteration_seconds']")
if python3 -c "import sys; off, on, a2a = map(float, sys.argv[1:]); sys.exit(0 if on < off * 0.99 and off - on <= a2a else 1)" \
    "$off" "$on" "$a2a"; then ok "the combined steps hide all-to-all time ($off s -> $on s, $a2a s of all-to-alls)"
else not_ok "the combined steps hide all-to-all time" "off $off s, on $on s, all-to-alls $a2a s"; fi

# 3. Both engines, the same report.
expect_rc "ep.overlap, sim.engine=actors" 0 "$BIN" "${MOE[@]}" "${IL[@]}" --set ep.overlap=true --set sim.engine=actors
if PYTHONPATH="$TEST_HERE" python3 - "$TMP/on.json" "$TMP/out" >"$TMP/cmp" 2>&1 <<'PY'
import json, sys
from report_close import differences
a, b = (json.load(open(p)) for p in sys.argv[1:3])
sa, sb = a.pop("simulator"), b.pop("simulator")
assert (sa["engine"], sb["engine"]) == ("without actors", "actors"), (sa["engine"], sb["engine"])
assert sa["events"] == sb["events"], (sa["events"], sb["events"])
bad = differences(a, b)
assert not bad, bad[:6]
PY
then ok "without actors: the actor replay's report to 1e-9"
else not_ok "without actors: the actor replay's report to 1e-9" "$(tail -c 600 "$TMP/cmp")"; fi

# 4. The rows: Qwen3-235B on H100 from 25.11 on runs it (its recipe), the 25.09 row does not; the
# surrogate within 2 % of the simulation on the GB200 rows that run it (Qwen3-30B, 8 GPUs, pp 1).
S="$TEST_HERE/../data/validation/modern"
expect_rc "validate --surrogate --emit the H100 rows" 0 "$BIN" validate "$S/mbridge_perf_summary.csv" --gpu h100-sxm \
    --surrogate --emit "$TMP/h100"
q=$(grep -l "qwen3-235b\|Qwen3_235B" "$TMP"/h100/*.yaml | xargs grep -l "@ 26.04.01" | head -1)
q09=$(grep -l "Qwen3_235B_a22B (tokendrop)" "$TMP"/h100/*.yaml | head -1)
if [ -n "$q" ] && grep -q "^ep.overlap: true" "$q" && [ -n "$q09" ] && ! grep -q "^ep.overlap" "$q09"; then
    ok "Qwen3-235B's 26.04.01 H100 row runs ep.overlap, its 25.09 row does not"
else not_ok "Qwen3-235B's 26.04.01 H100 row runs ep.overlap, its 25.09 row does not" "$q / $q09"; fi
mkdir -p "$TMP/gb"
cp "$S/models.csv" "$S/regressions.csv" "$TMP/gb/"
awk -F, 'NR <= 3 || (/DGX-GB200/ && /qwen3-30b-a3b/ && ($2 == "26.06" || $2 == "26.06.01"))' "$S/mbridge_perf_summary.csv" \
    >"$TMP/gb/mbridge_perf_summary.csv"
expect_rc "validate the GB200 Qwen3-30B rows of 26.06 with the simulator" 0 "$BIN" validate \
    "$TMP/gb/mbridge_perf_summary.csv" --gpu gb200 --format csv --emit "$TMP/gbemit"
cp "$TMP/out" "$TMP/gb.csv"
if [ "$(grep -l '^ep.overlap: true' "$TMP"/gbemit/*.yaml | wc -l)" -ge 2 ]; then ok "their experiments run ep.overlap"
else not_ok "their experiments run ep.overlap" "$(ls "$TMP/gbemit")"; fi
gaps=$(python3 - "$TMP/gb.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(len(rows), max(abs(float(r["sim_surrogate_gap"])) for r in rows) if rows else "none")
PY
)
if python3 -c "import sys; n, g = sys.argv[1], sys.argv[2]; sys.exit(0 if int(n) >= 2 and float(g) <= 0.02 else 1)" $gaps
then ok "simulator and surrogate within 2 % on them (rows, largest gap: $gaps)"
else not_ok "simulator and surrogate within 2 % on them" "rows, largest gap: $gaps"; fi

test_summary
