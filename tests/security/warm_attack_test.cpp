// Warm spares (warm_spares.h) keep every invariant: a patch run in a claimed
// spare meets the same walls (network, secrets, privilege) as one in a
// sandbox made for it, and a forged spare (a container someone with podman
// access made with a real spare's labels but weaker isolation) is refused by
// the verifier before anything of the patch runs.
#include "test_paths.h"
#include <filesystem>

#include "attack_common.h"

using nlohmann::json;
using namespace it;
using namespace sec;
namespace fs = std::filesystem;

namespace {

std::string warm_config_text() {
  std::string text = read_file(std::string(LAZYAGENT_SOURCE_DIR) + "/config/lazyagent.yaml");
  const std::string at = "\nengine:\n";
  const auto pos = text.find(at);
  REQUIRE(pos != std::string::npos);
  text.insert(pos + at.size(), "  warm: 1\n");
  return text;
}

std::string probe(int port, const std::string& canary_name) {
  return "import os, socket, ctypes\n"
         "for host in ('127.0.0.1', 'host.containers.internal'):\n"
         "    try:\n"
         "        socket.create_connection((host, " + std::to_string(port) + "), timeout=2).close()\n"
         "        print('GAINED connect ' + host)\n"
         "    except Exception as e:\n"
         "        print('DENIED connect ' + host + ' ' + type(e).__name__)\n"
         "print('IFACES=' + ','.join(sorted(os.listdir('/sys/class/net'))))\n"
         "print('GAINED env' if '" + canary_name + "' in os.environ else 'DENIED env')\n"
         "try:\n"
         "    blob = open('/proc/1/environ', 'rb').read()\n"
         "    print('GAINED pid1 env' if b'" + canary_name + "' in blob else 'DENIED pid1 env')\n"
         "except Exception as e:\n"
         "    print('DENIED pid1 env ' + type(e).__name__)\n"
         "for line in open('/proc/self/status'):\n"
         "    if line.startswith(('CapEff', 'NoNewPrivs', 'Seccomp:')): print('STATUS ' + line.strip().replace(':\\t', '='))\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "r = libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)\n"
         "print('GAINED mount' if r == 0 else 'DENIED mount errno %d' % ctypes.get_errno())\n";
}

}  // namespace

TEST_CASE("attack through a warm spare: network, secrets, privilege", "[attack][warm]") {
  TempDir state, io;
  HostListener listener;
  const std::string config = io.file("warm.yaml", warm_config_text());
  CliResult made = run_cli({state.path()}, {"warm", "--seed", seed_dir(), "--config", config, "--json"});
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  // A secret in the orchestrator's own environment, as a user's shell has it.
  const std::string canary = "LAZYAGENT_WARM_CANARY_" + std::to_string(::getpid());
  const json j = run_attack({state.path(), {{canary, "secret-value"}}}, probe(listener.port(), canary),
                            {"--config", config});
  const std::string out = output(j);
  INFO(out);
  REQUIRE(j.contains("warm"));  // it really ran in the spare
  CHECK(has(out, "IFACES=lo\n"));
  CHECK(has(out, "DENIED connect 127.0.0.1"));
  CHECK(has(out, "DENIED connect host.containers.internal"));
  CHECK(has(out, "DENIED env"));
  CHECK(has(out, "DENIED pid1 env"));
  CHECK(has(out, "STATUS CapEff=0000000000000000"));
  CHECK(has(out, "STATUS NoNewPrivs=1"));
  CHECK(has(out, "STATUS Seccomp=2"));
  CHECK(has(out, "DENIED mount"));
  CHECK_FALSE(has(out, "GAINED"));
  CHECK(listener.accepted() == 0);
  CHECK(j["isolation_probe"]["violations"].empty());
  CHECK(j["tests_passed"] == true);
  evidence("warm spare " + j["warm"].dump() + "\n" + lines_with(out, "DENIED") + "\n" + lines_with(out, "STATUS"));
  const std::string lock = state.path() + "/lazyagent-oci/refill.lock";
  if (fs::exists(lock)) sh("flock " + lock + " true");
  CHECK(json_out(run_cli({state.path()}, {"reap", "--json"}))["errors"].empty());
}

TEST_CASE("attack: a forged warm spare with the host's network is refused by the verifier", "[attack][warm]") {
  TempDir state, io;
  HostListener listener;
  const std::string config = io.file("warm.yaml", warm_config_text());
  CliResult made = run_cli({state.path()}, {"warm", "--seed", seed_dir(), "--config", config, "--json"});
  REQUIRE(made.exit_code == 0);
  const std::string name = json_out(made)["made"][0];
  // The forger copies the real spare's labels, command and mounts, removes it
  // and makes its own under the same name with --network host.
  const json inspected = json::parse(sh("podman inspect " + name), nullptr, false);
  REQUIRE(inspected.is_array());
  std::string labels;
  for (const auto& [k, v] : inspected[0]["Config"]["Labels"].items()) {
    if (k.rfind("io.lazyagent.", 0) == 0) labels += " --label '" + k + "=" + v.get<std::string>() + "'";
  }
  REQUIRE(labels.find("io.lazyagent.spare-key=") != std::string::npos);
  const std::string dir = state.path() + "/lazyagent-oci/work/spare-" + name.substr(16);
  REQUIRE(sh("podman rm -f " + name + " >/dev/null && echo ok") == "ok\n");
  REQUIRE(sh("podman create --name " + name + " --network host" + labels + " -v " + dir +
             "/seed:/seed:ro localhost/lazyagent-sandbox:latest python3 -c \"import socket; socket.create_connection(('127.0.0.1', " +
             std::to_string(listener.port()) + "), timeout=2)\" >/dev/null && podman init " + name +
             " >/dev/null && echo ok") == "ok\n");
  CliResult r = run_cli({state.path()}, {"test", "--seed", seed_dir(), "--patch", io.file("fix.json", fixing_patch()),
                                         "--config", config, "--json"});
  INFO(r.err << "\n" << r.out.substr(0, 3000));
  // The forged spare was claimed and refused before start: nothing of it ran.
  CHECK(has(r.out + r.err, "does not match the policy"));
  CHECK(has(r.out + r.err, "network"));
  CHECK(listener.accepted() == 0);
  evidence("forged spare: " + lines_with(r.err, "==> warm") + "\nexit " + std::to_string(r.exit_code));
  // Removed after the result (engine.warm), like every sandbox the run used.
  const std::string lock = state.path() + "/lazyagent-oci/refill.lock";
  if (fs::exists(lock)) sh("flock " + lock + " true");
  CHECK(containers_with_label("io.lazyagent.run=spare-" + name.substr(16)).empty());
  CHECK(json_out(run_cli({state.path()}, {"reap", "--json"}))["errors"].empty());
}
