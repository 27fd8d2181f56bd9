#!/usr/bin/env bash
# Benchmark: what signing adds to a verdict (issue 42 item 7: at most 5 ms).
# ROUNDS pairs of `test --no-baseline --json` on the demo seed with its fixing
# patch, one unsigned and one with --sign-key, in alternating order; reported:
# the signed runs' `timings.sign` (the pipeline's sign step: statement,
# Ed25519 signature, the envelope written to the run store with fsync), and
# the median total of each kind (their difference is mostly noise: a sandbox
# run is hundreds of ms).
#
# usage: bench/sign_verdict.sh [ROUNDS]   writes bench/results/sign-verdict.{md,json}
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-7}
bin=build/lazyagent-oci
work=$(mktemp -d /tmp/lazyagent-bench-XXXXXX)
export XDG_STATE_HOME="$work/state"
trap 'rm -rf "$work"' EXIT
"$bin" keygen --out "$work/keys" >/dev/null
run() { "$bin" test --seed seed --patch examples/patches/fix-add.json --no-baseline --json "$@"; }
: > "$work/signed.jsonl"; : > "$work/plain.jsonl"
for i in $(seq "$rounds"); do
  if [ $((i % 2)) = 0 ]; then
    run | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$work/plain.jsonl"
    run --sign-key "$work/keys/key.pem" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$work/signed.jsonl"
  else
    run --sign-key "$work/keys/key.pem" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$work/signed.jsonl"
    run | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$work/plain.jsonl"
  fi
done
mkdir -p bench/results
python3 - "$work" "$rounds" <<'PY'
import json, os, statistics, sys, time
work, rounds = sys.argv[1], int(sys.argv[2])
load = lambda n: [json.loads(l) for l in open(os.path.join(work, n))]
signed, plain = load("signed.jsonl"), load("plain.jsonl")
assert all(r.get("attestation") for r in signed) and not any(r.get("attestation") for r in plain)
total = lambda r: sum(r["timings"].values())
sign = [r["timings"]["sign"] for r in signed]
out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg()[0], "rounds": rounds,
       "sign_ms": sign, "sign_ms_median": statistics.median(sign), "sign_ms_max": max(sign),
       "signed_total_ms_median": statistics.median(map(total, signed)),
       "unsigned_total_ms_median": statistics.median(map(total, plain))}
json.dump(out, open("bench/results/sign-verdict.json", "w"), indent=2)
md = (f"# Signing a verdict ({out['date']}, load {out['load']:.1f}, {rounds} rounds)\n\n"
      f"| figure | ms |\n|---|---|\n| sign step, median | {out['sign_ms_median']} |\n| sign step, max | {out['sign_ms_max']} |\n"
      f"| signed run, median total of timed steps | {out['signed_total_ms_median']} |\n"
      f"| unsigned run, median total of timed steps | {out['unsigned_total_ms_median']} |\n")
open("bench/results/sign-verdict.md", "w").write(md)
print(md)
PY
