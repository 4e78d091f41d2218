// TLS material that needs no set-up: a private CA and a server certificate signed by it, made
// once in a directory over OpenSSL's libcrypto and reused on later starts, for the server's
// embedded default. Clients trust the CA's certificate (ca.pem).
//
// Thread-safety: meant to be called once at start-up. Concurrent calls on the same directory
// (threads or processes) are serialised by an flock on the directory, so they are safe, and the
// later ones reuse what the first made.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tunectl {

struct TlsFiles {
  std::string ca_cert;      // PEM path of the private CA's certificate (what clients trust)
  std::string server_cert;  // PEM path of the server certificate, signed by the CA
  std::string server_key;   // PEM path of its private key (mode 0600)
};

// Makes (first call) or reuses a private CA and a server certificate signed by it in `dir`
// (created mode 0700; a symlink as `dir` or as any of the files is refused): ca.pem, ca-key.pem
// (0600), server.pem, server-key.pem (0600). The server certificate names every entry of `hosts`
// (an IP address literal, v4 or v6, with or without [brackets], becomes an IP SAN, anything else
// a DNS SAN) and has extendedKeyUsage serverAuth; CA: basicConstraints critical CA:TRUE,
// keyCertSign. Keys are EC P-256, signatures SHA-256, serial numbers random (127 bits, so the DER
// integer is positive and 16 bytes), valid from 1 hour ago for 10 years.
//
// When the files exist and the server certificate already names all `hosts`, is signed by ca.pem,
// matches server-key.pem and is not expired, they are reused unchanged; otherwise (hosts missing,
// expired, server files absent, not PEM or not a pair) a new server certificate and key naming
// exactly `hosts` are issued by the existing CA, so clients keep trusting the same ca.pem. A new CA
// is made only when ca.pem is absent or expired (and then a new server certificate too); a server
// certificate never outlives its CA (its notAfter is capped at the CA's). ca-key.pem is read only
// when a server certificate is issued, so it may be moved away once one names all hosts.
// Files are written atomically (temporary file, fsync, rename), keys 0600, certificates 0644.
//
// Errors:
//  - InvalidArgument: `hosts` is empty, or an entry is neither an IP literal nor a DNS name
//    (letters, digits, '-', '_', '.'; no wildcards), naming the entry;
//  - FailedPrecondition: `dir` or one of the files is a symlink or not a regular file/directory;
//    `dir` is not owned by this user or is writable by group or others; ca.pem is not a PEM CA
//    certificate; or a server certificate must be issued and ca-key.pem is missing, unreadable or
//    not ca.pem's key (the message says to remove `dir` to start afresh);
//  - Internal: a system call or OpenSSL failed, naming the path and the reason (errno's or
//    OpenSSL's).
Result<TlsFiles> EnsureSelfSignedTls(const std::string& dir, const std::vector<std::string>& hosts);

// Reads a whole (small, < 1 MiB) PEM file, following symlinks. NotFound when `path` does not
// exist; InvalidArgument when it is not a regular file, is 1 MiB or more, or holds no
// "-----BEGIN " line; Internal for other read errors; every message names the path.
Result<std::string> ReadPemFile(const std::string& path);

}  // namespace tunectl
