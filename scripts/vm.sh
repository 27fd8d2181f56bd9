#!/usr/bin/env bash
# A Debian 13 VM that stands for the hosts users have (issue 40): systemd as
# PID 1, cgroup v2, podman 5 under the systemd cgroup manager, crun as its
# default runtime and runc beside it, rootless podman for an ordinary user
# with subordinate ids, and this project built natively in it. This machine
# is the unusual host (no systemd, cgroup v1 hybrid, podman 4.3, runc); the VM
# is where the code is tried as users run it. Everything comes from Debian's
# archive (the mirror of this machine's apt sources); the VM has no network.
#
#   vm.sh image [--checkout DIR] [--rebuild]    build or refresh the cached disk image
#   vm.sh run [--user NAME] [...] -- CMD...     boot it, run CMD, power off: CMD's
#                                               stdout, stderr and exit code
#   vm.sh status                                what is cached, which accelerator
#   vm.sh clean [--all]                         remove the cached images
# Each has --help. As root.
#
# The cache, under /var/cache/lazyagent-oci/vm (LAZYAGENT_VM_DIR):
#   KEY/rootfs/       the image's tree: debootstrap + packages + set-up
#   KEY/build/        the project's build, made in a chroot of that tree (at
#                     /opt/lazyagent-build) and shared read-only into runs (9p):
#                     a new build needs no new disk image
#   KEY/disk.img      that tree as an ext4 file system (mkfs.ext4 -d), sparse
#   KEY/vmlinuz, KEY/initrd.img   the image's kernel, booted with -kernel/-initrd
#   debs/             the downloaded .debs (debootstrap's and apt's), shared by keys
#   ccache/           the build's compiler cache (the image's gcc 14)
#   KEY/images-H.img  podman storages holding this machine's images (--images):
#                     root's and the user's, loaded at native speed (H hashes
#                     the image IDs); a run's second disk, through an overlay
# KEY hashes the suite, the package lists, VM_FORMAT and the set-up function's
# text: a change to any of them makes a new tree; the old one stays until
# `vm.sh clean`. A run boots a qcow2 overlay of disk.img (the cache stays
# clean), shares the checkout read-only at /opt/lazyagent-src (9p), and hands
# the command over and the output back through a control share.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Bump when the image's set-up changes in a way the hashed text does not show.
VM_FORMAT=1
VM_SUITE="${LAZYAGENT_VM_SUITE:-trixie}"
VM_DIR="${LAZYAGENT_VM_DIR:-$LAZYAGENT_CACHE_DIR/vm}"
VM_USER="lazy"          # the ordinary user made in the image (uid 1000, subuid/subgid)
VM_SRC=/opt/lazyagent-src
VM_BUILD=/opt/lazyagent-build
VM_DISK_SIZE="${LAZYAGENT_VM_DISK_SIZE:-16G}"   # sparse; a run's writes land in its overlay

# What a user's host has, installed as `apt install` does (with Recommends):
# a booting system with systemd, Debian's kernel (it recommends apparmor, on by
# default in Debian), podman with what it recommends (passt, slirp4netns,
# uidmap, catatonit, dbus-user-session, buildah), crun (podman's default) and runc.
VM_HOST_PACKAGES=(
  systemd-sysv dbus libpam-systemd udev kmod iproute2 procps util-linux
  linux-image-amd64
  podman crun runc conmon netavark aardvark-dns passt slirp4netns uidmap fuse-overlayfs
)
# The build's dependencies (scripts/setup.sh's C++ build list, Debian 13's
# names) and what the tests run besides (mkfs.ext4, diff, openssl, python3),
# without Recommends.
VM_BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl ccache
  libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev
  libcpp-httplib-dev catch2 python3 libre2-dev libpugixml-dev
  e2fsprogs diffutils openssl python3-pytest
)
# The tool's images a run can have (--images): what `test`, `run` and the
# egress allow-list start. Built on this machine by scripts/build-images.sh.
VM_TOOL_IMAGES=("$LAZYAGENT_SANDBOX_IMAGE" "$LAZYAGENT_PLANNER_IMAGE" "$LAZYAGENT_EGRESS_PROXY_IMAGE")

