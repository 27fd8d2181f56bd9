#include "engine/podman/service_facts.h"

#include <sys/stat.h>

#include <cstdint>

#include "util/digest.h"

namespace lazyagent {

using nlohmann::json;

json socket_identity(const std::string& socket_path) {
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0) return nullptr;
  return {{"socket", socket_path},
          {"dev", static_cast<std::uint64_t>(st.st_dev)},
          {"ino", static_cast<std::uint64_t>(st.st_ino)},
          {"ctime_ns", static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec}};
}

Result<ServiceFacts> service_facts(PodmanClient& podman, const RunStore& store) {
  const json identity = socket_identity(podman.socket_path());
  const std::string key = sha256_hex(podman.socket_path()).substr(0, 32);
  if (!identity.is_null()) {
    auto cached = store.read_in("services", key);
    if (cached && cached->is_object() && cached->value("identity", json()) == identity &&
        cached->value("cgroup_manager", json()).is_string() && cached->value("oci_runtime", json()).is_string()) {
      return ServiceFacts{(*cached)["cgroup_manager"].get<std::string>(), (*cached)["oci_runtime"].get<std::string>(),
                          true};
    }
  }
  auto info = podman.info();
  if (!info) return info.error();
  ServiceFacts facts;
  facts.cgroup_manager = info->value("/host/cgroupManager"_json_pointer, std::string("unknown"));
  facts.oci_runtime = info->value("/host/ociRuntime/name"_json_pointer, std::string(""));
  if (!identity.is_null()) {
    (void)store.write_in("services", key,
                         json{{"identity", identity},
                              {"cgroup_manager", facts.cgroup_manager},
                              {"oci_runtime", facts.oci_runtime}});
  }
  return facts;
}

}  // namespace lazyagent
