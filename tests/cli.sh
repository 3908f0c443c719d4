#!/usr/bin/env bash
# cli.sh: command-line hygiene against a built binary (default src/pipegrid):
# output that cannot be written fails, per-command --help, clear messages for
# a missing option value, out-of-range durations, an unknown cluster.gpu in a
# file, one limit per key, user-facing text free of internal references, and
# keys that do not apply to the settings warned about (exit 0).
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" cli
cd "$TMP" || exit 1
U=(--set workload=uniform --set network=ideal --set pp=4 --set microbatches=8 --format json)

# ---- output to a full device is an error, not a silent success ----
for c in keys "schedule list" --help --version "run --help"; do
    # shellcheck disable=SC2086
    "$BIN" $c >/dev/full 2>"$TMP/err"
    rc=$?
    if [ "$rc" = 1 ]; then ok "$c > /dev/full exits 1"; else not_ok "$c > /dev/full exits 1" "exit $rc"; fi
    expect_err "$c > /dev/full says why" "cannot write to standard output"
    # shellcheck disable=SC2086
    expect_rc "$c exits 0" 0 "$BIN" $c
done

# ---- per-command help ----
for c in run schedule sweep merge calibrate validate bound plan optimize keys; do
    expect_rc "pipegrid $c --help exits 0" 0 "$BIN" "$c" --help
    if grep -q "pipegrid $c" "$TMP/out" && ! grep -q "pipegrid run \[" "$TMP/out" || [ "$c" = run ]
    then ok "pipegrid $c --help prints its own usage"; else not_ok "pipegrid $c --help prints its own usage" "$(head -3 "$TMP/out")"; fi
done
expect_rc "pipegrid schedule show --help exits 0" 0 "$BIN" schedule show --help

# ---- messages ----
expect_rc "--set without a value: exit 2" 2 "$BIN" run --set
expect_err "--set without a value says so" "option --set needs a value"
expect_rc "uniform.f=1e300: exit 2 (not a deadlock)" 2 "$BIN" run "${U[@]}" --set uniform.f=1e300
expect_err "uniform.f=1e300: a range message naming the key" "key 'uniform.f': expected a duration > 0 and <= "
printf 'network: cluster\ncluster:\n  gpu: z100\nworkload: uniform\n' >gpu.yaml
expect_rc "unknown cluster.gpu in a file: exit 2" 2 "$BIN" run gpu.yaml
expect_err "unknown cluster.gpu: file:line and key" "gpu.yaml:3: key 'cluster.gpu': unknown GPU type 'z100'"
# One limit per key: the schema's message, whatever the value beyond it.
for kv in pp=5000 pp=100000; do
    expect_rc "$kv: exit 2" 2 "$BIN" run "${U[@]}" --set schedule=1f1b --set "$kv"
    expect_err "$kv: the one limit of pp" "key 'pp': expected an integer between 1 and 4096"
done
for kv in chunks=100 chunks=2000; do
    expect_rc "$kv: exit 2" 2 "$BIN" run "${U[@]}" --set schedule=interleaved --set "$kv"
    expect_err "$kv: the one limit of chunks" "key 'chunks': expected an integer between 1 and 64"
done
for kv in microbatches=1000001 microbatches=2000000; do
    expect_rc "$kv: exit 2" 2 "$BIN" run "${U[@]}" --set "$kv"
    expect_err "$kv: the one limit of microbatches" "key 'microbatches': expected an integer between 1 and 1000000"
done

# ---- user-facing text names papers and features, not internal seeds or issues ----
for c in keys --help "plan --help" "schedule list"; do
    # shellcheck disable=SC2086
    "$BIN" $c >"$TMP/out" 2>&1
    if grep -Eiq "seed [0-9A-E]|issue [0-9]" "$TMP/out"; then not_ok "$c: no seed / issue numbers" "$(grep -Ei "seed [0-9A-E]|issue [0-9]" "$TMP/out" | head -2)"
    else ok "$c: no seed / issue numbers"; fi
done

