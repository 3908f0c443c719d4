#!/usr/bin/env bash
# contract.sh: the command lines of the command-line contract, run against a
# built binary (default src/pipegrid).  Each check prints "ok - ..." or
# "not ok - ...", and the script ends with "contract: N passed, M failed"
# (make check keeps it as tests/contract.log for the suite's summary).
set -u
BIN=${1:-src/pipegrid}
. "$(dirname "$0")/lib.sh" contract
# expect_py NAME PYTHON: run PYTHON with the last stdout as `out` (text) and `j` (parsed JSON, if any).
expect_py() {
    if python3 - "$TMP/out" <<EOF 2>"$TMP/pyerr"; then ok "$1"; else not_ok "$1" "$(tail -n 3 "$TMP/pyerr")"; fi
import json, sys
out = open(sys.argv[1]).read()
try:
    j = json.loads(out)
except ValueError:
    j = None
$2
EOF
}

UNIFORM=(--set workload=uniform --set uniform.f=1 --set uniform.b=1 --set uniform.w=1 --set network=ideal
         --set ideal.latency=0)

# ---- the binary ----
expect_rc "--help exits 0" 0 "$BIN" --help
expect_rc "--version exits 0" 0 "$BIN" --version
expect_py "--version prints the version" 'assert out.startswith("pipegrid ")'

# ---- run ----
expect_rc "run with no file runs the bundled default" 0 "$BIN" run
expect_py "default run prints a human summary" 'assert "makespan" in out.lower(), out[:300]'

expect_rc "1F1B p=4 m=8 F=B=W=1 ideal runs" 0 "$BIN" run --set schedule=1f1b --set pp=4 --set microbatches=8 \
    "${UNIFORM[@]}" --format json
expect_py "--format json is exactly one JSON object with the contract's fields" '
assert isinstance(j, dict), out[:200]
for k in ["makespan", "span", "stage_span", "bubble_ratio", "peak_activations", "peak_memory_bytes", "oom",
          "recompute_seconds", "offload_bytes", "iteration_seconds"]:
    assert k in j, k
assert len(j["stage_span"]) == 4 and len(j["peak_activations"]) == 4 and j["oom"] == []'
expect_py "1F1B p=4 m=8 makespan is (m+p-1)(F+B+W) = 33" 'assert abs(j["makespan"] - 33) < 1e-9, j["makespan"]'
expect_py "1F1B peak activations are min(p-s, m)" 'assert j["peak_activations"] == [4, 3, 2, 1], j["peak_activations"]'

expect_rc "GPipe with latency runs" 0 "$BIN" run --set schedule=gpipe --set pp=8 --set microbatches=32 \
    --set workload=uniform --set uniform.f=1 --set uniform.b=1.1 --set uniform.w=0.9 --set network=ideal \
    --set ideal.latency=0.05 --format json
expect_py "GPipe p=8 m=32 latency 0.05 makespan 117.7" 'assert abs(j["makespan"] - 117.7) < 1e-9 * 117.7, j["makespan"]'

expect_rc "--format csv" 0 "$BIN" run --set schedule=1f1b --set pp=4 --set microbatches=8 "${UNIFORM[@]}" --format csv
expect_py "csv has a header and one row with the sweep columns" '
import csv, io
rows = list(csv.reader(io.StringIO(out)))
assert len(rows) == 2, rows
h = rows[0]
for k in ["makespan", "span", "bubble_ratio", "max_peak_memory_bytes", "oom", "exit_code"]:
    assert k in h, k
assert abs(float(rows[1][h.index("makespan")]) - 33) < 1e-9'

# ---- bad input: exit 2, naming file, line and key ----
expect_rc "pp=0 is bad input" 2 "$BIN" run --set pp=0
expect_err "pp=0 names the key" "pp"
expect_rc "unknown key is bad input" 2 "$BIN" run --set no.such.key=1
expect_err "unknown key is named" "no.such.key"
expect_rc "negative time is bad input" 2 "$BIN" run "${UNIFORM[@]}" --set uniform.f=-1
expect_rc "bad unit is bad input" 2 "$BIN" run --set memory.capacity=80GiBB
expect_rc "missing experiment file" 2 "$BIN" run "$TMP/nope.yaml"
expect_err "missing file is named" "nope.yaml"
printf 'schedule: 1f1b\npp: 4\nmicrobatches: [1, 2\n' >"$TMP/broken.yaml"
expect_rc "malformed YAML" 2 "$BIN" run "$TMP/broken.yaml"
expect_err "malformed YAML names file and line" "broken.yaml:[0-9]+"
printf 'schedule: 1f1b\npp: 4\nbogus: 3\n' >"$TMP/unknown.yaml"
expect_rc "unknown key in a file" 2 "$BIN" run "$TMP/unknown.yaml"
expect_err "unknown key names file:line:key" "unknown.yaml:3.*bogus"
expect_rc "unknown schedule" 2 "$BIN" run --set schedule=nosuch
expect_err "unknown schedule is named" "nosuch"
printf '<platform version="4.1"><zone id="z" routing="Full">\n<host id="a" speed="1f"\n</zone></platform>\n' \
    >"$TMP/bad.xml"
