#!/usr/bin/env bash
# offload.sh: PipeOffload end to end (docs/offload.md).
#   - Figure 1 of the paper: full offload of 1F1B on A100 over hidden size x
#     sequence length.  Where k <= 1 the paper finds it free: the makespan
#     within 5 points of no offload and rank 0's activation memory at least
#     halved; checked here with offload.rules=pipeoffload on every cell of the
#     grid with k <= 1 (k as the run reports it, offload_k).  The cells with
#     k > 1 are checked by offload_copy.sh (an expected failure until the
#     engine has the single copy stream and admission control).
#   - PO-H / PO-F presets: what they set, and their bad-input messages.
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" offload

# The Figure 1 model: 2 layers per stage, 8 stages, 16 microbatches of one
# sequence on A100s with the host link PipeOffload measured (15 GB/s per GPU
# while a pair copies; cluster.host_link=measured), PipeOffload's recompute of
# LayerNorm / GeLU / dropout (lgd), and a capacity no cell reaches (Figure 1
# is about time, and the memory it frees).
fig1() {   # fig1 H S [--set ...]: JSON of one run into $TMP/out
    local h=$1 s=$2
    shift 2
    timeout "$COMMAND_TIMEOUT_S" "$BIN" run --set workload=gpt --set gpt.layers=16 --set gpt.hidden="$h" \
        --set gpt.heads=$((h / 128)) --set gpt.seq="$s" --set micro_batch_size=1 --set pp=8 --set microbatches=16 \
        --set network=cluster --set cluster.gpu=a100-80g --set cluster.host_link=measured --set schedule=1f1b \
        --set recompute=lgd --set memory.capacity=1TiB --format json "$@" \
        >"$TMP/out" 2>"$TMP/err"
}
ncells=0
for h in 2048 4096 8192 12288; do
    for s in 1024 4096 16384; do
        fig1 "$h" "$s" || { not_ok "figure 1 h=$h s=$s: baseline runs" "$(head -c 300 "$TMP/err")"; continue; }
        cp "$TMP/out" "$TMP/base.json"
        fig1 "$h" "$s" --set offload=full --set offload.rules=pipeoffload ||
            { not_ok "figure 1 h=$h s=$s: full offload runs" "$(head -c 300 "$TMP/err")"; continue; }
        verdict=$(python3 - "$TMP/base.json" "$TMP/out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
k = b["offload_k"]
slow = (b["makespan"] / a["makespan"] - 1) * 100
act = lambda j: j["ranks"][0]["peak_breakdown"]["activation_bytes"]
ratio = act(b) / act(a)
if k > 1:
    print("skip k=%.3f" % k)
elif abs(slow) <= 5 and ratio <= 0.5:
    print("ok k=%.3f slowdown %.2f %% rank-0 activations x%.3f" % (k, slow, ratio))
else:
    print("bad k=%.3f slowdown %.2f %% rank-0 activations x%.3f" % (k, slow, ratio))
PY
)
        case $verdict in
        ok*) ok "figure 1 h=$h s=$s: free where k <= 1 (${verdict#ok })"; ncells=$((ncells + 1)) ;;
        skip*) say "# figure 1 h=$h s=$s: ${verdict#skip } > 1, offload_copy.sh's" ;;
        *) not_ok "figure 1 h=$h s=$s: free where k <= 1" "${verdict#bad }" ;;
        esac
    done
done
# the grid must reach the k <= 1 region, or the checks above prove nothing
if [ "$ncells" -ge 5 ]; then ok "figure 1: $ncells cells with k <= 1 checked"; else not_ok "figure 1: cells with k <= 1" "$ncells"; fi

