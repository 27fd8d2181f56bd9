// `lazyagent-oci export oci|compose|k8s`: the sandbox policy for other engines.
//
// A list of named steps: read the input (config, seed, patch: the same
// contract as `test`, so a refused patch never reaches an export), build the
// target's documents (pure: export_oci.h, export_compose.h, export_k8s.h),
// then write them into --out (export_writer.h), with the private seed copy
// and, for oci, the sandbox image's root filesystem (image_rootfs.h).
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "contract/change_set.h"
#include "util/elapsed.h"
#include "export/export_compose.h"
#include "export/export_k8s.h"
#include "export/export_oci.h"
#include "export/export_writer.h"
#include "engine/podman/image_rootfs.h"
#include "engine/podman/podman_client.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {


struct ExportOptions {
  std::string target;
  std::string out;
  ProjectOptions project;
  std::string patch;
  long timeout = 0;
  std::string k8s_namespace = "default";
  std::string name = "lazyagent";
  std::string instruction;
  bool force = false;
  bool json = false;
};

// One row per target: its documents, and what else goes beside them.
struct ExportTarget {
  const char* name;
  Result<ExportBundle> (*build)(const ExportInput&);
  bool seed_copy;  // writes seed/ (the private copy, + the patch)
  bool rootfs;     // writes rootfs/ (the sandbox image's filesystem) + image.json
};

Result<ExportBundle> build_oci(const ExportInput& in) { return export_oci(in); }

const std::vector<ExportTarget>& targets() {
  static const std::vector<ExportTarget> table = {
      {"oci", build_oci, true, true},
      {"compose", export_compose, true, false},
      {"k8s", export_k8s, false, false},
  };
  return table;
}

using Clock = std::chrono::steady_clock;

// Names end up in compose project names and Kubernetes resource names:
// RFC 1123 labels, short enough for suffixes.
Status check_dns_label(const std::string& flag, const std::string& v) {
  bool ok = !v.empty() && v.size() <= 40 && v.front() != '-' && v.back() != '-';
  for (char c : v) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (ok) return ok_status();
  return usage_error("export: " + flag + " '" + v + "': use 1-40 lowercase letters, digits and '-', "
                     "starting and ending with a letter or digit");
}

// A refused patch: every finding, like `test` (exit 4).
int report_refused(const std::vector<Finding>& findings, bool as_json) {
  const std::string msg = "patch refused: " + std::to_string(findings.size()) + " finding(s); nothing was exported";
  if (as_json) {
    const json f = findings_to_json(findings);
    std::cout << json{{"error", msg}, {"error_kind", "patch"}, {"exit_code", kExitRefused}, {"findings", f}}
                     .dump(2, ' ', false, json::error_handler_t::replace)
              << std::endl;
  }
  std::cerr << "lazyagent-oci: export: " << msg << "\n";
  for (const auto& x : findings) {
    std::cerr << "  " << x.code << (x.path.empty() ? "" : " [" + escape_for_terminal(x.path) + "]") << ": "
              << escape_for_terminal(x.message) << "\n";
  }
  return kExitRefused;
}

// The effective config, the policies, the seed and the validated patch.
// A refused patch comes back as findings (and no input).
struct InputOrFindings {
  std::optional<ExportInput> input;
  std::vector<Finding> findings;
};

