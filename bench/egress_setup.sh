#!/usr/bin/env bash
# The environment set-up's time with the egress allow-list against without
# (README, Egress): each corpus environment built twice with `env build
# --rebuild`, once on the bridge and once with `egress: [<the Debian mirror>]`
# (the mirror read from this machine's apt sources, never written here), the
# `build_ms` of each printed with the load average. The images are removed
# afterwards; a marker input gives them keys of their own, so no image of the
# corpus tests is replaced.
#
# usage: bench/egress_setup.sh [BINARY] [NAME...]   (NAME: pytest go cmake cargo)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../build/lazyagent-oci}"
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(pytest go cmake cargo)
mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  grep -Ev '^[[:space:]]*#' | grep -Eo 'https?://[^/ ]+' | head -n 1 | sed -E 's#https?://##' || true)"
[ -n "$mirror" ] || { echo "no apt source found" >&2; exit 1; }
setup_of() {
  case "$1" in
    pytest) echo '[apt-get update, "apt-get install -y --no-install-recommends python3-pytest"]' ;;
    go) echo '[apt-get update, "apt-get install -y --no-install-recommends golang-go gcc libc6-dev"]' ;;
    cmake) echo '[apt-get update, "apt-get install -y --no-install-recommends cmake make gcc libc6-dev"]' ;;
    cargo) echo '[apt-get update, "apt-get install -y --no-install-recommends cargo"]' ;;
    *) echo "unknown environment $1" >&2; exit 2 ;;
  esac
}
work="$(mktemp -d)"
state="$(mktemp -d)"
trap 'rm -rf "$work" "$state"' EXIT
mkdir -p "$work/seed"
echo "bench-egress $(date +%s)" >"$work/seed/bench-marker.txt"
printf 'name\tallow-list\tbuild_ms\tload (1 5 15 min)\n'
for name in "${names[@]}"; do
  for mode in without with; do
    cfg="$work/$name-$mode.yaml"
    {
      echo "seed: $work/seed"
      echo "allow: [bench-marker.txt]"
      echo "environment:"
      echo "  setup: $(setup_of "$name")"
      echo "  inputs: [bench-marker.txt]"
      [ "$mode" = without ] || echo "  egress: [$mirror]"
    } >"$cfg"
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    out="$(XDG_STATE_HOME="$state" "$bin" env build --config "$cfg" --rebuild --json 2>/dev/null)"
    ms="$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["build_ms"])')"
    image="$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["image"])')"
    printf '%s\t%s\t%s\t%s\n' "$name" "$mode" "$ms" "$load"
    podman rmi -f "$image" >/dev/null 2>&1 || true
  done
done
