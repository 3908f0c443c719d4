#!/usr/bin/env bash
# sweep.sh: `pipegrid sweep` and `pipegrid merge` end to end against a built
# binary (default src/pipegrid): grid order, rows equal to `run`'s, failing
# combinations as rows with their exit codes, resume, chunks, merge, the GNU
# parallel job list run for real by `parallel` (also through --sshlogin :),
# and the Slurm array script run task by task as Slurm would.  Each check
# prints "ok - ..." or "not ok - ...", and the script ends with
# "sweep: N passed, M failed" (make check keeps it as tests/sweep.log).
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" sweep
# expect_py NAME PYTHON: PYTHON sees `out` (last stdout), `err` (last stderr), `rows`/`header` (out as CSV),
# `T` (the temporary directory) and `csvfile(path)` -> (header, rows).
expect_py() {
    if python3 - "$TMP" <<EOF 2>"$TMP/pyerr"; then ok "$1"; else not_ok "$1" "$(tail -n 4 "$TMP/pyerr")"; fi
import csv, io, os, sys
T = sys.argv[1]
def csvfile(path):
    r = list(csv.reader(open(path, newline="")))
    return (r[0] if r else []), r[1:]
out = open(os.path.join(T, "out")).read()
err = open(os.path.join(T, "err")).read()
_all = list(csv.reader(io.StringIO(out)))
header, rows = (_all[0] if _all else []), _all[1:]
def col(name, row):
    return row[header.index(name)]
$2
EOF
}

cd "$TMP" || exit 1
# A small experiment of its own: uniform ops on the ideal network, so the
# test needs no data file and every number has a closed form.
cat >exp.yaml <<'EOF'
schedule: 1f1b
pp: 4
microbatches: 8
workload: uniform
uniform:
  f: 1
  b: 1
  w: 1
network: ideal
EOF
printf '0B0,0F0\n1F0,1B0\n' >dead.csv   # rank 0's backward waits for rank 1, which waits for rank 0
REQUIRED='["makespan", "span", "bubble_ratio", "max_peak_memory_bytes", "oom", "exit_code"]'

# ---- grid order and the rows ----
expect_rc "sweep over a 2 x 3 grid exits 0" 0 "$BIN" sweep exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 \
    -j 2 --format csv
cp out grid.csv
expect_py "the header starts with the grid keys and has the contract's columns" "
assert header[:2] == ['pp', 'microbatches'], header
for c in $REQUIRED: assert c in header, (c, header)
assert header.count('pp') == 1 and header.count('microbatches') == 1, header"
expect_py "one row per combination, first grid key slowest" "
assert [(r[0], r[1]) for r in rows] == [(p, m) for p in ('2', '4') for m in ('4', '8', '16')], rows
assert [int(col('combination', r)) for r in rows] == list(range(6))
assert all(col('combinations', r) == '6' for r in rows)"
expect_py "1F1B with F=B=W=1: makespan (m + p - 1) * 3, exit 0, no OOM" "
for r in rows:
    p, m = int(r[0]), int(r[1])
    assert abs(float(col('makespan', r)) - (m + p - 1) * 3) < 1e-9, r
    assert col('exit_code', r) == '0' and col('oom', r) == '0', r
    assert float(col('bubble_ratio', r)) > 0 and float(col('max_peak_memory_bytes', r)) > 0, r"
"$BIN" run exp.yaml --set pp=4 --set microbatches=16 --format csv >run.csv 2>/dev/null
expect_py "a sweep row has the same results as run --format csv" "
rh, rr = csvfile(T + '/run.csv')
row = rows[5]
for c in rh:
    if c in ('pp', 'microbatches'): continue
    assert col(c, row) == rr[0][rh.index(c)], (c, col(c, row), rr[0][rh.index(c)])"
expect_rc "-j 1 sweep exits 0" 0 "$BIN" sweep exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 -j 1 --format csv
if cmp -s out grid.csv; then ok "-j 1 and -j 2 print identical CSVs"; else not_ok "-j 1 and -j 2 print identical CSVs"; fi
expect_rc "-j 5 sweep exits 0" 0 "$BIN" sweep exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 -j 5 --format csv
if cmp -s out grid.csv; then ok "-j 5 prints the same CSV"; else not_ok "-j 5 prints the same CSV"; fi
expect_py "no progress bar when stderr is not a terminal" "assert '\r' not in err and 'sweep [' not in err, err"

# ---- failing combinations are rows ----
expect_rc "a sweep with failing combinations still exits 0" 0 "$BIN" sweep exp.yaml \
    --grid schedule=1f1b,file:nosuch.csv,file:dead.csv --grid memory.capacity=80GiB,1GiB -j 2 --format csv
