#!/usr/bin/env bash
# A real single-node Kubernetes (v1.20.2) on this machine, for the k8s backend
# (`lazyagent-oci run --backend k8s`) and its tests (tests/k8s, label k8s-cluster).
# Adapted from the recipe in /work/shared/k8s-local (local-cluster.sh).
#
#   scripts/k8s-cluster.sh build    # once: build + cache binaries, pause image (idempotent; ~5-6 min cold)
#   scripts/k8s-cluster.sh start    # etcd, apiserver, controller-manager, scheduler, containerd, kubelet;
#                                   # imports the podman images; prints the kubeconfig path on stdout
#   scripts/k8s-cluster.sh stop     # stop everything, undo the host changes, remove the state directory
#   (start and stop also start and stop the local registry, scripts/k8s-registry.sh, which
#   containerd pulls from over plain HTTP on 127.0.0.1: config k8s.registry; and its TLS
#   instance on 127.0.0.1:25502, which containerd pulls from verifying its private CA)
#   scripts/k8s-cluster.sh status
#
# Everything comes from Debian 12's archive (apt-get source / download + dpkg -x into
# the cache, nothing installed system-wide): kube-apiserver, kube-controller-manager,
# kube-scheduler and kubelet built from Debian's `kubernetes` source package with
# golang-1.19 (offline); kubectl (kubernetes-client), etcd-server, containerd, runc,
# runsc (gVisor) and the CNI plugins as Debian packages; a static pause image compiled
# from the same tree. Cache: $LAZYAGENT_CACHE_DIR/k8s-cluster (default
# /var/cache/lazyagent-oci/k8s-cluster). Workload images are exported read-only from
# podman (localhost/lazyagent-sandbox:latest, localhost/lazyagent-planner:latest) into
# containerd at start; the podman tags are not touched.
#
# Daemons bind to 127.0.0.1. State lives in $LAZYAGENT_K8S_CLUSTER_STATE (default
# /var/lib/lazyagent-oci/k8s-cluster; not /run: containerd's overlay snapshots need a real
# disk). The kubelet and containerd change a few host things (sysctls, /run/containerd-like
# paths, /var/log/pods, the CNI bridge, kubepods cgroups): `start` records them, `stop`
# restores them.
#
# Sandbox isolation without a NetworkPolicy engine: containerd gets a second runtime
# handler `lazyagent-nonet` = the runc v2 shim driving Debian's runsc (gVisor) through
# BinaryName with --network=none; the RuntimeClass `lazyagent-nonet` selects it. A pod of
# that class has only gVisor's loopback, whatever the CNI does.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

C_CACHE="$LAZYAGENT_CACHE_DIR/k8s-cluster"
C_BIN="$C_CACHE/bin"
C_ROOT="$C_CACHE/root"
C_STAMP="$C_CACHE/VERSIONS"
C_STATE="${LAZYAGENT_K8S_CLUSTER_STATE:-/var/lib/lazyagent-oci/k8s-cluster}"
C_MARKER=".lazyagent-k8s-cluster"
SRC_PACKAGE="kubernetes"
KUBE_BUILT=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
DEBS=(golang-1.19-go golang-1.19-src etcd-server kubernetes-client containerd runc runsc containernetworking-plugins)
BRIDGE="${LAZYAGENT_K8S_BRIDGE:-lzacni0}"
POD_SUBNET="${LAZYAGENT_K8S_POD_SUBNET:-10.244.91.0/24}"
RUNTIME_CLASS="lazyagent-nonet"
WORKLOAD_IMAGES=("$LAZYAGENT_SANDBOX_IMAGE" "$LAZYAGENT_PLANNER_IMAGE")

