#!/usr/bin/env bash
# PVM trace → IR → folded: throughput and memory, in both parse modes.
#
#   bench/pvm.sh [EVENTS]        # EVENTS for gen_pvm_trace.py, default 10000000 (~190 MB)
#
# Generates the input with ../shared/tools/gen_pvm_trace.py (seed 1) into bench/out/ unless it
# is already there, then runs the `pvm` bench of the profconv-pvm crate (median of 5 runs;
# PROFCONV_BENCH_RUNS changes that), and the end-to-end CLI conversion to folded stacks under
# /usr/bin/time (wall, user and system CPU seconds, peak RSS), in the default (time-ordered)
# mode and with -O aggregate; the folded output goes to /dev/null (for the default trace it is
# about 2.9 GB: 4.7 million distinct stacks of long mangled names). Finally it shows that
# aggregated memory does not grow with the number of events once the distinct stacks are all
# seen: a trace with 10 functions, depth 3, no host or indirect calls (1114 distinct stacks),
# at EVENTS/10 and EVENTS events.
#
# The bench alone, for profiling (see adapters/pvm/benches/pvm.rs):
#   PROFCONV_BENCH_INPUT=FILE PROFCONV_BENCH_MODE=ordered|aggregate PROFCONV_BENCH_EMIT=0 \
#   PROFCONV_BENCH_RUNS=1 perf record -g target/release/deps/pvm-<hash>
# (PROFCONV_BENCH_WHOLE=1 parses from memory, where the reader knows the input's size.)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
events="${1:-10000000}"
gen="${PROFCONV_GEN_PVM:-../shared/tools/gen_pvm_trace.py}"
mkdir -p bench/out
input="$PWD/bench/out/pvm-seed1-$events.pvmtrace"
if [ ! -s "$input" ]; then
    echo "generating $input with $gen ..."
    python3 "$gen" --events "$events" --seed 1 > "$input.tmp" && mv "$input.tmp" "$input" || gen_failed "$input"
fi
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/profconv"
PROFCONV_BENCH_INPUT="$input" cargo bench --quiet -p profconv-pvm --bench pvm
echo
for mode in "" "-O aggregate"; do
    echo "end to end: profconv convert $input --to folded -o - $mode > /dev/null (3 runs: wall s, user s, sys s, peak RSS KB)"
    for _ in 1 2 3; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "  %e %U %S %M" "$bin" convert "$input" --to folded -o - $mode > /dev/null
    done
done
echo
echo "memory against the number of events (10 functions, depth 3: 1114 distinct stacks)"
for n in $((events / 10)) "$events"; do
    small="bench/out/pvm-narrow-$n.pvmtrace"
    if [ ! -s "$small" ]; then
        python3 "$gen" --events "$n" --seed 1 --functions 10 --max-depth 3 --host 0 --indirect 0 \
            > "$small.tmp" && mv "$small.tmp" "$small" || gen_failed "$small"
    fi
    for mode in "" "-O aggregate"; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "  $n events ${mode:-(ordered)}: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
            "$bin" convert "$small" --to folded -o - $mode > /dev/null
    done
done
