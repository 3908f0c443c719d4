#!/bin/sh
# Install missing Debian packages, build, and run the test suite, each check
# where it proves something (HACKING.md, "Tests"):
#   check      `make check`: every unit test and every shell test, once
#              (command-line contract, sweep, optimize, install, README
#              examples, ...); slow cases on a named sample (tests/lib.sh).
#   asan       `make check-asan`: every unit test and fuzz replay, and the
#              shell tests of the parsers and the engine (ASAN_SHELL_TESTS),
#              under AddressSanitizer + UndefinedBehaviorSanitizer.
#   distcheck  `make distcheck-smoke`: the release tarball holds every
#              tracked file, builds from a read-only source tree, passes a
#              smoke subset (SMOKE_TESTS), installs and uninstalls cleanly.
# PIPEGRID_SLOW_TESTS=1 runs everything: every slow case, every test under
# the sanitizers and the whole suite again in `make distcheck`.
# Ends with the time of each part and one line "tests: N passed, M failed".
set -u
cd "$(dirname "$0")/.."
now() { date +%s; }
start=$(now)
scripts/install-deps.sh || exit 1
scripts/build.sh --no-run || exit 1
t_build=$(($(now) - start))

jobs=$(nproc)
status=0
start=$(now)
make -j"$jobs" --no-print-directory check || status=1
t_check=$(($(now) - start))

start=$(now)
make -j"$jobs" --no-print-directory check-asan || status=1
t_asan=$(($(now) - start))

# distcheck builds and tests the tarball in its own directory; its logs are
# not counted below (its tests ran above, in `make check`), only its success.
if [ "${PIPEGRID_SLOW_TESTS:-0}" = 1 ]; then distcheck=distcheck; else distcheck=distcheck-smoke; fi
start=$(now)
make -j"$jobs" --no-print-directory "$distcheck" >distcheck.log 2>&1 || { status=1; tail -n 40 distcheck.log; }
t_dist=$(($(now) - start))

echo "time: build $t_build s, check $t_check s, asan $t_asan s, distcheck $t_dist s"
# One closing line over what ran: check's per-binary summaries
# ("100%: Checks: 12, Failures: 0, Errors: 0") and the shell tests'
# ("contract: N passed, M failed"), each from the log automake's harness kept.
python3 scripts/count_tests.py tests build-asan/tests || status=1
exit $status
