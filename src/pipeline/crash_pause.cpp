#include "pipeline/crash_pause.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace lazyagent {

void crash_pause_point(const std::string& point) {
  const char* at = std::getenv("LAZYAGENT_CRASH_PAUSE_AT");
  if (!at || point != at) return;
  if (const char* file = std::getenv("LAZYAGENT_CRASH_PAUSE_FILE")) {
    std::ofstream(file) << ::getpid() << "\n";
  }
  for (int i = 0; i < 600; ++i) ::sleep(1);
}

}  // namespace lazyagent