# ---- keys that do not apply: a warning naming file:line, key and the setting; exit 0 ----
check_ignored() {   # NAME KEY SETTING ARGS...
    local name=$1 key=$2 setting=$3
    shift 3
    expect_rc "$name: exit 0" 0 "$BIN" run "$@"
    expect_err "$name: warned" "warning: --set: key '$key': ignored: applies only with $setting"
}
check_ignored "gpt.* with a profile" gpt.layers "workload=gpt" --set workload=profiles/zb-gpt-1.5b.yaml \
    --set network=ideal --set gpt.layers=4 --format json
check_ignored "cluster.* with an XML network" cluster.nodes "network=cluster" \
    --set network=platforms/dgx-h100-1node.xml --set workload=uniform --set cluster.nodes=2 --format json
check_ignored "chunks with 1f1b" chunks "schedule=interleaved, hanayo, gis or gis-h" "${U[@]}" --set schedule=1f1b --set chunks=4
check_ignored "offload.ratio without offload=selective" offload.ratio "offload=selective" "${U[@]}" --set offload.ratio=0.3
for k in precision=fp8 attention=legacy moe.capacity_factor=1.25; do
    check_ignored "$k with a uniform workload" "${k%%=*}" "workload=gpt or workload=hf:PATH" "${U[@]}" --set "$k"
    check_ignored "$k with a profile" "${k%%=*}" "workload=gpt or workload=hf:PATH" --set network=ideal \
        --set workload=profiles/zb-gpt-1.5b.yaml --set "$k" --format json
done
printf 'workload: uniform\nnetwork: ideal\ngpt:\n  hidden: 1024\n' >ign.yaml
expect_rc "ignored key in a file: exit 0" 0 "$BIN" run ign.yaml --format json
expect_err "ignored key in a file: file:line" "ign.yaml:4: key 'gpt.hidden': ignored: applies only with workload=gpt"
expect_rc "keys that apply: no warning" 0 "$BIN" run "${U[@]}" --set schedule=interleaved --set chunks=2 \
    --set offload=selective --set offload.ratio=0.5
if grep -q warning "$TMP/err"; then not_ok "keys that apply: no warning" "$(cat "$TMP/err")"; else ok "keys that apply: no warning"; fi

# ---- errors of the lower layers are placed where the key at fault was set ----
# (structural key: pg_status names the key, the job places it; no message parsing)
printf 'workload: uniform\nnetwork: ideal\nschedule: interleaved\nmicrobatches: 7\n' >loc1.yaml
expect_rc "generator error: exit 2" 2 "$BIN" run loc1.yaml
expect_err "generator error: at the key's file:line" "loc1.yaml:4: key 'microbatches': interleaved"
printf 'workload: uniform\nnetwork: ideal\nschedule: zb-v\nmemory:\n  limit: 0.1\n' >loc2.yaml
expect_rc "memory limit below one activation: exit 2" 2 "$BIN" run loc2.yaml
expect_err "memory limit below one activation: at memory.limit's line" "loc2.yaml:5: key 'memory.limit': 0.1 stage activations"
expect_rc "bound: the same limit, exit 2" 2 "$BIN" bound loc2.yaml
expect_err "bound: at memory.limit's line" "loc2.yaml:5: key 'memory.limit':"
printf 'workload: gpt\nnetwork: ideal\ngpt:\n  layers: 8\n  hidden: 1024\n  heads: 16\n  seq: 1024\ntp: 3\n' >loc3.yaml
expect_rc "model cross-check: exit 2" 2 "$BIN" run loc3.yaml
expect_err "model cross-check: at tp's line" "loc3.yaml:8: key 'tp': tp=3 does not divide the 16 attention heads"
expect_rc "model cross-check from --set: exit 2" 2 "$BIN" run loc3.yaml --set tp=5
expect_err "model cross-check from --set: at --set" "^pipegrid: --set: key 'tp': tp=5"
# the cost model's and the engine's own checks, placed the same way
printf 'workload: gpt\nnetwork: ideal\ngpt:\n  hidden: 1024\n  heads: 16\n  seq: 1024\n  layers: 3\npp: 4\n' >loc4.yaml
expect_rc "cost model: layers below stages, exit 2" 2 "$BIN" run loc4.yaml
expect_err "cost model: at gpt.layers's line" "loc4.yaml:7: key 'gpt.layers': 3 layers cannot fill 4 pipeline stages"
printf 'workload: gpt\nnetwork: cluster\ngpt:\n  hidden: 1024\n  heads: 16\n  seq: 1024\n  layers: 4\nprecision: fp8\ncluster:\n  gpu: a100-80g\n' >loc5.yaml
expect_rc "cost model: fp8 on an A100, exit 2" 2 "$BIN" run loc5.yaml
expect_err "cost model: at precision's line" "loc5.yaml:8: key 'precision': fp8 needs a GPU with FP8 tensor cores"

