# Shared by the bench scripts (sourced, not run).

# A generator that is missing or fails stops the bench (set -e does not see a failure inside
# `a && b`), and leaves no half-written input behind.
gen_failed() {
    rm -f "$1.tmp"
    echo "bench: could not generate $1 (the generators are beside the checkout, in ../shared: see docs/performance.md, Reproducing)" >&2
    exit 1
}
