#!/usr/bin/env bash
# Prepare a Debian 12 machine (as root) to build and run lazyagent-oci:
#   1. Debian packages (toolchain, libraries, podman + runc, debootstrap)
#   2. podman configuration for this host (runc, explicit default ulimits)
#   3. podman's API service on /run/podman/podman.sock (no systemd needed)
#      (3a. a second service for gVisor on /run/podman/lazyagent-runsc.sock)
#      (3b. podman-compose >= 1.0.6 for `export compose`: scripts/install-podman-compose.sh)
#   4. the C++ build (cmake)
#   5. the container images (scripts/build-images.sh)
#   6. the Kubernetes binaries (kube-apiserver for the export's server-side
#      dry-run, the one-node cluster of the k8s backend): scripts/k8s-cluster.sh
#      build, ~6 min the first time on an idle machine, then cached
# Idempotent: a second run changes nothing and takes a few seconds.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<EOF
usage: $(basename "$0") [--no-build] [--cli-only] [--no-images] [--rebuild-images] [--no-k8s] [-h]

  --no-build         skip the cmake build
  --cli-only         build only the lazyagent-oci binary and the images it runs (base,
                     sandbox, planner, egress-proxy): no test executables, no llama.cpp test image
  --no-images        skip building the container images
  --rebuild-images   rebuild the images even if present (build-images.sh --rebuild)
  --no-k8s           skip building the Kubernetes binaries (the [k8s] and k8s-cluster tests then fail)

Environment:
  CONTAINER_HOST=unix:///path   use an already running podman service there
  LAZYAGENT_ULIMIT_NOFILE=N, LAZYAGENT_ULIMIT_NPROC=N
                                default container ulimits, soft = hard (default 4096 each)
  LAZYAGENT_DEBIAN_MIRROR=uri   mirror for debootstrap (default: from the apt sources)
EOF
}

DO_BUILD=1
BUILD_TARGETS=()
DO_IMAGES=1
DO_K8S=1
IMAGE_ARGS=()
CLI_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) DO_BUILD=0 ;;
    --cli-only)
      BUILD_TARGETS=(--target lazyagent-oci)
      # The llama.cpp image (a sid base, ~9 min cold) serves only the llama tests.
      CLI_ONLY=1 ;;
    --no-images) DO_IMAGES=0 ;;
    --rebuild-images) IMAGE_ARGS+=(--rebuild) ;;
    --no-k8s) DO_K8S=0 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done

require_root
[ -r /etc/os-release ] && . /etc/os-release
if [ "${ID:-}" != debian ] || [ "${VERSION_ID:-}" != 12 ]; then
  warn "written for Debian 12; this is ${PRETTY_NAME:-an unknown system}"
fi
take_lock setup
T_ALL="$(now)"
CONF_CHANGED=0

# ---- 1. packages ---------------------------------------------------------------

