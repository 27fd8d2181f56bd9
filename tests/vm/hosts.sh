#!/usr/bin/env bash
# The host matrix, run INSIDE the Debian 13 VM (scripts/vm.sh run --images): the
# paths whose code depends on the OCI runtime, the cgroup manager and version,
# and podman's version, on the host users have (podman 5, systemd, cgroup v2):
#
#   root, crun   the service as installed (podman.socket: crun, systemd manager):
#                doctor, a fixing and a wrong patch, the limits in the sandbox's
#                scope, resources read from it, warm spares (a slice parent),
#                an eval, a session (open, exec, prove, close)
#   root, runc   a second service started with --runtime runc: the same verdicts,
#                and --runtime crun refused against it as a usage error
#   rootless     the user 'lazy' in a login session (systemd user manager,
#                delegated cgroup v2): doctor, verdicts, limits, a session
#
# Each check prints "ok - NAME" or "not ok - NAME: WHY"; the exit code is the
# number of failed checks (0: all held). Usage (as root, in the VM):
#   bash /opt/lazyagent-src/tests/vm/hosts.sh [root-crun] [root-runc] [rootless]
set -uo pipefail

SRC="${LAZYAGENT_VM_SRC:-/opt/lazyagent-src}"
BIN="${LAZYAGENT_VM_BIN:-/opt/lazyagent-build/lazyagent-oci}"
USER_NAME="${LAZYAGENT_VM_USER:-lazy}"
RUNC_SOCK=/run/lazyagent-vm-runc.sock
FIX="$SRC/examples/patches/fix-add.json"
WRONG="$SRC/examples/patches/wrong-add.json"
FAILED=0
OUT="$(mktemp -d)"
chmod 0755 "$OUT"

say() { printf '%s\n' "$*"; }
pass() { say "ok - $1"; }
fail() { say "not ok - $1: $2"; FAILED=$((FAILED + 1)); }

# run_cli NAME WANT_RC CMD...: the CLI's stdout in $OUT/NAME.json, its stderr in
# $OUT/NAME.err; a check that its exit code is WANT_RC.
run_cli() {
  local name="$1" want="$2" rc=0 t0; shift 2
  t0=$(date +%s%N)
  "$@" >"$OUT/$name.json" 2>"$OUT/$name.err" || rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ "$rc" = "$want" ]; then
    pass "$name: exit $rc (${ms} ms)"
  else
    fail "$name" "exit $rc, want $want; stderr: $(tail -n 5 "$OUT/$name.err" | tr '\n' ' ' | cut -c1-600)"
  fi
}

# json_check NAME PYTHON-EXPRESSION: the expression, over d (the JSON of NAME),
# must be true; prints what it saw otherwise.
json_check() {
  local name="$1" expr="$2" why
  if why=$(python3 - "$OUT/$name.json" "$expr" 2>&1 <<'PY'
import json, sys
path, expr = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"not JSON: {e}"); sys.exit(1)
ok = eval(expr, {"d": d})
if not ok:
    keep = {k: d.get(k) for k in ("status", "category", "error", "code", "checks", "resources") if isinstance(d, dict) and k in d}
    print(json.dumps(keep)[:900]); sys.exit(1)
PY
  ); then pass "$name: $expr"; else fail "$name: $expr" "$why"; fi
}

