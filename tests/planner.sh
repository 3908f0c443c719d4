#!/bin/bash
# planner.sh: `pipegrid optimize` as a planner (issue 35): the pruned search returns exactly the best of an
# exhaustive sweep of the same space, progress lines appear on a stderr that is not a terminal, --time-limit
# cuts the search and exits 5 with the best found so far, --svg draws the front with the chosen plan marked,
# bad values of the new options exit 2.
#   tests/planner.sh [BIN]
. "$(dirname "$0")/lib.sh" planner
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
MODELS="$TEST_HERE/../profiles/models"

# Llama-3-8B at sequence 2048 on one 8-GPU A100 node, 40 GiB per GPU, global batch 16: some layouts are out of
# memory by their weights alone, some by their activations, the rest differ in speed.
cat > "$TMP/job.yaml" <<YAML
workload: hf:$MODELS/llama3-8b.json
gpt:
  seq: 2048
network: cluster
cluster:
  gpu: a100-80g
  nodes: 1
tp: 1
pp: 2
dp: 4
micro_batch_size: 1
global_batch_size: 16
schedule: 1f1b
memory:
  capacity: 40GiB
YAML
SPACE=(--grid tp=2,4 --grid pp=1,2 --grid micro_batch_size=1,2 --grid schedule=1f1b,zb-h1,gpipe
       --grid recompute=none,full --grid offload=none)

# ---- pruned == exhaustive ----
expect_rc "optimize a small space (pruned), stderr to a file" 0 "$BIN" optimize "$TMP/job.yaml" "${SPACE[@]}" -j 2 \
    --format csv --svg "$TMP/front.svg"
cp "$TMP/out" "$TMP/pruned.csv"
cp "$TMP/err" "$TMP/pruned.err"
# the exhaustive sweep of the same space: every (tp, pp, dp) of 8 GPUs, every other value, all simulated
for shape in "2 1 4" "2 2 2" "4 1 2" "4 2 1"; do
    read -r tp pp dp <<<"$shape"
    expect_rc "exhaustive sweep, tp=$tp pp=$pp dp=$dp" 0 "$BIN" sweep "$TMP/job.yaml" --set tp="$tp" --set pp="$pp" \
        --set dp="$dp" --grid micro_batch_size=1,2 --grid schedule=1f1b,zb-h1,gpipe --grid recompute=none,full \
        --grid offload=none -j 2 --format csv
    cp "$TMP/out" "$TMP/every-$tp-$pp-$dp.csv"
done
python3 - "$TMP/pruned.csv" "$TMP"/every-*.csv <<'PY' && ok "the pruned search's best is the exhaustive sweep's best, and it pruned" || not_ok "the pruned search's best is the exhaustive sweep's best, and it pruned"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
every = []
for path in sys.argv[2:]:   # every-TP-PP-DP.csv: the shape is the file's, the rest the sweep's columns
    tp, pp, dp = path.rsplit("every-", 1)[1][:-4].split("-")
    every += [dict(r, tp=tp, pp=pp) for r in csv.DictReader(open(path))]
assert len(rows) == 48 and len(every) == 48, (len(rows), len(every))
fit = [r for r in every if r["exit_code"] == "0"]
top = max(float(r["samples_per_second"]) for r in fit)
best = [r for r in rows if r["best"] == "1"]
assert len(best) == 1 and float(best[0]["samples_per_second"]) == top, (best, top)
keys = ("tp", "pp", "micro_batch_size", "schedule", "recompute")
tops = {tuple(r[k] for k in keys) for r in fit if float(r["samples_per_second"]) == top}
assert tuple(best[0][k] for k in keys) in tops, (best[0], tops)
# the space has losers and out-of-memory plans, and the search skipped some of each without simulating them
assert any(r["exit_code"] == "3" for r in every) and len(fit) > 1
# a candidate skipped for memory (static alone, or with its least activations) is out of memory when simulated
byk = {tuple(r[k] for k in keys): r for r in every}
for r in rows:
    if r["status"] in ("pruned_memory", "pruned_activations"):
        assert byk[tuple(r[k] for k in keys)]["exit_code"] == "3", r
