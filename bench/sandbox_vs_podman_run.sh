#!/usr/bin/env bash
# Benchmark: `lazyagent-oci test` on the demo seed against `podman run --rm`
# of the same image and tests with the same isolation flags, alternating
# (ABAB..., then BABA... so neither side always runs first), N pairs.
# Reports the median of the per-pair ratios (ours / podman run) and the
# median of our per-step timings. Needs scripts/setup.sh to have run.
#
# usage: bench/sandbox_vs_podman_run.sh [PAIRS]      (default 9, minimum 7)
# writes bench/results/sandbox-vs-podman-run.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pairs=${1:-9}
[ "$pairs" -ge 7 ] || { echo "need at least 7 pairs" >&2; exit 2; }

bin=build/lazyagent-oci
image=localhost/lazyagent-sandbox:latest
work=$(mktemp -d /tmp/lazyagent-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"

# The baseline gets the same private copy our tool makes: seed + fix.
mkdir -p "$work/copy"
cp -R seed/. "$work/copy/"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))
for f in p["files"]: open(sys.argv[2]+"/"+f["path"],"w").write(f["content"])' \
  examples/patches/fix-add.json "$work/copy"
# ... given to the sandbox's root, as ours is: same user namespace, same seccomp profile.
ns=1879048192  # config/lazyagent.yaml user_namespace.host_id
chown -R "$ns:$ns" "$work/copy"

baseline() {
  podman run --rm --network none --cap-drop ALL --security-opt no-new-privileges \
    --uidmap "0:$ns:65536" --gidmap "0:$ns:65536" --security-opt seccomp=oci/seccomp.json \
    --read-only --read-only-tmpfs=false \
    --tmpfs /work:rw,nosuid,nodev,size=64m,mode=1777 \
    --tmpfs /tmp:rw,nosuid,nodev,noexec,size=64m,mode=1777 \
    --memory 512m --memory-swap 512m --pids-limit 256 --cpus 1 \
    --ulimit nofile=1024:1024 --ulimit nproc=256:256 \
    --log-driver k8s-file --log-opt max-size=1114112 \
    --hostname sandbox --unsetenv-all \
    -e PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -e HOME=/work \
    -e LANG=C.UTF-8 -e PYTHONDONTWRITEBYTECODE=1 -e PYTHONUNBUFFERED=1 \
    --label io.lazyagent.role=bench \
    -v "$work/copy:/seed:ro,nosuid,nodev,noexec" "$image" \
    /bin/sh -c 'cp -R /seed/. /work/ && cd /work && exec python3 -m unittest -v' >/dev/null 2>&1
}

ours() {
  "$bin" test --seed seed --patch examples/patches/fix-add.json --json 2>/dev/null > "$work/last.json"
}

ms() { local t0 t1; t0=$(date +%s%N); "$@"; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }

# Warm-up: one of each (page cache, image layers, podman's caches).
baseline; ours
: > "$work/rows"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) -eq 1 ]; then a=$(ms ours); b=$(ms baseline); else b=$(ms baseline); a=$(ms ours); fi
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["tests_passed"], "our run did not pass"
print(json.dumps({"ours": int(sys.argv[2]), "podman_run": int(sys.argv[3]), "steps": j["timings"]}))' \
    "$work/last.json" "$a" "$b" >> "$work/rows"
  echo "pair $i: lazyagent-oci test ${a} ms, podman run --rm ${b} ms" >&2
done

python3 - "$work/rows" bench/results/sandbox-vs-podman-run <<'PY'
import json, statistics, sys, platform, subprocess, datetime
rows = [json.loads(l) for l in open(sys.argv[1])]
ratios = [r["ours"] / r["podman_run"] for r in rows]
steps = {k: statistics.median(r["steps"][k] for r in rows) for k in rows[0]["steps"]}
out = {
  "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
  "podman": subprocess.run(["podman", "--version"], capture_output=True, text=True).stdout.strip(),
  "pairs": len(rows),
  "median_ours_ms": statistics.median(r["ours"] for r in rows),
  "median_podman_run_ms": statistics.median(r["podman_run"] for r in rows),
  "median_ratio": round(statistics.median(ratios), 3),
  "ratios": [round(x, 3) for x in ratios],
  "median_step_ms": steps,
  "rows": rows,
}
json.dump(out, open(sys.argv[2] + ".json", "w"), indent=2)
md = [f"# lazyagent-oci test vs podman run --rm ({out['date']}, {out['podman']}, {len(rows)} alternating pairs)", "",
      "| | median wall ms |", "|---|---|",
      f"| `lazyagent-oci test` (whole CLI: validate, copy, create, verify, run, logs, remove, record) | {out['median_ours_ms']} |",
      f"| `podman run --rm`, same image, tests and isolation flags | {out['median_podman_run_ms']} |",
      f"| **median of per-pair ratios** | **{out['median_ratio']}** |", "",
      "Per-pair ratios: " + ", ".join(str(x) for x in out["ratios"]), "",
      "| step | median ms |", "|---|---|"] + [f"| {k} | {v} |" for k, v in steps.items()]
open(sys.argv[2] + ".md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
