// TensorBoard event files (core/tfevents.h) over arbitrary bytes. The input is read twice: as an
// events file (what mutating real files reaches: the framing, its CRCs and limits), and as the
// data of two identical CRC-valid records (what reaches the Event decoder). Never a crash, a hang
// or undefined behaviour. An events file gives the same scalars, status, consumed() and
// malformed_records() whether fed at once, in pseudo-random chunks or in two at a data-chosen
// point; an error names the offset consumed() stopped at; what is held is at most one record.
// Every tag is bytes of the input; steps, values (NaN and ±Inf included) and wall times are passed
// through as written, so any int64 and any double is documented. Two identical records give the
// same scalars twice, or are both malformed.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tfevents.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace tunectl;

struct Outcome {
  Status status;
  std::vector<TfScalar> out;
  uint64_t consumed = 0;
  size_t buffered = 0;
  uint64_t malformed = 0;
};

// Feeds `in` in pieces of the sizes `next_size` returns (0: the rest).
template <typename NextSize>
Outcome FeedIn(std::string_view in, NextSize next_size) {
  TfEventsReader r;
  Outcome o;
  size_t fed = 0;
  while (fed < in.size()) {
    size_t n = next_size();
    if (n == 0 || n > in.size() - fed) n = in.size() - fed;
    const size_t before = o.out.size();
    o.status = r.Feed(in.substr(fed, n), &o.out);
    fed += n;
    if (!o.status.ok()) {
      FUZZ_CHECK(o.status.message().rfind(
                     "tfevents: record at byte " + std::to_string(r.consumed()) + ": ", 0) == 0,
                 "an error names the offset of the record it stopped at");
      const Status again = r.Feed(in.substr(0, 1), &o.out);
      FUZZ_CHECK(again.message() == o.status.message(), "a failed reader stays failed");
      FUZZ_CHECK(o.out.size() >= before, "Feed only appends");
      break;
    }
    FUZZ_CHECK(r.consumed() + r.buffered() == fed, "every byte fed is consumed or held");
    FUZZ_CHECK(r.buffered() < 16 + kTfEventsMaxRecordBytes, "at most one record is held");
  }
  o.consumed = r.consumed();
  o.buffered = r.buffered();
  o.malformed = r.malformed_records();
  FUZZ_CHECK(o.malformed * 16 <= o.consumed, "a malformed record is a consumed record");
  return o;
}

bool SameScalar(const TfScalar& a, const TfScalar& b) {
  return a.tag == b.tag && a.step == b.step &&
         std::memcmp(&a.value, &b.value, sizeof a.value) == 0 &&
         std::memcmp(&a.wall_time, &b.wall_time, sizeof a.wall_time) == 0;
}

void CheckSame(const Outcome& a, const Outcome& b) {
  FUZZ_CHECK(a.status.message() == b.status.message(), "the split does not change the status");
  FUZZ_CHECK(a.consumed == b.consumed, "the split does not change consumed()");
  FUZZ_CHECK(a.malformed == b.malformed, "the split does not change malformed_records()");
  FUZZ_CHECK(!a.status.ok() || a.buffered == b.buffered, "the split does not change buffered()");
  FUZZ_CHECK(a.out.size() == b.out.size(), "the split does not change the scalars");
  for (size_t i = 0; i < a.out.size(); ++i)
    FUZZ_CHECK(SameScalar(a.out[i], b.out[i]), "the split does not change the scalars");
}

void CheckTags(const Outcome& o, std::string_view in) {
  for (const auto& s : o.out)
    FUZZ_CHECK(in.find(s.tag) != std::string_view::npos, "a tag is bytes of the input");
}

std::string Le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(v >> (8 * i));
  return s;
}

std::string Record(std::string_view data) {
  const std::string len = Le(data.size(), 8);
  return len + Le(MaskedCrc32c(len), 4) + std::string(data) + Le(MaskedCrc32c(data), 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the input seeds the splits
  for (char c : in) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;

  const Outcome whole = FeedIn(in, [] { return size_t{0}; });
  CheckTags(whole, in);
  uint64_t x = h | 1;
  CheckSame(whole, FeedIn(in, [&x] {
              x ^= x << 13;  // xorshift64
              x ^= x >> 7;
              x ^= x << 17;
              return static_cast<size_t>(1 + x % 64);
            }));
  const size_t cut = size == 0 ? 0 : static_cast<size_t>(h % (size + 1));
  bool first = true;
  CheckSame(whole, FeedIn(in, [&] { return std::exchange(first, false) ? cut : 0; }));

  if (size > kTfEventsMaxRecordBytes) return 0;
  const std::string twice = Record(in) + Record(in);
  const Outcome framed = FeedIn(twice, [] { return size_t{0}; });
  FUZZ_CHECK(framed.status.ok(), "CRC-valid records within the limit are never an error");
  FUZZ_CHECK(framed.consumed == twice.size() && framed.buffered == 0, "both records are read");
  FUZZ_CHECK(framed.malformed == 0 || framed.malformed == 2, "identical records decode alike");
  FUZZ_CHECK(framed.out.size() % 2 == 0, "identical records give the same scalars");
  const size_t half = framed.out.size() / 2;
  for (size_t i = 0; i < half; ++i)
    FUZZ_CHECK(SameScalar(framed.out[i], framed.out[half + i]),
               "identical records give the same scalars");
  CheckTags(framed, in);
  return 0;
}