status = [r["status"] for r in rows]
assert status.count("pruned_bound") > 0 and status.count("pruned_memory") > 0, status
assert status.count("pruned_activations") > 0, status
assert status.count("simulated") < len(rows) / 2, status.count("simulated")
PY

# ---- progress lines on a stderr that is not a terminal ----
if grep -Eq '^pipegrid: optimize: [0-9]+ s: [0-9]+/48 done \([0-9]+ simulated, [0-9]+ pruned\), best [0-9.e+]+ samples/s' \
    "$TMP/pruned.err" && grep -Eq '^pipegrid: optimize: [0-9]+ s: 48/48 done' "$TMP/pruned.err"
then ok "progress lines (done/total, pruned, best so far) on stderr redirected to a file"
else not_ok "progress lines on stderr redirected to a file" "$(head -c 600 "$TMP/pruned.err")"; fi

# ---- --svg: a valid SVG, the front and the chosen plan marked ----
python3 - "$TMP/front.svg" "$TMP/pruned.csv" <<'PY' && ok "--svg writes a valid SVG: every fitting plan, the chosen one circled and labelled" || not_ok "--svg writes a valid SVG with the chosen plan marked"
import csv, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg"
circles = root.findall(ns + "circle")
chosen = [c for c in circles if c.get("id") == "chosen"]
assert len(chosen) == 1, len(chosen)
rows = list(csv.DictReader(open(sys.argv[2])))
fit = [r for r in rows if r["status"] == "simulated" and r["exit_code"] == "0"]
dots = [c for c in circles if c.get("id") != "chosen"]
assert len(dots) == len(fit), (len(dots), len(fit))
best = [r for r in rows if r["best"] == "1"][0]
text = " ".join(t.text or "" for t in root.iter(ns + "text"))
assert "chosen: %.4f samples/s" % float(best["samples_per_second"]) in text, text
# the chosen circle sits on the dot of the best plan
x, y = chosen[0].get("cx"), chosen[0].get("cy")
assert any(d.get("cx") == x and d.get("cy") == y and d.get("class") == "front" for d in dots)
PY

# ---- --time-limit: the search is cut, what was found so far is printed, exit 5 ----
# Llama-3-70B on 16 A100 nodes, the default search: far more than 2 s of work.
cat > "$TMP/big.yaml" <<YAML
workload: hf:$MODELS/llama3-70b.json
gpt:
  seq: 8192
network: cluster
cluster:
  gpu: a100-80g
  nodes: 16
tp: 8
pp: 4
dp: 4
micro_batch_size: 1
global_batch_size: 512
schedule: 1f1b
YAML
start=$(date +%s)
expect_rc "--time-limit 2 cuts the default 128-GPU search: exit 5" 5 "$BIN" optimize "$TMP/big.yaml" -j 2 --time-limit 2
took=$(( $(date +%s) - start ))
expect_err "the cut is said on stderr" "search cut by --time-limit after [0-9]+ s"
if [ "$took" -le 20 ]; then ok "the cut search ended soon after its limit (${took} s)"
else not_ok "the cut search ended soon after its limit" "took ${took} s"; fi
# a limit longer than the search changes nothing: exit 0, the same best
expect_rc "--time-limit 600 on the small space: complete, exit 0" 0 "$BIN" optimize "$TMP/job.yaml" "${SPACE[@]}" -j 2 \
    --format csv --time-limit 600
if [ "$(grep -c ',1$' "$TMP/out")" = "$(grep -c ',1$' "$TMP/pruned.csv")" ] &&
    diff <(awk -F, '$NF == 1' "$TMP/out") <(awk -F, '$NF == 1' "$TMP/pruned.csv") >/dev/null
then ok "a time limit the search does not reach gives the same best"
else not_ok "a time limit the search does not reach gives the same best"; fi