# ---- gpt.doc_len: packed documents (attention within each) ----
PACK=(--set workload=hf:"$TEST_HERE/../profiles/models/llama3-8b.json" --set gpt.seq=8192 --set pp=4 --format json)
expect_rc "gpt.doc_len runs" 0 "$BIN" run "${PACK[@]}" --set gpt.doc_len=512
cp "$TMP/out" packed.json
expect_rc "without gpt.doc_len" 0 "$BIN" run "${PACK[@]}"
if python3 -c '
import json, sys
p, u = (json.load(open(f)) for f in sys.argv[1:3])
assert p["makespan"] < u["makespan"] and p["max_peak_memory_bytes"] == u["max_peak_memory_bytes"], (p["makespan"], u["makespan"])' \
    packed.json "$TMP/out" 2>"$TMP/pyerr"; then ok "packed documents: faster attention, the same memory"
else not_ok "packed documents: faster attention, the same memory" "$(tail -1 "$TMP/pyerr")"; fi
expect_rc "gpt.doc_len above gpt.seq exits 2" 2 "$BIN" run "${PACK[@]}" --set gpt.doc_len=9000
expect_err "... naming the key" "key 'gpt.doc_len': 9000 is longer than gpt.seq = 8192"
expect_rc "gpt.doc_len with legacy attention exits 2" 2 "$BIN" run "${PACK[@]}" --set gpt.doc_len=512 --set attention=legacy
expect_err "... naming the key" "key 'gpt.doc_len': packed documents need attention=flash"

# ---- lora.rank / lora.targets: LoRA fine-tuning (frozen base weights, trained adapters) ----
LORA=(--set workload=hf:"$TEST_HERE/../profiles/models/llama3-8b.json" --set gpt.seq=4096 --set pp=2 --set dp=4
      --set microbatches=8 --set network=cluster --set cluster.gpu=h100-sxm --set memory.zero1=true --format json)
expect_rc "full training" 0 "$BIN" run "${LORA[@]}"
cp "$TMP/out" full.json
expect_rc "lora.rank=32" 0 "$BIN" run "${LORA[@]}" --set lora.rank=32
cp "$TMP/out" lora.json
expect_rc "lora.rank=32 lora.targets=qkv" 0 "$BIN" run "${LORA[@]}" --set lora.rank=32 --set lora.targets=qkv
if python3 -c '
import json, sys
f, l, q = (json.load(open(p)) for p in sys.argv[1:4])
fi, li = f["iteration"], l["iteration"]
# no base-weight gradients: a fraction of the reduction and of the optimizer step, less static memory, less work
assert li["dp_allreduce_busy_seconds"] < 0.02 * fi["dp_allreduce_busy_seconds"], (li, fi)
assert li["optimizer_seconds"] < 0.02 * fi["optimizer_seconds"], (li, fi)
assert l["max_peak_memory_bytes"] < f["max_peak_memory_bytes"] - 20e9, (l["max_peak_memory_bytes"], f["max_peak_memory_bytes"])
assert l["total_busy_seconds"] < f["total_busy_seconds"], (l["total_busy_seconds"], f["total_busy_seconds"])
# adapters on one layer of four cost less than on all
assert q["total_busy_seconds"] < l["total_busy_seconds"], (q["total_busy_seconds"], l["total_busy_seconds"])' \
    full.json lora.json "$TMP/out" 2>"$TMP/pyerr"; then ok "LoRA: no base gradients to reduce or step, less memory and work"
