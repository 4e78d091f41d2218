#include "sys/tls_cert.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

namespace tunectl {
namespace {

constexpr int kValidDays = 3652;         // 10 years, leap days included
constexpr long kBackdateSeconds = 3600;  // valid from 1 hour ago: tolerates clients' clock skew
constexpr size_t kMaxPemBytes = 1 << 20;
constexpr const char* kCaCn = "tunectl local CA";
constexpr const char* kServerCn = "tunectl-server";
constexpr const char* kCaFile = "ca.pem";
constexpr const char* kCaKeyFile = "ca-key.pem";
constexpr const char* kServerFile = "server.pem";
constexpr const char* kServerKeyFile = "server-key.pem";

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using NamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, GENERAL_NAMES_free>>;
using NamePtr = std::unique_ptr<GENERAL_NAME, Deleter<GENERAL_NAME, GENERAL_NAME_free>>;
using OctetsPtr =
    std::unique_ptr<ASN1_OCTET_STRING, Deleter<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free>>;
using Ia5Ptr = std::unique_ptr<ASN1_IA5STRING, Deleter<ASN1_IA5STRING, ASN1_IA5STRING_free>>;

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// OpenSSL's earliest queued reason; the queue is left empty.
std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

std::string Errno() {
  return std::strerror(errno);
}

// One entry of `hosts`: an IP literal (its 4 or 16 bytes) or a lower-cased DNS name.
struct Host {
  std::string name;
  bool ip = false;
  unsigned char addr[16] = {};
  int addr_len = 0;
};

bool IsDnsName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t label = 0;
  for (const char c : s) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return label > 0;
}

Result<std::vector<Host>> ParseHosts(const std::vector<std::string>& hosts) {
  if (hosts.empty())
    return Status::InvalidArgument(
        "TLS hosts: at least one host name or IP address for the server certificate is needed");
  std::vector<Host> out;
  for (const std::string& h : hosts) {
    Host host;
    std::string s = h;
    const bool bracketed = s.size() > 2 && s.front() == '[' && s.back() == ']';
    if (bracketed) s = s.substr(1, s.size() - 2);
    if (!bracketed && inet_pton(AF_INET, s.c_str(), host.addr) == 1) {
      host.ip = true;
      host.addr_len = 4;
    } else if (inet_pton(AF_INET6, s.c_str(), host.addr) == 1) {
      host.ip = true;
      host.addr_len = 16;
    } else if (!bracketed && IsDnsName(s)) {
      for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    } else {
      return Status::InvalidArgument(
          "TLS host \"" + h +
          "\": expected an IP address (v4 or v6) or a DNS name (letters, digits, '-', '_' and "
          "'.'; no wildcards)");
    }
    host.name = s;
    bool seen = false;
    for (const Host& o : out)
      seen = seen || (o.ip == host.ip &&
                      (host.ip ? o.addr_len == host.addr_len && !std::memcmp(o.addr, host.addr, 16)
                               : o.name == host.name));
    if (!seen) out.push_back(host);
  }
  return out;
}

// Whether `cert` names `host` (a DNS name only from the SANs, never from the subject's CN).
bool Names(X509* cert, const Host& host) {
  if (host.ip) return X509_check_ip(cert, host.addr, static_cast<size_t>(host.addr_len), 0) == 1;
  return X509_check_host(cert, host.name.data(), host.name.size(),
                         X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, nullptr) == 1;
}

// Whether the current time is past `cert`'s notAfter (or its time cannot be read).
bool Expired(X509* cert) {
  return X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0;
}

// Reads an open regular file of less than kMaxPemBytes; `path` names it in errors.
Result<std::string> ReadSmall(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::Internal("cannot stat " + path + ": " + Errno());
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(path + " is not a regular file");
  if (static_cast<size_t>(st.st_size) >= kMaxPemBytes)
    return Status::InvalidArgument(path + " is " + std::to_string(st.st_size) +
                                   " bytes; a PEM file here must be under 1 MiB");
  std::string out;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal("cannot read " + path + ": " + Errno());
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() >= kMaxPemBytes)
      return Status::InvalidArgument(path + " grew past 1 MiB while being read");
  }
  return out;
}

