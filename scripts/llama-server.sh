#!/usr/bin/env bash
# A real OpenAI-compatible server for the tests, offline: llama.cpp's
# llama-server (Debian sid's llama.cpp-tools) in localhost/lazyagent-llama:sid,
# serving a tiny random-weights model written when the server starts
# (images/llama/tiny_model.py). See images/llama/README.md.
#
#   scripts/llama-server.sh build                  build/cache the image (build-images.sh --only llama)
#   scripts/llama-server.sh start [options]        start one server; prints where it listens
#   scripts/llama-server.sh stop NAME              remove it (and its container)
#   scripts/llama-server.sh reap                   remove servers whose owner process is gone
#
# Every server is a container labelled io.lazyagent.role=llama-fixture with its
# owner's pid and start time; `start` first reaps servers whose owner is gone
# (a test killed with SIGKILL), and each container also has a hard lifetime
# (--lifetime, podman run --timeout) after which podman kills and removes it.
#
# The server listens on the host network, on 127.0.0.1 (for the host) and on
# podman's default bridge gateway (what host.containers.internal resolves to
# in a container: the planner container reaches it there), never on the
# machine's outside interfaces.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROLE_LABEL="io.lazyagent.role=llama-fixture"
# The model writer and the chat templates are bind-mounted from the checkout
# (read-only), not baked into the image: the image is only Debian's packages,
# rebuilt when its Containerfile changes.
LLAMA_DIR="$LAZYAGENT_ROOT/images/llama"
TEMPLATES_DIR="$LLAMA_DIR/templates"

usage() {
  cat <<EOF
usage: $(basename "$0") build [--rebuild]
       $(basename "$0") start [--template T] [--port N] [--owner-pid PID] [--lifetime S]
                              [--model-arg ARG]... [--server-arg ARG]... [--json]
       $(basename "$0") stop NAME
       $(basename "$0") logs NAME
       $(basename "$0") reap
       $(basename "$0") templates

start: writes the tiny model inside a new container and serves it with
  llama-server --jinja on a free port; waits until /health answers. Prints
  "NAME PORT" (or with --json: name, port, host_base_url, container_base_url,
  template, startup_ms, log command). The model name in requests can be anything.

  --template T     chat template: a file on this host (bind-mounted), a template
                   of images/llama/templates (T.jinja: see '$(basename "$0") templates'),
                   or one of llama-server's built-in names (default: chatml)
  --port N         port (default: a free one)
  --owner-pid PID  the process whose exit lets 'reap' remove the server
                   (default: the caller, \$PPID)
  --lifetime S     podman kills and removes the container after S seconds
                   (default 1800)
  --model-arg ARG  one argument for tiny_model.py (e.g. --quote-bias=0)
  --server-arg ARG one argument for llama-server; repeat for an option and its value
                   (--server-arg --api-key --server-arg KEY: llama-server takes no --opt=value)
EOF
}

case "${1:-}" in -h|--help) usage; exit 0 ;; esac
require_root
command -v podman >/dev/null || die "podman is not installed (run scripts/setup.sh)"

# Start time of a process (field 22 of /proc/PID/stat): a pid alone can be reused.
proc_start() { awk '{ print $22 }' "/proc/$1/stat" 2>/dev/null; }

label_of() {
  podman container inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null
}

remove_container() {
  podman rm -f -t 0 "$1" >/dev/null 2>&1 || true
}

do_reap() {
  local name pid start
  # One podman call for all of them (each podman call costs ~1 s on a loaded machine).
  while read -r name pid start; do
    [ -n "$name" ] || continue
    if [ -n "$pid" ] && [ -n "$start" ] && [ "$(proc_start "$pid")" = "$start" ]; then continue; fi
    remove_container "$name"
    info "reaped $name (owner ${pid:-?} is gone)"
  done < <(podman ps -a --filter "label=$ROLE_LABEL" --format \
             '{{.Names}} {{index .Labels "io.lazyagent.owner-pid"}} {{index .Labels "io.lazyagent.owner-start"}}' 2>/dev/null || true)
  return 0
}

bridge_gateway() {
  podman network inspect podman --format '{{range .Subnets}}{{.Gateway}}{{end}}' 2>/dev/null | head -n 1
}

json_string() {  # a JSON string literal (the values here have no control characters)
  local s="${1//\\/\\\\}"
  printf '"%s"' "${s//\"/\\\"}"
}

