#!/bin/bash
# reports.sh: what the reports say and how they say it (issue 33, "traps in
# the defaults"): the cost model's line, offload=plan's verdict, the trace's
# every activity, the sweep's error column, shortest numbers and JSON lines.
#   tests/reports.sh [BIN]
. "$(dirname "$0")/lib.sh" reports
BIN=${1:-src/pipegrid}

# ---- cost model: one short line; the whole provenance in JSON and --verbose
# The limit: a line a terminal shows whole (the provenance is ~1,500 characters).
COST_LINE_MAX_CHARS=200
HF=(--set workload=hf:profiles/models/llama3-8b.json --set gpt.seq=4096 --set microbatches=8)
expect_rc "hf run (text)" 0 "$BIN" run "${HF[@]}"
line=$(grep '^cost model ' "$TMP/out")
if [ -n "$line" ] && [ "${#line}" -le "$COST_LINE_MAX_CHARS" ]; then ok "cost model line is short (${#line} chars)"
else not_ok "cost model line is short" "${#line} chars: ${line:0:300}"; fi
if grep -Eq '^cost model [a-z0-9-]+: .*datasheet' <<<"$line"; then ok "cost model line names the GPU type and basis"
else not_ok "cost model line names the GPU type and basis" "$line"; fi
expect_rc "hf run --verbose" 0 "$BIN" run "${HF[@]}" --verbose
vline=$(grep '^cost model ' "$TMP/out")
expect_rc "hf run (json)" 0 "$BIN" run "${HF[@]}" --format json
if python3 - "$TMP/out" "$vline" "$line" <<'PY'; then ok "JSON and --verbose carry the whole provenance"; else not_ok "JSON and --verbose carry the whole provenance"; fi
import json, sys
d = json.load(open(sys.argv[1]))
verbose, short = sys.argv[2], sys.argv[3]
assert verbose == "cost model " + d["cost_model"], (verbose[:200], d["cost_model"][:200])
assert len(d["cost_model"]) > len(short), "the provenance is longer than the line"
assert "fitted" in d["cost_model"] and "(" in d["cost_model"], "sources named"
assert short == "cost model " + d["cost_model_summary"]
PY
expect_rc "--verbose is run's only" 2 "$BIN" bound --verbose

# ---- sweep rows: the error in its row, shortest numbers, JSON lines ----
# A small job on the ideal network: pp=4 with interleaved and 3 microbatches
# fails at run time (not a multiple of pp), capacity 2.5 GiB makes gpipe at 8
# microbatches out of memory; the rest fit.
SWEEP_JOB=(--set workload=uniform --set uniform.activation=1GiB --set network=ideal --set memory.capacity=2.5GiB)
SWEEP_GRID=(--grid pp=2,4 --grid microbatches=3,8 --grid schedule=1f1b,gpipe,interleaved)
expect_rc "sweep with failing rows (csv)" 0 "$BIN" sweep "${SWEEP_JOB[@]}" "${SWEEP_GRID[@]}" --format csv
cp "$TMP/out" "$TMP/sweep.csv"
cp "$TMP/err" "$TMP/sweep.err"
# check_numbers FILE...: every number field of the CSV files prints in its
# shortest exact form (the first of 15, 16, 17 significant digits that reads
# back equal), as every CSV/JSON writer of pipegrid must.
check_numbers() {
    python3 - "$@" <<'PY'
import csv, sys
def shortest(x):
    for d in (15, 16, 17):
        t = "%.*g" % (d, x)
        if float(t) == x:
            return t
bad = []
for path in sys.argv[1:]:
    for row in csv.reader(open(path, newline="")):
        for f in row:
            try:
                x = float(f)
            except ValueError:
                continue
            if f.strip() != f or f.lower() in ("inf", "-inf", "nan"):
                continue
            if f != shortest(x):
                bad.append((path, f, shortest(x)))
assert not bad, bad[:5]
PY
}
if python3 - "$TMP/sweep.csv" "$TMP/sweep.err" <<'PY'; then ok "failed rows carry their error (CSV-quoted), fitting rows none"; else not_ok "failed rows carry their error (CSV-quoted), fitting rows none"; fi
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
err = open(sys.argv[2]).read()
assert len(rows) == 12, len(rows)
codes = {r["exit_code"] for r in rows}
assert {"0", "2", "3"} <= codes, codes
for r in rows:
    if r["exit_code"] == "0":
        assert r["error"] == "", r
    else:
        assert r["error"], r
        assert "\n" not in r["error"]
    if r["exit_code"] == "2":
        # the child's own message, as stderr shows it after the row's prefix
        assert ("pipegrid: " + r["error"]) in err, (r["error"], err[:500])
        assert "multiple of pp" in r["error"], r["error"]
    if r["exit_code"] == "3":
        assert r["error"].startswith("out of memory predicted"), r["error"]
