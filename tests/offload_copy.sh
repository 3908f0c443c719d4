#!/usr/bin/env bash
# offload_copy.sh: PipeOffload's Figure 1 under its copy model, over the
# paper's h x s grid (full offload of 1F1B on A100s, docs/offload.md).
#
# PipeOffload copies on one CUDA stream per GPU that alternates D2H and H2D,
# and compute waits for a D2H to release memory (offload_release):
# offload.copy_model=single, offload.copy_slots=1.  In 1F1B's steady state
# every F + B + W period of rank 0 must then also hold one round trip, so
# where the round trip is longer (k > 1) the pipeline runs about k times
# slower there: the paper's estimate of the slowdown is (k - 1) m / (m + p - 1)
# (m = 16 microbatches, p = 8 ranks; its Figure 1's own values are in the
# figure only, not in any text we have).
# k is the paper's: its B_o (15 GB/s on A100) is the rate of each GPU of a
# PCIe switch while both copy (the repository's parallel_offload_time; one
# copying alone gets 1/0.7 of it), which the run reports as
# offload_k_shared (offload_k, the contract's, is at the solo rate: 0.7 of
# it).  The measured host link's uplink is shared by both directions, since
# PipeOffload measured its rate with the pair copying in opposite directions.
# Checked on every cell:
#   - k > 1: the slowdown within max(5 points, half the estimate) of it (the
#     issue's tolerance), rank 0's activation memory cut to x0.75 at most (the
#     repository's lifespan filter keeps late microbatches where 3 round
#     trips no longer fit);
#   - k <= 1: near zero (within 5 points), memory at least halved.
# The estimate assumes balanced stages, as the paper's are: two transformer
# layers on every stage and the LM head + loss alone on the last
# (stage.last_layers=0; with the head on a stage of two layers, that stage is
# the bottleneck and rank 0's reload stalls hide in its idle time: no
# slowdown at all).  Where the head alone outweighs two layers (h=2048
# under earlier A100 parameters; with gemm_eff bounded by 0.9 rank 0 is
# the slowest stage everywhere), the pipeline's pace is the slowest stage's, so the estimate
# is taken on the paces (busy seconds of the run without offload): rank 0's
# m round trips (k x its busy time) against the slowest stage's busy time,
# ((max(k B0, Bmax) / Bmax) - 1) m / (m + p - 1), which is the paper's
# (k - 1) m / (m + p - 1) where rank 0 is the slowest.
# The grid: h 2048-12288 by s 1024-16384 in doublings; at least six cells
# must lie on each side of k = 1; the cells of FIG1_OPEN are printed, not counted.
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" offload_copy

fig1() {   # fig1 H S [--set ...]: JSON of one run into $TMP/out
    local h=$1 s=$2
    shift 2
    timeout "$COMMAND_TIMEOUT_S" "$BIN" run --set workload=gpt --set gpt.layers=14 --set stage.last_layers=0 \
        --set gpt.hidden="$h" --set gpt.heads=$((h / 128)) --set gpt.seq="$s" --set micro_batch_size=1 --set pp=8 \
        --set microbatches=16 --set network=cluster --set cluster.gpu=a100-80g --set cluster.host_link=measured \
        --set schedule=1f1b --set recompute=lgd --set memory.capacity=1TiB --format json "$@" >"$TMP/out" 2>"$TMP/err"
}
# Cells that fail the checks below, said in docs/offload.md (Figure 1, "With the kernel-measured flash
# attention"): at k near 3 the lifespan filter lets few offloads through and the slowdown is under half the
# estimate.  A listed cell that comes within tolerance fails, so the list cannot go stale.
FIG1_OPEN="2048/4096 2048/8192"
nabove=0
nbelow=0
for h in 2048 4096 8192 12288; do
    for s in 1024 2048 4096 8192 16384; do
        fig1 "$h" "$s" || { not_ok "figure 1 h=$h s=$s: baseline runs" "$(head -c 300 "$TMP/err")"; continue; }
        cp "$TMP/out" "$TMP/base.json"
        fig1 "$h" "$s" --set offload=full --set offload.rules=pipeoffload --set offload.copy_model=single \
            --set offload.copy_slots=1 ||
            { not_ok "figure 1 h=$h s=$s: full offload runs" "$(head -c 300 "$TMP/err")"; continue; }
        verdict=$(python3 - "$TMP/base.json" "$TMP/out" <<'PY'
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
k, m, p = b["offload_k_shared"], 16, 8
slow = (b["makespan"] / a["makespan"] - 1) * 100
busy = [r["busy_seconds"] for r in a["ranks"]]
est = (max(k * busy[0], max(busy)) / max(busy) - 1) * m / (m + p - 1) * 100
tol = max(5, est / 2)
act = lambda j: j["ranks"][0]["peak_breakdown"]["activation_bytes"]
ratio = act(b) / act(a)
want_ratio = 0.5 if k <= 1 else 0.75   # halved where k <= 1 (the issue); where k > 1 the repository's
                                       # lifespan filter may keep a few (3 round trips no longer fit)
say = "k=%.3f (%.3f alone) slowdown %.2f %% (estimate %.2f +- %.2f) rank-0 activations x%.3f (want <= %.2f), " \
      "slowest stage %.2f x rank 0" % (k, b["offload_k"], slow, est, tol, ratio, want_ratio, max(busy) / busy[0])
good = abs(slow - est) <= tol and ratio <= want_ratio
print(("bad " if not good else "above " if k > 1 else "below ") + say)
PY
)
        if [[ " $FIG1_OPEN " == *" $h/$s "* ]]; then   # open: said in docs/offload.md, must still be off
            case $verdict in
            bad*) say "# figure 1 h=$h s=$s: open, NOT within the estimate's tolerance (${verdict#bad })" ;;
            *) not_ok "figure 1 h=$h s=$s: open cell now within tolerance: take it off FIG1_OPEN" "$verdict" ;;
            esac
            continue
        fi
        case $verdict in
        above*) ok "figure 1 h=$h s=$s: k > 1 costs the paper's estimate and frees memory (${verdict#above })"
            nabove=$((nabove + 1)) ;;
        below*) ok "figure 1 h=$h s=$s: k <= 1 is free and frees memory (${verdict#below })"
            nbelow=$((nbelow + 1)) ;;
        *) not_ok "figure 1 h=$h s=$s: slowdown and memory" "${verdict#bad }" ;;
        esac
    done
