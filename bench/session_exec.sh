#!/usr/bin/env bash
# Benchmark: one command's round trip in a per-command session
# (sessions.isolation: per-command; bench/live_session.sh measures the
# default, live sessions) (`session exec`: a fresh sandbox per command over the session's working copy, created,
# verified, started, waited for, its logs read and the probe judged, removed)
# against the two other exec models with the same image and copy:
#   podman exec   into a long-lived container with the same hardening flags
#                 (the model a session could use instead: cheaper, but a
#                 process one command starts runs during the next)
#   podman run    `podman run --rm` with the same hardening flags, the copy
#                 bind-mounted read-write at /work
# for `true` and for the seed's tests (python3 -m unittest). Each round runs
# the three in a rotating order; ROUNDS rounds (default 20); medians reported.
# Then the memory an idle session holds: the run store's bytes for it (no
# process and no container exist between commands).
#
# usage: bench/session_exec.sh [ROUNDS]   writes bench/results/session-exec.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-20}
bin=build/lazyagent-oci
image=localhost/lazyagent-sandbox:latest
work=$(mktemp -d /tmp/lazyagent-bench-XXXXXX)
export XDG_STATE_HOME="$work/state"
ns=1879048192  # config/lazyagent.yaml user_namespace.host_id
long=lazyagent-bench-session-$$
sid=
cleanup() {
  [ -n "$sid" ] && "$bin" session close "$sid" >/dev/null 2>&1 || true
  podman rm -f "$long" >/dev/null 2>&1 || true
  "$bin" reap >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/copy"
cp -R seed/. "$work/copy/"
chown -R "$ns:$ns" "$work/copy"

flags=(--network none --cap-drop ALL --security-opt no-new-privileges
  --uidmap "0:$ns:65536" --gidmap "0:$ns:65536" --security-opt seccomp=oci/seccomp.json
  --read-only --read-only-tmpfs=false
  --tmpfs /tmp:rw,nosuid,nodev,noexec,size=64m,mode=1777
  --memory 512m --memory-swap 512m --pids-limit 256 --cpus 1
  --ulimit nofile=1024:1024 --ulimit nproc=256:256
  --log-driver k8s-file --log-opt max-size=1114112
  --hostname sandbox --unsetenv-all
  -e PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -e HOME=/work
  -e LANG=C.UTF-8 -e PYTHONDONTWRITEBYTECODE=1 -e PYTHONUNBUFFERED=1
  --label io.lazyagent.role=bench -w /work
  -v "$work/copy:/work:rw,nosuid,nodev")

podman run -d --name "$long" "${flags[@]}" "$image" sleep infinity >/dev/null
printf 'seed: %s\nsessions:\n  isolation: per-command\n' "$PWD/seed" >"$work/per-command.yaml"
sid=$("$bin" session open --config "$work/per-command.yaml" 2>/dev/null)

ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
session_cmd() { "$bin" session exec "$sid" -- "$1"; }
exec_cmd() { podman exec "$long" /bin/sh -c "$1"; }
run_cmd() { podman run --rm "${flags[@]}" "$image" /bin/sh -c "$1"; }

declare -A all
for cmd in "true" "python3 -m unittest"; do
  for ((r = 0; r < rounds; r++)); do
    order=(session exec run)
    for ((k = 0; k < r % 3; k++)); do order=("${order[@]:1}" "${order[0]}"); done
    for m in "${order[@]}"; do
      all["$cmd/$m"]+="$(ms "${m}_cmd" "$cmd") "
    done
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
# The idle session: its run store directory (two copies of the seed and a record).
idle_kb=$(du -sk "$XDG_STATE_HOME/lazyagent-oci/sessions/$sid" | cut -f1)
idle_containers=$(podman ps -a --filter "name=lazyagent-sandbox-$sid" -q | wc -l)

mkdir -p bench/results
{
  echo "# Session exec round trip (median of $rounds, rotating order), ms"
  echo
  echo "| command | session exec | podman exec (long-lived) | podman run --rm | session / exec | session / run |"
  echo "|---|---|---|---|---|---|"
  for cmd in "true" "python3 -m unittest"; do
    s=$(echo "${all[$cmd/session]}" | median); e=$(echo "${all[$cmd/exec]}" | median); r=$(echo "${all[$cmd/run]}" | median)
    echo "| \`$cmd\` | $s | $e | $r | $(awk "BEGIN{printf \"%.2f\", $s/$e}") | $(awk "BEGIN{printf \"%.2f\", $s/$r}") |"
  done
  echo
  echo "Idle session: ${idle_kb} KiB on disk in the run store, $idle_containers containers, no process."
} > bench/results/session-exec.md
python3 - "$rounds" "$idle_kb" <<EOF > bench/results/session-exec.json
import json, sys
raw = {$(for k in "${!all[@]}"; do printf '"%s": [%s],' "$k" "$(echo ${all[$k]} | tr ' ' ',')"; done)}
print(json.dumps({"rounds": int(sys.argv[1]), "idle_session_kib": int(sys.argv[2]), "ms": raw}, indent=1, sort_keys=True))
EOF
cat bench/results/session-exec.md