Result<InputOrFindings> read_input(const ExportOptions& opt) {
  auto config = project_config(opt.project, "export");
  if (!config) return config.error();
  ExportInput in;
  in.config = *config;
  std::error_code ec;  // absolute: the README and the marker name it for a re-export from anywhere
  if (!in.config.source.empty()) in.config.source = std::filesystem::absolute(in.config.source, ec).string();
  in.policy = policy_from_config(in.config, opt.timeout ? opt.timeout : in.config.timeouts.test_seconds);
  in.planner = planner_request_from_config(in.config);
  in.name = opt.name;
  in.k8s_namespace = opt.k8s_namespace;
  in.instruction = opt.instruction;
  // The seed as `test` reads it (seed_source.h: a directory or a git work
  // tree, seed.exclude applied, streamed), and the patch resolved against it
  // as `test` resolves it (change_set.h): an export holds what `test` proves.
  auto seed = snapshot_seed_source(in.config.seed, in.config.seed_options);
  if (!seed) return seed.error().context("export: reading the seed");
  in.seed = std::move(*seed);
  in.writes = std::vector<FileWrite>{};
  InputOrFindings r;
  if (!opt.patch.empty()) {
    auto text = read_patch_file(opt.patch);
    if (!text) return text.error();
    // Either form, told apart as `test` tells it (patch_format.h): whole
    // files or a unified diff, resolved against the seed the same way.
    PatchCheck check = check_patch_text(*text, contract_limits(in.config));
    if (!check.ok()) {
      r.findings = std::move(check.findings);
      return r;
    }
    if (check.format == PatchFormat::kFiles) {
      if (auto f = check_patch_against_seed(in.seed, check.files); !f.empty()) {
        r.findings = std::move(f);
        return r;
      }
    }
    ChangeResult changes = resolve_changes(check, in.seed);
    if (!changes.ok()) {
      r.findings = std::move(changes.findings);
      return r;
    }
    in.writes = copy_writes(changes.changes);
    in.patch_sha256 = check.sha256;
    in.changed_paths = changed_paths(changes.changes);
    if (check.format == PatchFormat::kFiles) in.patch = std::move(check.files);
  }
  r.input = std::move(in);
  return r;
}

// The image's id from an earlier export's image.json ("" when absent).
std::string previous_image_id(const ExportDir& dir) {
  std::ifstream f(dir.at("image.json"));
  std::stringstream ss;
  ss << f.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  return j.is_object() ? j.value("image_id", "") : "";
}

// podman, the sandbox image's identity, and whether the rootfs/ of a
// complete earlier export of the same image id can stay (a re-export with a
// new patch then takes a second instead of extracting the image again).
struct RootfsPlan {
  std::unique_ptr<PodmanClient> podman;
  RootfsInfo image;
  bool reuse = false;
};

Result<RootfsPlan> plan_rootfs(const std::string& image) {
  auto socket = podman_socket_from_env();
  if (!socket) return socket.error();
  RootfsPlan plan;
  plan.podman = std::make_unique<PodmanClient>(*socket);
  if (auto v = plan.podman->ping(); !v) return v.error();
  auto info = inspect_image(*plan.podman, image);
  if (!info) return info.error();
  plan.image = *info;
  return plan;
}

Status write_rootfs(RootfsPlan& plan, ExportDir& dir) {
  if (!plan.reuse) {
    const std::string dest = dir.at(kOciRootfsDir);
    if (::mkdir(dest.c_str(), 0755) != 0) return engine_error("creating " + dest + ": " + std::strerror(errno));
    if (auto st = extract_image_rootfs(*plan.podman, plan.image, dest); !st) return st;
  }
  const json image = {{"image", plan.image.image}, {"image_id", plan.image.image_id}, {"digest", plan.image.digest}};
  return dir.write_file({"image.json", image.dump(2) + "\n", 0644});
}

// What one export did: findings (a refused patch, nothing written), or the
// bundle and the summary printed for the user.
struct ExportOutcome {
  std::vector<Finding> findings;
  ExportBundle bundle;
  json summary;
};

// A re-export into an earlier export (the usual second step: the planner's
// patch into the stack) reads the same input unless told otherwise: the
// marker records the seed and config the export read and the flags given,
// and each flag not given again is taken from there. Without this, a re-export
// from another directory found no config (no seed), and one with --seed but
// no --config silently wrote the default secret names into the stack.
constexpr const char* kReusedFlags[] = {"--allow", "--test-command", "--timeout", "--name", "--namespace",
                                        "--instruction"};

json previous_export_inputs(const std::string& out_dir) {
  std::ifstream f(out_dir + "/" + kExportMarker);
  if (!f) return nullptr;
  std::stringstream ss;
  ss << f.rdbuf();
  const json m = json::parse(ss.str(), nullptr, false);
  if (!m.is_object() || !m.contains("inputs") || !m["inputs"].is_object()) return nullptr;
  return m["inputs"];
}

