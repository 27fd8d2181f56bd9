#!/usr/bin/env bash
# Benchmark: one `lazyagent-oci run` on the local Kubernetes cluster
# (--backend k8s: planner Job, then ConfigMap + NetworkPolicy + sandbox Job
# under the gVisor no-network RuntimeClass) next to the same run on podman,
# alternating (k8s first in odd pairs, podman first in even ones), N pairs.
# The model is the project's scripted provider (examples/patches/fix-add.json).
# Reports medians of: the whole run (wall), the sandbox phase (k8s: the
# `sandbox` step = create ConfigMap/NetworkPolicy/Job, wait for the pod, read
# its log; podman: create+verify+run+logs+remove) and the planner phase, and
# the k8s/podman ratios of those medians.
#
# Needs: scripts/setup.sh (podman, images, build), scripts/k8s-cluster.sh start.
# usage: bench/k8s_vs_podman_sandbox.sh [PAIRS]     (default 7, minimum 5)
# writes bench/results/k8s-vs-podman-sandbox.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pairs=${1:-7}
[ "$pairs" -ge 5 ] || { echo "need at least 5 pairs" >&2; exit 2; }
bin=$PWD/build/lazyagent-oci
kubeconfig=$(scripts/k8s-cluster.sh status 2>/dev/null) || { echo "start the cluster: scripts/k8s-cluster.sh start" >&2; exit 2; }
host_ip=${LAZYAGENT_K8S_HOST_IP:-10.244.91.1}
work=$(mktemp -d /tmp/lazyagent-bench-k8s-XXXXXX)
export XDG_STATE_HOME="$work/state"
tag="LZBENCH$$"
secret="lazyagent-bench-provider-$$"
stub_pid=
cleanup() {
  [ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null || true
  for n in BASE_URL MODEL API_KEY; do podman secret rm "${tag}_$n" >/dev/null 2>&1 || true; done
  KUBECONFIG=$kubeconfig /var/cache/lazyagent-oci/k8s-cluster/bin/kubectl delete secret "$secret" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

python3 - "$work/script.json" "$((2 * pairs + 2))" <<'PY'
import json, sys
patch = json.load(open("examples/patches/fix-add.json"))
json.dump({"api_key": "bench-key", "replies": [{"content": json.dumps(patch)}] * int(sys.argv[2])}, open(sys.argv[1], "w"))
PY
"$bin" provider-stub --script "$work/script.json" --listen 0.0.0.0:0 >"$work/stub.out" 2>"$work/stub.err" &
stub_pid=$!
for _ in $(seq 50); do grep -q listening "$work/stub.out" && break; sleep 0.1; done
port=$(sed -n 's#.*:\([0-9]*\)/v1#\1#p' "$work/stub.out")
cat >"$work/config.yaml" <<EOF
seed: $PWD/seed
provider:
  secrets: {base_url: ${tag}_BASE_URL, model: ${tag}_MODEL, api_key: ${tag}_API_KEY}
k8s:
  secret: $secret
  plain_http_provider_ip: $host_ip
EOF
export "${tag}_BASE_URL=http://host.containers.internal:$port/v1" "${tag}_MODEL=stub" "${tag}_API_KEY=bench-key"
"$bin" configure --config "$work/config.yaml" >/dev/null
KUBECONFIG=$kubeconfig "$bin" configure --backend k8s --config "$work/config.yaml" >/dev/null

one() {  # one k8s|podman -> a JSON line {backend, wall_ms, sandbox_ms, plan_ms, passed}
  local b=$1 t0 t1 out
  t0=$(date +%s%N)
  if [ "$b" = k8s ]; then out=$(KUBECONFIG=$kubeconfig "$bin" run --backend k8s --config "$work/config.yaml" --json 2>/dev/null)
  else out=$("$bin" run --config "$work/config.yaml" --json 2>/dev/null); fi
  t1=$(date +%s%N)
  python3 -c '
import json, sys
r = json.loads(sys.argv[1]); t = r["timings"]
sandbox = sum(t.get(k, 0) for k in ("create", "verify", "run", "logs", "remove"))  # the same steps on both engines
print(json.dumps({"backend": sys.argv[2], "wall_ms": int(sys.argv[3]) // 1000000, "sandbox_ms": sandbox,
                  "plan_ms": t.get("plan", 0), "passed": r["tests_passed"]}))' "$out" "$b" "$((t1 - t0))"
}

: >"$work/rows.jsonl"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then one k8s >>"$work/rows.jsonl"; one podman >>"$work/rows.jsonl"
  else one podman >>"$work/rows.jsonl"; one k8s >>"$work/rows.jsonl"; fi
  echo "pair $i/$pairs done" >&2
done

mkdir -p bench/results
python3 - "$work/rows.jsonl" "$pairs" <<'PY'
import json, statistics, sys, datetime
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["passed"] for r in rows), "a run did not pass: " + json.dumps(rows)
med = {b: {k: statistics.median(r[k] for r in rows if r["backend"] == b) for k in ("wall_ms", "sandbox_ms", "plan_ms")}
       for b in ("k8s", "podman")}
ratio = {k: round(med["k8s"][k] / med["podman"][k], 2) for k in ("wall_ms", "sandbox_ms", "plan_ms")}
res = {"pairs": int(sys.argv[2]), "median_ms": med, "ratio_k8s_over_podman": ratio, "rows": rows,
       "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ")}
json.dump(res, open("bench/results/k8s-vs-podman-sandbox.json", "w"), indent=2)
md = ["# `run --backend k8s` (local cluster, gVisor no-network RuntimeClass) vs `run` on podman", "",
      f"{res['pairs']} alternating pairs, scripted provider, demo seed, {res['date']}. Medians in ms.", "",
      "| phase | k8s | podman | k8s / podman |", "|---|---|---|---|"]
for k, name in (("sandbox_ms", "sandbox (k8s: ConfigMap + NetworkPolicy + Job -> pod end -> log)"),
                ("plan_ms", "planner"), ("wall_ms", "whole run (wall)")):
    md.append(f"| {name} | {med['k8s'][k]:.0f} | {med['podman'][k]:.0f} | {ratio[k]} |")
open("bench/results/k8s-vs-podman-sandbox.md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
