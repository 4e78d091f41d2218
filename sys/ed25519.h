// Ed25519 signatures over OpenSSL's libcrypto: the server signs the audit chain's head with a key
// kept in a file (created once, mode 0600), and `tunectl audit verify --against` checks a kept
// head's signature. Thread-safe after construction.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tunectl {

class Ed25519Key {
 public:
  // Loads the PEM private key at `path`, or creates one there (mode 0600, parent directory
  // created; an existing symlink is refused). Internal naming the path and OpenSSL's reason.
  static Result<std::unique_ptr<Ed25519Key>> LoadOrCreate(const std::string& path);
  ~Ed25519Key();

  std::string SignHex(std::string_view message) const;  // 128 hex digits
  std::string PublicKeyHex() const;                     // 64 hex digits

 private:
  struct Impl;
  explicit Ed25519Key(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether `signature_hex` is `public_key_hex`'s signature of `message`. InvalidArgument when a
// hex string is malformed or of the wrong length.
Result<bool> Ed25519Verify(const std::string& public_key_hex, std::string_view message,
                           const std::string& signature_hex);

}  // namespace tunectl
