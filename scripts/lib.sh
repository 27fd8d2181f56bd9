# shellcheck shell=bash disable=SC2034  # constants used by the sourcing scripts
# Shared helpers for scripts/setup.sh and scripts/build-images.sh.
# Source it; it defines functions and a few constants and runs nothing.

LAZYAGENT_ROOT="${LAZYAGENT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
LAZYAGENT_CACHE_DIR="${LAZYAGENT_CACHE_DIR:-/var/cache/lazyagent-oci}"
LAZYAGENT_DEFAULT_SOCKET="/run/podman/podman.sock"
LAZYAGENT_SERVICE_LOG="/var/log/lazyagent-podman-service.log"
LAZYAGENT_SERVICE_PID="/run/lazyagent-podman-service.pid"
# gVisor's podman service (runtime_engine.h): the runtime is chosen where a
# service starts, so runsc sandboxes have their own, on the same image storage.
LAZYAGENT_RUNSC_SOCKET="/run/podman/lazyagent-runsc.sock"
LAZYAGENT_RUNSC_SERVICE_LOG="/var/log/lazyagent-podman-runsc-service.log"
LAZYAGENT_RUNSC_SERVICE_PID="/run/lazyagent-podman-runsc-service.pid"
# What this host needs (ARCHITECTURE section 5): no netstack, no cgroups
# (memory/pids/cpu are then NOT enforced); the OCI seccomp profile applied.
LAZYAGENT_RUNSC_FLAGS=(--runtime runsc --runtime-flag network=none --runtime-flag ignore-cgroups
                       --runtime-flag oci-seccomp)
LAZYAGENT_DEBIAN_SUITE="${LAZYAGENT_DEBIAN_SUITE:-bookworm}"
LAZYAGENT_BASE_IMAGE="localhost/lazyagent-base:${LAZYAGENT_DEBIAN_SUITE}"
LAZYAGENT_SANDBOX_IMAGE="localhost/lazyagent-sandbox:latest"
# squid for environment.egress (src/engine/podman/egress_proxy.h)
LAZYAGENT_EGRESS_PROXY_IMAGE="localhost/lazyagent-egress-proxy:latest"
LAZYAGENT_PLANNER_IMAGE="localhost/lazyagent-planner:latest"
# llama.cpp's llama-server for the tests against a real OpenAI-compatible
# server (scripts/llama-server.sh): Debian sid's package, on a sid base.
LAZYAGENT_LLAMA_SUITE="sid"
LAZYAGENT_LLAMA_BASE_IMAGE="localhost/lazyagent-base:${LAZYAGENT_LLAMA_SUITE}"
LAZYAGENT_LLAMA_IMAGE="localhost/lazyagent-llama:${LAZYAGENT_LLAMA_SUITE}"

# ---- messages (all on stderr; stdout stays free for data) --------------------

_la_prog="$(basename "${0:-lazyagent}")"
info() { printf '    %s\n' "$*" >&2; }
warn() { printf '%s: warning: %s\n' "$_la_prog" "$*" >&2; }
die()  { printf '%s: error: %s\n' "$_la_prog" "$*" >&2; exit 1; }

# Seconds since the epoch with microseconds (bash >= 5).
now() { printf '%s' "${EPOCHREALTIME:-$(date +%s.%N)}"; }
# elapsed START -> "12.3s"
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# step "name": announce a step; step_done [note]: report its duration.
_la_step_name=""
_la_step_t0=""
step() {
  _la_step_name="$1"
  _la_step_t0="$(now)"
  printf '==> %s\n' "$1" >&2
}
step_done() {
  printf '    %s: %s%s\n' "$_la_step_name" "$(elapsed "$_la_step_t0")" "${1:+ ($1)}" >&2
}

require_root() {
  [ "$(id -u)" -eq 0 ] || die "run as root (the project's podman service is the rootful one at $LAZYAGENT_DEFAULT_SOCKET)"
}

