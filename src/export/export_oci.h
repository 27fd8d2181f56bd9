// The sandbox policy as an OCI runtime bundle: a config.json that
// `runc run --bundle DIR ID` executes with the sandbox's isolation. Pure.
//
// Bundle layout (the export command writes the directories; this file makes
// the documents):
//   DIR/config.json   this spec
//   DIR/rootfs/       the sandbox image's filesystem (root, read-only)
//   DIR/seed/         the private copy of the seed (+ the patch), bind-mounted
//                     read-only at /seed. The bind source is relative: runc
//                     changes into the bundle directory before it creates the
//                     container, so "seed" means DIR/seed (checked with runc
//                     1.1.5, which is what Debian 12 ships).
//   DIR/README.txt    how to run it and read the result
//
// What runs is exactly the podman sandbox's program (sandbox_command): copy
// /seed into the /work tmpfs, run the test command there, keep the head and
// tail of its output, exit with its status. The process runs as uid 0 with
// all five capability sets empty and no-new-privileges, like the podman
// sandbox, and without a user namespace (uid 0 inside is uid 0 outside, with
// no capabilities). The seccomp profile is oci/seccomp.json (oci_seccomp.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "export/export_common.h"

namespace lazyagent {

// Directory names inside the bundle.
inline constexpr const char* kOciRootfsDir = "rootfs";
inline constexpr const char* kOciSeedDir = "seed";

// The OCI runtime-spec config.json (spec 1.0.2, what runc 1.1 implements).
nlohmann::json oci_runtime_spec(const ExportInput& in,
                                const std::string& rootfs_dir_name = kOciRootfsDir);

// config.json + README.txt, and what runc enforces and what it cannot. The
// caller writes rootfs/ and seed/ (they are directories, not documents).
ExportBundle export_oci(const ExportInput& in);

}  // namespace lazyagent
