#!/usr/bin/env bash
# Installs profconv and its plugin libraries into a prefix, in the layout plugin discovery
# searches without any environment variable:
#
#   PREFIX/bin/profconv
#   PREFIX/lib/profconv/plugins/libprofconv_plugin_*.so   (.dylib on macOS, .dll on Windows)
#
# Usage: scripts/install.sh [PREFIX | --prefix PREFIX] [--profile release|debug] [--no-build]
#   PREFIX defaults to ~/.local. `cargo install` cannot do this: it installs binaries only.
set -euo pipefail
prefix=
profile=release
build=1
usage() { echo "$1 (see --help)" >&2; exit 2; }
# The value of option $1, given as $2: present, and not another option.
value() { { [ $# -ge 2 ] && [ -n "$2" ] && [ "${2#-}" = "$2" ]; } || usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) value "$@"; profile="$2"; shift 2 ;;
        --profile=*) profile="${1#--profile=}"; shift ;;
        --no-build) build=0; shift ;;
        --prefix) value "$@"; [ -z "$prefix" ] || usage "one PREFIX only"; prefix="$2"; shift 2 ;;
        --prefix=*) [ -z "$prefix" ] || usage "one PREFIX only"; prefix="${1#--prefix=}"
            [ -n "$prefix" ] || usage "--prefix needs a value"; shift ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) usage "unknown option $1" ;;
        '') usage "an empty PREFIX" ;;
        *) [ -z "$prefix" ] || usage "one PREFIX only (got $prefix and $1)"; prefix="$1"; shift ;;
    esac
done
case "$profile" in release|debug) ;; *) usage "--profile is release or debug, not $profile" ;; esac
# `--prefix=~/x`: the shell does not expand a `~` after `=`.
case "$prefix" in '~'*) usage "PREFIX $prefix starts with ~, which the shell did not expand: write \$HOME" ;; esac
prefix="${prefix:-$HOME/.local}"
# A relative PREFIX or CARGO_TARGET_DIR is the caller's, not the checkout's (where the build
# runs).
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
target_dir="${CARGO_TARGET_DIR:-}"
case "$target_dir" in ''|/*) ;; *) target_dir="$PWD/$target_dir" ;; esac
cd "$(dirname "$0")/.."
if [ -n "$target_dir" ]; then export CARGO_TARGET_DIR="$target_dir"; fi
# Where cargo builds: CARGO_TARGET_DIR, else `build.target-dir` of a cargo config or
# CARGO_BUILD_TARGET_DIR (cargo metadata knows), else ./target.
if [ -z "$target_dir" ]; then
    target_dir="$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
        sed -n 's/.*"target_directory":"\(\([^"\\]\|\\.\)*\)".*/\1/p' | sed 's/\\\(.\)/\1/g')" || true
fi
target="${target_dir:-target}/$profile"
if [ "$build" = 1 ]; then
    if [ "$profile" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
fi
case "$(uname -s)" in
    Darwin) pattern='libprofconv_plugin_*.dylib'; exe=profconv ;;
    MINGW*|MSYS*|CYGWIN*) pattern='profconv_plugin_*.dll'; exe=profconv.exe ;;
    *) pattern='libprofconv_plugin_*.so'; exe=profconv ;;
esac
# Everything is checked before anything is installed: no binary without its plugins.
shopt -s nullglob
plugins=("$target"/$pattern)
if [ ! -f "$target/$exe" ] || [ ${#plugins[@]} -eq 0 ]; then
    how="cargo build"; [ "$profile" = release ] && how="cargo build --release"
    echo "no $exe with plugin libraries in $target: build first (run without --no-build, or $how)" >&2
    exit 1
fi
# Directories made here are 0755 whatever the umask (discovery refuses plugins in a directory
# anyone may write to); existing ones keep their mode.
make_dir() {
    [ -d "$1" ] && return
    make_dir "$(dirname "$1")"
    install -d -m 0755 "$1"
}
for d in "$prefix/bin" "$prefix/lib/profconv/plugins"; do make_dir "$d"; done
# Discovery refuses plugins in a directory others may write to (sticky or not; a link to it
# is followed): an existing one so would make the install load nothing.
plugin_dir="$prefix/lib/profconv/plugins"
if [ -n "$(find -L "$plugin_dir" -maxdepth 0 -perm -0002)" ]; then
    echo "$plugin_dir is writable by all users: profconv would refuse the plugins there; \`chmod o-w\` it first" >&2
    exit 1
fi
install -m 0755 "$target/$exe" "$prefix/bin/$exe"
for p in "${plugins[@]}"; do
    install -m 0644 "$p" "$prefix/lib/profconv/plugins/"
done
echo "installed $prefix/bin/$exe and ${#plugins[@]} plugins into $prefix/lib/profconv/plugins"
