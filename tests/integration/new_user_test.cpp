// What a new user meets (issue 28): the CLI agrees with itself and with its
// README. Each case runs the real binary the way the README tells a user to.
#include "test_paths.h"
#include <unistd.h>

#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "harness.h"

using nlohmann::json;
using namespace it;

TEST_CASE("eval --help says --no-baseline keeps the verdict rule (an exit 0 with no report fails)", "[cli][quick]") {
  TempDir state;
  CliResult r = run_cli({state.path()}, {"eval", "--help"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("exit code alone") == std::string::npos);
  CHECK(r.out.find("a test runner's report and the exit code must agree (an exit 0 with no report fails)") !=
        std::string::npos);
}

TEST_CASE("verify on an infra_error run: the record is intact, the run proved nothing", "[cli][verify][quick]") {
  TempDir state, dir;
  const std::string cfg = dir.file("c.yaml", "seed: " + seed_dir() +
                                                 "\nimages:\n  sandbox: localhost/lazyagent-no-such-image-verify:latest\n");
  CliResult r = run_cli({state.path()}, {"test", "--config", cfg, "--patch", dir.file("p.json", fixing_patch()), "--json"});
  REQUIRE(r.exit_code == 5);
  const json j = json_out(r);
  REQUIRE(j["category"] == "infra_error");
  const std::string id = j["run_id"];
  CliResult v = run_cli({state.path()}, {"verify", id});
  INFO(v.out << v.err);
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("MATCHES") == std::string::npos);
  CHECK(v.out.rfind("run " + id + ": RECORD INTACT, NOTHING PROVED\n", 0) == 0);
  CHECK(v.out.find("the record matches its provenance (nothing was edited after the run), but the run ended in an "
                   "error before any verdict (infra_error), so it proved nothing about the patch") != std::string::npos);
  CHECK(v.out.find("  image   (none)\n") != std::string::npos);
  CliResult vj = run_cli({state.path()}, {"verify", id, "--json"});
  CHECK(vj.exit_code == 0);
  const json o = json_out(vj);
  CHECK(o["matches"] == true);
  CHECK(o.value("proved", true) == false);
  CHECK(o.value("no_proof", "").find("proved nothing") != std::string::npos);
}

