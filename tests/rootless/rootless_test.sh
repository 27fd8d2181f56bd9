#!/usr/bin/env bash
# lazyagent-oci as an ordinary user on the user's own rootless podman (README
# "Without root", issue 29). Run as root by ctest (label rootless, podman lock):
#   tests/rootless/rootless_test.sh BINARY SOURCE_DIR
# It creates a user (useradd -m), prepares it with scripts/setup-rootless.sh,
# runs everything below as that user, and removes the user, its podman service,
# its processes (by pid) and its files at the end, whatever happened.
#
# Checks (each fails the test when the feature breaks):
#   setup        the socket's address last, idempotent, overlay storage
#   doctor       the socket found without XDG_RUNTIME_DIR (/run/user/UID), the
#                mapping into the subordinate ids, the limits this host cannot
#                enforce (cgroup v1) named
#   refusal      without --accept-weaker-policy: exit 2 naming memory, pids
#                and cpu, before any container exists
#   fix          with it: a proven fix (exit 0), the policy's not_enforced and
#                rootless mapping, the same in the run record
#   network      the sandbox reaches no listener on this host's address
#   secrets      a canary in the user's environment and in the user's podman
#                secrets appears nowhere in the sandbox
#   ownership    a file the sandbox's root writes is owned on the host by the
#                first subordinate id, not the user's uid
#   nproc        a fork bomb stops at the nproc rlimit (still enforced rootless)
#   leftovers    no container left in the user's podman
set -uo pipefail

BINARY="$1"
SRC="$2"
[ "$(id -u)" -eq 0 ] || { echo "rootless_test.sh: run as root (it creates a user)" >&2; exit 1; }