PY
if python3 -c '
import csv,sys; assert any("," in r["error"] for r in csv.DictReader(open(sys.argv[1])))' "$TMP/sweep.csv" 2>/dev/null
then ok "an error holding a comma is one quoted field"; else not_ok "an error holding a comma is one quoted field"; fi
if check_numbers "$TMP/sweep.csv"; then ok "sweep numbers in shortest round-trip form"; else not_ok "sweep numbers in shortest round-trip form"; fi
expect_rc "sweep --format jsonl" 0 "$BIN" sweep "${SWEEP_JOB[@]}" "${SWEEP_GRID[@]}" --format jsonl
if python3 - "$TMP/sweep.csv" "$TMP/out" <<'PY'; then ok "jsonl: one object per row, the CSV's columns and values"; else not_ok "jsonl: one object per row, the CSV's columns and values"; fi
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == len(rows), (len(lines), len(rows))
for r, line in zip(rows, lines):
    o = json.loads(line)
    assert list(o) == list(r), (list(o), list(r))
    for k, v in r.items():
        if v == "":
            assert o[k] is None, (k, o[k])
        elif isinstance(o[k], str):
            assert o[k] == v, (k, o[k], v)
        else:
            assert float(v) == o[k], (k, o[k], v)
    assert isinstance(o["exit_code"], int) and isinstance(o["schedule"], str)
PY
expect_rc "jsonl with -o is refused (-o files are CSV)" 2 "$BIN" sweep "${SWEEP_JOB[@]}" "${SWEEP_GRID[@]}" \
    --format jsonl -o "$TMP/x.jsonl"
# resume and merge read the new column: a cut file resumes to the same rows,
# two chunks merge to the whole sweep
head -n 5 "$TMP/sweep.csv" >"$TMP/resume.csv"
expect_rc "sweep -o resumes a file with the error column" 0 "$BIN" sweep "${SWEEP_JOB[@]}" "${SWEEP_GRID[@]}" \
    --format csv -o "$TMP/resume.csv"
if cmp -s "$TMP/resume.csv" "$TMP/sweep.csv"; then ok "resumed file equals the whole sweep"
else not_ok "resumed file equals the whole sweep" "$(diff "$TMP/resume.csv" "$TMP/sweep.csv" | head -5)"; fi
for k in 1 2; do
    expect_rc "sweep --chunk $k/2" 0 "$BIN" sweep "${SWEEP_JOB[@]}" "${SWEEP_GRID[@]}" --chunk $k/2 -o "$TMP/part-$k.csv"
done
expect_rc "merge of the chunks" 0 "$BIN" merge "$TMP/part-1.csv" "$TMP/part-2.csv"
if cmp -s "$TMP/out" "$TMP/sweep.csv"; then ok "merged chunks equal the whole sweep"
else not_ok "merged chunks equal the whole sweep" "$(diff "$TMP/out" "$TMP/sweep.csv" | head -5)"; fi
# optimize's own columns (bound, static bytes) print numbers the same way
expect_rc "optimize --format csv" 0 "$BIN" optimize "${SWEEP_JOB[@]}" --set pp=4 --set microbatches=8 \
    --grid schedule=1f1b,zb-v --format csv
