#!/usr/bin/env bash
# A real Kubernetes API server (v1.20.2) on loopback, to validate the manifests
# of the Kubernetes export (src/export/export_k8s.h) with server-side dry-run
# (`kubectl apply --dry-run=server`): the server runs its own validation,
# defaulting and admission on them, which a schema check alone does not.
#
#   scripts/k8s-apiserver.sh build    # once: build + cache the binaries (idempotent)
#   scripts/k8s-apiserver.sh start    # etcd + kube-apiserver; prints the kubeconfig path
#   scripts/k8s-apiserver.sh stop     # kill both, remove the state directory
#   scripts/k8s-apiserver.sh status   # what is cached, whether a server runs
#
# Where the binaries come from (Debian 12's archive only, no registry, no
# other download):
#   kube-apiserver  built from Debian's `kubernetes` source package (the full
#                   upstream 1.20.2 tree with vendor/) with Debian's golang-1.19,
#                   offline (GOPROXY=off); Debian ships no apiserver binary
#   kubectl         Debian's kubernetes-client package (same source, 1.20.2)
#   etcd            Debian's etcd-server package (3.4)
# `build` runs scripts/k8s-cluster.sh build, which builds and caches them (with
# the rest of the one-node cluster) in $LAZYAGENT_CACHE_DIR/k8s-cluster/bin
# (default /var/cache/lazyagent-oci/k8s-cluster/bin): one Go build for both.
#
# A started server lives in one state directory, $LAZYAGENT_K8S_STATE
# (default /run/lazyagent-oci/k8s): etcd's data, generated TLS certificate,
# service-account key, a random admin token, the kubeconfig, logs, pid
# files. Both daemons listen on 127.0.0.1 only, on free ports chosen at start.
# `stop` kills them by their pid files and removes that directory.
#
# API limits of 1.20 that matter for the export (see docs/k8s.md): the
# TTLAfterFinished feature is alpha, so `start` enables its gate (otherwise
# the server silently drops ttlSecondsAfterFinished); Pod Security admission
# does not exist yet.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_CACHE="$LAZYAGENT_CACHE_DIR/k8s-cluster"   # built by scripts/k8s-cluster.sh build
K8S_BIN="$K8S_CACHE/bin"
K8S_STAMP="$K8S_CACHE/VERSIONS"
K8S_STATE="${LAZYAGENT_K8S_STATE:-/run/lazyagent-oci/k8s}"
K8S_MARKER=".lazyagent-k8s-apiserver"   # only a directory carrying it is ever removed
K8S_FEATURE_GATES="TTLAfterFinished=true"
BINARIES=(kube-apiserver kubectl etcd)

usage() {
  cat <<EOF
usage: $(basename "$0") build|start|stop|status

  build    scripts/k8s-cluster.sh build: kube-apiserver (and the cluster's other
           binaries) from Debian's kubernetes source package, kubectl and etcd from
           Debian packages, cached in $K8S_BIN (idempotent)
  start    start etcd + kube-apiserver on 127.0.0.1 in \$LAZYAGENT_K8S_STATE
           (default /run/lazyagent-oci/k8s); print the kubeconfig path on stdout
  stop     stop them and remove the state directory
  status   show the cached versions and whether a server runs

Environment:
  LAZYAGENT_K8S_STATE=DIR        state directory of a started server
  LAZYAGENT_CACHE_DIR=DIR        cache root (default /var/cache/lazyagent-oci)
  LAZYAGENT_DEBIAN_MIRROR=uri    Debian mirror (default: from the apt sources)
EOF
}

cached() {
  local b
  for b in "${BINARIES[@]}"; do [ -x "$K8S_BIN/$b" ] || return 1; done
  [ -f "$K8S_STAMP" ]
}

# ---- build --------------------------------------------------------------------

# One Go build serves both scripts: scripts/k8s-cluster.sh builds and caches
# kube-apiserver (with the cluster's other binaries), kubectl and etcd.
do_build() {
  "$LAZYAGENT_ROOT/scripts/k8s-cluster.sh" build
}

# ---- start / stop ---------------------------------------------------------------

# Three free TCP ports on 127.0.0.1 (the kernel picks them; a race with another
# process taking one in between is possible and makes start fail loudly).
pid_alive() {  # pid_alive NAME: the daemon recorded in NAME.pid still runs our binary
  local f="$K8S_STATE/$1.pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$K8S_BIN/$1" || return 1
  printf '%s' "$pid"
}

spawn() {  # spawn NAME ARGS...: a daemon in its own session, logs and pid in the state dir
  local name="$1"; shift
  setsid nohup "$K8S_BIN/$name" "$@" </dev/null >"$K8S_STATE/$name.log" 2>&1 &
  echo $! >"$K8S_STATE/$name.pid"
}

