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
expect_py "microbatches = global / (micro x dp); iteration covers pipeline + all-reduces + optimizer + overhead" '
assert j["microbatches"] == 16, j["microbatches"]
it = j["iteration"]
assert it["dp_allreduce_seconds"] > 0 and it["optimizer_seconds"] > 0, it
assert it["embedding_allreduce_seconds"] > 0, it   # the tied embedding: first and last stage on two ranks
assert it["overhead_seconds"] > 0, it              # the GPU type fitted per-iteration overhead
assert abs(j["iteration_seconds"] - (it["pipeline_seconds"] + it["dp_allreduce_seconds"] + it["embedding_allreduce_seconds"] + it["optimizer_seconds"] + it["overhead_seconds"])) < 1e-9 * j["iteration_seconds"]
assert j["iteration_seconds"] > j["makespan"]'
expect_rc "a job larger than the generated cluster is bad input" 2 "$BIN" run "${GPT[@]}" --set tp=8 --set dp=2 \
    --set pp=4 --set cluster.nodes=2
expect_err "too few GPUs names the network" "network"
expect_rc "unknown cluster.gpu is bad input" 2 "$BIN" run "${GPT[@]}" --set pp=2 --set cluster.gpu=tpu-v9
expect_err "the GPU type is named" "tpu-v9"

# ---- cluster scale (issue 17): no crash past 64 nodes, bad platforms are exit 2 ----
# A small GPT keeps these fast; tp=16 spans two 8-GPU nodes, dp across nodes.
SMALL=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024
       --set network=cluster --format json)
for nodes in 64 65 128 1000; do
    expect_rc "cluster.nodes=$nodes: tp=16 across two nodes, dp=2 across nodes runs" 0 "$BIN" run "${SMALL[@]}" \
        --set cluster.nodes=$nodes --set tp=16 --set pp=2 --set dp=2 --set microbatches=4
    cp "$TMP/out" "$TMP/scale-$nodes.json"
done
expect_py "the same job on 64, 65, 128 and 1000 nodes gives the same timings (unused nodes carry no traffic)" '
runs = [json.load(open("'"$TMP"'/scale-%d.json" % n)) for n in (64, 65, 128, 1000)]
for k in ("makespan", "iteration_seconds", "stage_span", "peak_memory_bytes"):
    assert all(r[k] == runs[0][k] for r in runs), [r[k] for r in runs]
assert runs[0]["iteration"]["dp_allreduce_seconds"] > 0 and runs[0]["iteration"]["tp_comm_seconds"] > 0'
expect_rc "65 nodes all used (star layout): tp=8, dp=65 across nodes runs" 0 "$BIN" run "${SMALL[@]}" \
    --set cluster.nodes=65 --set tp=8 --set pp=1 --set dp=65 --set microbatches=2
expect_py "65 nodes: the dp all-reduce crossed the nodes" 'assert j["iteration"]["dp_allreduce_seconds"] > 0, j["iteration"]'
expect_rc "Llama-70B-like tp8 pp8 dp16 on 128 nodes runs (was: dynar is not that long)" 0 "$BIN" run \
    --set workload=gpt --set gpt.layers=80 --set gpt.hidden=8192 --set gpt.heads=64 --set gpt.seq=4096 --set tp=8 \
    --set pp=8 --set dp=16 --set network=cluster --set cluster.nodes=128 --set microbatches=16 --format json
expect_py "128 nodes: pipeline, tp collectives and dp all-reduce all simulated" '
it = j["iteration"]
assert it["dp_allreduce_seconds"] > 0 and it["tp_comm_seconds"] > 0 and j["samples_per_second"] > 0, it'
expect_rc "1000 nodes all used: tp=8, pp=2, dp=500 runs" 0 "$BIN" run "${SMALL[@]}" --set cluster.nodes=1000 \
    --set tp=8 --set pp=2 --set dp=500 --set microbatches=2
