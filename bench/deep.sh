#!/usr/bin/env bash
# Mercury Deep.data → IR throughput on one core, and the end-to-end conversion.
#
#   bench/deep.sh [SIZE]        # SIZE for the gen_deep example (K, M, G suffixes), default 100M
#
# Generates a random valid Deep.data file (seed 42, version 9, dynamic coverage, ~2.8 million
# proc-dynamics per 100 MB) with `cargo run --example gen_deep -p profconv-deep` into bench/out/
# unless it is already there, then runs the `deep_parse` bench of the profconv-deep crate (median
# of 5 runs; PROFCONV_BENCH_RUNS changes that): records only, + the call tree walk, + the IR
# (Format::parse as the host runs it), + the IR's call tree. Finally the end-to-end CLI
# conversion to folded stacks under /usr/bin/time (wall, user and system CPU seconds, peak RSS).
set -euo pipefail
cd "$(dirname "$0")/.."
size="${1:-100M}"
mkdir -p bench/out
input="$PWD/bench/out/deep-seed42-$size.data"
if [ ! -s "$input" ]; then
    echo "generating $input ..."
    cargo run --release --quiet -p profconv-deep --example gen_deep -- \
        --size "$size" --seed 42 -o "$input.tmp"
    mv "$input.tmp" "$input"
fi
cargo build --release --quiet -p profconv-cli -p profconv-plugin-deep -p profconv-plugin-folded
bin="${CARGO_TARGET_DIR:-target}/release/profconv"
PROFCONV_BENCH_INPUT="$input" cargo bench --quiet -p profconv-deep --bench deep_parse
echo
echo "end to end: profconv convert $input --to folded -o - > /dev/null (3 runs)"
for _ in 1 2 3; do
    /usr/bin/time -f "  %e s wall, %U s user, %S s sys, peak RSS %M KB" \
        "$bin" convert "$input" --to folded -o - > /dev/null
done
