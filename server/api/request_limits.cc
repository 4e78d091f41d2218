#include "server/api/request_limits.h"

#include <google/protobuf/descriptor.h>

#include <string>

#include "core/names.h"

namespace tunectl {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

Status TooBig(const std::string& path, size_t size, size_t limit, const char* unit) {
  return Status::InvalidArgument(path + ": " + std::to_string(size) + " " + unit +
                                 "; allowed at most " + std::to_string(limit));
}

Status Check(const Message& m, const std::string& prefix, int depth) {
  if (depth > 8) return Status::InvalidArgument(prefix + ": nested too deep");
  const auto* reflection = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(m, &fields);  // only the fields that are set
  for (const FieldDescriptor* f : fields) {
    const std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    const FieldLimit limit = RequestFieldLimit(f->name());
    if (f->is_repeated()) {
      const int n = reflection->FieldSize(m, f);
      if (static_cast<size_t>(n) > limit.max_items)
        return TooBig(path, n, limit.max_items, "items");
      for (int i = 0; i < n; ++i) {
        const std::string item = path + "[" + std::to_string(i) + "]";
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
          std::string scratch;
          const std::string& v = reflection->GetRepeatedStringReference(m, f, i, &scratch);
          if (v.size() > limit.max_bytes) return TooBig(item, v.size(), limit.max_bytes, "bytes");
        } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          if (auto st = Check(reflection->GetRepeatedMessage(m, f, i), item, depth + 1); !st.ok())
            return st;
        }
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      std::string scratch;
      const std::string& v = reflection->GetStringReference(m, f, &scratch);
      if (v.size() > limit.max_bytes) return TooBig(path, v.size(), limit.max_bytes, "bytes");
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (auto st = Check(reflection->GetMessage(m, f), path, depth + 1); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckRequestLimits(const Message& request) {
  return Check(request, "", 0);
}

}  // namespace tunectl
