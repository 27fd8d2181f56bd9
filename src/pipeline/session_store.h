// The sessions of the run store: an agent's working copies and what is known
// of them, on disk so that a session outlives the process that opened it (the
// MCP client reconnects, the CLI runs once per command).
//
// Layout under the run store (run_store.h), every directory 0700:
//   sessions/<id>/session.json  the record (atomic writes): id, seed, config,
//                               the flags given at open, created, last_used,
//                               execs, the policy's limits
//   sessions/<id>/base/         the seed as it was at open (write_seed_copy),
//                               never mounted: what `diff` compares against
//   sessions/<id>/work/         the working copy, owned by the sandbox's
//                               mapped root (rootless: a subordinate id of
//                               the user's, reached as session_copy.h says),
//                               bind-mounted read-write at /work
//                               into each command's container and nowhere else;
//                               the mount point of work.img when capped
//   sessions/<id>/work.img      the working copy's size-capped filesystem
//                               (util/capped_dir.h: sessions.disk_mib,
//                               sessions.max_files), sparse
//   sessions/<id>/run-<exec>/   one command's engine files (seccomp profile),
//                               removed with its container
//   sessions/<id>/lock          flock'ed by whoever works on the session: one
//                               command at a time, and close waits for it
// Everything under work/ was written by a sandbox and is hostile to the host
// (session_files.h reads it). Session ids are "s-" + a run id's tail.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "util/result.h"

namespace lazyagent {

inline constexpr const char* kIsolationLive = "live";
inline constexpr const char* kIsolationPerCommand = "per-command";

struct SessionRecord {
  std::string id;
  std::string seed;          // the user's seed (absolute): prove runs against it
  std::string config;        // the config file ("" = built-in defaults)
  std::vector<std::string> allow;  // --allow given at open (empty: the config's)
  std::string test_command;  // --test-command given at open ("" = the config's)
  std::string seed_sha256;   // of the seed at open
  std::int64_t created = 0;  // unix seconds
  std::int64_t last_used = 0;
  std::int64_t idle_ttl_seconds = 0;  // sessions.* of the config at open
  std::int64_t max_age_seconds = 0;
  std::int64_t execs = 0;    // commands run so far
  std::int64_t host_id = 0;  // the sandbox's mapped root (owns work/): a host id, or rootless the service's id
  // The user's own rootless podman: host_id is an id of its user namespace
  // (1: the user's first subordinate id), and the copy is reached inside
  // the user's namespace (session_copy.h).
  bool rootless = false;
  // The working copy's cap: bytes and files its filesystem holds (0: not
  // capped, and `uncapped` says why: accepted with --accept-weaker-policy).
  std::int64_t disk_bytes = 0;
  std::int64_t max_files = 0;
  std::string uncapped;
  bool accept_weaker_policy = false;  // --accept-weaker-policy at open: every command's too
  // The command in flight ("" = none): set before its container is made,
  // cleared after it is removed. Still set under a free lock: its process
  // died mid-command, and its container may still run (session.h).
  std::string pending_exec;
  // sessions.isolation at open: "live" or "per-command" (records before it: per-command).
  std::string isolation = "per-command";
  // Live: the session's sandbox (its container id), and whether a host read
  // froze it (set before the freeze, cleared after the thaw: still set under
  // a free lock, its reader died and the next holder thaws it).
  std::string sandbox;
  bool frozen = false;
  // Live, where the host cannot freeze it (rootless podman on cgroup v1),
  // why: accepted with --accept-weaker-policy, and host reads are not frozen.
  std::string unfrozen;
};

nlohmann::json session_to_json(const SessionRecord& r);
Result<SessionRecord> session_from_json(const nlohmann::json& j);

// Why the session has expired at `now` ("" = it has not): idle past its TTL,
// or older than its maximum age. Pure.
std::string session_expiry(const SessionRecord& r, std::int64_t now);

// An flock on a session's lock file, released when destroyed.
class SessionLock {
 public:
  SessionLock() = default;
  explicit SessionLock(int fd) : fd_(fd) {}
  SessionLock(SessionLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  SessionLock& operator=(SessionLock&& o) noexcept;
  SessionLock(const SessionLock&) = delete;
  SessionLock& operator=(const SessionLock&) = delete;
  ~SessionLock();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

class SessionStore {
 public:
  explicit SessionStore(const RunStore& store) : dir_(store.dir() + "/sessions") {}
  const std::string& dir() const { return dir_; }
  std::string session_dir(const std::string& id) const { return dir_ + "/" + id; }
  std::string base_dir(const std::string& id) const { return session_dir(id) + "/base"; }
  std::string work_dir(const std::string& id) const { return session_dir(id) + "/work"; }
  std::string work_image(const std::string& id) const { return session_dir(id) + "/work.img"; }

  // Makes sessions/<id>/ (0700) for a new session.
  Status create(const std::string& id) const;
  Status save(const SessionRecord& r) const;
  // The record; a usage error naming `session list` for an unknown id (or one
  // that is not a session id at all).
  Result<SessionRecord> load(const std::string& id) const;
  // Every session directory's id, sorted (records may be missing: a crash at open).
  std::vector<std::string> ids() const;
  // Takes the session's lock; `wait` false: a busy session is an error.
  Result<SessionLock> lock(const std::string& id, bool wait) const;
  // sessions/<id>/removals: held shared by each process that removes a
  // command's container after its result was printed, exclusive (waiting for
  // them) by close.
  Result<SessionLock> removals_lock(const std::string& id, bool exclusive) const;
  // Mounts the working copy's capped filesystem again if it is not (after a
  // reboot); nothing for an uncapped session.
  Status mount_work(const SessionRecord& r) const;
  // Unmounts the working copy's filesystem (if mounted), then removes
  // sessions/<id>/ without following a link (missing is fine), what a
  // rootless sandbox wrote included (session_copy.h).
  Status remove(const std::string& id) const;

 private:
  std::string dir_;
};

// "s-20261205-061502-3fa9c1": a new session id.
std::string new_session_id();

// True for a name new_session_id could have made (letters, digits, '-', "s-" first).
bool is_session_id(const std::string& id);

}  // namespace lazyagent
