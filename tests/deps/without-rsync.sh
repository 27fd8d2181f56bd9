#!/bin/sh
# Negative control of scripts/check-host-commands.py: with rsync taken out of a
# copy of scripts/setup.sh's PACKAGES, the check must fail, name rsync and its
# package, and name where Kubernetes' build calls it (the bug of issue 12: a
# machine without rsync failed in `scripts/k8s-cluster.sh build`).
# usage: tests/deps/without-rsync.sh [BUILD_DIR]
set -eu
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/lazyagent-deps-XXXXXX)"
trap 'rm -rf "$work"' EXIT
grep -qE '^[[:space:]]+rsync$' "$root/scripts/setup.sh" || { echo "FAIL: setup.sh's PACKAGES has no 'rsync' line to remove" >&2; exit 1; }
sed -E '/^[[:space:]]+rsync$/d' "$root/scripts/setup.sh" >"$work/setup.sh"
rc=0
python3 "$root/scripts/check-host-commands.py" --setup-script "$work/setup.sh" ${1:+--build-dir "$1"} \
  >"$work/out" 2>"$work/err" || rc=$?
cat "$work/err" >&2
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$rc" -eq 1 ] || fail "the check exited $rc without rsync in the list (expected 1)"
grep -q '^check-host-commands: rsync (package rsync): ' "$work/err" || fail "rsync is not named as an offender"
grep -q 'hack/lib/golang.sh:[0-9]' "$work/err" || fail "the offender's call site in Kubernetes' build is not named"
[ "$(grep -c '^check-host-commands: [^ ]* (' "$work/err")" -eq 1 ] || fail "more than rsync was reported"
echo "ok: without rsync the check fails and names it and where it is called" >&2
