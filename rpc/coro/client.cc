#include "rpc/coro/client.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "rpc/internal/common/misuse.h"

namespace h2rpc::coro::internal {

void ReportCallMisuse(absl::string_view what) {
  h2rpc::internal::ReportMisuse(
      absl::StrCat(what, " on a coroutine call; the operation fails"));
}

}  // namespace h2rpc::coro::internal