else not_ok "LoRA: no base gradients to reduce or step, less memory and work" "$(tail -1 "$TMP/pyerr")"; fi
expect_rc "lora.rank=-1 exits 2" 2 "$BIN" run "${LORA[@]}" --set lora.rank=-1
expect_err "... naming the key" "key 'lora.rank'"
expect_rc "lora.targets=mlp exits 2" 2 "$BIN" run "${LORA[@]}" --set lora.rank=8 --set lora.targets=mlp
expect_err "... naming the key and its words" "key 'lora.targets'"
expect_err "... and its words" "all|qkv"
expect_rc "lora.targets without lora.rank: a warning" 0 "$BIN" run "${LORA[@]}" --set lora.targets=qkv
expect_err "... saying it needs lora.rank" "key 'lora.targets': ignored: applies only with lora.rank > 0"
expect_rc "lora.rank with workload=uniform: a warning" 0 "$BIN" run "${U[@]}" --set lora.rank=8
expect_err "... saying it needs the cost model" "key 'lora.rank': ignored: applies only with workload=gpt"

# ---- kernel_queue.host_waits: where the cost model's host waits for the GPU (the profile's, or set) ----
KQ=(--set workload=gpt --set gpt.layers=24 --set gpt.hidden=2048 --set gpt.heads=16 --set gpt.seq=1024 --set pp=2
    --set network=cluster --set cluster.gpu=a100-80g --format json)
expect_rc "kernel_queue.host_waits=profile (a100-80g: layer)" 0 "$BIN" run "${KQ[@]}"
cp "$TMP/out" kq_profile.json
expect_rc "kernel_queue.host_waits=layer" 0 "$BIN" run "${KQ[@]}" --set kernel_queue.host_waits=layer
cp "$TMP/out" kq_layer.json
expect_rc "kernel_queue.host_waits=op" 0 "$BIN" run "${KQ[@]}" --set kernel_queue.host_waits=op
if python3 -c '
import json, sys
p, l, o = (json.load(open(f)) for f in sys.argv[1:4])
assert p["makespan"] == l["makespan"], (p["makespan"], l["makespan"])
assert o["makespan"] < l["makespan"], (o["makespan"], l["makespan"])   # launch-bound: the host runs ahead
assert "every layer" in p["cost_model"] and "set by kernel_queue.host_waits=op" in o["cost_model"], o["cost_model"]' \
    kq_profile.json kq_layer.json "$TMP/out" 2>"$TMP/pyerr"
then ok "kernel_queue.host_waits: the profile's by default, the host running ahead is faster, stated"
else not_ok "kernel_queue.host_waits: the profile's by default, the host running ahead is faster, stated" \
    "$(tail -1 "$TMP/pyerr")"; fi
expect_rc "kernel_queue.host_waits=sometimes exits 2" 2 "$BIN" run "${KQ[@]}" --set kernel_queue.host_waits=sometimes
expect_err "... naming the key" "key 'kernel_queue.host_waits': expected one of profile, layer, op"

# ---- layer_profiles: a layer shape the GPU type's measurements ran runs at its measured profile ----
# (a100-80g profiles vTrain's single-node shapes: legacy attention, s 1024, 16 heads; KQ's is one of them)
expect_rc "layer_profiles=measured (default) on a profiled shape" 0 "$BIN" run "${KQ[@]}" --set attention=legacy
cp "$TMP/out" lp_measured.json
expect_rc "layer_profiles=analytic" 0 "$BIN" run "${KQ[@]}" --set attention=legacy --set layer_profiles=analytic
cp "$TMP/out" lp_analytic.json
expect_rc "a shape without a profile (flash attention)" 0 "$BIN" run "${KQ[@]}"
if python3 -c '
import json, re, sys
m, a, f = (json.load(open(x)) for x in sys.argv[1:4])
factor = float(re.search(r"measured profile, x([0-9.]+) the analytic time \(([0-9]+) measured jobs", m["cost_model"]).group(1))
assert factor != 1.0, factor
ratio = m["makespan"] / a["makespan"]
assert min(1.0, factor) < ratio < max(1.0, factor), (ratio, factor)   # layers scaled, embedding and head not
assert abs(m["layer_profile"]["factor"] - factor) < 1e-4 and m["layer_profile"]["measured_jobs"] > 0, m["layer_profile"]
assert a["layer_profile"] is None and f["layer_profile"] is None
assert "every layer at the analytic time (layer_profiles=analytic)" in a["cost_model"], a["cost_model"]
assert "none of this shape" in f["cost_model"], f["cost_model"]' \
    lp_measured.json lp_analytic.json "$TMP/out" 2>"$TMP/pyerr"
