// Environments (environment.h): the config section, the inputs read from the
// seed, the cache key, the set-up container's request and the message of a
// failed step. The build itself runs against real podman in
// tests/integration/environment_test.cpp.
#include "engine/podman/environment.h"
#include "pipeline/run_result.h"

#include "catch_compat.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "unit_tmp.h"

using namespace lazyagent;

namespace {

Result<Config> env_config(const std::string& yaml) { return parse_config(yaml, "cfg.yaml", "/srv/proj"); }

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("environment config: base + setup + inputs, defaults, and every mistake named") {
  auto c = env_config("environment:\n  setup: [\"apt-get update\", \"apt-get install -y python3-pytest\"]\n"
                      "  inputs: [requirements.txt, ci/]\n");
  REQUIRE(c.ok());
  CHECK(c->environment.present);
  CHECK(c->environment.base.empty());
  CHECK(c->environment.setup.size() == 2);
  CHECK(c->environment.inputs == std::vector<std::string>{"requirements.txt", "ci/"});
  CHECK(c->environment.network == "bridge");
  CHECK(c->environment.timeout_seconds == 1800);

  CHECK_FALSE(env_config("seed: s\n").value().environment.present);

  auto both = env_config("environment: {containerfile: Containerfile, setup: [make]}\n");
  REQUIRE_FALSE(both.ok());
  CHECK(both.error().message == "cfg.yaml: environment: give either containerfile, or base and setup, not both");
  auto neither = env_config("environment: {inputs: [a]}\n");
  REQUIRE_FALSE(neither.ok());
  CHECK(neither.error().message ==
        "cfg.yaml: environment: needs containerfile (a Containerfile in the seed) or setup (commands run on base)");
  auto net = env_config("environment: {setup: [make], network: host}\n");
  REQUIRE_FALSE(net.ok());
  CHECK(net.error().message == "cfg.yaml: environment.network: expected 'bridge' or 'none', got 'host'");
  auto up = env_config("environment: {setup: [make], inputs: [../secrets]}\n");
  REQUIRE_FALSE(up.ok());
  CHECK(up.error().message.rfind("cfg.yaml: environment.inputs[0]: ", 0) == 0);
  auto empty = env_config("environment: {setup: []}\n");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().message == "cfg.yaml: environment.setup: expected a non-empty list of commands, got an empty list");
  auto typo = env_config("environment: {setup: [make], input: [a]}\n");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.error().message.find("environment.input") != std::string::npos);
}

TEST_CASE("environment inputs: files and directories from the seed, no symlinks, nothing missing") {
  Tmp t;
  write(t.path + "/requirements.txt", "pytest\n");
  write(t.path + "/ci/a.txt", "a");
  write(t.path + "/ci/sub/b.sh", "echo b");
  ::chmod((t.path + "/ci/sub/b.sh").c_str(), 0755);
  EnvironmentConfig env;
  env.inputs = {"requirements.txt", "ci/"};
  auto in = read_environment_inputs(env, t.path);
  REQUIRE(in.ok());
  REQUIRE(in->size() == 3);
  CHECK((*in)[0].path == "ci/a.txt");
  CHECK((*in)[1].path == "ci/sub/b.sh");
  CHECK((*in)[1].mode == 0755);
  CHECK((*in)[2].path == "requirements.txt");
  CHECK((*in)[2].content == "pytest\n");

  env.inputs = {"missing.txt"};
  auto missing = read_environment_inputs(env, t.path);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message == "environment.inputs[0]: missing.txt: no such file in the seed");

  ::symlink("/etc/passwd", (t.path + "/link.txt").c_str());
  env.inputs = {"link.txt"};
  auto link = read_environment_inputs(env, t.path);
  REQUIRE_FALSE(link.ok());
  CHECK(link.error().message ==
        "environment.inputs[0]: link.txt: a symbolic link (inputs are read without following links)");

  ::symlink("/etc", (t.path + "/etcdir").c_str());
  env.inputs = {"etcdir/passwd"};
  auto through = read_environment_inputs(env, t.path);
  REQUIRE_FALSE(through.ok());
  CHECK(through.error().message == "environment.inputs[0]: etcdir/passwd: etcdir is a symbolic link");

  env.inputs = {"ci/"};
  ::symlink("/etc/passwd", (t.path + "/ci/sub/evil").c_str());
  auto inside = read_environment_inputs(env, t.path);
  REQUIRE_FALSE(inside.ok());
  CHECK(inside.error().message ==
        "environment.inputs[0]: ci/sub/evil: a symbolic link (inputs are read without following links)");
}

