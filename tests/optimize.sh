#!/bin/bash
# optimize.sh: `pipegrid optimize` and `pipegrid plan offload` end to end
# against a built binary (default src/pipegrid): the front is non-dominated,
# every front row replays with `run`, the best-plan file replays identically,
# infeasible everywhere is a clear message and a non-zero exit, offload=plan
# fits where keeping everything does not.
#   tests/optimize.sh [BIN]
. "$(dirname "$0")/lib.sh" optimize
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac

# A small, fast job: uniform stages (1 s per op, 1 GiB per activation) on
# the ideal network, 4 GPUs, 2.5 GiB per GPU: 1F1B's rank 0 needs 4 GiB kept.
JOB=(--set workload=uniform --set uniform.activation=1GiB --set network=ideal --set pp=4
     --set memory.capacity=2.5GiB)
SMALL=(--grid pp=4 --grid schedule=1f1b,gpipe,zb-h1 --grid microbatches=4,8 --grid recompute=none,full
       --grid offload=none,plan)

expect_rc "optimize (csv) succeeds" 0 "$BIN" optimize "${JOB[@]}" "${SMALL[@]}" -j 4 --format csv -o "$TMP/best.yaml"
cp "$TMP/out" "$TMP/front.csv"
rows=$(($(wc -l <"$TMP/front.csv") - 1))
if [ "$rows" -ge 1 ]; then ok "the front has rows ($rows)"; else not_ok "the front has rows" "$(cat "$TMP/front.csv")"; fi
if head -1 "$TMP/front.csv" | grep -q '^throughput_samples_per_s,iteration_seconds,makespan,max_peak_memory_bytes,best,settings$'
then ok "front CSV header"; else not_ok "front CSV header" "$(head -1 "$TMP/front.csv")"; fi

# non-dominated: no row has throughput >= and peak <= another's with one strict
if awk -F, 'NR > 1 { t[NR] = $1; p[NR] = $4; n = NR }
    END { for (i = 2; i <= n; i++) for (j = 2; j <= n; j++)
            if (i != j && t[j] >= t[i] && p[j] <= p[i] && (t[j] > t[i] || p[j] < p[i])) exit 1 }' "$TMP/front.csv"
then ok "the front is non-dominated"; else not_ok "the front is non-dominated" "$(cat "$TMP/front.csv")"; fi

# the best row is the highest throughput
if awk -F, 'NR > 1 { if ($1 > m) m = $1; if ($5 == 1) b = $1 } END { exit !(b == m && m > 0) }' "$TMP/front.csv"
then ok "the best row has the highest throughput"; else not_ok "the best row has the highest throughput"; fi

# every front row replays: same makespan and peak from `run`
replayed=0
bad=""
while IFS=, read -r tput iter makespan peak best settings; do
    args=()
    for kv in $settings; do args+=(--set "$kv"); done
    got=$("$BIN" run "${JOB[@]}" "${args[@]}" --format csv 2>/dev/null | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
        NR == 2 { printf "%s %s", $c["makespan"], $c["max_peak_memory_bytes"] }')
    if awk -v a="$got" -v m="$makespan" -v p="$peak" 'BEGIN { split(a, x, " ");
        exit !(x[1] - m <= 1e-9 * m && m - x[1] <= 1e-9 * m && x[2] - p <= 1e-9 * p && p - x[2] <= 1e-9 * p) }'
    then replayed=$((replayed + 1)); else bad="$bad [$settings: run gives $got, front says $makespan $peak]"; fi
done < <(tail -n +2 "$TMP/front.csv")
if [ -z "$bad" ] && [ "$replayed" = "$rows" ]; then ok "every front row replays with run ($replayed)"
else not_ok "every front row replays with run" "$bad"; fi

# the best-plan file replays identically
best_row=$(awk -F, 'NR > 1 && $5 == 1 { print $3, $4 }' "$TMP/front.csv")
expect_rc "run replays the best-plan file" 0 "$BIN" run "$TMP/best.yaml" --format csv
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c["makespan"], $c["max_peak_memory_bytes"] }' "$TMP/out")
if awk -v a="$got" -v b="$best_row" 'BEGIN { split(a, x, " "); split(b, y, " ");
    exit !(x[1] - y[1] <= 1e-9 * y[1] && y[1] - x[1] <= 1e-9 * y[1] && x[2] == y[2]) }'
