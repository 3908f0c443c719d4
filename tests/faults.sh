#!/usr/bin/env bash
# faults.sh: fault injection against a built binary (default src/pipegrid):
# sweeps killed (SIGKILL, SIGTERM) and resumed, two writers on one -o file,
# address-space and file-size limits, a closed stdout pipe, unwritable
# outputs, bad platform numbers, oversized models and malformed validation
# CSVs (issue 33, "Crashes and lost output").  Every pipegrid exit status is
# recorded: none may be a crash (>= 128, a signal) unless this script sent
# the signal itself, and no sweep row may be lost or written twice.  Each
# check prints "ok - ..." or "not ok - ..."; the script ends with
# "faults: N crashes, M lost or duplicated rows" and
# "faults: N passed, M failed".  Deterministic: every interruption waits for
# the state it interrupts (rows in the file, a child running) before it kills.
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" faults
SRC=$(cd "$TEST_HERE/.." && pwd)
PLATFORM="$SRC/platforms/dgx-h100-1node.xml"
MODELS="$SRC/profiles/models"
VTRAIN="$SRC/data/validation/vtrain/ground_truth_single.csv"
cd "$TMP" || exit 1
crashes=0
lost_rows=0
# Seconds to wait for a state before giving up (a hang is a failure, not a wait forever).
WAIT_S=60

# pg NAME WANT ARGS...: run pipegrid (stdout/stderr to $TMP/out, $TMP/err), expect exit WANT, count crashes.
pg() {
    local name=$1 want=$2
    shift 2
    timeout "$COMMAND_TIMEOUT_S" "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    note_rc "$name" "$rc"
    if [ "$rc" = "$want" ]; then ok "$name"; else not_ok "$name" "exit $rc, want $want: $(head -c 600 "$TMP/err")"; fi
}
# note_rc NAME RC: a pipegrid exit status this script did not cause by a signal.
note_rc() {
    if [ "$2" -ge 128 ]; then
        crashes=$((crashes + 1))
        say "    crash: $1 exited $2"
    fi
}
# wait_for SECONDS COMMAND...: poll until COMMAND succeeds; 1 on timeout.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ $SECONDS -ge $deadline ] && return 1
        sleep 0.05
    done
}
data_rows() { [ -f "$1" ] && echo $(($(wc -l <"$1") - 1)) || echo 0; }
has_rows() { [ "$(data_rows "$1")" -ge "$2" ]; }
# check_rows NAME FILE REFERENCE: FILE holds REFERENCE's rows exactly once each (byte for byte, same order).
check_rows() {
    local dups missing
    dups=$(tail -n +2 "$2" | sort | uniq -d | wc -l)
    missing=$(comm -23 <(tail -n +2 "$3" | sort) <(tail -n +2 "$2" | sort) | wc -l)
    lost_rows=$((lost_rows + dups + missing))
    if cmp -s "$2" "$3"; then ok "$1"; else not_ok "$1" "$missing rows missing, $dups duplicated: $(diff "$2" "$3" | head -5)"; fi
}

# ---- bad platform numbers (a link latency that does not parse segfaulted) ----
for lat in -1s '' fast nan inf; do
    sed "0,/latency=\"[^\"]*\"/s//latency=\"$lat\"/" "$PLATFORM" >bad.xml
    line=$(grep -n "latency=\"$lat\"" bad.xml | head -1 | cut -d: -f1)
    pg "a link latency '$lat' is refused (exit 2)" 2 run --set network="$TMP/bad.xml"
    expect_err "  ... naming file, line and attribute" "bad\.xml:$line: key 'latency'"
done
sed '0,/latency="[^"]*"/s//latency="fast"/' "$PLATFORM" >bad.xml
pg "a sweep over a bad platform exits 0 (its rows are input errors, results)" 0 sweep \
    --grid network="$TMP/bad.xml" --grid microbatches=8,16
