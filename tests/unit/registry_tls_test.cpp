// TLS to k8s.registry (issue 32): what the CLI tells a user whose registry
// it cannot speak to over the scheme and trust the config names
// (registry_tls_advice, oci_registry.h), with libcurl's own words for each
// failure (as seen against the local TLS registry, k8s_registry_tls_test.cpp);
// and whether podman, which pushes environment images and takes no CA,
// trusts the registry's private CA (podman_registry_trust.h).
#include "catch_compat.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/k8s/oci_registry.h"
#include "engine/k8s/podman_registry_trust.h"

using namespace lazyagent;
namespace fs = std::filesystem;

namespace {

RegistryConnection https(const std::string& address, const std::string& ca_file = "") {
  RegistryConnection c;
  c.address = address;
  c.ca_file = ca_file;
  if (!ca_file.empty()) c.ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  return c;
}

TransferReply failed(int code, const std::string& detail) {
  TransferReply r;
  r.curl_code = code;
  r.curl_detail = detail;
  return r;
}

const char* kUnknownCa = "SSL certificate problem: unable to get local issuer certificate";
const char* kSelfSigned = "SSL certificate problem: self-signed certificate in certificate chain";
const char* kWrongHost = "SSL: no alternative certificate subject name matches target host name 'localhost'";
const char* kPlainAsTls = "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number";

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("lazyagent-registry-tls-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
  }
};

const std::string kCaA = "-----BEGIN CERTIFICATE-----\nAAAAaaaaBBBBbbbb\nCCCCcccc\n-----END CERTIFICATE-----\n";
const std::string kCaB = "-----BEGIN CERTIFICATE-----\nZZZZzzzzYYYYyyyy\n-----END CERTIFICATE-----\n";

}  // namespace

TEST_CASE("registry TLS advice: a CA the machine does not trust names k8s.registry_ca_file and where the local "
          "cluster's CA is",
          "[k8s][registry][tls]") {
  for (const char* detail : {kUnknownCa, kSelfSigned}) {
    const std::string a = registry_tls_advice(https("127.0.0.1:25502"), failed(60, detail));
    CHECK(a.find("signed by a CA this machine does not trust: set k8s.registry_ca_file") != std::string::npos);
    CHECK(a.find("scripts/k8s-registry.sh tls-ca") != std::string::npos);
  }
}

TEST_CASE("registry TLS advice: a CA file that did not sign the certificate is named as the wrong one",
          "[k8s][registry][tls]") {
  const std::string a = registry_tls_advice(https("127.0.0.1:25502", "/etc/ssl/other-ca.pem"), failed(60, kUnknownCa));
  CHECK(a == "its certificate is not signed by the CA in k8s.registry_ca_file (/etc/ssl/other-ca.pem): name the "
             "CA that signed the registry's certificate");
}

TEST_CASE("registry TLS advice: a certificate for another host names the host and the subjectAltName",
          "[k8s][registry][tls]") {
  const std::string a = registry_tls_advice(https("localhost:25502", "/ca.pem"), failed(60, kWrongHost));
  CHECK(a.find("its certificate is not for the host 'localhost' that k8s.registry names") != std::string::npos);
  CHECK(a.find("subjectAltName") != std::string::npos);
  CHECK(a.find("registry_ca_file") == std::string::npos);  // the CA is not the problem
  CHECK(registry_tls_advice(https("r.example:443"), failed(60, "SSL certificate problem: certificate has expired"))
            .find("expired") != std::string::npos);
}

TEST_CASE("registry TLS advice: a plain-HTTP registry addressed as https, and an https one addressed as plain, "
          "name k8s.registry_plain_http",
          "[k8s][registry][tls]") {
  const std::string a = registry_tls_advice(https("127.0.0.1:25500"), failed(35, kPlainAsTls));
  CHECK(a.find("it does not speak TLS: for a registry that serves plain HTTP set k8s.registry_plain_http: true") !=
        std::string::npos);
  // Another handshake failure: not blamed on plain HTTP.
  CHECK(registry_tls_advice(https("127.0.0.1:25500"), failed(35, "SSL: handshake failure"))
            .find("registry_plain_http") == std::string::npos);

  RegistryConnection plain = https("127.0.0.1:25502");
  plain.plain_http = true;
  TransferReply r;
  r.status = 400;
  r.body = "Client sent an HTTP request to an HTTPS server.\n";  // Go's TLS server's answer
  CHECK(registry_tls_advice(plain, r).find("it speaks HTTPS, not plain HTTP: remove k8s.registry_plain_http") !=
        std::string::npos);
  r.body = "{\"errors\":[]}";
  CHECK(registry_tls_advice(plain, r).empty());
}

