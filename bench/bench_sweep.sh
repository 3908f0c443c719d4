#!/usr/bin/env bash
# bench_sweep.sh: wall time of a 1,000-configuration sweep (p=8, m=32, 1F1B,
# network=ideal, workload=uniform; the grid is 10 x 10 x 10 values of
# uniform.f, uniform.b and uniform.w) with -j 2, and, for comparison, the
# same 1,000 runs as separate `pipegrid run` processes (exec per run, two at
# a time with xargs -P), which is what the sweep's fork-without-exec avoids.
# Usage: bench/bench_sweep.sh [BIN] [JOBS]      (--no-baseline skips the exec comparison)
set -eu
baseline=1
args=()
for a in "$@"; do
    if [ "$a" = --no-baseline ]; then baseline=0; else args+=("$a"); fi
done
BIN=${args[0]:-src/pipegrid}
JOBS=${args[1]:-2}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
V=1,2,3,4,5,6,7,8,9,10
COMMON=(--set pp=8 --set microbatches=32 --set schedule=1f1b --set workload=uniform --set network=ideal)

printf 'host: %s cores, load average %s\n' "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
"$BIN" sweep --grid uniform.f=$V --grid uniform.b=$V --grid uniform.w=$V "${COMMON[@]}" -j "$JOBS" \
    --format csv >"$TMP/sweep.csv"
end=$(date +%s.%N)
rows=$(($(wc -l <"$TMP/sweep.csv") - 1))
ok=$(python3 - "$TMP/sweep.csv" <<'PY'
import csv, sys
print(sum(1 for r in csv.DictReader(open(sys.argv[1])) if r["exit_code"] == "0" and r["makespan"]))
PY
)
wall=$(python3 -c "print(f'{$end - $start:.2f}')")
echo "sweep: $rows rows ($ok with exit_code 0 and a makespan), -j $JOBS, wall ${wall} s" \
     "($(python3 -c "print(f'{($end - $start) / max($rows, 1) * 1000:.1f}')") ms per configuration)"

if [ "$baseline" = 1 ]; then
    for f in 1 2 3 4 5 6 7 8 9 10; do for b in 1 2 3 4 5 6 7 8 9 10; do for w in 1 2 3 4 5 6 7 8 9 10; do
        echo "$f $b $w"
    done; done; done >"$TMP/grid"
    start=$(date +%s.%N)
    # shellcheck disable=SC2016
    xargs -P "$JOBS" -L 1 sh -c '"$0" run --set uniform.f="$1" --set uniform.b="$2" --set uniform.w="$3" \
        --set pp=8 --set microbatches=32 --set schedule=1f1b --set workload=uniform --set network=ideal \
        --format csv >/dev/null' "$BIN" <"$TMP/grid"
    end=$(date +%s.%N)
    echo "baseline: the same 1000 runs as exec'd processes (xargs -P $JOBS), wall" \
         "$(python3 -c "print(f'{$end - $start:.2f}')") s"
fi
