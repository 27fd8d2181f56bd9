// Records a user can trust and a CLI that agrees with its README (issue 19):
// each test here failed before its fix, against the real binary, the real
// podman service and images, and the scripted provider.
#include "test_paths.h"
#include "catch_compat.h"
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <thread>

#include "harness.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
namespace fs = std::filesystem;

namespace {

const std::string kKey = "sk-lazyagent-records-key-0123456789";

json parsed(const CliResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  return j;
}

std::string unique(const std::string& what) {
  static int n = 0;
  return "lazyagent-it-records-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(++n);
}

// The repository's config with the seed made absolute and each (from, to)
// edit applied to its text.
std::string config_file(const TempDir& dir, const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  std::string text = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  const auto seed_line = text.find("\nseed: ");
  REQUIRE(seed_line != std::string::npos);
  text.replace(seed_line + 1, text.find('\n', seed_line + 1) - seed_line - 1, "seed: " + seed_dir());
  for (const auto& [from, to] : edits) {
    const auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, from.size(), to);
  }
  return dir.file(name, text);
}

// The planner image: it runs this tree's `lazyagent-oci plan` (its attempts
// count), so when the shared one was built from an older binary, name one
// built from this tree (as in repair_test.cpp).
std::string planner_image() {
  const char* v = std::getenv("LAZYAGENT_IT_PLANNER_IMAGE");
  return v && *v ? v : "localhost/lazyagent-planner:latest";
}

// A scripted provider in this process behind podman secrets of unique names,
// and a config naming them (and planner_image() unless extra_yaml names
// images); all removed in the destructor.
class Provider {
 public:
  Provider(lazyagent::StubScript script, const std::string& extra_yaml = "") : stub_(std::move(script)) {
    auto port = stub_.listen("0.0.0.0", 0);
    REQUIRE(port.ok());
    const std::string prefix = "LAZYAGENT_IT_REC_" + std::to_string(getpid()) + "_" + std::to_string(++counter_);
    names_ = {prefix + "_BASE_URL", prefix + "_MODEL", prefix + "_API_KEY"};
    config_ = dir_.file("config.yaml", "seed: " + seed_dir() + "\nprovider:\n  secrets:\n    base_url: " + names_[0] +
                                           "\n    model: " + names_[1] + "\n    api_key: " + names_[2] +
                                           "\n  max_retries: 3\n" +
                                           (extra_yaml.find("images:") == std::string::npos
                                                ? "images:\n  planner: " + planner_image() + "\n" : "") +
                                           extra_yaml);
    configure("http://host.containers.internal:" + std::to_string(*port) + "/v1");
  }
  ~Provider() {
    for (const auto& n : names_) sh("podman secret rm " + n + " >/dev/null 2>&1");
    stub_.stop();
  }
  void configure(const std::string& url) {
    CliResult r = run_cli({state.path(), {{names_[0], url}, {names_[1], "lazyagent-stub"}, {names_[2], kKey}}},
                          {"configure", "--config", config_});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const std::string& config() const { return config_; }
  lazyagent::ProviderStub& stub() { return stub_; }
  TempDir state;

 private:
  static inline int counter_ = 0;
  TempDir dir_;
  lazyagent::ProviderStub stub_;
  std::vector<std::string> names_;
  std::string config_;
};

std::size_t run_records(const std::string& state) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(state + "/lazyagent-oci/runs", ec)) n += e.path().extension() == ".json";
  return n;
}

