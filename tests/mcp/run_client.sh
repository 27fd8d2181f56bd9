#!/bin/sh
# Runs tests/mcp/client_test.mjs (the official MCP TypeScript SDK's client
# against `lazyagent-oci mcp`) from BUILD_DIR/mcp-client, where the SDK is
# installed from package-lock.json (tests/npm-install.sh).
# Usage: run_client.sh BUILD_DIR BINARY SOURCE_DIR [SCRIPT]   (default client_test.mjs)
set -eu
build=$1 binary=$2 source=$3 script=${4:-client_test.mjs}
work=$build/mcp-client
sh "$source/tests/npm-install.sh" "$source/tests/mcp" "$work"
cp "$source/tests/mcp/$script" "$work/"
exec node "$work/$script" "$binary" "$source"
