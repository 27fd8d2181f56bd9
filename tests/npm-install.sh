#!/bin/sh
# Installs the npm packages a test pins (PACKAGE_DIR's package.json and
# package-lock.json) into WORK_DIR/node_modules with `npm ci`, unless the same
# lock is installed there already. The npm cache is kept outside the
# repository, in /var/cache/lazyagent-oci/npm, so a second install needs no
# network; nothing installed is committed. scripts/setup.sh runs it for the
# agent tests so that they do not wait for a download.
# Usage: npm-install.sh PACKAGE_DIR WORK_DIR
set -eu
here=$1 work=$2
cache=/var/cache/lazyagent-oci/npm
# Node and npm come from Debian (nodejs, npm) when the machine has neither.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm
fi
mkdir -p "$work" "$cache"
cp "$here/package.json" "$here/package-lock.json" "$work/"
if ! cmp -s "$here/package-lock.json" "$work/node_modules/.lazyagent-lock"; then
  (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --cache "$cache")
  cp "$here/package-lock.json" "$work/node_modules/.lazyagent-lock"
fi
