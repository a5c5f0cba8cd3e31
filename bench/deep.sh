#!/usr/bin/env bash
# Mercury Deep.data → IR throughput on one core, and the end-to-end conversion.
#
#   bench/deep.sh [SIZE]        # SIZE for the gen_deep example (K, M, G suffixes), default 100M
#
# Two shapes of random valid Deep.data files (seed 42, version 9, dynamic coverage), generated
# with `cargo run --example gen_deep -p profconv-deep` into bench/out/ unless already there.
# Their records have the sizes of the real mandelbrot profile's (proc-statics of ~95 bytes,
# call-site-statics of ~20, ~3 slots per proc-dynamic); what differs is the mix, which depends
# on the program and on how long it ran:
#
# * static: 600,000 procedures (`--procs 600000`), 94 % of the bytes in static records, like
#   the real mandelbrot profile (99.6 %: a short run of a small program linked with the whole
#   standard library), scaled up;
# * dynamic: 30,000 procedures, 92 % of the bytes in proc-dynamic and call-site-dynamic records
#   (~2.8 million calling contexts per 100 MB: a long run of a big program).
#
# Then the `deep_parse` bench of the profconv-deep crate on each, and on the real mandelbrot
# profile (median CPU time of 5 runs; PROFCONV_BENCH_RUNS changes that): records only, + the
# call tree walk, + the IR (Format::parse as the host runs it), + the IR's call tree. Finally the
# end-to-end CLI conversion of the dynamic file to folded stacks under /usr/bin/time (wall, user
# and system CPU seconds, peak RSS).
set -euo pipefail
cd "$(dirname "$0")/.."
size="${1:-100M}"
mkdir -p bench/out
gen() { # gen NAME ARGS...: bench/out/deep-seed42-NAME-SIZE.data
    local out="$PWD/bench/out/deep-seed42-$1-$size.data"
    shift
    if [ ! -s "$out" ]; then
        echo "generating $out ..." >&2
        cargo run --release --quiet -p profconv-deep --example gen_deep -- \
            --size "$size" --seed 42 "$@" -o "$out.tmp"
        mv "$out.tmp" "$out"
    fi
    echo "$out"
}
dynamic="$(gen dynamic)"
static="$(gen static --procs 600000)"
cargo build --release --quiet -p profconv-cli -p profconv-plugin-deep -p profconv-plugin-folded
bin="${CARGO_TARGET_DIR:-target}/release/profconv"
for input in "$static" "$dynamic" "$PWD/snapshots/fixtures/deep/real/mandelbrot.Deep.data"; do
    PROFCONV_BENCH_INPUT="$input" cargo bench --quiet -p profconv-deep --bench deep_parse
    echo
done
echo "end to end: profconv convert $dynamic --to folded -o - > /dev/null (3 runs)"
for _ in 1 2 3; do
    /usr/bin/time -f "  %e s wall, %U s user, %S s sys, peak RSS %M KB" \
        "$bin" convert "$dynamic" --to folded -o - > /dev/null
done
