#include "engine/podman/cgroup_usage.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

namespace lazyagent {

using nlohmann::json;

namespace {

bool cg_is_dir(const std::string& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The first number in a file, or -1.
std::int64_t cg_read_number(const std::string& path) {
  std::ifstream f(path);
  std::int64_t v = -1;
  if (!(f >> v)) return -1;
  return v;
}

// "key value" lines (memory.stat, cpu.stat): the value of `key`, or -1.
std::int64_t cg_read_keyed(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  std::string k;
  std::int64_t v = 0;
  while (f >> k >> v) {
    if (k == key) return v;
  }
  return -1;
}

std::vector<std::string> cg_subdirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != ".." && cg_is_dir(dir + "/" + n)) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

}  // namespace

std::string run_cgroup_parent(const std::string& run_id) { return "/lazyagent/" + run_id; }

std::string cgroup_layout(const std::string& root) {
  if (cg_is_dir(root + "/memory") && cg_is_dir(root + "/cpuacct") && cg_is_dir(root + "/pids")) return "v1";
  if (::access((root + "/cgroup.controllers").c_str(), R_OK) == 0) return "v2";
  return "";
}

json resources_unavailable(const std::string& reason) { return {{"available", false}, {"reason", reason}}; }

CgroupWatch::CgroupWatch(std::string root, std::string parent)
    : root_(std::move(root)), parent_(std::move(parent)), layout_(cgroup_layout(root_)) {}

CgroupWatch::~CgroupWatch() { stop(); }

std::unique_ptr<CgroupWatch> CgroupWatch::of_systemd_scope(std::string root, std::string slice) {
  auto w = std::make_unique<CgroupWatch>(std::move(root), std::move(slice));
  w->scope_ = true;
  return w;
}

std::string CgroupWatch::file(const char* hierarchy, const std::string& dir, const char* name) const {
  const std::string base = layout_ == "v1" ? root_ + "/" + hierarchy + parent_ : root_ + parent_;
  return base + (dir.empty() ? "" : "/" + dir) + "/" + name;
}

void CgroupWatch::start(const std::string& container_id) {
  stop();
  container_dir_ = "libpod-" + container_id + (scope_ ? ".scope" : "");
  if (layout_.empty()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    while (!stop_) {
      sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(kSampleMs));
    }
  });
}

void CgroupWatch::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void CgroupWatch::sample() {
  const bool v1 = layout_ == "v1";
  const std::int64_t mem = cg_read_number(file("memory", container_dir_, v1 ? "memory.max_usage_in_bytes" : "memory.peak"));
  const std::int64_t pids = cg_read_number(file("pids", container_dir_, "pids.peak"));
  const std::int64_t shmem = cg_read_keyed(file("memory", container_dir_, "memory.stat"), "shmem");
  const std::int64_t cpu_us = scope_ ? cg_read_keyed(file("", container_dir_, "cpu.stat"), "usage_usec") : -1;
  std::lock_guard<std::mutex> lock(mu_);
  if (mem < 0 && pids < 0 && shmem < 0) return;  // not there yet, or gone
  ++samples_;
  if (cpu_us >= 0) cpu_last_ns_ = std::max(cpu_last_ns_, cpu_us * 1000);
  mem_peak_ = std::max(mem_peak_, mem);
  pids_peak_ = std::max(pids_peak_, pids);
  shmem_peak_ = std::max(shmem_peak_, shmem);
}

