#!/usr/bin/env bash
# One table: profconv's conversions beside inferno-flamegraph (folded → SVG) and beside `cat`
# of the same file (the floor), for folded stacks at 50 MB, 200 MB and 1 GB, a PVM trace of
# 10 M events and a 100 MB Deep.data file.
#
#   bench/compare.sh [INPUT...]      # default: 50M 200M 1G few pvm deep
#
# INPUT is a gen_folded.py size (50M, 200M, 1G …), `few` (1 GB of folded stacks made of the
# 50 MB input's first 1 000 lines repeated: memory must follow distinct stacks), `pvm` or `deep`. Inputs are generated into
# bench/out/ unless already there: ../shared/bench/gen_folded.py --seed 42 (PROFCONV_GEN_FOLDED
# overrides the path), ../shared/tools/gen_pvm_trace.py --events 10000000 --seed 1
# (PROFCONV_GEN_PVM), and the project's own Deep.data generator (cargo run --example gen_deep
# -p profconv-deep). inferno 0.12.8 is installed into bench/out/inferno with `cargo install`.
# Every command runs PROFCONV_BENCH_RUNS times (default 3), alternating, under /usr/bin/time;
# the table shows medians of CPU (user + sys), wall time and peak RSS, each row's CPU and memory
# against inferno's on the same input, and its wall time against `cat`'s. profconv runs with
# --threads 1 (one core: the CPU figure to compare) and with its default (every core).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
inputs=("$@")
[ ${#inputs[@]} -gt 0 ] || inputs=(50M 200M 1G few pvm deep)
runs="${PROFCONV_BENCH_RUNS:-3}"
gen="${PROFCONV_GEN_FOLDED:-../shared/bench/gen_folded.py}"
gen_pvm="${PROFCONV_GEN_PVM:-../shared/tools/gen_pvm_trace.py}"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p bench/out
inferno=bench/out/inferno/bin/inferno-flamegraph
if [ ! -x "$inferno" ]; then
    echo "installing inferno into bench/out/inferno ..."
    cargo install inferno --version 0.12.8 --root bench/out/inferno --quiet
fi
cargo build --release --quiet
profconv="$target/release/profconv"
out=bench/out/c

measure() { # prints "cpu wall peak_kb" (wall from the shell's clock: finer than time's)
    local t start end
    t=$(mktemp)
    start=$EPOCHREALTIME
    /usr/bin/time -f '%U %S %M' -o "$t" "$@" > /dev/null
    end=$EPOCHREALTIME
    awk -v w="$(echo "$end - $start" | bc -l)" '{ printf "%.2f %.3f %d\n", $1 + $2, w, $3 }' "$t"
    rm -f "$t"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-6s %-38s %6s %7s %8s %8s %8s %9s\n' input conversion "CPU s" "wall s" "peak MB" \
    "CPU/inf" "mem/inf" "wall/cat"
for name in "${inputs[@]}"; do
    rows=() # "label|command"
    case "$name" in
    pvm)
        input="$PWD/bench/out/pvm-seed1-10000000.pvmtrace"
        [ -s "$input" ] || { python3 "$gen_pvm" --events 10000000 --seed 1 > "$input.tmp" && mv "$input.tmp" "$input" || gen_failed "$input"; }
        rows+=("profconv -> folded|$profconv convert -q $input --to folded -o -")
        rows+=("profconv -> folded, -O aggregate|$profconv convert -q $input --to folded -O aggregate -o -")
        rows+=("profconv -> SVG|$profconv convert -q $input -o $out.pvm.svg")
        ;;
    few)
        input="$PWD/bench/out/folded-few1000-1G.folded"
        if [ ! -s "$input" ]; then
            small="$PWD/bench/out/folded-seed42-50M.folded"
            [ -s "$small" ] || { python3 "$gen" --seed 42 --size 50M > "$small.tmp" && mv "$small.tmp" "$small" || gen_failed "$small"; }
            python3 - "$small" "$input.tmp" <<'PY'
import sys
lines = open(sys.argv[1], 'rb').readlines()[:1000]
block = b''.join(lines)
with open(sys.argv[2], 'wb') as out:
    for _ in range((1 << 30) // len(block) + 1):
        out.write(block)
PY
            mv "$input.tmp" "$input"
        fi
        rows+=("inferno-flamegraph -> SVG|$inferno $input")
        rows+=("profconv -> SVG, threads 1|$profconv convert -q --threads 1 $input -o $out.svg")
        rows+=("profconv -> SVG, threads default|$profconv convert -q $input -o $out.svg")
        ;;
    deep)
        input="$PWD/bench/out/deep-seed42-100M.data"
        if [ ! -s "$input" ]; then
            cargo run --release --quiet -p profconv-deep --example gen_deep -- \
                --size 100M --seed 42 -o "$input.tmp"
            mv "$input.tmp" "$input"
        fi
        rows+=("profconv -> folded|$profconv convert -q $input --to folded -o -")
        rows+=("profconv -> SVG|$profconv convert -q $input -o $out.deep.svg")
        ;;
    *)
        input="$PWD/bench/out/folded-seed42-$name.folded"
        [ -s "$input" ] || { python3 "$gen" --seed 42 --size "$name" > "$input.tmp" && mv "$input.tmp" "$input" || gen_failed "$input"; }
        rows+=("inferno-flamegraph -> SVG|$inferno $input")
        for t in 1 default; do
            threads=""
            [ "$t" = default ] || threads="--threads $t"
            label="threads $t"
            rows+=("profconv -> SVG, $label|$profconv convert -q $threads $input -o $out.svg")
            rows+=("profconv -> callgrind, $label|$profconv convert -q $threads $input -o $out.callgrind")
            rows+=("profconv -> json.gz, $label|$profconv convert -q $threads $input -o $out.json.gz")
            rows+=("profconv -> folded, $label|$profconv convert -q $threads $input -o $out.folded")
        done
        ;;
    esac
    rows=("cat (the floor)|cat $input" "${rows[@]}")
    runs_file="bench/out/compare-$name.txt"
    : > "$runs_file"
    cat "$input" > /dev/null
    for _ in $(seq "$runs"); do
        for row in "${rows[@]}"; do
            label="${row%%|*}"
            # shellcheck disable=SC2086 # commands are word lists without quoting needs
            echo "$label|$(measure ${row#*|})" >> "$runs_file"
        done
    done
    stat() { awk -F'|' -v r="$1" '$1 == r { print $2 }' "$runs_file" | awk -v k="$2" '{ print $k }' | median; }
    inf_cpu=$(stat "inferno-flamegraph -> SVG" 1)
    inf_mem=$(stat "inferno-flamegraph -> SVG" 3)
    cat_wall=$(stat "cat (the floor)" 2)
    for row in "${rows[@]}"; do
        label="${row%%|*}"
        cpu=$(stat "$label" 1)
        wall=$(stat "$label" 2)
        mem=$(stat "$label" 3)
        ratio() { if [ -n "$2" ] && [ "$(echo "$2 > 0" | bc)" = 1 ]; then printf '%.2f' "$(echo "$1 / $2" | bc -l)"; else echo -; fi; }
        printf '%-6s %-38s %6s %7s %8.1f %8s %8s %9s\n' "$name" "$label" "$cpu" "$wall" \
            "$(echo "$mem / 1024" | bc -l)" "$(ratio "$cpu" "$inf_cpu")" \
            "$(ratio "$mem" "$inf_mem")" "$(ratio "$wall" "$cat_wall")"
    done
done
