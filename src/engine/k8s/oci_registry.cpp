#include "engine/k8s/oci_registry.h"

#include <nlohmann/json.hpp>

#include "util/base64.h"
#include "util/digest.h"
#include "util/terminal_text.h"

namespace lazyagent {

using nlohmann::json;

namespace {

bool has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

}  // namespace

std::string registry_tls_advice(const RegistryConnection& c, const TransferReply& r) {
  const std::string host = c.address.substr(0, c.address.rfind(':'));
  const std::string ca = c.ca_file.empty() ? std::string() : " (" + escape_for_terminal(c.ca_file) + ")";
  if (c.plain_http) {  // Go's TLS server answers a plain request with this 400
    if (r.ok() && r.status == 400 && has(r.body, "HTTP request to an HTTPS server")) {
      return "it speaks HTTPS, not plain HTTP: remove k8s.registry_plain_http (and set k8s.registry_ca_file to "
             "the PEM file of the CA that signed its certificate when that CA is private)";
    }
    return "";
  }
  const std::string& d = r.curl_detail;
  switch (r.curl_code) {
    case 35:  // CURLE_SSL_CONNECT_ERROR
      if (has(d, "wrong version number") || has(d, "packet length too long") || has(d, "http request")) {
        return "it does not speak TLS: for a registry that serves plain HTTP set k8s.registry_plain_http: true "
               "(only for one the nodes reach on their loopback), else serve it over https";
      }
      return "the TLS handshake failed: check that it serves https on " + escape_for_terminal(c.address);
    case 60:  // CURLE_PEER_FAILED_VERIFICATION
      if (has(d, "subject name") || has(d, "does not match") || has(d, "doesn't match")) {
        return "its certificate is not for the host '" + escape_for_terminal(host) +
               "' that k8s.registry names: address it by a name or IP address its certificate lists "
               "(subjectAltName), or reissue the certificate for " + escape_for_terminal(host);
      }
      if (has(d, "expired") || has(d, "not yet valid")) {
        return "its certificate has expired or is not valid yet: renew it";
      }
      if (c.ca_file.empty()) {
        return "its certificate is signed by a CA this machine does not trust: set k8s.registry_ca_file to the PEM "
               "file of that CA (the local cluster's TLS registry: scripts/k8s-registry.sh tls-ca prints it)";
      }
      return "its certificate is not signed by the CA in k8s.registry_ca_file" + ca +
             ": name the CA that signed the registry's certificate";
    case 77:  // CURLE_SSL_CACERT_BADFILE
      return "k8s.registry_ca_file" + ca + " holds no certificate the TLS library can read: name a PEM file";
    default:
      return "";
  }
}

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
    const std::string tls = registry_tls_advice(conn_, r);
    const std::string detail = r.curl_detail.empty() ? r.curl_error() : escape_for_terminal(r.curl_detail.substr(0, 200));
    return engine_error("the registry " + conn_.address + " (" + method + " " + url_or_path.substr(0, 120) +
                        "): " + detail + (!tls.empty() ? " (" + tls + ")" : "") +
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
  if (const std::string tls = registry_tls_advice(conn_, r); !tls.empty()) msg += " (" + tls + ")";
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