cp "$TMP/out" "$TMP/opt.csv"
if check_numbers "$TMP/opt.csv"; then ok "optimize numbers in shortest round-trip form"; else not_ok "optimize numbers in shortest round-trip form"; fi
expect_rc "validate --format csv" 0 "$BIN" validate "$TEST_HERE/../data/validation/vtrain/ground_truth_multi_pp1.csv" \
    --format csv
cp "$TMP/out" "$TMP/validate.csv"
if check_numbers "$TMP/validate.csv" && python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 28 and all(r["label"] for r in rows)' "$TMP/validate.csv"
then ok "validate numbers in shortest round-trip form"; else not_ok "validate numbers in shortest round-trip form"; fi
expect_rc "optimize --format jsonl" 0 "$BIN" optimize "${SWEEP_JOB[@]}" --set pp=4 --set microbatches=8 \
    --grid schedule=1f1b,zb-v --format jsonl
if python3 - "$TMP/opt.csv" "$TMP/out" <<'PY'; then ok "optimize jsonl: one object per candidate"; else not_ok "optimize jsonl: one object per candidate"; fi
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
objs = [json.loads(l) for l in open(sys.argv[2]).read().splitlines()]
assert len(objs) == len(rows) > 0
assert [o["combination"] for o in objs] == [int(r["combination"]) for r in rows]
assert all(list(o) == list(r) for o, r in zip(objs, rows))
PY

# ---- offload=plan: says when nothing fits; never slower than either planner alone ----
# The README's uniform setup (docs/offload.md): 18 GB static per GPU, 4 GiB
# activations; at 20 GiB no plan fits, at 32 GiB several do.
U=(--set workload=uniform --set uniform.f=0.1 --set uniform.b=0.1 --set uniform.w=0.1 --set uniform.activation=4GiB
   --set uniform.params=1e9 --set network=cluster --set pp=8 --set microbatches=24 --set schedule=1f1b
   --set offload=plan)
expect_rc "offload=plan with no fitting plan exits 3" 3 "$BIN" run "${U[@]}" --set memory.capacity=20GiB --format json
expect_err "... and says offload=plan is infeasible" "offload=plan is infeasible: none of the [0-9]+ plans tried fits 20.00 GiB"
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
p = j["plan"]
assert p["kind"] == "offload=plan" and p["feasible"] is False, p
assert "fits" in p["reason"] and p["candidates"] >= 1, p
assert j["oom"], j["oom"]' "$TMP/out"; then ok "JSON plan: feasible false, with the reason"
else not_ok "JSON plan: feasible false, with the reason" "$(head -c 300 "$TMP/out")"; fi
expect_rc "offload=plan with no fitting plan (text)" 3 "$BIN" run "${U[@]}" --set memory.capacity=20GiB
if grep -q "^plan       offload=plan: INFEASIBLE" "$TMP/out"; then ok "... the text report's plan line says INFEASIBLE"
else not_ok "... the text report's plan line says INFEASIBLE"; fi
expect_rc "offload=plan that fits" 0 "$BIN" run "${U[@]}" --set memory.capacity=32GiB --format json
if python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["plan"]
assert p["feasible"] is True and p["reason"] is None and p["chosen"], p' "$TMP/out"
then ok "JSON plan: feasible, names the plan that won"; else not_ok "JSON plan: feasible, names the plan that won"; fi
expect_rc "no planner: plan is null" 0 "$BIN" run "${U[@]}" --set offload=none --set memory.capacity=1TiB --format json
if python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["plan"] is None' "$TMP/out"; then ok "... null"
else not_ok "... null"; fi
# Issue 33: PipeOffload's 66.6B on PP32 (docs/offload.md), 80 GB A100s.  With
# recomputation allowed in full, offload=plan must run no slower than
# recompute=plan alone or offload=plan alone (measured before: 86.487 s against
# recompute=plan's 84.735 s).
B=(--set workload=hf:profiles/models/pipeoffload-66.6b.json --set gpt.seq=4096 --set microbatches=256
   --set network=cluster --set cluster.gpu=a100-80g --set cluster.host_link=measured --set cluster.nodes=4
   --set pp=32 --set schedule=1f1b --format json)
