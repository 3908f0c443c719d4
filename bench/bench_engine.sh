#!/usr/bin/env bash
# bench_engine.sh: the engine's speed goals (issue 17), as ratios to the bare
# actor replay (bench/bare_replay.c) on 1F1B p x m, F = B = W = 1 ms,
# 32 MiB messages, network=cluster of ceil(p / 8) H100 nodes.
#
# For each size it runs, one after the other:
#   bare     bench/bare_replay P M         the reference
#   events   pipegrid run ...               pipegrid's default engine (the replay without actors)
#   actors   PIPEGRID_ENGINE=actors pipegrid run ...   the actor replay
# and prints for each: CPU seconds (user + sys: the machine is shared, CPU
# time is what load does not inflate), wall seconds, simulated events,
# events per CPU second, peak RSS, bytes of RSS per event above an 8 x 16
# run of the same program, its makespan, and its CPU time over bare's.
#
# Usage: bench/bench_engine.sh [SIZES...]   (default: 64x512 512x2048)
# Build first: make src/pipegrid bench/bare_replay
set -eu
BIN=${PIPEGRID:-src/pipegrid}
BARE=${BARE:-bench/bare_replay}
SIZES=${*:-64x512 512x2048}

# run_one NAME P M: "cpu_s wall_s events rss_kib makespan"
run_one() {
    local name=$1 p=$2 m=$3 nodes=$(( ($2 + 7) / 8 )) out tm
    out=$(mktemp)
    tm=$(mktemp)
    case $name in
    bare)
        /usr/bin/time -f '%U %S %e %M' -o "$tm" "$BARE" "$p" "$m" >"$out"
        read -r _ _ makespan _ events _ _ <"$out"
        ;;
    events|actors)
        local env=()
        [ "$name" = actors ] && env=(env PIPEGRID_ENGINE=actors)
        /usr/bin/time -f '%U %S %e %M' -o "$tm" "${env[@]}" "$BIN" run --set schedule=1f1b --set pp="$p" \
            --set microbatches="$m" --set workload=uniform --set uniform.f=1ms --set uniform.b=1ms \
            --set uniform.w=1ms --set uniform.activation=32MiB --set uniform.boundary=32MiB --set network=cluster \
            --set cluster.nodes="$nodes" --set memory.capacity=1TiB --format json >"$out" 2>/dev/null
        read -r events makespan < <(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["simulator"]["events"], repr(j["makespan"]))' "$out")
        ;;
    esac
    read -r user sys wall rss <"$tm"
    rm -f "$out" "$tm"
    echo "$(python3 -c "print($user + $sys)") $wall $events $rss $makespan"
}

printf '%-9s %-7s %8s %8s %10s %11s %9s %9s %14s %8s\n' "p x m" engine cpu_s wall_s events "events/cpu" rss_MiB "B/event" makespan_s "x bare"
declare -A base_rss
for name in bare events actors; do
    read -r _ _ _ rss _ < <(run_one "$name" 8 16)
    base_rss[$name]=$rss
done
for size in $SIZES; do
    p=${size%x*}
    m=${size#*x}
    bare_cpu=
    for name in bare events actors; do
        read -r cpu wall events rss makespan < <(run_one "$name" "$p" "$m")
        [ -z "$bare_cpu" ] && bare_cpu=$cpu
        python3 - "$size" "$name" "$cpu" "$wall" "$events" "$rss" "${base_rss[$name]}" "$makespan" "$bare_cpu" <<'PY'
import sys
size, name, cpu, wall, ev, rss, base, mk, bare = sys.argv[1:]
cpu, wall, ev, rss, base, mk, bare = float(cpu), float(wall), int(ev), int(rss), int(base), float(mk), float(bare)
per_ev = (rss - base) * 1024 / ev if ev else 0
print(f"{size:<9} {name:<7} {cpu:8.2f} {wall:8.2f} {ev:10d} {ev / cpu if cpu else 0:11.0f} {rss / 1024:9.1f} "
      f"{per_ev:9.1f} {mk:14.9f} {cpu / bare if bare else 0:8.2f}")
PY
    done
done