then ok "layer_profiles: a profiled layer at its factor, said on the cost model line; analytic on request or for other shapes"
else not_ok "layer_profiles: a profiled layer at its factor, said on the cost model line; analytic on request or for other shapes" \
    "$(tail -1 "$TMP/pyerr")"; fi
expect_rc "layer_profiles=sometimes exits 2" 2 "$BIN" run "${KQ[@]}" --set layer_profiles=sometimes
expect_err "... naming the key" "key 'layer_profiles': expected one of measured, analytic"

# ---- tp.comm_overlap: each layer's tp collective under its GEMM (the cost model's exposed part) ----
TPO=(--set workload=hf:"$TEST_HERE/../profiles/models/llama3-8b.json" --set gpt.seq=8192 --set tp=8 --set pp=2
     --set tp.sequence_parallel=true --set network=cluster --set cluster.nodes=2 --format json)
expect_rc "tp.comm_overlap=false runs" 0 "$BIN" run "${TPO[@]}"
cp "$TMP/out" tp_plain.json
expect_rc "tp.comm_overlap=true runs" 0 "$BIN" run "${TPO[@]}" --set tp.comm_overlap=true
cp "$TMP/out" tp_overlap.json
# Faster than the same analytic collectives not overlapped (network=ideal: the cost model's collectives in both),
# and those take what the simulated ones take on network=cluster, whose links carry the fitted coll_latency per ring
# step (cluster.links=fitted; on datasheet links, 1 us a step, the simulated run is about 18 % faster)
expect_rc "tp.comm_overlap=false, analytic collectives" 0 "$BIN" run "${TPO[@]}" --set network=ideal
cp "$TMP/out" tp_plain_ideal.json
expect_rc "tp.comm_overlap=true, analytic collectives" 0 "$BIN" run "${TPO[@]}" --set network=ideal --set tp.comm_overlap=true
if python3 -c '
import json, sys
p, o, pi, oi = (json.load(open(f)) for f in sys.argv[1:5])
assert p["iteration"]["tp_comm_seconds"] > 0 and o["iteration"]["tp_comm_seconds"] == 0, "simulated collectives"
assert oi["makespan"] < pi["makespan"], (oi["makespan"], pi["makespan"])
assert abs(p["makespan"] / pi["makespan"] - 1) < 1e-3, (p["makespan"], pi["makespan"])
for r in (o, oi):
    assert r["lower_bound"] <= r["makespan"] * (1 + 1e-12), (r["lower_bound"], r["makespan"])' \
    tp_plain.json tp_overlap.json tp_plain_ideal.json "$TMP/out" 2>"$TMP/pyerr"
then ok "tp.comm_overlap: collectives inside the ops, faster than not overlapped (simulated = analytic), the bound still below"
else not_ok "tp.comm_overlap: collectives inside the ops, faster than not overlapped (simulated = analytic), the bound still below" \
    "$(tail -1 "$TMP/pyerr")"; fi

# ---- the tied embedding's gradient: first and last stage sum their copies after the dp reduction ----
# GPT (tied word embedding, vocabulary 51200, h 2048), pp 2 on two single-GPU A100 nodes: one 2-GPU all-reduce of
# the embedding's fp32 gradient across the NICs, 2 steps of coll_latency + bytes / NIC (the ring's closed form,
# the iteration model's embed_sync); none when a V schedule puts both stages on one rank, none on network=ideal.
EMB=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=2048 --set gpt.heads=16 --set gpt.seq=1024 --set pp=2
     --set network=cluster --set cluster.gpu=a100-80g --set cluster.nodes=2 --set cluster.gpus_per_node=1)