expect_rc "malformed platform XML" 2 "$BIN" run --set network="$TMP/bad.xml"
expect_err "malformed XML names file and line" "bad.xml:[0-9]+"
expect_rc "platform with too few GPUs" 2 "$BIN" run --set pp=64 --set workload=uniform \
    --set network=platforms/dgx-h100-1node.xml
expect_err "too few GPUs is explained" "GPUs"

# ---- output that cannot be written is an error, never a silent success ----
"$BIN" run --set schedule=1f1b --set pp=2 --set microbatches=2 "${UNIFORM[@]}" --format json >/dev/full 2>"$TMP/err"
rc=$?
if [ "$rc" != 0 ] && grep -q "cannot write" "$TMP/err"; then ok "a JSON report to a full disk exits non-zero naming the failure"
else not_ok "a JSON report to a full disk exits non-zero naming the failure" "exit $rc: $(head -c 200 "$TMP/err")"; fi
"$BIN" run --set schedule=1f1b --set pp=2 --set microbatches=2 "${UNIFORM[@]}" --trace /dev/full >/dev/null 2>"$TMP/err"
rc=$?
if [ "$rc" != 0 ] && grep -q "/dev/full" "$TMP/err"; then ok "a trace to a full disk exits non-zero naming the file"
else not_ok "a trace to a full disk exits non-zero naming the file" "exit $rc: $(head -c 200 "$TMP/err")"; fi

# ---- an option a command does not use is an error, never silently ignored ----
for bad in "run --grid pp=2,4" "run -j 4" "run --simulated" "bound --trace $TMP/x.json" \
           "schedule export --format torch-csv --svg $TMP/x.svg"; do
    # shellcheck disable=SC2086
    expect_rc "pipegrid $bad is bad input" 2 "$BIN" $bad --set workload=uniform --set network=ideal
    expect_err "pipegrid $bad names the option" "does not apply"
done

# ---- out of memory: exit 3 with the result still printed ----
expect_rc "OOM exits 3" 3 "$BIN" run --set schedule=gpipe --set pp=2 --set microbatches=64 "${UNIFORM[@]}" \
    --set memory.capacity=8GiB --format json
expect_py "OOM result lists the ranks" 'assert j is not None and j["oom"] == [0, 1], j and j["oom"]'

# ---- memory: offload and recomputation ----
MEM=(--set schedule=1f1b --set pp=4 --set microbatches=16 --set workload=uniform --set uniform.f=10ms
     --set uniform.b=10ms --set uniform.w=10ms --set uniform.activation=256MiB --set uniform.boundary=16MiB
     --set network=cluster)
"$BIN" run "${MEM[@]}" --format json >"$TMP/none.json" 2>/dev/null
expect_rc "offload=full runs" 0 "$BIN" run "${MEM[@]}" --set offload=full --format json
expect_py "offload=full moves bytes over PCIe and lowers the peak (copy hidden under compute)" '
n = json.load(open("'"$TMP"'/none.json"))
# every rank but the last (whose F-to-B window is shorter than the copies) offloads
assert all(b > 0 for b in j["offload_bytes"][:-1]), j["offload_bytes"]
assert j["peak_memory_bytes"][0] < n["peak_memory_bytes"][0], (j["peak_memory_bytes"], n["peak_memory_bytes"])
assert j["makespan"] <= n["makespan"] * 1.02, (j["makespan"], n["makespan"])'
cp "$TMP/out" "$TMP/full.json"
expect_rc "offload=selective with offload.ratio runs" 0 "$BIN" run "${MEM[@]}" --set offload=selective \
    --set offload.ratio=0.5 --format json
