#!/usr/bin/env bash
# The hosts users have (run by hand; not yet in scripts/test.sh), in the Debian 13 VM of
# scripts/vm.sh (podman 5, systemd, cgroup v2, crun by default, runc beside it).
#   1. the image's build of this checkout refreshed (the CLI and the unit tests,
#      in a chroot at native speed), and the unit tests run there: the project
#      builds and its unit tests pass on Debian 13's compiler and libraries;
#   2. one boot running tests/vm/hosts.sh: root under crun (the service as
#      installed) and under runc, and rootless as an ordinary user.
# The image is cached between runs (/var/cache/lazyagent-oci/vm); the first
# one takes about half an hour (debootstrap, packages, a full build).
#   tests/vm/vm_test.sh SOURCE_DIR [hosts.sh PARTS...]
set -euo pipefail
src="$(cd "${1:?usage: vm_test.sh SOURCE_DIR [PARTS...]}" && pwd)"; shift
t0=$(date +%s)
"$src/scripts/vm.sh" image --checkout "$src" --target lazyagent-oci --target unit_tests --unit-tests
t1=$(date +%s)
echo "vm_test: image and unit tests: $((t1 - t0)) s"
rc=0
"$src/scripts/vm.sh" run --images --checkout "$src" --timeout "${LAZYAGENT_VM_TIMEOUT:-1200}" -- \
  bash /opt/lazyagent-src/tests/vm/hosts.sh "$@" || rc=$?
echo "vm_test: the host matrix in the VM: $(( $(date +%s) - t1 )) s, exit $rc"
exit "$rc"
