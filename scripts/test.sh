#!/bin/sh
# Install missing Debian packages, build, and run the whole test suite:
# unit tests (check), command-line contract, sweep and optimize tests, then the same unit tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Ends with one line "tests: N passed, M failed".
set -u
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
scripts/build.sh --no-run || exit 1

status=0
make -j"$(nproc)" --no-print-directory check || status=1
tests/contract.sh src/pipegrid || status=1
tests/sweep.sh src/pipegrid || status=1
tests/optimize.sh src/pipegrid || status=1
make --no-print-directory check-asan || status=1

# One closing line over everything that ran: check's per-binary summaries
# ("100%: Checks: 12, Failures: 0, Errors: 0") and the contract script's.
python3 scripts/count_tests.py tests build-asan/tests || status=1
exit $status
