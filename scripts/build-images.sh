#!/usr/bin/env bash
# Build the project's container images locally, without any image registry.
#
#   localhost/lazyagent-base:bookworm    debootstrap --variant=minbase + podman import
#   localhost/lazyagent-sandbox:latest   images/sandbox/Containerfile (python3, user sandbox)
#   localhost/lazyagent-planner:latest   ./Containerfile, once it exists (see build_planner)
#   localhost/lazyagent-egress-proxy:latest  images/egress-proxy/Containerfile (squid), the
#                                        allow-list proxy of environment.egress
#   localhost/lazyagent-base:sid         the same debootstrap + import, Debian sid
#   localhost/lazyagent-llama:sid        images/llama/Containerfile: llama.cpp's llama-server
#                                        and python3-gguf (sid only), for the tests against a
#                                        real OpenAI-compatible server (scripts/llama-server.sh)
#
# Each image is built only when missing, or when its recipe changed (its
# Containerfile, the base image it was built on, or a file it copies), or with
# --rebuild.
# See images/README.md.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<EOF
usage: $(basename "$0") [options]

  --only base|sandbox|planner|planner-runtime|llama|egress-proxy
                                build just this image (may be repeated);
                                a missing local base is still built first;
                                planner-runtime caches the planner's runtime
                                layer (no binary needed)
  --rebuild                     rebuild the selected images even if present
  --refresh                     also re-download the cached debootstrap tarball
                                ($LAZYAGENT_CACHE_DIR)
  --base IMAGE                  base for the Containerfiles (default
                                $LAZYAGENT_BASE_IMAGE), e.g. a stock
                                docker.io/library/debian:bookworm if you have a registry
  --network MODE                network for RUN steps of podman build (default:
                                podman's own default; env LAZYAGENT_BUILD_NETWORK)
  -h, --help

Environment: LAZYAGENT_DEBIAN_MIRROR overrides the mirror read from the apt sources.
EOF
}

ONLY=()
REBUILD=0
REFRESH=0
BASE="${LAZYAGENT_BASE:-$LAZYAGENT_BASE_IMAGE}"
# RUN steps (apt-get in the sandbox Containerfile) need the Debian mirror.
# Measured on Debian 12 / podman 4.3.1 (rootful, CNI backend): the default
# bridge network works for `podman build`, so no --network is passed by
# default. Where the bridge cannot reach the mirror (seen with podman nested
# in a privileged container: name resolution fails), probe_build_network
# falls back to `--network host`. Only the build's RUN steps of our own
# Containerfiles share the host network that way, never a sandbox.
BUILD_NETWORK="${LAZYAGENT_BUILD_NETWORK:-}"
BUILD_NETWORK_PROBED=0

while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || die "--only needs an argument"; ONLY+=("$2"); shift 2 ;;
    --only=*) ONLY+=("${1#--only=}"); shift ;;
    --rebuild) REBUILD=1; shift ;;
    --refresh) REFRESH=1; shift ;;
    --base) [ $# -ge 2 ] || die "--base needs an argument"; BASE="$2"; shift 2 ;;
    --base=*) BASE="${1#--base=}"; shift ;;
    --network) [ $# -ge 2 ] || die "--network needs an argument"; BUILD_NETWORK="$2"; shift 2 ;;
    --network=*) BUILD_NETWORK="${1#--network=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[ ${#ONLY[@]} -gt 0 ] || ONLY=(base sandbox planner llama egress-proxy)
for o in "${ONLY[@]}"; do
  case "$o" in base|sandbox|planner|planner-runtime|llama|egress-proxy) ;;
    *) die "--only: unknown image '$o' (base|sandbox|planner|planner-runtime|llama|egress-proxy)" ;; esac
done
selected() { local o; for o in "${ONLY[@]}"; do [ "$o" = "$1" ] && return 0; done; return 1; }

