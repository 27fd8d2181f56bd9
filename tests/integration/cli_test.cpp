// The CLI's surface: help on every command, usage errors, doctor.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include "harness.h"
#include "unreachable_kubeconfig.h"

using nlohmann::json;
using namespace it;

TEST_CASE("every command has --help and exits 0", "[cli][quick]") {
  TempDir state;
  for (const char* cmd : {"run", "test", "configure", "secret", "task", "sandboxes", "reap", "export", "doctor",
                          "provider-stub", "plan"}) {
    CliResult r = run_cli({state.path()}, {cmd, "--help"});
    INFO(cmd << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(std::string("usage: lazyagent-oci ") + cmd, 0) == 0);
  }
  CliResult top = run_cli({state.path()}, {"--help"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("exit codes:") != std::string::npos);
}

TEST_CASE("usage errors are exit 2 and say what to do", "[cli][quick]") {
  TempDir state;
  CliResult unknown = run_cli({state.path()}, {"tset"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err == "lazyagent-oci: unknown command 'tset' (see `lazyagent-oci --help`)\n");
  CliResult nopatch = run_cli({state.path()}, {"test", "--json"});
  CHECK(nopatch.exit_code == 2);
  CHECK(json::parse(nopatch.out)["error"] == "test: --patch FILE is required");
  CliResult badtimeout = run_cli({state.path()}, {"test", "--patch", "x", "--timeout", "0"});
  CHECK(badtimeout.exit_code == 2);
  CHECK(badtimeout.err == "lazyagent-oci: test: --timeout: expected an integer between 1 and 86400, got '0'\n");
  for (const std::string cmd : {"test", "run"}) {
    CliResult badreport = run_cli({state.path()}, {cmd, "--patch", "x", "--report", "xml:out.xml", "--json"});
    if (cmd == "run") badreport = run_cli({state.path()}, {cmd, "--report", "xml:out.xml", "--json"});
    CHECK(badreport.exit_code == 2);
    CHECK(json::parse(badreport.out)["error"] == cmd + ": --report: expected junit:PATH, got 'xml:out.xml'");
  }
  TempDir cfg;
  const std::string bad = cfg.file("bad.yaml", "limits:\n  memory_mib: lots\n");
  CliResult badcfg = run_cli({state.path()}, {"test", "--config", bad, "--patch", "x"});
  CHECK(badcfg.exit_code == 2);
  CHECK(badcfg.err.find(bad + ": limits.memory_mib: expected a positive integer, got 'lots'") != std::string::npos);
  CliResult missing = run_cli({state.path()}, {"test", "--patch", cfg.path() + "/nope.json"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("cannot open the file") != std::string::npos);
}

TEST_CASE("with --json a flag the parser refuses is a JSON error object too, wherever --json stands", "[cli][quick]") {
  TempDir state;
  const std::vector<std::vector<std::string>> lines = {
      {"test", "--patch", "x", "--bogus", "--json"},
      {"test", "--json", "--patch", "x", "--timeout", "0"},
      {"eval", "--jobs", "many", "--json"},
      {"session", "open", "--json", "--bogus"}};
  for (const auto& args : lines) {
    CliResult r = run_cli({state.path()}, args);
    INFO(args[0] << " " << args[1] << ": " << r.out << r.err);
    CHECK(r.exit_code == 2);
    const json j = json::parse(r.out, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["error_kind"] == "usage");
    CHECK(j["exit_code"] == 2);
    CHECK_FALSE(j["error"].get<std::string>().empty());
  }
  CliResult timeout = run_cli({state.path()}, {"test", "--json", "--patch", "x", "--timeout", "0"});
  CHECK(json::parse(timeout.out)["error"] == "test: --timeout: expected an integer between 1 and 86400, got '0'");
}

TEST_CASE("doctor checks the real podman service and images", "[cli][quick]") {
  TempDir state;
  CliResult r = run_cli({state.path()}, {"doctor", "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  json j = json::parse(r.out);
  CHECK(j["ok"] == true);
  std::map<std::string, std::string> status;
  for (const auto& c : j["checks"]) status[c["check"]] = c["status"];
  CHECK(status["socket"] == "ok");
  CHECK(status["api"] == "ok");
  CHECK(status["runtime"] == "ok");
  CHECK(status["image localhost/lazyagent-sandbox:latest"] == "ok");
  TempDir nosock;
  CliResult down = run_cli({state.path(), {{"CONTAINER_HOST", "unix://" + nosock.path() + "/x.sock"}}}, {"doctor"});
  CHECK(down.exit_code == 5);
  CHECK(down.out.find("[FAIL] socket: pinging podman: cannot reach podman at") != std::string::npos);
  CHECK(down.out.find("fix: run scripts/setup.sh") != std::string::npos);
}

TEST_CASE("a Kubernetes API server that refuses the connection is engine_unreachable, retryable, and eval waits for it "
          "within eval.engine_wait_seconds", "[cli][k8s][quick]") {
  TempDir state, dir;
  // A kubeconfig naming a port nothing listens on: the API server is away.
  const std::string kubeconfig = unreachable_kubeconfig(dir);
  const CliEnv env{state.path(), {{"KUBECONFIG", kubeconfig}}};
  const std::string patch = dir.file("fix.json", fixing_patch());
  const CliResult t = run_cli(env, {"test", "--backend", "k8s", "--seed", seed_dir(), "--patch", patch, "--json"});
  INFO(t.out << t.err);
  CHECK(t.exit_code == 5);
  const json tj = json::parse(t.out, nullptr, false);
  CHECK(tj.value("error_kind", "") == "engine_unreachable");
  CHECK(tj.value("retryable", false) == true);
  CHECK(tj.value("error", "").find("cannot reach the Kubernetes API at https://127.0.0.1:1 (kubeconfig " + kubeconfig +
                                   " (context x)): connection refused") != std::string::npos);

  const std::string config = dir.file("c.yaml", "eval:\n  engine_wait_seconds: 1\n");
  const std::string tasks = dir.file(
      "tasks.jsonl", json{{"id", "a"}, {"seed", seed_dir()}, {"patch", json::parse(fixing_patch())}}.dump() + "\n");
  const CliResult e = run_cli(env, {"eval", tasks, "--backend", "k8s", "--config", config, "--out", dir.path() + "/out",
                                    "--json"});
  INFO(e.out << e.err);
  CHECK(e.exit_code == 5);
  CHECK(e.err.find("eval: engine unreachable since ") != std::string::npos);
  CHECK(e.err.find(", waiting (up to 1 s, eval.engine_wait_seconds): reading the API server's version: cannot reach "
                   "the Kubernetes API at https://127.0.0.1:1") != std::string::npos);
  const json ej = json::parse(e.out, nullptr, false);
  CHECK(ej.value("error_kind", "") == "engine_unreachable");
  CHECK(ej.value("error", "").rfind("eval: nothing was run (eval.engine_wait_seconds 1); rerun once the engine answers: ",
                                    0) == 0);
}
