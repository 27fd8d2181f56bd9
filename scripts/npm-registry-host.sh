#!/usr/bin/env bash
# Prints the host of the npm registry this machine's npm is configured for
# (`npm config get registry`), for the egress tests that must name it without
# writing it into the repository. Node and npm come from Debian (nodejs,
# npm) when the machine has no npm, as tests/mcp/run_client.sh does.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
command -v npm >/dev/null 2>&1 || apt-get install -y --no-install-recommends nodejs npm >&2
npm config get registry 2>/dev/null | sed -E 's#https?://##; s#/.*##'