do_start() {
  cached || die "kube-apiserver, kubectl and etcd are not built: run scripts/k8s-apiserver.sh build (once, a few minutes)"
  if [ -f "$K8S_STATE/$K8S_MARKER" ]; then
    if pid_alive kube-apiserver >/dev/null && pid_alive etcd >/dev/null; then
      info "already running in $K8S_STATE"
      printf '%s\n' "$K8S_STATE/kubeconfig"
      return 0
    fi
    info "stale state in $K8S_STATE: cleaning it up"
    do_stop
  elif [ -e "$K8S_STATE" ] && [ -n "$(ls -A "$K8S_STATE" 2>/dev/null)" ]; then
    die "$K8S_STATE exists, is not empty and was not made by this script"
  fi
  mkdir -p "$K8S_STATE"
  chmod 0700 "$K8S_STATE"
  : >"$K8S_STATE/$K8S_MARKER"
  local etcd_port peer_port api_port token
  read -r etcd_port peer_port api_port < <(free_ports 3)

  # TLS: a self-signed certificate for 127.0.0.1 that kubectl verifies (no
  # insecure-skip-tls-verify); a service-account signing key (mandatory in
  # 1.20); a random admin token (system:masters) that only the kubeconfig holds.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=lazyagent-k8s-apiserver" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$K8S_STATE/apiserver.key" -out "$K8S_STATE/apiserver.crt" 2>/dev/null ||
    die "openssl could not make the serving certificate"
  openssl genrsa -out "$K8S_STATE/sa.key" 2048 2>/dev/null
  openssl rsa -in "$K8S_STATE/sa.key" -pubout -out "$K8S_STATE/sa.pub" 2>/dev/null
  token="$(openssl rand -hex 24)"
  printf '%s,lazyagent-admin,lazyagent-admin,system:masters\n' "$token" >"$K8S_STATE/tokens.csv"
  cat >"$K8S_STATE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lazyagent-local
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(base64 -w0 <"$K8S_STATE/apiserver.crt")
users:
- name: lazyagent-admin
  user:
    token: $token
contexts:
- name: lazyagent-local
  context: {cluster: lazyagent-local, user: lazyagent-admin}
current-context: lazyagent-local
EOF
  chmod 0600 "$K8S_STATE"/*.key "$K8S_STATE/tokens.csv" "$K8S_STATE/kubeconfig"

  spawn etcd --name lazyagent --data-dir "$K8S_STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "lazyagent=http://127.0.0.1:$peer_port"
  spawn kube-apiserver --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" --insecure-port=0 \
    --tls-cert-file="$K8S_STATE/apiserver.crt" --tls-private-key-file="$K8S_STATE/apiserver.key" \
    --token-auth-file="$K8S_STATE/tokens.csv" --authorization-mode=RBAC --anonymous-auth=false \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$K8S_STATE/sa.pub" --service-account-signing-key-file="$K8S_STATE/sa.key" \
    --service-cluster-ip-range=10.96.0.0/24 --endpoint-reconciler-type=none \
    --feature-gates="$K8S_FEATURE_GATES" --profiling=false

  local i
  for i in $(seq 1 120); do
    if "$K8S_BIN/kubectl" --kubeconfig "$K8S_STATE/kubeconfig" get --raw /readyz >/dev/null 2>&1; then
      info "kube-apiserver ready on https://127.0.0.1:$api_port after $((i / 2))s (etcd 127.0.0.1:$etcd_port; state $K8S_STATE)"
      printf '%s\n' "$K8S_STATE/kubeconfig"
      return 0
    fi
    if ! pid_alive etcd >/dev/null || ! pid_alive kube-apiserver >/dev/null; then break; fi
    sleep 0.5
  done
  local n
  for n in etcd kube-apiserver; do
    printf '%s: last lines of %s:\n' "$_la_prog" "$K8S_STATE/$n.log" >&2
    tail -n 15 "$K8S_STATE/$n.log" 2>/dev/null | sed 's/^/        /' >&2
  done
  do_stop
  die "kube-apiserver did not become ready"
}

# stop_pid NAME: SIGTERM, up to 10 s, then SIGKILL.
stop_pid() { stop_daemon "$1" "$K8S_STATE/$1.pid"; }

do_stop() {
  [ -d "$K8S_STATE" ] || { info "nothing in $K8S_STATE"; return 0; }
  [ -f "$K8S_STATE/$K8S_MARKER" ] || die "$K8S_STATE was not made by this script; not touching it"
  stop_pid kube-apiserver
  stop_pid etcd
  rm -rf "$K8S_STATE"
}

do_status() {
  if cached; then
    info "cached in $K8S_BIN:"
    sed 's/^/      /' "$K8S_STAMP" >&2
  else
    info "not built (run: scripts/k8s-apiserver.sh build)"
  fi
  if [ -f "$K8S_STATE/$K8S_MARKER" ] && pid_alive kube-apiserver >/dev/null; then
    info "running; kubeconfig $K8S_STATE/kubeconfig"
  else
    info "not running in $K8S_STATE"
  fi
}

case "${1:-}" in
  build) do_build ;;
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  -h|--help) usage ;;
  *) usage >&2; exit 2 ;;
esac
