#!/usr/bin/env bash
# The main job, end to end, from a fresh Debian 12 machine (as root): set up,
# then `lazyagent-oci run`: the planner asks the model for a fix of
# calculator.add in its own container, the patch is validated again and
# proven in the hardened sandbox.
#
# With a provider configured (`lazyagent-oci configure`), that provider is
# used. Without one, the bundled scripted provider (`lazyagent-oci
# provider-stub`, a stand-in that replays examples/provider-stub/demo-script.json,
# not a model) serves the planner, under secret names of its own
# (LAZYAGENT_DEMO_*) that are deleted again at the end.
# Arguments go to `lazyagent-oci run` (e.g. an instruction, --json).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh --no-k8s --cli-only   # the demo needs no kube-apiserver and no test binaries
bin=build/lazyagent-oci

configured() {
  "$bin" secret list --json | python3 -c 'import json,sys; sys.exit(0 if all(s["configured"] for s in json.load(sys.stdin)["secrets"]) else 1)'
}

if configured; then
  exec "$bin" run "$@"
fi

echo "==> no provider configured: using the bundled scripted provider (a stand-in, not a model)" >&2
work=$(mktemp -d /tmp/lazyagent-demo-XXXXXX)
stub_pid=
cleanup() {
  [ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null && wait "$stub_pid" 2>/dev/null || true
  for s in LAZYAGENT_DEMO_BASE_URL LAZYAGENT_DEMO_MODEL LAZYAGENT_DEMO_API_KEY; do
    "$bin" secret delete "$s" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The planner container reaches the host at host.containers.internal, so the
# stub listens on all of the host's addresses, on a free port.
"$bin" provider-stub --script examples/provider-stub/demo-script.json --listen 0.0.0.0:0 \
  >"$work/stub.out" 2>"$work/stub.err" &
stub_pid=$!
for _ in $(seq 1 100); do grep -q '^listening on ' "$work/stub.out" && break; sleep 0.05; done
port=$(sed -n 's#^listening on http://[^:]*:\([0-9]*\)/v1$#\1#p' "$work/stub.out")
[ -n "$port" ] || { cat "$work/stub.err" >&2; echo "the scripted provider did not start" >&2; exit 5; }

sed -e "s#^seed: .*#seed: $PWD/seed#" \
    -e 's#CODING_AGENT_BASE_URL#LAZYAGENT_DEMO_BASE_URL#; s#CODING_AGENT_MODEL#LAZYAGENT_DEMO_MODEL#; s#CODING_AGENT_API_KEY#LAZYAGENT_DEMO_API_KEY#' \
    config/lazyagent.yaml > "$work/demo.yaml"
key=$(python3 -c 'import json; print(json.load(open("examples/provider-stub/demo-script.json"))["api_key"])')
LAZYAGENT_DEMO_BASE_URL="http://host.containers.internal:$port/v1" LAZYAGENT_DEMO_MODEL=lazyagent-stub \
  LAZYAGENT_DEMO_API_KEY="$key" "$bin" configure --config "$work/demo.yaml" >/dev/null

status=0
"$bin" run --config "$work/demo.yaml" "$@" || status=$?
exit "$status"
