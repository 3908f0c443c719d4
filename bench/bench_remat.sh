#!/usr/bin/env bash
# bench_remat.sh: the rematerialization ILP (recompute=plan, seed 004) at
# issue 5's size, p = 8 and m = 32 on the 6.2B profile, network=ideal, with a
# 60 s time limit: for each schedule and memory capacity, how it ended
# (proven optimal within recompute.gap, or time limit), the plan's
# predicted makespan, GLPK's proven bound, the gap between them and the
# seconds spent.  Middle budgets (20-24 GiB) are the hard ones.
# GAP (default the planner's, 0.001) is recompute.gap: 0.03 is seed 004's
# own stopping rule (its ILP runs CBC with a 60 s limit and a 3 % gap).
#   Usage: bench/bench_remat.sh [BIN] [TIME_LIMIT_S] [GAP]
# Cases run one after the other (each uses one core).  16 bytes per
# parameter (bf16 weight and gradient, fp32 master and moments), the
# default when docs/planners.md's table was measured: at Megatron's 18 (fp32
# gradient, today's default) the 17 GiB budget fits no plan.
set -eu
BIN=${1:-src/pipegrid}
LIMIT=${2:-60}
GAP=${3:-0.001}
printf '%-6s %8s  %-15s %10s %10s %8s %8s\n' schedule capacity method makespan_s bound_s gap_% wall_s
for sched in 1f1b zb-h1; do
    for cap in 80GiB 30GiB 24GiB 20GiB 17GiB; do
        out=$(mktemp)
        start=$(date +%s.%N)
        "$BIN" plan remat --set workload=profiles/zb-gpt-6.2b.yaml --set pp=8 --set microbatches=32 \
            --set schedule="$sched" --set memory.capacity="$cap" --set network=ideal --set memory.bytes_per_param=16 \
            --set recompute.time_limit="$LIMIT" --set recompute.gap="$GAP" --format json >"$out" 2>/dev/null || true
        end=$(date +%s.%N)
        python3 - "$out" "$sched" "$cap" "$start" "$end" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except ValueError:
    print(f"{sys.argv[2]:<6} {sys.argv[3]:>8}  (no plan: does not fit)")
    sys.exit(0)
mk, bound = j["makespan"], j["ilp_bound"]
gap = f"{100 * (mk - bound) / mk:8.3f}" if bound > 0 else "       -"
wall = float(sys.argv[5]) - float(sys.argv[4])
print(f"{sys.argv[2]:<6} {sys.argv[3]:>8}  {j['method']:<15} {mk:10.5f} {bound:10.5f} {gap} {wall:8.1f}")
PY
        rm -f "$out"
    done
done