expect_py_codes() {
    if python3 -c "
import csv, sys
rows = list(csv.DictReader(open('$TMP/out')))
codes = sorted({r['exit_code'] for r in rows})
sys.exit(0 if len(rows) == $1 and codes == ['$2'] else 'rows %d, exit codes %s' % (len(rows), codes))
" 2>"$TMP/pyerr"; then ok "$3"; else not_ok "$3" "$(cat "$TMP/pyerr")"; fi
}
expect_py_codes 2 2 "  ... every row has exit_code 2"

# ---- a sweep whose row is killed by a signal exits 1 (rule: README, Sweeps) ----
"$BIN" sweep --grid microbatches=4,5000 -j 1 -o crash.csv >/dev/null 2>crash.err &
sweep_pid=$!
child=
# the first row is written before the second run starts (-j 1), so the child found after it is the slow one
slow_child() { has_rows crash.csv 1 && child=$(pgrep -P "$sweep_pid" | head -1) && [ -n "$child" ]; }
if wait_for $WAIT_S slow_child; then kill -SEGV "$child"; fi
wait "$sweep_pid"
rc=$?
note_rc "sweep with a crashed row" "$rc"
if [ "$rc" = 1 ] && grep -q "crashed" crash.err; then ok "a sweep with a row killed by a signal exits 1 saying so"
else not_ok "a sweep with a row killed by a signal exits 1 saying so" "exit $rc: $(tail -2 crash.err)"; fi
if python3 -c "
import csv, sys
rows = list(csv.DictReader(open('crash.csv')))
sys.exit(0 if [r['exit_code'] for r in rows] == ['0', '139'] else [r['exit_code'] for r in rows])
" 2>"$TMP/pyerr"; then ok "  ... its row is written with exit_code 139"; else not_ok "  ... its row is written with exit_code 139" "$(cat "$TMP/pyerr")"; fi

# ---- kill -9 and SIGTERM mid-sweep, then resume: no row lost or written twice ----
GRID=(--grid microbatches=4,8,12,16,3000,4000 -j 1)
pg "reference sweep" 0 sweep "${GRID[@]}" -o ref.csv
for sig in KILL TERM; do
    rm -f part.csv
    "$BIN" sweep "${GRID[@]}" -o part.csv >/dev/null 2>part.err &
    sweep_pid=$!
    if wait_for $WAIT_S has_rows part.csv 4; then
        children=$(pgrep -P "$sweep_pid")
        kill -$sig "$sweep_pid"
        [ -n "$children" ] && kill -KILL $children 2>/dev/null   # the orphaned run would only burn CPU
    fi
    wait "$sweep_pid" 2>/dev/null
    rc=$?
    if [ "$rc" -ge 128 ] && [ "$(data_rows part.csv)" -lt 6 ]; then ok "SIG$sig stops a sweep mid-way ($(data_rows part.csv) of 6 rows)"
    else not_ok "SIG$sig stops a sweep mid-way" "exit $rc, $(data_rows part.csv) rows"; fi
    pg "  ... the same sweep resumes (SIG$sig)" 0 sweep "${GRID[@]}" -o part.csv
    check_rows "  ... every row once, as the uninterrupted sweep wrote it (SIG$sig)" part.csv ref.csv
done
# a last row cut short (a writer killed mid-write) is dropped and run again
head -c -20 ref.csv >cut.csv
pg "a sweep file whose last row was cut short resumes" 0 sweep "${GRID[@]}" -o cut.csv
check_rows "  ... the cut row is run again, no row twice" cut.csv ref.csv

