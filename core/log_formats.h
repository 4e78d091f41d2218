// Built-in parsers for what training frameworks already print (workload metrics with
// `parser: megatron`, no regex): Megatron-LM, DeepSpeed, Hugging Face Trainer, PyTorch Lightning's
// CSV logger, torchtitan, nanoGPT and nccl-tests. Each format documents the fields it provides;
// a parser turns one output line into values of those fields. Pure; a parser object holds the
// state one run's output needs (a CSV header, a table's columns) and is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec.h"
#include "core/status.h"

namespace tunectl {

// One field a format provides, e.g. megatron's "samples_per_s".
struct FormatField {
  std::string name;  // [a-z0-9_]+, unique in its format
  std::string unit;  // "samples/s", "ms", "TFLOP/s", "" for a plain number
  Better better = Better::kHigher;
  std::string description;  // where it comes from in the line, in a sentence
};

struct LogFormat {
  std::string name;         // "megatron", "deepspeed", "hf_trainer", "lightning_csv",
                            // "torchtitan", "nanogpt", "nccl_tests"
  std::string description;  // which versions and line shapes it reads
  // The fields a workload may name. megatron (every "<name> loss" key), hf_trainer (every numeric
  // dict key) and lightning_csv (every column) also give the other keys they read, under the key
  // normalised (lowercase, other characters '_'); the common ones are listed here.
  std::vector<FormatField> fields;
  // Which unlisted names it gives: "" none; "_loss" names ending so (megatron's "<name> loss"
  // keys); "*" any [a-z0-9_]+ name (hf_trainer's keys, lightning_csv's columns).
  std::string open_fields;
};

// Every built-in format, in a stable order (documentation and error messages list them).
const std::vector<LogFormat>& LogFormats();
// nullptr when there is no format of that name.
const LogFormat* FindLogFormat(std::string_view name);

// A value read from a line. `step` is the step the line itself names (Megatron's iteration,
// DeepSpeed's global_step, HF's step when printed…); 0 when the line names none.
struct FormatSample {
  std::string field;
  double value = 0;
  int64_t step = 0;
};

// One run's parser of one format. Lines come without their newline, split on '\r' as well, and
// with ANSI escape sequences removed (StripAnsi). Values that are sentinels rather than
// measurements (nanoGPT's "mfu -100.00%" before it measures, torchtitan's "N/A") give no sample.
class LogFormatParser {
 public:
  // InvalidArgument naming the format and listing the known ones when there is none by that name.
  static Result<std::unique_ptr<LogFormatParser>> Create(std::string_view format);
  virtual ~LogFormatParser() = default;
  // Appends the values found in `line` (none when the line is not of this format).
  virtual void Parse(std::string_view line, std::vector<FormatSample>* out) = 0;
};

// `line` without ANSI escape sequences (CSI "\x1b[…X", OSC "\x1b]…\x07", and lone ESC pairs).
std::string StripAnsi(std::string_view line);

}  // namespace tunectl
