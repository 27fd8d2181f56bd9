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
         usr/share/fish/vendor_completions.d/lazyagent-oci.fish usr/share/lazyagent-oci/config/lazyagent.yaml \
         usr/share/lazyagent-oci/scripts/build-images.sh usr/share/lazyagent-oci/scripts/lib.sh \
         usr/share/lazyagent-oci/images/sandbox/Containerfile usr/share/lazyagent-oci/images/egress-proxy/Containerfile \
         usr/share/lazyagent-oci/Containerfile usr/share/lazyagent-oci/.containerignore; do
  [ -s "$root/$f" ] || { echo "scratch install: $f is missing" >&2; exit 1; }
done
bin=$root/usr/bin/lazyagent-oci
[ "$(cd / && env -i PATH=/usr/bin:/bin "$bin" version)" = "lazyagent-oci $("$build/lazyagent-oci" version | awk '{print $2}')" ]
# The installed config is found beside the binary: no "no config file found" line.
err=$(cd / && env -i PATH=/usr/bin:/bin HOME="$root" XDG_STATE_HOME="$root/state" \
  "$bin" test --seed "$root/usr/share/lazyagent-oci/seed" --patch /dev/null 2>&1 >/dev/null || true)
case $err in *"no config file found"*) echo "scratch install: the installed config was not found: $err" >&2; exit 1 ;; esac
# `images build` finds the installed builder (its refusal of a bad name comes
# before any build and names the choices), and `images list` asks the podman
# service, naming a missing image's build command.
out=$(cd / && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$bin" images build --only nope 2>&1 || true)
case $out in *"--only: no image 'nope' (one of base, sandbox, planner, planner-runtime, egress-proxy, llama)"*) ;;
  *) echo "scratch install: images build --only nope: $out" >&2; exit 1 ;; esac
mkdir -p "$root/alone/bin" && cp "$bin" "$root/alone/bin/"
out=$(cd / && env -i PATH=/usr/bin:/bin "$root/alone/bin/lazyagent-oci" images build 2>&1 || true)
case $out in *"no image builder beside this binary"*"$root/alone/share/lazyagent-oci/scripts/build-images.sh"*) ;;
  *) echo "scratch install: images build without a builder: $out" >&2; exit 1 ;; esac
"$bin" images --help | grep -q "share/lazyagent-oci/scripts/build-images.sh"
# The installed builder runs: the sandbox image the set-up built is up to date
# (a no-op), and the list says it is there.
out=$(cd / && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$bin" images build --only sandbox --json 2>"$root/build.log") ||
  { cat "$root/build.log" >&2; echo "scratch install: images build --only sandbox failed" >&2; exit 1; }
grep -q "localhost/lazyagent-sandbox:latest: present and up to date" "$root/build.log" ||
  { cat "$root/build.log" >&2; echo "scratch install: the installed builder did not find the sandbox up to date" >&2; exit 1; }
python3 -c 'import json,sys; d={i["name"]: i for i in json.load(sys.stdin)["images"]}; assert d["sandbox"]["present"], d' <<<"$out"
# A missing image is listed as such, with the command that builds it.
printf 'images:\n  sandbox: localhost/lazyagent-missing-%s:latest\n' "$$" >"$root/missing.yaml"
out=$("$bin" images list --config "$root/missing.yaml" --json)
python3 -c 'import json,sys; d={i["name"]: i for i in json.load(sys.stdin)["images"]}
assert not d["sandbox"]["present"] and d["sandbox"]["build"] == "lazyagent-oci images build --only sandbox", d
assert d["planner"]["present"], d' <<<"$out"
# The completion it installed is the one the binary prints.
cmp -s "$root/usr/share/bash-completion/completions/lazyagent-oci" <("$bin" completion bash)
echo "scratch install: ok"
