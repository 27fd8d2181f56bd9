#include "engine/k8s/podman_registry_trust.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/terminal_text.h"

namespace lazyagent {

namespace fs = std::filesystem;

std::vector<std::string> podman_certs_dirs() {
  std::vector<std::string> dirs;
  if (geteuid() != 0) {
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg) {
      dirs.push_back(std::string(xdg) + "/containers/certs.d");
    } else if (home && *home) {
      dirs.push_back(std::string(home) + "/.config/containers/certs.d");
    }
  }
  dirs.push_back("/etc/containers/certs.d");
  dirs.push_back("/etc/docker/certs.d");
  return dirs;
}

std::vector<std::string> pem_certificates(const std::string& pem) {
  static const std::string begin = "-----BEGIN CERTIFICATE-----", end = "-----END CERTIFICATE-----";
  std::vector<std::string> out;
  for (auto at = pem.find(begin); at != std::string::npos; at = pem.find(begin, at + 1)) {
    const auto stop = pem.find(end, at);
    if (stop == std::string::npos) break;
    std::string body;
    for (auto i = at + begin.size(); i < stop; ++i) {
      if (!std::isspace(static_cast<unsigned char>(pem[i]))) body += pem[i];
    }
    if (!body.empty()) out.push_back(std::move(body));
  }
  return out;
}

namespace {

std::string read_small(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) > (1 << 20)) return "";
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool dir_holds(const fs::path& dir, const std::vector<std::string>& wanted) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".crt") continue;
    for (const auto& cert : pem_certificates(read_small(e.path()))) {
      for (const auto& w : wanted) {
        if (cert == w) return true;
      }
    }
  }
  return false;
}

}  // namespace

Status check_podman_trusts_ca(const RegistryConnection& c, const std::vector<std::string>& dirs) {
  if (c.plain_http || c.ca_pem.empty()) return ok_status();
  const std::vector<std::string> wanted = pem_certificates(c.ca_pem);
  for (const auto& d : dirs) {
    if (dir_holds(fs::path(d) / c.address, wanted)) return ok_status();
  }
  const std::string target = (dirs.empty() ? std::string("/etc/containers/certs.d") : dirs.front()) + "/" + c.address;
  std::string looked;
  for (const auto& d : dirs) looked += (looked.empty() ? "" : ", ") + d + "/" + c.address + "/*.crt";
  return usage_error("environment on k8s: podman pushes the environment image to the https registry " +
                     escape_for_terminal(c.address) +
                     " and its push API takes no CA: it trusts the system's CAs and the *.crt files of certs.d "
                     "only, and none of them (" + escape_for_terminal(looked) +
                     ") holds the CA of k8s.registry_ca_file (" + escape_for_terminal(c.ca_file) +
                     "). Install it there for podman, e.g. install -D -m 0644 " + escape_for_terminal(c.ca_file) +
                     " " + escape_for_terminal(target) + "/ca.crt, and run again (nothing was pushed)");
}

}  // namespace lazyagent
