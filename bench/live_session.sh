#!/usr/bin/env bash
# Benchmark: a live session (the default sessions.isolation): one command's
# round trip through `lazyagent-oci session exec ID -- CMD` (the CLI process,
# the session's lock and record, the exec into the session's sandbox, its
# persistent shell) against `podman exec` into that same sandbox (the same
# container: the same flags, user namespace, seccomp, limits), for `true` and
# for the seed's tests (python3 -m unittest). Each round runs the two in
# alternating order; ROUNDS rounds (default 9); medians and the ratio.
# Then `open` and `close` (OPENS rounds, default 3), and an idle session's
# memory (the sandbox's cgroup: its sleeping first process and the shell).
# The load average is read before and after: the machine is shared.
#
# usage: bench/live_session.sh [ROUNDS] [OPENS]
#   writes bench/results/live-session.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-9}
opens=${2:-3}
bin=build/lazyagent-oci
work=$(mktemp -d /tmp/lazyagent-bench-XXXXXX)
export XDG_STATE_HOME="$work/state"
sid=
cleanup() {
  [ -n "$sid" ] && "$bin" session close "$sid" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# open and close, then the session the rounds use.
declare -A all
for ((r = 0; r < opens; r++)); do
  t0=$(date +%s%N)
  id=$("$bin" session open --seed seed --json 2>/dev/null | field session_id)
  all[open]+="$((($(date +%s%N) - t0) / 1000000)) "
  all[close]+="$(ms "$bin" session close "$id") "
done
rec=$("$bin" session open --seed seed --json 2>/dev/null)
sid=$(field session_id <<<"$rec")
box=$(field sandbox <<<"$rec")
[ "$(field isolation <<<"$rec")" = live ] || { echo "the session is not live: $rec" >&2; exit 1; }

session_cmd() { "$bin" session exec "$sid" -- "$1"; }
exec_cmd() { podman exec -w /work "$box" /bin/sh -c "$1"; }
for cmd in "true" "python3 -m unittest"; do
  session_cmd "$cmd" >/dev/null 2>&1 || true  # the shell started: every round finds it running
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2)); then order=(exec session); else order=(session exec); fi
    for m in "${order[@]}"; do
      all["$cmd/$m"]+="$(ms "${m}_cmd" "$cmd" || true) "
    done
  done
done

# Idle: nothing running but the sandbox's first process and the shell.
sleep 2
idle=$(podman stats --no-stream --format '{{.MemUsage}}' "$box" | cut -d/ -f1 | tr -d ' ')
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p bench/results
ratio() { awk "BEGIN{printf \"%.2f\", $1/$2}"; }
{
  echo "# Live session round trip ($(date -u +%F), load $load_before before, $load_after after)"
  echo
  echo "Median of $rounds rounds, alternating order, ms:"
  echo
  echo "| command | session exec | podman exec (same sandbox) | ratio |"
  echo "|---|---|---|---|"
  for cmd in "true" "python3 -m unittest"; do
    s=$(echo "${all[$cmd/session]}" | median); e=$(echo "${all[$cmd/exec]}" | median)
    echo "| \`$cmd\` | $s | $e | $(ratio "$s" "$e") |"
  done
  echo
  echo "open: $(echo "${all[open]}" | median) ms, close: $(echo "${all[close]}" | median) ms (median of $opens);"
  echo "an idle session's sandbox: $idle of memory (podman stats)."
} >bench/results/live-session.md
python3 - "$rounds" "$idle" "$load_before" "$load_after" <<EOF >bench/results/live-session.json
import json, sys
raw = {$(for k in "${!all[@]}"; do printf '"%s": [%s],' "$k" "$(echo ${all[$k]} | tr ' ' ',')"; done)}
print(json.dumps({"rounds": int(sys.argv[1]), "idle_memory": sys.argv[2], "load_before": sys.argv[3],
                  "load_after": sys.argv[4], "ms": raw}, indent=1, sort_keys=True))
EOF
cat bench/results/live-session.md
