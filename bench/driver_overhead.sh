#!/usr/bin/env bash
# Benchmark: what the runner's own report costs per run (runner_driver.h).
# `lazyagent-oci test --no-baseline` of the demo seed with its fixing patch,
#   output:  config `report: output` (the verdict reads the text), against
#   driver:  the default `report: auto` (the seed's `python3 -m unittest -v`
#            runs through the tool's unittest driver, which writes a JUnit
#            report at its end; the wrapper prints it into the log; the
#            orchestrator parses it)
# alternating (output first in odd pairs), PAIRS pairs after one warm-up of
# each. Reports the median wall ms and `run` step ms of each side and the
# median of per-pair ratios (driver / output). Writes
# bench/results/driver-overhead.{md,json}.
#
# usage: bench/driver_overhead.sh [PAIRS]     (default 9)
#        LAZYAGENT_BIN=path bench/driver_overhead.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pairs=${1:-9}
[ "$pairs" -ge 3 ] || { echo "need at least 3 pairs" >&2; exit 2; }
bin=${LAZYAGENT_BIN:-build/lazyagent-oci}
[ -x "$bin" ] || { echo "build $bin first" >&2; exit 2; }
work=$(mktemp -d /tmp/lazyagent-bench-driver-XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"

python3 - "$PWD/seed/calculator.py" "$work/patch.json" <<'PY'
import json, sys
src = open(sys.argv[1]).read().replace("return a - b", "return a + b", 1)
json.dump({"files": [{"path": "calculator.py", "content": src}]}, open(sys.argv[2], "w"))
PY
printf 'report: output\n' >"$work/output.yaml"
printf 'report: auto\n' >"$work/driver.yaml"

one() {  # one run of side $1; prints "wall_ms run_ms evidence"
  local t0 t1
  t0=$(date +%s%N)
  "$bin" test --seed "$PWD/seed" --patch "$work/patch.json" --config "$work/$1.yaml" --no-baseline --json >"$work/out.json" 2>/dev/null
  t1=$(date +%s%N)
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
assert r["tests_passed"], r.get("reason")
run = [t["ms"] for t in r["timings"] if t["step"] == "run"] if isinstance(r["timings"], list) else [r["timings"]["run"]]
print(sys.argv[2], run[0], r["evidence"])' "$work/out.json" $(( (t1 - t0) / 1000000 ))
}

one output >/dev/null; one driver >/dev/null  # warm-up
: >"$work/rows"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then o=$(one output); d=$(one driver); else d=$(one driver); o=$(one output); fi
  echo "$o $d" >>"$work/rows"
done

mkdir -p bench/results
python3 - "$work/rows" "$pairs" "$(podman --version)" "$(cut -d' ' -f1 /proc/loadavg)" <<'PY'
import json, statistics, sys, datetime
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ow, orun, oev, dw, drun, dev = zip(*rows)
assert set(oev) == {"output"} and set(dev) == {"driver"}, (oev, dev)
ow, orun, dw, drun = ([int(x) for x in v] for v in (ow, orun, dw, drun))
ratio = statistics.median(d / o for d, o in zip(dw, ow))
run_ratio = statistics.median(d / o for d, o in zip(drun, orun))
now = datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"
res = {"date": now, "pairs": int(sys.argv[2]), "podman": sys.argv[3], "loadavg_end": float(sys.argv[4]),
       "output": {"wall_ms": ow, "run_ms": orun}, "driver": {"wall_ms": dw, "run_ms": drun},
       "median_wall_ms": {"output": statistics.median(ow), "driver": statistics.median(dw)},
       "median_run_ms": {"output": statistics.median(orun), "driver": statistics.median(drun)},
       "median_pair_ratio_wall": round(ratio, 3), "median_pair_ratio_run": round(run_ratio, 3)}
json.dump(res, open("bench/results/driver-overhead.json", "w"), indent=1)
md = f"""# The runner's own report: added time per run ({now}, {sys.argv[3]}, {sys.argv[2]} alternating pairs)

`lazyagent-oci test --no-baseline` of the demo seed with its fixing patch: `report: output`
(the text decides) against the default `report: auto` (the seed's `python3 -m unittest -v`
through the tool's unittest driver, its JUnit report printed into the log and parsed).
Load average at the end: {sys.argv[4]} on 2 CPUs.

| | output median ms | driver median ms | median per-pair ratio (driver / output) |
|---|---|---|---|
| whole command | {res['median_wall_ms']['output']} | {res['median_wall_ms']['driver']} | {res['median_pair_ratio_wall']} |
| `run` step (start to exit) | {res['median_run_ms']['output']} | {res['median_run_ms']['driver']} | {res['median_pair_ratio_run']} |
"""
open("bench/results/driver-overhead.md", "w").write(md)
print(md)
PY