// A `test` whose patch hangs, started in the background; waits until its sandbox runs.
struct HangingTest {
  TempDir io;
  pid_t pid = 0;
  std::string label;
  explicit HangingTest(const CliEnv& env, const std::vector<std::string>& extra = {}) {
    const std::string p = io.file("patch.json", attack_patch("import time\ntime.sleep(3600)"));
    std::vector<std::string> args = {"test", "--seed", seed_dir(), "--patch", p, "--timeout", "300", "--no-baseline"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid = spawn_cli(env, args, io.path());
    label = "io.lazyagent.pid=" + std::to_string(pid);
  }
  bool wait_until_running(int timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!sh("podman ps --filter label=" + label + " --filter status=running --format '{{.ID}}'").empty()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  std::string out() const { return read_file(io.path() + "/stdout"); }
  std::string err() const { return read_file(io.path() + "/stderr"); }
};

json eval_json(const CliEnv& env, const std::string& tasks, const std::string& out,
               const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"eval", tasks, "--out", out, "--no-baseline", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliResult r = run_cli(env, args, 600);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return parsed(r);
}

std::vector<std::string> ids(const json& summary, const std::string& part) {
  const json& c = summary["changed"];
  return c.contains(part) ? c[part]["ids"].get<std::vector<std::string>>() : std::vector<std::string>{};
}

}  // namespace

// Item 1 ------------------------------------------------------------------------------------

TEST_CASE("eval resume: a seed edit, a config edit and an image rebuild each run the task again, saying why",
          "[records][eval]") {
  TempDir state, work;
  // A private copy of the seed (edited below) and an image of our own tag
  // (rebuilt below): the shared ones are never touched.
  fs::copy(seed_dir(), work.path() + "/seed", fs::copy_options::recursive);
  const std::string image = "localhost/" + unique("image") + ":latest";
  auto build_image = [&](const std::string& mark) {
    const std::string ctx = work.path() + "/image";
    fs::create_directories(ctx);
    std::ofstream(ctx + "/Containerfile") << "FROM localhost/lazyagent-sandbox:latest\nLABEL io.lazyagent.it.mark=" << mark << "\n";
    sh("podman build -q -t " + image + " " + ctx + " >/dev/null 2>&1");
    REQUIRE_FALSE(sh("podman image inspect --format '{{.Id}}' " + image).empty());
  };
  struct ImageCleanup {
    std::string image;
    ~ImageCleanup() { sh("podman rmi -f " + image + " >/dev/null 2>&1"); }
  } cleanup{image};
  build_image("one");

  const std::string patch = work.file("fix.json", fixing_patch());
  const std::string tasks = work.file("tasks.jsonl",
                                      "{\"id\":\"fix\",\"seed\":\"seed\",\"image\":\"" + image + "\",\"patch\":\"fix.json\"}\n");
  (void)patch;
  const std::string out = work.path() + "/out";
  const std::string config = config_file(work, "config.yaml");
  const CliEnv env{state.path(), {{"LAZYAGENT_CONFIG", config}}};

  json first = eval_json(env, tasks, out);
  CHECK(first["passed"]["ids"] == json::array({"fix"}));
  CHECK(first["changed"] == json::object());
  const json stored = json::parse(read_file(out + "/results/fix.json"));
  for (const char* part : {"seed", "patch", "config", "image"}) CHECK(stored["eval"]["key"][part].get<std::string>().size() > 8);

  json same = eval_json(env, tasks, out);
  CHECK(same["skipped"]["ids"] == json::array({"fix"}));
  CHECK(same["changed"] == json::object());

  SECTION("the seed's files change") {
    std::ofstream(work.path() + "/seed/NOTES.txt") << "a file the tests do not read\n";
    json again = eval_json(env, tasks, out);
    CHECK(again["skipped"]["count"] == 0);
    CHECK(ids(again, "seed") == std::vector<std::string>{"fix"});
    CHECK(again["changed"].size() == 1);
    CHECK(again["passed"]["ids"] == json::array({"fix"}));
    // ... and once rerun, the new key stands.
    CHECK(eval_json(env, tasks, out)["skipped"]["ids"] == json::array({"fix"}));
  }
  SECTION("the config changes: its test command, or a limit") {
    std::ofstream(config) << read_file(config_file(work, "config2.yaml", {{"python3 -m unittest -v", "python3 -m unittest -v -b"}}));
    json again = eval_json(env, tasks, out);
    CHECK(ids(again, "config") == std::vector<std::string>{"fix"});
    CHECK(again["changed"].size() == 1);
    std::ofstream(config) << read_file(config_file(work, "config3.yaml", {{"python3 -m unittest -v", "python3 -m unittest -v -b"},
                                                                      {"pids: 256", "pids: 200"}}));
    CHECK(ids(eval_json(env, tasks, out), "config") == std::vector<std::string>{"fix"});
    // --timeout is part of the policy too.
    CHECK(ids(eval_json(env, tasks, out, {"--timeout", "77"}), "config") == std::vector<std::string>{"fix"});
  }
  SECTION("the image is rebuilt under the same tag") {
    build_image("two");
    json again = eval_json(env, tasks, out);
    CHECK(ids(again, "image") == std::vector<std::string>{"fix"});
    CHECK(again["changed"].size() == 1);
  }
  SECTION("the patch file changes") {
    std::ofstream(work.path() + "/fix.json") << wrong_patch();
    CliResult r = run_cli(env, {"eval", tasks, "--out", out, "--no-baseline", "--json"}, 600);
    const json again = parsed(r);
    CHECK(ids(again, "patch") == std::vector<std::string>{"fix"});
    CHECK(again["failed"]["ids"] == json::array({"fix"}));
  }
}

// Item 2 ------------------------------------------------------------------------------------

TEST_CASE("kill -9 of a real test run: sandboxes says its process is gone, reap closes the record as interrupted, "
          "verify never calls it a match",
          "[records][cleanup][quick]") {
  TempDir state;
  HangingTest run({state.path()});
  REQUIRE(run.wait_until_running(120));
  kill(run.pid, SIGKILL);
  REQUIRE(wait_cli(run.pid, 10) == 128 + SIGKILL);

  json rows = parsed(run_cli({state.path()}, {"sandboxes", "--json"}))["sandboxes"];
  REQUIRE(rows.size() == 1);
  const std::string run_id = rows[0]["run_id"];
  CHECK(rows[0]["status"] == "running");
  CHECK(rows[0]["owner_alive"] == false);
  CHECK(rows[0]["reason"].get<std::string>().find("its process is gone") != std::string::npos);

  // Before reap: not a match, and not claimed to be one.
  CliResult before = run_cli({state.path()}, {"verify", run_id});
  CHECK(before.exit_code == 1);
  CHECK(before.out.find("MATCHES") == std::string::npos);
  CHECK(before.out.find("NOT FINISHED, NO VERDICT") != std::string::npos);
  CHECK(before.out.find("its process is gone") != std::string::npos);

  CliResult reap = run_cli({state.path()}, {"reap", "--json"});
  CHECK(reap.exit_code == 0);
  CHECK(parsed(reap)["records_closed"] == json::array({run_id}));
  CHECK(containers_with_label(run.label).empty());

  rows = parsed(run_cli({state.path()}, {"sandboxes", "--json"}))["sandboxes"];
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["status"] == "interrupted");
  CHECK(rows[0]["exists"] == false);
  const std::string reason = rows[0]["reason"];
  CHECK(reason.rfind("interrupted: the run's process (pid " + std::to_string(run.pid) + " on ", 0) == 0);
  CHECK(reason.find("killed (e.g. kill -9) or crashed while the run was running") != std::string::npos);
  // The human table shows the reason too (it was empty for such rows).
  CliResult table = run_cli({state.path()}, {"sandboxes"});
  CHECK(table.out.find("interrupted  ") != std::string::npos);
  CHECK(table.out.find("interrupted: the run's process (pid") != std::string::npos);

