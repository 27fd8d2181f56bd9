#!/usr/bin/env bash
# The environment set-up's time with the egress allow-list against without
# (README, Egress): each environment built with `env build --rebuild`, once on
# the bridge and once with `egress:` listing the Debian mirror (read from this
# machine's apt sources, never written here), and for npm also the npm
# registry (`scripts/npm-registry-host.sh`); REPS alternating rounds. Each
# build's `build_ms` is printed with the load average, one line per build, and
# appended as a JSON line to $LAZYAGENT_BENCH_OUT when set. The images are
# removed afterwards; a marker input gives them keys of their own, so no image
# of the corpus tests is replaced.
#
# Environments (the corpus's set-ups, tests/corpus/corpus_test.cpp, and two more):
#   apt     apt-get install hello
#   pytest  python3-pytest from Debian's packages
#   go      golang-go gcc libc6-dev
#   cmake   cmake make gcc libc6-dev
#   cargo   cargo
#   npm     nodejs npm from Debian, then `npm install` of one small package
#           from the npm registry (the host's CA bundle given as an input,
#           README: a middlebox that re-signs TLS)
#
# usage: bench/egress_setup.sh [BINARY] [NAME...]   (default: apt pytest go cargo npm)
#        REPS=3 bench/egress_setup.sh ...           (default 1 round)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../build/lazyagent-oci}"
shift || true
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(apt pytest go cargo npm)
reps="${REPS:-1}"
mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  grep -Ev '^[[:space:]]*#' | grep -Eo 'https?://[^/ ]+' | head -n 1 | sed -E 's#https?://##' || true)"
[ -n "$mirror" ] || { echo "no apt source found" >&2; exit 1; }
registry=""
for name in "${names[@]}"; do
  [ "$name" = npm ] && registry="$("$here/../scripts/npm-registry-host.sh")"
done
setup_of() {
  case "$1" in
    apt) echo '[apt-get update, "apt-get install -y --no-install-recommends hello", hello]' ;;
    pytest) echo '[apt-get update, "apt-get install -y --no-install-recommends python3-pytest"]' ;;
    go) echo '[apt-get update, "apt-get install -y --no-install-recommends golang-go gcc libc6-dev"]' ;;
    cmake) echo '[apt-get update, "apt-get install -y --no-install-recommends cmake make gcc libc6-dev"]' ;;
    cargo) echo '[apt-get update, "apt-get install -y --no-install-recommends cargo"]' ;;
    npm) echo '[apt-get update, "apt-get install -y --no-install-recommends nodejs npm",
          "cd /lazyagent-env && NODE_EXTRA_CA_CERTS=/lazyagent-env/host-ca.pem npm install --no-audit --no-fund is-number@7.0.0"]' ;;
    *) echo "unknown environment $1" >&2; exit 2 ;;
  esac
}
egress_of() {
  if [ "$1" = npm ]; then echo "[$mirror, $registry]"; else echo "[$mirror]"; fi
}
work="$(mktemp -d)"
state="$(mktemp -d)"
trap 'rm -rf "$work" "$state"' EXIT
mkdir -p "$work/seed"
echo "bench-egress $(date +%s)" >"$work/seed/bench-marker.txt"
cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$work/seed/host-ca.pem"
printf 'name\tallow-list\tbuild_ms\tload (1 5 15 min)\n'
for rep in $(seq 1 "$reps"); do
  for name in "${names[@]}"; do
    for mode in without with; do
      cfg="$work/$name-$mode.yaml"
      {
        echo "seed: $work/seed"
        echo "allow: [bench-marker.txt]"
        echo "environment:"
        echo "  setup: $(setup_of "$name")"
        echo "  inputs: [bench-marker.txt, host-ca.pem]"
        [ "$mode" = without ] || echo "  egress: $(egress_of "$name")"
      } >"$cfg"
      load="$(cut -d' ' -f1-3 /proc/loadavg)"
      out="$(XDG_STATE_HOME="$state" "$bin" env build --config "$cfg" --rebuild --json 2>"$work/err")" || {
        echo "$name $mode: env build failed:" >&2; tail -n 20 "$work/err" >&2; exit 1; }
      ms="$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["build_ms"])')"
      image="$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["image"])')"
      printf '%s\t%s\t%s\t%s\n' "$name" "$mode" "$ms" "$load"
      if [ -n "${LAZYAGENT_BENCH_OUT:-}" ]; then
        printf '{"name":"%s","allow_list":"%s","rep":%s,"build_ms":%s,"load":"%s"}\n' \
          "$name" "$mode" "$rep" "$ms" "$load" >>"$LAZYAGENT_BENCH_OUT"
      fi
      podman rmi -f "$image" >/dev/null 2>&1 || true
    done
  done
done
