#!/usr/bin/env bash
# Makes an ordinary user ready to run lazyagent-oci on the user's own rootless
# podman (docs/rootless.md). Run as root; idempotent.
#
#   scripts/setup-rootless.sh [--storage vfs|overlay] USER
#       subordinate ids (/etc/subuid, /etc/subgid) if USER has none;
#       /run/user/UID (XDG_RUNTIME_DIR: no systemd user session here);
#       USER's podman configuration (runc, cgroupfs, file events; storage
#       overlay for a user with no storage yet, see --storage);
#       /dev/net/tun open to users (0666, Debian's mode: rootless container
#       networks need it; see below);
#       USER's podman service on /run/user/UID/podman/podman.sock (pid file
#       /run/user/UID/lazyagent-podman.pid, log /run/user/UID/lazyagent-podman.log);
#       the sandbox and planner images copied from root's storage
#       (podman save | podman load as USER, skipped when already the same).
#       The last line on stdout is the socket's unix:// address.
#   scripts/setup-rootless.sh --stop USER
#       stops USER's service and podman's pause process, by their pids.
#
# --storage: the storage driver of a user who has none yet. Default: overlay
# (the kernel's native overlay inside the user namespace, kernel >= 5.13)
# where the kernel has it, else vfs (what podman picks by itself here): vfs
# copies the whole image for every container, which made a cold sandbox run
# about 3x slower here (docs/rootless.md, docs/performance.md).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { die "usage: $0 [--storage vfs|overlay] USER | $0 --stop USER"; }

STORAGE="" STOP=0 STORAGE_DEFAULT=""
while [ $# -gt 1 ]; do
  case "$1" in
    --storage) STORAGE="$2"; shift 2 ;;
    --stop) STOP=1; shift ;;
    *) usage ;;
  esac
done
[ $# -eq 1 ] || usage
USER_NAME="$1"
case "$STORAGE" in ''|vfs|overlay) ;; *) die "--storage must be vfs or overlay, got '$STORAGE'" ;; esac
if [ -z "$STORAGE" ]; then
  IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
  if [ "$kmaj" -gt 5 ] || { [ "$kmaj" -eq 5 ] && [ "${kmin%%[!0-9]*}" -ge 13 ]; }; then STORAGE=overlay; else STORAGE=vfs; fi
  STORAGE_DEFAULT=1
fi
[ "$(id -u)" -eq 0 ] || die "run as root: it writes /etc/subuid and /run/user/UID, and reads root's images"
USER_UID="$(id -u "$USER_NAME" 2>/dev/null)" || die "no such user: $USER_NAME"
[ "$USER_UID" -ne 0 ] || die "$USER_NAME is root: root uses scripts/setup.sh"
USER_GID="$(id -g "$USER_NAME")"
USER_HOME="$(getent passwd "$USER_NAME" | cut -d: -f6)"
RUNTIME_DIR="/run/user/$USER_UID"
SOCK="$RUNTIME_DIR/podman/podman.sock"
PID_FILE="$RUNTIME_DIR/lazyagent-podman.pid"
LOG_FILE="$RUNTIME_DIR/lazyagent-podman.log"

# as_user CMD...: CMD as USER, in /, with the environment a login would give.
as_user() {
  (cd / && runuser -u "$USER_NAME" -- env -i HOME="$USER_HOME" USER="$USER_NAME" LOGNAME="$USER_NAME" \
    PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$RUNTIME_DIR" "$@")
}

# pid_of FILE PATTERN: the pid in FILE when that process's command line matches.
pid_of() {
  local pid
  pid="$(cat "$1" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$2" || return 1
  [ "$(stat -c %u "/proc/$pid")" = "$USER_UID" ] || return 1
  printf '%s' "$pid"
}

# stop_pid PID: SIGTERM, up to 10 s, then SIGKILL.
stop_pid() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
}

