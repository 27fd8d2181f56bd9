#!/usr/bin/env bash
# Benchmark: gVisor's overhead. `lazyagent-oci test` of the demo seed with the
# fixing patch, through the CLI, under runc and under runsc, alternating
# (runc first in odd pairs, runsc first in even ones), N pairs. Reports the
# median of the per-pair ratios (runsc / runc) and each runtime's median per
# step. Needs scripts/setup.sh to have run (both podman services).
#
# usage: bench/runsc_vs_runc.sh [PAIRS]      (default 9, minimum 7)
# environment: LAZYAGENT_RUNSC_HOST=unix:///path  a runsc service elsewhere
# writes bench/results/runsc-vs-runc.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pairs=${1:-9}
[ "$pairs" -ge 7 ] || { echo "need at least 7 pairs" >&2; exit 2; }

bin=build/lazyagent-oci
work=$(mktemp -d /tmp/lazyagent-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"

# The same limits for both; runsc cannot enforce memory/pids/cpu, which the
# shipped config demands, so its runs accept the weaker policy explicitly.
one() {  # one RUNTIME -> writes $work/last-RUNTIME.json
  "$bin" test --seed seed --patch examples/patches/fix-add.json --runtime "$1" \
    --accept-weaker-policy --json 2>/dev/null >"$work/last-$1.json"
}

ms() { local t0 t1; t0=$(date +%s%N); "$@"; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }

# Warm-up: one of each (page cache, image layers, podman's caches).
one runc; one runsc
: >"$work/rows"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then a=$(ms one runc); b=$(ms one runsc); else b=$(ms one runsc); a=$(ms one runc); fi
  python3 -c 'import json,sys
rc, rs = (json.load(open(p)) for p in sys.argv[1:3])
for j, rt in ((rc, "runc"), (rs, "runsc")):
    assert j["tests_passed"] and j["policy"]["runtime"] == rt, rt + " run did not pass"
print(json.dumps({"runc": int(sys.argv[3]), "runsc": int(sys.argv[4]),
                  "steps_runc": rc["timings"], "steps_runsc": rs["timings"]}))' \
    "$work/last-runc.json" "$work/last-runsc.json" "$a" "$b" >>"$work/rows"
  echo "pair $i: runc ${a} ms, runsc ${b} ms" >&2
done

python3 - "$work/rows" bench/results/runsc-vs-runc <<'PY'
import json, os, statistics, sys, subprocess, datetime
rows = [json.loads(l) for l in open(sys.argv[1])]
ratios = [r["runsc"] / r["runc"] for r in rows]
def steps(key):
    return {k: statistics.median(r[key][k] for r in rows) for k in rows[0][key]}
ver = lambda *cmd: subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
out = {
  "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
  "podman": ver("podman", "--version"), "runc": ver("runc", "--version"), "runsc": ver("runsc", "--version"),
  "pairs": len(rows), "loadavg_1m_at_end": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
  "median_runc_ms": statistics.median(r["runc"] for r in rows),
  "median_runsc_ms": statistics.median(r["runsc"] for r in rows),
  "median_ratio": round(statistics.median(ratios), 3),
  "ratios": [round(x, 3) for x in ratios],
  "median_step_ms_runc": steps("steps_runc"), "median_step_ms_runsc": steps("steps_runsc"),
  "rows": rows,
}
json.dump(out, open(sys.argv[2] + ".json", "w"), indent=2)
sr, ss = out["median_step_ms_runc"], out["median_step_ms_runsc"]
md = [f"# lazyagent-oci test: runsc (gVisor) vs runc ({out['date']}, {out['podman']}, {out['runsc']}, {len(rows)} alternating pairs)", "",
      "Whole CLI runs of the demo seed with the fixing patch; runsc with --network=none --ignore-cgroups --oci-seccomp.",
      f"Load average at the end: {out['loadavg_1m_at_end']} on {out['cpus']} CPUs (absolute times depend on it; the ratio less).", "",
      "| | median wall ms |", "|---|---|",
      f"| `lazyagent-oci test --runtime runc` | {out['median_runc_ms']} |",
      f"| `lazyagent-oci test --runtime runsc` | {out['median_runsc_ms']} |",
      f"| **median of per-pair ratios (runsc / runc)** | **{out['median_ratio']}** |", "",
      "Per-pair ratios: " + ", ".join(str(x) for x in out["ratios"]), "",
      "| step | runc median ms | runsc median ms |", "|---|---|---|"] + \
     [f"| {k} | {sr[k]} | {ss.get(k, '')} |" for k in sr]
open(sys.argv[2] + ".md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