expect_py "offload.ratio=0.5 offloads some but not all of what full does" '
full = json.load(open("'"$TMP"'/full.json"))
assert 0 < sum(j["offload_bytes"]) < sum(full["offload_bytes"]), (j["offload_bytes"], full["offload_bytes"])'
expect_rc "recompute=full runs" 0 "$BIN" run "${MEM[@]}" --set recompute=full --format json
expect_py "recompute=full costs time and saves memory" '
n = json.load(open("'"$TMP"'/none.json"))
assert all(r > 0 for r in j["recompute_seconds"]), j["recompute_seconds"]
assert j["peak_memory_bytes"][0] < n["peak_memory_bytes"][0]
assert j["makespan"] > n["makespan"]'
expect_rc "offload.ratio out of range is bad input" 2 "$BIN" run "${MEM[@]}" --set offload=selective \
    --set offload.ratio=1.5
expect_err "offload.ratio is named" "offload.ratio"

# ---- schedules as files ----
expect_rc "schedule export torch-csv" 0 "$BIN" schedule export --set schedule=1f1b --set pp=4 --set microbatches=8 \
    --format torch-csv
cp "$TMP/out" "$TMP/1f1b.csv"
expect_py "torch-csv has one row per rank" '
rows = [l for l in out.splitlines() if l.strip()]
assert len(rows) >= 4 and "0F0" in out, out[:200]'
"$BIN" run --set schedule=1f1b --set pp=4 --set microbatches=8 "${UNIFORM[@]}" --format json >"$TMP/a.json" 2>/dev/null
expect_rc "exported schedule replays" 0 "$BIN" run --set schedule="file:$TMP/1f1b.csv" "${UNIFORM[@]}" --format json
cp "$TMP/out" "$TMP/b.json"
expect_py "exported schedule replays identically" '
a = json.load(open("'"$TMP"'/a.json")); b = j
for k in ["makespan", "span", "stage_span", "peak_activations", "peak_memory_bytes"]:
    assert a[k] == b[k], (k, a[k], b[k])'
# rank 0 runs its backward before its forward: it waits for rank 1, which waits for it.
printf '0B0,0F0\n1F0,1B0\n' >"$TMP/dead.csv"
expect_rc "a schedule file that cannot complete exits 4" 4 "$BIN" run --set schedule="file:$TMP/dead.csv" \
    "${UNIFORM[@]}"
expect_err "the deadlock names the blocked ops" "blocked"
printf '0F0,0Q0\n1F0,1B0\n' >"$TMP/badtok.csv"
expect_rc "a schedule file with an unknown token exits 2" 2 "$BIN" run --set schedule="file:$TMP/badtok.csv" \
    "${UNIFORM[@]}"

# ---- bounds ----
expect_rc "bound --format json" 0 "$BIN" bound --set schedule=1f1b --set pp=4 --set microbatches=8 "${UNIFORM[@]}" \
    --format json
expect_py "bound prints lower_bound, no schedule beats it, K >= m bound is (m+p-1)F.. style" '
assert isinstance(j, dict) and j["lower_bound"] > 0, j
assert j["lower_bound"] <= 33 + 1e-9, j["lower_bound"]'
cp "$TMP/out" "$TMP/bound.json"
expect_rc "bound at K=1 (memory.limit=1)" 0 "$BIN" bound --set schedule=zb-h1 --set pp=4 --set microbatches=8 \
    "${UNIFORM[@]}" --set memory.limit=1 --format json
expect_py "bound at K=1 is the exact serial makespan m(p(F+B)+W)" 'assert abs(j["lower_bound"] - 8 * (4 * 2 + 1)) < 1e-9, j'
expect_rc "run reports lower_bound" 0 "$BIN" run --set schedule=1f1b --set pp=4 --set microbatches=8 "${UNIFORM[@]}" \
    --format json
expect_py "run and bound agree on lower_bound, and the makespan respects it" '
b = json.load(open("'"$TMP"'/bound.json"))
assert abs(j["lower_bound"] - b["lower_bound"]) < 1e-9 * b["lower_bound"], (j["lower_bound"], b["lower_bound"])
assert j["makespan"] >= j["lower_bound"]'

# Tensor parallelism splits a uniform or profiled stage's time over its tp GPUs: the bound and the remat
# planner must split it too (they once used the whole group's time: a bound above the makespan, a plan
# predicting twice what ran).
for net in ideal cluster; do
    expect_rc "run with tp=2 on network=$net" 0 "$BIN" run --set schedule=zb-h1 --set pp=4 --set tp=2 \
        --set microbatches=8 "${UNIFORM[@]}" --set network=$net --format json
    expect_py "tp=2 on $net: the makespan respects the lower bound" 'assert 0 < j["lower_bound"] <= j["makespan"], (j["lower_bound"], j["makespan"])'
