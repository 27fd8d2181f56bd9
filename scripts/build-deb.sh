#!/usr/bin/env bash
# Builds the Debian package of lazyagent-oci with CPack: the files
# `cmake --install` puts under /usr (the stripped binary, lazyagent-oci(1), the
# bash, zsh and fish completions, share/lazyagent-oci's config, seed and OCI
# seccomp profile), with Depends from the libraries the binary links
# (dpkg-shlibdeps) plus podman. Unpacks it into a scratch root and runs it
# from there, checks it with lintian (an error fails) and prints the .deb's
# path last.
#
# usage: scripts/build-deb.sh [BUILD_DIR [OUT_DIR]]   (default build/ and BUILD_DIR)
# BUILD_DIR must hold a build (scripts/setup.sh, or cmake --build BUILD_DIR).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-$build}")
[ -x "$build/lazyagent-oci" ] || { echo "build-deb: $build/lazyagent-oci is not built (cmake --build $build)" >&2; exit 2; }
[ -f "$build/generated/share/lazyagent-oci.1.gz" ] ||
  { echo "build-deb: $build has no manual page yet: cmake --build $build --target lazyagent-docs" >&2; exit 2; }
version=$("$build/lazyagent-oci" version | awk '{print $2}')
# The maintainer: $DEBFULLNAME <$DEBEMAIL> as Debian's tools take them, else
# git's identity (lintian refuses an address at a host such as localhost).
email=${DEBEMAIL:-$(git config user.email || true)}
name=${DEBFULLNAME:-$(git config user.name || echo "lazyagent-oci maintainers")}
[ -n "$email" ] || { echo "build-deb: no maintainer address: set DEBEMAIL (or git config user.email)" >&2; exit 2; }
maintainer="$name <$email>"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

echo "==> install into a staging root" >&2
DESTDIR=$stage/root cmake --install "$build" --prefix /usr --strip >/dev/null
doc=$stage/root/usr/share/doc/lazyagent-oci
install -d -m 0755 "$doc"
cat > "$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: lazyagent-oci
Comment: built from this repository by scripts/build-deb.sh

Files: *
Copyright: $(date +%Y) the lazyagent-oci authors
License: unspecified
 The repository states no license yet.
COPYRIGHT
printf 'lazyagent-oci (%s) unstable; urgency=low\n\n  * Built from the repository (CHANGELOG.md has the changes).\n\n -- %s  %s\n' \
  "$version" "$maintainer" "$(date -R)" | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/copyright" "$doc/changelog.gz"

echo "==> cpack -G DEB" >&2
cat > "$stage/CPackConfig.cmake" <<CPACK
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME lazyagent-oci)
set(CPACK_PACKAGE_VERSION "$version")
set(CPACK_PACKAGE_CONTACT "$maintainer")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "prove an LLM coding agent's patch in a hardened OCI container")
set(CPACK_PACKAGE_DESCRIPTION "lazyagent-oci runs a project's tests against a patch in a podman container
 with no network, no secrets, a read-only root and hard limits, verifies the
 configuration podman generated before the container starts, and records a
 verdict whose hashes can be checked later.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "podman, runc | crun")
# images build (lazyagent-oci images build) runs debootstrap for the base image.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "debootstrap, debian-archive-keyring")
set(CPACK_PACKAGE_FILE_NAME "lazyagent-oci_${version}_$(dpkg --print-architecture)")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_INSTALLED_DIRECTORIES "$stage/root;/")
set(CPACK_PACKAGING_INSTALL_PREFIX /)
set(CPACK_SET_DESTDIR OFF)
set(CPACK_PACKAGE_DIRECTORY "$stage/out")
CPACK
(cd "$stage" && cpack --config "$stage/CPackConfig.cmake" >&2)
deb=$(ls "$stage"/out/lazyagent-oci_*.deb)
mkdir -p "$out"
cp "$deb" "$out/"
deb=$out/$(basename "$deb")

echo "==> unpacked into a scratch root, it runs with nothing from the build tree" >&2
dpkg-deb -x "$deb" "$stage/scratch"
env -i PATH=/usr/bin:/bin "$stage/scratch/usr/bin/lazyagent-oci" version >&2
env -i PATH=/usr/bin:/bin "$stage/scratch/usr/bin/lazyagent-oci" completion --help >/dev/null
[ -s "$stage/scratch/usr/share/man/man1/lazyagent-oci.1.gz" ] && [ -s "$stage/scratch/usr/share/lazyagent-oci/config/lazyagent.yaml" ]

echo "==> lintian $deb" >&2
if ! lintian --fail-on error "$deb" >&2; then
  echo "build-deb: lintian found errors in $deb (above)" >&2
  exit 1
fi
echo "$deb"