expect_rc "66.6B offload=plan recompute=full" 0 "$BIN" run "${B[@]}" --set offload=plan --set recompute=full
cp "$TMP/out" "$TMP/both.json"
expect_rc "66.6B recompute=plan" 0 "$BIN" run "${B[@]}" --set recompute=plan
cp "$TMP/out" "$TMP/remat.json"
expect_rc "66.6B offload=plan" 0 "$BIN" run "${B[@]}" --set offload=plan
cp "$TMP/out" "$TMP/offload.json"
if python3 - "$TMP/both.json" "$TMP/remat.json" "$TMP/offload.json" <<'PY'; then ok "offload=plan recompute=full is no slower than either planner alone, and names the winner"; else not_ok "offload=plan recompute=full is no slower than either planner alone, and names the winner"; fi
import json, sys
both, remat, off = (json.load(open(p)) for p in sys.argv[1:])
tol = 1 + 1e-9
assert both["makespan"] <= remat["makespan"] * tol, (both["makespan"], remat["makespan"])
assert both["makespan"] <= off["makespan"] * tol, (both["makespan"], off["makespan"])
assert not both["oom"]
assert both["plan"]["feasible"] and both["plan"]["chosen"], both["plan"]
if both["makespan"] >= remat["makespan"] / tol:
    assert "recompute=plan" in both["plan"]["chosen"] or "remat" in both["plan"]["chosen"], both["plan"]
PY

