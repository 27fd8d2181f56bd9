#!/usr/bin/env bash
# The main job, end to end, from a fresh Debian 12 machine (as root): set up,
# then `lazyagent-oci run`: the planner asks the model for a fix of
# calculator.add in its own container, the patch is validated again and
# proven in the hardened sandbox. After the set-up, `lazyagent-oci` is put on
# PATH (scripts/link-binary.sh: a symlink in /usr/local/bin to this build).
#
# With a provider configured (`lazyagent-oci configure`, under the secret
# names of $LAZYAGENT_CONFIG or config/lazyagent.yaml), that provider is used;
# if it cannot be reached (or fails otherwise, exit 3), the script says so and
# how to fall back. Without one, or with --scripted, the bundled scripted
# provider (`lazyagent-oci provider-stub`, a stand-in that replays
# examples/provider-stub/demo-script.json, not a model) serves the planner,
# under secret names of its own (LAZYAGENT_DEMO_<pid>_*, so two demos do not
# meet) that are deleted again at the end.
#
# usage: scripts/demo.sh [--scripted] [--no-setup] [RUN ARGS...]
#   --scripted   use the bundled scripted provider even when one is configured
#   --no-setup   skip scripts/setup.sh (it is idempotent, but takes seconds)
# Other arguments go to `lazyagent-oci run` (e.g. an instruction, --json).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib.sh  # start_demo_stub, demo_config

scripted=0
setup=1
run_args=()
for a in "$@"; do
  case "$a" in
    --scripted) scripted=1 ;;
    --no-setup) setup=0 ;;
    *) run_args+=("$a") ;;
  esac
done

[ "$setup" = 0 ] || scripts/setup.sh --no-k8s --cli-only   # the demo needs no kube-apiserver and no test binaries
bin=build/lazyagent-oci
# The README's later steps (and an MCP client) run plain `lazyagent-oci`: a
# symlink in /usr/local/bin ($LAZYAGENT_LINK_DIR: the docs check's own
# directory, never a shared machine's /usr/local) to this build.
scripts/link-binary.sh "${LAZYAGENT_LINK_DIR:-/usr/local/bin}" || true

configured() {
  "$bin" secret list --json | python3 -c 'import json,sys; sys.exit(0 if all(s["configured"] for s in json.load(sys.stdin)["secrets"]) else 1)'
}

if [ "$scripted" = 0 ] && configured; then
  errors=$(mktemp /tmp/lazyagent-demo-err-XXXXXX)
  trap 'rm -f "$errors"' EXIT
  status=0
  # stderr to the terminal as it comes and into $errors; stdout untouched.
  # pipefail makes the pipe's status run's (tee exits 0).
  { "$bin" run "${run_args[@]}" 2>&1 1>&3 3>&- | tee "$errors" >&2; } 3>&1 || status=$?
  if [ "$status" = 3 ]; then
    # The provider's failure is in the message above; name the common case.
    if grep -qE 'cannot connect to the provider|did not answer within|connection to the provider .* broke' "$errors"; then
      echo "==> the provider configured with \`lazyagent-oci configure\` is unreachable (see above)." >&2
    else
      echo "==> the provider configured with \`lazyagent-oci configure\` failed (exit 3, see above)." >&2
    fi
    echo "==> to run the demo with the bundled scripted provider instead: scripts/demo.sh --scripted" >&2
    echo "==> (or delete the configured secrets: lazyagent-oci secret delete NAME, see \`lazyagent-oci secret list\`)" >&2
  fi
  exit "$status"
fi

echo "==> using the bundled scripted provider (a stand-in, not a model)$([ "$scripted" = 1 ] && echo ': --scripted' || echo ': no provider configured')" >&2
work=$(mktemp -d /tmp/lazyagent-demo-XXXXXX)
prefix="LAZYAGENT_DEMO_$$"
stub_pid=
cleanup() {
  [ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null && wait "$stub_pid" 2>/dev/null || true
  for s in "${prefix}_BASE_URL" "${prefix}_MODEL" "${prefix}_API_KEY"; do
    "$bin" secret delete "$s" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The planner container reaches the host at host.containers.internal, so the
# stub listens on all of the host's addresses, on a free port (scripts/lib.sh).
start_demo_stub "$bin" "$work" || exit 5
port=$stub_port

demo_config "$prefix" > "$work/demo.yaml"
# Never configure the secrets a real provider may be stored under.
for s in BASE_URL MODEL API_KEY; do
  grep -q "${prefix}_$s" "$work/demo.yaml" ||
    { echo "config/lazyagent.yaml does not name CODING_AGENT_$s; the demo will not guess its secret names" >&2; exit 2; }
done
key=$(python3 -c 'import json; print(json.load(open("examples/provider-stub/demo-script.json"))["api_key"])')
env "${prefix}_BASE_URL=http://host.containers.internal:$port/v1" "${prefix}_MODEL=lazyagent-stub" \
  "${prefix}_API_KEY=$key" "$bin" configure --config "$work/demo.yaml" >/dev/null

status=0
"$bin" run --config "$work/demo.yaml" "${run_args[@]}" || status=$?
exit "$status"