then ok "best-plan file: same makespan and peak ($got)"; else not_ok "best-plan file: same makespan and peak" "run: $got, front: $best_row"; fi
# ... and the same samples/s: optimize ranks by the number run prints (it once multiplied it by dp again)
best_tput=$(awk -F, 'NR > 1 && $5 == 1 { print $1 }' "$TMP/front.csv")
run_tput=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c["samples_per_second"] }' "$TMP/out")
if awk -v a="$run_tput" -v b="$best_tput" 'BEGIN { exit !(b > 0 && a - b <= 1e-9 * b && b - a <= 1e-9 * b) }'
then ok "best-plan file: run prints the samples/s optimize reported ($run_tput)"
else not_ok "best-plan file: run prints the samples/s optimize reported" "run: $run_tput, optimize: $best_tput"; fi
expect_rc "optimize with dp = 2 (pp=2 of 4 GPUs)" 0 "$BIN" optimize "${JOB[@]}" --grid pp=2 --grid schedule=1f1b \
    --grid microbatches=4,8 --grid recompute=none,full --grid offload=none -j 2 --format csv -o "$TMP/best2.yaml"
best_tput=$(awk -F, 'NR > 1 && $5 == 1 { print $1 }' "$TMP/out")
expect_rc "run replays the dp = 2 best plan" 0 "$BIN" run "$TMP/best2.yaml" --format csv
run_tput=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { print $c["samples_per_second"] }' "$TMP/out")
if awk -v a="$run_tput" -v b="$best_tput" 'BEGIN { exit !(b > 0 && a - b <= 1e-9 * b && b - a <= 1e-9 * b) }'
then ok "dp = 2: run prints the samples/s optimize reported ($run_tput)"
else not_ok "dp = 2: run prints the samples/s optimize reported" "run: $run_tput, optimize: $best_tput"; fi

# text format
expect_rc "optimize (text) succeeds" 0 "$BIN" optimize "${JOB[@]}" --grid schedule=1f1b --grid microbatches=8 \
    --grid recompute=none --grid offload=none,plan -j 2
if grep -q "Pareto front" "$TMP/out" && grep -q "<- best" "$TMP/out"; then ok "text: front table with the best marked"
else not_ok "text: front table with the best marked" "$(head -c 600 "$TMP/out")"; fi
if grep -q "candidates simulated" "$TMP/err"; then ok "text: summary of candidates on stderr"; else not_ok "text: summary"; fi

# the default search space runs (pp over the divisors of 2 GPUs)
expect_rc "optimize with the default search space" 0 "$BIN" optimize --set workload=uniform --set network=ideal \
    --set pp=2 --set memory.capacity=80GiB --format csv -j 8
if [ "$(grep -c 'pp=1 dp=2' "$TMP/out")$(grep -c 'pp=2 dp=1' "$TMP/out")" != "00" ]; then ok "default space: pp from the divisors, dp fills the GPUs"
else not_ok "default space: pp from the divisors, dp fills the GPUs" "$(head -c 600 "$TMP/out")"; fi

# infeasible everywhere
expect_rc "infeasible everywhere exits 3" 3 "$BIN" optimize "${JOB[@]}" --set memory.capacity=0.25GiB \
    --grid schedule=1f1b --grid microbatches=8 --grid recompute=none,full --grid offload=none,plan -j 2
expect_err "infeasible everywhere says so" "no candidate fits in memory"
if [ ! -s "$TMP/out" ]; then ok "infeasible: no front printed"; else not_ok "infeasible: no front printed"; fi

# bad input
expect_rc "pp not dividing the GPU count is bad input" 2 "$BIN" optimize "${JOB[@]}" --grid pp=3
expect_err "the message names --grid pp" "grid pp"

# plan offload and offload=plan in run
expect_rc "keeping everything is out of memory" 3 "$BIN" run "${JOB[@]}" --set microbatches=8
expect_rc "offload=plan fits" 0 "$BIN" run "${JOB[@]}" --set microbatches=8 --set offload=plan --set recompute=full
expect_rc "plan offload prints plan and simulation" 0 "$BIN" plan offload "${JOB[@]}" --set microbatches=8 \
    --set recompute=full
