#!/bin/bash
# answers.sh: the answers a capacity planner reads (issue 33, "Wrong answers"
# and the sequence-parallel default): each check runs the built binary on the
# question a user asks and asserts the answer's meaning, not its digits.
#   tests/answers.sh [BIN]
. "$(dirname "$0")/lib.sh" answers
BIN=${1:-src/pipegrid}

# field FILE EXPR: a value of the JSON report in FILE (python expression on d)
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# check NAME PYTHON-CONDITION FILE: the condition holds on the JSON report d
check() {
    if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$3" 2>"$TMP/pyerr"
    then ok "$1"; else not_ok "$1" "$2 is false: $(head -c 300 "$TMP/pyerr")"; fi
}

# 1. Tensor parallelism is paid at pp = 1: the bundled profile's single stage
# ends with the LM head (boundary 0), yet its transformer layers run their
# tp collectives, so tp = 8 takes more than 1/8 of tp = 1's makespan and the
# report has a tp-collectives time.  At pp = 2 the last stage (ending with
# the head) pays them too: its busy time is more than 1/8 of tp = 1's.
for pp in 1 2; do
    expect_rc "tp=1 pp=$pp runs" 0 "$BIN" run --set tp=1 --set pp=$pp --set memory.capacity=1TiB --format json
    cp "$TMP/out" "$TMP/tp1.json"
    expect_rc "tp=8 pp=$pp runs" 0 "$BIN" run --set tp=8 --set pp=$pp --format json
    cp "$TMP/out" "$TMP/tp8.json"
    one=$(field "$TMP/tp1.json" "d['ranks'][-1]['busy_seconds']")
    check "tp=8 pp=$pp: tp collectives are simulated" "d['iteration']['tp_comm_seconds'] > 0" "$TMP/tp8.json"
    check "tp=8 pp=$pp: the last rank takes more than 1/8 of tp=1's busy time ($one s)" \
        "d['ranks'][-1]['busy_seconds'] > $one / 8 * 1.05" "$TMP/tp8.json"
done
expect_rc "tp=8 pp=1 text" 0 "$BIN" run --set tp=8 --set pp=1
if grep -q '^tp collectives' "$TMP/out"; then ok "tp=8 pp=1: text has the tp collectives line"
else not_ok "tp=8 pp=1: text has the tp collectives line"; fi

# 2. Selective recomputation saves at pp = 1 as at pp = 2 (Korthikanti's
# 22B GPT, micro batch 4, tp 8, legacy attention): rank 0's activations drop
# by more than 40 % (the 5as/h term is 13.3 of 26.3 sbh per layer), not 0 %.
K22=(--set workload=gpt --set gpt.layers=48 --set gpt.hidden=6144 --set gpt.heads=64 --set gpt.seq=2048
     --set micro_batch_size=4 --set tp=8 --set tp.sequence_parallel=false --set attention=legacy
     --set memory.capacity=1TiB --set microbatches=4 --format json)
for pp in 1 2; do
    expect_rc "22B pp=$pp recompute=none" 0 "$BIN" run "${K22[@]}" --set pp=$pp --set recompute=none
    none=$(field "$TMP/out" "d['ranks'][0]['peak_breakdown']['activation_bytes']")
    expect_rc "22B pp=$pp recompute=selective" 0 "$BIN" run "${K22[@]}" --set pp=$pp --set recompute=selective
    check "22B pp=$pp: selective stores < 60 % of none's activations ($none B)" \
        "d['ranks'][0]['peak_breakdown']['activation_bytes'] < 0.6 * $none" "$TMP/out"
done

# 3. run's lower bound carries the unavoidable tp collectives (a tp 8 GPT on
# a generated cluster): it is above the compute-only bound, at most the
# makespan, and the gap's parts sum to makespan - bound.
TPG=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=4096 --set gpt.heads=32 --set gpt.seq=2048
     --set network=cluster --set cluster.nodes=4 --set tp=8 --set pp=4 --set memory.capacity=1TiB)
