#!/usr/bin/env bash
# Benchmark: the planner's added start time with provider.network: allowlist
# (issue 31; README, "The planner's allow-list"): `lazyagent-oci run` against
# the scripted provider on this machine (every address, reached from the
# planner as host.containers.internal), ROUNDS alternating rounds of
# `bridge` and `allowlist`, the planner step's `planner.ms` (container, the
# proxy's network and squid start and removal included) of each run, with the
# load average.
#
# usage: bench/planner_allowlist.sh [ROUNDS]   (default 3)
# writes bench/results/planner-allowlist.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-3}
bin=${LAZYAGENT_BIN:-$PWD/build/lazyagent-oci}
work=$(mktemp -d /tmp/lazyagent-bench-allowlist-XXXXXX)
names="BENCH_$$_BASE_URL BENCH_$$_MODEL BENCH_$$_API_KEY"
stub_pid=
cleanup() {
  if [ -n "$stub_pid" ]; then kill "$stub_pid" 2>/dev/null; wait "$stub_pid" 2>/dev/null; fi
  for n in $names; do podman secret rm "$n" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# One fixing reply per run, in order.
python3 - "$work/script.json" "$((2 * rounds))" <<'PY'
import json, sys
fixed = open("seed/calculator.py").read().replace("return a - b\n\n\ndef subtract", "return a + b\n\n\ndef subtract", 1)
assert "return a + b" in fixed
reply = {"content": json.dumps({"files": [{"path": "calculator.py", "content": fixed}]})}
json.dump({"api_key": "bench-key-0123456789", "replies": [reply] * int(sys.argv[2])}, open(sys.argv[1], "w"))
PY
"$bin" provider-stub --script "$work/script.json" --listen 0.0.0.0:0 >"$work/stub.out" 2>&1 &
stub_pid=$!
for _ in $(seq 100); do grep -q '^listening on ' "$work/stub.out" && break; sleep 0.1; done
port=$(sed -n 's#^listening on http://[^:]*:\([0-9]*\)/v1$#\1#p' "$work/stub.out")
[ -n "$port" ] || { echo "the scripted provider did not start" >&2; exit 1; }
for mode in bridge allowlist; do
  sed "s#CODING_AGENT_#BENCH_$$_#; s#^seed: .*#seed: $PWD/seed#; s#^  network: bridge #  network: $mode #" \
    config/lazyagent.yaml >"$work/$mode.yaml"
  grep -q "^  network: $mode " "$work/$mode.yaml" || { echo "config/lazyagent.yaml: no provider.network line" >&2; exit 1; }
done
env "BENCH_$$_BASE_URL=http://127.0.0.1:$port/v1" "BENCH_$$_MODEL=lazyagent-stub" "BENCH_$$_API_KEY=bench-key-0123456789" \
  XDG_STATE_HOME="$work/state" "$bin" configure --config "$work/bridge.yaml" >/dev/null

one() {  # one MODE: prints planner.ms of one run; the run must pass
  local mode=$1 out
  out=$(XDG_STATE_HOME="$work/state" "$bin" run --config "$work/$mode.yaml" --json 2>"$work/$mode.err") || {
    echo "run ($mode) failed:" >&2; tail -5 "$work/$mode.err" >&2; exit 1; }
  printf '%s' "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["tests_passed"]; print(j["planner"]["ms"])'
}
bridge=() allowlist=() loads=()
for r in $(seq "$rounds"); do
  loads+=("$(cut -d' ' -f1 /proc/loadavg)")
  if [ $((r % 2)) -eq 1 ]; then
    bridge+=("$(one bridge)"); allowlist+=("$(one allowlist)")
  else
    allowlist+=("$(one allowlist)"); bridge+=("$(one bridge)")
  fi
  echo "round $r: bridge ${bridge[-1]} ms, allowlist ${allowlist[-1]} ms (load ${loads[-1]})" >&2
done

python3 - "$(nproc)" "${loads[*]}" "${bridge[*]}" "${allowlist[*]}" <<'PY'
import json, statistics, sys
cores, loads = sys.argv[1], sys.argv[2].split()
bridge = [int(x) for x in sys.argv[3].split()]
allow = [int(x) for x in sys.argv[4].split()]
added = [a - b for a, b in zip(allow, bridge)]
res = {"rounds": len(bridge), "cores": cores, "load_average_per_round": loads,
       "bridge_planner_ms": bridge, "allowlist_planner_ms": allow,
       "bridge_median_ms": statistics.median(bridge), "allowlist_median_ms": statistics.median(allow),
       "added_ms_median": statistics.median(added)}
json.dump(res, open("bench/results/planner-allowlist.json", "w"), indent=2)
with open("bench/results/planner-allowlist.md", "w") as f:
    f.write("# The planner's added start time with provider.network: allowlist\n\n")
    f.write("`bench/planner_allowlist.sh %d`: `run` against the scripted provider on this machine, alternating "
            "rounds; `planner.ms` (the planner step: container, and with `allowlist` the proxy's network and squid, "
            "start and removal). %s cores, load average per round %s.\n\n" % (len(bridge), cores, " ".join(loads)))
    f.write("| | samples (ms) | median ms |\n|---|---|---|\n")
    f.write("| bridge | %s | %s |\n" % (" ".join(map(str, bridge)), res["bridge_median_ms"]))
    f.write("| allowlist | %s | %s |\n" % (" ".join(map(str, allow)), res["allowlist_median_ms"]))
    f.write("| added (per round) | %s | %s |\n" % (" ".join(map(str, added)), res["added_ms_median"]))
print(json.dumps(res))
PY
