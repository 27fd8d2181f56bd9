#!/usr/bin/env bash
# Puts `lazyagent-oci` on PATH after the quick start (scripts/demo.sh runs
# it): a symlink DIR/lazyagent-oci (default /usr/local/bin) to this
# checkout's build/lazyagent-oci, so the README's bare `lazyagent-oci` and an
# MCP client's `"command": "lazyagent-oci"` work. A symlink already there (an
# earlier checkout's) is pointed at this build; a regular file (an install by
# `cmake --install build`) is left alone, and said so.
#
# usage: scripts/link-binary.sh [DIR [BINARY]]   (BINARY: default build/lazyagent-oci)
# Exit 0: linked, or an installed binary left in place; 1: DIR cannot be
# written (the message says how to put build/ on PATH instead); 2: no build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-/usr/local/bin}
target=$(realpath -m "${2:-$PWD/build/lazyagent-oci}")
link=$dir/lazyagent-oci
if [ ! -x "$target" ]; then
  echo "link-binary: $target is not built yet (scripts/setup.sh builds it)" >&2
  exit 2
fi
if [ -e "$link" ] && [ ! -L "$link" ]; then
  echo "==> $link is an installed lazyagent-oci (not a link), left as it is; this build is $target" >&2
  exit 0
fi
if ! ln -sfn "$target" "$link" 2>/dev/null; then
  echo "==> cannot write $link: put the build on PATH yourself: export PATH=\"$PWD/build:\$PATH\"" >&2
  exit 1
fi
case ":$PATH:" in
  *":$dir:"*) echo "==> lazyagent-oci is on PATH: $link -> $target" >&2 ;;
  *) echo "==> linked $link -> $target ($dir is not on your PATH: export PATH=\"$dir:\$PATH\")" >&2 ;;
esac
