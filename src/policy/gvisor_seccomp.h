// The sandbox's seccomp profile as Debian's gVisor (runsc 20221219, started
// with --oci-seccomp) must be given it to mean what oci/seccomp.json means
// under runc. Measured on podman 4.3.1 with the plain profile, a correct test
// failed under runsc: select() and os.posix_spawn() both got EPERM.
//
//  * names: runsc looks each name up in its own syscall table, which calls
//    x86_64's syscall 270 "pselect" where Linux, libseccomp and the profile
//    say "pselect6"; a name it does not know is ignored, so select() (glibc
//    makes it pselect6) fell to the default action. Each rule naming a
//    syscall by its Linux name also names it by runsc's (gvisor_syscall_names).
//  * clone3: the profile answers it ENOSYS so that glibc falls back to clone,
//    whose flags the profile checks; this runsc answers every refusal with
//    EPERM, whatever the rule's or the default's errno (measured: the ENOSYS
//    rules and unlisted calls alike), and glibc's posix_spawn (make, cmake,
//    Python's subprocess helpers) gives up on EPERM. This runsc has no clone3: let
//    through, its Sentry answers ENOSYS itself, which is what the profile
//    asks. clone3 moves from its ENOSYS rule to an allow rule of its own.
//
// The same adaptation is made on the local cluster's runtime wrapper
// (scripts/runsc-nonet.py), where containerd writes the profile. Pure.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace lazyagent {

// Linux's name -> runsc's name for the same syscall, where they differ.
const std::map<std::string, std::string>& gvisor_syscall_names();

// `profile` (OCI runtime-spec form) adapted as above; unchanged when there is
// nothing to adapt. Idempotent.
nlohmann::json gvisor_seccomp_profile(const nlohmann::json& profile);

}  // namespace lazyagent
