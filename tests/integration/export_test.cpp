// The exports run for real: the OCI bundle under runc, the compose stack under
// podman-compose, with the verdicts `lazyagent-oci test` gives for the same
// patches. Everything they create (runc containers, compose containers and
// networks, temp dirs) is removed, also when a check fails.
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

std::string unique(const std::string& what) {
  static int n = 0;
  return "lazyagent-it-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(++n);
}

// `lazyagent-oci export TARGET --out DIR ...` with a patch file; the summary.
json export_to(const std::string& target, const std::string& out, const std::string& patch,
               std::vector<std::string> extra = {}) {
  TempDir p;
  std::vector<std::string> args = {"export", target, "--seed", seed_dir(), "--out", out, "--json"};
  if (!patch.empty()) {
    args.push_back("--patch");
    args.push_back(p.file("patch.json", patch));
  }
  args.insert(args.end(), extra.begin(), extra.end());
  TempDir state;
  CliResult r = run_cli({state.path()}, args);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

struct Outcome {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};

// A runc container that is deleted whatever happens (STYLE.md principle 13).
class RuncRun {
 public:
  explicit RuncRun(std::string bundle) : bundle_(std::move(bundle)), id_(unique("runc")) {}
  ~RuncRun() { sh("runc delete --force " + id_ + " >/dev/null 2>&1"); }
  // The README's command line, with a deadline of `timeout_s`.
  Outcome run(int timeout_s = 60) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string rc = sh("cd " + bundle_ + " && timeout -k 1 " + std::to_string(timeout_s) +
                              " runc run --bundle . " + id_ + " >output.txt 2>&1; echo $?");
    Outcome o;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    o.exit_code = std::stoi(rc);
    o.output = read_file(bundle_ + "/output.txt");
    return o;
  }
  bool exists() const { return sh("runc state " + id_ + " >/dev/null 2>&1 && echo yes") == "yes\n"; }
  const std::string& id() const { return id_; }

 private:
  std::string bundle_, id_;
};

// A compose project brought down whatever happens.
class ComposeProject {
 public:
  explicit ComposeProject(std::string dir) : dir_(std::move(dir)) {}
  ~ComposeProject() { sh("cd " + dir_ + " && podman-compose -f compose.yaml down >/dev/null 2>&1"); }
  Outcome run_sandbox() {
    Outcome o;
    const std::string rc = sh("cd " + dir_ + " && ./run-sandbox.sh >output.txt 2>&1; echo $?");
    o.exit_code = std::stoi(rc);
    o.output = read_file(dir_ + "/output.txt");
    return o;
  }

 private:
  std::string dir_;
};

json lazyagent_test(const std::string& patch) {
  TempDir state, p;
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", p.file("patch.json", patch), "--json"});
  INFO(r.err);
  return json::parse(r.out);
}

bool ends_with_ok(const std::string& out) {
  return out.find("Ran 4 tests") != std::string::npos && out.size() >= 3 && out.substr(out.size() - 3) == "OK\n";
}

}  // namespace

TEST_CASE("export oci: runc runs the bundle: fix passes, wrong fails, only lo, timeout then delete", "[export]") {
  TempDir dir;
  const std::string fixed = dir.path() + "/bundle";
  const json summary = export_to("oci", fixed, fixing_patch());
  CHECK(summary["paths"] == json::array({"config.json", "README.txt", "seed", "rootfs", "image.json"}));
  CHECK(summary["changed_paths"] == json::array({"calculator.py"}));
  CHECK(summary["image_digest"].get<std::string>().rfind("sha256:", 0) == 0);
  CHECK(fs::exists(fixed + "/rootfs/usr/bin/python3"));
  CHECK(containers_with_label("io.lazyagent.role=export").empty());  // the temporary one is gone
  const std::string seed_before = hash_tree(seed_dir());
  {
    RuncRun run(fixed);
    const Outcome o = run.run();
    INFO(o.output);
    CHECK(o.exit_code == 0);
    CHECK(ends_with_ok(o.output));
    // The sandbox's own report, printed before the tests: what runc really gave it.
    for (const char* line : {"lazyagent-probe: ifaces=lo,\n", "lazyagent-probe: CapEff=0000000000000000\n",
                             "lazyagent-probe: CapBnd=0000000000000000\n", "lazyagent-probe: NoNewPrivs=1\n",
                             "lazyagent-probe: Seccomp=2\n", "lazyagent-probe: root=read-only\n",
                             "lazyagent-probe: env=HOME,LANG,OLDPWD,PATH,PWD,PYTHONDONTWRITEBYTECODE,PYTHONUNBUFFERED,TMPDIR,\n"}) {
      INFO(line);
      CHECK(o.output.find(line) != std::string::npos);
    }

  }
  CHECK(hash_tree(seed_dir()) == seed_before);

  // Re-exports into the same directory: the marker makes it ours, and the
  // rootfs of the same image id stays (a second instead of a new extraction).
  const json again = export_to("oci", fixed, wrong_patch());
  CHECK(again["rootfs_reused"] == true);
  CHECK(again["timings"]["rootfs"] < 1000);
  {
    RuncRun run(fixed);
    const Outcome o = run.run();
    INFO(o.output);
    CHECK(o.exit_code == 1);
    CHECK(o.output.find("FAILED (failures=") != std::string::npos);
  }

  export_to("oci", fixed, attack_patch("import os\nprint('NETDEVS', sorted(os.listdir('/sys/class/net')))\n"
                                       "print('UID', os.getuid(), 'CAPS', [l for l in open('/proc/self/status') if l.startswith('CapEff')])"));
  {
    RuncRun run(fixed);
    const Outcome o = run.run();
    INFO(o.output);
    CHECK(o.exit_code == 0);
    CHECK(o.output.find("NETDEVS ['lo']") != std::string::npos);
    CHECK(o.output.find("UID 0 CAPS ['CapEff:\\t0000000000000000\\n']") != std::string::npos);
  }

  // The README's timeout line ends a hang, and its `runc delete` is needed.
  export_to("oci", fixed, "", {"--test-command", "echo started; sleep 600"});
  {
    RuncRun run(fixed);
    const Outcome o = run.run(1);
    // runc forwards timeout's SIGTERM to the sandbox's PID 1, a shell, which
    // ignores it; timeout then kills runc (-k): 128 + SIGKILL.
    CHECK(o.exit_code == 137);
    CHECK(o.output.find("started") != std::string::npos);
    CHECK(o.seconds < 10);
    CHECK(run.exists());  // the sandbox outlives runc: hence the README's delete
    sh("runc delete --force " + run.id() + " >/dev/null 2>&1");
    CHECK_FALSE(run.exists());
  }
}

