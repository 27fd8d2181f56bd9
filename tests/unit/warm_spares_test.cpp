// The warm spare's key (warm_spares.h): what must make a spare unusable, and
// the per-spare parts that must not; and how a listing is read.
#include "catch_compat.h"

#include "config.h"
#include "contract/runner_driver.h"
#include "engine/podman/warm_spares.h"
#include "policy/sandbox_policy.h"
#include "unit_tmp.h"

#include <filesystem>

using namespace lazyagent;

namespace {

SpareRecipe recipe_for(const Config& config) {
  SpareRecipe r;
  r.policy = policy_from_config(config, 60);
  r.runtime = config.engine.runtime;
  r.command_for = [config](const std::string& nonce) { return plan_evidence(config.test_command, config.report, nonce).command; };
  r.image_digest = "sha256:aaaa";
  r.scope = "/src/project";
  return r;
}

}  // namespace

TEST_CASE("warm spare key: any change of policy, image, command or runtime changes it", "[unit][warm]") {
  Config config;
  config.test_command = "python3 -m unittest -v";
  const std::string base = spare_key(recipe_for(config));
  CHECK(base.size() == 32);
  CHECK(spare_key(recipe_for(config)) == base);  // stable: the nonce is not in it

  SpareRecipe r = recipe_for(config);
  r.image_digest = "sha256:bbbb";
  CHECK(spare_key(r) != base);
  r = recipe_for(config);
  r.runtime = "runsc";
  CHECK(spare_key(r) != base);
  r = recipe_for(config);
  r.scope = "/src/other";
  CHECK(spare_key(r) != base);

  Config more_memory = config;
  more_memory.limits.memory_mib += 128;
  CHECK(spare_key(recipe_for(more_memory)) != base);
  Config other_command = config;
  other_command.test_command = "python3 -m pytest -q";
  CHECK(spare_key(recipe_for(other_command)) != base);
  Config output_only = config;
  output_only.report = "output";
  CHECK(spare_key(recipe_for(output_only)) != base);
  r = recipe_for(config);
  r.policy.seccomp["defaultAction"] = "SCMP_ACT_ALLOW";
  CHECK(spare_key(r) != base);
}

TEST_CASE("warm spare request: its own paths and nonce, the policy's everything else", "[unit][warm]") {
  Config config;
  config.test_command = "python3 -m unittest -v";
  const SpareRecipe r = recipe_for(config);
  const SandboxRequest a = spare_request(r, "/state/work/spare-1", "1111111111111111", {});
  const SandboxRequest b = spare_request(r, "/state/work/spare-2", "2222222222222222", {});
  CHECK(a.seed_copy_path == "/state/work/spare-1/seed");
  CHECK(a.seccomp_profile_path == "/state/work/spare-1/seccomp.json");
  CHECK(a.test_command.find("1111111111111111") != std::string::npos);
  CHECK(b.test_command.find("2222222222222222") != std::string::npos);
  CHECK(a.test_command != b.test_command);
}

TEST_CASE("warm spare listing: claimed by rename, expiry and ids from labels", "[unit][warm]") {
  nlohmann::json c = {{"Id", "0123456789abcdef"},
                      {"Names", {"lazyagent-spare-abc123"}},
                      {"State", "initialized"},
                      {"Labels",
                       {{"io.lazyagent.role", "spare"},
                        {"io.lazyagent.run", "spare-abc123"},
                        {kLabelSpareKey, "k"},
                        {kLabelSpareNonce, "n"},
                        {kLabelSpareExpires, "1700000000"},
                        {kLabelSpareStore, "s"}}}};
  SpareInfo s = spare_from_listing(c);
  CHECK_FALSE(s.claimed);
  CHECK(s.spare_id == "abc123");
  CHECK(s.expires == 1700000000);
  CHECK(s.key == "k");
  CHECK(s.store == "s");
  c["Names"] = {"lazyagent-sandbox-r-20261204-1-x"};
  s = spare_from_listing(c);
  CHECK(s.claimed);
  CHECK(s.run_id == "r-20261204-1-x");
  CHECK(spare_json(s, 1699999990)["expires_in"] == 10);
}

TEST_CASE("warm spare scope: one seed directory is one scope however its path is spelled", "[unit][warm]") {
  // `warm --seed seed`, a config's `seed: ../seed` and `--seed /abs/seed/`
  // made three scopes: a spare made under one was neither claimed nor
  // discarded under another (issue 28).
  Tmp tmp;
  namespace fs = std::filesystem;
  fs::create_directories(tmp.path + "/project/seed");
  fs::create_directories(tmp.path + "/project/config");
  fs::create_directory_symlink(tmp.path + "/project/seed", tmp.path + "/link");
  const std::string real = fs::canonical(tmp.path + "/project/seed").string();
  const std::vector<std::string> spellings = {tmp.path + "/project/seed", tmp.path + "/project/seed/",
                                              tmp.path + "/project/config/../seed", tmp.path + "/project/./seed//",
                                              tmp.path + "/link"};
  Config config;
  config.test_command = "python3 -m unittest -v";
  SpareRecipe r = recipe_for(config);
  const RunStore store(tmp.path + "/store");
  r.scope = real;
  const std::string key = spare_key(r), label = spare_scope_label(store, r);
  for (const auto& s : spellings) {
    INFO(s);
    CHECK(canonical_scope(s) == real);
    r.scope = s;
    CHECK(spare_key(r) == key);
    CHECK(spare_scope_label(store, r) == label);
  }
  // Relative to the working directory, as `--seed seed` is.
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path + "/project");
  CHECK(canonical_scope("seed") == real);
  CHECK(canonical_scope("config/../seed/") == real);
  fs::current_path(cwd);
  // A directory that does not exist (yet) still has one spelling.
  CHECK(canonical_scope(tmp.path + "/none/./x/") == tmp.path + "/none/x");
  r.scope = tmp.path + "/project/other";
  fs::create_directories(r.scope);
  CHECK(spare_key(r) != key);
}
