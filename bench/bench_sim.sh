#!/usr/bin/env bash
# bench_sim.sh: simulator speed for 1F1B at p x m in {8x64, 64x512, 512x2048}
# on a generated cluster (network=cluster, H100 nodes of 8 GPUs).
# Prints wall time, simulated events (executions + transfers), events/s and
# peak RSS for each size.   Usage: bench/bench_sim.sh [BIN] [SIZES...]
# Sizes are PxM (default: 8x64 64x512 512x2048).
set -eu
BIN=${1:-src/pipegrid}
shift || true
SIZES=${*:-8x64 64x512 512x2048}
printf '%-10s %10s %12s %12s %10s %12s\n' "p x m" "wall_s" "events" "events/s" "rss_MiB" "sim_wall_s"
for size in $SIZES; do
    p=${size%x*}
    m=${size#*x}
    nodes=$(( (p + 7) / 8 ))
    out=$(mktemp)
    /usr/bin/time -f '%e %M' -o "$out.time" "$BIN" run --set schedule=1f1b --set pp="$p" --set microbatches="$m" \
        --set workload=uniform --set uniform.f=1ms --set uniform.b=1ms --set uniform.w=1ms \
        --set uniform.activation=32MiB --set uniform.boundary=32MiB --set network=cluster --set cluster.nodes="$nodes" \
        --set memory.capacity=1TiB --format json >"$out" 2>/dev/null || true
    read -r wall rss_kb <"$out.time"
    python3 - "$out" "$size" "$wall" "$rss_kb" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
sim = j.get("simulator", {})
ev = sim.get("events", 0); sw = sim.get("wall_seconds", 0.0)
wall = float(sys.argv[3]); rss = int(sys.argv[4]) / 1024
print(f"{sys.argv[2]:<10} {wall:10.2f} {ev:12d} {ev / wall if wall else 0:12.0f} {rss:10.1f} {sw:12.2f}")
PY
    rm -f "$out" "$out.time"
done