# ---- two writers on one -o file ----
rm -f two.csv
"$BIN" sweep "${GRID[@]}" -o two.csv >/dev/null 2>two.err &
first=$!
wait_for $WAIT_S test -s two.csv   # its header: written once the lock is held
pg "a second sweep on the same -o file is refused (exit 1)" 1 sweep "${GRID[@]}" -o two.csv
expect_err "  ... saying another pipegrid is writing it" "two\.csv: another pipegrid is writing this file"
wait "$first"
rc=$?
note_rc "first of two writers" "$rc"
if [ "$rc" = 0 ]; then ok "  ... the first sweep completes"; else not_ok "  ... the first sweep completes" "exit $rc"; fi
check_rows "  ... every row once" two.csv ref.csv
pg "  ... and merge accepts the file" 0 merge two.csv
rm -f res.csv
OPT=(optimize --grid schedule=1f1b --set microbatches=8)
"$BIN" "${OPT[@]}" --resume res.csv >/dev/null 2>res.err &
first=$!
wait_for $WAIT_S test -s res.csv
pg "a second optimize --resume on the same file is refused (exit 1)" 1 "${OPT[@]}" --resume res.csv
expect_err "  ... saying another pipegrid is writing it" "res\.csv: another pipegrid is writing this file"
wait "$first"
rc=$?
note_rc "first optimize --resume" "$rc"
if [ "$rc" = 0 ] && [ "$(tail -n +2 res.csv | sort | uniq -d | wc -l)" = 0 ]; then ok "  ... the first search completes, no row twice"
else not_ok "  ... the first search completes, no row twice" "exit $rc"; lost_rows=$((lost_rows + 1)); fi

# ---- address-space limits (ulimit -v): exit 1 with a message, never an abort ----
# AddressSanitizer reserves terabytes of shadow memory, so no limit can apply to its builds.
if ldd "$BIN" 2>/dev/null | grep -q libasan || [ -n "${ASAN_OPTIONS:-}" ]; then
    say "ok - # SKIP ulimit -v under AddressSanitizer"
else
    # SimGrid's actor stacks do not fit (measured: aborts below about 250 MB on the default experiment; the
    # actor replay forced, as the default now runs without actors)
    (ulimit -v 160000; exec "$BIN" run --set sim.engine=actors) >/dev/null 2>err.txt
    rc=$?
    note_rc "run under ulimit -v 160000" "$rc"
    if [ "$rc" = 1 ] && grep -q "ulimit -v" err.txt; then ok "run under ulimit -v 160000 exits 1 naming the limit"
    else not_ok "run under ulimit -v 160000 exits 1 naming the limit" "exit $rc: $(tail -c 300 err.txt)"; fi
    # pipegrid's own allocation fails (a million microbatches' ops)
    (ulimit -v 300000; exec "$BIN" run --set microbatches=1000000) >/dev/null 2>err.txt
    rc=$?
    note_rc "run of 1e6 microbatches under ulimit -v 300000" "$rc"
    if [ "$rc" = 1 ] && grep -q "out of memory" err.txt; then ok "an allocation that fails under ulimit -v exits 1 with a message"
    else not_ok "an allocation that fails under ulimit -v exits 1 with a message" "exit $rc: $(tail -c 300 err.txt)"; fi
fi

# ---- a closed stdout pipe: exit 1 with a message, not SIGPIPE (141) ----
closed_pipe() {
    python3 - "$@" <<'EOF'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)                      # the reader is gone before the first write
p = subprocess.run(sys.argv[1:], stdout=w, stderr=open("err.txt", "w"))
sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)
EOF
}
for cmd in "run" "keys" "sweep --grid microbatches=4,8" "run --format json"; do
    closed_pipe "$BIN" $cmd
    rc=$?
    note_rc "$cmd into a closed pipe" "$rc"
    if [ "$rc" = 1 ] && grep -q "cannot write" err.txt; then ok "$cmd into a closed pipe exits 1 with a message"
    else not_ok "$cmd into a closed pipe exits 1 with a message" "exit $rc: $(head -c 300 err.txt)"; fi
done

