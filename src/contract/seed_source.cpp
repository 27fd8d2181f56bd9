// Listing a seed (seed_source.h).
#include "contract/seed_source.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "util/git_process.h"
#include "contract/patch_contract.h"
#include "util/path_glob.h"

namespace lazyagent {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxGitListingBytes = std::size_t{512} << 20;

std::string cap_refusal(const std::string& root, std::size_t count, std::int64_t limit) {
  return "seed " + root + " has more than " + std::to_string(limit) + " entries (" + std::to_string(count) +
         " so far); the limit is seed.max_files in the config, which can be raised up to " +
         std::to_string(kMaxSeedFilesCap) + ", or leave paths out with seed.exclude";
}

bool is_git_dir_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return (slash == std::string_view::npos ? path : path.substr(slash + 1)) == ".git";
}

class Lister {
 public:
  Lister(std::string root, const SeedConfig& config)
      : root_(std::move(root)), config_(config), globs_(compile_globs(config.exclude)) {}

  SeedListing listing;

  Status add(std::string path, bool dir) {
    if (listing.entries.size() >= static_cast<std::size_t>(config_.max_files)) {
      return usage_error(cap_refusal(root_, listing.entries.size() + 1, config_.max_files));
    }
    listing.entries.push_back({std::move(path), dir});
    return ok_status();
  }

  bool leave_out(const std::string& path, bool dir) {
    if (dir && !config_.include_git && is_git_dir_name(path)) return true;
    if (path_excluded(globs_, path, dir)) {
      ++listing.excluded;
      return true;
    }
    return false;
  }

  // A sorted walk that never follows a symlink; excluded directories are not entered.
  Status walk(const std::string& rel) {
    const std::string abs = rel.empty() ? root_ : root_ + "/" + rel;
    DIR* d = ::opendir(abs.c_str());
    if (d == nullptr) return usage_error("reading seed directory " + abs + ": " + std::strerror(errno));
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) return usage_error("reading seed directory " + abs + ": " + std::strerror(err));
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      struct stat st {};
      if (::lstat((root_ + "/" + child).c_str(), &st) != 0) {
        return usage_error("reading seed entry " + root_ + "/" + child + ": " + std::strerror(errno));
      }
      const bool dir = S_ISDIR(st.st_mode);
      if (leave_out(child, dir)) continue;
      if (auto s = add(child, dir); !s) return s;
      if (dir) {
        if (auto s = walk(child); !s) return s;
      }
    }
    return ok_status();
  }

  Status list_git() {
    auto staged = run_git(root_, {"ls-files", "-z", "--stage"}, kMaxGitListingBytes);
    if (!staged) return staged.error().context("listing the git seed " + root_);
    if (staged->exit_code != 0) {
      return usage_error("listing the git seed " + root_ + ": git ls-files: " + git_failure(*staged));
    }
    auto others = run_git(root_, {"ls-files", "-z", "--others", "--exclude-standard"}, kMaxGitListingBytes);
    if (!others) return others.error().context("listing the git seed " + root_);
    if (others->exit_code != 0) {
      return usage_error("listing the git seed " + root_ + ": git ls-files --others: " + git_failure(*others));
    }
    std::set<std::string, bool (*)(const std::string&, const std::string&)> files(
        [](const std::string& a, const std::string& b) { return seed_path_less(a, b); });
    for_each_z(staged->out, [&](std::string_view rec) {
      // "<mode> <object> <stage>\t<path>"
      const std::size_t tab = rec.find('\t');
      if (tab == std::string_view::npos) return;
      const std::string path(rec.substr(tab + 1));
      if (rec.substr(0, 6) == "160000") {
        listing.skipped.push_back(path + ": a submodule (not copied)");
        return;
      }
      struct stat st {};
      if (::lstat((root_ + "/" + path).c_str(), &st) != 0) return;  // deleted in the work tree
      files.insert(path);
    });
    for_each_z(others->out, [&](std::string_view rec) {
      if (!rec.empty() && rec.back() == '/') {
        listing.skipped.push_back(std::string(rec.substr(0, rec.size() - 1)) + ": a nested git repository (not copied)");
        return;
      }
      files.insert(std::string(rec));
    });
    // Directories are the files' parents; each is listed once, before its content.
    std::set<std::string> dirs_seen, excluded_dirs;
    for (const std::string& f : files) {
      bool out = false;
      for (std::size_t slash = f.find('/'); slash != std::string::npos && !out; slash = f.find('/', slash + 1)) {
        const std::string dir = f.substr(0, slash);
        if (excluded_dirs.count(dir)) {
          out = true;
        } else if (!dirs_seen.count(dir)) {
          if (leave_out(dir, true)) {
            excluded_dirs.insert(dir);
            out = true;
          } else {
            dirs_seen.insert(dir);
            if (auto s = add(dir, true); !s) return s;
          }
        }
      }
      if (out || leave_out(f, false)) continue;
      if (auto s = add(f, false); !s) return s;
    }
    if (config_.include_git) return add_git_metadata();
    return ok_status();
  }

 private:
  template <typename F>
  static void for_each_z(const std::string& text, F&& f) {
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t end = text.find('\0', pos);
      if (end == std::string::npos) end = text.size();
      if (end > pos) f(std::string_view(text).substr(pos, end - pos));
      pos = end + 1;
    }
  }

  Status add_git_metadata() {
    struct stat st {};
    if (::lstat((root_ + "/.git").c_str(), &st) != 0) return ok_status();
    const bool dir = S_ISDIR(st.st_mode);
    if (auto s = add(".git", dir); !s) return s;
    if (dir) return walk(".git");
    return ok_status();
  }

  std::string root_;
  const SeedConfig& config_;
  std::vector<PathGlob> globs_;
};

}  // namespace

