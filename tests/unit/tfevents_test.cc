// TensorBoard event files (core/tfevents.h). The fixtures under tests/fixtures/tfevents/ were
// written by real writers (PyTorch's SummaryWriter, TensorBoard's Writer and EventFileWriter; see
// make_events.py there), each with the values handed to the writer in <name>.expected. Known
// vectors come from TensorBoard's Rust reader (tensorboard/data/server/masked_crc.rs,
// tf_record.rs) and RFC 3720. Hand-built records cover what no writer emits.
#include "core/tfevents.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#ifndef TUNECTL_SOURCE_DIR
#define TUNECTL_SOURCE_DIR "."  // a standalone build run from the repository root
#endif

namespace tunectl {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string ReadFixture(const std::string& name) {
  const std::string path = std::string(TUNECTL_SOURCE_DIR) + "/tests/fixtures/tfevents/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// <name>.expected: "tag<TAB>step<TAB>value<TAB>wall_time" per line.
std::vector<TfScalar> Expected(const std::string& name) {
  std::vector<TfScalar> out;
  std::istringstream in(ReadFixture(name + ".expected"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string tag, step, value, wall;
    std::getline(f, tag, '\t');
    std::getline(f, step, '\t');
    std::getline(f, value, '\t');
    std::getline(f, wall, '\t');
    out.push_back({tag, std::stoll(step), std::strtod(value.c_str(), nullptr),
                   std::strtod(wall.c_str(), nullptr)});
  }
  return out;
}

bool Same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

void ExpectScalars(const std::vector<TfScalar>& got, const std::vector<TfScalar>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tag, want[i].tag) << "#" << i;
    EXPECT_EQ(got[i].step, want[i].step) << "#" << i << " " << want[i].tag;
    EXPECT_TRUE(Same(got[i].value, want[i].value))
        << "#" << i << " " << want[i].tag << ": " << got[i].value << " != " << want[i].value;
    EXPECT_EQ(got[i].wall_time, want[i].wall_time) << "#" << i << " " << want[i].tag;
  }
}

struct Read {
  Status status;
  std::vector<TfScalar> out;
  uint64_t consumed = 0;
  size_t buffered = 0;
  uint64_t malformed = 0;
};

Read ReadAll(std::string_view bytes) {
  TfEventsReader r;
  Read res;
  res.status = r.Feed(bytes, &res.out);
  res.consumed = r.consumed();
  res.buffered = r.buffered();
  res.malformed = r.malformed_records();
  return res;
}

// Hand-encoded protobuf wire format and TFRecord framing.
std::string Varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += static_cast<char>((v & 0x7F) | 0x80);
  return s + static_cast<char>(v);
}
std::string Key(uint32_t field, uint32_t type) {
  return Varint(uint64_t{field} << 3 | type);
}
std::string VarintField(uint32_t field, uint64_t v) {
  return Key(field, 0) + Varint(v);
}
std::string Le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(v >> (8 * i));
  return s;
}
std::string F32(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return Le(b, 4);
}
std::string F64(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return Le(b, 8);
}
std::string Fixed32Field(uint32_t field, float v) {
  return Key(field, 5) + F32(v);
}
std::string Fixed64Field(uint32_t field, double v) {
  return Key(field, 1) + F64(v);
}
std::string Len(uint32_t field, std::string_view payload) {
  return Key(field, 2) + Varint(payload.size()) + std::string(payload);
}
std::string Record(std::string_view data) {
  const std::string len = Le(data.size(), 8);
  return len + Le(MaskedCrc32c(len), 4) + std::string(data) + Le(MaskedCrc32c(data), 4);
}
// An Event {wall_time, step, summary {value...}}.
std::string EventBytes(int64_t step, double wall, const std::vector<std::string>& values) {
  std::string summary;
  for (const auto& v : values) summary += Len(1, v);
  return Fixed64Field(1, wall) + VarintField(2, static_cast<uint64_t>(step)) + Len(5, summary);
}
std::string SimpleValue(std::string_view tag, float v) {
  return Len(1, tag) + Fixed32Field(2, v);
}
std::string TensorValue(std::string_view tag, std::string_view tensor) {
  return Len(1, tag) + Len(8, tensor) + Len(9, Len(1, Len(1, "scalars")));
}
std::string Shape(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += Len(2, VarintField(1, static_cast<uint64_t>(d)));
  return Len(2, s);
}

