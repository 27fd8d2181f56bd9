// One libcurl transfer for every HTTP client of the project: podman's REST
// API over its unix socket (podman_client.h), the Kubernetes API over TLS
// with client certificates or a token (k8s_client.h), and the model provider
// (provider_client.h). The clients differ only in what they ask and how they
// read the answer (STYLE.md principle 17); the plumbing is here once:
//   - one curl handle per client (CurlHandle), reset before each transfer so
//     that its connection cache is kept: the connection stays open;
//   - the body collected up to a cap (then `truncated` and the transfer stops)
//     or handed to the caller chunk by chunk (a watch, an image export);
//   - SIGINT/SIGTERM ends an interruptible transfer (interrupt.h);
//   - no signals from libcurl (CURLOPT_NOSIGNAL: clients run in threads).
// The outcome is reported, not judged: each client turns the curl code, the
// status and the body into its own errors, with its own words.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace lazyagent {

// Owns one CURL easy handle.
class CurlHandle {
 public:
  CurlHandle();
  ~CurlHandle();
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
  void* get() const { return curl_; }  // CURL*; null when libcurl could not make one

 private:
  void* curl_ = nullptr;
};

struct TransferRequest {
  std::string method = "GET";
  std::string url;
  std::string unix_socket;             // connect here instead of the URL's host (podman)
  std::vector<std::string> headers;    // "Name: value"
  const std::string* body = nullptr;   // sent as the request body when set
  long connect_timeout_ms = 10000;
  long timeout_ms = 30000;             // the whole transfer; 0 = no limit
  long low_speed_seconds = 0;          // > 0: a transfer that stalls this long fails
  std::size_t max_body = 16 * 1024 * 1024;
  bool interruptible = false;          // give up when SIGINT/SIGTERM arrives
  bool web = false;                    // http(s) only, a user agent, compressed replies accepted
  // TLS (the Kubernetes API): PEM text, not paths.
  const std::string* ca_pem = nullptr;
  const std::string* client_cert_pem = nullptr;
  const std::string* client_key_pem = nullptr;
  bool insecure_skip_tls_verify = false;
  // Streaming: each chunk of the body goes here, with the response's HTTP
  // status, instead of into `body` (return false to stop the transfer: `stopped`).
  std::function<bool(const char* data, std::size_t len, long status)> on_chunk;
};

struct TransferReply {
  int curl_code = 0;              // CURLcode; 0 = CURLE_OK
  long status = 0;                // HTTP status (0 when none came)
  std::string body;
  bool truncated = false;         // max_body reached (curl_code is then CURLE_WRITE_ERROR)
  bool stopped = false;           // on_chunk returned false (likewise)
  bool connected = false;         // the request went out on a connection
  long os_errno = 0;              // for connection failures
  std::vector<std::string> header_lines;  // as received, of the last response
  bool ok() const { return curl_code == 0 || truncated || stopped; }
  bool interrupted() const;       // a signal ended it
  bool timed_out() const;
  bool could_not_connect() const;  // refused, or the host did not resolve
  bool connection_refused() const;
  bool connection_broke() const;  // sent or received nothing, or a partial body
  std::string curl_error() const; // libcurl's words for curl_code
  std::string curl_detail;        // libcurl's error buffer: the specific cause ("SSL: no alternative ...")
  // The value of the first header `name` (case-insensitive), trimmed; "" when absent.
  std::string header(const std::string& name) const;
};

TransferReply http_transfer(const CurlHandle& handle, const TransferRequest& request);

// Percent-encodes a URL component.
std::string url_escape(const std::string& s);

}  // namespace lazyagent
