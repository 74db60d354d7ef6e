#ifndef H2RPC_RPC_INTERNAL_COMMON_STREAM_QUOTA_H_
#define H2RPC_RPC_INTERNAL_COMMON_STREAM_QUOTA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "rpc/status.h"

namespace h2rpc::internal {

// The open streams of a service that holds calls open (health watches,
// load report streams), counted in all and per connection against two
// limits, so one client cannot take them all. Not thread-safe: its
// owner's mutex guards it. Allocates a map node for a connection's first
// stream.
class StreamQuota {
 public:
  // `streams` names them in messages ("health watches"); `option` is the
  // option of the total limit ("HealthCheckServiceOptions::max_watches"),
  // whose per-connection limit is `option` + "_per_connection".
  StreamQuota(size_t max_total, size_t max_per_connection, const char* streams,
              const char* option)
      : max_total_(max_total),
        max_per_connection_(max_per_connection),
        streams_(streams),
        option_(option) {}

  // Counts a stream on `connection_id` (ServerContext::connection_id()),
  // or, over a limit, RESOURCE_EXHAUSTED naming it and counts nothing.
  Status Acquire(uint64_t connection_id);
  // A stream Acquire counted ended.
  void Release(uint64_t connection_id);
  size_t open() const { return open_; }

 private:
  const size_t max_total_;
  const size_t max_per_connection_;
  const char* const streams_;
  const char* const option_;
  size_t open_ = 0;
  // A connection without streams has no entry.
  std::unordered_map<uint64_t, size_t> per_connection_;
};

}  // namespace h2rpc::internal

#endif  // H2RPC_RPC_INTERNAL_COMMON_STREAM_QUOTA_H_
