// What the tests on the local cluster's registry share
// (scripts/k8s-registry.sh; k8s_registry_test.cpp, k8s_environment_test.cpp,
// k8s_registry_auth_test.cpp), on top of the cluster's fixtures
// (k8s_fixtures.h): a client of the registry and of the cluster, a run's
// leftovers, a recorder of the sandbox Jobs as the API server stored them,
// a corpus project's fix proven and its predictions judged by `eval` with its
// environment, and the registry with credentials (its pull Secret's checks).
#pragma once

#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../corpus/corpus_projects.h"
#include "k8s_fixtures.h"
#include "engine/k8s/k8s_client.h"
#include "engine/k8s/kubeconfig.h"
#include "engine/k8s/k8s_seed_image.h"
#include "engine/k8s/oci_registry.h"
#include "policy/sandbox_policy.h"
#include "util/base64.h"

namespace k8sreg {

using nlohmann::json;
using it::registry_address;
using it::sh;
using namespace lazyagent;

inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline std::string reg_kubeconfig() { return it::kubeconfig(); }

inline std::string registry_state() {
  const char* s = std::getenv("LAZYAGENT_K8S_REGISTRY_STATE");
  return s && *s ? s : "/var/lib/lazyagent-oci/k8s-registry";
}

inline RegistryClient registry() {
  RegistryConnection c;
  c.address = registry_address();
  c.plain_http = true;
  return RegistryClient(c);
}

inline K8sClient reg_client() {
  auto c = load_kubeconfig(reg_kubeconfig());
  REQUIRE(c.ok());
  return K8sClient(*c);
}

inline std::size_t run_leftovers(K8sClient& k, const std::string& run_id) {
  std::size_t n = 0;
  for (const K8sKind* kind : {&kK8sJobs, &kK8sPods, &kK8sConfigMaps, &kK8sNetworkPolicies}) {
    auto l = k.list(*kind, "default", std::string(kLabelRun) + "=" + run_id);
    REQUIRE(l.ok());
    n += l->value("items", json::array()).size();
  }
  return n;
}

// Every Job of the sandbox role seen while it lives.
struct JobRecorder : it::Recorder {
  JobRecorder() : Recorder(kK8sJobs, "io.lazyagent.role=sandbox") {}
};

// `test --backend k8s` of the fix `patch_file` with the config's
// environment: it passes, its baseline failed, and triage.fixed is `fixed`.
struct ProvenFix {
  it::CliResult run;
  json result;
};
inline ProvenFix prove_fix_on_k8s(const it::CliEnv& env, const std::string& config, const std::string& patch_file,
                                  const std::vector<std::string>& fixed) {
  ProvenFix f;
  f.run = it::run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch", patch_file, "--json", "--timeout",
                            "400"},
                      900);
  INFO(f.run.err.substr(f.run.err.size() > 6000 ? f.run.err.size() - 6000 : 0));
  REQUIRE(f.run.exit_code == 0);
  f.result = it::json_out(f.run);
  CHECK(f.result["status"] == "passed");
  CHECK(f.result["triage"]["baseline"]["tests_passed"] == false);
  CHECK(corpus::sorted_strings(f.result["triage"]["fixed"]) == fixed);
  return f;
}

// `test --backend k8s` of the demo's fixing patch (written into `dir`): it
// passes against a failing baseline. The result.
inline json demo_fix_on_k8s(const it::CliEnv& env, const std::string& config, it::TempDir& dir) {
  it::CliResult r = it::run_cli(env, {"test", "--backend", "k8s", "--config", config, "--patch",
                                      dir.file("fix.json", it::fixing_patch()), "--json", "--timeout", "120"},
                                600);
  const json j = it::json_out(r);
  INFO(r.err);
  INFO(j.value("test_output", std::string()));
  CHECK(r.exit_code == 0);
  CHECK(j["tests_passed"] == true);
  CHECK(j["triage"]["verdict"] == "passed");
  CHECK(j["triage"]["baseline"]["tests_passed"] == false);
  return j;
}

// One SWE-bench prediction line.
inline std::string prediction(const std::string& id, const std::string& patch) {
  return json{{"instance_id", id}, {"model_patch", patch}, {"model_name_or_path", "it"}}.dump() + "\n";
}

// `eval --jobs 2` of the predictions on `backend`: its run (the summary on
// stdout); the per-task results under `out`.
inline it::CliResult eval_run(const it::CliEnv& env, const std::string& backend, const std::string& preds,
                              const std::string& map, const std::string& config, const std::string& out,
                              const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {"eval", "--predictions", preds, "--seed-map", map, "--config", config, "--jobs", "2",
                                   "--timeout", "400", "--out", out, "--json", "--backend", backend};
  args.insert(args.end(), more.begin(), more.end());
  it::CliResult r = it::run_cli(env, args, 900);
  INFO(backend << ": " << r.err.substr(r.err.size() > 6000 ? r.err.size() - 6000 : 0));
  CHECK(r.exit_code == 0);  // every task judged: a failed one is a verdict
  REQUIRE(json::parse(r.out, nullptr, false).is_object());
  return r;
}
inline json eval_on(const it::CliEnv& env, const std::string& backend, const std::string& preds, const std::string& map,
                    const std::string& config, const std::string& out) {
  return json::parse(eval_run(env, backend, preds, map, config, out).out);
}

