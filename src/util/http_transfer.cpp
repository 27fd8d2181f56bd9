#include "util/http_transfer.h"

#include <curl/curl.h>
#include <strings.h>

#include <cctype>

#include "util/interrupt.h"

namespace lazyagent {

namespace {

struct Transfer {
  CURL* curl;
  const TransferRequest* req;
  TransferReply* reply;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (t->req->on_chunk) {
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    if (t->req->on_chunk(data, len, status)) return len;
    t->reply->stopped = true;
    return 0;  // stops the transfer
  }
  std::string& body = t->reply->body;
  const size_t room = t->req->max_body > body.size() ? t->req->max_body - body.size() : 0;
  if (len > room) {
    body.append(data, room);
    t->reply->truncated = true;
    return 0;  // we have all we will keep
  }
  body.append(data, len);
  return len;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  std::string line(data, len);
  if (line.rfind("HTTP/", 0) == 0) t->reply->header_lines.clear();  // a new response (after 100 Continue)
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (!line.empty()) t->reply->header_lines.push_back(std::move(line));
  return len;
}

int on_connected(void* user, char*, char*, int, int) {  // a new or reused connection
  static_cast<Transfer*>(user)->reply->connected = true;
  return CURL_PREREQFUNC_OK;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return (t->req->interruptible && interrupted_signal() != 0) ? 1 : 0;  // CURLE_ABORTED_BY_CALLBACK
}

curl_blob blob(const std::string& s) { return {const_cast<char*>(s.data()), s.size(), CURL_BLOB_NOCOPY}; }

}  // namespace

CurlHandle::CurlHandle() : curl_(curl_easy_init()) {}

CurlHandle::~CurlHandle() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

bool TransferReply::interrupted() const { return curl_code == CURLE_ABORTED_BY_CALLBACK; }
bool TransferReply::timed_out() const { return curl_code == CURLE_OPERATION_TIMEDOUT; }
bool TransferReply::could_not_connect() const {
  return curl_code == CURLE_COULDNT_CONNECT || curl_code == CURLE_COULDNT_RESOLVE_HOST ||
         curl_code == CURLE_COULDNT_RESOLVE_PROXY;
}
bool TransferReply::connection_refused() const { return curl_code == CURLE_COULDNT_CONNECT; }
bool TransferReply::connection_broke() const {
  return curl_code == CURLE_RECV_ERROR || curl_code == CURLE_SEND_ERROR || curl_code == CURLE_GOT_NOTHING ||
         curl_code == CURLE_PARTIAL_FILE;
}
std::string TransferReply::curl_error() const { return curl_easy_strerror(static_cast<CURLcode>(curl_code)); }

std::string TransferReply::header(const std::string& name) const {
  for (const auto& line : header_lines) {
    if (line.size() > name.size() && line[name.size()] == ':' && strncasecmp(line.c_str(), name.c_str(), name.size()) == 0) {
      const auto b = line.find_first_not_of(" \t", name.size() + 1);
      const auto e = line.find_last_not_of(" \t");
      return b == std::string::npos ? "" : line.substr(b, e - b + 1);
    }
  }
  return "";
}

TransferReply http_transfer(const CurlHandle& handle, const TransferRequest& r) {
  TransferReply reply;
  CURL* c = static_cast<CURL*>(handle.get());
  if (!c) {
    reply.curl_code = CURLE_FAILED_INIT;
    return reply;
  }
  curl_easy_reset(c);  // keeps the connection cache: the next transfer may reuse it
  Transfer t{c, &r, &reply};
  curl_slist* headers = nullptr;
  for (const auto& h : r.headers) headers = curl_slist_append(headers, h.c_str());
  headers = curl_slist_append(headers, "Expect:");
  if (!r.unix_socket.empty()) curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, r.unix_socket.c_str());
  curl_easy_setopt(c, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (r.body != nullptr) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r.body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body->size()));
  }
  if (r.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (r.web) {
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "lazyagent-oci/" LAZYAGENT_VERSION);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  }
  curl_blob ca{}, cert{}, key{};
  if (r.ca_pem != nullptr && !r.ca_pem->empty()) {
    ca = blob(*r.ca_pem);
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (r.insecure_skip_tls_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (r.client_cert_pem != nullptr && !r.client_cert_pem->empty() && r.client_key_pem != nullptr) {
    cert = blob(*r.client_cert_pem);
    key = blob(*r.client_key_pem);
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_connected);
  curl_easy_setopt(c, CURLOPT_PREREQDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r.connect_timeout_ms);
  if (r.timeout_ms > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r.timeout_ms);
  if (r.low_speed_seconds > 0) {
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, r.low_speed_seconds);
  }
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  char detail[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
  reply.curl_code = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);  // the buffer dies with this call
  if (reply.curl_code != 0) reply.curl_detail = detail;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &reply.os_errno);
  curl_slist_free_all(headers);
  return reply;
}

std::string url_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace lazyagent
