// Invariants 2 and 7: no secret name or value reaches the sandbox, and the
// provider key never reaches logs, records or output. The key is stored the
// way users store it (`lazyagent-oci configure` into podman secrets, unique
// names), the planner really uses it against the project's scripted
// provider, and the model's reply is a patch that hunts for it inside the
// sandbox: environment, every /proc/*/environ and cmdline, /run/secrets, and
// every file outside /proc, /sys, /dev and /usr (the image). The control
// hands the same secret to a container the way podman hands it to the
// planner, and the same hunt must find it there.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "attack_common.h"
#include "provider/provider_stub.h"

using nlohmann::json;
using namespace it;
using namespace sec;
namespace fs = std::filesystem;

namespace {

// The needle as two Python literals joined at run time: the patch holding the
// hunt must not contain the needle it hunts for.
std::string split_literal(const std::string& s) {
  const auto h = s.size() / 2;
  return "('" + s.substr(0, h) + "' + '" + s.substr(h) + "')";
}

std::string hunt(const std::vector<std::string>& needles) {
  std::string list = "[";
  for (const auto& n : needles) list += split_literal(n) + ",";
  list += "]";
  return "import os, glob\n"
         "NEEDLES = " + list + "\n"
         "found = []\n"
         "def look(where, blob):\n"
         "    for i, n in enumerate(NEEDLES):\n"
         "        if n in blob: found.append('%d %s' % (i, where))\n"
         "look('os.environ', repr(dict(os.environ)))\n"
         "scanned = 0\n"
         "paths = glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline') + glob.glob('/run/secrets/*')\n"
         "for top in ('/',):\n"
         "    for root, dirs, files in os.walk(top):\n"
         "        if root == '/': dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'dev', 'usr')]\n"
         "        paths += [os.path.join(root, f) for f in files]\n"
         "for root, dirs, files in os.walk('/usr/local'):\n"
         "    paths += [os.path.join(root, f) for f in files]\n"
         "for p in paths:\n"
         "    try:\n"
         "        if os.path.islink(p) or not os.path.isfile(p): continue\n"
         "        with open(p, 'rb') as f: look(p, f.read(4 << 20).decode('latin-1'))\n"
         "        scanned += 1\n"
         "    except Exception: pass\n"
         "print('SCANNED %d files' % scanned)\n"
         "print('RUN_SECRETS=' + ','.join(sorted(os.listdir('/run/secrets'))) if os.path.isdir('/run/secrets') else 'RUN_SECRETS absent')\n"
         "for f in found: print('SECRET_FOUND ' + f)\n"
         "if not found: print('NO_SECRET_FOUND')\n";
}

std::string content_of(const std::string& patch_json) { return json::parse(patch_json).dump(); }

}  // namespace

TEST_CASE("attack: hunt for the configured provider key and host secrets from the sandbox", "[attack][secrets]") {
  const std::string tag = std::to_string(getpid());
  const std::string key = "sk-lazyagent-sec-" + tag + "-c0ffee";
  const std::string env_canary = "lazyagent-env-canary-" + tag;
  const std::string file_canary = "lazyagent-file-canary-" + tag;
  const std::string prefix = "LAZYAGENT_SEC_" + tag;
  const std::vector<std::string> names = {prefix + "_BASE_URL", prefix + "_MODEL", prefix + "_API_KEY"};

  lazyagent::StubScript script;
  script.api_key = key;
  lazyagent::StubReply reply;
  reply.content = content_of(attack_patch(hunt({key, env_canary, file_canary})));
  script.replies = {reply};
  lazyagent::ProviderStub stub(script);
  auto port = stub.listen("0.0.0.0", 0);
  REQUIRE(port.ok());

  TempDir state, dir;
  dir.file("canary.txt", file_canary);          // a host file next to the config
  state.file("canary.txt", file_canary);        // and one in the CLI's state dir
  const std::string config = dir.file("config.yaml", "seed: " + seed_dir() + "\nprovider:\n  secrets:\n    base_url: " +
                                                         names[0] + "\n    model: " + names[1] + "\n    api_key: " +
                                                         names[2] + "\n  max_retries: 0\n");
  struct SecretsGone {
    std::vector<std::string> names;
    ~SecretsGone() {
      for (const auto& n : names) sh("podman secret rm " + n + " >/dev/null 2>&1");
    }
  } cleanup{names};
  CliResult conf = run_cli({state.path(), {{names[0], "http://host.containers.internal:" + std::to_string(*port) + "/v1"},
                                           {names[1], "lazyagent-stub"}, {names[2], key}}},
                           {"configure", "--config", config});
  INFO(conf.err);
  REQUIRE(conf.exit_code == 0);

  // The CLI runs with secrets in its own environment too.
  CliResult r = run_cli({state.path(), {{"CODING_AGENT_API_KEY", env_canary}, {names[2], env_canary},
                                        {"AWS_SECRET_ACCESS_KEY", env_canary}}},
                        {"run", "--config", config, "--json"});
  INFO("stderr: " << r.err << "\nstdout: " << r.out.substr(0, 3000));
  json j = json::parse(r.out, nullptr, false);
  REQUIRE(j.is_object());
  const std::string out = j.value("test_output", "");
  CHECK(r.exit_code == 0);
  CHECK(stub.requests() == 1);  // the planner really used the key
  CHECK(has(out, "NO_SECRET_FOUND"));
  CHECK_FALSE(has(out, "SECRET_FOUND "));
  CHECK(has(out, "RUN_SECRETS absent"));
  const std::string scanned = lines_with(out, "SCANNED");
  REQUIRE(scanned.size() > 8);
  CHECK(std::stoi(scanned.substr(8)) > 50);  // the hunt really read files
  // Nor does the key reach anything the host keeps or prints.
  const std::string kept = read_tree(state.path());
  CHECK_FALSE(has(kept, key));
  CHECK_FALSE(has(r.out + r.err + conf.out + conf.err, key));
  CHECK_FALSE(has(r.out + r.err, env_canary));
  evidence("planner requests with the key: " + std::to_string(stub.requests()) + "; sandbox: " + scanned + ", " +
           lines_with(out, "RUN_SECRETS") + ", " + lines_with(out, "NO_SECRET_FOUND") +
           "; key in state dir/stdout/stderr: " + (has(kept + r.out + r.err, key) ? "yes" : "no"));
}

TEST_CASE("attack control: the same hunt finds the key in a container given the podman secret", "[attack][secrets][control][quick]") {
  const std::string tag = std::to_string(getpid());
  const std::string key = "sk-lazyagent-ctl-" + tag + "-beef";
  const std::string name = "LAZYAGENT_SEC_CTL_" + tag;
  TempDir dir;
  const std::string value = dir.file("value", key);
  REQUIRE(sh("podman secret create " + name + " " + value + " >/dev/null 2>&1 && echo ok") == "ok\n");
  const std::string out = run_control("--network none --secret " + name + ",target=api_key -e LEAK=" + key, hunt({key}));
  sh("podman secret rm " + name + " >/dev/null 2>&1");
  INFO(out);
  CHECK(has(out, "SECRET_FOUND 0 os.environ"));
  CHECK(has(out, "SECRET_FOUND 0 /run/secrets/api_key"));
  CHECK(has(out, "RUN_SECRETS=api_key"));
  evidence("control (podman --secret, -e): " + lines_with(out, "SCANNED") + "\n" + lines_with(out, "SECRET_FOUND"));
}