expect_rc "tp8 GPT run" 0 "$BIN" run "${TPG[@]}" --format json
check "tp8 GPT: the bound carries tp collectives" "d['lower_bound'] > d['lower_bound_compute'] * 1.05" "$TMP/out"
check "tp8 GPT: the bound is at most the makespan" "d['lower_bound'] <= d['makespan'] * (1 + 1e-9)" "$TMP/out"
check "tp8 GPT: the gap's parts sum to makespan - bound" "abs(d['bound_gap_idle_seconds'] + \
d['bound_gap_slow_ops_seconds'] + d['bound_gap_other_seconds'] - (d['makespan'] - d['lower_bound'])) <= 1e-9 * d['makespan']" "$TMP/out"
expect_rc "tp8 GPT run, text" 0 "$BIN" run "${TPG[@]}"
if grep -Eq '^  gap +makespan is [0-9.]+ % above: bubbles' "$TMP/out"; then ok "text says what the gap is made of"
else not_ok "text says what the gap is made of"; fi

# 4. The pipeline's bubble is idle over all ranks' time: zb-v's is more than
# its longest-span rank's, and the JSON bubble_ratio keeps the contract's
# meaning (idle / span of the longest-span rank).
expect_rc "zb-v run" 0 "$BIN" run --set schedule=zb-v --format json
check "zb-v: pipeline bubble = sum of idle over pp x makespan" "abs(d['pipeline_bubble_ratio'] - \
sum(d['makespan'] - r['busy_seconds'] for r in d['ranks']) / (len(d['ranks']) * d['makespan'])) < 1e-9" "$TMP/out"
check "zb-v: bubble_ratio is the contract's" "abs(d['bubble_ratio'] - \
d['ranks'][d['span_rank']]['idle_seconds'] / d['span']) < 1e-9" "$TMP/out"
check "zb-v: the pipeline's bubble exceeds the longest-span rank's" "d['pipeline_bubble_ratio'] > d['bubble_ratio']" "$TMP/out"
expect_rc "zb-v run, svg" 0 "$BIN" run --set schedule=zb-v --svg "$TMP/zbv.svg"
if grep -q "pipeline bubble [0-9.]* % of all ranks" "$TMP/zbv.svg"; then ok "svg title shows the pipeline bubble"
else not_ok "svg title shows the pipeline bubble"; fi

# 5. A link rate given by a key is a datasheet rate: the fitted efficiency
# applies to it as to the default's (H100's NIC: 400 Gb/s datasheet), so
# 400Gbps runs at the default's rate, 200Gbps at half, and the platform line
# says both the rate that ran and its datasheet rate.
CL=(run --set network=cluster --set cluster.nodes=4 --set pp=4 --set tp=8)
nic_of() { sed -n 's/.*NIC \([0-9.]*\) GB\/s per GPU.*/\1/p' "$TMP/out"; }
expect_rc "cluster default NIC" 0 "$BIN" "${CL[@]}"
default_nic=$(nic_of)
expect_rc "cluster.ib_bw=400Gbps" 0 "$BIN" "${CL[@]}" --set cluster.ib_bw=400Gbps
nic400=$(nic_of)
if grep -q "datasheet 450.0 GB/s and 50.0 GB/s, set by cluster" "$TMP/out"; then ok "platform line names the datasheet rate"
else not_ok "platform line names the datasheet rate" "$(grep platform "$TMP/out")"; fi
expect_rc "cluster.ib_bw=200Gbps" 0 "$BIN" "${CL[@]}" --set cluster.ib_bw=200Gbps
nic200=$(nic_of)
if [ -n "$default_nic" ] && [ "$nic400" = "$default_nic" ]; then ok "400Gbps runs at the default's rate ($default_nic GB/s)"
else not_ok "400Gbps runs at the default's rate" "default '$default_nic', 400Gbps '$nic400'"; fi
if python3 -c "import sys; sys.exit(0 if abs(2 * float('$nic200') - float('$default_nic')) <= 0.11 else 1)" 2>/dev/null
then ok "200Gbps runs at half the default's rate"; else not_ok "200Gbps runs at half" "'$nic200' vs '$default_nic'"; fi

# 6. cluster.gpu on an ideal network: with a modelled workload it is the GPU
# the cost model runs on (applies: no warning, and A100 is slower than the
# default H100); with a measured profile it does not apply (warning, and the
# run is the same as without it).
IG=(run --set workload=gpt --set gpt.layers=8 --set gpt.hidden=4096 --set gpt.heads=32 --set gpt.seq=2048
    --set network=ideal --set pp=4 --format json)
