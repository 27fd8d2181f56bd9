// An image's filesystem as a plain directory: the root of an OCI bundle.
//
// podman has no "export image" call that yields a flat root, so this creates a
// container of the image (never started), streams GET /containers/{id}/export
// into `tar -x`, and removes the container on every path, including errors and
// ^C. The container carries io.lazyagent.role=export and the owner labels, so
// one left by a crash (kill -9) is removed by the next `reap` or `test`.
//
// tar runs with --numeric-owner: the ids in the image are the container's,
// and must not be mapped through this host's user names. Run as root to keep
// them (rootless, every file would belong to the caller).
#pragma once

#include <string>

#include "engine/podman/podman_client.h"
#include "util/result.h"

namespace lazyagent {

struct RootfsInfo {
  std::string image;     // as asked for
  std::string image_id;  // podman's image id
  std::string digest;    // the image's digest ("" when podman has none)
  long milliseconds = 0;
};

// The image's id and digest (inspect). Errors say what to do (build it).
Result<RootfsInfo> inspect_image(PodmanClient& podman, const std::string& image);

// Extracts exactly the inspected image (by id: a tag moved in between does
// not change what is extracted) into `dest`, which must exist and be empty.
// Fills in `milliseconds`.
Status extract_image_rootfs(PodmanClient& podman, RootfsInfo& image, const std::string& dest);

}  // namespace lazyagent
