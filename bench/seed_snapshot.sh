#!/usr/bin/env bash
# Benchmark: reading a repository seed. A git work tree of FILES files
# (default 10,000: 2,000 directories of 5 files, 1-8 KB each, committed) plus
# an ignored 5,000-file build/ directory and a few untracked files. Times
#   ours:      `lazyagent-oci seed REPO --copy-to DIR --json`: the git listing
#              (tracked + untracked-not-ignored), hashing every file as it
#              streams from disk, then the private copy (each file read
#              again, hash-checked, written): the pipeline's snapshot and copy
#              steps, the same code
#   baseline:  the same work with standard tools: `git ls-files -z --cached
#              --others --exclude-standard | xargs -0 sha256sum` (listing +
#              hashing), then the same list through `tar --null -T - -c | tar -x`
#              (copy)
# alternating (ours first in odd rounds), ROUNDS rounds; a warm page cache.
# Reports medians and the median of per-round ratios (ours / baseline), per
# part. Writes bench/results/seed-snapshot.{md,json}.
#
# usage: bench/seed_snapshot.sh [ROUNDS] [FILES]     (default 7 rounds, 10000 files)
#        LAZYAGENT_BIN=path bench/seed_snapshot.sh   (time another build of the binary)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-7}
files=${2:-10000}
[ "$rounds" -ge 5 ] || { echo "need at least 5 rounds" >&2; exit 2; }
bin=${LAZYAGENT_BIN:-build/lazyagent-oci}  # LAZYAGENT_BIN: another build to compare
[ -x "$bin" ] || { echo "build $bin first" >&2; exit 2; }
work=$(mktemp -d /tmp/lazyagent-bench-seed-XXXXXX)
trap 'rm -rf "$work"' EXIT

repo="$work/repo"
mkdir -p "$repo"
python3 - "$repo" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(14)
for i in range(n):
    d = os.path.join(root, "pkg%02d" % (i // 500), "mod%03d" % ((i // 5) % 100))
    os.makedirs(d, exist_ok=True)
    size = rnd.randint(1024, 8192)
    with open(os.path.join(d, "f%05d.py" % i), "w") as f:
        f.write(("# file %d\n" % i) + "x = 1\n" * (size // 6))
os.makedirs(os.path.join(root, "build", "obj"), exist_ok=True)
for i in range(5000):
    open(os.path.join(root, "build", "obj", "o%05d.o" % i), "w").write("obj")
open(os.path.join(root, ".gitignore"), "w").write("build/\n")
PY
git -C "$repo" init -q
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@example.invalid commit -q -m bench
for i in 1 2 3; do echo "untracked $i" >"$repo/notes$i.txt"; done

ms() { local t0 t1; t0=$(date +%s%N); "$@"; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
# Removing the last round's copies is not timed (under load, rm of 10,000
# files took as long as the copy).
clear_copies() { rm -rf "$work/copy-ours" "$work/copy-base"; mkdir -p "$work/copy-base"; }
ours() {  # -> $work/ours.json
  "$bin" seed "$repo" --copy-to "$work/copy-ours" --json >"$work/ours.json"
}
base_hash() {
  git -C "$repo" ls-files -z --cached --others --exclude-standard >"$work/list"
  (cd "$repo" && xargs -0 sha256sum <"$work/list" >/dev/null)
}
base_copy() {
  (cd "$repo" && tar --null -T "$work/list" -cf - | tar -xf - -C "$work/copy-base")
}

clear_copies; ours; base_hash; base_copy  # warm-up: page cache, git's index
: >"$work/rows"
for i in $(seq 1 "$rounds"); do
  clear_copies
  if [ $((i % 2)) -eq 1 ]; then
    w=$(ms ours); h=$(ms base_hash); c=$(ms base_copy)
  else
    h=$(ms base_hash); c=$(ms base_copy); w=$(ms ours)
  fi
  python3 -c 'import json,sys
o = json.load(open(sys.argv[1]))
assert o["kind"] == "git" and o["files"] == int(sys.argv[5]) + 4, o
print(json.dumps({"ours_wall": int(sys.argv[2]), "ours_snapshot": o["timings"]["snapshot"], "ours_copy": o["timings"]["copy"],
                  "base_hash": int(sys.argv[3]), "base_copy": int(sys.argv[4]), "files": o["files"], "bytes": o["bytes"]}))' \
    "$work/ours.json" "$w" "$h" "$c" "$files" >>"$work/rows"
  echo "round $i: ours ${w} ms wall; baseline hash ${h} ms, copy ${c} ms" >&2
done
# The copies hold the same files.
diff -r -q "$work/copy-ours" "$work/copy-base" >/dev/null || { echo "the two copies differ" >&2; exit 1; }
[ ! -e "$work/copy-ours/build" ] && [ ! -e "$work/copy-ours/.git" ] || { echo "ignored files or .git copied" >&2; exit 1; }

python3 - "$work/rows" bench/results/seed-snapshot <<'PY'
import json, os, statistics, sys, datetime, subprocess
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda k: statistics.median(r[k] for r in rows)
snap = [r["ours_snapshot"] / max(1, r["base_hash"]) for r in rows]
copy = [r["ours_copy"] / max(1, r["base_copy"]) for r in rows]
total = [r["ours_wall"] / max(1, r["base_hash"] + r["base_copy"]) for r in rows]
out = {
  "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
  "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
  "rounds": len(rows), "files": rows[0]["files"], "bytes": rows[0]["bytes"],
  "loadavg_1m_at_end": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
  "median_ms": {k: med(k) for k in ("ours_snapshot", "ours_copy", "ours_wall", "base_hash", "base_copy")},
  "median_ratio_snapshot": round(statistics.median(snap), 3),
  "median_ratio_copy": round(statistics.median(copy), 3),
  "median_ratio_total": round(statistics.median(total), 3),
  "rows": rows,
}
json.dump(out, open(sys.argv[2] + ".json", "w"), indent=2)
m = out["median_ms"]
md = [f"# Seed snapshot and copy of a {out['files']}-file git repository ({out['date']}, {out['git']}, {len(rows)} alternating rounds)", "",
      f"{out['files']} files ({out['bytes']} bytes) listed as git would (tracked + untracked-not-ignored; an ignored",
      "5,000-file build/ and .git/ left out), every file hashed as it streams, then the private copy with",
      "every file's hash checked again. Warm page cache.",
      f"Load average at the end: {out['loadavg_1m_at_end']} on {out['cpus']} CPUs.", "",
      "| part | lazyagent-oci median ms | baseline median ms | median per-round ratio |", "|---|---|---|---|",
      f"| snapshot (list + hash) | {m['ours_snapshot']} | {m['base_hash']} (`git ls-files` + `xargs sha256sum`) | {out['median_ratio_snapshot']} |",
      f"| copy | {m['ours_copy']} | {m['base_copy']} (`tar -T list -c \\| tar -x`) | {out['median_ratio_copy']} |",
      f"| whole command (process start, both parts) | {m['ours_wall']} | {m['base_hash'] + m['base_copy']} | {out['median_ratio_total']} |"]
open(sys.argv[2] + ".md", "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
