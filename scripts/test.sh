#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root):
#   set-up (packages, podman services, build, images, Kubernetes binaries), then
#   the unit, integration and security tests against the real podman service
#   and, beside them, the Kubernetes backend's tests on a real one-node
#   cluster; a bounded run of every fuzzer; a check that nothing the suite
#   made is left behind; and the suite's timings (its slowest tests, its total).
#
#   scripts/test.sh              the whole suite (what CI runs)
#   scripts/test.sh --quick      the quick tier: unit tests and the fastest
#                                integration and security tests (tagged [quick]),
#                                a few minutes on a set-up machine
#   scripts/test.sh CTEST-ARGS   only ctest, with these arguments (e.g. -R session, -L unit)
#
# See docs/testing.md for the tiers, the labels and their timings.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

case "${1:-}" in
  -h|--help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
QUICK=0
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi

# Wall time of each phase ("NAME SECONDS" lines) and ctest's JUnit reports,
# summed up at the end by scripts/test-timings.py.
TIMINGS="build/test-timings"
T0=$(date +%s)
scripts/setup.sh
rm -rf "$TIMINGS"; mkdir -p "$TIMINGS"; : >"$TIMINGS/phases.parts"
echo "set-up $(( $(date +%s) - T0 ))" >"$TIMINGS/phases"

# phase NAME REPORT CTEST-ARGS...: one ctest invocation, timed, with its report.
phase() {
  local name="$1" report="$TIMINGS/$2.xml" t rc=0; shift 2
  ctest --test-dir build --show-only=json-v1 "$@" >"$report.tests.json" 2>/dev/null || true
  t=$(date +%s)
  ctest --test-dir build --output-on-failure --output-junit "$PWD/$report" "$@" || rc=$?
  # PHASE_PREFIX="+ ": a part of a phase run beside others (scripts/test-timings.py).
  if [ -n "${PHASE_PREFIX:-}" ]; then
    echo "$PHASE_PREFIX$name $(( $(date +%s) - t ))" >>"$TIMINGS/phases.parts"
  else
    echo "$name $(( $(date +%s) - t ))" >>"$TIMINGS/phases"
  fi
  return "$rc"
}

# test_names EXE TEST-SPEC...: the names of EXE's matching tests, one a line.
# Catch2 2 (Debian 12) lists them with --list-test-names-only and exits with
# their count; Catch2 3 (Debian 13) dropped that option for --list-tests
# --verbosity quiet. The executable's --libidentify says which it was built with.
test_names() {
  local exe="$1" id; shift
  id=$("$exe" --libidentify)
  if [[ "$id" =~ (^|$'\n')version:[[:space:]]*2\. ]]; then
    "$exe" --list-test-names-only "$@" || true
  else
    "$exe" --list-tests --verbosity quiet "$@"
  fi
}

# The quick tier's ctest regex: every unit and deps test, and the integration
# and security tests tagged [quick] (their names as the executables list them;
# regex characters in a name match themselves through '.').
quick_regex() {
  local names
  names=$( { test_names build/integration_tests '[quick]'
             test_names build/security_tests '[quick]'; } |
           sed -e '/^[[:space:]]*$/d' -e 's/[][\\.^$*+?(){}|]/./g' | paste -sd'|')
  [ -n "$names" ] || { echo "test.sh: no test is tagged [quick]" >&2; return 1; }
  printf '^(unit|deps):|^(integration|security):(%s)$' "$names"
}

status=0
if [ "$QUICK" = 1 ]; then
  echo "==> tests: the quick tier (unit, deps, and the integration and security tests tagged [quick])" >&2
  regex=$(quick_regex)
  phase "quick tier" quick -j2 -R "$regex" "$@" || status=$?
elif [ $# -gt 0 ]; then
  echo "==> tests (ctest $*)" >&2
  phase "ctest $*" tests -j2 "$@" || status=$?
else
  # Two ctest runs side by side: the podman tests (they hold the `podman`
  # lock: one at a time; unit tests fill the second slot), and the cluster's
  # tests (one at a time; they mostly wait on pods), then the fuzzers, which
  # so run while the longer podman chain finishes instead of after it.
  echo "==> tests: unit, integration, security, corpus, and beside them the Kubernetes backend on a real one-node cluster, then the fuzzers" >&2
  t=$(date +%s)
  (
    rc=0
    PHASE_PREFIX="+ " phase "ctest: the Kubernetes backend on a real one-node cluster" k8s -j1 -L '^k8s-cluster$' || rc=$?
    echo "==> fuzzing: each libFuzzer target for ${LAZYAGENT_FUZZ_SECONDS:-10} s (scripts/fuzz.sh)" >&2
    tf=$(date +%s)
    scripts/fuzz.sh "${LAZYAGENT_FUZZ_SECONDS:-10}" || rc=1
    echo "+ fuzzing, after the cluster's tests $(( $(date +%s) - tf ))" >>"$TIMINGS/phases.parts"
    exit "$rc"
  ) &
  cluster_side=$!
  PHASE_PREFIX="+ " phase "ctest: unit, integration, security, corpus (podman)" all -j2 -LE '^k8s-cluster$' || status=$?
  wait "$cluster_side" || status=1
  echo "ctest and fuzzing: the podman tests beside the cluster's tests and the fuzzers $(( $(date +%s) - t ))" >>"$TIMINGS/phases"
  cat "$TIMINGS/phases.parts" >>"$TIMINGS/phases"
fi

echo "==> leftovers" >&2
t=$(date +%s)
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
echo "leftovers $(( $(date +%s) - t ))" >>"$TIMINGS/phases"

# Growth shows before it hurts: the slowest tests and the total, with a
# warning past the suite's budget (40 minutes; CI allows 90).
python3 scripts/test-timings.py --phases "$TIMINGS/phases" "$TIMINGS"/*.xml || true
exit "$status"
