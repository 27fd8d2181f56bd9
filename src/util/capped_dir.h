// A directory with a hard size and file-count cap: an ext4 filesystem in a
// sparse image file, loop-mounted on the directory (nosuid, nodev). A session's
// working copy lives in one (session_store.h), bind-mounted read-write into
// each command's container: a command that fills it gets ENOSPC at the cap,
// not the host's disk.
//
// Why a loop-mounted image: the run store's filesystem has no per-directory
// quota here (no XFS project quotas), a podman volume with `o=size=` needs
// one, and a tmpfs would hold the copy in memory for the session's whole life.
// The image is sparse: it takes on disk what was written (plus a 4 MiB
// journal), at most its size. Mounting needs root (CAP_SYS_ADMIN); rootless
// podman's user cannot, and says so (capped_dir_supported).
//
// The mount does not survive a reboot; the image does. mount_capped_dir
// mounts it again when the directory is not a mount point (a session's next
// command after a reboot finds its files).
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"

namespace lazyagent {

// "" when this process can make and mount capped directories, else why not
// (not root, no /dev/loop-control, no mkfs.ext4).
std::string capped_dir_unsupported_reason();

// Creates `image` (sparse, `bytes` long, must not exist), makes an ext4
// filesystem in it with at most `inodes` files whose root directory `uid`:`gid`
// owns, and mounts it on `dir` (which must exist and be empty).
Status make_capped_dir(const std::string& image, const std::string& dir, std::int64_t bytes, std::int64_t inodes,
                       std::int64_t uid, std::int64_t gid);

// Mounts `image` on `dir` unless `dir` already is a mount point. Idempotent.
Status mount_capped_dir(const std::string& image, const std::string& dir);

// True when `dir` is a mount point (its device differs from its parent's).
bool is_mount_point(const std::string& dir);

// Unmounts `dir` if it is a mount point (lazily when busy); the loop device
// frees itself (autoclear). Missing or not mounted is fine.
Status unmount_capped_dir(const std::string& dir);

}  // namespace lazyagent
