// `lazyagent-oci seed [DIR | --seed DIR] [--config FILE] [--list] [--copy-to DIR] [--json]`:
// what a run would take from a seed (seed_source.h): its kind (directory or
// git work tree), files, bytes, hash, what was left out, and how long
// listing + hashing (and, with --copy-to, the private copy) took. The same
// code the pipeline runs, so a user can check `seed.exclude` and the caps
// before a run; bench/seed_snapshot.sh times it.
#include <chrono>
#include <iostream>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "contract/seed_snapshot.h"
#include "util/terminal_text.h"

namespace lazyagent {

int cmd_seed(const std::vector<std::string>& args) {
  std::string dir, seed_flag, config_path, copy_to;
  bool list = false, as_json = false;
  ArgParser p("seed", "[DIR | --seed DIR] [--config FILE] [--list] [--copy-to DIR] [--json]",
              "Reads a seed the way a run does: a git work tree as git would (tracked files plus untracked\n"
              "files that are not ignored, never .git/ unless seed.include_git), a plain directory whole, less\n"
              "what seed.exclude leaves out, within seed.max_files and seed.max_bytes. Prints what it found and\n"
              "how long listing and hashing took; --copy-to writes the private copy a run would make (the\n"
              "directory must not exist) and times that too.");
  p.positional("DIR", &dir, false, "the seed (default: the config's)");
  p.option("--seed", &seed_flag, "DIR", "the seed, as the other commands take it (the same as DIR)");
  p.option("--config", &config_path, "FILE", "config file (seed.* settings)");
  p.flag("--list", &list, "list every entry (kind, mode, size, sha256, path)");
  p.option("--copy-to", &copy_to, "DIR", "also write the private copy there");
  p.flag("--json", &as_json, "print exactly one JSON object on stdout");
  if (auto done = parse_or_exit(p, args)) return *done;
  auto config = load_config_or_default(config_path);
  if (!config) return report_error(config.error(), as_json);
  if (!seed_flag.empty() && !dir.empty() && seed_flag != dir) {
    return report_error(usage_error("seed: the seed given twice (DIR " + dir + " and --seed " + seed_flag + "): give one"),
                        as_json);
  }
  if (dir.empty()) dir = seed_flag;
  if (dir.empty()) dir = config->seed;
  if (dir.empty()) return report_error(usage_error("seed: no seed: pass DIR or set `seed` in the config"), as_json);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto snap = snapshot_seed_source(dir, config->seed_options);
  if (!snap) return report_error(snap.error(), as_json);
  const auto t1 = clock::now();
  long copy_ms = -1;
  if (!copy_to.empty()) {
    if (auto st = write_seed_copy(*snap, {}, copy_to); !st) return report_error(st.error(), as_json);
    copy_ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t1).count());
  }
  const long snapshot_ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count());
  nlohmann::json j = seed_summary_json(*snap, list);
  j["timings"] = {{"snapshot", snapshot_ms}};
  if (copy_ms >= 0) j["timings"]["copy"] = copy_ms;
  if (as_json) {
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
    return kExitPassed;
  }
  std::cout << "seed " << escape_for_terminal(snap->root) << " (" << seed_kind_name(snap->kind) << ")\n"
            << "  " << j["files"].get<std::size_t>() << " files, " << j["directories"].get<std::size_t>()
            << " directories, " << j["symlinks"].get<std::size_t>() << " symlinks, " << snap->bytes << " bytes\n"
            << "  sha256 " << snap->sha256 << "\n"
            << "  left out by seed.exclude: " << snap->excluded << "\n";
  for (const auto& s : snap->skipped) std::cout << "  skipped: " << escape_for_terminal(s) << "\n";
  std::cout << "  snapshot " << snapshot_ms << " ms" << (copy_ms >= 0 ? ", copy " + std::to_string(copy_ms) + " ms" : "")
            << "\n";
  if (list) {
    for (const auto& e : snap->entries) {
      const char k = e.kind == SeedEntry::Kind::kDir ? 'd' : e.kind == SeedEntry::Kind::kFile ? 'f' : 'l';
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", e.mode);
      std::cout << k << " " << mode << " " << e.size << " " << (e.sha256.empty() ? "-" : e.sha256.substr(0, 12)) << " "
                << escape_for_terminal(e.path) << "\n";
    }
  }
  return kExitPassed;
}

}  // namespace lazyagent