# The checks that hold under any runtime and manager: verdicts, the runtime the
# result names, the limits the verifier saw, the resources read by the host.
verdicts() {
  local tag="$1" runtime="$2"
  run_cli "$tag-fix" 0 "${CLI[@]}" test --patch "$FIX" --json
  json_check "$tag-fix" "d['status'] == 'passed' and d['policy']['runtime'] == '$runtime'"
  json_check "$tag-fix" "d['policy']['not_enforced'] == [] and {'memory','pids','cpu'} <= set(d['policy']['enforced'])"
  json_check "$tag-fix" "d['isolation_probe']['violations'] == [] and d['isolation_probe']['interfaces'] == ['lo']"
  run_cli "$tag-wrong" 1 "${CLI[@]}" test --patch "$WRONG" --json
  json_check "$tag-wrong" "d['status'] == 'failed' and d['category'] == 'failed'"
  # Attacks on the limits: 700 MiB against the 512 MiB cap is killed; 400
  # processes against the 256 pids cap cannot all start.
  run_cli "$tag-memory" 1 "${CLI[@]}" test --patch "$FIX" --no-baseline --json \
    --test-command "python3 -c 'b = bytearray(700 * 1024 * 1024); print(len(b))'"
  json_check "$tag-memory" "d['test_exit_code'] == 137 and d['reason'].startswith('killed')"
  run_cli "$tag-pids" 1 "${CLI[@]}" test --patch "$FIX" --no-baseline --json \
    --test-command "python3 -c 'import os, time
n = 0
try:
    for _ in range(400):
        if os.fork() == 0:
            time.sleep(2); os._exit(0)
        n += 1
except OSError as e:
    print(\"refused after\", n, e); raise SystemExit(3)
print(\"started\", n)'"
  json_check "$tag-pids" "d['test_exit_code'] == 3 and 'refused after' in d['test_output']"
}

root_crun() {
  say "# root, the service as installed (podman.socket)"
  systemctl start podman.socket || fail "root-crun: podman.socket" "systemctl start failed"
  CLI=(env CONTAINER_HOST=unix:///run/podman/podman.sock "$BIN")
  say "# $(podman info --format 'podman {{.Version.Version}}, {{.Host.OCIRuntime.Name}}, cgroups {{.Host.CgroupsVersion}} ({{.Host.CgroupManager}})')"
  run_cli root-crun-doctor 0 "${CLI[@]}" doctor --json
  json_check root-crun-doctor "d.get('ok') is True or all(c.get('status') != 'fail' for c in d.get('checks', []))"
  verdicts root-crun crun
  # The host reads the figures from the sandbox's systemd scope.
  json_check root-crun-fix "d['resources']['available'] and d['resources']['cpu_ms'] is not None and d['resources']['memory_peak_bytes'] > 0 and d['resources']['pids_peak'] > 0"
  # Warm spares: made with a slice parent (or none) under the systemd manager,
  # then claimed by the next test.
  run_cli root-crun-warm 0 "${CLI[@]}" warm --count 1 --json
  run_cli root-crun-warm-fix 0 "${CLI[@]}" test --patch "$FIX" --json
  json_check root-crun-warm-fix "d['status'] == 'passed' and d.get('warm', {}).get('spare')"
  # An eval of two tasks.
  printf '{"id":"fix","seed":"%s/seed","patch":"%s"}\n{"id":"wrong","seed":"%s/seed","patch":"%s"}\n' \
    "$SRC" "$FIX" "$SRC" "$WRONG" >"$OUT/tasks.jsonl"
  run_cli root-crun-eval 0 "${CLI[@]}" eval "$OUT/tasks.jsonl" --out "$OUT/root.eval" --jobs 2 --json
  json_check root-crun-eval "d['passed']['count'] == 1 and d['failed']['count'] == 1 and d['infra_error']['count'] == 0"
  session root-crun
  # Nothing left: every sandbox removed.
  local left
  left=$(podman ps -a --filter label=io.lazyagent.role --format '{{.Names}} {{.Labels}}' | grep -v 'role=spare' || true)
  [ -z "$left" ] && pass "root-crun: no container left" || fail "root-crun: no container left" "$left"
}

root_runc() {
  say "# root, a service started with --runtime runc"
  rm -f "$RUNC_SOCK"
  # From /: conmon writes an `oom` file in the service's working directory.
  (cd / && exec podman --runtime runc system service --time=0 "unix://$RUNC_SOCK") >"$OUT/runc-service.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do [ -S "$RUNC_SOCK" ] && break; sleep 0.1; done
  CLI=(env CONTAINER_HOST="unix://$RUNC_SOCK" "$BIN")
  verdicts root-runc runc
  json_check root-runc-fix "d['resources']['available'] and d['resources']['memory_peak_bytes'] > 0"
  run_cli root-runc-crun-refused 2 "${CLI[@]}" test --patch "$FIX" --runtime crun --json
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
}

session() {
  local tag="$1" id
  run_cli "$tag-session-open" 0 "${CLI[@]}" session open --json
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("session_id",""))' "$OUT/$tag-session-open.json" 2>/dev/null)
  [ -n "$id" ] || { fail "$tag-session" "no session id"; return; }
  run_cli "$tag-session-exec" 0 "${CLI[@]}" session exec "$id" --json -- sh -c 'id -u; ls calculator.py'
  json_check "$tag-session-exec" "d['exit_code'] == 0 and 'calculator.py' in d['output']"
  run_cli "$tag-session-write" 0 "${CLI[@]}" session write "$id" calculator.py "$SRC/seed/calculator.py" --json
  run_cli "$tag-session-close" 0 "${CLI[@]}" session close "$id" --json
}

rootless() {
  say "# rootless: $USER_NAME in a login session"
  # The user's own podman socket (systemd user unit), as a user starts it.
  runuser -l "$USER_NAME" -c 'systemctl --user start podman.socket' ||
    fail "rootless: podman.socket" "systemctl --user start failed"
  local uid; uid=$(id -u "$USER_NAME")
  CLI=(runuser -l "$USER_NAME" -c)
  # The user's commands run through one login shell each; the output goes to
  # files the user can write.
  chown "$USER_NAME" "$OUT"
  local b="cd $SRC && CONTAINER_HOST=unix:///run/user/$uid/podman/podman.sock $BIN"
  # The user's service starts on the first connection (socket activation) and
  # sets up its storage then: under emulation that first answer takes longer
  # than the CLI's 5 s ping, so wait for it as a user's first podman command does.
  local t0=$(date +%s)
  # The first inspect of an image computes its size over fuse-overlayfs: over
  # 30 s under emulation (the CLI's timeout), a moment on a real host.
  if runuser -l "$USER_NAME" -c 'podman --remote images --format "{{.Repository}}" >/dev/null &&
       podman --remote image inspect localhost/lazyagent-sandbox:latest >/dev/null'; then
    say "# the user's podman service answered its first call in $(( $(date +%s) - t0 )) s"
  else
    fail "rootless: podman service" "podman --remote images failed"
  fi
  run_cli rootless-doctor 0 runuser -l "$USER_NAME" -c "$b doctor --json"
  json_check rootless-doctor "all(c.get('status') != 'fail' for c in d.get('checks', []))"
  run_cli rootless-fix 0 runuser -l "$USER_NAME" -c "$b test --patch $FIX --json"
  json_check rootless-fix "d['status'] == 'passed' and d['policy']['not_enforced'] == []"
  json_check rootless-fix "d['isolation_probe']['violations'] == []"
  run_cli rootless-wrong 1 runuser -l "$USER_NAME" -c "$b test --patch $WRONG --json"
  json_check rootless-wrong "d['status'] == 'failed'"
  local id
  # A rootless session's copy cannot be size-capped (that needs a mount as
  # root): the weaker policy is said and accepted explicitly.
  run_cli rootless-session-refused 2 runuser -l "$USER_NAME" -c "$b session open --json"
  run_cli rootless-session-open 0 runuser -l "$USER_NAME" -c "$b session open --accept-weaker-policy --json"
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("session_id",""))' "$OUT/rootless-session-open.json" 2>/dev/null)
  if [ -n "$id" ]; then
    run_cli rootless-session-exec 0 runuser -l "$USER_NAME" -c "$b session exec $id --json -- sh -c 'touch made-here && ls calculator.py'"
    json_check rootless-session-exec "d['exit_code'] == 0"
    # The command's file is the user's own in the copy: the hand-over worked.
    run_cli rootless-session-read 0 runuser -l "$USER_NAME" -c "$b session exec $id --json -- sh -c 'ls -ln made-here && echo written > made-here && cat made-here'"
    json_check rootless-session-read "d['exit_code'] == 0 and 'written' in d['output']"
    run_cli rootless-session-close 0 runuser -l "$USER_NAME" -c "$b session close $id --json"
  else
    fail "rootless-session" "no session id"
  fi
}

cd "$SRC" || exit 125
[ -x "$BIN" ] || { say "not ok - the build: no $BIN"; exit 125; }
set -- "${@:-root-crun root-runc rootless}"
for part in $*; do
  case "$part" in
    root-crun) root_crun ;;
    root-runc) root_runc ;;
    rootless) rootless ;;
    *) say "unknown part: $part"; exit 125 ;;
  esac
done
say "# $FAILED failed check(s); outputs in $OUT"
exit "$FAILED"
