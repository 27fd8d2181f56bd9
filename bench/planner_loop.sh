#!/usr/bin/env bash
# Benchmark: the planner's added time per tool-loop turn (issue 16), apart from
# the model's own time. `lazyagent-oci plan` runs on the host (the same code
# the planner container runs) against the scripted provider on loopback, over
# a generated project of FILES files: one-shot (planner.tools off: one request)
# against the loop (TURNS requests: TURNS-2 read_file calls, a search, then
# submit_patch). The figure: (loop ms - one-shot ms) / (TURNS - 1), the median
# over ROUNDS alternating rounds, and the ratio loop / one-shot.
#
# usage: bench/planner_loop.sh [ROUNDS] [TURNS] [FILES]   (default 7 rounds, 8 turns, 300 files)
# writes bench/results/planner-loop.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-7}
turns=${2:-8}
nfiles=${3:-300}
[ "$rounds" -ge 1 ] && [ "$turns" -ge 3 ] && [ "$nfiles" -ge 1 ] || { echo "need ROUNDS >= 1, TURNS >= 3, FILES >= 1" >&2; exit 2; }
bin=${LAZYAGENT_BIN:-$PWD/build/lazyagent-oci}
work=$(mktemp -d /tmp/lazyagent-bench-loop-XXXXXX)
stub_pid=
cleanup() { if [ -n "$stub_pid" ]; then kill "$stub_pid" 2>/dev/null; wait "$stub_pid" 2>/dev/null; fi; rm -rf "$work"; }
trap cleanup EXIT

python3 - "$work" "$turns" "$nfiles" <<'PY'
import json, os, sys
work, turns, nfiles = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seed = os.path.join(work, "seed")
os.makedirs(os.path.join(seed, "pkg"))
os.makedirs(os.path.join(seed, "zzz"))
for i in range(nfiles):
    with open(os.path.join(seed, "pkg", "mod_%04d.py" % i), "w") as f:
        f.write('"""Module %d."""\n\n\ndef value_%d():\n    return %d\n' % (i, i, i))
target = '"""The module to fix."""\n\n\ndef add(a, b):\n    return a - b\n'
with open(os.path.join(seed, "zzz", "target.py"), "w") as f:
    f.write(target)
diff = ("--- a/zzz/target.py\n+++ b/zzz/target.py\n@@ -2,4 +2,4 @@\n \n \n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n")
def call(name, args):
    return {"name": name, "arguments": args}
replies = [{"match": "one-shot", "content": diff}]
for i in range(turns - 2):
    replies.append({"tool_calls": [call("read_file", {"path": "pkg/mod_%04d.py" % (i % nfiles)})]})
replies.append({"tool_calls": [call("search", {"regex": "def add", "glob": "*.py"})]})
replies.append({"tool_calls": [call("submit_patch", {"diff": diff})]})
json.dump({"api_key": "bench-key-0123456789", "replies": replies}, open(os.path.join(work, "script.json"), "w"))
def task(tools, instruction):
    return {"task_id": "t-bench", "instruction": instruction, "test_command": "python3 -m unittest",
            "files": [{"path": "zzz/target.py", "content": target, "editable": True}], "skipped": [],
            "contract": {"allow": ["zzz/target.py"], "max_files": 10, "max_bytes": 100000, "format": "diff"},
            "provider": {"connect_timeout_ms": 5000, "timeout_ms": 30000, "max_retries": 0, "response_format": "none"},
            "loop": {"tools": tools, "max_turns": turns + 1, "tool_result_bytes": 16384, "loop_seconds": 300,
                     "tool_choice": "auto", "max_reply_tokens": 0, "max_tokens": 0}}