# ---- planners: bounded by their keep-all sibling, still the exhaustive best ----
# recompute=plan / offload=plan only add work to the same candidate without a plan (job/search.c
# planner_ceiling): once that one is simulated (even out of memory), a planner it cannot beat is skipped.
# At 5.9 GiB GPipe without a plan fits at just under 1F1B's throughput, so its three planners are skipped
# though their lower bound is 1F1B's; ZB-H1's keep-all is out of memory (faster than the best), its
# planners run; the best is the exhaustive sweep's.
cat > "$TMP/small.yaml" <<YAML
workload: gpt
gpt: {layers: 8, hidden: 2048, heads: 16, seq: 2048, vocab: 32000}
network: cluster
cluster: {gpu: a100-80g, nodes: 1}
tp: 2
pp: 2
dp: 2
micro_batch_size: 1
global_batch_size: 16
schedule: 1f1b
memory: {capacity: 5.9GiB}
YAML
PLAN_SPACE=(--grid schedule=1f1b,zb-h1,gpipe --grid recompute=none,plan --grid offload=none,plan)
expect_rc "optimize with planners" 0 "$BIN" optimize "$TMP/small.yaml" --grid tp=2 --grid pp=2 "${PLAN_SPACE[@]}" \
    -j 2 --format csv
cp "$TMP/out" "$TMP/planners.csv"
expect_rc "the same space swept" 0 "$BIN" sweep "$TMP/small.yaml" "${PLAN_SPACE[@]}" -j 2 --format csv
cp "$TMP/out" "$TMP/planners-every.csv"
python3 - "$TMP/planners.csv" "$TMP/planners-every.csv" <<'PY' && ok "planners past their keep-all sibling are skipped, the best is the exhaustive best" || not_ok "planners past their keep-all sibling are skipped, the best is the exhaustive best"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
every = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 12 and len(every) == 12, (len(rows), len(every))
top = max(float(r["samples_per_second"]) for r in every if r["exit_code"] == "0")
best = [r for r in rows if r["best"] == "1"]
assert len(best) == 1 and float(best[0]["samples_per_second"]) == top, (best, top)
gpipe = {(r["recompute"], r["offload"]): r for r in rows if r["schedule"] == "gpipe"}
keep = float(gpipe[("none", "none")]["samples_per_second"])
assert keep < top, (keep, top)
for k in (("none", "plan"), ("plan", "none"), ("plan", "plan")):
    r = gpipe[k]
    assert r["status"] == "pruned_bound" and float(r["samples_per_second_bound"]) >= top, r
# and they were slower indeed
slow = [float(r["samples_per_second"]) for r in every if r["schedule"] == "gpipe" and "plan" in (r["recompute"], r["offload"])]
assert len(slow) == 3 and max(slow) <= keep, slow
PY

# ---- optimize's planning budget for offload=plan (search.h SEARCH_PLANNER_SETS) ----
# every candidate a planner: each plans once, at its capacity, with a 2 s MILP, says so, writes the budget into
# -o's experiment, and `run` of that file replays the plan optimize found; a budget key the user gives is kept
expect_rc "optimize offload planners with optimize's budget" 0 "$BIN" optimize "$TMP/small.yaml" --grid tp=2 --grid pp=2 \
    --grid schedule=1f1b,zb-h1 --grid recompute=none --grid offload=plan -j 2 -o "$TMP/budget.yaml"
if grep -q "^pipegrid: optimize: its [1-9][0-9]* offload=plan candidates planned with offload.time_limit=2s offload.capacities=0 recompute.time_limit=2s " "$TMP/err"
then ok "optimize says which budget its planners had"
else not_ok "optimize says which budget its planners had" "$(tail -3 "$TMP/err")"; fi
best=$(grep -- '<- best' "$TMP/out" | awk '{print $1}')
if grep -q '^offload.time_limit: 2s$' "$TMP/budget.yaml" && grep -q '^offload.capacities: 0$' "$TMP/budget.yaml" &&
    grep -q '^recompute.time_limit: 2s$' "$TMP/budget.yaml"