expect_py "1000 nodes: the dp all-reduce crossed the nodes" 'assert j["iteration"]["dp_allreduce_seconds"] > 0'
IDEAL_TPDP=(--set workload=uniform --set network=ideal --set tp=2 --set pp=2 --set microbatches=2 --format json)
expect_rc "network=ideal, 128 GPUs (Full) with tp=2" 0 "$BIN" run "${IDEAL_TPDP[@]}" --set dp=32
cp "$TMP/out" "$TMP/ideal-128.json"
expect_rc "network=ideal, 260 GPUs (star) with tp=2, dp=65 runs" 0 "$BIN" run "${IDEAL_TPDP[@]}" --set dp=65
expect_py "network=ideal: the star layout times like the Full one" '
a = json.load(open("'"$TMP"'/ideal-128.json"))
assert j["makespan"] == a["makespan"] and j["iteration_seconds"] == a["iteration_seconds"], (j["makespan"], a["makespan"])'

# dp.bucket_bytes has a floor (1 MiB, at most 256 buckets per stage): tiny buckets once ran for minutes
for b in 1 1KB 1MiB; do
    expect_rc "dp.bucket_bytes=$b runs" 0 "$BIN" run --set dp=2 --set pp=4 --set dp.bucket_bytes=$b --format json
    cp "$TMP/out" "$TMP/bucket-$b.json"
done
expect_py "buckets below the floor are the floor's: same buckets and iteration as 1MiB, at most 256 per stage" '
runs = [json.load(open("'"$TMP"'/bucket-%s.json" % b)) for b in ("1", "1KB", "1MiB")]
its = [r["iteration"] for r in runs]
assert all(i["dp_buckets"] == its[2]["dp_buckets"] for i in its), [i["dp_buckets"] for i in its]
assert all(r["iteration_seconds"] == runs[2]["iteration_seconds"] for r in runs)
assert 0 < its[2]["dp_buckets"] <= 256 * runs[2]["pp"], its[2]'

PLAT_HEAD='<?xml version="1.0"?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">'
TWO_GPUS='    <host id="g0" speed="1e12f"><prop id="kind" value="gpu"/><prop id="node" value="0"/><prop id="local_rank" value="0"/><prop id="memory" value="80GiB"/></host>
    <host id="g1" speed="1e12f"><prop id="kind" value="gpu"/><prop id="node" value="0"/><prop id="local_rank" value="1"/><prop id="memory" value="80GiB"/></host>'
TWO_RANKS=(--set workload=uniform --set pp=2 --set microbatches=2)
printf '%s\n  <zone id="z" routing="Bogus">\n%s\n  </zone>\n</platform>\n' "$PLAT_HEAD" "$TWO_GPUS" >"$TMP/bogus.xml"
expect_rc "routing=\"Bogus\" is exit 2, not a SimGrid abort" 2 "$BIN" run "${TWO_RANKS[@]}" --set network="$TMP/bogus.xml"
expect_err "unknown routing names file, line and key" "bogus.xml:4: key 'routing'.*Bogus"
printf '%s\n  <zone id="z" routing="Full">\n%s\n  </zone>\n</platform>\n' "$PLAT_HEAD" "$TWO_GPUS" >"$TMP/noroute.xml"
expect_rc "two GPUs without a route is exit 2, not a SimGrid abort" 2 "$BIN" run "${TWO_RANKS[@]}" \
    --set network="$TMP/noroute.xml"
expect_err "missing route names file, the GPU's line and both GPUs" "noroute.xml:5: .*no route from 'g0' to 'g1'"
for bw in 0Bps -5GBps; do
    printf '%s\n  <zone id="z" routing="Full">\n%s\n    <link id="l" bandwidth="%s" latency="1us"/>\n    <route src="g0" dst="g1"><link_ctn id="l"/></route>\n  </zone>\n</platform>\n' \
        "$PLAT_HEAD" "$TWO_GPUS" "$bw" >"$TMP/bw.xml"
    expect_rc "link bandwidth $bw is exit 2, not a SimGrid abort" 2 "$BIN" run "${TWO_RANKS[@]}" --set network="$TMP/bw.xml"
    expect_err "bandwidth $bw names file, line and key" "bw.xml:7: key 'bandwidth'.*must be positive"