constexpr uint64_t kDtFloat = 1, kDtDouble = 2, kDtInt32 = 3, kDtString = 7, kDtInt64 = 9,
                   kDtHalf = 19;

// The one sample of a record holding one Event with one Value, or what it gave.
std::vector<TfScalar> ReadValue(const std::string& value) {
  Read r = ReadAll(Record(EventBytes(7, 1.5, {value})));
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.malformed, 0u);
  return r.out;
}
double OneValue(const std::string& value) {
  auto out = ReadValue(value);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? std::nan("") : out[0].value;
}

TEST(TfEventsCrc, Crc32cCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
}

TEST(TfEventsCrc, Crc32cOfThirtyTwoZerosIsTheRfc3720Example) {
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
}

TEST(TfEventsCrc, MaskedCrcMatchesARealTensorFlowRecord) {
  EXPECT_EQ(MaskedCrc32c("\x1a\x11"
                         "CRC test, one two"),
            0x5794D08Au);
}

// The record of TensorBoard's tf_record.rs documentation (a file_version event), byte for byte,
// fed as a file truncated mid-write and then completed.
TEST(TfEventsReader, TruncatedTailWaitsForTheRestOfTheRecord) {
  const std::string contents(
      "\x09\x00\x00\x80\x38\x99\xd6\xd7\x41\x1a\x0d"
      "brain.Event:2",
      24);
  const std::string header("\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7f\x4b\x22", 12);
  const std::string footer("\x12\x4b\x36\xab", 4);
  TfEventsReader r;
  std::vector<TfScalar> out;
  ASSERT_TRUE(r.Feed(header + contents.substr(0, 5), &out).ok());
  EXPECT_EQ(r.consumed(), 0u);
  EXPECT_EQ(r.buffered(), 17u);
  const Status s = r.Feed(contents.substr(5) + footer, &out);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.consumed(), 40u);
  EXPECT_EQ(r.buffered(), 0u);
  EXPECT_THAT(out, IsEmpty());  // file_version gives no scalar
  EXPECT_EQ(r.malformed_records(), 0u);
}

TEST(TfEventsReader, FixtureTruncatedInItsLastRecordGivesTheRestWhenCompleted) {
  const std::string file = ReadFixture("pytorch_simple_value.tfevents");
  const auto want = Expected("pytorch_simple_value");
  TfEventsReader r;
  std::vector<TfScalar> out;
  ASSERT_TRUE(r.Feed(std::string_view(file).substr(0, file.size() - 3), &out).ok());
  EXPECT_EQ(out.size(), want.size() - 1);
  EXPECT_GT(r.buffered(), 3u);
  EXPECT_EQ(r.consumed() + r.buffered(), file.size() - 3);
  ASSERT_TRUE(r.Feed(std::string_view(file).substr(file.size() - 3), &out).ok());
  EXPECT_EQ(r.consumed(), file.size());
  EXPECT_EQ(r.buffered(), 0u);
  ExpectScalars(out, want);
}

TEST(TfEventsFixtures, PytorchSimpleValueGivesEveryScalarAndSkipsHistogramAndText) {
  const Read r = ReadAll(ReadFixture("pytorch_simple_value.tfevents"));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.buffered, 0u);
  EXPECT_EQ(r.malformed, 0u);
  ExpectScalars(r.out, Expected("pytorch_simple_value"));
  ASSERT_EQ(r.out.size(), 14u);
  EXPECT_EQ(r.out[0].tag, "train/loss");
  EXPECT_EQ(r.out[0].value, 2.5);
  EXPECT_EQ(r.out[0].wall_time, 1700000000.25);
  EXPECT_EQ(r.out[13].step, int64_t{1} << 40);
}

TEST(TfEventsFixtures, NanAndInfValuesArePassedThrough) {
  const Read r = ReadAll(ReadFixture("pytorch_simple_value.tfevents"));
  ASSERT_EQ(r.out.size(), 14u);
  EXPECT_EQ(r.out[10].tag, "train/loss");
  EXPECT_TRUE(std::isnan(r.out[10].value));
  EXPECT_EQ(r.out[11].tag, "grad_norm");
  EXPECT_EQ(r.out[11].value, std::numeric_limits<double>::infinity());
}

TEST(TfEventsFixtures, PytorchNewStyleReadsFloatValAndDoubleVal) {
  const Read r = ReadAll(ReadFixture("pytorch_new_style.tfevents"));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ExpectScalars(r.out, Expected("pytorch_new_style"));
  ASSERT_EQ(r.out.size(), 6u);
  EXPECT_EQ(r.out[1].tag, "eval/ppl");
  EXPECT_EQ(r.out[1].value, M_PI);  // double_val keeps double precision
}

