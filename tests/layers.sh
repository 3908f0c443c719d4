#!/usr/bin/env bash
# layers.sh: the include graph of src/ against HACKING.md's layer table.
#
# Reads every `#include "..."` of src/ (those that name a file of src/; the
# autotools config.h is not one) and fails, naming the files, on
#   (a) an include of a layer the including file's row of the table does not
#       list under "may use" (a layer named there, `everything`, or one
#       header named in backquotes, like opt's `sim/actmem.h`), or a row that
#       lists a layer of a later row (the table is the order, lowest first);
#   (b) an import cycle between modules.  A module is a .c and its .h
#       (src/job/job.c and src/job/job.h are module job/job); module A
#       imports module B when A.c or A.h includes B.h.  Any cycle fails, of
#       two modules or more, and is printed with the includes that close it.
# Needs no binary: it reads the sources (the argument make check passes is
# ignored).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh" layers

# The table: "| layer | `src/layer` | may use | never |" rows of ## Layers.
awk '/^## Layers/ {on = 1; next} on && /^## / {exit} on && /^\| *[a-z]+ *\| *`src\/[a-z]+`/ {print}' \
    "$SRC/HACKING.md" >"$TMP/table"
if [ -s "$TMP/table" ]; then ok "HACKING.md has the layer table"; else not_ok "HACKING.md has the layer table"; fi

# Every include of a file of src: "FILE LINE HEADER", paths relative to src/.
(cd "$SRC/src" && find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) | sed 's|^\./||' | sort) \
    >"$TMP/files"
while read -r f; do
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$SRC/src/$f" |
        sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/\1 \2/' |
        while read -r line hdr; do
            [ -f "$SRC/src/$hdr" ] && echo "$f $line $hdr"
        done
done <"$TMP/files" >"$TMP/includes"
n=$(wc -l <"$TMP/includes")
if [ "$n" -gt 100 ]; then ok "read $n includes of src files"; else not_ok "read the includes of src" "only $n"; fi

# (a) layers.
awk -F'|' -v out="$TMP/layer_errors" '
    FNR == NR {
        name = $2; gsub(/ /, "", name)
        rank[name] = ++nrows; order[nrows] = name
        use = $4
        # A header named in backquotes is allowed alone; the rest names layers.
        while (match(use, /`[a-z_]+\/[a-z_]+\.h`/)) {
            h = substr(use, RSTART + 1, RLENGTH - 2)
            header_ok[name, h] = 1
            use = substr(use, 1, RSTART - 1) substr(use, RSTART + RLENGTH)
        }
        gsub(/[^a-z]+/, " ", use)
        words[name] = use
        next
    }
    FNR == 1 && !resolved {
        resolved = 1
        for (r = 1; r <= nrows; r++) {
            name = order[r]
            layer_ok[name, name] = 1
            k = split(words[name], w, " ")
            for (i = 1; i <= k; i++) {
                if (w[i] == "everything") {
                    for (s = 1; s < r; s++) layer_ok[name, order[s]] = 1
                } else if (w[i] in rank) {
                    if (rank[w[i]] >= r)
                        printf "HACKING.md: layer %s may use %s, a layer of a later row\n", name, w[i] >> out
                    layer_ok[name, w[i]] = 1
                }
            }
            for (key in header_ok) {
                split(key, kh, SUBSEP)
                if (kh[1] != name) continue
                split(kh[2], hp, "/")
                if (rank[hp[1]] >= r)
                    printf "HACKING.md: layer %s may use %s, a header of a later row\n", name, kh[2] >> out
            }
        }
    }
    {
        split($0, fld, " ")
        split(fld[1], a, "/"); split(fld[3], b, "/")
        from = a[1]; to = b[1]
        if (!(from in rank)) {
            if (!(fld[1] in norow)) printf "src/%s: layer %s has no row in HACKING.md\n", fld[1], from >> out
            norow[fld[1]] = 1; next
        }
        if (!(to in rank)) {
            if (!(fld[3] in norow)) printf "src/%s: layer %s has no row in HACKING.md\n", fld[3], to >> out
            norow[fld[3]] = 1; next
        }
        if (!((from, to) in layer_ok) && !((from, fld[3]) in header_ok))
            printf "src/%s:%s includes %s: layer %s may not use layer %s\n", fld[1], fld[2], fld[3], from, to >> out
    }
' "$TMP/table" FS=' ' "$TMP/includes"
if [ -s "$TMP/layer_errors" ]; then
    not_ok "every include is of a layer the table allows" "$(sed '2,$s/^/    /' "$TMP/layer_errors")"
else
    ok "every include is of a layer the table allows"
fi

# (b) cycles between modules: what each module reaches, then the groups of
# modules that reach each other, each printed with its includes.
awk -v out="$TMP/cycles" '
    function module(path) { sub(/\.(c|h|cpp)$/, "", path); return path }
    {
        a = module($1); b = module($3)
        if (a == b) next
        node[a] = 1; node[b] = 1
        if (!((a, b) in edge)) { edge[a, b] = 1; succ[a] = succ[a] " " b }
        how[a, b] = how[a, b] (how[a, b] == "" ? "" : ", ") "src/" $1 ":" $2 " includes " $3
    }
    END {
        for (s in node) {
            # breadth-first from s
            delete seen; head = 0; tail = 0
            queue[tail++] = s
            while (head < tail) {
                u = queue[head++]
                k = split(succ[u], nx, " ")
                for (i = 1; i <= k; i++)
                    if (!(nx[i] in seen)) { seen[nx[i]] = 1; reach[s, nx[i]] = 1; queue[tail++] = nx[i] }
            }
        }
        for (s in node) {
            if (s in done || !((s, s) in reach)) continue
            members = ""
            for (t in node)
                if (((s, t) in reach && (t, s) in reach)) { done[t] = 1; members = members " " t }
            n = split(members, m, " ")
            # sort the members for a stable message
            for (i = 2; i <= n; i++) { x = m[i]; for (j = i - 1; j >= 1 && m[j] > x; j--) m[j + 1] = m[j]; m[j + 1] = x }
            line = "cycle of " n " modules:"
            for (i = 1; i <= n; i++) line = line " " m[i]
            print line >> out
            for (i = 1; i <= n; i++) for (j = 1; j <= n; j++)
                if ((m[i], m[j]) in edge) print "    " how[m[i], m[j]] >> out
        }
    }
' "$TMP/includes"
if [ -s "$TMP/cycles" ]; then
    not_ok "no import cycle between modules of src" "$(sed '2,$s/^/    /' "$TMP/cycles")"
else
    ok "no import cycle between modules of src"
fi

test_summary
