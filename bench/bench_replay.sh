#!/usr/bin/env bash
# bench_replay.sh: issue 35's acceptance jobs (bench/replay/*.yaml), one
# iteration each: wall and CPU seconds of the whole process, peak RSS, the
# replicas simulated (a symmetric block of dp: src/sim/replicas.c), the
# replay that ran, events and the simulated makespan.  Not timed in the test
# suite (tests/replay.sh checks the results on small jobs).
# Usage: bench/bench_replay.sh [BIN] [--full]
#   --full  also runs each job with dp.replicas=all (every replica: the
#           reference, minutes each) and prints the makespans' relative gap.
set -eu
BIN=${1:-src/pipegrid}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
FULL=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
JOBS="grok1-1024 gpt3-2048 gpt3-8192"
printf '%-12s %-5s %8s %8s %8s %10s %9s %-15s %18s\n' job mode wall_s cpu_s rss_MiB events replicas engine makespan_s
run_one() {   # JOB MODE [SETS...]
    local job=$1 mode=$2
    shift 2
    local out
    out=$(mktemp)
    /usr/bin/time -f '%e %M %U %S' -o "$out.time" "$BIN" run "$HERE/replay/$job.yaml" "$@" --format json \
        >"$out" 2>"$out.err" || { echo "$job: exit $?: $(head -c 300 "$out.err")"; rm -f "$out"*; return; }
    read -r wall rss_kb user_s sys_s <"$out.time"
    python3 - "$out" "$job" "$mode" "$wall" "$rss_kb" "$user_s" "$sys_s" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
job, mode, wall, rss, u, s = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
sim = d["simulator"]
print("%-12s %-5s %8.2f %8.2f %8.0f %10d %9s %-15s %18.12f" % (job, mode, wall, u + s, rss / 1024, sim["events"],
      "%d/%d" % (sim["replicas_simulated"], sim["replicas"]), sim["engine"], d["makespan"]))
PY
    cp "$out" "${TMPDIR:-/tmp}/bench_replay.$job.$mode.json"
    rm -f "$out" "$out.time" "$out.err"
}
for job in $JOBS; do
    # relative to the source tree: the YAMLs name bench/replay/grok1-shape.json
    (cd "$HERE/.." && run_one "$job" auto)
    if [ "$FULL" = --full ]; then
        (cd "$HERE/.." && run_one "$job" all --set dp.replicas=all)
        python3 - "${TMPDIR:-/tmp}/bench_replay.$job.auto.json" "${TMPDIR:-/tmp}/bench_replay.$job.all.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["makespan"] for p in sys.argv[1:3])
print("  makespan relative gap, block against every replica: %.3g" % (abs(a - b) / max(abs(a), abs(b))))
PY
    fi
done