TEST_CASE("environment key: changes with the base image, the set-up, an input's content, not with order") {
  EnvironmentConfig env;
  env.setup = {"make deps"};
  std::vector<EnvironmentInput> a = {{"a.txt", "1", 0644, "h1"}, {"b.txt", "2", 0644, "h2"}};
  const std::string k = environment_key(env, "base:1", "sha256:aa", a);
  CHECK(k.size() == 32);
  CHECK(environment_key(env, "base:1", "sha256:aa", a) == k);
  CHECK(environment_key(env, "base:1", "sha256:bb", a) != k);  // the base was rebuilt
  auto changed = a;
  changed[1].sha256 = "h3";
  CHECK(environment_key(env, "base:1", "sha256:aa", changed) != k);
  auto mode = a;
  mode[0].mode = 0755;
  CHECK(environment_key(env, "base:1", "sha256:aa", mode) != k);
  EnvironmentConfig other = env;
  other.setup = {"make deps", "make more"};
  CHECK(environment_key(other, "base:1", "sha256:aa", a) != k);
  other = env;
  other.network = "none";
  CHECK(environment_key(other, "base:1", "sha256:aa", a) != k);
  other = env;
  other.timeout_seconds = 60;  // how long it may take is not what it is
  CHECK(environment_key(other, "base:1", "sha256:aa", a) == k);
}

TEST_CASE("environment set-up container: its own namespaces, bridge or none, no secrets, a fixed environment") {
  EnvironmentConfig env;
  env.setup = {"apt-get update", "echo 'it''s'"};
  const auto spec = setup_container_spec(env, "localhost/base:1", "n", {{"io.lazyagent.role", "envbuild"}});
  CHECK(spec["image"] == "localhost/base:1");
  CHECK(spec["netns"]["nsmode"] == "bridge");
  CHECK_FALSE(spec.contains("secrets"));
  CHECK_FALSE(spec.contains("mounts"));
  std::vector<std::string> names;
  for (const auto& [k, v] : spec["env"].items()) names.push_back(k);
  CHECK(names == std::vector<std::string>{"DEBIAN_FRONTEND", "HOME", "LANG", "PATH"});
  const auto drops = spec["cap_drop"].get<std::vector<std::string>>();
  CHECK(std::find(drops.begin(), drops.end(), "CAP_SYS_CHROOT") != drops.end());
  const auto cmd = spec["command"].get<std::vector<std::string>>();
  REQUIRE(cmd.size() == 6);
  CHECK(cmd[0] == "/bin/sh");
  CHECK(cmd[4] == "apt-get update");
  CHECK(cmd[5] == "echo 'it''s'");  // passed as an argument: never re-quoted
  env.network = "none";
  CHECK(setup_container_spec(env, "b", "n", {})["netns"]["nsmode"] == "none");
}

TEST_CASE("environment: a failed set-up step is named with its exit code and its own output") {
  const std::vector<std::string> steps = {"apt-get update", "pip install -r requirements.txt"};
  const std::string out =
      "::lazyagent-env step 1::\nHit:1 http://mirror.example.net bookworm InRelease\n"
      "::lazyagent-env step 2::\nCollecting pytest\nERROR: no network\n::lazyagent-env failed 2 1::\n";
  CHECK(setup_failure_message(steps, out, 1) ==
        "environment: set-up step 2 of 2 failed with exit code 1: pip install -r requirements.txt\n"
        "--- the step's output (last lines) ---\nCollecting pytest\nERROR: no network");
  CHECK(setup_failure_message(steps, "::lazyagent-env step 1::\n", 127) ==
        "environment: set-up step 1 of 2 failed with exit code 127: apt-get update\n(the step printed nothing)");
  CHECK(setup_failure_message(steps, "", 125) ==
        "environment: the set-up container exited 125 before its first step\n(the step printed nothing)");
}

TEST_CASE("environment result: null without an environment, the resolved image with one") {
  EnvironmentConfig env;
  CHECK(environment_json(env).is_null());
  env.present = true;
  env.resolved.key = "0123456789abcdef0123456789abcdef";
  env.resolved.image = "localhost/lazyagent-env:0123456789abcdef0123456789abcdef";
  env.resolved.digest = "feed";
  const auto j = environment_json(env);
  CHECK(j["key"] == env.resolved.key);
  CHECK(j["image"] == env.resolved.image);
  CHECK(j["digest"] == "feed");
  CHECK(j["built"] == false);
}
