// One policy in, the compose stack out: the security fields exactly, secrets
// only by name and only in the planner, the YAML exactly what was meant.
#include "catch_compat.h"

#include <yaml-cpp/yaml.h>

#include "export/export_compose.h"
#include "contract/planner_task.h"

using namespace lazyagent;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

ExportInput compose_input(bool with_patch = true) {
  ExportInput in;
  in.config.seed = "/home/user/project";
  in.policy = policy_from_config(in.config, 120);
  in.planner = planner_request_from_config(in.config);
  in.name = "demo";
  in.seed.root = "/home/user/project";
  in.seed.entries = {{"calculator.py", SeedEntry::Kind::kFile, 0644, "def add(a, b):\n    return a - b\n"},
                     {"test_calculator.py", SeedEntry::Kind::kFile, 0644, "import unittest\n"}};
  if (with_patch) in.patch = Patch{{{"calculator.py", "def add(a, b):\n    return a + b\n"}}};
  return in;
}

const ExportedFile& file(const ExportBundle& b, const std::string& path) {
  for (const auto& f : b.files) {
    if (f.path == path) return f;
  }
  FAIL("no file " << path);
  throw 0;
}

std::string unescape_dollars(std::string s) {
  for (std::size_t i = 0; (i = s.find("$$", i)) != std::string::npos; ++i) s.erase(i, 1);
  return s;
}

// YAML node -> JSON, every scalar as a string (how a YAML reader sees it).
json as_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = as_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& item : n) a.push_back(as_json(item));
    return a;
  }
  return n.as<std::string>();
}

}  // namespace