# Hold an exclusive lock for the rest of the script so that two concurrent
# runs (e.g. parallel CI jobs on one machine) do not race.
# Long-lived children (the podman service) must not inherit the lock's file
# descriptor: start them with `{LAZYAGENT_LOCK_FD}>&-`.
LAZYAGENT_LOCK_FD=""
take_lock() {
  local name="$1"
  mkdir -p /run/lock
  exec {LAZYAGENT_LOCK_FD}>"/run/lock/lazyagent-oci-${name}.lock"
  if ! flock -n "$LAZYAGENT_LOCK_FD"; then
    info "waiting for another ${name} run to finish (lock /run/lock/lazyagent-oci-${name}.lock)"
    flock "$LAZYAGENT_LOCK_FD"
  fi
}

# ---- apt sources ------------------------------------------------------------

# debian_mirror [SUITE] [COMPONENT]
# Print the first http(s)/file URI that serves SUITE with COMPONENT, read from
# /etc/apt/sources.list and /etc/apt/sources.list.d/*.list (one-line format)
# and /etc/apt/sources.list.d/*.sources (deb822). LAZYAGENT_DEBIAN_MIRROR
# overrides. The repository never names a mirror host itself.
debian_mirror() {
  local suite="${1:-$LAZYAGENT_DEBIAN_SUITE}" comp="${2:-main}"
  if [ -n "${LAZYAGENT_DEBIAN_MIRROR:-}" ]; then
    printf '%s\n' "$LAZYAGENT_DEBIAN_MIRROR"
    return 0
  fi
  local f uri=""
  local -a files=()
  [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  for f in "${files[@]}"; do
    case "$f" in
      *.sources) uri="$(_debian_mirror_deb822 "$f" "$suite" "$comp")" ;;
      *)         uri="$(_debian_mirror_oneline "$f" "$suite" "$comp")" ;;
    esac
    if [ -n "$uri" ]; then
      printf '%s\n' "${uri%/}"
      return 0
    fi
  done
  return 1
}

