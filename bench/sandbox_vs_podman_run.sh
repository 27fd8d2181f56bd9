#!/usr/bin/env bash
# Benchmark: `lazyagent-oci test` on the demo seed, cold (a sandbox made for
# the run) and warm (engine.warm: 1, the run claims a spare made after the
# previous run's result), against two baselines of `podman run --rm` with the
# same image, copy and tests: "same flags" (our isolation: user namespace,
# seccomp profile, caps, tmpfs, limits) and "user flags" (what a user would
# type: --network none --read-only --cap-drop ALL --security-opt
# no-new-privileges --pids-limit --memory --tmpfs). Each round runs the four
# in a rotating order; REPS repetitions of PAIRS rounds. Reports the median
# per-round ratios per repetition. Before a warm run the previous run's
# refill is waited for, outside the timing (it runs after the result was
# printed, off the user's path; on 2 cores it would otherwise compete).
#
# usage: bench/sandbox_vs_podman_run.sh [PAIRS] [REPS]   (default 9 3, PAIRS >= 7)
# writes bench/results/sandbox-vs-podman-run.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pairs=${1:-9}
reps=${2:-3}
[ "$pairs" -ge 7 ] || { echo "need at least 7 pairs" >&2; exit 2; }

bin=build/lazyagent-oci
image=localhost/lazyagent-sandbox:latest
work=$(mktemp -d /tmp/lazyagent-bench-XXXXXX)
export XDG_STATE_HOME="$work/state"
cleanup() {
  [ -f "$XDG_STATE_HOME/lazyagent-oci/refill.lock" ] && flock "$XDG_STATE_HOME/lazyagent-oci/refill.lock" true
  "$bin" reap >/dev/null 2>&1 || true
  XDG_STATE_HOME="$work/cold-state" "$bin" reap >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
warm_config="$work/warm.yaml"
sed 's/^engine:$/engine:\n  warm: 1/' config/lazyagent.yaml > "$warm_config"
grep -q '^  warm: 1$' "$warm_config" || { echo "could not write the warm config" >&2; exit 1; }

# The baselines get the same private copy our tool makes: seed + fix.
mkdir -p "$work/copy"
cp -R seed/. "$work/copy/"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))
for f in p["files"]: open(sys.argv[2]+"/"+f["path"],"w").write(f["content"])' \
  examples/patches/fix-add.json "$work/copy"
# ... given to the sandbox's root, as ours is: same user namespace, same seccomp profile.
ns=1879048192  # config/lazyagent.yaml user_namespace.host_id
chown -R "$ns:$ns" "$work/copy"

