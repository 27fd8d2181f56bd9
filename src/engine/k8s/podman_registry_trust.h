// Whether the podman service that pushes environment images
// (k8s_environments.h) trusts the CA of an https k8s.registry.
//
// podman's push API has no CA parameter (its tlsVerify is all or nothing):
// for a registry HOST:PORT it trusts the system's CAs plus every *.crt in
// certs.d/HOST:PORT (containers-certs.d(5)): /etc/containers/certs.d and
// /etc/docker/certs.d for a rootful service, and first
// $XDG_CONFIG_HOME/containers/certs.d (~/.config/...) for a rootless one.
// When k8s.registry_ca_file names a private CA, the CLI cannot hand it to
// podman; it checks, before podman pushes, that one of those files holds
// that CA, and otherwise says exactly what to install where (never turning
// verification off, never writing into the system's trust itself).
#pragma once

#include <string>
#include <vector>

#include "engine/k8s/oci_registry.h"
#include "util/result.h"

namespace lazyagent {

// The certs.d directories podman reads for this user (rootful: /etc's).
std::vector<std::string> podman_certs_dirs();

// The certificates of a PEM text, each as its base64 body without
// whitespace (what two files holding the same certificate share).
std::vector<std::string> pem_certificates(const std::string& pem);

// OK when c is plain HTTP, names no CA file, or one of dirs/ADDRESS/*.crt
// holds a certificate of c.ca_pem; else an error saying what to install where.
Status check_podman_trusts_ca(const RegistryConnection& c, const std::vector<std::string>& dirs);

}  // namespace lazyagent
