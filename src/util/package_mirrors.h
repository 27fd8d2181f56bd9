// The package archives this machine's apt uses: the only hosts outside this
// machine that its network tests and egress probes may aim at (everything else
// outside is never a target: no public resolver, no well-known host). Read
// from the apt sources at run time, never written into the code.
#pragma once

#include <string>
#include <vector>

namespace lazyagent {

// The hosts of the `deb`/`deb-src` URIs in one apt sources file's text:
// one-line (`deb [opts] http://HOST/path suite ...`) or deb822
// (`URIs: http://HOST/path ...`). Comments and disabled entries
// (`Enabled: no`) skipped; http and https only; in order, without repeats. Pure.
std::vector<std::string> hosts_in_apt_sources(const std::string& text, bool deb822);

// The same over <apt_dir>/sources.list and sources.list.d/*.list, *.sources.
std::vector<std::string> apt_source_hosts(const std::string& apt_dir = "/etc/apt");

// Egress probe targets for the first apt source host (egress_probe.h):
// "lookup=HOST" and "external=ADDR:80", "external=ADDR:443" for at most two of
// its addresses as this machine resolves them. Empty when there is no source
// or it does not resolve.
std::vector<std::string> package_mirror_probe_targets(const std::string& apt_dir = "/etc/apt");

}  // namespace lazyagent

namespace lazyagent {

// Egress probe targets on this machine itself: "host=ADDR:PORT" for each of
// its non-loopback IPv4 addresses (its own address, the podman bridge's
// gateway) on tcp 22, 80 and 443: what a sandbox that found a route would
// reach first. Local syscalls only (getifaddrs), in a stable order.
std::vector<std::string> host_probe_targets();

}  // namespace lazyagent
