#!/usr/bin/env bash
# Benchmark: `eval --jobs 2 --predictions` over a real project on the two
# backends, with the baseline (triage): PLY 3.11 from Debian's `ply` source
# package (scripts/debian-source.sh, ~1.5 MB, through the cluster's registry),
# a bug committed, TASKS SWE-bench predictions alternating the fix (as `git
# diff`) and a wrong fix. Rounds alternate which backend goes first. Each
# round also checks that both SWE-bench reports resolve the same instances.
#
# Needs: scripts/setup.sh, scripts/k8s-cluster.sh start (with its registry).
# usage: bench/eval_k8s_real_project.sh [ROUNDS] [TASKS]   (default 2 rounds, 4 tasks)
# writes bench/results/eval-k8s-real-project.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-2}
ntasks=${2:-4}
[ "$rounds" -ge 1 ] && [ "$ntasks" -ge 2 ] || { echo "need ROUNDS >= 1 and TASKS >= 2" >&2; exit 2; }
bin=$PWD/build/lazyagent-oci
kubeconfig=$(scripts/k8s-cluster.sh status 2>/dev/null) || { echo "start the cluster: scripts/k8s-cluster.sh start" >&2; exit 2; }
registry=$(scripts/k8s-registry.sh status 2>/dev/null) || { echo "the cluster's registry is not running" >&2; exit 2; }
src=$(scripts/debian-source.sh ply 2>/dev/null) || { echo "scripts/debian-source.sh ply failed" >&2; exit 2; }
work=$(mktemp -d /tmp/lazyagent-bench-evalply-XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"

# PLY with the bug committed; the fix and a wrong fix as git diffs.
cp -R "$src" "$work/ply" && rm -f "$work/ply/.lazyagent-source"
printf '*.pyc\n__pycache__/\ntest/parser.out\ntest/parsetab.py\ntest/lextab.py\n' >"$work/ply/.gitignore"
g() { git -C "$work/ply" -c user.name=bench -c user.email=bench@example.invalid "$@"; }
g init -q -b main && g add -A && g commit -qm "ply (Debian source package)"
sub() { python3 -c 'import sys; p=sys.argv[1]; s=open(p).read(); assert sys.argv[2] in s; open(p,"w").write(s.replace(sys.argv[2], sys.argv[3], 1))' "$work/ply/ply/yacc.py" "$1" "$2"; }
right='            return self.slice[n].value'
sub "$right" '            return self.slice[n - 1].value'
g commit -qam "yacc: an off-by-one"
sub '            return self.slice[n - 1].value' "$right" && g diff >"$work/fix.diff" && g checkout -q -- .
sub '            return self.slice[n - 1].value' $'            # looked at\n            return self.slice[n - 1].value' && g diff >"$work/wrong.diff" && g checkout -q -- .
python3 - "$work" "$ntasks" <<'PY'
import json, sys
w, n = sys.argv[1], int(sys.argv[2])
entry = {"seed": w + "/ply", "allow": ["ply/"],
         "test_command": "unset PYTHONDONTWRITEBYTECODE; cd test && python3 testlex.py -v && python3 testyacc.py -v"}
ids = [("fix-%d" if i % 2 == 0 else "wrong-%d") % i for i in range(n)]
with open(w + "/preds.jsonl", "w") as f:
    for i in ids:
        f.write(json.dumps({"instance_id": i, "model_patch": open(w + ("/fix.diff" if i.startswith("fix") else "/wrong.diff")).read()}) + "\n")
json.dump({i: entry for i in ids}, open(w + "/seeds.json", "w"))
PY
printf 'timeouts:\n  test_seconds: 400\npatch:\n  format: diff\n  max_files: 20\n  max_diff_bytes: 65536\n  max_changed_lines: 2000\nk8s:\n  registry: %s\n  registry_plain_http: true\n' \
  "$registry" >"$work/config.yaml"

now_ms() { date +%s%3N; }
one() {  # one BACKEND ROUND: prints wall ms; the report must resolve exactly the fixes
  local backend=$1 round=$2 out="$work/out-$1-$2" t0 t1
  local args=(eval --predictions "$work/preds.jsonl" --seed-map "$work/seeds.json" --config "$work/config.yaml"
              --jobs 2 --out "$out" --report "swebench:$out.report.json" --json --backend "$backend")
  [ "$backend" = k8s ] && args+=(--kubeconfig "$kubeconfig")
  rm -rf "$XDG_STATE_HOME"  # every round pays its own baseline
  t0=$(now_ms)
  "$bin" "${args[@]}" >"$out.json" 2>"$out.err" || { echo "eval on $backend failed:" >&2; tail -5 "$out.err" >&2; exit 1; }
  t1=$(now_ms)
  python3 - "$out.report.json" "$ntasks" <<'PY' || { echo "wrong verdicts on $backend" >&2; exit 1; }
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2])
want = sorted(("fix-%d" % i) for i in range(0, n, 2))
assert sorted(r["resolved_ids"]) == want and not r["error_ids"], r
for i, inst in r["instances"].items():
    if i.startswith("fix"): assert len(inst["tests_status"]["FAIL_TO_PASS"]["success"]) == 9, (i, inst)
    else: assert len(inst["tests_status"]["FAIL_TO_PASS"]["failure"]) == 9, (i, inst)
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
res = {"project": "PLY 3.11 (Debian source package ply)", "tasks": n, "jobs": 2, "baseline": True,
       "rounds": len(rows), "podman_wall_ms": [r[1] for r in rows], "k8s_wall_ms": [r[2] for r in rows],
       "median_podman_ms": p, "median_k8s_ms": k,
       "podman_tasks_per_min": round(n / (p / 60000), 2), "k8s_tasks_per_min": round(n / (k / 60000), 2),
       "median_ratio_k8s_over_podman": round(statistics.median(ratios), 2), "uptime": sys.argv[3].strip()}
json.dump(res, open("bench/results/eval-k8s-real-project.json", "w"), indent=2)
with open("bench/results/eval-k8s-real-project.md", "w") as f:
    f.write(f"# eval --jobs 2 --predictions over PLY ({n} predictions, with the baseline): podman vs Kubernetes\n\n")
    f.write("Both SWE-bench reports resolved exactly the fixes, 9 FAIL_TO_PASS each, in every round.\n\n")
    f.write("| backend | median wall ms | tasks/min |\n|---|---|---|\n")
    f.write(f"| podman (runc) | {p:.0f} | {res['podman_tasks_per_min']} |\n")
    f.write(f"| Kubernetes (Jobs, gVisor, seed through the registry) | {k:.0f} | {res['k8s_tasks_per_min']} |\n\n")
    f.write(f"Median per-round ratio k8s/podman: **{res['median_ratio_k8s_over_podman']}** "
            f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}). Load: {res['uptime']}\n")
print(open("bench/results/eval-k8s-real-project.md").read())
PY
