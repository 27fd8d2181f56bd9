#!/usr/bin/env bash
# Runs the security suite (build/security_tests: attacks, controls, chaos)
# once with Catch2's XML reporter and writes docs/security-report.md: each
# attack, the invariant it targets, its outcome and its evidence. Needs a
# built tree (scripts/setup.sh) and the podman service; as root.
#   usage: scripts/security-report.sh [BUILD_DIR] [CATCH2 TEST SPEC...]
# Exits 1 when any test failed (the report is written either way).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib.sh
source scripts/lib.sh

build="${1:-build}"
shift || true
bin="$build/security_tests"
[ -x "$bin" ] || die "$bin not found: build first (scripts/setup.sh, or cmake --build $build)"
work=$(mktemp -d /tmp/lazyagent-security-XXXXXX)
trap 'rm -rf "$work"' EXIT

step "security suite"
t0=$(now)
status=0
LAZYAGENT_SECURITY_EVIDENCE="$work/evidence.jsonl" "$bin" -r xml -d yes -o "$work/results.xml" "$@" || status=$?
wall=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
step_done "exit $status"

step "report"
runtime=$(podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Version}}' 2>/dev/null | head -1 || true)
python3 - "$work/meta.json" "$wall" "$runtime" <<'PY'
import json, subprocess, sys, datetime, platform
def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""
json.dump({
    "commit": out("git", "rev-parse", "--short", "HEAD") + (" (dirty)" if out("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/security-report.md") else ""),
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "kernel": platform.release(),
    "podman": out("podman", "version", "--format", "{{.Server.Version}}") or out("podman", "--version"),
    "runtime": sys.argv[3].splitlines()[0] if sys.argv[3] else "",
    "wall_seconds": float(sys.argv[2]),
}, open(sys.argv[1], "w"))
PY
python3 scripts/security-report.py "$work/results.xml" "$work/evidence.jsonl" "$work/meta.json" docs/security-report.md
step_done "docs/security-report.md"
exit "$status"
