#include "attest/signing_key.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "util/digest.h"

namespace lazyagent {

void PkeyFree::operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }

namespace {

struct KeyBioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using KeyBio = std::unique_ptr<BIO, KeyBioFree>;

// The key id: sha256 of the SPKI DER of the public half.
std::string spki_keyid(EVP_PKEY* k) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(k, &der);
  if (n <= 0) return "";
  std::string id = sha256_hex(std::string_view(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n)));
  OPENSSL_free(der);
  return id;
}

std::string bio_text(BIO* b) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

// A passphrase callback that refuses: an encrypted key is an error, never a prompt.
int no_passphrase(char*, int, int, void*) { return 0; }

// The text of a key file, wiped when it goes out of scope.
struct WipedText {
  std::string text;
  ~WipedText() {
    if (!text.empty()) OPENSSL_cleanse(text.data(), text.size());
  }
};

// Reads a private key file after checking who may read it. The checks are
// made on the open descriptor (fstat), not on the name, so a file swapped
// between the check and the read is not read.
Status read_private_key_file(const std::string& path, const std::string& what, WipedText* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return usage_error(what + " " + path + ": cannot open the private key: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return usage_error(what + " " + path + ": not a regular file (give the PEM file `lazyagent-oci keygen` or "
                       "`openssl genpkey -algorithm ed25519` wrote)");
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    return usage_error(what + " " + path + ": the private key belongs to uid " + std::to_string(st.st_uid) +
                       ", not to you (uid " + std::to_string(::geteuid()) +
                       "): use a key file of your own, readable by you only (`chmod 600 " + path + "`)");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return usage_error(what + " " + path + ": the private key may be read by group or others (mode " + mode +
                       "): run `chmod 600 " + path + "` and try again");
  }
  if (static_cast<std::size_t>(st.st_size) > kMaxKeyFileBytes) {
    ::close(fd);
    return usage_error(what + " " + path + ": " + std::to_string(st.st_size) + " bytes is no Ed25519 key file (at most " +
                       std::to_string(kMaxKeyFileBytes) + ")");
  }
  out->text.resize(kMaxKeyFileBytes + 1);
  std::size_t got = 0;
  while (got < out->text.size()) {
    const ssize_t n = ::read(fd, out->text.data() + got, out->text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got > kMaxKeyFileBytes) return usage_error(what + " " + path + ": the file grew past " + std::to_string(kMaxKeyFileBytes) + " bytes");
  OPENSSL_cleanse(out->text.data() + got, out->text.size() - got);
  out->text.resize(got);
  return ok_status();
}

Status check_ed25519(EVP_PKEY* k, const std::string& where) {
  if (EVP_PKEY_get_id(k) == EVP_PKEY_ED25519) return ok_status();
  const char* name = OBJ_nid2sn(EVP_PKEY_get_id(k));
  return usage_error(where + ": an " + std::string(name ? name : "unknown") +
                     " key, not Ed25519 (make one with `lazyagent-oci keygen --out DIR` or `openssl genpkey "
                     "-algorithm ed25519 -out key.pem`)");
}

}  // namespace

Result<SigningKey> SigningKey::load(const std::string& path, const std::string& what) {
  WipedText file;
  if (auto st = read_private_key_file(path, what, &file); !st) return st.error();
  KeyBio bio(BIO_new_mem_buf(file.text.data(), static_cast<int>(file.text.size())));
  EVP_PKEY* raw = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr) : nullptr;
  if (raw == nullptr) {
    const bool encrypted = file.text.find("ENCRYPTED") != std::string::npos;
    return usage_error(what + " " + path + ": " +
                       (encrypted ? std::string("an encrypted private key (no passphrase is asked): write it "
                                                "unencrypted with `openssl pkey -in KEY -out PLAIN.pem` and `chmod 600`")
                                  : std::string("not a PEM private key (expected \"-----BEGIN PRIVATE KEY-----\", as "
                                                "`lazyagent-oci keygen` and `openssl genpkey -algorithm ed25519` write)")));
  }
  SigningKey k;
  k.key_ = PkeyPtr(raw, PkeyFree{});
  if (auto st = check_ed25519(raw, what + " " + path); !st) return st.error();
  k.keyid_ = spki_keyid(raw);
  return k;
}

Result<SigningKey> SigningKey::generate() {
  EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (raw == nullptr) return engine_error("OpenSSL could not make an Ed25519 key");
  SigningKey k;
  k.key_ = PkeyPtr(raw, PkeyFree{});
  k.keyid_ = spki_keyid(raw);
  return k;
}

std::string SigningKey::public_pem() const {
  KeyBio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key_.get()) != 1) return "";
  return bio_text(bio.get());
}

Result<std::string> SigningKey::sign(std::string_view message) const {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::string sig(64, '\0');
  std::size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    return engine_error("OpenSSL could not sign with key " + keyid_);
  }
  sig.resize(len);
  return sig;
}

Status SigningKey::write_private_pem(const std::string& path) const {
  KeyBio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return engine_error("OpenSSL could not write the private key");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return usage_error(path + ": " + std::strerror(errno) +
                       (errno == EEXIST ? std::string(" (a key is never overwritten: choose another --out, or remove it)")
                                        : std::string()));
  }
  bool ok = ::fchmod(fd, 0600) == 0;
  for (long done = 0; ok && done < n;) {
    const ssize_t w = ::write(fd, data + done, static_cast<std::size_t>(n - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = false;
    else done += w;
  }
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok) return engine_error(path + ": writing the private key failed: " + std::strerror(errno));
  return ok_status();
}

Result<VerifyKey> VerifyKey::from_pem(std::string_view pem) {
  KeyBio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* raw = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (raw == nullptr) {
    const bool is_private = pem.find("PRIVATE KEY") != std::string_view::npos;
    return usage_error(is_private ? "a private key, not a public one: give the .pub file (`openssl pkey -in KEY -pubout`)"
                                  : "not a PEM public key (expected \"-----BEGIN PUBLIC KEY-----\")");
  }
  VerifyKey k;
  k.key_ = PkeyPtr(raw, PkeyFree{});
  if (auto st = check_ed25519(raw, "the public key"); !st) return st.error();
  k.keyid_ = spki_keyid(raw);
  return k;
}

Result<VerifyKey> VerifyKey::load(const std::string& path) {
  KeyBio bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return usage_error("--key " + path + ": cannot open the public key: " + std::strerror(errno));
  std::string text(kMaxKeyFileBytes + 1, '\0');
  const int n = BIO_read(bio.get(), text.data(), static_cast<int>(text.size()));
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  if (text.size() > kMaxKeyFileBytes) return usage_error("--key " + path + ": larger than any public key file");
  auto k = from_pem(text);
  if (!k) return k.error().context("--key " + path);
  return k;
}

bool VerifyKey::verify(std::string_view message, std::string_view signature) const {
  if (signature.size() != 64) return false;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

}  // namespace lazyagent
