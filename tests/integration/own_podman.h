// A podman service of a test's own, for tests of commands that act on every
// image of their kind on the service they are given (`env prune` removes every
// environment image but the config's own): on its own storage under a
// temporary directory (vfs: no mounts), with only the images named copied in,
// so the machine's images (the corpus's environments, other runs') are never
// seen. Point the CLI at it with CONTAINER_HOST=container_host(). Stopped by
// its pid and its storage removed at the end.
#pragma once

#include "catch_compat.h"

#include <sys/stat.h>

#include <string>
#include <vector>

#include "harness.h"

namespace it {

struct OwnPodman {
  TempDir dir;
  std::string podman, socket, pid;
  explicit OwnPodman(const std::vector<std::string>& images = {"localhost/lazyagent-base:bookworm"}) {
    podman = "podman --root " + dir.path() + "/root --runroot " + dir.path() + "/run --tmpdir " + dir.path() +
             "/tmp --storage-driver vfs";
    socket = dir.path() + "/podman.sock";
    for (const auto& image : images) {
      const std::string archive = dir.path() + "/image.tar";
      REQUIRE(sh("podman save --format oci-archive -o " + archive + " " + image + " >/dev/null 2>&1 && " + podman +
                 " load -i " + archive + " >/dev/null 2>&1; s=$?; rm -f " + archive + "; echo $s") == "0\n");
    }
    pid = sh(podman + " system service --time 0 unix://" + socket + " >" + dir.path() + "/service.log 2>&1 & echo $!");
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    REQUIRE_FALSE(pid.empty());
    struct stat st {};
    REQUIRE(wait_for([&] { return ::stat(socket.c_str(), &st) == 0; }, 30));
  }
  ~OwnPodman() {
    sh("kill " + pid + " 2>/dev/null");
    wait_for([&] { return sh("kill -0 " + pid + " 2>/dev/null; echo $?") != "0\n"; }, 30);
    // Nothing should be mounted there (vfs); if anything is, it must not keep the directory.
    sh("findmnt -rn -o TARGET | grep '^" + dir.path() + "/' | sort -r | xargs -r umount -l");
  }
  OwnPodman(const OwnPodman&) = delete;
  OwnPodman& operator=(const OwnPodman&) = delete;
  std::string container_host() const { return "unix://" + socket; }
  bool has(const std::string& image) const { return sh(podman + " image exists " + image + "; echo $?") == "0\n"; }
};

}  // namespace it
