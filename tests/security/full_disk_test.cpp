// Chaos: the run store's disk fills up (issue 44). The state directory is a
// small ext4 filesystem of the test's own (util/capped_dir.h: a sparse image,
// loop-mounted, the loop device freeing itself at unmount), filled with
// fallocate. A run must then fail with an error that names the directory and
// the space it needed, leave no half-written record and nothing running, and
// the next run must work once space is freed.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attack_common.h"
#include "store/run_store.h"
#include "util/capped_dir.h"
#include "util/atomic_file.h"

using nlohmann::json;
using namespace it;
using namespace sec;
namespace fs = std::filesystem;

namespace {

// The filesystem, unmounted on the way out (before its TempDir goes).
struct SmallDisk {
  TempDir holder;
  std::string dir = holder.path() + "/state";
  explicit SmallDisk(std::int64_t bytes) {
    REQUIRE(lazyagent::capped_dir_unsupported_reason().empty());
    fs::create_directory(dir);
    auto made = lazyagent::make_capped_dir(holder.path() + "/state.img", dir, bytes, 4096, 0, 0);
    INFO((made ? std::string() : made.error().message));
    REQUIRE(made.ok());
  }
  ~SmallDisk() { (void)lazyagent::unmount_capped_dir(dir); }
  // Leaves about `left` bytes free (fallocate: real blocks, written at once).
  // (ext4 keeps some blocks for its own metadata: a request for every free
  // byte fails, so it asks for 64 KiB less until it fits.)
  void fill_leaving(std::int64_t left, const std::string& name) {
    for (std::int64_t n = lazyagent::free_bytes(dir) - left; n > 0; n -= 64 << 10) {
      if (sh("fallocate -l " + std::to_string(n) + " " + dir + "/" + name + " 2>/dev/null; echo $?") == "0\n") return;
    }
  }
};

// Every run record under the store, parsed; the torn ones' names in `torn`.
std::size_t whole_records(const std::string& state, std::vector<std::string>* torn) {
  std::vector<std::string> problems;
  const lazyagent::RunStore store(state + "/lazyagent-oci");
  const auto recent = store.recent(1000, &problems);
  *torn = problems;
  std::size_t files = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(store.runs_dir(), ec)) files += e.path().extension() == ".json";
  return files == recent.size() ? files : static_cast<std::size_t>(-1);
}

std::size_t temp_files(const std::string& dir) {
  return std::stoul(sh("find " + dir + " -name '*.tmp.*' | wc -l"));
}

}  // namespace

TEST_CASE("chaos: a full disk under the run store: a clear error naming it, no half-written record, nothing left, "
          "and the next run works once space is freed", "[chaos]") {
  SmallDisk disk(24 << 20);
  TempDir io;
  // The demo seed plus 3 MiB of data: its private copy does not fit in 1.5 MiB.
  const std::string seed = io.path() + "/seed";
  sh("cp -r " + seed_dir() + " " + seed + " && head -c 3145728 /dev/zero > " + seed + "/data.bin");
  const std::string fix = io.file("fix.json", fixing_patch());
  CliEnv env{disk.dir, {}};
  // The store exists (its directories), as after earlier runs.
  REQUIRE(run_cli(env, {"test", "--seed", seed_dir(), "--patch", fix, "--no-baseline", "--json"}).exit_code == 0);

  // 1. Room for the records, not for the private copy: said before the copy is made.
  disk.fill_leaving(3 << 19, "filler-1");
  CliResult copy = run_cli(env, {"test", "--seed", seed, "--patch", fix, "--no-baseline", "--json"});
  INFO(copy.out << copy.err);
  CHECK(copy.exit_code == 5);
  const json cj = json::parse(copy.out, nullptr, false);
  REQUIRE(cj.is_object());
  const std::string copy_error = cj.value("error", "");
  CHECK(has(copy_error, "no space left under " + disk.dir + "/lazyagent-oci/work: the run's private copy of the seed needs "));
  CHECK(has(copy_error, " bytes are free there; free space on that filesystem"));
  CHECK(cj["error_kind"] == "engine");
  const std::string run_id = cj.value("run_id", "");
  REQUIRE_FALSE(run_id.empty());
  CHECK(containers_with_label("io.lazyagent.run=" + run_id).empty());
  CHECK(entries_in(disk.dir + "/lazyagent-oci/work") == 0);

  // 2. Not a byte left: the first record write says so, and what it needed.
  disk.fill_leaving(0, "filler-2");
  CliResult full = run_cli(env, {"test", "--seed", seed_dir(), "--patch", fix, "--no-baseline", "--json"});
  INFO(full.out << full.err);
  CHECK(full.exit_code == 5);
  const json fj = json::parse(full.out, nullptr, false);
  REQUIRE(fj.is_object());
  const std::string full_error = fj.value("error", "");
  CHECK(has(full_error, "no space left under " + disk.dir + "/lazyagent-oci/"));
  // Either the free bytes were too few, or the filesystem (ext4 keeps blocks
  // for its metadata) refused the write with bytes still free: said as such,
  // never as "needs 540 bytes, 502784 free".
  CHECK((has(full_error, " bytes are free there") ||
         (has(full_error, " bytes still free: it ") && has(full_error, "free space on that filesystem"))));

  // Every record reads whole; no temp file is left; `sandboxes` reads the store.
  std::vector<std::string> torn;
  const std::size_t records = whole_records(disk.dir, &torn);
  CHECK(torn.empty());
  CHECK(records != static_cast<std::size_t>(-1));
  CHECK(temp_files(disk.dir) == 0);
  CliResult listed = run_cli(env, {"sandboxes", "--json"});
  INFO(listed.err);
  CHECK(listed.exit_code == 0);
  CHECK(json::parse(listed.out, nullptr, false).is_object());

  // 3. Space freed: the next run works, on the same store.
  fs::remove(disk.dir + "/filler-1");
  fs::remove(disk.dir + "/filler-2");
  CliResult next = run_cli(env, {"test", "--seed", seed, "--patch", fix, "--no-baseline", "--json"});
  INFO(next.err);
  CHECK(next.exit_code == 0);
  CHECK(json::parse(next.out, nullptr, false).value("tests_passed", false));
  CHECK(whole_records(disk.dir, &torn) == records + 1);
  CHECK(torn.empty());
  evidence("run store on a 24 MiB ext4: 1.5 MiB free for a seed of 3 MiB: exit " + std::to_string(copy.exit_code) +
           ", \"" + copy_error + "\"; 0 bytes free: exit " + std::to_string(full.exit_code) + ", \"" + full_error +
           "\"; " + std::to_string(records) + " records all whole, no temp file, sandboxes exit " +
           std::to_string(listed.exit_code) + "; space freed: exit " + std::to_string(next.exit_code));
}
