#!/usr/bin/env bash
# The Debian package (issue 43 item 4): scripts/build-deb.sh makes it, runs it
# from a scratch root and lintian finds no error in it; then `dpkg -i` installs
# it inside a container from the planner image (Debian with the libraries the
# binary links, no podman: --force-depends, the one dependency a container
# cannot use), where the installed tool runs with nothing from this checkout:
# `version`, `images --help`, the manual page, the completions, and the image
# builder in share/lazyagent-oci; dpkg records the Depends on podman and a runtime.
# usage: tests/package/deb_install.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$(mktemp -d)
name="lazyagent-deb-test-$$"
trap 'podman rm -f "$name" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
# A maintainer address of the tests' own (CI's clone has no git identity).
deb=$(DEBFULLNAME="lazyagent-oci tests" DEBEMAIL="tests@example.org" "$src/scripts/build-deb.sh" "$build" "$out" | tail -n 1)
[ -f "$deb" ] || { echo "deb install: build-deb.sh printed no .deb ($deb)" >&2; exit 1; }
image=$(awk -F': *' '/^  planner:/ {print $2; exit}' "$src/config/lazyagent.yaml" | awk '{print $1}')
image=${image:-localhost/lazyagent-planner:latest}
podman run --rm --name "$name" --network none --pull never -v "$out:/deb:ro" --entrypoint /bin/sh "$image" -euc '
  rm -f /etc/dpkg/dpkg.cfg.d/*   # the image keeps no man pages; a user'"'"'s host does
  dpkg --force-depends -i /deb/*.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }
  dpkg -s lazyagent-oci | grep -q "^Depends:.*podman.*runc | crun"
  dpkg -s lazyagent-oci | grep -q "^Recommends: debootstrap, debian-archive-keyring"
  ! ldd /usr/bin/lazyagent-oci | grep "not found"
  /usr/bin/lazyagent-oci version
  /usr/bin/lazyagent-oci images --help | grep -q "share/lazyagent-oci/scripts/build-images.sh"
  test -x /usr/share/lazyagent-oci/scripts/build-images.sh
  test -s /usr/share/lazyagent-oci/images/sandbox/Containerfile
  test -s /usr/share/man/man1/lazyagent-oci.1.gz
  test -s /usr/share/bash-completion/completions/lazyagent-oci
  dpkg -r lazyagent-oci >/dev/null 2>&1
  ! test -e /usr/bin/lazyagent-oci
  echo "deb install: installed, ran and removed in a container"
'