if grep -q "simulated    makespan" "$TMP/out" && grep -q "solver" "$TMP/out"; then ok "plan offload: solver and simulated makespan"
else not_ok "plan offload: solver and simulated makespan" "$(head -c 600 "$TMP/out")"; fi
expect_rc "plan offload json" 0 "$BIN" plan offload "${JOB[@]}" --set microbatches=8 --set recompute=full \
    --format json
if grep -q '"makespan":' "$TMP/out"; then ok "plan offload json has makespan"; else not_ok "plan offload json has makespan"; fi

# offload.order=search: the order is chosen with the plan, and run replays it
expect_rc "plan offload with the order search" 0 "$BIN" plan offload "${JOB[@]}" --set microbatches=8 \
    --set recompute=full --set offload.order=search --format json
python3 - "$TMP/out" <<'PY' && ok "the search weighed 6 orders x 4 plans (+ PipeOffload's) and beat 1f1b's plan" || not_ok "the search weighed 6 orders x 4 plans (+ PipeOffload's) and beat 1f1b's plan" "$(cat "$TMP/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["orders_searched"] == 1 and j["plans_weighed"] == 24 + 1 and j["chosen"].startswith("zb-auto"), j
assert j["oom_ranks"] == 0 and j["makespan"] < 33.0, j   # 1F1B alone: (m + p - 1)(f + b + w) = 33 s
PY
searched=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["makespan"])' "$TMP/out")
expect_rc "run replays the chosen order" 0 "$BIN" run "${JOB[@]}" --set microbatches=8 --set recompute=full \
    --set offload=plan --set offload.order=search --format json
python3 - "$TMP/out" "$searched" <<'PY' && ok "run: same order, same makespan" || not_ok "run: same order, same makespan" "$(head -c 600 "$TMP/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["order"] == "zb-auto" and abs(j["makespan"] - float(sys.argv[2])) <= 1e-9 * j["makespan"], (j["order"], j["makespan"], sys.argv[2])
PY
expect_rc "order search on a V schedule" 0 "$BIN" plan offload "${JOB[@]}" --set microbatches=8 --set recompute=full \
    --set schedule=zb-v --set offload.order=search
if grep -q "no order search" "$TMP/out"; then ok "two stages per rank keep their order, and say so"
else not_ok "two stages per rank keep their order, and say so" "$(head -c 600 "$TMP/out")"; fi
# On a real network the MILP's copy model can be wrong both ways; the planner simulates each candidate and
# runs one that fits: here (8 H100s, 4 GiB activations, 0.3 s ops, two GPUs per PCIe uplink) the plan made
# with the uplink shared runs out of memory in the simulation, and run must still fit, at the chosen makespan.
COPY=(--set workload=uniform --set uniform.f=0.3 --set uniform.b=0.3 --set uniform.w=0.3 --set uniform.activation=4GiB
      --set uniform.params=1e9 --set network=cluster --set pp=8 --set microbatches=24 --set memory.capacity=40GiB
      --set offload=plan --set recompute=full)
expect_rc "plan offload on a shared uplink fits" 0 "$BIN" plan offload "${COPY[@]}" --format json
chosen=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["oom_ranks"] == 0; print(j["makespan"])' "$TMP/out" 2>/dev/null)
if [ -n "$chosen" ]; then ok "the chosen plan fits in the simulation"; else not_ok "the chosen plan fits in the simulation" "$(head -c 600 "$TMP/out")"; fi
expect_rc "run with offload=plan on a shared uplink fits" 0 "$BIN" run "${COPY[@]}" --format json
python3 - "$TMP/out" "$chosen" <<'PY' && ok "run replays the judged plan" || not_ok "run replays the judged plan" "$(head -c 600 "$TMP/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["oom"] == [] and abs(j["makespan"] - float(sys.argv[2])) <= 1e-9 * j["makespan"], (j["oom"], j["makespan"], sys.argv[2])
PY
expect_rc "offload.order with a bad value is bad input" 2 "$BIN" run "${JOB[@]}" --set offload=plan \
    --set offload.order=sometimes
expect_err "offload.order is named" "offload.order"

test_summary
