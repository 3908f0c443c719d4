#!/usr/bin/env bash
# registry.sh: a schedule is one generator file plus one registry row
# (src/schedule/generators.h, SCHED_REGISTRY).  Everything that lists or
# treats schedules is derived from that row, so this checks, for every row:
# it appears in `schedule list`, `schedule --help`, `keys` and the
# unknown-schedule message, and it runs; and, for the sources: every
# gen_<fn>.c has its row and its local.am entry, and no file outside the
# schedule layer names a schedule to decide what to do (the registry flags
# say it), except the keys that belong to one schedule (zb_auto.*,
# dualpipe.*) in the experiment schema.
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh" registry
cd "$TMP" || exit 1

expect_rc "schedule list exits 0" 0 "$BIN" schedule list
names=$(awk '$1 != "file:PATH" {print $1}' "$TMP/out")
cp "$TMP/out" list.txt
if [ "$(echo "$names" | wc -w)" -ge 10 ]; then ok "schedule list has the registry's rows"; else not_ok "schedule list has the registry's rows" "$names"; fi
"$BIN" schedule --help >help.txt 2>&1
"$BIN" keys | grep '^schedule ' >keys.txt
"$BIN" run --set schedule=no-such-schedule --set workload=uniform --set network=ideal >/dev/null 2>unknown.txt
for n in $names; do
    grep -q -- "[ ,:]$n[,]" help.txt && ok "$n: in schedule --help" || not_ok "$n: in schedule --help" "$(cat help.txt | tail -1)"
    grep -Eq -- "[ ,:]$n(,|\$)" keys.txt && ok "$n: in keys' schedule help" || not_ok "$n: in keys' schedule help" "$(cat keys.txt)"
    grep -Eq -- "[ (]$n," unknown.txt && ok "$n: in the unknown-schedule message" || not_ok "$n: in the unknown-schedule message" "$(cat unknown.txt)"
    m=8
    expect_rc "$n: runs (pp 4, m $m)" 0 "$BIN" run --set schedule="$n" --set workload=uniform --set network=ideal \
        --set pp=4 --set microbatches=$m --set chunks=2 --format json
done

# ---- sources: one gen file, one row, one local.am entry ----
rows=$(sed -n '/#define SCHED_REGISTRY(X)/,/^$/p' "$SRC/src/schedule/generators.h" | grep -o 'X("[^"]*", [a-z0-9]*' )
nrows=$(echo "$rows" | grep -c .)
nlist=$(echo "$names" | wc -w)
[ "$nrows" = "$nlist" ] && ok "one row per listed schedule ($nrows)" || not_ok "one row per listed schedule" "rows $nrows, listed $nlist"
for f in "$SRC"/src/schedule/gen_*.c; do
    fn=$(basename "$f" .c)
    fn=${fn#gen_}
    echo "$rows" | grep -q ", $fn\$" && ok "gen_$fn.c has a registry row" || not_ok "gen_$fn.c has a registry row"
    grep -q "src/schedule/gen_$fn.c" "$SRC/src/schedule/local.am" && ok "gen_$fn.c is in local.am" || not_ok "gen_$fn.c is in local.am"
done
# No caller decides by a schedule's name: outside src/schedule, a name is
# compared only by the schema for the keys of that one schedule.  (Asking for
# one generator by name, as the offload order search asks zb-auto, is a use,
# not a special case.)
for n in $names; do
    hits=$(grep -rn --include='*.c' --include='*.h' -- "strn\?cmp([^;]*\"$n\"" "$SRC/src" | grep -v "^$SRC/src/schedule/" |
        grep -v "^$SRC/src/model/experiment.c:.*sched_is_" || true)
    [ -z "$hits" ] && ok "$n: no special case by name outside the registry" || not_ok "$n: no special case by name outside the registry" "$hits"
done

test_summary