TEST(TfEventsFixtures, TensorBoardWriterFloatValWithEmptyShapeIsRead) {
  const Read r = ReadAll(ReadFixture("tensorboard_writer.tfevents"));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ExpectScalars(r.out, Expected("tensorboard_writer"));
  EXPECT_EQ(r.out.size(), 3u);
}

TEST(TfEventsFixtures, Tf2TensorContentFloatDoubleIntAndOneByOneAreReadOthersSkipped) {
  const Read r = ReadAll(ReadFixture("tf2_tensor_content.tfevents"));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.malformed, 0u);
  ExpectScalars(r.out, Expected("tf2_tensor_content"));
  ASSERT_EQ(r.out.size(), 9u);
  EXPECT_EQ(r.out[6].value, 1099511627777.0);  // DT_INT64
  EXPECT_EQ(r.out[7].value, -32.0);            // DT_INT32 tensor_content
  EXPECT_EQ(r.out[8].tag, "one_by_one");       // then "vector", "half", "text": no sample
}

TEST(TfEventsReader, RecordSplitAcrossTwoFeedsAtEveryByteIsReadOnce) {
  for (const char* name : {"pytorch_simple_value", "tf2_tensor_content"}) {
    const std::string file = ReadFixture(std::string(name) + ".tfevents");
    const auto want = Expected(name);
    for (size_t cut = 0; cut <= file.size(); ++cut) {
      SCOPED_TRACE(std::string(name) + " cut at " + std::to_string(cut));
      TfEventsReader r;
      std::vector<TfScalar> out;
      ASSERT_TRUE(r.Feed(std::string_view(file).substr(0, cut), &out).ok());
      ASSERT_TRUE(r.Feed(std::string_view(file).substr(cut), &out).ok());
      EXPECT_EQ(r.consumed(), file.size());
      ASSERT_EQ(r.buffered(), 0u);
      ExpectScalars(out, want);
    }
  }
}

TEST(TfEventsReader, ByteByByteFeedsGiveTheSameScalars) {
  const std::string file = ReadFixture("pytorch_new_style.tfevents");
  TfEventsReader r;
  std::vector<TfScalar> out;
  for (size_t i = 0; i < file.size(); ++i) {
    ASSERT_TRUE(r.Feed(std::string_view(file).substr(i, 1), &out).ok());
    EXPECT_EQ(r.consumed() + r.buffered(), i + 1);
  }
  EXPECT_EQ(r.buffered(), 0u);
  ExpectScalars(out, Expected("pytorch_new_style"));
}

// Byte offset of the record after `n` records of `file`.
uint64_t RecordOffset(const std::string& file, int n) {
  uint64_t off = 0;
  for (int i = 0; i < n; ++i) {
    uint64_t len;
    std::memcpy(&len, file.data() + off, 8);
    off += 16 + len;
  }
  return off;
}

TEST(TfEventsReader, CorruptLengthCrcNamesTheRecordOffsetAndStaysFailed) {
  std::string file = ReadFixture("pytorch_simple_value.tfevents");
  const uint64_t off = RecordOffset(file, 2);  // file_version, then train/loss step 0
  file[off + 9] ^= 0x01;                       // a byte of the length's CRC
  TfEventsReader r;
  std::vector<TfScalar> out;
  const Status s = r.Feed(file, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("tfevents: record at byte " + std::to_string(off) + ": length CRC 0x"));
  EXPECT_EQ(out.size(), 1u);  // the record before it
  EXPECT_EQ(r.consumed(), off);

  std::vector<TfScalar> later;
  const Status again = r.Feed(Record(EventBytes(1, 1, {SimpleValue("x", 1)})), &later);
  EXPECT_EQ(again.message(), s.message());
  EXPECT_THAT(later, IsEmpty());
  EXPECT_EQ(r.consumed(), off);
}

