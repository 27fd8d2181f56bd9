// Writing an export to disk: the output directory's rules. Effectful.
//
// `lazyagent-oci export ... --out DIR` owns DIR only when DIR is empty, new,
// or a previous export of ours (it holds the marker file below); anything
// else needs --force. A re-export replaces exactly the paths the previous
// one listed in its marker, so files the user added (patch.json from the
// planner, output.txt) stay. DIR may not contain the seed, nor lie inside it:
// the user's seed directory is never written (ARCHITECTURE invariant 5).
//
// The marker is written first (complete: false) and rewritten last
// (complete: true), so an export interrupted halfway is still recognised as
// ours and simply replaced by the next one.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/export_common.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr const char* kExportMarker = ".lazyagent-export.json";

class ExportDir {
 public:
  // Checks DIR (creating it when missing) against the rules above. kUsage
  // errors say what to do.
  static Result<ExportDir> open(const std::string& dir, const std::string& seed_root, bool force);

  const std::string& path() const { return path_; }  // absolute
  std::string at(const std::string& rel) const { return path_ + "/" + rel; }

  // Whether DIR holds a complete earlier export (its marker says so).
  bool previous_complete() const { return previous_complete_; }

  // Records `target` and the top-level paths this export will write, after
  // removing those of the previous export and these (files or directories),
  // except the paths in `keep` (an unchanged rootfs/ reused by the caller).
  Status begin(const std::string& target, const std::vector<std::string>& paths,
               const std::vector<std::string>& keep = {});
  Status write_file(const ExportedFile& f);
  // Rewrites the marker as complete, with `details` (hashes, image) merged in.
  Status commit(const nlohmann::json& details);

  // Top-level paths of a bundle's files ("task/task.json" -> "task").
  static std::vector<std::string> top_level_paths(const ExportBundle& b);

 private:
  explicit ExportDir(std::string path) : path_(std::move(path)) {}
  Status write_marker(bool complete, const nlohmann::json& details);

  std::string path_;
  std::string target_;
  std::vector<std::string> paths_;
  std::vector<std::string> previous_;  // from an earlier export's marker
  bool previous_complete_ = false;
};

}  // namespace lazyagent
