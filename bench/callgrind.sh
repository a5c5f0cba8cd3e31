#!/usr/bin/env bash
# Folded → callgrind throughput (and callgrind → IR on the result).
#
#   bench/callgrind.sh [SIZE]      # SIZE for gen_folded.py, default 200M
#
# Generates the input with ../shared/bench/gen_folded.py (seed 42) into bench/out/ unless it is
# already there (or uses PROFCONV_BENCH_INPUT), builds in release mode, runs the `callgrind`
# bench of profconv-callgrind (median of 5 runs; PROFCONV_BENCH_RUNS changes that: the folded
# parse, the callgrind emit, and the SVG flame graph emit on the same parsed profile, the
# figure the callgrind emit aims to match), then the end-to-end CLI conversions to callgrind and
# to SVG under /usr/bin/time (CPU seconds and peak RSS), 3 runs each, alternating.
# The peer figure: inferno-flamegraph on the same 200 MB input, 2.09 s CPU (median of 3,
# shared/research/baselines.md).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
size="${1:-200M}"
gen="${PROFCONV_GEN_FOLDED:-../shared/bench/gen_folded.py}"
mkdir -p bench/out
input="${PROFCONV_BENCH_INPUT:-$PWD/bench/out/folded-seed42-$size.folded}"
if [ ! -s "$input" ]; then
    echo "generating $input with $gen ..."
    python3 "$gen" --seed 42 --size "$size" > "$input.tmp" && mv "$input.tmp" "$input" || gen_failed "$input"
fi
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet
PROFCONV_BENCH_INPUT="$input" cargo bench --quiet -p profconv-callgrind --bench callgrind
echo
echo "end to end: profconv convert $input -o bench/out/out.callgrind, then -o bench/out/out.svg (3 runs each)"
for _ in 1 2 3; do
    for out in bench/out/out.callgrind bench/out/out.svg; do
        /usr/bin/time -f "  ${out##*.}: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
            "$target/release/profconv" convert "$input" -o "$out"
    done
done
ls -l bench/out/out.callgrind bench/out/out.svg
