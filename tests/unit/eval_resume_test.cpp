// What decides an eval task's verdict (eval_resume.h): each setting that can
// change a verdict changes the key's config part; a setting that cannot (the
// seed's path, as opposed to its content) does not.
#include "catch_compat.h"

#include "eval/eval_resume.h"

using namespace lazyagent;

namespace {

DecisiveSettings base() {
  DecisiveSettings s;
  s.config.seed = "/somewhere/seed";
  return s;
}

}  // namespace

TEST_CASE("eval resume key: every decisive setting changes the config hash") {
  const std::string h = decisive_settings_sha256(base());
  CHECK(h.size() == 64);
  CHECK(decisive_settings_sha256(base()) == h);  // deterministic

  std::vector<std::pair<std::string, DecisiveSettings>> edits;
  auto edit = [&](const std::string& what, auto&& change) {
    DecisiveSettings s = base();
    change(s);
    edits.emplace_back(what, s);
  };
  edit("test command", [](DecisiveSettings& s) { s.config.test_command = "python3 -m pytest -v"; });
  edit("allowlist", [](DecisiveSettings& s) { s.config.allow = {"calculator.py", "util.py"}; });
  edit("JUnit report", [](DecisiveSettings& s) { s.config.report = "junit:r.xml"; });
  edit("memory limit", [](DecisiveSettings& s) { s.config.limits.memory_mib = 256; });
  edit("pids limit", [](DecisiveSettings& s) { s.config.limits.pids = 64; });
  edit("timeout", [](DecisiveSettings& s) { s.timeout_seconds = 30; });
  edit("runtime", [](DecisiveSettings& s) { s.config.engine.runtime = "runsc"; });
  edit("image name", [](DecisiveSettings& s) { s.config.images.sandbox = "localhost/other:1"; });
  edit("patch limits", [](DecisiveSettings& s) { s.config.patch.max_files = 1; });
  edit("baseline", [](DecisiveSettings& s) { s.baseline = false; });
  edit("reruns", [](DecisiveSettings& s) { s.reruns = 2; });
  edit("backend", [](DecisiveSettings& s) { s.backend = "k8s"; });
  edit("placement", [](DecisiveSettings& s) { s.placement = {{"namespace", "other"}}; });
  edit("instruction task (planner settings count)", [](DecisiveSettings& s) { s.instruction = true; });
  for (const auto& [what, s] : edits) {
    INFO(what);
    CHECK(decisive_settings_sha256(s) != h);
  }
}

TEST_CASE("eval resume key: the seed's path and the provider's secrets of a patch task are not decisive") {
  const std::string h = decisive_settings_sha256(base());
  DecisiveSettings moved = base();
  moved.config.seed = "/elsewhere/seed";  // the seed part hashes its content
  CHECK(decisive_settings_sha256(moved) == h);
  DecisiveSettings secrets = base();
  secrets.config.provider.api_key_secret = "OTHER_KEY";  // no planner for a patch task
  CHECK(decisive_settings_sha256(secrets) == h);
  secrets.instruction = true;
  DecisiveSettings planner = base();
  planner.instruction = true;
  CHECK(decisive_settings_sha256(secrets) != decisive_settings_sha256(planner));
}

TEST_CASE("eval resume key: a task's input is its patch text, or its instruction") {
  CHECK(task_input_sha256("{\"files\":[]}", "") != task_input_sha256("{\"files\": []}", ""));
  CHECK(task_input_sha256("", "fix add") != task_input_sha256("", "fix sub"));
  CHECK(task_input_sha256("", "fix add") != task_input_sha256("fix add", ""));
}

TEST_CASE("eval resume key: an engine's placement sits under its name, as the k8s keys always did") {
  DecisiveSettings s;
  CHECK_FALSE(decisive_settings_json(s).contains("podman"));  // podman places nothing beyond the config
  s.backend = "k8s";
  s.placement = {{"namespace", "lz"}, {"runtime_class", "gvisor"}};
  const auto j = decisive_settings_json(s);
  CHECK(j["k8s"] == nlohmann::json({{"namespace", "lz"}, {"runtime_class", "gvisor"}}));
}