# ---- the measured host link (cluster.host_link=measured) ----
# Rank 0 of a 2-stage 1F1B offloads and reloads two 1 GB activations, alone on
# its PCIe switch (rank 1's are consumed at once): each copy takes 1e9 /
# (15e9 / 0.7) + 1 us on A100 (PipeOffload's 15 GB/s while a pair copies;
# alone 1/0.7 of it), 1e9 / (21e9 / 0.7) + 1 us on H100.
HL=(--set schedule=1f1b --set pp=2 --set microbatches=2 --set workload=uniform --set uniform.f=1 --set uniform.b=1
    --set uniform.w=1 --set uniform.activation=1GB --set memory.capacity=1TiB --set network=cluster
    --set cluster.host_link=measured --set offload=full --format json)
for gpu in "a100-80g 15e9" "h100-sxm 21e9"; do
    set -- $gpu
    expect_rc "host link of $1 measured: runs" 0 "$BIN" run "${HL[@]}" --set cluster.gpu="$1"
    if python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); want = 2 * (1e9 / (float(sys.argv[2]) / 0.7) + 1e-6)
r = j["ranks"][0]
assert abs(r["d2h_busy_seconds"] - want) <= 1e-9 * want, (r["d2h_busy_seconds"], want)
assert abs(r["h2d_busy_seconds"] - want) <= 1e-9 * want, (r["h2d_busy_seconds"], want)' "$TMP/out" "$2" 2>"$TMP/pyerr"
    then ok "host link of $1 measured: a copy alone at $2 / 0.7 B/s"; else not_ok "host link of $1 measured" "$(tail -1 "$TMP/pyerr")"; fi
done

# With tp = 2 both GPUs of rank 0's group hold their share and copy it at
# once; they sit behind one PCIe switch (GPUs 0 and 1), so each copy runs at
# the paired rate: 1e9 / 15e9 + 1 us on A100 (not 15e9 / 0.7 as alone), and
# node 0's host memory holds both GPUs' shares: twice what tp = 1 holds.
expect_rc "host link measured, tp 1: runs" 0 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g --set tp=1
cp "$TMP/out" "$TMP/tp1.json"
expect_rc "host link measured, tp 2: runs" 0 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g --set tp=2
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); r = j["ranks"][0]
one = json.load(open(sys.argv[2]))
per_copy = r["offload_bytes"] / 2   # rank 0 offloads its two microbatches, one GPU share each
want = 2 * (per_copy / 15e9 + 1e-6)
assert abs(r["d2h_busy_seconds"] - want) <= 1e-9 * want, (r["d2h_busy_seconds"], want)
assert abs(r["h2d_busy_seconds"] - want) <= 1e-9 * want, (r["h2d_busy_seconds"], want)
host, host1 = j["host_peak_memory_bytes"][0], one["host_peak_memory_bytes"][0]
assert host1 > 0 and host == 2 * host1, (host, host1)' "$TMP/out" "$TMP/tp1.json" 2>"$TMP/pyerr"
then ok "host link measured, tp 2: the group's two GPUs copy at once, at the paired rate, into host memory"
else not_ok "host link measured, tp 2: the group's copies contend and fill host memory" "$(tail -1 "$TMP/pyerr")"; fi

# What the policy chose against what was copied: offload=full chooses all 4
# (stage, microbatch) activations; rank 1's are consumed right after their F,
# so only rank 0's 2 are copied.  The text report says so, and a run where no
# chosen activation is copied warns on stderr.
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["offloads_chosen"], j["offloads_copied"]) == (4, 2), (j["offloads_chosen"], j["offloads_copied"])' \
    "$TMP/tp1.json" 2>"$TMP/pyerr"
then ok "offloads chosen 4, copied 2 (the last stage's stay)"; else not_ok "offloads chosen / copied" "$(tail -1 "$TMP/pyerr")"; fi
expect_rc "offloads chosen / copied: text report runs" 0 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g --format text
if grep -Fq "not offloaded  2 of the 4 activations chosen for offload stay on the GPU" "$TMP/out"
then ok "offloads chosen / copied: in the text report"; else not_ok "offloads chosen / copied: text" "$(grep -i offload "$TMP/out")"; fi
expect_rc "no chosen activation copied: runs" 0 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g --set microbatches=1 \
    --set pp=1 --set schedule=gpipe
