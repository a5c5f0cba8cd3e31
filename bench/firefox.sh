#!/usr/bin/env bash
# Folded stacks → Firefox Profiler gzip JSON (and speedscope JSON) throughput, compared with
# folded → SVG flame graph through the same CLI.
#
#   bench/firefox.sh [SIZE]       # SIZE for gen_folded.py, default 200M (1G takes ~1 min to generate)
#
# Generates the input with ../shared/bench/gen_folded.py (seed 42) into bench/out/ unless it is
# already there, builds in release mode, runs the `firefox` bench of profconv-firefox (parse and
# emit separately, median of PROFCONV_BENCH_RUNS runs, default 3), then the end-to-end CLI
# conversions to .json.gz and to .svg, alternating, 3 runs each under /usr/bin/time (CPU seconds
# = user + sys, wall seconds, peak RSS), and prints the medians and their ratios. The Firefox
# emitter generates JSON and compresses it on two threads, so its wall time can be below its CPU
# time; on a shared machine wall time is noisy, so compare CPU first.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
size="${1:-200M}"
gen="${PROFCONV_GEN_FOLDED:-../shared/bench/gen_folded.py}"
mkdir -p bench/out
input="bench/out/folded-seed42-$size.folded"
if [ ! -s "$input" ]; then
    echo "generating $input with $gen ..."
    python3 "$gen" --seed 42 --size "$size" > "$input.tmp" && mv "$input.tmp" "$input" || gen_failed "$input"
fi
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet -p profconv-cli -p profconv-plugin-folded -p profconv-plugin-firefox
svg=0
if cargo build --release --quiet -p profconv-plugin-flamegraph 2>/dev/null; then svg=1; fi
PROFCONV_BENCH_INPUT="$PWD/$input" cargo bench --quiet -p profconv-firefox --bench firefox
echo
bin="$target/release/profconv"
cat "$input" > /dev/null
run() { # run OUT: prints "cpu_seconds wall_seconds peak_kb"
    /usr/bin/time -f "%U %S %e %M" -o bench/out/time.txt "$bin" convert -q "$input" -o "$1"
    awk '{printf "%.2f %.2f %d\n", $1 + $2, $3, $4}' bench/out/time.txt
}
fx=() sv=()
for _ in 1 2 3; do
    fx+=("$(run bench/out/out.json.gz)")
    if [ "$svg" = 1 ]; then sv+=("$(run bench/out/out.svg)"); fi
done
gzip -t bench/out/out.json.gz
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
field() { # field N RUN...: the Nth field of each run
    local n=$1
    shift
    printf '%s\n' "$@" | awk -v n="$n" '{ print $n }'
}
fx_cpu=$(median $(field 1 "${fx[@]}"))
fx_wall=$(median $(field 2 "${fx[@]}"))
echo "end to end: profconv convert $input -o out.json.gz: CPU (user+sys) runs: $(field 1 "${fx[@]}" | xargs) s, median $fx_cpu s; wall median $fx_wall s; peak RSS $(median $(field 3 "${fx[@]}")) KB; output $(stat -c %s bench/out/out.json.gz) bytes (gzip -t ok)"
if [ "$svg" = 1 ]; then
    sv_cpu=$(median $(field 1 "${sv[@]}"))
    sv_wall=$(median $(field 2 "${sv[@]}"))
    echo "end to end: profconv convert $input -o out.svg:     CPU (user+sys) runs: $(field 1 "${sv[@]}" | xargs) s, median $sv_cpu s; wall median $sv_wall s; peak RSS $(median $(field 3 "${sv[@]}")) KB"
    awk -v a="$fx_cpu" -v b="$sv_cpu" -v c="$fx_wall" -v d="$sv_wall" 'BEGIN { printf "json.gz / svg: CPU time %.2f, wall time %.2f (aim: at most 1.5)\n", a / b, c / d }'
else
    echo "(no flamegraph plugin: compare with inferno's baseline in shared/research/baselines.md: 2.09 s CPU for 200M, 7.70 s for 1G)"
fi