_debian_mirror_oneline() {
  awk -v suite="$2" -v comp="$3" '
    { sub(/#.*/, "") }
    $1 != "deb" { next }
    {
      i = 2
      if ($i ~ /^\[/) {                       # [ option=value ... ]
        while (i <= NF && $i !~ /\]$/) i++
        i++
      }
      uri = $i; s = $(i + 1)
      if (s != suite || uri !~ /^(https?|file):/) next
      for (j = i + 2; j <= NF; j++) if ($j == comp) { print uri; exit }
    }' "$1"
}

_debian_mirror_deb822() {
  awk -v suite="$2" -v comp="$3" '
    function flush(   n, i, okT, okS, okC, t, s, c, u) {
      if (enabled != "no" && uris != "") {
        n = split(types, t, /[ \t]+/); okT = 0
        for (i = 1; i <= n; i++) if (t[i] == "deb") okT = 1
        n = split(suites, s, /[ \t]+/); okS = 0
        for (i = 1; i <= n; i++) if (s[i] == suite) okS = 1
        n = split(comps, c, /[ \t]+/); okC = 0
        for (i = 1; i <= n; i++) if (c[i] == comp) okC = 1
        if (okT && okS && okC) {
          n = split(uris, u, /[ \t]+/)
          for (i = 1; i <= n; i++) if (u[i] ~ /^(https?|file):/) { print u[i]; found = 1; exit }
        }
      }
      types = suites = comps = uris = enabled = ""
    }
    /^#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[ \t]/ { next }                        # continuation line (e.g. an inline key)
    {
      key = tolower($0); sub(/:.*/, "", key)
      val = $0; sub(/^[^:]*:[ \t]*/, "", val); sub(/[ \t]+$/, "", val)
      if (key == "types") types = val
      else if (key == "uris") uris = val
      else if (key == "suites") suites = val
      else if (key == "components") comps = val
      else if (key == "enabled") enabled = tolower(val)
    }
    END { if (!found) flush() }' "$1"
}

# ---- podman socket ------------------------------------------------------------

# socket_answers PATH: true if a libpod/docker API answers _ping on PATH.
socket_answers() {
  [ -S "$1" ] && curl -sf --max-time 3 --unix-socket "$1" http://d/_ping >/dev/null 2>&1
}

# ---- daemons of the Kubernetes scripts -------------------------------------------

# free_ports N: N free TCP ports on 127.0.0.1 (kernel-chosen), on one line.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# stop_daemon NAME PIDFILE: SIGTERM to the daemon the calling script's
# `pid_alive NAME` finds, up to 10 s, then SIGKILL; removes PIDFILE.
stop_daemon() {
  local pid
  pid="$(pid_alive "$1")" || { rm -f "$2"; return 0; }
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  rm -f "$2"
  info "stopped $1 (pid $pid)"
}

# private_apt DIR: an apt configuration under DIR with deb + deb-src of the
# machine's Debian mirror; prints the APT_CONFIG path. The machine's own apt
# configuration is not touched (scripts/k8s-cluster.sh, scripts/debian-source.sh).
private_apt() {
  local dir="$1" mirror
  mirror="$(debian_mirror "$LAZYAGENT_DEBIAN_SUITE" main)" ||
    die "no Debian $LAZYAGENT_DEBIAN_SUITE mirror found in the apt sources (set LAZYAGENT_DEBIAN_MIRROR)"
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/sources.d"
  cat >"$dir/sources.d/debian.sources" <<EOF
Types: deb deb-src
URIs: $mirror
Suites: $LAZYAGENT_DEBIAN_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$dir/apt.conf" <<EOF
Dir::State::Lists "$dir/lists";
Dir::Etc::SourceList "/dev/null";
Dir::Etc::SourceParts "$dir/sources.d";
Dir::Cache "$dir/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT::Sandbox::User "root";
EOF
  printf '%s\n' "$dir/apt.conf"
}

# ---- the bundled scripted provider with the demo script (demo.sh, bench) -----

# start_demo_stub BIN DIR: `BIN provider-stub` replaying the demo script in the
# background, on all of the host's addresses (the planner container reaches it
# at host.containers.internal) and a free port; its output in DIR/stub.{out,err}.
# Sets stub_pid (for the caller's cleanup) and stub_port; returns 5 if it does
# not start.
start_demo_stub() {
  "$1" provider-stub --script "$LAZYAGENT_ROOT/examples/provider-stub/demo-script.json" --listen 0.0.0.0:0 \
    >"$2/stub.out" 2>"$2/stub.err" &
  stub_pid=$!
  local _
  for _ in $(seq 1 100); do grep -q '^listening on ' "$2/stub.out" && break; sleep 0.05; done
  stub_port=$(sed -n 's#^listening on http://[^:]*:\([0-9]*\)/v1$#\1#p' "$2/stub.out")
  [ -n "$stub_port" ] || { cat "$2/stub.err" >&2; echo "the scripted provider did not start" >&2; return 5; }
}

# demo_config PREFIX [PLANNER_IMAGE]: config/lazyagent.yaml on stdout with the
# repository's seed/ and the provider secrets renamed PREFIX_{BASE_URL,MODEL,API_KEY}
# (never the names a real provider may be stored under), and that planner image.
demo_config() {
  sed -e "s#^seed: .*#seed: $LAZYAGENT_ROOT/seed#" \
      -e "s#CODING_AGENT_BASE_URL#${1}_BASE_URL#; s#CODING_AGENT_MODEL#${1}_MODEL#; s#CODING_AGENT_API_KEY#${1}_API_KEY#" \
      -e "s#^\(  planner: \)localhost/lazyagent-planner:latest#\1${2:-localhost/lazyagent-planner:latest}#" \
      "$LAZYAGENT_ROOT/config/lazyagent.yaml"
}

cgroup_mode() {
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    echo "v2 (unified)"
  elif [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
    echo "hybrid (v1 controllers + v2 at /sys/fs/cgroup/unified)"
  else
    echo "v1"
  fi
}

# The runtime the set-up's podman services run: podman's own default (crun on
# a stock host) where cgroups are v2; runc on v1 or hybrid, which crun refuses.
service_runtime_args() {
  case "$(cgroup_mode)" in
    v2*) ;;
    *) printf '%s\n' --runtime runc ;;
  esac
}