// What to record: the seed and config as read (absolute paths), and the
// flags the user gave.
json export_inputs(const ExportOptions& opt, const ExportInput& in, const std::vector<std::string>& given) {
  json flags = json::object();
  for (const auto& f : given) {
    if (f == "--allow") flags[f] = opt.project.allow;
    else if (f == "--test-command") flags[f] = opt.project.test_command;
    else if (f == "--timeout") flags[f] = opt.timeout;
    else if (f == "--name") flags[f] = opt.name;
    else if (f == "--namespace") flags[f] = opt.k8s_namespace;
    else if (f == "--instruction") flags[f] = opt.instruction;
  }
  return json{{"seed", in.seed.root},
              {"config", in.config.source},
              {"flags", flags},
              {"planner_secrets",
               {in.planner.base_url_secret, in.planner.model_secret, in.planner.api_key_secret}}};
}

// Fills the options not given from an earlier export's inputs; returns
// what was reused, for the user ("" when nothing).
std::string reuse_previous_inputs(const json& prev, const ArgParser& p, ExportOptions* opt) {
  if (!prev.is_object()) return "";
  std::string said;
  auto note = [&](const std::string& what) { said += (said.empty() ? "" : ", ") + what; };
  if (!p.given("--seed") && prev.value("seed", "") != "") {
    opt->project.seed = prev.value("seed", "");
    note("seed " + opt->project.seed);
  }
  if (!p.given("--config") && prev.value("config", "") != "") {
    opt->project.config = prev.value("config", "");
    note("config " + opt->project.config);
  }
  const json flags = prev.value("flags", json::object());
  for (const char* f : kReusedFlags) {
    if (p.given(f) || !flags.contains(f)) continue;
    const json& v = flags[f];
    if (std::string(f) == "--allow" && v.is_array()) opt->project.allow = v.get<std::vector<std::string>>();
    else if (std::string(f) == "--timeout" && v.is_number_integer()) opt->timeout = v.get<long>();
    else if (!v.is_string()) continue;
    else if (std::string(f) == "--test-command") opt->project.test_command = v.get<std::string>();
    else if (std::string(f) == "--name") opt->name = v.get<std::string>();
    else if (std::string(f) == "--namespace") opt->k8s_namespace = v.get<std::string>();
    else if (std::string(f) == "--instruction") opt->instruction = v.get<std::string>();
    note(f);
  }
  return said;
}

