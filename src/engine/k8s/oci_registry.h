// An OCI distribution registry over HTTP(S) (the CNCF distribution
// registry, Debian's `docker-registry`; any registry speaking the
// distribution API): what the k8s backend needs to move a run's private copy
// of the seed to the cluster as an image pulled by digest
// (k8s_seed_image.h), and to remove it again.
//
//   blobs      HEAD (exists?), monolithic upload (POST uploads/, PUT ?digest=),
//              GET (the caller hashes what came back)
//   manifests  PUT by tag or digest (the registry's Docker-Content-Digest must
//              equal the sha256 of the bytes sent), GET, DELETE by digest
//              (the registry needs storage.delete.enabled)
//   tags       list
// Credentials: HTTP basic (a registry with htpasswd), from the config; they
// never reach a pod except as the image pull Secret the kubelet reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/http_transfer.h"
#include "util/result.h"

namespace lazyagent {

struct RegistryConnection {
  std::string address;       // HOST:PORT as the cluster's nodes pull from it
  bool plain_http = false;   // http:// (a registry on the node's loopback)
  std::string ca_pem;        // https: trust this CA (PEM), else the system's
  std::string ca_file;       // where ca_pem came from (k8s.registry_ca_file; named in errors)
  std::string username;      // basic auth; empty = none
  std::string password;
  std::string password_file; // where the password came from (named in errors, never the password)
};

// What to change in the config when the registry could not be spoken to
// over the scheme and trust it names (a failed transfer or its answer):
// an https registry whose CA is not trusted (k8s.registry_ca_file), a
// certificate for another host name, a plain-HTTP registry addressed as
// https or an https one as plain (k8s.registry_plain_http). "" otherwise.
std::string registry_tls_advice(const RegistryConnection& c, const TransferReply& r);

class RegistryClient {
 public:
  explicit RegistryClient(RegistryConnection conn) : conn_(std::move(conn)) {}
  const RegistryConnection& connection() const { return conn_; }

  // GET /v2/: the registry answers (200, or 401 with credentials to come).
  Status ping();
  Result<bool> blob_exists(const std::string& repo, const std::string& digest);
  // Uploads `bytes` as the blob `digest` unless the registry has it.
  Status push_blob(const std::string& repo, const std::string& digest, const std::string& bytes);
  Result<std::string> get_blob(const std::string& repo, const std::string& digest, std::size_t max_bytes);
  // PUT; returns the digest the registry computed (checked against ours).
  Result<std::string> put_manifest(const std::string& repo, const std::string& reference, const std::string& bytes,
                                   const std::string& media_type);
  // The manifest's bytes, or nullopt when the registry has none.
  Result<std::optional<std::string>> get_manifest(const std::string& repo, const std::string& reference,
                                                  const std::string& media_type);
  // HEAD: the manifest's digest as the registry names it
  // (Docker-Content-Digest), or nullopt when it has none.
  Result<std::optional<std::string>> manifest_digest(const std::string& repo, const std::string& reference,
                                                     const std::string& media_types);
  // DELETE by digest; one already gone is fine.
  Status delete_manifest(const std::string& repo, const std::string& digest);
  // The repository's tags ([] when it has none or does not exist).
  Result<std::vector<std::string>> tags(const std::string& repo);

 private:
  Result<TransferReply> call(const std::string& method, const std::string& url_or_path,
                             std::vector<std::string> headers = {}, const std::string* body = nullptr,
                             std::size_t max_body = 1 << 20);
  Error error_of(const TransferReply& r, const std::string& what) const;
  std::string base() const;

  RegistryConnection conn_;
  CurlHandle curl_;
};

}  // namespace lazyagent
