// `diff` and `apply` of a proven run (apply_run.h).
#include "pipeline/apply_run.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "contract/change_set.h"
#include "contract/diff_write.h"
#include "pipeline/branch_commit.h"
#include "util/digest.h"
#include "util/git_process.h"
#include "contract/patch_format.h"
#include "contract/seed_snapshot.h"

namespace lazyagent {

using nlohmann::json;

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxNamedDifferences = 20;

Error refused(std::string message) { return Error{ErrorKind::kPatch, std::move(message)}; }

Result<json> read_record(const RunStore& store, const std::string& run_id) {
  auto rec = store.read(run_id);
  if (!rec) {
    if (rec.error().kind == ErrorKind::kUsage) return usage_error("no run '" + run_id + "' in " + store.runs_dir());
    return rec.error();
  }
  if (!rec->is_object()) return usage_error("run " + run_id + ": the record is not a JSON object");
  return std::move(*rec);
}

// Every path a diff changes may be changed: the allowlist the run had is not
// in the record, and this diff is our own (it already passed the contract).
ContractLimits limits_for(const std::string& diff) {
  ContractLimits l;
  l.max_files = kMaxPatchFilesCap;
  l.max_bytes = kMaxPatchBytesCap;
  l.max_diff_bytes = kMaxDiffBytesCap;
  l.max_changed_lines = kMaxChangedLinesCap;
  for (const auto& f : read_unified_diff(diff).diff.files) l.allow.push_back(f.path);
  return l;
}

// The seed source settings the run used (records since seed sources).
SeedConfig seed_config_of(const json& rec) {
  SeedConfig c;
  c.max_files = kMaxSeedFilesCap;
  c.max_bytes = kMaxSeedBytesCap;
  const json src = rec.value("seed_source", json::object());
  if (src.is_object()) {
    c.source = src.value("kind", std::string("directory"));
    if (src.contains("exclude") && src["exclude"].is_array()) c.exclude = src["exclude"].get<std::vector<std::string>>();
    c.include_git = src.value("include_git", false);
  } else {
    c.source = "directory";  // records from before seed sources read the whole directory
  }
  return c;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kMaxNamedDifferences; ++i) out += (i ? "; " : "") + items[i];
  if (items.size() > kMaxNamedDifferences) {
    out += "; and " + std::to_string(items.size() - kMaxNamedDifferences) + " more";
  }
  return out;
}

// An older record: the stored whole-file patch against the seed directory,
// whose touched files must still be what the manifest says.
Result<std::string> rebuild_diff(const RunStore& store, const std::string& run_id, const json& rec) {
  auto patch_text = store.read_text(kArtifactsDir, patch_artifact_name(run_id));
  if (!patch_text) return usage_error("run " + run_id + " has no stored patch (a baseline, or a refused patch)");
  ContractLimits l;
  l.max_files = kMaxPatchFilesCap;
  l.max_bytes = kMaxPatchBytesCap;
  ContractResult c = validate_patch_json(*patch_text, [&] {
    ContractLimits any = l;
    for (const auto& f : validate_patch_json(*patch_text, l).patch.files) any.allow.push_back(f.path);
    return any;
  }());
  if (!c.ok()) return engine_error("run " + run_id + ": the stored patch does not pass the contract: " + c.findings[0].message);
  auto manifest_text = store.read_text(kArtifactsDir, seed_manifest_artifact_name(run_id));
  if (!manifest_text) return engine_error("run " + run_id + ": no stored seed manifest");
  const json manifest = json::parse(*manifest_text, nullptr, false);
  std::map<std::string, json> by_path;
  if (manifest.is_array()) {
    for (const auto& e : manifest) by_path[e.value("path", "")] = e;
  }
  const std::string seed = rec.value("seed", "");
  std::vector<TextChange> changes;
  std::vector<std::string> differ;
  for (const PatchFile& f : c.patch.files) {
    const auto it = by_path.find(f.path);
    TextChange t{f.path, FileOp::kCreate, "", f.content, 0, 0100644};
    if (it != by_path.end()) {
      std::string now;
      if (FILE* in = std::fopen((seed + "/" + f.path).c_str(), "rb")) {
        char buf[65536];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) now.append(buf, n);
        std::fclose(in);
      }
      if (sha256_hex(now) != it->second.value("sha256", "")) {
        differ.push_back(f.path);
        continue;
      }
      const unsigned mode = it->second.value("mode", 0644u);
      t.op = FileOp::kModify;
      t.old_content = now;
      t.old_mode = (mode & 0111) ? 0100755 : 0100644;
      t.new_mode = t.old_mode;
    }
    changes.push_back(std::move(t));
  }
  if (!differ.empty()) {
    return refused("run " + run_id + " was recorded before proven diffs were stored, and the seed's files it changed "
                   "are no longer what it proved (" + joined(differ) + "): the diff cannot be rebuilt");
  }
  return write_unified_diff(changes);
}