// The export as a list of named steps; every error carries its context.
Result<ExportOutcome> run_export(const ExportOptions& opt, const ExportTarget& target,
                                 const std::vector<std::string>& given, const json& previous) {
  const auto t0 = Clock::now();
  json timings = json::object();
  auto step = [&](const char* name, Clock::time_point since) { timings[name] = ms_since(since); };
  ExportOutcome out;

  progress_line("read input");
  auto input = read_input(opt);
  if (!input) return input.error();
  if (!input->input) {
    out.findings = std::move(input->findings);
    return out;
  }
  const ExportInput& in = *input->input;
  step("input", t0);

  // oci needs podman for the root filesystem: reach it before writing anything.
  std::optional<RootfsPlan> rootfs;
  if (target.rootfs) {
    auto plan = plan_rootfs(in.policy.image);
    if (!plan) return plan.error().context("export oci");
    rootfs = std::move(*plan);
  }

  auto t = Clock::now();
  progress_line("build " + std::string(target.name) + " documents");
  auto bundle = target.build(in);
  if (!bundle) return bundle.error().context("export " + std::string(target.name));
  out.bundle = std::move(*bundle);
  auto dir = ExportDir::open(opt.out, in.seed.root, opt.force);
  if (!dir) return dir.error();
  std::vector<std::string> paths = ExportDir::top_level_paths(out.bundle);
  if (target.seed_copy) paths.push_back(kOciSeedDir);
  std::vector<std::string> keep;
  if (rootfs) {
    paths.push_back(kOciRootfsDir);
    paths.push_back("image.json");
    rootfs->reuse = dir->previous_complete() && previous_image_id(*dir) == rootfs->image.image_id;
    if (rootfs->reuse) keep.push_back(kOciRootfsDir);
  }
  step("build", t);

  t = Clock::now();
  progress_line("write " + dir->path());
  if (auto st = dir->begin(target.name, paths, keep); !st) return st.error();
  for (const auto& f : out.bundle.files) {
    if (auto st = dir->write_file(f); !st) return st.error();
  }
  if (target.seed_copy) {
    if (auto st = write_seed_copy(in.seed, *in.writes, dir->at(kOciSeedDir)); !st) {
      return st.error().context("export: writing the seed copy");
    }
  }
  step("write", t);

  if (rootfs) {
    t = Clock::now();
    progress_line(rootfs->reuse ? "keep rootfs/: " + in.policy.image + " has the same image id"
                                : "extract " + in.policy.image + " into rootfs/");
    if (auto st = write_rootfs(*rootfs, *dir); !st) return st.error().context("export oci");
    step("rootfs", t);
  }
  json& summary = out.summary;
  summary = {{"target", target.name},
             {"out", dir->path()},
             {"paths", paths},
             {"seed", in.seed.root},
             {"seed_sha256", in.seed.sha256},
             {"patched", in.patched()},
             {"changed_paths", in.changed_paths},
             {"patch_sha256", in.patch_id()},
             {"policy", policy_to_json(in.policy)}};
  if (rootfs) {
    summary["image"] = rootfs->image.image;
    summary["image_id"] = rootfs->image.image_id;
    summary["image_digest"] = rootfs->image.digest;
    summary["rootfs_reused"] = rootfs->reuse;
  }
  const json inputs = export_inputs(opt, in, given);
  // The planner's secret names are the stack's contract with `configure`:
  // a re-export that changes them says so.
  if (previous.is_object() && previous.contains("planner_secrets") &&
      previous["planner_secrets"] != inputs["planner_secrets"]) {
    summary["planner_secrets_changed"] = {{"from", previous["planner_secrets"]}, {"to", inputs["planner_secrets"]}};
    progress_line("note: the planner's secret names change from " + previous["planner_secrets"].dump() + " to " +
                  inputs["planner_secrets"].dump() + " (the config " +
                  (inputs["config"].get<std::string>().empty() ? std::string("defaults")
                                                               : inputs["config"].get<std::string>()) +
                  " names them)");
  }
  summary["inputs"] = inputs;
  if (auto st = dir->commit({{"seed_sha256", in.seed.sha256}, {"patch_sha256", summary["patch_sha256"]},
                             {"inputs", inputs}});
      !st) {
    return st.error();
  }
  step("total", t0);
  summary["timings"] = timings;
  summary["enforced"] = out.bundle.enforced;
  summary["not_enforced"] = out.bundle.not_enforced;
  summary["how_to_run"] = out.bundle.how_to_run;
  return out;
}

void print_human(const json& summary) {
  std::ostream& o = std::cout;
  const std::string dir = summary["out"];
  o << "exported " << summary["target"].get<std::string>() << " to " << escape_for_terminal(dir) << "\n";
  for (const auto& p : summary["paths"]) o << "  " << escape_for_terminal(p.get<std::string>()) << "\n";
  if (summary.contains("image_digest")) {
    o << "image: " << summary["image"].get<std::string>() << " " << summary["image_digest"].get<std::string>()
      << (summary["rootfs_reused"].get<bool>() ? " (rootfs/ kept: same image id as the earlier export)" : "") << "\n";
  }
  o << (summary["patched"].get<bool>() ? "patch: " + summary["patch_sha256"].get<std::string>().substr(0, 12) +
                                             " (changes " + std::to_string(summary["changed_paths"].size()) + " file(s))\n"
                                       : "patch: none (the seed as it is)\n");
  o << "\nenforced:\n";
  for (const auto& l : summary["enforced"]) o << "  - " << escape_for_terminal(l.get<std::string>()) << "\n";
  o << "\nNOT enforced:\n";
  for (const auto& l : summary["not_enforced"]) o << "  - " << escape_for_terminal(l.get<std::string>()) << "\n";
  o << "\nhow to run:\n  cd " << escape_for_terminal(dir) << "\n";
  std::istringstream lines(summary["how_to_run"].get<std::string>());
  for (std::string line; std::getline(lines, line);) o << "  " << escape_for_terminal(line) << "\n";
}

}  // namespace