TEST_CASE("export: a refused patch exports nothing (exit 4, every finding)", "[export][quick]") {
  TempDir dir, state;
  const std::string out = dir.path() + "/out";
  const std::string bad = dir.file("bad.json", R"({"files":[{"path":"../x","content":"y"},{"path":"test_calculator.py","content":"z"}]})");
  CliResult r = run_cli({state.path()}, {"export", "compose", "--seed", seed_dir(), "--patch", bad, "--out", out, "--json"});
  CHECK(r.exit_code == 4);
  const json j = json::parse(r.out);
  CHECK(j["error_kind"] == "patch");
  std::vector<std::string> codes;
  for (const auto& f : j["findings"]) codes.push_back(f["path"].get<std::string>() + " " + f["code"].get<std::string>());
  CHECK(codes == std::vector<std::string>{"../x dot_component", "../x not_allowed", "test_calculator.py not_allowed"});
  CHECK(r.err.find("lazyagent-oci: export: patch refused: 3 finding(s); nothing was exported\n") != std::string::npos);
  CHECK_FALSE(fs::exists(out));

  fs::create_directories(dir.path() + "/busy");
  dir.file("busy/notes.txt", "mine");
  CliResult busy = run_cli({state.path()}, {"export", "compose", "--seed", seed_dir(), "--out", dir.path() + "/busy"});
  CHECK(busy.exit_code == 2);
  CHECK(busy.err.find("is not empty and holds no earlier export") != std::string::npos);
  CliResult inside = run_cli({state.path()}, {"export", "compose", "--seed", seed_dir(), "--out", seed_dir() + "/export"});
  CHECK(inside.exit_code == 2);
  CHECK(inside.err.find("overlaps the seed") != std::string::npos);
  CHECK_FALSE(fs::exists(seed_dir() + "/export"));
}

TEST_CASE("export compose: the sandbox service's verdicts match lazyagent-oci test's", "[export]") {
  // Not the first line: podman-compose (Python) prints its own after podman's
  // unless PYTHONUNBUFFERED is set, as it is not in CI's environment.
  REQUIRE(sh("podman-compose version 2>/dev/null").find("podman-compose version 1.") != std::string::npos);
  TempDir dir;
  for (const auto& [name, patch, passed] : {std::tuple{"fix", fixing_patch(), true},
                                            std::tuple{"wrong", wrong_patch(), false}}) {
    INFO(name);
    const std::string out = dir.path() + "/" + name;
    const std::string project = unique(name);
    export_to("compose", out, patch, {"--name", project});
    const json verdict = lazyagent_test(patch);
    REQUIRE(verdict.contains("tests_passed"));
    CHECK(verdict["tests_passed"] == passed);
    Outcome o;
    {
      ComposeProject compose(out);
      o = compose.run_sandbox();
    }
    INFO(o.output);
    CHECK(o.exit_code == verdict["test_exit_code"]);
    CHECK((o.exit_code == 0 && ends_with_ok(o.output)) == passed);
    // Nothing of the project is left: containers (run --rm), networks, pods.
    CHECK(containers_with_label("io.podman.compose.project=" + project).empty());
    CHECK(sh("podman network ls --format '{{.Name}}' | grep -c -- '" + project + "' || true") == "0\n");
    CHECK(sh("podman pod ls --format '{{.Name}}' | grep -c -- '" + project + "' || true") == "0\n");
  }
}

