// Environments (environment.h) against the real podman service and the real
// CLI: the project's test image is built on first use from base + setup +
// inputs, reused while nothing it hashes changed, rebuilt when an input
// changes; the sandbox on top is the usual one (network none, verified by
// the isolation probe); a failed set-up step is an infra_error carrying the
// step's log; a set-up step finds no provider secret (with a positive
// control: the same search finds a planted value).
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "harness.h"
#include "own_podman.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& data) { std::ofstream(path, std::ios::binary) << data; }

// A copy of the demo seed plus `deps.txt`, and a config whose environment
// copies deps.txt into the image and whose test command needs it.
struct EnvProject {
  TempDir dir;
  std::string seed;
  std::string config;
  explicit EnvProject(const std::string& environment_yaml) {
    seed = dir.path() + "/seed";
    fs::copy(seed_dir(), seed, fs::copy_options::recursive);
    put(seed + "/deps.txt", "dep-one\n");
    config = dir.file("env.yaml", "seed: " + seed + "\nallow: [calculator.py]\n" +
                                      "test_command: test -f /opt/env-marker && python3 -m unittest -v\n" +
                                      environment_yaml);
  }
};

const std::string kMarkerEnv =
    "environment:\n"
    "  setup: [\"cp deps.txt /opt/env-marker\", \"echo installed $(cat /opt/env-marker)\"]\n"
    "  inputs: [deps.txt]\n";

std::string random_hex() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

void remove_image(const std::string& image) {
  if (!image.empty()) sh("podman rmi -f " + image + " >/dev/null 2>&1");
}

std::string environment_images() {
  return sh("podman images --filter label=io.lazyagent.role=environment --format '{{.ID}}' | sort");
}

std::string envbuild_containers() {
  return sh("podman ps -a --filter label=io.lazyagent.role=envbuild --format '{{.Names}}'");
}

}  // namespace

TEST_CASE("environment: built on first use, reused, rebuilt when an input changes, the sandbox on top unchanged") {
  EnvProject p(kMarkerEnv);
  CliEnv env;
  TempDir state;
  env.state_dir = state.path();

  const auto first = run_cli(env, {"env", "build", "--config", p.config, "--json"}, 600);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const json built = json_out(first);
  const std::string key = built["key"];
  const std::string image = built["image"];
  CHECK(key.size() == 32);
  CHECK(image == "localhost/lazyagent-env:" + key);
  CHECK(built["built"] == true);
  CHECK(first.err.find("environment: step 1/2: cp deps.txt /opt/env-marker") != std::string::npos);
  CHECK(first.err.find("  | installed dep-one") != std::string::npos);

  const auto again = run_cli(env, {"env", "build", "--config", p.config, "--json"});
  REQUIRE(again.exit_code == 0);
  CHECK(json_out(again)["key"] == key);
  CHECK(json_out(again)["built"] == false);
  CHECK(json_out(again)["digest"] == built["digest"]);
  CHECK(again.err.find("environment: reusing " + image) != std::string::npos);

  // test: the fixed patch passes in a sandbox on the environment; the result
  // and its provenance carry the environment.
  TempDir pd;
  const std::string patch = pd.file("fix.json", fixing_patch());
  const auto t = run_cli(env, {"test", "--config", p.config, "--patch", patch, "--json"}, 600);
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  const json r = json_out(t);
  CHECK(r["status"] == "passed");
  CHECK(r["image"] == image);
  CHECK(r["image_digest"] == built["digest"]);
  CHECK(r["environment"]["key"] == key);
  CHECK(r["environment"]["built"] == false);
  CHECK(r["isolation_probe"]["violations"].empty());
  CHECK(r["policy"]["network"] == "none");
  const auto verify = run_cli(env, {"verify", r["run_id"].get<std::string>(), "--json"});
  CHECK(verify.exit_code == 0);
  // The stock image has no marker: the same test fails there (a control).
  const auto stock = run_cli(env, {"test", "--seed", p.seed, "--allow", "calculator.py", "--test-command",
                                   "test -f /opt/env-marker && python3 -m unittest -v", "--patch", patch,
                                   "--no-baseline", "--json"});
  CHECK(stock.exit_code == 1);

  // A changed input makes a new image; the old one stays until pruned.
  put(p.seed + "/deps.txt", "dep-two\n");
  const auto changed = run_cli(env, {"env", "build", "--config", p.config, "--json"}, 600);
  INFO(changed.err);
  REQUIRE(changed.exit_code == 0);
  const std::string key2 = json_out(changed)["key"];
  CHECK(key2 != key);
  CHECK(json_out(changed)["built"] == true);
  CHECK(changed.err.find("  | installed dep-two") != std::string::npos);

  const auto list = run_cli(env, {"env", "list", "--json"});
  INFO(list.out);
  REQUIRE(list.exit_code == 0);
  std::string listed;
  const json listing = json_out(list);
  for (const auto& e : listing["environments"]) listed += e["key"].get<std::string>() + " ";
  CHECK(listed.find(key) != std::string::npos);
  CHECK(listed.find(key2) != std::string::npos);

  // prune: its own test below, on a podman service of its own (it would
  // remove every environment image of the machine but the config's).
  CHECK(envbuild_containers().empty());
  remove_image(image);
  remove_image("localhost/lazyagent-env:" + key2);
}

