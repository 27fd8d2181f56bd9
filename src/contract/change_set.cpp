// Resolving a patch against a seed (change_set.h).
#include "contract/change_set.h"

#include <algorithm>
#include <set>

#include "contract/diff_write.h"
#include "util/digest.h"
#include "contract/suspicious_code.h"

namespace lazyagent {

namespace {

std::string qp(std::string_view path) { return "'" + display_path(path) + "'"; }

unsigned git_mode(unsigned perm) { return (perm & 0111) ? 0100755u : 0100644u; }
unsigned perm_of(unsigned git) { return (git & 0111) ? 0755u : 0644u; }

class Resolver {
 public:
  Resolver(const PatchCheck& check, const SeedSnapshot& seed) : check_(check), seed_(seed) {
    r_.changes.format = check.format;
  }

  ChangeResult run() {
    if (check_.format == PatchFormat::kFiles) {
      files();
    } else {
      diffs();
    }
    if (!r_.ok()) {
      r_.changes = ChangeSet{};
      r_.changes.format = check_.format;
      return std::move(r_);
    }
    std::vector<TextChange> text;
    for (std::size_t i = 0; i < r_.changes.files.size(); ++i) {
      const FileChange& f = r_.changes.files[i];
      text.push_back({f.path, f.op, before_[i], f.content, git_mode(f.old_mode), git_mode(f.mode)});
    }
    r_.changes.diff = write_unified_diff(text);
    const UnifiedDiff written = read_unified_diff(r_.changes.diff).diff;
    r_.changes.stats = diff_stats(written);
    if (check_.format == PatchFormat::kDiff) scan_added_lines(written);
    return std::move(r_);
  }

 private:
  void refuse(const char* code, const std::string& path, std::string message) {
    r_.findings.push_back({code, display_path(path), std::move(message)});
  }

  // The seed's content of a file, or a finding.
  bool read(const SeedEntry& e, std::string* out) {
    if (e.size > kMaxPatchedFileBytes) {
      refuse(diff_reason::kFileTooLarge, e.path,
             "the seed's " + qp(e.path) + " is " + std::to_string(e.size) + " bytes; a patch may change files of at most " +
                 std::to_string(kMaxPatchedFileBytes) + " bytes.");
      return false;
    }
    auto content = read_seed_file(seed_, e, kMaxPatchedFileBytes);
    if (!content) {
      refuse(diff_reason::kMissingFile, e.path, content.error().message + ".");
      return false;
    }
    *out = std::move(*content);
    return true;
  }

  void add(FileChange f, std::string before) {
    f.before_sha256 = f.op == FileOp::kCreate ? "" : sha256_hex(before);
    f.after_sha256 = f.op == FileOp::kDelete ? "" : sha256_hex(f.content);
    r_.changes.files.push_back(std::move(f));
    before_.push_back(std::move(before));
  }

  void files() {
    for (Finding& f : check_patch_against_seed(seed_, check_.files)) r_.findings.push_back(std::move(f));
    if (!r_.ok()) return;
    for (const PatchFile& p : check_.files.files) {
      const SeedEntry* e = find_seed_entry(seed_, p.path);
      FileChange c;
      c.path = p.path;
      c.content = p.content;
      std::string before;
      if (e == nullptr) {
        c.op = FileOp::kCreate;
        c.old_mode = 0;
        c.mode = 0644;
      } else {
        if (e->size == p.content.size() && e->sha256 == sha256_hex(p.content)) continue;  // no change
        if (!read(*e, &before)) continue;
        c.old_mode = e->mode & 0777;
        c.mode = (e->mode & 0111) ? 0755u : 0644u;
      }
      add(std::move(c), std::move(before));
    }
  }

