// The export directory's rules: whose directory it is, what a re-export
// replaces, and that the seed is never in reach.
#include "catch_compat.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "export/export_writer.h"
#include "unit_tmp.h"

using namespace lazyagent;
namespace fs = std::filesystem;

namespace {


void put(const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << content;
}

ExportBundle bundle() {
  ExportBundle b;
  b.files = {{"config.json", "{}\n", 0644}, {"task/task.json", "{}\n", 0644}, {"run.sh", "#!/bin/sh\n", 0755}};
  return b;
}

Status write_all(ExportDir& d, const ExportBundle& b) {
  if (auto st = d.begin("oci", ExportDir::top_level_paths(b)); !st) return st;
  for (const auto& f : b.files) {
    if (auto st = d.write_file(f); !st) return st;
  }
  return d.commit({{"seed_sha256", "abc"}});
}

}  // namespace

TEST_CASE("export dir: a new or empty directory is ours, and files keep their modes") {
  Tmp t;
  const std::string out = t.path + "/new/export";
  auto d = ExportDir::open(out, t.path + "/seed", false);
  REQUIRE(d.ok());
  REQUIRE(write_all(*d, bundle()).ok());
  CHECK(ExportDir::top_level_paths(bundle()) == std::vector<std::string>{"config.json", "task", "run.sh"});
  struct stat st {};
  REQUIRE(::stat((out + "/run.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  REQUIRE(::stat((out + "/task/task.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  std::ifstream marker(out + "/" + kExportMarker);
  const auto m = nlohmann::json::parse(marker);
  CHECK(m["complete"] == true);
  CHECK(m["target"] == "oci");
  CHECK(m["seed_sha256"] == "abc");
}

TEST_CASE("export dir: a re-export replaces its own paths and keeps the user's files") {
  Tmp t;
  const std::string out = t.path + "/export";
  {
    auto d = ExportDir::open(out, t.path + "/seed", false);
    REQUIRE(write_all(*d, bundle()).ok());
  }
  put(out + "/task/stale.json", "old");
  put(out + "/patch.json", "the user's");
  auto again = ExportDir::open(out, t.path + "/seed", false);
  REQUIRE(again.ok());
  REQUIRE(write_all(*again, bundle()).ok());
  CHECK_FALSE(fs::exists(out + "/task/stale.json"));
  CHECK(fs::exists(out + "/task/task.json"));
  CHECK(fs::exists(out + "/patch.json"));
}

TEST_CASE("export dir: someone else's non-empty directory needs --force") {
  Tmp t;
  put(t.path + "/other/notes.txt", "mine");
  auto d = ExportDir::open(t.path + "/other", t.path + "/seed", false);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().kind == ErrorKind::kUsage);
  CHECK(d.error().message == "export: --out " + t.path + "/other is not empty and holds no earlier export "
                             "(.lazyagent-export.json); choose a new directory, or add --force to write into "
                             "it (files of the same names are replaced)");
  auto forced = ExportDir::open(t.path + "/other", t.path + "/seed", true);
  REQUIRE(forced.ok());
  REQUIRE(write_all(*forced, bundle()).ok());
  CHECK(fs::exists(t.path + "/other/notes.txt"));
}

TEST_CASE("export dir: never inside the seed, never around it, never a file") {
  Tmp t;
  fs::create_directories(t.path + "/seed/sub");
  for (const std::string& out : {t.path + "/seed", t.path + "/seed/sub/x", t.path}) {
    INFO(out);
    auto d = ExportDir::open(out, t.path + "/seed", true);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message.find("overlaps the seed") != std::string::npos);
  }
  put(t.path + "/afile", "x");
  auto f = ExportDir::open(t.path + "/afile", t.path + "/seed", true);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message.find("exists and is not a directory") != std::string::npos);
  auto root = ExportDir::open("/", t.path + "/seed", true);
  REQUIRE_FALSE(root.ok());
  CHECK(root.error().message == "export: --out / is the filesystem root; choose a new directory");
  CHECK_FALSE(fs::exists(t.path + "/seed/sub/x"));  // refused before anything was created
}

TEST_CASE("export dir: a forged marker cannot make a re-export remove anything outside") {
  Tmp t;
  const std::string out = t.path + "/export";
  put(t.path + "/precious", "keep");
  put(out + "/" + kExportMarker,
      R"({"tool":"lazyagent-oci export","paths":["../precious"],"complete":true,"target":"oci"})");
  auto d = ExportDir::open(out, t.path + "/seed", false);
  REQUIRE_FALSE(d.ok());  // not a marker we trust: then it is someone else's directory
  auto forced = ExportDir::open(out, t.path + "/seed", true);
  REQUIRE(forced.ok());
  REQUIRE(write_all(*forced, bundle()).ok());
  CHECK(fs::exists(t.path + "/precious"));
}
