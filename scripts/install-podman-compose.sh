#!/usr/bin/env bash
# Install a podman-compose that runs `lazyagent-oci export compose` stacks.
#
# Why not Debian 12's own: podman-compose 1.0.3 (bookworm) attaches a network
# next to `network_mode: none` and podman refuses the container; 1.0.6 ignores
# the setting. 1.3.0 (Debian 13 "trixie") honours it. trixie's package is
# architecture-independent (Python) and its dependencies (python3-dotenv,
# python3-yaml, python3) are all in bookworm, so this script installs exactly
# that one package from trixie and nothing else:
#
#   1. podman-compose >= 1.0.6 already installed: nothing to do (idempotent).
#   2. Otherwise the trixie package list is fetched into a private apt
#      configuration under a temporary directory (never /etc/apt: no trixie
#      source is ever visible to apt-get upgrade), from the Debian mirror this
#      machine's apt sources already use, signed by the Debian archive keyring
#      that bookworm ships. `apt-get download` verifies the .deb's hash.
#   3. The .deb is installed with the system's apt, which takes its
#      dependencies from bookworm. Later upgrades never touch it: bookworm
#      only has the older 1.0.3, and apt does not downgrade.
#
# Environment:
#   LAZYAGENT_DEBIAN_MIRROR=uri            mirror (default: from the apt sources)
#   LAZYAGENT_PODMAN_COMPOSE_SUITE=suite   where to take it from (default trixie)
# lazyagent-installs: podman-compose   (from the downloaded .deb; scripts/check-host-commands.py)
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE="${LAZYAGENT_PODMAN_COMPOSE_SUITE:-trixie}"
MIN_VERSION="1.0.6"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# installed_version -> "1.3.0" or "" (not installed / not runnable)
installed_version() {
  command -v podman-compose >/dev/null 2>&1 || return 0
  podman-compose version 2>/dev/null | awk '/podman-compose version/ { print $NF; exit }'
}

# version_at_least A B: A >= B (Debian version ordering)
version_at_least() { dpkg --compare-versions "$1" ge "$2"; }

require_root
take_lock podman-compose
step "podman-compose"

have="$(installed_version)"
if [ -n "$have" ] && version_at_least "$have" "$MIN_VERSION"; then
  step_done "$have installed"
  exit 0
fi
[ -n "$have" ] && info "podman-compose $have is too old (needs >= $MIN_VERSION: older ones break network_mode: none)"

mirror="$(debian_mirror "$LAZYAGENT_DEBIAN_SUITE" main)" ||
  die "no Debian mirror for $LAZYAGENT_DEBIAN_SUITE main in the apt sources; set LAZYAGENT_DEBIAN_MIRROR=uri"
[ -r "$KEYRING" ] || die "$KEYRING is missing: apt-get install debian-archive-keyring"

work="$(mktemp -d /tmp/lazyagent-podman-compose.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb" "$work/preferences.d"
printf 'deb [signed-by=%s] %s %s main\n' "$KEYRING" "$mirror" "$SUITE" >"$work/sources.list"
# apt drops privileges to _apt for downloads: let it write where it must.
chmod 0755 "$work"
if id _apt >/dev/null 2>&1; then chown _apt "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"; fi

# A private apt: its own sources, lists, cache and (empty) preferences.
APT_PRIVATE=(
  -o "Dir::Etc::SourceList=$work/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::Etc::Preferences=/dev/null"
  -o "Dir::Etc::PreferencesParts=$work/preferences.d"
  -o "Dir::State::Lists=$work/lists"
  -o "Dir::Cache=$work/cache"
  -o "APT::Get::List-Cleanup=false"
)

info "fetching the $SUITE package list from $mirror (private apt configuration)"
apt-get "${APT_PRIVATE[@]}" -q update >&2 || die "apt-get update of $SUITE from $mirror failed"
candidate="$(apt-cache "${APT_PRIVATE[@]}" show podman-compose 2>/dev/null | awk '/^Version:/ { print $2; exit }')"
[ -n "$candidate" ] || die "$SUITE at $mirror has no podman-compose package"
version_at_least "$candidate" "$MIN_VERSION" ||
  die "$SUITE has podman-compose $candidate, older than $MIN_VERSION; set LAZYAGENT_PODMAN_COMPOSE_SUITE"
(cd "$work/deb" && apt-get "${APT_PRIVATE[@]}" -q download "podman-compose=$candidate" >&2) ||
  die "downloading podman-compose $candidate failed"
deb=""
for f in "$work"/deb/podman-compose_*_all.deb; do [ -f "$f" ] && deb="$f"; done
[ -n "$deb" ] || die "apt-get download left no podman-compose_*_all.deb in $work/deb"

info "installing $(basename "$deb") (dependencies from $LAZYAGENT_DEBIAN_SUITE)"
export DEBIAN_FRONTEND=noninteractive
install_deb() { apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "$deb" >&2; }
if ! install_deb; then
  # The dependencies come from the system's own lists, which may be stale or absent.
  info "retrying after apt-get update"
  apt-get update -q >&2 || warn "apt-get update reported errors (see above)"
  install_deb || die "apt-get install $deb failed (its dependencies: python3-dotenv, python3-yaml)"
fi

have="$(installed_version)"
if [ -z "$have" ] || ! version_at_least "$have" "$MIN_VERSION"; then
  die "podman-compose reports version '${have:-nothing}' after the install"
fi
step_done "installed $have from $SUITE"
