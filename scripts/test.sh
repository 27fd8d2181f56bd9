#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root):
#   set-up (packages, podman services, build, images, Kubernetes binaries), then
#   the unit, integration and security tests against the real podman service,
#   the Kubernetes backend's tests on a real one-node cluster, a bounded run of
#   every fuzzer, and a check that nothing the suite made is left behind.
# Extra arguments go to ctest instead (e.g. -R integration, -L unit), and only
# ctest runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh

status=0
if [ $# -gt 0 ]; then
  echo "==> tests (ctest $*)" >&2
  ctest --test-dir build --output-on-failure -j2 "$@" || status=$?
else
  echo "==> tests: unit, integration, security, corpus (ctest -LE k8s-cluster)" >&2
  ctest --test-dir build --output-on-failure -j2 -LE k8s-cluster || status=$?
  # The one-node cluster takes the machine's two cores for a minute: alone.
  echo "==> tests: Kubernetes backend on a real one-node cluster (ctest -L k8s-cluster)" >&2
  ctest --test-dir build --output-on-failure -L k8s-cluster || status=$?
  echo "==> fuzzing: each libFuzzer target for ${LAZYAGENT_FUZZ_SECONDS:-10} s (scripts/fuzz.sh)" >&2
  scripts/fuzz.sh "${LAZYAGENT_FUZZ_SECONDS:-10}" || status=1
fi

echo "==> leftovers" >&2
left=$(podman ps -a --filter label=io.lazyagent.role --format '{{.ID}} {{.Names}}')
vols=$(podman volume ls --filter label=io.lazyagent.role --format '{{.Name}}')
# The egress allow-list's internal networks (src/engine/podman/egress_proxy.h;
# its squid containers carry io.lazyagent.role=egress-proxy, counted above).
nets=$(podman network ls --filter label=io.lazyagent.role --format '{{.Name}}')
if [ -n "$left$vols$nets" ]; then
  echo "FAIL: the suite left containers, volumes or egress networks behind:" >&2
  echo "$left $vols $nets" >&2
  status=1
else
  echo "no lazyagent containers, volumes or egress networks left" >&2
fi
# Run cgroups (/lazyagent/<run> in each hierarchy, src/engine/podman/cgroup_usage.h):
# a run removes its own, or leaves a detached remover for up to 60 s when conmon
# lingers; give those their minute, then none may be left.
run_cgroups() { find /sys/fs/cgroup -mindepth 2 -maxdepth 3 -path '*/lazyagent/*' -type d 2>/dev/null; }
for _ in $(seq 1 65); do [ -z "$(run_cgroups)" ] && break; sleep 1; done
cgs=$(run_cgroups)
if [ -n "$cgs" ]; then
  echo "FAIL: the suite left $(printf '%s\n' "$cgs" | wc -l) run cgroup directories behind:" >&2
  printf '%s\n' "$cgs" | head -20 >&2
  status=1
else
  echo "no lazyagent run cgroups left" >&2
fi
exit "$status"