# stop_service: USER's service and podman's pause process (which holds the
# user namespace and its rootless network namespace), by their pid files.
stop_service() {
  stop_note="not running"
  if pid="$(pid_of "$PID_FILE" 'podman.*system service')"; then stop_pid "$pid"; stop_note="stopped pid $pid"; fi
  rm -f "$PID_FILE"
  if pid="$(pid_of "$RUNTIME_DIR/libpod/tmp/pause.pid" 'catatonit\|pause')"; then
    stop_pid "$pid"
    stop_note="$stop_note; pause process $pid stopped"
  fi
}

if [ "$STOP" -eq 1 ]; then
  step "stopping $USER_NAME's podman service"
  stop_service
  step_done "$stop_note"
  exit 0
fi

step "subordinate ids of $USER_NAME"
note=""
for f in /etc/subuid /etc/subgid; do
  touch "$f"
  if grep -q "^\($USER_NAME\|$USER_UID\):" "$f"; then
    note="$note $(basename "$f") $(grep -m1 "^\($USER_NAME\|$USER_UID\):" "$f" | cut -d: -f2,3)"
    continue
  fi
  # The next free 65536 ids above every range in the file (at least 100000).
  start="$(awk -F: 'BEGIN { n = 100000 } NF == 3 && $2 + $3 > n { n = $2 + $3 } END { print n }' "$f")"
  if [ "$f" = /etc/subuid ]; then usermod --add-subuids "$start-$((start + 65535))" "$USER_NAME"
  else usermod --add-subgids "$start-$((start + 65535))" "$USER_NAME"; fi
  note="$note $(basename "$f") $start:65536 (added)"
done
step_done "${note# }"

step "XDG_RUNTIME_DIR and $USER_NAME's podman configuration"
install -d -m 0700 -o "$USER_UID" -g "$USER_GID" "$RUNTIME_DIR" "$RUNTIME_DIR/podman"
conf_dir="$USER_HOME/.config/containers"
as_user mkdir -p "$conf_dir"
# Only what this host needs, as for root (scripts/setup.sh): runc where crun
# cannot run (cgroup v1 or hybrid); cgroupfs and file events where the user
# has no systemd user session (no /run/user/UID/bus). The sandbox sets its own
# rlimits (nofile, nproc). On a stock host nothing is written: the user's
# podman keeps its own configuration.
engine=""
[ -z "$(service_runtime_args)" ] || engine='runtime = "runc"'
if [ ! -S "$RUNTIME_DIR/bus" ]; then
  engine="${engine:+$engine
}cgroup_manager = \"cgroupfs\"
events_logger = \"file\""
fi
if [ -n "$engine" ]; then
  printf '# Written by lazyagent-oci scripts/setup-rootless.sh; rerunning it rewrites this file.\n[engine]\n%s\n' "$engine" |
    as_user sh -c "cat >'$conf_dir/containers.conf.tmp' && mv -f '$conf_dir/containers.conf.tmp' '$conf_dir/containers.conf'"
  note="wrote $conf_dir/containers.conf"
else
  if [ -f "$conf_dir/containers.conf" ] &&
     head -1 "$conf_dir/containers.conf" | grep -q '^# Written by lazyagent-oci'; then
    rm -f "$conf_dir/containers.conf"
  fi
  note="$USER_NAME's podman configuration kept (nothing this host needs changing)"
fi
# podman records the driver in its database at first use: set it before that.
# A user who has storage keeps its driver unless --storage asked otherwise.
driver="$STORAGE"
if [ -d "$USER_HOME/.local/share/containers/storage" ]; then
  current="$(as_user podman info --format '{{.Store.GraphDriverName}}' 2>/dev/null || true)"
  [ "$current" = "$STORAGE" ] || [ -n "${STORAGE_DEFAULT:-}" ] ||
    die "$USER_NAME's storage already uses '$current': $0 --stop $USER_NAME, then as $USER_NAME \`podman system reset\`"
  [ -z "$current" ] || driver="$current"
