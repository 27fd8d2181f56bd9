#include "seed_snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "digest.h"

namespace lazyagent {

namespace fs = std::filesystem;

namespace {

Result<std::string> read_nofollow(const std::string& path, std::size_t max) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return engine_error("reading " + path + ": " + std::strerror(errno));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string msg = std::strerror(errno);
      ::close(fd);
      return engine_error("reading " + path + ": " + msg);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max) {
      ::close(fd);
      return usage_error("seed is larger than " + std::to_string(max) + " bytes at " + path);
    }
  }
  ::close(fd);
  return out;
}

struct Walker {
  const SeedLimits& limits;
  std::string root;
  SeedSnapshot snap;

  Status walk(const std::string& rel) {
    const std::string abs = rel.empty() ? root : root + "/" + rel;
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(abs, ec)) names.push_back(e.path().filename().string());
    if (ec) return usage_error("reading seed directory " + abs + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string child_rel = rel.empty() ? name : rel + "/" + name;
      const std::string child_abs = root + "/" + child_rel;
      struct stat st {};
      if (::lstat(child_abs.c_str(), &st) != 0) {
        return usage_error("reading seed entry " + child_abs + ": " + std::strerror(errno));
      }
      if (snap.entries.size() >= limits.max_files) {
        return usage_error("seed " + root + " has more than " + std::to_string(limits.max_files) + " entries");
      }
      SeedEntry e;
      e.path = child_rel;
      e.mode = st.st_mode & 07777 & ~06000u;  // never carry setuid/setgid bits
      if (S_ISDIR(st.st_mode)) {
        e.kind = SeedEntry::Kind::kDir;
        snap.entries.push_back(e);
        if (auto s = walk(child_rel); !s) return s;
      } else if (S_ISREG(st.st_mode)) {
        auto data = read_nofollow(child_abs, limits.max_bytes - std::min(limits.max_bytes, snap.bytes));
        if (!data) return data.error();
        e.kind = SeedEntry::Kind::kFile;
        e.data = std::move(*data);
        snap.bytes += e.data.size();
        snap.entries.push_back(std::move(e));
      } else if (S_ISLNK(st.st_mode)) {
        std::error_code lec;
        e.kind = SeedEntry::Kind::kSymlink;
        e.data = fs::read_symlink(child_abs, lec).string();
        if (lec) return usage_error("reading symlink " + child_abs + ": " + lec.message());
        snap.entries.push_back(std::move(e));
      } else {
        return usage_error("seed " + root + " holds a special file (device, fifo or socket) at " +
                           child_rel + ": refusing to copy it");
      }
    }
    return ok_status();
  }
};

char kind_char(SeedEntry::Kind k) {
  return k == SeedEntry::Kind::kDir ? 'd' : k == SeedEntry::Kind::kFile ? 'f' : 'l';
}

const SeedEntry* find_entry(const SeedSnapshot& seed, const std::string& path) {
  auto it = std::lower_bound(seed.entries.begin(), seed.entries.end(), path,
                             [](const SeedEntry& e, const std::string& p) { return e.path < p; });
  return (it != seed.entries.end() && it->path == path) ? &*it : nullptr;
}

Status write_file(const std::string& path, const std::string& data, unsigned mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return engine_error("writing " + path + ": " + std::strerror(errno));
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string msg = std::strerror(errno);
      ::close(fd);
      return engine_error("writing " + path + ": " + msg);
    }
    off += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, mode);
  ::close(fd);
  return ok_status();
}

}  // namespace

Status check_seed_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return usage_error("seed " + dir + ": no such directory");
    return usage_error("seed " + dir + " cannot be read: " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return usage_error("seed " + dir + " is not a directory");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return usage_error("seed " + dir + " cannot be read: " + std::strerror(errno));
  ::close(fd);
  if (::access(dir.c_str(), R_OK | X_OK) != 0) {
    return usage_error("seed " + dir + " cannot be read: " + std::strerror(errno));
  }
  return ok_status();
}

