#!/usr/bin/env bash
# One table: profconv's conversions of folded stacks at 50 MB, 200 MB and 1 GB, beside
# inferno-flamegraph (folded → SVG) and beside `cat` of the same file (the floor).
#
#   bench/compare.sh [SIZE...]        # default: 50M 200M 1G (gen_folded.py sizes)
#
# Inputs come from ../shared/bench/gen_folded.py --seed 42 (PROFCONV_GEN_FOLDED overrides the
# path) into bench/out/ unless already there; inferno 0.12.8 is installed into
# bench/out/inferno with `cargo install`. Every command runs PROFCONV_BENCH_RUNS times (default
# 3), alternating, under /usr/bin/time; the table shows medians of CPU (user + sys), wall time
# and peak RSS, and each row's ratio to inferno's CPU and memory. CPU is the figure to compare
# on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(50M 200M 1G)
runs="${PROFCONV_BENCH_RUNS:-3}"
gen="${PROFCONV_GEN_FOLDED:-../shared/bench/gen_folded.py}"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p bench/out
inferno=bench/out/inferno/bin/inferno-flamegraph
if [ ! -x "$inferno" ]; then
    echo "installing inferno into bench/out/inferno ..."
    cargo install inferno --version 0.12.8 --root bench/out/inferno --quiet
fi
cargo build --release --quiet
profconv="$target/release/profconv"

measure() { # prints "cpu wall peak_kb"
    local t
    t=$(mktemp)
    /usr/bin/time -f '%e %U %S %M' -o "$t" "$@" > /dev/null
    awk '{ printf "%.2f %.2f %d\n", $2 + $3, $1, $4 }' "$t"
    rm -f "$t"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-6s %-28s %8s %8s %10s %9s %9s\n' size conversion "CPU s" "wall s" "peak MB" "CPU/inf" "mem/inf"
for size in "${sizes[@]}"; do
    input="$PWD/bench/out/folded-seed42-$size.folded"
    if [ ! -s "$input" ]; then
        python3 "$gen" --seed 42 --size "$size" > "$input.tmp" && mv "$input.tmp" "$input"
    fi
    runs_file="bench/out/compare-$size.txt"
    : > "$runs_file"
    cat "$input" > /dev/null
    for _ in $(seq "$runs"); do
        echo "cat $(measure cat "$input")" >> "$runs_file"
        echo "inferno $(measure sh -c "\"$inferno\" \"$input\" > bench/out/c.svg")" >> "$runs_file"
        for out in svg callgrind json.gz folded; do
            echo "profconv->$out $(measure "$profconv" convert -q "$input" -o "bench/out/c.$out")" >> "$runs_file"
        done
    done
    inf_cpu=$(awk '$1 == "inferno" { print $2 }' "$runs_file" | median)
    inf_mem=$(awk '$1 == "inferno" { print $4 }' "$runs_file" | median)
    for row in cat inferno profconv-\>svg profconv-\>callgrind profconv-\>json.gz profconv-\>folded; do
        cpu=$(awk -v r="$row" '$1 == r { print $2 }' "$runs_file" | median)
        wall=$(awk -v r="$row" '$1 == r { print $3 }' "$runs_file" | median)
        mem=$(awk -v r="$row" '$1 == r { print $4 }' "$runs_file" | median)
        printf '%-6s %-28s %8s %8s %10.1f %9.2f %9.2f\n' "$size" "$row" "$cpu" "$wall" \
            "$(echo "$mem / 1024" | bc -l)" "$(echo "$cpu / $inf_cpu" | bc -l)" \
            "$(echo "$mem / $inf_mem" | bc -l)"
    done
done