PACKAGES=(
  # C++ build
  build-essential cmake ninja-build pkg-config git ca-certificates curl
  # the compiler cache: a fresh clone (CI's) compiles only what changed
  ccache
  # libssl-dev: libcrypto's sha256, base64 and Ed25519 (signed verdicts, src/attest/)
  libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev
  libcpp-httplib-dev catch2 python3
  # RE2 for the planner's search tool (linked statically)
  libre2-dev
  # JUnit XML test reports (src/contract/junit_report.h), linked statically
  libpugixml-dev
  # fuzzing (scripts/fuzz.sh): clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
  # container engine. runc is named explicitly: podman depends on
  # "crun | runc" and crun refuses hybrid cgroups (v1 + v2).
  podman runc conmon containernetworking-plugins
  # gVisor, for `--runtime runsc` (its own podman service, step 3a)
  runsc
  golang-github-containernetworking-plugin-dnsname slirp4netns uidmap
  fuse-overlayfs iptables
  # `podman kube play` (the Kubernetes export's pod test) needs an init binary
  catatonit
  # base image: debootstrap downloads with wget and verifies with gpgv
  debootstrap wget gpgv debian-archive-keyring
  # Kubernetes' own build scripts (scripts/k8s-cluster.sh build) copy with rsync
  rsync
  # a session's size-capped working copy: an ext4 image made by mkfs.ext4
  # (util/capped_dir.h), loop-mounted by the binary itself
  e2fsprogs
  # the local cluster's registry (scripts/k8s-registry.sh, k8s.registry) and the
  # seed image's copier (a static /bin/busybox, src/engine/k8s/k8s_seed_image.h)
  docker-registry busybox-static
  # the TLS registry's private CA and certificate (k8s-registry.sh tls-start), the
  # local cluster's serving certificates (k8s-apiserver.sh); and, with Python's
  # cryptography, the two independent verifiers of signed verdicts
  # (tests/integration/signing_test.cpp, docs/signing.md: Ed25519 over DSSE's PAE)
  openssl python3-cryptography
  # git work trees as seeds (`git ls-files`) and `apply --branch` run git (above,
  # for the build too); the diff tests and the seed benchmark use diff(1), and
  # `git apply` as the applier's oracle
  diffutils
  # bench/corpus_env.sh runs the corpus's Python tests bare on the host too
  # (its Go and Rust toolchains it installs itself: only the benchmark needs
  # them, and they would slow every fresh set-up, the demo's included)
  python3-pytest
  # Named because the scripts run them and they are not Essential (Debian can
  # be without them): apt-get/apt-cache (this script, install-podman-compose.sh,
  # k8s-cluster.sh), ip (k8s-cluster.sh stop deletes the CNI bridge).
  # scripts/check-host-commands.py (ctest "deps: ...") fails when a command the
  # scripts, the build or Kubernetes' build run is not covered by this list.
  apt iproute2
  # `man lazyagent-oci` and the shell completion the set-up installs (step 4a);
  # zsh and fish run their completion scripts in the suite (tests/completion/)
  man-db bash-completion zsh fish
  # scripts/build-deb.sh checks the package it makes (cpack, dpkg-shlibdeps: above)
  lintian
)
# For the test suite only (not with --cli-only: the demo needs none of it):
# headless Chromium opens the eval's HTML report (tests/integration/report_test.cpp
# through report_browser.py) to check it renders, loads nothing, runs no hostile script.
if [ "$CLI_ONLY" = 0 ]; then
  PACKAGES+=(chromium)
fi

missing_packages() {
  # dpkg-query prints nothing (and exits 1) for packages it has never heard of.
  local installed
  installed="$( { dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true; } |
    awk '$2 == "installed" { print $1 }')"
  local p
  for p in "${PACKAGES[@]}"; do
    grep -qxF "$p" <<<"$installed" || printf '%s\n' "$p"
  done
}

