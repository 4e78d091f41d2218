// TensorBoard event files without TensorFlow or a protobuf library: the TFRecord framing (u64
// length, masked CRC-32C of the length, data, masked CRC-32C of the data; little-endian) and the
// scalar values of the Event protobufs inside, decoded from the wire format. Pure (no I/O).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tunectl {

// One scalar of one Summary.Value. `tag` is the bytes as written (not checked for UTF-8); `step`
// and `wall_time` are the enclosing Event's, as written (0 when absent; step is any int64,
// wall_time any double). `value` is passed through as written: NaN and ±Inf included (a job
// logging loss=nan is information; the caller decides); a float is widened exactly, an int64
// beyond 2^53 rounds to the nearest double.
struct TfScalar {
  std::string tag;
  int64_t step = 0;
  double value = 0;
  double wall_time = 0;
};

// CRC-32C (Castagnoli, reflected 0x82F63B78): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view data);
// The TFRecord masking of Crc32c: ((x >> 15) | (x << 17)) + 0xA282EAD8, mod 2^32.
uint32_t MaskedCrc32c(std::string_view data);

// A record longer than this is refused, so a corrupt length cannot make a reader buffer unbounded.
inline constexpr uint64_t kTfEventsMaxRecordBytes = uint64_t{64} << 20;

// Reads one events file incrementally as it grows (the agent tails files a running job writes):
// Feed the bytes appended since the last call, from the file's first byte on.
//
// A Value gives a sample when it holds a simple_value, or a tensor of dtype DT_FLOAT, DT_DOUBLE,
// DT_INT32 or DT_INT64 with exactly one element (no dims, or every dim of size 1) in
// tensor_content (preferred when non-empty, as TensorFlow reads it) or else in exactly one
// float_val/double_val/int_val/int64_val (packed or not). Anything else gives none: other dtypes
// (DT_HALF, DT_BFLOAT16, DT_STRING…), non-scalar tensors, histograms, images, audio, and Events
// that are not summaries (file_version, graphs, logs). Fields are read with protobuf's rules (the
// last of a oneof wins, repeated message fields merge); unknown fields of wire types 0, 1, 2 and 5
// are skipped unchecked.
//
// A record whose framing CRCs hold but whose protobuf is malformed (a truncated field, a group
// wire type, a bad varint, field number 0) gives no samples and is counted in
// malformed_records(); the file reads on. Thread-compatible.
class TfEventsReader {
 public:
  // Appends to *out a TfScalar for every scalar of every complete record, in file order; a
  // partial record at the end waits for more bytes (buffered() > 0 at the end of a finished file
  // means it was truncated). InvalidArgument naming the record's byte offset when its length CRC
  // or data CRC is wrong or its length exceeds kTfEventsMaxRecordBytes; the reader then stays
  // failed: later Feeds return the same error and append nothing.
  Status Feed(std::string_view bytes, std::vector<TfScalar>* out);
  // Bytes of the complete records read so far (the offset of the next record).
  uint64_t consumed() const { return consumed_; }
  // Bytes held of a record not yet complete (after an error: those from the failed record on).
  size_t buffered() const { return buf_.size(); }
  uint64_t malformed_records() const { return malformed_; }

 private:
  std::string buf_;
  uint64_t consumed_ = 0;
  uint64_t malformed_ = 0;
  Status error_;
};

// Whether a file's base name (no directory) is an event file's: "events.out.tfevents.<more>",
// which includes suffixed names such as "….v2" or "….profile-empty".
bool IsTfEventsFileName(std::string_view name);

}  // namespace tunectl
