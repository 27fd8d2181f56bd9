#include "export/export_compose.h"

#include <sstream>

#include "contract/planner_task.h"
#include "util/yaml_text.h"

namespace lazyagent {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// Compose interpolates $VAR and ${VAR} in every string; $$ is a literal $.
ordered_json escape_dollars(const ordered_json& v) {
  if (v.is_string()) {
    std::string out;
    for (char c : v.get<std::string>()) {
      out += c;
      if (c == '$') out += '$';
    }
    return out;
  }
  if (v.is_array() || v.is_object()) {
    ordered_json copy = v;
    for (auto& item : copy) item = escape_dollars(item);
    return copy;
  }
  return v;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

ordered_json ulimits(std::int64_t nofile, std::int64_t nproc) {
  return {{"nofile", {{"soft", nofile}, {"hard", nofile}}}, {"nproc", {{"soft", nproc}, {"hard", nproc}}}};
}

// The planner links the secrets podman mounts under their own names to the
// names `plan` reads, in a directory of its own on the /tmp tmpfs (podman-
// compose 1.3.0 refuses a `target` for external secrets). $1..$3: the podman
// secret names, passed as arguments so that nothing is spliced into the script.
constexpr const char* kPlannerScript =
    "d=/tmp/lazyagent-secrets && mkdir -m 700 \"$d\" && "
    "ln -s \"/run/secrets/$1\" \"$d/base_url\" && ln -s \"/run/secrets/$2\" \"$d/model\" && "
    "ln -s \"/run/secrets/$3\" \"$d/api_key\" && "
    "exec /usr/local/bin/lazyagent-oci plan --task /task/task.json --secrets-dir \"$d\"";

ordered_json planner_service(const ExportInput& in) {
  const PlannerRequest& r = in.planner;
  // Environment and tmpfs sizes come from the planner's own create request,
  // so the two never drift apart.
  const json spec = build_planner_spec(r);
  ordered_json tmpfs = ordered_json::array();
  for (const auto& m : spec["mounts"]) {
    tmpfs.push_back(m["destination"].get<std::string>() + ":" +
                    join(m["options"].get<std::vector<std::string>>(), ","));
  }
  ordered_json env = ordered_json::object();
  for (const auto& [k, v] : spec["env"].items()) env[k] = v;
  return {
      {"image", r.image},
      {"entrypoint", {"/bin/sh", "-c", kPlannerScript, "lazyagent-plan", r.base_url_secret,
                      r.model_secret, r.api_key_secret}},
      {"network_mode", r.network},
      {"read_only", true},
      {"cap_drop", {"ALL"}},
      {"security_opt", {"no-new-privileges"}},
      {"tmpfs", tmpfs},
      {"secrets", {r.base_url_secret, r.model_secret, r.api_key_secret}},
      {"volumes", {std::string("./") + kComposeTaskDir + ":" + kTaskDir + ":ro"}},
      {"environment", env},
      {"working_dir", "/"},
      {"hostname", "planner"},
      {"mem_limit", r.memory_bytes},
      {"memswap_limit", r.memory_bytes},
      {"pids_limit", r.pids},
      {"cpus", 1},
      {"ulimits", ulimits(r.nofile, r.nproc)},
      {"labels", {{kLabelRole, "planner"}, {"io.lazyagent.export", "compose"}}},
  };
}

ordered_json sandbox_service(const ExportInput& in) {
  const SandboxPolicy& p = in.policy;
  ordered_json env = ordered_json::object();
  for (const auto& [k, v] : p.env) env[k] = v;
  return {
      {"image", p.image},
      // The whole program as the entrypoint: whatever the image's own
      // ENTRYPOINT or CMD, this is what runs.
      {"entrypoint", sandbox_command(in.config.test_command, p.log_bytes, egress_targets_arg(p))},
      {"network_mode", "none"},
      {"read_only", true},
      {"cap_drop", {"ALL"}},
      {"security_opt", {"no-new-privileges"}},
      {"tmpfs", {std::string(kWorkDir) + ":" + join(work_tmpfs_options(p), ","),
                 std::string(kTmpDir) + ":" + join(tmp_tmpfs_options(p), ",")}},
      {"volumes", {std::string("./") + kComposeSeedDir + ":" + kSeedMount + ":ro"}},
      {"environment", env},
      {"working_dir", "/"},
      {"hostname", p.hostname},
      {"mem_limit", p.memory_bytes},
      {"memswap_limit", p.memory_bytes},
      {"pids_limit", p.pids},
      {"cpus", static_cast<double>(p.cpu_quota) / static_cast<double>(p.cpu_period)},
      {"ulimits", ulimits(p.nofile, p.nproc)},
      {"logging", {{"driver", "k8s-file"}, {"options", {{"max-size", std::to_string(p.log_bytes + 64 * 1024)}}}}},
      {"labels", {{kLabelRole, "sandbox"}, {"io.lazyagent.export", "compose"}}},
  };
}

std::string run_script(const std::string& service, const std::string& run_args, const std::string& what) {
  return "#!/bin/sh\n"
         "# " + what + "\n"
         "# podman-compose 1.3.0 does not translate pids_limit or memswap_limit from\n"
         "# compose.yaml, and podman run adds tmpfs and environment of its own: the\n"
         "# flags below close those gaps (README.txt). Exit status: the container's.\n"
         "cd \"$(dirname \"$0\")\" || exit 2\n"
         "exec podman-compose -f compose.yaml --podman-run-args='" + run_args + "' run --rm -T " +
         service + "\n";
}

std::string compose_readme(const ExportInput& in, const ExportBundle& b) {
  std::ostringstream o;
  o << "lazyagent-oci export: podman-compose stack\n"
       "==========================================\n\n"
       "Two services, each run on its own (they share nothing: no pod, no network):\n\n"
       "  planner  asks the model for a patch; reads the provider's base URL, model and\n"
       "           API key from the podman secrets " << in.planner.base_url_secret << ", "
    << in.planner.model_secret << "\n           and " << in.planner.api_key_secret
    << " (create them with `lazyagent-oci configure`);\n"
       "           prints the patch JSON on stdout. Its task is task/task.json.\n"
       "  sandbox  runs `" << in.config.test_command << "` on "
    << (in.patched() ? "the patched copy" : "an UNPATCHED copy") << " of the seed in seed/,\n"
       "           with no network and no secrets.\n\n";
  if (!in.patched()) {
    o << "No patch was given, so seed/ holds the seed as it is. The patch goes into seed/\n"
         "by exporting again: that validates it against the patch contract first. From\n"
         "this directory:\n\n"
         "  ./run-planner.sh > patch.json\n"
         "  lazyagent-oci export compose --patch patch.json --out .\n\n";
  }
  o << "A re-export into this directory reads the same input as this export unless\n"
       "given again (recorded in .lazyagent-export.json): the seed "
    << in.seed.root << ",\nthe config "
    << (in.config.source.empty() ? std::string("(none: the built-in defaults)") : in.config.source)
    << " (it names the planner's secrets) and the flags given.\n\n";
  o << "Needs podman-compose >= 1.0.6 (tested with 1.3.0; Debian 12's 1.0.3 fails on\n"
       "`network_mode: none`). Run, from this directory:\n\n" << b.how_to_run << "\n"
       "Always use the run scripts rather than plain `podman-compose up`: they pass the\n"
       "podman flags compose.yaml cannot carry (see below).\n\n"
       "Reading the result: run-sandbox.sh exits with the test command's status (0\n"
       "passed, 1 failed, 125 podman could not run it or the copy into /work failed,\n"
       "137 killed by the memory limit, 255 killed by the timeout). Exit 0 alone is\n"
       "not proof: `lazyagent-oci test` also requires the runner's report at the end\n"
       "of the output (\"Ran N tests ... OK\"). The output starts with\n"
       "\"lazyagent-probe:\" lines, printed by the sandbox before the tests run: the\n"
       "interfaces, capabilities, no_new_privs, seccomp mode, root and environment\n"
       "names it really got.\n\n"
       "Enforced (sandbox, with run-sandbox.sh):\n";
  for (const auto& line : b.enforced) o << "  - " << line << "\n";
  o << "\nNot enforced:\n";
  for (const auto& line : b.not_enforced) o << "  - " << line << "\n";
  return o.str();
}

}  // namespace

ordered_json compose_document(const ExportInput& in) {
  ordered_json secrets = ordered_json::object();
  for (const auto& s : {in.planner.base_url_secret, in.planner.model_secret, in.planner.api_key_secret}) {
    secrets[s] = {{"external", true}};
  }
  return escape_dollars(ordered_json{
      {"name", in.name},
      {"x-podman", {{"in_pod", false}}},
      {"services", {{"planner", planner_service(in)}, {"sandbox", sandbox_service(in)}}},
      {"secrets", secrets},
  });
}

std::string sandbox_run_args(const SandboxPolicy& p) {
  return "--pids-limit=" + std::to_string(p.pids) + " --memory-swap=" + std::to_string(p.memory_bytes) +
         " --read-only-tmpfs=false --unsetenv-all --timeout=" + std::to_string(p.timeout_seconds);
}

std::string planner_run_args(const PlannerRequest& r) {
  return "--pids-limit=" + std::to_string(r.pids) + " --memory-swap=" + std::to_string(r.memory_bytes) +
         " --read-only-tmpfs=false --unsetenv-all --timeout=" + std::to_string(r.timeout_seconds);
}

Result<ExportBundle> export_compose(const ExportInput& in) {
  const SandboxPolicy& p = in.policy;
  ExportBundle b;
  b.enforced = {
      "network: network_mode none, only the loopback interface",
      "privileges: cap_drop ALL, no-new-privileges, podman's default seccomp profile",
      "filesystem: read-only root; /work (" + size_text(p.work_tmpfs_bytes) + ") and /tmp (" +
          size_text(p.tmp_tmpfs_bytes) + ", noexec) size-capped tmpfs; /seed a read-only bind of seed/ "
          "(a copy this export wrote, never your seed directory)",
      "resources: memory " + size_text(p.memory_bytes) + " (mem_limit), cpus, ulimits nofile " +
          std::to_string(p.nofile) + " / nproc " + std::to_string(p.nproc) + "; pids " +
          std::to_string(p.pids) + " and no swap through run-sandbox.sh",
      "time: podman kills the sandbox after " + std::to_string(p.timeout_seconds) +
          " s (--timeout in run-sandbox.sh)",
      "environment: exactly the allowlist (environment + --unsetenv-all in run-sandbox.sh)",
      "secrets: none in the sandbox; the planner gets the three provider secrets as files, by name",
      "output: the sandbox itself keeps the head and the tail of the test's output (" +
          std::to_string(p.log_bytes) + " bytes in all)",
  };
  b.not_enforced = {
      "podman-compose 1.3.0 ignores pids_limit and memswap_limit: plain `podman-compose up` or "
      "`run` without the scripts' flags leaves podman's defaults (2048 pids, swap up to the "
      "memory limit again where the host has swap), writable uncapped tmpfs at /run and /var/tmp, "
      "podman's extra environment and no deadline",
      "verification: nothing reads the effective configuration back before start, as "
      "`lazyagent-oci test` does",
      "terminal safety: podman-compose prints the sandbox's bytes unescaped; redirect to a file",
      "/seed: read-only, but compose's volume syntax cannot add nosuid/nodev/noexec to a bind",
      "image pinning: images are referenced by tag (" + p.image + "), not by digest",
      "patch validation: compose does not validate the planner's patch; export again with "
      "--patch, which does",
      "planner network: network_mode " + in.planner.network + " reaches every host the "
      "provider could, not only the provider",
      "removal: `run --rm` removes each container when it exits; after a crash of "
      "podman-compose itself, `podman-compose -f compose.yaml down` removes what is left",
  };
  b.how_to_run =
      "./run-sandbox.sh > output.txt 2>&1; echo \"exit status $?\"; cat -v output.txt\n"
      "./run-planner.sh > patch.json        # needs the provider secrets and the planner image\n";
  const PlannerTask task = build_task(in.seed, in.config, in.instruction, "export-" + in.name);
  auto yaml = to_yaml(compose_document(in));
  if (!yaml) return yaml.error().context("compose export: compose.yaml");
  b.files.push_back({"compose.yaml",
                     yaml_comment("lazyagent-oci export compose: planner and sandbox services.\n"
                                  "Run the services with run-planner.sh / run-sandbox.sh (README.txt).") +
                         *yaml,
                     0644});
  b.files.push_back({std::string(kComposeTaskDir) + "/task.json", task_to_json(task).dump(2) + "\n", 0644});
  b.files.push_back({"run-sandbox.sh",
                     run_script("sandbox", sandbox_run_args(p), "Runs the test sandbox service."), 0755});
  b.files.push_back({"run-planner.sh",
                     run_script("planner", planner_run_args(in.planner),
                                "Runs the planner service; the patch JSON arrives on stdout."),
                     0755});
  b.files.push_back({"README.txt", compose_readme(in, b), 0644});
  return b;
}

}  // namespace lazyagent