// The per-task result `id` of an eval whose --out was `out`.
inline json result_of(const std::string& out, const std::string& id) {
  json r = json::parse(it::read_file(out + "/results/" + id + ".json"), nullptr, false);
  INFO(out << "/results/" << id << ".json");
  REQUIRE(r.is_object());
  return r;
}

// A second registry, with basic auth (scripts/k8s-registry.sh with
// LAZYAGENT_K8S_REGISTRY_USER / _PASSWORD_FILE), on the address the cluster's
// containerd already knows (`auth-address`, port 25501); stopped, its storage
// removed, when the test ends.
struct AuthRegistry {
  it::TempDir dir;
  std::string user = "lazyagent";
  std::string password = "pw-lazyagent-it-" + std::to_string(getpid()) + "-registry";
  std::string password_file, address, env;
  AuthRegistry() {
    password_file = dir.file("password", password + "\n");
    address = trimmed(sh(std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/k8s-registry.sh auth-address"));
    const std::string port = address.substr(address.rfind(':') + 1);
    env = "LAZYAGENT_K8S_REGISTRY_PORT=" + port + " LAZYAGENT_K8S_REGISTRY_STATE=/var/lib/lazyagent-oci/k8s-registry-auth"
          " LAZYAGENT_K8S_REGISTRY_USER=" + user + " LAZYAGENT_K8S_REGISTRY_PASSWORD_FILE=" + password_file;
    const std::string out = trimmed(sh(env + " " + LAZYAGENT_SOURCE_DIR + "/scripts/k8s-registry.sh start 2>&1"));
    INFO(out);
    REQUIRE(out.size() >= address.size());
    REQUIRE(out.substr(out.size() - address.size()) == address);
  }
  ~AuthRegistry() { sh(env + " " + LAZYAGENT_SOURCE_DIR + "/scripts/k8s-registry.sh stop >/dev/null 2>&1"); }
  // The k8s: lines of a config using it.
  std::string config_lines() const {
    return "  registry: " + address + "\n  registry_plain_http: true\n  registry_username: " + user +
           "\n  registry_password_file: " + password_file + "\n";
  }
  RegistryClient client() const {
    RegistryConnection c;
    c.address = address;
    c.plain_http = true;
    c.username = user;
    c.password = password;
    return RegistryClient(c);
  }
  std::vector<std::string> tags(const std::string& repo = kSeedImageRepo) const {
    RegistryClient r = client();
    auto t = r.tags(repo);
    REQUIRE(t.ok());
    return *t;
  }
  // The password in every form a leak would take: itself, HTTP basic's
  // user:password, podman's X-Registry-Auth (URL-safe base64 JSON), base64.
  std::vector<std::string> credential_texts() const {
    std::string x_auth = base64_encode(json{{"username", user}, {"password", password}}.dump());
    for (char& c : x_auth) c = c == '+' ? '-' : c == '/' ? '_' : c;
    return {password, base64_encode(user + ":" + password), x_auth, base64_encode(password)};
  }
  // How many files under `dir` hold any of them.
  std::size_t files_with_credentials(const std::string& path) const {
    std::size_t n = 0;
    for (const auto& t : credential_texts()) {
      n += std::stoul(trimmed(sh("grep -rlF -e '" + t + "' " + path + " 2>/dev/null | wc -l")));
    }
    return n;
  }
  bool in_text(const std::string& text) const {
    for (const auto& t : credential_texts()) {
      if (text.find(t) != std::string::npos) return true;
    }
    return false;
  }
};

// A pod template as the API server stored it pulls through exactly the pull
// Secret `name`, which the kubelet reads and nothing else: no container or
// init container names it (env, envFrom, a mount), no volume is made of it,
// and the password is nowhere in the spec. Returns the pod's Secret volumes'
// names (the planner's provider Secret; none for the sandbox).
inline std::vector<std::string> check_pull_secret_only(const json& pod, const std::string& name,
                                                       const AuthRegistry& reg) {
  CHECK(pod.value("imagePullSecrets", json()) == json::array({{{"name", name}}}));
  const std::string spec = pod.dump();
  // Named once: in imagePullSecrets.
  std::size_t named = 0;
  for (auto at = spec.find("\"" + name + "\""); at != std::string::npos; at = spec.find("\"" + name + "\"", at + 1)) {
    ++named;
  }
  CHECK(named == 1);
  json containers = pod.value("containers", json::array());
  for (const auto& c : pod.value("initContainers", json::array())) containers.push_back(c);
  for (const auto& c : containers) {
    const std::string cs = c.dump();
    CHECK(cs.find("envFrom") == std::string::npos);
    CHECK(cs.find(name) == std::string::npos);
  }
  CHECK_FALSE(reg.in_text(spec));
  std::vector<std::string> secret_volumes;
  for (const auto& v : pod.value("volumes", json::array())) {
    if (v.contains("secret")) secret_volumes.push_back(v["secret"].value("secretName", ""));
  }
  return secret_volumes;
}

// The run's pull Secrets are gone: none labelled with the run, none by name.
inline void check_pull_secrets_gone(K8sClient& k, const std::string& run_id, const std::vector<std::string>& names) {
  auto secrets = k.list(kK8sSecrets, "default", std::string(kLabelRun) + "=" + run_id);
  REQUIRE(secrets.ok());
  CHECK(secrets->value("items", json::array()).empty());
  for (const auto& n : names) {
    auto by_name = k.get(kK8sSecrets, "default", n);
    REQUIRE(by_name.ok());
    CHECK_FALSE(by_name->has_value());
  }
}

}  // namespace k8sreg