  CliResult after = run_cli({state.path()}, {"verify", run_id, "--json"});
  CHECK(after.exit_code == 1);
  const json v = parsed(after);
  CHECK(v["matches"] == false);
  CHECK(v["finished"] == false);
  CHECK(v["mismatches"].empty());  // the record is intact; it just has no verdict
  CHECK(v["unfinished"].get<std::string>().rfind("the run was interrupted before its verdict: interrupted: ", 0) == 0);

  // A second reap finds nothing more to close.
  CHECK(parsed(run_cli({state.path()}, {"reap", "--json"}))["records_closed"].empty());
}

TEST_CASE("kill -9 of a real test run: the next start closes its record", "[records][cleanup][quick]") {
  TempDir state, d;
  HangingTest run({state.path()});
  REQUIRE(run.wait_until_running(120));
  kill(run.pid, SIGKILL);
  REQUIRE(wait_cli(run.pid, 10) == 128 + SIGKILL);
  CliResult next = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", d.file("p.json", fixing_patch()),
                                            "--no-baseline", "--json"});
  CHECK(next.exit_code == 0);
  const std::string next_id = parsed(next)["run_id"];
  json rows = parsed(run_cli({state.path()}, {"sandboxes", "--json"}))["sandboxes"];
  REQUIRE(rows.size() == 2);
  // Found by run id: `sandboxes` lists newest first by run id, which has one-second
  // resolution, and both runs can start within the same second.
  for (const auto& row : rows) {
    CHECK(row["status"] == (row["run_id"] == next_id ? "passed" : "interrupted"));
  }
  CHECK(rows[0]["run_id"] != rows[1]["run_id"]);
}

