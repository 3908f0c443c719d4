#!/usr/bin/env bash
# bench_instr.sh: instructions executed inside simgrid_run (valgrind
# callgrind, --toggle-collect=simgrid_run), for the bare actor replay and
# pipegrid's two engines on 1F1B p x m (same inputs as bench_engine.sh).
# Instruction counts do not depend on the machine's load, unlike times on a
# shared machine.   Usage: bench/bench_instr.sh [PxM]   (default 64x512)
set -eu
BIN=${PIPEGRID:-src/pipegrid}
BARE=${BARE:-bench/bare_replay}
size=${1:-64x512}
p=${size%x*}
m=${size#*x}
nodes=$(( (p + 7) / 8 ))
RUN=(run --set schedule=1f1b --set pp="$p" --set microbatches="$m" --set workload=uniform --set uniform.f=1ms
     --set uniform.b=1ms --set uniform.w=1ms --set uniform.activation=32MiB --set uniform.boundary=32MiB
     --set network=cluster --set cluster.nodes="$nodes" --set memory.capacity=1TiB --format json)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
count() {   # count NAME ENGINE CMD...: instructions in simgrid_run
    local name=$1 engine=$2
    shift 2
    PIPEGRID_ENGINE=$engine valgrind --tool=callgrind --toggle-collect=simgrid_run --callgrind-out-file="$dir/$name.out" "$@" \
        >/dev/null 2>"$dir/$name.err"
    sed -n 's/^summary: //p;s/^totals: //p' "$dir/$name.out" | head -1
}
bare=$(count bare "" "$BARE" "$p" "$m")
events=$(count events "" "$BIN" "${RUN[@]}")
actors=$(count actors actors "$BIN" "${RUN[@]}")
printf '%-9s %-7s %15s %7s\n' "p x m" engine "instructions" "x bare"
for name in bare events actors; do
    n=${!name}
    printf '%-9s %-7s %15d %7.2f\n' "$size" "$name" "$n" "$(python3 -c "print($n / $bare)")"
done
