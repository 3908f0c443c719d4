#!/bin/bash
# bench_optimize.sh: the wall time of issue 35's two acceptance searches with `pipegrid optimize`'s default
# search space, each under a time limit (the acceptance target): Llama-3-70B on 128 A100 (16 nodes), global
# batch 512, sequence 8192 (target 60 s); Llama-3.1-405B on 1,024 H100 (128 nodes), global batch 2048 (Meta's
# 16M tokens), sequence 8192 (target 300 s).  Not a test: it prints, per search, the wall and CPU seconds, the
# load average when it started (on a shared machine wall time is mostly waiting), the exit code
# (0 complete, 5 cut by --time-limit), the summary line and the best plan.
#   bench/bench_optimize.sh [BIN] [LIMIT_70B_S] [LIMIT_405B_S]
set -u
BIN=${1:-src/pipegrid}
LIMIT_70B=${2:-60}
LIMIT_405B=${3:-300}
HERE=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
experiment() { # MODEL GPU NODES TP PP DP BATCH: a starting layout (optimize keeps its GPU count and batch)
    cat <<YAML
workload: hf:$HERE/profiles/models/$1.json
gpt:
  seq: 8192
network: cluster
cluster:
  gpu: $2
  nodes: $3
tp: $4
pp: $5
dp: $6
micro_batch_size: 1
global_batch_size: $7
schedule: 1f1b
YAML
}
experiment llama3-70b a100-80g 16 8 4 4 512 > "$TMP/70b.yaml"
experiment llama3.1-405b h100-sxm 128 8 16 8 2048 > "$TMP/405b.yaml"
for case in "70b $LIMIT_70B" "405b $LIMIT_405B"; do
    read -r name limit <<<"$case"
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$TMP/cpu" "$BIN" optimize "$TMP/$name.yaml" --time-limit "$limit" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    end=$(date +%s.%N)
    read -r user sys < <(tail -n 1 "$TMP/cpu")   # after "Command exited with non-zero status N"
    printf '%s: wall %.1f s, CPU %.1f s (user + sys, children included), exit %d (limit %s s), load %s at start\n' \
        "$name" "$(echo "$end - $start" | bc)" "$(echo "$user + $sys" | bc)" "$rc" "$limit" "$load"
    grep -E 'candidates \(global batch|search cut' "$TMP/err"
    grep -E '<- best' "$TMP/out" || echo "  (no plan that fits found)"
    tail -n 3 "$TMP/err" | grep -E ' s: ' | tail -n 1
done
