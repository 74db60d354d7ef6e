#ifndef H2RPC_RPC_INTERNAL_CLIENT_METHOD_PATH_COPY_H_
#define H2RPC_RPC_INTERNAL_CLIENT_METHOD_PATH_COPY_H_

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace h2rpc::internal {

// A call's own copy of its method path, so that the caller's string may go
// as soon as the call has been started. Paths of up to 64 bytes are stored
// inline; a longer one takes one allocation, whose capacity a reused
// (pooled) call keeps: Set never shrinks it. One thread at a time.
class MethodPathCopy {
 public:
  // Copies `path`; returns a view of the copy, valid until the next Set or
  // the copy's destruction.
  absl::string_view Set(absl::string_view path) {
    buffer_.assign(path.begin(), path.end());
    return absl::string_view(buffer_.data(), buffer_.size());
  }

 private:
  absl::InlinedVector<char, 64> buffer_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_CLIENT_METHOD_PATH_COPY_H_
