#include "core/tfevents.h"

#include <array>
#include <bit>
#include <cstdio>
#include <optional>
#include <utility>

namespace tunectl {
namespace {

constexpr size_t kHeaderBytes = 12;  // u64 length, u32 masked CRC of it
constexpr size_t kFooterBytes = 4;   // u32 masked CRC of the data

constexpr std::array<uint32_t, 256> kCrcTable = [] {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0);
    t[i] = c;
  }
  return t;
}();

uint64_t LittleEndian(std::string_view b) {
  uint64_t v = 0;
  for (size_t i = b.size(); i-- > 0;) v = (v << 8) | static_cast<uint8_t>(b[i]);
  return v;
}

// A protobuf message's wire format, read front to back. Every read returns false on malformed
// input and leaves the reader unusable.
class Wire {
 public:
  explicit Wire(std::string_view d) : d_(d) {}
  bool done() const { return d_.empty(); }

  bool Varint(uint64_t* v) {
    *v = 0;
    for (size_t i = 0; i < 10 && i < d_.size(); ++i) {
      const auto b = static_cast<uint8_t>(d_[i]);
      *v |= uint64_t{b & 0x7Fu} << (7 * i);
      if (!(b & 0x80)) {
        d_.remove_prefix(i + 1);
        return true;
      }
    }
    return false;
  }
  bool Fixed(size_t n, uint64_t* v) {
    if (d_.size() < n) return false;
    *v = LittleEndian(d_.substr(0, n));
    d_.remove_prefix(n);
    return true;
  }
  bool Bytes(std::string_view* s) {
    uint64_t n;
    if (!Varint(&n) || n > d_.size()) return false;
    *s = d_.substr(0, n);
    d_.remove_prefix(n);
    return true;
  }
  bool Key(uint32_t* field, uint32_t* type) {
    uint64_t k;
    if (!Varint(&k) || k > UINT32_MAX || (k >> 3) == 0) return false;
    *field = static_cast<uint32_t>(k >> 3);
    *type = static_cast<uint32_t>(k & 7);
    return true;
  }
  // Skips a field of wire type `type`; groups (3, 4) and types 6, 7 are malformed here.
  bool Skip(uint32_t type) {
    uint64_t v;
    std::string_view s;
    switch (type) {
      case 0: return Varint(&v);
      case 1: return Fixed(8, &v);
      case 2: return Bytes(&s);
      case 5: return Fixed(4, &v);
      default: return false;
    }
  }

 private:
  std::string_view d_;
};

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };
enum DataType : uint64_t { kFloat = 1, kDouble = 2, kInt32 = 3, kInt64 = 9 };

// How many values a repeated numeric field held and the first of them.
struct Repeated {
  size_t n = 0;
  double first = 0;
  void Add(double v) {
    if (n++ == 0) first = v;
  }
};

double AsFloat(uint64_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits));
}
double AsDouble(uint64_t bits) {
  return std::bit_cast<double>(bits);
}
double AsInt32(uint64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}
double AsInt64(uint64_t v) {
  return static_cast<double>(static_cast<int64_t>(v));
}

// A repeated numeric field, unpacked (one element of wire type `elem`) or packed (kLen).
bool ReadRepeated(Wire& w, uint32_t type, uint32_t elem, double (*conv)(uint64_t), Repeated* r) {
  uint64_t v;
  auto one = [&](Wire& from) {
    if (!(elem == kVarint ? from.Varint(&v) : from.Fixed(elem == kFixed32 ? 4 : 8, &v)))
      return false;
    r->Add(conv(v));
    return true;
  };
  if (type == elem) return one(w);
  if (type != kLen) return w.Skip(type);  // a wire type the field does not have: unknown field
  std::string_view packed;
  if (!w.Bytes(&packed)) return false;
  for (Wire p(packed); !p.done();)
    if (!one(p)) return false;
  return true;
}

struct Tensor {
  uint64_t dtype = 0;
  bool scalar_shape = true;  // no dims, or every dim of size 1, and a known rank
  std::string_view content;
  Repeated floats, doubles, int32s, int64s;
};