expect_err "no chosen activation copied: a warning" "pipegrid: warning: none of the 1 activations chosen for offload"

# The rate is the GPU type's profile's (profiles/gpus/<type>.yaml, its host_link
# block), nothing else: a profile found first (the current directory is searched
# before the data directories) with another measured_bw moves the copy time, one
# without the block is an error naming cluster.host_link, and one with a bad
# block names the profile's line.
mkdir -p "$TMP/hl/profiles/gpus"
sed 's/^  measured_bw: {value: [^,]*,/  measured_bw: {value: 1e10,/' "$TEST_HERE/../profiles/gpus/a100-80g.yaml" \
    >"$TMP/hl/profiles/gpus/a100-80g.yaml"
(cd "$TMP/hl" && expect_rc "host link from the profile: runs" 0 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g
 python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); want = 2 * (1e9 / (1e10 / 0.7) + 1e-6)
got = j["ranks"][0]["d2h_busy_seconds"]
assert abs(got - want) <= 1e-9 * want, (got, want)' "$TMP/out" 2>"$TMP/pyerr" &&
    ok "host link from the profile: its measured_bw (1e10) sets the copy time" ||
    not_ok "host link from the profile: its measured_bw sets the copy time" "$(tail -1 "$TMP/pyerr")"
 echo "passed=$passed failed=$failed" >"$TMP/hl/counts")
. "$TMP/hl/counts"
sed '/^host_link:/,$d' "$TEST_HERE/../profiles/gpus/a100-80g.yaml" >"$TMP/hl/profiles/gpus/a100-80g.yaml"
(cd "$TMP/hl" && expect_rc "a profile without host_link: measured fails" 2 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g
 expect_err "... naming cluster.host_link" "key 'cluster.host_link': measured: .*a100-80g.yaml has no host_link block"
 expect_rc "... the datasheet link still runs" 0 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g \
     --set cluster.host_link=datasheet
 printf 'host_link:\n  measured_bw: {value: fast, source: s}\n' >>profiles/gpus/a100-80g.yaml
 expect_rc "a bad host_link block fails" 2 "$BIN" run "${HL[@]}" --set cluster.gpu=a100-80g
 expect_err "... at its line" "a100-80g.yaml:[0-9]+: key 'host_link.measured_bw': 'fast'"
 echo "passed=$passed failed=$failed" >"$TMP/hl/counts")
. "$TMP/hl/counts"

# ---- PO-H / PO-F presets ----
GIS=(--set workload=uniform --set network=cluster --set pp=4 --set microbatches=8 --set chunks=2 --format json)
expect_rc "po-h on gis-h runs" 0 "$BIN" run "${GIS[@]}" --set schedule=gis-h --set offload.preset=po-h
if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["offload"]=="selective", j["offload"]' "$TMP/out" 2>"$TMP/pyerr"
then ok "po-h is offload=selective"; else not_ok "po-h is offload=selective" "$(tail -1 "$TMP/pyerr")"; fi
expect_rc "po-f on gis runs" 0 "$BIN" run "${GIS[@]}" --set schedule=gis --set offload.preset=po-f
cp "$TMP/out" "$TMP/pof.json"
expect_rc "po-f with offload.copy_slots=1 runs" 0 "$BIN" run "${GIS[@]}" --set schedule=gis --set offload.preset=po-f \
    --set offload.copy_slots=1
if python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for j in (a, b):
    del j["simulator"]["wall_seconds"]   # host time, the only field that may differ
assert a == b' "$TMP/out" "$TMP/pof.json" 2>"$TMP/pyerr"; then ok "a preset sets PipeOffload's admission (offload.copy_slots=1)"
else not_ok "a preset sets PipeOffload's admission (offload.copy_slots=1)" "$(tail -2 "$TMP/pyerr")"; fi
expect_rc "a preset contradicting offload fails" 2 "$BIN" run "${GIS[@]}" --set schedule=gis --set offload.preset=po-f \
    --set offload=full
