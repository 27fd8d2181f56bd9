#!/usr/bin/env bash
# The local cluster's image registry (issue 32: a registry as the channel):
# Debian's `docker-registry` (the CNCF distribution registry) on 127.0.0.1,
# with its own config and storage, for `k8s.registry` (the run's private copy
# of the seed as an image the sandbox pod pulls by digest). containerd of
# scripts/k8s-cluster.sh pulls from it over plain HTTP on loopback (its
# hosts.toml; k8s-cluster.sh start/stop start and stop this too).
#
#   scripts/k8s-registry.sh start    # prints the address (127.0.0.1:PORT) on stdout
#   scripts/k8s-registry.sh stop     # stops it (by pid), removes its state
#   scripts/k8s-registry.sh gc       # garbage-collects blobs no manifest names (stopped registry only)
#   scripts/k8s-registry.sh status   # prints the address when it runs
#   scripts/k8s-registry.sh address  # the address it runs (or would run) on
#   scripts/k8s-registry.sh tls-start|tls-stop|tls-status|tls-address|tls-ca
#                                    # the same for the cluster's third registry, over
#                                    # verified TLS (tls-ca prints its CA's path)
#
# State: $LAZYAGENT_K8S_REGISTRY_STATE (default /var/lib/lazyagent-oci/k8s-registry):
# config.yml, data/, registry.pid, registry.log. Port: $LAZYAGENT_K8S_REGISTRY_PORT
# (default 25500). Deletes are enabled (the CLI deletes a run's manifest by digest).
# Basic auth (htpasswd, bcrypt): LAZYAGENT_K8S_REGISTRY_USER and
# LAZYAGENT_K8S_REGISTRY_PASSWORD_FILE; the cluster's second, authenticated
# registry for the image pull Secret's test runs on port 25501 (`auth-address`).
# TLS (LAZYAGENT_K8S_REGISTRY_TLS=1; the tls-* commands set it, with port
# $LAZYAGENT_K8S_REGISTRY_TLS_PORT, default 25502, and state
# $LAZYAGENT_K8S_REGISTRY_STATE-tls): a private CA and a server certificate
# for IP 127.0.0.1 made with openssl in STATE/tls (ca.crt is what
# k8s.registry_ca_file names and what containerd trusts for that host).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

R_STATE="${LAZYAGENT_K8S_REGISTRY_STATE:-/var/lib/lazyagent-oci/k8s-registry}"
R_PORT="${LAZYAGENT_K8S_REGISTRY_PORT:-25500}"
R_TLS="${LAZYAGENT_K8S_REGISTRY_TLS:-0}"
R_TLS_PORT="${LAZYAGENT_K8S_REGISTRY_TLS_PORT:-25502}"
case "${1:-}" in
  tls-*)  # the TLS registry: its own port and state directory
    R_TLS=1; R_PORT="$R_TLS_PORT"; R_STATE="$R_STATE-tls"; set -- "${1#tls-}" ;;
esac
R_ADDR="127.0.0.1:$R_PORT"
R_BIN=/usr/bin/docker-registry
R_MARKER=".lazyagent-k8s-registry"

pid_alive() {  # pid_alive NAME: the registry recorded in NAME.pid still runs
  local f="$R_STATE/$1.pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  printf '%s' "$pid"
}

R_USER="${LAZYAGENT_K8S_REGISTRY_USER:-}"
R_PASSWORD_FILE="${LAZYAGENT_K8S_REGISTRY_PASSWORD_FILE:-}"

# It answers /v2/: 200, or 401 when it asks for credentials.
answers() {
  local code
  if [ "$R_TLS" = 1 ]; then
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$R_STATE/tls/ca.crt" \
      "https://$R_ADDR/v2/" || true)"
  else
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$R_ADDR/v2/" || true)"
  fi
  [ "$code" = 200 ] || { [ -n "$R_USER" ] && [ "$code" = 401 ]; }
}

# The htpasswd file the registry reads (bcrypt only): libxcrypt's crypt(3)
# through Python's crypt module, so no extra package.
write_htpasswd() {
  [ -f "$R_PASSWORD_FILE" ] || die "LAZYAGENT_K8S_REGISTRY_PASSWORD_FILE=$R_PASSWORD_FILE: no such file"
  python3 -W ignore - "$R_USER" "$R_PASSWORD_FILE" >"$R_STATE/htpasswd" <<'PY'
import crypt, sys
user, pw = sys.argv[1], open(sys.argv[2]).read().rstrip("\r\n")
h = crypt.crypt(pw, crypt.mksalt(crypt.METHOD_BLOWFISH))
assert h and h.startswith("$2"), "crypt(3) has no bcrypt here"
print(f"{user}:{h}")
PY
  chmod 0600 "$R_STATE/htpasswd"
}

