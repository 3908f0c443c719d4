#!/usr/bin/env bash
# bench_cluster.sh: whole training iterations of GPT models with tensor, data and
# pipeline parallelism (workload=gpt, network=cluster, 8 GPUs per node): wall time,
# simulated events (executions + transfers) and events/s in simgrid_run (sim_s), the whole process's CPU
# seconds (user + system), peak RSS, the replicas simulated (1 of dp when symmetric: dp.replicas), and the
# simulated iteration with its breakdown (pipeline, exposed dp all-reduce, optimizer).
# Usage: bench/bench_cluster.sh [BIN] [CASES...]
# A case is NAME:GPU:LAYERS:HIDDEN:HEADS:SEQ:TP:PP:DP:GLOBAL_BATCH (micro batch 1).
set -eu
BIN=${1:-src/pipegrid}
shift || true
DEFAULT_CASES="gpt175b-512:a100-80g:96:12288:96:2048:8:8:8:1536 gpt175b-512-h100:h100-sxm:96:12288:96:2048:8:8:8:1536 \
gpt13b-64:a100-80g:40:5120:40:2048:2:4:8:512 gpt6.7b-64-dp16:h100-sxm:32:4096:32:2048:1:4:16:512 \
gpt39b-64-tp8:h100-sxm:48:8192:64:2048:8:8:1:256"
CASES=${*:-$DEFAULT_CASES}
printf '%-22s %5s %8s %8s %8s %10s %12s %9s %8s %10s %10s %10s %10s\n' case gpus wall_s cpu_s sim_s events events/s \
    rss_MiB replicas iter_s pipe_s dp_ar_s opt_s
# An experiment of its own: the bundled default fixes microbatches.
EXP=$(mktemp --suffix=.yaml)
trap 'rm -f "$EXP"' EXIT
echo "name: bench_cluster" >"$EXP"
for c in $CASES; do
    IFS=: read -r name gpu layers hidden heads seq tp pp dp gbs <<<"$c"
    gpus=$((tp * pp * dp))
    nodes=$(((gpus + 7) / 8))
    out=$(mktemp)
    rc=0
    /usr/bin/time -f '%e %M %U %S' -o "$out.time" "$BIN" run "$EXP" --set schedule=1f1b --set workload=gpt \
        --set gpt.layers="$layers" --set gpt.hidden="$hidden" --set gpt.heads="$heads" --set gpt.seq="$seq" \
        --set tp="$tp" --set pp="$pp" --set dp="$dp" --set micro_batch_size=1 --set global_batch_size="$gbs" \
        --set network=cluster --set cluster.nodes="$nodes" --set cluster.gpu="$gpu" --set memory.capacity=1TiB \
        ${BENCH_SETS:-} --format json >"$out" 2>"$out.err" || rc=$?
    read -r wall rss_kb user_s sys_s <"$out.time"
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
        echo "$name: exit $rc: $(head -c 300 "$out.err")"
        rm -f "$out" "$out.time" "$out.err"
        continue
    fi
    python3 - "$out" "$name" "$gpus" "$wall" "$rss_kb" "$user_s" "$sys_s" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
sim = j.get("simulator", {})
it = j.get("iteration", {})
ev = sim.get("events", 0)
wall = float(sys.argv[4]); rss = int(sys.argv[5]) / 1024
sw = sim.get("wall_seconds", 0.0)
cpu = float(sys.argv[6]) + float(sys.argv[7])
reps = f"{sim.get('replicas_simulated', 1)}/{sim.get('replicas', 1)}"
print(f"{sys.argv[2]:<22} {sys.argv[3]:>5} {wall:8.2f} {cpu:8.2f} {sw:8.2f} {ev:10d} {ev / sw if sw else 0:12.0f} {rss:9.1f} "
      f"{reps:>8} "
      f"{j['iteration_seconds']:10.4f} {it.get('pipeline_seconds', 0):10.4f} "
      f"{it.get('dp_allreduce_seconds', 0):10.4f} {it.get('optimizer_seconds', 0):10.4f}")
PY
    rm -f "$out" "$out.time" "$out.err"
done
