// The pure part of `apply`: what differs between a proven seed manifest and
// a tree's, named per file.
#include "pipeline/apply_run.h"

#include "catch_compat.h"

using namespace lazyagent;
using nlohmann::json;

TEST_CASE("manifest differences name changed, missing and new files", "[apply_run]") {
  const json proven = json::parse(R"([
    {"kind":"f","mode":420,"path":"a.py","sha256":"11"},
    {"kind":"f","mode":420,"path":"b.py","sha256":"22"},
    {"kind":"f","mode":420,"path":"c.py","sha256":"33"},
    {"kind":"f","mode":420,"path":"d.sh","sha256":"44"}])");
  const json now = json::parse(R"([
    {"kind":"f","mode":420,"path":"a.py","sha256":"11"},
    {"kind":"f","mode":420,"path":"b.py","sha256":"99"},
    {"kind":"f","mode":493,"path":"d.sh","sha256":"44"},
    {"kind":"f","mode":420,"path":"e.py","sha256":"55"}])");
  CHECK(manifest_differences(proven, now) ==
        std::vector<std::string>{"changed: b.py", "missing: c.py", "mode or kind changed: d.sh", "new: e.py"});
  CHECK(manifest_differences(proven, proven).empty());
}