usage() {
  cat <<EOF
usage: $(basename "$0") build|start|stop|status|kubectl ARGS...

  build    build kube-apiserver, kube-controller-manager, kube-scheduler and kubelet from
           Debian's kubernetes source package; unpack etcd, kubectl, containerd, runc, runsc
           and the CNI plugins from Debian packages; cache all in $C_CACHE (idempotent)
  start    start a one-node cluster on 127.0.0.1; import the podman images
           ${WORKLOAD_IMAGES[*]}; print the kubeconfig path on stdout
  stop     stop it, restore the host changes, remove the state directory
  status   what is cached, whether a cluster runs
  kubectl  the cached kubectl against the running cluster (its admin kubeconfig)

Environment:
  LAZYAGENT_K8S_CLUSTER_STATE=DIR   state directory (default /var/lib/lazyagent-oci/k8s-cluster)
  LAZYAGENT_CACHE_DIR=DIR           cache root (default /var/cache/lazyagent-oci)
  LAZYAGENT_DEBIAN_MIRROR=uri       Debian mirror (default: from the apt sources)
EOF
}

cached() {
  local b
  for b in "${KUBE_BUILT[@]}" kubectl etcd; do [ -x "$C_BIN/$b" ] || return 1; done
  [ -x "$C_ROOT/usr/bin/containerd" ] && [ -f "$C_CACHE/images/pause-oci.tar" ] && [ -f "$C_STAMP" ]
}