// Items 3 and 4 -----------------------------------------------------------------------------

TEST_CASE("a provider error: run --json names run_id and planner_task_id, and task show counts every attempt",
          "[records][run]") {
  lazyagent::StubScript s;
  s.api_key = kKey;
  lazyagent::StubReply broken;
  broken.status = 500;
  broken.content = "the model server fell over";
  s.replies = {broken};
  Provider p(s);
  CliResult r = run_cli({p.state.path()}, {"run", "--config", p.config(), "--json"});
  CHECK(r.exit_code == 3);
  const json j = parsed(r);
  CHECK(j["error"].get<std::string>().find("provider said 500: the model server fell over (after 4 attempts)") !=
        std::string::npos);
  REQUIRE(j.contains("planner_task_id"));
  REQUIRE(j.contains("run_id"));
  const std::string task = j["planner_task_id"], run_id = j["run_id"];
  CHECK(task.rfind("t-", 0) == 0);
  CHECK(run_id == "r-" + task.substr(2));
  CHECK(p.stub().requests() == 4);

  CliResult show = run_cli({p.state.path()}, {"task", "show", task});
  CHECK(show.exit_code == 0);
  CHECK(show.out.find("attempts:   4\n") != std::string::npos);
  CHECK(show.out.find("status:     provider_error") != std::string::npos);
  CHECK(parsed(run_cli({p.state.path()}, {"task", "show", task, "--json"}))["attempts"] == 4);
  CliResult logs = run_cli({p.state.path()}, {"task", "logs", task});
  CHECK(logs.out.find("provider: attempt 4: POST") != std::string::npos);

  // The run record names the task, and `sandboxes` fits planner_error into its column.
  CliResult table = run_cli({p.state.path()}, {"sandboxes"});
  const auto header = table.out.substr(0, table.out.find('\n'));
  const auto row = table.out.substr(table.out.find(run_id));
  CHECK(row.find("planner_error") == header.find("STATUS"));
  CHECK(row.find("planner task " + task) != std::string::npos);  // the reason, in REASON
  const std::size_t status_end = row.find("planner_error") + std::string("planner_error").size();
  CHECK(row.substr(status_end, 2) == "  ");
}

// Item 5 ------------------------------------------------------------------------------------

