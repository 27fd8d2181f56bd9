#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root):
#   set-up (packages, podman service, build, images), then the unit tests,
#   then the integration tests against the real podman service, then a check
#   that nothing the suite made is left behind.
# Extra arguments go to ctest (e.g. -R integration, -L unit).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh

echo "==> tests" >&2
status=0
ctest --test-dir build --output-on-failure -j2 "$@" || status=$?

echo "==> leftovers" >&2
left=$(podman ps -a --filter label=io.lazyagent.role --format '{{.ID}} {{.Names}}')
vols=$(podman volume ls --filter label=io.lazyagent.role --format '{{.Name}}')
if [ -n "$left$vols" ]; then
  echo "FAIL: the suite left containers or volumes behind:" >&2
  echo "$left $vols" >&2
  status=1
else
  echo "no lazyagent containers or volumes left" >&2
fi
exit "$status"