TEST_CASE("test --patch with a missing file is a `test:` usage error like the others", "[cli][quick]") {
  TempDir state;
  CliResult r = run_cli({state.path()}, {"test", "--patch", "/nonexistent/fix.json"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "lazyagent-oci: test: --patch /nonexistent/fix.json: cannot open the file\n");
}

TEST_CASE("seed takes --seed DIR as every other command does, and DIR as before", "[cli][quick]") {
  TempDir state;
  CliResult flag = run_cli({state.path()}, {"seed", "--seed", seed_dir(), "--json"});
  INFO(flag.err);
  REQUIRE(flag.exit_code == 0);
  CliResult positional = run_cli({state.path()}, {"seed", seed_dir(), "--json"});
  REQUIRE(positional.exit_code == 0);
  CHECK(json_out(flag)["sha256"] == json_out(positional)["sha256"]);
  CHECK(json_out(flag)["files"] == json_out(positional)["files"]);
  CliResult both = run_cli({state.path()}, {"seed", seed_dir(), "--seed", "/tmp"});
  CHECK(both.exit_code == 2);
  CHECK(both.err == "lazyagent-oci: seed: the seed given twice (DIR " + seed_dir() + " and --seed /tmp): give one\n");
}

TEST_CASE("mcp: every request piped in before end of input is answered, calls included", "[cli][mcp][quick]") {
  // Issue 28: with the calls piped and stdin closed, only the first reply and
  // the protocol errors came back; the three calls got none.
  TempDir state, dir;
  const std::string seeds = dir.path() + "/seeds";
  sh("mkdir -p " + seeds + " && cp -r " + seed_dir() + " " + seeds + "/demo");
  const std::string config = dir.file(
      "mcp.yaml", read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml") + "\nmcp:\n  seeds: [" + seeds + "]\n");
  const json fix = json::parse(fixing_patch());
  auto call = [&](int id, const json& args) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", "test_patch"}, {"arguments", args}}}}.dump();
  };
  const std::string requests =
      json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
           {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", json::object()}, {"clientInfo", {{"name", "it"}, {"version", "0"}}}}}}
          .dump() + "\n" +
      call(2, {{"seed", seeds + "/demo"}, {"patch", fix}, {"baseline", false}}) + "\n" +
      call(3, {{"seed", "/etc"}, {"patch", fix}}) + "\n" +
      "this is not json\n" +
      call(4, {{"seed", seeds + "/demo"}, {"patch", fix}, {"timeout_seconds", 0}}) + "\n" +
      "[1, 2]\n";
  const std::string in = dir.file("requests.jsonl", requests);
  const std::string out = sh("XDG_STATE_HOME=" + state.path() + " " + LAZYAGENT_BINARY + " mcp --config " + config + " < " + in +
                             " 2>" + dir.path() + "/err; echo \"exit=$?\"");
  INFO(out << read_file(dir.path() + "/err"));
  REQUIRE(out.size() > 7);
  CHECK(out.substr(out.size() - 7) == "exit=0\n");
  std::map<int, json> by_id;
  int parse_errors = 0, invalid = 0;
  std::size_t pos = 0, nl;
  while ((nl = out.find('\n', pos)) != std::string::npos) {
    const std::string line = out.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.rfind("exit=", 0) == 0) continue;
    const json m = json::parse(line);
    if (m["id"].is_number_integer()) by_id[m["id"].get<int>()] = m;
    else if (m["error"]["code"] == -32700) ++parse_errors;
    else if (m["error"]["code"] == -32600) ++invalid;
  }
  CHECK(parse_errors == 1);
  CHECK(invalid == 1);
  REQUIRE(by_id.count(1));
  CHECK(by_id[1]["result"]["protocolVersion"] == "2025-06-18");
  REQUIRE(by_id.count(2));
  CHECK(by_id[2]["result"]["isError"] == false);
  CHECK(by_id[2]["result"]["structuredContent"]["status"] == "passed");
  REQUIRE(by_id.count(3));
  CHECK(by_id[3]["error"]["code"] == -32602);
  REQUIRE(by_id.count(4));
  CHECK(by_id[4]["error"]["code"] == -32602);
  CHECK(by_id[4]["error"]["message"].get<std::string>().find("--timeout: expected an integer between 1 and 86400, got '0'") !=
        std::string::npos);
  CHECK(containers_with_label("io.lazyagent.run=" + by_id[2]["result"]["structuredContent"]["run_id"].get<std::string>()).empty());
}

TEST_CASE("configure: a loopback or podman-gateway provider URL is stored as host.containers.internal, and said",
          "[cli][configure][quick]") {
  TempDir state, dir;
  const std::string prefix = "LAZYAGENT_IT28_" + std::to_string(::getpid());
  std::string config = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  for (std::size_t p; (p = config.find("CODING_AGENT_")) != std::string::npos;) config.replace(p, 13, prefix + "_");
  const std::string cfg = dir.file("c.yaml", config);
  const std::string gateway = sh("podman network inspect podman --format '{{range .Subnets}}{{.Gateway}}{{end}}' | tr -d '\\n'");
  REQUIRE(!gateway.empty());
  auto configure = [&](const std::string& url) {
    return run_cli({state.path(), {{prefix + "_BASE_URL", url}, {prefix + "_MODEL", "m"}, {prefix + "_API_KEY", "k"}}},
                   {"configure", "--config", cfg, "--json"});
  };
  CliResult loop = configure("http://127.0.0.1:8080/v1");
  INFO(loop.out << loop.err);
  CHECK(loop.exit_code == 0);
  CHECK(json_out(loop).value("base_url_note", "") ==
        "the planner runs in a container, where 127.0.0.1 is the container itself, not this machine: stored as "
        "http://host.containers.internal:8080/v1 (this machine as the planner sees it); the server must listen on "
        "podman's gateway address (" + gateway + ") or on 0.0.0.0, not only on 127.0.0.1");
  CHECK(loop.err.find("configure: " + prefix + "_BASE_URL: the planner runs in a container") != std::string::npos);
  CliResult gw = configure("http://" + gateway + ":8080/v1");
  INFO(gw.out << gw.err);
  CHECK(gw.exit_code == 0);
  CHECK(json_out(gw).value("base_url_note", "").find(gateway + " is this machine on podman's network") == 0);
  CliResult other = configure("http://192.0.2.7:8080/v1");  // TEST-NET-1: never contacted, refused by the URL check
  CHECK(other.exit_code == 2);
  CHECK(json_out(other)["error"].get<std::string>().find("uses plain http for a host that is not local") != std::string::npos);
  CliResult fine = configure("http://host.containers.internal:8080/v1");
  CHECK(fine.exit_code == 0);
  CHECK_FALSE(json_out(fine).contains("base_url_note"));
  for (const char* s : {"_BASE_URL", "_MODEL", "_API_KEY"}) run_cli({state.path()}, {"secret", "delete", prefix + s});
}

TEST_CASE("the quick start leaves lazyagent-oci on PATH: scripts/link-binary.sh", "[cli][quickstart][quick]") {
  // Issue 28: from "If a repair fails" on the README runs bare `lazyagent-oci`,
  // and an MCP client's entry names it; scripts/demo.sh links it.
  TempDir dir;
  const std::string script = std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/link-binary.sh";
  const std::string bin = sh("realpath " + std::string(LAZYAGENT_BINARY) + " | tr -d '\\n'");
  auto link = [&](const std::string& to) { return sh(script + " " + to + " " + LAZYAGENT_BINARY + " 2>&1; echo rc=$?"); };
  // A fresh directory: linked; the link runs the binary.
  std::string r = link(dir.path());
  CHECK(r.find("rc=0") != std::string::npos);
  CHECK(sh("readlink " + dir.path() + "/lazyagent-oci") == bin + "\n");
  CHECK(sh("PATH=" + dir.path() + ":/usr/bin:/bin lazyagent-oci --help | head -1").rfind("usage: lazyagent-oci", 0) == 0);
  // An earlier checkout's link: pointed at this build.
  sh("ln -sfn /nonexistent/build/lazyagent-oci " + dir.path() + "/lazyagent-oci");
  CHECK(link(dir.path()).find("rc=0") != std::string::npos);
  CHECK(sh("readlink " + dir.path() + "/lazyagent-oci") == bin + "\n");
  // An installed binary (a regular file): left alone.
  sh("rm " + dir.path() + "/lazyagent-oci && printf installed > " + dir.path() + "/lazyagent-oci");
  r = link(dir.path());
  CHECK(r.find("is an installed lazyagent-oci (not a link), left as it is") != std::string::npos);
  CHECK(r.find("rc=0") != std::string::npos);
  CHECK(read_file(dir.path() + "/lazyagent-oci") == "installed");
  // A directory that cannot be written: exit 1, saying how to put build/ on PATH.
  r = link(dir.path() + "/missing");
  CHECK(r.find("cannot write " + dir.path() + "/missing/lazyagent-oci: put the build on PATH yourself") != std::string::npos);
  CHECK(r.find("rc=1") != std::string::npos);
}

TEST_CASE("docs/usage.md's step table lists exactly the steps a run shows on stderr and times", "[cli][docs][quick]") {
  // Issue 28: `probe` was in the table but never on stderr, in timings or in
  // events (it runs inside the `run` step). The table moved from the README to
  // docs/usage.md (issue 43).
  const std::string readme = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/docs/usage.md");
  const std::string head = "Each run is a list of named, timed steps (shown on stderr as `==> step`):\n\n";
  std::size_t pos = readme.find(head);
  REQUIRE(pos != std::string::npos);
  pos += head.size();
  std::vector<std::string> table;
  for (std::size_t nl; (nl = readme.find('\n', pos)) != std::string::npos && readme[pos] == '|'; pos = nl + 1) {
    if (readme.compare(pos, 2, "| ") != 0) continue;  // |---|---|
    const std::string step = readme.substr(pos + 2, readme.find(" |", pos + 2) - pos - 2);
    if (step != "step") table.push_back(step);
  }
  REQUIRE(table.size() >= 8);
  TempDir state, dir;
  CliResult r = run_cli({state.path()}, {"test", "--patch", dir.file("fix.json", fixing_patch()), "--no-baseline", "--json"});
  REQUIRE(r.exit_code == 0);
  const json timings = json_out(r)["timings"];
  std::vector<std::string> timed;
  for (const auto& [k, v] : timings.items()) timed.push_back(k);
  for (const auto& step : table) {
    INFO(step);
    CHECK(timings.contains(step));
    CHECK(r.err.find("==> " + step + "\n") != std::string::npos);
  }
  for (const auto& step : timed) {
    INFO(step);
    CHECK(std::find(table.begin(), table.end(), step) != table.end());
  }
}