done
TPR=(--set schedule=1f1b --set pp=4 --set tp=2 --set microbatches=8 --set workload=uniform --set uniform.activation=1GiB
     --set network=ideal --set memory.capacity=2.5GiB --set recompute=plan)
expect_rc "plan remat with tp=2" 0 "$BIN" plan remat "${TPR[@]}" --format json
cp "$TMP/out" "$TMP/tpplan.json"
expect_rc "run recompute=plan with tp=2" 0 "$BIN" run "${TPR[@]}" --format json
expect_py "tp=2: the remat plan predicts the simulated makespan" '
p = json.load(open("'"$TMP"'/tpplan.json"))
assert abs(p["makespan"] - j["makespan"]) <= 1e-9 * j["makespan"], (p["makespan"], j["makespan"])'

# recompute.lp_file: the ILP, for another solver, in CPLEX LP format (objective, rows, binaries); an
# unwritable path is an input error naming the key.
expect_rc "plan remat writes its ILP to recompute.lp_file" 0 "$BIN" plan remat "${TPR[@]}" \
    --set recompute.lp_file="$TMP/remat.lp"
if grep -q '^Minimize' "$TMP/remat.lp" && grep -q '^Subject To' "$TMP/remat.lp" && grep -q '^Generals' "$TMP/remat.lp"
then ok "the LP file has an objective, rows and integer columns"; else not_ok "the LP file has an objective, rows and integer columns" "$(head -5 "$TMP/remat.lp" 2>&1)"; fi
expect_rc "an unwritable recompute.lp_file is an input error" 2 "$BIN" plan remat "${TPR[@]}" \
    --set recompute.lp_file=/nonexistent/dir/remat.lp
expect_err "the error names recompute.lp_file" 'recompute\.lp_file.*cannot write /nonexistent/dir/remat\.lp'

# ---- calibrated cost model, 3D parallelism, generated clusters ----
GPT=(--set workload=gpt --set gpt.layers=32 --set gpt.hidden=4096 --set gpt.heads=32 --set gpt.seq=2048
     --set schedule=1f1b --set network=cluster --set cluster.gpu=h100-sxm)
expect_rc "workload=gpt with tp, dp, pp on a generated cluster" 0 "$BIN" run "${GPT[@]}" --set tp=2 --set dp=2 \
    --set pp=4 --set micro_batch_size=2 --set global_batch_size=64 --set cluster.nodes=2 --format json
expect_py "microbatches = global / (micro x dp); iteration covers pipeline + all-reduce + optimizer" '
assert j["microbatches"] == 16, j["microbatches"]
it = j["iteration"]
assert it["dp_allreduce_seconds"] > 0 and it["optimizer_seconds"] > 0, it
assert abs(j["iteration_seconds"] - (it["pipeline_seconds"] + it["dp_allreduce_seconds"] + it["optimizer_seconds"])) < 1e-9 * j["iteration_seconds"]
assert j["iteration_seconds"] > j["makespan"]'
expect_rc "a job larger than the generated cluster is bad input" 2 "$BIN" run "${GPT[@]}" --set tp=8 --set dp=2 \
    --set pp=4 --set cluster.nodes=2
expect_err "too few GPUs names the network" "network"
expect_rc "unknown cluster.gpu is bad input" 2 "$BIN" run "${GPT[@]}" --set pp=2 --set cluster.gpu=tpu-v9
expect_err "the GPU type is named" "tpu-v9"

# ---- the shipped platforms: NVLink, InfiniBand and PCIe routes take latency + bytes / bandwidth ----
# 1 GB messages far apart in time (1 s ops), so every transfer is alone on its links.
# Figures from platforms/README.md: H100 NVLink 450 GB/s, NDR NIC 50 GB/s, PCIe Gen5 64 GB/s;
# A100 NVLink 300 GB/s, HDR NIC 25 GB/s, PCIe Gen4 32 GB/s; GPU to GPU in a node 1 us, across nodes 2.6 us,
# GPU to host memory 1 us.
ROUTE=(--set schedule=gpipe --set microbatches=1 --set workload=uniform --set uniform.f=1 --set uniform.b=1
       --set uniform.w=1 --set uniform.boundary=1GB --set uniform.activation=1GB --set memory.capacity=1TiB)
