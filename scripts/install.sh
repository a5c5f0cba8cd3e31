#!/usr/bin/env bash
# Installs profconv and its plugin libraries into a prefix, in the layout plugin discovery
# searches without any environment variable:
#
#   PREFIX/bin/profconv
#   PREFIX/lib/profconv/plugins/libprofconv_plugin_*.so   (.dylib on macOS, .dll on Windows)
#
# Usage: scripts/install.sh [PREFIX] [--profile release|debug] [--no-build]
#   PREFIX defaults to ~/.local. `cargo install` cannot do this: it installs binaries only.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$HOME/.local"
profile=release
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) prefix="$1"; shift ;;
    esac
done
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
mkdir -p "$prefix/bin" "$prefix/lib/profconv/plugins"
install -m 0755 "$target/$exe" "$prefix/bin/$exe"
for p in "${plugins[@]}"; do
    install -m 0644 "$p" "$prefix/lib/profconv/plugins/"
done
echo "installed $prefix/bin/$exe and ${#plugins[@]} plugins into $prefix/lib/profconv/plugins"
