#!/usr/bin/env bash
# Folded → IR throughput through the plugin, and the share of time at the plugin boundary.
#
#   bench/folded.sh [SIZE]        # SIZE for gen_folded.py, default 200M
#
# Generates the input with ../shared/bench/gen_folded.py (seed 42) into bench/out/ unless it is
# already there, builds in release mode, then runs the `folded_boundary` bench (median of 5
# runs; PROFCONV_BENCH_RUNS changes that), the `frame_names` bench (the reader's frame loop
# alone, stage by stage) and the end-to-end CLI conversion under /usr/bin/time (CPU seconds and
# peak RSS).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
size="${1:-200M}"
gen="${PROFCONV_GEN_FOLDED:-../shared/bench/gen_folded.py}"
mkdir -p bench/out
input="$PWD/bench/out/folded-seed42-$size.folded"
if [ ! -s "$input" ]; then
    echo "generating $input with $gen ..."
    python3 "$gen" --seed 42 --size "$size" > "$input.tmp" && mv "$input.tmp" "$input" || gen_failed "$input"
fi
cargo build --release --quiet
PROFCONV_BENCH_INPUT="$input" cargo bench --quiet -p profconv-cli --bench folded_boundary
echo
PROFCONV_BENCH_INPUT="$input" cargo bench --quiet -p profconv-folded --bench frame_names
echo
echo "end to end: profconv convert $input -o bench/out/out.folded (3 runs)"
for _ in 1 2 3; do
    /usr/bin/time -f "  %e s wall, %U s user, %S s sys, peak RSS %M KB" \
        ./target/release/profconv convert "$input" -o bench/out/out.folded
done
