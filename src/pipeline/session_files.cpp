#include "pipeline/session_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "contract/diff_write.h"
#include "contract/patch_format.h"
#include "contract/seed_snapshot.h"
#include "util/byte_frames.h"
#include "util/git_process.h"

namespace lazyagent {

namespace {

class CopyFd {
 public:
  explicit CopyFd(int fd = -1) : fd_(fd) {}
  CopyFd(CopyFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  CopyFd& operator=(CopyFd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  CopyFd(const CopyFd&) = delete;
  ~CopyFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// The path's components, after the contract's path rules (no absolute path,
// no "..", no control characters, ...); a usage error lists what is wrong.
Result<std::vector<std::string>> copy_path_parts(const std::string& path) {
  const auto findings = check_patch_path(path);
  if (!findings.empty()) {
    std::string why;
    for (const auto& f : findings) why += (why.empty() ? "" : "; ") + f.message;
    return usage_error("path " + display_path(path) + ": " + why);
  }
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const auto slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

std::string copy_errno_text(const std::string& what, const std::string& path) {
  return what + " " + display_path(path) + " in the working copy: " + std::strerror(errno);
}

// The directory that holds the last of `parts`, walked from `root` with
// O_NOFOLLOW at every step (a planted link is an error, never followed).
// `make`: missing directories are created (0755, owned by uid/gid).
Result<CopyFd> open_parent(const std::string& root, const std::vector<std::string>& parts, const std::string& path,
                       bool make, long uid, long gid) {
  CopyFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return engine_error("opening the working copy " + root + ": " + std::strerror(errno));
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const char* name = parts[i].c_str();
    CopyFd next(::openat(dir.get(), name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0 && errno == ENOENT && make) {
      if (::mkdirat(dir.get(), name, 0755) != 0) return engine_error(copy_errno_text("making a directory for", path));
      if (uid >= 0 && ::fchownat(dir.get(), name, static_cast<uid_t>(uid), static_cast<gid_t>(gid), AT_SYMLINK_NOFOLLOW) != 0) {
        return engine_error(copy_errno_text("giving a directory to the sandbox for", path));
      }
      next = CopyFd(::openat(dir.get(), name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (next.get() < 0) {
      if (errno == ELOOP || errno == ENOTDIR) {
        return usage_error("path " + display_path(path) + ": " + display_path(parts[i]) +
                           " in the working copy is not a directory (a symlink is never followed)");
      }
      if (errno == ENOENT) return usage_error("path " + display_path(path) + ": no such file in the working copy");
      return engine_error(copy_errno_text("opening", path));
    }
    dir = std::move(next);
  }
  return dir;
}

Status write_copy_bytes(int fd, const std::string& data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return engine_error(copy_errno_text("writing", path));
    done += static_cast<std::size_t>(n);
  }
  return ok_status();
}

const char* copy_kind_word(SeedEntry::Kind k) {
  return k == SeedEntry::Kind::kDir ? "a directory" : k == SeedEntry::Kind::kFile ? "a file" : "a symlink";
}

}  // namespace

Result<std::string> read_copy_file(const std::string& root, const std::string& path, std::size_t max_bytes) {
  auto parts = copy_path_parts(path);
  if (!parts) return parts.error();
  auto dir = open_parent(root, *parts, path, false, -1, -1);
  if (!dir) return dir.error();
  CopyFd fd(::openat(dir->get(), parts->back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ELOOP) return usage_error("path " + display_path(path) + " is a symlink in the working copy: not followed");
    if (errno == ENOENT) return usage_error("path " + display_path(path) + ": no such file in the working copy");
    return engine_error(copy_errno_text("opening", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return engine_error(copy_errno_text("reading", path));
  if (!S_ISREG(st.st_mode)) {
    return usage_error("path " + display_path(path) + " is not a regular file in the working copy (" +
                       (S_ISDIR(st.st_mode) ? "a directory" : "a fifo, socket or device") + "): not read");
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return usage_error("path " + display_path(path) + " is " + std::to_string(st.st_size) +
                       " bytes, more than the " + std::to_string(max_bytes) + " a read returns");
  }
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return engine_error(copy_errno_text("reading", path));
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {  // it grew after fstat
      return usage_error("path " + display_path(path) + " is more than the " + std::to_string(max_bytes) +
                         " bytes a read returns");
    }
  }
  return out;
}

Status write_copy_file(const std::string& root, const std::string& path, const std::string& content, long uid,
                       long gid) {
  auto parts = copy_path_parts(path);
  if (!parts) return parts.error();
  auto dir = open_parent(root, *parts, path, true, uid, gid);
  if (!dir) return dir.error();
  const char* name = parts->back().c_str();
  struct stat st {};
  if (::fstatat(dir->get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) return usage_error("path " + display_path(path) + " is a directory in the working copy");
    if (::unlinkat(dir->get(), name, 0) != 0) return engine_error(copy_errno_text("replacing", path));
  }
  CopyFd fd(::openat(dir->get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) return engine_error(copy_errno_text("creating", path));
  if (auto s = write_copy_bytes(fd.get(), content, path); !s) return s;
  if (uid >= 0 && ::fchown(fd.get(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
    return engine_error(copy_errno_text("giving to the sandbox", path));
  }
  return ok_status();
}

namespace {

// Drops the new files the seed's git repository ignores (`git check-ignore`
// in the user's tree: its .gitignore files, info/exclude, core.excludesFile).
Status leave_out_ignored(const Config& config, std::vector<TextChange>* changes, std::vector<std::string>* ignored) {
  if (config.seed_options.source == "directory") return ok_status();
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(config.seed) / ".git", ec)) return ok_status();
  // -z needs --stdin (git's stdin is /dev/null here): one name a line, quoted
  // by git when unusual; a quoted name matches nothing and stays in the diff.
  std::vector<std::string> args = {"-c", "core.quotePath=false", "check-ignore", "--"};
  for (const auto& c : *changes) {
    if (c.op == FileOp::kCreate) args.push_back(c.path);
  }
  if (args.size() == 4) return ok_status();
  auto r = run_git(config.seed, args, 8 << 20);
  if (!r) return r.error().context("asking the seed's repository which new files it ignores");
  if (r->exit_code > 1) return engine_error("git check-ignore in the seed: " + git_failure(*r));
  std::set<std::string> hit;
  std::istringstream names(r->out);
  for (std::string name; std::getline(names, name);) hit.insert(name);
  std::vector<TextChange> kept;
  for (auto& c : *changes) {
    if (c.op == FileOp::kCreate && hit.count(c.path)) {
      ignored->push_back(c.path);
    } else {
      kept.push_back(std::move(c));
    }
  }
  *changes = std::move(kept);
  return ok_status();
}

// Drops the new files under a directory a tool tagged as its cache with a
// new CACHEDIR.TAG (the Cache Directory Tagging Specification: pytest's
// .pytest_cache, cargo's target/): never source, and outside any allow
// list. Only new files go (a seed file under it stays in the diff), and each
// is listed, so nothing the sandbox hides this way is silently lost: it is
// simply not in the patch that is proven.
void leave_out_caches(std::vector<TextChange>* changes, std::vector<std::string>* ignored) {
  static constexpr std::string_view kTag = "CACHEDIR.TAG";
  static constexpr std::string_view kSignature = "Signature: 8a477f597d28d172789f06886806bc55";
  std::vector<std::string> dirs;  // "dir/"
  for (const auto& c : *changes) {
    const std::size_t slash = c.path.rfind('/');
    const std::string_view name = slash == std::string::npos ? std::string_view(c.path) : std::string_view(c.path).substr(slash + 1);
    if (c.op == FileOp::kCreate && slash != std::string::npos && name == kTag &&
        c.new_content.compare(0, kSignature.size(), kSignature) == 0) {
      dirs.push_back(c.path.substr(0, slash + 1));
    }
  }
  if (dirs.empty()) return;
  std::vector<TextChange> kept;
  for (auto& c : *changes) {
    const bool cached = c.op == FileOp::kCreate &&
                        std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) { return c.path.rfind(d, 0) == 0; });
    if (cached) {
      ignored->push_back(c.path);
    } else {
      kept.push_back(std::move(c));
    }
  }
  *changes = std::move(kept);
}

}  // namespace

Result<CopyChanges> read_copy_changes(const std::string& base, const std::string& work, const Config& config,
                                      std::size_t max_bytes) {
  SeedConfig read;  // a plain directory walk: git never runs in a copy a sandbox wrote
  read.source = "directory";
  read.exclude = config.seed_options.exclude;
  read.exclude.push_back(kSessionScratchName);
  read.max_files = config.seed_options.max_files;
  read.max_bytes = static_cast<std::int64_t>(max_bytes);
  auto before = snapshot_seed_source(base, read);
  if (!before) return before.error().context("reading the seed as it was at open");
  auto after = snapshot_seed_source(work, read);
  if (!after) return after.error().context("reading the working copy");

  CopyChanges out;
  std::map<std::string, const SeedEntry*> old_entries;
  for (const auto& e : before->entries) old_entries[e.path] = &e;
  std::vector<TextChange>& changes = out.changes;
  auto content = [&](const SeedSnapshot& s, const SeedEntry& e) { return read_seed_file(s, e, max_bytes); };
  auto link_finding = [&](const std::string& path, const std::string& what) {
    out.findings.push_back({"symlink", path, "the working copy has " + what + " at " + display_path(path) +
                                                 ": a patch cannot carry it"});
  };
  for (const auto& e : after->entries) {
    auto it = old_entries.find(e.path);
    const SeedEntry* old = it == old_entries.end() ? nullptr : it->second;
    if (old) old_entries.erase(it);
    if (old && old->kind == e.kind && old->sha256 == e.sha256 && old->mode == e.mode) continue;
    if (e.kind == SeedEntry::Kind::kSymlink || (old && old->kind == SeedEntry::Kind::kSymlink)) {
      link_finding(e.path, old ? std::string(copy_kind_word(e.kind)) + " where the seed has " + copy_kind_word(old->kind)
                               : "a new symlink");
      continue;
    }
    if (e.kind == SeedEntry::Kind::kDir) {
      if (old && old->kind == SeedEntry::Kind::kFile) {  // a file became a directory: the file goes
        auto was = content(*before, *old);
        if (!was) return was.error();
        changes.push_back({old->path, FileOp::kDelete, std::move(*was), "", 0100000u | (old->mode & 0111 ? 0755u : 0644u), 0});
      }
      continue;
    }
    TextChange c;
    c.path = e.path;
    c.new_mode = 0100000u | (e.mode & 0111 ? 0755u : 0644u);
    auto now = content(*after, e);
    if (!now) return now.error().context("reading the working copy");
    c.new_content = std::move(*now);
    if (old && old->kind == SeedEntry::Kind::kFile) {
      auto was = content(*before, *old);
      if (!was) return was.error();
      c.old_content = std::move(*was);
      c.old_mode = 0100000u | (old->mode & 0111 ? 0755u : 0644u);
      c.op = FileOp::kModify;
      if (c.old_content == c.new_content && c.old_mode == c.new_mode) continue;
    } else {
      c.op = FileOp::kCreate;
    }
    changes.push_back(std::move(c));
  }
  for (const auto& [path, old] : old_entries) {  // what the copy no longer has
    if (old->kind == SeedEntry::Kind::kSymlink) {
      link_finding(path, "no longer the seed's symlink");
    } else if (old->kind == SeedEntry::Kind::kFile) {
      auto was = content(*before, *old);
      if (!was) return was.error();
      changes.push_back({path, FileOp::kDelete, std::move(*was), "", 0100000u | (old->mode & 0111 ? 0755u : 0644u), 0});
    }
  }
  return out;
}

Result<CopyDiff> judge_copy_changes(CopyChanges changes, const Config& config) {
  CopyDiff out;
  out.findings = std::move(changes.findings);
  if (auto st = leave_out_ignored(config, &changes.changes, &out.ignored); !st) return st.error();
  leave_out_caches(&changes.changes, &out.ignored);
  for (const auto& c : changes.changes) out.changed_paths.push_back(c.path);
  out.diff = write_unified_diff(changes.changes);
  if (!out.diff.empty()) {
    PatchCheck check = check_patch_text(out.diff, contract_limits(config));
    out.findings.insert(out.findings.end(), check.findings.begin(), check.findings.end());
  }
  return out;
}

Result<CopyDiff> diff_copy(const std::string& base, const std::string& work, const Config& config,
                           std::size_t max_bytes) {
  auto changes = read_copy_changes(base, work, config, max_bytes);
  if (!changes) return changes.error();
  return judge_copy_changes(std::move(*changes), config);
}

std::string encode_copy_changes(const CopyChanges& c) {
  std::string out;
  append_frame(&out, static_cast<std::uint64_t>(c.changes.size()));
  for (const auto& t : c.changes) {
    append_frame(&out, t.path);
    append_frame(&out, static_cast<std::uint64_t>(t.op));
    append_frame(&out, t.old_content);
    append_frame(&out, t.new_content);
    append_frame(&out, static_cast<std::uint64_t>(t.old_mode));
    append_frame(&out, static_cast<std::uint64_t>(t.new_mode));
  }
  append_frame(&out, static_cast<std::uint64_t>(c.findings.size()));
  for (const auto& f : c.findings) {
    append_frame(&out, f.code);
    append_frame(&out, f.path);
    append_frame(&out, f.message);
    append_frame(&out, static_cast<std::uint64_t>(f.line));
  }
  return out;
}

Result<CopyChanges> decode_copy_changes(const std::string& bytes) {
  FrameReader in(bytes);
  CopyChanges c;
  std::uint64_t changes = 0, findings = 0;
  bool ok = in.next(&changes);
  for (std::uint64_t i = 0; ok && i < changes; ++i) {
    TextChange t;
    std::uint64_t op = 0, old_mode = 0, new_mode = 0;
    ok = in.next(&t.path) && in.next(&op) && in.next(&t.old_content) && in.next(&t.new_content) &&
         in.next(&old_mode) && in.next(&new_mode) && op <= static_cast<std::uint64_t>(FileOp::kDelete);
    t.op = static_cast<FileOp>(op);
    t.old_mode = static_cast<unsigned>(old_mode);
    t.new_mode = static_cast<unsigned>(new_mode);
    c.changes.push_back(std::move(t));
  }
  ok = ok && in.next(&findings);
  for (std::uint64_t i = 0; ok && i < findings; ++i) {
    Finding f;
    std::uint64_t line = 0;
    ok = in.next(&f.code) && in.next(&f.path) && in.next(&f.message) && in.next(&line);
    f.line = static_cast<std::size_t>(line);
    c.findings.push_back(std::move(f));
  }
  if (!ok || !in.at_end()) return engine_error("the working copy's changes came back malformed");
  return c;
}

}  // namespace lazyagent