expect_rc "tied embedding: pp 2 across two nodes" 0 "$BIN" run "${EMB[@]}" --format json
cp "$TMP/out" emb.json
expect_rc "tied embedding: zb-v (first and last stage on rank 0)" 0 "$BIN" run "${EMB[@]}" --set schedule=zb-v --format json
cp "$TMP/out" emb_v.json
expect_rc "tied embedding: network=ideal" 0 "$BIN" run "${EMB[@]}" --set network=ideal --format json
if python3 -c '
import json, re, sys
e, v, i = (json.load(open(f)) for f in sys.argv[1:4])
prof = open(sys.argv[4]).read()
val = lambda k: float(re.search(k + r": \{value: ([0-9.e+-]+)", prof).group(1))
nic = 25e9 * val("net_bw_eff")   # a100-80g: HDR 200 Gb/s per GPU
grad_bytes = 51200 * 2048 * 4
want = 2 * val("coll_latency") + grad_bytes / nic
it = e["iteration"]
assert abs(it["embedding_allreduce_seconds"] / want - 1) < 1e-9, (it["embedding_allreduce_seconds"], want)
total = it["pipeline_seconds"] + it["dp_allreduce_seconds"] + it["embedding_allreduce_seconds"] + it["optimizer_seconds"] + it["overhead_seconds"]
assert abs(e["iteration_seconds"] / total - 1) < 1e-12, (e["iteration_seconds"], total)
assert v["iteration"]["embedding_allreduce_seconds"] == 0 and i["iteration"]["embedding_allreduce_seconds"] == 0' \
    emb.json emb_v.json "$TMP/out" "$TEST_HERE/../profiles/gpus/a100-80g.yaml" 2>"$TMP/pyerr"
then ok "tied embedding: its all-reduce is the ring closed form, in the iteration; none on one rank or ideal"
else not_ok "tied embedding: its all-reduce is the ring closed form, in the iteration; none on one rank or ideal" \
    "$(tail -1 "$TMP/pyerr")"; fi
if "$BIN" run "${EMB[@]}" 2>/dev/null | grep -Eq "^iteration .* \+ embedding all-reduce [0-9.]+ ms \+ optimizer"
then ok "tied embedding: the text report's iteration line names it"
else not_ok "tied embedding: the text report's iteration line names it" "$("$BIN" run "${EMB[@]}" 2>&1 | grep iteration)"; fi

# ---- cluster.links: NVLink and NIC at NCCL's fitted rates (the default) or the datasheet's ----
# Two replicas on two nodes, one GPU each: the gradient all-reduce crosses the NICs.
LINKS=(--set workload=gpt --set gpt.layers=4 --set gpt.hidden=4096 --set gpt.heads=32 --set gpt.seq=1024 --set dp=2 --set pp=1
       --set network=cluster --set cluster.gpu=a100-80g --set cluster.nodes=2 --set cluster.gpus_per_node=1
       --set dp.bucket_bytes=0)
expect_rc "cluster.links=fitted runs" 0 "$BIN" run "${LINKS[@]}"
if grep -Eq "^platform   cluster \(2 GPUs\), NVLink [0-9.]+ GB/s and NIC [0-9.]+ GB/s per GPU \(cluster.links=fitted" "$TMP/out"
then ok "the report says the links' rates and that they are fitted"
else not_ok "the report says the links' rates and that they are fitted" "$(grep platform "$TMP/out")"; fi
expect_rc "cluster.links=fitted, json" 0 "$BIN" run "${LINKS[@]}" --format json
cp "$TMP/out" fitted.json
expect_rc "cluster.links=datasheet, json" 0 "$BIN" run "${LINKS[@]}" --format json --set cluster.links=datasheet
# all-reduce fitted / datasheet = datasheet NIC / fitted NIC = 1 / net_bw_eff, up to the latencies (microseconds)
if python3 -c '
import json, re, sys
f, d = (json.load(open(p))["iteration"]["dp_allreduce_busy_seconds"] for p in sys.argv[1:3])
eff = float(re.search(r"net_bw_eff: \{value: ([0-9.e+-]+)", open(sys.argv[3]).read()).group(1))
assert d > 0 and abs(f / d * eff - 1) < 1e-3, (f, d, eff)' fitted.json "$TMP/out" "$TEST_HERE/../profiles/gpus/a100-80g.yaml" \
    2>"$TMP/pyerr"; then ok "the all-reduce across nodes takes 1 / net_bw_eff as long with fitted links"
else not_ok "the all-reduce across nodes takes 1 / net_bw_eff as long with fitted links" "$(tail -1 "$TMP/pyerr")"; fi
expect_rc "cluster.links: a bad value exits 2" 2 "$BIN" run "${LINKS[@]}" --set cluster.links=fast
expect_err "cluster.links: named" "key 'cluster.links'"

test_summary