same_flags() {
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

user_flags() {
  podman run --rm --network none --read-only --cap-drop ALL --security-opt no-new-privileges \
    --pids-limit 256 --memory 512m --tmpfs /work --label io.lazyagent.role=bench \
    -v "$work/copy:/seed:ro" "$image" \
    /bin/sh -c 'cp -R /seed/. /work/ && cd /work && exec python3 -m unittest -v' >/dev/null 2>&1
}

# Cold runs keep a run store of their own: a run claims any matching spare of
# its store (whatever engine.warm says), and the warm runs' store always holds one.
cold() {
  XDG_STATE_HOME="$work/cold-state" "$bin" test --seed seed --patch examples/patches/fix-add.json --json \
    2>/dev/null > "$work/cold.json"
}

warm() {
  "$bin" test --config "$warm_config" --seed seed --patch examples/patches/fix-add.json --json 2>/dev/null > "$work/warm.json"
}

# The previous warm run's refill (and the first spare) is ready before a warm run.
ready() {
  local lock="$XDG_STATE_HOME/lazyagent-oci/refill.lock"
  [ -f "$lock" ] && flock "$lock" true
  return 0
}

ms() { local t0 t1; t0=$(date +%s%N); "$@"; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }

# Warm-up: one of each (page cache, image layers, podman's caches), and the first spare.
same_flags; user_flags; cold
"$bin" warm --config "$warm_config" --seed seed --json >/dev/null
warm; ready
: > "$work/rows"
order=(cold warm same_flags user_flags)
for rep in $(seq 1 "$reps"); do
  for i in $(seq 1 "$pairs"); do
    declare -A t=()
    for k in 0 1 2 3; do
      f=${order[$(( (i + k) % 4 ))]}
      [ "$f" = warm ] && ready
      t[$f]=$(ms "$f")
    done
    ready
    python3 -c 'import json,sys
c=json.load(open(sys.argv[1])); w=json.load(open(sys.argv[2]))
assert c["tests_passed"] and w["tests_passed"], "a run did not pass"
assert "warm" in w, "the warm run did not claim a spare"
assert "warm" not in c, "the cold run claimed a spare"
print(json.dumps({"rep": int(sys.argv[3]), "cold": int(sys.argv[4]), "warm": int(sys.argv[5]),
  "same_flags": int(sys.argv[6]), "user_flags": int(sys.argv[7]), "cold_steps": c["timings"], "warm_steps": w["timings"]}))' \
      "$work/cold.json" "$work/warm.json" "$rep" "${t[cold]}" "${t[warm]}" "${t[same_flags]}" "${t[user_flags]}" >> "$work/rows"
    echo "rep $rep round $i: cold ${t[cold]} ms, warm ${t[warm]} ms, podman run same flags ${t[same_flags]} ms, user flags ${t[user_flags]} ms" >&2
    unset t
  done
done

python3 - "$work/rows" bench/results/sandbox-vs-podman-run <<'PY'
import json, statistics, sys, subprocess, datetime, os
rows = [json.loads(l) for l in open(sys.argv[1])]
med = statistics.median
reps = sorted({r["rep"] for r in rows})
def ratios(rs, a, b): return [r[a] / r[b] for r in rs]
per_rep = []
for rep in reps:
    rs = [r for r in rows if r["rep"] == rep]
    per_rep.append({"rep": rep, "rounds": len(rs),
      **{f"median_{k}_ms": med(r[k] for r in rs) for k in ("cold", "warm", "same_flags", "user_flags")},
      **{f"{a}_vs_{b}": round(med(ratios(rs, a, b)), 3) for a in ("warm", "cold") for b in ("same_flags", "user_flags")}})
steps = lambda key: {k: med(r[key][k] for r in rows) for k in rows[0][key]}
out = {
  "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
  "podman": subprocess.run(["podman", "--version"], capture_output=True, text=True).stdout.strip(),
  "load": os.getloadavg()[0],
  "rounds_per_rep": len(rows) // len(reps), "reps": len(reps),
  "per_rep": per_rep,
  "median_cold_step_ms": steps("cold_steps"), "median_warm_step_ms": steps("warm_steps"),
  "rows": rows,
}
json.dump(out, open(sys.argv[2] + ".json", "w"), indent=2)
md = [f"# lazyagent-oci test, cold and warm, vs podman run --rm ({out['date']}, {out['podman']}, "
      f"{out['reps']} repetitions of {out['rounds_per_rep']} rotating rounds, load {out['load']:.1f})", "",
      "Median per-round ratios (ours / podman run --rm); below 1 = faster than podman run.", "",
      "| rep | warm / same flags | warm / user flags | cold / same flags | cold / user flags | median ms: warm, cold, same, user |",
      "|---|---|---|---|---|---|"]
for p in per_rep:
    md.append(f"| {p['rep']} | **{p['warm_vs_same_flags']}** | **{p['warm_vs_user_flags']}** | {p['cold_vs_same_flags']} | "
              f"{p['cold_vs_user_flags']} | {p['median_warm_ms']}, {p['median_cold_ms']}, {p['median_same_flags_ms']}, {p['median_user_flags_ms']} |")
md += ["", "| step | cold median ms | warm median ms |", "|---|---|---|"]
cs, ws = out["median_cold_step_ms"], out["median_warm_step_ms"]
for k in cs: md.append(f"| {k} | {cs[k]} | {ws.get(k, '')} |")
open(sys.argv[2] + ".md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