done

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

# ---- modern models (Hugging Face configs, flash attention, MoE, recompute modes) ----
LLAMA8=(--set workload=hf:profiles/models/llama3-8b.json --set gpt.seq=8192 --set pp=4 --set network=cluster
        --set cluster.gpu=h100-sxm)
expect_rc "Llama-3-8B at seq 8192 on pp=4 H100 fits in 80 GB" 0 "$BIN" run "${LLAMA8[@]}" --format json
expect_py "it says which H100 parameters are datasheet and which were fitted on what" '
c = j["cost_model"]
assert c.startswith("h100-sxm: datasheet peak_flops") and "fitted gemm_eff" in c, c
assert "nemo_perf_summary_2407.csv" in c and "fitted gemm_eff gemm_half_flops flash_eff " in c, c
# the one parameter no H100 row measured is the legacy attention kernels (this run uses flash attention)
assert c.count("NOT measured") == 1 and "NOT measured on this GPU type: attn_eff (" in c, c
assert "no row of the fit part ran legacy attention; equal to the fitted flash_eff" in c, c'
"$BIN" run "${LLAMA8[@]}" --format json >"$TMP/out" 2>/dev/null
expect_py "its MFU is plausible (30-65 %) and memory under 80 GiB" '
assert 0.30 < j["mfu"] < 0.65, j["mfu"]
assert max(j["peak_memory_bytes"]) < 80 * 2**30, j["peak_memory_bytes"]'
"$BIN" run "${LLAMA8[@]}" --set attention=legacy --format json >"$TMP/legacy.json" 2>/dev/null
expect_py "legacy attention (scores stored) needs more memory than flash" '
legacy = json.load(open("'"$TMP"'/legacy.json"))
assert max(legacy["peak_memory_bytes"]) > max(j["peak_memory_bytes"]) + 2**30, (legacy["peak_memory_bytes"], j["peak_memory_bytes"])'
expect_rc "recompute=lgd runs" 0 "$BIN" run "${LLAMA8[@]}" --set recompute=lgd --format json
cp "$TMP/out" "$TMP/lgd.json"
expect_rc "recompute=full runs" 0 "$BIN" run "${LLAMA8[@]}" --set recompute=full --format json
expect_py "full recompute keeps less than LGD, LGD less than nothing recomputed" '
lgd = json.load(open("'"$TMP"'/lgd.json"))
assert max(j["peak_memory_bytes"]) < max(lgd["peak_memory_bytes"]), (j["peak_memory_bytes"], lgd["peak_memory_bytes"])
assert j["makespan"] > lgd["makespan"]'
expect_rc "precision=fp8 on A100 is refused" 2 "$BIN" run "${LLAMA8[@]}" --set cluster.gpu=a100-80g --set precision=fp8
expect_err "... naming the key" "precision"
expect_rc "ep on a dense model is refused" 2 "$BIN" run "${LLAMA8[@]}" --set dp=2 --set cluster.nodes=2 --set ep=2
expect_err "... naming the key" "'ep'"
expect_rc "tp not dividing the KV heads is refused" 2 "$BIN" run "${LLAMA8[@]}" --set tp=16 --set cluster.nodes=8
expect_err "... naming the key" "'tp'"
expect_rc "hf: without gpt.seq is refused" 2 "$BIN" run --set workload=hf:profiles/models/llama3-8b.json
expect_err "... naming gpt.seq" "gpt.seq"
expect_rc "hf: of a missing file is refused" 2 "$BIN" run --set workload=hf:no/such.json --set gpt.seq=4096
expect_err "... naming the key" "'workload'"
printf '{"hidden_size": 4096, "num_hidden_layers": 32}' >"$TMP/partial.json"
expect_rc "a config.json without its heads is refused" 2 "$BIN" run --set "workload=hf:$TMP/partial.json" \
    --set gpt.seq=4096