TEST(TfEventsReader, CorruptDataCrcNamesTheRecordOffsetAndBothChecksums) {
  std::string file = ReadFixture("tf2_tensor_content.tfevents");
  const uint64_t off = RecordOffset(file, 3);
  uint64_t len;
  std::memcpy(&len, file.data() + off, 8);
  file[off + 12 + len / 2] ^= 0x20;  // a byte of the data
  uint32_t stored;
  std::memcpy(&stored, file.data() + off + 12 + len, 4);
  char want[64];
  std::snprintf(want, sizeof want, "data CRC 0x%08x != 0x%08x", stored,
                MaskedCrc32c(std::string_view(file).substr(off + 12, len)));
  const Read r = ReadAll(file);
  ASSERT_FALSE(r.status.ok());
  EXPECT_THAT(r.status.message(),
              HasSubstr("tfevents: record at byte " + std::to_string(off) + ": " + want));
  EXPECT_EQ(r.out.size(), 4u);  // two records of two values before it
  EXPECT_EQ(r.consumed, off);
}

TEST(TfEventsReader, TextIsNotAnEventsFile) {
  const Read r = ReadAll("step 1 loss 2.5\nstep 2 loss 2.4\n");
  ASSERT_FALSE(r.status.ok());
  EXPECT_THAT(r.status.message(), HasSubstr("record at byte 0: length CRC"));
}

TEST(TfEventsReader, HugeLengthIsRefusedFromItsHeaderAlone) {
  const std::string len = Le(kTfEventsMaxRecordBytes + 1, 8);
  const Read r = ReadAll(Record("") + len + Le(MaskedCrc32c(len), 4));
  ASSERT_FALSE(r.status.ok());
  EXPECT_THAT(r.status.message(),
              HasSubstr("record at byte 16: length 67108865 exceeds the limit of 67108864 bytes"));

  const std::string max = Le(kTfEventsMaxRecordBytes, 8);
  const Read at_limit = ReadAll(max + Le(MaskedCrc32c(max), 4));
  EXPECT_TRUE(at_limit.status.ok());
  EXPECT_EQ(at_limit.buffered, 12u);  // waits for the rest
}

TEST(TfEventsReader, EmptyRecordAndNonSummaryEventsGiveNothing) {
  const Read r = ReadAll(Record("") + Record(Fixed64Field(1, 5) + Len(3, "brain.Event:2")) +
                         Record(Len(6, VarintField(1, 4))));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_EQ(r.malformed, 0u);
}

TEST(TfEventsValues, SimpleValueIsWidenedFromFloat) {
  EXPECT_EQ(OneValue(SimpleValue("loss", 0.1f)), static_cast<double>(0.1f));
}

TEST(TfEventsValues, FloatValPackedAndUnpacked) {
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtFloat) + Len(5, F32(0.5f)))), 0.5);
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtFloat) + Fixed32Field(5, 0.25f))), 0.25);
}

TEST(TfEventsValues, DoubleValPackedAndUnpacked) {
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtDouble) + Len(6, F64(0.1)))), 0.1);
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtDouble) + Fixed64Field(6, 1e300))), 1e300);
}

TEST(TfEventsValues, TensorContentFloatAndDouble) {
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtFloat) + Shape({}) + Len(4, F32(-3)))),
            -3.0);
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtDouble) + Len(4, F64(0.1)))), 0.1);
}

TEST(TfEventsValues, IntValAndInt64ValPackedAndUnpacked) {
  const uint64_t minus7 = static_cast<uint64_t>(int64_t{-7});  // int32 -7 is sign-extended
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtInt32) + VarintField(7, minus7))), -7.0);
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtInt32) + Len(7, Varint(300)))), 300.0);
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtInt64) + VarintField(10, 1ull << 50))),
            std::ldexp(1.0, 50));
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtInt64) + Len(10, Varint(minus7)))), -7.0);
  EXPECT_EQ(OneValue(TensorValue("a", VarintField(1, kDtInt64) + Len(4, Le(minus7, 8)))), -7.0);
}

TEST(TfEventsValues, TensorContentTakesPrecedenceOverFloatVal) {
  EXPECT_EQ(
      OneValue(TensorValue("a", VarintField(1, kDtFloat) + Fixed32Field(5, 1) + Len(4, F32(2)))),
      2.0);
}