step "packages"
mapfile -t MISSING < <(missing_packages)
if [ ${#MISSING[@]} -eq 0 ]; then
  step_done "all ${#PACKAGES[@]} installed"
else
  info "missing: ${MISSING[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Unreachable third-party sources make apt-get update complain or exit
  # non-zero; that is fine as long as the Debian lists themselves are there.
  if ! apt-get update -q >&2; then
    if compgen -G "/var/lib/apt/lists/*_dists_${LAZYAGENT_DEBIAN_SUITE}_main_binary-*_Packages*" >/dev/null; then
      warn "apt-get update reported errors (see above); the Debian $LAZYAGENT_DEBIAN_SUITE lists are present, continuing"
    else
      die "apt-get update failed and no Debian $LAZYAGENT_DEBIAN_SUITE package lists are present"
    fi
  fi
  apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "${MISSING[@]}" >&2 ||
    die "apt-get install failed"
  mapfile -t STILL < <(missing_packages)
  [ ${#STILL[@]} -eq 0 ] || die "still missing after install: ${STILL[*]}"
  step_done "installed ${#MISSING[@]}"
fi

# ---- 2. podman configuration --------------------------------------------------------

# A limit for both soft and hard, clamped to this process's hard limit:
# without CAP_SYS_RESOURCE podman cannot raise a limit above it.
clamp_ulimit() {
  local n="$1" hardmax="$2"
  case "$n" in ''|*[!0-9]*) die "ulimit value must be a number, got '$n'" ;; esac
  if [ "$hardmax" != unlimited ] && [ "$n" -gt "$hardmax" ]; then n="$hardmax"; fi
  printf '%s:%s' "$n" "$n"
}

# has_cap NUMBER: does this shell hold the capability (CapEff bit NUMBER)?
has_cap() {
  local eff
  eff="$(awk '/^CapEff:/ {print $2}' /proc/self/status)"
  (( (16#$eff >> $1) & 1 ))
}

# What podman on THIS host needs beyond its defaults, and nothing else: the
# drop-in changes every container on the host, and a user's other containers
# are not ours to change. On a stock host (root with CAP_SYS_RESOURCE,
# cgroup v2, systemd) it is empty and no file is written.
podman_conf_content() {
  local nofile nproc containers="" engine=""
  if ! has_cap 24; then   # CAP_SYS_RESOURCE
    nofile="$(clamp_ulimit "${LAZYAGENT_ULIMIT_NOFILE:-4096}" "$(ulimit -Hn)")"
    nproc="$(clamp_ulimit "${LAZYAGENT_ULIMIT_NPROC:-4096}" "$(ulimit -Hu)")"
    containers="[containers]
# Explicit limits: podman otherwise asks for nofile=1048576, and on hosts
# without CAP_SYS_RESOURCE container start fails with \"setrlimit ...
# operation not permitted\". Soft = hard on purpose: podman 4.3.1's REST API
# (libpod containers/create without r_limits) applies these with soft and
# hard swapped, and runc then fails with \"error setting rlimit type 7:
# invalid argument\" whenever soft < hard here.
default_ulimits = [
  \"nofile=$nofile\",
  \"nproc=$nproc\",
]"
  fi
  case "$(cgroup_mode)" in
    v2*) ;;   # crun (podman's default) and runc both work: the user's choice stays
    *) engine="# crun refuses hybrid cgroups (v1 + v2); runc works on v1, hybrid and v2.
runtime = \"runc\"" ;;
  esac
  if [ ! -d /run/systemd/system ]; then
    engine="${engine:+$engine
}# No systemd here: manage cgroups directly, log events to a file.
cgroup_manager = \"cgroupfs\"
events_logger = \"file\""
  fi
  [ -n "$containers$engine" ] || return 0
  echo "# Written by lazyagent-oci scripts/setup.sh; rerunning it rewrites this file."
  [ -z "$containers" ] || printf '%s\n' "$containers"
  [ -z "$engine" ] || printf '\n[engine]\n%s\n' "$engine"
}

# write_if_changed FILE CONTENT -> 0 if written, 1 if it already had CONTENT
write_if_changed() {
  local f="$1" content="$2"
  if [ -f "$f" ] && [ "$(cat "$f")" = "$content" ]; then return 1; fi
  mkdir -p "$(dirname "$f")"
  printf '%s\n' "$content" >"$f.tmp.$$"
  mv -f "$f.tmp.$$" "$f"
  return 0
}

# Is FILE among the configuration files podman reads? Its debug log names
# each merged file: level=debug msg="Merged system config \"FILE\"".
podman_reads_conf() {
  local out
  out="$(podman --log-level=debug info 2>&1 >/dev/null || true)"
  [[ "$out" == *"Merged system config \\\"$1\\\""* ]]
}

step "podman configuration"
command -v podman >/dev/null || die "podman is not installed"
[ -z "${CONTAINERS_CONF:-}" ] ||
  warn "CONTAINERS_CONF=$CONTAINERS_CONF is set: podman then ignores the files written here"
CONF="$(podman_conf_content)"
DROPIN=/etc/containers/containers.conf.d/lazyagent.conf
MAINCONF=/etc/containers/containers.conf
CONF_NOTE=""
if [ -z "$CONF" ]; then
  # Nothing to add on this host; a drop-in an earlier set-up wrote goes.
  if [ -f "$DROPIN" ] && head -1 "$DROPIN" | grep -q '^# Written by lazyagent-oci'; then
    rm -f "$DROPIN"; CONF_CHANGED=1
  fi
  CONF_NOTE="podman's own configuration is kept (nothing this host needs changing)"
elif [ ! -e "$DROPIN" ] && [ -f "$MAINCONF" ] && [ "$(cat "$MAINCONF")" = "$CONF" ]; then
  CONF_NOTE="$MAINCONF unchanged (written earlier: this podman ignores drop-ins)"
elif write_if_changed "$DROPIN" "$CONF"; then
  CONF_CHANGED=1
  # podman >= 4.x reads drop-ins (containers/common); verify, since older
  # versions silently ignore the directory.
  if podman_reads_conf "$DROPIN"; then
    CONF_NOTE="wrote $DROPIN"
  else
    rm -f "$DROPIN"
    if [ ! -e "$MAINCONF" ]; then
      printf '%s\n' "$CONF" >"$MAINCONF"
      CONF_NOTE="this podman ignores containers.conf.d; wrote $MAINCONF"
    else
      warn "this podman ignores $(dirname "$DROPIN") and $MAINCONF exists; add to it:"
      printf '%s\n' "$CONF" | sed 's/^/        /' >&2
      CONF_NOTE="NOT configured (see above)"
    fi
  fi
else
  CONF_NOTE="$DROPIN unchanged"
fi
RUNTIME="$(podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null || true)"
info "cgroups: $(cgroup_mode); OCI runtime: ${RUNTIME:-unknown}"
step_done "$CONF_NOTE"

# ---- 3. podman API service ------------------------------------------------------

service_pid() {
  local pid
  pid="$(cat "$LAZYAGENT_SERVICE_PID" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'podman.*system service' || return 1
  printf '%s' "$pid"
}

# stop_service PID: SIGTERM, up to 10 s to finish, then SIGKILL.
stop_service() {
  local pid="$1"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

start_service() {
  local sock="$1" pid
  mkdir -p "$(dirname "$sock")" "$(dirname "$LAZYAGENT_SERVICE_LOG")"
  # A socket file nobody answers on is left over from a dead service.
  [ -S "$sock" ] && rm -f "$sock"
  printf '\n--- %s: starting podman system service\n' "$(date -u +%FT%TZ)" >>"$LAZYAGENT_SERVICE_LOG"
  # setsid: own session, no controlling terminal, survives this shell.
  # It must not inherit this script's lock. It runs in / : conmon inherits
  # the service's working directory and writes an `oom` file there when a
  # container is OOM-killed (seen in the repository root otherwise).
  (cd / && exec setsid nohup podman $(service_runtime_args) system service --time=0 "unix://$sock" \
    </dev/null >>"$LAZYAGENT_SERVICE_LOG" 2>&1 {LAZYAGENT_LOCK_FD}>&-) &
  pid=$!
  echo "$pid" >"$LAZYAGENT_SERVICE_PID"
  for _ in $(seq 1 50); do
    if socket_answers "$sock"; then
      info "podman service pid $pid on $sock (log $LAZYAGENT_SERVICE_LOG)"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  printf '%s: last lines of %s:\n' "$_la_prog" "$LAZYAGENT_SERVICE_LOG" >&2
  tail -n 20 "$LAZYAGENT_SERVICE_LOG" | sed 's/^/        /' >&2
  if kill -0 "$pid" 2>/dev/null; then
    die "podman service (pid $pid) does not answer on $sock after 10 s"
  fi
  die "podman service exited; it never answered on $sock"
}

step "podman API service"
SOCK="$LAZYAGENT_DEFAULT_SOCKET"
SERVICE_NOTE=""
if [ -n "${CONTAINER_HOST:-}" ]; then
  case "$CONTAINER_HOST" in
    unix://*)
      user_sock="${CONTAINER_HOST#unix://}"
      if socket_answers "$user_sock"; then
        SERVICE_NOTE="CONTAINER_HOST=$CONTAINER_HOST answers; not starting anything"
        SOCK=""
      else
        warn "CONTAINER_HOST=$CONTAINER_HOST does not answer; setting up $SOCK instead" \
             "(unset CONTAINER_HOST or point it at unix://$SOCK)"
      fi ;;
    *) warn "CONTAINER_HOST=$CONTAINER_HOST is not a unix:// socket; setting up $SOCK for this machine" ;;
  esac
fi
if [ -n "$SOCK" ]; then
  pid="$(service_pid || true)"
  if [ "$CONF_CHANGED" -eq 1 ] && [ -n "$pid" ]; then
    # The running service read the old configuration: restart the one we own.
    info "configuration changed: restarting our podman service (pid $pid)"
    stop_service "$pid"
    start_service "$SOCK"
    SERVICE_NOTE="restarted"
  elif socket_answers "$SOCK"; then
    if [ -n "$pid" ]; then
      SERVICE_NOTE="running (pid $pid)"
    else
      SERVICE_NOTE="answering (not started by this script)"
      [ "$CONF_CHANGED" -eq 0 ] ||
        warn "the podman configuration changed; restart the service on $SOCK to apply it"
    fi
  else
    if [ -n "$pid" ]; then
      warn "our podman service (pid $pid) does not answer; restarting it"
      stop_service "$pid"
    fi
    start_service "$SOCK"
    SERVICE_NOTE="started (pid $(cat "$LAZYAGENT_SERVICE_PID"))"
  fi
fi
step_done "$SERVICE_NOTE"

# ---- 3a. podman API service for gVisor (runsc) ------------------------------------

runsc_service_pid() {
  local pid
  pid="$(cat "$LAZYAGENT_RUNSC_SERVICE_PID" 2>/dev/null)" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'podman.*runsc.*system service' || return 1
  printf '%s' "$pid"
}

start_runsc_service() {
  local sock="$LAZYAGENT_RUNSC_SOCKET" pid
  mkdir -p "$(dirname "$sock")" "$(dirname "$LAZYAGENT_RUNSC_SERVICE_LOG")"
  [ -S "$sock" ] && rm -f "$sock"
  printf '\n--- %s: starting podman system service (runsc)\n' "$(date -u +%FT%TZ)" >>"$LAZYAGENT_RUNSC_SERVICE_LOG"
  # Same as start_service: own session, no lock fd, cwd / (conmon's oom files).
  (cd / && exec setsid nohup podman "${LAZYAGENT_RUNSC_FLAGS[@]}" system service --time=0 "unix://$sock" \
    </dev/null >>"$LAZYAGENT_RUNSC_SERVICE_LOG" 2>&1 {LAZYAGENT_LOCK_FD}>&-) &
  pid=$!
  echo "$pid" >"$LAZYAGENT_RUNSC_SERVICE_PID"
  for _ in $(seq 1 50); do
    if socket_answers "$sock"; then
      info "podman service (runsc) pid $pid on $sock (log $LAZYAGENT_RUNSC_SERVICE_LOG)"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  tail -n 20 "$LAZYAGENT_RUNSC_SERVICE_LOG" | sed 's/^/        /' >&2
  die "podman service (runsc) never answered on $sock"
}

step "podman API service for gVisor (runsc)"
if ! command -v runsc >/dev/null; then
  warn "runsc is not installed: --runtime runsc will not work"
  step_done "skipped"
else
  pid="$(runsc_service_pid || true)"
  if [ "$CONF_CHANGED" -eq 1 ] && [ -n "$pid" ]; then
    info "configuration changed: restarting our runsc podman service (pid $pid)"
    stop_service "$pid"
    start_runsc_service
    step_done "restarted"
  elif socket_answers "$LAZYAGENT_RUNSC_SOCKET"; then
    step_done "running${pid:+ (pid $pid)}"
  else
    if [ -n "$pid" ]; then
      warn "our runsc podman service (pid $pid) does not answer; restarting it"
      stop_service "$pid"
    fi
    start_runsc_service
    step_done "started (pid $(cat "$LAZYAGENT_RUNSC_SERVICE_PID"))"
  fi
fi

# ---- 3b. podman-compose for `export compose` (Debian 12's 1.0.3 cannot run it) ----

"$LAZYAGENT_ROOT/scripts/install-podman-compose.sh" ||
  warn "podman-compose >= 1.0.6 is not installed: exported compose stacks cannot run here" \
       "(see docs/exports.md); everything else works"

# ---- 4. build, and meanwhile the images that do not need it ---------------------
#
# The compile is CPU-bound; the base and sandbox images are mostly downloads
# (debootstrap, apt in a container). Together they take what the longer one
# takes: on a fresh 2-core machine the demo's set-up went from 292 s (170 s
# build, then 83 s images) to about the build's time. Only the planner image
# waits for the build (it runs this same binary), and its runtime layer is
# cached meanwhile, so that what is left is a COPY.
# The egress proxy's image too: environment.egress and provider.network:
# allowlist need it (a user's first run of either must not meet "image not known").
EARLY_IMAGES=(--only base --only sandbox --only planner-runtime --only egress-proxy)
[ "$CLI_ONLY" -eq 1 ] || EARLY_IMAGES+=(--only llama)
EARLY_PID=""
EARLY_LOG=""
if [ "$DO_IMAGES" -eq 1 ] && [ "$DO_BUILD" -eq 1 ]; then
  EARLY_LOG="$(mktemp /tmp/lazyagent-setup-images.XXXXXX)"
  info "images: base and sandbox$([ "$CLI_ONLY" -eq 1 ] || echo ', llama') are built during the compile (log $EARLY_LOG)"
  # Its own process group (setsid), so that a failed build can stop it whole.
  setsid "$LAZYAGENT_ROOT/scripts/build-images.sh" "${IMAGE_ARGS[@]}" "${EARLY_IMAGES[@]}" >"$EARLY_LOG" 2>&1 &
  EARLY_PID=$!
fi
# Waits for the image builds started above; their output follows the build's.
wait_early_images() {
  [ -n "$EARLY_PID" ] || return 0
  local rc=0
  wait "$EARLY_PID" || rc=$?
  EARLY_PID=""
  sed 's/^/    /' "$EARLY_LOG" >&2
  rm -f "$EARLY_LOG"
  [ "$rc" -eq 0 ] || die "building the images failed (exit $rc; output above)"
}

if [ "$DO_BUILD" -eq 1 ]; then
  step "build (cmake + ninja, RelWithDebInfo${BUILD_TARGETS:+, the CLI only})"
  cd "$LAZYAGENT_ROOT"
  # A build directory made by another generator (an older checkout used make)
  # cannot be reused by ninja: start it afresh.
  if [ -f build/CMakeCache.txt ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' build/CMakeCache.txt; then
    info "build/ was configured with another generator: removing it"
    rm -rf build
  fi
  # ccache's cache beside the set-up's other caches (CMakeLists.txt says how).
  if ! { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
           -DLAZYAGENT_CCACHE_DIR="$LAZYAGENT_CACHE_DIR/ccache" >&2 &&
         cmake --build build -j2 "${BUILD_TARGETS[@]}" >&2; }; then
    [ -z "$EARLY_PID" ] || kill -- "-$EARLY_PID" 2>/dev/null || true
    wait_early_images || true
    die "the build failed (output above)"
  fi
  step_done
fi

# ---- 4a. shell completion and the manual page --------------------------------------
# Written by the binary just built, from its own option tables (`completion SHELL`,
# `help --man`), so that they match it: `man lazyagent-oci` and Tab work after the
# quick start. Where a package or `cmake --install` put its own, those stay.

if [ -x "$LAZYAGENT_ROOT/build/lazyagent-oci" ]; then
  step "shell completion and manual page"
  b=$LAZYAGENT_ROOT/build/lazyagent-oci
  install -d /usr/local/share/bash-completion/completions /usr/local/share/zsh/site-functions \
    /usr/local/share/fish/vendor_completions.d /usr/local/share/man/man1
  "$b" completion bash > /usr/local/share/bash-completion/completions/lazyagent-oci
  "$b" completion zsh > /usr/local/share/zsh/site-functions/_lazyagent-oci
  "$b" completion fish > /usr/local/share/fish/vendor_completions.d/lazyagent-oci.fish
  "$b" help --man | gzip -9n > /usr/local/share/man/man1/lazyagent-oci.1.gz
  step_done "bash, zsh, fish; lazyagent-oci(1)"
fi

# ---- 4b. the agent tests' npm packages ---------------------------------------------
# The MCP SDK's client and Codex CLI (424 MB installed), pinned by their tests'
# package-lock.json, installed under build/ now so that no test waits for a
# download (tests/npm-install.sh; a second run finds them installed). Not for
# --cli-only: only the test suite runs them.

if [ "$CLI_ONLY" -eq 0 ] && [ -d "$LAZYAGENT_ROOT/build" ]; then
  step "npm packages of the agent tests"
  for t in mcp:mcp-client codex:codex-agent; do
    sh "$LAZYAGENT_ROOT/tests/npm-install.sh" "$LAZYAGENT_ROOT/tests/${t%%:*}" "$LAZYAGENT_ROOT/build/${t#*:}" >&2 ||
      warn "npm could not install tests/${t%%:*}'s packages: its tests will try again"
  done
  step_done
fi

# ---- 5. images ----------------------------------------------------------------------

if [ "$DO_IMAGES" -eq 1 ]; then
  step "images"
  if [ -n "$EARLY_PID" ]; then
    wait_early_images
    "$LAZYAGENT_ROOT/scripts/build-images.sh" "${IMAGE_ARGS[@]}" --only planner
  elif [ "$CLI_ONLY" -eq 1 ]; then
    "$LAZYAGENT_ROOT/scripts/build-images.sh" "${IMAGE_ARGS[@]}" --only base --only sandbox --only planner \
      --only egress-proxy
  else
    "$LAZYAGENT_ROOT/scripts/build-images.sh" "${IMAGE_ARGS[@]}"
  fi
  step_done
fi

# ---- 6. Kubernetes binaries (cached build) ---------------------------------------------

if [ "$DO_K8S" -eq 1 ]; then
  # One Go build: kube-apiserver for the export's dry-run tests and the one-node
  # cluster of the k8s backend (scripts/k8s-cluster.sh; started by its tests).
  step "Kubernetes binaries for the export and backend tests"
  "$LAZYAGENT_ROOT/scripts/k8s-cluster.sh" build
  step_done
fi

printf '==> setup done in %s\n' "$(elapsed "$T_ALL")" >&2
