#include "sys/ed25519.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "core/audit_chain.h"
#include "tests/unit/test_support.h"

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(Ed25519, AKeyIsCreatedPrivateOnceAndSignsWhatVerifies) {
  const std::string path = testing::TempDir("ed25519") + "/keys/audit.pem";
  auto key = Ed25519Key::LoadOrCreate(path);
  ASSERT_TRUE(key.ok()) << key.status().message();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string msg = AuditHeadMessage(42, std::string(64, 'a'));
  const std::string sig = (*key)->SignHex(msg);
  EXPECT_EQ(sig.size(), 128u);
  EXPECT_EQ((*key)->PublicKeyHex().size(), 64u);
  EXPECT_TRUE(*Ed25519Verify((*key)->PublicKeyHex(), msg, sig));
  // another message, another key: no
  EXPECT_FALSE(
      *Ed25519Verify((*key)->PublicKeyHex(), AuditHeadMessage(43, std::string(64, 'a')), sig));
  auto again = Ed25519Key::LoadOrCreate(path);  // the same key read back
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->PublicKeyHex(), (*key)->PublicKeyHex());
  auto other = Ed25519Key::LoadOrCreate(testing::TempDir("ed25519") + "/other.pem");
  EXPECT_FALSE(*Ed25519Verify((*other)->PublicKeyHex(), msg, sig));
}

TEST(Ed25519, ASymlinkOrAForeignFileIsRefusedAndBadHexNamed) {
  const std::string dir = testing::TempDir("ed25519");
  std::filesystem::create_symlink("/etc/passwd", dir + "/link.pem");
  EXPECT_THAT(Ed25519Key::LoadOrCreate(dir + "/link.pem").status().message(),
              HasSubstr("is a symlink; refused"));
  { std::ofstream(dir + "/junk.pem") << "not a key\n"; }
  EXPECT_THAT(Ed25519Key::LoadOrCreate(dir + "/junk.pem").status().message(),
              HasSubstr("is not an Ed25519 private key"));
  EXPECT_THAT(Ed25519Verify("zz", "m", std::string(128, '0')).status().message(),
              HasSubstr("public_key: expected 64 hex digits"));
  EXPECT_THAT(Ed25519Verify(std::string(64, '0'), "m", "abc").status().message(),
              HasSubstr("signature: expected 128 hex digits"));
}

}  // namespace
}  // namespace tunectl