require_root
if [ -n "${CONTAINER_HOST:-}${CONTAINER_CONNECTION:-}" ]; then
  # podman 4 turns remote when these are set, and `podman import -` cannot
  # stream through a remote connection: build in this machine's root storage,
  # which is what the rootful service on /run/podman/podman.sock serves.
  info "ignoring CONTAINER_HOST/CONTAINER_CONNECTION: building in the local root storage"
  unset CONTAINER_HOST CONTAINER_CONNECTION
fi
command -v podman >/dev/null || die "podman is not installed (run scripts/setup.sh)"
take_lock build-images

image_exists() { podman image exists "$1" 2>/dev/null; }
image_id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null; }
image_label() { podman image inspect --format "{{index .Labels \"$2\"}}" "$1" 2>/dev/null; }
is_local_base() { [ "$BASE" = "$LAZYAGENT_BASE_IMAGE" ]; }
# local_base_suite IMAGE: the Debian suite of one of our debootstrap bases, or false.
local_base_suite() {
  case "$1" in
    "$LAZYAGENT_BASE_IMAGE") printf '%s' "$LAZYAGENT_DEBIAN_SUITE" ;;
    "$LAZYAGENT_LLAMA_BASE_IMAGE") printf '%s' "$LAZYAGENT_LLAMA_SUITE" ;;
    *) return 1 ;;
  esac
}

