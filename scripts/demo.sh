#!/usr/bin/env bash
# The main job, end to end, from a fresh Debian 12 machine (as root): set up,
# then prove the demo fix of calculator.add in the hardened sandbox.
# (The planner that asks a model for the fix arrives with `lazyagent-oci run`;
# until then the fix is the bundled examples/patches/fix-add.json.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh
build/lazyagent-oci test --seed seed --patch examples/patches/fix-add.json "$@"