TEST_CASE("doctor checks every image the config names and says which config it read, run names images.planner",
          "[records][cli]") {
  TempDir state, dir;
  const std::string cfg = config_file(dir, "nope.yaml", {{"planner: localhost/lazyagent-planner:latest",
                                                          "planner: localhost/lazyagent-planner:nope"}});
  CliResult d = run_cli({state.path()}, {"doctor", "--config", cfg, "--json"});
  CHECK(d.exit_code == 5);
  const json j = parsed(d);
  CHECK(j["ok"] == false);
  CHECK(j["config"] == cfg);
  std::map<std::string, json> checks;
  for (const auto& c : j["checks"]) checks[c["check"]] = c;
  CHECK(checks["config"]["status"] == "ok");
  CHECK(checks["config"]["detail"] == "read " + cfg);
  CHECK(checks["image localhost/lazyagent-sandbox:latest"]["status"] == "ok");
  const json planner = checks["image localhost/lazyagent-planner:nope"];
  CHECK(planner["status"] == "fail");
  CHECK(planner["detail"].get<std::string>().find("(images.planner): image not found") != std::string::npos);
  CHECK(planner["fix"].get<std::string>().find("set images.planner in the config") != std::string::npos);
  CliResult human = run_cli({state.path()}, {"doctor", "--config", cfg});
  CHECK(human.out.find("[ ok ] config: read " + cfg) != std::string::npos);
  CHECK(human.out.find("[FAIL] image localhost/lazyagent-planner:nope") != std::string::npos);

  lazyagent::StubScript s;
  s.api_key = kKey;
  s.replies = {lazyagent::StubReply{}};
  Provider p(s, "images:\n  planner: localhost/lazyagent-planner:nope\n");
  CliResult r = run_cli({p.state.path()}, {"run", "--config", p.config(), "--json"});
  CHECK(r.exit_code == 5);
  const std::string error = parsed(r)["error"];
  CHECK(error.find("inspecting image localhost/lazyagent-planner:nope (images.planner): image not found") !=
        std::string::npos);
  CHECK(error.find("images.sandbox") == std::string::npos);
  CHECK(p.stub().requests() == 0);
}

// Item 6 ------------------------------------------------------------------------------------

TEST_CASE("a missing or unreadable seed is refused before anything runs: test, run and eval exit 2, no record",
          "[records][cli][quick]") {
  TempDir state, dir;
  const std::string patch = dir.file("p.json", fixing_patch());
  const std::string missing = dir.path() + "/no-such-seed";
  const std::string file = dir.file("a-file", "not a directory\n");

  CliResult t = run_cli({state.path()}, {"test", "--seed", missing, "--patch", patch, "--json"});
  CHECK(t.exit_code == 2);
  CHECK(parsed(t)["error"] == "test: seed " + missing + ": no such directory");
  CHECK(t.err.find("==> ") == std::string::npos);  // no step ran
  CliResult f = run_cli({state.path()}, {"test", "--seed", file, "--patch", patch});
  CHECK(f.exit_code == 2);
  CHECK(f.err == "lazyagent-oci: test: seed " + file + " is not a directory\n");

  CliResult r = run_cli({state.path()}, {"run", "--seed", missing, "--json"});
  CHECK(r.exit_code == 2);
  CHECK(parsed(r)["error"] == "run: seed " + missing + ": no such directory");

  const std::string tasks = dir.file("tasks.jsonl", "{\"id\":\"a\",\"seed\":\"no-such-seed\",\"patch\":\"p.json\"}\n"
                                                    "{\"id\":\"b\",\"seed\":\"" + seed_dir() + "\",\"patch\":\"p.json\"}\n");
  CliResult e = run_cli({state.path()}, {"eval", tasks, "--json"});
  CHECK(e.exit_code == 2);
  const json ej = parsed(e);
  REQUIRE(ej["line_errors"].size() == 1);
  CHECK(ej["line_errors"][0]["line"] == 1);
  CHECK(ej["line_errors"][0]["code"] == "unreadable_seed");
  CHECK(ej["line_errors"][0]["message"] == "seed " + dir.path() + "/no-such-seed: no such directory");
  CHECK_FALSE(fs::exists(dir.path() + "/tasks.eval"));  // nothing ran, no results

  // A seed the snapshot refuses (it holds a fifo) is refused the same way
  // (it was an infra_error, retried, before).
  const std::string fifo_seed = dir.path() + "/fifo-seed";
  fs::copy(seed_dir(), fifo_seed, fs::copy_options::recursive);
  REQUIRE(mkfifo((fifo_seed + "/pipe").c_str(), 0600) == 0);
  const std::string fifo_tasks = dir.file("fifo.jsonl", "{\"id\":\"f\",\"seed\":\"fifo-seed\",\"patch\":\"p.json\"}\n");
  CliResult e3 = run_cli({state.path()}, {"eval", fifo_tasks, "--json"});
  CHECK(e3.exit_code == 2);
  CHECK(parsed(e3)["line_errors"][0]["code"] == "unreadable_seed");
  CHECK(parsed(e3)["line_errors"][0]["message"].get<std::string>().find("holds a special file") != std::string::npos);

  // The config's seed, used by tasks without one, is checked the same way.
  const std::string cfg = dir.file("c.yaml", "seed: " + missing + "\n");
  const std::string bare = dir.file("bare.jsonl", "{\"id\":\"c\",\"patch\":\"p.json\"}\n");
  CliResult e2 = run_cli({state.path()}, {"eval", bare, "--config", cfg, "--json"});
  CHECK(e2.exit_code == 2);
  CHECK(parsed(e2)["line_errors"][0]["code"] == "unreadable_seed");
  CHECK(parsed(e2)["line_errors"][0]["line"] == 0);

  CHECK(run_records(state.path()) == 0);  // no run record from any of them
}

