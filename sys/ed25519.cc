#include "sys/ed25519.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <vector>

namespace tunectl {
namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kHex[p[i] >> 4];
    out += kHex[p[i] & 0xf];
  }
  return out;
}

bool Unhex(const std::string& s, std::vector<unsigned char>* out) {
  if (s.size() % 2) return false;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  out->clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = nib(s[i]), lo = nib(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<unsigned char>(hi << 4 | lo));
  }
  return true;
}

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

struct Ed25519Key::Impl {
  std::unique_ptr<EVP_PKEY, PkeyFree> key;
};

Ed25519Key::Ed25519Key(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Ed25519Key::~Ed25519Key() = default;

Result<std::unique_ptr<Ed25519Key>> Ed25519Key::LoadOrCreate(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      return Status::Internal("audit key " + path + " is a symlink; refused");
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return Status::Internal("audit key " + path + ": cannot read it");
    impl->key.reset(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
    std::fclose(f);
    if (!impl->key || EVP_PKEY_get_id(impl->key.get()) != EVP_PKEY_ED25519)
      return Status::Internal("audit key " + path +
                              " is not an Ed25519 private key in PEM: " + OpenSslError());
    return std::unique_ptr<Ed25519Key>(new Ed25519Key(std::move(impl)));
  }
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  EVP_PKEY* raw = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr);
  const bool made = ctx && EVP_PKEY_keygen_init(ctx) == 1 && EVP_PKEY_keygen(ctx, &raw) == 1;
  EVP_PKEY_CTX_free(ctx);
  if (!made) return Status::Internal("cannot make an Ed25519 key: " + OpenSslError());
  impl->key.reset(raw);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Internal("audit key " + path + ": cannot create it");
  FILE* f = fdopen(fd, "w");
  const bool written =
      f && PEM_write_PrivateKey(f, raw, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (f)
    std::fclose(f);
  else
    close(fd);
  if (!written) return Status::Internal("audit key " + path + ": cannot write it");
  return std::unique_ptr<Ed25519Key>(new Ed25519Key(std::move(impl)));
}

std::string Ed25519Key::SignHex(std::string_view message) const {
  std::unique_ptr<EVP_MD_CTX, MdFree> md(EVP_MD_CTX_new());
  unsigned char sig[64];
  size_t len = sizeof sig;
  if (!md || EVP_DigestSignInit(md.get(), nullptr, nullptr, nullptr, impl_->key.get()) != 1 ||
      EVP_DigestSign(md.get(), sig, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1)
    return "";
  return Hex(sig, len);
}

std::string Ed25519Key::PublicKeyHex() const {
  unsigned char pub[32];
  size_t len = sizeof pub;
  if (EVP_PKEY_get_raw_public_key(impl_->key.get(), pub, &len) != 1) return "";
  return Hex(pub, len);
}

Result<bool> Ed25519Verify(const std::string& public_key_hex, std::string_view message,
                           const std::string& signature_hex) {
  std::vector<unsigned char> pub, sig;
  if (!Unhex(public_key_hex, &pub) || pub.size() != 32)
    return Status::InvalidArgument("public_key: expected 64 hex digits (an Ed25519 key), got \"" +
                                   public_key_hex + "\"");
  if (!Unhex(signature_hex, &sig) || sig.size() != 64)
    return Status::InvalidArgument("signature: expected 128 hex digits, got \"" + signature_hex +
                                   "\"");
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, pub.data(), pub.size()));
  if (!key) return Status::InvalidArgument("public_key: not an Ed25519 key");
  std::unique_ptr<EVP_MD_CTX, MdFree> md(EVP_MD_CTX_new());
  if (!md || EVP_DigestVerifyInit(md.get(), nullptr, nullptr, nullptr, key.get()) != 1)
    return Status::Internal("cannot verify: " + OpenSslError());
  return EVP_DigestVerify(md.get(), sig.data(), sig.size(),
                          reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

}  // namespace tunectl