TEST_CASE("environment: prune keeps the config's own environment and removes the others (--all: every one), "
          "on a podman service of its own") {
  OwnPodman own({"localhost/lazyagent-sandbox:latest"});  // the environment's default base
  EnvProject p(kMarkerEnv + "  network: none\n");  // no network made on the service of its own
  CliEnv env{"", {{"CONTAINER_HOST", own.container_host()}}};
  TempDir state;
  env.state_dir = state.path();
  auto build = [&] {
    const auto b = run_cli(env, {"env", "build", "--config", p.config, "--json"}, 600);
    INFO(b.err);
    REQUIRE(b.exit_code == 0);
    return json_out(b)["image"].get<std::string>();
  };
  const std::string old_image = build();
  put(p.seed + "/deps.txt", "dep-two\n");
  const std::string own_image = build();
  REQUIRE(old_image != own_image);
  CHECK(own.has(old_image));
  CHECK(own.has(own_image));

  const auto prune = run_cli(env, {"env", "prune", "--config", p.config, "--json"});
  INFO(prune.out << prune.err);
  CHECK(prune.exit_code == 0);
  const json pruned = json_out(prune);
  CHECK(pruned["removed"].dump().find(old_image.substr(old_image.find(':') + 1)) != std::string::npos);
  CHECK(pruned["kept"].dump().find(own_image.substr(own_image.find(':') + 1)) != std::string::npos);
  CHECK_FALSE(own.has(old_image));
  CHECK(own.has(own_image));

  const auto all = run_cli(env, {"env", "prune", "--all", "--config", p.config, "--json"});
  INFO(all.out << all.err);
  CHECK(all.exit_code == 0);
  CHECK(json_out(all)["removed"].dump().find(own_image.substr(own_image.find(':') + 1)) != std::string::npos);
  CHECK_FALSE(own.has(own_image));
  CHECK(sh(own.podman + " images -q --filter label=io.lazyagent.role=environment") == "");
  // The machine's own podman never saw either.
  CHECK(sh("podman image exists " + old_image + "; echo $?") == "1\n");
  CHECK(sh("podman image exists " + own_image + "; echo $?") == "1\n");
}