// Item 7 ------------------------------------------------------------------------------------

namespace {

// The backticked names in `text`.
std::set<std::string> backticked(const std::string& text) {
  std::set<std::string> out;
  for (std::size_t a = text.find('`'); a != std::string::npos; a = text.find('`', a + 1)) {
    const std::size_t b = text.find('`', a + 1);
    if (b == std::string::npos) break;
    out.insert(text.substr(a + 1, b - a - 1));
    a = b;
  }
  return out;
}

// docs/usage.md's "### Results": the fields its table lists (first column) and
// the names in the paragraph on the error object.
std::pair<std::set<std::string>, std::set<std::string>> readme_result_fields() {
  const std::string readme = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/docs/usage.md");
  const auto start = readme.find("\n### Results\n");
  REQUIRE(start != std::string::npos);
  const auto error_par = readme.find("\nWhen a command fails before it has a result", start);
  REQUIRE(error_par != std::string::npos);
  std::set<std::string> table;
  std::istringstream lines(readme.substr(start, error_par - start));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    for (const auto& f : backticked(line.substr(0, line.find(" |", 2)))) table.insert(f);
  }
  const auto par_end = readme.find("\n\n", error_par + 1);
  return {table, backticked(readme.substr(error_par, par_end - error_par))};
}

}  // namespace

TEST_CASE("docs/usage.md's --json field table names every field a result and an error object carry", "[records][docs]") {
  const auto [table, error_fields] = readme_result_fields();
  REQUIRE(table.count("tests_passed") == 1);  // the parser found the table
  TempDir state, d;
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", d.file("p.json", fixing_patch()), "--json"});
  CHECK(r.exit_code == 0);
  const json result = parsed(r);
  for (const auto& [key, value] : result.items()) {
    INFO("result field " << key);
    CHECK(table.count(key) == 1);
  }
  // The error objects: a usage error, and one with ids (a provider error).
  CliResult missing = run_cli({state.path()}, {"test", "--seed", d.path() + "/none", "--patch", d.path() + "/p.json", "--json"});
  CHECK(missing.exit_code == 2);
  lazyagent::StubScript s;
  s.api_key = kKey;
  lazyagent::StubReply broken;
  broken.status = 400;
  broken.content = "bad request";
  s.replies = {broken};
  Provider p(s);
  CliResult provider = run_cli({p.state.path()}, {"run", "--config", p.config(), "--json"});
  CHECK(provider.exit_code == 3);
  for (const CliResult* e : {&missing, &provider}) {
    const json j = parsed(*e);
    for (const auto& [key, value] : j.items()) {
      INFO("error field " << key);
      CHECK(error_fields.count(key) == 1);
    }
  }
  CHECK(parsed(provider).contains("planner_task_id"));
}