bool ReadShape(std::string_view bytes, Tensor* t) {
  Wire w(bytes);
  uint32_t f, type;
  while (!w.done()) {
    if (!w.Key(&f, &type)) return false;
    std::string_view dim;
    uint64_t v;
    if (f == 2 && type == kLen) {  // Dim {size = 1; name = 2}
      if (!w.Bytes(&dim)) return false;
      uint64_t size = 0;  // absent: 0, no elements
      for (Wire d(dim); !d.done();) {
        uint32_t df, dtype;
        if (!d.Key(&df, &dtype)) return false;
        if (df == 1 && dtype == kVarint) {
          if (!d.Varint(&size)) return false;
        } else if (!d.Skip(dtype)) {
          return false;
        }
      }
      if (size != 1) t->scalar_shape = false;
    } else if (f == 3 && type == kVarint) {  // unknown_rank
      if (!w.Varint(&v)) return false;
      if (v != 0) t->scalar_shape = false;
    } else if (!w.Skip(type)) {
      return false;
    }
  }
  return true;
}

// Merges the TensorProto in `bytes` into *t (protobuf's rule for a repeated message field).
bool ReadTensor(std::string_view bytes, Tensor* t) {
  Wire w(bytes);
  uint32_t f, type;
  while (!w.done()) {
    if (!w.Key(&f, &type)) return false;
    std::string_view s;
    bool ok;
    if (f == 1 && type == kVarint) {
      ok = w.Varint(&t->dtype);
    } else if (f == 2 && type == kLen) {
      ok = w.Bytes(&s) && ReadShape(s, t);
    } else if (f == 4 && type == kLen) {
      ok = w.Bytes(&t->content);
    } else if (f == 5) {
      ok = ReadRepeated(w, type, kFixed32, AsFloat, &t->floats);
    } else if (f == 6) {
      ok = ReadRepeated(w, type, kFixed64, AsDouble, &t->doubles);
    } else if (f == 7) {
      ok = ReadRepeated(w, type, kVarint, AsInt32, &t->int32s);
    } else if (f == 10) {
      ok = ReadRepeated(w, type, kVarint, AsInt64, &t->int64s);
    } else {
      ok = w.Skip(type);
    }
    if (!ok) return false;
  }
  return true;
}

std::optional<double> TensorScalar(const Tensor& t) {
  if (!t.scalar_shape) return std::nullopt;
  auto one = [&](size_t width, double (*conv)(uint64_t), const Repeated& vals) {
    std::optional<double> x;
    if (!t.content.empty()) {  // raw little-endian bytes take precedence, as in TensorFlow
      if (t.content.size() == width) x = conv(LittleEndian(t.content));
    } else if (vals.n == 1) {
      x = vals.first;
    }
    return x;
  };
  switch (t.dtype) {
    case kFloat: return one(4, AsFloat, t.floats);
    case kDouble: return one(8, AsDouble, t.doubles);
    case kInt32: return one(4, AsInt32, t.int32s);
    case kInt64: return one(8, AsInt64, t.int64s);
    default: return std::nullopt;
  }
}

using Samples = std::vector<std::pair<std::string_view, double>>;

// Appends the scalar of one Summary.Value, if it holds one.
bool ReadValue(std::string_view bytes, Samples* out) {
  enum class Kind { kNone, kSimple, kTensor, kOther } kind = Kind::kNone;  // the oneof `value`
  std::string_view tag;
  double simple = 0;
  Tensor tensor;
  Wire w(bytes);
  uint32_t f, type;
  while (!w.done()) {
    if (!w.Key(&f, &type)) return false;
    std::string_view s;
    uint64_t v = 0;
    bool ok;
    if (f == 1 && type == kLen) {
      ok = w.Bytes(&tag);
    } else if (f == 2 && type == kFixed32) {
      ok = w.Fixed(4, &v);
      simple = AsFloat(v);
      kind = Kind::kSimple;
    } else if (f == 8 && type == kLen) {
      if (kind != Kind::kTensor) tensor = Tensor();
      kind = Kind::kTensor;
      ok = w.Bytes(&s) && ReadTensor(s, &tensor);
    } else if (f >= 3 && f <= 6 && type == kLen) {  // old histogram, image, histo, audio
      kind = Kind::kOther;
      ok = w.Skip(type);
    } else {
      ok = w.Skip(type);
    }
    if (!ok) return false;
  }
  if (kind == Kind::kSimple) out->emplace_back(tag, simple);
  if (kind == Kind::kTensor)
    if (auto x = TensorScalar(tensor)) out->emplace_back(tag, *x);
  return true;
}

