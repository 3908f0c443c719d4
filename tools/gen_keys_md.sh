#!/usr/bin/env bash
# gen_keys_md.sh: docs/keys.md, the experiment key reference, from `pipegrid keys`.
#   tools/gen_keys_md.sh [BIN] > docs/keys.md
# `pipegrid keys` prints the parser's own schema table (src/model/experiment.c) in
# fixed-width columns KEY, TYPE, DEFAULT, MEANING; each column starts where its
# header word starts (the binary pads every field to the widest), so the fields
# are cut at those byte offsets (LC_ALL=C: offsets in bytes, as printf padded
# them), trimmed, and written as a Markdown table ('|' in a field escaped).
# tests/docs.sh checks that docs/keys.md is this script's output for the build.
set -eu
BIN=${1:-src/pipegrid}
export LC_ALL=C
cat <<'HEAD'
# Experiment keys

Every key an experiment file or `--set KEY=VALUE` accepts, with its type, default and meaning. This page is
generated from `src/pipegrid keys` (the table the parser itself uses) by `tools/gen_keys_md.sh`; do not edit
it by hand: after changing a key, run `tools/gen_keys_md.sh src/pipegrid > docs/keys.md` (`tests/docs.sh`
fails while the two differ).

Nested YAML mappings are dotted keys (`uniform: {f: 1ms}` is `uniform.f: 1ms`). Quantities take SimGrid's
units: `80GiB`, `34MiB`, `150GBps`, `100Gbps`, `2us`, `1.5ms`; a bare number is bytes, bytes per second or
seconds. A key that the other settings make meaningless (say `cluster.*` without `network=cluster`) is warned
about on stderr and ignored, so one file may carry keys for several settings.

HEAD
"$BIN" keys | awk '
function field(s, from, to) {
    s = (to > 0) ? substr(s, from, to - from) : substr(s, from)
    gsub(/^ +| +$/, "", s)
    gsub(/\|/, "\\|", s)
    return s
}
NR == 1 {
    t = index($0, "TYPE"); d = index($0, "DEFAULT"); m = index($0, "MEANING")
    if (t == 0 || d == 0 || m == 0) { print "gen_keys_md.sh: unexpected header: " $0 > "/dev/stderr"; exit 1 }
    print "| key | type | default | meaning |"
    print "|---|---|---|---|"
    next
}
{
    k = field($0, 1, t)
    printf "| `%s` | %s | %s | %s |\n", k, field($0, t, d), field($0, d, m), field($0, m, 0)
}'