Status write_tree_file(const std::string& path, const std::string& content, unsigned mode) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return engine_error("creating the directories of " + path + ": " + ec.message());
  const std::string tmp = fs::path(path).parent_path().string() + "/.lazyagent-apply-" + std::to_string(::getpid()) +
                          "-" + fs::path(path).filename().string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
  if (fd < 0) return engine_error("writing " + tmp + ": " + std::strerror(errno));
  std::string_view rest = content;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return engine_error("writing " + tmp + ": " + why);
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::fchmod(fd, mode & 0777);
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return engine_error("replacing " + path + ": " + why);
  }
  return ok_status();
}

Result<GitRun> git_ok(const std::string& dir, const std::vector<std::string>& args) {
  auto r = run_git(dir, args);
  if (!r) return r.error();
  if (r->exit_code != 0) return engine_error("git " + args[0] + " in " + dir + ": " + git_failure(*r));
  return r;
}

// The user's git identity applies; lazyagent-oci@localhost when there is none.
std::vector<std::string> identity_config(const std::string& repo) {
  auto email = run_git(repo, {"config", "user.email"});
  if (!email || email->exit_code != 0) return {"-c", "user.name=lazyagent-oci", "-c", "user.email=lazyagent-oci@localhost"};
  return {};
}

std::string apply_commit_message(const json& rec, const std::string& id, const std::string& diff) {
  return "lazyagent-oci: apply run " + id + "\n\nRun: " + id + "\nVerdict: " +
         rec.value("category", rec.value("status", std::string("?"))) +
         (rec.value("tests_passed", false) ? " (tests passed)" : " (tests did not pass; applied with --force)") +
         "\nPatch-sha256: " + rec.value("patch_sha256", "") + "\nDiff-sha256: " + sha256_hex(diff) +
         "\nSeed-sha256: " + rec.value("seed_sha256", "") + "\n";
}

}  // namespace

StoredArtifacts load_stored_artifacts(const RunStore& store, const std::string& run_id, const json& record) {
  StoredArtifacts a;
  const std::string format = record.is_object() ? record.value("patch_format", "files") : "files";
  if (auto diff = store.read_text(kArtifactsDir, diff_artifact_name(run_id)); diff) {
    a.diff = *diff;
  } else {
    a.diff_problem = diff.error().message;
  }
  if (auto patch = store.read_text(kArtifactsDir, patch_artifact_name(run_id, format)); patch) {
    a.patch = *patch;
  } else {
    a.patch_problem = patch.error().message;
  }
  if (auto text = store.read_text(kArtifactsDir, seed_manifest_artifact_name(run_id)); text) {
    json m = json::parse(*text, nullptr, false);
    if (m.is_discarded()) a.manifest_problem = "it is not valid JSON";
    else a.seed_manifest = std::move(m);
  } else {
    a.manifest_problem = text.error().message;
  }
  return a;
}