json CgroupWatch::figures() const {
  if (layout_.empty()) return resources_unavailable("no readable cgroup hierarchy under " + root_);
  const bool v1 = layout_ == "v1";
  json notes = json::array();
  json r = {{"available", true},
            {"source", "cgroup " + layout_ + " of the sandbox, read by the host (" +
                           (scope_ ? "its systemd scope under " : "parent ") + parent_ + ")"},
            {"sample_ms", kSampleMs}};
  if (scope_) {
    // systemd removed the scope at exit: the samples are all there is.
    std::lock_guard<std::mutex> lock(mu_);
    if (samples_ == 0) return resources_unavailable("the run ended before its systemd scope could be read");
    r["cpu_ms"] = cpu_last_ns_ >= 0 ? json(cpu_last_ns_ / 1000000) : json(nullptr);
    r["memory_peak_bytes"] = mem_peak_ >= 0 ? json(mem_peak_) : json(nullptr);
    r["pids_peak"] = pids_peak_ >= 0 ? json(pids_peak_) : json(nullptr);
    r["tmpfs_peak_bytes"] = shmem_peak_ >= 0 ? json(shmem_peak_) : json(nullptr);
    r["samples"] = samples_;
    r["notes"] = json::array(
        {"cpu_ms: the scope's usage at the last sample (systemd removes it when the container exits): up to " +
             std::to_string(kSampleMs) + " ms of CPU short",
         "memory_peak_bytes, pids_peak: the scope's running maxima, read every " + std::to_string(kSampleMs) +
             " ms: a peak in the last interval can be missed",
         "tmpfs_peak_bytes: the largest shmem (pages held by /work, /tmp and /dev/shm) seen every " +
             std::to_string(kSampleMs) + " ms; a shorter peak can be missed"});
    return r;
  }
  // CPU: exact, hierarchical totals that outlive the container's cgroup.
  auto cpu_ns = [&](const std::string& dir) -> std::int64_t {
    if (v1) return cg_read_number(file("cpuacct", dir, "cpuacct.usage"));
    const std::int64_t us = cg_read_keyed(file("", dir, "cpu.stat"), "usage_usec");
    return us < 0 ? -1 : us * 1000;
  };
  const std::int64_t all = cpu_ns(""), conmon = cpu_ns("conmon");
  if (all < 0) return resources_unavailable("the run's cgroup " + parent_ + " could not be read");
  r["cpu_ms"] = (all - std::max<std::int64_t>(conmon, 0)) / 1000000;
  std::lock_guard<std::mutex> lock(mu_);
  if (mem_peak_ >= 0) {
    r["memory_peak_bytes"] = mem_peak_;
  } else {
    const char* peak = v1 ? "memory.max_usage_in_bytes" : "memory.peak";
    const std::int64_t p = cg_read_number(file("memory", "", peak)), c = cg_read_number(file("memory", "conmon", peak));
    if (p >= 0) {
      r["memory_peak_bytes"] = p - std::max<std::int64_t>(c, 0);
      notes.push_back("memory_peak_bytes: the run ended before the sampler read the container's cgroup: the run's "
                      "peak less conmon's (an approximation)");
    } else {
      r["memory_peak_bytes"] = nullptr;
      notes.push_back(std::string("memory_peak_bytes: this kernel has no ") + peak);
    }
  }
  r["pids_peak"] = pids_peak_ >= 0 ? json(pids_peak_) : json(nullptr);
  if (pids_peak_ < 0) notes.push_back("pids_peak: not sampled (no pids.peak, or the run ended first)");
  r["tmpfs_peak_bytes"] = shmem_peak_ >= 0 ? json(shmem_peak_) : json(nullptr);
  notes.push_back("tmpfs_peak_bytes: the largest shmem (pages held by /work, /tmp and /dev/shm) seen every " +
                  std::to_string(kSampleMs) + " ms; a shorter peak can be missed");
  r["samples"] = samples_;
  r["notes"] = notes;
  return r;
}

