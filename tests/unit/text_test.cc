#include "core/text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tunectl {
namespace {

using ::testing::HasSubstr;

const std::string kFffd = "\xEF\xBF\xBD";

TEST(SanitizeUtf8, KeepsValidTextAsIs) {
  const std::string s = "step 10 loss 2.31 — ▁▂▃ █ 🙂 ü";
  EXPECT_EQ(SanitizeUtf8(s), s);
}

TEST(SanitizeUtf8, ReplacesEachInvalidByteAndNul) {
  EXPECT_EQ(SanitizeUtf8(std::string("a\xFF"
                                     "b",
                                     3)),
            "a" + kFffd + "b");
  EXPECT_EQ(SanitizeUtf8(std::string("a\0b", 3)), "a" + kFffd + "b");
  EXPECT_EQ(SanitizeUtf8("\x80\x80"), kFffd + kFffd);              // stray continuation bytes
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), kFffd + kFffd);              // overlong '/'
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a UTF-16 surrogate
  EXPECT_EQ(SanitizeUtf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(SanitizeUtf8("x\xE2\x96"), "x" + kFffd + kFffd);  // truncated at the end
}

TEST(SanitizeUtf8, CutsBetweenCharactersNeverInside) {
  std::string bar;
  for (int i = 0; i < 200; ++i) bar += "█";  // 3 bytes each: a tqdm bar
  const std::string cut = SanitizeUtf8(bar, 512);
  EXPECT_EQ(cut.size(), 510u);
  EXPECT_EQ(SanitizeUtf8(cut), cut);
}

TEST(SanitizeUtf8, BinaryGarbageBecomesValidText) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk.push_back(static_cast<char>((i * 7919) & 0xFF));
  const std::string out = SanitizeUtf8(junk);
  EXPECT_EQ(SanitizeUtf8(out), out);  // a fixed point: valid, no NUL
  EXPECT_EQ(out.find('\0'), std::string::npos);
}

TEST(CheckDocument, AcceptsAnOrdinaryWorkload) {
  const std::string yaml = R"(
name: w   # a comment with [ and {
command: [python3, train.py, "--mbs={mbs}", '--text=[[[[']
params:
  mbs: {type: int, default: 4, min: 1}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
runs:
  - a: 1
    b:
      - - x
        - y
)";
  EXPECT_TRUE(CheckDocument(yaml, "workload").ok());
}

TEST(CheckDocument, RefusesInvalidUtf8NamingTheLineAndTheByte) {
  // Found by fuzz/workload_fuzz: a workload with invalid UTF-8 in a YAML string was accepted,
  // then its canonical JSON threw (nlohmann refuses to dump it) instead of being refused.
  Status s = CheckDocument("name: demo\ncommand: [\"a\xE4\xE4\"]\n", "w.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "w.yaml: line 2: byte 23 is not valid UTF-8; a document is UTF-8 text");
  EXPECT_TRUE(CheckDocument("name: d\xC3\xA9mo  # caf\xC3\xA9\n", "w").ok());
}

TEST(CheckDocument, RefusesDeepJsonNamingTheDepthAndTheLimit) {
  const std::string json = std::string(50000, '[') + std::string(50000, ']');
  Status s = CheckDocument(json, "workload file");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("workload file: nested more than 64 levels"));
  std::string objects;
  for (int i = 0; i < 100; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100, '}');
  EXPECT_FALSE(CheckDocument(objects, "w").ok());
}

TEST(CheckDocument, RefusesDeepBlockIndentationAndDashes) {
  std::string yaml;
  for (int i = 0; i < 80; ++i) yaml += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  EXPECT_FALSE(CheckDocument(yaml, "w").ok());
  std::string dashes;
  for (int i = 0; i < 80; ++i) dashes += "- ";
  EXPECT_FALSE(CheckDocument(dashes + "x\n", "w").ok());
}

TEST(CheckDocument, BracketsInsideQuotesOrCommentsDoNotCount) {
  const std::string deep = std::string(100, '[');
  EXPECT_TRUE(CheckDocument("a: \"" + deep + "\"\n", "w").ok());
  EXPECT_TRUE(CheckDocument("a: '" + deep + "'\n", "w").ok());
  EXPECT_TRUE(CheckDocument("a: 1  # " + deep + "\n", "w").ok());
  // A quote inside a plain scalar opens nothing: the brackets after it still count.
  EXPECT_FALSE(CheckDocument("a: x\"y\nb: " + deep + "\n", "w").ok());
}

TEST(CheckDocument, RefusesAnOversizedDocumentNamingItsSize) {
  Status s = CheckDocument(std::string(3 << 20, 'a'), "workload file");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("3145728 bytes; allowed at most 1048576"));
}

}  // namespace
}  // namespace tunectl
