#include "sys/tls_cert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace tunectl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE, X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

// A fresh directory under the test temp dir, removed with everything in it at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = ::testing::TempDir() + "tls_cert_test-XXXXXX";
    const char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << tmpl;
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

unsigned Mode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

X509Ptr LoadCert(const std::string& path) {
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  EXPECT_TRUE(cert) << "no certificate in " << path;
  return cert;
}

PkeyPtr LoadKey(const std::string& path) {
  BioPtr bio(BIO_new_file(path.c_str(), "r"));
  PkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  EXPECT_TRUE(key) << "no private key in " << path;
  return key;
}

// "" when the server certificate chains to the CA for the SSL-server purpose, else why not.
std::string VerifyAsServer(const TlsFiles& files) {
  X509Ptr ca = LoadCert(files.ca_cert);
  X509Ptr server = LoadCert(files.server_cert);
  if (!ca || !server) return "unreadable certificates";
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), server.get(), nullptr) != 1 ||
      X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER) != 1)
    return "cannot set up the verification";
  if (X509_verify_cert(ctx.get()) == 1) return "";
  return X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
}

bool NamesHost(const std::string& cert_path, const std::string& host) {
  X509Ptr cert = LoadCert(cert_path);
  return cert && X509_check_host(cert.get(), host.c_str(), host.size(), 0, nullptr) == 1;
}

bool NamesIp(const std::string& cert_path, const std::string& ip) {
  X509Ptr cert = LoadCert(cert_path);
  return cert && X509_check_ip_asc(cert.get(), ip.c_str(), 0) == 1;
}

const std::vector<std::string> kLocal = {"localhost", "127.0.0.1"};

TEST(TlsCert, FirstCallCreatesTheFourFilesKeysPrivateInANewPrivateDir) {
  ScratchDir scratch;
  const std::string dir = scratch.path() + "/state/tls";  // neither exists yet
  auto files = EnsureSelfSignedTls(dir, kLocal);
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(files->ca_cert, dir + "/ca.pem");
  EXPECT_EQ(files->server_cert, dir + "/server.pem");
  EXPECT_EQ(files->server_key, dir + "/server-key.pem");
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(dir + "/ca.pem"), 0644u);
  EXPECT_EQ(Mode(dir + "/ca-key.pem"), 0600u);
  EXPECT_EQ(Mode(dir + "/server.pem"), 0644u);
  EXPECT_EQ(Mode(dir + "/server-key.pem"), 0600u);
  std::vector<std::string> names;  // no temporary files left behind
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("ca.pem", "ca-key.pem", "server.pem",
                                                     "server-key.pem"));
}

TEST(TlsCert, ServerCertificateVerifiesAgainstTheCaForItsHostsOnly) {
  ScratchDir scratch;
  auto files = EnsureSelfSignedTls(scratch.path(), kLocal);
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(VerifyAsServer(*files), "");
  EXPECT_TRUE(NamesHost(files->server_cert, "localhost"));
  EXPECT_TRUE(NamesIp(files->server_cert, "127.0.0.1"));
  EXPECT_FALSE(NamesHost(files->server_cert, "evil.example"));
  EXPECT_FALSE(NamesIp(files->server_cert, "127.0.0.2"));
  EXPECT_FALSE(NamesHost(files->server_cert, "tunectl-server"));  // the CN is not a name
}

