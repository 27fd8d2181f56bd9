#include "policy/planner_policy.h"

namespace lazyagent {

using nlohmann::json;

PlannerRequest planner_request_from_config(const Config& config) {
  PlannerRequest r;
  r.image = config.images.planner;
  r.network = config.provider.network;
  r.base_url_secret = config.provider.base_url_secret;
  r.model_secret = config.provider.model_secret;
  r.api_key_secret = config.provider.api_key_secret;
  r.timeout_seconds = config.timeouts.planner_seconds;
  return r;
}

json build_planner_spec(const PlannerRequest& r) {
  auto secret = [](const std::string& source, const char* target) {
    // Go field names (podman's specgen.Secret has no json tags); mode 0400.
    return json{{"Source", source}, {"Target", target}, {"UID", 0}, {"GID", 0}, {"Mode", 0400}};
  };
  auto tmpfs = [](const char* dest, const char* size) {
    return json{{"destination", dest}, {"type", "tmpfs"}, {"source", "tmpfs"},
                {"options", {"rw", "nosuid", "nodev", "noexec", size, "mode=1777"}}};
  };
  return json{
      {"name", r.name},
      {"image", r.image},
      {"entrypoint", {"/usr/local/bin/lazyagent-oci"}},
      {"command", {"plan", "--task", kTaskFile, "--secrets-dir", kSecretsDir}},
      {"work_dir", "/"},
      {"hostname", "planner"},
      {"labels", r.labels},
      {"env", {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}}},
      {"unsetenvall", true},
      {"netns", {{"nsmode", r.network}}},
      {"cap_drop", {"ALL"}},
      {"no_new_privileges", true},
      {"read_only_filesystem", true},
      // A tmpfs of our own at /run/secrets replaces podman's read-only bind
      // there, so runc can create the secret files' mount points. Measured on
      // podman 4.3.1: with the bind, the first init of a read-only container
      // with secrets fails ("read-only file system"; a second init works).
      {"mounts", {tmpfs(kSecretsDir, "size=1m"), tmpfs("/tmp", "size=16m")}},
      {"secrets",
       {secret(r.base_url_secret, kSecretBaseUrl), secret(r.model_secret, kSecretModel),
        secret(r.api_key_secret, kSecretApiKey)}},
      {"resource_limits",
       {{"memory", {{"limit", r.memory_bytes}, {"swap", r.memory_bytes}}},
        {"pids", {{"limit", r.pids}}},
        {"cpu", {{"quota", 100000}, {"period", 100000}}}}},
      {"r_limits",
       {{{"type", "nofile"}, {"soft", r.nofile}, {"hard", r.nofile}},
        {{"type", "nproc"}, {"soft", r.nproc}, {"hard", r.nproc}}}},
      {"timeout", r.timeout_seconds + 5},
      {"stop_timeout", 0},
      {"log_configuration", {{"driver", "k8s-file"}, {"size", 4 << 20}}},
      {"terminal", false},
      {"stdin", false},
  };
}

}  // namespace lazyagent