// The contents of `dir`/`name` (opened through `dfd` without following a symlink), or nullopt
// when there is no such file.
Result<std::optional<std::string>> ReadAt(int dfd, const std::string& dir, const char* name) {
  const std::string path = dir + "/" + name;
  Fd fd(::openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    if (errno == ELOOP) return Status::FailedPrecondition(path + " is a symlink; refused");
    return Status::Internal("cannot open " + path + ": " + Errno());
  }
  auto text = ReadSmall(fd.get(), path);
  if (!text.ok()) return text.status();
  return std::optional<std::string>(std::move(*text));
}

// Writes `dir`/`name` atomically: a new temporary file in `dir` (O_EXCL, O_NOFOLLOW, `mode`),
// fsynced, renamed over `name`, then the directory fsynced so the rename is durable in order.
Status WriteAt(int dfd, const std::string& dir, const char* name, const std::string& content,
               mode_t mode) {
  const std::string path = dir + "/" + name;
  unsigned char rnd[8];
  if (RAND_bytes(rnd, sizeof rnd) != 1)
    return Status::Internal("cannot name a temporary file for " + path + ": " + OpenSslError());
  std::string tmp = std::string(".") + name + ".tmp-";
  for (const unsigned char b : rnd) {
    tmp += "0123456789abcdef"[b >> 4];
    tmp += "0123456789abcdef"[b & 15];
  }
  const std::string tmp_path = dir + "/" + tmp;
  Fd fd(::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (fd.get() < 0) return Status::Internal("cannot create " + tmp_path + ": " + Errno());
  auto fail = [&](const std::string& what) {
    const std::string why = Errno();
    ::unlinkat(dfd, tmp.c_str(), 0);
    return Status::Internal("cannot " + what + ": " + why);
  };
  if (::fchmod(fd.get(), mode) != 0) return fail("set the mode of " + tmp_path);  // past umask
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write " + tmp_path);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return fail("fsync " + tmp_path);
  if (::renameat(dfd, tmp.c_str(), dfd, name) != 0)
    return fail("rename " + tmp_path + " to " + path);
  if (::fsync(dfd) != 0) return Status::Internal("cannot fsync directory " + dir + ": " + Errno());
  return Status::Ok();
}

// Opens `dir` (made 0700, with its parents, when absent), refusing a symlink, a non-directory,
// and a directory that another user owns or that group or others may write.
Result<Fd> OpenDir(const std::string& dir) {
  struct stat st;
  bool made = false;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::Internal("cannot stat " + dir + ": " + Errno());
    const auto parent = std::filesystem::path(dir).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec)
      return Status::Internal("cannot create directory " + parent.string() + ": " + ec.message());
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return Status::Internal("cannot create directory " + dir + ": " + Errno());
    made = true;
    if (::lstat(dir.c_str(), &st) != 0)
      return Status::Internal("cannot stat " + dir + ": " + Errno());
  }
  if (S_ISLNK(st.st_mode)) return Status::FailedPrecondition(dir + " is a symlink; refused");
  if (!S_ISDIR(st.st_mode)) return Status::FailedPrecondition(dir + " is not a directory");
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ELOOP || errno == ENOTDIR)
      return Status::FailedPrecondition(dir + " changed into a symlink or non-directory; refused");
    return Status::Internal("cannot open directory " + dir + ": " + Errno());
  }
  struct stat fst;
  if (::fstat(fd.get(), &fst) != 0) return Status::Internal("cannot stat " + dir + ": " + Errno());
  if (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino)
    return Status::FailedPrecondition(dir + " was replaced while being opened; refused");
  if (fst.st_uid != ::geteuid())
    return Status::FailedPrecondition("TLS directory " + dir + " is owned by uid " +
                                      std::to_string(fst.st_uid) + ", not by this user (uid " +
                                      std::to_string(::geteuid()) + "); refused");
  if (made && ::fchmod(fd.get(), 0700) != 0)
    return Status::Internal("cannot set the mode of " + dir + ": " + Errno());
  if (!made && (fst.st_mode & 022) != 0)
    return Status::FailedPrecondition("TLS directory " + dir +
                                      " is writable by group or others; refused (chmod 700 it)");
  return fd;
}

