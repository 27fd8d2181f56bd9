#include "store/ownership.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <random>
#include <sstream>

#include "policy/sandbox_policy.h"

namespace lazyagent {

std::string process_start_time(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!f || !std::getline(f, stat)) return "";
  // comm (field 2) may contain spaces and ')': fields resume after the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return "";
  }
  return field;
}

Owner current_owner() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  Owner o;
  o.user_host = std::to_string(getuid()) + "@" + host;
  o.pid = getpid();
  o.start_time = process_start_time(o.pid);
  return o;
}

bool owner_alive(const std::map<std::string, std::string>& labels) {
  auto get = [&](const char* k) {
    auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  };
  const Owner me = current_owner();
  const std::string owner = get(kLabelOwner);
  const std::string host_of = owner.substr(owner.find('@') == std::string::npos ? owner.size() : owner.find('@') + 1);
  const std::string my_host = me.user_host.substr(me.user_host.find('@') + 1);
  if (owner.empty() || host_of != my_host) return true;  // not ours to judge
  long pid = 0;
  try {
    pid = std::stol(get(kLabelPid));
  } catch (...) {
    return false;  // our label format, but no pid: unowned
  }
  const std::string start = process_start_time(pid);
  return !start.empty() && start == get(kLabelPidStart);
}

std::map<std::string, std::string> owner_labels(const Owner& o, const std::string& role,
                                                const std::string& run_id) {
  return {{kLabelRole, role},
          {kLabelRun, run_id},
          {kLabelOwner, o.user_host},
          {kLabelPid, std::to_string(o.pid)},
          {kLabelPidStart, o.start_time}};
}

std::string new_run_id() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%06x", rd() & 0xffffff);
  return std::string("r-") + stamp + "-" + suffix;
}

}  // namespace lazyagent
