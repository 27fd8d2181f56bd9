#!/usr/bin/env bash
# Benchmark: the corpus's projects (tests/corpus/) in their environments.
# Per project (the upstream tree of its Debian source package, a git
# repository, its tests passing):
#   env cold    `env build --rebuild`: the set-up container from the base image,
#               apt-get update + install, the commit (the environment's build_ms)
#   env cached  `env build`: the key computed, the image found (wall time)
#   snapshot, copy   the result's step timings of `test --no-baseline` with a
#               one-line patch (a comment added)
#   sandbox run the result's `run` step: start, the tests, exit (network none,
#               read-only root, the isolation probe first)
#   bare        the same test command run on the host, in a copy, with
#               Debian's toolchains (python3-pytest, golang-go, cmake + gcc,
#               cargo: this script installs Go and Rust, scripts/setup.sh the rest), no container, in a
#               fresh HOME and TMPDIR each round like the sandbox's (so Go's
#               build cache and Cargo's home start empty in both)
# ROUNDS rounds of the cached/test/bare parts (medians); the cold build once per
# round too (each a full apt-get install from the mirror). Writes
# bench/results/corpus-env.{md,json}.
#
# usage: bench/corpus_env.sh [ROUNDS]        (default 5)
#        LAZYAGENT_BIN=path bench/corpus_env.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-5}
bin=${LAZYAGENT_BIN:-build/lazyagent-oci}
[ -x "$bin" ] || { echo "build $bin first" >&2; exit 2; }
/usr/bin/python3 -m pytest --version >/dev/null 2>&1 || { echo "python3-pytest is missing (scripts/setup.sh installs it)" >&2; exit 2; }
# The bare host runs need Go and Rust, which nothing else here does: installed
# here, from Debian's archive, not by every set-up.
if [ ! -x /usr/bin/go ] || [ ! -x /usr/bin/cargo ]; then
  echo "==> installing golang-go and cargo for the bare host runs" >&2
  apt-get install -y -q --no-install-recommends golang-go cargo >&2
fi
for t in /usr/bin/go /usr/bin/cargo /usr/bin/cmake /usr/bin/ctest /usr/bin/gcc; do
  [ -x "$t" ] || { echo "$t is missing (scripts/setup.sh installs cmake and build-essential)" >&2; exit 2; }