# ---- the trace: every activity of the iteration, one process per GPU ----
# check_trace TRACE RUN_JSON GPUS THREADS: valid JSON; one process per GPU,
# named by its GPU, pipeline rank and stages in args; threads per stream with
# the collectives and the optimizer step; from the first op to the
# iteration's end; slices nest; flows join a send to its receive on the
# matching GPU of the next rank; memory counters on every GPU.
check_trace() {
    python3 - "$@" <<'PY'
import json, sys, collections
d = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
want_gpus = int(sys.argv[3]); want_threads = set(sys.argv[4].split(",")) if len(sys.argv) > 4 else set()
ev = d["traceEvents"]
procs = {e["pid"]: e["args"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert len(procs) == want_gpus, (len(procs), want_gpus)
assert len({a["name"] for a in procs.values()}) == want_gpus, "every GPU its own name"
for pid, a in procs.items():
    assert a["gpu"] == pid and 0 <= a["pipeline_rank"] < r["pp"] and a["stages"], a
assert {a["pipeline_rank"] for a in procs.values()} == set(range(r["pp"]))
threads = collections.defaultdict(dict)
for e in ev:
    if e["ph"] == "M" and e["name"] == "thread_name":
        threads[e["pid"]][e["tid"]] = e["args"]["name"]
for pid in procs:
    assert {"compute", "send", "recv"} <= set(threads[pid].values()), (pid, threads[pid])
every = set.union(*(set(t.values()) for t in threads.values()))
assert want_threads <= every, (want_threads, every)
# the collectives and the optimizer step, each on its thread, on every GPU that has them
for name in want_threads:
    on = {e["pid"] for e in ev if e["ph"] == "X" and threads[e["pid"]].get(e["tid"]) == name}
    assert on, name
    if name in ("tp collectives", "cp key/value exchange", "dp reduction", "optimizer step"):
        assert on == set(procs), (name, sorted(on))
X = [e for e in ev if e["ph"] == "X"]
for e in X:
    assert e["pid"] in procs and e["tid"] in threads[e["pid"]], e
# every GPU computes
assert {e["pid"] for e in X if e["cat"] in ("F", "B", "W", "BW")} == set(procs)
# the trace covers the whole iteration: from the first op's start to the optimizer's end (the fitted
# per-iteration overhead, outside the ops, is a number in otherData, not a slice)
start = min(e["ts"] for e in X); end = max(e["ts"] + e["dur"] for e in X)
assert r["iteration"]["overhead_seconds"] > 0
assert d["otherData"]["overhead_seconds"] == r["iteration"]["overhead_seconds"]
it = (r["iteration_seconds"] - r["iteration"]["overhead_seconds"]) * 1e6
assert abs((end - start) - it) <= 1e-6 * it + 1e-3, (end - start, it)
assert r["iteration_seconds"] > r["makespan"]
assert d["otherData"]["iteration_seconds"] == r["iteration_seconds"]
# slices on one thread nest
lanes = collections.defaultdict(list)
for e in X: lanes[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
for k, iv in lanes.items():
    iv.sort()
    for a, b in zip(iv, iv[1:]): assert b[0] >= a[1] - 1e-5 or b[1] <= a[1] + 1e-5, (k, threads[k[0]][k[1]], a, b)
# flows: a send joined to its receive on another GPU
s = {e["id"]: e for e in ev if e["ph"] == "s"}; f = {e["id"]: e for e in ev if e["ph"] == "f"}
assert s and s.keys() == f.keys()
for i in s:
    assert s[i]["pid"] != f[i]["pid"]
    assert procs[s[i]["pid"]]["replica"] == procs[f[i]["pid"]]["replica"]
    assert procs[s[i]["pid"]]["tp_rank"] == procs[f[i]["pid"]]["tp_rank"]
# memory counters on every GPU
assert {e["pid"] for e in ev if e["ph"] == "C" and e["name"] == "memory bytes"} == set(procs)
PY
}
TRACE_GPT=(--set workload=gpt --set gpt.layers=8 --set gpt.hidden=1024 --set gpt.heads=16 --set network=cluster
           --set cluster.nodes=2 --set memory.capacity=1TiB --format json)
expect_rc "trace of tp 2, dp 2, pp 4 with offload" 0 "$BIN" run "${TRACE_GPT[@]}" --set gpt.seq=1024 --set tp=2 \
    --set dp=2 --set pp=4 --set microbatches=8 --set offload=full --trace "$TMP/tp.trace.json"
if check_trace "$TMP/tp.trace.json" "$TMP/out" 16 "tp collectives,dp reduction,optimizer step,d2h,h2d" 2>"$TMP/pyerr"
then ok "trace (tp, dp, offload): 16 GPUs, collectives, dp reduction, optimizer, to the iteration's end"
else not_ok "trace (tp, dp, offload): 16 GPUs, collectives, dp reduction, optimizer, to the iteration's end" \
    "$(tail -2 "$TMP/pyerr")"; fi
expect_rc "trace of cp 2, dp 2, pp 2" 0 "$BIN" run "${TRACE_GPT[@]}" --set gpt.seq=4096 --set cp=2 --set dp=2 \
    --set pp=2 --set microbatches=4 --trace "$TMP/cp.trace.json"
if check_trace "$TMP/cp.trace.json" "$TMP/out" 8 "cp key/value exchange,dp reduction,optimizer step" 2>"$TMP/pyerr"
then ok "trace (cp, dp): 8 GPUs, key/value exchanges"
else not_ok "trace (cp, dp): 8 GPUs, key/value exchanges" "$(tail -2 "$TMP/pyerr")"; fi
expect_rc "trace of a MoE with ep 2, dp 2, pp 4" 0 "$BIN" run "${TRACE_GPT[@]}" \
    --set workload=hf:profiles/models/mixtral-8x7b.json --set gpt.seq=1024 --set ep=2 --set dp=2 --set pp=4 \
    --set microbatches=4 --trace "$TMP/ep.trace.json"
if check_trace "$TMP/ep.trace.json" "$TMP/out" 8 "ep all-to-all,dp reduction,optimizer step" 2>"$TMP/pyerr"
then ok "trace (ep, dp): 8 GPUs, all-to-alls"
else not_ok "trace (ep, dp): 8 GPUs, all-to-alls" "$(tail -2 "$TMP/pyerr")"; fi

test_summary
