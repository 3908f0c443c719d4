#!/usr/bin/env python3
"""readme.py: the examples of the README and the docs pages, rerun and compared (tests/readme.sh runs it).

An example is a fenced block (```) whose first line is "$ src/pipegrid ..." (continued on the next lines
while a line ends in a backslash); the rest of the block is the output that command prints.  Each example
is run from the source tree with the binary under test and its output compared line by line, where
  * a line that is only "..." (any indentation) stands for any number of lines (the example is shortened);
  * a line ending in "..." stands for any line that starts with the text before it (a truncated line);
  * lines that legitimately vary between runs (VARYING below: host time) match any line of their shape.
Nothing else is ignored.  Examples run with PIPEGRID_DETERMINISTIC=1 (src/opt/workclock.h): the planners'
time limits are work limits, so their output is the same on every machine.

Every command runs from the source tree's root (the parent of tests/), whichever page shows it, so a
docs/ page's examples name files as the README's do (profiles/..., experiments/...).

  readme.py BIN PAGE...            compare; prints "ok - ..." / "not ok - ..." per example and a summary
  readme.py BIN PAGE... --update   rewrite every example's output in place from a fresh run, keeping its
                                  shortening: the lines kept before and after a "..." line, and a truncated
                                  line's length (in comma-separated fields for CSV, else characters)
"""
import re
import subprocess
import sys

PROMPT = "$ "
ELLIPSIS = "..."
# Lines whose content depends on the host, not on the simulation.
VARYING = [
    re.compile(r"^simulated\s+\d+ events in \S+ \S+ of host time$"),
]
COMMAND_TIMEOUT_S = 600


# An example marked slow (the line before its fence is SLOW_MARK...) runs only with
# PIPEGRID_SLOW_TESTS=1 (HACKING.md, "Tests"): a search of minutes is checked, but
# not in every `make check`.
SLOW_MARK = "<!-- slow example"


def blocks(lines):
    """Yield (start, end, slow) of each example: start = the "$ src/pipegrid" line, end = the fence."""
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if i + 1 < j and lines[i + 1].startswith(PROMPT + "src/pipegrid"):
                yield i + 1, j, i > 0 and lines[i - 1].startswith(SLOW_MARK)
            i = j + 1
        else:
            i += 1


def split_example(lines, start, end):
    cmd = [lines[start][len(PROMPT):]]
    k = start
    while cmd[-1].endswith("\\") and k + 1 < end:
        k += 1
        cmd.append(lines[k])
    return cmd, k + 1


def run(binary, cmd_lines, cwd):
    cmd = "\n".join(cmd_lines)
    assert cmd.startswith("src/pipegrid")
    cmd = '"$PG_README_BIN"' + cmd[len("src/pipegrid"):]
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env={**__import__("os").environ, "PG_README_BIN": binary, "PIPEGRID_DETERMINISTIC": "1"},
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=COMMAND_TIMEOUT_S)
    return p.returncode, p.stdout.splitlines(), p.stderr


def line_pattern(expected):
    for v in VARYING:
        if v.match(expected):
            return v.pattern[1:-1]
    if expected.endswith(ELLIPSIS) and expected.strip() != ELLIPSIS:
        return re.escape(expected[: -len(ELLIPSIS)]) + ".*"
    return re.escape(expected)


def matches(expected, actual):
    parts = []
    for e in expected:
        if e.strip() == ELLIPSIS:
            parts.append("(?:[^\n]*\n)*?")
        else:
            parts.append(line_pattern(e) + "\n")
    return re.fullmatch("".join(parts), "".join(a + "\n" for a in actual)) is not None


def shorten(old, new):
    """new output shortened the way old was."""
    if not any(o.strip() == ELLIPSIS for o in old):
        head, tail, mark = len(old), 0, None
    else:
        at = next(i for i, o in enumerate(old) if o.strip() == ELLIPSIS)
        head, tail, mark = at, len(old) - at - 1, old[at]
    out = new[:head] if mark is None and len(new) <= head else new[:head]
    if mark is None:
        out = new
    else:
        out = new[:head] + [mark] + (new[-tail:] if tail else [])
    # truncated lines keep their truncation
    for i, o in enumerate(old):
        if i < len(out) and o.endswith(ELLIPSIS) and o.strip() != ELLIPSIS and out[i] != mark:
            body = o[: -len(ELLIPSIS)]
            if body.endswith(","):
                fields = body.count(",")
                out[i] = ",".join(out[i].split(",")[:fields]) + "," + ELLIPSIS
            else:
                out[i] = out[i][: len(body)] + ELLIPSIS
    return out


def check_page(binary, page, srcdir, update):
    """Run (or with update, rewrite) every example of one page; returns (passed, failed)."""
    import os
    label = os.path.relpath(os.path.abspath(page), srcdir)
    lines = open(page).read().split("\n")
    passed = failed = 0
    edits = []
    for start, end, slow in blocks(lines):
        cmd, out_start = split_example(lines, start, end)
        expected = lines[out_start:end]
        name = cmd[0][:90]
        if slow and os.environ.get("PIPEGRID_SLOW_TESTS", "0") != "1":
            print(f"skip - {label} example: {name} (slow: PIPEGRID_SLOW_TESTS=1 runs it)")
            continue
        try:
            rc, actual, err = run(binary, cmd, srcdir)
        except subprocess.TimeoutExpired:
            failed += 1
            print(f"not ok - {label} example: {name}\n    timed out")
            continue
        if rc != 0:
            failed += 1
            print(f"not ok - {label} example: {name}\n    exit {rc}: {err[:400]}")
            continue
        if update:
            edits.append((out_start, end, shorten(expected, actual)))
            passed += 1
            print(f"ok - {label} example updated: {name}")
        elif matches(expected, actual):
            passed += 1
            print(f"ok - {label} example: {name}")
        else:
            failed += 1
            print(f"not ok - {label} example: {name}")
            import difflib
            for d in list(difflib.unified_diff(expected, actual, label, "now", lineterm="", n=1))[:40]:
                print("    " + d)
    if update and edits:
        for s, e, new in reversed(edits):
            lines[s:e] = new
        with open(page, "w") as fh:
            fh.write("\n".join(lines))
    return passed, failed


def main():
    import os
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv[1:]
    binary, pages = args[0], args[1:]
    srcdir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    passed = failed = 0
    for page in pages:
        p, f = check_page(binary, page, srcdir, update)
        passed += p
        failed += f
    if passed + failed == 0:
        failed = 1
        print("not ok - the pages have examples ($ src/pipegrid ... blocks)")
    print(f"readme: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
