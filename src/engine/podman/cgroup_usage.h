// What a podman sandbox used (the result's `resources`), read by the host
// from the kernel's cgroups, never from anything the sandbox says.
//
// Why a parent cgroup: podman (cgroupfs manager, runc) deletes the
// container's own cgroup as soon as it exits, before anyone can read it. So
// each sandbox is created with `cgroup_parent` = /lazyagent/<run id>; the
// kernel charges CPU, memory and pids hierarchically, so the parent still
// holds the totals after the child is gone. Podman also puts the run's
// conmon (and the runc that sets the container up) in <parent>/conmon.
//
// Measured here (kernel 6.18, cgroups v1+v2 hybrid: runc uses v1), and how
// each figure is read:
//   cpu_ms             exact: parent cpuacct.usage - parent/conmon cpuacct.usage,
//                      read after the container exited (v2: cpu.stat usage_usec)
//   memory_peak_bytes  the container cgroup's memory.max_usage_in_bytes (v2:
//                      memory.peak), a running maximum the kernel keeps, read
//                      every kSampleMs while it runs: exact unless the peak
//                      came in the last interval. A run too short to be
//                      sampled falls back to parent peak - conmon peak (noted).
//                      Includes page cache and the tmpfs pages (/work, /tmp).
//   pids_peak          the container cgroup's pids.peak (6.x kernels have it
//                      in v1 too), read the same way (tasks, i.e. threads)
//   tmpfs_peak_bytes   APPROXIMATE: the largest `shmem` of the container's
//                      memory.stat seen by the sampler: the pages held by its
//                      tmpfs mounts (/work, /tmp, /dev/shm together); a peak
//                      shorter than kSampleMs can be missed. The kernel keeps
//                      no "bytes ever written" counter for a tmpfs.
// Under the systemd cgroup manager (the hosts users have: cgroup v2) a
// cgroup parent must be a slice, and systemd removes a container's scope
// (<slice>/libpod-<id>.scope) when its last process exits, parent totals
// and all: there the watch reads the scope itself while it runs (a "scope"
// watch): the peaks as above, and cpu_ms as the scope's usage_usec at the
// last sample (up to kSampleMs of CPU short: said in the notes).
// Under gVisor (runsc --ignore-cgroups) the sandbox has no cgroup: the
// figures are unavailable, and say so.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace lazyagent {

inline constexpr int kSampleMs = 20;

// "/lazyagent/<run_id>": the cgroup parent of one run's sandbox.
std::string run_cgroup_parent(const std::string& run_id);

// Which cgroup layout the host has under `root` (normally /sys/fs/cgroup):
// "v1" (memory, cpuacct, pids hierarchies: also the hybrid), "v2" (unified
// only), or "" (none readable).
std::string cgroup_layout(const std::string& root);

// Removes the (empty) cgroup directories of `parent` in every hierarchy
// under `root`: the run's own cgroup, once its sandbox is gone (a cgroup still
// holding a process is left: rmdir refuses it), trying for up to `wait_ms`.
// True when none is left. The reaper calls it for runs whose owner died
// before their sandbox's remove step.
bool remove_cgroup_dirs(const std::string& root, const std::string& parent, int wait_ms = 500);

// When the quick tries were not enough (under load, conmon's `podman
// container cleanup` can linger in <parent>/conmon for seconds): a detached
// process of its own session, holding no descriptor of ours, keeps trying for
// up to kLateRemovalSeconds and exits; this process does not wait for it.
inline constexpr int kLateRemovalSeconds = 60;
void remove_cgroup_dirs_later(const std::string& root, const std::string& parent);

// The reaper's sweep: every /lazyagent/<name> cgroup, in every hierarchy,
// whose name is not in `live` (the runs and spares that still have a
// container) and that has not changed for `min_age_seconds`, removed if it
// is empty (rmdir refuses one that holds a process). Returns the names
// removed. Catches what a run killed before its clean-up left, whichever run
// store it used.
std::vector<std::string> remove_orphan_cgroups(const std::string& root, const std::set<std::string>& live,
                                               int min_age_seconds);

// The result's `resources` when nothing can be measured: {"available":
// false, "reason": ...}. Never a made-up figure.
nlohmann::json resources_unavailable(const std::string& reason);

// Watches one sandbox's cgroups from its start until stop(); figures()
// then reads the totals. Destroying it stops the sampler.
class CgroupWatch {
 public:
  CgroupWatch(std::string root, std::string parent);
  // A scope watch: the container's scope under `slice` (a cgroup path, e.g.
  // /machine.slice), read only while it runs; nothing to remove.
  static std::unique_ptr<CgroupWatch> of_systemd_scope(std::string root, std::string slice);
  ~CgroupWatch();
  CgroupWatch(const CgroupWatch&) = delete;
  CgroupWatch& operator=(const CgroupWatch&) = delete;

  // Starts sampling <parent>/libpod-<container_id>.
  void start(const std::string& container_id);
  void stop();
  // After stop(): {"available": true, "source": ..., "cpu_ms", ...,
  // "notes": [...]}, or unavailable with the reason.
  nlohmann::json figures() const;
  // Removes the run's (now empty) cgroup directories in every hierarchy in
  // one pass, without waiting; what conmon still holds is left to
  // remove_cgroup_dirs_later (gone within a moment, or the reaper's sweep).
  void remove_dirs() const;

 private:
  void sample();
  std::string file(const char* hierarchy, const std::string& dir, const char* name) const;

  std::string root_, parent_, layout_, container_dir_;
  bool scope_ = false;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::int64_t mem_peak_ = -1, pids_peak_ = -1, shmem_peak_ = -1, cpu_last_ns_ = -1;
  int samples_ = 0;
};

}  // namespace lazyagent