TEST_CASE("export compose: inside the sandbox service, the policy holds", "[export][quick]") {
  TempDir dir;
  const std::string out = dir.path() + "/probe";
  const std::string project = unique("probe");
  export_to("compose", out, "",
            {"--name", project, "--test-command",
             "ls /sys/class/net; cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes; "
             "env | sort | tr '\\n' ' '; echo; grep -c -E ' /(run|var/tmp) ' /proc/mounts; ls /run/secrets 2>&1 | head -1"});
  ComposeProject compose(out);
  const Outcome o = compose.run_sandbox();
  INFO(o.output);
  CHECK(o.exit_code == 0);
  const std::string probe_end = "lazyagent-probe: end\n";
  REQUIRE(o.output.find(probe_end) != std::string::npos);
  CHECK(o.output.find("lazyagent-probe: ifaces=lo,\n") == 0);  // the sandbox's own report comes first
  const std::string after = o.output.substr(o.output.find(probe_end) + probe_end.size());
  CHECK(after.rfind("lo\n256\n536870912\n", 0) == 0);  // only lo; pids and swap from run-sandbox.sh
  CHECK(o.output.find("HOME=/work HOSTNAME=sandbox LANG=C.UTF-8 OLDPWD=/ PATH=/usr/local/sbin:/usr/local/bin:"
                      "/usr/sbin:/usr/bin:/sbin:/bin PWD=/work PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 TMPDIR=/work/.lazyagent-tmp \n") !=
        std::string::npos);
  CHECK(o.output.find("\n0\n") != std::string::npos);  // no podman tmpfs at /run or /var/tmp
  CHECK(o.output.find("No such file or directory") != std::string::npos);  // no /run/secrets
}

TEST_CASE("export compose: the planner service reads its secrets by name, and its patch then passes", "[export]") {
  // A scripted provider in this process, and podman secrets of unique names
  // pointing at it (removed at the end); the config names those secrets.
  lazyagent::StubScript script;
  script.api_key = "sk-lazyagent-export-it";
  lazyagent::StubReply reply;
  reply.content = json::parse(fixing_patch()).dump();
  script.replies = {reply};
  lazyagent::ProviderStub stub(script);
  auto port = stub.listen("0.0.0.0", 0);
  REQUIRE(port.ok());
  const std::string prefix = "LAZYAGENT_IT_EXPORT_" + std::to_string(getpid());
  const std::vector<std::string> names = {prefix + "_URL", prefix + "_MODEL", prefix + "_KEY"};
  struct Secrets {
    std::vector<std::string> names;
    ~Secrets() {
      for (const auto& n : names) sh("podman secret rm " + n + " >/dev/null 2>&1");
    }
  } secrets{names};
  TempDir dir, state;
  const std::string config = dir.file("config.yaml", "seed: " + seed_dir() + "\nprovider:\n  secrets:\n    base_url: " +
                                                         names[0] + "\n    model: " + names[1] + "\n    api_key: " +
                                                         names[2] + "\n");
  CliResult conf = run_cli({state.path(), {{names[0], "http://host.containers.internal:" + std::to_string(*port) + "/v1"},
                                           {names[1], "lazyagent-stub"},
                                           {names[2], script.api_key}}},
                           {"configure", "--config", config});
  INFO(conf.err);
  REQUIRE(conf.exit_code == 0);

  const std::string out = dir.path() + "/stack";
  const std::string project = unique("planner");
  export_to("compose", out, "", {"--config", config, "--name", project});
  const std::string exported = sh("cat " + out + "/compose.yaml " + out + "/task/task.json " + out + "/*.sh");
  CHECK(exported.find(names[2]) != std::string::npos);       // the secret by name
  CHECK(exported.find(script.api_key) == std::string::npos);  // never its value
  ComposeProject compose(out);
  const std::string rc = sh("cd " + out + " && ./run-planner.sh >patch.json 2>planner.log; echo $?");
  INFO(read_file(out + "/planner.log"));
  CHECK(rc == "0\n");
  CHECK(stub.requests() == 1);
  const json patch = json::parse(read_file(out + "/patch.json"), nullptr, false);
  CHECK(patch == json::parse(fixing_patch()));
  CHECK(read_file(out + "/planner.log").find(script.api_key) == std::string::npos);

  // The patch goes in by a re-export (validated), then the sandbox passes.
  export_to("compose", out, read_file(out + "/patch.json"), {"--config", config, "--name", project});
  const Outcome o = compose.run_sandbox();
  INFO(o.output);
  CHECK(o.exit_code == 0);
  CHECK(ends_with_ok(o.output));
  CHECK(containers_with_label("io.podman.compose.project=" + project).empty());
}