TEST_CASE("registry TLS advice: nothing for failures that are not about TLS", "[k8s][registry][tls]") {
  CHECK(registry_tls_advice(https("127.0.0.1:25502"), failed(7, "Failed to connect to 127.0.0.1 port 25502")).empty());
  TransferReply r;
  r.status = 401;
  CHECK(registry_tls_advice(https("127.0.0.1:25502"), r).empty());
  CHECK(registry_tls_advice(https("127.0.0.1:25502", "/ca.pem"), failed(77, "error setting certificate file"))
            .find("k8s.registry_ca_file (/ca.pem) holds no certificate") != std::string::npos);
}

TEST_CASE("podman registry trust: a PEM's certificates compare by their body, whatever the line breaks",
          "[k8s][registry][tls]") {
  CHECK(pem_certificates(kCaA) == std::vector<std::string>{"AAAAaaaaBBBBbbbbCCCCcccc"});
  CHECK(pem_certificates("-----BEGIN CERTIFICATE-----\r\nAAAAaaaa\r\nBBBBbbbbCCCCcccc\r\n-----END CERTIFICATE-----") ==
        pem_certificates(kCaA));
  CHECK(pem_certificates(kCaA + "junk\n" + kCaB).size() == 2);
  CHECK(pem_certificates("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").empty());
}

TEST_CASE("podman registry trust: a private CA podman's certs.d lacks is refused saying what to install where, "
          "found there, under the registry's HOST:PORT, it passes",
          "[k8s][registry][tls]") {
  TempDir user, etc;
  const std::vector<std::string> dirs = {(user.path / "certs.d").string(), (etc.path / "certs.d").string()};
  RegistryConnection c = https("127.0.0.1:25502", "/srv/registry-ca.pem");
  c.ca_pem = kCaA;

  auto none = check_podman_trusts_ca(c, dirs);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().kind == ErrorKind::kUsage);
  const std::string& m = none.error().message;
  CHECK(m.find("its push API takes no CA") != std::string::npos);
  CHECK(m.find("install -D -m 0644 /srv/registry-ca.pem " + dirs[0] + "/127.0.0.1:25502/ca.crt") != std::string::npos);
  CHECK(m.find(dirs[1] + "/127.0.0.1:25502/*.crt") != std::string::npos);
  CHECK(m.find("nothing was pushed") != std::string::npos);

  etc.write("certs.d/127.0.0.1:25502/ca.crt", kCaB);           // another CA
  etc.write("certs.d/127.0.0.1:25501/ca.crt", kCaA);           // another registry
  etc.write("certs.d/127.0.0.1:25502/registry.pem", kCaA);     // not *.crt: podman ignores it
  CHECK_FALSE(check_podman_trusts_ca(c, dirs).ok());

  etc.write("certs.d/127.0.0.1:25502/lazyagent.crt", kCaB + "-----BEGIN CERTIFICATE-----\r\nAAAAaaaaBBBB\r\nbbbbCCCCcccc\n"
                                                               "-----END CERTIFICATE-----\n");
  CHECK(check_podman_trusts_ca(c, dirs).ok());

  RegistryConnection system_trust = https("127.0.0.1:25502");  // no CA file: podman uses the system's, as we do
  CHECK(check_podman_trusts_ca(system_trust, {}).ok());
  RegistryConnection plain = c;
  plain.plain_http = true;
  CHECK(check_podman_trusts_ca(plain, {}).ok());
}

TEST_CASE("podman registry trust: root reads /etc's certs.d, a user first their own", "[k8s][registry][tls]") {
  const auto dirs = podman_certs_dirs();
  REQUIRE_FALSE(dirs.empty());
  CHECK(dirs[dirs.size() - 2] == "/etc/containers/certs.d");
  CHECK(dirs.back() == "/etc/docker/certs.d");
  CHECK(dirs.size() == (geteuid() == 0 ? 2u : 3u));
}
