#include "rpc/unary_done.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "rpc/internal/common/misuse.h"

namespace h2rpc {

UnaryDone& UnaryDone::operator=(UnaryDone&& other) noexcept {
  if (this != &other) {
    if (call_ != nullptr) Dropped();
    call_ = other.call_;
    method_ = other.method_;
    other.call_ = nullptr;
  }
  return *this;
}

UnaryDone::~UnaryDone() {
  if (call_ != nullptr) Dropped();
}

void UnaryDone::operator()(const Status& status) {
  if (call_ == nullptr) {
    internal::ReportMisuse(
        absl::StrCat("the UnaryDone of a call of ", method_,
                     " was called twice (or after being moved from); ignored"));
    return;
  }
  internal::UnaryCompletion* call = call_;
  call_ = nullptr;
  call->HandlerDone(status);
}

void UnaryDone::Dropped() {
  const std::string message =
      absl::StrCat("the UnaryDone of a call of ", method_,
                   " was destroyed without being called");
  internal::ReportMisuse(message);
  internal::UnaryCompletion* call = call_;
  call_ = nullptr;
  call->HandlerDone(Status(StatusCode::kInternal, message));
}

}  // namespace h2rpc
