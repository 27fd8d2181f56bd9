#!/usr/bin/env bash
# Writes lazyagent-oci(1) and the bash, zsh and fish completions from the
# binary's own parsers (called by the build: CMakeLists.txt, target lazyagent-docs).
#   scripts/write-docs.sh BINARY OUTDIR
set -euo pipefail
bin="${1:?usage: write-docs.sh BINARY OUTDIR}"
out="${2:?usage: write-docs.sh BINARY OUTDIR}"
mkdir -p "$out"
"$bin" help --man | gzip -9n >"$out/lazyagent-oci.1.gz"
"$bin" completion bash >"$out/lazyagent-oci.bash"
"$bin" completion zsh >"$out/_lazyagent-oci"
"$bin" completion fish >"$out/lazyagent-oci.fish"
