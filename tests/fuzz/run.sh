#!/bin/sh
# Build the libFuzzer harnesses with clang (ASan + UBSan) and fuzz each for a while:
# fuzz_yaml (the YAML loader and the experiment layer), then fuzz_gpu (GPU type profiles).
#   tests/fuzz/run.sh [SECONDS] [BUILD_DIR]   (defaults: 60 each, /tmp/pg-fuzz)
# Needs clang and libyaml; not part of `make check` (fuzz_replay is).
# New interesting inputs land in BUILD_DIR/corpus; copy small ones worth
# keeping into tests/fuzz/corpus.
set -eu
secs=${1:-60}
out=${2:-/tmp/pg-fuzz}
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/corpus"
# datapath.c includes the build's config.h (for PG_SOURCE_DIR); give it one.
printf '#define PG_SOURCE_DIR "%s"\n' "$src" > "$out/config.h"
clang -g -O1 -std=c11 -D_GNU_SOURCE -I"$out" \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -I"$src/src" \
    "$src/tests/fuzz/fuzz_yaml.c" "$src"/src/util/error.c "$src"/src/util/units.c "$src"/src/util/yamltree.c \
    "$src"/src/util/strbuf.c "$src"/src/util/datapath.c "$src"/src/model/config.c "$src"/src/model/experiment.c \
    $(pkg-config --cflags --libs yaml-0.1) -lm -o "$out/fuzz_yaml"
cp "$src"/tests/fuzz/corpus/* "$out/corpus/"
"$out/fuzz_yaml" -max_total_time="$secs" -max_len=4096 -timeout=5 \
    -dict="$src/tests/fuzz/yaml.dict" "$out/corpus"
mkdir -p "$out/corpus_gpu"
clang -g -O1 -std=c11 -D_GNU_SOURCE -I"$out" \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -I"$src/src" \
    "$src/tests/fuzz/fuzz_gpu.c" "$src"/src/util/error.c "$src"/src/util/units.c "$src"/src/util/yamltree.c \
    "$src"/src/util/strbuf.c "$src"/src/util/datapath.c "$src"/src/model/gpu_params.c \
    $(pkg-config --cflags --libs yaml-0.1) -lm -o "$out/fuzz_gpu"
cp "$src"/tests/fuzz/corpus_gpu/* "$src"/profiles/gpus/*.yaml "$out/corpus_gpu/"
"$out/fuzz_gpu" -max_total_time="$secs" -max_len=8192 -timeout=5 \
    -dict="$src/tests/fuzz/yaml.dict" "$out/corpus_gpu"