// Refuses `dir`/`name` when it is a symlink or anything but a regular file; absent is fine.
Status CheckFile(int dfd, const std::string& dir, const char* name) {
  const std::string path = dir + "/" + name;
  struct stat st;
  if (::fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::Internal("cannot stat " + path + ": " + Errno());
  }
  if (S_ISLNK(st.st_mode)) return Status::FailedPrecondition(path + " is a symlink; refused");
  if (!S_ISREG(st.st_mode)) return Status::FailedPrecondition(path + " is not a regular file");
  return Status::Ok();
}

int NoPassword(char*, int, int, void*) {
  return 0;
}  // never prompt for an encrypted key

X509Ptr ParseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return X509Ptr(bio ? PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr) : nullptr);
}

PkeyPtr ParseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return PkeyPtr(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr) : nullptr);
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

Result<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1)
    return Status::Internal("cannot encode a certificate as PEM: " + OpenSslError());
  return BioText(bio.get());
}

Result<std::string> KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return Status::Internal("cannot encode a private key as PEM: " + OpenSslError());
  return BioText(bio.get());
}

Result<PkeyPtr> NewP256Key() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return Status::Internal("cannot make an EC P-256 key: " + OpenSslError());
  return key;
}

Status AddExt(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return Status::Internal(std::string("cannot add ") + OBJ_nid2sn(nid) + " \"" + value +
                            "\": " + OpenSslError());
  return Status::Ok();
}

Status AddSubjectAltNames(X509* cert, const std::vector<Host>& hosts) {
  NamesPtr names(sk_GENERAL_NAME_new_null());
  if (!names) return Status::Internal("cannot allocate subjectAltName: " + OpenSslError());
  for (const Host& h : hosts) {
    NamePtr name(GENERAL_NAME_new());
    if (!name) return Status::Internal("cannot allocate subjectAltName: " + OpenSslError());
    if (h.ip) {
      OctetsPtr addr(ASN1_OCTET_STRING_new());
      if (!addr || ASN1_OCTET_STRING_set(addr.get(), h.addr, h.addr_len) != 1)
        return Status::Internal("cannot encode IP " + h.name + ": " + OpenSslError());
      GENERAL_NAME_set0_value(name.get(), GEN_IPADD, addr.release());
    } else {
      Ia5Ptr dns(ASN1_IA5STRING_new());
      if (!dns || ASN1_STRING_set(dns.get(), h.name.data(), static_cast<int>(h.name.size())) != 1)
        return Status::Internal("cannot encode DNS name " + h.name + ": " + OpenSslError());
      GENERAL_NAME_set0_value(name.get(), GEN_DNS, dns.release());
    }
    if (sk_GENERAL_NAME_push(names.get(), name.get()) <= 0)
      return Status::Internal("cannot build subjectAltName: " + OpenSslError());
    name.release();  // owned by `names` now
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1)
    return Status::Internal("cannot add subjectAltName: " + OpenSslError());
  return Status::Ok();
}

