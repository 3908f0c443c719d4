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
