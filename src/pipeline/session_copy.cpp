#include "pipeline/session_copy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "contract/seed_snapshot.h"
#include "util/user_namespace.h"

namespace lazyagent {

namespace {

// The most the namespace's child hands back: a file (read_session_file's
// cap) or a diff's changed files, each within the caller's per-file cap.
constexpr std::size_t kMaxChangesAnswer = std::size_t{512} << 20;

// fn run where the session's files can be reached (session_copy.h).
Result<std::string> where_reachable(const SessionRecord& rec, const std::function<Result<std::string>()>& fn,
                                    std::size_t max_answer) {
  if (!rec.rootless) return fn();
  auto map = own_user_map();
  if (!map) return map.error().context("session " + rec.id + " is rootless");
  return run_in_user_namespace(*map, fn, max_answer);
}

Result<std::string> nothing_or(const Status& st) {
  if (!st) return st.error();
  return std::string();
}

}  // namespace

Status give_copy_to_sandbox(const SessionRecord& rec, const SessionStore& store) {
  if (rec.host_id < 0) return ok_status();  // no user namespace (gVisor's own root)
  const std::string work = store.work_dir(rec.id);
  auto done = where_reachable(
      rec, [&]() { return nothing_or(chown_tree(work, rec.host_id, rec.host_id)); }, 0);
  if (!done) return done.error().context("giving the working copy to the sandbox's root");
  return ok_status();
}

Result<std::string> read_session_file(const SessionRecord& rec, const SessionStore& store, const std::string& path,
                                      std::size_t max_bytes) {
  const std::string work = store.work_dir(rec.id);
  return where_reachable(
      rec, [&]() { return read_copy_file(work, path, max_bytes); }, max_bytes);
}

Status write_session_file(const SessionRecord& rec, const SessionStore& store, const std::string& path,
                          const std::string& content) {
  const std::string work = store.work_dir(rec.id);
  const long owner = static_cast<long>(rec.host_id);
  auto done = where_reachable(
      rec, [&]() { return nothing_or(write_copy_file(work, path, content, owner, owner)); }, 0);
  if (!done) return done.error();
  return ok_status();
}

Result<CopyDiff> diff_session_copy(const SessionRecord& rec, const SessionStore& store, const Config& config,
                                   std::size_t max_bytes) {
  const std::string base = store.base_dir(rec.id), work = store.work_dir(rec.id);
  auto bytes = where_reachable(
      rec,
      [&]() -> Result<std::string> {
        auto changes = read_copy_changes(base, work, config, max_bytes);
        if (!changes) return changes.error();
        return encode_copy_changes(*changes);
      },
      kMaxChangesAnswer);
  if (!bytes) return bytes.error();
  auto changes = decode_copy_changes(*bytes);
  if (!changes) return changes.error();
  return judge_copy_changes(std::move(*changes), config);
}

Status remove_session_files(const std::string& dir) {
  auto first = remove_tree(dir);
  if (first || ::geteuid() == 0) return first;
  // What is left is the sandbox's (its subordinate ids): removed where they are the user's.
  auto map = own_user_map();
  if (!map) return usage_error(first.error().message + " (what the sandbox wrote): " + map.error().message);
  auto done = run_in_user_namespace(
      *map, [&]() { return nothing_or(run_program({"rm", "-rf", "--one-file-system", "--", dir})); }, 0);
  if (!done) return done.error().context("removing " + dir + " in " + map->who + "'s user namespace");
  struct stat st {};
  if (::lstat(dir.c_str(), &st) == 0) return engine_error("removing " + dir + ": it is still there after `rm -rf`");
  return ok_status();
}

}  // namespace lazyagent