  void diffs() {
    // The paths' kinds in the seed, as for whole files (new files included).
    Patch paths;
    for (const FileDiff& f : check_.diff.files) paths.files.push_back({f.path, ""});
    for (Finding& f : check_patch_against_seed(seed_, paths)) r_.findings.push_back(std::move(f));
    if (!r_.ok()) return;
    for (const FileDiff& f : check_.diff.files) {
      const SeedEntry* e = find_seed_entry(seed_, f.path);
      std::string before;
      FileChange c;
      c.path = f.path;
      c.op = f.op;
      if (f.op == FileOp::kCreate) {
        if (e != nullptr) {
          refuse(diff_reason::kFileExists, f.path,
                 "the diff creates " + qp(f.path) + " (line " + std::to_string(f.line) + "), but the seed already has it.");
          continue;
        }
        c.old_mode = 0;
        c.mode = f.new_mode ? perm_of(f.new_mode) : 0644u;
      } else {
        if (e == nullptr) {
          refuse(diff_reason::kMissingFile, f.path,
                 std::string("the diff ") + (f.op == FileOp::kDelete ? "deletes " : "changes ") + qp(f.path) +
                     " (line " + std::to_string(f.line) + "), but the seed has no such file.");
          continue;
        }
        if (!read(*e, &before)) continue;
        c.old_mode = e->mode & 0777;
        c.mode = f.new_mode && f.new_mode != f.old_mode ? perm_of(f.new_mode) : (e->mode & 0777);
      }
      FileApplyResult applied = apply_file_diff(f, before);
      if (!applied.ok()) {
        for (Finding& x : applied.findings) r_.findings.push_back(std::move(x));
        continue;
      }
      for (const HunkPlacement& p : applied.placements) {
        if (p.offset != 0) {
          r_.changes.notes.push_back(describe_hunk(f.hunks[p.hunk], p.hunk) + " of " + qp(f.path) + " applied at line " +
                                     std::to_string(p.applied_line) + " (offset " + std::to_string(p.offset) +
                                     " lines)");
        }
      }
      for (std::size_t k = 0; k < f.hunks.size(); ++k) {
        if (f.hunks[k].recounted) {
          r_.changes.notes.push_back(describe_hunk(f.hunks[k], k) + " of " + qp(f.path) +
                                     ": its header's line counts were wrong; read by its lines");
        }
      }
      c.content = f.op == FileOp::kDelete ? "" : std::move(applied.content);
      add(std::move(c), std::move(before));
    }
  }

  // A diff's suspicious findings: the applied files scanned whole (whether a
  // line runs at import time depends on the lines around it), counting only
  // the lines the change adds.
  void scan_added_lines(const UnifiedDiff& written) {
    for (const FileDiff& d : written.files) {
      if (d.op == FileOp::kDelete) continue;
      const auto it = std::find_if(r_.changes.files.begin(), r_.changes.files.end(),
                                   [&](const FileChange& c) { return c.path == d.path; });
      if (it == r_.changes.files.end()) continue;
      std::set<std::size_t> added;
      for (const auto& h : d.hunks) {
        std::size_t line = h.new_start;
        for (const auto& l : h.lines) {
          if (l.op == '+') added.insert(line);
          if (l.op != '-') ++line;
        }
      }
      for (Finding& f : suspicious_findings_in(it->path, it->content,
                                               [&](std::size_t line) { return added.count(line) > 0; })) {
        r_.changes.suspicious.push_back(std::move(f));
      }
    }
  }

  const PatchCheck& check_;
  const SeedSnapshot& seed_;
  ChangeResult r_;
  std::vector<std::string> before_;  // per file in r_.changes.files
};

}  // namespace

ChangeResult resolve_changes(const PatchCheck& check, const SeedSnapshot& seed) { return Resolver(check, seed).run(); }

std::vector<FileWrite> copy_writes(const ChangeSet& changes) {
  std::vector<FileWrite> out;
  for (const FileChange& f : changes.files) {
    out.push_back({f.path, f.content, f.mode, f.op == FileOp::kDelete});
  }
  return out;
}

std::vector<std::string> changed_paths(const ChangeSet& changes) {
  std::vector<std::string> out;
  for (const FileChange& f : changes.files) out.push_back(f.path);
  return out;
}

const char* file_op_name(FileOp op) {
  return op == FileOp::kCreate ? "created" : op == FileOp::kDelete ? "deleted" : "modified";
}

nlohmann::json change_summary_json(const ChangeSet& changes) {
  nlohmann::json files = nlohmann::json::array();
  for (const FileChange& f : changes.files) {
    nlohmann::json j = {{"path", f.path}, {"change", file_op_name(f.op)}};
    if (f.op != FileOp::kCreate) j["before_sha256"] = f.before_sha256;
    if (f.op != FileOp::kDelete) {
      j["after_sha256"] = f.after_sha256;
      j["mode"] = f.mode;
    }
    files.push_back(std::move(j));
  }
  return nlohmann::json{{"patch_format", patch_format_name(changes.format)},
                        {"diff_stats",
                         {{"files", changes.stats.files},
                          {"added", changes.stats.added},
                          {"removed", changes.stats.removed},
                          {"hunks", changes.stats.hunks}}},
                        {"changed_files", files}};
}

}  // namespace lazyagent