json.dump(task(False, "Fix add (one-shot)."), open(os.path.join(work, "oneshot.json"), "w"))
json.dump(task(True, "Fix add."), open(os.path.join(work, "loop.json"), "w"))
PY

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The scripted replies are in order: each loop round gets a fresh stub (in
# this shell, not in one()'s subshell, so that cleanup knows its pid).
start_stub() {
  if [ -n "$stub_pid" ]; then kill "$stub_pid" 2>/dev/null || true; wait "$stub_pid" 2>/dev/null || true; fi
  "$bin" provider-stub --script "$work/script.json" --listen "127.0.0.1:$port" >"$work/stub.log" 2>&1 &
  stub_pid=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/v1/models" && return 0; sleep 0.1; done
  echo "the scripted provider did not start" >&2; exit 1
}
start_stub
mkdir -p "$work/secrets"
printf 'http://127.0.0.1:%s/v1' "$port" >"$work/secrets/base_url"
printf 'bench-model' >"$work/secrets/model"
printf 'bench-key-0123456789' >"$work/secrets/api_key"

now_ms() { date +%s%3N; }
one() {  # one MODE: prints wall ms of one plan; the patch must come out
  local mode=$1 t0 t1
  t0=$(now_ms)
  "$bin" plan --task "$work/$mode.json" --secrets-dir "$work/secrets" --snapshot "$work/seed" \
    >"$work/$mode.out" 2>"$work/$mode.err" || { echo "plan ($mode) failed:" >&2; tail -5 "$work/$mode.err" >&2; exit 1; }
  t1=$(now_ms)
  grep -q '^+    return a + b' "$work/$mode.out" || { echo "plan ($mode) gave no patch" >&2; exit 1; }
  if [ "$mode" = loop ] && ! grep -q "loop: $turns turn(s)" "$work/$mode.err"; then
    echo "the loop did not take $turns turns:" >&2; tail -5 "$work/$mode.err" >&2; exit 1
  fi
  echo $((t1 - t0))
}

one_ms=() loop_ms=()
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    one_ms+=("$(one oneshot)"); loop_ms+=("$(one loop)"); start_stub
  else
    loop_ms+=("$(one loop)"); start_stub; one_ms+=("$(one oneshot)")
  fi
done

python3 - "$turns" "$nfiles" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "${one_ms[*]}" "${loop_ms[*]}" <<'PY'
import json, statistics, sys
turns, nfiles, cores, load = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
one = [int(x) for x in sys.argv[5].split()]
loop = [int(x) for x in sys.argv[6].split()]
per_turn = [(l - o) / (turns - 1) for o, l in zip(one, loop)]
res = {"turns": turns, "files": nfiles, "rounds": len(one), "cores": cores, "load_average": load,
       "one_shot_ms": one, "loop_ms": loop,
       "one_shot_median_ms": statistics.median(one), "loop_median_ms": statistics.median(loop),
       "added_ms_per_turn_median": round(statistics.median(per_turn), 1),
       "ratio_loop_to_one_shot": round(statistics.median(l / o for o, l in zip(one, loop)), 2)}
json.dump(res, open("bench/results/planner-loop.json", "w"), indent=2)
with open("bench/results/planner-loop.md", "w") as f:
    f.write("# The planner's tool loop: added time per turn\n\n")
    f.write("`bench/planner_loop.sh %d %d %d`: `lazyagent-oci plan` on the host against the scripted provider on "
            "loopback (no model time), a project of %d files; one-shot = 1 request, loop = %d requests "
            "(read_file x%d, search, submit_patch). %s cores, load average %s.\n\n" %
            (len(one), turns, nfiles, nfiles, turns, turns - 2, cores, load))
    f.write("| | median ms |\n|---|---|\n")
    f.write("| one-shot | %s |\n| loop (%d turns) | %s |\n" % (res["one_shot_median_ms"], turns, res["loop_median_ms"]))
    f.write("| added per turn | %s |\n| ratio loop / one-shot | %s |\n" % (res["added_ms_per_turn_median"], res["ratio_loop_to_one_shot"]))
print(json.dumps(res))
PY