expect_py "every combination has a row, with its exit code" "
codes = {(r[0], r[1]): col('exit_code', r) for r in rows}
assert len(rows) == 6, rows
assert codes == {('1f1b', '80GiB'): '0', ('1f1b', '1GiB'): '3', ('file:nosuch.csv', '80GiB'): '2',
                 ('file:nosuch.csv', '1GiB'): '2',
                 ('file:dead.csv', '80GiB'): '4', ('file:dead.csv', '1GiB'): '4'}, codes"
expect_py "bad input and deadlock rows have empty metrics; an OOM row has them" "
for r in rows:
    code = col('exit_code', r)
    filled = [col(c, r) != '' for c in ('makespan', 'span', 'bubble_ratio', 'max_peak_memory_bytes', 'oom')]
    assert all(filled) if code in ('0', '3') else not any(filled), r
    if code == '3': assert int(col('oom', r)) > 0, r"
expect_err "a failing combination's message is prefixed by the combination" \
    "^\[schedule=file:nosuch.csv memory.capacity=80GiB\] pipegrid: .*nosuch.csv"
expect_err "the deadlock's message names the combination and the blocked ops" \
    "^\[schedule=file:dead.csv memory.capacity=1GiB\] .*blocked"

# ---- bad sweep options fail at once ----
# Unknown grid keys and values no run could accept: exit 2 naming the key, before anything runs (no CSV).
check_bad_grid() { # NAME PATTERN GRID...
    local name=$1 pattern=$2
    shift 2
    expect_rc "$name exits 2 before running" 2 "$BIN" sweep exp.yaml "$@" --format csv
    if [ -s "$TMP/out" ]; then not_ok "$name: nothing ran" "stdout: $(head -c 300 "$TMP/out")"; else ok "$name: nothing ran"; fi
    expect_err "$name: the message names the key" "$pattern"
}
check_bad_grid "an unknown grid key" "key 'microbatchs': unknown key .*microbatches" --grid pp=2,4 --grid microbatchs=4,8
check_bad_grid "a grid value of the wrong type" "key 'pp': .*'four'" --grid pp=2,four
check_bad_grid "a grid value out of range" "key 'microbatches':" --grid microbatches=4,0
check_bad_grid "an unknown schedule in the grid" "key 'schedule': unknown schedule 'nope'" --grid schedule=1f1b,nope
check_bad_grid "a bad choice in the grid" "key 'offload':" --grid offload=none,sometimes
# The progress bar (stderr a terminal) counts OOM rows as OOM, not as failures.
python3 - "$BIN" "$TMP" <<'PYEOF' >"$TMP/out" 2>"$TMP/err"
import os, pty, sys, subprocess
binary, tmp = os.path.abspath(sys.argv[1]) if os.sep in sys.argv[1] else sys.argv[1], sys.argv[2]
master, slave = pty.openpty()
p = subprocess.Popen([binary, "sweep", os.path.join(tmp, "exp.yaml"), "--grid", "memory.capacity=80GiB,1GiB",
                      "--format", "csv"], stdout=subprocess.DEVNULL, stderr=slave, cwd=tmp)
os.close(slave)
chunks = []
while True:
    try:
        data = os.read(master, 4096)
    except OSError:
        break
    if not data:
        break
    chunks.append(data)
p.wait()
sys.stdout.write(b"".join(chunks).decode(errors="replace"))
PYEOF
if grep -q "2/2, 1 OOM" "$TMP/out" && ! grep -q "failed" "$TMP/out"; then ok "the progress bar counts an OOM row as OOM"
else not_ok "the progress bar counts an OOM row as OOM" "$(tr '\r' '\n' <"$TMP/out" | tail -n 3)"; fi
expect_rc "--grid without '=' exits 2" 2 "$BIN" sweep exp.yaml --grid pp --format csv
expect_err "... naming the option" "--grid pp"
expect_rc "an empty grid value exits 2" 2 "$BIN" sweep exp.yaml --grid pp=2,,4 --format csv
expect_rc "a grid key given twice exits 2" 2 "$BIN" sweep exp.yaml --grid pp=2 --grid pp=4 --format csv
expect_rc "a repeated grid value exits 2" 2 "$BIN" sweep exp.yaml --grid pp=2,2 --format csv
expect_rc "no --grid exits 2" 2 "$BIN" sweep exp.yaml --format csv
expect_rc "a missing experiment file exits 2" 2 "$BIN" sweep nosuch.yaml --grid pp=2,4 --format csv
expect_rc "--format json is refused" 2 "$BIN" sweep exp.yaml --grid pp=2,4 --format json
expect_rc "--chunk 4/3 exits 2" 2 "$BIN" sweep exp.yaml --grid pp=2,4 --chunk 4/3 --format csv

# ---- resume ----
expect_rc "sweep -o writes the file" 0 "$BIN" sweep exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 -j 2 \
    --format csv -o res.csv
