#include "engine/podman/image_rootfs.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "util/elapsed.h"
#include "store/ownership.h"
#include "policy/sandbox_policy.h"

extern char** environ;

namespace lazyagent {

namespace {

// `tar -x` reading from a pipe; its stderr goes to an unlinked temp file so a
// chatty tar can never block on a full pipe.
class TarExtractor {
 public:
  Status start(const std::string& dest) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return engine_error(std::string("pipe: ") + std::strerror(errno));
    char errpath[] = "/tmp/lazyagent-tar-XXXXXX";
    err_fd_ = ::mkstemp(errpath);
    if (err_fd_ >= 0) ::unlink(errpath);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (err_fd_ >= 0) posix_spawn_file_actions_adddup2(&fa, err_fd_, 2);
    const char* argv[] = {"tar", "-x", "-f", "-", "-C", dest.c_str(), "--numeric-owner",
                          "--same-permissions", nullptr};
    const int rc = posix_spawnp(&pid_, "tar", &fa, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[0]);
    if (rc != 0) {
      ::close(fds[1]);
      pid_ = -1;
      return engine_error(std::string("starting tar: ") + std::strerror(rc) + " (install GNU tar)");
    }
    write_fd_ = fds[1];
    return ok_status();
  }

  int write_fd() const { return write_fd_; }

  // Closes the pipe and waits for tar; an error carries tar's own words.
  Status finish() {
    if (write_fd_ >= 0) ::close(write_fd_);
    write_fd_ = -1;
    if (pid_ < 0) return ok_status();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok_status();
    return engine_error("tar -x failed (" + describe(status) + "): " + stderr_text());
  }

  ~TarExtractor() {
    (void)finish();
    if (err_fd_ >= 0) ::close(err_fd_);
  }

 private:
  static std::string describe(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
  }

  std::string stderr_text() const {
    if (err_fd_ < 0) return "(no output)";
    char buf[2048];
    const ssize_t n = ::pread(err_fd_, buf, sizeof buf - 1, 0);
    std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "(no output)";
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
  }

  pid_t pid_ = -1;
  int write_fd_ = -1;
  int err_fd_ = -1;
};

}  // namespace

Result<RootfsInfo> inspect_image(PodmanClient& podman, const std::string& image) {
  auto inspected = podman.image_inspect(image, "images.sandbox");
  if (!inspected) return inspected.error();
  RootfsInfo info;
  info.image = image;
  info.image_id = inspected->value("Id", "");
  info.digest = inspected->value("Digest", "");
  if (info.image_id.empty()) return engine_error("inspecting image " + image + ": podman reported no image id");
  return info;
}

Status extract_image_rootfs(PodmanClient& podman, RootfsInfo& image, const std::string& dest) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string run_id = new_run_id();
  const nlohmann::json spec = {
      {"name", "lazyagent-export-" + run_id},
      {"image", image.image_id},
      {"command", {"/bin/true"}},  // never started: only its filesystem is read
      {"labels", owner_labels(current_owner(), "export", run_id)},
      {"netns", {{"nsmode", "none"}}},
  };
  auto created = podman.create(spec);
  if (!created) return created.error().context("creating the container to export " + image.image + " from");
  ScopedContainer container(podman, created->id);

  TarExtractor tar;
  if (auto st = tar.start(dest); !st) return st.error();
  const Status streamed = podman.export_filesystem(container.id(), tar.write_fd());
  const Status extracted = tar.finish();
  if (!streamed) {
    if (streamed.error().kind == ErrorKind::kInterrupted) return streamed.error();
    // A dead tar shows up as a write error on the stream: tar's words say more.
    if (!extracted) return extracted.error().context("extracting " + image.image + " into " + dest);
    return streamed.error();
  }
  if (!extracted) return extracted.error().context("extracting " + image.image + " into " + dest);
  image.milliseconds = ms_since(t0);
  return ok_status();
}

}  // namespace lazyagent
