#include "engine/podman/cgroup_usage.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
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

std::string CgroupWatch::file(const char* hierarchy, const std::string& dir, const char* name) const {
  const std::string base = layout_ == "v1" ? root_ + "/" + hierarchy + parent_ : root_ + parent_;
  return base + (dir.empty() ? "" : "/" + dir) + "/" + name;
}

void CgroupWatch::start(const std::string& container_id) {
  stop();
  container_dir_ = "libpod-" + container_id;
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
  std::lock_guard<std::mutex> lock(mu_);
  if (mem < 0 && pids < 0 && shmem < 0) return;  // not there yet, or gone
  ++samples_;
  mem_peak_ = std::max(mem_peak_, mem);
  pids_peak_ = std::max(pids_peak_, pids);
  shmem_peak_ = std::max(shmem_peak_, shmem);
}

json CgroupWatch::figures() const {
  if (layout_.empty()) return resources_unavailable("no readable cgroup hierarchy under " + root_);
  const bool v1 = layout_ == "v1";
  json notes = json::array();
  json r = {{"available", true},
            {"source", "cgroup " + layout_ + " of the sandbox, read by the host (parent " + parent_ + ")"},
            {"sample_ms", kSampleMs}};
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

void remove_cgroup_dirs(const std::string& root, const std::string& parent) {
  const std::string layout = cgroup_layout(root);
  if (layout.empty()) return;
  std::vector<std::string> bases;
  if (layout == "v1") {
    for (const auto& h : cg_subdirs(root)) bases.push_back(root + "/" + h + parent);
  } else {
    bases.push_back(root + parent);
  }
  // conmon may still be in <parent>/conmon for a moment after its container
  // is removed (a cgroup with a process in it cannot be removed): a few tries.
  for (int attempt = 0; attempt < 20; ++attempt) {
    bool left = false;
    for (const auto& b : bases) {
      if (!cg_is_dir(b)) continue;
      for (const auto& d : cg_subdirs(b)) (void)::rmdir((b + "/" + d).c_str());
      if (::rmdir(b.c_str()) != 0 && errno == EBUSY) left = true;
    }
    if (!left) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

void CgroupWatch::remove_dirs() const { remove_cgroup_dirs(root_, parent_); }

}  // namespace lazyagent
