#include "export/export_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "contract/patch_contract.h"
#include "util/atomic_file.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kMarkerTool = "lazyagent-oci export";

// "a" is inside "b" (or equal): compared on resolved paths, component-wise.
bool inside(const fs::path& a, const fs::path& b) {
  auto ai = a.begin();
  for (auto bi = b.begin(); bi != b.end(); ++bi, ++ai) {
    if (ai == a.end() || *ai != *bi) return false;
  }
  return true;
}

struct Marker {
  std::vector<std::string> paths;
  bool complete = false;
};

// The previous export's marker, or an error when DIR is not ours.
Result<Marker> read_marker(const std::string& dir) {
  std::ifstream f(dir + "/" + kExportMarker);
  if (!f) return usage_error("no marker");
  std::stringstream ss;
  ss << f.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (!j.is_object() || j.value("tool", "") != kMarkerTool || !j.contains("paths") || !j["paths"].is_array()) {
    return usage_error(std::string(kExportMarker) + " is not a marker of lazyagent-oci export");
  }
  Marker m;
  m.complete = j.value("complete", false);
  for (const auto& p : j["paths"]) {
    // Only plain relative names: a forged marker must not make us remove
    // anything outside DIR.
    if (!p.is_string() || !check_patch_path(p.get<std::string>()).empty() ||
        p.get<std::string>().find('/') != std::string::npos) {
      return usage_error(std::string(kExportMarker) + " lists a path that is not a plain name");
    }
    m.paths.push_back(p.get<std::string>());
  }
  return m;
}

}  // namespace

Result<ExportDir> ExportDir::open(const std::string& dir, const std::string& seed_root, bool force) {
  if (dir.empty()) return usage_error("export: --out DIR is required");
  std::error_code ec;
  const fs::path seed = fs::canonical(seed_root, ec);
  const bool have_seed = !ec;
  // Checked before anything is created: not even an empty directory may
  // appear inside the seed.
  auto check = [&](const fs::path& p) -> Status {
    if (p == p.root_path()) return usage_error("export: --out " + dir + " is the filesystem root; choose a new directory");
    if (have_seed && (inside(p, seed) || inside(seed, p))) {
      return usage_error("export: --out " + dir + " overlaps the seed " + seed_root +
                         "; the seed is never written: choose a directory outside it");
    }
    return ok_status();
  };
  const fs::path planned = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) return usage_error("export: --out " + dir + ": " + ec.message());
  if (auto st = check(planned); !st) return st.error();
  if (!fs::exists(planned, ec)) {
    if (!fs::create_directories(planned, ec) || ec) {
      return usage_error("export: --out " + dir + ": cannot create the directory: " + ec.message());
    }
  } else if (!fs::is_directory(planned, ec)) {
    return usage_error("export: --out " + dir + " exists and is not a directory; choose a new directory");
  }
  const fs::path real = fs::canonical(planned, ec);
  if (ec) return usage_error("export: --out " + dir + ": " + ec.message());
  if (auto st = check(real); !st) return st.error();
  ExportDir out(real.string());
  const bool empty = fs::is_empty(real, ec);
  auto previous = read_marker(out.path_);
  if (previous) {
    out.previous_ = previous->paths;
    out.previous_complete_ = previous->complete;
  } else if (!empty && !force) {
    return usage_error("export: --out " + dir + " is not empty and holds no earlier export (" +
                       std::string(kExportMarker) + "); choose a new directory, or add --force to "
                       "write into it (files of the same names are replaced)");
  }
  return out;
}

Status ExportDir::begin(const std::string& target, const std::vector<std::string>& paths,
                        const std::vector<std::string>& keep) {
  target_ = target;
  paths_ = paths;
  std::vector<std::string> doomed = previous_;
  doomed.insert(doomed.end(), paths.begin(), paths.end());
  std::sort(doomed.begin(), doomed.end());
  doomed.erase(std::unique(doomed.begin(), doomed.end()), doomed.end());
  if (auto st = write_marker(false, json::object()); !st) return st;
  for (const auto& p : doomed) {
    if (p == kExportMarker || std::find(keep.begin(), keep.end(), p) != keep.end()) continue;
    if (auto st = remove_tree(at(p)); !st) return st.error().context("replacing the previous export");
  }
  return ok_status();
}

Status ExportDir::write_file(const ExportedFile& f) {
  const std::string path = at(f.path);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return engine_error("creating the directory of " + path + ": " + ec.message());
  if (auto st = write_file_atomic(path, f.content); !st) return st;
  if (::chmod(path.c_str(), f.mode) != 0) return engine_error("chmod " + path + ": " + std::strerror(errno));
  return ok_status();
}

Status ExportDir::commit(const json& details) { return write_marker(true, details); }

Status ExportDir::write_marker(bool complete, const json& details) {
  json j = {{"tool", kMarkerTool},
            {"version", LAZYAGENT_VERSION},
            {"target", target_},
            {"complete", complete},
            {"paths", paths_}};
  if (details.is_object()) j.update(details);
  const std::string path = at(kExportMarker);
  if (auto st = write_file_atomic(path, j.dump(2) + "\n"); !st) return st;
  ::chmod(path.c_str(), 0644);
  return ok_status();
}

std::vector<std::string> ExportDir::top_level_paths(const ExportBundle& b) {
  std::vector<std::string> out;
  for (const auto& f : b.files) {
    const std::string top = f.path.substr(0, f.path.find('/'));
    if (std::find(out.begin(), out.end(), top) == out.end()) out.push_back(top);
  }
  return out;
}

}  // namespace lazyagent
