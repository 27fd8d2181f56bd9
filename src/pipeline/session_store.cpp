#include "pipeline/session_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "contract/seed_snapshot.h"
#include "pipeline/session_copy.h"
#include "store/ownership.h"
#include "util/capped_dir.h"

namespace lazyagent {

using nlohmann::json;

namespace {

Status make_session_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return engine_error("creating " + path + ": " + std::strerror(errno));
  }
  return ok_status();
}

}  // namespace

json session_to_json(const SessionRecord& r) {
  return json{{"session_id", r.id},         {"seed", r.seed},
              {"config", r.config},         {"allow", r.allow},
              {"test_command", r.test_command}, {"seed_sha256", r.seed_sha256},
              {"created", r.created},       {"last_used", r.last_used},
              {"idle_ttl_seconds", r.idle_ttl_seconds}, {"max_age_seconds", r.max_age_seconds},
              {"execs", r.execs},           {"host_id", r.host_id},
              {"pending_exec", r.pending_exec},
              {"disk_bytes", r.disk_bytes},  {"max_files", r.max_files},
              {"uncapped", r.uncapped},      {"accept_weaker_policy", r.accept_weaker_policy},
              {"rootless", r.rootless},     {"isolation", r.isolation},
              {"sandbox", r.sandbox},       {"frozen", r.frozen}, {"unfrozen", r.unfrozen}};
}

Result<SessionRecord> session_from_json(const json& j) {
  try {
    SessionRecord r;
    r.id = j.at("session_id").get<std::string>();
    r.seed = j.at("seed").get<std::string>();
    r.config = j.value("config", "");
    r.allow = j.value("allow", std::vector<std::string>{});
    r.test_command = j.value("test_command", "");
    r.seed_sha256 = j.value("seed_sha256", "");
    r.created = j.at("created").get<std::int64_t>();
    r.last_used = j.at("last_used").get<std::int64_t>();
    r.idle_ttl_seconds = j.value("idle_ttl_seconds", std::int64_t{0});
    r.max_age_seconds = j.value("max_age_seconds", std::int64_t{0});
    r.execs = j.value("execs", std::int64_t{0});
    r.host_id = j.value("host_id", std::int64_t{0});
    r.pending_exec = j.value("pending_exec", "");
    r.disk_bytes = j.value("disk_bytes", std::int64_t{0});
    r.max_files = j.value("max_files", std::int64_t{0});
    r.uncapped = j.value("uncapped", "");
    r.accept_weaker_policy = j.value("accept_weaker_policy", false);
    r.rootless = j.value("rootless", false);
    r.isolation = j.value("isolation", "per-command");
    r.sandbox = j.value("sandbox", "");
    r.frozen = j.value("frozen", false);
    r.unfrozen = j.value("unfrozen", "");
    return r;
  } catch (const json::exception& e) {
    return engine_error(std::string("a session record is malformed: ") + e.what());
  }
}

std::string session_expiry(const SessionRecord& r, std::int64_t now) {
  if (r.idle_ttl_seconds > 0 && now - r.last_used > r.idle_ttl_seconds) {
    return "idle for " + std::to_string(now - r.last_used) + " s, past sessions.idle_ttl_seconds (" +
           std::to_string(r.idle_ttl_seconds) + ")";
  }
  if (r.max_age_seconds > 0 && now - r.created > r.max_age_seconds) {
    return "open for " + std::to_string(now - r.created) + " s, past sessions.max_age_seconds (" +
           std::to_string(r.max_age_seconds) + ")";
  }
  return "";
}

SessionLock& SessionLock::operator=(SessionLock&& o) noexcept {
  std::swap(fd_, o.fd_);
  return *this;
}

SessionLock::~SessionLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

Status SessionStore::create(const std::string& id) const {
  if (auto st = make_session_dir(dir_); !st) return st;
  if (::mkdir(session_dir(id).c_str(), 0700) != 0) {
    return engine_error("creating " + session_dir(id) + ": " + std::strerror(errno));
  }
  return ok_status();
}

Status SessionStore::save(const SessionRecord& r) const {
  return write_file_atomic(session_dir(r.id) + "/session.json", session_to_json(r).dump(2) + "\n");
}

Result<SessionRecord> SessionStore::load(const std::string& id) const {
  const std::string hint = "see `lazyagent-oci session list`";
  if (!is_session_id(id)) return usage_error("'" + id + "' is not a session id (" + hint + ")");
  std::ifstream in(session_dir(id) + "/session.json");
  if (!in) return usage_error("no open session " + id + " (" + hint + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return engine_error("session " + id + ": its record is not JSON");
  auto r = session_from_json(j);
  if (!r) return r.error().context("session " + id);
  return r;
}

std::vector<std::string> SessionStore::ids() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (is_session_id(name)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

Result<SessionLock> flock_session_file(const std::string& id, const std::string& path, int op) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return engine_error("opening " + path + ": " + std::strerror(errno));
  SessionLock lock(fd);
  while (::flock(fd, op) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return engine_error("session " + id + " is busy (another command runs in it)");
    return engine_error("locking " + path + ": " + std::strerror(errno));
  }
  return lock;
}

}  // namespace

Result<SessionLock> SessionStore::lock(const std::string& id, bool wait) const {
  return flock_session_file(id, session_dir(id) + "/lock", LOCK_EX | (wait ? 0 : LOCK_NB));
}

Result<SessionLock> SessionStore::removals_lock(const std::string& id, bool exclusive) const {
  return flock_session_file(id, session_dir(id) + "/removals", exclusive ? LOCK_EX : LOCK_SH);
}

Status SessionStore::mount_work(const SessionRecord& r) const {
  if (r.disk_bytes <= 0) return ok_status();
  if (auto st = mount_capped_dir(work_image(r.id), work_dir(r.id)); !st) {
    return st.error().context("session " + r.id + ": mounting its working copy");
  }
  return ok_status();
}

Status SessionStore::remove(const std::string& id) const {
  if (!is_session_id(id)) return usage_error("'" + id + "' is not a session id");
  if (auto st = unmount_capped_dir(work_dir(id)); !st) return st.error().context("closing session " + id);
  return remove_session_files(session_dir(id));
}

std::string new_session_id() { return "s-" + new_run_id().substr(2); }

bool is_session_id(const std::string& id) {
  return id.size() > 2 && id.size() < 64 && id.rfind("s-", 0) == 0 &&
         id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

}  // namespace lazyagent