TEST(TlsCert, CertificatesAreV3P256Sha256WithTheRequiredExtensionsAndTenYears) {
  ScratchDir scratch;
  auto files = EnsureSelfSignedTls(scratch.path(), kLocal);
  ASSERT_TRUE(files.ok()) << files.status().message();
  X509Ptr ca = LoadCert(files->ca_cert);
  X509Ptr server = LoadCert(files->server_cert);
  PkeyPtr server_key = LoadKey(files->server_key);
  PkeyPtr ca_key = LoadKey(scratch.path() + "/ca-key.pem");
  ASSERT_TRUE(ca && server && server_key && ca_key);
  EXPECT_EQ(X509_check_private_key(server.get(), server_key.get()), 1);
  EXPECT_EQ(X509_check_private_key(ca.get(), ca_key.get()), 1);
  const time_t now = time(nullptr);
  for (X509* cert : {ca.get(), server.get()}) {
    EXPECT_EQ(X509_get_version(cert), X509_VERSION_3);
    EXPECT_EQ(X509_get_signature_nid(cert), NID_ecdsa_with_SHA256);
    EVP_PKEY* pub = X509_get0_pubkey(cert);
    EXPECT_EQ(EVP_PKEY_get_base_id(pub), EVP_PKEY_EC);
    EXPECT_EQ(EVP_PKEY_get_bits(pub), 256);
    BnPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
    ASSERT_TRUE(serial);
    EXPECT_LE(BN_num_bits(serial.get()), 127);
    EXPECT_GT(BN_num_bits(serial.get()), 64);  // random: 2^-63 chance of a false failure
    time_t before = now - 3500, after = now - 3700;
    EXPECT_LT(X509_cmp_time(X509_get0_notBefore(cert), &before), 0);  // about 1 hour ago
    EXPECT_GT(X509_cmp_time(X509_get0_notBefore(cert), &after), 0);
    int days = 0, secs = 0;
    ASSERT_EQ(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(cert), X509_get0_notAfter(cert)), 1);
    EXPECT_GE(days, 3650);
    EXPECT_LE(days, 3653);
    EXPECT_NE(X509_get0_subject_key_id(cert), nullptr);
    EXPECT_NE(X509_get0_authority_key_id(cert), nullptr);
  }
  EXPECT_NE(BN_cmp(BnPtr(ASN1_INTEGER_to_BN(X509_get0_serialNumber(ca.get()), nullptr)).get(),
                   BnPtr(ASN1_INTEGER_to_BN(X509_get0_serialNumber(server.get()), nullptr)).get()),
            0);
  // CA: basicConstraints critical CA:TRUE, keyCertSign
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  const int bc = X509_get_ext_by_NID(ca.get(), NID_basic_constraints, -1);
  ASSERT_GE(bc, 0);
  EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(ca.get(), bc)), 1);
  EXPECT_TRUE(X509_get_key_usage(ca.get()) & KU_KEY_CERT_SIGN);
  // server: not a CA, serverAuth, issued by the CA's key
  EXPECT_EQ(X509_check_ca(server.get()), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(server.get()) & XKU_SSL_SERVER);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(server.get()),
                                  X509_get0_subject_key_id(ca.get())),
            0);
  char cn[64] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(ca.get()), NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "tunectl local CA");
  X509_NAME_get_text_by_NID(X509_get_subject_name(server.get()), NID_commonName, cn, sizeof cn);
  EXPECT_STREQ(cn, "tunectl-server");
}

TEST(TlsCert, ASecondCallReusesTheFilesUnchanged) {
  ScratchDir scratch;
  const std::string dir = scratch.path();
  ASSERT_TRUE(EnsureSelfSignedTls(dir, kLocal).ok());
  const std::vector<std::string> names = {"ca.pem", "ca-key.pem", "server.pem", "server-key.pem"};
  std::vector<std::string> first;
  for (const auto& n : names) first.push_back(Bytes(dir + "/" + n));
  for (const auto& hosts : {kLocal, std::vector<std::string>{"localhost"},  // a subset
                            std::vector<std::string>{"LOCALHOST", "127.0.0.1", "localhost"}}) {
    auto again = EnsureSelfSignedTls(dir + "/", hosts);
    ASSERT_TRUE(again.ok()) << again.status().message();
    for (size_t i = 0; i < names.size(); ++i)
      EXPECT_EQ(Bytes(dir + "/" + names[i]), first[i]) << names[i] << " changed";
  }
}