usage() {
  cat <<EOF
usage: $(basename "$0") image|run|status|clean [OPTIONS]   (each: --help)

A Debian $VM_SUITE VM that stands for the hosts users have: systemd, cgroup v2,
podman 5 with the systemd cgroup manager, crun by default, runc, rootless podman
for the user '$VM_USER'; this checkout built natively in it at $VM_BUILD.

  image    build (once) or refresh the cached disk image and the build in it
  run      boot the image, run a command as root or '$VM_USER', power off
  status   what is cached, which accelerator a run uses
  clean    remove the cached images

Environment: LAZYAGENT_VM_DIR (cache, default $LAZYAGENT_CACHE_DIR/vm),
LAZYAGENT_DEBIAN_MIRROR (default: this machine's apt sources),
LAZYAGENT_VM_ACCEL=kvm|tcg (default: KVM when a probe boots the image's kernel),
LAZYAGENT_VM_JOBS (the build's -j, default 2).
EOF
}

# ---- the cache key ------------------------------------------------------------------

vm_key() {
  {
    printf '%s\n' "$VM_FORMAT" "$VM_SUITE" "${VM_HOST_PACKAGES[*]}" "${VM_BUILD_PACKAGES[*]}"
    declare -f provision_rootfs
  } | sha256sum | cut -c1-12
}
# Set before the subcommand runs, once every hashed function is defined.
KEY=""
KEY_DIR=""

# ---- host packages --------------------------------------------------------------------

host_packages() {
  local missing=()
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
  command -v qemu-img >/dev/null || missing+=(qemu-utils)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v mkfs.ext4 >/dev/null || missing+=(e2fsprogs)
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
  [ ${#missing[@]} -eq 0 ] && return 0
  step "host packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2 || warn "apt-get update reported errors; trying the install anyway"
  # Only the missing ones: naming an installed package would upgrade it.
  # lazyagent-installs: qemu-system-x86 qemu-utils debootstrap e2fsprogs debian-archive-keyring
  apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}" >&2 ||
    die "apt-get install failed"
  step_done
}

vm_mirror() {
  # The archive that serves bookworm serves trixie too: a Debian 12 host's
  # sources name only bookworm.
  debian_mirror "$VM_SUITE" main || debian_mirror bookworm main ||
    die "no Debian mirror in the apt sources (set LAZYAGENT_DEBIAN_MIRROR)"
}

# run_logged LOG CMD...: CMD with its output in LOG; every 60 s the time so far
# and LOG's last line; on failure LOG's last 30 lines.
run_logged() {
  local log="$1" pid t0 rc=0 n=0; shift
  t0="$(now)"
  "$@" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    n=$((n + 1))
    if [ $((n % 60)) -eq 0 ]; then
      info "... $(elapsed "$t0"): $(tail -n 1 "$log" | cut -c1-120)"
    fi
  done
  wait "$pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 30 "$log" | sed 's/^/        /' >&2
    warn "failed (exit $rc); the whole log: $log"
  fi
  return "$rc"
}

# in_rootfs ROOT [--checkout DIR] -- CMD...: CMD chrooted into ROOT, in a mount
# namespace of its own (its /proc, /sys, /dev, a /run and /tmp on tmpfs and
# the binds vanish with it):
# Debian's archive of .debs at /var/cache/apt/archives, the build's ccache at
# /var/cache/lazyagent-ccache, DIR read-only at $VM_SRC.
in_rootfs() {
  local root="$1" checkout=""; shift
  if [ "$1" = --checkout ]; then checkout="$2"; shift 2; fi
  [ "$1" = -- ] && shift
  mkdir -p "$VM_DIR/debs/partial" "$VM_DIR/ccache" "$root/var/cache/apt/archives" \
    "$root/var/cache/lazyagent-ccache" "$root$VM_SRC" "$root$VM_BUILD" "$KEY_DIR/build"
  unshare --mount --propagation private -- bash -euc '
    root="$1" checkout="$2" debs="$3" ccache="$4" src="$5" build="$6" buildmnt="$7"; shift 7
    # The tree a mount of its own, entered with pivot_root, not chroot: in a
    # chroot the kernel refuses a user namespace (EPERM), which the unit tests
    # (and podman) make.
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=0755 tmpfs "$root/run"
    mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
    mount --bind "$debs" "$root/var/cache/apt/archives"
    mount --bind "$ccache" "$root/var/cache/lazyagent-ccache"
    mount --bind "$build" "$root$buildmnt"
    if [ -n "$checkout" ]; then
      mount --bind "$checkout" "$root$src"
      mount -o remount,bind,ro "$root$src"
    fi
    cd "$root"
    pivot_root . mnt
    umount -l /mnt
    cd /
    exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
  ' in_rootfs "$root" "$checkout" "$VM_DIR/debs" "$VM_DIR/ccache" "$VM_SRC" "$KEY_DIR/build" "$VM_BUILD" "$@"
}

# ---- the image: debootstrap, packages, set-up --------------------------------------------

# The command runner inside the VM (/usr/local/sbin/lazyagent-vm-run), started
# by lazyagent-vm-run.service once the system is up; written into the tree at
# each `vm.sh image` (a change remakes the disk, not the tree). It waits for
# the boot to settle, as a user who logs in does. The control share holds:
#   cmd (bash script), user (empty: root), images (the refs on the images disk)
#   from the host; started, stdout, stderr, rc from the guest.
guest_runner() {
  cat <<'RUNNER'
#!/bin/bash
# Written by lazyagent-oci scripts/vm.sh: runs the command vm.sh put on the
# control share (as root or the user it names), writes its stdout, stderr and
# exit code there, powers the VM off.
set -u
ctl=/run/lazyagent-vm
opts=trans=virtio,version=9p2000.L,msize=262144
mkdir -p "$ctl" /opt/lazyagent-src
# The 9p devices may not be probed yet ("no channels available"): retry.
modprobe -q 9pnet_virtio || true
for _ in $(seq 1 240); do
  mount -t 9p -o "$opts" lazyctl "$ctl" 2>/dev/null && break
  sleep 0.5
done
if ! mountpoint -q "$ctl"; then
  echo "lazyagent-vm-run: no control share" >/dev/console
  systemctl poweroff --force
  exit 1
fi
mount -t 9p -o "$opts,ro" lazysrc /opt/lazyagent-src 2>>"$ctl/stderr"
mkdir -p /opt/lazyagent-build
mount -t 9p -o "$opts,ro" lazybuild /opt/lazyagent-build 2>>"$ctl/stderr"
user=$(cat "$ctl/user" 2>/dev/null || true)
# The boot settled (running, or degraded when a unit failed: then say which).
state=$(timeout 300 systemctl is-system-running --wait 2>/dev/null)
[ "$state" = running ] || { echo "vm: the system is $state:"; systemctl --failed --no-legend; } >>"$ctl/stderr" 2>&1
date +%s.%N >"$ctl/started"
rc=0
# The images disk (vm.sh run --images): podman's storages of root and of the
# user, in place before anything starts podman.
if [ -s "$ctl/images" ]; then
  d=/var/lib/lazyagent-vm-images
  mkdir -p "$d" /var/lib/containers/storage
  if mount -L lazyagent-images "$d" 2>>"$ctl/stderr"; then
    mount --bind "$d/root" /var/lib/containers/storage
    for u in "$d"/users/*; do
      [ -d "$u" ] || continue
      home=$(getent passwd "$(basename "$u")" | cut -d: -f6)
      runuser -u "$(basename "$u")" -- mkdir -p "$home/.local/share/containers/storage"
      mount --bind "$u" "$home/.local/share/containers/storage"
    done
    echo "vm: images: $(tr '\n' ' ' <"$ctl/images")" >>"$ctl/stderr"
  else
    echo "vm: no images disk" >>"$ctl/stderr"
    rc=125
  fi
fi
if [ "$rc" -eq 0 ]; then
  if [ -n "$user" ]; then
    # A login session as the user would have (pam_systemd: XDG_RUNTIME_DIR,
    # the user's systemd and D-Bus, which rootless podman's systemd cgroup
    # manager talks to).
    runuser -l "$user" -c "bash /run/lazyagent-vm/cmd" </dev/null >>"$ctl/stdout" 2>>"$ctl/stderr" || rc=$?
  else
    (cd /root && HOME=/root bash "$ctl/cmd") </dev/null >>"$ctl/stdout" 2>>"$ctl/stderr" || rc=$?
  fi
fi
echo "$rc" >"$ctl/rc.part" && mv "$ctl/rc.part" "$ctl/rc"
sync
systemctl poweroff --force
RUNNER
}

guest_unit() {
  cat <<'UNIT'
# Written by lazyagent-oci scripts/vm.sh: the command of `vm.sh run`, once the
# system is up (multi-user.target reached, as for a user who logs in). Type=exec,
# not oneshot: the boot's transaction ends while the command runs, so the
# system is "running" for it, not "starting".
[Unit]
Description=Run the command of lazyagent-oci's vm.sh, then power off
After=multi-user.target

[Service]
Type=exec
ExecStart=/usr/local/sbin/lazyagent-vm-run
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
}

# provision_rootfs ROOT: the set-up inside the chroot after the packages.
provision_rootfs() {
  local root="$1"
  printf 'lazyagent-vm\n' >"$root/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 lazyagent-vm\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
  printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$root/etc/fstab"
  # One machine id for every boot: otherwise each boot of the same image is a
  # first boot (systemd-firstboot, presets).
  in_rootfs "$root" -- systemd-machine-id-setup >/dev/null
  # The ordinary user; useradd gives it subordinate ids (SUB_UID_COUNT 65536).
  in_rootfs "$root" -- useradd --create-home --shell /bin/bash --uid 1000 "$VM_USER"
  grep -q "^$VM_USER:" "$root/etc/subuid" && grep -q "^$VM_USER:" "$root/etc/subgid" ||
    die "useradd gave $VM_USER no subordinate ids"
  # No network device: nothing waits for one.
  in_rootfs "$root" -- systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1 || true
  # The chroot's resolver and the install's service guard go; the apt lists stay
  # (apt-cache in the VM), the .debs were never in the tree (a bind mount).
  rm -f "$root/etc/resolv.conf" "$root/usr/sbin/policy-rc.d"
  : >"$root/etc/resolv.conf"
  printf 'lazyagent-oci vm.sh image %s, Debian %s, set up %s\n' "$KEY" "$VM_SUITE" "$(date -u +%FT%TZ)" \
    >"$root/etc/lazyagent-vm"
}

make_rootfs() {
  local part="$KEY_DIR/rootfs.part" mirror
  mirror="$(vm_mirror)"
  rm -rf "$part"
  mkdir -p "$KEY_DIR" "$VM_DIR/debs"
  step "debootstrap $VM_SUITE (minbase, from $mirror)"
  run_logged "$KEY_DIR/debootstrap.log" debootstrap --variant=minbase --cache-dir="$VM_DIR/debs" \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg "$VM_SUITE" "$part" "$mirror" ||
    die "debootstrap failed"
  step_done
  step "packages: ${#VM_HOST_PACKAGES[@]} as a host has them, ${#VM_BUILD_PACKAGES[@]} for the build"
  cat >"$part/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $VM_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -f "$part/etc/apt/sources.list"
  # No service starts in the chroot.
  printf '#!/bin/sh\nexit 101\n' >"$part/usr/sbin/policy-rc.d"
  chmod 0755 "$part/usr/sbin/policy-rc.d"
  cp -L /etc/resolv.conf "$part/etc/resolv.conf"
  run_logged "$KEY_DIR/packages.log" in_rootfs "$part" -- bash -euc '
    apt-get update -q
    apt-get install -y -q -o Dpkg::Use-Pty=0 "${@:2:$1}"
    apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "${@:$(($1 + 2))}"
  ' packages "${#VM_HOST_PACKAGES[@]}" "${VM_HOST_PACKAGES[@]}" "${VM_BUILD_PACKAGES[@]}" ||
    die "installing the packages failed"
  step_done "$(du -sh --exclude=./proc "$part" 2>/dev/null | cut -f1)"
  step "set-up (user $VM_USER, the command runner)"
  provision_rootfs "$part"
  rm -rf "$KEY_DIR/rootfs"
  mv "$part" "$KEY_DIR/rootfs"
  step_done
}

# build_in_rootfs CHECKOUT: the project built natively in the image's tree (a
# chroot), CHECKOUT read-only at $VM_SRC, the build at $VM_BUILD.
build_in_rootfs() {
  local checkout="$1" root="$KEY_DIR/rootfs" rev; shift
  # The rest: the targets to build (none: all of them).
  rev="$(git -C "$checkout" describe --always --dirty 2>/dev/null || echo unknown)"
  step "build in the image ($VM_BUILD from $checkout at $rev, -j${LAZYAGENT_VM_JOBS:-2})"
  # Earlier images kept the build inside the tree: it moves out once.
  if [ ! -f "$KEY_DIR/build/build.ninja" ] && [ -f "$root$VM_BUILD/build.ninja" ]; then
    rm -rf "$KEY_DIR/build" && mv "$root$VM_BUILD" "$KEY_DIR/build" && mkdir -p "$root$VM_BUILD"
  fi
  # ninja goes by mtimes: a file of another checkout, older than the objects
  # built from this one's, would look up to date (seen: an old definition
  # linked twice). A build of another checkout starts clean (ccache keeps it cheap).
  local built_from
  built_from="$(cut -d' ' -f2- "$KEY_DIR/build/.lazyagent-checkout" 2>/dev/null || true)"
  if [ -n "$built_from" ] && [ "$built_from" != "$checkout" ] && [ -f "$KEY_DIR/build/build.ninja" ]; then
    info "the build was of $built_from: cleaning it for $checkout"
    in_rootfs "$root" -- ninja -C "$VM_BUILD" -t clean >/dev/null
  fi
  # Configured once; ninja reconfigures by itself when CMakeLists.txt changes.
  run_logged "$KEY_DIR/build.log" in_rootfs "$root" --checkout "$checkout" -- bash -euc '
    [ -f "$2/build.ninja" ] || cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DLAZYAGENT_CCACHE_DIR=/var/cache/lazyagent-ccache
    src="$1" build="$2" jobs="$3"; shift 3
    [ $# -eq 0 ] || set -- --target "$@"
    cmake --build "$build" -j "$jobs" "$@"
  ' build "$VM_SRC" "$VM_BUILD" "${LAZYAGENT_VM_JOBS:-2}" "$@" || die "the build in the image failed"
  printf '%s %s\n' "$rev" "$checkout" >"$KEY_DIR/build/.lazyagent-checkout.new"
  if cmp -s "$KEY_DIR/build/.lazyagent-checkout.new" "$KEY_DIR/build/.lazyagent-checkout"; then
    rm -f "$KEY_DIR/build/.lazyagent-checkout.new"
  else
    mv "$KEY_DIR/build/.lazyagent-checkout.new" "$KEY_DIR/build/.lazyagent-checkout"
  fi
  step_done "$(grep -c 'Building CXX' "$KEY_DIR/build.log" || true) compiled"
}

# install_runner ROOT: the command runner and its unit, enabled.
install_runner() {
  local root="$1"
  guest_runner >"$root/usr/local/sbin/lazyagent-vm-run"
  chmod 0755 "$root/usr/local/sbin/lazyagent-vm-run"
  guest_unit >"$root/etc/systemd/system/lazyagent-vm-run.service"
  mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
  ln -sfn /etc/systemd/system/lazyagent-vm-run.service \
    "$root/etc/systemd/system/multi-user.target.wants/lazyagent-vm-run.service"
}

# tree_stamp: what the disk image holds, in one line: the set-up's mark and the
# runner (the build is not in it: it is shared into each run).
tree_stamp() {
  local root="$KEY_DIR/rootfs"
  {
    cat "$root/etc/lazyagent-vm" "$root/usr/local/sbin/lazyagent-vm-run" \
      "$root/etc/systemd/system/lazyagent-vm-run.service" 2>/dev/null
  } | sha256sum | cut -c1-16
}

# make_disk CHECKOUT: the kernel, the initramfs and an ext4 image of the tree,
# booted once, unless the image already holds this tree.
make_disk() {
  local checkout="$1" root="$KEY_DIR/rootfs" kernel initrd stamp
  install_runner "$root"
  stamp="$(tree_stamp)"
  if [ -f "$KEY_DIR/disk.img" ] && [ "$(cat "$KEY_DIR/disk.stamp" 2>/dev/null)" = "$stamp" ]; then
    info "disk image up to date: $KEY_DIR/disk.img"
    return 0
  fi
  step "disk image (ext4, $VM_DISK_SIZE sparse)"
  kernel="$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -n 1)"
  initrd="$(find "$root/boot" -maxdepth 1 -name 'initrd.img-*' | sort -V | tail -n 1)"
  [ -n "$kernel" ] && [ -n "$initrd" ] || die "no kernel or initramfs in $root/boot"
  cp "$kernel" "$KEY_DIR/vmlinuz"
  basename "$kernel" >"$KEY_DIR/kernel"
  cp "$initrd" "$KEY_DIR/initrd.img"
  rm -f "$KEY_DIR/disk.img.part"
  mkfs.ext4 -q -F -L lazyagent-vm -d "$root" "$KEY_DIR/disk.img.part" "$VM_DISK_SIZE" >&2 ||
    die "mkfs.ext4 -d failed"
  step_done "kernel $(basename "$kernel"), $(du -h "$KEY_DIR/disk.img.part" | cut -f1) used"
  trap boot_cleanup EXIT
  first_boot "$KEY_DIR/disk.img.part" "$checkout"
  mv "$KEY_DIR/disk.img.part" "$KEY_DIR/disk.img"
  printf '%s\n' "$stamp" >"$KEY_DIR/disk.stamp"
}

cmd_image() {
  local checkout="$LAZYAGENT_ROOT" rebuild=0 unit=0 targets=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --checkout) checkout="$(cd "$2" && pwd)"; shift ;;
      --rebuild) rebuild=1 ;;
      --target) targets+=("$2"); shift ;;
      --unit-tests) unit=1 ;;
      -h|--help) cat <<EOF
usage: $(basename "$0") image [--checkout DIR] [--target T]... [--unit-tests] [--rebuild]

Builds the Debian $VM_SUITE disk image once (debootstrap from Debian's archive,
packages, a user '$VM_USER'), cached in $KEY_DIR
(key $KEY: the package lists and this script's set-up), then builds DIR (default
$LAZYAGENT_ROOT) in it natively, in a chroot, at $VM_BUILD: the CLI and every
test executable. A second call reuses the tree, rebuilds what changed and
remakes the disk image if the tree changed.

  --checkout DIR   the checkout to build (shared read-only at $VM_SRC in runs)
  --target T       build only target T (repeatable; e.g. lazyagent-oci, unit_tests)
  --unit-tests     then run the unit tests in the tree (Debian $VM_SUITE's
                   libraries, natively; no VM): exit 1 if one fails
  --rebuild        debootstrap again even if the tree is cached
EOF
        return 0 ;;
      *) die "image: unknown argument '$1' (--help)" ;;
    esac
    shift
  done
  [ -f "$checkout/CMakeLists.txt" ] || die "$checkout is not a checkout of lazyagent-oci"
  require_root
  host_packages
  mkdir -p "$VM_DIR"
  exec {VM_LOCK}>"$VM_DIR/lock"
  flock -n "$VM_LOCK" || { info "waiting for another vm.sh (lock $VM_DIR/lock)"; flock "$VM_LOCK"; }
  local t0
  t0="$(now)"
  if [ "$rebuild" -eq 1 ] || [ ! -d "$KEY_DIR/rootfs" ]; then
    make_rootfs
  else
    info "using the cached tree $KEY_DIR/rootfs (--rebuild makes it afresh)"
  fi
  build_in_rootfs "$checkout" "${targets[@]}"
  if [ "$unit" -eq 1 ]; then
    step "unit tests in the image's tree (Debian $VM_SUITE, natively)"
    run_logged "$KEY_DIR/unit.log" in_rootfs "$KEY_DIR/rootfs" --checkout "$checkout" -- \
      "$VM_BUILD/unit_tests" --reporter compact ||
      die "the unit tests failed on Debian $VM_SUITE (log: $KEY_DIR/unit.log)"
    step_done "$(tail -n 1 "$KEY_DIR/unit.log")"
  fi
  make_disk "$checkout"
  printf '==> image %s ready in %s\n' "$KEY" "$(elapsed "$t0")" >&2
}

# ---- the accelerator ------------------------------------------------------------------

# KVM when /dev/kvm boots the image's kernel. Some hosts' /dev/kvm cannot
# (KVM-PVM runs only kernels built for it: Debian's stops with "failed to set
# MSR 0x10a"), so the probe boots the kernel without a root file system and
# wants it to reach its panic; it runs once per kernel and host boot.
probe_kvm() {
  local kernel="$1" mark log
  mark="/run/lazyagent-vm-kvm.$(sha256sum "$kernel" | cut -c1-12)"
  if [ -f "$mark" ]; then
    [ "$(cat "$mark")" = yes ]
    return
  fi
  log="$(mktemp /tmp/lazyagent-vm-kvm-probe.XXXXXX)"
  timeout 30 qemu-system-x86_64 -accel kvm -cpu host -m 256 -nodefaults -no-user-config \
    -display none -serial "file:$log" -no-reboot -nic none \
    -kernel "$kernel" -append "console=ttyS0 panic=-1" >/dev/null 2>&1 || true
  if grep -q 'Kernel panic' "$log"; then echo yes >"$mark"; else echo no >"$mark"; fi
  rm -f "$log"
  [ "$(cat "$mark")" = yes ]
}

# accel_args KERNEL: the -accel and -cpu options for a run. Emulation runs
# the vCPUs in one host thread: with one thread per vCPU (thread=multi) the
# guest kernel died at boot now and then, an int3 oops in code it was patching
# (qemu 7.2; a race of cross-modifying code between vCPUs).
accel_args() {
  local want="${LAZYAGENT_VM_ACCEL:-}"
  if [ "$want" = kvm ] || { [ -z "$want" ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] && probe_kvm "$1"; }; then
    printf '%s\n' -accel kvm -cpu host
  else
    printf '%s\n' -accel tcg,thread=single -cpu max
  fi
}

# ---- booting ------------------------------------------------------------------------

# What a boot owns, removed by boot_cleanup (also on exit): its qemu (by pid,
# never by name), the followers of its output, its run directory.
RUN_DIR=""
QEMU_PID=""
TAIL_PIDS=()
boot_cleanup() {
  if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
    kill "$QEMU_PID" 2>/dev/null || true
    wait "$QEMU_PID" 2>/dev/null || true
  fi
  QEMU_PID=""
  local p
  for p in "${TAIL_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  TAIL_PIDS=()
  [ -z "$RUN_DIR" ] || rm -rf "$RUN_DIR"
  RUN_DIR=""
}

# images_disk REF...: an ext4 image holding podman's storage of root and of
# $VM_USER with this machine's images REF..., cached in $KEY_DIR by their IDs;
# prints its path. `podman save` here, `podman load` by the tree's own podman
# at native speed (under emulation a load took 1.5-2.5 min an image, most of it
# reading the archive over 9p). The tree is entered through an overlay (what
# the loads write besides the storages is thrown away, the tree stays as built)
# and with pivot_root, not chroot: the user's rootless load makes a user
# namespace, which the kernel refuses inside a chroot.
images_disk() {
  local refs=("$@") ref id lines="" hash file
  for ref in "${refs[@]}"; do
    id="$(podman image inspect --format '{{.Id}}' "$ref" 2>/dev/null)" ||
      die "image $ref is not on this machine (scripts/build-images.sh builds the tool's images)"
    lines+="$id $ref"$'\n'
  done
  hash="$(printf '%s' "$lines" | sort | sha256sum | cut -c1-12)"
  file="$KEY_DIR/images-$hash.img"
  if [ -f "$file" ]; then
    touch "$file"
    printf '%s\n' "$file"
    return 0
  fi
  step "images disk: ${refs[*]} (for root and $VM_USER)"
  local stage
  stage="$(mktemp -d /var/tmp/lazyagent-vm-images.XXXXXX)"
  mkdir -p "$stage/tars" "$stage/disk/root" "$stage/disk/users/$VM_USER" "$stage/upper" "$stage/work" \
    "$stage/merged"
  chown 1000:1000 "$stage/disk/users/$VM_USER"
  local n=0
  for ref in "${refs[@]}"; do
    n=$((n + 1))
    podman save -q --format docker-archive -o "$stage/tars/$n.tar" "$ref" >&2 || die "podman save $ref failed"
  done
  unshare --mount --propagation private -- bash -euc '
    tree="$1" stage="$2" user="$3" root="$2/merged"
    mount -t overlay overlay -o "lowerdir=$tree,upperdir=$stage/upper,workdir=$stage/work" "$root"
    # The tree a mount of its own, entered with pivot_root, not chroot: in a
    # chroot the kernel refuses a user namespace (EPERM), which the unit tests
    # (and podman) make.
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=0755 tmpfs "$root/run"
    mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
    mkdir -p "$root/var/lib/containers/storage" "$root/home/$user/.local/share/containers/storage" \
      "$root/mnt/lazyagent-tars" "$root/tmp/oldroot" "$root/run/user/1000"
    chown 1000:1000 "$root/run/user/1000"
    chmod 0700 "$root/run/user/1000"
    mount --bind "$stage/tars" "$root/mnt/lazyagent-tars"
    mount --bind "$stage/disk/root" "$root/var/lib/containers/storage"
    mount --bind "$stage/disk/users/$user" "$root/home/$user/.local/share/containers/storage"
    cd "$root"
    pivot_root . tmp/oldroot
    cd /
    umount -l /tmp/oldroot
    export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root PODMAN_IGNORE_CGROUPSV1_WARNING=1
    for t in /mnt/lazyagent-tars/*.tar; do
      podman load -q -i "$t"
      runuser -u "$user" -- env HOME="/home/$user" XDG_RUNTIME_DIR=/run/user/1000 \
        PODMAN_IGNORE_CGROUPSV1_WARNING=1 podman load -q -i "$t" 2>&1 | grep -v "is not a shared mount" || true
    done
    runuser -u "$user" -- env HOME="/home/$user" XDG_RUNTIME_DIR=/run/user/1000 \
      PODMAN_IGNORE_CGROUPSV1_WARNING=1 podman images --format "{{.Repository}}:{{.Tag}}" 2>/dev/null | grep -q . ||
      { echo "the rootless load left no image" >&2; exit 1; }
  ' images_disk "$KEY_DIR/rootfs" "$stage" "$VM_USER" >&2 || { rm -rf "$stage"; die "loading the images failed"; }
  local size
  size=$(( $(du -sm "$stage/disk" | cut -f1) * 3 / 2 + 1024 ))
  mkfs.ext4 -q -F -L lazyagent-images -d "$stage/disk" "$file.part" "${size}M" >&2 ||
    { rm -rf "$stage" "$file.part"; die "mkfs.ext4 -d failed"; }
  rm -rf "$stage"
  mv "$file.part" "$file"
  # The three most recently used stay.
  find "$KEY_DIR" -maxdepth 1 -name 'images-*.img' -printf '%T@ %p\n' | sort -rn | tail -n +4 |
    cut -d' ' -f2- | xargs -r rm -f
  step_done "$(du -h "$file" | cut -f1)"
  printf '%s\n' "$file"
}

# boot_vm DISK overlay|direct CMD...: boots the image's kernel on DISK (through
# a throw-away qcow2 overlay, or DISK itself), runs CMD through the guest's
# runner, copies its stdout and stderr here as they come, and returns its exit
# code (124: the timeout struck, 125: the VM did not run CMD). No network
# device. Reads the caller's settings: checkout, user, timeout, memory, cpus,
# console (0/1) and images (refs: their images disk is attached).
boot_vm() {
  local disk="$1" mode="$2"; shift 2
  RUN_DIR="$(mktemp -d /var/tmp/lazyagent-vm-run.XXXXXX)"
  local ctl="$RUN_DIR/ctl" drive idisk=""
  mkdir -p "$ctl"
  : >"$ctl/stdout"; : >"$ctl/stderr"; : >"$ctl/images"
  printf '%s\n' "$user" >"$ctl/user"
  if [ $# -eq 1 ]; then
    printf '%s\n' "$1" >"$ctl/cmd"            # one word: a bash command line
  else
    printf '%q ' "$@" >"$ctl/cmd"; echo >>"$ctl/cmd"
  fi
  if [ ${#images[@]} -gt 0 ]; then
    idisk="$(images_disk "${images[@]}")" || { boot_cleanup; return 125; }
    printf '%s\n' "${images[@]}" >"$ctl/images"
  fi
  if [ "$mode" = overlay ]; then
    qemu-img create -q -f qcow2 -F raw -b "$disk" "$RUN_DIR/overlay.qcow2"
    drive="file=$RUN_DIR/overlay.qcow2,if=virtio,format=qcow2,cache=unsafe"
  else
    drive="file=$disk,if=virtio,format=raw"
  fi
  local -a accel second_disk=()
  mapfile -t accel < <(accel_args "$KEY_DIR/vmlinuz")
  if [ -n "$idisk" ]; then
    qemu-img create -q -f qcow2 -F raw -b "$idisk" "$RUN_DIR/images.qcow2"
    second_disk=(-drive "file=$RUN_DIR/images.qcow2,if=virtio,format=qcow2,cache=unsafe")
  fi
  local t0
  t0="$(now)"
  info "booting ($KEY, ${accel[1]%%,*}, $cpus CPUs, $memory MiB, no network)${user:+ as $user}"
  qemu-system-x86_64 "${accel[@]}" -smp "$cpus" -m "$memory" -nodefaults -no-user-config \
    -display none -serial "file:$RUN_DIR/console.log" -no-reboot -nic none \
    -device virtio-rng-pci \
    -kernel "$KEY_DIR/vmlinuz" -initrd "$KEY_DIR/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 panic=1 quiet" \
    -drive "$drive" \
    -virtfs "local,path=$checkout,mount_tag=lazysrc,security_model=none,readonly=on" \
    -virtfs "local,path=$KEY_DIR/build,mount_tag=lazybuild,security_model=none,readonly=on" \
    -virtfs "local,path=$ctl,mount_tag=lazyctl,security_model=none" \
    "${second_disk[@]}" </dev/null >"$RUN_DIR/qemu.log" 2>&1 &
  QEMU_PID=$!
  tail -c +1 -F --pid="$QEMU_PID" "$ctl/stdout" 2>/dev/null &
  TAIL_PIDS+=($!)
  tail -c +1 -F --pid="$QEMU_PID" "$ctl/stderr" >&2 2>/dev/null &
  TAIL_PIDS+=($!)
  if [ "$console" -eq 1 ]; then
    tail -c +1 -F --pid="$QEMU_PID" "$RUN_DIR/console.log" 2>/dev/null | sed 's/^/console: /' >&2 &
    TAIL_PIDS+=($!)
  fi

  local started=0 status="" deadline rc_seen=""
  deadline=$(( $(date +%s) + timeout ))
  while kill -0 "$QEMU_PID" 2>/dev/null; do
    if [ "$started" -eq 0 ] && [ -s "$ctl/started" ]; then
      started=1
      info "booted to the command in $(elapsed "$t0")"
    fi
    if [ -z "$rc_seen" ] && [ -s "$ctl/rc" ]; then rc_seen="$(date +%s)"; fi
    # The command is done and its output on the share: a VM that takes long
    # to power off is stopped.
    if [ -n "$rc_seen" ] && [ $(( $(date +%s) - rc_seen )) -ge 60 ]; then
      warn "the VM did not power off within 60 s of the command's end; stopping its qemu (pid $QEMU_PID)"
      kill "$QEMU_PID" 2>/dev/null || true
      break
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      warn "timeout: ${timeout}s; stopping the VM (qemu pid $QEMU_PID)"
      kill "$QEMU_PID" 2>/dev/null || true
      status=124
      break
    fi
    sleep 0.5
  done
  wait "$QEMU_PID" 2>/dev/null || true
  QEMU_PID=""
  local p
  for p in "${TAIL_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  TAIL_PIDS=()
  if [ -z "$status" ]; then
    if [ -s "$ctl/rc" ]; then
      status="$(cat "$ctl/rc")"
      info "the VM ran the command (exit $status) and powered off: $(elapsed "$t0") in all"
    else
      status=125
    fi
  fi
  if [ ! -s "$ctl/rc" ]; then
    warn "the VM did not finish the command; qemu said:"
    sed 's/^/        /' "$RUN_DIR/qemu.log" >&2
    warn "the console's last lines:"
    tail -n 40 "$RUN_DIR/console.log" | sed 's/^/        /' >&2
  fi
  boot_cleanup
  return "$status"
}

# first_boot DISK CHECKOUT: boots the new disk image itself once, so that
# what a first boot makes (AppArmor's compiled profiles, about a minute under
# emulation; the journal's catalog) is in the image, as on a host that has
# booted before, and each run does not make it again.
first_boot() {
  local user="" timeout=1800 checkout="$2" memory="${LAZYAGENT_VM_MEMORY:-4096}"
  local cpus="${LAZYAGENT_VM_CPUS:-2}" console=0
  local -a images=()
  step "first boot of the new image"
  boot_vm "$1" direct true || die "the first boot of the image failed"
  step_done
}

# ---- run ----------------------------------------------------------------------------

cmd_run() {
  local user="" timeout=3600 checkout="$LAZYAGENT_ROOT" memory="${LAZYAGENT_VM_MEMORY:-4096}"
  local cpus="${LAZYAGENT_VM_CPUS:-2}" console=0
  local -a images=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --user) user="$2"; shift ;;
      --timeout) timeout="$2"; shift ;;
      --checkout) checkout="$(cd "$2" && pwd)"; shift ;;
      --images) images+=("${VM_TOOL_IMAGES[@]}") ;;
      --image) images+=("$2"); shift ;;
      --memory) memory="$2"; shift ;;
      --cpus) cpus="$2"; shift ;;
      --console) console=1 ;;
      --) shift; break ;;
      -h|--help) cat <<EOF
usage: $(basename "$0") run [OPTIONS] -- CMD [ARG...]

Boots the cached image (vm.sh image) from a throw-away overlay, without any
network device, runs CMD as root or as USER (one word: a bash command line;
more: a command and its arguments; cwd: the user's home), prints its stdout and
stderr as they come, powers off and exits with CMD's exit code. The checkout is
at $VM_SRC (read-only), its build at $VM_BUILD.

  --user NAME       run CMD as NAME in a login session (default root; the image
                    has '$VM_USER', uid 1000, with subordinate ids)
  --images          the tool's images from this machine in the podman storage
                    of root and of '$VM_USER' (a second disk, made once per set
                    of image IDs): ${VM_TOOL_IMAGES[*]}
  --image REF       this machine's image REF too (repeatable)
  --checkout DIR    share DIR instead of $LAZYAGENT_ROOT (it should be the
                    checkout the image was built from)
  --timeout SEC     power the VM off (kill its qemu) after SEC seconds (default 3600)
  --memory MB       guest memory (default 4096)    --cpus N   guest CPUs (default 2)
  --console         copy the serial console to stderr as well

Exit status: CMD's; 124 when the timeout struck, 125 when the VM did not run CMD.
Example: $(basename "$0") run --images -- 'systemctl start podman.socket && $VM_BUILD/lazyagent-oci doctor'
EOF
        return 0 ;;
      *) die "run: unknown argument '$1' (--help)" ;;
    esac
    shift
  done
  [ $# -gt 0 ] || die "run: no command (vm.sh run [OPTIONS] -- CMD...)"
  case "$timeout" in ''|*[!0-9]*) die "--timeout wants seconds" ;; esac
  require_root
  [ -f "$KEY_DIR/disk.img" ] || die "no image for key $KEY: run $(basename "$0") image first"
  host_packages
  exec {VM_LOCK}>"$VM_DIR/lock"
  flock -s "$VM_LOCK"   # an image rebuild waits for the runs on it
  # The disk's runner must be this script's (the control share's protocol).
  if ! guest_runner | cmp -s - "$KEY_DIR/rootfs/usr/local/sbin/lazyagent-vm-run" ||
     ! guest_unit | cmp -s - "$KEY_DIR/rootfs/etc/systemd/system/lazyagent-vm-run.service" ||
     [ "$(cat "$KEY_DIR/disk.stamp" 2>/dev/null)" != "$(tree_stamp)" ]; then
    die "the disk image is older than this script or its tree: run $(basename "$0") image"
  fi
  local built now_rev
  built="$(cut -d' ' -f1 "$KEY_DIR/build/.lazyagent-checkout" 2>/dev/null || true)"
  now_rev="$(git -C "$checkout" describe --always --dirty 2>/dev/null || echo unknown)"
  [ "$built" = "$now_rev" ] ||
    warn "the image's build is of $built, the checkout is at $now_rev (vm.sh image rebuilds)"
  trap boot_cleanup EXIT
  trap 'exit 130' INT TERM
  boot_vm "$KEY_DIR/disk.img" overlay "$@"
}

# ---- status, clean -------------------------------------------------------------------------

cmd_status() {
  case "${1:-}" in
    -h|--help) echo "usage: $(basename "$0") status    (what is cached, which accelerator a run uses)"; return 0 ;;
    "") ;;
    *) die "status: unknown argument '$1'" ;;
  esac
  echo "cache:        $VM_DIR"
  echo "key:          $KEY (Debian $VM_SUITE; format $VM_FORMAT)"
  if [ -d "$KEY_DIR/rootfs" ]; then
    echo "tree:         $KEY_DIR/rootfs"
    echo "build:        $(cat "$KEY_DIR/build/.lazyagent-checkout" 2>/dev/null || echo none)"
  else
    echo "tree:         none (vm.sh image)"
  fi
  if [ -f "$KEY_DIR/disk.img" ]; then
    echo "disk:         $KEY_DIR/disk.img ($(du -h "$KEY_DIR/disk.img" | cut -f1) used, $(date -r "$KEY_DIR/disk.img" '+%F %T'))"
    echo "kernel:       $(cat "$KEY_DIR/kernel" 2>/dev/null)"
    echo "accelerator:  $(accel_args "$KEY_DIR/vmlinuz" | sed -n 2p | cut -d, -f1)"
  else
    echo "disk:         none"
  fi
  local d others=()
  for d in "$VM_DIR"/*/; do
    d="$(basename "$d")"
    case "$d" in "$KEY"|debs|ccache) ;; *) [ -d "$VM_DIR/$d/rootfs" ] || [ -f "$VM_DIR/$d/disk.img" ] && others+=("$d") ;; esac
  done
  [ ${#others[@]} -eq 0 ] || echo "stale keys:   ${others[*]} (vm.sh clean removes them)"
  local f
  for f in "$KEY_DIR"/images-*.img; do
    [ -f "$f" ] && echo "images disk:  $f ($(du -h "$f" | cut -f1))"
  done
  echo "downloads:    $(du -sh "$VM_DIR/debs" 2>/dev/null | cut -f1 || echo none), ccache $(du -sh "$VM_DIR/ccache" 2>/dev/null | cut -f1 || echo none)"
}

cmd_clean() {
  local all=0
  case "${1:-}" in
    --all) all=1 ;;
    -h|--help) cat <<EOF
usage: $(basename "$0") clean [--all]

Removes every cached image (trees, disk images, kernels, images disks) under
$VM_DIR. The downloaded .debs and the build's ccache stay (a new
image then downloads and compiles less); --all removes them too.
EOF
      return 0 ;;
    "") ;;
    *) die "clean: unknown argument '$1'" ;;
  esac
  require_root
  [ -d "$VM_DIR" ] || { info "nothing cached in $VM_DIR"; return 0; }
  exec {VM_LOCK}>"$VM_DIR/lock"
  flock -n "$VM_LOCK" || die "a vm.sh image or run is using $VM_DIR"
  local d
  for d in "$VM_DIR"/*/; do
    d="${d%/}"
    case "$(basename "$d")" in
      debs|ccache) [ "$all" -eq 1 ] || continue ;;
    esac
    info "removing $d ($(du -sh "$d" | cut -f1))"
    rm -rf "$d"
  done
}

KEY="$(vm_key)"
KEY_DIR="$VM_DIR/$KEY"
case "${1:-}" in
  image) shift; cmd_image "$@" ;;
  run) shift; cmd_run "$@" ;;
  status) shift; cmd_status "$@" ;;
  clean) shift; cmd_clean "$@" ;;
  -h|--help|"") usage ;;
  *) usage >&2; die "unknown subcommand: $1" ;;
esac