// Item 8 ------------------------------------------------------------------------------------

TEST_CASE("help names the config's defaults, not a fixed 120, a bare lazyagent-oci is a usage error", "[records][cli][quick]") {
  TempDir state;
  for (const char* cmd : {"test", "run", "eval", "export"}) {
    CliResult h = run_cli({state.path()}, {cmd, "--help"});
    INFO(cmd);
    CHECK(h.exit_code == 0);
    CHECK(h.out.find("(default 120)") == std::string::npos);
    CHECK(h.out.find("(default: the config's timeouts.test_seconds)") != std::string::npos);
  }
  CliResult bare = run_cli({state.path()}, {});
  CHECK(bare.exit_code == 2);
  CHECK(bare.out.empty());
  CHECK(bare.err.rfind("usage: lazyagent-oci COMMAND [OPTIONS]\n", 0) == 0);
  CHECK(bare.err.find("lazyagent-oci: no command given\n") != std::string::npos);
  CHECK(run_cli({state.path()}, {"--help"}).exit_code == 0);
}

// Item 9 ------------------------------------------------------------------------------------

TEST_CASE("export compose: a re-export into the stack reuses its seed and config, from anywhere, without --seed",
          "[records][export][quick]") {
  TempDir state, dir;
  const std::string names = "LAZYAGENT_IT_EXPORT_" + std::to_string(getpid());
  const std::string cfg = config_file(dir, "stack.yaml", {{"CODING_AGENT_BASE_URL", names + "_URL"},
                                                          {"CODING_AGENT_MODEL", names + "_MODEL"},
                                                          {"CODING_AGENT_API_KEY", names + "_KEY"}});
  const std::string out = dir.path() + "/stack";
  CliResult first = run_cli({state.path()}, {"export", "compose", "--config", cfg, "--out", out, "--json"});
  REQUIRE(first.exit_code == 0);
  CHECK(read_file(out + "/compose.yaml").find(names + "_KEY") != std::string::npos);
  CHECK(read_file(out + "/README.txt").find("lazyagent-oci export compose --patch patch.json --out .") != std::string::npos);

  // The second step as docs/exports.md shows it: no --seed, no --config, and
  // a config elsewhere (the default one) that names other secrets.
  const std::string patch = dir.file("patch.json", fixing_patch());
  CliResult again = run_cli({state.path(), {{"LAZYAGENT_CONFIG", std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml"}}},
                            {"export", "compose", "--patch", patch, "--out", out, "--json"});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(again.err.find("re-export into an earlier export: reusing its seed " + seed_dir() + ", config " + cfg) !=
        std::string::npos);
  const json j = parsed(again);
  CHECK(j["patched"] == true);
  CHECK_FALSE(j.contains("planner_secrets_changed"));
  const std::string compose = read_file(out + "/compose.yaml");
  CHECK(compose.find(names + "_KEY") != std::string::npos);
  CHECK(compose.find("CODING_AGENT_API_KEY") == std::string::npos);

  // Given explicitly, another config wins, and the change is said.
  CliResult other = run_cli({state.path()}, {"export", "compose", "--patch", patch, "--out", out, "--config",
                                             std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml", "--json"});
  REQUIRE(other.exit_code == 0);
  CHECK(parsed(other)["planner_secrets_changed"]["to"][2] == "CODING_AGENT_API_KEY");
  CHECK(other.err.find("note: the planner's secret names change from") != std::string::npos);
}

// Items 12 and 13 ---------------------------------------------------------------------------

TEST_CASE("Ctrl-C during test says the sandbox was removed, not which REST call it interrupted", "[records][cleanup][quick]") {
  for (bool as_json : {false, true}) {
    TempDir state;
    HangingTest run({state.path()}, as_json ? std::vector<std::string>{"--json"} : std::vector<std::string>{});
    REQUIRE(run.wait_until_running(120));
    kill(run.pid, SIGINT);
    CHECK(wait_cli(run.pid, 60) == 130);
    CHECK(containers_with_label(run.label).empty());
    const std::string err = run.err();
    INFO(err);
    CHECK(err.find("/wait?") == std::string::npos);
    CHECK(err.size() >= 60);
    CHECK(err.substr(err.rfind("lazyagent-oci: ")) == "lazyagent-oci: interrupted by SIGINT; the sandbox was removed\n");
    if (as_json) {
      const json j = json::parse(run.out());
      CHECK(j["error"] == "interrupted by SIGINT; the sandbox was removed");
      CHECK(j["error_kind"] == "interrupted");
      CHECK(j["exit_code"] == 130);
      CHECK(j["detail"].get<std::string>().find("interrupted by signal 2") != std::string::npos);
      CHECK(j["run_id"].get<std::string>().rfind("r-", 0) == 0);
    }
  }
}

TEST_CASE("test --no-baseline: the triage line says the baseline is off, not that a second side lacks a report",
          "[records][triage][quick]") {
  TempDir state, d;
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", d.file("p.json", fixing_patch()),
                                         "--no-baseline"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("per-test triage: off (--no-baseline: the seed's tests were not run unpatched)\n") != std::string::npos);
  CHECK(r.out.find("on both sides") == std::string::npos);
}

// Item 14 -----------------------------------------------------------------------------------

TEST_CASE("demo.sh with an unreachable configured provider says so and how to fall back, --scripted falls back",
          "[records][demo]") {
  TempDir state, dir;
  const std::string names = "LAZYAGENT_IT_DEMO_" + std::to_string(getpid());
  const std::string cfg = config_file(dir, "demo.yaml", {{"CODING_AGENT_BASE_URL", names + "_URL"},
                                                         {"CODING_AGENT_MODEL", names + "_MODEL"},
                                                         {"CODING_AGENT_API_KEY", names + "_KEY"},
                                                         {"max_retries: 3", "max_retries: 0"}});
  struct Secrets {
    std::string names;
    ~Secrets() {
      for (const char* s : {"_URL", "_MODEL", "_KEY"}) sh("podman secret rm " + names + s + " >/dev/null 2>&1");
    }
  } cleanup{names};
  // Configured, to an address nothing listens on.
  CliResult c = run_cli({state.path(), {{"LAZYAGENT_CONFIG", cfg}, {names + "_URL", "http://host.containers.internal:9/v1"},
                                        {names + "_MODEL", "m"}, {names + "_KEY", "k"}}},
                        {"configure"});
  REQUIRE(c.exit_code == 0);
  const std::string demo = std::string(LAZYAGENT_SOURCE_DIR) + "/scripts/demo.sh";
  const std::string env = "XDG_STATE_HOME=" + state.path() + " LAZYAGENT_CONFIG=" + cfg + " ";
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  const int status = std::system((env + demo + " --no-setup >" + out + " 2>" + err).c_str());
  INFO(read_file(err));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(read_file(err).find("cannot connect to the provider at http://host.containers.internal:9/v1") != std::string::npos);
  CHECK(read_file(err).find("==> the provider configured with `lazyagent-oci configure` is unreachable (see above).\n") !=
        std::string::npos);
  CHECK(read_file(err).find("==> to run the demo with the bundled scripted provider instead: scripts/demo.sh --scripted\n") !=
        std::string::npos);

  const int scripted = std::system((env + demo + " --no-setup --scripted --json >" + out + " 2>" + err).c_str());
  INFO(read_file(err));
  CHECK(WEXITSTATUS(scripted) == 0);
  CHECK(json::parse(read_file(out))["tests_passed"] == true);
  CHECK(read_file(err).find("==> using the bundled scripted provider (a stand-in, not a model): --scripted") != std::string::npos);
}