if cmp -s res.csv grid.csv && [ ! -s out ]; then ok "-o FILE holds the CSV, stdout stays empty"
else not_ok "-o FILE holds the CSV, stdout stays empty"; fi
# Interrupted after two rows and half of the third; a kept row is marked to show it is not recomputed.
python3 - res.csv <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
head, r1, r2, r3 = lines[0], lines[1], lines[2], lines[3]
cols = head.rstrip("\n").split(",")
f = r2.rstrip("\n").split(",")
f[cols.index("makespan")] = "12345"
open(sys.argv[1], "w").write(head + r1 + ",".join(f) + "\n" + r3[: len(r3) // 2])
PY
expect_rc "resuming an interrupted sweep exits 0" 0 "$BIN" sweep exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 \
    -j 2 --format csv -o res.csv
expect_err "resume says how many rows it kept" "2 combinations already there, 4 to run"
cp res.csv out
expect_py "the resumed file has every combination once and kept the rows already there" "
assert len(rows) == 6 and sorted(int(col('combination', r)) for r in rows) == list(range(6)), rows
assert col('makespan', rows[1]) == '12345', rows[1]
assert [col('combination', r) for r in rows] == ['0', '1', '2', '3', '4', '5'], rows"
expect_rc "resuming a complete file runs nothing" 0 "$BIN" sweep exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 \
    --format csv -o res.csv
expect_err "... and says so" "6 combinations already there, 0 to run"
expect_rc "resuming into a file of another grid exits 2" 2 "$BIN" sweep exp.yaml --grid pp=2,4 --format csv -o res.csv
expect_err "... naming the header" "res.csv:1: .*header"

# ---- chunks and merge ----
for k in 1 2 3; do
    "$BIN" sweep exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 --chunk "$k/3" --format csv -o "chunk-$k.csv" \
        2>/dev/null
done
expect_py "--chunk K/3 for K = 1..3 runs each combination exactly once" "
header_full = csvfile(T + '/grid.csv')[0]
seen = []
for k in (1, 2, 3):
    h, rs = csvfile(T + '/chunk-%d.csv' % k)
    assert h == header_full, (h, header_full)
    assert rs, 'empty chunk %d' % k
    seen += [int(r[h.index('combination')]) for r in rs]
assert sorted(seen) == list(range(6)), seen"
expect_rc "merge of the chunks exits 0" 0 "$BIN" merge chunk-3.csv chunk-1.csv chunk-2.csv
if cmp -s out grid.csv; then ok "merge restores the grid order: identical to the single sweep"
else not_ok "merge restores the grid order: identical to the single sweep" "$(diff out grid.csv | head -5)"; fi
expect_rc "merge -o writes the file" 0 "$BIN" merge -o merged.csv chunk-1.csv chunk-2.csv chunk-3.csv chunk-1.csv
if cmp -s merged.csv grid.csv; then ok "merge -o, with a part given twice, writes each combination once"
else not_ok "merge -o, with a part given twice, writes each combination once"; fi
expect_rc "merge with a chunk missing exits 2" 2 "$BIN" merge chunk-1.csv chunk-3.csv
expect_err "... saying how many" "2 of 6 combinations missing"
expect_err "... listing them" "combination 1\$"
expect_err "... every one of them" "combination 4\$"
expect_py "... after writing the rows it has, in order" "
assert [int(col('combination', r)) for r in rows] == [0, 2, 3, 5], rows"
expect_rc "merge --grid with a chunk missing exits 2" 2 "$BIN" merge --grid pp=2,4 --grid microbatches=4,8,16 \
    chunk-1.csv chunk-3.csv
expect_err "... and names the missing combinations by their key values" "combination 1: pp=2 microbatches=8\$"
expect_err "... every one of them" "combination 4: pp=4 microbatches=8\$"
expect_rc "merge --grid of another grid exits 2" 2 "$BIN" merge --grid pp=2,4 --grid microbatches=4,8,32 chunk-1.csv chunk-3.csv
expect_err "... naming the row" "chunk-3.csv:[0-9]+: combination [0-9]+ has microbatches=16, the --grid says 32"
grep -v ',4,6$' grid.csv >holed.csv
expect_rc "merge of a file with a hole exits 2" 2 "$BIN" merge holed.csv
expect_err "... and names the hole by its key values when the other rows tell them" \
    "combination 4: pp=4 microbatches=8\$"
"$BIN" sweep exp.yaml --grid pp=2,4 --format csv -o other.csv 2>/dev/null
expect_rc "merge of parts with different headers exits 2" 2 "$BIN" merge chunk-1.csv other.csv
expect_err "... naming the file" "other.csv:1: .*header"
expect_rc "merge of a file that is not a sweep CSV exits 2" 2 "$BIN" merge exp.yaml

# ---- GNU parallel, for real ----
mkdir par && cd par || exit 1
expect_rc "--emit parallel writes a job list" 0 "$BIN" sweep ../exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 \
    --emit parallel --chunks 4 -o jobs.txt
if [ "$(wc -l <jobs.txt)" = 4 ] && grep -q -- "--chunk 3/4 -o part-3.csv" jobs.txt; then
    ok "the job list has one line per chunk"
else not_ok "the job list has one line per chunk" "$(cat jobs.txt)"; fi
if command -v parallel >/dev/null; then
    expect_rc "parallel runs the job list" 0 parallel --will-cite --halt now,fail=1 --jobs 2 -a jobs.txt
    expect_rc "merge of parallel's parts exits 0" 0 "$BIN" merge part-*.csv
    if cmp -s "$TMP/out" ../grid.csv; then ok "parallel + merge gives the single sweep's CSV"
    else not_ok "parallel + merge gives the single sweep's CSV" "$(diff "$TMP/out" ../grid.csv | head -5)"; fi
    rm -f part-*.csv
    # ':' is GNU parallel's name for this host as an --sshlogin; commands start elsewhere
    # (parallel runs them from the sshlogin's shell), which the absolute paths and cd must survive.
    (cd / && parallel --will-cite --halt now,fail=1 --sshlogin 2/: -a "$TMP/par/jobs.txt") >/dev/null 2>&1
    expect_rc "merge of parts made through --sshlogin : exits 0" 0 "$BIN" merge part-*.csv
    if cmp -s "$TMP/out" ../grid.csv; then ok "--sshlogin : from another directory gives the same CSV"
    else not_ok "--sshlogin : from another directory gives the same CSV"; fi
else
    not_ok "GNU parallel is installed (scripts/install-deps.sh installs it)"
fi
cd "$TMP" || exit 1

# ---- Slurm array script ----
mkdir slurm && cd slurm || exit 1
expect_rc "--emit slurm writes a script" 0 "$BIN" sweep ../exp.yaml --grid pp=2,4 --grid microbatches=4,8,16 \
    --emit slurm --chunks 3 -j 2 -o sweep.sbatch
if bash -n sweep.sbatch && [ -x sweep.sbatch ]; then ok "the Slurm script is valid bash and executable"
else not_ok "the Slurm script is valid bash and executable"; fi
if grep -q '^#SBATCH --array=1-3$' sweep.sbatch && grep -q '^#SBATCH --cpus-per-task=2$' sweep.sbatch &&
   grep -q 'SLURM_ARRAY_TASK_ID' sweep.sbatch; then
    ok "the script is a 3-task job array with 2 CPUs per task"
else not_ok "the script is a 3-task job array with 2 CPUs per task" "$(cat sweep.sbatch)"; fi
# Run each array task the way slurmd would: the script with its task id in the environment, from elsewhere.
for k in 1 2 3; do (cd / && SLURM_ARRAY_TASK_ID=$k bash "$TMP/slurm/sweep.sbatch") >/dev/null 2>&1; done
expect_rc "merge of the array tasks' parts exits 0" 0 "$BIN" merge part-1.csv part-2.csv part-3.csv
if cmp -s "$TMP/out" ../grid.csv; then ok "Slurm tasks + merge give the single sweep's CSV"
else not_ok "Slurm tasks + merge give the single sweep's CSV" "$(diff "$TMP/out" ../grid.csv | head -5)"; fi
# A real Slurm, only when asked (PIPEGRID_TEST_SLURM=1, e.g. through tests/sweep_slurm_local.sh, which
# starts a one-node cluster): never submit jobs to a cluster that happens to be reachable.
if [ "${PIPEGRID_TEST_SLURM:-0}" = 1 ]; then
    rm -f part-*.csv
    expect_rc "sbatch --test-only accepts the script" 0 sbatch --test-only sweep.sbatch
    expect_rc "sbatch --wait runs the job array" 0 timeout 240 sbatch --wait sweep.sbatch
    expect_rc "merge of the Slurm array's parts exits 0" 0 "$BIN" merge part-*.csv
    if cmp -s "$TMP/out" ../grid.csv; then ok "Slurm job array + merge give the single sweep's CSV"
    else not_ok "Slurm job array + merge give the single sweep's CSV" "$(cat pipegrid-sweep-*.log | head -5)"; fi
fi
cd "$TMP" || exit 1

# ---- progress bar on a terminal ----
if command -v script >/dev/null; then
    script -qec "'$BIN' sweep exp.yaml --grid pp=2,4 --format csv >tty.csv" tty.log >/dev/null 2>&1
    if grep -q 'sweep \[' tty.log && cmp -s tty.csv other.csv; then
        ok "on a terminal, a progress bar goes to stderr and the CSV stays clean"
    else not_ok "on a terminal, a progress bar goes to stderr and the CSV stays clean" "$(head -c 300 tty.log)"; fi
fi

test_summary