do_build() {
  require_root
  take_lock k8s-cluster-build
  if cached; then
    info "cached in $C_CACHE:"; sed 's/^/      /' "$C_STAMP" >&2; return 0
  fi
  local t_all work
  t_all="$(now)"
  mkdir -p "$LAZYAGENT_CACHE_DIR"
  work="$(mktemp -d /var/tmp/lazyagent-k8s-cluster-build.XXXXXX)"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" EXIT   # the Go build tree is a few GB

  step "fetch (apt-get source $SRC_PACKAGE, apt-get download ${DEBS[*]})"
  export APT_CONFIG
  APT_CONFIG="$(private_apt "$work/apt")"
  apt-get -q update >&2 || die "apt-get update (private deb-src list) failed"
  mkdir -p "$work/debs" "$work/root"
  (cd "$work" && apt-get -q source --download-only "$SRC_PACKAGE/$LAZYAGENT_DEBIAN_SUITE" >&2) ||
    die "apt-get source $SRC_PACKAGE failed"
  (cd "$work/debs" && apt-get -q download "${DEBS[@]}" >&2) || die "apt-get download failed"
  local d
  for d in "$work"/debs/*.deb; do dpkg -x "$d" "$work/root"; done
  local orig src_version
  orig="$(find "$work" -maxdepth 1 -name "${SRC_PACKAGE}_*.orig.tar.*" | head -n 1)"
  [ -n "$orig" ] || die "no ${SRC_PACKAGE} orig tarball was downloaded"
  src_version="$(sed -n 's/^Version: //p' "$work"/${SRC_PACKAGE}_*.dsc | head -n 1)"
  mkdir -p "$work/src"
  tar -xf "$orig" -C "$work/src" --strip-components=1
  [ -d "$work/src/vendor" ] || die "the $SRC_PACKAGE source has no vendor/: cannot build offline"
  step_done "$SRC_PACKAGE $src_version"

  step "build ${KUBE_BUILT[*]} (go, offline)"
  local t_build build_s what=""
  for d in "${KUBE_BUILT[@]}"; do what+="cmd/$d "; done
  t_build="$(date +%s)"
  (
    cd "$work/src"
    export PATH="$work/root/usr/lib/go-1.19/bin:$PATH"
    export GOROOT="$work/root/usr/lib/go-1.19"
    export GOPROXY=off GOFLAGS='' GOCACHE="$work/gocache"
    export KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20 KUBE_GIT_TREE_STATE=clean
    make WHAT="${what% }" KUBE_BUILD_PLATFORMS=linux/amd64 >&2
  ) || die "building ${KUBE_BUILT[*]} failed (see above)"
  build_s=$(( $(date +%s) - t_build ))
  step_done "${build_s}s"

  step "pause image (static, from the same tree)"
  local staging="$C_CACHE.new.$$"
  rm -rf "$staging"
  mkdir -p "$staging/bin" "$staging/images" "$staging/root"
  gcc -Os -Wall -Werror -static -DVERSION=v3.4-lazyagent -o "$staging/images/pause" "$work/src/build/pause/linux/pause.c"
  strip "$staging/images/pause"
  python3 "$LAZYAGENT_ROOT/scripts/oci-single-binary-image.py" "$staging/images/pause" localhost/pause:3.4 \
    "$staging/images/pause-oci.tar"
  step_done

  step "cache"
  for d in "${KUBE_BUILT[@]}"; do cp -L "$work/src/_output/bin/$d" "$staging/bin/"; done
  cp -L "$work/root/usr/bin/kubectl" "$work/root/usr/bin/etcd" "$staging/bin/"
  # containerd (+ its shims), runc, runsc, CNI plugins: the unpacked packages
  cp -a "$work/root/usr" "$staging/root/"
  rm -rf "$staging/root/usr/lib/go-1.19" "$staging/root/usr/share/go-1.19" "$staging/root/usr/share/doc"
  {
    echo "kubernetes source package: $src_version (${KUBE_BUILT[*]} built here in ${build_s}s)"
    for d in "${KUBE_BUILT[@]}"; do echo "$d: $("$staging/bin/$d" --version 2>&1 | head -n 1)"; done
    for d in "$work"/debs/*.deb; do echo "deb: $(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)"; done
    echo "built: $(date -u +%FT%TZ)"
  } >"$staging/VERSIONS"
  rm -rf "$C_CACHE"
  mv "$staging" "$C_CACHE"
  sed 's/^/      /' "$C_STAMP" >&2
  step_done "$C_CACHE"
  printf '==> k8s-cluster build done in %s\n' "$(elapsed "$t_all")" >&2
}


# ---- start / stop ---------------------------------------------------------------

pid_alive() {  # pid_alive NAME: the daemon recorded in NAME.pid still runs
  local f="$C_STATE/pids/$1.pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  printf '%s' "$pid"
}

spawn() {  # spawn NAME BINARY ARGS...: a daemon in its own session, log + pid in the state dir
  local name="$1"; shift
  PATH="$C_ROOT/usr/bin:$C_ROOT/usr/sbin:$PATH" setsid nohup "$@" </dev/null >"$C_STATE/logs/$name.log" 2>&1 {LAZYAGENT_LOCK_FD}>&- &
  echo $! >"$C_STATE/pids/$name.pid"
}

ctr_() { "$C_ROOT/usr/bin/ctr" -a "$C_STATE/ctrd/containerd.sock" -n k8s.io "$@"; }
kubectl_() { "$C_BIN/kubectl" --kubeconfig "$C_STATE/kubeconfig" "$@"; }

wait_for() {  # wait_for SECONDS WHAT CMD...: poll every 0.5 s
  local n=$(( $1 * 2 )) what="$2" i; shift 2
  for i in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  die "$what did not happen within $(( n / 2 ))s (logs in $C_STATE/logs)"
}

host_snapshot() {  # what the kubelet/containerd change outside the state dir, to restore at stop
  sysctl vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys \
    kernel.keys.root_maxbytes 2>/dev/null | sed 's/ = /=/' >"$C_STATE/host/sysctl-orig.txt"
  local d
  for d in /run/containerd /var/log/pods /var/log/containers /var/lib/kubelet /etc/cni /opt/cni; do
    [ -e "$d" ] || echo "$d"
  done >"$C_STATE/host/created-paths.txt"
}

write_certs() {
  local s="$C_STATE/pki"
  mkdir -p "$s"; chmod 0700 "$s"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=lazyagent-k8s-ca" \
    -keyout "$s/ca.key" -out "$s/ca.crt" 2>/dev/null
  # apiserver serving certificate (verified by every client: no insecure-skip-tls-verify)
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$s/apiserver.key" -out "$s/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' >"$s/apiserver.ext"
  openssl x509 -req -in "$s/apiserver.csr" -CA "$s/ca.crt" -CAkey "$s/ca.key" -CAcreateserial -days 2 \
    -extfile "$s/apiserver.ext" -out "$s/apiserver.crt" 2>/dev/null
  # the admin's client certificate (O=system:masters): the kubeconfig the project uses
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/O=system:masters/CN=lazyagent-admin" \
    -keyout "$s/admin.key" -out "$s/admin.csr" 2>/dev/null
  openssl x509 -req -in "$s/admin.csr" -CA "$s/ca.crt" -CAkey "$s/ca.key" -CAcreateserial -days 2 \
    -out "$s/admin.crt" 2>/dev/null
  openssl genrsa -out "$s/sa.key" 2048 2>/dev/null
  openssl rsa -in "$s/sa.key" -pubout -out "$s/sa.pub" 2>/dev/null
  local u t
  : >"$s/tokens.csv"
  for u in kubelet kcm sched; do
    t="$(openssl rand -hex 24)"
    case $u in
      kubelet) printf '%s,system:node:localhost,system:node:localhost,system:nodes\n' "$t" ;;
      kcm) printf '%s,system:kube-controller-manager,system:kube-controller-manager\n' "$t" ;;
      sched) printf '%s,system:kube-scheduler,system:kube-scheduler\n' "$t" ;;
    esac >>"$s/tokens.csv"
    kubeconfig_file "$C_STATE/conf/$u.kubeconfig" "token: $t"
  done
  kubeconfig_file "$C_STATE/kubeconfig" "client-certificate-data: $(base64 -w0 <"$s/admin.crt")
    client-key-data: $(base64 -w0 <"$s/admin.key")"
  chmod 0600 "$C_STATE"/conf/*.kubeconfig "$C_STATE/kubeconfig"
}

kubeconfig_file() {  # kubeconfig_file PATH "USER-FIELDS"
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lazyagent-cluster
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 <"$C_STATE/pki/ca.crt")
users:
- name: user
  user:
    $2
contexts:
- name: lazyagent-cluster
  context: {cluster: lazyagent-cluster, user: user, namespace: default}
current-context: lazyagent-cluster
EOF
}

write_config() {
  mkdir -p "$C_STATE/cni/net.d" "$C_STATE/cni/ipam" "$C_STATE/ctrd" "$C_STATE/kubelet"
  # The no-network runtime: the runc v2 shim drives runsc (gVisor) instead of runc.
  # runsc speaks runc's command line; --network=none gives every sandbox only its own
  # loopback, whatever network namespace the CNI prepared. Debian ships no runsc shim;
  # scripts/runsc-nonet.py bridges the two differences from runc that matter to the shim.
  cp "$LAZYAGENT_ROOT/scripts/runsc-nonet.py" "$C_STATE/runsc-nonet.py"
  printf '#!/bin/sh\nexec python3 %s %s "$@"\n' "$C_STATE/runsc-nonet.py" "$C_ROOT/usr/bin/runsc" >"$C_STATE/runsc-nonet"
  chmod 0755 "$C_STATE/runsc-nonet"
  cat >"$C_STATE/conf/containerd.toml" <<EOF
version = 2
root = "$C_STATE/ctrd/root"
state = "$C_STATE/ctrd/state"
oom_score = 0
[grpc]
  address = "$C_STATE/ctrd/containerd.sock"
[ttrpc]
  address = "$C_STATE/ctrd/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$C_STATE/ctrd/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "localhost/pause:3.4"
    disable_apparmor = true
    restrict_oom_score_adj = true
    disable_hugetlb_controller = true
    tolerate_missing_hugetlb_controller = true
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$C_STATE/conf/certs.d"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "$C_ROOT/usr/lib/cni"
      conf_dir = "$C_STATE/cni/net.d"
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = "$C_ROOT/usr/sbin/runc"
          Root = "$C_STATE/ctrd/runc-root"
          SystemdCgroup = false
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.$RUNTIME_CLASS]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.$RUNTIME_CLASS.options]
          BinaryName = "$C_STATE/runsc-nonet"
          Root = "$C_STATE/ctrd/runsc-shim-root"
          SystemdCgroup = false
EOF
  # The local registry (scripts/k8s-registry.sh): plain HTTP on loopback; and
  # the address of the authenticated one a test starts (the pull Secret's test).
  local reg
  for reg in "$("$LAZYAGENT_ROOT/scripts/k8s-registry.sh" address)" \
             "$("$LAZYAGENT_ROOT/scripts/k8s-registry.sh" auth-address)"; do
    mkdir -p "$C_STATE/conf/certs.d/$reg"
    cat >"$C_STATE/conf/certs.d/$reg/hosts.toml" <<EOF
server = "http://$reg"
[host."http://$reg"]
  capabilities = ["pull", "resolve"]
EOF
  done
  # The TLS registry (k8s-registry.sh tls-start): pulled over https, verified
  # against the private CA that script makes (its path is fixed; the file
  # exists once the registry runs, before any pull).
  reg="$("$LAZYAGENT_ROOT/scripts/k8s-registry.sh" tls-address)"
  mkdir -p "$C_STATE/conf/certs.d/$reg"
  cat >"$C_STATE/conf/certs.d/$reg/hosts.toml" <<EOF
server = "https://$reg"
[host."https://$reg"]
  capabilities = ["pull", "resolve"]
  ca = "$("$LAZYAGENT_ROOT/scripts/k8s-registry.sh" tls-ca)"
EOF
  cat >"$C_STATE/cni/net.d/10-lazyagent-bridge.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "lazyagent-k8s", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$C_STATE/cni/ipam", "ranges": [[{"subnet": "$POD_SUBNET"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}}]}
EOF
  # podPidsLimit counts host tasks: under the gVisor runtime (ptrace platform) that is the
  # Sentry's Go threads plus a stub process per guest address space, not the sandbox's own
  # processes. At 512, cJSON's cmake/make -j2 build made the Sentry's clone fail with EAGAIN
  # ("panic: error initializing first thread", the pod's exit 2). The sandbox's own pids
  # limit is not enforced on Kubernetes either way (export k8s: "not enforced").
  cat >"$C_STATE/conf/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HZ_PORT
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
maxOpenFiles: 20000
makeIPTablesUtilChains: false
volumePluginDir: $C_STATE/kubelet/volume-plugins
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
podPidsLimit: 4096
evictionHard: {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOF
}

import_images() {
  ctr_ images ls -q | grep -qx localhost/pause:3.4 || ctr_ images import "$C_CACHE/images/pause-oci.tar" >&2
  local img id tar
  mkdir -p "$C_CACHE/images/workload"
  for img in "${WORKLOAD_IMAGES[@]}"; do
    id="$(podman image inspect --format '{{.Id}}' "$img" 2>/dev/null)" || die "podman has no image $img (scripts/build-images.sh)"
    tar="$C_CACHE/images/workload/${id:0:20}.tar"
    if [ ! -f "$tar" ]; then   # read-only export, cached by image id
      find "$C_CACHE/images/workload" -name '*.tar' -mtime +7 -delete 2>/dev/null || true
      podman save --format docker-archive -o "$tar.tmp" "$img" >&2 && mv "$tar.tmp" "$tar"
    fi
    ctr_ images import --no-unpack=false "$tar" >&2 || ctr_ images import "$tar" >&2
    info "imported $img (${id:0:12})"
  done
}

do_start() {
  require_root
  cached || die "the cluster is not built: run scripts/k8s-cluster.sh build (once, ~6 minutes)"
  take_lock k8s-cluster
  if [ -f "$C_STATE/$C_MARKER" ]; then
    if pid_alive apiserver >/dev/null && pid_alive kubelet >/dev/null; then
      info "already running in $C_STATE"; printf '%s\n' "$C_STATE/kubeconfig"; return 0
    fi
    info "stale state in $C_STATE: cleaning it up"
    do_stop_locked
  elif [ -e "$C_STATE" ] && [ -n "$(ls -A "$C_STATE" 2>/dev/null)" ]; then
    die "$C_STATE exists, is not empty and was not made by this script"
  fi
  local t0; t0="$(now)"
  mkdir -p "$C_STATE"/{conf,logs,pids,host}
  chmod 0700 "$C_STATE"
  : >"$C_STATE/$C_MARKER"
  read -r ETCD_PORT PEER_PORT API_PORT KCM_PORT SCHED_PORT KUBELET_PORT KUBELET_HZ_PORT < <(free_ports 7)
  echo "$API_PORT" >"$C_STATE/conf/api-port"
  host_snapshot
  write_certs
  write_config
  local p="$C_STATE/pki"
  step "etcd, containerd, kube-apiserver"
  spawn etcd "$C_BIN/etcd" --name lazyagent --data-dir "$C_STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
    --initial-cluster "lazyagent=http://127.0.0.1:$PEER_PORT"
  spawn containerd "$C_ROOT/usr/bin/containerd" --config "$C_STATE/conf/containerd.toml"
  spawn apiserver "$C_BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" --insecure-port=0 \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" --client-ca-file="$p/ca.crt" \
    --token-auth-file="$p/tokens.csv" --authorization-mode=Node,RBAC --anonymous-auth=false \
    --enable-admission-plugins=NodeRestriction \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-cluster-ip-range=10.96.0.0/24 --endpoint-reconciler-type=none \
    --kubelet-preferred-address-types=Hostname,InternalIP --feature-gates=TTLAfterFinished=true --profiling=false
  wait_for 30 "containerd's socket" test -S "$C_STATE/ctrd/containerd.sock"
  import_images
  wait_for 90 "kube-apiserver /readyz" kubectl_ get --raw /readyz
  step_done
  "$LAZYAGENT_ROOT/scripts/k8s-registry.sh" start >/dev/null {LAZYAGENT_LOCK_FD}>&-  # the daemon must not hold our lock
  "$LAZYAGENT_ROOT/scripts/k8s-registry.sh" tls-start >/dev/null {LAZYAGENT_LOCK_FD}>&-
  step "controller-manager, scheduler, kubelet"
  spawn kcm "$C_BIN/kube-controller-manager" --kubeconfig="$C_STATE/conf/kcm.kubeconfig" \
    --authentication-kubeconfig="$C_STATE/conf/kcm.kubeconfig" --authorization-kubeconfig="$C_STATE/conf/kcm.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --port=0 --cert-dir="$C_STATE/pki/kcm" \
    --service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" --use-service-account-credentials=true \
    --leader-elect=false --cluster-name=lazyagent --feature-gates=TTLAfterFinished=true \
    --controllers='*,-nodeipam,-cloud-node-lifecycle,-route,-service'
  spawn sched "$C_BIN/kube-scheduler" --kubeconfig="$C_STATE/conf/sched.kubeconfig" \
    --authentication-kubeconfig="$C_STATE/conf/sched.kubeconfig" --authorization-kubeconfig="$C_STATE/conf/sched.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --port=0 --cert-dir="$C_STATE/pki/sched" --leader-elect=false
  # node name "localhost": the kubelet refuses a loopback --node-ip; the apiserver reaches it by Hostname
  spawn kubelet "$C_BIN/kubelet" --config="$C_STATE/conf/kubelet-config.yaml" --kubeconfig="$C_STATE/conf/kubelet.kubeconfig" \
    --container-runtime=remote --container-runtime-endpoint="unix://$C_STATE/ctrd/containerd.sock" \
    --runtime-request-timeout=5m --root-dir="$C_STATE/kubelet" --cert-dir="$C_STATE/kubelet/pki" \
    --hostname-override=localhost --pod-infra-container-image=localhost/pause:3.4 --v=1
  wait_for 120 "node Ready" sh -c "'$C_BIN/kubectl' --kubeconfig '$C_STATE/kubeconfig' get node localhost | grep -qw Ready"
  wait_for 60 "the default ServiceAccount" kubectl_ get serviceaccount default
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: $RUNTIME_CLASS, labels: {io.lazyagent.role: runtime-class}}
handler: $RUNTIME_CLASS
EOF
  step_done
  printf '==> k8s-cluster ready in %s (kubeconfig %s; RuntimeClass %s = runsc --network=none)\n' \
    "$(elapsed "$t0")" "$C_STATE/kubeconfig" "$RUNTIME_CLASS" >&2
  printf '%s\n' "$C_STATE/kubeconfig"
}

stop_pid() { stop_daemon "$1" "$C_STATE/pids/$1.pid"; }

# runtime_leftover PID: a containerd shim, runc, runsc (its sandbox, gofer, re-executed
# /proc/self/exe) or our runsc wrapper; judged by the program, not by the path it names.
runtime_leftover() {
  local argv0
  argv0="$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | head -n 1)"
  case "${argv0##*/}" in
    containerd-shim* | runc | runsc* | exe) return 0 ;;
  esac
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q 'runsc-nonet\.py'
}

