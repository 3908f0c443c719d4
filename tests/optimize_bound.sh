#!/bin/bash
# optimize_bound.sh: optimize's throughput bound with the data-parallel
# gradient all-reduce (opt/bound_dp.c) and the tensor-parallel collectives
# (job/job_bound.c) is sound and prunes nothing that matters: on generated
# clusters (2 nodes x 4 GPUs: dp rings over NVLink or across the NICs; 4
# nodes x 2 GPUs: hierarchical all-reduces; a GPT with 8 layers a stage:
# 16 tp collectives an op, with and without sequence parallelism, and
# DualPipeV's overlapped pairs; the same with full and selective
# recomputation under selective offload), every
# candidate of a tp x pp x dp x schedule x dp.overlap x bucket (x
# dp.algorithm, x tp.sequence_parallel) grid is also run on its own, and
#   - no simulated samples/s exceeds the candidate's bound (bound <= iteration),
#   - optimize's best is the best of the exhaustive runs,
#   - a candidate pruned by the bound is slower than that best,
#   - the bound carries the communication and the recomputation: where the
#     all-reduce dominates (no overlap, pp 1, the whole gradient over the
#     NICs), the tp collectives (tp 4, dp 1), or full recomputation (tp 4, dp
#     1), the bound is within 5 % of the simulation.
#   tests/optimize_bound.sh [BIN]
. "$(dirname "$0")/lib.sh" optimize_bound
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac

# 2 ms ops, 2e9 parameters per stage: the all-reduce (seconds of NIC time
# at dp 8) and the pipeline (tens of ms) both matter
UNIFORM=(--set workload=uniform --set uniform.f=2ms --set uniform.b=2ms --set uniform.w=2ms --set uniform.params=2e9
   --set uniform.activation=64MiB --set uniform.boundary=16MiB --set network=cluster --set cluster.gpu=a100-80g
   --set pp=8 --set microbatches=8 --set memory.capacity=80GiB)
GPT=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=2048 --set gpt.heads=16 --set gpt.seq=1024
   --set network=cluster --set cluster.gpu=a100-80g --set pp=8 --set microbatches=8 --set memory.capacity=80GiB)

check_layout() { # NAME WORKLOAD(UNIFORM|GPT) TIGHT(dp|tp|full) NODES GPUS_PER_NODE GRID...
    local name=$1 tight=$3 nodes=$4 gpn=$5
    local -n wl=$2
    shift 5
    local sets=("${wl[@]}" --set cluster.nodes="$nodes" --set cluster.gpus_per_node="$gpn")
    expect_rc "$name: optimize --format csv" 0 "$BIN" optimize "${sets[@]}" "$@" --format csv -j 2
    cp "$TMP/out" "$TMP/$name.csv"
    python3 - "$BIN" "$TMP/$name.csv" "$tight" "${sets[@]}" <<'PY' && ok "$name: bound <= every simulated iteration, best = exhaustive best, nothing needed pruned" \
        || not_ok "$name: bound <= every simulated iteration, best = exhaustive best, nothing needed pruned"
import csv, subprocess, sys
binary, path, rule, sets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
rows = list(csv.DictReader(open(path)))
grid_keys = [k for k in rows[0] if k in ("tp", "pp", "dp", "microbatches", "schedule", "recompute", "offload")
             or k.startswith("dp.") or k.startswith("tp.")]
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
    dominated = (r.get("dp.overlap") == "false" and int(r["dp"]) > 1 and int(r["pp"]) == 1 if rule == "dp"
                 else int(r["tp"]) == 4 and int(r["dp"]) == 1 and r["recompute"] == ("full" if rule == "full" else "none"))
    if dominated and bound <= 1.05 * sim:
        tight += 1
assert checked >= 10, checked
assert abs(float(best_opt[0]["samples_per_second"]) - top) <= 1e-9 * top, (best_opt[0]["samples_per_second"], top)
for r in rows:
    if r["status"] == "pruned_bound":
        assert float(r["samples_per_second_bound"]) < top, r
assert tight > 0, f"no {rule}-communication-bound candidate within 5 % of its simulation"
print(f"# {path}: {checked} candidates run, best {top:.6g} samples/s, {tight} tight")
PY
}

check_layout nodes2x4 UNIFORM dp 2 4 --grid schedule=1f1b,zb-v --grid recompute=none --grid offload=none \
    --grid dp.overlap=true,false --grid dp.bucket_bytes=4MiB,0
check_layout nodes4x2 UNIFORM dp 4 2 --grid schedule=zb-h1 --grid recompute=none --grid offload=none \
    --grid dp.overlap=true,false --grid dp.algorithm=auto,ring
check_layout gpt2x4 GPT tp 2 4 --grid schedule=1f1b,zb-h1,dualpipe-v --grid recompute=none --grid offload=none \
    --grid tp.sequence_parallel=true,false --grid dp.overlap=true
check_layout gptremat GPT full 2 4 --grid schedule=1f1b,zb-h1 --grid recompute=none,full,selective \
    --grid offload=selective --grid dp.overlap=true

test_summary