TEST_CASE("compose: the sandbox service carries the policy, and nothing else") {
  const ExportInput in = compose_input();
  const ordered_json sb = compose_document(in)["services"]["sandbox"];
  CHECK(sb["image"] == "localhost/lazyagent-sandbox:latest");
  CHECK(sb["network_mode"] == "none");
  CHECK(sb["read_only"] == true);
  CHECK(sb["cap_drop"] == ordered_json::array({"ALL"}));
  CHECK(sb["security_opt"] == ordered_json::array({"no-new-privileges"}));
  CHECK(sb["tmpfs"] == ordered_json::array({"/work:rw,nosuid,nodev,size=67108864,mode=1777",
                                            "/tmp:rw,nosuid,nodev,noexec,size=67108864,mode=1777"}));
  CHECK(sb["volumes"] == ordered_json::array({"./seed:/seed:ro"}));
  CHECK(sb["environment"] == ordered_json{{"HOME", "/work"}, {"LANG", "C.UTF-8"},
                                          {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                                          {"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONUNBUFFERED", "1"},
                                          {"TMPDIR", "/work/.lazyagent-tmp"}});
  CHECK(sb["mem_limit"] == 512LL << 20);
  CHECK(sb["memswap_limit"] == 512LL << 20);
  CHECK(sb["pids_limit"] == 256);
  CHECK(sb["cpus"] == 1.0);
  CHECK(sb["ulimits"] == ordered_json{{"nofile", {{"soft", 1024}, {"hard", 1024}}},
                                      {"nproc", {{"soft", 256}, {"hard", 256}}}});
  CHECK(sb["labels"] == ordered_json{{"io.lazyagent.role", "sandbox"}, {"io.lazyagent.export", "compose"}});
  CHECK_FALSE(sb.contains("secrets"));
  CHECK_FALSE(sb.contains("networks"));
  CHECK_FALSE(sb.contains("privileged"));
  // The program: sandbox_command, with every $ doubled for compose.
  std::vector<std::string> entry;
  for (const auto& a : sb["entrypoint"]) entry.push_back(unescape_dollars(a.get<std::string>()));
  CHECK(entry == sandbox_command("python3 -m unittest -v", 1 << 20));
  CHECK(sb["entrypoint"][2].get<std::string>().find("/bin/sh -c \"$$1\"") != std::string::npos);
}

TEST_CASE("compose: secrets by name in the planner only, never in the sandbox") {
  ExportInput in = compose_input();
  in.planner.base_url_secret = "P_URL";
  in.planner.model_secret = "P_MODEL";
  in.planner.api_key_secret = "P_KEY";
  const ordered_json doc = compose_document(in);
  const std::string sandbox_text = doc["services"]["sandbox"].dump();
  for (const char* s : {"P_URL", "P_MODEL", "P_KEY", "/run/secrets", "api_key"}) {
    INFO(s);
    CHECK(sandbox_text.find(s) == std::string::npos);
  }
  const ordered_json pl = doc["services"]["planner"];
  CHECK(pl["secrets"] == ordered_json::array({"P_URL", "P_MODEL", "P_KEY"}));
  CHECK(doc["secrets"] == ordered_json{{"P_URL", {{"external", true}}}, {"P_MODEL", {{"external", true}}},
                                       {"P_KEY", {{"external", true}}}});
  CHECK(pl["environment"] == ordered_json{{"HOME", "/tmp"}, {"LANG", "C.UTF-8"}, {"PATH", "/usr/local/bin:/usr/bin:/bin"}});
  CHECK(pl["entrypoint"][0] == "/bin/sh");
  CHECK(pl["entrypoint"][2].get<std::string>().find(
            "exec /usr/local/bin/lazyagent-oci plan --task /task/task.json --secrets-dir \"$$d\"") != std::string::npos);
  CHECK(pl["entrypoint"][4] == "P_URL");  // names as arguments, never spliced into the script
  CHECK(pl["network_mode"] == "bridge");
  CHECK(pl["read_only"] == true);
  CHECK(pl["cap_drop"] == ordered_json::array({"ALL"}));
  CHECK(pl["security_opt"] == ordered_json::array({"no-new-privileges"}));
  CHECK(pl["tmpfs"] == ordered_json::array({"/run/secrets:rw,nosuid,nodev,noexec,size=1m,mode=1777",
                                            "/tmp:rw,nosuid,nodev,noexec,size=16m,mode=1777"}));
  CHECK(pl["volumes"] == ordered_json::array({"./task:/task:ro"}));
  CHECK(pl["mem_limit"] == 256LL << 20);
  CHECK(pl["pids_limit"] == 64);
  CHECK(pl["labels"]["io.lazyagent.role"] == "planner");
  CHECK(doc["x-podman"] == ordered_json{{"in_pod", false}});
  CHECK(doc["name"] == "demo");
}

TEST_CASE("compose: the run scripts pass what podman-compose 1.3.0 drops") {
  const ExportInput in = compose_input();
  CHECK(sandbox_run_args(in.policy) ==
        "--pids-limit=256 --memory-swap=536870912 --read-only-tmpfs=false --unsetenv-all --timeout=120");
  CHECK(planner_run_args(in.planner) ==
        "--pids-limit=64 --memory-swap=268435456 --read-only-tmpfs=false --unsetenv-all --timeout=600");
  const ExportBundle b = export_compose(in).value();
  const ExportedFile& run = file(b, "run-sandbox.sh");
  CHECK(run.mode == 0755);
  CHECK(run.content.find("exec podman-compose -f compose.yaml --podman-run-args='" + sandbox_run_args(in.policy) +
                         "' run --rm -T sandbox\n") != std::string::npos);
  CHECK(file(b, "run-planner.sh").content.find("run --rm -T planner\n") != std::string::npos);
  CHECK(b.not_enforced[0].rfind("podman-compose 1.3.0 ignores pids_limit and memswap_limit", 0) == 0);
  std::vector<std::string> heads;
  for (const auto& l : b.not_enforced) heads.push_back(l.substr(0, l.find(':')));
  CHECK(heads == std::vector<std::string>{"podman-compose 1.3.0 ignores pids_limit and memswap_limit",
                                          "verification", "terminal safety", "/seed", "image pinning",
                                          "patch validation", "planner network", "removal"});
}

TEST_CASE("compose: compose.yaml reads back as the document") {
  const ExportInput in = compose_input();
  const ExportBundle b = export_compose(in).value();
  const std::string& text = file(b, "compose.yaml").content;
  CHECK(text.rfind("# lazyagent-oci export compose", 0) == 0);
  const YAML::Node y = YAML::Load(text);
  const ordered_json doc = compose_document(in);
  CHECK(y["services"]["sandbox"]["network_mode"].as<std::string>() == "none");
  CHECK(y["services"]["sandbox"]["entrypoint"][2].as<std::string>() ==
        doc["services"]["sandbox"]["entrypoint"][2].get<std::string>());
  CHECK(y["services"]["sandbox"]["read_only"].as<bool>());
  CHECK(y["services"]["sandbox"]["mem_limit"].as<long long>() == 512LL << 20);
  CHECK(y["x-podman"]["in_pod"].as<bool>() == false);
  CHECK(as_json(y["services"]["sandbox"]["environment"]) == json(doc["services"]["sandbox"]["environment"]));
  CHECK(as_json(y["services"]["planner"]["secrets"]) == json::array({"CODING_AGENT_BASE_URL", "CODING_AGENT_MODEL",
                                                                     "CODING_AGENT_API_KEY"}));
}

TEST_CASE("compose: the planner's task is the tool's own output") {
  const ExportBundle b = export_compose(compose_input()).value();
  auto task = task_from_json(file(b, "task/task.json").content);
  REQUIRE(task.ok());
  CHECK(task->task_id == "export-demo");
  CHECK(task->instruction == kDefaultInstruction);
  CHECK(task->contract.allow == std::vector<std::string>{"calculator.py"});
  REQUIRE(task->files.size() == 2);
  CHECK(task->files[0].editable);
  CHECK_FALSE(task->files[1].editable);
}

TEST_CASE("compose: without a patch the README says where the patch goes") {
  const ExportBundle without = export_compose(compose_input(false)).value();
  const std::string& readme = file(without, "README.txt").content;
  CHECK(readme.find("an UNPATCHED copy") != std::string::npos);
  CHECK(readme.find("lazyagent-oci export compose --patch patch.json") != std::string::npos);
  const ExportBundle with = export_compose(compose_input(true)).value();
  CHECK(file(with, "README.txt").content.find("UNPATCHED") == std::string::npos);
}
