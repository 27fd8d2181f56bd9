#include "policy/setup_egress_probe.h"

#include <sstream>

namespace lazyagent {
namespace {

const char* kProbePy = R"PY(
import os, socket, sys
listed = [a for a in sys.argv[1].split() if a]
targets = [a for a in sys.argv[2].split() if a]
out = []
def say(name, outcome, way_out):
    out.append(way_out)
    print("::lazyagent-egress-probe %s %s%s::" % (name, outcome, " way-out" if way_out else ""), flush=True)
proxy = os.environ.get("http_proxy", "").split("//")[-1].rstrip("/")
def via_proxy(name, target, must_refuse):
    try:
        h, p = proxy.rsplit(":", 1)
        s = socket.create_connection((h, int(p)), timeout=2)
        s.settimeout(5)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        code = s.recv(64).split(b" ")[1].decode("ascii", "replace")
        s.close()
    except Exception as e:
        code = "error:" + type(e).__name__
    say(name, code, must_refuse and code == "200")
via_proxy("proxy-unlisted", sys.argv[3], True)
if listed:
    e = listed[0].lstrip("*.")
    via_proxy("proxy-listed", e if ":" in e else e + ":443", False)
for t in targets:
    for port in (22, 53, 80, 443):
        s = socket.socket(socket.AF_INET6 if ":" in t else socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect((t, port))
            say("direct:%s:%d" % (t, port), "connected", True)
        except ConnectionRefusedError:
            say("direct:%s:%d" % (t, port), "refused", True)
        except OSError as e:
            say("direct:%s:%d" % (t, port), "blocked:" + (str(e.errno) if e.errno else type(e).__name__), False)
        finally:
            s.close()
for n in listed:
    n = n.lstrip("*.").split(":")[0]
    try:
        a = socket.getaddrinfo(n, 443, proto=socket.IPPROTO_TCP)
        say("dns:" + n, "resolved", True)
    except OSError:
        say("dns:" + n, "failed", False)
try:
    v6 = [l.split()[0] for l in open("/proc/net/if_inet6") if l.split()[0] != "0" * 31 + "1"]
except OSError:
    v6 = []
say("ipv6", "addresses:%d" % len(v6), bool(v6))
print("::lazyagent-egress-probe done %d::" % len(out), flush=True)
sys.exit(86 if any(out) else 0)
)PY";

std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

std::string setup_egress_probe_shell(const std::vector<std::string>& listed, const std::vector<std::string>& targets) {
  return "if command -v python3 >/dev/null 2>&1; then (cd / && python3 -I -S -c " + sh_quote(kProbePy) + " " +
         sh_quote(joined(listed)) + " " + sh_quote(joined(targets)) + " " + sh_quote(kEgressProbeTarget) + ") || exit " + std::to_string(kEgressProbeExit) +
         "; else echo '" + kEgressProbeMarker + "runner none::'; echo '" + kEgressProbeMarker + "done 0::'; fi; ";
}

SetupEgressProbe parse_setup_egress_probe(const std::string& output) {
  SetupEgressProbe p;
  p.runner = "python3";
  std::istringstream in(output);
  std::string line;
  const std::string marker = kEgressProbeMarker;
  while (std::getline(in, line)) {
    if (line.rfind(marker, 0) != 0) continue;
    std::string body = line.substr(marker.size());
    if (body.size() < 2 || body.compare(body.size() - 2, 2, "::") != 0) continue;
    body.resize(body.size() - 2);
    if (body.size() > 300) body.resize(300);
    const auto sp = body.find(' ');
    const std::string name = body.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : body.substr(sp + 1);
    if (name == "done") {
      p.ran = true;
      continue;
    }
    if (name == "runner") {
      p.runner = rest;
      continue;
    }
    std::string outcome = rest;
    const std::string flag = " way-out";
    const bool out = outcome.size() > flag.size() && outcome.compare(outcome.size() - flag.size(), flag.size(), flag) == 0;
    if (out) {
      outcome.resize(outcome.size() - flag.size());
      p.ways_out.push_back(name + " " + outcome);
    }
    p.attempts.emplace_back(name, outcome);
  }
  return p;
}

nlohmann::json SetupEgressProbe::to_json() const {
  nlohmann::json a = nlohmann::json::object();
  for (const auto& [n, o] : attempts) a[n] = o;
  return {{"ran", ran}, {"runner", runner}, {"attempts", a}, {"ways_out", ways_out},
          {"enforced", ran && runner == "python3" && ways_out.empty()}};
}

}  // namespace lazyagent