TEST(TlsCert, AnExtraHostReissuesTheServerCertificateUnderTheSameCa) {
  ScratchDir scratch;
  const std::string dir = scratch.path();
  ASSERT_TRUE(EnsureSelfSignedTls(dir, kLocal).ok());
  const std::string ca = Bytes(dir + "/ca.pem"), ca_key = Bytes(dir + "/ca-key.pem");
  const std::string server = Bytes(dir + "/server.pem"), key = Bytes(dir + "/server-key.pem");
  auto files = EnsureSelfSignedTls(dir, {"localhost", "127.0.0.1", "10.1.2.3", "node7.cluster"});
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(Bytes(dir + "/ca.pem"), ca);
  EXPECT_EQ(Bytes(dir + "/ca-key.pem"), ca_key);
  EXPECT_NE(Bytes(dir + "/server.pem"), server);
  EXPECT_NE(Bytes(dir + "/server-key.pem"), key);
  EXPECT_EQ(Mode(dir + "/server-key.pem"), 0600u);
  EXPECT_EQ(VerifyAsServer(*files), "");
  EXPECT_TRUE(NamesIp(files->server_cert, "10.1.2.3"));
  EXPECT_TRUE(NamesHost(files->server_cert, "node7.cluster"));
  EXPECT_TRUE(NamesHost(files->server_cert, "localhost"));
  EXPECT_TRUE(NamesIp(files->server_cert, "127.0.0.1"));
  const std::string reissued = Bytes(dir + "/server.pem");
  ASSERT_TRUE(EnsureSelfSignedTls(dir, {"node7.cluster", "10.1.2.3"}).ok());
  EXPECT_EQ(Bytes(dir + "/server.pem"), reissued);  // and that one is reused in turn
}

TEST(TlsCert, IpV6LiteralsWithOrWithoutBracketsBecomeIpSans) {
  ScratchDir scratch;
  auto files = EnsureSelfSignedTls(scratch.path(), {"::1", "[fd00::7]", "localhost"});
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(VerifyAsServer(*files), "");
  EXPECT_TRUE(NamesIp(files->server_cert, "::1"));
  EXPECT_TRUE(NamesIp(files->server_cert, "fd00:0:0:0:0:0:0:7"));
  EXPECT_FALSE(NamesHost(files->server_cert, "fd00::7"));  // not a DNS SAN
}