# A private CA (2 days) and the registry's certificate, signed by it, for
# IP 127.0.0.1 only (a client that says "localhost" gets a name mismatch).
write_tls() {
  local t="$R_STATE/tls"
  command -v openssl >/dev/null || die "openssl is missing: apt-get install openssl (scripts/setup.sh installs it)"
  mkdir -p "$t"
  chmod 0755 "$t"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=lazyagent-k8s-registry-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$t/ca.key" -out "$t/ca.crt" 2>/dev/null || die "openssl could not make the registry's CA"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=127.0.0.1" -keyout "$t/server.key" -out "$t/server.csr" 2>/dev/null ||
    die "openssl could not make the registry's key"
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$t/server.ext"
  openssl x509 -req -in "$t/server.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" -CAcreateserial -days 2 \
    -extfile "$t/server.ext" -out "$t/server.crt" 2>/dev/null || die "openssl could not sign the registry's certificate"
  chmod 0600 "$t/ca.key" "$t/server.key"
  chmod 0644 "$t/ca.crt" "$t/server.crt"
}

write_config() {
  cat >"$R_STATE/config.yml" <<EOF2
version: 0.1
log:
  level: warn
  fields:
    service: lazyagent-k8s-registry
storage:
  filesystem:
    rootdirectory: $R_STATE/data
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: $R_ADDR
  headers:
    X-Content-Type-Options: [nosniff]
EOF2
  if [ "$R_TLS" = 1 ]; then
    write_tls
    cat >>"$R_STATE/config.yml" <<EOF2
  tls:
    certificate: $R_STATE/tls/server.crt
    key: $R_STATE/tls/server.key
EOF2
  fi
  if [ -n "$R_USER" ]; then
    write_htpasswd
    cat >>"$R_STATE/config.yml" <<EOF2
auth:
  htpasswd:
    realm: lazyagent-k8s-registry
    path: $R_STATE/htpasswd
EOF2
  fi
}

do_start() {
  require_root
  [ -x "$R_BIN" ] || die "$R_BIN is missing: apt-get install docker-registry (scripts/setup.sh installs it)"
  if pid_alive registry >/dev/null && answers; then printf '%s\n' "$R_ADDR"; return 0; fi
  if [ -e "$R_STATE" ] && [ ! -f "$R_STATE/$R_MARKER" ] && [ -n "$(ls -A "$R_STATE" 2>/dev/null)" ]; then
    die "$R_STATE exists, is not empty and was not made by this script"
  fi
  mkdir -p "$R_STATE/data"
  chmod "$([ "$R_TLS" = 1 ] && echo 0711 || echo 0700)" "$R_STATE"  # TLS: ca.crt readable by anyone
  : >"$R_STATE/$R_MARKER"
  write_config
  setsid nohup "$R_BIN" serve "$R_STATE/config.yml" </dev/null >"$R_STATE/registry.log" 2>&1 &
  echo $! >"$R_STATE/registry.pid"
  local i
  for i in $(seq 1 40); do answers && break; sleep 0.25; done
  answers || die "the registry did not answer on $R_ADDR within 10 s (log: $R_STATE/registry.log)"
  info "registry on $([ "$R_TLS" = 1 ] && echo "https://")$R_ADDR (pid $(cat "$R_STATE/registry.pid"), storage $R_STATE/data)"
  printf '%s\n' "$R_ADDR"
}

do_stop() {
  require_root
  [ -d "$R_STATE" ] || { info "no registry state in $R_STATE"; return 0; }
  [ -f "$R_STATE/$R_MARKER" ] || die "$R_STATE was not made by this script; not touching it"
  stop_daemon registry "$R_STATE/registry.pid"
  rm -rf "$R_STATE"
  info "registry stopped; $R_STATE removed"
}

do_gc() {
  require_root
  pid_alive registry >/dev/null && die "stop the registry first (garbage collection needs it stopped)"
  [ -f "$R_STATE/config.yml" ] || die "no registry state in $R_STATE"
  "$R_BIN" garbage-collect --delete-untagged "$R_STATE/config.yml"
}

case "${1:-}" in
  start) do_start ;;
  stop) do_stop ;;
  gc) do_gc ;;
  status) pid_alive registry >/dev/null && answers && printf '%s\n' "$R_ADDR" || { info "not running"; exit 1; } ;;
  address) printf '%s\n' "$R_ADDR" ;;
  auth-address) printf '127.0.0.1:%s\n' "${LAZYAGENT_K8S_REGISTRY_AUTH_PORT:-25501}" ;;
  ca) [ "$R_TLS" = 1 ] || die "only the TLS registry has a CA (tls-ca)"; printf '%s\n' "$R_STATE/tls/ca.crt" ;;
  -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
