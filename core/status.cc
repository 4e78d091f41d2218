#include "core/status.h"

namespace tunectl {

const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "ok";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kNotFound: return "not found";
    case Status::Code::kAlreadyExists: return "already exists";
    case Status::Code::kFailedPrecondition: return "failed precondition";
    case Status::Code::kUnavailable: return "unavailable";
    case Status::Code::kInternal: return "internal";
    case Status::Code::kUnauthenticated: return "unauthenticated";
    case Status::Code::kPermissionDenied: return "permission denied";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace tunectl
