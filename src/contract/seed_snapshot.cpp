#include "contract/seed_snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "util/digest.h"
#include "contract/seed_source.h"

namespace lazyagent {

namespace fs = std::filesystem;

namespace {

char kind_char(SeedEntry::Kind k) {
  return k == SeedEntry::Kind::kDir ? 'd' : k == SeedEntry::Kind::kFile ? 'f' : 'l';
}

const SeedEntry* find_entry(const SeedSnapshot& seed, const std::string& path) { return find_seed_entry(seed, path); }

std::string canonical_hash(const std::vector<SeedEntry>& entries) {
  std::string canon;
  for (const auto& e : entries) {
    canon += kind_char(e.kind);
    canon += ' ' + std::to_string(e.mode) + ' ' + e.path + '\0' + e.sha256 + '\n';
  }
  return sha256_hex(canon);
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

std::vector<std::string> changed_paths(const SeedSnapshot& seed, const Patch& patch) {
  std::vector<std::string> out;
  for (const auto& f : patch.files) {
    const SeedEntry* e = find_entry(seed, f.path);
    if (!e || e->kind != SeedEntry::Kind::kFile || e->size != f.content.size() || e->sha256 != sha256_hex(f.content))
      out.push_back(f.path);
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

Status chown_tree(const std::string& path, long uid, long gid) {
  auto one = [&](const std::string& p) -> Status {
    if (::lchown(p.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid)) != 0) {
      const std::string what = "giving " + p + " to host uid " + std::to_string(uid) + ": " + std::strerror(errno);
      // Not something a retry fixes: a user talking to root's podman service.
      if (errno == EPERM) {
        return usage_error(what + " (only root can; use root's podman as root, or your own rootless podman: "
                                  "README \"Without root\")");
      }
      return engine_error(what);
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

// ---- the streaming snapshot and copy -------------------------------------------

namespace lazyagent {

namespace {

constexpr std::size_t kSeedIoBuffer = 256 * 1024;

// An owned file descriptor.
struct SeedFd {
  int fd = -1;
  SeedFd() = default;
  explicit SeedFd(int f) : fd(f) {}
  SeedFd(SeedFd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  SeedFd& operator=(SeedFd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~SeedFd() {
    if (fd >= 0) ::close(fd);
  }
};

// The seed's root directory, opened once per snapshot or copy.
SeedFd open_seed_root(const std::string& root) {
  return SeedFd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
}

// Opens rel under the root for reading, one component at a time with
// O_NOFOLLOW: no symlink anywhere on the way is followed, even one made
// after the snapshot.
SeedFd open_in_seed(int root_fd, std::string_view rel) {
  if (root_fd < 0) return SeedFd();
  SeedFd dir;
  int at = root_fd;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = rel.find('/', start);
    const std::string part(rel.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) {
      return SeedFd(::openat(at, part.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    }
    SeedFd next(::openat(at, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.fd < 0) return SeedFd();
    dir = std::move(next);
    at = dir.fd;
    start = slash + 1;
  }
}

SeedFd open_in_seed(const std::string& root, std::string_view rel) {
  SeedFd root_fd = open_seed_root(root);
  return open_in_seed(root_fd.fd, rel);
}

// One read buffer per thread, reused from file to file (a fresh zeroed
// 256 KiB per small file cost more than the copy itself).
char* io_buffer() {
  thread_local std::unique_ptr<char[]> buf(new char[kSeedIoBuffer]);
  return buf.get();
}

// Streams an open file through `sink` while hashing it; at most `max` bytes.
template <typename Sink>
Result<std::string> stream_file(int fd, const std::string& what, std::uint64_t max, std::uint64_t* size, Sink&& sink) {
  Sha256 h;
  char* buf = io_buffer();
  *size = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf, kSeedIoBuffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return engine_error("reading " + what + ": " + std::strerror(errno));
    if (n == 0) break;
    *size += static_cast<std::uint64_t>(n);
    if (*size > max) return usage_error(what + " is larger than " + std::to_string(max) + " bytes");
    const std::string_view chunk(buf, static_cast<std::size_t>(n));
    h.update(chunk);
    if (auto st = sink(chunk); !st) return st.error();
  }
  return h.hex();
}

Status write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return engine_error("writing " + path + ": " + std::strerror(errno));
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return ok_status();
}

SeedFd create_file(const std::string& path, unsigned mode) {
  return SeedFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777));
}

// Runs job(i) for i in [0, n) on up to kSeedIoThreads threads; the first
// error (by index) wins. Hashing many small files is bound by the disk's
// latency, not by one core: a few reads in flight at once go faster
// (bench/seed_snapshot.sh: the snapshot's ratio to `xargs sha256sum` went
// from 1.37 to 0.98; alternating the two builds, 11 rounds, snapshot 0.67x).
// The copy stays serial: the same measurements disagreed about it (0.64x in
// one A/B, 1.20x in another, no change against tar), so no gain shown.
constexpr unsigned kSeedIoThreads = 4;

Status parallel_for(std::size_t n, const std::function<Status(std::size_t)>& job) {
  if (n == 0) return ok_status();
  const unsigned threads = static_cast<unsigned>(std::min<std::size_t>(kSeedIoThreads, n));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::size_t error_index = n;
  std::optional<Error> error;
  auto work = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n || failed.load()) return;
      Status st = job(i);
      if (!st) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < error_index) {
          error_index = i;
          error = st.error();
        }
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) return *error;
  return ok_status();
}

std::string bytes_refusal(const std::string& root, std::uint64_t bytes, std::int64_t limit) {
  return "seed " + root + " holds more than " + std::to_string(limit) + " bytes of files (" + std::to_string(bytes) +
         " so far); the limit is seed.max_bytes in the config, which can be raised up to " +
         std::to_string(kMaxSeedBytesCap) + ", or leave paths out with seed.exclude";
}

}  // namespace

const SeedEntry* find_seed_entry(const SeedSnapshot& seed, std::string_view path) {
  auto it = std::lower_bound(seed.entries.begin(), seed.entries.end(), path,
                             [](const SeedEntry& e, std::string_view p) { return seed_path_less(e.path, p); });
  return (it != seed.entries.end() && it->path == path) ? &*it : nullptr;
}

Result<SeedSnapshot> snapshot_seed_source(const std::string& dir, const SeedConfig& config) {
  auto listing = list_seed(dir, config);
  if (!listing) return listing.error();
  SeedSnapshot snap;
  snap.root = listing->root;
  snap.kind = listing->kind;
  snap.skipped = std::move(listing->skipped);
  snap.excluded = listing->excluded;
  snap.streamed = true;
  snap.entries.reserve(listing->entries.size());
  const std::uint64_t max_bytes = static_cast<std::uint64_t>(config.max_bytes);
  const SeedFd root_fd = open_seed_root(snap.root);
  std::vector<std::size_t> files;  // indices of regular files, hashed in parallel
  for (const ListedEntry& l : listing->entries) {
    const std::string abs = snap.root + "/" + l.path;
    struct stat st {};
    if (::lstat(abs.c_str(), &st) != 0) return usage_error("reading seed entry " + abs + ": " + std::strerror(errno));
    SeedEntry e;
    e.path = l.path;
    e.mode = st.st_mode & 07777 & ~06000u;  // never carry setuid/setgid bits
    if (S_ISDIR(st.st_mode)) {
      e.kind = SeedEntry::Kind::kDir;
      e.sha256 = sha256_hex("");
    } else if (l.dir) {
      return usage_error("seed " + snap.root + ": " + l.path + " holds listed files but is not a directory (a symlink?)");
    } else if (S_ISREG(st.st_mode)) {
      e.kind = SeedEntry::Kind::kFile;
      if (snap.bytes + static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        return usage_error(bytes_refusal(snap.root, snap.bytes + static_cast<std::uint64_t>(st.st_size), config.max_bytes));
      }
      e.size = static_cast<std::uint64_t>(st.st_size);  // hashed below; the bytes read decide
      snap.bytes += e.size;
      files.push_back(snap.entries.size());
    } else if (S_ISLNK(st.st_mode)) {
      std::error_code lec;
      e.kind = SeedEntry::Kind::kSymlink;
      e.data = fs::read_symlink(abs, lec).string();
      if (lec) return usage_error("reading symlink " + abs + ": " + lec.message());
      e.sha256 = sha256_hex(e.data);
    } else {
      return usage_error("seed " + snap.root + " holds a special file (device, fifo or socket) at " + l.path +
                         ": refusing to copy it (leave it out with seed.exclude)");
    }
    snap.entries.push_back(std::move(e));
  }
  // Each file hashed as it streams; the bytes read (not the sizes lstat
  // gave: a file may grow) are held to the cap again.
  std::atomic<std::uint64_t> read_bytes{0};
  auto st = parallel_for(files.size(), [&](std::size_t k) -> Status {
    SeedEntry& e = snap.entries[files[k]];
    const std::string abs = snap.root + "/" + e.path;
    SeedFd fd = open_in_seed(root_fd.fd, e.path);
    if (fd.fd < 0) return usage_error("reading seed file " + abs + ": " + std::strerror(errno));
    std::uint64_t size = 0;
    auto sha = stream_file(fd.fd, "seed file " + abs, max_bytes, &size, [](std::string_view) { return ok_status(); });
    if (!sha) return sha.error();
    if (read_bytes.fetch_add(size) + size > max_bytes) {
      return usage_error(bytes_refusal(snap.root, read_bytes.load(), config.max_bytes));
    }
    e.sha256 = std::move(*sha);
    e.size = size;
    return ok_status();
  });
  if (!st) return st.error();
  snap.bytes = read_bytes.load();
  snap.sha256 = canonical_hash(snap.entries);
  return snap;
}

Result<std::string> read_seed_file(const SeedSnapshot& seed, const SeedEntry& e, std::size_t max_bytes) {
  if (e.kind != SeedEntry::Kind::kFile) return usage_error("seed entry " + e.path + " is not a file");
  if (e.size > max_bytes) {
    return usage_error("seed file " + e.path + " is " + std::to_string(e.size) + " bytes, more than " +
                       std::to_string(max_bytes) + " can be read for a patch");
  }
  if (!seed.streamed) return e.data;
  const std::string abs = seed.root + "/" + e.path;
  SeedFd fd = open_in_seed(seed.root, e.path);
  if (fd.fd < 0) return engine_error("reading seed file " + abs + ": " + std::strerror(errno));
  std::string out;
  out.reserve(e.size);
  std::uint64_t size = 0;
  auto sha = stream_file(fd.fd, "seed file " + abs, max_bytes, &size, [&](std::string_view chunk) {
    out.append(chunk);
    return ok_status();
  });
  if (!sha) return sha.error();
  if (*sha != e.sha256) {
    return usage_error("seed file " + abs + " changed after the seed snapshot was taken; run again on a seed that is not changing");
  }
  return out;
}

Status write_seed_copy(const SeedSnapshot& seed, const std::vector<FileWrite>& writes, const std::string& dest) {
  if (::mkdir(dest.c_str(), 0755) != 0) {
    return engine_error("creating private seed copy " + dest + ": " + std::strerror(errno));
  }
  std::map<std::string, const FileWrite*> pending;
  for (const auto& w : writes) pending[w.path] = &w;
  const SeedFd root_fd = seed.streamed ? open_seed_root(seed.root) : SeedFd();
  for (const auto& e : seed.entries) {
    const std::string path = dest + "/" + e.path;
    auto it = pending.find(e.path);
    if (e.kind == SeedEntry::Kind::kDir) {
      if (::mkdir(path.c_str(), 0755) != 0) return engine_error("creating " + path + ": " + std::strerror(errno));
      ::chmod(path.c_str(), (e.mode & 0777) | 0700);
      continue;
    }
    if (e.kind == SeedEntry::Kind::kSymlink) {
      if (::symlink(e.data.c_str(), path.c_str()) != 0) {
        return engine_error("creating symlink " + path + ": " + std::strerror(errno));
      }
      continue;
    }
    if (it != pending.end()) {
      const FileWrite* w = it->second;
      pending.erase(it);
      if (w->remove) continue;
      SeedFd out = create_file(path, w->mode);
      if (out.fd < 0) return engine_error("writing " + path + ": " + std::strerror(errno));
      if (auto st = write_all(out.fd, w->content, path); !st) return st;
      ::fchmod(out.fd, w->mode & 0777);
      continue;
    }
    if (!seed.streamed) {
      SeedFd out = create_file(path, e.mode);
      if (out.fd < 0) return engine_error("writing " + path + ": " + std::strerror(errno));
      if (auto st = write_all(out.fd, e.data, path); !st) return st;
      ::fchmod(out.fd, e.mode & 0777);
      continue;
    }
    const std::string src = seed.root + "/" + e.path;
    SeedFd in = open_in_seed(root_fd.fd, e.path);
    if (in.fd < 0) return engine_error("reading seed file " + src + ": " + std::strerror(errno));
    SeedFd out = create_file(path, e.mode);
    if (out.fd < 0) return engine_error("writing " + path + ": " + std::strerror(errno));
    std::uint64_t size = 0;
    auto sha = stream_file(in.fd, "seed file " + src, e.size, &size,
                           [&](std::string_view chunk) { return write_all(out.fd, chunk, path); });
    if (!sha) {
      return sha.error().kind == ErrorKind::kUsage
                 ? usage_error("seed file " + src + " grew after the seed snapshot was taken; run again on a seed that is not changing")
                 : sha.error();
    }
    if (*sha != e.sha256) {
      return usage_error("seed file " + src + " changed after the seed snapshot was taken; run again on a seed that is not changing");
    }
    ::fchmod(out.fd, e.mode & 0777);
  }
  for (const auto& [rel, w] : pending) {  // new files, maybe in new directories
    if (w->remove) continue;
    std::error_code ec;
    fs::create_directories(fs::path(dest + "/" + rel).parent_path(), ec);
    if (ec) return engine_error("creating directories for " + rel + ": " + ec.message());
    const std::string path = dest + "/" + rel;
    SeedFd out = create_file(path, w->mode);
    if (out.fd < 0) return engine_error("writing " + path + ": " + std::strerror(errno));
    if (auto st = write_all(out.fd, w->content, path); !st) return st;
    ::fchmod(out.fd, w->mode & 0777);
  }
  return ok_status();
}

nlohmann::json seed_summary_json(const SeedSnapshot& seed, bool with_entries) {
  std::size_t files = 0, dirs = 0, links = 0;
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : seed.entries) {
    files += e.kind == SeedEntry::Kind::kFile;
    dirs += e.kind == SeedEntry::Kind::kDir;
    links += e.kind == SeedEntry::Kind::kSymlink;
    if (with_entries) {
      entries.push_back({{"kind", std::string(1, kind_char(e.kind))},
                         {"mode", e.mode},
                         {"path", e.path},
                         {"size", e.size},
                         {"sha256", e.sha256}});
    }
  }
  nlohmann::json j = {{"root", seed.root},     {"kind", seed_kind_name(seed.kind)}, {"sha256", seed.sha256},
                      {"files", files},        {"directories", dirs},               {"symlinks", links},
                      {"bytes", seed.bytes},   {"excluded", seed.excluded},         {"skipped", seed.skipped}};
  if (with_entries) j["entries"] = entries;
  return j;
}

}  // namespace lazyagent
