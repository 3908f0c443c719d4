#!/usr/bin/env bash
# bench_engine.sh: the engine's speed goals (issue 17), as ratios to the bare
# actor replay (bench/bare_replay.c) on 1F1B p x m, F = B = W = 1 ms,
# 32 MiB messages, network=cluster of ceil(p / 8) H100 nodes.
#
# For each size it runs, one after the other:
#   bare     bench/bare_replay P M         the reference
#   events   pipegrid run ...               pipegrid's default engine (the replay without actors)
#   actors   PIPEGRID_ENGINE=actors pipegrid run ...   the actor replay
# and prints for each: CPU seconds of the replay alone (simgrid_run; for
# pipegrid from its debug log line) and of the whole process (user + sys:
# the machine is shared, CPU time is what load inflates least), wall
# seconds (PIPEGRID_SIM_LOG=pg_engine.thres:info prints that line), simulated events, events per replay CPU second, peak RSS, bytes
# of RSS per event above an 8 x 16 run of the same program, the makespan,
# and both CPU times over bare's.
#
# Usage: bench/bench_engine.sh [SIZES...]   (default: 64x512 512x2048)
# Build first: make src/pipegrid bench/bare_replay
set -eu
BIN=${PIPEGRID:-src/pipegrid}
BARE=${BARE:-bench/bare_replay}
SIZES=${*:-64x512 512x2048}

# run_one NAME P M: "run_cpu_s cpu_s wall_s events rss_kib makespan"
run_one() {
    local name=$1 p=$2 m=$3 nodes=$(( ($2 + 7) / 8 )) out tm
    out=$(mktemp)
    tm=$(mktemp)
    case $name in
    bare)
        /usr/bin/time -f '%U %S %e %M' -o "$tm" "$BARE" "$p" "$m" >"$out"
        read -r _ _ makespan _ events _ _ run_cpu <"$out"
        ;;
    events|actors)
        local env=(env PIPEGRID_SIM_LOG=pg_engine.thres:info)
        [ "$name" = actors ] && env+=(PIPEGRID_ENGINE=actors)
        /usr/bin/time -f '%U %S %e %M' -o "$tm" "${env[@]}" "$BIN" run --set schedule=1f1b --set pp="$p" \
            --set microbatches="$m" --set workload=uniform --set uniform.f=1ms --set uniform.b=1ms \
            --set uniform.w=1ms --set uniform.activation=32MiB --set uniform.boundary=32MiB --set network=cluster \
            --set cluster.nodes="$nodes" --set memory.capacity=1TiB --format json >"$out" 2>"$out.log"
        run_cpu=$(sed -n 's/.*\] run: .* s wall, \([0-9.]*\) s cpu.*/\1/p' "$out.log")
        rm -f "$out.log"
        read -r events makespan < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["simulator"]["events"], repr(j["makespan"]))' "$out")
        ;;
    esac
    read -r user sys wall rss <"$tm"
    rm -f "$out" "$tm"
    echo "$run_cpu $(python3 -c "print($user + $sys)") $wall $events $rss $makespan"
}

printf '%-9s %-7s %9s %8s %8s %10s %11s %8s %8s %14s %7s %7s\n' "p x m" engine run_cpu_s cpu_s wall_s events \
    "events/cpu" rss_MiB "B/event" makespan_s "run/x" "all/x"
declare -A base_rss
for name in bare events actors; do
    read -r _ _ _ _ rss _ < <(run_one "$name" 8 16)
    base_rss[$name]=$rss
done
for size in $SIZES; do
    p=${size%x*}
    m=${size#*x}
    bare_run= bare_cpu=
    for name in bare events actors; do
        read -r run_cpu cpu wall events rss makespan < <(run_one "$name" "$p" "$m")
        [ -z "$bare_cpu" ] && bare_cpu=$cpu && bare_run=$run_cpu
        python3 - "$size" "$name" "$run_cpu" "$cpu" "$wall" "$events" "$rss" "${base_rss[$name]}" "$makespan" \
            "$bare_run" "$bare_cpu" <<'PY'
import sys
size, name = sys.argv[1:3]
run, cpu, wall, ev, rss, base, mk, bare_run, bare = (float(x) for x in sys.argv[3:])
per_ev = (rss - base) * 1024 / ev if ev else 0
print(f"{size:<9} {name:<7} {run:9.2f} {cpu:8.2f} {wall:8.2f} {ev:10.0f} {ev / run if run else 0:11.0f} "
      f"{rss / 1024:8.1f} {per_ev:8.1f} {mk:14.9f} {run / bare_run:7.2f} {cpu / bare:7.2f}")
PY
    done
done