// A certificate for `key` named CN=`cn`: with no `issuer`, a self-signed CA; otherwise a server
// certificate naming `hosts`, signed by `issuer`/`issuer_key` and expiring no later than it.
Result<X509Ptr> MakeCert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                         const std::vector<Host>& hosts) {
  X509Ptr cert(X509_new());
  BnPtr serial(BN_new());
  if (!cert || !serial || X509_set_version(cert.get(), X509_VERSION_3) != 1)
    return Status::Internal("cannot allocate a certificate: " + OpenSslError());
  do {
    if (BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1)
      return Status::Internal("cannot draw a serial number: " + OpenSslError());
  } while (BN_is_zero(serial.get()));
  if (!BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())))
    return Status::Internal("cannot set the serial number: " + OpenSslError());
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) ||
      !X509_time_adj_ex(X509_getm_notAfter(cert.get()), kValidDays, -kBackdateSeconds, nullptr))
    return Status::Internal("cannot set the validity: " + OpenSslError());
  if (issuer && ASN1_TIME_compare(X509_get0_notAfter(issuer), X509_get0_notAfter(cert.get())) < 0 &&
      X509_set1_notAfter(cert.get(), X509_get0_notAfter(issuer)) != 1)
    return Status::Internal("cannot set the validity: " + OpenSslError());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(cn), -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : subject) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1)
    return Status::Internal("cannot set the names and key: " + OpenSslError());

  X509V3_CTX ctx{};
  X509V3_set_ctx(&ctx, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  X509V3_set_ctx_nodb(&ctx);
  const bool ca = issuer == nullptr;
  const std::pair<int, const char*> exts[] = {
      {NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE"},
      {NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature"},
      {ca ? NID_undef : NID_ext_key_usage, "serverAuth"},
      {NID_subject_key_identifier, "hash"},  // before the AKID: a self-signed CA's is its own
      {NID_authority_key_identifier, "keyid:always"},
  };
  for (const auto& [nid, value] : exts)
    if (nid != NID_undef)
      if (Status s = AddExt(cert.get(), &ctx, nid, value); !s.ok()) return s;
  if (!ca)
    if (Status s = AddSubjectAltNames(cert.get(), hosts); !s.ok()) return s;
  if (X509_sign(cert.get(), issuer ? issuer_key : key, EVP_sha256()) <= 0)
    return Status::Internal("cannot sign the certificate: " + OpenSslError());
  return cert;
}

// Makes a key and a certificate for it and writes both (key first: a cert on disk always has its
// key on disk).
Status IssueAndWrite(int dfd, const std::string& dir, const char* cn, X509* issuer,
                     EVP_PKEY* issuer_key, const std::vector<Host>& hosts, const char* key_file,
                     const char* cert_file, X509Ptr* cert_out, PkeyPtr* key_out) {
  auto key = NewP256Key();
  if (!key.ok()) return key.status();
  auto cert = MakeCert(cn, key->get(), issuer, issuer_key, hosts);
  if (!cert.ok())
    return Status::Internal("making " + dir + "/" + cert_file + ": " + cert.status().message());
  auto key_pem = KeyPem(key->get());
  if (!key_pem.ok()) return key_pem.status();
  auto cert_pem = CertPem(cert->get());
  if (!cert_pem.ok()) return cert_pem.status();
  if (Status s = WriteAt(dfd, dir, key_file, *key_pem, 0600); !s.ok()) return s;
  if (Status s = WriteAt(dfd, dir, cert_file, *cert_pem, 0644); !s.ok()) return s;
  if (cert_out) *cert_out = std::move(*cert);
  if (key_out) *key_out = std::move(*key);
  return Status::Ok();
}

// Whether server.pem and server-key.pem exist, belong together, are signed by `ca`, are valid
// now and name every host.
Result<bool> ServerReusable(int dfd, const std::string& dir, X509* ca,
                            const std::vector<Host>& hosts) {
  auto cert_pem = ReadAt(dfd, dir, kServerFile);
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadAt(dfd, dir, kServerKeyFile);
  if (!key_pem.ok()) return key_pem.status();
  if (!cert_pem->has_value() || !key_pem->has_value()) return false;
  X509Ptr cert = ParseCert(**cert_pem);
  PkeyPtr key = ParseKey(**key_pem);
  bool ok = cert && key && X509_check_private_key(cert.get(), key.get()) == 1 &&
            X509_check_issued(ca, cert.get()) == X509_V_OK &&
            X509_verify(cert.get(), X509_get0_pubkey(ca)) == 1 &&
            X509_cmp_current_time(X509_get0_notBefore(cert.get())) < 0 && !Expired(cert.get());
  for (const Host& h : hosts) ok = ok && Names(cert.get(), h);
  ERR_clear_error();  // a failed check above is an answer, not an error
  return ok;
}

std::string StartAfresh(const std::string& dir) {
  return "; remove " + dir + " to make new TLS material (clients must then trust the new ca.pem)";
}

}  // namespace

Result<TlsFiles> EnsureSelfSignedTls(const std::string& dir_arg,
                                     const std::vector<std::string>& hosts_arg) {
  ERR_clear_error();  // so that reasons reported are ours
  auto hosts = ParseHosts(hosts_arg);
  if (!hosts.ok()) return hosts.status();
  std::string dir = dir_arg;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // "link/" would follow the link
  if (dir.empty()) return Status::InvalidArgument("TLS directory: an empty path");
  auto dfd = OpenDir(dir);
  if (!dfd.ok()) return dfd.status();
  const int d = dfd->get();
  if (::flock(d, LOCK_EX) != 0) return Status::Internal("cannot lock " + dir + ": " + Errno());
  for (const char* name : {kCaFile, kCaKeyFile, kServerFile, kServerKeyFile})
    if (Status s = CheckFile(d, dir, name); !s.ok()) return s;
  const TlsFiles files{dir + "/" + kCaFile, dir + "/" + kServerFile, dir + "/" + kServerKeyFile};

  X509Ptr ca;
  PkeyPtr ca_key;
  auto ca_pem = ReadAt(d, dir, kCaFile);
  if (!ca_pem.ok()) return ca_pem.status();
  if (ca_pem->has_value()) {
    ca = ParseCert(**ca_pem);
    if (!ca)
      return Status::FailedPrecondition(files.ca_cert + " is not a PEM certificate (" +
                                        OpenSslError() + ")" + StartAfresh(dir));
    if (X509_check_ca(ca.get()) < 1)
      return Status::FailedPrecondition(files.ca_cert + " is not a CA certificate" +
                                        StartAfresh(dir));
    if (Expired(ca.get())) ca.reset();  // nothing it signed verifies any more: make a new one
  }
  if (!ca) {
    if (Status s = IssueAndWrite(d, dir, kCaCn, nullptr, nullptr, *hosts, kCaKeyFile, kCaFile, &ca,
                                 &ca_key);
        !s.ok())
      return s;
  } else {
    auto reusable = ServerReusable(d, dir, ca.get(), *hosts);
    if (!reusable.ok()) return reusable.status();
    if (*reusable) return files;
    auto key_pem = ReadAt(d, dir, kCaKeyFile);
    if (!key_pem.ok()) return key_pem.status();
    if (!key_pem->has_value())
      return Status::FailedPrecondition(dir + "/" + kCaKeyFile +
                                        " is missing; it is needed to issue a server certificate" +
                                        StartAfresh(dir));
    ca_key = ParseKey(**key_pem);
    if (!ca_key)
      return Status::FailedPrecondition(dir + "/" + kCaKeyFile + " is not a PEM private key (" +
                                        OpenSslError() + ")" + StartAfresh(dir));
    if (X509_check_private_key(ca.get(), ca_key.get()) != 1)
      return Status::FailedPrecondition(dir + "/" + kCaKeyFile + " is not the key of " +
                                        files.ca_cert + " (" + OpenSslError() + ")" +
                                        StartAfresh(dir));
  }
  if (Status s = IssueAndWrite(d, dir, kServerCn, ca.get(), ca_key.get(), *hosts, kServerKeyFile,
                               kServerFile, nullptr, nullptr);
      !s.ok())
    return s;
  return files;
}

Result<std::string> ReadPemFile(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return Status::NotFound("cannot read " + path + ": " + Errno());
    return Status::Internal("cannot open " + path + ": " + Errno());
  }
  auto text = ReadSmall(fd.get(), path);
  if (!text.ok()) return text.status();
  if (text->find("-----BEGIN ") == std::string::npos)
    return Status::InvalidArgument(path + " is not a PEM file (no \"-----BEGIN \" line)");
  return text;
}

}  // namespace tunectl