Result<SeedSnapshot> snapshot_seed(const std::string& dir, const SeedLimits& limits) {
  std::error_code ec;
  const fs::path abs = fs::absolute(dir, ec);
  struct stat st {};
  if (ec || ::stat(abs.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return usage_error("seed " + dir + " is not a directory");
  }
  Walker w{limits, abs.lexically_normal().string(), {}};
  if (!w.root.empty() && w.root.size() > 1 && w.root.back() == '/') w.root.pop_back();
  if (auto s = w.walk(""); !s) return s.error();
  w.snap.root = w.root;
  std::string canon;
  for (const auto& e : w.snap.entries) {
    canon += kind_char(e.kind);
    canon += ' ' + std::to_string(e.mode) + ' ' + e.path + '\0' + sha256_hex(e.data) + '\n';
  }
  w.snap.sha256 = sha256_hex(canon);
  return std::move(w.snap);
}

std::vector<std::string> changed_paths(const SeedSnapshot& seed, const Patch& patch) {
  std::vector<std::string> out;
  for (const auto& f : patch.files) {
    const SeedEntry* e = find_entry(seed, f.path);
    if (!e || e->kind != SeedEntry::Kind::kFile || e->data != f.content) out.push_back(f.path);
  }
  return out;
}

std::vector<Finding> check_patch_against_seed(const SeedSnapshot& seed, const Patch& patch) {
  std::vector<Finding> out;
  for (const auto& f : patch.files) {
    std::string prefix;
    bool done = false;
    for (std::size_t pos = 0; !done;) {
      const std::size_t slash = f.path.find('/', pos);
      prefix = f.path.substr(0, slash);
      const SeedEntry* e = find_entry(seed, prefix);
      const bool last = slash == std::string::npos;
      if (e && e->kind == SeedEntry::Kind::kSymlink) {
        out.push_back({"through_symlink", f.path, "the seed has a symlink at " + prefix + "; a patch may not write through it"});
        done = true;
      } else if (e && last && e->kind == SeedEntry::Kind::kDir) {
        out.push_back({"replaces_directory", f.path, "the seed has a directory at " + f.path});
        done = true;
      } else if (e && !last && e->kind == SeedEntry::Kind::kFile) {
        out.push_back({"replaces_directory", f.path, "the seed has a file at " + prefix + ", not a directory"});
        done = true;
      }
      if (last) done = true;
      else pos = slash + 1;
    }
  }
  return out;
}

Status materialize_copy(const SeedSnapshot& seed, const Patch& patch, const std::string& dest) {
  if (::mkdir(dest.c_str(), 0755) != 0) {
    return engine_error("creating private seed copy " + dest + ": " + std::strerror(errno));
  }
  std::map<std::string, const PatchFile*> patched;
  for (const auto& f : patch.files) patched[f.path] = &f;
  for (const auto& e : seed.entries) {
    const std::string path = dest + "/" + e.path;
    if (e.kind == SeedEntry::Kind::kDir) {
      if (::mkdir(path.c_str(), 0755) != 0) return engine_error("creating " + path + ": " + std::strerror(errno));
      ::chmod(path.c_str(), (e.mode & 0777) | 0700);
    } else if (e.kind == SeedEntry::Kind::kSymlink) {
      if (::symlink(e.data.c_str(), path.c_str()) != 0) return engine_error("creating symlink " + path + ": " + std::strerror(errno));
    } else {
      auto it = patched.find(e.path);
      const std::string& data = it == patched.end() ? e.data : it->second->content;
      const unsigned mode = it == patched.end() ? (e.mode & 0777) : ((e.mode & 0111) ? 0755u : 0644u);
      if (auto s = write_file(path, data, mode); !s) return s;
      if (it != patched.end()) patched.erase(it);
    }
  }
  for (const auto& [rel, f] : patched) {  // new files, maybe in new directories
    std::error_code ec;
    fs::create_directories(fs::path(dest + "/" + rel).parent_path(), ec);
    if (ec) return engine_error("creating directories for " + rel + ": " + ec.message());
    if (auto s = write_file(dest + "/" + rel, f->content, 0644); !s) return s;
  }
  return ok_status();
}

Status chown_tree(const std::string& path, long uid, long gid) {
  auto one = [&](const std::string& p) -> Status {
    if (::lchown(p.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
      return engine_error("giving " + p + " to host uid " + std::to_string(uid) + ": " + std::strerror(errno));
    }
    return ok_status();
  };
  if (auto st = one(path); !st) return st;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto st = one(it->path().string()); !st) return st;
  }
  if (ec) return engine_error("walking " + path + ": " + ec.message());
  return ok_status();
}

Status remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);  // does not follow symlinks
  if (ec) return engine_error("removing " + path + ": " + ec.message());
  return ok_status();
}

}  // namespace lazyagent