Result<ProvenChange> load_proven_change(const RunStore& store, const std::string& run_id) {
  auto rec = read_record(store, run_id);
  if (!rec) return rec.error();
  ProvenChange p;
  p.record = std::move(*rec);
  const std::string sha = p.record.value("diff_sha256", "");
  if (sha.empty()) {
    if (p.record.value("patch_format", "") == "diff" || p.record.value("patch_sha256", "").empty()) {
      return usage_error("run " + run_id + " has no proven change (status " + p.record.value("status", "?") +
                         "): a baseline, a refused patch, or a run that ended before its patch was applied");
    }
    auto rebuilt = rebuild_diff(store, run_id, p.record);
    if (!rebuilt) return rebuilt.error();
    p.diff = std::move(*rebuilt);
    p.rebuilt = true;
    return p;
  }
  auto diff = store.read_text(kArtifactsDir, diff_artifact_name(run_id));
  if (!diff) return engine_error("run " + run_id + ": the stored diff is missing: " + diff.error().message);
  if (const std::string got = sha256_hex(*diff); got != sha) {
    return refused("run " + run_id + ": the stored diff hashes to " + got + ", the record says " + sha +
                   " (it was changed after the run; `lazyagent-oci verify " + run_id + "`)");
  }
  p.diff = std::move(*diff);
  return p;
}

std::vector<std::string> manifest_differences(const json& proven, const json& now) {
  std::map<std::string, const json*> a, b;
  if (proven.is_array()) {
    for (const auto& e : proven) a[e.value("path", "")] = &e;
  }
  if (now.is_array()) {
    for (const auto& e : now) b[e.value("path", "")] = &e;
  }
  std::vector<std::string> out;
  for (const auto& [path, e] : a) {
    const auto it = b.find(path);
    if (it == b.end()) {
      out.push_back("missing: " + path);
    } else if (*e != *it->second) {
      const bool content = e->value("sha256", "") != it->second->value("sha256", "");
      out.push_back(std::string(content ? "changed: " : "mode or kind changed: ") + path);
    }
  }
  for (const auto& [path, e] : b) {
    if (!a.count(path)) out.push_back("new: " + path);
  }
  return out;
}

