// The seccomp profile of the podman sandbox (written next to the private copy
// and named in the create request's seccomp_profile_path) and of the exported
// OCI bundle (linux.seccomp in config.json): one profile for both.
//
// The profile is data, kept in the repository as oci/seccomp.json (OCI
// runtime-spec form, derived from podman's default by scripts/derive-seccomp.py,
// which explains every difference). CMake embeds that file into the library
// at configure time (src/policy/oci_seccomp.cpp.in), so an export never depends on
// finding a data directory at run time, and the bundle carries exactly the
// profile the binary was built with. Editing oci/seccomp.json re-runs CMake.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace lazyagent {

// The text of oci/seccomp.json as it was at build time.
std::string_view oci_seccomp_profile_text();

// The same, parsed. An allowlist: defaultAction SCMP_ACT_ERRNO.
const nlohmann::json& oci_seccomp_profile();

}  // namespace lazyagent
