#!/bin/sh
# Runs tests/mcp/client_test.mjs (the official MCP TypeScript SDK's client
# against `lazyagent-oci mcp`) from BUILD_DIR/mcp-client, where the SDK is
# installed from package-lock.json (npm ci; the npm cache is kept outside the
# repository, in /var/cache/lazyagent-oci/npm, so a second run needs no network).
# Usage: run_client.sh BUILD_DIR BINARY SOURCE_DIR [SCRIPT]   (default client_test.mjs)
set -eu
build=$1 binary=$2 source=$3 script=${4:-client_test.mjs}
here=$source/tests/mcp
work=$build/mcp-client
cache=/var/cache/lazyagent-oci/npm
# Node and npm come from Debian (nodejs, npm) when the machine has neither.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm
fi
mkdir -p "$work" "$cache"
cp "$here/package.json" "$here/package-lock.json" "$here/$script" "$work/"
if ! cmp -s "$here/package-lock.json" "$work/node_modules/.lazyagent-lock"; then
  (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --cache "$cache")
  cp "$here/package-lock.json" "$work/node_modules/.lazyagent-lock"
fi
exec node "$work/$script" "$binary" "$source"