int cmd_export(const std::vector<std::string>& args) {
  ExportOptions opt;
  ArgParser p("export", "oci|compose|k8s --out DIR [--seed DIR] [--patch FILE] [--allow PATH]... "
                        "[--test-command CMD] [--timeout S] [--config FILE] [--namespace NS] [--name NAME] "
                        "[--instruction TEXT] [--force] [--json]",
              "Writes the sandbox policy for another engine into DIR: `oci`, a runc bundle (config.json,\n"
              "the sandbox image's root filesystem, the seed copy); `compose`, a podman-compose stack\n"
              "(planner and sandbox services); `k8s`, Kubernetes Job manifests. Each export says what\n"
              "the engine enforces and what it cannot. A patch is validated as by `test` (exit 4 when\n"
              "refused) and written into the export's private seed copy, never into the seed.");
  p.positional("TARGET", &opt.target, true, "oci, compose or k8s", {"oci", "compose", "k8s"});
  p.option("--out", &opt.out, "DIR", "where to write (new, empty, or an earlier export, whose seed, config and flags are reused unless given)");
  p.option("--patch", &opt.patch, "FILE",
           "a patch to apply to the copy, a unified diff or whole files as JSON, as `test` takes ('-' = stdin; "
           "default: none)");
  add_project_options(p, &opt.project);
  p.integer("--timeout", &opt.timeout, "S", "the sandbox's deadline in seconds (default: the config's timeouts.test_seconds)", 1, 86400);
  p.option("--namespace", &opt.k8s_namespace, "NS", "Kubernetes namespace (k8s; default 'default')");
  p.option("--name", &opt.name, "NAME", "base name of the resources (default 'lazyagent')");
  p.option("--instruction", &opt.instruction, "TEXT", "the planner's instruction (default: fix calculator.add)");
  p.flag("--force", &opt.force, "write into a non-empty directory that is not an earlier export");
  p.flag("--json", &opt.json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  std::vector<std::string> given;
  for (const char* f : kReusedFlags) {
    if (p.given(f)) given.push_back(f);
  }
  const json previous = opt.out.empty() ? json() : previous_export_inputs(opt.out);
  if (const std::string reused = reuse_previous_inputs(previous, p, &opt); !reused.empty()) {
    progress_line("re-export into an earlier export: reusing its " + reused);
    // Recorded again, so a third export reuses the same.
    for (const char* f : kReusedFlags) {
      if (!p.given(f) && previous.value("flags", json::object()).contains(f)) given.push_back(f);
    }
  }

  const ExportTarget* target = nullptr;
  for (const auto& t : targets()) {
    if (opt.target == t.name) target = &t;
  }
  if (!target) return report_error(usage_error("export: unknown target '" + opt.target + "': use oci, compose or k8s"), opt.json);
  if (opt.out.empty()) return report_error(usage_error("export: --out DIR is required"), opt.json);
  if (auto st = check_dns_label("--name", opt.name); !st) return report_error(st.error(), opt.json);
  if (auto st = check_dns_label("--namespace", opt.k8s_namespace); !st) return report_error(st.error(), opt.json);

  auto outcome = run_export(opt, *target, given, previous);
  if (!outcome) return report_error(outcome.error(), opt.json);
  if (!outcome->findings.empty()) return report_refused(outcome->findings, opt.json);
  if (opt.json) {
    std::cout << outcome->summary.dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
  } else {
    print_human(outcome->summary);
  }
  return 0;
}

}  // namespace lazyagent