do_start() {
  local template=chatml port="" owner="$PPID" lifetime=1800 as_json=0
  local -a model_args=() server_args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --template) template="${2:?--template needs a value}"; shift 2 ;;
      --port) port="${2:?--port needs a value}"; shift 2 ;;
      --owner-pid) owner="${2:?--owner-pid needs a value}"; shift 2 ;;
      --lifetime) lifetime="${2:?--lifetime needs a value}"; shift 2 ;;
      --model-arg) model_args+=("${2:?--model-arg needs a value}"); shift 2 ;;
      --server-arg) server_args+=("${2:?--server-arg needs a value}"); shift 2 ;;
      --json) as_json=1; shift ;;
      *) usage >&2; die "start: unknown argument: $1" ;;
    esac
  done
  podman image exists "$LAZYAGENT_LLAMA_IMAGE" ||
    die "$LAZYAGENT_LLAMA_IMAGE is missing: run scripts/setup.sh or '$(basename "$0") build'"
  local owner_start
  owner_start="$(proc_start "$owner")" || true
  [ -n "$owner_start" ] || die "--owner-pid $owner: no such process"
  do_reap

  local gw
  gw="$(bridge_gateway)"
  [ -n "$gw" ] || die "cannot read the gateway of podman's default network (podman network inspect podman)"
  [ -n "$port" ] || port="$(free_ports 1)"

  local -a mounts=(-v "$LLAMA_DIR/tiny_model.py:/opt/tiny_model.py:ro") tmpl_args=()
  local tfile=""
  if [ -f "$template" ]; then
    tfile="$(realpath "$template")"
  elif [ -f "$TEMPLATES_DIR/$template.jinja" ]; then
    tfile="$TEMPLATES_DIR/$template.jinja"
  fi
  if [ -n "$tfile" ]; then
    mounts+=(-v "$tfile:/opt/template.jinja:ro")
    tmpl_args=(--chat-template-file /opt/template.jinja)
  else
    # A built-in name (checked below: with --jinja, llama-server takes any
    # string it does not know as the template's text, and starts).
    tmpl_args=(--chat-template "$template")
  fi

  local name="lazyagent-llama-$owner-$port"
  local -a cmd=(python3 /opt/tiny_model.py /tmp/tiny.gguf "${model_args[@]}")
  # One slot and one thread: the tests send one request at a time, and the
  # machine is shared. -n caps a runaway reply (random weights) at 512 tokens.
  local -a serve=(llama-server -m /tmp/tiny.gguf --host "127.0.0.1,$gw" --port "$port"
    --jinja "${tmpl_args[@]}" -np 1 -t 1 -tb 1 -n 512 --no-webui --alias lazyagent-tiny
    "${server_args[@]}")
  local t0; t0="$(now)"
  # sh -c writes the model, then execs llama-server (pid 1: podman stop reaches it).
  local script
  script="$(printf '%q ' "${cmd[@]}") >/tmp/model.log 2>&1 || { cat /tmp/model.log >&2; exit 1; }; "
  script+="exec $(printf '%q ' "${serve[@]}")"
  podman run -d --name "$name" --pull=never \
    --label "$ROLE_LABEL" --label "io.lazyagent.owner-pid=$owner" \
    --label "io.lazyagent.owner-start=$owner_start" --label "io.lazyagent.llama-port=$port" \
    --network host --read-only --tmpfs /tmp:rw,size=64m,nosuid,nodev \
    --cap-drop ALL --security-opt no-new-privileges --memory 1g --pids-limit 256 \
    --timeout "$lifetime" "${mounts[@]}" \
    "$LAZYAGENT_LLAMA_IMAGE" sh -c "$script" >/dev/null ||
    die "podman run of $name failed"

  local ok=0 i
  for i in $(seq 1 600); do
    if curl -sf --max-time 2 "http://127.0.0.1:$port/health" >/dev/null 2>&1; then ok=1; break; fi
    # Has it died (a bad option, a model that did not load)? Asked every second only.
    if [ $((i % 10)) -eq 0 ] &&
       [ "$(podman container inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then break; fi
    sleep 0.1
  done
  if [ "$ok" -ne 1 ]; then
    podman logs "$name" 2>&1 | tail -n 30 | sed 's/^/        /' >&2 || true
    remove_container "$name"
    die "llama-server in $name did not become healthy on port $port"
  fi
  if [ -z "$tfile" ] && curl -sf --max-time 5 "http://127.0.0.1:$port/props" |
       python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin).get("chat_template") == sys.argv[1] else 1)' "$template"; then
    remove_container "$name"
    die "--template $template: not a file, not in $TEMPLATES_DIR and not one of llama-server's built-in names (see llama-server --help, --chat-template)"
  fi
  local ms
  ms="$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%d", (b - a) * 1000 }')"
  if [ "$as_json" -eq 1 ]; then
    printf '{"name":%s,"port":%s,"host_base_url":"http://127.0.0.1:%s/v1","container_base_url":"http://host.containers.internal:%s/v1","template":%s,"startup_ms":%s,"logs":%s}\n' \
      "$(json_string "$name")" "$port" "$port" "$port" "$(json_string "$template")" "$ms" \
      "$(json_string "podman logs $name")"
  else
    printf '%s %s\n' "$name" "$port"
    info "llama-server ($template) on http://127.0.0.1:$port/v1 (containers: http://host.containers.internal:$port/v1), ready in ${ms} ms"
  fi
}

do_stop() {
  local name="${1:?stop needs a NAME}"
  [ "$(label_of "$name" io.lazyagent.role || true)" = llama-fixture ] ||
    { podman container exists "$name" 2>/dev/null || return 0; die "$name is not a llama fixture container"; }
  remove_container "$name"
  ! podman container exists "$name" 2>/dev/null || die "$name is still there"
}

case "${1:-}" in
  build) shift; exec "$LAZYAGENT_ROOT/scripts/build-images.sh" --only llama "$@" ;;
  start) shift; do_start "$@" ;;
  stop) shift; do_stop "$@" ;;
  logs) shift; podman logs "${1:?logs needs a NAME}" ;;
  reap) do_reap ;;
  templates) find "$TEMPLATES_DIR" -name '*.jinja' -printf '%f\n' 2>/dev/null | sed 's/\.jinja$//' | sort ;;
  -h|--help) usage ;;
  *) usage >&2; exit 2 ;;
esac
