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
prefix="$HOME/.local"
profile=release
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="$2"; shift 2 ;;
        --profile=*) profile="${1#--profile=}"; shift ;;
        --no-build) build=0; shift ;;
        --prefix) prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        *) prefix="$1"; shift ;;
    esac
done
# A relative PREFIX or CARGO_TARGET_DIR is the caller's, not the checkout's (where the build
# runs).
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
target_dir="${CARGO_TARGET_DIR:-}"
case "$target_dir" in ''|/*) ;; *) target_dir="$PWD/$target_dir" ;; esac
cd "$(dirname "$0")/.."
if [ -n "$target_dir" ]; then export CARGO_TARGET_DIR="$target_dir"; fi
target="${CARGO_TARGET_DIR:-target}/$profile"
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
# Directories as `install` makes files: not writable by others whatever the umask (discovery
# refuses plugins in a directory anyone may write to).
install -d -m 0755 "$prefix/bin" "$prefix/lib/profconv" "$prefix/lib/profconv/plugins"
install -m 0755 "$target/$exe" "$prefix/bin/$exe"
for p in "${plugins[@]}"; do
    install -m 0644 "$p" "$prefix/lib/profconv/plugins/"
done
echo "installed $prefix/bin/$exe and ${#plugins[@]} plugins into $prefix/lib/profconv/plugins"
