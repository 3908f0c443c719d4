#!/bin/sh
# Install missing Debian packages, build, and run the whole test suite:
# `make check` (every layer's unit tests and the shell tests: command-line
# contract, sweep, optimize, install, README examples), the same again under
# AddressSanitizer + UndefinedBehaviorSanitizer (`make check-asan`), and
# `make distcheck` (the release tarball builds, passes its tests, installs
# and uninstalls cleanly from a read-only source tree).
# Ends with one line "tests: N passed, M failed".
set -u
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
scripts/build.sh --no-run || exit 1

status=0
make -j"$(nproc)" --no-print-directory check || status=1
make --no-print-directory check-asan || status=1
# distcheck builds and tests the tarball in its own directory; its logs are
# not counted below (they repeat `make check`), only its success.
make -j"$(nproc)" --no-print-directory distcheck >distcheck.log 2>&1 || { status=1; tail -n 40 distcheck.log; }

# One closing line over what ran: check's per-binary summaries
# ("100%: Checks: 12, Failures: 0, Errors: 0") and the shell tests'
# ("contract: N passed, M failed"), each from the log automake's harness kept.
python3 scripts/count_tests.py tests build-asan/tests || status=1
exit $status
