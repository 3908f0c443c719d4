#!/usr/bin/env python3
"""Sum test results over check logs (*.log with "Checks: N, Failures: F, Errors: E")
and shell-test logs ("contract: N passed, M failed", "sweep: ..."); print "tests: P passed, F failed".
Each argument is a log file or a directory whose *.log files are read (not recursively): under make check
automake's harness keeps one log per test, so every result is counted once."""
import glob, os, re, sys

passed = failed = 0
for arg in sys.argv[1:]:
    files = [arg] if os.path.isfile(arg) else sorted(glob.glob(os.path.join(arg, "*.log")))
    for path in files:
        # A test listed in XFAIL_TESTS (a known gap) that failed is what automake's harness expects;
        # its own failed checks are not the suite's failures.
        trs = path[:-len(".log")] + ".trs"
        if os.path.isfile(trs) and ":test-result: XFAIL" in open(trs, errors="replace").read():
            continue
        with open(path, errors="replace") as fh:
            text = fh.read()
        for n, f, e in re.findall(r"Checks: (\d+), Failures: (\d+), Errors: (\d+)", text):
            passed += int(n) - int(f) - int(e)
            failed += int(f) + int(e)
        for p, f in re.findall(r"^(?!tests:)[a-z][a-z0-9_-]*: (\d+) passed, (\d+) failed$", text, re.M):
            passed += int(p)
            failed += int(f)
print(f"tests: {passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