expect_err "... naming the file and the field" "partial.json.*num_attention_heads"
MIXTRAL=(--set workload=hf:profiles/models/mixtral-8x7b.json --set gpt.seq=4096 --set pp=4 --set tp=2 --set dp=4
         --set network=cluster --set cluster.nodes=4 --set cluster.gpu=h100-sxm --set microbatches=8
         --set tp.sequence_parallel=true --set memory.zero1=true)
expect_rc "Mixtral-8x7B with ep=4 runs" 0 "$BIN" run "${MIXTRAL[@]}" --set ep=4 --format json
cp "$TMP/out" "$TMP/ep4.json"
expect_rc "Mixtral-8x7B with ep=1 runs" 0 "$BIN" run "${MIXTRAL[@]}" --set ep=1 --format json
cp "$TMP/out" "$TMP/ep1.json"
expect_rc "... and without the distributed optimizer, ep=4" 0 "$BIN" run "${MIXTRAL[@]}" --set ep=4 \
    --set memory.zero1=false --set memory.capacity=1TiB --format json
cp "$TMP/out" "$TMP/ep4_plain.json"
expect_rc "... and ep=1" 0 "$BIN" run "${MIXTRAL[@]}" --set ep=1 --set memory.zero1=false --set memory.capacity=1TiB \
    --format json
expect_py "experts spread over ep=4 hold a quarter of the expert weights" '
ep4 = json.load(open("'"$TMP"'/ep4_plain.json"))
s1 = j["ranks"][1]["peak_breakdown"]["static_bytes"]; s4 = ep4["ranks"][1]["peak_breakdown"]["static_bytes"]
assert s4 < 0.5 * s1, (s4, s1)'
# with ep = dp no other GPU holds a GPU's experts: the distributed optimizer cannot shard their state, so it
# saves (B - W - G) = 12 bytes x 3/4 of the dense parameters only (ep=4), of all of them with ep=1
expect_py "the distributed optimizer shards the experts' state over the GPUs holding them (none at ep = dp)" '
z = {k: json.load(open("'"$TMP"'/%s.json" % k))["ranks"][1]["peak_breakdown"]["static_bytes"]
     for k in ("ep4", "ep1", "ep4_plain")}
saved4, saved1 = z["ep4_plain"] - z["ep4"], j["ranks"][1]["peak_breakdown"]["static_bytes"] - z["ep1"]
assert 0 < saved4 < 0.2 * saved1, (saved4, saved1)'

# expert parallelism and DualPipeV's overlap, simulated (ep across nodes: 2 GPUs per node)
DPV=(--set workload=hf:profiles/models/mixtral-8x7b.json --set gpt.seq=4096 --set pp=4 --set tp=2 --set dp=4 --set ep=4
     --set network=cluster --set cluster.nodes=16 --set cluster.gpus_per_node=2 --set cluster.gpu=h100-sxm
     --set microbatches=16 --set tp.sequence_parallel=true --set memory.zero1=true --set schedule=dualpipe-v)
expect_rc "DualPipeV on Mixtral, ep=4, pairs run one after the other" 0 "$BIN" run "${DPV[@]}" \
    --set dualpipe.overlap=false --format json
