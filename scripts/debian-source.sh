#!/usr/bin/env bash
# Fetch the upstream source of a Debian source package, for tests and
# benchmarks on real projects (issue 14: a unified diff proven on a real
# project). Through a private apt configuration with deb-src (scripts/lib.sh
# private_apt; the machine's own apt configuration is not touched), cached
# under /var/cache/lazyagent-oci/debian-src/<package>/ and never committed.
#
#   scripts/debian-source.sh PACKAGE     prints the extracted upstream tree
#
# Only the upstream tarball (.orig.tar.*) is needed and extracted; apt-get
# checks it against the .dsc's checksums before saving it. A second call uses
# the cache (a few milliseconds). Needs root (the cache is under /var/cache).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

[ $# -eq 1 ] && [ -n "$1" ] || { echo "usage: $0 PACKAGE" >&2; exit 2; }
PKG="$1"
case "$PKG" in *[!a-z0-9.+-]*) die "not a Debian source package name: $PKG" ;; esac
CACHE="${LAZYAGENT_DEBIAN_SRC_CACHE:-/var/cache/lazyagent-oci/debian-src}"
require_root
mkdir -p "$CACHE/$PKG"
exec {lock}>"$CACHE/$PKG/.lock"
flock "$lock"
SRC="$CACHE/$PKG/src"
if [ -f "$SRC/.lazyagent-source" ]; then
  printf '%s\n' "$SRC"
  exit 0
fi
APT_CONFIG="$(private_apt "$CACHE/apt")"
export APT_CONFIG
# The package lists: fetched once a day at most.
if [ -z "$(find "$CACHE/apt/lists" -maxdepth 1 -name '*Sources*' -mmin -1440 2>/dev/null | head -n 1)" ]; then
  apt-get -q update >&2 || die "apt-get update (private deb-src list) failed"
fi
work="$CACHE/$PKG/download"
mkdir -p "$work"
# The Debian packaging tarball may be missing from a partial mirror; the
# upstream one is all that is needed.
(cd "$work" && apt-get -q source --download-only "$PKG/$LAZYAGENT_DEBIAN_SUITE" >&2) || true
orig="$(find "$work" -maxdepth 1 -name "${PKG}_*.orig.tar.*" | head -n 1)"
[ -n "$orig" ] || die "apt-get source $PKG/$LAZYAGENT_DEBIAN_SUITE gave no upstream tarball (is the mirror reachable?)"
rm -rf "$SRC.tmp"
mkdir -p "$SRC.tmp"
tar -xf "$orig" -C "$SRC.tmp" --strip-components=1 --no-same-owner
printf '%s\n' "$(basename "$orig")" >"$SRC.tmp/.lazyagent-source"
rm -rf "$SRC"
mv "$SRC.tmp" "$SRC"
printf '%s\n' "$SRC"