do_stop_locked() {
  [ -d "$C_STATE" ] || { info "nothing in $C_STATE"; return 0; }
  [ -f "$C_STATE/$C_MARKER" ] || die "$C_STATE was not made by this script; not touching it"
  stop_pid kubelet; stop_pid sched; stop_pid kcm
  if [ -S "$C_STATE/ctrd/containerd.sock" ] && pid_alive containerd >/dev/null; then
    local t
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$t" 2>/dev/null || true; done
    sleep 1
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$t" 2>/dev/null || true; done
  fi
  stop_pid apiserver; stop_pid containerd; stop_pid etcd
  # shims and sandboxes left by killed tasks: only processes started from our state dir,
  # and only runtime processes (a shell or a tool that merely names the path, such as
  # another user's `flock ... ctest` waiting for the cluster, is not ours to end)
  local pid
  for pid in $(pgrep -f -- "$C_STATE/" 2>/dev/null || true); do
    [ "$pid" != "$$" ] && runtime_leftover "$pid" && kill -KILL "$pid" 2>/dev/null &&
      info "killed leftover process $pid"
  done
  local m
  for m in $(awk '{print $5}' /proc/self/mountinfo | grep "^$C_STATE" | sort -r); do umount -l "$m" 2>/dev/null || true; done
  [ -f "$C_STATE/host/sysctl-orig.txt" ] && while read -r kv; do sysctl -q -w "$kv" || true; done <"$C_STATE/host/sysctl-orig.txt"
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE" && info "deleted bridge $BRIDGE"
  local c
  for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  [ -f "$C_STATE/host/created-paths.txt" ] && while read -r d; do [ -n "$d" ] && rm -rf "$d"; done <"$C_STATE/host/created-paths.txt"
  "$LAZYAGENT_ROOT/scripts/k8s-registry.sh" stop
  "$LAZYAGENT_ROOT/scripts/k8s-registry.sh" tls-stop
  rm -rf "$C_STATE"
  info "stopped; host restored"
}

do_stop() { require_root; take_lock k8s-cluster; do_stop_locked; }

do_status() {
  if cached; then info "cached in $C_CACHE:"; sed 's/^/      /' "$C_STAMP" >&2
  else info "not built (run: scripts/k8s-cluster.sh build)"; fi
  if [ -f "$C_STATE/$C_MARKER" ] && pid_alive apiserver >/dev/null && pid_alive kubelet >/dev/null; then
    info "running; kubeconfig $C_STATE/kubeconfig"
    printf '%s\n' "$C_STATE/kubeconfig"
  else
    info "not running in $C_STATE"; return 1
  fi
}

case "${1:-}" in
  build) do_build ;;
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  kubectl)
    shift
    [ -x "$C_BIN/kubectl" ] || die "kubectl is not cached (run: scripts/k8s-cluster.sh build)"
    [ -f "$C_STATE/kubeconfig" ] || die "no cluster runs (run: scripts/k8s-cluster.sh start)"
    kubectl_ "$@" ;;
  -h|--help) usage ;;
  *) usage >&2; exit 2 ;;
esac
