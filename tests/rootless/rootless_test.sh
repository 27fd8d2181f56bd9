#!/usr/bin/env bash
# lazyagent-oci as an ordinary user on the user's own rootless podman (docs/rootless.md,
# issue 29). Run as root by ctest (label rootless, podman lock):
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
#   tun          setup-rootless.sh opens a /dev/net/tun closed to users (a
#                container host's 0600); closed again, `run` and `env build`
#                (bridge) are refused before any container, exit 2, naming the
#                fix, and doctor warns
#   configure    the provider settings as podman secrets in the user's podman
#                (not root's); `secret list` sees them
#   run          the planner container as the user reaches the scripted
#                provider on this host; its patch proven; `secret delete`
#   eval         refused whole (exit 2) without --accept-weaker-policy, no
#                task run; with it a fixing and a wrong patch get verdicts
#   env          after eval's concurrent runs (podman 4.3 lost the service's
#                XDG_RUNTIME_DIR there and commits failed until
#                setup-rootless.sh wrote runroot into storage.conf): build
#                (network none) of the user's environment image, a
#                file chowned to 1000 in the set-up is 1000 in the sandbox,
#                list, prune --all
#   warm         a spare made and claimed by the next run (its resources
#                unmeasured for the rootless reason); sandboxes lists runs
#                and spares
#   reap         a run killed (-9) mid-test: its container removed, its
#                record closed; an unclaimed spare removed
#   mcp          one tools/call test_patch over stdio proves the fix
#   session      refused without --accept-weaker-policy (no freezer for the
#                live model), then open (the copy given to the first subordinate id inside the
#                user's namespace), exec writing a 0600 file in a new 0700
#                directory, diff and read it back, close: no session
#                directory, no file of another id in the state dir, no
#                container or process of the sandbox left
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