# ---- unwritable outputs: cannot create = 2, cannot write = 1; one output's failure loses no other ----
RUN=(run --set pp=2 --set microbatches=2)
pg "--trace into a missing directory: exit 2" 2 "${RUN[@]}" --trace "$TMP/no/dir/t.json" --svg s1.svg
expect_err "  ... naming the file and the option" "no/dir/t\.json: key '--trace'"
if [ -s s1.svg ]; then ok "  ... the --svg is still written"; else not_ok "  ... the --svg is still written"; fi
pg "--trace to a full disk: exit 1" 1 "${RUN[@]}" --trace /dev/full --svg s2.svg
if [ -s s2.svg ]; then ok "  ... the --svg is still written"; else not_ok "  ... the --svg is still written"; fi
pg "--svg into a missing directory: exit 2, the trace written" 2 "${RUN[@]}" --trace t3.json --svg "$TMP/no/s.svg"
if python3 -c "import json; json.load(open('t3.json'))" 2>/dev/null; then ok "  ... the trace is whole JSON"; else not_ok "  ... the trace is whole JSON"; fi
# a write that fails part-way (file-size limit) leaves the old file, no temporary, and the other output
echo OLD >t4.json
(ulimit -f 100; exec "$BIN" run --trace t4.json --svg s4.svg) >/dev/null 2>err.txt
rc=$?
note_rc "--trace beyond ulimit -f" "$rc"
if [ "$rc" = 1 ] && grep -q "t4.json: cannot write" err.txt; then ok "a trace that fails part-way exits 1 naming it"
else not_ok "a trace that fails part-way exits 1 naming it" "exit $rc: $(head -c 300 err.txt)"; fi
if [ "$(cat t4.json)" = OLD ] && ! ls t4.json.tmp* >/dev/null 2>&1; then ok "  ... the old file is untouched, no temporary left"
else not_ok "  ... the old file is untouched, no temporary left" "$(ls t4.json*)"; fi
if [ -s s4.svg ]; then ok "  ... the --svg is still written"; else not_ok "  ... the --svg is still written"; fi
# a trace killed while it is written never replaces the file
echo OLD >t5.json
"$BIN" run --set microbatches=3000 --trace t5.json >/dev/null 2>&1 &
run_pid=$!
temp_exists() { compgen -G "t5.json.tmp*" >/dev/null; }
if wait_for $WAIT_S temp_exists; then kill -KILL "$run_pid"; fi
wait "$run_pid" 2>/dev/null
if [ "$(cat t5.json)" = OLD ]; then ok "a run killed while writing its trace leaves the old trace"; else not_ok "a run killed while writing its trace leaves the old trace" "$(head -c 100 t5.json)"; fi
pg "sweep -o into a missing directory: exit 2" 2 sweep --grid microbatches=4 -o "$TMP/no/s.csv"
pg "merge -o into a missing directory: exit 2" 2 merge -o "$TMP/no/m.csv" ref.csv
pg "merge -o to a full disk: exit 1" 1 merge -o /dev/full ref.csv
pg "sweep --emit -o into a missing directory: exit 2" 2 sweep --grid microbatches=4,8 --emit parallel -o "$TMP/no/j.txt"

# ---- sizes: one limit per quantity, however it is given; exit 2 at once ----
pg "gpt.layers=1000000000 is refused at once" 2 run --set workload=gpt --set gpt.layers=1000000000 \
    --set gpt.hidden=1024 --set gpt.heads=16 --set gpt.seq=1024
expect_err "  ... naming the key and the limit" "gpt\.layers.*65536"
hf_edit() {   # hf_edit MODEL PYTHON: the model's config.json edited by PYTHON (d is the dict) as m.json
    python3 -c "
import json; d = json.load(open('$MODELS/$1.json')); $2; json.dump(d, open('m.json', 'w'), indent=1)"
}
for edit in 'd["head_dim"] = 10**9' 'd["num_local_experts"] = 10**9' 'd["num_hidden_layers"] = 10**9'; do
    hf_edit mixtral-8x7b "$edit"
    key=$(echo "$edit" | sed 's/d\["\([a-z_]*\)"\].*/\1/')
    pg "hf: $edit is refused" 2 run --set workload=hf:m.json --set gpt.seq=4096
    expect_err "  ... naming file, line and key" "m\.json:[0-9]+: key '$key'"