TEST(TfEventsValues, OnlyScalarTensorsGiveASample) {
  const std::string f = VarintField(1, kDtFloat);
  EXPECT_EQ(OneValue(TensorValue("a", f + Shape({1, 1, 1}) + Len(4, F32(4)))), 4.0);
  EXPECT_THAT(ReadValue(TensorValue("a", f + Shape({2}) + Len(4, F32(4) + F32(5)))), IsEmpty());
  EXPECT_THAT(ReadValue(TensorValue("a", f + Shape({1, 2}) + Len(5, F32(4) + F32(5)))), IsEmpty());
  EXPECT_THAT(ReadValue(TensorValue("a", f + Shape({0}))), IsEmpty());
  EXPECT_THAT(ReadValue(TensorValue("a", f + Len(2, Len(2, "")) + Len(4, F32(4)))),
              IsEmpty());  // a dim without size: size 0
  EXPECT_THAT(ReadValue(TensorValue("a", f + Len(2, VarintField(3, 1)) + Len(4, F32(4)))),
              IsEmpty());  // unknown_rank
  EXPECT_THAT(ReadValue(TensorValue("a", f + Len(5, F32(4) + F32(5)))), IsEmpty());
  EXPECT_THAT(ReadValue(TensorValue("a", f + Len(4, F32(4).substr(0, 3)))), IsEmpty());
  EXPECT_THAT(ReadValue(TensorValue("a", f)), IsEmpty());  // no element
}

TEST(TfEventsValues, NonNumericDtypesAndOtherKindsGiveNoSample) {
  EXPECT_THAT(
      ReadValue(TensorValue("a", VarintField(1, kDtHalf) + Len(4, std::string("\0\x3e", 2)))),
      IsEmpty());
  EXPECT_THAT(ReadValue(TensorValue("a", VarintField(1, kDtString) + Len(8, "hello"))), IsEmpty());
  EXPECT_THAT(ReadValue(Len(1, "h") + Len(5, Fixed64Field(1, 0) + Fixed64Field(2, 1))),
              IsEmpty());                                                           // histo
  EXPECT_THAT(ReadValue(Len(1, "i") + Len(4, VarintField(1, 2))), IsEmpty());       // image
  EXPECT_THAT(ReadValue(Len(1, "s") + Len(6, Fixed32Field(1, 16000))), IsEmpty());  // audio
  EXPECT_THAT(ReadValue(Len(1, "t")), IsEmpty());                                   // a tag alone
}

TEST(TfEventsValues, LastMemberOfAOneofWins) {
  EXPECT_EQ(OneValue(SimpleValue("a", 1) + Len(8, VarintField(1, kDtFloat) + Fixed32Field(5, 2))),
            2.0);
  EXPECT_THAT(ReadValue(SimpleValue("a", 1) + Len(5, "")), IsEmpty());  // then a histogram
  const Read r = ReadAll(Record(EventBytes(1, 1, {SimpleValue("a", 1)}) + Len(3, "v2")));
  EXPECT_THAT(r.out, IsEmpty());  // Event: summary, then file_version
  const Read again = ReadAll(Record(Len(5, Len(1, SimpleValue("a", 1))) + Len(3, "v2") +
                                    Len(5, Len(1, SimpleValue("b", 2)))));
  ASSERT_EQ(again.out.size(), 1u);  // summary, file_version, summary: the last summary alone
  EXPECT_EQ(again.out[0].tag, "b");
}

TEST(TfEventsValues, RepeatedMessageFieldsMerge) {
  // Value.tensor given twice: dtype in the first, the value in the second.
  EXPECT_EQ(OneValue(Len(1, "a") + Len(8, VarintField(1, kDtFloat)) + Len(8, Fixed32Field(5, 3))),
            3.0);
  // Event.summary given twice: both summaries' values.
  const Read r = ReadAll(
      Record(EventBytes(4, 2, {SimpleValue("a", 1)}) + Len(5, Len(1, SimpleValue("b", 2)))));
  ASSERT_EQ(r.out.size(), 2u);
  EXPECT_EQ(r.out[1].tag, "b");
  EXPECT_EQ(r.out[1].step, 4);
}

TEST(TfEventsValues, StepAndWallTimeAfterTheSummaryApplyToItsValues) {
  const Read r = ReadAll(
      Record(Len(5, Len(1, SimpleValue("a", 1))) + VarintField(2, 12) + Fixed64Field(1, 99.5)));
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_EQ(r.out[0].step, 12);
  EXPECT_EQ(r.out[0].wall_time, 99.5);
}

TEST(TfEventsValues, NegativeStepIsReadAsWritten) {
  const Read r = ReadAll(Record(EventBytes(-5, 1, {SimpleValue("a", 1)})));
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_EQ(r.out[0].step, -5);
}