STUB_PID=""
TUN_MODE="$(stat -c %a /dev/net/tun 2>/dev/null)"
cleanup() {
  [ -z "$LISTENER_PID" ] || kill "$LISTENER_PID" 2>/dev/null
  [ -z "$STUB_PID" ] || kill "$STUB_PID" 2>/dev/null
  # /dev/net/tun as the test found it (the test closes it to check the refusal).
  [ -z "$TUN_MODE" ] || chmod "$TUN_MODE" /dev/net/tun
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
# As on a container host whose /dev/net/tun is root's alone: the script opens it.
chmod 0600 /dev/net/tun
ADDR="$("$SRC/scripts/setup-rootless.sh" "$USER_NAME" 2>"$WORK/setup.log" | tail -n1)"
check "setup-rootless.sh prints the socket's address last" "$([ "$ADDR" = "unix:///run/user/$USER_UID/podman/podman.sock" ]; echo $?)" "got '$ADDR': $(tail -5 "$WORK/setup.log")"
# Idempotent: a second run finds everything in place.
ADDR2="$("$SRC/scripts/setup-rootless.sh" "$USER_NAME" 2>"$WORK/setup2.log" | tail -n1)"
check "setup-rootless.sh opened /dev/net/tun (0600 -> 0666) for the user's container networks" "$([ "$(stat -c %a /dev/net/tun)" = 666 ] && grep -q 'mode 600 -> 0666' "$WORK/setup.log"; echo $?)" "$(stat -c %a /dev/net/tun) $(grep -A1 tun "$WORK/setup.log")"
check "setup-rootless.sh again: the same service and images" "$([ "$ADDR2" = "$ADDR" ] && grep -q 'running (pid' "$WORK/setup2.log" && grep -q 'lazyagent-sandbox:latest present' "$WORK/setup2.log"; echo $?)" "$(cat "$WORK/setup2.log")"
DRIVER="$(cd / && runuser -u "$USER_NAME" -- env -i HOME="$USER_HOME" XDG_RUNTIME_DIR="/run/user/$USER_UID" podman info --format '{{.Store.GraphDriverName}}' 2>/dev/null)"
check "the user's storage is native overlay (the kernel has it in a user namespace)" "$([ "$DRIVER" = overlay ]; echo $?)" "driver '$DRIVER'"
SUB_START="$(grep "^$USER_NAME:" /etc/subuid | cut -d: -f2)"

# The user's copy of the binary, the demo project and config, and patches.
install -d -o "$USER_UID" -m 0755 "$USER_HOME/bin" "$USER_HOME/proj"
install -o "$USER_UID" -m 0755 "$BINARY" "$USER_HOME/bin/lazyagent-oci"
cp -R "$SRC/seed" "$SRC/config" "$USER_HOME/proj/"
cp "$SRC/examples/provider-stub/demo-script.json" "$USER_HOME/proj/stub-script.json"
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
# The listener answers the host itself (positive control for the network
# check): retried until it listens, then until it logged it (a loaded host).
for _ in $(seq 1 100); do
  python3 -c "import socket; socket.create_connection(('$HOST_IP', $PORT), timeout=3).close()" 2>/dev/null && break
  sleep 0.1
done
for _ in $(seq 1 50); do grep -q connection "$WORK/listener.log" 2>/dev/null && break; sleep 0.1; done
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

# ---- the planner as the user: configure, secret, run (tun) ----
# The scripted provider, as the user, on every address of this host (the
# planner reaches it as host.containers.internal through slirp4netns).
: >"$WORK/stub.out"; chmod 0666 "$WORK/stub.out"
as_user lazyagent-oci provider-stub --script stub-script.json --listen 0.0.0.0:0 --log "$USER_HOME/stub.log" >"$WORK/stub.out" 2>/dev/null &
STUB_PID=$!
for _ in $(seq 1 100); do grep -q '^listening on ' "$WORK/stub.out" && break; sleep 0.1; done
STUB_PORT="$(sed -n 's#^listening on http://[^:]*:\([0-9]*\)/v1$#\1#p' "$WORK/stub.out")"
STUB_KEY="$(python3 -c "import json; print(json.load(open('$SRC/examples/provider-stub/demo-script.json'))['api_key'])")"
SECRETS="LZRL_$$_BASE_URL LZRL_$$_MODEL LZRL_$$_API_KEY"
sed "s#CODING_AGENT_#LZRL_$$_#" "$SRC/config/lazyagent.yaml" >"$USER_HOME/proj/config/stub.yaml"
chown "$USER_UID" "$USER_HOME/proj/config/stub.yaml"
as_user "LZRL_$$_BASE_URL=http://127.0.0.1:$STUB_PORT/v1" "LZRL_$$_MODEL=lazyagent-stub" "LZRL_$$_API_KEY=$STUB_KEY" \
  lazyagent-oci configure --config config/stub.yaml --json >"$WORK/configure.json" 2>"$WORK/configure.err"
rc=$?
check "configure stores the provider settings in the user's podman" "$([ $rc -eq 0 ] && [ -n "$STUB_PORT" ] && for n in $SECRETS; do as_user podman secret inspect "$n" >/dev/null 2>&1 || exit 1; ! podman secret inspect "$n" >/dev/null 2>&1 || exit 1; done; echo $?)" "rc=$rc port '$STUB_PORT' $(cat "$WORK/configure.err")"
as_user lazyagent-oci secret list --config config/stub.yaml --json >"$WORK/secrets.json" 2>&1
check "secret list: the three names configured (values never printed)" "$(python3 -c "
import json,sys; d=json.load(open('$WORK/secrets.json'))
sys.exit(0 if sorted(s['name'] for s in d['secrets'] if s['configured'])==sorted('$SECRETS'.split()) else 1)" && ! grep -q "$STUB_KEY" "$WORK/secrets.json"; echo $?)" "$(cat "$WORK/secrets.json")"

# /dev/net/tun closed again: refused before any container, the fix named.
chmod 0600 /dev/net/tun
as_user lazyagent-oci run --config config/stub.yaml --accept-weaker-policy --json >"$WORK/run-notun.json" 2>"$WORK/run-notun.err"
rc=$?
RUNS_NOTUN="$(find "$USER_HOME/.local/state/lazyagent-oci/runs" -name '*.json' 2>/dev/null | wc -l)"
check "tun closed: run refused, exit 2, naming /dev/net/tun and the fix, before any container or run" "$([ $rc -eq 2 ] && grep -q 'needs /dev/net/tun' "$WORK/run-notun.err" && grep -q 'chmod 0666 /dev/net/tun' "$WORK/run-notun.err" && [ "$(containers)" -eq 0 ] && [ "$RUNS_NOTUN" -eq "$(find "$USER_HOME/.local/state/lazyagent-oci/runs" -name '*.json' | wc -l)" ] && ! grep -q '==> run' "$WORK/run-notun.err"; echo $?)" "rc=$rc $(cat "$WORK/run-notun.err")"
mkdir -p "$USER_HOME/netproj" && cp -R "$SRC/seed/." "$USER_HOME/netproj/" && printf 'environment:\n  setup: ["true"]\n  network: bridge\nseed: .\n' >"$USER_HOME/netproj/lazyagent.yaml" && chown -R "$USER_UID" "$USER_HOME/netproj"
(cd "$USER_HOME/netproj" && runuser -u "$USER_NAME" -- env -i HOME="$USER_HOME" PATH="$USER_HOME/bin:/usr/bin:/bin" lazyagent-oci env build --config lazyagent.yaml) >/dev/null 2>"$WORK/env-notun.err"
rc=$?
check "tun closed: env build with a bridge network refused, exit 2, naming the fix" "$([ $rc -eq 2 ] && grep -q 'chmod 0666 /dev/net/tun' "$WORK/env-notun.err" && [ "$(containers)" -eq 0 ]; echo $?)" "rc=$rc $(cat "$WORK/env-notun.err")"
as_user lazyagent-oci doctor --config config/stub.yaml --json >"$WORK/doctor-notun.json" 2>&1
check "tun closed: doctor warns on the container network and names the script" "$(python3 -c "
import json,sys; c={x['check']:x for x in json.load(open('$WORK/doctor-notun.json'))['checks']}
n=c['container network']; sys.exit(0 if n['status']=='warn' and 'setup-rootless.sh $USER_NAME' in n['fix'] else 1)"; echo $?)" "$(cat "$WORK/doctor-notun.json")"
chmod 0666 /dev/net/tun

as_user lazyagent-oci run --config config/stub.yaml --accept-weaker-policy --json >"$WORK/run.json" 2>"$WORK/run.err"
rc=$?
check "run as the user: the planner reached the provider, its patch proven (exit 0)" "$([ $rc -eq 0 ] && python3 -c "
import json,sys; r=json.load(open('$WORK/run.json'))
ok = r['status']=='passed' and r['tests_passed'] is True and r['planner']['status']=='patch' and r['planner_task_id'] and r['policy']['not_enforced']==['memory','pids','cpu']
sys.exit(0 if ok else 1)" && grep -q chat/completions "$USER_HOME/stub.log"; echo $?)" "rc=$rc $(tail -5 "$WORK/run.err") $(head -c 1500 "$WORK/run.json")"
for n in $SECRETS; do as_user lazyagent-oci secret delete "$n" >/dev/null 2>>"$WORK/delete.err"; done
check "secret delete removes them from the user's podman" "$(for n in $SECRETS; do ! as_user podman secret inspect "$n" >/dev/null 2>&1 || exit 1; done; [ ! -s "$WORK/delete.err" ]; echo $?)" "$(cat "$WORK/delete.err")"
kill "$STUB_PID" 2>/dev/null; wait "$STUB_PID" 2>/dev/null; STUB_PID=""

# ---- eval ----
# The user reads the patches from $WORK: the clone may sit where only root
# can read (/root is 0700).
cp "$SRC/examples/patches/wrong-add.json" "$WORK/wrong-add.json" && chmod 0644 "$WORK/wrong-add.json"
printf '%s\n' '{"id": "fix-1", "patch": "'"$WORK/fix.json"'"}' '{"id": "wrong-1", "patch": "'"$WORK/wrong-add.json"'"}' >"$WORK/tasks.jsonl"
chmod 0644 "$WORK/tasks.jsonl"
as_user lazyagent-oci eval "$WORK/tasks.jsonl" --config config/lazyagent.yaml --out "$USER_HOME/eval-refused" --json >"$WORK/eval-refused.json" 2>"$WORK/eval-refused.err"
rc=$?
check "eval without --accept-weaker-policy: refused whole, exit 2, no task run" "$([ $rc -eq 2 ] && grep -q 'cannot enforce the sandbox.s memory' "$WORK/eval-refused.err" && [ ! -e "$USER_HOME/eval-refused/results" ] && [ "$(containers)" -eq 0 ]; echo $?)" "rc=$rc $(cat "$WORK/eval-refused.err")"
as_user lazyagent-oci eval "$WORK/tasks.jsonl" --config config/lazyagent.yaml --accept-weaker-policy --out "$USER_HOME/eval" --json >"$WORK/eval.json" 2>"$WORK/eval.err"
rc=$?
check "eval with it: the fix passed, the wrong patch failed (exit 0)" "$([ $rc -eq 0 ] && python3 -c "
import json,sys; d=json.load(open('$WORK/eval.json'))
sys.exit(0 if d['passed']['ids']==['fix-1'] and d['failed']['ids']==['wrong-1'] and d['infra_error']['count']==0 else 1)"; echo $?)" "rc=$rc $(cat "$WORK/eval.err")"

# ---- env build, list, prune ----
mkdir -p "$USER_HOME/envproj" && cp -R "$SRC/seed/." "$USER_HOME/envproj/" && printf 'x\n' >"$USER_HOME/envproj/packages.txt"
cat >"$USER_HOME/envproj/lazyagent.yaml" <<'EOF'
seed: .
allow: [calculator.py]
engine:
  accept_weaker_policy: true
environment:
  setup: ["mkdir /opt/mark && cp packages.txt /opt/mark/ && chown -R 1000:1000 /opt/mark"]
  inputs: [packages.txt]
  network: none
EOF
chown -R "$USER_UID" "$USER_HOME/envproj"
as_env() { (cd "$USER_HOME/envproj" && runuser -u "$USER_NAME" -- env -i HOME="$USER_HOME" PATH="$USER_HOME/bin:/usr/bin:/bin" lazyagent-oci "$@"); }
as_env env build --config lazyagent.yaml --json >"$WORK/env.json" 2>"$WORK/env.err"
rc=$?
ENV_IMAGE="$(python3 -c "import json; print(json.load(open('$WORK/env.json'))['image'])" 2>/dev/null)"
check "env build as the user: its image in the user's storage" "$([ $rc -eq 0 ] && [ -n "$ENV_IMAGE" ] && as_user podman image exists "$ENV_IMAGE" && ! podman image exists "$ENV_IMAGE"; echo $?)" "rc=$rc $(cat "$WORK/env.err")"
as_env test --config lazyagent.yaml --patch "$WORK/fix.json" --test-command 'test "$(stat -c %u:%g /opt/mark/packages.txt)" = 1000:1000 && python3 -m unittest' --json >"$WORK/env-test.json" 2>"$WORK/env-test.err"
rc=$?
check "the environment's ids survive the user's commit: 1000 in the set-up is 1000 in the sandbox" "$([ $rc -eq 0 ]; echo $?)" "rc=$rc $(tail -3 "$WORK/env-test.err") $(python3 -c "import json; print(json.load(open('$WORK/env-test.json')).get('test_output','')[:400])" 2>&1)"
as_env env list --json >"$WORK/env-list.json" 2>&1
check "env list shows it" "$(grep -q "\"$ENV_IMAGE\"" "$WORK/env-list.json"; echo $?)" "$(cat "$WORK/env-list.json")"
as_env env prune --config lazyagent.yaml --all --json >"$WORK/env-prune.json" 2>&1
rc=$?
check "env prune --all removes it from the user's storage" "$([ $rc -eq 0 ] && ! as_user podman image exists "$ENV_IMAGE"; echo $?)" "rc=$rc $(cat "$WORK/env-prune.json")"