Result<ApplyOutcome> apply_proven_change(const RunStore& store, const ApplyRequest& req) {
  auto proven = load_proven_change(store, req.run_id);
  if (!proven) return proven.error();
  const json& rec = proven->record;
  const std::string id = req.run_id;
  // 1. A passed run, whose record still matches its provenance.
  if (!rec.value("tests_passed", false)) {
    const std::string status = rec.value("status", "?");
    if (!req.force || status == "running" || status == "refused") {
      return refused("run " + id + " did not pass (status " + status + ": " + rec.value("reason", std::string()) +
                     "); only a passed run's change is applied" + (status == "running" || status == "refused" ? "" : " (or pass --force)"));
    }
  }
  if (!proven->rebuilt) {
    const auto mismatches = check_provenance(rec, load_stored_artifacts(store, id, rec));
    if (!mismatches.empty()) {
      std::vector<std::string> parts;
      for (const auto& m : mismatches) parts.push_back(m.part + ": " + m.detail);
      return refused("run " + id + " no longer matches its provenance (" + joined(parts) + "); nothing was applied");
    }
  }
  // 2. The tree is the seed the run proved.
  ApplyOutcome out;
  out.seed = req.seed.empty() ? rec.value("seed", "") : req.seed;
  if (out.seed.empty()) return usage_error("run " + id + " names no seed directory: pass --seed DIR");
  if (req.seed.empty() && out.seed.front() != '/') {
    // Records before seeds were kept absolute: the path is relative to a
    // directory the record does not name.
    return usage_error("run " + id + " recorded its seed as '" + out.seed +
                       "', relative to the directory it ran in: pass --seed DIR (your project's directory)");
  }
  const SeedConfig seed_config = seed_config_of(rec);
  auto snap = snapshot_seed_source(out.seed, seed_config);
  if (!snap) return snap.error().context("reading " + out.seed);
  if (snap->sha256 != rec.value("seed_sha256", "")) {
    auto stored = store.read_text(kArtifactsDir, seed_manifest_artifact_name(id));
    const json manifest = stored ? json::parse(*stored, nullptr, false) : json();
    const auto diffs = manifest_differences(manifest, seed_manifest(*snap));
    return refused("the tree at " + out.seed + " is not the seed run " + id + " proved (" +
                   (diffs.empty() ? std::string("its hash differs") : joined(diffs)) + "); nothing was applied");
  }
  // 3. The change, applied to the tree's files and checked against the record.
  const PatchCheck check = check_patch_text(proven->diff, limits_for(proven->diff));
  if (!check.ok()) return engine_error("run " + id + ": the proven diff does not read back: " + check.findings[0].message);
  const ChangeResult change = resolve_changes(check, *snap);
  if (!change.ok()) return engine_error("run " + id + ": the proven diff does not apply to its own seed: " + change.findings[0].message);
  std::map<std::string, std::string> after;
  if (rec.contains("changed_files") && rec["changed_files"].is_array()) {
    for (const auto& f : rec["changed_files"]) after[f.value("path", "")] = f.value("after_sha256", "");
  }
  for (const FileChange& f : change.changes.files) {
    const auto it = after.find(f.path);
    if (it != after.end() && it->second != f.after_sha256) {
      return engine_error("run " + id + ": " + f.path + " would be written as " + f.after_sha256 + ", the run proved " + it->second);
    }
  }
  // 4. A branch first, if asked: nothing is written when it cannot be made.
  if (req.switch_branch && req.branch.empty()) return usage_error("--switch needs --branch NAME");
  if (!req.branch.empty()) {
    if (snap->kind != SeedKind::kGit) return usage_error("--branch needs a git work tree; " + out.seed + " is not one");
    auto valid = run_git(out.seed, {"check-ref-format", "--branch", req.branch});
    if (!valid) return valid.error();
    if (valid->exit_code != 0) return usage_error("--branch " + req.branch + ": not a valid branch name");
    auto exists = run_git(out.seed, {"rev-parse", "--verify", "--quiet", "refs/heads/" + req.branch});
    if (!exists) return exists.error();
    if (exists->exit_code == 0) return refused("branch " + req.branch + " already exists in " + out.seed + "; nothing was applied");
    if (!req.switch_branch) {
      // As `git branch NAME`: the branch is made beside the checkout, which
      // stays as it is (branch_commit.h).
      std::vector<BranchFile> files;
      for (const FileChange& f : change.changes.files) {
        files.push_back({f.path, f.op == FileOp::kDelete, f.content, f.mode});
        out.applied.push_back(f.path);
      }
      auto commit = commit_on_new_branch(out.seed, req.branch, files, apply_commit_message(rec, id, proven->diff),
                                         identity_config(out.seed));
      if (!commit) return commit.error().context("committing on the new branch " + req.branch);
      out.branch = req.branch;
      out.commit = *commit;
      return out;
    }
    if (auto st = git_ok(out.seed, {"switch", "-q", "-c", req.branch}); !st) return st.error();
    out.branch = req.branch;
    out.switched = true;
  }
  for (const FileChange& f : change.changes.files) {
    const std::string path = out.seed + "/" + f.path;
    if (f.op == FileOp::kDelete) {
      if (::unlink(path.c_str()) != 0) return engine_error("deleting " + path + ": " + std::strerror(errno));
    } else if (auto st = write_tree_file(path, f.content, f.mode); !st) {
      return st.error();
    }
    out.applied.push_back(f.path);
  }
  if (out.branch.empty() || out.applied.empty()) return out;
  std::vector<std::string> add = {"add", "-A", "--"};
  add.insert(add.end(), out.applied.begin(), out.applied.end());
  if (auto st = git_ok(out.seed, add); !st) return st.error();
  std::vector<std::string> commit = identity_config(out.seed);
  for (const char* a : {"commit", "-q", "-m"}) commit.push_back(a);
  commit.push_back(apply_commit_message(rec, id, proven->diff));
  commit.push_back("--");
  commit.insert(commit.end(), out.applied.begin(), out.applied.end());
  if (auto st = git_ok(out.seed, commit); !st) return st.error();
  auto head = git_ok(out.seed, {"rev-parse", "HEAD"});
  if (!head) return head.error();
  out.commit = head->out.substr(0, head->out.find('\n'));
  return out;
}

}  // namespace lazyagent