then ok "-o writes the budget with the plan"
else not_ok "-o writes the budget with the plan" "$(cat "$TMP/budget.yaml")"; fi
expect_rc "run the written plan" 0 "$BIN" run "$TMP/budget.yaml" --format json
replayed=$(python3 -c 'import json, sys; print("%.4f" % json.load(open(sys.argv[1]))["samples_per_second"])' "$TMP/out")
if [ -n "$best" ] && [ "$replayed" = "$best" ]; then ok "run replays the plan optimize chose ($best samples/s)"
else not_ok "run replays the plan optimize chose" "optimize $best, run $replayed"; fi
expect_rc "optimize with the user's offload.time_limit" 0 "$BIN" optimize "$TMP/small.yaml" --grid tp=2 --grid pp=2 \
    --grid schedule=1f1b --grid recompute=none --grid offload=plan --set offload.time_limit=5s -j 2 -o "$TMP/budget5.yaml"
if grep -q "planned with offload.capacities=0 recompute.time_limit=2s (optimize" "$TMP/err" &&
    grep -q '^offload.time_limit: 5s$' "$TMP/budget5.yaml"
then ok "a budget key the user gives is the user's"
else not_ok "a budget key the user gives is the user's" "$(tail -2 "$TMP/err"; cat "$TMP/budget5.yaml")"; fi

# ---- planners: what any plan must hold at a backward (job_least_planner_bytes) ----
# at 5.36 GiB (static memory and headroom 5.31 GiB) no plan can hold one microbatch's activations at its
# backward, kept, reloaded or recomputed: every candidate, planners included, is skipped unsimulated, and the
# sweep of the same space confirms that none fits
SMALL_SPACE=(--grid recompute=none,plan,full --grid offload=none,plan)
expect_rc "optimize where no plan fits: out of memory" 3 "$BIN" optimize "$TMP/small.yaml" --set memory.capacity=5.36GiB --grid tp=2 \
    --grid pp=2 --grid schedule=1f1b "${SMALL_SPACE[@]}" -j 2
if grep -q "0 simulated (0 fit, 0 out of memory, 0 failed); skipped before simulation: 0 by static memory over capacity, 6 by static memory and least activations" "$TMP/err"
then ok "planners are skipped by the least activations any plan holds"
else not_ok "planners are skipped by the least activations any plan holds" "$(tail -2 "$TMP/err")"; fi
expect_rc "the same space swept" 0 "$BIN" sweep "$TMP/small.yaml" --set memory.capacity=5.36GiB --set schedule=1f1b \
    "${SMALL_SPACE[@]}" -j 2 --format csv
if python3 -c 'import csv, sys; rows = list(csv.DictReader(open(sys.argv[1]))); sys.exit(not (len(rows) == 6 and all(r["exit_code"] != "0" for r in rows)))' "$TMP/out"
then ok "and none of them fits when simulated"
else not_ok "and none of them fits when simulated" "$(cat "$TMP/out")"; fi

# ---- bad values exit 2 ----
for v in 0 -1 abc 1e999 nan ""; do
    expect_rc "--time-limit '$v' is bad input" 2 "$BIN" optimize "$TMP/job.yaml" "${SPACE[@]}" --time-limit "$v"
    expect_err "--time-limit '$v': the message names the option" "--time-limit"
done
expect_rc "--time-limit without a value is bad input" 2 "$BIN" optimize "$TMP/job.yaml" --time-limit
expect_rc "--time-limit does not apply to run" 2 "$BIN" run "$TMP/job.yaml" --time-limit 5
expect_rc "--svg into a missing directory is bad input" 2 "$BIN" optimize "$TMP/job.yaml" "${SPACE[@]}" \
    --svg "$TMP/no/such/dir/front.svg"
expect_err "--svg: the message names the option" "--svg"

test_summary