# Images we replaced by a rebuild; removed at the end if nothing tags or uses
# them any more (a replaced base is still used by the old sandbox until that
# one is rebuilt too). Never a blanket `podman image prune`: other people's
# dangling images are not ours to remove.
REPLACED=()
note_replaced() {
  local old="$1" new="$2"
  if [ -n "$old" ] && [ "$old" != "$new" ]; then REPLACED+=("$old"); fi
}
drop_replaced() {
  local old i
  for ((i = ${#REPLACED[@]} - 1; i >= 0; i--)); do   # newest first: children before parents
    old="${REPLACED[$i]}"
    podman image exists "$old" 2>/dev/null || continue
    [ -z "$(podman image inspect --format '{{join .RepoTags ","}}' "$old" 2>/dev/null)" ] || continue
    if podman rmi "$old" >/dev/null 2>&1; then info "removed the replaced image ${old:0:12}"; fi
  done
  # Replaced earlier while a container still used it (a test running during a
  # rebuild): untagged, carrying our io.lazyagent.image label. Removed once
  # nothing uses it; podman refuses while something does.
  for old in $(podman images --filter dangling=true --filter label=io.lazyagent.image --format '{{.ID}}' 2>/dev/null); do
    if podman rmi "$old" >/dev/null 2>&1; then info "removed an earlier replaced image ${old:0:12}"; fi
  done
}

# ---- base: debootstrap + podman import ------------------------------------------

ROOTFS=""
cleanup_rootfs() {
  [ -n "$ROOTFS" ] && [ -d "$ROOTFS" ] || return 0
  # debootstrap mounts /proc (and may bind-mount /dev nodes) inside the target;
  # unmount everything below it before deleting, deepest first.
  local m
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
    awk -v r="$ROOTFS" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
  rm -rf --one-file-system "$ROOTFS"
}
PLANNER_CTX=""
cleanup() {
  cleanup_rootfs
  [ -z "$PLANNER_CTX" ] || rm -rf "$PLANNER_CTX"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# build_base [SUITE IMAGE]: default the host's suite as $LAZYAGENT_BASE_IMAGE.
build_base() {
  local suite="${1:-$LAZYAGENT_DEBIAN_SUITE}" name="${2:-$LAZYAGENT_BASE_IMAGE}"
  if image_exists "$name" && [ "$REBUILD" -eq 0 ]; then
    info "$name: present (use --rebuild to rebuild)"
    return 0
  fi
  command -v debootstrap >/dev/null || die "debootstrap is not installed (run scripts/setup.sh)"
  local arch mirror keyring tarball t0
  arch="$(dpkg --print-architecture)"
  # A suite the host does not use (sid for the llama image) comes from the same
  # Debian archive that serves the host's own suite.
  mirror="$(debian_mirror "$suite" main || debian_mirror "$LAZYAGENT_DEBIAN_SUITE" main)" ||
    die "no apt source serves '$suite' (or $LAZYAGENT_DEBIAN_SUITE) with component main; set LAZYAGENT_DEBIAN_MIRROR=<uri>"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$keyring" ] || die "$keyring missing (apt-get install debian-archive-keyring)"
  info "mirror: $mirror (from the apt sources)"

  mkdir -p "$LAZYAGENT_CACHE_DIR"
  tarball="$LAZYAGENT_CACHE_DIR/debootstrap-${suite}-minbase-${arch}.tgz"
  if [ ! -s "$tarball" ] || [ "$REFRESH" -eq 1 ]; then
    info "downloading the minbase package set (cached in $tarball)"
    t0="$(now)"
    ROOTFS="$(mktemp -d /var/tmp/lazyagent-debootstrap.XXXXXX)"
    debootstrap --variant=minbase --arch="$arch" --keyring="$keyring" \
      --make-tarball="$tarball.part" "$suite" "$ROOTFS" "$mirror" >"$ROOTFS.log" 2>&1 || {
        tail -n 30 "$ROOTFS.log" >&2; rm -f "$ROOTFS.log" "$tarball.part"
        die "debootstrap --make-tarball failed"; }
    rm -f "$ROOTFS.log"
    mv -f "$tarball.part" "$tarball"
    cleanup_rootfs
    info "download: $(elapsed "$t0"), $(du -h "$tarball" | cut -f1)"
  else
    info "using cached $tarball ($(du -h "$tarball" | cut -f1)); --refresh re-downloads"
  fi

  t0="$(now)"
  ROOTFS="$(mktemp -d /var/tmp/lazyagent-rootfs.XXXXXX)"
  debootstrap --variant=minbase --arch="$arch" --keyring="$keyring" \
    --unpack-tarball="$tarball" "$suite" "$ROOTFS" "$mirror" >"$ROOTFS.log" 2>&1 || {
      tail -n 30 "$ROOTFS.log" >&2; rm -f "$ROOTFS.log"
      die "debootstrap failed (cached tarball stale? try --refresh)"; }
  rm -f "$ROOTFS.log"
  info "debootstrap (install from cache): $(elapsed "$t0")"
  cleanup_mounts_only
  slim_rootfs "$ROOTFS" "$suite" "$mirror"

  t0="$(now)"
  local old; old="$(image_id "$name" || true)"
  tar -C "$ROOTFS" --numeric-owner --xattrs --one-file-system -c . |
    podman import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["/bin/sh"]' \
      --change "LABEL io.lazyagent.image=base" \
      --change "LABEL io.lazyagent.debian-suite=$suite" \
      --change "LABEL org.opencontainers.image.description=Debian $suite minbase (debootstrap), built locally by lazyagent-oci" \
      --quiet --message "debootstrap --variant=minbase $suite" \
      - "$name" >/dev/null
  note_replaced "$old" "$(image_id "$name")"
  cleanup_rootfs
  ROOTFS=""
  info "import: $(elapsed "$t0"); $name $(podman image inspect --format '{{.Size}}' "$name" | numfmt --to=iec)B"
}

# Unmount what debootstrap left mounted (normally nothing) but keep the tree.
cleanup_mounts_only() {
  local m
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
    awk -v r="$ROOTFS" 'index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r)
}

# Make the tree a small, clean image root, like Debian's own "slim" images.
slim_rootfs() {
  local r="$1" suite="$2" mirror="$3" upd sec
  # apt sources: the same mirror(s) this host uses, so that RUN apt-get works
  # in derived images; updates/security only when the host has them too.
  # sid has neither updates nor security suites.
  {
    printf 'deb %s %s main\n' "$mirror" "$suite"
    case "$suite" in sid|unstable) ;; *)
      if upd="$(debian_mirror "$suite-updates" main)"; then printf 'deb %s %s-updates main\n' "$upd" "$suite"; fi
      if sec="$(debian_mirror "$suite-security" main)"; then printf 'deb %s %s-security main\n' "$sec" "$suite"; fi ;;
    esac
  } >"$r/etc/apt/sources.list"
  # Files added on top of debootstrap's tree: dpkg path excludes (no docs,
  # man pages, translations in later installs) and apt cache cleaning.
  # (install, not cp -a: a checkout's modes must not leak onto /etc).
  local src rel
  while IFS= read -r -d '' src; do
    rel="${src#"$LAZYAGENT_ROOT/images/base/rootfs/"}"
    install -D -m 0644 -o root -g root "$src" "$r/$rel"
  done < <(find "$LAZYAGENT_ROOT/images/base/rootfs" -type f -print0)
  # Apply the same rules to what debootstrap already installed.
  find "$r/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete 2>/dev/null || true
  find "$r/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/usr/share/lintian/*
  find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null || true
  # Caches, logs and host-specific files.
  rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/cache/apt/archives/partial/* \
         "$r"/var/cache/apt/*.bin "$r"/var/lib/apt/lists/* "$r"/var/cache/debconf/*-old \
         "$r"/var/lib/dpkg/*-old "$r"/var/log/*.log "$r"/var/log/apt/* "$r"/tmp/* "$r"/var/tmp/* \
         "$r"/debootstrap
  mkdir -p "$r/var/lib/apt/lists/partial"
  # podman provides /dev, /proc, /sys, /etc/hosts, /etc/hostname, /etc/resolv.conf.
  find "$r/dev" "$r/proc" "$r/sys" -mindepth 1 -delete 2>/dev/null || true
  find "$r/run" -mindepth 1 ! -type d -delete 2>/dev/null || true
  : >"$r/etc/resolv.conf"
  : >"$r/etc/hostname"
  [ -e "$r/etc/machine-id" ] && : >"$r/etc/machine-id"
  return 0
}

# ---- images from Containerfiles ---------------------------------------------------

# Can a container on the default network open a TCP connection to the mirror?
# If not, but one on the host network can, build with --network host.
# Probes with bash's /dev/tcp in a local base (a stock base may lack bash).
# probe_build_network BASE
probe_build_network() {
  local base="$1"
  [ -z "$BUILD_NETWORK" ] && [ "$BUILD_NETWORK_PROBED" -eq 0 ] && local_base_suite "$base" >/dev/null || return 0
  BUILD_NETWORK_PROBED=1
  local mirror hostport host port=80
  mirror="$(debian_mirror)" || return 0
  case "$mirror" in http://*) ;; https://*) port=443 ;; *) return 0 ;; esac
  hostport="${mirror#*://}"; hostport="${hostport%%/*}"; hostport="${hostport##*@}"
  host="${hostport%:*}"
  if [ "$host" != "$hostport" ]; then port="${hostport##*:}"; fi
  local -a run=(run --rm --pull=never --label io.lazyagent.role=build-probe)
  # Not `timeout` as the container's first process: sid's coreutils timeout
  # then exits 125 at once (seen with coreutils 9.x); bash stays pid 1 here.
  local probe="timeout 10 bash -c 'exec 3<>/dev/tcp/$host/$port' || exit 1"
  if podman "${run[@]}" "$base" bash -c "$probe" >/dev/null 2>&1; then
    return 0
  fi
  if podman "${run[@]}" --network host "$base" bash -c "$probe" >/dev/null 2>&1; then
    warn "containers on the default network cannot reach $host:$port; building with --network host"
    BUILD_NETWORK=host
  else
    warn "no container reaches $host:$port (default or host network); RUN apt-get will likely fail"
  fi
}

# build_containerfile ROLE IMAGE CONTAINERFILE CONTEXT [INPUT...]
# Rebuilds when the image is missing, --rebuild, or its recipe changed: the
# recipe is a sha256 over the Containerfile, the base image's ID and the
# contents of any further INPUT files the Containerfile COPYs, stored in the
# label io.lazyagent.recipe. The base is $BASE unless CF_BASE names another.
build_containerfile() {
  local role="$1" name="$2" file="$3" ctx="$4"
  shift 4
  local base="${CF_BASE:-$BASE}" base_id recipe old have suite=""
  suite="$(local_base_suite "$base" || true)"
  if [ -n "$suite" ] && ! image_exists "$base"; then
    info "$base is missing: building it first"
    build_base "$suite" "$base"
  fi
  if image_exists "$base"; then
    base_id="$(image_id "$base")"
  elif [ -n "$suite" ]; then
    die "$base is missing"
  else
    base_id="$base"   # a registry image: pulled by podman build below
  fi
  recipe="$( { sha256sum <"$file"; printf '%s\n' "$base" "$base_id"
               local f; for f in "$@"; do sha256sum <"$f"; done; } | sha256sum | cut -c1-64)"
  if image_exists "$name" && [ "$REBUILD" -eq 0 ]; then
    have="$(image_label "$name" io.lazyagent.recipe || true)"
    if [ "$have" = "$recipe" ]; then
      info "$name: present and up to date (use --rebuild to rebuild)"
      return 0
    fi
    info "$name: recipe changed ($(basename "$file"), $base or the files it copies): rebuilding"
  fi
  old="$(image_id "$name" || true)"
  probe_build_network "$base"
  local -a args=(build --file "$file" --tag "$name" --build-arg "BASE=$base"
    --label "io.lazyagent.image=$role" --label "io.lazyagent.recipe=$recipe"
    --label "io.lazyagent.base=$base" --force-rm)
  # The planner's layers are cached (its runtime layer was built while the CLI
  # compiled, build_planner_runtime); the other images are squashed to one layer.
  if [ "$role" = planner ]; then args+=(--layers); else args+=(--squash); fi
  # Never contact a registry for a local base.
  if [ -n "$suite" ]; then args+=(--pull=never); fi
  if [ -n "$BUILD_NETWORK" ]; then args+=(--network "$BUILD_NETWORK"); fi
  local t0 log; t0="$(now)"
  log="$(mktemp /var/tmp/lazyagent-build.XXXXXX)"
  if ! podman "${args[@]}" "$ctx" >"$log" 2>&1; then
    tail -n 40 "$log" >&2; rm -f "$log"
    die "podman build of $name failed (if RUN apt-get cannot reach the mirror, try --network host)"
  fi
  rm -f "$log"
  note_replaced "$old" "$(image_id "$name")"
  info "$name: built in $(elapsed "$t0"), $(podman image inspect --format '{{.Size}}' "$name" | numfmt --to=iec)B"
}

build_sandbox() {
  build_containerfile sandbox "$LAZYAGENT_SANDBOX_IMAGE" \
    "$LAZYAGENT_ROOT/images/sandbox/Containerfile" "$LAZYAGENT_ROOT/images/sandbox"
}

build_egress_proxy() {
  build_containerfile egress-proxy "$LAZYAGENT_EGRESS_PROXY_IMAGE" \
    "$LAZYAGENT_ROOT/images/egress-proxy/Containerfile" "$LAZYAGENT_ROOT/images/egress-proxy"
}

# ---- PLANNER IMAGE: owned by whoever writes ./Containerfile ----------------------
# A no-op until the top-level Containerfile exists. It then gets the same
# treatment as the sandbox (BASE build arg, labels, rebuilt when the
# Containerfile or the base changes). The build context is the repository
# root, narrowed by ./.containerignore. The Containerfile COPYs the C++ build's
# binary, so the binary is part of the recipe (a new build means a new image)
# and the planner is skipped until it exists (setup.sh builds before images).
# Adjust freely, e.g. to pass more build args.
# LAZYAGENT_BINARY (`lazyagent-oci images build` sets it to itself) names
# another binary, e.g. an installed /usr/bin/lazyagent-oci: the context is
# then a staging directory holding just it as build/lazyagent-oci.
build_planner() {
  local file="$LAZYAGENT_ROOT/Containerfile" bin="${LAZYAGENT_BINARY:-$LAZYAGENT_ROOT/build/lazyagent-oci}"
  local ctx="$LAZYAGENT_ROOT"
  if [ ! -f "$file" ]; then
    info "$LAZYAGENT_PLANNER_IMAGE: skipped (no ./Containerfile yet)"
    return 0
  fi
  if [ ! -x "$bin" ]; then
    info "$LAZYAGENT_PLANNER_IMAGE: skipped (no $bin yet: run scripts/setup.sh without --no-build)"
    return 0
  fi
  if [ "$(readlink -f "$bin")" != "$(readlink -f "$LAZYAGENT_ROOT/build/lazyagent-oci" 2>/dev/null || true)" ]; then
    PLANNER_CTX="$(mktemp -d /var/tmp/lazyagent-planner-ctx.XXXXXX)"
    install -D -m 0755 "$bin" "$PLANNER_CTX/build/lazyagent-oci"
    cp "$LAZYAGENT_ROOT/.containerignore" "$PLANNER_CTX/"
    ctx="$PLANNER_CTX"
    bin="$PLANNER_CTX/build/lazyagent-oci"
  fi
  build_containerfile planner "$LAZYAGENT_PLANNER_IMAGE" "$file" "$ctx" "$bin"
}
# The planner image's runtime stage alone (Containerfile, `--target runtime`),
# into podman's layer cache: setup.sh runs this while the CLI compiles, so that
# the planner image, which needs the binary, is then only a COPY.
build_planner_runtime() {
  local file="$LAZYAGENT_ROOT/Containerfile" t0 log suite
  [ -f "$file" ] || return 0
  suite="$(local_base_suite "$BASE" || true)"
  if [ -n "$suite" ] && ! image_exists "$BASE"; then build_base "$suite" "$BASE"; fi
  t0="$(now)"
  log="$(mktemp /var/tmp/lazyagent-build.XXXXXX)"
  local -a args=(build --file "$file" --target runtime --layers --build-arg "BASE=$BASE" --force-rm)
  if [ -n "$suite" ]; then args+=(--pull=never); fi
  if [ -n "$BUILD_NETWORK" ]; then args+=(--network "$BUILD_NETWORK"); fi
  if ! podman "${args[@]}" "$LAZYAGENT_ROOT" >"$log" 2>&1; then
    tail -n 40 "$log" >&2; rm -f "$log"
    die "podman build of the planner's runtime stage failed (if RUN apt-get cannot reach the mirror, try --network host)"
  fi
  rm -f "$log"
  info "planner runtime layer: cached in $(elapsed "$t0")"
}
# ---- end of planner section ------------------------------------------------------

# The llama.cpp server for the tests against a real OpenAI-compatible server
# (scripts/llama-server.sh, images/llama/README.md). Debian 12 has no llama.cpp;
# sid's needs sid's libc, so it gets a sid base of its own (same debootstrap +
# import), whatever --base says. The image is Debian's packages only: the
# model writer and the chat templates are bind-mounted at start, so editing
# them rebuilds nothing.
build_llama() {
  local dir="$LAZYAGENT_ROOT/images/llama"
  CF_BASE="$LAZYAGENT_LLAMA_BASE_IMAGE" build_containerfile llama "$LAZYAGENT_LLAMA_IMAGE" \
    "$dir/Containerfile" "$dir"
}

registry_images() {
  podman images --format '{{.Repository}}' | grep -v -e '^localhost/' -e '^<none>$' | sort -u || true
}

before="$(registry_images)"
t_all="$(now)"
if selected base; then
  if is_local_base; then build_base; else info "base: using $BASE (not built locally)"; fi
fi
if selected sandbox; then build_sandbox; fi
if selected planner-runtime; then build_planner_runtime; fi
if selected planner; then build_planner; fi
if selected llama; then build_llama; fi
if selected egress-proxy; then build_egress_proxy; fi
drop_replaced
after="$(registry_images)"
if is_local_base && [ "$before" != "$after" ]; then
  die "an image from a registry appeared during the build: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
fi
info "images done in $(elapsed "$t_all")"
