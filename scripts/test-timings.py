#!/usr/bin/env python3
"""The suite's timings, from ctest's own JUnit reports (ctest --output-junit).

usage: test-timings.py [--phases FILE] [--budget-min N] [--slowest N] [--markdown] JUNIT.xml...

Prints, for every label (read from `ctest --show-only=json-v1`, written next
to each report as REPORT.tests.json by scripts/test.sh), the number of tests,
their summed time and the slowest ones; then the slowest N tests of the whole
run, the total, and last the failed tests. --phases names a file of "NAME SECONDS" lines (the
set-up, each ctest invocation, the fuzzers: wall time, as scripts/test.sh
measured them) whose sum is the total ("+ NAME SECONDS" lines are parts run side by
side within the phase before them: shown, not added); without it the total is the
tests' sum.

Exit 0, or 3 when the total passes --budget-min (default 40): the suite is
growing past what CI may spend on it (issue 39), said on stderr so that the
caller can decide. 2 on unreadable input.
"""

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET


def read_junit(path):
    """[(name, seconds, status)] of one ctest JUnit report."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise SystemExit(f"test-timings: cannot read {path}: {e}") from None
    out = []
    for case in root.iter("testcase"):
        name = case.get("name", "")
        try:
            secs = float(case.get("time", "0"))
        except ValueError:
            secs = 0.0
        status = case.get("status", "")
        if case.find("failure") is not None:
            status = "fail"
        elif case.find("skipped") is not None:
            status = "skipped"
        out.append((name, secs, status or "run"))
    return out


def read_labels(path):
    """{name: [labels]} from `ctest --show-only=json-v1` output, or {}."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    labels = {}
    for t in doc.get("tests", []):
        names = []
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                names = list(p.get("value", []))
        labels[t.get("name", "")] = names
    return labels


def fmt(secs):
    secs = int(round(secs))
    return f"{secs // 60}:{secs % 60:02d}"


def main():
    ap = argparse.ArgumentParser(description="the suite's timings from ctest JUnit reports")
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--phases")
    ap.add_argument("--budget-min", type=float, default=40.0)
    ap.add_argument("--slowest", type=int, default=15)
    ap.add_argument("--markdown", action="store_true", help="the per-label table as Markdown")
    a = ap.parse_args()

    tests = []  # (name, secs, status, labels)
    for r in a.reports:
        labels = read_labels(r + ".tests.json")
        for name, secs, status in read_junit(r):
            tests.append((name, secs, status, labels.get(name, [])))
    if not tests:
        print("test-timings: the reports hold no test", file=sys.stderr)
        return 2

    by_label = {}
    for name, secs, status, labels in tests:
        # A test counts under its most specific label: "mcp" rather than
        # the "integration" it also carries.
        specific = [l for l in labels if l != "integration"] or labels
        key = specific[0] if specific else "(no label)"
        by_label.setdefault(key, []).append((secs, name))

    rows = sorted(by_label.items(), key=lambda kv: -sum(s for s, _ in kv[1]))
    if a.markdown:
        print("| label | tests | time (sum) | slowest |")
        print("|---|---:|---:|---|")
        for label, items in rows:
            top = sorted(items, reverse=True)[:2]
            slow = "; ".join(f"{n} ({fmt(s)})" for s, n in top)
            print(f"| {label} | {len(items)} | {fmt(sum(s for s, _ in items))} | {slow} |")
    else:
        print("==> timings per label (ctest's own, summed)")
        for label, items in rows:
            print(f"    {label:<14} {len(items):>4} tests  {fmt(sum(s for s, _ in items)):>7}")
        print(f"==> the {a.slowest} slowest tests")
        for name, secs, status, _ in sorted(tests, key=lambda t: -t[1])[: a.slowest]:
            print(f"    {fmt(secs):>7}  {name}{'' if status in ('run', 'pass') else '  [' + status + ']'}")

    total = sum(t[1] for t in tests)
    if a.phases:
        phases = []
        try:
            with open(a.phases, encoding="utf-8") as f:
                for line in f:
                    parts = line.rsplit(None, 1)
                    if len(parts) == 2:
                        phases.append((parts[0], float(parts[1])))
        except (OSError, ValueError) as e:
            print(f"test-timings: cannot read {a.phases}: {e}", file=sys.stderr)
            return 2
        # "+ NAME SECONDS": a part run beside others inside the phase above it
        # (shown under it, not added to the total).
        if not a.markdown:
            print("==> wall time per phase")
            for name, secs in phases:
                if name.startswith("+ "):
                    print(f"      {fmt(secs):>7}  {name[2:]}")
                else:
                    print(f"    {fmt(secs):>7}  {name}")
        total = sum(s for n, s in phases if not n.startswith("+ "))
    failed = [name for name, _, status, _ in tests if status == "fail"]
    if not a.markdown:
        print(f"==> total {fmt(total)} ({len(tests)} tests)")
        # Last, where a log's tail shows it: which tests failed.
        if failed:
            print(f"==> {len(failed)} failed test(s)")
            for name in failed:
                print(f"    {name}")
        else:
            print("==> no test failed")
    if total > a.budget_min * 60:
        print(f"test-timings: warning: the suite took {fmt(total)}, past its budget of "
              f"{a.budget_min:g} minutes: CI allows 90 in all; make the slowest tests above "
              f"cheaper (shared fixtures, parallel where nothing contends) before adding more",
              file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