cp "$TMP/out" "$TMP/dpv_seq.json"
expect_rc "DualPipeV on Mixtral, ep=4, overlapped pairs" 0 "$BIN" run "${DPV[@]}" --format json
expect_py "overlapping hides all-to-all time (shorter, by less than the all-to-alls)" '
seq = json.load(open("'"$TMP"'/dpv_seq.json"))
a2a = seq["iteration"]["ep_alltoall_seconds"]
assert a2a > 0 and j["makespan"] < seq["makespan"] and seq["makespan"] - j["makespan"] <= a2a, (j["makespan"], seq["makespan"], a2a)'
expect_rc "context parallelism: Llama-3-8B at seq 16384, cp=2, runs" 0 "$BIN" run \
    --set workload=hf:profiles/models/llama3-8b.json --set gpt.seq=16384 --set pp=4 --set cp=2 --set network=cluster \
    --set cluster.gpu=h100-sxm --set microbatches=8 --format json
expect_py "... with its key/value exchange simulated" '
assert j["cp"] == 2 and j["iteration"]["cp_kv_seconds"] > 0, j["iteration"]'

# Korthikanti et al.'s 530B and 1T GPT runs trained on 80 GB A100s (their Table 3): the memory model must fit them
K530=(--set workload=gpt --set gpt.layers=105 --set gpt.hidden=20480 --set gpt.heads=128 --set gpt.seq=2048 --set tp=8
      --set pp=35 --set schedule=interleaved --set chunks=3 --set microbatches=280 --set network=cluster
      --set cluster.gpu=a100-80g --set cluster.nodes=35 --set attention=legacy)
expect_rc "530B, full recompute (Korthikanti Table 5) fits in 80 GB" 0 "$BIN" run "${K530[@]}" --set recompute=full
expect_rc "530B, selective recompute + sequence parallelism fits in 80 GB" 0 "$BIN" run "${K530[@]}" \
    --set recompute=selective --set tp.sequence_parallel=true
expect_rc "1T, full recompute fits in 80 GB" 0 "$BIN" run --set workload=gpt --set gpt.layers=128 \
    --set gpt.hidden=25600 --set gpt.heads=160 --set gpt.seq=2048 --set tp=8 --set pp=64 --set microbatches=512 \
    --set network=cluster --set cluster.gpu=a100-80g --set cluster.nodes=64 --set attention=legacy --set recompute=full

# ---- results echo their configuration; PipeOffload's k (issues 8-11) ----
ECHO=(--set schedule=1f1b --set pp=4 --set microbatches=8 --set tp=2 --set dp=2 --set micro_batch_size=3
      "${UNIFORM[@]}" --set network=cluster --set cluster.nodes=2 --set uniform.activation=1GiB)
expect_rc "run with offload=full echoes its configuration" 0 "$BIN" run "${ECHO[@]}" --set offload=full \
    --set precision=fp8 --set attention=legacy --format json
expect_py "tp, dp, pp, ep, cp, batch sizes, policies; peak_breakdown's three parts" '
want = {"tp": 2, "dp": 2, "pp": 4, "ep": 1, "cp": 1, "micro_batch_size": 3, "global_batch_size": 3 * 2 * 8,
        "recompute": "none", "offload": "full", "precision": "fp8", "attention": "legacy"}
for k, v in want.items():
    assert j[k] == v, (k, j[k], v)
for r in j["ranks"]:
    b = r["peak_breakdown"]
    assert set(b) == {"static_bytes", "activation_bytes", "workspace_bytes"}, b
    assert abs(sum(b.values()) - r["peak_memory_bytes"]) <= 1e-9 * r["peak_memory_bytes"], (b, r["peak_memory_bytes"])'
expect_py "offload_k: rank 0 copies 1 GiB each way at h100 PCIe (64 GB/s, 1 us) over F+B+W = 3 s / tp" '
k = 2 * (1e-6 + 2**30 / 64e9) / (3.0 / 2)
assert abs(j["offload_k"] - k) <= 1e-9 * k, (j["offload_k"], k)'
expect_rc "run without offload" 0 "$BIN" run "${ECHO[@]}" --format json
expect_py "offload_k is null without an offload policy" 'assert j["offload_k"] is None and j["offload"] == "none", j["offload_k"]'
expect_rc "text report with offload" 0 "$BIN" run "${ECHO[@]}" --set offload=full
expect_py "the text header echoes the configuration and k" '
assert "tp 2, cp 1, dp 2, pp 4 (ep 1)" in out and "3 per microbatch, 48 per iteration" in out, out[:600]
assert "offload full" in out and "offload k" in out, out'

