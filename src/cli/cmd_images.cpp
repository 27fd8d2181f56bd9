// `lazyagent-oci images list|build`: the container images the tool itself
// needs (docs/install.md). `list` asks the podman service which of them it
// has; `build` runs the image builder installed beside this binary
// (share/lazyagent-oci/scripts/build-images.sh, or scripts/ of the checkout a
// build-tree binary came from), the same builds as scripts/setup.sh, with this
// binary as the planner image's.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "engine/podman/egress_proxy.h"
#include "engine/podman/podman_client.h"
#include "util/digest.h"
#include "util/terminal_text.h"

extern char** environ;

namespace lazyagent {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The images `images build` makes by default, in build order, and what needs
// each. The llama image (tests against a real model server) is built only
// when asked for by name.
struct ToolImage {
  std::string name;  // build-images.sh --only NAME
  std::string ref;
  std::string needed_by;
};

std::vector<ToolImage> tool_images(const Config& c) {
  return {{"base", "localhost/lazyagent-base:bookworm", "the other images (Debian minbase, debootstrap)"},
          {"sandbox", c.images.sandbox, "test, eval, sessions (images.sandbox)"},
          {"planner", c.images.planner, "run and the planner's tool loop (images.planner)"},
          {"egress-proxy", kEgressProxyImage, "environment.egress and provider.network: allowlist"}};
}

const std::vector<std::string> kBuildable = {"base", "sandbox", "planner", "planner-runtime", "egress-proxy", "llama"};

std::string build_command(const std::string& name) { return "lazyagent-oci images build --only " + name; }

// The image builder next to this binary: LAZYAGENT_SHARE_DIR, the install's
// share/lazyagent-oci, or the checkout of a build-tree binary.
Result<fs::path> image_builder(fs::path* share_dir) {
  std::vector<fs::path> roots;
  if (const char* d = std::getenv("LAZYAGENT_SHARE_DIR"); d != nullptr && *d != '\0') roots.emplace_back(d);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    roots.push_back(exe.parent_path().parent_path() / "share" / "lazyagent-oci");
    roots.push_back(exe.parent_path().parent_path());  // build/lazyagent-oci in a checkout
  }
  std::string looked;
  for (const auto& r : roots) {
    const fs::path script = r / "scripts" / "build-images.sh";
    if (fs::is_regular_file(script, ec)) {
      *share_dir = r;
      return script;
    }
    looked += (looked.empty() ? "" : ", ") + script.string();
  }
  return usage_error("images build: no image builder beside this binary (looked at " + looked +
                     "): install the package's data files (share/lazyagent-oci), or set LAZYAGENT_SHARE_DIR "
                     "to the directory holding scripts/build-images.sh and images/");
}

Result<json> list_images(const Config& config) {
  auto socket = podman_socket_from_env();
  if (!socket) return socket.error();
  PodmanClient podman(*socket);
  json rows = json::array();
  for (const auto& img : tool_images(config)) {
    auto r = podman.image_inspect(img.ref, img.name);
    json row = {{"name", img.name}, {"image", img.ref}, {"needed_by", img.needed_by}, {"present", r.ok()}};
    if (r) {
      row["image_id"] = r->value("Id", "");
      row["created"] = r->value("Created", "");
      row["size_bytes"] = r->value("Size", 0L);
    } else if (r.error().message.find("image not found") == std::string::npos) {
      return r.error().context("images list");  // not a missing image: the service itself
    } else {
      row["build"] = build_command(img.name);
    }
    rows.push_back(std::move(row));
  }
  return json{{"images", rows}};
}

void print_list(const json& listed) {
  for (const auto& row : listed["images"]) {
    const std::string name = row["name"];
    std::cout << name << std::string(name.size() < 13 ? 13 - name.size() : 1, ' ')
              << escape_for_terminal(row["image"].get<std::string>());
    if (row["present"] == true) {
      std::cout << "  " << image_hash_text(row["image_id"].get<std::string>()) << ", "
                << row["size_bytes"].get<long>() / (1024 * 1024) << " MiB\n";
    } else {
      std::cout << "  missing: " << row["build"].get<std::string>() << "\n";
    }
    std::cout << "             needed by " << row["needed_by"].get<std::string>() << "\n";
  }
}

