// Who owns a container or a private seed copy, and is that owner still alive?
//
// Every container carries the orchestrator's uid@host, pid and the pid's start
// time (from /proc/PID/stat, so a recycled pid is not mistaken for the owner).
// A container whose owner on this host is gone was left by a crash (kill -9)
// and may be reaped; one whose owner still runs belongs to a concurrent run
// and must be left alone.
#pragma once

#include <map>
#include <string>

namespace lazyagent {

struct Owner {
  std::string user_host;  // "0@vm"
  long pid = 0;
  std::string start_time; // field 22 of /proc/PID/stat
};

Owner current_owner();

// Start time of a live pid, or "" when no such process.
std::string process_start_time(long pid);

// True when the owner described by these labels is a live process on this
// host; false when it is on this host and gone. Containers from another host
// (a shared remote podman) count as alive: we cannot know, so we do not touch.
bool owner_alive(const std::map<std::string, std::string>& labels);

// The labels every container of ours carries.
std::map<std::string, std::string> owner_labels(const Owner& o, const std::string& role,
                                                const std::string& run_id);

// "r-20261202-153012-3fa9c1": sortable by time, unique enough per host.
std::string new_run_id();

}  // namespace lazyagent