done
# the grid must reach both regions, or the checks above prove little
if [ "$nabove" -ge 6 ] && [ "$nbelow" -ge 6 ]; then
    ok "figure 1: $nabove cells with k > 1 and $nbelow with k <= 1 checked against the estimate"
else not_ok "figure 1: cells checked on each side of k = 1" "$nabove above, $nbelow below"; fi

# The stage layout's bad input: exit 2 naming the file, line and key.
cat >"$TMP/layout.yaml" <<'YAML'
workload: gpt
gpt.layers: 14
gpt.hidden: 1024
gpt.heads: 8
gpt.seq: 1024
pp: 8
stage.last_layers: 9
YAML
expect_rc "stage layout: more fixed layers than the other stages can spare" 2 "$BIN" run "$TMP/layout.yaml"
expect_err "stage layout: at its line" \
    "layout.yaml:7: key 'stage.last_layers': stage.first_layers and stage.last_layers fix 9 layers, leaving 5"
expect_rc "stage layout: one stage" 2 "$BIN" run "$TMP/layout.yaml" --set pp=1 --set stage.last_layers=1
expect_err "stage layout: one stage, said" "key 'stage.last_layers': needs at least 2 pipeline stages"
expect_rc "stage layout: negative" 2 "$BIN" run "$TMP/layout.yaml" --set stage.first_layers=-1
expect_err "stage layout: negative, said" "key 'stage.first_layers': expected an integer between 0"
expect_rc "stage layout: two stages must place every layer" 2 "$BIN" run "$TMP/layout.yaml" --set pp=2 \
    --set stage.first_layers=4 --set stage.last_layers=4
expect_rc "stage layout: two stages holding every layer" 0 "$BIN" run "$TMP/layout.yaml" --set pp=2 \
    --set stage.first_layers=4 --set stage.last_layers=10
# the edge layers of model chunks: pp 2 x 4 chunks, 4 layers on the first chunk and 1 on the last, the 9 others
# on the 6 chunks between (two ranks could not hold that layout as two stages)
expect_rc "stage layout: model chunks at pp 2, interleaved" 0 "$BIN" run "$TMP/layout.yaml" --set pp=2 \
    --set schedule=interleaved --set chunks=4 --set stage.first_layers=4 --set stage.last_layers=1 --set gpt.layers=17
expect_rc "stage layout: model chunks that cannot hold it" 2 "$BIN" run "$TMP/layout.yaml" --set pp=2 \
    --set schedule=interleaved --set chunks=4 --set stage.first_layers=4 --set stage.last_layers=10
expect_err "stage layout: model chunks that cannot hold it, said" "key 'stage.last_layers': stage.first_layers and"
expect_rc "stage layout: ignored with a uniform workload" 0 "$BIN" run --set stage.last_layers=1
expect_err "stage layout: ignored, said" "key 'stage.last_layers': ignored: applies only with workload=gpt or"
test_summary