expect_err "... naming the key" "key 'offload': contradicts offload.preset"
expect_rc "a preset with offload.chunks fails" 2 "$BIN" run "${GIS[@]}" --set schedule=gis --set offload.preset=po-h \
    --set offload.chunks=1
expect_err "... naming the key" "key 'offload.chunks': contradicts offload.preset"
expect_rc "offload.chunks beyond the chunks per rank fails" 2 "$BIN" run "${GIS[@]}" --set schedule=gis \
    --set offload=selective --set offload.chunks=3
expect_err "... naming the key" "key 'offload': offload chunks 3 is outside \[0, 2\]"
# ---- offload=plan: more memory never runs slower (offload_ladder.h) ----
# docs/planners.md's OptPipe comparison: 16 GB static per GPU, 4 GiB activations.
U=(--set workload=uniform --set uniform.f=0.1 --set uniform.b=0.1 --set uniform.w=0.1 --set uniform.activation=4GiB
   --set uniform.params=1e9 --set network=cluster --set pp=8 --set microbatches=24 --set schedule=1f1b
   --set offload=plan --set recompute=full --format json)
expect_rc "offload=plan at 32 GiB, its own plan only, runs" 0 "$BIN" run "${U[@]}" --set memory.capacity=32GiB \
    --set offload.capacities=0
cp "$TMP/out" "$TMP/plan32.json"
# The chosen plan's run is its judge's (job_offload.c, job_judged_take), not simulated again: the same
# report as simulating it again, but for the host time and the flag that says so.
expect_rc "offload=plan at 32 GiB, its chosen plan simulated again, runs" 0 env PIPEGRID_RESIMULATE=1 "$BIN" run \
    "${U[@]}" --set memory.capacity=32GiB --set offload.capacities=0
if python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["simulator"]["judged_run"] is True and b["simulator"]["judged_run"] is False, (a["simulator"], b["simulator"])
for j in (a, b):
    del j["simulator"]["wall_seconds"], j["simulator"]["judged_run"]
assert a == b' "$TMP/plan32.json" "$TMP/out" 2>"$TMP/pyerr"
then ok "offload=plan reports its judge's run of the chosen plan, as simulating it again would"
else not_ok "offload=plan reports its judge's run of the chosen plan" "$(tail -2 "$TMP/pyerr")"; fi
expect_rc "plan offload at 40 GiB runs" 0 "$BIN" plan offload "${U[@]}" --set memory.capacity=40GiB
expect_py() { # NAME PYTHON: PYTHON sees j (the last command's JSON) and p32 (the 32 GiB run's)
    if python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); p32=json.load(open(sys.argv[2])); exec(sys.argv[3])' \
        "$TMP/out" "$TMP/plan32.json" "$2" 2>"$TMP/pyerr"; then ok "$1"; else not_ok "$1" "$(tail -1 "$TMP/pyerr")"; fi
}
cp "$TMP/out" "$TMP/plan40.json"
# The ladder's early stop: 1F1B's order without any plan or capacity limit is a
# floor no plan on it can beat; the plan at 40 GiB (or PipeOffload's) reaches it,
# so no grid capacity below is planned (test_offload.c checks the rungs).
expect_rc "1F1B's order with no plan and no memory limit runs" 0 "$BIN" run "${U[@]}" --set offload=none \
    --set recompute=none --set memory.capacity=1TiB
