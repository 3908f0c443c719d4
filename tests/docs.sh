#!/usr/bin/env bash
# docs.sh: the user documentation stays true to the build.
#   * docs/keys.md is exactly what tools/gen_keys_md.sh makes from this binary's
#     `keys` (the parser's schema): a key added, renamed or re-documented without
#     regenerating the page fails here, with the diff;
#   * every relative link of README.md and docs/*.md names a file of the tree
#     (pages moved or renamed leave no dead link);
#   * README.md stays a guide, under README_MAX_LINES lines (issue 37: the
#     reference lives in docs/).
# (The examples of README.md and docs/*.md are rerun by tests/readme.sh.)
#   tests/docs.sh [BIN]
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh" docs
README_MAX_LINES=400

if bash "$SRC/tools/gen_keys_md.sh" "$BIN" >"$TMP/keys.md" 2>"$TMP/err"; then
    ok "tools/gen_keys_md.sh runs"
else
    not_ok "tools/gen_keys_md.sh runs" "$(head -c 600 "$TMP/err")"
fi
nkeys=$("$BIN" keys | tail -n +2 | wc -l)
nrows=$(grep -c '^| `' "$TMP/keys.md")
if [ "$nkeys" -gt 0 ] && [ "$nkeys" = "$nrows" ]; then
    ok "docs/keys.md: one row per key of 'pipegrid keys' ($nkeys)"
else
    not_ok "docs/keys.md: one row per key of 'pipegrid keys'" "$nkeys keys, $nrows rows"
fi
if diff -u "$SRC/docs/keys.md" "$TMP/keys.md" >"$TMP/diff"; then
    ok "docs/keys.md is in sync with 'pipegrid keys'"
else
    not_ok "docs/keys.md is in sync with 'pipegrid keys' (run tools/gen_keys_md.sh src/pipegrid > docs/keys.md)" \
        "$(head -c 1500 "$TMP/diff")"
fi

# Relative Markdown links: ](path) or ](path#anchor), not URLs or in-page anchors.
for page in "$SRC/README.md" "$SRC"/docs/*.md; do
    dir=$(dirname "$page")
    name=${page#"$SRC"/}
    dead=""
    for target in $(grep -o '][(][^)]*[)]' "$page" | sed 's/^](\([^)#]*\).*/\1/' | grep -Ev '^[a-z]+:' | sort -u); do
        [ -z "$target" ] && continue
        [ -e "$dir/$target" ] || dead="$dead $target"
    done
    if [ -z "$dead" ]; then ok "$name: every relative link names a file"; else not_ok "$name: dead links" "$dead"; fi
done

lines=$(wc -l <"$SRC/README.md")
if [ "$lines" -lt "$README_MAX_LINES" ]; then
    ok "README.md is $lines lines (under $README_MAX_LINES)"
else
    not_ok "README.md is $lines lines (under $README_MAX_LINES)"
fi

test_summary