namespace {

// The directories of `parent` in every hierarchy, children first: the order
// rmdir needs (a cgroup with a child cannot be removed).
std::vector<std::string> cgroup_dirs_of(const std::string& root, const std::string& parent) {
  const std::string layout = cgroup_layout(root);
  std::vector<std::string> bases, out;
  if (layout == "v1") {
    for (const auto& h : cg_subdirs(root)) bases.push_back(root + "/" + h + parent);
  } else if (layout == "v2") {
    bases.push_back(root + parent);
  }
  for (const auto& b : bases) {
    if (!cg_is_dir(b)) continue;
    for (const auto& d : cg_subdirs(b)) out.push_back(b + "/" + d);
    out.push_back(b);
  }
  return out;
}

// One pass of rmdir over `dirs`; true when none of them is left.
bool rmdir_all(const std::vector<std::string>& dirs) {
  bool left = false;
  for (const auto& d : dirs) {
    if (::rmdir(d.c_str()) != 0 && errno != ENOENT) left = true;
  }
  return !left;
}

}  // namespace

bool remove_cgroup_dirs(const std::string& root, const std::string& parent, int wait_ms) {
  const std::vector<std::string> dirs = cgroup_dirs_of(root, parent);
  // conmon, and the `podman container cleanup` it starts, may still be in
  // <parent>/conmon for a moment after its container is removed (a cgroup
  // with a process in it cannot be removed): a few tries.
  for (int waited = 0;; waited += 25) {
    if (rmdir_all(dirs)) return true;
    if (waited >= wait_ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

void remove_cgroup_dirs_later(const std::string& root, const std::string& parent) {
  const std::vector<std::string> dirs = cgroup_dirs_of(root, parent);
  if (dirs.empty()) return;
  // Everything the child touches is made before fork(): after it, in a
  // process with threads, only async-signal-safe calls are allowed.
  std::vector<const char*> paths;
  for (const auto& d : dirs) paths.push_back(d.c_str());
  const pid_t child = ::fork();
  if (child < 0) return;  // the reaper's sweep removes them instead
  if (child > 0) {
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return;
  }
  // The child: a grandchild of its own session does the work, so that this
  // process never waits for it and it holds none of its descriptors (a
  // caller reading our stdout to its end must not wait for it either).
  ::setsid();
  if (::fork() != 0) ::_exit(0);
  ::syscall(SYS_close_range, 0U, ~0U, 0U);
  for (int i = 0; i < kLateRemovalSeconds * 10; ++i) {
    bool left = false;
    for (const char* d : paths) {
      if (::rmdir(d) != 0 && errno != ENOENT) left = true;
    }
    if (!left) break;
    const struct timespec tenth = {0, 100 * 1000 * 1000};
    ::nanosleep(&tenth, nullptr);
  }
  ::_exit(0);
}

std::vector<std::string> remove_orphan_cgroups(const std::string& root, const std::set<std::string>& live,
                                               int min_age_seconds) {
  std::set<std::string> names;
  const std::string layout = cgroup_layout(root);
  std::vector<std::string> tops;
  if (layout == "v1") {
    for (const auto& h : cg_subdirs(root)) tops.push_back(root + "/" + h + "/lazyagent");
  } else if (layout == "v2") {
    tops.push_back(root + "/lazyagent");
  }
  const std::time_t now = std::time(nullptr);
  for (const auto& top : tops) {
    for (const auto& n : cg_subdirs(top)) {
      if (live.count(n)) continue;
      struct stat st {};
      if (::stat((top + "/" + n).c_str(), &st) != 0 || now - st.st_mtime < min_age_seconds) continue;
      names.insert(n);
    }
  }
  std::vector<std::string> removed;
  for (const auto& n : names) {
    if (remove_cgroup_dirs(root, run_cgroup_parent(n), 0)) removed.push_back(n);
  }
  return removed;
}

void CgroupWatch::remove_dirs() const {
  if (scope_) return;  // systemd's own, removed by systemd
  // One pass on the run's path: conmon is usually still in <parent>/conmon
  // right after the DELETE, and waiting for it here cost a 25 ms sleep on
  // most cold runs (measured: 27 ms of a 114-161 ms remove step). What is
  // left goes to the detached remover, which keeps trying off the user's
  // path (a fork, ~1 ms).
  if (!remove_cgroup_dirs(root_, parent_, 0)) remove_cgroup_dirs_later(root_, parent_);
}

}  // namespace lazyagent