# ---- warm, sandboxes, reap ----
as_user lazyagent-oci warm --config config/lazyagent.yaml --seed seed --count 1 --accept-weaker-policy --json >"$WORK/warm.json" 2>"$WORK/warm.err"
rc=$?
SPARE="$(python3 -c "import json; print(json.load(open('$WORK/warm.json'))['made'][0])" 2>/dev/null)"
check "warm makes a spare in the user's podman" "$([ $rc -eq 0 ] && [ -n "$SPARE" ] && as_user podman container exists "$SPARE"; echo $?)" "rc=$rc $(cat "$WORK/warm.err" "$WORK/warm.json")"
as_user lazyagent-oci sandboxes 5 --json >"$WORK/sandboxes.json" 2>&1
check "sandboxes lists the user's runs and the spare" "$(python3 -c "
import json,sys; d=json.load(open('$WORK/sandboxes.json'))
ids=[s['run_id'] for s in d['sandboxes']]
sys.exit(0 if json.load(open('$WORK/run.json'))['run_id'] in json.dumps(d) and '$SPARE' in json.dumps(d) and all(not s['exists'] for s in d['sandboxes']) else 1)"; echo $?)" "$(cat "$WORK/sandboxes.json")"
as_user lazyagent-oci test --config config/lazyagent.yaml --patch "$WORK/fix.json" --accept-weaker-policy --json >"$WORK/warm-run.json" 2>"$WORK/warm-run.err"
rc=$?
check "the next run claims the spare" "$([ $rc -eq 0 ] && python3 -c "
import json,sys; r=json.load(open('$WORK/warm-run.json'))
sys.exit(0 if r.get('warm') and r['status']=='passed' and r['resources']['reason'].startswith('rootless podman') else 1)" && ! as_user podman container exists "$SPARE"; echo $?)" "rc=$rc $(grep warm "$WORK/warm-run.err") $(python3 -c "import json; print(json.load(open('$WORK/warm-run.json')).get('resources'))" 2>&1)"
patch slow "import time; time.sleep(60)"
as_user lazyagent-oci test --config config/lazyagent.yaml --patch "$WORK/slow.json" --accept-weaker-policy --no-baseline --timeout 120 >/dev/null 2>&1 &
SLOW_BG=$!
for _ in $(seq 1 300); do
  SLOW_PID="$(pgrep -u "$USER_UID" -f "lazyagent-oci test .*slow.json" | head -n1)"
  [ -n "$SLOW_PID" ] && as_user podman ps --format '{{.Names}}' | grep -q '^lazyagent-sandbox-' && break
  sleep 0.2