// Runs the builder with the args; its output goes to stderr under --json,
// else to the terminal as it comes. Returns its exit status.
Result<int> run_builder(const fs::path& script, const fs::path& share, const std::vector<std::string>& args, bool to_stderr) {
  std::vector<std::string> words = {"bash", script.string()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  // The planner image gets this binary; the builder's files are the share dir's.
  std::vector<std::string> env_words;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (kv.rfind("LAZYAGENT_ROOT=", 0) == 0 || kv.rfind("LAZYAGENT_BINARY=", 0) == 0) continue;
    env_words.push_back(kv);
  }
  env_words.push_back("LAZYAGENT_ROOT=" + share.string());
  if (!ec) env_words.push_back("LAZYAGENT_BINARY=" + exe.string());
  std::vector<char*> envp;
  for (auto& w : env_words) envp.push_back(w.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (to_stderr) posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, "bash", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return engine_error(std::string("images build: cannot start bash: ") + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return engine_error(std::string("images build: waiting for the builder: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

int cmd_images(const std::vector<std::string>& args) {
  std::string verb, config_path, network;
  std::vector<std::string> only;
  bool rebuild = false, as_json = false;
  ArgParser p("images", "list [--config FILE] [--json] | build [--only NAME]... [--rebuild] [--network MODE] [--json]",
              "The container images lazyagent-oci itself needs: the Debian base, the sandbox, the planner\n"
              "and the egress proxy. list: which the podman service has (id, size), and the command that\n"
              "builds a missing one. build: builds them locally, without any registry (debootstrap from the\n"
              "host's apt sources, then podman build), each only when missing or when its recipe changed;\n"
              "needs root. The planner image gets this binary. Uses the builder installed with the tool\n"
              "(share/lazyagent-oci/scripts/build-images.sh; LAZYAGENT_SHARE_DIR points elsewhere).");
  p.positional("VERB", &verb, true, "list or build", {"list", "build"});
  p.option("--config", &config_path, "FILE", kConfigOptionHelp);
  p.repeated("--only", &only, "NAME", "build: just this image (repeatable): base, sandbox, planner, egress-proxy, "
                                      "or llama (the tests' model server)");
  p.choices("--only", kBuildable);
  p.flag("--rebuild", &rebuild, "build: rebuild even when present and up to date");
  p.option("--network", &network, "MODE", "build: the network of podman build's RUN steps (default: podman's)");
  p.flag("--json", &as_json, "print one JSON object on stdout (build: the list after building; progress on stderr)");
  if (auto done = parse_or_exit(p, args)) return *done;
  if (verb != "list" && verb != "build") {
    return report_error(usage_error("images: expected list or build, got '" + verb + "'"), as_json);
  }
  if (verb == "list" && (!only.empty() || rebuild || !network.empty())) {
    return report_error(usage_error("images list: --only, --rebuild and --network are options of images build"), as_json);
  }
  for (const auto& o : only) {
    if (std::find(kBuildable.begin(), kBuildable.end(), o) == kBuildable.end()) {
      std::string names;
      for (const auto& b : kBuildable) names += (names.empty() ? "" : ", ") + b;
      return report_error(usage_error("images build: --only: no image '" + o + "' (one of " + names + ")"), as_json);
    }
  }
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), as_json);

  if (verb == "build") {
    if (::geteuid() != 0) {
      return report_error(usage_error("images build: needs root (debootstrap and root's podman storage); "
                                      "a rootless user gets the images from root with scripts/setup-rootless.sh"),
                          as_json);
    }
    fs::path share;
    auto script = image_builder(&share);
    if (!script) return report_error(script.error(), as_json);
    std::vector<std::string> words;
    if (only.empty()) only = {"base", "sandbox", "planner", "egress-proxy"};
    for (const auto& o : only) words.insert(words.end(), {"--only", o});
    if (rebuild) words.push_back("--rebuild");
    if (!network.empty()) words.insert(words.end(), {"--network", network});
    auto rc = run_builder(*script, share, words, as_json);
    if (!rc) return report_error(rc.error(), as_json);
    if (*rc != 0) {
      return report_error(engine_error("images build: " + script->string() + " exited " + std::to_string(*rc) +
                                       " (its output above says why)"),
                          as_json);
    }
  }
  auto listed = list_images(*config);
  if (!listed) return report_error(listed.error(), as_json);
  if (as_json) {
    std::cout << listed->dump(2) << std::endl;
  } else {
    print_list(*listed);
  }
  return 0;
}

}  // namespace lazyagent
