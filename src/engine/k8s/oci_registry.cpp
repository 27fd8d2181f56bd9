#include "engine/k8s/oci_registry.h"

#include <nlohmann/json.hpp>

#include "util/base64.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

std::string RegistryClient::base() const { return std::string(conn_.plain_http ? "http://" : "https://") + conn_.address; }

Result<TransferReply> RegistryClient::call(const std::string& method, const std::string& url_or_path,
                                           std::vector<std::string> headers, const std::string* body,
                                           std::size_t max_body) {
  TransferRequest req;
  req.method = method;
  req.url = url_or_path.rfind("http", 0) == 0 ? url_or_path : base() + url_or_path;
  if (!conn_.username.empty()) {
    headers.push_back("Authorization: Basic " + base64_encode(conn_.username + ":" + conn_.password));
  }
  req.headers = std::move(headers);
  req.body = body;
  req.timeout_ms = 300000;
  req.low_speed_seconds = 30;
  req.max_body = max_body;
  req.interruptible = true;
  if (!conn_.ca_pem.empty()) req.ca_pem = &conn_.ca_pem;
  TransferReply r = http_transfer(curl_, req);
  if (r.interrupted()) return Error{ErrorKind::kInterrupted, "interrupted talking to the registry " + conn_.address};
  if (!r.ok()) {
    return engine_error("the registry " + conn_.address + " (" + method + " " + url_or_path.substr(0, 120) +
                        "): " + r.curl_error() +
                        (r.could_not_connect() ? " (is it running? for the local cluster: scripts/k8s-registry.sh "
                                                 "start)"
                                               : ""));
  }
  return r;
}

Error RegistryClient::error_of(const TransferReply& r, const std::string& what) const {
  std::string detail = r.body.substr(0, 300);
  if (auto j = json::parse(r.body, nullptr, false); j.is_object() && j.contains("errors") && j["errors"].is_array() &&
                                                     !j["errors"].empty()) {
    detail = j["errors"][0].value("code", std::string()) + ": " + j["errors"][0].value("message", std::string());
  }
  std::string msg = "the registry " + conn_.address + " said " + std::to_string(r.status) + " to " + what + ": " +
                    escape_for_terminal(detail);
  if (r.status == 401 && conn_.username.empty()) {
    msg += " (it asks for credentials: set k8s.registry_username and k8s.registry_password_file)";
  } else if (r.status == 401) {
    msg += " (it refused the user '" + escape_for_terminal(conn_.username) + "' with the password in " +
           escape_for_terminal(conn_.password_file) +
           ": fix k8s.registry_username or the password in k8s.registry_password_file)";
  }
  if (r.status == 405 && what.rfind("deleting", 0) == 0) msg += " (enable deletes: storage.delete.enabled: true)";
  return engine_error(msg);
}

Status RegistryClient::ping() {
  auto r = call("GET", "/v2/");
  if (!r) return r.error();
  if (r->status != 200) return error_of(*r, "GET /v2/");
  return ok_status();
}

Result<bool> RegistryClient::blob_exists(const std::string& repo, const std::string& digest) {
  auto r = call("HEAD", "/v2/" + repo + "/blobs/" + digest);
  if (!r) return r.error();
  if (r->status == 200) return true;
  if (r->status == 404) return false;
  return error_of(*r, "HEAD blob " + digest);
}

Status RegistryClient::push_blob(const std::string& repo, const std::string& digest, const std::string& bytes) {
  auto have = blob_exists(repo, digest);
  if (!have) return have.error();
  if (*have) return ok_status();
  auto start = call("POST", "/v2/" + repo + "/blobs/uploads/");
  if (!start) return start.error();
  if (start->status != 202) return error_of(*start, "starting an upload");
  std::string location = start->header("Location");
  if (location.empty()) return engine_error("the registry " + conn_.address + " gave no upload Location");
  location += (location.find('?') == std::string::npos ? "?" : "&") + std::string("digest=") + url_escape(digest);
  auto put = call("PUT", location, {"Content-Type: application/octet-stream"}, &bytes);
  if (!put) return put.error();
  if (put->status != 201) return error_of(*put, "uploading blob " + digest);
  return ok_status();
}

Result<std::string> RegistryClient::get_blob(const std::string& repo, const std::string& digest,
                                             std::size_t max_bytes) {
  auto r = call("GET", "/v2/" + repo + "/blobs/" + digest, {}, nullptr, max_bytes + 1);
  if (!r) return r.error();
  if (r->status != 200) return error_of(*r, "GET blob " + digest);
  if (r->truncated) return engine_error("blob " + digest + " is larger than " + std::to_string(max_bytes) + " bytes");
  return std::move(r->body);
}

Result<std::string> RegistryClient::put_manifest(const std::string& repo, const std::string& reference,
                                                 const std::string& bytes, const std::string& media_type) {
  auto r = call("PUT", "/v2/" + repo + "/manifests/" + reference, {"Content-Type: " + media_type}, &bytes);
  if (!r) return r.error();
  if (r->status != 201) return error_of(*r, "PUT manifest " + repo + ":" + reference);
  const std::string ours = "sha256:" + sha256_hex(bytes);
  const std::string theirs = r->header("Docker-Content-Digest");
  if (!theirs.empty() && theirs != ours) {
    return engine_error("the registry " + conn_.address + " stored manifest " + repo + ":" + reference + " as " +
                        escape_for_terminal(theirs) + ", not " + ours);
  }
  return ours;
}

Result<std::optional<std::string>> RegistryClient::get_manifest(const std::string& repo, const std::string& reference,
                                                                const std::string& media_type) {
  auto r = call("GET", "/v2/" + repo + "/manifests/" + reference, {"Accept: " + media_type});
  if (!r) return r.error();
  if (r->status == 404) return std::optional<std::string>();
  if (r->status != 200) return error_of(*r, "GET manifest " + repo + ":" + reference);
  return std::optional<std::string>(std::move(r->body));
}

Result<std::optional<std::string>> RegistryClient::manifest_digest(const std::string& repo,
                                                                   const std::string& reference,
                                                                   const std::string& media_types) {
  auto r = call("HEAD", "/v2/" + repo + "/manifests/" + reference, {"Accept: " + media_types});
  if (!r) return r.error();
  if (r->status == 404) return std::optional<std::string>();
  if (r->status != 200) return error_of(*r, "HEAD manifest " + repo + ":" + reference);
  const std::string d = r->header("Docker-Content-Digest");
  if (d.rfind("sha256:", 0) != 0 || d.size() != 71) {
    return engine_error("the registry " + conn_.address + " named no sha256 digest for " + repo + ":" + reference);
  }
  return std::optional<std::string>(d);
}

Status RegistryClient::delete_manifest(const std::string& repo, const std::string& digest) {
  auto r = call("DELETE", "/v2/" + repo + "/manifests/" + digest);
  if (!r) return r.error();
  if (r->status == 202 || r->status == 200 || r->status == 404) return ok_status();
  return error_of(*r, "deleting manifest " + repo + "@" + digest);
}

Result<std::vector<std::string>> RegistryClient::tags(const std::string& repo) {
  auto r = call("GET", "/v2/" + repo + "/tags/list");
  if (!r) return r.error();
  std::vector<std::string> out;
  if (r->status == 404) return out;
  if (r->status != 200) return error_of(*r, "listing the tags of " + repo);
  const json j = json::parse(r->body, nullptr, false);
  if (j.is_object() && j.contains("tags") && j["tags"].is_array()) {
    for (const auto& t : j["tags"]) {
      if (t.is_string()) out.push_back(t.get<std::string>());
    }
  }
  return out;
}

}  // namespace lazyagent
