#!/bin/bash
# optimize_bound.sh: optimize's throughput bound with the data-parallel
# gradient all-reduce (opt/bound_dp.c) is sound and prunes nothing that
# matters: on two generated clusters (2 nodes x 4 GPUs: dp rings over
# NVLink or across the NICs; 4 nodes x 2 GPUs: hierarchical all-reduces),
# every candidate of a tp x pp x dp x schedule x dp.overlap x bucket (x
# dp.algorithm) grid is also run on its own, and
#   - no simulated samples/s exceeds the candidate's bound (bound <= iteration),
#   - optimize's best is the best of the exhaustive runs,
#   - a candidate pruned by the bound is slower than that best,
#   - the bound carries the all-reduce: where it dominates (no overlap, the
#     whole gradient over the NICs) the bound is within 5 % of the simulation.
#   tests/optimize_bound.sh [BIN]
. "$(dirname "$0")/lib.sh" optimize_bound
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac

# 2 ms ops, 2e9 parameters per stage: the all-reduce (seconds of NIC time
# at dp 8) and the pipeline (tens of ms) both matter
U=(--set workload=uniform --set uniform.f=2ms --set uniform.b=2ms --set uniform.w=2ms --set uniform.params=2e9
   --set uniform.activation=64MiB --set uniform.boundary=16MiB --set network=cluster --set cluster.gpu=a100-80g
   --set pp=8 --set microbatches=8 --set memory.capacity=80GiB)

check_layout() { # NAME NODES GPUS_PER_NODE GRID...
    local name=$1 nodes=$2 gpn=$3
    shift 3
    local sets=("${U[@]}" --set cluster.nodes="$nodes" --set cluster.gpus_per_node="$gpn")
    expect_rc "$name: optimize --format csv" 0 "$BIN" optimize "${sets[@]}" "$@" --format csv -j 2
    cp "$TMP/out" "$TMP/$name.csv"
    python3 - "$BIN" "$TMP/$name.csv" "${sets[@]}" <<'PY' && ok "$name: bound <= every simulated iteration, best = exhaustive best, nothing needed pruned" \
        || not_ok "$name: bound <= every simulated iteration, best = exhaustive best, nothing needed pruned"
import csv, subprocess, sys
binary, path, sets = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = list(csv.DictReader(open(path)))
grid_keys = [k for k in rows[0] if k in ("tp", "pp", "dp", "microbatches", "schedule", "recompute", "offload")
             or k.startswith("dp.")]
best_opt = [r for r in rows if r["best"] == "1"]
assert len(best_opt) == 1, "one best"
top, checked, tight = 0.0, 0, 0
for r in rows:
    if r["status"] == "invalid":
        continue
    cmd = [binary, "run", *sets] + [a for k in grid_keys for a in ("--set", f"{k}={r[k]}")] + ["--format", "csv"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        assert r["status"] != "simulated" or r["exit_code"] == str(p.returncode), (r, p.returncode)
        continue
    run = list(csv.DictReader(p.stdout.splitlines()))[0]
    sim, bound = float(run["samples_per_second"]), float(r["samples_per_second_bound"])
    assert sim <= bound * (1 + 1e-9), ("bound below the simulation", {k: r[k] for k in grid_keys}, sim, bound)
    if r["status"] == "simulated":
        assert abs(float(r["samples_per_second"]) - sim) <= 1e-9 * sim, (r, sim)
    checked += 1
    top = max(top, sim)
    if r.get("dp.overlap") == "false" and int(r["dp"]) > 1 and int(r["pp"]) == 1 and bound <= 1.05 * sim:
        tight += 1
assert checked >= 10, checked
assert abs(float(best_opt[0]["samples_per_second"]) - top) <= 1e-9 * top, (best_opt[0]["samples_per_second"], top)
for r in rows:
    if r["status"] == "pruned_bound":
        assert float(r["samples_per_second_bound"]) < top, r
assert tight > 0, "no all-reduce-bound candidate within 5 % of its simulation"
print(f"# {path}: {checked} candidates run, best {top:.6g} samples/s, {tight} tight")
PY
}

check_layout nodes2x4 2 4 --grid schedule=1f1b,zb-v --grid recompute=none --grid offload=none \
    --grid dp.overlap=true,false --grid dp.bucket_bytes=4MiB,0
check_layout nodes4x2 4 2 --grid schedule=zb-h1 --grid recompute=none --grid offload=none \
    --grid dp.overlap=true,false --grid dp.algorithm=auto,ring

test_summary
