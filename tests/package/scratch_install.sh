#!/usr/bin/env bash
# `cmake --install` into a scratch root (DESTDIR) puts the binary, the manual
# page, the shell completions and share/lazyagent-oci where Debian's tools look,
# and the installed binary runs from there with nothing from the build tree: it
# finds its config beside itself (no "no config file found").
# usage: tests/package/scratch_install.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
DESTDIR=$root cmake --install "$build" --prefix /usr >/dev/null
for f in usr/bin/lazyagent-oci usr/share/man/man1/lazyagent-oci.1.gz \
         usr/share/bash-completion/completions/lazyagent-oci usr/share/zsh/vendor-completions/_lazyagent-oci \
         usr/share/fish/vendor_completions.d/lazyagent-oci.fish usr/share/lazyagent-oci/config/lazyagent.yaml; do
  [ -s "$root/$f" ] || { echo "scratch install: $f is missing" >&2; exit 1; }
done
bin=$root/usr/bin/lazyagent-oci
[ "$(cd / && env -i PATH=/usr/bin:/bin "$bin" version)" = "lazyagent-oci $("$build/lazyagent-oci" version | awk '{print $2}')" ]
# The installed config is found beside the binary: no "no config file found" line.
err=$(cd / && env -i PATH=/usr/bin:/bin HOME="$root" XDG_STATE_HOME="$root/state" \
  "$bin" test --seed "$root/usr/share/lazyagent-oci/seed" --patch /dev/null 2>&1 >/dev/null || true)
case $err in *"no config file found"*) echo "scratch install: the installed config was not found: $err" >&2; exit 1 ;; esac
# The completion it installed is the one the binary prints.
cmp -s "$root/usr/share/bash-completion/completions/lazyagent-oci" <("$bin" completion bash)
echo "scratch install: ok"
