#include "core/audit_chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

TEST(Sha256, MatchesTheFipsVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding's edge cases (checked with Python's hashlib)
  EXPECT_EQ(Sha256Hex(std::string(55, 'x')),
            "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
  EXPECT_EQ(Sha256Hex(std::string(56, 'x')),
            "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
  EXPECT_EQ(Sha256Hex(std::string(64, 'x')),
            "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
}

TEST(ChainRowSerialisation, LengthPrefixesKeepFieldsApart) {
  ChainRow a{"audit", 1, 0, {"ab", "c"}}, b{"audit", 1, 0, {"a", "bc"}};
  EXPECT_NE(CanonicalRow(a), CanonicalRow(b));
  EXPECT_EQ(CanonicalRow(a), "audit\n1\n2:ab\n1:c\n");
}

TEST(ChainRowSerialisation, EntriesGiveTheirColumnsInTheDocumentedOrder) {
  ChainEntry a{
      "audit", 3,   1796112000123456, "user:alice", "experiment.created", "experiment", "4", "",
      "",      "{}"};
  EXPECT_EQ(CanonicalRow(ChainRowOf(a)),
            "audit\n3\n16:1796112000123456\n10:user:alice\n18:experiment.created\n"
            "10:experiment\n1:4\n2:{}\n");
  ChainEntry l{"log", 9, 5, "user:bob", "decided", "", "", "1", "", "{\"a\": 1}"};
  EXPECT_EQ(CanonicalRow(ChainRowOf(l)),
            "log\n9\n1:5\n1:1\n0:\n7:decided\n8:user:bob\n8:{\"a\": 1}\n");
  EXPECT_EQ(ChainRowOf(a).at_ms, 1796112000123);
  // what docs/security.md tells an auditor to compute, from the file alone
  EXPECT_EQ(ChainHash(ChainGenesis(), ChainRowOf(l)),
            Sha256Hex(std::string(64, '0') +
                      "\nlog\n9\n1:5\n1:1\n0:\n7:decided\n8:user:bob\n8:{\"a\": 1}\n"));
}

struct Chain {
  std::vector<ChainRow> rows;
  std::vector<ChainLink> links;
  void Add(const std::string& source, int64_t id, const std::string& payload) {
    rows.push_back({source, id, 1000, {"2026-12-05", "user:a", payload}});
    const std::string prev = links.empty() ? ChainGenesis() : links.back().hash;
    links.push_back(
        {static_cast<int64_t>(links.size()) + 1, source, id, ChainHash(prev, rows.back())});
  }
};

Chain Three() {
  Chain c;
  c.Add("audit", 1, "created");
  c.Add("log", 1, "decided");
  c.Add("audit", 2, "frozen");
  return c;
}

constexpr int64_t kNow = 100 * 60 * 1000;

TEST(VerifyChain, AnUntouchedChainHolds) {
  Chain c = Three();
  ChainReport r = VerifyChain(c.links, c.rows, kNow);
  EXPECT_FALSE(r.broken.has_value());
  EXPECT_EQ(r.links, 3);
  EXPECT_EQ(r.head_hash, c.links[2].hash);
}

TEST(VerifyChain, AnEditedRowIsNamed) {
  Chain c = Three();
  c.rows[1].fields[2] = "decided (edited)";
  ChainReport r = VerifyChain(c.links, c.rows, kNow);
  ASSERT_TRUE(r.broken);
  EXPECT_EQ(r.broken->kind, "edited");
  EXPECT_EQ(r.broken->seq, 2);
  EXPECT_EQ(r.broken->source, "log");
  EXPECT_EQ(r.broken->row_id, 1);
}

TEST(VerifyChain, ADeletedRowIsNamed) {
  Chain c = Three();
  c.rows.erase(c.rows.begin());
  ChainReport r = VerifyChain(c.links, c.rows, kNow);
  ASSERT_TRUE(r.broken);
  EXPECT_EQ(r.broken->kind, "deleted");
  EXPECT_EQ(r.broken->seq, 1);
  EXPECT_THAT(r.broken->detail, HasSubstr("audit row 1 is gone"));
}

TEST(VerifyChain, SwappedLinksAreReordered) {
  Chain c = Three();
  std::swap(c.links[1].source, c.links[2].source);
  std::swap(c.links[1].row_id, c.links[2].row_id);
  std::swap(c.links[1].hash, c.links[2].hash);
  ChainReport r = VerifyChain(c.links, c.rows, kNow);
  ASSERT_TRUE(r.broken);
  EXPECT_EQ(r.broken->kind, "reordered");
  EXPECT_EQ(r.broken->seq, 2);
  // swapped payloads of two rows: the first of them no longer matches
  Chain d = Three();
  std::swap(d.rows[0].fields, d.rows[2].fields);
  EXPECT_EQ(VerifyChain(d.links, d.rows, kNow).broken->kind, "edited");
  EXPECT_EQ(VerifyChain(d.links, d.rows, kNow).broken->seq, 1);
}

TEST(VerifyChain, ARowPutIntoTheSealedPastIsInsertedAndANewOneIsPending) {
  Chain c = Three();
  c.rows.push_back({"audit", 3, kNow - 1000, {"new"}});  // newer than every sealed audit row
  EXPECT_FALSE(VerifyChain(c.links, c.rows, kNow).broken.has_value());
  c.rows.push_back({"log", 0, 500, {"forged"}});  // below the sealed ids, long ago
  ChainReport r = VerifyChain(c.links, c.rows, kNow);
  ASSERT_TRUE(r.broken);
  EXPECT_EQ(r.broken->kind, "inserted");
  EXPECT_EQ(r.broken->source, "log");
  EXPECT_EQ(r.broken->row_id, 0);
}

TEST(VerifyChain, AMissingLinkIsDeletedAndAShorterChainIsTruncated) {
  Chain c = Three();
  std::vector<ChainLink> gap = {c.links[0], c.links[2]};
  EXPECT_EQ(VerifyChain(gap, c.rows, kNow).broken->kind, "deleted");
  Chain d = Three();
  const std::string kept = d.links[2].hash;
  d.links.pop_back();
  d.rows.pop_back();
  ChainReport r = VerifyChain(d.links, d.rows, kNow, 3, kept);
  ASSERT_TRUE(r.broken);
  EXPECT_EQ(r.broken->kind, "truncated");
  // a chain rebuilt from scratch after an edit no longer holds the kept head
  Chain e;
  e.Add("audit", 1, "created (rewritten)");
  e.Add("log", 1, "decided");
  e.Add("audit", 2, "frozen");
  EXPECT_EQ(VerifyChain(e.links, e.rows, kNow, 3, kept).broken->kind, "edited");
  EXPECT_FALSE(VerifyChain(Three().links, Three().rows, kNow, 3, kept).broken.has_value());
}

}  // namespace
}  // namespace tunectl