const char* seed_kind_name(SeedKind k) { return k == SeedKind::kGit ? "git" : "directory"; }

bool seed_path_less(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    if (a[i] == '/') return true;
    if (b[i] == '/') return false;
    return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  }
  return a.size() < b.size();
}

std::string absolute_seed_path(const std::string& dir) {
  if (dir.empty()) return dir;
  std::error_code ec;
  const fs::path abs = fs::absolute(dir, ec);
  if (ec) return dir;
  std::string root = abs.lexically_normal().string();
  if (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

Result<SeedListing> list_seed(const std::string& dir, const SeedConfig& config) {
  std::error_code ec;
  const fs::path abs = fs::absolute(dir, ec);
  struct stat st {};
  if (ec || ::stat(abs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return usage_error("seed " + dir + " is not a directory");
  }
  const std::string root = absolute_seed_path(dir);
  struct stat git_st {};
  const bool has_git = ::lstat((root + "/.git").c_str(), &git_st) == 0;
  SeedKind kind = SeedKind::kDirectory;
  if (config.source == "git") {
    kind = SeedKind::kGit;
  } else if (config.source == "auto" && has_git) {
    kind = SeedKind::kGit;
  }
  Lister l(root, config);
  l.listing.root = root;
  l.listing.kind = kind;
  if (auto s = kind == SeedKind::kGit ? l.list_git() : l.walk(""); !s) return s.error();
  // The walk emits this order already; git's own order is by bytes.
  std::stable_sort(l.listing.entries.begin(), l.listing.entries.end(),
                   [](const ListedEntry& a, const ListedEntry& b) { return seed_path_less(a.path, b.path); });
  return std::move(l.listing);
}

nlohmann::json seed_source_json(const SeedListing& l, const SeedConfig& config) {
  return nlohmann::json{{"kind", seed_kind_name(l.kind)},
                        {"exclude", config.exclude},
                        {"include_git", config.include_git},
                        {"entries", l.entries.size()},
                        {"excluded", l.excluded},
                        {"skipped", l.skipped}};
}

}  // namespace lazyagent