check_route() { # NAME PLATFORM PP STAGE EXPECTED_SECONDS
    "$BIN" run "${ROUTE[@]}" --set pp="$3" --set network="$2" --trace "$TMP/route.json" >/dev/null 2>"$TMP/err"
    cp "$TMP/route.json" "$TMP/out"
    expect_py "$1" '
ev = j["traceEvents"]
d = [e["dur"] for e in ev if e.get("ph") == "X" and e.get("args", {}).get("kind") == "activation"
     and e["args"].get("stage") == '"$4"']
assert d, "no transfer of stage '"$4"'"
want = '"$5"' * 1e6
assert all(abs(x - want) <= 1e-9 * want for x in d), (d, want)'
}
check_route "dgx-h100-1node: NVLink hop = 1e9/450e9 + 1us" platforms/dgx-h100-1node.xml 2 0 "(1e9 / 450e9 + 1e-6)"
check_route "dgx-h100-4node-ndr: NVLink hop inside node 0" platforms/dgx-h100-4node-ndr.xml 16 3 "(1e9 / 450e9 + 1e-6)"
check_route "dgx-h100-4node-ndr: InfiniBand hop between nodes = 1e9/50e9 + 2.6us" platforms/dgx-h100-4node-ndr.xml 16 7 \
    "(1e9 / 50e9 + 2.6e-6)"
check_route "dgx-a100-4node-hdr: NVLink hop = 1e9/300e9 + 1us" platforms/dgx-a100-4node-hdr.xml 16 3 "(1e9 / 300e9 + 1e-6)"
check_route "dgx-a100-4node-hdr: InfiniBand hop = 1e9/25e9 + 2.6us" platforms/dgx-a100-4node-hdr.xml 16 7 \
    "(1e9 / 25e9 + 2.6e-6)"
check_pcie() { # NAME PLATFORM PCIE_BYTES_PER_S
    expect_rc "$1 runs" 0 "$BIN" run "${ROUTE[@]}" --set schedule=1f1b --set pp=2 --set microbatches=2 \
        --set offload=full --set network="$2" --format json
    expect_py "$1: each D2H and H2D copy takes 1e9/PCIe + 1us" '
want = 2 * (1e9 / '"$3"' + 1e-6)   # rank 0 offloads and reloads two activations, one at a time
r = j["ranks"][0]
assert abs(r["d2h_busy_seconds"] - want) <= 1e-9 * want, (r["d2h_busy_seconds"], want)
assert abs(r["h2d_busy_seconds"] - want) <= 1e-9 * want, (r["h2d_busy_seconds"], want)'
}
check_pcie "dgx-h100-1node: PCIe Gen5 to host memory" platforms/dgx-h100-1node.xml 64e9
check_pcie "dgx-a100-4node-hdr: PCIe Gen4 to host memory" platforms/dgx-a100-4node-hdr.xml 32e9

# ---- schedule show: ideal timing and simulated timing ----
SHOW=(--set schedule=1f1b --set pp=4 --set microbatches=6 --set workload=uniform --set network=ideal
      --set ideal.latency=0.2 --color=never)
"$BIN" schedule show "${SHOW[@]}" >"$TMP/ideal.txt" 2>/dev/null
expect_rc "schedule show --simulated runs" 0 "$BIN" schedule show "${SHOW[@]}" --simulated
expect_py "on network=ideal the simulated drawing is the ideal one (the replay is exact)" '
ideal = open("'"$TMP"'/ideal.txt").read()
assert out == ideal and out.count("rank ") == 4, (out, ideal)'
expect_rc "schedule show --simulated with offload stalls" 0 "$BIN" schedule show --set offload=full --simulated \
    --color=never
expect_py "the simulated drawing shows the stalls the ideal one cannot (time axis 5.57 s, not 2.45 s)" '
import re
t = float(re.search(r"time: 0 s to ([0-9.]+) s", out).group(1))
assert t > 5.0, out[-300:]'

# ---- traces ----
expect_rc "--trace writes a file" 0 "$BIN" run --set schedule=1f1b --set pp=4 --set microbatches=8 "${UNIFORM[@]}" \
    --trace "$TMP/trace.json"
cp "$TMP/trace.json" "$TMP/out"
expect_py "the trace is Chrome trace-event JSON with ops, counters and flows" '
ev = j["traceEvents"] if isinstance(j, dict) else j
kinds = {e.get("ph") for e in ev}
assert "X" in kinds and "C" in kinds and "M" in kinds, kinds
xs = [e for e in ev if e.get("ph") == "X" and "microbatch" in e.get("args", {})]
assert len(xs) >= 4 * 8 * 2, len(xs)'

test_summary