# Profiles: tp shards memory as it shards time; MFU counts every GPU; micro_batch_size defaults to the
# profile's (zb-gpt-1.5b: 6) and scales it otherwise.
PROF=(--set workload=profiles/zb-gpt-1.5b.yaml --set schedule=1f1b --set pp=4 --set network=cluster)
expect_rc "profile at tp=1" 0 "$BIN" run "${PROF[@]}" --set microbatches=8 --format json
cp "$TMP/out" "$TMP/tp1.json"
expect_rc "profile at tp=2" 0 "$BIN" run "${PROF[@]}" --set microbatches=8 --set tp=2 --format json
expect_py "tp=2 halves the model bytes in static (not the headroom) and activations; MFU stays a fraction and does not rise" '
a = json.load(open("'"$TMP"'/tp1.json"))
def model_bytes(r, k):   # the headroom (CUDA context, NCCL, reserved) is in static_bytes, per GPU, not sharded
    h = r["headroom"]
    return r["peak_breakdown"][k] - (h["cuda_context_bytes"] + h["nccl_bytes"] + h["reserved_bytes"] if k == "static_bytes" else 0)
for r1, r2 in zip(a["ranks"], j["ranks"]):
    for k in ("static_bytes", "activation_bytes"):
        assert abs(model_bytes(r2, k) * 2 - model_bytes(r1, k)) <= 1e-9 * model_bytes(r1, k), (k, r1, r2)
assert 0 < j["mfu"] <= a["mfu"] <= 1, (j["mfu"], a["mfu"])
assert j["micro_batch_size"] == 6 and j["global_batch_size"] == 48, (j["micro_batch_size"], j["global_batch_size"])'
expect_rc "profile with global_batch_size=48" 0 "$BIN" run "${PROF[@]}" --set global_batch_size=48 --format json
expect_py "the profile's micro batch (6) divides the global batch: 8 microbatches, 48 samples" '
assert j["microbatches"] == 8 and j["micro_batch_size"] == 6, (j["microbatches"], j["micro_batch_size"])
assert abs(j["samples_per_second"] * j["iteration_seconds"] - 48) < 1e-9 * 48'
cp "$TMP/out" "$TMP/mbs6.json"
expect_rc "profile with micro_batch_size=3, global_batch_size=48" 0 "$BIN" run "${PROF[@]}" \
    --set global_batch_size=48 --set micro_batch_size=3 --format json
expect_py "micro_batch_size=3 runs 16 microbatches of half the activation bytes, 48 samples" '
a = json.load(open("'"$TMP"'/mbs6.json"))
assert j["microbatches"] == 16 and j["global_batch_size"] == 48, j["microbatches"]
assert abs(j["samples_per_second"] * j["iteration_seconds"] - 48) < 1e-9 * 48
assert abs(j["peak_memory_bytes"][3] - j["ranks"][3]["peak_breakdown"]["static_bytes"] - (a["peak_memory_bytes"][3] - a["ranks"][3]["peak_breakdown"]["static_bytes"]) / 2) < 1e-6 * a["peak_memory_bytes"][3]'
expect_rc "a global batch that is no multiple of the profile's micro batch is bad input" 2 "$BIN" run "${PROF[@]}" \
    --set global_batch_size=50
expect_err "the error names global_batch_size and the micro batch" "global_batch_size.*micro_batch_size x dp = 6 x 1"
expect_rc "micro_batch_size=0 is bad input" 2 "$BIN" run "${PROF[@]}" --set micro_batch_size=0
expect_err "the error names micro_batch_size" "micro_batch_size"

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