done
KILLED_RUN="$(as_user podman ps --format '{{.Names}}' | sed -n 's/^lazyagent-sandbox-//p' | head -n1)"
[ -z "$SLOW_PID" ] || kill -KILL "$SLOW_PID"
wait "$SLOW_BG" 2>/dev/null
as_user lazyagent-oci reap --json >"$WORK/reap.json" 2>"$WORK/reap.err"
rc=$?
check "reap: the killed run's sandbox removed and its record closed" "$([ $rc -eq 0 ] && [ -n "$KILLED_RUN" ] && python3 -c "
import json,sys; d=json.load(open('$WORK/reap.json'))
sys.exit(0 if d['records_closed']==['$KILLED_RUN'] and 'lazyagent-sandbox-$KILLED_RUN' in json.dumps(d['removed']) else 1)" && [ "$(containers)" -eq 0 ]; echo $?)" "rc=$rc killed '$KILLED_RUN' $(cat "$WORK/reap.json" "$WORK/reap.err")"
# A spare made now (the killed run would have claimed one made before it).
as_user lazyagent-oci warm --config config/lazyagent.yaml --seed seed --count 1 --accept-weaker-policy --json >"$WORK/warm2.json" 2>/dev/null
SPARE2="$(python3 -c "import json; print(json.load(open('$WORK/warm2.json'))['made'][0])" 2>/dev/null)"
as_user lazyagent-oci reap --json >"$WORK/reap2.json" 2>"$WORK/reap2.err"
rc=$?
check "reap: an unclaimed spare removed" "$([ $rc -eq 0 ] && [ -n "$SPARE2" ] && grep -q "$SPARE2" "$WORK/reap2.json" && [ "$(containers)" -eq 0 ]; echo $?)" "rc=$rc spare '$SPARE2' $(cat "$WORK/warm2.json" "$WORK/reap2.json" "$WORK/reap2.err")"