TEST(TlsCert, AnExpiredServerCertificateIsReissuedByTheSameCa) {
  ScratchDir scratch;
  const std::string dir = scratch.path();
  auto files = EnsureSelfSignedTls(dir, kLocal);
  ASSERT_TRUE(files.ok()) << files.status().message();
  const std::string ca_pem = Bytes(files->ca_cert);
  {  // replace server.pem with one for the same key, names and CA that expired yesterday
    X509Ptr ca = LoadCert(files->ca_cert);
    PkeyPtr ca_key = LoadKey(dir + "/ca-key.pem");
    PkeyPtr key = LoadKey(files->server_key);
    X509Ptr old(X509_new());
    ASSERT_TRUE(ca && ca_key && key && old);
    ASSERT_EQ(X509_set_version(old.get(), X509_VERSION_3), 1);
    ASN1_INTEGER_set(X509_get_serialNumber(old.get()), 7);
    X509_gmtime_adj(X509_getm_notBefore(old.get()), -2 * 86400);
    X509_gmtime_adj(X509_getm_notAfter(old.get()), -86400);
    X509_set_issuer_name(old.get(), X509_get_subject_name(ca.get()));
    X509_set_pubkey(old.get(), key.get());
    X509V3_CTX ctx{};
    X509V3_set_ctx(&ctx, ca.get(), old.get(), nullptr, nullptr, 0);
    ExtPtr san(
        X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"));
    ASSERT_TRUE(san);
    X509_add_ext(old.get(), san.get(), -1);
    ASSERT_GT(X509_sign(old.get(), ca_key.get(), EVP_sha256()), 0);
    BioPtr out(BIO_new_file(files->server_cert.c_str(), "w"));
    ASSERT_TRUE(out);
    ASSERT_EQ(PEM_write_bio_X509(out.get(), old.get()), 1);
  }
  EXPECT_EQ(VerifyAsServer(*files), "certificate has expired");
  const std::string expired = Bytes(files->server_cert);
  auto again = EnsureSelfSignedTls(dir, kLocal);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_NE(Bytes(files->server_cert), expired);
  EXPECT_EQ(Bytes(files->ca_cert), ca_pem);
  EXPECT_EQ(VerifyAsServer(*again), "");
}

TEST(TlsCert, ASymlinkAsAFileIsRefusedAndItsTargetNotWritten) {
  ScratchDir scratch, elsewhere;
  const std::string dir = scratch.path();
  const std::string target = elsewhere.path() + "/precious";
  { std::ofstream(target) << "precious\n"; }
  fs::create_symlink(target, dir + "/ca-key.pem");
  auto files = EnsureSelfSignedTls(dir, kLocal);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_THAT(files.status().message(), HasSubstr(dir + "/ca-key.pem is a symlink; refused"));
  EXPECT_EQ(Bytes(target), "precious\n");
  EXPECT_TRUE(fs::is_symlink(dir + "/ca-key.pem"));
  EXPECT_FALSE(fs::exists(dir + "/ca.pem"));

  // a dangling link as server-key.pem, when a new host would reissue it: refused, not created
  ScratchDir made;
  ASSERT_TRUE(EnsureSelfSignedTls(made.path(), kLocal).ok());
  fs::remove(made.path() + "/server-key.pem");
  fs::create_symlink(elsewhere.path() + "/stolen-key", made.path() + "/server-key.pem");
  auto again = EnsureSelfSignedTls(made.path(), {"localhost", "node7.cluster"});
  ASSERT_FALSE(again.ok());
  EXPECT_THAT(again.status().message(), HasSubstr("server-key.pem is a symlink; refused"));
  EXPECT_FALSE(fs::exists(elsewhere.path() + "/stolen-key"));
}

TEST(TlsCert, ASymlinkAsTheDirectoryOrAGroupWritableDirectoryIsRefused) {
  ScratchDir scratch;
  const std::string real = scratch.path() + "/real", link = scratch.path() + "/link";
  fs::create_directory(real);
  fs::create_directory_symlink(real, link);
  for (const std::string& dir : {link, link + "/"}) {
    auto files = EnsureSelfSignedTls(dir, kLocal);
    ASSERT_FALSE(files.ok()) << dir;
    EXPECT_THAT(files.status().message(), HasSubstr(link + " is a symlink; refused"));
  }
  EXPECT_TRUE(fs::is_empty(real));
  ASSERT_EQ(::chmod(real.c_str(), 0777), 0);
  auto files = EnsureSelfSignedTls(real, kLocal);
  ASSERT_FALSE(files.ok());
  EXPECT_THAT(files.status().message(), HasSubstr("is writable by group or others; refused"));
  EXPECT_TRUE(fs::is_empty(real));
}

TEST(TlsCert, HostsThatAreNeitherIpsNorDnsNamesAreRefusedBeforeAnythingIsWritten) {
  ScratchDir scratch;
  const std::string dir = scratch.path() + "/tls";
  auto none = EnsureSelfSignedTls(dir, {});
  EXPECT_EQ(none.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("at least one host"));
  for (const std::string bad : {"localhost,IP:10.0.0.1", "*.cluster", "fe80::1%eth0", "a..b", "",
                                "[localhost]", "[10.0.0.1]"}) {
    auto files = EnsureSelfSignedTls(dir, {"localhost", bad});
    EXPECT_EQ(files.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_THAT(files.status().message(), HasSubstr("TLS host \"" + bad + "\""));
  }
  EXPECT_FALSE(fs::exists(dir));
}

TEST(TlsCert, ReadPemFileReturnsTheFileBytes) {
  ScratchDir scratch;
  auto files = EnsureSelfSignedTls(scratch.path(), kLocal);
  ASSERT_TRUE(files.ok()) << files.status().message();
  auto pem = ReadPemFile(files->ca_cert);
  ASSERT_TRUE(pem.ok()) << pem.status().message();
  EXPECT_EQ(*pem, Bytes(files->ca_cert));
  EXPECT_THAT(*pem, HasSubstr("-----BEGIN CERTIFICATE-----"));
  auto key = ReadPemFile(files->server_key);
  ASSERT_TRUE(key.ok());
  EXPECT_THAT(*key, HasSubstr("-----BEGIN PRIVATE KEY-----"));
  const std::string junk = scratch.path() + "/junk.pem";
  { std::ofstream(junk) << "not pem\n"; }
  EXPECT_EQ(ReadPemFile(junk).status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(ReadPemFile(junk).status().message(), HasSubstr(junk));
}

TEST(TlsCert, ReadPemFileOfAMissingFileIsNotFoundNamingThePath) {
  ScratchDir scratch;
  const std::string path = scratch.path() + "/nowhere/ca.pem";
  auto pem = ReadPemFile(path);
  ASSERT_FALSE(pem.ok());
  EXPECT_EQ(pem.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(pem.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace tunectl
