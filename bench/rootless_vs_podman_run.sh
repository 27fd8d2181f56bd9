#!/usr/bin/env bash
# Benchmark (issue 29): an ordinary user's sandbox on the user's own rootless
# podman, cold and warm (engine.warm: 1), against the same user's
# `podman run --rm` with the usual hardening flags (--network none, read-only,
# no capabilities, no-new-privileges, tmpfs, rlimits, the sandbox's ids in the
# user's subordinate range), all on the demo seed with the fix. Rounds rotate
# the order; prints the medians (ms) and the storage driver.
#
# usage (as root): bench/rootless_vs_podman_run.sh USER [ROUNDS]   (default 7)
#   USER prepared by scripts/setup-rootless.sh; lazyagent-oci from build/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
user="$1"
rounds="${2:-7}"
uid="$(id -u "$user")"
home="$(getent passwd "$user" | cut -d: -f6)"
work="$home/bench-$$"
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
install -d -o "$uid" -m 0755 "$work" "$work/bin"
install -o "$uid" -m 0755 build/lazyagent-oci "$work/bin/lazyagent-oci"
cp -R seed config "$work/"
cp examples/patches/fix-add.json "$work/fix.json"
sed 's/^engine:$/engine:\n  warm: 1\n  accept_weaker_policy: true/' config/lazyagent.yaml >"$work/config/warm.yaml"
sed 's/^engine:$/engine:\n  accept_weaker_policy: true/' config/lazyagent.yaml >"$work/config/cold.yaml"
mkdir -p "$work/copy"
cp -R seed/. "$work/copy/"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))
for f in p["files"]: open(sys.argv[2]+"/"+f["path"],"w").write(f["content"])' examples/patches/fix-add.json "$work/copy"
chmod -R a+rX "$work/copy"
chown -R "$uid" "$work"

as_user() {
  (cd "$work" && runuser -u "$user" -- env -i HOME="$home" PATH="$work/bin:/usr/bin:/bin" \
    XDG_RUNTIME_DIR="/run/user/$uid" XDG_STATE_HOME="$work/state" "$@")
}
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || echo "failed: $*" >&2; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }

cold() { as_user lazyagent-oci test --config config/cold.yaml --patch fix.json --json; }
warm() { as_user lazyagent-oci test --config config/warm.yaml --patch fix.json --json; }
podman_run() {
  as_user podman run --rm --network none --cap-drop ALL --security-opt no-new-privileges \
    --uidmap 0:1:65536 --gidmap 0:1:65536 --read-only \
    --tmpfs /work:rw,nosuid,nodev,size=64m,mode=1777 --tmpfs /tmp:rw,nosuid,nodev,noexec,size=64m,mode=1777 \
    --ulimit nofile=1024:1024 --ulimit nproc=256:256 --memory 512m --pids-limit 256 \
    -v "$work/copy:/seed:ro,nosuid,nodev,noexec" localhost/lazyagent-sandbox:latest \
    /bin/sh -c 'cp -R /seed/. /work/ && cd /work && exec python3 -m unittest -v'
}

warm >/dev/null 2>&1 || true   # makes the first spare; warms the caches
sleep 2
declare -a C W P
for r in $(seq 1 "$rounds"); do
  case $((r % 3)) in
    0) C+=("$(ms cold)"); sleep 1; W+=("$(ms warm)"); P+=("$(ms podman_run)") ;;
    1) P+=("$(ms podman_run)"); C+=("$(ms cold)"); sleep 1; W+=("$(ms warm)") ;;
    2) sleep 1; W+=("$(ms warm)"); P+=("$(ms podman_run)"); C+=("$(ms cold)") ;;
  esac
done
sleep 2
as_user lazyagent-oci reap >/dev/null 2>&1 || true
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
driver="$(as_user podman info --format '{{.Store.GraphDriverName}}' 2>/dev/null)"
echo "user $user, storage $driver, $rounds rounds (medians, ms):"
echo "  lazyagent-oci test cold  $(median "${C[@]}")   (${C[*]})"
echo "  lazyagent-oci test warm  $(median "${W[@]}")   (${W[*]})"
echo "  podman run --rm          $(median "${P[@]}")   (${P[*]})"
