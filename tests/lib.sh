# lib.sh: the harness of the shell tests (contract.sh, sweep.sh, ...).
#   . "$(dirname "$0")/lib.sh" NAME     -- sets TMP (removed at exit)
# Each check prints "ok - ..." or "not ok - ..." on stdout; test_summary prints
# "NAME: N passed, M failed" and returns non-zero if anything failed.  Under
# `make check` the automake harness keeps stdout as tests/NAME.log, which
# scripts/count_tests.py reads; the script writes no log of its own, so
# nothing is counted twice.
set -u
TEST_NAME=$1
TEST_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
# The interpreter behind `python3`, resolved once: a version manager's shim
# (pyenv's is a shell script) costs about half a second of CPU per start, and
# the shell tests start Python a few hundred times.  Exported, so scripts the
# tests run (readme.sh's, tools/*.py through `python3 FILE`) use it too.
PYTHON3=$(command python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PYTHON3=python3
python3() { "$PYTHON3" "$@"; }
export PYTHON3
export -f python3
# Seconds one command under test may take before it counts as hung.
COMMAND_TIMEOUT_S=${COMMAND_TIMEOUT_S:-300}

say() { echo "$*"; }
ok() { passed=$((passed + 1)); say "ok - $1"; }
not_ok() { failed=$((failed + 1)); say "not ok - $1"; [ -n "${2:-}" ] && say "    $2"; }

# expect_rc NAME RC COMMAND...: run COMMAND (stdout -> $TMP/out, stderr -> $TMP/err), check its exit code.
expect_rc() {
    local name=$1 want=$2
    shift 2
    timeout "$COMMAND_TIMEOUT_S" "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" = "$want" ]; then ok "$name"; else not_ok "$name" "exit $rc, want $want: $(head -c 600 "$TMP/err")"; fi
}
# expect_err NAME PATTERN: the last command's stderr matches PATTERN (grep -E).
expect_err() {
    if grep -Eq -- "$2" "$TMP/err"; then ok "$1"; else not_ok "$1" "stderr: $(head -c 600 "$TMP/err")"; fi
}

# slow NAME: whether to run the slow end-to-end case NAME (many seconds, and what it checks is also
# checked on a smaller input in the same script).  Such a case runs only with PIPEGRID_SLOW_TESTS=1
# (HACKING.md, "Tests"); otherwise it prints "skip - NAME" and is not counted.
slow() {
    if [ "${PIPEGRID_SLOW_TESTS:-0}" = 1 ]; then return 0; fi
    say "skip - $1 (slow: PIPEGRID_SLOW_TESTS=1 runs it)"
    return 1
}

test_summary() {
    say "$TEST_NAME: $passed passed, $failed failed"
    [ "$failed" = 0 ]
}