TEST(TfEventsValues, UnknownFieldsOfEveryWireTypeAreSkipped) {
  const std::string unknown =
      VarintField(15, 1ull << 63) + Fixed64Field(16, 1) + Len(17, "xyz") + Fixed32Field(18, 1);
  const std::string dim = Len(2, unknown + VarintField(1, 1) + Len(2, "batch"));
  const std::string tensor = unknown + VarintField(1, kDtFloat) + Len(2, unknown + dim) +
                             Len(4, F32(6.5)) + VarintField(11, 3);  // a known int field number
  const std::string value = unknown + Len(1, "loss") + Len(8, tensor) + Len(7, "node") +
                            Len(9, unknown + Len(1, Len(1, "scalars")));
  const std::string event = unknown + Fixed64Field(1, 3) + VarintField(2, 9) +
                            Len(5, unknown + Len(1, value) + unknown) + Len(10, "writer") + unknown;
  const Read r = ReadAll(Record(event));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.malformed, 0u);
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_EQ(r.out[0].tag, "loss");
  EXPECT_EQ(r.out[0].value, 6.5);
  EXPECT_EQ(r.out[0].step, 9);
  EXPECT_EQ(r.out[0].wall_time, 3.0);
}

TEST(TfEventsValues, KnownFieldWithAnotherWireTypeIsSkippedAsUnknown) {
  // simple_value as a varint, step as fixed64: not those fields.
  const Read r =
      ReadAll(Record(Fixed64Field(2, 1) +
                     Len(5, Len(1, Len(1, "a") + VarintField(2, 5) + Fixed32Field(2, 1.5f)))));
  ASSERT_EQ(r.out.size(), 1u);
  EXPECT_EQ(r.out[0].value, 1.5);
  EXPECT_EQ(r.out[0].step, 0);
}

TEST(TfEventsValues, MalformedProtobufSkipsItsRecordAndTheFileReadsOn) {
  const std::string good = Record(EventBytes(2, 1, {SimpleValue("ok", 1)}));
  const std::string v = SimpleValue("x", 1);
  const std::vector<std::string> bad = {
      EventBytes(1, 1, {v}) + Key(20, 3) + Key(20, 4),                        // a group
      EventBytes(1, 1, {v + Key(20, 6)}),                                     // wire type 6
      EventBytes(1, 1, {v}) + Key(0, 0) + Varint(1),                          // field number 0
      EventBytes(1, 1, {v}) + Key(15, 0) + std::string(10, '\xff') + '\x01',  // an 11-byte varint
      EventBytes(1, 1, {v}) + Key(17, 2) + Varint(100) + "short",             // length past the end
      EventBytes(1, 1, {v}) + Key(16, 1) + "1234",                            // fixed64 cut short
      EventBytes(1, 1, {Len(1, "x") + Len(8, Len(5, "123"))}),      // packed floats of 3 bytes
      EventBytes(1, 1, {Len(1, "x") + Len(8, Len(2, Key(2, 0)))}),  // shape: varint missing
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    const Read r = ReadAll(Record(bad[i]) + good);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.malformed, 1u);
    ASSERT_EQ(r.out.size(), 1u);
    EXPECT_EQ(r.out[0].tag, "ok");
    EXPECT_EQ(r.consumed, Record(bad[i]).size() + good.size());
  }
}

TEST(TfEventsFileName, AcceptsWriterNamesAndSuffixes) {
  EXPECT_TRUE(IsTfEventsFileName("events.out.tfevents.1700000000.node-3.12345.0"));
  EXPECT_TRUE(IsTfEventsFileName("events.out.tfevents.1700000000.node-3.12345.0.v2"));
  EXPECT_TRUE(IsTfEventsFileName("events.out.tfevents.1700000000.host.profile-empty"));
  EXPECT_TRUE(IsTfEventsFileName("events.out.tfevents.1"));
}

TEST(TfEventsFileName, RejectsOtherNamesAndPaths) {
  EXPECT_FALSE(IsTfEventsFileName(""));
  EXPECT_FALSE(IsTfEventsFileName("events.out.tfevents."));
  EXPECT_FALSE(IsTfEventsFileName("events.out.tfevents"));
  EXPECT_FALSE(IsTfEventsFileName("xevents.out.tfevents.1"));
  EXPECT_FALSE(IsTfEventsFileName("Events.out.tfevents.1"));
  EXPECT_FALSE(IsTfEventsFileName("runs/a/events.out.tfevents.1"));
  EXPECT_FALSE(IsTfEventsFileName("train.log"));
}

}  // namespace
}  // namespace tunectl
