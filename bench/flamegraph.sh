#!/usr/bin/env bash
# Folded stacks → SVG flame graph: profconv against inferno-flamegraph on the same input.
#
#   bench/flamegraph.sh [SIZE]      # SIZE for gen_folded.py: 200M (default) or 1G
#
# 1. Generates the input with ../shared/bench/gen_folded.py (seed 42; PROFCONV_GEN_FOLDED
#    overrides the path) into bench/out/ unless it is already there.
# 2. Installs inferno 0.12.8 into bench/out/inferno with `cargo install` unless it is there.
# 3. Builds profconv and the two plugins it needs in release mode.
# 4. Runs `profconv convert IN -o OUT.svg` and `inferno-flamegraph IN > OUT.svg` three times
#    each, alternating, under /usr/bin/time, and prints the median CPU time (user + sys),
#    wall time and peak RSS side by side. CPU time is the figure to compare on a shared
#    machine: wall time depends on what else runs.
# 5. Runs the crate's bench (profconv-flamegraph, `benches/flamegraph.rs`), which splits
#    profconv's time into the folded parse and the flamegraph emit.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
size="${1:-200M}"
runs="${PROFCONV_BENCH_RUNS:-3}"
gen="${PROFCONV_GEN_FOLDED:-../shared/bench/gen_folded.py}"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p bench/out
input="$PWD/bench/out/folded-seed42-$size.folded"
if [ ! -s "$input" ]; then
    echo "generating $input with $gen ..."
    python3 "$gen" --seed 42 --size "$size" > "$input.tmp" && mv "$input.tmp" "$input" || gen_failed "$input"
fi
inferno=bench/out/inferno/bin/inferno-flamegraph
if [ ! -x "$inferno" ]; then
    echo "installing inferno into bench/out/inferno ..."
    cargo install inferno --version 0.12.8 --root bench/out/inferno --quiet
fi
cargo build --release --quiet -p profconv-cli -p profconv-plugin-folded -p profconv-plugin-flamegraph
profconv="$target/release/profconv"

# One measured run: prints "cpu wall peak_kb" (cpu = user + sys).
measure() {
    local t
    t=$(mktemp)
    /usr/bin/time -f '%e %U %S %M' -o "$t" "$@" > /dev/null
    awk '{ printf "%.2f %.2f %d\n", $2 + $3, $1, $4 }' "$t"
    rm -f "$t"
}

# The median of the numbers on stdin.
median() {
    sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

cat "$input" > /dev/null # into the page cache
: > bench/out/flamegraph-runs.txt
for _ in $(seq "$runs"); do
    echo "profconv $(measure "$profconv" convert -q "$input" -o bench/out/profconv.svg)" \
        >> bench/out/flamegraph-runs.txt
    echo "inferno $(measure sh -c "\"$inferno\" \"$input\" > bench/out/inferno.svg")" \
        >> bench/out/flamegraph-runs.txt
done

echo
echo "$input ($(stat -L -c %s "$input") bytes), median of $runs runs"
printf '%-10s %10s %10s %12s %10s\n' tool "CPU s" "wall s" "peak RSS MB" "SVG bytes"
for tool in profconv inferno; do
    cpu=$(awk -v t="$tool" '$1 == t { print $2 }' bench/out/flamegraph-runs.txt | median)
    wall=$(awk -v t="$tool" '$1 == t { print $3 }' bench/out/flamegraph-runs.txt | median)
    peak=$(awk -v t="$tool" '$1 == t { print $4 }' bench/out/flamegraph-runs.txt | median)
    printf '%-10s %10s %10s %12.1f %10s\n' "$tool" "$cpu" "$wall" "$(echo "$peak / 1024" | bc -l)" \
        "$(stat -c %s "bench/out/$tool.svg")"
    eval "${tool}_cpu=$cpu ${tool}_peak=$peak"
done
# shellcheck disable=SC2154 # set by the eval above
printf 'profconv / inferno: CPU %.2f, peak RSS %.2f\n' \
    "$(echo "$profconv_cpu / $inferno_cpu" | bc -l)" "$(echo "$profconv_peak / $inferno_peak" | bc -l)"
printf 'frames drawn: profconv %s, inferno %s\n' \
    "$(grep -o 'fg:w="' bench/out/profconv.svg | wc -l)" "$(grep -o 'fg:w="' bench/out/inferno.svg | wc -l)"

echo
PROFCONV_BENCH_RUNS="$runs" PROFCONV_BENCH_INPUT="$input" \
    cargo bench --quiet -p profconv-flamegraph --bench flamegraph