cp "$TMP/out" "$TMP/floor.json"
cp "$TMP/plan40.json" "$TMP/out"
expect_py "40 GiB reaches the floor with its own capacity's plans, plans no rung below, no slower than 32 GiB's" '
floor = json.load(open("'"$TMP/floor.json"'"))["makespan"]
assert j["capacities_planned"] == 1, j["capacities_planned"]
assert abs(j["planned_capacity_bytes"] - 40 * 2**30) <= 1e-9 * 40 * 2**30, j["planned_capacity_bytes"]
assert abs(j["makespan"] - floor) <= 1e-9 * floor, (j["makespan"], floor)
assert j["oom_ranks"] == 0 and j["makespan"] <= p32["makespan"] * (1 + 1e-9), (j["makespan"], p32["makespan"])'
# offload.time_limit: the MILP's budget; 0 plans with the greedy start and PipeOffload's rules alone, never slower
# than them (the greedy plan is what the MILP starts from); a bad value names the key
expect_rc "offload=plan at 32 GiB with offload.time_limit=0 (greedy only) runs" 0 "$BIN" run "${U[@]}" \
    --set memory.capacity=32GiB --set offload.capacities=0 --set offload.time_limit=0
expect_py "the MILP is never slower than its greedy start (32 GiB)" '
g = j["makespan"]
assert p32["makespan"] <= g * (1 + 1e-9), (p32["makespan"], g)'
expect_rc "offload.time_limit=-1 is refused" 2 "$BIN" run "${U[@]}" --set offload.time_limit=-1
expect_err "... naming the key" "key 'offload.time_limit': expected a duration"
expect_rc "PipeOffload's heuristic at 32 GiB runs" 0 "$BIN" run "${U[@]}" --set memory.capacity=32GiB \
    --set offload=full --set offload.rules=pipeoffload
cp "$TMP/out" "$TMP/po32.json"
expect_rc "offload=plan at 32 GiB (no ladder) runs" 0 "$BIN" run "${U[@]}" --set memory.capacity=32GiB \
    --set offload.capacities=0
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); po = json.load(open(sys.argv[2]))
assert po["oom"] == [] and j["oom"] == [], (po["oom"], j["oom"])
assert j["makespan"] <= po["makespan"] * (1 + 1e-9), (j["makespan"], po["makespan"])' "$TMP/out" "$TMP/po32.json" 2>"$TMP/pyerr"
then ok "offload=plan is never slower than PipeOffload's heuristic at the same memory (32 GiB)"
else not_ok "offload=plan is never slower than PipeOffload's heuristic at the same memory" "$(tail -1 "$TMP/pyerr")"; fi
# ---- offload=plan times copies at the platform's route: on network=ideal (copies next to free there, as
# the engine's SimGrid route gives them) the MILP's own plan fits 30 GiB and its model is the simulation;
# at PCIe rates it found no fit and handed over to PipeOffload's rules ----
expect_rc "offload=plan on network=ideal at 30 GiB runs" 0 "$BIN" plan offload --set network=ideal \
    --set memory.capacity=30GiB --format json
cp "$TMP/out" "$TMP/ideal_plan.json"
expect_rc "the same job without a memory limit runs" 0 "$BIN" run --set network=ideal --set memory.capacity=1TiB --format json
if python3 -c '
import json, sys
p = json.load(open(sys.argv[1])); free = json.load(open(sys.argv[2]))
assert p["solver"].startswith("milp"), p["solver"]
assert p["offloaded"] > 0 and p["oom_ranks"] == 0, (p["offloaded"], p["oom_ranks"])
assert abs(p["model_makespan"] - p["makespan"]) <= 1e-9 * p["makespan"], (p["model_makespan"], p["makespan"])
assert abs(p["makespan"] - free["makespan"]) <= 1e-9 * free["makespan"], (p["makespan"], free["makespan"])' \
    "$TMP/ideal_plan.json" "$TMP/out" 2>"$TMP/pyerr"
then ok "offload=plan on network=ideal: the MILP plans copies at the platform's rate, its model is the simulation"
else not_ok "offload=plan on network=ideal: copies at the platform's rate" "$(tail -1 "$TMP/pyerr")"; fi
test_summary