fi
# runroot and graphroot written out: podman 4.3's service unsets
# XDG_RUNTIME_DIR around each container status query and restores it, so two
# concurrent queries (eval's two jobs) can leave it empty for good; its next
# commit (`env build`) then derives no run root ("CommitFailure: runroot must
# be set"). With the paths in storage.conf nothing derives them.
storage_conf="$(printf '# Written by lazyagent-oci scripts/setup-rootless.sh; rerunning it rewrites this file.\n[storage]\ndriver = "%s"\nrunroot = "%s/containers"\ngraphroot = "%s/.local/share/containers/storage"\n' "$driver" "$RUNTIME_DIR" "$USER_HOME")"
if [ "$(cat "$conf_dir/storage.conf" 2>/dev/null)" != "$storage_conf" ]; then
  printf '%s\n' "$storage_conf" | as_user sh -c "cat >'$conf_dir/storage.conf.tmp' && mv -f '$conf_dir/storage.conf.tmp' '$conf_dir/storage.conf'"
  stop_service  # a running service read the old file: the next step starts it again
  note="$note; wrote $conf_dir/storage.conf (storage driver $driver, runroot, graphroot); service: $stop_note"
fi
step_done "$note"

step "/dev/net/tun for $USER_NAME's container networks"
# Rootless podman networks a container (the planner's bridge, an environment
# set-up's) through slirp4netns, which opens /dev/net/tun as the user.
# Debian's udev makes it 0666; a container host may leave it root's alone
# (0600), and then every such start fails and leaves the user's rootless
# network namespace half made, which only a restart of the service and its
# pause process clears.
if [ ! -c /dev/net/tun ]; then
  mkdir -p /dev/net
  mknod -m 0666 /dev/net/tun c 10 200
  note="created (0666)"
elif runuser -u "$USER_NAME" -- sh -c ': <>/dev/net/tun' 2>/dev/null; then
  note="opens as $USER_NAME ($(stat -c %a /dev/net/tun))"
else
  was="$(stat -c %a /dev/net/tun)"
  chmod 0666 /dev/net/tun
  stop_service
  note="mode $was -> 0666 (Debian's usual); $USER_NAME's service: $stop_note"
fi
step_done "$note"

step "$USER_NAME's podman service"
if pid="$(pid_of "$PID_FILE" 'podman.*system service')" && socket_answers "$SOCK"; then
  note="running (pid $pid)"
else
  [ -z "${pid:-}" ] || stop_pid "$pid"
  [ -S "$SOCK" ] && rm -f "$SOCK"
  printf '\n--- %s: starting podman system service\n' "$(date -u +%FT%TZ)" >>"$LOG_FILE"
  chown "$USER_UID:$USER_GID" "$LOG_FILE"
  # setsid: its own session, survives this script.
  (cd / && exec setsid runuser -u "$USER_NAME" -- env -i HOME="$USER_HOME" USER="$USER_NAME" \
    LOGNAME="$USER_NAME" PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$RUNTIME_DIR" \
    podman $(service_runtime_args) system service --time=0 "unix://$SOCK" </dev/null >>"$LOG_FILE" 2>&1) &
  launcher=$!
  pid=""
  for _ in $(seq 1 100); do
    if socket_answers "$SOCK"; then break; fi
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
  done
  socket_answers "$SOCK" || { tail -n 20 "$LOG_FILE" >&2; die "$USER_NAME's podman service never answered on $SOCK"; }
  # The podman process itself (runuser's child), for --stop.
  pid="$(pgrep -P "$launcher" -f 'podman.*system service' | head -n1 || true)"
  [ -n "$pid" ] || pid="$launcher"
  echo "$pid" >"$PID_FILE"
  note="started (pid $pid, log $LOG_FILE)"
fi
step_done "$note"

step "images in $USER_NAME's storage"
note=""
for image in "$LAZYAGENT_SANDBOX_IMAGE" "$LAZYAGENT_PLANNER_IMAGE"; do
  if ! want="$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null)"; then
    [ "$image" = "$LAZYAGENT_SANDBOX_IMAGE" ] || { warn "root has no $image (run needs it): scripts/build-images.sh builds it"; continue; }
    die "root has no $image: run scripts/build-images.sh first"
  fi
  have="$(as_user podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
  if [ "$have" = "$want" ]; then note="$note $image present;"; continue; fi
  t0="$(now)"
  podman save "$image" | as_user podman load -q >/dev/null
  note="$note $image loaded in $(elapsed "$t0");"
done
step_done "${note# }"

echo "unix://$SOCK"