done
work=$(mktemp -d /tmp/lazyagent-bench-corpus-XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"

# name | Debian source package | file to patch | its comment | allow | test
# command | packages the environment installs | limits (tests/corpus/corpus_test.cpp)
projects=(
  "python-ordered-set|python-ordered-set|ordered_set/__init__.py|# lazyagent bench|ordered_set/|python3 -m pytest -v -p no:cacheprovider|python3-pytest|{}"
  "python-hashids|python-hashids|hashids.py|# lazyagent bench|hashids.py|python3 -m pytest -v -p no:cacheprovider test|python3-pytest|{}"
  "golang-github-google-uuid|golang-github-google-uuid|uuid.go|// lazyagent bench|uuid.go|go test -v ./...|golang-go gcc libc6-dev|{work_tmpfs_mib: 256, memory_mib: 1024}"
  "cjson|cjson|cJSON.c|/* lazyagent bench */|cJSON.c|cmake -S . -B \"\$TMPDIR/build\" && cmake --build \"\$TMPDIR/build\" -j2 && ctest --test-dir \"\$TMPDIR/build\"|cmake make gcc libc6-dev|{work_tmpfs_mib: 128}"
  "rust-fnv|rust-fnv|lib.rs|// lazyagent bench|lib.rs|cargo test --offline --no-fail-fast|cargo|{work_tmpfs_mib: 256, memory_mib: 1024}"
)

ms() { date +%s%3N; }
results="$work/results.jsonl"
for p in "${projects[@]}"; do
  IFS='|' read -r name pkg file comment allow cmd packages limits <<<"$p"
  src=$(scripts/debian-source.sh "$pkg")
  repo="$work/$name"
  cp -r "$src" "$repo" && rm -f "$repo/.lazyagent-source"
  git -C "$repo" init -q -b main && git -C "$repo" add -A
  git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -qm upstream
  printf '\n%s\n' "$comment" >> "$repo/$file"
  git -C "$repo" diff > "$work/$name.diff" && git -C "$repo" checkout -q .
  cat > "$work/$name.yaml" <<EOF
seed: $repo
allow: [$allow]
test_command: $cmd
patch: {format: diff}
limits: $limits
environment:
  setup: [apt-get update, "apt-get install -y --no-install-recommends $packages"]
EOF
  for r in $(seq 1 "$rounds"); do
    cold=$("$bin" env build --config "$work/$name.yaml" --rebuild --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["build_ms"])')
    t0=$(ms); "$bin" env build --config "$work/$name.yaml" --json >/dev/null 2>&1; cached=$(( $(ms) - t0 ))
    "$bin" test --config "$work/$name.yaml" --patch "$work/$name.diff" --no-baseline --json 2>/dev/null > "$work/r.json"
    rm -rf "$work/bare" && cp -r "$repo" "$work/bare"
    rm -rf "$work/home" && mkdir -p "$work/home/tmp"
    t0=$(ms)
    (cd "$work/bare" && env -i PATH=/usr/bin:/bin HOME="$work/home" TMPDIR="$work/home/tmp" LANG=C.UTF-8 \
       PYTHONDONTWRITEBYTECODE=1 /bin/sh -c "$cmd" >"$work/bare.log" 2>&1) ||
      { tail -20 "$work/bare.log" >&2; echo "$name: the tests failed bare on the host" >&2; exit 1; }
    bare=$(( $(ms) - t0 ))
    python3 - "$name" "$cold" "$cached" "$bare" "$work/r.json" >> "$results" <<'PY'
import json, sys
name, cold, cached, bare, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
r = json.load(open(path))
assert r["status"] == "passed", r.get("reason")
t = r["timings"]
print(json.dumps({"project": name, "env_cold_ms": cold, "env_cached_ms": cached, "snapshot_ms": t["snapshot"],
                  "copy_ms": t["copy"], "sandbox_run_ms": t["run"], "bare_ms": bare}))
PY
  done
done
# The environment images stay: they are the corpus's cache too (tests/corpus/, the same keys).

python3 - "$results" "$rounds" <<'PY'
import json, statistics, sys, datetime, os
rows = [json.loads(l) for l in open(sys.argv[1])]
rounds = int(sys.argv[2])
keys = ["env_cold_ms", "env_cached_ms", "snapshot_ms", "copy_ms", "sandbox_run_ms", "bare_ms"]
out = {"rounds": rounds, "date": datetime.date.today().isoformat(), "load": os.getloadavg()[0], "projects": {}}
md = ["# Corpus projects in their environments (bench/corpus_env.sh)", "",
      f"{rounds} rounds, medians in ms; load average at the end {out['load']:.1f} (2 cores shared).", "",
      "| project | env cold | env cached | snapshot | copy | tests in the sandbox (`run`) | tests bare on the host | sandbox / bare |",
      "|---|---|---|---|---|---|---|---|"]
for name in dict.fromkeys(r["project"] for r in rows):
    mine = [r for r in rows if r["project"] == name]
    med = {k: statistics.median(r[k] for r in mine) for k in keys}
    ratio = statistics.median(r["sandbox_run_ms"] / max(1, r["bare_ms"]) for r in mine)
    out["projects"][name] = dict(med, ratio=ratio)
    md.append(f"| {name} | {med['env_cold_ms']:.0f} | {med['env_cached_ms']:.0f} | {med['snapshot_ms']:.0f} | "
              f"{med['copy_ms']:.0f} | {med['sandbox_run_ms']:.0f} | {med['bare_ms']:.0f} | {ratio:.2f}x |")
md += ["", "env cold: a fresh set-up container, `apt-get update` and the install from the mirror, the commit.",
       "env cached: `env build` finding the image (the key is computed from the base image's id and the inputs).",
       "tests in the sandbox: the `run` step (start, the isolation probe, the tests, exit); bare: the same command",
       "on the host with Debian's toolchains, in a copy of the tree, a fresh HOME and TMPDIR (caches start empty in both)."]
open("bench/results/corpus-env.json", "w").write(json.dumps(out, indent=2) + "\n")
open("bench/results/corpus-env.md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
