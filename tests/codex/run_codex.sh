#!/bin/sh
# Runs tests/codex/codex_session_test.mjs: OpenAI's Codex CLI, installed from
# package-lock.json under BUILD_DIR/codex-agent (tests/npm-install.sh), drives
# `lazyagent-oci mcp` with a scripted model. Both run in a network namespace
# of their own with only lo up (unshare --net): nothing can leave the machine,
# and podman is reached through its unix socket.
# Usage: run_codex.sh BUILD_DIR BINARY SOURCE_DIR
set -eu
build=$1 binary=$2 source=$3
work=$build/codex-agent
sh "$source/tests/npm-install.sh" "$source/tests/codex" "$work"
cp "$source/tests/codex/codex_session_test.mjs" "$source/tests/codex/responses_server.mjs" "$work/"
exec unshare --net sh -c 'ip link set lo up && exec node "$1/codex_session_test.mjs" "$1/node_modules/@openai/codex/bin/codex.js" "$2" "$3" "$1"' \
  sh "$work" "$binary" "$source"