USER_NAME="lzrl$$"
FAILED=0
LISTENER_PID=""
check() {  # check NAME CONDITION-STATUS DETAIL
  if [ "$2" -eq 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; FAILED=1; fi
}

cleanup() {
  [ -z "$LISTENER_PID" ] || kill "$LISTENER_PID" 2>/dev/null
  if id -u "$USER_NAME" >/dev/null 2>&1; then
    local uid
    uid="$(id -u "$USER_NAME")"
    "$SRC/scripts/setup-rootless.sh" --stop "$USER_NAME" >/dev/null 2>&1
    # Whatever else the user still runs (conmon of a container, ...), by pid.
    for pid in $(ps -u "$uid" -o pid= 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    sleep 0.5
    userdel -r "$USER_NAME" >/dev/null 2>&1 || userdel -f -r "$USER_NAME" >/dev/null 2>&1
    rm -rf "/run/user/$uid"
    sed -i "/^$USER_NAME:/d" /etc/subuid /etc/subgid
  fi
  rm -rf "$WORK"
}
WORK="$(mktemp -d)"
chmod 0755 "$WORK"
trap cleanup EXIT

useradd -m -s /bin/sh "$USER_NAME" || { echo "useradd failed" >&2; exit 1; }
USER_UID="$(id -u "$USER_NAME")"
USER_HOME="$(getent passwd "$USER_NAME" | cut -d: -f6)"
ADDR="$("$SRC/scripts/setup-rootless.sh" "$USER_NAME" 2>"$WORK/setup.log" | tail -n1)"
check "setup-rootless.sh prints the socket's address last" "$([ "$ADDR" = "unix:///run/user/$USER_UID/podman/podman.sock" ]; echo $?)" "got '$ADDR': $(tail -5 "$WORK/setup.log")"
# Idempotent: a second run finds everything in place.
ADDR2="$("$SRC/scripts/setup-rootless.sh" "$USER_NAME" 2>"$WORK/setup2.log" | tail -n1)"
check "setup-rootless.sh again: the same service and images" "$([ "$ADDR2" = "$ADDR" ] && grep -q 'running (pid' "$WORK/setup2.log" && grep -q 'lazyagent-sandbox:latest present' "$WORK/setup2.log"; echo $?)" "$(cat "$WORK/setup2.log")"
DRIVER="$(cd / && runuser -u "$USER_NAME" -- env -i HOME="$USER_HOME" XDG_RUNTIME_DIR="/run/user/$USER_UID" podman info --format '{{.Store.GraphDriverName}}' 2>/dev/null)"
check "the user's storage is native overlay (the kernel has it in a user namespace)" "$([ "$DRIVER" = overlay ]; echo $?)" "driver '$DRIVER'"
SUB_START="$(grep "^$USER_NAME:" /etc/subuid | cut -d: -f2)"

# The user's copy of the binary, the demo project and config, and patches.
install -d -o "$USER_UID" -m 0755 "$USER_HOME/bin" "$USER_HOME/proj"
install -o "$USER_UID" -m 0755 "$BINARY" "$USER_HOME/bin/lazyagent-oci"
cp -R "$SRC/seed" "$SRC/config" "$USER_HOME/proj/"
chown -R "$USER_UID" "$USER_HOME/proj"
HOST_IP="$(hostname -I | awk '{print $1}')"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')"
MARK="owned-$$"

# patch NAME PRELUDE: the fixing calculator.py with PRELUDE run at import.
patch() {
  python3 - "$SRC/examples/patches/fix-add.json" "$2" >"$WORK/$1.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["files"][0]["content"] = sys.argv[2] + "\n" + p["files"][0]["content"]
print(json.dumps(p))
PY
  chmod 0644 "$WORK/$1.json"
}
patch fix ""
patch attack "
import os, socket, time
try:
    s = socket.create_connection(('$HOST_IP', $PORT), timeout=3); s.send(b'x'); print('NET-LEAK')
except OSError as e:
    print('NET-BLOCKED', e.errno)
env = open('/proc/self/environ', 'rb').read() + open('/proc/1/environ', 'rb').read()
print('CANARY-SEEN' if b'canary-$$' in env else 'CANARY-ABSENT')
for root, dirs, files in os.walk('/run'):
    for f in files:
        try:
            if b'canary-$$' in open(os.path.join(root, f), 'rb').read(): print('CANARY-FILE', f)
        except OSError: pass
if not os.path.exists('/work/$MARK'):
    open('/work/$MARK', 'w').write('x'); time.sleep(6)
kids = 0
try:
    for _ in range(600):
        pid = os.fork()
        if pid == 0: time.sleep(5); os._exit(0)
        kids += 1
except OSError as e:
    print('FORK-STOPPED', kids, e.errno)
else:
    print('FORK-UNLIMITED', kids)
"

# as_user [ENV=VALUE...] CMD...: as the user, HOME only (a `su -` without a
# user session: no XDG_RUNTIME_DIR, no CONTAINER_HOST).
as_user() {
  (cd "$USER_HOME/proj" && runuser -u "$USER_NAME" -- env -i HOME="$USER_HOME" USER="$USER_NAME" \
    PATH="$USER_HOME/bin:/usr/local/bin:/usr/bin:/bin" "$@")
}
containers() { as_user podman ps -a --format '{{.ID}}' 2>/dev/null | grep -c . ; }

# ---- doctor ----
as_user XDG_RUNTIME_DIR="/run/user/$USER_UID" lazyagent-oci doctor --config config/lazyagent.yaml --json >"$WORK/doctor.json" 2>&1
as_user lazyagent-oci doctor --config config/lazyagent.yaml --json >"$WORK/doctor-nox.json" 2>"$WORK/doctor.err"
check "doctor without XDG_RUNTIME_DIR finds /run/user/UID's socket" "$(python3 -c "
import json,sys; d=json.load(open('$WORK/doctor-nox.json')); c={x['check']:x for x in d['checks']}
sys.exit(0 if c['socket']['status']=='ok' and c['socket']['detail']=='/run/user/$USER_UID/podman/podman.sock' else 1)"; echo $?)" "$(cat "$WORK/doctor-nox.json" "$WORK/doctor.err")"
check "doctor names the mapping into the subordinate ids and the unenforced limits" "$(python3 -c "
import json,sys; d=json.load(open('$WORK/doctor-nox.json')); c={x['check']:x for x in d['checks']}
u=c['user namespace']; l=c['limits']
ok = u['status']=='ok' and 'host uids $SUB_START..$((SUB_START + 65535))' in u['detail'] and 'never uid $USER_UID' in u['detail']
ok = ok and l['status']=='warn' and l['detail'].startswith('memory, pids, cpu not enforced (rootless podman on cgroup v1')
sys.exit(0 if ok else 1)"; echo $?)" "$(cat "$WORK/doctor-nox.json")"

# ---- refusal ----
as_user lazyagent-oci test --config config/lazyagent.yaml --patch "$WORK/fix.json" --json >"$WORK/refused.json" 2>"$WORK/refused.err"
rc=$?
check "without --accept-weaker-policy: refused, exit 2, each limit named" "$([ $rc -eq 2 ] && grep -q "cannot enforce the sandbox's memory (limits.memory_mib: 512 MiB), pids (limits.pids: 256), cpu (limits.cpus: 1) limits (rootless podman on cgroup v1" "$WORK/refused.err"; echo $?)" "rc=$rc $(cat "$WORK/refused.err")"
check "the refusal made no container" "$([ "$(containers)" -eq 0 ]; echo $?)" "$(as_user podman ps -a)"

# ---- a proven fix ----
as_user lazyagent-oci test --config config/lazyagent.yaml --patch "$WORK/fix.json" --accept-weaker-policy --json >"$WORK/fix-result.json" 2>"$WORK/fix.err"
rc=$?
check "with --accept-weaker-policy: the fix is proven (exit 0)" "$([ $rc -eq 0 ]; echo $?)" "rc=$rc $(cat "$WORK/fix.err" "$WORK/fix-result.json")"
check "the result's policy lists memory, pids, cpu as not enforced and the rootless mapping" "$(python3 -c "
import json,sys; r=json.load(open('$WORK/fix-result.json')); p=r['policy']
ok = r['tests_passed'] is True and p['not_enforced']==['memory','pids','cpu'] and p['weaker_policy_accepted'] is True
ok = ok and 'cgroup v1' in p['not_enforced_reason'] and p['user']['mode']=='rootless_user_namespace'
ok = ok and p['user']['host_uids']==[$SUB_START, $SUB_START + 65535] and p['user']['uid_map']==[{'container_id':0,'host_id':1,'size':65536}]
ok = ok and r['isolation_probe']['violations']==[] and r['isolation_probe']['uid_map']=='0 1 65536'
sys.exit(0 if ok else 1)"; echo $?)" "$(cat "$WORK/fix-result.json")"
RECORD="$(find "$USER_HOME/.local/state/lazyagent-oci" -name "*.json" -path "*$(python3 -c "import json; print(json.load(open('$WORK/fix-result.json'))['run_id'])")*" | head -n1)"
check "the run record in the user's home says what was not enforced" "$([ -n "$RECORD" ] && grep -q '"not_enforced_reason"' "$RECORD" && [ "$(stat -c %u "$RECORD")" = "$USER_UID" ]; echo $?)" "record '$RECORD'"

# ---- attacks: network, secrets, ownership, nproc ----
python3 - "$PORT" "$WORK/listener.log" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(5); s.settimeout(120)
log = open(sys.argv[2], "w")
try:
    while True:
        c, a = s.accept(); log.write("connection from %s\n" % (a,)); log.flush(); c.close()
except OSError:
    pass
PY
LISTENER_PID=$!
sleep 0.3
# The listener answers the host itself (positive control for the network check).
python3 -c "import socket; socket.create_connection(('$HOST_IP', $PORT), timeout=3).close()"
sleep 0.2
CONTROL_HITS="$(grep -c connection "$WORK/listener.log")"
echo "canary-$$" | as_user podman secret create lzrl-canary - >/dev/null
( for _ in $(seq 1 200); do
    for f in /proc/[0-9]*/root/work/"$MARK"; do
      [ -e "$f" ] && { stat -c %u "$f" >"$WORK/owner"; exit 0; }
    done
    sleep 0.1
  done ) &
WATCH=$!
as_user LAZYAGENT_CANARY="canary-$$" CODING_AGENT_API_KEY="canary-$$" lazyagent-oci test --config config/lazyagent.yaml \
  --patch "$WORK/attack.json" --accept-weaker-policy --json >"$WORK/attack.json.out" 2>"$WORK/attack.err"
rc=$?
wait "$WATCH"
OUT="$(python3 -c "import json; print(json.load(open('$WORK/attack.json.out'))['test_output'])" 2>/dev/null)"
check "attack run completed (tests pass after the attack prelude)" "$([ $rc -eq 0 ]; echo $?)" "rc=$rc $(cat "$WORK/attack.err")"
check "network: nothing reached this host's listener" "$(echo "$OUT" | grep -q 'NET-BLOCKED' && ! echo "$OUT" | grep -q NET-LEAK && [ "$CONTROL_HITS" -eq 1 ] && [ "$(grep -c connection "$WORK/listener.log")" -eq 1 ]; echo $?)" "control=$CONTROL_HITS $(cat "$WORK/listener.log") $OUT"
check "secrets: the user's environment and podman secret canary is absent" "$(echo "$OUT" | grep -q CANARY-ABSENT && ! grep -q "canary-$$" "$WORK/attack.json.out"; echo $?)" "$OUT"
check "ownership: the sandbox root's file is owned by subordinate id $SUB_START, not uid $USER_UID" "$([ "$(cat "$WORK/owner" 2>/dev/null)" = "$SUB_START" ]; echo $?)" "owner '$(cat "$WORK/owner" 2>/dev/null)'"
check "nproc: a fork bomb stops at the rlimit (256)" "$(echo "$OUT" | grep -Eq 'FORK-STOPPED (2[0-5][0-9]|1[0-9][0-9]) 11'; echo $?)" "$(echo "$OUT" | grep FORK)"
as_user podman secret rm lzrl-canary >/dev/null

# ---- leftovers ----
check "no container left in the user's podman" "$([ "$(containers)" -eq 0 ]; echo $?)" "$(as_user podman ps -a)"
WORKDIRS="$(find "$USER_HOME/.local/state/lazyagent-oci/work" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
check "no private copy left in the user's run store" "$([ "$WORKDIRS" -eq 0 ]; echo $?)" "$WORKDIRS left"

exit "$FAILED"
