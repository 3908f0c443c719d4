"""report_close.py: two JSON reports equal field by field, numbers to a
relative tolerance (tests/replicas.sh, tests/replay.sh: a simulator shortcut
against its reference).  differences(a, b) lists (path, ...) of every key
set, list length, number or other value that differs."""

REL_TOL = 1e-9


def differences(a, b, rel=REL_TOL):
    bad = []

    def walk(x, y, path):
        if isinstance(x, dict):
            if set(x) != set(y):
                bad.append((path, sorted(set(x) ^ set(y))))
                return
            for k in x:
                walk(x[k], y[k], path + "." + k)
        elif isinstance(x, list):
            if len(x) != len(y):
                bad.append((path, len(x), len(y)))
                return
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, "%s[%d]" % (path, i))
        elif isinstance(x, float) or isinstance(y, float):
            if abs(x - y) > rel * max(abs(x), abs(y)):
                bad.append((path, x, y))
        elif x != y:
            bad.append((path, x, y))

    walk(a, b, "")
    return bad
