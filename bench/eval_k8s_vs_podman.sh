#!/usr/bin/env bash
# Benchmark: `lazyagent-oci eval --jobs 2` over the same patch tasks on the two
# backends: podman (this host's service, runc) and Kubernetes (the local
# one-node cluster, sandbox Jobs under the gVisor no-network RuntimeClass).
# Tasks: the demo seed, half fixing, half wrong (examples/patches). Both sides
# judge by the exit code and the isolation probe (--no-baseline: the k8s
# backend has no baseline run). Rounds alternate which backend goes first; the
# figure is the median of the per-round ratios of k8s wall time to podman wall
# time (how many times slower the cluster is here).
#
# Needs: scripts/setup.sh, scripts/k8s-cluster.sh start.
# usage: bench/eval_k8s_vs_podman.sh [ROUNDS] [TASKS]     (default 3 rounds, 10 tasks)
# writes bench/results/eval-k8s-vs-podman.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-3}
ntasks=${2:-10}
[ "$rounds" -ge 1 ] && [ "$ntasks" -ge 2 ] || { echo "need ROUNDS >= 1 and TASKS >= 2" >&2; exit 2; }
bin=$PWD/build/lazyagent-oci
kubeconfig=$(scripts/k8s-cluster.sh status 2>/dev/null) || { echo "start the cluster: scripts/k8s-cluster.sh start" >&2; exit 2; }
work=$(mktemp -d /tmp/lazyagent-bench-evalk8s-XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"

python3 bench/tasks.py "$work/tasks.jsonl" "$ntasks" "$PWD/seed"

now_ms() { date +%s%3N; }
one() {  # one BACKEND ROUND: prints wall ms; the summary must be right
  local backend=$1 round=$2 out="$work/out-$1-$2" t0 t1
  local args=(eval "$work/tasks.jsonl" --jobs 2 --out "$out" --no-baseline --json)
  [ "$backend" = k8s ] && args+=(--backend k8s --kubeconfig "$kubeconfig")
  t0=$(now_ms)
  "$bin" "${args[@]}" >"$out.json" 2>"$out.err" || { echo "eval on $backend failed:" >&2; tail -5 "$out.err" >&2; exit 1; }
  t1=$(now_ms)
  python3 - "$out.json" "$ntasks" <<'PY' || { echo "wrong verdicts on $backend" >&2; exit 1; }
import json, sys
s = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert s["passed"]["count"] == (n + 1) // 2 and s["failed"]["count"] == n // 2, s
PY
  echo $((t1 - t0))
}

: >"$work/rows"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then k=$(one k8s "$r"); p=$(one podman "$r"); else p=$(one podman "$r"); k=$(one k8s "$r"); fi
  echo "$r $p $k" >>"$work/rows"
  echo "round $r: podman ${p} ms, k8s ${k} ms" >&2
done

mkdir -p bench/results
python3 - "$work/rows" "$ntasks" "$(uptime)" <<'PY'
import json, statistics, sys
rows = [tuple(int(x) for x in l.split()) for l in open(sys.argv[1]) if l.strip()]
n = int(sys.argv[2])
p = statistics.median(r[1] for r in rows); k = statistics.median(r[2] for r in rows)
ratios = [r[2] / r[1] for r in rows]
res = {"tasks": n, "jobs": 2, "rounds": len(rows), "podman_wall_ms": rows and [r[1] for r in rows],
       "k8s_wall_ms": [r[2] for r in rows], "median_podman_ms": p, "median_k8s_ms": k,
       "podman_tasks_per_s": round(n / (p / 1000), 2), "k8s_tasks_per_s": round(n / (k / 1000), 2),
       "median_ratio_k8s_over_podman": round(statistics.median(ratios), 2), "uptime": sys.argv[3].strip()}
json.dump(res, open("bench/results/eval-k8s-vs-podman.json", "w"), indent=2)
with open("bench/results/eval-k8s-vs-podman.md", "w") as f:
    f.write(f"# eval --jobs 2 over {n} patch tasks: podman vs Kubernetes (local one-node cluster)\n\n")
    f.write("| backend | median wall ms | tasks/s |\n|---|---|---|\n")
    f.write(f"| podman (runc) | {p:.0f} | {res['podman_tasks_per_s']} |\n")
    f.write(f"| Kubernetes (Jobs, gVisor no-network RuntimeClass) | {k:.0f} | {res['k8s_tasks_per_s']} |\n\n")
    f.write(f"Median per-round ratio k8s/podman: **{res['median_ratio_k8s_over_podman']}** "
            f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}). Load: {res['uptime']}\n")
print(open("bench/results/eval-k8s-vs-podman.md").read())
PY
