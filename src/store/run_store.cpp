#include "store/run_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lazyagent {

namespace fs = std::filesystem;
using nlohmann::json;

std::string default_state_dir(const char* xdg_state_home, const char* home) {
  if (xdg_state_home && *xdg_state_home && xdg_state_home[0] == '/') {
    return std::string(xdg_state_home) + "/lazyagent-oci";
  }
  return std::string(home && *home ? home : "/root") + "/.local/state/lazyagent-oci";
}

namespace {

Status mkdirs_private(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return engine_error("creating " + path + ": " + ec.message());
  ::chmod(path.c_str(), 0700);
  return ok_status();
}

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

bool valid_run_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

}  // namespace

Status RunStore::ensure() const {
  for (const auto& d : {dir_, runs_dir(), work_dir()}) {
    if (auto st = mkdirs_private(d); !st) return st.error().context("preparing the run store");
  }
  return ok_status();
}

bool is_finished_status(const std::string& status) {
  for (const char* s : {"passed", "failed", "refused", "error", "planner_error", "interrupted"}) {
    if (status == s) return true;
  }
  return false;
}

namespace {

// Creates active/<id> once (an existing marker is left as it is) and syncs
// the directory, so the marker is on disk before the record that needs it.
Status mark_active(const std::string& active_dir, const std::string& id) {
  const std::string path = active_dir + "/" + id;
  if (::access(path.c_str(), F_OK) == 0) return ok_status();
  if (auto st = mkdirs_private(active_dir); !st) return st;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return engine_error(errno_text("creating", path));
  ::close(fd);
  const int dfd = ::open(active_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return ok_status();
}

}  // namespace

Status RunStore::write(const json& record) const {
  const std::string id = record.value("run_id", "");
  if (!valid_run_id(id)) return engine_error("run store: invalid run id '" + id + "'");
  if (auto st = ensure(); !st) return st;
  const json& status = record.contains("status") ? record["status"] : json();
  const bool finished = status.is_string() && is_finished_status(status.get<std::string>());
  if (!finished) {
    if (auto st = mark_active(active_dir(), id); !st) return st.error().context("run store");
  }
  auto st = write_in("runs", id, record);
  if (st && finished) clear_active(id);
  return st;
}

void RunStore::clear_active(const std::string& run_id) const {
  if (!valid_run_id(run_id)) return;
  ::unlink((active_dir() + "/" + run_id).c_str());
}

std::vector<std::string> RunStore::active_run_ids() const {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(active_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (valid_run_id(name)) ids.push_back(name);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<json> RunStore::read(const std::string& run_id) const { return read_in("runs", run_id); }

Status RunStore::write_in(const std::string& subdir, const std::string& id, const json& record) const {
  return write_text(subdir, id + ".json", record.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

Status RunStore::write_text(const std::string& subdir, const std::string& name, const std::string& text,
                            Durability d) const {
  if (!valid_run_id(subdir) || name.empty() || name.find('/') != std::string::npos || name[0] == '.') {
    return engine_error("run store: invalid name " + subdir + "/" + name);
  }
  if (auto st = mkdirs_private(dir_ + "/" + subdir); !st) return st;
  auto st = write_file_atomic(dir_ + "/" + subdir + "/" + name, text, d);
  if (!st) return st.error().context("saving " + subdir + "/" + name);
  return st;
}

Result<std::string> RunStore::read_text(const std::string& subdir, const std::string& name) const {
  const std::string path = dir_ + "/" + subdir + "/" + name;
  std::ifstream f(path, std::ios::binary);
  if (!f) return usage_error("no " + name + " in " + dir_ + "/" + subdir);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<json> RunStore::read_in(const std::string& subdir, const std::string& id) const {
  if (!valid_run_id(id)) return usage_error("'" + id + "' is not a run id");
  auto text = read_text(subdir, id + ".json");
  if (!text) return usage_error("no record " + id + " in " + dir_ + "/" + subdir);
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded()) return engine_error("record " + dir_ + "/" + subdir + "/" + id + ".json is not valid JSON");
  return j;
}

std::vector<json> RunStore::recent(std::size_t limit, std::vector<std::string>* problems) const {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(runs_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      ids.push_back(name.substr(0, name.size() - 5));
    }
  }
  std::sort(ids.rbegin(), ids.rend());
  std::vector<json> out;
  for (const auto& id : ids) {
    if (out.size() >= limit) break;
    auto r = read(id);
    if (r) out.push_back(*r);
    else if (problems) problems->push_back(r.error().message);
  }
  return out;
}

}  // namespace lazyagent