expect_rc "gpt ideal, default GPU" 0 "$BIN" "${IG[@]}"
h100=$(field "$TMP/out" "d['makespan']")
expect_rc "gpt ideal, cluster.gpu=a100-80g" 0 "$BIN" "${IG[@]}" --set cluster.gpu=a100-80g
if grep -q "cluster.gpu" "$TMP/err"; then not_ok "gpt ideal: cluster.gpu applies, no warning" "$(cat "$TMP/err")"
else ok "gpt ideal: cluster.gpu applies, no warning"; fi
check "gpt ideal: the A100 run is slower than the H100 one ($h100 s)" "d['makespan'] > 1.2 * $h100" "$TMP/out"
expect_rc "profile ideal, cluster.gpu=a100-80g" 0 "$BIN" run --set network=ideal --set cluster.gpu=a100-80g --format json
expect_err "profile ideal: cluster.gpu is reported as not applying" "key 'cluster.gpu': ignored"
with=$(field "$TMP/out" "d['makespan']")
expect_rc "profile ideal, no cluster.gpu" 0 "$BIN" run --set network=ideal --format json
check "profile ideal: cluster.gpu changes nothing" "d['makespan'] == $with" "$TMP/out"

# 8. Sequence parallelism is on by default with tp > 1 (Megatron-Core's
# recipes): Llama-3-70B tp8 pp4 dp2 on 64 H100 fits without setting it;
# set off explicitly it runs out of memory and the user is warned.
L70=(run --set workload=hf:profiles/models/llama3-70b.json --set gpt.seq=8192 --set network=cluster
     --set cluster.nodes=8 --set tp=8 --set pp=4 --set dp=2 --set microbatches=8 --format json)
expect_rc "Llama-3-70B tp8 pp4 dp2 fits by default" 0 "$BIN" "${L70[@]}"
if grep -q "sequence_parallel" "$TMP/err"; then not_ok "default: no sequence-parallel warning" "$(cat "$TMP/err")"
else ok "default: no sequence-parallel warning"; fi
expect_rc "Llama-3-70B with tp.sequence_parallel=false: out of memory" 3 "$BIN" "${L70[@]}" --set tp.sequence_parallel=false
expect_err "tp > 1 with sequence parallelism off is warned about" "key 'tp.sequence_parallel': false with tp = 8: few real jobs"
expect_rc "tp=1: no sequence parallelism, no warning" 0 "$BIN" run --set tp=1 --set tp.sequence_parallel=false
if grep -q "sequence_parallel" "$TMP/err"; then not_ok "tp=1: no warning" "$(cat "$TMP/err")"; else ok "tp=1: no warning"; fi

# 3b. The costed bound ends: a tp 8 x pp 9 x dp 8 interleaved GPT on 72
# nodes once left the machine bound's preemptive Jackson loop waiting forever
# (a job preempted to work <= 0 by floating-point rounding still counted).
STAR=(run --set workload=gpt --set gpt.layers=18 --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024
      --set network=cluster --set cluster.nodes=128 --set memory.capacity=1TiB --set dp=8 --set tp=8 --set pp=9
      --set schedule=interleaved --set microbatches=9 --format json)
COMMAND_TIMEOUT_S=60 expect_rc "72-node interleaved run ends with its bound" 0 "$BIN" "${STAR[@]}"
check "72-node interleaved: bound <= makespan" "0 < d['lower_bound'] <= d['makespan'] * (1 + 1e-9)" "$TMP/out"

# 7 (the user's margin). memory.reserved is counted once per GPU in static
# memory and reported as its own part: the peak rises by exactly it, and a
# job that fits with 2 GiB to spare runs out of memory with 4 GiB reserved.
expect_rc "default run" 0 "$BIN" run --format json
peak=$(field "$TMP/out" "d['ranks'][0]['peak_memory_bytes']")
expect_rc "memory.reserved=4GiB" 0 "$BIN" run --set memory.reserved=4GiB --format json
check "reserved: peak + 4 GiB, reported as ranks[i].reserved_bytes" "d['ranks'][0]['peak_memory_bytes'] == $peak + 4 * 2**30 \
and d['ranks'][0]['reserved_bytes'] == 4 * 2**30" "$TMP/out"
cap=$(python3 -c "print(int($peak + 2 * 2**30))")
expect_rc "fits with 2 GiB to spare" 0 "$BIN" run --set memory.capacity=$cap
expect_rc "out of memory with 4 GiB reserved" 3 "$BIN" run --set memory.capacity=$cap --set memory.reserved=4GiB
expect_rc "text names the reserved part" 0 "$BIN" run --set memory.reserved=4GiB
if grep -q "headroom .*+ reserved 4.00 GiB" "$TMP/out"; then ok "text: reserved in the headroom line"
else not_ok "text: reserved in the headroom line" "$(grep -A1 'made of' "$TMP/out")"; fi

test_summary