// Two runs of one project at once on a machine that lacks its environment
// (two terminals, or CI jobs side by side): one builds, the other waits for
// that build and reuses its image. Without the build lock both built it, and
// the second's tag moved under the first's run.
TEST_CASE("environment: two builds of one new environment at once build it once, the other waits and reuses it",
          "[quick]") {
  EnvProject p("environment:\n  setup: [\"sleep 2\", \"cp deps.txt /opt/env-marker\"]\n  inputs: [deps.txt]\n"
               "  network: none\n");
  put(p.seed + "/deps.txt", "dep-" + random_hex() + "\n");  // a key no earlier run built
  TempDir a, b, state_a, state_b;
  const pid_t first = spawn_cli({state_a.path(), {}}, {"env", "build", "--config", p.config, "--json"}, a.path());
  const pid_t second = spawn_cli({state_b.path(), {}}, {"env", "build", "--config", p.config, "--json"}, b.path());
  CHECK(wait_cli(first, 300) == 0);
  CHECK(wait_cli(second, 300) == 0);
  const json ra = json::parse(read_file(a.path() + "/stdout"));
  const json rb = json::parse(read_file(b.path() + "/stdout"));
  INFO(read_file(a.path() + "/stderr") << "\n---\n" << read_file(b.path() + "/stderr"));
  CHECK(ra["key"] == rb["key"]);
  CHECK(ra["digest"] == rb["digest"]);
  CHECK(ra["built"].get<bool>() != rb["built"].get<bool>());  // exactly one built it
  const std::string waited = (ra["built"] == true ? b : a).path() + "/stderr";
  CHECK(read_file(waited).find("another process is building " + ra["image"].get<std::string>()) != std::string::npos);
  CHECK(read_file(waited).find("environment: reusing " + ra["image"].get<std::string>()) != std::string::npos);
  remove_image(ra["image"]);
}

TEST_CASE("environment: a failed set-up step is an infra_error with the step and its log, nothing left behind") {
  EnvProject p("environment:\n  setup: [\"echo preparing\", \"echo broken-dependency-xyz >&2 && exit 7\"]\n");
  CliEnv env;
  TempDir state;
  env.state_dir = state.path();
  TempDir pd;
  const std::string patch = pd.file("fix.json", fixing_patch());
  const std::string images_before = environment_images();
  const auto t = run_cli(env, {"test", "--config", p.config, "--patch", patch, "--json"}, 600);
  CHECK(t.exit_code == 5);
  const json r = json_out(t);
  CHECK(r["category"] == "infra_error");
  const std::string error = r["error"];
  CHECK(error.find("environment: set-up step 2 of 2 failed with exit code 7: echo broken-dependency-xyz >&2 && exit 7") !=
        std::string::npos);
  CHECK(error.find("--- the step's output (last lines) ---\nbroken-dependency-xyz") != std::string::npos);
  CHECK(error.find("preparing") == std::string::npos);  // step 1's output is not step 2's log
  CHECK(envbuild_containers().empty());
  CHECK(environment_images() == images_before);  // no image committed
}

TEST_CASE("environment: a set-up step finds no provider secret, and the search finds a planted value") {
  const std::string value = "lzsecret-" + random_hex();
  const std::string name = "LAZYAGENT_IT_ENV_SECRET_" + random_hex();
  REQUIRE(sh("printf %s " + value + " | podman secret create " + name + " - >/dev/null; echo $?") == "0\n");
  // The search pattern is spelt so that the script itself does not hold it.
  EnvProject p("environment:\n  setup: [\"sh probe.sh\"]\n  inputs: [probe.sh, planted.txt]\n");
  put(p.seed + "/probe.sh",
      "grep -rl \"$(printf 'lzsec%s' 'ret-')\" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null"
      " | sed 's/^/found: /'\n"
      "env | sed 's/^/env: /'\n"
      "tr '\\0' '\\n' < /proc/1/environ | sed 's/^/pid1: /'\n"
      "true\n");
  put(p.seed + "/planted.txt", "lzsecret-planted\n");
  CliEnv env;
  TempDir state;
  env.state_dir = state.path();
  env.extra["CODING_AGENT_API_KEY"] = value;  // in the orchestrator's own environment, too
  env.extra[name] = value;
  const auto b = run_cli(env, {"env", "build", "--config", p.config, "--rebuild", "--json"}, 600);
  sh("podman secret rm " + name + " >/dev/null 2>&1");
  INFO(b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(b.err.find("found: /lazyagent-env/planted.txt") != std::string::npos);  // positive control
  std::size_t founds = 0;
  for (std::size_t at = 0; (at = b.err.find("found: ", at)) != std::string::npos; ++at) ++founds;
  CHECK(founds == 1);
  CHECK(b.err.find(value) == std::string::npos);
  CHECK(b.err.find("env: PATH=") != std::string::npos);  // the env step ran
  CHECK(b.err.find("CODING_AGENT") == std::string::npos);
  remove_image(json_out(b)["image"]);
}