# ---- mcp: one tools/call over stdio ----
{ sed 's/^  # accept_weaker_policy: false.*/  accept_weaker_policy: true/' "$SRC/config/lazyagent.yaml"; printf 'mcp:\n  seeds: [%s/proj/seed]\n' "$USER_HOME"; } >"$USER_HOME/proj/config/mcp.yaml"
chown "$USER_UID" "$USER_HOME/proj/config/mcp.yaml"
python3 - "$WORK/fix.json" "$USER_HOME/proj/seed" >"$WORK/mcp.in" <<'PY'
import json, sys
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rootless_test", "version": "0"}}}))
print(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
print(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_patch", "arguments": {"seed": sys.argv[2], "patch": json.load(open(sys.argv[1]))}}}))
PY
as_user lazyagent-oci mcp --config config/mcp.yaml <"$WORK/mcp.in" >"$WORK/mcp.out" 2>"$WORK/mcp.err"
rc=$?
check "mcp: tools/call test_patch over stdio proves the fix as the user" "$([ $rc -eq 0 ] && python3 -c "
import json,sys
m=[json.loads(l) for l in open('$WORK/mcp.out')]; r=[x for x in m if x.get('id')==2][0]['result']
sys.exit(0 if not r.get('isError') and r['structuredContent']['status']=='passed' else 1)"; echo $?)" "rc=$rc $(tail -3 "$WORK/mcp.err") $(head -c 600 "$WORK/mcp.out")"

# ---- session: open, exec, diff, read, close ----
# The working copy is the sandbox root's (subordinate id $SUB_START), which
# the user cannot chown to, and the command below writes a 0600 file in a
# 0700 directory, which the user can neither read nor remove: open, diff,
# read and close each work only inside the user's namespace (session_copy.h).
SESSION_T0="$(date +%s%N)"
# Rootless on cgroup v1 has no freezer: the live model is refused by name
# unless accepted, then recorded, and host reads go unfrozen.
as_user lazyagent-oci session open --config config/lazyagent.yaml --json >/dev/null 2>"$WORK/session-refused.err"
rc=$?
check "session open without --accept-weaker-policy: refused, exit 2, the live model's freezer named" "$([ $rc -eq 2 ] && grep -q "the live session model (sessions.isolation: live) cannot freeze its sandbox" "$WORK/session-refused.err"; echo $?)" "rc=$rc $(cat "$WORK/session-refused.err")"
as_user lazyagent-oci session open --config config/lazyagent.yaml --accept-weaker-policy --json >"$WORK/session-open.json" 2>"$WORK/session-open.err"
rc=$?
SESSION="$(python3 -c "import json; print(json.load(open('$WORK/session-open.json'))['session_id'])" 2>/dev/null)"
SESSION_DIR="$USER_HOME/.local/state/lazyagent-oci/sessions/${SESSION:-none}"
check "session open as the user: its working copy given to the sandbox's root, subordinate id $SUB_START" "$([ $rc -eq 0 ] && [ -n "$SESSION" ] && [ "$(stat -c %u:%g "$SESSION_DIR/work/calculator.py")" = "$SUB_START:$(grep "^$USER_NAME:" /etc/subgid | cut -d: -f2)" ] && grep -q '"rootless": true' "$WORK/session-open.json" && grep -q '"unfrozen": "the host cannot freeze' "$WORK/session-open.json"; echo $?)" "rc=$rc $(cat "$WORK/session-open.err" "$WORK/session-open.json")"
as_user lazyagent-oci session exec "$SESSION" --json -- sh -c \
  "umask 077 && mkdir -p notes/deep && echo 'note $MARK' >notes/deep/private.txt && sed -i '0,/return a - b/s//return a + b/' calculator.py" \
  >"$WORK/session-exec.json" 2>"$WORK/session-exec.err"
rc=$?
check "session exec: the sandbox wrote a 0600 file in a new 0700 directory, as subordinate id $SUB_START" "$([ $rc -eq 0 ] && [ "$(stat -c %u:%a "$SESSION_DIR/work/notes")" = "$SUB_START:700" ] && [ "$(stat -c %u:%a "$SESSION_DIR/work/notes/deep/private.txt")" = "$SUB_START:600" ]; echo $?)" "rc=$rc $(cat "$WORK/session-exec.err" "$WORK/session-exec.json")"
as_user lazyagent-oci session diff "$SESSION" --json >"$WORK/session-diff.json" 2>"$WORK/session-diff.err"
check "session diff reads the change back: the fix and the new file" "$(python3 -c "
import json,sys; d=json.load(open('$WORK/session-diff.json'))
ok = d['changed_paths']==['calculator.py','notes/deep/private.txt'] and '+    return a + b' in d['diff'] and '+note $MARK' in d['diff']
sys.exit(0 if ok else 1)"; echo $?)" "$(cat "$WORK/session-diff.err" "$WORK/session-diff.json")"
SESSION_READ="$(as_user lazyagent-oci session read "$SESSION" notes/deep/private.txt 2>"$WORK/session-read.err")"
check "session read returns the sandbox's 0600 file" "$([ "$SESSION_READ" = "note $MARK" ]; echo $?)" "'$SESSION_READ' $(cat "$WORK/session-read.err")"
as_user lazyagent-oci session close "$SESSION" --json >"$WORK/session-close.json" 2>"$WORK/session-close.err"
rc=$?
FOREIGN="$(find "$USER_HOME/.local/state/lazyagent-oci" ! -uid "$USER_UID" 2>/dev/null | head -n 3)"
# (No container either: the leftovers check below counts the user's.)
check "session close leaves nothing: no session directory, no file of another id in the state dir, no sandbox process" "$([ $rc -eq 0 ] && [ ! -e "$SESSION_DIR" ] && [ -z "$FOREIGN" ] && ! ps -u "$SUB_START" -o pid= >/dev/null; echo $?)" "rc=$rc $(cat "$WORK/session-close.err") left: $FOREIGN $(ls -la "$SESSION_DIR" 2>&1 | head -5) $(ps -u "$SUB_START" -o pid=,args= 2>/dev/null)"
echo "     session step: $(( ($(date +%s%N) - SESSION_T0) / 1000000 )) ms"

# ---- leftovers ----
check "no container left in the user's podman" "$([ "$(containers)" -eq 0 ]; echo $?)" "$(as_user podman ps -a)"
WORKDIRS="$(find "$USER_HOME/.local/state/lazyagent-oci/work" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
check "no private copy left in the user's run store" "$([ "$WORKDIRS" -eq 0 ]; echo $?)" "$WORKDIRS left"

exit "$FAILED"