// Decodes one Event; false when its protobuf is malformed.
bool ReadEvent(std::string_view bytes, std::vector<TfScalar>* out) {
  double wall_time = 0;
  int64_t step = 0;
  Samples samples;
  bool summary = false;  // whether the oneof `what` holds the summary
  Wire w(bytes);
  uint32_t f, type;
  while (!w.done()) {
    if (!w.Key(&f, &type)) return false;
    uint64_t v = 0;
    std::string_view s;
    bool ok;
    if (f == 1 && type == kFixed64) {
      ok = w.Fixed(8, &v);
      wall_time = AsDouble(v);
    } else if (f == 2 && type == kVarint) {
      ok = w.Varint(&v);
      step = static_cast<int64_t>(v);
    } else if (f == 5 && type == kLen) {
      if (!summary) samples.clear();
      summary = true;
      ok = w.Bytes(&s);
      for (Wire sw(s); ok && !sw.done();) {  // Summary {repeated Value value = 1}
        uint32_t sf, stype;
        std::string_view value;
        ok = sw.Key(&sf, &stype);
        if (ok && sf == 1 && stype == kLen) {
          ok = sw.Bytes(&value) && ReadValue(value, &samples);
        } else if (ok) {
          ok = sw.Skip(stype);
        }
      }
    } else if (f >= 3 && f <= 9 && type == kLen) {  // another member of the oneof
      summary = false;
      ok = w.Skip(type);
    } else {
      ok = w.Skip(type);
    }
    if (!ok) return false;
  }
  if (!summary) return true;
  for (const auto& [tag, value] : samples)
    out->push_back({std::string(tag), step, value, wall_time});
  return true;
}

Status RecordError(uint64_t offset, const char* what) {
  return Status::InvalidArgument("tfevents: record at byte " + std::to_string(offset) + ": " +
                                 what);
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (char ch : data) c = kCrcTable[(c ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t MaskedCrc32c(std::string_view data) {
  const uint32_t x = Crc32c(data);
  return ((x >> 15) | (x << 17)) + 0xA282EAD8u;
}

Status TfEventsReader::Feed(std::string_view bytes, std::vector<TfScalar>* out) {
  if (!error_.ok()) return error_;
  buf_.append(bytes);
  std::string_view rest(buf_);
  char what[160];
  while (rest.size() >= kHeaderBytes) {
    const std::string_view len_bytes = rest.substr(0, 8);
    const uint64_t len = LittleEndian(len_bytes);
    const auto len_crc = static_cast<uint32_t>(LittleEndian(rest.substr(8, 4)));
    if (const uint32_t c = MaskedCrc32c(len_bytes); c != len_crc) {
      std::snprintf(what, sizeof what,
                    "length CRC 0x%08x != 0x%08x computed from its length field; the file is "
                    "corrupt or not an events file",
                    len_crc, c);
      error_ = RecordError(consumed_, what);
      break;
    }
    if (len > kTfEventsMaxRecordBytes) {
      std::snprintf(what, sizeof what, "length %llu exceeds the limit of %llu bytes",
                    static_cast<unsigned long long>(len),
                    static_cast<unsigned long long>(kTfEventsMaxRecordBytes));
      error_ = RecordError(consumed_, what);
      break;
    }
    if (rest.size() - kHeaderBytes < len + kFooterBytes) break;  // wait for the rest
    const std::string_view data = rest.substr(kHeaderBytes, len);
    const auto data_crc = static_cast<uint32_t>(LittleEndian(rest.substr(kHeaderBytes + len, 4)));
    if (const uint32_t c = MaskedCrc32c(data); c != data_crc) {
      std::snprintf(what, sizeof what,
                    "data CRC 0x%08x != 0x%08x computed from its %llu bytes; the file is corrupt",
                    data_crc, c, static_cast<unsigned long long>(len));
      error_ = RecordError(consumed_, what);
      break;
    }
    if (!ReadEvent(data, out)) ++malformed_;
    const size_t n = kHeaderBytes + len + kFooterBytes;
    rest.remove_prefix(n);
    consumed_ += n;
  }
  buf_.erase(0, buf_.size() - rest.size());
  return error_;
}

bool IsTfEventsFileName(std::string_view name) {
  constexpr std::string_view kPrefix = "events.out.tfevents.";
  return name.size() > kPrefix.size() && name.starts_with(kPrefix) &&
         name.find('/') == std::string_view::npos;
}

}  // namespace tunectl