done
(head -1 "$VTRAIN"; sed -n 2p "$VTRAIN" | awk -F, 'BEGIN{OFS=","} {$6=1000000000; print}') >big.csv
pg "a validation row with 1e9 layers is refused" 2 validate big.csv
expect_err "  ... naming file, line and column" "big\.csv:2: key '# layers'"

# ---- hf configs: MoE with no experts, norm epsilons ----
hf_edit mixtral-8x7b 'd["num_local_experts"] = 0'
pg "an MoE config with 0 experts is refused" 2 run --set workload=hf:m.json --set gpt.seq=4096
expect_err "  ... naming the key" "key 'num_local_experts'"
hf_edit mixtral-8x7b 'd["num_local_experts"] = 0; del d["num_experts_per_tok"]'
pg "an MoE model_type with 0 experts is refused" 2 run --set workload=hf:m.json --set gpt.seq=4096
for eps in 0 -1e-5 1.5; do
    hf_edit llama3-8b "d['rms_norm_eps'] = $eps"
    pg "rms_norm_eps = $eps is refused" 2 run --set workload=hf:m.json --set gpt.seq=4096
    expect_err "  ... naming the key" "key 'rms_norm_eps'"
done

# ---- validation CSVs: duplicated columns, quoting, NUL bytes ----
(head -1 "$VTRAIN" | sed 's/$/,# layers/'; sed -n 2,4p "$VTRAIN" | sed 's/$/,99/') >dup.csv
pg "a vTrain file with a column named twice is refused" 2 validate dup.csv
expect_err "  ... naming the column" "key '# layers': column named twice"
KORT="$SRC/data/validation/megatron/korthikanti.csv"
(grep -v '^#' "$KORT" | head -1 | sed 's/$/,layers/'; grep -v '^#' "$KORT" | sed -n 2,3p | sed 's/$/,1/') >kdup.csv
pg "a Korthikanti file with a column named twice is refused" 2 validate kdup.csv
expect_err "  ... naming the column" "key 'layers': column named twice"
(head -1 "$VTRAIN"; sed -n 2p "$VTRAIN" | sed 's/^\([0-9]*\),/"\1",/') >quoted.csv
pg "a vTrain file with a quoted field reads as the unquoted one" 0 validate quoted.csv
quoted_out=$(cat "$TMP/out")
(head -1 "$VTRAIN"; sed -n 2p "$VTRAIN") >plain.csv
pg "  ... (the unquoted file)" 0 validate plain.csv
if [ "$quoted_out" = "$(sed 's/plain\.csv/quoted.csv/g' "$TMP/out")" ]; then ok "  ... same predictions"; else not_ok "  ... same predictions"; fi
(head -1 "$VTRAIN"; sed -n 2p "$VTRAIN" | sed 's/^/"/'; sed -n 3p "$VTRAIN") >open.csv
pg "an unterminated quote is refused (not an extra row)" 2 validate open.csv
expect_err "  ... naming the line" "open\.csv:2: unterminated quote"
(head -1 "$VTRAIN"; printf '2,16\0,8\n') >nul.csv
pg "a NUL byte is refused" 2 validate nul.csv
expect_err "  ... called a NUL byte" "nul\.csv:2: NUL byte"

say "faults: $crashes crashes, $lost_rows lost or duplicated rows"
if [ "$crashes" = 0 ]; then ok "no pipegrid run crashed (no exit >= 128 this script did not cause)"; else not_ok "no pipegrid run crashed" "$crashes crashes"; fi
if [ "$lost_rows" = 0 ]; then ok "no sweep row lost or written twice"; else not_ok "no sweep row lost or written twice" "$lost_rows"; fi
test_summary
