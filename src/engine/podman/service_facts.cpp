#include "engine/podman/service_facts.h"

#include <sys/stat.h>

#include <cerrno>

#include <cstdint>
#include <cstdlib>

#include "util/atomic_file.h"
#include "util/digest.h"
#include "util/runtime_dir.h"

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

namespace {

bool usable(const json& cached, const json& identity) {
  return cached.is_object() && cached.value("identity", json()) == identity &&
         cached.value("cgroup_manager", json()).is_string() && cached.value("oci_runtime", json()).is_string();
}

ServiceFacts from_cache(const json& cached) {
  return ServiceFacts{cached["cgroup_manager"].get<std::string>(), cached["oci_runtime"].get<std::string>(), true};
}

}  // namespace

Result<ServiceFacts> service_facts(PodmanClient& podman, const RunStore& store) {
  const json identity = socket_identity(podman.socket_path());
  const std::string key = sha256_hex(podman.socket_path()).substr(0, 32);
  // This user's machine-wide cache first (runtime_dir.h: every run store of
  // the user shares it), then the run store's own.
  const auto machine = private_runtime_dir(std::getenv("XDG_RUNTIME_DIR"));
  const std::string machine_dir = machine ? *machine + "/services" : "";
  if (!identity.is_null()) {
    if (!machine_dir.empty()) {
      if (auto text = read_owned_file(machine_dir, key + ".json", 64 * 1024)) {
        const json cached = json::parse(*text, nullptr, false);
        if (usable(cached, identity)) return from_cache(cached);
      }
    }
    auto cached = store.read_in("services", key);
    if (cached && usable(*cached, identity)) return from_cache(*cached);
  }
  auto info = podman.info();
  if (!info) return info.error();
  ServiceFacts facts;
  facts.cgroup_manager = info->value("/host/cgroupManager"_json_pointer, std::string("unknown"));
  facts.oci_runtime = info->value("/host/ociRuntime/name"_json_pointer, std::string(""));
  if (!identity.is_null()) {
    const json record{{"identity", identity}, {"cgroup_manager", facts.cgroup_manager}, {"oci_runtime", facts.oci_runtime}};
    // A cache that cannot be written costs the next process the same call.
    if (!machine_dir.empty() && (::mkdir(machine_dir.c_str(), 0700) == 0 || errno == EEXIST)) {
      (void)write_file_atomic(machine_dir + "/" + key + ".json", record.dump() + "\n");
    }
    (void)store.write_in("services", key, record);
  }
  return facts;
}

}  // namespace lazyagent
