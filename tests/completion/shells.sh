#!/usr/bin/env bash
# The completion scripts run in the shells themselves (issue 43 item 3):
# bash (the function called as bash-completion calls it), zsh (an interactive
# zsh in a pseudo-terminal, the file autoloaded from fpath as installed: the
# first Tab completes) and fish (`complete -C`). Each is asked for a command
# by its prefix, a subcommand's verbs, an option by its prefix and an
# option's values.
# usage: tests/completion/shells.sh LAZYAGENT_OCI
set -euo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/bin" "$dir/zsh"
ln -s "$bin" "$dir/bin/lazyagent-oci"
export PATH="$dir/bin:$PATH"
lazyagent-oci completion bash >"$dir/lazyagent-oci.bash"
lazyagent-oci completion zsh >"$dir/zsh/_lazyagent-oci"
lazyagent-oci completion fish >"$dir/lazyagent-oci.fish"
failed=0
# expect SHELL LINE WANT...: each WANT is among the candidates, one a line.
expect() {
  local shell=$1 line=$2 got w; shift 2
  case $shell in
    bash) got=$(bash -c 'source "$1"; read -ra COMP_WORDS <<<"$2"; [[ $2 == *" " ]] && COMP_WORDS+=("");
                 COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE=$2; COMP_POINT=${#2};
                 _lazyagent_oci; printf "%s\n" "${COMPREPLY[@]}"' _ "$dir/lazyagent-oci.bash" "$line") ;;
    zsh) got=$(timeout 30 zsh -f "$here/zsh_complete.zsh" "$dir/zsh" "$line") ;;
    fish) got=$(fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$dir/lazyagent-oci.fish" "$line" | cut -f1) ;;
  esac
  for w in "$@"; do
    if ! grep -qxF -- "$w" <<<"$got"; then
      echo "not ok - $shell: '$line' does not offer '$w'; it offers: $(tr '\n' ' ' <<<"$got")" >&2
      failed=$((failed + 1))
      return
    fi
  done
  echo "ok - $shell: '$line' offers $*"
}
for shell in bash zsh fish; do
  expect "$shell" "lazyagent-oci ima" images
  expect "$shell" "lazyagent-oci images " list build
  expect "$shell" "lazyagent-oci session ex" exec
  expect "$shell" "lazyagent-oci test --run" --runtime
  expect "$shell" "lazyagent-oci test --runtime " runc crun runsc
done
exit "$failed"
