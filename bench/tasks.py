#!/usr/bin/env python3
"""bench/tasks.py FILE N SEED: an eval task file of N patch tasks on SEED,
alternating the demo's fixing and wrong patches (examples/patches), ids
fix-0, wrong-1, ... Run from the repository root."""
import json
import sys

path, n, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fix = json.load(open("examples/patches/fix-add.json"))
wrong = json.load(open("examples/patches/wrong-add.json"))
with open(path, "w") as f:
    for i in range(n):
        kind = "fix" if i % 2 == 0 else "wrong"
        f.write(json.dumps({"id": f"{kind}-{i}", "seed": seed, "patch": fix if kind == "fix" else wrong}) + "\n")
