#!/usr/bin/env bash
# offload_copy.sh: PipeOffload's Figure 1 where k > 1 (an expected failure:
# listed in XFAIL_TESTS, tests/local.am).
#
# The paper runs its copies on one CUDA stream per GPU that alternates D2H and
# H2D, and compute waits for a D2H to release memory (offload_release).  So in
# 1F1B's steady state every F + B + W period must also hold one round trip,
# and where the round trip is longer (k > 1) the period stretches to k times
# its length: full offload is no longer free, and the memory is still freed
# (that is the point of waiting).  Expected here, on the grid of offload.sh:
#   - rank 0's activation memory at least halved, as where k <= 1;
#   - a slowdown of at least half (the issue's tolerance) of the steady-state
#     estimate (k - 1) x m / (m + p - 1) (m = 16 microbatches, p = 8).
# The engine now has PipeOffload's copy model (offload.copy_model=single,
# offload.copy_slots=1: src/sim/copyengine.c), and the cells still miss:
# measured at h=4096 s=4096 with single + one slot + the rules, rank 0 stalls
# 371 ms on reloads yet the makespan is the baseline's (1.356 s), because in
# this GPT the last stage (two layers + the LM head and loss) is the
# bottleneck and rank 0's stalls fit in its cool-down idle time; without the
# rules the slowdown is 8.5 % (want >= 17.5 %).  The paper balances its stages
# (one layer per stage, head apart); pipegrid cannot place the head on its own
# stage yet.  Until then this stays an expected failure; an XPASS must take it
# out of XFAIL_TESTS.
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" offload_copy

fig1() {   # fig1 H S [--set ...]: JSON of one run into $TMP/out (offload.sh's model)
    local h=$1 s=$2
    shift 2
    timeout "$COMMAND_TIMEOUT_S" "$BIN" run --set workload=gpt --set gpt.layers=16 --set gpt.hidden="$h" \
        --set gpt.heads=$((h / 128)) --set gpt.seq="$s" --set micro_batch_size=1 --set pp=8 --set microbatches=16 \
        --set network=cluster --set cluster.gpu=a100-80g --set cluster.host_link=measured --set schedule=1f1b \
        --set recompute=lgd --set memory.capacity=1TiB --format json "$@" >"$TMP/out" 2>"$TMP/err"
}
ncells=0
for h in 2048 4096; do
    for s in 1024 4096 16384; do
        fig1 "$h" "$s" || { not_ok "figure 1 h=$h s=$s: baseline runs" "$(head -c 300 "$TMP/err")"; continue; }
        cp "$TMP/out" "$TMP/base.json"
        fig1 "$h" "$s" --set offload=full --set offload.rules=pipeoffload ||
            { not_ok "figure 1 h=$h s=$s: full offload runs" "$(head -c 300 "$TMP/err")"; continue; }
        verdict=$(python3 - "$TMP/base.json" "$TMP/out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
k, m, p = b["offload_k"], 16, 8
slow = (b["makespan"] / a["makespan"] - 1) * 100
want = 0.5 * (k - 1) * m / (m + p - 1) * 100
act = lambda j: j["ranks"][0]["peak_breakdown"]["activation_bytes"]
ratio = act(b) / act(a)
tag = "skip" if k <= 1 else "ok" if slow >= want and ratio <= 0.5 else "bad"
print("%s k=%.3f slowdown %.2f %% (want >= %.2f) rank-0 activations x%.3f (want <= 0.5)" % (tag, k, slow, want, ratio))
PY
)
        case $verdict in
        ok*) ok "figure 1 h=$h s=$s: k > 1 costs time and frees memory (${verdict#ok })"; ncells=$((ncells + 1)) ;;
        skip*) say "# figure 1 h=$h s=$s: ${verdict#skip } <= 1, offload.sh's" ;;
        *) not_ok "figure 1 h=$h s=$s: k > 1 costs time and frees memory" "${verdict#bad }" ;;
        esac
    done
done
test_summary
