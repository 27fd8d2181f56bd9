#!/usr/bin/env bash
# Benchmark: what running the baseline before the planner (planner.baseline_first,
# issue 16) adds to `run`. The baseline ran anyway (after the patch, for the
# triage); first, it also informs the planner. Each round runs the demo seed
# (`seed/`, the bundled scripted provider with the demo script, the real
# planner container and sandbox) once with baseline_first true and once false,
# each in a fresh run store (so neither finds the baseline cached), in
# alternating order. Prints the median wall ms of each and the difference.
#
# usage: bench/baseline_first.sh [ROUNDS]   (default 5)
#   LAZYAGENT_BENCH_PLANNER_IMAGE=IMAGE uses that planner image instead of the config's
# writes bench/results/baseline-first.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib.sh  # start_demo_stub, demo_config
rounds=${1:-5}
[ "$rounds" -ge 1 ] || { echo "need ROUNDS >= 1" >&2; exit 2; }
bin=${LAZYAGENT_BIN:-$PWD/build/lazyagent-oci}
work=$(mktemp -d /tmp/lazyagent-bench-bf-XXXXXX)
prefix="LAZYAGENT_BENCH_BF_$$"
stub_pid=
cleanup() {
  if [ -n "$stub_pid" ]; then kill "$stub_pid" 2>/dev/null || true; wait "$stub_pid" 2>/dev/null || true; fi
  for s in "${prefix}_BASE_URL" "${prefix}_MODEL" "${prefix}_API_KEY"; do "$bin" secret delete "$s" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

start_demo_stub "$bin" "$work" || exit 5
port=$stub_port
demo_config "$prefix" "${LAZYAGENT_BENCH_PLANNER_IMAGE:-}" >"$work/base.yaml"
key=$(python3 -c 'import json; print(json.load(open("examples/provider-stub/demo-script.json"))["api_key"])')
env "${prefix}_BASE_URL=http://host.containers.internal:$port/v1" "${prefix}_MODEL=lazyagent-stub" \
  "${prefix}_API_KEY=$key" "$bin" configure --config "$work/base.yaml" >/dev/null
for mode in true false; do
  { cat "$work/base.yaml"; printf '\nplanner:\n  baseline_first: %s\n' "$mode"; } >"$work/$mode.yaml"
done

now_ms() { date +%s%3N; }
one() {  # one MODE ROUND: prints wall ms of one run in a fresh store; it must pass
  local mode=$1 n=$2 t0 t1
  mkdir -p "$work/state-$mode-$n"
  t0=$(now_ms)
  XDG_STATE_HOME="$work/state-$mode-$n" "$bin" run --config "$work/$mode.yaml" --json >"$work/$mode-$n.json" 2>"$work/$mode-$n.err" ||
    { echo "run (baseline_first $mode) failed:" >&2; tail -5 "$work/$mode-$n.err" >&2; exit 1; }
  t1=$(now_ms)
  echo $((t1 - t0))
}
one true warm >/dev/null  # images and caches warm
first=() second=()
for i in $(seq 1 "$rounds"); do
  if [ $((i % 2)) -eq 1 ]; then first+=("$(one true "$i")"); second+=("$(one false "$i")")
  else second+=("$(one false "$i")"); first+=("$(one true "$i")"); fi
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
mt=$(median "${first[@]}"); mf=$(median "${second[@]}")
mkdir -p bench/results
cat >bench/results/baseline-first.json <<JSON
{"rounds": $rounds, "baseline_first_ms": [$(IFS=,; echo "${first[*]}")], "after_patch_ms": [$(IFS=,; echo "${second[*]}")],
 "median_baseline_first_ms": $mt, "median_after_patch_ms": $mf, "added_ms": $((mt - mf))}
JSON
{
  echo "# run: the baseline before the planner vs after the patch"
  echo
  echo "$(date -u +%F), $(nproc) cores, $rounds rounds, demo seed, scripted provider, a fresh run store each run."
  echo
  echo "| order | median ms | runs (ms) |"
  echo "|---|---|---|"
  echo "| baseline first (planner.baseline_first: true) | $mt | ${first[*]} |"
  echo "| after the patch (false) | $mf | ${second[*]} |"
  echo
  echo "Added by the baseline-first order: $((mt - mf)) ms (median difference)."
} >bench/results/baseline-first.md
cat bench/results/baseline-first.md
